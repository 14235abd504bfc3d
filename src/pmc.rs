//! [`Pmc`]: one performance-monitoring counter with FreeBSD libpmc semantics.
//!
//! The rules implemented here, once for every backend:
//!
//! - **allocate** parses and resolves the event and checks mode, CPU and
//!   flags exactly as pmc_allocate(3) does. Process PMCs (TC/TS) open
//!   nothing yet: Linux needs a pid, which `attach` provides. System PMCs
//!   (SC/SS) open on their CPU at once.
//! - **attach/detach** add and remove target processes. A PMC attached to
//!   several processes accumulates all of them; a detached target's count is
//!   kept.
//! - **start** attaches a never-attached process PMC to the caller; one
//!   whose targets were all detached or exited is ESRCH. Starting a running
//!   PMC and stopping a stopped one succeed.
//! - **read**, **write**, **rw** and **set** mean per mode what
//!   hwpmc_mod.c makes them mean (see [`Pmc::read`], [`Pmc::write`],
//!   [`Pmc::set`]); write, rw and set need a stopped PMC.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU8, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use crate::backend::{
    self, Backend, CounterValue, Counters, EventRequest, HotCounter, HotHandle, PreparedEvent,
};
use crate::machine::PmcInfo;
use crate::spec::{self, EventSpec};
use crate::{Capabilities, Class, Cpu, Error, Flags, Mode, PmcId, Reading, Result, State};

/// pmcstat's default reload count for sampling PMCs.
pub const DEFAULT_RELOAD_COUNT: u64 = 65_536;

/// The smallest reload count hwpmc accepts; smaller values are raised to it.
pub const MIN_RELOAD_COUNT: u64 = 1_000;

static NEXT_ID: AtomicU32 = AtomicU32::new(1);
/// The pmcinfo rows of this process's PMCs. The state is shared through an
/// atomic so that start/stop, the hot path, take no lock.
/// Each row also names its backend (the `Arc`'s address), so that the
/// detach rule looks only at PMCs on the same machine (the simulators of
/// concurrent tests are different machines).
static REGISTRY: Mutex<BTreeMap<u32, RegistryRow>> = Mutex::new(BTreeMap::new());

/// A pmcinfo row, the PMC's shared state, and its backend's address.
type RegistryRow = (PmcInfo, Arc<AtomicU8>, usize);

fn state_from_u8(v: u8) -> State {
    match v {
        0 => State::Disabled,
        1 => State::Free,
        2 => State::Allocated,
        3 => State::Stopped,
        4 => State::Running,
        _ => State::Deleted,
    }
}

fn state_to_u8(s: State) -> u8 {
    match s {
        State::Disabled => 0,
        State::Free => 1,
        State::Allocated => 2,
        State::Stopped => 3,
        State::Running => 4,
        State::Deleted => 5,
    }
}

/// Marks the running PMCs `ids` Stopped: their log was closed, and hwpmc
/// stops the PMCs that need the log when it is deconfigured (the log
/// module has already stopped their counters).
pub(crate) fn mark_stopped_by_log_close(ids: &[u32]) {
    if let Ok(r) = REGISTRY.lock() {
        for (_, state, _) in ids.iter().filter_map(|id| r.get(id)) {
            let running = state_to_u8(State::Running);
            let _ = state.compare_exchange(
                running,
                state_to_u8(State::Stopped),
                Ordering::Relaxed,
                Ordering::Relaxed,
            );
        }
    }
}

pub(crate) fn registry_snapshot() -> Vec<PmcInfo> {
    REGISTRY
        .lock()
        .map(|r| {
            r.values()
                .map(|(info, state, _)| PmcInfo {
                    state: state_from_u8(state.load(Ordering::Relaxed)),
                    ..info.clone()
                })
                .collect()
        })
        .unwrap_or_default()
}

/// One process the PMC is attached to.
#[derive(Debug)]
struct Target {
    pid: u32,
    counters: Box<dyn Counters>,
}

