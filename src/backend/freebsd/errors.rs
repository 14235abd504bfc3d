//! hwpmc's errors as [`Error`]s: what failed, the errno (in the host's
//! numbering, so [`Error::errno`] compares with `libc::E*`), and what to do
//! (pmc-freebsd's hint for that operation and errno).

use pmc_freebsd::{Errno, Op};

use crate::Error;

/// A FreeBSD errno in the numbering of the host this runs on: the same
/// number on FreeBSD; on other hosts (tests over the kernel double) the
/// host's constant of the same name.
pub fn host_errno(errno: Errno) -> i32 {
    if cfg!(target_os = "freebsd") {
        return errno.0;
    }
    match errno {
        Errno::EPERM => libc::EPERM,
        Errno::ENOENT => libc::ENOENT,
        Errno::ESRCH => libc::ESRCH,
        Errno::ENXIO => libc::ENXIO,
        Errno::EBADF => libc::EBADF,
        Errno::ENOMEM => libc::ENOMEM,
        Errno::EFAULT => libc::EFAULT,
        Errno::EBUSY => libc::EBUSY,
        Errno::EEXIST => libc::EEXIST,
        Errno::EINVAL => libc::EINVAL,
        Errno::EOPNOTSUPP => libc::EOPNOTSUPP,
        Errno::ENOSYS => libc::ENOSYS,
        Errno::EDOOFUS => crate::EDOOFUS,
        // No host name for it (EPROGMISMATCH is BSD's): the nearest.
        Errno::EPROGMISMATCH => libc::EPROTO,
        other => other.0,
    }
}

/// Maps a pmc-freebsd error for the operation `what` (e.g. `attach to
/// process 42`) onto the variant with libpmc's errno.
pub fn from_freebsd(e: pmc_freebsd::Error, what: &str) -> Error {
    match e {
        pmc_freebsd::Error::Kernel { op, errno, hint } => from_kernel(op, errno, hint, what),
        pmc_freebsd::Error::Spec(spec) => Error::UnknownEvent {
            what: format!("event {:?}", spec.spec),
            why: format!("{}; list hwpmc's events with pmccontrol -L", spec.reason),
            reason: crate::Reason::UnknownEvent {
                closest: Vec::new(),
            }
            .boxed(),
        },
        pmc_freebsd::Error::Invalid(why) => Error::InvalidArgument {
            op: "hwpmc".into(),
            why: format!("{what}: {why}"),
        },
        version @ pmc_freebsd::Error::Version { .. } => Error::Os {
            op: what.to_string().into(),
            source: std::io::Error::from_raw_os_error(host_errno(Errno::EPROGMISMATCH)),
            hint: Some(version.to_string()),
        },
        pmc_freebsd::Error::Unsupported => Error::NoBackend {
            platform: std::env::consts::OS,
        },
    }
}

fn from_kernel(op: Op, errno: Errno, hint: &'static str, what: &str) -> Error {
    let op_what = format!("{what} (PMC_OP_{})", op.name());
    match errno {
        Errno::EPERM => Error::PermissionDenied {
            op: op_what.into(),
            source: kernel_error(errno),
            hint: Some(hint.into()),
            reason: None,
        },
        Errno::EBUSY => Error::Busy {
            op: op.name().into(),
            why: format!("{what}: {hint}"),
            source: Some(kernel_error(errno)),
        },
        Errno::EOPNOTSUPP => Error::NotSupported {
            what: op_what,
            why: hint.into(),
            source: Some(kernel_error(errno)),
        },
        Errno::ENXIO => Error::Unavailable {
            what: op_what,
            why: hint.into(),
            reason: None,
            source: Some(kernel_error(errno)),
        },
        Errno::EDOOFUS => Error::LogRequired {
            op: op.name().into(),
            why: format!("{what}: {hint}"),
        },
        _ => Error::Os {
            op: op_what.into(),
            source: kernel_error(errno),
            hint: Some(hint.into()),
        },
    }
}

