//! `pmc_name_of_*`: the symbolic names libpmc returns. libpmc builds its
//! tables from the `__PMC_*()` lists of FreeBSD's `sys/sys/pmc.h` with
//! `#N`, so each name is the enum member without its prefix (libpmc.c
//! `pmc_capability_names`, `pmc_class_names`, `pmc_cputype_names`,
//! `pmc_disposition_names`, `pmc_mode_names`, `pmc_state_names`).

use std::ffi::CStr;

use crate::{CResult, Failure};

fn invalid(what: &str, v: i64) -> Failure {
    Failure::new(
        libc::EINVAL,
        format!("pmc_name_of_{what}: {v} is not a valid value (EINVAL)"),
    )
}

/// `pmc_name_of_capability`: one bit of `enum pmc_caps`.
pub fn capability(c: u32) -> CResult<&'static CStr> {
    const NAMES: [&CStr; 14] = [
        c"INTERRUPT",
        c"USER",
        c"SYSTEM",
        c"EDGE",
        c"THRESHOLD",
        c"READ",
        c"WRITE",
        c"INVERT",
        c"QUALIFIER",
        c"PRECISE",
        c"TAGGING",
        c"CASCADE",
        c"SYSWIDE",
        c"DOMWIDE",
    ];
    // libpmc: a single bit within PMC_CAP_FIRST..=PMC_CAP_LAST.
    if c.count_ones() != 1 || c.trailing_zeros() as usize >= NAMES.len() {
        return Err(invalid("capability", i64::from(c)));
    }
    Ok(NAMES[c.trailing_zeros() as usize])
}

/// `pmc_name_of_class`: the classes of `__PMC_CLASSES()` (K7, 0x01, is
/// gone from the 0x0A000000 tree, so EINVAL as libpmc.c's table lookup).
pub fn class(c: u32) -> CResult<&'static CStr> {
    Ok(match c {
        0x00 => c"TSC",
        0x02 => c"K8",
        0x03 => c"IBS",
        0x06 => c"IAF",
        0x07 => c"IAP",
        0x08 => c"UCF",
        0x09 => c"UCP",
        0x0A => c"XSCALE",
        0x0D => c"PPC7450",
        0x0E => c"PPC970",
        0x0F => c"SOFT",
        0x10 => c"ARMV7",
        0x11 => c"ARMV8",
        0x13 => c"E500",
        0x15 => c"POWER8",
        0x16 => c"DMC620_PMU_CD2",
        0x17 => c"DMC620_PMU_C",
        0x18 => c"CMN600_PMU",
        _ => return Err(invalid("class", i64::from(c))),
    })
}

/// `pmc_name_of_cputype`: the CPUs of `__PMC_CPUS()` (AMD_K7, 0x00, is
/// gone from the 0x0A000000 tree, so EINVAL).
pub fn cputype(c: u32) -> CResult<&'static CStr> {
    Ok(match c {
        0x01 => c"AMD_K8",
        0x87 => c"INTEL_CORE",
        0x88 => c"INTEL_CORE2",
        0x89 => c"INTEL_CORE2EXTREME",
        0x8A => c"INTEL_ATOM",
        0x8B => c"INTEL_COREI7",
        0x8C => c"INTEL_WESTMERE",
        0x8D => c"INTEL_SANDYBRIDGE",
        0x8E => c"INTEL_IVYBRIDGE",
        0x8F => c"INTEL_SANDYBRIDGE_XEON",
        0x90 => c"INTEL_IVYBRIDGE_XEON",
        0x91 => c"INTEL_HASWELL",
        0x92 => c"INTEL_ATOM_SILVERMONT",
        0x93 => c"INTEL_NEHALEM_EX",
        0x94 => c"INTEL_WESTMERE_EX",
        0x95 => c"INTEL_HASWELL_XEON",
        0x96 => c"INTEL_BROADWELL",
        0x97 => c"INTEL_BROADWELL_XEON",
        0x98 => c"INTEL_SKYLAKE",
        0x99 => c"INTEL_SKYLAKE_XEON",
        0x9A => c"INTEL_ATOM_GOLDMONT",
        0x9B => c"INTEL_ICELAKE",
        0x9C => c"INTEL_ICELAKE_XEON",
        0x9D => c"INTEL_ALDERLAKE",
        0x9E => c"INTEL_ATOM_GOLDMONT_P",
        0x9F => c"INTEL_ATOM_TREMONT",
        0xA0 => c"INTEL_EMERALD_RAPIDS",
        0xA1 => c"INTEL_ALDERLAKEN",
        0xA2 => c"INTEL_GRANITE_RAPIDS",
        0x100 => c"INTEL_XSCALE",
        0x300 => c"PPC_7450",
        0x340 => c"PPC_E500",
        0x380 => c"PPC_970",
        0x390 => c"PPC_POWER8",
        0x400 => c"GENERIC",
        0x500 => c"ARMV7_CORTEX_A5",
        0x501 => c"ARMV7_CORTEX_A7",
        0x502 => c"ARMV7_CORTEX_A8",
        0x503 => c"ARMV7_CORTEX_A9",
        0x504 => c"ARMV7_CORTEX_A15",
        0x505 => c"ARMV7_CORTEX_A17",
        0x600 => c"ARMV8_CORTEX_A53",
        0x601 => c"ARMV8_CORTEX_A57",
        0x602 => c"ARMV8_CORTEX_A76",
        _ => return Err(invalid("cputype", i64::from(c))),
    })
}