/// A performance-monitoring counter.
///
/// ```no_run
/// use pmc::{Cpu, Flags, Mode, Pmc};
///
/// let mut pmc = Pmc::allocate("task-clock,usr", Mode::TC, Flags::empty(), Cpu::Any)?;
/// pmc.start()?; // attaches to the calling process
/// let work: u64 = (0..1_000_000u64).sum();
/// pmc.stop()?;
/// println!("{work}: {} ns of CPU time", pmc.read()?);
/// # Ok::<(), pmc::Error>(())
/// ```
#[derive(Debug)]
pub struct Pmc {
    id: PmcId,
    spec: EventSpec,
    mode: Mode,
    flags: Flags,
    cpu: Cpu,
    backend: Arc<dyn Backend>,
    event: Box<dyn PreparedEvent>,
    state: State,
    /// Process targets (TC/TS).
    targets: Vec<Target>,
    /// The CPU counter (SC/SS).
    system: Option<Box<dyn Counters>>,
    /// hwpmc's `PMC_F_ATTACH_DONE`: the PMC was attached at least once, so
    /// a start with no targets left (all detached or exited) is ESRCH
    /// instead of attaching the owner (`pmc_start`, hwpmc_mod.c).
    attach_done: bool,
    /// A `get_msr` succeeded: later attaches are EPERM
    /// (`pmc_attach_process`, hwpmc_mod.c).
    msr_granted: bool,
    /// The system-mode initial value (`pm_sc.pm_initial`): written to the
    /// counter at `start`, refreshed from it at `stop`, set by `set`.
    initial: u64,
    /// The allocating process (cached: a getpid between enable and disable
    /// would be counted by getpid tracepoints and probes).
    owner: u32,
    /// One process target, no CPU counter, nothing detached (see
    /// `publish`): `read` asks the backend for the scaled value only.
    single_target: bool,
    /// A counting PMC with one process target that is one plain counter,
    /// nothing detached, no CPU counter and no log flags: `start`, `read`
    /// and `stop` call it directly (the bracket profilers put around code).
    hot: Option<HotCounter>,
    /// This PMC's state as the pmcinfo registry sees it.
    shared_state: Arc<AtomicU8>,
    /// Added to the hardware count so that `read` returns what `write`/`set`
    /// asked for (wrapping arithmetic: the value is modulo 2^64 like a
    /// 64-bit counter).
    offset: u64,
    /// Counts of targets that were detached.
    detached: CounterValue,
    /// The value at the last `stop`.
    saved: Reading,
    /// Reload count (sampling) or initial value (counting), as `set` gave it.
    reload_count: u64,
    /// An SS PMC's event count at its last start: the sampling period
    /// restarts there.
    sample_base: u64,
}

impl Pmc {
    /// Allocates a PMC (`pmc_allocate`) with no initial value / the default
    /// reload count.
    ///
    /// `spec` is an event specifier (see [`crate::spec`]); `cpu` must be
    /// [`Cpu::Any`] for the process modes (TC, TS) and a CPU for the system
    /// modes (SC, SS).
    pub fn allocate(spec: &str, mode: Mode, flags: Flags, cpu: Cpu) -> Result<Pmc> {
        let count = if mode.is_sampling() {
            DEFAULT_RELOAD_COUNT
        } else {
            0
        };
        Self::allocate_with_count(spec, mode, flags, cpu, count)
    }

    /// Allocates a PMC with FreeBSD 12's sixth argument: the reload count
    /// (sample period) of a sampling PMC (values below 1000 are raised to
    /// 1000, as hwpmc does), or the initial value of a counting PMC, which
    /// an SC PMC starts counting from and a TC PMC ignores, as hwpmc does
    /// (see [`Pmc::set`]).
    pub fn allocate_with_count(
        spec: &str,
        mode: Mode,
        flags: Flags,
        cpu: Cpu,
        count: u64,
    ) -> Result<Pmc> {
        Self::allocate_on(backend::default_backend(), spec, mode, flags, cpu, count)
    }

    /// Allocates on a specific backend (e.g. [`crate::backend::sim::SimBackend`]
    /// in tests).
    pub fn allocate_on(
        backend: Arc<dyn Backend>,
        spec_text: &str,
        mode: Mode,
        flags: Flags,
        cpu: Cpu,
        count: u64,
    ) -> Result<Pmc> {
        let spec = spec::parse(spec_text).map_err(|source| Error::InvalidSpec {
            spec: spec_text.to_string(),
            source,
        })?;
        validate_allocation(mode, flags, cpu, &*backend)?;
        let reload_count = if mode.is_sampling() {
            spec.qualifiers
                .period
                .unwrap_or(count)
                .max(MIN_RELOAD_COUNT)
        } else {
            count
        };
        let id = PmcId(NEXT_ID.fetch_add(1, Ordering::Relaxed));
        let event = backend.prepare(&EventRequest {
            spec: &spec,
            mode,
            flags,
            sample_period: reload_count,
            pmcid: id.0,
        })?;
        // hwpmc allocates the hardware at allocate, so an event this
        // machine cannot count fails here: system PMCs open their CPU now,
        // process PMCs try the event on the calling thread.
        let system = match cpu {
            Cpu::Id(n) => Some(event.open_cpu(n)?),
            Cpu::Any => {
                event.trial_open()?;
                None
            }
        };
        let owner = backend.caller_pid();
        let mut pmc = Pmc {
            id,
            spec,
            mode,
            flags,
            cpu,
            backend,
            event,
            state: State::Allocated,
            targets: Vec::new(),
            system,
            attach_done: false,
            msr_granted: false,
            initial: if mode.is_counting() { count } else { 0 },
            owner,
            hot: None,
            single_target: false,
            shared_state: Arc::new(AtomicU8::new(state_to_u8(State::Allocated))),
            // TC: the count is `pm_initial`, which hwpmc never uses for
            // process PMCs (their value is `pm_savedvalue`, 0 until a
            // write); SC: it is written to the counter at start.
            offset: 0,
            detached: CounterValue::ZERO,
            saved: Reading::default(),
            reload_count,
            sample_base: 0,
        };
        pmc.publish();
        if crate::log::sink::is_configured() {
            let _ = crate::log::sink::write(&crate::log::LogRecord::PmcAllocateDyn {
                pmcid: id.0,
                event: 0,
                flags: flags.bits(),
                name: pmc.spec.text.clone(),
            });
        }
        Ok(pmc)
    }

