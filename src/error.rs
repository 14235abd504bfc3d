//! The one error type of `pmc`.
//!
//! Every variant says what failed; those that come from the operating system
//! carry its errno and advice on what to do. [`Error::errno`] gives the errno
//! libpmc would have set for the same failure, so code ported from FreeBSD can
//! keep its `switch (errno)` ([`Errno::INVAL`], [`Errno::PERM`] …); the
//! operating system's own error, when there was one, is the error's
//! [`source`](std::error::Error::source). Code that acts on a failure
//! matches the variant, the errno or the typed [`Reason`]
//! ([`Error::reason`]), never the text.

use crate::spec::SpecError;

/// The errno libpmc sets when a PMC needs a log file and none is configured:
/// FreeBSD's `EDOOFUS` there; Linux has none, so `EBADFD` ("file descriptor
/// in bad state") stands in for it.
pub const EDOOFUS: i32 = libc_errno::EBADFD;

/// An errno value, typed: what [`Error::errno`] returns. It compares
/// with the platform's raw numbers (`e.errno() == libc::EINVAL`), prints
/// as its symbolic name, and converts to the raw number for C
/// (`i32::from(errno)`, [`Errno::raw`]).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Errno(i32);

impl Errno {
    /// Operation not permitted.
    pub const PERM: Errno = Errno(libc::EPERM);
    /// No such file or directory (no such PMU, tracepoint or sysfs file).
    pub const NOENT: Errno = Errno(libc::ENOENT);
    /// No such process.
    pub const SRCH: Errno = Errno(libc::ESRCH);
    /// Interrupted system call.
    pub const INTR: Errno = Errno(libc::EINTR);
    /// Input/output error.
    pub const IO: Errno = Errno(libc::EIO);
    /// No such device or address: hwpmc's answer for missing hardware or
    /// a disabled CPU.
    pub const NXIO: Errno = Errno(libc::ENXIO);
    /// Argument list too long (perf_event_attr larger than the kernel's).
    pub const TOOBIG: Errno = Errno(libc::E2BIG);
    /// Bad file descriptor.
    pub const BADF: Errno = Errno(libc::EBADF);
    /// Resource temporarily unavailable.
    pub const AGAIN: Errno = Errno(libc::EAGAIN);
    /// Out of memory.
    pub const NOMEM: Errno = Errno(libc::ENOMEM);
    /// Permission denied (the OS's own errno behind many EPERMs).
    pub const ACCESS: Errno = Errno(libc::EACCES);
    /// Bad address.
    pub const FAULT: Errno = Errno(libc::EFAULT);
    /// Device or resource busy.
    pub const BUSY: Errno = Errno(libc::EBUSY);
    /// Already exists (already attached).
    pub const EXIST: Errno = Errno(libc::EEXIST);
    /// No such device.
    pub const NODEV: Errno = Errno(libc::ENODEV);
    /// Invalid argument.
    pub const INVAL: Errno = Errno(libc::EINVAL);
    /// Too many open files in this process.
    pub const MFILE: Errno = Errno(libc::EMFILE);
    /// No space left on device.
    pub const NOSPC: Errno = Errno(libc::ENOSPC);
    /// Function not implemented.
    pub const NOSYS: Errno = Errno(libc::ENOSYS);
    /// Operation not supported.
    pub const OPNOTSUPP: Errno = Errno(libc::EOPNOTSUPP);
    /// libpmc's "a log file is required" ([`EDOOFUS`]).
    pub const DOOFUS: Errno = Errno(EDOOFUS);

    /// The errno of this raw number.
    pub const fn from_raw(raw: i32) -> Errno {
        Errno(raw)
    }

    /// The raw number, as C's `errno` holds it.
    pub const fn raw(self) -> i32 {
        self.0
    }

    /// The symbolic name (`EINVAL`), or `errno` for a number without one
    /// here.
    pub fn name(self) -> &'static str {
        errno_name(self.0)
    }
}

impl std::fmt::Debug for Errno {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}({})", self.name(), self.0)
    }
}

impl std::fmt::Display for Errno {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} (errno {})", self.name(), self.0)
    }
}

impl PartialEq<i32> for Errno {
    fn eq(&self, other: &i32) -> bool {
        self.0 == *other
    }
}

impl PartialEq<Errno> for i32 {
    fn eq(&self, other: &Errno) -> bool {
        *self == other.0
    }
}

