//! The FreeBSD backend's samples and process records, end to end over the
//! kernel double: hwpmc's log (written as hwpmc_logging.c does) → the
//! backend's sources → the owner's log, read back with `LogReader`.

use std::sync::Arc;

use pmc_freebsd::Hwpmc;
use pmc_freebsd::double::{Image, KERNEL_PATH, KERNEL_START, KernelDouble, Machine};
use pmc_freebsd::transport::{Request, Transport};

use crate::backend::freebsd::FreeBsdBackend;
use crate::backend::freebsd::hwpmc_rules_tests::{
    CHILD, kernel_with_child, log_records, owner_with_log, page_faults,
};
use crate::log::LogRecord;
use crate::{Cpu, Flags, MemoryLog, Mode, Owner, Pmc};

struct Setup {
    kernel: Arc<KernelDouble>,
    owner: Owner,
    log: MemoryLog,
}

fn setup() -> Setup {
    let s = setup_without_log();
    s.owner.configure_logfile(s.log.clone()).unwrap();
    s
}

/// The double and an owner on it that has not configured its log yet.
fn setup_without_log() -> Setup {
    let kernel = kernel_with_child(
        Machine::intel_2cpu(),
        Image {
            path: "/usr/bin/yes".into(),
            mappings: vec![
                (0x20_0000, "/usr/bin/yes".into()),
                (0x8_0020_0000, "/lib/libc.so.7".into()),
            ],
        },
    );
    let hwpmc = Hwpmc::open(kernel.clone()).expect("the double opens");
    let owner = Owner::new(Arc::new(FreeBsdBackend::from_hwpmc(hwpmc)));
    let log = MemoryLog::new();
    Setup { kernel, owner, log }
}

impl Setup {
    fn pmc(&self, mode: Mode, flags: Flags, cpu: Cpu) -> Pmc {
        page_faults(&self.owner, mode, flags, cpu)
    }

    /// The owner's log after it was closed, without INITIALIZE.
    fn closed_log(&self) -> Vec<(u64, LogRecord)> {
        self.owner.close_logfile().unwrap();
        let events = self.log.events().unwrap();
        assert!(matches!(events[0].record, LogRecord::Initialize { .. }));
        events[1..]
            .iter()
            .map(|e| (e.timestamp, e.record.clone()))
            .collect()
    }
}

fn records(log: &[(u64, LogRecord)]) -> Vec<LogRecord> {
    log.iter().map(|(_, r)| r.clone()).collect()
}

#[test]
fn samples_reach_the_owners_log_with_the_pmcs_id_and_hwpmcs_mappings() {
    // hwpmc_mod.c pmc_attach_one_process: PMCATTACH, then for a sampling
    // PMC pmc_log_process_mappings' MAP_INs; pmc_start:
    // pmc_log_kernel_mappings once per log; pmc_process_samples →
    // hwpmc_logging.c pmclog_process_callchain.
    let s = setup();
    let mut p = s.pmc(Mode::TS, Flags::CALLCHAIN, Cpu::Any);
    p.attach(CHILD as u32).unwrap();
    p.start().unwrap();
    s.kernel
        .sample(1, CHILD, 4242, true, &[0x20_1000, 0x20_2000]);
    s.kernel.sample(0, 7, 7, true, &[0x1]); // another process: not ours
    p.stop().unwrap();
    assert_eq!(s.owner.stats(), (1, 0), "one CALLCHAIN written");
    let id = p.id().0;
    let log = records(&s.closed_log());
    let mut expected = vec![
        // The owner's own records, with its pmcid.
        LogRecord::PmcAttach {
            pmcid: id,
            pid: CHILD as u32,
            path: String::new(),
        },
        LogRecord::Callchain {
            pid: CHILD as u32,
            tid: 4242,
            pmcid: id,
            cpu: 1,
            userspace: true,
            pcs: vec![0x20_1000, 0x20_2000],
        },
        LogRecord::Closelog,
    ];
    // hwpmc's MAP_INs, in the order it wrote them, right after PMCATTACH.
    expected.splice(1..1, hwpmcs_mappings());
    let allocate = log.iter().position(|r| {
        matches!(
            r,
            LogRecord::PmcAllocateDyn { .. } | LogRecord::PmcAllocate { .. }
        )
    });
    if let Some(i) = allocate {
        expected.insert(0, log[i].clone());
    }
    assert_eq!(log, expected);
}

