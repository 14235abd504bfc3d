//! pmcstat's arguments (clap) and the checks of them that need no machine.

use std::ffi::OsString;
use std::process::ExitCode;

use clap::{ArgAction, ArgMatches, CommandFactory, FromArgMatches, Parser};

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
pub(crate) struct Args {
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
    /// Reload count of the sampling PMCs after it: events between samples
    /// (default 65536).
    #[arg(short = 'n', value_name = "COUNT", value_parser = reload_count)]
    pub(super) reload: Vec<u64>,
    /// (toggle) Callchain capture of the sampling PMCs after it (on at
    /// first).
    #[arg(short = 'N', action = ArgAction::Append, num_args = 0, default_missing_value = "true")]
    pub(super) callchain_toggles: Vec<bool>,
    /// (toggle) Also capture the user stack of samples taken in the
    /// kernel, for the sampling PMCs after it.
    #[arg(short = 'U', action = ArgAction::Append, num_args = 0, default_missing_value = "true")]
    pub(super) user_callchain_toggles: Vec<bool>,
    /// Write the samples' pmclog to FILE.
    #[arg(short = 'O', value_name = "FILE", conflicts_with = "read_log")]
    pub(super) log_out: Option<std::path::PathBuf>,
    /// Read a pmclog FILE instead of measuring: dump its records, or report
    /// with -G / --folded.
    #[arg(short = 'R', value_name = "FILE")]
    pub(super) read_log: Option<std::path::PathBuf>,
    /// Write a call graph with symbols to FILE (`-`: the -o file, else standard
    /// output with -R and standard error live, as pmcstat prints).
    #[arg(short = 'G', value_name = "FILE")]
    pub(super) callgraph: Option<std::path::PathBuf>,
    /// Write folded stacks (flamegraph input) to FILE (`-` for standard output).
    #[arg(long, value_name = "FILE")]
    pub(super) folded: Option<std::path::PathBuf>,
    /// How samples' user call chains are taken, as perf record spells it:
    /// `fp` (frame pointers, the default) or `dwarf[,SIZE]` (copy SIZE
    /// bytes of user stack, default 8192, with each sample and unwind
    /// them with the objects' CFI as the log is written: whole stacks of
    /// programs built without frame pointers).
    #[arg(long = "call-graph", value_name = "MODE", value_parser = call_graph)]
    pub(super) call_graph: Option<CallGraph>,
    #[command(flatten)]
    pub(super) profile: ProfileArgs,
    /// CPUs of the system PMCs after it: a list such as `0-3,6`, or `*`
    /// for all (the default).
    #[arg(short = 'c', value_name = "CPUS")]
    pub(super) cpus: Vec<String>,
    /// (toggle) Also count the target's current and future child
    /// processes, for the process PMCs after it.
    #[arg(short = 'd', action = ArgAction::Append, num_args = 0, default_missing_value = "true")]
    pub(super) descendants_toggles: Vec<bool>,
    /// Whether any process PMC tracks descendants (from the toggles).
    #[arg(skip)]
    pub(super) descendants: bool,
    /// Attach process PMCs to running processes instead of a command: a
    /// process id, or an extended regular expression matched against the
    /// names of the running processes (every match is a target).
    #[arg(short = 't', value_name = "PID|REGEX")]
    pub(super) targets: Vec<String>,
    /// Print counts every SECS seconds.
    // Negative numbers reach run()'s check, which says what -w takes.
    #[arg(short = 'w', value_name = "SECS", allow_negative_numbers = true)]
    pub(super) interval: Option<f64>,
    /// Stop counting after SECS seconds (the command keeps running).
    #[arg(short = 'l', value_name = "SECS", allow_negative_numbers = true)]
    pub(super) duration: Option<f64>,
    /// (toggle) Print totals since the start instead of deltas, for the
    /// counting PMCs after it.
    #[arg(short = 'C', action = ArgAction::Append, num_args = 0, default_missing_value = "true")]
    pub(super) cumulative_toggles: Vec<bool>,
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
    /// (toggle) Log each count of the process PMCs after it per process at
    /// its exit (LOG_PROCEXIT); printed as `exitval` records, or kept in
    /// the -O log.
    #[arg(short = 'E', action = ArgAction::Append, num_args = 0, default_missing_value = "true")]
    pub(super) log_exit_toggles: Vec<bool>,
    /// Whether any PMC logs its count at process exit (from the toggles).
    #[arg(skip)]
    pub(super) log_exit: bool,
    /// (toggle) Log each thread's count of the process PMCs after it at
    /// every context switch (LOG_PROCCSW); printed as `cswval` records, or
    /// kept in the -O log.
    #[arg(short = 'W', action = ArgAction::Append, num_args = 0, default_missing_value = "true")]
    pub(super) log_csw_toggles: Vec<bool>,
    /// Whether any PMC logs its count at context switches (from the
    /// toggles).
    #[arg(skip)]
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

/// pmcstat.h `DEFAULT_SAMPLE_COUNT`: the reload count of a sampling PMC
/// before any `-n`.
pub(super) const DEFAULT_SAMPLE_COUNT: u64 = 65536;

/// Parses the command line as pmcstat.c's `getopt` loop does: clap for the
/// spellings, then the specifiers with the toggles and settings in force
/// where each appears. A clap error exits `EX_USAGE` (pmcstat.c's
/// `pmcstat_show_usage`); `--help` and `--version` exit 0.
pub(super) fn parse() -> Result<(Args, Vec<EventSpec>), ExitCode> {
    let matches = Args::command().try_get_matches().map_err(clap_exit)?;
    let mut args = Args::from_arg_matches(&matches).map_err(clap_exit)?;
    let specs = ordered_specs(&matches).map_err(|e| usage(TOOL, &e))?;
    args.descendants = specs.iter().any(|s| s.descendants);
    args.log_exit = specs.iter().any(|s| s.log_exit);
    args.log_csw = specs.iter().any(|s| s.log_csw);
    Ok((args, specs))
}

fn clap_exit(e: clap::Error) -> ExitCode {
    let _ = e.print();
    if e.use_stderr() {
        ExitCode::from(crate::sysexits::EX_USAGE)
    } else {
        ExitCode::SUCCESS
    }
}

/// One event specifier (`-p`, `-s`, `-P`, `-S`) with what pmcstat.c
/// records in its `pmcstat_ev` when it is parsed.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct EventSpec {
    pub(super) mode: pmc::Mode,
    pub(super) spec: String,
    /// The CPUs of a system-mode specifier: the `-c` before it, or all.
    pub(super) cpus: Vec<u32>,
    /// The sampling count: the `-n` before it, or DEFAULT_SAMPLE_COUNT.
    pub(super) reload: u64,
    /// `-N` toggles it (on at first): PMC_F_CALLCHAIN.
    pub(super) callchain: bool,
    /// `-U`: PMC_F_USERCALLCHAIN (with callchain).
    pub(super) user_callchain: bool,
    /// `-d`: PMC_F_DESCENDANTS.
    pub(super) descendants: bool,
    /// `-E`: PMC_F_LOG_PROCEXIT.
    pub(super) log_exit: bool,
    /// `-W`: PMC_F_LOG_PROCCSW.
    pub(super) log_csw: bool,
    /// `-C`: `ev_cumulative`.
    pub(super) cumulative: bool,
}

