//! Decoding `PERF_RECORD_*` records: every record type of the current uapi
//! and every `PERF_SAMPLE_*` field, as zero-copy views of the bytes.
//!
//! A [`RecordParser`] carries what the layout depends on (`sample_type`,
//! `read_format`, `sample_id_all`, register masks, branch `hw_index`),
//! usually built from the event's [`Attr`]. Malformed or truncated bytes
//! give an error naming the byte offset; nothing panics or reads out of
//! bounds. Unknown record types come out as [`Record::Unknown`].

use crate::attr::{Attr, AttrBit, BranchSampleType, ReadFormat, SampleType};
use crate::error::{Error, Result};

/// `PERF_RECORD_*` numbers.
#[allow(missing_docs)]
pub mod kind {
    pub const MMAP: u32 = 1;
    pub const LOST: u32 = 2;
    pub const COMM: u32 = 3;
    pub const EXIT: u32 = 4;
    pub const THROTTLE: u32 = 5;
    pub const UNTHROTTLE: u32 = 6;
    pub const FORK: u32 = 7;
    pub const READ: u32 = 8;
    pub const SAMPLE: u32 = 9;
    pub const MMAP2: u32 = 10;
    pub const AUX: u32 = 11;
    pub const ITRACE_START: u32 = 12;
    pub const LOST_SAMPLES: u32 = 13;
    pub const SWITCH: u32 = 14;
    pub const SWITCH_CPU_WIDE: u32 = 15;
    pub const NAMESPACES: u32 = 16;
    pub const KSYMBOL: u32 = 17;
    pub const BPF_EVENT: u32 = 18;
    pub const CGROUP: u32 = 19;
    pub const TEXT_POKE: u32 = 20;
    pub const AUX_OUTPUT_HW_ID: u32 = 21;
}

/// `misc` bits of the record header.
#[allow(missing_docs)]
pub mod misc {
    pub const CPUMODE_MASK: u16 = 7;
    pub const KERNEL: u16 = 1;
    pub const USER: u16 = 2;
    pub const HYPERVISOR: u16 = 3;
    pub const GUEST_KERNEL: u16 = 4;
    pub const GUEST_USER: u16 = 5;
    /// MMAP: a data (non-executable) mapping; COMM: an exec; FORK: exec;
    /// SWITCH: switched out.
    pub const BIT13: u16 = 1 << 13;
    /// SAMPLE: exact IP; SWITCH: preempted; MMAP2: build-id form.
    pub const BIT14: u16 = 1 << 14;
}

/// Callchain context markers (`PERF_CONTEXT_*`).
#[allow(missing_docs)]
pub mod context {
    pub const HV: u64 = -32i64 as u64;
    pub const KERNEL: u64 = -128i64 as u64;
    pub const USER: u64 = -512i64 as u64;
    pub const GUEST: u64 = -2048i64 as u64;
    pub const GUEST_KERNEL: u64 = -2176i64 as u64;
    pub const GUEST_USER: u64 = -2560i64 as u64;
    /// Values at or above this are markers, not addresses.
    pub const MAX: u64 = -4095i64 as u64;
}

/// A borrowed array of native-endian `u64`s.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct U64s<'a> {
    bytes: &'a [u8],
}

impl<'a> U64s<'a> {
    /// The number of values.
    pub fn len(&self) -> usize {
        self.bytes.len() / 8
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    /// Value `i`.
    pub fn get(&self, i: usize) -> Option<u64> {
        let b = self.bytes.get(i * 8..i * 8 + 8)?;
        Some(u64::from_ne_bytes(b.try_into().ok()?))
    }

    /// The values in order.
    pub fn iter(&self) -> impl Iterator<Item = u64> + 'a {
        self.bytes
            .chunks_exact(8)
            .map(|c| u64::from_ne_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]))
    }

    /// Copies the values out.
    pub fn to_vec(&self) -> Vec<u64> {
        self.iter().collect()
    }
}

