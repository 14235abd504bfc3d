//! [`LogWriter`]: a buffered pmclog stream.

use std::io::Write;

use super::cpu::CpuIdentity;
use super::{LogRecord, TIMESTAMP_FREQ, VERSION};
use crate::{Error, Result};

/// Writes a pmclog stream: INITIALIZE first, CLOSELOG on close.
///
/// Like hwpmc's log kthread (hwpmc_logging.c `pmclog_loop`), the first
/// write error on the destination is kept: later records are dropped and
/// every [`LogWriter::flush`] returns that error (`pmclog_flush` returns
/// `po_error`) until the log is closed.
#[derive(Debug)]
pub struct LogWriter<W: Write> {
    out: W,
    buf: Vec<u8>,
    closed: bool,
    /// The first write error (errno, message).
    error: Option<(Option<i32>, String)>,
    /// The latest timestamp written: CLOSELOG is never stamped earlier.
    latest: u64,
}

/// Flush the buffer to the writer beyond this many bytes.
const WRITE_CHUNK: usize = 64 * 1024;

impl<W: Write> LogWriter<W> {
    /// Starts a log on `out` with an INITIALIZE record for `cpu`: version
    /// [`VERSION`], `tsc_freq` [`TIMESTAMP_FREQ`] (the timestamps are
    /// nanoseconds), the wall-clock time now, and the origin mark. This
    /// machine's identity is [`crate::global::this_machine`];
    /// [`CpuIdentity::unknown`] describes none.
    pub fn new(out: W, cpu: &CpuIdentity) -> Result<LogWriter<W>> {
        let mut w = LogWriter {
            out,
            buf: Vec::with_capacity(WRITE_CHUNK * 2),
            closed: false,
            error: None,
            latest: 0,
        };
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        w.write(
            &LogRecord::Initialize {
                version: VERSION,
                arch: cpu.cputype,
                tsc_freq: TIMESTAMP_FREQ,
                time_sec: now.as_secs(),
                time_nsec: u64::from(now.subsec_nanos()),
                cpuid: cpu.cpuid.clone(),
                marked: true,
            },
            0,
        )?;
        Ok(w)
    }

    /// Appends a record (buffered). Fails only on a closed log; a write
    /// error of the destination is kept for [`LogWriter::flush`].
    pub fn write(&mut self, record: &LogRecord, timestamp: u64) -> Result<()> {
        if self.closed {
            return Err(Error::Log {
                what: "the log is closed; configure a new one to write more".into(),
                source: Some(std::io::Error::from_raw_os_error(libc::EBADF)),
            });
        }
        if self.error.is_some() {
            return Ok(());
        }
        self.latest = self.latest.max(timestamp);
        record.encode(timestamp, &mut self.buf);
        if self.buf.len() >= WRITE_CHUNK {
            self.write_out();
        }
        Ok(())
    }

    /// A USERDATA record (`pmc_writelog`).
    pub fn writelog(&mut self, value: u32, timestamp: u64) -> Result<()> {
        self.write(&LogRecord::Userdata { value }, timestamp)
    }

    fn write_out(&mut self) {
        if self.error.is_some() {
            self.buf.clear();
            return;
        }
        let result = self
            .out
            .write_all(&self.buf)
            .and_then(|()| self.out.flush());
        self.buf.clear();
        if let Err(e) = result {
            self.error = Some((e.raw_os_error(), e.to_string()));
        }
    }

    /// Writes out buffered records; the destination's write error, if one
    /// happened now or earlier, with its errno.
    pub fn flush(&mut self) -> Result<()> {
        self.write_out();
        self.error().map_or(Ok(()), Err)
    }

    /// The destination's first write error as [`LogWriter::flush`] returns
    /// it, without writing anything: what a recorder polls to stop at
    /// once, as hwpmc's log thread signals its owner (SIGIO) at its first
    /// write error.
    pub fn error(&self) -> Option<Error> {
        let (errno, msg) = self.error.as_ref()?;
        Some(Error::Log {
            what: format!(
                "writing the log failed: {msg}; records after the failure were dropped \
                 (free space on the destination or configure another log)"
            ),
            source: errno.map(std::io::Error::from_raw_os_error),
        })
    }

    /// The first write error's errno, if the destination failed.
    pub fn write_error(&self) -> Option<i32> {
        self.error.as_ref().map(|(e, _)| e.unwrap_or(libc::EIO))
    }

    /// Writes CLOSELOG, stamped with the latest timestamp written, and
    /// flushes; later writes fail.
    pub fn close(&mut self) -> Result<()> {
        self.close_at(0)
    }

    /// Writes CLOSELOG stamped `timestamp` (the close's time on the log's
    /// clock, as hwpmc stamps it), or the latest timestamp written if that
    /// is later, so the log stays in time order; flushes; later writes
    /// fail.
    pub fn close_at(&mut self, timestamp: u64) -> Result<()> {
        if self.closed {
            return Ok(());
        }
        self.write(&LogRecord::Closelog, timestamp.max(self.latest))?;
        self.closed = true;
        self.flush()
    }

    /// The underlying writer.
    pub fn into_inner(self) -> W {
        self.out
    }
}
