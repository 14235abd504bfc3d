//! Errors of the perf_event binding, each with the operation that failed, the
//! errno, and advice that names the knob to turn.

use std::fmt;

/// The result type of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What went wrong in a call into the perf_event subsystem.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A system call failed.
    #[error("{op} failed: {} (errno {errno}, {}){}", strerror(*errno), errno_name(*errno), hint_suffix(hint))]
    Os {
        /// What was being done, e.g. `perf_event_open(task-clock, pid 0, cpu -1)`.
        op: String,
        /// The raw `errno`.
        errno: i32,
        /// Why it probably happened and what to do about it.
        hint: Option<Hint>,
    },
    /// An argument was rejected before any system call was made.
    #[error("{what}: {why}")]
    Invalid {
        /// The offending argument.
        what: String,
        /// Why it is invalid.
        why: String,
    },
    /// A file under sysfs, procfs or tracefs could not be used.
    #[error("{path}: {why}")]
    File {
        /// The file.
        path: String,
        /// What was wrong with it (including the OS error, if any).
        why: String,
        /// The errno, when an I/O operation failed.
        errno: Option<i32>,
        /// Advice, e.g. how to mount tracefs.
        hint: Option<Hint>,
    },
    /// No PMU of that name under the sysfs PMU directory.
    #[error(
        "PMU `{name}`: there is no such PMU in {root}; this machine has: {}",
        closest_or_all(closest, present)
    )]
    NoSuchPmu {
        /// The name asked for.
        name: String,
        /// The directory searched (`/sys/bus/event_source/devices`).
        root: String,
        /// The PMUs there closest to `name`, best first (may be empty).
        closest: Vec<String>,
        /// Every PMU there.
        present: Vec<String>,
    },
    /// tracefs is there but has no such tracepoint.
    #[error("{path}: no tracepoint {subsystem}:{event}{}", closest_suffix(closest))]
    NoSuchTracepoint {
        /// The subsystem asked for.
        subsystem: String,
        /// The event asked for.
        event: String,
        /// The directory that does not exist.
        path: String,
        /// The tracepoints closest to it, as `subsystem:event`, best first.
        closest: Vec<String>,
    },
    /// Something this kernel, CPU or machine does not provide.
    #[error("{what} is not supported here: {why}")]
    Unsupported {
        /// The feature.
        what: String,
        /// Why, and what to use instead.
        why: String,
    },
}

impl Error {
    /// The errno this error corresponds to (`EINVAL` for argument errors).
    pub fn errno(&self) -> i32 {
        match self {
            Error::Os { errno, .. } => *errno,
            Error::Invalid { .. } => libc::EINVAL,
            Error::File { errno, .. } => errno.unwrap_or(libc::EINVAL),
            Error::Unsupported { .. } | Error::NoSuchPmu { .. } => libc::EOPNOTSUPP,
            Error::NoSuchTracepoint { .. } => libc::ENOENT,
        }
    }

    /// The diagnosis attached to this error, if any.
    pub fn hint(&self) -> Option<&Hint> {
        match self {
            Error::Os { hint, .. } | Error::File { hint, .. } => hint.as_ref(),
            _ => None,
        }
    }

    pub(crate) fn os(op: impl Into<String>, errno: i32) -> Error {
        Error::Os {
            op: op.into(),
            errno,
            hint: None,
        }
    }

    pub(crate) fn invalid(what: impl Into<String>, why: impl Into<String>) -> Error {
        Error::Invalid {
            what: what.into(),
            why: why.into(),
        }
    }

    #[allow(dead_code)] // used by the sysfs/tracefs readers
    pub(crate) fn file(path: impl fmt::Display, err: &std::io::Error) -> Error {
        Error::File {
            path: path.to_string(),
            why: err.to_string(),
            errno: err.raw_os_error(),
            hint: None,
        }
    }
}

