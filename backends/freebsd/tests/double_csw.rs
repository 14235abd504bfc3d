//! The kernel double's context switches and PMCRW readings, each from
//! FreeBSD 14/15 sys/dev/hwpmc/hwpmc_mod.c: `pmc_process_csw_in` loads a
//! RUNNING process PMC with `pm_savedvalue` (TC) or the events left in its
//! period (TS, `pp_pmcval`); `pmc_process_csw_out` adds what the hardware
//! counted since to `pm_savedvalue` when the process is still a target
//! (TC) or keeps the events left (TS); `pmc_do_op_pmcrw` reads the
//! hardware only for a RUNNING PMC attached to its owner, `pm_savedvalue`
//! otherwise; `pmc_unlink_target_process` (detach) and
//! `pmc_release_pmc_descriptor` drop what the hardware had;
//! `pmc_process_exit` saves it. And the record of every request.

mod common;

use common::{ME, admin, attach, detach, kernel_with, pmcinfo, read, release, start, stop, write};
use pmc_freebsd::abi::*;
use pmc_freebsd::double::{KernelDouble, Process};
use pmc_freebsd::transport::{Request, Transport};

const A: i32 = 200;
const B: i32 = 300;

fn kernel() -> KernelDouble {
    kernel_with(&[(A, ME), (B, ME)])
}

/// A TC or TS PMC of the first registered soft event, with `count`.
fn allocate(k: &KernelDouble, mode: Mode, count: u64) -> u32 {
    common::allocate(
        k,
        pmc_op_pmcallocate {
            pm_class: Class::SOFT as u32,
            pm_ev: PMC_EV_SOFT_FIRST,
            pm_mode: mode as u32,
            pm_cpu: PMC_CPU_ANY,
            pm_count: count,
            ..Default::default()
        },
    )
    .unwrap()
}

/// A PMC on another process reads pm_savedvalue: a slice still running is
/// not in it until the process switches out.
#[test]
fn another_process_is_read_as_of_its_last_switch_out() {
    let k = kernel();
    let id = allocate(&k, Mode::TC, 0);
    attach(&k, id, A).unwrap();
    start(&k, id).unwrap();
    k.advance(A, 1, 40);
    assert_eq!(read(&k, id), 0, "A is still on CPU 1");
    assert_eq!(k.on_cpu(A), Some(1));
    k.switch_out(A);
    assert_eq!(read(&k, id), 40);
    // A second slice on CPU 0: the caller's system call takes CPU 0 back,
    // which switches A out.
    k.advance(A, 0, 2);
    assert_eq!(read(&k, id), 42);
    assert_eq!(k.on_cpu(A), None);
}

/// RUNNING and attached to its owner: the owner's hardware, loaded at its
/// switch in; the other targets' slices reach it at the next switch in.
#[test]
fn the_owner_reads_its_hardware_while_running() {
    let k = kernel();
    let id = allocate(&k, Mode::TC, 0);
    attach(&k, id, ME).unwrap();
    attach(&k, id, A).unwrap();
    start(&k, id).unwrap();
    k.advance(ME, 0, 3);
    k.advance(A, 1, 20);
    k.switch_out(A);
    assert_eq!(read(&k, id), 3, "the hardware of the owner's CPU");
    k.switch_out(ME);
    assert_eq!(read(&k, id), 23, "loaded with pm_savedvalue again");
    // STOPPED: pm_savedvalue; the owner's hardware still counts until its
    // switch out (pmc_stop does not take a process PMC off the CPU).
    k.advance(ME, 0, 4);
    stop(&k, id).unwrap();
    k.advance(ME, 0, 1);
    assert_eq!(read(&k, id), 23, "not saved yet");
    k.switch_out(ME);
    assert_eq!(read(&k, id), 28);
    k.advance(ME, 0, 100);
    k.switch_out(ME);
    assert_eq!(read(&k, id), 28, "a stopped PMC is not switched in");
}

/// A write while stopped sets pm_savedvalue, which the next switch in
/// loads; a write while the owner's hardware still has the PMC adds what
/// the switch out saves.
#[test]
fn a_write_is_the_value_the_next_switch_in_loads() {
    let k = kernel();
    let id = allocate(&k, Mode::TC, 0);
    start(&k, id).unwrap();
    k.advance(ME, 0, 6);
    stop(&k, id).unwrap();
    write(&k, id, 1000).unwrap();
    k.switch_out(ME);
    assert_eq!(read(&k, id), 1006, "the hardware's 6 came after the write");
    start(&k, id).unwrap();
    k.advance(ME, 0, 1);
    assert_eq!(read(&k, id), 1007);
}

