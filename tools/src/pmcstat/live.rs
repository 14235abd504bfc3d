//! The steps of a live run, in the order `run` takes them: configure the
//! log, allocate the PMCs, start the command held, attach, open the
//! outputs, start; then wait for the end, stop, and finish the log and
//! the counts.

use std::io::{IsTerminal, Write};
use std::path::Path;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use pmc::{Flags, Mode, Pmc};

use crate::destination::HeldOutput;
use crate::gate::HeldCommand;
use crate::output::{Format, Printer};
use crate::sysexits::{EX_DATAERR, EX_OSERR};

use super::counting::{self, CountOutput, Counter, Form};
use super::options::{self, Args, EventSpec, wants_report};
use super::plan::Plan;
use super::reports::{Losses, print_logged_counts, read_events, write_reports};
use super::rolling::{LiveSeries, Tap};
use super::signals::Interrupts;
use super::{DEFAULT_WAIT_INTERVAL, TOOL, cannot_run, os_fail, write_failure};

/// Where the log of a run goes until it closes.
pub(super) struct Recording {
    /// The log without -O (printed, reported or shown by -T from memory).
    pub(super) memory_log: pmc::global::log::MemoryLog,
    /// The -O log, held in memory until every check has passed
    /// ([`open_outputs`]), so a failed run leaves an existing log alone.
    pub(super) held_log: Option<HeldOutput>,
}

impl Recording {
    /// Configures the log first: LOG_PROC* counters need it, and
    /// allocations are logged.
    /// With `tap` (--pprof-every), the log's bytes are copied there too,
    /// and held in memory only when something reads them at the end.
    pub(super) fn configure(
        args: &Args,
        plan: &Plan,
        tap: Option<&Tap>,
    ) -> Result<Recording, ExitCode> {
        let memory_log = pmc::global::log::MemoryLog::new();
        let held_log = args
            .log_out
            .as_ref()
            .filter(|_| plan.logging)
            // A device, FIFO or socket cannot be read back: what the
            // reports and -v's statistics read is copied as it goes.
            .map(|_| HeldOutput::new(wants_report(args) || args.verbose > 0));
        if plan.logging {
            let read_at_end = needs_records(args, plan);
            match (&held_log, tap) {
                (Some(held), None) => pmc::global::log::configure_logfile(held.clone()),
                (None, None) => pmc::global::log::configure_logfile(memory_log.clone()),
                (Some(held), Some(tap)) => {
                    pmc::global::log::configure_logfile(tap.tee(held.clone()))
                }
                (None, Some(tap)) if read_at_end => {
                    pmc::global::log::configure_logfile(tap.tee(memory_log.clone()))
                }
                (None, Some(tap)) => pmc::global::log::configure_logfile(tap.tee(std::io::sink())),
            }
            .map_err(|e| os_fail(&e))?;
        }
        flush_log_now(plan.logging);
        Ok(Recording {
            memory_log,
            held_log,
        })
    }
}

/// The PMCs of a run: counting ones (with their table columns) and
/// sampling ones.
pub(super) struct Pmcs {
    pub(super) counters: Vec<Counter>,
    pub(super) samplers: Vec<Pmc>,
}

