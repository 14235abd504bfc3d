//! The kernel double's errno rules, each from FreeBSD 14/15
//! sys/dev/hwpmc/hwpmc_mod.c (`pmc_syscall_handler` and the helpers it
//! calls: `pmc_do_op_pmcallocate`, `pmc_do_op_pmcattach`,
//! `pmc_do_op_pmcdetach`, `pmc_attach_one_process`,
//! `pmc_detach_one_process`, `pmc_find_pmc`, `pmc_start`,
//! `pmc_do_op_pmcrw`) and sys/dev/hwpmc/hwpmc_logging.c
//! (`pmclog_configure_log`, `pmclog_flush`, `pmclog_close`), cited per test.
//! Requests go straight through the Transport, as libpmc's PMC_CALL would.

mod common;

use common::{
    CHILD as OTHER, ME, alloc_req, allocate, attach, configurelog, detach, kernel, pmcinfo,
    process, release, rw, start, stop,
};
use pmc_freebsd::abi::*;
use pmc_freebsd::double::{KernelDouble, Machine, Process};
use pmc_freebsd::transport::{Request, Transport};

fn soft_tc(k: &KernelDouble) -> u32 {
    allocate(k, alloc_req(Class::SOFT, 0x20000, Mode::TC, PMC_CPU_ANY, 0)).unwrap()
}

/// pmc_do_op_pmcallocate: "Requested mode must exist", "Requested CPU must
/// be valid", virtual PMCs only with PMC_CPU_ANY, system PMCs never.
#[test]
fn allocate_rejects_bad_mode_and_cpu_with_einval() {
    let k = kernel();
    let mut bad_mode = alloc_req(Class::SOFT, 0x20000, Mode::TC, PMC_CPU_ANY, 0);
    bad_mode.pm_mode = 4;
    assert_eq!(allocate(&k, bad_mode), Err(Errno::EINVAL));
    assert_eq!(
        allocate(&k, alloc_req(Class::SOFT, 0x20000, Mode::SC, 2, 0)),
        Err(Errno::EINVAL)
    );
    assert_eq!(
        allocate(&k, alloc_req(Class::SOFT, 0x20000, Mode::TC, 0, 0)),
        Err(Errno::EINVAL)
    );
    assert_eq!(
        allocate(
            &k,
            alloc_req(Class::SOFT, 0x20000, Mode::SC, PMC_CPU_ANY, 0)
        ),
        Err(Errno::EINVAL)
    );
}

/// pmc_do_op_pmcallocate: inactive CPU → ENXIO; jailed or unprivileged
/// system-wide → EPERM (priv_check PRIV_PMC_SYSTEM).
#[test]
fn allocate_system_mode_needs_active_cpu_and_privilege() {
    let mut m = Machine::intel_2cpu();
    m.inactive_cpus.insert(1);
    let k = KernelDouble::new(m, ME);
    assert_eq!(
        allocate(&k, alloc_req(Class::SOFT, 0x20000, Mode::SC, 1, 0)),
        Err(Errno::ENXIO)
    );
    let k = kernel().with_privilege(false);
    assert_eq!(
        allocate(&k, alloc_req(Class::SOFT, 0x20000, Mode::SC, 0, 0)),
        Err(Errno::EPERM)
    );
    // Process-mode PMCs need no privilege.
    assert!(
        allocate(
            &k,
            alloc_req(Class::SOFT, 0x20000, Mode::TC, PMC_CPU_ANY, 0)
        )
        .is_ok()
    );
    let k = kernel().with_jail(true);
    assert_eq!(
        allocate(&k, alloc_req(Class::SOFT, 0x20000, Mode::SC, 0, 0)),
        Err(Errno::EPERM)
    );
}

