//! Native (pmu-events) event names: `inst_retired.any` and the like through
//! the CPU model's table (`pmc_linux::pmu_events`), encoded with the core
//! PMU's own format fields, for names no sysfs alias covers.

use super::description::MachineDescription;
use pmc_linux::pmu as lpmu;

use super::pmu::pmu_event;
use super::{Resolved, Sysfs};
use crate::Result;
use crate::backend::EventRequest;

/// `name` (lower case) as a native event of the CPU's table, on every core
/// PMU it belongs to; `None` when the table does not have it.
pub(super) fn native_event(
    sysfs: &Sysfs,
    d: &MachineDescription,
    request: &EventRequest<'_>,
    name: &str,
) -> Option<Result<Resolved>> {
    let table = d.table()?;
    let cores: Vec<_> = d.core_pmus().cloned().collect();
    let placements = match table.placements(name, &cores)? {
        Ok(p) => p,
        Err(e) => return Some(Err(super::not_supported(e))),
    };
    let mut planned = Vec::new();
    let mut last = None;
    for (pmu, entry) in placements {
        match pmu_event(sysfs, d, request, &pmu.name, &entry.terms) {
            Ok(mut r) => {
                planned.append(&mut r.planned);
                last = Some(r);
            }
            Err(e) => return Some(Err(e)),
        }
    }
    let last = last?;
    let description = format!("{name} ({}, {})", last.description, table.model());
    Some(Ok(Resolved {
        planned,
        description: description.into(),
        ..last
    }))
}

/// Why a name is not native here, for the unknown-name error.
pub(super) fn why_not(d: &MachineDescription) -> String {
    match (d.table(), d.cpuid()) {
        (Some(t), _) => format!("nor a native event of this CPU ({} table)", t.model()),
        (None, Some(cpuid)) => format!(
            "and there is no native event table for CPU {cpuid} (set {} to a table made by `cargo xtask gen-pmu-events --vendor all \
             <linux source> --out FILE`)",
            pmc_linux::pmu_events::TABLE_ENV
        ),
        (None, None) => "and no native event table applies".into(),
    }
}

/// `name` (lower case) as libpmc's ARMV8 class names it (`INST_RETIRED`,
/// `EVENT_08H`; [`crate::spec::armv8`]) where the core PMUs are Arm PMUv3s
/// (`armv8_pmuv3`, `armv8_cortex_a72`, …): the event number through each
/// one's `event` format field, as hwpmc_arm64.c programs it. The table is
/// the one hwpmc's CPU type selects, from MIDR_EL1 (the description's
/// cpuid, `0x…` as perf writes it); `None` elsewhere or for another name.
pub(super) fn armv8_event(
    sysfs: &Sysfs,
    d: &MachineDescription,
    request: &EventRequest<'_>,
    name: &str,
) -> Option<Result<Resolved>> {
    let arm: Vec<String> = d
        .core_pmus()
        .filter(|p| p.name.starts_with("armv8") || p.name.starts_with("armv9"))
        .map(|p| p.name.clone())
        .collect();
    if arm.is_empty() {
        return None;
    }
    let midr = d
        .cpuid()
        .and_then(|c| u64::from_str_radix(c.trim_start_matches("0x"), 16).ok());
    let cputype = midr.map_or(
        crate::log::cpu::PMC_CPU_ARMV8_CORTEX_A53,
        crate::log::cpu::arm64_cputype,
    );
    let code = crate::spec::armv8::event_number(name, cputype)?;
    let term = [lpmu::Term::new(
        "event",
        lpmu::TermValue::Number(code.into()),
    )];
    let mut planned = Vec::new();
    let mut last = None;
    for pmu in &arm {
        match pmu_event(sysfs, d, request, pmu, &term) {
            Ok(mut r) => {
                planned.append(&mut r.planned);
                last = Some(r);
            }
            Err(e) => return Some(Err(e)),
        }
    }
    let last = last?;
    let description = format!(
        "{} (libpmc ARMV8 event {code:#04x}, {})",
        name.to_ascii_uppercase(),
        last.description
    );
    Some(Ok(Resolved {
        planned,
        description: description.into(),
        ..last
    }))
}
