//! `pmcstat`: count events of a command, a running process or the whole
//! system, with FreeBSD pmcstat(8)'s options.
//!
//! The binary (`src/bin/pmcstat.rs`) calls [`main`]. `options.rs` holds the
//! arguments and the checks that need no machine; `plan.rs` the checks of
//! what a live run measures; `targets.rs` the processes `-t` names;
//! `live.rs` the steps of a live run; `counting.rs` the counting PMCs and
//! their interval lines; `exporter.rs` `--listen`; `reports.rs` `-R`, `-L`/`-u` and the reports
//! written from a log; `watch.rs` the `-T` loop. This file is the live
//! mode in one screen: check, allocate, attach, start, wait, stop, report.

mod convert;
mod counting;
mod distinct;
mod exporter;
mod live;
mod options;
mod plan;
mod reports;
mod rolling;
mod signals;
mod targets;
mod watch;
mod write_failure;

use std::io::IsTerminal;
use std::process::ExitCode;
use std::time::Instant;

use crate::fail_as;
use crate::sysexits::{EX_OSERR, EX_UNAVAILABLE};

use live::{Live, Recording};
pub(crate) use options::Args;
use options::{EventSpec, check_options, wants_report};
use plan::Plan;
use reports::{Losses, list_or_describe, read_log};
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
    crate::gate::run_trampoline_if_requested();
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

/// One run of pmcstat: a listing, a `-R` log read, or a live run. The
/// live run fails, if it must, before the log is touched (the modes, the
/// targets, the command, the backend, then the specifiers); every run that
/// measured ends with `EX_OK`, as pmcstat.c's, and a command still
/// running after -l keeps running.
fn run(args: Args, specs: &[EventSpec]) -> Result<ExitCode, ExitCode> {
    if args.list_events || args.describe.is_some() {
        return list_or_describe(&args);
    }
    let top_options = check_options(&args)?;
    distinct::check_outputs_distinct(&args)?;
    if let Some(log) = &args.read_log {
        return read_log(&args, log);
    }
    let plan = Plan::check(&args)?;
    let targets = plan::find_all_targets(&args, &plan)?;
    plan::check_command_and_backend(&args, &plan)?;
    let listener = args.listen.map(exporter::bind).transpose()?;
    let every = rolling::Every::of(&args)?;

    let tap = every.as_ref().map(|_| rolling::Tap::default());
    let recording = Recording::configure(&args, &plan, tap.as_ref())?;
    let series = match (every, tap) {
        (Some(every), Some(tap)) => Some(rolling::LiveSeries::start(
            &args,
            every,
            tap,
            args.log_out.as_deref(),
        )?),
        _ => None,
    };
    let mut pmcs = live::allocate_all(&args, specs)?;
    let (interrupts, mut held) = live::catch_signals_and_spawn(&args)?;
    live::attach_all(&mut pmcs, held.as_ref(), &targets, &plan)?;
    let sink = live::open_outputs(&args, recording.held_log.as_ref())?;
    live::start_all(&mut pmcs, held.as_mut(), &args, &plan)?;

    let out = live::count_output(&args, &mut pmcs.counters, sink);
    let exporter = match listener {
        Some(l) => {
            let sources = exporter::sources(&pmcs.counters, held.as_ref(), &args, &targets);
            Some(exporter::Exporter::serve(l, sources)?)
        }
        None => None,
    };
    let mut live = Live {
        args: &args,
        pmcs,
        held,
        out,
        interrupts,
        start: Instant::now(),
        progress: plan.sampling && !args.quiet && !args.top && std::io::stderr().is_terminal(),
        series,
        series_failed: false,
    };
    let mut seen_by_top = Losses::default();
    match top_options {
        // -T runs its own loop until the end. What it took out of the
        // memory log as it showed it is counted in its losses (nothing
        // else reads the log after it then, unless it is kept).
        Some((threshold, skiplink)) => {
            let keep_log = wants_report(&args) || plan.logging_counts;
            seen_by_top = watch(
                &args,
                threshold,
                skiplink,
                &recording.memory_log,
                keep_log,
                &mut live.held,
                &live.interrupts,
                &targets,
            )?;
        }
        None => live.wait_for_the_end(&targets)?,
    }
    // --listen serves as long as the run counts.
    drop(exporter);
    let periods = live::sampling_periods(&live.pmcs.samplers);
    live.stop_pmcs()?;
    if plan.logging {
        live.finish_recording(&plan, &recording, seen_by_top, periods)?;
    }
    live.print_final_counts()?;
    if live.series_failed {
        return Ok(ExitCode::from(crate::sysexits::EX_IOERR));
    }
    Ok(ExitCode::SUCCESS)
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
