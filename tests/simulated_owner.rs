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

/// The CALLCHAIN records and the losses DROPNOTIFY reports of `log`.
fn logged_samples(log: &pmc::MemoryLog) -> (Vec<u16>, u64) {
    let mut cpus = Vec::new();
    let mut lost = 0;
    for event in log.events().expect("the log reads back") {
        match event.record {
            pmc::log::LogRecord::Callchain { cpu, .. } => cpus.push(cpu),
            pmc::log::LogRecord::Dropnotify { lost: n } => lost += u64::from(n.unwrap_or(1)),
            _ => {}
        }
    }
    (cpus, lost)
}

/// A system sampling PMC on each of 256 simulated CPUs: every sample
/// the machine takes reaches the log, each CPU's own (its rings hold
/// every sample of the run, so none may be lost whatever the drain's
/// pace; the counts are compared, not the times).
#[test]
fn every_sample_of_256_cpus_reaches_the_log() {
    const CPUS: u32 = 256;
    const ROUNDS: u64 = 200;
    let sim = SimBackend::new(CPUS);
    let owner = Owner::new(sim.clone());
    let log = pmc::MemoryLog::new();
    owner.configure_logfile(log.clone()).unwrap();
    let mut all = owner
        .pmc("cpu-clock")
        .sampling(1_000_000)
        .per_cpu()
        .build()
        .unwrap();
    assert_eq!(sim.sample(), 0, "nothing samples before the start");
    all.start().unwrap();
    for _ in 0..ROUNDS {
        sim.advance(1_000_000);
        assert_eq!(sim.sample(), CPUS as usize);
    }
    all.stop().unwrap();
    assert_eq!(sim.sample(), 0, "nothing samples after the stop");
    owner.close_logfile().unwrap();
    let stats = sim.sample_stats();
    assert_eq!((stats.samples, stats.lost), (u64::from(CPUS) * ROUNDS, 0));
    let (cpus, lost) = logged_samples(&log);
    assert_eq!(lost, 0);
    assert_eq!(cpus.len() as u64, u64::from(CPUS) * ROUNDS);
    let mut per_cpu = vec![0u64; CPUS as usize];
    for cpu in cpus {
        per_cpu[usize::from(cpu)] += 1;
    }
    assert!(per_cpu.iter().all(|&n| n == ROUNDS), "{per_cpu:?}");
    assert_eq!(owner.stats(), (u64::from(CPUS) * ROUNDS, 0));
}

/// Rings of one page (64 samples) filled faster than the drain may empty
/// them: each sample is logged or reported lost in a DROPNOTIFY, never
/// both and never neither, however the drain's sweeps fall.
#[test]
fn a_sample_a_full_ring_loses_is_reported_lost() {
    let sim = SimBackend::new(4);
    let owner = Owner::new(sim.clone());
    owner.set_buffer_pages(1).unwrap();
    let log = pmc::MemoryLog::new();
    owner.configure_logfile(log.clone()).unwrap();
    let mut all = owner
        .pmc("cpu-clock")
        .sampling(1_000)
        .per_cpu()
        .build()
        .unwrap();
    all.start().unwrap();
    for _ in 0..1_000 {
        sim.advance(1_000);
        sim.sample();
    }
    all.stop().unwrap();
    owner.close_logfile().unwrap();
    let stats = sim.sample_stats();
    assert_eq!(stats.samples + stats.lost, 4_000);
    assert!(stats.most_pending <= 64, "{stats:?}");
    let (cpus, lost) = logged_samples(&log);
    assert_eq!((cpus.len() as u64, lost), (stats.samples, stats.lost));
    assert_eq!(owner.stats(), (stats.samples, stats.lost));
}
