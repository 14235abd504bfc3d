//! The unwinding stage: samples' copied user stacks become their user call
//! chains on a thread of its own, behind the drain.
//!
//! The drain decodes what the rings held and hands each batch that
//! carries user stacks to the stage; it translates and logs the batches
//! the stage gave back, and never waits for an unwind but at a final
//! drain (stop, flush, close), which must log everything. An object read
//! for the first time (a compiler's CFI is tens of MB) or a slow
//! embedder's unwinder then delays the chains, not the emptying of the
//! rings.
//!
//! The queue is bounded in stack bytes: a sample that does not fit is
//! dropped and counted, logged as a DROPNOTIFY like the kernel's losses,
//! so a stage that falls behind costs samples, said in the log, never
//! unbounded memory. Batches go through the stage in order, one source's
//! included: the unwinder sees each process's mappings before the samples
//! that need them, and the translator a source's events in order.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, MutexGuard};

use crate::backend::event::BackendEvent;
use crate::sample::{Mapping, StackSample, StackUnwinder};

/// The stack bytes the stage's queue holds at most: a stage stalled for
/// about half a second at 15 kHz of 8 KiB stacks on each of two busy CPUs.
pub(super) const QUEUE_BYTES: usize = 64 << 20;

/// The unwinding thread's name.
const THREAD_NAME: &str = "pmc-log-unwind";

type Shared = Arc<Mutex<Option<Box<dyn StackUnwinder>>>>;

/// One source's events, in time order, through the stage.
#[derive(Debug)]
pub(super) struct Batch {
    /// The source's key.
    pub(super) key: u64,
    pub(super) events: Vec<(u64, BackendEvent)>,
    /// The stack bytes it holds until unwound.
    stack_bytes: usize,
}

/// The owner's unwinder and the thread that runs it (under the drain
/// lock).
#[derive(Debug)]
pub(super) struct Unwinding {
    unwinder: Shared,
    /// `None` until a batch with stacks needs it, and where the thread
    /// cannot be started (then batches are unwound where they are
    /// drained).
    stage: Option<Stage>,
    /// Batches handed to the thread and not yet received back.
    in_flight: usize,
    /// Batches received back, not yet translated.
    done: Vec<Batch>,
    /// The stack bytes the queue may hold.
    limit: usize,
}

#[derive(Debug)]
struct Stage {
    to: mpsc::Sender<Batch>,
    back: mpsc::Receiver<Batch>,
    /// Stack bytes queued or being unwound.
    queued: Arc<AtomicUsize>,
}

impl Unwinding {
    pub(super) fn new(unwinder: Option<Box<dyn StackUnwinder>>) -> Unwinding {
        Unwinding {
            unwinder: Arc::new(Mutex::new(unwinder)),
            stage: None,
            in_flight: 0,
            done: Vec::new(),
            limit: QUEUE_BYTES,
        }
    }

    fn unwinder(&self) -> MutexGuard<'_, Option<Box<dyn StackUnwinder>>> {
        lock(&self.unwinder)
    }

    /// Replaces the unwinder once every batch handed to the old one is
    /// back (kept for the next translation).
    pub(super) fn replace(&mut self, unwinder: Option<Box<dyn StackUnwinder>>) {
        self.wait_for_all();
        *self.unwinder() = unwinder;
    }

    /// A source's drained events: given back at once when nothing needs
    /// the thread (no stacks, nothing of the source ahead of them), the
    /// process events told to the unwinder; else queued, the samples past
    /// the bound dropped and counted (`None`: they come back from
    /// [`Unwinding::finished`]).
    pub(super) fn submit(
        &mut self,
        key: u64,
        mut events: Vec<(u64, BackendEvent)>,
    ) -> Option<Vec<(u64, BackendEvent)>> {
        let has_stacks = events.iter().any(|(_, e)| {
            matches!(
                e,
                BackendEvent::Sample {
                    user_stack: Some(_),
                    ..
                }
            )
        });
        if self.in_flight == 0 && (!has_stacks || self.unwinder().is_none()) {
            unwind_user_stacks(&mut self.unwinder(), &mut events);
            return Some(events);
        }
        if self.stage.is_none() {
            self.stage = Stage::start(&self.unwinder);
        }
        let Some(stage) = &self.stage else {
            // No thread: unwound here, as before the stage existed.
            unwind_user_stacks(&mut self.unwinder(), &mut events);
            return Some(events);
        };
        events.sort_by_key(|(t, _)| *t);
        let stack_bytes = admit(&mut events, &stage.queued, self.limit);
        let batch = Batch {
            key,
            events,
            stack_bytes,
        };
        match stage.to.send(batch) {
            Ok(()) => {
                self.in_flight += 1;
                None
            }
            // The thread is gone (a panic outside the unwinder, which
            // `unwind_user_stacks` catches): unwound here.
            Err(mpsc::SendError(mut batch)) => {
                stage.queued.fetch_sub(batch.stack_bytes, Ordering::Relaxed);
                self.stage = None;
                unwind_user_stacks(&mut self.unwinder(), &mut batch.events);
                Some(batch.events)
            }
        }
    }

    /// The batches unwound so far (`all`: every one handed out, waiting
    /// for those still being unwound), in the order they were handed out.
    pub(super) fn finished(&mut self, all: bool) -> Vec<Batch> {
        if all {
            self.wait_for_all();
        } else if let Some(stage) = &self.stage {
            while let Ok(batch) = stage.back.try_recv() {
                self.in_flight -= 1;
                self.done.push(batch);
            }
        }
        std::mem::take(&mut self.done)
    }

    fn wait_for_all(&mut self) {
        while self.in_flight > 0 {
            let Some(stage) = &self.stage else {
                self.in_flight = 0;
                break;
            };
            match stage.back.recv() {
                Ok(batch) => {
                    self.in_flight -= 1;
                    self.done.push(batch);
                }
                // The thread is gone with batches in it (a panic outside
                // the unwinder): they are lost.
                Err(mpsc::RecvError) => {
                    self.stage = None;
                    self.in_flight = 0;
                }
            }
        }
    }

    /// Stack bytes queued or being unwound now.
    #[cfg(test)]
    pub(super) fn queued_bytes(&self) -> usize {
        self.stage
            .as_ref()
            .map_or(0, |s| s.queued.load(Ordering::Relaxed))
    }

    /// A smaller bound, for tests.
    #[cfg(test)]
    pub(super) fn set_limit(&mut self, bytes: usize) {
        self.limit = bytes;
    }
}

