//! What a live run will do, checked before anything is touched: the
//! modes its specifiers ask for and the usage errors of their
//! combinations, the `-t` targets, the command and the backend.

use std::process::ExitCode;

use crate::gate;
use crate::sysexits::{EX_DATAERR, EX_UNAVAILABLE};
use crate::usage;

use super::options::{Args, wants_report};
use super::targets::find_targets;
use super::{TOOL, cannot_run};

/// The shape of a live run, from its options.
pub(super) struct Plan {
    /// -P or -S: sampling PMCs, whose samples are logged.
    pub(super) sampling: bool,
    /// -E or -W: per-process and per-thread counts are logged.
    pub(super) logging_counts: bool,
    /// A log is kept (sampling or logged counts).
    pub(super) logging: bool,
    /// The log is printed as text at the end (sampling without -O, a
    /// report or -T), as pmcstat.c prints it through its pipe
    /// (FLAG_HAS_PIPE, FLAG_DO_PRINT).
    pub(super) print_log: bool,
    /// -t: process PMCs attach to running processes, not a command.
    pub(super) targeted: bool,
    /// -p or -P: PMCs of a command or of other processes.
    pub(super) process_pmcs: bool,
}

impl Plan {
    /// The plan of `args`, or the usage error of a combination that
    /// cannot run (pmcstat.c's checks after its getopt loop).
    pub(super) fn check(args: &Args) -> Result<Plan, ExitCode> {
        let sampling = !args.process_sampling.is_empty() || !args.system_sampling.is_empty();
        let counting = !args.process.is_empty() || !args.system.is_empty();
        // -E and -W log per-process and per-thread counts (pmcstat.c: they
        // need a process counting PMC and a log).
        let logging_counts = args.log_exit || args.log_csw;
        if logging_counts && args.process.is_empty() {
            return Err(usage(
                TOOL,
                "-E and -W log the counts of process counting PMCs: give -p SPEC and a command or -t PID",
            ));
        }
        if args.top && !sampling {
            return Err(usage(TOOL, "-T shows sampling PMCs: give -P or -S SPEC"));
        }
        if !counting && !sampling {
            return Err(usage(
                TOOL,
                "no events: give -p/-s SPEC to count or -P/-S SPEC to sample (see --help)",
            ));
        }
        if args.pprof_every.is_some() && !sampling {
            return Err(usage(
                TOOL,
                "--pprof-every writes profiles of samples: give -P or -S SPEC, or -R LOG",
            ));
        }
        let reported =
            args.log_out.is_some() || wants_report(args) || args.top || args.pprof_every.is_some();
        // pmcstat.c: "option -O is required if counting and sampling PMCs
        // are specified together" (the printed log and the table would mix).
        if counting && sampling && !reported {
            return Err(usage(
                TOOL,
                "-O FILE is required when counting and sampling PMCs are given together",
            ));
        }
        let targeted = !args.targets.is_empty();
        check_what_is_measured(args, targeted)?;
        Ok(Plan {
            sampling,
            logging_counts,
            logging: sampling || logging_counts,
            print_log: sampling && !reported,
            targeted,
            process_pmcs: !args.process.is_empty() || !args.process_sampling.is_empty(),
        })
    }
}

/// Process PMCs need a command or `-t`, and not both.
fn check_what_is_measured(args: &Args, targeted: bool) -> Result<(), ExitCode> {
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
    Ok(())
}

/// `-t`: every process id that exists and every process whose name
/// matches, as pmcstat_find_targets; none is EX_DATAERR ("No matching
/// target processes.").
pub(super) fn find_all_targets(args: &Args, plan: &Plan) -> Result<Vec<u32>, ExitCode> {
    let mut targets = Vec::new();
    for spec in &args.targets {
        targets.extend(find_targets(spec)?);
    }
    if plan.targeted && targets.is_empty() {
        eprintln!(
            "{TOOL}: no process matches -t {}: give the id of a running process or a pattern over process names",
            args.targets.join(" -t ")
        );
        return Err(ExitCode::from(EX_DATAERR));
    }
    Ok(targets)
}

/// The command can be run, and the backend reaches the processes of
/// process PMCs.
pub(super) fn check_command_and_backend(args: &Args, plan: &Plan) -> Result<(), ExitCode> {
    if let Some(program) = args.command.first()
        && let Err(e) = gate::resolve_program(program)
    {
        return Err(cannot_run(program, &e));
    }
    if plan.process_pmcs {
        check_backend_counts_others()?;
    }
    Ok(())
}

/// Counting or sampling a command or another process needs a backend that
/// reaches other processes; the portable one reads only pmcstat's own
/// getrusage, so pmcstat says so before it starts anything.
fn check_backend_counts_others() -> Result<(), ExitCode> {
    let choice = pmc::global::active();
    if choice.name != "portable" {
        return Ok(());
    }
    eprintln!(
        "{TOOL}: -p and -P count a command or another process, but the backend in use, \
         portable ({}), counts only the process that calls it (pmcstat itself); \
         unset PMC_BACKEND, or make perf_event usable (`pmccontrol --limits` shows its \
         limits, perf_event_paranoid among them)",
        choice.reason
    );
    Err(ExitCode::from(EX_UNAVAILABLE))
}
