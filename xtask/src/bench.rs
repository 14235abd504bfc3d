//! `cargo xtask bench`: runs the paired-round read benchmark
//! (`benches/read_ratio.rs`) and prints each subject as a ratio against the
//! `read(2)` baseline measured in the same rounds, with its target.
//! `cargo bench --bench read_path` gives criterion's absolute latencies.
//! Then the cost of opening (`benches/open_cost.rs`), record decoding,
//! sampling overhead and the start/read/stop bracket.

use std::process::{Command, ExitCode};

/// Options of `cargo xtask bench`.
#[derive(clap::Args, Debug, Clone)]
pub struct BenchArgs {
    /// Also run the criterion benchmarks (absolute latencies, slower).
    #[arg(long)]
    pub criterion: bool,
    /// Run only the `--call-graph dwarf` recording benchmark.
    #[arg(long)]
    pub dwarf_only: bool,
    /// Only the report benchmark: `pmcstat -R` against `perf report` on
    /// the same workloads.
    #[arg(long)]
    pub report_only: bool,
    /// Keep this run's figures: docs/performance.jsonl, the table in
    /// docs/performance.md and README's performance lines.
    #[arg(long)]
    pub record: bool,
    /// Only the exporter benchmark: the cost of one `pmcstat --listen`
    /// scrape of 10 events on every CPU.
    #[arg(long)]
    pub exporter_only: bool,
    /// Only the rates benchmark: dash's CPU under pmcstat's default rate
    /// against perf record's, and what `pmcstat -T -w 1` costs.
    #[arg(long)]
    pub rates_only: bool,
    /// Only the whole-system DWARF benchmark: `pmcstat -S --call-graph
    /// dwarf` against `perf record -a --call-graph dwarf`, and the stop of
    /// a long recording.
    #[arg(long)]
    pub system_only: bool,
    /// Only the many-CPU case on the simulator: per-CPU costs at 2 to 256
    /// CPUs, and the drain of 256 rings.
    #[arg(long)]
    pub manycpus_only: bool,
    /// Only the report memory benchmark: peak RSS of `pmcstat -R` on a
    /// large whole-machine log, and against `perf report` on one perf.data.
    #[arg(long)]
    pub reportmem_only: bool,
}

/// TC allocate → attach → start → stop → release over the raw syscalls,
/// in thread CPU time (issue 36 §5).
const OPEN_CYCLE_TARGET: f64 = 1.25;
/// A PerCpu of ten events over their raw opens on every CPU.
const PERCPU_OPEN10_TARGET: f64 = 1.1;

/// The figures README shows, as (case, figure): one per claim a reader
/// weighs first; docs/performance.md has them all.
const HEADLINES: &[(&str, &str)] = &[
    ("read", "pmc_read"),
    ("open_cost", "open_cycle"),
    ("open_cost", "percpu_open10"),
    ("manycpus", "sc_per_cpu_256_vs_16"),
    ("sampling", "slowdown_vs_perf"),
    ("dwarf", "log_size_4kHz"),
    ("sysdwarf", "lost_pct_65536"),
    ("sysdwarf", "peak_rss_65536"),
    ("sysdwarf", "stop_peak_rss"),
    ("rates", "dash_cpu_default"),
    ("rates", "top_refresh_cpu_pct_system"),
    ("reportmem", "log_G"),
    ("reportmem", "perf_data_G"),
    ("exporter", "scrape_latency"),
];

fn verdict(met: bool) -> &'static str {
    if met { "met" } else { "MISSED" }
}

/// The target for a subject, if it has one, and what it stands for.
fn target(subject: &str) -> (Option<f64>, &'static str) {
    match subject {
        "pmc_read" => (Some(1.02), "pmc TC read vs raw read(2), same attr"),
        "pmc_linux_read_timed" => (Some(1.02), "pmc-linux Event::read_timed vs raw read(2)"),
        "group4_read" => (Some(1.15), "group of 4 in one read vs one raw read"),
        "perf_event2_read" => (None, "perf-event2 Counter::read vs raw read(2)"),
        "perf_event_read" => (None, "perf-event 0.4 Counter::read vs raw read(2)"),
        "raw_group4_read" => (None, "read(2) of the same group of 4 (kernel cost)"),
        _ => (None, "?"),
    }
}

