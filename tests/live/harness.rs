//! The capability-gated test harness: every test declares what it needs,
//! and an unmet need is reported as `ignored (reason)` at run time.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use libtest_mimic::{Completion, Failed, Trial};
use pmc::probe::{Environment, Requirement, Verdict};

/// The environment variable that makes [`trials`] ignore requirements: a
/// comma-separated list of requirement tokens (`paranoid:1,tracefs`, see
/// [`Requirement::token`]), or `1`/`all` for every requirement.
pub const FORCE_ENV: &str = "PMC_LIVE_FORCE";

/// A test's body: `Ok(())` passes, `Err` fails with the message, and
/// `Err(Skip(reason))` via [`skip`] skips at run time.
pub type TestResult = Result<(), Failed>;

/// One live test.
pub struct LiveTest {
    pub name: &'static str,
    pub requires: Vec<Requirement>,
    pub run: fn() -> TestResult,
}

/// Declares a test.
pub fn test(name: &'static str, requires: Vec<Requirement>, run: fn() -> TestResult) -> LiveTest {
    LiveTest {
        name,
        requires,
        run,
    }
}

/// Which requirements `PMC_LIVE_FORCE` forces.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Forced {
    /// None: every requirement is checked.
    Nothing,
    /// Every requirement (`1` or `all`).
    Everything,
    /// The requirements with these tokens.
    Tokens(Vec<String>),
}

impl Forced {
    /// Parses the value of `PMC_LIVE_FORCE`.
    pub fn parse(value: Option<&str>) -> Forced {
        match value.map(str::trim) {
            None | Some("") => Forced::Nothing,
            Some("1") | Some("all") => Forced::Everything,
            Some(list) => Forced::Tokens(
                list.split(',')
                    .map(|t| t.trim().to_string())
                    .filter(|t| !t.is_empty())
                    .collect(),
            ),
        }
    }

    fn covers(&self, r: &Requirement) -> bool {
        match self {
            Forced::Nothing => false,
            Forced::Everything => true,
            Forced::Tokens(t) => t.contains(&r.token()),
        }
    }
}

/// What the harness does with a test before running it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Gate {
    /// Run it.
    Run,
    /// Skip it: `[token,…] reason; reason`, every unmet requirement named.
    Skip(String),
    /// Fail it without running: the machine is broken in a way none of its
    /// requirements allows (`[token] reason`).
    Fail(String),
}

/// Decides a test's fate from its requirements alone: an independent look
/// at the machine, never the code under test. Forced requirements count as
/// met; a broken machine fails even a test whose other needs are unmet.
pub fn gate(requires: &[Requirement], env: &Environment, forced: &Forced) -> Gate {
    let mut unmet: Vec<(String, String)> = Vec::new();
    for r in requires.iter().filter(|r| !forced.covers(r)) {
        match r.verdict(env) {
            Verdict::Met => {}
            Verdict::Unmet(reason) => unmet.push((r.token(), reason)),
            Verdict::Broken(reason) => return Gate::Fail(format!("[{}] {reason}", r.token())),
        }
    }
    if unmet.is_empty() {
        return Gate::Run;
    }
    let tokens: Vec<&str> = unmet.iter().map(|(t, _)| t.as_str()).collect();
    let reasons: Vec<&str> = unmet.iter().map(|(_, r)| r.as_str()).collect();
    Gate::Skip(format!("[{}] {}", tokens.join(","), reasons.join("; ")))
}

/// Keeps only the trials whose name starts with one of the comma-separated
/// prefixes in the environment variable `variable`, if it is set
/// (`PMC_LIVE_ONLY`, `PMC_CLI_ONLY`): `cargo xtask mutants` runs a binary's
/// lib tests in the same `cargo test`, which a test-binary filter would
/// filter too.
pub fn keep_only_named_in(variable: &str, trials: &mut Vec<Trial>) {
    if let Ok(only) = std::env::var(variable) {
        let prefixes: Vec<&str> = only.split(',').filter(|p| !p.is_empty()).collect();
        trials.retain(|t| prefixes.iter().any(|p| t.name().starts_with(p)));
    }
}

/// Turns the tests into trials that skip, with the reason, when `env`
/// does not satisfy their requirements, and fail when `env` is broken.
///
/// `PMC_LIVE_FORCE` (see [`FORCE_ENV`]) treats the named requirements as
/// met: `cargo xtask test --matrix` forces one at a time to prove that a
/// skipped test really fails without it, with that requirement's error.
pub fn trials(tests: Vec<LiveTest>, env: &Environment) -> Vec<Trial> {
    let forced = Forced::parse(std::env::var(FORCE_ENV).ok().as_deref());
    tests
        .into_iter()
        .map(|t| {
            let verdict = gate(&t.requires, env, &forced);
            let run = t.run;
            Trial::ignorable_test(t.name, move || match verdict {
                Gate::Skip(reason) => Ok(Completion::ignored_with(reason)),
                Gate::Fail(reason) => Err(Failed::from(reason)),
                Gate::Run => run().map(|()| Completion::Completed),
            })
        })
        .collect()
}

