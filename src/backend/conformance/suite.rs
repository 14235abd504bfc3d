//! The semantic suite of `Pmc`, written once against [`Subject`].
//!
//! Each scenario states hwpmc's rule it checks and cites the FreeBSD source
//! (freebsd-src `sys/dev/hwpmc/hwpmc_mod.c`, `sys/sys/pmc.h`,
//! `lib/libpmc/libpmc.c`, pmc(3)). A scenario needs [`Cap`]abilities
//! beyond counting on the caller; a backend without one lists the scenario
//! as not applicable, with the reason (see `check_listing`).
//!
//! This file is included twice: by `src/backend/conformance/mod.rs` (the
//! simulator and the FreeBSD backend over its kernel double, as unit
//! tests) and by `tests/live/conformance.rs` (Linux perf_event on this
//! machine, gated by its requirements). Its parent provides the names in
//! `use super::*` below.

use super::{Arc, Backend, Cpu, Error, Flags, Mode, Pmc, State, pmcinfo_rows};

/// What a scenario needs beyond counting events of the caller.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cap {
    /// Counts are exactly the work done (simulated kernels); real kernels
    /// count at least it.
    ExactCounts,
    /// Other processes can be made, and addressed by pid.
    OtherProcesses,
    /// A process can be made a child of another (DESCENDANTS trees).
    ProcessTrees,
    /// A process can be made to exit.
    ProcessExit,
    /// System-mode PMCs (SC, SS) on a CPU.
    SystemMode,
    /// A CPU can be taken offline.
    CpuHotplug,
    /// Sampling modes (TS, SS) can be allocated.
    Sampling,
    /// The LOG_PROCCSW / LOG_PROCEXIT flags can be allocated.
    LogFlags,
    /// Every open can be made to fail with a chosen errno.
    InjectedOpenFailure,
    /// A counter can be kept from running while enabled.
    Starvation,
    /// An event whose PMC user space may read directly (`get_msr`).
    DirectRead,
}

/// A backend under test, and the means to make things happen on it.
pub trait Subject {
    /// The backend's instance for this test.
    fn backend(&self) -> Arc<dyn Backend>;
    /// A counting event every target of a scenario counts [`Subject::work`] in.
    fn event(&self) -> &'static str;
    /// How much of the event one unit of work is (1 event, 1000 ns of CPU).
    fn per_unit(&self) -> u64 {
        1
    }
    /// Whether the subject offers a capability.
    fn has(&self, cap: Cap) -> bool;
    /// Makes at least `units` of work happen for every running target:
    /// the caller, the processes of [`Subject::spawn`], every CPU.
    fn work(&self, units: u64);
    /// The pid that stands for the caller.
    fn caller(&self) -> u32;
    /// A pid no process has.
    fn absent_pid(&self) -> u32;
    /// A new process ([`Cap::OtherProcesses`]).
    fn spawn(&self) -> u32 {
        unreachable!("spawn needs Cap::OtherProcesses")
    }
    /// A new child of `parent` ([`Cap::ProcessTrees`]).
    fn spawn_child(&self, parent: u32) -> u32 {
        unreachable!("spawn_child({parent}) needs Cap::ProcessTrees")
    }
    /// Makes a process exit ([`Cap::ProcessExit`]).
    fn exit(&self, pid: u32) {
        unreachable!("exit({pid}) needs Cap::ProcessExit")
    }
    /// Takes a CPU offline or back online ([`Cap::CpuHotplug`]).
    fn set_online(&self, cpu: u32, online: bool) {
        unreachable!("set_online({cpu}, {online}) needs Cap::CpuHotplug")
    }
    /// Makes every open fail with `errno` ([`Cap::InjectedOpenFailure`]).
    fn refuse_opens(&self, errno: Option<i32>) {
        unreachable!("refuse_opens({errno:?}) needs Cap::InjectedOpenFailure")
    }
    /// Keeps enabled counters from running ([`Cap::Starvation`]).
    fn starve(&self, on: bool) {
        unreachable!("starve({on}) needs Cap::Starvation")
    }
    /// An event user space may read directly, and the index `get_msr`
    /// gives for it ([`Cap::DirectRead`]).
    fn direct_read_event(&self) -> (&'static str, u32) {
        unreachable!("direct_read_event needs Cap::DirectRead")
    }
}

/// One scenario: its name (the test's name), what it needs, its body.
pub struct Scenario {
    /// The test name.
    pub name: &'static str,
    /// The capabilities it needs.
    pub needs: &'static [Cap],
    /// The body; panics on failure.
    pub run: fn(&dyn Subject),
}