/// The `sample_id` fields (trailer of non-sample records with
/// `sample_id_all`, and the matching sample fields).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SampleId {
    /// `PERF_SAMPLE_TID`
    pub pid: Option<u32>,
    /// `PERF_SAMPLE_TID`
    pub tid: Option<u32>,
    /// `PERF_SAMPLE_TIME`
    pub time: Option<u64>,
    /// `PERF_SAMPLE_ID`
    pub id: Option<u64>,
    /// `PERF_SAMPLE_STREAM_ID`
    pub stream_id: Option<u64>,
    /// `PERF_SAMPLE_CPU`
    pub cpu: Option<u32>,
    /// `PERF_SAMPLE_IDENTIFIER`
    pub identifier: Option<u64>,
}

/// A `read_format` block (in READ records and `PERF_SAMPLE_READ`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReadValues<'a> {
    format: ReadFormat,
    /// `TOTAL_TIME_ENABLED`
    pub time_enabled: Option<u64>,
    /// `TOTAL_TIME_RUNNING`
    pub time_running: Option<u64>,
    /// Without `GROUP`: the one counter.
    single: Option<ReadValue>,
    /// With `GROUP`: `nr` entries of value, [id], [lost].
    entries: &'a [u8],
    nr: usize,
}

/// One counter in a [`ReadValues`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReadValue {
    /// The count.
    pub value: u64,
    /// `ID`
    pub id: Option<u64>,
    /// `LOST`
    pub lost: Option<u64>,
}

impl ReadValues<'_> {
    /// The counters (one without `GROUP`).
    pub fn values(&self) -> impl Iterator<Item = ReadValue> + '_ {
        let has_id = self.format.contains(ReadFormat::ID);
        let has_lost = self.format.contains(ReadFormat::LOST);
        let words = 1 + usize::from(has_id) + usize::from(has_lost);
        let group = self
            .entries
            .chunks_exact(words * 8)
            .take(self.nr)
            .map(move |c| {
                let v = U64s { bytes: c };
                ReadValue {
                    value: v.get(0).unwrap_or(0),
                    id: if has_id { v.get(1) } else { None },
                    lost: if has_lost {
                        v.get(1 + usize::from(has_id))
                    } else {
                        None
                    },
                }
            });
        self.single.into_iter().chain(group)
    }

    /// The number of counters.
    pub fn len(&self) -> usize {
        self.nr + usize::from(self.single.is_some())
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// One branch-stack entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Branch {
    /// Source address.
    pub from: u64,
    /// Target address.
    pub to: u64,
    /// Flags (mispred, predicted, in_tx, abort, cycles, type…), raw.
    pub flags: u64,
}

/// `PERF_SAMPLE_BRANCH_STACK`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BranchStack<'a> {
    /// `hw_idx`, with `PERF_SAMPLE_BRANCH_HW_INDEX`.
    pub hw_index: Option<u64>,
    entries: &'a [u8],
}

impl BranchStack<'_> {
    /// The entries, most recent first.
    pub fn entries(&self) -> impl Iterator<Item = Branch> + '_ {
        let v = U64s {
            bytes: self.entries,
        };
        (0..v.len() / 3).map(move |i| Branch {
            from: v.get(3 * i).unwrap_or(0),
            to: v.get(3 * i + 1).unwrap_or(0),
            flags: v.get(3 * i + 2).unwrap_or(0),
        })
    }
}

/// Sampled registers (`REGS_USER`/`REGS_INTR`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Regs<'a> {
    /// `PERF_SAMPLE_REGS_ABI_*` (0 none, 1 32-bit, 2 64-bit).
    pub abi: u64,
    /// The registers in mask order (empty when `abi` is 0).
    pub regs: U64s<'a>,
}

/// `PERF_SAMPLE_STACK_USER`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StackUser<'a> {
    /// The captured bytes (`dyn_size` of them are valid).
    pub data: &'a [u8],
    /// How many bytes the kernel really copied.
    pub dyn_size: u64,
}

