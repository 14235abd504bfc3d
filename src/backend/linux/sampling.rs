//! Sampling PMCs and the `LOG_PROC*` flags: ring buffers per CPU, drained
//! into the process-wide pmclog sink.
//!
//! perf refuses to mmap an inherited per-task event, so a logging process
//! target gets one event per (thread, CPU), inheriting, with one ring per
//! CPU and the other events of that CPU routed into it (SET_OUTPUT). A
//! drainer thread sweeps every live ring set every few milliseconds and
//! converts perf records to pmclog records: samples to CALLCHAIN, MMAP2 to
//! MAP_IN, exec COMMs to PROCEXEC, FORK to PROCFORK, process EXIT to
//! SYSEXIT (and PROCEXIT with the value under LOG_PROCEXIT), LOST to
//! DROPNOTIFY.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Once, Weak};
use std::time::Duration;

use pmc_linux::attr::{Attr, AttrBit, SampleType};
use pmc_linux::record::{Record, RecordParser, context};
use pmc_linux::ring::RingBuffer;

use crate::Flags;
use crate::log::LogRecord;

/// What a logging event needs beyond counting.
#[derive(Clone, Debug)]
pub(super) struct LogPlan {
    pub(super) pmcid: u32,
    pub(super) flags: Flags,
    pub(super) sampling: bool,
    pub(super) pages: usize,
}

/// A converted record, or a LOG_PROCEXIT step resolved once the batch is
/// in time order (a child's READ value may sit in another CPU's ring than
/// its EXIT).
#[derive(Debug)]
enum Item {
    Log(LogRecord),
    ChildValue { pid: u32, value: u64 },
    ProcExit { pid: u32 },
}

/// The rings of one target and how to turn their records into pmclog.
#[derive(Debug)]
pub(super) struct RingSet {
    plan: LogPlan,
    parser: RecordParser,
    rings: Vec<RingBuffer>,
    /// LOG_PROCEXIT: values of exited child threads by process.
    exited_values: HashMap<u32, u64>,
    /// Records dropped because the log was closed or missing.
    pub(super) discarded: u64,
    /// The attached process and its events, read when it exits.
    root: Option<(u32, Arc<[pmc_linux::event::Event]>)>,
}

static REGISTRY: Mutex<Vec<Weak<Mutex<RingSet>>>> = Mutex::new(Vec::new());

/// Held from taking records out of rings until they are in the log, so a
/// flush or close never overtakes records a concurrent drain holds.
static DRAINING: Mutex<()> = Mutex::new(());

impl RingSet {
    pub(super) fn new(
        plan: LogPlan,
        attr: &Attr,
        rings: Vec<RingBuffer>,
        root: Option<(u32, Arc<[pmc_linux::event::Event]>)>,
    ) -> Arc<Mutex<RingSet>> {
        let set = Arc::new(Mutex::new(RingSet {
            plan,
            parser: RecordParser::for_attr(attr),
            rings,
            exited_values: HashMap::new(),
            discarded: 0,
            root,
        }));
        REGISTRY
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(Arc::downgrade(&set));
        start_drainer();
        set
    }

    /// Converts every published record into pmclog records, in time order.
    pub(super) fn drain(&mut self, out: &mut Vec<(u64, LogRecord)>) {
        let parser = self.parser;
        let plan = self.plan.clone();
        let mut items = Vec::new();
        for ring in &mut self.rings {
            while let Some(bytes) = ring.next_record() {
                let Ok(record) = parser.parse(bytes, 0) else {
                    continue;
                };
                convert(&plan, &record, &mut items);
            }
            ring.release();
        }
        items.sort_by_key(|(t, _)| *t);
        for (t, item) in items {
            match item {
                Item::Log(r) => out.push((t, r)),
                Item::ChildValue { pid, value } => {
                    *self.exited_values.entry(pid).or_default() += value;
                }
                Item::ProcExit { pid } => {
                    // A child's value comes from its READ record (where the
                    // kernel emits them); the attached process's from its
                    // own events, final once it has exited.
                    let value = match (&self.root, self.exited_values.remove(&pid)) {
                        (_, Some(v)) => v,
                        (Some((root, events)), None) if *root == pid => events
                            .iter()
                            .filter_map(|e| e.read_timed().ok())
                            .map(|c| c.value)
                            .sum(),
                        _ => 0,
                    };
                    out.push((
                        t,
                        LogRecord::ProcExit {
                            pmcid: plan.pmcid,
                            pid,
                            value,
                        },
                    ));
                }
            }
        }
    }
}

