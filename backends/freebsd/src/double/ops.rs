//! `pmc_syscall_handler`'s switch: one arm per `PMC_OP_*`, with the
//! errno rules of sys/dev/hwpmc/hwpmc_mod.c and hwpmc_logging.c.

use super::{Kernel, KernelDouble};
use crate::abi::{self, Class, Errno, State};
use crate::transport::Request;

impl KernelDouble {
    /// One request, as `pmc_syscall_handler` switches on its op.
    pub(super) fn dispatch(&self, k: &mut Kernel, request: Request<'_>) -> Result<(), Errno> {
        match request {
            Request::ConfigureLog(cl) => self.configure_or_close_log(k, cl),
            Request::FlushLog => Self::flush_owner_log(k),
            Request::CloseLog => Self::close_owner_log(k),
            Request::GetCpuInfo(gci) => self.cpu_info(gci),
            Request::GetDynEventInfo(gei) => self.soft_event_info(gei),
            Request::GetDriverStats(gms) => Self::driver_stats(k, gms),
            Request::GetModuleVersion(v) => self.module_version(v),
            Request::GetPmcInfo { cpu, pmcs } => self.row_info(k, cpu, pmcs),
            Request::PmcAdmin(pma) => self.set_row_state(k, pma),
            Request::PmcAllocate(pa) => self.allocate(k, pa),
            Request::PmcAttach(a) => self.attach(k, a),
            Request::PmcDetach(a) => self.detach(k, a),
            Request::PmcGetMsr(gm) => self.msr_of(k, gm),
            Request::PmcRelease(sp) => self.release(k, sp),
            Request::PmcRw(prw) => self.read_write(k, prw),
            Request::PmcSetCount(sc) => self.set_count(k, sc),
            Request::PmcStart(sp) => self.start(k, sp),
            Request::PmcStop(sp) => self.stop(k, sp),
            Request::WriteLog(wl) => Self::write_log(k, wl),
        }
    }

    /// CONFIGURELOG: a descriptor configures the owner's log (hwpmc_logging.c
    /// pmclog_configure_log); -1 closes it and stops the PMCs that need it.
    fn configure_or_close_log(
        &self,
        k: &mut Kernel,
        cl: &abi::pmc_op_configurelog,
    ) -> Result<(), Errno> {
        if cl.pm_flags != 0 {
            return Err(Errno::EINVAL);
        }
        k.owner_exists = true;
        if cl.pm_logfd >= 0 {
            // hwpmc_logging.c pmclog_configure_log: one log per
            // owner, on a descriptor open for writing (log.rs).
            self.configure_log(k, cl.pm_logfd)
        } else if k.owns_logfile {
            // pmclog_close, then the running PMCs that need the
            // log stop, then pmclog_deconfigure_log.
            Self::close_log(k);
            for pm in k.pmcs.iter_mut() {
                if pm.flags & abi::PMC_F_NEEDS_LOGFILE != 0 && pm.state == State::RUNNING {
                    pm.state = State::STOPPED;
                }
            }
            k.owns_logfile = false;
            k.logfd = -1;
            k.flushes += 1;
            Ok(())
        } else {
            Err(Errno::EINVAL)
        }
    }

    /// FLUSHLOG: writes out the log's buffers (pmclog_flush).
    fn flush_owner_log(k: &mut Kernel) -> Result<(), Errno> {
        if !k.owner_exists {
            return Err(Errno::EINVAL);
        }
        // hwpmc_logging.c pmclog_flush: EINVAL without a log file.
        Self::flush_log(k)?;
        k.flushes += 1;
        Ok(())
    }

    /// CLOSELOG: lets the log file go (pmclog_close), which always succeeds.
    fn close_owner_log(k: &mut Kernel) -> Result<(), Errno> {
        if !k.owner_exists {
            return Err(Errno::EINVAL);
        }
        // hwpmc_logging.c pmclog_close always succeeds; the logger
        // writes what is queued and lets the file go.
        if k.owns_logfile {
            Self::close_log(k);
            k.flushes += 1;
            k.owns_logfile = false;
            k.logfd = -1;
        }
        Ok(())
    }

    /// GETCPUINFO: the machine's CPU type, CPUs, rows and classes.
    fn cpu_info(&self, gci: &mut abi::pmc_op_getcpuinfo) -> Result<(), Errno> {
        *gci = abi::pmc_op_getcpuinfo {
            pm_cputype: self.machine.cputype as u32,
            pm_ncpu: self.machine.ncpu,
            pm_npmc: self.machine.npmc(),
            pm_nclass: self.machine.classes.len() as u32,
            ..Default::default()
        };
        for (slot, c) in gci.pm_classes.iter_mut().zip(&self.machine.classes) {
            *slot = abi::pmc_classinfo {
                pm_class: c.class as u32,
                pm_caps: c.caps,
                pm_width: c.width,
                pm_num: c.num,
            };
        }
        Ok(())
    }