/// The capabilities of `needs` that `subject` lacks.
pub fn missing(subject: &dyn Subject, needs: &[Cap]) -> Vec<Cap> {
    needs.iter().copied().filter(|c| !subject.has(*c)).collect()
}

/// Runs the scenario `name` on `subject`; a missing capability fails (the
/// listing said it applies).
pub fn run(subject: &dyn Subject, name: &str) {
    let s = SCENARIOS
        .iter()
        .find(|s| s.name == name)
        .unwrap_or_else(|| panic!("no scenario {name}"));
    let lacking = missing(subject, s.needs);
    assert!(
        lacking.is_empty(),
        "{name} needs {lacking:?}, which this backend does not offer"
    );
    (s.run)(subject);
}

/// Checks that a backend's listing is the suite: every scenario once,
/// those it runs need only what it has, those it skips need something it
/// lacks. So a scenario is never skipped on a backend that could run it,
/// and none is forgotten.
pub fn check_listing(subject: &dyn Subject, runs: &[&str], not_applicable: &[&str]) {
    for s in SCENARIOS {
        let listed = runs.iter().filter(|n| **n == s.name).count()
            + not_applicable.iter().filter(|n| **n == s.name).count();
        assert_eq!(listed, 1, "{} must be listed exactly once", s.name);
        let lacking = missing(subject, s.needs);
        if runs.contains(&s.name) {
            assert!(lacking.is_empty(), "{} needs {lacking:?}", s.name);
        } else {
            assert!(
                !lacking.is_empty(),
                "{} is listed as not applicable but the backend has all of {:?}",
                s.name,
                s.needs
            );
        }
    }
    for n in runs.iter().chain(not_applicable) {
        assert!(
            SCENARIOS.iter().any(|s| s.name == *n),
            "unknown scenario {n}"
        );
    }
}

type R<T> = Result<T, Error>;

fn pmc(s: &dyn Subject, mode: Mode, flags: Flags, cpu: Cpu) -> R<Pmc> {
    Pmc::allocate_on(s.backend(), s.event(), mode, flags, cpu, 0)
}

fn tc(s: &dyn Subject) -> Pmc {
    pmc(s, Mode::TC, Flags::empty(), Cpu::Any).expect("allocate TC")
}

fn with_count(s: &dyn Subject, mode: Mode, cpu: Cpu, count: u64) -> Pmc {
    Pmc::allocate_on(s.backend(), s.event(), mode, Flags::empty(), cpu, count).expect("allocate")
}

/// `after − before` (modulo 2^64) is the work of `units`: exactly, or at
/// least, as the subject counts.
fn assert_grew(s: &dyn Subject, before: u64, after: u64, units: u64, what: &str) {
    let delta = after.wrapping_sub(before);
    let expected = units * s.per_unit();
    if s.has(Cap::ExactCounts) {
        assert_eq!(delta, expected, "{what}: {before} → {after}");
    } else {
        assert!(
            delta >= expected && delta < 1 << 50,
            "{what}: {before} → {after}, expected at least {expected} more"
        );
    }
}

fn errno<T: std::fmt::Debug>(r: R<T>) -> i32 {
    r.unwrap_err().errno()
}

