//! Rules of FreeBSD's hwpmc that the kernel double must keep, each checked
//! through the `Transport` (as libpmc's PMC_CALL would reach the kernel) or
//! the double's process and log hooks, with the expected value taken from
//! sys/dev/hwpmc/hwpmc_mod.c, sys/dev/hwpmc/hwpmc_logging.c,
//! sys/dev/hwpmc/hwpmc_core.c or sys/kern/kern_descrip.c (cited per test):
//! row dispositions after PMCADMIN and PMCRELEASE, PMCADMIN's EBUSY,
//! PMCGETMSR, PMCRW's copy-out, what PMCSTART and a log's deconfiguration
//! do to other PMCs, and which records reach the owner's log.

mod common;

use common::{
    CHILD, ME, admin, alloc_req, allocate, attach, configure, detach, getmsr, kernel, kernel_with,
    logged, pmcinfo, release, soft, start, stop, u32_at, u64_at,
};
use pmc_freebsd::abi::*;
use pmc_freebsd::double::{KERNEL_PATH, KERNEL_START, KernelDouble, LogPipe};
use pmc_freebsd::transport::{Request, Transport};

/// `PMCLOG_TYPE_*` (sys/sys/pmclog.h).
const PROCCSW: u32 = 8;
const MAP_IN: u32 = 14;
const CALLCHAIN: u32 = 16;

/// The first IAF row.
const IAF_ROW0: u32 = 5;
/// The first SOFT row.
const SOFT_ROW0: u32 = 8;

/// A readable TC PMC of `class`'s event 0, with a count of 1000.
fn pmu(k: &KernelDouble, class: Class, flags: u32) -> Result<u32, Errno> {
    allocate(
        k,
        pmc_op_pmcallocate {
            pm_caps: PMC_CAP_READ,
            pm_count: 1000,
            ..alloc_req(class, 0, Mode::TC, PMC_CPU_ANY, flags)
        },
    )
}

/// PMCRW: the call's result and the `pm_value` the caller's structure
/// holds afterwards (`common::rw` gives the value only on success).
fn rw(k: &KernelDouble, id: u32, flags: u32, value: u64) -> (Result<(), Errno>, u64) {
    let mut r = pmc_op_pmcrw {
        pm_flags: flags,
        pm_pmcid: id,
        pm_value: value,
    };
    let res = k.call(Request::PmcRw(&mut r));
    (res, r.pm_value)
}

/// GETPMCINFO's `pm_rowdisp` of row `ri` (the disposition is per row, the
/// same on every CPU).
fn rowdisp(k: &KernelDouble, ri: u32) -> u32 {
    pmcinfo(k, 0)[ri as usize].pm_rowdisp
}

/// The records written out so far, after a FLUSHLOG: (type, the bytes
/// after the 16-byte header).
fn flushed(k: &KernelDouble, pipe: &LogPipe) -> Vec<(u32, Vec<u8>)> {
    k.call(Request::FlushLog).unwrap();
    let bytes = pipe.take();
    let mut out = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        let header = u32_at(&bytes, at);
        assert_eq!(header >> 24, 0xEE, "PMCLOG_HEADER_MAGIC at {at}");
        let len = (header & 0xFFFF) as usize;
        assert!(len >= 16, "a record is at least its header");
        out.push(((header >> 16) & 0xFF, bytes[at + 16..at + len].to_vec()));
        at += len;
    }
    out
}

fn kinds(recs: &[(u32, Vec<u8>)]) -> Vec<u32> {
    recs.iter().map(|(kind, _)| *kind).collect()
}

/// sys/kern/kern_descrip.c `fdalloc`: a new descriptor is the first free
/// one at or above `fd_freefile`, never negative; `pipe(2)` takes one for
/// each end. So pipes made one after another, with nothing closed in
/// between, get increasing write-end numbers, each at most two above the
/// previous one — and every one of them is a descriptor PMC_OP_CONFIGURELOG
/// configures (hwpmc_mod.c `pmc_syscall_handler` hands `pm_logfd >= 0` to
/// `pmclog_configure_log`; a negative one would deconfigure instead).
#[test]
fn pipes_made_in_a_row_get_the_next_descriptors() {
    let k = kernel();
    let fds: Vec<i32> = (0..4).map(|_| k.pipe().0).collect();
    for pair in fds.windows(2) {
        assert!(
            pair[0] < pair[1] && pair[1] - pair[0] <= 2,
            "lowest free descriptors, increasing: {fds:?}"
        );
    }
    assert!(fds.iter().all(|&fd| fd >= 0), "{fds:?}");
    configure(&k, fds[3]).unwrap();
}

