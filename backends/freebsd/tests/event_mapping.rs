//! Event specifier → `pmc_op_pmcallocate`, each expectation derived by hand
//! from lib/libpmc/libpmc.c (`pmc_allocate`, `tsc_allocate_pmc`,
//! `k8_allocate_pmc`, `soft_allocate_pmc`, `k8_aliases`) and
//! lib/libpmc/libpmc_pmu_util.c (`pmc_pmu_pmcallocate`,
//! `pmc_pmu_intel_pmcallocate`, `pmc_pmu_amd_pmcallocate`, arm64
//! `pmc_pmu_pmcallocate_md`), with bit positions from hwpmc_amd.h and
//! hwpmc_core.h.

use pmc_freebsd::abi::*;
use pmc_freebsd::event::{Arch, EventResolver, PmuEvent, PmuEvents, PmuVendor, match_event_name};

const SOFT_PF_ALL: u32 = 0x20003;

fn intel() -> EventResolver {
    EventResolver {
        arch: Arch::Amd64,
        cputype: CpuType::INTEL_SKYLAKE as u32,
        classes: vec![
            Class::TSC as u32,
            Class::IAP as u32,
            Class::IAF as u32,
            Class::SOFT as u32,
        ],
        soft_events: vec![
            ("CLOCK.HARD".into(), 0x20000),
            ("CLOCK.STAT".into(), 0x20001),
            ("CLOCK.PROF".into(), 0x20002),
            ("PAGE_FAULT.ALL".into(), SOFT_PF_ALL),
        ],
        pmu: None,
    }
}

fn amd_k8() -> EventResolver {
    EventResolver {
        cputype: CpuType::AMD_K8 as u32,
        classes: vec![Class::TSC as u32, Class::K8 as u32, Class::SOFT as u32],
        ..intel()
    }
}

fn pmu(vendor: PmuVendor, events: &[(&str, &str, &str)]) -> Option<PmuEvents> {
    Some(PmuEvents {
        vendor,
        events: events
            .iter()
            .map(|(n, e, t)| PmuEvent {
                name: n.to_string(),
                event: e.to_string(),
                topic: t.to_string(),
            })
            .collect(),
    })
}

fn amd_cfg(pa: &pmc_op_pmcallocate) -> (u64, u32) {
    let a = pa.pm_md.amd64().amd();
    (a.pm_amd_config, a.pm_amd_sub_class)
}

#[test]
fn names_match_case_and_separator_insensitively() {
    // pmc_match_event_name: ' ', '_', '-', '.' match each other; toupper.
    assert!(match_event_name("page-fault-all", "PAGE_FAULT.ALL"));
    assert!(match_event_name("Page Fault.All", "PAGE_FAULT.ALL"));
    assert!(!match_event_name("PAGE_FAULT", "PAGE_FAULT.ALL"));
    assert!(!match_event_name("PAGEXFAULT.ALL", "PAGE_FAULT.ALL"));
}

#[test]
fn tsc_is_unqualified_read_only() {
    let r = intel();
    // tsc_event_table = { "cycles" → PMC_EV_TSC_TSC }, prefix "TSC-".
    let pa = r.allocate_request("TSC-cycles", Mode::SC, 0, 0, 0).unwrap();
    assert_eq!(pa.pm_class, Class::TSC as u32);
    assert_eq!(pa.pm_ev, 0x1000);
    assert_eq!(pa.pm_caps, PMC_CAP_READ);
    assert_eq!(pa.pm_cpu, 0);
    assert_eq!(pa.pm_mode, Mode::SC as u32);
    assert_eq!(amd_cfg(&pa), (0, 0));
    // Without prefix the class search finds it too.
    assert_eq!(
        r.allocate_request("cycles", Mode::SC, 0, 1, 0)
            .unwrap()
            .pm_ev,
        0x1000
    );
    // "TSC events must be unqualified."
    let e = r
        .allocate_request("TSC-cycles,usr", Mode::SC, 0, 0, 0)
        .unwrap_err();
    assert!(e.reason.contains("qualifiers"), "{e}");
    // Byte 4 inside a multi-byte character: compared safely, not sliced.
    assert!(
        r.allocate_request("T\u{e9}\u{e9}", Mode::SC, 0, 0, 0)
            .is_err()
    );
}

