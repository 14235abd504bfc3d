//! The Linux backend: hwpmc semantics on perf_event, through `pmc-linux`.
//!
//! - `resolve`: event specifier → `perf_event_attr`s (one per core PMU on
//!   hybrid CPUs), class and capabilities;
//! - `counters`: process targets (one fd per thread, inheritance for new
//!   threads and, with DESCENDANTS, new processes) and CPU targets;
//! - this file: the [`Backend`] implementation, machine queries, and the
//!   mapping of `pmc_linux::Error` into [`crate::Error`].

mod counters;
pub use counters::HotCounter;
pub(crate) mod environment;
mod machine;
mod resolve;
pub(crate) mod sampling;
pub(crate) mod test_hooks;
pub(crate) mod trial;

use std::sync::Arc;

use pmc_linux::system;

use super::{Backend, EventRequest, PreparedEvent};
use crate::log::cpu::CpuIdentity;
use crate::machine::CpuInfo;
use crate::{Class, Error, Result};

/// perf_event as a `pmc` backend. Each instance has its own collector
/// thread and trial-open cache (what its PMCs share).
#[derive(Debug, Default)]
pub struct LinuxBackend {
    shared: Arc<Shared>,
}

/// What an instance's prepared events share.
#[derive(Debug, Default)]
pub(crate) struct Shared {
    /// Copies the rings of its logging targets into their intakes.
    collector: Arc<sampling::Collector>,
    /// The events whose trial open succeeded (`allocate` repeats none).
    opened: counters::TrialCache,
}

impl LinuxBackend {
    /// The backend for the running kernel.
    pub fn new() -> LinuxBackend {
        LinuxBackend::default()
    }
}

/// cpu_possible_mask is fixed at boot: read once (every SC/SS allocation
/// checks its CPU against it).
fn possible_cpus() -> &'static [u32] {
    static POSSIBLE: std::sync::OnceLock<Vec<u32>> = std::sync::OnceLock::new();
    POSSIBLE.get_or_init(system::possible_cpus)
}

impl Backend for LinuxBackend {
    fn name(&self) -> &'static str {
        "linux-perf_event"
    }

    fn prepare(&self, request: &EventRequest<'_>) -> Result<Arc<dyn PreparedEvent>> {
        Ok(Arc::new(resolve::resolve(request, self.shared.clone())?))
    }

    fn caller_pid(&self) -> u32 {
        system::own_pid()
    }

    fn process_exists(&self, pid: u32) -> bool {
        // The caller is alive while it asks: attach(0) and pmcinfo rows of
        // its own PMCs read nothing from /proc.
        pid == system::own_pid()
            || i32::try_from(pid)
                .is_ok_and(|p| system::process_exists(p) && system::process_state(p) != Some('Z'))
    }

    fn online_cpus(&self) -> Vec<u32> {
        system::online_cpus()
    }

    fn online_cpus_last_seen(&self) -> Vec<u32> {
        system::online_cpus_last_seen()
    }

    fn possible_cpus(&self) -> Vec<u32> {
        possible_cpus().to_vec()
    }

    fn highest_possible_cpu(&self) -> u32 {
        possible_cpus().iter().max().copied().unwrap_or(0)
    }

    fn descendants(&self, pid: u32) -> Vec<u32> {
        i32::try_from(pid).map_or_else(
            |_| Vec::new(),
            |p| {
                system::descendants_of(p)
                    .into_iter()
                    .filter_map(|d| u32::try_from(d).ok())
                    .collect()
            },
        )
    }

    fn executable_path(&self, pid: u32) -> Option<String> {
        executable_path(pid)
    }

    fn how_to_online(&self, cpu: u32) -> String {
        format!("bring it online with `echo 1 > /sys/devices/system/cpu/cpu{cpu}/online`")
    }

    #[inline]
    fn monotonic_ns(&self) -> u64 {
        system::monotonic_ns()
    }

    /// From `/proc/cpuinfo` (x86) or MIDR_EL1 (arm64).
    fn cpu_identity(&self) -> CpuIdentity {
        if cfg!(target_arch = "aarch64") {
            return pmc_linux::pmu_events::host_cpuid()
                .and_then(crate::log::cpu::midr)
                .map_or_else(CpuIdentity::unknown, |midr| CpuIdentity {
                    cputype: crate::log::cpu::arm64_cputype(midr),
                    cpuid: crate::log::cpu::hwpmc_cpuid_arm64(midr),
                });
        }
        let text = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        crate::log::cpu::identity_from_cpuinfo(&text).unwrap_or_else(CpuIdentity::unknown)
    }

    fn cpuinfo(&self) -> Result<CpuInfo> {
        Ok(machine::cpuinfo())
    }

    fn event_names(&self, class: &Class) -> Result<Vec<String>> {
        machine::event_names(class)
    }
}

