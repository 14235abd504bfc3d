//! `pl_cpu` and `pl_cpuid` of INITIALIZE, model by model. Every expected
//! value is hwpmc's: the model → `PMC_CPU_*` cases of
//! sys/dev/hwpmc/hwpmc_intel.c `pmc_intel_initialize` (`switch (cpu_id &
//! 0xF00)` / `case 0x600: switch (model)`), the `cpu_id & 0xF00 == 0xF00`
//! test of hwpmc_amd.c `pmc_amd_initialize`, the numbers of sys/sys/pmc.h
//! `__PMC_CPUS()`, and both files' `"%s-%d-%02X-%X"` for
//! `kern.hwpmc.cpuid`.

use super::super::cpu::{self, CpuIdentity};

// sys/sys/pmc.h __PMC_CPUS().
const AMD_K8: u32 = 0x01;
const INTEL_CORE: u32 = 0x87;
const INTEL_CORE2: u32 = 0x88;
const INTEL_CORE2EXTREME: u32 = 0x89;
const INTEL_ATOM: u32 = 0x8A;
const INTEL_COREI7: u32 = 0x8B;
const INTEL_WESTMERE: u32 = 0x8C;
const INTEL_SANDYBRIDGE: u32 = 0x8D;
const INTEL_IVYBRIDGE: u32 = 0x8E;
const INTEL_SANDYBRIDGE_XEON: u32 = 0x8F;
const INTEL_IVYBRIDGE_XEON: u32 = 0x90;
const INTEL_HASWELL: u32 = 0x91;
const INTEL_ATOM_SILVERMONT: u32 = 0x92;
const INTEL_NEHALEM_EX: u32 = 0x93;
const INTEL_WESTMERE_EX: u32 = 0x94;
const INTEL_HASWELL_XEON: u32 = 0x95;
const INTEL_BROADWELL: u32 = 0x96;
const INTEL_BROADWELL_XEON: u32 = 0x97;
const INTEL_SKYLAKE: u32 = 0x98;
const INTEL_SKYLAKE_XEON: u32 = 0x99;
const INTEL_ATOM_GOLDMONT: u32 = 0x9A;
const INTEL_ICELAKE: u32 = 0x9B;
const INTEL_ICELAKE_XEON: u32 = 0x9C;
const INTEL_ALDERLAKE: u32 = 0x9D;
const INTEL_ATOM_GOLDMONT_P: u32 = 0x9E;
const INTEL_ATOM_TREMONT: u32 = 0x9F;
const GENERIC: u32 = 0x400;

/// hwpmc_intel.c `pmc_intel_initialize`, `case 0x600: switch (model)`:
/// every case label with the cputype it sets.
const INTEL_FAMILY_6: &[(&[u32], u32)] = &[
    (&[0x0E], INTEL_CORE),
    (&[0x17], INTEL_CORE2EXTREME),
    (&[0x1A, 0x1E, 0x1F], INTEL_COREI7),
    (&[0x2E], INTEL_NEHALEM_EX),
    (&[0x25, 0x2C], INTEL_WESTMERE),
    (&[0x2F], INTEL_WESTMERE_EX),
    (&[0x2A], INTEL_SANDYBRIDGE),
    (&[0x2D], INTEL_SANDYBRIDGE_XEON),
    (&[0x3A], INTEL_IVYBRIDGE),
    (&[0x3E], INTEL_IVYBRIDGE_XEON),
    (&[0x3D, 0x47], INTEL_BROADWELL),
    (&[0x4F, 0x56], INTEL_BROADWELL_XEON),
    (&[0x3C, 0x45], INTEL_HASWELL),
    (&[0x3F, 0x46], INTEL_HASWELL_XEON),
    // Skylake 0x4E 0x5E, Kabylake 0x8E 0x9E, Cometlake 0xA5 0xA6.
    (&[0x4E, 0x5E, 0x8E, 0x9E, 0xA5, 0xA6], INTEL_SKYLAKE),
    (&[0x55], INTEL_SKYLAKE_XEON),
    // Icelake 0x7D 0x7E, Tigerlake 0x8C 0x8D, Rocketlake 0xA7.
    (&[0x7D, 0x7E, 0x8C, 0x8D, 0xA7], INTEL_ICELAKE),
    (&[0x6A, 0x6C], INTEL_ICELAKE_XEON),
    (&[0x97, 0x9A], INTEL_ALDERLAKE),
    (&[0x1C, 0x26, 0x27, 0x35, 0x36], INTEL_ATOM),
    (&[0x37, 0x4A, 0x4D, 0x5A, 0x5D], INTEL_ATOM_SILVERMONT),
    (&[0x5C, 0x5F], INTEL_ATOM_GOLDMONT),
    (&[0x7A], INTEL_ATOM_GOLDMONT_P),
    (&[0x86, 0x96], INTEL_ATOM_TREMONT),
];

