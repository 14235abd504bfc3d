//! `-T`: the live top view of the sampling PMCs.

use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crate::annotate;
use crate::gate::HeldCommand;
use crate::top;

use super::TOOL;
use super::options::{Args, fs_root};
use super::reports::Losses;

/// `-T`: the live view until `q`, Ctrl-C or the target's exit. A command
/// still running at `q` or Ctrl-C is interrupted (SIGINT, as pmcstat does)
/// and waited for. Unless `keep`, the view takes the records out of
/// `memory_log` as it reads them (a session of hours would otherwise hold
/// all of them), and returns the losses it saw for the final warning.
#[allow(clippy::too_many_arguments)]
pub(super) fn watch(
    args: &Args,
    threshold: f64,
    skiplink: bool,
    memory_log: &pmc::log::sink::MemoryLog,
    keep: bool,
    held: &mut Option<HeldCommand>,
    interrupts: &AtomicUsize,
    targets: &[u32],
) -> Result<Losses, ExitCode> {
    let mut view = top::TopView::new(threshold, skiplink, args.show_address);
    let interval = Duration::from_secs_f64(args.interval.unwrap_or(super::DEFAULT_WAIT_INTERVAL));
    let mut exited = false;
    let root = fs_root(args)?;
    // Parse only what was logged since the last refresh.
    let mut reader = pmc::log::LogReader::from_memory();
    let mut fed = 0;
    let mut losses = Losses::default();
    let ended = top::run(
        &mut view,
        interval,
        || {
            pmc::log::sink::flush_logfile().map_err(|e| e.to_string())?;
            if keep {
                let bytes = memory_log.bytes();
                reader.feed(bytes.get(fed..).unwrap_or(&[]));
                fed = bytes.len();
            } else {
                reader.feed(&memory_log.take_bytes());
            }
            let mut new = Vec::new();
            loop {
                match reader.read() {
                    pmc::log::ReadState::Ok(e) => {
                        if !keep {
                            losses.add(&e.record);
                        }
                        new.push(e);
                    }
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
            if interrupts.load(Ordering::SeqCst) > 0 {
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
        },
    )
    .map_err(|e| {
        eprintln!("{TOOL}: {e}");
        ExitCode::from(crate::sysexits::EX_OSERR)
    })?;
    // Said once the screen is the terminal's again.
    crate::report::warn_kernel_names_missing(TOOL, view.kernel_names_missing());
    if exited {
        return Ok(losses);
    }
    if (ended == top::Ended::Quit || interrupts.load(Ordering::SeqCst) > 0)
        && let Some(h) = held.as_mut()
    {
        use nix::sys::signal::Signal;
        let _ = h.signal(Signal::SIGINT);
        // A command that ignores SIGINT is killed after 2 s.
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
