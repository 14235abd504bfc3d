//! `cargo xtask bench`'s report benchmark (issue 13 §4): one workload
//! sampled by `pmcstat` and by `perf record` at the same period, then the
//! reports timed and their peak RSS measured in the same run:
//! `pmcstat -R … -G` against `perf report --stdio`, and `pmcstat -R …
//! --folded` against `perf script | inferno-collapse-perf`; once on a
//! frame-pointer C workload, once on one that runs in libc, named from
//! libc's separate debug info (issue 19 §4). Ratios are
//! pmc over perf: time ≤ 0.25 (≥ 4× faster) and memory ≤ 0.5 are the
//! targets.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

/// Environment variable that turns this binary into the measuring child.
const MEASURE_ENV: &str = "PMC_XTASK_MEASURE";
/// Sampling period in ns of cpu-clock: the kernel's minimum (10 µs).
const PERIOD_NS: u64 = 10_000;
/// CPU milliseconds of the workload: at 10 µs, 8 s gives ≈ 600 000 samples
/// (the timer delivers ~75 000 a second under load, not 100 000).
const WORKLOAD_MS: u64 = 8_000;

/// A C workload with a few levels of calls and one hot leaf, built with
/// frame pointers so both profilers unwind it the same way.
const WORKLOAD_C: &str = r#"
#include <stdlib.h>
#include <time.h>
static volatile unsigned long sink;
__attribute__((noinline)) static unsigned long hot_leaf(unsigned long x) {
    for (int i = 0; i < 2000; i++) x = x * 6364136223846793005UL + 1442695040888963407UL;
    return x;
}
__attribute__((noinline)) static unsigned long warm_leaf(unsigned long x) {
    for (int i = 0; i < 500; i++) x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    return x;
}
__attribute__((noinline)) static unsigned long middle(unsigned long x, int depth) {
    if (depth > 0) return middle(x + 1, depth - 1);
    return hot_leaf(x) + warm_leaf(x);
}
__attribute__((noinline)) static unsigned long outer(unsigned long x) {
    return middle(x, (int)(x % 8));
}
static double cpu_ms(void) {
    struct timespec t; clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}
int main(int argc, char **argv) {
    double ms = argc > 1 ? atof(argv[1]) : 1000;
    unsigned long x = 1;
    while (cpu_ms() < ms) for (int i = 0; i < 100; i++) x = outer(x + i);
    sink = x;
    return 0;
}
"#;

/// A workload that spends its time in libc (string compares, copies,
/// formatting, malloc/free), so a report names it from libc's separate
/// debug info (libc6-dbg's `/usr/lib/debug/.build-id/…`), as both tools
/// find it.
const LIBC_WORKLOAD_C: &str = r#"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
static volatile size_t sink;
static int by_name(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}
static double cpu_ms(void) {
    struct timespec t; clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}
int main(int argc, char **argv) {
    double ms = argc > 1 ? atof(argv[1]) : 1000;
    enum { N = 2000 };
    char *names[N];
    unsigned long x = 1;
    while (cpu_ms() < ms) {
        for (int i = 0; i < N; i++) {
            x = x * 6364136223846793005UL + 1442695040888963407UL;
            names[i] = malloc(48);
            snprintf(names[i], 48, "symbol-%lu-%lx", x % 97, x >> 40);
        }
        qsort(names, N, sizeof names[0], by_name);
        for (int i = 0; i < N; i++) {
            sink += strlen(names[i]) + (strstr(names[i], "-4") != NULL);
            free(names[i]);
        }
    }
    return 0;
}
"#;

/// Wall time and peak RSS of one command.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Cost {
    pub(crate) secs: f64,
    pub(crate) max_rss_kb: i64,
}

/// In the measuring child: runs `sh -c CMD`, waits, prints
/// `secs max_rss_kb` (RUSAGE_CHILDREN's peak covers every process of the
/// pipeline, as the largest of them).
pub fn measure_child_if_requested() {
    let Ok(cmd) = std::env::var(MEASURE_ENV) else {
        return;
    };
    let start = Instant::now();
    let status = Command::new("sh").args(["-c", &cmd]).status();
    let secs = start.elapsed().as_secs_f64();
    let ok = status.is_ok_and(|s| s.success());
    let rss = nix::sys::resource::getrusage(nix::sys::resource::UsageWho::RUSAGE_CHILDREN)
        .map(|u| u.max_rss())
        .unwrap_or(-1);
    println!("{secs} {rss} {}", if ok { "ok" } else { "failed" });
    std::process::exit(i32::from(!ok));
}

pub(crate) fn measure(cmd: &str) -> Result<Cost, String> {
    let me = std::env::current_exe().map_err(|e| format!("current_exe: {e}"))?;
    // The same `cargo xtask bench` invocation, which measures and exits
    // before benchmarking anything.
    let out = Command::new(me)
        .args(std::env::args_os().skip(1))
        .env(MEASURE_ENV, cmd)
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| format!("measuring {cmd}: {e}"))?;
    let text = String::from_utf8_lossy(&out.stdout);
    let mut f = text.split_whitespace();
    let secs: f64 = f.next().and_then(|s| s.parse().ok()).unwrap_or(f64::NAN);
    let max_rss_kb: i64 = f.next().and_then(|s| s.parse().ok()).unwrap_or(-1);
    if f.next() != Some("ok") {
        return Err(format!("`{cmd}` failed"));
    }
    Ok(Cost { secs, max_rss_kb })
}