    /// GETDYNEVENTINFO: the registered soft events (SOFT class only).
    fn soft_event_info(&self, gei: &mut abi::pmc_op_getdyneventinfo) -> Result<(), Errno> {
        if gei.pm_class != Class::SOFT as u32 {
            return Err(Errno::EINVAL);
        }
        for (i, name) in self.machine.soft_events.iter().enumerate() {
            abi::set_c_name(&mut gei.pm_events[i].pm_ev_name, name);
            gei.pm_events[i].pm_ev_code = abi::PMC_EV_SOFT_FIRST + i as u32;
        }
        gei.pm_nevent = self.machine.soft_events.len() as u32;
        Ok(())
    }

    /// GETDRIVERSTATS: the system call counts (the rest are 0 here).
    fn driver_stats(k: &mut Kernel, gms: &mut abi::pmc_op_getdriverstats) -> Result<(), Errno> {
        *gms = abi::pmc_op_getdriverstats {
            pm_syscalls: k.syscalls,
            pm_syscall_errors: k.syscall_errors,
            ..Default::default()
        };
        Ok(())
    }

    /// GETMODULEVERSION: the module's version, refused to a newer major.
    fn module_version(&self, v: &mut u32) -> Result<(), Errno> {
        let modv = self.machine.module_version;
        if (*v & 0xFFFF_0000) > (modv & 0xFFFF_0000) {
            return Err(Errno::EPROGMISMATCH);
        }
        *v = modv;
        Ok(())
    }

    /// GETPMCINFO: every row of `cpu`, with the PMC configured on it.
    fn row_info(&self, k: &mut Kernel, cpu: i32, pmcs: &mut [abi::pmc_info]) -> Result<(), Errno> {
        let cpu = cpu as u32;
        if cpu >= self.machine.ncpu {
            return Err(Errno::EINVAL);
        }
        if !self.cpu_active(cpu) {
            return Err(Errno::ENXIO);
        }
        // pmc_select_cpu: the caller moves to `cpu` (its process
        // PMCs are switched in there) and back afterwards
        // (pmc_restore_cpu_binding).
        let home = k.on_cpu.get(&self.pid).copied();
        Self::csw_in(k, self.pid, cpu);
        for (ri, slot) in pmcs
            .iter_mut()
            .enumerate()
            .take(self.machine.npmc() as usize)
        {
            let ri = ri as u32;
            let (adj, spec) = self.machine.row_class(ri).expect("row within npmc");
            let mut info = abi::pmc_info {
                pm_class: spec.class as u32,
                pm_ownerpid: -1,
                ..Default::default()
            };
            abi::set_c_name(&mut info.pm_name, &format!("{}-{}", spec.class.name(), adj));
            info.pm_enabled = i32::from(!k.disabled.contains(&(cpu, ri)));
            let d = k.disp.get(&ri).copied().unwrap_or(0);
            info.pm_rowdisp = match d {
                d if d < 0 => abi::Disp::STANDALONE,
                d if d > 0 => abi::Disp::THREAD,
                _ => abi::Disp::FREE,
            } as u32;
            // pcd_describe: the PMC configured on the row, a system
            // PMC of this CPU or a process PMC switched in here.
            let on_row = k.hw.get(&(cpu, ri)).map(|hw| hw.id);
            if let Some(pm) = k.pmcs.iter().find(|p| {
                p.ri == ri && ((p.mode.is_system() && p.cpu == cpu) || Some(p.id) == on_row)
            }) {
                info.pm_ownerpid = self.pid;
                info.pm_mode = pm.mode as u32;
                info.pm_event = pm.event;
                info.pm_flags = pm.flags;
                if pm.mode.is_sampling() {
                    info.pm_reloadcount = pm.count;
                }
            }
            *slot = info;
        }
        if let Some(home) = home {
            Self::csw_in(k, self.pid, home);
        }
        Ok(())
    }

