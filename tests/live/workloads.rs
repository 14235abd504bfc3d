//! Workloads: this test binary re-executed with `PMC_LIVE_WORKLOAD=name`.
//! Each prints `ready`, waits for a line on stdin, does its work and exits.

use std::io::BufRead;
use std::process::Command;

use crate::harness::spin_ms;

/// The environment variable that selects a workload.
pub const ENV: &str = "PMC_LIVE_WORKLOAD";

fn ready_then_wait() {
    println!("ready");
    let mut line = String::new();
    let _ = std::io::stdin().lock().read_line(&mut line);
}

/// Time the hypervisor took from this machine's CPUs while they had work
/// (`steal` of `/proc/stat`, summed over CPUs), in ns. task-clock and
/// cpu-clock advance with the scheduler clock, which keeps running while a
/// vCPU is preempted by its host; getrusage and the thread CPU clock
/// subtract that time (CONFIG_PARAVIRT_TIME_ACCOUNTING). So a clock PMC
/// may exceed the CPU time a workload reports by what was stolen meanwhile,
/// never by more. `/proc/stat` counts in USER_HZ ticks.
pub struct StealWindow {
    start_ticks: u64,
}

impl StealWindow {
    fn ticks() -> u64 {
        let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
        // cpu  user nice system idle iowait irq softirq steal ...
        stat.lines()
            .find(|l| l.starts_with("cpu "))
            .and_then(|l| l.split_whitespace().nth(8))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    }

    fn tick_ns() -> u64 {
        use nix::unistd::{SysconfVar, sysconf};
        let hz = sysconf(SysconfVar::CLK_TCK).ok().flatten().unwrap_or(100);
        1_000_000_000 / u64::try_from(hz).unwrap_or(100).max(1)
    }

    /// Starts a window now.
    pub fn start() -> StealWindow {
        StealWindow {
            start_ticks: Self::ticks(),
        }
    }

    /// The most that can have been stolen since `start`: the ticks seen,
    /// plus one tick, since a tick boundary may fall inside the window.
    pub fn stolen_ns(&self) -> u64 {
        (Self::ticks().saturating_sub(self.start_ticks) + 1) * Self::tick_ns()
    }
}

/// Checks a clock PMC's `counted` ns against the CPU time the workload
/// itself measured: never below `cpu` by more than `tolerance`, never above
/// by more than `tolerance`, plus `also_counted` ns of work the PMC sees
/// and the workload's own measure does not (its exit), plus what the
/// hypervisor stole meanwhile (see [`StealWindow`]). Err names the figures.
pub fn clock_agrees_with_cpu_time(
    counted: u64,
    cpu: u64,
    tolerance: f64,
    also_counted: u64,
    window: &StealWindow,
) -> Result<(), String> {
    let stolen = window.stolen_ns();
    let low = cpu as f64 * (1.0 - tolerance);
    let high = cpu as f64 * (1.0 + tolerance) + (also_counted + stolen) as f64;
    if (counted as f64) < low || counted as f64 > high {
        return Err(format!(
            "counted {counted} ns vs {cpu} ns of CPU time: outside -{pct}% .. +{pct}% + {also_counted} ns + {stolen} ns the hypervisor may have stolen meanwhile",
            pct = tolerance * 100.0
        ));
    }
    Ok(())
}

/// What a workload measured of itself with getrusage(2), independently of
/// any PMC: CPU time (user + system) and minor faults of this process
/// (`own_*`) and of its waited-for children (`children_*`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Usage {
    pub own_cpu_ns: u64,
    /// The user-mode part of `own_cpu_ns` (what a user-only PMC sees).
    pub own_user_ns: u64,
    pub own_minflt: u64,
    pub children_cpu_ns: u64,
    pub children_minflt: u64,
}

impl Usage {
    /// The counters now.
    pub fn now() -> Usage {
        use nix::sys::resource::{UsageWho, getrusage};
        let take = |who| {
            let u = getrusage(who).expect("getrusage");
            let ns = |t: nix::sys::time::TimeVal| {
                t.tv_sec() as u64 * 1_000_000_000 + t.tv_usec() as u64 * 1_000
            };
            (
                ns(u.user_time()) + ns(u.system_time()),
                ns(u.user_time()),
                u.minor_page_faults() as u64,
            )
        };
        let (own_cpu_ns, own_user_ns, own_minflt) = take(UsageWho::RUSAGE_SELF);
        let (children_cpu_ns, _, children_minflt) = take(UsageWho::RUSAGE_CHILDREN);
        Usage {
            own_cpu_ns,
            own_user_ns,
            own_minflt,
            children_cpu_ns,
            children_minflt,
        }
    }

