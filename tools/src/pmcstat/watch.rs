//! `-T`: the live top view of the sampling PMCs.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use crate::annotate;
use crate::gate::HeldCommand;
use crate::top;

use super::TOOL;
use super::options::{Args, fs_root};
use super::reports::Losses;
use super::signals::Interrupts;

/// `-T`: the live view until `q`, Ctrl-C (SIGINT, SIGTERM, SIGHUP,
/// SIGQUIT) or the target's exit. A command still running at `q` is
/// interrupted (SIGINT, as pmcstat does), at a signal it gets that signal,
/// and it is waited for. Unless `keep`, the view takes the records out of
/// `memory_log` as it reads them (a session of hours would otherwise hold
/// all of them), and returns the losses it saw for the final warning.
#[allow(clippy::too_many_arguments)]
pub(super) fn watch(
    args: &Args,
    threshold: f64,
    skiplink: bool,
    memory_log: &pmc::global::log::MemoryLog,
    keep: bool,
    held: &mut Option<HeldCommand>,
    interrupts: &Interrupts,
    targets: &[u32],
) -> Result<Losses, ExitCode> {
    let mut view = top::TopView::new(threshold, skiplink, args.show_address);
    // Processes whose exit the log missed are let go too.
    view.check_liveness(pmc::process_exists);
    let interval = Duration::from_secs_f64(args.interval.unwrap_or(super::DEFAULT_WAIT_INTERVAL));
    let mut exited = false;
    let root = fs_root(args)?;
    let mut losses = Losses::default();
    // What was logged since the last pull: taken out of the memory log
    // unless a report reads it after the view.
    let mut fed = 0;
    let source = |refresh: bool| -> Result<Vec<u8>, String> {
        if refresh {
            pmc::global::log::flush_logfile().map_err(|e| e.to_string())?;
        }
        if !keep {
            return Ok(memory_log.take_bytes());
        }
        // A kept log is copied whole to read its end: once a refresh.
        if !refresh {
            return Ok(Vec::new());
        }
        let bytes = memory_log.bytes();
        let new = bytes.get(fed..).unwrap_or(&[]).to_vec();
        fed = bytes.len();
        Ok(new)
    };
    // -r, -i and -z apply to the view as to reports.
    let prepare = |records: &[pmc::log::LogEvent]| {
        annotate::prepare(
            records,
            root.as_deref(),
            args.thread,
            args.depth.map(|d| d as usize),
        )
    };
    let seen = |record: &pmc::log::LogRecord| {
        if !keep {
            losses.add(record);
        }
    };
    let mut feed = top::feed::LogFeed::new(source, prepare, seen);
    let ended = top::run(&mut view, interval, &mut feed, || {
        if interrupts.count() > 0 {
            return true;
        }
        if let Some(h) = held.as_mut() {
            match h.try_wait() {
                Ok(Some(_)) => {
                    exited = true;
                    return true;
                }
                Ok(None) => return false,
                Err(_) => return true,
            }
        }
        !targets.is_empty() && !targets.iter().any(|&pid| pmc::process_exists(pid))
    })
    .map_err(|e| {
        eprintln!("{TOOL}: {e}");
        ExitCode::from(crate::sysexits::EX_OSERR)
    })?;
    let skipped = feed.skipped();
    // Said once the screen is the terminal's again.
    crate::report::warn_kernel_names_missing(TOOL, view.kernel_names_missing());
    if skipped > 0 {
        eprintln!(
            "{TOOL}: warning: -T fell behind the recording and did not show {skipped} samples; \
             sample less often with a larger reload count (-n) or on fewer CPUs (-c)"
        );
    }
    if exited {
        return Ok(losses);
    }
    if (ended == top::Ended::Quit || interrupts.count() > 0)
        && let Some(h) = held.as_mut()
    {
        use nix::sys::signal::Signal;
        let _ = h.signal(interrupts.last());
        // A command that ignores it is killed after 2 s.
        let end = Instant::now() + Duration::from_secs(2);
        while matches!(h.try_wait(), Ok(None)) {
            if Instant::now() >= end {
                let _ = h.signal(Signal::SIGKILL);
                let _ = h.wait();
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    Ok(losses)
}