impl Stage {
    /// Starts the thread; `None` if it cannot be started.
    fn start(unwinder: &Shared) -> Option<Stage> {
        let (to, from_drain) = mpsc::channel::<Batch>();
        let (to_drain, back) = mpsc::channel::<Batch>();
        let queued = Arc::new(AtomicUsize::new(0));
        let (shared, count) = (Arc::clone(unwinder), Arc::clone(&queued));
        std::thread::Builder::new()
            .name(THREAD_NAME.into())
            .spawn(move || {
                // Ends when the owner (the sending side) is gone.
                while let Ok(mut batch) = from_drain.recv() {
                    unwind_user_stacks(&mut lock(&shared), &mut batch.events);
                    count.fetch_sub(batch.stack_bytes, Ordering::Relaxed);
                    if to_drain.send(batch).is_err() {
                        return;
                    }
                }
            })
            .ok()?;
        Some(Stage { to, back, queued })
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Counts the stack bytes of `events` (in time order) into `queued` while
/// they fit under `limit`; the samples with stacks past it are dropped and
/// one [`BackendEvent::Lost`] at the first one's time counts them. Returns
/// the bytes admitted.
fn admit(events: &mut Vec<(u64, BackendEvent)>, queued: &AtomicUsize, limit: usize) -> usize {
    let mut admitted = 0;
    let mut dropped: Option<(u64, u64)> = None;
    let base = queued.load(Ordering::Relaxed);
    events.retain(|(t, e)| {
        let BackendEvent::Sample {
            user_stack: Some(stack),
            ..
        } = e
        else {
            return true;
        };
        let bytes = stack.bytes.len().max(1);
        if base + admitted + bytes <= limit {
            admitted += bytes;
            return true;
        }
        let (_, count) = dropped.get_or_insert((*t, 0));
        *count += 1;
        false
    });
    if let Some((time, count)) = dropped {
        let at = events.partition_point(|(t, _)| *t <= time);
        events.insert(at, (time, BackendEvent::Lost { count }));
    }
    queued.fetch_add(admitted, Ordering::Relaxed);
    admitted
}

/// The stack-unwinding pass before the logging rules: the unwinder follows
/// each process's mappings, and a sample's copied user stack becomes its
/// user call chain (the stack bytes are dropped either way: the log keeps
/// chains, not stacks).
///
/// An unwinder that panics (an embedder's, or a bug in ours) is dropped
/// and never called again, its state being unknown; the batch it was in
/// is kept whole — every sample is logged, those not yet unwound with
/// their kernel-made chain only — so a panic costs user frames, never
/// samples or process records.
pub(super) fn unwind_user_stacks(
    unwinder: &mut Option<Box<dyn StackUnwinder>>,
    events: &mut [(u64, BackendEvent)],
) {
    // The translator sorts the same way (stable, by time): the unwinder
    // sees a mapping before the samples that need it.
    events.sort_by_key(|(t, _)| *t);
    let pass = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        unwind_in_order(unwinder, events);
    }));
    if pass.is_err() {
        *unwinder = None;
        for (_, event) in events.iter_mut() {
            if let BackendEvent::Sample { user_stack, .. } = event {
                *user_stack = None;
            }
        }
    }
}

fn unwind_in_order(
    unwinder: &mut Option<Box<dyn StackUnwinder>>,
    events: &mut [(u64, BackendEvent)],
) {
    for (time, event) in events.iter_mut() {
        match event {
            BackendEvent::Sample {
                pid,
                tid,
                callchain,
                user_stack,
                ..
            } => {
                let Some(stack) = user_stack.take() else {
                    continue;
                };
                let Some(u) = unwinder.as_mut() else {
                    continue;
                };
                let frames = u.unwind(&StackSample {
                    pid: *pid,
                    tid: *tid,
                    time: *time,
                    stack: &stack,
                });
                if !frames.is_empty() {
                    callchain.get_or_insert_with(Default::default).user = frames;
                }
            }
            _ => {
                let Some(u) = unwinder.as_mut() else {
                    continue;
                };
                match event {
                    BackendEvent::Mapping {
                        pid,
                        start,
                        len,
                        pgoff,
                        path,
                    } if *pid != u32::MAX => u.mapping(
                        *pid,
                        &Mapping {
                            start: *start,
                            len: *len,
                            pgoff: *pgoff,
                            path: path.clone(),
                        },
                    ),
                    BackendEvent::Exec { pid, .. } => u.exec(*pid),
                    BackendEvent::Fork { parent, child } => u.fork(*parent, *child),
                    BackendEvent::ProcessExit { pid, .. } => u.exit(*pid),
                    _ => {}
                }
            }
        }
    }
}