/// Detach unlinks the process at once: its running slice is lost.
/// Exit saves it (pmc_process_exit), then unlinks.
#[test]
fn detach_drops_a_running_slice_and_exit_keeps_it() {
    let k = kernel();
    let id = allocate(&k, Mode::TC, 0);
    attach(&k, id, A).unwrap();
    attach(&k, id, B).unwrap();
    start(&k, id).unwrap();
    k.advance(A, 1, 5);
    k.switch_out(A);
    k.advance(A, 1, 50);
    stop(&k, id).unwrap();
    detach(&k, id, A).unwrap();
    k.switch_out(A);
    assert_eq!(read(&k, id), 5, "the 50 of the slice running at detach");
    start(&k, id).unwrap();
    k.advance(B, 1, 7);
    k.exit_process(B);
    assert_eq!(read(&k, id), 12, "exit saved B's running slice");
}

/// Release takes the PMC off the hardware; a PMC that reuses its row (and
/// id) starts clean.
#[test]
fn release_takes_the_pmc_off_every_cpu() {
    let k = kernel();
    let id = allocate(&k, Mode::TC, 0);
    start(&k, id).unwrap();
    k.advance(ME, 0, 9);
    release(&k, id).unwrap();
    let again = allocate(&k, Mode::TC, 0);
    assert_eq!(again, id, "the same row");
    // Its start attaches the owner and forces a switch out and in: the
    // released PMC's 9 must not be saved into it.
    start(&k, again).unwrap();
    assert_eq!(read(&k, again), 0);
    k.switch_out(ME);
    assert_eq!(read(&k, again), 0);
}

/// `switch_in` puts a process on a CPU (leaving the one it was on) with
/// its RUNNING PMCs loaded; a huge slice counts modulo the period.
#[test]
fn switch_in_moves_a_process_and_loads_its_pmcs() {
    let k = kernel();
    let id = allocate(&k, Mode::TC, 0);
    attach(&k, id, A).unwrap();
    start(&k, id).unwrap();
    k.switch_in(A, 1);
    assert_eq!(k.on_cpu(A), Some(1));
    k.advance(A, 1, 3);
    k.switch_in(A, 0);
    assert_eq!(k.on_cpu(A), Some(0), "moved: switched out of CPU 1");
    assert_eq!(read(&k, id), 3, "saved by the move");
    let ts = allocate(&k, Mode::TS, 1000);
    start(&k, ts).unwrap();
    k.advance(ME, 0, u64::MAX);
    // u64::MAX = …615 (mod 1000): 615 used, 385 left.
    assert_eq!(read(&k, ts), 385);
}

/// TS: the hardware counts down the events left in the period per target
/// (pp_pmcval, the reload count at attach); PMCRW reads it only while
/// RUNNING on the owner; pm_savedvalue is only what PMCRW writes.
#[test]
fn sampling_reads_the_events_left_or_pm_savedvalue() {
    let k = kernel();
    let id = allocate(&k, Mode::TS, 1000);
    start(&k, id).unwrap();
    k.advance(ME, 0, 300);
    assert_eq!(read(&k, id), 700);
    k.advance(ME, 0, 1000);
    assert_eq!(read(&k, id), 700, "one period later");
    k.switch_out(ME);
    assert_eq!(read(&k, id), 700, "kept in pp_pmcval and loaded again");
    k.advance(ME, 0, 700);
    assert_eq!(read(&k, id), 1000, "reloaded at the overflow");
    stop(&k, id).unwrap();
    assert_eq!(read(&k, id), 0, "STOPPED: pm_savedvalue");
}

/// Every request is recorded with its arguments and the kernel's answer.
#[test]
fn requests_are_recorded_with_arguments_and_replies() {
    let k = kernel();
    let id = allocate(&k, Mode::TC, 5);
    attach(&k, id, A).unwrap();
    let mut again = pmc_op_pmcattach {
        pm_pmc: id,
        pm_pid: A,
    };
    assert_eq!(k.call(Request::PmcAttach(&mut again)), Err(Errno::EEXIST));
    start(&k, id).unwrap();
    k.advance(A, 1, 4);
    k.switch_out(A);
    assert_eq!(read(&k, id), 4);
    let calls = k.take_calls();
    assert!(k.calls().is_empty(), "taken");
    let ops: Vec<_> = calls.iter().map(|c| c.op).collect();
    assert_eq!(
        ops,
        [
            Op::PMCALLOCATE,
            Op::PMCATTACH,
            Op::PMCATTACH,
            Op::PMCSTART,
            Op::PMCRW
        ]
    );
    let a = &calls[0];
    assert_eq!(
        (a.pmcid, a.mode, a.cpu, a.class, a.event, a.value, a.result),
        (
            id,
            Mode::TC as u32,
            PMC_CPU_ANY,
            Class::SOFT as u32,
            PMC_EV_SOFT_FIRST,
            5,
            Ok(())
        )
    );
    assert_eq!((calls[1].pmcid, calls[1].pid), (id, A));
    assert_eq!(calls[2].result, Err(Errno::EEXIST));
    assert_eq!(calls[3].pmcid, id);
    assert_eq!(
        (calls[4].flags, calls[4].value, calls[4].reply),
        (PMC_F_OLDVALUE, 0, 4)
    );
}

