//! hwpmc's logging rules on synthetic neutral events. Expected values come
//! from FreeBSD's `sys/dev/hwpmc/hwpmc_mod.c` (functions cited per test),
//! not from this translator.

use super::*;
use crate::backend::event::{BackendEvent as E, Callchain};

fn rules(flags: Flags, sampling: bool, exit_slices: bool) -> Rules {
    Rules {
        pmcid: 0x0110_0003,
        flags,
        sampling,
        kernel_samples: false,
        system: false,
        exit_slices,
    }
}

fn run(rules: Rules, events: Vec<(u64, E)>) -> Vec<(u64, LogRecord)> {
    let mut out = Vec::new();
    Translator::new(rules).translate(events, &mut out);
    out
}

fn sample(user: bool, callchain: Option<Callchain>) -> E {
    E::Sample {
        pid: 10,
        tid: 11,
        cpu: 1,
        user,
        pc: 0x4000,
        callchain,
        user_stack: None,
    }
}

fn chain(pcs: Vec<u64>, userspace: bool) -> LogRecord {
    LogRecord::Callchain {
        pid: 10,
        tid: 11,
        pmcid: 0x0110_0003,
        cpu: 1,
        userspace,
        pcs,
    }
}

/// hwpmc_mod.c `pmc_process_interrupt`/`pmc_add_sample`: a sample without
/// a captured chain logs the interrupted pc alone, flagged user or kernel
/// (`PMC_CC_F_USERSPACE`); counting PMCs log no samples.
#[test]
fn a_sample_without_a_chain_is_its_pc() {
    let got = run(
        rules(Flags::empty(), true, false),
        vec![(5, sample(true, None)), (6, sample(false, None))],
    );
    assert_eq!(
        got,
        vec![
            (5, chain(vec![0x4000], true)),
            (6, chain(vec![0x4000], false))
        ]
    );
    assert!(
        run(
            rules(Flags::empty(), false, false),
            vec![(5, sample(true, None))]
        )
        .is_empty()
    );
}

/// hwpmc_mod.c `pmc_process_interrupt`: a user-mode sample logs the user
/// chain, a kernel-mode one the kernel chain; with PMC_F_USERCALLCHAIN
/// `pmc_capture_user_callchain` appends the user stack the kernel was
/// entered from to the kernel chain, as one record.
#[test]
fn usercallchain_appends_the_user_stack_to_a_kernel_chain() {
    let cc = || {
        Some(Callchain {
            kernel: vec![0xffff_8000, 0xffff_8010],
            user: vec![0x4000, 0x4100],
        })
    };
    let plain = run(
        rules(Flags::CALLCHAIN, true, false),
        vec![(1, sample(true, cc())), (2, sample(false, cc()))],
    );
    assert_eq!(
        plain,
        vec![
            (1, chain(vec![0x4000, 0x4100], true)),
            (2, chain(vec![0xffff_8000, 0xffff_8010], false)),
        ]
    );
    let with_user = run(
        rules(Flags::CALLCHAIN | Flags::USERCALLCHAIN, true, false),
        vec![(1, sample(true, cc())), (2, sample(false, cc()))],
    );
    assert_eq!(
        with_user,
        vec![
            (1, chain(vec![0x4000, 0x4100], true)),
            (
                2,
                chain(vec![0xffff_8000, 0xffff_8010, 0x4000, 0x4100], false)
            ),
        ]
    );
}

fn slice(pid: u32, tid: u32, cpu: u32, total: u64) -> E {
    E::Slice {
        pid,
        tid,
        cpu,
        total,
    }
}

/// hwpmc_mod.c `pmc_process_csw_out`: at each switch-out the increment is
/// `newvalue - PMC_PCPU_SAVED(cpu, ri)` (the value at this CPU's
/// switch-in), added to the process's `pp_pmcval` and logged with
/// `pmclog_process_proccsw(pm, pp, tmp, td)` under PMC_F_LOG_PROCCSW.
#[test]
fn proccsw_logs_each_slices_increment_per_thread_and_cpu() {
    let csw = |value, tid| LogRecord::ProcCsw {
        pmcid: 0x0110_0003,
        value,
        pid: 10,
        tid,
    };
    let events = vec![
        (1, slice(10, 11, 0, 100)),
        (2, slice(10, 12, 0, 7)),
        (3, slice(10, 11, 1, 40)),
        (4, slice(10, 11, 0, 250)),
    ];
    let got = run(rules(Flags::LOG_PROCCSW, false, true), events.clone());
    assert_eq!(
        got,
        vec![
            (1, csw(100, 11)),
            (2, csw(7, 12)),
            (3, csw(40, 11)),
            (4, csw(150, 11)),
        ]
    );
    assert!(
        run(rules(Flags::empty(), false, true), events).is_empty(),
        "slices are only logged under LOG_PROCCSW"
    );
}

