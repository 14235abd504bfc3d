//! What a platform tells about itself for `pmc::probe`: the facts that
//! decide what its counter interface allows ([`Environment`]) and the
//! rest of a capability report ([`PmuSummary`], [`ReadPathReport`]).
//! The vocabulary of the seam: each backend reports them
//! (`BackendImpl::platform_facts`), the probe asks the selected one.

use serde::{Deserialize, Serialize};

/// The state of tracefs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Tracefs {
    /// Mounted and readable at this path.
    Readable(String),
    /// Mounted at this path but not readable by the caller.
    Unreadable(String),
    /// Not mounted where the platform looks for it.
    NotMounted,
    /// Listed as mounted in the mount table but its `events` directory
    /// cannot be read even by root: a mount that failed or went stale.
    Broken(String),
}

/// The facts about the machine and the caller that requirements depend on.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Environment {
    /// The operating system (`linux`, `freebsd`, …).
    pub os: String,
    /// `kernel.perf_event_paranoid`, `None` when perf_event is absent.
    pub paranoid: Option<i32>,
    /// Effective uid 0.
    pub root: bool,
    /// Effective CAP_PERFMON.
    pub cap_perfmon: bool,
    /// Effective CAP_SYS_ADMIN.
    pub cap_sys_admin: bool,
    /// Effective CAP_SYS_PTRACE.
    pub cap_sys_ptrace: bool,
    /// Effective CAP_IPC_LOCK.
    pub cap_ipc_lock: bool,
    /// The PMUs registered with the kernel (their sysfs directory names).
    pub pmus: Vec<String>,
    /// Hardware counters count here, by the outside reference: `perf stat
    /// -e instructions:u true` counted a non-zero value. Where perf cannot
    /// run, a registered core PMU (`cpu`, `cpu_core`, …) stands for it, so
    /// that the tests run and a failure shows.
    pub hardware_counting: bool,
    /// tracefs.
    pub tracefs: Tracefs,
    /// How root mounts tracefs here (`mount -t tracefs nodev …`), for the
    /// advice of a skip; `None` on a platform without tracefs.
    #[serde(default)]
    pub tracefs_mount_command: Option<String>,
    /// The kernel release (`uname -r`, e.g. `6.1.0-57-arm64`).
    #[serde(default)]
    pub kernel_release: String,
}

impl Environment {
    /// Whether the caller is exempt from `perf_event_paranoid` the way the
    /// kernel decides it (`perfmon_capable()`: CAP_PERFMON or CAP_SYS_ADMIN).
    pub fn perfmon_capable(&self) -> bool {
        self.cap_perfmon || self.cap_sys_admin
    }

    /// The paranoid level that applies to the caller (-1 when capable).
    pub fn effective_paranoid(&self) -> Option<i32> {
        self.paranoid
            .map(|p| if self.perfmon_capable() { -1 } else { p })
    }

    /// Whether a PMU of this name is registered.
    pub fn has_pmu(&self, name: &str) -> bool {
        self.pmus.iter().any(|p| p == name)
    }

    /// Whether a core (CPU) PMU is registered: `cpu`, the hybrid
    /// `cpu_core`/`cpu_atom`, or an Arm `armv*` PMU.
    pub fn has_core_pmu(&self) -> bool {
        self.pmus.iter().any(|p| is_core_pmu(p))
    }
}

/// Whether a sysfs PMU name is a core (CPU) PMU: `cpu`, the hybrid
/// `cpu_core`/`cpu_atom`, or an Arm `armv*` PMU.
pub fn is_core_pmu(name: &str) -> bool {
    crate::types::is_core_pmu(name)
}

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

/// The report's facts that only the platform can tell (the environment
/// aside): the kernel, its PMUs and limits, the read path.
#[derive(Clone, Debug, Default)]
pub(crate) struct PlatformFacts {
    pub(crate) kernel: String,
    pub(crate) pmus: Vec<PmuSummary>,
    pub(crate) max_sample_rate: Option<u64>,
    pub(crate) mlock_kb: Option<u64>,
    pub(crate) max_stack: Option<u32>,
    pub(crate) nmi_watchdog: Option<i32>,
    pub(crate) nofile: (u64, u64),
    pub(crate) virtual_machine: Option<String>,
    pub(crate) read_path: ReadPathReport,
}

impl Environment {
    /// A platform without perf_event: nothing is known to work.
    // Used where this build has no Linux backend.
    #[cfg_attr(
        all(
            any(target_os = "linux", target_os = "android"),
            not(pmc_force_portable)
        ),
        allow(dead_code)
    )]
    pub(crate) fn nothing_known() -> Environment {
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
            tracefs_mount_command: None,
            kernel_release: String::new(),
        }
    }
}