/// What may come between specifiers, in command-line order.
enum Item<'a> {
    Spec(pmc::Mode, &'a str),
    Cpus(&'a str),
    Reload(u64),
    Toggle(&'static str),
}

/// The specifiers in command-line order, each with the toggles (`-C -d -E
/// -N -U -W`) and settings (`-c`, `-n`) given before it: pmcstat.c's
/// getopt loop keeps them in `use_cumulative_counts`, `do_descendants`, …,
/// `cpumask` and `current_sampling_count`, copied into each `pmcstat_ev`
/// as its option is parsed.
pub(super) fn ordered_specs(matches: &ArgMatches) -> Result<Vec<EventSpec>, String> {
    let mut items: Vec<(usize, Item<'_>)> = Vec::new();
    for (id, mode) in [
        ("process", pmc::Mode::TC),
        ("system", pmc::Mode::SC),
        ("process_sampling", pmc::Mode::TS),
        ("system_sampling", pmc::Mode::SS),
    ] {
        if let (Some(values), Some(indices)) =
            (matches.get_many::<String>(id), matches.indices_of(id))
        {
            items.extend(indices.zip(values.map(|v| Item::Spec(mode, v))));
        }
    }
    if let (Some(values), Some(indices)) = (
        matches.get_many::<String>("cpus"),
        matches.indices_of("cpus"),
    ) {
        items.extend(indices.zip(values.map(|v| Item::Cpus(v))));
    }
    if let (Some(values), Some(indices)) = (
        matches.get_many::<u64>("reload"),
        matches.indices_of("reload"),
    ) {
        items.extend(indices.zip(values.map(|&v| Item::Reload(v))));
    }
    for id in [
        "callchain_toggles",
        "user_callchain_toggles",
        "descendants_toggles",
        "log_exit_toggles",
        "log_csw_toggles",
        "cumulative_toggles",
    ] {
        if let Some(indices) = matches.indices_of(id) {
            items.extend(indices.map(|i| (i, Item::Toggle(id))));
        }
    }
    items.sort_by_key(|(i, _)| *i);

    let mut state = EventSpec {
        mode: pmc::Mode::TC,
        spec: String::new(),
        cpus: Vec::new(),
        reload: DEFAULT_SAMPLE_COUNT,
        callchain: true,
        user_callchain: false,
        descendants: false,
        log_exit: false,
        log_csw: false,
        cumulative: false,
    };
    // pmcstat.c starts from the process's root CPU set (every CPU).
    let mut cpus: Option<Vec<u32>> = None;
    let mut specs = Vec::new();
    for (_, item) in items {
        match item {
            Item::Cpus(list) => cpus = Some(crate::parse_cpus(list)?),
            Item::Reload(count) => state.reload = count,
            Item::Toggle(id) => {
                let flag = match id {
                    "callchain_toggles" => &mut state.callchain,
                    "user_callchain_toggles" => &mut state.user_callchain,
                    "descendants_toggles" => &mut state.descendants,
                    "log_exit_toggles" => &mut state.log_exit,
                    "log_csw_toggles" => &mut state.log_csw,
                    _ => &mut state.cumulative,
                };
                *flag = !*flag;
            }
            Item::Spec(mode, spec) => {
                let system = matches!(mode, pmc::Mode::SC | pmc::Mode::SS);
                let cpus = match (&cpus, system) {
                    (_, false) => Vec::new(),
                    (Some(list), true) => list.clone(),
                    (None, true) => crate::parse_cpus("*")?,
                };
                specs.push(EventSpec {
                    mode,
                    spec: spec.to_string(),
                    cpus,
                    ..state.clone()
                });
            }
        }
    }
    Ok(specs)
}

/// `-t SPEC` as pmcstat.c's `pmcstat_find_targets`: a number (`strtol`
/// base 0 took at least one digit and it is not negative) is a process id;
/// anything else is an extended regular expression searched for in the
/// name of each running process, every match a target. A pattern that
/// does not compile exits `EX_DATAERR`, as pmcstat.c's
/// `err(EX_DATAERR, "ERROR: Failed to compile regex …")`.
pub(super) fn find_targets(spec: &str) -> Result<Vec<u32>, ExitCode> {
    if let Some(pid) = leading_number(spec).filter(|&p| p >= 0) {
        return Ok(vec![u32::try_from(pid).unwrap_or(u32::MAX)]);
    }
    let pattern = regex::Regex::new(spec).map_err(|e| {
        eprintln!(
            "{TOOL}: -t {spec}: not a process id, and not a regular expression over process names: {}",
            e.to_string().replace('\n', " ")
        );
        ExitCode::from(crate::sysexits::EX_DATAERR)
    })?;
    Ok(process_names()
        .into_iter()
        .filter(|(_, name)| pattern.is_match(name))
        .map(|(pid, _)| pid)
        .collect())
}

/// The number `strtol(s, &end, 0)` reads at the start of `s`, if it reads
/// a digit: leading white space, a sign, then `0x` hex, `0` octal or
/// decimal digits; what follows is ignored, as pmcstat.c ignores `end`.
pub(super) fn leading_number(s: &str) -> Option<i64> {
    let t = s.trim_start_matches([' ', '\t', '\n', '\r', '\x0b', '\x0c']);
    let (negative, t) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let hex = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X"));
    let (radix, digits) = match hex {
        Some(h) if h.starts_with(|c: char| c.is_ascii_hexdigit()) => (16, h),
        _ if t.starts_with('0') => (8, t),
        _ => (10, t),
    };
    let end = digits
        .find(|c: char| !c.is_digit(radix))
        .unwrap_or(digits.len());
    if end == 0 {
        return None;
    }
    // strtol saturates; a pid that large matches no process anyway.
    let value = i64::from_str_radix(&digits[..end], radix).unwrap_or(i64::MAX);
    Some(if negative { -value } else { value })
}

/// Each process's id and name (`/proc/PID/comm`, as FreeBSD's `ki_comm`).
fn process_names() -> Vec<(u32, String)> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|entry| {
        let entry = entry.ok()?;
        let pid: u32 = entry.file_name().to_str()?.parse().ok()?;
        let comm = std::fs::read_to_string(entry.path().join("comm")).ok()?;
        Some((pid, comm.trim_end_matches('\n').to_string()))
    })
    .collect()
}

/// `-n COUNT`: pmcstat.c refuses a count <= 0 ("Illegal count value",
/// EX_USAGE); the largest is perf_event's (and strtol's) 2^63 - 1.
/// `--call-graph`'s mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum CallGraph {
    /// The kernel's frame-pointer chains.
    FramePointers,
    /// A user-stack copy of this many bytes per sample, unwound with CFI.
    Dwarf(u32),
}

