//! Sysfs PMUs: golden encodings on fixture trees, and the real sysfs here.

use std::path::{Path, PathBuf};

use pmc_linux::pmu::{Pmu, Term, TermValue, core_pmus};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn terms(text: &str) -> Vec<Term> {
    pmc_linux::pmu::parse_terms(text).unwrap()
}

#[test]
fn amd_split_event_select_encodes_high_bits() {
    let cpu = Pmu::find(&fixture("sysfs-amd"), "cpu").unwrap();
    assert_eq!(cpu.type_id, 4);
    assert_eq!(
        cpu.encode(&terms("event=0x1c7")).unwrap().config[0],
        0x1_0000_00c7
    );
    let e = cpu
        .encode(&terms("event=0xc0,umask=0x1,cmask=1,edge,inv"))
        .unwrap();
    assert_eq!(e.config[0], 0xc0 | 0x1 << 8 | 1 << 24 | 1 << 18 | 1 << 23);
    assert_eq!(cpu.mux_interval_ms, Some(4));
    assert_eq!(cpu.caps.get("max_precise").map(String::as_str), Some("0"));
}

#[test]
fn aliases_expand_and_later_terms_override() {
    let cpu = Pmu::find(&fixture("sysfs-amd"), "cpu").unwrap();
    assert_eq!(cpu.encode(&terms("instructions")).unwrap().config[0], 0xc0);
    assert_eq!(
        cpu.encode(&terms("cache-misses,umask=0x1")).unwrap().config[0],
        0x64 | 0x1 << 8
    );
    assert_eq!(
        cpu.encode(&terms("config=0x1234")).unwrap().config[0],
        0x1234
    );
}

#[test]
fn unknown_terms_and_overwide_values_name_the_alternatives() {
    let cpu = Pmu::find(&fixture("sysfs-amd"), "cpu").unwrap();
    let e = cpu.encode(&terms("evnt=1")).unwrap_err().to_string();
    assert!(e.contains("event"), "{e}");
    let e = cpu.encode(&terms("umask=0x100")).unwrap_err().to_string();
    assert!(e.contains("8 bits") && e.contains("0xff"), "{e}");
    let e = cpu
        .encode(&[Term::new("event", TermValue::Str("x".into()))])
        .unwrap_err()
        .to_string();
    assert!(e.contains("number"), "{e}");
    let e = Pmu::find(&fixture("sysfs-amd"), "cpux")
        .unwrap_err()
        .to_string();
    assert!(e.contains("cpu"), "{e}");
}

#[test]
fn uncore_cpumask_scale_unit_and_probe_formats() {
    let root = fixture("sysfs-amd");
    let df = Pmu::find(&root, "amd_df").unwrap();
    assert_eq!(df.cpus, Some(vec![0, 8]));
    assert_eq!(
        df.encode(&terms("dram_channel_data_controller_0"))
            .unwrap()
            .config[0],
        0x007 | 0x38 << 8
    );
    let power = Pmu::find(&root, "power").unwrap();
    let energy = power.alias("energy-pkg").unwrap();
    assert_eq!(energy.unit.as_deref(), Some("Joules"));
    assert!((energy.scale.unwrap() - 2.3283064365386963e-10).abs() < 1e-20);
    let uprobe = Pmu::find(&root, "uprobe").unwrap();
    assert_eq!(uprobe.encode(&terms("retprobe")).unwrap().config[0], 1);
    assert_eq!(
        uprobe.encode(&terms("ref_ctr_offset=0x10")).unwrap().config[0],
        0x10 << 32
    );
}

#[test]
fn hybrid_core_pmus_are_found_with_their_cpus() {
    let cores = core_pmus(&fixture("sysfs-hybrid"));
    let names: Vec<_> = cores.iter().map(|p| (p.name.as_str(), p.type_id)).collect();
    assert_eq!(names, vec![("cpu_atom", 10), ("cpu_core", 4)]);
    assert_eq!(cores[1].cpus, Some((0..8).collect()));
    assert_eq!(cores[0].cpus, Some((8..16).collect()));
    assert!(
        core_pmus(&fixture("sysfs-amd"))
            .iter()
            .any(|p| p.name == "cpu")
    );
}
