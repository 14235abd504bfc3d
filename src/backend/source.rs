//! The pull side of the log: what a logging target's counters produce,
//! taken out by the PMC's [`Owner`](crate::Owner), which alone runs
//! hwpmc's logging rules (`crate::owner::translate`) and writes the log.
//!
//! A backend never writes the log and never learns whether one is
//! configured: it hands out a [`SampleSource`] for a target that samples
//! or logs process events, and the owner drains it — every sweep of its
//! drain thread a window at a time, and completely at stop, release and
//! log flush or close.

use std::fmt;

use super::event::BackendEvent;

/// The default ring size: 512 KiB of 4 KiB pages, perf record's default,
/// which the default `kernel.perf_event_mlock_kb` (516: 512 KiB and the
/// metadata page) lets any user lock on every CPU. It holds about 35 ms
/// of samples with 127-frame callchains at FreeBSD's default rate (a
/// reload count of 65536 cpu-clock ns) on a busy CPU. On Linux, a process
/// with CAP_IPC_LOCK (root), which no mlock limit binds, gets four times
/// as much unless a buffer size was set: a drainer thread preempted on a
/// loaded machine then loses nothing for about 140 ms.
pub const DEFAULT_BUFFER_PAGES: usize = 128;

/// How much a drain takes out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Drain {
    /// A periodic sweep: a bounded window of records, cheap (no loss
    /// reconciliation); the owner sweeps again while one is left.
    Sweep,
    /// Everything the source holds, with exact loss counts: at stop,
    /// release, and log flush or close.
    Final,
}

/// What the logging rules need to know of a source, fixed when it is
/// opened.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SourceInfo {
    /// Samples may come from the kernel (its mapping is logged).
    pub kernel_samples: bool,
    /// The source is a CPU's, not a process's (every process's mappings
    /// are logged before its samples).
    pub system: bool,
    /// Each thread's last slice is reported as it exits
    /// ([`BackendEvent::Slice`]), so a process's slices add up to its
    /// value.
    pub exit_slices: bool,
    /// The processes attached at open (the root and, with DESCENDANTS,
    /// its descendants then): their existing mappings are logged first.
    pub attached: Vec<u32>,
    /// The data size in KiB of a ring the platform's locked-memory limit
    /// cut below the size asked for, if one was (a loss warning names it).
    pub ring_cut_to_kib: Option<usize>,
}

/// Where the mappings that exist when logging starts are found.
pub trait MappingSource {
    /// The kernel's mapping ([`BackendEvent::Mapping`] of pid `u32::MAX`).
    fn kernel_mapping(&self) -> Option<BackendEvent>;
    /// Every process now.
    fn all_processes(&self) -> Vec<u32>;
    /// A process's executable mappings now ([`BackendEvent::Mapping`]s).
    fn process_mappings(&self, pid: u32) -> Vec<BackendEvent>;
}

/// A logging target's records, as neutral events with their timestamps
/// (the backend's [`Backend::monotonic_ns`](super::Backend::monotonic_ns)
/// clock).
pub trait SampleSource: Send + Sync + fmt::Debug {
    /// What the logging rules need to know of it.
    fn info(&self) -> SourceInfo;

    /// Where its initial mappings are read.
    fn mappings(&self) -> &dyn MappingSource;

    /// Appends what it holds to `out` ([`Drain::Sweep`]: a window of it);
    /// returns whether records are left for another sweep.
    fn drain(&self, how: Drain, out: &mut Vec<(u64, BackendEvent)>) -> bool;

    /// Its log was closed while it ran: stop counting (hwpmc stops the
    /// PMCs that write into a log as it is deconfigured), until the PMC's
    /// owner enables it again.
    fn stop_for_log_close(&self);
}

/// A source without mappings (backends that do not sample).
#[cfg(any(target_os = "freebsd", test, feature = "test-doubles"))]
#[derive(Clone, Copy, Debug, Default)]
pub struct NoMappings;

#[cfg(any(target_os = "freebsd", test, feature = "test-doubles"))]
impl MappingSource for NoMappings {
    fn kernel_mapping(&self) -> Option<BackendEvent> {
        None
    }
    fn all_processes(&self) -> Vec<u32> {
        Vec::new()
    }
    fn process_mappings(&self, _pid: u32) -> Vec<BackendEvent> {
        Vec::new()
    }
}
