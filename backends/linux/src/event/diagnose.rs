//! Why `perf_event_open` failed, in the words `perf` uses: a [`Hint`] from
//! the errno, the attr, what the kernel wrote back and the target.

use super::Target;
use std::os::fd::{AsFd, AsRawFd};

use crate::attr::{Attr, AttrBit, EventConfig, SampleType, Software};
use crate::cgroup::Cgroup;
use crate::error::Hint;
use crate::sys::abi;
use crate::system;

/// Explains a failed `perf_event_open`, the way `perf` does.
pub(super) fn diagnose_open(
    errno: i32,
    attr: &Attr,
    after: &abi::RawAttr,
    target: Target,
) -> Option<Hint> {
    let hw_type = matches!(
        attr.type_id(),
        abi::PERF_TYPE_HARDWARE | abi::PERF_TYPE_HW_CACHE | abi::PERF_TYPE_RAW
    );
    match errno {
        libc::EACCES | libc::EPERM => {
            let level = system::paranoid().unwrap_or(2);
            if system::perfmon_capable() {
                if target.pid > 0 {
                    return Some(Hint::Ptrace { pid: target.pid });
                }
                return Some(Hint::Other(refused_while_capable(attr, target)));
            }
            if level > 2 {
                return Some(Hint::Paranoid {
                    level,
                    needed: 2,
                    reason: "any use of perf_event_open by unprivileged users",
                });
            }
            let raw_samples = attr.type_id() == abi::PERF_TYPE_TRACEPOINT
                && attr.get_sample_type().contains(SampleType::RAW);
            if raw_samples && level > -1 {
                return Some(Hint::Paranoid {
                    level,
                    needed: -1,
                    reason: "sampling raw tracepoint data",
                });
            }
            if target.pid == -1 && level > 0 {
                return Some(Hint::Paranoid {
                    level,
                    needed: 0,
                    reason: "system-wide (per-CPU) monitoring",
                });
            }
            if attr.counts_kernel() && level > 1 {
                return Some(Hint::Paranoid {
                    level,
                    needed: 1,
                    reason: "counting kernel-mode events (count user space only with the \
                             `usr` qualifier or `:u`)",
                });
            }
            if attr.type_id() == abi::PERF_TYPE_TRACEPOINT && level > 1 {
                return Some(Hint::Paranoid {
                    level,
                    needed: 1,
                    reason: "tracepoints",
                });
            }
            if target.pid > 0 {
                return Some(Hint::Ptrace { pid: target.pid });
            }
            None
        }
        libc::ENOENT if hw_type && !system::has_hardware_pmu() => Some(Hint::NoHardwarePmu),
        libc::ENOENT => Some(Hint::EventNotSupported {
            what: attr.describe_event(),
        }),
        libc::EOPNOTSUPP if hw_type && !system::has_hardware_pmu() => Some(Hint::NoHardwarePmu),
        libc::EOPNOTSUPP => Some(Hint::EventNotSupported {
            what: if attr.is_sampling() {
                format!(
                    "sampling {} (no overflow interrupt?)",
                    attr.describe_event()
                )
            } else {
                format!(
                    "{} with these exclude_* or branch settings",
                    attr.describe_event()
                )
            },
        }),
        libc::ENODEV => Some(Hint::EventNotSupported {
            what: format!("{} on cpu {}", attr.describe_event(), target.cpu),
        }),
        libc::EMFILE | libc::ENFILE => {
            let (soft, hard) = system::nofile_limit();
            Some(Hint::FdLimit { soft, hard })
        }
        libc::E2BIG => Some(Hint::AttrTooBig {
            kernel_size: after.size,
        }),
        libc::EBUSY => Some(Hint::Busy {
            what: "the PMU (another exclusive or pinned user, e.g. the NMI watchdog: \
                   `sysctl -w kernel.nmi_watchdog=0`)",
        }),
        libc::ENOSPC if attr.type_id() == abi::PERF_TYPE_BREAKPOINT => Some(Hint::Busy {
            what: "every hardware breakpoint slot",
        }),
        libc::EOVERFLOW => Some(Hint::MaxStack {
            limit: system::max_stack().unwrap_or(127),
        }),
        libc::ESRCH => Some(Hint::Other(format!("no process or thread {}", target.pid))),
        libc::EINVAL if attr.get(AttrBit::PRECISE_IP) > 0 => Some(Hint::Other(
            "the PMU refused precise_ip (`precise`/`:p`): lower the level or drop it".into(),
        )),
        libc::EINVAL if target.cpu >= system::online_cpu_count() as i32 => Some(Hint::Other(
            format!("cpu {} does not exist or is offline", target.cpu),
        )),
        libc::EINVAL if attr.is_sampling() && attr.is_set(AttrBit::FREQ) => {
            Some(Hint::Other(format!(
                "the sample frequency may exceed kernel.perf_event_max_sample_rate ({})",
                system::max_sample_rate().unwrap_or(0)
            )))
        }
        _ => None,
    }
}

