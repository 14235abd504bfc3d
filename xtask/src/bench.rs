//! `cargo xtask bench`: runs the criterion benchmarks and prints each
//! measurement as a ratio against its baseline from the same run.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

/// Options of `cargo xtask bench`.
#[derive(clap::Args, Debug, Clone)]
pub struct BenchArgs {
    /// Only print the ratios of the last run (do not run the benchmarks).
    #[arg(long)]
    pub report_only: bool,
}

/// A measured ratio with its target.
struct Ratio {
    what: &'static str,
    bench: &'static str,
    subject: &'static str,
    baseline: &'static str,
    target: f64,
}

const RATIOS: &[Ratio] = &[
    Ratio {
        what: "pmc TC read vs raw read(2), same attr",
        bench: "read_path",
        subject: "pmc_read",
        baseline: "raw_read",
        target: 1.02,
    },
    Ratio {
        what: "group of 4 in one read vs one raw read",
        bench: "read_path",
        subject: "group4_read",
        baseline: "raw_read",
        target: 1.15,
    },
];

fn target_dir() -> PathBuf {
    let out = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .args(["metadata", "--format-version", "1", "--no-deps"])
        .output();
    out.ok()
        .and_then(|o| serde_json::from_slice::<serde_json::Value>(&o.stdout).ok())
        .and_then(|v| v["target_directory"].as_str().map(PathBuf::from))
        .unwrap_or_else(|| PathBuf::from("target"))
}

/// The median estimate (ns) criterion stored for a benchmark.
fn median_ns(root: &Path, group: &str, name: &str) -> Option<f64> {
    let path = root
        .join("criterion")
        .join(group)
        .join(name)
        .join("new")
        .join("estimates.json");
    let text = std::fs::read_to_string(path).ok()?;
    let v: serde_json::Value = serde_json::from_str(&text).ok()?;
    v["median"]["point_estimate"].as_f64()
}

pub fn run(args: &BenchArgs) -> ExitCode {
    if !args.report_only {
        let mut benches: Vec<&str> = RATIOS.iter().map(|r| r.bench).collect();
        benches.dedup();
        for b in benches {
            let status = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
                .args(["bench", "-p", "pmc", "--bench", b, "--", "--noplot"])
                .status();
            if !status.is_ok_and(|s| s.success()) {
                eprintln!("xtask bench: benchmark {b} failed");
                return ExitCode::FAILURE;
            }
        }
    }
    let root = target_dir();
    println!(
        "\n{:<44} {:>10} {:>10} {:>7} {:>7}  verdict",
        "ratio", "subject", "baseline", "ratio", "target"
    );
    let mut missing = false;
    for r in RATIOS {
        match (
            median_ns(&root, r.bench, r.subject),
            median_ns(&root, r.bench, r.baseline),
        ) {
            (Some(s), Some(b)) if b > 0.0 => {
                let ratio = s / b;
                println!(
                    "{:<44} {:>8.1}ns {:>8.1}ns {:>7.3} {:>7.2}  {}",
                    r.what,
                    s,
                    b,
                    ratio,
                    r.target,
                    if ratio <= r.target {
                        "meets target"
                    } else {
                        "MISSES target"
                    }
                );
            }
            _ => {
                missing = true;
                println!(
                    "{:<44} no measurement found for {}/{}",
                    r.what, r.bench, r.subject
                );
            }
        }
    }
    if missing {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
