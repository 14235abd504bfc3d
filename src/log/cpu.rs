//! What INITIALIZE says about the CPU, as hwpmc says it: `pl_cpu` (an
//! `enum pmc_cputype` of `sys/sys/pmc.h`) and `pl_cpuid`
//! (`kern.hwpmc.cpuid`).

/// `PMC_CPU_AMD_K8` (`sys/sys/pmc.h`): hwpmc_amd.c's `pmc_amd_initialize`
/// gives it to every AMD (and Hygon) CPU of base family 0xF, i.e. all of
/// them since the Athlon 64.
pub const PMC_CPU_AMD_K8: u32 = 0x01;
/// `PMC_CPU_GENERIC` ("Generic"), for CPUs hwpmc has no type for.
pub const PMC_CPU_GENERIC: u32 = 0x400;
/// `PMC_CPU_ARMV8_CORTEX_A53`, hwpmc_arm64.c's type for every arm64 CPU
/// it has no other type for.
pub const PMC_CPU_ARMV8_CORTEX_A53: u32 = 0x600;

/// The CPU as INITIALIZE describes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CpuIdentity {
    /// `enum pmc_cputype`.
    pub cputype: u32,
    /// `kern.hwpmc.cpuid`, e.g. `GenuineIntel-6-55-4`.
    pub cpuid: String,
}

/// hwpmc_intel.c `pmc_intel_initialize`: the `enum pmc_cputype` of an
/// Intel family 6 model (values from `sys/sys/pmc.h` `__PMC_CPUS`); model
/// 0xF stepping 7 is a Core, not a Core2 (Intel document 315338-020, as
/// hwpmc_intel.c cites it).
fn intel_cputype(model: u32, stepping: u32) -> Option<u32> {
    Some(match model {
        0x0E => 0x87,                                    // INTEL_CORE
        0x0F if stepping == 7 => 0x87,                   // INTEL_CORE
        0x0F => 0x88,                                    // INTEL_CORE2
        0x17 => 0x89,                                    // INTEL_CORE2EXTREME
        0x1A | 0x1E | 0x1F => 0x8B,                      // INTEL_COREI7
        0x2E => 0x93,                                    // INTEL_NEHALEM_EX
        0x25 | 0x2C => 0x8C,                             // INTEL_WESTMERE
        0x2F => 0x94,                                    // INTEL_WESTMERE_EX
        0x2A => 0x8D,                                    // INTEL_SANDYBRIDGE
        0x2D => 0x8F,                                    // INTEL_SANDYBRIDGE_XEON
        0x3A => 0x8E,                                    // INTEL_IVYBRIDGE
        0x3E => 0x90,                                    // INTEL_IVYBRIDGE_XEON
        0x3D | 0x47 => 0x96,                             // INTEL_BROADWELL
        0x4F | 0x56 => 0x97,                             // INTEL_BROADWELL_XEON
        0x3C | 0x45 => 0x91,                             // INTEL_HASWELL
        0x3F | 0x46 => 0x95,                             // INTEL_HASWELL_XEON
        0x4E | 0x5E | 0x8E | 0x9E | 0xA5 | 0xA6 => 0x98, // INTEL_SKYLAKE
        0x55 => 0x99,                                    // INTEL_SKYLAKE_XEON
        0x7D | 0x7E | 0x8C | 0x8D | 0xA7 => 0x9B,        // INTEL_ICELAKE
        0x6A | 0x6C => 0x9C,                             // INTEL_ICELAKE_XEON
        0x97 | 0x9A => 0x9D,                             // INTEL_ALDERLAKE
        0x1C | 0x26 | 0x27 | 0x35 | 0x36 => 0x8A,        // INTEL_ATOM
        0x37 | 0x4A | 0x4D | 0x5A | 0x5D => 0x92,        // INTEL_ATOM_SILVERMONT
        0x5C | 0x5F => 0x9A,                             // INTEL_ATOM_GOLDMONT
        0x7A => 0x9E,                                    // INTEL_ATOM_GOLDMONT_P
        0x86 | 0x96 => 0x9F,                             // INTEL_ATOM_TREMONT
        _ => return None,
    })
}