/// pmc_do_op_pmcallocate flag rules, all EINVAL: unknown flags;
/// USERCALLCHAIN without CALLCHAIN; USERCALLCHAIN in counting modes; process
/// logging options on system PMCs.
#[test]
fn allocate_flag_rules() {
    let k = kernel();
    let a = |mode, cpu, flags| allocate(&k, alloc_req(Class::SOFT, 0x20000, mode, cpu, flags));
    assert_eq!(a(Mode::TC, PMC_CPU_ANY, 0x400), Err(Errno::EINVAL));
    assert_eq!(a(Mode::TC, PMC_CPU_ANY, PMC_F_NEWVALUE), Err(Errno::EINVAL));
    assert_eq!(
        a(Mode::TS, PMC_CPU_ANY, PMC_F_USERCALLCHAIN),
        Err(Errno::EINVAL)
    );
    assert_eq!(
        a(Mode::TC, PMC_CPU_ANY, PMC_F_CALLCHAIN | PMC_F_USERCALLCHAIN),
        Err(Errno::EINVAL)
    );
    assert_eq!(a(Mode::SC, 0, PMC_F_LOG_PROCCSW), Err(Errno::EINVAL));
    assert_eq!(a(Mode::SS, 0, PMC_F_LOG_PROCEXIT), Err(Errno::EINVAL));
    assert!(a(Mode::TS, PMC_CPU_ANY, PMC_F_CALLCHAIN | PMC_F_USERCALLCHAIN).is_ok());
}

/// pmc_do_op_pmcallocate: no classdep for the class → EINVAL; requested
/// capabilities not a subset of the class's → EOPNOTSUPP; sampling modes
/// get PMC_CAP_INTERRUPT added by the kernel.
#[test]
fn allocate_class_and_capabilities() {
    let k = kernel();
    assert_eq!(
        allocate(&k, alloc_req(Class::K8, 0x2080, Mode::TC, PMC_CPU_ANY, 0)),
        Err(Errno::EINVAL)
    );
    let mut edge = alloc_req(Class::SOFT, 0x20000, Mode::TC, PMC_CPU_ANY, 0);
    edge.pm_caps |= PMC_CAP_EDGE;
    assert_eq!(allocate(&k, edge), Err(Errno::EOPNOTSUPP));
    // TSC's class only has READ: WRITE is not feasible.
    assert_eq!(
        allocate(&k, alloc_req(Class::TSC, 0x1000, Mode::SC, 0, 0)),
        Err(Errno::EOPNOTSUPP)
    );
    let mut ts = alloc_req(Class::SOFT, 0x20000, Mode::TS, PMC_CPU_ANY, 0);
    ts.pm_caps = PMC_CAP_READ; // no INTERRUPT asked
    let id = allocate(&k, ts).unwrap();
    assert_eq!(
        k.recorded(id).unwrap().0 & PMC_CAP_INTERRUPT,
        PMC_CAP_INTERRUPT
    );
}

/// pmc_do_op_pmcallocate: no row can take it (n == pmd_npmc) → EINVAL.
/// TSC rows take only TSC_TSC in SC mode (hwpmc_tsc.c tsc_allocate_pmc); a
/// process cannot own two process-mode PMCs at one row
/// (pmc_can_allocate_rowindex), so SOFT's 16 rows give 16 TC PMCs.
#[test]
fn allocate_without_a_usable_row_is_einval() {
    let k = kernel();
    let mut tsc_tc = alloc_req(Class::TSC, 0x1000, Mode::TC, PMC_CPU_ANY, 0);
    tsc_tc.pm_caps = PMC_CAP_READ;
    assert_eq!(allocate(&k, tsc_tc), Err(Errno::EINVAL));
    let mut tsc_sc = alloc_req(Class::TSC, 0x1000, Mode::SC, 0, 0);
    tsc_sc.pm_caps = PMC_CAP_READ;
    let id = allocate(&k, tsc_sc).unwrap();
    assert_eq!(pmc_id_to_class(id), Class::TSC as u32);
    // Unregistered soft event.
    assert_eq!(
        allocate(
            &k,
            alloc_req(Class::SOFT, 0x20010, Mode::TC, PMC_CPU_ANY, 0)
        ),
        Err(Errno::EINVAL)
    );
    for _ in 0..16 {
        soft_tc(&k);
    }
    assert_eq!(
        allocate(
            &k,
            alloc_req(Class::SOFT, 0x20000, Mode::TC, PMC_CPU_ANY, 0)
        ),
        Err(Errno::EINVAL)
    );
}

