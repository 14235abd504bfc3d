//! The test gate's look at the machine, with plain std reads and no project
//! code, so that a regression in `pmc` or `pmc-linux` fails its tests
//! instead of turning them into skips (invariant 8): perf_event_paranoid
//! from procfs, the PMU names from sysfs, the effective uid and capability
//! set from `/proc/self/status`, tracefs from the mount table, and `perf
//! stat` as the outside reference for hardware counting. The facts go into
//! `pmc::probe::Environment`, which the requirement checker judges.
//!
//! Included by each libtest-mimic harness (`tests/live`, `tools/tests/cli`,
//! `capi/tests/c_programs.rs`); the includer has `Environment` and `Tracefs`
//! (the `probe` types) in scope.

use std::path::{Path, PathBuf};

use super::{Environment, Tracefs};

const PARANOID: &str = "/proc/sys/kernel/perf_event_paranoid";
const PMUS: &str = "/sys/bus/event_source/devices";
/// Where root mounts tracefs (the skip's advice).
const MOUNT_COMMAND: &str = "mount -t tracefs nodev /sys/kernel/tracing";
/// Capability numbers (linux/capability.h).
const CAP_IPC_LOCK: u32 = 14;
const CAP_SYS_PTRACE: u32 = 19;
const CAP_SYS_ADMIN: u32 = 21;
const CAP_PERFMON: u32 = 38;

/// This machine and caller, as the gate sees them.
pub fn environment() -> Environment {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let caps = cap_eff(&status);
    let has = |c: u32| caps & (1 << c) != 0;
    let pmus = pmu_names(Path::new(PMUS));
    let mounts = std::fs::read_to_string("/proc/self/mounts").unwrap_or_default();
    Environment {
        os: std::env::consts::OS.into(),
        paranoid: std::fs::read_to_string(PARANOID)
            .ok()
            .and_then(|t| t.trim().parse().ok()),
        root: effective_uid(&status) == Some(0),
        cap_perfmon: has(CAP_PERFMON),
        cap_sys_admin: has(CAP_SYS_ADMIN),
        cap_sys_ptrace: has(CAP_SYS_PTRACE),
        cap_ipc_lock: has(CAP_IPC_LOCK),
        hardware_counting: perf_stat_counts()
            .unwrap_or_else(|| pmus.iter().any(|p| is_core_pmu(p))),
        pmus,
        tracefs: tracefs(&mounts),
        tracefs_mount_command: Some(MOUNT_COMMAND.into()),
        kernel_release: std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .map(|r| r.trim().to_string())
            .unwrap_or_default(),
    }
}

/// A core (CPU) PMU's sysfs name: `cpu`, the hybrid `cpu_core`/`cpu_atom`,
/// an Arm `armv*`.
fn is_core_pmu(name: &str) -> bool {
    name == "cpu" || name.starts_with("cpu_") || name.starts_with("armv")
}

/// The effective uid: the second field of `Uid:`.
fn effective_uid(status: &str) -> Option<u32> {
    let line = status.lines().find(|l| l.starts_with("Uid:"))?;
    line.split_whitespace().nth(2)?.parse().ok()
}

/// The effective capability set, `CapEff:` in hex.
fn cap_eff(status: &str) -> u64 {
    status
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
        .unwrap_or(0)
}

