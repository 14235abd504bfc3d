//! `pmcstat`: count events of a command, a running process or the whole
//! system, with FreeBSD pmcstat(8)'s options.
//!
//! The binary (`src/bin/pmcstat.rs`) calls [`main`]. `options.rs` holds the
//! arguments and the checks that need no machine; `counting.rs` the
//! counting PMCs and their interval lines; `reports.rs` `-R`, `-L`/`-u` and
//! the reports written from a log; `watch.rs` the `-T` loop. This file is
//! the live mode: allocate, attach, start, wait, stop, report.

mod convert;
mod counting;
mod distinct;
mod options;
mod reports;
mod signals;
mod watch;
mod write_failure;

use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use pmc::{Flags, Mode, Pmc};

use crate::destination::HeldOutput;
use crate::gate::{self, HeldCommand};
use crate::output::{Format, Printer};
use crate::sysexits::{EX_DATAERR, EX_OSERR, EX_UNAVAILABLE};
use crate::{fail_as, usage};

use counting::{CountOutput, Counter, Form};
pub(crate) use options::Args;
use options::{EventSpec, check_options, find_targets, wants_report};
use reports::{
    Losses, list_or_describe, print_logged_counts, read_events, read_log, write_reports,
};
use watch::watch;

const TOOL: &str = "pmcstat";

/// pmcstat.h `DEFAULT_WAIT_INTERVAL`: the count table's interval without
/// `-w`.
const DEFAULT_WAIT_INTERVAL: f64 = 5.0;

/// pmcstat's entry point: runs the trampoline of a held command if this
/// process is one, else parses the arguments and runs; returns the exit
/// status: `EX_OK` for every run that measured, whatever the command's own
/// status (pmcstat.c ends main with `exit(EX_OK)`), a sysexits code for
/// each error.
pub fn main() -> ExitCode {
    gate::run_trampoline_if_requested();
    match options::parse().and_then(|(args, specs)| run(args, &specs)) {
        Ok(code) => code,
        Err(code) => code,
    }
}

/// A library failure of the live mode: pmcstat.c says `EX_OSERR` for every
/// failing pmc call (allocate, attach, start, read, stop, configure the
/// log), `EX_UNAVAILABLE` when `pmc_init` fails (no backend here).
fn os_fail(e: &pmc::Error) -> ExitCode {
    let status = match e {
        pmc::Error::NoBackend { .. } => EX_UNAVAILABLE,
        _ => EX_OSERR,
    };
    fail_as(TOOL, e, status)
}