/// hwpmc_logging.c `pmclog_configure_log` takes a reference on the file
/// (`fget_write` into `po_file`) and keeps it while the log is configured;
/// `pmclog_deconfigure_log` drops it (`fdrop`) after `pmclog_close`.
#[test]
fn the_kernel_holds_the_log_file_until_the_log_is_closed() {
    let k = kernel();
    let (fd, pipe) = k.pipe();
    configure(&k, fd).unwrap();
    assert!(!pipe.writer_closed(), "po_file holds the write end");
    k.call(Request::FlushLog).unwrap();
    assert!(!pipe.writer_closed(), "a flush keeps it");
    k.call(Request::CloseLog).unwrap();
    assert!(pipe.writer_closed());
}

/// hwpmc_mod.c `pmc_start` logs the kernel's mappings only for a sampling
/// PMC (`PMC_IS_SAMPLING_MODE` before `pmc_log_kernel_mappings`), and
/// `pmc_log_kernel_mappings` does it once per owner
/// (`PMC_PO_INITIAL_MAPPINGS_DONE`), each MAP_IN naming pid -1
/// (`pmclog_process_map_in(po, (pid_t)-1, ...)`).
#[test]
fn only_the_first_sampling_start_logs_the_kernel_mappings() {
    let k = kernel();
    let pipe = logged(&k);
    pipe.take();
    // A counting PMC: no MAP_IN at its start.
    let counting = soft(&k, Mode::TC, PMC_CPU_ANY, 0);
    start(&k, counting).unwrap();
    let recs = flushed(&k, &pipe);
    assert!(!kinds(&recs).contains(&MAP_IN), "{:?}", kinds(&recs));
    // The first sampling PMC: the kernel's MAP_IN, with pid -1.
    let first = soft(&k, Mode::TS, PMC_CPU_ANY, 0);
    start(&k, first).unwrap();
    let maps: Vec<Vec<u8>> = flushed(&k, &pipe)
        .into_iter()
        .filter(|(kind, _)| *kind == MAP_IN)
        .map(|(_, body)| body)
        .collect();
    assert_eq!(maps.len(), 1);
    let map = &maps[0];
    assert_eq!(u32_at(map, 0) as i32, -1, "pl_pid: the kernel");
    assert_eq!(u64_at(map, 8), KERNEL_START);
    assert_eq!(&map[16..16 + KERNEL_PATH.len()], KERNEL_PATH.as_bytes());
    // A second sampling PMC of the same owner: already done.
    let second = soft(&k, Mode::TS, PMC_CPU_ANY, 0);
    start(&k, second).unwrap();
    let recs = flushed(&k, &pipe);
    assert!(!kinds(&recs).contains(&MAP_IN), "{:?}", kinds(&recs));
}

/// hwpmc_mod.c `pmc_process_samples` skips a sample whose PMC is not
/// RUNNING ("skip non-running samples") and only handles sampling-mode
/// PMCs (a counting PMC raises no sampling interrupt; the function asserts
/// `PMC_IS_SAMPLING_MODE`), so neither a stopped sampling PMC nor a
/// running counting PMC logs a CALLCHAIN (`pmclog_process_callchain`).
#[test]
fn only_running_sampling_pmcs_log_callchains() {
    let k = kernel();
    let pipe = logged(&k);
    let counting = soft(&k, Mode::TC, PMC_CPU_ANY, 0);
    let sampling = soft(&k, Mode::TS, PMC_CPU_ANY, 0);
    for id in [counting, sampling] {
        attach(&k, id, CHILD).unwrap();
        start(&k, id).unwrap();
    }
    stop(&k, sampling).unwrap();
    pipe.take();
    k.sample(0, CHILD, 201, true, &[0x10]);
    let recs = flushed(&k, &pipe);
    assert!(!kinds(&recs).contains(&CALLCHAIN), "{:?}", kinds(&recs));
    // Running again: the sampling PMC's sample alone is logged.
    start(&k, sampling).unwrap();
    pipe.take();
    k.sample(0, CHILD, 201, true, &[0x10]);
    let chains: Vec<u32> = flushed(&k, &pipe)
        .into_iter()
        .filter(|(kind, _)| *kind == CALLCHAIN)
        .map(|(_, body)| u32_at(&body, 8))
        .collect();
    assert_eq!(chains, vec![sampling], "pl_pmcid of each CALLCHAIN");
}

