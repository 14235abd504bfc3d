//! pmcstat's sampling period without `-n`: 250000 ns for an event that
//! counts time (perf record's 4 kHz), FreeBSD's 65536 for a counted event;
//! `-n` overrides both. Each run says its period with `-v`, and the samples
//! the log holds are checked against the workload's own CPU time.

use pmc::probe::Requirement as R;

use crate::ensure;
use crate::harness::{Context, LiveTest, TestResult, test};
use crate::lost_samples::{pmcstat, recorded_and_lost};
use crate::temp::TempDir;

pub fn tests() -> Vec<LiveTest> {
    vec![
        test(
            "default_rates::a_clock_samples_every_250000_ns_without_n",
            vec![R::Paranoid(2)],
            a_clock_samples_every_250000_ns_without_n,
        ),
        test(
            "default_rates::n_overrides_the_clocks_default",
            vec![R::Paranoid(2)],
            n_overrides_the_clocks_default,
        ),
        test(
            "default_rates::a_counted_event_keeps_65536_without_n",
            vec![R::Paranoid(2)],
            a_counted_event_keeps_65536_without_n,
        ),
    ]
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// `-P SPEC` (after `before`) of the spinning workload: what -v said of
/// the period, the samples logged and the workload's own CPU time (ns).
fn sample_spin(before: &[&str], spec: &str) -> Result<(String, u64, u64), libtest_mimic::Failed> {
    let dir = TempDir::new("rates")?;
    let log = dir.path("spin.pmclog");
    let exe = std::env::current_exe().ctx("current_exe")?;
    let exe = exe.to_string_lossy();
    let mut args = vec!["-v"];
    args.extend_from_slice(before);
    args.extend(["-P", spec, "-O", &log, "--", &exe, "600"]);
    let out = pmcstat(&args, "spin")?;
    let usage = crate::workloads::Usage::parse(&text(&out.stdout))
        .ok_or_else(|| format!("no usage line from the workload: {}", text(&out.stdout)))?;
    let said = text(&out.stderr)
        .lines()
        .find(|l| l.contains("a sample every"))
        .map(str::to_string)
        .ok_or_else(|| format!("-v said no period:\n{}", text(&out.stderr)))?;
    Ok((said, recorded_and_lost(&log)?.0, usage.own_cpu_ns))
}

/// `-P cpu-clock` samples once per 250 µs of the workload's CPU time:
/// the count is that time over 250000 ns, give or take half (a late timer
/// skips periods; the user-only fallback at paranoid 2 misses the kernel's
/// part), and far from the 3.8 times more that 65536 ns would give.
fn a_clock_samples_every_250000_ns_without_n() -> TestResult {
    let (said, samples, cpu_ns) = sample_spin(&[], "cpu-clock")?;
    println!("{said}; {samples} samples over {cpu_ns} ns of CPU");
    ensure!(
        said.contains("a sample every 250000 ns"),
        "cpu-clock's default period: {said}"
    );
    let periods = cpu_ns / 250_000;
    ensure!(
        (periods / 2..=periods * 3 / 2 + 2).contains(&samples),
        "{samples} samples over {cpu_ns} ns of CPU: one per 250000 ns is {periods}"
    );
    Ok(())
}

/// `-n 1000` before `-P cpu-clock` is the period asked for (the kernel
/// sets a floor of 10 µs on its timer), far more samples than the default.
fn n_overrides_the_clocks_default() -> TestResult {
    let (said, samples, cpu_ns) = sample_spin(&["-n", "1000"], "cpu-clock")?;
    println!("{said}; {samples} samples over {cpu_ns} ns of CPU");
    ensure!(
        said.contains("a sample every 1000 ns (given by -n)"),
        "-n 1000: {said}"
    );
    let at_default = cpu_ns / 250_000;
    ensure!(
        samples > 5 * at_default,
        "{samples} samples over {cpu_ns} ns of CPU at -n 1000: no more than the \
         default's {at_default}"
    );
    Ok(())
}

/// A counted event (page faults) keeps FreeBSD's 65536, in both modes.
fn a_counted_event_keeps_65536_without_n() -> TestResult {
    let dir = TempDir::new("rates")?;
    let log = dir.path("faults.pmclog");
    let exe = std::env::current_exe().ctx("current_exe")?;
    let exe = exe.to_string_lossy();
    for spec in ["page-faults", "context-switches,usr"] {
        let out = pmcstat(
            &["-v", "-P", spec, "-O", &log, "--", &exe, "1000"],
            "touch-handshake",
        )?;
        let stderr = text(&out.stderr);
        ensure!(
            stderr.contains(&format!(
                "-P {spec}: a sample every 65536 events (the default for a counted event"
            )),
            "{spec}'s default period:\n{stderr}"
        );
    }
    Ok(())
}
