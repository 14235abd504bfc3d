//! `pmcstat --call-graph dwarf` against `perf record --call-graph dwarf`
//! on Debian's own binaries, which have no frame pointers (dash, gzip,
//! sort, python3 and the libc under them): the same event and period for
//! both; pmcstat's stacks must reach the process's start
//! (`__libc_start_call_main`, `__libc_start_main`, `_start`) at least as
//! often as perf's, and every edge of either tool's top five caller→callee
//! edges holds the same share of samples in both, within sampling noise
//! (`shares.rs`: the bound from both numbers of samples, never a rerun).
//!
//! Names are compared where both tools give one: a frame one of them
//! names from a separate debug file (perf reads `/usr/lib/debug`) and the
//! other leaves as `image+0xoff` counts as its image in both, so the
//! edges compare unwinding, not symbol lookup.

use std::collections::{HashMap, HashSet};
use std::process::{Command, Stdio};

use pmc::probe::Requirement as R;

use crate::ensure;
use crate::harness::{Context, LiveTest, TestResult, test};
use crate::shares::{Shares, Z};
use crate::temp::TempDir;

const PMCSTAT: &str = env!("CARGO_BIN_EXE_pmcstat");

/// 250 µs of cpu-clock between samples: 4 kHz for both tools. Sampling
/// noise shrinks as one over the root of the samples: at 1 kHz (~250
/// samples of the dash loop) the bound on a 5 % edge was 5.3 points, so an
/// edge one tool lacked entirely could pass; at 4 kHz it is 2.7.
const PERIOD_NS: &str = "250000";

pub fn tests() -> Vec<LiveTest> {
    let needs = |program: &str| {
        vec![
            R::Paranoid(2),
            R::Program("perf".into()),
            R::Program(program.into()),
        ]
    };
    vec![
        test(
            "dwarf_stacks::a_dash_loop_unwinds_as_completely_as_perf",
            needs("dash"),
            a_dash_loop_unwinds_as_completely_as_perf,
        ),
        test(
            "dwarf_stacks::gzip_unwinds_as_completely_as_perf",
            needs("gzip"),
            gzip_unwinds_as_completely_as_perf,
        ),
        test(
            "dwarf_stacks::sort_unwinds_as_completely_as_perf",
            needs("sort"),
            sort_unwinds_as_completely_as_perf,
        ),
        test(
            "dwarf_stacks::dd_in_the_kernel_unwinds_its_user_stack_as_perf_does",
            vec![
                R::Paranoid(1),
                R::Program("perf".into()),
                R::Program("dd".into()),
            ],
            dd_in_the_kernel_unwinds_its_user_stack_as_perf_does,
        ),
        test(
            "dwarf_stacks::a_clock_gettime_loop_unwinds_through_the_vdso_as_perf_does",
            vec![
                R::Paranoid(2),
                R::Program("perf".into()),
                R::Program("cc".into()),
            ],
            a_clock_gettime_loop_unwinds_through_the_vdso_as_perf_does,
        ),
        test(
            "dwarf_stacks::python3_unwinds_as_completely_as_perf",
            // Debian's own, not a python3 earlier on PATH (pyenv's).
            needs("/usr/bin/python3"),
            python3_unwinds_as_completely_as_perf,
        ),
    ]
}

fn a_dash_loop_unwinds_as_completely_as_perf() -> TestResult {
    let dir = TempDir::new("dwarf-dash")?;
    compare(
        &dir,
        &[
            "dash",
            "-c",
            "i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done",
        ],
    )
}

/// dd's small blocks spend most samples in read/write system calls: a
/// kernel-mode sample's user stack is unwound from the registers it
/// entered the kernel with, under its kernel frames (`-U`), reaching the
/// start as often as perf's `--call-graph dwarf` does.
fn dd_in_the_kernel_unwinds_its_user_stack_as_perf_does() -> TestResult {
    let dir = TempDir::new("dwarf-dd")?;
    compare_in(
        &dir,
        &[
            "dd",
            "if=/dev/zero",
            "of=/dev/null",
            "bs=64",
            "count=1500000",
        ],
        Modes::KernelAndUser,
    )
}

/// Most samples are in the vDSO, which no file holds: its frames unwind by
/// its CFI, read from the profiler's own vDSO image (the same kernel's),
/// as perf reads the image it saved. Frame pointers alone left the samples
/// taken in `__vdso_clock_gettime`'s prologue a frame short.
fn a_clock_gettime_loop_unwinds_through_the_vdso_as_perf_does() -> TestResult {
    let dir = TempDir::new("dwarf-vdso")?;
    let exe = crate::debug_symbols::clock_gettime_loop(&dir)?;
    compare(&dir, &[&exe.to_string_lossy()])
}