/// hwpmc_mod.c `pmc_process_csw_out` logs PROCCSW only for a counting PMC
/// with `PMC_F_LOG_PROCCSW` (`if (pm->pm_flags & PMC_F_LOG_PROCCSW)
/// pmclog_process_proccsw`); a counting PMC without it counts the slice
/// silently, even with a log configured.
#[test]
fn a_switch_out_logs_proccsw_only_for_pmcs_that_asked_for_it() {
    let k = kernel();
    let pipe = logged(&k);
    let quiet = soft(&k, Mode::TC, PMC_CPU_ANY, 0);
    attach(&k, quiet, CHILD).unwrap();
    start(&k, quiet).unwrap();
    pipe.take();
    k.run_slice(CHILD, 201, 9);
    assert_eq!(rw(&k, quiet, PMC_F_OLDVALUE, 0), (Ok(()), 9), "counted");
    let recs = flushed(&k, &pipe);
    assert!(!kinds(&recs).contains(&PROCCSW), "{:?}", kinds(&recs));
}

/// hwpmc_mod.c `pmc_start` forces a context switch of the caller only for
/// a process PMC attached to its owner (`PMC_F_ATTACHED_TO_OWNER` →
/// `pmc_force_context_switch`); the switch out is where
/// `pmc_process_csw_out` logs PROCCSW for the owner's `PMC_F_LOG_PROCCSW`
/// PMCs. Starting a PMC attached to another process switches nothing.
#[test]
fn starting_a_pmc_of_another_process_does_not_switch_the_owner() {
    let k = kernel();
    let pipe = logged(&k);
    let csw = soft(&k, Mode::TC, PMC_CPU_ANY, PMC_F_LOG_PROCCSW);
    start(&k, csw).unwrap(); // attaches the owner and switches it
    k.advance(ME, 0, 5);
    pipe.take();
    let other = soft(&k, Mode::TC, PMC_CPU_ANY, 0);
    attach(&k, other, CHILD).unwrap();
    start(&k, other).unwrap();
    let recs = flushed(&k, &pipe);
    assert!(!kinds(&recs).contains(&PROCCSW), "{:?}", kinds(&recs));
    // A PMC attached to the owner: the forced switch out logs the slice.
    let own = soft(&k, Mode::TC, PMC_CPU_ANY, 0);
    start(&k, own).unwrap();
    let csws: Vec<(u64, u32)> = flushed(&k, &pipe)
        .into_iter()
        .filter(|(kind, _)| *kind == PROCCSW)
        .map(|(_, body)| (u64_at(&body, 0), u32_at(&body, 8)))
        .collect();
    assert_eq!(csws, vec![(5, csw)]);
}

