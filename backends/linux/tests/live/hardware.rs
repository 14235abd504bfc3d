//! The binding on a core PMU: a group of hardware counters read in one
//! call, and more events than the PMU has counters, multiplexed and
//! scaled as perf stat scales them. Skipped (`[hardware]`) where sysfs
//! lists no core PMU; `cargo xtask test --vm arm64` runs them on QEMU's
//! PMUv3 (6 event counters and the cycle counter).

use std::process::Command;

use libtest_mimic::{Completion, Failed};
use pmc_linux::attr::{Attr, EventConfig, Hardware, ReadFormat};
use pmc_linux::event::{Event, GroupCount, OpenFlags, Target};

use super::{fail, forced};

type Outcome = Result<Completion, Failed>;

/// The core PMU sysfs lists (`cpu`, `cpu_core`, `armv8_pmuv3`, …): the
/// gate's own look, not the binding's.
fn core_pmu() -> Option<String> {
    std::fs::read_dir("/sys/bus/event_source/devices")
        .ok()?
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .find(|n| n == "cpu" || n.starts_with("cpu_") || n.starts_with("armv"))
}

macro_rules! require_core_pmu {
    () => {
        if core_pmu().is_none() && !forced("hardware") {
            return Ok(Completion::ignored_with(
                "[hardware] no core PMU in /sys/bus/event_source/devices (a VM without one)"
                    .to_string(),
            ));
        }
    };
}

macro_rules! ensure {
    ($cond:expr, $($msg:tt)+) => {
        let holds: bool = $cond;
        if !holds {
            return Err(Failed::from(format!($($msg)+)));
        }
    };
}

fn user(event: Hardware) -> Attr {
    Attr::new(EventConfig::Hardware { event, pmu: None })
        .exclude_kernel(true)
        .exclude_hv(true)
        .read_format(ReadFormat::TOTAL_TIME_ENABLED | ReadFormat::TOTAL_TIME_RUNNING)
}

#[inline(never)]
fn work(iterations: u64) -> u64 {
    let mut x = 0u64;
    for i in 0..iterations {
        x = std::hint::black_box(x ^ i).wrapping_add(1);
    }
    x
}

pub fn a_group_of_cycles_and_instructions_reads_in_one_call() -> Outcome {
    require_core_pmu!();
    let times = ReadFormat::ID | ReadFormat::TOTAL_TIME_ENABLED | ReadFormat::TOTAL_TIME_RUNNING;
    let leader_attr = user(Hardware::CpuCycles)
        .read_format(times | ReadFormat::GROUP)
        .disabled(true);
    let leader = Event::open(&leader_attr, Target::CALLER, None, OpenFlags::empty())
        .map_err(|e| fail("open cycles:u", e))?;
    let member_attr = user(Hardware::Instructions)
        .read_format(times)
        .disabled(false);
    let member = Event::open(
        &member_attr,
        Target::CALLER,
        Some(&leader),
        OpenFlags::empty(),
    )
    .map_err(|e| fail("open instructions:u into the group", e))?;
    leader.reset_group().map_err(|e| fail("reset", e))?;
    leader.enable_group().map_err(|e| fail("enable", e))?;
    std::hint::black_box(work(1_000_000));
    leader.disable_group().map_err(|e| fail("disable", e))?;
    let mut group = GroupCount::with_capacity(2);
    leader
        .read_group(&mut group)
        .map_err(|e| fail("read the group", e))?;
    let counts: Vec<_> = group.iter().collect();
    ensure!(counts.len() == 2, "{} members read", counts.len());
    let (cycles, instructions) = (counts[0].value, counts[1].value);
    println!("group: cycles {cycles}, instructions {instructions}");
    ensure!(
        counts[0].id == leader.id().ok() && counts[1].id == member.id().ok(),
        "ids {:?}, {:?} are not the events' own",
        counts[0].id,
        counts[1].id
    );
    // A group is scheduled whole: both ran the whole time, unscaled.
    let (enabled, running) = (group.time_enabled(), group.time_running());
    ensure!(
        enabled.is_some() && enabled == running,
        "the group was multiplexed: enabled {enabled:?}, running {running:?}"
    );
    ensure!(
        instructions >= 1_000_000 && cycles > 0,
        "1 000 000 iterations: {instructions} instructions, {cycles} cycles"
    );
    // Disabled: the member's own read gives what the group read gave.
    let alone = member.read().map_err(|e| fail("read the member", e))?;
    ensure!(
        alone.value == instructions,
        "the member read alone {} and in the group {instructions}",
        alone.value
    );
    Ok(Completion::Completed)
}

/// How many counters a PMU this small could have: every core PMU has
/// fewer than this many (PMUv3: at most 31 + the cycle counter; x86: 8
/// general-purpose + fixed per thread).
const MORE_THAN_ANY_PMU: usize = 40;

