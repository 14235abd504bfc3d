//! Decoding `PERF_RECORD_*` records: every record type of the current uapi
//! and every `PERF_SAMPLE_*` field, as zero-copy views of the bytes.
//!
//! A [`RecordParser`] carries what the layout depends on (`sample_type`,
//! `read_format`, `sample_id_all`, register masks, branch `hw_index`),
//! usually built from the event's [`Attr`](crate::attr::Attr). Malformed or truncated bytes
//! give an error naming the byte offset; nothing panics or reads out of
//! bounds. Unknown record types come out as [`Record::Unknown`].
//!
//! Files, along the seams: `views` (zero-copy views of the variable
//! parts), `sample` (the [`Sample`] layout), `decoded` (the [`Record`]
//! enum), `cursor` (bounds-checked reads), `parser` (header and stream),
//! `fields` (the sample field walk) and `non_sample` (every other type).

mod callchain;
mod cursor;
mod decoded;
mod fields;
mod non_sample;
mod parser;
mod sample;
mod views;

pub use callchain::{SplitCallchain, split_callchain};
pub use decoded::Record;
pub use parser::{OwnedRecord, RecordParser, Records};
pub use sample::Sample;
pub use views::{
    Branch, BranchStack, FileId, ReadValue, ReadValues, Regs, SampleFields, SampleId, StackUser,
    U64s, Weight,
};

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
#[cfg(test)]
mod tests;
