//! Name tables: generic hardware/software/cache names, FreeBSD aliases and
//! the SOFT-* mapping. (Filled in by the spec parser work.)

use super::{CacheEvent, EventName, HardwareEvent, SoftwareEvent};

/// FreeBSD `SOFT-*` events and their Linux equivalent specifier, if any.
pub static SOFT_EVENTS: &[(&str, Option<&str>)] = &[];

/// Every name the parser knows statically, with what it means.
pub fn generic_names() -> Vec<(String, EventName)> {
    Vec::new()
}

pub(crate) fn hardware_name(e: HardwareEvent) -> &'static str {
    let _ = e;
    ""
}

pub(crate) fn software_name(e: SoftwareEvent) -> &'static str {
    let _ = e;
    ""
}

pub(crate) fn cache_name(e: CacheEvent) -> String {
    let _ = e;
    String::new()
}
