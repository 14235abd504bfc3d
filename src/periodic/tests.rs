//! The drainer's schedule on private drainers (the process-wide one is
//! shared by every test that maps a ring): a fake sweep reports how many
//! sets live, so the tests decide when the drainer must sweep and when it
//! must park. Waits are bounded polls; nothing asserts a duration.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use super::*;

/// A drainer for one test.
fn private_drainer() -> Arc<Sweeper> {
    Arc::new(Sweeper::new())
}

/// Polls `what` for up to 10 s (a loaded machine schedules late).
fn eventually(what: &str, cond: impl Fn() -> bool) {
    let end = Instant::now() + Duration::from_secs(10);
    while !cond() {
        assert!(Instant::now() < end, "timed out waiting until {what}");
        std::thread::sleep(Duration::from_millis(2));
    }
}

fn failing_spawner(_: Box<dyn FnOnce() + Send>) -> io::Result<()> {
    Err(io::Error::from_raw_os_error(libc::EAGAIN))
}

#[test]
fn the_drainer_sweeps_while_sets_live_and_parks_when_none_does() {
    let drainer = private_drainer();
    let live = Arc::new(AtomicUsize::new(1));
    let sweep = {
        let live = live.clone();
        move || live.load(Ordering::SeqCst)
    };
    drainer.registered(spawn_thread, sweep.clone()).unwrap();
    eventually("the drainer has swept 3 times", || drainer.sweeps() >= 3);
    assert!(!drainer.is_parked(), "parked while a set lives");

    // The last set is gone: the next sweep finds none and the thread parks.
    live.store(0, Ordering::SeqCst);
    eventually("the drainer parks", || drainer.is_parked());
    let idle = drainer.sweeps();
    // 20 sweep intervals without a registration: not one wake-up (the
    // thread before this change swept every 10 ms for ever).
    std::thread::sleep(SWEEP_INTERVAL * 20);
    assert_eq!(drainer.sweeps(), idle, "swept while no set lived");
    assert!(drainer.is_parked());

    // A registration wakes it; it sweeps again while the set lives.
    live.store(1, Ordering::SeqCst);
    drainer.registered(spawn_thread, sweep).unwrap();
    eventually("the drainer sweeps after the registration", || {
        drainer.sweeps() >= idle + 2
    });
    assert!(!drainer.is_parked());
    drainer.shut_down();
}

/// A set registered while a sweep runs may be missing from the sweep's
/// snapshot (the sweep returns 0); the drainer must not park on that
/// stale answer but sweep again, which sees the set.
#[test]
fn a_registration_during_a_sweep_is_not_lost() {
    let drainer = private_drainer();
    let calls = Arc::new(AtomicUsize::new(0));
    let sweep = {
        let calls = calls.clone();
        // The sweep holds the drainer weakly, as an owner's does.
        let weak = Arc::downgrade(&drainer);
        move || {
            if calls.fetch_add(1, Ordering::SeqCst) == 1
                && let Some(drainer) = weak.upgrade()
            {
                // Mid-sweep: another thread registers a set (the thread
                // runs, so this only bumps the generation and notifies).
                drainer
                    .registered(failing_spawner, || unreachable!("not spawned twice"))
                    .unwrap();
            }
            0
        }
    };
    drainer.registered(spawn_thread, sweep).unwrap();
    // First sweep: 0 live, no registration since → parks.
    eventually("the first sweep parks", || {
        drainer.is_parked() && calls.load(Ordering::SeqCst) == 1
    });
    // Wake it: the second sweep registers mid-sweep and returns 0; the
    // third must follow without any other wake-up.
    drainer
        .registered(failing_spawner, || unreachable!("not spawned twice"))
        .unwrap();
    eventually("a third sweep follows the mid-sweep registration", || {
        calls.load(Ordering::SeqCst) >= 3 && drainer.is_parked()
    });
    assert_eq!(calls.load(Ordering::SeqCst), 3, "swept after parking");
    drainer.shut_down();
}

/// A thread that cannot be spawned is the registration's error, with the
/// errno; the drainer stays unstarted, so the next registration spawns.
#[test]
fn a_failed_spawn_is_an_error_and_the_next_registration_retries() {
    let drainer = private_drainer();
    let live = Arc::new(AtomicUsize::new(1));
    let sweep = {
        let live = live.clone();
        move || live.load(Ordering::SeqCst)
    };
    let err = drainer
        .registered(failing_spawner, sweep.clone())
        .unwrap_err();
    assert_eq!(err.raw_os_error(), Some(libc::EAGAIN));
    std::thread::sleep(SWEEP_INTERVAL * 5);
    assert_eq!(drainer.sweeps(), 0, "no thread runs after a failed spawn");

    drainer.registered(spawn_thread, sweep).unwrap();
    eventually("the retried drainer sweeps", || drainer.sweeps() >= 1);
    drainer.shut_down();
}

/// What the caller of allocate/attach sees: the thread, EAGAIN and what to do.
#[test]
fn the_spawn_error_names_the_thread_the_errno_and_the_remedy() {
    let err = spawn_error(&io::Error::from_raw_os_error(libc::EAGAIN));
    assert_eq!(err.errno(), libc::EAGAIN);
    let text = err.to_string();
    for part in [THREAD_NAME, "EAGAIN", "RLIMIT_NPROC", "again"] {
        assert!(text.contains(part), "{part:?} missing from {text:?}");
    }
}