#[test]
fn every_intel_family_6_model_has_hwpmcs_cputype() {
    for (models, want) in INTEL_FAMILY_6 {
        for &model in *models {
            for stepping in [0, 7, 0xA] {
                assert_eq!(
                    cpu::pmc_cputype("GenuineIntel", 6, model, stepping),
                    *want,
                    "model {model:#x} stepping {stepping}"
                );
            }
        }
    }
    // `case 0xF:` "Per Intel document 315338-020": stepping 7 is a Core
    // (with verov), every other stepping a Core2.
    assert_eq!(cpu::pmc_cputype("GenuineIntel", 6, 0x0F, 7), INTEL_CORE);
    for stepping in [0, 2, 6, 0xB] {
        assert_eq!(
            cpu::pmc_cputype("GenuineIntel", 6, 0x0F, stepping),
            INTEL_CORE2,
            "stepping {stepping}"
        );
    }
}

/// A model no case names leaves `cputype` at -1: "pmc: Unknown Intel CPU."
/// and no hwpmc; so does any family but 6 (`cpu_id & 0xF00` has no other
/// case on amd64). Those CPUs are Generic here.
#[test]
fn unknown_intel_models_and_families_are_generic() {
    let known: Vec<u32> = INTEL_FAMILY_6
        .iter()
        .flat_map(|(m, _)| m.iter().copied())
        .chain([0x0F])
        .collect();
    for model in (0..=0xFF).filter(|m| !known.contains(m)) {
        assert_eq!(
            cpu::pmc_cputype("GenuineIntel", 6, model, 1),
            GENERIC,
            "model {model:#x}"
        );
    }
    // Pentium 4 (family 15) and later non-6 families, with models that
    // family 6 knows.
    for family in [5, 7, 15, 19] {
        for model in [0x0E, 0x55, 0x97] {
            assert_eq!(
                cpu::pmc_cputype("GenuineIntel", family, model, 1),
                GENERIC,
                "family {family} model {model:#x}"
            );
        }
    }
}

/// hwpmc_amd.c `pmc_amd_initialize`: `case 0xF00` (base family 0xF, i.e.
/// `CPUID_TO_FAMILY` 0xF and up: K8 and every family after it) is
/// PMC_CPU_AMD_K8; an older family is "pmc: Unknown AMD CPU", Generic
/// here. Hygon (family 0x18) goes through the same code.
#[test]
fn amd_family_0xf_and_later_are_k8_older_ones_generic() {
    for vendor in ["AuthenticAMD", "HygonGenuine"] {
        for family in [0xF, 0x10, 0x17, 0x18, 0x19, 0x1A] {
            assert_eq!(
                cpu::pmc_cputype(vendor, family, 1, 0),
                AMD_K8,
                "{family:#x}"
            );
        }
        for family in [5, 6, 0xE] {
            assert_eq!(
                cpu::pmc_cputype(vendor, family, 1, 0),
                GENERIC,
                "{family:#x}"
            );
        }
    }
    // Neither vendor code runs for another vendor.
    assert_eq!(cpu::pmc_cputype("CentaurHauls", 0x19, 1, 0), GENERIC);
    assert_eq!(cpu::pmc_cputype("GenuineIntel", 0x19, 1, 0), GENERIC);
}

