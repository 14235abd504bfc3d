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

use super::{Backend, Cpu, Error, Flags, Mode, Owner, Pmc, Reason, State};

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
    /// The owner of this test's PMCs, on the backend's instance for it.
    fn owner(&self) -> &Owner;
    /// The backend's instance for this test.
    fn backend(&self) -> Backend {
        self.owner().backend().clone()
    }
    /// A counting event every target of a scenario counts [`Subject::work`] in.
    fn event(&self) -> &'static str;
    /// How much of the event one unit of work is (1 event, 1000 ns of CPU).
    fn per_unit(&self) -> u64 {
        1
    }
    /// Whether the subject offers a capability.
    fn has(&self, cap: Cap) -> bool;
    /// Makes at least `units` of work happen for every running target:
    /// the caller, the processes of [`Subject::spawn`], every CPU; and
    /// lets it end, as a process that works and then sleeps: on hwpmc a
    /// process is then switched out, so its counts are in `pm_savedvalue`
    /// (`pmc_process_csw_out`), which is what PMCRW reads of a PMC on
    /// another process (`pmc_do_op_pmcrw`).
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
    /// Runs `body` with every open failing with `errno`, then opens work
    /// again ([`Cap::InjectedOpenFailure`]). The body may run on another
    /// thread (a seccomp filter is per thread and stays on it).
    fn with_refused_opens(&self, errno: i32, body: &(dyn Fn() + Sync)) {
        let _ = body;
        unreachable!("with_refused_opens({errno}) needs Cap::InjectedOpenFailure")
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
    /// Where counts are not exact, the workload's own measure of the most
    /// the event can have counted for the subject's targets, as a reading
    /// that only grows, in the event's units: the bound of
    /// `assert_grew`. It is read from the kernel by the subject (a clock),
    /// not from the backend under test. `None` where counts are exact.
    fn ceiling(&self) -> Option<u64> {
        None
    }
    /// Where counts are not exact, the time process `pid` (for the caller:
    /// the calling thread) has run so far, in the event's units, as the
    /// subject reads it from its kernel itself, not through the backend
    /// under test: a reading that only grows, by at most what the event
    /// on `pid` counts meanwhile. `None` where counts are exact.
    fn cpu_time(&self, pid: u32) -> Option<u64> {
        let _ = pid;
        None
    }
    /// The kernel requests the backend made since the last call, one per
    /// line (`ALLOCATE TC cpu=ANY -> #1`, `ATTACH #1 pid=42`, `READ #1`,
    /// `… = EEXIST` when refused; `#n` numbers the PMCs the kernel
    /// allocated, in order), where the subject's kernel records them (the
    /// FreeBSD double); `None` where it does not, and nothing is checked.
    fn take_requests(&self) -> Option<Vec<String>> {
        None
    }
    /// The kernel's own GETPMCINFO rows of `cpu`, where the subject can
    /// ask its kernel (the FreeBSD double); `None` elsewhere.
    fn kernel_rows(&self, cpu: u32) -> Option<Vec<KernelRow>> {
        let _ = cpu;
        None
    }
}

/// One row of the kernel's GETPMCINFO (`struct pmc_info`) as the suite
/// compares it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelRow {
    /// `pm_rowdisp`: `FREE`, `THREAD` or `STANDALONE`.
    pub disposition: &'static str,
    /// `pm_ownerpid`, when a PMC is configured on the row.
    pub owner: Option<u32>,
    /// `pm_mode` of that PMC.
    pub mode: Option<Mode>,
    /// `pm_flags` of that PMC (`PMC_F_*` bits).
    pub flags: u32,
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
// The live instance derives its listing from the capabilities.
#[allow(dead_code)]
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
    println!(
        "{} scenarios: {} run, {} not applicable",
        SCENARIOS.len(),
        runs.len(),
        not_applicable.len()
    );
}

type R<T> = Result<T, Error>;

/// `unwrap` that panics with the error's message (the errno's name and
/// the advice), which is what a failed live run must show.
trait Shown<T> {
    fn shown(self) -> T;
}

impl<T> Shown<T> for R<T> {
    #[track_caller]
    fn shown(self) -> T {
        self.unwrap_or_else(|e| panic!("{e}"))
    }
}

fn pmc(s: &dyn Subject, mode: Mode, flags: Flags, cpu: Cpu) -> R<Pmc> {
    s.owner()
        .allocate_with_count(s.event(), mode, flags, cpu, 0)
}

fn tc(s: &dyn Subject) -> Pmc {
    pmc(s, Mode::TC, Flags::empty(), Cpu::Any).shown()
}

fn with_count(s: &dyn Subject, mode: Mode, cpu: Cpu, count: u64) -> Pmc {
    s.owner()
        .allocate_with_count(s.event(), mode, Flags::empty(), cpu, count)
        .shown()
}

/// `after − before` (modulo 2^64) is the work of `units`: exactly, or at
/// least the work and at most what the subject's own measure
/// ([`Subject::ceiling`]) grew by since `since`, its reading taken before
/// the counting that `before` ended (or before the start).
#[track_caller]
fn assert_grew(
    s: &dyn Subject,
    before: u64,
    after: u64,
    units: u64,
    since: Option<u64>,
    what: &str,
) {
    let delta = after.wrapping_sub(before);
    let expected = units * s.per_unit();
    if s.has(Cap::ExactCounts) {
        assert_eq!(delta, expected, "{what}: {before} → {after}");
        return;
    }
    let (Some(since), Some(now)) = (since, s.ceiling()) else {
        panic!("{what}: a subject without exact counts gives a ceiling");
    };
    let most = now - since;
    assert!(
        delta >= expected && delta <= most,
        "{what}: {before} → {after}, {delta} more: expected at least {expected} \
         and at most {most}, what the workload's own measure grew by"
    );
}

