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

mod attach;
mod builder;
mod hot_path;
mod percpu;
mod validate;

use std::sync::Arc;

use crate::PmcInfo;
use crate::backend::{
    BackendImpl, CounterValue, Counters, EventRequest, HotCounter, PreparedEvent,
};
use crate::owner::registry::SharedState;
use crate::owner::{Owner, SourceHandle};
use crate::spec::EventSpec;
use crate::{Capabilities, Class, Cpu, Error, Flags, Mode, PmcId, Reading, Result, State};

pub use builder::{ProcessPmc, SystemPmc};
pub use percpu::PerCpu;
use validate::validate_allocation;

/// pmcstat's default reload count for sampling PMCs.
pub const DEFAULT_RELOAD_COUNT: u64 = 65_536;

/// The smallest reload count hwpmc accepts; smaller values are raised to it.
pub const MIN_RELOAD_COUNT: u64 = 1_000;

/// The largest reload count: perf_event refuses a sample period with bit
/// 63 set (EINVAL), and FreeBSD's pmcstat reads `-n` with `strtol`.
pub const MAX_RELOAD_COUNT: u64 = i64::MAX as u64;

/// A reload count above [`MAX_RELOAD_COUNT`] is EINVAL with the limit named
/// (the backend's own refusal would be a bare errno).
fn check_reload_count(op: &'static str, count: u64) -> Result<()> {
    if count > MAX_RELOAD_COUNT {
        return Err(Error::invalid(
            op,
            format!("reload count {count} is too large: the maximum is {MAX_RELOAD_COUNT}"),
        ));
    }
    Ok(())
}

/// What an allocation would ask the backend, asked already by the caller
/// (each ask is a system call or a sysfs read).
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Asked<'a> {
    /// The online CPUs (see `validate_allocation`).
    online: Option<&'a [u32]>,
    /// The calling process, the PMC's owner.
    owner: Option<u32>,
    /// The user-stack copy the builder asked for (else the owner's).
    pub(super) user_stack: Option<u32>,
    /// The event another CPU's PMC of the same request prepared, when it
    /// serves every CPU (see `PreparedEvent::serves_every_cpu`).
    prepared: Option<&'a Arc<dyn PreparedEvent>>,
}

/// One process the PMC is attached to. The source is dropped first: its
/// last drain reads the counters before they close.
#[derive(Debug)]
struct Target {
    pid: u32,
    source: Option<SourceHandle>,
    counters: Box<dyn Counters>,
}

/// A performance-monitoring counter.
///
/// ```
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
    /// Its owner: the pmcinfo registry it is in, the log it writes to,
    /// the backend it was allocated on.
    owner: Owner,
    backend: Arc<dyn BackendImpl>,
    event: Arc<dyn PreparedEvent>,
    /// Process targets (TC/TS).
    targets: Vec<Target>,
    /// What the CPU counter produces for the log (SS, and SC with log
    /// flags), dropped before it.
    system_source: Option<SourceHandle>,
    /// The CPU counter (SC/SS).
    system: Option<Box<dyn Counters>>,
    /// hwpmc's `PMC_F_ATTACH_DONE`: the PMC was attached at least once, so
    /// a start with no targets left (all detached or exited) is ESRCH
    /// instead of attaching the owner (`pmc_start`, hwpmc_mod.c).
    attach_done: bool,
    /// The system-mode initial value (`pm_sc.pm_initial`): written to the
    /// counter at `start`, refreshed from it at `stop`, set by `set`.
    initial: u64,
    /// The allocating process (cached: a getpid between enable and disable
    /// would be counted by getpid tracepoints and probes).
    owner_pid: u32,
    /// One process target, no CPU counter, nothing detached (see
    /// `publish`): `read` asks the backend for the scaled value only.
    single_target: bool,
    /// A counting PMC with one process target that is one plain counter,
    /// nothing detached, no CPU counter and no log flags: `start`, `read`
    /// and `stop` call it directly (the bracket profilers put around code).
    hot: Option<HotCounter>,
    /// The PMC's state, shared with its pmcinfo row (a log close stops the
    /// PMC from the owner's side).
    shared_state: SharedState,
    /// Added to the hardware count so that `read` returns what `write`/`set`
    /// asked for (wrapping arithmetic: the value is modulo 2^64 like a
    /// 64-bit counter).
    offset: u64,
    /// Counts of targets that were detached.
    detached: CounterValue,
    /// The value at the last `stop`.
    saved: Reading,
    /// The hot path's `stop` only disabled the counter: `saved.value` is
    /// still in it (a disabled counter keeps its count), read when first
    /// asked for (`settle_saved`), which saves the stop a read system call
    /// when nothing asks before the next start or the release.
    saved_in_counter: bool,
    /// Reload count (sampling) or initial value (counting), as `set` gave it.
    reload_count: u64,
    /// An SS PMC's event count at its last start: the sampling period
    /// restarts there.
    sample_base: u64,
}

