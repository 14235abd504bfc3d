//! A periodic thread that sleeps when there is nothing to do: a
//! [`Sweeper`] runs its sweep every interval while anything registered
//! with it lives, and parks while nothing does, so a process that samples
//! nothing is never woken by it. Two schedules use it: each owner's drain
//! thread, which moves records from the rings to the log every
//! [`SWEEP_INTERVAL`], and Linux's collector thread
//! ([`COLLECT_INTERVAL`]), which only copies the rings into their sets'
//! spools: it never waits for the log's writes or the decoding, so a drain
//! stalled on either (a loaded machine, a disk under writeback) does not
//! let a ring overflow. It knows nothing of rings or logs: the sweep is
//! the caller's closure.
//!
//! The schedule is a small state machine over a generation count that every
//! registration bumps: the sweeper reads the generation, sweeps, and parks
//! only if the sweep found no live set *and* no registration happened since
//! it read the generation (a set registered during the sweep may be missed
//! by its snapshot, never by the check). Registration wakes a parked
//! sweeper and starts the thread the first time.
//!
//! A thread that cannot be spawned is an error for the registration that
//! needed it (the attach or allocate mapping the first ring): without the
//! drainer, rings fill between stops and the kernel drops samples, which
//! would pass silently. The next registration tries again.

use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;

use crate::Error;

/// How often a drainer with live ring sets sweeps them.
pub(crate) const SWEEP_INTERVAL: Duration = Duration::from_millis(10);

/// The drainer thread's name.
pub(crate) const THREAD_NAME: &str = "pmc-log-drain";

/// How often the collector moves the rings' records into their sets'
/// spools: well within the time a ring fills at the default rate.
// Linux's collector only.
#[cfg_attr(
    not(all(
        any(target_os = "linux", target_os = "android"),
        not(pmc_force_portable)
    )),
    allow(dead_code)
)]
pub(crate) const COLLECT_INTERVAL: Duration = Duration::from_millis(5);

/// The collector thread's name.
// Linux's collector only.
#[cfg_attr(
    not(all(
        any(target_os = "linux", target_os = "android"),
        not(pmc_force_portable)
    )),
    allow(dead_code)
)]
pub(crate) const COLLECTOR_NAME: &str = "pmc-log-collect";

/// Starts the drainer's thread with the given body (std's `Builder` in
/// production, a failing one in tests).
pub(crate) type Spawner = fn(Box<dyn FnOnce() + Send>) -> io::Result<()>;

/// Spawns the drainer's OS thread.
pub(crate) fn spawn_thread(body: Box<dyn FnOnce() + Send>) -> io::Result<()> {
    spawn_named(THREAD_NAME, body)
}

/// Spawns the collector's OS thread.
// Linux's collector only.
#[cfg_attr(
    not(all(
        any(target_os = "linux", target_os = "android"),
        not(pmc_force_portable)
    )),
    allow(dead_code)
)]
pub(crate) fn spawn_collector(body: Box<dyn FnOnce() + Send>) -> io::Result<()> {
    spawn_named(COLLECTOR_NAME, body)
}

fn spawn_named(name: &str, body: Box<dyn FnOnce() + Send>) -> io::Result<()> {
    std::thread::Builder::new()
        .name(name.into())
        .spawn(body)
        .map(drop)
}

/// A periodic thread's schedule and state.
#[derive(Debug)]
pub(crate) struct Sweeper {
    interval: Duration,
    state: Mutex<State>,
    wake: Condvar,
    /// Sweeps made by the thread (not the drains of stop, flush or close):
    /// what a test counts to see the thread idle.
    sweeps: AtomicU64,
}

#[derive(Debug, Default)]
struct State {
    started: bool,
    /// Bumped by every registration.
    generation: u64,
    parked: bool,
    /// Ends the thread at its next wake-up (tests only end theirs).
    shutdown: bool,
}

