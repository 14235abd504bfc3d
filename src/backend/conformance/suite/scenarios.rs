//! The scenarios' bodies (see `suite.rs` for the table and the helpers).

use super::*;

pub(super) fn start_attaches_the_caller_and_counts_only_while_running(s: &dyn Subject) {
    // hwpmc_mod.c pmc_start: a PMC never attached attaches its owner;
    // PMCSTART of a RUNNING PMC and PMCSTOP of a STOPPED one succeed.
    let mut p = tc(s);
    s.work(5);
    assert_eq!(p.read().shown(), 0, "nothing counts before start");
    // pmc_allocate(3)'s failure at allocate: a trial PMC, released.
    requests(s, "ALLOCATE TC cpu=ANY -> #0; RELEASE #0");
    assert_eq!(
        p.handles(),
        0,
        "a process PMC holds nothing before a target"
    );
    let t0 = s.ceiling();
    p.start().shown();
    assert_eq!(p.targets(), vec![s.caller()]);
    requests(
        s,
        &format!(
            "ALLOCATE TC cpu=ANY -> #1; ATTACH #1 pid={}; START #1",
            s.caller()
        ),
    );
    s.work(10);
    let t1 = s.ceiling();
    let first = p.read().shown();
    assert_grew(s, 0, first, 10, t0, "running");
    p.start().shown();
    p.stop().shown();
    p.stop().shown();
    let stopped = p.read().shown();
    assert_grew(s, first, stopped, 0, t1, "stop");
    requests(s, "READ #1; STOP #1; READ #1");
    s.work(100);
    assert_eq!(
        p.read().shown(),
        stopped,
        "a stopped PMC reads its saved value"
    );
    let t2 = s.ceiling();
    p.start().shown();
    s.work(1);
    assert_grew(s, stopped, p.read().shown(), 1, t2, "restarted");
}

pub(super) fn stop_before_start_is_einval(s: &dyn Subject) {
    // hwpmc_mod.c PMC_OP_PMCSTOP: a state other than RUNNING/STOPPED is EINVAL.
    let mut p = tc(s);
    assert_eq!(errno(p.stop()), libc::EINVAL);
    // Attached is still ALLOCATED, not RUNNING.
    p.attach(0).shown();
    assert_eq!(errno(p.stop()), libc::EINVAL, "attached, never started");
    assert_eq!(p.state(), State::Allocated);
    requests(
        s,
        &format!(
            "ALLOCATE TC cpu=ANY -> #0; RELEASE #0; ALLOCATE TC cpu=ANY -> #1; ATTACH #1 pid={}",
            s.caller()
        ),
    );
    // PMCRW of a PMC not RUNNING reads pm_savedvalue: 0 until a write.
    assert_eq!(p.read().shown(), 0, "attached, never started");
}

pub(super) fn attach_rules_follow_pmc_attach(s: &dyn Subject) {
    // hwpmc_mod.c pmc_do_op_pmcattach: RUNNING EBUSY, pfind failure ESRCH;
    // pmc_attach_one_process: already there EEXIST.
    let other = s.spawn();
    let mut p = tc(s);
    p.attach(other).shown();
    assert_eq!(errno(p.attach(other)), libc::EEXIST);
    assert_eq!(errno(p.attach(s.absent_pid())), libc::ESRCH);
    p.start().shown();
    assert_eq!(
        p.targets(),
        vec![other],
        "start must not attach the caller once attached"
    );
    assert_eq!(errno(p.attach(0)), libc::EBUSY);
    // EEXIST, ESRCH and EBUSY are decided before the kernel is asked.
    requests(
        s,
        &format!(
            "ALLOCATE TC cpu=ANY -> #0; RELEASE #0; ALLOCATE TC cpu=ANY -> #1; ATTACH #1 pid={other}; START #1"
        ),
    );
}