/// `PERF_SAMPLE_WEIGHT` or `PERF_SAMPLE_WEIGHT_STRUCT`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Weight {
    /// The full 64-bit weight.
    Full(u64),
    /// The struct form: `var1_dw`, `var2_w`, `var3_w`.
    Struct {
        /// Usually the latency.
        var1: u32,
        /// Usually the instruction latency.
        var2: u16,
        /// Model-specific.
        var3: u16,
    },
}

/// Every field of a `PERF_RECORD_SAMPLE` the sample type asked for,
/// decoded at once (see [`Sample::fields`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[allow(missing_docs)]
pub struct SampleFields<'a> {
    /// The header's misc bits (CPU mode, exact IP).
    pub misc: u16,
    pub identifier: Option<u64>,
    pub ip: Option<u64>,
    pub pid: Option<u32>,
    pub tid: Option<u32>,
    pub time: Option<u64>,
    pub addr: Option<u64>,
    pub id: Option<u64>,
    pub stream_id: Option<u64>,
    pub cpu: Option<u32>,
    pub period: Option<u64>,
    pub read: Option<ReadValues<'a>>,
    /// Instruction pointers, with `context::*` markers between contexts.
    pub callchain: Option<U64s<'a>>,
    /// Tracepoint data (decode with `tracefs::Format::decode`).
    pub raw: Option<&'a [u8]>,
    pub branch_stack: Option<BranchStack<'a>>,
    pub regs_user: Option<Regs<'a>>,
    pub stack_user: Option<StackUser<'a>>,
    pub weight: Option<Weight>,
    pub data_src: Option<u64>,
    pub transaction: Option<u64>,
    pub regs_intr: Option<Regs<'a>>,
    pub phys_addr: Option<u64>,
    pub cgroup: Option<u64>,
    pub data_page_size: Option<u64>,
    pub code_page_size: Option<u64>,
    pub aux: Option<&'a [u8]>,
}

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
    body: &'a [u8],
    offset: usize,
    layout: Layout,
    sample_type: SampleType,
    /// misc (bits 0-15), read_format (16-31), registers in
    /// `sample_regs_user` (32-39) and `sample_regs_intr` (40-47),
    /// `branch_hw_index` (48).
    format: u64,
}

/// Offsets of the fixed-size sample fields, one nibble each (offset / 8;
/// 15: absent), in the order of [`FIXED`]; nibble 9 is the prefix size / 8.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Layout(u64);

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
    fn of(t: SampleType) -> Layout {
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
    fn offset(self, k: u32) -> Option<usize> {
        let n = (self.0 >> (4 * k)) & 15;
        (n != ABSENT).then_some(n as usize * 8)
    }

    /// The size of the fixed prefix.
    #[inline]
    fn fixed(self) -> usize {
        ((self.0 >> 36) & 15) as usize * 8
    }
}

/// The sample types whose fields come after the fixed prefix.
const VARIABLE: SampleType = SampleType::READ
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

/// MMAP2's file identity.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileId<'a> {
    /// Device and inode.
    Inode {
        /// Major device number.
        maj: u32,
        /// Minor device number.
        min: u32,
        /// Inode.
        ino: u64,
        /// Inode generation.
        ino_generation: u64,
    },
    /// The build-id (`PERF_RECORD_MISC_MMAP_BUILD_ID`).
    BuildId(&'a [u8]),
}

