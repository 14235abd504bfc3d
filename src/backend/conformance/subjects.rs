//! The backends the unit-test instances of the suite run on.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use pmc_freebsd::abi;
use pmc_freebsd::double::{Call, KernelDouble, Machine, Process};
use pmc_freebsd::{Op, Request, Transport};

use super::suite::{Cap, KernelRow, Subject};
use crate::backend::freebsd::FreeBsdBackend;
use crate::backend::sim::SimBackend;
use crate::{Mode, Owner};

/// The first pid `spawn` hands out; 77 is never one.
const FIRST_PID: u32 = 42;
const ABSENT_PID: u32 = 77;

/// The simulator: every capability, exact counts.
#[derive(Debug)]
pub struct SimSubject {
    sim: Arc<SimBackend>,
    owner: Owner,
    next_pid: AtomicU32,
}

impl SimSubject {
    /// A 2-CPU simulated machine.
    pub fn new() -> SimSubject {
        let sim = SimBackend::new(2);
        SimSubject {
            owner: Owner::new(sim.clone()),
            sim,
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
    fn owner(&self) -> &Owner {
        &self.owner
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

    fn with_refused_opens(&self, errno: i32, body: &(dyn Fn() + Sync)) {
        self.sim.refuse_opens(Some(errno));
        body();
        self.sim.refuse_opens(None);
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
    owner: Owner,
    next_pid: AtomicU32,
    /// `#n` of each hwpmc PMC id (its latest allocation), and the next n.
    numbers: Mutex<(HashMap<u32, usize>, usize)>,
    /// Requests taken from the kernel before a query of the subject's own
    /// (`kernel_rows`), still to be reported.
    pending: Mutex<Vec<Call>>,
}

impl FreeBsdDoubleSubject {
    /// A fresh kernel whose caller is pid 1000.
    pub fn new() -> FreeBsdDoubleSubject {
        let kernel = Arc::new(KernelDouble::new(Machine::intel_2cpu(), 1000));
        // One pmu-events entry: Intel's fixed-counter instructions event
        // (event 0 → IAF), on an amd64 libpmc whatever the host.
        let hwpmc = crate::backend::freebsd::double::intel_hwpmc(&kernel);
        // What opening asked (version, CPU information, soft events) is
        // not a scenario's.
        kernel.take_calls();
        FreeBsdDoubleSubject {
            owner: Owner::new(Arc::new(FreeBsdBackend::from_hwpmc(hwpmc))),
            kernel,
            next_pid: AtomicU32::new(FIRST_PID),
            numbers: Mutex::new((HashMap::new(), 0)),
            pending: Mutex::new(Vec::new()),
        }
    }

    /// One recorded request as a line of [`Subject::take_requests`].
    fn render(&self, c: &Call) -> String {
        let mut numbers = self.numbers.lock().unwrap_or_else(|e| e.into_inner());
        let (ids, next) = &mut *numbers;
        let number = |id: u32| {
            ids.get(&id)
                .map_or_else(|| format!("#?{id:#x}"), |n| format!("#{n}"))
        };
        let line = match c.op {
            Op::PMCALLOCATE => {
                let mode = abi::Mode::from_raw(c.mode).map_or("?", |m| m.name());
                let cpu = if c.cpu == abi::PMC_CPU_ANY {
                    "ANY".to_string()
                } else {
                    c.cpu.to_string()
                };
                let mut line = format!("ALLOCATE {mode} cpu={cpu}");
                if c.flags != 0 {
                    line += &format!(" flags={:#x}", c.flags);
                }
                if c.value != 0 {
                    line += &format!(" count={}", c.value);
                }
                if c.result.is_ok() {
                    ids.insert(c.pmcid, *next);
                    line += &format!(" -> #{next}");
                    *next += 1;
                }
                line
            }
            Op::PMCATTACH => format!("ATTACH {} pid={}", number(c.pmcid), c.pid),
            Op::PMCDETACH => format!("DETACH {} pid={}", number(c.pmcid), c.pid),
            Op::PMCRW => {
                let (old, new) = (
                    c.flags & abi::PMC_F_OLDVALUE != 0,
                    c.flags & abi::PMC_F_NEWVALUE != 0,
                );
                match (old, new) {
                    (true, false) => format!("READ {}", number(c.pmcid)),
                    (false, true) => format!("WRITE {} value={}", number(c.pmcid), c.value),
                    _ => format!(
                        "RW {} flags={:#x} value={}",
                        number(c.pmcid),
                        c.flags,
                        c.value
                    ),
                }
            }
            Op::PMCSETCOUNT => format!("SETCOUNT {} count={}", number(c.pmcid), c.value),
            Op::PMCSTART | Op::PMCSTOP | Op::PMCRELEASE | Op::PMCGETMSR => {
                format!(
                    "{} {}",
                    c.op.name().trim_start_matches("PMC"),
                    number(c.pmcid)
                )
            }
            Op::GETPMCINFO | Op::PMCADMIN => format!("{} cpu={}", c.op.name(), c.cpu),
            op => op.name().to_string(),
        };
        match c.result {
            Ok(()) => line,
            Err(e) => format!("{line} = {}", e.name()),
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
    fn owner(&self) -> &Owner {
        &self.owner
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
            // Through hwpmc's own log (backend/freebsd/sampling.rs).
            Cap::Sampling | Cap::LogFlags => true,
            // The double refuses PMCALLOCATE on demand.
            Cap::InjectedOpenFailure => true,
            // hwpmc never multiplexes.
            Cap::Starvation => false,
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

    /// PMCALLOCATE fails with `errno` while `body` runs (EMFILE, the
    /// suite's, has one number on FreeBSD and Linux).
    fn with_refused_opens(&self, errno: i32, body: &(dyn Fn() + Sync)) {
        self.kernel
            .refuse_allocations(Some(pmc_freebsd::Errno(errno)));
        body();
        self.kernel.refuse_allocations(None);
    }

    fn take_requests(&self) -> Option<Vec<String>> {
        let mut calls =
            std::mem::take(&mut *self.pending.lock().unwrap_or_else(|e| e.into_inner()));
        calls.extend(self.kernel.take_calls());
        Some(calls.iter().map(|c| self.render(c)).collect())
    }

    fn kernel_rows(&self, cpu: u32) -> Option<Vec<KernelRow>> {
        let before = self.kernel.take_calls();
        self.pending
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .extend(before);
        let npmc: u32 = self.kernel.machine().classes.iter().map(|c| c.num).sum();
        let mut rows = vec![abi::pmc_info::default(); npmc as usize];
        self.kernel
            .call(Request::GetPmcInfo {
                cpu: cpu as i32,
                pmcs: &mut rows,
            })
            .expect("GETPMCINFO");
        self.kernel.take_calls();
        Some(
            rows.iter()
                .map(|r| KernelRow {
                    disposition: match abi::Disp::from_raw(r.pm_rowdisp) {
                        Some(abi::Disp::THREAD) => "THREAD",
                        Some(abi::Disp::STANDALONE) => "STANDALONE",
                        _ => "FREE",
                    },
                    owner: (r.pm_ownerpid >= 0).then_some(r.pm_ownerpid as u32),
                    mode: (r.pm_ownerpid >= 0).then(|| match abi::Mode::from_raw(r.pm_mode) {
                        Some(abi::Mode::SS) => Mode::SS,
                        Some(abi::Mode::SC) => Mode::SC,
                        Some(abi::Mode::TS) => Mode::TS,
                        _ => Mode::TC,
                    }),
                    flags: r.pm_flags,
                })
                .collect(),
        )
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
    owner: Owner,
}

impl PortableSubject {
    /// A portable backend for the suite.
    pub fn new() -> PortableSubject {
        PortableSubject {
            owner: Owner::new(Arc::new(crate::backend::portable::PortableBackend::new(
                "conformance suite",
            ))),
        }
    }
}

impl Subject for PortableSubject {
    fn owner(&self) -> &Owner {
        &self.owner
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

    /// This process's CPU time (CLOCK_PROCESS_CPUTIME_ID, from the
    /// kernel): the most `task-clock` of the caller can count.
    fn ceiling(&self) -> Option<u64> {
        use nix::time::{ClockId, clock_gettime};
        let t = clock_gettime(ClockId::CLOCK_PROCESS_CPUTIME_ID).expect("process CPU clock");
        Some(crate::backend::portable::source::timespec_ns(
            t.tv_sec(),
            t.tv_nsec(),
            1,
        ))
    }

    fn caller(&self) -> u32 {
        std::process::id()
    }

    fn absent_pid(&self) -> u32 {
        // Beyond any pid_max (2^22 on Linux, 99999 on the BSDs).
        i32::MAX as u32
    }
}
