//! Text outputs: folded stacks, pmcstat's `-G` call graph, and the flame
//! graph SVG rendered from the folded stacks.

use std::fmt::Write as _;

use crate::{Error, Profile, Result};

/// Folded stacks (`root;…;leaf count`), one line per distinct stack of all
/// events, sorted, for flamegraph tools.
pub fn folded(profile: &Profile) -> String {
    let mut lines: Vec<String> = Vec::new();
    for per_pmc in profile.stacks().values() {
        for (stack, n) in per_pmc {
            let mut s: Vec<&str> = stack.iter().map(String::as_str).collect();
            s.reverse();
            lines.push(format!("{} {n}", s.join(";")));
        }
    }
    lines.sort();
    lines.join("\n") + if lines.is_empty() { "" } else { "\n" }
}

/// How deep `-G` follows a callchain without `-z`: pmcstat.h
/// `DEFAULT_CALLGRAPH_DEPTH`.
pub const DEFAULT_CALLGRAPH_DEPTH: usize = 16;

/// A node of the call tree: a function (or, without a symbol, a pc) of an
/// image, with its callers as children.
#[derive(Default)]
struct CgNode<'a> {
    count: u64,
    children: Vec<(CgKey<'a>, CgNode<'a>)>,
}

/// (image path, function start or pc, printed name); the image is `None`
/// where no mapping covers the pc.
type CgKey<'a> = (Option<&'a str>, u64, String);

impl<'a> CgNode<'a> {
    fn child(&mut self, key: CgKey<'a>) -> &mut CgNode<'a> {
        let i = match self.children.iter().position(|(k, _)| *k == key) {
            Some(i) => i,
            None => {
                self.children.push((key, CgNode::default()));
                self.children.len() - 1
            }
        };
        &mut self.children[i].1
    }

    /// pmcpl_callgraph.c `pmcstat_cgnode_compare`: most samples first.
    /// FreeBSD's qsort leaves ties in no set order; here they go by name,
    /// then image, so the output is reproducible.
    fn sort(&mut self) {
        self.children.sort_by(|(ka, a), (kb, b)| {
            b.count
                .cmp(&a.count)
                .then_with(|| ka.2.cmp(&kb.2))
                .then_with(|| ka.0.cmp(&kb.0))
        });
        for (_, c) in &mut self.children {
            c.sort();
        }
    }
}

/// The node key of a location: pmcpl_callgraph.c keys a node by image and
/// the start of the function symbol holding the pc, or the pc's offset
/// when no symbol does (printed as `%p` of the image address).
fn cg_key(location: &crate::Location) -> CgKey<'_> {
    let r = &location.resolved;
    let image = r.mapping.as_ref().map(|m| m.path.as_str());
    match (r.symbol_start, r.object_address) {
        (Some(start), _) => (image, start, location.function().to_string()),
        (None, Some(addr)) => (image, addr, format!("{addr:#x}")),
        (None, None) => (image, location.address, location.function().to_string()),
    }
}

/// pmcpl_callgraph.c `pmcstat_cgnode_print`: the indentation, the share of
/// the parent's samples (`"100.0%% "` when all of them, else
/// `"%05.2f%% "`), `" [%u] "` padded to 12 characters, the indentation
/// again, the name, and `" @ %s"` with the image's path when it differs
/// from the last one printed; then the callers, most samples first.
fn print_cgnode<'a>(
    out: &mut String,
    key: &CgKey<'a>,
    node: &CgNode<'a>,
    depth: usize,
    total: u64,
    previous_image: &mut Option<Option<&'a str>>,
) {
    let indent = " ".repeat(depth);
    out.push_str(&indent);
    if node.count == total {
        out.push_str("100.0% ");
    } else {
        let _ = write!(out, "{:05.2}% ", 100.0 * node.count as f64 / total as f64);
    }
    let count = format!(" [{}] ", node.count);
    out.push_str(&count);
    out.push_str(&" ".repeat(12usize.saturating_sub(count.len())));
    out.push_str(&indent);
    out.push_str(&key.2);
    if *previous_image != Some(key.0) {
        *previous_image = Some(key.0);
        // An object no mapping names has no path to print.
        if let Some(path) = key.0 {
            let _ = write!(out, " @ {path}");
        }
    }
    out.push('\n');
    for (k, child) in &node.children {
        print_cgnode(out, k, child, depth + 1, node.count, previous_image);
    }
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
    let depth = profile.max_frames.unwrap_or(DEFAULT_CALLGRAPH_DEPTH).max(1);
    let mut out = String::new();
    for (index, event) in profile.events.iter().enumerate().rev() {
        let mut root = CgNode::default();
        for s in profile.samples.iter().filter(|s| s.event == index) {
            // pmcpl_cg_process: the leaf's node counts the sample, then
            // each caller below the one before it, up to the depth.
            let mut node = &mut root;
            for &l in s.stack.iter().take(depth) {
                node = node.child(cg_key(&profile.locations[l]));
                node.count += s.count;
            }
        }
        if root.children.is_empty() {
            continue;
        }
        root.sort();
        let total: u64 = root.children.iter().map(|(_, n)| n.count).sum();
        let _ = write!(out, "@ {} [{total} samples]\n\n", event.name);
        for (key, node) in &root.children {
            let mut previous_image = None;
            print_cgnode(&mut out, key, node, 0, total, &mut previous_image);
            out.push('\n');
        }
    }
    out
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
