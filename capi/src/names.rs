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

/// `pmc_name_of_disposition`
pub fn disposition(d: u32) -> CResult<&'static CStr> {
    const NAMES: [&CStr; 4] = [c"STANDALONE", c"FREE", c"THREAD", c"UNKNOWN"];
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

/// `pmc_name_of_event`: events here are specifier strings, not numbers
/// from FreeBSD's static table, so no number has a name.
pub fn event(e: u32) -> CResult<&'static CStr> {
    Err(Failure::new(
        libc::EINVAL,
        format!(
            "pmc_name_of_event: event number {e} is unknown (EINVAL): events are named by \
             specifier strings on Linux; use pmc_event_names_of_class() for the names"
        ),
    ))
}