/// The count of an allocation that names none: the default reload count
/// of a sampling PMC, no initial value for a counting one.
pub(crate) fn default_count(mode: Mode) -> u64 {
    if mode.is_sampling() {
        DEFAULT_RELOAD_COUNT
    } else {
        0
    }
}

impl Pmc {
    /// Allocates a PMC (`pmc_allocate`) of the process's owner
    /// ([`Owner::global`]) with no initial value / the default reload
    /// count.
    ///
    /// `spec` is an event specifier (see [`crate::spec`]); `cpu` must be
    /// [`Cpu::Any`] for the process modes (TC, TS) and a CPU for the system
    /// modes (SC, SS).
    ///
    /// ```
    /// use pmc::{Cpu, Flags, Mode, Pmc};
    ///
    /// // A process counter (TC) of user-mode CPU time in nanoseconds: a
    /// // software event, so it counts even without a hardware PMU.
    /// let mut pmc = Pmc::allocate("task-clock,usr", Mode::TC, Flags::empty(), Cpu::Any)?;
    /// pmc.attach(0)?; // the calling process
    /// pmc.start()?;
    /// let sum: u64 = (0..1_000_000u64).map(std::hint::black_box).sum();
    /// pmc.stop()?;
    /// assert!(pmc.read()? > 0, "{sum}");
    /// pmc.release()?;
    /// # Ok::<(), pmc::Error>(())
    /// ```
    pub fn allocate(spec: &str, mode: Mode, flags: Flags, cpu: Cpu) -> Result<Pmc> {
        Owner::global().allocate(spec, mode, flags, cpu)
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
        Owner::global().allocate_with_count(spec, mode, flags, cpu, count)
    }

    /// [`Owner::allocate_with_count`].
    pub(crate) fn allocate_for(
        owner: &Owner,
        spec: &str,
        mode: Mode,
        flags: Flags,
        cpu: Cpu,
        count: u64,
    ) -> Result<Pmc> {
        Self::allocate_checked(owner, spec, mode, flags, cpu, count, Asked::default())
    }

    /// [`Pmc::allocate_for`] with a user-stack copy of `bytes` per sample
    /// (the builders' [`ProcessPmc::user_stack`]).
    pub(crate) fn allocate_with_user_stack(
        owner: &Owner,
        spec: &str,
        mode: Mode,
        flags: Flags,
        cpu: Cpu,
        count: u64,
        bytes: u32,
    ) -> Result<Pmc> {
        crate::owner::check_user_stack_bytes(bytes)?;
        if !mode.is_sampling() {
            return Err(Error::invalid(
                "allocate",
                format!("a user-stack copy needs a sampling mode (SS, TS), not {mode}"),
            ));
        }
        let asked = Asked {
            user_stack: Some(bytes),
            ..Asked::default()
        };
        Self::allocate_checked(owner, spec, mode, flags, cpu, count, asked)
    }

    /// [`Pmc::allocate`] for [`PerCpu`], which has asked the backend once
    /// what every CPU's allocation asks.
    pub(super) fn allocate_for_per_cpu(
        owner: &Owner,
        spec: &str,
        mode: Mode,
        flags: Flags,
        cpu: u32,
        asked: Asked<'_>,
    ) -> Result<Pmc> {
        let count = default_count(mode);
        Self::allocate_checked(owner, spec, mode, flags, Cpu::Id(cpu), count, asked)
    }

