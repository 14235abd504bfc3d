//! "What can this machine count, and why not?"
//!
//! [`Environment::detect`] gathers the facts that decide what perf_event
//! allows (paranoid level, capabilities, PMUs, tracefs, whether hardware
//! counters really count); [`Requirement`] checks a need against them with
//! the kernel's rules; [`Report`] is the serialisable answer that
//! `cargo xtask probe` prints.

mod requirements;
mod works;

use serde::{Deserialize, Serialize};

pub use requirements::{Environment, Requirement, Tracefs, Verdict, is_core_pmu};
pub use works::{ClassRow, MODES, Outcome};

/// One PMU registered with the kernel.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PmuSummary {
    /// Its sysfs name.
    pub name: String,
    /// Its `type` number for `perf_event_attr.type`.
    pub type_id: Option<u32>,
    /// Its format fields (`event`, `umask`, …).
    pub formats: Vec<String>,
    /// The number of named events it lists.
    pub events: usize,
    /// The CPUs it counts on, if it says (`cpus`/`cpumask`).
    pub cpus: Option<String>,
    /// Its `caps/*` files (`max_precise`, `branches`, `pmu_name`, …).
    pub caps: std::collections::BTreeMap<String, String>,
}

/// What user-space counter reads (rdpmc) can do here, measured.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ReadPathReport {
    /// The core PMU's `rdpmc` sysfs setting with its meaning, if there is
    /// a core PMU.
    pub sysfs_setting: Option<String>,
    /// The self-monitoring event the page was mapped for.
    pub event: String,
    /// `cap_user_rdpmc` on that event's real metadata page.
    pub cap_user_rdpmc: Option<bool>,
    /// The page's counter index (0: not on a hardware counter).
    pub index: Option<u32>,
    /// Median ns of one read(2).
    pub syscall_ns: Option<f64>,
    /// Median ns of one rdpmc read, when possible.
    pub rdpmc_ns: Option<f64>,
    /// The path the calibration chose (`read(2)` or `rdpmc`).
    pub chosen: String,
    /// Why rdpmc was not measured, or why probing failed.
    pub note: Option<String>,
}

/// The capability report of this machine.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// The backend in use.
    pub backend: String,
    /// The kernel release.
    pub kernel: String,
    /// The facts requirements are checked against.
    pub environment: Environment,
    /// The PMUs.
    pub pmus: Vec<PmuSummary>,
    /// `kernel.perf_event_max_sample_rate`.
    pub max_sample_rate: Option<u64>,
    /// `kernel.perf_event_mlock_kb`.
    pub mlock_kb: Option<u64>,
    /// `kernel.perf_event_max_stack`.
    pub max_stack: Option<u32>,
    /// `kernel.nmi_watchdog`.
    pub nmi_watchdog: Option<i32>,
    /// `RLIMIT_NOFILE` (soft, hard).
    pub nofile: (u64, u64),
    /// The hypervisor, when running in a virtual machine.
    pub virtual_machine: Option<String>,
    /// rdpmc versus read(2), measured.
    pub read_path: ReadPathReport,
    /// Each event class tried in each mode.
    pub what_works: Vec<ClassRow>,
}

impl Report {
    /// Probes this machine.
    pub fn detect() -> Report {
        imp::report()
    }

