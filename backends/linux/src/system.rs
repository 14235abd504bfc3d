//! What the running kernel allows: the perf sysctls, capabilities, limits, and
//! the process/thread tree from procfs.

use std::fs;
use std::path::Path;

use crate::sys;

/// `CAP_SYS_ADMIN` bit number.
pub const CAP_SYS_ADMIN: u32 = 21;
/// `CAP_SYS_PTRACE` bit number.
pub const CAP_SYS_PTRACE: u32 = 19;
/// `CAP_IPC_LOCK` bit number.
pub const CAP_IPC_LOCK: u32 = 14;
/// `CAP_PERFMON` bit number (Linux 5.8+).
pub const CAP_PERFMON: u32 = 38;

fn read_sysctl<T: std::str::FromStr>(name: &str) -> Option<T> {
    fs::read_to_string(Path::new("/proc/sys/kernel").join(name))
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// `/proc/sys/kernel/perf_event_paranoid`, or `None` if perf_event is absent.
pub fn paranoid() -> Option<i32> {
    read_sysctl("perf_event_paranoid")
}

/// `/proc/sys/kernel/perf_event_mlock_kb`.
pub fn mlock_kb() -> Option<u64> {
    read_sysctl("perf_event_mlock_kb")
}

/// `/proc/sys/kernel/perf_event_max_stack`.
pub fn max_stack() -> Option<u32> {
    read_sysctl("perf_event_max_stack")
}

/// `/proc/sys/kernel/perf_event_max_sample_rate`.
pub fn max_sample_rate() -> Option<u64> {
    read_sysctl("perf_event_max_sample_rate")
}

/// `/proc/sys/kernel/nmi_watchdog`.
pub fn nmi_watchdog() -> Option<i32> {
    read_sysctl("nmi_watchdog")
}

/// CPU time the calling thread has used, in nanoseconds
/// (`CLOCK_THREAD_CPUTIME_ID`).
pub fn thread_cpu_ns() -> u64 {
    sys::thread_cpu_ns()
}

/// CLOCK_MONOTONIC now, in nanoseconds.
pub fn monotonic_ns() -> u64 {
    sys::monotonic_ns()
}

/// The kernel release (`uname -r`).
pub fn kernel_release() -> String {
    fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

/// The effective capabilities of the calling thread as a bit mask.
pub fn effective_capabilities() -> u64 {
    sys::effective_capabilities().unwrap_or(0)
}

/// Whether the calling thread has capability number `cap` in its effective set.
pub fn has_capability(cap: u32) -> bool {
    cap < 64 && effective_capabilities() & (1 << cap) != 0
}

/// Whether the caller is exempt from `perf_event_paranoid`, as the kernel
/// decides it: CAP_PERFMON, or CAP_SYS_ADMIN (which implies it).
pub fn perfmon_capable() -> bool {
    let caps = effective_capabilities();
    caps & (1 << CAP_PERFMON) != 0 || caps & (1 << CAP_SYS_ADMIN) != 0
}

/// The paranoid level that effectively applies to the caller: `-1` when a
/// capability overrides the sysctl.
pub fn effective_paranoid() -> Option<i32> {
    let p = paranoid()?;
    Some(if perfmon_capable() { -1 } else { p })
}

/// The effective user id.
pub fn effective_uid() -> u32 {
    sys::geteuid()
}

/// `RLIMIT_NOFILE` (soft, hard).
pub fn nofile_limit() -> (u64, u64) {
    sys::nofile_limit()
}

/// Whether a process (or thread) id exists.
pub fn process_exists(pid: i32) -> bool {
    sys::process_exists(pid)
}

/// The calling process's id, as `std::process::id()` gives it but without
/// a system call after the first (a cache the kernel wipes in every forked
/// child). An attach to the caller asks for it twice.
pub fn own_pid() -> u32 {
    sys::own_pid()
}

/// The caller's thread id.
pub fn gettid() -> i32 {
    sys::gettid()
}

/// The number of online CPUs.
pub fn online_cpu_count() -> usize {
    sys::online_cpus()
}

/// The CPU the caller is running on now.
pub fn current_cpu() -> Option<u32> {
    sys::current_cpu()
}

/// Parses a kernel CPU list such as `0-3,8,10-11`.
pub fn parse_cpu_list(s: &str) -> Option<Vec<u32>> {
    let mut out = Vec::new();
    for part in s.trim().split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b): (u32, u32) = (a.trim().parse().ok()?, b.trim().parse().ok()?);
                if b < a || b - a > 65_536 {
                    return None;
                }
                out.extend(a..=b);
            }
            None => out.push(part.trim().parse().ok()?),
        }
    }
    Some(out)
}