pub(super) fn a_system_pmc_neither_attaches_nor_detaches_nor_gives_its_msr(s: &dyn Subject) {
    // hwpmc_mod.c pmc_do_op_pmcattach: a system-mode PMC is EINVAL;
    // pmc_do_op_pmcdetach then pmc_detach_one_process: a process no PMC
    // monitors is ESRCH; PMC_OP_PMCGETMSR: not a virtual mode is EINVAL.
    let other = s.spawn();
    let mut sc = pmc(s, Mode::SC, Flags::empty(), Cpu::Id(0)).shown();
    assert_eq!(errno(sc.attach(other)), libc::EINVAL);
    assert_eq!(errno(sc.detach(other)), libc::ESRCH);
    assert_eq!(errno(sc.get_msr()), libc::EINVAL, "system mode");
    // A system PMC is opened at allocate (on its CPU, no trial); the
    // refusals are decided before the kernel is asked.
    requests(s, "ALLOCATE SC cpu=0 -> #0");
    // PMCRW on a stopped system PMC writes its counter and reads it back,
    // in full too.
    sc.start().shown();
    sc.stop().shown();
    sc.write(7).shown();
    assert_eq!(sc.read().shown(), 7);
    assert_eq!(sc.read_detailed().shown().value, 7);
    requests(s, "READ #0; START #0; STOP #0; READ #0; READ #0");
}

/// Allocates each combination, checks the PMC and its row, drops it;
/// then the kernel requests are `expected`.
#[track_caller]
pub(super) fn accepts(s: &dyn Subject, combos: &[(Mode, Flags, Cpu)], expected: &str) {
    for &(m, f, c) in combos {
        let p = pmc(s, m, f, c).unwrap_or_else(|e| panic!("{m} {f:?} {c}: {e}"));
        // The PMC is what was asked for, and so is its pmc_pmcinfo row
        // (struct pmc_info's pm_mode, pm_flags; its CPU's list).
        assert_eq!((p.mode(), p.flags(), p.cpu()), (m, f, c));
        let row = p.info();
        assert_eq!((row.mode, row.flags, row.cpu), (m, f, c));
    }
    requests(s, expected);
}

pub(super) fn allocate_accepts_the_process_counting_flags_hwpmc_accepts(s: &dyn Subject) {
    // hwpmc_mod.c pmc_do_op_pmcallocate accepts the mask DESCENDANTS|
    // LOG_PROCCSW|LOG_PROCEXIT|CALLCHAIN|USERCALLCHAIN|EV_PMU and rejects
    // only USERCALLCHAIN without CALLCHAIN or outside sampling, and LOG_PROC*
    // on system modes: CALLCHAIN on a counting mode passes, EV_PMU too.
    //
    // hwpmc sees, per PMC: libpmc.c pmc_allocate's one PMC_OP_PMCALLOCATE
    // (mode, PMC_CPU_ANY, the flags), which for a process mode is the
    // backend's trial, released at once (PMC_OP_PMCRELEASE,
    // pmc_do_op_pmcrelease); its targets get PMCs of their own at attach
    // (backend/freebsd/mod.rs). The trial carries no PMC_F_DESCENDANTS:
    // the backend gives it to each target that is a tree; libpmc would
    // pass it as given, which pmc_do_op_pmcallocate accepts.
    accepts(
        s,
        &[
            (Mode::TC, Flags::CALLCHAIN, Cpu::Any),
            (Mode::TC, Flags::DESCENDANTS, Cpu::Any),
            (Mode::TC, Flags::EV_PMU, Cpu::Any),
        ],
        &format!(
            "ALLOCATE TC cpu=ANY flags={c:#x} -> #0; RELEASE #0; \
             ALLOCATE TC cpu=ANY -> #1; RELEASE #1; \
             ALLOCATE TC cpu=ANY flags={e:#x} -> #2; RELEASE #2",
            c = Flags::CALLCHAIN.bits(),
            e = Flags::EV_PMU.bits()
        ),
    );
}

pub(super) fn allocate_accepts_the_system_counting_flags_hwpmc_accepts(s: &dyn Subject) {
    // As above: DESCENDANTS on a system mode has no targets to follow but
    // is accepted.
    //
    // hwpmc sees, per PMC: its PMC_OP_PMCALLOCATE on CPU 0 (libpmc.c
    // pmc_allocate; pmc_do_op_pmcallocate configures a system PMC at
    // once: "Configure global pmc's immediately"), which is the PMC's own,
    // and its PMC_OP_PMCRELEASE when dropped. DESCENDANTS, which has no
    // targets to follow here, is not passed on (libpmc would pass it).
    accepts(
        s,
        &[
            (Mode::SC, Flags::CALLCHAIN, Cpu::Id(0)),
            (Mode::SC, Flags::DESCENDANTS, Cpu::Id(0)),
            (Mode::SC, Flags::EV_PMU, Cpu::Id(0)),
        ],
        &format!(
            "ALLOCATE SC cpu=0 flags={c:#x} -> #0; RELEASE #0; \
             ALLOCATE SC cpu=0 -> #1; RELEASE #1; \
             ALLOCATE SC cpu=0 flags={e:#x} -> #2; RELEASE #2",
            c = Flags::CALLCHAIN.bits(),
            e = Flags::EV_PMU.bits()
        ),
    );
}