/// hwpmc's errno as the OS error behind the portable one.
fn kernel_error(errno: Errno) -> std::io::Error {
    std::io::Error::from_raw_os_error(host_errno(errno))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kernel_errno_keeps_its_meaning_and_says_what_to_do() {
        // hwpmc_mod.c's errnos (FreeBSD numbers, sys/sys/errno.h) become
        // libpmc's errno in the host's numbering, with the operation and
        // pmc-freebsd's advice for it.
        let kernel = |op, errno| pmc_freebsd::Error::Kernel {
            op,
            errno,
            hint: "the advice",
        };
        for (op, errno, host) in [
            (Op::PMCALLOCATE, Errno::EPERM, libc::EPERM),
            (Op::PMCATTACH, Errno::EBUSY, libc::EBUSY),
            (Op::PMCALLOCATE, Errno::EOPNOTSUPP, libc::EOPNOTSUPP),
            (Op::PMCALLOCATE, Errno::ENXIO, libc::ENXIO),
            (Op::PMCSTART, Errno::EDOOFUS, crate::EDOOFUS),
            (Op::PMCATTACH, Errno::ESRCH, libc::ESRCH),
            (Op::PMCATTACH, Errno::EEXIST, libc::EEXIST),
            (Op::PMCRW, Errno::EINVAL, libc::EINVAL),
            (Op::PMCGETMSR, Errno::ENOSYS, libc::ENOSYS),
        ] {
            let e = from_freebsd(kernel(op, errno), "attach to process 42");
            assert_eq!(e.errno(), host, "{op:?} {errno}: {e}");
            let text = e.to_string();
            assert!(text.contains("the advice"), "{text}");
            assert!(
                text.contains("process 42") || text.contains(op.name()),
                "{text}"
            );
        }
    }

    #[test]
    fn errnos_with_a_meaning_of_their_own_are_their_variants() {
        // hwpmc_mod.c pmc_do_op_pmcallocate: EPERM for a system PMC of a
        // jailed or unprivileged caller (PRIV_PMC_SYSTEM), EOPNOTSUPP when
        // the class lacks a capability asked for ((pcd_caps & caps) !=
        // caps), ENXIO for a system PMC on an inactive CPU
        // (pmc_cpu_is_active); pmc_do_op_pmcattach: EBUSY for a running
        // PMC; pmc_start: EDOOFUS for a PMC that needs a log file when none
        // is configured. Each is the variant that says so, with the errno
        // and what to do.
        let kernel = |op, errno| pmc_freebsd::Error::Kernel {
            op,
            errno,
            hint: "the advice",
        };
        let said = |e: &Error, host: i32| {
            assert_eq!(e.errno(), host, "{e}");
            let text = e.to_string();
            assert!(text.contains("the advice"), "{text}");
            assert!(text.contains("process 42"), "{text}");
            text
        };

        let e = from_freebsd(
            kernel(Op::PMCALLOCATE, Errno::EPERM),
            "allocate on process 42",
        );
        assert!(matches!(e, Error::PermissionDenied { .. }), "{e:?}");
        assert_eq!(e.os_errno(), Some(libc::EPERM), "{e}");
        assert!(e.is_environmental(), "{e}");
        assert!(said(&e, libc::EPERM).contains("permission denied"));

        let e = from_freebsd(kernel(Op::PMCATTACH, Errno::EBUSY), "attach to process 42");
        assert!(matches!(e, Error::Busy { .. }), "{e:?}");
        assert!(!e.is_environmental(), "{e}");
        said(&e, libc::EBUSY);

        let e = from_freebsd(
            kernel(Op::PMCALLOCATE, Errno::EOPNOTSUPP),
            "allocate on process 42",
        );
        assert!(matches!(e, Error::NotSupported { .. }), "{e:?}");
        assert!(e.is_environmental(), "{e}");
        assert!(said(&e, libc::EOPNOTSUPP).contains("not supported"));

        let e = from_freebsd(
            kernel(Op::PMCALLOCATE, Errno::ENXIO),
            "allocate on process 42",
        );
        assert!(matches!(e, Error::Unavailable { .. }), "{e:?}");
        assert!(e.is_environmental(), "{e}");
        assert!(said(&e, libc::ENXIO).contains("unavailable"));

        let e = from_freebsd(kernel(Op::PMCSTART, Errno::EDOOFUS), "start on process 42");
        assert!(matches!(e, Error::LogRequired { .. }), "{e:?}");
        assert!(said(&e, crate::EDOOFUS).contains("configure_logfile"));
    }

    #[test]
    fn an_unknown_event_is_einval_naming_it() {
        // pmc_allocate(3): EINVAL when the specifier is not recognised.
        let e = from_freebsd(
            pmc_freebsd::SpecError {
                spec: "bogus".into(),
                reason: "no event named \"bogus\"".into(),
            }
            .into(),
            "allocate",
        );
        assert_eq!(e.errno(), libc::EINVAL);
        assert!(e.to_string().contains("bogus"), "{e}");
        assert!(e.to_string().contains("pmccontrol -L"), "{e}");
    }
}
