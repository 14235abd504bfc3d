//! The semantic suite of `Pmc` (`src/backend/conformance/suite.rs`, the
//! scenarios the simulator and the FreeBSD backend run as unit tests) on
//! Linux perf_event, live: `conformance::linux::<scenario>`.
//!
//! The event is `task-clock,usr` (a software event: paranoid ≤ 2, no PMU;
//! it counts the time its task is on a CPU, kernel time too), a unit of
//! work is 1 µs of CPU time of this thread and of every other process,
//! and counts are checked as at least the work done and what the
//! kernel's own task-clock of each target (an fd of the subject's) grew
//! by within the counting, and at most the wall time per target. Other processes are `sh` nodes, idle but when they work, that
//! start children of their own on request (process trees); open failures
//! are a seccomp filter on a thread. A
//! scenario that needs what this backend cannot offer (exact counts, CPU
//! hotplug, …) is `ignored, n/a: …` as `NOT_APPLICABLE` lists it (checked
//! against the capabilities by `every_scenario_is_listed_once…`); the
//! others are gated by the machine's requirements like every live test.

use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, OnceLock};

use libtest_mimic::{Completion, Failed, Trial};
use pmc::backend::{Backend, BackendKind};
use pmc::probe::{Environment, Requirement};
use pmc::{Cpu, Error, Flags, Mode, Owner, Pmc, Reason, State};

use crate::harness::{FORCE_ENV, Forced, Gate, gate};

#[path = "../../src/backend/conformance/suite.rs"]
mod suite;

use suite::{Cap, Subject};

fn linux_owner() -> &'static Owner {
    static OWNER: OnceLock<Owner> = OnceLock::new();
    OWNER.get_or_init(|| {
        Owner::new(Backend::new(BackendKind::Linux).expect("the live suite runs on Linux"))
    })
}

/// perf_event on this machine.
struct LinuxSubject {
    /// The processes `spawn` started (children of this one).
    children: Mutex<Vec<Child>>,
    /// Every node (`spawn`, `spawn_child`) that has not exited: its pid
    /// and command FIFO.
    nodes: Mutex<Vec<(u32, std::path::PathBuf)>>,
    /// The task-clocks `cpu_time` opened, by pid.
    clocks: Mutex<Vec<(u32, pmc_linux::event::Event)>>,
    /// The files made in `dir` (FIFOs, pid files, stop files), for names.
    files: std::sync::atomic::AtomicUsize,
    /// Where the nodes' FIFOs and pid files are.
    dir: OnceLock<tempfile::TempDir>,
}

/// A node: writes its pid, then runs each line written to its FIFO (held
/// open read-write, so it never sees an end) — idle, in `read`, between.
const NODE: &str = r#"echo $$ > "$1"; exec 3<>"$2"; while read -r line <&3; do eval "$line"; done"#;

impl LinuxSubject {
    fn new() -> LinuxSubject {
        LinuxSubject {
            children: Mutex::new(Vec::new()),
            nodes: Mutex::new(Vec::new()),
            clocks: Mutex::new(Vec::new()),
            files: std::sync::atomic::AtomicUsize::new(0),
            dir: OnceLock::new(),
        }
    }

    /// Has node `pid` run the shell line `line`.
    fn tell(&self, pid: u32, line: &str) {
        use std::io::Write;
        let fifo = self
            .nodes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .find(|(p, _)| *p == pid)
            .map(|(_, f)| f.clone())
            .unwrap_or_else(|| panic!("{pid} is not a node of this test"));
        std::fs::OpenOptions::new()
            .write(true)
            .open(&fifo)
            .and_then(|mut f| f.write_all(format!("{line}\n").as_bytes()))
            .unwrap_or_else(|e| panic!("write to {}: {e}", fifo.display()));
    }

    /// A fresh path in the test's directory.
    fn fresh_path(&self, what: &str) -> std::path::PathBuf {
        let dir = self.dir.get_or_init(|| {
            tempfile::tempdir().unwrap_or_else(|e| panic!("a directory for the FIFOs: {e}"))
        });
        let n = self
            .files
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        dir.path().join(format!("{what}{n}"))
    }

    /// A fresh FIFO and pid-file path for the next node.
    fn node_paths(&self) -> (std::path::PathBuf, std::path::PathBuf) {
        let base = self.fresh_path("node");
        let fifo = base.with_extension("fifo");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU)
            .unwrap_or_else(|e| panic!("mkfifo {}: {e}", fifo.display()));
        (fifo, base.with_extension("pid"))
    }

    /// Has node `pid` spin until its own CPU clock grew by `ns`, then go
    /// back to waiting for a line: a loop of shell builtins (`[ -e ]`
    /// stats a stop file, which this process creates once the clock
    /// grew).
    fn spin_node(&self, pid: u32, ns: u64) {
        let stop = self.fresh_path("stop");
        let start = cpu_ns_of(pid);
        self.tell(
            pid,
            &format!("until [ -e '{}' ]; do :; done", stop.display()),
        );
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        let until = |done: &dyn Fn() -> bool, what: &str| {
            while !done() {
                assert!(
                    std::time::Instant::now() < deadline,
                    "node {pid} {what} in 10 s"
                );
                std::thread::sleep(std::time::Duration::from_micros(20));
            }
        };
        until(&|| cpu_ns_of(pid) - start >= ns, "did not run its work");
        std::fs::File::create(&stop).unwrap_or_else(|e| panic!("create {}: {e}", stop.display()));
        until(
            &|| process_state(pid) == Some('S'),
            "did not go back to its read",
        );
    }

    /// The pid a node wrote into `pid_file`, waiting up to 10 s for it.
    fn node_pid(pid_file: &std::path::Path) -> u32 {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        loop {
            if let Some(pid) = std::fs::read_to_string(pid_file)
                .ok()
                .and_then(|t| t.trim().parse::<u32>().ok())
            {
                return pid;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "no node wrote {} in 10 s",
                pid_file.display()
            );
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
    }
}

