//! Context switches, as sys/dev/hwpmc/hwpmc_mod.c handles them for process
//! (virtual) PMCs.
//!
//! - `pmc_process_csw_in`: for each RUNNING PMC targeting the process, the
//!   row of the CPU is configured with it and loaded with `pm_savedvalue`
//!   (TC; also kept as `PMC_PCPU_SAVED(cpu, ri)`) or the events left in
//!   the period (TS, `pp_pmcval`).
//! - `pmc_process_csw_out`: each process PMC on the CPU's rows is stopped
//!   and, when the process is still among its targets (a detach unlinks it
//!   at once) and it is not being released, its reading is saved: TC adds
//!   `hardware − PMC_PCPU_SAVED` to `pm_savedvalue` (whatever its state: a
//!   PMC stopped while its target ran keeps counting until the switch
//!   out), TS keeps the events left in `pp_pmcval`. The rows are freed.
//! - `pmc_process_exit` does the same for the exiting process's CPU.

use super::{Kernel, KernelDouble, Pmc};
use crate::abi::{self, Mode, State};

/// A row of a CPU configured with a process PMC (`pcd_config_pmc`).
#[derive(Clone, Copy, Debug)]
pub(super) struct Hw {
    /// The PMC (`phw_pmc`).
    pub(super) id: u32,
    /// The counter.
    pub(super) value: u64,
    /// `PMC_PCPU_SAVED(cpu, ri)`: what it was loaded with.
    pub(super) loaded: u64,
}

impl KernelDouble {
    /// Switches process `pid` in on `cpu` (`pmc_process_csw_in`), after
    /// switching out the process that ran there.
    pub fn switch_in(&self, pid: i32, cpu: u32) {
        Self::csw_in(&mut self.lock(), pid, cpu);
    }

    /// Switches process `pid` out of its CPU (`pmc_process_csw_out`); a
    /// process not on a CPU is left alone.
    pub fn switch_out(&self, pid: i32) {
        Self::csw_out(&mut self.lock(), pid);
    }

    /// The CPU process `pid` runs on, if it is switched in.
    pub fn on_cpu(&self, pid: i32) -> Option<u32> {
        self.lock().on_cpu.get(&pid).copied()
    }

    pub(super) fn csw_in(k: &mut Kernel, pid: i32, cpu: u32) {
        match k.on_cpu.get(&pid) {
            Some(&c) if c == cpu => return,
            Some(_) => Self::csw_out(k, pid),
            None => {}
        }
        let there: Vec<i32> = k
            .on_cpu
            .iter()
            .filter(|&(_, &c)| c == cpu)
            .map(|(&p, _)| p)
            .collect();
        for p in there {
            Self::csw_out(k, p);
        }
        k.on_cpu.insert(pid, cpu);
        for pm in k.pmcs.iter() {
            if !pm.mode.is_virtual() || pm.state != State::RUNNING || !pm.targets.contains(&pid) {
                continue;
            }
            let start = if pm.mode == Mode::TS {
                pm.left.get(&pid).copied().unwrap_or(pm.count)
            } else {
                pm.value
            };
            k.hw.insert(
                (cpu, pm.ri),
                Hw {
                    id: pm.id,
                    value: start,
                    loaded: start,
                },
            );
        }
    }

    /// `pmc_process_csw_out`: the process's PMCs leave its CPU, their
    /// readings saved; a counting PMC with `PMC_F_LOG_PROCCSW` logs the
    /// slice (`pmclog_process_proccsw`).
    pub(super) fn csw_out(k: &mut Kernel, pid: i32) {
        Self::save_and_unload(k, pid, true);
    }

    /// Takes process `pid` off its CPU saving what its PMCs counted there:
    /// TC adds the slice to `pm_savedvalue` and `pp_pmcval`, TS keeps the
    /// events left. `pmc_process_exit` does the same without PROCCSW
    /// (`log_csw` false).
    pub(super) fn save_and_unload(k: &mut Kernel, pid: i32, log_csw: bool) {
        let Some(cpu) = k.on_cpu.remove(&pid) else {
            return;
        };
        let tid = k.on_thread.remove(&pid).unwrap_or(pid);
        let rows: Vec<(u32, u32)> = k.hw.keys().filter(|(c, _)| *c == cpu).copied().collect();
        for row in rows {
            let hw = k.hw.remove(&row).expect("a configured row");
            let Some(pm) = k.pmcs.iter_mut().find(|p| p.id == hw.id) else {
                continue;
            };
            if !pm.targets.contains(&pid) {
                continue;
            }
            if pm.mode == Mode::TS {
                pm.left.insert(pid, hw.value);
                continue;
            }
            let slice = hw.value.wrapping_sub(hw.loaded);
            pm.value = pm.value.wrapping_add(slice);
            let (id, flags) = (pm.id, pm.flags);
            Self::add_process_value(&mut k.pmclog, id, pid, slice);
            if log_csw && flags & abi::PMC_F_LOG_PROCCSW != 0 {
                Self::log_proccsw(k, id, pid, tid, slice);
            }
        }
    }

    /// `events` on `cpu`: the process PMCs configured there count them (a
    /// TS counts down the events left, reloading at the period), and with
    /// `system` every RUNNING system PMC on that CPU too.
    pub(super) fn count(k: &mut Kernel, cpu: u32, events: u64, system: bool) {
        let Kernel { hw, pmcs, .. } = k;
        for ((c, _), slot) in hw.iter_mut() {
            if *c != cpu {
                continue;
            }
            let Some(pm) = pmcs.iter().find(|p| p.id == slot.id) else {
                continue;
            };
            if pm.mode == Mode::TS {
                let period = pm.count.max(1);
                let used = (period - slot.value.min(period) + events % period) % period;
                slot.value = period - used;
            } else {
                slot.value = slot.value.wrapping_add(events);
            }
        }
        if system {
            for pm in pmcs.iter_mut() {
                if pm.state == State::RUNNING && pm.mode.is_system() && pm.cpu == cpu {
                    count_system(pm, events);
                }
            }
        }
    }

    /// The caller's reading of a process PMC's hardware (`pcd_read_pmc` on
    /// the caller's CPU), if the PMC is on it.
    pub(super) fn owner_hw(&self, k: &Kernel, id: u32, ri: u32) -> Option<u64> {
        let cpu = k.on_cpu.get(&self.pid)?;
        k.hw.get(&(*cpu, ri))
            .filter(|hw| hw.id == id)
            .map(|hw| hw.value)
    }

    /// `pmc_force_context_switch` of the caller (PMCSTART of a PMC attached
    /// to its owner, PMCGETMSR).
    pub(super) fn force_context_switch(&self, k: &mut Kernel) {
        let cpu = k
            .on_cpu
            .get(&self.pid)
            .copied()
            .unwrap_or(super::CALLER_CPU);
        Self::csw_out(k, self.pid);
        Self::csw_in(k, self.pid, cpu);
    }

    /// A released PMC is taken off every CPU without saving
    /// (`pmc_release_pmc_descriptor`).
    pub(super) fn unload(k: &mut Kernel, id: u32) {
        k.hw.retain(|_, hw| hw.id != id);
    }
}

/// A RUNNING system PMC counts `events`: a counting one in its value, a
/// sampling one in its hardware counter, whose events left before the next
/// overflow PMCRW and PMCSTOP report (`log::events_to_overflow`).
pub(super) fn count_system(pm: &mut Pmc, events: u64) {
    if pm.mode.is_sampling() {
        pm.hw = pm.hw.wrapping_add(events);
    } else {
        pm.value = pm.value.wrapping_add(events);
    }
}
