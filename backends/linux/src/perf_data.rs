//! Reading the files `perf record` writes: `perf.data` in file mode (a
//! header pointing at the attributes, the data and the feature sections)
//! and in pipe mode (`perf record -o -`: a 16-byte header, then a stream
//! whose first records describe the events).
//!
//! The layouts are perf's `tools/perf/Documentation/perf.data-file-format.txt`.
//! A file mode file is
//!
//! ```text
//! header (104 bytes): magic "PERFILE2", header size, attr entry size,
//!                     sections (offset, size) of attrs, data, event types,
//!                     a 256-bit map of the feature sections present
//! attrs:    per event, its perf_event_attr then the (offset, size) of its ids
//! data:     PERF_RECORD_* records as the kernel wrote them, and perf's own
//!           (types 64 and up: FINISHED_ROUND, EVENT_UPDATE, …)
//! features: after the data, one (offset, size) per feature bit set, in bit
//!           order, then the features (build ids, hostname, event names, …)
//! ```
//!
//! A pipe mode stream carries the same facts as records: HEADER_ATTR per
//! event, EVENT_UPDATE with its name, HEADER_FEATURE per feature,
//! HEADER_BUILD_ID per object.
//!
//! [`PerfData`] decodes the kernel's records with the crate's
//! [`RecordParser`] (each event's, built from its attribute), attributing
//! each record to its event by `PERF_SAMPLE_IDENTIFIER` or the position of
//! its id as perf does, and hands them out in perf's time order
//! ([`PerfData::next_event`]).
//!
//! The file is untrusted input: every offset and size is checked against the
//! file's length, nothing is allocated by a size the file gives beyond the
//! caps below, and a truncated or corrupt file ends with a
//! [`PerfDataError`] naming the byte offset, after the records before the
//! damage. Files of the other byte order and compressed records (`perf
//! record -z`) are refused with what to do instead.

mod attrs;
mod features;
mod order;
mod stream;
#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::io::Read;

pub use attrs::{EventDesc, Sampling};
pub use features::{BuildId, Features};

use crate::attr::SampleType;
use crate::record::{Record, RecordParser};
use order::Queue;
use stream::RecordStream;

/// The most events (attributes) a file may describe.
pub const MAX_ATTRS: usize = 4096;
/// The most sample ids all events of a file may have together.
pub const MAX_IDS: usize = 1 << 20;
/// The largest feature section read (a larger one is skipped, with a note
/// in [`Features::skipped`]).
pub const MAX_FEATURE_BYTES: u64 = 64 << 20;

/// Why a perf.data could not be read (further).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PerfDataError {
    /// The file does not start with perf's magic.
    #[error(
        "not a perf.data: it starts with {magic:02x?}, not perf's magic \"PERFILE2\" (was it written by `perf record`?)"
    )]
    NotPerfData {
        /// The first bytes (fewer than 8 for a shorter file).
        magic: Vec<u8>,
    },
    /// Written on a machine of the other byte order.
    #[error(
        "a perf.data of the other byte order: convert it with `perf inject -i FILE -o OUT` (perf reads either order) on this machine, or report it where it was recorded"
    )]
    OtherEndian,
    /// perf's first format (magic "PERFFILE"), gone since 2011.
    #[error(
        "a perf.data of perf's first format (magic \"PERFFILE\"): rewrite it with a current `perf inject -i FILE -o OUT`"
    )]
    Version1,
    /// Records compressed by `perf record -z`.
    #[error(
        "byte {offset}: the records are compressed (`perf record -z`), which is not read here: decompress the file with `perf inject -i FILE -o OUT` and read OUT"
    )]
    Compressed {
        /// Where the first compressed record (or the header saying so) is.
        offset: u64,
    },
    /// The file ends inside something it announced.
    #[error(
        "the file ends at byte {offset}, inside {what}: it was cut short (a recording killed, a disk full, a copy unfinished)"
    )]
    Truncated {
        /// Where the file (or its data) ends.
        offset: u64,
        /// What it ends inside.
        what: String,
    },
    /// Something the file says cannot be.
    #[error("byte {offset}: {what}: the file is corrupt")]
    Corrupt {
        /// Where.
        offset: u64,
        /// What is wrong.
        what: String,
    },
    /// Reading failed.
    #[error("reading at byte {offset}: {source}")]
    Io {
        /// Where.
        offset: u64,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
}

impl PerfDataError {
    /// The byte offset the error names, where it names one.
    pub fn offset(&self) -> Option<u64> {
        match self {
            PerfDataError::Compressed { offset }
            | PerfDataError::Truncated { offset, .. }
            | PerfDataError::Corrupt { offset, .. }
            | PerfDataError::Io { offset, .. } => Some(*offset),
            _ => None,
        }
    }

    pub(crate) fn corrupt(offset: u64, what: impl Into<String>) -> PerfDataError {
        PerfDataError::Corrupt {
            offset,
            what: what.into(),
        }
    }