/// The online CPUs, from `/sys/devices/system/cpu/online`.
///
/// A sysfs read costs more than the perf open of a CPU counter, so when
/// every possible CPU is online (none can come online then) the list is
/// kept while the calling thread's CPU affinity, which the kernel reports
/// as its allowed CPUs that are active, stays the set it was: a CPU going
/// offline leaves it. Otherwise (CPUs offline, or a thread restricted to
/// some CPUs, which would not see the change) the list is read each time.
pub fn online_cpus() -> Vec<u32> {
    let affinity = nix::sched::sched_getaffinity(nix::unistd::Pid::from_raw(0)).ok();
    let Ok(mut kept) = KEPT_ONLINE.lock() else {
        return read_online_cpus();
    };
    if let (Some(now), Some((then, cpus))) = (affinity, kept.as_ref())
        && now == *then
    {
        return cpus.clone();
    }
    static POSSIBLE: std::sync::OnceLock<Vec<u32>> = std::sync::OnceLock::new();
    let cpus = read_online_cpus();
    // Read directly: `possible_cpus` falls back to this function.
    let possible = POSSIBLE.get_or_init(|| {
        fs::read_to_string("/sys/devices/system/cpu/possible")
            .ok()
            .and_then(|s| parse_cpu_list(&s))
            .unwrap_or_default()
    });
    let all_online = *possible == cpus;
    *kept = affinity
        .filter(|now| all_online && same_cpus(now, &cpus))
        .map(|now| (now, cpus.clone()));
    cpus
}

/// [`online_cpus`]' kept list: (the affinity it was kept under, the CPUs).
static KEPT_ONLINE: std::sync::Mutex<Option<(nix::sched::CpuSet, Vec<u32>)>> =
    std::sync::Mutex::new(None);

/// The list [`online_cpus`] keeps, without its `sched_getaffinity` check
/// (else [`online_cpus`]): stale only if a CPU went offline since it was
/// read, which a caller that opens on every CPU learns from the open
/// (ENODEV) and then asks [`online_cpus`].
pub fn online_cpus_last_seen() -> Vec<u32> {
    let kept = KEPT_ONLINE
        .lock()
        .ok()
        .and_then(|k| k.as_ref().map(|(_, cpus)| cpus.clone()));
    kept.unwrap_or_else(online_cpus)
}

fn read_online_cpus() -> Vec<u32> {
    fs::read_to_string("/sys/devices/system/cpu/online")
        .ok()
        .and_then(|s| parse_cpu_list(&s))
        .unwrap_or_else(|| (0..sys::online_cpus() as u32).collect())
}

/// Whether `set` holds exactly `cpus`.
fn same_cpus(set: &nix::sched::CpuSet, cpus: &[u32]) -> bool {
    let in_set = (0..nix::sched::CpuSet::count())
        .filter(|&c| set.is_set(c).unwrap_or(false))
        .count();
    in_set == cpus.len()
        && cpus
            .iter()
            .all(|&c| set.is_set(c as usize).unwrap_or(false))
}

