//! What a run of the suite counted, from libtest's output: passes,
//! failures with their messages, skips by reason, and the retries tests
//! report (flakes).

use std::collections::BTreeMap;

/// How a test reports a retry, on its standard error:
/// `FLAKE: <test>: <reason>` on a line of its own (`tests/live/harness.rs`
/// `report_flake`). Standard error, written with one `write(2)` that starts
/// with a newline: libtest captures `print!` and `eprint!` but not a direct
/// write, and its own `test NAME ... ` waits on standard output for the
/// outcome, so a line there would split it; one write of under `PIPE_BUF`
/// bytes to a pipe is never interleaved with another's, and the newline
/// before it ends whatever partial line another writer left.
pub const FLAKE_PREFIX: &str = "FLAKE: ";

/// Totals parsed from libtest output.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Tally {
    pub passed: u64,
    pub failed: u64,
    pub skipped: u64,
    /// Each retry a test reported (`test: reason`, see [`FLAKE_PREFIX`]):
    /// a test that passed on a retry passed, and is also counted here, once
    /// per retry.
    pub flakes: Vec<String>,
    /// Skip reason → the tests skipped for it.
    pub reasons: BTreeMap<String, Vec<String>>,
    /// Names of failed tests.
    pub failures: Vec<String>,
    /// Names of the tests that ran (passed or failed).
    pub ran: std::collections::BTreeSet<String>,
    /// Failed test → the message it printed in libtest's `failures:` section.
    pub messages: BTreeMap<String, Vec<String>>,
    /// Inside libtest's closing `failures:` list.
    in_failure_list: bool,
    /// The failed test whose `---- name ----` message is being read.
    reading_message_of: Option<String>,
}

/// The failure a command's exit status alone says: a test binary without
/// libtest's harness (`harness = false`) that panicked prints no `test
/// result:` line, only cargo's `error: … target failed` on stderr.
pub(super) const FAILED_OUTSIDE_LIBTEST: &str =
    "a test target failed without a libtest summary (cargo's error above names it)";

impl Tally {
    /// Counts a command that failed without any failure in the output
    /// tallied since `failed_before` as one failed test, so the summary
    /// never reads "0 failed" for a failing run.
    pub fn command_ended(&mut self, ok: bool, failed_before: u64) {
        if !ok && self.failed == failed_before {
            self.failed += 1;
            self.failures.push(FAILED_OUTSIDE_LIBTEST.to_string());
        }
    }

    /// Tests that ran (passed or failed).
    pub fn executed(&self) -> u64 {
        self.passed + self.failed
    }

    /// The closing line: `N executed: N passed, N failed, N skipped, N flaky`.
    pub fn summary(&self) -> String {
        format!(
            "{} executed: {} passed, {} failed, {} skipped, {} flaky",
            self.executed(),
            self.passed,
            self.failed,
            self.skipped,
            self.flakes.len()
        )
    }

    /// Feeds one line of a test binary's standard error: a
    /// [`FLAKE_PREFIX`] line is one retry; anything else is not tallied.
    pub fn stderr_line(&mut self, line: &str) {
        if let Some(what) = line.strip_prefix(FLAKE_PREFIX) {
            let what = what.trim();
            self.flakes.push(if what.is_empty() {
                "a test that did not name itself".to_string()
            } else {
                what.to_string()
            });
        }
    }

    /// Feeds one line of `cargo test` output.
    pub fn line(&mut self, line: &str) {
        if let Some(rest) = line.strip_prefix("test result: ") {
            let num = |key: &str| {
                rest.split(';')
                    .find_map(|part| part.trim().strip_suffix(key).map(str::trim))
                    .and_then(|n| n.rsplit(' ').next()?.parse::<u64>().ok())
                    .unwrap_or(0)
            };
            self.passed += num(" passed");
            self.failed += num(" failed");
            self.skipped += num(" ignored");
            return;
        }
        // The closing list of failed names catches tests whose own output
        // split their `test … FAILED` line.
        if line == "failures:" {
            self.in_failure_list = true;
            self.reading_message_of = None;
            return;
        }
        if self.in_failure_list {
            let header = line.strip_prefix("---- ").and_then(|l| {
                l.strip_suffix(" stdout ----")
                    .or_else(|| l.strip_suffix(" ----"))
            });
            if let Some(name) = header {
                self.reading_message_of = Some(name.to_string());
                return;
            }
        }
        if let Some(name) = &self.reading_message_of {
            if !line.trim().is_empty() {
                self.messages
                    .entry(name.clone())
                    .or_default()
                    .push(line.to_string());
            }
            return;
        }
        if self.in_failure_list {
            match line.strip_prefix("    ") {
                Some(name) if !name.contains(' ') && !name.is_empty() => {
                    if !self.failures.iter().any(|f| f == name) {
                        self.failures.push(name.to_string());
                    }
                    return;
                }
                _ if line.is_empty() || line.starts_with("----") => return,
                _ => self.in_failure_list = false,
            }
        }
        let Some(rest) = line.strip_prefix("test ") else {
            return;
        };
        if let Some((name, outcome)) = rest.split_once(" ... ") {
            let outcome = outcome.trim();
            if let Some(reason) = outcome.strip_prefix("ignored") {
                let reason = reason.trim().trim_start_matches(',').trim().trim();
                let reason = reason
                    .strip_prefix('(')
                    .and_then(|r| r.strip_suffix(')'))
                    .unwrap_or(reason)
                    .trim();
                let reason = if reason.is_empty() {
                    "no reason given".to_string()
                } else {
                    reason.to_string()
                };
                self.reasons
                    .entry(reason)
                    .or_default()
                    .push(name.trim_end().to_string());
            } else if outcome.starts_with("ok") {
                self.ran.insert(name.trim_end().to_string());
            } else if outcome.starts_with("FAILED") {
                self.ran.insert(name.trim_end().to_string());
                if !self.failures.iter().any(|f| f == name.trim_end()) {
                    self.failures.push(name.trim_end().to_string());
                }
            }
        }
    }
}
