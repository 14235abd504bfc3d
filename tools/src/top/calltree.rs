//! The second view of `pmcstat -T` (`n`): pmcpl_calltree.c's top display.
//! Its call graph has one node per (image, function), arcs from caller to
//! callee counted per sample, and each node's own samples (those it was
//! the leaf of); the screen lists the paths from the outermost callers
//! down to the last callee whose arc is above the threshold
//! (`pmcpl_ct_node_dumptop`), costliest first (`pmcpl_ct_node_printtop`).

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;

/// (image, function), shared: a sample's frames are the view's cached
/// names (`TopView::frame`), counted here without copying them.
pub(super) type Key = (std::rc::Rc<str>, std::rc::Rc<str>);

/// The view's tables, hashed per frame of every sample: with aHash, not
/// std's SipHash, which took a fifth of a system-wide view's CPU time.
pub(super) type FastMap<K, V> = HashMap<K, V, ahash::RandomState>;

/// The samples of one PMC as pmcpl_calltree.c's graph.
#[derive(Debug, Default, Clone)]
pub(super) struct CallTree {
    /// (caller, or `None` for the root; callee) → (when first seen, the
    /// samples through the arc: `pcta_samples`).
    arcs: FastMap<(Option<Key>, Key), (u64, u64)>,
    /// Node → its own samples (`pct_samples`).
    own: FastMap<Key, u64>,
    seen: u64,
}

impl CallTree {
    /// One sample's frames, leaf first (`pmcpl_ct_process`: from the
    /// outermost frame to the leaf, each arc counts the sample once).
    pub(super) fn add(&mut self, frames: &[Key]) {
        let Some(leaf) = frames.first() else {
            return;
        };
        let mut parent: Option<Key> = None;
        for f in frames.iter().rev() {
            self.seen += 1;
            let e = self
                .arcs
                .entry((parent.clone(), f.clone()))
                .or_insert((self.seen, 0));
            e.1 += 1;
            parent = Some(f.clone());
        }
        *self.own.entry(leaf.clone()).or_default() += 1;
    }

    /// Adds the samples of a later interval, as if each had been added
    /// here after those before: an arc first seen then keeps its place
    /// after the arcs seen earlier.
    pub(super) fn append(&mut self, later: &CallTree) {
        let base = self.seen;
        for (k, (seen, n)) in &later.arcs {
            let e = self.arcs.entry(k.clone()).or_insert((base + seen, 0));
            e.1 += n;
        }
        for (k, n) in &later.own {
            *self.own.entry(k.clone()).or_default() += n;
        }
        self.seen += later.seen;
    }

    pub(super) fn merge(&mut self, other: &CallTree) {
        for (k, (seen, n)) in &other.arcs {
            let e = self.arcs.entry(k.clone()).or_insert((*seen, 0));
            e.0 = e.0.min(*seen);
            e.1 += n;
        }
        for (k, n) in &other.own {
            *self.own.entry(k.clone()).or_default() += n;
        }
    }

