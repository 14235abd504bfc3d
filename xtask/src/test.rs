//! `cargo xtask test`: every test target of the workspace plus doc tests,
//! with a combined summary.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::process::{Command, ExitCode, Stdio};

/// Options of `cargo xtask test`.
#[derive(clap::Args, Debug, Clone)]
pub struct TestArgs {
    /// Run the suite in every cell of perf_event_paranoid {-1,0,1,2} ×
    /// {root, nobody} (needs root; restores paranoid afterwards).
    #[arg(long)]
    pub matrix: bool,
    /// With --matrix: print every test binary's output.
    #[arg(long, requires = "matrix")]
    pub verbose: bool,
    /// Fail on a skip not listed in this file, on fewer tests executed
    /// than its `min-executed`, or on any flake (a test that passed only on
    /// a retry: see [`FLAKE_PREFIX`]) (CI: `.ci/expected-skips`).
    #[arg(long, value_name = "FILE", conflicts_with = "matrix")]
    pub expect: Option<std::path::PathBuf>,
    /// Write this run's skips and executed count to FILE in the format
    /// `--expect` reads (to refresh `.ci/expected-skips`).
    #[arg(long, value_name = "FILE", conflicts_with = "matrix")]
    pub record_skips: Option<std::path::PathBuf>,
    /// Run the live suite in a QEMU guest with an emulated PMU instead of on
    /// this machine (`arm64`: Debian's arm64 kernel, PMUv3; see xtask/src/vm.rs).
    #[arg(long, value_name = "ARCH", value_parser = ["arm64"], conflicts_with = "matrix")]
    pub vm: Option<String>,
    /// With --vm: stop a guest that has not finished after this many minutes.
    #[arg(long, value_name = "MINUTES", default_value_t = 60, requires = "vm")]
    pub vm_timeout: u64,
    /// Extra arguments passed to every test binary (after `--`), e.g. a filter.
    #[arg(last = true)]
    pub test_args: Vec<String>,
}

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
const FAILED_OUTSIDE_LIBTEST: &str =
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

/// Runs a command, echoing its output and tallying it: standard output
/// for libtest's lines, standard error (read on a thread of its own, so
/// neither pipe fills while the other is read) for flakes.
fn run_tallied(cmd: &mut Command, tally: &mut Tally) -> bool {
    eprintln!("xtask: running {cmd:?}");
    let spawned = cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn();
    let mut child = match spawned {
        Ok(c) => c,
        Err(e) => {
            eprintln!("xtask: cannot run cargo: {e}");
            return false;
        }
    };
    let failed_before = tally.failed;
    let errors = child.stderr.take().map(|err| {
        std::thread::spawn(move || {
            let mut flakes = Tally::default();
            for line in BufReader::new(err).lines().map_while(Result::ok) {
                eprintln!("{line}");
                flakes.stderr_line(&line);
            }
            flakes.flakes
        })
    });
    if let Some(out) = child.stdout.take() {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            println!("{line}");
            tally.line(&line);
        }
    }
    if let Some(flakes) = errors.and_then(|t| t.join().ok()) {
        tally.flakes.extend(flakes);
    }
    let ok = child.wait().is_ok_and(|s| s.success());
    tally.command_ended(ok, failed_before);
    ok
}

/// Runs the suite; the exit code is non-zero on any failure.
pub fn run(args: &TestArgs) -> ExitCode {
    if args.matrix {
        return crate::matrix::run(args.verbose);
    }
    let (tally, ok) = if args.vm.is_some() {
        let vm = crate::vm::VmArgs {
            timeout: std::time::Duration::from_secs(args.vm_timeout.saturating_mul(60)),
            test_args: args.test_args.clone(),
        };
        match crate::vm::run(&vm) {
            Ok(tally) => (tally, true),
            Err(e) => {
                eprintln!("xtask test --vm: {e}");
                return ExitCode::FAILURE;
            }
        }
    } else {
        host_suite(args)
    };
    summarize(tally, ok, args)
}

