//! Text outputs: folded stacks, pmcstat's `-G` call graph, and the flame
//! graph SVG rendered from the folded stacks.

use std::borrow::Cow;
use std::collections::HashMap;

use crate::{Error, Profile, Result};

/// Folded stacks (`root;…;leaf count`), one line per distinct stack of all
/// events, sorted, for flamegraph tools.
pub fn folded(profile: &Profile) -> String {
    let mut out = Vec::new();
    // Writing to memory cannot fail.
    let _ = write_folded(profile, &mut out);
    into_text(out)
}

/// Names are `String`s, so the bytes written from them are UTF-8.
fn into_text(bytes: Vec<u8>) -> String {
    String::from_utf8(bytes).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// [`folded`] written to `out` line by line: it holds each distinct named
/// stack once, as ids of the names the profile already holds, not as text.
pub fn write_folded(profile: &Profile, mut out: impl std::io::Write) -> std::io::Result<()> {
    let names = NamedStacks::of(profile);
    let mut lines: Vec<(&[u32], u64)> = names
        .per_event
        .iter()
        .flat_map(|per| per.iter().map(|(k, n)| (&k[..], *n)))
        .collect();
    // The order of the lines as text, without making the text.
    lines.sort_unstable_by(|a, b| names.compare_lines(*a, *b));
    for (stack, count) in lines {
        for (i, &id) in stack.iter().rev().enumerate() {
            if i > 0 {
                out.write_all(b";")?;
            }
            out.write_all(names.names[id as usize].as_bytes())?;
        }
        writeln!(out, " {count}")?;
    }
    Ok(())
}

/// The named stacks of a profile ([`Profile::stacks`]) with each name held
/// once: per event, the ids of a stack's names (leaf first) and its count.
struct NamedStacks<'a> {
    names: Vec<&'a str>,
    per_event: Vec<rustc_hash::FxHashMap<Box<[u32]>, u64>>,
}