    /// A human-readable summary.
    pub fn to_text(&self) -> String {
        use std::fmt::Write as _;
        let e = &self.environment;
        let mut s = String::new();
        if !e.has_core_pmu() {
            let _ = writeln!(
                s,
                "NO HARDWARE PMU: hardware/cache/raw events cannot be counted here{}; \
                 software events, tracepoints and breakpoints still work.",
                self.virtual_machine
                    .as_ref()
                    .map(|v| format!(" (virtual machine: {v})"))
                    .unwrap_or_default()
            );
        }
        let opt = |v: Option<String>| v.unwrap_or_else(|| "-".into());
        let _ = writeln!(s, "backend              {}", self.backend);
        let _ = writeln!(s, "kernel               {}", self.kernel);
        let _ = writeln!(
            s,
            "perf_event_paranoid  {}  (effective for this caller: {})",
            opt(e.paranoid.map(|p| p.to_string())),
            opt(e.effective_paranoid().map(|p| p.to_string()))
        );
        let _ = writeln!(
            s,
            "user                 {}  CAP_PERFMON={} CAP_SYS_ADMIN={} CAP_SYS_PTRACE={} CAP_IPC_LOCK={}",
            if e.root { "root" } else { "not root" },
            yes(e.cap_perfmon),
            yes(e.cap_sys_admin),
            yes(e.cap_sys_ptrace),
            yes(e.cap_ipc_lock)
        );
        let _ = writeln!(
            s,
            "max_sample_rate      {}",
            opt(self.max_sample_rate.map(|v| v.to_string()))
        );
        let _ = writeln!(
            s,
            "mlock_kb             {}",
            opt(self.mlock_kb.map(|v| v.to_string()))
        );
        let _ = writeln!(
            s,
            "max_stack            {}",
            opt(self.max_stack.map(|v| v.to_string()))
        );
        let _ = writeln!(
            s,
            "nmi_watchdog         {}",
            opt(self.nmi_watchdog.map(|v| v.to_string()))
        );
        let _ = writeln!(
            s,
            "RLIMIT_NOFILE        {} (hard {})",
            self.nofile.0, self.nofile.1
        );
        let _ = writeln!(
            s,
            "virtual machine      {}",
            opt(self.virtual_machine.clone())
        );
        let _ = writeln!(
            s,
            "tracefs              {}",
            match &e.tracefs {
                Tracefs::Readable(p) => format!("{p} (readable)"),
                Tracefs::Unreadable(p) => format!("{p} (NOT readable by this user)"),
                Tracefs::NotMounted => {
                    "not mounted (as root: mount -t tracefs nodev /sys/kernel/tracing)".into()
                }
                Tracefs::Broken(p) =>
                    format!("{p} is mounted but its events are unreadable (BROKEN)"),
            }
        );
        let _ = writeln!(s, "hardware counting    {}", yes(e.hardware_counting));
        let pmu_type = |name: &str| {
            self.pmus
                .iter()
                .find(|p| p.name == name)
                .map(|p| format!("yes (type {})", opt(p.type_id.map(|t| t.to_string()))))
                .unwrap_or_else(|| "no".into())
        };
        let _ = writeln!(
            s,
            "probes               uprobe PMU: {}; kprobe PMU: {}",
            pmu_type("uprobe"),
            pmu_type("kprobe")
        );
        let rp = &self.read_path;
        let _ = writeln!(
            s,
            "rdpmc                {}",
            rp.sysfs_setting
                .clone()
                .unwrap_or_else(|| "no core PMU (no rdpmc sysfs setting)".into())
        );
        let _ = writeln!(
            s,
            "read path            {} chosen; read(2) {} ns, rdpmc {} (on {}: cap_user_rdpmc={}, index={}){}",
            rp.chosen,
            opt(rp.syscall_ns.map(|v| format!("{v:.0}"))),
            opt(rp.rdpmc_ns.map(|v| format!("{v:.0} ns"))),
            if rp.event.is_empty() { "-" } else { &rp.event },
            opt(rp.cap_user_rdpmc.map(|b| yes(b).to_string())),
            opt(rp.index.map(|v| v.to_string())),
            rp.note
                .as_ref()
                .map(|n| format!("; {n}"))
                .unwrap_or_default()
        );
        let _ = writeln!(s, "\nPMUs:");
        let _ = writeln!(
            s,
            "  {:<14} {:>5} {:>7}  {:<10} {:<28} caps",
            "name", "type", "events", "cpus", "formats"
        );
        for p in &self.pmus {
            let _ = writeln!(
                s,
                "  {:<14} {:>5} {:>7}  {:<10} {:<28} {}",
                p.name,
                opt(p.type_id.map(|t| t.to_string())),
                p.events,
                opt(p.cpus.clone()),
                p.formats.join(","),
                p.caps
                    .iter()
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect::<Vec<_>>()
                    .join(" ")
            );
        }
        if !self.what_works.is_empty() {
            s.push_str(&what_works_table(&self.what_works));
        }
        s
    }
}

