//! [`PerCpu`]: a system PMC on every online CPU, as `pmcstat -s` clones it.

use std::sync::Arc;

use super::{Asked, Pmc};
use crate::backend::PreparedEvent;
use crate::{Error, Flags, Mode, Owner, Reading, Result};

/// A system PMC on every online CPU, as `pmcstat -s` clones them; reads sum
/// the CPUs.
#[derive(Debug)]
pub struct PerCpu {
    pmcs: Vec<(u32, Pmc)>,
}

impl PerCpu {
    /// Allocates `spec` in a system mode on every online CPU.
    pub fn allocate(spec: &str, mode: Mode, flags: Flags) -> Result<PerCpu> {
        Self::allocate_on_every_cpu(Owner::global(), spec, mode, flags)
    }

    /// On the CPUs the backend last saw online (no system call where it
    /// keeps them); if that fails and the CPUs online now are others (one
    /// went offline: its open failed), on those.
    fn allocate_on_every_cpu(
        owner: &Owner,
        spec: &str,
        mode: Mode,
        flags: Flags,
    ) -> Result<PerCpu> {
        let seen = owner.binding().online_cpus_last_seen();
        match Self::allocate_checked(owner, spec, mode, flags, &seen, &seen) {
            Err(e) => {
                let online = owner.binding().online_cpus();
                if online == seen {
                    return Err(e);
                }
                Self::allocate_checked(owner, spec, mode, flags, &online, &online)
            }
            done => done,
        }
    }

    /// Allocates `spec` in a system mode on the given CPUs.
    pub fn allocate_on_cpus(spec: &str, mode: Mode, flags: Flags, cpus: &[u32]) -> Result<PerCpu> {
        let owner = Owner::global();
        let online = owner.binding().online_cpus();
        Self::allocate_checked(owner, spec, mode, flags, cpus, &online)
    }

    /// The online CPUs and the owner are asked for once, not once per CPU.
    fn allocate_checked(
        owner: &Owner,
        spec: &str,
        mode: Mode,
        flags: Flags,
        cpus: &[u32],
        online: &[u32],
    ) -> Result<PerCpu> {
        if !mode.is_system() {
            return Err(Error::invalid(
                "allocate",
                format!("PerCpu needs a system mode (SC, SS), not {mode}"),
            ));
        }
        let owner_pid = Some(owner.backend().caller_pid());
        // The first CPU's preparation serves the others when it can.
        let mut shared: Option<Arc<dyn PreparedEvent>> = None;
        let mut pmcs = Vec::with_capacity(cpus.len());
        for &c in cpus {
            let asked = Asked {
                online: Some(online),
                owner: owner_pid,
                user_stack: None,
                prepared: shared.as_ref(),
            };
            let pmc = Pmc::allocate_for_per_cpu(owner, spec, mode, flags, c, asked)?;
            if shared.is_none() && pmc.event.serves_every_cpu() {
                shared = Some(Arc::clone(&pmc.event));
            }
            pmcs.push((c, pmc));
        }
        Ok(PerCpu { pmcs })
    }

    /// Starts every CPU's PMC.
    pub fn start(&mut self) -> Result<()> {
        self.pmcs.iter_mut().try_for_each(|(_, p)| p.start())
    }

    /// Stops every CPU's PMC.
    pub fn stop(&mut self) -> Result<()> {
        self.pmcs.iter_mut().try_for_each(|(_, p)| p.stop())
    }

    /// The sum over CPUs.
    pub fn read(&mut self) -> Result<u64> {
        self.pmcs
            .iter_mut()
            .try_fold(0u64, |acc, (_, p)| Ok(acc.wrapping_add(p.read()?)))
    }

