//! The simulator through the public API, as a program that uses `pmc`
//! tests itself with the `test-doubles` feature (enabled for this
//! crate's tests by its dev-dependency on itself): an owner on a
//! simulated machine counts exactly what the test drives, apart from the
//! process's own owner, and its errors carry the OS error as `source()`.

use std::error::Error as _;

use pmc::backend::{Backend, SimBackend};
use pmc::{Cpu, Flags, Mode, Owner, State};

#[test]
fn an_owner_on_the_simulator_counts_what_the_test_drives() {
    let sim = SimBackend::new(2);
    let owner = Owner::new(sim.clone());
    assert_eq!(owner.backend().name(), "sim");
    assert!(!owner.backend().same_as(&Backend::selected()));
    assert_eq!(owner.backend().online_cpus(), vec![0, 1]);

    let mut pmc = owner
        .allocate("task-clock", Mode::TC, Flags::empty(), Cpu::Any)
        .expect("the simulator counts task-clock");
    pmc.attach(0).expect("attach to the simulated caller");
    pmc.start().unwrap();
    sim.advance(1234);
    pmc.stop().unwrap();
    sim.advance(1000);
    assert_eq!(pmc.state(), State::Stopped);
    assert_eq!(pmc.read().unwrap(), 1234, "only the ticks while it ran");

    let id = pmc.id();
    assert!(owner.pmcinfo().iter().any(|row| row.id == id));
    // Nothing in this test binary allocates on the process's owner.
    assert!(!Owner::global().same_as(&owner));
    assert!(
        Owner::global().pmcinfo().is_empty(),
        "the process's owner does not hold it"
    );
    pmc.release().unwrap();
    assert!(owner.pmcinfo().is_empty());
}

#[test]
fn an_os_refusal_is_the_errors_source() {
    let sim = SimBackend::new(1);
    let owner = Owner::new(sim.clone());
    let mut pmc = owner
        .allocate("task-clock", Mode::TC, Flags::empty(), Cpu::Any)
        .unwrap();
    sim.refuse_opens(Some(libc::EMFILE));
    let e = pmc.attach(0).expect_err("the simulated kernel refuses");
    assert_eq!(e.errno(), libc::EMFILE, "{e}");
    let source = e.source().expect("the OS error is the source");
    let io = source
        .downcast_ref::<std::io::Error>()
        .expect("an io::Error");
    assert_eq!(io.raw_os_error(), Some(libc::EMFILE));
    assert!(e.to_string().contains("EMFILE"), "{e}");
}
