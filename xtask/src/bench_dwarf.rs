//! `cargo xtask bench`'s DWARF-unwinding benchmark (issue 19 §4): Debian's
//! `gzip -9` (built without frame pointers) recorded with `pmcstat
//! --call-graph dwarf` and with `perf record --call-graph dwarf` at the
//! same cpu-clock period, 1 kHz and 4 kHz, in interleaved rounds with the
//! bare command. Ratios in one run: each tool's workload slowdown (wall
//! time over the bare command's, best of the rounds; target: pmcstat's ≤
//! perf's), pmcstat's lost samples (target 0), and the log's size over
//! perf.data's (target ≤ 0.2: the log keeps unwound chains, perf.data 8 KiB
//! stacks).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

/// Rounds of (bare, pmcstat, perf) per rate.
const ROUNDS: usize = 3;

/// Runs the benchmark and prints its ratios; skips (with the reason) when
/// perf or gzip is missing. `pmcstat` is the release build.
pub fn run(pmcstat: &Path) -> Result<(), String> {
    crate::bench_report::in_scratch_dir("dwarf unwinding benchmark", &["perf", "gzip"], |dir| {
        run_in(dir, pmcstat)
    })
}

/// 40 MB of pseudo-random words: about 2 s of `gzip -9`.
fn input_text() -> String {
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    let mut out = String::with_capacity(40 << 20);
    while out.len() < 40 << 20 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        out.push_str(&format!("{:x}", x % 100_003));
        out.push(if x.is_multiple_of(11) { '\n' } else { ' ' });
    }
    out
}

/// CPU seconds (user + system) of this process's waited-for children.
fn children_cpu() -> f64 {
    nix::sys::resource::getrusage(nix::sys::resource::UsageWho::RUSAGE_CHILDREN)
        .map(|u| {
            let t = |tv: nix::sys::time::TimeVal| tv.tv_sec() as f64 + tv.tv_usec() as f64 / 1e6;
            t(u.user_time()) + t(u.system_time())
        })
        .unwrap_or(f64::NAN)
}

/// Wall seconds, CPU seconds of the command and every process it started
/// (the tool's own threads included), and its standard error.
fn timed(cmd: &mut Command) -> Result<(f64, f64, String), String> {
    let cpu_before = children_cpu();
    let start = Instant::now();
    let out = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .map_err(|e| format!("{cmd:?}: {e}"))?;
    let secs = start.elapsed().as_secs_f64();
    let cpu = children_cpu() - cpu_before;
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    if !out.status.success() {
        return Err(format!("{cmd:?} failed ({}): {err}", out.status));
    }
    Ok((secs, cpu, err))
}

