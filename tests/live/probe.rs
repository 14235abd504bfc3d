//! The probe's answers, checked against `perf stat` on the same machine.

use pmc::probe::{Outcome, Report, Requirement as R};

use crate::ensure;
use crate::harness::{Context, LiveTest, TestResult, test};

pub fn tests() -> Vec<LiveTest> {
    vec![test(
        "probe::what_works_agrees_with_perf_stat",
        vec![R::Paranoid(2), R::Program("perf".into())],
        what_works_agrees_with_perf_stat,
    )]
}

/// Whether `perf stat -e event -- true` counted the event (`<not
/// supported>` and open errors mean no).
fn perf_supports(event: &str) -> Result<bool, libtest_mimic::Failed> {
    let out = std::process::Command::new("perf")
        .args(["stat", "-x,", "-e", event, "--", "true"])
        .output()
        .ctx("perf stat")?;
    let err = String::from_utf8_lossy(&out.stderr);
    let counted = err.lines().any(|l| {
        l.split(',')
            .next()
            .is_some_and(|v| v.trim().parse::<f64>().is_ok())
    });
    Ok(out.status.success() && counted)
}

fn what_works_agrees_with_perf_stat() -> TestResult {
    let report = Report::detect();
    let mut checked = 0;
    for row in &report.what_works {
        // Classes whose probe spec perf understands as is, in TC (perf
        // stat's per-task counting).
        let perf_event = match row.class.as_str() {
            "hardware" | "software" | "cache" | "raw" | "breakpoint" => row.spec.clone(),
            _ => continue,
        };
        let Some((_, ours)) = row.outcomes.iter().find(|(m, _)| *m == pmc::Mode::TC) else {
            continue;
        };
        let perf = perf_supports(&perf_event)?;
        // perf stat drops to user mode by itself where kernel counting is
        // forbidden; the probe reports that as "usr only".
        let ours_ok = matches!(ours, Outcome::Works | Outcome::UserOnly);
        println!(
            "{:<10} pmc probe: {ours_ok:<5} perf stat: {perf}",
            row.class
        );
        ensure!(
            ours_ok == perf,
            "{}: the probe says {ours:?} but perf stat says supported={perf}",
            row.class
        );
        checked += 1;
    }
    // Every one of the five classes perf stat can judge was compared (the
    // probe lists them whether they work here or not).
    ensure!(
        checked == 5,
        "{checked} of hardware/software/cache/raw/breakpoint compared"
    );
    Ok(())
}