/// The class × mode table, then each distinct failure once.
fn what_works_table(rows: &[ClassRow]) -> String {
    use std::fmt::Write as _;
    let mut s = String::new();
    let mut notes: Vec<String> = Vec::new();
    let _ = writeln!(s, "\nWhat works here (each cell really opened one event):");
    let _ = write!(s, "  {:<13}", "class");
    for m in MODES {
        let _ = write!(s, " {:<16}", m.to_string());
    }
    let _ = writeln!(s, " spec");
    for row in rows {
        let _ = write!(s, "  {:<13}", row.class);
        for (_, outcome) in &row.outcomes {
            let cell = match outcome {
                Outcome::Works => "ok".to_string(),
                Outcome::UserOnly => "usr only".to_string(),
                Outcome::NotApplicable => "-".to_string(),
                Outcome::Fails { kind, detail } => {
                    // The same failure in several modes differs only in
                    // the pid/cpu of the call: note the reason once.
                    let reason = detail
                        .split_once(" failed: ")
                        .map_or(detail.as_str(), |(_, r)| r);
                    let n = match notes.iter().position(|d| d == reason) {
                        Some(i) => i + 1,
                        None => {
                            notes.push(reason.to_string());
                            notes.len()
                        }
                    };
                    format!("{kind} [{n}]")
                }
            };
            let _ = write!(s, " {cell:<16}");
        }
        let _ = writeln!(s, " {}", row.spec);
    }
    for (i, n) in notes.iter().enumerate() {
        let _ = writeln!(s, "  [{}] {n}", i + 1);
    }
    s
}

/// What `perf stat -x, -e instructions:u` printed (its CSV on stderr):
/// `Some(true)` when a line of the event counted more than zero,
/// `Some(false)` when every line is zero, `<not supported>` or `<not
/// counted>`, `None` when perf printed no line for the event (it could not
/// run here; the caller then falls back to sysfs). A hybrid machine prints
/// one line per core type (`cpu_core/instructions/u`, …).
// Used by the Linux probe (and its tests) only.
#[cfg_attr(
    not(all(
        any(target_os = "linux", target_os = "android"),
        not(pmc_force_portable)
    )),
    allow(dead_code)
)]
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

/// Whether `/proc/self/mounts` lists a file system of `fstype` at `path`.
// Used by the Linux probe (and its tests) only.
#[cfg_attr(
    not(all(
        any(target_os = "linux", target_os = "android"),
        not(pmc_force_portable)
    )),
    allow(dead_code)
)]
fn mounted_as(mounts: &str, path: &str, fstype: &str) -> bool {
    mounts.lines().any(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        f.len() > 2 && f[1] == path && f[2] == fstype
    })
}

fn yes(b: bool) -> &'static str {
    if b { "yes" } else { "no" }
}

#[cfg(all(
    any(target_os = "linux", target_os = "android"),
    not(pmc_force_portable)
))]
mod imp {
    use std::fs;
    use std::path::Path;

    use pmc_linux::attr::{Attr, EventConfig, Hardware};
    use pmc_linux::event::{Event, OpenFlags, Target};
    use pmc_linux::system;

    use super::{Environment, PmuSummary, Report, Tracefs};

    const PMU_ROOT: &str = "/sys/bus/event_source/devices";

