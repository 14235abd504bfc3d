//! The data of libpmc's tables: `__PMC_EV_K8()` event names
//! (sys/dev/hwpmc/pmc_events.h), the K8 unit-mask keywords and aliases
//! (lib/libpmc/libpmc.c), the pmu-events aliases
//! (lib/libpmc/libpmc_pmu_util.c) and the AMD/Intel register bits
//! (hwpmc_amd.h, hwpmc_core.h).

use crate::abi;

/// `__PMC_EV_K8()` in order; event code = `PMC_EV_K8_FIRST` + index.
pub const K8_EVENTS: &[&str] = &[
    "FP_DISPATCHED_FPU_OPS",
    "FP_CYCLES_WITH_NO_FPU_OPS_RETIRED",
    "FP_DISPATCHED_FPU_FAST_FLAG_OPS",
    "LS_SEGMENT_REGISTER_LOAD",
    "LS_MICROARCHITECTURAL_RESYNC_BY_SELF_MODIFYING_CODE",
    "LS_MICROARCHITECTURAL_RESYNC_BY_SNOOP",
    "LS_BUFFER2_FULL",
    "LS_LOCKED_OPERATION",
    "LS_MICROARCHITECTURAL_LATE_CANCEL",
    "LS_RETIRED_CFLUSH_INSTRUCTIONS",
    "LS_RETIRED_CPUID_INSTRUCTIONS",
    "DC_ACCESS",
    "DC_MISS",
    "DC_REFILL_FROM_L2",
    "DC_REFILL_FROM_SYSTEM",
    "DC_COPYBACK",
    "DC_L1_DTLB_MISS_AND_L2_DTLB_HIT",
    "DC_L1_DTLB_MISS_AND_L2_DTLB_MISS",
    "DC_MISALIGNED_DATA_REFERENCE",
    "DC_MICROARCHITECTURAL_LATE_CANCEL",
    "DC_MICROARCHITECTURAL_EARLY_CANCEL",
    "DC_ONE_BIT_ECC_ERROR",
    "DC_DISPATCHED_PREFETCH_INSTRUCTIONS",
    "DC_DCACHE_ACCESSES_BY_LOCKS",
    "BU_CPU_CLK_UNHALTED",
    "BU_INTERNAL_L2_REQUEST",
    "BU_FILL_REQUEST_L2_MISS",
    "BU_FILL_INTO_L2",
    "IC_FETCH",
    "IC_MISS",
    "IC_REFILL_FROM_L2",
    "IC_REFILL_FROM_SYSTEM",
    "IC_L1_ITLB_MISS_AND_L2_ITLB_HIT",
    "IC_L1_ITLB_MISS_AND_L2_ITLB_MISS",
    "IC_MICROARCHITECTURAL_RESYNC_BY_SNOOP",
    "IC_INSTRUCTION_FETCH_STALL",
    "IC_RETURN_STACK_HIT",
    "IC_RETURN_STACK_OVERFLOW",
    "FR_RETIRED_X86_INSTRUCTIONS",
    "FR_RETIRED_UOPS",
    "FR_RETIRED_BRANCHES",
    "FR_RETIRED_BRANCHES_MISPREDICTED",
    "FR_RETIRED_TAKEN_BRANCHES",
    "FR_RETIRED_TAKEN_BRANCHES_MISPREDICTED",
    "FR_RETIRED_FAR_CONTROL_TRANSFERS",
    "FR_RETIRED_RESYNCS",
    "FR_RETIRED_NEAR_RETURNS",
    "FR_RETIRED_NEAR_RETURNS_MISPREDICTED",
    "FR_RETIRED_TAKEN_BRANCHES_MISPREDICTED_BY_ADDR_MISCOMPARE",
    "FR_RETIRED_FPU_INSTRUCTIONS",
    "FR_RETIRED_FASTPATH_DOUBLE_OP_INSTRUCTIONS",
    "FR_INTERRUPTS_MASKED_CYCLES",
    "FR_INTERRUPTS_MASKED_WHILE_PENDING_CYCLES",
    "FR_TAKEN_HARDWARE_INTERRUPTS",
    "FR_DECODER_EMPTY",
    "FR_DISPATCH_STALLS",
    "FR_DISPATCH_STALL_FROM_BRANCH_ABORT_TO_RETIRE",
    "FR_DISPATCH_STALL_FOR_SERIALIZATION",
    "FR_DISPATCH_STALL_FOR_SEGMENT_LOAD",
    "FR_DISPATCH_STALL_WHEN_REORDER_BUFFER_IS_FULL",
    "FR_DISPATCH_STALL_WHEN_RESERVATION_STATIONS_ARE_FULL",
    "FR_DISPATCH_STALL_WHEN_FPU_IS_FULL",
    "FR_DISPATCH_STALL_WHEN_LS_IS_FULL",
    "FR_DISPATCH_STALL_WHEN_WAITING_FOR_ALL_TO_BE_QUIET",
    "FR_DISPATCH_STALL_WHEN_FAR_XFER_OR_RESYNC_BRANCH_PENDING",
    "FR_FPU_EXCEPTIONS",
    "FR_NUMBER_OF_BREAKPOINTS_FOR_DR0",
    "FR_NUMBER_OF_BREAKPOINTS_FOR_DR1",
    "FR_NUMBER_OF_BREAKPOINTS_FOR_DR2",
    "FR_NUMBER_OF_BREAKPOINTS_FOR_DR3",
    "NB_MEMORY_CONTROLLER_PAGE_ACCESS_EVENT",
    "NB_MEMORY_CONTROLLER_PAGE_TABLE_OVERFLOW",
    "NB_MEMORY_CONTROLLER_DRAM_COMMAND_SLOTS_MISSED",
    "NB_MEMORY_CONTROLLER_TURNAROUND",
    "NB_MEMORY_CONTROLLER_BYPASS_SATURATION",
    "NB_SIZED_COMMANDS",
    "NB_PROBE_RESULT",
    "NB_HT_BUS0_BANDWIDTH",
    "NB_HT_BUS1_BANDWIDTH",
    "NB_HT_BUS2_BANDWIDTH",
];

