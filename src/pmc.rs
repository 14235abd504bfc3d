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
//! - **start** attaches a never-attached process PMC to the caller; starting
//!   a running PMC and stopping a stopped one succeed.
//! - **read** returns the live value while running and the value saved at
//!   `stop` otherwise; **write**/**set** need a stopped PMC and set the value
//!   `read` returns (kept as an offset over the hardware count).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU8, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use crate::backend::{
    self, Backend, CounterValue, Counters, EventRequest, HotCounter, PreparedEvent,
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
static REGISTRY: Mutex<BTreeMap<u32, (PmcInfo, Arc<AtomicU8>)>> = Mutex::new(BTreeMap::new());

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
        for (_, state) in ids.iter().filter_map(|id| r.get(id)) {
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
                .map(|(info, state)| PmcInfo {
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
    /// Whether a process PMC was ever attached (start then attaches nobody).
    /// Whether the owner (the caller) was ever a target: hwpmc's
    /// `PMC_F_ATTACHED_TO_OWNER`, which makes a later start with no targets
    /// ESRCH instead of re-attaching the owner.
    attached_to_owner: bool,
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

    /// Allocates a PMC with FreeBSD 12's sixth argument: the initial value
    /// of a counting PMC, or the reload count (sample period) of a sampling
    /// PMC (values below 1000 are raised to 1000, as hwpmc does).
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
        validate_allocation(mode, flags, cpu)?;
        let reload_count = if mode.is_sampling() {
            spec.qualifiers
                .period
                .unwrap_or(count)
                .max(MIN_RELOAD_COUNT)
        } else {
            count
        };
        if let Cpu::Id(n) = cpu
            && !backend.online_cpus().contains(&n)
        {
            return Err(Error::Unavailable {
                what: format!("cpu {n}"),
                why: format!("it is not online (online: {:?})", backend.online_cpus()),
            });
        }
        let id = PmcId(NEXT_ID.fetch_add(1, Ordering::Relaxed));
        let event = backend.prepare(&EventRequest {
            spec: &spec,
            mode,
            flags,
            sample_period: reload_count,
            pmcid: id.0,
        })?;
        let system = match cpu {
            Cpu::Id(n) => Some(event.open_cpu(n)?),
            Cpu::Any => None,
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
            attached_to_owner: false,
            owner,
            hot: None,
            single_target: false,
            shared_state: Arc::new(AtomicU8::new(state_to_u8(State::Allocated))),
            offset: if mode.is_counting() { count } else { 0 },
            detached: CounterValue::ZERO,
            saved: Reading {
                value: if mode.is_counting() { count } else { 0 },
                ..Reading::default()
            },
            reload_count,
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
        self.hot = match self.targets.first() {
            Some(t) if lone_counter => t.counters.hot(),
            _ => None,
        };
        self.shared_state
            .store(state_to_u8(self.state), Ordering::Relaxed);
        let info = self.info();
        if let Ok(mut r) = REGISTRY.lock() {
            r.insert(self.id.0, (info, self.shared_state.clone()));
        }
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
            targets: self.targets.iter().map(|t| t.pid).collect(),
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

    /// The processes this PMC is attached to.
    pub fn targets(&self) -> Vec<u32> {
        self.targets.iter().map(|t| t.pid).collect()
    }

    /// The capabilities of the PMC's class (`pmc_capabilities`).
    pub fn capabilities(&self) -> Capabilities {
        self.event.capabilities()
    }

    /// The width in bits of the values `read` returns (`pmc_width`). Linux
    /// extends hardware counters to 64 bits, so values never wrap earlier.
    pub fn width(&self) -> u32 {
        self.event.width()
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
        if self.targets.iter().any(|t| t.pid == pid) {
            return Err(Error::AlreadyAttached { pid });
        }
        if !self.backend.process_exists(pid) {
            return Err(Error::NoSuchProcess { op: "attach", pid });
        }
        let counters = self
            .event
            .open_process(pid, self.flags.contains(Flags::DESCENDANTS))?;
        self.targets.push(Target { pid, counters });
        if crate::log::sink::is_configured() {
            let path = std::fs::read_link(format!("/proc/{pid}/exe"))
                .map(|p| p.display().to_string())
                .unwrap_or_default();
            let _ = crate::log::sink::write(&crate::log::LogRecord::PmcAttach {
                pmcid: self.id.0,
                pid,
                path,
            });
        }
        if pid == self.owner {
            self.attached_to_owner = true;
        }
        self.publish();
        Ok(())
    }

    /// Detaches a process (`pmc_detach`). The counts it accumulated stay in
    /// the PMC's value.
    pub fn detach(&mut self, pid: u32) -> Result<()> {
        if self.mode.is_system() {
            return Err(Error::invalid(
                "detach",
                format!(
                    "{} is a system-mode PMC; it has no attached processes",
                    self.mode
                ),
            ));
        }
        let pid = self.resolve_pid(pid);
        let Some(i) = self.targets.iter().position(|t| t.pid == pid) else {
            if !self.backend.process_exists(pid) {
                return Err(Error::NoSuchProcess { op: "detach", pid });
            }
            return Err(Error::invalid(
                "detach",
                format!("the PMC is not attached to process {pid}"),
            ));
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
        self.publish();
        Ok(())
    }

    /// Starts the PMC (`pmc_start`). A process PMC that was never attached
    /// is attached to the caller first. Starting a running PMC succeeds.
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
        // As hwpmc: with no targets, start attaches the owner, unless the
        // owner was attached before (it exited or was detached): ESRCH.
        if self.mode.is_process() && self.targets.is_empty() && !self.attached_to_owner {
            self.attach(0)?;
        }
        if self.mode.is_process() && self.targets.is_empty() {
            return Err(Error::NoSuchProcess {
                op: "start",
                pid: 0,
            });
        }
        self.require_log_if_needed()?;
        let sampling = self.mode.is_sampling();
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
        // The counters are disabled now, so this value stays what they
        // hold; `read_detailed` reads them again for raw and times.
        self.saved.value = match (lean, self.targets.first_mut()) {
            (true, Some(t)) => match t.counters.read_scaled()? {
                Some(v) => v.wrapping_add(self.offset),
                None => self.read_live()?.value,
            },
            _ => self.read_live()?.value,
        };
        Ok(())
    }

    #[inline]
    fn read_live(&mut self) -> Result<Reading> {
        let mut sum = self.detached;
        for t in &mut self.targets {
            sum.accumulate(t.counters.read()?);
        }
        if let Some(s) = &mut self.system {
            sum.accumulate(s.read()?);
        }
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

    /// Reads the value (`pmc_read`): live while running, the value saved at
    /// `stop` otherwise. Multiplexed counts are scaled to the enabled time;
    /// a counter that was enabled but never scheduled is an error
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
            // Stopped counters are disabled: reading them gives the values
            // they held at stop, with the raw count and times.
            State::Running | State::Stopped => self.read_live(),
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

    /// Sets the value `read` returns (`pmc_write`); the PMC must be stopped.
    /// Counting continues from this value at the next `start`.
    pub fn write(&mut self, value: u64) -> Result<()> {
        self.require_stopped("write")?;
        if self.mode.is_sampling() {
            return self.set_reload(value);
        }
        let hardware = self.saved.value.wrapping_sub(self.offset);
        self.offset = value.wrapping_sub(hardware);
        self.saved.value = value;
        self.publish();
        Ok(())
    }

    /// Reads the value and writes a new one in one step (`pmc_rw`); returns
    /// the previous value. The PMC must be stopped.
    pub fn rw(&mut self, value: u64) -> Result<u64> {
        self.require_stopped("rw")?;
        let old = self.read()?;
        self.write(value)?;
        Ok(old)
    }

    /// Sets the initial value of a counting PMC or the reload count (sample
    /// period) of a sampling PMC (`pmc_set`); the PMC must be stopped.
    pub fn set(&mut self, value: u64) -> Result<()> {
        self.require_stopped("set")?;
        if self.mode.is_sampling() {
            return self.set_reload(value);
        }
        self.reload_count = value;
        self.write(value)
    }

    fn set_reload(&mut self, value: u64) -> Result<()> {
        self.reload_count = value.max(MIN_RELOAD_COUNT);
        self.publish();
        Ok(())
    }

    /// The index for reading this counter with `rdpmc` from user space
    /// (`pmc_get_msr`). Only PMCs attached solely to the calling process,
    /// without DESCENDANTS, whose counter the kernel exposes to user space
    /// have one.
    pub fn get_msr(&self) -> Result<u32> {
        let caller = self.owner;
        if self.mode.is_system()
            || self.flags.contains(Flags::DESCENDANTS)
            || self.targets.len() != 1
            || self.targets[0].pid != caller
        {
            return Err(Error::invalid(
                "get_msr",
                "rdpmc access needs a process PMC attached only to the calling process, \
                 without DESCENDANTS",
            ));
        }
        self.targets[0]
            .counters
            .rdpmc_index()
            .ok_or_else(|| Error::NotSupported {
                what: "rdpmc for this PMC".into(),
                why: "the kernel does not expose this counter to user space (software \
                      events, no hardware PMU, or rdpmc disabled in \
                      /sys/bus/event_source/devices/cpu/rdpmc)"
                    .into(),
            })
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

/// The allocation rules of pmc_allocate(3).
fn validate_allocation(mode: Mode, flags: Flags, cpu: Cpu) -> Result<()> {
    let unknown = flags.bits() & !Flags::all().bits();
    if unknown != 0 {
        return Err(Error::invalid(
            "allocate",
            format!("unknown flag bits {unknown:#x}"),
        ));
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
        _ => {}
    }
    if flags.contains(Flags::USERCALLCHAIN) && !flags.contains(Flags::CALLCHAIN) {
        return Err(Error::invalid(
            "allocate",
            "USERCALLCHAIN requires CALLCHAIN",
        ));
    }
    if flags.intersects(Flags::CALLCHAIN | Flags::USERCALLCHAIN) && !mode.is_sampling() {
        return Err(Error::invalid(
            "allocate",
            format!("CALLCHAIN and USERCALLCHAIN need a sampling mode (SS, TS), not {mode}"),
        ));
    }
    if flags.intersects(Flags::LOG_PROCCSW | Flags::LOG_PROCEXIT) && mode.is_system() {
        return Err(Error::invalid(
            "allocate",
            format!("LOG_PROCCSW and LOG_PROCEXIT apply to process modes only, not {mode}"),
        ));
    }
    if flags.contains(Flags::DESCENDANTS) && mode.is_system() {
        return Err(Error::invalid(
            "allocate",
            format!("DESCENDANTS applies to process modes only, not {mode}"),
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
mod tests {
    use super::*;
    use crate::backend::sim::SimBackend;

    fn sim_pmc(sim: &Arc<SimBackend>, mode: Mode, flags: Flags, cpu: Cpu) -> Result<Pmc> {
        Pmc::allocate_on(sim.clone(), "task-clock", mode, flags, cpu, 0)
    }

    fn tc(sim: &Arc<SimBackend>) -> Pmc {
        sim_pmc(sim, Mode::TC, Flags::empty(), Cpu::Any).expect("allocate")
    }

    #[test]
    fn start_attaches_the_caller_and_counts_only_while_running() {
        let sim = SimBackend::new(2);
        let mut p = tc(&sim);
        sim.advance(5);
        assert_eq!(p.read().unwrap(), 0);
        p.start().unwrap();
        assert_eq!(p.targets(), vec![sim.caller()]);
        sim.advance(10);
        assert_eq!(p.read().unwrap(), 10);
        p.start().unwrap(); // idempotent
        p.stop().unwrap();
        p.stop().unwrap(); // idempotent
        sim.advance(100);
        assert_eq!(p.read().unwrap(), 10, "a stopped PMC reads its saved value");
        p.start().unwrap();
        sim.advance(1);
        assert_eq!(p.read().unwrap(), 11);
    }

    #[test]
    fn stop_before_start_is_einval() {
        let sim = SimBackend::new(1);
        let mut p = tc(&sim);
        assert_eq!(p.stop().unwrap_err().errno(), libc::EINVAL);
    }

    #[test]
    fn attach_rules_follow_pmc_attach() {
        let sim = SimBackend::new(2);
        sim.spawn(42);
        let mut p = tc(&sim);
        p.attach(42).unwrap();
        assert_eq!(p.attach(42).unwrap_err().errno(), libc::EEXIST);
        assert_eq!(p.attach(77).unwrap_err().errno(), libc::ESRCH);
        p.start().unwrap();
        assert_eq!(
            p.targets(),
            vec![42],
            "start must not attach the caller once attached"
        );
        assert_eq!(p.attach(0).unwrap_err().errno(), libc::EBUSY);
        let mut s = sim_pmc(&sim, Mode::SC, Flags::empty(), Cpu::Id(1)).unwrap();
        assert_eq!(s.attach(42).unwrap_err().errno(), libc::EINVAL);
        assert_eq!(s.detach(42).unwrap_err().errno(), libc::EINVAL);
    }

    #[test]
    fn several_targets_accumulate_and_detach_keeps_the_value() {
        let sim = SimBackend::new(2);
        sim.spawn(42);
        let mut p = tc(&sim);
        p.attach(0).unwrap();
        p.attach(42).unwrap();
        p.start().unwrap();
        sim.advance(10);
        assert_eq!(p.read().unwrap(), 20);
        p.detach(42).unwrap();
        sim.advance(10);
        assert_eq!(p.read().unwrap(), 30, "the detached target's 10 stay");
        assert_eq!(p.detach(42).unwrap_err().errno(), libc::EINVAL);
        sim.exit(42);
        assert_eq!(p.detach(42).unwrap_err().errno(), libc::ESRCH);
    }

    #[test]
    fn write_set_rw_need_a_stopped_pmc_and_set_the_value() {
        let sim = SimBackend::new(1);
        let mut p = tc(&sim);
        p.set(42).unwrap();
        assert_eq!(p.read().unwrap(), 42);
        p.start().unwrap();
        assert_eq!(p.write(1).unwrap_err().errno(), libc::EBUSY);
        assert_eq!(p.rw(1).unwrap_err().errno(), libc::EBUSY);
        assert_eq!(p.set(1).unwrap_err().errno(), libc::EBUSY);
        sim.advance(8);
        assert_eq!(p.read().unwrap(), 50);
        p.stop().unwrap();
        assert_eq!(p.rw(7).unwrap(), 50);
        assert_eq!(p.read().unwrap(), 7);
        p.start().unwrap();
        sim.advance(3);
        assert_eq!(p.read().unwrap(), 10);
        p.stop().unwrap();
        p.write(u64::MAX).unwrap();
        p.start().unwrap();
        sim.advance(2);
        assert_eq!(
            p.read().unwrap(),
            1,
            "values wrap modulo 2^64 like a 64-bit counter"
        );
    }

    #[test]
    fn allocate_with_count_sets_the_initial_value_or_reload_count() {
        let sim = SimBackend::new(1);
        let p = Pmc::allocate_on(
            sim.clone(),
            "task-clock",
            Mode::TC,
            Flags::empty(),
            Cpu::Any,
            99,
        )
        .unwrap();
        assert_eq!(p.reload_count(), 99);
        let mut p = p;
        assert_eq!(p.read().unwrap(), 99);
        let s = Pmc::allocate_on(
            sim.clone(),
            "task-clock",
            Mode::TS,
            Flags::empty(),
            Cpu::Any,
            10,
        )
        .unwrap();
        assert_eq!(
            s.reload_count(),
            MIN_RELOAD_COUNT,
            "hwpmc raises small reload counts"
        );
    }

    #[test]
    fn allocation_validation_matrix() {
        let sim = SimBackend::new(2);
        let einval = |mode, flags, cpu| {
            let e = sim_pmc(&sim, mode, flags, cpu).unwrap_err();
            assert_eq!(e.errno(), libc::EINVAL, "{mode} {flags:?} {cpu}: {e}");
        };
        for m in [Mode::TC, Mode::TS] {
            einval(m, Flags::empty(), Cpu::Id(0));
        }
        for m in [Mode::SC, Mode::SS] {
            einval(m, Flags::empty(), Cpu::Any);
            einval(m, Flags::LOG_PROCCSW, Cpu::Id(0));
            einval(m, Flags::LOG_PROCEXIT, Cpu::Id(0));
            einval(m, Flags::DESCENDANTS, Cpu::Id(0));
        }
        einval(Mode::TS, Flags::USERCALLCHAIN, Cpu::Any);
        einval(Mode::TC, Flags::CALLCHAIN, Cpu::Any);
        einval(Mode::SC, Flags::CALLCHAIN, Cpu::Id(0));
        einval(Mode::TC, Flags::from_bits_retain(0x1), Cpu::Any);
        // Every valid combination allocates.
        for (m, f, c) in [
            (
                Mode::TC,
                Flags::DESCENDANTS | Flags::LOG_PROCEXIT | Flags::LOG_PROCCSW,
                Cpu::Any,
            ),
            (
                Mode::TS,
                Flags::CALLCHAIN | Flags::USERCALLCHAIN | Flags::DESCENDANTS,
                Cpu::Any,
            ),
            (Mode::SS, Flags::CALLCHAIN, Cpu::Id(1)),
            (Mode::SC, Flags::empty(), Cpu::Id(0)),
        ] {
            sim_pmc(&sim, m, f, c).unwrap_or_else(|e| panic!("{m} {f:?} {c}: {e}"));
        }
        let off = sim_pmc(&sim, Mode::SC, Flags::empty(), Cpu::Id(5)).unwrap_err();
        assert_eq!(off.errno(), libc::ENXIO, "{off}");
    }

    #[test]
    fn a_counter_that_never_ran_is_an_error_not_zero() {
        let sim = SimBackend::new(1);
        let mut p = tc(&sim);
        sim.starve(true);
        p.start().unwrap();
        sim.advance(10);
        let e = p.read().unwrap_err();
        assert!(
            matches!(
                e,
                Error::NotCounted {
                    time_enabled: 10,
                    ..
                }
            ),
            "{e:?}"
        );
        sim.starve(false);
        sim.advance(10);
        let r = p.read_detailed().unwrap();
        assert!(r.multiplexed);
        assert_eq!(
            (r.raw, r.time_enabled, r.time_running, r.value),
            (10, 20, 10, 20)
        );
    }

    #[test]
    fn pmcinfo_lists_own_pmcs_with_their_state() {
        let sim = SimBackend::new(2);
        let mut p = tc(&sim);
        let id = p.id();
        let row = || registry_snapshot().into_iter().find(|r| r.id == id);
        assert_eq!(row().unwrap().state, State::Allocated);
        p.start().unwrap();
        let r = row().unwrap();
        assert_eq!(
            (r.state, r.targets.clone()),
            (State::Running, vec![sim.caller()])
        );
        drop(p);
        assert!(row().is_none(), "released PMCs leave the table");
    }

    #[test]
    fn get_msr_needs_a_pmc_attached_only_to_the_caller() {
        let sim = SimBackend::new(1);
        sim.spawn(42);
        let mut p = tc(&sim);
        assert_eq!(p.get_msr().unwrap_err().errno(), libc::EINVAL);
        p.attach(42).unwrap();
        assert_eq!(p.get_msr().unwrap_err().errno(), libc::EINVAL);
        let mut q = tc(&sim);
        q.attach(0).unwrap();
        assert_eq!(
            q.get_msr().unwrap_err().errno(),
            libc::EOPNOTSUPP,
            "sim has no rdpmc"
        );
    }
}