pub(crate) fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(program).is_file()))
}

pub(crate) fn sh_quote(p: &Path) -> String {
    format!("'{}'", p.display().to_string().replace('\'', r"'\''"))
}

/// The best (least) of `runs` measurements: time and memory each.
fn best_of(cmd: &str, runs: usize) -> Result<Cost, String> {
    let mut best = Cost {
        secs: f64::INFINITY,
        max_rss_kb: i64::MAX,
    };
    for _ in 0..runs {
        let c = measure(cmd)?;
        best.secs = best.secs.min(c.secs);
        best.max_rss_kb = best.max_rss_kb.min(c.max_rss_kb);
    }
    Ok(best)
}

/// Runs the report benchmark and prints its ratios. Skips (with the reason)
/// when perf or a C compiler is missing.
pub fn run(cargo: &str) -> Result<(), String> {
    in_scratch_dir("report benchmark", &["perf", "cc"], |dir| {
        run_in(dir, &release_pmcstat(cargo)?)
    })
}

/// Runs a case's body in a scratch directory removed after it, with the
/// programs it compares; without one of them the case says so and is not
/// run (a machine without perf still runs the other cases).
pub(crate) fn in_scratch_dir(
    case: &str,
    programs: &[&str],
    body: impl FnOnce(&Path) -> Result<(), String>,
) -> Result<(), String> {
    if let Some(missing) = programs.iter().find(|p| !on_path(p)) {
        println!("\n{case}: not run (`{missing}` is not installed)");
        return Ok(());
    }
    let dir = tempdir()?;
    let result = body(&dir);
    let _ = std::fs::remove_dir_all(&dir);
    result
}

/// Builds the release `pmcstat` and returns its path.
pub(crate) fn release_pmcstat(cargo: &str) -> Result<PathBuf, String> {
    let status = Command::new(cargo)
        .args([
            "build",
            "-q",
            "--release",
            "-p",
            "hwpmc-tools",
            "--bin",
            "pmcstat",
        ])
        .status()
        .map_err(|e| format!("cargo build: {e}"))?;
    if !status.success() {
        return Err("building the release pmcstat failed".into());
    }
    let root = std::env::var("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|_| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target"));
    Ok(root.join("release/pmcstat"))
}

pub(crate) fn tempdir() -> Result<PathBuf, String> {
    let out = Command::new("mktemp")
        .args(["-d", "/tmp/pmc-bench-report-XXXXXX"])
        .output()
        .map_err(|e| format!("mktemp: {e}"))?;
    Ok(PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()))
}

fn run_in(dir: &Path, pmcstat: &Path) -> Result<(), String> {
    run_workload(
        dir,
        pmcstat,
        "frame-pointer workload",
        "workload",
        WORKLOAD_C,
    )?;
    // Debian's libc is stripped: its names are in libc6-dbg's debug file.
    if Path::new(DEBUG_BUILD_ID_DIR).is_dir() {
        run_workload(
            dir,
            pmcstat,
            "libc workload (names from libc's separate debug info)",
            "libc_workload",
            LIBC_WORKLOAD_C,
        )
    } else {
        println!(
            "\nlibc workload: not run ({DEBUG_BUILD_ID_DIR} is missing: apt-get install libc6-dbg)"
        );
        Ok(())
    }
}

/// Where libc6-dbg keeps debug files by build id.
const DEBUG_BUILD_ID_DIR: &str = "/usr/lib/debug/.build-id";

