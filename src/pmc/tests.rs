//! The hwpmc rules of `Pmc` on the simulator. Each expectation cites the
//! FreeBSD source it comes from (freebsd-src `sys/dev/hwpmc/hwpmc_mod.c`,
//! `sys/sys/pmc.h`, `lib/libpmc/libpmc.c`, pmc(3) man pages).

use super::*;
use crate::backend::sim::SimBackend;

fn sim_pmc(sim: &Arc<SimBackend>, mode: Mode, flags: Flags, cpu: Cpu) -> Result<Pmc> {
    Pmc::allocate_on(sim.clone(), "task-clock", mode, flags, cpu, 0)
}

fn tc(sim: &Arc<SimBackend>) -> Pmc {
    sim_pmc(sim, Mode::TC, Flags::empty(), Cpu::Any).expect("allocate")
}

fn with_count(sim: &Arc<SimBackend>, mode: Mode, cpu: Cpu, count: u64) -> Pmc {
    Pmc::allocate_on(sim.clone(), "task-clock", mode, Flags::empty(), cpu, count).expect("allocate")
}

#[test]
fn start_attaches_the_caller_and_counts_only_while_running() {
    let sim = SimBackend::new(2);
    let mut p = tc(&sim);
    sim.advance(5);
    assert_eq!(p.read().unwrap(), 0);
    p.start().unwrap();
    assert_eq!(p.targets(), vec![sim.caller()]);
    sim.advance(10);
    assert_eq!(p.read().unwrap(), 10);
    p.start().unwrap(); // idempotent
    p.stop().unwrap();
    p.stop().unwrap(); // idempotent
    sim.advance(100);
    assert_eq!(p.read().unwrap(), 10, "a stopped PMC reads its saved value");
    p.start().unwrap();
    sim.advance(1);
    assert_eq!(p.read().unwrap(), 11);
}

#[test]
fn stop_before_start_is_einval() {
    // hwpmc_mod.c, PMC_OP_PMCSTOP: a state other than RUNNING/STOPPED is EINVAL.
    let sim = SimBackend::new(1);
    let mut p = tc(&sim);
    assert_eq!(p.stop().unwrap_err().errno(), libc::EINVAL);
}

#[test]
fn attach_rules_follow_pmc_attach() {
    // hwpmc_mod.c pmc_do_op_pmcattach: system mode EINVAL, RUNNING EBUSY,
    // pfind failure ESRCH; pmc_attach_one_process: already there EEXIST.
    let sim = SimBackend::new(2);
    sim.spawn(42);
    let mut p = tc(&sim);
    p.attach(42).unwrap();
    assert_eq!(p.attach(42).unwrap_err().errno(), libc::EEXIST);
    assert_eq!(p.attach(77).unwrap_err().errno(), libc::ESRCH);
    p.start().unwrap();
    assert_eq!(
        p.targets(),
        vec![42],
        "start must not attach the caller once attached"
    );
    assert_eq!(p.attach(0).unwrap_err().errno(), libc::EBUSY);
    let mut s = sim_pmc(&sim, Mode::SC, Flags::empty(), Cpu::Id(1)).unwrap();
    assert_eq!(s.attach(42).unwrap_err().errno(), libc::EINVAL);
}

#[test]
fn several_targets_accumulate_and_detach_keeps_the_value() {
    let sim = SimBackend::new(2);
    sim.spawn(42);
    let mut p = tc(&sim);
    p.attach(0).unwrap();
    p.attach(42).unwrap();
    p.start().unwrap();
    sim.advance(10);
    assert_eq!(p.read().unwrap(), 20);
    p.detach(42).unwrap();
    sim.advance(10);
    assert_eq!(p.read().unwrap(), 30, "the detached target's 10 stay");
}

// ---- §3: pmc_allocate exactly as the kernel decides ----

