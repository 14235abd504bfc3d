//! Reading a perf.data: the file mode header, attributes and features at
//! their offsets, the records one at a time from the data section or the
//! pipe, and perf's own record types.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom};
use std::os::unix::fs::FileExt as _;

use super::attrs::{self, ATTR_SIZE_MAX, ATTR_SIZE_VER0};
use super::features::{self, Features};
use super::order::Queue;
use super::{MAX_FEATURE_BYTES, MAX_IDS, PerfData, PerfDataError};

/// "PERFILE2" read as a native-endian u64 (perf's `PERF_MAGIC`).
const MAGIC: u64 = u64::from_le_bytes(*b"PERFILE2");
/// perf's first format.
const MAGIC_V1: &[u8; 8] = b"PERFFILE";
/// The file mode header's size (`struct perf_file_header`).
const FILE_HEADER: usize = 104;
/// The pipe mode header's size (`struct perf_pipe_file_header`).
const PIPE_HEADER: u64 = 16;

/// perf's own record types (`enum perf_user_event_type`) start here.
pub(super) const USER_TYPE_START: u32 = 64;
const HEADER_ATTR: u32 = 64;
const HEADER_TRACING_DATA: u32 = 66;
const HEADER_BUILD_ID: u32 = 67;
const FINISHED_ROUND: u32 = 68;
const AUXTRACE: u32 = 71;
const EVENT_UPDATE: u32 = 78;
const HEADER_FEATURE: u32 = 80;
const COMPRESSED: u32 = 81;
const COMPRESSED2: u32 = 83;
/// EVENT_UPDATE's type for a name.
const EVENT_UPDATE_NAME: u64 = 2;

/// Records read one at a time, with their offsets.
pub(super) struct RecordStream {
    reader: Box<dyn Read + Send>,
    pub(super) offset: u64,
    /// Said when the records end (file mode: the data section reached past
    /// the file's end, or the header was never completed).
    pub(super) end_note: Option<PerfDataError>,
}

impl std::fmt::Debug for RecordStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecordStream")
            .field("offset", &self.offset)
            .finish_non_exhaustive()
    }
}

