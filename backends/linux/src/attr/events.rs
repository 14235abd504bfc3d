//! The event selection: generic hardware, software and cache events,
//! breakpoint access kinds, and [`EventConfig`] combining them with raw,
//! tracepoint and dynamic-PMU events.

use crate::sys::abi;

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
    pub(super) fn bp_type(self) -> u32 {
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