/// hwpmc_mod.c `pmc_process_exit`: PROCEXIT carries the process's
/// `pp_pmcval`, the sum of its slices' increments
/// (`pmc_process_csw_out` adds each one), under PMC_F_LOG_PROCEXIT.
#[test]
fn procexit_is_the_sum_of_the_processs_slices() {
    let got = run(
        rules(Flags::LOG_PROCEXIT, false, true),
        vec![
            (1, slice(10, 11, 0, 100)),
            (2, slice(20, 21, 0, 5)),
            (3, slice(10, 12, 1, 30)),
            (4, slice(10, 11, 0, 160)),
            (
                5,
                E::ProcessExit {
                    pid: 10,
                    value: Some(999),
                },
            ),
        ],
    );
    assert_eq!(
        got,
        vec![(
            5,
            LogRecord::ProcExit {
                pmcid: 0x0110_0003,
                pid: 10,
                value: 190
            }
        )],
        "with exit slices the slices are the whole value"
    );
}

/// Without exit slices the value comes from what the backend reported
/// for the process (summed), else from the exit itself, else 0; and not
/// at all without PMC_F_LOG_PROCEXIT (`pmc_process_exit` tests the flag).
#[test]
fn procexit_without_slices_uses_the_reported_values() {
    let exit = |pid, value| (9, E::ProcessExit { pid, value });
    let procexit = |pid, value| {
        (
            9,
            LogRecord::ProcExit {
                pmcid: 0x0110_0003,
                pid,
                value,
            },
        )
    };
    let got = run(
        rules(Flags::LOG_PROCEXIT, false, false),
        vec![
            (1, E::ExitValue { pid: 10, value: 3 }),
            (2, E::ExitValue { pid: 10, value: 4 }),
            exit(10, Some(100)),
            exit(20, Some(100)),
            exit(30, None),
        ],
    );
    assert_eq!(
        got,
        vec![procexit(10, 7), procexit(20, 100), procexit(30, 0)]
    );
    assert!(run(rules(Flags::empty(), false, false), vec![exit(10, Some(1))]).is_empty());
}

/// hwpmc_mod.c: a process's end is SYSEXIT (`pmc_process_exit` →
/// `pmclog_process_sysexit`), another thread's THR_EXIT
/// (`pmc_process_thread_delete` → `pmclog_process_threadexit`), both for
/// sampling PMCs. No PROCEXIT for a sampling PMC, even under
/// PMC_F_LOG_PROCEXIT: `pmc_process_exit` calls `pmclog_process_procexit`
/// only when PMC_F_NEEDS_LOGFILE && PMC_IS_COUNTING_MODE.
#[test]
fn a_process_exit_is_sysexit_and_a_thread_exit_thr_exit() {
    let events = vec![
        (2, E::ThreadExit { pid: 10, tid: 12 }),
        (
            3,
            E::ProcessExit {
                pid: 10,
                value: Some(5),
            },
        ),
    ];
    let got = run(rules(Flags::LOG_PROCEXIT, true, false), events.clone());
    assert_eq!(
        got,
        vec![
            (2, LogRecord::ThrExit { tid: 12 }),
            (3, LogRecord::SysExit { pid: 10 }),
        ]
    );
    assert!(run(rules(Flags::empty(), false, false), events).is_empty());
}

/// hwpmc_mod.c `pmc_process_exit`: at the exit of any target — the
/// attached process or a descendant linked in by `pmc_process_fork` — a
/// counting PMC under PMC_F_LOG_PROCEXIT logs PROCEXIT with that
/// process's own `pp_pmcval` (hwpmc_logging.c `pmclog_process_procexit`
/// emits `pp->pp_pmcs[ri].pp_pmcval`); a sampling one logs no PROCEXIT
/// (the call is guarded by PMC_IS_COUNTING_MODE).
#[test]
fn a_descendants_exit_logs_procexit_only_for_a_counting_pmc() {
    let flags = Flags::LOG_PROCEXIT | Flags::DESCENDANTS;
    let events = vec![
        (1, slice(10, 10, 0, 40)),
        (2, slice(11, 11, 0, 25)),
        (
            3,
            E::ProcessExit {
                pid: 11,
                value: None,
            },
        ),
    ];
    assert_eq!(
        run(rules(flags, false, true), events.clone()),
        vec![(
            3,
            LogRecord::ProcExit {
                pmcid: 0x0110_0003,
                pid: 11,
                value: 25
            }
        )],
        "counting: the descendant's own value"
    );
    let sampled = run(rules(flags, true, true), events);
    assert!(
        !sampled
            .iter()
            .any(|(_, r)| matches!(r, LogRecord::ProcExit { .. })),
        "sampling: no PROCEXIT, got {sampled:?}"
    );
}