#[test]
fn soft_events_come_from_the_kernel_list() {
    let r = intel();
    let pa = r
        .allocate_request("SOFT-PAGE_FAULT.ALL", Mode::TC, 0, PMC_CPU_ANY, 0)
        .unwrap();
    assert_eq!(pa.pm_class, Class::SOFT as u32);
    assert_eq!(pa.pm_ev, SOFT_PF_ALL);
    // soft_allocate_pmc: READ|WRITE; TC is counting, no INTERRUPT.
    assert_eq!(pa.pm_caps, PMC_CAP_READ | PMC_CAP_WRITE);
    assert_eq!(pa.pm_cpu, PMC_CPU_ANY);
    // pmc_allocate adds INTERRUPT for sampling modes; count carried.
    let pa = r
        .allocate_request(
            "soft-clock-hard",
            Mode::TS,
            PMC_F_CALLCHAIN,
            PMC_CPU_ANY,
            5000,
        )
        .unwrap();
    assert_eq!(pa.pm_ev, 0x20000);
    assert_eq!(pa.pm_caps, PMC_CAP_INTERRUPT | PMC_CAP_READ | PMC_CAP_WRITE);
    assert_eq!(pa.pm_flags, PMC_F_CALLCHAIN);
    assert_eq!(pa.pm_count, 5000);
    // A class prefix with an unknown name is EINVAL, naming the class.
    let e = r
        .allocate_request("SOFT-NO_SUCH", Mode::TC, 0, PMC_CPU_ANY, 0)
        .unwrap_err();
    assert!(e.reason.contains("SOFT"), "{e}");
    let e = r
        .allocate_request("no-such-event", Mode::TC, 0, PMC_CPU_ANY, 0)
        .unwrap_err();
    assert!(e.reason.contains("TSC, SOFT"), "{e}");
}

#[test]
fn k8_masks_counts_and_privilege() {
    let r = amd_k8();
    // DC_REFILL_FROM_L2 is index 13 of __PMC_EV_K8 → 0x2080 + 13.
    // mask=shared+modified → bits 1 and 4 → evmask 0x12 → unitmask 0x1200.
    let pa = r
        .allocate_request(
            "k8-dc-refill-from-l2,mask=shared+modified,usr",
            Mode::TC,
            0,
            PMC_CPU_ANY,
            0,
        )
        .unwrap();
    assert_eq!(pa.pm_class, Class::K8 as u32);
    assert_eq!(pa.pm_ev, 0x208D);
    assert_eq!(
        pa.pm_caps,
        PMC_CAP_READ | PMC_CAP_WRITE | PMC_CAP_QUALIFIER | PMC_CAP_USER
    );
    assert_eq!(amd_cfg(&pa), (0x1200, 0));
    // DC_MISS (index 12): count=3 → AMD_PMC_TO_COUNTER(3) = 3 << 24.
    let pa = r
        .allocate_request(
            "K8-DC-MISS,count=3,edge,inv,os",
            Mode::TC,
            0,
            PMC_CPU_ANY,
            0,
        )
        .unwrap();
    assert_eq!(pa.pm_ev, 0x208C);
    assert_eq!(
        pa.pm_caps,
        PMC_CAP_READ
            | PMC_CAP_WRITE
            | PMC_CAP_THRESHOLD
            | PMC_CAP_EDGE
            | PMC_CAP_INVERT
            | PMC_CAP_SYSTEM
    );
    assert_eq!(amd_cfg(&pa).0, 0x0300_0000);
    // No mask given on an event with a mask table: all bits (dc: 5 bits).
    let pa = r
        .allocate_request("k8-dc-copyback", Mode::TC, 0, PMC_CPU_ANY, 0)
        .unwrap();
    assert_eq!(amd_cfg(&pa).0, 0x1F00);
    assert_ne!(pa.pm_caps & PMC_CAP_QUALIFIER, 0);
    // LS_LOCKED_OPERATION: at most one bit; none → 0x01.
    let pa = r
        .allocate_request("k8-ls-locked-operation", Mode::TC, 0, PMC_CPU_ANY, 0)
        .unwrap();
    assert_eq!(amd_cfg(&pa).0, 0x0100);
    assert!(
        r.allocate_request(
            "k8-ls-locked-operation,mask=locked-instructions+cycles-in-request",
            Mode::TC,
            0,
            PMC_CPU_ANY,
            0
        )
        .is_err()
    );
    // FP events (rev B note) keep an empty mask.
    let pa = r
        .allocate_request("k8-fp-dispatched-fpu-ops", Mode::TC, 0, PMC_CPU_ANY, 0)
        .unwrap();
    assert_eq!(amd_cfg(&pa).0, 0);
    // Unknown keyword, unknown mask name, empty count → rejected.
    for bad in [
        "k8-dc-miss,bogus",
        "k8-dc-copyback,mask=nope",
        "k8-dc-miss,count=",
        "k8-dc-miss,count=x",
        "k8-dc-miss,",
    ] {
        assert!(
            r.allocate_request(bad, Mode::TC, 0, PMC_CPU_ANY, 0)
                .is_err(),
            "{bad}"
        );
    }
    // count= takes C numbers: 0x10 → 16 << 24.
    let pa = r
        .allocate_request("k8-dc-miss,count=0x10", Mode::TC, 0, PMC_CPU_ANY, 0)
        .unwrap();
    assert_eq!(amd_cfg(&pa).0, 0x1000_0000);
}

