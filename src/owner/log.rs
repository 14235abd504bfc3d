//! An owner's log (`pmc_configure_logfile` and friends). The operations
//! follow hwpmc's CONFIGURELOG / FLUSHLOG / CLOSELOG / WRITELOG
//! (hwpmc_mod.c `pmc_syscall_handler`, hwpmc_logging.c): without a log,
//! flush, writelog and deconfigure are EINVAL, and close is EINVAL unless
//! the owner has PMCs; a second configure is EBUSY.

use std::io::Write;
use std::sync::{Mutex, MutexGuard};

use super::{Inner, Owner};
use crate::log::{LogRecord, LogWriter};
use crate::{Error, Result};

type Writer = LogWriter<Box<dyn Write + Send>>;

/// A configured log: the writer (with its sticky first error, hwpmc's
/// `po_error`) and the once-per-log flags.
pub(super) struct LogState {
    writer: Writer,
    /// The kernel's MAP_IN was written (hwpmc's
    /// `PMC_PO_INITIAL_MAPPINGS_DONE`).
    pub(super) kernel_mappings_logged: bool,
    /// Every process's mappings were written for a system sampling PMC
    /// (hwpmc's `po_logprocmaps`).
    pub(super) all_process_mappings_logged: bool,
}

impl std::fmt::Debug for LogState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LogState")
            .field("kernel_mappings_logged", &self.kernel_mappings_logged)
            .field(
                "all_process_mappings_logged",
                &self.all_process_mappings_logged,
            )
            .finish_non_exhaustive()
    }
}

