//! Zero-copy views of the variable parts of records: `u64` arrays, the
//! `sample_id` trailer, `read_format` blocks, branch stacks, registers,
//! user stacks, weights, the decoded sample fields and MMAP2's file id.

use crate::attr::ReadFormat;

/// A borrowed array of native-endian `u64`s.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct U64s<'a> {
    pub(super) bytes: &'a [u8],
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
    pub(super) format: ReadFormat,
    /// `TOTAL_TIME_ENABLED`
    pub time_enabled: Option<u64>,
    /// `TOTAL_TIME_RUNNING`
    pub time_running: Option<u64>,
    /// Without `GROUP`: the one counter.
    pub(super) single: Option<ReadValue>,
    /// With `GROUP`: `nr` entries of value, [id], [lost].
    pub(super) entries: &'a [u8],
    pub(super) nr: usize,
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
    pub(super) entries: &'a [u8],
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

impl<'a> StackUser<'a> {
    /// The bytes the kernel copied: the first `dyn_size` of `data` (all of
    /// `data` where a malformed record claims more than it holds).
    pub fn valid_bytes(&self) -> &'a [u8] {
        let n = usize::try_from(self.dyn_size).unwrap_or(usize::MAX);
        &self.data[..n.min(self.data.len())]
    }
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
/// decoded at once (see [`Sample::fields`](super::Sample::fields)).
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
