//! pmcstat's arguments (clap) and the checks of them that need no machine.

use std::ffi::OsString;
use std::process::ExitCode;

use clap::{ArgAction, ArgMatches, FromArgMatches, Parser};

use crate::profile_args::ProfileArgs;
use crate::usage;

use super::TOOL;

#[cfg(test)]
mod argv_properties;
mod ranges;

/// Count hardware and software events with hwpmc semantics on Linux perf_event.
///
/// pmcstat takes FreeBSD pmcstat(8)'s options and prints its output formats;
/// what Linux cannot do is refused with the option named and the reason.
/// -c, -n, -d, -E, -W, -N, -U and -C apply to the event specifiers (-p, -s,
/// -P, -S) after them; -C, -d, -E, -W, -N and -U toggle. Without -w,
/// counts are printed every 5 seconds and at the end; -s prints a column
/// per CPU. SPEC is an event name as -L lists it, with FreeBSD's
/// qualifiers (`instructions,usr`).
#[derive(Parser, Debug)]
#[command(name = "pmcstat", version)]
pub(crate) struct Args {
    /// Count SPEC in the target process(es) (process counting mode, TC).
    #[arg(short = 'p', value_name = "SPEC")]
    pub(super) process: Vec<String>,
    /// Count SPEC system-wide on the CPUs of -c (system counting mode, SC).
    #[arg(short = 's', value_name = "SPEC")]
    pub(super) system: Vec<String>,
    /// Sample SPEC in the target process(es) (process sampling mode, TS).
    ///
    /// Without -O or a report, the samples' log is printed as -R prints it.
    /// Without -n, a sample every 250000 ns of an event counting time
    /// (cpu-clock, task-clock), every 65536 events of any other.
    #[arg(short = 'P', value_name = "SPEC")]
    pub(super) process_sampling: Vec<String>,
    /// Sample SPEC system-wide on the CPUs of -c (system sampling mode, SS).
    ///
    /// Without -O or a report, the samples' log is printed as -R prints it.
    /// Without -n, a sample every 250000 ns of an event counting time
    /// (cpu-clock, task-clock), every 65536 events of any other.
    #[arg(short = 'S', value_name = "SPEC")]
    pub(super) system_sampling: Vec<String>,
    /// Reload count of the sampling PMCs after it: events between samples,
    /// 1 to 9223372036854775807 (default 250000 for an event counting
    /// nanoseconds, as cpu-clock and task-clock: perf record's 4000 a
    /// second; 65536 for any other event; see SAMPLING RATE).
    #[arg(short = 'n', value_name = "COUNT", value_parser = ranges::reload_count,
          allow_hyphen_values = true)]
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
    ///
    /// FILE is opened once the specifiers, CPUs, command and targets are
    /// checked (a failed run leaves an existing FILE as it was), before the
    /// PMCs start. It is opened in place, as FreeBSD's pmcstat opens it
    /// (perf record would move an existing perf.data aside): a device, FIFO, Unix socket or the target of a symlink
    /// is written through (a FIFO's open waits for its reader); an existing
    /// regular file is truncated and keeps its inode, mode, owner and links.
    /// The same holds for every output file (-o, -G, --folded, -m, -a, -F,
    /// --pprof, --flamegraph, -M, -D's files). An output that is the -R log
    /// or another output is a usage error (exit 64) before anything is
    /// written.
    ///
    /// A write error of FILE or of -o's (a full disk, an I/O error) ends
    /// the run at once, the same way for both: the error is said with its
    /// errno, the PMCs stop, FILE keeps what was written (-R reads it, with
    /// a warning that it was cut short), the command pmcstat started is
    /// sent SIGTERM and waited for (Ctrl-C kills it), and pmcstat exits 74
    /// (EX_IOERR). The command is ended as perf record ends its workload:
    /// it ran to be measured and no more of it can be recorded; left
    /// running it would either outlive pmcstat behind the shell's back or
    /// keep pmcstat waiting for an unmeasured run. Processes of -t are left
    /// alone.
    ///
    /// With -R, the records read are written to FILE as a pmclog: a
    /// perf.data is converted (see -R), and `-R FILE` then reads it back
    /// as it would have read the perf.data. No dump is printed; reports
    /// asked for are written too.
    #[arg(short = 'O', value_name = "FILE")]
    pub(super) log_out: Option<std::path::PathBuf>,
    /// Read a pmclog FILE instead of measuring: dump its records, or report
    /// with -G / --folded. The dump prints each record as it is read; a
    /// corrupt record ends it with its number and offset (exit 65). A log
    /// without CLOSELOG (its recording was killed or ran out of space) is
    /// read with a warning that it was cut short. `-` reads standard input.
    ///
    /// On Linux FILE may also be a perf.data that `perf record` wrote (file
    /// mode, or pipe mode from `perf record -o -`, standard input too): its
    /// records are read as the pmclog live pmcstat would have logged —
    /// one event per perf event with its name, PROCEXEC, MAP_IN, PROCFORK,
    /// SYSEXIT, DROPNOTIFY and a CALLCHAIN per sample stamped with perf's
    /// time of it (`--call-graph dwarf` stacks unwound as live) — for the
    /// dump and every report. A file that is neither is refused (exit 65),
    /// as is a compressed perf.data (`perf record -z`: decompress it with
    /// `perf inject -i FILE -o OUT`) or one of the other byte order.
    #[arg(short = 'R', value_name = "FILE")]
    pub(super) read_log: Option<std::path::PathBuf>,
    /// Write a call graph with symbols to FILE (`-`: the -o file, else standard
    /// output with -R and standard error live, as pmcstat prints).
    ///
    /// It is pmcstat's callgraph text: each function with its share of the
    /// samples, then its callers.
    #[arg(short = 'G', value_name = "FILE")]
    pub(super) callgraph: Option<std::path::PathBuf>,
    /// Write folded stacks (flamegraph.pl, inferno, speedscope input) to FILE
    /// (`-` for standard output).
    #[arg(long, value_name = "FILE")]
    pub(super) folded: Option<std::path::PathBuf>,
    /// How samples' user call chains are taken, as perf record spells it:
    /// `fp` (frame pointers, the default) or `dwarf[,SIZE]` (copy SIZE
    /// bytes of user stack, default 8192, with each sample and unwind
    /// them with the objects' CFI as the log is written: whole stacks of
    /// programs built without frame pointers).
    ///
    /// Either way the log holds FreeBSD's CALLCHAIN records.
    #[arg(long = "call-graph", value_name = "MODE", value_parser = call_graph)]
    pub(super) call_graph: Option<CallGraph>,
    #[command(flatten)]
    pub(super) profile: ProfileArgs,
    /// Write a gzipped pprof profile of every SECS seconds of samples into
    /// DIR (Pyroscope, Parca, Cloud Profiler, go tool pprof), live with -P
    /// or -S, or from the log of -R.
    ///
    /// Each file is a complete profile of its interval, named by the
    /// interval's start in UTC (`20261207T072603.554Z.pb.gz`, sorting as
    /// time does), its start and length in the profile's time_nanos and
    /// duration_nanos. Intervals are cut by the samples' timestamps from
    /// the first sample's, so a live run and -R of its log write the same
    /// files. A profile is written once a sample stamped 2 s past its
    /// interval's end arrives (samples of different CPUs reach the log out
    /// of order; the wait is twice the most disorder seen when that is
    /// more), and the last, shorter one at the end. Intervals without
    /// samples get an empty profile: the series has no gaps. A sample weighs one event: the log
    /// does not keep -n (--pprof of a live run knows it). SECS is 0.1 to
    /// 86400. DIR is created
    /// (with its parents) when it does not exist; anything else than a
    /// directory there is refused. A file is written under a temporary
    /// name, then renamed: a reader never sees half a profile. A live run
    /// reads the log as it is written, without holding it in memory unless
    /// -O, a report or -v needs it. A write error is said with its errno;
    /// a live run goes on recording (the -O log keeps every sample) and
    /// exits 74 at the end.
    #[arg(long = "pprof-every", num_args = 2, value_names = ["SECS", "DIR"],
          conflicts_with = "top")]
    pub(super) pprof_every: Option<Vec<std::ffi::OsString>>,
    /// CPUs of the system PMCs after it: a list such as `0-3,6` (CPU
    /// numbers 0 to 65535), or `*` for all (the default).
    #[arg(short = 'c', value_name = "CPUS")]
    pub(super) cpus: Vec<String>,
    /// Count every system counting PMC (-s) only in the tasks of cgroup
    /// PATH, on its CPUs; repeatable: each -s is counted once per cgroup,
    /// in a column of its own summing the CPUs (`s/PATH/EVENT`; JSON and
    /// CSV label `s/SPEC@PATH`).
    ///
    /// A Linux extension (perf stat -a -G), cgroup v2: PATH is a
    /// directory relative to the cgroup v2 mount (`web` for
    /// /sys/fs/cgroup/web where v2 is mounted at /sys/fs/cgroup), or an
    /// absolute cgroup directory. A PATH that does not exist or is no
    /// cgroup is said with the directory tried (exit 71). Without -s it is
    /// a usage error (exit 64); -S samples and -p counts are not
    /// restricted.
    #[arg(long = "cgroup", value_name = "PATH")]
    pub(super) cgroups: Vec<std::path::PathBuf>,
    /// (toggle) Also count the target's current and future child
    /// processes, for the process PMCs after it.
    #[arg(short = 'd', action = ArgAction::Append, num_args = 0, default_missing_value = "true")]
    pub(super) descendants_toggles: Vec<bool>,
    /// Whether any process PMC tracks descendants (from the toggles).
    #[arg(skip)]
    pub(super) descendants: bool,
    /// Attach process PMCs to running processes instead of a command: a
    /// process id, or an extended regular expression matched against the
    /// names of the running processes (every match is a target; the
    /// empty pattern is refused).
    #[arg(short = 't', value_name = "PID|REGEX", value_parser = ranges::target)]
    pub(super) targets: Vec<String>,
    /// Print counts every SECS seconds (0.001 to 4294967295; without -w every
    /// 5 seconds, and JSON and CSV lines at the end only).
    // As getopt, the next word is the value even with a hyphen (`-w -1`,
    // `-w -inf`): the value parser says what -w takes.
    #[arg(short = 'w', value_name = "SECS", allow_hyphen_values = true,
          value_parser = ranges::interval_seconds)]
    pub(super) interval: Option<f64>,
    /// Stop counting after SECS seconds, more than 0 and at most 4294967295
    /// (the command keeps running).
    #[arg(short = 'l', value_name = "SECS", allow_hyphen_values = true,
          value_parser = ranges::duration_seconds)]
    pub(super) duration: Option<f64>,
    /// (toggle) Print totals since the start instead of deltas, for the
    /// counting PMCs after it.
    #[arg(short = 'C', action = ArgAction::Append, num_args = 0, default_missing_value = "true")]
    pub(super) cumulative_toggles: Vec<bool>,
    /// Write counts to FILE instead of standard error.
    ///
    /// Opened in place when -O's log is, as -O describes: a device or FIFO
    /// is written through, an existing file keeps its inode, mode and owner.
    ///
    /// A write error of FILE ends the run as one of -O's does (see -O): the
    /// PMCs stop, the -O log is closed whole, the command pmcstat started
    /// is sent SIGTERM and waited for, exit 74 (EX_IOERR).
    #[arg(short = 'o', value_name = "FILE")]
    pub(super) output: Option<std::path::PathBuf>,
    /// Print counts as JSON lines (an extension of FreeBSD's options).
    #[arg(long, conflicts_with = "csv")]
    pub(super) json: bool,
    /// Print counts as CSV (an extension of FreeBSD's options).
    #[arg(long)]
    pub(super) csv: bool,
    /// Serve the counts of -p and -s to Prometheus at
    /// http://[ADDR:]PORT/metrics, read at each scrape, until pmcstat ends.
    ///
    /// The body is OpenMetrics text when the client asks for it
    /// (Prometheus does), else Prometheus's text format 0.0.4.
    /// ADDR defaults to 127.0.0.1 (`--listen 9100` or `--listen :9100`);
    /// `0.0.0.0:9100` or `[::]:9100` serve every interface. One series per
    /// PMC and CPU (-s) or per specifier's target (-p; the processes of
    /// -t summed, their pids in one label): pmc_events_total,
    /// pmc_enabled_seconds_total and pmc_running_seconds_total (running
    /// less than enabled: multiplexed), pmc_up, and pmc_lost_samples_total;
    /// labels event (the specifier), mode (SC, TC), cpu, pid, command.
    /// `/` links to /metrics; any other path is 404. The server ends with
    /// the run: the command's exit, -l, the targets' exit, or SIGINT or
    /// SIGTERM (without a command, -s serves until then). Printing at -w
    /// keeps its schedule: a scrape locks each specifier's PMCs only for
    /// their reads.
    #[arg(long, value_name = "[ADDR:]PORT", value_parser = super::exporter::listen_address,
          conflicts_with_all = ["top", "read_log"])]
    pub(super) listen: Option<std::net::SocketAddr>,
    /// Quiet: no progress or notes.
    #[arg(short = 'q')]
    pub(super) quiet: bool,
    /// Top-like live view of the sampling PMCs, refreshed every -w SECS
    /// (default 5). Keys: q quit, space pause, c then a/d accumulate/delta,
    /// p next PMC, m merge PMCs of one name, n next view, f skip-link.
    /// Samples the view falls far behind on are passed over and counted in
    /// a warning at the end.
    ///
    /// The text is pmcstat's: `PMC: [name] Samples: n (p%) , u unresolved`
    /// (`name.index` when not merged), the key line, then the
    /// `%SAMP IMAGE FUNCTION CALLERS` rows of pmcstat's callgraph view (image
    /// cut at 10, function at 20, callers at 29 characters) or, after n,
    /// the `%SAMP CALLTREE` paths of its call-tree view. q sends a running
    /// command SIGINT. Without a terminal it prints one frame per interval
    /// to standard output, 1024 columns by 256 lines at most.
    #[arg(short = 'T', conflicts_with_all = ["duration", "read_log", "log_out"])]
    pub(super) top: bool,
    /// Write each sample's pc with its function and the function's start and
    /// end addresses to FILE (`-` for standard output).
    ///
    /// Start and end come from the object's symbol table: for a PIE or a
    /// shared library they are offsets in it, not the pc's run-time range.
    #[arg(short = 'm', value_name = "FILE")]
    pub(super) sampled_pcs: Option<std::path::PathBuf>,
    /// Write every frame of each sample's callchain with function and
    /// file:line to FILE (`-` for standard output).
    ///
    /// Names and DWARF lines are those of -G and --folded, separate debug
    /// files included; a pc inside inlined calls has a line per function,
    /// innermost first; a pc of no known function (kernel ones too) is
    /// `pc <unknown> ??:0`. Each sample ends with `--`.
    #[arg(short = 'a', value_name = "FILE")]
    pub(super) annotated: Option<std::path::PathBuf>,
    /// Keep at most DEPTH frames (innermost first) of each callchain, 1 to
    /// 4294967295, in the reports (-G, --folded, -a and the profiles).
    #[arg(short = 'z', value_name = "DEPTH", value_parser = clap::value_parser!(u32).range(1..),
          allow_hyphen_values = true)]
    pub(super) depth: Option<u32>,
    /// (toggle) Log each count of the process PMCs after it per process at
    /// its exit (LOG_PROCEXIT); printed as `exitval` records, or kept in
    /// the -O log (`exitval PMCID PID VALUE`).
    #[arg(short = 'E', action = ArgAction::Append, num_args = 0, default_missing_value = "true")]
    pub(super) log_exit_toggles: Vec<bool>,
    /// Whether any PMC logs its count at process exit (from the toggles).
    #[arg(skip)]
    pub(super) log_exit: bool,
    /// (toggle) Log each thread's count of the process PMCs after it at
    /// every context switch (LOG_PROCCSW); printed as `cswval` records, or
    /// kept in the -O log (`cswval PMCID PID TID VALUE`; a process's add up
    /// to its total).
    #[arg(short = 'W', action = ArgAction::Append, num_args = 0, default_missing_value = "true")]
    pub(super) log_csw_toggles: Vec<bool>,
    /// Whether any PMC logs its count at context switches (from the
    /// toggles).
    #[arg(skip)]
    pub(super) log_csw: bool,
    /// List the events of this machine, one per line (a tab, then the name).
    #[arg(short = 'L')]
    pub(super) list_events: bool,
    /// Describe the events whose name contains SPEC (`name:<tab>description`).
    #[arg(short = 'u', value_name = "SPEC")]
    pub(super) describe: Option<String>,
    /// Show the sampled leaf's address instead of its function name, in the
    /// top view (-T) and in -G, --folded, -F, -g, --pprof and --flamegraph
    /// (callers stay named; -m and -a print pcs already).
    #[arg(short = 'I')]
    pub(super) show_address: bool,
    /// Kernel directory: accepted with a warning and no effect (FreeBSD made
    /// it obsolete too; Linux kernel frames are named from the running
    /// kernel's /proc/kallsyms).
    #[arg(short = 'k', value_name = "DIR")]
    pub(super) kernel_dir: Option<std::path::PathBuf>,
    /// Look executables up under ROOT (a copied root file system) when
    /// resolving symbols (kernel frames still come from the running kernel's
    /// /proc/kallsyms).
    #[arg(short = 'r', value_name = "ROOT")]
    pub(super) fs_root: Option<std::path::PathBuf>,
    /// More diagnostics: each sampling specifier's period, conversion
    /// statistics after reports, and why
    /// objects the log names were not read (not an absolute path, not a
    /// regular file, a compressed section above the inflation cap).
    ///
    /// The statistics are pmcstat's `CONVERSION STATISTICS:` lines
    /// (`#samples/total`, `#samples/unclaimed`, …). An object is not read
    /// when it is over 4 GiB, or a compressed debug section claims more
    /// than 100 times its compressed size above 1 MiB, or more than 1 GiB.
    #[arg(short = 'v', action = clap::ArgAction::Count)]
    pub(super) verbose: u8,
    /// Wide (32-bit) gprof history counters, with -g: refused (exit 64),
    /// because binutils gprof, the gprof of Linux, reads 16-bit bins only;
    /// -g writes 16-bit bins, saturating as pmcstat does.
    #[arg(short = 'e')]
    pub(super) wide_gprof: bool,
    /// Plugin option: `threshold=PCT` (hide rows under PCT%, 0 to 100) or
    /// `skiplink=0|1` (show hidden rows as a dot), for the top view.
    #[arg(short = 'f', value_name = "OPTION")]
    pub(super) plugin_options: Vec<String>,
    /// Keep only the samples of thread TID (0 to 2147483647) in reports
    /// (-G, --folded, -m, -a and the profiles).
    #[arg(short = 'i', value_name = "TID", allow_hyphen_values = true,
          value_parser = clap::value_parser!(u32).range(0..=ranges::MAX_TID))]
    pub(super) thread: Option<u32>,
    /// Read a -R log owned by a user other than you and root. Without it
    /// such a log is refused with status 77 (EX_NOPERM), as perf report
    /// refuses one: the paths a log names are the files its report opens.
    /// Long only (-f is the plugin option).
    #[arg(long)]
    pub(super) force: bool,
    /// The command to run and count (after `--`).
    #[arg(trailing_var_arg = true, value_name = "COMMAND")]
    pub(super) command: Vec<OsString>,
}

