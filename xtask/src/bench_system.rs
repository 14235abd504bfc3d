//! `cargo xtask bench`'s whole-system DWARF benchmark (issue 36 §1, §4):
//! `bzip2 -9` busy on the machine, recorded system-wide with `pmcstat -S
//! cpu-clock --call-graph dwarf` and with `perf record -a --call-graph
//! dwarf` at the same period (65536 and 250000 ns), in one run: each
//! recorder's lost samples (pmcstat's from its warning, perf's from its
//! "Processed N samples and lost X%!") and peak RSS (the measuring child
//! of `bench_report`). Targets: lost ≤ perf's, peak RSS ≤ perf's. Then a
//! long recording without stacks (`-S cpu-clock -O -l 20`): its resident
//! size while recording against its peak, which includes the stop (target:
//! the stop adds at most 5 MB).

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};

/// Seconds each system-wide recording lasts.
const SECONDS: u32 = 3;
/// Seconds of the long recording.
const LONG_SECONDS: u32 = 20;
/// What the stop may add to the resident size of the long recording.
const STOP_SLACK_KB: i64 = 5 * 1024;

/// Runs the benchmark; "not run" without perf or bzip2. `pmcstat` is the
/// release build.
pub fn run(pmcstat: &Path) -> Result<(), String> {
    crate::bench_report::in_scratch_dir("system-wide dwarf benchmark", &["perf", "bzip2"], |dir| {
        run_in(dir, pmcstat)
    })
}

/// 64 MB of pseudo-random words: bzip2 -9 takes longer than a recording.
fn write_input(path: &Path) -> Result<(), String> {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut out = String::with_capacity(64 << 20);
    while out.len() < 64 << 20 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        out.push_str(&format!("{:x}", x % 50_021));
        out.push(if x.is_multiple_of(9) { '\n' } else { ' ' });
    }
    std::fs::write(path, out).map_err(|e| format!("write {}: {e}", path.display()))
}

/// The busy load: bzip2 -9 of the input in a loop, until killed.
struct Load(Child);

impl Load {
    fn start(input: &Path) -> Result<Load, String> {
        let script = format!(
            "while :; do bzip2 -9 -c {} > /dev/null; done",
            sh_quote(input)
        );
        let child = Command::new("sh")
            .args(["-c", &script])
            .process_group(0)
            .stdout(Stdio::null())
            .spawn()
            .map_err(|e| format!("starting bzip2: {e}"))?;
        // Let it reach its steady state before recording.
        std::thread::sleep(std::time::Duration::from_millis(300));
        Ok(Load(child))
    }
}

impl Drop for Load {
    fn drop(&mut self) {
        // The loop and its bzip2: its own process group.
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{}", self.0.id())])
            .status();
        let _ = self.0.wait();
    }
}

fn sh_quote(p: &Path) -> String {
    format!("'{}'", p.display().to_string().replace('\'', r"'\''"))
}

/// pmcstat's `N samples lost, M recorded` as (lost, recorded); (0, 0)
/// without the warning.
fn pmcstat_losses(stderr: &str) -> (u64, u64) {
    let Some((head, tail)) = stderr.split_once(" samples lost, ") else {
        return (0, 0);
    };
    let lost = head
        .split_whitespace()
        .last()
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    let recorded = tail
        .split_whitespace()
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    (lost, recorded)
}

/// perf record's `Processed N samples and lost X%!` as X; 0 without it.
fn perf_lost_percent(stderr: &str) -> f64 {
    stderr
        .split_once(" samples and lost ")
        .and_then(|(_, tail)| tail.split('%').next())
        .and_then(|p| p.trim().parse().ok())
        .unwrap_or(0.0)
}

/// One figure kept (`bench_summary::record`); the caller printed it.
fn figure(id: &str, ours: f64, baseline: f64, unit: &str, target: &str, met: bool) {
    // 0 against 0 lost is parity, not a division by zero.
    let ratio = (baseline == 0.0 && ours == 0.0).then_some(1.0);
    let what = match id {
        "lost_pct_65536" => {
            "samples lost, pmcstat -S --call-graph dwarf vs perf record -a, 65536 ns"
        }
        "lost_pct_250000" => {
            "samples lost, pmcstat -S --call-graph dwarf vs perf record -a, 250000 ns"
        }
        "peak_rss_65536" => "peak RSS, pmcstat -S --call-graph dwarf vs perf record -a, 65536 ns",
        "peak_rss_250000" => "peak RSS, pmcstat -S --call-graph dwarf vs perf record -a, 250000 ns",
        "stop_peak_rss" => {
            "pmcstat -S -O long recording: peak RSS with the stop vs while recording"
        }
        _ => "system-wide recording",
    };
    crate::bench_summary::record(&crate::bench_summary::Figure {
        case: "sysdwarf",
        figure: id,
        what,
        ours,
        baseline,
        unit,
        ratio,
        target,
        met,
    });
}

fn verdict(met: bool) -> &'static str {
    if met { "met" } else { "MISSED" }
}