/// The registered PMUs: the directory names under `root`, sorted.
fn pmu_names(root: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(root)
        .map(|d| {
            d.filter_map(Result::ok)
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// tracefs from the mount table (`/proc/self/mounts`): each tracefs mount,
/// and the `tracing` directory that debugfs automounts, `/sys/kernel/tracing`
/// preferred. Readable when one's `events` directory lists; unreadable when
/// listing is refused (EACCES); broken when a tracefs mount's `events`
/// cannot be listed otherwise; not mounted when there is none.
fn tracefs(mounts: &str) -> Tracefs {
    let mut listed: Vec<PathBuf> = Vec::new();
    let mut automount: Vec<PathBuf> = Vec::new();
    for line in mounts.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        match f.get(1..3) {
            Some([at, "tracefs"]) => listed.push(PathBuf::from(unescape(at))),
            Some([at, "debugfs"]) => automount.push(Path::new(&unescape(at)).join("tracing")),
            _ => {}
        }
    }
    let mut candidates: Vec<(PathBuf, bool)> = listed.into_iter().map(|p| (p, true)).collect();
    candidates.extend(automount.into_iter().map(|p| (p, false)));
    candidates.sort_by_key(|(p, _)| p != Path::new("/sys/kernel/tracing"));
    let (mut denied, mut broken) = (None, None);
    for (at, is_tracefs) in candidates {
        match std::fs::read_dir(at.join("events")) {
            Ok(_) => return Tracefs::Readable(at.display().to_string()),
            Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
                denied.get_or_insert(at);
            }
            Err(_) if is_tracefs => {
                broken.get_or_insert(at);
            }
            // debugfs without tracefs under it.
            Err(_) => {}
        }
    }
    match (denied, broken) {
        (Some(at), _) => Tracefs::Unreadable(at.display().to_string()),
        (None, Some(at)) => Tracefs::Broken(at.display().to_string()),
        (None, None) => Tracefs::NotMounted,
    }
}

/// A mount point as the mount table escapes it (`\040` for a space, …).
fn unescape(field: &str) -> String {
    let mut out = String::new();
    let mut rest = field;
    while let Some(at) = rest.find('\\') {
        out.push_str(&rest[..at]);
        let code = rest.get(at + 1..at + 4);
        match code.and_then(|c| u8::from_str_radix(c, 8).ok()) {
            Some(b) => {
                out.push(char::from(b));
                rest = &rest[at + 4..];
            }
            None => {
                out.push('\\');
                rest = &rest[at + 1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// Whether `perf stat -x, -e instructions:u true` counted: `Some(true)`
/// when a line of the event is above zero, `Some(false)` when every line
/// is zero or `<not supported>`/`<not counted>`, `None` when perf did not
/// run or printed no line for the event (hybrid machines print one line
/// per core type).
fn perf_stat_counts() -> Option<bool> {
    let out = std::process::Command::new("perf")
        .args(["stat", "-x,", "-e", "instructions:u", "true"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .output()
        .ok()?;
    perf_stat_counted(&String::from_utf8_lossy(&out.stderr))
}

fn perf_stat_counted(stderr: &str) -> Option<bool> {
    let mut seen = false;
    for line in stderr.lines() {
        let fields: Vec<&str> = line.split(',').collect();
        if fields.len() < 3 || !fields[2].contains("instructions") {
            continue;
        }
        seen = true;
        if fields[0].trim().parse::<u64>().is_ok_and(|n| n > 0) {
            return Some(true);
        }
    }
    seen.then_some(false)
}

/// The reading's own tests (synthetic inputs), for the harness to run.
pub fn self_test() -> Result<(), String> {
    let status = "Name:\tx\nUid:\t1000\t0\t0\t0\nCapEff:\t000001c000200000\n";
    if effective_uid(status) != Some(0) {
        return Err(format!("effective uid of {status:?}"));
    }
    let caps = cap_eff(status);
    let bits: Vec<u32> = (0..64).filter(|b| caps & (1 << b) != 0).collect();
    if bits != [CAP_SYS_ADMIN, CAP_PERFMON, 39, 40] {
        return Err(format!("capability bits {bits:?}"));
    }
    if cap_eff("Uid:\t0\t0\t0\t0\n") != 0 {
        return Err("no CapEff line is no capability".into());
    }
    if unescape(r"/mnt/a\040b\\c") != r"/mnt/a b\\c" || unescape(r"/x\0") != r"/x\0" {
        return Err(format!("unescape: {:?}", unescape(r"/mnt/a\040b")));
    }
    let counted = [
        ("12345,,instructions:u,1000,100.00,,", Some(true)),
        ("<not supported>,,instructions:u,0,100.00,,", Some(false)),
        (
            "0,,cpu_atom/instructions/u,0,0,,\n77,,cpu_core/instructions/u,5,100,,",
            Some(true),
        ),
        ("perf: command not found", None),
    ];
    for (text, want) in counted {
        if perf_stat_counted(text) != want {
            return Err(format!("perf stat output {text:?}: not {want:?}"));
        }
    }
    // No tracefs, nor debugfs: not mounted; a tracefs mount that cannot
    // be listed: broken.
    if tracefs("proc /proc proc rw 0 0\n") != Tracefs::NotMounted {
        return Err("an empty mount table has tracefs".into());
    }
    let gone = "nodev /nonexistent/pmc-tracing tracefs rw 0 0\n";
    if tracefs(gone) != Tracefs::Broken("/nonexistent/pmc-tracing".into()) {
        return Err(format!(
            "a listed tracefs without events: {:?}",
            tracefs(gone)
        ));
    }
    let debugfs_only = "debugfs /nonexistent/pmc-debug debugfs rw 0 0\n";
    if tracefs(debugfs_only) != Tracefs::NotMounted {
        return Err("debugfs without tracing under it has tracefs".into());
    }
    Ok(())
}
