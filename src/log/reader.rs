//! [`LogReader`]: libpmc's `pmclog_open` / `pmclog_feed` / `pmclog_read`.

use std::fmt;
use std::io::Read;

use super::{HEADER_LEN, LogEvent, LogRecord, MAGIC, PMC_VERSION};

/// What [`LogReader::read`] returns (libpmc's `pmclog_read` states).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReadState {
    /// A record (`PMCLOG_OK`). CLOSELOG comes as a record too (libpmc
    /// reports it as `PMCLOG_EOF` instead), and every read after it is
    /// [`ReadState::Eof`].
    Ok(LogEvent),
    /// `PMCLOG_EOF`: the reader reached the end of its file or pipe — a
    /// log still being written may end inside a record, and the next
    /// [`LogReader::read`] goes on where this one stopped, as
    /// lib/libpmc/pmclog.c `pmclog_read` does. After a CLOSELOG record the
    /// stream is over and every later read is `Eof`.
    Eof,
    /// `PMCLOG_REQUIRE_DATA`: memory mode, the next record is incomplete
    /// (feed more bytes); or the file/pipe is non-blocking and had nothing
    /// (EAGAIN).
    RequireData,
    /// `PMCLOG_ERROR`: the stream is corrupt or unreadable; every later
    /// read returns the same error.
    Error(ReadError),
}

/// Why a pmclog stream cannot be read on (libpmc's `PMCLOG_ERROR`), each
/// placed at its byte offset in the stream.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ReadError {
    /// A record header without hwpmc's magic byte: not a pmclog stream,
    /// or a corrupt one.
    #[error("byte {offset}: bad magic {magic:#x} (not a pmclog stream, or corrupt)")]
    BadMagic {
        /// Where the header starts.
        offset: u64,
        /// The header's top byte.
        magic: u32,
    },
    /// A record length shorter than a header or not a multiple of 4.
    #[error("byte {offset}: bad record length {len}")]
    BadLength {
        /// Where the record starts.
        offset: u64,
        /// The length its header gives.
        len: usize,
    },
    /// A record whose fields do not fit its type and length.
    #[error("{what}")]
    BadRecord {
        /// Where the record starts.
        offset: u64,
        /// What is wrong with it.
        what: String,
    },
    /// The file or pipe could not be read.
    #[error("byte {offset}: read failed: {message}")]
    Io {
        /// How far the stream was read.
        offset: u64,
        /// The kind of I/O error.
        kind: std::io::ErrorKind,
        /// The OS errno, when there was one.
        os_errno: Option<i32>,
        /// The I/O error's text.
        message: String,
    },
    /// The stream ended inside a record, and nothing will follow (the
    /// iterator's end of a file; [`LogReader::read`] waits for more).
    #[error("byte {offset}: the stream ends inside a record ({bytes} bytes of it)")]
    Truncated {
        /// Where the incomplete record starts.
        offset: u64,
        /// How many of its bytes there are.
        bytes: usize,
    },
}

/// Reads a pmclog stream from a reader, or from memory fed piecewise.
///
/// ```
/// use pmc::log::{LogReader, LogRecord, LogWriter, ReadState};
///
/// // A log as pmcstat -O writes it: INITIALIZE, records, CLOSELOG.
/// let mut writer = LogWriter::new(Vec::new(), &pmc::global::this_machine())?;
/// writer.writelog(42, 1_000)?;
/// writer.close()?;
/// let bytes = writer.into_inner();
///
/// let mut reader = LogReader::from_reader(std::io::Cursor::new(bytes));
/// let mut user_values = Vec::new();
/// loop {
///     match reader.read() {
///         ReadState::Ok(event) => {
///             if let LogRecord::Userdata { value } = event.record {
///                 user_values.push(value);
///             }
///         }
///         ReadState::Eof => break,
///         other => panic!("{other:?}"),
///     }
/// }
/// assert_eq!(user_values, [42]);
/// # Ok::<(), pmc::Error>(())
/// ```
///
/// Records are decoded with the layouts of the version the stream's
/// INITIALIZE gives (FreeBSD 14's until one is seen; FreeBSD 12–13's
/// one-address PROCEXEC below `PMC_VERSION` major 0x0A), and DROPNOTIFY's lost count
/// is believed only when INITIALIZE carries [`super::ORIGIN_MARK`].
pub struct LogReader {
    source: Option<Box<dyn Read + Send>>,
    buf: Vec<u8>,
    start: usize,
    /// Stream offset of `buf[start]` (libpmc's `ps_offset`).
    offset: u64,
    /// Records read (libpmc's `ps_count`).
    count: u64,
    version: u32,
    from_this_crate: bool,
    /// Sticky: an error, or EOF after CLOSELOG.
    state: Option<ReadState>,
    /// The iterator already returned the sticky error.
    error_reported: bool,
}