/// A thread's slices end with it: a later thread of the same id starts
/// from zero (hwpmc frees the thread descriptor in
/// `pmc_process_thread_delete`).
#[test]
fn a_reused_thread_id_starts_a_new_slice_history() {
    let mut t = Translator::new(rules(Flags::LOG_PROCCSW, false, true));
    let mut out = Vec::new();
    t.translate(
        vec![
            (1, slice(10, 12, 0, 50)),
            (2, E::ThreadExit { pid: 10, tid: 12 }),
        ],
        &mut out,
    );
    out.clear();
    // A second batch: state carries over between drains.
    t.translate(
        vec![(3, slice(10, 12, 0, 20)), (4, slice(10, 11, 0, 9))],
        &mut out,
    );
    let values: Vec<u64> = out
        .iter()
        .map(|(_, r)| match r {
            LogRecord::ProcCsw { value, .. } => *value,
            other => panic!("unexpected {other:?}"),
        })
        .collect();
    assert_eq!(values, vec![20, 9]);
}

/// Batches from several per-CPU streams come out in time order, equal
/// times in arrival order; the other events map field by field
/// (`pmclog_process_map_in`, `_procexec`, `_procfork`, `_threadcreate`,
/// `_dropnotify` in hwpmc_logging.c), a lost count saturating at u32.
#[test]
fn events_map_field_by_field_in_time_order() {
    let got = run(
        rules(Flags::empty(), true, false),
        vec![
            (7, E::Lost { count: 1 << 40 }),
            (
                3,
                E::Exec {
                    pid: 10,
                    path: "/bin/true".into(),
                    base: 0x7f00_0000,
                    dynaddr: 0x5555_4000,
                },
            ),
            (
                1,
                E::Mapping {
                    pid: 10,
                    start: 0x5555_0000,
                    len: 0,
                    pgoff: 0,
                    path: "/bin/sh".into(),
                },
            ),
            (
                3,
                E::Fork {
                    parent: 10,
                    child: 20,
                },
            ),
            (2, E::ThreadCreate { pid: 10, tid: 13 }),
        ],
    );
    assert_eq!(
        got,
        vec![
            (
                1,
                LogRecord::MapIn {
                    pid: 10,
                    start: 0x5555_0000,
                    path: "/bin/sh".into()
                }
            ),
            (
                2,
                LogRecord::ThrCreate {
                    tid: 13,
                    pid: 10,
                    flags: 0,
                    name: String::new()
                }
            ),
            (
                3,
                LogRecord::ProcExec {
                    pid: 10,
                    pmcid: 0x0110_0003,
                    entry: 0x7f00_0000,
                    dynaddr: 0x5555_4000,
                    path: "/bin/true".into()
                }
            ),
            (
                3,
                LogRecord::ProcFork {
                    oldpid: 10,
                    newpid: 20
                }
            ),
            (
                7,
                LogRecord::Dropnotify {
                    lost: Some(u32::MAX)
                }
            ),
        ]
    );
}

struct FakeMachine;

impl MappingSource for FakeMachine {
    fn kernel_mapping(&self) -> Option<E> {
        Some(mapping(u32::MAX, 0xffff_8000, "[kernel]"))
    }
    fn all_processes(&self) -> Vec<u32> {
        vec![1, 10]
    }
    fn process_mappings(&self, pid: u32) -> Vec<E> {
        vec![mapping(pid, 0x1000 * u64::from(pid), "/bin/x")]
    }
}

fn mapping(pid: u32, start: u64, path: &str) -> E {
    E::Mapping {
        pid,
        start,
        len: 0,
        pgoff: 0,
        path: path.into(),
    }
}