pub(super) fn allocate_accepts_the_sampling_flags_hwpmc_accepts(s: &dyn Subject) {
    // hwpmc sees the log configured once, before the first sampling PMC
    // (PMC_OP_CONFIGURELOG, libpmc.c pmc_configure_logfile: hwpmc_mod.c
    // pmc_start refuses a system sampling PMC without one,
    // PMC_F_NEEDS_LOGFILE); then per PMC its PMC_OP_PMCALLOCATE as
    // libpmc.c pmc_allocate sends it (DESCENDANTS aside, as above): a TS's
    // is the trial, released at once; an SS's is its own, on CPU 0,
    // released when dropped after its records' last drain
    // (PMC_OP_FLUSHLOG: hwpmc_logging.c pmclog_flush writes out the
    // owner's buffer).
    let (c, u, e) = (
        Flags::CALLCHAIN.bits(),
        Flags::USERCALLCHAIN.bits(),
        Flags::EV_PMU.bits(),
    );
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
        &format!(
            "CONFIGURELOG; ALLOCATE SS cpu=0 flags={c:#x} -> #0; FLUSHLOG; RELEASE #0; \
             ALLOCATE TS cpu=ANY flags={cu:#x} -> #1; RELEASE #1; \
             ALLOCATE SS cpu=0 flags={cu:#x} -> #2; FLUSHLOG; RELEASE #2; \
             ALLOCATE TS cpu=ANY flags={e:#x} -> #3; RELEASE #3; \
             ALLOCATE SS cpu=0 flags={e:#x} -> #4; FLUSHLOG; RELEASE #4",
            cu = c | u
        ),
    );
}

pub(super) fn allocate_accepts_the_log_flags_on_process_modes(s: &dyn Subject) {
    // The log first (hwpmc_mod.c pmc_do_op_pmcallocate sets
    // PMC_F_NEEDS_LOGFILE with LOG_PROCEXIT or LOG_PROCCSW), then the
    // trial with those flags (DESCENDANTS aside, as above), released.
    accepts(
        s,
        &[(
            Mode::TC,
            Flags::DESCENDANTS | Flags::LOG_PROCEXIT | Flags::LOG_PROCCSW,
            Cpu::Any,
        )],
        &format!(
            "CONFIGURELOG; ALLOCATE TC cpu=ANY flags={:#x} -> #0; RELEASE #0",
            (Flags::LOG_PROCEXIT | Flags::LOG_PROCCSW).bits()
        ),
    );
}

pub(super) fn allocate_rejects_what_hwpmc_rejects_with_einval(s: &dyn Subject) {
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
    // libpmc.c pmc_allocate checks only that the mode exists and sends the
    // rest to PMC_OP_PMCALLOCATE, where each of these returns EINVAL
    // before pmc_allocate_pmc_descriptor: hwpmc keeps nothing of them.
    // pmc decides them itself in the same order (pmc/validate.rs), so no
    // request reaches hwpmc, and none may: a refusal let through would
    // be an ALLOCATE here.
    requests(s, "");
}

pub(super) fn a_cpu_beyond_the_machine_is_einval(s: &dyn Subject) {
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
    // hwpmc_mod.c pmc_do_op_pmcallocate returns that EINVAL ("Requested
    // CPU must be valid") before it allocates anything; pmc decides it
    // first (pmc/validate.rs), so hwpmc is asked nothing.
    requests(s, "");
}

