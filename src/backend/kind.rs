//! The kinds of backend this build has, and how to make one: what
//! [`Backend::new`](super::Backend::new) builds and what the process's selector
//! ([`crate::global::select`]) chooses among.

use std::sync::Arc;

use super::BackendImpl;
use super::portable::{self, PortableBackend};
use crate::{Class, CpuInfo, Error, Result};

/// A backend that [`crate::global::select`], `PMC_BACKEND` and
/// [`Backend::new`](super::Backend::new) can choose.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum BackendKind {
    /// Linux perf_event (`linux`; compiled on Linux only).
    Linux,
    /// The portable backend (`portable`; every platform).
    Portable,
    /// FreeBSD hwpmc(4) (`freebsd`, `hwpmc`; compiled on FreeBSD only).
    FreeBsd,
}

impl BackendKind {
    /// The backend's name ([`Backend::name`](super::Backend::name)).
    pub fn name(self) -> &'static str {
        match self {
            BackendKind::Linux => "linux-perf_event",
            BackendKind::Portable => portable::NAME,
            BackendKind::FreeBsd => "freebsd-hwpmc",
        }
    }

    /// Whether this build has the backend.
    pub fn is_compiled(self) -> bool {
        match self {
            BackendKind::Linux => LINUX_COMPILED,
            BackendKind::Portable => true,
            BackendKind::FreeBsd => cfg!(target_os = "freebsd"),
        }
    }

    /// Parses a `PMC_BACKEND` value (`linux`, `perf_event`,
    /// `linux-perf_event`, `portable`, `freebsd`, `hwpmc`; case-insensitive).
    pub fn from_name(name: &str) -> Option<BackendKind> {
        match name.trim().to_ascii_lowercase().as_str() {
            "linux" | "perf_event" | "linux-perf_event" => Some(BackendKind::Linux),
            "portable" => Some(BackendKind::Portable),
            "freebsd" | "hwpmc" | "freebsd-hwpmc" => Some(BackendKind::FreeBsd),
            _ => None,
        }
    }

    const ALL: [BackendKind; 3] = [
        BackendKind::Linux,
        BackendKind::FreeBsd,
        BackendKind::Portable,
    ];
}

const LINUX_COMPILED: bool = cfg!(all(
    any(target_os = "linux", target_os = "android"),
    not(pmc_force_portable)
));

/// The backends this build can select (their
/// [`names`](super::Backend::name)); with the `test-doubles`
/// feature the simulator is there too, through [`crate::Owner::new`].
pub fn compiled_backends() -> Vec<&'static str> {
    BackendKind::ALL
        .iter()
        .filter(|k| k.is_compiled())
        .map(|k| k.name())
        .collect()
}

/// `NotSupported` for a backend this build lacks.
pub(crate) fn compiled(kind: BackendKind) -> Result<()> {
    if kind.is_compiled() {
        return Ok(());
    }
    Err(Error::NotSupported {
        what: format!("the {} backend", kind.name()),
        why: format!("this build has only {}", compiled_backends().join(", ")),
        source: None,
    })
}

/// A new instance of a backend of this build, apart from the process's
/// choice ([`Backend::new`](super::Backend::new)).
pub(crate) fn instance(kind: BackendKind) -> Result<Arc<dyn BackendImpl>> {
    compiled(kind)?;
    Ok(build(kind, format!("pmc::backend::Backend::new({kind:?})")))
}

/// A backend of this build, with the reason it was made (what the
/// portable backend reports as its own).
pub(crate) fn build(kind: BackendKind, reason: String) -> Arc<dyn BackendImpl> {
    match kind {
        BackendKind::Portable => Arc::new(PortableBackend::new(reason)),
        BackendKind::Linux => native_linux(reason),
        BackendKind::FreeBsd => native_freebsd(reason),
    }
}

cfg_if::cfg_if! {
    if #[cfg(all(any(target_os = "linux", target_os = "android"), not(pmc_force_portable)))] {
        fn native_linux(_reason: String) -> Arc<dyn BackendImpl> {
            Arc::new(super::linux::LinuxBackend::new())
        }
    } else {
        fn native_linux(reason: String) -> Arc<dyn BackendImpl> {
            // `BackendKind::is_compiled` keeps `select` from getting here.
            Arc::new(InvalidSelection {
                why: format!("{reason} names the linux backend, which this build lacks"),
            })
        }
    }
}

cfg_if::cfg_if! {
    if #[cfg(target_os = "freebsd")] {
        fn native_freebsd(_reason: String) -> Arc<dyn BackendImpl> {
            super::freebsd::open_default()
        }
    } else {
        fn native_freebsd(reason: String) -> Arc<dyn BackendImpl> {
            // `BackendKind::is_compiled` keeps `select` from getting here.
            Arc::new(InvalidSelection {
                why: format!("{reason} names the FreeBSD backend, which this build lacks"),
            })
        }
    }
}

/// The backend of an invalid `PMC_BACKEND` (or of a kind this build
/// lacks): every call fails with
/// [`Error::InvalidArgument`] saying why, rather than silently counting
/// with another backend.
#[derive(Debug)]
pub(crate) struct InvalidSelection {
    pub(crate) why: String,
}

impl InvalidSelection {
    fn error(&self) -> Error {
        Error::invalid("backend selection", self.why.clone())
    }
}

impl BackendImpl for InvalidSelection {
    fn name(&self) -> &'static str {
        "none"
    }

    fn prepare(
        &self,
        _request: &super::EventRequest<'_>,
    ) -> Result<std::sync::Arc<dyn super::PreparedEvent>> {
        Err(self.error())
    }

    fn caller_pid(&self) -> u32 {
        std::process::id()
    }

    fn process_exists(&self, pid: u32) -> bool {
        PortableBackend::default().process_exists(pid)
    }

    fn online_cpus(&self) -> Vec<u32> {
        PortableBackend::default().online_cpus()
    }

    fn monotonic_ns(&self) -> u64 {
        super::monotonic_clock_ns()
    }

    fn cpuinfo(&self) -> Result<CpuInfo> {
        Err(self.error())
    }

    fn event_names(&self, _class: &Class) -> Result<Vec<String>> {
        Err(self.error())
    }
}
