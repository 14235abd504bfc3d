//! `cargo xtask bench`'s rates benchmark (issue 36 §2 and §4): what
//! pmcstat's default sampling rate costs a workload, and what `pmcstat -T`
//! costs at `-w 1`.
//!
//! - `dash_cpu_default`: CPU time (user + system, every process of the
//!   run) of Debian's dash running a busy script alone, under `pmcstat -P
//!   cpu-clock` at FreeBSD's count (65536 ns, the default before), at
//!   today's default (250000 ns for a clock) and under `perf record -e
//!   cpu-clock` at its default (4 kHz). Target: pmcstat's default ≤ perf's.
//! - `top_refresh_cpu_pct`: pmcstat's own CPU time over the wall time of
//!   `pmcstat -T -w 1` (attached with -t to the dash loop, and
//!   system-wide), in percent of one CPU; beside it the workload's. Target:
//!   ≤ 5 %.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Iterations of the busy script: about 1.5 s of dash.
const LOOPS: u32 = 1_000_000;
/// Rounds of each run; the least CPU time of each is kept.
const ROUNDS: usize = 3;
/// Wall time of each `-T` run: about this many refreshes at `-w 1`.
const TOP_SECS: u64 = 10;

/// Runs the benchmark and prints its figures; skips (with the reason)
/// when dash or perf is missing. `pmcstat` is the release build.
pub fn run(pmcstat: &Path) -> Result<(), String> {
    crate::bench_report::in_scratch_dir("rates benchmark", &["dash", "perf", "timeout"], |dir| {
        run_in(dir, pmcstat)
    })
}

/// CPU time (user + system) of the children waited for so far.
fn children_cpu() -> Result<Duration, String> {
    use nix::sys::resource::{UsageWho, getrusage};
    let u = getrusage(UsageWho::RUSAGE_CHILDREN).map_err(|e| format!("getrusage: {e}"))?;
    let d = |t: nix::sys::time::TimeVal| {
        Duration::new(t.tv_sec().max(0) as u64, (t.tv_usec().max(0) as u32) * 1000)
    };
    Ok(d(u.user_time()) + d(u.system_time()))
}

/// Runs `argv` to its end; its CPU time and every waited descendant's.
fn cpu_of(argv: &[&str]) -> Result<Duration, String> {
    let before = children_cpu()?;
    let status = Command::new(argv[0])
        .args(&argv[1..])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map_err(|e| format!("{}: {e}", argv[0]))?;
    if !status.success() {
        return Err(format!("`{}` failed ({status})", argv.join(" ")));
    }
    Ok(children_cpu()? - before)
}

/// The least CPU time of [`ROUNDS`] runs of each command, run in turn per
/// round so that the machine's load falls on all alike.
fn least_cpu(commands: &[Vec<String>]) -> Result<Vec<f64>, String> {
    let mut best = vec![f64::INFINITY; commands.len()];
    for _ in 0..ROUNDS {
        for (i, c) in commands.iter().enumerate() {
            let argv: Vec<&str> = c.iter().map(String::as_str).collect();
            best[i] = best[i].min(cpu_of(&argv)?.as_secs_f64());
        }
    }
    Ok(best)
}

/// One figure: printed, and kept (`bench_summary::record`).
fn report(figure: &str, ours: f64, baseline: f64, unit: &str, target: &str, met: bool) {
    let ratio = ours / baseline;
    println!(
        "  {figure}: {ours:.3} {unit} vs {baseline:.3} {unit}, ratio {ratio:.3} [{target}: {}]",
        if met { "met" } else { "MISSED" }
    );
    crate::bench_summary::record(&crate::bench_summary::Figure {
        case: "rates",
        figure,
        what: describe(figure),
        ours,
        baseline,
        unit,
        ratio: Some(ratio),
        target,
        met,
    });
}

