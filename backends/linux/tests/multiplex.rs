//! Multiplexing and scaling on real kernel numbers, without a hardware
//! PMU: a per-thread counter pinned to one CPU (`Target { pid: 0, cpu }`)
//! is enabled whenever its thread runs but runs only while the thread is on
//! that CPU, so moving the thread between CPUs with sched_setaffinity(2)
//! gives 0 < time_running < time_enabled: the same accounting the kernel
//! does for a counter that shares the PMU.
//!
//! Needs two CPUs this process may run on (checked with
//! sched_getaffinity(2), not with the code under test); skipped with the
//! reason otherwise.

use libtest_mimic::{Arguments, Completion, Failed, Trial};
use nix::sched::{CpuSet, sched_getaffinity, sched_setaffinity};
use nix::unistd::Pid;
use pmc_linux::attr::{Attr, EventConfig, ReadFormat, Software};
use pmc_linux::event::{Count, Event, OpenFlags, Target};

type Outcome = Result<Completion, Failed>;

/// Fresh pages touched in each phase.
const PAGES: usize = 200;
/// Faults the loop may take beyond its pages (code, stack, allocator).
const SLACK: u64 = 64;

fn allowed_cpus() -> Vec<usize> {
    let set = sched_getaffinity(Pid::from_raw(0)).expect("sched_getaffinity");
    (0..CpuSet::count())
        .filter(|&c| set.is_set(c).unwrap_or(false))
        .collect()
}

/// Moves the calling thread to `cpu` only (and yields so it runs there).
fn run_on(cpu: usize) {
    let mut set = CpuSet::new();
    set.set(cpu).expect("cpu index");
    sched_setaffinity(Pid::from_raw(0), &set).expect("sched_setaffinity");
    std::thread::yield_now();
}

/// Touches `pages` fresh anonymous pages: one minor fault each.
fn touch_fresh_pages(pages: usize) {
    // One fault per page needs transparent huge pages off for this
    // process: Debian's arm64 kernel (and others) default THP to `always`,
    // where a 64 MiB zeroed buffer takes 2 MiB pages and faults 512× less.
    nix::sys::prctl::set_thp_disable(true).expect("PR_SET_THP_DISABLE");
    let page = pmc_linux::system::page_size();
    // A zeroed allocation above glibc's largest mmap threshold (32 MiB) is
    // always a new anonymous mapping, whatever was freed before.
    let mut buf = vec![0u8; (pages * page).max(64 << 20)];
    for p in 0..pages {
        buf[p * page] = 1;
    }
    std::hint::black_box(&buf);
}

/// User-space page faults of the calling thread, with the times.
fn faults() -> Attr {
    Attr::new(EventConfig::Software(Software::PageFaults))
        .exclude_kernel(true)
        .exclude_hv(true)
        .disabled(true)
        .read_format(ReadFormat::TOTAL_TIME_ENABLED | ReadFormat::TOTAL_TIME_RUNNING)
}

/// Opens `attr` for the calling thread on `cpu` (-1: any CPU).
fn open_on(attr: &Attr, cpu: i32) -> Result<Event, Failed> {
    Event::open(attr, Target { pid: 0, cpu }, None, OpenFlags::empty())
        .map_err(|e| Failed::from(format!("open on cpu {cpu}: {e}")))
}

fn read(e: &Event) -> Result<Count, Failed> {
    e.read().map_err(|e| Failed::from(format!("read: {e}")))
}

fn ensure(holds: bool, msg: impl FnOnce() -> String) -> Result<(), Failed> {
    if holds {
        Ok(())
    } else {
        Err(Failed::from(msg()))
    }
}

