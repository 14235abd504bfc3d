//! Sampling PMCs and the `LOG_PROC*` flags: ring buffers per CPU, drained
//! into the process-wide pmclog sink.
//!
//! perf refuses to mmap an inherited per-task event, so a logging process
//! target gets one event per (thread, CPU), inheriting, with one ring per
//! CPU and the other events of that CPU routed into it (SET_OUTPUT). A
//! collector thread copies the rings into their sets' intakes every 5 ms, and
//! a drainer thread (`drainer.rs`) sweeps every live ring set every 10 ms
//! while one exists (both parked otherwise) and converts perf records to pmclog
//! records: samples to CALLCHAIN, MMAP2 to MAP_IN, exec COMMs to PROCEXEC,
//! FORK to PROCFORK, process EXIT to SYSEXIT (and PROCEXIT with the value
//! under LOG_PROCEXIT), LOST to DROPNOTIFY (made exact at the final
//! drains by the events' `PERF_FORMAT_LOST` counts, `lost.rs`).
//!
//! Per-thread values (LOG_PROCCSW, and LOG_PROCEXIT for descendants) come
//! from sampling siblings grouped under each counter (`SliceSiblings`):
//! perf has no record that carries a counter's value at a context switch
//! or an exit, but a sibling that samples with `PERF_SAMPLE_READ` of the
//! group reads the counter at exactly that moment.

mod drainer;
mod lost;
mod procfs;

pub(super) use lost::for_this_kernel;

use std::sync::{Arc, Mutex, Weak};

use pmc_linux::attr::{Attr, AttrBit, EventConfig, ReadFormat, SampleType, Software};
use pmc_linux::record::{Record, RecordParser, Sample, context, kind};
use pmc_linux::ring::RingBuffer;

use crate::backend::event::{BackendEvent, Callchain};
use crate::log::LogRecord;
use crate::log::translate::{Rules, Translator};
use crate::{Flags, Mode, Result};
use drainer::Drainer;
use lost::RingLosses;
use procfs::{ProcMappings, exec_addresses};

/// The siblings that sample a counter's per-thread value, each reading the
/// group (the counter leads it) when it fires:
/// - `switch`: the `context-switches` software event, period 1: fires as a
///   thread is switched out, so consecutive values of one (thread, CPU)
///   differ by that slice's count (hwpmc's PROCCSW);
/// - `exit`: the `sched:sched_process_exit` tracepoint, which fires in the
///   exiting thread before its counters are torn down: its last slice.
///
/// A thread's value is the sum of its slices, a process's the sum of its
/// threads', exact per process even where children inherit the counter.
/// Both fire in the kernel, so they need `perf_event_paranoid` <= 1 (or
/// CAP_PERFMON) even for a user-mode counter.
#[derive(Clone, Debug)]
pub(super) struct SliceSiblings {
    pub(super) switch: Attr,
    pub(super) exit: Option<Attr>,
}

impl SliceSiblings {
    /// Whether a PMC needs them: hwpmc logs PROCCSW for counting process
    /// PMCs only, and per-process exit values matter once descendants are
    /// followed.
    pub(super) fn wanted(mode: Mode, flags: Flags) -> bool {
        mode == Mode::TC
            && (flags.contains(Flags::LOG_PROCCSW)
                || flags.contains(Flags::LOG_PROCEXIT | Flags::DESCENDANTS))
    }

    /// Siblings for `leader` (a logging counter attr); `exit_tracepoint` is
    /// the id of `sched:sched_process_exit` when exit values are wanted.
    pub(super) fn new(leader: &Attr, exit_tracepoint: Option<u64>) -> SliceSiblings {
        let sibling = |event| {
            Attr::new(event)
                .inherit(leader.is_set(AttrBit::INHERIT))
                .inherit_thread(leader.is_set(AttrBit::INHERIT_THREAD))
                .sample_period(1)
                // The leader's sample_id fields, so every record in the
                // shared ring ends with the same trailer.
                .sample_type(leader.get_sample_type() | SampleType::READ)
                .read_format(ReadFormat::GROUP)
                .set(AttrBit::SAMPLE_ID_ALL, 1)
                .set(AttrBit::USE_CLOCKID, 1)
                .clockid(leader.get_clockid())
        };
        SliceSiblings {
            switch: sibling(EventConfig::Software(Software::ContextSwitches)),
            exit: exit_tracepoint.map(|id| sibling(EventConfig::Tracepoint(id))),
        }
    }