impl Inner {
    pub(super) fn log(&self) -> MutexGuard<'_, Option<LogState>> {
        self.log.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Owner {
    /// Directs the owner's log to `out` (`pmc_configure_logfile`),
    /// starting with an INITIALIZE record that describes the machine as
    /// its backend tells it. The log owns `out` from now on. Like hwpmc's
    /// `pmclog_configure_log`, a second configure while a log is
    /// configured fails with EBUSY: close the first one with
    /// [`Owner::close_logfile`].
    pub fn configure_logfile(&self, out: impl Write + Send + 'static) -> Result<()> {
        let mut log = self.inner.log();
        if log.is_some() {
            return Err(Error::Busy {
                op: "configure_logfile".into(),
                why: "a log file is already configured; close it with close_logfile first".into(),
                source: None,
            });
        }
        let identity = self.binding().cpu_identity();
        let writer = LogWriter::new(Box::new(out) as Box<dyn Write + Send>, &identity)?;
        *log = Some(LogState {
            writer,
            kernel_mappings_logged: false,
            all_process_mappings_logged: false,
        });
        Ok(())
    }

    /// [`Owner::configure_logfile`] on a file descriptor open for writing,
    /// as `pmc_configure_logfile(fd)`: the log holds its own reference to
    /// the open file (a duplicate, as hwpmc's `fget_write`), so the caller
    /// may close its descriptor and the log keeps working.
    ///
    /// A pipe, FIFO or socket (a destination a reader drains) is written
    /// by a thread of the log's own through a bounded queue
    /// ([`crate::log::queue`], hwpmc's log buffers): records that find the
    /// queue full are dropped, counted and reported by a DROPNOTIFY, and
    /// only the close waits for the reader, while it takes data.
    pub fn configure_logfile_fd(&self, fd: impl std::os::fd::AsFd) -> Result<()> {
        let own = fd.as_fd().try_clone_to_owned().map_err(|e| Error::Log {
            what: format!(
                "configure_logfile_fd: duplicating the descriptor failed: {e}; pass an open \
                 descriptor (and stay under RLIMIT_NOFILE)"
            ),
            source: Some(e),
        })?;
        let file = std::fs::File::from(own);
        if crate::log::queue::wants_queue(&file) {
            let ncpu = self.binding().highest_possible_cpu() as usize + 1;
            return self.configure_logfile(crate::log::queue::QueuedWriter::for_log(
                file,
                ncpu,
                self.inner.log_queue.clone(),
            )?);
        }
        self.configure_logfile(file)
    }

    /// Whether a log is configured.
    pub fn log_configured(&self) -> bool {
        self.inner.log().is_some()
    }

    /// Writes out buffered records (`pmc_flush_logfile`), after collecting
    /// what the running PMCs have produced. Without a log, EINVAL (as
    /// hwpmc's FLUSHLOG); after a write error on the destination (ENOSPC,
    /// EIO, …), that error with its errno, as hwpmc's `pmclog_flush`
    /// returns `po_error`.
    pub fn flush_logfile(&self) -> Result<()> {
        self.drain_all();
        match self.inner.log().as_mut() {
            Some(log) => log.writer.flush(),
            None => Err(no_log("flush_logfile")),
        }
    }

    /// The log destination's write error (ENOSPC, EIO, …), if it failed:
    /// the error [`Owner::flush_logfile`] would return, found without
    /// writing or draining, so cheap enough to poll (hwpmc's log thread
    /// signals its owner SIGIO at its first write error). `None` without
    /// a log.
    pub fn log_write_error(&self) -> Option<Error> {
        self.inner.log().as_ref()?.writer.error()
    }

    /// Writes out what is buffered, without draining the sources: the
    /// destination's write error (sticky, with its errno) if it failed;
    /// nothing without a log.
    pub(crate) fn flush_written(&self) -> Result<()> {
        match self.inner.log().as_mut() {
            Some(log) => log.writer.flush(),
            None => Ok(()),
        }
    }

    /// Closes and deconfigures the log (`pmc_close_logfile`): collects what
    /// the PMCs produced, stops the PMCs that write into the log (hwpmc_mod.c
    /// stops the running `PMC_F_NEEDS_LOGFILE` PMCs before
    /// `pmclog_deconfigure_log`), writes CLOSELOG, flushes and drops the
    /// destination. A write error of the destination is returned after the
    /// log is deconfigured.
    ///
    /// Without a log, as hwpmc's CLOSELOG: EINVAL when the owner has no
    /// PMCs (FreeBSD finds no owner descriptor); an owner of PMCs gets
    /// success, as `pmclog_close` returns 0 with nothing to close.
    pub fn close_logfile(&self) -> Result<()> {
        match self.take_log() {
            Some(mut log) => log.writer.close_at(self.now()),
            None if !self.inner.registry.is_empty() => Ok(()),
            None => Err(Error::InvalidArgument {
                op: "close_logfile".into(),
                why: "no log file is configured and this process owns no PMCs \
                      (call configure_logfile first)"
                    .into(),
            }),
        }
    }

    /// Deconfigures the log as hwpmc's CONFIGURELOG with a negative fd
    /// (`pmc_configure_logfile(-1)`): as [`Owner::close_logfile`] with a
    /// log, EINVAL without one whatever the owner has.
    pub fn deconfigure_logfile(&self) -> Result<()> {
        match self.take_log() {
            Some(mut log) => log.writer.close_at(self.now()),
            None => Err(no_log("configure_logfile(-1)")),
        }
    }

    /// Drains every source into the log, stops those that write into it and
    /// takes the log out, all under the drain lock.
    fn take_log(&self) -> Option<LogState> {
        let mut sources = self.inner.sources();
        self.drain_locked(&mut sources, crate::backend::source::Drain::Final, None);
        let log = self.inner.log().take()?;
        let stopped = sources.log_closed();
        self.inner.registry.mark_stopped_by_log_close(&stopped);
        Some(log)
    }

    /// Writes a USERDATA record (`pmc_writelog`). Without a log, EINVAL.
    pub fn writelog(&self, value: u32) -> Result<()> {
        let now = self.now();
        match self.inner.log().as_mut() {
            Some(log) => log.writer.write(&LogRecord::Userdata { value }, now),
            None => Err(no_log("writelog")),
        }
    }

    /// Appends a record stamped now, if a log is configured (the PMC's
    /// own records: allocate, attach, detach).
    /// The record is made only if there is a log: an allocation without
    /// one copies no name.
    pub(crate) fn write_if_logging(&self, record: impl FnOnce() -> LogRecord) {
        if let Some(log) = self.inner.log().as_mut() {
            let now = self.now();
            let _ = self.write_counted(log, &record(), now);
        }
    }

    /// Writes a drained batch in time order (per-CPU buffers interleave;
    /// records of one time keep their order), if a log is configured.
    pub(super) fn write_batch(&self, mut batch: Vec<(u64, LogRecord)>) {
        if batch.is_empty() {
            return;
        }
        batch.sort_by_key(|(t, _)| *t);
        // One lock for the batch: the drainer's sweeps write thousands.
        let mut log = self.inner.log();
        let Some(log) = log.as_mut() else {
            return;
        };
        for (t, r) in &batch {
            let _ = self.write_counted(log, r, *t);
        }
    }

    /// Writes `record` and counts it in [`Owner::stats`].
    fn write_counted(&self, log: &mut LogState, record: &LogRecord, timestamp: u64) -> Result<()> {
        use std::sync::atomic::Ordering::Relaxed;
        log.writer.write(record, timestamp)?;
        match record {
            LogRecord::Callchain { .. } => {
                self.inner.samples.fetch_add(1, Relaxed);
            }
            LogRecord::Dropnotify { lost } => {
                self.inner
                    .lost
                    .fetch_add(u64::from(lost.unwrap_or(1)), Relaxed);
            }
            _ => {}
        }
        Ok(())
    }
}

fn no_log(op: &'static str) -> Error {
    Error::InvalidArgument {
        op: op.into(),
        why: "no log file is configured (call configure_logfile first)".into(),
    }
}

/// An in-memory log: give a clone to a `configure_logfile` and read the
/// records back in the same process, without a file.
#[derive(Clone, Debug, Default)]
pub struct MemoryLog {
    bytes: std::sync::Arc<Mutex<Vec<u8>>>,
}

impl MemoryLog {
    /// An empty log.
    pub fn new() -> MemoryLog {
        MemoryLog::default()
    }

    /// Every record written so far (the log keeps them).
    pub fn events(&self) -> std::result::Result<Vec<crate::log::LogEvent>, crate::log::ReadError> {
        let bytes = self.bytes();
        let mut reader = crate::log::LogReader::from_memory();
        reader.feed(&bytes);
        reader.collect()
    }

    /// The raw pmclog bytes so far.
    pub fn bytes(&self) -> Vec<u8> {
        self.bytes.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// The bytes written since the last take, removed from the log: a
    /// reader that follows a long session as it grows (pmcstat's `-T`)
    /// keeps the log small instead of copying all of it each time. Records
    /// split across two takes join up in a reader fed both.
    pub fn take_bytes(&self) -> Vec<u8> {
        std::mem::take(&mut *self.bytes.lock().unwrap_or_else(|p| p.into_inner()))
    }
}

impl Write for MemoryLog {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.bytes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