/// A diagnosis of why a perf_event call failed, with the remedy.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Hint {
    /// `perf_event_paranoid` forbids what was asked for.
    Paranoid {
        /// The current value of `/proc/sys/kernel/perf_event_paranoid`.
        level: i32,
        /// The highest value that would allow the request.
        needed: i32,
        /// What the request needs, e.g. "counting kernel events".
        reason: &'static str,
    },
    /// Monitoring another process needs ptrace access to it.
    Ptrace {
        /// The target process.
        pid: i32,
    },
    /// The event needs a hardware PMU and this machine has none.
    NoHardwarePmu,
    /// The PMU exists but does not support this event or setting.
    EventNotSupported {
        /// What the PMU refused.
        what: String,
    },
    /// The process ran out of file descriptors.
    FdLimit {
        /// The soft `RLIMIT_NOFILE`.
        soft: u64,
        /// The hard `RLIMIT_NOFILE`.
        hard: u64,
    },
    /// The attr structure is newer than the kernel.
    AttrTooBig {
        /// The size the kernel accepts.
        kernel_size: u32,
    },
    /// A hardware resource is in exclusive use (NMI watchdog, another
    /// exclusive/pinned event, or all breakpoint slots taken).
    Busy {
        /// What is busy.
        what: &'static str,
    },
    /// The ring buffer does not fit in `perf_event_mlock_kb`.
    MlockLimit {
        /// Current `perf_event_mlock_kb`.
        limit_kb: u64,
        /// Bytes requested.
        requested: usize,
    },
    /// `sample_max_stack` exceeds `perf_event_max_stack`.
    MaxStack {
        /// Current `/proc/sys/kernel/perf_event_max_stack`.
        limit: u32,
    },
    /// tracefs is not mounted where the kernel usually puts it. The text is
    /// the remedy only: it follows an error that already says what is wrong
    /// (not mounted, or a broken mount).
    TracefsNotMounted,
    /// The caller lacks permission to read tracefs.
    TracefsPermission,
    /// The cgroup directory tried does not exist.
    NoSuchCgroup {
        /// The directory tried.
        tried: String,
        /// The cgroup v2 mount a relative path was joined to, if it was.
        mount: Option<String>,
    },
    /// The directory tried is not a cgroup perf_event can count in.
    NotACgroup {
        /// The directory tried.
        tried: String,
        /// Why not: not a directory, not on a cgroup file system, or a
        /// hierarchy without the perf_event controller.
        why: &'static str,
    },
    /// Free-form advice.
    Other(String),
}

impl fmt::Display for Hint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Hint::Paranoid {
                level,
                needed,
                reason,
            } => write!(
                f,
                "{reason} needs kernel.perf_event_paranoid <= {needed}, but it is {level}; \
                 run `sysctl -w kernel.perf_event_paranoid={needed}` as root, or grant the \
                 program CAP_PERFMON (Linux >= 5.8) or CAP_SYS_ADMIN"
            ),
            Hint::Ptrace { pid } => write!(
                f,
                "monitoring process {pid} needs ptrace access to it: run as the same user \
                 (and check /proc/sys/kernel/yama/ptrace_scope) or with CAP_SYS_PTRACE"
            ),
            Hint::NoHardwarePmu => write!(
                f,
                "this machine has no hardware PMU (/sys/bus/event_source/devices/cpu is \
                 missing; a virtual machine without PMU passthrough?): use software events \
                 such as task-clock, page-faults or context-switches"
            ),
            Hint::EventNotSupported { what } => {
                write!(f, "{what} is not supported by this CPU or PMU")
            }
            Hint::FdLimit { soft, hard } => write!(
                f,
                "out of file descriptors (RLIMIT_NOFILE soft {soft}, hard {hard}): each \
                 counter per thread and per CPU uses one; raise it with `ulimit -n` or setrlimit"
            ),
            Hint::AttrTooBig { kernel_size } => write!(
                f,
                "this kernel only knows perf_event_attr up to {kernel_size} bytes; a field \
                 beyond that (e.g. config3, sig_data, aux_action) needs a newer kernel"
            ),
            Hint::Busy { what } => write!(f, "{what} is busy"),
            Hint::MlockLimit {
                limit_kb,
                requested,
            } => write!(
                f,
                "the ring buffer ({requested} bytes) does not fit in kernel.perf_event_mlock_kb \
                 ({limit_kb} KiB per user): use fewer pages, raise it with `sysctl -w \
                 kernel.perf_event_mlock_kb=N`, or run with CAP_IPC_LOCK"
            ),
            Hint::MaxStack { limit } => write!(
                f,
                "the callchain depth exceeds kernel.perf_event_max_stack ({limit}); ask for \
                 fewer frames or raise it with sysctl"
            ),
            Hint::TracefsNotMounted => {
                write!(f, "mount it as root: `{}`", crate::tracefs::MOUNT_COMMAND)
            }
            Hint::TracefsPermission => write!(
                f,
                "tracefs is not readable by this user: run as root, or make \
                 /sys/kernel/tracing readable (mount -o remount,mode=755 /sys/kernel/tracing)"
            ),
            Hint::NoSuchCgroup { tried, mount } => write!(
                f,
                "there is no cgroup {tried}: give an existing cgroup, as an absolute directory \
                 on a cgroup file system or as a path relative to the cgroup v2 mount{}",
                mount
                    .as_ref()
                    .map_or_else(String::new, |m| format!(" ({m}; list it with `ls {m}`)"))
            ),
            Hint::NotACgroup { tried, why } => write!(
                f,
                "{tried} is not a cgroup perf_event can count in: {why}; give a cgroup v2 \
                 directory (or one of a v1 hierarchy with the perf_event controller)"
            ),
            Hint::Other(s) => f.write_str(s),
        }
    }
}

