//! Event classes beyond the generic ones: breakpoints (and, as they are
//! wired, tracepoints and probes), counted exactly.

use std::sync::atomic::{AtomicU64, Ordering};

use pmc::probe::Requirement as R;
use pmc::{Cpu, Flags, Mode, Pmc};

use crate::ensure;
use crate::harness::{Context, LiveTest, TestResult, test};

pub fn tests() -> Vec<LiveTest> {
    vec![
        test(
            "events::write_breakpoint_counts_exactly_the_writes",
            vec![R::Pmu("breakpoint".into()), R::Paranoid(2)],
            write_breakpoint_counts_exactly_the_writes,
        ),
        test(
            "events::execute_breakpoint_counts_exactly_the_calls",
            vec![R::Pmu("breakpoint".into()), R::Paranoid(2)],
            execute_breakpoint_counts_exactly_the_calls,
        ),
        test(
            "events::bad_breakpoints_are_refused_with_the_reason",
            vec![],
            bad_breakpoints_are_refused_with_the_reason,
        ),
    ]
}

static WATCHED: AtomicU64 = AtomicU64::new(0);

fn count_with(spec: &str, work: impl FnOnce()) -> Result<u64, libtest_mimic::Failed> {
    let mut pmc = Pmc::allocate(spec, Mode::TC, Flags::empty(), Cpu::Any).ctx(spec)?;
    pmc.start().ctx("start")?;
    work();
    pmc.stop().ctx("stop")?;
    pmc.read().ctx("read")
}

fn write_breakpoint_counts_exactly_the_writes() -> TestResult {
    let addr = &WATCHED as *const AtomicU64 as usize;
    let spec = format!("mem:{addr:#x}/8:w,usr");
    for writes in [0u64, 1, 5, 100] {
        let n = count_with(&spec, || {
            for i in 0..writes {
                WATCHED.store(i, Ordering::SeqCst);
                // Reads do not trigger a write breakpoint.
                std::hint::black_box(WATCHED.load(Ordering::SeqCst));
            }
        })?;
        ensure!(n == writes, "{writes} writes counted as {n}");
    }
    Ok(())
}

#[inline(never)]
fn breakpoint_target(x: u64) -> u64 {
    std::hint::black_box(x.wrapping_mul(3))
}

fn execute_breakpoint_counts_exactly_the_calls() -> TestResult {
    let f: fn(u64) -> u64 = breakpoint_target;
    let spec = format!("mem:{:#x}:x,usr", f as usize);
    for calls in [0u64, 1, 7, 100] {
        let n = count_with(&spec, || {
            let f = std::hint::black_box(f);
            for i in 0..calls {
                std::hint::black_box(f(i));
            }
        })?;
        ensure!(n == calls, "{calls} calls counted as {n}");
    }
    Ok(())
}

fn bad_breakpoints_are_refused_with_the_reason() -> TestResult {
    for (spec, needle) in [
        ("mem:0x1000/3:w", "1, 2, 4 or 8"),
        ("mem:0x1004/8:w", "not aligned"),
        ("mem:0x1000/4:x", "execute"),
        ("mem:0x1000:rx", "access must be one of"),
    ] {
        let e = Pmc::allocate(spec, Mode::TC, Flags::empty(), Cpu::Any)
            .err()
            .ok_or_else(|| format!("{spec} was accepted"))?;
        ensure!(
            e.errno() == libc::EINVAL,
            "{spec}: {e} (errno {})",
            e.errno()
        );
        ensure!(e.to_string().contains(needle), "{spec}: {e}");
    }
    Ok(())
}