/// The returned id is PMC_ID_MAKE_ID(cpu, mode, class, row).
#[test]
fn allocate_returns_the_encoded_id() {
    let k = kernel();
    let id = allocate(&k, alloc_req(Class::SOFT, 0x20001, Mode::SC, 1, 0)).unwrap();
    // SOFT rows start after TSC(1) + IAP(4) + IAF(3) = 8.
    assert_eq!(id, pmc_id_make(1, Mode::SC as u32, Class::SOFT as u32, 8));
}

/// pmc_find_pmc: row index ≥ npmc → EINVAL; caller owns no PMCs → ESRCH;
/// no such PMC of the owner → EINVAL.
#[test]
fn unknown_pmc_ids() {
    let k = kernel();
    let bogus = pmc_id_make(0xFFF, 3, Class::SOFT as u32, 9);
    assert_eq!(start(&k, bogus), Err(Errno::ESRCH));
    assert_eq!(
        start(&k, pmc_id_make(0xFFF, 3, 0x0F, 200)),
        Err(Errno::EINVAL)
    );
    soft_tc(&k);
    assert_eq!(start(&k, bogus), Err(Errno::EINVAL));
    assert_eq!(rw(&k, bogus, PMC_F_OLDVALUE, 0), Err(Errno::EINVAL));
}

/// pmc_do_op_pmcattach: pid < 0 → EINVAL; system PMC → EINVAL; RUNNING →
/// EBUSY; no such or exiting process → ESRCH; p_candebug fails → EPERM;
/// pmc_attach_one_process: already attached → EEXIST.
#[test]
fn attach_rules() {
    let k = kernel();
    let id = soft_tc(&k);
    assert_eq!(attach(&k, id, -1), Err(Errno::EINVAL));
    assert_eq!(attach(&k, id, 4242), Err(Errno::ESRCH));
    k.add_process(
        300,
        Process {
            parent: 1,
            exiting: true,
            debuggable: true,
        },
    );
    assert_eq!(attach(&k, id, 300), Err(Errno::ESRCH));
    k.add_process(
        301,
        Process {
            parent: 1,
            exiting: false,
            debuggable: false,
        },
    );
    assert_eq!(attach(&k, id, 301), Err(Errno::EPERM));
    attach(&k, id, OTHER).unwrap();
    assert_eq!(attach(&k, id, OTHER), Err(Errno::EEXIST));
    attach(&k, id, 0).unwrap(); // pid 0 is the caller
    assert_eq!(attach(&k, id, ME), Err(Errno::EEXIST));
    start(&k, id).unwrap();
    assert_eq!(attach(&k, id, 301), Err(Errno::EBUSY));
    let sys = allocate(&k, alloc_req(Class::SOFT, 0x20000, Mode::SC, 0, 0)).unwrap();
    assert_eq!(attach(&k, sys, OTHER), Err(Errno::EINVAL));
}

/// pmc_do_op_pmcdetach: pid < 0 → EINVAL; no such process → ESRCH;
/// pmc_detach_one_process: no PMC targets the process → ESRCH; another PMC
/// does but not this one → EINVAL.
#[test]
fn detach_rules() {
    let k = kernel();
    let a = soft_tc(&k);
    let b = soft_tc(&k);
    assert_eq!(detach(&k, a, -5), Err(Errno::EINVAL));
    assert_eq!(detach(&k, a, 4242), Err(Errno::ESRCH));
    assert_eq!(detach(&k, a, OTHER), Err(Errno::ESRCH));
    attach(&k, b, OTHER).unwrap();
    assert_eq!(detach(&k, a, OTHER), Err(Errno::EINVAL));
    detach(&k, b, OTHER).unwrap();
    assert_eq!(detach(&k, b, OTHER), Err(Errno::ESRCH));
}

