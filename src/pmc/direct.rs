//! What reads the counter outside `Pmc`: the `rdpmc` index
//! (`pmc_get_msr`) and the kernel descriptors.

use super::Pmc;
use crate::{Error, Flags, Result};

impl Pmc {
    /// The index for reading this counter with `rdpmc` from user space
    /// (`pmc_get_msr`), as the `PMC_OP_PMCGETMSR` case of hwpmc_mod.c
    /// decides: a system PMC, a DESCENDANTS PMC, or one not attached to
    /// exactly its owner is EINVAL; a counter the kernel does not expose to
    /// user space is ENOSYS (hwpmc's answer for a class without
    /// `pcd_get_msr`), with the reason. After a success, further attaches
    /// are EPERM.
    ///
    /// On Linux the index is the one perf publishes in the counter's
    /// metadata page for the calling thread, and only while the PMC runs:
    /// perf may move the event to another hardware counter when it is
    /// rescheduled, so read through the page's sequence lock
    /// (`pmc_linux::selfmon`) where that matters.
    pub fn get_msr(&mut self) -> Result<u32> {
        if self.mode.is_system() || self.flags.contains(Flags::DESCENDANTS) {
            return Err(Error::invalid(
                "get_msr",
                format!(
                    "rdpmc access needs a process PMC without DESCENDANTS, not {} {:?}",
                    self.mode, self.flags
                ),
            ));
        }
        self.prune_exited()?;
        if self.targets.len() != 1 || self.targets[0].pid != self.owner_pid {
            return Err(Error::invalid(
                "get_msr",
                format!(
                    "rdpmc access needs the PMC attached to its owner ({}) and nothing else; \
                     it is attached to {:?}",
                    self.owner_pid,
                    self.targets()
                ),
            ));
        }
        let index = self.targets[0].counters.rdpmc_index()?.ok_or_else(|| Error::Os {
            op: "get_msr".into(),
            source: std::io::Error::from_raw_os_error(libc::ENOSYS),
            hint: Some(format!(
                "the {} backend has no user-space read for this counter; read it with Pmc::read",
                self.owner.binding().name()
            )),
        })?;
        self.publish();
        Ok(index)
    }

    /// The PMC's one kernel descriptor, where it has exactly one: a
    /// process PMC attached to one single-threaded target, or a system
    /// PMC (on Linux, a perf_event fd to `poll` or to read with `read(2)`
    /// as perf_event_open(2) describes). `None` for a PMC spread over
    /// several descriptors (threads, CPUs, hybrid PMUs) or not attached.
    pub fn fd(&self) -> Option<std::os::fd::BorrowedFd<'_>> {
        match (&*self.targets, &self.system) {
            ([one], None) => one.counters.fd(),
            ([], Some(system)) => system.fd(),
            _ => None,
        }
    }

    /// The number of kernel handles (file descriptors) the PMC holds.
    pub fn handles(&self) -> usize {
        self.targets
            .iter()
            .map(|t| t.counters.handles())
            .sum::<usize>()
            + self.system.as_ref().map_or(0, |s| s.handles())
    }
}
