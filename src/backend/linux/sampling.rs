//! Sampling PMCs and the `LOG_PROC*` flags: ring buffers per CPU, turned
//! into neutral [`BackendEvent`]s that the PMC's owner drains
//! ([`SampleSource`]) and logs by hwpmc's rules.
//!
//! perf refuses to mmap an inherited per-task event, so a logging process
//! target gets one event per (thread, CPU), inheriting, with one ring per
//! CPU and the other events of that CPU routed into it (SET_OUTPUT). The
//! backend's collector thread copies the rings into their sets' intakes
//! every 5 ms (parked while no set lives), and the owner's drains decode
//! them: samples, MMAP2 mappings, exec COMMs, FORKs, EXITs, READ values and
//! LOST counts (made exact at the final drains by the events'
//! `PERF_FORMAT_LOST` counts, `lost.rs`).
//!
//! Per-thread values (LOG_PROCCSW, and LOG_PROCEXIT for descendants) come
//! from sampling siblings grouped under each counter (`SliceSiblings`):
//! perf has no record that carries a counter's value at a context switch
//! or an exit, but a sibling that samples with `PERF_SAMPLE_READ` of the
//! group reads the counter at exactly that moment.
//!
//! Here: the rings' set and its drains, and the collector; `plan` what a
//! logging event asks perf for, `records` one perf record as a backend
//! event.

mod callchain;
mod exec_path;
mod lost;
mod plan;
mod procfs;
mod records;

pub(super) use lost::for_this_kernel;
pub(super) use plan::{LogPlan, SliceSiblings, default_ring_pages, logging_attr};

use std::sync::{Arc, Mutex, Weak};

use pmc_linux::attr::{Attr, AttrBit};
use pmc_linux::record::{Record, RecordParser, kind};
use pmc_linux::ring::RingBuffer;

use crate::backend::event::BackendEvent;
use crate::backend::source::{Drain, MappingSource, SampleSource, SourceInfo};
use crate::periodic::{self, Sweeper};
use crate::{Flags, Result};
use exec_path::{PendingExec, mapped_image};
use lost::RingLosses;
use procfs::ProcMappings;
use records::{backend_event, slice_event};

/// The rings of one target and how to turn their records into neutral
/// events: the target's [`SampleSource`].
#[derive(Debug)]
pub(super) struct RingSet {
    /// What the owner's logging rules need to know of it.
    info: SourceInfo,
    /// Whether the PMC samples (a counting one logs no samples).
    sampling: bool,
    /// The PMC's flags (`LOG_PROCEXIT`).
    flags: Flags,
    parser: RecordParser,
    /// The rings and what the collector took from them, under a lock of
    /// their own: the collector never waits for a decode.
    intake: Arc<Mutex<Intake>>,
    /// The attached process and its events, read when it exits.
    root: Option<(u32, Arc<[pmc_linux::event::Event]>)>,
    /// Parses the slice siblings' samples (their sample type adds READ).
    slice_parser: Option<RecordParser>,
    /// Each ring's losses, reconciled with the events' `PERF_FORMAT_LOST`
    /// counts at the final drains (`None`: opened without it).
    losses: Option<RingLosses>,
    /// Each ring's records moved from the intake, not yet decoded.
    spools: Vec<Spool>,
    /// Each ring's execs waiting for their executable's mapping.
    pending_execs: Vec<Vec<PendingExec>>,
}

/// A logging target's source: its ring set, decoded under its own lock.
#[derive(Debug)]
pub(super) struct LinuxSource(Mutex<RingSet>);

impl SampleSource for LinuxSource {
    fn info(&self) -> SourceInfo {
        self.set().info.clone()
    }

    fn mappings(&self) -> &dyn MappingSource {
        &ProcMappings
    }

    fn drain(&self, how: Drain, out: &mut Vec<(u64, BackendEvent)>) -> bool {
        self.set().drain(out, how)
    }