    pub(crate) fn truncated(offset: u64, what: impl Into<String>) -> PerfDataError {
        PerfDataError::Truncated {
            offset,
            what: what.into(),
        }
    }
}

/// One record of the data, owned, with the event it belongs to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DataEvent {
    /// Its event: an index into [`PerfData::attrs`].
    pub attr: usize,
    /// Its time (the sample's, or the `sample_id` trailer's), when it has
    /// one.
    pub time: Option<u64>,
    /// Where it starts in the file or stream.
    pub offset: u64,
    parser: RecordParser,
    bytes: Vec<u8>,
}

impl DataEvent {
    /// The `PERF_RECORD_*` type.
    pub fn record_type(&self) -> u32 {
        u32::from_ne_bytes([self.bytes[0], self.bytes[1], self.bytes[2], self.bytes[3]])
    }

    /// The record's bytes, header included.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// Decodes it with its event's layout.
    pub fn record(&self) -> Result<Record<'_>, PerfDataError> {
        let at = usize::try_from(self.offset).unwrap_or(usize::MAX);
        self.parser
            .parse(&self.bytes, at)
            .map_err(|e| PerfDataError::corrupt(self.offset, e.to_string()))
    }
}

/// A perf.data being read: its events and features, then its records in
/// time order ([`PerfData::next_event`]).
#[derive(Debug)]
pub struct PerfData {
    attrs: Vec<EventDesc>,
    features: Features,
    /// Sample id → attr.
    ids: HashMap<u64, usize>,
    stream: RecordStream,
    queue: Queue,
    /// A record read ahead (pipe mode reads up to the first data record).
    pending: Option<(u64, Vec<u8>)>,
    /// Said once the records before it are handed out.
    end_error: Option<PerfDataError>,
    done: bool,
    pipe: bool,
    skipped: u64,
}

impl PerfData {
    /// Opens a perf.data file of either mode (a file mode header, or a
    /// pipe mode stream saved to a file), reading its header, events and
    /// features; the records are read as [`PerfData::next_event`] asks.
    pub fn open(file: std::fs::File) -> Result<PerfData, PerfDataError> {
        stream::open_file(file)
    }

    /// Reads a pipe mode stream (`perf record -o -`), from its header up to
    /// its first data record: the events and the features sent before it
    /// are known when this returns; later ones are added as they come.
    pub fn from_stream(reader: impl Read + Send + 'static) -> Result<PerfData, PerfDataError> {
        stream::open_stream(Box::new(reader))
    }

    /// The events, in file order.
    pub fn attrs(&self) -> &[EventDesc] {
        &self.attrs
    }

    /// The features read so far (in pipe mode they come with the stream).
    pub fn features(&self) -> &Features {
        &self.features
    }

    /// Whether the input is a pipe mode stream.
    pub fn is_pipe(&self) -> bool {
        self.pipe
    }

    /// Samples skipped because their id names no event.
    pub fn skipped_samples(&self) -> u64 {
        self.skipped
    }

    /// The next kernel record (`PERF_RECORD_*` types below 64; perf's own
    /// records are read, not returned), in perf's time order, or the error
    /// that ended the data after every record before it.
    ///
    /// The order is perf's ordered-events rule: records are buffered, and at
    /// each `PERF_RECORD_FINISHED_ROUND` those no later than the largest
    /// time seen before the previous round mark are handed out, earliest
    /// first (one round's records cannot be older than that); a file
    /// without rounds is sorted whole at its end. The buffer is bounded
    /// (`order::MAX_BUFFERED_BYTES`, 128 MiB of records, and
    /// `order::MAX_BUFFERED_EVENTS`, 1 048 576 records): past either cap the
    /// oldest record is handed out first, so a file that breaks the round
    /// rule by more than that comes out partly unordered rather than
    /// exhausting memory. Records without a time sort at the largest time
    /// seen before them.
    pub fn next_event(&mut self) -> Option<Result<DataEvent, PerfDataError>> {
        loop {
            if let Some(event) = self.queue.pop_ready() {
                return Some(Ok(event));
            }
            if self.done {
                return self.end_error.take().map(Err);
            }
            match self.read_one() {
                Ok(true) => {}
                Ok(false) => {
                    self.queue.finish();
                    self.done = true;
                }
                Err(e) => {
                    self.queue.finish();
                    self.done = true;
                    self.end_error = Some(e);
                }
            }
        }
    }

    /// Reads and files one record; `false` at the end of the data.
    fn read_one(&mut self) -> Result<bool, PerfDataError> {
        let (offset, bytes) = match self.pending.take() {
            Some(r) => r,
            None => match self.stream.next_record()? {
                Some(r) => r,
                None => {
                    if let Some(e) = self.stream.end_note.take() {
                        return Err(e);
                    }
                    return Ok(false);
                }
            },
        };
        let kind = u32::from_ne_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
        if kind >= stream::USER_TYPE_START {
            self.user_record(kind, offset, &bytes)?;
            return Ok(true);
        }
        let Some(attr) = self.attr_of(kind, &bytes) else {
            self.skipped += 1;
            return Ok(true);
        };
        let parser = self.attrs[attr].parser;
        let time = record_time(&parser, kind, &bytes);
        self.queue.push(DataEvent {
            attr,
            time,
            offset,
            parser,
            bytes,
        });
        Ok(true)
    }

