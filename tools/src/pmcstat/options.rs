//! pmcstat's arguments (clap) and the checks of them that need no machine.

use std::ffi::OsString;
use std::process::ExitCode;

use clap::Parser;

use crate::profile_args::ProfileArgs;
use crate::usage;

use super::TOOL;

/// Count hardware and software events with hwpmc semantics on Linux perf_event.
#[derive(Parser, Debug)]
#[command(
    name = "pmcstat",
    version,
    after_help = "Examples:\n  pmcstat -p instructions,usr -- ./a.out\n  \
                  pmcstat -s page-faults -c '*' -l 5\n  pmcstat -p task-clock -t 1234 -w 1"
)]
pub(super) struct Args {
    /// Count SPEC in the target process(es) (process counting mode, TC).
    #[arg(short = 'p', value_name = "SPEC")]
    pub(super) process: Vec<String>,
    /// Count SPEC system-wide on the CPUs of -c (system counting mode, SC).
    #[arg(short = 's', value_name = "SPEC")]
    pub(super) system: Vec<String>,
    /// Sample SPEC in the target process(es) (process sampling mode, TS).
    #[arg(short = 'P', value_name = "SPEC")]
    pub(super) process_sampling: Vec<String>,
    /// Sample SPEC system-wide on the CPUs of -c (system sampling mode, SS).
    #[arg(short = 'S', value_name = "SPEC")]
    pub(super) system_sampling: Vec<String>,
    /// Reload count: events between samples.
    #[arg(short = 'n', value_name = "COUNT", default_value_t = 65536, value_parser = reload_count)]
    pub(super) reload: u64,
    /// Toggle callchain capture (on by default).
    #[arg(short = 'N')]
    pub(super) no_callchains: bool,
    /// Also capture the user stack of samples taken in the kernel.
    #[arg(short = 'U')]
    pub(super) user_callchains: bool,
    /// Write the samples' pmclog to FILE.
    #[arg(short = 'O', value_name = "FILE", conflicts_with = "read_log")]
    pub(super) log_out: Option<std::path::PathBuf>,
    /// Read a pmclog FILE instead of measuring: dump its records, or report
    /// with -G / --folded.
    #[arg(short = 'R', value_name = "FILE")]
    pub(super) read_log: Option<std::path::PathBuf>,
    /// Write a call graph with symbols to FILE (`-` for standard output).
    #[arg(short = 'G', value_name = "FILE")]
    pub(super) callgraph: Option<std::path::PathBuf>,
    /// Write folded stacks (flamegraph input) to FILE (`-` for standard output).
    #[arg(long, value_name = "FILE")]
    pub(super) folded: Option<std::path::PathBuf>,
    #[command(flatten)]
    pub(super) profile: ProfileArgs,
    /// CPUs for system PMCs: a list such as `0-3,6`, or `*` for all.
    #[arg(short = 'c', value_name = "CPUS", default_value = "*")]
    pub(super) cpus: String,
    /// Also count the target's current and future child processes.
    #[arg(short = 'd')]
    pub(super) descendants: bool,
    /// Attach process PMCs to this running process instead of a command.
    #[arg(short = 't', value_name = "PID")]
    pub(super) pid: Option<u32>,
    /// Print counts every SECS seconds.
    // Negative numbers reach run()'s check, which says what -w takes.
    #[arg(short = 'w', value_name = "SECS", allow_negative_numbers = true)]
    pub(super) interval: Option<f64>,
    /// Stop counting after SECS seconds (the command keeps running).
    #[arg(short = 'l', value_name = "SECS", allow_negative_numbers = true)]
    pub(super) duration: Option<f64>,
    /// Print totals since the start at each interval instead of deltas.
    #[arg(short = 'C')]
    pub(super) cumulative: bool,
    /// Write counts to FILE instead of standard error.
    #[arg(short = 'o', value_name = "FILE")]
    pub(super) output: Option<std::path::PathBuf>,
    /// Print counts as JSON lines.
    #[arg(long, conflicts_with = "csv")]
    pub(super) json: bool,
    /// Print counts as CSV.
    #[arg(long)]
    pub(super) csv: bool,
    /// Quiet: no progress or notes.
    #[arg(short = 'q')]
    pub(super) quiet: bool,
    /// Top-like live view of the sampling PMCs, refreshed every -w SECS
    /// (default 5). Keys: q quit, space pause, c then a/d accumulate/delta,
    /// p next PMC, m merge PMCs of one name, n next view, f skip-link.
    #[arg(short = 'T', conflicts_with_all = ["duration", "read_log", "log_out"])]
    pub(super) top: bool,
    /// Write each sample's pc with its function and the function's start and
    /// end addresses to FILE (`-` for standard output).
    #[arg(short = 'm', value_name = "FILE")]
    pub(super) sampled_pcs: Option<std::path::PathBuf>,
    /// Write every frame of each sample's callchain with function and
    /// file:line to FILE (`-` for standard output).
    #[arg(short = 'a', value_name = "FILE")]
    pub(super) annotated: Option<std::path::PathBuf>,
    /// Keep at most DEPTH frames (innermost first) of each callchain.
    #[arg(short = 'z', value_name = "DEPTH", value_parser = clap::value_parser!(u32).range(1..))]
    pub(super) depth: Option<u32>,
    /// Log each process PMC's count per process at its exit (LOG_PROCEXIT);
    /// printed as `exitval` records, or kept in the -O log.
    #[arg(short = 'E')]
    pub(super) log_exit: bool,
    /// Log each thread's count at every context switch (LOG_PROCCSW);
    /// printed as `cswval` records, or kept in the -O log.
    #[arg(short = 'W')]
    pub(super) log_csw: bool,
    /// List the events of this machine, one per line.
    #[arg(short = 'L')]
    pub(super) list_events: bool,
    /// Describe the events whose name contains SPEC.
    #[arg(short = 'u', value_name = "SPEC")]
    pub(super) describe: Option<String>,
    /// Show the sampled function's address instead of its name (top view).
    #[arg(short = 'I')]
    pub(super) show_address: bool,
    /// Kernel directory (FreeBSD; no effect on Linux: kernel frames are
    /// named from the running kernel's /proc/kallsyms).
    #[arg(short = 'k', value_name = "DIR")]
    pub(super) kernel_dir: Option<std::path::PathBuf>,
    /// Look executables up under ROOT when resolving symbols (kernel frames
    /// still come from the running kernel's /proc/kallsyms).
    #[arg(short = 'r', value_name = "ROOT")]
    pub(super) fs_root: Option<std::path::PathBuf>,
    /// More diagnostics: conversion statistics after reports.
    #[arg(short = 'v', action = clap::ArgAction::Count)]
    pub(super) verbose: u8,
    /// Wide history counters for gprof output (-g).
    #[arg(short = 'e')]
    pub(super) wide_gprof: bool,
    /// Plugin option: `threshold=PCT` (hide rows under PCT%) or
    /// `skiplink=0|1` (show hidden rows as a dot), for the top view.
    #[arg(short = 'f', value_name = "OPTION")]
    pub(super) plugin_options: Vec<String>,
    /// Keep only the samples of thread TID in reports.
    #[arg(short = 'i', value_name = "TID")]
    pub(super) thread: Option<u32>,
    /// The command to run and count (after `--`).
    #[arg(trailing_var_arg = true, value_name = "COMMAND")]
    pub(super) command: Vec<OsString>,
}