/// Every scenario, in the order of `src/pmc/tests.rs`.
pub static SCENARIOS: &[Scenario] = &[
    Scenario {
        name: "start_attaches_the_caller_and_counts_only_while_running",
        needs: &[],
        run: start_attaches_the_caller_and_counts_only_while_running,
    },
    Scenario {
        name: "stop_before_start_is_einval",
        needs: &[],
        run: stop_before_start_is_einval,
    },
    Scenario {
        name: "attach_rules_follow_pmc_attach",
        needs: &[Cap::OtherProcesses],
        run: attach_rules_follow_pmc_attach,
    },
    Scenario {
        name: "a_system_pmc_neither_attaches_nor_detaches_nor_gives_its_msr",
        needs: &[Cap::SystemMode, Cap::OtherProcesses],
        run: a_system_pmc_neither_attaches_nor_detaches_nor_gives_its_msr,
    },
    Scenario {
        name: "several_targets_accumulate_and_detach_keeps_the_value",
        needs: &[Cap::OtherProcesses, Cap::ExactCounts],
        run: several_targets_accumulate_and_detach_keeps_the_value,
    },
    Scenario {
        name: "allocate_accepts_the_process_counting_flags_hwpmc_accepts",
        needs: &[],
        run: allocate_accepts_the_process_counting_flags_hwpmc_accepts,
    },
    Scenario {
        name: "allocate_accepts_the_system_counting_flags_hwpmc_accepts",
        needs: &[Cap::SystemMode],
        run: allocate_accepts_the_system_counting_flags_hwpmc_accepts,
    },
    Scenario {
        name: "allocate_accepts_the_sampling_flags_hwpmc_accepts",
        needs: &[Cap::Sampling, Cap::SystemMode],
        run: allocate_accepts_the_sampling_flags_hwpmc_accepts,
    },
    Scenario {
        name: "allocate_accepts_the_log_flags_on_process_modes",
        needs: &[Cap::LogFlags],
        run: allocate_accepts_the_log_flags_on_process_modes,
    },
    Scenario {
        name: "allocate_rejects_what_hwpmc_rejects_with_einval",
        needs: &[],
        run: allocate_rejects_what_hwpmc_rejects_with_einval,
    },
    Scenario {
        name: "a_cpu_beyond_the_machine_is_einval",
        needs: &[],
        run: a_cpu_beyond_the_machine_is_einval,
    },
    Scenario {
        name: "an_offline_cpu_is_enxio_before_the_flag_checks",
        needs: &[Cap::SystemMode, Cap::CpuHotplug],
        run: an_offline_cpu_is_enxio_before_the_flag_checks,
    },
    Scenario {
        name: "an_unknown_event_name_is_einval",
        needs: &[],
        run: an_unknown_event_name_is_einval,
    },
    Scenario {
        name: "an_event_that_cannot_be_opened_fails_at_allocate_not_later",
        needs: &[Cap::InjectedOpenFailure, Cap::SystemMode],
        run: an_event_that_cannot_be_opened_fails_at_allocate_not_later,
    },
    Scenario {
        name: "start_after_every_target_was_detached_is_esrch",
        needs: &[Cap::OtherProcesses],
        run: start_after_every_target_was_detached_is_esrch,
    },
    Scenario {
        name: "exited_targets_leave_the_list_and_make_start_esrch",
        needs: &[Cap::OtherProcesses, Cap::ProcessExit],
        run: exited_targets_leave_the_list_and_make_start_esrch,
    },
    Scenario {
        name: "exited_targets_keep_their_counts",
        needs: &[Cap::OtherProcesses, Cap::ProcessExit, Cap::ExactCounts],
        run: exited_targets_keep_their_counts,
    },
    Scenario {
        name: "attaching_overlapping_descendant_trees_is_eexist_and_changes_nothing",
        needs: &[Cap::ProcessTrees],
        run: attaching_overlapping_descendant_trees_is_eexist_and_changes_nothing,
    },
    Scenario {
        name: "detach_is_esrch_for_unmonitored_and_einval_for_another_pmcs_process",
        needs: &[Cap::OtherProcesses],
        run: detach_is_esrch_for_unmonitored_and_einval_for_another_pmcs_process,
    },
    Scenario {
        name: "get_msr_needs_a_process_pmc_attached_only_to_its_owner",
        needs: &[Cap::OtherProcesses],
        run: get_msr_needs_a_process_pmc_attached_only_to_its_owner,
    },
    Scenario {
        name: "get_msr_returns_the_index_and_forbids_further_attaches",
        needs: &[Cap::DirectRead, Cap::OtherProcesses],
        run: get_msr_returns_the_index_and_forbids_further_attaches,
    },
    Scenario {
        name: "width_and_capabilities_are_the_class_row_of_cpuinfo",
        needs: &[],
        run: width_and_capabilities_are_the_class_row_of_cpuinfo,
    },
    Scenario {
        name: "write_rw_set_need_a_stopped_pmc",
        needs: &[],
        run: write_rw_set_need_a_stopped_pmc,
    },
    Scenario {
        name: "tc_write_sets_the_value_but_set_and_the_allocate_count_do_not",
        needs: &[],
        run: tc_write_sets_the_value_but_set_and_the_allocate_count_do_not,
    },
    Scenario {
        name: "sc_counts_from_its_initial_value_and_a_write_lasts_until_start",
        needs: &[Cap::SystemMode, Cap::ExactCounts],
        run: sc_counts_from_its_initial_value_and_a_write_lasts_until_start,
    },
    Scenario {
        name: "ts_read_is_the_events_left_in_the_period_or_the_written_value",
        needs: &[Cap::Sampling, Cap::ExactCounts, Cap::OtherProcesses],
        run: ts_read_is_the_events_left_in_the_period_or_the_written_value,
    },
    Scenario {
        name: "ss_write_is_read_back_and_set_is_the_reload_count",
        needs: &[Cap::Sampling, Cap::SystemMode],
        run: ss_write_is_read_back_and_set_is_the_reload_count,
    },
    Scenario {
        name: "a_counter_that_never_ran_is_an_error_not_zero",
        needs: &[Cap::Starvation],
        run: a_counter_that_never_ran_is_an_error_not_zero,
    },
    Scenario {
        name: "pmcinfo_lists_own_pmcs_with_their_state",
        needs: &[],
        run: pmcinfo_lists_own_pmcs_with_their_state,
    },
];

