//! A failed write of a live run's output — `-o`'s counts or `-O`'s log (a
//! full disk, an I/O error) — ends the run the same way for both: the
//! error said at once with its errno, the PMCs stopped, the log closed as
//! far as it can be (what was written stays readable: `pmcstat -R` reads a
//! log cut short, with a warning), the command pmcstat started ended with
//! SIGTERM and waited for, exit `EX_IOERR`.
//!
//! Why the command is ended: it runs under pmcstat to be measured, and
//! nothing of the rest of its run could be recorded. `perf record` ends its
//! workload the same way at a write error (SIGTERM, then it waits for it).
//! Leaving it running would either orphan it behind the shell's back
//! (pmcstat returns, the command keeps writing to the terminal, a script's
//! next step runs beside it) or keep pmcstat waiting for an unmeasured run
//! of any length. FreeBSD's pmcstat.c, at hwpmc's SIGIO for a log write
//! error, closes the log and exits without signalling its command, which
//! then runs on orphaned: the case this avoids. Processes of `-t` were not
//! started by pmcstat and are left alone.

use std::path::Path;
use std::process::{ExitCode, ExitStatus};
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;
use pmc::Pmc;

use crate::gate::HeldCommand;
use crate::sysexits::EX_IOERR;

use super::TOOL;
use super::counting::{CountOutput, Counter};
use super::signals::Interrupts;

/// Which output failed.
pub(super) enum Failed<'a> {
    /// The counts (`-o` FILE, or standard error); its error was said by
    /// `output::io_failure`.
    Counts,
    /// The `-O` log, with the log's write error.
    Log(&'a Path, pmc::Error),
}

/// What a live run has going when an output fails.
pub(super) struct Run<'a> {
    pub(super) counters: &'a mut [Counter],
    pub(super) samplers: &'a mut [Pmc],
    pub(super) held: Option<&'a mut HeldCommand>,
    pub(super) out: &'a mut CountOutput,
    pub(super) start: Instant,
    pub(super) log_out: Option<&'a Path>,
    /// The ending signals: one while the command is waited for kills it.
    pub(super) interrupts: &'a Interrupts,
}

/// `-o`'s status `code` from a failed count line: a write failure
/// (`EX_IOERR`) ends the run as [`stop`] does; any other failure (a PMC
/// that cannot be read, a closed pipe) is returned as it is.
pub(super) fn counts_failed(code: ExitCode, run: Run<'_>) -> ExitCode {
    if code != ExitCode::from(EX_IOERR) {
        return code;
    }
    stop(Failed::Counts, run)
}

/// Ends the run after `failed`: stops the PMCs, closes the log, ends the
/// command pmcstat started, says what is left and where, returns
/// `EX_IOERR`.
pub(super) fn stop(failed: Failed<'_>, run: Run<'_>) -> ExitCode {
    if let Failed::Log(path, e) = &failed {
        eprintln!("{TOOL}: {}: {e}", path.display());
    }
    for c in run.counters.iter_mut() {
        let _ = c.stop();
    }
    for p in run.samplers.iter_mut() {
        let _ = p.stop();
    }
    // The log: CLOSELOG when it can still be written (the counts failed);
    // after its own failure, what reached the file is all there is.
    let closed = pmc::global::log::close_logfile();
    let mut said = match &failed {
        Failed::Counts => "recording stopped: the counts cannot be written".to_string(),
        Failed::Log(..) => "recording stopped: the log cannot be written".to_string(),
    };
    match (&failed, run.log_out, closed) {
        (Failed::Log(..), Some(log), _) => said.push_str(&format!(
            "; {} keeps the records written before the failure (pmcstat -R reads them)",
            log.display()
        )),
        (Failed::Counts, Some(log), Ok(())) => {
            said.push_str(&format!("; {} is closed whole", log.display()));
        }
        (Failed::Counts, Some(log), Err(e)) => {
            said.push_str(&format!("; closing {} failed too: {e}", log.display()));
        }
        (_, None, _) => {}
    }
    let ending = match run.held {
        Some(held) => match held.try_wait() {
            Ok(None) => {
                said.push_str(&format!(
                    "; ending the command (pid {}) with SIGTERM, as perf record does, \
                     and waiting for it (Ctrl-C kills it)",
                    held.pid()
                ));
                Some(held)
            }
            _ => {
                said.push_str("; the command has exited");
                None
            }
        },
        None => None,
    };
    eprintln!("{TOOL}: {said}");
    if let Some(held) = ending {
        let pid = held.pid();
        match end_command(held, run.interrupts) {
            Ok(status) => eprintln!("{TOOL}: the command (pid {pid}) ended: {status}"),
            Err(e) => eprintln!("{TOOL}: ending the command (pid {pid}) failed: {e}"),
        }
    }
    // pmcstat.c prints the counts at SIGIO: still possible when only the
    // log failed.
    if matches!(failed, Failed::Log(..)) && !run.counters.is_empty() {
        let _ = run.out.interval(run.counters, run.start, true);
        let _ = run.out.finish();
    }
    ExitCode::from(EX_IOERR)
}

/// Sends the command SIGTERM and reaps it; a Ctrl-C meanwhile (a command
/// that ignores SIGTERM) or another ending signal sends SIGKILL.
fn end_command(held: &mut HeldCommand, interrupts: &Interrupts) -> std::io::Result<ExitStatus> {
    let ignore_gone = |r: std::io::Result<()>| match r {
        // It exited meanwhile: try_wait reaps it.
        Err(e) if e.raw_os_error() == Some(nix::errno::Errno::ESRCH as i32) => Ok(()),
        r => r,
    };
    ignore_gone(held.signal(Signal::SIGTERM))?;
    let mut seen = interrupts.count();
    loop {
        if let Some(status) = held.try_wait()? {
            return Ok(status);
        }
        let now = interrupts.count();
        if now > seen {
            seen = now;
            ignore_gone(held.signal(Signal::SIGKILL))?;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}
