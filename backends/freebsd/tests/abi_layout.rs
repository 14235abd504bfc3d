//! Layout and constants of the hwpmc ABI mirrors against FreeBSD's
//! headers. Every expected number below is written out by hand from the
//! C declarations (field types → sizes/alignments under the amd64 and
//! arm64 LP64 ABIs, which agree for these fixed-width types), citing:
//! sys/sys/pmc.h (PMC_VERSION 0x0A000000), sys/dev/hwpmc/pmc_events.h,
//! sys/amd64/include/pmc_mdep.h, sys/arm64/include/pmc_mdep.h,
//! sys/dev/hwpmc/hwpmc_{amd,core,uncore,cmn600,dmc620}.h, sys/sys/module.h.

use std::mem::{align_of, offset_of, size_of};

use pmc_freebsd::abi::*;

#[test]
fn pmc_op_pmcallocate_layout() {
    // uint32_t caps, cpu; enum class, ev; uint32_t flags; enum mode;
    // pmc_id_t pmcid; [4 bytes padding]; pmc_value_t count (8-aligned);
    // union pmc_md_op_pmcallocate pm_md (32 bytes, 8-aligned).
    assert_eq!(offset_of!(pmc_op_pmcallocate, pm_caps), 0);
    assert_eq!(offset_of!(pmc_op_pmcallocate, pm_cpu), 4);
    assert_eq!(offset_of!(pmc_op_pmcallocate, pm_class), 8);
    assert_eq!(offset_of!(pmc_op_pmcallocate, pm_ev), 12);
    assert_eq!(offset_of!(pmc_op_pmcallocate, pm_flags), 16);
    assert_eq!(offset_of!(pmc_op_pmcallocate, pm_mode), 20);
    assert_eq!(offset_of!(pmc_op_pmcallocate, pm_pmcid), 24);
    assert_eq!(offset_of!(pmc_op_pmcallocate, pm_count), 32);
    assert_eq!(offset_of!(pmc_op_pmcallocate, pm_md), 40);
    assert_eq!(size_of::<pmc_op_pmcallocate>(), 72);
    assert_eq!(align_of::<pmc_op_pmcallocate>(), 8);
}

#[test]
fn md_unions_are_32_bytes_8_aligned_on_amd64_and_arm64() {
    // amd64: union { amd(16) ; iap(16) ; ucf(2) ; ucp(4) ; uint64_t __pad[4] }.
    assert_eq!(size_of::<pmc_md_op_pmcallocate_amd64>(), 32);
    assert_eq!(align_of::<pmc_md_op_pmcallocate_amd64>(), 8);
    // arm64: union { struct { uint32_t pm_md_config; } ; cmn600(24) ;
    // dmc620(24) ; uint64_t __pad[4] }.
    assert_eq!(size_of::<pmc_md_op_pmcallocate_arm64>(), 32);
    assert_eq!(align_of::<pmc_md_op_pmcallocate_arm64>(), 8);
    assert_eq!(size_of::<pmc_md_union>(), 32);
    assert_eq!(size_of::<pmc_md_op_pmcallocate>(), 32);
}

