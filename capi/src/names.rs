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

/// `pmc_name_of_class`
pub fn class(c: u32) -> CResult<&'static CStr> {
    Ok(match c {
        0x00 => c"TSC",
        0x01 => c"K7",
        0x02 => c"K8",
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

/// `pmc_name_of_cputype`
pub fn cputype(c: u32) -> CResult<&'static CStr> {
    Ok(match c {
        0x00 => c"AMD_K7",
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

/// FreeBSD's `enum pmc_event` (`include/pmc_events.h`, generated from
/// FreeBSD's `sys/dev/hwpmc/pmc_events.h` by `cargo xtask gen-pmc-events`):
/// `(value, "CLASS_NAME")` in the header's order.
pub fn freebsd_events() -> &'static [(u32, &'static str)] {
    static TABLE: std::sync::OnceLock<Vec<(u32, &'static str)>> = std::sync::OnceLock::new();
    TABLE.get_or_init(|| {
        include_str!("../include/pmc_events.h")
            .lines()
            .filter_map(|l| {
                let (name, value) = l.trim().strip_prefix("PMC_EV_")?.split_once(" = ")?;
                let value = value.trim_end_matches(',').strip_prefix("0x")?;
                if name.ends_with("__BLOCK_START") {
                    return None;
                }
                Some((u32::from_str_radix(value, 16).ok()?, name))
            })
            .collect()
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
    ("K7_RETIRED_INSTRUCTIONS", "instructions"),
    ("K7_RETIRED_BRANCHES", "branches"),
    ("K7_RETIRED_BRANCHES_MISPREDICTED", "branch-misses"),
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
    ("MIPS24K_CYCLE", "cycles"),
    ("MIPS24K_INSTR_EXECUTED", "instructions"),
    ("MIPS74K_CYCLES", "cycles"),
    ("MIPS74K_INSTR_EXECUTED", "instructions"),
    ("OCTEON_CLK", "cycles"),
    ("OCTEON_RET", "instructions"),
    ("BERI_CYCLE", "cycles"),
    ("BERI_INST", "instructions"),
    ("PPC7450_CYCLE", "cycles"),
    ("PPC7450_INSTR_COMPLETED", "instructions"),
    ("PPC970_CYCLES", "cycles"),
    ("PPC970_INSTR_COMPLETED", "instructions"),
    ("POWER8_CYCLES", "cycles"),
    ("POWER8_INSTR_COMPLETED", "instructions"),
    ("E500_CYCLES", "cycles"),
    ("E500_INSTR_COMPLETED", "instructions"),
];

/// `pmc_name_of_event`: the name `pmc_allocate` takes for FreeBSD's event
/// number `e`, where one of ours counts the same event. A number FreeBSD
/// has but we do not count, and one FreeBSD does not have (software
/// events are numbered by the running kernel), are EINVAL.
pub fn event(e: u32) -> CResult<&'static CStr> {
    let fail = |why: String| Failure::new(libc::EINVAL, format!("pmc_name_of_event: {why}"));
    let Some(&(_, freebsd)) = freebsd_events().iter().find(|(v, _)| *v == e) else {
        return Err(fail(format!(
            "{e:#x} is not a FreeBSD event number (EINVAL); FreeBSD numbers its software events \
             at run time, so none of those has a fixed number either"
        )));
    };
    EQUIVALENTS
        .iter()
        .find(|(f, _)| *f == freebsd)
        .map(|(_, ours)| intern_static(ours))
        .ok_or_else(|| {
            fail(format!(
                "PMC_EV_{freebsd} ({e:#x}) has no equivalent here (EINVAL); \
                 pmc_event_names_of_class() lists the events this machine counts"
            ))
        })
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
        .find(|(_, n)| n == freebsd)
        .map(|(v, _)| *v)
}

fn intern_static(s: &'static str) -> &'static CStr {
    static NAMES: std::sync::OnceLock<Vec<(&'static str, std::ffi::CString)>> =
        std::sync::OnceLock::new();
    let names = NAMES.get_or_init(|| {
        EQUIVALENTS
            .iter()
            .map(|(_, o)| (*o, std::ffi::CString::new(*o).unwrap_or_default()))
            .collect()
    });
    names
        .iter()
        .find(|(n, _)| *n == s)
        // The CStrings live in a static for the life of the process.
        .map(|(_, c)| c.as_c_str())
        .unwrap_or(c"")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `enum NAME`'s `PREFIX<name> = value` entries in include/pmc.h, the
    /// header C programs compile against (FreeBSD's sys/sys/pmc.h).
    fn header_enum(name: &str, prefix: &str) -> Vec<(u32, String)> {
        let header = include_str!("../include/pmc.h");
        let body = header
            .split_once(&format!("enum {name} {{"))
            .and_then(|(_, rest)| rest.split_once("};"))
            .map(|(body, _)| body)
            .unwrap_or_else(|| panic!("enum {name} in include/pmc.h"));
        body.lines()
            .filter_map(|line| {
                let (symbol, value) = line.trim().trim_end_matches(',').split_once('=')?;
                let symbol = symbol.trim().strip_prefix(prefix)?.to_string();
                let value = u32::from_str_radix(value.trim().trim_start_matches("0x"), 16).ok()?;
                Some((value, symbol))
            })
            .collect()
    }

    /// Every `PMC_CPU_*` and `PMC_CLASS_*` of the header is named by
    /// `pmc_name_of_cputype`/`pmc_name_of_class` as its symbol without the
    /// prefix, as libpmc.c's name tables (`#S`) do; sys/pmc.h has, e.g.,
    /// `__PMC_CPU(INTEL_BROADWELL_XEON, 0x97, …)`, `PPC_7450, 0x300`,
    /// `ARMV7_CORTEX_A17, 0x505` and `__PMC_CLASS(ARMV7, 0x10, …)`.
    #[test]
    fn every_cputype_and_class_of_the_header_has_its_name() {
        let cpus = header_enum("pmc_cputype", "PMC_CPU_");
        assert!(cpus.len() >= 40, "{} cputypes in the header", cpus.len());
        for (value, name) in &cpus {
            assert_eq!(
                cputype(*value).unwrap().to_str().unwrap(),
                name,
                "{value:#x}"
            );
        }
        let classes = header_enum("pmc_class", "PMC_CLASS_");
        assert!(
            classes.len() >= 18,
            "{} classes in the header",
            classes.len()
        );
        for (value, name) in &classes {
            assert_eq!(class(*value).unwrap().to_str().unwrap(), name, "{value:#x}");
        }
        assert_eq!(class(0x10).unwrap(), c"ARMV7");
        assert_eq!(class(0x01).unwrap(), c"K7");
        for (value, name) in [
            (0x97, "INTEL_BROADWELL_XEON"),
            (0x300, "PPC_7450"),
            (0x505, "ARMV7_CORTEX_A17"),
            (0x8D, "INTEL_SANDYBRIDGE"),
        ] {
            assert_eq!(cputype(value).unwrap().to_str().unwrap(), name);
        }
    }

    // Values as sys/sys/pmc.h computes them from the blocks of
    // dev/hwpmc/pmc_events.h __PMC_EVENTS(): TSC 0x1000, K7 0x2000,
    // K8 0x2080, IAF 0x10000, ARMV8 0x14100, each event one more than the
    // one before it in its class macro.
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

    #[test]
    fn freebsd_numbers_follow_the_blocks() {
        let num = |n: &str| {
            freebsd_events()
                .iter()
                .find(|(_, x)| *x == n)
                .map(|(v, _)| *v)
        };
        assert_eq!(num("TSC_TSC"), Some(0x1000));
        assert_eq!(num("K7_DC_ACCESSES"), Some(0x2000));
        // HARDWARE_INTERRUPTS is the 23rd K7 event.
        assert_eq!(num("K7_HARDWARE_INTERRUPTS"), Some(0x2000 + 22));
        assert_eq!(num("K8_FP_DISPATCHED_FPU_OPS"), Some(0x2080));
        assert_eq!(num("IAF_CPU_CLK_UNHALTED_REF"), Some(0x10002));
        assert_eq!(num("ARMV8_EVENT_11H"), Some(0x14100 + 0x11));
        assert_eq!(num("ARMV7_EVENT_FFH"), Some(0x14000 + 0xFF));
        assert_eq!(num("UCP_EVENT_0CH_04H_E"), Some(0x12080));
    }

    #[test]
    fn every_equivalent_names_a_freebsd_event_and_a_name_we_parse() {
        for (freebsd, ours) in EQUIVALENTS {
            assert!(
                freebsd_events().iter().any(|(_, n)| n == freebsd),
                "{freebsd} is not in pmc_events.h"
            );
            assert!(pmc_core::spec::parse(ours).is_ok(), "{ours} does not parse");
        }
    }

    #[test]
    fn name_of_event_maps_known_numbers_and_refuses_the_rest() {
        assert_eq!(event(0x10000).unwrap(), c"instructions");
        assert_eq!(event(0x1000).unwrap(), c"tsc");
        assert_eq!(event(0x14111).unwrap(), c"cycles");
        // K7_DC_ACCESSES exists in FreeBSD, has no equivalent here.
        let e = event(0x2000).unwrap_err();
        assert_eq!(e.errno, libc::EINVAL);
        assert!(e.message.contains("PMC_EV_K7_DC_ACCESSES"), "{}", e.message);
        // 0 and the software range are not FreeBSD numbers.
        assert_eq!(event(0).unwrap_err().errno, libc::EINVAL);
        assert_eq!(event(0x20000).unwrap_err().errno, libc::EINVAL);
    }

    #[test]
    fn event_number_is_the_inverse_within_a_class() {
        assert_eq!(event_number("K8", "instructions"), Some(0x2080 + 38));
        assert_eq!(event_number("IAF", "cycles"), Some(0x10001));
        assert_eq!(event_number("K8", "task-clock"), None);
        for class in ["K8", "IAF", "ARMV8"] {
            let n = event_number(class, "instructions").unwrap();
            assert_eq!(event(n).unwrap(), c"instructions");
        }
    }
}