fn gzip_unwinds_as_completely_as_perf() -> TestResult {
    let dir = TempDir::new("dwarf-gzip")?;
    let input = dir.join("input");
    std::fs::write(&input, generated_text(600_000)).ctx("write the input")?;
    let input = input.to_string_lossy().into_owned();
    compare(&dir, &["gzip", "-9", "-f", "-k", &input])
}

fn sort_unwinds_as_completely_as_perf() -> TestResult {
    let dir = TempDir::new("dwarf-sort")?;
    let input = dir.join("input");
    std::fs::write(&input, generated_text(400_000)).ctx("write the input")?;
    let (input, output) = (input.to_string_lossy().into_owned(), dir.path("sorted"));
    compare(&dir, &["sort", "--parallel=1", "-o", &output, &input])
}

fn python3_unwinds_as_completely_as_perf() -> TestResult {
    let dir = TempDir::new("dwarf-python3")?;
    compare(
        &dir,
        &[
            "/usr/bin/python3",
            "-c",
            "n = 0\nfor i in range(2_000_000):\n    n += i * i % 7\nprint(n)",
        ],
    )
}

/// Lines of pseudo-random words (an xorshift, so every run sorts and
/// compresses the same text).
fn generated_text(lines: usize) -> String {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut out = String::with_capacity(lines * 24);
    for _ in 0..lines {
        for _ in 0..3 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            out.push_str(&format!("{:x} ", x % 1_000_003));
        }
        out.push('\n');
    }
    out
}

/// One sample's frames, outermost first, as (name, image): name `None`
/// where the tool gives none.
type Stack = Vec<(Option<String>, String)>;

/// Which samples both tools take.
#[derive(Clone, Copy)]
enum Modes {
    /// User mode only (`cpu-clock,usr`, perf's `cpu-clock:u`).
    User,
    /// Kernel and user mode, the user stack of a kernel-mode sample
    /// unwound from the registers it entered the kernel with (pmcstat's
    /// `-U` with `cpu-clock,usr,os`; perf's `cpu-clock`).
    KernelAndUser,
}

fn compare(dir: &TempDir, command: &[&str]) -> TestResult {
    compare_in(dir, command, Modes::User)
}

/// Points an edge's share may differ by beyond sampling noise: the two
/// tools sample two runs, and two runs of one workload differ by more
/// than sampling. Measured (6 runs of the six tests, 187 comparisons): the
/// dash loop's and sort's string-function edges differed by up to 5.8
/// points where the noise bound was 4.15 (`dash -> __strcspn_sse42`, 9.41
/// % of 1180 samples against 3.60 % of 1028: 5.45 standard errors, which
/// sampling gives once in 2e7); the largest shortfall of a bound was 1.7
/// points. `debian_profiles.rs`, whose two tools sample one run, stayed
/// within 3.08 standard errors over its 173 (mean square 0.94, as
/// sampling alone gives). Three points: 1.8 times the worst seen.
const RUN_TO_RUN: f64 = 3.0;
/// The start's share beyond sampling noise: none. Nearly every sample
/// reaches it in both tools (99.4-100 %, 0.63 points apart at most).
const REACH_SYSTEMATIC: f64 = 0.0;

