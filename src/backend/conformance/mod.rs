//! One semantic suite of [`Pmc`] over every backend (issue 11 §3).
//!
//! The scenarios are written once in `suite.rs` against a small
//! [`suite::Subject`] (make the backend, make work happen, say what it can
//! do) and instantiated here per backend with [`backend_suite!`], so
//! libtest names carry the backend as a module:
//! `backend::conformance::sim::…`, `backend::conformance::freebsd_double::…`.
//! Linux perf_event runs the same file on this machine from the live suite
//! (`tests/live/conformance.rs`, `conformance::linux::…`), gated by the
//! requirements of `src/probe/requirements.rs`.
//!
//! A scenario a backend cannot run (it needs a [`suite::Cap`] the backend
//! lacks) is listed as `not_applicable` with the reason and reported as
//! `ignored, n/a: …`; each backend's `every_scenario_is_listed_once…`
//! checks that lists and capabilities agree, so nothing is skipped that
//! could run and nothing is left out.

use crate::backend::Backend;
use crate::{Cpu, Error, Flags, Mode, Owner, Pmc, Reason, State};

mod subjects;
mod suite;

/// One module of tests per backend: each scenario it runs, each it cannot
/// run (`#[ignore]` with the reason), and the check of that listing.
macro_rules! backend_suite {
    (
        $module:ident,
        $subject:expr,
        runs: [$($run:ident),* $(,)?],
        not_applicable: [$($na:ident => $why:literal),* $(,)?] $(,)?
    ) => {
        mod $module {
            #[allow(unused_imports)]
            use super::subjects::*;
            use super::suite;

            $(
                #[test]
                fn $run() {
                    suite::run(&$subject, stringify!($run));
                }
            )*

            $(
                #[test]
                #[ignore = $why]
                fn $na() {
                    suite::run(&$subject, stringify!($na));
                }
            )*

            #[test]
            fn every_scenario_is_listed_once_with_its_capabilities() {
                suite::check_listing(
                    &$subject,
                    &[$(stringify!($run)),*],
                    &[$(stringify!($na)),*],
                );
            }
        }
    };
}

backend_suite!(
    sim,
    SimSubject::new(),
    runs: [
        start_attaches_the_caller_and_counts_only_while_running,
        stop_before_start_is_einval,
        attach_rules_follow_pmc_attach,
        a_system_pmc_neither_attaches_nor_detaches_nor_gives_its_msr,
        several_targets_accumulate_and_detach_keeps_the_value,
        allocate_accepts_the_process_counting_flags_hwpmc_accepts,
        allocate_accepts_the_system_counting_flags_hwpmc_accepts,
        allocate_accepts_the_sampling_flags_hwpmc_accepts,
        allocate_accepts_the_log_flags_on_process_modes,
        allocate_rejects_what_hwpmc_rejects_with_einval,
        a_cpu_beyond_the_machine_is_einval,
        an_offline_cpu_is_enxio_before_the_flag_checks,
        an_unknown_event_name_is_einval,
        an_event_that_cannot_be_opened_fails_at_allocate_not_later,
        start_after_every_target_was_detached_is_esrch,
        exited_targets_leave_the_list_and_make_start_esrch,
        exited_targets_keep_their_counts,
        attaching_overlapping_descendant_trees_is_eexist_and_changes_nothing,
        detach_is_esrch_for_unmonitored_and_einval_for_another_pmcs_process,
        get_msr_needs_a_process_pmc_attached_only_to_its_owner,
        get_msr_returns_the_index_and_leaves_attach_open,
        width_and_capabilities_are_the_class_row_of_cpuinfo,
        write_rw_set_need_a_stopped_pmc,
        tc_write_sets_the_value_but_set_and_the_allocate_count_do_not,
        sc_counts_from_its_initial_value_and_a_write_lasts_until_start,
        ts_read_is_the_events_left_in_the_period_or_the_written_value,
        ss_write_is_read_back_and_set_is_the_reload_count,
        a_counter_that_never_ran_is_an_error_not_zero,
        pmcinfo_lists_own_pmcs_with_their_state,
        pmcinfo_shows_a_system_pmc_on_its_cpu,
    ],
    not_applicable: [],
);

