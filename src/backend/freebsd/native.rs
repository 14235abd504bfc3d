//! FreeBSD itself: hwpmc's system call as the [`System`], the
//! native backend of the build, and the default backend.
//!
//! Compiled on FreeBSD only; `.ci/run` type-checks it, with the unit
//! tests, by `cargo clippy --target x86_64-unknown-freebsd` (linking would
//! need a FreeBSD sysroot).

use std::sync::Arc;

use pmc_freebsd::SyscallTransport;

use super::{FreeBsdBackend, LogPipe, System};
use crate::CpuInfo;
use crate::backend::{BackendImpl, EventRequest, PreparedEvent};
use crate::{Class, Error, Result};

impl System for SyscallTransport {
    fn caller_pid(&self) -> u32 {
        std::process::id()
    }

    fn process_exists(&self, pid: u32) -> bool {
        i32::try_from(pid).is_ok_and(pmc_freebsd::sys::process_exists)
    }

    fn kern_proc(&self) -> std::result::Result<Vec<u8>, pmc_freebsd::Errno> {
        pmc_freebsd::sys::kern_proc_proc()
    }

    /// Every CPU hwpmc knows; hwpmc itself answers ENXIO for an inactive
    /// one at PMCALLOCATE.
    fn online_cpus(&self, ncpu: u32) -> Vec<u32> {
        (0..ncpu).collect()
    }

    fn log_pipe(&self) -> Result<Box<dyn LogPipe>> {
        let (read, write) = pmc_freebsd::sys::log_pipe().map_err(|errno| Error::Os {
            op: "pipe for hwpmc's log".into(),
            source: std::io::Error::from_raw_os_error(errno.0),
            hint: Some("raise RLIMIT_NOFILE".into()),
        })?;
        Ok(Box::new(Pipe {
            read: std::fs::File::from(read),
            write: Some(write),
        }))
    }
}

/// A pipe(2) hwpmc's log is written into.
#[derive(Debug)]
struct Pipe {
    read: std::fs::File,
    write: Option<std::os::fd::OwnedFd>,
}

impl LogPipe for Pipe {
    fn write_fd(&self) -> i32 {
        use std::os::fd::AsRawFd;
        self.write.as_ref().map_or(-1, |w| w.as_raw_fd())
    }

    fn release_write_end(&mut self) {
        self.write = None;
    }

    fn read_available(&mut self, out: &mut Vec<u8>) -> std::io::Result<()> {
        use std::io::Read;
        let mut chunk = [0u8; 64 * 1024];
        loop {
            match self.read.read(&mut chunk) {
                Ok(0) => return Ok(()),
                Ok(n) => out.extend_from_slice(&chunk[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }
}

/// The default backend of a FreeBSD build: hwpmc when its module is
/// loaded, else a backend whose every allocation says why not.
pub fn open_default() -> Arc<dyn BackendImpl> {
    let opened = SyscallTransport::open()
        .map_err(|errno| {
            super::from_freebsd(
                pmc_freebsd::Error::Kernel {
                    op: pmc_freebsd::Op::GETMODULEVERSION,
                    errno,
                    hint: "the hwpmc module is not loaded: kldload hwpmc",
                },
                "find the hwpmc system call",
            )
        })
        .and_then(FreeBsdBackend::open);
    match opened {
        Ok(backend) => Arc::new(backend),
        Err(e) => Arc::new(HwpmcUnavailable {
            why: e.to_string(),
            os_errno: e.os_errno(),
        }),
    }
}

/// hwpmc could not be opened: every allocation fails with the reason.
#[derive(Debug)]
struct HwpmcUnavailable {
    why: String,
    /// The errno of the OS's refusal, kept as each error's source.
    os_errno: Option<i32>,
}

impl HwpmcUnavailable {
    fn error(&self) -> Error {
        Error::Unavailable {
            what: "hwpmc".into(),
            why: self.why.clone(),
            reason: None,
            source: self.os_errno.map(std::io::Error::from_raw_os_error),
        }
    }
}

impl BackendImpl for HwpmcUnavailable {
    fn name(&self) -> &'static str {
        "freebsd-hwpmc (unavailable)"
    }

    fn prepare(&self, _request: &EventRequest<'_>) -> Result<Arc<dyn PreparedEvent>> {
        Err(self.error())
    }

    fn caller_pid(&self) -> u32 {
        std::process::id()
    }

    fn process_exists(&self, pid: u32) -> bool {
        i32::try_from(pid).is_ok_and(pmc_freebsd::sys::process_exists)
    }

    fn online_cpus(&self) -> Vec<u32> {
        let n = std::thread::available_parallelism().map_or(1, |n| n.get());
        (0..n as u32).collect()
    }

    fn monotonic_ns(&self) -> u64 {
        crate::backend::monotonic_clock_ns()
    }

    fn cpuinfo(&self) -> Result<CpuInfo> {
        Err(self.error())
    }

    fn event_names(&self, _class: &Class) -> Result<Vec<String>> {
        Err(self.error())
    }
}