    /// PMCADMIN: enables or disables a row of a CPU (privileged).
    fn set_row_state(&self, k: &mut Kernel, pma: &abi::pmc_op_pmcadmin) -> Result<(), Errno> {
        if !self.privileged {
            return Err(Errno::EPERM);
        }
        if pma.pm_cpu < 0 || pma.pm_cpu as u32 >= self.machine.ncpu {
            return Err(Errno::EINVAL);
        }
        let cpu = pma.pm_cpu as u32;
        if !self.cpu_active(cpu) {
            return Err(Errno::ENXIO);
        }
        let request = State::from_raw(pma.pm_state);
        if !matches!(request, Some(State::DISABLED | State::FREE)) {
            return Err(Errno::EINVAL);
        }
        if pma.pm_pmc < 0 || pma.pm_pmc as u32 >= self.machine.npmc() {
            return Err(Errno::EINVAL);
        }
        let ri = pma.pm_pmc as u32;
        if k.disp.get(&ri).copied().unwrap_or(0) > 0 && request == Some(State::DISABLED) {
            return Err(Errno::EBUSY);
        }
        if k.pmcs
            .iter()
            .any(|p| p.ri == ri && p.mode.is_system() && p.cpu == cpu)
        {
            return Err(Errno::EBUSY);
        }
        if request == Some(State::DISABLED) {
            if k.disabled.insert((cpu, ri)) {
                *k.disp.entry(ri).or_insert(0) -= 1;
            }
        } else if k.disabled.remove(&(cpu, ri)) {
            *k.disp.entry(ri).or_insert(0) += 1;
        }
        Ok(())
    }

    /// PMCATTACH: a process PMC, not running, to a debuggable live process.
    fn attach(&self, k: &mut Kernel, a: &abi::pmc_op_pmcattach) -> Result<(), Errno> {
        let (idx, pid) = self.target(k, a)?;
        if k.pmcs[idx].mode.is_system() {
            return Err(Errno::EINVAL);
        }
        match k.pmcs[idx].state {
            State::RUNNING => return Err(Errno::EBUSY),
            State::ALLOCATED | State::STOPPED => {}
            _ => return Err(Errno::EINVAL),
        }
        let p = self.live_process(pid)?;
        if !p.debuggable {
            return Err(Errno::EPERM);
        }
        self.attach_process(k, idx, pid)
    }

    /// PMCDETACH: a process PMC from a live process.
    fn detach(&self, k: &mut Kernel, a: &abi::pmc_op_pmcattach) -> Result<(), Errno> {
        let (idx, pid) = self.target(k, a)?;
        self.live_process(pid)?;
        self.detach_process(k, idx, pid)
    }

    /// PMCGETMSR: the MSR of a process PMC attached to its owner alone.
    fn msr_of(&self, k: &mut Kernel, gm: &mut abi::pmc_op_getmsr) -> Result<(), Errno> {
        let idx = self.find(k, gm.pm_pmcid)?;
        let pm = &k.pmcs[idx];
        if !pm.mode.is_virtual() || pm.flags & abi::PMC_F_DESCENDANTS != 0 {
            return Err(Errno::EINVAL);
        }
        if pm.targets.len() != 1 || !pm.targets.contains(&self.pid) {
            return Err(Errno::EINVAL);
        }
        let (adj, spec) = self.machine.row_class(pm.ri).expect("allocated row exists");
        let Some(base) = spec.msr_base else {
            return Err(Errno::ENOSYS);
        };
        gm.pm_msr = base + adj;
        self.force_context_switch(k);
        Ok(())
    }

    /// PMCRELEASE: frees the PMC and its row (the owner goes with its last PMC).
    fn release(&self, k: &mut Kernel, sp: &abi::pmc_op_simple) -> Result<(), Errno> {
        let idx = self.find(k, sp.pm_pmcid)?;
        let pm = k.pmcs.remove(idx);
        Self::unload(k, pm.id);
        if let Some(d) = k.disp.get_mut(&pm.ri) {
            *d -= if pm.mode.is_system() { -1 } else { 1 };
        }
        Self::maybe_remove_owner(k);
        Ok(())
    }

    /// PMCRW: reads and/or writes a PMC's value (pmc_do_op_pmcrw).
    fn read_write(&self, k: &mut Kernel, prw: &mut abi::pmc_op_pmcrw) -> Result<(), Errno> {
        // pmc_do_op_pmcrw.
        if prw.pm_flags & (abi::PMC_F_OLDVALUE | abi::PMC_F_NEWVALUE) == 0 {
            return Err(Errno::EINVAL);
        }
        let idx = self.find(k, prw.pm_pmcid)?;
        let pm = &k.pmcs[idx];
        if !matches!(pm.state, State::ALLOCATED | State::STOPPED | State::RUNNING) {
            return Err(Errno::EINVAL);
        }
        if pm.state == State::RUNNING && prw.pm_flags & abi::PMC_F_NEWVALUE != 0 {
            return Err(Errno::EBUSY);
        }
        let old = if pm.mode.is_virtual() {
            // pmc_do_op_pmcrw: a RUNNING PMC attached to its owner
            // is read from the hardware of the caller's CPU
            // (pcd_read_pmc; a TS's events left before the
            // overflow); any other read, and every write, goes to
            // pm_savedvalue.
            let running_on_owner =
                pm.flags & abi::PMC_F_ATTACHED_TO_OWNER != 0 && pm.state == State::RUNNING;
            running_on_owner
                .then(|| self.owner_hw(k, pm.id, pm.ri))
                .flatten()
                .unwrap_or(pm.value)
        } else if !self.cpu_active(pm.cpu) {
            return Err(Errno::ENXIO);
        } else if pm.state == State::RUNNING && pm.mode.is_sampling() {
            // The running sampling hardware holds the events left.
            super::log::events_to_overflow(pm.count, pm.hw)
        } else {
            // System mode: the counter itself.
            pm.value
        };
        if prw.pm_flags & abi::PMC_F_NEWVALUE != 0 {
            k.pmcs[idx].value = prw.pm_value;
        }
        if prw.pm_flags & abi::PMC_F_OLDVALUE != 0 {
            prw.pm_value = old;
        }
        Ok(())
    }