#[test]
fn without_callchain_hwpmc_logs_only_the_interrupted_pc() {
    let s = setup();
    let mut p = s.pmc(Mode::TS, Flags::empty(), Cpu::Any);
    p.attach(CHILD as u32).unwrap();
    p.start().unwrap();
    s.kernel
        .sample(0, CHILD, 4242, false, &[0xffff_ffff_8030_0000, 0x40_0000]);
    p.stop().unwrap();
    let chains: Vec<_> = records(&s.closed_log())
        .into_iter()
        .filter_map(|r| match r {
            LogRecord::Callchain { pcs, userspace, .. } => Some((pcs, userspace)),
            _ => None,
        })
        .collect();
    assert_eq!(chains, vec![(vec![0xffff_ffff_8030_0000], false)]);
}

#[test]
fn a_system_sampling_pmc_logs_the_samples_of_its_cpu() {
    let s = setup();
    let mut p = s.pmc(Mode::SS, Flags::CALLCHAIN, Cpu::Id(1));
    p.start().unwrap();
    s.kernel.sample(0, 7, 8, true, &[0x1]);
    s.kernel.sample(1, 9, 10, true, &[0x2, 0x3]);
    p.stop().unwrap();
    let chains: Vec<_> = records(&s.closed_log())
        .into_iter()
        .filter_map(|r| match r {
            LogRecord::Callchain {
                pid,
                cpu,
                pcs,
                pmcid,
                ..
            } => Some((pid, cpu, pcs, pmcid)),
            _ => None,
        })
        .collect();
    assert_eq!(chains, vec![(9, 1, vec![0x2, 0x3], p.id().0)]);
}

#[test]
fn proccsw_and_procexit_carry_hwpmcs_values() {
    // hwpmc_mod.c pmc_process_csw_out: PROCCSW with the slice's value for
    // a counting PMC with LOG_PROCCSW; pmc_process_exit: PROCEXIT with
    // pp_pmcval for a counting PMC that needs the log.
    let s = setup();
    let mut p = s.pmc(Mode::TC, Flags::LOG_PROCCSW | Flags::LOG_PROCEXIT, Cpu::Any);
    p.attach(CHILD as u32).unwrap();
    p.start().unwrap();
    s.kernel.run_slice(CHILD, 4242, 100);
    s.kernel.run_slice(CHILD, 4243, 50);
    s.kernel.advance(CHILD, 0, 7);
    s.kernel.exit_process(CHILD);
    let id = p.id().0;
    let log = records(&s.closed_log());
    let csw_exit: Vec<_> = log
        .into_iter()
        .filter(|r| matches!(r, LogRecord::ProcCsw { .. } | LogRecord::ProcExit { .. }))
        .collect();
    assert_eq!(
        csw_exit,
        vec![
            LogRecord::ProcCsw {
                pmcid: id,
                value: 100,
                pid: CHILD as u32,
                tid: 4242,
            },
            LogRecord::ProcCsw {
                pmcid: id,
                value: 50,
                pid: CHILD as u32,
                tid: 4243,
            },
            LogRecord::ProcExit {
                pmcid: id,
                pid: CHILD as u32,
                value: 157,
            },
        ]
    );
}

#[test]
fn a_stop_flushes_hwpmcs_buffer_into_the_owners_log() {
    // The double buffers records until FLUSHLOG or a full buffer, as
    // hwpmc's per-CPU buffers; a stop drains its source completely.
    let s = setup();
    let mut p = s.pmc(Mode::TS, Flags::CALLCHAIN, Cpu::Any);
    p.attach(CHILD as u32).unwrap();
    p.start().unwrap();
    s.kernel.sample(0, CHILD, CHILD, true, &[0x10]);
    assert!(s.kernel.log_pending() > 0, "still in hwpmc's buffer");
    p.stop().unwrap();
    assert_eq!(s.kernel.log_pending(), 0, "the stop flushed it");
    assert_eq!(s.owner.stats().0, 1, "and the owner wrote it");
}

