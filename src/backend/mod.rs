//! The counter interfaces an [`Owner`](crate::Owner) can count on: the
//! public [`Backend`] handle and [`BackendKind`] (with the `test-doubles`
//! cargo feature, `SimBackend` too), and — private to the crate — the
//! seam between the portable hwpmc semantics and a platform.
//!
//! A [`Backend`] is an opaque handle on one instance of a platform
//! binding: Linux perf_event, FreeBSD hwpmc(4), or the portable backend
//! (CPU time, faults, context switches and block I/O of the calling
//! process, on any Unix). The process's own choice is
//! [`Backend::selected`] ([`crate::global`] makes it); [`Backend::new`]
//! makes an independent instance for an owner of one's own.
//!
//! ```
//! use pmc::Owner;
//! use pmc::backend::{Backend, BackendKind};
//!
//! // A profiler's own owner, on the portable backend whatever the process chose.
//! let owner = Owner::new(Backend::new(BackendKind::Portable)?);
//! assert_eq!(owner.backend().name(), "portable");
//! # Ok::<(), pmc::Error>(())
//! ```
//!
//! With the `test-doubles` cargo feature, `SimBackend` — a deterministic
//! simulated machine whose clock, processes and CPUs a test drives — can
//! back an owner too (`Owner::new(SimBackend::new(2))`), for testing code
//! that uses `pmc` without a kernel.
//!
//! The seam: [`crate::Pmc`] implements FreeBSD's rules (modes,
//! attach/detach, start/stop, initial values, validation) once, on top of
//! small crate-private traits:
//!
//! - `BackendImpl`: what the [`Backend`] handle wraps (named apart from
//!   it): resolves an `EventSpec` into a `PreparedEvent`, answers machine
//!   queries and tells the probe its platform's facts (`facts.rs`);
//! - `PreparedEvent`: a resolved event that can be opened on a process
//!   or a CPU;
//! - `Counters`: the open hardware/software counters of one target;
//! - `HotCounter`: a direct handle on a target that is one plain
//!   counter, which `Pmc`'s hot path starts, reads and stops (asked of the
//!   PMC's own counters, whichever backend made them);
//! - `source::SampleSource`: what a logging target produces, pulled by
//!   the PMC's [`Owner`](crate::Owner), which alone writes the log.
//!
//! Backends report what their PMCs observe as neutral
//! `event::BackendEvent`s, which the owner's translator turns into
//! pmclog records by hwpmc's rules; they also answer every question the
//! portable layer has about the machine (processes, executables, CPUs), so
//! nothing outside a platform's module reads `/proc` or sysfs. A backend
//! never reaches the process's defaults ([`crate::global`]).
//!
//! The Linux binding (`backends/linux`, wired in `linux/`) implements them on
//! perf_event; on FreeBSD, `freebsd/` drives hwpmc(4) (compiled there, and
//! in tests over pmc-freebsd's kernel double); `portable` counts what any
//! Unix accounts for the calling process (CPU time, faults, context
//! switches, block I/O) and is chosen where neither can be used and on
//! platforms without a native backend ([`crate::global::active`] says
//! which runs and why); `sim` is a deterministic test double;
//! `unsupported` makes every call fail with
//! [`Error::NoBackend`](crate::Error::NoBackend); `conformance/` runs one
//! semantic suite of `Pmc` over every backend.

use std::fmt;
use std::sync::Arc;

use crate::log::cpu::CpuIdentity;
use crate::spec::EventSpec;
use crate::{Capabilities, Class, ClassInfo, CpuInfo, Flags, Mode, Result};
use facts::PlatformFacts;
use source::SampleSource;

pub(crate) mod facts;
mod handle;
pub(crate) mod kind;
pub(crate) mod portable;
#[cfg(any(test, feature = "test-doubles"))]
pub(crate) mod sim;
pub(crate) mod unsupported;

#[cfg(any(target_os = "freebsd", test))]
pub(crate) mod freebsd;

#[cfg(test)]
mod conformance;

pub(crate) mod event;
pub(crate) mod source;

pub use handle::Backend;
pub use kind::BackendKind;
#[cfg(any(test, feature = "test-doubles"))]
pub use sim::{SimBackend, SimSampleStats};

// `--cfg pmc_force_portable` compiles Linux as a platform without a
// native backend, so CI checks those paths here (see `.ci/run`).
#[cfg(all(
    any(target_os = "linux", target_os = "android"),
    not(pmc_force_portable)
))]
pub(crate) mod linux;

