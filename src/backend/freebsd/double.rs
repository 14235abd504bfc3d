//! The kernel double as a [`System`]: the backend's tests and the
//! conformance suite run the whole FreeBSD backend over it on any host.

use std::sync::Arc;

use pmc_freebsd::double::KernelDouble;

use super::System;

impl System for Arc<KernelDouble> {
    fn caller_pid(&self) -> u32 {
        self.pid() as u32
    }

    fn process_exists(&self, pid: u32) -> bool {
        i32::try_from(pid).is_ok_and(|pid| KernelDouble::process_exists(self, pid))
    }

    fn descendants(&self, pid: u32) -> Vec<u32> {
        i32::try_from(pid).map_or_else(
            |_| Vec::new(),
            |pid| {
                KernelDouble::descendants(self, pid)
                    .into_iter()
                    .map(|p| p as u32)
                    .collect()
            },
        )
    }

    fn online_cpus(&self, ncpu: u32) -> Vec<u32> {
        (0..ncpu).filter(|&c| self.cpu_active(c)).collect()
    }
}