#[test]
fn many_samples_come_through_whole_buffers_and_the_final_flush() {
    let s = setup();
    let mut p = s.pmc(Mode::TS, Flags::CALLCHAIN, Cpu::Any);
    p.attach(CHILD as u32).unwrap();
    p.start().unwrap();
    let n = 1000u64;
    for i in 0..n {
        s.kernel
            .sample((i % 2) as u32, CHILD, CHILD, true, &[i, i + 1, i + 2]);
    }
    p.stop().unwrap();
    let log = s.closed_log();
    let pcs: Vec<u64> = log
        .iter()
        .filter_map(|(_, r)| match r {
            LogRecord::Callchain { pcs, .. } => Some(pcs[0]),
            _ => None,
        })
        .collect();
    assert_eq!(pcs, (0..n).collect::<Vec<_>>(), "every sample, in order");
    // hwpmc's records keep hwpmc's order in time. The owner's own records
    // (INITIALIZE, PMCALLOCATE, PMCATTACH, CLOSELOG) are stamped when it
    // writes them, and hwpmc's kernel MAP_IN, converted from its ticks,
    // may precede the PMCATTACH written just before it arrived (the Linux
    // backend's initial MAP_INs, stamped with the attach, do the same).
    let kernel: Vec<_> = log
        .iter()
        .filter(|(_, r)| {
            !matches!(
                r,
                LogRecord::Initialize { .. }
                    | LogRecord::PmcAllocate { .. }
                    | LogRecord::PmcAllocateDyn { .. }
                    | LogRecord::PmcAttach { .. }
                    | LogRecord::Closelog
            )
        })
        .collect();
    let bad: Vec<_> = kernel.windows(2).filter(|w| w[0].0 > w[1].0).collect();
    assert!(bad.is_empty(), "hwpmc's records in time order: {bad:?}");
}

#[test]
fn timestamps_are_the_backends_clock() {
    // hwpmc stamps with pmc_rdtsc(); the backend converts with
    // INITIALIZE's pl_tsc_freq onto the CLOCK_MONOTONIC it stamps with.
    let s = setup();
    let mut p = s.pmc(Mode::TS, Flags::CALLCHAIN, Cpu::Any);
    p.attach(CHILD as u32).unwrap();
    p.start().unwrap();
    let before = s.owner.now();
    s.kernel.sample(0, CHILD, CHILD, true, &[0x10]);
    let after = s.owner.now();
    p.stop().unwrap();
    let t = s
        .closed_log()
        .into_iter()
        .find_map(|(t, r)| matches!(r, LogRecord::Callchain { .. }).then_some(t))
        .unwrap();
    // The conversion's anchor is read just after CONFIGURELOG: allow the
    // time between the two.
    let slack = 50_000_000;
    assert!(
        before.saturating_sub(slack) <= t && t <= after + slack,
        "{before} ≤ {t} ≤ {after}"
    );
}

#[test]
fn a_zero_tsc_rate_stamps_records_when_they_are_read() {
    // hwpmc fills pl_tsc_freq in on x86 only: with 0 the ticks cannot be
    // converted, and a record's time is when the backend read it.
    let kernel = kernel_with_child(
        Machine {
            tsc_freq: 0,
            ..Machine::intel_2cpu()
        },
        Image {
            path: "/usr/bin/yes".into(),
            mappings: vec![],
        },
    );
    let hwpmc = Hwpmc::open(kernel.clone()).expect("the double opens");
    let (owner, log) = owner_with_log(Arc::new(FreeBsdBackend::from_hwpmc(hwpmc)));
    let mut p = page_faults(&owner, Mode::TS, Flags::CALLCHAIN, Cpu::Any);
    p.attach(CHILD as u32).unwrap();
    p.start().unwrap();
    kernel.sample(0, CHILD, CHILD, true, &[0x10]);
    let before_read = owner.now();
    p.stop().unwrap();
    let after_read = owner.now();
    owner.close_logfile().unwrap();
    let t = log
        .events()
        .unwrap()
        .into_iter()
        .find_map(|e| matches!(e.record, LogRecord::Callchain { .. }).then_some(e.timestamp))
        .expect("the sample");
    assert!(
        before_read <= t && t <= after_read,
        "{before_read} ≤ {t} ≤ {after_read}"
    );
}

