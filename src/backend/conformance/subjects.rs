//! The backends the unit-test instances of the suite run on.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use pmc_freebsd::double::{KernelDouble, Machine, Process};
use pmc_freebsd::{Arch, Hwpmc, PmuEvent, PmuEvents, PmuVendor};

use super::suite::{Cap, Subject};
use crate::backend::Backend;
use crate::backend::freebsd::FreeBsdBackend;
use crate::backend::sim::SimBackend;

/// The first pid `spawn` hands out; 77 is never one.
const FIRST_PID: u32 = 42;
const ABSENT_PID: u32 = 77;

/// The simulator: every capability, exact counts.
#[derive(Debug)]
pub struct SimSubject {
    sim: Arc<SimBackend>,
    next_pid: AtomicU32,
}

impl SimSubject {
    /// A 2-CPU simulated machine.
    pub fn new() -> SimSubject {
        SimSubject {
            sim: SimBackend::new(2),
            next_pid: AtomicU32::new(FIRST_PID),
        }
    }

    fn next_pid(&self) -> u32 {
        let pid = self.next_pid.fetch_add(1, Ordering::Relaxed);
        if pid == ABSENT_PID {
            return self.next_pid();
        }
        pid
    }
}

impl Subject for SimSubject {
    fn backend(&self) -> Arc<dyn Backend> {
        self.sim.clone()
    }

    fn event(&self) -> &'static str {
        "task-clock"
    }

    fn has(&self, _cap: Cap) -> bool {
        true
    }

    fn work(&self, units: u64) {
        self.sim.advance(units);
    }

    fn caller(&self) -> u32 {
        self.sim.caller()
    }

    fn absent_pid(&self) -> u32 {
        ABSENT_PID
    }

    fn spawn(&self) -> u32 {
        let pid = self.next_pid();
        self.sim.spawn(pid);
        pid
    }

    fn spawn_child(&self, parent: u32) -> u32 {
        let pid = self.next_pid();
        self.sim.spawn_child(parent, pid);
        pid
    }

    fn exit(&self, pid: u32) {
        self.sim.exit(pid);
    }

    fn set_online(&self, cpu: u32, online: bool) {
        self.sim.set_online(cpu, online);
    }

    fn refuse_opens(&self, errno: Option<i32>) {
        self.sim.refuse_opens(errno);
    }

    fn starve(&self, on: bool) {
        self.sim.starve(on);
    }

    fn direct_read_event(&self) -> (&'static str, u32) {
        self.sim.set_rdpmc_index(Some(3));
        ("task-clock", 3)
    }
}

/// The FreeBSD backend over pmc-freebsd's kernel double (a 2-CPU Intel
/// machine with TSC, IAP, IAF and SOFT rows), counting
/// `SOFT-PAGE_FAULT.ALL`.
#[derive(Debug)]
pub struct FreeBsdDoubleSubject {
    kernel: Arc<KernelDouble>,
    backend: Arc<dyn Backend>,
    next_pid: AtomicU32,
}

impl FreeBsdDoubleSubject {
    /// A fresh kernel whose caller is pid 1000.
    pub fn new() -> FreeBsdDoubleSubject {
        let kernel = Arc::new(KernelDouble::new(Machine::intel_2cpu(), 1000));
        // One pmu-events entry: Intel's fixed-counter instructions event
        // (event 0 → IAF, libpmc_pmu_util.c pmc_pmu_pmcallocate).
        let pmu = PmuEvents {
            vendor: PmuVendor::Intel,
            events: vec![PmuEvent {
                name: "inst_retired.any".into(),
                event: "event=0x00,umask=0x01".into(),
                topic: "pipeline".into(),
            }],
        };
        let mut hwpmc = Hwpmc::open_with_pmu(kernel.clone(), Some(pmu)).expect("double opens");
        // The double is an amd64 machine whatever the host.
        hwpmc.resolver_mut().arch = Arch::Amd64;
        FreeBsdDoubleSubject {
            backend: Arc::new(FreeBsdBackend::from_hwpmc(hwpmc)),
            kernel,
            next_pid: AtomicU32::new(FIRST_PID),
        }
    }