impl Sweeper {
    /// A sweeper on the drain's schedule, whose thread is not started.
    pub(crate) const fn new() -> Sweeper {
        Sweeper::every(SWEEP_INTERVAL)
    }

    /// A sweeper sweeping every `interval` (the collector's schedule).
    pub(crate) const fn every(interval: Duration) -> Sweeper {
        Sweeper {
            interval,
            state: Mutex::new(State {
                started: false,
                generation: 0,
                parked: false,
                shutdown: false,
            }),
            wake: Condvar::new(),
            sweeps: AtomicU64::new(0),
        }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Called after a ring set joined what `sweep` visits: starts the thread
    /// (through `spawn`) if it is not running, else wakes it if parked.
    /// `sweep` drains every live set and returns how many there were.
    pub(crate) fn registered<F>(self: &Arc<Self>, spawn: Spawner, sweep: F) -> io::Result<()>
    where
        F: Fn() -> usize + Send + 'static,
    {
        let mut state = self.state();
        state.generation = state.generation.wrapping_add(1);
        if state.started {
            self.wake.notify_all();
            return Ok(());
        }
        // Marked before the spawn so the new thread's first park check
        // cannot see a stale state; undone if the spawn fails.
        state.started = true;
        let this = Arc::clone(self);
        if let Err(e) = spawn(Box::new(move || this.run(sweep))) {
            state.started = false;
            return Err(e);
        }
        Ok(())
    }

    /// The thread's loop: sweep every [`SWEEP_INTERVAL`] while sets live,
    /// park until the next registration when none does.
    fn run(&self, sweep: impl Fn() -> usize) {
        loop {
            std::thread::sleep(self.interval);
            let seen = self.state().generation;
            let live = sweep();
            self.sweeps.fetch_add(1, Ordering::Relaxed);
            let mut state = self.state();
            if live == 0 {
                while state.generation == seen && !state.shutdown {
                    state.parked = true;
                    state = self.wake.wait(state).unwrap_or_else(|p| p.into_inner());
                }
                state.parked = false;
            }
            if state.shutdown {
                state.started = false;
                return;
            }
        }
    }

    /// Sweeps made by the thread so far.
    #[cfg(test)]
    pub(crate) fn sweeps(&self) -> u64 {
        self.sweeps.load(Ordering::Relaxed)
    }

    /// Whether the thread is parked (waiting for a registration).
    #[cfg(test)]
    pub(crate) fn is_parked(&self) -> bool {
        self.state().parked
    }

    /// Ends the thread at its next wake-up (its owner is gone).
    pub(crate) fn shut_down(&self) {
        self.state().shutdown = true;
        self.wake.notify_all();
    }
}

/// The error of a drainer thread that could not be started: it names the
/// thread, the errno and the usual causes.
pub(crate) fn spawn_error(e: &io::Error) -> Error {
    thread_error(THREAD_NAME, "moves samples from the rings to the log", e)
}

/// [`spawn_error`] for the collector.
// Linux's collector only.
#[cfg_attr(
    not(all(
        any(target_os = "linux", target_os = "android"),
        not(pmc_force_portable)
    )),
    allow(dead_code)
)]
pub(crate) fn collector_spawn_error(e: &io::Error) -> Error {
    thread_error(COLLECTOR_NAME, "empties the rings before they overflow", e)
}

fn thread_error(name: &str, role: &str, e: &io::Error) -> Error {
    Error::Os {
        op: format!("starting the {name} thread, which {role}").into(),
        source: std::io::Error::from_raw_os_error(e.raw_os_error().unwrap_or(libc::EAGAIN)),
        hint: Some(format!(
            "{e}: the process or its user is at a thread limit (ulimit -u / RLIMIT_NPROC, \
             kernel.threads-max) or out of memory; end threads or raise the limit, then \
             allocate or attach again"
        )),
    }
}

#[cfg(test)]
mod tests;
