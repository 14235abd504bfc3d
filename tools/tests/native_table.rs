//! `PMC_PMU_EVENTS`: a locally generated native event table (what AMD
//! users make with `cargo xtask gen-pmu-events --vendor amd`) reaches
//! pmcstat's event resolution and its suggestions.

use std::path::Path;
use std::process::Command;

/// pmcstat `-p name true` with the table at `table` (if any): (success,
/// stderr).
fn pmcstat(name: &str, table: Option<&Path>) -> (bool, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_pmcstat"));
    cmd.args(["-p", name, "true"]);
    cmd.env_remove("PMC_PMU_EVENTS");
    if let Some(t) = table {
        cmd.env("PMC_PMU_EVENTS", t);
    }
    let out = cmd.output().expect("run pmcstat");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn an_external_table_reaches_resolution_and_suggestions() {
    let dir = std::env::temp_dir().join(format!("pmc-native-table-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let table = dir.join("table.txt");
    // One section whose pattern matches every CPU.
    std::fs::write(
        &table,
        ">anycpu\t.*\tv0\npmc_test.retired_instructions\tevent=0xc0\n",
    )
    .unwrap();
    let name = "pmc_test.retired_instructions";
    let without = pmcstat(name, None);
    let with = pmcstat(name, Some(&table));
    let typo = pmcstat("pmc_test.retired_instruction", Some(&table));
    std::fs::remove_dir_all(&dir).unwrap();

    assert!(!without.0, "{without:?}");
    assert!(without.1.contains("not a generic name"), "{}", without.1);
    assert!(
        typo.1.contains("closest: pmc_test.retired_instructions"),
        "{}",
        typo.1
    );
    assert!(!with.1.contains("not a generic name"), "{}", with.1);
    // Without a core PMU the name is known but has nowhere to count.
    if !Path::new("/sys/bus/event_source/devices/cpu").exists() {
        assert!(!with.0);
        assert!(
            with.1.contains("anycpu") && with.1.contains("no core PMU"),
            "{}",
            with.1
        );
    }
}
