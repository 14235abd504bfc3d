//! Native (pmu-events) names through `pmc`'s resolution, in the default
//! build: golden attrs on fixture CPUs (expected values from the kernel's
//! tools/perf/pmu-events/arch/x86 JSON, linux-source 6.12), qualifiers,
//! hybrid PMUs, and the suggestions for names that are not there.
// The hooks are the Linux backend's, which `--cfg pmc_force_portable` leaves out.
#![cfg(all(target_os = "linux", not(pmc_force_portable)))]

use std::path::{Path, PathBuf};

use pmc::__private_test_hooks::attrs_for_cpu;
use pmc::{Flags, Mode};
use pmc_linux::attr::AttrBit;

const SKX: &str = "GenuineIntel-6-55-4";

fn root(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("backends/linux/tests/fixtures")
        .join(name)
}

/// (type, config, config1, CPUs) of one attr.
type Golden = (u32, u64, u64, Option<Vec<u32>>);

/// The [`Golden`] of each attr `spec` resolves to.
fn attrs(spec: &str, tree: &str, cpuid: &str) -> pmc::Result<Vec<Golden>> {
    Ok(
        attrs_for_cpu(spec, Mode::TC, Flags::empty(), 0, &root(tree), cpuid)?
            .into_iter()
            .map(|(a, cpus)| (a.type_id(), a.get_config(), a.get_config1(), cpus))
            .collect(),
    )
}

fn skx(spec: &str) -> (u32, u64, u64) {
    let v = attrs(spec, "sysfs-intel-skx", SKX).unwrap_or_else(|e| panic!("{spec}: {e}"));
    assert_eq!(v.len(), 1, "{spec}");
    (v[0].0, v[0].1, v[0].2)
}

#[test]
fn skylake_sp_native_names_resolve_on_its_core_pmu() {
    // The fields land where FreeBSD's libpmc_pmu_util.c
    // `pmc_pmu_intel_pmcallocate` puts them (IAP_EVSEL, IAP_UMASK,
    // IAP_CMASK, offcore_rsp apart), here through the PMU's format files.
    // The fixture's cpu/type is 4. skylakex/pipeline.json INST_RETIRED.ANY
    // (fixed counter 0) is event=0xc0 as perf's jevents.py `real_event`
    // writes it.
    assert_eq!(skx("inst_retired.any"), (4, 0xc0, 0));
    assert_eq!(skx("INST_RETIRED.ANY"), (4, 0xc0, 0));
    assert_eq!(skx("cpu_clk_unhalted.thread"), (4, 0x3c, 0));
    // pipeline.json UOPS_ISSUED.STALL_CYCLES: EventCode 0x0E, UMask 0x1,
    // CounterMask 1, Invert 1 (inv bit 23, cmask 24-31).
    assert_eq!(
        skx("uops_issued.stall_cycles"),
        (4, 0x0e | 1 << 8 | 1 << 23 | 1 << 24, 0)
    );
    // memory.json MEM_TRANS_RETIRED.LOAD_LATENCY_GT_4: ldlat (config1) 4.
    assert_eq!(
        skx("mem_trans_retired.load_latency_gt_4"),
        (4, 0xcd | 1 << 8, 4)
    );
}

#[test]
fn freebsd_qualifiers_apply_on_top_of_the_table_entry() {
    // libpmc's qualifiers (pmc_pmu_pmcallocate: cmask, inv, edge, umask)
    // override the entry's fields through the same format files.
    assert_eq!(
        skx("br_inst_retired.all_branches,cmask=2,inv"),
        (4, 0xc4 | 2 << 24 | 1 << 23, 0)
    );
    let a = attrs_for_cpu(
        "inst_retired.any,usr",
        Mode::TC,
        Flags::empty(),
        0,
        &root("sysfs-intel-skx"),
        SKX,
    )
    .unwrap();
    assert!(a[0].0.is_set(AttrBit::EXCLUDE_KERNEL));
    assert!(!a[0].0.is_set(AttrBit::EXCLUDE_USER));
}

#[test]
fn sysfs_aliases_come_before_the_table() {
    // The fixture's cpu/events/mem-loads is `event=0xcd,umask=0x1,ldlat=3`.
    assert_eq!(skx("mem-loads"), (4, 0xcd | 1 << 8, 3));
}

#[test]
fn hybrid_native_names_open_on_each_core_pmu() {
    // alderlake (mapfile.csv GenuineIntel-6-(97|9A|B7|BA|BF)) has
    // INST_RETIRED.ANY for both cpu_core and cpu_atom; the fixture's
    // cpu_core is type 4 on CPUs 0-7, cpu_atom type 10 on CPUs 8-15.
    let mut v = attrs("inst_retired.any", "sysfs-hybrid", "GenuineIntel-6-97-2").unwrap();
    v.sort_by_key(|a| a.0);
    assert_eq!(
        v,
        [
            (4, 0xc0, 0, Some((0..8).collect())),
            (10, 0xc0, 0, Some((8..16).collect()))
        ]
    );
}

#[test]
fn unknown_names_get_the_closest_native_names() {
    let e = attrs("inst_retired.anyy", "sysfs-intel-skx", SKX)
        .unwrap_err()
        .to_string();
    assert!(e.contains("closest: inst_retired.any"), "{e}");
    assert!(e.contains("skylakex"), "{e}");
    println!("{e}");
    let e = attrs("uops_issued.stall_cycle", "sysfs-intel-skx", SKX).unwrap_err();
    assert!(e.to_string().contains("uops_issued.stall_cycles"), "{e}");
}

#[test]
fn a_cpu_without_a_shipped_table_says_how_to_get_one() {
    // No AMD table ships (the kernel's AMD JSON has no licence of its own).
    let e = attrs("ls_not_halted_cyc", "sysfs-amd", "AuthenticAMD-23-31-0")
        .unwrap_err()
        .to_string();
    assert!(e.contains("AuthenticAMD-23-31-0"), "{e}");
    assert!(e.contains("PMC_PMU_EVENTS"), "{e}");
    println!("{e}");
}

#[test]
fn a_native_name_without_a_core_pmu_is_refused_with_the_reason() {
    let empty = std::env::temp_dir().join(format!("pmc-native-empty-{}", std::process::id()));
    std::fs::create_dir_all(&empty).unwrap();
    let r = attrs_for_cpu("inst_retired.any", Mode::TC, Flags::empty(), 0, &empty, SKX);
    std::fs::remove_dir_all(&empty).unwrap();
    let e = r.unwrap_err().to_string();
    assert!(e.contains("no core PMU"), "{e}");
    println!("{e}");
}