pub(super) fn an_offline_cpu_is_enxio_before_the_flag_checks(s: &dyn Subject) {
    // hwpmc_mod.c pmc_do_op_pmcallocate: a system PMC on a CPU that is not
    // active → ENXIO, checked before the flags.
    s.set_online(1, false);
    let e = |mode, flags| errno(pmc(s, mode, flags, Cpu::Id(1)));
    assert_eq!(e(Mode::SC, Flags::empty()), libc::ENXIO);
    assert_eq!(e(Mode::SS, Flags::empty()), libc::ENXIO);
    assert_eq!(e(Mode::SC, Flags::LOG_PROCCSW), libc::ENXIO);
    let offline = pmc(s, Mode::SC, Flags::empty(), Cpu::Id(1)).unwrap_err();
    assert_eq!(
        offline.reason(),
        Some(&Reason::OfflineCpu { cpu: 1 }),
        "{offline}"
    );
    // pmc_do_op_pmcallocate's ENXIO ("Check that an inactive CPU is not
    // being asked for") comes before any allocation; pmc decides it from
    // the active CPUs (pmc/validate.rs): hwpmc is asked nothing.
    requests(s, "");
    s.set_online(1, true);
    pmc(s, Mode::SC, Flags::empty(), Cpu::Id(1)).expect("back online");
    // Back online: the system PMC's PMC_OP_PMCALLOCATE on CPU 1 (libpmc.c
    // pmc_allocate), released as the PMC is dropped.
    requests(s, "ALLOCATE SC cpu=1 -> #0; RELEASE #0");
}

pub(super) fn an_unknown_event_name_is_einval(s: &dyn Subject) {
    // pmc_allocate(3): "[EINVAL] The event specification was not recognized."
    let e = s
        .owner()
        .allocate("no-such-event", Mode::TC, Flags::empty(), Cpu::Any)
        .unwrap_err();
    assert_eq!(e.errno(), libc::EINVAL, "{e}");
    assert!(e.to_string().contains("no-such-event"), "{e}");
}

pub(super) fn an_event_that_cannot_be_opened_fails_at_allocate_not_later(s: &dyn Subject) {
    // hwpmc_mod.c pmc_do_op_pmcallocate finds or configures the hardware at
    // allocate and fails there; process PMCs open counters only at attach.
    // EMFILE: an open failure no backend translates (an ENOENT from
    // perf_event_open is an event the PMU lacks, EOPNOTSUPP).
    let (owner, event) = (s.owner(), s.event());
    s.with_refused_opens(libc::EMFILE, &|| {
        for (mode, cpu) in [(Mode::TC, Cpu::Any), (Mode::SC, Cpu::Id(0))] {
            let e = owner
                .allocate_with_count(event, mode, Flags::empty(), cpu, 0)
                .unwrap_err();
            assert_eq!(e.errno(), libc::EMFILE, "{mode}: {e}");
        }
    });
    let p = tc(s);
    assert!(p.targets().is_empty(), "the trial leaves no target behind");
    assert_eq!(p.handles(), 0, "nor a handle");
}

pub(super) fn start_after_every_target_was_detached_is_esrch(s: &dyn Subject) {
    // hwpmc_mod.c pmc_start: with no targets, `PMC_F_ATTACH_DONE ? ESRCH :
    // pmc_attach_process(owner)`; pmc_detach_process clears ATTACH_DONE
    // when the last tree of a DESCENDANTS PMC goes.
    let other = s.spawn();
    let mut p = tc(s);
    p.attach(other).shown();
    p.detach(other).shown();
    assert_eq!(errno(p.start()), libc::ESRCH);
    assert!(p.targets().is_empty(), "start must not attach the owner");
    // The target's own PMC (PMCALLOCATE, PMCATTACH: libpmc.c pmc_allocate,
    // pmc_attach); the detach reads its last value and releases it
    // (PMC_OP_PMCRELEASE detaches: pmc_release_pmc_descriptor removes its
    // targets). pmc_start's ESRCH is pmc's: hwpmc is not asked to start.
    requests(
        s,
        &format!(
            "ALLOCATE TC cpu=ANY -> #0; RELEASE #0; ALLOCATE TC cpu=ANY -> #1; \
             ATTACH #1 pid={other}; READ #1; RELEASE #1"
        ),
    );
    let mut q = tc(s);
    q.start().shown();
    q.stop().shown();
    q.detach(0).shown();
    assert_eq!(errno(q.start()), libc::ESRCH);
    // pmc_start attaches the owner (pmc_attach_process(owner), then
    // PMCSTART); PMCSTOP, then PMCRW reads the stopped value; the
    // detach's read and release; no start after it.
    requests(
        s,
        &format!(
            "ALLOCATE TC cpu=ANY -> #2; RELEASE #2; ALLOCATE TC cpu=ANY -> #3; \
             ATTACH #3 pid={me}; START #3; STOP #3; READ #3; READ #3; RELEASE #3",
            me = s.caller()
        ),
    );
    let mut d = pmc(s, Mode::TC, Flags::DESCENDANTS, Cpu::Any).shown();
    d.attach(other).shown();
    d.detach(other).shown();
    d.start().shown();
    assert_eq!(d.targets(), vec![s.caller()]);
    // Start after the last tree's detach attaches the owner, with
    // PMC_F_DESCENDANTS (pmc_detach_process cleared PMC_F_ATTACH_DONE).
    requests(
        s,
        &format!(
            "ALLOCATE TC cpu=ANY -> #4; RELEASE #4; \
             ALLOCATE TC cpu=ANY flags={d:#x} -> #5; ATTACH #5 pid={other}; READ #5; RELEASE #5; \
             ALLOCATE TC cpu=ANY flags={d:#x} -> #6; ATTACH #6 pid={me}; START #6",
            d = Flags::DESCENDANTS.bits(),
            me = s.caller()
        ),
    );
}