impl fmt::Debug for LogReader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LogReader")
            .field("offset", &self.offset)
            .field("count", &self.count)
            .field("version", &format_args!("{:#x}", self.version))
            .field("buffered", &(self.buf.len() - self.start))
            .field("state", &self.state)
            .finish()
    }
}

impl LogReader {
    fn with_source(source: Option<Box<dyn Read + Send>>) -> LogReader {
        LogReader {
            source,
            buf: Vec::new(),
            start: 0,
            offset: 0,
            count: 0,
            version: PMC_VERSION,
            from_this_crate: false,
            state: None,
            error_reported: false,
        }
    }

    /// Reads from a file, pipe or socket (`pmclog_open(fd)`).
    pub fn from_reader(r: impl Read + Send + 'static) -> LogReader {
        LogReader::with_source(Some(Box::new(r)))
    }

    /// Reads from bytes given with [`LogReader::feed`] (`pmclog_open(-1)`).
    pub fn from_memory() -> LogReader {
        LogReader::with_source(None)
    }

    /// Adds bytes (memory mode; `pmclog_feed`).
    pub fn feed(&mut self, bytes: &[u8]) {
        if self.start > 0 && self.start == self.buf.len() {
            self.buf.clear();
            self.start = 0;
        }
        self.buf.extend_from_slice(bytes);
    }

    /// libpmc's `ps_offset`: the stream offset just past the last record
    /// read.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// libpmc's `ps_count`: records read so far. (Not `count`: on a
    /// `LogReader` value that name resolves to `Iterator::count`, which
    /// consumes the reader.)
    pub fn records_read(&self) -> u64 {
        self.count
    }

    /// The `pl_version` of the stream's INITIALIZE (FreeBSD 14's
    /// `PMC_VERSION` until one is read).
    pub fn version(&self) -> u32 {
        self.version
    }

    /// Whether the stream's INITIALIZE says this crate wrote it.
    pub fn is_from_this_crate(&self) -> bool {
        self.from_this_crate
    }

    fn fail(&mut self, what: ReadError) -> ReadState {
        let s = ReadState::Error(what);
        self.state = Some(s.clone());
        s
    }

    /// The next record, or why there is none.
    pub fn read(&mut self) -> ReadState {
        if let Some(s) = &self.state {
            return s.clone();
        }
        loop {
            let avail = self.buf.len() - self.start;
            if avail >= 4 {
                let h = &self.buf[self.start..self.start + 4];
                let header = u32::from_ne_bytes([h[0], h[1], h[2], h[3]]);
                let len = (header & 0xffff) as usize;
                if header >> 24 != MAGIC {
                    return self.fail(ReadError::BadMagic {
                        offset: self.offset,
                        magic: header >> 24,
                    });
                }
                // hwpmc rounds every record up to 4 bytes.
                if len < HEADER_LEN || !len.is_multiple_of(4) {
                    return self.fail(ReadError::BadLength {
                        offset: self.offset,
                        len,
                    });
                }
                if avail >= len {
                    return self.take(len);
                }
            }
            let Some(src) = self.source.as_mut() else {
                return ReadState::RequireData;
            };
            let mut chunk = [0u8; 16 * 1024];
            match src.read(&mut chunk) {
                // The writer may not be done: keep the partial record and
                // read on next time.
                Ok(0) => return ReadState::Eof,
                Ok(n) => self.feed(&chunk[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    return ReadState::RequireData;
                }
                Err(e) => {
                    return self.fail(ReadError::Io {
                        offset: self.offset,
                        kind: e.kind(),
                        os_errno: e.raw_os_error(),
                        message: e.to_string(),
                    });
                }
            }
        }
    }

    /// Decodes the whole record of `len` bytes at `start`.
    fn take(&mut self, len: usize) -> ReadState {
        let at = self.offset;
        let bytes = &self.buf[self.start..self.start + len];
        let decoded = LogRecord::decode_with(bytes, at, self.version, self.from_this_crate);
        let (timestamp, record) = match decoded {
            Ok(r) => r,
            Err(e) => {
                return self.fail(ReadError::BadRecord {
                    offset: at,
                    what: e.to_string(),
                });
            }
        };
        self.start += len;
        self.offset += len as u64;
        self.count += 1;
        if self.start > 1 << 20 {
            self.buf.drain(..self.start);
            self.start = 0;
        }
        match &record {
            LogRecord::Initialize {
                version, marked, ..
            } => {
                self.version = *version;
                self.from_this_crate = *marked;
            }
            LogRecord::Closelog => self.state = Some(ReadState::Eof),
            _ => {}
        }
        ReadState::Ok(LogEvent {
            offset: at,
            end_offset: self.offset,
            count: self.count,
            timestamp,
            record,
        })
    }
}

impl Iterator for LogReader {
    type Item = std::result::Result<LogEvent, ReadError>;

