//! `cargo xtask test --matrix`: the suite in every cell of
//! perf_event_paranoid {-1, 0, 1, 2} × {root, an unprivileged user}.
//!
//! The test binaries are built once (as the caller, root) and run directly,
//! as root or through `setpriv` as `nobody`. A cell fails on any failed
//! test. Every skip must be proved: the live harnesses name the unmet
//! requirements of a skipped test (`ignored, [token,…] reason`), and each
//! is forced alone (`PMC_LIVE_FORCE=token`) on exactly that test. The
//! proof holds only if exactly that one test ran and failed with its
//! requirement's signature (EACCES/EPERM and the sysctl for paranoid,
//! ENOENT/"no PMU" for hardware, "tracefs" for tracefs, …). A forced test
//! that passes was declared too strictly; a crash, "no test matched", a
//! failure without the signature or a skip without a token fail the
//! matrix. A test skipped for several requirements at once keeps skipping
//! for the others when one is forced; its requirements are proved in the
//! cells where each is the only one unmet, and any left unproved is listed.
//! The original paranoid value is restored on every exit path, Ctrl-C
//! included.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::sync::Mutex;

use crate::test::Tally;

mod path;

const PARANOID: &str = "/proc/sys/kernel/perf_event_paranoid";
const LEVELS: [i32; 4] = [-1, 0, 1, 2];
/// The live harness's switch that ignores requirements.
const FORCE_ENV: &str = "PMC_LIVE_FORCE";

/// One test executable and the directory cargo would run it in.
#[derive(Debug, Clone)]
struct TestBinary {
    path: PathBuf,
    package_dir: PathBuf,
    name: String,
}

/// Who runs a cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum User {
    Root,
    Unprivileged { uid: u32, gid: u32 },
}

impl User {
    fn label(self) -> String {
        match self {
            User::Root => "root".into(),
            User::Unprivileged { uid, .. } => format!("nobody({uid})"),
        }
    }

    fn command(self, program: &Path) -> Command {
        match self {
            User::Root => Command::new(program),
            User::Unprivileged { uid, gid } => {
                let mut c = Command::new("setpriv");
                c.arg(format!("--reuid={uid}"))
                    .arg(format!("--regid={gid}"))
                    .arg("--clear-groups")
                    .arg("--")
                    .arg(program);
                c.env("HOME", "/tmp").env("PATH", path::for_user(uid, gid));
                c
            }
        }
    }
}

/// The result of one cell.
#[derive(Debug, Default)]
struct Cell {
    tally: Tally,
    /// Skipped tests that passed when forced: declared too strictly.
    too_strict: Vec<String>,
    /// Binaries that did not run to completion (crash, exec failure).
    broken: Vec<String>,
    /// Each failed test's message, from a second run of it alone.
    messages: Vec<(String, String)>,
    /// Forced runs that proved nothing: `test [token]: what happened`.
    unproved: Vec<String>,
    /// (test, token) whose skip a forced run proved in this cell.
    proved: Vec<(String, String)>,
    /// (test, token) skipped together with other unmet requirements here,
    /// so not provable in this cell.
    deferred: Vec<(String, String)>,
}

/// The requirement tokens of a skip reason `[a,b] why`, as the live
/// harnesses print them; `None` when the reason names none.
fn skip_tokens(reason: &str) -> Option<Vec<String>> {
    let rest = reason.strip_prefix('[')?;
    let (list, _) = rest.split_once(']')?;
    let tokens: Vec<String> = list
        .split(',')
        .map(|t| t.trim().to_string())
        .filter(|t| !t.is_empty())
        .collect();
    (!tokens.is_empty()).then_some(tokens)
}

/// A conformance scenario its backend lacks by construction (`n/a: …`,
/// src/backend/conformance, which proves it): no machine requirement to force.
fn is_not_applicable(reason: &str) -> bool {
    reason.starts_with("n/a: ")
}

