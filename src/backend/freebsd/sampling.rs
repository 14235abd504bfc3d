//! hwpmc's own log as the sample sources of the FreeBSD backend.
//!
//! hwpmc writes what its PMCs observe — samples (CALLCHAIN), context
//! switches of `LOG_PROCCSW` PMCs (PROCCSW), exits of `LOG_PROCEXIT` PMCs'
//! targets (PROCEXIT), a sampling PMC's mappings at attach and start
//! (MAP_IN) — as pmclog records into the log its owner configured with
//! `PMC_OP_CONFIGURELOG` (hwpmc_logging.c). A backend instance that needs
//! them configures that log once, on a pipe it reads ([`System::log_pipe`]:
//! a pipe(2) on FreeBSD, the kernel double's pipe in tests), and every
//! logging target's [`SampleSource`] takes its PMC's records from it:
//!
//! - the records are decoded with [`LogReader`] and sorted by hwpmc PMC id
//!   where they carry one (CALLCHAIN, PROCCSW, PROCEXIT, PROCEXEC; the
//!   kernel's PMCATTACH/PMCDETACH/PMCALLOCATE only mark whose records
//!   follow); records without an id (MAP_IN, SYSEXIT, THR_*, PROCFORK,
//!   DROPNOTIFY) go to the PMC of the last record with one, since hwpmc
//!   writes a PMC's MAP_INs right after its PMCATTACH
//!   (`pmc_attach_one_process` → `pmc_log_process_mappings`);
//! - each is handed to the owner as [`BackendEvent::Logged`], its pmcid
//!   replaced by the `Pmc`'s (each target is its own hwpmc PMC): hwpmc
//!   applied the logging rules already, and the owner writes its own
//!   INITIALIZE, PMCALLOCATE, PMCATTACH, PMCDETACH, USERDATA and CLOSELOG;
//! - timestamps: hwpmc stamps records with `pmc_rdtsc()` and INITIALIZE
//!   gives `pl_tsc_freq`; a record's time is the backend's
//!   CLOCK_MONOTONIC just before the log was configured plus the time of
//!   the ticks since INITIALIZE (a machine whose INITIALIZE says 0 Hz — hwpmc fills it on
//!   x86 only — gets the time it was read);
//! - a final drain (stop, release, log flush or close) asks hwpmc to write
//!   out its buffers first (`PMC_OP_FLUSHLOG`), so nothing the PMC did
//!   before it is left behind; a sweep reads what hwpmc wrote so far;
//! - when the owner's log closes under a running PMC, its source stops the
//!   hwpmc PMC (`PMCSTOP`), as hwpmc stops the PMCs that need a log when
//!   it is deconfigured.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard};

use pmc_freebsd::{Hwpmc, PmcId as HwpmcId};

use super::System;
use crate::Result;
use crate::backend::event::BackendEvent;
use crate::backend::source::{Drain, MappingSource, NoMappings, SampleSource, SourceInfo};
use crate::log::{LogReader, LogRecord, ReadState};

/// The read side of the descriptor hwpmc's log is configured on.
pub trait LogPipe: Send + fmt::Debug {
    /// The write end's descriptor, for `PMC_OP_CONFIGURELOG`.
    fn write_fd(&self) -> i32;
    /// hwpmc holds its own reference to the write end once configured
    /// (`fget_write`): ours is let go.
    fn release_write_end(&mut self);
    /// Appends to `out` what can be read now, without blocking.
    fn read_available(&mut self, out: &mut Vec<u8>) -> std::io::Result<()>;
}

/// The records of one hwpmc PMC, waiting for its source's drain.
#[derive(Debug)]
struct Queue {
    /// The `Pmc`'s id, written in place of hwpmc's.
    pmcid: u32,
    records: Vec<(u64, LogRecord)>,
}

#[derive(Debug)]
struct LogState {
    pipe: Box<dyn LogPipe>,
    reader: LogReader,
    bytes: Vec<u8>,
    /// CLOCK_MONOTONIC when the log was configured.
    anchor_ns: u64,
    /// INITIALIZE's timestamp and `pl_tsc_freq`.
    origin: Option<(u64, u64)>,
    queues: HashMap<u32, Queue>,
    /// The hwpmc id of the last record that carried one.
    last: Option<u32>,
    /// The first read error, kept for the next final drain to report.
    error: Option<String>,
}

/// hwpmc's log of one backend instance (one per process on FreeBSD: a
/// second CONFIGURELOG is EBUSY).
#[derive(Debug)]
pub struct HwpmcLog<S: System> {
    hwpmc: Arc<Hwpmc<S>>,
    state: Mutex<LogState>,
}

impl<S: System> HwpmcLog<S> {
    /// Configures hwpmc's log on a new pipe (`PMC_OP_CONFIGURELOG`).
    pub fn configure(hwpmc: Arc<Hwpmc<S>>) -> Result<HwpmcLog<S>> {
        let mut pipe = hwpmc.transport().log_pipe()?;
        // Read before INITIALIZE is stamped: a record's time is then never
        // later than when hwpmc wrote it.
        let anchor_ns = crate::backend::monotonic_clock_ns();
        hwpmc
            .configure_logfile(pipe.write_fd())
            .map_err(|e| super::from_freebsd(e, "configure hwpmc's log"))?;
        pipe.release_write_end();
        Ok(HwpmcLog {
            hwpmc,
            state: Mutex::new(LogState {
                pipe,
                reader: LogReader::from_memory(),
                bytes: Vec::new(),
                anchor_ns,
                origin: None,
                queues: HashMap::new(),
                last: None,
                error: None,
            }),
        })
    }

