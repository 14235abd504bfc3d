//! A kernel double: a [`Transport`] that answers every `PMC_OP_*` with the
//! rules of `pmc_syscall_handler` and its helpers in
//! sys/dev/hwpmc/hwpmc_mod.c (FreeBSD 14/15), on any platform.
//!
//! It models one calling process (the owner), a process table, the rows of
//! every class on every CPU, row dispositions, the owner's log file, and a
//! counter value per PMC that [`KernelDouble::advance`] moves forward, so
//! the backend above it can be tested end to end without FreeBSD.
//!
//! Process PMCs live on the hardware of the CPU their target runs on, as
//! in hwpmc_mod.c: loaded at a context switch in, folded into
//! `pm_savedvalue` at the switch out (`sched.rs`, after
//! `pmc_process_csw_in`/`pmc_process_csw_out`), read from the hardware by
//! PMCRW only when RUNNING and attached to the owner (`pmc_do_op_pmcrw`).
//! [`KernelDouble::advance`] runs a process on a CPU (it stays there until
//! another process runs on that CPU or [`KernelDouble::switch_out`]);
//! [`KernelDouble::advance_all`] gives every process a whole time slice.
//! The caller is switched in on its CPU (0) for each of its system calls.
//! Every request is recorded with its arguments and result
//! ([`KernelDouble::calls`], `record.rs`).
//!
//! Simplifications, each visible in the API: a system PMC's hardware is
//! one value; a sampling process PMC's hardware counts the events left in
//! its period per target process (`pp_pmcval`), not per thread; the log
//! file records WRITELOG cookies instead of pmclog bytes; `p_candebug` is
//! a per-process flag.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;

use crate::abi::{self, Class, CpuType, Errno, Mode, State};
use crate::transport::{Request, Transport};

mod allocate;
mod attach;
mod log;
mod ops;
mod record;
mod sched;

pub use record::Call;

pub use log::{Image, KERNEL_PATH, KERNEL_START, LOG_BUFFER_BYTES, LogPipe};

/// One class of counters the simulated machine has.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClassSpec {
    /// The class.
    pub class: Class,
    /// `pcd_caps`.
    pub caps: u32,
    /// Counter width.
    pub width: u32,
    /// Rows (`pcd_num`).
    pub num: u32,
    /// `pcd_get_msr` result base (`None`: the class has no GETMSR, ENOSYS).
    pub msr_base: Option<u32>,
}

/// The machine the double simulates.
#[derive(Clone, Debug)]
pub struct Machine {
    /// `pm_cputype`.
    pub cputype: CpuType,
    /// `pmc_cpu_max()`.
    pub ncpu: u32,
    /// CPUs that are not active (`pmc_cpu_is_active` false → ENXIO).
    pub inactive_cpus: BTreeSet<u32>,
    /// Classes in row order.
    pub classes: Vec<ClassSpec>,
    /// Registered soft events (names after `pmc_soft_namecleanup`).
    pub soft_events: Vec<String>,
    /// The module's `PMC_VERSION`.
    pub module_version: u32,
    /// `kern.hwpmc.mincount`: lower bound of sampling reload counts.
    pub mincount: u64,
    /// INITIALIZE's `pl_tsc_freq`: the TSC's rate in Hz, which hwpmc fills
    /// in on x86 only (`pmc_initialize_logging` leaves 0 elsewhere).
    pub tsc_freq: u64,
}

impl Machine {
    /// A 2-CPU Intel machine: TSC, IAP×4, IAF×3, SOFT×16, with the kernel
    /// soft events that exist on amd64 (kern_clock.c `clock.hard/stat/prof`,
    /// trap.c `page_fault.all/read/write`). Capabilities are the double's
    /// configuration, chosen to exercise the rules, not measured.
    pub fn intel_2cpu() -> Machine {
        let rw = abi::PMC_CAP_READ | abi::PMC_CAP_WRITE;
        let hw = rw | abi::PMC_CAP_INTERRUPT | abi::PMC_CAP_USER | abi::PMC_CAP_SYSTEM;
        Machine {
            cputype: CpuType::INTEL_SKYLAKE,
            ncpu: 2,
            inactive_cpus: BTreeSet::new(),
            classes: vec![
                ClassSpec {
                    class: Class::TSC,
                    caps: abi::PMC_CAP_READ,
                    width: 64,
                    num: 1,
                    msr_base: Some(0x10),
                },
                ClassSpec {
                    class: Class::IAP,
                    caps: hw
                        | abi::PMC_CAP_EDGE
                        | abi::PMC_CAP_THRESHOLD
                        | abi::PMC_CAP_INVERT
                        | abi::PMC_CAP_QUALIFIER,
                    width: 48,
                    num: 4,
                    msr_base: Some(0),
                },
                ClassSpec {
                    class: Class::IAF,
                    caps: hw,
                    width: 48,
                    num: 3,
                    msr_base: Some(1 << 30),
                },
                ClassSpec {
                    class: Class::SOFT,
                    caps: hw,
                    width: 64,
                    num: 16,
                    msr_base: None,
                },
            ],
            soft_events: [
                "CLOCK.HARD",
                "CLOCK.STAT",
                "CLOCK.PROF",
                "PAGE_FAULT.ALL",
                "PAGE_FAULT.READ",
                "PAGE_FAULT.WRITE",
            ]
            .iter()
            .map(|s| s.to_string())
            .collect(),
            module_version: abi::PMC_VERSION,
            mincount: 1000,
            tsc_freq: 1_000_000_000,
        }
    }