impl Drop for LinuxSubject {
    fn drop(&mut self) {
        // The nodes below the children first (their parents reap them),
        // then the children, which this process reaps.
        let nodes = self.nodes.get_mut().unwrap_or_else(|e| e.into_inner());
        for (pid, _) in nodes.iter().rev() {
            if let Ok(pid) = i32::try_from(*pid) {
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(pid),
                    nix::sys::signal::Signal::SIGKILL,
                );
            }
        }
        let children = self.children.get_mut().unwrap_or_else(|e| e.into_inner());
        for child in children.iter_mut() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Subject for LinuxSubject {
    fn owner(&self) -> &Owner {
        linux_owner()
    }

    /// User-mode CPU time: `,usr` keeps it countable at paranoid 2.
    fn event(&self) -> &'static str {
        "task-clock,usr"
    }

    /// task-clock counts nanoseconds; a unit of work is 1 µs.
    fn per_unit(&self) -> u64 {
        1000
    }

    fn has(&self, cap: Cap) -> bool {
        match cap {
            Cap::OtherProcesses | Cap::ProcessExit | Cap::SystemMode | Cap::Sampling => true,
            Cap::LogFlags | Cap::ProcessTrees | Cap::InjectedOpenFailure => true,
            // A real kernel counts at least the work, plus whatever else
            // the process does.
            Cap::ExactCounts => false,
            // Not without offlining CPUs (global state), keeping a software
            // counter off the CPU, or a PMU (rdpmc of task-clock is 0).
            Cap::CpuHotplug | Cap::Starvation | Cap::DirectRead => false,
        }
    }

    /// This thread spins for `units` µs of its CPU time, then each node in
    /// turn for as much of its own.
    fn work(&self, units: u64) {
        let end = pmc_linux::system::thread_cpu_ns() + units * 1000;
        let mut x = 0u64;
        while pmc_linux::system::thread_cpu_ns() < end {
            for i in 0..100u64 {
                x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(i));
            }
        }
        let nodes: Vec<u32> = self
            .nodes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .map(|(pid, _)| *pid)
            .collect();
        for pid in nodes {
            self.spin_node(pid, units * 1000);
        }
    }

    /// The kernel's own task-clock of the work's task, on an fd this
    /// subject opens itself (pmc_linux, not pmc) at the first call: the
    /// caller's is this thread (the work's, one of those a PMC on this
    /// process counts), another process's its thread (a node has one).
    /// Not the POSIX CPU clocks: they account a task from the scheduler's
    /// pick, task-clock from perf's switch-in, and over a node's wake-ups
    /// and slices the clock ran ahead of the PMC's task-clock (4.5 µs of
    /// 3.5 ms in a run of `exited_targets_keep_their_counts`).
    fn cpu_time(&self, pid: u32) -> Option<u64> {
        use pmc_linux::attr::{Attr, EventConfig, Software};
        use pmc_linux::event::{Event, OpenFlags, Target};
        let mut clocks = self.clocks.lock().unwrap_or_else(|e| e.into_inner());
        if !clocks.iter().any(|(p, _)| *p == pid) {
            let tid = if pid == std::process::id() {
                pmc_linux::system::gettid()
            } else {
                i32::try_from(pid).expect("pid fits i32")
            };
            let attr = Attr::new(EventConfig::Software(Software::TaskClock))
                .exclude_kernel(true)
                .exclude_hv(true);
            let clock = Event::open(&attr, Target::task(tid), None, OpenFlags::empty())
                .unwrap_or_else(|e| panic!("a task-clock of {pid} (thread {tid}): {e}"));
            clocks.push((pid, clock));
        }
        let (_, clock) = clocks
            .iter()
            .find(|(p, _)| *p == pid)
            .expect("opened above");
        Some(
            clock
                .read()
                .unwrap_or_else(|e| panic!("read the task-clock of {pid}: {e}"))
                .value,
        )
    }

    /// Wall time (CLOCK_MONOTONIC) and what the trial's other threads ran:
    /// the work's thread's task-clock cannot run faster than the wall clock
    /// (it runs on through steal time, which the CPU clocks do not count,
    /// so they are no bound for it; the `sleep` children count nothing),
    /// and a PMC on this process counts its other threads too — pmc's log
    /// drain (10 ms) and Linux collector (5 ms) threads once a sampling PMC
    /// logs: 15-95 µs over a 3-10 ms window in the privilege matrix, which
    /// a bound of the wall time alone failed on.
    fn ceiling(&self) -> Option<u64> {
        Some(monotonic_ns() + other_threads_cpu_ns())
    }

    fn caller(&self) -> u32 {
        std::process::id()
    }

    /// Above `kernel.pid_max`: no process can have it.
    fn absent_pid(&self) -> u32 {
        std::fs::read_to_string("/proc/sys/kernel/pid_max")
            .ok()
            .and_then(|s| s.trim().parse::<u32>().ok())
            .map_or(u32::MAX / 2, |max| max + 1)
    }

    fn spawn(&self) -> u32 {
        let (fifo, pid_file) = self.node_paths();
        let child = Command::new("sh")
            .args(["-c", NODE, "node"])
            .arg(&pid_file)
            .arg(&fifo)
            .stdin(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("spawn a node `sh`: {e}"));
        let pid = child.id();
        assert_eq!(Self::node_pid(&pid_file), pid, "the node is the child");
        self.children
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(child);
        self.nodes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((pid, fifo));
        pid
    }

    /// The node `parent` starts a node in the background: its child.
    fn spawn_child(&self, parent: u32) -> u32 {
        let (fifo, pid_file) = self.node_paths();
        self.tell(
            parent,
            &format!(
                "sh -c '{NODE}' node '{}' '{}' &",
                pid_file.display(),
                fifo.display()
            ),
        );
        let pid = Self::node_pid(&pid_file);
        self.nodes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((pid, fifo));
        pid
    }

    /// `body` on a thread of its own, whose perf_event_open a seccomp
    /// filter makes fail with `errno` (seccomp(2): without TSYNC a filter
    /// is the calling thread's, and goes with it).
    fn with_refused_opens(&self, errno: i32, body: &(dyn Fn() + Sync)) {
        std::thread::scope(|scope| {
            let worker = scope.spawn(|| {
                refuse_perf_event_open_on_this_thread(errno);
                body();
            });
            if let Err(panic) = worker.join() {
                std::panic::resume_unwind(panic);
            }
        });
    }

    fn exit(&self, pid: u32) {
        let mut children = self.children.lock().unwrap_or_else(|e| e.into_inner());
        let i = children
            .iter()
            .position(|c| c.id() == pid)
            .unwrap_or_else(|| panic!("{pid} is not a child of this test"));
        let mut child = children.remove(i);
        child.kill().unwrap_or_else(|e| panic!("kill {pid}: {e}"));
        child.wait().unwrap_or_else(|e| panic!("wait {pid}: {e}"));
        self.nodes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|(p, _)| *p != pid);
    }
}

