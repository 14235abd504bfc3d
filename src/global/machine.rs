//! Machine queries: `pmc_cpuinfo`, `pmc_ncpu`, `pmc_npmc`, `pmc_pmcinfo`,
//! `pmc_event_names_of_class`.

use super::select::default_backend;
use crate::{Class, Cpu, CpuInfo, LibpmcClass, PmcInfo, Result};

/// The machine description (`pmc_cpuinfo`).
pub fn cpuinfo() -> Result<CpuInfo> {
    default_backend().cpuinfo()
}

/// Highest possible CPU number + 1 (`pmc_ncpu`).
pub fn ncpu() -> Result<u32> {
    Ok(cpuinfo()?.ncpu)
}

/// Hardware PMCs on a CPU (`pmc_npmc`); EINVAL for a CPU that does not exist.
pub fn npmc(cpu: u32) -> Result<u32> {
    let info = cpuinfo()?;
    if cpu >= info.ncpu {
        return Err(crate::Error::invalid(
            "npmc",
            format!("cpu {cpu} does not exist (ncpu is {})", info.ncpu),
        ));
    }
    Ok(info.npmc)
}

/// The PMCs this process has allocated that can run on `cpu`
/// (`pmc_pmcinfo`). Linux does not expose other processes' counters, so
/// unlike FreeBSD the list holds only the caller's own PMCs: process PMCs
/// (which follow their targets to any CPU) and system PMCs on that CPU.
/// As `PMC_OP_GETPMCINFO` (hwpmc_mod.c): a CPU beyond `ncpu` is EINVAL, an
/// offline one ENXIO.
pub fn pmcinfo(cpu: u32) -> Result<Vec<PmcInfo>> {
    let info = cpuinfo()?;
    if cpu >= info.ncpu {
        return Err(crate::Error::invalid(
            "pmcinfo",
            format!("cpu {cpu} does not exist (ncpu is {})", info.ncpu),
        ));
    }
    if !online_cpus().contains(&cpu) {
        return Err(crate::Error::Unavailable {
            what: format!("cpu {cpu}"),
            why: "it is offline; bring it online or ask about another CPU".into(),
            reason: crate::Reason::OfflineCpu { cpu }.boxed(),
            source: None,
        });
    }
    Ok(crate::Owner::global()
        .pmcinfo()
        .into_iter()
        .filter(|p| matches!(p.cpu, Cpu::Any) || p.cpu == Cpu::Id(cpu))
        .collect())
}

/// Every event name of a class (`pmc_event_names_of_class`).
pub fn event_names_of_class(class: &Class) -> Result<Vec<String>> {
    default_backend().event_names(class)
}

/// `pmc_event_names_of_class` of a FreeBSD class, as libpmc lists it.
/// ARMV8 is libpmc's table for this CPU type — its aliases, then
/// `EVENT_00H` … `EVENT_3FFH` ([`crate::spec::armv8`]), every one of which
/// `Pmc::allocate` takes where an Arm PMU counts it; every other class
/// lists the names of its [`LibpmcClass::listed_classes`].
pub fn libpmc_event_names(class: LibpmcClass) -> Result<Vec<String>> {
    if class == LibpmcClass::Armv8 {
        let cputype = super::this_machine().cputype;
        return Ok(crate::spec::armv8::event_names(cputype));
    }
    class
        .listed_classes()
        .iter()
        .map(event_names_of_class)
        .collect::<Result<Vec<_>>>()
        .map(|lists| lists.concat())
}

/// The CPUs that are online now.
pub fn online_cpus() -> Vec<u32> {
    default_backend().online_cpus()
}

/// Whether a process exists and has not exited (zombies count as exited).
pub fn process_exists(pid: u32) -> bool {
    default_backend().process_exists(pid)
}