/// PMC_F_DESCENDANTS attaches the whole process tree
/// (pmc_attach_process) and detaching clears ATTACH_DONE when no target
/// is left (pmc_detach_process).
#[test]
fn descendants_follow_the_process_tree() {
    let k = kernel();
    k.add_process(201, process(OTHER));
    let id = allocate(
        &k,
        alloc_req(
            Class::SOFT,
            0x20000,
            Mode::TC,
            PMC_CPU_ANY,
            PMC_F_DESCENDANTS,
        ),
    )
    .unwrap();
    attach(&k, id, OTHER).unwrap();
    start(&k, id).unwrap();
    k.advance(201, 0, 5);
    k.advance(OTHER, 1, 2);
    // Not attached to its owner: PMCRW reads pm_savedvalue, which has 201's
    // 5 (switched out when the caller took CPU 0 for the call), not yet
    // OTHER's 2 (still on CPU 1).
    assert_eq!(rw(&k, id, PMC_F_OLDVALUE, 0), Ok(5));
    k.switch_out(OTHER);
    assert_eq!(rw(&k, id, PMC_F_OLDVALUE, 0), Ok(7));
    stop(&k, id).unwrap();
    detach(&k, id, OTHER).unwrap();
    assert_eq!(k.recorded(id).unwrap().1 & PMC_F_ATTACH_DONE, 0);
}

/// pmc_start: a PMC that needs a log file (LOG_PROCEXIT) and has none →
/// EDOOFUS; a process PMC whose targets were all detached after an attach
/// → ESRCH; starting a RUNNING PMC is a no-op; PMCSTART on a process PMC
/// never attached attaches it to the owner.
#[test]
fn start_rules() {
    let k = kernel();
    let logged = allocate(
        &k,
        alloc_req(
            Class::SOFT,
            0x20000,
            Mode::TC,
            PMC_CPU_ANY,
            PMC_F_LOG_PROCEXIT,
        ),
    )
    .unwrap();
    assert_eq!(start(&k, logged), Err(Errno::EDOOFUS));
    configurelog(&k, 0, k.pipe().0).unwrap();
    start(&k, logged).unwrap();
    assert_eq!(start(&k, logged), Ok(()));

    let id = soft_tc(&k);
    attach(&k, id, OTHER).unwrap();
    detach(&k, id, OTHER).unwrap();
    assert_eq!(start(&k, id), Err(Errno::ESRCH));

    let fresh = soft_tc(&k);
    start(&k, fresh).unwrap();
    assert_ne!(k.recorded(fresh).unwrap().1 & PMC_F_ATTACHED_TO_OWNER, 0);
}

/// System sampling PMCs always need a log file (pmc_do_op_pmcallocate sets
/// NEEDS_LOGFILE) → EDOOFUS at start without one.
#[test]
fn system_sampling_needs_a_log() {
    let k = kernel();
    let ss = allocate(&k, alloc_req(Class::SOFT, 0x20000, Mode::SS, 0, 0)).unwrap();
    assert_eq!(start(&k, ss), Err(Errno::EDOOFUS));
}

/// PMCSTOP: never started (ALLOCATED) → EINVAL; stopping a stopped PMC is
/// a no-op.
#[test]
fn stop_rules() {
    let k = kernel();
    let id = soft_tc(&k);
    assert_eq!(stop(&k, id), Err(Errno::EINVAL));
    start(&k, id).unwrap();
    stop(&k, id).unwrap();
    assert_eq!(stop(&k, id), Ok(()));
}