/// `-n COUNT`: pmcstat.c refuses a count <= 0 ("Illegal count value",
/// EX_USAGE); the largest is perf_event's (and strtol's) 2^63 - 1.
fn reload_count(text: &str) -> Result<u64, String> {
    let count: u64 = text.parse().map_err(|e| {
        format!("not a reload count ({e}): give the events between samples, e.g. 65536")
    })?;
    if count == 0 {
        return Err(format!(
            "the reload count must be at least 1 (hwpmc raises counts under {} to {})",
            pmc::MIN_RELOAD_COUNT,
            pmc::MIN_RELOAD_COUNT
        ));
    }
    if count > pmc::MAX_RELOAD_COUNT {
        return Err(format!(
            "the reload count is too large: the maximum is {}",
            pmc::MAX_RELOAD_COUNT
        ));
    }
    Ok(count)
}

/// `-D DIR` (with -g): FreeBSD's pmcstat takes an existing directory
/// only; here a new one is made too (`-g -D gmon`), but only under an
/// existing parent, so a typo does not grow a tree.
fn check_gprof_directory(dir: &std::path::Path) -> Result<(), ExitCode> {
    if dir.exists() {
        if !dir.is_dir() {
            return Err(usage(
                TOOL,
                &format!("-D {}: not a directory", dir.display()),
            ));
        }
        return Ok(());
    }
    let parent = match dir.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => std::path::Path::new("."),
    };
    if !parent.is_dir() {
        return Err(usage(
            TOOL,
            &format!(
                "-D {}: {} is not an existing directory: create it first, or give an existing directory",
                dir.display(),
                parent.display()
            ),
        ));
    }
    Ok(())
}