/// The closest names if there are any, else every name.
fn closest_or_all(closest: &[String], all: &[String]) -> String {
    if closest.is_empty() {
        all.join(", ")
    } else {
        closest.join(", ")
    }
}

fn closest_suffix(closest: &[String]) -> String {
    if closest.is_empty() {
        String::new()
    } else {
        format!(" (closest: {})", closest.join(", "))
    }
}

fn hint_suffix(hint: &Option<Hint>) -> String {
    match hint {
        Some(h) => format!("; {h}"),
        None => String::new(),
    }
}

/// The C library's description of an errno.
pub fn strerror(errno: i32) -> String {
    let s = std::io::Error::from_raw_os_error(errno).to_string();
    // std appends " (os error N)"; we print the errno ourselves.
    match s.rfind(" (os error") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

/// The symbolic name of an errno (`EACCES`), or `errno N`.
pub fn errno_name(errno: i32) -> &'static str {
    match errno {
        libc::EPERM => "EPERM",
        libc::ENOENT => "ENOENT",
        libc::ESRCH => "ESRCH",
        libc::EINTR => "EINTR",
        libc::EIO => "EIO",
        libc::ENXIO => "ENXIO",
        libc::E2BIG => "E2BIG",
        libc::EBADF => "EBADF",
        libc::ECHILD => "ECHILD",
        libc::EAGAIN => "EAGAIN",
        libc::ENOMEM => "ENOMEM",
        libc::EACCES => "EACCES",
        libc::EFAULT => "EFAULT",
        libc::EBUSY => "EBUSY",
        libc::EEXIST => "EEXIST",
        libc::ENODEV => "ENODEV",
        libc::ENOTDIR => "ENOTDIR",
        libc::EINVAL => "EINVAL",
        libc::ENFILE => "ENFILE",
        libc::EMFILE => "EMFILE",
        libc::ENOTTY => "ENOTTY",
        libc::ENOSPC => "ENOSPC",
        libc::ERANGE => "ERANGE",
        libc::ENOSYS => "ENOSYS",
        libc::EOPNOTSUPP => "EOPNOTSUPP",
        libc::EOVERFLOW => "EOVERFLOW",
        libc::EMSGSIZE => "EMSGSIZE",
        libc::EALREADY => "EALREADY",
        libc::EBADFD => "EBADFD",
        _ => "unknown errno",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errno_names_follow_the_kernel_numbers() {
        // asm-generic/errno-base.h, the same on every architecture:
        // EPERM 1, EBADF 9, EACCES 13.
        assert_eq!(errno_name(1), "EPERM");
        assert_eq!(errno_name(9), "EBADF");
        assert_eq!(errno_name(13), "EACCES");
        // asm-generic/errno.h numbers differ on some architectures: by name.
        assert_eq!(errno_name(libc::EOPNOTSUPP), "EOPNOTSUPP");
        // pmc's EDOOFUS stand-in on Linux, named now that pmc uses this table.
        assert_eq!(errno_name(libc::EBADFD), "EBADFD");
        assert_eq!(errno_name(-1), "unknown errno");
    }
}