/// The possible CPUs (`ncpu` in libpmc terms is the highest + 1).
pub fn possible_cpus() -> Vec<u32> {
    fs::read_to_string("/sys/devices/system/cpu/possible")
        .ok()
        .and_then(|s| parse_cpu_list(&s))
        .unwrap_or_else(online_cpus)
}

/// The thread ids of process `pid` (from `/proc/PID/task`), sorted.
///
/// A single-threaded caller asking for itself is answered without `/proc`
/// ([`caller_is_single_threaded`]); otherwise the calling process's own
/// directory is kept open between calls (see `OwnTasks`): opening it costs
/// more than the perf open an attach to the caller makes.
pub fn threads_of(pid: i32) -> std::io::Result<Vec<i32>> {
    if pid == own_pid() as i32 && caller_is_single_threaded() {
        // Its one thread is its leader, whose tid is the pid.
        return Ok(vec![pid]);
    }
    match OwnTasks::threads(pid) {
        Some(tids) => Ok(tids),
        None => list_task_dir(pid),
    }
}

/// Whether the calling process has one thread, by the cheapest question
/// the kernel answers: unshare(2) of `CLONE_THREAD` (which implies
/// `CLONE_VM` and `CLONE_SIGHAND`) "can be specified in flags if the caller
/// is single threaded (i.e., it is not sharing its address space with
/// another process or thread). In this case, these flags have no effect";
/// a multithreaded caller gets EINVAL. Any other failure (a seccomp
/// filter's EPERM, say), or an address space shared with a `vfork`
/// parent, answers no, and the caller lists `/proc` as before.
pub fn caller_is_single_threaded() -> bool {
    nix::sched::unshare(nix::sched::CloneFlags::CLONE_THREAD).is_ok()
}

/// `/proc/PID/task` read afresh.
fn list_task_dir(pid: i32) -> std::io::Result<Vec<i32>> {
    let mut tids: Vec<i32> = fs::read_dir(format!("/proc/{pid}/task"))?
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .collect();
    tids.sort_unstable();
    Ok(tids)
}

/// The calling process's `/proc/PID/task`, open (`O_CLOEXEC`) for the
/// process's lifetime: one `fstat` answers how many threads it has
/// (procfs gives the directory 2 + that many links). A process of one
/// thread is its leader, whose tid is the pid (a leader stays in its group
/// until the last thread has exited, and `execve` makes the thread calling
/// it the leader). More threads are listed by rewinding the open
/// directory, only in the process that opened it (a forked child shares
/// its file offset).
struct OwnTasks {
    pid: i32,
    dir: nix::dir::Dir,
    /// The directory's identity: if the program closed our descriptor
    /// (`close_range` before an exec, say), its number may name another
    /// file now, which is then neither read nor closed.
    dev: u64,
    ino: u64,
}

static OWN_TASKS: std::sync::Mutex<Option<OwnTasks>> = std::sync::Mutex::new(None);

impl OwnTasks {
    fn open(pid: i32) -> Option<OwnTasks> {
        use nix::fcntl::OFlag;
        let dir = nix::dir::Dir::open(
            format!("/proc/{pid}/task").as_str(),
            OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
            nix::sys::stat::Mode::empty(),
        )
        .ok()?;
        let st = nix::sys::stat::fstat(&dir).ok()?;
        Some(OwnTasks {
            pid,
            dir,
            dev: st.st_dev,
            ino: st.st_ino,
        })
    }

    /// The directory's link count, if the descriptor still names it.
    // nlink_t is u64 on x86_64 and u32 on aarch64.
    #[allow(clippy::useless_conversion)]
    fn links(&self) -> Option<u64> {
        let st = nix::sys::stat::fstat(&self.dir).ok()?;
        (st.st_dev == self.dev && st.st_ino == self.ino).then_some(u64::from(st.st_nlink))
    }