/// `__PMC_EV_IAF()`: event code = `PMC_EV_IAF_FIRST` + index.
pub const IAF_EVENTS: &[&str] = &[
    "INSTR_RETIRED_ANY",
    "CPU_CLK_UNHALTED_CORE",
    "CPU_CLK_UNHALTED_REF",
];

/// The K8 event code of `name` (from [`K8_EVENTS`]).
pub fn k8_event(name: &str) -> Option<u32> {
    K8_EVENTS
        .iter()
        .position(|n| *n == name)
        .map(|i| abi::PMC_EV_K8_FIRST + i as u32)
}

pub(crate) type Masks = &'static [(&'static str, u32)];

/// libpmc's K8 unit-mask keyword tables (`__K8MASK(N, bit)`), per event.
pub(crate) fn k8_masks(event: &str) -> Option<Masks> {
    const FDFO: Masks = &[
        ("add-pipe-excluding-junk-ops", 0),
        ("multiply-pipe-excluding-junk-ops", 1),
        ("store-pipe-excluding-junk-ops", 2),
        ("add-pipe-junk-ops", 3),
        ("multiply-pipe-junk-ops", 4),
        ("store-pipe-junk-ops", 5),
    ];
    const LSRL: Masks = &[
        ("es", 0),
        ("cs", 1),
        ("ss", 2),
        ("ds", 3),
        ("fs", 4),
        ("gs", 5),
        ("hs", 6),
    ];
    const LLO: Masks = &[
        ("locked-instructions", 0),
        ("cycles-in-request", 1),
        ("cycles-to-complete", 2),
    ];
    const DC: Masks = &[
        ("invalid", 0),
        ("shared", 1),
        ("exclusive", 2),
        ("owner", 3),
        ("modified", 4),
    ];
    const DOBEE: Masks = &[("scrubber", 0), ("piggyback", 1)];
    const DDPI: Masks = &[("load", 0), ("store", 1), ("nta", 2)];
    const DABL: Masks = &[("accesses", 0), ("misses", 1)];
    const BILR: Masks = &[
        ("ic-fill", 0),
        ("dc-fill", 1),
        ("tlb-reload", 2),
        ("tag-snoop", 3),
        ("cancelled", 4),
    ];
    const BFRLM: Masks = &[("ic-fill", 0), ("dc-fill", 1), ("tlb-reload", 2)];
    const BFIL: Masks = &[("dirty-l2-victim", 0), ("victim-from-l2", 1)];
    const FRFI: Masks = &[
        ("x87", 0),
        ("mmx-3dnow", 1),
        ("packed-sse-sse2", 2),
        ("scalar-sse-sse2", 3),
    ];
    const FRFDOI: Masks = &[
        ("low-op-pos-0", 0),
        ("low-op-pos-1", 1),
        ("low-op-pos-2", 2),
    ];
    const FFE: Masks = &[
        ("x87-reclass-microfaults", 0),
        ("sse-retype-microfaults", 1),
        ("sse-reclass-microfaults", 2),
        ("sse-and-x87-microtraps", 3),
    ];
    const NMCPAE: Masks = &[("page-hit", 0), ("page-miss", 1), ("page-conflict", 2)];
    const NMCT: Masks = &[
        ("dimm-turnaround", 0),
        ("read-to-write-turnaround", 1),
        ("write-to-read-turnaround", 2),
    ];
    const NMCBS: Masks = &[
        ("memory-controller-hi-pri-bypass", 0),
        ("memory-controller-lo-pri-bypass", 1),
        ("dram-controller-interface-bypass", 2),
        ("dram-controller-queue-bypass", 3),
    ];
    const NSC: Masks = &[
        ("nonpostwrszbyte", 0),
        ("nonpostwrszdword", 1),
        ("postwrszbyte", 2),
        ("postwrszdword", 3),
        ("rdszbyte", 4),
        ("rdszdword", 5),
        ("rdmodwr", 6),
    ];
    const NPR: Masks = &[
        ("probe-miss", 0),
        ("probe-hit", 1),
        ("probe-hit-dirty-no-memory-cancel", 2),
        ("probe-hit-dirty-with-memory-cancel", 3),
    ];
    const NHBB: Masks = &[
        ("command", 0),
        ("data", 1),
        ("buffer-release", 2),
        ("nop", 3),
    ];
    Some(match event {
        "FP_DISPATCHED_FPU_OPS" => FDFO,
        "LS_SEGMENT_REGISTER_LOAD" => LSRL,
        "LS_LOCKED_OPERATION" => LLO,
        "DC_REFILL_FROM_L2" | "DC_REFILL_FROM_SYSTEM" | "DC_COPYBACK" => DC,
        "DC_ONE_BIT_ECC_ERROR" => DOBEE,
        "DC_DISPATCHED_PREFETCH_INSTRUCTIONS" => DDPI,
        "DC_DCACHE_ACCESSES_BY_LOCKS" => DABL,
        "BU_INTERNAL_L2_REQUEST" => BILR,
        "BU_FILL_REQUEST_L2_MISS" => BFRLM,
        "BU_FILL_INTO_L2" => BFIL,
        "FR_RETIRED_FPU_INSTRUCTIONS" => FRFI,
        "FR_RETIRED_FASTPATH_DOUBLE_OP_INSTRUCTIONS" => FRFDOI,
        "FR_FPU_EXCEPTIONS" => FFE,
        "NB_MEMORY_CONTROLLER_PAGE_ACCESS_EVENT" => NMCPAE,
        "NB_MEMORY_CONTROLLER_TURNAROUND" => NMCT,
        "NB_MEMORY_CONTROLLER_BYPASS_SATURATION" => NMCBS,
        "NB_SIZED_COMMANDS" => NSC,
        "NB_PROBE_RESULT" => NPR,
        "NB_HT_BUS0_BANDWIDTH" | "NB_HT_BUS1_BANDWIDTH" | "NB_HT_BUS2_BANDWIDTH" => NHBB,
        _ => return None,
    })
}