impl<'a> NamedStacks<'a> {
    fn of(profile: &'a Profile) -> NamedStacks<'a> {
        let mut ids: rustc_hash::FxHashMap<&'a str, u32> = Default::default();
        let mut names: Vec<&'a str> = Vec::new();
        let mut per_event: Vec<rustc_hash::FxHashMap<Box<[u32]>, u64>> = (0..profile.events.len())
            .map(|_| Default::default())
            .collect();
        let depth = profile.max_frames.map_or(usize::MAX, |d| d.max(1));
        let mut stack: Vec<u32> = Vec::new();
        for s in &profile.samples {
            stack.clear();
            let frames = profile
                .stack(s)
                .iter()
                .flat_map(|&l| profile.locations[l as usize].resolved.frames.iter())
                .take(depth);
            for f in frames {
                let id = *ids.entry(f.function.as_str()).or_insert_with(|| {
                    names.push(f.function.as_str());
                    (names.len() - 1) as u32
                });
                stack.push(id);
            }
            let per = &mut per_event[s.event];
            match per.get_mut(&stack[..]) {
                Some(n) => *n += s.count,
                None => {
                    per.insert(stack.clone().into_boxed_slice(), s.count);
                }
            }
        }
        NamedStacks { names, per_event }
    }

    /// How the text of two folded lines compares. At the first names that
    /// differ, neither a prefix of the other, the names decide; otherwise
    /// (`a` against `a-x`, a stack that ends first) the bytes do.
    fn compare_lines(&self, a: (&'a [u32], u64), b: (&'a [u32], u64)) -> std::cmp::Ordering {
        for (&x, &y) in a.0.iter().rev().zip(b.0.iter().rev()) {
            if x == y {
                continue;
            }
            let (x, y) = (self.names[x as usize], self.names[y as usize]);
            if !x.starts_with(y) && !y.starts_with(x) {
                return x.cmp(y);
            }
            break;
        }
        self.line_bytes(a.0, a.1).cmp(self.line_bytes(b.0, b.1))
    }

    /// The bytes of a folded line, `root;…;leaf count`, as they come.
    fn line_bytes(&self, stack: &'a [u32], count: u64) -> impl Iterator<Item = u8> + '_ {
        stack
            .iter()
            .rev()
            .enumerate()
            .flat_map(move |(i, &id)| {
                let sep: &[u8] = if i > 0 { b";" } else { b"" };
                sep.iter()
                    .chain(self.names[id as usize].as_bytes())
                    .copied()
            })
            .chain(std::iter::once(b' '))
            .chain(decimal(count))
    }
}

/// The decimal digits of `n`, without allocating.
fn decimal(mut n: u64) -> impl Iterator<Item = u8> {
    let mut buf = [0u8; 20];
    let mut at = buf.len();
    loop {
        at -= 1;
        buf[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    buf.into_iter().skip(at)
}

/// How deep `-G` follows a callchain without `-z`: pmcstat.h
/// `DEFAULT_CALLGRAPH_DEPTH`.
pub const DEFAULT_CALLGRAPH_DEPTH: usize = 16;

/// (image path, function start or pc, printed name); the image is `None`
/// where no mapping covers the pc.
type CgKey<'a> = (Option<&'a str>, u64, Cow<'a, str>);

/// A node of the call tree: a function (or, without a symbol, a pc) of an
/// image, its samples, and its callers as a list through `next`.
struct CgNode {
    count: u64,
    /// Index into the tree's keys.
    key: u32,
    /// The most recently added caller, and this node's next sibling
    /// (`NONE` ends a list): 24 bytes a node, for trees of millions.
    first_child: u32,
    next: u32,
}

const NONE: u32 = u32::MAX;

/// The call tree of one event: nodes in an arena, keys held once.
struct CgTree<'a> {
    keys: Vec<CgKey<'a>>,
    nodes: Vec<CgNode>,
}

impl<'a> CgTree<'a> {
    /// The tree of `event`'s samples, `depth` frames deep.
    fn of(profile: &'a Profile, event: usize, depth: usize) -> CgTree<'a> {
        let mut key_ids: HashMap<CgKey<'a>, u32> = HashMap::new();
        let mut keys: Vec<CgKey<'a>> = Vec::new();
        // Per location, its key's id (NONE until first seen).
        let mut location_key: Vec<u32> = vec![NONE; profile.locations.len()];
        let mut nodes = vec![CgNode {
            count: 0,
            key: NONE,
            first_child: NONE,
            next: NONE,
        }];
        let mut child_of: rustc_hash::FxHashMap<(u32, u32), u32> = Default::default();
        for s in profile.samples.iter().filter(|s| s.event == event) {
            // pmcpl_cg_process: the leaf's node counts the sample, then
            // each caller below the one before it, up to the depth.
            let mut node = 0u32;
            for l in profile.stack(s).iter().take(depth).map(|&l| l as usize) {
                if location_key[l] == NONE {
                    let key = cg_key(&profile.locations[l]);
                    location_key[l] = *key_ids.entry(key.clone()).or_insert_with(|| {
                        keys.push(key);
                        (keys.len() - 1) as u32
                    });
                }
                let key = location_key[l];
                node = *child_of.entry((node, key)).or_insert_with(|| {
                    let id = nodes.len() as u32;
                    let parent = &mut nodes[node as usize];
                    let next = std::mem::replace(&mut parent.first_child, id);
                    nodes.push(CgNode {
                        count: 0,
                        key,
                        first_child: NONE,
                        next,
                    });
                    id
                });
                nodes[node as usize].count += s.count;
            }
        }
        CgTree { keys, nodes }
    }

    /// pmcpl_callgraph.c `pmcstat_cgnode_compare`: most samples first.
    /// FreeBSD's qsort leaves ties in no set order; here they go by name,
    /// then image, then the order they were met, so the output is
    /// reproducible.
    fn children(&self, node: u32) -> Vec<u32> {
        let mut out = Vec::new();
        let mut c = self.nodes[node as usize].first_child;
        while c != NONE {
            out.push(c);
            c = self.nodes[c as usize].next;
        }
        // Listed newest first: back to the order they were met.
        out.reverse();
        out.sort_by(|&a, &b| {
            let (na, nb) = (&self.nodes[a as usize], &self.nodes[b as usize]);
            let (ka, kb) = (&self.keys[na.key as usize], &self.keys[nb.key as usize]);
            nb.count
                .cmp(&na.count)
                .then_with(|| ka.2.cmp(&kb.2))
                .then_with(|| ka.0.cmp(&kb.0))
        });
        out
    }
}

/// The node key of a location: pmcpl_callgraph.c keys a node by image and
/// the start of the function symbol holding the pc, or the pc's offset
/// when no symbol does (printed as `%p` of the image address).
fn cg_key(location: &crate::Location) -> CgKey<'_> {
    let r = &location.resolved;
    let image = r.mapping.as_ref().map(|m| m.path.as_str());
    match (r.symbol_start, r.object_address) {
        (Some(start), _) => (image, start, Cow::Borrowed(location.function())),
        (None, Some(addr)) => (image, addr, Cow::Owned(format!("{addr:#x}"))),
        (None, None) => (image, location.address, Cow::Borrowed(location.function())),
    }
}

/// pmcpl_callgraph.c `pmcstat_cgnode_print`: the indentation, the share of
/// the parent's samples (`"100.0%% "` when all of them, else
/// `"%05.2f%% "`), `" [%u] "` padded to 12 characters, the indentation
/// again, the name, and `" @ %s"` with the image's path when it differs
/// from the last one printed; then the callers, most samples first.
fn print_cgnode<'a>(
    out: &mut dyn std::io::Write,
    tree: &CgTree<'a>,
    node: u32,
    depth: usize,
    total: u64,
    previous_image: &mut Option<Option<&'a str>>,
) -> std::io::Result<()> {
    let n = &tree.nodes[node as usize];
    let key = &tree.keys[n.key as usize];
    let indent = " ".repeat(depth);
    out.write_all(indent.as_bytes())?;
    if n.count == total {
        out.write_all(b"100.0% ")?;
    } else {
        write!(out, "{:05.2}% ", 100.0 * n.count as f64 / total as f64)?;
    }
    let count = format!(" [{}] ", n.count);
    out.write_all(count.as_bytes())?;
    out.write_all(" ".repeat(12usize.saturating_sub(count.len())).as_bytes())?;
    out.write_all(indent.as_bytes())?;
    out.write_all(key.2.as_bytes())?;
    if *previous_image != Some(key.0) {
        *previous_image = Some(key.0);
        // An object no mapping names has no path to print.
        if let Some(path) = key.0 {
            write!(out, " @ {path}")?;
        }
    }
    out.write_all(b"\n")?;
    for child in tree.children(node) {
        print_cgnode(out, tree, child, depth + 1, n.count, previous_image)?;
    }
    Ok(())
}

/// pmcstat `-G`, as pmcpl_callgraph.c writes it: per PMC (the most
/// recently allocated first, as `pmcstat_pmcs` is a list built at its
/// head), `"@ %s [%u samples]\n\n"`, then each sampled function, most
/// samples first, as a tree of the callers that led to it, each node
/// with its count and its share of its parent's, down to `max_frames`
/// frames (`-z`, `DEFAULT_CALLGRAPH_DEPTH` without it), every caller
/// printed (no threshold: pmcpl_callgraph.c has one only for `-T`), and
/// a blank line after each tree.
pub fn callgraph(profile: &Profile) -> String {
    let mut out = Vec::new();
    // Writing to memory cannot fail.
    let _ = write_callgraph(profile, &mut out);
    into_text(out)
}

/// [`callgraph`] written to `out` as it is made: one event's call tree at
/// a time is held, not its text.
pub fn write_callgraph(profile: &Profile, mut out: impl std::io::Write) -> std::io::Result<()> {
    let depth = profile.max_frames.unwrap_or(DEFAULT_CALLGRAPH_DEPTH).max(1);
    for index in (0..profile.events.len()).rev() {
        let tree = CgTree::of(profile, index, depth);
        let roots = tree.children(0);
        if roots.is_empty() {
            continue;
        }
        let total: u64 = roots.iter().map(|&r| tree.nodes[r as usize].count).sum();
        write!(
            out,
            "@ {} [{total} samples]\n\n",
            profile.events[index].name
        )?;
        for root in roots {
            let mut previous_image = None;
            print_cgnode(&mut out, &tree, root, 0, total, &mut previous_image)?;
            out.write_all(b"\n")?;
        }
    }
    Ok(())
}

/// An interactive flame graph (SVG, rendered by `inferno`) of all events'
/// stacks, titled `title`.
pub fn flamegraph(profile: &Profile, title: &str, out: impl std::io::Write) -> Result<()> {
    let folded = folded(profile);
    let mut options = inferno::flamegraph::Options::default();
    options.title = title.to_string();
    options.count_name = "samples".to_string();
    if folded.is_empty() {
        // inferno refuses empty input; an empty profile still gets a file.
        options.title = format!("{title} (no samples)");
        return inferno::flamegraph::from_lines(&mut options, ["no-samples 1"], out)
            .map_err(|e| Error::Flamegraph(e.to_string()));
    }
    inferno::flamegraph::from_lines(&mut options, folded.lines(), out).map_err(|e| match e.kind() {
        std::io::ErrorKind::InvalidData => Error::Flamegraph(e.to_string()),
        _ => Error::write("the flame graph", e),
    })
}