/// pmcstat.h `DEFAULT_SAMPLE_COUNT`: the reload count of a sampling PMC
/// of a counted event (instructions, page faults) before any `-n`.
pub(super) const DEFAULT_SAMPLE_COUNT: u64 = 65536;

/// The reload count of a sampling PMC of an event that counts nanoseconds
/// (cpu-clock, task-clock) before any `-n`: 250 µs, perf record's default
/// 4 kHz. FreeBSD's 65536 would be a 65.5 µs period there (15.3 kHz), whose
/// interrupts cost the workload more than perf's (issue 36).
pub(super) const DEFAULT_TIME_PERIOD_NS: u64 = 250_000;

/// The reload count of a sampling PMC allocated without `-n`: by the
/// resolved event's unit, as FreeBSD's pmcstat asks libpmc for an event's
/// own rate (`pmc_pmu_sample_rate_get`).
pub(super) fn default_reload(counts_nanoseconds: bool) -> u64 {
    if counts_nanoseconds {
        DEFAULT_TIME_PERIOD_NS
    } else {
        DEFAULT_SAMPLE_COUNT
    }
}

/// Parses pmcstat's own command line ([`try_parse_from`]), printing what
/// ends the run: a usage error exits `EX_USAGE` (pmcstat.c's
/// `pmcstat_show_usage`); `--help` and `--version` exit 0.
pub(super) fn parse() -> Result<(Args, Vec<EventSpec>), ExitCode> {
    try_parse_from(std::env::args_os()).map_err(Refusal::report)
}