/// Installs a seccomp filter on the calling thread only: perf_event_open
/// fails with `errno`, every other call is allowed.
fn refuse_perf_event_open_on_this_thread(errno: i32) {
    use seccompiler::{BpfProgram, SeccompAction, SeccompFilter};
    let arch = std::env::consts::ARCH
        .try_into()
        .unwrap_or_else(|e| panic!("seccomp arch: {e:?}"));
    let filter = SeccompFilter::new(
        [(libc::SYS_perf_event_open, vec![])].into_iter().collect(),
        SeccompAction::Allow,
        SeccompAction::Errno(errno as u32),
        arch,
    )
    .unwrap_or_else(|e| panic!("seccomp filter: {e}"));
    let program: BpfProgram = filter.try_into().unwrap_or_else(|e| panic!("bpf: {e:?}"));
    seccompiler::apply_filter(&program).unwrap_or_else(|e| panic!("apply seccomp: {e}"));
}

/// The CPU time of this process's threads but the caller's.
fn other_threads_cpu_ns() -> u64 {
    use nix::time::{ClockId, clock_gettime};
    let ns = |clock| {
        let t = clock_gettime(clock).unwrap_or_else(|e| panic!("{clock:?}: {e}"));
        u64::try_from(t.tv_sec()).unwrap_or(0) * 1_000_000_000
            + u64::try_from(t.tv_nsec()).unwrap_or(0)
    };
    // The thread's clock first: the process's, read after, holds it all.
    let own = ns(ClockId::CLOCK_THREAD_CPUTIME_ID);
    ns(ClockId::CLOCK_PROCESS_CPUTIME_ID).saturating_sub(own)
}

/// CLOCK_MONOTONIC in ns, as the kernel gives it.
fn monotonic_ns() -> u64 {
    use nix::time::{ClockId, clock_gettime};
    let t =
        clock_gettime(ClockId::CLOCK_MONOTONIC).unwrap_or_else(|e| panic!("CLOCK_MONOTONIC: {e}"));
    u64::try_from(t.tv_sec()).unwrap_or(0) * 1_000_000_000 + u64::try_from(t.tv_nsec()).unwrap_or(0)
}