pub fn tracepoint_and_probe_tests() -> Vec<LiveTest> {
    vec![
        test(
            "events::getpid_tracepoint_counts_exactly_the_calls",
            vec![R::TracefsReadable, R::Paranoid(2)],
            getpid_tracepoint_counts_exactly_the_calls,
        ),
        test(
            "events::a_tracepoint_filter_reduces_the_count_exactly",
            vec![R::TracefsReadable, R::Paranoid(2)],
            a_tracepoint_filter_reduces_the_count_exactly,
        ),
        test(
            "events::an_unknown_tracepoint_names_the_closest",
            vec![R::TracefsReadable],
            an_unknown_tracepoint_names_the_closest,
        ),
        test(
            "events::uprobe_counts_exactly_the_calls",
            vec![R::Pmu("uprobe".into()), R::PerfmonCapable],
            uprobe_counts_exactly_the_calls,
        ),
        test(
            "events::kprobe_counts_kernel_function_calls",
            vec![R::Pmu("kprobe".into()), R::PerfmonCapable],
            kprobe_counts_kernel_function_calls,
        ),
        test(
            "events::msr_tsc_counts",
            vec![R::Pmu("msr".into()), R::Paranoid(0)],
            msr_tsc_counts,
        ),
        test(
            "events::listing_covers_every_class",
            vec![R::PerfEvent],
            listing_covers_every_class,
        ),
    ]
}

fn getpid_tracepoint_counts_exactly_the_calls() -> TestResult {
    for n in [0u64, 1, 3, 1000] {
        let counted = count_with("syscalls:sys_enter_getpid,usr", || {
            for _ in 0..n {
                std::hint::black_box(std::process::id());
            }
        })?;
        ensure!(counted == n, "{n} getpid calls counted as {counted}");
    }
    Ok(())
}

fn a_tracepoint_filter_reduces_the_count_exactly() -> TestResult {
    use std::io::Write;
    let mut null = std::fs::File::create("/dev/null").ctx("open /dev/null")?;
    let writes = |null: &mut std::fs::File| -> std::io::Result<()> {
        for len in [3usize, 5, 3, 7, 3] {
            let n = null.write(&vec![0u8; len])?;
            assert_eq!(n, len);
        }
        Ok(())
    };
    let all = count_with("syscalls:sys_enter_write,usr", || {
        writes(&mut null).expect("write /dev/null");
    })?;
    let threes = count_with("syscalls:sys_enter_write,usr,filter=count == 3", || {
        writes(&mut null).expect("write /dev/null");
    })?;
    // Exactly the closure's writes: nothing else in this process writes
    // between start and stop.
    ensure!(all == 5, "5 writes counted as {all}");
    ensure!(
        threes == 3,
        "3 writes of 3 bytes counted as {threes} (unfiltered {all})"
    );
    Ok(())
}

fn an_unknown_tracepoint_names_the_closest() -> TestResult {
    let e = Pmc::allocate(
        "syscalls:sys_enter_getpd",
        Mode::TC,
        Flags::empty(),
        Cpu::Any,
    )
    .err()
    .ok_or("an unknown tracepoint was accepted")?;
    let text = e.to_string();
    ensure!(text.contains("syscalls:sys_enter_getpid"), "{text}");
    // pmc_allocate(3): an unrecognised event specification is EINVAL.
    ensure!(e.errno() == libc::EINVAL, "{text}");
    Ok(())
}

#[inline(never)]
fn uprobe_target(x: u64) -> u64 {
    std::hint::black_box(x ^ 0x5a)
}

fn uprobe_counts_exactly_the_calls() -> TestResult {
    let libc = pmc_linux::dynamic_probe::mapped_library("/libc.so")
        .ok_or("libc is not mapped")?
        .display()
        .to_string();
    for spec in [
        format!("uprobe:{libc}:getpid"),
        format!("uretprobe:{libc}:getpid"),
    ] {
        for n in [0u64, 1, 7, 500] {
            let counted = count_with(&spec, || {
                for i in 0..n {
                    std::hint::black_box(std::process::id());
                    std::hint::black_box(uprobe_target(i));
                }
            })?;
            ensure!(counted == n, "{spec}: {n} calls counted as {counted}");
        }
    }
    Ok(())
}

fn kprobe_counts_kernel_function_calls() -> TestResult {
    let n = count_with("kprobe:do_sys_openat2", || {
        for _ in 0..5 {
            let _ = std::fs::File::open("/proc/self/stat");
        }
    })?;
    // One do_sys_openat2 per open(2); nothing else in this process opens a
    // file between start and stop.
    ensure!(n == 5, "5 opens counted as {n}");
    Ok(())
}

