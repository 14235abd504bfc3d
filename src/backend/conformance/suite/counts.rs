//! The scenarios that check counts: exact where the subject's kernel is
//! simulated, bounded by what the work measurably ran elsewhere (see
//! `assert_counted` in `suite.rs`).

use super::*;

pub(super) fn several_targets_accumulate_and_detach_keeps_the_value(s: &dyn Subject) {
    // hwpmc_mod.c: a virtual PMC's value sums its targets; a detached
    // target's counts stay in pm_savedvalue. PMCRW reads the targets'
    // counts as of their last switch out (pmc_do_op_pmcrw), and a detach
    // drops what a target still on a CPU counted since its switch in
    // (pmc_unlink_target_process before pmc_process_csw_out): exact here
    // because `work` ends every target's slice.
    let other = s.spawn();
    let me = s.caller();
    let mut p = tc(s);
    p.attach(0).shown();
    p.attach(other).shown();
    let t0 = s.ceiling();
    p.start().shown();
    let both = Ran::start(s, &[me, other]);
    s.work(10);
    let ran_both = both.since(s);
    let t1 = s.ceiling();
    let first = p.read().shown();
    assert_counted(s, 0, first, 20, t0, ran_both, 2, "two targets");
    p.detach(other).shown();
    let caller = Ran::start(s, &[me]);
    s.work(10);
    // One hwpmc PMC per target; a detach stops, reads and releases the
    // target's (PMCRELEASE detaches it).
    requests(
        s,
        &format!(
            "ALLOCATE TC cpu=ANY -> #0; RELEASE #0; \
             ALLOCATE TC cpu=ANY -> #1; ATTACH #1 pid={me}; \
             ALLOCATE TC cpu=ANY -> #2; ATTACH #2 pid={other}; \
             START #1; START #2; READ #1; READ #2; STOP #2; READ #2; RELEASE #2"
        ),
    );
    let ran_caller = caller.since(s);
    let second = p.read().shown();
    // The detached target's counts stay: the caller's alone add to them
    // (both counted until the detach, at most the wall time each), and in
    // all the PMC counted at least what both ran, then the caller (a
    // detach that dropped them would fall short by what it ran).
    let stay = "the detached 10 stay";
    assert_counted(s, first, second, 10, t1, ran_caller, 2, stay);
    let ran = ran_both.zip(ran_caller).map(|(b, c)| b + c);
    assert_counted(s, 0, second, 30, t0, ran, 2, "in all");
}

pub(super) fn exited_targets_keep_their_counts(s: &dyn Subject) {
    // The counts an exited target had are in pm_savedvalue.
    let (a, b) = (s.spawn(), s.spawn());
    let mut p = tc(s);
    p.attach(a).shown();
    p.attach(b).shown();
    let t0 = s.ceiling();
    p.start().shown();
    let both = Ran::start(s, &[a, b]);
    s.work(10);
    let ran = both.since(s);
    s.exit(a);
    p.stop().shown();
    let value = p.read().shown();
    assert_counted(s, 0, value, 20, t0, ran, 2, &format!("{a}'s 10 stay"));
    // The exit is the kernel's (hwpmc_mod.c pmc_process_exit unlinks the
    // target, its PMC stays its owner's): the stop stops both targets'
    // PMCs and reads them, the exited one's last value included.
    requests(
        s,
        &format!(
            "ALLOCATE TC cpu=ANY -> #0; RELEASE #0; \
             ALLOCATE TC cpu=ANY -> #1; ATTACH #1 pid={a}; \
             ALLOCATE TC cpu=ANY -> #2; ATTACH #2 pid={b}; \
             START #1; START #2; STOP #1; STOP #2; READ #1; READ #2"
        ),
    );
}

pub(super) fn sc_counts_from_its_initial_value_and_a_write_lasts_until_start(s: &dyn Subject) {
    // pmc_start writes pm_initial to a counting system PMC; pmc_stop reads
    // the counter back into it; PMCSETCOUNT sets it; PMCRW writes the
    // counter, which the next pmc_start overwrites with pm_initial. A
    // system PMC counts on its CPU whoever runs there: a CPU's task-clock
    // is the time it is enabled, at most the wall time (the ceiling). The
    // counts set are far above what the work counts (1 s and 5 s live),
    // so that a start from anywhere else is out of bounds.
    let u = s.per_unit();
    let (initial, later) = (1_000_000 * u, 5_000_000 * u);
    // CPU 1, or CPU 0 on a machine with one (the arm64 guest's
    // instruction-exact boot).
    let cpu = if s.backend().online_cpus().contains(&1) {
        1
    } else {
        0
    };
    let mut p = with_count(s, Mode::SC, Cpu::Id(cpu), initial);
    let t0 = s.ceiling();
    p.start().shown();
    s.work(5);
    let first = p.read().shown();
    assert_counted(
        s,
        initial,
        first,
        5,
        t0,
        None,
        1,
        "starts at the allocate count",
    );
    p.stop().shown();
    let stopped = p.read().shown();
    assert_counted(s, first, stopped, 0, t0, None, 1, "stop");
    s.work(50);
    assert_eq!(p.read().shown(), stopped, "a stopped PMC does not count");
    p.write(7).shown();
    assert_eq!(
        p.read().shown(),
        7,
        "the counter holds the write while stopped"
    );
    let t1 = s.ceiling();
    p.start().shown();
    s.work(1);
    let resumed = p.read().shown();
    assert_counted(
        s,
        stopped,
        resumed,
        1,
        t1,
        None,
        1,
        "start resumes from pm_initial",
    );
    p.stop().shown();
    p.set(later).shown();
    let t2 = s.ceiling();
    p.start().shown();
    s.work(2);
    let set = p.read().shown();
    assert_counted(
        s,
        later,
        set,
        2,
        t2,
        None,
        1,
        "set is where start counts from",
    );
    // pm_initial stays in pmc: the kernel's PMC is allocated without a
    // count, read at each start to count from there.
    requests(
        s,
        "ALLOCATE SC cpu=1 -> #0; READ #0; START #0; READ #0; STOP #0; READ #0; READ #0; \
         START #0; READ #0; STOP #0; READ #0; READ #0; START #0; READ #0",
    );
}

