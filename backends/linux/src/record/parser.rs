//! [`RecordParser`]: what a record's layout depends on, decoding one record
//! or iterating a stream of them ([`Records`]), and [`OwnedRecord`].

use super::decoded::Record;
use super::kind;
use super::sample::{Layout, Sample, VARIABLE};
use crate::attr::{Attr, AttrBit, BranchSampleType, ReadFormat, SampleType};
use crate::error::{Error, Result};

/// What record layouts depend on.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RecordParser {
    /// `sample_type`.
    pub sample_type: SampleType,
    /// `read_format`.
    pub read_format: ReadFormat,
    /// `sample_id_all`.
    pub sample_id_all: bool,
    /// Number of registers in `sample_regs_user`.
    pub regs_user: u32,
    /// Number of registers in `sample_regs_intr`.
    pub regs_intr: u32,
    /// `PERF_SAMPLE_BRANCH_HW_INDEX`.
    pub branch_hw_index: bool,
}

impl RecordParser {
    /// The layout of `attr`'s records.
    pub fn for_attr(attr: &Attr) -> RecordParser {
        RecordParser {
            sample_type: attr.get_sample_type(),
            read_format: attr.get_read_format(),
            sample_id_all: attr.is_set(AttrBit::SAMPLE_ID_ALL),
            regs_user: attr.get_sample_regs_user().count_ones(),
            regs_intr: attr.get_sample_regs_intr().count_ones(),
            branch_hw_index: attr
                .get_branch_sample_type()
                .contains(BranchSampleType::HW_INDEX),
        }
    }

    /// [`Sample::format`]: what the variable walk needs besides the type.
    #[inline]
    fn sample_format(&self, misc: u16) -> u64 {
        u64::from(misc)
            | (self.read_format.bits() & 0xffff) << 16
            | u64::from(self.regs_user.min(255)) << 32
            | u64::from(self.regs_intr.min(255)) << 40
            | u64::from(self.branch_hw_index) << 48
    }

    /// Decodes one record (`bytes` starts with its 8-byte header and is
    /// exactly `header.size` long). `offset` is where it sits in its stream,
    /// for error messages.
    #[inline]
    pub fn parse<'a>(&self, bytes: &'a [u8], offset: usize) -> Result<Record<'a>> {
        self.parse_with(Layout::of(self.sample_type), bytes, offset)
    }

    /// [`RecordParser::parse`] with the sample layout computed once per
    /// stream (see [`Records`]).
    #[inline(always)]
    fn parse_with<'a>(&self, layout: Layout, bytes: &'a [u8], offset: usize) -> Result<Record<'a>> {
        if bytes.len() < 8 {
            return Err(Error::invalid(
                format!("record at byte {offset}"),
                "shorter than its 8-byte header",
            ));
        }
        let record_type = u32::from_ne_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
        let misc = u16::from_ne_bytes([bytes[4], bytes[5]]);
        let size = usize::from(u16::from_ne_bytes([bytes[6], bytes[7]]));
        if size < 8 || size > bytes.len() {
            return Err(Error::invalid(
                format!("record at byte {offset}"),
                format!(
                    "header size {size} does not fit the {} bytes given",
                    bytes.len()
                ),
            ));
        }
        let body = &bytes[8..size];
        if record_type == kind::SAMPLE {
            let sample = Sample {
                body,
                offset,
                layout,
                sample_type: self.sample_type,
                format: self.sample_format(misc),
            };
            if self.sample_type.intersects(VARIABLE) {
                // Walk once so that a malformed record fails here.
                sample.fields()?;
            } else if body.len() < layout.fixed() {
                return Err(Error::invalid(
                    format!("record at byte {offset}"),
                    format!(
                        "a sample of {} bytes, the sample type needs {}",
                        body.len(),
                        layout.fixed()
                    ),
                ));
            }
            return Ok(Record::Sample(sample));
        }
        self.parse_other(record_type, misc, body, offset)
    }

    /// Iterates the records of a byte stream (as copied out of a ring
    /// buffer or a perf.data-like dump). Stops after the first error.
    pub fn records<'a>(&self, stream: &'a [u8]) -> Records<'a> {
        Records {
            parser: *self,
            layout: Layout::of(self.sample_type),
            stream,
            pos: 0,
            failed: false,
        }
    }
}

/// An iterator over a record stream: `(byte offset, record)`.
#[derive(Debug)]
pub struct Records<'a> {
    parser: RecordParser,
    layout: Layout,
    stream: &'a [u8],
    pos: usize,
    failed: bool,
}

impl<'a> Iterator for Records<'a> {
    type Item = Result<(usize, Record<'a>)>;

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.pos >= self.stream.len() {
            return None;
        }
        let rest = &self.stream[self.pos..];
        let size = match rest.get(6..8) {
            Some(b) => usize::from(u16::from_ne_bytes([b[0], b[1]])),
            None => 0,
        };
        if size < 8 || size > rest.len() {
            self.failed = true;
            return Some(Err(Error::invalid(
                format!("record at byte {}", self.pos),
                format!(
                    "truncated or corrupt: header size {size}, {} bytes left",
                    rest.len()
                ),
            )));
        }
        let at = self.pos;
        self.pos += size;
        match self.parser.parse_with(self.layout, &rest[..size], at) {
            Ok(r) => Some(Ok((at, r))),
            Err(e) => {
                self.failed = true;
                Some(Err(e))
            }
        }
    }
}

/// A record's bytes, owned: outlives the ring buffer it came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OwnedRecord {
    bytes: Vec<u8>,
}

impl OwnedRecord {
    /// Copies a record's bytes (header included).
    pub fn new(bytes: &[u8]) -> OwnedRecord {
        OwnedRecord {
            bytes: bytes.to_vec(),
        }
    }

    /// The bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// Decodes it.
    pub fn parse(&self, parser: &RecordParser) -> Result<Record<'_>> {
        parser.parse(&self.bytes, 0)
    }
}