/// Parses `argv` (the program name first) as pmcstat.c's `getopt` loop
/// does: clap for the spellings, then the specifiers with the toggles and
/// settings in force where each appears. Every number is range-checked
/// here (`ranges.rs`); nothing is printed, opened or exited, so a caller
/// (the property tests) can run it on any vector.
pub(super) fn try_parse_from<I, T>(argv: I) -> Result<(Args, Vec<EventSpec>), Refusal>
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    parse_with(crate::cli::pmcstat(), argv)
}

/// [`try_parse_from`] with pmcstat's clap command given: the property
/// tests build it once and parse with clones of it.
fn parse_with<I, T>(command: clap::Command, argv: I) -> Result<(Args, Vec<EventSpec>), Refusal>
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let matches = command.try_get_matches_from(argv).map_err(Refusal::Clap)?;
    let mut args = Args::from_arg_matches(&matches).map_err(Refusal::Clap)?;
    let specs = ordered_specs(&matches).map_err(Refusal::Usage)?;
    args.descendants = specs.iter().any(|s| s.descendants);
    args.log_exit = specs.iter().any(|s| s.log_exit);
    args.log_csw = specs.iter().any(|s| s.log_csw);
    Ok((args, specs))
}

/// Why [`try_parse_from`] ends the run.
#[derive(Debug)]
pub(super) enum Refusal {
    /// clap's error, or its `--help`/`--version` text.
    Clap(clap::Error),
    /// A value clap passed that pmcstat's own checks refuse.
    Usage(String),
}