pub fn run(args: &BenchArgs) -> ExitCode {
    crate::bench_report::measure_child_if_requested();
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask sits in the workspace")
        .to_path_buf();
    let figures = crate::bench_summary::start_run(&root);
    let code = run_cases(args);
    if args.record && code == ExitCode::SUCCESS {
        if let Err(e) = crate::bench_summary::record_run(&root, &figures, HEADLINES) {
            eprintln!("xtask bench --record: {e}");
            return ExitCode::FAILURE;
        }
        println!(
            "\nrecorded: {}, {} and README's performance lines",
            crate::bench_summary::RECORDED,
            crate::bench_summary::TABLE
        );
    }
    code
}

/// A case's body, given the cargo to build with.
type Case = fn(&str) -> Result<(), String>;

/// The cases xtask runs itself (each starts the tools it compares), by
/// the name of their `--NAME-only` flag, in the order a full run takes.
const IN_XTASK: &[(&str, Case)] = &[
    ("report", crate::bench_report::run),
    ("reportmem", |cargo| {
        with_pmcstat(cargo, crate::bench_reportmem::run)
    }),
    ("dwarf", |cargo| {
        with_pmcstat(cargo, crate::bench_dwarf::run)
    }),
    ("system", |cargo| {
        with_pmcstat(cargo, crate::bench_system::run)
    }),
    ("rates", |cargo| {
        with_pmcstat(cargo, crate::bench_rates::run)
    }),
    ("exporter", crate::bench_exporter::run),
    ("manycpus", crate::bench_manycpus::run),
];

/// Runs `case` with the release pmcstat.
fn with_pmcstat(
    cargo: &str,
    case: fn(&std::path::Path) -> Result<(), String>,
) -> Result<(), String> {
    crate::bench_report::release_pmcstat(cargo).and_then(|p| case(&p))
}

/// Runs the named in-xtask cases; says which failed.
fn run_in_xtask(cargo: &str, only: Option<&str>) -> ExitCode {
    let mut code = ExitCode::SUCCESS;
    for (name, case) in IN_XTASK
        .iter()
        .filter(|(n, _)| only.is_none_or(|o| o == *n))
    {
        if let Err(e) = case(cargo) {
            eprintln!("xtask bench: {name} benchmark: {e}");
            code = ExitCode::FAILURE;
        }
    }
    code
}