    fn npmc(&self) -> u32 {
        self.classes.iter().map(|c| c.num).sum()
    }

    /// The first row of a class and its spec.
    fn class_rows(&self, class: u32) -> Option<(u32, &ClassSpec)> {
        let mut ri = 0;
        for c in &self.classes {
            if c.class as u32 == class {
                return Some((ri, c));
            }
            ri += c.num;
        }
        None
    }

    fn row_class(&self, ri: u32) -> Option<(u32, &ClassSpec)> {
        let mut base = 0;
        for c in &self.classes {
            if ri < base + c.num {
                return Some((ri - base, c));
            }
            base += c.num;
        }
        None
    }

    fn soft_code(&self, name: &str) -> Option<u32> {
        self.soft_events
            .iter()
            .position(|n| n == name)
            .map(|i| abi::PMC_EV_SOFT_FIRST + i as u32)
    }
}

/// A process the double knows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Process {
    /// Parent pid.
    pub parent: i32,
    /// Exiting (`P_WEXIT`): treated as absent.
    pub exiting: bool,
    /// Whether the owner may debug it (`p_candebug` == 0).
    pub debuggable: bool,
}

#[derive(Clone, Debug)]
struct Pmc {
    id: u32,
    mode: Mode,
    ri: u32,
    cpu: u32,
    event: u32,
    caps: u32,
    flags: u32,
    state: State,
    targets: BTreeSet<i32>,
    /// `pm_gv.pm_savedvalue` (virtual) or the hardware count (system).
    value: u64,
    /// A sampling process PMC's `pp_pmcval` per target: the events left
    /// in the period, saved at the switch out.
    left: BTreeMap<i32, u64>,
    /// `pm_reloadcount` (sampling) or `pm_initial` (counting).
    count: u64,
    /// A system sampling PMC's events since it started (its hardware
    /// counter; process PMCs count on the CPUs' rows, `sched.rs`).
    hw: u64,
}

#[derive(Debug, Default)]
struct Kernel {
    owner_exists: bool,
    owns_logfile: bool,
    logfd: i32,
    log: Vec<u32>,
    flushes: u32,
    pmcs: Vec<Pmc>,
    /// Row dispositions: >0 thread users, <0 standalone users (`pmc_pmcdisp`).
    disp: BTreeMap<u32, i32>,
    /// Rows disabled by PMCADMIN, per (cpu, ri).
    disabled: BTreeSet<(u32, u32)>,
    syscalls: u32,
    syscall_errors: u32,
    /// hwpmc's log as hwpmc_logging.c keeps it (`log.rs`).
    pmclog: log::Pmclog,
    /// PMCALLOCATE fails with this ([`KernelDouble::refuse_allocations`]).
    refuse_allocate: Option<Errno>,
    /// The CPU each running process is on (`td_oncpu`).
    on_cpu: BTreeMap<i32, u32>,
    /// The thread of each running process that is on its CPU (`curthread`
    /// there; the process's own id when no slice named one), which its
    /// PROCCSW names.
    on_thread: BTreeMap<i32, i32>,
    /// The PMC configured on each (CPU, row) (`pcd_config_pmc`).
    hw: BTreeMap<(u32, u32), sched::Hw>,
    /// Every request received, in order.
    calls: Vec<Call>,
}

/// The CPU the caller runs its system calls on.
const CALLER_CPU: u32 = 0;

/// The kernel double. See the module documentation.
#[derive(Debug)]
pub struct KernelDouble {
    machine: Machine,
    pid: i32,
    privileged: bool,
    jailed: bool,
    procs: Mutex<BTreeMap<i32, Process>>,
    /// CPUs taken offline at run time ([`KernelDouble::set_cpu_active`]),
    /// on top of `machine.inactive_cpus`.
    offline: Mutex<BTreeSet<u32>>,
    kernel: Mutex<Kernel>,
}

