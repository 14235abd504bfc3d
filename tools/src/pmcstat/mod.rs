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
use std::sync::atomic::{AtomicUsize, Ordering};
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
    // An -O file is written beside its destination and renamed into place
    // once recording runs, so a failed run leaves an existing log alone.
    let memory_log = pmc::log::sink::MemoryLog::new();
    let mut pending_log = None;
    if logging {
        let configured = match &args.log_out {
            Some(path) => {
                let temp = PendingLog::create(path)?;
                let file = temp.file().map_err(|e| {
                    eprintln!("{TOOL}: cannot create {}: {e}", path.display());
                    ExitCode::FAILURE
                })?;
                pending_log = Some(temp);
                pmc::log::sink::configure_logfile(file).map_err(|e| fail(TOOL, &e))
            }
            None => {
                pmc::log::sink::configure_logfile(memory_log.clone()).map_err(|e| fail(TOOL, &e))
            }
        };
        configured?;
    }

    // Allocate everything first: a bad specifier fails before anything runs.
    let mut counters = Vec::new();
    for spec in &args.process {
        let (pmc, label) = allocate_process_pmc(spec, Mode::TC, flags, 0)?;
        counters.push(Counter::Process(format!("p/{label}"), Box::new(pmc)));
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
        samplers.push(allocate_process_pmc(spec, Mode::TS, flags, args.reload)?.0);
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

    // Before the command starts: from its exec on, a Ctrl-C must not kill
    // pmcstat before it has reported. pmcstat.c on SIGINT: signal the
    // command it started (pmcstat_kill_process), then report once it exits.
    let interrupts = Arc::new(AtomicUsize::new(0));
    {
        let count = interrupts.clone();
        let _ = ctrlc::set_handler(move || {
            count.fetch_add(1, Ordering::SeqCst);
        });
    }
    let mut held = if args.command.is_empty() {
        None
    } else {
        Some(HeldCommand::spawn(&args.command).map_err(|e| cannot_run(&args.command[0], &e))?)
    };
    // A command is counted from its exec on (attach_at_exec): pmcstat's own
    // start-up of it is not the command's work.
    let attach = |p: &mut Pmc| match (&held, args.pid) {
        (Some(h), _) => p.attach_at_exec(h.pid()),
        (None, Some(pid)) => p.attach(pid),
        (None, None) => Ok(()),
    };
    for c in &mut counters {
        if let Counter::Process(_, p) = c {
            attach(p).map_err(|e| fail(TOOL, &e))?;
        }
    }
    for p in &mut samplers {
        if p.mode() == Mode::TS {
            attach(p).map_err(|e| fail(TOOL, &e))?;
        }
    }
    for c in &mut counters {
        c.start().map_err(|e| fail(TOOL, &e))?;
    }
    for p in &mut samplers {
        p.start().map_err(|e| fail(TOOL, &e))?;
    }
    if let Some(h) = &mut held {
        h.release().map_err(|e| cannot_run(&args.command[0], &e))?;
    }
    // Recording runs: the log takes its name now.
    if let (Some(pending), Some(path)) = (pending_log.take(), &args.log_out) {
        pending.persist(path)?;
    }

    let mut interrupts_seen = 0;

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
            &interrupts,
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
        let now_interrupted = interrupts.load(Ordering::SeqCst);
        if now_interrupted > interrupts_seen {
            interrupts_seen = now_interrupted;
            match &held {
                // The first Ctrl-C asks the command to stop, a second one
                // kills it; its exit ends the loop above.
                Some(h) => forward_interrupt(h, interrupts_seen)?,
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
    // With -l, the command keeps running; wait for it so its status passes
    // through (Ctrl-C still reaches it).
    if let Some(h) = &mut held
        && deadline.is_some()
    {
        loop {
            match h.try_wait() {
                Ok(Some(status)) => {
                    exit = ExitCode::from(gate::exit_code(status));
                    break;
                }
                Ok(None) => {}
                Err(_) => break,
            }
            let now_interrupted = interrupts.load(Ordering::SeqCst);
            if now_interrupted > interrupts_seen {
                interrupts_seen = now_interrupted;
                forward_interrupt(h, interrupts_seen)?;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }
    Ok(exit)
}

/// Sends the command SIGINT at the first interrupt, SIGKILL after.
fn forward_interrupt(held: &HeldCommand, interrupts: usize) -> Result<(), ExitCode> {
    let signal = if interrupts <= 1 {
        nix::sys::signal::Signal::SIGINT
    } else {
        nix::sys::signal::Signal::SIGKILL
    };
    match held.signal(signal) {
        Ok(()) => Ok(()),
        // It exited already: the loop reaps it.
        Err(e) if e.raw_os_error() == Some(nix::errno::Errno::ESRCH as i32) => Ok(()),
        Err(e) => {
            eprintln!("{TOOL}: cannot signal the command: {e}");
            Err(ExitCode::FAILURE)
        }
    }
}

/// The command cannot run: its error alone, with the shell's status (127
/// not found, 126 not executable).
fn cannot_run(program: &std::ffi::OsStr, e: &std::io::Error) -> ExitCode {
    let what = match e.kind() {
        std::io::ErrorKind::NotFound => "command not found".to_string(),
        std::io::ErrorKind::PermissionDenied => "permission denied".to_string(),
        _ => e.to_string(),
    };
    eprintln!("{TOOL}: cannot run {}: {what}", program.to_string_lossy());
    ExitCode::from(gate::exit_code_of_exec_error(e))
}

/// Counting or sampling a command or another process needs a backend that
/// reaches other processes; the portable one reads only pmcstat's own
/// getrusage, so pmcstat says so before it starts anything.
fn check_backend_counts_others() -> Result<(), ExitCode> {
    let choice = pmc::backend::active();
    if choice.name != "portable" {
        return Ok(());
    }
    eprintln!(
        "{TOOL}: -p and -P count a command or another process, but the backend in use, \
         portable ({}), counts only the process that calls it (pmcstat itself); \
         unset PMC_BACKEND or let perf_event be used (see `cargo xtask probe`)",
        choice.reason
    );
    Err(ExitCode::FAILURE)
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
                    eprintln!(
                        "{TOOL}: warning: counting {spec} in user mode only ({user_only}): {}",
                        why.replace('\n', " ")
                    );
                    Ok((pmc, user_only))
                }
                // Not a mode problem (or the spec named one): the first error.
                Err(_) => Err(fail(TOOL, &strict)),
            }
        }
        Err(e) => Err(fail(TOOL, &e)),
    }
}