impl From<Errno> for i32 {
    fn from(e: Errno) -> i32 {
        e.0
    }
}

impl From<Errno> for std::io::Error {
    fn from(e: Errno) -> std::io::Error {
        std::io::Error::from_raw_os_error(e.0)
    }
}

/// What failed, in an [`Error`]: the call (`attach`, `select backend`)
/// or the system call with its subject (`perf_event_open of cycles on
/// CPU 3`) — a literal where it is one, built where it names more.
pub type Op = std::borrow::Cow<'static, str>;

/// Why a request failed, typed: the facts behind an [`Error`] that a
/// caller may act on (offer the closest event names, lower the paranoid
/// level, bring a CPU online, mount tracefs), from [`Error::reason`].
/// The error's text says the same in prose; match on this instead.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Reason {
    /// This machine has no hardware PMU (a virtual machine without PMU
    /// passthrough): only software events count.
    NoPmu,
    /// The event name names no event here.
    UnknownEvent {
        /// The known names closest to it, best first (may be empty).
        closest: Vec<String>,
    },
    /// The event names a PMU (`name/terms/`) this machine does not have.
    NoSuchPmu {
        /// The PMU named.
        name: String,
        /// The PMUs here closest to it, best first (may be empty).
        closest: Vec<String>,
    },
    /// The tracepoint does not exist (tracefs is there and lacks it).
    NoSuchTracepoint {
        /// Its subsystem (`sched`).
        subsystem: String,
        /// Its event (`sched_switch`).
        event: String,
        /// The tracepoints closest to it, as `subsystem:event`, best first.
        closest: Vec<String>,
    },
    /// The CPU is offline (or not present).
    OfflineCpu {
        /// The CPU.
        cpu: u32,
    },
    /// `kernel.perf_event_paranoid` forbids the request.
    Paranoid {
        /// Its current value.
        level: i32,
        /// The highest value that allows the request.
        needed: i32,
    },
    /// Monitoring another process needs ptrace rights over it.
    Ptrace {
        /// The process.
        pid: u32,
    },
    /// tracefs is not mounted, so no tracepoint can be named.
    NoTracefs,
    /// tracefs is mounted but this user may not read it.
    TracefsDenied,
    /// The cgroup a system PMC is restricted to does not exist (Linux).
    NoSuchCgroup {
        /// The directory tried (a relative path joined to the cgroup v2
        /// mount).
        tried: String,
    },
    /// The directory a system PMC is restricted to is not a cgroup
    /// perf_event counts in: not on a cgroup file system, or a hierarchy
    /// without the perf_event controller (Linux).
    NotACgroup {
        /// The directory tried.
        tried: String,
    },
}

impl Reason {
    /// This reason, for an error's `reason` field.
    pub(crate) fn boxed(self) -> Option<Box<Reason>> {
        Some(Box::new(self))
    }
}