/// hwpmc_mod.c: attaching a sampling PMC logs the target's existing
/// mappings (`pmc_attach_one_process` → `pmc_log_process_mappings`), once;
/// the kernel's are logged once per log owner (`pmc_log_kernel_mappings`,
/// PMC_PO_INITIAL_MAPPINGS_DONE) and a system sampling PMC's first start
/// logs every process's (`pmc_log_all_process_mappings`, `po_logprocmaps`).
/// Counting PMCs log none.
#[test]
fn initial_mappings_follow_attach_kernel_and_system_rules() {
    let process = Rules {
        kernel_samples: true,
        ..rules(Flags::empty(), true, false)
    };
    let mut t = Translator::new(process);
    t.attached([10, 11]);
    let got = t.initial_mappings_claiming(5, &FakeMachine, || true, || panic!("not system"));
    assert_eq!(
        got,
        vec![
            (5, mapping(u32::MAX, 0xffff_8000, "[kernel]")),
            (5, mapping(10, 0xa000, "/bin/x")),
            (5, mapping(11, 0xb000, "/bin/x")),
        ]
    );
    assert!(
        t.initial_mappings_claiming(6, &FakeMachine, || false, || false)
            .is_empty(),
        "the attached processes' mappings are logged once, the kernel's claimed once per log"
    );

    let user_only = rules(Flags::empty(), true, false);
    let mut t = Translator::new(user_only);
    t.attached([10]);
    let got = t.initial_mappings_claiming(
        5,
        &FakeMachine,
        || panic!("a user-only PMC must not take the kernel's claim"),
        || panic!("not system"),
    );
    assert_eq!(got, vec![(5, mapping(10, 0xa000, "/bin/x"))]);

    let system = Rules {
        system: true,
        ..user_only
    };
    let got = Translator::new(system).initial_mappings_claiming(7, &FakeMachine, || false, || true);
    assert_eq!(
        got,
        vec![
            (7, mapping(1, 0x1000, "/bin/x")),
            (7, mapping(10, 0xa000, "/bin/x"))
        ]
    );

    let mut counting = Translator::new(Rules {
        kernel_samples: true,
        system: true,
        ..rules(Flags::empty(), false, false)
    });
    counting.attached([10]);
    assert!(
        counting
            .initial_mappings_claiming(5, &FakeMachine, || panic!("claimed"), || panic!("claimed"))
            .is_empty()
    );
}

/// hwpmc_mod.c stops the running PMC_F_NEEDS_LOGFILE PMCs before
/// `pmclog_deconfigure_log`: what such a PMC still produces reaches no log
/// (counted here), its initial mappings wait, and once its owner stops it
/// a new log gets its records again, slice increments continuing from the
/// totals seen meanwhile.
#[test]
fn a_closed_log_drops_the_pmcs_records_until_it_stops() {
    let mut t = Translator::new(Rules {
        kernel_samples: true,
        ..rules(Flags::LOG_PROCCSW, true, true)
    });
    t.attached([10]);
    t.log_closed();
    let mut out = Vec::new();
    t.translate(
        vec![(1, slice(10, 11, 0, 100)), (2, sample(true, None))],
        &mut out,
    );
    assert!(out.is_empty());
    assert_eq!(t.discarded(), 2);
    assert!(
        t.initial_mappings_claiming(3, &FakeMachine, || panic!("claimed"), || panic!("claimed"))
            .is_empty()
    );

    t.stopped();
    t.translate(vec![(4, slice(10, 11, 0, 130))], &mut out);
    assert_eq!(
        out,
        vec![(
            4,
            LogRecord::ProcCsw {
                pmcid: 0x0110_0003,
                value: 30,
                pid: 10,
                tid: 11
            }
        )]
    );
    assert_eq!(
        t.initial_mappings_claiming(5, &FakeMachine, || false, || false),
        vec![(5, mapping(10, 0xa000, "/bin/x"))]
    );
}

/// hwpmc_mod.c `pmc_process_exit`: the process's threads end with it (its
/// main thread has the pid's number here); other processes' threads keep
/// their slice history.
#[test]
fn a_process_exit_ends_its_main_threads_slices_only() {
    let mut t = Translator::new(rules(Flags::LOG_PROCCSW, false, true));
    let mut out = Vec::new();
    t.translate(
        vec![
            (1, slice(10, 10, 0, 100)),
            (2, slice(20, 20, 0, 50)),
            (
                3,
                E::ProcessExit {
                    pid: 10,
                    value: None,
                },
            ),
            // pid 10 reused: a new main thread from zero; 20 goes on.
            (4, slice(10, 10, 0, 30)),
            (5, slice(20, 20, 0, 80)),
        ],
        &mut out,
    );
    let values: Vec<(u32, u64)> = out
        .iter()
        .filter_map(|(_, r)| match r {
            LogRecord::ProcCsw { tid, value, .. } => Some((*tid, *value)),
            _ => None,
        })
        .collect();
    assert_eq!(values, vec![(10, 100), (20, 50), (10, 30), (20, 30)]);
}

