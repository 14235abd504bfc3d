//! libpmc's ARMV8 event names: what FreeBSD's `pmc_allocate` accepts and
//! `pmc_event_names_of_class(PMC_CLASS_ARMV8)` lists on an arm64 machine.
//!
//! FreeBSD (`PMC_VERSION` 0x0A000000) builds one table per CPU type in
//! lib/libpmc/libpmc.c — `cortex_a53_event_table`, `cortex_a57_event_table`,
//! `cortex_a76_event_table` — each the aliases of its
//! `__PMC_EV_ALIAS_ARMV8_CORTEX_*()` macro followed by the 1024 raw events
//! of `__PMC_EV_ARMV8()`, `EVENT_00H` … `EVENT_3FFH` (sys/dev/hwpmc/
//! pmc_events.h). An alias names a raw event (`INST_RETIRED` is
//! `ARMV8_EVENT_08H`), and hwpmc_arm64.c's `arm64_allocate_pmc` programs
//! `pm_ev - PMC_EV_ARMV8_FIRST` as the PMU's event number, so every name
//! here is an event number of the Arm PMUv3 event space. Which table
//! applies follows `pm_cputype`: A57 and A76 have theirs, every other
//! type (`default:` in `pmc_event_names_of_class`) A53's.

use super::names::normalize;

/// `__PMC_EV_ALIAS_ARMV8_COMMON()`: in every table, first.
const COMMON: &[(&str, u16)] = &[
    ("SW_INCR", 0x00),
    ("L1I_CACHE_REFILL", 0x01),
    ("L1I_TLB_REFILL", 0x02),
    ("L1D_CACHE_REFILL", 0x03),
    ("L1D_CACHE", 0x04),
    ("L1D_TLB_REFILL", 0x05),
    ("INST_RETIRED", 0x08),
    ("EXC_TAKEN", 0x09),
    ("EXC_RETURN", 0x0A),
    ("CID_WRITE_RETIRED", 0x0B),
    ("BR_MIS_PRED", 0x10),
    ("CPU_CYCLES", 0x11),
    ("BR_PRED", 0x12),
    ("MEM_ACCESS", 0x13),
    ("L1I_CACHE", 0x14),
    ("L1D_CACHE_WB", 0x15),
    ("L2D_CACHE", 0x16),
    ("L2D_CACHE_REFILL", 0x17),
    ("L2D_CACHE_WB", 0x18),
    ("BUS_ACCESS", 0x19),
    ("MEMORY_ERROR", 0x1A),
    ("BUS_CYCLES", 0x1D),
    ("CHAIN", 0x1E),
    ("BUS_ACCESS_LD", 0x60),
    ("BUS_ACCESS_ST", 0x61),
    ("BR_INDIRECT_SPEC", 0x7A),
    ("EXC_IRQ", 0x86),
    ("EXC_FIQ", 0x87),
];

/// `__PMC_EV_ALIAS_ARMV8_CORTEX_A53()` after the common ones.
const CORTEX_A53: &[(&str, u16)] = &[
    ("LD_RETIRED", 0x06),
    ("ST_RETIRED", 0x07),
    ("PC_WRITE_RETIRED", 0x0C),
    ("BR_IMMED_RETIRED", 0x0D),
    ("BR_RETURN_RETIRED", 0x0E),
    ("UNALIGNED_LDST_RETIRED", 0x0F),
];

