//! What a test (or a program) needs from the machine, checked against an
//! [`Environment`] with the kernel's own rules, so that a test that cannot
//! run here is skipped with the reason instead of failing or passing falsely.
//!
//! The environment is gathered independently of the code under test (the
//! platform's plain facts: sysctls, capabilities, the PMU directory, the
//! tracefs mount points, and `perf stat` as the outside reference for
//! hardware counting; never an event this crate resolves or opens), so a
//! regression in this crate fails its tests instead of turning them into
//! skips. This module only judges those facts: it reads nothing itself. A machine that is broken rather than merely
//! without something (perf_event present but no PMU listed, a core PMU that
//! does not count, tracefs mounted but unreadable by root) gives
//! [`Verdict::Broken`]: the test fails with the reason.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::backend::facts::{Environment, Tracefs};

/// The outcome of checking one requirement.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// The requirement holds: the test runs.
    Met,
    /// The machine or caller lacks it: the test is skipped with the reason.
    Unmet(String),
    /// The machine is broken in a way the requirement does not allow: the
    /// test fails with the reason instead of skipping.
    Broken(String),
}

/// One thing a test needs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Requirement {
    /// The perf_event subsystem exists (Linux with `perf_event_paranoid`).
    PerfEvent,
    /// `perf_event_paranoid <= N`, or CAP_PERFMON/CAP_SYS_ADMIN which the
    /// kernel lets override it. Levels: 2 = user-space counting of own
    /// processes, 1 = + kernel, 0 = + CPU-wide, -1 = + raw tracepoint data.
    Paranoid(i32),
    /// A PMU of this name is registered (`cpu`, `msr`, `uprobe`, …).
    Pmu(String),
    /// Hardware counters exist and actually count (not just a PMU that
    /// returns zeros under a hypervisor).
    HardwareCounting,
    /// tracefs is mounted and readable by the caller.
    TracefsReadable,
    /// Effective uid 0.
    Root,
    /// Not uid 0 (for testing the unprivileged paths).
    NotRoot,
    /// CAP_PERFMON or CAP_SYS_ADMIN (what uprobe/kprobe PMUs demand).
    PerfmonCapable,
    /// The ring buffer may exceed `perf_event_mlock_kb` (CAP_IPC_LOCK).
    IpcLock,
    /// The paranoid level that applies to the caller is at least N (for
    /// testing that restrictions are reported well).
    RestrictedTo(i32),
    /// A program on `PATH` (e.g. `perf` for cross-checks).
    Program(String),
    /// A Linux kernel of at least this (major, minor) release, for kernel
    /// features a test needs (6.12: `PERF_SAMPLE_READ` on inherited events).
    Kernel(u32, u32),
}

impl fmt::Display for Requirement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Requirement::PerfEvent => f.write_str("perf_event"),
            Requirement::Paranoid(n) => write!(f, "perf_event_paranoid <= {n} (or CAP_PERFMON)"),
            Requirement::Pmu(p) => write!(f, "the `{p}` PMU"),
            Requirement::HardwareCounting => f.write_str("working hardware counters"),
            Requirement::TracefsReadable => f.write_str("readable tracefs"),
            Requirement::Root => f.write_str("root"),
            Requirement::NotRoot => f.write_str("a non-root user"),
            Requirement::PerfmonCapable => f.write_str("CAP_PERFMON or CAP_SYS_ADMIN"),
            Requirement::IpcLock => f.write_str("CAP_IPC_LOCK"),
            Requirement::RestrictedTo(n) => write!(f, "effective perf_event_paranoid >= {n}"),
            Requirement::Program(p) => write!(f, "`{p}` on PATH"),
            Requirement::Kernel(major, minor) => write!(f, "Linux >= {major}.{minor}"),
        }
    }
}

