//! `cargo xtask test`: every test target of the workspace plus doc tests,
//! with a combined summary.

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
    /// a retry: see [`FLAKE_PREFIX`](tally::FLAKE_PREFIX)) (CI: `.ci/expected-skips`).
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

mod expected;
mod tally;

pub use expected::Expected;
pub use tally::Tally;

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

#[cfg(test)]
mod tests;