impl Refusal {
    /// The exit status: `EX_USAGE`, or 0 for `--help` and `--version`.
    pub(super) fn status(&self) -> u8 {
        match self {
            Refusal::Clap(e) if !e.use_stderr() => 0,
            _ => crate::sysexits::EX_USAGE,
        }
    }

    /// Prints the message (clap's to its stream) and gives the status.
    fn report(self) -> ExitCode {
        let status = self.status();
        match self {
            Refusal::Clap(e) => {
                let _ = e.print();
            }
            Refusal::Usage(message) => {
                usage(TOOL, &message);
            }
        }
        ExitCode::from(status)
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
    /// The sampling count: the `-n` before it; without one, the event's
    /// default ([`default_reload`]).
    pub(super) reload: Option<u64>,
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
        reload: None,
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
            Item::Cpus(list) => {
                ranges::check_cpu_list(list)?;
                cpus = Some(crate::parse_cpus(list)?);
            }
            Item::Reload(count) => state.reload = Some(count),
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
    if !args.cgroups.is_empty() && args.system.is_empty() {
        return Err(usage(
            TOOL,
            "--cgroup restricts the system counting PMCs (-s) to a cgroup: give -s SPEC",
        ));
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
                &format!("-f {opt}: expected threshold=PERCENT (0 to 100) or skiplink=0|1"),
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
    if args.listen.is_some() && args.process.is_empty() && args.system.is_empty() {
        return Err(usage(
            TOOL,
            "--listen serves the counts of -p and -s: give at least one counting specifier",
        ));
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
mod tests;