fn call_graph(text: &str) -> Result<CallGraph, String> {
    let (mode, size) = match text.split_once(',') {
        Some((m, s)) => (m, Some(s)),
        None => (text, None),
    };
    match (mode, size) {
        ("fp", None) => Ok(CallGraph::FramePointers),
        ("dwarf", None) => Ok(CallGraph::Dwarf(pmc::sample::DEFAULT_USER_STACK_BYTES)),
        ("dwarf", Some(size)) => {
            let bytes: u32 = size
                .parse()
                .ok()
                .filter(|b: &u32| {
                    *b > 0 && b.is_multiple_of(8) && *b <= pmc::sample::MAX_USER_STACK_BYTES
                })
                .ok_or_else(|| {
                    format!(
                        "`{size}` is not a stack size: give a multiple of 8 from 8 to {} (bytes)",
                        pmc::sample::MAX_USER_STACK_BYTES
                    )
                })?;
            Ok(CallGraph::Dwarf(bytes))
        }
        _ => Err(format!(
            "`{text}` is not a call-graph mode: give `fp` or `dwarf[,SIZE]`"
        )),
    }
}

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

#[cfg(test)]
mod tests {
    use super::*;

    fn specs(argv: &[&str]) -> Vec<EventSpec> {
        let matches = Args::command()
            .try_get_matches_from(std::iter::once("pmcstat").chain(argv.iter().copied()))
            .unwrap();
        ordered_specs(&matches).unwrap()
    }