impl facts::Environment {
    /// Detects the facts of this machine and caller, from the platform's
    /// plain sources rather than through a backend (the test gate stays
    /// independent of the code under test); nothing is known to work where
    /// this build has no perf_event backend.
    pub fn detect() -> facts::Environment {
        cfg_if::cfg_if! {
            if #[cfg(all(any(target_os = "linux", target_os = "android"), not(pmc_force_portable)))] {
                linux::environment::environment()
            } else {
                facts::Environment::nothing_known()
            }
        }
    }
}

/// `clock_gettime(CLOCK_MONOTONIC)` in nanoseconds, the clock perf and
/// hwpmc stamp records with (the time since the first call should the
/// call ever fail).
pub(crate) fn monotonic_clock_ns() -> u64 {
    use nix::time::{ClockId, clock_gettime};
    match clock_gettime(ClockId::CLOCK_MONOTONIC) {
        Ok(t) => u64::try_from(t.tv_sec())
            .unwrap_or(0)
            .saturating_mul(1_000_000_000)
            .saturating_add(u64::try_from(t.tv_nsec()).unwrap_or(0)),
        Err(_) => {
            static START: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
            let since = START.get_or_init(std::time::Instant::now).elapsed();
            u64::try_from(since.as_nanos()).unwrap_or(u64::MAX)
        }
    }
}

/// A direct handle on a target that is one plain counter (see
/// [`Counters::hot`]): one variant per backend of this build that offers
/// one, made by that backend's counters, so the handle is always the
/// running backend's. An enum matched statically rather than a
/// `Box<dyn HotHandle>`: the indirect calls cost 26 user-space
/// instructions per start/read/stop bracket (204 against 178 under
/// callgrind, `cargo bench -p hwpmc --bench bracket_instructions`), which
/// put the bracket past its target of at most 100 added to the raw
/// system calls (108 against 82).
#[derive(Clone, Debug)]
pub(crate) enum HotCounter {
    /// A perf_event fd.
    #[cfg(all(
        any(target_os = "linux", target_os = "android"),
        not(pmc_force_portable)
    ))]
    PerfEvent(linux::HotCounter),
}

impl HotCounter {
    /// Enables; false when that failed.
    #[inline(always)]
    pub(crate) fn enable(&self) -> bool {
        match *self {
            #[cfg(all(
                any(target_os = "linux", target_os = "android"),
                not(pmc_force_portable)
            ))]
            HotCounter::PerfEvent(ref counter) => counter.enable(),
        }
    }

    /// Disables; false when that failed (the count stays readable).
    #[inline(always)]
    pub(crate) fn disable(&self) -> bool {
        match *self {
            #[cfg(all(
                any(target_os = "linux", target_os = "android"),
                not(pmc_force_portable)
            ))]
            HotCounter::PerfEvent(ref counter) => counter.disable(),
        }
    }

    /// The scaled value; `None` when the read failed or the counter was
    /// enabled but never ran.
    #[inline(always)]
    pub(crate) fn read_scaled(&self) -> Option<u64> {
        match *self {
            #[cfg(all(
                any(target_os = "linux", target_os = "android"),
                not(pmc_force_portable)
            ))]
            HotCounter::PerfEvent(ref counter) => counter.read_scaled(),
        }
    }
}

/// The operations of a backend's direct counter handle, a variant of
/// [`HotCounter`]. Each answers only "did it work": on failure `Pmc` takes
/// its general path through [`Counters`], which repeats the (idempotent)
/// operation and reports the error in full.
#[cfg_attr(
    not(all(
        any(target_os = "linux", target_os = "android"),
        not(pmc_force_portable)
    )),
    expect(dead_code, reason = "no backend of this build has a direct handle")
)]
pub(crate) trait HotHandle: Clone + fmt::Debug + Send + Sync {
    /// Enables; false when that failed.
    fn enable(&self) -> bool;
    /// Disables; false when that failed. The disabled counter keeps its
    /// value for a later [`HotHandle::read_scaled`].
    fn disable(&self) -> bool;
    /// The scaled value; `None` when the read failed or the counter was
    /// enabled but never ran.
    fn read_scaled(&self) -> Option<u64>;
}