/// The result type of `pmc`.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The event specifier is malformed or names nothing (EINVAL).
    #[error("invalid event specifier {spec:?} (EINVAL): {source}")]
    InvalidSpec {
        /// The specifier as given.
        spec: String,
        /// Where and why.
        #[source]
        source: SpecError,
    },

    /// The event name is well formed but names no event, tracepoint or PMU
    /// here (EINVAL, as pmc_allocate(3) reports an unrecognised event).
    #[error("{what} is unknown (EINVAL): {why}")]
    UnknownEvent {
        /// The name.
        what: String,
        /// Where it was looked for, and the closest names.
        why: String,
        /// The same, typed ([`Reason::UnknownEvent`], [`Reason::NoSuchPmu`],
        /// [`Reason::NoSuchTracepoint`]), where the backend knows it.
        reason: Option<Box<Reason>>,
    },

    /// An argument breaks the rules of pmc_allocate(3)/pmc_attach(3) (EINVAL).
    #[error("{op}: {why} (EINVAL)")]
    InvalidArgument {
        /// The call, e.g. `allocate` or `attach`.
        op: Op,
        /// The rule that was broken.
        why: String,
    },

    /// The process does not exist (ESRCH).
    #[error("{op}: no such process {pid} (ESRCH)")]
    NoSuchProcess {
        /// The call.
        op: Op,
        /// The pid.
        pid: u32,
    },

    /// The process exists but no PMC of this process monitors it
    /// (ESRCH, `pmc_detach_one_process`).
    #[error("detach: process {pid} is not monitored by any PMC of this process (ESRCH)")]
    NotMonitored {
        /// The pid.
        pid: u32,
    },

    /// A process PMC whose targets were all detached or have exited was
    /// started (ESRCH, `pmc_start`): only a PMC that was never attached
    /// attaches its owner at start.
    #[error(
        "start: PMC {id} has no targets left (they were detached or exited) (ESRCH): attach a process first"
    )]
    NoTargets {
        /// The PMC.
        id: crate::PmcId,
    },

    /// The PMC is already attached to this process (EEXIST).
    #[error("attach: the PMC is already attached to process {pid} (EEXIST)")]
    AlreadyAttached {
        /// The pid.
        pid: u32,
    },

    /// The PMC is running, or the resource is in use (EBUSY).
    #[error("{op}: {why} (EBUSY{})", os_suffix(source.as_ref()))]
    Busy {
        /// The call.
        op: Op,
        /// What is busy and what to do.
        why: String,
        /// The operating system's refusal, when it was one.
        source: Option<std::io::Error>,
    },

    /// The PMC needs a log file and none is configured (libpmc's EDOOFUS).
    #[error("{op}: a log file is required (EDOOFUS): {why}; call configure_logfile first")]
    LogRequired {
        /// The call.
        op: Op,
        /// Which rule requires it (SS mode, LOG_PROC* flags, TS on another process).
        why: String,
    },

    /// This machine cannot do what was asked (EOPNOTSUPP): the request is
    /// well formed and names something real, but this CPU, PMU or kernel
    /// lacks it.
    ///
    /// Use when the *request* is beyond the machine: an event the PMU does
    /// not count, a qualifier or capability (precise, a PMC_CAP_*) it does
    /// not have, a feature the kernel does not offer. Not for something
    /// merely absent or switched off right now ([`Error::Unavailable`]) nor
    /// for a platform without a backend ([`Error::NoBackend`]).
    #[error("{what} is not supported (EOPNOTSUPP{}): {why}", os_suffix(source.as_ref()))]
    NotSupported {
        /// The feature.
        what: String,
        /// Why, and what to use instead.
        why: String,
        /// The operating system's refusal, when it was one (perf_event_open's
        /// ENOENT or EOPNOTSUPP for an event the PMU lacks).
        source: Option<std::io::Error>,
    },

    /// What the request needs is absent or switched off here (ENXIO, as
    /// hwpmc answers for a disabled CPU or missing PMC hardware).
    ///
    /// Use when the *resource* is missing, whatever was asked of it: no
    /// hardware PMU at all (a virtual machine), an offline CPU, tracefs
    /// not mounted. Not for an event or feature the present hardware lacks
    /// ([`Error::NotSupported`]).
    #[error("{what} is unavailable (ENXIO{}): {why}", os_suffix(source.as_ref()))]
    Unavailable {
        /// The resource.
        what: String,
        /// Why, and what to do.
        why: String,
        /// The same, typed ([`Reason::NoPmu`], [`Reason::OfflineCpu`],
        /// [`Reason::NoTracefs`] …), where it is known.
        reason: Option<Box<Reason>>,
        /// The operating system's refusal, when it was one.
        source: Option<std::io::Error>,
    },

    /// The operating system refused for lack of privilege (EPERM; the OS
    /// errno may be EACCES).
    #[error(
        "{op}: permission denied ({}, errno {}){}",
        errno_name(raw(source)),
        raw(source),
        hint_suffix(hint)
    )]
    PermissionDenied {
        /// What was attempted.
        op: Op,
        /// What the OS returned (its errno: `raw_os_error`).
        source: std::io::Error,
        /// What would allow it: the paranoid level and sysctl, CAP_PERFMON, ptrace rights.
        hint: Option<String>,
        /// The same, typed ([`Reason::Paranoid`], [`Reason::Ptrace`]), where
        /// it is known.
        reason: Option<Box<Reason>>,
    },

    /// The counter was enabled but never got onto the hardware (all of its
    /// time was lost to multiplexing): there is no value to report, which is
    /// not the same as zero.
    #[error(
        "{what}: the counter was enabled for {time_enabled} ns but never scheduled on the PMU (ENXIO; too many events for the hardware counters): use fewer events or a group"
    )]
    NotCounted {
        /// The PMC.
        what: String,
        /// Nanoseconds it was enabled.
        time_enabled: u64,
    },

    /// Another operating-system error, with its errno and advice.
    #[error(
        "{op} failed: errno {} ({}){}",
        raw(source),
        errno_name(raw(source)),
        hint_suffix(hint)
    )]
    Os {
        /// What was attempted.
        op: Op,
        /// What the OS returned (its errno: `raw_os_error`).
        source: std::io::Error,
        /// Advice, if any.
        hint: Option<String>,
    },

    /// A log stream could not be written or read.
    #[error("pmclog: {what}{}", source.as_ref().map(|e| format!(" (errno {}, {})", raw(e), errno_name(raw(e)))).unwrap_or_default())]
    Log {
        /// What went wrong.
        what: String,
        /// The I/O error, if there was one.
        source: Option<std::io::Error>,
    },

    /// There is no backend for this platform (ENXIO): `pmc` builds
    /// everywhere but counts only where a backend exists.
    ///
    /// Use only in a backend that stands in for a missing platform
    /// binding (every call fails with it); a real backend reports
    /// [`Error::NotSupported`] or [`Error::Unavailable`].
    #[error(
        "performance counters are not supported on this platform ({platform}): no pmc backend exists for it (ENXIO)"
    )]
    NoBackend {
        /// The target OS.
        platform: &'static str,
    },
}

