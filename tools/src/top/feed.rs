//! Where `pmcstat -T` gets its records: the bytes a live session logs,
//! read a bounded number of records at a time, with a bounded backlog.

use std::collections::VecDeque;

use pmc::log::{LogEvent, LogReader, LogRecord, ReadState};

use super::Feed;

/// The most logged bytes the view lets wait unread. Past it, samples are
/// counted and passed over unnamed until the view catches up — the
/// records that say what processes map, fork, exec and exit are still
/// read — as hwpmc drops the samples its reader does not take in time
/// (DROPNOTIFY) instead of growing its buffers. A system-wide flood
/// (every CPU busy, processes coming and going) logs ~6 MB/s.
pub const MAX_BACKLOG: usize = 16 << 20;

/// The bytes handed to the reader at once: it keeps what it was fed until
/// read, and moves the rest down as it goes, so a whole backlog fed at
/// once would be moved over and over.
const CHUNK: usize = 1 << 20;

/// A [`Feed`] over the bytes `source` gives: `source(refresh)` returns the
/// bytes logged since its last call; `prepare` applies `-r`, `-i` and
/// `-z` to the records taken; `seen` is told of every record read, those
/// passed over included.
pub struct LogFeed<S, P, R> {
    source: S,
    prepare: P,
    seen: R,
    reader: LogReader,
    /// Pulled, not yet fed to the reader: (bytes, how many already fed).
    backlog: VecDeque<(Vec<u8>, usize)>,
    backlog_bytes: usize,
    /// Bytes fed to the reader so far (its offset is what it read of them).
    fed: u64,
    /// The last take stopped at its limit.
    more: bool,
    skipped: u64,
}

impl<S, P, R> std::fmt::Debug for LogFeed<S, P, R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LogFeed")
            .field("backlog_bytes", &self.backlog_bytes)
            .field("fed", &self.fed)
            .field("skipped", &self.skipped)
            .finish()
    }
}

impl<S, P, R> LogFeed<S, P, R>
where
    S: FnMut(bool) -> Result<Vec<u8>, String>,
    P: FnMut(&[LogEvent]) -> Vec<LogEvent>,
    R: FnMut(&LogRecord),
{
    /// A feed reading what `source` gives.
    pub fn new(source: S, prepare: P, seen: R) -> Self {
        LogFeed {
            source,
            prepare,
            seen,
            reader: LogReader::from_memory(),
            backlog: VecDeque::new(),
            backlog_bytes: 0,
            fed: 0,
            more: false,
            skipped: 0,
        }
    }

    /// Samples passed over because the backlog was past [`MAX_BACKLOG`].
    pub fn skipped(&self) -> u64 {
        self.skipped
    }

    /// Bytes pulled and not yet read as records.
    pub fn waiting(&self) -> usize {
        let in_reader = self.fed.saturating_sub(self.reader.offset());
        self.backlog_bytes + usize::try_from(in_reader).unwrap_or(usize::MAX)
    }

    /// Hands the reader the next chunk of the backlog; `false` when none.
    fn feed_reader(&mut self) -> bool {
        let Some((bytes, done)) = self.backlog.front_mut() else {
            return false;
        };
        let end = bytes.len().min(*done + CHUNK);
        self.reader.feed(&bytes[*done..end]);
        self.fed += (end - *done) as u64;
        self.backlog_bytes -= end - *done;
        *done = end;
        if *done == bytes.len() {
            self.backlog.pop_front();
        }
        true
    }
}

impl<S, P, R> Feed for LogFeed<S, P, R>
where
    S: FnMut(bool) -> Result<Vec<u8>, String>,
    P: FnMut(&[LogEvent]) -> Vec<LogEvent>,
    R: FnMut(&LogRecord),
{
    fn pull(&mut self, refresh: bool) -> Result<(), String> {
        let bytes = (self.source)(refresh)?;
        if !bytes.is_empty() {
            self.backlog_bytes += bytes.len();
            self.backlog.push_back((bytes, 0));
        }
        Ok(())
    }

    fn take(&mut self, limit: usize) -> Result<Vec<LogEvent>, String> {
        let mut taken = Vec::new();
        let mut read = 0;
        self.more = false;
        while read < limit {
            match self.reader.read() {
                ReadState::Ok(e) => {
                    read += 1;
                    (self.seen)(&e.record);
                    if matches!(e.record, LogRecord::Callchain { .. })
                        && self.waiting() > MAX_BACKLOG
                    {
                        self.skipped += 1;
                        continue;
                    }
                    taken.push(e);
                }
                ReadState::RequireData => {
                    if !self.feed_reader() {
                        break;
                    }
                }
                // CLOSELOG: nothing follows.
                ReadState::Eof => break,
                ReadState::Error(e) => return Err(format!("the log: {e}")),
            }
        }
        self.more = read == limit;
        Ok((self.prepare)(&taken))
    }

    fn behind(&self) -> bool {
        self.more || !self.backlog.is_empty()
    }
}
