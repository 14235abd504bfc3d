//! [`Sample`]: a `PERF_RECORD_SAMPLE` whose fixed-size fields are read at
//! offsets precomputed once per sample type ([`Layout`]), the variable
//! ones by walking the record.

use super::cursor::Cursor;
use super::misc;
use super::parser::RecordParser;
use super::views::{ReadValues, SampleFields, U64s};
use crate::attr::{ReadFormat, SampleType};
use crate::error::Result;

/// A `PERF_RECORD_SAMPLE`, decoded lazily: the fixed-size fields (ip,
/// tid, time, …) are read at their precomputed offsets, the variable ones
/// (callchain, raw, …) by walking the record. The bytes were checked when
/// the record was parsed.
///
/// Every field is a full word: the decoder builds one per record, and
/// narrow fields were stored narrow and reloaded wide (store-forwarding
/// stalls that halved the decode rate).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sample<'a> {
    pub(super) body: &'a [u8],
    pub(super) offset: usize,
    pub(super) layout: Layout,
    pub(super) sample_type: SampleType,
    /// misc (bits 0-15), read_format (16-31), registers in
    /// `sample_regs_user` (32-39) and `sample_regs_intr` (40-47),
    /// `branch_hw_index` (48).
    pub(super) format: u64,
}

/// Offsets of the fixed-size sample fields, one nibble each (offset / 8;
/// 15: absent), in the order of [`FIXED`]; nibble 9 is the prefix size / 8.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Layout(u64);

/// The fixed-size sample fields, in record order.
const FIXED: [SampleType; 9] = [
    SampleType::IDENTIFIER,
    SampleType::IP,
    SampleType::TID,
    SampleType::TIME,
    SampleType::ADDR,
    SampleType::ID,
    SampleType::STREAM_ID,
    SampleType::CPU,
    SampleType::PERIOD,
];

const ABSENT: u64 = 15;

impl Layout {
    const IDENTIFIER: u32 = 0;
    const IP: u32 = 1;
    const TID: u32 = 2;
    const TIME: u32 = 3;
    const ADDR: u32 = 4;
    const ID: u32 = 5;
    const STREAM_ID: u32 = 6;
    const CPU: u32 = 7;
    const PERIOD: u32 = 8;

    #[inline]
    pub(super) fn of(t: SampleType) -> Layout {
        let mut v = 0u64;
        let mut at = 0u64;
        for (k, flag) in FIXED.iter().enumerate() {
            let nibble = if t.contains(*flag) {
                at += 1;
                at - 1
            } else {
                ABSENT
            };
            v |= nibble << (4 * k);
        }
        Layout(v | at << 36)
    }

    /// The byte offset of fixed field `k`, if present.
    #[inline]
    pub(super) fn offset(self, k: u32) -> Option<usize> {
        let n = (self.0 >> (4 * k)) & 15;
        (n != ABSENT).then_some(n as usize * 8)
    }

    /// The size of the fixed prefix.
    #[inline]
    pub(super) fn fixed(self) -> usize {
        ((self.0 >> 36) & 15) as usize * 8
    }
}

/// The sample types whose fields come after the fixed prefix.
pub(super) const VARIABLE: SampleType = SampleType::READ
    .union(SampleType::CALLCHAIN)
    .union(SampleType::RAW)
    .union(SampleType::BRANCH_STACK)
    .union(SampleType::REGS_USER)
    .union(SampleType::STACK_USER)
    .union(SampleType::WEIGHT)
    .union(SampleType::WEIGHT_STRUCT)
    .union(SampleType::DATA_SRC)
    .union(SampleType::TRANSACTION)
    .union(SampleType::REGS_INTR)
    .union(SampleType::PHYS_ADDR)
    .union(SampleType::CGROUP)
    .union(SampleType::DATA_PAGE_SIZE)
    .union(SampleType::CODE_PAGE_SIZE)
    .union(SampleType::AUX);