#[test]
fn allocate_accepts_every_flag_combination_hwpmc_accepts() {
    // hwpmc_mod.c pmc_do_op_pmcallocate accepts the flag mask
    // DESCENDANTS|LOG_PROCCSW|LOG_PROCEXIT|CALLCHAIN|USERCALLCHAIN|EV_PMU and
    // rejects only: USERCALLCHAIN without CALLCHAIN, USERCALLCHAIN outside
    // TS/SS, LOG_PROC* on system modes. So CALLCHAIN on a counting mode and
    // DESCENDANTS on a system mode pass, and so does EV_PMU everywhere.
    let sim = SimBackend::new(2);
    for (m, f, c) in [
        (Mode::TC, Flags::CALLCHAIN, Cpu::Any),
        (Mode::SC, Flags::CALLCHAIN, Cpu::Id(0)),
        (Mode::SC, Flags::DESCENDANTS, Cpu::Id(1)),
        (Mode::SS, Flags::DESCENDANTS | Flags::CALLCHAIN, Cpu::Id(0)),
        (
            Mode::TC,
            Flags::DESCENDANTS | Flags::LOG_PROCEXIT | Flags::LOG_PROCCSW,
            Cpu::Any,
        ),
        (
            Mode::TS,
            Flags::CALLCHAIN | Flags::USERCALLCHAIN | Flags::DESCENDANTS,
            Cpu::Any,
        ),
        (
            Mode::SS,
            Flags::CALLCHAIN | Flags::USERCALLCHAIN,
            Cpu::Id(1),
        ),
        (Mode::TC, Flags::EV_PMU, Cpu::Any),
        (Mode::TS, Flags::EV_PMU, Cpu::Any),
        (Mode::SC, Flags::EV_PMU, Cpu::Id(0)),
        (Mode::SS, Flags::EV_PMU, Cpu::Id(0)),
    ] {
        sim_pmc(&sim, m, f, c).unwrap_or_else(|e| panic!("{m} {f:?} {c}: {e}"));
    }
}

#[test]
fn allocate_rejects_what_hwpmc_rejects_with_einval() {
    // hwpmc_mod.c pmc_do_op_pmcallocate, each `return (EINVAL)` in turn.
    let sim = SimBackend::new(2);
    let einval = |mode, flags, cpu| {
        let e = sim_pmc(&sim, mode, flags, cpu).unwrap_err();
        assert_eq!(e.errno(), libc::EINVAL, "{mode} {flags:?} {cpu}: {e}");
    };
    // "Virtual PMCs should only ask for a default CPU. System mode PMCs
    // need to specify a non-default CPU."
    for m in [Mode::TC, Mode::TS] {
        einval(m, Flags::empty(), Cpu::Id(0));
    }
    for m in [Mode::SC, Mode::SS] {
        einval(m, Flags::empty(), Cpu::Any);
        // "Process logging options are not allowed for system PMCs."
        einval(m, Flags::LOG_PROCCSW, Cpu::Id(0));
        einval(m, Flags::LOG_PROCEXIT, Cpu::Id(0));
    }
    // "PMC_F_USERCALLCHAIN is only valid with PMC_F_CALLCHAIN."
    einval(Mode::TS, Flags::USERCALLCHAIN, Cpu::Any);
    // "PMC_F_USERCALLCHAIN is only valid for sampling mode."
    einval(Mode::TC, Flags::CALLCHAIN | Flags::USERCALLCHAIN, Cpu::Any);
    einval(
        Mode::SC,
        Flags::CALLCHAIN | Flags::USERCALLCHAIN,
        Cpu::Id(0),
    );
    // Bits outside the accepted mask: sys/sys/pmc.h PMC_F_UNUSED1 (0x1),
    // PMC_F_NEWVALUE (0x10, a PMCRW flag), 0x400 (none).
    for bits in [0x1, 0x10, 0x400] {
        einval(Mode::TC, Flags::from_bits_retain(bits), Cpu::Any);
    }
}