#[test]
fn md_members_layout() {
    // hwpmc_amd.h: uint64_t pm_amd_config; uint32_t pm_amd_sub_class; → 16.
    assert_eq!(offset_of!(pmc_md_amd_op_pmcallocate, pm_amd_config), 0);
    assert_eq!(offset_of!(pmc_md_amd_op_pmcallocate, pm_amd_sub_class), 8);
    assert_eq!(size_of::<pmc_md_amd_op_pmcallocate>(), 16);
    // hwpmc_core.h: uint64_t pm_iap_config, pm_iap_rsp → 16.
    assert_eq!(offset_of!(pmc_md_iap_op_pmcallocate, pm_iap_rsp), 8);
    assert_eq!(size_of::<pmc_md_iap_op_pmcallocate>(), 16);
    // hwpmc_uncore.h: uint16_t pm_ucf_flags → 2; uint32_t pm_ucp_config → 4.
    assert_eq!(size_of::<pmc_md_ucf_op_pmcallocate>(), 2);
    assert_eq!(size_of::<pmc_md_ucp_op_pmcallocate>(), 4);
    // hwpmc_cmn600.h: u64 nodeid, u64 occupancy, u32 config → 24.
    assert_eq!(
        offset_of!(pmc_md_cmn600_pmu_op_pmcallocate, pma_cmn600_occupancy),
        8
    );
    assert_eq!(
        offset_of!(pmc_md_cmn600_pmu_op_pmcallocate, pma_cmn600_config),
        16
    );
    assert_eq!(size_of::<pmc_md_cmn600_pmu_op_pmcallocate>(), 24);
    // hwpmc_dmc620.h: u64 match, u64 mask, u32 config → 24.
    assert_eq!(
        offset_of!(pmc_md_dmc620_pmu_op_pmcallocate, pm_dmc620_mask),
        8
    );
    assert_eq!(
        offset_of!(pmc_md_dmc620_pmu_op_pmcallocate, pm_dmc620_config),
        16
    );
    assert_eq!(size_of::<pmc_md_dmc620_pmu_op_pmcallocate>(), 24);
}

/// The union views put each member at byte 0 of the union, as C does.
#[test]
fn md_views_place_members_at_the_union_start() {
    let mut md = pmc_md_op_pmcallocate_amd64::default();
    md.set_amd(pmc_md_amd_op_pmcallocate {
        pm_amd_config: 0x1122_3344_5566_7788,
        pm_amd_sub_class: 2,
    });
    let bytes: Vec<u8> = md.pad.iter().flat_map(|w| w.to_le_bytes()).collect();
    assert_eq!(&bytes[0..8], &0x1122_3344_5566_7788u64.to_le_bytes());
    assert_eq!(&bytes[8..12], &2u32.to_le_bytes());
    let mut arm = pmc_md_op_pmcallocate_arm64::default();
    arm.set_md_config(0x11);
    let bytes: Vec<u8> = arm.pad.iter().flat_map(|w| w.to_le_bytes()).collect();
    assert_eq!(&bytes[0..4], &0x11u32.to_le_bytes());
    assert!(bytes[4..].iter().all(|&b| b == 0));
}

#[test]
fn small_request_structures() {
    // pmc_op_pmcadmin: int cpu; uint32_t flags; int pmc; enum state.
    assert_eq!(offset_of!(pmc_op_pmcadmin, pm_pmc), 8);
    assert_eq!(offset_of!(pmc_op_pmcadmin, pm_state), 12);
    assert_eq!(size_of::<pmc_op_pmcadmin>(), 16);
    // pmc_op_pmcattach: pmc_id_t pmc; pid_t pid.
    assert_eq!(offset_of!(pmc_op_pmcattach, pm_pid), 4);
    assert_eq!(size_of::<pmc_op_pmcattach>(), 8);
    // pmc_op_pmcsetcount: pmc_value_t count; pmc_id_t pmcid; (+4 tail).
    assert_eq!(offset_of!(pmc_op_pmcsetcount, pm_pmcid), 8);
    assert_eq!(size_of::<pmc_op_pmcsetcount>(), 16);
    // pmc_op_pmcrw: uint32_t flags; pmc_id_t pmcid; pmc_value_t value.
    assert_eq!(offset_of!(pmc_op_pmcrw, pm_pmcid), 4);
    assert_eq!(offset_of!(pmc_op_pmcrw, pm_value), 8);
    assert_eq!(size_of::<pmc_op_pmcrw>(), 16);
    // pmc_op_configurelog: int flags; int logfd.
    assert_eq!(offset_of!(pmc_op_configurelog, pm_logfd), 4);
    assert_eq!(size_of::<pmc_op_configurelog>(), 8);
    // pmc_op_getdriverstats: 8 × unsigned int.
    assert_eq!(offset_of!(pmc_op_getdriverstats, pm_syscalls), 12);
    assert_eq!(offset_of!(pmc_op_getdriverstats, pm_log_sweeps), 28);
    assert_eq!(size_of::<pmc_op_getdriverstats>(), 32);
    // pmc_op_simple, pmc_op_writelog: one uint32_t.
    assert_eq!(size_of::<pmc_op_simple>(), 4);
    assert_eq!(size_of::<pmc_op_writelog>(), 4);
    // pmc_op_getmsr: uint32_t msr; pmc_id_t pmcid.
    assert_eq!(offset_of!(pmc_op_getmsr, pm_pmcid), 4);
    assert_eq!(size_of::<pmc_op_getmsr>(), 8);
}

