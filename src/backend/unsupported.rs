//! The backend of platforms without one: every operation fails with
//! [`Error::NoBackend`], so portable code builds everywhere and reports
//! clearly at run time.

/// Every platform has at least the portable backend, so this one only
/// serves tests of what callers make of a backend that refuses everything.
#[cfg(test)]
pub use refusing::UnsupportedBackend;

#[cfg(test)]
mod refusing {
    use crate::CpuInfo;
    use crate::backend::{BackendImpl, EventRequest, PreparedEvent};
    use crate::{Class, Error, Result};

    /// Fails every call with [`Error::NoBackend`].
    #[derive(Debug, Default, Clone, Copy)]
    pub struct UnsupportedBackend;

    fn unsupported() -> Error {
        Error::NoBackend {
            platform: std::env::consts::OS,
        }
    }

    impl BackendImpl for UnsupportedBackend {
        fn name(&self) -> &'static str {
            "unsupported"
        }

        fn prepare(
            &self,
            _request: &EventRequest<'_>,
        ) -> Result<std::sync::Arc<dyn PreparedEvent>> {
            Err(unsupported())
        }

        fn caller_pid(&self) -> u32 {
            std::process::id()
        }

        fn process_exists(&self, pid: u32) -> bool {
            pid == std::process::id()
        }

        fn online_cpus(&self) -> Vec<u32> {
            let n = std::thread::available_parallelism().map_or(1, |n| n.get());
            (0..n as u32).collect()
        }

        fn monotonic_ns(&self) -> u64 {
            crate::backend::monotonic_clock_ns()
        }

        fn cpuinfo(&self) -> Result<CpuInfo> {
            Err(unsupported())
        }

        fn event_names(&self, _class: &Class) -> Result<Vec<String>> {
            Err(unsupported())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Cpu, Error, Flags, Mode};
    use std::sync::Arc;

    #[test]
    fn allocation_fails_with_unsupported() {
        let e = crate::Owner::new(Arc::new(UnsupportedBackend))
            .allocate_with_count("instructions", Mode::TC, Flags::empty(), Cpu::Any, 0)
            .unwrap_err();
        assert!(matches!(e, Error::NoBackend { .. }), "{e}");
        assert_eq!(e.errno(), libc::ENXIO);
        assert!(e.to_string().contains("not supported on this platform"));
    }
}