    /// What happened since `start`, as the line a workload prints last.
    pub fn line_since(start: Usage) -> String {
        let now = Usage::now();
        format!(
            "usage own_cpu_ns={} own_user_ns={} own_minflt={} children_cpu_ns={} children_minflt={}",
            now.own_cpu_ns - start.own_cpu_ns,
            now.own_user_ns - start.own_user_ns,
            now.own_minflt - start.own_minflt,
            now.children_cpu_ns - start.children_cpu_ns,
            now.children_minflt - start.children_minflt,
        )
    }

    /// Parses the `usage …` line out of a workload's output.
    pub fn parse(output: &str) -> Option<Usage> {
        let line = output.lines().find(|l| l.starts_with("usage "))?;
        let field = |name: &str| -> Option<u64> {
            line.split_whitespace()
                .find_map(|kv| kv.strip_prefix(name)?.strip_prefix('=')?.parse().ok())
        };
        Some(Usage {
            own_cpu_ns: field("own_cpu_ns")?,
            own_user_ns: field("own_user_ns")?,
            own_minflt: field("own_minflt")?,
            children_cpu_ns: field("children_cpu_ns")?,
            children_minflt: field("children_minflt")?,
        })
    }

    /// CPU time of this process and its children.
    pub fn tree_cpu_ns(&self) -> u64 {
        self.own_cpu_ns + self.children_cpu_ns
    }
}

fn arg(i: usize, default: u64) -> u64 {
    std::env::args()
        .nth(i)
        .and_then(|a| a.parse().ok())
        .unwrap_or(default)
}

/// A loop of a known number of iterations (for instruction counts).
#[inline(never)]
pub fn known_loop(iterations: u64) -> u64 {
    let mut x = 0u64;
    for i in 0..iterations {
        x = std::hint::black_box(x ^ i).wrapping_add(1);
    }
    x
}

/// Writes one byte to each of `pages` fresh pages. A zeroed allocation
/// above glibc's largest mmap threshold (32 MiB) is always fresh anonymous
/// memory, so each page faults on its first write. Returns a checksum so
/// the writes are not optimized away.
pub fn touch_fresh_pages(pages: usize) -> u64 {
    const PAGE: usize = 4096;
    // One fault per page needs transparent huge pages off for this
    // process: Debian's arm64 kernel (and others) default THP to `always`,
    // where a 64 MiB zeroed buffer takes 2 MiB pages and faults 512× less.
    nix::sys::prctl::set_thp_disable(true).expect("PR_SET_THP_DISABLE");
    let mut buf = vec![0u8; (pages * PAGE).max(64 << 20)];
    let buf = &mut buf[..pages * PAGE];
    for i in (0..buf.len()).step_by(PAGE) {
        buf[i] = 1;
    }
    std::hint::black_box(&buf)
        .iter()
        .step_by(PAGE)
        .map(|&b| u64::from(b))
        .sum()
}

/// Spins `ms` of CPU time in plain arithmetic: no calls inside the hot
/// loop, so a profile's top function is this one.
#[inline(never)]
pub fn hot_function_for_profiling(ms: u64) -> u64 {
    let end = pmc_linux::system::thread_cpu_ns() + ms * 1_000_000;
    let mut x = 1u64;
    loop {
        let mut i = 0u64;
        while i < 200_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            i += 1;
        }
        if pmc_linux::system::thread_cpu_ns() >= end {
            return x;
        }
    }
}