    fn allocate_checked(
        owner: &Owner,
        spec_text: &str,
        mode: Mode,
        flags: Flags,
        cpu: Cpu,
        count: u64,
        asked: Asked<'_>,
    ) -> Result<Pmc> {
        let spec = owner
            .parse_spec(spec_text)
            .map_err(|source| Error::InvalidSpec {
                spec: spec_text.to_string(),
                source,
            })?;
        let backend = owner.binding().clone();
        validate_allocation(mode, flags, cpu, &*backend, asked.online)?;
        let reload_count = if mode.is_sampling() {
            let asked = spec.qualifiers.period.unwrap_or(count);
            check_reload_count("allocate", asked)?;
            asked.max(MIN_RELOAD_COUNT)
        } else {
            count
        };
        // The pmcid carries the PMC's CPU, mode and class as FreeBSD's
        // does. The class is the prepared event's; the request needs the
        // id first, so it is asked with the class the specifier names and
        // asked again in the rare case the backend resolves it to another.
        let registry = owner.registry();
        let cputype = registry.cputype(|| backend.cpuinfo().map(|i| i.cputype).unwrap_or_default());
        let class_code = |class: &Class| class.libpmc_class(cputype).code();
        let cpu_field = match cpu {
            Cpu::Id(n) => n,
            Cpu::Any => u32::MAX,
        };
        let new_id = |class: &Class| {
            registry
                .next_id(cpu_field, mode as u32, class_code(class))
                .map(|id| IdGuard {
                    registry,
                    id,
                    keep: false,
                })
                .ok_or_else(|| Error::Busy {
                    op: "allocate".into(),
                    why: format!(
                        "all 256 row indexes of {cpu} {mode} PMCs of class {} are in use; \
                         release some",
                        class.libpmc_class(cputype).name()
                    ),
                    source: None,
                })
        };
        let request = |id: PmcId| EventRequest {
            spec: &spec,
            mode,
            flags,
            sample_period: reload_count,
            pmcid: id.0,
            buffer_pages: owner.buffer_pages_setting(),
            user_stack: asked
                .user_stack
                .or_else(|| owner.user_stack())
                .filter(|_| mode.is_sampling()),
        };
        let (mut id_guard, event) = match asked.prepared {
            Some(event) => (new_id(&event.class())?, Arc::clone(event)),
            None => {
                let guess = named_class(&spec);
                let guard = new_id(&guess)?;
                let event = backend.prepare(&request(guard.id))?;
                if class_code(&event.class()) == class_code(&guess) {
                    (guard, event)
                } else {
                    drop(guard);
                    let guard = new_id(&event.class())?;
                    let event = backend.prepare(&request(guard.id))?;
                    (guard, event)
                }
            }
        };
        let id = id_guard.id;
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
        let system_source = match system.as_ref().and_then(|s| s.sample_source()) {
            Some(source) => Some(owner.register_source(id.0, flags, mode.is_sampling(), source)?),
            None => None,
        };
        let owner_pid = asked.owner.unwrap_or_else(|| backend.caller_pid());
        let mut pmc = Pmc {
            id,
            spec,
            mode,
            flags,
            cpu,
            owner: owner.clone(),
            backend,
            event,
            targets: Vec::new(),
            system_source,
            system,
            attach_done: false,
            initial: if mode.is_counting() { count } else { 0 },
            owner_pid,
            hot: None,
            single_target: false,
            shared_state: SharedState::new(State::Allocated),
            // TC: the count is `pm_initial`, which hwpmc never uses for
            // process PMCs (their value is `pm_savedvalue`, 0 until a
            // write); SC: it is written to the counter at start.
            offset: 0,
            detached: CounterValue::ZERO,
            saved: Reading::default(),
            saved_in_counter: false,
            reload_count,
            sample_base: 0,
        };
        // From here the PMC's release frees its id.
        id_guard.keep = true;
        pmc.publish();
        owner.write_if_logging(|| crate::log::LogRecord::PmcAllocateDyn {
            pmcid: id.0,
            event: 0,
            flags: flags.bits(),
            name: pmc.spec.text.clone(),
        });
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
            Some(t) if lone_counter && t.pid == self.owner_pid => t.counters.hot(),
            _ => None,
        };
        // The rest of the row (name, class, mode, …) never changes.
        let registry = self.owner.registry();
        if !registry.update(self.id, self.targets(), self.reload_count) {
            registry.publish(self.info(), &self.shared_state);
        }
    }

    /// The owner it belongs to.
    pub fn owner(&self) -> &Owner {
        &self.owner
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
            state: self.state(),
            owner_pid: self.owner_pid,
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
    /// Stopped, as hwpmc stops it (see [`Owner::close_logfile`]).
    #[inline]
    pub fn state(&self) -> State {
        self.shared_state.load()
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
            .filter(|&pid| self.owner_or_exists(pid))
            .collect()
    }

    /// Whether `pid` exists, without asking the backend for the owner:
    /// the allocating process is the one calling (invariant 10), so it is
    /// alive, and an attach to it needs no system call to say so.
    fn owner_or_exists(&self, pid: u32) -> bool {
        pid == self.owner_pid || self.backend.process_exists(pid)
    }

    /// The capabilities of the PMC's class as [`crate::global::cpuinfo`]
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

    /// The width of the PMC's class as [`crate::global::cpuinfo`] reports
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

    fn require_stopped(&mut self, op: &'static str) -> Result<()> {
        self.settle()?;
        if self.state() == State::Running {
            return Err(Error::Busy {
                op: op.into(),
                why: "the PMC is running; stop it first".into(),
                source: None,
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
        self.settle_saved()?;
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
        check_reload_count("set", value)?;
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
        if self.targets.len() != 1 || self.targets[0].pid != self.owner_pid {
            return Err(Error::invalid(
                "get_msr",
                format!(
                    "rdpmc access needs the PMC attached to its owner ({}) and nothing else; \
                     it is attached to {:?}",
                    self.owner_pid,
                    self.targets()
                ),
            ));
        }
        let index = self.targets[0].counters.rdpmc_index()?.ok_or_else(|| Error::Os {
            op: "get_msr".into(),
            source: std::io::Error::from_raw_os_error(libc::ENOSYS),
            hint: Some(format!(
                "the {} backend has no user-space read for this counter; read it with Pmc::read",
                self.backend.name()
            )),
        })?;
        self.publish();
        Ok(index)
    }

    /// The PMC's one kernel descriptor, where it has exactly one: a
    /// process PMC attached to one single-threaded target, or a system
    /// PMC (on Linux, a perf_event fd to `poll` or to read with `read(2)`
    /// as perf_event_open(2) describes). `None` for a PMC spread over
    /// several descriptors (threads, CPUs, hybrid PMUs) or not attached.
    pub fn fd(&self) -> Option<std::os::fd::BorrowedFd<'_>> {
        match (&*self.targets, &self.system) {
            ([one], None) => one.counters.fd(),
            ([], Some(system)) => system.fd(),
            _ => None,
        }
    }

    /// The number of kernel handles (file descriptors) the PMC holds.
    pub fn handles(&self) -> usize {
        self.targets
            .iter()
            .map(|t| t.counters.handles())
            .sum::<usize>()
            + self.system.as_ref().map_or(0, |s| s.handles())
    }

    /// Releases the PMC (`pmc_release`); dropping it does the same, but
    /// only `release` reports what failed: stopping a running PMC, and
    /// for a PMC that logs, writing its last records (the final drain of
    /// its sources) — the log's write error, which stays the log's too
    /// (a later flush or close reports it again). The PMC goes either way.
    pub fn release(mut self) -> Result<()> {
        // hwpmc_mod.c `pmc_release_pmc_descriptor` stops a running PMC
        // first; its errors are the release's (the PMC goes anyway).
        let stopped = self.settle().and_then(|()| match self.state() {
            State::Running => self.stop_general(),
            _ => Ok(()),
        });
        let logging = self.sources().next().map(|_| self.owner.clone());
        // The sources' final drain happens as they are dropped.
        drop(self);
        stopped?;
        match logging {
            Some(owner) => owner.flush_written(),
            None => Ok(()),
        }
    }

    /// The registered sources of its targets and CPU counter.
    fn sources(&self) -> impl Iterator<Item = &SourceHandle> {
        self.targets
            .iter()
            .filter_map(|t| t.source.as_ref())
            .chain(self.system_source.as_ref())
    }
}

impl Drop for Pmc {
    fn drop(&mut self) {
        self.owner.registry().remove(self.id);
    }
}

/// A pmcid being allocated: given back unless the allocation succeeds.
struct IdGuard<'a> {
    registry: &'a crate::owner::registry::Registry,
    id: PmcId,
    keep: bool,
}

impl Drop for IdGuard<'_> {
    fn drop(&mut self) {
        if !self.keep {
            self.registry.forget_id(self.id);
        }
    }
}

/// The class a specifier names before the backend resolves it (its kind
/// of event; a PMU by name is that PMU).
fn named_class(spec: &EventSpec) -> Class {
    use crate::spec::EventName;
    match &spec.event {
        EventName::Hardware(_) => Class::Hardware,
        EventName::Cache(_) => Class::Cache,
        EventName::Raw(_) | EventName::Named(_) => Class::Raw,
        EventName::Software(_) => Class::Software,
        EventName::Pmu { pmu, .. } => Class::Pmu(pmu.clone()),
        EventName::Tracepoint { .. } => Class::Tracepoint,
        EventName::Breakpoint { .. } => Class::Breakpoint,
        EventName::Probe(_) => Class::Uprobe,
    }
}

#[cfg(test)]
mod tests;
