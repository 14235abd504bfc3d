//! The process's log (`pmc_configure_logfile` and friends): the libpmc
//! entry points, over the process's [`Owner::global`], as FreeBSD has one
//! log per process. Sampling PMCs and the `LOG_PROC*` flags write into
//! it; a PMC that needs it and starts without one gets
//! [`crate::Error::LogRequired`]. The rules (hwpmc's CONFIGURELOG /
//! FLUSHLOG / CLOSELOG / WRITELOG) are [`Owner`]'s; an embedding program
//! that wants a log of its own makes an owner of its own.

use std::io::Write;

use crate::{Owner, Result};

pub use crate::owner::MemoryLog;

/// Directs the process's log to `out` (`pmc_configure_logfile`); see
/// [`Owner::configure_logfile`]. EBUSY when one is configured.
///
/// ```
/// use pmc::global::log;
/// use pmc::log::{LogReader, LogRecord};
/// use pmc::{Cpu, Flags, Mode, Pmc};
///
/// // Sample user-mode CPU time every 100 µs into a log kept in memory.
/// let memory = log::MemoryLog::new();
/// log::configure_logfile(memory.clone())?;
/// let mut pmc = Pmc::allocate_with_count("cpu-clock,usr", Mode::TS, Flags::empty(), Cpu::Any, 100_000)?;
/// pmc.start()?;
/// let sum: u64 = (0..20_000_000u64).map(std::hint::black_box).sum();
/// pmc.stop()?;
/// log::close_logfile()?;
/// // The bytes are a FreeBSD pmclog: read them back as pmcstat -R would.
/// let mut reader = LogReader::from_memory();
/// reader.feed(&memory.bytes());
/// let records: Vec<LogRecord> = reader.map(|e| e.map(|e| e.record)).collect::<Result<_, _>>().unwrap();
/// assert!(matches!(records.first(), Some(LogRecord::Initialize { .. })), "{sum}");
/// assert!(matches!(records.last(), Some(LogRecord::Closelog)));
/// # Ok::<(), pmc::Error>(())
/// ```
pub fn configure_logfile(out: impl Write + Send + 'static) -> Result<()> {
    Owner::global().configure_logfile(out)
}

/// [`configure_logfile`] on a file descriptor open for writing
/// (`pmc_configure_logfile(fd)`); see [`Owner::configure_logfile_fd`].
pub fn configure_logfile_fd(fd: impl std::os::fd::AsFd) -> Result<()> {
    Owner::global().configure_logfile_fd(fd)
}

/// Whether the process's log is configured.
pub fn is_configured() -> bool {
    Owner::global().log_configured()
}

/// `pmc_flush_logfile`; see [`Owner::flush_logfile`].
pub fn flush_logfile() -> Result<()> {
    Owner::global().flush_logfile()
}

/// The process's log's write error, if its destination failed; see
/// [`Owner::log_write_error`].
pub fn write_error() -> Option<crate::Error> {
    Owner::global().log_write_error()
}

/// `pmc_close_logfile`; see [`Owner::close_logfile`].
pub fn close_logfile() -> Result<()> {
    Owner::global().close_logfile()
}

/// `pmc_configure_logfile(-1)`; see [`Owner::deconfigure_logfile`].
pub fn deconfigure_logfile() -> Result<()> {
    Owner::global().deconfigure_logfile()
}

/// `pmc_writelog`; see [`Owner::writelog`].
pub fn writelog(value: u32) -> Result<()> {
    Owner::global().writelog(value)
}

/// Samples and lost samples written to the process's logs so far; see
/// [`Owner::stats`].
pub fn stats() -> (u64, u64) {
    Owner::global().stats()
}

/// The process's records offered to and dropped by logs on pipes and
/// sockets; see [`Owner::log_queue_stats`].
pub fn queue_stats() -> crate::log::queue::QueueStats {
    Owner::global().log_queue_stats()
}

/// The process's log clock; see [`Owner::now`].
pub fn now() -> u64 {
    Owner::global().now()
}

/// The ring size of the process's logging PMCs; see
/// [`Owner::set_buffer_pages`].
pub fn set_buffer_pages(pages: usize) -> Result<()> {
    Owner::global().set_buffer_pages(pages)
}

/// See [`Owner::buffer_pages`].
pub fn buffer_pages() -> usize {
    Owner::global().buffer_pages()
}

/// See [`Owner::smallest_ring_kib`].
pub fn smallest_ring_kib() -> Option<usize> {
    Owner::global().smallest_ring_kib()
}

/// The ring size of a logging PMC, in data pages, unless
/// [`set_buffer_pages`] chose another.
pub const DEFAULT_BUFFER_PAGES: usize = crate::backend::source::DEFAULT_BUFFER_PAGES;
