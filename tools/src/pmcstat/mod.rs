//! `pmcstat`: count events of a command, a running process or the whole
//! system, with FreeBSD pmcstat(8)'s options.
//!
//! The binary (`src/bin/pmcstat.rs`) calls [`main`]. `options.rs` holds the
//! arguments and the checks that need no machine; `counting.rs` the
//! counting PMCs and their interval lines; `reports.rs` `-R`, `-L`/`-u` and
//! the reports written from a log; `watch.rs` the `-T` loop. This file is
//! the live mode: allocate, attach, start, wait, stop, report.

mod counting;
mod options;
mod reports;
mod watch;

use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use clap::Parser;
use pmc::{Flags, Mode, PerCpu, Pmc, Reading};

use crate::gate::{self, HeldCommand};
use crate::output::{Format, Printer};
use crate::{fail, parse_cpus, usage};

use counting::{Counter, emit, sample};
use options::{Args, check_options, wants_report};
use reports::{list_or_describe, print_logged_counts, read_events, read_log, write_reports};
use watch::watch;

const TOOL: &str = "pmcstat";

/// pmcstat's entry point: runs the trampoline of a held command if this
/// process is one, else parses the arguments and runs; returns the exit
/// status (the command's own when one was run to its end).
pub fn main() -> ExitCode {
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
        // pmcstat(8): without -O, the logged counts are printed as text.
        if logging_counts && args.log_out.is_none() {
            print_logged_counts(&args, &events, &mut sink)?;
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