/// Reports one retry of `test`: `FLAKE: test: reason` on standard error,
/// which `cargo xtask test` tallies as a flake and `--expect` fails on
/// (`xtask/src/test/tally.rs`, `FLAKE_PREFIX`). A test retries only where a
/// comment says why no bound on the first try can be sound, and calls this
/// for each retry it makes: a retry that passes is still seen.
///
/// One `write(2)` of the whole line, starting with a newline: past
/// libtest's capture (it captures the print macros, not a direct write),
/// never split by another writer, and never glued to another's partial
/// line. No test in this workspace retries today (issue 34).
#[allow(dead_code)]
pub fn report_flake(test: &str, reason: &str) {
    let line = format!("\nFLAKE: {test}: {}\n", reason.replace('\n', " "));
    let _ = std::io::stderr().write_all(line.as_bytes());
}

/// Fails the test with a message unless `cond` holds.
#[macro_export]
macro_rules! ensure {
    ($cond:expr, $($msg:tt)+) => {
        let holds: bool = $cond;
        if !holds {
            return Err(libtest_mimic::Failed::from(format!($($msg)+)));
        }
    };
}

/// Converts any displayable error into a test failure with context.
pub trait Context<T> {
    fn ctx(self, what: &str) -> Result<T, Failed>;
}

impl<T, E: std::fmt::Display> Context<T> for Result<T, E> {
    fn ctx(self, what: &str) -> Result<T, Failed> {
        self.map_err(|e| Failed::from(format!("{what}: {e}")))
    }
}

/// A copy of this test binary running a workload (see `workloads.rs`),
/// paused until [`Workload::go`] so that counters can attach first.
pub struct Workload {
    pub child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
}

impl Workload {
    /// Starts `name args…` and waits until it reports ready.
    pub fn spawn(name: &str, args: &[&str]) -> Result<Workload, Failed> {
        let exe = std::env::current_exe().ctx("current_exe")?;
        let mut child = Command::new(exe)
            .env(crate::workloads::ENV, name)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .ctx("spawn workload")?;
        let stdin = child.stdin.take();
        let mut stdout = BufReader::new(child.stdout.take().expect("piped stdout"));
        let mut line = String::new();
        stdout.read_line(&mut line).ctx("workload ready line")?;
        if line.trim() != "ready" {
            return Err(Failed::from(format!(
                "workload {name} said {line:?}, not ready"
            )));
        }
        Ok(Workload {
            child,
            stdin,
            stdout,
        })
    }

    /// The workload's pid.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Lets the workload run.
    pub fn go(&mut self) -> Result<(), Failed> {
        let mut stdin = self.stdin.take().ok_or("go called twice")?;
        stdin.write_all(b"go\n").ctx("write go")?;
        Ok(())
    }

    /// Waits for the workload to finish and returns what it printed.
    pub fn wait(mut self) -> Result<String, Failed> {
        let mut rest = String::new();
        std::io::Read::read_to_string(&mut self.stdout, &mut rest).ctx("workload output")?;
        let status = self.child.wait().ctx("wait workload")?;
        if !status.success() {
            return Err(Failed::from(format!("workload failed: {status}")));
        }
        Ok(rest)
    }
}

/// The number of open file descriptors of this process.
pub fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").map_or(0, |d| d.count())
}

/// Spins on the CPU for `ms` milliseconds of this thread's CPU time.
pub fn spin_ms(ms: u64) -> u64 {
    // Spin for `ms` of this thread's CPU time, not wall time: on a loaded
    // machine a wall-clock spin gets less CPU than the tests expect.
    let end = pmc_linux::system::thread_cpu_ns() + ms * 1_000_000;
    let mut x = 0u64;
    while pmc_linux::system::thread_cpu_ns() < end {
        for i in 0..1000u64 {
            x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(i));
        }
    }
    x
}

/// The harness's own tests: gating on synthetic environments.
pub fn tests() -> Vec<LiveTest> {
    vec![
        test(
            "harness::gate_skips_with_every_unmet_token_and_fails_when_broken",
            vec![],
            gate_skips_with_every_unmet_token_and_fails_when_broken,
        ),
        test(
            "harness::force_env_forces_only_the_named_requirements",
            vec![],
            force_env_forces_only_the_named_requirements,
        ),
        test(
            "harness::the_gate_reads_procfs_sysfs_capabilities_and_mounts_itself",
            vec![],
            || crate::machine::self_test().map_err(Failed::from),
        ),
        test(
            "harness::the_gates_reading_agrees_with_the_probes",
            vec![],
            the_gates_reading_agrees_with_the_probes,
        ),
    ]
}