/// What the machine must allow for a scenario: user-mode software events
/// of own and child processes (paranoid ≤ 2), context-switch records for
/// the `LOG_PROC*` flags (kernel samples: ≤ 1, and the
/// `sched:sched_process_exit` tracepoint of LOG_PROCEXIT with DESCENDANTS:
/// tracefs), CPU-wide counting for system modes (≤ 0) — except where every
/// open is refused by the injected filter (`InjectedOpenFailure`): the
/// seccomp filter answers before the kernel's paranoid check, so a system
/// mode's allocate fails with the injected errno at any level (the matrix's
/// forced runs showed it passing at 1 and 2 as nobody).
fn requirements(needs: &[Cap]) -> Vec<Requirement> {
    let mut r = vec![Requirement::Paranoid(2)];
    if needs.contains(&Cap::LogFlags) {
        r.push(Requirement::Paranoid(1));
        r.push(Requirement::TracefsReadable);
        // Process-mode LOG_PROCCSW: PERF_SAMPLE_READ on inherited events.
        r.push(Requirement::Kernel(6, 12));
    }
    if needs.contains(&Cap::SystemMode) && !needs.contains(&Cap::InjectedOpenFailure) {
        r.push(Requirement::Paranoid(0));
    }
    r
}

/// The online CPUs as sysfs lists them (`0-3,6`): the kernel's own
/// answer, not the crate's.
fn sysfs_online_cpus() -> Vec<u32> {
    let text = std::fs::read_to_string("/sys/devices/system/cpu/online")
        .unwrap_or_else(|e| panic!("read /sys/devices/system/cpu/online: {e}"));
    let mut cpus = Vec::new();
    for part in text.trim().split(',').filter(|p| !p.is_empty()) {
        let (lo, hi) = part.split_once('-').unwrap_or((part, part));
        let bound = |s: &str| {
            s.parse::<u32>()
                .unwrap_or_else(|e| panic!("cpu list {text:?}: {e}"))
        };
        cpus.extend(bound(lo)..=bound(hi));
    }
    cpus
}

/// `PerCpu`, pmcstat's `-s` (pmcstat.c clones a system-mode event onto
/// every CPU of its CPU mask, which defaults to all the CPUs), on
/// `cpu-clock`: a CPU-wide cpu-clock counts the wall time it is enabled
/// (perf's `cpu_clock_event_*`), busy or idle.
fn per_cpu_is_one_system_pmc_per_online_cpu() {
    // hwpmc_mod.c pmc_do_op_pmcallocate: "Virtual PMCs should only ask
    // for a default CPU" — a process mode on a CPU is EINVAL.
    for mode in [Mode::TC, Mode::TS] {
        let e = Pmc::allocate("cpu-clock", mode, Flags::empty(), Cpu::Id(0)).unwrap_err();
        assert_eq!(e.errno(), libc::EINVAL, "{mode}: {e}");
    }
    let online = sysfs_online_cpus();
    let fds_before = perf_event_fds();
    let mut all = Pmc::builder("cpu-clock")
        .per_cpu()
        .build()
        .unwrap_or_else(|e| panic!("allocate: {e}"));
    // hwpmc_mod.c pmc_do_op_pmcallocate configures a system PMC at once:
    // each CPU's is open from allocate.
    let opened = perf_event_fds() - fds_before;
    let handles: Vec<usize> = all.pmcs().map(|(_, p)| p.handles()).collect();
    assert!(
        handles.iter().all(|&h| h >= 1) && handles.iter().sum::<usize>() == opened,
        "handles {handles:?} against {opened} perf_event fds opened"
    );
    let listed: Vec<(u32, Cpu, Mode)> = all.pmcs().map(|(c, p)| (c, p.cpu(), p.mode())).collect();
    let expected: Vec<(u32, Cpu, Mode)> =
        online.iter().map(|&c| (c, Cpu::Id(c), Mode::SC)).collect();
    assert_eq!(listed, expected, "one SC PMC per online CPU, in order");
    // pmcstat.c: a counting event has no count (-1: no pmc_set, pm_initial
    // stays 0); a sampling one DEFAULT_SAMPLE_COUNT (pmcstat.h, 65536).
    let counts: Vec<u64> = all.pmcs().map(|(_, p)| p.reload_count()).collect();
    assert_eq!(counts, vec![0; online.len()], "SC: no initial value");
    let mut sampling = Pmc::builder("cpu-clock")
        .sampling(pmc::DEFAULT_RELOAD_COUNT)
        .per_cpu()
        .build()
        .unwrap_or_else(|e| panic!("allocate SS: {e}"));
    let counts: Vec<u64> = sampling.pmcs().map(|(_, p)| p.reload_count()).collect();
    assert_eq!(counts, vec![65_536; online.len()], "SS: pmcstat's default");
    drop(sampling);
    let t0 = std::time::Instant::now();
    all.start().unwrap_or_else(|e| panic!("start: {e}"));
    std::thread::sleep(std::time::Duration::from_millis(50));
    all.stop().unwrap_or_else(|e| panic!("stop: {e}"));
    let wall = t0.elapsed().as_nanos() as u64;
    let each = all.read_each().unwrap_or_else(|e| panic!("read_each: {e}"));
    let cpus: Vec<u32> = each.iter().map(|(c, _)| *c).collect();
    assert_eq!(cpus, online, "read_each lists every online CPU once");
    assert!(
        each.iter().all(|(_, ns)| (48_500_000..=wall).contains(ns)),
        "each CPU's clock ran for the 50 ms slept (less 3 %) and at most {wall} ns: {each:?}"
    );
    // pmc_stop: a stopped PMC's value stays.
    std::thread::sleep(std::time::Duration::from_millis(20));
    assert_eq!(
        all.read_each().unwrap_or_else(|e| panic!("read_each: {e}")),
        each,
        "stopped counters do not move"
    );
    let sum = each.iter().map(|(_, ns)| ns).sum::<u64>();
    assert_eq!(
        all.read().unwrap_or_else(|e| panic!("read: {e}")),
        sum,
        "read sums the CPUs"
    );
    let detailed = all
        .read_detailed()
        .unwrap_or_else(|e| panic!("read_detailed: {e}"));
    assert_eq!(detailed.value, sum, "read_detailed's value is read's");
    assert!(
        detailed.time_enabled >= 48_500_000 * online.len() as u64
            && detailed.time_enabled <= wall * online.len() as u64,
        "enabled times summed over {} CPUs: {detailed:?}",
        online.len()
    );
    let last = *online.last().expect("a CPU is online");
    let mut one = Pmc::builder("cpu-clock")
        .per_cpu()
        .cpus(&[last])
        .build()
        .unwrap_or_else(|e| panic!("per_cpu().cpus: {e}"));
    let listed: Vec<(u32, Cpu)> = one.pmcs().map(|(c, p)| (c, p.cpu())).collect();
    assert_eq!(
        listed,
        vec![(last, Cpu::Id(last))],
        "only the CPU asked for"
    );
}

