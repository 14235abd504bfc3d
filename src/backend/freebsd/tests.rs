//! The FreeBSD backend over pmc-freebsd's kernel double: what it asks
//! hwpmc for (checked in the double's state), and what only this backend
//! does. The `Pmc` rules themselves run in `backend::conformance`.

use std::sync::Arc;

use pmc_freebsd::abi;
use pmc_freebsd::double::{KernelDouble, Machine, Process};

use super::*;
use crate::{Cpu, Flags};

fn kernel() -> Arc<KernelDouble> {
    Arc::new(KernelDouble::new(Machine::intel_2cpu(), 1000))
}

fn backend(k: &Arc<KernelDouble>) -> Arc<dyn BackendImpl> {
    Arc::new(FreeBsdBackend::open(k.clone()).expect("the double opens"))
}

fn child(k: &KernelDouble, pid: i32) {
    k.add_process(
        pid,
        Process {
            parent: k.pid(),
            exiting: false,
            debuggable: true,
        },
    );
}

#[test]
fn each_target_is_one_hwpmc_pmc_attached_by_pid_and_released_with_it() {
    // hwpmc_mod.c: PMCALLOCATE then PMCATTACH per process; PMCRELEASE
    // (pmc_release_pmc_descriptor) detaches and frees it.
    let k = kernel();
    child(&k, 42);
    let b = backend(&k);
    k.take_calls();
    let mut p = crate::Owner::new(b.clone())
        .allocate_with_count("SOFT-PAGE_FAULT.ALL", Mode::TC, Flags::empty(), Cpu::Any, 0)
        .unwrap();
    assert_eq!(k.live_pmcs(), 0, "allocate's trial PMC is released at once");
    let trial = k.take_calls();
    assert_eq!(
        trial.iter().map(|c| c.op).collect::<Vec<_>>(),
        [abi::Op::PMCALLOCATE, abi::Op::PMCRELEASE]
    );
    assert_eq!(
        (trial[0].mode, trial[0].cpu, trial[0].flags, trial[0].value),
        (abi::Mode::TC as u32, abi::PMC_CPU_ANY, 0, 0)
    );
    assert_eq!(trial[1].pmcid, trial[0].pmcid, "the trial's own PMC");
    p.attach(0).unwrap();
    p.attach(42).unwrap();
    assert_eq!(k.live_pmcs(), 2, "one hwpmc PMC per target");
    let calls = k.take_calls();
    let ops: Vec<_> = calls.iter().map(|c| (c.op, c.pid)).collect();
    assert_eq!(
        ops,
        [
            (abi::Op::PMCALLOCATE, 0),
            (abi::Op::PMCATTACH, 1000),
            (abi::Op::PMCALLOCATE, 0),
            (abi::Op::PMCATTACH, 42),
        ],
        "pid 0 is resolved to the caller before it reaches hwpmc"
    );
    assert_eq!(calls[1].pmcid, calls[0].pmcid);
    assert_eq!(calls[3].pmcid, calls[2].pmcid);
    p.start().unwrap();
    k.advance(42, 0, 5);
    k.advance(1000, 1, 7);
    // hwpmc_mod.c pmc_do_op_pmcrw: the PMC on 42 (not its owner) reads
    // pm_savedvalue, which gets 42's 5 only at its switch out
    // (pmc_process_csw_out); the one on the caller reads its hardware.
    assert_eq!(p.read().unwrap(), 7);
    k.switch_out(42);
    assert_eq!(p.read().unwrap(), 12);
    // hwpmc keeps no enabled/running times and never multiplexes.
    let r = p.read_detailed().unwrap();
    assert_eq!(
        (
            r.value,
            r.raw,
            r.time_enabled,
            r.time_running,
            r.multiplexed
        ),
        (12, 12, 0, 0, false)
    );
    p.detach(42).unwrap();
    assert_eq!(k.live_pmcs(), 1, "detach releases the target's PMC");
    drop(p);
    assert_eq!(k.live_pmcs(), 0, "release frees the rest");
}

#[test]
fn descendants_is_passed_to_hwpmc_per_target() {
    // sys/sys/pmc.h PMC_F_DESCENDANTS: hwpmc follows the tree itself
    // (pmc_attach_process), so a grandchild's events count.
    let k = kernel();
    child(&k, 42);
    k.add_process(
        43,
        Process {
            parent: 42,
            exiting: false,
            debuggable: true,
        },
    );
    let b = backend(&k);
    let mut p = crate::Owner::new(b)
        .allocate_with_count("page-faults", Mode::TC, Flags::DESCENDANTS, Cpu::Any, 0)
        .unwrap();
    p.attach(42).unwrap();
    p.start().unwrap();
    k.advance(43, 0, 3);
    assert_eq!(p.read().unwrap(), 3);
    let id = (0..64)
        .map(|ri| {
            abi::pmc_id_make(
                abi::PMC_CPU_ANY,
                abi::Mode::TC as u32,
                abi::Class::SOFT as u32,
                ri,
            )
        })
        .find(|&id| k.recorded(id).is_some())
        .expect("the target's PMC");
    let (_, flags) = k.recorded(id).unwrap();
    assert_ne!(flags & abi::PMC_F_DESCENDANTS, 0, "flags {flags:#x}");
}

