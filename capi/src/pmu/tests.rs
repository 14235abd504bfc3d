//! The pmu-events list and pmcallocate against FreeBSD's libpmc_pmu_util.c.

use super::*;
use pmc_linux::pmu_events::EventTable;
use std::path::Path;

const SKX: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../backends/linux/tests/fixtures/sysfs-intel-skx"
);

fn skx() -> PmuList {
    let core = pmc_linux::pmu::core_pmus(Path::new(SKX));
    assert!(!core.is_empty(), "the fixture has a core PMU");
    // Skylake server (family 6, model 0x55) has a table.
    let table = EventTable::for_cpuid("GenuineIntel-6-55-4").expect("skx table");
    PmuList::from_parts(&core, Some(&table), Vendor::Intel)
}

#[test]
fn the_list_is_sysfs_events_then_the_table() {
    let l = skx();
    let first = l.events.first().unwrap().name.to_str().unwrap().to_string();
    assert!(first.starts_with("cpu/") && first.ends_with('/'), "{first}");
    assert!(l.find("inst_retired.any").is_some());
    // libpmc compares names case-insensitively.
    let (i, e) = l.find("INST_RETIRED.ANY").unwrap();
    assert_eq!(e.name.to_str().unwrap(), "inst_retired.any");
    assert_eq!(l.events[i].name, e.name);
}

#[test]
fn print_formats_are_libpmcs() {
    let l = skx();
    // libpmc_pmu_util.c pmc_pmu_print_counters: "\t%s\n".
    let t = counters_text(&l, Some("INST_RETIRED.ANY"));
    assert!(t.lines().any(|x| x == "\tinst_retired.any"), "{t}");
    assert!(t.lines().all(|x| x.starts_with('\t')));
    // pmc_pmu_print_counter_full: "name: %s\n", "event: %s\n", "pmu: %s\n".
    let f = full_text(&l, Some("inst_retired.any_p"));
    let lines: Vec<&str> = f.lines().collect();
    assert_eq!(lines[0], "name: inst_retired.any_p");
    assert!(lines[1].starts_with("event: event=0xc0"), "{f}");
    assert_eq!(lines[2], "pmu: cpu");
    assert_eq!(desc_text(&l, Some("inst")), "");
}

#[test]
fn pmcallocate_encodes_as_libpmc() {
    let l = skx();
    let mut pm = request(CAP_USER);
    // libpmc_pmu_util.c pmc_pmu_intel_pmcallocate: no umask is the
    // fixed-function class, without QUALIFIER.
    assert_eq!(l.pmcallocate("br_inst_retired.all_branches", &mut pm), 0);
    let (idx, _) = l.find("br_inst_retired.all_branches").unwrap();
    assert_eq!(pm.pm_ev, idx as u32);
    assert_eq!(pm.pm_class, class::IAF);
    assert_eq!(pm.pm_caps, CAP_USER | CAP_READ | CAP_WRITE);
    // event=0xc4, IAP_USR (1 << 16) for PMC_CAP_USER alone.
    assert_eq!(crate::sys::iap_config(&pm.pm_md), 0xc4 | 1 << 16);
    // A umask: IAP, QUALIFIER, IAP_UMASK(1) = 1 << 8; no user/system
    // caps is both IAP_USR and IAP_OS.
    pm.pm_caps = 0;
    assert_eq!(l.pmcallocate("BR_INST_RETIRED.CONDITIONAL", &mut pm), 0);
    assert_eq!(pm.pm_class, class::IAP);
    assert_eq!(pm.pm_caps, CAP_READ | CAP_WRITE | CAP_QUALIFIER);
    assert_eq!(
        crate::sys::iap_config(&pm.pm_md),
        0xc4 | 1 << 8 | 1 << 16 | 1 << 17
    );
    // An unknown name: ENOENT.
    assert_eq!(l.pmcallocate("no.such.event", &mut pm), libc::ENOENT);
    // No vendor: ENOENT, as libpmc without kern.hwpmc.cpuid.
    let none = PmuList::default();
    assert_eq!(none.pmcallocate("inst_retired.any", &mut pm), libc::ENOENT);
}