/// This process's perf_event file descriptors, as the kernel lists them
/// (other fds come and go with caches, e.g. a kept `/proc/self/task`).
fn perf_event_fds() -> usize {
    std::fs::read_dir("/proc/self/fd")
        .unwrap_or_else(|e| panic!("/proc/self/fd: {e}"))
        .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
        .filter(|link| link.as_os_str() == "anon_inode:[perf_event]")
        .count()
}

/// The CPU time of process `pid`, all its threads, from its POSIX CPU-time
/// clock (clock_getcpuclockid(3)): the kernel brings a running thread's
/// runtime up to date for it, where `/proc/PID/schedstat` lags by up to a
/// scheduler tick.
fn cpu_ns_of(pid: u32) -> u64 {
    use nix::time::{clock_getcpuclockid, clock_gettime};
    let pid = nix::unistd::Pid::from_raw(i32::try_from(pid).expect("pid fits i32"));
    let clock = clock_getcpuclockid(pid).unwrap_or_else(|e| panic!("CPU clock of {pid}: {e}"));
    let t = clock_gettime(clock).unwrap_or_else(|e| panic!("CPU clock of {pid}: {e}"));
    u64::try_from(t.tv_sec()).unwrap_or(0) * 1_000_000_000 + u64::try_from(t.tv_nsec()).unwrap_or(0)
}

/// The state letter of process `pid` (`/proc/PID/stat`'s third field:
/// `S` asleep, `R` running), `None` once it is gone.
fn process_state(pid: u32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command, in parentheses, may hold spaces: the state follows
    // its last `)`.
    stat.rsplit_once(')')?.1.trim_start().chars().next()
}

/// A child spinning in user mode until dropped.
struct BusyChild(Child);