    /// Disables the events of a process target; a CPU's stop with the PMC.
    fn stop_for_log_close(&self) {
        if let Some((_, events)) = &self.set().root {
            for e in events.iter() {
                let _ = e.disable();
            }
        }
    }
}

impl LinuxSource {
    fn set(&self) -> std::sync::MutexGuard<'_, RingSet> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// A set's rings and each one's records taken out by the collector.
#[derive(Debug)]
struct Intake {
    rings: Vec<RingBuffer>,
    /// Each ring's copies not yet moved to its spool.
    taken: Vec<Chunks>,
    /// The bytes a ring may hold outside the kernel's ring, in its intake
    /// and spool together ([`spool_limit`]).
    limit: usize,
    /// The bytes each ring's spool held at its last move (the drain keeps
    /// it current), so the collector counts both halves without its lock.
    spooled: Vec<usize>,
}

impl Intake {
    /// Empties the rings, each ring's records in one copy: a chunk of
    /// whole records. A ring whose copies wait past the intake's limit is
    /// left to fill: the kernel then drops samples and says so with a
    /// LOST record, so the loss is counted exactly and memory stays
    /// bounded whatever the drain's pace.
    fn collect(&mut self) {
        for ((ring, taken), spooled) in self
            .rings
            .iter_mut()
            .zip(&mut self.taken)
            .zip(&self.spooled)
        {
            if taken.bytes + spooled < self.limit {
                taken.take_from(ring);
            }
        }
    }
}

/// Copies out of one ring, oldest first: each a whole number of records,
/// so records never straddle two chunks and a decoded chunk is dropped
/// whole (a single growing buffer compacted after each decode moved its
/// whole backlog every sweep: 84 % of the drain's time at 15 kHz on two
/// CPUs, and 47 % of the samples lost behind it).
#[derive(Debug, Default)]
struct Chunks {
    list: std::collections::VecDeque<Vec<u8>>,
    bytes: usize,
    /// A decoded chunk's buffer for the next copy: a fresh buffer of a
    /// few MB costs its page faults and zeroing at every copy.
    spare: Option<Vec<u8>>,
}

impl Chunks {
    fn take_from(&mut self, ring: &mut RingBuffer) {
        let mut chunk = self.spare.take().unwrap_or_default();
        chunk.clear();
        if ring.take_all_into(&mut chunk) > 0 {
            self.bytes += chunk.len();
            self.list.push_back(chunk);
        } else {
            self.spare = Some(chunk);
        }
    }

    fn append(&mut self, other: &mut Chunks) {
        self.bytes += std::mem::take(&mut other.bytes);
        self.list.append(&mut other.list);
    }
}

/// The backend's collector: every 5 ms, while a ring set lives, it copies
/// each set's rings into the set's intake (its thread parks otherwise).
#[derive(Debug)]
pub(crate) struct Collector {
    intakes: Mutex<Vec<Weak<Mutex<Intake>>>>,
    thread: Arc<Sweeper>,
}

impl Default for Collector {
    fn default() -> Collector {
        Collector {
            intakes: Mutex::new(Vec::new()),
            thread: Arc::new(Sweeper::every(periodic::COLLECT_INTERVAL)),
        }
    }
}

impl Drop for Collector {
    fn drop(&mut self) {
        self.thread.shut_down();
    }
}

impl Collector {
    /// Adds a set's intake and makes sure the thread runs: a set whose
    /// rings nobody empties would lose samples, so a thread that cannot
    /// start is an error.
    fn register(self: &Arc<Self>, intake: &Arc<Mutex<Intake>>) -> Result<()> {
        {
            let mut intakes = self.intakes.lock().unwrap_or_else(|p| p.into_inner());
            intakes.retain(|w| w.strong_count() > 0);
            intakes.push(Arc::downgrade(intake));
        }
        let weak = Arc::downgrade(self);
        self.thread
            .registered(periodic::spawn_collector, move || {
                weak.upgrade().map_or(0, |c| c.collect_all())
            })
            .map_err(|e| periodic::collector_spawn_error(&e))
    }