    fn add(&self, parent: i32) -> u32 {
        let mut pid = self.next_pid.fetch_add(1, Ordering::Relaxed);
        if pid == ABSENT_PID {
            pid = self.next_pid.fetch_add(1, Ordering::Relaxed);
        }
        self.kernel.add_process(
            pid as i32,
            Process {
                parent,
                exiting: false,
                debuggable: true,
            },
        );
        pid
    }
}

impl Subject for FreeBsdDoubleSubject {
    fn backend(&self) -> Arc<dyn Backend> {
        self.backend.clone()
    }

    fn event(&self) -> &'static str {
        "page-faults"
    }

    fn has(&self, cap: Cap) -> bool {
        match cap {
            Cap::ExactCounts
            | Cap::OtherProcesses
            | Cap::ProcessTrees
            | Cap::ProcessExit
            | Cap::SystemMode
            | Cap::CpuHotplug
            | Cap::DirectRead => true,
            // Refused at allocate (not connected to hwpmc's log yet).
            Cap::Sampling | Cap::LogFlags => false,
            // The double has no such knob; hwpmc never multiplexes.
            Cap::InjectedOpenFailure | Cap::Starvation => false,
        }
    }

    /// Every process runs a whole slice (switched in, counting, switched
    /// out) and every running system PMC counts `units`.
    fn work(&self, units: u64) {
        self.kernel.advance_all(units);
    }

    fn caller(&self) -> u32 {
        self.kernel.pid() as u32
    }

    fn absent_pid(&self) -> u32 {
        ABSENT_PID
    }

    fn spawn(&self) -> u32 {
        self.add(1)
    }

    fn spawn_child(&self, parent: u32) -> u32 {
        self.add(parent as i32)
    }

    fn exit(&self, pid: u32) {
        self.kernel.exit_process(pid as i32);
    }

    fn set_online(&self, cpu: u32, online: bool) {
        self.kernel.set_cpu_active(cpu, online);
    }

    fn direct_read_event(&self) -> (&'static str, u32) {
        // The double's IAF rows read through MSR base 1 << 30 (the fixed
        // counters' rdpmc index flag); the first row is 0.
        ("inst_retired.any", 1 << 30)
    }
}

/// The portable backend on this process: `task-clock` (its CPU time) in
/// TC mode on the caller, which is all it offers; other unit tests run
/// in this process meanwhile, so counts are at least the work.
#[derive(Debug)]
pub struct PortableSubject {
    backend: Arc<dyn Backend>,
}

impl PortableSubject {
    /// A portable backend for the suite.
    pub fn new() -> PortableSubject {
        PortableSubject {
            backend: Arc::new(crate::backend::portable::PortableBackend::new(
                "conformance suite",
            )),
        }
    }
}

impl Subject for PortableSubject {
    fn backend(&self) -> Arc<dyn Backend> {
        self.backend.clone()
    }

    fn event(&self) -> &'static str {
        "task-clock"
    }

    /// task-clock counts nanoseconds; a unit of work is 1 µs.
    fn per_unit(&self) -> u64 {
        1000
    }

    /// Only what the caller's own accounting gives: no other processes,
    /// system or sampling modes, log flags, injection or direct reads.
    fn has(&self, _cap: Cap) -> bool {
        false
    }

    fn work(&self, units: u64) {
        use nix::time::{ClockId, clock_gettime};
        let now = || {
            let t = clock_gettime(ClockId::CLOCK_THREAD_CPUTIME_ID).expect("thread CPU clock");
            crate::backend::portable::source::timespec_ns(t.tv_sec(), t.tv_nsec(), 1)
        };
        let end = now() + units * 1000;
        let mut x = 0u64;
        while now() < end {
            for i in 0..100u64 {
                x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(i));
            }
        }
    }

    fn caller(&self) -> u32 {
        std::process::id()
    }

    fn absent_pid(&self) -> u32 {
        // Beyond any pid_max (2^22 on Linux, 99999 on the BSDs).
        i32::MAX as u32
    }
}
