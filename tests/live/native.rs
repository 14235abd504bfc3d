//! Native (pmu-events) names on the real core PMU, against `perf stat`,
//! which resolves the same names from the same kernel JSON.

use pmc::probe::Requirement as R;
use pmc::{Cpu, Flags, Mode, Pmc};

use crate::ensure;
use crate::harness::{LiveTest, TestResult, test};

pub fn tests() -> Vec<LiveTest> {
    vec![test(
        "native::retired_instructions_by_native_name_agree_with_perf_stat",
        vec![
            R::HardwareCounting,
            R::Paranoid(2),
            R::Program("perf".into()),
        ],
        retired_instructions_by_native_name_agree_with_perf_stat,
    )]
}

/// `vendor_id` of /proc/cpuinfo.
fn cpu_vendor() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with("vendor_id"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim().to_string())
        .unwrap_or_default()
}

fn retired_instructions_by_native_name_agree_with_perf_stat() -> TestResult {
    // The core PMU first: without one, the failure is ours (ENXIO, "no
    // hardware PMU"), not perf's event syntax error.
    if let Err(e) = Pmc::allocate("instructions,usr", Mode::TC, Flags::empty(), Cpu::Any) {
        return Err(format!("the core PMU counts no instructions here: {e}").into());
    }
    let name = match cpu_vendor().as_str() {
        "GenuineIntel" => "inst_retired.any",
        "AuthenticAMD" if std::env::var_os(pmc_linux::pmu_events::TABLE_ENV).is_some() => {
            "ex_ret_instr"
        }
        "AuthenticAMD" => {
            // No AMD table ships: the name must be refused with the way
            // to get one, not silently miscounted; its encoding from
            // amdzen*/core.json (ex_ret_instr: EventCode 0xc0) in the PMU
            // form still counts what perf counts by name.
            let e = Pmc::allocate("ex_ret_instr", Mode::TC, Flags::empty(), Cpu::Any)
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default();
            ensure!(
                e.contains(pmc_linux::pmu_events::TABLE_ENV),
                "ex_ret_instr without an AMD table: {e:?}"
            );
            return crate::counting::agrees_with_perf_stat(
                "cpu/event=0xc0/,usr",
                "ex_ret_instr:u",
                "loop",
                "200000000",
                0.005,
            );
        }
        // Arm's architectural event INST_RETIRED (0x08): sysfs lists it
        // under every PMUv3 (`events/inst_retired`), as perf finds it.
        _ if cfg!(target_arch = "aarch64") => "inst_retired",
        other => {
            return Err(format!("no native instruction event known for vendor {other:?}").into());
        }
    };
    crate::counting::agrees_with_perf_stat(
        &format!("{name},usr"),
        &format!("{name}:u"),
        "loop",
        "200000000",
        0.005,
    )
}
