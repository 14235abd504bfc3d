//! The kernel double's allocation, detach and process-table rules that
//! the other double tests leave open, each from FreeBSD's sources:
//! hwpmc_mod.c `pmc_can_allocate_row` (a row's disposition),
//! hwpmc_soft.c `soft_allocate_pmc` (registered soft events only),
//! hwpmc_mod.c `pmc_unlink_target_process` and `pmc_do_op_pmcrw` (the
//! owner's hardware is read only while the PMC is attached to it), and the
//! `kern.proc` sysctl the FreeBSD adapter walks for DESCENDANTS.

mod common;

use common::{ME, attach, detach, kernel_with, read, release, start};
use pmc_freebsd::abi::*;
use pmc_freebsd::double::KernelDouble;
use pmc_freebsd::procs::{ProcEntry, parse_kinfo_procs};
use pmc_freebsd::transport::{Request, Transport};

const A: i32 = 200;
const B: i32 = 300;

fn kernel() -> KernelDouble {
    kernel_with(&[(A, ME), (B, A)])
}

fn allocate(k: &KernelDouble, class: Class, ev: u32, mode: Mode, cpu: u32) -> Result<u32, Errno> {
    common::allocate(
        k,
        pmc_op_pmcallocate {
            pm_class: class as u32,
            pm_ev: ev,
            pm_mode: mode as u32,
            pm_cpu: cpu,
            pm_count: 0,
            ..Default::default()
        },
    )
}

/// `pmc_can_allocate_row`: a row in THREAD disposition (process PMCs on
/// it) refuses a system PMC, a STANDALONE one (system PMCs) a process
/// PMC; `pmc_allocate` then finds no row of the class: EINVAL. The
/// machine has four IAP rows.
#[test]
fn a_row_serves_process_or_system_pmcs_not_both() {
    let k = kernel();
    let iap_ev = 0x100; // any event: the double's IAP takes every code
    let process: Vec<u32> = (0..4)
        .map(|_| allocate(&k, Class::IAP, iap_ev, Mode::TC, PMC_CPU_ANY).expect("TC on a free row"))
        .collect();
    assert_eq!(
        allocate(&k, Class::IAP, iap_ev, Mode::SC, 0),
        Err(Errno::EINVAL),
        "every IAP row is THREAD: no row for a system PMC"
    );
    for id in process {
        release(&k, id).expect("request");
    }
    for _ in 0..4 {
        allocate(&k, Class::IAP, iap_ev, Mode::SC, 0).expect("SC on a free row");
    }
    assert_eq!(
        allocate(&k, Class::IAP, iap_ev, Mode::TC, PMC_CPU_ANY),
        Err(Errno::EINVAL),
        "every IAP row is STANDALONE: no row for a process PMC"
    );
    // STANDALONE rows take system PMCs of other CPUs.
    allocate(&k, Class::IAP, iap_ev, Mode::SC, 1).expect("SC on CPU 1 beside CPU 0's");
}

/// `soft_allocate_pmc`: a code in the SOFT range is EINVAL unless an event
/// is registered under it; registration numbers them from
/// `PMC_EV_SOFT_FIRST` up, so the last registered code allocates and the
/// one after it does not.
#[test]
fn only_registered_soft_events_allocate() {
    let k = kernel();
    let registered = k.machine().soft_events.len() as u32;
    assert!(registered > 0);
    let last = PMC_EV_SOFT_FIRST + registered - 1;
    allocate(&k, Class::SOFT, last, Mode::SC, 0).expect("the last registered soft event");
    assert_eq!(
        allocate(&k, Class::SOFT, last + 1, Mode::SC, 0),
        Err(Errno::EINVAL),
        "code {:#x}: nothing registered",
        last + 1
    );
}

/// `pmc_unlink_target_process` clears PMC_F_ATTACHED_TO_OWNER when the
/// owner is detached, and `pmc_do_op_pmcrw` reads the caller's hardware
/// only for a RUNNING PMC with that flag: after the owner's detach a read
/// is `pm_savedvalue`, which the owner's unsaved slice never reached (the
/// unlink drops it).
#[test]
fn after_the_owners_detach_a_read_is_the_saved_value() {
    let k = kernel();
    let id = allocate(&k, Class::IAP, 0x100, Mode::TC, PMC_CPU_ANY).expect("TC");
    for pid in [ME, A] {
        attach(&k, id, pid).expect("request");
    }
    start(&k, id).expect("request");
    k.advance(ME, 0, 7);
    assert_eq!(read(&k, id), 7, "attached to its owner: the hardware");
    detach(&k, id, ME).expect("request");
    assert_eq!(read(&k, id), 0, "no longer on its owner: pm_savedvalue");
}

/// `sysctl kern.proc.proc`: one `struct kinfo_proc` per process with its
/// pid and parent pid, exiting ones until reaped; an exited one is gone
/// and its children are reparented to init (`proc_reparent` in exit1).
#[test]
fn the_process_table_lists_every_process_with_its_parent() {
    let k = kernel();
    let table = |k: &KernelDouble| {
        let mut t = parse_kinfo_procs(&k.kern_proc_proc()).expect("whole kinfo_proc records");
        t.sort_by_key(|e| e.pid);
        t
    };
    assert_eq!(
        table(&k),
        vec![
            ProcEntry { pid: ME, ppid: 1 },
            ProcEntry { pid: A, ppid: ME },
            ProcEntry { pid: B, ppid: A },
        ]
    );
    k.exit_process(A);
    assert_eq!(
        table(&k),
        vec![
            ProcEntry { pid: ME, ppid: 1 },
            ProcEntry { pid: B, ppid: 1 }
        ]
    );
}

/// PMCALLOCATE keeps a counting system PMC's count as `pm_sc.pm_initial`,
/// and `pmc_start` writes it to the CPU's counter (`pcd_write_pmc` with
/// `pm_initial`; a sampling PMC gets its reload count instead): a started
/// SC reads its allocation count plus what it counted.
#[test]
fn a_system_counter_starts_from_its_allocation_count() {
    let k = kernel();
    let mut pa = pmc_op_pmcallocate {
        pm_class: Class::IAP as u32,
        pm_ev: 0x100,
        pm_mode: Mode::SC as u32,
        pm_cpu: 1,
        pm_count: 1000,
        ..Default::default()
    };
    k.call(Request::PmcAllocate(&mut pa)).expect("request");
    start(&k, pa.pm_pmcid).expect("request");
    assert_eq!(read(&k, pa.pm_pmcid), 1000);
    k.advance(A, 1, 5);
    assert_eq!(read(&k, pa.pm_pmcid), 1005);
}