/// What a forced run's failure message must show to prove that `token`
/// was the cause: any one of the alternatives, each a set of substrings
/// that must all appear. `None` for a token without a known signature
/// (which fails the matrix: add its signature here).
fn signature(token: &str) -> Option<Vec<Vec<String>>> {
    let alts = |a: &[&[&str]]| {
        Some(
            a.iter()
                .map(|all| all.iter().map(|s| s.to_string()).collect())
                .collect(),
        )
    };
    let (kind, arg) = token.split_once(':').unwrap_or((token, ""));
    match kind {
        "perf-event" => alts(&[&["perf_event"]]),
        "paranoid" => alts(&[
            &["EACCES", "perf_event_paranoid"],
            &["EPERM", "perf_event_paranoid"],
        ]),
        "perfmon" | "root" => alts(&[
            &["EACCES"],
            &["EPERM"],
            &["Permission denied"],
            &["Operation not permitted"],
        ]),
        "ipc-lock" => alts(&[&["perf_event_mlock_kb"], &["EPERM"]]),
        "hardware" => alts(&[
            &["ENOENT"],
            &["ENXIO"],
            &["no PMU"],
            &["no hardware PMU"],
            &["not supported"],
        ]),
        "pmu" if !arg.is_empty() => {
            let named = format!("no `{arg}` PMU");
            Some(vec![
                vec![named],
                vec![arg.to_string(), "ENOENT".into()],
                vec![arg.to_string(), "EOPNOTSUPP".into()],
                vec![arg.to_string(), "not supported".into()],
            ])
        }
        "tracefs" => alts(&[&["tracefs"]]),
        // A kernel feature forced on an older kernel: refused, and said so.
        "kernel" if !arg.is_empty() => {
            Some(vec![vec![format!("from {arg}")], vec!["EINVAL".into()]])
        }
        "program" if !arg.is_empty() => Some(vec![
            vec![arg.to_string(), "not found".into()],
            vec![arg.to_string(), "ENOENT".into()],
            vec![arg.to_string(), "No such file".into()],
        ]),
        // Requirements that a restriction applies: forced where it does
        // not, the test sees the operation allowed.
        "restricted" | "not-root" | "not-ipc-lock" | "memlock-limited" => {
            alts(&[&["allowed"], &["mapped beyond"]])
        }
        _ => None,
    }
}

/// Whether `message` shows `token`'s signature.
fn shows_signature(token: &str, message: &str) -> bool {
    signature(token).is_some_and(|alts| {
        alts.iter()
            .any(|all| all.iter().all(|needle| message.contains(needle.as_str())))
    })
}

/// What forcing one requirement of a skipped test showed.
#[derive(Debug, PartialEq, Eq)]
enum Forcing {
    /// Exactly that test ran and failed with the requirement's signature.
    Proved,
    /// Still skipped for the test's other unmet requirements (as expected
    /// when it has several): proved elsewhere, if at all.
    Deferred,
    /// It passed: the requirement was declared too strictly.
    TooStrict,
    /// Anything else, with what happened.
    NoProof(String),
}

/// Judges a forced run of `test` with `token` forced, `tokens` being all
/// the requirements it was skipped for.
fn judge_forcing(
    test: &str,
    token: &str,
    tokens: &[String],
    completed: bool,
    forced: &Tally,
) -> Forcing {
    if !completed {
        return Forcing::NoProof("the test binary crashed or could not run".into());
    }
    let ran = forced.passed + forced.failed;
    if ran + forced.skipped == 0 {
        return Forcing::NoProof("no test matched".into());
    }
    if ran + forced.skipped != 1 {
        return Forcing::NoProof(format!(
            "{} tests ran instead of exactly this one",
            ran + forced.skipped
        ));
    }
    if forced.skipped == 1 {
        let others: Vec<&String> = tokens.iter().filter(|t| *t != token).collect();
        let still: Vec<String> = forced
            .reasons
            .keys()
            .filter_map(|r| skip_tokens(r))
            .flatten()
            .collect();
        return if !others.is_empty() && others.iter().all(|t| still.contains(t)) {
            Forcing::Deferred
        } else {
            Forcing::NoProof(format!(
                "still skipped when forced: {}",
                forced
                    .reasons
                    .keys()
                    .cloned()
                    .collect::<Vec<_>>()
                    .join("; ")
            ))
        };
    }
    if forced.passed == 1 {
        return Forcing::TooStrict;
    }
    let message = forced
        .messages
        .get(test)
        .map(|l| l.join(" | "))
        .unwrap_or_default();
    if signature(token).is_none() {
        return Forcing::NoProof(format!(
            "no failure signature is known for [{token}] (add it to xtask/src/matrix.rs): {message}"
        ));
    }
    if shows_signature(token, &message) {
        Forcing::Proved
    } else {
        Forcing::NoProof(format!(
            "failed without the signature of [{token}]: {}",
            if message.is_empty() {
                "no message"
            } else {
                &message
            }
        ))
    }
}