fn run(args: Args, specs: &[EventSpec]) -> Result<ExitCode, ExitCode> {
    if args.list_events || args.describe.is_some() {
        return list_or_describe(&args);
    }
    let top_options = check_options(&args)?;
    distinct::check_outputs_distinct(&args)?;
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
    let counting = !args.process.is_empty() || !args.system.is_empty();
    // pmcstat.c: "option -O is required if counting and sampling PMCs are
    // specified together" (the printed log and the table would mix).
    if counting && sampling && args.log_out.is_none() && !wants_report(&args) && !args.top {
        return Err(usage(
            TOOL,
            "-O FILE is required when counting and sampling PMCs are given together",
        ));
    }
    // Sampling without -O or a report prints the log as text, as pmcstat.c
    // does through its pipe (FLAG_HAS_PIPE, FLAG_DO_PRINT).
    let print_log = sampling && args.log_out.is_none() && !wants_report(&args) && !args.top;
    let targeted = !args.targets.is_empty();
    if !args.process_sampling.is_empty() && !targeted && args.command.is_empty() {
        return Err(usage(
            TOOL,
            "-P needs a command (after --) or -t PID to sample",
        ));
    }
    if !args.process.is_empty() && !targeted && args.command.is_empty() {
        return Err(usage(
            TOOL,
            "-p needs a command (after --) or -t PID to count",
        ));
    }
    if targeted && !args.command.is_empty() {
        return Err(usage(TOOL, "-t and a command exclude each other"));
    }
    // -w and -l were range-checked as they were parsed (options/ranges.rs).
    // -t: every process id that exists and every process whose name
    // matches, as pmcstat_find_targets; none is EX_DATAERR ("No matching
    // target processes.").
    let mut targets = Vec::new();
    for spec in &args.targets {
        targets.extend(find_targets(spec)?);
    }
    if targeted && targets.is_empty() {
        eprintln!(
            "{TOOL}: no process matches -t {}: give the id of a running process or a pattern over process names",
            args.targets.join(" -t ")
        );
        return Err(ExitCode::from(EX_DATAERR));
    }

    // Everything that can fail without measuring fails before the log is
    // touched: the command, the backend, then (below) the specifiers.
    if let Some(program) = args.command.first()
        && let Err(e) = gate::resolve_program(program)
    {
        return Err(cannot_run(program, &e));
    }
    let process_pmcs = !args.process.is_empty() || !args.process_sampling.is_empty();
    if process_pmcs {
        check_backend_counts_others()?;
    }

    // The log first: LOG_PROC* counters need it, and allocations are logged.
    // An -O log is held in memory until every check has passed (see
    // open_outputs), so a failed run leaves an existing log alone.
    let memory_log = pmc::log::sink::MemoryLog::new();
    let held_log = args
        .log_out
        .as_ref()
        .filter(|_| logging)
        // A device, FIFO or socket cannot be read back: what the reports
        // and -v's statistics read is copied as it goes.
        .map(|_| HeldOutput::new(wants_report(&args) || args.verbose > 0));
    if logging {
        match &held_log {
            Some(held) => pmc::log::sink::configure_logfile(held.clone()),
            None => pmc::log::sink::configure_logfile(memory_log.clone()),
        }
        .map_err(|e| os_fail(&e))?;
    }
    flush_log_now(logging);

    // Allocate everything first, in command-line order, each with the
    // toggles in force where it was given: a bad specifier fails before
    // anything runs (pmcstat.c: err(EX_OSERR, "ERROR: Cannot allocate
    // %s-mode pmc with specification \"%s\"", …)).
    let mut counters = Vec::new();
    let mut samplers: Vec<Pmc> = Vec::new();
    if let Some(options::CallGraph::Dwarf(bytes)) = args.call_graph {
        pmc::Owner::global()
            .set_user_stack(Some(bytes))
            .map_err(|e| os_fail(&e))?;
    }
    for ev in specs {
        let mut flags = Flags::empty();
        if ev.descendants && matches!(ev.mode, Mode::TC | Mode::TS) {
            flags |= Flags::DESCENDANTS;
        }
        match ev.mode {
            Mode::TC => {
                if ev.log_exit {
                    flags |= Flags::LOG_PROCEXIT;
                }
                if ev.log_csw {
                    flags |= Flags::LOG_PROCCSW;
                }
                let (pmc, spec) = allocate_process_pmc(&ev.spec, Mode::TC, flags, 0)?;
                counters.push(Counter::process(&spec, ev.cumulative, pmc));
            }
            Mode::SC => {
                let per_cpu = Pmc::builder(&ev.spec)
                    .flags(flags)
                    .per_cpu()
                    .cpus(&ev.cpus)
                    .build()
                    .map_err(|e| os_fail(&e))?;
                counters.push(Counter::system(&ev.spec, ev.cumulative, per_cpu));
            }
            Mode::TS | Mode::SS => {
                if ev.reload < pmc::MIN_RELOAD_COUNT {
                    // As hwpmc, which logs "passed sample rate N - setting to 1000".
                    eprintln!(
                        "{TOOL}: warning: -n {} raised to {}, hwpmc's minimum reload count",
                        ev.reload,
                        pmc::MIN_RELOAD_COUNT
                    );
                }
                if ev.callchain {
                    flags |= Flags::CALLCHAIN;
                    if ev.user_callchain {
                        flags |= Flags::USERCALLCHAIN;
                    }
                }
                if ev.mode == Mode::TS {
                    samplers.push(allocate_process_pmc(&ev.spec, Mode::TS, flags, ev.reload)?.0);
                } else {
                    for &cpu in &ev.cpus {
                        samplers.push(
                            Pmc::allocate_with_count(
                                &ev.spec,
                                Mode::SS,
                                flags,
                                pmc::Cpu::Id(cpu),
                                ev.reload,
                            )
                            .map_err(|e| os_fail(&e))?,
                        );
                    }
                }
            }
        }
    }
    // What reports name as the sampling rate: the first sampling PMC's.
    let reload = specs
        .iter()
        .find(|ev| matches!(ev.mode, Mode::TS | Mode::SS))
        .map_or(options::DEFAULT_SAMPLE_COUNT, |ev| ev.reload);

    // Before the command starts: from its exec on, a Ctrl-C, SIGTERM,
    // SIGHUP or SIGQUIT must not kill pmcstat before it has reported
    // (signals.rs). pmcstat.c on SIGINT: signal the command it started
    // (pmcstat_kill_process), then report once it exits. A signal ignored
    // at start (a background job of a shell without job control, nohup)
    // is passed on ignored, as from any parent: the command is started
    // after the handlers, which its exec resets to the default, and
    // ignored signals are not caught then. Nothing can interrupt pmcstat
    // meanwhile: SIGINT is still ignored then.
    let interrupts = signals::Interrupts::catch()?;
    // Any of them ends a wait for the reader of an output FIFO.
    crate::destination::give_up_waiting_when(interrupts.arrived());
    let held = if args.command.is_empty() {
        None
    } else {
        Some(HeldCommand::spawn(&args.command).map_err(|e| cannot_run(&args.command[0], &e)))
    };
    interrupts.catch_sigint_if_ignored()?;
    let mut held = held.transpose()?;
    // A command is counted from its exec on (attach_at_exec): pmcstat's own
    // start-up of it is not the command's work. Targets of -t that exited
    // meanwhile are skipped (ESRCH), none attached is EX_DATAERR, as
    // pmcstat_attach_pmcs.
    let mut attached = 0;
    let mut attach = |p: &mut Pmc| -> Result<(), ExitCode> {
        if let Some(h) = &held {
            return p.attach_at_exec(h.pid()).map_err(|e| os_fail(&e));
        }
        for &pid in &targets {
            match p.attach(pid) {
                Ok(()) => attached += 1,
                Err(e) if e.errno() == nix::errno::Errno::ESRCH as i32 => {}
                Err(e) => return Err(os_fail(&e)),
            }
        }
        Ok(())
    };
    for c in &mut counters {
        if let Some(p) = c.process_pmc() {
            attach(p)?;
        }
    }
    for p in &mut samplers {
        if p.mode() == Mode::TS {
            attach(p)?;
        }
    }
    let process_pmcs_attached = attached;
    if targeted && process_pmcs && process_pmcs_attached == 0 {
        eprintln!("{TOOL}: no processes were attached to: the targets of -t exited");
        return Err(ExitCode::from(EX_DATAERR));
    }
    let sink = open_outputs(&args, held_log.as_ref())?;
    for c in &mut counters {
        c.start().map_err(|e| os_fail(&e))?;
    }
    for p in &mut samplers {
        p.start().map_err(|e| os_fail(&e))?;
    }
    flush_log_now(logging);
    if let Some(h) = &mut held {
        h.release().map_err(|e| cannot_run(&args.command[0], &e))?;
    }

    let mut interrupts_seen = 0;

    let form = if args.json {
        Form::Lines(Printer::new(Format::Json))
    } else if args.csv {
        Form::Lines(Printer::new(Format::Csv))
    } else {
        Form::Table(counting::table(&mut counters))
    };
    let table = matches!(form, Form::Table(_));
    let mut out = CountOutput {
        terminal: args.output.is_none() && std::io::stderr().is_terminal(),
        to_file: args.output.is_some(),
        sink,
        form,
    };

    let start = Instant::now();
    let deadline = args.duration.map(|s| start + Duration::from_secs_f64(s));
    // The table is printed at each timer tick, every -w SECS or
    // DEFAULT_WAIT_INTERVAL (pmcstat.c's EVFILT_TIMER of pa_interval); our
    // JSON and CSV lines only with -w.
    let interval = match args.interval {
        Some(secs) => Some(Duration::from_secs_f64(secs)),
        None if table => Some(Duration::from_secs_f64(DEFAULT_WAIT_INTERVAL)),
        None => None,
    };
    let mut next_tick = interval.map(|i| start + i);
    // Progress on a terminal only: piped output stays clean.
    let progress = sampling && !args.quiet && !args.top && std::io::stderr().is_terminal();
    let mut last_progress = Instant::now();
    // What -T took out of the memory log as it showed it (nothing else
    // reads the log after it then).
    let keep_log = wants_report(&args) || logging_counts;
    let mut seen_by_top = Losses::default();
    if let Some((threshold, skiplink)) = top_options {
        seen_by_top = watch(
            &args,
            threshold,
            skiplink,
            &memory_log,
            keep_log,
            &mut held,
            &interrupts,
            &targets,
        )?;
    }
    // -T ran its own loop until the end.
    loop {
        if args.top {
            break;
        }
        if let Some(h) = &mut held
            && h.try_wait()
                .map_err(|e| {
                    eprintln!("{TOOL}: waiting for the command: {e}");
                    ExitCode::from(EX_OSERR)
                })?
                .is_some()
        {
            break;
        }
        // -t: hwpmc signals SIGIO once a PMC has lost all its targets.
        if targeted && !targets.iter().any(|&pid| pmc::process_exists(pid)) {
            break;
        }
        let now_interrupted = interrupts.count();
        if now_interrupted > interrupts_seen {
            interrupts_seen = now_interrupted;
            match &held {
                // The first Ctrl-C (or SIGTERM, …) asks the command to
                // stop, a second one kills it; its exit ends the loop above.
                Some(h) => forward_interrupt(h, interrupts_seen, interrupts.last())?,
                None => break,
            }
        }
        if deadline.is_some_and(|d| Instant::now() >= d) {
            break;
        }
        if let Some(tick) = next_tick
            && Instant::now() >= tick
            && !counters.is_empty()
        {
            if let Err(code) = out.interval(&mut counters, start, false) {
                let run = write_failure::Run {
                    counters: &mut counters,
                    samplers: &mut samplers,
                    held: held.as_mut(),
                    out: &mut out,
                    start,
                    log_out: args.log_out.as_deref(),
                    interrupts: &interrupts,
                };
                return Err(write_failure::counts_failed(code, run));
            }
            next_tick = interval.map(|i| tick + i);
        }
        // -O's write error ends the run at once, as -o's does (hwpmc's
        // log thread signals its owner SIGIO at its first write error).
        if let Some(path) = &args.log_out
            && let Some(e) = pmc::log::sink::write_error()
        {
            let run = write_failure::Run {
                counters: &mut counters,
                samplers: &mut samplers,
                held: held.as_mut(),
                out: &mut out,
                start,
                log_out: Some(path),
                interrupts: &interrupts,
            };
            return Err(write_failure::stop(
                write_failure::Failed::Log(path, e),
                run,
            ));
        }
        if progress && last_progress.elapsed() >= Duration::from_secs(1) {
            last_progress = Instant::now();
            let (samples, lost) = pmc::log::sink::stats();
            // A hung-up terminal (EIO) must not panic: SIGHUP still
            // closes the log.
            let _ = write!(
                std::io::stderr(),
                "\r{TOOL}: {:.0} s elapsed, {samples} samples, {lost} lost",
                start.elapsed().as_secs_f64()
            );
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    for c in &mut counters {
        c.stop().map_err(|e| os_fail(&e))?;
    }
    for p in &mut samplers {
        p.stop().map_err(|e| os_fail(&e))?;
    }
    drop(samplers);
    if logging {
        if progress {
            let _ = writeln!(std::io::stderr());
        }
        if let Err(e) = pmc::log::sink::close_logfile() {
            return Err(match (&args.log_out, e) {
                // The last records met the write error: as in the loop.
                (Some(path), e @ pmc::Error::Log { .. }) => {
                    let run = write_failure::Run {
                        counters: &mut counters,
                        samplers: &mut [],
                        held: held.as_mut(),
                        out: &mut out,
                        start,
                        log_out: Some(path),
                        interrupts: &interrupts,
                    };
                    write_failure::stop(write_failure::Failed::Log(path, e), run)
                }
                (_, e) => os_fail(&e),
            });
        }
        let (events, mut losses) = recorded_events(&args, held_log.as_ref(), &memory_log)?;
        // Said at the end of recording, as FreeBSD warns that sampling was
        // paused and perf that chunks were lost.
        losses.merge(seen_by_top);
        losses.warn(pmc::log::sink::smallest_ring_kib());
        if print_log {
            // The log printed as -R prints it, to -o or standard error
            // (pmcstat.c's pa_printfile).
            let mut text = String::new();
            for e in &events {
                text.push_str(&e.record.to_string());
                text.push('\n');
            }
            crate::output::write_out(TOOL, &mut out.sink, text.as_bytes(), "the log")?;
        } else if sampling {
            write_reports(
                &args,
                &events,
                Default::default(),
                Some(&mut *out.sink),
                Some(reload),
            )?;
        }
        // pmcstat(8): without -O, the logged counts are printed as text.
        if logging_counts && args.log_out.is_none() {
            print_logged_counts(&args, &events, &mut out.sink)?;
        }
    }
    // The last line (pmcstat.c prints the PMCs when the target exits):
    // the rest of the interval, then the table's final newline; JSON and
    // CSV give the totals without -w.
    if !counters.is_empty() {
        out.interval(&mut counters, start, args.interval.is_none())?;
        out.finish()?;
    }
    // pmcstat.c exits at once, a command still running after -l keeps
    // running; every normal run ends with exit(EX_OK).
    Ok(ExitCode::SUCCESS)
}

/// Sends the command the signal pmcstat got (`got`) at the first
/// interrupt, SIGKILL after.
fn forward_interrupt(
    held: &HeldCommand,
    interrupts: usize,
    got: nix::sys::signal::Signal,
) -> Result<(), ExitCode> {
    let signal = if interrupts <= 1 {
        got
    } else {
        nix::sys::signal::Signal::SIGKILL
    };
    match held.signal(signal) {
        Ok(()) => Ok(()),
        // It exited already: the loop reaps it.
        Err(e) if e.raw_os_error() == Some(nix::errno::Errno::ESRCH as i32) => Ok(()),
        Err(e) => {
            // pmcstat_kill_process: err(EX_OSERR, "ERROR: cannot signal child process").
            eprintln!("{TOOL}: cannot signal the command: {e}");
            Err(ExitCode::from(EX_OSERR))
        }
    }
}

/// Writes out what the log holds now, `logging`: its INITIALIZE once it
/// is configured, then the PMCs' allocations and initial MAP_INs once they
/// run, so that a recording killed before its first 64 KiB (`kill -9`)
/// still leaves a log whose beginning reads. A write error stays with the
/// log and is said where it closes.
fn flush_log_now(logging: bool) {
    if logging {
        let _ = pmc::log::sink::flush_logfile();
    }
}

/// The command cannot run: its error alone, exit `EX_OSERR`, the status
/// of pmcstat.c's report of it (the child's `err(EX_OSERR, "ERROR: execvp
/// \"%s\" failed")` in pmcstat_create_process).
fn cannot_run(program: &std::ffi::OsStr, e: &std::io::Error) -> ExitCode {
    let what = match e.kind() {
        std::io::ErrorKind::NotFound => "command not found".to_string(),
        std::io::ErrorKind::PermissionDenied => "permission denied".to_string(),
        _ => e.to_string(),
    };
    eprintln!("{TOOL}: cannot run {}: {what}", program.to_string_lossy());
    ExitCode::from(EX_OSERR)
}

/// Counting or sampling a command or another process needs a backend that
/// reaches other processes; the portable one reads only pmcstat's own
/// getrusage, so pmcstat says so before it starts anything.
fn check_backend_counts_others() -> Result<(), ExitCode> {
    let choice = pmc::backends::active();
    if choice.name != "portable" {
        return Ok(());
    }
    eprintln!(
        "{TOOL}: -p and -P count a command or another process, but the backend in use, \
         portable ({}), counts only the process that calls it (pmcstat itself); \
         unset PMC_BACKEND or let perf_event be used (see `cargo xtask probe`)",
        choice.reason
    );
    Err(ExitCode::from(EX_UNAVAILABLE))
}

/// Allocates a process PMC (TC, or TS with `reload`); returns it with the
/// specifier it counts. Where the kernel refuses kernel-mode counting
/// (perf_event_paranoid) and the specifier did not ask for a mode, it
/// counts user mode only and says why, as perf stat does; the library
/// itself keeps the strict error.
fn allocate_process_pmc(
    spec: &str,
    mode: Mode,
    flags: Flags,
    reload: u64,
) -> Result<(Pmc, String), ExitCode> {
    let allocate = |spec: &str| {
        if mode == Mode::TS {
            Pmc::allocate_with_count(spec, mode, flags, pmc::Cpu::Any, reload)
        } else {
            Pmc::allocate(spec, mode, flags, pmc::Cpu::Any)
        }
    };
    match allocate(spec) {
        Ok(pmc) => Ok((pmc, spec.to_string())),
        Err(strict @ pmc::Error::PermissionDenied { .. }) => {
            let user_only = format!("{spec},usr");
            match allocate(&user_only) {
                Ok(pmc) => {
                    let why = match &strict {
                        pmc::Error::PermissionDenied {
                            hint: Some(hint), ..
                        } => hint.clone(),
                        other => other.to_string(),
                    };
                    // A closed standard error must not panic (the counts
                    // still go where they were asked to).
                    let _ = writeln!(
                        std::io::stderr(),
                        "{TOOL}: warning: counting {spec} in user mode only ({user_only}): {}",
                        why.replace('\n', " ")
                    );
                    Ok((pmc, user_only))
                }
                // Not a mode problem (or the spec named one): the first error.
                Err(_) => Err(os_fail(&strict)),
            }
        }
        Err(e) => Err(os_fail(&e)),
    }
}

/// Opens the outputs of a live run once nothing the user asked for can
/// fail any more (the specifiers, CPUs, command and targets are checked):
/// the `-O` log gets what was held in memory since its configuration, and
/// the `-o` sink (standard error without one) is returned. Both are
/// opened in place (`destination.rs`); a FIFO's open waits for its
/// reader, before the PMCs start and the command runs, as pmcstat.c opens
/// its files before it starts anything.
fn open_outputs(args: &Args, held_log: Option<&HeldOutput>) -> Result<Box<dyn Write>, ExitCode> {
    if let (Some(held), Some(path)) = (held_log, &args.log_out) {
        // The records so far (INITIALIZE, the allocations) reach the file
        // at once.
        pmc::log::sink::flush_logfile().map_err(|e| os_fail(&e))?;
        let file = crate::destination::create(path).map_err(|e| cannot_open("-O", path, &e))?;
        held.open(file).map_err(|e| {
            crate::output::io_failure(TOOL, &e, &format!("the log to {}", path.display()))
        })?;
    }
    Ok(match &args.output {
        Some(path) => {
            Box::new(crate::destination::create(path).map_err(|e| cannot_open("-o", path, &e))?)
        }
        None => Box::new(std::io::stderr()),
    })
}

/// An output that cannot be opened: pmcstat_log.c's `errx(EX_OSERR,
/// "ERROR: Cannot open \"%s\" for %s: %s.")`, with the option;
/// interrupted while it waited for a FIFO's reader, the status of a Ctrl-C
/// (128 + SIGINT).
fn cannot_open(flag: &str, path: &std::path::Path, e: &std::io::Error) -> ExitCode {
    eprintln!(
        "{TOOL}: ERROR: Cannot open \"{}\" for writing ({flag}): {e}.",
        path.display()
    );
    if e.kind() == std::io::ErrorKind::Interrupted {
        return ExitCode::from(128 + nix::sys::signal::Signal::SIGINT as u8);
    }
    ExitCode::from(EX_OSERR)
}

/// The records of the finished recording, for its reports and the
/// losses warning: the `-O` file read back, or the copy kept of a
/// destination that cannot be read back (a device, FIFO or socket; the
/// losses then as the log's statistics counted them), or the memory log.
fn recorded_events(
    args: &Args,
    held_log: Option<&HeldOutput>,
    memory_log: &pmc::log::sink::MemoryLog,
) -> Result<(Vec<pmc::log::LogEvent>, Losses), ExitCode> {
    let events = match (held_log, &args.log_out) {
        (Some(held), Some(path)) if held.is_regular_file() => read_events(path)?.0,
        (Some(held), Some(_)) => {
            let Some(bytes) = held.copy() else {
                let (samples, lost) = pmc::log::sink::stats();
                return Ok((Vec::new(), Losses::counted(samples, lost)));
            };
            let mut reader = pmc::log::LogReader::from_memory();
            reader.feed(&bytes);
            reader.collect::<Result<Vec<_>, _>>().map_err(|e| {
                eprintln!("{TOOL}: {e}");
                ExitCode::from(crate::sysexits::EX_SOFTWARE)
            })?
        }
        _ => memory_log.events().map_err(|e| {
            eprintln!("{TOOL}: {e}");
            ExitCode::from(crate::sysexits::EX_SOFTWARE)
        })?,
    };
    let losses = Losses::of(&events);
    Ok((events, losses))
}
