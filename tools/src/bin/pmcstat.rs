//! `pmcstat`: count events of a command, a running process or the whole
//! system, with FreeBSD pmcstat(8)'s options.

use std::ffi::OsString;
use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use clap::Parser;
use pmc::{Flags, Mode, PerCpu, Pmc, Reading};
use pmc_tools::gate::{self, HeldCommand};
use pmc_tools::output::{Format, Printer, Sample};
use pmc_tools::profile_args::ProfileArgs;
use pmc_tools::{annotate, top};
use pmc_tools::{fail, parse_cpus, usage};

const TOOL: &str = "pmcstat";

/// Count hardware and software events with hwpmc semantics on Linux perf_event.
#[derive(Parser, Debug)]
#[command(
    name = "pmcstat",
    version,
    after_help = "Examples:\n  pmcstat -p instructions,usr -- ./a.out\n  \
                  pmcstat -s page-faults -c '*' -l 5\n  pmcstat -p task-clock -t 1234 -w 1"
)]
struct Args {
    /// Count SPEC in the target process(es) (process counting mode, TC).
    #[arg(short = 'p', value_name = "SPEC")]
    process: Vec<String>,
    /// Count SPEC system-wide on the CPUs of -c (system counting mode, SC).
    #[arg(short = 's', value_name = "SPEC")]
    system: Vec<String>,
    /// Sample SPEC in the target process(es) (process sampling mode, TS).
    #[arg(short = 'P', value_name = "SPEC")]
    process_sampling: Vec<String>,
    /// Sample SPEC system-wide on the CPUs of -c (system sampling mode, SS).
    #[arg(short = 'S', value_name = "SPEC")]
    system_sampling: Vec<String>,
    /// Reload count: events between samples.
    #[arg(short = 'n', value_name = "COUNT", default_value_t = 65536)]
    reload: u64,
    /// Toggle callchain capture (on by default).
    #[arg(short = 'N')]
    no_callchains: bool,
    /// Also capture the user stack of samples taken in the kernel.
    #[arg(short = 'U')]
    user_callchains: bool,
    /// Write the samples' pmclog to FILE.
    #[arg(short = 'O', value_name = "FILE", conflicts_with = "read_log")]
    log_out: Option<std::path::PathBuf>,
    /// Read a pmclog FILE instead of measuring: dump its records, or report
    /// with -G / --folded.
    #[arg(short = 'R', value_name = "FILE")]
    read_log: Option<std::path::PathBuf>,
    /// Write a call graph with symbols to FILE (`-` for standard output).
    #[arg(short = 'G', value_name = "FILE")]
    callgraph: Option<std::path::PathBuf>,
    /// Write folded stacks (flamegraph input) to FILE (`-` for standard output).
    #[arg(long, value_name = "FILE")]
    folded: Option<std::path::PathBuf>,
    #[command(flatten)]
    profile: ProfileArgs,
    /// CPUs for system PMCs: a list such as `0-3,6`, or `*` for all.
    #[arg(short = 'c', value_name = "CPUS", default_value = "*")]
    cpus: String,
    /// Also count the target's current and future child processes.
    #[arg(short = 'd')]
    descendants: bool,
    /// Attach process PMCs to this running process instead of a command.
    #[arg(short = 't', value_name = "PID")]
    pid: Option<u32>,
    /// Print counts every SECS seconds.
    #[arg(short = 'w', value_name = "SECS")]
    interval: Option<f64>,
    /// Stop counting after SECS seconds (the command keeps running).
    #[arg(short = 'l', value_name = "SECS")]
    duration: Option<f64>,
    /// Print totals since the start at each interval instead of deltas.
    #[arg(short = 'C')]
    cumulative: bool,
    /// Write counts to FILE instead of standard error.
    #[arg(short = 'o', value_name = "FILE")]
    output: Option<std::path::PathBuf>,
    /// Print counts as JSON lines.
    #[arg(long, conflicts_with = "csv")]
    json: bool,
    /// Print counts as CSV.
    #[arg(long)]
    csv: bool,
    /// Quiet: no progress or notes.
    #[arg(short = 'q')]
    quiet: bool,
    /// Top-like live view of the sampling PMCs, refreshed every -w SECS
    /// (default 5). Keys: q quit, space pause, c then a/d accumulate/delta,
    /// p next PMC, m merge PMCs of one name, n next view, f skip-link.
    #[arg(short = 'T', conflicts_with_all = ["duration", "read_log", "log_out"])]
    top: bool,
    /// Write each sample's pc with its function and the function's start and
    /// end addresses to FILE (`-` for standard output).
    #[arg(short = 'm', value_name = "FILE")]
    sampled_pcs: Option<std::path::PathBuf>,
    /// Write every frame of each sample's callchain with function and
    /// file:line to FILE (`-` for standard output).
    #[arg(short = 'a', value_name = "FILE")]
    annotated: Option<std::path::PathBuf>,
    /// Keep at most DEPTH frames (innermost first) of each callchain.
    #[arg(short = 'z', value_name = "DEPTH", value_parser = clap::value_parser!(u32).range(1..))]
    depth: Option<u32>,
    /// Log each process PMC's count per process at its exit (LOG_PROCEXIT);
    /// printed as `exitval` records, or kept in the -O log.
    #[arg(short = 'E')]
    log_exit: bool,
    /// Log each thread's count at every context switch (LOG_PROCCSW);
    /// printed as `cswval` records, or kept in the -O log.
    #[arg(short = 'W')]
    log_csw: bool,
    /// List the events of this machine, one per line.
    #[arg(short = 'L')]
    list_events: bool,
    /// Describe the events whose name contains SPEC.
    #[arg(short = 'u', value_name = "SPEC")]
    describe: Option<String>,
    /// Show the sampled function's address instead of its name (top view).
    #[arg(short = 'I')]
    show_address: bool,
    /// Kernel directory (FreeBSD; no effect on Linux).
    #[arg(short = 'k', value_name = "DIR")]
    kernel_dir: Option<std::path::PathBuf>,
    /// Look executables up under ROOT when resolving symbols.
    #[arg(short = 'r', value_name = "ROOT")]
    fs_root: Option<std::path::PathBuf>,
    /// More diagnostics: conversion statistics after reports.
    #[arg(short = 'v', action = clap::ArgAction::Count)]
    verbose: u8,
    /// Wide history counters for gprof output (-g).
    #[arg(short = 'e')]
    wide_gprof: bool,
    /// Plugin option: `threshold=PCT` (hide rows under PCT%) or
    /// `skiplink=0|1` (show hidden rows as a dot), for the top view.
    #[arg(short = 'f', value_name = "OPTION")]
    plugin_options: Vec<String>,
    /// Keep only the samples of thread TID in reports.
    #[arg(short = 'i', value_name = "TID")]
    thread: Option<u32>,
    /// The command to run and count (after `--`).
    #[arg(trailing_var_arg = true, value_name = "COMMAND")]
    command: Vec<OsString>,
}