/// The samples pmcstat's loss warning counts (`N samples lost`), 0 without
/// one.
fn lost_in(stderr: &str) -> u64 {
    stderr
        .split("samples lost")
        .next()
        .filter(|_| stderr.contains("samples lost"))
        .and_then(|head| head.split_whitespace().last())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

fn run_in(dir: &Path, pmcstat: &Path) -> Result<(), String> {
    let input = dir.join("input");
    std::fs::write(&input, input_text()).map_err(|e| format!("write input: {e}"))?;
    let gzip = |c: &mut Command| {
        c.args(["gzip", "-9", "-f", "-k"]).arg(&input);
    };
    println!(
        "\n--call-graph dwarf (8 KiB stacks), `gzip -9` of 40 MB, cpu-clock:u; best of {ROUNDS} \
         interleaved rounds"
    );
    for (rate, period) in [("1 kHz", "1000000"), ("4 kHz", "250000")] {
        let (log, data): (PathBuf, PathBuf) = (dir.join("s.pmclog"), dir.join("perf.data"));
        let (mut bare, mut ours, mut theirs) = (f64::INFINITY, f64::INFINITY, f64::INFINITY);
        let (mut bare_cpu, mut ours_cpu, mut theirs_cpu) =
            (f64::INFINITY, f64::INFINITY, f64::INFINITY);
        let mut lost = 0;
        for _ in 0..ROUNDS {
            let mut c = Command::new("env");
            gzip(&mut c);
            let (secs, cpu, _) = timed(&mut c)?;
            bare = bare.min(secs);
            bare_cpu = bare_cpu.min(cpu);

            let mut c = Command::new(pmcstat);
            c.args([
                "--call-graph",
                "dwarf",
                "-n",
                period,
                "-P",
                "cpu-clock,usr",
                "-O",
            ])
            .arg(&log)
            .arg("--");
            gzip(&mut c);
            let (secs, cpu, err) = timed(&mut c)?;
            ours = ours.min(secs);
            ours_cpu = ours_cpu.min(cpu);
            lost = lost.max(lost_in(&err));

            let mut c = Command::new("perf");
            c.args([
                "record",
                "-q",
                "--call-graph",
                "dwarf",
                "-e",
                "cpu-clock:u",
                "-c",
            ])
            .arg(period)
            .arg("-o")
            .arg(&data)
            .arg("--");
            gzip(&mut c);
            let (secs, cpu, _) = timed(&mut c)?;
            theirs = theirs.min(secs);
            theirs_cpu = theirs_cpu.min(cpu);
        }
        let size = |p: &Path| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
        let (log_size, data_size) = (size(&log), size(&data));
        let (slow_ours, slow_theirs) = (ours / bare, theirs / bare);
        let size_ratio = log_size as f64 / data_size as f64;
        let verdict = |met: bool| if met { "met" } else { "MISSED" };
        println!(
            "{rate}: workload slowdown {slow_ours:.3}x with pmcstat, {slow_theirs:.3}x with perf \
             record (bare {bare:.2} s) [target <= perf's {}]; {lost} samples lost [target 0 {}]; \
             log {log_size} B vs perf.data {data_size} B = {size_ratio:.3} [target <= 0.2 {}]; \
             CPU (the tool's own included) {:.3}x with pmcstat, {:.3}x with perf record (bare \
             {bare_cpu:.2} s: wall ratios on a shared machine measure its load too)",
            verdict(slow_ours <= slow_theirs),
            verdict(lost == 0),
            verdict(size_ratio <= 0.2),
            ours_cpu / bare_cpu,
            theirs_cpu / bare_cpu,
        );
        let hz = if period == "1000000" { "1kHz" } else { "4kHz" };
        for (figure, what, ours, base, unit, target, met) in [
            (
                format!("slowdown_{hz}"),
                format!(
                    "gzip -9 slowdown recorded with --call-graph dwarf at {rate}: pmcstat -P vs perf record"
                ),
                slow_ours,
                slow_theirs,
                "x",
                "<= perf's",
                slow_ours <= slow_theirs,
            ),
            (
                format!("log_size_{hz}"),
                format!("--call-graph dwarf at {rate}: pmclog size vs perf.data"),
                log_size as f64 / (1 << 20) as f64,
                data_size as f64 / (1 << 20) as f64,
                "MiB",
                "<= 0.2",
                size_ratio <= 0.2,
            ),
            (
                format!("lost_{hz}"),
                format!(
                    "--call-graph dwarf at {rate}: samples lost by pmcstat -P (perf: not counted)"
                ),
                lost as f64,
                0.0,
                "samples",
                "0",
                lost == 0,
            ),
        ] {
            crate::bench_summary::record(&crate::bench_summary::Figure {
                case: "dwarf",
                figure: &figure,
                what: &what,
                ours,
                baseline: base,
                unit,
                ratio: None,
                target,
                met,
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::lost_in;

    #[test]
    fn the_loss_count_is_read_from_pmcstats_warning() {
        let warning = "pmcstat: warning: 2753 samples lost, 4310 recorded (39.0 % lost): …";
        assert_eq!(lost_in(warning), 2753);
        assert_eq!(lost_in("pmcstat: 4310 samples\n"), 0);
    }
}
