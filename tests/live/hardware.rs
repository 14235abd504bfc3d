//! The core PMU through every specifier form: the generic name, the PMU's
//! format fields, its sysfs alias and the raw code all count the same
//! retired instructions. Skipped without a counting PMU; `cargo xtask test
//! --vm arm64` runs it on QEMU's PMUv3 (`armv8_pmuv3/event=0x08/`, `r08`,
//! `armv8_pmuv3/inst_retired/`).

use pmc::probe::Requirement as R;
use pmc::{Cpu, Flags, Mode, Pmc};

use crate::ensure;
use crate::harness::{Context, LiveTest, TestResult, test};

pub fn tests() -> Vec<LiveTest> {
    vec![test(
        "hardware::every_specifier_form_of_retired_instructions_counts_the_same_work",
        vec![R::HardwareCounting, R::Paranoid(2)],
        every_specifier_form_of_retired_instructions_counts_the_same_work,
    )]
}

/// A core PMU's sysfs alias for retired instructions and its terms, read
/// from sysfs (`events/inst_retired` on Arm, `events/instructions` on x86).
fn instructions_alias() -> Option<(String, String, String)> {
    let root = std::path::Path::new("/sys/bus/event_source/devices");
    let env = crate::machine::environment();
    env.pmus
        .iter()
        .filter(|p| pmc::probe::is_core_pmu(p))
        .find_map(|pmu| {
            ["inst_retired", "instructions"].iter().find_map(|alias| {
                let terms =
                    std::fs::read_to_string(root.join(pmu).join("events").join(alias)).ok()?;
                Some((pmu.clone(), alias.to_string(), terms.trim().to_string()))
            })
        })
}

/// The raw code of terms that set only `event` (bits from 0 in every core
/// PMU's format: config:0-7 on x86, config:0-15 on Arm).
fn raw_code(terms: &str) -> Option<u64> {
    let value = terms.strip_prefix("event=")?;
    if value.contains(',') {
        return None;
    }
    u64::from_str_radix(value.trim_start_matches("0x"), 16).ok()
}

fn count(spec: &str) -> Result<u64, libtest_mimic::Failed> {
    let mut pmc = Pmc::allocate(spec, Mode::TC, Flags::empty(), Cpu::Any).ctx(spec)?;
    pmc.start().ctx("start")?;
    std::hint::black_box(crate::workloads::known_loop(2_000_000));
    pmc.stop().ctx("stop")?;
    pmc.read().ctx("read")
}

fn every_specifier_form_of_retired_instructions_counts_the_same_work() -> TestResult {
    let (pmu, alias, terms) = instructions_alias()
        .ok_or("no hardware PMU: no core PMU in sysfs lists inst_retired or instructions")?;
    let mut specs = vec![format!("{pmu}/{terms}/,usr"), format!("{pmu}/{alias}/,usr")];
    if let Some(code) = raw_code(&terms) {
        specs.push(format!("r{code:02x},usr"));
    }
    let generic = count("instructions,usr")?;
    // Two million iterations of a few instructions each, plus the calls
    // around start and stop.
    ensure!(
        generic > 2_000_000,
        "instructions,usr counted {generic} for 2 000 000 iterations"
    );
    println!("instructions,usr: {generic}");
    for spec in &specs {
        let n = count(spec)?;
        let diff = (n as f64 - generic as f64).abs() / generic as f64;
        println!("{spec}: {n} ({:+})", n as i64 - generic as i64);
        ensure!(
            diff < 0.005,
            "{spec} counted {n}, instructions,usr {generic}: {:.3}% apart",
            diff * 100.0
        );
    }
    Ok(())
}