fn start_attaches_the_caller_and_counts_only_while_running(s: &dyn Subject) {
    // hwpmc_mod.c pmc_start: a PMC never attached attaches its owner;
    // PMCSTART of a RUNNING PMC and PMCSTOP of a STOPPED one succeed.
    let mut p = tc(s);
    s.work(5);
    assert_eq!(p.read().unwrap(), 0, "nothing counts before start");
    p.start().unwrap();
    assert_eq!(p.targets(), vec![s.caller()]);
    s.work(10);
    let first = p.read().unwrap();
    assert_grew(s, 0, first, 10, "running");
    p.start().unwrap();
    p.stop().unwrap();
    p.stop().unwrap();
    let stopped = p.read().unwrap();
    assert_grew(s, first, stopped, 0, "stop");
    s.work(100);
    assert_eq!(
        p.read().unwrap(),
        stopped,
        "a stopped PMC reads its saved value"
    );
    p.start().unwrap();
    s.work(1);
    assert_grew(s, stopped, p.read().unwrap(), 1, "restarted");
}

fn stop_before_start_is_einval(s: &dyn Subject) {
    // hwpmc_mod.c PMC_OP_PMCSTOP: a state other than RUNNING/STOPPED is EINVAL.
    let mut p = tc(s);
    assert_eq!(errno(p.stop()), libc::EINVAL);
}

fn attach_rules_follow_pmc_attach(s: &dyn Subject) {
    // hwpmc_mod.c pmc_do_op_pmcattach: RUNNING EBUSY, pfind failure ESRCH;
    // pmc_attach_one_process: already there EEXIST.
    let other = s.spawn();
    let mut p = tc(s);
    p.attach(other).unwrap();
    assert_eq!(errno(p.attach(other)), libc::EEXIST);
    assert_eq!(errno(p.attach(s.absent_pid())), libc::ESRCH);
    p.start().unwrap();
    assert_eq!(
        p.targets(),
        vec![other],
        "start must not attach the caller once attached"
    );
    assert_eq!(errno(p.attach(0)), libc::EBUSY);
}

fn a_system_pmc_neither_attaches_nor_detaches_nor_gives_its_msr(s: &dyn Subject) {
    // hwpmc_mod.c pmc_do_op_pmcattach: a system-mode PMC is EINVAL;
    // pmc_do_op_pmcdetach then pmc_detach_one_process: a process no PMC
    // monitors is ESRCH; PMC_OP_PMCGETMSR: not a virtual mode is EINVAL.
    let other = s.spawn();
    let mut sc = pmc(s, Mode::SC, Flags::empty(), Cpu::Id(0)).unwrap();
    assert_eq!(errno(sc.attach(other)), libc::EINVAL);
    assert_eq!(errno(sc.detach(other)), libc::ESRCH);
    assert_eq!(errno(sc.get_msr()), libc::EINVAL, "system mode");
}

fn several_targets_accumulate_and_detach_keeps_the_value(s: &dyn Subject) {
    // hwpmc_mod.c: a virtual PMC's value sums its targets; a detached
    // target's counts stay in pm_savedvalue.
    let other = s.spawn();
    let mut p = tc(s);
    p.attach(0).unwrap();
    p.attach(other).unwrap();
    p.start().unwrap();
    s.work(10);
    assert_eq!(p.read().unwrap(), 20 * s.per_unit());
    p.detach(other).unwrap();
    s.work(10);
    assert_eq!(p.read().unwrap(), 30 * s.per_unit(), "the detached 10 stay");
}

fn accepts(s: &dyn Subject, combos: &[(Mode, Flags, Cpu)]) {
    for &(m, f, c) in combos {
        pmc(s, m, f, c).unwrap_or_else(|e| panic!("{m} {f:?} {c}: {e}"));
    }
}