    /// Records until EOF; an error ends the iteration after being returned
    /// (memory mode also ends when more data is required). A file that
    /// ends inside a record is an error here, since nothing will follow;
    /// use [`LogReader::read`] to tail a log still being written.
    fn next(&mut self) -> Option<Self::Item> {
        match self.read() {
            ReadState::Ok(e) => Some(Ok(e)),
            ReadState::Eof if self.buf.len() > self.start && self.state.is_none() => {
                let what = ReadError::Truncated {
                    offset: self.offset,
                    bytes: self.buf.len() - self.start,
                };
                self.fail(what.clone());
                self.error_reported = true;
                Some(Err(what))
            }
            ReadState::Eof | ReadState::RequireData => None,
            ReadState::Error(_) if self.error_reported => None,
            ReadState::Error(e) => {
                self.error_reported = true;
                Some(Err(e))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// USERDATA (`struct pmclog_userdata`, 24 bytes: header, `pl_userdata`
    /// at 16, `pl_pad` at 20) laid out by hand.
    fn userdata(value: u32) -> Vec<u8> {
        let mut b = vec![0u8; 24];
        let header = (0xEEu32 << 24) | (13 << 16) | 24;
        b[0..4].copy_from_slice(&header.to_ne_bytes());
        b[16..20].copy_from_slice(&value.to_ne_bytes());
        b
    }

    /// The debug form shows where the reader is: libpmc's `ps_offset` and
    /// `ps_count`, the log version, and the bytes waiting for the rest of
    /// their record.
    #[test]
    fn debug_shows_the_position_and_the_waiting_bytes() {
        let mut r = LogReader::from_memory();
        r.feed(&userdata(1));
        r.feed(&userdata(2)[..10]);
        assert!(matches!(r.read(), ReadState::Ok(_)));
        assert_eq!(r.read(), ReadState::RequireData);
        let d = format!("{r:?}");
        for part in [
            "offset: 24",
            "count: 1",
            "version: 0xa000000",
            "buffered: 10",
            "state: None",
        ] {
            assert!(d.contains(part), "{part} in {d}");
        }
    }

    /// Fed record by record and read as it goes (a `MemoryLog` follower),
    /// a memory reader holds only the bytes not yet read: what was read is
    /// dropped at the next feed.
    #[test]
    fn a_memory_reader_drops_what_it_has_read() {
        let mut r = LogReader::from_memory();
        for i in 0..100 {
            r.feed(&userdata(i));
            assert_eq!(r.buf.len(), 24, "after feeding record {i}");
            assert!(
                matches!(r.read(), ReadState::Ok(e) if e.record == LogRecord::Userdata { value: i })
            );
        }
        assert_eq!(r.records_read(), 100);
    }

    /// A file whose reads never end on a record boundary (a first read of
    /// 1002 bytes, then 1000: every boundary is 2 mod 4, every record a
    /// multiple of 4) never lets the reader start over; it still holds at
    /// most 1 MiB of read bytes plus one read's worth, for a 3 MiB log.
    #[test]
    fn a_file_reader_holds_a_bounded_window() {
        struct Uneven {
            data: Vec<u8>,
            pos: usize,
        }
        impl Read for Uneven {
            fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
                let want = if self.pos == 0 { 1002 } else { 1000 };
                let n = want.min(buf.len()).min(self.data.len() - self.pos);
                buf[..n].copy_from_slice(&self.data[self.pos..self.pos + n]);
                self.pos += n;
                Ok(n)
            }
        }
        let records = 3 * (1 << 20) / 24;
        let mut data = Vec::with_capacity(records * 24);
        for i in 0..records {
            data.extend_from_slice(&userdata(i as u32));
        }
        let mut r = LogReader::from_reader(Uneven { data, pos: 0 });
        let mut most = 0;
        for i in 0..records {
            match r.read() {
                ReadState::Ok(e) => assert_eq!(e.record, LogRecord::Userdata { value: i as u32 }),
                other => panic!("record {i}: {other:?}"),
            }
            most = most.max(r.buf.len());
        }
        assert_eq!(r.read(), ReadState::Eof);
        assert!(most <= (1 << 20) + 24 + 1002, "held {most} bytes");
    }
}