fn run_workload(
    dir: &Path,
    pmcstat: &Path,
    label: &str,
    name: &str,
    source: &str,
) -> Result<(), String> {
    let src = dir.join(format!("{name}.c"));
    let exe = dir.join(name);
    std::fs::write(&src, source).map_err(|e| format!("write workload: {e}"))?;
    let status = Command::new("cc")
        .args(["-O1", "-g", "-fno-omit-frame-pointer", "-o"])
        .arg(&exe)
        .arg(&src)
        .status()
        .map_err(|e| format!("cc: {e}"))?;
    if !status.success() {
        return Err("compiling the workload failed".into());
    }
    let (log, data) = (
        dir.join(format!("{name}.pmclog")),
        dir.join(format!("{name}.perf.data")),
    );
    let ms = WORKLOAD_MS.to_string();
    let period = PERIOD_NS.to_string();
    let out = Command::new(pmcstat)
        // -n sets the rate of the sampling PMCs after it (pmcstat(8)): after
        // -P it left this log at the default period, 25 times fewer
        // samples than perf's.
        .args(["-q", "-n", &period, "-P", "cpu-clock,usr", "-O"])
        .arg(&log)
        .arg("--")
        .arg(&exe)
        .arg(&ms)
        .output()
        .map_err(|e| format!("pmcstat: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "pmcstat -P failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let out = Command::new("perf")
        .args([
            "record",
            "-q",
            "-e",
            "cpu-clock:u",
            "-c",
            &period,
            "-g",
            "-o",
        ])
        .arg(&data)
        .arg("--")
        .arg(&exe)
        .arg(&ms)
        .output()
        .map_err(|e| format!("perf record: {e}"))?;
    if !out.status.success() {
        println!(
            "\nreport benchmark: not run (perf record failed: {})",
            String::from_utf8_lossy(&out.stderr).trim()
        );
        return Ok(());
    }
    let ours = Command::new(pmcstat)
        .arg("-R")
        .arg(&log)
        .output()
        .map_err(|e| format!("pmcstat -R: {e}"))?;
    let our_samples = String::from_utf8_lossy(&ours.stdout)
        .lines()
        .filter(|l| l.starts_with("callchain "))
        .count();
    let perf_samples = perf_sample_count(&data).unwrap_or(0);
    println!(
        "\nreports of the {label}: pmcstat {our_samples} samples, perf {perf_samples} samples \
         (cpu-clock:u every {PERIOD_NS} ns; best of 3 runs each)"
    );
    if let Some(note) = few_samples_note(our_samples.min(perf_samples)) {
        println!("{note}");
    }
    let (q_pmc, q_log, q_data) = (sh_quote(pmcstat), sh_quote(&log), sh_quote(&data));
    let graph_ours = best_of(&format!("{q_pmc} -R {q_log} -G /dev/null"), 3)?;
    let graph_perf = best_of(
        &format!("perf report --stdio -i {q_data} > /dev/null 2>&1"),
        3,
    )?;
    print_row(
        label,
        "graph",
        "pmcstat -R -G vs perf report --stdio",
        graph_ours,
        graph_perf,
    );
    if on_path("inferno-collapse-perf") {
        let folded_ours = best_of(&format!("{q_pmc} -R {q_log} --folded /dev/null"), 3)?;
        let folded_perf = best_of(
            &format!("perf script -i {q_data} 2>/dev/null | inferno-collapse-perf > /dev/null"),
            3,
        )?;
        print_row(
            label,
            "folded",
            "pmcstat --folded vs perf script | inferno-collapse-perf",
            folded_ours,
            folded_perf,
        );
    } else {
        println!(
            "pmcstat --folded vs perf script | inferno-collapse-perf: not run \
             (`inferno-collapse-perf` is not installed: cargo install inferno)"
        );
    }
    Ok(())
}

fn perf_sample_count(data: &Path) -> Option<usize> {
    let out = Command::new("perf")
        .args(["script", "-F", "period", "-i"])
        .arg(data)
        .output()
        .ok()?;
    Some(String::from_utf8_lossy(&out.stdout).lines().count())
}

fn print_row(workload: &str, id: &str, what: &str, ours: Cost, perf: Cost) {
    let t = ours.secs / perf.secs;
    let m = ours.max_rss_kb as f64 / perf.max_rss_kb as f64;
    let which = if workload.contains("libc") {
        "libc"
    } else {
        "fp"
    };
    for (figure, what, ours, base, unit, target, met) in [
        (
            format!("{id}_{which}_time"),
            format!("{what}, {workload}: time"),
            ours.secs,
            perf.secs,
            "s",
            "<= 0.25",
            t <= 0.25,
        ),
        (
            format!("{id}_{which}_rss"),
            format!("{what}, {workload}: peak RSS"),
            ours.max_rss_kb as f64 / 1024.0,
            perf.max_rss_kb as f64 / 1024.0,
            "MiB",
            "<= 0.5",
            m <= 0.5,
        ),
    ] {
        crate::bench_summary::record(&crate::bench_summary::Figure {
            case: "report",
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
    let verdict = |met: bool| if met { "met" } else { "MISSED" };
    println!(
        "{what}: time {:.3} s vs {:.3} s = {t:.3} ({:.1}x faster) [target <= 0.25 {}]; \
         peak RSS {} KiB vs {} KiB = {m:.3} [target <= 0.5 {}]",
        ours.secs,
        perf.secs,
        1.0 / t,
        verdict(t <= 0.25),
        ours.max_rss_kb,
        perf.max_rss_kb,
        verdict(m <= 0.5)
    );
}

/// The log size the report comparison is meant for: large enough that
/// reading and symbolising dominate start-up.
const TARGET_SAMPLES: usize = 500_000;

/// Says when a run recorded fewer samples than [`TARGET_SAMPLES`].
fn few_samples_note(samples: usize) -> Option<String> {
    (samples < TARGET_SAMPLES).then(|| {
        format!(
            "note: {samples} samples, under the 500 000 this comparison targets (a loaded \
             machine's timer fires less often); the times above are of a smaller log"
        )
    })
}

#[cfg(test)]
mod few_samples_tests {
    use super::*;

    #[test]
    fn the_note_states_the_target_itself() {
        let note = few_samples_note(1_234).expect("a note under the target");
        assert!(
            note.contains("1234 samples") && note.contains("500 000"),
            "{note}"
        );
        assert!(!note.contains("issue"), "{note}");
        assert_eq!(few_samples_note(TARGET_SAMPLES), None);
    }
}