/// With the log closed under the PMC, only this batch's records are
/// dropped: what the caller's batch already holds stays.
#[test]
fn a_closed_log_drops_only_the_new_records() {
    let mut t = Translator::new(rules(Flags::empty(), true, false));
    t.log_closed();
    let kept = (1, LogRecord::Userdata { value: 1 });
    let mut out = vec![kept.clone(), kept.clone()];
    t.translate(
        vec![
            (2, sample(true, None)),
            (3, E::ThreadExit { pid: 10, tid: 11 }),
        ],
        &mut out,
    );
    assert_eq!(out, vec![kept.clone(), kept]);
    assert_eq!(t.discarded(), 2);
}

/// A record hwpmc already wrote by its rules passes unchanged, in time
/// order with the rest, and is dropped like any other after a log close.
#[test]
fn a_record_the_kernel_logged_passes_through_unchanged() {
    let mut t = Translator::new(rules(Flags::LOG_PROCCSW, false, false));
    let csw = LogRecord::ProcCsw {
        pmcid: 7,
        value: 1234,
        pid: 10,
        tid: 11,
    };
    let mut out = Vec::new();
    t.translate(
        vec![
            (5, E::Logged(csw.clone())),
            (2, E::Logged(LogRecord::SysExit { pid: 3 })),
        ],
        &mut out,
    );
    // No slice arithmetic: the value is hwpmc's, not a difference.
    assert_eq!(
        out,
        vec![(2, LogRecord::SysExit { pid: 3 }), (5, csw.clone())]
    );
    t.log_closed();
    let mut out = Vec::new();
    t.translate(vec![(6, E::Logged(csw))], &mut out);
    assert!(out.is_empty());
    assert_eq!(t.discarded(), 1);
}

fn logged_map_in(pid: u32, start: u64, path: &str) -> E {
    E::Logged(LogRecord::MapIn {
        pid,
        start,
        path: path.into(),
    })
}

/// hwpmc writes a process's MAP_INs once (`pmc_attach_one_process` →
/// `pmc_log_process_mappings`, only while its owner has a log), so a log
/// that missed them — none configured, or closed and configured again —
/// gets the ones still in place from the translator, once: not those a
/// MAP_OUT (`pmclog_process_map_out`, `[start, end)`) removed, nor an
/// exited or exec'd process's. Records hwpmc wrote while a log was there
/// are not repeated.
#[test]
fn hwpmcs_mappings_reach_a_log_that_missed_them_once() {
    let mut t = Translator::new(rules(Flags::CALLCHAIN, true, false));
    let mut out = Vec::new();
    // Written into a log: nothing to repeat.
    t.translate(vec![(1, logged_map_in(10, 0x1000, "/bin/a"))], &mut out);
    assert_eq!(out.len(), 1);
    assert!(
        t.initial_mappings_claiming(2, &crate::backend::source::NoMappings, || false, || false)
            .is_empty()
    );
    // Then with no log: they, and those seen since, are owed to the next.
    let mut dropped = Vec::new();
    t.translate(
        vec![
            (3, logged_map_in(10, 0x8000, "/lib/libc.so.7")),
            (3, logged_map_in(10, 0x9000, "/lib/libm.so.5")),
            (3, logged_map_in(20, 0x1000, "/bin/b")),
            (3, logged_map_in(30, 0x1000, "/bin/c")),
            (
                4,
                E::Logged(LogRecord::MapOut {
                    pid: 10,
                    start: 0x9000,
                    end: 0xa000,
                }),
            ),
            (5, E::Logged(LogRecord::SysExit { pid: 20 })),
            (
                5,
                E::Logged(LogRecord::ProcExec {
                    pid: 30,
                    pmcid: 7,
                    entry: 0,
                    dynaddr: 0,
                    path: "/bin/d".into(),
                }),
            ),
        ],
        &mut dropped,
    );
    t.log_absent();
    let replayed =
        t.initial_mappings_claiming(6, &crate::backend::source::NoMappings, || false, || false);
    assert_eq!(
        replayed,
        vec![
            (6, logged_map_in(10, 0x1000, "/bin/a")),
            (6, logged_map_in(10, 0x8000, "/lib/libc.so.7")),
        ]
    );
    assert!(
        t.initial_mappings_claiming(7, &crate::backend::source::NoMappings, || false, || false)
            .is_empty(),
        "replayed once"
    );
    // A log closed under the PMC: the next one, after the stop, gets them.
    t.log_closed();
    assert!(
        t.initial_mappings_claiming(8, &crate::backend::source::NoMappings, || false, || false)
            .is_empty()
    );
    t.stopped();
    assert_eq!(
        t.initial_mappings_claiming(9, &crate::backend::source::NoMappings, || false, || false)
            .len(),
        2
    );
}
