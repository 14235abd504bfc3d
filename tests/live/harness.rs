//! The capability-gated test harness: every test declares what it needs,
//! and an unmet need is reported as `ignored (reason)` at run time.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use libtest_mimic::{Completion, Failed, Trial};
use pmc::probe::{Environment, Requirement};

/// The environment variable that makes [`trials`] ignore requirements.
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

/// Turns the tests into trials that skip, with the reason, when `env`
/// does not satisfy their requirements.
///
/// With `PMC_LIVE_FORCE` set, requirements are ignored and every test runs:
/// `cargo xtask test --matrix` uses it to prove that a skipped test would
/// really fail (a test that passes anyway declared too strict a need).
pub fn trials(tests: Vec<LiveTest>, env: &Environment) -> Vec<Trial> {
    let force = std::env::var_os(FORCE_ENV).is_some();
    tests
        .into_iter()
        .map(|t| {
            let verdict = if force {
                Ok(())
            } else {
                Requirement::check_all(&t.requires, env)
            };
            let run = t.run;
            Trial::ignorable_test(t.name, move || match verdict {
                Err(reason) => Ok(Completion::ignored_with(reason)),
                Ok(()) => run().map(|()| Completion::Completed),
            })
        })
        .collect()
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