/// Reads exactly `buf.len()` bytes; `Ok(n < len)` when the input ended
/// first.
fn read_full(r: &mut dyn Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

impl RecordStream {
    /// The next record's offset and bytes; `None` at a clean end.
    pub(super) fn next_record(&mut self) -> Result<Option<(u64, Vec<u8>)>, PerfDataError> {
        let at = self.offset;
        let io = |source| PerfDataError::Io { offset: at, source };
        let mut header = [0u8; 8];
        let n = read_full(&mut self.reader, &mut header).map_err(io)?;
        if n == 0 {
            return Ok(None);
        }
        if n < 8 {
            return Err(PerfDataError::truncated(
                at + n as u64,
                format!("the record header at byte {at}"),
            ));
        }
        let size = usize::from(u16::from_ne_bytes([header[6], header[7]]));
        if size < 8 {
            return Err(PerfDataError::corrupt(
                at,
                format!("a record of {size} bytes, shorter than its 8-byte header"),
            ));
        }
        let mut bytes = vec![0u8; size];
        bytes[..8].copy_from_slice(&header);
        let n = read_full(&mut self.reader, &mut bytes[8..]).map_err(io)?;
        if n < size - 8 {
            return Err(PerfDataError::truncated(
                at + 8 + n as u64,
                format!("the record of {size} bytes at byte {at}"),
            ));
        }
        self.offset += size as u64;
        Ok(Some((at, bytes)))
    }

    /// Skips `n` bytes that follow a record outside it (TRACING_DATA,
    /// AUXTRACE payloads).
    fn skip(&mut self, n: u64, what: &str) -> Result<(), PerfDataError> {
        let at = self.offset;
        let copied = std::io::copy(&mut (&mut self.reader).take(n), &mut std::io::sink())
            .map_err(|source| PerfDataError::Io { offset: at, source })?;
        self.offset += copied;
        if copied < n {
            return Err(PerfDataError::truncated(
                self.offset,
                format!("the {n} bytes of {what} at byte {at}"),
            ));
        }
        Ok(())
    }
}

/// A new reader with no events yet.
fn empty(reader: Box<dyn Read + Send>, offset: u64, pipe: bool) -> PerfData {
    PerfData {
        attrs: Vec::new(),
        features: Features::default(),
        ids: HashMap::new(),
        stream: RecordStream {
            reader,
            offset,
            end_note: None,
        },
        queue: Queue::default(),
        pending: None,
        end_error: None,
        done: false,
        pipe,
        skipped: 0,
    }
}

/// Checks the magic of the first 8 bytes.
fn check_magic(first: &[u8]) -> Result<(), PerfDataError> {
    if first.len() == 8 {
        let m = u64::from_ne_bytes(first.try_into().unwrap_or_default());
        if m == MAGIC {
            return Ok(());
        }
        if m.swap_bytes() == MAGIC {
            return Err(PerfDataError::OtherEndian);
        }
        if first == MAGIC_V1 {
            return Err(PerfDataError::Version1);
        }
    }
    Err(PerfDataError::NotPerfData {
        magic: first.to_vec(),
    })
}

/// A section `(offset, size)` of the header at `at`.
fn section(h: &[u8], at: usize) -> (u64, u64) {
    let w = |i: usize| u64::from_ne_bytes(h[i..i + 8].try_into().unwrap_or_default());
    (w(at), w(at + 8))
}

/// `(offset, size)` checked against the file's length.
fn within(len: u64, (offset, size): (u64, u64), what: &str) -> Result<(), PerfDataError> {
    match offset.checked_add(size) {
        Some(end) if end <= len => Ok(()),
        _ => Err(PerfDataError::truncated(
            len,
            format!("{what} (bytes {offset} to {offset}+{size})"),
        )),
    }
}

/// Reads `size` bytes at `offset` (checked against the file's length by
/// the caller).
fn read_at(file: &File, offset: u64, size: usize) -> Result<Vec<u8>, PerfDataError> {
    let mut buf = vec![0u8; size];
    file.read_exact_at(&mut buf, offset)
        .map_err(|source| PerfDataError::Io { offset, source })?;
    Ok(buf)
}

/// [`PerfData::open`].
pub(super) fn open_file(mut file: File) -> Result<PerfData, PerfDataError> {
    let len = file
        .metadata()
        .map_err(|source| PerfDataError::Io { offset: 0, source })?
        .len();
    let mut first = vec![0u8; 16.min(len as usize)];
    file.read_exact_at(&mut first, 0)
        .map_err(|source| PerfDataError::Io { offset: 0, source })?;
    check_magic(&first[..first.len().min(8)])?;
    if first.len() < 16 {
        return Err(PerfDataError::truncated(len, "the header"));
    }
    let header_size = u64::from_ne_bytes(first[8..16].try_into().unwrap_or_default());
    if header_size == PIPE_HEADER {
        // `perf record -o - > FILE`: a pipe mode stream in a file.
        file.seek(SeekFrom::Start(PIPE_HEADER))
            .map_err(|source| PerfDataError::Io { offset: 0, source })?;
        let reader = BufReader::with_capacity(1 << 16, file);
        return read_pipe_head(empty(Box::new(reader), PIPE_HEADER, true));
    }
    if header_size < FILE_HEADER as u64 {
        return Err(PerfDataError::corrupt(
            8,
            format!(
                "a header of {header_size} bytes (file mode's is {FILE_HEADER}, pipe mode's {PIPE_HEADER})"
            ),
        ));
    }
    within(len, (0, FILE_HEADER as u64), "the header")?;
    let h = read_at(&file, 0, FILE_HEADER)?;
    let attr_entry = u64::from_ne_bytes(h[16..24].try_into().unwrap_or_default());
    let attrs_section = section(&h, 24);
    let data = section(&h, 40);
    let bitmap: Vec<u64> = (0..4)
        .map(|i| u64::from_ne_bytes(h[72 + 8 * i..80 + 8 * i].try_into().unwrap_or_default()))
        .collect();
    let has = |bit: u64| bitmap[(bit / 64) as usize] >> (bit % 64) & 1 == 1;
    if has(features::COMPRESSED) {
        return Err(PerfDataError::Compressed { offset: 72 });
    }
    let entry = usize::try_from(attr_entry).unwrap_or(usize::MAX);
    if !(ATTR_SIZE_VER0 + 16..=ATTR_SIZE_MAX + 16).contains(&entry) {
        return Err(PerfDataError::corrupt(
            16,
            format!("event attribute entries of {attr_entry} bytes"),
        ));
    }
    within(len, attrs_section, "the event attributes")?;
    let count = attrs_section.1 / attr_entry;
    if count as usize > super::MAX_ATTRS {
        return Err(PerfDataError::corrupt(
            24,
            format!("{count} events (at most {} are read)", super::MAX_ATTRS),
        ));
    }
    let clone = file
        .try_clone()
        .map_err(|source| PerfDataError::Io { offset: 0, source })?;
    let mut pd = empty(Box::new(std::io::empty()), data.0, false);
    for i in 0..count {
        let at = attrs_section.0 + i * attr_entry;
        let bytes = read_at(&file, at, entry)?;
        let attr_bytes = &bytes[..entry - 16];
        let size = attrs::attr_size(attr_bytes, at)?.min(attr_bytes.len());
        let ids_section = section(&bytes, entry - 16);
        within(len, ids_section, "an event's sample ids")?;
        let n = (ids_section.1 / 8) as usize;
        if pd.ids.len() + n > MAX_IDS {
            return Err(PerfDataError::corrupt(
                at,
                format!("more than {MAX_IDS} sample ids"),
            ));
        }
        let ids = read_at(&file, ids_section.0, n * 8)?
            .chunks_exact(8)
            .map(|c| u64::from_ne_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]))
            .collect();
        pd.add_attr(attrs::parse(&attr_bytes[..size], ids), at)?;
    }
    if pd.attrs.is_empty() {
        return Err(PerfDataError::corrupt(24, "no events"));
    }
    // The data section: to the file's end when it says more (a copy cut
    // short) or nothing (a recording killed before it wrote its header).
    if data.0 > len {
        return Err(PerfDataError::truncated(
            len,
            format!("the data section, which starts at byte {}", data.0),
        ));
    }
    let available = len - data.0;
    let data_len = if data.1 == 0 && available > 0 {
        pd.stream.end_note = Some(PerfDataError::truncated(
            len,
            "a recording whose header was never completed (perf record killed?): its records were read to the end of the file",
        ));
        available
    } else if data.1 > available {
        pd.stream.end_note = Some(PerfDataError::truncated(
            len,
            format!(
                "the data section, which the header says is {} bytes",
                data.1
            ),
        ));
        available
    } else {
        data.1
    };
    let mut reader = clone;
    reader
        .seek(SeekFrom::Start(data.0))
        .map_err(|source| PerfDataError::Io {
            offset: data.0,
            source,
        })?;
    pd.stream.reader = Box::new(BufReader::with_capacity(1 << 16, reader).take(data_len));
    if data.1 > 0 && data.1 <= available {
        read_feature_sections(&mut pd, &file, len, data.0 + data.1, has);
    }
    Ok(pd)
}