/// The `enum pmc_cputype` hwpmc reports for an x86 CPU (`vendor` as in
/// CPUID leaf 0, `family` and `model` with their extended fields, as
/// `/proc/cpuinfo` and FreeBSD's `CPUID_TO_FAMILY`/`CPUID_TO_MODEL` give
/// them; `stepping` tells a Core from a Core2 of model 0xF). CPUs hwpmc
/// does not know (where it would refuse to load) get [`PMC_CPU_GENERIC`],
/// which FreeBSD's tools name "Generic".
pub fn pmc_cputype(vendor: &str, family: u32, model: u32, stepping: u32) -> u32 {
    match vendor {
        "AuthenticAMD" | "HygonGenuine" if family >= 0xF => PMC_CPU_AMD_K8,
        "GenuineIntel" if family == 6 => intel_cputype(model, stepping).unwrap_or(PMC_CPU_GENERIC),
        _ => PMC_CPU_GENERIC,
    }
}

/// `kern.hwpmc.cpuid` of an x86 CPU: hwpmc_intel.c and hwpmc_amd.c format
/// it as `"%s-%d-%02X-%X"` — vendor, family in decimal, model in
/// two-digit upper-case hex, stepping in hex (hwpmc_amd.c names family
/// 0x18 `HygonGenuine`).
pub fn hwpmc_cpuid(vendor: &str, family: u32, model: u32, stepping: u32) -> String {
    format!("{vendor}-{family}-{model:02X}-{stepping:X}")
}

/// The `enum pmc_cputype` hwpmc_arm64.c's `pmc_arm64_initialize` gives
/// an arm64 CPU. It reads PMCR_EL0's implementer and IDCODE, which Linux
/// does not show user space; on Arm's own cores IDCODE names the same
/// core as MIDR_EL1's part number, so the part stands in for it: Cortex-A76
/// and Neoverse-N1 are `PMC_CPU_ARMV8_CORTEX_A76` (0x602), Cortex-A57 and
/// -A72 `PMC_CPU_ARMV8_CORTEX_A57` (0x601), every other CPU (other
/// implementers too) `PMC_CPU_ARMV8_CORTEX_A53` (0x600), hwpmc's default.
/// (QEMU's `-cpu max` has implementer 0 in MIDR, hence A53 here, but
/// Cortex-A57's PMCR value, which hwpmc on that guest reads as A57.)
pub fn arm64_cputype(midr: u64) -> u32 {
    const ARM_LTD: u64 = 0x41;
    let implementer = (midr >> 24) & 0xFF;
    let part = (midr >> 4) & 0xFFF;
    match (implementer, part) {
        (ARM_LTD, 0xD0B | 0xD0C) => 0x602,
        (ARM_LTD, 0xD07 | 0xD08) => 0x601,
        _ => PMC_CPU_ARMV8_CORTEX_A53,
    }
}

/// MIDR_EL1 from an arm64 cpuid string as perf writes it (`0x%016x`, what
/// `pmc_linux::pmu_events::host_cpuid` gives there).
pub fn midr(cpuid: &str) -> Option<u64> {
    u64::from_str_radix(cpuid.trim().strip_prefix("0x")?, 16).ok()
}

/// `kern.hwpmc.cpuid` of an arm64 CPU: hwpmc_arm64.c writes MIDR_EL1 with
/// its variant (bits 20–23) and revision (bits 0–3) zeroed, as `0x%016lx`.
pub fn hwpmc_cpuid_arm64(midr: u64) -> String {
    format!("0x{:016x}", midr & !(0xF << 20) & !0xF)
}

impl CpuIdentity {
    /// A CPU nothing is known of: [`PMC_CPU_GENERIC`], empty cpuid.
    pub fn unknown() -> CpuIdentity {
        CpuIdentity {
            cputype: PMC_CPU_GENERIC,
            cpuid: String::new(),
        }
    }
}