/// Once: every bound is the sampling noise of the two tools' numbers of
/// samples (`shares.rs`, 1e-4 false failures per comparison), so a
/// disagreement beyond it is a bug to see, not a run to repeat.
fn compare_in(dir: &TempDir, command: &[&str], modes: Modes) -> TestResult {
    let ours = pmcstat_stacks(dir, command, modes)?;
    let theirs = perf_stacks(dir, command, modes)?;
    ensure!(
        ours.len() >= 50 && theirs.len() >= 50,
        "too few samples to compare: pmcstat {}, perf {} ({command:?})",
        ours.len(),
        theirs.len()
    );
    let (reach_ours, reach_theirs) = (reach_share(&ours), reach_share(&theirs));
    let shares = |o: f64, t: f64| Shares {
        ours: o,
        n_ours: ours.len(),
        theirs: t,
        n_theirs: theirs.len(),
    };
    // One-sided: pmcstat may reach the start more often than perf, not
    // less. Samples in the dynamic loader before libc starts the program,
    // or in its exit path, reach it in neither tool; how many a run has is
    // part of each share's sampling noise.
    let (reaches, figures) = shares(reach_ours, reach_theirs).not_below(REACH_SYSTEMATIC);
    let mut report = format!("reach the start, pmcstat vs perf: {figures}\n");
    ensure!(
        reaches,
        "{command:?}: pmcstat's samples reach the process's start less often than perf's, beyond sampling noise (z = {Z}):\n{report}"
    );
    let names_ours = names(&ours);
    let names_theirs = names(&theirs);
    let common: HashSet<&String> = names_ours.intersection(&names_theirs).collect();
    let edges_ours = edge_shares(&ours, &common);
    let edges_theirs = edge_shares(&theirs, &common);
    let (top_ours, top_theirs) = (top(&edges_ours, 5), top(&edges_theirs, 5));
    // Each edge of either top five holds the same share of samples in both
    // tools, within their sampling noise (a rank comparison failed on
    // that: at ~400 samples a 5 % edge varies by ~1.5 points between runs,
    // so the fifth rank swaps between near-equal edges). An edge one
    // tool's unwinding lacks is ~0 % there and fails.
    let mut edges: Vec<&(String, String)> =
        top_ours.iter().chain(&top_theirs).map(|(e, _)| e).collect();
    edges.sort();
    edges.dedup();
    let mut off = Vec::new();
    for edge in edges {
        let ours_share = edges_ours.get(edge).copied().unwrap_or(0.0);
        let theirs_share = edges_theirs.get(edge).copied().unwrap_or(0.0);
        let (agrees, figures) = shares(ours_share, theirs_share).within(RUN_TO_RUN);
        report.push_str(&format!("{figures}  {} -> {}\n", edge.0, edge.1));
        if !agrees {
            off.push(edge.clone());
        }
    }
    eprintln!("{}: pmcstat vs perf\n{report}", command[0]);
    ensure!(
        off.is_empty(),
        "{command:?}: edges whose shares are further apart than sampling noise (z = {Z}, 1e-4 per edge) and {RUN_TO_RUN} points: {off:?}\n{report}pmcstat's top five: {top_ours:#?}\nperf's top five: {top_theirs:#?}"
    );
    Ok(())
}

/// The share (%) of stacks with a frame of the process's start.
fn reach_share(stacks: &[Stack]) -> f64 {
    let reached = stacks
        .iter()
        .filter(|s| {
            s.iter().any(|(name, _)| {
                name.as_deref().is_some_and(|n| {
                    n == "_start"
                        || n == "__libc_start_call_main"
                        || n.starts_with("__libc_start_main")
                })
            })
        })
        .count();
    100.0 * reached as f64 / stacks.len() as f64
}

fn names(stacks: &[Stack]) -> HashSet<String> {
    stacks
        .iter()
        .flatten()
        .filter_map(|(n, _)| n.clone())
        .collect()
}

/// The share (%) of samples whose stack holds each caller→callee edge,
/// frames keyed by a name both tools give, else by image; runs of one
/// key (calls within an unnamed image) are one frame.
fn edge_shares(stacks: &[Stack], common: &HashSet<&String>) -> HashMap<(String, String), f64> {
    let mut counts: HashMap<(String, String), usize> = HashMap::new();
    for s in stacks {
        let mut keys: Vec<String> = s
            .iter()
            .map(|(n, image)| match n {
                Some(n) if common.contains(n) || image.is_empty() => n.clone(),
                _ => image.clone(),
            })
            .collect();
        keys.dedup();
        let edges: HashSet<(String, String)> = keys
            .windows(2)
            .map(|w| (w[0].clone(), w[1].clone()))
            .collect();
        for e in edges {
            *counts.entry(e).or_default() += 1;
        }
    }
    counts
        .into_iter()
        .map(|(e, n)| (e, 100.0 * n as f64 / stacks.len() as f64))
        .collect()
}

fn top(shares: &HashMap<(String, String), f64>, n: usize) -> Vec<((String, String), f64)> {
    let mut v: Vec<_> = shares.iter().map(|(e, s)| (e.clone(), *s)).collect();
    v.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    v.truncate(n);
    v
}

/// The image part of a path or of pmcstat's `image+0xoff`.
fn image_name(path: &str) -> String {
    path.rsplit('/').next().unwrap_or(path).to_string()
}