/// pmc_do_op_pmcrw: neither OLDVALUE nor NEWVALUE → EINVAL; writing a
/// RUNNING PMC → EBUSY; reading works in every live state.
#[test]
fn rw_rules() {
    let k = kernel();
    let id = soft_tc(&k);
    assert_eq!(rw(&k, id, 0, 0), Err(Errno::EINVAL));
    assert_eq!(rw(&k, id, PMC_F_OLDVALUE, 99), Ok(0));
    start(&k, id).unwrap();
    assert_eq!(rw(&k, id, PMC_F_NEWVALUE, 5), Err(Errno::EBUSY));
    k.advance(ME, 0, 11);
    // RUNNING on its owner: the hardware.
    assert_eq!(rw(&k, id, PMC_F_OLDVALUE, 0), Ok(11));
    stop(&k, id).unwrap();
    // STOPPED: pm_savedvalue, which gets the 11 at the owner's switch out.
    assert_eq!(rw(&k, id, PMC_F_OLDVALUE, 0), Ok(0));
    k.switch_out(ME);
    assert_eq!(rw(&k, id, PMC_F_OLDVALUE | PMC_F_NEWVALUE, 3), Ok(11));
    assert_eq!(rw(&k, id, PMC_F_OLDVALUE, 0), Ok(3));
}

/// PMCSETCOUNT: RUNNING → EBUSY; sampling counts below kern.hwpmc.mincount
/// are raised to it (visible through GETPMCINFO's pm_reloadcount).
#[test]
fn setcount_rules() {
    let k = kernel();
    let id = soft_tc(&k);
    start(&k, id).unwrap();
    let mut sc = pmc_op_pmcsetcount {
        pm_count: 5,
        pm_pmcid: id,
    };
    assert_eq!(k.call(Request::PmcSetCount(&mut sc)), Err(Errno::EBUSY));
    configurelog(&k, 0, k.pipe().0).unwrap();
    let ss = allocate(&k, alloc_req(Class::SOFT, 0x20000, Mode::SS, 1, 0)).unwrap();
    let mut sc = pmc_op_pmcsetcount {
        pm_count: 10,
        pm_pmcid: ss,
    };
    k.call(Request::PmcSetCount(&mut sc)).unwrap();
    let rows = pmcinfo(&k, 1);
    let row = &rows[pmc_id_to_rowindex(ss) as usize];
    assert_eq!(row.pm_reloadcount, 1000);
    assert_eq!(row.pm_ownerpid, ME);
    assert_eq!(row.pm_rowdisp, Disp::STANDALONE as u32);
    // SOFT row 0 (row 8) has THREAD disposition from the TC PMC, so the
    // system PMC took SOFT row 1 (pmc_can_allocate_row).
    assert_eq!(c_name(&row.pm_name), "SOFT-1");
    assert_eq!(rows[8].pm_rowdisp, Disp::THREAD as u32);
    assert_eq!(rows[10].pm_rowdisp, Disp::FREE as u32);
}

/// PMCGETMSR: only process-mode PMCs attached to their owner alone
/// (EINVAL otherwise); a class without pcd_get_msr → ENOSYS.
#[test]
fn getmsr_rules() {
    let k = kernel();
    let getmsr = |id| common::getmsr(&k, id);
    let soft = soft_tc(&k);
    attach(&k, soft, 0).unwrap();
    assert_eq!(getmsr(soft), Err(Errno::ENOSYS));
    let mut iap = alloc_req(Class::IAP, 0, Mode::TC, PMC_CPU_ANY, PMC_F_EV_PMU);
    iap.pm_caps = PMC_CAP_READ;
    let iap = allocate(&k, iap).unwrap();
    assert_eq!(getmsr(iap), Err(Errno::EINVAL)); // not attached yet
    attach(&k, iap, 0).unwrap();
    assert_eq!(getmsr(iap), Ok(0)); // IAP row 0
    attach(&k, iap, OTHER).unwrap();
    assert_eq!(getmsr(iap), Err(Errno::EINVAL));
    let sys = allocate(&k, alloc_req(Class::SOFT, 0x20000, Mode::SC, 0, 0)).unwrap();
    assert_eq!(getmsr(sys), Err(Errno::EINVAL));
}

