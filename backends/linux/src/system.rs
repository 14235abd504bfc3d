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
pub fn online_cpus() -> Vec<u32> {
    fs::read_to_string("/sys/devices/system/cpu/online")
        .ok()
        .and_then(|s| parse_cpu_list(&s))
        .unwrap_or_else(|| (0..sys::online_cpus() as u32).collect())
}

/// The possible CPUs (`ncpu` in libpmc terms is the highest + 1).
pub fn possible_cpus() -> Vec<u32> {
    fs::read_to_string("/sys/devices/system/cpu/possible")
        .ok()
        .and_then(|s| parse_cpu_list(&s))
        .unwrap_or_else(online_cpus)
}

/// The thread ids of process `pid` (from `/proc/PID/task`), sorted.
pub fn threads_of(pid: i32) -> std::io::Result<Vec<i32>> {
    let mut tids: Vec<i32> = fs::read_dir(format!("/proc/{pid}/task"))?
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .collect();
    tids.sort_unstable();
    Ok(tids)
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
}
