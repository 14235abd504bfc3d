//! The process-wide log (`pmc_configure_logfile` and friends). Sampling
//! PMCs and the `LOG_PROC*` flags write into it; a PMC that needs it and
//! starts without one gets [`crate::Error::LogRequired`].

use std::io::Write;
use std::sync::Mutex;

use super::{LogRecord, LogWriter};
use crate::{Error, Result};

type Writer = LogWriter<Box<dyn Write + Send>>;

static SINK: Mutex<Option<Writer>> = Mutex::new(None);

fn lock() -> std::sync::MutexGuard<'static, Option<Writer>> {
    SINK.lock().unwrap_or_else(|p| p.into_inner())
}

/// Directs the log to `out` (`pmc_configure_logfile`), starting with an
/// INITIALIZE record. A log already configured is closed first.
pub fn configure_logfile(out: impl Write + Send + 'static) -> Result<()> {
    let cpuid = crate::machine::cpuinfo()
        .map(|c| c.cputype)
        .unwrap_or_default();
    let writer = LogWriter::new(Box::new(out) as Box<dyn Write + Send>, &cpuid, 0)?;
    let old = lock().replace(writer);
    if let Some(mut old) = old {
        old.close()?;
    }
    Ok(())
}

/// Whether a log is configured.
pub fn is_configured() -> bool {
    lock().is_some()
}

/// Writes out what is buffered (`pmc_flush_logfile`), after collecting
/// the samples the running PMCs have produced.
pub fn flush_logfile() -> Result<()> {
    crate::backend::drain_samples();
    match lock().as_mut() {
        Some(w) => w.flush(),
        None => Err(no_log("flush_logfile")),
    }
}

/// Writes CLOSELOG, flushes and detaches the log (`pmc_close_logfile`).
pub fn close_logfile() -> Result<()> {
    crate::backend::drain_samples();
    match lock().take() {
        Some(mut w) => w.close(),
        None => Err(no_log("close_logfile")),
    }
}

/// Writes a USERDATA record (`pmc_writelog`).
pub fn writelog(value: u32) -> Result<()> {
    write(&LogRecord::Userdata { value })
}

/// Appends a record stamped now, if a log is configured.
pub(crate) fn write(record: &LogRecord) -> Result<()> {
    write_at(record, now())
}

static SAMPLES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
static LOST: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Samples (CALLCHAIN records) and lost samples (DROPNOTIFY counts)
/// written to logs by this process so far: for progress displays.
pub fn stats() -> (u64, u64) {
    use std::sync::atomic::Ordering::Relaxed;
    (SAMPLES.load(Relaxed), LOST.load(Relaxed))
}

/// Appends a record with its own timestamp, if a log is configured.
pub(crate) fn write_at(record: &LogRecord, timestamp: u64) -> Result<()> {
    use std::sync::atomic::Ordering::Relaxed;
    match record {
        LogRecord::Callchain { .. } => {
            SAMPLES.fetch_add(1, Relaxed);
        }
        LogRecord::Dropnotify { lost } => {
            LOST.fetch_add(u64::from(*lost), Relaxed);
        }
        _ => {}
    }
    match lock().as_mut() {
        Some(w) => w.write(record, timestamp),
        None => Err(no_log("writelog")),
    }
}

fn no_log(op: &'static str) -> Error {
    Error::LogRequired {
        op,
        why: "no log file is configured".into(),
    }
}

/// The log's clock: CLOCK_MONOTONIC nanoseconds, the clock sampling PMCs
/// stamp their records with.
pub fn now() -> u64 {
    crate::backend::monotonic_ns()
}

/// Data pages per CPU ring of logging PMCs allocated from now on (a power
/// of two; default 32). Like hwpmc's `kern.hwpmc.logbuffersize`, a
/// process-wide tunable: small buffers lose samples (DROPNOTIFY), large
/// ones cost locked memory (`kernel.perf_event_mlock_kb`).
pub fn set_buffer_pages(pages: usize) -> Result<()> {
    if pages == 0 || !pages.is_power_of_two() {
        return Err(Error::InvalidArgument {
            op: "set_buffer_pages",
            why: format!("{pages} is not a power of two"),
        });
    }
    BUFFER_PAGES.store(pages, std::sync::atomic::Ordering::Relaxed);
    Ok(())
}

/// The current ring size for new logging PMCs.
pub fn buffer_pages() -> usize {
    BUFFER_PAGES.load(std::sync::atomic::Ordering::Relaxed)
}

static BUFFER_PAGES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(32);

/// An in-memory log: give a clone to [`configure_logfile`] and read the
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
    pub fn events(&self) -> std::result::Result<Vec<super::LogEvent>, String> {
        let bytes = self.bytes.lock().unwrap_or_else(|p| p.into_inner()).clone();
        let mut reader = super::LogReader::from_memory();
        reader.feed(&bytes);
        reader.collect()
    }

    /// The raw pmclog bytes so far.
    pub fn bytes(&self) -> Vec<u8> {
        self.bytes.lock().unwrap_or_else(|p| p.into_inner()).clone()
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