pub fn more_events_than_counters_are_multiplexed_and_scaled_like_perf_stat() -> Outcome {
    require_core_pmu!();
    // Instructions alone, on a counter the whole time: the truth.
    let solo = Event::open(
        &user(Hardware::Instructions).disabled(true),
        Target::CALLER,
        None,
        OpenFlags::empty(),
    )
    .map_err(|e| fail("open instructions:u", e))?;
    solo.enable().map_err(|e| fail("enable", e))?;
    std::hint::black_box(work(20_000_000));
    solo.disable().map_err(|e| fail("disable", e))?;
    let truth = solo.read_timed().map_err(|e| fail("read", e))?;
    drop(solo);
    // Then as many copies as it takes to run out of counters.
    let events: Vec<Event> = (0..MORE_THAN_ANY_PMU)
        .map(|_| {
            Event::open(
                &user(Hardware::Instructions).disabled(true),
                Target::CALLER,
                None,
                OpenFlags::empty(),
            )
        })
        .collect::<Result<_, _>>()
        .map_err(|e| fail("open the copies", e))?;
    for e in &events {
        e.enable().map_err(|e| fail("enable", e))?;
    }
    std::hint::black_box(work(20_000_000));
    for e in &events {
        e.disable().map_err(|e| fail("disable", e))?;
    }
    let mut multiplexed = 0;
    let mut worst = 0f64;
    for e in &events {
        let c = e.read_timed().map_err(|e| fail("read", e))?;
        if c.time_running < c.time_enabled {
            multiplexed += 1;
        }
        if let Some(scaled) = c.scaled() {
            worst = worst.max((scaled as f64 - truth.value as f64).abs() / truth.value as f64);
        }
    }
    println!(
        "{MORE_THAN_ANY_PMU} copies: {multiplexed} multiplexed; scaled estimates at most {:.1}% from the solo count {}",
        worst * 100.0,
        truth.value
    );
    ensure!(
        multiplexed > 0,
        "{MORE_THAN_ANY_PMU} events on one thread, none multiplexed"
    );
    // Scaling extrapolates from the slices each copy ran: within 15 %.
    ensure!(
        worst < 0.15,
        "a scaled estimate {:.1}% off the solo count",
        worst * 100.0
    );
    // perf stat and we count as many copies over one shell loop; each
    // side's mean scaled estimate is its answer to "how many instructions":
    // the two must agree. (The child waits on `read` until every copy is
    // on it; perf, with no input, counts sh's start-up too: a few 0.1 %.)
    const LOOP: &str = "read x; i=0; while [ $i -lt 30000 ]; do i=$((i+1)); done";
    let mut child = Command::new("sh")
        .args(["-c", LOOP])
        .stdin(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| fail("start sh", e))?;
    let target = Target {
        pid: child.id() as i32,
        cpu: -1,
    };
    let copies: Vec<Event> = (0..MORE_THAN_ANY_PMU)
        .map(|_| {
            Event::open(
                &user(Hardware::Instructions),
                target,
                None,
                OpenFlags::empty(),
            )
        })
        .collect::<Result<_, _>>()
        .map_err(|e| fail("open the copies on sh", e))?;
    drop(child.stdin.take());
    child.wait().map_err(|e| fail("wait for sh", e))?;
    let ours: Vec<u64> = copies
        .iter()
        .map(|e| e.read_timed().ok().and_then(|c| c.scaled()))
        .collect::<Option<_>>()
        .ok_or("a copy on sh never ran")?;
    let ours_mean = ours.iter().sum::<u64>() as f64 / ours.len() as f64;
    let Ok(perf) = Command::new("perf")
        .args(["stat", "-x,", "-e"])
        .arg(vec!["instructions:u"; MORE_THAN_ANY_PMU].join(","))
        .args(["--", "sh", "-c", LOOP])
        .stdin(std::process::Stdio::null())
        .output()
    else {
        println!("perf is not installed: our mean {ours_mean:.0} is not compared");
        return Ok(Completion::Completed);
    };
    let err = String::from_utf8_lossy(&perf.stderr);
    // -x, lines: value,unit,event,run time,percent running,…
    let rows: Vec<(f64, f64)> = err
        .lines()
        .filter(|l| l.contains("instructions"))
        .filter_map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            Some((f.first()?.parse().ok()?, f.get(4)?.parse().ok()?))
        })
        .collect();
    ensure!(
        rows.len() == MORE_THAN_ANY_PMU,
        "perf stat printed {} rows:\n{err}",
        rows.len()
    );
    let perf_multiplexed = rows.iter().filter(|(_, pct)| *pct < 100.0).count();
    let perf_mean = rows.iter().map(|(v, _)| v).sum::<f64>() / rows.len() as f64;
    let apart = (ours_mean - perf_mean).abs() / perf_mean;
    println!(
        "sh loop: our mean scaled estimate {ours_mean:.0}, perf stat's {perf_mean:.0} \
         ({perf_multiplexed} of {} multiplexed): {:.2}% apart",
        rows.len(),
        apart * 100.0
    );
    ensure!(
        perf_multiplexed > 0,
        "perf stat did not multiplex {MORE_THAN_ANY_PMU} events where we did:\n{err}"
    );
    ensure!(
        apart < 0.10,
        "our scaled mean {ours_mean:.0}, perf's {perf_mean:.0}"
    );
    Ok(Completion::Completed)
}
