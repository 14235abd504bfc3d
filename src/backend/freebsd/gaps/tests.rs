//! Gaps the FreeBSD backend closed: `descendants` through the `kern.proc`
//! table (the double builds `struct kinfo_proc` records as the sysctl
//! returns them), and `SOFT-*` events Linux lacks reaching hwpmc.

use std::sync::Arc;

use pmc_freebsd::double::{KernelDouble, Machine, Process};

use super::FreeBsdBackend;
use crate::backend::BackendImpl;

fn spawn(k: &KernelDouble, pid: i32, parent: i32) {
    k.add_process(
        pid,
        Process {
            parent,
            exiting: false,
            debuggable: true,
        },
    );
}

#[test]
fn descendants_are_read_from_the_kern_proc_table() {
    let k = Arc::new(KernelDouble::new(Machine::intel_2cpu(), 1000));
    spawn(&k, 42, 1000);
    spawn(&k, 43, 42);
    spawn(&k, 50, 43);
    spawn(&k, 60, 1);
    let b = FreeBsdBackend::open(k.clone()).unwrap();
    assert_eq!(b.descendants(1000), vec![42, 43, 50]);
    assert_eq!(b.descendants(43), vec![50]);
    assert!(b.descendants(60).is_empty());
    assert!(b.descendants(u32::MAX).is_empty(), "no such pid");
    // An exit reparents the children to init (kern_exit.c proc_reparent).
    k.exit_process(42);
    assert!(b.descendants(1000).is_empty());
    assert_eq!(
        b.descendants(1),
        vec![43, 50, 60, 1000],
        "the caller's parent is 1"
    );
}

/// `SOFT-*` events Linux has no software event for reach hwpmc: any name
/// the kernel registered (GETDYNEVENTINFO, pmc_soft_ev_register) allocates;
/// one it did not is hwpmc's (libpmc's) refusal, not the parser's.
#[test]
fn soft_events_linux_lacks_allocate_through_hwpmc() {
    let k = Arc::new(KernelDouble::new(Machine::intel_2cpu(), 1000));
    let owner = crate::Owner::new(Arc::new(FreeBsdBackend::open(k.clone()).unwrap()));
    for name in [
        "SOFT-CLOCK.HARD",
        "SOFT-CLOCK.STAT",
        "SOFT-PAGE_FAULT.WRITE",
    ] {
        let mut p = owner
            .allocate(
                name,
                crate::Mode::TC,
                crate::Flags::empty(),
                crate::Cpu::Any,
            )
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        p.start().unwrap();
        k.advance(1000, 0, 3);
        assert_eq!(p.read().unwrap(), 3, "{name}");
    }
    // Not registered on this machine: libpmc's EINVAL naming the event.
    let e = owner
        .allocate(
            "SOFT-INTR.ALL",
            crate::Mode::TC,
            crate::Flags::empty(),
            crate::Cpu::Any,
        )
        .unwrap_err();
    assert_eq!(e.errno(), libc::EINVAL, "{e}");
    assert!(e.to_string().contains("INTR.ALL"), "{e}");
}