fn pinned_counter_of_a_moving_thread_is_scaled() -> Outcome {
    let cpus = allowed_cpus();
    if cpus.len() < 2 {
        return Ok(Completion::ignored_with(format!(
            "needs 2 CPUs this process may run on, sched_getaffinity allows {cpus:?}"
        )));
    }
    let saved = sched_getaffinity(Pid::from_raw(0)).expect("sched_getaffinity");
    let (here, there) = (cpus[0], cpus[1]);
    let attr = faults();
    // The same event on `here` only, on any CPU (the reference), and on
    // `there` while the thread stays `here` (never counted).
    let pinned = open_on(&attr, here as i32)?;
    let anywhere = open_on(&attr, -1)?;
    run_on(here);
    let never = open_on(&attr, there as i32)?;
    let outcome = (|| {
        run_on(there);
        pinned.enable().map_err(|e| Failed::from(e.to_string()))?;
        anywhere.enable().map_err(|e| Failed::from(e.to_string()))?;
        touch_fresh_pages(PAGES); // on `there`: not counted by `pinned`
        run_on(here);
        touch_fresh_pages(PAGES); // on `here`: counted by both
        run_on(there);
        touch_fresh_pages(PAGES);
        pinned.disable().map_err(|e| Failed::from(e.to_string()))?;
        anywhere
            .disable()
            .map_err(|e| Failed::from(e.to_string()))?;
        // `never`: enabled only while the thread stays on `here`.
        run_on(here);
        never.enable().map_err(|e| Failed::from(e.to_string()))?;
        touch_fresh_pages(PAGES);
        never.disable().map_err(|e| Failed::from(e.to_string()))?;
        Ok::<_, Failed>((read(&pinned)?, read(&anywhere)?, read(&never)?))
    })();
    sched_setaffinity(Pid::from_raw(0), &saved).expect("restore affinity");
    let (p, a, n) = outcome?;
    println!("pinned {p:?}\nanywhere {a:?}\nnever {n:?}");
    let (pe, pr) = (p.time_enabled.unwrap(), p.time_running.unwrap());
    ensure(0 < pr && pr < pe, || {
        format!("pinned: want 0 < running < enabled, got {pr} / {pe}")
    })?;
    ensure(p.is_multiplexed(), || {
        "pinned counter not flagged multiplexed".into()
    })?;
    // Exactly the middle phase's faults.
    let n_pages = PAGES as u64;
    ensure((n_pages..=n_pages + SLACK).contains(&p.value), || {
        format!(
            "pinned counted {} faults for {PAGES} pages on its CPU",
            p.value
        )
    })?;
    ensure(
        (3 * n_pages..=3 * n_pages + 3 * SLACK).contains(&a.value),
        || format!("unpinned counted {} faults for 3 × {PAGES} pages", a.value),
    )?;
    ensure(!a.is_multiplexed(), || {
        format!("the unpinned reference was multiplexed: {a:?}")
    })?;
    // The scaled value is value × enabled / running (perf_event_open(2),
    // "time_enabled and time_running can be used to scale"): worked out
    // here in u128, not by the code under test.
    let want = u64::try_from(u128::from(p.value) * u128::from(pe) / u128::from(pr)).unwrap();
    ensure(p.scaled() == Some(want), || {
        format!("scaled {:?}, want {want}", p.scaled())
    })?;
    ensure(want > p.value, || {
        format!("scaling did not extrapolate: {want}")
    })?;
    // Never on its CPU while enabled: enabled time, no running time, and
    // no estimate at all (pmc's Error::NotCounted), never a silent 0.
    let (ne, nr) = (n.time_enabled.unwrap(), n.time_running.unwrap());
    ensure(ne > 0 && nr == 0 && n.value == 0, || {
        format!("never-scheduled counter: {n:?}")
    })?;
    ensure(n.scaled().is_none(), || {
        format!("never-scheduled scaled to {:?}", n.scaled())
    })?;
    Ok(Completion::Completed)
}

fn main() {
    let args = Arguments::from_args();
    let trials = vec![Trial::ignorable_test(
        "multiplex::pinned_counter_of_a_moving_thread_is_scaled",
        pinned_counter_of_a_moving_thread_is_scaled,
    )];
    libtest_mimic::run(&args, trials).exit();
}