    /// The sum over CPUs with raw counts and times (times summed too, so
    /// the running fraction is the CPUs' average).
    pub fn read_detailed(&mut self) -> Result<Reading> {
        let mut sum = Reading {
            value: 0,
            raw: 0,
            time_enabled: 0,
            time_running: 0,
            multiplexed: false,
        };
        for (_, p) in &mut self.pmcs {
            let r = p.read_detailed()?;
            sum.value = sum.value.wrapping_add(r.value);
            sum.raw = sum.raw.wrapping_add(r.raw);
            sum.time_enabled = sum.time_enabled.saturating_add(r.time_enabled);
            sum.time_running = sum.time_running.saturating_add(r.time_running);
            sum.multiplexed |= r.multiplexed;
        }
        Ok(sum)
    }

    /// Each CPU's value.
    pub fn read_each(&mut self) -> Result<Vec<(u32, u64)>> {
        self.pmcs
            .iter_mut()
            .map(|(c, p)| Ok((*c, p.read()?)))
            .collect()
    }

    /// The per-CPU PMCs.
    pub fn pmcs(&mut self) -> impl Iterator<Item = (u32, &mut Pmc)> {
        self.pmcs.iter_mut().map(|(c, p)| (*c, p))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::sim::SimBackend;
    use crate::{Cpu, Flags};

    /// `PerCpu` allocates on the CPUs the backend last saw online (the
    /// sim keeps them as Linux does); when a CPU went offline since, its
    /// open fails and the allocation is made again on the CPUs online now.
    /// A failure with the same CPUs online is the failure.
    #[test]
    fn a_cpu_gone_offline_since_it_was_seen_is_left_out() {
        let sim = SimBackend::new(2);
        let owner = Owner::new(sim.clone());
        let cpus = |p: &mut PerCpu| p.pmcs().map(|(c, _)| c).collect::<Vec<_>>();
        let mut all =
            PerCpu::allocate_on_every_cpu(&owner, "task-clock", Mode::SC, Flags::empty()).unwrap();
        assert_eq!(cpus(&mut all), [0, 1]);
        drop(all);
        sim.set_online(1, false);
        assert_eq!(
            owner.binding().online_cpus_last_seen(),
            [0, 1],
            "the kept list is stale"
        );
        let mut now =
            PerCpu::allocate_on_every_cpu(&owner, "task-clock", Mode::SC, Flags::empty()).unwrap();
        assert_eq!(cpus(&mut now), [0]);
        assert_eq!(owner.pmcinfo().len(), 1, "CPU 0's first try was released");
        drop(now);
        sim.refuse_opens(Some(libc::EACCES));
        let e = PerCpu::allocate_on_every_cpu(&owner, "task-clock", Mode::SC, Flags::empty())
            .unwrap_err();
        assert_eq!(e.errno(), libc::EACCES, "{e}");
    }

    /// A CPU's PMC given another CPU's preparation uses it (no prepare of
    /// its own) and is still a PMC of its own: its id, its CPU, its
    /// counter; without one it prepares its own.
    #[test]
    fn a_shared_preparation_serves_another_cpus_pmc() {
        let owner = Owner::new(SimBackend::new(2));
        let first = owner
            .allocate("task-clock", Mode::SC, Flags::empty(), Cpu::Id(0))
            .unwrap();
        let asked = Asked {
            prepared: Some(&first.event),
            ..Asked::default()
        };
        let mut second =
            Pmc::allocate_for_per_cpu(&owner, "task-clock", Mode::SC, Flags::empty(), 1, asked)
                .unwrap();
        assert!(Arc::ptr_eq(&first.event, &second.event));
        assert_ne!(first.id(), second.id());
        assert_eq!(second.cpu(), Cpu::Id(1));
        second.start().unwrap();
        assert_eq!(
            first.state(),
            crate::State::Allocated,
            "only the second started"
        );
        let own = Pmc::allocate_for_per_cpu(
            &owner,
            "task-clock",
            Mode::SC,
            Flags::empty(),
            1,
            Asked::default(),
        )
        .unwrap();
        assert!(!Arc::ptr_eq(&first.event, &own.event));
    }
}