    /// Records a state change: the pmcinfo row, and whether `read` may take
    /// its lean path.
    fn publish(&mut self) {
        self.single_target =
            self.system.is_none() && self.targets.len() == 1 && self.detached == CounterValue::ZERO;
        let lone_counter = self.single_target
            && self.mode.is_counting()
            && !self
                .flags
                .intersects(Flags::LOG_PROCEXIT | Flags::LOG_PROCCSW);
        // Only a PMC on its owner: the owner cannot have exited while it
        // calls start, so the direct path needs no exit check.
        self.hot = match self.targets.first() {
            Some(t) if lone_counter && t.pid == self.owner => t.counters.hot(),
            _ => None,
        };
        self.shared_state
            .store(state_to_u8(self.state), Ordering::Relaxed);
        let info = self.info();
        if let Ok(mut r) = REGISTRY.lock() {
            r.insert(
                self.id.0,
                (info, self.shared_state.clone(), self.backend_key()),
            );
        }
    }

    /// Identifies the backend in the registry.
    fn backend_key(&self) -> usize {
        Arc::as_ptr(&self.backend).cast::<()>() as usize
    }

    /// A state change on the hot path (start/stop): no lock, no allocation.
    #[inline]
    fn set_state(&mut self, state: State) {
        self.state = state;
        self.shared_state
            .store(state_to_u8(state), Ordering::Relaxed);
    }

    /// A description of this PMC (`pmc_pmcinfo` row).
    pub fn info(&self) -> PmcInfo {
        PmcInfo {
            id: self.id,
            name: self.spec.text.clone(),
            class: self.event.class(),
            mode: self.mode,
            flags: self.flags,
            cpu: self.cpu,
            state: self.state,
            owner_pid: self.owner,
            reload_count: self.reload_count,
            targets: self.targets(),
        }
    }

    /// The PMC's id.
    pub fn id(&self) -> PmcId {
        self.id
    }

    /// The mode.
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// The flags.
    pub fn flags(&self) -> Flags {
        self.flags
    }

    /// The CPU argument.
    pub fn cpu(&self) -> Cpu {
        self.cpu
    }

    /// The state. A PMC that wrote into a log that was then closed reads
    /// Stopped, as hwpmc stops it (see [`crate::log::sink::close_logfile`]).
    pub fn state(&self) -> State {
        state_from_u8(self.shared_state.load(Ordering::Relaxed))
    }

    /// The parsed event specifier.
    pub fn spec(&self) -> &EventSpec {
        &self.spec
    }

    /// The event's class.
    pub fn class(&self) -> Class {
        self.event.class()
    }

    /// The resolved event, as the backend describes it.
    pub fn event_description(&self) -> String {
        self.event.describe()
    }

    /// The processes this PMC is attached to; those that exited have left
    /// the list (as hwpmc unlinks them at exit).
    pub fn targets(&self) -> Vec<u32> {
        self.targets
            .iter()
            .map(|t| t.pid)
            .filter(|&pid| self.backend.process_exists(pid))
            .collect()
    }

    /// The capabilities of the PMC's class as [`crate::machine::cpuinfo`]
    /// reports them (`pmc_capabilities` looks the class up in the cpuinfo
    /// classes, libpmc.c); the event's own when the class is not listed.
    pub fn capabilities(&self) -> Capabilities {
        let class = self.event.class();
        self.backend
            .classes()
            .ok()
            .and_then(|cs| cs.into_iter().find(|c| c.class == class))
            .map_or_else(|| self.event.capabilities(), |c| c.caps)
    }

    /// The width of the PMC's class as [`crate::machine::cpuinfo`] reports
    /// it (`pmc_width` looks the class up in the cpuinfo classes, libpmc.c).
    /// Values `read` returns are 64-bit whatever the hardware width: Linux
    /// extends counters, so they do not wrap at 2^width.
    pub fn width(&self) -> u32 {
        let class = self.event.class();
        self.backend
            .classes()
            .ok()
            .and_then(|cs| cs.into_iter().find(|c| c.class == class))
            .map_or_else(|| self.event.width(), |c| c.width)
    }

    /// The reload count (sampling) or initial value (counting).
    pub fn reload_count(&self) -> u64 {
        self.reload_count
    }

    fn resolve_pid(&self, pid: u32) -> u32 {
        if pid == 0 { self.owner } else { pid }
    }

    /// Attaches a process PMC to a process (`pmc_attach`); pid 0 is the
    /// caller. Every existing thread is covered, and new threads as they are
    /// created; with [`Flags::DESCENDANTS`], existing and future child
    /// processes too.
    pub fn attach(&mut self, pid: u32) -> Result<()> {
        if self.mode.is_system() {
            return Err(Error::invalid(
                "attach",
                format!(
                    "{} is a system-mode PMC; only process PMCs (TC, TS) attach",
                    self.mode
                ),
            ));
        }
        if self.state == State::Running {
            return Err(Error::Busy {
                op: "attach",
                why: "the PMC is running; stop it before attaching".into(),
            });
        }
        let pid = self.resolve_pid(pid);
        self.prune_exited()?;
        if !self.backend.process_exists(pid) {
            return Err(Error::NoSuchProcess { op: "attach", pid });
        }
        if self.msr_granted {
            return Err(Error::PermissionDenied {
                op: format!("attach PMC {} to process {pid}", self.id),
                os_errno: libc::EPERM,
                hint: Some(
                    "get_msr gave this PMC's counter to the calling process for rdpmc; \
                     hwpmc then refuses further attaches: allocate another PMC"
                        .into(),
                ),
            });
        }
        self.check_overlap(pid)?;
        let counters = self
            .event
            .open_process(pid, self.flags.contains(Flags::DESCENDANTS))?;
        self.targets.push(Target { pid, counters });
        if crate::log::sink::is_configured() {
            let path = self.backend.executable_path(pid).unwrap_or_default();
            let _ = crate::log::sink::write(&crate::log::LogRecord::PmcAttach {
                pmcid: self.id.0,
                pid,
                path,
            });
        }
        self.attach_done = true;
        self.publish();
        Ok(())
    }