pub(super) fn exited_targets_leave_the_list_and_make_start_esrch(s: &dyn Subject) {
    // hwpmc_mod.c pmc_process_exit unlinks an exiting target from its PMCs;
    // pmc_start of a PMC without targets after an attach is ESRCH.
    let (a, b) = (s.spawn(), s.spawn());
    let mut p = tc(s);
    p.attach(a).shown();
    p.attach(b).shown();
    p.start().shown();
    s.exit(a);
    assert_eq!(p.targets(), vec![b], "{a} exited");
    assert_eq!(p.info().targets, vec![b]);
    p.stop().shown();
    s.exit(b);
    assert_eq!(errno(p.start()), libc::ESRCH, "every target exited");
    assert!(p.targets().is_empty());
    // One hwpmc PMC per target. An exit is the kernel's (hwpmc_mod.c
    // pmc_process_exit unlinks the target; its PMC stays its owner's):
    // no request. PMCSTOP of both (pmc_stop of a virtual PMC only marks
    // it STOPPED, targets or not) and their values read; the start finds
    // no live target and, where hwpmc's pmc_start would answer ESRCH
    // (PMC_F_ATTACH_DONE, no targets), reads each exited target's last
    // value and releases its PMC, starting nothing.
    requests(
        s,
        &format!(
            "ALLOCATE TC cpu=ANY -> #0; RELEASE #0; \
             ALLOCATE TC cpu=ANY -> #1; ATTACH #1 pid={a}; \
             ALLOCATE TC cpu=ANY -> #2; ATTACH #2 pid={b}; START #1; START #2; \
             STOP #1; STOP #2; READ #1; READ #2; \
             READ #1; RELEASE #1; READ #2; RELEASE #2"
        ),
    );
    let row = s.owner().pmcinfo().into_iter().find(|r| r.id == p.id());
    assert_eq!(
        row.map(|r| r.targets),
        Some(vec![]),
        "pmc_pmcinfo: the exited targets are gone from the row too"
    );
    // The same with one target, the PMC started and stopped before it
    // exited: no start of its old counter.
    let c = s.spawn();
    let mut q = tc(s);
    q.attach(c).shown();
    q.start().shown();
    q.stop().shown();
    s.exit(c);
    assert_eq!(errno(q.start()), libc::ESRCH, "its only target exited");
    assert_eq!(q.state(), State::Stopped);
    requests(
        s,
        &format!(
            "ALLOCATE TC cpu=ANY -> #3; RELEASE #3; ALLOCATE TC cpu=ANY -> #4; \
             ATTACH #4 pid={c}; START #4; STOP #4; READ #4; READ #4; RELEASE #4"
        ),
    );
}