/// hwpmc_mod.c `pmc_syscall_handler`, PMC_OP_CONFIGURELOG with a negative
/// descriptor: after `pmclog_close` it stops the PMCs that need the log
/// and are RUNNING (`PMC_F_NEEDS_LOGFILE && PMC_STATE_RUNNING` →
/// `pmc_stop`). A running PMC that needs no log keeps running (PMCRW's
/// write is EBUSY, `pmc_do_op_pmcrw`); one that needs the log but never
/// started stays ALLOCATED (PMCSTOP of a PMC neither RUNNING nor STOPPED
/// is EINVAL, PMC_OP_PMCSTOP).
#[test]
fn deconfiguring_the_log_stops_only_running_pmcs_that_need_it() {
    let k = kernel();
    let _pipe = logged(&k);
    let plain = soft(&k, Mode::TC, PMC_CPU_ANY, 0);
    let idle = soft(&k, Mode::TC, PMC_CPU_ANY, PMC_F_LOG_PROCCSW);
    let logging = soft(&k, Mode::TC, PMC_CPU_ANY, PMC_F_LOG_PROCEXIT);
    start(&k, plain).unwrap();
    start(&k, logging).unwrap();
    configure(&k, -1).unwrap();
    assert_eq!(
        rw(&k, plain, PMC_F_NEWVALUE, 1).0,
        Err(Errno::EBUSY),
        "still RUNNING"
    );
    assert_eq!(stop(&k, idle), Err(Errno::EINVAL), "still ALLOCATED");
    assert_eq!(rw(&k, logging, PMC_F_NEWVALUE, 1).0, Ok(()), "STOPPED");
    assert_eq!(stop(&k, logging), Ok(()), "already stopped");
}

/// hwpmc_mod.c PMC_OP_PMCADMIN refuses (EBUSY) only when the row of *that*
/// CPU has a PMC configured (`phw->phw_pmc != NULL` on the CPU it selects);
/// a system PMC is configured on its own CPU and row at allocation
/// (`pmc_do_op_pmcallocate` → `pcd_config_pmc`). Other rows of that CPU,
/// and the same row of another CPU, can be disabled.
#[test]
fn admin_is_busy_only_on_the_row_and_cpu_of_a_system_pmc() {
    let k = kernel();
    let sys = soft(&k, Mode::SC, 0, 0);
    let ri = pmc_id_to_rowindex(sys);
    assert_eq!(ri, SOFT_ROW0);
    assert_eq!(admin(&k, 0, ri, State::DISABLED), Err(Errno::EBUSY));
    assert_eq!(admin(&k, 0, ri + 1, State::DISABLED), Ok(()), "another row");
    assert_eq!(admin(&k, 1, ri, State::DISABLED), Ok(()), "another CPU");
}

/// hwpmc_mod.c PMC_OP_PMCADMIN: disabling a free row marks it standalone
/// (`PMC_MARK_ROW_STANDALONE`), enabling it again unmarks it
/// (`PMC_UNMARK_ROW_STANDALONE`), so the row is FREE again (GETPMCINFO's
/// `pm_rowdisp`) and a process PMC can have it (`pmc_can_allocate_row`).
#[test]
fn enabling_a_disabled_row_frees_its_disposition() {
    let k = kernel();
    admin(&k, 0, SOFT_ROW0, State::DISABLED).unwrap();
    assert_eq!(rowdisp(&k, SOFT_ROW0), Disp::STANDALONE as u32);
    admin(&k, 0, SOFT_ROW0, State::FREE).unwrap();
    assert_eq!(rowdisp(&k, SOFT_ROW0), Disp::FREE as u32);
    let tc = soft(&k, Mode::TC, PMC_CPU_ANY, 0);
    assert_eq!(pmc_id_to_rowindex(tc), SOFT_ROW0);
}

/// hwpmc_mod.c `pmc_release_pmc_descriptor` undoes the allocation's mark:
/// `PMC_UNMARK_ROW_STANDALONE` for a system PMC, `PMC_UNMARK_ROW_THREAD`
/// for a process PMC, so both rows are FREE after PMCRELEASE.
#[test]
fn release_frees_the_row_disposition() {
    let k = kernel();
    let tc = soft(&k, Mode::TC, PMC_CPU_ANY, 0);
    let sc = soft(&k, Mode::SC, 0, 0);
    let (tc_row, sc_row) = (pmc_id_to_rowindex(tc), pmc_id_to_rowindex(sc));
    assert_ne!(tc_row, sc_row, "a THREAD row refuses a system PMC");
    assert_eq!(rowdisp(&k, tc_row), Disp::THREAD as u32);
    assert_eq!(rowdisp(&k, sc_row), Disp::STANDALONE as u32);
    release(&k, tc).unwrap();
    release(&k, sc).unwrap();
    assert_eq!(rowdisp(&k, tc_row), Disp::FREE as u32);
    assert_eq!(rowdisp(&k, sc_row), Disp::FREE as u32);
}