impl KernelDouble {
    /// A kernel on `machine` whose caller is `pid`, privileged (root).
    pub fn new(machine: Machine, pid: i32) -> KernelDouble {
        let mut procs = BTreeMap::new();
        procs.insert(
            pid,
            Process {
                parent: 1,
                exiting: false,
                debuggable: true,
            },
        );
        KernelDouble {
            machine,
            pid,
            privileged: true,
            jailed: false,
            procs: Mutex::new(procs),
            offline: Mutex::new(BTreeSet::new()),
            kernel: Mutex::new(Kernel {
                logfd: -1,
                // The caller is running: it makes the system calls.
                on_cpu: BTreeMap::from([(pid, CALLER_CPU)]),
                ..Kernel::default()
            }),
        }
    }

    /// Drops or grants `PRIV_PMC_SYSTEM`/`PRIV_PMC_MANAGE`.
    pub fn with_privilege(mut self, privileged: bool) -> KernelDouble {
        self.privileged = privileged;
        self
    }

    /// Puts the caller in a jail (system-mode PMCs → EPERM).
    pub fn with_jail(mut self, jailed: bool) -> KernelDouble {
        self.jailed = jailed;
        self
    }

    /// The simulated machine.
    pub fn machine(&self) -> &Machine {
        &self.machine
    }

    /// The caller's pid.
    pub fn pid(&self) -> i32 {
        self.pid
    }

    /// Adds (or replaces) a process.
    pub fn add_process(&self, pid: i32, process: Process) {
        self.procs
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(pid, process);
    }

    /// Simulates `events` occurring in process `pid` on CPU `cpu`: the
    /// process is switched in there (switching out the one that ran
    /// there), its RUNNING process PMCs count on that CPU's hardware, and
    /// every RUNNING system PMC on `cpu` counts them. The process stays on
    /// the CPU: its counts reach `pm_savedvalue` when it switches out.
    pub fn advance(&self, pid: i32, cpu: u32, events: u64) {
        let mut k = self.lock();
        Self::csw_in(&mut k, pid, cpu);
        Self::count(&mut k, cpu, events, true);
    }

    /// Simulates a time slice of `events` for everyone: every RUNNING
    /// system PMC counts them once (each CPU sees the same work), and
    /// every process is switched out, then runs `events` in a slice of its
    /// own (switched in, counting, switched out), as processes that work
    /// and then sleep do.
    pub fn advance_all(&self, events: u64) {
        let mut k = self.lock();
        for pm in k.pmcs.iter_mut() {
            if pm.state == State::RUNNING && pm.mode.is_system() {
                sched::count_system(pm, events);
            }
        }
        let running: Vec<i32> = k.on_cpu.keys().copied().collect();
        for pid in running {
            Self::csw_out(&mut k, pid);
        }
        let pids: Vec<i32> = self
            .procs
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .keys()
            .copied()
            .collect();
        for pid in pids {
            Self::csw_in(&mut k, pid, CALLER_CPU);
            Self::count(&mut k, CALLER_CPU, events, false);
            Self::csw_out(&mut k, pid);
        }
    }

    /// Whether a process exists and is not exiting (`pfind` finds it).
    pub fn process_exists(&self, pid: i32) -> bool {
        self.process(pid).is_some_and(|p| !p.exiting)
    }

    /// The processes below `pid` (children, grandchildren, …), as
    /// `pmc_attach_process` walks them for DESCENDANTS.
    pub fn descendants(&self, pid: i32) -> Vec<i32> {
        let mut found = Vec::new();
        let mut todo = self.children(pid);
        while let Some(p) = todo.pop() {
            if !found.contains(&p) {
                found.push(p);
                todo.extend(self.children(p));
            }
        }
        found.sort_unstable();
        found
    }

    /// `sysctl {CTL_KERN, KERN_PROC, KERN_PROC_PROC, 0}`: a `struct
    /// kinfo_proc` per process ([`crate::procs`]), exiting ones included
    /// (the sysctl lists a process until it is reaped).
    pub fn kern_proc_proc(&self) -> Vec<u8> {
        let procs = self.procs.lock().unwrap_or_else(|e| e.into_inner());
        let mut out = Vec::new();
        for (pid, p) in procs.iter() {
            let entry = crate::procs::ProcEntry {
                pid: *pid,
                ppid: p.parent,
            };
            crate::procs::encode_kinfo_proc(entry, &mut out);
        }
        out
    }