    /// PMCSETCOUNT: the reload count of a PMC not running (sampling ones at
    /// least `kern.hwpmc.mincount`).
    fn set_count(&self, k: &mut Kernel, sc: &abi::pmc_op_pmcsetcount) -> Result<(), Errno> {
        let idx = self.find(k, sc.pm_pmcid)?;
        let pm = &mut k.pmcs[idx];
        if pm.state == State::RUNNING {
            return Err(Errno::EBUSY);
        }
        pm.count = if pm.mode.is_sampling() {
            sc.pm_count.max(self.machine.mincount.max(1))
        } else {
            sc.pm_count
        };
        Ok(())
    }

    /// PMCSTART (pmc_start): a process PMC attaches to its owner if it never
    /// attached; a system PMC restarts from its reload count.
    fn start(&self, k: &mut Kernel, sp: &abi::pmc_op_simple) -> Result<(), Errno> {
        let idx = self.find(k, sp.pm_pmcid)?;
        match k.pmcs[idx].state {
            State::RUNNING => return Ok(()),
            State::STOPPED | State::ALLOCATED => {}
            _ => return Err(Errno::EINVAL),
        }
        // pmc_start: a required log file must exist (EDOOFUS).
        if k.pmcs[idx].flags & abi::PMC_F_NEEDS_LOGFILE != 0 && !k.owns_logfile {
            return Err(Errno::EDOOFUS);
        }
        if k.pmcs[idx].mode.is_virtual() {
            if k.pmcs[idx].targets.is_empty() {
                if k.pmcs[idx].flags & abi::PMC_F_ATTACH_DONE != 0 {
                    return Err(Errno::ESRCH);
                }
                self.attach_process(k, idx, self.pid)?;
            }
            k.pmcs[idx].state = State::RUNNING;
            Self::log_start(k, idx);
            // pmc_start: a PMC attached to its owner forces a
            // context switch, which puts it on the caller's CPU.
            if k.pmcs[idx].flags & abi::PMC_F_ATTACHED_TO_OWNER != 0 {
                self.force_context_switch(k);
            }
            return Ok(());
        } else {
            let pm = &mut k.pmcs[idx];
            if !self.cpu_active(pm.cpu) {
                return Err(Errno::ENXIO);
            }
            // Global PMCs restart from their initial/reload count.
            pm.value = pm.count;
        }
        k.pmcs[idx].state = State::RUNNING;
        k.pmcs[idx].hw = 0;
        Self::log_start(k, idx);
        Ok(())
    }

    /// PMCSTOP (pmc_stop): a system PMC keeps what its hardware holds.
    fn stop(&self, k: &mut Kernel, sp: &abi::pmc_op_simple) -> Result<(), Errno> {
        let idx = self.find(k, sp.pm_pmcid)?;
        let pm = &mut k.pmcs[idx];
        match pm.state {
            State::STOPPED => Ok(()),
            State::RUNNING => {
                pm.state = State::STOPPED;
                if pm.mode.is_system() && pm.mode.is_sampling() {
                    // The stopped hardware holds the events left.
                    pm.value = super::log::events_to_overflow(pm.count, pm.hw);
                } else if pm.mode.is_system() {
                    // pmc_stop reads the hardware into pm_initial.
                    pm.count = pm.value;
                }
                Ok(())
            }
            _ => Err(Errno::EINVAL),
        }
    }

    /// WRITELOG: a user record into the owner's log.
    fn write_log(k: &mut Kernel, wl: &abi::pmc_op_writelog) -> Result<(), Errno> {
        if !k.owner_exists || !k.owns_logfile {
            return Err(Errno::EINVAL);
        }
        k.log.push(wl.pm_userdata);
        Self::log_userdata(k, wl.pm_userdata);
        Ok(())
    }
}
