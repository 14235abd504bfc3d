//! A safe builder over every field of `struct perf_event_attr`.
//!
//! The raw structure never leaves this crate: [`Attr`] owns it and exposes a
//! typed setter and getter for each field, the event selection as
//! [`EventConfig`], and the bitfield through [`AttrBit`].

use std::fmt;

pub use crate::sys::abi::AttrBit;
use crate::sys::abi::{self, RawAttr};

/// Generic hardware events (`PERF_TYPE_HARDWARE`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[repr(u64)]
#[allow(missing_docs)]
pub enum Hardware {
    CpuCycles = 0,
    Instructions = 1,
    CacheReferences = 2,
    CacheMisses = 3,
    BranchInstructions = 4,
    BranchMisses = 5,
    BusCycles = 6,
    StalledCyclesFrontend = 7,
    StalledCyclesBackend = 8,
    RefCpuCycles = 9,
}

impl Hardware {
    /// Every generic hardware event.
    pub const ALL: [Hardware; 10] = [
        Hardware::CpuCycles,
        Hardware::Instructions,
        Hardware::CacheReferences,
        Hardware::CacheMisses,
        Hardware::BranchInstructions,
        Hardware::BranchMisses,
        Hardware::BusCycles,
        Hardware::StalledCyclesFrontend,
        Hardware::StalledCyclesBackend,
        Hardware::RefCpuCycles,
    ];

    /// perf's name for the event.
    pub fn name(self) -> &'static str {
        match self {
            Hardware::CpuCycles => "cpu-cycles",
            Hardware::Instructions => "instructions",
            Hardware::CacheReferences => "cache-references",
            Hardware::CacheMisses => "cache-misses",
            Hardware::BranchInstructions => "branch-instructions",
            Hardware::BranchMisses => "branch-misses",
            Hardware::BusCycles => "bus-cycles",
            Hardware::StalledCyclesFrontend => "stalled-cycles-frontend",
            Hardware::StalledCyclesBackend => "stalled-cycles-backend",
            Hardware::RefCpuCycles => "ref-cycles",
        }
    }
}

/// Software events (`PERF_TYPE_SOFTWARE`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[repr(u64)]
#[allow(missing_docs)]
pub enum Software {
    CpuClock = 0,
    TaskClock = 1,
    PageFaults = 2,
    ContextSwitches = 3,
    CpuMigrations = 4,
    PageFaultsMin = 5,
    PageFaultsMaj = 6,
    AlignmentFaults = 7,
    EmulationFaults = 8,
    Dummy = 9,
    BpfOutput = 10,
    CgroupSwitches = 11,
}

impl Software {
    /// Every software event.
    pub const ALL: [Software; 12] = [
        Software::CpuClock,
        Software::TaskClock,
        Software::PageFaults,
        Software::ContextSwitches,
        Software::CpuMigrations,
        Software::PageFaultsMin,
        Software::PageFaultsMaj,
        Software::AlignmentFaults,
        Software::EmulationFaults,
        Software::Dummy,
        Software::BpfOutput,
        Software::CgroupSwitches,
    ];

    /// perf's name for the event.
    pub fn name(self) -> &'static str {
        match self {
            Software::CpuClock => "cpu-clock",
            Software::TaskClock => "task-clock",
            Software::PageFaults => "page-faults",
            Software::ContextSwitches => "context-switches",
            Software::CpuMigrations => "cpu-migrations",
            Software::PageFaultsMin => "minor-faults",
            Software::PageFaultsMaj => "major-faults",
            Software::AlignmentFaults => "alignment-faults",
            Software::EmulationFaults => "emulation-faults",
            Software::Dummy => "dummy",
            Software::BpfOutput => "bpf-output",
            Software::CgroupSwitches => "cgroup-switches",
        }
    }
}

/// The cache of a `PERF_TYPE_HW_CACHE` event.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[repr(u64)]
pub enum CacheId {
    /// Level 1 data cache.
    L1D = 0,
    /// Level 1 instruction cache.
    L1I = 1,
    /// Last-level cache.
    LL = 2,
    /// Data TLB.
    DTLB = 3,
    /// Instruction TLB.
    ITLB = 4,
    /// Branch prediction unit.
    BPU = 5,
    /// Local memory accesses (NUMA node).
    NODE = 6,
}