fn run_in(dir: &Path, pmcstat: &Path) -> Result<(), String> {
    let input = dir.join("input");
    write_input(&input)?;
    println!(
        "\nsystem-wide --call-graph dwarf (8 KiB stacks), cpu-clock, {SECONDS} s while `bzip2 -9` \
         runs: pmcstat -S vs perf record -a, same period"
    );
    for period in [65536u64, 250_000] {
        let (log, err) = (dir.join("sys.pmclog"), dir.join("pmcstat.err"));
        let ours = {
            let _load = Load::start(&input)?;
            crate::bench_report::measure(&format!(
                "{} -n {period} -S cpu-clock --call-graph dwarf -O {} -l {SECONDS} 2> {}",
                sh_quote(pmcstat),
                sh_quote(&log),
                sh_quote(&err)
            ))?
        };
        let text = std::fs::read_to_string(&err).unwrap_or_default();
        let (lost, recorded) = pmcstat_losses(&text);
        let our_pct = if lost == 0 {
            0.0
        } else {
            lost as f64 * 100.0 / (lost + recorded) as f64
        };
        let (data, perr) = (dir.join("perf.data"), dir.join("perf.err"));
        let theirs = {
            let _load = Load::start(&input)?;
            crate::bench_report::measure(&format!(
                "perf record -a --call-graph dwarf -e cpu-clock -c {period} -o {} -- sleep {SECONDS} \
                 2> {}",
                sh_quote(&data),
                sh_quote(&perr)
            ))?
        };
        let perf_pct = perf_lost_percent(&std::fs::read_to_string(&perr).unwrap_or_default());
        let _ = std::fs::remove_file(&data);
        let lost_met = our_pct <= perf_pct;
        let rss_met = ours.max_rss_kb <= theirs.max_rss_kb;
        let of = if lost == 0 {
            "none".to_string()
        } else {
            format!("{lost} of {}", lost + recorded)
        };
        println!(
            "-n {period}: lost {our_pct:.1} % ({of}) with pmcstat, {perf_pct:.1} % with perf \
             [target <= perf's {}]; peak RSS {} MB with pmcstat, {} MB with perf [target <= perf's {}]",
            verdict(lost_met),
            ours.max_rss_kb / 1024,
            theirs.max_rss_kb / 1024,
            verdict(rss_met)
        );
        figure(
            &format!("lost_pct_{period}"),
            our_pct,
            perf_pct,
            "%",
            "lost <= perf record -a's",
            lost_met,
        );
        figure(
            &format!("peak_rss_{period}"),
            ours.max_rss_kb as f64 / 1024.0,
            theirs.max_rss_kb as f64 / 1024.0,
            "MB",
            "peak RSS <= perf record -a's",
            rss_met,
        );
    }
    long_recording(dir, pmcstat, &input)
}

/// `-S cpu-clock -O -l LONG_SECONDS` under the load: the largest resident
/// size seen while recording (sampled every 0.2 s until a second before
/// the end) against the peak of the whole run.
fn long_recording(dir: &Path, pmcstat: &Path, input: &Path) -> Result<(), String> {
    let (log, rss) = (dir.join("long.pmclog"), dir.join("rss"));
    let samples = (LONG_SECONDS - 1) * 5;
    let peak = {
        let _load = Load::start(input)?;
        crate::bench_report::measure(&format!(
            "{} -S cpu-clock -O {} -l {LONG_SECONDS} 2>/dev/null & p=$!; i=0; \
             while [ $i -lt {samples} ] && kill -0 $p 2>/dev/null; do \
             sed -n 's/^VmRSS: *//p' /proc/$p/status >> {} 2>/dev/null; \
             sleep 0.2; i=$((i+1)); done; wait $p",
            sh_quote(pmcstat),
            sh_quote(&log),
            sh_quote(&rss)
        ))?
    };
    let steady = std::fs::read_to_string(&rss)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.split_whitespace().next()?.parse::<i64>().ok())
        .max()
        .unwrap_or(0);
    let log_mb = std::fs::metadata(&log).map_or(0, |m| m.len()) >> 20;
    let met = peak.max_rss_kb - steady <= STOP_SLACK_KB;
    println!(
        "-S cpu-clock -O -l {LONG_SECONDS} (log {log_mb} MB): {} MB resident while recording, \
         {} MB peak with the stop [target: the stop adds <= {} MB {}]",
        steady / 1024,
        peak.max_rss_kb / 1024,
        STOP_SLACK_KB / 1024,
        verdict(met)
    );
    figure(
        "stop_peak_rss",
        peak.max_rss_kb as f64 / 1024.0,
        steady as f64 / 1024.0,
        "MB",
        "peak at stop <= recording's resident size + 5 MB",
        met,
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_losses_are_read_from_each_recorders_words() {
        let ours = "pmcstat: warning: 2753 samples lost, 4310 recorded (39.0 % lost): …";
        assert_eq!(pmcstat_losses(ours), (2753, 4310));
        assert_eq!(pmcstat_losses("pmcstat: nothing\n"), (0, 0));
        let theirs = "Warning:\nProcessed 91683 samples and lost 16.13%!\n\n[ perf record: …";
        assert_eq!(perf_lost_percent(theirs), 16.13);
        assert_eq!(perf_lost_percent("[ perf record: Woken up 1 times ]"), 0.0);
    }
}