pub(super) fn attaching_overlapping_descendant_trees_is_eexist_and_changes_nothing(
    s: &dyn Subject,
) {
    // hwpmc_mod.c pmc_attach_process walks the tree with
    // pmc_attach_one_process, EEXIST for a process already at the PMC's
    // row; the walk is then undone.
    let top = s.spawn();
    let mid = s.spawn_child(top);
    let low = s.spawn_child(mid);
    let mut p = pmc(s, Mode::TC, Flags::DESCENDANTS, Cpu::Any).shown();
    p.attach(mid).shown();
    assert_eq!(errno(p.attach(top)), libc::EEXIST, "a tree above a target");
    assert_eq!(p.targets(), vec![mid], "the failed attach left nothing");
    assert_eq!(errno(p.attach(low)), libc::EEXIST, "inside a tree");
    assert_eq!(p.targets(), vec![mid]);
    let mut q = tc(s);
    // The tree is hwpmc's to follow: the target's PMC carries
    // PMC_F_DESCENDANTS; the EEXISTs are decided before the kernel is
    // asked.
    requests(
        s,
        &format!(
            "ALLOCATE TC cpu=ANY -> #0; RELEASE #0; \
             ALLOCATE TC cpu=ANY flags={:#x} -> #1; ATTACH #1 pid={mid}; \
             ALLOCATE TC cpu=ANY -> #2; RELEASE #2",
            Flags::DESCENDANTS.bits()
        ),
    );
    q.attach(top).shown();
    q.attach(mid).shown();
    assert_eq!(q.targets(), vec![top, mid], "without DESCENDANTS, no trees");
    requests(
        s,
        &format!(
            "ALLOCATE TC cpu=ANY -> #3; ATTACH #3 pid={top}; ALLOCATE TC cpu=ANY -> #4; ATTACH #4 pid={mid}"
        ),
    );
}

pub(super) fn detach_is_esrch_for_unmonitored_and_einval_for_another_pmcs_process(s: &dyn Subject) {
    // hwpmc_mod.c pmc_do_op_pmcdetach: pfind failure → ESRCH;
    // pmc_detach_one_process: monitored by no PMC → ESRCH, by another PMC
    // of the owner → EINVAL.
    let (a, b) = (s.spawn(), s.spawn());
    let mut p = tc(s);
    let mut other = tc(s);
    other.attach(b).shown();
    p.attach(0).shown();
    assert_eq!(errno(p.detach(a)), libc::ESRCH, "live but unmonitored");
    assert_eq!(errno(p.detach(b)), libc::EINVAL, "another PMC's");
    assert_eq!(errno(p.detach(s.absent_pid())), libc::ESRCH, "no such pid");
    p.detach(0).shown();
    other.detach(b).shown();
    assert_eq!(errno(p.detach(b)), libc::ESRCH, "now nobody's");
    // The ESRCH and EINVAL are decided before the kernel is asked.
    requests(
        s,
        &format!(
            "ALLOCATE TC cpu=ANY -> #0; RELEASE #0; ALLOCATE TC cpu=ANY -> #1; RELEASE #1; \
             ALLOCATE TC cpu=ANY -> #2; ATTACH #2 pid={b}; \
             ALLOCATE TC cpu=ANY -> #3; ATTACH #3 pid={}; \
             READ #3; RELEASE #3; READ #2; RELEASE #2",
            s.caller()
        ),
    );
}

pub(super) fn get_msr_needs_a_process_pmc_attached_only_to_its_owner(s: &dyn Subject) {
    // hwpmc_mod.c PMC_OP_PMCGETMSR: DESCENDANTS, no target, several, or
    // one that is not the owner → EINVAL; a class without pcd_get_msr →
    // ENOSYS (the subject's event has no direct read).
    let other = s.spawn();
    let mut p = tc(s);
    assert_eq!(errno(p.get_msr()), libc::EINVAL, "no target");
    p.attach(other).shown();
    assert_eq!(errno(p.get_msr()), libc::EINVAL, "not the owner");
    p.attach(0).shown();
    assert_eq!(errno(p.get_msr()), libc::EINVAL, "two targets");
    let mut d = pmc(s, Mode::TC, Flags::DESCENDANTS, Cpu::Any).shown();
    d.attach(0).shown();
    assert_eq!(errno(d.get_msr()), libc::EINVAL, "DESCENDANTS");
    let mut q = tc(s);
    q.attach(0).shown();
    q.start().shown();
    let e = q.get_msr().unwrap_err();
    assert_eq!(e.errno(), libc::ENOSYS, "no direct read of this event: {e}");
    // The EINVALs are decided before the kernel is asked; ENOSYS is the
    // kernel's (the class has no pcd_get_msr).
    requests(
        s,
        &format!(
            "ALLOCATE TC cpu=ANY -> #0; RELEASE #0; ALLOCATE TC cpu=ANY -> #1; ATTACH #1 pid={other}; \
             ALLOCATE TC cpu=ANY -> #2; ATTACH #2 pid={me}; ALLOCATE TC cpu=ANY -> #3; RELEASE #3; \
             ALLOCATE TC cpu=ANY flags={d:#x} -> #4; ATTACH #4 pid={me}; \
             ALLOCATE TC cpu=ANY -> #5; RELEASE #5; ALLOCATE TC cpu=ANY -> #6; ATTACH #6 pid={me}; \
             START #6; GETMSR #6 = ENOSYS",
            me = s.caller(),
            d = Flags::DESCENDANTS.bits()
        ),
    );
    q.stop().shown();
    q.attach(other).shown();
}