/// `pmc_name_of_disposition` (PMC_DISP_FIRST..=PMC_DISP_LAST: the UNKNOWN
/// sentinel after THREAD is EINVAL, as in libpmc).
pub fn disposition(d: u32) -> CResult<&'static CStr> {
    const NAMES: [&CStr; 3] = [c"STANDALONE", c"FREE", c"THREAD"];
    NAMES
        .get(d as usize)
        .copied()
        .ok_or_else(|| invalid("disposition", i64::from(d)))
}

/// `pmc_name_of_mode`
pub fn mode(m: u32) -> CResult<&'static CStr> {
    const NAMES: [&CStr; 4] = [c"SS", c"SC", c"TS", c"TC"];
    NAMES
        .get(m as usize)
        .copied()
        .ok_or_else(|| invalid("mode", i64::from(m)))
}

/// `pmc_name_of_state` (PMC_STATE_FIRST..=PMC_STATE_LAST).
pub fn state(s: u32) -> CResult<&'static CStr> {
    const NAMES: [&CStr; 6] = [
        c"DISABLED",
        c"FREE",
        c"ALLOCATED",
        c"STOPPED",
        c"RUNNING",
        c"DELETED",
    ];
    NAMES
        .get(s as usize)
        .copied()
        .ok_or_else(|| invalid("state", i64::from(s)))
}

/// FreeBSD's `enum pmc_event` as `include/pmc.h` builds it from
/// `include/pmc_events.h` (generated from FreeBSD's
/// `sys/dev/hwpmc/pmc_events.h` by `cargo xtask gen-pmc-events`):
/// `(value, "CLASS_NAME", "NAME")` in the header's order. The values are
/// computed as the C compiler does: each class's `__PMC_EV(C, N)` lines
/// take consecutive values from its `__PMC_EV_BLOCK(C, V)`.
pub fn freebsd_events() -> &'static [(u32, &'static str, &'static str)] {
    static TABLE: std::sync::OnceLock<Vec<(u32, &'static str, &'static str)>> =
        std::sync::OnceLock::new();
    TABLE.get_or_init(|| {
        let header = include_str!("../include/pmc_events.h");
        let args = |l: &'static str, call: &str| -> Option<(&'static str, &'static str)> {
            let inner = l.trim().strip_prefix(call)?.strip_prefix('(')?;
            let (a, b) = inner.split_once(')')?.0.split_once(',')?;
            Some((a.trim(), b.trim()))
        };
        let mut next: std::collections::HashMap<&str, u32> = header
            .lines()
            .filter_map(|l| args(l, "__PMC_EV_BLOCK"))
            .filter_map(|(c, v)| Some((c, u32::from_str_radix(v.strip_prefix("0x")?, 16).ok()?)))
            .collect();
        let mut out = Vec::new();
        for (class, name) in header.lines().filter_map(|l| args(l, "__PMC_EV")) {
            if let Some(v) = next.get_mut(class) {
                out.push((*v, class, name));
                *v += 1;
            }
        }
        out
    })
}