/// Allocates every PMC first, in command-line order, each with the
/// toggles in force where it was given: a bad specifier fails before
/// anything runs (pmcstat.c: err(EX_OSERR, "ERROR: Cannot allocate
/// %s-mode pmc with specification \"%s\"", …)).
pub(super) fn allocate_all(args: &Args, specs: &[EventSpec]) -> Result<Pmcs, ExitCode> {
    let mut pmcs = Pmcs {
        counters: Vec::new(),
        samplers: Vec::new(),
    };
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
                pmcs.counters
                    .push(Counter::process(&spec, ev.cumulative, pmc));
            }
            Mode::SC if args.cgroups.is_empty() => {
                let per_cpu = Pmc::builder(&ev.spec)
                    .flags(flags)
                    .per_cpu()
                    .cpus(&ev.cpus)
                    .build()
                    .map_err(|e| os_fail(&e))?;
                pmcs.counters
                    .push(Counter::system(&ev.spec, ev.cumulative, per_cpu));
            }
            // --cgroup: the specifier once per cgroup, in their order.
            Mode::SC => {
                for cgroup in &args.cgroups {
                    let per_cpu = Pmc::builder(&ev.spec)
                        .flags(flags)
                        .per_cpu()
                        .cpus(&ev.cpus)
                        .cgroup(cgroup)
                        .build()
                        .map_err(|e| os_fail(&e))?;
                    pmcs.counters.push(Counter::system_in_cgroup(
                        &ev.spec,
                        &cgroup.display().to_string(),
                        ev.cumulative,
                        per_cpu,
                    ));
                }
            }
            Mode::TS | Mode::SS => {
                let first = pmcs.samplers.len();
                allocate_sampling(ev, flags, &mut pmcs.samplers)?;
                if args.verbose > 0
                    && let Some(pmc) = pmcs.samplers.get(first)
                {
                    say_period(ev, pmc);
                }
            }
        }
    }
    Ok(pmcs)
}

/// A sampling specifier's PMCs: one for a process, one per CPU of `-c`
/// system-wide.
fn allocate_sampling(
    ev: &EventSpec,
    mut flags: Flags,
    into: &mut Vec<Pmc>,
) -> Result<(), ExitCode> {
    if let Some(n) = ev.reload
        && n < pmc::MIN_RELOAD_COUNT
    {
        // As hwpmc, which logs "passed sample rate N - setting to 1000".
        eprintln!(
            "{TOOL}: warning: -n {n} raised to {}, hwpmc's minimum reload count",
            pmc::MIN_RELOAD_COUNT
        );
    }
    if ev.callchain {
        flags |= Flags::CALLCHAIN;
        if ev.user_callchain {
            flags |= Flags::USERCALLCHAIN;
        }
    }
    let count = ev.reload.unwrap_or(options::DEFAULT_SAMPLE_COUNT);
    let first = into.len();
    if ev.mode == Mode::TS {
        into.push(allocate_process_pmc(&ev.spec, Mode::TS, flags, count)?.0);
    } else {
        for &cpu in &ev.cpus {
            into.push(
                Pmc::allocate_with_count(&ev.spec, Mode::SS, flags, pmc::Cpu::Id(cpu), count)
                    .map_err(|e| os_fail(&e))?,
            );
        }
    }
    if ev.reload.is_none() {
        for pmc in &mut into[first..] {
            set_default_reload(pmc)?;
        }
    }
    Ok(())
}

/// Gives a PMC allocated without -n its event's default reload count
/// ([`options::default_reload`]), as pmcstat.c's `pmc_set` after
/// `pmc_allocate` does; a `period=` or `freq=` of the specifier stays.
fn set_default_reload(pmc: &mut Pmc) -> Result<(), ExitCode> {
    let q = &pmc.spec().qualifiers;
    if q.period.is_some() || q.freq.is_some() {
        return Ok(());
    }
    let count = options::default_reload(pmc.counts_nanoseconds());
    if pmc.reload_count() != count {
        pmc.set(count).map_err(|e| os_fail(&e))?;
    }
    Ok(())
}

/// `-v`: the period a sampling specifier got and where it came from.
fn say_period(ev: &EventSpec, pmc: &Pmc) {
    let option = if ev.mode == Mode::TS { "-P" } else { "-S" };
    let unit = if pmc.counts_nanoseconds() {
        "ns"
    } else {
        "events"
    };
    let q = &pmc.spec().qualifiers;
    let whence = match (ev.reload, q.period, q.freq) {
        (_, _, Some(hz)) => format!("freq={hz} samples at that rate instead"),
        (_, Some(_), _) => "given by period=".into(),
        (Some(_), ..) => "given by -n".into(),
        (None, ..) if pmc.counts_nanoseconds() => {
            "the default for an event counting time; -n sets it".into()
        }
        (None, ..) => "the default for a counted event; -n sets it".into(),
    };
    let _ = writeln!(
        std::io::stderr(),
        "{TOOL}: {option} {}: a sample every {} {unit} ({whence})",
        ev.spec,
        pmc.reload_count()
    );
}

