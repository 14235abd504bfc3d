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

mod allocate;
mod attach;
mod builder;
mod direct;
mod hot_path;
mod percpu;
mod validate;
mod value;

use std::sync::Arc;

use crate::PmcInfo;
use crate::backend::{CounterValue, Counters, HotCounter, PreparedEvent};
use crate::owner::registry::PmcRecord;
use crate::owner::{Owner, SourceHandle};
use crate::spec::EventSpec;
use crate::{Capabilities, Class, Cpu, Flags, Mode, PmcId, Reading, Result, State};

pub use builder::{EventArg, PmcBuilder};
pub use percpu::{PerCpu, PerCpuBuilder};

/// pmcstat's default reload count for sampling PMCs.
pub const DEFAULT_RELOAD_COUNT: u64 = 65_536;

/// The smallest reload count hwpmc accepts; smaller values are raised to it.
pub const MIN_RELOAD_COUNT: u64 = 1_000;

/// The largest reload count: perf_event refuses a sample period with bit
/// 63 set (EINVAL), and FreeBSD's pmcstat reads `-n` with `strtol`.
pub const MAX_RELOAD_COUNT: u64 = i64::MAX as u64;

/// One process the PMC is attached to. The source is dropped first: its
/// last drain reads the counters before they close.
#[derive(Debug)]
struct Target {
    pid: u32,
    source: Option<SourceHandle>,
    counters: Box<dyn Counters>,
}

/// A performance-monitoring counter, made by [`Pmc::builder`] (on the
/// process's owner) or [`Owner::pmc`] (on another).
///
/// ```
/// use pmc::Pmc;
///
/// let mut pmc = Pmc::builder("task-clock,usr").build()?;
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
    /// Its pmcinfo row, shared with its owner's registry: the state (a
    /// log close stops the PMC from the owner's side), the targets and
    /// the reload count are kept there and nowhere else.
    record: Arc<PmcRecord>,
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
    /// An SS PMC's event count at its last start: the sampling period
    /// restarts there.
    sample_base: u64,
    /// The cgroup directory a system PMC counts in (Linux), as opened.
    cgroup: Option<std::path::PathBuf>,
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
        self.record.set_targets(self.targets.iter().map(|t| t.pid));
    }

    /// The owner it belongs to.
    pub fn owner(&self) -> &Owner {
        &self.owner
    }

    /// A description of this PMC (`pmc_pmcinfo` row): its row in
    /// [`Owner::pmcinfo`], read from the same record.
    pub fn info(&self) -> PmcInfo {
        let backend = self.owner.binding();
        self.record.info(|pid| backend.process_exists(pid))
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

    /// The cgroup directory a system PMC counts in, when it was built with
    /// [`PmcBuilder::cgroup`] (a relative path as joined to the cgroup v2
    /// mount).
    pub fn cgroup(&self) -> Option<&std::path::Path> {
        self.cgroup.as_deref()
    }

    /// The state. A PMC that wrote into a log that was then closed reads
    /// Stopped, as hwpmc stops it (see [`Owner::close_logfile`]).
    #[inline]
    pub fn state(&self) -> State {
        self.record.load()
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

    /// Whether the resolved event counts nanoseconds (`cpu-clock`,
    /// `task-clock` in any spelling): a sampling PMC's reload count is
    /// then a period in nanoseconds, so the same count samples far more
    /// often than it would an event such as `instructions`.
    pub fn counts_nanoseconds(&self) -> bool {
        self.event.counts_nanoseconds()
    }

    /// The processes this PMC is attached to; those that exited have left
    /// the list (as hwpmc unlinks them at exit).
    pub fn targets(&self) -> Vec<u32> {
        let backend = self.owner.binding();
        self.record.live_targets(|pid| backend.process_exists(pid))
    }

    /// Whether `pid` exists, without asking the backend for the owner:
    /// the allocating process is the one calling (invariant 10), so it is
    /// alive, and an attach to it needs no system call to say so.
    fn owner_or_exists(&self, pid: u32) -> bool {
        pid == self.owner_pid || self.owner.binding().process_exists(pid)
    }

    /// The capabilities of the PMC's class as [`crate::global::cpuinfo`]
    /// reports them (`pmc_capabilities` looks the class up in the cpuinfo
    /// classes, libpmc.c); the event's own when the class is not listed.
    pub fn capabilities(&self) -> Capabilities {
        let class = self.event.class();
        self.owner
            .binding()
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
        self.owner
            .binding()
            .classes()
            .ok()
            .and_then(|cs| cs.into_iter().find(|c| c.class == class))
            .map_or_else(|| self.event.width(), |c| c.width)
    }

    /// The reload count (sampling) or initial value (counting).
    pub fn reload_count(&self) -> u64 {
        self.record.reload_count()
    }
}

impl Pmc {
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

#[cfg(test)]
mod tests;