#[test]
fn closing_the_owners_log_stops_the_hwpmc_pmc() {
    // hwpmc_mod.c PMC_OP_CONFIGURELOG(-1)/CLOSELOG: the running PMCs that
    // need the log stop. The owner's log close stops the hwpmc PMC the
    // same way, so a sample after it reaches no log.
    let s = setup();
    let mut p = s.pmc(Mode::TS, Flags::CALLCHAIN, Cpu::Any);
    p.attach(CHILD as u32).unwrap();
    p.start().unwrap();
    s.owner.close_logfile().unwrap();
    let second = MemoryLog::new();
    s.owner.configure_logfile(second.clone()).unwrap();
    s.kernel.sample(0, CHILD, CHILD, true, &[0x10]);
    s.owner.flush_logfile().unwrap();
    let samples = second
        .events()
        .unwrap()
        .into_iter()
        .filter(|e| matches!(e.record, LogRecord::Callchain { .. }))
        .count();
    assert_eq!(samples, 0, "the hwpmc PMC was stopped");
    // Started again, it logs into the new log.
    p.stop().unwrap();
    p.start().unwrap();
    s.kernel.sample(0, CHILD, CHILD, true, &[0x10]);
    p.stop().unwrap();
    s.owner.flush_logfile().unwrap();
    let samples = second
        .events()
        .unwrap()
        .into_iter()
        .filter(|e| matches!(e.record, LogRecord::Callchain { .. }))
        .count();
    assert_eq!(samples, 1);
}

#[test]
fn two_pmcs_each_get_their_own_records() {
    let s = setup();
    let mut a = s.pmc(Mode::TS, Flags::CALLCHAIN, Cpu::Any);
    a.attach(CHILD as u32).unwrap();
    let mut b = s.pmc(Mode::SS, Flags::CALLCHAIN, Cpu::Id(0));
    a.start().unwrap();
    b.start().unwrap();
    // Seen by both: a's target ran on b's CPU.
    s.kernel.sample(0, CHILD, CHILD, true, &[0x10]);
    a.stop().unwrap();
    b.stop().unwrap();
    let mut ids: Vec<u32> = s
        .closed_log()
        .into_iter()
        .filter_map(|(_, r)| match r {
            LogRecord::Callchain { pmcid, .. } => Some(pmcid),
            _ => None,
        })
        .collect();
    ids.sort_unstable();
    let mut expected = vec![a.id().0, b.id().0];
    expected.sort_unstable();
    assert_eq!(ids, expected, "one CALLCHAIN each, with its own id");
}

#[test]
fn a_process_with_its_own_hwpmc_log_gets_ebusy_at_allocate() {
    // hwpmc_logging.c pmclog_configure_log: one log per owner process.
    let s = setup();
    let (fd, _pipe) = s.kernel.pipe();
    let other = Hwpmc::open(s.kernel.clone()).unwrap();
    other.configure_logfile(fd).unwrap();
    let e = s
        .owner
        .allocate("SOFT-PAGE_FAULT.ALL", Mode::TS, Flags::empty(), Cpu::Any)
        .unwrap_err();
    assert_eq!(e.errno(), libc::EBUSY, "{e}");
    // Counting needs no log.
    s.owner
        .allocate("SOFT-PAGE_FAULT.ALL", Mode::TC, Flags::empty(), Cpu::Any)
        .unwrap();
}