/// A process's executable, from `/proc/<pid>/exe`.
fn executable_path(pid: u32) -> Option<String> {
    std::fs::read_link(format!("/proc/{pid}/exe"))
        .ok()
        .map(|p| p.display().to_string())
}

/// Converts a binding error into the portable error, choosing the libpmc
/// errno: EACCES/EPERM → EPERM, a missing PMU → ENXIO, an event the PMU
/// lacks → EOPNOTSUPP, ESRCH → ESRCH, EBUSY → EBUSY.
#[cold]
#[inline(never)]
pub(crate) fn from_linux(e: pmc_linux::Error) -> Error {
    use pmc_linux::{Error as L, Hint};
    match e {
        L::Os { op, errno, hint } => {
            let no_pmu = matches!(hint, Some(Hint::NoHardwarePmu));
            let hint_text = hint.as_ref().map(ToString::to_string);
            match errno {
                libc::EACCES | libc::EPERM => Error::PermissionDenied {
                    op: op.into(),
                    source: std::io::Error::from_raw_os_error(errno),
                    hint: hint_text,
                },
                libc::ENOENT | libc::EOPNOTSUPP | libc::ENODEV if no_pmu => Error::Unavailable {
                    what: op,
                    why: format!(
                        "{} [kernel: {}]",
                        hint_text.unwrap_or_else(|| "no hardware PMU (virtual machine?)".into()),
                        pmc_linux::error::errno_name(errno)
                    ),
                },
                libc::ENOENT | libc::EOPNOTSUPP | libc::ENODEV => Error::NotSupported {
                    what: op,
                    why: format!(
                        "{} [kernel: {}]",
                        hint_text.unwrap_or_else(|| pmc_linux::error::strerror(errno)),
                        pmc_linux::error::errno_name(errno)
                    ),
                },
                libc::EBUSY => Error::Busy {
                    op: "open".into(),
                    why: format!("{op}: {}", hint_text.unwrap_or_default()),
                },
                _ => Error::Os {
                    op: op.into(),
                    source: std::io::Error::from_raw_os_error(errno),
                    hint: hint_text,
                },
            }
        }
        L::Invalid { what, why } => Error::InvalidArgument {
            op: "allocate".into(),
            why: format!("{what}: {why}"),
        },
        L::File {
            path,
            why,
            errno,
            hint,
        } => match hint {
            Some(h @ (Hint::TracefsNotMounted | Hint::TracefsPermission)) => Error::Unavailable {
                what: path,
                why: format!("{why}; {h}"),
            },
            _ => Error::Os {
                op: format!("{path}: {why}").into(),
                source: std::io::Error::from_raw_os_error(errno.unwrap_or(libc::EIO)),
                hint: hint.map(|h| h.to_string()),
            },
        },
        L::Unsupported { what, why } => Error::NotSupported { what, why },
        other => Error::Os {
            op: other.to_string().into(),
            source: std::io::Error::from_raw_os_error(other.errno()),
            hint: None,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The questions `Pmc` asks instead of reading procfs/sysfs itself:
    /// this process's executable is the one std finds for it, a pid that
    /// cannot exist has none, and the advice for an offline CPU names its
    /// sysfs switch.
    #[test]
    fn the_backend_answers_for_proc_and_sysfs() {
        let backend = LinuxBackend::new();
        let me = std::env::current_exe().unwrap().display().to_string();
        assert_eq!(backend.executable_path(std::process::id()), Some(me));
        assert_eq!(backend.executable_path(u32::MAX), None);
        assert!(
            backend
                .how_to_online(3)
                .contains("/sys/devices/system/cpu/cpu3/online")
        );
    }
}