/// PMCADMIN: priv_check PRIV_PMC_MANAGE → EPERM; bad CPU, state or row →
/// EINVAL; disabling a thread-mode row → EBUSY; a disabled row refuses a
/// system allocation (pcd_config with the row disabled → EPERM).
#[test]
fn admin_rules() {
    let admin = |k: &KernelDouble, cpu, ri, state: u32| {
        k.call(Request::PmcAdmin(&mut pmc_op_pmcadmin {
            pm_cpu: cpu,
            pm_flags: 0,
            pm_pmc: ri,
            pm_state: state,
        }))
    };
    let k = kernel().with_privilege(false);
    assert_eq!(admin(&k, 0, 0, State::DISABLED as u32), Err(Errno::EPERM));
    let k = kernel();
    assert_eq!(admin(&k, 2, 0, State::DISABLED as u32), Err(Errno::EINVAL));
    assert_eq!(admin(&k, 0, 0, State::RUNNING as u32), Err(Errno::EINVAL));
    assert_eq!(admin(&k, 0, 24, State::DISABLED as u32), Err(Errno::EINVAL));
    let tc = soft_tc(&k);
    assert_eq!(
        admin(&k, 0, pmc_id_to_rowindex(tc) as i32, State::DISABLED as u32),
        Err(Errno::EBUSY)
    );
    // Disable TSC row 0 on CPU 0, then a system TSC PMC there fails.
    admin(&k, 0, 0, State::DISABLED as u32).unwrap();
    let mut tsc = alloc_req(Class::TSC, 0x1000, Mode::SC, 0, 0);
    tsc.pm_caps = PMC_CAP_READ;
    assert_eq!(allocate(&k, tsc), Err(Errno::EPERM));
    admin(&k, 0, 0, State::FREE as u32).unwrap();
    assert!(allocate(&k, tsc).is_ok());
}

/// CONFIGURELOG: flags ≠ 0 → EINVAL; a second log → EBUSY
/// (pmclog_configure_log); fd < 0 without a log → EINVAL. FLUSHLOG: no
/// owner or no log → EINVAL (pmclog_flush). CLOSELOG: no owner → EINVAL,
/// else success (pmclog_close). WRITELOG needs the log (EINVAL).
#[test]
fn log_rules() {
    let k = kernel();
    assert_eq!(k.call(Request::FlushLog), Err(Errno::EINVAL));
    assert_eq!(k.call(Request::CloseLog), Err(Errno::EINVAL));
    assert_eq!(configurelog(&k, 1, 3), Err(Errno::EINVAL));
    assert_eq!(configurelog(&k, 0, -1), Err(Errno::EINVAL));
    // The failed CONFIGURELOG created the owner: FLUSHLOG now fails on the
    // missing log, WRITELOG too.
    assert_eq!(k.call(Request::FlushLog), Err(Errno::EINVAL));
    assert_eq!(
        k.call(Request::WriteLog(&mut pmc_op_writelog { pm_userdata: 1 })),
        Err(Errno::EINVAL)
    );
    configurelog(&k, 0, k.pipe().0).unwrap();
    assert_eq!(configurelog(&k, 0, k.pipe().0), Err(Errno::EBUSY));
    k.call(Request::WriteLog(&mut pmc_op_writelog {
        pm_userdata: 0xC0FFEE,
    }))
    .unwrap();
    k.call(Request::FlushLog).unwrap();
    assert_eq!(k.log_cookies(), vec![0xC0FFEE]);
    k.call(Request::CloseLog).unwrap();
    assert_eq!(k.call(Request::CloseLog), Ok(()));
    assert_eq!(k.call(Request::FlushLog), Err(Errno::EINVAL));
    assert_eq!(k.log_flushes(), 2);
}

/// Deconfiguring the log (fd -1) stops RUNNING PMCs that need it.
#[test]
fn deconfiguring_the_log_stops_logging_pmcs() {
    let k = kernel();
    configurelog(&k, 0, k.pipe().0).unwrap();
    let id = allocate(
        &k,
        alloc_req(
            Class::SOFT,
            0x20000,
            Mode::TC,
            PMC_CPU_ANY,
            PMC_F_LOG_PROCCSW,
        ),
    )
    .unwrap();
    start(&k, id).unwrap();
    configurelog(&k, 0, -1).unwrap();
    k.advance(ME, 0, 9);
    assert_eq!(rw(&k, id, PMC_F_OLDVALUE, 0), Ok(0));
    assert_eq!(stop(&k, id), Ok(())); // already STOPPED
}