/// Every test target of the workspace on this machine.
fn host_suite(args: &TestArgs) -> (Tally, bool) {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut tally = Tally::default();
    let mut ok = true;
    // Unit, integration and example tests of every crate, then doc tests.
    let mut all = Command::new(&cargo);
    all.args([
        "test",
        "--workspace",
        "--lib",
        "--bins",
        "--tests",
        "--examples",
        "--no-fail-fast",
        "--",
    ]);
    all.args(&args.test_args);
    ok &= run_tallied(&mut all, &mut tally);
    let mut doc = Command::new(&cargo);
    doc.args(["test", "--workspace", "--doc", "--no-fail-fast", "--"]);
    doc.args(&args.test_args);
    ok &= run_tallied(&mut doc, &mut tally);
    // The optional libpfm4 feature, where the library is installed.
    if std::path::Path::new("/usr/include/perfmon/pfmlib.h").exists() {
        for (pkg, target) in [("hwpmc-linux", "--lib"), ("hwpmc", "--test=golden_attrs")] {
            let mut pfm = Command::new(&cargo);
            pfm.args([
                "test",
                "-p",
                pkg,
                "--features",
                "libpfm",
                target,
                "--",
                "pfm",
            ]);
            ok &= run_tallied(&mut pfm, &mut tally);
        }
    } else {
        tally.skipped += 1;
        tally
            .reasons
            .entry("[libpfm] libpfm4-dev is not installed (/usr/include/perfmon/pfmlib.h)".into())
            .or_default()
            .push("feature libpfm: pfm::tests, golden_attrs::libpfm_native_names_resolve".into());
    }
    (tally, ok)
}