    /// The attrs to open under each counter, in group order.
    pub(super) fn attrs(&self) -> impl Iterator<Item = &Attr> {
        std::iter::once(&self.switch).chain(self.exit.as_ref())
    }
}

/// What a logging event needs beyond counting.
#[derive(Clone, Debug)]
pub(super) struct LogPlan {
    pub(super) pmcid: u32,
    pub(super) flags: Flags,
    pub(super) sampling: bool,
    pub(super) pages: usize,
}

/// The rings of one target and how to turn their records into pmclog.
#[derive(Debug)]
pub(super) struct RingSet {
    plan: LogPlan,
    parser: RecordParser,
    /// The rings and what the collector took from them, under a lock of
    /// their own: the collector never waits for a decode.
    intake: Arc<Mutex<Intake>>,
    /// hwpmc's logging rules and their state for this PMC.
    translator: Translator,
    /// Records dropped because no log was configured (those dropped
    /// after a close are the translator's).
    pub(super) discarded: u64,
    /// The attached process and its events, read when it exits.
    root: Option<(u32, Arc<[pmc_linux::event::Event]>)>,
    /// Parses the slice siblings' samples (their sample type adds READ).
    slice_parser: Option<RecordParser>,
    /// When the set was made (the attach): the timestamp of the initial
    /// MAP_INs, which precede every sample of the set.
    attached_at: u64,
    /// Each ring's losses, reconciled with the events' `PERF_FORMAT_LOST`
    /// counts at the final drains (`None`: opened without it).
    losses: Option<RingLosses>,
    /// The initial mappings read when the set was made, logged by the
    /// first drain.
    initial: Vec<(u64, BackendEvent)>,
    /// Each ring's records moved from the intake, not yet decoded.
    spools: Vec<Spool>,
}

/// A set's rings and each one's records taken out by the collector.
#[derive(Debug)]
struct Intake {
    rings: Vec<RingBuffer>,
    taken: Vec<Vec<u8>>,
}

impl Intake {
    /// Empties the rings, each ring's records in one copy (a ring whose
    /// records wait past [`SPOOL_LIMIT`] is left to fill: the kernel then
    /// drops samples and says so with a LOST record).
    fn collect(&mut self) {
        for (ring, taken) in self.rings.iter_mut().zip(&mut self.taken) {
            if taken.len() < SPOOL_LIMIT {
                ring.take_all_into(taken);
            }
        }
    }
}

/// The intakes of the live sets, for the collector.
static INTAKES: Mutex<Vec<Weak<Mutex<Intake>>>> = Mutex::new(Vec::new());

/// The data pages of a ring when the user set none: 512 KiB (perf's
/// default, within the default `perf_event_mlock_kb` on every CPU), four
/// times that where no mlock limit applies (CAP_IPC_LOCK).
pub(super) fn default_ring_pages() -> usize {
    use pmc_linux::system::{CAP_IPC_LOCK, has_capability};
    if has_capability(CAP_IPC_LOCK) {
        4 * crate::log::sink::DEFAULT_BUFFER_PAGES
    } else {
        crate::log::sink::DEFAULT_BUFFER_PAGES
    }
}

/// The most a ring's spool holds before the ring is left to fill (and the
/// kernel to drop samples): about 4 s of 127-frame samples on a busy CPU,
/// for a drainer that falls that far behind.
const SPOOL_LIMIT: usize = 64 << 20;

/// The sample time a sweep decodes before it empties the rings again: a
/// drainer short of CPU (a debug build on a loaded machine decodes at a
/// fraction of the rate samples arrive) still empties the rings every few
/// milliseconds, and its backlog waits in memory instead of being dropped
/// by the kernel, as `perf record` copies the raw rings to its file.
const DECODE_WINDOW_NS: u64 = 5_000_000;

/// Records copied out of a ring, decoded from `next` on.
#[derive(Debug, Default)]
struct Spool {
    bytes: Vec<u8>,
    next: usize,
}

