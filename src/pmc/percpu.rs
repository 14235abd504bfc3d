//! [`PerCpu`]: a system PMC on every online CPU, as `pmcstat -s` clones it.

use std::sync::Arc;

use super::allocate::{Prefetched, allocate};
use super::{Pmc, PmcBuilder};
use crate::backend::PreparedEvent;
use crate::{Cpu, Reading, Result};

/// A system PMC on every online CPU, as `pmcstat -s` clones them; reads sum
/// the CPUs. Made by [`PmcBuilder::per_cpu`].
#[derive(Debug)]
pub struct PerCpu {
    pmcs: Vec<(u32, Pmc)>,
}

/// A [`PerCpu`] being built: [`PmcBuilder::per_cpu`].
#[derive(Clone, Debug)]
#[must_use = "a builder does nothing until `build`"]
pub struct PerCpuBuilder {
    /// Each CPU's PMC, in a system mode.
    pmc: PmcBuilder,
    /// `None`: every online CPU.
    cpus: Option<Vec<u32>>,
}

impl PerCpuBuilder {
    pub(super) fn new(pmc: PmcBuilder) -> PerCpuBuilder {
        PerCpuBuilder { pmc, cpus: None }
    }

    /// On these CPUs instead of every online one (pmcstat's `-c`).
    pub fn cpus(mut self, cpus: &[u32]) -> Self {
        self.cpus = Some(cpus.to_vec());
        self
    }

    /// Counts on every CPU only what the tasks of the cgroup at `path`
    /// run (a Linux extension, perf stat's `-a -G`): see
    /// [`PmcBuilder::cgroup`]. The cgroup is opened once for every CPU.
    pub fn cgroup(mut self, path: impl Into<std::path::PathBuf>) -> Self {
        self.pmc = self.pmc.cgroup(path);
        self
    }

    /// Allocates the PMC of every CPU; the first failure releases those
    /// already made and is the error.
    pub fn build(&self) -> Result<PerCpu> {
        let backend = self.pmc.owner_ref().binding();
        match &self.cpus {
            Some(cpus) => self.build_on(cpus, &backend.online_cpus()),
            // On the CPUs the backend last saw online (no system call
            // where it keeps them); if that fails and the CPUs online now
            // are others (one went offline: its open failed), on those.
            None => {
                let seen = backend.online_cpus_last_seen();
                match self.build_on(&seen, &seen) {
                    Err(e) => {
                        let online = backend.online_cpus();
                        if online == seen {
                            return Err(e);
                        }
                        self.build_on(&online, &online)
                    }
                    done => done,
                }
            }
        }
    }

    /// The event, the online CPUs and the owner are asked for once, not
    /// once per CPU.
    fn build_on(&self, cpus: &[u32], online: &[u32]) -> Result<PerCpu> {
        let owner = self.pmc.owner_ref();
        let spec = self.pmc.event().parse(owner)?;
        let cgroup = self.pmc.open_cgroup()?;
        let owner_pid = Some(owner.binding().caller_pid());
        let highest_cpu = Some(owner.binding().highest_possible_cpu());
        // The first CPU's preparation serves the others when it can.
        let mut shared: Option<Arc<dyn PreparedEvent>> = None;
        let mut pmcs = Vec::with_capacity(cpus.len());
        for &c in cpus {
            let known = Prefetched {
                online_cpus: Some(online),
                highest_cpu,
                owner_pid,
                prepared: shared.as_ref(),
            };
            let what = self.pmc.allocation(Cpu::Id(c), cgroup.as_ref());
            let pmc = allocate(owner, spec.clone(), &what, known)?;
            if shared.is_none() && pmc.event.serves_every_cpu() {
                shared = Some(Arc::clone(&pmc.event));
            }
            pmcs.push((c, pmc));
        }
        Ok(PerCpu { pmcs })
    }
}

impl PerCpu {
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
    use crate::{Mode, Owner};

    /// `PerCpu` allocates on the CPUs the backend last saw online (the
    /// sim keeps them as Linux does); when a CPU went offline since, its
    /// open fails and the allocation is made again on the CPUs online now.
    /// A failure with the same CPUs online is the failure.
    #[test]
    fn a_cpu_gone_offline_since_it_was_seen_is_left_out() {
        let sim = SimBackend::new(2);
        let owner = Owner::new(sim.clone());
        let cpus = |p: &mut PerCpu| p.pmcs().map(|(c, _)| c).collect::<Vec<_>>();
        let every_cpu = owner.pmc("task-clock").per_cpu();
        let mut all = every_cpu.build().unwrap();
        assert_eq!(cpus(&mut all), [0, 1]);
        drop(all);
        sim.set_online(1, false);
        assert_eq!(
            owner.binding().online_cpus_last_seen(),
            [0, 1],
            "the kept list is stale"
        );
        let mut now = every_cpu.build().unwrap();
        assert_eq!(cpus(&mut now), [0]);
        assert_eq!(owner.pmcinfo().len(), 1, "CPU 0's first try was released");
        drop(now);
        sim.refuse_opens(Some(libc::EACCES));
        let e = every_cpu.build().unwrap_err();
        assert_eq!(e.errno(), libc::EACCES, "{e}");
    }

    /// The builder's settings reach every CPU's PMC: a sampling `per_cpu`
    /// is SS with its period, on the CPUs named, on the builder's owner.
    #[test]
    fn every_cpus_pmc_is_what_the_builder_says() {
        let owner = Owner::new(SimBackend::new(4));
        let mut ss = owner
            .pmc("task-clock")
            .sampling(5_000)
            .per_cpu()
            .cpus(&[1, 3])
            .build()
            .unwrap();
        let made: Vec<_> = ss
            .pmcs()
            .map(|(c, p)| (c, p.cpu(), p.mode(), p.reload_count()))
            .collect();
        assert_eq!(
            made,
            [
                (1, Cpu::Id(1), Mode::SS, 5_000),
                (3, Cpu::Id(3), Mode::SS, 5_000)
            ]
        );
        assert_eq!(owner.pmcinfo().len(), 2);
    }

    /// A CPU's PMC given another CPU's preparation uses it (no prepare of
    /// its own) and is still a PMC of its own: its id, its CPU, its
    /// counter; without one (and none kept by its owner) it prepares its
    /// own.
    #[test]
    fn a_shared_preparation_serves_another_cpus_pmc() {
        let owner = Owner::new(SimBackend::new(2));
        let builder = owner.pmc("task-clock").system(0);
        let first = builder.build().unwrap();
        let spec = builder.event().parse(&owner).unwrap();
        let known = Prefetched {
            prepared: Some(&first.event),
            ..Prefetched::default()
        };
        let mut second = allocate(
            &owner,
            spec.clone(),
            &builder.allocation(Cpu::Id(1), None),
            known,
        )
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
        // (On another owner: this one kept the first preparation.)
        let own = allocate(
            &Owner::new(SimBackend::new(2)),
            spec,
            &builder.allocation(Cpu::Id(1), None),
            Prefetched::default(),
        )
        .unwrap();
        assert!(!Arc::ptr_eq(&first.event, &own.event));
    }
}
