//! `cargo xtask test --matrix`: the suite in every cell of
//! perf_event_paranoid {-1, 0, 1, 2} × {root, an unprivileged user}.
//!
//! The test binaries are built once (as the caller, root) and run directly,
//! as root or through `setpriv` as `nobody`. A cell fails on any failed
//! test, and on any skipped live test that passes when forced to run
//! (`PMC_LIVE_FORCE`): its requirement was declared stricter than the
//! kernel's rule. The original paranoid value is restored on every exit
//! path, Ctrl-C included.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::sync::Mutex;

use crate::test::Tally;

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
                c.env("HOME", "/tmp");
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
    force: bool,
    tally: &mut Tally,
    verbose: bool,
) -> bool {
    let mut cmd = user.command(&bin.path);
    cmd.args(args)
        .current_dir(&bin.package_dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if force {
        cmd.env(FORCE_ENV, "1");
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
    if !out.status.success() && verbose {
        for line in String::from_utf8_lossy(&out.stderr).lines().take(40) {
            println!("    stderr: {line}");
        }
    }
    matches!(out.status.code(), Some(0) | Some(101))
}

fn run_cell(bins: &[TestBinary], user: User, verbose: bool) -> Cell {
    let mut cell = Cell::default();
    for bin in bins {
        let mut tally = Tally::default();
        if !run_binary(bin, user, &[], false, &mut tally, verbose) {
            cell.broken.push(bin.name.clone());
        }
        // Every skipped test must really need what it declared: forced to
        // run here, it has to fail.
        for tests in tally.reasons.values() {
            for test in tests {
                let mut forced = Tally::default();
                let args = vec!["--exact".to_string(), test.clone()];
                run_binary(bin, user, &args, true, &mut forced, false);
                if forced.passed == 1 && forced.failed == 0 {
                    cell.too_strict.push(test.clone());
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
            println!(
                "   {} passed, {} failed, {} skipped",
                cell.tally.passed, cell.tally.failed, cell.tally.skipped
            );
            cells.insert((level, user.label()), cell);
        }
    }
    drop(guard);

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
        if !cell.too_strict.is_empty() {
            notes.push(format!(
                "TOO STRICT (skipped but pass when forced): {}",
                cell.too_strict.join(", ")
            ));
        }
        if !cell.broken.is_empty() {
            notes.push(format!("DID NOT RUN: {}", cell.broken.join(", ")));
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
    println!("\nskip reasons per cell:");
    for ((level, user), cell) in &cells {
        for (reason, tests) in &cell.tally.reasons {
            println!("  [{level:>2} {user}] {reason}: {}", tests.join(", "));
        }
    }
    println!("\nmatrix {}", if ok { "passed" } else { "FAILED" });
    Ok(ok)
}
