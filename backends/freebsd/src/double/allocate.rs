//! PMCALLOCATE: `pmc_do_op_pmcallocate`'s checks of mode, CPU, flags and
//! capabilities, the class's event rules, and the choice of a free row
//! (`pmc_can_allocate_rowindex`), in hwpmc_mod.c's order.

use std::collections::{BTreeMap, BTreeSet};

use super::{ClassSpec, Kernel, KernelDouble, Pmc};
use crate::abi::{self, Class, Errno, Mode, State};

/// The flags PMCALLOCATE accepts from user space.
const ALLOWED_FLAGS: u32 = abi::PMC_F_DESCENDANTS
    | abi::PMC_F_LOG_PROCCSW
    | abi::PMC_F_LOG_PROCEXIT
    | abi::PMC_F_CALLCHAIN
    | abi::PMC_F_USERCALLCHAIN
    | abi::PMC_F_EV_PMU;

impl KernelDouble {
    pub(super) fn allocate(
        &self,
        k: &mut Kernel,
        pa: &mut abi::pmc_op_pmcallocate,
    ) -> Result<(), Errno> {
        if let Some(errno) = k.refuse_allocate {
            return Err(errno);
        }
        let (mode, caps) = self.check_request(pa)?;
        let cpu = pa.pm_cpu;
        let Some((first, spec)) = self.machine.class_rows(pa.pm_class) else {
            return Err(Errno::EINVAL);
        };
        if spec.caps & caps != caps {
            return Err(Errno::EOPNOTSUPP);
        }
        let row = if self.class_takes_event(spec, mode, pa.pm_ev) {
            Self::free_row(k, mode, cpu, first, spec)
        } else {
            None
        };
        let Some(ri) = row else {
            return Err(Errno::EINVAL);
        };
        if mode.is_system() && k.disabled.contains(&(cpu, ri)) {
            return Err(Errno::EPERM);
        }
        pa.pm_pmcid = self.add_pmc(k, pa, mode, caps, ri);
        Ok(())
    }

    /// The mode, CPU and flags of a request, as `pmc_do_op_pmcallocate`
    /// checks them before it looks at the class; returns the mode and the
    /// capabilities asked for (sampling adds INTERRUPT).
    fn check_request(&self, pa: &abi::pmc_op_pmcallocate) -> Result<(Mode, u32), Errno> {
        let Some(mode) = Mode::from_raw(pa.pm_mode) else {
            return Err(Errno::EINVAL);
        };
        let cpu = pa.pm_cpu;
        let flags = pa.pm_flags;
        if cpu != abi::PMC_CPU_ANY && cpu >= self.machine.ncpu {
            return Err(Errno::EINVAL);
        }
        if (mode.is_virtual() && cpu != abi::PMC_CPU_ANY)
            || (mode.is_system() && cpu == abi::PMC_CPU_ANY)
        {
            return Err(Errno::EINVAL);
        }
        if mode.is_system() && !self.cpu_active(cpu) {
            return Err(Errno::ENXIO);
        }
        if mode.is_system() && (self.jailed || !self.privileged) {
            return Err(Errno::EPERM);
        }
        if flags & !ALLOWED_FLAGS != 0 {
            return Err(Errno::EINVAL);
        }
        if flags & (abi::PMC_F_CALLCHAIN | abi::PMC_F_USERCALLCHAIN) == abi::PMC_F_USERCALLCHAIN {
            return Err(Errno::EINVAL);
        }
        if flags & abi::PMC_F_USERCALLCHAIN != 0 && !mode.is_sampling() {
            return Err(Errno::EINVAL);
        }
        if mode.is_system() && flags & (abi::PMC_F_LOG_PROCCSW | abi::PMC_F_LOG_PROCEXIT) != 0 {
            return Err(Errno::EINVAL);
        }
        let mut caps = pa.pm_caps;
        if mode.is_sampling() {
            caps |= abi::PMC_CAP_INTERRUPT;
        }
        Ok((mode, caps))
    }

    /// The class's pcd_allocate_pmc: TSC counts only TSC_TSC in SC mode
    /// (hwpmc_tsc.c); SOFT only registered soft events (hwpmc_soft.c).
    fn class_takes_event(&self, spec: &ClassSpec, mode: Mode, event: u32) -> bool {
        match spec.class {
            Class::TSC => event == abi::PMC_EV_TSC_TSC && mode == Mode::SC,
            Class::SOFT => {
                (abi::PMC_EV_SOFT_FIRST..=abi::PMC_EV_SOFT_LAST).contains(&event)
                    && ((event - abi::PMC_EV_SOFT_FIRST) as usize) < self.machine.soft_events.len()
            }
            _ => true,
        }
    }

    /// The first row of the class a PMC of `mode` on `cpu` may take: its
    /// disposition allows the mode, and no PMC of ours holds it.
    fn free_row(k: &Kernel, mode: Mode, cpu: u32, first: u32, spec: &ClassSpec) -> Option<u32> {
        (first..first + spec.num).find(|&ri| {
            let d = k.disp.get(&ri).copied().unwrap_or(0);
            let row_ok = d == 0 || (mode.is_system() && d < 0) || (mode.is_virtual() && d > 0);
            // pmc_can_allocate_rowindex: no PMC of ours at this row
            // (virtual), or not on the same CPU (system).
            let taken = k.pmcs.iter().any(|p| {
                p.ri == ri
                    && (p.mode.is_virtual()
                        || (mode.is_system() && p.mode.is_system() && p.cpu == cpu))
            });
            let hw_busy = mode.is_system()
                && k.pmcs
                    .iter()
                    .any(|p| p.ri == ri && p.mode.is_system() && p.cpu == cpu);
            row_ok && !taken && !hw_busy
        })
    }

    /// Records the new PMC on row `ri` and the row's disposition; returns
    /// its id.
    fn add_pmc(
        &self,
        k: &mut Kernel,
        pa: &abi::pmc_op_pmcallocate,
        mode: Mode,
        caps: u32,
        ri: u32,
    ) -> u32 {
        let cpu = pa.pm_cpu;
        let mut flags = pa.pm_flags;
        if flags & (abi::PMC_F_LOG_PROCEXIT | abi::PMC_F_LOG_PROCCSW) != 0 {
            flags |= abi::PMC_F_NEEDS_LOGFILE;
        }
        if mode.is_sampling() && mode.is_system() {
            flags |= abi::PMC_F_NEEDS_LOGFILE;
        }
        let count = if mode.is_sampling() {
            pa.pm_count.max(self.machine.mincount.max(1))
        } else {
            pa.pm_count
        };
        let id = abi::pmc_id_make(cpu, mode as u32, pa.pm_class, ri);
        *k.disp.entry(ri).or_insert(0) += if mode.is_system() { -1 } else { 1 };
        k.pmcs.push(Pmc {
            id,
            mode,
            ri,
            cpu,
            event: pa.pm_ev,
            caps,
            flags,
            state: State::ALLOCATED,
            targets: BTreeSet::new(),
            left: BTreeMap::new(),
            value: if mode.is_system() && !mode.is_sampling() {
                count
            } else {
                0
            },
            count,
            hw: 0,
        });
        k.owner_exists = true;
        id
    }
}
