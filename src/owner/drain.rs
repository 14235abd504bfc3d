//! The owner's drain: its registered sources, their translators, and the
//! sweeps that move their records into the log.

use std::collections::BTreeMap;
use std::sync::{Arc, MutexGuard};

use super::unwinding::{Batch, Unwinding};
use super::{Inner, Owner, Registered};
use crate::backend::event::BackendEvent;
use crate::backend::source::{Drain, SampleSource, SourceInfo};
use crate::owner::translate::{Rules, Translator};
use crate::sample::StackUnwinder;
use crate::{Flags, Mode};

/// The registered sources (under the drain lock).
#[derive(Debug)]
pub(super) struct Sources {
    /// By key (keys only grow, so in registration order): one source is
    /// found and removed without a pass over all, nor a shift of those
    /// after it (a `PerCpu` of 256 CPUs × 10 sampling events stops and
    /// releases 2 560 of them).
    list: BTreeMap<u64, Registered>,
    next_key: u64,
    /// Turns samples' user stacks into their user call chains as they are
    /// logged, told of every process's mappings in time order, on a
    /// thread of its own.
    pub(super) unwinding: Unwinding,
}

impl Sources {
    pub(super) fn new(unwinder: Option<Box<dyn StackUnwinder>>) -> Sources {
        Sources {
            list: BTreeMap::new(),
            next_key: 0,
            unwinding: Unwinding::new(unwinder),
        }
    }

    /// The log was closed: every source stops writing into it (hwpmc stops
    /// the PMCs that need a log as it is deconfigured) and its translator
    /// drops what it still produces until its PMC is stopped. Returns
    /// their pmcids.
    pub(super) fn log_closed(&mut self) -> Vec<u32> {
        self.list
            .values_mut()
            .map(|r| {
                r.translator.log_closed();
                r.source.stop_for_log_close();
                r.pmcid
            })
            .collect()
    }
}

impl Inner {
    pub(super) fn sources(&self) -> MutexGuard<'_, Sources> {
        self.sources.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// What becomes of a source [`Owner::drain_one`] drained.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum AfterDrain {
    /// Its PMC stopped: it stays, and a later start logs into the log
    /// configured then.
    KeepForRestart,
    /// It is closing (detach, release, an exited target): it goes.
    Unregister,
}

/// Adds a source; returns its key. Its initial mappings are read now,
/// before its counters are enabled, as hwpmc logs them at attach and
/// start (read later, all of `/proc/*/maps` takes long enough for a ring
/// to overflow).
pub(super) fn register(
    owner: &Owner,
    pmcid: u32,
    mode: Mode,
    flags: Flags,
    source: Arc<dyn SampleSource>,
    info: &SourceInfo,
) -> u64 {
    let mut translator = Translator::new(Rules {
        pmcid,
        flags,
        sampling: mode.is_sampling(),
        kernel_samples: info.kernel_samples,
        system: info.system,
        exit_slices: info.exit_slices,
    });
    translator.attached(info.attached.iter().copied());
    let attached_at = owner.now();
    let pending = if owner.log_configured() {
        owner.initial_mappings(&mut translator, attached_at, source.as_ref())
    } else {
        Vec::new()
    };
    let mut sources = owner.inner.sources();
    sources.next_key += 1;
    let key = sources.next_key;
    sources.list.insert(
        key,
        Registered {
            pmcid,
            source,
            translator,
            attached_at,
            pending,
        },
    );
    key
}

impl Owner {
    /// The initial mappings `translator` logs now, with this owner's
    /// once-per-log claims.
    fn initial_mappings(
        &self,
        translator: &mut Translator,
        at: u64,
        source: &dyn SampleSource,
    ) -> Vec<(u64, crate::backend::event::BackendEvent)> {
        let claim = |kernel: bool| {
            let mut log = self.inner.log();
            let Some(log) = log.as_mut() else {
                return false;
            };
            let flag = if kernel {
                &mut log.kernel_mappings_logged
            } else {
                &mut log.all_process_mappings_logged
            };
            !std::mem::replace(flag, true)
        };
        translator.initial_mappings_claiming(at, source.mappings(), || claim(true), || claim(false))
    }