#[test]
fn a_cpu_beyond_the_machine_is_einval_and_an_offline_one_enxio() {
    // hwpmc_mod.c pmc_do_op_pmcallocate: `cpu >= pmc_cpu_max()` → EINVAL,
    // checked first; a system PMC on a CPU that is not active → ENXIO,
    // checked before the flags.
    let sim = SimBackend::new(4);
    sim.set_online(2, false);
    let errno = |mode, flags, cpu| sim_pmc(&sim, mode, flags, cpu).unwrap_err().errno();
    assert_eq!(errno(Mode::SC, Flags::empty(), Cpu::Id(2)), libc::ENXIO);
    assert_eq!(errno(Mode::SS, Flags::empty(), Cpu::Id(2)), libc::ENXIO);
    assert_eq!(
        errno(Mode::SC, Flags::LOG_PROCCSW, Cpu::Id(2)),
        libc::ENXIO,
        "the offline check precedes the flag checks"
    );
    assert_eq!(errno(Mode::SC, Flags::empty(), Cpu::Id(4)), libc::EINVAL);
    assert_eq!(errno(Mode::SS, Flags::empty(), Cpu::Id(1000)), libc::EINVAL);
    assert_eq!(errno(Mode::TC, Flags::empty(), Cpu::Id(99)), libc::EINVAL);
    sim.set_online(2, true);
    sim_pmc(&sim, Mode::SC, Flags::empty(), Cpu::Id(2)).expect("back online");
}

#[test]
fn an_unknown_event_name_is_einval() {
    // pmc_allocate(3): "[EINVAL] The event specification was not recognized."
    let sim = SimBackend::new(1);
    let e = Pmc::allocate_on(
        sim.clone(),
        "no-such-event",
        Mode::TC,
        Flags::empty(),
        Cpu::Any,
        0,
    )
    .unwrap_err();
    assert_eq!(e.errno(), libc::EINVAL, "{e}");
    assert!(e.to_string().contains("no-such-event"), "{e}");
}

// ---- §4: errors at allocate ----

#[test]
fn an_event_that_cannot_be_opened_fails_at_allocate_not_later() {
    // hwpmc_mod.c pmc_do_op_pmcallocate finds (pcd_allocate_pmc) or
    // configures (pcd_config_pmc) the hardware at allocate and fails there;
    // process PMCs still open their counters only at attach.
    let sim = SimBackend::new(2);
    sim.refuse_opens(Some(libc::ENOENT));
    for (mode, cpu) in [
        (Mode::TC, Cpu::Any),
        (Mode::TS, Cpu::Any),
        (Mode::SC, Cpu::Id(1)),
    ] {
        let e = sim_pmc(&sim, mode, Flags::empty(), cpu).unwrap_err();
        assert_eq!(e.errno(), libc::ENOENT, "{mode}: {e}");
        assert!(e.to_string().contains("refuse_opens"), "{e}");
    }
    sim.refuse_opens(Some(libc::EACCES));
    assert_eq!(tc_err(&sim), libc::EACCES);
    sim.refuse_opens(None);
    let p = tc(&sim);
    assert!(p.targets().is_empty(), "the trial leaves no target behind");
    assert_eq!(p.handles(), 0, "nor a handle");
}

fn tc_err(sim: &Arc<SimBackend>) -> i32 {
    sim_pmc(sim, Mode::TC, Flags::empty(), Cpu::Any)
        .unwrap_err()
        .errno()
}

// ---- §5: lifecycle rules of hwpmc_mod.c ----

