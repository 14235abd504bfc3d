//! Text outputs: folded stacks, pmcstat's `-G` call graph, and the flame
//! graph SVG rendered from the folded stacks.

use std::collections::HashMap;
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

/// A call graph: per PMC, functions by the share of samples they were
/// running in (self), each with the callers that led to it.
pub fn callgraph(profile: &Profile) -> String {
    let mut out = String::new();
    for (pmcid, per) in profile.stacks() {
        let total: u64 = per.values().sum();
        let name = profile
            .events
            .iter()
            .find(|e| e.pmcid == pmcid)
            .map(|e| e.name.clone())
            .unwrap_or_else(|| format!("pmc {pmcid:#x}"));
        let _ = writeln!(out, "@ {name} [{total} samples]");
        // Leaf → (count, caller → count).
        let mut leaves: HashMap<&str, (u64, HashMap<&str, u64>)> = HashMap::new();
        for (stack, n) in &per {
            let entry = leaves.entry(stack[0].as_str()).or_default();
            entry.0 += n;
            if let Some(caller) = stack.get(1) {
                *entry.1.entry(caller.as_str()).or_default() += n;
            }
        }
        let mut sorted: Vec<_> = leaves.into_iter().collect();
        sorted.sort_by(|a, b| b.1.0.cmp(&a.1.0).then(a.0.cmp(b.0)));
        for (leaf, (n, callers)) in sorted {
            let pct = 100.0 * n as f64 / total as f64;
            if pct < 0.5 {
                continue;
            }
            let _ = writeln!(out, "{pct:6.2}%  {leaf}");
            let mut callers: Vec<_> = callers.into_iter().collect();
            callers.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
            for (caller, c) in callers.into_iter().take(5) {
                let _ = writeln!(
                    out,
                    "          {:6.2}%  <- {caller}",
                    100.0 * c as f64 / total as f64
                );
            }
        }
        out.push('\n');
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