/// GETPMCINFO (pcd_describe) shows the PMC configured on each row of the
/// CPU: the caller moves there (pmc_select_cpu), so its RUNNING process
/// PMCs are switched in and show with it as owner; a stopped one or one
/// on another process shows only the row's THREAD disposition.
#[test]
fn pmcinfo_shows_the_callers_running_process_pmcs_on_the_cpu_asked() {
    let k = kernel();
    let mine = allocate(&k, Mode::TC, 0);
    let theirs = allocate(&k, Mode::TC, 0);
    attach(&k, theirs, A).unwrap();
    start(&k, mine).unwrap();
    start(&k, theirs).unwrap();
    let rows = |cpu: i32| pmcinfo(&k, cpu);
    for cpu in [0, 1] {
        let r = rows(cpu);
        let mine_row = &r[pmc_id_to_rowindex(mine) as usize];
        assert_eq!(
            (mine_row.pm_ownerpid, mine_row.pm_mode, mine_row.pm_rowdisp),
            (ME, Mode::TC as u32, Disp::THREAD as u32),
            "cpu {cpu}"
        );
        assert_ne!(mine_row.pm_flags & PMC_F_ATTACHED_TO_OWNER, 0);
        let theirs_row = &r[pmc_id_to_rowindex(theirs) as usize];
        assert_eq!(
            (theirs_row.pm_ownerpid, theirs_row.pm_rowdisp),
            (-1, Disp::THREAD as u32),
            "cpu {cpu}: A is not running"
        );
    }
    assert_eq!(k.on_cpu(ME), Some(0), "back on its CPU");
    stop(&k, mine).unwrap();
    k.switch_out(ME);
    assert_eq!(rows(1)[pmc_id_to_rowindex(mine) as usize].pm_ownerpid, -1);
}