/// Runs the workload named in the environment, if any, and exits.
pub fn run_if_requested() {
    let Ok(name) = std::env::var(ENV) else {
        return;
    };
    match name.as_str() {
        // Spins `ms` of wall time.
        "spin" => {
            ready_then_wait();
            let start = Usage::now();
            std::hint::black_box(spin_ms(arg(1, 200)));
            println!("{}", Usage::line_since(start));
        }
        // Runs `known_loop(n)` (no ready/go handshake: for `perf stat`).
        "loop" => {
            std::hint::black_box(known_loop(arg(1, 100_000_000)));
        }
        // A single-threaded process bracketing its own work (no handshake):
        // the case where `Pmc` starts, reads and stops its counter directly.
        "self-bracket" => match self_bracket() {
            Ok(line) => println!("{line}"),
            Err(e) => {
                println!("failed: {e}");
                std::process::exit(1);
            }
        },
        // Like "loop" but with the handshake, for attaching first.
        "loop-handshake" => {
            ready_then_wait();
            let start = Usage::now();
            std::hint::black_box(known_loop(arg(1, 100_000_000)));
            println!("{}", Usage::line_since(start));
        }
        // Three threads, created before `ready`, each spinning `ms`.
        "threads3" => {
            let ms = arg(1, 300);
            let mut gates = Vec::new();
            let handles: Vec<_> = (0..3)
                .map(|_| {
                    let (gate, wait) = std::sync::mpsc::channel::<()>();
                    gates.push(gate);
                    std::thread::spawn(move || {
                        let _ = wait.recv();
                        std::hint::black_box(spin_ms(ms));
                    })
                })
                .collect();
            ready_then_wait();
            let start = Usage::now();
            for g in gates {
                let _ = g.send(());
            }
            for h in handles {
                let _ = h.join();
            }
            println!("{}", Usage::line_since(start));
        }
        // Spawns a grandchild that spins `ms`, and waits for it.
        "fork-spin" => {
            let ms = arg(1, 300);
            ready_then_wait();
            let start = Usage::now();
            let exe = std::env::current_exe().expect("current_exe");
            let status = Command::new(exe)
                .env(ENV, "spin-now")
                .arg(ms.to_string())
                .status()
                .expect("spawn grandchild");
            assert!(status.success());
            println!("{}", Usage::line_since(start));
        }
        // `rounds` times: touch 50 fresh pages, then sleep 1 ms (a context
        // switch per round); then 50 more pages in the slice that exit ends.
        "touch-sleep" => {
            let rounds = arg(1, 20);
            ready_then_wait();
            let start = Usage::now();
            for _ in 0..rounds {
                std::hint::black_box(touch_fresh_pages(50));
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            std::hint::black_box(touch_fresh_pages(50));
            println!("{}", Usage::line_since(start));
        }
        // Runs a grandchild that touches `child` fresh pages and exits, then
        // touches `own` pages itself.
        "fork-touch" => {
            let (child, own) = (arg(1, 2000), arg(2, 6000));
            ready_then_wait();
            let start = Usage::now();
            let exe = std::env::current_exe().expect("current_exe");
            let status = Command::new(exe)
                .env(ENV, "touch")
                .arg(child.to_string())
                .status()
                .expect("spawn grandchild");
            assert!(status.success());
            std::hint::black_box(touch_fresh_pages(own as usize));
            println!("{}", Usage::line_since(start));
        }
        // Runs `true` (the system's, by its absolute path) `n` times, one
        // after the other: short-lived programs, gone before a drain.
        "exec-true" => {
            let n = arg(1, 50);
            ready_then_wait();
            let start = Usage::now();
            for _ in 0..n {
                let status = Command::new(system_true()).status().expect("spawn true");
                assert!(status.success());
            }
            println!("{}", Usage::line_since(start));
        }
        // Touches `n` fresh pages (no handshake: for `perf stat`).
        "touch" => {
            std::hint::black_box(touch_fresh_pages(arg(1, 1000) as usize));
        }
        // Like "touch" with the handshake.
        "touch-handshake" => {
            ready_then_wait();
            let start = Usage::now();
            std::hint::black_box(touch_fresh_pages(arg(1, 1000) as usize));
            println!("{}", Usage::line_since(start));
        }
        // A profile target: `hot_function_for_profiling` for `ms` of CPU.
        "hot" => {
            std::hint::black_box(hot_function_for_profiling(arg(1, 300)));
        }
        // A profile target until its standard input closes, at most `ms`
        // of CPU: `hot_function_for_profiling` in 50 ms slices, for a view
        // whose test stops it once it has seen enough (a view's first
        // symbol lookup can take seconds on a loaded machine).
        "hot-until-eof" => {
            use std::sync::atomic::{AtomicBool, Ordering};
            static EOF: AtomicBool = AtomicBool::new(false);
            std::thread::spawn(|| {
                let _ = std::io::copy(&mut std::io::stdin(), &mut std::io::sink());
                EOF.store(true, Ordering::SeqCst);
            });
            for _ in 0..arg(1, 60_000).div_ceil(50) {
                if EOF.load(Ordering::SeqCst) {
                    break;
                }
                std::hint::black_box(hot_function_for_profiling(50));
            }
        }
        // Spins `ms` at once (no handshake).
        "spin-now" => {
            std::hint::black_box(spin_ms(arg(1, 200)));
        }
        other => {
            eprintln!("unknown workload {other}");
            std::process::exit(2);
        }
    }
    std::process::exit(0);
}

/// start/read/stop/write on a PMC attached to this (single-threaded)
/// process; returns a summary line or what went wrong.
fn self_bracket() -> Result<String, String> {
    use pmc::{Cpu, Flags, Mode, Pmc};
    let e = |what: &str| {
        let what = what.to_string();
        move |err: pmc::Error| format!("{what}: {err}")
    };
    let mut pmc = Pmc::allocate("page-faults,usr", Mode::TC, Flags::empty(), Cpu::Any)
        .map_err(e("allocate"))?;
    // What threads_of asks before listing /proc: this process has one
    // thread, so unshare(CLONE_THREAD) changes nothing and succeeds.
    if !pmc_linux::system::caller_is_single_threaded() {
        return Err("a single-threaded process was not seen as one".into());
    }
    pmc.start().map_err(e("start"))?;
    if pmc.handles() != 1 {
        return Err(format!("{} fds for one thread", pmc.handles()));
    }
    touch_fresh_pages(1000);
    let running = pmc.read().map_err(e("read running"))?;
    pmc.stop().map_err(e("stop"))?;
    pmc.stop().map_err(e("second stop"))?;
    let stopped = pmc.read().map_err(e("read stopped"))?;
    touch_fresh_pages(1000);
    let still = pmc.read().map_err(e("read later"))?;
    if running < 1000 || stopped < running || still != stopped {
        return Err(format!(
            "running {running}, stopped {stopped}, later {still} (1000 pages touched)"
        ));
    }
    pmc.start().map_err(e("restart"))?;
    pmc.start().map_err(e("second start"))?;
    touch_fresh_pages(500);
    pmc.stop().map_err(e("stop again"))?;
    let resumed = pmc.read().map_err(e("read resumed"))?;
    // 500 pages while running; the 1000 touched while stopped must not count.
    if !(stopped + 500..stopped + 700).contains(&resumed) {
        return Err(format!(
            "{resumed} after 500 more pages on top of {stopped} (1000 touched while stopped)"
        ));
    }
    pmc.write(7).map_err(e("write"))?;
    pmc.start().map_err(e("start after write"))?;
    touch_fresh_pages(100);
    pmc.stop().map_err(e("stop after write"))?;
    let written = pmc.read().map_err(e("read after write"))?;
    if !(107..resumed).contains(&written) {
        return Err(format!("{written} after write(7) and 100 pages"));
    }
    // The direct stop only disables: the value at stop is read out of the
    // disabled counter when first asked for, here after 1000 more pages.
    pmc.start().map_err(e("start, read late"))?;
    touch_fresh_pages(200);
    pmc.stop().map_err(e("stop, read late"))?;
    touch_fresh_pages(1000);
    let late = pmc.read().map_err(e("read late"))?;
    if !(written + 200..written + 400).contains(&late) {
        return Err(format!(
            "{late} after 200 pages on top of {written}, read after 1000 more while stopped"
        ));
    }
    // A write straight after the stop starts from the value at stop.
    pmc.start().map_err(e("start, write late"))?;
    touch_fresh_pages(100);
    pmc.stop().map_err(e("stop, write late"))?;
    pmc.write(5).map_err(e("write late"))?;
    pmc.start().map_err(e("start after write late"))?;
    touch_fresh_pages(100);
    pmc.stop().map_err(e("stop after write late"))?;
    let rewritten = pmc.read().map_err(e("read after write late"))?;
    if !(105..150).contains(&rewritten) {
        return Err(format!("{rewritten} after write(5) and 100 pages"));
    }
    Ok(format!(
        "running {running} stopped {stopped} resumed {resumed} written {written} late {late} rewritten {rewritten}"
    ))
}

/// The system's `true`, by the path the kernel names its image with
/// (`/bin` is a link to `/usr/bin` on merged-/usr systems).
pub fn system_true() -> std::path::PathBuf {
    ["/usr/bin/true", "/bin/true"]
        .iter()
        .find_map(|p| std::fs::canonicalize(p).ok())
        .expect("a true(1) in /usr/bin or /bin")
}