fn run_in(dir: &Path, pmcstat: &Path) -> Result<(), String> {
    let script = dir.join("busy.sh");
    std::fs::write(
        &script,
        format!("i=0\nwhile [ $i -lt {LOOPS} ]; do i=$((i+1)); done\n"),
    )
    .map_err(|e| format!("{}: {e}", script.display()))?;
    let script = script.display().to_string();
    let pmcstat = pmcstat.display().to_string();
    let log = dir.join("dash.pmclog").display().to_string();
    let data = dir.join("dash.perf.data").display().to_string();
    let s = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let runs = [
        s(&["dash", &script]),
        s(&[
            &pmcstat,
            "-q",
            "-n",
            "65536",
            "-P",
            "cpu-clock",
            "-O",
            &log,
            "--",
            "dash",
            &script,
        ]),
        s(&[
            &pmcstat,
            "-q",
            "-P",
            "cpu-clock",
            "-O",
            &log,
            "--",
            "dash",
            &script,
        ]),
        s(&[
            "perf",
            "record",
            "-q",
            "-e",
            "cpu-clock",
            "-o",
            &data,
            "--",
            "dash",
            &script,
        ]),
    ];
    let cpu = least_cpu(&runs)?;
    println!(
        "\nrates: dash running a busy script ({LOOPS} loops), CPU time of the whole run, \
         least of {ROUNDS} rounds:\n  alone {:.3} s; pmcstat -P cpu-clock at 65536 ns (the \
         default before) {:.3} s; at its default now (250000 ns) {:.3} s; perf record -e \
         cpu-clock (4 kHz) {:.3} s",
        cpu[0], cpu[1], cpu[2], cpu[3]
    );
    report(
        "dash_cpu_default",
        cpu[2],
        cpu[3],
        "s",
        "pmcstat's default <= perf record's default",
        cpu[2] <= cpu[3],
    );
    report(
        "dash_cpu_old_default",
        cpu[1],
        cpu[3],
        "s",
        "informational: FreeBSD's 65536 ns against perf's default",
        true,
    );
    top_cost(dir, &pmcstat)
}

/// `pmcstat -T -w 1` for [`TOP_SECS`] beside a dash loop: attached to it
/// with -t, then system-wide. pmcstat's CPU and the loop's, each from its
/// own wait.
fn top_cost(dir: &Path, pmcstat: &str) -> Result<(), String> {
    let script = dir.join("loop.sh");
    std::fs::write(&script, "while :; do i=$((i+1)); done\n")
        .map_err(|e| format!("{}: {e}", script.display()))?;
    let secs = TOP_SECS.to_string();
    for (figure, system) in [
        ("top_refresh_cpu_pct", false),
        ("top_refresh_cpu_pct_system", true),
    ] {
        let mut workload = Command::new("dash")
            .arg(&script)
            .spawn()
            .map_err(|e| format!("dash: {e}"))?;
        let pid = workload.id().to_string();
        let mut argv = vec!["-s", "INT", &secs, pmcstat, "-T", "-w", "1"];
        if system {
            argv.extend(["-S", "cpu-clock"]);
        } else {
            argv.extend(["-P", "cpu-clock", "-t", &pid]);
        }
        let begun = Instant::now();
        let before = children_cpu()?;
        let out = Command::new("timeout")
            .args(&argv)
            .stderr(Stdio::null())
            .output()
            .map_err(|e| format!("timeout pmcstat -T: {e}"))?;
        let top_cpu = (children_cpu()? - before).as_secs_f64();
        let wall = begun.elapsed().as_secs_f64();
        let frames = String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter(|l| l.starts_with("PMC: "))
            .count();
        let before = children_cpu()?;
        let _ = workload.kill();
        let _ = workload.wait();
        let workload_cpu = (children_cpu()? - before).as_secs_f64();
        if frames == 0 {
            return Err(format!(
                "pmcstat -T printed no frame in {wall:.1} s ({})",
                out.status
            ));
        }
        let pct = 100.0 * top_cpu / wall;
        let workload_pct = 100.0 * workload_cpu / wall;
        println!(
            "rates: pmcstat -T -w 1 {} for {wall:.1} s ({frames} frames): pmcstat {top_cpu:.3} s \
             of CPU ({pct:.1} % of one CPU); the dash loop {workload_cpu:.3} s ({workload_pct:.1} %)",
            if system {
                "-S cpu-clock (system-wide)"
            } else {
                "-P cpu-clock -t (the loop)"
            }
        );
        report(
            figure,
            pct,
            workload_pct,
            "% of one CPU",
            "pmcstat -T's own CPU <= 5 % of one CPU",
            pct <= 5.0,
        );
    }
    Ok(())
}

/// What a figure compares, for docs/performance.md.
fn describe(figure: &str) -> &'static str {
    match figure {
        "dash_cpu_default" => {
            "dash's CPU under pmcstat -P cpu-clock at its default vs perf record's default"
        }
        "dash_cpu_old_default" => {
            "dash's CPU under pmcstat at FreeBSD's 65536 ns vs perf record's default"
        }
        "top_refresh_cpu_pct" => {
            "pmcstat -T -w 1 -t (one process): its CPU, % of one CPU, vs the loop's"
        }
        "top_refresh_cpu_pct_system" => {
            "pmcstat -T -w 1 -S (whole machine): its CPU, % of one CPU, vs the loop's"
        }
        _ => "rates",
    }
}