impl CacheId {
    /// Every cache.
    pub const ALL: [CacheId; 7] = [
        CacheId::L1D,
        CacheId::L1I,
        CacheId::LL,
        CacheId::DTLB,
        CacheId::ITLB,
        CacheId::BPU,
        CacheId::NODE,
    ];

    /// perf's name (`L1-dcache`, `LLC`, `dTLB`, …).
    pub fn name(self) -> &'static str {
        match self {
            CacheId::L1D => "L1-dcache",
            CacheId::L1I => "L1-icache",
            CacheId::LL => "LLC",
            CacheId::DTLB => "dTLB",
            CacheId::ITLB => "iTLB",
            CacheId::BPU => "branch",
            CacheId::NODE => "node",
        }
    }
}

/// The operation of a `PERF_TYPE_HW_CACHE` event.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[repr(u64)]
#[allow(missing_docs)]
pub enum CacheOp {
    Read = 0,
    Write = 1,
    Prefetch = 2,
}

impl CacheOp {
    /// Every operation.
    pub const ALL: [CacheOp; 3] = [CacheOp::Read, CacheOp::Write, CacheOp::Prefetch];

    /// perf's name (`load`, `store`, `prefetch`).
    pub fn name(self) -> &'static str {
        match self {
            CacheOp::Read => "load",
            CacheOp::Write => "store",
            CacheOp::Prefetch => "prefetch",
        }
    }
}

/// The result of a `PERF_TYPE_HW_CACHE` event.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[repr(u64)]
#[allow(missing_docs)]
pub enum CacheResult {
    Access = 0,
    Miss = 1,
}

impl CacheResult {
    /// Both results.
    pub const ALL: [CacheResult; 2] = [CacheResult::Access, CacheResult::Miss];
}

/// A `PERF_TYPE_HW_CACHE` event: cache × operation × result.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct CacheEvent {
    /// Which cache.
    pub cache: CacheId,
    /// Which operation.
    pub op: CacheOp,
    /// Accesses or misses.
    pub result: CacheResult,
}

impl CacheEvent {
    /// The `config` value: `id | op << 8 | result << 16`.
    pub fn config(self) -> u64 {
        self.cache as u64 | (self.op as u64) << 8 | (self.result as u64) << 16
    }

    /// perf's name, e.g. `L1-dcache-load-misses` or `LLC-loads`.
    pub fn name(self) -> String {
        let op = match (self.op, self.result) {
            (CacheOp::Read, CacheResult::Access) => "loads",
            (CacheOp::Write, CacheResult::Access) => "stores",
            (CacheOp::Prefetch, CacheResult::Access) => "prefetches",
            (op, CacheResult::Miss) => {
                return format!("{}-{}-misses", self.cache.name(), op.name());
            }
        };
        format!("{}-{op}", self.cache.name())
    }

    /// Every combination (7 × 3 × 2 = 42).
    pub fn all() -> impl Iterator<Item = CacheEvent> {
        CacheId::ALL.into_iter().flat_map(|cache| {
            CacheOp::ALL.into_iter().flat_map(move |op| {
                CacheResult::ALL
                    .into_iter()
                    .map(move |result| CacheEvent { cache, op, result })
            })
        })
    }
}

/// The access that triggers a hardware breakpoint (`bp_type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub enum BreakpointAccess {
    /// Data read.
    Read,
    /// Data write.
    Write,
    /// Data read or write.
    ReadWrite,
    /// Instruction execution.
    Execute,
}

impl BreakpointAccess {
    fn bp_type(self) -> u32 {
        match self {
            BreakpointAccess::Read => abi::HW_BREAKPOINT_R,
            BreakpointAccess::Write => abi::HW_BREAKPOINT_W,
            BreakpointAccess::ReadWrite => abi::HW_BREAKPOINT_RW,
            BreakpointAccess::Execute => abi::HW_BREAKPOINT_X,
        }
    }
}