impl Requirement {
    /// A short, stable name of the requirement (`paranoid:1`, `pmu:cpu`,
    /// `hardware`, `tracefs`, …). Skip reasons start with `[token]`, and
    /// `PMC_LIVE_FORCE=token` forces exactly this requirement, which is how
    /// `cargo xtask test --matrix` proves each skip one requirement at a time.
    pub fn token(&self) -> String {
        match self {
            Requirement::PerfEvent => "perf-event".into(),
            Requirement::Paranoid(n) => format!("paranoid:{n}"),
            Requirement::Pmu(p) => format!("pmu:{p}"),
            Requirement::HardwareCounting => "hardware".into(),
            Requirement::TracefsReadable => "tracefs".into(),
            Requirement::Root => "root".into(),
            Requirement::NotRoot => "not-root".into(),
            Requirement::PerfmonCapable => "perfmon".into(),
            Requirement::IpcLock => "ipc-lock".into(),
            Requirement::RestrictedTo(n) => format!("restricted:{n}"),
            Requirement::Program(p) => format!("program:{p}"),
            Requirement::Kernel(major, minor) => format!("kernel:{major}.{minor}"),
        }
    }

    /// Checks the requirement, telling a machine that lacks it (skip) from
    /// one that is broken (fail).
    pub fn verdict(&self, env: &Environment) -> Verdict {
        match self {
            Requirement::Pmu(_) | Requirement::HardwareCounting
                if env.paranoid.is_some() && env.pmus.is_empty() =>
            {
                Verdict::Broken(
                    "perf_event is present but the kernel lists no PMU (sysfs not mounted or \
                     unreadable?); not even `software` is registered"
                        .into(),
                )
            }
            Requirement::HardwareCounting
                if env.paranoid.is_some() && env.has_core_pmu() && !env.hardware_counting =>
            {
                Verdict::Broken(
                    "a core PMU is registered but `perf stat -e instructions:u true` counts \
                     nothing: the PMU is present and does not count (a hypervisor exposing \
                     a dead PMU?)"
                        .into(),
                )
            }
            Requirement::TracefsReadable => match &env.tracefs {
                Tracefs::Broken(p) => Verdict::Broken(format!(
                    "tracefs is listed as mounted at {p} but its events directory is not \
                     readable even by root: the mount failed or went stale"
                )),
                Tracefs::Unreadable(p) if env.root => Verdict::Broken(format!(
                    "tracefs at {p} is not readable by root: the mount is broken"
                )),
                _ => self
                    .check(env)
                    .map_or_else(Verdict::Unmet, |()| Verdict::Met),
            },
            _ => self
                .check(env)
                .map_or_else(Verdict::Unmet, |()| Verdict::Met),
        }
    }