    #[test]
    fn toggles_apply_to_the_specs_after_them() {
        // pmcstat.c's getopt loop: `-d`, `-E`, `-W`, `-C`, `-N`, `-U` flip a
        // variable copied into each pmcstat_ev parsed after them.
        let s = specs(&[
            "-p", "a", "-d", "-C", "-p", "b", "-E", "-d", "-p", "c", "-W", "-C", "-C", "-N", "-U",
            "-P", "d", "--", "true",
        ]);
        let row = |e: &EventSpec| {
            (
                e.spec.clone(),
                e.mode,
                e.descendants,
                e.cumulative,
                e.log_exit,
                e.log_csw,
                e.callchain,
                e.user_callchain,
            )
        };
        const TC: pmc::Mode = pmc::Mode::TC;
        const TS: pmc::Mode = pmc::Mode::TS;
        assert_eq!(
            s.iter().map(row).collect::<Vec<_>>(),
            vec![
                ("a".into(), TC, false, false, false, false, true, false),
                ("b".into(), TC, true, true, false, false, true, false),
                ("c".into(), TC, false, true, true, false, true, false),
                ("d".into(), TS, false, true, true, true, false, true),
            ]
        );
    }

    #[test]
    fn clustered_toggles_count_each_letter() {
        // `-dC` is `-d -C`; `-dd` toggles twice.
        let s = specs(&["-dC", "-p", "a", "-dd", "-p", "b", "--", "true"]);
        assert!(s[0].descendants && s[0].cumulative);
        assert!(s[1].descendants && s[1].cumulative);
        let s = specs(&["-dd", "-p", "a", "--", "true"]);
        assert!(!s[0].descendants);
    }

