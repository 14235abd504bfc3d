//! `.ci/expected-skips`: the skips a kind of machine is expected to show
//! and the fewest tests it must execute, read, checked against a run, and
//! recorded from one.

use std::collections::BTreeMap;

use super::Tally;

/// The skips a kind of machine is expected to show, and the fewest tests
/// it must execute (`.ci/expected-skips`). Lines: `min-executed N`, and
/// `skip TEST [token,…]` for each expected skip; `#` starts a comment.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Expected {
    /// The least number of tests that must execute (tests are only added:
    /// fewer means tests were lost or turned into skips).
    pub min_executed: u64,
    /// Expected skipped test → the requirement tokens it skips for.
    pub skips: BTreeMap<String, Vec<String>>,
}

impl Expected {
    /// Parses the file's text.
    pub fn parse(text: &str) -> Result<Expected, String> {
        let mut e = Expected::default();
        let mut has_min = false;
        for (i, raw) in text.lines().enumerate() {
            let line = raw.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            let bad = || format!("line {}: cannot read {raw:?}", i + 1);
            if let Some(n) = line.strip_prefix("min-executed ") {
                e.min_executed = n.trim().parse().map_err(|_| bad())?;
                has_min = true;
            } else if let Some(rest) = line.strip_prefix("skip ") {
                let (test, tokens) = rest.trim().rsplit_once(' ').ok_or_else(bad)?;
                let tokens = tokens
                    .trim()
                    .strip_prefix('[')
                    .and_then(|t| t.strip_suffix(']'))
                    .ok_or_else(bad)?;
                e.skips.insert(
                    test.to_string(),
                    tokens
                        .split(',')
                        .map(str::trim)
                        .filter(|t| !t.is_empty())
                        .map(str::to_string)
                        .collect(),
                );
            } else {
                return Err(bad());
            }
        }
        if !has_min {
            return Err("no `min-executed N` line".into());
        }
        Ok(e)
    }

    /// The file's text for this run.
    pub fn record(tally: &Tally) -> String {
        let mut s = String::from(
            "# Skips expected on this kind of machine, and the fewest tests it must execute.\n\
             # `cargo xtask test --expect FILE` fails on any other skip and on fewer executed.\n",
        );
        s.push_str(&format!("min-executed {}\n", tally.executed()));
        let mut skips: Vec<(String, String)> = Vec::new();
        for (reason, tests) in &tally.reasons {
            let tokens = reason_tokens(reason).join(",");
            for t in tests {
                skips.push((t.clone(), tokens.clone()));
            }
        }
        skips.sort();
        for (t, tokens) in skips {
            s.push_str(&format!("skip {t} [{tokens}]\n"));
        }
        s
    }

    /// What in `tally` is not as expected (empty: all is). No flake is
    /// ever expected: a retry that passed is a failure the test hid.
    pub fn check(&self, tally: &Tally) -> Vec<String> {
        let mut problems = Vec::new();
        for f in &tally.flakes {
            problems.push(format!("flaky: {f} (the test retried after a failed try)"));
        }
        if tally.executed() < self.min_executed {
            problems.push(format!(
                "{} tests executed, fewer than the {} last known: tests were lost or now skip",
                tally.executed(),
                self.min_executed
            ));
        }
        for (reason, tests) in &tally.reasons {
            let tokens = reason_tokens(reason);
            for t in tests {
                match self.skips.get(t) {
                    None => problems.push(format!("unexpected skip: {t} ({reason})")),
                    Some(want) if *want != tokens => problems.push(format!(
                        "{t} skipped for [{}], expected [{}] ({reason})",
                        tokens.join(","),
                        want.join(",")
                    )),
                    Some(_) => {}
                }
            }
        }
        // An `n/a` entry (no requirement) names a scenario its backend
        // cannot run on any machine: if it ran, or no test of that name
        // reported at all, the entry is stale and would hide a later
        // regression of the test it names. (A skip with requirements that
        // ran instead is a better machine, and fine.)
        let skipped: std::collections::BTreeSet<&String> =
            tally.reasons.values().flatten().collect();
        for (t, want) in &self.skips {
            if !want.is_empty() {
                continue;
            }
            if tally.ran.contains(t) {
                problems.push(format!(
                    "stale entry: {t} is listed as an n/a skip but ran; remove its line"
                ));
            } else if !skipped.contains(t) {
                problems.push(format!(
                    "stale entry: {t} is listed as an n/a skip but no test of that name reported; remove or rename its line"
                ));
            }
        }
        problems
    }
}

/// The `[token,…]` a skip reason starts with (empty when none).
fn reason_tokens(reason: &str) -> Vec<String> {
    reason
        .strip_prefix('[')
        .and_then(|r| r.split_once(']'))
        .map(|(list, _)| list.split(',').map(|t| t.trim().to_string()).collect())
        .unwrap_or_default()
}