/// What an event counts: the `type`, `config` and the config extensions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EventConfig {
    /// A generic hardware event; `pmu` is the PMU type for hybrid CPUs
    /// (encoded in config bits 63:32, the "extended type").
    Hardware {
        /// The event.
        event: Hardware,
        /// The PMU type of a hybrid core PMU (`cpu_core`, `cpu_atom`).
        pmu: Option<u32>,
    },
    /// A software event.
    Software(Software),
    /// A hardware cache event, with the same `pmu` meaning as `Hardware`.
    Cache {
        /// The event.
        event: CacheEvent,
        /// The PMU type of a hybrid core PMU.
        pmu: Option<u32>,
    },
    /// A raw CPU-specific event (`PERF_TYPE_RAW`).
    Raw(u64),
    /// A tracepoint by its tracefs id.
    Tracepoint(u64),
    /// A hardware breakpoint.
    Breakpoint {
        /// Which access triggers it.
        access: BreakpointAccess,
        /// The address.
        addr: u64,
        /// The length in bytes (1, 2, 4, 8; for execute: `sizeof(long)`).
        len: u64,
    },
    /// A dynamic PMU from sysfs (`type` from `/sys/bus/event_source/devices/*/type`).
    Dynamic {
        /// The PMU type.
        pmu_type: u32,
        /// `config`.
        config: u64,
        /// `config1` (also `kprobe_func`/`uprobe_path`).
        config1: u64,
        /// `config2` (also `kprobe_addr`/`probe_offset`).
        config2: u64,
        /// `config3`.
        config3: u64,
    },
}

pub use bit_sets::{BranchSampleType, ReadFormat, SampleType};

mod bit_sets {
    // Each constant is the PERF_* bit of the same name; see perf_event_open(2).
    #![allow(missing_docs)]

    bitflags::bitflags! {
        /// `sample_type`: the fields each sample record carries (`PERF_SAMPLE_*`).
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
        #[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
        pub struct SampleType: u64 {
            const IP = 1 << 0;
            const TID = 1 << 1;
            const TIME = 1 << 2;
            const ADDR = 1 << 3;
            const READ = 1 << 4;
            const CALLCHAIN = 1 << 5;
            const ID = 1 << 6;
            const CPU = 1 << 7;
            const PERIOD = 1 << 8;
            const STREAM_ID = 1 << 9;
            const RAW = 1 << 10;
            const BRANCH_STACK = 1 << 11;
            const REGS_USER = 1 << 12;
            const STACK_USER = 1 << 13;
            const WEIGHT = 1 << 14;
            const DATA_SRC = 1 << 15;
            const IDENTIFIER = 1 << 16;
            const TRANSACTION = 1 << 17;
            const REGS_INTR = 1 << 18;
            const PHYS_ADDR = 1 << 19;
            const AUX = 1 << 20;
            const CGROUP = 1 << 21;
            const DATA_PAGE_SIZE = 1 << 22;
            const CODE_PAGE_SIZE = 1 << 23;
            const WEIGHT_STRUCT = 1 << 24;
        }
    }

    bitflags::bitflags! {
        /// `read_format`: what `read(2)` returns (`PERF_FORMAT_*`).
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
        #[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
        pub struct ReadFormat: u64 {
            const TOTAL_TIME_ENABLED = 1 << 0;
            const TOTAL_TIME_RUNNING = 1 << 1;
            const ID = 1 << 2;
            const GROUP = 1 << 3;
            const LOST = 1 << 4;
        }
    }

    bitflags::bitflags! {
        /// `branch_sample_type` (`PERF_SAMPLE_BRANCH_*`).
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
        #[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
        pub struct BranchSampleType: u64 {
            const USER = 1 << 0;
            const KERNEL = 1 << 1;
            const HV = 1 << 2;
            const ANY = 1 << 3;
            const ANY_CALL = 1 << 4;
            const ANY_RETURN = 1 << 5;
            const IND_CALL = 1 << 6;
            const ABORT_TX = 1 << 7;
            const IN_TX = 1 << 8;
            const NO_TX = 1 << 9;
            const COND = 1 << 10;
            const CALL_STACK = 1 << 11;
            const IND_JUMP = 1 << 12;
            const CALL = 1 << 13;
            const NO_FLAGS = 1 << 14;
            const NO_CYCLES = 1 << 15;
            const TYPE_SAVE = 1 << 16;
            const HW_INDEX = 1 << 17;
            const PRIV_SAVE = 1 << 18;
            const COUNTERS = 1 << 19;
        }
    }
}

bitflags::bitflags! {
    /// `aux_action` (Linux 6.13+).
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
    pub struct AuxAction: u32 {
        /// Start AUX area tracing paused.
        const START_PAUSED = 1 << 0;
        /// On overflow, pause AUX area tracing.
        const PAUSE = 1 << 1;
        /// On overflow, resume AUX area tracing.
        const RESUME = 1 << 2;
    }
}

