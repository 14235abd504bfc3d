use super::*;
use crate::backend::BackendImpl;
use allocate::check_reload_count;

#[test]
fn an_allocation_without_a_count_gets_pmcstats_defaults() {
    // pmcstat.h DEFAULT_SAMPLE_COUNT (65536) is the sampling events'
    // count when -n is not given; a counting event's ev_count is -1 in
    // pmcstat.c, i.e. no pmc_set, so hwpmc's pm_initial stays 0 (the
    // descriptor is zeroed at PMC_OP_PMCALLOCATE).
    assert_eq!(default_count(Mode::TS), 65_536);
    assert_eq!(default_count(Mode::SS), 65_536);
    assert_eq!(default_count(Mode::TC), 0);
    assert_eq!(default_count(Mode::SC), 0);
}

fn sim(cpus: u32) -> Arc<dyn BackendImpl> {
    crate::backend::sim::SimBackend::new(cpus)
}

#[test]
fn a_cpu_beyond_the_machine_is_named_with_the_machines_cpu_range() {
    // Was "CPUs 0..2" on a 2-CPU machine, which reads as 0, 1 and 2.
    for (cpus, range) in [
        (2, "this machine has CPUs 0-1"),
        (1, "this machine has CPU 0"),
    ] {
        let e = crate::Owner::new(sim(cpus))
            .allocate_with_count("cpu-clock", Mode::SC, Flags::empty(), Cpu::Id(5), 0)
            .unwrap_err();
        assert_eq!(e.errno(), libc::EINVAL, "{e}");
        assert!(e.to_string().contains(range), "{e}");
    }
}

#[test]
fn a_reload_count_above_the_maximum_names_the_maximum() {
    // perf_event_open refused it with a bare EINVAL.
    let e = crate::Owner::new(sim(1))
        .allocate_with_count("cpu-clock", Mode::TS, Flags::empty(), Cpu::Any, u64::MAX)
        .unwrap_err();
    assert_eq!(e.errno(), libc::EINVAL, "{e}");
    let text = e.to_string();
    assert!(
        text.contains("too large") && text.contains(&MAX_RELOAD_COUNT.to_string()),
        "{text}"
    );
    assert!(check_reload_count("set", MAX_RELOAD_COUNT).is_ok());
}

#[test]
fn the_detach_rule_sees_only_the_pmcs_of_the_same_owner() {
    // hwpmc_mod.c pmc_detach_one_process: a process no PMC of this
    // owner monitors is ESRCH, one that another of its PMCs monitors
    // EINVAL. Two owners (here on two simulated machines) are apart:
    // pid 4242 on the one is not the pid 4242 another owner's PMC
    // monitors.
    let (one, other) = (
        crate::backend::sim::SimBackend::new(2),
        crate::backend::sim::SimBackend::new(2),
    );
    one.spawn(4242);
    other.spawn(4242);
    let (owner, other_owner) = (Owner::new(one), Owner::new(other));
    let tc = |o: &Owner| {
        o.allocate("task-clock", Mode::TC, Flags::empty(), Cpu::Any)
            .expect("allocate on the simulator")
    };
    let mut watcher = tc(&other_owner);
    watcher.attach(4242).expect("attach by the other owner");
    let mut p = tc(&owner);
    assert_eq!(p.detach(4242).unwrap_err().errno(), libc::ESRCH);
    let mut rival = tc(&owner);
    rival.attach(4242).expect("attach by this owner");
    assert_eq!(p.detach(4242).unwrap_err().errno(), libc::EINVAL);
}

/// A PMC and its owner's pmcinfo read one record: after a detach, an
/// exit no operation of the PMC has seen, and a `set`, `owner.pmcinfo()`
/// lists what `pmc.info()` says, at once.
#[test]
fn the_owners_pmcinfo_and_the_pmcs_info_agree_at_once() {
    let sim = crate::backend::sim::SimBackend::new(1);
    sim.spawn(4242);
    sim.spawn(4243);
    let owner = Owner::new(sim.clone());
    let mut pmc = owner.pmc("task-clock").build().unwrap();
    pmc.attach(4242).unwrap();
    pmc.attach(4243).unwrap();
    let row = |owner: &Owner| owner.pmcinfo().pop().expect("one row");
    assert_eq!(row(&owner), pmc.info());
    assert_eq!(pmc.info().targets, [4242, 4243]);
    pmc.detach(4242).unwrap();
    assert_eq!(row(&owner), pmc.info());
    assert_eq!(row(&owner).targets, [4243]);
    sim.exit(4243);
    assert_eq!(
        row(&owner).targets,
        Vec::<u32>::new(),
        "the exit, unseen by the PMC"
    );
    assert_eq!(row(&owner), pmc.info());
    pmc.set(12_345).unwrap();
    assert_eq!(row(&owner).reload_count, 12_345);
    assert_eq!(row(&owner), pmc.info());
}

/// The owner keeps what its backend prepared: allocating the same
/// request again (released or not) takes that preparation, each PMC
/// with its own id and counter; a request that differs in anything the
/// preparation depends on (mode, flags, period, spec) prepares anew.
#[test]
fn the_same_request_takes_the_preparation_its_owner_kept() {
    let owner = crate::Owner::new(sim(2));
    let first = owner.pmc("task-clock").build().unwrap();
    let again = owner.pmc("task-clock").build().unwrap();
    assert!(Arc::ptr_eq(&first.event, &again.event));
    assert_ne!(first.id(), again.id());
    let kept = Arc::clone(&first.event);
    drop((first, again));
    let mut later = owner.pmc("task-clock").build().unwrap();
    assert!(Arc::ptr_eq(&kept, &later.event), "kept past the release");
    later.start().unwrap();
    later.stop().unwrap();
    for other in [
        owner.pmc("task-clock,usr").build().unwrap(),
        owner
            .pmc("task-clock")
            .flags(Flags::CALLCHAIN)
            .build()
            .unwrap(),
        owner.pmc("task-clock").sampling(5_000).build().unwrap(),
        owner.pmc("task-clock").system(1).build().unwrap(),
        owner.pmc("cpu-clock").build().unwrap(),
    ] {
        assert!(!Arc::ptr_eq(&kept, &other.event), "{:?}", other.info());
    }
    // Another owner keeps its own.
    let elsewhere = crate::Owner::new(sim(2)).pmc("task-clock").build().unwrap();
    assert!(!Arc::ptr_eq(&kept, &elsewhere.event));
}

/// The cache is bounded: after more distinct requests than it keeps, the
/// first one is prepared anew; a failed preparation is never kept (the
/// error comes back each time).
#[test]
fn the_kept_preparations_are_bounded_and_errors_are_not_kept() {
    let owner = crate::Owner::new(sim(1));
    let first = owner.pmc("task-clock").build().unwrap().event.clone();
    for period in 0..32u64 {
        drop(
            owner
                .pmc("task-clock")
                .sampling(1_000 + period)
                .build()
                .unwrap(),
        );
    }
    let again = owner.pmc("task-clock").build().unwrap().event.clone();
    assert!(!Arc::ptr_eq(&first, &again), "evicted by 32 others");
    for _ in 0..2 {
        let e = owner.pmc("no-such-event").build().unwrap_err();
        assert!(matches!(e, crate::Error::UnknownEvent { .. }), "{e}");
    }
}
