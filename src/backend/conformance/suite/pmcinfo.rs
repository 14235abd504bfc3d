//! The pmcinfo scenarios: our rows, and where the subject can ask its
//! kernel, the kernel's GETPMCINFO rows (see `suite.rs` for the table).

use super::*;

pub(super) fn pmcinfo_lists_own_pmcs_with_their_state(s: &dyn Subject) {
    // pmc_pmcinfo(3) (PMC_OP_GETPMCINFO): one row per PMC with its state
    // and targets; a released PMC is gone.
    let mut p = tc(s);
    let id = p.id();
    let row = || s.owner().pmcinfo().into_iter().find(|r| r.id == id);
    assert_eq!(row().expect("a pmcinfo row").state, State::Allocated);
    p.start().shown();
    let r = row().expect("a pmcinfo row");
    assert_eq!(
        (r.state, r.targets.clone()),
        (State::Running, vec![s.caller()])
    );
    // The kernel's rows (hwpmc_mod.c PMC_OP_GETPMCINFO, pcd_describe): the
    // caller is moved to the CPU asked (pmc_select_cpu), so its running
    // process PMC is on that CPU's row, with its owner, mode and flags,
    // and the row's disposition is THREAD.
    for cpu in s.backend().online_cpus() {
        let Some(rows) = s.kernel_rows(cpu) else {
            break;
        };
        let owned: Vec<&KernelRow> = rows.iter().filter(|k| k.owner.is_some()).collect();
        assert_eq!(owned.len(), 1, "cpu {cpu}: {rows:?}");
        assert_eq!(
            (owned[0].owner, owned[0].mode, owned[0].disposition),
            (Some(r.owner_pid), Some(r.mode), "THREAD"),
            "cpu {cpu}: the kernel's row of {r:?}"
        );
        assert_eq!(
            owned[0].flags & r.flags.bits(),
            r.flags.bits(),
            "cpu {cpu}: the PMC's flags are in the kernel's"
        );
    }
    drop(p);
    assert!(row().is_none(), "released PMCs leave the table");
    if let Some(rows) = s.kernel_rows(0) {
        assert!(
            rows.iter()
                .all(|k| k.owner.is_none() && k.disposition == "FREE"),
            "released in the kernel too: {rows:?}"
        );
    }
}

pub(super) fn pmcinfo_shows_a_system_pmc_on_its_cpu(s: &dyn Subject) {
    // A system PMC's pmcinfo row (on its CPU's list, pmc_pmcinfo(3))
    // names its mode, CPU and owner; in the
    // kernel (PMC_OP_GETPMCINFO) it is configured on one row of its CPU
    // only, whose disposition is STANDALONE (PMC_MARK_ROW_STANDALONE).
    let mut p = pmc(s, Mode::SC, Flags::empty(), Cpu::Id(0)).shown();
    let r = s
        .owner()
        .pmcinfo()
        .into_iter()
        .find(|r| r.id == p.id())
        .expect("a pmcinfo row");
    assert_eq!(
        (r.mode, r.cpu, r.owner_pid, r.state),
        (Mode::SC, Cpu::Id(0), s.caller(), State::Allocated)
    );
    p.start().shown();
    if let Some(rows) = s.kernel_rows(0) {
        let owned: Vec<&KernelRow> = rows.iter().filter(|k| k.owner.is_some()).collect();
        assert_eq!(owned.len(), 1, "{rows:?}");
        assert_eq!(
            (owned[0].owner, owned[0].mode, owned[0].disposition),
            (Some(s.caller()), Some(Mode::SC), "STANDALONE"),
            "the kernel's row of {r:?}"
        );
        let on_1 = s.kernel_rows(1).expect("rows of CPU 1 too");
        assert!(
            on_1.iter().all(|k| k.owner.is_none()),
            "not on CPU 1: {on_1:?}"
        );
    }
    p.stop().shown();
    drop(p);
    if let Some(rows) = s.kernel_rows(0) {
        assert!(rows.iter().all(|k| k.owner.is_none()), "{rows:?}");
    }
}