/// `__PMC_EV_ALIAS_ARMV8_CORTEX_A57_A76()` after the common ones.
const CORTEX_A57_A76: &[(&str, u16)] = &[
    ("INST_SPEC", 0x1B),
    ("TTBR_WRITE_RETIRED", 0x1C),
    ("L1D_CACHE_LD", 0x40),
    ("L1D_CACHE_ST", 0x41),
    ("L1D_CACHE_REFILL_LD", 0x42),
    ("L1D_CACHE_REFILL_ST", 0x43),
    ("L1D_CACHE_WB_VICTIM", 0x46),
    ("L1D_CACHE_WB_CLEAN", 0x47),
    ("L1D_CACHE_INVAL", 0x48),
    ("L1D_TLB_REFILL_LD", 0x4C),
    ("L1D_TLB_REFILL_ST", 0x4D),
    ("L2D_CACHE_LD", 0x50),
    ("L2D_CACHE_ST", 0x51),
    ("L2D_CACHE_REFILL_LD", 0x52),
    ("L2D_CACHE_REFILL_ST", 0x53),
    ("L2D_CACHE_WB_VICTIM", 0x56),
    ("L2D_CACHE_WB_CLEAN", 0x57),
    ("L2D_CACHE_INVAL", 0x58),
    ("MEM_ACCESS_LD", 0x66),
    ("MEM_ACCESS_ST", 0x67),
    ("UNALIGNED_LD_SPEC", 0x68),
    ("UNALIGNED_ST_SPEC", 0x69),
    ("UNALIGNED_LDST_SPEC", 0x6A),
    ("LDREX_SPEC", 0x6C),
    ("STREX_PASS_SPEC", 0x6D),
    ("STREX_FAIL_SPEC", 0x6E),
    ("LD_SPEC", 0x70),
    ("ST_SPEC", 0x71),
    ("LDST_SPEC", 0x72),
    ("DP_SPEC", 0x73),
    ("ASE_SPEC", 0x74),
    ("VFP_SPEC", 0x75),
    ("PC_WRITE_SPEC", 0x76),
    ("CRYPTO_SPEC", 0x77),
    ("BR_IMMED_SPEC", 0x78),
    ("BR_RETURN_SPEC", 0x79),
    ("ISB_SPEC", 0x7C),
    ("DSB_SPEC", 0x7D),
    ("DMB_SPEC", 0x7E),
    ("EXC_UNDEF", 0x81),
    ("EXC_SVC", 0x82),
    ("EXC_PABORT", 0x83),
    ("EXC_DABORT", 0x84),
    ("EXC_SMC", 0x88),
    ("EXC_HVC", 0x8A),
    ("EXC_TRAP_PABORT", 0x8B),
    ("EXC_TRAP_DABORT", 0x8C),
    ("EXC_TRAP_OTHER", 0x8D),
    ("EXC_TRAP_IRQ", 0x8E),
    ("EXC_TRAP_FIQ", 0x8F),
    ("RC_LD_SPEC", 0x90),
    ("RC_ST_SPEC", 0x91),
];

/// `__PMC_EV_ALIAS_ARMV8_CORTEX_A57()` after the A57/A76 ones.
const CORTEX_A57: &[(&str, u16)] = &[
    ("BUS_ACCESS_SHARED", 0x62),
    ("BUS_ACCESS_NOT_SHARED", 0x63),
    ("BUS_ACCESS_NORMAL", 0x64),
    ("BUS_ACCESS_PERIPH", 0x65),
];

/// `__PMC_EV_ALIAS_ARMV8_CORTEX_A76()` after the A57/A76 ones.
const CORTEX_A76: &[(&str, u16)] = &[
    ("L2D_CACHE_ALLOCATE", 0x20),
    ("BR_RETIRED", 0x21),
    ("BR_MIS_PRED_RETIRED", 0x22),
    ("STALL_FRONTEND", 0x23),
    ("STALL_BACKEND", 0x24),
    ("L1D_TLB", 0x25),
    ("L1I_TLB", 0x26),
    ("L3D_CACHE_ALLOCATE", 0x29),
    ("L3D_CACHE_REFILL", 0x2A),
    ("L3D_CACHE", 0x2B),
    ("L2D_TLB_REFILL", 0x2D),
    ("L2D_TLB", 0x2F),
    ("REMOTE_ACCESS", 0x31),
    ("DTLB_WALK", 0x34),
    ("ITLB_WALK", 0x35),
    ("LL_CACHE_RD", 0x36),
    ("LL_CACHE_MISS_RD", 0x37),
    ("L1D_CACHE_REFILL_INNER", 0x44),
    ("L1D_CACHE_REFILL_OUTER", 0x45),
    ("L1D_TLB_RD", 0x4E),
    ("L1D_TLB_WR", 0x4F),
    ("L2D_TLB_REFILL_RD", 0x5C),
    ("L2D_TLB_REFILL_WR", 0x5D),
    ("L2D_TLB_RD", 0x5E),
    ("L2D_TLB_WR", 0x5F),
    ("STREX_SPEC", 0x6F),
    ("L3_CACHE_RD", 0xA0),
];

// `PMC_CPU_ARMV8_CORTEX_A57` and `_A76` (sys/sys/pmc.h `__PMC_CPUS()`).
const PMC_CPU_ARMV8_CORTEX_A57: u32 = 0x601;
const PMC_CPU_ARMV8_CORTEX_A76: u32 = 0x602;

/// The raw events: `__PMC_EV_ARMV8()` runs from `EVENT_00H` to `EVENT_3FFH`.
pub const RAW_EVENTS: u16 = 0x400;

/// The aliases of the table `pm_cputype` selects, in libpmc's order.
pub fn aliases(cputype: u32) -> impl Iterator<Item = (&'static str, u16)> {
    let own: [&[(&str, u16)]; 2] = match cputype {
        PMC_CPU_ARMV8_CORTEX_A57 => [CORTEX_A57_A76, CORTEX_A57],
        PMC_CPU_ARMV8_CORTEX_A76 => [CORTEX_A57_A76, CORTEX_A76],
        _ => [CORTEX_A53, &[]],
    };
    COMMON.iter().chain(own.into_iter().flatten()).copied()
}