/// hwpmc_amd.h `AMD_PMC_*` bits.
pub mod amd {
    /// `AMD_PMC_TO_COUNTER(x)`.
    pub const fn to_counter(x: u64) -> u64 {
        (x << 24) & 0xFF00_0000
    }
    /// `AMD_PMC_TO_UNITMASK(x)`.
    pub const fn to_unitmask(x: u64) -> u64 {
        (x << 8) & 0xFF00
    }
    /// `AMD_PMC_TO_EVENTMASK(x)`.
    pub const fn to_eventmask(x: u64) -> u64 {
        (x & 0xFF) | ((x & 0xF00) << 24)
    }
    /// `AMD_PMC_TO_EVENTMASK_DF(x)`.
    pub const fn to_eventmask_df(x: u64) -> u64 {
        (x & 0xFF) | ((x & 0x0F00) << 24) | ((x & 0x3000) << 47)
    }
    /// `AMD_PMC_TO_L3SLICE(x)`.
    pub const fn to_l3slice(x: u64) -> u64 {
        (x << 48) & 0x000F_0000_0000_0000
    }
    /// `AMD_PMC_TO_L3CORE(x)`.
    pub const fn to_l3core(x: u64) -> u64 {
        (x << 56) & 0xFF00_0000_0000_0000
    }
    /// `AMD_PMC_INVERT`.
    pub const INVERT: u64 = 1 << 23;
    /// `AMD_PMC_INT`.
    pub const INT: u64 = 1 << 20;
    /// `AMD_PMC_EDGE`.
    pub const EDGE: u64 = 1 << 18;
    /// `AMD_PMC_OS`.
    pub const OS: u64 = 1 << 17;
    /// `AMD_PMC_USR`.
    pub const USR: u64 = 1 << 16;
}

