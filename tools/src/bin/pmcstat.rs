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
    profile: pmc_tools::profile_args::ProfileArgs,
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
    if let Some(log) = &args.read_log {
        return read_log(&args, log);
    }
    let sampling = !args.process_sampling.is_empty() || !args.system_sampling.is_empty();
    if args.process.is_empty() && args.system.is_empty() && !sampling {
        return Err(usage(
            TOOL,
            "no events: give -p/-s SPEC to count or -P/-S SPEC to sample (see --help)",
        ));
    }
    if sampling
        && args.log_out.is_none()
        && args.callgraph.is_none()
        && args.folded.is_none()
        && !args.profile.any()
    {
        return Err(usage(
            TOOL,
            "sampling writes a log: give -O FILE, or -G/--folded/-F/-g/--pprof/--flamegraph to report directly",
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
    let flags = if args.descendants {
        Flags::DESCENDANTS
    } else {
        Flags::empty()
    };

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

    // The log first, so that allocations are logged too.
    let memory_log = pmc::log::sink::MemoryLog::new();
    if sampling {
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
    let progress = sampling && !args.quiet && std::io::stderr().is_terminal();
    let mut last_progress = Instant::now();
    loop {
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
    if sampling {
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
        write_reports(&args, &events)?;
        write_profiles(&args, &events, Some(args.reload))?;
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

fn write_reports(args: &Args, events: &[pmc::log::LogEvent]) -> Result<(), ExitCode> {
    if let Some(path) = &args.callgraph {
        write_to(path, &pmc_tools::report::callgraph(events))?;
    }
    if let Some(path) = &args.folded {
        write_to(path, &pmc_tools::report::folded(events))?;
    }
    Ok(())
}

/// `-F`, `-g`, `--pprof`, `--flamegraph` (tools/src/profile_args.rs).
fn write_profiles(
    args: &Args,
    events: &[pmc::log::LogEvent],
    period: Option<u64>,
) -> Result<(), ExitCode> {
    args.profile.write(events, period).map_err(|e| {
        eprintln!("{TOOL}: {e}");
        ExitCode::FAILURE
    })
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
    if args.callgraph.is_some() || args.folded.is_some() || args.profile.any() {
        // Streamed: reports of a large log in little memory.
        args.profile
            .report_file(path, args.callgraph.as_deref(), args.folded.as_deref())
            .map_err(|e| {
                eprintln!("{TOOL}: {e}");
                ExitCode::FAILURE
            })?;
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
