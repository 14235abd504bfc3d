//! Test-only hooks, reached as `pmc::__private_test_hooks` (hidden, not
//! public API): what `allocate` would ask the kernel for, without opening
//! anything, against this machine or fixture sysfs trees of machines this
//! one is not. Used by the golden attr tests (`tests/golden_attrs.rs`,
//! `tests/native_events.rs`) and the benchmarks' raw baselines.

use super::EventRequest;
use crate::{Error, Result};

/// The `perf_event_attr`s `allocate` would open for this specifier, mode
/// and flags (one per core PMU), without opening anything.
pub fn attrs_for(
    spec: &str,
    mode: crate::Mode,
    flags: crate::Flags,
    count: u64,
) -> Result<Vec<pmc_linux::attr::Attr>> {
    Ok(
        plan(spec, mode, flags, count, &super::resolve::Sysfs::system())?
            .into_iter()
            .map(|(a, _)| a)
            .collect(),
    )
}

/// Like [`attrs_for`], against another sysfs PMU tree and tracefs root
/// (fixture trees of machines this one is not), with each attr's CPUs.
pub fn attrs_for_sysfs(
    spec: &str,
    mode: crate::Mode,
    flags: crate::Flags,
    count: u64,
    pmu_root: &std::path::Path,
    tracefs_root: Option<&std::path::Path>,
) -> Result<Vec<(pmc_linux::attr::Attr, Option<Vec<u32>>)>> {
    let sysfs = fixture_sysfs(pmu_root, tracefs_root, None);
    plan(spec, mode, flags, count, &sysfs)
}

/// Like [`attrs_for_sysfs`] for the CPU of CPUID string `cpuid`
/// (`GenuineIntel-6-55-4`), whose native event table (`inst_retired.any`,
/// …) applies.
pub fn attrs_for_cpu(
    spec: &str,
    mode: crate::Mode,
    flags: crate::Flags,
    count: u64,
    pmu_root: &std::path::Path,
    cpuid: &str,
) -> Result<Vec<(pmc_linux::attr::Attr, Option<Vec<u32>>)>> {
    let sysfs = fixture_sysfs(pmu_root, None, Some(cpuid));
    plan(spec, mode, flags, count, &sysfs)
}

/// The sibling attrs `allocate` groups under each counter for
/// `LOG_PROCCSW` / per-process `LOG_PROCEXIT` (empty when none), against
/// the given sysfs PMU tree and tracefs root: for golden tests.
pub fn slice_siblings_for_sysfs(
    spec: &str,
    mode: crate::Mode,
    flags: crate::Flags,
    count: u64,
    pmu_root: &std::path::Path,
    tracefs_root: Option<&std::path::Path>,
) -> Result<Vec<pmc_linux::attr::Attr>> {
    let sysfs = fixture_sysfs(pmu_root, tracefs_root, None);
    let event = resolve_spec(spec, mode, flags, count, &sysfs)?;
    Ok(event
        .plan
        .slices
        .map(|s| s.attrs().copied().collect())
        .unwrap_or_default())
}

/// A fixture machine: its sysfs PMU tree, tracefs root and CPUID string.
fn fixture_sysfs(
    pmu_root: &std::path::Path,
    tracefs_root: Option<&std::path::Path>,
    cpuid: Option<&str>,
) -> super::resolve::Sysfs {
    super::resolve::Sysfs {
        pmu_root: pmu_root.to_path_buf().into(),
        tracefs: tracefs_root.map(std::path::Path::to_path_buf),
        cpuid: cpuid.map(|c| c.to_string().into()),
    }
}

fn plan(
    spec: &str,
    mode: crate::Mode,
    flags: crate::Flags,
    count: u64,
    sysfs: &super::resolve::Sysfs,
) -> Result<Vec<(pmc_linux::attr::Attr, Option<Vec<u32>>)>> {
    let event = resolve_spec(spec, mode, flags, count, sysfs)?;
    Ok(event.plan.attrs.into_iter().zip(event.plan.cpus).collect())
}

fn resolve_spec(
    spec: &str,
    mode: crate::Mode,
    flags: crate::Flags,
    count: u64,
    sysfs: &super::resolve::Sysfs,
) -> Result<super::event::LinuxEvent> {
    let parsed = crate::spec::parse(spec).map_err(|source| Error::InvalidSpec {
        spec: spec.to_string(),
        source,
    })?;
    super::resolve::resolve_in(
        &EventRequest {
            spec: &parsed,
            mode,
            flags,
            sample_period: count,
            pmcid: 0,
            buffer_pages: None,
            user_stack: None,
        },
        sysfs,
    )
}
