//! The public handle on a backend instance ([`Backend`]).

use std::fmt;
use std::sync::Arc;

use super::BackendImpl;
use super::kind::{self, BackendKind};
use crate::{Class, CpuInfo, Result};

/// One instance of a platform binding, which an [`Owner`](crate::Owner)
/// allocates its PMCs on, drains their samples through and takes its
/// log's clock from. Cloning gives another handle on the same instance.
/// With the `test-doubles` feature an `Arc<SimBackend>` converts into one
/// (`Owner::new(SimBackend::new(2))`).
#[derive(Clone)]
pub struct Backend {
    inner: Arc<dyn BackendImpl>,
}

impl Backend {
    /// A new, independent instance of a backend of this build, whatever
    /// the process selected; [`Error::NotSupported`](crate::Error::NotSupported) for one this build
    /// lacks ([`compiled_backends`](crate::global::compiled_backends)).
    pub fn new(kind: BackendKind) -> Result<Backend> {
        kind::instance(kind).map(Backend::from_dyn)
    }

    pub(crate) fn from_dyn(inner: Arc<dyn BackendImpl>) -> Backend {
        Backend { inner }
    }

    /// The binding itself, for the crate's own use.
    pub(crate) fn get(&self) -> &Arc<dyn BackendImpl> {
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

/// A concrete binding of this crate: for users, the simulator
/// (`Arc<SimBackend>`, with `test-doubles`). Hidden from the docs, whose
/// bound names the crate-private seam.
#[doc(hidden)]
impl<B: BackendImpl + 'static> From<Arc<B>> for Backend {
    fn from(backend: Arc<B>) -> Backend {
        Backend { inner: backend }
    }
}

#[doc(hidden)]
impl From<Arc<dyn BackendImpl>> for Backend {
    fn from(backend: Arc<dyn BackendImpl>) -> Backend {
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