    /// EEXIST when `pid` is already monitored by this PMC: a target, or
    /// with DESCENDANTS inside a target's tree or the root of a tree that
    /// holds a target (`pmc_attach_one_process` meets the process already
    /// at its row). Nothing is opened before this check, so a refused
    /// attach leaves the PMC as it was.
    fn check_overlap(&self, pid: u32) -> Result<()> {
        if self.targets.iter().any(|t| t.pid == pid) {
            return Err(Error::AlreadyAttached { pid });
        }
        if !self.flags.contains(Flags::DESCENDANTS) {
            return Ok(());
        }
        let new_tree = self.backend.descendants(pid);
        for t in &self.targets {
            if new_tree.contains(&t.pid) {
                return Err(Error::AlreadyAttached { pid: t.pid });
            }
            if self.backend.descendants(t.pid).contains(&pid) {
                return Err(Error::AlreadyAttached { pid });
            }
        }
        Ok(())
    }

    /// Targets that exited leave the list (hwpmc unlinks them at exit,
    /// `pmc_process_exit`); what they counted stays in the value.
    fn prune_exited(&mut self) -> Result<()> {
        let before = self.targets.len();
        let mut i = 0;
        while i < self.targets.len() {
            if self.backend.process_exists(self.targets[i].pid) {
                i += 1;
                continue;
            }
            let mut gone = self.targets.remove(i);
            let value = gone.counters.read()?;
            self.detached.accumulate(value);
        }
        if self.targets.len() != before {
            self.publish();
        }
        Ok(())
    }

    /// Detaches a process (`pmc_detach`). The counts it accumulated stay in
    /// the PMC's value. A live process that no PMC of this process monitors
    /// is ESRCH, one that another of its PMCs monitors EINVAL
    /// (`pmc_detach_one_process`). Detaching the last target of a
    /// DESCENDANTS PMC lets the next `start` attach the owner again, as
    /// `pmc_detach_process` clears `PMC_F_ATTACH_DONE` only then.
    pub fn detach(&mut self, pid: u32) -> Result<()> {
        // hwpmc_mod.c pmc_do_op_pmcdetach has no mode check: a system PMC
        // has no targets, so the rules below make it ESRCH or EINVAL.
        let pid = self.resolve_pid(pid);
        self.prune_exited()?;
        let Some(i) = self.targets.iter().position(|t| t.pid == pid) else {
            // pmc_do_op_pmcdetach: a process that does not exist (or is
            // exiting) is ESRCH; pmc_detach_one_process: one no PMC
            // monitors is ESRCH, one another PMC monitors is EINVAL.
            if !self.backend.process_exists(pid) {
                return Err(Error::NoSuchProcess { op: "detach", pid });
            }
            let backend = self.backend_key();
            let other = REGISTRY.lock().ok().and_then(|r| {
                r.values()
                    .find(|(p, _, b)| *b == backend && p.id != self.id && p.targets.contains(&pid))
                    .map(|(p, _, _)| p.id)
            });
            return Err(match other {
                Some(other) => Error::invalid(
                    "detach",
                    format!(
                        "process {pid} is monitored by PMC {other} of this process, not by PMC {}",
                        self.id
                    ),
                ),
                None => Error::NotMonitored { pid },
            });
        };
        let mut target = self.targets.remove(i);
        if self.state == State::Running {
            target.counters.disable()?;
        }
        let value = target.counters.read()?;
        self.detached.accumulate(value);
        if crate::log::sink::is_configured() {
            let _ = crate::log::sink::write(&crate::log::LogRecord::PmcDetach {
                pmcid: self.id.0,
                pid,
            });
        }
        // hwpmc_mod.c pmc_detach_process: detaching the last tree of a
        // DESCENDANTS PMC clears PMC_F_ATTACH_DONE, so its next start
        // attaches the owner again (a plain PMC's start is ESRCH then).
        // FreeBSD's asymmetry, kept.
        if self.flags.contains(Flags::DESCENDANTS) && self.targets.is_empty() {
            self.attach_done = false;
        }
        self.publish();
        Ok(())
    }

    /// Starts the PMC (`pmc_start`). A process PMC that was never attached
    /// is attached to the caller first; one whose targets were all detached
    /// or exited is ESRCH ([`Error::NoTargets`]), except after the last
    /// target of a DESCENDANTS PMC was detached (see [`Pmc::detach`]).
    /// Starting a running PMC succeeds.
    #[inline]
    pub fn start(&mut self) -> Result<()> {
        if let Some(hot) = &self.hot
            && self.state != State::Running
            && hot.enable()
        {
            self.set_state(State::Running);
            return Ok(());
        }
        self.start_general()
    }