impl Spool {
    /// The next whole record (header included), if any.
    fn peek(&self) -> Option<&[u8]> {
        let rest = self.bytes.get(self.next..)?;
        let size = usize::from(u16::from_ne_bytes([*rest.get(6)?, *rest.get(7)?]));
        if size < 8 {
            return None;
        }
        rest.get(..size)
    }

    /// Drops what is left when no whole record is (a corrupt header; the
    /// kernel publishes whole records only), rather than stall on it.
    fn end_if_corrupt(&mut self) {
        if self.peek().is_none() {
            self.bytes.clear();
            self.next = 0;
        }
    }

    /// Forgets the decoded records.
    fn compact(&mut self) {
        self.bytes.drain(..self.next.min(self.bytes.len()));
        self.next = 0;
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

static REGISTRY: Mutex<Vec<Weak<Mutex<RingSet>>>> = Mutex::new(Vec::new());

/// Sweeps [`REGISTRY`] while it holds a live set.
static DRAINER: Drainer = Drainer::new();

/// Empties the rings of [`REGISTRY`]'s sets into their spools while one
/// lives.
static COLLECTOR: Drainer = Drainer::every(drainer::COLLECT_INTERVAL);

impl RingSet {
    /// A set for `rings`, fed by `writers`; `attr` is the events' attr
    /// (their read_format as opened shapes the READ payloads).
    pub(super) fn new(
        plan: LogPlan,
        attr: &Attr,
        rings: Vec<RingBuffer>,
        writers: RingEvents,
        root: Option<(u32, Arc<[pmc_linux::event::Event]>)>,
        slices: Option<&SliceSiblings>,
    ) -> Result<Arc<Mutex<RingSet>>> {
        // The parser follows the read_format the kernel took (without
        // PERF_FORMAT_LOST on kernels before 6.0).
        let attr = match writers.events.first() {
            Some(e) => attr.read_format(e.read_format()),
            None => *attr,
        };
        let losses = RingLosses::new(writers.events, writers.ring_of, rings.len());
        let mut translator = Translator::new(Rules {
            pmcid: plan.pmcid,
            flags: plan.flags,
            sampling: plan.sampling,
            kernel_samples: !attr.is_set(AttrBit::EXCLUDE_KERNEL),
            system: root.is_none(),
            exit_slices: slices.is_some_and(|s| s.exit.is_some()),
        });
        if let Some((pid, _)) = &root
            && plan.sampling
        {
            translator.attached(std::iter::once(*pid));
            if plan.flags.contains(Flags::DESCENDANTS) {
                let root = i32::try_from(*pid).unwrap_or(i32::MAX);
                translator.attached(
                    pmc_linux::system::descendants_of(root)
                        .into_iter()
                        .filter_map(|p| u32::try_from(p).ok()),
                );
            }
        }
        let attached_at = crate::log::sink::now();
        // Read now, before the events are enabled, as hwpmc logs them at
        // attach and start: the kernel's and every process's mappings take
        // a system PMC's first drain 100+ ms (all of /proc/kallsyms and
        // /proc/*/maps), long enough for the rings to overflow.
        let initial = if crate::log::sink::is_configured() {
            translator.initial_mappings(attached_at, &ProcMappings)
        } else {
            Vec::new()
        };
        let spools = rings.iter().map(|_| Spool::default()).collect();
        let intake = Arc::new(Mutex::new(Intake {
            taken: rings.iter().map(|_| Vec::new()).collect(),
            rings,
        }));
        {
            let mut intakes = INTAKES.lock().unwrap_or_else(|p| p.into_inner());
            intakes.retain(|w| w.strong_count() > 0);
            intakes.push(Arc::downgrade(&intake));
        }
        let set = Arc::new(Mutex::new(RingSet {
            parser: RecordParser::for_attr(&attr),
            intake,
            translator,
            discarded: 0,
            root,
            slice_parser: slices.map(|s| RecordParser::for_attr(&s.switch)),
            attached_at,
            losses,
            initial,
            spools,
            plan,
        }));
        REGISTRY
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(Arc::downgrade(&set));
        // A set that cannot be drained would lose samples: an error (the
        // set is dropped, and with it its rings).
        DRAINER
            .registered(drainer::spawn_thread, sweep_all)
            .map_err(|e| drainer::spawn_error(&e))?;
        COLLECTOR
            .registered(drainer::spawn_collector, collect_all)
            .map_err(|e| drainer::collector_spawn_error(&e))?;
        Ok(set)
    }

    /// Empties the rings and moves what the collector took into the
    /// spools (a spool past [`SPOOL_LIMIT`] leaves it in the intake).
    fn collect(&mut self) {
        let mut intake = self.intake.lock().unwrap_or_else(|p| p.into_inner());
        intake.collect();
        for (spool, taken) in self.spools.iter_mut().zip(&mut intake.taken) {
            spool.compact();
            if spool.bytes.is_empty() {
                std::mem::swap(&mut spool.bytes, taken);
            } else if spool.bytes.len() < SPOOL_LIMIT {
                spool.bytes.append(taken);
            }
        }
    }

    /// Whether records wait in the spools, not yet decoded.
    fn has_backlog(&self) -> bool {
        self.spools.iter().any(|s| s.peek().is_some())
    }

    /// Converts the published records into pmclog records, in time order:
    /// every one for a `last` drain (stop, release, log flush or close),
    /// which also reports the losses no LOST record told yet; a window of
    /// [`DECODE_WINDOW_NS`] for the drainer's sweeps. Returns whether
    /// records are left to decode.
    pub(super) fn drain(&mut self, out: &mut Vec<(u64, LogRecord)>, last: bool) -> bool {
        let mut events = std::mem::take(&mut self.initial);
        if crate::log::sink::is_configured() {
            // Stamped with the attach, before every record of the set.
            events.extend(
                self.translator
                    .initial_mappings(self.attached_at, &ProcMappings),
            );
        }
        self.collect();
        let parser = self.parser;
        let slice_parser = self.slice_parser;
        let rules = self.translator.rules();
        // The attached process's value at its exit, where neither exit
        // slices nor a READ record give it: its events, final once it
        // has exited.
        let root = self
            .root
            .as_ref()
            .filter(|_| rules.flags.contains(Flags::LOG_PROCEXIT) && !rules.exit_slices);
        // A sweep decodes one window of sample time and leaves the rest
        // for the next (which empties the rings again first); a last
        // drain decodes everything.
        let cutoff = if last {
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
            while let Some(size) = spool.peek().map(<[u8]>::len) {
                let bytes = &spool.bytes[spool.next..spool.next + size];
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
                if let Some(event) = neutral(&record, rules.sampling, root) {
                    events.push(event);
                }
            }
            spool.end_if_corrupt();
        }
        if last && let Some(losses) = &mut self.losses {
            // Read after the rings were emptied: every loss before now.
            let count = losses.reconcile();
            if count > 0 {
                events.push((crate::log::sink::now(), BackendEvent::Lost { count }));
            }
        }
        self.translator.translate(events, out);
        self.has_backlog()
    }
}

/// The neutral form of one perf record (`None`: nothing to log).
fn neutral(
    record: &Record<'_>,
    sampling: bool,
    root: Option<&(u32, Arc<[pmc_linux::event::Event]>)>,
) -> Option<(u64, BackendEvent)> {
    Some(match record {
        Record::Sample(s) if sampling => {
            let user = s.is_user();
            let callchain = s.callchain().map(|pcs| {
                // Split the chain at its context markers; frames before
                // the first marker are in the sample's own mode.
                let mut chain = Callchain::default();
                let mut in_user = user;
                for pc in pcs.iter() {
                    match pc {
                        context::KERNEL => in_user = false,
                        context::USER => in_user = true,
                        pc if pc >= context::MAX => {}
                        pc if in_user => chain.user.push(pc),
                        pc => chain.kernel.push(pc),
                    }
                }
                chain
            });
            (
                s.time().unwrap_or(0),
                BackendEvent::Sample {
                    pid: s.pid().unwrap_or(0),
                    tid: s.tid().unwrap_or(0),
                    cpu: s.cpu().unwrap_or(0),
                    user,
                    pc: s.ip().unwrap_or(0),
                    callchain,
                },
            )
        }
        // MAP_IN's start is the executable mapping's start address, as hwpmc
        // logs it (hwpmc_mod.c `pmc_log_process_mappings`: `entry->start`);
        // perf reports executable mmaps only (`mmap_data` is off).
        Record::Mmap2 {
            pid,
            addr,
            filename,
            sample_id,
            ..
        }
        | Record::Mmap {
            pid,
            addr,
            filename,
            sample_id,
            ..
        } => (
            sample_id.time.unwrap_or(0),
            BackendEvent::Mapping {
                pid: *pid,
                start: *addr,
                path: String::from_utf8_lossy(filename).into_owned(),
            },
        ),
        Record::Comm {
            pid,
            tid,
            comm,
            exec: true,
            sample_id,
        } if pid == tid => {
            let path = super::executable_path(*pid)
                .unwrap_or_else(|| String::from_utf8_lossy(comm).into_owned());
            let addresses = exec_addresses(*pid);
            (
                sample_id.time.unwrap_or(0),
                BackendEvent::Exec {
                    pid: *pid,
                    path,
                    base: addresses.base,
                    dynaddr: addresses.dynaddr,
                },
            )
        }
        Record::Fork {
            pid, ppid, time, ..
        } if pid != ppid => (
            *time,
            BackendEvent::Fork {
                parent: *ppid,
                child: *pid,
            },
        ),
        Record::Fork { pid, tid, time, .. } => (
            *time,
            BackendEvent::ThreadCreate {
                pid: *pid,
                tid: *tid,
            },
        ),
        // A child's value as it exits (INHERIT_STAT), possibly in another
        // CPU's ring than its EXIT.
        Record::Read {
            pid,
            values,
            sample_id,
            ..
        } => (
            sample_id.time.unwrap_or(0),
            BackendEvent::ExitValue {
                pid: *pid,
                value: values.values().map(|v| v.value).sum(),
            },
        ),
        Record::Exit { pid, tid, time, .. } if pid == tid => (
            *time,
            BackendEvent::ProcessExit {
                pid: *pid,
                value: root.filter(|(r, _)| r == pid).map(|(_, events)| {
                    events
                        .iter()
                        .filter_map(|e| e.read_timed().ok())
                        .map(|c| c.value)
                        .sum()
                }),
            },
        ),
        Record::Exit { pid, tid, time, .. } => (
            *time,
            BackendEvent::ThreadExit {
                pid: *pid,
                tid: *tid,
            },
        ),
        Record::Lost {
            lost, sample_id, ..
        }
        | Record::LostSamples { lost, sample_id } => (
            sample_id.time.unwrap_or(0),
            BackendEvent::Lost { count: *lost },
        ),
        _ => return None,
    })
}

/// The slice a sibling's sample reports: the group's first value is the
/// counter's total on (tid, cpu).
fn slice_event(s: &Sample<'_>) -> Option<(u64, BackendEvent)> {
    let total = s.read()?.values().next()?.value;
    Some((
        s.time().unwrap_or(0),
        BackendEvent::Slice {
            pid: s.pid()?,
            tid: s.tid()?,
            cpu: s.cpu().unwrap_or(0),
            total,
        },
    ))
}

/// Stops every counter that writes into the log, as hwpmc stops the
/// running `PMC_F_NEEDS_LOGFILE` PMCs when their log is deconfigured: the
/// events of process targets are disabled, and whatever any set still
/// produces is discarded until its PMC is stopped (`drain_set`), after
/// which a start writes into the log configured then. The `Pmc` itself
/// reads Running until its owner stops it.
pub(crate) fn stop_all() -> Vec<u32> {
    let mut stopped = Vec::new();
    let sets: Vec<Arc<Mutex<RingSet>>> = {
        let reg = REGISTRY.lock().unwrap_or_else(|p| p.into_inner());
        reg.iter().filter_map(Weak::upgrade).collect()
    };
    for set in &sets {
        let mut s = set.lock().unwrap_or_else(|p| p.into_inner());
        s.translator.log_closed();
        stopped.push(s.plan.pmcid);
        if let Some((_, events)) = &s.root {
            for e in events.iter() {
                let _ = e.disable();
            }
        }
    }
    stopped
}

/// Drains every live ring set into the log (or discards, without one) for
/// a log flush or close, with exact loss counts; returns how many sets
/// there were.
pub(crate) fn drain_all() -> usize {
    drain_every_set(true).0
}

/// The drainer's periodic sweep: [`drain_all`] without reading the
/// events' loss counts (a syscall per event every sweep; the LOST records
/// carry the running figure and the final drains settle it), a window at a
/// time until no backlog is left. The drain lock is taken per window, so a
/// stop, flush or close waits for one window at most.
fn sweep_all() -> usize {
    loop {
        let (live, backlog) = drain_every_set(false);
        if !backlog {
            return live;
        }
    }
}

/// The collector's sweep: every live set's rings into its intake; returns
/// how many there were. Without the drain lock, and never waiting for a
/// decode (a set's lock): the records stay in their set's intake until a
/// drain moves and decodes them, and the final drains (flush, close, stop)
/// collect and decode everything.
fn collect_all() -> usize {
    let intakes: Vec<Arc<Mutex<Intake>>> = {
        let reg = INTAKES.lock().unwrap_or_else(|p| p.into_inner());
        reg.iter().filter_map(Weak::upgrade).collect()
    };
    for intake in &intakes {
        intake.lock().unwrap_or_else(|p| p.into_inner()).collect();
    }
    intakes.len()
}

/// Drains every live set; returns how many there were and whether records
/// are left to decode.
fn drain_every_set(last: bool) -> (usize, bool) {
    let _draining = crate::log::sink::draining();
    let sets: Vec<Arc<Mutex<RingSet>>> = {
        let mut reg = REGISTRY.lock().unwrap_or_else(|p| p.into_inner());
        reg.retain(|w| w.strong_count() > 0);
        reg.iter().filter_map(Weak::upgrade).collect()
    };
    let mut out = Vec::new();
    let mut backlog = false;
    for set in &sets {
        let mut s = set.lock().unwrap_or_else(|p| p.into_inner());
        let before = out.len();
        backlog |= s.drain(&mut out, last);
        if !crate::log::sink::is_configured() {
            s.discarded += (out.len() - before) as u64;
        }
    }
    crate::log::sink::write_batch(out);
    (sets.len(), backlog)
}

/// Drains one set now (at stop and release, so nothing is lost).
pub(super) fn drain_set(set: &Arc<Mutex<RingSet>>) {
    let _draining = crate::log::sink::draining();
    let mut out = Vec::new();
    {
        let mut s = set.lock().unwrap_or_else(|p| p.into_inner());
        s.drain(&mut out, true);
        // Called as the PMC stops: a later start logs again.
        s.translator.stopped();
    }
    crate::log::sink::write_batch(out);
}

/// The sampling/log bits of a logging attr: sample fields, side-band
/// records, the monotonic clock, and for a sampling event its lost count
/// (`PERF_FORMAT_LOST`, dropped at open where the kernel lacks it:
/// [`for_this_kernel`]).
pub(super) fn logging_attr(mut a: Attr, flags: Flags, sampling: bool) -> Attr {
    let mut t = SampleType::TID | SampleType::TIME | SampleType::CPU | SampleType::ID;
    if sampling {
        t |= SampleType::IP | SampleType::PERIOD;
        a = a.read_format(a.get_read_format() | ReadFormat::LOST);
        if flags.contains(Flags::CALLCHAIN) {
            t |= SampleType::CALLCHAIN;
            if let Some(max) = pmc_linux::system::max_stack() {
                a = a.sample_max_stack(u16::try_from(max).unwrap_or(u16::MAX));
            }
        }
    }
    a = a
        .sample_type(t)
        .set(AttrBit::SAMPLE_ID_ALL, 1)
        .set(AttrBit::USE_CLOCKID, 1)
        .clockid(libc::CLOCK_MONOTONIC)
        .set(AttrBit::TASK, 1)
        .set(AttrBit::COMM, 1)
        .set(AttrBit::COMM_EXEC, 1)
        .set(AttrBit::MMAP2, 1)
        .set(AttrBit::MMAP, 1);
    if flags.contains(Flags::LOG_PROCEXIT) {
        a = a.set(AttrBit::INHERIT_STAT, 1);
    }
    a
}
