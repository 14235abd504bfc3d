//! The seam between the portable hwpmc semantics and a platform.
//!
//! [`crate::Pmc`] implements FreeBSD's rules (modes, attach/detach, start/stop,
//! initial values, validation) once, on top of three small traits:
//!
//! - [`Backend`]: resolves an [`EventSpec`] into a [`PreparedEvent`] and
//!   answers machine queries;
//! - [`PreparedEvent`]: a resolved event that can be opened on a process
//!   or a CPU;
//! - [`Counters`]: the open hardware/software counters of one target.
//!
//! The Linux binding (`backends/linux`, wired in `linux/`) implements them on
//! perf_event; [`sim::SimBackend`] is a deterministic test double; where no
//! backend exists, [`unsupported`] makes every call fail with
//! [`Error::Unsupported`](crate::Error::Unsupported). A FreeBSD hwpmc backend
//! would plug in the same way.

use std::fmt;
use std::sync::{Arc, OnceLock};

use crate::machine::{ClassInfo, CpuInfo};
use crate::spec::EventSpec;
use crate::{Capabilities, Class, Flags, Mode, Result};

pub mod sim;
pub mod unsupported;

cfg_if::cfg_if! {
    if #[cfg(any(target_os = "linux", target_os = "android"))] {
        pub mod linux;
        pub use linux::HotCounter;
        fn make_default() -> Arc<dyn Backend> {
            Arc::new(linux::LinuxBackend::new())
        }
        /// CLOCK_MONOTONIC in nanoseconds (the log's clock).
        pub(crate) fn monotonic_ns() -> u64 {
            pmc_linux::system::monotonic_ns()
        }
        /// Moves the samples the PMCs produced into the log.
        pub(crate) fn drain_samples() {
            linux::sampling::drain_all();
        }
        /// Stops the counters that write into the log (its deconfiguration);
        /// the ids of their PMCs.
        pub(crate) fn stop_logging_pmcs() -> Vec<u32> {
            linux::sampling::stop_all()
        }
    } else {
        fn make_default() -> Arc<dyn Backend> {
            Arc::new(unsupported::UnsupportedBackend)
        }
        /// No backend here has a direct counter handle.
        #[derive(Debug, Clone)]
        pub enum HotCounter {}
        impl HotCounter {
            pub(crate) fn enable(&self) -> bool {
                match *self {}
            }
            pub(crate) fn disable_and_read_scaled(&self) -> Option<u64> {
                match *self {}
            }
            pub(crate) fn read_scaled(&self) -> Option<u64> {
                match *self {}
            }
        }
        /// No backend here produces samples.
        pub(crate) fn drain_samples() {}
        /// Nothing writes into the log here.
        pub(crate) fn stop_logging_pmcs() -> Vec<u32> {
            Vec::new()
        }
        /// Nanoseconds since the first call (no platform clock here).
        pub(crate) fn monotonic_ns() -> u64 {
            static START: OnceLock<std::time::Instant> = OnceLock::new();
            START.get_or_init(std::time::Instant::now).elapsed().as_nanos() as u64
        }
    }
}

/// The backend of this platform (created once).
pub fn default_backend() -> Arc<dyn Backend> {
    static DEFAULT: OnceLock<Arc<dyn Backend>> = OnceLock::new();
    DEFAULT.get_or_init(make_default).clone()
}

/// What `allocate` asks a backend to prepare.
#[derive(Clone, Debug)]
pub struct EventRequest<'a> {
    /// The parsed specifier.
    pub spec: &'a EventSpec,
    /// The mode (already validated against `flags` and the CPU).
    pub mode: Mode,
    /// The flags.
    pub flags: Flags,
    /// For sampling modes, the reload count (sample period).
    pub sample_period: u64,
    /// The PMC's id (written in its log records).
    pub pmcid: u32,
}

/// One counter's value as a backend reads it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CounterValue {
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

/// A platform binding.
pub trait Backend: Send + Sync + fmt::Debug {
    /// A short name (`linux-perf_event`, `sim`, `unsupported`).
    fn name(&self) -> &'static str;

    /// Resolves an event for a mode without opening anything yet (process
    /// PMCs open when they attach).
    fn prepare(&self, request: &EventRequest<'_>) -> Result<Box<dyn PreparedEvent>>;

    /// The pid of the calling process (what pid 0 means).
    fn caller_pid(&self) -> u32;

    /// Whether a process exists.
    fn process_exists(&self, pid: u32) -> bool;

    /// The CPUs that are online.
    fn online_cpus(&self) -> Vec<u32>;

    /// The CPUs that may ever be online (`pmc_cpu_max()` is the highest
    /// plus one): a CPU beyond them is EINVAL at allocate, an existing
    /// offline one ENXIO.
    fn possible_cpus(&self) -> Vec<u32> {
        self.online_cpus()
    }

    /// The processes descended from `pid` now (children, grandchildren…),
    /// for the overlap rule of DESCENDANTS attaches.
    fn descendants(&self, pid: u32) -> Vec<u32> {
        let _ = pid;
        Vec::new()
    }

    /// The machine description (`pmc_cpuinfo`).
    fn cpuinfo(&self) -> Result<CpuInfo>;

    /// Every event name of a class that `allocate` accepts.
    fn event_names(&self, class: &Class) -> Result<Vec<String>>;

    /// The classes this machine offers, with their capabilities.
    fn classes(&self) -> Result<Vec<ClassInfo>> {
        Ok(self.cpuinfo()?.classes)
    }
}

/// A resolved event, ready to be opened on targets.
pub trait PreparedEvent: Send + Sync + fmt::Debug {
    /// The class of the event.
    fn class(&self) -> Class;

    /// What the class can do.
    fn capabilities(&self) -> Capabilities;

    /// The width in bits of the values `read` returns.
    fn width(&self) -> u32;

    /// A canonical description of the event (for logs and listings).
    fn describe(&self) -> String;

    /// Opens counters on a process: all of its threads, new threads, and
    /// with `descendants`, its existing and future child processes. The
    /// counters start disabled.
    fn open_process(&self, pid: u32, descendants: bool) -> Result<Box<dyn Counters>>;

    /// Opens a system-wide counter on one CPU, disabled.
    fn open_cpu(&self, cpu: u32) -> Result<Box<dyn Counters>>;

    /// Opens what a process target would open on the calling thread and
    /// closes it again: `allocate` fails with the kernel's errno for an
    /// event this machine cannot count (no PMU, a missing tracepoint,
    /// paranoid), as hwpmc's allocate does, while process PMCs still open
    /// their counters only when they attach.
    fn trial_open(&self) -> Result<()> {
        Ok(())
    }
}

/// The open counters of one target (a process tree or a CPU).
pub trait Counters: Send + fmt::Debug {
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

    /// A handle `Pmc` may start, read and stop directly, without dynamic
    /// dispatch: offered by targets that are one plain counter (no rings,
    /// no per-thread sum). Shares the counter; valid as long as it lives.
    fn hot(&self) -> Option<HotCounter> {
        None
    }
}