    #[inline(never)]
    fn start_general(&mut self) -> Result<()> {
        if self.state == State::Running {
            if self.state() == State::Running {
                return Ok(());
            }
            // Its log was closed under it: finish that stop, then start.
            self.stop_general()?;
        }
        // pmc_start (hwpmc_mod.c): with no targets, a PMC never attached
        // attaches its owner; one whose targets were all detached or
        // exited is ESRCH.
        if self.mode.is_process() {
            self.prune_exited()?;
            if self.targets.is_empty() {
                if self.attach_done {
                    return Err(Error::NoTargets { id: self.id });
                }
                self.attach(0)?;
            }
        }
        self.require_log_if_needed()?;
        let sampling = self.mode.is_sampling();
        // pmc_start writes the system PMC's counter: SC with `pm_initial`
        // (so counting resumes from the value at stop, or from `set`), SS
        // with the reload count (a fresh sampling period).
        if let Some(s) = &mut self.system {
            let now = s.read()?;
            match self.mode {
                Mode::SC => {
                    self.offset = self.initial.wrapping_sub(now.scaled.unwrap_or(now.raw));
                }
                _ => self.sample_base = now.raw,
            }
        }
        for t in &mut self.targets {
            if sampling {
                t.counters.set_period(self.reload_count)?;
            }
            t.counters.enable()?;
        }
        if let Some(s) = &mut self.system {
            if sampling {
                s.set_period(self.reload_count)?;
            }
            s.enable()?;
        }
        self.set_state(State::Running);
        Ok(())
    }

    /// Stops the PMC (`pmc_stop`) and saves its value. Stopping a stopped
    /// PMC succeeds; stopping one that never started is EINVAL.
    #[inline]
    pub fn stop(&mut self) -> Result<()> {
        if let Some(hot) = &self.hot
            && self.state == State::Running
            && let Some(value) = hot.disable_and_read_scaled()
        {
            self.set_state(State::Stopped);
            self.saved.value = value.wrapping_add(self.offset);
            return Ok(());
        }
        self.stop_general()
    }

    #[inline(never)]
    fn stop_general(&mut self) -> Result<()> {
        match self.state {
            State::Running => {}
            State::Stopped => return Ok(()),
            _ => {
                return Err(Error::invalid("stop", "the PMC was never started"));
            }
        }
        let lean = self.single_target;
        for t in &mut self.targets {
            t.counters.disable()?;
        }
        if let Some(s) = &mut self.system {
            s.disable()?;
        }
        self.set_state(State::Stopped);
        match self.mode {
            // hwpmc keeps no value for a stopped TS PMC: `read` returns
            // `pm_savedvalue`, which only `write` sets.
            Mode::TS => return Ok(()),
            // The SS counter holds the events left in its period.
            Mode::SS => {
                let raw = self.sum_counters()?.raw;
                self.saved.value = self.events_to_next_sample(raw);
                return Ok(());
            }
            _ => {}
        }
        // The counters are disabled now, so this value stays what they
        // hold; `read_detailed` reads them again for raw and times.
        self.saved.value = match (lean, self.targets.first_mut()) {
            (true, Some(t)) => match t.counters.read_scaled()? {
                Some(v) => v.wrapping_add(self.offset),
                None => self.read_live()?.value,
            },
            _ => self.read_live()?.value,
        };
        // pmc_stop reads the SC counter back into `pm_initial`.
        if self.mode == Mode::SC {
            self.initial = self.saved.value;
        }
        Ok(())
    }

    /// What hwpmc's `pcd_read_pmc` returns for a sampling PMC: the events
    /// left before the next sample (the counter counts up from
    /// 2^width − reload count to the overflow).
    fn events_to_next_sample(&self, raw: u64) -> u64 {
        let period = self.reload_count.max(1);
        period - raw.wrapping_sub(self.sample_base) % period
    }

    /// The sum of every counter, detached targets included.
    fn sum_counters(&mut self) -> Result<CounterValue> {
        let mut sum = self.detached;
        for t in &mut self.targets {
            sum.accumulate(t.counters.read()?);
        }
        if let Some(s) = &mut self.system {
            sum.accumulate(s.read()?);
        }
        Ok(sum)
    }

    /// `pmc_read` of a sampling PMC (the `PMC_OP_PMCRW` case of
    /// hwpmc_mod.c): the hardware, i.e. the events left before the next
    /// sample, for a running SS PMC and a running TS PMC attached to its
    /// owner; otherwise the saved value, which only `write` sets.
    fn read_sampling(&mut self) -> Result<u64> {
        let hardware = self.state == State::Running
            && (self.mode == Mode::SS || self.targets.iter().any(|t| t.pid == self.owner));
        if !hardware {
            return Ok(self.saved.value);
        }
        let raw = self.sum_counters()?.raw;
        Ok(self.events_to_next_sample(raw))
    }

