//! [`Record`]: one decoded record of any `PERF_RECORD_*` type.

use super::sample::Sample;
use super::views::{FileId, ReadValues, SampleId, U64s};

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