/// A cgroup opened for system PMCs restricted to it (`PmcBuilder::cgroup`):
/// one variant per backend of this build that counts per cgroup (today
/// perf_event's, a Linux extension hwpmc has nothing like), made by that
/// backend's [`BackendImpl::open_cgroup`], so only its own events are
/// opened in it. Without such a backend the enum is empty.
#[derive(Debug)]
pub(crate) enum CgroupDir {
    /// An open cgroup directory for `PERF_FLAG_PID_CGROUP`.
    #[cfg(all(
        any(target_os = "linux", target_os = "android"),
        not(pmc_force_portable)
    ))]
    PerfEvent(pmc_linux::cgroup::Cgroup),
}

impl CgroupDir {
    /// The directory opened.
    pub(crate) fn path(&self) -> &std::path::Path {
        match *self {
            #[cfg(all(
                any(target_os = "linux", target_os = "android"),
                not(pmc_force_portable)
            ))]
            CgroupDir::PerfEvent(ref cgroup) => cgroup.path(),
        }
    }
}

/// The refusal of a backend that cannot count per cgroup (`backend`:
/// `the sim backend`, `this backend`).
pub(crate) fn cgroup_not_supported(backend: &str) -> crate::Error {
    crate::Error::NotSupported {
        what: "counting per cgroup".into(),
        why: format!(
            "{backend} cannot restrict a PMC to a cgroup: it is a Linux \
             extension (perf_event's PERF_FLAG_PID_CGROUP, perf stat -G) that FreeBSD's \
             hwpmc has nothing like; count system-wide without a cgroup, or on Linux \
             perf_event"
        ),
        source: None,
    }
}

/// What `allocate` asks a backend to prepare.
// The sampling fields are read only by the Linux backend (the portable
// one ignores them; hwpmc's takes the period in its own request).
#[cfg_attr(
    not(all(
        any(target_os = "linux", target_os = "android"),
        not(pmc_force_portable)
    )),
    allow(dead_code)
)]
#[derive(Clone, Debug)]
pub(crate) struct EventRequest<'a> {
    /// The parsed specifier.
    pub spec: &'a EventSpec,
    /// The mode (already validated against `flags` and the CPU).
    pub mode: Mode,
    /// The flags.
    pub flags: Flags,
    /// For sampling modes, the reload count (sample period).
    pub sample_period: u64,
    /// The PMC's id (written in its log records).
    // Read by the FreeBSD backend only (hwpmc logs its own records).
    #[cfg_attr(not(any(test, target_os = "freebsd")), allow(dead_code))]
    pub pmcid: u32,
    /// The data pages of each ring a logging target maps, as its owner's
    /// tunable sets them (`None`: the backend's default).
    pub buffer_pages: Option<usize>,
    /// For sampling modes, the bytes of user stack each sample copies
    /// with the user registers, for the owner to unwind (`None`: no copy).
    /// A backend that cannot copy stacks refuses it.
    pub user_stack: Option<u32>,
}

/// One counter's value as a backend reads it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct CounterValue {
    /// The raw count.
    pub raw: u64,
    /// Nanoseconds enabled.
    pub time_enabled: u64,
    /// Nanoseconds on the hardware.
    pub time_running: u64,
    /// The count extrapolated to the enabled time; `None` when the counter
    /// was enabled but never ran (so no estimate exists).
    pub scaled: Option<u64>,
}

impl CounterValue {
    /// Adds another target's value (sums of raw counts, times and scaled
    /// estimates; an unestimable part makes the sum unestimable).
    #[inline]
    pub fn accumulate(&mut self, other: CounterValue) {
        self.raw = self.raw.wrapping_add(other.raw);
        self.time_enabled = self.time_enabled.saturating_add(other.time_enabled);
        self.time_running = self.time_running.saturating_add(other.time_running);
        self.scaled = match (self.scaled, other.scaled) {
            (Some(a), Some(b)) => Some(a.wrapping_add(b)),
            _ => None,
        };
    }

    /// The zero value (nothing counted, nothing enabled).
    pub const ZERO: CounterValue = CounterValue {
        raw: 0,
        time_enabled: 0,
        time_running: 0,
        scaled: Some(0),
    };
}

/// A platform binding: what a [`Backend`] handle wraps. Named apart from
/// the handle, which is the public face of the same thing; only this
/// crate implements or calls it.
pub(crate) trait BackendImpl: Send + Sync + fmt::Debug {
    /// A short name (`linux-perf_event`, `portable`, `sim`, `unsupported`).
    fn name(&self) -> &'static str;

