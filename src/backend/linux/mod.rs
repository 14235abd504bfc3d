//! The Linux backend: hwpmc semantics on perf_event, through `pmc-linux`.
//!
//! - `resolve`: event specifier → `perf_event_attr`s (one per core PMU on
//!   hybrid CPUs), class and capabilities;
//! - `event`: the resolved event, which opens counters for a target;
//! - `counters`: process targets (one fd per thread, inheritance for new
//!   threads and, with DESCENDANTS, new processes) and CPU targets;
//! - this file: the [`BackendImpl`] implementation, machine queries, and the
//!   mapping of `pmc_linux::Error` into [`crate::Error`].

mod counters;
pub use counters::HotCounter;
pub(crate) mod environment;
mod event;
mod machine;
mod resolve;
pub(crate) mod sampling;
#[cfg(any(test, feature = "test-doubles"))]
pub(crate) mod test_hooks;
pub(crate) mod trial;

use std::sync::Arc;

use pmc_linux::system;

use super::{BackendImpl, EventRequest, PreparedEvent};
use crate::CpuInfo;
use crate::log::cpu::CpuIdentity;
use crate::{Class, Errno, Error, Reason, Result};

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

impl BackendImpl for LinuxBackend {
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
    fn platform_facts(&self) -> crate::backend::facts::PlatformFacts {
        environment::facts()
    }

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