    #[inline]
    fn read_live(&mut self) -> Result<Reading> {
        let sum = self.sum_counters()?;
        let Some(scaled) = sum.scaled else {
            return Err(Error::NotCounted {
                what: format!("PMC {} ({})", self.id, self.spec.text),
                time_enabled: sum.time_enabled,
            });
        };
        Ok(Reading {
            value: scaled.wrapping_add(self.offset),
            raw: sum.raw,
            time_enabled: sum.time_enabled,
            time_running: sum.time_running,
            multiplexed: sum.time_running < sum.time_enabled,
        })
    }

    /// Reads the value (`pmc_read`, `PMC_OP_PMCRW` of hwpmc_mod.c). Per mode:
    ///
    /// - **TC**: the count (plus what [`Pmc::write`] set), live while
    ///   running, the value at `stop` otherwise. hwpmc reads the hardware
    ///   only for a PMC attached to its owner and otherwise returns the
    ///   value as of the targets' last context switch; `pmc` always reads
    ///   the current count, which is never older.
    /// - **SC**: the count on the CPU, starting from the initial value
    ///   (allocate's count or [`Pmc::set`]) at each start.
    /// - **TS** (*FreeBSD's surprising rule, kept*): not a count. While
    ///   running and attached to its owner, the events left before the
    ///   next sample (between 1 and the reload count); otherwise the value
    ///   [`Pmc::write`] last stored (0 at first).
    /// - **SS**: the events left before the next sample, also after `stop`.
    ///
    /// Multiplexed counts are scaled to the enabled time; a counting PMC
    /// that was enabled but never scheduled is an error
    /// ([`Error::NotCounted`]), never a silent 0.
    #[inline]
    pub fn read(&mut self) -> Result<u64> {
        // The call profilers make in loops: a running PMC that is one plain
        // counter reads it directly; anything else (or a failed read, to
        // report it in full) takes the general path.
        if let Some(hot) = &self.hot
            && self.state == State::Running
            && let Some(value) = hot.read_scaled()
        {
            return Ok(value.wrapping_add(self.offset));
        }
        self.read_general()
    }

    #[inline(never)]
    fn read_general(&mut self) -> Result<u64> {
        if self.mode.is_sampling() {
            return self.read_sampling();
        }
        // One running process target and nothing detached: the backend's
        // scaled-only read.
        if self.state == State::Running
            && self.single_target
            && let Some(target) = self.targets.first_mut()
        {
            return match target.counters.read_scaled()? {
                Some(v) => Ok(v.wrapping_add(self.offset)),
                None => self.read_live().map(|r| r.value),
            };
        }
        if self.state != State::Running {
            return Ok(self.saved.value);
        }
        Ok(self.read_live()?.value)
    }

    /// Like [`Pmc::read`], with the raw count and the enabled/running times.
    pub fn read_detailed(&mut self) -> Result<Reading> {
        match self.state {
            // Stopped counters are disabled: reading them gives the counts
            // they held at stop, with the raw count and times; `value` is
            // what `read` returns.
            State::Running | State::Stopped => {
                let mut r = match self.read_live() {
                    Err(Error::NotCounted { .. }) if self.mode.is_sampling() => Reading {
                        multiplexed: true,
                        ..self.saved
                    },
                    other => other?,
                };
                if self.mode.is_sampling() || self.state == State::Stopped {
                    r.value = self.read()?;
                }
                Ok(r)
            }
            _ => Ok(self.saved),
        }
    }

    /// hwpmc's rule: a system sampling PMC, a process sampling PMC
    /// attached to another process, and the `LOG_PROC*` flags need a log.
    fn require_log_if_needed(&self) -> Result<()> {
        let why = if self.mode == Mode::SS {
            Some("a system sampling PMC writes its samples to the log".to_string())
        } else if self.mode == Mode::TS && self.targets.iter().any(|t| t.pid != self.owner) {
            Some("a process sampling PMC attached to another process logs its samples".into())
        } else if self
            .flags
            .intersects(Flags::LOG_PROCEXIT | Flags::LOG_PROCCSW)
        {
            Some(format!("{:?} writes process events to the log", self.flags))
        } else {
            None
        };
        // Only PMCs that need a log look for one (a lock).
        match why {
            Some(why) if !crate::log::sink::is_configured() => {
                Err(Error::LogRequired { op: "start", why })
            }
            _ => Ok(()),
        }
    }

    fn require_stopped(&self, op: &'static str) -> Result<()> {
        if self.state == State::Running {
            return Err(Error::Busy {
                op,
                why: "the PMC is running; stop it first".into(),
            });
        }
        Ok(())
    }

    /// Sets the value `read` returns (`pmc_write`, `PMC_OP_PMCRW` with a new
    /// value); the PMC must be stopped (EBUSY while running). Per mode, as
    /// hwpmc_mod.c does it:
    ///
    /// - **TC**: the PMC's value (`pm_savedvalue`); counting continues
    ///   from it at the next start.
    /// - **SC**: the counter itself, so `read` returns it while stopped;
    ///   but the next `start` writes the initial value (the value at the
    ///   last stop, or what [`Pmc::set`] gave) over it. *FreeBSD's
    ///   behaviour, kept: to resume an SC PMC from a value, use `set`.*
    /// - **TS**: the saved value that `read` returns whenever it does not
    ///   read the hardware. It is **not** the reload count (use
    ///   [`Pmc::set`] for that) and counts nothing.
    /// - **SS**: the counter (`read` returns it until the next start,
    ///   which reloads the sampling period).
    pub fn write(&mut self, value: u64) -> Result<()> {
        self.require_stopped("write")?;
        if self.mode == Mode::TC {
            let hardware = self.saved.value.wrapping_sub(self.offset);
            self.offset = value.wrapping_sub(hardware);
        }
        self.saved.value = value;
        self.publish();
        Ok(())
    }