    fn state(&self) -> MutexGuard<'_, LogState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Routes hwpmc PMC `id`'s records to a queue, for the `Pmc` `pmcid`.
    pub fn register(&self, id: HwpmcId, pmcid: u32) {
        self.state().queues.insert(
            id.0,
            Queue {
                pmcid,
                records: Vec::new(),
            },
        );
    }

    /// Forgets hwpmc PMC `id` (released: hwpmc may give its id to another).
    pub fn unregister(&self, id: HwpmcId) {
        let mut state = self.state();
        state.queues.remove(&id.0);
        if state.last == Some(id.0) {
            state.last = None;
        }
    }

    /// Reads what hwpmc wrote and sorts it into the queues.
    fn pump(state: &mut LogState) {
        let mut bytes = std::mem::take(&mut state.bytes);
        if let Err(e) = state.pipe.read_available(&mut bytes) {
            state
                .error
                .get_or_insert_with(|| format!("reading hwpmc's log: {e}"));
        }
        state.reader.feed(&bytes);
        bytes.clear();
        state.bytes = bytes;
        loop {
            match state.reader.read() {
                ReadState::Ok(event) => Self::route(state, event.timestamp, event.record),
                ReadState::Eof | ReadState::RequireData => break,
                ReadState::Error(e) => {
                    state
                        .error
                        .get_or_insert_with(|| format!("hwpmc's log is corrupt: {e}"));
                    break;
                }
            }
        }
    }

    fn route(state: &mut LogState, tsc: u64, record: LogRecord) {
        use LogRecord::*;
        let time = match state.origin {
            Some((origin, freq)) if freq > 0 => {
                let ticks = u128::from(tsc.saturating_sub(origin));
                let ns = ticks * 1_000_000_000 / u128::from(freq);
                state
                    .anchor_ns
                    .saturating_add(u64::try_from(ns).unwrap_or(u64::MAX))
            }
            _ => crate::backend::monotonic_clock_ns(),
        };
        let id = match &record {
            Initialize { tsc_freq, .. } => {
                state.origin = Some((tsc, *tsc_freq));
                return;
            }
            // The owner writes its own.
            Closelog | Userdata { .. } => return,
            PmcAllocate { pmcid, .. }
            | PmcAllocateDyn { pmcid, .. }
            | PmcAttach { pmcid, .. }
            | PmcDetach { pmcid, .. } => {
                state.last = Some(*pmcid);
                return;
            }
            Callchain { pmcid, .. }
            | ProcCsw { pmcid, .. }
            | ProcExit { pmcid, .. }
            | ProcExec { pmcid, .. } => {
                state.last = Some(*pmcid);
                *pmcid
            }
            MapIn { .. }
            | MapOut { .. }
            | ProcFork { .. }
            | SysExit { .. }
            | ThrCreate { .. }
            | ThrExit { .. }
            | ProcCreate { .. }
            | Dropnotify { .. } => match state.last {
                Some(id) => id,
                None => return,
            },
        };
        let Some(queue) = state.queues.get_mut(&id) else {
            // A PMC no source reads (released, or not ours).
            return;
        };
        let record = with_pmcid(record, queue.pmcid);
        queue.records.push((time, record));
    }

    /// hwpmc PMC `id`'s records so far (`flush`: after hwpmc wrote out its
    /// buffers; a flush that fails — no log any more — still leaves what
    /// was written).
    fn take(&self, id: HwpmcId, flush: bool) -> Vec<(u64, LogRecord)> {
        if flush {
            let _ = self.hwpmc.flush_logfile();
        }
        let mut state = self.state();
        Self::pump(&mut state);
        state
            .queues
            .get_mut(&id.0)
            .map(|q| std::mem::take(&mut q.records))
            .unwrap_or_default()
    }
}

impl<S: System> Drop for HwpmcLog<S> {
    /// The last PMC that logs is gone: hwpmc lets go of the pipe
    /// (CONFIGURELOG with -1: `pmclog_close`, then
    /// `pmclog_deconfigure_log`), so a later backend of this process may
    /// configure the log again.
    fn drop(&mut self) {
        let _ = self.hwpmc.configure_logfile(-1);
    }
}

/// `record` with `pmcid` in place of hwpmc's id.
fn with_pmcid(mut record: LogRecord, id: u32) -> LogRecord {
    use LogRecord::*;
    if let Callchain { pmcid, .. }
    | ProcCsw { pmcid, .. }
    | ProcExit { pmcid, .. }
    | ProcExec { pmcid, .. } = &mut record
    {
        *pmcid = id;
    }
    record
}

/// One hwpmc PMC's records, for its `Pmc`'s owner.
#[derive(Debug)]
pub struct HwpmcSource<S: System> {
    log: Arc<HwpmcLog<S>>,
    id: HwpmcId,
}

impl<S: System> HwpmcSource<S> {
    /// The source of hwpmc PMC `id`, which `log` routes.
    pub fn new(log: Arc<HwpmcLog<S>>, id: HwpmcId) -> HwpmcSource<S> {
        HwpmcSource { log, id }
    }
}

impl<S: System> SampleSource for HwpmcSource<S> {
    /// hwpmc logs the mappings itself (at attach and start), so the owner
    /// adds none.
    fn info(&self) -> SourceInfo {
        SourceInfo::default()
    }

    fn mappings(&self) -> &dyn MappingSource {
        &NoMappings
    }

    fn drain(&self, how: Drain, out: &mut Vec<(u64, BackendEvent)>) -> bool {
        let records = self.log.take(self.id, how == Drain::Final);
        out.extend(
            records
                .into_iter()
                .map(|(t, r)| (t, BackendEvent::Logged(r))),
        );
        false
    }

    fn stop_for_log_close(&self) {
        let _ = self.log.hwpmc.stop(self.id);
    }
}

#[cfg(test)]
mod tests;