/// What reports name as each sampling PMC's period (pprof's event
/// totals): its reload count, by pmcid.
pub(super) fn sampling_periods(samplers: &[Pmc]) -> std::collections::HashMap<u32, u64> {
    samplers
        .iter()
        .map(|p| (p.id().0, p.reload_count()))
        .collect()
}

/// Catches the ending signals, then starts the command held before its
/// exec (`gate.rs`), if there is one.
///
/// Before the command starts: from its exec on, a Ctrl-C, SIGTERM,
/// SIGHUP or SIGQUIT must not kill pmcstat before it has reported
/// (signals.rs). pmcstat.c on SIGINT: signal the command it started
/// (pmcstat_kill_process), then report once it exits. A signal ignored
/// at start (a background job of a shell without job control, nohup)
/// is passed on ignored, as from any parent: the command is started
/// after the handlers, which its exec resets to the default, and
/// ignored signals are not caught then. Nothing can interrupt pmcstat
/// meanwhile: SIGINT is still ignored then.
pub(super) fn catch_signals_and_spawn(
    args: &Args,
) -> Result<(Interrupts, Option<HeldCommand>), ExitCode> {
    let interrupts = Interrupts::catch()?;
    // Any of them ends a wait for the reader of an output FIFO.
    crate::destination::give_up_waiting_when(interrupts.arrived());
    let held = if args.command.is_empty() {
        None
    } else {
        Some(HeldCommand::spawn(&args.command).map_err(|e| cannot_run(&args.command[0], &e)))
    };
    interrupts.catch_sigint_if_ignored()?;
    Ok((interrupts, held.transpose()?))
}

/// Attaches the process PMCs: to the held command from its exec on
/// (attach_at_exec: pmcstat's own start-up of it is not the command's
/// work), or to the targets of -t. Targets that exited meanwhile are
/// skipped (ESRCH), none attached is EX_DATAERR, as pmcstat_attach_pmcs.
pub(super) fn attach_all(
    pmcs: &mut Pmcs,
    held: Option<&HeldCommand>,
    targets: &[u32],
    plan: &Plan,
) -> Result<(), ExitCode> {
    let mut attached = 0;
    let mut attach = |p: &mut Pmc| -> Result<(), ExitCode> {
        if let Some(h) = held {
            return p.attach_at_exec(h.pid()).map_err(|e| os_fail(&e));
        }
        for &pid in targets {
            match p.attach(pid) {
                Ok(()) => attached += 1,
                Err(e) if e.errno() == nix::errno::Errno::ESRCH as i32 => {}
                Err(e) => return Err(os_fail(&e)),
            }
        }
        Ok(())
    };
    for c in &mut pmcs.counters {
        c.with_process_pmc(&mut attach).transpose()?;
    }
    for p in &mut pmcs.samplers {
        if p.mode() == Mode::TS {
            attach(p)?;
        }
    }
    if plan.targeted && plan.process_pmcs && attached == 0 {
        eprintln!("{TOOL}: no processes were attached to: the targets of -t exited");
        return Err(ExitCode::from(EX_DATAERR));
    }
    Ok(())
}