    /// The thread's sweep: every live set's rings into its intake; returns
    /// how many there were. Never waits for a decode (a set's lock): the
    /// records stay in their set's intake until a drain moves and decodes
    /// them, and the final drains collect and decode everything.
    fn collect_all(&self) -> usize {
        let intakes: Vec<Arc<Mutex<Intake>>> = {
            let reg = self.intakes.lock().unwrap_or_else(|p| p.into_inner());
            reg.iter().filter_map(Weak::upgrade).collect()
        };
        for intake in &intakes {
            intake.lock().unwrap_or_else(|p| p.into_inner()).collect();
        }
        intakes.len()
    }
}

/// The bytes a ring's records may take in memory between the ring and
/// their decode (the collector's copies and the spool): at least 16 MiB,
/// and at least two rings' worth. At 15 kHz of 8 KiB stacks on a busy
/// CPU (about 140 MB/s) 16 MiB is a drain stalled for 110 ms; past it the
/// kernel drops and counts samples, so a slow drain costs samples, never
/// unbounded memory.
fn spool_limit(ring_bytes: usize) -> usize {
    (16 << 20).max(2 * ring_bytes)
}

/// The sample time a sweep decodes before it empties the rings again: a
/// drainer short of CPU (a debug build on a loaded machine decodes at a
/// fraction of the rate samples arrive) still empties the rings every few
/// milliseconds, and its backlog waits in memory instead of being dropped
/// by the kernel, as `perf record` copies the raw rings to its file.
const DECODE_WINDOW_NS: u64 = 5_000_000;

/// Records copied out of a ring, decoded from `next` of the front chunk
/// on.
#[derive(Debug, Default)]
struct Spool {
    chunks: Chunks,
    next: usize,
}

impl Spool {
    /// The next whole record (header included), if any.
    fn peek(&self) -> Option<&[u8]> {
        let rest = self.chunks.list.front()?.get(self.next..)?;
        let size = usize::from(u16::from_ne_bytes([*rest.get(6)?, *rest.get(7)?]));
        if size < 8 {
            return None;
        }
        rest.get(..size)
    }

    fn pop_front(&mut self) {
        if let Some(front) = self.chunks.list.pop_front() {
            self.chunks.bytes -= front.len();
            self.chunks.spare = Some(front);
        }
        self.next = 0;
    }

    /// Drops what is left of a chunk that holds no whole record (a corrupt
    /// header; the kernel publishes whole records only) rather than stall
    /// on it; returns whether records are left.
    fn skip_corrupt(&mut self) -> bool {
        while !self.chunks.list.is_empty() && self.peek().is_none() {
            self.pop_front();
        }
        !self.chunks.list.is_empty()
    }
}

/// A record's timestamp, where it carries one.
fn record_time(record: &Record<'_>) -> Option<u64> {
    match record {
        Record::Sample(s) => s.time(),
        Record::Fork { time, .. } | Record::Exit { time, .. } => Some(*time),
        Record::Mmap { sample_id, .. }
        | Record::Mmap2 { sample_id, .. }
        | Record::Comm { sample_id, .. }
        | Record::Read { sample_id, .. }
        | Record::Lost { sample_id, .. }
        | Record::LostSamples { sample_id, .. } => sample_id.time,
        _ => None,
    }
}

/// The events that write into a set's rings: `events[i]` into ring
/// `ring_of[i]`.
#[derive(Debug)]
pub(super) struct RingEvents {
    pub(super) events: Arc<[pmc_linux::event::Event]>,
    pub(super) ring_of: Vec<usize>,
}

/// What [`RingSet::new`] is given beside the rings.
#[derive(Debug)]
pub(super) struct SetPlan<'a> {
    pub(super) plan: &'a LogPlan,
    /// The events' attr (their read_format as opened shapes the READ
    /// payloads).
    pub(super) attr: &'a Attr,
    pub(super) writers: RingEvents,
    /// The attached process and its events (`None`: a CPU's set).
    pub(super) root: Option<(u32, Arc<[pmc_linux::event::Event]>)>,
    pub(super) slices: Option<&'a SliceSiblings>,
    /// The KiB of a ring the mlock limit cut below the size asked, if any.
    pub(super) ring_cut_to_kib: Option<usize>,
}