    /// The event a kernel record belongs to, as perf's
    /// `evlist__event2evsel` finds it: the only one; else by the id at
    /// `PERF_SAMPLE_IDENTIFIER`'s place or `PERF_SAMPLE_ID`'s (counted from
    /// the start of a sample, from the end of another record's `sample_id`);
    /// a record without one belongs to the first event. `None`: a sample
    /// whose id names no event.
    fn attr_of(&self, kind: u32, bytes: &[u8]) -> Option<usize> {
        if self.attrs.len() <= 1 {
            return Some(0);
        }
        let first = &self.attrs[0];
        let t = first.sample_type;
        let word = |at: usize| {
            let b = bytes.get(at..at.checked_add(8)?)?;
            Some(u64::from_ne_bytes(b.try_into().ok()?))
        };
        if kind == crate::record::kind::SAMPLE {
            let pos = id_position(t)?;
            let id = word(8 + 8 * pos)?;
            return self.ids.get(&id).copied();
        }
        if !first.parser.sample_id_all {
            return Some(0);
        }
        let Some(pos) = id_position_from_end(t) else {
            return Some(0);
        };
        let at = bytes.len().checked_sub(8 * pos)?;
        if at < 8 {
            return Some(0);
        }
        Some(
            word(at)
                .and_then(|id| self.ids.get(&id).copied())
                .unwrap_or(0),
        )
    }

    /// Adds an event (file attrs, pipe HEADER_ATTR).
    fn add_attr(&mut self, desc: EventDesc, offset: u64) -> Result<(), PerfDataError> {
        if self.attrs.len() >= MAX_ATTRS {
            return Err(PerfDataError::corrupt(
                offset,
                format!("more than {MAX_ATTRS} events"),
            ));
        }
        if self.ids.len() + desc.ids.len() > MAX_IDS {
            return Err(PerfDataError::corrupt(
                offset,
                format!("more than {MAX_IDS} sample ids"),
            ));
        }
        let index = self.attrs.len();
        for id in &desc.ids {
            self.ids.insert(*id, index);
        }
        self.attrs.push(desc);
        Ok(())
    }

    /// Names the event with sample id `id` (EVENT_DESC, EVENT_UPDATE).
    fn name_event(&mut self, id: u64, name: &str) {
        if let Some(&i) = self.ids.get(&id) {
            self.attrs[i].name = name.to_string();
        } else if self.attrs.len() == 1 {
            self.attrs[0].name = name.to_string();
        }
    }
}

/// perf's `id_pos`: the index of the sample id among a sample's leading
/// words (IDENTIFIER is first; else ID after IP, TID, TIME, ADDR).
fn id_position(t: SampleType) -> Option<usize> {
    if t.contains(SampleType::IDENTIFIER) {
        return Some(0);
    }
    if !t.contains(SampleType::ID) {
        return None;
    }
    Some(set_among(
        t,
        SampleType::IP | SampleType::TID | SampleType::TIME | SampleType::ADDR,
    ))
}

/// perf's `is_pos`: the id's place counted in words from a record's end
/// (IDENTIFIER is last; ID comes before STREAM_ID and CPU).
fn id_position_from_end(t: SampleType) -> Option<usize> {
    if t.contains(SampleType::IDENTIFIER) {
        return Some(1);
    }
    if !t.contains(SampleType::ID) {
        return None;
    }
    Some(1 + set_among(t, SampleType::CPU | SampleType::STREAM_ID))
}

/// How many of `fields` the sample type has: the words they take before
/// or after a field whose place depends on them.
fn set_among(t: SampleType, fields: SampleType) -> usize {
    (t & fields).bits().count_ones() as usize
}

/// A kernel record's time: a sample's `PERF_SAMPLE_TIME`, another record's
/// `sample_id` time (with `sample_id_all`).
fn record_time(parser: &RecordParser, kind: u32, bytes: &[u8]) -> Option<u64> {
    let t = parser.sample_type;
    if !t.contains(SampleType::TIME) {
        return None;
    }
    let word = |at: usize| {
        let b = bytes.get(at..at.checked_add(8)?)?;
        Some(u64::from_ne_bytes(b.try_into().ok()?))
    };
    if kind == crate::record::kind::SAMPLE {
        let before = set_among(t, SampleType::IDENTIFIER | SampleType::IP | SampleType::TID);
        return word(8 + 8 * before);
    }
    if !parser.sample_id_all {
        return None;
    }
    let after = set_among(
        t,
        SampleType::ID | SampleType::STREAM_ID | SampleType::CPU | SampleType::IDENTIFIER,
    );
    if bytes.len() < 8 + parser.sample_id_size() {
        return None;
    }
    word(bytes.len() - 8 * (after + 1))
}
