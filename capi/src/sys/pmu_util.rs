//! The C entry points of lib/libpmc/libpmc_pmu_util.c (the pmu-events
//! functions), each in [`guard`].

use std::ffi::{CStr, CString, c_char, c_int};

use super::{guard, put};
use crate::pmu;
use crate::types::pmc_op_pmcallocate;

/// Writes `text` to C's `stdout`, as libpmc's printf does, so that it
/// interleaves with the caller's own stdio output in order.
fn print_c(text: &str) {
    if text.is_empty() {
        return;
    }
    let c = CString::new(text.replace('\0', "")).unwrap_or_default();
    // SAFETY: a "%s" format with one valid NUL-terminated string argument.
    unsafe { libc::printf(c"%s".as_ptr(), c.as_ptr()) };
}

/// A C string argument that may be NULL (libpmc's filters and cpuids).
fn opt_c_str<'a>(p: *const c_char) -> Option<&'a str> {
    if p.is_null() {
        return None;
    }
    // SAFETY: non-NULL; the caller passes a NUL-terminated string that
    // outlives this call.
    unsafe { CStr::from_ptr(p) }.to_str().ok()
}

/// pmc_pmu_enabled(3): 1 where this machine's core PMU has events.
#[unsafe(no_mangle)]
pub extern "C" fn pmc_pmu_enabled() -> c_int {
    guard("pmc_pmu_enabled", 0, || c_int::from(pmu::enabled()))
}

/// pmc_pmu_print_counters: `"\t%s\n"` per event whose name contains
/// `event_name` (any case); NULL lists all.
#[unsafe(no_mangle)]
pub extern "C" fn pmc_pmu_print_counters(event_name: *const c_char) {
    guard("pmc_pmu_print_counters", (), || {
        print_c(&pmu::counters_text(&pmu::host(), opt_c_str(event_name)));
    })
}

/// pmc_pmu_print_counter_desc: descriptions, which our tables lack.
#[unsafe(no_mangle)]
pub extern "C" fn pmc_pmu_print_counter_desc(event_name: *const c_char) {
    guard("pmc_pmu_print_counter_desc", (), || {
        print_c(&pmu::desc_text(&pmu::host(), opt_c_str(event_name)));
    })
}

/// pmc_pmu_print_counter_desc_long: as pmc_pmu_print_counter_desc.
#[unsafe(no_mangle)]
pub extern "C" fn pmc_pmu_print_counter_desc_long(event_name: *const c_char) {
    guard("pmc_pmu_print_counter_desc_long", (), || {
        print_c(&pmu::desc_text(&pmu::host(), opt_c_str(event_name)));
    })
}

/// pmc_pmu_print_counter_full: `name:`, `event:`, `pmu:` lines.
#[unsafe(no_mangle)]
pub extern "C" fn pmc_pmu_print_counter_full(event_name: *const c_char) {
    guard("pmc_pmu_print_counter_full", (), || {
        print_c(&pmu::full_text(&pmu::host(), opt_c_str(event_name)));
    })
}

/// pmc_pmu_sample_rate_get: the event's period, else 65536.
#[unsafe(no_mangle)]
pub extern "C" fn pmc_pmu_sample_rate_get(event_name: *const c_char) -> u64 {
    guard(
        "pmc_pmu_sample_rate_get",
        pmu::DEFAULT_SAMPLE_COUNT,
        || match opt_c_str(event_name) {
            Some(n) => pmu::host().sample_rate(n),
            None => pmu::DEFAULT_SAMPLE_COUNT,
        },
    )
}

/// pmc_pmu_pmcallocate: 0, or an errno value (not −1 + errno, as libpmc).
#[unsafe(no_mangle)]
pub extern "C" fn pmc_pmu_pmcallocate(
    event_name: *const c_char,
    pm: *mut pmc_op_pmcallocate,
) -> c_int {
    guard("pmc_pmu_pmcallocate", pmc_core::EDOOFUS, || {
        let Some(name) = opt_c_str(event_name) else {
            return libc::EFAULT;
        };
        if pm.is_null() || !pm.is_aligned() {
            return libc::EFAULT;
        }
        // SAFETY: non-NULL and aligned; the caller passes a writable struct
        // pmc_op_pmcallocate, whose fields are plain integers and a union of
        // them (every bit pattern valid).
        let pm = unsafe { &mut *pm };
        pmu::host().pmcallocate(name, pm)
    })
}