    fn open_cgroup(&self, path: &std::path::Path) -> Result<super::CgroupDir> {
        pmc_linux::cgroup::Cgroup::open(path)
            .map(super::CgroupDir::PerfEvent)
            .map_err(from_linux)
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
/// lacks → EOPNOTSUPP, a missing tracepoint → EINVAL, EBUSY → EBUSY. The
/// kernel's own errno stays the error's `source()`; the binding's
/// diagnosis becomes the typed [`Reason`] where it is one.
#[cold]
#[inline(never)]
pub(crate) fn from_linux(e: pmc_linux::Error) -> Error {
    use pmc_linux::Error as L;
    let os = |errno: i32| std::io::Error::from_raw_os_error(errno);
    match e {
        L::Os { op, errno, hint } => {
            let reason = hint.as_ref().and_then(reason_of);
            let advice = hint.as_ref().map(ToString::to_string);
            let errno = Errno::from_raw(errno);
            match errno {
                Errno::ACCESS | Errno::PERM => Error::PermissionDenied {
                    op: op.into(),
                    source: errno.into(),
                    hint: advice,
                    reason,
                },
                Errno::NOENT | Errno::BADF
                    if matches!(
                        reason.as_deref(),
                        Some(Reason::NoSuchCgroup { .. } | Reason::NotACgroup { .. })
                    ) =>
                {
                    Error::Unavailable {
                        what: op,
                        why: advice.unwrap_or_default(),
                        reason,
                        source: Some(errno.into()),
                    }
                }
                Errno::NOENT | Errno::OPNOTSUPP | Errno::NODEV
                    if reason.as_deref() == Some(&Reason::NoPmu) =>
                {
                    Error::Unavailable {
                        what: op,
                        why: advice.unwrap_or_default(),
                        reason,
                        source: Some(errno.into()),
                    }
                }
                Errno::NOENT | Errno::OPNOTSUPP | Errno::NODEV => Error::NotSupported {
                    what: op,
                    why: advice.unwrap_or_else(|| pmc_linux::error::strerror(errno.raw())),
                    source: Some(errno.into()),
                },
                Errno::BUSY => Error::Busy {
                    op: "open".into(),
                    why: match advice {
                        Some(advice) => format!("{op}: {advice}"),
                        None => op,
                    },
                    source: Some(errno.into()),
                },
                _ => Error::Os {
                    op: op.into(),
                    source: errno.into(),
                    hint: advice,
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
        } => match hint.as_ref().and_then(reason_of) {
            reason @ Some(_) => Error::Unavailable {
                what: path,
                why: format!("{why}; {}", hint.map(|h| h.to_string()).unwrap_or_default()),
                reason,
                source: errno.map(os),
            },
            None => Error::Os {
                op: format!("{path}: {why}").into(),
                source: os(errno.unwrap_or(libc::EIO)),
                hint: hint.map(|h| h.to_string()),
            },
        },
        // The resolver makes this an unknown event when the spec names the
        // PMU; anywhere else a PMU the kernel lacks is a missing feature.
        no_pmu @ L::NoSuchPmu { .. } => Error::NotSupported {
            what: "PMU".into(),
            why: no_pmu.to_string(),
            source: None,
        },
        L::NoSuchTracepoint {
            subsystem,
            event,
            path,
            closest,
        } => Error::UnknownEvent {
            what: format!("tracepoint {subsystem}:{event}"),
            why: format!(
                "{path} does not exist{}",
                if closest.is_empty() {
                    String::new()
                } else {
                    format!(" (closest: {})", closest.join(", "))
                }
            ),
            reason: Reason::NoSuchTracepoint {
                subsystem,
                event,
                closest,
            }
            .boxed(),
        },
        L::Unsupported { what, why } => Error::NotSupported {
            what,
            why,
            source: None,
        },
        other => Error::Os {
            op: other.to_string().into(),
            source: os(other.errno()),
            hint: None,
        },
    }
}

/// The binding's diagnosis as a typed reason, where it is one a caller
/// may act on.
fn reason_of(hint: &pmc_linux::Hint) -> Option<Box<Reason>> {
    use pmc_linux::Hint;
    match *hint {
        Hint::Paranoid { level, needed, .. } => Reason::Paranoid { level, needed },
        Hint::Ptrace { pid } => Reason::Ptrace {
            pid: u32::try_from(pid).ok()?,
        },
        Hint::NoHardwarePmu => Reason::NoPmu,
        Hint::TracefsNotMounted => Reason::NoTracefs,
        Hint::TracefsPermission => Reason::TracefsDenied,
        Hint::NoSuchCgroup { ref tried, .. } => Reason::NoSuchCgroup {
            tried: tried.clone(),
        },
        Hint::NotACgroup { ref tried, .. } => Reason::NotACgroup {
            tried: tried.clone(),
        },
        _ => return None,
    }
    .boxed()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A kernel refusal keeps its errno as the error's `source()`, an
    /// `io::Error`, whatever libpmc errno the error reports: here
    /// perf_event_open of a PMU type no kernel has (ENOENT), or EACCES/EPERM
    /// where perf_event is forbidden.
    #[test]
    fn a_kernel_refusal_is_the_source_as_an_io_error() {
        use pmc_linux::attr::{Attr, EventConfig};
        use pmc_linux::event::{Event, OpenFlags, Target};
        let attr = Attr::new(EventConfig::Dynamic {
            pmu_type: 0x7fff_fff0,
            config: 0,
            config1: 0,
            config2: 0,
            config3: 0,
        });
        let refused = Event::open(&attr, Target::task(0), None, OpenFlags::empty())
            .expect_err("no PMU has this type");
        let errno = refused.errno();
        let e = from_linux(refused);
        let source = std::error::Error::source(&e).expect("the kernel's refusal is the source");
        let io = source
            .downcast_ref::<std::io::Error>()
            .expect("an io::Error");
        assert_eq!(io.raw_os_error(), Some(errno), "{e}");
        assert_eq!(e.os_errno(), Some(errno), "{e}");
        assert!(e.to_string().contains(Errno::from_raw(errno).name()), "{e}");
    }

    /// The binding's diagnoses become typed reasons: no tracefs (from the
    /// mount points, none of which has it), a paranoid level that forbids
    /// the request, no hardware PMU.
    #[test]
    fn the_bindings_diagnoses_are_typed_reasons() {
        let nowhere = std::env::temp_dir().join(format!("pmc-no-tracefs-{}", std::process::id()));
        let missing = pmc_linux::tracefs::Tracefs::locate_in(&[nowhere], String::new)
            .expect_err("nothing is mounted there");
        let e = from_linux(missing);
        assert!(matches!(e, Error::Unavailable { .. }), "{e:?}");
        assert_eq!(e.reason(), Some(&Reason::NoTracefs), "{e}");
        assert_eq!(e.os_errno(), Some(libc::ENOENT), "{e}");
        assert!(e.to_string().contains("mount"), "says what to do: {e}");

        let forbidden = pmc_linux::Error::Os {
            op: "perf_event_open(cycles:k)".into(),
            errno: libc::EACCES,
            hint: Some(pmc_linux::Hint::Paranoid {
                level: 2,
                needed: 1,
                reason: "counting kernel events",
            }),
        };
        let e = from_linux(forbidden);
        assert_eq!(e.errno(), Errno::PERM, "{e}");
        assert_eq!(
            e.reason(),
            Some(&Reason::Paranoid {
                level: 2,
                needed: 1
            })
        );
        assert_eq!(e.os_errno(), Some(libc::EACCES), "{e}");

        let no_pmu = pmc_linux::Error::Os {
            op: "perf_event_open(cycles)".into(),
            errno: libc::ENOENT,
            hint: Some(pmc_linux::Hint::NoHardwarePmu),
        };
        let e = from_linux(no_pmu);
        assert_eq!(e.errno(), Errno::NXIO, "{e}");
        assert_eq!(e.reason(), Some(&Reason::NoPmu), "{e}");
        assert_eq!(e.os_errno(), Some(libc::ENOENT), "{e}");
    }

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

    /// A cgroup that is not there, or a directory that is no cgroup, is
    /// refused when the PMC is built, before any counter opens: ENXIO
    /// (the resource is missing), the directory tried named in the text
    /// and in the typed reason, the OS's errno as the source. No
    /// privilege is needed to be told.
    #[test]
    fn a_missing_or_false_cgroup_names_the_directory_tried() {
        let owner = crate::Owner::new(crate::backend::Backend::from(
            Arc::new(LinuxBackend::new()) as Arc<dyn BackendImpl>
        ));
        let missing = std::env::temp_dir().join(format!("pmc-no-cgroup-{}", std::process::id()));
        let e = owner
            .pmc("cpu-clock")
            .system(0)
            .cgroup(&missing)
            .build()
            .unwrap_err();
        let tried = missing.display().to_string();
        assert_eq!(e.errno(), Errno::NXIO, "{e}");
        assert_eq!(e.os_errno(), Some(libc::ENOENT), "{e}");
        assert_eq!(
            e.reason(),
            Some(&Reason::NoSuchCgroup {
                tried: tried.clone()
            })
        );
        assert!(e.to_string().contains(&tried), "{e}");
        let temp = std::env::temp_dir();
        let e = owner
            .pmc("cpu-clock")
            .per_cpu()
            .cgroup(&temp)
            .build()
            .unwrap_err();
        assert_eq!(
            e.reason(),
            Some(&Reason::NotACgroup {
                tried: temp.display().to_string()
            }),
            "{e}"
        );
        assert!(owner.pmcinfo().is_empty());
    }
}