/// Two independent readings of one machine: the gate's plain reads
/// (`machine.rs`) and the probe's (`pmc::probe::Environment::detect`,
/// through pmc-linux) must agree, field by field.
fn the_gates_reading_agrees_with_the_probes() -> TestResult {
    let gate = crate::machine::environment();
    let mut probe = Environment::detect();
    probe.pmus.sort();
    ensure!(
        gate == probe,
        "the gate read {gate:#?}\nthe probe read {probe:#?}"
    );
    Ok(())
}

/// A user at paranoid 2 on a machine without a core PMU or tracefs.
fn synthetic_user() -> Environment {
    Environment {
        os: "linux".into(),
        paranoid: Some(2),
        root: false,
        cap_perfmon: false,
        cap_sys_admin: false,
        cap_sys_ptrace: false,
        cap_ipc_lock: false,
        pmus: vec!["software".into(), "tracepoint".into()],
        hardware_counting: false,
        tracefs: pmc::probe::Tracefs::NotMounted,
        tracefs_mount_command: Some("mount -t tracefs nodev /sys/kernel/tracing".into()),
        kernel_release: "6.1.0-57-arm64".into(),
    }
}

fn gate_skips_with_every_unmet_token_and_fails_when_broken() -> TestResult {
    let env = synthetic_user();
    let reqs = [
        Requirement::Paranoid(2),
        Requirement::TracefsReadable,
        Requirement::Paranoid(-1),
    ];
    ensure!(
        gate(&reqs[..1], &env, &Forced::Nothing) == Gate::Run,
        "paranoid 2 is met at 2"
    );
    let skip = gate(&reqs, &env, &Forced::Nothing);
    let Gate::Skip(reason) = &skip else {
        return Err(format!("expected a skip, got {skip:?}").into());
    };
    ensure!(
        reason.starts_with("[tracefs,paranoid:-1] ")
            && reason.contains("mount -t tracefs")
            && reason.contains("<= -1"),
        "{reason}"
    );
    // A core PMU that does not count fails the test, whatever else is unmet.
    let mut dead = env.clone();
    dead.pmus.push("cpu".into());
    let verdict = gate(
        &[Requirement::Paranoid(-1), Requirement::HardwareCounting],
        &dead,
        &Forced::Nothing,
    );
    ensure!(
        matches!(&verdict, Gate::Fail(r) if r.starts_with("[hardware] ") && r.contains("does not count")),
        "{verdict:?}"
    );
    // No PMU at all under a live perf_event: broken.
    let mut empty = env.clone();
    empty.pmus.clear();
    let verdict = gate(
        &[Requirement::Pmu("uprobe".into())],
        &empty,
        &Forced::Nothing,
    );
    ensure!(
        matches!(&verdict, Gate::Fail(r) if r.contains("lists no PMU")),
        "{verdict:?}"
    );
    Ok(())
}

fn force_env_forces_only_the_named_requirements() -> TestResult {
    ensure!(Forced::parse(None) == Forced::Nothing, "unset");
    ensure!(Forced::parse(Some("")) == Forced::Nothing, "empty");
    ensure!(Forced::parse(Some("1")) == Forced::Everything, "1");
    ensure!(Forced::parse(Some("all")) == Forced::Everything, "all");
    let two = Forced::parse(Some("tracefs, paranoid:-1"));
    ensure!(
        two == Forced::Tokens(vec!["tracefs".into(), "paranoid:-1".into()]),
        "{two:?}"
    );
    let env = synthetic_user();
    let reqs = [Requirement::TracefsReadable, Requirement::Paranoid(-1)];
    // Forcing one of two unmet requirements leaves the other as the reason.
    let one = gate(&reqs, &env, &Forced::parse(Some("tracefs")));
    ensure!(
        matches!(&one, Gate::Skip(r) if r.starts_with("[paranoid:-1] ")),
        "{one:?}"
    );
    ensure!(gate(&reqs, &env, &two) == Gate::Run, "both forced");
    ensure!(
        gate(&reqs, &env, &Forced::Everything) == Gate::Run,
        "all forced"
    );
    // A broken machine is forced like any other requirement.
    let mut dead = env.clone();
    dead.pmus.push("cpu".into());
    ensure!(
        gate(
            &[Requirement::HardwareCounting],
            &dead,
            &Forced::parse(Some("hardware"))
        ) == Gate::Run,
        "hardware forced"
    );
    Ok(())
}