/// The identity of the first CPU of a `/proc/cpuinfo` text (x86).
pub fn identity_from_cpuinfo(text: &str) -> Option<CpuIdentity> {
    let field = |key: &str| {
        text.lines()
            .find(|l| l.split(':').next().is_some_and(|k| k.trim() == key))
            .and_then(|l| l.split_once(':'))
            .map(|(_, v)| v.trim().to_string())
    };
    let number = |key: &str| field(key)?.parse::<u32>().ok();
    let vendor = field("vendor_id")?;
    let (family, model, stepping) = (number("cpu family")?, number("model")?, number("stepping")?);
    Some(CpuIdentity {
        cputype: pmc_cputype(&vendor, family, model, stepping),
        cpuid: hwpmc_cpuid(&vendor, family, model, stepping),
    })
}

/// libpmc's `pmc_name_of_cputype`: the `enum pmc_cputype` member of
/// `sys/sys/pmc.h` `__PMC_CPUS` without its `PMC_CPU_` prefix (libpmc.c
/// builds `pmc_cputype_names` with `__STRING(S)`); `None` where libpmc
/// says EINVAL (AMD_K7, 0x00, is gone from the PMC_VERSION 0x0A000000
/// tree). pmcstat -R prints it in `initlog` lines.
pub fn cputype_name(cputype: u32) -> Option<&'static str> {
    Some(match cputype {
        0x01 => "AMD_K8",
        0x87 => "INTEL_CORE",
        0x88 => "INTEL_CORE2",
        0x89 => "INTEL_CORE2EXTREME",
        0x8A => "INTEL_ATOM",
        0x8B => "INTEL_COREI7",
        0x8C => "INTEL_WESTMERE",
        0x8D => "INTEL_SANDYBRIDGE",
        0x8E => "INTEL_IVYBRIDGE",
        0x8F => "INTEL_SANDYBRIDGE_XEON",
        0x90 => "INTEL_IVYBRIDGE_XEON",
        0x91 => "INTEL_HASWELL",
        0x92 => "INTEL_ATOM_SILVERMONT",
        0x93 => "INTEL_NEHALEM_EX",
        0x94 => "INTEL_WESTMERE_EX",
        0x95 => "INTEL_HASWELL_XEON",
        0x96 => "INTEL_BROADWELL",
        0x97 => "INTEL_BROADWELL_XEON",
        0x98 => "INTEL_SKYLAKE",
        0x99 => "INTEL_SKYLAKE_XEON",
        0x9A => "INTEL_ATOM_GOLDMONT",
        0x9B => "INTEL_ICELAKE",
        0x9C => "INTEL_ICELAKE_XEON",
        0x9D => "INTEL_ALDERLAKE",
        0x9E => "INTEL_ATOM_GOLDMONT_P",
        0x9F => "INTEL_ATOM_TREMONT",
        0xA0 => "INTEL_EMERALD_RAPIDS",
        0xA1 => "INTEL_ALDERLAKEN",
        0xA2 => "INTEL_GRANITE_RAPIDS",
        0x100 => "INTEL_XSCALE",
        0x300 => "PPC_7450",
        0x340 => "PPC_E500",
        0x380 => "PPC_970",
        0x390 => "PPC_POWER8",
        0x400 => "GENERIC",
        0x500 => "ARMV7_CORTEX_A5",
        0x501 => "ARMV7_CORTEX_A7",
        0x502 => "ARMV7_CORTEX_A8",
        0x503 => "ARMV7_CORTEX_A9",
        0x504 => "ARMV7_CORTEX_A15",
        0x505 => "ARMV7_CORTEX_A17",
        0x600 => "ARMV8_CORTEX_A53",
        0x601 => "ARMV8_CORTEX_A57",
        0x602 => "ARMV8_CORTEX_A76",
        _ => return None,
    })
}