fn pmcstat_stacks(
    dir: &TempDir,
    command: &[&str],
    modes: Modes,
) -> Result<Vec<Stack>, libtest_mimic::Failed> {
    let log = dir.path("pmcstat.log");
    let mut args = vec!["--call-graph", "dwarf", "-q", "-n", PERIOD_NS];
    match modes {
        Modes::User => args.extend(["-P", "cpu-clock,usr"]),
        // Both qualifiers: a bare event would fall back to user mode
        // where paranoid forbids the kernel's; this fails instead, naming
        // the errno and the sysctl.
        Modes::KernelAndUser => args.extend(["-U", "-P", "cpu-clock,usr,os"]),
    }
    args.extend(["-O", &log, "--"]);
    args.extend_from_slice(command);
    let out = Command::new(PMCSTAT)
        .args(&args)
        .current_dir(dir.dir())
        .stdin(Stdio::null())
        .output()
        .ctx("run pmcstat")?;
    ensure!(
        out.status.success(),
        "pmcstat {args:?}: {:?} {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let folded = dir.path("pmcstat.folded");
    crate::run_ok(PMCSTAT, &["-R", &log, "--folded", &folded])?;
    let text = std::fs::read_to_string(&folded).ctx("read the folded stacks")?;
    // Folded stacks name functions without their image; the call graph
    // (`-G`, pmcpl_callgraph.c's tree) gives it, `name @ image` where the
    // image changes from the caller's: a frame named by pmcstat alone is
    // compared on its image, as one named by perf alone is.
    let out = crate::run_ok(PMCSTAT, &["-R", &log, "-G", "-"])?;
    let images = images_of_names(&String::from_utf8_lossy(&out.stdout));
    let mut stacks = Vec::new();
    for line in text.lines() {
        let Some((frames, count)) = line.rsplit_once(' ') else {
            continue;
        };
        let count: usize = count.parse().ctx("a folded line's count")?;
        let stack: Stack = frames
            .split(';')
            .map(|f| match f.rsplit_once("+0x") {
                Some((image, off)) if off.chars().all(|c| c.is_ascii_hexdigit()) => {
                    (None, image_name(image))
                }
                _ => (
                    Some(f.to_string()),
                    images.get(f).cloned().unwrap_or_default(),
                ),
            })
            .collect();
        stacks.extend(std::iter::repeat_n(stack, count));
    }
    Ok(stacks)
}

/// Each function's image from `pmcstat -R -G`'s tree: a line is
/// `PCT% [COUNT] NAME` or `… NAME @ IMAGE`, indented one space per depth; a
/// line without `@` is in its caller's image.
fn images_of_names(graph: &str) -> HashMap<String, String> {
    let mut images = HashMap::new();
    let mut by_depth: Vec<String> = Vec::new();
    for line in graph.lines() {
        let depth = line.len() - line.trim_start().len();
        let Some((_, rest)) = line.split_once("] ") else {
            continue;
        };
        let rest = rest.trim();
        let (name, image) = match rest.split_once(" @ ") {
            Some((name, image)) => (name, image_name(image)),
            None => match depth.checked_sub(1).and_then(|d| by_depth.get(d)) {
                Some(image) => (rest, image.clone()),
                None => continue,
            },
        };
        by_depth.truncate(depth);
        by_depth.resize(depth, String::new());
        by_depth.push(image.clone());
        images.entry(name.to_string()).or_insert(image);
    }
    images
}

fn perf_stacks(
    dir: &TempDir,
    command: &[&str],
    modes: Modes,
) -> Result<Vec<Stack>, libtest_mimic::Failed> {
    let data = dir.path("perf.data");
    let event = match modes {
        Modes::User => "cpu-clock:u",
        Modes::KernelAndUser => "cpu-clock",
    };
    let out = Command::new("perf")
        .args([
            "record",
            "-q",
            "--call-graph",
            "dwarf",
            "-e",
            event,
            "-c",
            PERIOD_NS,
            "-o",
            &data,
            "--",
        ])
        .args(command)
        .current_dir(dir.dir())
        .stdin(Stdio::null())
        .output()
        .ctx("run perf record")?;
    ensure!(
        out.status.success(),
        "perf record: {:?} {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let out = Command::new("perf")
        .args(["script", "--no-inline", "-F", "ip,sym,dso", "-i", &data])
        .stderr(Stdio::null())
        .output()
        .ctx("run perf script")?;
    ensure!(out.status.success(), "perf script: {:?}", out.status);
    let text = String::from_utf8_lossy(&out.stdout);
    let mut stacks = Vec::new();
    for block in text.split("\n\n") {
        // perf prints innermost first: `ADDR SYM (DSO)`.
        let mut stack: Stack = block
            .lines()
            .filter_map(|l| {
                let l = l.trim();
                let (_, rest) = l.split_once(' ')?;
                let (sym, dso) = rest.rsplit_once(" (")?;
                let dso = dso.trim_end_matches(')');
                let sym = sym.split("@@").next().unwrap_or(sym).trim();
                let name = (sym != "[unknown]").then(|| sym.to_string());
                Some((name, image_name(dso)))
            })
            .collect();
        if stack.is_empty() {
            continue;
        }
        stack.reverse();
        stacks.push(stack);
    }
    Ok(stacks)
}