fn allocate_accepts_the_process_counting_flags_hwpmc_accepts(s: &dyn Subject) {
    // hwpmc_mod.c pmc_do_op_pmcallocate accepts the mask DESCENDANTS|
    // LOG_PROCCSW|LOG_PROCEXIT|CALLCHAIN|USERCALLCHAIN|EV_PMU and rejects
    // only USERCALLCHAIN without CALLCHAIN or outside sampling, and LOG_PROC*
    // on system modes: CALLCHAIN on a counting mode passes, EV_PMU too.
    accepts(
        s,
        &[
            (Mode::TC, Flags::CALLCHAIN, Cpu::Any),
            (Mode::TC, Flags::DESCENDANTS, Cpu::Any),
            (Mode::TC, Flags::EV_PMU, Cpu::Any),
        ],
    );
}

fn allocate_accepts_the_system_counting_flags_hwpmc_accepts(s: &dyn Subject) {
    // As above: DESCENDANTS on a system mode has no targets to follow but
    // is accepted.
    accepts(
        s,
        &[
            (Mode::SC, Flags::CALLCHAIN, Cpu::Id(0)),
            (Mode::SC, Flags::DESCENDANTS, Cpu::Id(0)),
            (Mode::SC, Flags::EV_PMU, Cpu::Id(0)),
        ],
    );
}

fn allocate_accepts_the_sampling_flags_hwpmc_accepts(s: &dyn Subject) {
    accepts(
        s,
        &[
            (Mode::SS, Flags::DESCENDANTS | Flags::CALLCHAIN, Cpu::Id(0)),
            (
                Mode::TS,
                Flags::CALLCHAIN | Flags::USERCALLCHAIN | Flags::DESCENDANTS,
                Cpu::Any,
            ),
            (
                Mode::SS,
                Flags::CALLCHAIN | Flags::USERCALLCHAIN,
                Cpu::Id(0),
            ),
            (Mode::TS, Flags::EV_PMU, Cpu::Any),
            (Mode::SS, Flags::EV_PMU, Cpu::Id(0)),
        ],
    );
}

fn allocate_accepts_the_log_flags_on_process_modes(s: &dyn Subject) {
    accepts(
        s,
        &[(
            Mode::TC,
            Flags::DESCENDANTS | Flags::LOG_PROCEXIT | Flags::LOG_PROCCSW,
            Cpu::Any,
        )],
    );
}