    /// The drain thread's sweep: a window of every source at a time until
    /// none has records left; returns how many sources there are. The
    /// drain lock is taken per window, so a stop, flush or close waits for
    /// one window at most.
    pub(super) fn sweep(&self) -> usize {
        loop {
            let mut sources = self.inner.sources();
            let backlog = self.drain_locked(&mut sources, Drain::Sweep, None);
            let live = sources.list.len();
            if !backlog {
                return live;
            }
        }
    }

    /// Every source completely (a log flush or close).
    pub(super) fn drain_all(&self) {
        let mut sources = self.inner.sources();
        self.drain_locked(&mut sources, Drain::Final, None);
    }

    /// One source completely, as its PMC stops or as the source closes.
    pub(super) fn drain_one(&self, key: u64, then: AfterDrain) {
        let mut sources = self.inner.sources();
        self.drain_locked(&mut sources, Drain::Final, Some(key));
        match then {
            AfterDrain::Unregister => {
                sources.list.remove(&key);
            }
            AfterDrain::KeepForRestart => {
                if let Some(r) = sources.list.get_mut(&key) {
                    r.translator.stopped();
                }
            }
        }
    }

    /// Drains the sources (`only`: one of them) and writes their records,
    /// under the drain lock the caller holds; returns whether records are
    /// left for another sweep.
    pub(super) fn drain_locked(
        &self,
        sources: &mut Sources,
        how: Drain,
        only: Option<u64>,
    ) -> bool {
        let configured = self.log_configured();
        let mut out = Vec::new();
        let mut backlog = false;
        let Sources {
            list, unwinding, ..
        } = sources;
        // What the unwinding stage finished since the last drain, before
        // anything newer of the same sources.
        translate_batches(list, unwinding.finished(false), &mut out);
        let chosen = match only {
            Some(k) => list.range_mut(k..=k),
            None => list.range_mut(..),
        };
        for (&key, reg) in chosen {
            let mut events = std::mem::take(&mut reg.pending);
            if configured {
                // A log configured after the attach: the mappings first,
                // stamped with the attach, before every record.
                let at = reg.attached_at;
                events.extend(self.initial_mappings(&mut reg.translator, at, reg.source.as_ref()));
            }
            backlog |= reg.source.drain(how, &mut events);
            if !configured {
                // Dropped below: not worth unwinding.
                drop_user_stacks(&mut events);
            }
            if let Some(events) = unwinding.submit(key, events) {
                reg.translator.translate(events, &mut out);
            }
            if !configured {
                reg.translator.log_absent();
            }
        }
        if how == Drain::Final {
            // Everything drained reaches the log before the drain returns.
            translate_batches(list, unwinding.finished(true), &mut out);
        }
        // Without a log the records are dropped here, as hwpmc drops
        // samples of a PMC whose owner has no log.
        self.write_batch(out);
        backlog
    }
}

/// Translates batches back from the unwinding stage with their sources'
/// translators (a source gone since drops its batch).
fn translate_batches(
    list: &mut BTreeMap<u64, Registered>,
    batches: Vec<Batch>,
    out: &mut Vec<(u64, crate::log::LogRecord)>,
) {
    for batch in batches {
        if let Some(reg) = list.get_mut(&batch.key) {
            reg.translator.translate(batch.events, out);
        }
    }
}

/// Drops the samples' stack copies (their records are not logged).
fn drop_user_stacks(events: &mut [(u64, BackendEvent)]) {
    for (_, e) in events {
        if let BackendEvent::Sample { user_stack, .. } = e {
            *user_stack = None;
        }
    }
}