impl Error {
    /// The errno libpmc would have set for this failure.
    pub fn errno(&self) -> Errno {
        match self {
            Error::InvalidSpec { .. }
            | Error::InvalidArgument { .. }
            | Error::UnknownEvent { .. } => Errno::INVAL,
            Error::NoSuchProcess { .. } | Error::NotMonitored { .. } | Error::NoTargets { .. } => {
                Errno::SRCH
            }
            Error::AlreadyAttached { .. } => Errno::EXIST,
            Error::Busy { .. } => Errno::BUSY,
            Error::LogRequired { .. } => Errno::DOOFUS,
            Error::NotSupported { .. } => Errno::OPNOTSUPP,
            Error::Unavailable { .. } | Error::NoBackend { .. } => Errno::NXIO,
            Error::PermissionDenied { .. } => Errno::PERM,
            Error::NotCounted { .. } => Errno::NXIO,
            Error::Os { source, .. } => Errno(raw(source)),
            Error::Log { source, .. } => source.as_ref().map_or(Errno::INVAL, |e| Errno(raw(e))),
        }
    }

    /// The operating system's own error behind this one, when there was
    /// one (also this error's [`source`](std::error::Error::source)).
    pub fn os_error(&self) -> Option<&std::io::Error> {
        match self {
            Error::PermissionDenied { source, .. } | Error::Os { source, .. } => Some(source),
            Error::Log { source, .. }
            | Error::Busy { source, .. }
            | Error::NotSupported { source, .. }
            | Error::Unavailable { source, .. } => source.as_ref(),
            _ => None,
        }
    }

    /// Why it failed, typed, where the layer that failed knows it: the
    /// closest names of an unknown event, PMU or tracepoint, the CPU that
    /// is offline, the paranoid level that forbids it ([`Reason`]).
    pub fn reason(&self) -> Option<&Reason> {
        match self {
            Error::UnknownEvent { reason, .. }
            | Error::Unavailable { reason, .. }
            | Error::PermissionDenied { reason, .. } => reason.as_deref(),
            _ => None,
        }
    }

    /// The errno the operating system actually returned, when there was one.
    pub fn os_errno(&self) -> Option<i32> {
        self.os_error().and_then(std::io::Error::raw_os_error)
    }

    /// Whether this failure means "the environment forbids it" (privilege,
    /// missing hardware, unsupported platform) rather than a bad request.
    pub fn is_environmental(&self) -> bool {
        matches!(
            self,
            Error::PermissionDenied { .. }
                | Error::Unavailable { .. }
                | Error::NoBackend { .. }
                | Error::NotSupported { .. }
        )
    }

    pub(crate) fn invalid(op: &'static str, why: impl Into<String>) -> Error {
        Error::InvalidArgument {
            op: op.into(),
            why: why.into(),
        }
    }
}

