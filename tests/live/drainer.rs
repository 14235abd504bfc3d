//! The thread that drains sampling rings into the log, watched from outside
//! through its context switches in `/proc/self/task/TID/status`: it wakes
//! while a sampling PMC exists and sleeps for good once none does.

use std::time::{Duration, Instant};

use pmc::global::log::{self, MemoryLog};
use pmc::probe::Requirement as R;
use pmc::{Cpu, Flags, Mode, Pmc};

use crate::ensure;
use crate::harness::{Context, LiveTest, TestResult, test};

pub fn tests() -> Vec<LiveTest> {
    vec![test(
        "drainer::the_drain_thread_wakes_only_while_a_sampling_pmc_exists",
        vec![R::Paranoid(2)],
        the_drain_thread_wakes_only_while_a_sampling_pmc_exists,
    )]
}

/// The name pmc gives its drainer thread (`src/backend/linux/sampling/drainer.rs`).
const DRAIN_THREAD: &str = "pmc-log-drain";

/// The tid of this process's drainer thread, if it runs.
fn drain_thread() -> Option<u32> {
    std::fs::read_dir("/proc/self/task")
        .ok()?
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .find(|tid| {
            std::fs::read_to_string(format!("/proc/self/task/{tid}/comm"))
                .is_ok_and(|c| c.trim_end() == DRAIN_THREAD)
        })
}

/// Voluntary + involuntary context switches of thread `tid`: each wake-up
/// from a sleep is one.
fn switches(tid: u32) -> Result<u64, libtest_mimic::Failed> {
    let status = std::fs::read_to_string(format!("/proc/self/task/{tid}/status"))
        .ctx("the drain thread's status")?;
    let mut total = 0;
    for key in ["voluntary_ctxt_switches:", "nonvoluntary_ctxt_switches:"] {
        let line = status
            .lines()
            .find(|l| l.starts_with(key))
            .ok_or_else(|| format!("no {key} in /proc/self/task/{tid}/status"))?;
        total += line[key.len()..]
            .trim()
            .parse::<u64>()
            .ctx("context switch count")?;
    }
    Ok(total)
}

fn the_drain_thread_wakes_only_while_a_sampling_pmc_exists() -> TestResult {
    let watch = Duration::from_millis(500);
    let log = MemoryLog::new();
    log::configure_logfile(log.clone()).ctx("configure_logfile")?;
    let mut pmc = Pmc::allocate_with_count(
        "cpu-clock,usr",
        Mode::TS,
        Flags::empty(),
        Cpu::Any,
        1_000_000,
    )
    .ctx("allocate TS")?;
    pmc.start().ctx("start")?;
    // The new thread names itself as it starts: give it time to.
    let named_by = Instant::now() + Duration::from_secs(10);
    let tid = loop {
        if let Some(tid) = drain_thread() {
            break tid;
        }
        ensure!(
            Instant::now() < named_by,
            "no {DRAIN_THREAD} thread 10 s after a sampling PMC started"
        );
        std::thread::sleep(Duration::from_millis(5));
    };
    // The control: while the PMC's rings exist the thread sweeps them
    // every 10 ms, so its switch count moves.
    let before = switches(tid)?;
    std::thread::sleep(watch);
    let busy = switches(tid)? - before;
    pmc.stop().ctx("stop")?;
    drop(pmc);
    log::close_logfile().ctx("close_logfile")?;
    ensure!(
        busy >= 3,
        "the drain thread switched {busy} times in {watch:?} with a sampling PMC (it sweeps every 10 ms)"
    );

    // No ring left: after at most one more sweep it parks. Wait until two
    // reads a few sweep intervals apart agree.
    let end = Instant::now() + Duration::from_secs(10);
    let mut last = switches(tid)?;
    loop {
        std::thread::sleep(Duration::from_millis(50));
        let now = switches(tid)?;
        if now == last {
            break;
        }
        ensure!(
            Instant::now() < end,
            "the drain thread kept waking for 10 s after the last sampling PMC was released ({now} switches)"
        );
        last = now;
    }
    std::thread::sleep(watch);
    let idle = switches(tid)? - last;
    println!("drain thread: {busy} switches in {watch:?} while sampling, {idle} while idle");
    ensure!(
        idle == 0,
        "the drain thread woke {idle} times in {watch:?} with no sampling PMC left"
    );
    Ok(())
}