    /// Resolves an event for a mode without opening anything yet (process
    /// PMCs open when they attach).
    fn prepare(&self, request: &EventRequest<'_>) -> Result<Arc<dyn PreparedEvent>>;

    /// The pid of the calling process (what pid 0 means).
    fn caller_pid(&self) -> u32;

    /// Whether a process exists.
    fn process_exists(&self, pid: u32) -> bool;

    /// The CPUs that are online.
    fn online_cpus(&self) -> Vec<u32>;

    /// The CPUs online when the backend last looked, without looking again
    /// where it keeps them (Linux: no `sched_getaffinity`): right unless a
    /// CPU went offline since, whose open then fails — `PerCpu` then asks
    /// `online_cpus` and allocates again.
    fn online_cpus_last_seen(&self) -> Vec<u32> {
        self.online_cpus()
    }

    /// The CPUs that may ever be online (`pmc_cpu_max()` is the highest
    /// plus one): a CPU beyond them is EINVAL at allocate, an existing
    /// offline one ENXIO.
    fn possible_cpus(&self) -> Vec<u32> {
        self.online_cpus()
    }

    /// The highest possible CPU (what allocate checks a CPU against).
    fn highest_possible_cpu(&self) -> u32 {
        self.possible_cpus().into_iter().max().unwrap_or(0)
    }

    /// The processes descended from `pid` now (children, grandchildren…),
    /// for the overlap rule of DESCENDANTS attaches.
    fn descendants(&self, pid: u32) -> Vec<u32> {
        let _ = pid;
        Vec::new()
    }

    /// The path of a process's executable (PMCATTACH's `pl_pathname`);
    /// `None` when it cannot be told.
    fn executable_path(&self, pid: u32) -> Option<String> {
        let _ = pid;
        None
    }

    /// How to bring an offline CPU online on this platform (the advice of
    /// allocate's ENXIO).
    fn how_to_online(&self, cpu: u32) -> String {
        let _ = cpu;
        "bring it online".into()
    }

    /// The log's clock in nanoseconds: CLOCK_MONOTONIC where there is
    /// one, the clock this backend stamps its sample records with.
    fn monotonic_ns(&self) -> u64;

    /// The CPU identity INITIALIZE records carry (`pl_cputype`,
    /// `pl_cpuid`), as this backend can tell it.
    fn cpu_identity(&self) -> CpuIdentity {
        CpuIdentity::unknown()
    }

    /// The machine description (`pmc_cpuinfo`).
    fn cpuinfo(&self) -> Result<CpuInfo>;

    /// Every event name of a class that `allocate` accepts.
    fn event_names(&self, class: &Class) -> Result<Vec<String>>;

    /// What this platform tells a capability report beyond the
    /// environment (the kernel, its PMUs and limits, the read path);
    /// nothing by default.
    fn platform_facts(&self) -> PlatformFacts {
        PlatformFacts::default()
    }

    /// The classes this machine offers, with their capabilities.
    fn classes(&self) -> Result<Vec<ClassInfo>> {
        Ok(self.cpuinfo()?.classes)
    }

    /// Opens the cgroup at `path` for system PMCs restricted to it (an
    /// absolute directory, or a path relative to the cgroup v2 mount);
    /// refused by every backend but Linux perf_event's.
    fn open_cgroup(&self, path: &std::path::Path) -> Result<CgroupDir> {
        let _ = path;
        Err(cgroup_not_supported(&format!(
            "the {} backend",
            self.name()
        )))
    }
}

/// A resolved event, ready to be opened on targets.
pub(crate) trait PreparedEvent: Send + Sync + fmt::Debug {
    /// The class of the event.
    fn class(&self) -> Class;

    /// What the class can do.
    fn capabilities(&self) -> Capabilities;

    /// The width in bits of the values `read` returns.
    fn width(&self) -> u32;

    /// A canonical description of the event (for logs and listings).
    fn describe(&self) -> String;

    /// Whether the event counts nanoseconds (a clock, as Linux's
    /// `cpu-clock` and `task-clock`): its reload count is then a time
    /// between samples, not a number of events.
    fn counts_nanoseconds(&self) -> bool {
        false
    }

    /// Opens counters on a process: all of its threads, new threads, and
    /// with `descendants`, its existing and future child processes. The
    /// counters start disabled.
    fn open_process(&self, pid: u32, descendants: bool) -> Result<Box<dyn Counters>>;