impl RingSet {
    /// A source for `rings`, its intake registered with `collector`.
    pub(super) fn source(
        set: SetPlan<'_>,
        rings: Vec<RingBuffer>,
        collector: &Arc<Collector>,
    ) -> Result<Arc<LinuxSource>> {
        let SetPlan {
            plan,
            attr,
            writers,
            root,
            slices,
            ring_cut_to_kib,
        } = set;
        // The parser follows the read_format the kernel took (without
        // PERF_FORMAT_LOST on kernels before 6.0).
        let attr = match writers.events.first() {
            Some(e) => attr.read_format(e.read_format()),
            None => *attr,
        };
        let losses = RingLosses::new(writers.events, writers.ring_of, rings.len());
        let mut attached = Vec::new();
        if let Some((pid, _)) = &root {
            attached.push(*pid);
            if plan.flags.contains(Flags::DESCENDANTS) {
                let root = i32::try_from(*pid).unwrap_or(i32::MAX);
                attached.extend(
                    pmc_linux::system::descendants_of(root)
                        .into_iter()
                        .filter_map(|p| u32::try_from(p).ok()),
                );
            }
        }
        let info = SourceInfo {
            kernel_samples: !attr.is_set(AttrBit::EXCLUDE_KERNEL),
            system: root.is_none(),
            exit_slices: slices.is_some_and(|s| s.exit.is_some()),
            attached,
            ring_cut_to_kib,
        };
        let spools = rings.iter().map(|_| Spool::default()).collect();
        let pending_execs = rings.iter().map(|_| Vec::new()).collect();
        let ring_bytes = rings.iter().map(RingBuffer::data_size).max().unwrap_or(0);
        let intake = Arc::new(Mutex::new(Intake {
            taken: rings.iter().map(|_| Chunks::default()).collect(),
            limit: spool_limit(ring_bytes),
            spooled: vec![0; rings.len()],
            rings,
        }));
        collector.register(&intake)?;
        Ok(Arc::new(LinuxSource(Mutex::new(RingSet {
            info,
            sampling: plan.sampling,
            flags: plan.flags,
            parser: RecordParser::for_attr(&attr),
            intake,
            root,
            slice_parser: slices.map(|s| RecordParser::for_attr(&s.switch)),
            losses,
            spools,
            pending_execs,
        }))))
    }

    /// Empties the rings and moves what the collector took into the
    /// spools (chunks change hands; no record bytes are copied).
    fn collect(&mut self) {
        let mut intake = self.intake.lock().unwrap_or_else(|p| p.into_inner());
        intake.collect();
        let Intake { taken, spooled, .. } = &mut *intake;
        for ((spool, taken), spooled) in self.spools.iter_mut().zip(taken).zip(spooled) {
            if taken.spare.is_none() {
                taken.spare = spool.chunks.spare.take();
            }
            spool.chunks.append(taken);
            spool.skip_corrupt();
            *spooled = spool.chunks.bytes;
        }
    }

    /// Whether records wait in the spools, not yet decoded.
    fn has_backlog(&self) -> bool {
        self.spools.iter().any(|s| s.peek().is_some())
    }

