//! [`PerCpu`]: a system PMC on every online CPU, as `pmcstat -s` clones it.

use super::{Asked, Pmc};
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
        let online = crate::machine::online_cpus();
        Self::allocate_checked(spec, mode, flags, &online, &online)
    }

    /// Allocates `spec` in a system mode on the given CPUs.
    pub fn allocate_on_cpus(spec: &str, mode: Mode, flags: Flags, cpus: &[u32]) -> Result<PerCpu> {
        Self::allocate_checked(spec, mode, flags, cpus, &crate::machine::online_cpus())
    }

    /// The online CPUs and the owner are asked for once, not once per CPU.
    fn allocate_checked(
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
        let owner = Owner::global();
        let asked = Asked {
            online: Some(online),
            owner: Some(owner.backend().caller_pid()),
            user_stack: None,
        };
        let pmcs = cpus
            .iter()
            .map(|&c| {
                let pmc = Pmc::allocate_for_per_cpu(owner, spec, mode, flags, c, asked)?;
                Ok((c, pmc))
            })
            .collect::<Result<Vec<_>>>()?;
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