#[test]
fn k8_aliases_apply_to_the_whole_spec() {
    let r = amd_k8();
    // k8_aliases: "instructions" → "k8-fr-retired-x86-instructions" (index 38).
    let pa = r
        .allocate_request("instructions", Mode::TC, 0, PMC_CPU_ANY, 0)
        .unwrap();
    assert_eq!(pa.pm_ev, 0x2080 + 38);
    // "dc-misses" → "k8-dc-miss".
    assert_eq!(
        r.allocate_request("DC-MISSES", Mode::TC, 0, PMC_CPU_ANY, 0)
            .unwrap()
            .pm_ev,
        0x208C
    );
    // The alias compares the whole spec: "dc-misses,usr" is no alias.
    assert!(
        r.allocate_request("dc-misses,usr", Mode::TC, 0, PMC_CPU_ANY, 0)
            .is_err()
    );
    // Intel CPU types have no legacy aliases.
    assert!(
        intel()
            .allocate_request("dc-misses", Mode::TC, 0, PMC_CPU_ANY, 0)
            .is_err()
    );
}

#[test]
fn generic_cpu_maps_instructions_to_clock_hard() {
    let r = EventResolver {
        cputype: CpuType::GENERIC as u32,
        ..intel()
    };
    // generic_aliases: "instructions" → "SOFT-CLOCK.HARD".
    let pa = r
        .allocate_request("instructions", Mode::TC, 0, PMC_CPU_ANY, 0)
        .unwrap();
    assert_eq!((pa.pm_class, pa.pm_ev), (Class::SOFT as u32, 0x20000));
}