backend_suite!(
    freebsd_double,
    FreeBsdDoubleSubject::new(),
    runs: [
        start_attaches_the_caller_and_counts_only_while_running,
        stop_before_start_is_einval,
        attach_rules_follow_pmc_attach,
        a_system_pmc_neither_attaches_nor_detaches_nor_gives_its_msr,
        several_targets_accumulate_and_detach_keeps_the_value,
        allocate_accepts_the_process_counting_flags_hwpmc_accepts,
        allocate_accepts_the_system_counting_flags_hwpmc_accepts,
        allocate_rejects_what_hwpmc_rejects_with_einval,
        a_cpu_beyond_the_machine_is_einval,
        an_offline_cpu_is_enxio_before_the_flag_checks,
        an_unknown_event_name_is_einval,
        start_after_every_target_was_detached_is_esrch,
        exited_targets_leave_the_list_and_make_start_esrch,
        exited_targets_keep_their_counts,
        attaching_overlapping_descendant_trees_is_eexist_and_changes_nothing,
        detach_is_esrch_for_unmonitored_and_einval_for_another_pmcs_process,
        get_msr_needs_a_process_pmc_attached_only_to_its_owner,
        get_msr_returns_the_index_and_leaves_attach_open,
        width_and_capabilities_are_the_class_row_of_cpuinfo,
        write_rw_set_need_a_stopped_pmc,
        tc_write_sets_the_value_but_set_and_the_allocate_count_do_not,
        sc_counts_from_its_initial_value_and_a_write_lasts_until_start,
        pmcinfo_lists_own_pmcs_with_their_state,
        allocate_accepts_the_sampling_flags_hwpmc_accepts,
        allocate_accepts_the_log_flags_on_process_modes,
        an_event_that_cannot_be_opened_fails_at_allocate_not_later,
        ts_read_is_the_events_left_in_the_period_or_the_written_value,
        ss_write_is_read_back_and_set_is_the_reload_count,
        pmcinfo_shows_a_system_pmc_on_its_cpu,
    ],
    not_applicable: [
        a_counter_that_never_ran_is_an_error_not_zero =>
            "n/a: freebsd-hwpmc: hwpmc does not multiplex, a PMC owns its row while scheduled",
    ],
);

backend_suite!(
    portable,
    PortableSubject::new(),
    runs: [
        start_attaches_the_caller_and_counts_only_while_running,
        stop_before_start_is_einval,
        allocate_accepts_the_process_counting_flags_hwpmc_accepts,
        allocate_rejects_what_hwpmc_rejects_with_einval,
        a_cpu_beyond_the_machine_is_einval,
        an_unknown_event_name_is_einval,
        width_and_capabilities_are_the_class_row_of_cpuinfo,
        write_rw_set_need_a_stopped_pmc,
        tc_write_sets_the_value_but_set_and_the_allocate_count_do_not,
        pmcinfo_lists_own_pmcs_with_their_state,
    ],
    not_applicable: [
        attach_rules_follow_pmc_attach =>
            "n/a: portable: it counts only the calling process",
        a_system_pmc_neither_attaches_nor_detaches_nor_gives_its_msr =>
            "n/a: portable: it has no system (per-CPU) modes; it counts only the calling process",
        several_targets_accumulate_and_detach_keeps_the_value =>
            "n/a: portable: it counts only the calling process; it counts process CPU time, which other tests add to",
        allocate_accepts_the_system_counting_flags_hwpmc_accepts =>
            "n/a: portable: it has no system (per-CPU) modes",
        allocate_accepts_the_sampling_flags_hwpmc_accepts =>
            "n/a: portable: it has no sampling modes; it has no system (per-CPU) modes",
        allocate_accepts_the_log_flags_on_process_modes =>
            "n/a: portable: it has no process events to log",
        an_offline_cpu_is_enxio_before_the_flag_checks =>
            "n/a: portable: it has no system (per-CPU) modes; it has no per-CPU counters",
        an_event_that_cannot_be_opened_fails_at_allocate_not_later =>
            "n/a: portable: it has no open to make fail; it has no system (per-CPU) modes",
        start_after_every_target_was_detached_is_esrch =>
            "n/a: portable: it counts only the calling process",
        exited_targets_leave_the_list_and_make_start_esrch =>
            "n/a: portable: it counts only the calling process",
        exited_targets_keep_their_counts =>
            "n/a: portable: it counts only the calling process; it counts process CPU time, which other tests add to",
        attaching_overlapping_descendant_trees_is_eexist_and_changes_nothing =>
            "n/a: portable: it cannot follow descendants",
        detach_is_esrch_for_unmonitored_and_einval_for_another_pmcs_process =>
            "n/a: portable: it counts only the calling process",
        get_msr_needs_a_process_pmc_attached_only_to_its_owner =>
            "n/a: portable: it counts only the calling process",
        get_msr_returns_the_index_and_leaves_attach_open =>
            "n/a: portable: it has no user-space counter read; it counts only the calling process",
        sc_counts_from_its_initial_value_and_a_write_lasts_until_start =>
            "n/a: portable: it has no system (per-CPU) modes; it counts process CPU time, which other tests add to",
        ts_read_is_the_events_left_in_the_period_or_the_written_value =>
            "n/a: portable: it has no sampling modes; it counts process CPU time, which other tests add to; it counts only the calling process",
        ss_write_is_read_back_and_set_is_the_reload_count =>
            "n/a: portable: it has no sampling modes; it has no system (per-CPU) modes",
        a_counter_that_never_ran_is_an_error_not_zero =>
            "n/a: portable: it is never multiplexed",
        pmcinfo_shows_a_system_pmc_on_its_cpu =>
            "n/a: portable: it has no system (per-CPU) modes",
    ],
);
