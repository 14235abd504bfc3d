//! The counter interfaces an [`Owner`](crate::Owner) can count on, and
//! which one this process uses.
//!
//! A [`Backend`] is an opaque handle on one instance of a platform
//! binding: Linux perf_event, FreeBSD hwpmc(4), or the portable backend
//! (CPU time, faults, context switches and block I/O of the calling
//! process, on any Unix). The process's own choice — [`select`], else
//! `PMC_BACKEND`, else the automatic one — is [`Backend::selected`], the
//! backend of [`Owner::global`](crate::Owner::global) and of every
//! libpmc-style entry point; [`active`] says which it is and why.
//! [`Backend::new`] makes an independent instance for an owner of one's
//! own.
//!
//! ```
//! use pmc::Owner;
//! use pmc::backends::{Backend, BackendKind};
//!
//! // A profiler's own owner, on the portable backend whatever the process chose.
//! let owner = Owner::new(Backend::new(BackendKind::Portable)?);
//! assert_eq!(owner.backend().name(), "portable");
//! # Ok::<(), pmc::Error>(())
//! ```
//!
//! With the `test-doubles` cargo feature, `SimBackend` — a deterministic
//! simulated machine whose clock, processes and CPUs a test drives — can
//! back an owner too (`Owner::new(SimBackend::new(2))`), for testing code
//! that uses `pmc` without a kernel.

use std::fmt;
use std::sync::Arc;

use crate::backend;
use crate::machine::CpuInfo;
use crate::{Class, Result};

pub use crate::backend::select::{BackendChoice, BackendKind, active, compiled_backends, select};
#[cfg(any(test, feature = "test-doubles"))]
pub use crate::backend::sim::SimBackend;

/// One instance of a platform binding, which an [`Owner`](crate::Owner)
/// allocates its PMCs on, drains their samples through and takes its
/// log's clock from. Cloning gives another handle on the same instance.
#[derive(Clone)]
pub struct Backend {
    inner: Arc<dyn backend::Backend>,
}

impl Backend {
    /// The backend this process uses (chosen once: [`select`], else
    /// `PMC_BACKEND`, else the automatic choice; see [`active`]): the one
    /// [`Owner::global`](crate::Owner::global) counts on.
    pub fn selected() -> Backend {
        Backend::from_dyn(backend::default_backend())
    }

    /// A new, independent instance of a backend of this build, whatever
    /// the process selected; [`Error::NotSupported`](crate::Error::NotSupported) for one this build
    /// lacks ([`compiled_backends`]).
    pub fn new(kind: BackendKind) -> Result<Backend> {
        backend::select::instance(kind).map(Backend::from_dyn)
    }

    pub(crate) fn from_dyn(inner: Arc<dyn backend::Backend>) -> Backend {
        Backend { inner }
    }

    /// The binding itself, for the crate's own use.
    pub(crate) fn get(&self) -> &Arc<dyn backend::Backend> {
        &self.inner
    }

    /// Its name: `linux-perf_event`, `freebsd-hwpmc`, `portable`, `sim`.
    pub fn name(&self) -> &'static str {
        self.inner.name()
    }

    /// The machine as this backend describes it (`pmc_cpuinfo`).
    pub fn cpuinfo(&self) -> Result<CpuInfo> {
        self.inner.cpuinfo()
    }

    /// Every event name of a class that this backend's allocate accepts.
    pub fn event_names(&self, class: &Class) -> Result<Vec<String>> {
        self.inner.event_names(class)
    }

    /// The CPUs that are online.
    pub fn online_cpus(&self) -> Vec<u32> {
        self.inner.online_cpus()
    }

    /// The CPUs that may ever be online (a system PMC's CPU beyond them is
    /// EINVAL, an offline one among them ENXIO).
    pub fn possible_cpus(&self) -> Vec<u32> {
        self.inner.possible_cpus()
    }

    /// The pid that stands for the calling process (what pid 0 means).
    pub fn caller_pid(&self) -> u32 {
        self.inner.caller_pid()
    }

    /// Whether a process exists.
    pub fn process_exists(&self, pid: u32) -> bool {
        self.inner.process_exists(pid)
    }

    /// The clock this backend stamps records with, in nanoseconds
    /// (CLOCK_MONOTONIC where there is one).
    pub fn now(&self) -> u64 {
        self.inner.monotonic_ns()
    }

    /// Whether two handles are the same instance.
    pub fn same_as(&self, other: &Backend) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }
}

impl fmt::Debug for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.inner, f)
    }
}

/// A concrete binding of this crate (the simulator with `test-doubles`).
impl<B: backend::Backend + 'static> From<Arc<B>> for Backend {
    fn from(backend: Arc<B>) -> Backend {
        Backend { inner: backend }
    }
}

impl From<Arc<dyn backend::Backend>> for Backend {
    fn from(backend: Arc<dyn backend::Backend>) -> Backend {
        Backend { inner: backend }
    }
}

impl From<&Backend> for Backend {
    fn from(backend: &Backend) -> Backend {
        backend.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Error;

    #[test]
    fn a_new_instance_is_independent_of_the_selected_one() {
        let portable = Backend::new(BackendKind::Portable).expect("portable is always compiled");
        assert_eq!(portable.name(), "portable");
        assert!(!portable.same_as(&Backend::selected()));
        assert!(portable.same_as(&portable.clone()));
    }

    #[test]
    fn a_backend_this_build_lacks_is_not_supported() {
        let missing = [
            BackendKind::Linux,
            BackendKind::FreeBsd,
            BackendKind::Portable,
        ]
        .into_iter()
        .find(|k| !k.is_compiled())
        .expect("no build has both Linux and FreeBSD");
        match Backend::new(missing) {
            Err(e @ Error::NotSupported { .. }) => {
                assert!(e.to_string().contains(missing.name()), "{e}")
            }
            other => panic!("{missing:?}: {other:?}"),
        }
    }
}