/// A decoded record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[allow(missing_docs)]
// Samples are the hot path: boxing them would allocate per record.
#[allow(clippy::large_enum_variant)]
pub enum Record<'a> {
    Mmap {
        pid: u32,
        tid: u32,
        addr: u64,
        len: u64,
        pgoff: u64,
        filename: &'a [u8],
        /// A data (non-executable) mapping.
        data: bool,
        sample_id: SampleId,
    },
    Lost {
        id: u64,
        lost: u64,
        sample_id: SampleId,
    },
    Comm {
        pid: u32,
        tid: u32,
        comm: &'a [u8],
        /// The name changed because of an exec.
        exec: bool,
        sample_id: SampleId,
    },
    Exit {
        pid: u32,
        ppid: u32,
        tid: u32,
        ptid: u32,
        time: u64,
        sample_id: SampleId,
    },
    Throttle {
        time: u64,
        id: u64,
        stream_id: u64,
        sample_id: SampleId,
    },
    Unthrottle {
        time: u64,
        id: u64,
        stream_id: u64,
        sample_id: SampleId,
    },
    Fork {
        pid: u32,
        ppid: u32,
        tid: u32,
        ptid: u32,
        time: u64,
        sample_id: SampleId,
    },
    Read {
        pid: u32,
        tid: u32,
        values: ReadValues<'a>,
        sample_id: SampleId,
    },
    Sample(Sample<'a>),
    Mmap2 {
        pid: u32,
        tid: u32,
        addr: u64,
        len: u64,
        pgoff: u64,
        file: FileId<'a>,
        prot: u32,
        flags: u32,
        filename: &'a [u8],
        sample_id: SampleId,
    },
    Aux {
        aux_offset: u64,
        aux_size: u64,
        flags: u64,
        sample_id: SampleId,
    },
    ItraceStart {
        pid: u32,
        tid: u32,
        sample_id: SampleId,
    },
    LostSamples {
        lost: u64,
        sample_id: SampleId,
    },
    Switch {
        out: bool,
        preempt: bool,
        sample_id: SampleId,
    },
    SwitchCpuWide {
        next_prev_pid: u32,
        next_prev_tid: u32,
        out: bool,
        preempt: bool,
        sample_id: SampleId,
    },
    Namespaces {
        pid: u32,
        tid: u32,
        /// (dev, inode) pairs, flattened.
        namespaces: U64s<'a>,
        sample_id: SampleId,
    },
    Ksymbol {
        addr: u64,
        len: u32,
        ksym_type: u16,
        flags: u16,
        name: &'a [u8],
        sample_id: SampleId,
    },
    BpfEvent {
        event_type: u16,
        flags: u16,
        id: u32,
        tag: [u8; 8],
        sample_id: SampleId,
    },
    Cgroup {
        id: u64,
        path: &'a [u8],
        sample_id: SampleId,
    },
    TextPoke {
        addr: u64,
        old_len: u16,
        new_len: u16,
        bytes: &'a [u8],
        sample_id: SampleId,
    },
    AuxOutputHwId {
        hw_id: u64,
        sample_id: SampleId,
    },
    /// A type this crate does not know: the raw body.
    Unknown {
        record_type: u32,
        misc: u16,
        body: &'a [u8],
    },
}

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

/// A bounds-checked reader over one record.
struct Cursor<'a> {
    bytes: &'a [u8],
    pos: usize,
    /// Stream offset of `bytes[0]`.
    base: usize,
    /// Stream offset of the record.
    record: usize,
}

impl<'a> Cursor<'a> {
    #[inline]
    fn err(&self, what: &str) -> Error {
        Error::invalid(
            format!("record at byte {}", self.record),
            format!(
                "{what} at byte {} runs past the record end",
                self.base + self.pos
            ),
        )
    }

