//! The FFI edge: every C entry point, made to panic inside its `guard`,
//! returns its error value with errno `pmc::EDOOFUS` and the panic's message
//! in `pmc_last_error()`, instead of aborting the program (a panic that
//! unwinds out of an `extern "C"` function aborts). And the structs handed
//! to C are written as typed values.

use std::cell::Cell;
use std::ffi::{CStr, c_char, c_int};
use std::ptr::{null, null_mut};

use super::log_entries::*;
use super::pmu_util::*;
use super::*;
use crate::types::{pmc_op_pmcallocate, pmclog_ev, state};

thread_local! {
    static PANIC_NEXT: Cell<bool> = const { Cell::new(false) };
}

/// The test-only hook `guard` calls before an entry point's body: panics
/// once when the test asked for it on this thread.
pub(super) fn panic_if_requested(entry: &str) {
    if PANIC_NEXT.with(|p| p.replace(false)) {
        panic!("test-requested panic in {entry}");
    }
}

fn errno() -> c_int {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

fn last_error() -> String {
    // SAFETY: pmc_last_error returns a NUL-terminated string valid until
    // this thread's next failure.
    unsafe { CStr::from_ptr(pmc_last_error()) }
        .to_string_lossy()
        .into_owned()
}

/// `name` and the call, true when it returned the documented error value.
type Entry = (&'static str, Box<dyn FnOnce() -> bool>);

/// The entry points' names as the sources declare them.
fn declared_entry_points() -> Vec<String> {
    let sources = [
        include_str!("mod.rs"),
        include_str!("pmu_util.rs"),
        include_str!("log_entries.rs"),
    ];
    let mut names = Vec::new();
    for src in sources {
        let exported = src.matches("#[unsafe(no_mangle)]").count();
        let before = names.len();
        for part in src.split("pub extern \"C\" fn ").skip(1) {
            names.push(part.split('(').next().unwrap().to_string());
        }
        assert_eq!(
            names.len() - before,
            exported,
            "every no_mangle is an entry point"
        );
    }
    names.sort();
    names
}

#[test]
fn every_entry_point_returns_its_error_value_and_edoofus_after_a_panic() {
    let mut u = 0u32;
    let mut v = 0u64;
    let mut i: c_int = 0;
    let mut stats = pmc_driverstats::default();
    let mut ev = pmclog_ev::with_state(state::OK);
    // SAFETY: all-zero is a valid pmc_op_pmcallocate (integers and a union
    // of integers).
    let mut pm: pmc_op_pmcallocate = unsafe { std::mem::zeroed() };
    let (u, v, i, stats, ev_p, pm) = (
        &raw mut u,
        &raw mut v,
        &raw mut i,
        &raw mut stats,
        &raw mut ev,
        &raw mut pm,
    );
    let mut cpuinfo: *const pmc_cpuinfo = null();
    let cpuinfo = &raw mut cpuinfo;
    let mut pmcinfo: *mut pmc_pmcinfo = null_mut();
    let pmcinfo = &raw mut pmcinfo;
    let mut names: *mut *const c_char = null_mut();
    let names = &raw mut names;
    let mut counters: *const *const c_char = null();
    let counters = &raw mut counters;
    let spec = c"instructions".as_ptr();
    let mut data = *b"x";
    let data = data.as_mut_ptr().cast::<c_char>();
    let entries: Vec<Entry> = vec![
        ("pmc_init", Box::new(move || pmc_init() == -1)),
        (
            "pmc_allocate",
            Box::new(move || pmc_allocate(spec, 3, 0, -1, u, 0) == -1),
        ),
        ("pmc_attach", Box::new(move || pmc_attach(1, 0) == -1)),
        ("pmc_detach", Box::new(move || pmc_detach(1, 0) == -1)),
        ("pmc_release", Box::new(move || pmc_release(1) == -1)),
        ("pmc_start", Box::new(move || pmc_start(1) == -1)),
        ("pmc_stop", Box::new(move || pmc_stop(1) == -1)),
        ("pmc_read", Box::new(move || pmc_read(1, v) == -1)),
        ("pmc_write", Box::new(move || pmc_write(1, 0) == -1)),
        ("pmc_rw", Box::new(move || pmc_rw(1, 0, v) == -1)),
        ("pmc_set", Box::new(move || pmc_set(1, 0) == -1)),
        (
            "pmc_set_user_stack",
            Box::new(move || pmc_set_user_stack(8192) == -1),
        ),
        (
            "pmc_capabilities",
            Box::new(move || pmc_capabilities(1, u) == -1),
        ),
        ("pmc_width", Box::new(move || pmc_width(1, u) == -1)),
        ("pmc_get_msr", Box::new(move || pmc_get_msr(1, u) == -1)),
        ("pmc_cpuinfo", Box::new(move || pmc_cpuinfo(cpuinfo) == -1)),
        ("pmc_ncpu", Box::new(move || pmc_ncpu() == -1)),
        ("pmc_npmc", Box::new(move || pmc_npmc(0) == -1)),
        (
            "pmc_pmcinfo",
            Box::new(move || pmc_pmcinfo(0, pmcinfo) == -1),
        ),
        (
            "pmc_get_driver_stats",
            Box::new(move || pmc_get_driver_stats(stats) == -1),
        ),
        ("pmc_enable", Box::new(move || pmc_enable(0, 0) == -1)),
        ("pmc_disable", Box::new(move || pmc_disable(0, 0) == -1)),
        (
            "pmc_configure_logfile",
            Box::new(move || pmc_configure_logfile(-1) == -1),
        ),
        (
            "pmc_flush_logfile",
            Box::new(move || pmc_flush_logfile() == -1),
        ),
        (
            "pmc_close_logfile",
            Box::new(move || pmc_close_logfile() == -1),
        ),
        ("pmc_writelog", Box::new(move || pmc_writelog(0) == -1)),
        (
            "pmc_name_of_capability",
            Box::new(move || pmc_name_of_capability(1).is_null()),
        ),
        (
            "pmc_name_of_class",
            Box::new(move || pmc_name_of_class(1).is_null()),
        ),
        (
            "pmc_name_of_cputype",
            Box::new(move || pmc_name_of_cputype(1).is_null()),
        ),
        (
            "pmc_name_of_disposition",
            Box::new(move || pmc_name_of_disposition(0).is_null()),
        ),
        (
            "pmc_name_of_event",
            Box::new(move || pmc_name_of_event(0x1000).is_null()),
        ),
        (
            "pmc_name_of_mode",
            Box::new(move || pmc_name_of_mode(0).is_null()),
        ),
        (
            "pmc_name_of_state",
            Box::new(move || pmc_name_of_state(0).is_null()),
        ),
        (
            "pmc_event_names_of_class",
            Box::new(move || pmc_event_names_of_class(1, names, i) == -1),
        ),
        (
            "pmc_last_error",
            Box::new(move || pmc_last_error() == LAST_ERROR_LOST.as_ptr()),
        ),
        ("pmc_pmu_enabled", Box::new(move || pmc_pmu_enabled() == 0)),
        (
            "pmc_pmu_print_counters",
            Box::new(move || {
                pmc_pmu_print_counters(spec);
                true
            }),
        ),
        (
            "pmc_pmu_print_counter_desc",
            Box::new(move || {
                pmc_pmu_print_counter_desc(spec);
                true
            }),
        ),
        (
            "pmc_pmu_print_counter_desc_long",
            Box::new(move || {
                pmc_pmu_print_counter_desc_long(spec);
                true
            }),
        ),
        (
            "pmc_pmu_print_counter_full",
            Box::new(move || {
                pmc_pmu_print_counter_full(spec);
                true
            }),
        ),
        (
            "pmc_pmu_sample_rate_get",
            Box::new(move || pmc_pmu_sample_rate_get(spec) == crate::pmu::DEFAULT_SAMPLE_COUNT),
        ),
        (
            "pmc_pmu_pmcallocate",
            Box::new(move || pmc_pmu_pmcallocate(spec, pm) == pmc_core::EDOOFUS),
        ),
        (
            "pmc_pmu_event_get_by_idx",
            Box::new(move || pmc_pmu_event_get_by_idx(null(), 0).is_null()),
        ),
        (
            "pmc_pmu_idx_get_by_event",
            Box::new(move || pmc_pmu_idx_get_by_event(null(), spec) == -1),
        ),
        (
            "pmc_pmu_stat_mode",
            Box::new(move || pmc_pmu_stat_mode(counters) == pmc_core::EDOOFUS),
        ),
        ("pmclog_open", Box::new(move || pmclog_open(-1).is_null())),
        (
            "pmclog_feed",
            Box::new(move || pmclog_feed(null_mut(), data, 1) == -1),
        ),
        // The event says PMCLOG_ERROR too, as after any failed read.
        (
            "pmclog_read",
            Box::new(move || {
                // SAFETY: ev_p points at `ev`, alive for this test.
                pmclog_read(null_mut(), ev_p) == -1 && unsafe { (*ev_p).pl_state } == state::ERROR
            }),
        ),
        (
            "pmclog_close",
            Box::new(move || {
                pmclog_close(null_mut());
                true
            }),
        ),
    ];
    let mut tested: Vec<String> = entries.iter().map(|(n, _)| n.to_string()).collect();
    tested.sort();
    assert_eq!(
        tested,
        declared_entry_points(),
        "each entry point is tested once"
    );
    for (name, call) in entries {
        errno::set(0);
        PANIC_NEXT.with(|p| p.set(true));
        let error_value = call();
        assert!(
            !PANIC_NEXT.with(Cell::get),
            "{name} did not run its body in guard"
        );
        assert!(error_value, "{name}: not its error value after a panic");
        assert_eq!(errno(), pmc_core::EDOOFUS, "{name}: errno after a panic");
        let message = last_error();
        assert!(
            message.starts_with(&format!("{name}: internal error, libpmc panicked: ")),
            "{name}: {message}"
        );
        assert!(
            message.contains(&format!("test-requested panic in {name};")),
            "{name}: the panic's own message is kept: {message}"
        );
    }
    // Nothing lasting: the next calls answer as usual.
    assert_eq!(
        // SAFETY: a static name.
        unsafe { CStr::from_ptr(pmc_name_of_mode(0)) },
        c"SS"
    );
    let cookie = pmclog_open(-1);
    assert!(!cookie.is_null());
    pmclog_close(cookie);
}

#[test]
fn flexible_arrays_are_written_as_typed_values() {
    let row = |n: u8| pmc_info {
        pm_name: [n as c_char; crate::types::PMC_NAME_MAX],
        pm_class: u32::from(n),
        pm_enabled: 1,
        pm_rowdisp: 2,
        pm_ownerpid: -1,
        pm_mode: 3,
        pm_event: 0x1000 + u32::from(n),
        pm_flags: 0,
        _pad0: 0,
        pm_reloadcount: u64::MAX - u64::from(n),
    };
    let rows = [row(1), row(2), row(3)];
    let head = pmc_pmcinfo {
        pm_cpu: 7,
        _pad0: 0,
        pm_pmcs: [],
    };
    let offset = std::mem::offset_of!(pmc_pmcinfo, pm_pmcs);
    let p = malloc_flex(head, offset, &rows).unwrap();
    // SAFETY: p holds the head and, from `offset` on, three pmc_info, as
    // C's struct pmc_pmcinfo with pm_pmcs[3]; freed once below.
    unsafe {
        assert_eq!((*p).pm_cpu, 7);
        let pmcs = p.cast::<u8>().add(offset).cast::<pmc_info>();
        for (k, r) in rows.iter().enumerate() {
            let got = pmcs.add(k).read();
            assert_eq!(got.pm_name, r.pm_name);
            assert_eq!(
                (
                    got.pm_class,
                    got.pm_event,
                    got.pm_reloadcount,
                    got.pm_ownerpid
                ),
                (r.pm_class, r.pm_event, r.pm_reloadcount, r.pm_ownerpid)
            );
        }
        libc::free(p.cast());
    }
    let strings = [c"a".as_ptr(), c"b".as_ptr()];
    let a = malloc_flex((), 0, &strings)
        .unwrap()
        .cast::<*const c_char>();
    // SAFETY: a holds the two pointers; freed once.
    unsafe {
        assert_eq!((a.read(), a.add(1).read()), (strings[0], strings[1]));
        libc::free(a.cast());
    }
}