/// Appends the pmclog form of one perf record.
fn convert(plan: &LogPlan, record: &Record<'_>, items: &mut Vec<(u64, Item)>) {
    let mut out = Sink(items);
    let pmcid = plan.pmcid;
    match record {
        Record::Sample(s) if plan.sampling => {
            let time = s.time().unwrap_or(0);
            let (pid, tid, cpu) = (
                s.pid().unwrap_or(0),
                s.tid().unwrap_or(0),
                s.cpu().unwrap_or(0) as u16,
            );
            let user = s.is_user();
            let mut chain = |userspace: bool, pcs: Vec<u64>| {
                out.push((
                    time,
                    LogRecord::Callchain {
                        pid,
                        tid,
                        pmcid,
                        cpu,
                        userspace,
                        pcs,
                    },
                ));
            };
            let Some(callchain) = s.callchain() else {
                chain(user, vec![s.ip().unwrap_or(0)]);
                return;
            };
            // Split the chain at its context markers.
            let mut kernel = Vec::new();
            let mut userland = Vec::new();
            let mut in_user = user;
            for pc in callchain.iter() {
                match pc {
                    context::KERNEL => in_user = false,
                    context::USER => in_user = true,
                    pc if pc >= context::MAX => {}
                    pc if in_user => userland.push(pc),
                    pc => kernel.push(pc),
                }
            }
            if user {
                chain(true, userland);
            } else {
                chain(false, kernel);
                // USERCALLCHAIN: the user stack of a kernel sample too.
                if plan.flags.contains(Flags::USERCALLCHAIN) && !userland.is_empty() {
                    chain(true, userland);
                }
            }
        }
        // MAP_IN's start is where the object's file offset 0 would be (its
        // load base, as hwpmc logs it): a pc maps to file offset pc - start.
        Record::Mmap2 {
            pid,
            addr,
            pgoff,
            filename,
            sample_id,
            ..
        }
        | Record::Mmap {
            pid,
            addr,
            pgoff,
            filename,
            sample_id,
            ..
        } => out.push((
            sample_id.time.unwrap_or(0),
            LogRecord::MapIn {
                pid: *pid,
                start: addr.wrapping_sub(*pgoff),
                path: String::from_utf8_lossy(filename).into_owned(),
            },
        )),
        Record::Comm {
            pid,
            tid,
            comm,
            exec: true,
            sample_id,
        } if pid == tid => {
            let path = std::fs::read_link(format!("/proc/{pid}/exe"))
                .map(|p| p.display().to_string())
                .unwrap_or_else(|_| String::from_utf8_lossy(comm).into_owned());
            out.push((
                sample_id.time.unwrap_or(0),
                LogRecord::ProcExec {
                    pid: *pid,
                    pmcid,
                    entry: 0,
                    path,
                },
            ));
        }
        Record::Fork {
            pid, ppid, time, ..
        } if pid != ppid => out.push((
            *time,
            LogRecord::ProcFork {
                oldpid: *ppid,
                newpid: *pid,
            },
        )),
        Record::Fork { pid, tid, time, .. } => out.push((
            *time,
            LogRecord::ThrCreate {
                tid: *tid,
                pid: *pid,
                flags: 0,
                name: String::new(),
            },
        )),
        Record::Read {
            pid,
            values,
            sample_id,
            ..
        } => {
            let value: u64 = values.values().map(|v| v.value).sum();
            out.0.push((
                sample_id.time.unwrap_or(0),
                Item::ChildValue { pid: *pid, value },
            ));
        }
        Record::Exit { pid, tid, time, .. } if pid == tid => {
            if plan.flags.contains(Flags::LOG_PROCEXIT) {
                out.0.push((*time, Item::ProcExit { pid: *pid }));
            }
            if plan.sampling {
                out.push((*time, LogRecord::SysExit { pid: *pid }));
            }
        }
        Record::Exit { tid, time, .. } if plan.sampling => {
            out.push((*time, LogRecord::ThrExit { tid: *tid }));
        }
        Record::Lost {
            lost, sample_id, ..
        } => out.push((
            sample_id.time.unwrap_or(0),
            LogRecord::Dropnotify {
                lost: u32::try_from(*lost).unwrap_or(u32::MAX),
            },
        )),
        Record::LostSamples { lost, sample_id } => out.push((
            sample_id.time.unwrap_or(0),
            LogRecord::Dropnotify {
                lost: u32::try_from(*lost).unwrap_or(u32::MAX),
            },
        )),
        _ => {}
    }
}

