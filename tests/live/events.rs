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
            // perf gives the TSC's rate (an outside reference).
            vec![
                R::Pmu("msr".into()),
                R::Paranoid(0),
                R::Program("perf".into()),
            ],
            msr_tsc_counts,
        ),
        test(
            "events::listing_covers_every_class",
            vec![R::PerfEvent],
            listing_covers_every_class,
        ),
        // SC on CPU 0: CPU-wide counting (paranoid <= 0 or CAP_PERFMON).
        test(
            "events::every_listed_name_opens_on_cpu0",
            vec![R::Paranoid(0)],
            || every_listed_name_opens(false),
        ),
        test(
            "events::every_50th_listed_tracepoint_opens_on_cpu0",
            vec![R::Paranoid(0), R::TracefsReadable],
            || every_listed_name_opens(true),
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

/// The TSC's rate in ticks per ns, by perf rather than by pmc: `perf stat
/// -e msr/tsc/,task-clock` of a copy of this binary spinning 50 ms. Both
/// count only while it runs and both go on while the host preempts the
/// vCPU, so their ratio is the rate however loaded the machine is.
fn tsc_rate_by_perf() -> Result<f64, libtest_mimic::Failed> {
    let exe = std::env::current_exe().ctx("current_exe")?;
    let out = std::process::Command::new("perf")
        .args(["stat", "-x,", "-e", "msr/tsc/,task-clock", "--"])
        .arg(&exe)
        .arg("50")
        .env(crate::workloads::ENV, "spin-now")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .output()
        .ctx("perf stat")?;
    let text = String::from_utf8_lossy(&out.stderr);
    let value = |event: &str| {
        text.lines()
            .find(|l| l.split(',').nth(2).is_some_and(|e| e.starts_with(event)))
            .and_then(|l| l.split(',').next()?.trim().parse::<f64>().ok())
    };
    match (value("msr/tsc/"), value("task-clock")) {
        // task-clock in msec.
        (Some(ticks), Some(ms)) if ms > 0.0 => Ok(ticks / (ms * 1e6)),
        _ => Err(format!("perf stat gave no msr/tsc/ and task-clock: {text}").into()),
    }
}

fn msr_tsc_counts() -> TestResult {
    // Allocated before perf is asked for the rate: where paranoid forbids
    // the msr PMU, this allocation says so (EACCES, the sysctl), not perf.
    let mut per_cpu = pmc::Pmc::builder("tsc")
        .per_cpu()
        .build()
        .ctx("allocate tsc")?;
    let rate = tsc_rate_by_perf()?;
    println!("perf's TSC rate: {rate:.4} ticks/ns");
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
    // A CPU's TSC ticks at perf's rate through the whole window: at least
    // the 20 ms slept, at most the wall time from before start to after
    // stop (3% for where each clock is read).
    for (cpu, t) in &each {
        let t = *t as f64;
        ensure!(
            t >= 20e6 * rate * 0.97 && t <= wall * rate * 1.03,
            "CPU {cpu}: {t} TSC ticks over a 20 ms sleep ({wall} ns wall) at perf's {rate:.4} ticks/ns"
        );
    }
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
    // TC counts only while this process runs: 5 ms of CPU at perf's rate
    // (3% for the clocks' different accounting points).
    ensure!(
        ticks >= 5e6 * rate * 0.97 && ticks <= spun * rate * 1.03,
        "TC tsc counted {ticks} ticks over {spun} ns of CPU; perf's rate is {rate:.4} ticks/ns"
    );
    Ok(())
}

fn listing_covers_every_class() -> TestResult {
    let env = crate::machine::environment();
    let info = pmc::cpuinfo().ctx("cpuinfo")?;
    let mut total = 0;
    for c in &info.classes {
        let names = match pmc::event_names_of_class(&c.class) {
            Ok(n) => n,
            // Tracepoints are listed from tracefs: where the gate's own
            // look finds it unreadable for this user, the error says so.
            Err(e)
                if c.class == pmc::Class::Tracepoint
                    && !matches!(env.tracefs, pmc::probe::Tracefs::Readable(_)) =>
            {
                ensure!(e.to_string().contains("tracefs"), "{e}");
                println!("{:<12} not listable here: {e}", c.class.to_string());
                continue;
            }
            Err(e) => return Err(format!("event names of {}: {e}", c.class).into()),
        };
        println!("{:<12} {:>5} events", c.class.to_string(), names.len());
        total += names.len();
    }
    let classes: Vec<String> = info.classes.iter().map(|c| c.class.to_string()).collect();
    for must in ["software", "breakpoint", "tracepoint"] {
        ensure!(
            classes.iter().any(|c| c == must),
            "no {must} class in {classes:?}"
        );
    }
    // A class per PMU the gate found in sysfs beyond the built-in ones.
    for pmu in env.pmus.iter().filter(|p| *p == "msr" || *p == "uprobe") {
        ensure!(
            classes.iter().any(|c| c.ends_with(pmu.as_str())),
            "sysfs lists the {pmu} PMU, cpuinfo no class for it: {classes:?}"
        );
    }
    let floor = if matches!(env.tracefs, pmc::probe::Tracefs::Readable(_)) {
        50
    } else {
        10
    };
    ensure!(total > floor, "only {total} events listed");
    Ok(())
}

/// Every listed name (of tracepoints, every 50th; the others without
/// them) allocates as SC on CPU 0 and starts as written. Which names the
/// machine cannot open is decided without asking pmc: a generic hardware
/// or cache name that `perf stat` reports `<not supported>` must be
/// refused; anything else must open, whatever error pmc calls
/// environmental.
fn every_listed_name_opens(tracepoints: bool) -> TestResult {
    let info = pmc::cpuinfo().ctx("cpuinfo")?;
    let mut tried = 0;
    for c in info
        .classes
        .iter()
        .filter(|c| (c.class == pmc::Class::Tracepoint) == tracepoints)
    {
        let names =
            pmc::event_names_of_class(&c.class).ctx(&format!("event names of {}", c.class))?;
        let step = if tracepoints { 50 } else { 1 };
        for n in names.iter().filter(|n| !n.contains('<')).step_by(step) {
            tried += 1;
            let refused_by_perf = match c.class {
                pmc::Class::Hardware | pmc::Class::Cache => perf_says_unsupported(n),
                _ => None,
            };
            let started = Pmc::allocate(n, Mode::SC, Flags::empty(), Cpu::Id(0))
                .and_then(|mut p| p.start().and_then(|()| p.stop()));
            match (started, refused_by_perf) {
                (Ok(()), None) => {}
                (Err(e), Some(perf)) => {
                    println!("{:<12} {n}: {e} (perf: {perf})", c.class.to_string())
                }
                (Ok(()), Some(perf)) => {
                    return Err(format!("{n} ({}) opened, but perf says {perf}", c.class).into());
                }
                (Err(e), None) => {
                    return Err(format!("listed name {n} ({}) failed: {e}", c.class).into());
                }
            }
        }
    }
    println!("{tried} names tried");
    ensure!(tried > 0, "no listed name to try");
    Ok(())
}

/// `perf stat -e NAME:u true`'s own answer, when it says the event is
/// `<not supported>` here; `None` when it counted it or perf is absent.
fn perf_says_unsupported(name: &str) -> Option<String> {
    let out = std::process::Command::new("perf")
        .args(["stat", "-x,", "-e", &format!("{name}:u"), "true"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stderr);
    text.lines()
        .find(|l| l.contains("<not supported>"))
        .map(str::to_string)
}