/// The name of raw event `code` (`EVENT_08H`, `EVENT_3FFH`): pmc_events.h's
/// symbol, two hex digits at least, upper case.
pub fn raw_name(code: u16) -> String {
    format!("EVENT_{code:02X}H")
}

/// `pmc_event_names_of_class(PMC_CLASS_ARMV8)` for `pm_cputype`: the
/// table's aliases, then every raw event.
pub fn event_names(cputype: u32) -> Vec<String> {
    aliases(cputype)
        .map(|(n, _)| n.to_string())
        .chain((0..RAW_EVENTS).map(raw_name))
        .collect()
}

/// The event number `name` has in the table of `cputype`, matched as
/// libpmc's `pmc_match_event_name` matches (case aside, space, `_`, `-`
/// and `.` alike); `None` for a name the table lacks.
pub fn event_number(name: &str, cputype: u32) -> Option<u16> {
    let wanted = normalize(name);
    if let Some((_, code)) = aliases(cputype).find(|(n, _)| normalize(n) == wanted) {
        return Some(code);
    }
    let hex = wanted.strip_prefix("event-")?.strip_suffix('h')?;
    // pmc_events.h spells each number once: two digits up to FFH, three
    // above; `EVENT_8H` or `EVENT_008H` are no names of its.
    let code = u16::from_str_radix(hex, 16).ok()?;
    (code < RAW_EVENTS && normalize(&raw_name(code)) == wanted).then_some(code)
}

#[cfg(test)]
mod tests {
    use super::*;

    const A53: u32 = 0x600;

    /// The sizes of FreeBSD's tables (sys/dev/hwpmc/pmc_events.h,
    /// PMC_VERSION 0x0A000000): 28 common aliases, A53 6 more, A57/A76 52
    /// more, then A57 4 and A76 27 of their own; 1024 raw events.
    #[test]
    fn each_cpu_type_has_freebsds_table() {
        for (cputype, aliases) in [(A53, 34), (0x601, 84), (0x602, 107), (0x400, 34)] {
            let names = event_names(cputype);
            assert_eq!(names.len(), aliases + 1024, "{cputype:#x}");
            assert_eq!(names[0], "SW_INCR");
            assert!(!names[aliases - 1].starts_with("EVENT_"));
            assert_eq!(names[aliases], "EVENT_00H");
            assert_eq!(names[aliases + 0xFF], "EVENT_FFH");
            assert_eq!(names[aliases + 0x100], "EVENT_100H");
            assert_eq!(names.last().map(String::as_str), Some("EVENT_3FFH"));
        }
        assert_eq!(event_names(A53)[33], "UNALIGNED_LDST_RETIRED");
        assert_eq!(event_names(0x601)[83], "BUS_ACCESS_PERIPH");
        assert_eq!(event_names(0x602)[106], "L3_CACHE_RD");
    }

    /// Aliases map to the raw event pmc_events.h gives them, in their own
    /// table only, matched as libpmc matches.
    #[test]
    fn names_map_to_event_numbers_as_libpmc_matches_them() {
        assert_eq!(event_number("INST_RETIRED", A53), Some(0x08));
        assert_eq!(event_number("inst-retired", 0x602), Some(0x08));
        assert_eq!(event_number("Cpu.Cycles", 0x601), Some(0x11));
        assert_eq!(event_number("LD_RETIRED", A53), Some(0x06));
        assert_eq!(event_number("LD_RETIRED", 0x601), None);
        assert_eq!(event_number("STALL_FRONTEND", 0x602), Some(0x23));
        assert_eq!(event_number("STALL_FRONTEND", 0x601), None);
        assert_eq!(event_number("BUS_ACCESS_SHARED", 0x601), Some(0x62));
        assert_eq!(event_number("BUS_ACCESS_SHARED", 0x602), None);
        assert_eq!(event_number("EVENT_08H", A53), Some(0x08));
        assert_eq!(event_number("event_2a0h", A53), Some(0x2A0));
        assert_eq!(event_number("EVENT_3FFH", A53), Some(0x3FF));
        for bad in [
            "EVENT_400H",
            "EVENT_8H",
            "EVENT_008H",
            "EVENT_08",
            "EVENT_XYH",
            "cycles",
        ] {
            assert_eq!(event_number(bad, A53), None, "{bad}");
        }
    }

    /// Every alias names a distinct event within its table.
    #[test]
    fn no_table_names_an_event_twice() {
        for cputype in [A53, 0x601, 0x602] {
            let mut names: Vec<&str> = aliases(cputype).map(|(n, _)| n).collect();
            let n = names.len();
            names.sort_unstable();
            names.dedup();
            assert_eq!(names.len(), n, "{cputype:#x}");
        }
    }
}