    /// Reads the value and writes a new one in one step (`pmc_rw`); returns
    /// the previous value. The PMC must be stopped. See [`Pmc::read`] and
    /// [`Pmc::write`] for what the values mean in each mode.
    pub fn rw(&mut self, value: u64) -> Result<u64> {
        self.require_stopped("rw")?;
        let old = self.read()?;
        self.write(value)?;
        Ok(old)
    }

    /// `pmc_set` (`PMC_OP_PMCSETCOUNT`); the PMC must be stopped. Per mode:
    ///
    /// - **TS, SS**: the reload count (sample period); values below 1000
    ///   are raised to 1000 (hwpmc's `pmc_mincount`).
    /// - **SC**: the initial value, written to the counter at the next
    ///   start, so counting resumes from it.
    /// - **TC**: the initial value `pm_initial`, which hwpmc never uses for
    ///   a process PMC: **`read` does not change** (it returns
    ///   `pm_savedvalue`; use [`Pmc::write`]). *FreeBSD's behaviour, kept.*
    ///   [`Pmc::reload_count`] and `pmcinfo` show the value set.
    pub fn set(&mut self, value: u64) -> Result<()> {
        self.require_stopped("set")?;
        match self.mode {
            Mode::TS | Mode::SS => return self.set_reload(value),
            Mode::SC => self.initial = value,
            Mode::TC => {}
        }
        self.reload_count = value;
        self.publish();
        Ok(())
    }

    fn set_reload(&mut self, value: u64) -> Result<()> {
        self.reload_count = value.max(MIN_RELOAD_COUNT);
        self.publish();
        Ok(())
    }

    /// The index for reading this counter with `rdpmc` from user space
    /// (`pmc_get_msr`), as the `PMC_OP_PMCGETMSR` case of hwpmc_mod.c
    /// decides: a system PMC, a DESCENDANTS PMC, or one not attached to
    /// exactly its owner is EINVAL; a counter the kernel does not expose to
    /// user space is ENOSYS (hwpmc's answer for a class without
    /// `pcd_get_msr`), with the reason. After a success, further attaches
    /// are EPERM.
    ///
    /// On Linux the index is the one perf publishes in the counter's
    /// metadata page for the calling thread, and only while the PMC runs:
    /// perf may move the event to another hardware counter when it is
    /// rescheduled, so read through the page's sequence lock
    /// (`pmc_linux::selfmon`) where that matters.
    pub fn get_msr(&mut self) -> Result<u32> {
        if self.mode.is_system() || self.flags.contains(Flags::DESCENDANTS) {
            return Err(Error::invalid(
                "get_msr",
                format!(
                    "rdpmc access needs a process PMC without DESCENDANTS, not {} {:?}",
                    self.mode, self.flags
                ),
            ));
        }
        self.prune_exited()?;
        if self.targets.len() != 1 || self.targets[0].pid != self.owner {
            return Err(Error::invalid(
                "get_msr",
                format!(
                    "rdpmc access needs the PMC attached to its owner ({}) and nothing else; \
                     it is attached to {:?}",
                    self.owner,
                    self.targets()
                ),
            ));
        }
        let index = self.targets[0].counters.rdpmc_index()?.ok_or_else(|| Error::Os {
            op: "get_msr".into(),
            os_errno: libc::ENOSYS,
            hint: Some(format!(
                "the {} backend has no user-space read for this counter; read it with Pmc::read",
                self.backend.name()
            )),
        })?;
        self.msr_granted = true;
        self.publish();
        Ok(index)
    }

    /// The number of kernel handles (file descriptors) the PMC holds.
    pub fn handles(&self) -> usize {
        self.targets
            .iter()
            .map(|t| t.counters.handles())
            .sum::<usize>()
            + self.system.as_ref().map_or(0, |s| s.handles())
    }

    /// Releases the PMC (`pmc_release`); dropping it does the same.
    pub fn release(self) -> Result<()> {
        drop(self);
        Ok(())
    }
}

impl Drop for Pmc {
    fn drop(&mut self) {
        if let Ok(mut r) = REGISTRY.lock() {
            r.remove(&self.id.0);
        }
    }
}