    #[inline]
    fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8]> {
        let end = self.pos.checked_add(n).filter(|e| *e <= self.bytes.len());
        match end {
            Some(end) => {
                let s = &self.bytes[self.pos..end];
                self.pos = end;
                Ok(s)
            }
            None => Err(self.err(what)),
        }
    }

    #[inline]
    fn u64(&mut self, what: &str) -> Result<u64> {
        let b = self.take(8, what)?;
        Ok(u64::from_ne_bytes([
            b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7],
        ]))
    }

    #[inline]
    fn u32(&mut self, what: &str) -> Result<u32> {
        let b = self.take(4, what)?;
        Ok(u32::from_ne_bytes([b[0], b[1], b[2], b[3]]))
    }

    #[inline]
    fn u16(&mut self, what: &str) -> Result<u16> {
        let b = self.take(2, what)?;
        Ok(u16::from_ne_bytes([b[0], b[1]]))
    }

    #[inline]
    fn u64s(&mut self, n: u64, what: &str) -> Result<U64s<'a>> {
        let len = usize::try_from(n)
            .ok()
            .and_then(|n| n.checked_mul(8))
            .ok_or_else(|| self.err(what))?;
        Ok(U64s {
            bytes: self.take(len, what)?,
        })
    }

    fn rest(&self) -> &'a [u8] {
        &self.bytes[self.pos..]
    }
}