/// hwpmc_mod.c PMC_OP_PMCGETMSR refuses (EINVAL) a PMC with
/// `PMC_F_DESCENDANTS` even when its only target is its owner ("not
/// allowed for PMCs that are inherited across processes").
#[test]
fn getmsr_refuses_a_descendants_pmc() {
    // An owner without children: DESCENDANTS attaches it alone.
    let k = kernel_with(&[]);
    let id = pmu(&k, Class::IAP, PMC_F_DESCENDANTS | PMC_F_EV_PMU).unwrap();
    attach(&k, id, 0).unwrap();
    assert_eq!(getmsr(&k, id), Err(Errno::EINVAL));
}

/// hwpmc_core.c `iaf_get_msr`: the fixed counter of IAF row `ri` is
/// `IAF_RI_TO_MSR(ri)`, `ri + (1 << 30)`; `iap_get_msr` gives `ri`.
#[test]
fn getmsr_of_the_second_iaf_row() {
    let k = kernel();
    let iaf = |k: &KernelDouble| pmu(k, Class::IAF, PMC_F_EV_PMU).unwrap();
    let first = iaf(&k);
    let second = iaf(&k);
    assert_eq!(pmc_id_to_rowindex(second), IAF_ROW0 + 1);
    attach(&k, first, 0).unwrap();
    attach(&k, second, 0).unwrap();
    assert_eq!(getmsr(&k, first), Ok(1 << 30));
    assert_eq!(getmsr(&k, second), Ok((1 << 30) + 1));
    let iap = |k: &KernelDouble| pmu(k, Class::IAP, PMC_F_EV_PMU).unwrap();
    let _iap0 = iap(&k);
    let iap1 = iap(&k);
    attach(&k, iap1, 0).unwrap();
    assert_eq!(getmsr(&k, iap1), Ok(1), "iap_get_msr: the row itself");
}

/// hwpmc_mod.c `pmc_do_op_pmcrw` reads the hardware only when the PMC is
/// RUNNING and `PMC_F_ATTACHED_TO_OWNER`; `pmc_unlink_target_process`
/// (detaching the owner) clears that flag, so the read is
/// `pm_savedvalue` — which the owner's slice still on the hardware never
/// reaches (`pmc_process_csw_out` saves only for a linked target).
#[test]
fn a_pmc_detached_from_its_owner_reads_its_saved_value() {
    let k = kernel();
    let id = soft(&k, Mode::TC, PMC_CPU_ANY, 0);
    attach(&k, id, ME).unwrap();
    attach(&k, id, CHILD).unwrap();
    start(&k, id).unwrap();
    k.advance(ME, 0, 50);
    assert_eq!(rw(&k, id, PMC_F_OLDVALUE, 0), (Ok(()), 50), "the hardware");
    detach(&k, id, ME).unwrap();
    assert_eq!(rw(&k, id, PMC_F_OLDVALUE, 0), (Ok(()), 0), "pm_savedvalue");
    k.switch_out(ME);
    assert_eq!(rw(&k, id, PMC_F_OLDVALUE, 0), (Ok(()), 0));
}

/// hwpmc_mod.c `pmc_syscall_handler`, PMC_OP_PMCRW: the old value is
/// copied out to the caller's `pm_value` only with `PMC_F_OLDVALUE`; a
/// write alone leaves the caller's structure as it was.
#[test]
fn a_write_alone_copies_nothing_out() {
    let k = kernel();
    let id = soft(&k, Mode::TC, PMC_CPU_ANY, 0);
    assert_eq!(rw(&k, id, PMC_F_NEWVALUE, 5), (Ok(()), 5));
    assert_eq!(
        rw(&k, id, PMC_F_NEWVALUE, 77),
        (Ok(()), 77),
        "not the old 5"
    );
    assert_eq!(rw(&k, id, PMC_F_OLDVALUE, 0), (Ok(()), 77));
}