/// Prints the skips, failures and totals, and checks `--expect`.
fn summarize(tally: Tally, mut ok: bool, args: &TestArgs) -> ExitCode {
    if !tally.reasons.is_empty() {
        println!("\nskipped tests, by reason:");
        for (reason, tests) in &tally.reasons {
            println!("  {reason}");
            for t in tests {
                println!("      {t}");
            }
        }
    }
    if !tally.failures.is_empty() {
        println!("\nfailed tests:");
        for t in &tally.failures {
            println!("  {t}");
            for line in tally.messages.get(t).into_iter().flatten().take(6) {
                println!("      {line}");
            }
        }
    }
    if !tally.flakes.is_empty() {
        println!("\nflaky tests (each retry a test made):");
        for f in &tally.flakes {
            println!("  {f}");
        }
    }
    println!("\n{}", tally.summary());
    if let Some(path) = &args.record_skips {
        // The file's own comment header (what the machine is) survives a
        // refresh; only the lists are rewritten.
        let header: String = std::fs::read_to_string(path)
            .unwrap_or_default()
            .lines()
            .take_while(|l| l.starts_with('#'))
            .map(|l| format!("{l}\n"))
            .collect();
        let mut text = Expected::record(&tally);
        if !header.is_empty() {
            let body: String = text
                .lines()
                .skip_while(|l| l.starts_with('#'))
                .map(|l| format!("{l}\n"))
                .collect();
            text = header + &body;
        }
        match std::fs::write(path, text) {
            Ok(()) => println!("skips and executed count written to {}", path.display()),
            Err(e) => {
                eprintln!("xtask: write {}: {e}", path.display());
                ok = false;
            }
        }
    }
    if let Some(path) = &args.expect {
        let problems = std::fs::read_to_string(path)
            .map_err(|e| format!("read {}: {e}", path.display()))
            .and_then(|text| Expected::parse(&text))
            .map_or_else(|e| vec![e], |expected| expected.check(&tally));
        if problems.is_empty() {
            println!(
                "skips and executed count as expected by {}; no flakes",
                path.display()
            );
        } else {
            println!("\nnot as expected by {}:", path.display());
            for p in &problems {
                println!("  {p}");
            }
            ok = false;
        }
    }
    // A build failure leaves no "test result" line: fail on the exit status too.
    if ok && tally.failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

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

#[cfg(test)]
mod tests {
    use super::*;

    /// A harness-less test binary that panicked leaves no `test result:`
    /// line: the command's failure is counted, once, with a name that says
    /// where to look; a passing command adds nothing.
    #[test]
    fn a_failure_without_a_libtest_summary_is_counted() {
        let mut t = Tally::default();
        t.line("test result: ok. 3 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out");
        t.command_ended(true, 0);
        assert_eq!((t.passed, t.failed), (3, 0));
        t.command_ended(false, 0);
        assert_eq!((t.passed, t.failed), (3, 1));
        assert_eq!(t.failures, vec![FAILED_OUTSIDE_LIBTEST.to_string()]);
    }

    #[test]
    fn tallies_libtest_summaries_and_skip_reasons() {
        let mut t = Tally::default();
        for l in [
            "test a ... ok",
            "test b ... ignored (no hardware PMU)",
            "test c ... ignored, needs root",
            "test d ... FAILED",
            "test e ... ignored",
            "test f ... printed output",
            "FAILED",
            "failures:",
            "",
            "---- d ----",
            "only 12 of 40 samples in the loop",
            "",
            "---- f stdout ----",
            "thread 'f' panicked",
            "test x ... ok (inside a message, not a result)",
            "",
            "failures:",
            "    f",
            "    d",
            "",
            "test result: FAILED. 1 passed; 1 failed; 3 ignored; 0 measured; 0 filtered out; finished in 0.01s",
            "test result: ok. 7 passed; 0 failed; 0 ignored; 0 measured; 2 filtered out",
        ] {
            t.line(l);
        }
        assert_eq!((t.passed, t.failed, t.skipped), (8, 1, 3));
        // The command's failure is the failure tallied: not counted twice.
        t.command_ended(false, 0);
        assert_eq!(t.failed, 1);
        assert_eq!(t.failures, vec!["d".to_string(), "f".to_string()]);
        assert_eq!(t.reasons["no hardware PMU"], vec!["b".to_string()]);
        assert_eq!(t.reasons["needs root"], vec!["c".to_string()]);
        assert_eq!(t.reasons["no reason given"], vec!["e".to_string()]);
        assert_eq!(t.messages["d"], vec!["only 12 of 40 samples in the loop"]);
        assert_eq!(t.messages["f"].len(), 2);
        assert!(!t.reasons.contains_key("x"));
    }

    /// A test's retry, reported on its standard error after another
    /// writer's partial line, is one flake: the closing line counts it,
    /// and `--expect` fails on it even where everything else is as
    /// expected. A `FLAKE:` text on standard output (a test quoting one)
    /// is not a report.
    #[test]
    fn a_reported_retry_is_a_flake_and_fails_the_expectation() {
        let mut t = run_with_skips();
        t.line("FLAKE: quoted::in_stdout: not a report");
        let stderr = "dash: pmcstat %, perf % (a partial line)\n\
                      FLAKE: real_use::counts: task-clock rounds 1 and 2 disagreed\n\
                      thread 'main' panicked elsewhere\n";
        for l in stderr.lines() {
            t.stderr_line(l);
        }
        assert_eq!(
            t.flakes,
            vec!["real_use::counts: task-clock rounds 1 and 2 disagreed".to_string()]
        );
        assert_eq!(
            t.summary(),
            "40 executed: 40 passed, 0 failed, 3 skipped, 1 flaky"
        );
        let expect = "min-executed 40\nskip counting::hw [hardware]\n\
                      skip events::kprobe [pmu:kprobe]\nskip conformance::portable::ts []\n";
        let e = Expected::parse(expect).unwrap();
        assert_eq!(
            e.check(&t),
            vec![
                "flaky: real_use::counts: task-clock rounds 1 and 2 disagreed \
                 (the test retried after a failed try)"
                    .to_string()
            ]
        );
        // The same run without the flake is as expected.
        assert!(e.check(&run_with_skips()).is_empty());

        // The exit status of `cargo xtask test --expect FILE`.
        let dir = std::env::temp_dir().join(format!("xtask-flake-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("expected-skips");
        std::fs::write(&file, expect).unwrap();
        let args = TestArgs {
            matrix: false,
            verbose: false,
            expect: Some(file),
            record_skips: None,
            vm: None,
            vm_timeout: 60,
            test_args: Vec::new(),
        };
        assert_eq!(summarize(t, true, &args), ExitCode::FAILURE);
        assert_eq!(summarize(run_with_skips(), true, &args), ExitCode::SUCCESS);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// `run_tallied` reads a command's standard error beside its standard
    /// output: the FLAKE line a test binary writes reaches the tally.
    #[test]
    fn a_commands_standard_error_is_read_for_flakes() {
        let mut t = Tally::default();
        let ok = run_tallied(
            Command::new("sh").args([
                "-c",
                "echo 'test a ... ok'; printf 'partial' >&2; \
                 printf '\\nFLAKE: a: retried once\\n' >&2; \
                 echo 'test result: ok. 1 passed; 0 failed; 0 ignored'",
            ]),
            &mut t,
        );
        assert!(ok);
        assert_eq!(
            (t.passed, t.flakes.clone()),
            (1, vec!["a: retried once".to_string()])
        );
        assert!(
            t.summary()
                .ends_with("1 passed, 0 failed, 0 skipped, 1 flaky")
        );
    }

    fn run_with_skips() -> Tally {
        let mut t = Tally::default();
        for l in [
            "test counting::hw ... ignored ([hardware] no hardware PMU)",
            "test events::kprobe ... ignored ([pmu:kprobe] no `kprobe` PMU)",
            // A conformance scenario a backend cannot run: no requirement.
            "test conformance::portable::ts ... ignored, n/a: portable: it has no sampling modes",
            "test result: ok. 40 passed; 0 failed; 3 ignored; 0 measured; 0 filtered out",
        ] {
            t.line(l);
        }
        t
    }

    #[test]
    fn expected_skips_round_trip_and_pass() {
        let t = run_with_skips();
        let text = Expected::record(&t);
        assert!(text.contains("min-executed 40\n"), "{text}");
        assert!(text.contains("skip counting::hw [hardware]\n"), "{text}");
        assert!(
            text.contains("skip conformance::portable::ts []\n"),
            "{text}"
        );
        let e = Expected::parse(&text).unwrap();
        assert_eq!(e.min_executed, 40);
        assert_eq!(e.skips.len(), 3);
        assert_eq!(e.skips["conformance::portable::ts"], Vec::<String>::new());
        assert_eq!(e.check(&t), Vec::<String>::new());
    }

    #[test]
    fn an_unexpected_skip_or_fewer_tests_fail_the_expectation() {
        let e = Expected::parse(
            "# CI\nmin-executed 41  # last known\nskip counting::hw [hardware]\n\
             skip events::kprobe [perfmon]\nskip never::skipped [tracefs]\n\
             skip conformance::portable::ts []\n",
        )
        .unwrap();
        let problems = e.check(&run_with_skips());
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(problems[0].contains("40 tests executed, fewer than the 41"));
        assert!(
            problems[1].contains("events::kprobe skipped for [pmu:kprobe], expected [perfmon]")
        );
        let mut t = run_with_skips();
        t.line("test events::new ... ignored ([tracefs] tracefs is not mounted)");
        let e = Expected::parse(
            "min-executed 40\nskip counting::hw [hardware]\nskip events::kprobe [pmu:kprobe]\n\
             skip conformance::portable::ts []",
        )
        .unwrap();
        let problems = e.check(&t);
        assert_eq!(
            problems,
            vec!["unexpected skip: events::new ([tracefs] tracefs is not mounted)".to_string()]
        );
        // An expected skip that ran instead is fine (a better machine).
        let e = Expected::parse("min-executed 0\nskip counting::hw [hardware]\nskip events::kprobe [pmu:kprobe]\nskip a::b [root]\nskip conformance::portable::ts []").unwrap();
        assert!(e.check(&run_with_skips()).is_empty());
    }

    #[test]
    fn a_stale_not_applicable_entry_fails_the_expectation() {
        let mut t = run_with_skips();
        t.line("test conformance::freebsd_double::ts ... ok");
        let e = Expected::parse(
            "min-executed 0\nskip counting::hw [hardware]\nskip events::kprobe [pmu:kprobe]\n\
             skip conformance::portable::ts []\nskip conformance::freebsd_double::ts []\nskip conformance::portable::renamed []\n",
        )
        .unwrap();
        assert_eq!(
            e.check(&t),
            vec![
                "stale entry: conformance::freebsd_double::ts is listed as an n/a skip but ran; remove its line"
                    .to_string(),
                "stale entry: conformance::portable::renamed is listed as an n/a skip but no test of that name reported; remove or rename its line"
                    .to_string(),
            ]
        );
        // A failed test ran too.
        let mut t = run_with_skips();
        t.line("test conformance::freebsd_double::ts ... FAILED");
        let e = Expected::parse(
            "min-executed 0\nskip counting::hw [hardware]\nskip events::kprobe [pmu:kprobe]\n\
             skip conformance::portable::ts []\nskip conformance::freebsd_double::ts []\n",
        )
        .unwrap();
        assert_eq!(e.check(&t).len(), 1, "{:?}", e.check(&t));
    }

    #[test]
    fn skipped_names_may_contain_spaces() {
        let e = Expected::parse("min-executed 1\nskip feature libpfm: pfm::tests, x [libpfm]\n")
            .unwrap();
        assert_eq!(
            e.skips.get("feature libpfm: pfm::tests, x"),
            Some(&vec!["libpfm".to_string()])
        );
    }

    #[test]
    fn malformed_expectations_are_refused_with_the_line() {
        assert!(
            Expected::parse("skip a [b]")
                .unwrap_err()
                .contains("min-executed")
        );
        assert!(
            Expected::parse("min-executed x")
                .unwrap_err()
                .contains("line 1")
        );
        assert!(
            Expected::parse("min-executed 1\nskip a b")
                .unwrap_err()
                .contains("line 2")
        );
        assert!(
            Expected::parse("min-executed 1\nwhat")
                .unwrap_err()
                .contains("line 2")
        );
    }
}