/// The bytes up to the first NUL.
fn c_str(b: &[u8]) -> &[u8] {
    let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    &b[..end]
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

    /// The size of the `sample_id` trailer.
    fn sample_id_size(&self) -> usize {
        if !self.sample_id_all {
            return 0;
        }
        let t = self.sample_type;
        [
            SampleType::TID,
            SampleType::TIME,
            SampleType::ID,
            SampleType::STREAM_ID,
            SampleType::CPU,
            SampleType::IDENTIFIER,
        ]
        .iter()
        .filter(|f| t.contains(**f))
        .count()
            * 8
    }

    fn sample_id(&self, c: &mut Cursor<'_>) -> Result<SampleId> {
        let mut s = SampleId::default();
        if !self.sample_id_all {
            // Without sample_id_all, non-sample records carry no trailer.
            return Ok(s);
        }
        let t = self.sample_type;
        if t.contains(SampleType::TID) {
            s.pid = Some(c.u32("sample_id pid")?);
            s.tid = Some(c.u32("sample_id tid")?);
        }
        if t.contains(SampleType::TIME) {
            s.time = Some(c.u64("sample_id time")?);
        }
        if t.contains(SampleType::ID) {
            s.id = Some(c.u64("sample_id id")?);
        }
        if t.contains(SampleType::STREAM_ID) {
            s.stream_id = Some(c.u64("sample_id stream_id")?);
        }
        if t.contains(SampleType::CPU) {
            s.cpu = Some(c.u32("sample_id cpu")?);
            c.u32("sample_id res")?;
        }
        if t.contains(SampleType::IDENTIFIER) {
            s.identifier = Some(c.u64("sample_id identifier")?);
        }
        Ok(s)
    }

    fn read_values<'a>(&self, c: &mut Cursor<'a>) -> Result<ReadValues<'a>> {
        let f = self.read_format;
        let mut v = ReadValues {
            format: f,
            ..ReadValues::default()
        };
        if f.contains(ReadFormat::GROUP) {
            let nr = c.u64("read nr")?;
            if f.contains(ReadFormat::TOTAL_TIME_ENABLED) {
                v.time_enabled = Some(c.u64("read time_enabled")?);
            }
            if f.contains(ReadFormat::TOTAL_TIME_RUNNING) {
                v.time_running = Some(c.u64("read time_running")?);
            }
            let per = 1
                + usize::from(f.contains(ReadFormat::ID))
                + usize::from(f.contains(ReadFormat::LOST));
            let n = usize::try_from(nr).map_err(|_| c.err("read nr"))?;
            let bytes = n.checked_mul(per * 8).ok_or_else(|| c.err("read values"))?;
            v.entries = c.take(bytes, "read values")?;
            v.nr = n;
        } else {
            let value = c.u64("read value")?;
            if f.contains(ReadFormat::TOTAL_TIME_ENABLED) {
                v.time_enabled = Some(c.u64("read time_enabled")?);
            }
            if f.contains(ReadFormat::TOTAL_TIME_RUNNING) {
                v.time_running = Some(c.u64("read time_running")?);
            }
            let id = if f.contains(ReadFormat::ID) {
                Some(c.u64("read id")?)
            } else {
                None
            };
            let lost = if f.contains(ReadFormat::LOST) {
                Some(c.u64("read lost")?)
            } else {
                None
            };
            v.single = Some(ReadValue { value, id, lost });
        }
        Ok(v)
    }

    fn regs<'a>(&self, c: &mut Cursor<'a>, count: u32, what: &str) -> Result<Regs<'a>> {
        let abi = c.u64(what)?;
        let n = if abi == 0 { 0 } else { u64::from(count) };
        Ok(Regs {
            abi,
            regs: c.u64s(n, what)?,
        })
    }

    fn sample<'a>(&self, misc: u16, c: &mut Cursor<'a>) -> Result<SampleFields<'a>> {
        let t = self.sample_type;
        let mut s = SampleFields {
            misc,
            ..SampleFields::default()
        };
        if t.contains(SampleType::IDENTIFIER) {
            s.identifier = Some(c.u64("identifier")?);
        }
        if t.contains(SampleType::IP) {
            s.ip = Some(c.u64("ip")?);
        }
        if t.contains(SampleType::TID) {
            s.pid = Some(c.u32("pid")?);
            s.tid = Some(c.u32("tid")?);
        }
        if t.contains(SampleType::TIME) {
            s.time = Some(c.u64("time")?);
        }
        if t.contains(SampleType::ADDR) {
            s.addr = Some(c.u64("addr")?);
        }
        if t.contains(SampleType::ID) {
            s.id = Some(c.u64("id")?);
        }
        if t.contains(SampleType::STREAM_ID) {
            s.stream_id = Some(c.u64("stream_id")?);
        }
        if t.contains(SampleType::CPU) {
            s.cpu = Some(c.u32("cpu")?);
            c.u32("cpu res")?;
        }
        if t.contains(SampleType::PERIOD) {
            s.period = Some(c.u64("period")?);
        }
        if t.contains(SampleType::READ) {
            s.read = Some(self.read_values(c)?);
        }
        if t.contains(SampleType::CALLCHAIN) {
            let nr = c.u64("callchain nr")?;
            s.callchain = Some(c.u64s(nr, "callchain")?);
        }
        if t.contains(SampleType::RAW) {
            let size = c.u32("raw size")?;
            s.raw = Some(c.take(size as usize, "raw data")?);
        }
        if t.contains(SampleType::BRANCH_STACK) {
            let nr = c.u64("branch nr")?;
            let hw_index = if self.branch_hw_index {
                Some(c.u64("branch hw_idx")?)
            } else {
                None
            };
            let bytes = usize::try_from(nr)
                .ok()
                .and_then(|n| n.checked_mul(24))
                .ok_or_else(|| c.err("branch entries"))?;
            s.branch_stack = Some(BranchStack {
                hw_index,
                entries: c.take(bytes, "branch entries")?,
            });
        }
        if t.contains(SampleType::REGS_USER) {
            s.regs_user = Some(self.regs(c, self.regs_user, "regs_user")?);
        }
        if t.contains(SampleType::STACK_USER) {
            let size = c.u64("stack size")?;
            let data = c.take(
                usize::try_from(size).map_err(|_| c.err("stack data"))?,
                "stack data",
            )?;
            let dyn_size = if size > 0 {
                c.u64("stack dyn_size")?
            } else {
                0
            };
            s.stack_user = Some(StackUser { data, dyn_size });
        }
        if t.contains(SampleType::WEIGHT) {
            s.weight = Some(Weight::Full(c.u64("weight")?));
        } else if t.contains(SampleType::WEIGHT_STRUCT) {
            let var1 = c.u32("weight var1")?;
            let var2 = c.u16("weight var2")?;
            let var3 = c.u16("weight var3")?;
            s.weight = Some(Weight::Struct { var1, var2, var3 });
        }
        if t.contains(SampleType::DATA_SRC) {
            s.data_src = Some(c.u64("data_src")?);
        }
        if t.contains(SampleType::TRANSACTION) {
            s.transaction = Some(c.u64("transaction")?);
        }
        if t.contains(SampleType::REGS_INTR) {
            s.regs_intr = Some(self.regs(c, self.regs_intr, "regs_intr")?);
        }
        if t.contains(SampleType::PHYS_ADDR) {
            s.phys_addr = Some(c.u64("phys_addr")?);
        }
        if t.contains(SampleType::CGROUP) {
            s.cgroup = Some(c.u64("cgroup")?);
        }
        if t.contains(SampleType::DATA_PAGE_SIZE) {
            s.data_page_size = Some(c.u64("data_page_size")?);
        }
        if t.contains(SampleType::CODE_PAGE_SIZE) {
            s.code_page_size = Some(c.u64("code_page_size")?);
        }
        if t.contains(SampleType::AUX) {
            let size = c.u64("aux size")?;
            s.aux = Some(c.take(
                usize::try_from(size).map_err(|_| c.err("aux data"))?,
                "aux data",
            )?);
        }
        Ok(s)
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

    /// Every record but samples.
    #[inline]
    fn parse_other<'a>(
        &self,
        record_type: u32,
        misc: u16,
        body: &'a [u8],
        offset: usize,
    ) -> Result<Record<'a>> {
        // Non-sample records: the sample_id trailer sits at the end.
        let trailer = self.sample_id_size();
        let known = (kind::MMAP..=kind::AUX_OUTPUT_HW_ID).contains(&record_type);
        if !known {
            return Ok(Record::Unknown {
                record_type,
                misc,
                body,
            });
        }
        if body.len() < trailer {
            return Err(Error::invalid(
                format!("record at byte {offset}"),
                "too short for its sample_id trailer",
            ));
        }
        let (main, tail) = body.split_at(body.len() - trailer);
        let sample_id = self.sample_id(&mut Cursor {
            bytes: tail,
            pos: 0,
            base: offset + 8 + main.len(),
            record: offset,
        })?;
        let mut c = Cursor {
            bytes: main,
            pos: 0,
            base: offset + 8,
            record: offset,
        };
        let bit13 = misc & misc::BIT13 != 0;
        let bit14 = misc & misc::BIT14 != 0;
        Ok(match record_type {
            kind::MMAP => Record::Mmap {
                pid: c.u32("pid")?,
                tid: c.u32("tid")?,
                addr: c.u64("addr")?,
                len: c.u64("len")?,
                pgoff: c.u64("pgoff")?,
                filename: c_str(c.rest()),
                data: bit13,
                sample_id,
            },
            kind::LOST => Record::Lost {
                id: c.u64("id")?,
                lost: c.u64("lost")?,
                sample_id,
            },
            kind::COMM => Record::Comm {
                pid: c.u32("pid")?,
                tid: c.u32("tid")?,
                comm: c_str(c.rest()),
                exec: bit13,
                sample_id,
            },
            kind::EXIT | kind::FORK => {
                let (pid, ppid, tid, ptid) =
                    (c.u32("pid")?, c.u32("ppid")?, c.u32("tid")?, c.u32("ptid")?);
                let time = c.u64("time")?;
                if record_type == kind::EXIT {
                    Record::Exit {
                        pid,
                        ppid,
                        tid,
                        ptid,
                        time,
                        sample_id,
                    }
                } else {
                    Record::Fork {
                        pid,
                        ppid,
                        tid,
                        ptid,
                        time,
                        sample_id,
                    }
                }
            }
            kind::THROTTLE | kind::UNTHROTTLE => {
                let (time, id, stream_id) = (c.u64("time")?, c.u64("id")?, c.u64("stream_id")?);
                if record_type == kind::THROTTLE {
                    Record::Throttle {
                        time,
                        id,
                        stream_id,
                        sample_id,
                    }
                } else {
                    Record::Unthrottle {
                        time,
                        id,
                        stream_id,
                        sample_id,
                    }
                }
            }
            kind::READ => Record::Read {
                pid: c.u32("pid")?,
                tid: c.u32("tid")?,
                values: self.read_values(&mut c)?,
                sample_id,
            },
            kind::MMAP2 => {
                let (pid, tid) = (c.u32("pid")?, c.u32("tid")?);
                let (addr, len, pgoff) = (c.u64("addr")?, c.u64("len")?, c.u64("pgoff")?);
                let file = if bit14 {
                    let size = c.take(1, "build_id_size")?[0];
                    c.take(3, "reserved")?;
                    let id = c.take(20, "build_id")?;
                    FileId::BuildId(&id[..usize::from(size).min(20)])
                } else {
                    FileId::Inode {
                        maj: c.u32("maj")?,
                        min: c.u32("min")?,
                        ino: c.u64("ino")?,
                        ino_generation: c.u64("ino_generation")?,
                    }
                };
                Record::Mmap2 {
                    pid,
                    tid,
                    addr,
                    len,
                    pgoff,
                    file,
                    prot: c.u32("prot")?,
                    flags: c.u32("flags")?,
                    filename: c_str(c.rest()),
                    sample_id,
                }
            }
            kind::AUX => Record::Aux {
                aux_offset: c.u64("aux_offset")?,
                aux_size: c.u64("aux_size")?,
                flags: c.u64("flags")?,
                sample_id,
            },
            kind::ITRACE_START => Record::ItraceStart {
                pid: c.u32("pid")?,
                tid: c.u32("tid")?,
                sample_id,
            },
            kind::LOST_SAMPLES => Record::LostSamples {
                lost: c.u64("lost")?,
                sample_id,
            },
            kind::SWITCH => Record::Switch {
                out: bit13,
                preempt: bit14,
                sample_id,
            },
            kind::SWITCH_CPU_WIDE => Record::SwitchCpuWide {
                next_prev_pid: c.u32("next_prev_pid")?,
                next_prev_tid: c.u32("next_prev_tid")?,
                out: bit13,
                preempt: bit14,
                sample_id,
            },
            kind::NAMESPACES => {
                let (pid, tid) = (c.u32("pid")?, c.u32("tid")?);
                let nr = c.u64("nr_namespaces")?;
                Record::Namespaces {
                    pid,
                    tid,
                    namespaces: c.u64s(
                        nr.checked_mul(2).ok_or_else(|| c.err("namespaces"))?,
                        "namespaces",
                    )?,
                    sample_id,
                }
            }
            kind::KSYMBOL => Record::Ksymbol {
                addr: c.u64("addr")?,
                len: c.u32("len")?,
                ksym_type: c.u16("ksym_type")?,
                flags: c.u16("flags")?,
                name: c_str(c.rest()),
                sample_id,
            },
            kind::BPF_EVENT => {
                let event_type = c.u16("type")?;
                let flags = c.u16("flags")?;
                let id = c.u32("id")?;
                let t = c.take(8, "tag")?;
                Record::BpfEvent {
                    event_type,
                    flags,
                    id,
                    tag: [t[0], t[1], t[2], t[3], t[4], t[5], t[6], t[7]],
                    sample_id,
                }
            }
            kind::CGROUP => Record::Cgroup {
                id: c.u64("id")?,
                path: c_str(c.rest()),
                sample_id,
            },
            kind::TEXT_POKE => {
                let addr = c.u64("addr")?;
                let old_len = c.u16("old_len")?;
                let new_len = c.u16("new_len")?;
                let n = usize::from(old_len) + usize::from(new_len);
                Record::TextPoke {
                    addr,
                    old_len,
                    new_len,
                    bytes: c.take(n, "text_poke bytes")?,
                    sample_id,
                }
            }
            _ => Record::AuxOutputHwId {
                hw_id: c.u64("hw_id")?,
                sample_id,
            },
        })
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

#[cfg(test)]
mod tests;