#[test]
fn intel_pmu_events_fixed_and_programmable() {
    let mut r = intel();
    r.pmu = pmu(
        PmuVendor::Intel,
        &[
            (
                "inst_retired.any",
                "event=0x0,umask=0x1,period=2000003",
                "pipeline",
            ),
            (
                "br_misp_retired.all_branches",
                "event=0xc5,umask=0x0,period=400009",
                "pipeline",
            ),
            (
                "cycle_activity.stalls_total",
                "event=0xa3,umask=0x4,cmask=4,inv=1,edge=1,any=1",
                "pipeline",
            ),
            ("UNC_ARB_TRK_REQUESTS.ALL", "event=0x81,umask=0x1", "uncore"),
        ],
    );
    // event == 0 → IAF; IAP_EVSEL(0) | IAP_UMASK(1) | USR|OS (no usr/os caps).
    let pa = r
        .allocate_request("inst_retired.any", Mode::TC, 0, PMC_CPU_ANY, 0)
        .unwrap();
    assert_eq!(pa.pm_class, Class::IAF as u32);
    assert_eq!(pa.pm_ev, 0);
    assert_eq!(pa.pm_flags, PMC_F_EV_PMU);
    assert_eq!(pa.pm_caps, PMC_CAP_READ | PMC_CAP_WRITE);
    let iap = pa.pm_md.amd64().iap();
    assert_eq!(iap.pm_iap_config, 0x100 | (1 << 16) | (1 << 17));
    // Sampling adds IAP_INT (bit 20).
    let pa = r
        .allocate_request("INST_RETIRED.ANY", Mode::TS, 0, PMC_CPU_ANY, 1000)
        .unwrap();
    assert_eq!(
        pa.pm_md.amd64().iap().pm_iap_config,
        0x100 | (1 << 16) | (1 << 17) | (1 << 20)
    );
    // umask 0 is not "> 0": no UMASK bits; IAP gets QUALIFIER.
    let pa = r
        .allocate_request("br_misp_retired.all_branches", Mode::TC, 0, PMC_CPU_ANY, 0)
        .unwrap();
    assert_eq!((pa.pm_class, pa.pm_ev), (Class::IAP as u32, 1));
    assert_eq!(pa.pm_caps, PMC_CAP_READ | PMC_CAP_WRITE | PMC_CAP_QUALIFIER);
    assert_eq!(
        pa.pm_md.amd64().iap().pm_iap_config,
        0xc5 | (1 << 16) | (1 << 17)
    );
    // Qualifiers after the name are ignored on the pmu path.
    let with_usr = r
        .allocate_request(
            "br_misp_retired.all_branches,usr",
            Mode::TC,
            0,
            PMC_CPU_ANY,
            0,
        )
        .unwrap();
    assert_eq!(with_usr, pa);
    // cmask 4 << 24, inv → IAP_INV (23), edge (18), any (21).
    let pa = r
        .allocate_request("cycle_activity.stalls_total", Mode::TC, 0, PMC_CPU_ANY, 0)
        .unwrap();
    let want =
        0xa3 | (0x4 << 8) | (4 << 24) | (1 << 23) | (1 << 18) | (1 << 21) | (1 << 16) | (1 << 17);
    assert_eq!(pa.pm_md.amd64().iap().pm_iap_config, want);
    // "UNC_" names are uncore programmable.
    let pa = r
        .allocate_request("unc_arb_trk_requests.all", Mode::SC, 0, 0, 0)
        .unwrap();
    assert_eq!((pa.pm_class, pa.pm_ev), (Class::UCP as u32, 3));
}

#[test]
fn pmu_miss_falls_back_to_the_class_tables_with_caps_reset() {
    let mut r = intel();
    r.pmu = pmu(
        PmuVendor::Intel,
        &[("inst_retired.any", "event=0x0,umask=0x1", "pipeline")],
    );
    // Not in the pmu table: pmc_pmu_pmcallocate resets pm_caps (dropping
    // the INTERRUPT pmc_allocate set), then the SOFT table answers.
    let pa = r
        .allocate_request("SOFT-CLOCK.HARD", Mode::TS, 0, PMC_CPU_ANY, 0)
        .unwrap();
    assert_eq!(pa.pm_class, Class::SOFT as u32);
    assert_eq!(pa.pm_caps, PMC_CAP_READ | PMC_CAP_WRITE);
    assert_eq!(pa.pm_flags & PMC_F_EV_PMU, 0);
}