#[test]
fn start_after_every_target_was_detached_is_esrch() {
    // hwpmc_mod.c pmc_start: with no targets, `PMC_F_ATTACH_DONE ? ESRCH :
    // pmc_attach_process(owner)`.
    let sim = SimBackend::new(1);
    sim.spawn(42);
    let mut p = tc(&sim);
    p.attach(42).unwrap();
    p.detach(42).unwrap();
    let e = p.start().unwrap_err();
    assert_eq!(e.errno(), libc::ESRCH, "{e}");
    assert!(p.targets().is_empty(), "start must not attach the owner");
    // Detaching the owner after start counts too.
    let mut q = tc(&sim);
    q.start().unwrap();
    q.stop().unwrap();
    q.detach(0).unwrap();
    assert_eq!(q.start().unwrap_err().errno(), libc::ESRCH);
    // A PMC never attached attaches its owner.
    let mut r = tc(&sim);
    r.start().unwrap();
    assert_eq!(r.targets(), vec![sim.caller()]);
    // pmc_detach_process clears PMC_F_ATTACH_DONE when the last tree of a
    // DESCENDANTS PMC goes: its next start attaches the owner again.
    let mut d = sim_pmc(&sim, Mode::TC, Flags::DESCENDANTS, Cpu::Any).unwrap();
    d.attach(42).unwrap();
    d.detach(42).unwrap();
    d.start().unwrap();
    assert_eq!(d.targets(), vec![sim.caller()]);
}

#[test]
fn exited_targets_leave_the_list_keep_their_counts_and_make_start_esrch() {
    // hwpmc_mod.c pmc_process_exit unlinks an exiting target from its PMCs
    // (pmc_unlink_target_process); the counts it had are in pm_savedvalue.
    let sim = SimBackend::new(1);
    sim.spawn(42);
    sim.spawn(43);
    let mut p = tc(&sim);
    p.attach(42).unwrap();
    p.attach(43).unwrap();
    p.start().unwrap();
    sim.advance(10);
    sim.exit(42);
    assert_eq!(p.targets(), vec![43], "42 exited");
    assert_eq!(p.info().targets, vec![43]);
    p.stop().unwrap();
    assert_eq!(p.read().unwrap(), 20, "42's 10 stay in the value");
    sim.exit(43);
    let e = p.start().unwrap_err();
    assert_eq!(e.errno(), libc::ESRCH, "every target exited: {e}");
    assert!(p.targets().is_empty());
}

#[test]
fn attaching_overlapping_descendant_trees_is_eexist_and_changes_nothing() {
    // hwpmc_mod.c pmc_attach_process walks the tree with
    // pmc_attach_one_process, which is EEXIST for a process already at the
    // PMC's row; the walk is then undone.
    let sim = SimBackend::new(1);
    sim.spawn(42);
    sim.spawn_child(42, 43);
    sim.spawn_child(43, 44);
    let mut p = sim_pmc(&sim, Mode::TC, Flags::DESCENDANTS, Cpu::Any).unwrap();
    p.attach(43).unwrap();
    // A tree whose root is above the existing target.
    let e = p.attach(42).unwrap_err();
    assert_eq!(e.errno(), libc::EEXIST, "{e}");
    assert_eq!(
        p.targets(),
        vec![43],
        "the failed attach left nothing behind"
    );
    // A process inside an existing tree.
    assert_eq!(p.attach(44).unwrap_err().errno(), libc::EEXIST);
    assert_eq!(p.targets(), vec![43]);
    // Without DESCENDANTS there are no trees: parent and child both attach.
    let mut q = tc(&sim);
    q.attach(42).unwrap();
    q.attach(43).unwrap();
    assert_eq!(q.targets(), vec![42, 43]);
}

#[test]
fn detach_is_esrch_for_unmonitored_and_einval_for_another_pmcs_process() {
    // hwpmc_mod.c pmc_do_op_pmcdetach: pfind failure → ESRCH;
    // pmc_detach_one_process: no process descriptor (no PMC monitors it)
    // → ESRCH, monitored but not by this PMC → EINVAL.
    let sim = SimBackend::new(1);
    sim.spawn(42);
    sim.spawn(43);
    let mut p = tc(&sim);
    let mut other = tc(&sim);
    other.attach(43).unwrap();
    p.attach(0).unwrap();
    let e = p.detach(42).unwrap_err();
    assert_eq!(e.errno(), libc::ESRCH, "live but unmonitored: {e}");
    let e = p.detach(43).unwrap_err();
    assert_eq!(e.errno(), libc::EINVAL, "monitored by another PMC: {e}");
    assert_eq!(
        p.detach(77).unwrap_err().errno(),
        libc::ESRCH,
        "no such pid"
    );
    let mut s = sim_pmc(&sim, Mode::SC, Flags::empty(), Cpu::Id(0)).unwrap();
    assert_eq!(s.detach(42).unwrap_err().errno(), libc::ESRCH);
    p.detach(0).unwrap();
    other.detach(43).unwrap();
    assert_eq!(
        p.detach(43).unwrap_err().errno(),
        libc::ESRCH,
        "now nobody's"
    );
}