/// The kernel's refusals of a cgroup as a target (`perf_cgroup_connect`):
/// EBADF when the descriptor is no cgroup directory, ENOENT when its
/// hierarchy lacks the perf_event controller or the cgroup was removed.
/// ENOENT is also a missing event's errno: the cgroup is blamed only when
/// a dummy software event is refused in it too. Other errnos are the
/// event's, diagnosed as a system-wide open.
pub(super) fn diagnose_cgroup_open(errno: i32, cgroup: &Cgroup, cpu: i32) -> Option<Hint> {
    let tried = cgroup.path().display().to_string();
    match errno {
        libc::EBADF => Some(Hint::NotACgroup {
            tried,
            why: "the kernel does not take it for a cgroup directory",
        }),
        libc::ENOENT => {
            let mut dummy = Attr::new(EventConfig::Software(Software::Dummy))
                .disabled(true)
                .raw;
            let dummy_refused = crate::sys::perf_event_open(
                &mut dummy,
                cgroup.as_fd().as_raw_fd(),
                cpu,
                None,
                abi::PERF_FLAG_FD_CLOEXEC | abi::PERF_FLAG_PID_CGROUP,
            )
            .err()
                == Some(libc::ENOENT);
            dummy_refused.then_some(Hint::NotACgroup {
                tried,
                why: "its hierarchy has no perf_event controller (a cgroup v1 hierarchy of \
                      other controllers?), or the cgroup was removed",
            })
        }
        _ => None,
    }
}

/// The hint for a refusal despite CAP_PERFMON/CAP_SYS_ADMIN. A seccomp
/// filter, LSM or container runtime blocks perf_event_open as a whole, so
/// blame one only when a dummy software event on the same target is refused
/// too; when it opens, the kernel refuses this particular event (as it does
/// `ftrace:function`, which `perf` cannot open either).
fn refused_while_capable(attr: &Attr, target: Target) -> String {
    let mut dummy = Attr::new(EventConfig::Software(Software::Dummy))
        .disabled(true)
        .raw;
    let other_events_open = crate::sys::perf_event_open(
        &mut dummy,
        target.pid,
        target.cpu,
        None,
        abi::PERF_FLAG_FD_CLOEXEC,
    )
    .is_ok();
    refusal_text(attr, other_events_open)
}

fn refusal_text(attr: &Attr, other_events_open: bool) -> String {
    let event = attr.describe_event();
    if !other_events_open {
        return "refused even with CAP_PERFMON/CAP_SYS_ADMIN, and so is a dummy software event: \
                a seccomp filter, LSM (SELinux, AppArmor) or container runtime blocks \
                perf_event_open"
            .into();
    }
    if attr.type_id() == abi::PERF_TYPE_TRACEPOINT {
        format!(
            "the kernel refuses {event} itself (other events open in this process with the \
             same privileges, so nothing blocks perf_event_open): not every tracepoint can be \
             opened through perf_event_open for this use (ftrace:function, for one, is refused \
             to `perf` as well); choose another tracepoint or a kprobe"
        )
    } else {
        format!(
            "the kernel refuses {event} itself (other events open in this process with the \
             same privileges, so nothing blocks perf_event_open): try it without sampling, \
             exclude_* or branch settings, or choose another event"
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_blames_the_event_only_when_others_open() {
        let tracepoint = Attr::new(EventConfig::Tracepoint(1));
        let blocked = refusal_text(&tracepoint, false);
        assert!(blocked.contains("seccomp"), "{blocked}");
        let refused = refusal_text(&tracepoint, true);
        assert!(
            !refused.contains("seccomp") && refused.contains("not every tracepoint"),
            "{refused}"
        );
        let software = Attr::new(EventConfig::Software(Software::CpuClock));
        let refused = refusal_text(&software, true);
        assert!(
            !refused.contains("seccomp") && !refused.contains("tracepoint"),
            "{refused}"
        );
    }
}