    /// The threads of `pid` if it is the process that opened the kept
    /// directory or the calling process; `None`: read afresh.
    fn threads(pid: i32) -> Option<Vec<i32>> {
        let mut cache = OWN_TASKS.lock().ok()?;
        // The directory names a process, not a number: once that process
        // is gone (its directory has no threads) a reused pid is another.
        let hit = match cache.as_ref().map(|t| (t.pid, t.links())) {
            Some((cached, Some(links))) if cached == pid && links > 2 => Some(links),
            _ => None,
        };
        if hit == Some(3) {
            return Some(vec![pid]);
        }
        let own = pid == own_pid() as i32;
        if !own {
            return None;
        }
        let (mut tasks, links) = match (cache.take(), hit) {
            (Some(t), Some(links)) => (t, links),
            (Some(t), None) => {
                if t.links().is_some() {
                    // A forked child's copy of its parent's: ours to close.
                    drop(t);
                } else {
                    // Closed under us: not ours to close any more.
                    std::mem::forget(t.dir);
                }
                Self::opened(pid)?
            }
            (None, _) => Self::opened(pid)?,
        };
        let tids = if links == 3 {
            vec![pid]
        } else {
            let mut tids = Vec::new();
            for entry in tasks.dir.iter() {
                // `iter` rewinds the directory when dropped.
                let entry = entry.ok()?;
                if let Some(tid) = entry.file_name().to_str().ok().and_then(|n| n.parse().ok()) {
                    tids.push(tid);
                }
            }
            tids.sort_unstable();
            tids
        };
        *cache = Some(tasks);
        Some(tids)
    }

    fn opened(pid: i32) -> Option<(OwnTasks, u64)> {
        let t = Self::open(pid)?;
        let links = t.links()?;
        Some((t, links))
    }
}

/// The parent pid of a process, from `/proc/PID/stat`.
pub fn parent_of(pid: i32) -> Option<i32> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name is in parentheses and may contain spaces or ')'.
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace();
    let _state = fields.next()?;
    fields.next()?.parse().ok()
}

/// The state letter of a process (`R`, `S`, `Z`, …) from `/proc/PID/stat`.
pub fn process_state(pid: i32) -> Option<char> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().next()?.chars().next()
}

/// Every live descendant of `pid` (children, grandchildren, …), found by
/// walking the parent links of all processes in `/proc`.
pub fn descendants_of(pid: i32) -> Vec<i32> {
    let Ok(dir) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    let pairs: Vec<(i32, i32)> = dir
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(|p| Some((p, parent_of(p)?)))
        .collect();
    let mut out = Vec::new();
    let mut frontier = vec![pid];
    while let Some(parent) = frontier.pop() {
        for &(child, pp) in &pairs {
            if pp == parent && child != pid && !out.contains(&child) {
                out.push(child);
                frontier.push(child);
            }
        }
    }
    out.sort_unstable();
    out
}

/// Whether a hardware PMU is registered (`/sys/bus/event_source/devices/cpu`
/// or a hybrid `cpu_core`/`cpu_atom`, or an ARM `armv8_*` PMU).
pub fn has_hardware_pmu() -> bool {
    let root = Path::new("/sys/bus/event_source/devices");
    if root.join("cpu").exists() {
        return true;
    }
    fs::read_dir(root)
        .map(|d| {
            d.filter_map(Result::ok).any(|e| {
                let n = e.file_name();
                let n = n.to_string_lossy();
                n.starts_with("cpu_") || n.starts_with("armv8") || n.starts_with("armv7")
            })
        })
        .unwrap_or(false)
}

/// CPUID on x86 (`None` elsewhere): `[eax, ebx, ecx, edx]`.
pub fn cpuid(leaf: u32, subleaf: u32) -> Option<[u32; 4]> {
    sys::cpuid(leaf, subleaf)
}

/// The system page size.
pub fn page_size() -> usize {
    sys::page_size()
}

