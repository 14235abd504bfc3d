//! Scaling on real kernel numbers at the `Pmc` level: a logging PMC
//! counts a process through one instance per (thread, CPU), each enabled
//! whenever the thread runs but running only while it is on that CPU.
//! Summed per thread (`read_events` chunks) they are one counter that
//! always ran: not multiplexed, never scaled up, whatever CPUs the thread
//! used.

use nix::sched::{CpuSet, sched_getaffinity, sched_setaffinity};
use nix::unistd::Pid;
use pmc::global::log::{self, MemoryLog};
use pmc::probe::Requirement as R;
use pmc::{Cpu, Flags, Mode, Pmc, Reading};

use crate::ensure;
use crate::harness::{Context, LiveTest, TestResult, Workload, test};
use crate::workloads::Usage;

pub fn tests() -> Vec<LiveTest> {
    vec![test(
        "scaling::per_cpu_instances_of_a_pinned_child_are_one_unscaled_counter",
        vec![R::Paranoid(2)],
        per_cpu_instances_of_a_pinned_child_are_one_unscaled_counter,
    )]
}

const PAGES: u64 = 500;

fn per_cpu_instances_of_a_pinned_child_are_one_unscaled_counter() -> TestResult {
    let mine = sched_getaffinity(Pid::from_raw(0)).ctx("sched_getaffinity")?;
    let first = (0..CpuSet::count())
        .find(|&c| mine.is_set(c).unwrap_or(false))
        .ok_or("no CPU in this process's affinity")?;
    let log = MemoryLog::new();
    log::configure_logfile(log.clone()).ctx("configure_logfile")?;
    let run = || -> Result<(Reading, Usage, usize), libtest_mimic::Failed> {
        let mut w = Workload::spawn("touch-handshake", &[&PAGES.to_string()])?;
        // The child runs on one CPU only: its instances on the others are
        // enabled but never run.
        let mut one = CpuSet::new();
        one.set(first).ctx("cpu set")?;
        sched_setaffinity(Pid::from_raw(w.pid() as i32), &one).ctx("pin the child")?;
        let mut pmc = Pmc::allocate("page-faults,usr", Mode::TC, Flags::LOG_PROCEXIT, Cpu::Any)
            .ctx("allocate")?;
        pmc.attach(w.pid()).ctx("attach")?;
        let handles = pmc.handles();
        pmc.start().ctx("start")?;
        w.go()?;
        let usage = Usage::parse(&w.wait()?).ok_or("touch-handshake reported no usage")?;
        pmc.stop().ctx("stop")?;
        Ok((pmc.read_detailed().ctx("read_detailed")?, usage, handles))
    };
    let outcome = run();
    log::close_logfile().ctx("close_logfile")?;
    let (r, usage, handles) = outcome?;
    let cpus = pmc::global::online_cpus().len();
    println!("{handles} instances on {cpus} CPUs; {r:?}; the child's getrusage {usage:?}");
    ensure!(
        handles == cpus,
        "one instance per online CPU for the single-threaded child: {handles} for {cpus} CPUs"
    );
    ensure!(
        !r.multiplexed && r.time_running == r.time_enabled && r.time_enabled > 0,
        "the per-CPU instances of one thread read as multiplexed: {r:?}"
    );
    ensure!(
        r.value == r.raw,
        "scaled {} from raw {}: {r:?}",
        r.value,
        r.raw
    );
    ensure!(
        (PAGES..=PAGES + 64).contains(&r.value) && r.value.abs_diff(usage.own_minflt) <= 64,
        "{} faults for {PAGES} fresh pages; the child counted {} itself",
        r.value,
        usage.own_minflt
    );
    Ok(())
}
