//! Native (pmu-events) event names: `inst_retired.any` and the like through
//! the CPU model's table (`pmc_linux::pmu_events`), encoded with the core
//! PMU's own format fields, for names no sysfs alias covers.

use pmc_linux::pmu as lpmu;
use pmc_linux::pmu_events::EventTable;

use super::{Planned, Sysfs, pmu_event};
use crate::backend::EventRequest;
use crate::{Capabilities, Class, Result};

/// The native event table of the CPU `sysfs` describes, if there is one.
fn table(sysfs: &Sysfs) -> Option<std::sync::Arc<EventTable>> {
    EventTable::for_cpuid(sysfs.cpuid.as_deref()?)
}

/// What a resolved event is: its attrs, class, capabilities, description.
type Resolved = (Vec<Planned>, Class, Capabilities, String);

/// `name` (lower case) as a native event of the CPU's table, on every core
/// PMU it belongs to; `None` when the table does not have it.
pub(super) fn native_event(
    sysfs: &Sysfs,
    request: &EventRequest<'_>,
    name: &str,
) -> Option<Result<Resolved>> {
    let table = table(sysfs)?;
    let cores = lpmu::core_pmus(&sysfs.pmu_root);
    let placements = match table.placements(name, &cores)? {
        Ok(p) => p,
        Err(e) => return Some(Err(super::not_supported(e))),
    };
    let mut planned = Vec::new();
    let mut last = None;
    for (pmu, entry) in placements {
        match pmu_event(sysfs, request, &pmu.name, &entry.terms) {
            Ok((mut attrs, class, caps, desc)) => {
                planned.append(&mut attrs);
                last = Some((class, caps, desc));
            }
            Err(e) => return Some(Err(e)),
        }
    }
    let (class, caps, desc) = last?;
    Some(Ok((
        planned,
        class,
        caps,
        format!("{name} ({desc}, {})", table.model()),
    )))
}

/// The native names of the CPU, for suggestions (empty without a table).
pub(super) fn names(sysfs: &Sysfs) -> Vec<String> {
    table(sysfs)
        .map(|t| t.names().map(str::to_string).collect())
        .unwrap_or_default()
}

/// Why a name is not native here, for the unknown-name error.
pub(super) fn why_not(sysfs: &Sysfs) -> String {
    match (table(sysfs), sysfs.cpuid.as_deref()) {
        (Some(t), _) => format!("nor a native event of this CPU ({} table)", t.model()),
        (None, Some(cpuid)) => format!(
            "and there is no native event table for CPU {cpuid} (set {} to a table made by `cargo xtask gen-pmu-events --vendor all \
             <linux source> --out FILE`)",
            pmc_linux::pmu_events::TABLE_ENV
        ),
        (None, None) => "and no native event table applies".into(),
    }
}