/// hwpmc_core.h `IAP_*` bits.
pub mod iap {
    /// `IAP_EVSEL(C)`.
    pub const fn evsel(c: u64) -> u64 {
        c & 0xFF
    }
    /// `IAP_UMASK(C)`.
    pub const fn umask(c: u64) -> u64 {
        (c & 0xFF) << 8
    }
    /// `IAP_CMASK(C)`.
    pub const fn cmask(c: u64) -> u64 {
        (c & 0xFF) << 24
    }
    /// `IAP_USR`.
    pub const USR: u64 = 1 << 16;
    /// `IAP_OS`.
    pub const OS: u64 = 1 << 17;
    /// `IAP_EDGE`.
    pub const EDGE: u64 = 1 << 18;
    /// `IAP_INT`.
    pub const INT: u64 = 1 << 20;
    /// `IAP_ANY`.
    pub const ANY: u64 = 1 << 21;
    /// `IAP_INV`.
    pub const INV: u64 = 1 << 23;
}

/// Intel aliases of libpmc_pmu_util.c `pmu_intel_alias_table`.
pub(crate) const PMU_INTEL_ALIASES: &[(&str, &str)] = &[
    ("UNHALTED_CORE_CYCLES", "CPU_CLK_UNHALTED.THREAD_P_ANY"),
    ("UNHALTED-CORE-CYCLES", "CPU_CLK_UNHALTED.THREAD_P_ANY"),
    ("LLC_MISSES", "LONGEST_LAT_CACHE.MISS"),
    ("LLC-MISSES", "LONGEST_LAT_CACHE.MISS"),
    ("LLC_REFERENCE", "LONGEST_LAT_CACHE.REFERENCE"),
    ("LLC-REFERENCE", "LONGEST_LAT_CACHE.REFERENCE"),
    ("LLC_MISS_RHITM", "mem_load_l3_miss_retired.remote_hitm"),
    ("LLC-MISS-RHITM", "mem_load_l3_miss_retired.remote_hitm"),
    ("RESOURCE_STALL", "RESOURCE_STALLS.ANY"),
    ("RESOURCE_STALLS_ANY", "RESOURCE_STALLS.ANY"),
    ("BRANCH_INSTRUCTION_RETIRED", "BR_INST_RETIRED.ALL_BRANCHES"),
    ("BRANCH-INSTRUCTION-RETIRED", "BR_INST_RETIRED.ALL_BRANCHES"),
    ("BRANCH_MISSES_RETIRED", "BR_MISP_RETIRED.ALL_BRANCHES"),
    ("BRANCH-MISSES-RETIRED", "BR_MISP_RETIRED.ALL_BRANCHES"),
    ("cycles", "tsc-tsc"),
    ("instructions", "inst-retired.any_p"),
    ("branch-mispredicts", "br_misp_retired.all_branches"),
    ("branches", "br_inst_retired.all_branches"),
    ("interrupts", "hw_interrupts.received"),
    ("ic-misses", "frontend_retired.l1i_miss"),
];

/// AMD aliases of `pmu_amd_alias_table`.
pub(crate) const PMU_AMD_ALIASES: &[(&str, &str)] = &[
    ("UNHALTED_CORE_CYCLES", "ls_not_halted_cyc"),
    ("UNHALTED-CORE-CYCLES", "ls_not_halted_cyc"),
];

/// libpmc.c `k8_aliases` (CPU type AMD_K8).
pub(crate) const K8_ALIASES: &[(&str, &str)] = &[
    ("branches", "k8-fr-retired-taken-branches"),
    (
        "branch-mispredicts",
        "k8-fr-retired-taken-branches-mispredicted",
    ),
    ("cycles", "tsc"),
    ("dc-misses", "k8-dc-miss"),
    ("ic-misses", "k8-ic-miss"),
    ("instructions", "k8-fr-retired-x86-instructions"),
    ("interrupts", "k8-fr-taken-hardware-interrupts"),
    ("unhalted-cycles", "k8-bu-cpu-clk-unhalted"),
];

/// libpmc.c `generic_aliases` (CPU type GENERIC).
pub(crate) const GENERIC_ALIASES: &[(&str, &str)] = &[("instructions", "SOFT-CLOCK.HARD")];