#[test]
fn amd_pmu_events_core_l3_and_data_fabric() {
    let mut r = amd_k8();
    r.cputype = CpuType::GENERIC as u32;
    r.pmu = pmu(
        PmuVendor::Amd,
        &[
            ("ls_not_halted_cyc", "event=0x76", "core"),
            (
                "ls_dispatch.ld_st_dispatch",
                "event=0x29,umask=0x04,edge=1,inv=1",
                "load store",
            ),
            (
                "l3_lookup_state.all_coherent_accesses_to_l3",
                "event=0x04,umask=0xff,l3_thread_mask=0x3,l3_slice_mask=0x1",
                "l3cache",
            ),
            (
                "remote_outbound_data_controller_0",
                "event=0x7c7,umask=0x02",
                "data fabric",
            ),
        ],
    );
    // pmu_amd_alias_table: UNHALTED_CORE_CYCLES → ls_not_halted_cyc.
    let pa = r
        .allocate_request("unhalted_core_cycles", Mode::TS, 0, PMC_CPU_ANY, 1000)
        .unwrap();
    assert_eq!(
        (pa.pm_class, pa.pm_ev, pa.pm_flags),
        (Class::K8 as u32, 0, PMC_F_EV_PMU)
    );
    // EVENTMASK(0x76) | USR(16) | OS(17) | INT(20, sampling).
    assert_eq!(
        amd_cfg(&pa),
        (
            0x76 | (1 << 16) | (1 << 17) | (1 << 20),
            PMC_AMD_SUB_CLASS_CORE
        )
    );
    let pa = r
        .allocate_request("ls_dispatch.ld_st_dispatch", Mode::TC, 0, PMC_CPU_ANY, 0)
        .unwrap();
    // UNITMASK(4) = 0x400, EDGE (18), INVERT (23); QUALIFIER for umask > 0.
    assert_eq!(
        amd_cfg(&pa).0,
        0x29 | 0x400 | (1 << 16) | (1 << 17) | (1 << 18) | (1 << 23)
    );
    assert_ne!(pa.pm_caps & PMC_CAP_QUALIFIER, 0);
    // l3cache: no USR/OS; L3SLICE(1) << 48, L3CORE(3) << 56.
    let pa = r
        .allocate_request(
            "l3_lookup_state.all_coherent_accesses_to_l3",
            Mode::SC,
            0,
            0,
            0,
        )
        .unwrap();
    assert_eq!(
        amd_cfg(&pa),
        (
            0x04 | 0xff00 | (1 << 48) | (3 << 56),
            PMC_AMD_SUB_CLASS_L3_CACHE
        )
    );
    // data fabric: EVENTMASK_DF(0x7c7) = 0xc7 | (0x700 << 24).
    let pa = r
        .allocate_request("remote_outbound_data_controller_0", Mode::SC, 0, 0, 0)
        .unwrap();
    assert_eq!(
        amd_cfg(&pa),
        (0xc7 | (0x700 << 24) | 0x200, PMC_AMD_SUB_CLASS_DATA_FABRIC)
    );
}

#[test]
fn arm64_pmu_events_use_md_config() {
    let r = EventResolver {
        arch: Arch::Arm64,
        cputype: CpuType::ARMV8_CORTEX_A76 as u32,
        classes: vec![Class::ARMV8 as u32, Class::SOFT as u32],
        soft_events: vec![("CLOCK.HARD".into(), 0x20000)],
        pmu: pmu(
            PmuVendor::Arm64,
            &[
                ("sw_incr", "event=0x00", ""),
                ("inst_retired", "event=0x08", ""),
            ],
        ),
    };
    let pa = r
        .allocate_request("inst_retired", Mode::TC, 0, PMC_CPU_ANY, 0)
        .unwrap();
    assert_eq!(
        (pa.pm_class, pa.pm_ev, pa.pm_flags),
        (Class::ARMV8 as u32, 1, PMC_F_EV_PMU)
    );
    assert_eq!(pa.pm_md.arm64().md_config(), 0x08);
    assert_eq!(pa.pm_caps, PMC_CAP_READ | PMC_CAP_WRITE);
    // arm64 has no TSC/K8 tables; SOFT still resolves.
    assert!(r.allocate_request("TSC-cycles", Mode::SC, 0, 0, 0).is_err());
    assert_eq!(
        r.allocate_request("SOFT-CLOCK.HARD", Mode::TC, 0, PMC_CPU_ANY, 0)
            .unwrap()
            .pm_ev,
        0x20000
    );
}

proptest::proptest! {
    /// Bad input never panics: any specifier yields a request or a SpecError.
    #[test]
    fn any_specifier_is_answered_without_panic(spec in "\\PC{0,40}", qual in "[a-zA-Z0-9=+,. é_-]{0,30}") {
        let mut with_pmu = intel();
        with_pmu.pmu = pmu(PmuVendor::Intel, &[("inst_retired.any", "event=0x0,umask=0x1", "pipeline")]);
        for r in [intel(), amd_k8(), with_pmu] {
            for s in [spec.clone(), format!("k8-dc-miss,{qual}"), format!("TSC-{qual}"), format!("SOFT-{spec}"), format!("T\u{e9}{spec}")] {
                match r.allocate_request(&s, Mode::TC, 0, PMC_CPU_ANY, 0) {
                    Ok(pa) => proptest::prop_assert!(pa.pm_class <= 0x18),
                    Err(e) => proptest::prop_assert_eq!(e.spec, s),
                }
            }
        }
    }
}