/// The FreeBSD events that count what one of our names counts, as
/// `("CLASS_NAME", our specifier)`: the architectural cycle, instruction,
/// branch and cache events each class has, and the TSC. ARM's follow the
/// kernel's generic-event maps (arm_pmuv3.c, perf_event_v7.c).
const EQUIVALENTS: &[(&str, &str)] = &[
    ("TSC_TSC", "tsc"),
    ("IAF_INSTR_RETIRED_ANY", "instructions"),
    ("IAF_CPU_CLK_UNHALTED_CORE", "cycles"),
    ("IAF_CPU_CLK_UNHALTED_REF", "ref-cycles"),
    ("K8_BU_CPU_CLK_UNHALTED", "cycles"),
    ("K8_FR_RETIRED_X86_INSTRUCTIONS", "instructions"),
    ("K8_FR_RETIRED_BRANCHES", "branches"),
    ("K8_FR_RETIRED_BRANCHES_MISPREDICTED", "branch-misses"),
    ("ARMV7_EVENT_08H", "instructions"),
    ("ARMV7_EVENT_0CH", "branches"),
    ("ARMV7_EVENT_10H", "branch-misses"),
    ("ARMV7_EVENT_FFH", "cycles"),
    ("ARMV8_EVENT_03H", "cache-misses"),
    ("ARMV8_EVENT_04H", "cache-references"),
    ("ARMV8_EVENT_08H", "instructions"),
    ("ARMV8_EVENT_0CH", "branches"),
    ("ARMV8_EVENT_10H", "branch-misses"),
    ("ARMV8_EVENT_11H", "cycles"),
    ("ARMV8_EVENT_1DH", "bus-cycles"),
    ("PPC7450_CYCLE", "cycles"),
    ("PPC7450_INSTR_COMPLETED", "instructions"),
    ("PPC970_CYCLES", "cycles"),
    ("PPC970_INSTR_COMPLETED", "instructions"),
    ("E500_CYCLES", "cycles"),
    ("E500_INSTR_COMPLETED", "instructions"),
];

/// Whether `full` (`"K8_FR_RETIRED_BRANCHES"`) is `class`'s event `name`.
fn is_event(full: &str, class: &str, name: &str) -> bool {
    full.strip_prefix(class)
        .and_then(|r| r.strip_prefix('_'))
        .is_some_and(|r| r == name)
}

/// `pmc_name_of_event`: the name of FreeBSD's event number `e` in its
/// class, as libpmc.c's event tables (`{ #N, PMC_EV_C_N }`) give it: the
/// symbol after `PMC_EV_<class>_` (`FR_RETIRED_X86_INSTRUCTIONS`,
/// `EVENT_11H`, `clkdiv2_cycle_count`). `pmc_allocate` takes the name of
/// an event that one of ours counts ([`spec_of_freebsd_name`]). A number
/// that is no enumerator of `__PMC_EVENTS()` is EINVAL (software events
/// are numbered by the running kernel).
pub fn event(e: u32) -> CResult<&'static CStr> {
    static NAMES: std::sync::OnceLock<Vec<(u32, std::ffi::CString)>> = std::sync::OnceLock::new();
    let names = NAMES.get_or_init(|| {
        freebsd_events()
            .iter()
            .map(|(v, _, n)| (*v, std::ffi::CString::new(*n).unwrap_or_default()))
            .collect()
    });
    names
        .iter()
        .find(|(v, _)| *v == e)
        // The CStrings live in a static for the life of the process.
        .map(|(_, n)| n.as_c_str())
        .ok_or_else(|| {
            Failure::new(
                libc::EINVAL,
                format!(
                    "pmc_name_of_event: {e:#x} is not a FreeBSD event number (EINVAL); FreeBSD \
                     numbers its software events at run time, so none of those has a fixed \
                     number either"
                ),
            )
        })
}