/// Options that do not apply here say why; `-k` is accepted and ignored
/// with a warning, as FreeBSD's pmcstat does. Returns the top view's
/// (threshold, skiplink) when -T is given.
pub(super) fn check_options(args: &Args) -> Result<Option<(f64, bool)>, ExitCode> {
    if let Some(dir) = &args.kernel_dir {
        eprintln!(
            "{TOOL}: warning: -k {} has no effect: Linux kernel frames are not read from a kernel directory",
            dir.display()
        );
    }
    if args.wide_gprof && !args.profile.gprof {
        return Err(usage(
            TOOL,
            "-e (wide gprof counters) requires gprof mode (-g) to be specified",
        ));
    }
    if args.wide_gprof {
        // pmcstat(8) warns that tools without BSD gmon header support may not
        // read them: binutils' gprof, the gprof here, reads 16-bit bins only.
        return Err(usage(
            TOOL,
            "-e: wide (32-bit) gmon counters cannot be read by binutils gprof, the gprof on Linux; -g writes 16-bit bins (saturating)",
        ));
    }
    if args.profile.gmon_map.is_some() && !args.profile.gprof {
        return Err(usage(
            TOOL,
            "-M writes the object map of gprof profiles and requires gprof mode (-g)",
        ));
    }
    if args.show_address
        && !args.top
        && args.callgraph.is_none()
        && args.folded.is_none()
        && !args.profile.any()
    {
        return Err(usage(
            TOOL,
            "-I shows sampled leaves as addresses in the top view (-T) and in -G, --folded, -F, -g, --pprof, --flamegraph; -m and -a print pcs already",
        ));
    }
    if let Some(root) = &args.fs_root
        && !root.is_dir()
    {
        return Err(usage(
            TOOL,
            &format!(
                "-r {}: no such directory: give the root directory the log's executables are under",
                root.display()
            ),
        ));
    }
    if args.profile.gprof {
        check_gprof_directory(&args.profile.directory)?;
    }
    let sampling = !args.process_sampling.is_empty() || !args.system_sampling.is_empty();
    if sampling && args.reload < pmc::MIN_RELOAD_COUNT {
        // As hwpmc, which logs "passed sample rate N - setting to 1000".
        eprintln!(
            "{TOOL}: warning: -n {} raised to {}, hwpmc's minimum reload count",
            args.reload,
            pmc::MIN_RELOAD_COUNT
        );
    }
    if !args.plugin_options.is_empty() && !args.top {
        return Err(usage(TOOL, "-f passes options to the top view: give -T"));
    }
    let mut threshold = 0.0;
    let mut skiplink = false;
    for opt in &args.plugin_options {
        let bad = || {
            usage(
                TOOL,
                &format!("-f {opt}: expected threshold=PERCENT or skiplink=0|1"),
            )
        };
        match opt.split_once('=') {
            Some(("threshold", v)) => {
                threshold = v
                    .parse::<f64>()
                    .ok()
                    .filter(|t| (0.0..=100.0).contains(t))
                    .ok_or_else(bad)?;
            }
            Some(("skiplink", "0")) => skiplink = false,
            Some(("skiplink", "1")) => skiplink = true,
            _ => return Err(bad()),
        }
    }
    Ok(args.top.then_some((threshold, skiplink)))
}

/// Whether a report is asked for (what sampling writes instead of a log).
pub(super) fn wants_report(args: &Args) -> bool {
    args.callgraph.is_some()
        || args.folded.is_some()
        || args.sampled_pcs.is_some()
        || args.annotated.is_some()
        || args.profile.any()
}

/// Whether `-R`'s reports can stream the log (no filter, -m, -a or -v needs
/// every event at once).
pub(super) fn streams_report(args: &Args) -> bool {
    (args.callgraph.is_some() || args.folded.is_some() || args.profile.any())
        && args.fs_root.is_none()
        && args.thread.is_none()
        && args.depth.is_none()
        && args.sampled_pcs.is_none()
        && args.annotated.is_none()
        && args.verbose == 0
}

/// `-r ROOT` as an absolute path.
pub(super) fn fs_root(args: &Args) -> Result<Option<std::path::PathBuf>, ExitCode> {
    args.fs_root
        .as_ref()
        .map(|r| {
            std::path::absolute(r).map_err(|e| {
                eprintln!("{TOOL}: -r {}: {e}", r.display());
                ExitCode::from(crate::EXIT_USAGE)
            })
        })
        .transpose()
}