/// Restores perf_event_paranoid when dropped and on Ctrl-C.
struct ParanoidGuard {
    original: String,
}

static ORIGINAL: Mutex<Option<String>> = Mutex::new(None);

impl ParanoidGuard {
    fn new() -> Result<ParanoidGuard, String> {
        let original = std::fs::read_to_string(PARANOID)
            .map_err(|e| format!("read {PARANOID}: {e}"))?
            .trim()
            .to_string();
        *ORIGINAL.lock().unwrap_or_else(|p| p.into_inner()) = Some(original.clone());
        ctrlc::set_handler(|| {
            if let Some(v) = ORIGINAL.lock().unwrap_or_else(|p| p.into_inner()).as_ref() {
                let _ = std::fs::write(PARANOID, v);
                eprintln!("\nxtask: interrupted; perf_event_paranoid restored to {v}");
            }
            std::process::exit(130);
        })
        .map_err(|e| format!("install the Ctrl-C handler: {e}"))?;
        Ok(ParanoidGuard { original })
    }

    fn set(&self, level: i32) -> Result<(), String> {
        std::fs::write(PARANOID, level.to_string())
            .map_err(|e| format!("write {level} to {PARANOID}: {e} (the matrix needs root)"))
    }
}

impl Drop for ParanoidGuard {
    fn drop(&mut self) {
        match std::fs::write(PARANOID, &self.original) {
            Ok(()) => println!("perf_event_paranoid restored to {}", self.original),
            Err(e) => eprintln!(
                "xtask: could not restore perf_event_paranoid to {}: {e}",
                self.original
            ),
        }
    }
}

/// Builds every test binary and returns them (`cargo test --no-run`).
fn build(cargo: &str) -> Result<Vec<TestBinary>, String> {
    let out = Command::new(cargo)
        .args([
            "test",
            "--workspace",
            "--lib",
            "--bins",
            "--tests",
            "--examples",
            "--no-run",
            "--message-format=json",
        ])
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| format!("run cargo: {e}"))?;
    if !out.status.success() {
        return Err("building the tests failed".into());
    }
    let mut bins = Vec::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let Ok(msg) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        if msg["reason"] != "compiler-artifact" || msg["profile"]["test"] != true {
            continue;
        }
        let Some(exe) = msg["executable"].as_str() else {
            continue;
        };
        let manifest = msg["manifest_path"].as_str().unwrap_or(".");
        let kind = msg["target"]["kind"][0].as_str().unwrap_or("?");
        let name = msg["target"]["name"].as_str().unwrap_or("?");
        bins.push(TestBinary {
            path: exe.into(),
            package_dir: Path::new(manifest)
                .parent()
                .unwrap_or(Path::new("."))
                .to_path_buf(),
            name: format!("{name} ({kind})"),
        });
    }
    if bins.is_empty() {
        return Err("cargo reported no test binaries".into());
    }
    Ok(bins)
}

/// Finds the unprivileged user (`nobody`) in /etc/passwd.
fn nobody() -> Result<User, String> {
    let passwd =
        std::fs::read_to_string("/etc/passwd").map_err(|e| format!("read /etc/passwd: {e}"))?;
    passwd
        .lines()
        .map(|l| l.split(':').collect::<Vec<_>>())
        .find(|f| f.first() == Some(&"nobody") && f.len() > 3)
        .and_then(|f| {
            Some(User::Unprivileged {
                uid: f[2].parse().ok()?,
                gid: f[3].parse().ok()?,
            })
        })
        .ok_or_else(|| "no `nobody` user in /etc/passwd".into())
}

