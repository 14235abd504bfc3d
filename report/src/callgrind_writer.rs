//! The callgrind profile format (valgrind's `docs/callgrind-format`), as
//! read by `callgrind_annotate` and KCachegrind: one cost column per
//! event, self cost at the sampled line, and call arcs carrying the
//! inclusive cost of the callee.

use std::collections::{BTreeMap, HashSet};
use std::fmt::Write as _;

use crate::Profile;

/// A function of the output: (object, file, name).
type FnKey<'a> = (&'a str, &'a str, &'a str);

/// The profile in callgrind format.
pub fn callgrind(profile: &Profile, creator: &str) -> String {
    let nev = profile.events.len();
    // fn → line → self cost per event.
    let mut own: BTreeMap<FnKey<'_>, BTreeMap<u32, Vec<u64>>> = BTreeMap::new();
    // (caller, line) → callee → (calls, inclusive cost per event).
    #[allow(clippy::type_complexity)]
    let mut calls: BTreeMap<(FnKey<'_>, u32), BTreeMap<FnKey<'_>, (u64, Vec<u64>)>> =
        BTreeMap::new();
    for s in &profile.samples {
        let frames: Vec<(FnKey<'_>, u32)> = profile
            .stack(s)
            .iter()
            .flat_map(|&l| {
                let loc = &profile.locations[l as usize];
                let object = loc
                    .resolved
                    .mapping
                    .as_ref()
                    .map(|m| m.path.as_str())
                    .unwrap_or("???");
                loc.resolved.frames.iter().map(move |f| {
                    (
                        (
                            object,
                            f.file.as_deref().unwrap_or("???"),
                            f.function.as_str(),
                        ),
                        f.line.unwrap_or(0),
                    )
                })
            })
            .collect();
        let Some((leaf, line)) = frames.first() else {
            continue;
        };
        own.entry(*leaf)
            .or_default()
            .entry(*line)
            .or_insert_with(|| vec![0; nev])[s.event] += s.count;
        // Recursion would count a pair once per level; count it once.
        let mut seen = HashSet::new();
        for pair in frames.windows(2) {
            let ((callee, _), (caller, caller_line)) = (pair[0], pair[1]);
            if !seen.insert((caller, caller_line, callee)) {
                continue;
            }
            let e = calls
                .entry((caller, caller_line))
                .or_default()
                .entry(callee)
                .or_insert_with(|| (0, vec![0; nev]));
            e.0 += s.count;
            e.1[s.event] += s.count;
        }
    }
    let mut functions: Vec<FnKey<'_>> = own.keys().copied().collect();
    functions.extend(calls.keys().map(|k| k.0));
    functions.sort_unstable();
    functions.dedup();

    let mut out = String::new();
    let _ = writeln!(out, "# callgrind format\nversion: 1\ncreator: {creator}");
    out.push_str("positions: line\n");
    let names: Vec<String> = profile
        .events
        .iter()
        .map(|e| e.name.replace(|c: char| !c.is_ascii_alphanumeric(), "_"))
        .collect();
    let _ = writeln!(out, "events: {}", names.join(" "));
    let totals: Vec<String> = (0..nev).map(|i| profile.total(i).to_string()).collect();
    let _ = writeln!(out, "summary: {}\n", totals.join(" "));
    let costs = |v: &[u64]| v.iter().map(u64::to_string).collect::<Vec<_>>().join(" ");
    for f in functions {
        let _ = writeln!(out, "ob={}\nfl={}\nfn={}", f.0, f.1, f.2);
        if let Some(lines) = own.get(&f) {
            for (line, c) in lines {
                let _ = writeln!(out, "{line} {}", costs(c));
            }
        }
        for ((_, line), callees) in calls.range((f, 0)..=(f, u32::MAX)) {
            for (callee, (n, c)) in callees {
                let _ = writeln!(
                    out,
                    "cob={}\ncfi={}\ncfn={}\ncalls={n} 0\n{line} {}",
                    callee.0,
                    callee.1,
                    callee.2,
                    costs(c)
                );
            }
        }
        out.push('\n');
    }
    out
}