// ---- §8: get_msr ----

#[test]
fn get_msr_needs_a_process_pmc_attached_only_to_its_owner() {
    // hwpmc_mod.c PMC_OP_PMCGETMSR: not a virtual mode, or DESCENDANTS →
    // EINVAL; no target, more than one, or one that is not the owner →
    // EINVAL; a class without pcd_get_msr → ENOSYS.
    let sim = SimBackend::new(1);
    sim.spawn(42);
    let mut p = tc(&sim);
    assert_eq!(p.get_msr().unwrap_err().errno(), libc::EINVAL, "no target");
    p.attach(42).unwrap();
    assert_eq!(
        p.get_msr().unwrap_err().errno(),
        libc::EINVAL,
        "not the owner"
    );
    p.attach(0).unwrap();
    assert_eq!(
        p.get_msr().unwrap_err().errno(),
        libc::EINVAL,
        "two targets"
    );
    let mut d = sim_pmc(&sim, Mode::TC, Flags::DESCENDANTS, Cpu::Any).unwrap();
    d.attach(0).unwrap();
    assert_eq!(
        d.get_msr().unwrap_err().errno(),
        libc::EINVAL,
        "DESCENDANTS"
    );
    let mut s = sim_pmc(&sim, Mode::SC, Flags::empty(), Cpu::Id(0)).unwrap();
    assert_eq!(
        s.get_msr().unwrap_err().errno(),
        libc::EINVAL,
        "system mode"
    );
    let mut q = tc(&sim);
    q.attach(0).unwrap();
    let e = q.get_msr().unwrap_err();
    assert_eq!(e.errno(), libc::ENOSYS, "no user-space read here: {e}");
    // A refused get_msr does not forbid attaches.
    q.attach(42).unwrap();
}

#[test]
fn get_msr_returns_the_index_and_forbids_further_attaches() {
    // hwpmc_mod.c PMC_OP_PMCGETMSR copies out pcd_get_msr's number and
    // marks the PMC; pmc_attach_process then returns EPERM.
    let sim = SimBackend::new(1);
    sim.spawn(42);
    sim.set_rdpmc_index(Some(3));
    let mut p = tc(&sim);
    p.start().unwrap();
    assert_eq!(p.get_msr().unwrap(), 3);
    p.stop().unwrap();
    let e = p.attach(42).unwrap_err();
    assert_eq!(e.errno(), libc::EPERM, "{e}");
    assert_eq!(p.targets(), vec![sim.caller()]);
}

#[test]
fn width_and_capabilities_are_the_class_rows_of_cpuinfo() {
    // libpmc.c pmc_width / pmc_capabilities look the PMC's class up in the
    // cpuinfo classes and return its pm_width / pm_caps.
    let sim = SimBackend::new(1);
    let info = sim.cpuinfo().unwrap();
    for (event, class) in [
        ("instructions", Class::Hardware),
        ("L1-dcache-load-misses", Class::Cache),
        ("task-clock", Class::Software),
    ] {
        let p =
            Pmc::allocate_on(sim.clone(), event, Mode::TC, Flags::empty(), Cpu::Any, 0).unwrap();
        let row = info.classes.iter().find(|c| c.class == class).unwrap();
        assert_eq!(p.class(), class);
        assert_eq!(p.width(), row.width, "{event}");
        assert_eq!(p.capabilities(), row.caps, "{event}");
    }
    let hw =
        Pmc::allocate_on(sim.clone(), "cycles", Mode::TC, Flags::empty(), Cpu::Any, 0).unwrap();
    assert_eq!(hw.width(), 48, "the simulated PMU is 48 bits wide");
}