#[test]
fn hwpmc_refusals_at_allocate_keep_their_errno() {
    // hwpmc_tsc.c tsc_allocate_pmc: the TSC counts only in SC mode (EINVAL
    // otherwise); hwpmc_mod.c pmc_do_op_pmcallocate: system PMCs need
    // PRIV_PMC_SYSTEM (EPERM).
    let k = kernel();
    let b = backend(&k);
    let e = crate::Owner::new(b.clone())
        .allocate_with_count("tsc", Mode::TC, Flags::empty(), Cpu::Any, 0)
        .unwrap_err();
    assert_eq!(e.errno(), libc::EINVAL, "{e}");
    assert!(e.to_string().contains("PMCALLOCATE"), "{e}");
    let mut tsc = crate::Owner::new(b)
        .allocate_with_count("tsc", Mode::SC, Flags::empty(), Cpu::Id(1), 0)
        .unwrap();
    assert_eq!(tsc.class(), Class::Pmu("TSC".into()));
    tsc.start().unwrap();
    k.advance(1, 1, 9);
    assert_eq!(tsc.read().unwrap(), 9);

    let user = Arc::new(KernelDouble::new(Machine::intel_2cpu(), 1000).with_privilege(false));
    let b = backend(&user);
    let e = crate::Owner::new(b)
        .allocate_with_count("page-faults", Mode::SC, Flags::empty(), Cpu::Id(0), 0)
        .unwrap_err();
    assert_eq!(e.errno(), libc::EPERM, "{e}");
    assert!(e.to_string().contains("root"), "{e}");
}

#[test]
fn a_class_runs_out_of_rows_with_einval() {
    // hwpmc_mod.c pmc_can_allocate_rowindex: one virtual PMC of an owner
    // per row; the double's TSC class has one row and SOFT sixteen.
    let k = kernel();
    let b = backend(&k);
    let mut pmcs = Vec::new();
    for _ in 0..16 {
        let mut p = crate::Owner::new(b.clone())
            .allocate_with_count("page-faults", Mode::TC, Flags::empty(), Cpu::Any, 0)
            .unwrap();
        p.attach(0).unwrap();
        pmcs.push(p);
    }
    let e = crate::Owner::new(b)
        .allocate_with_count("page-faults", Mode::TC, Flags::empty(), Cpu::Any, 0)
        .unwrap_err();
    assert_eq!(e.errno(), libc::EINVAL, "{e}");
    assert!(e.to_string().contains("no free row"), "{e}");
}

#[test]
fn cpuinfo_and_event_names_are_hwpmcs() {
    // GETCPUINFO's classes (pmc_classinfo) and GETDYNEVENTINFO's soft events.
    let k = kernel();
    let b = backend(&k);
    let info = b.cpuinfo().unwrap();
    assert_eq!(info.ncpu, 2);
    assert_eq!(info.npmc, 1 + 4 + 3 + 16);
    let classes: Vec<Class> = info.classes.iter().map(|c| c.class.clone()).collect();
    assert_eq!(
        classes,
        [
            Class::Pmu("TSC".into()),
            Class::Pmu("IAP".into()),
            Class::Pmu("IAF".into()),
            Class::Software
        ]
    );
    let soft = b.event_names(&Class::Software).unwrap();
    assert!(soft.iter().any(|n| n == "PAGE_FAULT.ALL"), "{soft:?}");
    assert_eq!(b.name(), "freebsd-hwpmc");
    assert_eq!(b.caller_pid(), 1000);
}

#[test]
fn a_refused_attach_releases_its_pmc_and_says_why() {
    // hwpmc_mod.c pmc_attach_process: p_candebug failure → EPERM. The PMC
    // allocated for the target is released again: nothing leaks.
    let k = kernel();
    k.add_process(
        42,
        Process {
            parent: 1,
            exiting: false,
            debuggable: false,
        },
    );
    let b = backend(&k);
    let mut p = crate::Owner::new(b)
        .allocate_with_count("page-faults", Mode::TC, Flags::empty(), Cpu::Any, 0)
        .unwrap();
    let e = p.attach(42).unwrap_err();
    assert_eq!(e.errno(), libc::EPERM, "{e}");
    assert!(e.to_string().contains("may not be debugged"), "{e}");
    assert!(e.to_string().contains("process 42"), "{e}");
    assert_eq!(k.live_pmcs(), 0, "the target's PMC was released");
    assert!(p.targets().is_empty());
    p.start().unwrap();
    assert_eq!(p.targets(), vec![1000], "the refused attach did not count");
}

#[test]
fn a_refused_start_names_the_op_and_the_hwpmc_pmc() {
    // A CPU that went offline after the allocate: hwpmc's
    // pmc_cpu_is_active test fails with ENXIO (at the read that saves the
    // value before a start, PMCRW); the error says which request of which
    // hwpmc PMC it was.
    let k = kernel();
    let b = backend(&k);
    let mut p = crate::Owner::new(b)
        .allocate_with_count("page-faults", Mode::SC, Flags::empty(), Cpu::Id(1), 0)
        .unwrap();
    k.set_cpu_active(1, false);
    let e = p.start().unwrap_err();
    assert_eq!(e.errno(), libc::ENXIO, "{e}");
    let text = e.to_string();
    assert!(
        text.contains(" hwpmc PMC 0x") && text.contains("on cpu 1"),
        "{text}"
    );
    k.set_cpu_active(1, true);
    p.start().unwrap();
}