    /// `Ok` when `env` satisfies the requirement, else the reason it does not.
    pub fn check(&self, env: &Environment) -> Result<(), String> {
        let perf = || {
            env.paranoid.is_some().then_some(()).ok_or_else(|| {
                format!(
                    "perf_event is not available on this system ({}: no \
                     kernel.perf_event_paranoid sysctl)",
                    env.os
                )
            })
        };
        match self {
            Requirement::PerfEvent => perf(),
            Requirement::Paranoid(n) => {
                perf()?;
                let level = env.paranoid.unwrap_or(i32::MAX);
                if env.perfmon_capable() || level <= *n {
                    Ok(())
                } else {
                    Err(format!(
                        "needs perf_event_paranoid <= {n} but it is {level} and the caller \
                         lacks CAP_PERFMON/CAP_SYS_ADMIN"
                    ))
                }
            }
            Requirement::Pmu(p) => {
                if env.has_pmu(p) {
                    Ok(())
                } else if p == "cpu" {
                    Err(
                        "no hardware PMU (the kernel lists no `cpu` PMU; a virtual machine \
                         without PMU passthrough?)"
                            .into(),
                    )
                } else {
                    Err(format!("no `{p}` PMU (the kernel does not list one)"))
                }
            }
            Requirement::HardwareCounting => {
                perf()?;
                if env.hardware_counting {
                    Ok(())
                } else if !env.has_core_pmu() {
                    Err(
                        "no hardware PMU (virtual machine without PMU passthrough?): \
                         hardware events cannot be counted here"
                            .into(),
                    )
                } else {
                    Err("a hardware PMU is registered but its counters do not count here".into())
                }
            }
            Requirement::TracefsReadable => match &env.tracefs {
                Tracefs::Readable(_) => Ok(()),
                Tracefs::Unreadable(p) => {
                    Err(format!("tracefs at {p} is not readable by this user"))
                }
                Tracefs::Broken(p) => Err(format!(
                    "tracefs is listed as mounted at {p} but its events directory is not readable"
                )),
                Tracefs::NotMounted => Err(match &env.tracefs_mount_command {
                    Some(c) => format!("tracefs is not mounted (as root: {c})"),
                    None => "tracefs is not mounted".into(),
                }),
            },
            Requirement::Root => {
                if env.root {
                    Ok(())
                } else {
                    Err("needs root".into())
                }
            }
            Requirement::NotRoot => {
                if env.root {
                    Err("tests an unprivileged path; runs only as a non-root user".into())
                } else {
                    Ok(())
                }
            }
            Requirement::PerfmonCapable => {
                if env.perfmon_capable() {
                    Ok(())
                } else {
                    Err("needs CAP_PERFMON or CAP_SYS_ADMIN".into())
                }
            }
            Requirement::IpcLock => {
                if env.cap_ipc_lock {
                    Ok(())
                } else {
                    Err("needs CAP_IPC_LOCK to exceed perf_event_mlock_kb".into())
                }
            }
            Requirement::RestrictedTo(n) => {
                perf()?;
                match env.effective_paranoid() {
                    Some(p) if p >= *n => Ok(()),
                    Some(p) => Err(format!(
                        "tests a restriction of perf_event_paranoid >= {n}, but {p} applies to this caller (root or CAP_PERFMON bypasses it)"
                    )),
                    None => Err("perf_event is not available".into()),
                }
            }
            Requirement::Kernel(major, minor) => Self::check_kernel(*major, *minor, env),
            Requirement::Program(p) => {
                if on_path(p) {
                    Ok(())
                } else {
                    Err(format!("`{p}` is not installed (not found on PATH)"))
                }
            }
        }
    }

    /// Checks a kernel-release requirement against `env.kernel_release`.
    fn check_kernel(major: u32, minor: u32, env: &Environment) -> Result<(), String> {
        let running = kernel_version(&env.kernel_release);
        match running {
            Some(v) if env.os == "linux" && v >= (major, minor) => Ok(()),
            _ => Err(format!(
                "needs Linux {major}.{minor} or later; this is {} {}",
                env.os, env.kernel_release
            )),
        }
    }

    /// Checks all requirements; the first unmet one gives the reason.
    pub fn check_all(reqs: &[Requirement], env: &Environment) -> Result<(), String> {
        reqs.iter().try_for_each(|r| r.check(env))
    }
}

/// `(major, minor)` of a release string such as `6.1.0-57-arm64`.
pub fn kernel_version(release: &str) -> Option<(u32, u32)> {
    let mut parts = release.split(|c: char| !c.is_ascii_digit());
    Some((parts.next()?.parse().ok()?, parts.next()?.parse().ok()?))
}

fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|d| d.join(program).is_file()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(paranoid: i32, root: bool, caps: bool) -> Environment {
        Environment {
            os: "linux".into(),
            paranoid: Some(paranoid),
            root,
            cap_perfmon: caps,
            cap_sys_admin: caps,
            cap_sys_ptrace: caps,
            cap_ipc_lock: caps,
            pmus: vec!["software".into(), "tracepoint".into()],
            hardware_counting: false,
            tracefs: Tracefs::NotMounted,
            tracefs_mount_command: Some(MOUNT.into()),
            kernel_release: "6.18.44".into(),
        }
    }

    /// What a synthetic platform says about mounting tracefs.
    const MOUNT: &str = "mount -t tracefs nodev /mnt/tracing";
    /// Its tracefs mount point.
    const AT: &str = "/mnt/tracing";

    #[test]
    fn paranoid_is_overridden_by_capabilities_like_the_kernel() {
        let user = env(2, false, false);
        assert!(Requirement::Paranoid(2).check(&user).is_ok());
        let err = Requirement::Paranoid(1).check(&user).unwrap_err();
        assert!(err.contains("<= 1") && err.contains("is 2"), "{err}");
        let root = env(2, true, true);
        assert!(Requirement::Paranoid(-1).check(&root).is_ok());
        let lax = env(-1, false, false);
        assert!(Requirement::Paranoid(-1).check(&lax).is_ok());
        assert_eq!(root.effective_paranoid(), Some(-1));
        assert_eq!(user.effective_paranoid(), Some(2));
    }

    #[test]
    fn missing_perf_event_explains_itself() {
        let mut e = env(2, true, true);
        e.paranoid = None;
        let err = Requirement::Paranoid(2).check(&e).unwrap_err();
        assert!(err.contains("not available"), "{err}");
    }

    #[test]
    fn pmu_and_hardware_requirements_name_the_virtual_machine_case() {
        let e = env(2, true, true);
        assert!(
            Requirement::Pmu("cpu".into())
                .check(&e)
                .unwrap_err()
                .contains("virtual machine")
        );
        assert!(Requirement::Pmu("software".into()).check(&e).is_ok());
        assert!(
            Requirement::HardwareCounting
                .check(&e)
                .unwrap_err()
                .contains("no hardware PMU")
        );
        let mut hw = e.clone();
        hw.pmus.push("cpu".into());
        assert!(
            Requirement::HardwareCounting
                .check(&hw)
                .unwrap_err()
                .contains("do not count")
        );
        hw.hardware_counting = true;
        assert!(Requirement::HardwareCounting.check(&hw).is_ok());
    }

    #[test]
    fn tracefs_root_and_capability_requirements() {
        let mut e = env(2, false, false);
        assert!(
            Requirement::TracefsReadable
                .check(&e)
                .unwrap_err()
                .contains("mount -t tracefs")
        );
        // The advice is the platform's; without one, the fact alone.
        let mut bare = e.clone();
        bare.tracefs_mount_command = None;
        assert_eq!(
            Requirement::TracefsReadable.check(&bare).unwrap_err(),
            "tracefs is not mounted"
        );
        e.tracefs = Tracefs::Unreadable(AT.into());
        assert!(
            Requirement::TracefsReadable
                .check(&e)
                .unwrap_err()
                .contains("not readable")
        );
        e.tracefs = Tracefs::Readable(AT.into());
        assert!(Requirement::TracefsReadable.check(&e).is_ok());
        assert!(Requirement::Root.check(&e).is_err());
        assert!(Requirement::NotRoot.check(&e).is_ok());
        assert!(Requirement::PerfmonCapable.check(&e).is_err());
        assert!(Requirement::IpcLock.check(&e).is_err());
        let r = env(2, true, true);
        assert!(Requirement::NotRoot.check(&r).is_err());
        assert!(
            Requirement::check_all(&[Requirement::Root, Requirement::PerfmonCapable], &r).is_ok()
        );
    }

    #[test]
    fn restriction_and_program_requirements() {
        let user = env(2, false, false);
        assert!(Requirement::RestrictedTo(2).check(&user).is_ok());
        assert!(
            Requirement::RestrictedTo(3)
                .check(&user)
                .unwrap_err()
                .contains("2 applies")
        );
        let root = env(2, true, true);
        assert!(Requirement::RestrictedTo(0).check(&root).is_err());
        assert!(Requirement::Program("sh".into()).check(&root).is_ok());
        let missing = Requirement::Program("no-such-program-pmc".into()).check(&root);
        assert!(missing.unwrap_err().contains("not installed"));
    }

    #[test]
    fn a_broken_machine_fails_instead_of_skipping() {
        let mut e = env(2, true, true);
        // No core PMU: hardware tests skip, with the virtual machine hint.
        assert!(matches!(
            Requirement::HardwareCounting.verdict(&e),
            Verdict::Unmet(r) if r.contains("no hardware PMU")
        ));
        // A core PMU that perf says does not count: broken, not a skip.
        e.pmus.push("cpu".into());
        assert!(matches!(
            Requirement::HardwareCounting.verdict(&e),
            Verdict::Broken(r) if r.contains("does not count")
        ));
        e.hardware_counting = true;
        assert_eq!(Requirement::HardwareCounting.verdict(&e), Verdict::Met);
        // perf_event present but sysfs lists nothing at all.
        e.pmus.clear();
        for r in [
            Requirement::Pmu("uprobe".into()),
            Requirement::HardwareCounting,
        ] {
            assert!(
                matches!(r.verdict(&e), Verdict::Broken(ref m) if m.contains("lists no PMU")),
                "{r}"
            );
        }
        // Without perf_event, an empty list is just the system's state.
        e.paranoid = None;
        assert!(matches!(
            Requirement::Pmu("uprobe".into()).verdict(&e),
            Verdict::Unmet(_)
        ));
    }

    #[test]
    fn tracefs_not_mounted_skips_but_a_failed_mount_fails() {
        let mut e = env(2, true, true);
        assert!(matches!(
            Requirement::TracefsReadable.verdict(&e),
            Verdict::Unmet(r) if r.contains("not mounted")
        ));
        e.tracefs = Tracefs::Broken(AT.into());
        assert!(matches!(
            Requirement::TracefsReadable.verdict(&e),
            Verdict::Broken(r) if r.contains("tracefs") && r.contains(AT)
        ));
        // Unreadable is a permission for a user, a broken mount for root.
        e.tracefs = Tracefs::Unreadable(AT.into());
        assert!(matches!(
            Requirement::TracefsReadable.verdict(&e),
            Verdict::Broken(_)
        ));
        let mut user = env(2, false, false);
        user.tracefs = Tracefs::Unreadable(AT.into());
        assert!(matches!(
            Requirement::TracefsReadable.verdict(&user),
            Verdict::Unmet(r) if r.contains("not readable by this user")
        ));
    }

    #[test]
    fn tokens_name_each_requirement_uniquely() {
        let all = [
            Requirement::PerfEvent,
            Requirement::Paranoid(1),
            Requirement::Paranoid(-1),
            Requirement::Pmu("cpu".into()),
            Requirement::HardwareCounting,
            Requirement::TracefsReadable,
            Requirement::Root,
            Requirement::NotRoot,
            Requirement::PerfmonCapable,
            Requirement::IpcLock,
            Requirement::RestrictedTo(2),
            Requirement::Program("perf".into()),
        ];
        let tokens: Vec<String> = all.iter().map(Requirement::token).collect();
        assert_eq!(
            tokens,
            [
                "perf-event",
                "paranoid:1",
                "paranoid:-1",
                "pmu:cpu",
                "hardware",
                "tracefs",
                "root",
                "not-root",
                "perfmon",
                "ipc-lock",
                "restricted:2",
                "program:perf",
            ]
        );
        for t in &tokens {
            assert!(!t.contains([' ', ',', '[', ']']), "{t}");
        }
    }

    #[test]
    fn kernel_requirements_compare_major_then_minor() {
        let mut e = env(2, false, false);
        assert!(Requirement::Kernel(6, 12).check(&e).is_ok());
        e.kernel_release = "6.1.0-57-arm64".into();
        let err = Requirement::Kernel(6, 12).check(&e).unwrap_err();
        assert!(
            err.contains("6.12") && err.contains("6.1.0-57-arm64"),
            "{err}"
        );
        assert!(Requirement::Kernel(5, 13).check(&e).is_ok());
        e.kernel_release = "7.0.0".into();
        assert!(Requirement::Kernel(6, 12).check(&e).is_ok());
        e.kernel_release = String::new();
        assert!(Requirement::Kernel(6, 12).check(&e).is_err());
        assert_eq!(Requirement::Kernel(6, 12).token(), "kernel:6.12");
        assert_eq!(kernel_version("6.12.0"), Some((6, 12)));
    }

    #[test]
    fn core_pmu_names() {
        use crate::backend::facts::is_core_pmu;
        for n in ["cpu", "cpu_core", "cpu_atom", "armv8_pmuv3_0"] {
            assert!(is_core_pmu(n), "{n}");
        }
        for n in ["software", "msr", "uprobe", "breakpoint", "cstate_core", ""] {
            assert!(!is_core_pmu(n), "{n}");
        }
    }
}