// ---- §6: values by mode (hwpmc_mod.c PMC_OP_PMCRW, PMCSETCOUNT, pmc_start,
// pmc_stop, pmc_process_csw_in/out) ----

#[test]
fn write_rw_set_need_a_stopped_pmc() {
    // PMC_OP_PMCRW: a new value for a RUNNING PMC is EBUSY; PMCSETCOUNT
    // on a RUNNING PMC is EBUSY.
    let sim = SimBackend::new(1);
    let mut p = tc(&sim);
    p.start().unwrap();
    assert_eq!(p.write(1).unwrap_err().errno(), libc::EBUSY);
    assert_eq!(p.rw(1).unwrap_err().errno(), libc::EBUSY);
    assert_eq!(p.set(1).unwrap_err().errno(), libc::EBUSY);
}

#[test]
fn tc_write_sets_the_value_but_set_and_the_allocate_count_do_not() {
    // TC's value is pm_gv.pm_savedvalue: PMCRW's new value sets it and
    // pmc_process_csw_out adds each slice's delta to it. PMCSETCOUNT and
    // pmc_allocate's count set pm_sc.pm_initial, which only pmc_start of a
    // *system* PMC uses, so a TC read ignores them.
    let sim = SimBackend::new(1);
    let mut p = with_count(&sim, Mode::TC, Cpu::Any, 99);
    assert_eq!(p.reload_count(), 99, "pmcinfo shows the count");
    assert_eq!(p.read().unwrap(), 0, "the allocate count is not the value");
    p.set(42).unwrap();
    assert_eq!(p.read().unwrap(), 0, "set does not change a TC's value");
    assert_eq!(p.reload_count(), 42);
    p.start().unwrap();
    sim.advance(8);
    assert_eq!(p.read().unwrap(), 8);
    p.stop().unwrap();
    assert_eq!(p.rw(7).unwrap(), 8, "rw returns the old value");
    assert_eq!(p.read().unwrap(), 7);
    p.start().unwrap();
    sim.advance(3);
    assert_eq!(p.read().unwrap(), 10, "counting continues from the write");
    p.stop().unwrap();
    p.write(u64::MAX).unwrap();
    p.start().unwrap();
    sim.advance(2);
    assert_eq!(p.read().unwrap(), 1, "values wrap modulo 2^64");
}

#[test]
fn sc_counts_from_its_initial_value_and_a_write_lasts_until_start() {
    // pmc_start writes pm_sc.pm_initial to a counting system PMC;
    // pmc_stop reads the counter back into pm_initial; PMCSETCOUNT sets
    // pm_initial; PMCRW writes the counter itself (pcd_write_pmc), which
    // the next pmc_start overwrites with pm_initial.
    let sim = SimBackend::new(2);
    let mut p = with_count(&sim, Mode::SC, Cpu::Id(1), 100);
    p.start().unwrap();
    sim.advance(5);
    assert_eq!(
        p.read().unwrap(),
        105,
        "counting starts at the allocate count"
    );
    p.stop().unwrap();
    sim.advance(50);
    assert_eq!(p.read().unwrap(), 105);
    p.write(7).unwrap();
    assert_eq!(
        p.read().unwrap(),
        7,
        "the counter holds the write while stopped"
    );
    p.start().unwrap();
    sim.advance(1);
    assert_eq!(
        p.read().unwrap(),
        106,
        "start resumes from pm_initial (the value at stop), not from the write"
    );
    p.stop().unwrap();
    p.set(1000).unwrap();
    p.start().unwrap();
    sim.advance(2);
    assert_eq!(
        p.read().unwrap(),
        1002,
        "set is where the next start counts from"
    );
}

