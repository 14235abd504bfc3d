//! The semantic suite of `Pmc` (`src/backend/conformance/suite.rs`, the
//! scenarios the simulator and the FreeBSD backend run as unit tests) on
//! Linux perf_event, live: `conformance::linux::<scenario>`.
//!
//! The event is `task-clock,usr` (a software event: paranoid ≤ 2, no PMU), a
//! unit of work is 1 µs of this thread's CPU time, and counts are checked
//! as at least the work done. Other processes are `sleep` children. A
//! scenario that needs what this backend cannot offer (exact counts, CPU
//! hotplug, …) is `ignored, n/a: …`; the others are gated by the machine's
//! requirements like every live test.

use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, OnceLock};

use libtest_mimic::{Completion, Failed, Trial};
use pmc::backend::Backend;
use pmc::machine::PmcInfo;
use pmc::probe::{Environment, Requirement};
use pmc::{Cpu, Error, Flags, Mode, Pmc, State};

use crate::harness::{FORCE_ENV, Forced, Gate, gate};

#[path = "../../src/backend/conformance/suite.rs"]
mod suite;

use suite::{Cap, Subject};

/// The caller's PMCs as `pmc_pmcinfo` lists them (process PMCs are on
/// every CPU's list).
fn pmcinfo_rows() -> Vec<PmcInfo> {
    pmc::pmcinfo(0).unwrap_or_else(|e| panic!("pmcinfo(0): {e}"))
}

fn linux_backend() -> Arc<dyn Backend> {
    static BACKEND: OnceLock<Arc<dyn Backend>> = OnceLock::new();
    BACKEND
        .get_or_init(|| Arc::new(pmc::backend::linux::LinuxBackend::new()))
        .clone()
}

/// perf_event on this machine.
struct LinuxSubject {
    children: Mutex<Vec<Child>>,
}

impl LinuxSubject {
    fn new() -> LinuxSubject {
        LinuxSubject {
            children: Mutex::new(Vec::new()),
        }
    }
}

impl Drop for LinuxSubject {
    fn drop(&mut self) {
        let children = self.children.get_mut().unwrap_or_else(|e| e.into_inner());
        for child in children.iter_mut() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Subject for LinuxSubject {
    fn backend(&self) -> Arc<dyn Backend> {
        linux_backend()
    }

    /// User-mode CPU time: `,usr` keeps it countable at paranoid 2.
    fn event(&self) -> &'static str {
        "task-clock,usr"
    }

    /// task-clock counts nanoseconds; a unit of work is 1 µs.
    fn per_unit(&self) -> u64 {
        1000
    }

    fn has(&self, cap: Cap) -> bool {
        match cap {
            Cap::OtherProcesses | Cap::ProcessExit | Cap::SystemMode | Cap::Sampling => true,
            Cap::LogFlags => true,
            // A real kernel counts at least the work, plus whatever else
            // the process does.
            Cap::ExactCounts => false,
            // Not without spawning process trees, offlining CPUs (global
            // state), fault injection or a PMU (rdpmc of task-clock is 0).
            Cap::ProcessTrees
            | Cap::CpuHotplug
            | Cap::InjectedOpenFailure
            | Cap::Starvation
            | Cap::DirectRead => false,
        }
    }

    fn work(&self, units: u64) {
        let end = pmc_linux::system::thread_cpu_ns() + units * 1000;
        let mut x = 0u64;
        while pmc_linux::system::thread_cpu_ns() < end {
            for i in 0..100u64 {
                x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(i));
            }
        }
    }

    fn caller(&self) -> u32 {
        std::process::id()
    }

    /// Above `kernel.pid_max`: no process can have it.
    fn absent_pid(&self) -> u32 {
        std::fs::read_to_string("/proc/sys/kernel/pid_max")
            .ok()
            .and_then(|s| s.trim().parse::<u32>().ok())
            .map_or(u32::MAX / 2, |max| max + 1)
    }

    fn spawn(&self) -> u32 {
        let child = Command::new("sleep")
            .arg("600")
            .stdin(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("spawn `sleep 600`: {e}"));
        let pid = child.id();
        self.children
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(child);
        pid
    }

    fn exit(&self, pid: u32) {
        let mut children = self.children.lock().unwrap_or_else(|e| e.into_inner());
        let i = children
            .iter()
            .position(|c| c.id() == pid)
            .unwrap_or_else(|| panic!("{pid} is not a child of this test"));
        let mut child = children.remove(i);
        child.kill().unwrap_or_else(|e| panic!("kill {pid}: {e}"));
        child.wait().unwrap_or_else(|e| panic!("wait {pid}: {e}"));
    }
}

/// What the machine must allow for a scenario: user-mode software events
/// of own and child processes (paranoid ≤ 2), context-switch records for
/// the `LOG_PROC*` flags (kernel samples: ≤ 1, and the
/// `sched:sched_process_exit` tracepoint of LOG_PROCEXIT with DESCENDANTS:
/// tracefs), CPU-wide counting for system modes (≤ 0).
fn requirements(needs: &[Cap]) -> Vec<Requirement> {
    let mut r = vec![Requirement::Paranoid(2)];
    if needs.contains(&Cap::LogFlags) {
        r.push(Requirement::Paranoid(1));
        r.push(Requirement::TracefsReadable);
    }
    if needs.contains(&Cap::SystemMode) {
        r.push(Requirement::Paranoid(0));
    }
    r
}

/// One trial per scenario of the suite.
pub fn trials(env: &Environment) -> Vec<Trial> {
    let forced = Forced::parse(std::env::var(FORCE_ENV).ok().as_deref());
    let caps = LinuxSubject::new();
    suite::SCENARIOS
        .iter()
        .map(|s| {
            let name = format!("conformance::linux::{}", s.name);
            let lacking = suite::missing(&caps, s.needs);
            let verdict = gate(&requirements(s.needs), env, &forced);
            let scenario = s.name;
            Trial::ignorable_test(name, move || {
                if !lacking.is_empty() {
                    return Ok(Completion::ignored_with(format!(
                        "n/a: linux-perf_event (live) cannot offer {lacking:?}"
                    )));
                }
                match verdict {
                    Gate::Skip(reason) => Ok(Completion::ignored_with(reason)),
                    Gate::Fail(reason) => Err(Failed::from(reason)),
                    Gate::Run => {
                        suite::run(&LinuxSubject::new(), scenario);
                        Ok(Completion::Completed)
                    }
                }
            })
        })
        .collect()
}