#[test]
fn pmcinfo_and_cpuinfo_layout() {
    // pmc_info: char name[64]; enum class; int enabled; enum rowdisp;
    // pid_t ownerpid; enum mode; enum event; uint32_t flags; [pad 4];
    // pmc_value_t reloadcount.
    assert_eq!(offset_of!(pmc_info, pm_class), 64);
    assert_eq!(offset_of!(pmc_info, pm_enabled), 68);
    assert_eq!(offset_of!(pmc_info, pm_rowdisp), 72);
    assert_eq!(offset_of!(pmc_info, pm_ownerpid), 76);
    assert_eq!(offset_of!(pmc_info, pm_mode), 80);
    assert_eq!(offset_of!(pmc_info, pm_event), 84);
    assert_eq!(offset_of!(pmc_info, pm_flags), 88);
    assert_eq!(offset_of!(pmc_info, pm_reloadcount), 96);
    assert_eq!(size_of::<pmc_info>(), 104);
    // pmc_op_getpmcinfo: int32_t cpu; struct pmc_info pm_pmcs[] (8-aligned).
    assert_eq!(GETPMCINFO_PMCS_OFFSET, 8);
    // pmc_classinfo: 4 × 4 bytes.
    assert_eq!(size_of::<pmc_classinfo>(), 16);
    // pmc_op_getcpuinfo: 4 × 4 bytes, then pmc_classinfo[PMC_CLASS_MAX=8].
    assert_eq!(offset_of!(pmc_op_getcpuinfo, pm_classes), 16);
    assert_eq!(size_of::<pmc_op_getcpuinfo>(), 16 + 8 * 16);
}

#[test]
fn dyn_event_info_layout() {
    // pmc_dyn_event_descr: char name[64]; enum pmc_event code.
    assert_eq!(offset_of!(pmc_dyn_event_descr, pm_ev_code), 64);
    assert_eq!(size_of::<pmc_dyn_event_descr>(), 68);
    // pmc_op_getdyneventinfo: enum class; unsigned nevent;
    // descr[PMC_EV_DYN_COUNT = 0x1000].
    assert_eq!(offset_of!(pmc_op_getdyneventinfo, pm_events), 8);
    assert_eq!(size_of::<pmc_op_getdyneventinfo>(), 8 + 0x1000 * 68);
}

#[test]
fn module_stat_layout() {
    // sys/sys/module.h: int version; char name[MAXMODNAME=32]; int refs;
    // int id; modspecific_t data (a union with long → 8-aligned on LP64).
    assert_eq!(offset_of!(module_stat, name), 4);
    assert_eq!(offset_of!(module_stat, refs), 36);
    assert_eq!(offset_of!(module_stat, id), 40);
    assert_eq!(offset_of!(module_stat, data), 48);
    assert_eq!(size_of::<module_stat>(), 56);
    assert_eq!(module_stat::new().version, 56);
}

#[test]
fn op_numbers_follow_pmc_ops_order() {
    // __PMC_OPS(): CONFIGURELOG first (0) … GETDYNEVENTINFO last (18).
    let expected = [
        "CONFIGURELOG",
        "FLUSHLOG",
        "GETCPUINFO",
        "GETDRIVERSTATS",
        "GETMODULEVERSION",
        "GETPMCINFO",
        "PMCADMIN",
        "PMCALLOCATE",
        "PMCATTACH",
        "PMCDETACH",
        "PMCGETMSR",
        "PMCRELEASE",
        "PMCRW",
        "PMCSETCOUNT",
        "PMCSTART",
        "PMCSTOP",
        "WRITELOG",
        "CLOSELOG",
        "GETDYNEVENTINFO",
    ];
    assert_eq!(Op::ALL.len(), expected.len());
    for (i, name) in expected.iter().enumerate() {
        let op = Op::from_raw(i as u32).unwrap();
        assert_eq!(op.name(), *name);
    }
    assert_eq!(Op::from_raw(19), None);
}