/// pmc_pmu_event_get_by_idx: the name at `idx` of `cpuid`'s list (NULL:
/// this machine), or NULL. The string lives as long as the process.
#[unsafe(no_mangle)]
pub extern "C" fn pmc_pmu_event_get_by_idx(cpuid: *const c_char, idx: c_int) -> *const c_char {
    guard("pmc_pmu_event_get_by_idx", std::ptr::null(), || {
        let Some(list) = pmu::for_cpuid(opt_c_str(cpuid)) else {
            return std::ptr::null();
        };
        usize::try_from(idx)
            .ok()
            .and_then(|i| list.events.get(i))
            // The lists are kept in statics: the pointer stays valid.
            .map_or(std::ptr::null(), |e| e.name.as_ptr())
    })
}

/// pmc_pmu_idx_get_by_event: the index of `event` (or of its FreeBSD
/// alias) in `cpuid`'s list, or −1.
#[unsafe(no_mangle)]
pub extern "C" fn pmc_pmu_idx_get_by_event(cpuid: *const c_char, event: *const c_char) -> c_int {
    guard("pmc_pmu_idx_get_by_event", -1, || {
        let (Some(list), Some(event)) = (pmu::for_cpuid(opt_c_str(cpuid)), opt_c_str(event)) else {
            return -1;
        };
        list.find(list.alias(event))
            .and_then(|(i, _)| c_int::try_from(i).ok())
            .unwrap_or(-1)
    })
}

/// The static array `pmc_pmu_stat_mode` hands out.
struct StatModeCounters([*const c_char; 6]);
// SAFETY: the pointers are to 'static C string literals, never written.
unsafe impl Sync for StatModeCounters {}

static STAT_MODE: StatModeCounters = StatModeCounters([
    pmu::STAT_MODE_COUNTERS[0].as_ptr(),
    pmu::STAT_MODE_COUNTERS[1].as_ptr(),
    pmu::STAT_MODE_COUNTERS[2].as_ptr(),
    pmu::STAT_MODE_COUNTERS[3].as_ptr(),
    pmu::STAT_MODE_COUNTERS[4].as_ptr(),
    pmu::STAT_MODE_COUNTERS[5].as_ptr(),
]);

/// pmc_pmu_stat_mode: libpmc's six default counters where the pmu-events
/// table is enabled, else EOPNOTSUPP (an errno value, as libpmc).
#[unsafe(no_mangle)]
pub extern "C" fn pmc_pmu_stat_mode(counters: *mut *const *const c_char) -> c_int {
    guard("pmc_pmu_stat_mode", pmc_core::EDOOFUS, || {
        if !pmu::enabled() {
            return libc::EOPNOTSUPP;
        }
        match put(counters, STAT_MODE.0.as_ptr(), "pmc_pmu_stat_mode") {
            Ok(()) => 0,
            Err(f) => f.errno,
        }
    })
}

/// The IAP config word of a union filled by `pmc_pmu_pmcallocate`.
#[cfg(all(test, target_os = "linux"))]
pub(crate) fn iap_config(md: &crate::types::pmc_md_op_pmcallocate) -> u32 {
    // SAFETY: read after PmuList::pmcallocate wrote pm_iap, whose fields
    // are plain integers.
    unsafe { md.pm_iap.pm_iap_config }
}

/// arm64's `pm_md_config` of a union filled by `pmc_pmu_pmcallocate`.
#[cfg(all(test, target_os = "linux"))]
pub(crate) fn md_config(md: &crate::types::pmc_md_op_pmcallocate) -> u32 {
    // SAFETY: read after PmuList::pmcallocate wrote pm_md_config, a plain
    // integer.
    unsafe { md.pm_md_config }
}

/// The IAP response word of a union filled by `pmc_pmu_pmcallocate`.
#[cfg(all(test, target_os = "linux"))]
pub(crate) fn iap_rsp(md: &crate::types::pmc_md_op_pmcallocate) -> u64 {
    // SAFETY: as iap_config.
    unsafe { md.pm_iap.pm_iap_rsp }
}

/// The AMD config word and sub-class of a union filled by
/// `pmc_pmu_pmcallocate`.
#[cfg(all(test, target_os = "linux"))]
pub(crate) fn amd_config(md: &crate::types::pmc_md_op_pmcallocate) -> (u64, u32) {
    // SAFETY: read after PmuList::pmcallocate wrote pm_amd, whose fields
    // are plain integers.
    unsafe { (md.pm_amd.pm_amd_config, md.pm_amd.pm_amd_sub_class) }
}