impl Drop for BusyChild {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// hwpmc_mod.c: a virtual PMC's value sums its targets (pmc_attach_process
/// links each; pmc_start starts the PMC on every target); here the caller
/// and a child, both spinning. The count must hold both CPU times, as
/// their POSIX CPU clocks give them: a PMC on two processes is never read
/// as one plain counter, nor as either process alone.
fn a_tc_on_the_caller_and_a_busy_child_counts_both() {
    const CHILD_NS: u64 = 20_000_000;
    let child = Command::new("sh")
        .args(["-c", "while :; do :; done"])
        .stdin(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("spawn a spinning `sh`: {e}"));
    let child = BusyChild(child);
    let pid = child.0.id();
    let me = std::process::id();
    let mut p = linux_owner()
        .allocate_with_count("task-clock,usr", Mode::TC, Flags::empty(), Cpu::Any, 0)
        .unwrap_or_else(|e| panic!("allocate: {e}"));
    let fds_before = perf_event_fds();
    p.attach(0)
        .unwrap_or_else(|e| panic!("attach the caller: {e}"));
    p.attach(pid)
        .unwrap_or_else(|e| panic!("attach {pid}: {e}"));
    // What the kernel says the attaches opened.
    let opened = perf_event_fds() - fds_before;
    assert!(opened >= 2, "two targets opened {opened} perf_event fds");
    assert_eq!(
        p.handles(),
        opened,
        "handles() are the perf_event fds opened"
    );
    let window = crate::workloads::StealWindow::start();
    // Outer readings bracket start..stop from outside, inner ones lie
    // within it: the count lies between their sums.
    let (child0, own0) = (cpu_ns_of(pid), cpu_ns_of(me));
    p.start().unwrap_or_else(|e| panic!("start: {e}"));
    let (child1, own1) = (cpu_ns_of(pid), cpu_ns_of(me));
    // Both work until each has run 20 ms, however loaded the machine: the
    // caller spins too, so that a PMC leaving out either falls short.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while (cpu_ns_of(pid) - child1 < CHILD_NS || cpu_ns_of(me) - own1 < CHILD_NS)
        && std::time::Instant::now() < deadline
    {
        crate::harness::spin_ms(1);
    }
    let (child2, own2) = (cpu_ns_of(pid), cpu_ns_of(me));
    p.stop().unwrap_or_else(|e| panic!("stop: {e}"));
    let (child3, own3) = (cpu_ns_of(pid), cpu_ns_of(me));
    let (inner, outer) = (
        (child2 - child1) + (own2 - own1),
        (child3 - child0) + (own3 - own0),
    );
    assert!(
        child2 - child1 >= CHILD_NS && own2 - own1 >= CHILD_NS,
        "in 20 s the spinning child ran {} ns, the caller {} ns",
        child2 - child1,
        own2 - own1
    );
    let counted = p.read().unwrap_or_else(|e| panic!("read: {e}"));
    // At least what both ran within start..stop less their kernel-mode
    // time (the event is `task-clock,usr`; the CPU clocks count both, and
    // the caller reads two clocks every millisecond: the matrix saw 8 % of
    // kernel time, so a fifth is allowed — a PMC that left out either
    // process would miss about half), at most what they ran around it
    // plus what the hypervisor stole meanwhile (task-clock runs on through
    // steal, the CPU clocks do not: see StealWindow).
    let stolen = window.stolen_ns();
    assert!(
        counted >= inner - inner / 5 && counted <= outer + outer * 3 / 100 + stolen,
        "counted {counted} ns; the child and the caller ran {inner} ns within start..stop \
         (child {} ns, caller {} ns), {outer} ns around it, at most {stolen} ns stolen",
        child2 - child1,
        own2 - own1
    );
    drop(child);
}

/// hwpmc_mod.c PMC_OP_PMCRW: a virtual PMC reads the hardware only when
/// RUNNING and attached to its owner (`PMC_F_ATTACHED_TO_OWNER`), else
/// `pm_savedvalue`; a system PMC always reads the hardware, which for a
/// sampling PMC is the events left before the next sample: a CPU-wide
/// `cpu-clock` counts the wall time it is enabled, so after the 2 ms slept
/// (and at most the wall time from before its start to after the read) it
/// is the period less that, never the time counted itself (`raw % period`).
/// Both PMCs need a log to start (pmc_start: a TS on another
/// process and every SS set `PMC_F_NEEDS_LOGFILE`).
fn running_sampling_pmcs_read_what_pmcrw_reads() {
    // 10 s: far more than the trial takes, so no sample is due.
    const PERIOD: u64 = 10_000_000_000;
    let log = pmc::global::log::MemoryLog::new();
    linux_owner()
        .configure_logfile(log)
        .unwrap_or_else(|e| panic!("configure_logfile: {e}"));
    let subject = LinuxSubject::new();
    let other = subject.spawn();
    let sampling = |mode, cpu| {
        linux_owner()
            .allocate_with_count("cpu-clock", mode, Flags::empty(), cpu, PERIOD)
            .unwrap_or_else(|e| panic!("allocate {mode}: {e}"))
    };
    let mut ts = sampling(Mode::TS, Cpu::Any);
    ts.attach(other)
        .unwrap_or_else(|e| panic!("attach {other}: {e}"));
    ts.write(5).unwrap_or_else(|e| panic!("write: {e}"));
    ts.start().unwrap_or_else(|e| panic!("start TS: {e}"));
    let ts_read = ts.read().unwrap_or_else(|e| panic!("read TS: {e}"));
    ts.stop().unwrap_or_else(|e| panic!("stop TS: {e}"));
    let mut ss = sampling(Mode::SS, Cpu::Id(0));
    let t0 = monotonic_ns();
    ss.start().unwrap_or_else(|e| panic!("start SS: {e}"));
    std::thread::sleep(std::time::Duration::from_millis(2));
    let ss_read = ss.read().unwrap_or_else(|e| panic!("read SS: {e}"));
    let elapsed = monotonic_ns() - t0;
    ss.stop().unwrap_or_else(|e| panic!("stop SS: {e}"));
    linux_owner()
        .close_logfile()
        .unwrap_or_else(|e| panic!("close_logfile: {e}"));
    assert_eq!(
        ts_read, 5,
        "a running TS on another process reads pm_savedvalue"
    );
    assert!(
        elapsed < PERIOD / 2,
        "the trial took {elapsed} ns, not the {PERIOD} ns period"
    );
    assert!(
        (PERIOD - elapsed..=PERIOD - 2_000_000).contains(&ss_read),
        "a running SS reads the events left in its period: {ss_read}, expected \
         {PERIOD} less between 2 ms and the {elapsed} ns from before its start"
    );
}

/// A PMC that wrote into a log that was closed is STOPPED (hwpmc stops the
/// owner's PMCs when pmclog_deconfigure_log runs); pmc_start starts it
/// again.
fn a_start_after_the_log_closed_runs_again() {
    let log = pmc::global::log::MemoryLog::new();
    linux_owner()
        .configure_logfile(log)
        .unwrap_or_else(|e| panic!("configure_logfile: {e}"));
    let mut p = linux_owner()
        .allocate_with_count(
            "task-clock,usr",
            Mode::TS,
            Flags::empty(),
            Cpu::Any,
            1_000_000,
        )
        .unwrap_or_else(|e| panic!("allocate: {e}"));
    p.start().unwrap_or_else(|e| panic!("start: {e}"));
    linux_owner()
        .close_logfile()
        .unwrap_or_else(|e| panic!("close_logfile: {e}"));
    assert_eq!(p.state(), State::Stopped, "stopped with its log");
    p.start().unwrap_or_else(|e| panic!("restart: {e}"));
    assert_eq!(p.state(), State::Running, "started again");
    p.stop().unwrap_or_else(|e| panic!("stop: {e}"));
}

/// The suite's `sc_counts_from_its_initial_value_and_a_write_lasts_until_start`
/// live: pmc_start writes pm_initial to a counting system PMC (the
/// allocate count, or `set`'s), pmc_stop reads the counter back into it,
/// and a PMCRW write lasts until the next start. On a CPU-wide
/// `cpu-clock`, which counts the wall time it is enabled (busy or idle),
/// each reading is bounded by the wall clock around it.
fn sc_counts_from_its_initial_value_live() {
    const INITIAL: u64 = 1_000_000_000_000;
    const SLEEP: u64 = 2_000_000;
    let sleep = || std::thread::sleep(std::time::Duration::from_nanos(SLEEP));
    let mut p = linux_owner()
        .allocate_with_count("cpu-clock", Mode::SC, Flags::empty(), Cpu::Id(0), INITIAL)
        .unwrap_or_else(|e| panic!("allocate: {e}"));
    let within = |value: u64, from: u64, t0: u64, what: &str| {
        let most = monotonic_ns() - t0;
        assert!(
            (from + SLEEP..=from + most).contains(&value),
            "{what}: {value}, expected {from} plus between {SLEEP} ns slept and {most} ns elapsed"
        );
    };
    let t0 = monotonic_ns();
    p.start().unwrap_or_else(|e| panic!("start: {e}"));
    sleep();
    p.stop().unwrap_or_else(|e| panic!("stop: {e}"));
    let first = p.read().unwrap_or_else(|e| panic!("read: {e}"));
    within(first, INITIAL, t0, "starts at the allocate count");
    sleep();
    assert_eq!(
        p.read().unwrap_or_else(|e| panic!("read: {e}")),
        first,
        "stopped"
    );
    p.write(7).unwrap_or_else(|e| panic!("write: {e}"));
    assert_eq!(
        p.read().unwrap_or_else(|e| panic!("read: {e}")),
        7,
        "the counter holds the write while stopped"
    );
    let t1 = monotonic_ns();
    p.start().unwrap_or_else(|e| panic!("start: {e}"));
    sleep();
    p.stop().unwrap_or_else(|e| panic!("stop: {e}"));
    let second = p.read().unwrap_or_else(|e| panic!("read: {e}"));
    within(
        second,
        first,
        t1,
        "start resumes from pm_initial, not the write",
    );
    p.set(5 * INITIAL).unwrap_or_else(|e| panic!("set: {e}"));
    let t2 = monotonic_ns();
    p.start().unwrap_or_else(|e| panic!("start: {e}"));
    sleep();
    let third = p.read().unwrap_or_else(|e| panic!("read: {e}"));
    within(third, 5 * INITIAL, t2, "set is where start counts from");
}

/// `pmc_linux::system::descendants_of`, which decides the DESCENDANTS
/// overlap rule (EEXIST) on Linux, against a tree whose every pid the
/// processes themselves reported: a node, its child, their grandchild,
/// and an unrelated node beside them.
fn descendants_of_walks_the_process_tree() {
    let subject = LinuxSubject::new();
    let top = subject.spawn();
    let mid = subject.spawn_child(top);
    let low = subject.spawn_child(mid);
    let beside = subject.spawn();
    let of = |pid: u32| -> Vec<u32> {
        pmc_linux::system::descendants_of(pid as i32)
            .into_iter()
            .map(|p| p as u32)
            .collect()
    };
    let mut below_top = vec![mid, low];
    below_top.sort_unstable();
    assert_eq!(of(top), below_top, "{top}'s tree");
    assert_eq!(of(mid), vec![low]);
    assert_eq!(of(low), Vec::<u32>::new());
    assert_eq!(of(beside), Vec::<u32>::new());
    let mine = of(std::process::id());
    for pid in [top, mid, low, beside] {
        assert!(mine.contains(&pid), "{pid} is below this process: {mine:?}");
    }
    // The leaf goes (killed, then reaped by its parent's `wait`): it
    // leaves the tree.
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(low as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap_or_else(|e| panic!("kill {low}: {e}"));
    subject.tell(mid, "wait");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while of(top) != vec![mid] && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    assert_eq!(of(top), vec![mid], "{low} killed");
}

/// The live trials beyond the suite: `Pmc` paths only the default backend
/// reaches (`PerCpu` allocates on it), and a busy process, which the
/// suite's subjects do not offer. Each with what it needs.
type OwnCase = (&'static str, &'static [Cap], fn());

const OWN_CASES: [OwnCase; 6] = [
    (
        "sc_counts_from_its_initial_value_live",
        &[Cap::SystemMode],
        sc_counts_from_its_initial_value_live,
    ),
    (
        "descendants_of_walks_the_process_tree",
        &[],
        descendants_of_walks_the_process_tree,
    ),
    (
        "running_sampling_pmcs_read_what_pmcrw_reads",
        &[Cap::SystemMode],
        running_sampling_pmcs_read_what_pmcrw_reads,
    ),
    (
        "a_start_after_the_log_closed_runs_again",
        &[Cap::Sampling],
        a_start_after_the_log_closed_runs_again,
    ),
    (
        "per_cpu_is_one_system_pmc_per_online_cpu",
        &[Cap::SystemMode],
        per_cpu_is_one_system_pmc_per_online_cpu,
    ),
    (
        "a_tc_on_the_caller_and_a_busy_child_counts_both",
        &[Cap::OtherProcesses],
        a_tc_on_the_caller_and_a_busy_child_counts_both,
    ),
];

/// The variable that makes this binary run one trial's body and exit.
const ROLE: &str = "PMC_LIVE_CONFORMANCE";

/// In a child of [`in_fresh_process`]: runs the named body (a scenario of
/// the suite or an own case), then exits: 0, or 101 with the panic.
pub fn run_if_requested() {
    let Ok(name) = std::env::var(ROLE) else {
        return;
    };
    match OWN_CASES.iter().find(|(n, _, _)| *n == name) {
        Some((_, _, body)) => body(),
        None => suite::run(&LinuxSubject::new(), &name),
    }
    std::process::exit(0);
}

/// Runs a trial's body in a fresh, single-threaded process. `Pmc`'s hot
/// path serves only one-event targets, and attaching to a process opens
/// one event per thread: in this test process, which earlier trials leave
/// with more threads (the harness's, a drain thread), the hot path would
/// depend on the order the trials ran in.
fn in_fresh_process(name: &str) -> Result<Completion, Failed> {
    let exe = std::env::current_exe().map_err(|e| Failed::from(format!("current_exe: {e}")))?;
    let out = Command::new(exe)
        .env(ROLE, name)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| Failed::from(format!("spawn the child for {name}: {e}")))?;
    if out.status.success() {
        return Ok(Completion::Completed);
    }
    Err(Failed::from(format!(
        "{name} failed in its own process ({}):\n{}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )))
}

/// The scenarios this backend cannot run, and why (what they need that a
/// real kernel here does not give). `every_scenario_is_listed_once…`
/// checks it against the capabilities, as each unit-test instance does.
const NOT_APPLICABLE: &[(&str, &str)] = &[
    (
        "an_offline_cpu_is_enxio_before_the_flag_checks",
        "n/a: linux-perf_event (live): taking a CPU offline is the whole machine's state",
    ),
    (
        "get_msr_returns_the_index_and_leaves_attach_open",
        "n/a: linux-perf_event (live): task-clock has no rdpmc index (no PMU counter)",
    ),
    (
        "a_counter_that_never_ran_is_an_error_not_zero",
        "n/a: linux-perf_event (live): a software counter cannot be kept off the CPU",
    ),
];

/// The listing's check, as a trial.
fn listing_trial() -> Trial {
    Trial::test(
        "conformance::linux::every_scenario_is_listed_once_with_its_capabilities",
        || {
            let runs: Vec<&str> = suite::SCENARIOS
                .iter()
                .map(|s| s.name)
                .filter(|n| NOT_APPLICABLE.iter().all(|(na, _)| na != n))
                .collect();
            let na: Vec<&str> = NOT_APPLICABLE.iter().map(|(n, _)| *n).collect();
            std::panic::catch_unwind(|| suite::check_listing(&LinuxSubject::new(), &runs, &na))
                .map_err(|p| {
                    Failed::from(
                        p.downcast_ref::<String>()
                            .cloned()
                            .unwrap_or_else(|| "the listing check panicked".into()),
                    )
                })
        },
    )
}

/// A trial: skipped or failed by its gate, else run in its own process.
fn trial(name: &'static str, not_applicable: Option<&'static str>, verdict: Gate) -> Trial {
    Trial::ignorable_test(format!("conformance::linux::{name}"), move || {
        if let Some(why) = not_applicable {
            return Ok(Completion::ignored_with(why));
        }
        match verdict {
            Gate::Skip(reason) => Ok(Completion::ignored_with(reason)),
            Gate::Fail(reason) => Err(Failed::from(reason)),
            Gate::Run => in_fresh_process(name),
        }
    })
}

/// One trial per scenario of the suite, and the live-only ones.
pub fn trials(env: &Environment) -> Vec<Trial> {
    let forced = Forced::parse(std::env::var(FORCE_ENV).ok().as_deref());
    let scenarios = suite::SCENARIOS.iter().map(|s| {
        let verdict = gate(&requirements(s.needs), env, &forced);
        let na = NOT_APPLICABLE
            .iter()
            .find(|(n, _)| *n == s.name)
            .map(|(_, why)| *why);
        trial(s.name, na, verdict)
    });
    let own = OWN_CASES
        .iter()
        .map(|(name, needs, _)| trial(name, None, gate(&requirements(needs), env, &forced)));
    scenarios
        .chain(own)
        .chain(std::iter::once(listing_trial()))
        .collect()
}