#[test]
fn ts_read_is_the_events_left_in_the_period_or_the_written_value() {
    // PMC_OP_PMCRW on a virtual PMC: pcd_read_pmc (for a sampling PMC, the
    // events left before the overflow) when RUNNING and
    // PMC_F_ATTACHED_TO_OWNER, else pm_gv.pm_savedvalue, which only PMCRW
    // writes (pmc_process_csw_out saves TS values per thread, not there).
    let sim = SimBackend::new(1);
    sim.spawn(42);
    let mut p = with_count(&sim, Mode::TS, Cpu::Any, 1000);
    assert_eq!(p.read().unwrap(), 0, "nothing written yet");
    p.start().unwrap();
    sim.advance(300);
    assert_eq!(p.read().unwrap(), 700, "700 events to the next sample");
    sim.advance(1000);
    assert_eq!(p.read().unwrap(), 700, "one sample later, the same point");
    p.stop().unwrap();
    assert_eq!(p.read().unwrap(), 0, "stopped: pm_savedvalue");
    p.write(5).unwrap();
    assert_eq!(p.read().unwrap(), 5);
    assert_eq!(p.reload_count(), 1000, "write is not the reload count");
    p.set(2000).unwrap();
    assert_eq!(p.reload_count(), 2000, "set is");
    assert_eq!(p.read().unwrap(), 5);
    // Attached to another process only: never the hardware.
    let mut q = with_count(&sim, Mode::TS, Cpu::Any, 1000);
    q.attach(42).unwrap();
    assert_eq!(q.rw(9).unwrap(), 0);
    assert_eq!(q.read().unwrap(), 9);
}

#[test]
fn ss_write_is_read_back_and_set_is_the_reload_count() {
    // System PMCRW writes and reads the counter itself; PMCSETCOUNT on a
    // sampling PMC sets pm_reloadcount, raised to pmc_mincount (1000 by
    // default). Starting an SS PMC needs a log (process-wide state, so not
    // in unit tests); its running read shares `events_to_next_sample` with
    // TS, tested above.
    let sim = SimBackend::new(1);
    let mut p = with_count(&sim, Mode::SS, Cpu::Id(0), 5000);
    assert_eq!(p.read().unwrap(), 0);
    p.write(3).unwrap();
    assert_eq!(p.read().unwrap(), 3);
    assert_eq!(p.reload_count(), 5000, "write is not the reload count");
    p.set(10).unwrap();
    assert_eq!(p.reload_count(), MIN_RELOAD_COUNT);
    assert_eq!(p.rw(4).unwrap(), 3);
}

#[test]
fn a_counter_that_never_ran_is_an_error_not_zero() {
    let sim = SimBackend::new(1);
    let mut p = tc(&sim);
    sim.starve(true);
    p.start().unwrap();
    sim.advance(10);
    let e = p.read().unwrap_err();
    assert!(
        matches!(
            e,
            Error::NotCounted {
                time_enabled: 10,
                ..
            }
        ),
        "{e:?}"
    );
    sim.starve(false);
    sim.advance(10);
    let r = p.read_detailed().unwrap();
    assert!(r.multiplexed);
    assert_eq!(
        (r.raw, r.time_enabled, r.time_running, r.value),
        (10, 20, 10, 20)
    );
}

#[test]
fn pmcinfo_lists_own_pmcs_with_their_state() {
    let sim = SimBackend::new(2);
    let mut p = tc(&sim);
    let id = p.id();
    let row = || registry_snapshot().into_iter().find(|r| r.id == id);
    assert_eq!(row().unwrap().state, State::Allocated);
    p.start().unwrap();
    let r = row().unwrap();
    assert_eq!(
        (r.state, r.targets.clone()),
        (State::Running, vec![sim.caller()])
    );
    drop(p);
    assert!(row().is_none(), "released PMCs leave the table");
}
