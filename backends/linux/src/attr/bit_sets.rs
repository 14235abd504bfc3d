//! The bitflag sets of `perf_event_attr`: `sample_type`, `read_format`,
//! `branch_sample_type` and `aux_action`.
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