/// The specifier `pmc_allocate` counts for a spec naming a FreeBSD event
/// by its static name (what `pmc_name_of_event` returns; libpmc.c matches
/// it without regard to case), qualifiers after a comma kept, where one of
/// ours counts the same event: `INSTR_RETIRED_ANY,usr` is
/// `instructions,usr`. Other specs are None.
pub fn spec_of_freebsd_name(spec: &str) -> Option<String> {
    let (first, rest) = spec.split_at(spec.find(',').unwrap_or(spec.len()));
    let (_, ours) = EQUIVALENTS.iter().find(|(freebsd, _)| {
        freebsd_events()
            .iter()
            .any(|(_, c, n)| is_event(freebsd, c, n) && n.eq_ignore_ascii_case(first))
    })?;
    Some(format!("{ours}{rest}"))
}

/// The number FreeBSD gives `name` in `class` (`K8`, `IAF`, `ARMV8`, …),
/// where `name` is one of [`EQUIVALENTS`]' specifiers: `pm_event` of a
/// `pmc_pmcinfo` row.
pub fn event_number(class: &str, name: &str) -> Option<u32> {
    let (freebsd, _) = EQUIVALENTS.iter().find(|(f, ours)| {
        *ours == name && f.strip_prefix(class).is_some_and(|r| r.starts_with('_'))
    })?;
    freebsd_events()
        .iter()
        .find(|(_, c, n)| is_event(freebsd, c, n))
        .map(|(v, _, _)| *v)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `MACRO(SYMBOL, value, "description")` lines of include/pmc.h's
    /// `__PMC_CPUS()`/`__PMC_CLASSES()`, the lists C programs expand.
    fn header_list(call: &str) -> Vec<(u32, String)> {
        include_str!("../include/pmc.h")
            .lines()
            .filter_map(|line| {
                let inner = line.trim().strip_prefix(call)?.strip_prefix('(')?;
                let mut parts = inner.splitn(3, ',');
                let symbol = parts.next()?.trim().to_string();
                let value = parts.next()?.trim().strip_prefix("0x")?;
                Some((u32::from_str_radix(value, 16).ok()?, symbol))
            })
            .collect()
    }

    /// Every `__PMC_CPU` and `__PMC_CLASS` of the header is named by
    /// `pmc_name_of_cputype`/`pmc_name_of_class` as its symbol (libpmc.c's
    /// tables, `#S`), and the values between are EINVAL.
    #[test]
    fn every_cputype_and_class_of_the_header_has_its_name() {
        let cpus = header_list("__PMC_CPU");
        assert_eq!(cpus.len(), 44, "{cpus:?}");
        for v in 0..0x700 {
            match cpus.iter().find(|(value, _)| *value == v) {
                Some((_, name)) => assert_eq!(cputype(v).unwrap().to_str().unwrap(), name),
                None => assert_eq!(cputype(v).unwrap_err().errno, libc::EINVAL, "{v:#x}"),
            }
        }
        let classes = header_list("__PMC_CLASS");
        assert_eq!(classes.len(), 18, "{classes:?}");
        for v in 0..0x40 {
            match classes.iter().find(|(value, _)| *value == v) {
                Some((_, name)) => assert_eq!(class(v).unwrap().to_str().unwrap(), name),
                None => assert_eq!(class(v).unwrap_err().errno, libc::EINVAL, "{v:#x}"),
            }
        }
    }

    /// sys/sys/pmc.h (PMC_VERSION 0x0A000000) __PMC_CPUS() starts at
    /// AMD_K8 (PMC_CPU_FIRST): AMD_K7 (0x00) and PMC_CLASS_K7 (0x01) are
    /// gone, so libpmc.c's lookups fail with EINVAL; INTEL_ALDERLAKEN is
    /// 0xA1 and __PMC_CLASSES() has IBS at 0x03, CMN600_PMU at 0x18.
    #[test]
    fn k7_is_gone_and_the_added_entries_are_named() {
        assert_eq!(cputype(0x00).unwrap_err().errno, libc::EINVAL);
        assert_eq!(class(0x01).unwrap_err().errno, libc::EINVAL);
        assert_eq!(cputype(0x01).unwrap(), c"AMD_K8");
        assert_eq!(cputype(0xA0).unwrap(), c"INTEL_EMERALD_RAPIDS");
        assert_eq!(cputype(0xA1).unwrap(), c"INTEL_ALDERLAKEN");
        assert_eq!(cputype(0xA2).unwrap(), c"INTEL_GRANITE_RAPIDS");
        assert_eq!(class(0x03).unwrap(), c"IBS");
        assert_eq!(class(0x18).unwrap(), c"CMN600_PMU");
    }

    // libpmc.c pmc_name_of_disposition: a name only within
    // PMC_DISP_FIRST..=PMC_DISP_LAST, EINVAL (NULL) otherwise; sys/pmc.h
    // has PMC_DISP_LAST PMC_DISP_THREAD, so the UNKNOWN sentinel (3) after
    // it has no name.
    #[test]
    fn name_of_disposition_stops_at_thread_and_unknown_is_einval() {
        assert_eq!(disposition(0).unwrap(), c"STANDALONE");
        assert_eq!(disposition(1).unwrap(), c"FREE");
        assert_eq!(disposition(2).unwrap(), c"THREAD");
        for unnamed in [3, 4, u32::MAX] {
            let e = disposition(unnamed).unwrap_err();
            assert_eq!(e.errno, libc::EINVAL, "disposition {unnamed}");
        }
    }

    fn num(class: &str, name: &str) -> Option<u32> {
        freebsd_events()
            .iter()
            .find(|(_, c, n)| *c == class && *n == name)
            .map(|(v, _, _)| *v)
    }

    /// The first and last event of every block of __PMC_EVENTS() in
    /// FreeBSD's sys/dev/hwpmc/pmc_events.h (PMC_VERSION 0x0A000000 tree):
    /// the block values of __PMC_EVENTS() and the PMC_EV_<class>_FIRST /
    /// _LAST macros, the count of each class macro's __PMC_EV lines.
    pub(crate) const BLOCKS: &[(&str, &str, u32, &str, u32)] = &[
        ("TSC", "TSC", 0x1000, "TSC", 0x1000),
        (
            "K8",
            "FP_DISPATCHED_FPU_OPS",
            0x2080,
            "NB_HT_BUS2_BANDWIDTH",
            0x2080 + 79,
        ),
        (
            "IAF",
            "INSTR_RETIRED_ANY",
            0x10000,
            "CPU_CLK_UNHALTED_REF",
            0x10002,
        ),
        (
            "PPC7450",
            "CYCLE",
            0x13000,
            "PREFETCH_ENGINE_FULL",
            0x13000 + 219,
        ),
        ("PPC970", "INSTR_COMPLETED", 0x13100, "ADDER", 0x13100 + 49),
        ("E500", "CYCLES", 0x13300, "STWCX_FAILURES", 0x13300 + 156),
        ("ARMV7", "EVENT_00H", 0x14000, "EVENT_FFH", 0x140FF),
        ("ARMV8", "EVENT_00H", 0x14100, "EVENT_3FFH", 0x144FF),
        (
            "DMC620_PMU_CD2",
            "clkdiv2_cycle_count",
            0x14500,
            "clkdiv2_ranks_in_sref",
            0x14519,
        ),
        (
            "DMC620_PMU_C",
            "clk_cycle_count",
            0x14520,
            "clk_upload_stall",
            0x14522,
        ),
        (
            "CMN600_PMU",
            "dn_rxreq_dvmop",
            0x14600,
            "cxla_avg_latency_form_tx_tlp",
            0x14600 + 176,
        ),
    ];

    #[test]
    fn freebsd_numbers_follow_the_blocks() {
        for &(class, first, fv, last, lv) in BLOCKS {
            assert_eq!(num(class, first), Some(fv), "{class}_{first}");
            assert_eq!(num(class, last), Some(lv), "{class}_{last}");
            // Nothing of the class beyond its first and last.
            let n = freebsd_events()
                .iter()
                .filter(|(_, c, _)| *c == class)
                .count();
            assert_eq!(n as u32, lv - fv + 1, "{class}");
        }
        // Every event is in a block above, no other class is left (K7,
        // MIPS24K, OCTEON, MIPS74K, BERI, UCP and POWER8 are gone).
        let listed: usize = BLOCKS.iter().map(|b| (b.4 - b.2 + 1) as usize).sum();
        assert_eq!(freebsd_events().len(), listed);
        for gone in [
            "K7", "MIPS24K", "OCTEON", "MIPS74K", "BERI", "UCP", "POWER8",
        ] {
            assert!(
                !freebsd_events().iter().any(|(_, c, _)| *c == gone),
                "{gone}"
            );
        }
    }

    #[test]
    fn every_equivalent_names_a_freebsd_event_and_a_name_we_parse() {
        for (freebsd, ours) in EQUIVALENTS {
            assert!(
                freebsd_events()
                    .iter()
                    .any(|(_, c, n)| is_event(freebsd, c, n)),
                "{freebsd} is not in pmc_events.h"
            );
            assert!(pmc_core::spec::parse(ours).is_ok(), "{ours} does not parse");
        }
    }

    /// libpmc.c _pmc_name_of_event returns the table entry's name, #N of
    /// __PMC_EV(C, N), for each event; NULL/EINVAL for other numbers.
    #[test]
    fn name_of_event_is_the_static_name_of_every_event() {
        for (v, _, n) in freebsd_events() {
            assert_eq!(event(*v).unwrap().to_str().unwrap(), *n, "{v:#x}");
        }
        assert_eq!(event(0x10000).unwrap(), c"INSTR_RETIRED_ANY");
        assert_eq!(event(0x1000).unwrap(), c"TSC");
        assert_eq!(event(0x2080).unwrap(), c"FP_DISPATCHED_FPU_OPS");
        assert_eq!(event(0x14111).unwrap(), c"EVENT_11H");
        assert_eq!(event(0x14600).unwrap(), c"dn_rxreq_dvmop");
        // K7's old numbers, 0 and the software range are not events.
        for none in [0, 0x2000, 0x2016, 0x11300, 0x20000] {
            assert_eq!(event(none).unwrap_err().errno, libc::EINVAL, "{none:#x}");
        }
    }

    #[test]
    fn freebsd_names_map_to_ours_with_their_qualifiers() {
        assert_eq!(
            spec_of_freebsd_name("INSTR_RETIRED_ANY").as_deref(),
            Some("instructions")
        );
        assert_eq!(
            spec_of_freebsd_name("fr_retired_x86_instructions,usr").as_deref(),
            Some("instructions,usr")
        );
        assert_eq!(spec_of_freebsd_name("TSC").as_deref(), Some("tsc"));
        assert_eq!(spec_of_freebsd_name("instructions"), None);
        assert_eq!(spec_of_freebsd_name("FP_DISPATCHED_FPU_OPS"), None);
    }

    #[test]
    fn armv8_raw_names_are_the_headers() {
        // The library's ARMV8 tables (pmc::spec::armv8) end with the raw
        // events, which must be the header's ARMV8 block, in order.
        let header: Vec<&str> = freebsd_events()
            .iter()
            .filter(|(_, c, _)| *c == "ARMV8")
            .map(|(_, _, n)| *n)
            .collect();
        for cputype in [0x600, 0x601, 0x602] {
            let names = pmc_core::spec::armv8::event_names(cputype);
            let raw: Vec<&str> = names[names.len() - header.len()..]
                .iter()
                .map(String::as_str)
                .collect();
            assert_eq!(raw, header, "{cputype:#x}");
        }
    }

    #[test]
    fn event_number_is_the_inverse_within_a_class() {
        assert_eq!(event_number("K8", "instructions"), Some(0x2080 + 38));
        assert_eq!(event_number("IAF", "cycles"), Some(0x10001));
        assert_eq!(event_number("K8", "task-clock"), None);
        for class in ["K8", "IAF", "ARMV8"] {
            let n = event_number(class, "instructions").unwrap();
            let name = event(n).unwrap().to_str().unwrap();
            assert_eq!(spec_of_freebsd_name(name).as_deref(), Some("instructions"));
        }
    }
}