    /// Appends the published records to `events` as backend events: every
    /// one for a [`Drain::Final`] (stop, release, log flush or close), which also
    /// reports the losses no LOST record told yet; a window of
    /// [`DECODE_WINDOW_NS`] for a [`Drain::Sweep`]. Returns whether records
    /// are left to decode.
    pub(super) fn drain(&mut self, events: &mut Vec<(u64, BackendEvent)>, how: Drain) -> bool {
        self.collect();
        let parser = self.parser;
        let slice_parser = self.slice_parser;
        let sampling = self.sampling;
        let user_only = !self.info.kernel_samples;
        // The attached process's value at its exit, where neither exit
        // slices nor a READ record give it: its events, final once it
        // has exited.
        let root = self
            .root
            .as_ref()
            .filter(|_| self.flags.contains(Flags::LOG_PROCEXIT) && !self.info.exit_slices);
        // A sweep decodes one window of sample time and leaves the rest
        // for the next (which empties the rings again first); a final
        // drain decodes everything.
        let cutoff = if how == Drain::Final {
            u64::MAX
        } else {
            self.spools
                .iter()
                .filter_map(|spool| {
                    let bytes = spool.peek()?;
                    let record = parser.parse(bytes, 0).ok()?;
                    record_time(&record)
                })
                .min()
                .map_or(u64::MAX, |t| t.saturating_add(DECODE_WINDOW_NS))
        };
        for (index, spool) in self.spools.iter_mut().enumerate() {
            loop {
                let Some(size) = spool.peek().map(<[u8]>::len) else {
                    // The front chunk is decoded (or corrupt): the next.
                    if spool.skip_corrupt() {
                        continue;
                    }
                    break;
                };
                let Some(chunk) = spool.chunks.list.front() else {
                    break;
                };
                let bytes = &chunk[spool.next..spool.next + size];
                if cutoff != u64::MAX
                    && let Ok(record) = parser.parse(bytes, 0)
                    && record_time(&record).is_some_and(|t| t > cutoff)
                {
                    break;
                }
                spool.next += size;
                let is_sample = bytes.get(..4) == Some(&kind::SAMPLE.to_ne_bytes()[..]);
                if let (Some(p), true) = (&slice_parser, is_sample) {
                    if let Ok(Record::Sample(s)) = p.parse(bytes, 0)
                        && let Some(event) = slice_event(&s)
                    {
                        events.push(event);
                    }
                    continue;
                }
                let Ok(record) = parser.parse(bytes, 0) else {
                    continue;
                };
                if let (
                    Record::Lost {
                        lost, sample_id, ..
                    },
                    Some(losses),
                ) = (&record, &mut self.losses)
                {
                    // Only what an earlier reconciliation did not report.
                    let count = losses.record(index, *lost);
                    if count > 0 {
                        events.push((sample_id.time.unwrap_or(0), BackendEvent::Lost { count }));
                    }
                    continue;
                }
                let pending = &mut self.pending_execs[index];
                match &record {
                    Record::Comm {
                        pid,
                        tid,
                        comm,
                        exec: true,
                        sample_id,
                    } if pid == tid => {
                        // A second exec before the first one's mapping
                        // (lost): the first keeps what /proc says.
                        if let Some(i) = pending.iter().position(|p| p.pid == *pid) {
                            events.push(pending.swap_remove(i).into_event(None));
                        }
                        pending.push(PendingExec {
                            pid: *pid,
                            time: sample_id.time.unwrap_or(0),
                            comm: String::from_utf8_lossy(comm).into_owned(),
                        });
                        continue;
                    }
                    Record::Exit { pid, tid, .. } if pid == tid => {
                        if let Some(i) = pending.iter().position(|p| p.pid == *pid) {
                            events.push(pending.swap_remove(i).into_event(None));
                        }
                    }
                    _ => {
                        if let Some((pid, path)) = mapped_image(&record)
                            && let Some(i) = pending.iter().position(|p| p.pid == pid)
                        {
                            events.push(pending.swap_remove(i).into_event(Some(path)));
                        }
                    }
                }
                if let Some(event) = backend_event(&record, sampling, user_only, root) {
                    events.push(event);
                }
            }
        }
        if how == Drain::Final {
            for pending in &mut self.pending_execs {
                events.extend(pending.drain(..).map(|p| p.into_event(None)));
            }
        }
        if how == Drain::Final
            && let Some(losses) = &mut self.losses
        {
            // Read after the rings were emptied: every loss before now.
            let count = losses.reconcile();
            if count > 0 {
                let now = pmc_linux::system::monotonic_ns();
                events.push((now, BackendEvent::Lost { count }));
            }
        }
        self.has_backlog()
    }
}

#[cfg(test)]
mod tests;