/// The errno of an OS error (the errors here are all made from one).
fn raw(e: &std::io::Error) -> i32 {
    e.raw_os_error().unwrap_or(libc::EIO)
}

/// The OS's errno in a message whose own errno is libpmc's (ENXIO for the
/// kernel's ENOENT), so the text carries both.
fn os_suffix(source: Option<&std::io::Error>) -> String {
    source
        .map(|e| format!("; the OS said {}, errno {}", errno_name(raw(e)), raw(e)))
        .unwrap_or_default()
}

fn hint_suffix(hint: &Option<String>) -> String {
    hint.as_deref()
        .map(|h| format!("; {h}"))
        .unwrap_or_default()
}

/// The symbolic name of an errno, for messages. The name table is the
/// binding's (one per project); elsewhere the POSIX errnos the portable
/// layer decides on (the probe's user-only retry matches `EACCES`/`EPERM`)
/// by the platform's own numbers, else `errno`, next to the number every
/// message also carries.
pub(crate) fn errno_name(e: i32) -> &'static str {
    cfg_if::cfg_if! {
        if #[cfg(all(any(target_os = "linux", target_os = "android"), not(pmc_force_portable)))] {
            pmc_linux::error::errno_name(e)
        } else {
            use libc::*;
            match e {
                EPERM => "EPERM",
                ENOENT => "ENOENT",
                ESRCH => "ESRCH",
                EINTR => "EINTR",
                EIO => "EIO",
                ENXIO => "ENXIO",
                E2BIG => "E2BIG",
                EBADF => "EBADF",
                EAGAIN => "EAGAIN",
                ENOMEM => "ENOMEM",
                EACCES => "EACCES",
                EFAULT => "EFAULT",
                EBUSY => "EBUSY",
                EEXIST => "EEXIST",
                ENODEV => "ENODEV",
                EINVAL => "EINVAL",
                EMFILE => "EMFILE",
                ENOSPC => "ENOSPC",
                ENOSYS => "ENOSYS",
                EOPNOTSUPP => "EOPNOTSUPP",
                _ => "errno",
            }
        }
    }
}

mod libc_errno {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    pub use libc::EBADFD;
    #[cfg(any(target_os = "freebsd", target_os = "dragonfly"))]
    pub use libc::EDOOFUS as EBADFD;
    #[cfg(not(any(
        target_os = "freebsd",
        target_os = "dragonfly",
        target_os = "linux",
        target_os = "android"
    )))]
    pub use libc::EINVAL as EBADFD;
}

#[cfg(test)]
mod errno_tests {
    use super::*;

    /// The typed errno is libpmc's number for the failure, compares with
    /// the raw constants either way round, names itself, and converts back
    /// for C; the OS's own error is an `io::Error` with the OS errno.
    #[test]
    fn errno_is_typed_comparable_and_named() {
        let e = Error::invalid("allocate", "bad");
        let errno = e.errno();
        assert_eq!(errno, libc::EINVAL);
        assert!(libc::EINVAL == errno);
        assert_eq!(i32::from(errno), libc::EINVAL);
        assert_eq!(errno.raw(), Errno::from_raw(libc::EINVAL).raw());
        assert_eq!(errno.name(), "EINVAL");
        assert_eq!(format!("{errno:?}"), format!("EINVAL({})", libc::EINVAL));
        assert!(e.os_error().is_none(), "no OS error behind a rule");

        let os = Error::PermissionDenied {
            op: "perf_event_open".into(),
            source: std::io::Error::from_raw_os_error(libc::EACCES),
            hint: None,
            reason: None,
        };
        assert_eq!(os.errno(), libc::EPERM, "libpmc's errno");
        let io = os.os_error().expect("the OS refused");
        assert_eq!(io.raw_os_error(), Some(libc::EACCES));
        let source = std::error::Error::source(&os).expect("the OS error is the source");
        let source = source
            .downcast_ref::<std::io::Error>()
            .expect("an io::Error");
        assert_eq!(source.raw_os_error(), Some(libc::EACCES));
        assert!(os.to_string().contains("EACCES"), "{os}");
        assert!(
            std::error::Error::source(&e).is_none(),
            "a rule has no OS error"
        );
        assert_eq!(
            std::io::Error::from(Errno::from_raw(libc::ENOSPC)).raw_os_error(),
            Some(libc::ENOSPC)
        );
    }
}