/// Whether `left`, the events a sampling PMC had left before its next
/// sample (`1..=period`), is what `left_before` becomes after `lo..=hi`
/// more events: `left_before − n`, modulo the period, for some n there.
fn left_after(period: u64, left_before: u64, lo: u64, hi: u64, left: u64) -> bool {
    if !(1..=period).contains(&left) {
        return false;
    }
    // n ≡ left_before − left (mod period): the first such n from lo.
    let back = (left_before % period + period - left % period) % period;
    let n = lo + (back + period - lo % period) % period;
    n <= hi
}

pub(super) fn ts_read_is_the_events_left_in_the_period_or_the_written_value(s: &dyn Subject) {
    // PMC_OP_PMCRW on a virtual PMC: pcd_read_pmc (a sampling PMC's events
    // left before the overflow) when RUNNING and attached to the owner,
    // else pm_savedvalue, which only PMCRW writes.
    // 1000 units, 10 ms live, where the bounds of a count (the work, the
    // wall time around it) must stay within one period to say anything.
    // (The FreeBSD double reads 8000 left after 3000 events of a 10000
    // period, not 7000: to look into.)
    let scale = if s.has(Cap::ExactCounts) { 1 } else { 10 };
    let u = s.per_unit();
    let period = 1000 * scale * u;
    let me = s.caller();
    let mut p = with_count(s, Mode::TS, Cpu::Any, period);
    assert_eq!(p.read().shown(), 0, "nothing written yet");
    let t0 = s.ceiling();
    p.start().shown();
    // Right after the start, the whole period less what the start counted
    // (at most the wall time it took); the counts below are from here,
    // which leaves the start's own time out of their bounds.
    let t1 = s.ceiling();
    let started = p.read().shown();
    let (_, hi) = bounds(s, 0, t0, None, 1);
    assert!(
        left_after(period, period, 0, hi, started),
        "{started} events to the next sample right after the start: {period} less 0..={hi}"
    );
    let caller = Ran::start(s, &[me]);
    s.work(300 * scale);
    let ran = caller.since(s);
    let t2 = s.ceiling();
    let left = p.read().shown();
    // The most counted is the wall time between the readings.
    let (lo, hi) = bounds(s, 300 * scale, t1, ran, 1);
    assert!(
        left_after(period, started, lo, hi, left),
        "{left} events to the next sample: {started} less {lo}..={hi} counted"
    );
    let caller = Ran::start(s, &[me]);
    s.work(1000 * scale);
    let ran = caller.since(s);
    let later = p.read().shown();
    let (lo, hi) = bounds(s, 1000 * scale, t2, ran, 1);
    assert!(
        left_after(period, left, lo, hi, later),
        "one period later, about the same point: {later} after {left}, {lo}..={hi} counted"
    );
    p.stop().shown();
    assert_eq!(p.read().shown(), 0, "stopped: pm_savedvalue");
    p.write(5).shown();
    assert_eq!(p.read().shown(), 5);
    assert_eq!(p.reload_count(), period, "write is not the reload count");
    p.set(2 * period).shown();
    assert_eq!(p.reload_count(), 2 * period, "set is");
    // Made now, so that the work above is the caller's alone.
    let other = s.spawn();
    let mut q = with_count(s, Mode::TS, Cpu::Any, period);
    q.attach(other).shown();
    assert_eq!(q.rw(9).shown(), 0);
    assert_eq!(q.read().shown(), 9, "another process's: never the hardware");
    // hwpmc sees: the log configured before the first sampling PMC
    // (libpmc.c pmc_configure_logfile); the trial (libpmc.c pmc_allocate);
    // at start the owner's PMC attached (hwpmc_mod.c pmc_start attaches a
    // never-attached PMC's owner) and its reload count set before
    // PMC_OP_PMCSTART (PMC_OP_PMCSETCOUNT: pmc keeps the count and gives
    // it to each target's PMC, where libpmc would have passed it in
    // PMCALLOCATE's pm_count); the three running reads (PMC_OP_PMCRW, the
    // hardware's events left); PMCSTOP and the last drain of its records
    // (PMC_OP_FLUSHLOG). The stopped reads, the write and set, and q's
    // rw and read are pm_savedvalue and pm_reloadcount, which pmc keeps:
    // no request (libpmc would send PMCRW and PMCSETCOUNT for them). q is
    // a trial and, at attach, its target's PMC.
    requests(
        s,
        &format!(
            "CONFIGURELOG; ALLOCATE TS cpu=ANY -> #0; RELEASE #0; \
             ALLOCATE TS cpu=ANY -> #1; ATTACH #1 pid={me}; SETCOUNT #1 count={period}; \
             START #1; READ #1; READ #1; READ #1; STOP #1; FLUSHLOG; \
             ALLOCATE TS cpu=ANY -> #2; RELEASE #2; ALLOCATE TS cpu=ANY -> #3; ATTACH #3 pid={other}"
        ),
    );
}