/// A process holding perf_event file descriptors.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct PerfUser {
    /// The process id.
    pub pid: i32,
    /// Its command name (`/proc/PID/comm`).
    pub command: String,
    /// How many perf_event descriptors it holds.
    pub events: usize,
}

/// Every process this caller may inspect that holds perf_event
/// descriptors, found through `/proc/PID/fd` links to
/// `anon_inode:[perf_event]`: the most Linux exposes about who uses the
/// PMU (the events' settings are not visible from outside). Processes
/// whose fds cannot be read (other users, without root) are skipped.
pub fn perf_users() -> Vec<PerfUser> {
    let Ok(procs) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut users: Vec<PerfUser> = procs
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(|pid| {
            let fds = fs::read_dir(format!("/proc/{pid}/fd")).ok()?;
            let events = fds
                .filter_map(|fd| fs::read_link(fd.ok()?.path()).ok())
                .filter(|target| target.as_os_str() == "anon_inode:[perf_event]")
                .count();
            (events > 0).then(|| PerfUser {
                pid,
                command: fs::read_to_string(format!("/proc/{pid}/comm"))
                    .map(|c| c.trim().to_string())
                    .unwrap_or_default(),
                events,
            })
        })
        .collect();
    users.sort_by_key(|u| u.pid);
    users
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cpu_set_matches_only_the_same_cpus() {
        let mut set = nix::sched::CpuSet::new();
        set.set(0).unwrap();
        set.set(2).unwrap();
        assert!(same_cpus(&set, &[0, 2]));
        assert!(!same_cpus(&set, &[0]), "a CPU more in the set");
        assert!(!same_cpus(&set, &[0, 1, 2]), "a CPU more in the list");
        assert!(!same_cpus(&set, &[0, 1]));
        assert!(same_cpus(&nix::sched::CpuSet::new(), &[]));
    }

    #[test]
    fn the_kept_online_list_is_the_kernels() {
        // Kept or not (restricted affinity, offline CPUs), the answer is
        // what sysfs says now.
        for _ in 0..3 {
            assert_eq!(online_cpus(), read_online_cpus());
        }
    }

    #[test]
    fn cpu_lists_parse_ranges_and_singles() {
        assert_eq!(
            parse_cpu_list("0-3,8,10-11\n"),
            Some(vec![0, 1, 2, 3, 8, 10, 11])
        );
        assert_eq!(parse_cpu_list("0"), Some(vec![0]));
        assert_eq!(parse_cpu_list(""), Some(vec![]));
        assert_eq!(parse_cpu_list("3-1"), None);
        assert_eq!(parse_cpu_list("x"), None);
    }

    #[test]
    fn own_process_is_visible_in_procfs() {
        let me = std::process::id() as i32;
        assert!(process_exists(me), "pid {me}");
        let threads = threads_of(me).expect("read /proc/self/task");
        let tid = gettid();
        assert!(threads.contains(&tid), "tid {tid} not among {threads:?}");
        assert!(parent_of(me).is_some(), "no parent for {me}");
        assert!(!online_cpus().is_empty());
    }

    /// A process with a second thread is never taken for a single-threaded
    /// one (its threads are listed instead); the single-threaded answer is
    /// checked in a single-threaded process, the live suite's
    /// `self-bracket` workload.
    #[test]
    fn a_second_thread_is_seen() {
        let me = std::process::id() as i32;
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let (ready_tx, ready) = std::sync::mpsc::channel::<i32>();
        let other = std::thread::spawn(move || {
            ready_tx.send(gettid()).unwrap();
            rx.recv().ok();
        });
        let tid = ready.recv().unwrap();
        assert!(!caller_is_single_threaded());
        let threads = threads_of(me).expect("read /proc/self/task");
        assert!(
            threads.contains(&tid) && threads.contains(&gettid()),
            "{threads:?}"
        );
        tx.send(()).unwrap();
        other.join().unwrap();
    }
}