/// A counter and its label.
enum Counter {
    Process(String, Box<Pmc>),
    System(String, PerCpu),
}

impl Counter {
    fn label(&self) -> &str {
        match self {
            Counter::Process(l, _) | Counter::System(l, _) => l,
        }
    }

    fn start(&mut self) -> pmc::Result<()> {
        match self {
            Counter::Process(_, p) => p.start(),
            Counter::System(_, p) => p.start(),
        }
    }

    fn stop(&mut self) -> pmc::Result<()> {
        match self {
            Counter::Process(_, p) => p.stop(),
            Counter::System(_, p) => p.stop(),
        }
    }

    fn read(&mut self) -> pmc::Result<Reading> {
        match self {
            Counter::Process(_, p) => p.read_detailed(),
            Counter::System(_, p) => p.read_detailed(),
        }
    }
}

fn main() -> ExitCode {
    gate::run_trampoline_if_requested();
    let args = Args::parse();
    match run(args) {
        Ok(code) => code,
        Err(code) => code,
    }
}

fn run(args: Args) -> Result<ExitCode, ExitCode> {
    if args.list_events || args.describe.is_some() {
        return list_or_describe(&args);
    }
    let top_options = check_options(&args)?;
    if let Some(log) = &args.read_log {
        return read_log(&args, log);
    }
    let sampling = !args.process_sampling.is_empty() || !args.system_sampling.is_empty();
    // -E and -W log per-process and per-thread counts (pmcstat.c: they
    // need a process counting PMC and a log).
    let logging_counts = args.log_exit || args.log_csw;
    let logging = sampling || logging_counts;
    if logging_counts && args.process.is_empty() {
        return Err(usage(
            TOOL,
            "-E and -W log the counts of process counting PMCs: give -p SPEC and a command or -t PID",
        ));
    }
    if args.top && !sampling {
        return Err(usage(TOOL, "-T shows sampling PMCs: give -P or -S SPEC"));
    }
    if args.process.is_empty() && args.system.is_empty() && !sampling {
        return Err(usage(
            TOOL,
            "no events: give -p/-s SPEC to count or -P/-S SPEC to sample (see --help)",
        ));
    }
    if sampling && args.log_out.is_none() && !wants_report(&args) && !args.top {
        return Err(usage(
            TOOL,
            "sampling writes a log: give -O FILE, -G/--folded/-m/-a/-F/-g/--pprof/--flamegraph to report directly, or -T to watch",
        ));
    }
    if !args.process_sampling.is_empty() && args.pid.is_none() && args.command.is_empty() {
        return Err(usage(
            TOOL,
            "-P needs a command (after --) or -t PID to sample",
        ));
    }
    if !args.process.is_empty() && args.pid.is_none() && args.command.is_empty() {
        return Err(usage(
            TOOL,
            "-p needs a command (after --) or -t PID to count",
        ));
    }
    if args.pid.is_some() && !args.command.is_empty() {
        return Err(usage(TOOL, "-t and a command exclude each other"));
    }
    for (flag, v) in [("-w", args.interval), ("-l", args.duration)] {
        if v.is_some_and(|s| !(s > 0.0 && s.is_finite())) {
            return Err(usage(
                TOOL,
                &format!("{flag} needs a positive number of seconds"),
            ));
        }
    }
    let cpus = parse_cpus(&args.cpus).map_err(|e| usage(TOOL, &e))?;
    let mut flags = if args.descendants {
        Flags::DESCENDANTS
    } else {
        Flags::empty()
    };
    if args.log_exit {
        flags |= Flags::LOG_PROCEXIT;
    }
    if args.log_csw {
        flags |= Flags::LOG_PROCCSW;
    }

    // The log first: LOG_PROC* counters need it, and allocations are logged.
    let memory_log = pmc::log::sink::MemoryLog::new();
    if logging {
        let configured = match &args.log_out {
            Some(path) => std::fs::File::create(path)
                .map_err(|e| {
                    eprintln!("{TOOL}: cannot create {}: {e}", path.display());
                    ExitCode::FAILURE
                })
                .and_then(|f| pmc::log::sink::configure_logfile(f).map_err(|e| fail(TOOL, &e))),
            None => {
                pmc::log::sink::configure_logfile(memory_log.clone()).map_err(|e| fail(TOOL, &e))
            }
        };
        configured?;
    }

    // Allocate everything first: a bad specifier fails before anything runs.
    let mut counters = Vec::new();
    for spec in &args.process {
        let pmc =
            Pmc::allocate(spec, Mode::TC, flags, pmc::Cpu::Any).map_err(|e| fail(TOOL, &e))?;
        counters.push(Counter::Process(format!("p/{spec}"), Box::new(pmc)));
    }
    for spec in &args.system {
        let per_cpu = PerCpu::allocate_on_cpus(spec, Mode::SC, Flags::empty(), &cpus)
            .map_err(|e| fail(TOOL, &e))?;
        counters.push(Counter::System(format!("s/{spec}"), per_cpu));
    }

    let mut sample_flags = Flags::empty();
    if !args.no_callchains {
        sample_flags |= Flags::CALLCHAIN;
        if args.user_callchains {
            sample_flags |= Flags::USERCALLCHAIN;
        }
    }
    let mut samplers: Vec<Pmc> = Vec::new();
    for spec in &args.process_sampling {
        let flags = sample_flags
            | if args.descendants {
                Flags::DESCENDANTS
            } else {
                Flags::empty()
            };
        samplers.push(
            Pmc::allocate_with_count(spec, Mode::TS, flags, pmc::Cpu::Any, args.reload)
                .map_err(|e| fail(TOOL, &e))?,
        );
    }
    for spec in &args.system_sampling {
        for &cpu in &cpus {
            samplers.push(
                Pmc::allocate_with_count(
                    spec,
                    Mode::SS,
                    sample_flags,
                    pmc::Cpu::Id(cpu),
                    args.reload,
                )
                .map_err(|e| fail(TOOL, &e))?,
            );
        }
    }

    let mut held = if args.command.is_empty() {
        None
    } else {
        Some(HeldCommand::spawn(&args.command).map_err(|e| {
            eprintln!("{TOOL}: cannot start {:?}: {e}", args.command[0]);
            ExitCode::FAILURE
        })?)
    };
    let target = held.as_ref().map(HeldCommand::pid).or(args.pid);
    for c in &mut counters {
        if let (Counter::Process(_, p), Some(pid)) = (c, target) {
            p.attach(pid).map_err(|e| fail(TOOL, &e))?;
        }
    }
    for p in &mut samplers {
        if p.mode() == Mode::TS
            && let Some(pid) = target
        {
            p.attach(pid).map_err(|e| fail(TOOL, &e))?;
        }
    }
    for c in &mut counters {
        c.start().map_err(|e| fail(TOOL, &e))?;
    }
    for p in &mut samplers {
        p.start().map_err(|e| fail(TOOL, &e))?;
    }
    if let Some(h) = &mut held {
        h.release().map_err(|e| {
            eprintln!("{TOOL}: {e}");
            ExitCode::FAILURE
        })?;
    }

    let interrupted = Arc::new(AtomicBool::new(false));
    {
        let flag = interrupted.clone();
        // Ctrl-C reaches the command too; we only stop waiting and report.
        let _ = ctrlc::set_handler(move || flag.store(true, Ordering::SeqCst));
    }

    let format = if args.json {
        Format::Json
    } else if args.csv {
        Format::Csv
    } else {
        Format::Table
    };
    let mut printer = Printer::new(format);
    let mut sink: Box<dyn Write> = match &args.output {
        Some(path) => Box::new(std::fs::File::create(path).map_err(|e| {
            eprintln!("{TOOL}: cannot create {}: {e}", path.display());
            ExitCode::FAILURE
        })?),
        None => Box::new(std::io::stderr()),
    };

    let start = Instant::now();
    let deadline = args.duration.map(|s| start + Duration::from_secs_f64(s));
    let interval = args.interval.map(Duration::from_secs_f64);
    let mut next_tick = interval.map(|i| start + i);
    let mut last: Vec<Reading> = Vec::new();
    let mut exit = ExitCode::SUCCESS;
    // Progress on a terminal only: piped output stays clean.
    let progress = sampling && !args.quiet && !args.top && std::io::stderr().is_terminal();
    let mut last_progress = Instant::now();
    if let Some((threshold, skiplink)) = top_options {
        exit = watch(
            &args,
            threshold,
            skiplink,
            &memory_log,
            &mut held,
            &interrupted,
        )?;
    }
    // -T ran its own loop until the end.
    loop {
        if args.top {
            break;
        }
        if let Some(h) = &mut held
            && let Some(status) = h.try_wait().map_err(|e| {
                eprintln!("{TOOL}: waiting for the command: {e}");
                ExitCode::FAILURE
            })?
        {
            exit = ExitCode::from(gate::exit_code(status));
            break;
        }
        if let Some(pid) = args.pid
            && !pmc::process_exists(pid)
        {
            break;
        }
        if held.is_none()
            && args.pid.is_none()
            && deadline.is_none()
            && interrupted.load(Ordering::SeqCst)
        {
            break;
        }
        if interrupted.load(Ordering::SeqCst) || deadline.is_some_and(|d| Instant::now() >= d) {
            break;
        }
        if let Some(tick) = next_tick
            && Instant::now() >= tick
            && !counters.is_empty()
        {
            let samples = sample(&mut counters, &mut last, args.cumulative)?;
            emit(&mut sink, &mut printer, start, &samples)?;
            next_tick = interval.map(|i| tick + i);
        }
        if progress && last_progress.elapsed() >= Duration::from_secs(1) {
            last_progress = Instant::now();
            let (samples, lost) = pmc::log::sink::stats();
            eprint!(
                "\r{TOOL}: {:.0} s elapsed, {samples} samples, {lost} lost",
                start.elapsed().as_secs_f64()
            );
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    for c in &mut counters {
        c.stop().map_err(|e| fail(TOOL, &e))?;
    }
    for p in &mut samplers {
        p.stop().map_err(|e| fail(TOOL, &e))?;
    }
    drop(samplers);
    if logging {
        if progress {
            eprintln!();
        }
        pmc::log::sink::close_logfile().map_err(|e| fail(TOOL, &e))?;
        let events = match &args.log_out {
            Some(path) => read_events(path)?,
            None => memory_log.events().map_err(|e| {
                eprintln!("{TOOL}: {e}");
                ExitCode::FAILURE
            })?,
        };
        if sampling {
            write_reports(&args, &events, false, Some(args.reload))?;
        }
        // pmcstat(8): without -O, logged events are printed as text.
        if logging_counts && args.log_out.is_none() {
            let mut text = String::new();
            for e in &events {
                if !matches!(e.record, pmc::log::LogRecord::Callchain { .. }) {
                    text.push_str(&e.record.to_string());
                    text.push('\n');
                }
            }
            sink.write_all(text.as_bytes()).map_err(|e| {
                eprintln!("{TOOL}: writing the log's records: {e}");
                ExitCode::FAILURE
            })?;
        }
    }
    // The last line: the rest of the interval, or the totals without -w.
    if !counters.is_empty() {
        let samples = sample(
            &mut counters,
            &mut last,
            args.cumulative || interval.is_none(),
        )?;
        emit(&mut sink, &mut printer, start, &samples)?;
    }
    // With -l, the command keeps running; wait for it so its status passes through.
    if let Some(h) = &mut held
        && deadline.is_some()
        && let Ok(status) = h.wait()
    {
        exit = ExitCode::from(gate::exit_code(status));
    }
    Ok(exit)
}

fn sample(
    counters: &mut [Counter],
    last: &mut Vec<Reading>,
    cumulative: bool,
) -> Result<Vec<Sample>, ExitCode> {
    let mut out = Vec::new();
    for (i, c) in counters.iter_mut().enumerate() {
        let r = c.read().map_err(|e| fail(TOOL, &e))?;
        let prev = last.get(i).copied();
        let value = match (cumulative, prev) {
            (false, Some(p)) => r.value.wrapping_sub(p.value),
            _ => r.value,
        };
        out.push(Sample {
            label: c.label().to_string(),
            value,
            raw: r.raw,
            time_enabled: r.time_enabled,
            time_running: r.time_running,
            running_percent: r.running_fraction() * 100.0,
        });
        if last.len() > i {
            last[i] = r;
        } else {
            last.push(r);
        }
    }
    Ok(out)
}

fn emit(
    sink: &mut Box<dyn Write>,
    printer: &mut Printer,
    start: Instant,
    samples: &[Sample],
) -> Result<(), ExitCode> {
    let text = printer.interval(start.elapsed().as_secs_f64(), samples);
    sink.write_all(text.as_bytes())
        .and_then(|()| sink.flush())
        .map_err(|e| {
            eprintln!("{TOOL}: writing counts: {e}");
            ExitCode::FAILURE
        })
}

fn read_events(path: &std::path::Path) -> Result<Vec<pmc::log::LogEvent>, ExitCode> {
    let file = std::fs::File::open(path).map_err(|e| {
        eprintln!("{TOOL}: cannot open {}: {e}", path.display());
        ExitCode::FAILURE
    })?;
    pmc::log::LogReader::from_reader(file)
        .collect::<Result<Vec<_>, String>>()
        .map_err(|e| {
            eprintln!("{TOOL}: {}: {e}", path.display());
            ExitCode::FAILURE
        })
}

fn write_to(path: &std::path::Path, text: &str) -> Result<(), ExitCode> {
    let r = if path.as_os_str() == "-" {
        std::io::stdout().write_all(text.as_bytes())
    } else {
        std::fs::write(path, text)
    };
    r.map_err(|e| {
        eprintln!("{TOOL}: cannot write {}: {e}", path.display());
        ExitCode::FAILURE
    })
}

/// Whether a report is asked for (what sampling writes instead of a log).
fn wants_report(args: &Args) -> bool {
    args.callgraph.is_some()
        || args.folded.is_some()
        || args.sampled_pcs.is_some()
        || args.annotated.is_some()
        || args.profile.any()
}

/// Whether `-R`'s reports can stream the log (no filter, -m, -a or -v needs
/// every event at once).
fn streams_report(args: &Args) -> bool {
    (args.callgraph.is_some() || args.folded.is_some() || args.profile.any())
        && args.fs_root.is_none()
        && args.thread.is_none()
        && args.depth.is_none()
        && args.sampled_pcs.is_none()
        && args.annotated.is_none()
        && args.verbose == 0
}

/// Writes the reports asked for, after -r/-i/-z; with -v, the conversion
/// statistics (to -o, else standard output for -R and standard error live).
fn write_reports(
    args: &Args,
    events: &[pmc::log::LogEvent],
    from_log: bool,
    period: Option<u64>,
) -> Result<(), ExitCode> {
    let root = fs_root(args)?;
    let events = annotate::prepare(
        events,
        root.as_deref(),
        args.thread,
        args.depth.map(|d| d as usize),
    );
    let events = &events[..];
    // One symbolised profile for -G, --folded, -F, -g, --pprof, --flamegraph.
    let profile =
        (args.callgraph.is_some() || args.folded.is_some() || args.profile.any()).then(|| {
            let options = ProfileArgs::options(
                events,
                period,
                args.show_address,
                args.depth.map(|d| d as usize),
            );
            pmc_report::Profile::from_events_with(events, &options)
        });
    if let (Some(path), Some(profile)) = (&args.callgraph, &profile) {
        write_to(path, &pmc_report::callgraph(profile))?;
    }
    if let (Some(path), Some(profile)) = (&args.folded, &profile) {
        write_to(path, &pmc_report::folded(profile))?;
    }
    if let Some(path) = &args.sampled_pcs {
        write_to(path, &annotate::sampled_pcs(events))?;
    }
    if let Some(path) = &args.annotated {
        write_to(path, &annotate::annotated_callchains(events))?;
    }
    // -F, -g, --pprof, --flamegraph (tools/src/profile_args.rs).
    if let Some(profile) = &profile {
        args.profile.write_profile(profile).map_err(|e| {
            eprintln!("{TOOL}: {e}");
            ExitCode::FAILURE
        })?;
    }
    if args.verbose > 0 {
        let stats = annotate::statistics(events);
        match &args.output {
            Some(p) if !from_log => write_to(p, &stats)?,
            _ if from_log => write_to(std::path::Path::new("-"), &stats)?,
            _ => eprint!("{stats}"),
        }
    }
    Ok(())
}

/// `-r ROOT` as an absolute path.
fn fs_root(args: &Args) -> Result<Option<std::path::PathBuf>, ExitCode> {
    args.fs_root
        .as_ref()
        .map(|r| {
            std::path::absolute(r).map_err(|e| {
                eprintln!("{TOOL}: -r {}: {e}", r.display());
                ExitCode::from(pmc_tools::EXIT_USAGE)
            })
        })
        .transpose()
}

/// `-L` / `-u SPEC`: list or describe the machine's events.
fn list_or_describe(args: &Args) -> Result<ExitCode, ExitCode> {
    let classes = pmc_tools::events::all().map_err(|e| fail(TOOL, &e))?;
    let text = match &args.describe {
        Some(spec) => pmc_tools::events::describe(&classes, spec),
        None => pmc_tools::events::list(&classes),
    };
    write_to(std::path::Path::new("-"), &text)?;
    if !args.quiet {
        for (class, names) in &classes {
            if let Err(why) = names {
                eprintln!("{TOOL}: {class} events not listed: {why}");
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Options that do not apply here say why; `-k` is accepted and ignored
/// with a warning, as FreeBSD's pmcstat does. Returns the top view's
/// (threshold, skiplink) when -T is given.
fn check_options(args: &Args) -> Result<Option<(f64, bool)>, ExitCode> {
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

/// `-T`: the live view until `q`, Ctrl-C or the target's exit. A command
/// still running at `q` is interrupted (SIGINT, as pmcstat does) and
/// waited for.
fn watch(
    args: &Args,
    threshold: f64,
    skiplink: bool,
    memory_log: &pmc::log::sink::MemoryLog,
    held: &mut Option<HeldCommand>,
    interrupted: &AtomicBool,
) -> Result<ExitCode, ExitCode> {
    let mut view = top::TopView::new(threshold, skiplink, args.show_address);
    let interval = Duration::from_secs_f64(args.interval.unwrap_or(5.0));
    let mut status = None;
    let root = fs_root(args)?;
    // Parse only what was logged since the last refresh.
    let mut reader = pmc::log::LogReader::from_memory();
    let mut fed = 0;
    let ended = top::run(
        &mut view,
        interval,
        || {
            pmc::log::sink::flush_logfile().map_err(|e| e.to_string())?;
            let bytes = memory_log.bytes();
            reader.feed(bytes.get(fed..).unwrap_or(&[]));
            fed = bytes.len();
            let mut new = Vec::new();
            loop {
                match reader.read() {
                    pmc::log::ReadState::Ok(e) => new.push(e),
                    pmc::log::ReadState::Error(e) => return Err(format!("the log: {e}")),
                    pmc::log::ReadState::Eof | pmc::log::ReadState::RequireData => {
                        // -r, -i and -z apply to the view as to reports.
                        return Ok(annotate::prepare(
                            &new,
                            root.as_deref(),
                            args.thread,
                            args.depth.map(|d| d as usize),
                        ));
                    }
                }
            }
        },
        || {
            if interrupted.load(Ordering::SeqCst) {
                return true;
            }
            if let Some(h) = held.as_mut() {
                match h.try_wait() {
                    Ok(Some(s)) => {
                        status = Some(s);
                        return true;
                    }
                    Ok(None) => return false,
                    Err(_) => return true,
                }
            }
            args.pid.is_some_and(|pid| !pmc::process_exists(pid))
        },
    )
    .map_err(|e| {
        eprintln!("{TOOL}: {e}");
        ExitCode::FAILURE
    })?;
    if let Some(s) = status {
        return Ok(ExitCode::from(gate::exit_code(s)));
    }
    if ended == top::Ended::Quit
        && let Some(h) = held.as_mut()
    {
        use nix::sys::signal::{Signal, kill};
        let pid = nix::unistd::Pid::from_raw(h.pid() as i32);
        let _ = kill(pid, Signal::SIGINT);
        // A command that ignores SIGINT is killed after 2 s.
        let end = Instant::now() + Duration::from_secs(2);
        while matches!(h.try_wait(), Ok(None)) {
            if Instant::now() >= end {
                let _ = kill(pid, Signal::SIGKILL);
                let _ = h.wait();
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `-R FILE`: dump the log's records, or write the reports asked for.
fn read_log(args: &Args, path: &std::path::Path) -> Result<ExitCode, ExitCode> {
    if !(args.process.is_empty()
        && args.system.is_empty()
        && args.process_sampling.is_empty()
        && args.system_sampling.is_empty()
        && args.command.is_empty()
        && args.pid.is_none())
    {
        return Err(usage(
            TOOL,
            "-R reads a log: it excludes event specs, -t and a command",
        ));
    }
    if streams_report(args) {
        // Streamed: -G, --folded and the profiles of a large log in little memory.
        args.profile
            .report_file(
                path,
                args.callgraph.as_deref(),
                args.folded.as_deref(),
                ProfileArgs::options(&[], None, args.show_address, None),
            )
            .map_err(|e| {
                eprintln!("{TOOL}: {e}");
                ExitCode::FAILURE
            })?;
        return Ok(ExitCode::SUCCESS);
    }
    let events = read_events(path)?;
    if wants_report(args) || args.verbose > 0 {
        write_reports(args, &events, true, None)?;
        return Ok(ExitCode::SUCCESS);
    }
    let events = read_events(path)?;
    let mut text = String::new();
    for e in &events {
        text.push_str(&e.record.to_string());
        text.push('\n');
    }
    match &args.output {
        Some(p) => write_to(p, &text)?,
        None => write_to(std::path::Path::new("-"), &text)?,
    }
    Ok(ExitCode::SUCCESS)
}