/// The arguments of every other kind of request, and the replies kept.
#[test]
fn every_request_kind_keeps_its_arguments() {
    let k = kernel();
    let id = allocate(&k, Mode::TC, 0);
    attach(&k, id, A).unwrap();
    let mut sc = pmc_op_pmcsetcount {
        pm_count: 1234,
        pm_pmcid: id,
    };
    k.call(Request::PmcSetCount(&mut sc)).unwrap();
    start(&k, id).unwrap();
    stop(&k, id).unwrap();
    detach(&k, id, A).unwrap();
    write(&k, id, 77).unwrap();
    let mut both = pmc_op_pmcrw {
        pm_pmcid: id,
        pm_flags: PMC_F_OLDVALUE | PMC_F_NEWVALUE,
        pm_value: 5,
    };
    k.call(Request::PmcRw(&mut both)).unwrap();
    pmcinfo(&k, 1);
    admin(&k, 1, 0, State::DISABLED).unwrap();
    let mut gm = pmc_op_getmsr {
        pm_msr: 0,
        pm_pmcid: id,
    };
    assert_eq!(k.call(Request::PmcGetMsr(&mut gm)), Err(Errno::EINVAL));
    release(&k, id).unwrap();
    let mut refused = pmc_op_pmcallocate {
        pm_class: Class::SOFT as u32,
        pm_ev: PMC_EV_SOFT_FIRST,
        pm_mode: 99,
        pm_cpu: PMC_CPU_ANY,
        ..Default::default()
    };
    assert_eq!(
        k.call(Request::PmcAllocate(&mut refused)),
        Err(Errno::EINVAL)
    );
    k.call(Request::FlushLog).unwrap_err();
    let c = k.take_calls();
    let summary: Vec<_> = c
        .iter()
        .map(|c| {
            (
                c.op, c.pmcid, c.pid, c.cpu, c.flags, c.value, c.reply, c.result,
            )
        })
        .collect();
    let ok = Ok(());
    assert_eq!(
        summary[1..],
        [
            (Op::PMCATTACH, id, A, 0, 0, 0, 0, ok),
            (Op::PMCSETCOUNT, id, 0, 0, 0, 1234, 0, ok),
            (Op::PMCSTART, id, 0, 0, 0, 0, 0, ok),
            (Op::PMCSTOP, id, 0, 0, 0, 0, 0, ok),
            (Op::PMCDETACH, id, A, 0, 0, 0, 0, ok),
            (Op::PMCRW, id, 0, 0, PMC_F_NEWVALUE, 77, 0, ok),
            (
                Op::PMCRW,
                id,
                0,
                0,
                PMC_F_OLDVALUE | PMC_F_NEWVALUE,
                5,
                77,
                ok
            ),
            (Op::GETPMCINFO, 0, 0, 1, 0, 0, 0, ok),
            (Op::PMCADMIN, 0, 0, 1, 0, 0, 0, ok),
            (Op::PMCGETMSR, id, 0, 0, 0, 0, 0, Err(Errno::EINVAL)),
            (Op::PMCRELEASE, id, 0, 0, 0, 0, 0, ok),
            (
                Op::PMCALLOCATE,
                0,
                0,
                PMC_CPU_ANY,
                0,
                0,
                0,
                Err(Errno::EINVAL)
            ),
            (Op::FLUSHLOG, 0, 0, 0, 0, 0, 0, Err(Errno::EINVAL)),
        ]
    );
    assert_eq!(c[12].mode, 99, "a refused allocate keeps its arguments");
    // A GETMSR that succeeds replies with the MSR (IAF rows: 1 << 30).
    let mut iaf = pmc_op_pmcallocate {
        pm_class: Class::IAF as u32,
        pm_ev: 0,
        pm_mode: Mode::TC as u32,
        pm_cpu: PMC_CPU_ANY,
        ..Default::default()
    };
    k.call(Request::PmcAllocate(&mut iaf)).unwrap();
    attach(&k, iaf.pm_pmcid, ME).unwrap();
    let mut gm = pmc_op_getmsr {
        pm_msr: 0,
        pm_pmcid: iaf.pm_pmcid,
    };
    k.call(Request::PmcGetMsr(&mut gm)).unwrap();
    let last = k.take_calls().pop().expect("the GETMSR");
    assert_eq!((last.op, last.reply), (Op::PMCGETMSR, u64::from(gm.pm_msr)));
    assert_eq!(gm.pm_msr, 1 << 30);
}

/// A TS target's events left stay with that process (pp_pmcval): the
/// owner's reading after another target ran is its own period's; the
/// period reloads at the overflow.
#[test]
fn sampling_periods_are_per_target_process() {
    let k = kernel();
    let id = allocate(&k, Mode::TS, 1000);
    attach(&k, id, ME).unwrap();
    attach(&k, id, A).unwrap();
    start(&k, id).unwrap();
    k.advance(ME, 0, 100);
    k.switch_out(ME);
    k.advance(A, 1, 300);
    k.switch_out(A);
    assert_eq!(read(&k, id), 900, "the owner's 100, not A's 300");
    k.advance(ME, 0, 899);
    assert_eq!(read(&k, id), 1, "one event to the sample");
    k.advance(ME, 0, 1);
    assert_eq!(read(&k, id), 1000, "exactly one period: reloaded");
    k.advance(ME, 0, 2001);
    assert_eq!(read(&k, id), 999);
}

/// The double's own model beside the requests: its caller, its process
/// table (pfind, the tree pmc_attach_process walks, exit's reparenting),
/// its soft events and class rows, the record and the PMC count.
#[test]
fn the_model_behind_the_requests() {
    let k = kernel();
    assert_eq!(k.pid(), ME);
    assert!(k.process_exists(A) && k.process_exists(ME));
    assert!(!k.process_exists(9999));
    k.add_process(
        400,
        Process {
            parent: A,
            exiting: true,
            debuggable: true,
        },
    );
    assert!(!k.process_exists(400), "P_WEXIT: as if absent");
    assert_eq!(k.descendants(ME), vec![A, B, 400]);
    assert_eq!(k.descendants(A), vec![400]);
    assert_eq!(k.descendants(400), Vec::<i32>::new());
    k.exit_process(A);
    assert_eq!(k.descendants(1), vec![ME, B, 400], "400 reparented to init");
    assert_eq!(k.descendants(ME), vec![B]);
    assert_eq!(k.soft_event_code("CLOCK.STAT"), Some(PMC_EV_SOFT_FIRST + 1));
    assert_eq!(k.soft_event_code("NO.SUCH"), None);
    let iaf = &k.machine().classes[2];
    assert_eq!(
        (iaf.class, iaf.caps),
        (
            Class::IAF,
            PMC_CAP_READ | PMC_CAP_WRITE | PMC_CAP_INTERRUPT | PMC_CAP_USER | PMC_CAP_SYSTEM
        )
    );
    assert!(k.calls().is_empty(), "nothing asked yet");
    let id = allocate(&k, Mode::TC, 0);
    assert_eq!(k.live_pmcs(), 1);
    assert_eq!(k.calls().len(), 1);
    assert_eq!(k.calls()[0].pmcid, id);
    // The owner exits: its PMC is no longer attached to it.
    start(&k, id).unwrap();
    assert_ne!(k.recorded(id).unwrap().1 & PMC_F_ATTACHED_TO_OWNER, 0);
    let other = allocate(&k, Mode::TC, 0);
    attach(&k, other, B).unwrap();
    k.exit_process(B);
    assert_ne!(
        k.recorded(id).unwrap().1 & PMC_F_ATTACHED_TO_OWNER,
        0,
        "another process's exit leaves the owner's flag"
    );
    k.exit_process(ME);
    assert_eq!(k.recorded(id).unwrap().1 & PMC_F_ATTACHED_TO_OWNER, 0);
}

