//! Native (pmu-events) event names: golden encodings of table entries on
//! fixture CPUs, each expected config written out from the kernel's JSON
//! entry (tools/perf/pmu-events/arch/x86/<model>/<file>.json, linux-source
//! 6.12) and the core PMU's format files.

use std::path::{Path, PathBuf};

use pmc_linux::pmu::{Pmu, core_pmus};
use pmc_linux::pmu_events::{EventTable, INTEL_TABLE};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// `name` of `table` on the fixture tree `tree`: (PMU name, config, config1)
/// of each placement.
fn encode(table: &EventTable, name: &str, tree: &str) -> Vec<(String, u64, u64)> {
    let cores = core_pmus(&fixture(tree));
    table
        .placements(name, &cores)
        .unwrap_or_else(|| panic!("{name} is not in the {} table", table.model()))
        .unwrap_or_else(|e| panic!("{name}: {e}"))
        .into_iter()
        .map(|(pmu, entry)| {
            let enc = pmu
                .encode(&entry.terms)
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            (pmu.name.clone(), enc.config[0], enc.config[1])
        })
        .collect()
}

fn one(table: &EventTable, name: &str, tree: &str) -> (u64, u64) {
    let v = encode(table, name, tree);
    assert_eq!(v.len(), 1, "{name}: {v:?}");
    (v[0].1, v[0].2)
}

fn skylake_sp() -> EventTable {
    EventTable::parse(INTEL_TABLE, "GenuineIntel-6-55-4")
        .unwrap()
        .expect("mapfile.csv: GenuineIntel-6-55-[01234] → skylakex")
}

// Bits from the fixture's format files (those of a Skylake-SP `cpu` PMU):
// event 0-7, umask 8-15, edge 18, any 21, inv 23, cmask 24-31; config1:
// offcore_rsp 0-63, ldlat 0-15, frontend 0-23.
const UMASK: u32 = 8;
const EDGE: u64 = 1 << 18;
const ANY: u64 = 1 << 21;
const INV: u64 = 1 << 23;
const CMASK: u32 = 24;

#[test]
fn skylake_sp_events_encode_from_their_json_entries() {
    let t = skylake_sp();
    assert_eq!(t.model(), "skylakex");
    // skylakex/pipeline.json INST_RETIRED.ANY is fixed counter 0; perf's
    // jevents.py `real_event` encodes it as event=0xc0.
    assert_eq!(one(&t, "inst_retired.any", "sysfs-intel-skx"), (0xc0, 0));
    // jevents.py `real_event`: CPU_CLK_UNHALTED.THREAD → event=0x3c, and
    // THREAD_ANY (pipeline.json AnyThread "1") adds any=1.
    assert_eq!(
        one(&t, "cpu_clk_unhalted.thread", "sysfs-intel-skx"),
        (0x3c, 0)
    );
    assert_eq!(
        one(&t, "CPU_CLK_UNHALTED.THREAD_ANY", "sysfs-intel-skx"),
        (0x3c | ANY, 0)
    );
    // pipeline.json ARITH.DIVIDER_ACTIVE: EventCode 0x14, UMask 0x1,
    // CounterMask 1.
    assert_eq!(
        one(&t, "arith.divider_active", "sysfs-intel-skx"),
        (0x14 | 1 << UMASK | 1 << CMASK, 0)
    );
    // pipeline.json UOPS_ISSUED.STALL_CYCLES: EventCode 0x0E, UMask 0x1,
    // CounterMask 1, Invert 1.
    assert_eq!(
        one(&t, "uops_issued.stall_cycles", "sysfs-intel-skx"),
        (0x0e | 1 << UMASK | 1 << CMASK | INV, 0)
    );
    // pipeline.json MACHINE_CLEARS.COUNT: EventCode 0xC3, UMask 0x1,
    // CounterMask 1, EdgeDetect 1.
    assert_eq!(
        one(&t, "machine_clears.count", "sysfs-intel-skx"),
        (0xc3 | 1 << UMASK | 1 << CMASK | EDGE, 0)
    );
    // cache.json OFFCORE_RESPONSE.DEMAND_DATA_RD.L3_HIT.ANY_SNOOP:
    // EventCode "0xB7, 0xBB" (the first), UMask 0x1, MSRIndex 0x1a6,0x1a7,
    // MSRValue 0x3F803C0001 → offcore_rsp (config1).
    assert_eq!(
        one(
            &t,
            "offcore_response.demand_data_rd.l3_hit.any_snoop",
            "sysfs-intel-skx"
        ),
        (0xb7 | 1 << UMASK, 0x3f_803c_0001)
    );
    // memory.json MEM_TRANS_RETIRED.LOAD_LATENCY_GT_4: EventCode 0xcd,
    // UMask 0x1, MSRIndex 0x3F6 (ldlat), MSRValue 0x4.
    assert_eq!(
        one(&t, "mem_trans_retired.load_latency_gt_4", "sysfs-intel-skx"),
        (0xcd | 1 << UMASK, 4)
    );
    // frontend.json FRONTEND_RETIRED.DSB_MISS: EventCode 0xC6, UMask 0x1,
    // MSRIndex 0x3F7 (frontend), MSRValue 0x11.
    assert_eq!(
        one(&t, "frontend_retired.dsb_miss", "sysfs-intel-skx"),
        (0xc6 | 1 << UMASK, 0x11)
    );
}