fn allocate_rejects_what_hwpmc_rejects_with_einval(s: &dyn Subject) {
    // hwpmc_mod.c pmc_do_op_pmcallocate, each `return (EINVAL)` in turn.
    let einval = |mode, flags, cpu| {
        let e = pmc(s, mode, flags, cpu).unwrap_err();
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

fn a_cpu_beyond_the_machine_is_einval(s: &dyn Subject) {
    // hwpmc_mod.c pmc_do_op_pmcallocate: `cpu >= pmc_cpu_max()` → EINVAL,
    // checked first (before the mode/CPU pairing).
    let max = s.backend().possible_cpus().into_iter().max().unwrap_or(0) + 1;
    for (mode, cpu) in [
        (Mode::SC, max),
        (Mode::SS, max + 1000),
        (Mode::TC, max + 99),
    ] {
        assert_eq!(
            errno(pmc(s, mode, Flags::empty(), Cpu::Id(cpu))),
            libc::EINVAL
        );
    }
}

fn an_offline_cpu_is_enxio_before_the_flag_checks(s: &dyn Subject) {
    // hwpmc_mod.c pmc_do_op_pmcallocate: a system PMC on a CPU that is not
    // active → ENXIO, checked before the flags.
    s.set_online(1, false);
    let e = |mode, flags| errno(pmc(s, mode, flags, Cpu::Id(1)));
    assert_eq!(e(Mode::SC, Flags::empty()), libc::ENXIO);
    assert_eq!(e(Mode::SS, Flags::empty()), libc::ENXIO);
    assert_eq!(e(Mode::SC, Flags::LOG_PROCCSW), libc::ENXIO);
    s.set_online(1, true);
    pmc(s, Mode::SC, Flags::empty(), Cpu::Id(1)).expect("back online");
}

fn an_unknown_event_name_is_einval(s: &dyn Subject) {
    // pmc_allocate(3): "[EINVAL] The event specification was not recognized."
    let e = Pmc::allocate_on(
        s.backend(),
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

fn an_event_that_cannot_be_opened_fails_at_allocate_not_later(s: &dyn Subject) {
    // hwpmc_mod.c pmc_do_op_pmcallocate finds or configures the hardware at
    // allocate and fails there; process PMCs open counters only at attach.
    s.refuse_opens(Some(libc::ENOENT));
    for (mode, cpu) in [(Mode::TC, Cpu::Any), (Mode::SC, Cpu::Id(0))] {
        let e = pmc(s, mode, Flags::empty(), cpu).unwrap_err();
        assert_eq!(e.errno(), libc::ENOENT, "{mode}: {e}");
    }
    s.refuse_opens(None);
    let p = tc(s);
    assert!(p.targets().is_empty(), "the trial leaves no target behind");
    assert_eq!(p.handles(), 0, "nor a handle");
}

fn start_after_every_target_was_detached_is_esrch(s: &dyn Subject) {
    // hwpmc_mod.c pmc_start: with no targets, `PMC_F_ATTACH_DONE ? ESRCH :
    // pmc_attach_process(owner)`; pmc_detach_process clears ATTACH_DONE
    // when the last tree of a DESCENDANTS PMC goes.
    let other = s.spawn();
    let mut p = tc(s);
    p.attach(other).unwrap();
    p.detach(other).unwrap();
    assert_eq!(errno(p.start()), libc::ESRCH);
    assert!(p.targets().is_empty(), "start must not attach the owner");
    let mut q = tc(s);
    q.start().unwrap();
    q.stop().unwrap();
    q.detach(0).unwrap();
    assert_eq!(errno(q.start()), libc::ESRCH);
    let mut d = pmc(s, Mode::TC, Flags::DESCENDANTS, Cpu::Any).unwrap();
    d.attach(other).unwrap();
    d.detach(other).unwrap();
    d.start().unwrap();
    assert_eq!(d.targets(), vec![s.caller()]);
}

fn exited_targets_leave_the_list_and_make_start_esrch(s: &dyn Subject) {
    // hwpmc_mod.c pmc_process_exit unlinks an exiting target from its PMCs;
    // pmc_start of a PMC without targets after an attach is ESRCH.
    let (a, b) = (s.spawn(), s.spawn());
    let mut p = tc(s);
    p.attach(a).unwrap();
    p.attach(b).unwrap();
    p.start().unwrap();
    s.exit(a);
    assert_eq!(p.targets(), vec![b], "{a} exited");
    assert_eq!(p.info().targets, vec![b]);
    p.stop().unwrap();
    s.exit(b);
    assert_eq!(errno(p.start()), libc::ESRCH, "every target exited");
    assert!(p.targets().is_empty());
}

fn exited_targets_keep_their_counts(s: &dyn Subject) {
    // The counts an exited target had are in pm_savedvalue.
    let (a, b) = (s.spawn(), s.spawn());
    let mut p = tc(s);
    p.attach(a).unwrap();
    p.attach(b).unwrap();
    p.start().unwrap();
    s.work(10);
    s.exit(a);
    p.stop().unwrap();
    assert_eq!(p.read().unwrap(), 20 * s.per_unit(), "{a}'s 10 stay");
}

fn attaching_overlapping_descendant_trees_is_eexist_and_changes_nothing(s: &dyn Subject) {
    // hwpmc_mod.c pmc_attach_process walks the tree with
    // pmc_attach_one_process, EEXIST for a process already at the PMC's
    // row; the walk is then undone.
    let top = s.spawn();
    let mid = s.spawn_child(top);
    let low = s.spawn_child(mid);
    let mut p = pmc(s, Mode::TC, Flags::DESCENDANTS, Cpu::Any).unwrap();
    p.attach(mid).unwrap();
    assert_eq!(errno(p.attach(top)), libc::EEXIST, "a tree above a target");
    assert_eq!(p.targets(), vec![mid], "the failed attach left nothing");
    assert_eq!(errno(p.attach(low)), libc::EEXIST, "inside a tree");
    assert_eq!(p.targets(), vec![mid]);
    let mut q = tc(s);
    q.attach(top).unwrap();
    q.attach(mid).unwrap();
    assert_eq!(q.targets(), vec![top, mid], "without DESCENDANTS, no trees");
}

fn detach_is_esrch_for_unmonitored_and_einval_for_another_pmcs_process(s: &dyn Subject) {
    // hwpmc_mod.c pmc_do_op_pmcdetach: pfind failure → ESRCH;
    // pmc_detach_one_process: monitored by no PMC → ESRCH, by another PMC
    // of the owner → EINVAL.
    let (a, b) = (s.spawn(), s.spawn());
    let mut p = tc(s);
    let mut other = tc(s);
    other.attach(b).unwrap();
    p.attach(0).unwrap();
    assert_eq!(errno(p.detach(a)), libc::ESRCH, "live but unmonitored");
    assert_eq!(errno(p.detach(b)), libc::EINVAL, "another PMC's");
    assert_eq!(errno(p.detach(s.absent_pid())), libc::ESRCH, "no such pid");
    p.detach(0).unwrap();
    other.detach(b).unwrap();
    assert_eq!(errno(p.detach(b)), libc::ESRCH, "now nobody's");
}

fn get_msr_needs_a_process_pmc_attached_only_to_its_owner(s: &dyn Subject) {
    // hwpmc_mod.c PMC_OP_PMCGETMSR: DESCENDANTS, no target, several, or
    // one that is not the owner → EINVAL; a class without pcd_get_msr →
    // ENOSYS (the subject's event has no direct read).
    let other = s.spawn();
    let mut p = tc(s);
    assert_eq!(errno(p.get_msr()), libc::EINVAL, "no target");
    p.attach(other).unwrap();
    assert_eq!(errno(p.get_msr()), libc::EINVAL, "not the owner");
    p.attach(0).unwrap();
    assert_eq!(errno(p.get_msr()), libc::EINVAL, "two targets");
    let mut d = pmc(s, Mode::TC, Flags::DESCENDANTS, Cpu::Any).unwrap();
    d.attach(0).unwrap();
    assert_eq!(errno(d.get_msr()), libc::EINVAL, "DESCENDANTS");
    let mut q = tc(s);
    q.attach(0).unwrap();
    q.start().unwrap();
    let e = q.get_msr().unwrap_err();
    assert_eq!(e.errno(), libc::ENOSYS, "no direct read of this event: {e}");
    q.stop().unwrap();
    q.attach(other).unwrap();
}

fn get_msr_returns_the_index_and_forbids_further_attaches(s: &dyn Subject) {
    // hwpmc_mod.c PMC_OP_PMCGETMSR copies out pcd_get_msr's number;
    // pmc_attach_process then returns EPERM.
    let other = s.spawn();
    let (event, index) = s.direct_read_event();
    let mut p =
        Pmc::allocate_on(s.backend(), event, Mode::TC, Flags::empty(), Cpu::Any, 0).unwrap();
    p.start().unwrap();
    assert_eq!(p.get_msr().unwrap(), index);
    p.stop().unwrap();
    assert_eq!(errno(p.attach(other)), libc::EPERM);
    assert_eq!(p.targets(), vec![s.caller()]);
}

fn width_and_capabilities_are_the_class_row_of_cpuinfo(s: &dyn Subject) {
    // libpmc.c pmc_width / pmc_capabilities look the PMC's class up in the
    // cpuinfo classes and return its pm_width / pm_caps.
    let info = s.backend().cpuinfo().unwrap();
    let p = tc(s);
    let row = info
        .classes
        .iter()
        .find(|c| c.class == p.class())
        .unwrap_or_else(|| panic!("cpuinfo lists no class {}: {info:?}", p.class()));
    assert_eq!(p.width(), row.width);
    assert_eq!(p.capabilities(), row.caps);
}

fn write_rw_set_need_a_stopped_pmc(s: &dyn Subject) {
    // PMC_OP_PMCRW with a new value and PMC_OP_PMCSETCOUNT on a RUNNING
    // PMC are EBUSY.
    let mut p = tc(s);
    p.start().unwrap();
    assert_eq!(errno(p.write(1)), libc::EBUSY);
    assert_eq!(errno(p.rw(1)), libc::EBUSY);
    assert_eq!(errno(p.set(1)), libc::EBUSY);
}

fn tc_write_sets_the_value_but_set_and_the_allocate_count_do_not(s: &dyn Subject) {
    // TC's value is pm_savedvalue: PMCRW's new value sets it; PMCSETCOUNT
    // and allocate's count set pm_initial, which only a system PMC uses.
    let mut p = with_count(s, Mode::TC, Cpu::Any, 99);
    assert_eq!(p.reload_count(), 99, "pmcinfo shows the count");
    assert_eq!(p.read().unwrap(), 0, "the allocate count is not the value");
    p.set(42).unwrap();
    assert_eq!(p.read().unwrap(), 0, "set does not change a TC's value");
    assert_eq!(p.reload_count(), 42);
    p.start().unwrap();
    s.work(8);
    p.stop().unwrap();
    let counted = p.read().unwrap();
    assert_grew(s, 0, counted, 8, "first run");
    assert_eq!(p.rw(7).unwrap(), counted, "rw returns the old value");
    assert_eq!(p.read().unwrap(), 7);
    p.start().unwrap();
    s.work(3);
    assert_grew(
        s,
        7,
        p.read().unwrap(),
        3,
        "counting continues from the write",
    );
    p.stop().unwrap();
    p.write(u64::MAX).unwrap();
    p.start().unwrap();
    s.work(2);
    assert_grew(s, u64::MAX, p.read().unwrap(), 2, "values wrap modulo 2^64");
}

fn sc_counts_from_its_initial_value_and_a_write_lasts_until_start(s: &dyn Subject) {
    // pmc_start writes pm_initial to a counting system PMC; pmc_stop reads
    // the counter back into it; PMCSETCOUNT sets it; PMCRW writes the
    // counter, which the next pmc_start overwrites with pm_initial.
    let u = s.per_unit();
    let mut p = with_count(s, Mode::SC, Cpu::Id(1), 100);
    p.start().unwrap();
    s.work(5);
    assert_eq!(
        p.read().unwrap(),
        100 + 5 * u,
        "starts at the allocate count"
    );
    p.stop().unwrap();
    s.work(50);
    assert_eq!(p.read().unwrap(), 100 + 5 * u);
    p.write(7).unwrap();
    assert_eq!(
        p.read().unwrap(),
        7,
        "the counter holds the write while stopped"
    );
    p.start().unwrap();
    s.work(1);
    assert_eq!(
        p.read().unwrap(),
        100 + 6 * u,
        "start resumes from pm_initial"
    );
    p.stop().unwrap();
    p.set(1000).unwrap();
    p.start().unwrap();
    s.work(2);
    assert_eq!(
        p.read().unwrap(),
        1000 + 2 * u,
        "set is where start counts from"
    );
}

fn ts_read_is_the_events_left_in_the_period_or_the_written_value(s: &dyn Subject) {
    // PMC_OP_PMCRW on a virtual PMC: pcd_read_pmc (a sampling PMC's events
    // left before the overflow) when RUNNING and attached to the owner,
    // else pm_savedvalue, which only PMCRW writes.
    let other = s.spawn();
    let mut p = with_count(s, Mode::TS, Cpu::Any, 1000);
    assert_eq!(p.read().unwrap(), 0, "nothing written yet");
    p.start().unwrap();
    s.work(300);
    assert_eq!(p.read().unwrap(), 700, "700 events to the next sample");
    s.work(1000);
    assert_eq!(p.read().unwrap(), 700, "one sample later, the same point");
    p.stop().unwrap();
    assert_eq!(p.read().unwrap(), 0, "stopped: pm_savedvalue");
    p.write(5).unwrap();
    assert_eq!(p.read().unwrap(), 5);
    assert_eq!(p.reload_count(), 1000, "write is not the reload count");
    p.set(2000).unwrap();
    assert_eq!(p.reload_count(), 2000, "set is");
    let mut q = with_count(s, Mode::TS, Cpu::Any, 1000);
    q.attach(other).unwrap();
    assert_eq!(q.rw(9).unwrap(), 0);
    assert_eq!(
        q.read().unwrap(),
        9,
        "another process's: never the hardware"
    );
}

fn ss_write_is_read_back_and_set_is_the_reload_count(s: &dyn Subject) {
    // System PMCRW writes and reads the counter; PMCSETCOUNT on a sampling
    // PMC sets pm_reloadcount, raised to pmc_mincount (1000).
    let mut p = with_count(s, Mode::SS, Cpu::Id(0), 5000);
    assert_eq!(p.read().unwrap(), 0);
    p.write(3).unwrap();
    assert_eq!(p.read().unwrap(), 3);
    assert_eq!(p.reload_count(), 5000, "write is not the reload count");
    p.set(10).unwrap();
    assert_eq!(p.reload_count(), 1000, "raised to pmc_mincount");
    assert_eq!(p.rw(4).unwrap(), 3);
}

fn a_counter_that_never_ran_is_an_error_not_zero(s: &dyn Subject) {
    let mut p = tc(s);
    s.starve(true);
    p.start().unwrap();
    s.work(10);
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
    s.starve(false);
    s.work(10);
    let r = p.read_detailed().unwrap();
    assert!(r.multiplexed);
    assert_eq!(
        (r.raw, r.time_enabled, r.time_running, r.value),
        (10, 20, 10, 20)
    );
}

fn pmcinfo_lists_own_pmcs_with_their_state(s: &dyn Subject) {
    // pmc_pmcinfo(3) (PMC_OP_GETPMCINFO): one row per PMC with its state
    // and targets; a released PMC is gone.
    let mut p = tc(s);
    let id = p.id();
    let row = || pmcinfo_rows().into_iter().find(|r| r.id == id);
    assert_eq!(row().unwrap().state, State::Allocated);
    p.start().unwrap();
    let r = row().unwrap();
    assert_eq!(
        (r.state, r.targets.clone()),
        (State::Running, vec![s.caller()])
    );
    drop(p);
    assert!(row().is_none(), "released PMCs leave the table");
}