    #[test]
    fn c_and_n_set_the_cpus_and_count_of_later_specs() {
        let s = specs(&[
            "-S", "x", "-c", "0", "-s", "y", "-n", "5000", "-c", "0,0", "-S", "z", "-P", "w", "--",
            "true",
        ]);
        // Before any -c: every CPU (pmcstat.c's root set).
        assert_eq!(s[0].cpus, pmc::machine::online_cpus());
        assert_eq!(s[0].reload, DEFAULT_SAMPLE_COUNT);
        assert_eq!((s[1].spec.as_str(), s[1].cpus.as_slice()), ("y", &[0][..]));
        assert_eq!(s[1].reload, DEFAULT_SAMPLE_COUNT);
        assert_eq!((s[2].cpus.as_slice(), s[2].reload), (&[0][..], 5000));
        // Process modes have no CPUs; the count carries on.
        assert_eq!((s[3].cpus.len(), s[3].reload), (0, 5000));
    }

    #[test]
    fn t_numbers_are_read_as_strtol_base_0_reads_them() {
        assert_eq!(leading_number("1234"), Some(1234));
        assert_eq!(leading_number("  42"), Some(42));
        assert_eq!(leading_number("0x1f"), Some(31));
        assert_eq!(leading_number("010"), Some(8));
        assert_eq!(leading_number("0"), Some(0));
        // strtol stops at the first non-digit; pmcstat.c ignores the rest.
        assert_eq!(leading_number("12abc"), Some(12));
        assert_eq!(leading_number("-3"), Some(-3));
        assert_eq!(leading_number("sleep"), None);
        assert_eq!(leading_number("^sl.*"), None);
        assert_eq!(leading_number(""), None);
        assert_eq!(leading_number("0x"), Some(0));
    }

    /// perf record's `--call-graph` spelling: `fp`, `dwarf`, `dwarf,SIZE`
    /// with the kernel's size rules; anything else is refused with what
    /// to give.
    #[test]
    fn call_graph_modes_are_perfs() {
        assert_eq!(call_graph("fp"), Ok(CallGraph::FramePointers));
        assert_eq!(call_graph("dwarf"), Ok(CallGraph::Dwarf(8192)));
        assert_eq!(call_graph("dwarf,4096"), Ok(CallGraph::Dwarf(4096)));
        assert_eq!(call_graph("dwarf,65528"), Ok(CallGraph::Dwarf(65528)));
        for bad in ["dwarf,0", "dwarf,12", "dwarf,65536", "dwarf,x", "dwarf,"] {
            let e = call_graph(bad).expect_err(bad);
            assert!(e.contains("multiple of 8"), "{bad}: {e}");
        }
        for bad in ["lbr", "fp,8", "", "DWARF"] {
            let e = call_graph(bad).expect_err(bad);
            assert!(e.contains("`fp` or `dwarf[,SIZE]`"), "{bad}: {e}");
        }
    }
}
