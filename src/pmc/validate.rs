//! pmc_allocate(3)'s checks of mode, CPU and flags.

use crate::backend::BackendImpl;
use crate::{Cpu, Error, Flags, Mode, Result};

/// The allocation rules of `pmc_do_op_pmcallocate` (hwpmc_mod.c), in its
/// order: a CPU beyond `pmc_cpu_max()` is EINVAL, the mode/CPU pairing is
/// EINVAL, an offline CPU of a system PMC is ENXIO, then the flags. What
/// hwpmc accepts passes: CALLCHAIN on a counting mode (it only affects
/// samples) and DESCENDANTS on a system mode (no targets to follow).
///
/// `online` and `highest`: the online CPUs and the highest possible one,
/// when the caller has just asked the backend (`PerCpu` asks once for all
/// its CPUs, not once per CPU: each answer is a list of every CPU).
pub(super) fn validate_allocation(
    mode: Mode,
    flags: Flags,
    cpu: Cpu,
    backend: &dyn BackendImpl,
    (online, highest): (Option<&[u32]>, Option<u32>),
) -> Result<()> {
    if let Cpu::Id(n) = cpu {
        let last = highest.unwrap_or_else(|| backend.highest_possible_cpu());
        if n > last {
            // The range as the kernel's CPU lists (and -c) write it, last
            // CPU included.
            let range = if last == 0 {
                "CPU 0".to_string()
            } else {
                format!("CPUs 0-{last}")
            };
            return Err(Error::invalid(
                "allocate",
                format!("cpu {n} does not exist: this machine has {range}"),
            ));
        }
    }
    match (mode.is_process(), cpu) {
        (true, Cpu::Id(n)) => {
            return Err(Error::invalid(
                "allocate",
                format!(
                    "process-mode PMCs ({mode}) follow their targets on every CPU: pass \
                     Cpu::Any (PMC_CPU_ANY), not cpu {n}"
                ),
            ));
        }
        (false, Cpu::Any) => {
            return Err(Error::invalid(
                "allocate",
                format!(
                    "system-mode PMCs ({mode}) count on one CPU: pass Cpu::Id(n), or build \
                     one on every CPU with Pmc::builder(event).per_cpu()"
                ),
            ));
        }
        (false, Cpu::Id(n)) => {
            let asked;
            let online = match online {
                Some(cpus) => cpus,
                None => {
                    asked = backend.online_cpus();
                    &asked
                }
            };
            // Backends list CPUs in order: a binary search finds the CPU
            // of each of a `PerCpu`'s PMCs without a pass over the list
            // (its miss, rare, is checked by one).
            if online.binary_search(&n).is_err() && !online.contains(&n) {
                return Err(Error::Unavailable {
                    what: format!("cpu {n}"),
                    why: format!(
                        "it exists but is offline (online: {online:?}); {} or choose another",
                        backend.how_to_online(n)
                    ),
                    reason: crate::Reason::OfflineCpu { cpu: n }.boxed(),
                    source: None,
                });
            }
        }
        _ => {}
    }
    let unknown = flags.bits() & !Flags::all().bits();
    if unknown != 0 {
        return Err(Error::invalid(
            "allocate",
            format!("unknown flag bits {unknown:#x}"),
        ));
    }
    if flags.contains(Flags::USERCALLCHAIN) && !flags.contains(Flags::CALLCHAIN) {
        return Err(Error::invalid(
            "allocate",
            "USERCALLCHAIN requires CALLCHAIN",
        ));
    }
    if flags.contains(Flags::USERCALLCHAIN) && !mode.is_sampling() {
        return Err(Error::invalid(
            "allocate",
            format!("USERCALLCHAIN needs a sampling mode (SS, TS), not {mode}"),
        ));
    }
    if flags.intersects(Flags::LOG_PROCCSW | Flags::LOG_PROCEXIT) && mode.is_system() {
        return Err(Error::invalid(
            "allocate",
            format!("LOG_PROCCSW and LOG_PROCEXIT apply to process modes only, not {mode}"),
        ));
    }
    Ok(())
}