/// A complete `perf_event_attr`, built safely.
///
/// Every field of the current uapi has a setter; the bitfield is reached with
/// [`Attr::set`]/[`Attr::get`] and [`AttrBit`], with named shortcuts for the
/// common bits. The structure starts zeroed except for `size`.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Attr {
    pub(crate) raw: RawAttr,
}

impl Default for Attr {
    fn default() -> Self {
        Attr {
            raw: RawAttr {
                size: abi::ATTR_SIZE_CURRENT,
                ..RawAttr::default()
            },
        }
    }
}

macro_rules! bit_shortcuts {
    ($($(#[$doc:meta])* $name:ident => $bit:ident;)*) => {
        $(
            $(#[$doc])*
            pub fn $name(mut self, on: bool) -> Self {
                self.raw.flags = AttrBit::$bit.set(self.raw.flags, u64::from(on));
                self
            }
        )*
    };
}

impl Attr {
    /// An attr for `event`, everything else zero (enabled, counting user,
    /// kernel and hypervisor, no sampling).
    pub fn new(event: EventConfig) -> Attr {
        Attr::default().event(event)
    }

    /// Selects what to count (sets `type`, `config`, `config1..3`, `bp_*`).
    pub fn event(mut self, event: EventConfig) -> Self {
        let r = &mut self.raw;
        r.bp_type = abi::HW_BREAKPOINT_EMPTY;
        r.config1 = 0;
        r.config2 = 0;
        r.config3 = 0;
        let ext = |pmu: Option<u32>| pmu.map_or(0, |t| u64::from(t) << abi::PERF_PMU_TYPE_SHIFT);
        match event {
            EventConfig::Hardware { event, pmu } => {
                r.type_ = abi::PERF_TYPE_HARDWARE;
                r.config = event as u64 | ext(pmu);
            }
            EventConfig::Software(s) => {
                r.type_ = abi::PERF_TYPE_SOFTWARE;
                r.config = s as u64;
            }
            EventConfig::Cache { event, pmu } => {
                r.type_ = abi::PERF_TYPE_HW_CACHE;
                r.config = event.config() | ext(pmu);
            }
            EventConfig::Raw(c) => {
                r.type_ = abi::PERF_TYPE_RAW;
                r.config = c;
            }
            EventConfig::Tracepoint(id) => {
                r.type_ = abi::PERF_TYPE_TRACEPOINT;
                r.config = id;
            }
            EventConfig::Breakpoint { access, addr, len } => {
                r.type_ = abi::PERF_TYPE_BREAKPOINT;
                r.config = 0;
                r.bp_type = access.bp_type();
                r.config1 = addr;
                r.config2 = len;
            }
            EventConfig::Dynamic {
                pmu_type,
                config,
                config1,
                config2,
                config3,
            } => {
                r.type_ = pmu_type;
                r.config = config;
                r.config1 = config1;
                r.config2 = config2;
                r.config3 = config3;
            }
        }
        self
    }

    /// Sets one bitfield member (values wider than the field are truncated).
    pub fn set(mut self, bit: AttrBit, value: u64) -> Self {
        self.raw.flags = bit.set(self.raw.flags, value);
        self
    }

    /// Reads one bitfield member.
    pub fn get(&self, bit: AttrBit) -> u64 {
        bit.get(self.raw.flags)
    }

    /// Whether a one-bit member is set.
    pub fn is_set(&self, bit: AttrBit) -> bool {
        self.get(bit) != 0
    }

    bit_shortcuts! {
        /// Start disabled; enable with an ioctl, `enable_on_exec` or prctl.
        disabled => DISABLED;
        /// Count (or sample) threads and children created after opening.
        inherit => INHERIT;
        /// Keep the event on the PMU always; if it cannot be, it goes into
        /// error state (reads return EOF) instead of being multiplexed.
        pinned => PINNED;
        /// The group must be alone on the PMU when scheduled.
        exclusive => EXCLUSIVE;
        /// Do not count user space.
        exclude_user => EXCLUDE_USER;
        /// Do not count the kernel.
        exclude_kernel => EXCLUDE_KERNEL;
        /// Do not count the hypervisor.
        exclude_hv => EXCLUDE_HV;
        /// Do not count while idle.
        exclude_idle => EXCLUDE_IDLE;
        /// Emit MMAP records for executable mappings.
        mmap => MMAP;
        /// Emit COMM records.
        comm => COMM;
        /// Count per-task values of inherited children (`PERF_RECORD_READ` at exit).
        inherit_stat => INHERIT_STAT;
        /// Enable automatically at the next `exec`.
        enable_on_exec => ENABLE_ON_EXEC;
        /// Emit FORK/EXIT records.
        task => TASK;
        /// Emit MMAP records for data mappings too.
        mmap_data => MMAP_DATA;
        /// Put the sample id fields on every record type.
        sample_id_all => SAMPLE_ID_ALL;
        /// Do not count in the host (KVM).
        exclude_host => EXCLUDE_HOST;
        /// Do not count in guests (KVM).
        exclude_guest => EXCLUDE_GUEST;
        /// No kernel frames in callchains.
        exclude_callchain_kernel => EXCLUDE_CALLCHAIN_KERNEL;
        /// No user frames in callchains.
        exclude_callchain_user => EXCLUDE_CALLCHAIN_USER;
        /// Emit MMAP2 records instead of MMAP.
        mmap2 => MMAP2;
        /// Flag COMM records caused by exec.
        comm_exec => COMM_EXEC;
        /// Use `clockid` for sample timestamps.
        use_clockid => USE_CLOCKID;
        /// Emit SWITCH records.
        context_switch => CONTEXT_SWITCH;
        /// Write the ring buffer backwards (overwrite mode).
        write_backward => WRITE_BACKWARD;
        /// Emit NAMESPACES records.
        namespaces => NAMESPACES;
        /// Emit KSYMBOL records.
        ksymbol => KSYMBOL;
        /// Emit BPF_EVENT records.
        bpf_event => BPF_EVENT;
        /// Generate AUX records instead of events.
        aux_output => AUX_OUTPUT;
        /// Emit CGROUP records.
        cgroup => CGROUP;
        /// Emit TEXT_POKE records.
        text_poke => TEXT_POKE;
        /// Use the build-id form of MMAP2 records.
        build_id => BUILD_ID;
        /// Inherit only to threads (requires `inherit`).
        inherit_thread => INHERIT_THREAD;
        /// Remove the event on exec.
        remove_on_exec => REMOVE_ON_EXEC;
        /// Send SIGTRAP on overflow.
        sigtrap => SIGTRAP;
    }

    /// Skid constraint: 0 arbitrary … 3 zero skid.
    pub fn precise_ip(self, level: u8) -> Self {
        self.set(AttrBit::PRECISE_IP, u64::from(level.min(3)))
    }

    /// Sample every `period` events (clears `freq`).
    pub fn sample_period(mut self, period: u64) -> Self {
        self.raw.sample_period_or_freq = period;
        self.set(AttrBit::FREQ, 0)
    }

    /// Sample `hz` times per second, letting the kernel adjust the period.
    pub fn sample_freq(mut self, hz: u64) -> Self {
        self.raw.sample_period_or_freq = hz;
        self.set(AttrBit::FREQ, 1)
    }

    /// The fields of each sample.
    pub fn sample_type(mut self, t: SampleType) -> Self {
        self.raw.sample_type = t.bits();
        self
    }

    /// The layout of `read(2)`.
    pub fn read_format(mut self, f: ReadFormat) -> Self {
        self.raw.read_format = f.bits();
        self
    }

    /// Wake a poller every `n` samples (clears `watermark`).
    pub fn wakeup_events(mut self, n: u32) -> Self {
        self.raw.wakeup = n;
        self.set(AttrBit::WATERMARK, 0)
    }

    /// Wake a poller every `bytes` of ring buffer (sets `watermark`).
    pub fn wakeup_watermark(mut self, bytes: u32) -> Self {
        self.raw.wakeup = bytes;
        self.set(AttrBit::WATERMARK, 1)
    }

    /// Which branches to record with `SampleType::BRANCH_STACK`.
    pub fn branch_sample_type(mut self, t: BranchSampleType) -> Self {
        self.raw.branch_sample_type = t.bits();
        self
    }

    /// The user registers to sample (`PERF_SAMPLE_REGS_USER`), arch mask.
    pub fn sample_regs_user(mut self, mask: u64) -> Self {
        self.raw.sample_regs_user = mask;
        self
    }

    /// Bytes of user stack to dump (`PERF_SAMPLE_STACK_USER`).
    pub fn sample_stack_user(mut self, bytes: u32) -> Self {
        self.raw.sample_stack_user = bytes;
        self
    }

    /// The clock of sample timestamps (`use_clockid` is set too).
    pub fn clockid(mut self, clock: i32) -> Self {
        self.raw.clockid = clock;
        self.set(AttrBit::USE_CLOCKID, 1)
    }

    /// The registers to sample at interrupt (`PERF_SAMPLE_REGS_INTR`).
    pub fn sample_regs_intr(mut self, mask: u64) -> Self {
        self.raw.sample_regs_intr = mask;
        self
    }

    /// Wakeup watermark of the AUX area.
    pub fn aux_watermark(mut self, bytes: u32) -> Self {
        self.raw.aux_watermark = bytes;
        self
    }

    /// Maximum callchain depth (≤ `perf_event_max_stack`).
    pub fn sample_max_stack(mut self, frames: u16) -> Self {
        self.raw.sample_max_stack = frames;
        self
    }

    /// Bytes of AUX data to put in samples (`PERF_SAMPLE_AUX`).
    pub fn aux_sample_size(mut self, bytes: u32) -> Self {
        self.raw.aux_sample_size = bytes;
        self
    }

    /// AUX pause/resume actions (Linux 6.13+).
    pub fn aux_action(mut self, a: AuxAction) -> Self {
        self.raw.aux_action = a.bits();
        self
    }

    /// User data delivered with SIGTRAP (`si_perf_data`).
    pub fn sig_data(mut self, data: u64) -> Self {
        self.raw.sig_data = data;
        self
    }

    /// Overrides `config` (keeps `type`).
    pub fn config(mut self, config: u64) -> Self {
        self.raw.config = config;
        self
    }

    /// Overrides `config1` (also `bp_addr`, `kprobe_func`, `uprobe_path`).
    pub fn config1(mut self, v: u64) -> Self {
        self.raw.config1 = v;
        self
    }

    /// Overrides `config2` (also `bp_len`, `kprobe_addr`, `probe_offset`).
    pub fn config2(mut self, v: u64) -> Self {
        self.raw.config2 = v;
        self
    }

    /// Overrides `config3` (Linux 6.3+).
    pub fn config3(mut self, v: u64) -> Self {
        self.raw.config3 = v;
        self
    }

    /// Declares an older ABI size (`PERF_ATTR_SIZE_VER0` = 64 …
    /// `PERF_ATTR_SIZE_VER8` = 136). Fields beyond it are not sent.
    pub fn size(mut self, size: u32) -> Self {
        self.raw.size = size.clamp(abi::ATTR_SIZE_VER0, abi::ATTR_SIZE_CURRENT);
        self
    }

    // --- getters ---------------------------------------------------------

    /// `type`.
    pub fn type_id(&self) -> u32 {
        self.raw.type_
    }
    /// `size`.
    pub fn size_bytes(&self) -> u32 {
        self.raw.size
    }
    /// `config`.
    pub fn get_config(&self) -> u64 {
        self.raw.config
    }
    /// `config1`.
    pub fn get_config1(&self) -> u64 {
        self.raw.config1
    }
    /// `config2`.
    pub fn get_config2(&self) -> u64 {
        self.raw.config2
    }
    /// `config3`.
    pub fn get_config3(&self) -> u64 {
        self.raw.config3
    }
    /// `bp_type`.
    pub fn get_bp_type(&self) -> u32 {
        self.raw.bp_type
    }
    /// `sample_period` (or `sample_freq` when `freq` is set).
    pub fn get_sample_period_or_freq(&self) -> u64 {
        self.raw.sample_period_or_freq
    }
    /// `sample_type`.
    pub fn get_sample_type(&self) -> SampleType {
        SampleType::from_bits_retain(self.raw.sample_type)
    }
    /// `read_format`.
    pub fn get_read_format(&self) -> ReadFormat {
        ReadFormat::from_bits_retain(self.raw.read_format)
    }
    /// `branch_sample_type`.
    pub fn get_branch_sample_type(&self) -> BranchSampleType {
        BranchSampleType::from_bits_retain(self.raw.branch_sample_type)
    }
    /// `wakeup_events` / `wakeup_watermark`.
    pub fn get_wakeup(&self) -> u32 {
        self.raw.wakeup
    }
    /// `sample_max_stack`.
    pub fn get_sample_max_stack(&self) -> u16 {
        self.raw.sample_max_stack
    }
    /// `sample_regs_user`.
    pub fn get_sample_regs_user(&self) -> u64 {
        self.raw.sample_regs_user
    }
    /// `sample_stack_user`.
    pub fn get_sample_stack_user(&self) -> u32 {
        self.raw.sample_stack_user
    }
    /// `clockid`.
    pub fn get_clockid(&self) -> i32 {
        self.raw.clockid
    }
    /// `sample_regs_intr`.
    pub fn get_sample_regs_intr(&self) -> u64 {
        self.raw.sample_regs_intr
    }
    /// `aux_watermark`.
    pub fn get_aux_watermark(&self) -> u32 {
        self.raw.aux_watermark
    }
    /// `aux_sample_size`.
    pub fn get_aux_sample_size(&self) -> u32 {
        self.raw.aux_sample_size
    }
    /// `aux_action`.
    pub fn get_aux_action(&self) -> AuxAction {
        AuxAction::from_bits_retain(self.raw.aux_action)
    }
    /// `sig_data`.
    pub fn get_sig_data(&self) -> u64 {
        self.raw.sig_data
    }

    /// Whether this event is sampling (a non-zero period or frequency).
    pub fn is_sampling(&self) -> bool {
        self.raw.sample_period_or_freq != 0
    }

    /// The structure as the kernel sees it (`size` bytes), for golden tests
    /// and for comparing with `perf -vv` dumps.
    pub fn to_bytes(&self) -> Vec<u8> {
        let r = &self.raw;
        let mut out = Vec::with_capacity(abi::ATTR_SIZE_CURRENT as usize);
        out.extend_from_slice(&r.type_.to_ne_bytes());
        out.extend_from_slice(&r.size.to_ne_bytes());
        for v in [
            r.config,
            r.sample_period_or_freq,
            r.sample_type,
            r.read_format,
            r.flags,
        ] {
            out.extend_from_slice(&v.to_ne_bytes());
        }
        out.extend_from_slice(&r.wakeup.to_ne_bytes());
        out.extend_from_slice(&r.bp_type.to_ne_bytes());
        for v in [
            r.config1,
            r.config2,
            r.branch_sample_type,
            r.sample_regs_user,
        ] {
            out.extend_from_slice(&v.to_ne_bytes());
        }
        out.extend_from_slice(&r.sample_stack_user.to_ne_bytes());
        out.extend_from_slice(&r.clockid.to_ne_bytes());
        out.extend_from_slice(&r.sample_regs_intr.to_ne_bytes());
        out.extend_from_slice(&r.aux_watermark.to_ne_bytes());
        out.extend_from_slice(&r.sample_max_stack.to_ne_bytes());
        out.extend_from_slice(&r.reserved_2.to_ne_bytes());
        out.extend_from_slice(&r.aux_sample_size.to_ne_bytes());
        out.extend_from_slice(&r.aux_action.to_ne_bytes());
        out.extend_from_slice(&r.sig_data.to_ne_bytes());
        out.extend_from_slice(&r.config3.to_ne_bytes());
        out.truncate(r.size as usize);
        out
    }

    /// A short description of the event for error messages, e.g.
    /// `type 1 config 0x1`.
    pub fn describe_event(&self) -> String {
        let r = &self.raw;
        match r.type_ {
            abi::PERF_TYPE_HARDWARE => Hardware::ALL
                .iter()
                .find(|h| **h as u64 == r.config & 0xffff_ffff)
                .map_or_else(
                    || format!("hardware 0x{:x}", r.config),
                    |h| h.name().to_string(),
                ),
            abi::PERF_TYPE_SOFTWARE => Software::ALL
                .iter()
                .find(|s| **s as u64 == r.config)
                .map_or_else(
                    || format!("software 0x{:x}", r.config),
                    |s| s.name().to_string(),
                ),
            abi::PERF_TYPE_HW_CACHE => CacheEvent::all()
                .find(|c| c.config() == r.config & 0xffff_ffff)
                .map_or_else(|| format!("cache 0x{:x}", r.config), |c| c.name()),
            abi::PERF_TYPE_RAW => format!("r{:x}", r.config),
            abi::PERF_TYPE_TRACEPOINT => format!("tracepoint id {}", r.config),
            abi::PERF_TYPE_BREAKPOINT => {
                format!(
                    "breakpoint 0x{:x}/{} type {}",
                    r.config1, r.config2, r.bp_type
                )
            }
            t => format!("pmu type {t} config 0x{:x}", r.config),
        }
    }

    /// Whether counting this event includes kernel mode.
    pub(crate) fn counts_kernel(&self) -> bool {
        !self.is_set(AttrBit::EXCLUDE_KERNEL)
    }
}

impl fmt::Debug for Attr {
    /// Prints every non-zero field by its uapi name, like `perf -vv`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let r = &self.raw;
        let mut s = f.debug_struct("Attr");
        s.field("type", &r.type_).field("size", &r.size);
        s.field("config", &format_args!("{:#x}", r.config));
        let nz = |v: u64| v != 0;
        if nz(r.sample_period_or_freq) {
            let name = if self.is_set(AttrBit::FREQ) {
                "sample_freq"
            } else {
                "sample_period"
            };
            s.field(name, &r.sample_period_or_freq);
        }
        if nz(r.sample_type) {
            s.field("sample_type", &self.get_sample_type());
        }
        if nz(r.read_format) {
            s.field("read_format", &self.get_read_format());
        }
        for (name, bit) in AttrBit::ALL {
            let v = bit.get(r.flags);
            if v != 0 {
                s.field(&name.to_ascii_lowercase(), &v);
            }
        }
        for (name, v) in [
            ("wakeup", u64::from(r.wakeup)),
            ("bp_type", u64::from(r.bp_type)),
            ("config1", r.config1),
            ("config2", r.config2),
            ("branch_sample_type", r.branch_sample_type),
            ("sample_regs_user", r.sample_regs_user),
            ("sample_stack_user", u64::from(r.sample_stack_user)),
            ("clockid", r.clockid as u64),
            ("sample_regs_intr", r.sample_regs_intr),
            ("aux_watermark", u64::from(r.aux_watermark)),
            ("sample_max_stack", u64::from(r.sample_max_stack)),
            ("aux_sample_size", u64::from(r.aux_sample_size)),
            ("aux_action", u64::from(r.aux_action)),
            ("sig_data", r.sig_data),
            ("config3", r.config3),
        ] {
            if nz(v) {
                s.field(name, &format_args!("{v:#x}"));
            }
        }
        s.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cache_config_encodes_id_op_result() {
        let e = CacheEvent {
            cache: CacheId::L1D,
            op: CacheOp::Read,
            result: CacheResult::Miss,
        };
        assert_eq!(e.config(), 0x10000);
        assert_eq!(e.name(), "L1-dcache-load-misses");
        assert_eq!(CacheEvent::all().count(), 42);
        let llc = CacheEvent {
            cache: CacheId::LL,
            op: CacheOp::Write,
            result: CacheResult::Access,
        };
        assert_eq!(llc.config(), 0x102);
        assert_eq!(llc.name(), "LLC-stores");
    }

    #[test]
    fn hybrid_hardware_uses_the_extended_type() {
        let a = Attr::new(EventConfig::Hardware {
            event: Hardware::Instructions,
            pmu: Some(8),
        });
        assert_eq!(a.type_id(), 0);
        assert_eq!(a.get_config(), (8 << 32) | 1);
    }

    #[test]
    fn freq_and_period_share_the_union() {
        let a = Attr::new(EventConfig::Software(Software::CpuClock)).sample_freq(4000);
        assert!(a.is_set(AttrBit::FREQ));
        assert_eq!(a.get_sample_period_or_freq(), 4000);
        let a = a.sample_period(10_000);
        assert!(!a.is_set(AttrBit::FREQ));
        assert_eq!(a.get_sample_period_or_freq(), 10_000);
    }

    #[test]
    fn bytes_follow_the_declared_size() {
        let a = Attr::new(EventConfig::Raw(0xc0)).config3(7);
        let b = a.to_bytes();
        assert_eq!(b.len(), 136);
        assert_eq!(&b[128..136], &7u64.to_ne_bytes());
        assert_eq!(a.size(64).to_bytes().len(), 64);
    }

    #[test]
    fn breakpoint_fields_land_in_config1_and_config2() {
        let a = Attr::new(EventConfig::Breakpoint {
            access: BreakpointAccess::Write,
            addr: 0x1000,
            len: 8,
        });
        assert_eq!(a.type_id(), 5);
        assert_eq!(a.get_bp_type(), 2);
        assert_eq!(a.get_config1(), 0x1000);
        assert_eq!(a.get_config2(), 8);
        assert!(format!("{a:?}").contains("bp_type"));
    }
}