    /// A process exits: hwpmc_mod.c `pmc_process_exit` unlinks it from
    /// every PMC attached to it (the counts stay in their values) and its
    /// children are reparented to init.
    pub fn exit_process(&self, pid: i32) {
        {
            let mut procs = self.procs.lock().unwrap_or_else(|e| e.into_inner());
            procs.remove(&pid);
            for p in procs.values_mut().filter(|p| p.parent == pid) {
                p.parent = 1;
            }
        }
        let mut k = self.lock();
        // pmc_process_exit takes the exiting process's counting PMCs off
        // its CPU as a switch out would (without PROCCSW), logs PROCEXIT
        // with what the process counted, then unlinks it.
        Self::save_and_unload(&mut k, pid, false);
        Self::log_exit(&mut k, pid);
        for pm in k.pmcs.iter_mut() {
            if pm.targets.remove(&pid) {
                pm.left.remove(&pid);
                if pid == self.pid {
                    pm.flags &= !abi::PMC_F_ATTACHED_TO_OWNER;
                }
            }
        }
    }

    /// The WRITELOG cookies in the configured log, in order.
    pub fn log_cookies(&self) -> Vec<u32> {
        self.lock().log.clone()
    }

    /// Every request received so far, in order, with its arguments and
    /// result.
    pub fn calls(&self) -> Vec<Call> {
        self.lock().calls.clone()
    }

    /// The requests received since the last `take_calls`, forgotten.
    pub fn take_calls(&self) -> Vec<Call> {
        std::mem::take(&mut self.lock().calls)
    }

    /// How many successful FLUSHLOG/CLOSELOG flushes happened.
    pub fn log_flushes(&self) -> u32 {
        self.lock().flushes
    }

    /// The capabilities and internal flags the kernel recorded for a PMC
    /// (`pm_caps`, `pm_flags`), if it exists.
    pub fn recorded(&self, id: u32) -> Option<(u32, u32)> {
        self.lock()
            .pmcs
            .iter()
            .find(|p| p.id == id)
            .map(|p| (p.caps, p.flags))
    }

    /// Number of PMCs the owner holds (to check releases).
    pub fn live_pmcs(&self) -> usize {
        self.lock().pmcs.len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Kernel> {
        self.kernel.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn process(&self, pid: i32) -> Option<Process> {
        self.procs
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&pid)
            .cloned()
    }

    fn children(&self, pid: i32) -> Vec<i32> {
        let procs = self.procs.lock().unwrap_or_else(|e| e.into_inner());
        procs
            .iter()
            .filter(|(p, pr)| pr.parent == pid && **p != pid)
            .map(|(p, _)| *p)
            .collect()
    }

    /// `pmc_find_pmc`.
    fn find(&self, k: &Kernel, id: u32) -> Result<usize, Errno> {
        if abi::pmc_id_to_rowindex(id) >= self.machine.npmc() {
            return Err(Errno::EINVAL);
        }
        if !k.owner_exists {
            return Err(Errno::ESRCH);
        }
        k.pmcs.iter().position(|p| p.id == id).ok_or(Errno::EINVAL)
    }

    /// `pmc_cpu_is_active`: within the machine, not inactive from the
    /// start and not taken offline since.
    pub fn cpu_active(&self, cpu: u32) -> bool {
        cpu < self.machine.ncpu
            && !self.machine.inactive_cpus.contains(&cpu)
            && !self
                .offline
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .contains(&cpu)
    }

    /// Takes a CPU offline (`pmc_cpu_is_active` false: system PMCs on it
    /// are ENXIO) or back online.
    pub fn set_cpu_active(&self, cpu: u32, active: bool) {
        let mut offline = self.offline.lock().unwrap_or_else(|e| e.into_inner());
        if active {
            offline.remove(&cpu);
        } else {
            offline.insert(cpu);
        }
    }

    /// `pmc_maybe_remove_owner`: the owner descriptor goes, and with it its
    /// `po_flags` (`PMC_PO_INITIAL_MAPPINGS_DONE`).
    fn maybe_remove_owner(k: &mut Kernel) {
        if k.pmcs.is_empty() && !k.owns_logfile {
            k.owner_exists = false;
            k.pmclog.forget_owner();
        }
    }
}

impl Transport for KernelDouble {
    fn call(&self, request: Request<'_>) -> Result<(), Errno> {
        let mut k = self.lock();
        k.syscalls += 1;
        // The caller is on a CPU while it makes the call.
        if !k.on_cpu.contains_key(&self.pid) {
            Self::csw_in(&mut k, self.pid, CALLER_CPU);
        }
        let mut call = Call::received(&request);
        let mut request = request;
        let r = self.dispatch(&mut k, request.reborrow());
        call.replied(&request, r);
        k.calls.push(call);
        if r.is_err() {
            k.syscall_errors += 1;
        }
        r
    }
}

/// The soft-event code the double gives `name` (for tests).
impl KernelDouble {
    /// `PMC_EV_SOFT_FIRST` + registration index of `name`.
    pub fn soft_event_code(&self, name: &str) -> Option<u32> {
        self.machine.soft_code(name)
    }
}