pub(super) fn get_msr_returns_the_index_and_leaves_attach_open(s: &dyn Subject) {
    // hwpmc_mod.c PMC_OP_PMCGETMSR copies out pcd_get_msr's number and sets
    // PMC_PP_ENABLE_MSR_ACCESS in the *target process's* pp_flags.
    // pmc_attach_process's "disallow further ATTACHes" test reads that bit
    // (0x1) from the PMC's pm_flags instead, where it is PMC_F_UNUSED1
    // (sys/pmc.h), which PMCALLOCATE refuses in pa.pm_flags: the EPERM
    // never fires, and the attach goes on as any other. With two targets
    // the PMC no longer qualifies for GETMSR (EINVAL).
    let other = s.spawn();
    let (event, index) = s.direct_read_event();
    let mut p = s
        .owner()
        .allocate_with_count(event, Mode::TC, Flags::empty(), Cpu::Any, 0)
        .shown();
    p.start().shown();
    assert_eq!(p.get_msr().shown(), index);
    requests(
        s,
        &format!(
            "ALLOCATE TC cpu=ANY flags={f:#x} -> #0; RELEASE #0; \
             ALLOCATE TC cpu=ANY flags={f:#x} -> #1; ATTACH #1 pid={}; START #1; GETMSR #1",
            s.caller(),
            f = Flags::EV_PMU.bits()
        ),
    );
    p.stop().shown();
    p.attach(other).shown();
    let mut targets = p.targets();
    targets.sort_unstable();
    let mut expected = vec![s.caller(), other];
    expected.sort_unstable();
    assert_eq!(targets, expected);
    assert_eq!(errno(p.get_msr()), libc::EINVAL, "two targets");
}

pub(super) fn width_and_capabilities_are_the_class_row_of_cpuinfo(s: &dyn Subject) {
    // libpmc.c pmc_width / pmc_capabilities look the PMC's class up in the
    // cpuinfo classes and return its pm_width / pm_caps.
    let info = s.backend().cpuinfo().shown();
    let p = tc(s);
    let row = info
        .classes
        .iter()
        .find(|c| c.class == p.class())
        .unwrap_or_else(|| panic!("cpuinfo lists no class {}: {info:?}", p.class()));
    assert_eq!(p.width(), row.width);
    assert_eq!(p.capabilities(), row.caps);
    // Only pmc_allocate's request (the trial, released): pmc_width and
    // pmc_capabilities read the cpu_info pmc_init kept (PMC_OP_GETCPUINFO,
    // made once when the backend opened), no request of their own.
    requests(s, "ALLOCATE TC cpu=ANY -> #0; RELEASE #0");
}

pub(super) fn write_rw_set_need_a_stopped_pmc(s: &dyn Subject) {
    // PMC_OP_PMCRW with a new value and PMC_OP_PMCSETCOUNT on a RUNNING
    // PMC are EBUSY.
    let mut p = tc(s);
    p.start().shown();
    assert_eq!(errno(p.write(1)), libc::EBUSY);
    assert_eq!(errno(p.rw(1)), libc::EBUSY);
    assert_eq!(errno(p.set(1)), libc::EBUSY);
    // hwpmc sees the start (the owner attached, then PMCSTART) and nothing
    // of the refusals: hwpmc_mod.c pmc_do_op_pmcrw's "Writing a new value
    // is allowed only for 'STOPPED' PMCs" and PMC_OP_PMCSETCOUNT's
    // PMC_STATE_RUNNING check are EBUSY before any change, and pmc, which
    // keeps the written value and the count, decides them itself.
    requests(
        s,
        &format!(
            "ALLOCATE TC cpu=ANY -> #0; RELEASE #0; ALLOCATE TC cpu=ANY -> #1; \
             ATTACH #1 pid={}; START #1",
            s.caller()
        ),
    );
}