    /// The screen lines under the header: at most `max_lines` paths
    /// (`pmcstat_displayheight - 2`), wrapped at `display_width`.
    pub(super) fn render(
        &self,
        total: u64,
        threshold: f64,
        skiplink: bool,
        display_width: usize,
        max_lines: usize,
    ) -> Vec<String> {
        // PMCPL_CT_SAMPLEP: a count's share of all the PMC's samples.
        let pct = |n: u64| {
            if total == 0 {
                0.0
            } else {
                n as f64 * 100.0 / total as f64
            }
        };
        let mut children: HashMap<Option<&Key>, Vec<(u64, &Key, u64)>> = HashMap::new();
        for ((parent, child), (seen, n)) in &self.arcs {
            children
                .entry(parent.as_ref())
                .or_default()
                .push((*seen, child, *n));
        }
        for arcs in children.values_mut() {
            arcs.sort();
        }
        let mut walk = Walk {
            children: &children,
            above: &|n| n != 0 && pct(n) > threshold,
            grey: HashSet::new(),
            path: Vec::new(),
            paths: Vec::new(),
        };
        walk.visit(None);
        let paths = walk.paths;
        // pmcpl_ct_line_compare: by the sum of the nodes' own samples.
        let own = |k: &Key| self.own.get(k).copied().unwrap_or(0);
        let mut lines: Vec<(u64, Vec<&Key>)> = paths
            .into_iter()
            .map(|p| (p.iter().map(|k| own(k)).sum(), p))
            .collect();
        lines.sort_by_key(|l| std::cmp::Reverse(l.0));
        // pmcpl_ct_node_printtop: "%5.5s " of the line's "%.1f", then per
        // node the name (char[30]), "@image" (char[20]) on the first node
        // and where the image changes, "(%.1f%%)" (char[10]) above the
        // threshold, and " "; `.` for a node under it with skiplink. A
        // node that reaches `pmcstat_displaywidth` starts a new screen
        // line indented by 6, and costs the screen one path.
        let mut text = String::new();
        let mut maxy = max_lines;
        let mut y = 0;
        while y < maxy && y < lines.len() {
            let (sum, path) = &lines[y];
            if y > 0 {
                text.push('\n');
            }
            let _ = write!(text, "{:>5.5} ", format!("{:.1}", pct(*sum)));
            let indent = 6;
            let mut width = indent;
            for (x, node) in path.iter().enumerate() {
                let v = pct(own(node));
                let vs = if v > threshold {
                    format!("({v:.1}%)")
                } else {
                    String::new()
                };
                let (ns, is, ns_len, is_len) = if skiplink && v <= threshold {
                    (".".to_string(), String::new(), 1, 0)
                } else {
                    let is = if x == 0 || path[x - 1].0 != node.0 {
                        format!("@{}", node.0)
                    } else {
                        String::new()
                    };
                    let (ns_len, is_len) = (node.1.len(), is.len());
                    width += ns_len + is_len + vs.len() + 1;
                    (cut(&node.1, 29), cut(&is, 19), ns_len, is_len)
                };
                if width >= display_width {
                    maxy -= 1;
                    if y >= maxy {
                        break;
                    }
                    let _ = write!(text, "\n{:indent$}", " ");
                    width = indent + ns_len + is_len + vs.len();
                }
                let _ = write!(text, "{ns}{is}{} ", cut(&vs, 9));
            }
            y += 1;
        }
        if text.is_empty() {
            return Vec::new();
        }
        text.split('\n').map(str::to_string).collect()
    }
}

/// pmcpl_ct_node_dumptop's depth-first walk: a node already on the path
/// (GREY) ends nothing; a node with no arc above the threshold ends a
/// path.
struct Walk<'a> {
    children: &'a HashMap<Option<&'a Key>, Vec<(u64, &'a Key, u64)>>,
    above: &'a dyn Fn(u64) -> bool,
    grey: HashSet<&'a Key>,
    path: Vec<&'a Key>,
    paths: Vec<Vec<&'a Key>>,
}

impl<'a> Walk<'a> {
    fn visit(&mut self, node: Option<&'a Key>) {
        if let Some(k) = node
            && self.grey.contains(k)
        {
            return;
        }
        let arcs = self.children.get(&node).map_or(&[][..], Vec::as_slice);
        let terminal = !arcs
            .iter()
            .any(|(_, c, n)| !self.grey.contains(c) && (self.above)(*n));
        if terminal {
            if node.is_some() {
                self.paths.push(self.path.clone());
            }
            return;
        }
        if let Some(k) = node {
            self.grey.insert(k);
        }
        for (_, child, n) in arcs {
            if (self.above)(*n) {
                self.path.push(child);
                self.visit(Some(child));
                self.path.pop();
            }
        }
        if let Some(k) = node {
            self.grey.remove(k);
        }
    }
}

/// The first `n` characters of `s` (C's `%.Ns`; a `char[N + 1]` filled by
/// snprintf).
pub(super) fn cut(s: &str, n: usize) -> String {
    s.chars().take(n).collect()
}