/// `snprintf(pmc_cpuid, ..., "GenuineIntel-%d-%02X-%X", family, model,
/// stepping)`: decimal family, two upper-case hex digits of model, hex
/// stepping.
#[test]
fn cpuid_strings_are_hwpmcs_format() {
    // Skylake-SP, cpuinfo "model : 85".
    assert_eq!(
        cpu::hwpmc_cpuid("GenuineIntel", 6, 85, 4),
        "GenuineIntel-6-55-4"
    );
    // A one-digit model is zero-padded, a stepping above 9 is a hex digit.
    assert_eq!(
        cpu::hwpmc_cpuid("GenuineIntel", 6, 0xE, 0xC),
        "GenuineIntel-6-0E-C"
    );
    assert_eq!(
        cpu::hwpmc_cpuid("GenuineIntel", 6, 0xAB, 10),
        "GenuineIntel-6-AB-A"
    );
    // Zen 4 family 25 (0x19) is printed in decimal.
    assert_eq!(
        cpu::hwpmc_cpuid("AuthenticAMD", 25, 0x11, 1),
        "AuthenticAMD-25-11-1"
    );
    assert_eq!(
        cpu::hwpmc_cpuid("HygonGenuine", 24, 0, 1),
        "HygonGenuine-24-00-1"
    );
}

/// /proc/cpuinfo's first CPU, field by field (x86 `show_cpuinfo`:
/// "vendor_id", "cpu family", "model", "stepping" in decimal; "model
/// name" is another field).
#[test]
fn cpuinfo_gives_the_first_cpus_identity() {
    let text = "processor\t: 0\nvendor_id\t: GenuineIntel\ncpu family\t: 6\n\
                model\t\t: 15\nmodel name\t: Intel(R) Core(TM)2 CPU\nstepping\t: 7\n\
                \nprocessor\t: 1\nvendor_id\t: GenuineIntel\ncpu family\t: 6\n\
                model\t\t: 85\nmodel name\t: other\nstepping\t: 4\n";
    assert_eq!(
        cpu::identity_from_cpuinfo(text),
        Some(CpuIdentity {
            cputype: INTEL_CORE,
            cpuid: "GenuineIntel-6-0F-7".into()
        })
    );
    let amd = "processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 25\n\
               model\t\t: 17\nmodel name\t: AMD EPYC\nstepping\t: 1\n";
    assert_eq!(
        cpu::identity_from_cpuinfo(amd),
        Some(CpuIdentity {
            cputype: AMD_K8,
            cpuid: "AuthenticAMD-25-11-1".into()
        })
    );
    // A field missing or not a number: nothing is known.
    assert_eq!(
        cpu::identity_from_cpuinfo(&amd.replace("stepping", "steppin")),
        None
    );
    assert_eq!(
        cpu::identity_from_cpuinfo(&amd.replace(": 25", ": x")),
        None
    );
    assert_eq!(cpu::identity_from_cpuinfo(""), None);
    assert_eq!(
        cpu::CpuIdentity::unknown(),
        CpuIdentity {
            cputype: GENERIC,
            cpuid: String::new()
        }
    );
}

/// Every CPU type hwpmc gives has libpmc's name (`pmc_name_of_cputype`:
/// the `__PMC_CPUS` member of sys/sys/pmc.h without `PMC_CPU_`), so
/// `pmccontrol -l`'s first line never names a type "(null)".
#[test]
fn every_cputype_given_has_a_name() {
    for vendor in [
        "GenuineIntel",
        "AuthenticAMD",
        "HygonGenuine",
        "CentaurHauls",
    ] {
        for family in [5, 6, 0xF, 0x17, 0x19] {
            for model in 0..=0xFF {
                let t = cpu::pmc_cputype(vendor, family, model, 1);
                assert!(
                    cpu::cputype_name(t).is_some(),
                    "{vendor} {family} {model}: {t:#x}"
                );
            }
        }
    }
    assert_eq!(cpu::cputype_name(AMD_K8), Some("AMD_K8"));
    assert_eq!(cpu::cputype_name(INTEL_CORE), Some("INTEL_CORE"));
    assert_eq!(cpu::cputype_name(GENERIC), Some("GENERIC"));
    assert_eq!(cpu::cputype_name(0x7777), None);
}