pub(super) fn tc_write_sets_the_value_but_set_and_the_allocate_count_do_not(s: &dyn Subject) {
    // TC's value is pm_savedvalue: PMCRW's new value sets it; PMCSETCOUNT
    // and allocate's count set pm_initial, which only a system PMC uses.
    let mut p = with_count(s, Mode::TC, Cpu::Any, 99);
    assert_eq!(p.reload_count(), 99, "pmcinfo shows the count");
    assert_eq!(p.read().shown(), 0, "the allocate count is not the value");
    p.set(42).shown();
    assert_eq!(p.read().shown(), 0, "set does not change a TC's value");
    assert_eq!(p.reload_count(), 42);
    let t0 = s.ceiling();
    p.start().shown();
    s.work(8);
    p.stop().shown();
    let counted = p.read().shown();
    assert_grew(s, 0, counted, 8, t0, "first run");
    assert_eq!(p.rw(7).shown(), counted, "rw returns the old value");
    assert_eq!(p.read().shown(), 7);
    let t1 = s.ceiling();
    p.start().shown();
    s.work(3);
    // The allocate count, set and the write stay in pmc (the kernel's
    // counter is only started, stopped and read).
    requests(
        s,
        &format!(
            "ALLOCATE TC cpu=ANY -> #0; RELEASE #0; ALLOCATE TC cpu=ANY -> #1; ATTACH #1 pid={}; \
             START #1; STOP #1; READ #1; START #1",
            s.caller()
        ),
    );
    assert_grew(
        s,
        7,
        p.read().shown(),
        3,
        t1,
        "counting continues from the write",
    );
    p.stop().shown();
    p.write(u64::MAX).shown();
    let t2 = s.ceiling();
    p.start().shown();
    s.work(2);
    assert_grew(
        s,
        u64::MAX,
        p.read().shown(),
        2,
        t2,
        "values wrap modulo 2^64",
    );
}

pub(super) fn ss_write_is_read_back_and_set_is_the_reload_count(s: &dyn Subject) {
    // System PMCRW writes and reads the counter; PMCSETCOUNT on a sampling
    // PMC sets pm_reloadcount, raised to pmc_mincount (1000).
    let mut p = with_count(s, Mode::SS, Cpu::Id(0), 5000);
    assert_eq!(p.read().shown(), 0);
    p.write(3).shown();
    assert_eq!(p.read().shown(), 3);
    assert_eq!(p.reload_count(), 5000, "write is not the reload count");
    p.set(10).shown();
    assert_eq!(p.reload_count(), 1000, "raised to pmc_mincount");
    assert_eq!(p.rw(4).shown(), 3);
    // hwpmc sees the log configured before the first system sampling PMC
    // (hwpmc_mod.c pmc_do_op_pmcallocate marks it PMC_F_NEEDS_LOGFILE;
    // libpmc.c pmc_configure_logfile), then the PMC's own
    // PMC_OP_PMCALLOCATE on CPU 0 (configured at once). The PMC never
    // started: its counter, write, reload count and rw are pmc's until a
    // start (HwpmcCounter::set_period gives hwpmc the count then), so no
    // PMCRW or PMCSETCOUNT, which libpmc would send (and hwpmc's
    // PMC_OP_PMCSETCOUNT raises to pmc_mincount as pmc did here).
    requests(s, "CONFIGURELOG; ALLOCATE SS cpu=0 -> #0");
}

pub(super) fn a_counter_that_never_ran_is_an_error_not_zero(s: &dyn Subject) {
    let mut p = tc(s);
    s.starve(true);
    p.start().shown();
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
    let detailed = p.read_detailed();
    assert!(
        matches!(detailed, Err(Error::NotCounted { .. })),
        "read_detailed too: {detailed:?}"
    );
    s.starve(false);
    s.work(10);
    let r = p.read_detailed().shown();
    assert!(r.multiplexed);
    assert_eq!(
        (r.raw, r.time_enabled, r.time_running, r.value),
        (10, 20, 10, 20)
    );
    p.stop().shown();
    // A running TS on its owner reads the events left in its period
    // (PMCRW's pcd_read_pmc): nothing counted leaves all of it, no error;
    // the full reading says that nothing ran.
    let mut t = with_count(s, Mode::TS, Cpu::Any, 1000);
    s.starve(true);
    t.start().shown();
    s.work(10);
    let r = t.read_detailed().shown();
    s.starve(false);
    assert!(r.multiplexed, "{r:?}");
    assert_eq!(r.value, 1000, "{r:?}");
}
