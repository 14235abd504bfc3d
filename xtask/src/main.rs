//! `cargo xtask`: the project's entry points.
//!
//! - `cargo xtask probe [--json]`: what this machine can count, and why not.
//! - `cargo xtask test`: builds and runs every test, prints each skip reason
//!   once and ends with `N passed, N failed, N skipped, N flaky` (a flake:
//!   a retry a test reported; `--expect` fails on any).
//! - `cargo xtask test --vm arm64`: the live suite in a QEMU guest with an
//!   emulated PMUv3 (Debian's arm64 kernel), tallied here.
//! - `cargo xtask test --matrix`: the suite under every perf_event_paranoid
//!   level × {root, nobody}, proving each skip is needed.
//! - `cargo xtask bench`: runs the benchmarks and prints the ratios against
//!   the baselines measured in the same run.
//! - `cargo xtask gen-pmu-events <linux source>`: regenerates the native
//!   event table (`backends/linux/src/pmu_events/`).
//! - `cargo xtask gen-pmc-events <freebsd source>`: regenerates libpmc's
//!   `PMC_EV_*` enumerators (`capi/include/pmc_events.h`).
//! - `cargo xtask mutants [--file F] [--shard K/N] [--re REGEX]`:
//!   cargo-mutants on the core files, caught / missed / unviable per file
//!   (`--re`: re-test earlier survivors, merged over the full run).
//! - `cargo xtask install --prefix DIR [--destdir D]`: libpmc (libraries,
//!   headers, pkg-config file, pmc(3)), pmcstat and pmccontrol with their
//!   man pages and shell completions, laid out under DIR.
//! - `cargo xtask tidy [--layers]`: the invariants a command can check (see
//!   `tidy.rs`), with the layer report.
//! - `cargo xtask public-api [--bless]`: the library crates' public surface
//!   against the snapshots in `public-api/` (see `public_api.rs`).

mod bench;
mod bench_dwarf;
mod bench_exporter;
mod bench_manycpus;
mod bench_rates;
mod bench_report;
mod bench_reportmem;
mod bench_summary;
mod bench_system;
mod install;
mod matrix;
mod mutants;
mod pmc_events;
mod pmu_events;
mod public_api;
#[cfg(test)]
mod readme;
mod test;
mod tidy;
mod vm;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(name = "cargo xtask", about = "pmc project tasks")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Print the capability report of this machine.
    Probe {
        /// Machine-readable JSON instead of the table.
        #[arg(long)]
        json: bool,
    },
    /// Run the whole test suite.
    Test(test::TestArgs),
    /// Run the benchmarks and report ratios against their baselines.
    Bench(bench::BenchArgs),
    /// Regenerate the native event table from a Linux source tree.
    GenPmuEvents(pmu_events::GenArgs),
    /// Regenerate libpmc's PMC_EV_* enumerators from a FreeBSD source tree.
    GenPmcEvents(pmc_events::GenArgs),
    /// Install libpmc, its headers, pkg-config file and man pages, and the tools with theirs, under a prefix.
    Install(install::InstallArgs),
    /// Mutation testing (cargo-mutants) of the core files; score per file.
    Mutants(mutants::MutantsArgs),
    /// Compare the library crates' public surface with public-api/*.txt (--bless rewrites them).
    PublicApi(public_api::PublicApiArgs),
    /// Check the invariants a command can check (unsafe only in sys/, SAFETY lines, file length, no /proc or /sys in the portable crate, the layering, process-wide statics, no branch on an error message).
    Tidy {
        /// The tree to check (default: this workspace).
        root: Option<std::path::PathBuf>,
        /// Also list each layer's files and every upward import.
        #[arg(long)]
        layers: bool,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Probe { json } => {
            let report = pmc::probe::Report::detect();
            if json {
                match serde_json::to_string_pretty(&report) {
                    Ok(s) => println!("{s}"),
                    Err(e) => {
                        eprintln!("xtask probe: {e}");
                        return ExitCode::FAILURE;
                    }
                }
            } else {
                print!("{}", report.to_text());
            }
            ExitCode::SUCCESS
        }
        Command::Test(args) => test::run(&args),
        Command::Bench(args) => bench::run(&args),
        Command::GenPmuEvents(args) => pmu_events::run(&args),
        Command::GenPmcEvents(args) => pmc_events::run(&args),
        Command::Install(args) => install::run(&args),
        Command::Mutants(args) => mutants::run(&args),
        Command::PublicApi(args) => public_api::run(&args),
        Command::Tidy { root, layers } => tidy::run(root, layers),
    }
}