// sys/sys/pmc.h __PMC_CAPS(): the bits as FreeBSD numbers them, not
// this file's constants (which the tests check).
const INTERRUPT: u32 = 1 << 0;
const USER: u32 = 1 << 1;
const SYSTEM: u32 = 1 << 2;
const READ_WRITE: u32 = 1 << 5 | 1 << 6;
const QUALIFIER: u32 = 1 << 8;

fn list(vendor: Vendor, events: &[(&str, &str)]) -> PmuList {
    PmuList {
        events: events
            .iter()
            .map(|(name, event)| PmuEvent {
                name: cstring(name),
                event: (*event).into(),
                pmu: "cpu".into(),
            })
            .collect(),
        vendor,
    }
}

fn request(caps: u32) -> pmc_op_pmcallocate {
    pmc_op_pmcallocate {
        pm_caps: caps,
        pm_cpu: 0,
        pm_class: 0,
        pm_ev: 0,
        pm_flags: 0,
        pm_mode: 3,
        pm_pmcid: 0,
        pm_count: 0,
        pm_md: pmc_md_op_pmcallocate { __pad: [7; 4] },
    }
}

/// libpmc_pmu_util.c `pmc_pmu_intel_pmcallocate`, bit by bit, with
/// hwpmc_core.h's IAP_EVSEL (& 0xFF), IAP_UMASK (<< 8), IAP_USR
/// (1 << 16), IAP_OS (1 << 17), IAP_EDGE (1 << 18), IAP_INT (1 << 20),
/// IAP_ANY (1 << 21), IAP_CMASK (<< 24): `inv` sets IAP_EDGE too;
/// "UNC_" names and "uncore" ones are UCP with QUALIFIER; event 0 with
/// umask 3 is IAF, as is an event without umask; an offcore response
/// goes to pm_iap_rsp.
#[test]
fn intel_pmcallocate_sets_libpmcs_bits() {
    let l = list(
        Vendor::Intel,
        &[
            ("x.all", "event=0x3c,umask=0x2,cmask=3,edge=1,any=1"),
            ("x.inv", "event=0xa3,umask=0x1,inv=1"),
            ("x.zero", "event=0x0,umask=0x3"),
            ("x.umask3", "event=0x3c,umask=0x3"),
            ("x.event0", "event=0x0,umask=0x1"),
            ("UNC_M_CAS_COUNT.RD", "event=0x4,umask=0x3"),
            ("x.uncore_thing", "event=0x5,umask=0x1"),
            ("x.rsp", "event=0xb7,umask=0x1,offcore_rsp=0x10001"),
        ],
    );
    let mut pm = request(INTERRUPT | SYSTEM);
    assert_eq!(l.pmcallocate("x.all", &mut pm), 0);
    assert_eq!(pm.pm_class, class::IAP);
    assert_eq!(pm.pm_caps, INTERRUPT | SYSTEM | READ_WRITE | QUALIFIER);
    assert_eq!(
        crate::sys::iap_config(&pm.pm_md),
        0x3c | 2 << 8 | 3 << 24 | 1 << 17 | 1 << 18 | 1 << 21 | 1 << 20
    );
    let mut pm = request(USER | SYSTEM);
    assert_eq!(l.pmcallocate("x.inv", &mut pm), 0);
    assert_eq!(
        crate::sys::iap_config(&pm.pm_md),
        0xa3 | 1 << 8 | 1 << 16 | 1 << 17 | 1 << 18
    );
    let mut pm = request(0);
    assert_eq!(l.pmcallocate("x.zero", &mut pm), 0);
    assert_eq!(pm.pm_class, class::IAF);
    assert_eq!(pm.pm_caps, READ_WRITE);
    // Only both together: umask 3 of another event, or event 0 with
    // another umask, is programmable.
    for iap in ["x.umask3", "x.event0"] {
        let mut pm = request(0);
        assert_eq!(l.pmcallocate(iap, &mut pm), 0);
        assert_eq!(pm.pm_class, class::IAP, "{iap}");
    }
    for uncore in ["UNC_M_CAS_COUNT.RD", "x.uncore_thing"] {
        let mut pm = request(0);
        assert_eq!(l.pmcallocate(uncore, &mut pm), 0);
        assert_eq!(pm.pm_class, class::UCP, "{uncore}");
        assert_eq!(pm.pm_caps, READ_WRITE | QUALIFIER);
    }
    let mut pm = request(0);
    assert_eq!(l.pmcallocate("x.rsp", &mut pm), 0);
    assert_eq!(crate::sys::iap_rsp(&pm.pm_md), 0x10001);
}