/// An `-O` log being written under a temporary name beside its
/// destination; dropped before [`PendingLog::persist`], it is removed.
struct PendingLog(tempfile::NamedTempFile);

impl PendingLog {
    fn create(path: &std::path::Path) -> Result<PendingLog, ExitCode> {
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => std::path::Path::new("."),
        };
        let name = path
            .file_name()
            .map_or_else(|| "pmclog".into(), |n| n.to_string_lossy().into_owned());
        let temp = tempfile::Builder::new()
            .prefix(&format!(".{name}."))
            .suffix(".partial")
            .permissions(new_file_permissions())
            .tempfile_in(dir)
            .map_err(|e| {
                eprintln!("{TOOL}: cannot create {}: {e}", path.display());
                ExitCode::FAILURE
            })?;
        Ok(PendingLog(temp))
    }

    fn file(&self) -> std::io::Result<std::fs::File> {
        self.0.as_file().try_clone()
    }

    fn persist(self, path: &std::path::Path) -> Result<(), ExitCode> {
        self.0.persist(path).map(drop).map_err(|e| {
            eprintln!("{TOOL}: cannot write {}: {}", path.display(), e.error);
            ExitCode::FAILURE
        })
    }
}

/// The mode `File::create` would give a new file: 0666 less the umask
/// (a temporary file is 0600 otherwise).
fn new_file_permissions() -> std::fs::Permissions {
    use nix::sys::stat::{Mode, umask};
    use std::os::unix::fs::PermissionsExt;
    // umask can only be read by setting it; no other thread creates files
    // yet (the log's drainer starts with the first sampling attach).
    let mask = umask(Mode::from_bits_truncate(0o022));
    umask(mask);
    std::fs::Permissions::from_mode(0o666 & !mask.bits())
}