#[test]
fn every_skylake_sp_event_encodes_with_the_pmus_own_fields() {
    // Every term the generator wrote is a format field of the real PMU.
    let t = skylake_sp();
    let cpu = Pmu::find(&fixture("sysfs-intel-skx"), "cpu").unwrap();
    assert!(t.events().len() > 400, "{}", t.events().len());
    for e in t.events() {
        assert!(e.pmu.is_none(), "{}", e.name);
        cpu.encode(&e.terms)
            .unwrap_or_else(|err| panic!("{}: {err}", e.name));
    }
}

fn zen2() -> EventTable {
    let text = std::fs::read_to_string(fixture("pmu-events-amdzen2.txt")).unwrap();
    EventTable::load("AuthenticAMD-23-31-0", Some(&text)).expect("amdzen2 section")
}

#[test]
fn zen2_events_encode_through_the_split_event_select() {
    let t = zen2();
    assert_eq!(t.model(), "amdzen2");
    // amdzen2/memory.json ls_not_halted_cyc: EventCode 0x76.
    assert_eq!(one(&t, "ls_not_halted_cyc", "sysfs-amd"), (0x76, 0));
    // amdzen2/core.json ex_ret_instr: EventCode 0xc0.
    assert_eq!(one(&t, "ex_ret_instr", "sysfs-amd"), (0xc0, 0));
    // amdzen2/core.json ex_tagged_ibs_ops.ibs_count_rollover: EventCode
    // 0x1cf, UMask 0x04; the fixture's event=config:0-7,32-35 puts the
    // high nibble at bit 32.
    assert_eq!(
        one(&t, "ex_tagged_ibs_ops.ibs_count_rollover", "sysfs-amd"),
        (0xcf | 4 << UMASK | 1 << 32, 0)
    );
    // amdzen2/memory.json ls_tablewalker.iside: EventCode 0x46, UMask 0x0c.
    assert_eq!(
        one(&t, "ls_tablewalker.iside", "sysfs-amd"),
        (0x46 | 0xc << UMASK, 0)
    );
}

#[test]
fn amd_tables_come_only_from_an_external_file() {
    let text = std::fs::read_to_string(fixture("pmu-events-amdzen2.txt")).unwrap();
    // mapfile.csv: AuthenticAMD-23-([12][0-9A-F]|[0-9A-F]) → amdzen1 comes
    // first and takes model 0x1; model 0x31 falls to amdzen2.
    assert_eq!(
        EventTable::load("AuthenticAMD-23-1-2", Some(&text))
            .unwrap()
            .model(),
        "amdzen1"
    );
    assert_eq!(EventTable::load("AuthenticAMD-23-31-0", None), None);
    // An external table without the model leaves the built-in one.
    assert_eq!(
        EventTable::load("GenuineIntel-6-55-4", Some(&text))
            .unwrap()
            .model(),
        "skylakex"
    );
}

#[test]
fn hybrid_events_go_to_each_core_pmu() {
    let adl = EventTable::parse(INTEL_TABLE, "GenuineIntel-6-97-2")
        .unwrap()
        .unwrap();
    let mut v = encode(&adl, "inst_retired.any", "sysfs-hybrid");
    v.sort();
    assert_eq!(
        v,
        [
            ("cpu_atom".to_string(), 0xc0, 0),
            ("cpu_core".to_string(), 0xc0, 0)
        ]
    );
    // An event of one kind of core only goes to that PMU: alderlake's
    // TOPDOWN.SLOTS is a cpu_core event.
    let v = encode(&adl, "topdown.slots", "sysfs-hybrid");
    assert_eq!(v.len(), 1);
    assert_eq!(v[0].0, "cpu_core");
}

#[test]
fn a_machine_without_a_core_pmu_gets_a_reason() {
    let t = skylake_sp();
    let e = t
        .placements("inst_retired.any", &[])
        .unwrap()
        .unwrap_err()
        .to_string();
    assert!(e.contains("no core PMU"), "{e}");
}

#[test]
fn every_model_of_the_table_encodes_with_intel_format_fields() {
    // The generator writes only the fields jevents.py maps for core events
    // (event, umask, cmask, inv, edge, any, offcore_rsp, ldlat, frontend),
    // each within the widths of the Intel core PMU's format files.
    let cpu = Pmu::find(&fixture("sysfs-intel-skx"), "cpu").unwrap();
    let models = EventTable::parse_all(INTEL_TABLE).unwrap();
    assert_eq!(
        models.len(),
        37,
        "Intel core rows of linux 6.12 mapfile.csv"
    );
    let mut events = 0;
    for (pattern, table) in &models {
        assert!(pattern.starts_with("GenuineIntel-"), "{pattern}");
        assert!(!table.events().is_empty(), "{}", table.model());
        for e in table.events() {
            cpu.encode(&e.terms)
                .unwrap_or_else(|err| panic!("{} {}: {err}", table.model(), e.name));
        }
        events += table.events().len();
    }
    assert_eq!(events, 15479);
}