/// libpmc_pmu_util.c `pmc_pmu_amd_pmcallocate` for a core event, with
/// hwpmc_amd.h's AMD_PMC_TO_UNITMASK ((x << 8) & 0xFF00),
/// AMD_PMC_TO_EVENTMASK ((x & 0xFF) | (x & 0xF00) << 24), USR/OS/EDGE/
/// INT at bits 16/17/18/20: class K8, QUALIFIER only with a umask.
#[test]
fn amd_pmcallocate_sets_libpmcs_bits() {
    let l = list(
        Vendor::Amd,
        &[
            ("ex_big", "event=0x1c0,umask=0x4,edge=1"),
            ("ex_plain", "event=0x76"),
            ("ex_inv", "event=0x10,inv=1"),
        ],
    );
    let mut pm = request(USER | INTERRUPT);
    assert_eq!(l.pmcallocate("ex_big", &mut pm), 0);
    assert_eq!(pm.pm_class, class::K8);
    assert_eq!(pm.pm_caps, USER | INTERRUPT | READ_WRITE | QUALIFIER);
    assert_eq!(
        crate::sys::amd_config(&pm.pm_md),
        (0xc0 | 0x1 << 32 | 4 << 8 | 1 << 16 | 1 << 18 | 1 << 20, 0)
    );
    let mut pm = request(SYSTEM);
    assert_eq!(l.pmcallocate("ex_plain", &mut pm), 0);
    assert_eq!(pm.pm_caps, SYSTEM | READ_WRITE);
    assert_eq!(crate::sys::amd_config(&pm.pm_md), (0x76 | 1 << 17, 0));
    let mut pm = request(0);
    assert_eq!(l.pmcallocate("ex_inv", &mut pm), 0);
    assert_eq!(
        crate::sys::amd_config(&pm.pm_md),
        (0x10 | 1 << 16 | 1 << 17 | 1 << 18, 0)
    );
}

/// A hybrid model's table lists a name once per core PMU; the list
/// keeps one entry per name, in the table's order (`from_table`), and
/// another model's list is its table, not this machine's.
#[test]
fn another_models_list_is_its_table_once_per_name() {
    let id = "GenuineIntel-6-97-2"; // Alder Lake: cpu_core and cpu_atom
    let table = EventTable::for_cpuid(id).expect("an Alder Lake table");
    let l = PmuList::from_table(&table, Vendor::Intel);
    let names: Vec<&CStr> = l.events.iter().map(|e| e.name.as_c_str()).collect();
    assert!(names.len() > 100, "{} names", names.len());
    assert!(
        names.windows(2).all(|w| w[0] != w[1]),
        "a name twice in a row"
    );
    let mut distinct = Vec::new();
    for e in table.events() {
        if distinct.last() != Some(&e.name) {
            distinct.push(e.name.clone());
        }
    }
    assert_eq!(names.len(), distinct.len());
    // Not the host's list, whatever this machine is.
    let other = if pmc_linux::pmu_events::host_cpuid() == Some(id) {
        "GenuineIntel-6-55-4"
    } else {
        id
    };
    let got = for_cpuid(Some(other)).expect("a table for the model");
    let want = PmuList::from_table(&EventTable::for_cpuid(other).unwrap(), Vendor::Intel);
    assert_eq!(got.events.len(), want.events.len());
    assert_eq!(got.vendor, Vendor::Intel);
    // Lists are kept per model: asked again after another one, each
    // model still gets its own. Haswell, unless this machine is one
    // (only Intel tables ship: an AMD cpuid has a list only as the
    // host's, so the second model cannot be AMD's on every machine).
    let second = if pmc_linux::pmu_events::host_cpuid() == Some("GenuineIntel-6-3C-3") {
        "GenuineIntel-6-3F-2"
    } else {
        "GenuineIntel-6-3C-3"
    };
    let haswell = for_cpuid(Some(second)).expect("a Haswell list");
    assert_ne!(haswell.events.len(), want.events.len());
    let again = for_cpuid(Some(other)).unwrap();
    assert_eq!(again.events.len(), want.events.len());
    assert_eq!(again.vendor, Vendor::Intel);
    assert_eq!(
        for_cpuid(Some(second)).unwrap().events.len(),
        haswell.events.len()
    );
    // An AMD model other than this machine's has no table here.
    let amd = "AuthenticAMD-25-1-1";
    if pmc_linux::pmu_events::host_cpuid() != Some(amd) {
        assert!(for_cpuid(Some(amd)).is_none());
    }
}