/// The feature sections after the data: one `(offset, size)` per feature
/// bit set, in bit order.
fn read_feature_sections(
    pd: &mut PerfData,
    file: &File,
    len: u64,
    at: u64,
    has: impl Fn(u64) -> bool,
) {
    let bits: Vec<u64> = (1..256).filter(|b| has(*b)).collect();
    let table = at..at + 16 * bits.len() as u64;
    if table.end > len {
        pd.features.skipped.push(format!(
            "the feature table at byte {at}: past the file's end"
        ));
        return;
    }
    let Ok(t) = read_at(file, at, 16 * bits.len()) else {
        pd.features
            .skipped
            .push(format!("the feature table at byte {at}: unreadable"));
        return;
    };
    for (i, bit) in bits.into_iter().enumerate() {
        let s = section(&t, 16 * i);
        if within(len, s, "a feature").is_err() || s.1 > MAX_FEATURE_BYTES {
            pd.features.skipped.push(format!(
                "feature {bit}: bytes {} to {}+{} are past the file's end or over {MAX_FEATURE_BYTES}",
                s.0, s.0, s.1
            ));
            continue;
        }
        match read_at(file, s.0, s.1 as usize) {
            Ok(bytes) => pd.feature(bit, &bytes),
            Err(e) => pd.features.skipped.push(format!("feature {bit}: {e}")),
        }
    }
}