/// GETMODULEVERSION: a client newer (major.minor) than the module →
/// EPROGMISMATCH; otherwise the module's version is copied out.
/// GETDYNEVENTINFO: only SOFT is dynamic (EINVAL). GETPMCINFO: CPU out of
/// range → EINVAL, inactive → ENXIO.
#[test]
fn information_ops() {
    let k = kernel();
    let mut v = PMC_VERSION + (1 << 16);
    assert_eq!(
        k.call(Request::GetModuleVersion(&mut v)),
        Err(Errno::EPROGMISMATCH)
    );
    let mut v = 0x0900_0000;
    k.call(Request::GetModuleVersion(&mut v)).unwrap();
    assert_eq!(v, PMC_VERSION);
    let mut gei = pmc_op_getdyneventinfo::new_boxed(Class::K8 as u32);
    assert_eq!(
        k.call(Request::GetDynEventInfo(&mut gei)),
        Err(Errno::EINVAL)
    );
    let mut gei = pmc_op_getdyneventinfo::new_boxed(Class::SOFT as u32);
    k.call(Request::GetDynEventInfo(&mut gei)).unwrap();
    assert_eq!(gei.pm_nevent, 6);
    assert_eq!(gei.pm_events[3].name(), "PAGE_FAULT.ALL");
    assert_eq!(gei.pm_events[3].pm_ev_code, 0x20003);
    let mut rows = vec![pmc_info::default(); 24];
    assert_eq!(
        k.call(Request::GetPmcInfo {
            cpu: 2,
            pmcs: &mut rows
        }),
        Err(Errno::EINVAL)
    );
    let mut m = Machine::intel_2cpu();
    m.inactive_cpus.insert(1);
    let k2 = KernelDouble::new(m, ME);
    assert_eq!(
        k2.call(Request::GetPmcInfo {
            cpu: 1,
            pmcs: &mut rows
        }),
        Err(Errno::ENXIO)
    );
    let mut ds = pmc_op_getdriverstats::default();
    k.call(Request::GetDriverStats(&mut ds)).unwrap();
    // 5 calls before this one, 3 of them failed; this one counts too.
    assert_eq!((ds.pm_syscalls, ds.pm_syscall_errors), (6, 3));
}

/// Releasing frees the row for a new allocation and drops the owner once
/// it has neither PMCs nor a log (pmc_maybe_remove_owner → later ops ESRCH).
#[test]
fn release_frees_rows_and_the_owner() {
    let k = kernel();
    let ids: Vec<u32> = (0..16).map(|_| soft_tc(&k)).collect();
    release(&k, ids[3]).unwrap();
    let again = soft_tc(&k);
    assert_eq!(pmc_id_to_rowindex(again), pmc_id_to_rowindex(ids[3]));
    for id in ids.iter().filter(|&&i| i != ids[3]).chain([&again]) {
        release(&k, *id).unwrap();
    }
    assert_eq!(k.live_pmcs(), 0);
    assert_eq!(start(&k, again), Err(Errno::ESRCH));
}

/// pmc_attach_one_process: a sampling PMC attached to a process other than
/// its owner needs a log file (NEEDS_LOGFILE) → PMCSTART is EDOOFUS until
/// one is configured; attached only to its owner it starts without one.
#[test]
fn sampling_on_another_process_needs_a_log() {
    let k = kernel();
    let own = allocate(
        &k,
        alloc_req(Class::SOFT, 0x20000, Mode::TS, PMC_CPU_ANY, 0),
    )
    .unwrap();
    attach(&k, own, 0).unwrap();
    start(&k, own).unwrap();
    let other = allocate(
        &k,
        alloc_req(Class::SOFT, 0x20001, Mode::TS, PMC_CPU_ANY, 0),
    )
    .unwrap();
    attach(&k, other, OTHER).unwrap();
    assert_eq!(start(&k, other), Err(Errno::EDOOFUS));
    configurelog(&k, 0, k.pipe().0).unwrap();
    start(&k, other).unwrap();
}