/// Opens the outputs of a live run once nothing the user asked for can
/// fail any more (the specifiers, CPUs, command and targets are checked):
/// the `-O` log gets what was held in memory since its configuration, and
/// the `-o` sink (standard error without one) is returned. Both are
/// opened in place (`destination.rs`); a FIFO's open waits for its
/// reader, before the PMCs start and the command runs, as pmcstat.c opens
/// its files before it starts anything.
pub(super) fn open_outputs(
    args: &Args,
    held_log: Option<&HeldOutput>,
) -> Result<Box<dyn Write>, ExitCode> {
    if let (Some(held), Some(path)) = (held_log, &args.log_out) {
        // The records so far (INITIALIZE, the allocations) reach the file
        // at once.
        pmc::global::log::flush_logfile().map_err(|e| os_fail(&e))?;
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
fn cannot_open(flag: &str, path: &Path, e: &std::io::Error) -> ExitCode {
    eprintln!(
        "{TOOL}: ERROR: Cannot open \"{}\" for writing ({flag}): {e}.",
        path.display()
    );
    if e.kind() == std::io::ErrorKind::Interrupted {
        return ExitCode::from(128 + nix::sys::signal::Signal::SIGINT as u8);
    }
    ExitCode::from(EX_OSERR)
}

/// Starts every PMC, writes out the log's records so far, and lets the
/// held command exec.
pub(super) fn start_all(
    pmcs: &mut Pmcs,
    held: Option<&mut HeldCommand>,
    args: &Args,
    plan: &Plan,
) -> Result<(), ExitCode> {
    for c in &mut pmcs.counters {
        c.start().map_err(|e| os_fail(&e))?;
    }
    for p in &mut pmcs.samplers {
        p.start().map_err(|e| os_fail(&e))?;
    }
    flush_log_now(plan.logging);
    if let Some(h) = held {
        h.release().map_err(|e| cannot_run(&args.command[0], &e))?;
    }
    Ok(())
}

/// How the counts are printed: pmcstat's table, or JSON or CSV lines, to
/// `sink`.
pub(super) fn count_output(
    args: &Args,
    counters: &mut [Counter],
    sink: Box<dyn Write>,
) -> CountOutput {
    let form = if args.json {
        Form::Lines(Printer::new(Format::Json))
    } else if args.csv {
        Form::Lines(Printer::new(Format::Csv))
    } else {
        Form::Table(counting::table(counters))
    };
    CountOutput {
        terminal: args.output.is_none() && std::io::stderr().is_terminal(),
        to_file: args.output.is_some(),
        sink,
        form,
    }
}

/// Writes out what the log holds now, `logging`: its INITIALIZE once it
/// is configured, then the PMCs' allocations and initial MAP_INs once they
/// run, so that a recording killed before its first 64 KiB (`kill -9`)
/// still leaves a log whose beginning reads. A write error stays with the
/// log and is said where it closes.
fn flush_log_now(logging: bool) {
    if logging {
        let _ = pmc::global::log::flush_logfile();
    }
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

/// A live run once its PMCs run: what waiting, stopping and reporting
/// share.
pub(super) struct Live<'a> {
    pub(super) args: &'a Args,
    pub(super) pmcs: Pmcs,
    pub(super) held: Option<HeldCommand>,
    pub(super) out: CountOutput,
    pub(super) interrupts: Interrupts,
    pub(super) start: Instant,
    /// Progress on a terminal only: piped output stays clean.
    pub(super) progress: bool,
    /// --pprof-every's profiles, written as the log is.
    pub(super) series: Option<LiveSeries>,
    /// A profile of --pprof-every could not be written (exit 74 at the end).
    pub(super) series_failed: bool,
}

impl<'a> Live<'a> {
    /// What [`write_failure`] needs to end the run at a write error.
    fn failing(&mut self) -> write_failure::Run<'_> {
        write_failure::Run {
            counters: &mut self.pmcs.counters,
            samplers: &mut self.pmcs.samplers,
            held: self.held.as_mut(),
            out: &mut self.out,
            start: self.start,
            log_out: self.args.log_out.as_deref(),
            interrupts: &self.interrupts,
        }
    }

    /// Waits until the command exits, the targets of -t are gone, an
    /// ending signal without a command, or -l's time; prints the count
    /// lines as they fall due and progress on a terminal.
    pub(super) fn wait_for_the_end(&mut self, targets: &[u32]) -> Result<(), ExitCode> {
        let deadline = self
            .args
            .duration
            .map(|s| self.start + Duration::from_secs_f64(s));
        // The table is printed at each timer tick, every -w SECS or
        // DEFAULT_WAIT_INTERVAL (pmcstat.c's EVFILT_TIMER of pa_interval);
        // our JSON and CSV lines only with -w.
        let interval = match self.args.interval {
            Some(secs) => Some(Duration::from_secs_f64(secs)),
            None if matches!(self.out.form, Form::Table(_)) => {
                Some(Duration::from_secs_f64(DEFAULT_WAIT_INTERVAL))
            }
            None => None,
        };
        let mut next_tick = interval.map(|i| self.start + i);
        let mut interrupts_seen = 0;
        let mut last_progress = Instant::now();
        loop {
            if self.command_exited()? {
                break;
            }
            // -t: hwpmc signals SIGIO once a PMC has lost all its targets.
            if !targets.is_empty() && !targets.iter().any(|&pid| pmc::process_exists(pid)) {
                break;
            }
            if self.interrupted_without_command(&mut interrupts_seen)? {
                break;
            }
            if deadline.is_some_and(|d| Instant::now() >= d) {
                break;
            }
            if let Some(tick) = next_tick
                && Instant::now() >= tick
                && !self.pmcs.counters.is_empty()
            {
                self.print_interval()?;
                next_tick = interval.map(|i| tick + i);
            }
            self.end_at_log_write_error()?;
            if self.progress && last_progress.elapsed() >= Duration::from_secs(1) {
                last_progress = Instant::now();
                self.show_progress();
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        Ok(())
    }

    /// Whether the command pmcstat started has exited (reaped).
    fn command_exited(&mut self) -> Result<bool, ExitCode> {
        let Some(h) = &mut self.held else {
            return Ok(false);
        };
        let status = h.try_wait().map_err(|e| {
            eprintln!("{TOOL}: waiting for the command: {e}");
            ExitCode::from(EX_OSERR)
        })?;
        Ok(status.is_some())
    }

    /// Passes a new ending signal on to the command: the first asks it to
    /// stop, a second kills it, and its exit ends the wait. Without a
    /// command the signal ends the wait itself (`true`).
    fn interrupted_without_command(&mut self, seen: &mut usize) -> Result<bool, ExitCode> {
        let now = self.interrupts.count();
        if now <= *seen {
            return Ok(false);
        }
        *seen = now;
        match &self.held {
            Some(h) => forward_interrupt(h, now, self.interrupts.last()).map(|()| false),
            None => Ok(true),
        }
    }

    /// One interval's count line; a write error of -o ends the run.
    fn print_interval(&mut self) -> Result<(), ExitCode> {
        let start = self.start;
        if let Err(code) = self.out.interval(&mut self.pmcs.counters, start, false) {
            return Err(write_failure::counts_failed(code, self.failing()));
        }
        Ok(())
    }

    /// -O's write error ends the run at once, as -o's does (hwpmc's log
    /// thread signals its owner SIGIO at its first write error).
    fn end_at_log_write_error(&mut self) -> Result<(), ExitCode> {
        if let Some(path) = self.args.log_out.as_deref()
            && let Some(e) = pmc::global::log::write_error()
        {
            return Err(write_failure::stop(
                write_failure::Failed::Log(path, e),
                self.failing(),
            ));
        }
        Ok(())
    }

    fn show_progress(&self) {
        let (samples, lost) = pmc::global::log::stats();
        // A hung-up terminal (EIO) must not panic: SIGHUP still closes
        // the log.
        let _ = write!(
            std::io::stderr(),
            "\r{TOOL}: {:.0} s elapsed, {samples} samples, {lost} lost",
            self.start.elapsed().as_secs_f64()
        );
    }

    /// Stops every PMC and releases the sampling ones (their last samples
    /// reach the log).
    pub(super) fn stop_pmcs(&mut self) -> Result<(), ExitCode> {
        for c in &mut self.pmcs.counters {
            c.stop().map_err(|e| os_fail(&e))?;
        }
        for p in &mut self.pmcs.samplers {
            p.stop().map_err(|e| os_fail(&e))?;
        }
        self.pmcs.samplers.clear();
        Ok(())
    }

    /// Closes the log, warns of the samples lost, and prints what it
    /// holds or writes the reports asked for; without -O, the counts of
    /// -E and -W as text (pmcstat(8)).
    pub(super) fn finish_recording(
        &mut self,
        plan: &Plan,
        recording: &Recording,
        seen_by_top: Losses,
        periods: std::collections::HashMap<u32, u64>,
    ) -> Result<(), ExitCode> {
        if self.progress {
            let _ = writeln!(std::io::stderr());
        }
        if let Err(e) = pmc::global::log::close_logfile() {
            return Err(match (self.args.log_out.as_deref(), e) {
                // The last records met the write error: as while waiting.
                (Some(path), e @ pmc::Error::Log { .. }) => {
                    write_failure::stop(write_failure::Failed::Log(path, e), self.failing())
                }
                (_, e) => os_fail(&e),
            });
        }
        if let Some(series) = self.series.take() {
            self.series_failed = series.finish();
        }
        let wants_records = needs_records(self.args, plan);
        let (events, mut losses) = if wants_records {
            recorded_events(self.args, recording)?
        } else {
            // Only the losses: as the log's writer counted them, without
            // reading back a log that may be hundreds of MB (its records
            // held at once made the stop of a 60 s -S recording peak at
            // 181 MB against 6-9 MB while recording).
            let (samples, lost) = pmc::global::log::stats();
            (Vec::new(), Losses::counted(samples, lost))
        };
        // Said at the end of recording, as FreeBSD warns that sampling was
        // paused and perf that chunks were lost.
        losses.merge(seen_by_top);
        losses.warn(pmc::global::log::smallest_ring_kib());
        if plan.print_log {
            // The log printed as -R prints it, to -o or standard error
            // (pmcstat.c's pa_printfile).
            let mut text = String::new();
            for e in &events {
                text.push_str(&e.record.to_string());
                text.push('\n');
            }
            crate::output::write_out(TOOL, &mut self.out.sink, text.as_bytes(), "the log")?;
        } else if plan.sampling && wants_records {
            write_reports(
                self.args,
                &events,
                Default::default(),
                Some(&mut *self.out.sink),
                periods,
            )?;
        }
        if plan.logging_counts && self.args.log_out.is_none() {
            print_logged_counts(self.args, &events, &mut self.out.sink)?;
        }
        Ok(())
    }

    /// The last line (pmcstat.c prints the PMCs when the target exits):
    /// the rest of the interval, then the table's final newline; JSON and
    /// CSV give the totals without -w.
    pub(super) fn print_final_counts(&mut self) -> Result<(), ExitCode> {
        if self.pmcs.counters.is_empty() {
            return Ok(());
        }
        let start = self.start;
        let totals = self.args.interval.is_none();
        self.out.interval(&mut self.pmcs.counters, start, totals)?;
        self.out.finish()
    }
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

/// Whether the end of a recording reads its records back: to print the
/// log, write reports, -v's statistics, check -i's thread, or print -E
/// and -W's counts without -O; with -T, whose losses so far add to those
/// of the records it left.
fn needs_records(args: &Args, plan: &Plan) -> bool {
    plan.print_log
        || args.top
        || wants_report(args)
        || args.verbose > 0
        || args.thread.is_some()
        || (plan.logging_counts && args.log_out.is_none())
}

/// The records of the finished recording, for its reports and the
/// losses warning: the `-O` file read back, or the copy kept of a
/// destination that cannot be read back (a device, FIFO or socket; the
/// losses then as the log's statistics counted them), or the memory log.
fn recorded_events(
    args: &Args,
    recording: &Recording,
) -> Result<(Vec<pmc::log::LogEvent>, Losses), ExitCode> {
    let events = match (&recording.held_log, &args.log_out) {
        (Some(held), Some(path)) if held.is_regular_file() => read_events(path)?.0,
        (Some(held), Some(_)) => {
            let Some(bytes) = held.copy() else {
                let (samples, lost) = pmc::global::log::stats();
                return Ok((Vec::new(), Losses::counted(samples, lost)));
            };
            let mut reader = pmc::log::LogReader::from_memory();
            reader.feed(&bytes);
            reader.collect::<Result<Vec<_>, _>>().map_err(|e| {
                eprintln!("{TOOL}: {e}");
                ExitCode::from(crate::sysexits::EX_SOFTWARE)
            })?
        }
        _ => recording.memory_log.events().map_err(|e| {
            eprintln!("{TOOL}: {e}");
            ExitCode::from(crate::sysexits::EX_SOFTWARE)
        })?,
    };
    let losses = Losses::of(&events);
    Ok((events, losses))
}