/// [`PerfData::from_stream`].
pub(super) fn open_stream(mut reader: Box<dyn Read + Send>) -> Result<PerfData, PerfDataError> {
    let mut h = [0u8; 16];
    let n =
        read_full(&mut reader, &mut h).map_err(|source| PerfDataError::Io { offset: 0, source })?;
    check_magic(&h[..n.min(8)])?;
    if n < 16 {
        return Err(PerfDataError::truncated(n as u64, "the header"));
    }
    let size = u64::from_ne_bytes(h[8..16].try_into().unwrap_or_default());
    if size != PIPE_HEADER {
        return Err(PerfDataError::corrupt(
            8,
            format!(
                "a header of {size} bytes on a pipe: a file mode perf.data ({FILE_HEADER}) must be read as a file, not from standard input"
            ),
        ));
    }
    read_pipe_head(empty(reader, PIPE_HEADER, true))
}

/// Reads a pipe's records up to its first data record (kept for
/// `next_event`): its events and the features sent before it.
fn read_pipe_head(mut pd: PerfData) -> Result<PerfData, PerfDataError> {
    while let Some((offset, bytes)) = pd.stream.next_record()? {
        let kind = u32::from_ne_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
        if kind < USER_TYPE_START || kind == FINISHED_ROUND {
            pd.pending = Some((offset, bytes));
            break;
        }
        pd.user_record(kind, offset, &bytes)?;
    }
    if pd.attrs.is_empty() {
        return Err(PerfDataError::corrupt(
            pd.stream.offset,
            "a pipe mode stream without events (no HEADER_ATTR record before its data)",
        ));
    }
    Ok(pd)
}

impl PerfData {
    /// Reads a feature section (file mode, pipe HEADER_FEATURE).
    fn feature(&mut self, bit: u64, bytes: &[u8]) {
        for (i, named) in self.features.read(bit, bytes).into_iter().enumerate() {
            match named.ids.first() {
                Some(&id) if self.ids.contains_key(&id) => self.name_event(id, &named.name),
                // No ids (one event): the events in order.
                _ => {
                    if let Some(a) = self.attrs.get_mut(i) {
                        a.name = named.name;
                    }
                }
            }
        }
    }

    /// One of perf's own records (type 64 and up).
    pub(super) fn user_record(
        &mut self,
        kind: u32,
        offset: u64,
        bytes: &[u8],
    ) -> Result<(), PerfDataError> {
        let body = &bytes[8..];
        let word = |at: usize| {
            body.get(at..at + 8)
                .map(|b| u64::from_ne_bytes(b.try_into().unwrap_or_default()))
        };
        match kind {
            HEADER_ATTR => {
                let size = attrs::attr_size(body, offset)?;
                if size > body.len() {
                    return Err(PerfDataError::corrupt(
                        offset,
                        format!(
                            "a HEADER_ATTR record of {} bytes holding an attribute of {size}",
                            bytes.len()
                        ),
                    ));
                }
                let ids = body[size..]
                    .chunks_exact(8)
                    .map(|c| u64::from_ne_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]))
                    .collect();
                self.add_attr(attrs::parse(&body[..size], ids), offset)?;
            }
            HEADER_TRACING_DATA => {
                let n = body
                    .get(..4)
                    .map_or(0, |b| u32::from_ne_bytes(b.try_into().unwrap_or_default()));
                self.stream.skip(u64::from(n), "tracing data")?;
            }
            AUXTRACE => {
                let n = word(0).unwrap_or(0);
                self.stream.skip(n, "AUX area data")?;
            }
            HEADER_BUILD_ID => {
                if let Some(id) = features::build_id_record(bytes) {
                    self.features.build_ids.push(id);
                }
            }
            FINISHED_ROUND => self.queue.round(),
            EVENT_UPDATE => {
                if let (Some(EVENT_UPDATE_NAME), Some(id)) = (word(0), word(8)) {
                    let name = features::c_string(&body[16..]);
                    self.name_event(id, &name);
                }
            }
            HEADER_FEATURE => {
                if let Some(bit) = word(0) {
                    if bit == features::COMPRESSED {
                        return Err(PerfDataError::Compressed { offset });
                    }
                    self.feature(bit, &body[8..]);
                }
            }
            COMPRESSED | COMPRESSED2 => return Err(PerfDataError::Compressed { offset }),
            _ => {}
        }
        Ok(())
    }
}