impl<'a> Sample<'a> {
    #[inline]
    fn u64_at(&self, field: u32) -> Option<u64> {
        let o = self.layout.offset(field)?;
        let b = self.body.get(o..o + 8)?;
        Some(u64::from_ne_bytes([
            b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7],
        ]))
    }

    #[inline]
    fn u32_at(&self, field: u32, second: bool) -> Option<u32> {
        let o = self.layout.offset(field)? + if second { 4 } else { 0 };
        let b = self.body.get(o..o + 4)?;
        Some(u32::from_ne_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// The parser these fields were laid out by (for the variable walk).
    fn parser(&self) -> RecordParser {
        RecordParser {
            sample_type: self.sample_type,
            read_format: ReadFormat::from_bits_retain((self.format >> 16) & 0xffff),
            sample_id_all: false,
            regs_user: ((self.format >> 32) & 0xff) as u32,
            regs_intr: ((self.format >> 40) & 0xff) as u32,
            branch_hw_index: self.format >> 48 & 1 == 1,
        }
    }

    /// The header's misc bits (CPU mode, exact IP).
    pub fn misc(&self) -> u16 {
        self.format as u16
    }

    /// Whether the sample was taken in user mode.
    pub fn is_user(&self) -> bool {
        self.misc() & misc::CPUMODE_MASK == misc::USER
    }

    /// `PERF_SAMPLE_IDENTIFIER`
    #[inline]
    pub fn identifier(&self) -> Option<u64> {
        self.u64_at(Layout::IDENTIFIER)
    }

    /// `PERF_SAMPLE_IP`
    #[inline]
    pub fn ip(&self) -> Option<u64> {
        self.u64_at(Layout::IP)
    }

    /// `PERF_SAMPLE_TID`: the process id.
    #[inline]
    pub fn pid(&self) -> Option<u32> {
        self.u32_at(Layout::TID, false)
    }

    /// `PERF_SAMPLE_TID`: the thread id.
    #[inline]
    pub fn tid(&self) -> Option<u32> {
        self.u32_at(Layout::TID, true)
    }

    /// `PERF_SAMPLE_TIME`
    #[inline]
    pub fn time(&self) -> Option<u64> {
        self.u64_at(Layout::TIME)
    }

    /// `PERF_SAMPLE_ADDR`
    #[inline]
    pub fn addr(&self) -> Option<u64> {
        self.u64_at(Layout::ADDR)
    }

    /// `PERF_SAMPLE_ID`
    #[inline]
    pub fn id(&self) -> Option<u64> {
        self.u64_at(Layout::ID)
    }

    /// `PERF_SAMPLE_STREAM_ID`
    #[inline]
    pub fn stream_id(&self) -> Option<u64> {
        self.u64_at(Layout::STREAM_ID)
    }

    /// `PERF_SAMPLE_CPU`
    #[inline]
    pub fn cpu(&self) -> Option<u32> {
        self.u32_at(Layout::CPU, false)
    }

    /// `PERF_SAMPLE_PERIOD`
    #[inline]
    pub fn period(&self) -> Option<u64> {
        self.u64_at(Layout::PERIOD)
    }

    /// Every field, decoded (walks the variable part).
    pub fn fields(&self) -> Result<SampleFields<'a>> {
        let mut c = Cursor {
            bytes: self.body,
            pos: 0,
            base: self.offset + 8,
            record: self.offset,
        };
        self.parser().sample(self.misc(), &mut c)
    }

    /// `PERF_SAMPLE_CALLCHAIN`: instruction pointers with `context::*`
    /// markers between contexts.
    pub fn callchain(&self) -> Option<U64s<'a>> {
        self.fields().ok()?.callchain
    }

    /// `PERF_SAMPLE_RAW` (tracepoint data: decode with
    /// `tracefs::Format::decode`).
    pub fn raw(&self) -> Option<&'a [u8]> {
        self.fields().ok()?.raw
    }

    /// `PERF_SAMPLE_READ`
    pub fn read(&self) -> Option<ReadValues<'a>> {
        self.fields().ok()?.read
    }
}
