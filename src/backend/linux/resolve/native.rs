//! Native (pmu-events) event names: `inst_retired.any` and the like through
//! the CPU model's table (`pmc_linux::pmu_events`), encoded with the core
//! PMU's own format fields, for names no sysfs alias covers.

use super::description::MachineDescription;
use pmc_linux::pmu as lpmu;

use super::pmu::on_each_pmu;
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
    let placed = on_each_pmu(
        sysfs,
        d,
        request,
        placements
            .iter()
            .map(|(pmu, entry)| (pmu.name.as_str(), entry.terms.as_slice())),
    )?;
    Some(placed.map(|r| Resolved {
        description: format!("{name} ({}, {})", r.description, table.model()).into(),
        ..r
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
    let arm: Vec<&str> = d
        .core_pmus()
        .map(|p| p.name.as_str())
        .filter(|n| n.starts_with("armv8") || n.starts_with("armv9"))
        .collect();
    if arm.is_empty() {
        return None;
    }
    let cputype = d.cpuid().and_then(crate::log::cpu::midr).map_or(
        crate::log::cpu::PMC_CPU_ARMV8_CORTEX_A53,
        crate::log::cpu::arm64_cputype,
    );
    let code = crate::spec::armv8::event_number(name, cputype)?;
    let term = [lpmu::Term::new(
        "event",
        lpmu::TermValue::Number(code.into()),
    )];
    let placed = on_each_pmu(sysfs, d, request, arm.iter().map(|&p| (p, &term[..])))?;
    Some(placed.map(|r| {
        Resolved {
            description: format!(
                "{} (libpmc ARMV8 event {code:#04x}, {})",
                name.to_ascii_uppercase(),
                r.description
            )
            .into(),
            ..r
        }
    }))
}