/// The allocation rules of `pmc_do_op_pmcallocate` (hwpmc_mod.c), in its
/// order: a CPU beyond `pmc_cpu_max()` is EINVAL, the mode/CPU pairing is
/// EINVAL, an offline CPU of a system PMC is ENXIO, then the flags. What
/// hwpmc accepts passes: CALLCHAIN on a counting mode (it only affects
/// samples) and DESCENDANTS on a system mode (no targets to follow).
fn validate_allocation(mode: Mode, flags: Flags, cpu: Cpu, backend: &dyn Backend) -> Result<()> {
    if let Cpu::Id(n) = cpu {
        let possible = backend.possible_cpus();
        let cpu_max = possible.iter().max().map_or(0, |m| m + 1);
        if n >= cpu_max {
            return Err(Error::invalid(
                "allocate",
                format!("cpu {n} does not exist: this machine has CPUs 0..{cpu_max}"),
            ));
        }
    }
    match (mode.is_process(), cpu) {
        (true, Cpu::Id(n)) => {
            return Err(Error::invalid(
                "allocate",
                format!(
                    "process-mode PMCs ({mode}) follow their targets on every CPU: pass \
                     Cpu::Any (PMC_CPU_ANY), not cpu {n}"
                ),
            ));
        }
        (false, Cpu::Any) => {
            return Err(Error::invalid(
                "allocate",
                format!(
                    "system-mode PMCs ({mode}) count on one CPU: pass Cpu::Id(n), or use \
                     PerCpu::allocate for every CPU"
                ),
            ));
        }
        (false, Cpu::Id(n)) if !backend.online_cpus().contains(&n) => {
            return Err(Error::Unavailable {
                what: format!("cpu {n}"),
                why: format!(
                    "it exists but is offline (online: {:?}); {} or choose another",
                    backend.online_cpus(),
                    backend.how_to_online(n)
                ),
            });
        }
        _ => {}
    }
    let unknown = flags.bits() & !Flags::all().bits();
    if unknown != 0 {
        return Err(Error::invalid(
            "allocate",
            format!("unknown flag bits {unknown:#x}"),
        ));
    }
    if flags.contains(Flags::USERCALLCHAIN) && !flags.contains(Flags::CALLCHAIN) {
        return Err(Error::invalid(
            "allocate",
            "USERCALLCHAIN requires CALLCHAIN",
        ));
    }
    if flags.contains(Flags::USERCALLCHAIN) && !mode.is_sampling() {
        return Err(Error::invalid(
            "allocate",
            format!("USERCALLCHAIN needs a sampling mode (SS, TS), not {mode}"),
        ));
    }
    if flags.intersects(Flags::LOG_PROCCSW | Flags::LOG_PROCEXIT) && mode.is_system() {
        return Err(Error::invalid(
            "allocate",
            format!("LOG_PROCCSW and LOG_PROCEXIT apply to process modes only, not {mode}"),
        ));
    }
    Ok(())
}

/// A system PMC on every online CPU, as `pmcstat -s` clones them; reads sum
/// the CPUs.
#[derive(Debug)]
pub struct PerCpu {
    pmcs: Vec<(u32, Pmc)>,
}

impl PerCpu {
    /// Allocates `spec` in a system mode on every online CPU.
    pub fn allocate(spec: &str, mode: Mode, flags: Flags) -> Result<PerCpu> {
        Self::allocate_on_cpus(spec, mode, flags, &crate::machine::online_cpus())
    }

    /// Allocates `spec` in a system mode on the given CPUs.
    pub fn allocate_on_cpus(spec: &str, mode: Mode, flags: Flags, cpus: &[u32]) -> Result<PerCpu> {
        if !mode.is_system() {
            return Err(Error::invalid(
                "allocate",
                format!("PerCpu needs a system mode (SC, SS), not {mode}"),
            ));
        }
        let pmcs = cpus
            .iter()
            .map(|&c| Ok((c, Pmc::allocate(spec, mode, flags, Cpu::Id(c))?)))
            .collect::<Result<Vec<_>>>()?;
        Ok(PerCpu { pmcs })
    }

    /// Starts every CPU's PMC.
    pub fn start(&mut self) -> Result<()> {
        self.pmcs.iter_mut().try_for_each(|(_, p)| p.start())
    }

    /// Stops every CPU's PMC.
    pub fn stop(&mut self) -> Result<()> {
        self.pmcs.iter_mut().try_for_each(|(_, p)| p.stop())
    }

    /// The sum over CPUs.
    pub fn read(&mut self) -> Result<u64> {
        self.pmcs
            .iter_mut()
            .try_fold(0u64, |acc, (_, p)| Ok(acc.wrapping_add(p.read()?)))
    }

    /// The sum over CPUs with raw counts and times (times summed too, so
    /// the running fraction is the CPUs' average).
    pub fn read_detailed(&mut self) -> Result<Reading> {
        let mut sum = Reading {
            value: 0,
            raw: 0,
            time_enabled: 0,
            time_running: 0,
            multiplexed: false,
        };
        for (_, p) in &mut self.pmcs {
            let r = p.read_detailed()?;
            sum.value = sum.value.wrapping_add(r.value);
            sum.raw = sum.raw.wrapping_add(r.raw);
            sum.time_enabled = sum.time_enabled.saturating_add(r.time_enabled);
            sum.time_running = sum.time_running.saturating_add(r.time_running);
            sum.multiplexed |= r.multiplexed;
        }
        Ok(sum)
    }

    /// Each CPU's value.
    pub fn read_each(&mut self) -> Result<Vec<(u32, u64)>> {
        self.pmcs
            .iter_mut()
            .map(|(c, p)| Ok((*c, p.read()?)))
            .collect()
    }

    /// The per-CPU PMCs.
    pub fn pmcs(&mut self) -> impl Iterator<Item = (u32, &mut Pmc)> {
        self.pmcs.iter_mut().map(|(c, p)| (*c, p))
    }
}

#[cfg(test)]
mod tests;