fn run_cases(args: &BenchArgs) -> ExitCode {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let only = [
        (args.report_only, "report"),
        (args.dwarf_only, "dwarf"),
        (args.system_only, "system"),
        (args.rates_only, "rates"),
        (args.exporter_only, "exporter"),
        (args.manycpus_only, "manycpus"),
        (args.reportmem_only, "reportmem"),
    ]
    .into_iter()
    .find_map(|(set, name)| set.then_some(name));
    if only.is_some() {
        return run_in_xtask(&cargo, only);
    }
    let out = Command::new(&cargo)
        .args(["bench", "-q", "-p", "hwpmc", "--bench", "read_ratio"])
        .stderr(std::process::Stdio::inherit())
        .output();
    let out = match out {
        Ok(o) if o.status.success() => o,
        Ok(o) => {
            eprintln!("xtask bench: read_ratio failed ({})", o.status);
            return ExitCode::FAILURE;
        }
        Err(e) => {
            eprintln!("xtask bench: cannot run cargo: {e}");
            return ExitCode::FAILURE;
        }
    };
    let rows: Vec<serde_json::Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    if rows.is_empty() {
        eprintln!("xtask bench: read_ratio printed no results");
        return ExitCode::FAILURE;
    }
    let event = rows[0]["event"].as_str().unwrap_or("?");
    println!(
        "read path, event `{event}`, {} paired rounds × {} calls (ratio = median of per-round subject/baseline; IQR in brackets)\n",
        rows[0]["rounds"], rows[0]["calls_per_round"]
    );
    println!(
        "{:<46} {:>10} {:>10} {:>7} {:>17} {:>7}  verdict",
        "ratio", "subject", "baseline", "ratio", "IQR", "target"
    );
    for r in &rows {
        let subject = r["subject"].as_str().unwrap_or("?");
        let (goal, what) = target(subject);
        let ratio = r["ratio"].as_f64().unwrap_or(f64::NAN);
        if let Some(g) = goal {
            crate::bench_summary::record(&crate::bench_summary::Figure {
                case: "read",
                figure: subject,
                what,
                ours: r["subject_ns"].as_f64().unwrap_or(f64::NAN),
                baseline: r["baseline_ns"].as_f64().unwrap_or(f64::NAN),
                unit: "ns",
                ratio: Some(ratio),
                target: &format!("ratio <= {g:.2}"),
                met: ratio <= g,
            });
        }
        println!(
            "{:<46} {:>8.1}ns {:>8.1}ns {:>7.3} {:>17} {:>7}  {}",
            what,
            r["subject_ns"].as_f64().unwrap_or(f64::NAN),
            r["baseline_ns"].as_f64().unwrap_or(f64::NAN),
            ratio,
            format!(
                "[{:.3}, {:.3}]",
                r["ratio_q1"].as_f64().unwrap_or(f64::NAN),
                r["ratio_q3"].as_f64().unwrap_or(f64::NAN)
            ),
            goal.map_or("-".into(), |g| format!("{g:.2}")),
            match goal {
                Some(g) if ratio <= g => "meets target",
                Some(_) => "MISSES target",
                None => "(peer)",
            }
        );
    }
    // Record decoding and sampling overhead (issue targets: ≥ 50 M samples/s
    // and ≥ 2× perf-event-data; 0 lost and a slowdown no worse than perf's).
    for (pkg, bench) in [
        ("hwpmc", "open_cost"),
        ("hwpmc-linux", "decode"),
        ("hwpmc", "sampling_overhead"),
        ("hwpmc", "bracket_instructions"),
    ] {
        let out = Command::new(&cargo)
            .args(["bench", "-q", "-p", pkg, "--bench", bench])
            .stderr(std::process::Stdio::inherit())
            .output();
        let Ok(out) = out.map_err(|e| eprintln!("xtask bench: {bench}: {e}")) else {
            return ExitCode::FAILURE;
        };
        if !out.status.success() {
            eprintln!("xtask bench: {bench} failed ({})", out.status);
            return ExitCode::FAILURE;
        }
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else {
                continue;
            };
            match v["subject"].as_str() {
                Some("decode") => {
                    let ours = v["ours_per_s"].as_f64().unwrap_or(0.0);
                    let ratio = v["ratio"].as_f64().unwrap_or(0.0);
                    crate::bench_summary::record(&crate::bench_summary::Figure {
                        case: "decode",
                        figure: "samples_per_s",
                        what: "record decoding vs perf-event-data",
                        ours: ours / 1e6,
                        baseline: v["peer_per_s"].as_f64().unwrap_or(0.0) / 1e6,
                        unit: "M samples/s",
                        ratio: Some(ratio),
                        target: ">= 50 M/s and >= 2x",
                        met: ours >= 50e6 && ratio >= 2.0,
                    });
                    println!(
                        "\nrecord decode: {:.1} M samples/s, {:.2}x perf-event-data ({:.1} M/s)                          [targets: 50 M/s {}, 2x {}]",
                        ours / 1e6,
                        ratio,
                        v["peer_per_s"].as_f64().unwrap_or(0.0) / 1e6,
                        verdict(ours >= 50e6),
                        verdict(ratio >= 2.0)
                    );
                }
                Some("sampling") => {
                    let ours = v["pmc_slowdown"].as_f64().unwrap_or(f64::NAN);
                    let perf = v["perf_slowdown"].as_f64();
                    let lost = v["lost"].as_u64().unwrap_or(u64::MAX);
                    // Paired per round: pmc's workload time over perf's.
                    let paired = v["pmc_over_perf"].as_f64();
                    if let (Some(p), Some(perf)) = (paired, perf) {
                        crate::bench_summary::record(&crate::bench_summary::Figure {
                            case: "sampling",
                            figure: "slowdown_vs_perf",
                            what: "workload slowdown sampled at 10 kHz with callchains vs perf record -g",
                            ours,
                            baseline: perf,
                            unit: "x",
                            ratio: Some(p),
                            target: "pmc/perf <= 1, 0 lost",
                            met: p <= 1.0 && lost == 0,
                        });
                    }
                    println!(
                        "sampling at 10 kHz with callchains: workload slowdown {ours:.3}x with pmc, {} \
                         with perf record -g; pmc/perf per round {} [{}, {}]; {} samples, {lost} lost \
                         [targets: lost 0 {}, slowdown <= perf's {}]",
                        perf.map_or("n/a".into(), |p| format!("{p:.3}x")),
                        paired.map_or("n/a".into(), |p| format!("{p:.3}")),
                        v["pmc_over_perf_q1"],
                        v["pmc_over_perf_q3"],
                        v["samples"],
                        verdict(lost == 0),
                        paired.map_or("n/a", |p| verdict(p <= 1.0))
                    );
                }
                // The cost of opening (issue 14 §7): ratios against raw
                // perf_event_open in the same rounds.
                Some(
                    subject @ ("open_cycle"
                    | "percpu_open10"
                    | "allocate_software"
                    | "allocate_tracepoint"
                    | "allocate_unknown"),
                ) => {
                    if let Some(why) = v["skipped"].as_str() {
                        println!("{subject}: not measured ({why})");
                        continue;
                    }
                    // Judged on thread CPU time: on a shared machine the
                    // wall ratio mostly measures the other programs' turns.
                    let f = |key: &str| v[key].as_f64().unwrap_or(f64::NAN);
                    let cpu_ratio = f("cpu_ratio");
                    let cpu_us = f("subject_cpu_ns") / 1e3;
                    let limit = match subject {
                        "open_cycle" => Some(OPEN_CYCLE_TARGET),
                        "percpu_open10" => Some(PERCPU_OPEN10_TARGET),
                        _ => None,
                    };
                    if let Some(limit) = limit {
                        crate::bench_summary::record(&crate::bench_summary::Figure {
                            case: "open_cost",
                            figure: subject,
                            what: v["what"].as_str().unwrap_or(subject),
                            ours: cpu_us,
                            baseline: f("baseline_cpu_ns") / 1e3,
                            unit: "us CPU",
                            ratio: Some(cpu_ratio),
                            target: &format!("CPU ratio <= {limit}"),
                            met: cpu_ratio <= limit,
                        });
                    }
                    let target = match (limit, subject) {
                        (Some(limit), _) => {
                            format!("CPU ratio <= {limit} {}", verdict(cpu_ratio <= limit))
                        }
                        (None, "allocate_unknown") => {
                            format!("CPU time <= 50 us {}", verdict(cpu_us <= 50.0))
                        }
                        _ => "no target".into(),
                    };
                    println!(
                        "{}: CPU {cpu_us:.1} us vs raw {:.1} us, ratio {cpu_ratio:.3} [{:.3}, {:.3}]; \
                         wall {:.1} us vs raw {:.1} us, ratio {:.3} [{:.3}, {:.3}] [{target}]",
                        v["what"].as_str().unwrap_or(subject),
                        f("baseline_cpu_ns") / 1e3,
                        f("cpu_ratio_q1"),
                        f("cpu_ratio_q3"),
                        f("subject_ns") / 1e3,
                        f("baseline_ns") / 1e3,
                        f("ratio"),
                        f("ratio_q1"),
                        f("ratio_q3"),
                    );
                }
                Some(subject @ ("bracket" | "bracket_instructions_u")) => {
                    let how = if subject == "bracket" {
                        "counted by callgrind"
                    } else {
                        "counted by instructions:u"
                    };
                    match v["skipped"].as_str() {
                        Some(why) => {
                            println!("start/read/stop bracket ({how}): not measured ({why})")
                        }
                        None => {
                            let added = v["added"].as_f64().unwrap_or(f64::NAN);
                            crate::bench_summary::record(&crate::bench_summary::Figure {
                                case: "bracket",
                                figure: subject,
                                what: "user instructions of a start/read/stop bracket vs raw ioctls/read(2)",
                                ours: v["pmc_per_bracket"].as_f64().unwrap_or(f64::NAN),
                                baseline: v["raw_per_bracket"].as_f64().unwrap_or(f64::NAN),
                                unit: "instructions",
                                ratio: None,
                                target: "adds <= 100",
                                met: added <= 100.0,
                            });
                            println!(
                                "start/read/stop bracket ({how}): {} user instructions with pmc, \
                                 {} with raw ioctls/read(2); pmc adds {added:.0} [target <= 100 {}]",
                                v["pmc_per_bracket"],
                                v["raw_per_bracket"],
                                verdict(added <= 100.0)
                            );
                        }
                    }
                }
                _ => {}
            }
        }
    }
    if run_in_xtask(&cargo, None) != ExitCode::SUCCESS {
        return ExitCode::FAILURE;
    }
    if args.criterion {
        let status = Command::new(&cargo)
            .args([
                "bench",
                "-p",
                "hwpmc",
                "--bench",
                "read_path",
                "--",
                "--noplot",
            ])
            .status();
        if !status.is_ok_and(|s| s.success()) {
            eprintln!("xtask bench: criterion read_path failed");
            return ExitCode::FAILURE;
        }
    }
    ExitCode::SUCCESS
}
