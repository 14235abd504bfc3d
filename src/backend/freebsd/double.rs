//! The kernel double as a [`System`]: the backend's tests and the
//! conformance suite run the whole FreeBSD backend over it on any host.

use std::sync::Arc;

use pmc_freebsd::double::KernelDouble;
use pmc_freebsd::{Arch, Hwpmc, PmuEvent, PmuEvents, PmuVendor};

use super::{LogPipe, System};
use crate::Result;

/// hwpmc over `kernel` with one pmu-events entry, Intel's
/// `inst_retired.any` (event 0: the fixed-function IAF class,
/// libpmc_pmu_util.c `pmc_pmu_pmcallocate`), on an amd64 libpmc whatever
/// the host.
pub(crate) fn intel_hwpmc(kernel: &Arc<KernelDouble>) -> Hwpmc<Arc<KernelDouble>> {
    let pmu = PmuEvents {
        vendor: PmuVendor::Intel,
        events: vec![PmuEvent {
            name: "inst_retired.any".into(),
            event: "event=0x00,umask=0x01".into(),
            topic: "pipeline".into(),
        }],
    };
    let mut hwpmc = Hwpmc::open_with_pmu(kernel.clone(), Some(pmu)).expect("the double opens");
    hwpmc.resolver_mut().arch = Arch::Amd64;
    hwpmc
}

impl System for Arc<KernelDouble> {
    fn caller_pid(&self) -> u32 {
        self.pid() as u32
    }

    fn process_exists(&self, pid: u32) -> bool {
        i32::try_from(pid).is_ok_and(|pid| KernelDouble::process_exists(self, pid))
    }

    fn kern_proc(&self) -> std::result::Result<Vec<u8>, pmc_freebsd::Errno> {
        Ok(self.kern_proc_proc())
    }

    fn online_cpus(&self, ncpu: u32) -> Vec<u32> {
        (0..ncpu).filter(|&c| self.cpu_active(c)).collect()
    }

    fn log_pipe(&self) -> Result<Box<dyn LogPipe>> {
        let (fd, pipe) = self.pipe();
        Ok(Box::new(DoublePipe { fd, pipe }))
    }
}

/// A pipe of the double: its write end is a number only the double knows,
/// so there is nothing to let go of.
#[derive(Debug)]
struct DoublePipe {
    fd: i32,
    pipe: pmc_freebsd::double::LogPipe,
}

impl LogPipe for DoublePipe {
    fn write_fd(&self) -> i32 {
        self.fd
    }

    fn release_write_end(&mut self) {}

    fn read_available(&mut self, out: &mut Vec<u8>) -> std::io::Result<()> {
        out.extend(self.pipe.take());
        Ok(())
    }
}