/// Pushes log records as items.
struct Sink<'a>(&'a mut Vec<(u64, Item)>);

impl Sink<'_> {
    fn push(&mut self, (t, r): (u64, LogRecord)) {
        self.0.push((t, Item::Log(r)));
    }
}

/// Drains every live ring set into the log (or discards, without one).
pub(crate) fn drain_all() {
    let _draining = DRAINING.lock().unwrap_or_else(|p| p.into_inner());
    let sets: Vec<Arc<Mutex<RingSet>>> = {
        let mut reg = REGISTRY.lock().unwrap_or_else(|p| p.into_inner());
        reg.retain(|w| w.strong_count() > 0);
        reg.iter().filter_map(Weak::upgrade).collect()
    };
    let mut out = Vec::new();
    for set in &sets {
        let mut s = set.lock().unwrap_or_else(|p| p.into_inner());
        let before = out.len();
        s.drain(&mut out);
        if !crate::log::sink::is_configured() {
            s.discarded += (out.len() - before) as u64;
        }
    }
    if out.is_empty() || !crate::log::sink::is_configured() {
        return;
    }
    // Per-CPU rings interleave: put the batch in time order.
    out.sort_by_key(|(t, _)| *t);
    for (t, r) in &out {
        // A log closed meanwhile loses the batch, as hwpmc does.
        let _ = crate::log::sink::write_at(r, *t);
    }
}

/// Drains one set now (at stop and release, so nothing is lost).
pub(super) fn drain_set(set: &Arc<Mutex<RingSet>>) {
    let _draining = DRAINING.lock().unwrap_or_else(|p| p.into_inner());
    let mut out = Vec::new();
    set.lock()
        .unwrap_or_else(|p| p.into_inner())
        .drain(&mut out);
    out.sort_by_key(|(t, _)| *t);
    if crate::log::sink::is_configured() {
        for (t, r) in &out {
            let _ = crate::log::sink::write_at(r, *t);
        }
    }
}

/// Starts the thread that sweeps rings every 10 ms (once per process).
fn start_drainer() {
    static START: Once = Once::new();
    START.call_once(|| {
        let _ = std::thread::Builder::new()
            .name("pmc-log-drain".into())
            .spawn(|| {
                loop {
                    std::thread::sleep(Duration::from_millis(10));
                    drain_all();
                }
            });
    });
}

/// The sampling/log bits of a logging attr: sample fields, side-band
/// records, the monotonic clock.
pub(super) fn logging_attr(mut a: Attr, flags: Flags, sampling: bool) -> Attr {
    let mut t = SampleType::TID | SampleType::TIME | SampleType::CPU | SampleType::ID;
    if sampling {
        t |= SampleType::IP | SampleType::PERIOD;
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