    /// As [`PreparedEvent::open_process`], for a process held before an
    /// `exec`: the first [`Counters::enable`] only arms the counters, which
    /// start counting at the process's next exec, so nothing the process
    /// does before it is counted (perf_event's `enable_on_exec`). A backend
    /// without such a trigger opens as `open_process` (counting from the
    /// enable, as FreeBSD's pmcstat does).
    fn open_process_at_exec(&self, pid: u32, descendants: bool) -> Result<Box<dyn Counters>> {
        self.open_process(pid, descendants)
    }

    /// Opens a system-wide counter on one CPU, disabled.
    fn open_cpu(&self, cpu: u32) -> Result<Box<dyn Counters>>;

    /// As [`PreparedEvent::open_cpu`], counting only the tasks of
    /// `cgroup` (made by the same backend's [`BackendImpl::open_cgroup`]).
    fn open_cpu_in_cgroup(&self, cpu: u32, cgroup: &CgroupDir) -> Result<Box<dyn Counters>> {
        let _ = (cpu, cgroup);
        Err(cgroup_not_supported("this backend"))
    }

    /// Opens what a process target would open on the calling thread and
    /// closes it again: `allocate` fails with the kernel's errno for an
    /// event this machine cannot count (no PMU, a missing tracepoint,
    /// paranoid), as hwpmc's allocate does, while process PMCs still open
    /// their counters only when they attach.
    fn trial_open(&self) -> Result<()> {
        Ok(())
    }

    /// Whether this one preparation may serve the same request on every
    /// CPU (`PerCpu` then prepares once, not once per CPU): true when it
    /// holds nothing of one PMC's own, as a perf_event attr does not; a
    /// backend that allocates in the kernel at prepare (hwpmc's
    /// PMCALLOCATE, one PMC id each) answers false.
    fn serves_every_cpu(&self) -> bool {
        false
    }

    /// Whether its owner may keep this preparation for a later allocation
    /// of the same request (`owner/prepared.rs`): true when it holds
    /// nothing of one PMC's own and nothing it was resolved from can
    /// change under the same name (a tracepoint's id in tracefs, a probed
    /// file's symbols, the ring size the caller's capabilities give).
    fn reusable(&self) -> bool {
        false
    }
}

/// The open counters of one target (a process tree or a CPU).
pub(crate) trait Counters: Send + fmt::Debug {
    /// Starts counting.
    fn enable(&mut self) -> Result<()>;

    /// Stops counting; the value is kept.
    fn disable(&mut self) -> Result<()>;

    /// The current value, summed over every thread of the target.
    fn read(&mut self) -> Result<CounterValue>;

    /// Only the scaled value (`None`: enabled but never ran): the hot path
    /// of `Pmc::read`, which backends may serve with less work than
    /// [`Counters::read`].
    #[inline]
    fn read_scaled(&mut self) -> Result<Option<u64>> {
        Ok(self.read()?.scaled)
    }

    /// Changes the sample period (sampling PMCs).
    fn set_period(&mut self, period: u64) -> Result<()> {
        let _ = period;
        Ok(())
    }

    /// The index `rdpmc` uses for this counter on the calling thread
    /// (`pmc_get_msr`): `Ok(None)` when the kernel does not let user
    /// space read it. A backend may open what it needs for that here.
    fn rdpmc_index(&mut self) -> Result<Option<u32>> {
        Ok(None)
    }

    /// The number of kernel objects (fds) this target holds.
    fn handles(&self) -> usize {
        1
    }

    /// The target's one kernel descriptor, for a target that is one plain
    /// counter (to poll it, or hand it to code that reads it itself);
    /// `None` when it is several or the backend has none.
    fn fd(&self) -> Option<std::os::fd::BorrowedFd<'_>> {
        None
    }

    /// What the target produces for the log (samples, mappings, process
    /// events), for its PMC's owner to drain: `None` for a target that
    /// only counts.
    fn sample_source(&self) -> Option<Arc<dyn SampleSource>> {
        None
    }

    /// A handle `Pmc` may start, read and stop directly, without dynamic
    /// dispatch: offered by targets that are one plain counter (no rings,
    /// no per-thread sum). Shares the counter; valid as long as it lives.
    fn hot(&self) -> Option<HotCounter> {
        None
    }
}