    fn tracefs() -> Tracefs {
        let mounts = fs::read_to_string("/proc/self/mounts").unwrap_or_default();
        for root in ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"] {
            let events = Path::new(root).join("events");
            match fs::read_dir(&events) {
                Ok(_) => return Tracefs::Readable(root.into()),
                Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
                    return Tracefs::Unreadable(root.into());
                }
                // Mounted, yet no events directory: the mount is broken.
                Err(_) if super::mounted_as(&mounts, root, "tracefs") => {
                    return Tracefs::Broken(root.into());
                }
                Err(_) => {}
            }
        }
        Tracefs::NotMounted
    }

    /// Whether hardware counters count here, asked of the outside
    /// reference rather than of this crate's own open (a regression there
    /// must fail the hardware tests, not skip them): `perf stat -e
    /// instructions:u true`. Where perf cannot run, a registered core PMU
    /// stands for it, so the tests run and show what happens.
    fn hardware_counts(pmus: &[String]) -> bool {
        let perf = std::process::Command::new("perf")
            .args(["stat", "-x,", "-e", "instructions:u", "true"])
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .output();
        perf.ok()
            .and_then(|out| super::perf_stat_counted(&String::from_utf8_lossy(&out.stderr)))
            .unwrap_or_else(|| pmus.iter().any(|p| super::is_core_pmu(p)))
    }

    pub(super) fn environment() -> Environment {
        let caps = system::effective_capabilities();
        let has = |c: u32| caps & (1 << c) != 0;
        let pmus = pmc_linux::pmu::pmu_names(Path::new(PMU_ROOT));
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
            tracefs: tracefs(),
        }
    }

    fn hypervisor() -> Option<String> {
        let cpuinfo = fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let flagged = cpuinfo
            .lines()
            .find(|l| l.starts_with("flags"))
            .is_some_and(|l| l.split_whitespace().any(|f| f == "hypervisor"));
        if !flagged {
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

    /// Maps a self-monitoring event's metadata page and times both read
    /// paths on it.
    fn read_path() -> super::ReadPathReport {
        use pmc_linux::attr::{ReadFormat, Software};
        use pmc_linux::selfmon::{ReadPath, UserPage};
        let sysfs_setting = ["cpu", "cpu_core", "cpu_atom"].iter().find_map(|p| {
            let v = fs::read_to_string(Path::new(PMU_ROOT).join(p).join("rdpmc")).ok()?;
            let v = v.trim().to_string();
            let meaning = match v.as_str() {
                "0" => "disabled",
                "1" => "allowed for processes with a perf mmap",
                "2" => "allowed for every process",
                _ => "unknown",
            };
            Some(format!("{p}/rdpmc = {v} ({meaning})"))
        });
        let mut report = super::ReadPathReport {
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

    pub(super) fn report() -> Report {
        let environment = environment();
        let pmus = pmc_linux::pmu::Pmu::all_system()
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
        Report {
            backend: crate::backend::active().to_string(),
            kernel: system::kernel_release(),
            environment,
            pmus,
            max_sample_rate: system::max_sample_rate(),
            mlock_kb: system::mlock_kb(),
            max_stack: system::max_stack(),
            nmi_watchdog: system::nmi_watchdog(),
            nofile: system::nofile_limit(),
            virtual_machine: hypervisor(),
            read_path: read_path(),
            what_works: super::works::what_works(),
        }
    }
}

#[cfg(not(all(
    any(target_os = "linux", target_os = "android"),
    not(pmc_force_portable)
)))]
mod imp {
    use super::{Environment, Report, Tracefs};

    pub(super) fn environment() -> Environment {
        Environment {
            os: std::env::consts::OS.into(),
            paranoid: None,
            root: false,
            cap_perfmon: false,
            cap_sys_admin: false,
            cap_sys_ptrace: false,
            cap_ipc_lock: false,
            pmus: Vec::new(),
            hardware_counting: false,
            tracefs: Tracefs::NotMounted,
        }
    }

    pub(super) fn report() -> Report {
        Report {
            backend: crate::backend::active().to_string(),
            kernel: String::new(),
            environment: environment(),
            pmus: Vec::new(),
            max_sample_rate: None,
            mlock_kb: None,
            max_stack: None,
            nmi_watchdog: None,
            nofile: (0, 0),
            virtual_machine: None,
            read_path: super::ReadPathReport::default(),
            what_works: super::works::what_works(),
        }
    }
}

impl Environment {
    /// Detects the facts of this machine and caller.
    pub fn detect() -> Environment {
        imp::environment()
    }
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
    fn mounts_are_matched_by_path_and_type() {
        let mounts = "sysfs /sys sysfs rw 0 0\n\
                      nodev /sys/kernel/tracing tracefs rw,relatime 0 0\n\
                      debugfs /sys/kernel/debug debugfs rw 0 0\n";
        assert!(mounted_as(mounts, "/sys/kernel/tracing", "tracefs"));
        assert!(!mounted_as(mounts, "/sys/kernel/debug/tracing", "tracefs"));
        assert!(!mounted_as(mounts, "/sys/kernel/debug", "tracefs"));
        assert!(!mounted_as("", "/sys/kernel/tracing", "tracefs"));
    }
}
