//! The simulator's sampling rings: one bounded queue per sampling
//! counter, filled by [`SimBackend::sample`](super::SimBackend::sample)
//! and emptied by the owner's drain. What does not fit is lost and
//! reported as perf reports a full ring's losses (`BackendEvent::Lost`),
//! so a drain that falls behind shows as it would on a kernel.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use crate::backend::event::BackendEvent;
use crate::backend::source::{Drain, MappingSource, NoMappings, SampleSource, SourceInfo};

/// The bytes one simulated sample takes in its ring: perf's sample of
/// TID, TIME, CPU, ID and IP with its header, rounded up. A ring of
/// `pages` 4 KiB pages holds `pages * 4096 / SAMPLE_BYTES` samples.
pub(super) const SAMPLE_BYTES: usize = 64;

/// Samples one sweep takes from one ring: a sweep's window is bounded, as
/// the Linux rings' is, so that a stop waits for one window at most.
const SWEEP_WINDOW: usize = 512;

/// Where a ring's samples come from.
#[derive(Clone, Copy, Debug)]
pub(super) enum RingTarget {
    /// A system sampling PMC's CPU; its samples are the caller's.
    Cpu { cpu: u32, pid: u32 },
    /// A process sampling PMC's target, sampled on CPU 0.
    Process(u32),
}

/// One sampling counter's ring.
#[derive(Debug)]
pub(super) struct SimRing {
    target: RingTarget,
    /// Samples it holds at most.
    capacity: usize,
    /// Its counter is enabled (a disabled counter takes no samples).
    enabled: AtomicBool,
    queue: Mutex<Queue>,
    totals: Arc<RingTotals>,
}

#[derive(Debug, Default)]
struct Queue {
    samples: VecDeque<(u64, BackendEvent)>,
    /// Samples lost since the last drain, and when the last was.
    lost: u64,
    lost_at: u64,
}

/// Every ring's samples of one simulated machine, for its
/// [`SimSampleStats`].
#[derive(Debug, Default)]
pub(super) struct RingTotals {
    taken: AtomicU64,
    lost: AtomicU64,
    most_pending: AtomicUsize,
}

/// What the simulated machine's sampling rings saw (see
/// [`SimBackend::sample`](super::SimBackend::sample)).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SimSampleStats {
    /// Samples put into a ring.
    pub samples: u64,
    /// Samples lost to a full ring.
    pub lost: u64,
    /// The most samples one ring held at once: how far its drain fell
    /// behind, in samples.
    pub most_pending: usize,
}

impl RingTotals {
    pub(super) fn stats(&self) -> SimSampleStats {
        SimSampleStats {
            samples: self.taken.load(Ordering::Relaxed),
            lost: self.lost.load(Ordering::Relaxed),
            most_pending: self.most_pending.load(Ordering::Relaxed),
        }
    }
}

impl SimRing {
    pub(super) fn new(target: RingTarget, pages: usize, totals: Arc<RingTotals>) -> SimRing {
        SimRing {
            target,
            capacity: (pages * 4096 / SAMPLE_BYTES).max(1),
            enabled: AtomicBool::new(false),
            queue: Mutex::default(),
            totals,
        }
    }

    fn queue(&self) -> MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(super) fn set_enabled(&self, on: bool) {
        self.enabled.store(on, Ordering::SeqCst);
    }

    /// One sample at `time`, if the counter is enabled; false when it is
    /// not.
    pub(super) fn sample(&self, time: u64) -> bool {
        if !self.enabled.load(Ordering::SeqCst) {
            return false;
        }
        let (pid, cpu) = match self.target {
            RingTarget::Cpu { cpu, pid } => (pid, cpu),
            RingTarget::Process(pid) => (pid, 0),
        };
        let mut queue = self.queue();
        if queue.samples.len() >= self.capacity {
            queue.lost += 1;
            queue.lost_at = time;
            self.totals.lost.fetch_add(1, Ordering::Relaxed);
            return true;
        }
        queue.samples.push_back((
            time,
            BackendEvent::Sample {
                pid,
                tid: pid,
                cpu,
                user: true,
                pc: 0x40_1000,
                callchain: None,
                user_stack: None,
            },
        ));
        self.totals.taken.fetch_add(1, Ordering::Relaxed);
        self.totals
            .most_pending
            .fetch_max(queue.samples.len(), Ordering::Relaxed);
        true
    }
}

impl SampleSource for SimRing {
    fn info(&self) -> SourceInfo {
        match self.target {
            RingTarget::Cpu { .. } => SourceInfo {
                system: true,
                ..SourceInfo::default()
            },
            RingTarget::Process(pid) => SourceInfo {
                attached: vec![pid],
                ..SourceInfo::default()
            },
        }
    }

    fn mappings(&self) -> &dyn MappingSource {
        &NoMappings
    }

    fn drain(&self, how: Drain, out: &mut Vec<(u64, BackendEvent)>) -> bool {
        let mut queue = self.queue();
        let lost = std::mem::take(&mut queue.lost);
        if lost > 0 {
            out.push((queue.lost_at, BackendEvent::Lost { count: lost }));
        }
        let n = match how {
            Drain::Sweep => queue.samples.len().min(SWEEP_WINDOW),
            Drain::Final => queue.samples.len(),
        };
        out.extend(queue.samples.drain(..n));
        !queue.samples.is_empty()
    }

    fn stop_for_log_close(&self) {
        self.set_enabled(false);
    }
}