fn msr_tsc_counts() -> TestResult {
    let mut per_cpu = pmc::PerCpu::allocate("tsc", Mode::SC, Flags::empty()).ctx("allocate tsc")?;
    let t0 = std::time::Instant::now();
    per_cpu.start().ctx("start")?;
    std::thread::sleep(std::time::Duration::from_millis(20));
    per_cpu.stop().ctx("stop")?;
    let wall = t0.elapsed().as_nanos() as f64;
    let each = per_cpu.read_each().ctx("read_each")?;
    let total = per_cpu.read().ctx("read")?;
    ensure!(
        total == each.iter().map(|(_, t)| t).sum::<u64>(),
        "read is the sum of {each:?}"
    );
    // An invariant TSC ticks at one rate on every CPU over the same
    // window: the CPUs agree within 3%.
    let (lo, hi) = (
        each.iter().map(|(_, t)| *t).min().unwrap_or(0),
        each.iter().map(|(_, t)| *t).max().unwrap_or(0),
    );
    ensure!(
        lo > 0 && (hi - lo) as f64 <= hi as f64 * 0.03,
        "TSC ticks differ between CPUs over one window: {each:?}"
    );
    // Ticks per ns over the sleep: at least 20 ms worth, at most the wall
    // window; the TC count below must tick at the same rate.
    let rate_max = hi as f64 / 20e6;
    let rate_min = lo as f64 / wall;
    let mut own = Pmc::allocate("msr/tsc/", Mode::TC, Flags::empty(), Cpu::Any).ctx("TC tsc")?;
    let window = crate::workloads::StealWindow::start();
    let cpu0 = pmc_linux::system::thread_cpu_ns();
    own.start().ctx("start")?;
    crate::harness::spin_ms(5);
    own.stop().ctx("stop")?;
    // The TSC ticks on while the host preempts this vCPU; the thread CPU
    // clock does not (see StealWindow).
    let spun = (pmc_linux::system::thread_cpu_ns() - cpu0 + window.stolen_ns()) as f64;
    let ticks = own.read().ctx("read")? as f64;
    // TC counts only while this process runs: 5 ms of CPU at the TSC rate
    // (3% for the clocks' different accounting points).
    ensure!(
        ticks >= 5e6 * rate_min * 0.97 && ticks <= spun * rate_max * 1.03,
        "TC tsc counted {ticks} ticks over {spun} ns of CPU; the rate is {rate_min:.3}..{rate_max:.3} ticks/ns"
    );
    Ok(())
}

fn listing_covers_every_class() -> TestResult {
    let info = pmc::cpuinfo().ctx("cpuinfo")?;
    let mut total = 0;
    for c in &info.classes {
        let names = match pmc::event_names_of_class(&c.class) {
            Ok(n) => n,
            // tracefs unreadable for this user: the error must say so.
            Err(e) if c.class == pmc::Class::Tracepoint && e.is_environmental() => {
                ensure!(e.to_string().contains("tracefs"), "{e}");
                println!("{:<12} not listable here: {e}", c.class.to_string());
                continue;
            }
            Err(e) => return Err(format!("event names of {}: {e}", c.class).into()),
        };
        println!("{:<12} {:>5} events", c.class.to_string(), names.len());
        total += names.len();
        // Every name of a class, but a sample of the thousands of
        // tracepoints (every 50th).
        let step = if c.class == pmc::Class::Tracepoint {
            50
        } else {
            1
        };
        for n in names.iter().filter(|n| !n.contains('<')).step_by(step) {
            // Every listed name allocates and starts as written, or is
            // refused only for a documented environmental reason
            // (privilege, missing PMU or tracefs: Error::is_environmental).
            let started = Pmc::allocate(n, Mode::SC, Flags::empty(), Cpu::Id(0))
                .and_then(|mut p| p.start().and_then(|()| p.stop()));
            if let Err(e) = started {
                ensure!(
                    e.is_environmental(),
                    "listed name {n} ({}) failed: {e}",
                    c.class
                );
                println!("{:<12} {n}: {e}", c.class.to_string());
            }
        }
    }
    let classes: Vec<String> = info.classes.iter().map(|c| c.class.to_string()).collect();
    for must in ["software", "breakpoint", "tracepoint"] {
        ensure!(
            classes.iter().any(|c| c == must),
            "no {must} class in {classes:?}"
        );
    }
    let floor = if pmc::event_names_of_class(&pmc::Class::Tracepoint).is_ok() {
        50
    } else {
        10
    };
    ensure!(total > floor, "only {total} events listed");
    Ok(())
}