/// Runs one binary, feeding its output to `tally`. Returns whether it ran
/// to completion (exit status 0 or 101, libtest's "some tests failed").
fn run_binary(
    bin: &TestBinary,
    user: User,
    args: &[String],
    force: Option<&str>,
    tally: &mut Tally,
    verbose: bool,
) -> bool {
    let mut cmd = user.command(&bin.path);
    cmd.args(args)
        .current_dir(&bin.package_dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(token) = force {
        cmd.env(FORCE_ENV, token);
    }
    let Ok(out) = cmd.output() else {
        return false;
    };
    let stdout = String::from_utf8_lossy(&out.stdout);
    for line in stdout.lines() {
        if verbose {
            println!("    {line}");
        }
        tally.line(line);
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    for line in stderr.lines() {
        tally.stderr_line(line);
    }
    if !out.status.success() && verbose {
        for line in stderr.lines().take(40) {
            println!("    stderr: {line}");
        }
    }
    matches!(out.status.code(), Some(0) | Some(101))
}

fn run_cell(bins: &[TestBinary], user: User, verbose: bool) -> Cell {
    let mut cell = Cell::default();
    for bin in bins {
        let mut tally = Tally::default();
        if !run_binary(bin, user, &[], None, &mut tally, verbose) {
            cell.broken.push(bin.name.clone());
        }
        // Every skipped test must really need what it declared: each unmet
        // requirement, forced alone, has to make exactly this test fail
        // with that requirement's signature.
        for (reason, tests) in &tally.reasons {
            if is_not_applicable(reason) {
                continue;
            }
            let Some(tokens) = skip_tokens(reason) else {
                for test in tests {
                    cell.unproved.push(format!(
                        "{test}: skipped without a requirement token ({reason})"
                    ));
                }
                continue;
            };
            for test in tests {
                for token in &tokens {
                    let mut forced = Tally::default();
                    let args = vec!["--exact".to_string(), test.clone()];
                    let completed = run_binary(bin, user, &args, Some(token), &mut forced, false);
                    match judge_forcing(test, token, &tokens, completed, &forced) {
                        Forcing::Proved => cell.proved.push((test.clone(), token.clone())),
                        Forcing::Deferred => cell.deferred.push((test.clone(), token.clone())),
                        Forcing::TooStrict => cell.too_strict.push(format!("{test} [{token}]")),
                        Forcing::NoProof(what) => {
                            cell.unproved.push(format!("{test} [{token}]: {what}"))
                        }
                    }
                }
            }
        }
        // Say why each failure failed: the message libtest printed, else
        // (a test whose output split its result line) run it alone.
        for test in &tally.failures {
            if let Some(lines) = tally.messages.get(test) {
                let message = lines
                    .iter()
                    .take(6)
                    .cloned()
                    .collect::<Vec<_>>()
                    .join(" | ");
                cell.messages.push((test.clone(), message));
                continue;
            }
            let args = vec![
                "--exact".to_string(),
                test.clone(),
                "--nocapture".to_string(),
            ];
            let mut cmd = user.command(&bin.path);
            cmd.args(&args).current_dir(&bin.package_dir);
            let message = cmd
                .output()
                .map(|o| {
                    let text = String::from_utf8_lossy(&o.stdout).into_owned()
                        + &String::from_utf8_lossy(&o.stderr);
                    text.lines()
                        .filter(|l| {
                            !l.trim().is_empty()
                                && !l.starts_with("running ")
                                && !l.starts_with("test result")
                        })
                        .take(6)
                        .collect::<Vec<_>>()
                        .join(" | ")
                        + if o.status.success() {
                            " (passed when re-run alone: flaky?)"
                        } else {
                            ""
                        }
                })
                .unwrap_or_else(|e| format!("could not rerun: {e}"));
            cell.messages.push((test.clone(), message));
        }
        merge(&mut cell.tally, tally);
    }
    cell
}

fn merge(into: &mut Tally, from: Tally) {
    into.passed += from.passed;
    into.failed += from.failed;
    into.skipped += from.skipped;
    into.failures.extend(from.failures);
    into.flakes.extend(from.flakes);
    for (reason, tests) in from.reasons {
        into.reasons.entry(reason).or_default().extend(tests);
    }
}

/// Runs the matrix; non-zero exit on any failure or too-strict skip.
pub fn run(verbose: bool) -> ExitCode {
    match run_inner(verbose) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("xtask test --matrix: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run_inner(verbose: bool) -> Result<bool, String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let guard = ParanoidGuard::new()?;
    let users = [User::Root, nobody()?];
    let bins = build(&cargo)?;
    println!(
        "matrix: {} test binaries × paranoid {LEVELS:?} × {}",
        bins.len(),
        users.map(User::label).join(", ")
    );
    let mut cells: BTreeMap<(i32, String), Cell> = BTreeMap::new();
    for level in LEVELS {
        guard.set(level)?;
        for user in users {
            println!("== paranoid {level}, {}", user.label());
            let cell = run_cell(&bins, user, verbose);
            println!("   {}", cell.tally.summary());
            for flake in &cell.tally.flakes {
                println!("   FLAKY {flake}");
            }
            // Named as soon as the cell ends: a matrix runs for a long time.
            for (test, message) in &cell.messages {
                println!("   FAILED {test}: {message}");
            }
            cells.insert((level, user.label()), cell);
        }
    }
    drop(guard);

    // Skip reasons first: failures and the verdict end the output, where a
    // log tail (CI keeps only that) shows them.
    println!("\nskip reasons per cell:");
    for ((level, user), cell) in &cells {
        for (reason, tests) in &cell.tally.reasons {
            println!("  [{level:>2} {user}] {reason}: {}", tests.join(", "));
        }
    }
    println!(
        "\n{:<10} {:<12} {:>7} {:>7} {:>8}  notes",
        "paranoid", "user", "passed", "failed", "skipped"
    );
    let mut ok = true;
    for ((level, user), cell) in &cells {
        let mut notes = Vec::new();
        if !cell.tally.failures.is_empty() {
            notes.push(format!("FAILED: {}", cell.tally.failures.join(", ")));
        }
        // A retry that passed hid a failure: the matrix fails on it, as
        // `--expect` does.
        if !cell.tally.flakes.is_empty() {
            notes.push(format!("FLAKY: {}", cell.tally.flakes.join(", ")));
        }
        if !cell.too_strict.is_empty() {
            notes.push(format!(
                "TOO STRICT (skipped but pass when forced): {}",
                cell.too_strict.join(", ")
            ));
        }
        if !cell.broken.is_empty() {
            notes.push(format!("DID NOT RUN: {}", cell.broken.join(", ")));
        }
        if !cell.unproved.is_empty() {
            notes.push(format!("{} SKIPS NOT PROVED", cell.unproved.len()));
        }
        ok &= notes.is_empty() && cell.tally.failed == 0;
        println!(
            "{:<10} {:<12} {:>7} {:>7} {:>8}  {}",
            level,
            user,
            cell.tally.passed,
            cell.tally.failed,
            cell.tally.skipped,
            notes.join("; ")
        );
    }
    for ((level, user), cell) in &cells {
        for (test, message) in &cell.messages {
            println!("  [{level:>2} {user}] {test}: {message}");
        }
    }
    for ((level, user), cell) in &cells {
        for what in &cell.unproved {
            println!("  [{level:>2} {user}] NOT PROVED: {what}");
        }
    }
    let proved: BTreeSet<&(String, String)> = cells.values().flat_map(|c| &c.proved).collect();
    let never: BTreeSet<&(String, String)> = cells
        .values()
        .flat_map(|c| &c.deferred)
        .filter(|pair| !proved.contains(pair))
        .collect();
    println!(
        "\nskips proved: {} (test, requirement) pairs by a forced run that failed with the signature",
        proved.len()
    );
    if !never.is_empty() {
        println!(
            "never the only unmet requirement in any cell, so not provable one at a time here:"
        );
        for (test, token) in never {
            println!("  {test} [{token}]");
        }
    }
    if ok {
        println!("\nmatrix passed");
    } else {
        let failed: Vec<String> = cells
            .iter()
            .filter(|(_, c)| {
                !c.tally.failures.is_empty()
                    || !c.tally.flakes.is_empty()
                    || !c.broken.is_empty()
                    || !c.too_strict.is_empty()
                    || !c.unproved.is_empty()
            })
            .map(|((level, user), c)| {
                let mut what: Vec<&str> = c.tally.failures.iter().map(String::as_str).collect();
                what.extend(c.tally.flakes.iter().map(String::as_str));
                what.extend(c.broken.iter().map(String::as_str));
                what.extend(c.too_strict.iter().map(String::as_str));
                if !c.unproved.is_empty() {
                    what.push("unproved skips");
                }
                format!("[{level} {user}] {}", what.join(", "))
            })
            .collect();
        println!("\nmatrix FAILED in: {}", failed.join("; "));
    }
    Ok(ok)
}

#[cfg(test)]
mod tests;
