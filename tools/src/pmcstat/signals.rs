//! The signals that end a live run: SIGINT, SIGTERM, SIGHUP and SIGQUIT.
//!
//! Each is handled as pmcstat.c handles SIGINT (its kevent
//! `EVFILT_SIGNAL` loop): the command pmcstat started is signalled
//! (`pmcstat_kill_process`) and the run ends once it exits; without a
//! command the run ends at once. Then the counts are printed, the log is
//! closed (CLOSELOG) and pmcstat exits `EX_OK`. The command gets the
//! signal pmcstat got, as sudo(8) relays the signals it receives (and as
//! pmcstat.c passes SIGINT on): the command would have had it without
//! pmcstat in between. perf record stops on SIGINT and SIGTERM too, but
//! sends its workload SIGTERM whatever stopped it (builtin-record.c's
//! `__cmd_record`). A second signal kills the command.

use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicI32, AtomicUsize, Ordering};

use nix::sys::signal::Signal;

use super::TOOL;
use crate::sysexits::EX_OSERR;

/// The signals that end a run.
const ENDING: [Signal; 4] = [
    Signal::SIGINT,
    Signal::SIGTERM,
    Signal::SIGHUP,
    Signal::SIGQUIT,
];

/// The ending signals received so far: how many, and the last one.
#[derive(Debug)]
pub(super) struct Interrupts {
    count: Arc<AtomicUsize>,
    last: Arc<AtomicI32>,
    handle: signal_hook::iterator::Handle,
    sigint_ignored_at_start: bool,
}

impl Interrupts {
    /// Catches the ending signals this process did not start with
    /// ignored, from now on; [`Interrupts::catch_sigint_if_ignored`]
    /// adds SIGINT once the command runs.
    ///
    /// A signal ignored at start stays ignored for the command, as for
    /// any child: the command is started after this, and a caught
    /// signal is reset to the default at its exec, an ignored one is
    /// not. SIGTERM, SIGHUP and SIGQUIT ignored at start stay ignored
    /// for pmcstat too, as the glibc manual's termination handlers keep
    /// them: nohup(1) must keep a recording going past a hangup.
    pub(super) fn catch() -> Result<Interrupts, ExitCode> {
        let cannot = |e: std::io::Error| {
            eprintln!("{TOOL}: cannot catch SIGINT, SIGTERM, SIGHUP and SIGQUIT: {e}");
            ExitCode::from(EX_OSERR)
        };
        let ignored = ignored_at_start();
        let caught: Vec<i32> = ENDING
            .iter()
            .filter(|s| !ignored.contains(s))
            .map(|&s| s as i32)
            .collect();
        let mut signals = signal_hook::iterator::Signals::new(caught).map_err(cannot)?;
        let count = Arc::new(AtomicUsize::new(0));
        let last = Arc::new(AtomicI32::new(Signal::SIGINT as i32));
        let handle = signals.handle();
        let (seen, which) = (count.clone(), last.clone());
        std::thread::Builder::new()
            .name("pmcstat-signals".into())
            .spawn(move || {
                for signal in signals.forever() {
                    // The signal first: whoever sees the count sees it.
                    which.store(signal, Ordering::SeqCst);
                    seen.fetch_add(1, Ordering::SeqCst);
                }
            })
            .map_err(cannot)?;
        Ok(Interrupts {
            count,
            last,
            handle,
            sigint_ignored_at_start: ignored.contains(&Signal::SIGINT),
        })
    }

    /// SIGINT, if this process started with it ignored, once the command
    /// runs (it inherited the ignored SIGINT): pmcstat itself still ends
    /// on SIGINT then (`kill -INT` of a background job).
    pub(super) fn catch_sigint_if_ignored(&self) -> Result<(), ExitCode> {
        if self.sigint_ignored_at_start {
            self.handle.add_signal(Signal::SIGINT as i32).map_err(|e| {
                eprintln!("{TOOL}: cannot catch SIGINT: {e}");
                ExitCode::from(EX_OSERR)
            })?;
        }
        Ok(())
    }

    /// A test of whether any ending signal has arrived, for another
    /// thread (an output FIFO's wait for its reader gives up then).
    pub(super) fn arrived(&self) -> impl Fn() -> bool + Send + Sync + 'static {
        let count = self.count.clone();
        move || count.load(Ordering::SeqCst) > 0
    }

    /// How many ending signals arrived.
    pub(super) fn count(&self) -> usize {
        self.count.load(Ordering::SeqCst)
    }

    /// The last ending signal that arrived (SIGINT before any).
    pub(super) fn last(&self) -> Signal {
        Signal::try_from(self.last.load(Ordering::SeqCst)).unwrap_or(Signal::SIGINT)
    }
}

/// The ending signals this process started with ignored (Linux's
/// `/proc/self/status` `SigIgn` mask; elsewhere none is assumed).
fn ignored_at_start() -> Vec<Signal> {
    let mask = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|l| l.strip_prefix("SigIgn:"))
                .and_then(|mask| u64::from_str_radix(mask.trim(), 16).ok())
        })
        .unwrap_or(0);
    ENDING
        .into_iter()
        .filter(|&s| mask & (1 << (s as u64 - 1)) != 0)
        .collect()
}