#[test]
fn sample_rate_is_the_period_or_libpmcs_default() {
    let l = skx();
    assert_eq!(l.sample_rate("no.such.event"), DEFAULT_SAMPLE_COUNT);
    let with_period = PmuEvent {
        name: c"x.y".into(),
        event: "event=0x3c,period=2000003".into(),
        pmu: "cpu".into(),
    };
    let l2 = PmuList {
        events: vec![with_period],
        vendor: Vendor::Intel,
    };
    assert_eq!(l2.sample_rate("X.Y"), 2_000_003);
}

#[test]
fn aliases_are_the_vendors() {
    let l = skx();
    assert_eq!(l.alias("llc-misses"), "LONGEST_LAT_CACHE.MISS");
    assert_eq!(l.alias("inst_retired.any"), "inst_retired.any");
    let amd = PmuList {
        events: vec![],
        vendor: Vendor::Amd,
    };
    assert_eq!(amd.alias("unhalted-core-cycles"), "ls_not_halted_cyc");
    assert_eq!(amd.alias("llc-misses"), "llc-misses");
    assert_eq!(Vendor::of_cpuid("AuthenticAMD-25-1-1"), Vendor::Amd);
}

/// This machine's list has the raw class's names, in its order.
#[test]
fn host_list_is_the_raw_listing() {
    let raw = pmc_core::event_names_of_class(&pmc_core::Class::Raw).unwrap_or_default();
    let ours: Vec<String> = host()
        .events
        .iter()
        .map(|e| e.name.to_string_lossy().into_owned())
        .collect();
    let want: Vec<String> = raw.into_iter().filter(|n| !n.starts_with("r<")).collect();
    assert_eq!(ours, want);
}

/// The aarch64 `pmc_pmu_pmcallocate_md` (libpmc_pmu_util.c): the
/// `pmu_armv8_alias_table` name (`instructions` is INST_RETIRED), the
/// entry's index as `pm_ev`, its `event=` in `pm_md_config`, class ARMV8
/// (0x11), READ and WRITE added to the caller's caps; an unknown name is
/// ENOENT.
#[test]
fn arm64_pmcallocate_is_libpmcs() {
    let event = |name: &'static std::ffi::CStr, event: &str| PmuEvent {
        name: name.into(),
        event: event.into(),
        pmu: "armv8_pmuv3".into(),
    };
    let l = PmuList {
        events: vec![
            event(c"armv8_pmuv3/cpu_cycles/", "event=0x11"),
            event(c"INST_RETIRED", "event=0x08"),
        ],
        vendor: Vendor::Arm,
    };
    let mut pm = pmc_op_pmcallocate {
        pm_caps: CAP_USER,
        pm_cpu: 0,
        pm_class: 0,
        pm_ev: 0,
        pm_flags: 0,
        pm_mode: 0,
        pm_pmcid: 0,
        pm_count: 0,
        pm_md: pmc_md_op_pmcallocate { __pad: [0; 4] },
    };
    assert_eq!(l.pmcallocate("instructions", &mut pm), 0);
    assert_eq!((pm.pm_ev, pm.pm_class), (1, 0x11));
    assert_eq!(pm.pm_caps, CAP_USER | CAP_READ | CAP_WRITE);
    assert_eq!(crate::sys::md_config(&pm.pm_md), 0x08);
    assert_eq!(l.pmcallocate("no_such_event", &mut pm), libc::ENOENT);
}