/// A time slice for everyone counts once on each RUNNING system PMC, not
/// on a stopped one, and once per process on each process PMC.
#[test]
fn advance_all_is_a_slice_of_every_process_and_cpu() {
    let k = kernel();
    let mut sc = pmc_op_pmcallocate {
        pm_class: Class::SOFT as u32,
        pm_ev: PMC_EV_SOFT_FIRST,
        pm_mode: Mode::SC as u32,
        pm_cpu: 1,
        ..Default::default()
    };
    k.call(Request::PmcAllocate(&mut sc)).unwrap();
    let idle = {
        let mut pa = sc;
        pa.pm_cpu = 0;
        k.call(Request::PmcAllocate(&mut pa)).unwrap();
        pa.pm_pmcid
    };
    start(&k, sc.pm_pmcid).unwrap();
    let tc = allocate(&k, Mode::TC, 0);
    attach(&k, tc, A).unwrap();
    attach(&k, tc, B).unwrap();
    start(&k, tc).unwrap();
    k.advance_all(10);
    assert_eq!(read(&k, sc.pm_pmcid), 10);
    assert_eq!(read(&k, idle), 0, "never started");
    assert_eq!(read(&k, tc), 20, "A's and B's slices, saved");
    assert_eq!(k.on_cpu(A), None);
}

/// pmc_cpu_is_active within `pmc_cpu_max()`, CPUs taken offline and back;
/// the log's flush count (pmclog_flush, pmclog_close); GETCPUINFO's CPU
/// type and GETPMCINFO's class of each row.
#[test]
fn cpus_log_flushes_and_row_classes() {
    let k = kernel();
    assert!(k.cpu_active(0) && k.cpu_active(1));
    assert!(!k.cpu_active(2), "beyond the 2 CPUs");
    k.set_cpu_active(1, false);
    assert!(!k.cpu_active(1));
    k.set_cpu_active(1, true);
    assert!(k.cpu_active(1));
    let (fd, _pipe) = k.pipe();
    let mut cl = pmc_op_configurelog {
        pm_flags: 0,
        pm_logfd: fd,
    };
    k.call(Request::ConfigureLog(&mut cl)).unwrap();
    k.call(Request::FlushLog).unwrap();
    assert_eq!(k.log_flushes(), 1);
    k.call(Request::FlushLog).unwrap();
    assert_eq!(k.log_flushes(), 2);
    cl.pm_logfd = -1;
    k.call(Request::ConfigureLog(&mut cl)).unwrap();
    assert_eq!(k.log_flushes(), 3, "deconfiguring flushes");
    assert_eq!(k.call(Request::FlushLog), Err(Errno::EINVAL), "no log now");
    let mut gci = pmc_op_getcpuinfo::default();
    k.call(Request::GetCpuInfo(&mut gci)).unwrap();
    assert_eq!(gci.pm_cputype, CpuType::INTEL_SKYLAKE as u32);
    let rows = pmcinfo(&k, 0);
    let classes: Vec<u32> = [0, 1, 4, 5, 7, 8, 23]
        .iter()
        .map(|&ri| rows[ri].pm_class)
        .collect();
    let (tsc, iap, iaf, soft) = (
        Class::TSC as u32,
        Class::IAP as u32,
        Class::IAF as u32,
        Class::SOFT as u32,
    );
    assert_eq!(classes, [tsc, iap, iap, iaf, iaf, soft, soft]);
}
