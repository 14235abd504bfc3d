//! PMCATTACH and PMCDETACH: a process PMC's targets, one process or its
//! whole tree of descendants (`pmc_attach_process`, `pmc_detach_process`).

use super::{Kernel, KernelDouble, Process};
use crate::abi::{self, Errno, Mode};

impl KernelDouble {
    /// `pmc_attach_one_process`.
    fn attach_one(&self, k: &mut Kernel, idx: usize, pid: i32) -> Result<(), Errno> {
        let ri = k.pmcs[idx].ri;
        if k.pmcs[idx].targets.contains(&pid) {
            return Err(Errno::EEXIST);
        }
        if k.pmcs
            .iter()
            .any(|p| p.ri == ri && p.targets.contains(&pid))
        {
            return Err(Errno::EBUSY);
        }
        let pm = &mut k.pmcs[idx];
        pm.targets.insert(pid);
        // pmc_link_target_process: pp_pmcval starts at the reload count
        // (TS) or 0.
        if pm.mode == Mode::TS {
            pm.left.insert(pid, pm.count);
        }
        if pid == self.pid {
            pm.flags |= abi::PMC_F_ATTACHED_TO_OWNER;
        }
        if pm.mode.is_sampling() && pm.flags & abi::PMC_F_ATTACHED_TO_OWNER == 0 {
            pm.flags |= abi::PMC_F_NEEDS_LOGFILE;
        }
        pm.flags |= abi::PMC_F_ATTACH_DONE;
        self.log_attach(k, idx, pid);
        Ok(())
    }

    /// `pmc_attach_process`: with DESCENDANTS the whole tree, undone on error.
    /// No EPERM after a GETMSR: hwpmc's test for it reads
    /// PMC_PP_ENABLE_MSR_ACCESS from pm_flags (PMC_F_UNUSED1 there, refused
    /// at allocate), while GETMSR sets it in the target's pp_flags.
    pub(super) fn attach_process(&self, k: &mut Kernel, idx: usize, pid: i32) -> Result<(), Errno> {
        if k.pmcs[idx].flags & abi::PMC_F_DESCENDANTS == 0 {
            return self.attach_one(k, idx, pid);
        }
        let mut todo = vec![pid];
        while let Some(p) = todo.pop() {
            if let Err(e) = self.attach_one(k, idx, p) {
                let _ = self.detach_process(k, idx, pid);
                return Err(e);
            }
            todo.extend(self.children(p));
        }
        Ok(())
    }

    /// `pmc_detach_one_process`.
    fn detach_one(&self, k: &mut Kernel, idx: usize, pid: i32) -> Result<(), Errno> {
        if !k
            .pmcs
            .iter()
            .any(|p| p.mode.is_virtual() && p.targets.contains(&pid))
        {
            return Err(Errno::ESRCH);
        }
        let pm = &mut k.pmcs[idx];
        if !pm.targets.remove(&pid) {
            return Err(Errno::EINVAL);
        }
        // pmc_unlink_target_process: pp_pmcval is cleared; a switch out of
        // the process no longer finds the PMC, so what it counted on the
        // hardware since its switch in is not saved.
        pm.left.remove(&pid);
        if pid == self.pid {
            pm.flags &= !abi::PMC_F_ATTACHED_TO_OWNER;
        }
        Ok(())
    }

    /// `pmc_detach_process`.
    pub(super) fn detach_process(&self, k: &mut Kernel, idx: usize, pid: i32) -> Result<(), Errno> {
        if k.pmcs[idx].flags & abi::PMC_F_DESCENDANTS == 0 {
            return self.detach_one(k, idx, pid);
        }
        let mut todo = vec![pid];
        while let Some(p) = todo.pop() {
            let _ = self.detach_one(k, idx, p);
            todo.extend(self.children(p));
        }
        if k.pmcs[idx].targets.is_empty() {
            k.pmcs[idx].flags &= !abi::PMC_F_ATTACH_DONE;
        }
        Ok(())
    }

    /// `pmc_do_op_pmcattach` / `pmc_do_op_pmcdetach` front halves.
    pub(super) fn target(
        &self,
        k: &Kernel,
        a: &abi::pmc_op_pmcattach,
    ) -> Result<(usize, i32), Errno> {
        let pid = match a.pm_pid {
            p if p < 0 => return Err(Errno::EINVAL),
            0 => self.pid,
            p => p,
        };
        Ok((self.find(k, a.pm_pmc)?, pid))
    }

    pub(super) fn live_process(&self, pid: i32) -> Result<Process, Errno> {
        match self.process(pid) {
            Some(p) if !p.exiting => Ok(p),
            _ => Err(Errno::ESRCH),
        }
    }
}
