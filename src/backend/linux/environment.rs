//! Linux's answers for [`crate::probe`]: [`Environment::detect`] and the
//! rest of the capability report (`cargo xtask probe`).
//!
//! The environment comes only from plain reads through pmc-linux's file
//! helpers — the sysctls and capabilities (`system`), the PMU directory's
//! names (`pmu::pmu_names`), the tracefs mount points
//! (`tracefs::mount_state`) — and from `perf stat` as the outside reference
//! for hardware counting; never from resolving or opening an event
//! (`resolve`, `counters`, `pmc_linux::event`). The test gate does not use
//! it: it reads the same facts itself with plain std
//! (`tests/live/machine.rs`, issue 21), and a harness test checks that the
//! two readings agree. The report's other facts (PMU details, the read
//! path) may open events.

use std::path::Path;

use pmc_linux::attr::{Attr, EventConfig, Hardware, ReadFormat, Software};
use pmc_linux::event::{Event, OpenFlags, Target};
use pmc_linux::pmu::{self, Pmu};
use pmc_linux::selfmon::{ReadPath, UserPage};
use pmc_linux::system;
use pmc_linux::tracefs::{self, MountState};

use crate::backend::facts::{
    Environment, PlatformFacts, PmuSummary, ReadPathReport, Tracefs, is_core_pmu,
};

/// The facts of this machine and caller the test gate decides on.
pub(crate) fn environment() -> Environment {
    let caps = system::effective_capabilities();
    let has = |c: u32| caps & (1 << c) != 0;
    let pmus = pmu::pmu_names(Path::new(pmu::SYSFS_ROOT));
    Environment {
        os: std::env::consts::OS.into(),
        paranoid: system::paranoid(),
        root: system::effective_uid() == 0,
        cap_perfmon: has(system::CAP_PERFMON),
        cap_sys_admin: has(system::CAP_SYS_ADMIN),
        cap_sys_ptrace: has(system::CAP_SYS_PTRACE),
        cap_ipc_lock: has(system::CAP_IPC_LOCK),
        hardware_counting: hardware_counts(&pmus),
        pmus,
        tracefs: match tracefs::mount_state() {
            MountState::Readable(p) => Tracefs::Readable(p.display().to_string()),
            MountState::Unreadable(p) => Tracefs::Unreadable(p.display().to_string()),
            MountState::Broken(p) => Tracefs::Broken(p.display().to_string()),
            MountState::NotMounted => Tracefs::NotMounted,
        },
        tracefs_mount_command: Some(tracefs::MOUNT_COMMAND.into()),
        kernel_release: system::kernel_release(),
    }
}