#[test]
fn enum_values_from_the_header() {
    // __PMC_CLASSES() explicit values.
    assert_eq!(Class::TSC as u32, 0x00);
    assert_eq!(Class::K8 as u32, 0x02);
    assert_eq!(Class::IAF as u32, 0x06);
    assert_eq!(Class::IAP as u32, 0x07);
    assert_eq!(Class::UCP as u32, 0x09);
    assert_eq!(Class::SOFT as u32, 0x0F);
    assert_eq!(Class::ARMV8 as u32, 0x11);
    assert_eq!(Class::CMN600_PMU as u32, 0x18);
    // __PMC_CPUS().
    assert_eq!(CpuType::AMD_K8 as u32, 0x01);
    assert_eq!(CpuType::INTEL_SKYLAKE as u32, 0x98);
    assert_eq!(CpuType::GENERIC as u32, 0x400);
    assert_eq!(CpuType::ARMV8_CORTEX_A76 as u32, 0x602);
    // __PMC_STATES(), __PMC_MODES(), __PMC_DISPOSITIONS().
    assert_eq!(State::DISABLED as u32, 0);
    assert_eq!(State::RUNNING as u32, 4);
    assert_eq!(State::MAX as u32, 6);
    assert_eq!(Mode::SS as u32, 0);
    assert_eq!(Mode::TC as u32, 3);
    assert_eq!(Disp::STANDALONE as u32, 0);
    assert_eq!(Disp::UNKNOWN as u32, 3);
}

#[test]
fn flags_caps_events_version() {
    assert_eq!(PMC_F_DESCENDANTS, 0x2);
    assert_eq!(PMC_F_LOG_PROCEXIT, 0x8);
    assert_eq!(PMC_F_CALLCHAIN, 0x80);
    assert_eq!(PMC_F_USERCALLCHAIN, 0x100);
    assert_eq!(PMC_F_EV_PMU, 0x200);
    assert_eq!(PMC_F_NEEDS_LOGFILE, 0x20000);
    assert_eq!(PMC_CAP_INTERRUPT, 0x1);
    assert_eq!(PMC_CAP_READ, 0x20);
    assert_eq!(PMC_CAP_QUALIFIER, 0x100);
    assert_eq!(PMC_CAP_DOMWIDE, 0x2000);
    // pmc_events.h: TSC block 0x1000, K8 0x2080, IAF 0x10000, SOFT 0x20000.
    assert_eq!(PMC_EV_TSC_TSC, 0x1000);
    assert_eq!(PMC_EV_SOFT_LAST, 0x20FFF);
    assert_eq!(PMC_VERSION, 0x0A00_0000);
}

#[test]
fn pmc_id_macros() {
    // PMC_ID_MAKE_ID: CPU 12 bits << 20, MODE 4 << 16, CLASS 8 << 8, RI 8.
    let id = pmc_id_make(3, Mode::SC as u32, Class::IAP as u32, 5);
    assert_eq!(id, 0x0031_0705);
    assert_eq!(pmc_id_to_cpu(id), 3);
    assert_eq!(pmc_id_to_mode(id), 1);
    assert_eq!(pmc_id_to_class(id), 7);
    assert_eq!(pmc_id_to_rowindex(id), 5);
    // PMC_CPU_ANY (~0) keeps only its low 12 bits in the id.
    assert_eq!(pmc_id_to_cpu(pmc_id_make(PMC_CPU_ANY, 3, 0x0F, 0)), 0xFFF);
}

#[test]
fn freebsd_errno_numbers() {
    // sys/sys/errno.h (they differ from Linux for these).
    assert_eq!(Errno::EOPNOTSUPP.0, 45);
    assert_eq!(Errno::EPROGMISMATCH.0, 75);
    assert_eq!(Errno::ENOSYS.0, 78);
    assert_eq!(Errno::EDOOFUS.0, 88);
}