#[test]
fn the_drain_thread_sweeps_what_hwpmc_wrote_out_while_the_pmc_runs() {
    // A full kernel buffer reaches the pipe without a flush; the owner's
    // drain thread sweeps the source (Drain::Sweep, no FLUSHLOG) while the
    // PMC runs.
    let s = setup();
    let mut p = s.pmc(Mode::TS, Flags::CALLCHAIN, Cpu::Any);
    p.attach(CHILD as u32).unwrap();
    p.start().unwrap();
    let per = 16 + 16 + 8;
    // One buffer's worth and then some: the rest stays in the kernel.
    let n = (pmc_freebsd::double::LOG_BUFFER_BYTES / per + 2) as u64;
    for i in 0..n {
        s.kernel.sample(0, CHILD, CHILD, true, &[i]);
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while s.owner.stats().0 == 0 && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let swept = s.owner.stats().0;
    assert!(swept > 0, "swept while running");
    assert!(swept < n, "{swept}: only what hwpmc wrote out");
    assert!(s.kernel.log_pending() > 0, "no flush was asked");
    p.stop().unwrap();
    assert_eq!(s.owner.stats().0, n, "the rest at the stop");
}

#[test]
fn two_owners_on_one_backend_each_log_only_their_own_samples() {
    // One hwpmc log per process, read by the backend and sorted by PMC:
    // each owner's log holds its own PMC's records.
    let s = setup();
    let (other, other_log) = owner_with_log(s.owner.backend());
    let mut a = s.pmc(Mode::TS, Flags::CALLCHAIN, Cpu::Any);
    a.attach(CHILD as u32).unwrap();
    let mut b = page_faults(&other, Mode::SS, Flags::CALLCHAIN, Cpu::Id(1));
    a.start().unwrap();
    b.start().unwrap();
    s.kernel.sample(0, CHILD, CHILD, true, &[0xA]); // a's (its target, CPU 0)
    s.kernel.sample(1, 7, 7, true, &[0xB]); // b's (CPU 1)
    a.stop().unwrap();
    b.stop().unwrap();
    other.close_logfile().unwrap();
    let pcs = |log: Vec<(u64, LogRecord)>| -> Vec<u64> {
        log.into_iter()
            .filter_map(|(_, r)| match r {
                LogRecord::Callchain { pcs, .. } => Some(pcs[0]),
                _ => None,
            })
            .collect()
    };
    assert_eq!(pcs(s.closed_log()), vec![0xA]);
    let theirs = log_records(&other_log);
    assert_eq!(pcs(theirs), vec![0xB]);
}

#[test]
fn hwpmcs_log_is_deconfigured_with_the_backend() {
    let s = setup();
    let mut p = s.pmc(Mode::TS, Flags::CALLCHAIN, Cpu::Any);
    p.attach(CHILD as u32).unwrap();
    p.start().unwrap();
    p.stop().unwrap();
    let kernel = s.kernel.clone();
    assert_eq!(kernel.call(Request::FlushLog), Ok(()), "configured");
    drop(p);
    drop(s);
    // The owner's drain thread may hold it for the rest of a sweep.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while kernel.call(Request::FlushLog).is_ok() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    // pmclog_flush: EINVAL without a log file.
    assert_eq!(
        kernel.call(Request::FlushLog),
        Err(pmc_freebsd::Errno::EINVAL)
    );
    // And a new backend of the process configures it again.
    let hwpmc = Hwpmc::open(kernel.clone()).unwrap();
    let owner = Owner::new(Arc::new(FreeBsdBackend::from_hwpmc(hwpmc)));
    owner
        .allocate("SOFT-PAGE_FAULT.ALL", Mode::TS, Flags::empty(), Cpu::Any)
        .unwrap();
}

/// `release` reports what its final drain could not write: a sampling
/// PMC's last records go to a log whose destination is full, and the
/// release says so with the destination's errno, while the PMC goes
/// (and the log keeps the error for its close). A counting PMC, which
/// writes nothing, releases cleanly into the same log.
#[test]
fn release_returns_the_write_error_of_its_final_drain() {
    let s = setup();
    s.owner.close_logfile().unwrap();
    let full = std::fs::File::options()
        .write(true)
        .open("/dev/full")
        .expect("/dev/full");
    s.owner.configure_logfile(full).unwrap();
    let counting = s.pmc(Mode::TC, Flags::empty(), Cpu::Any);
    counting
        .release()
        .expect("a counting PMC logs nothing at release");

    let mut p = s.pmc(Mode::TS, Flags::CALLCHAIN, Cpu::Any);
    p.attach(CHILD as u32).unwrap();
    p.start().unwrap();
    s.kernel.sample(1, CHILD, 4242, true, &[0x20_1000]);
    let e = p.release().expect_err("the last records met a full disk");
    assert_eq!(e.os_errno(), Some(libc::ENOSPC), "{e}");
    assert!(s.owner.pmcinfo().is_empty(), "the PMC went anyway");
    let e = s
        .owner
        .close_logfile()
        .expect_err("the log keeps its error");
    assert_eq!(e.os_errno(), Some(libc::ENOSPC), "{e}");
}

/// The MAP_INs hwpmc wrote for CHILD at attach and the kernel's at the
/// first start (the double's image of it), in the order it writes them.
fn hwpmcs_mappings() -> Vec<LogRecord> {
    vec![
        LogRecord::MapIn {
            pid: CHILD as u32,
            start: 0x20_0000,
            path: "/usr/bin/yes".into(),
        },
        LogRecord::MapIn {
            pid: CHILD as u32,
            start: 0x8_0020_0000,
            path: "/lib/libc.so.7".into(),
        },
        LogRecord::MapIn {
            pid: u32::MAX,
            start: KERNEL_START,
            path: KERNEL_PATH.into(),
        },
    ]
}

fn map_ins(log: &[LogRecord]) -> Vec<LogRecord> {
    let mut v: Vec<LogRecord> = log
        .iter()
        .filter(|r| matches!(r, LogRecord::MapIn { .. }))
        .cloned()
        .collect();
    v.sort_by_key(|r| match r {
        LogRecord::MapIn { pid, start, .. } => (*pid, *start),
        _ => unreachable!(),
    });
    v
}

#[test]
fn a_log_configured_after_the_pmc_ran_gets_hwpmcs_mappings_before_its_samples() {
    // hwpmc writes the MAP_INs once (pmc_attach_one_process →
    // pmc_log_process_mappings; pmc_start → pmc_log_kernel_mappings). A TS
    // PMC on its owner needs no log (PMC_F_NEEDS_LOGFILE is for one on
    // another process; its samples go to profil(2), pmc_process_samples):
    // run once with no owner log, its MAP_INs were drained and dropped. The
    // log configured afterwards gets them before the samples of a PMC on
    // another process, which a report needs to name its pcs.
    const OWNER: i32 = 1000;
    let s = setup_without_log();
    s.kernel.set_image(
        OWNER,
        Image {
            path: "/usr/bin/owner".into(),
            mappings: vec![(0x40_0000, "/usr/bin/owner".into())],
        },
    );
    let mut mine = s.pmc(Mode::TS, Flags::CALLCHAIN, Cpu::Any);
    mine.attach(OWNER as u32).unwrap();
    mine.start().unwrap();
    s.kernel.sample(1, OWNER, OWNER, true, &[0x40_1000]);
    mine.stop().unwrap();
    assert_eq!(s.owner.stats(), (0, 0), "no log: nothing written");
    s.owner.configure_logfile(s.log.clone()).unwrap();
    let mut p = s.pmc(Mode::TS, Flags::CALLCHAIN, Cpu::Any);
    p.attach(CHILD as u32).unwrap();
    p.start().unwrap();
    s.kernel.sample(1, CHILD, CHILD, true, &[0x20_2000]);
    p.stop().unwrap();
    let log = records(&s.closed_log());
    let mut expected = hwpmcs_mappings();
    expected.push(LogRecord::MapIn {
        pid: OWNER as u32,
        start: 0x40_0000,
        path: "/usr/bin/owner".into(),
    });
    let mut expected_sorted = expected.clone();
    expected_sorted.sort_by_key(|r| match r {
        LogRecord::MapIn { pid, start, .. } => (*pid, *start),
        _ => unreachable!(),
    });
    assert_eq!(map_ins(&log), expected_sorted, "{log:#?}");
    let samples: Vec<usize> = log
        .iter()
        .enumerate()
        .filter(|(_, r)| matches!(r, LogRecord::Callchain { .. }))
        .map(|(i, _)| i)
        .collect();
    assert_eq!(samples.len(), 1, "the owner's went to profil: {log:#?}");
    // The child's mappings precede its sample. (The kernel's, which hwpmc
    // wrote once in the first PMC's stream, come with that stream.)
    let last_child_map_in = log
        .iter()
        .rposition(|r| matches!(r, LogRecord::MapIn { pid, .. } if *pid == CHILD as u32))
        .unwrap();
    assert!(last_child_map_in < samples[0], "{log:#?}");
}

#[test]
fn a_log_configured_again_after_a_close_gets_hwpmcs_mappings_once() {
    let s = setup();
    let mut p = s.pmc(Mode::TS, Flags::CALLCHAIN, Cpu::Any);
    p.attach(CHILD as u32).unwrap();
    p.start().unwrap();
    s.kernel.sample(1, CHILD, 4242, true, &[0x20_1000]);
    p.stop().unwrap();
    let first = records(&s.closed_log());
    assert_eq!(map_ins(&first), hwpmcs_mappings());
    let second = MemoryLog::new();
    s.owner.configure_logfile(second.clone()).unwrap();
    p.start().unwrap();
    s.kernel.sample(1, CHILD, 4242, true, &[0x20_2000]);
    p.stop().unwrap();
    s.owner.close_logfile().unwrap();
    let log: Vec<LogRecord> = second
        .events()
        .unwrap()
        .into_iter()
        .map(|e| e.record)
        .collect();
    assert_eq!(map_ins(&log), hwpmcs_mappings(), "{log:#?}");
}