/// Whether hardware counters count here, asked of the outside reference
/// rather than of this crate's own open (a regression there must fail the
/// hardware tests, not skip them): `perf stat -e instructions:u true`.
/// Where perf cannot run, a registered core PMU stands for it, so the tests
/// run and show what happens.
fn hardware_counts(pmus: &[String]) -> bool {
    let perf = std::process::Command::new("perf")
        .args(["stat", "-x,", "-e", "instructions:u", "true"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .output();
    perf.ok()
        .and_then(|out| perf_stat_counted(&String::from_utf8_lossy(&out.stderr)))
        .unwrap_or_else(|| pmus.iter().any(|p| is_core_pmu(p)))
}

/// What `perf stat -x, -e instructions:u` printed (its CSV on stderr):
/// `Some(true)` when a line of the event counted more than zero,
/// `Some(false)` when every line is zero, `<not supported>` or `<not
/// counted>`, `None` when perf printed no line for the event (it could not
/// run here; the caller then falls back to sysfs). A hybrid machine prints
/// one line per core type (`cpu_core/instructions/u`, …).
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

/// The report's facts besides the environment.
pub(crate) fn facts() -> PlatformFacts {
    let pmus = Pmu::all_system()
        .into_iter()
        .map(|p| PmuSummary {
            formats: p.formats.iter().map(|f| f.name.clone()).collect(),
            events: p.events.len(),
            cpus: p
                .cpus
                .as_ref()
                .map(|c| c.iter().map(u32::to_string).collect::<Vec<_>>().join(",")),
            caps: p.caps.clone(),
            type_id: Some(p.type_id),
            name: p.name,
        })
        .collect();
    PlatformFacts {
        kernel: system::kernel_release(),
        pmus,
        max_sample_rate: system::max_sample_rate(),
        mlock_kb: system::mlock_kb(),
        max_stack: system::max_stack(),
        nmi_watchdog: system::nmi_watchdog(),
        nofile: system::nofile_limit(),
        virtual_machine: hypervisor(),
        read_path: read_path(),
    }
}

/// The hypervisor, when CPUID says the CPU is virtual (leaf 1, ECX bit 31:
/// the bit behind `/proc/cpuinfo`'s `hypervisor` flag), named by its leaf
/// 0x4000_0000 signature. `None` on bare metal and where there is no CPUID.
fn hypervisor() -> Option<String> {
    let [_, _, ecx, _] = system::cpuid(1, 0)?;
    if ecx & (1 << 31) == 0 {
        return None;
    }
    let vendor = system::cpuid(0x4000_0000, 0)
        .map(|[_, b, c, d]| {
            [b, c, d]
                .iter()
                .flat_map(|r| r.to_le_bytes())
                .filter(|b| b.is_ascii_graphic())
                .map(char::from)
                .collect::<String>()
        })
        .filter(|s| !s.is_empty());
    Some(match vendor {
        Some(v) => match hypervisor_name(&v) {
            Some(name) => format!("{name} (cpuid signature {v:?})"),
            None => format!("cpuid signature {v:?}"),
        },
        None => "unknown hypervisor".into(),
    })
}

/// The product behind a CPUID hypervisor signature.
fn hypervisor_name(signature: &str) -> Option<&'static str> {
    Some(match signature {
        "KVMKVMKVM" => "KVM",
        "MicrosoftHv" => "Hyper-V",
        "VMwareVMware" => "VMware",
        "XenVMMXenVMM" => "Xen",
        "TCGTCGTCGTCG" => "QEMU (TCG)",
        "bhyvebhyve" => "bhyve",
        "ACRNACRNACRN" => "ACRN",
        "lrpepyhvr" => "Parallels",
        "QNXQVMBSQG" => "QNX",
        _ => return None,
    })
}

/// Maps a self-monitoring event's metadata page and times both read paths
/// on it.
fn read_path() -> ReadPathReport {
    let sysfs_setting = pmu::rdpmc_setting(Path::new(pmu::SYSFS_ROOT)).map(|(p, v)| {
        let meaning = match v.as_str() {
            "0" => "disabled",
            "1" => "allowed for processes with a perf mmap",
            "2" => "allowed for every process",
            _ => "unknown",
        };
        format!("{p}/rdpmc = {v} ({meaning})")
    });
    let mut report = ReadPathReport {
        sysfs_setting,
        ..Default::default()
    };
    let hardware = Attr::new(EventConfig::Hardware {
        event: Hardware::Instructions,
        pmu: None,
    });
    let software = Attr::new(EventConfig::Software(Software::TaskClock));
    let opened = [hardware, software].into_iter().find_map(|a| {
        let a = a
            .exclude_kernel(true)
            .exclude_hv(true)
            .read_format(ReadFormat::TOTAL_TIME_ENABLED | ReadFormat::TOTAL_TIME_RUNNING);
        let name = a.describe_event();
        Event::open(&a, Target::CALLER, None, OpenFlags::empty())
            .ok()
            .map(|e| (name, e))
    });
    let Some((name, event)) = opened else {
        report.chosen = "read(2)".into();
        report.note = Some("no self-monitoring event could be opened".into());
        return report;
    };
    report.event = name;
    if let Ok(page) = UserPage::map(&event) {
        let caps = page.caps();
        report.cap_user_rdpmc = Some(caps.user_rdpmc);
        report.index = Some(caps.index);
    }
    match ReadPath::calibrate(&event) {
        Ok(c) => {
            report.syscall_ns = Some(c.syscall_ns);
            report.rdpmc_ns = c.rdpmc_ns;
            report.chosen = match c.chosen {
                ReadPath::Rdpmc => "rdpmc".into(),
                ReadPath::Syscall => "read(2)".into(),
            };
            report.note = c.rdpmc_unavailable;
        }
        Err(e) => {
            report.chosen = "read(2)".into();
            report.note = Some(e.to_string());
        }
    }
    report
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn perf_stat_csv_decides_hardware_counting() {
        // No PMU (this machine): perf says so.
        assert_eq!(
            perf_stat_counted("<not supported>,,instructions:u,0,100.00,,\n"),
            Some(false)
        );
        assert_eq!(
            perf_stat_counted("<not counted>,,instructions:u,0,0.00,,\n"),
            Some(false)
        );
        // A PMU that is present but counts zero.
        assert_eq!(
            perf_stat_counted("0,,instructions:u,401234,100.00,,\n"),
            Some(false)
        );
        assert_eq!(
            perf_stat_counted("183412,,instructions:u,401234,100.00,,\n"),
            Some(true)
        );
        // Hybrid: one line per core type; one counting is enough.
        assert_eq!(
            perf_stat_counted(
                "<not counted>,,cpu_atom/instructions/u,0,0.00,,\n\
                 200311,,cpu_core/instructions/u,523000,100.00,,\n"
            ),
            Some(true)
        );
        // perf could not run (a wrapper without a matching perf, an error).
        assert_eq!(
            perf_stat_counted("WARNING: perf not found for kernel 6.1.0\n"),
            None
        );
        assert_eq!(perf_stat_counted(""), None);
        // Other events' lines are not the reference.
        assert_eq!(perf_stat_counted("5,,page-faults:u,1,100.00,,\n"), None);
    }

    #[test]
    fn hypervisor_signatures_are_named() {
        assert_eq!(hypervisor_name("KVMKVMKVM"), Some("KVM"));
        assert_eq!(hypervisor_name("MicrosoftHv"), Some("Hyper-V"));
        assert_eq!(hypervisor_name("SomethingNew"), None);
    }

    /// The CPUID hypervisor bit agrees with the kernel's own reading of it,
    /// the `hypervisor` flag of `/proc/cpuinfo` (x86 only).
    #[test]
    fn the_hypervisor_bit_is_the_cpuinfo_flag() {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").expect("read /proc/cpuinfo");
        let Some(flags) = cpuinfo.lines().find(|l| l.starts_with("flags")) else {
            // Not x86: neither CPUID nor the flag.
            assert_eq!(hypervisor(), None);
            return;
        };
        let flagged = flags.split_whitespace().any(|f| f == "hypervisor");
        assert_eq!(hypervisor().is_some(), flagged, "{:?}", hypervisor());
    }
}