/// The CPU time `pids` ran, summed, where the subject measures it.
fn cpu_sum(s: &dyn Subject, pids: &[u32]) -> Option<u64> {
    pids.iter().map(|p| s.cpu_time(*p)).sum()
}

/// The targets of a counting window and their CPU time at its start,
/// read inside it (after the start).
struct Ran {
    pids: Vec<u32>,
    at: Option<u64>,
}

impl Ran {
    fn start(s: &dyn Subject, pids: &[u32]) -> Ran {
        Ran {
            pids: pids.to_vec(),
            at: cpu_sum(s, pids),
        }
    }

    /// What they ran since, read before the counting ends: the least
    /// their task-clock counted meanwhile.
    fn since(&self, s: &dyn Subject) -> Option<u64> {
        Some(cpu_sum(s, &self.pids)?.saturating_sub(self.at?))
    }
}

/// The least and the most a PMC on `targets` targets counted of `units`
/// of work over a window: exactly the work where counts are exact; else
/// at least the work and what the targets measurably ran then (`ran`,
/// [`Ran`]), and at most `targets` times what the subject's ceiling grew
/// by since `since` (each target counts at most the wall time; no upper
/// bound when `since` is `None`): `since` read before the reading that
/// begins the window, `ran` before the one that ends it, and this after.
#[track_caller]
fn bounds(
    s: &dyn Subject,
    units: u64,
    since: Option<u64>,
    ran: Option<u64>,
    targets: u64,
) -> (u64, u64) {
    let expected = units * s.per_unit();
    if s.has(Cap::ExactCounts) {
        return (expected, expected);
    }
    let least = expected.max(ran.unwrap_or(0));
    let Some(since) = since else {
        return (least, u64::MAX);
    };
    let now = s
        .ceiling()
        .expect("a subject without exact counts gives a ceiling");
    (least, targets * (now - since))
}

/// `after − before` (modulo 2^64) is within [`bounds`].
#[track_caller]
#[allow(clippy::too_many_arguments)]
fn assert_counted(
    s: &dyn Subject,
    before: u64,
    after: u64,
    units: u64,
    since: Option<u64>,
    ran: Option<u64>,
    targets: u64,
    what: &str,
) {
    let delta = after.wrapping_sub(before);
    let (least, most) = bounds(s, units, since, ran, targets);
    assert!(
        (least..=most).contains(&delta),
        "{what}: {before} → {after}, {delta} more: expected {least}..={most} ({units} units \
         of work, {ran:?} run by the {targets} target(s), the ceiling since {since:?})"
    );
}

/// Where the subject records its kernel's requests, those made since the
/// last check are `expected` (lines joined by `; `).
#[track_caller]
fn requests(s: &dyn Subject, expected: &str) {
    if let Some(got) = s.take_requests() {
        assert_eq!(
            got.join("; "),
            expected,
            "the kernel requests the backend made"
        );
    }
}

fn errno<T: std::fmt::Debug>(r: R<T>) -> i32 {
    r.unwrap_err().errno().raw()
}

// Explicit, so the live suite's `#[path]` inclusion finds it too.
#[path = "suite/scenarios.rs"]
mod scenarios;
use scenarios::*;
#[path = "suite/pmcinfo.rs"]
mod pmcinfo;
use pmcinfo::*;
#[path = "suite/counts.rs"]
mod counts;
use counts::*;

/// Every scenario (the hwpmc rules of `Pmc`; the simulator runs them all).
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
        needs: &[Cap::OtherProcesses],
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
        needs: &[Cap::OtherProcesses, Cap::ProcessExit],
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
        name: "get_msr_returns_the_index_and_leaves_attach_open",
        needs: &[Cap::DirectRead, Cap::OtherProcesses],
        run: get_msr_returns_the_index_and_leaves_attach_open,
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
        needs: &[Cap::SystemMode],
        run: sc_counts_from_its_initial_value_and_a_write_lasts_until_start,
    },
    Scenario {
        name: "ts_read_is_the_events_left_in_the_period_or_the_written_value",
        needs: &[Cap::Sampling, Cap::OtherProcesses],
        run: ts_read_is_the_events_left_in_the_period_or_the_written_value,
    },
    Scenario {
        name: "ss_write_is_read_back_and_set_is_the_reload_count",
        needs: &[Cap::Sampling, Cap::SystemMode],
        run: ss_write_is_read_back_and_set_is_the_reload_count,
    },
    Scenario {
        name: "a_counter_that_never_ran_is_an_error_not_zero",
        needs: &[Cap::Starvation, Cap::Sampling],
        run: a_counter_that_never_ran_is_an_error_not_zero,
    },
    Scenario {
        name: "pmcinfo_lists_own_pmcs_with_their_state",
        needs: &[],
        run: pmcinfo_lists_own_pmcs_with_their_state,
    },
    Scenario {
        name: "pmcinfo_shows_a_system_pmc_on_its_cpu",
        needs: &[Cap::SystemMode],
        run: pmcinfo_shows_a_system_pmc_on_its_cpu,
    },
];
