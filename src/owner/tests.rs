//! The owner's log and drain, on simulated machines and fake sources:
//! each test has owners of its own, so nothing is shared between tests.

use std::sync::{Arc, Mutex};

use super::*;
use crate::backend::event::BackendEvent;
use crate::backend::sim::SimBackend;
use crate::backend::source::{DEFAULT_BUFFER_PAGES, Drain, MappingSource, SourceInfo};
use crate::log::LogRecord;
use crate::{Cpu, Flags, Mode};

fn sim_owner() -> Owner {
    Owner::new(SimBackend::new(2))
}

/// hwpmc_mod.c PMC_OP_CLOSELOG (what libpmc.c pmc_close_logfile
/// calls): EINVAL only when the process has no owner descriptor (no
/// PMCs, no log); an owner of PMCs gets pmclog_close's 0 with no log
/// configured. PMC_OP_CONFIGURELOG with a negative fd and no log is
/// EINVAL whatever the process owns.
#[test]
fn close_without_a_log_is_ok_for_an_owner_of_pmcs_and_deconfigure_is_einval() {
    let owner = sim_owner();
    let e = owner.close_logfile().expect_err("no PMCs, no log");
    assert_eq!(e.errno(), libc::EINVAL, "{e}");
    let pmc = owner
        .allocate("task-clock", Mode::TC, Flags::empty(), Cpu::Any)
        .expect("allocate on the simulator");
    assert!(!owner.log_configured());
    owner
        .close_logfile()
        .expect("CLOSELOG by an owner of PMCs without a log");
    let e = owner
        .deconfigure_logfile()
        .expect_err("CONFIGURELOG(-1) without a log");
    assert_eq!(e.errno(), libc::EINVAL, "{e}");
    drop(pmc);
    let e = owner.close_logfile().expect_err("its PMCs are gone");
    assert_eq!(e.errno(), libc::EINVAL, "{e}");
}

/// The ring size is a power of two of pages (perf_event_open(2): the
/// data area of an mmap is 2^n pages); anything else is EINVAL and
/// leaves the setting alone; the setting is the owner's.
#[test]
fn buffer_pages_are_a_power_of_two() {
    let owner = sim_owner();
    for bad in [0, 3, 24] {
        let e = owner.set_buffer_pages(bad).expect_err("not a power of two");
        assert_eq!(e.errno(), libc::EINVAL, "{bad}: {e}");
        assert_eq!(
            owner.buffer_pages(),
            DEFAULT_BUFFER_PAGES,
            "{bad} changed the setting"
        );
    }
    owner.set_buffer_pages(8).expect("a power of two");
    assert_eq!(owner.buffer_pages(), 8);
    assert_eq!(
        sim_owner().buffer_pages(),
        DEFAULT_BUFFER_PAGES,
        "per owner"
    );
}

/// Expectations from hwpmc_mod.c `pmc_syscall_handler` (FLUSHLOG,
/// WRITELOG, CONFIGURELOG(-1) without an owner/log: EINVAL; CLOSELOG
/// depends on the PMCs parallel tests hold, so it has its own tests),
/// hwpmc_logging.c `pmclog_configure_log` (EBUSY when a log is
/// present) and `pmclog_flush` (returns the kthread's `po_error`).
#[test]
fn log_operations_follow_hwpmc() {
    let owner = sim_owner();
    // No log.
    for (op, r) in [
        ("flush", owner.flush_logfile()),
        ("deconfigure", owner.deconfigure_logfile()),
        ("writelog", owner.writelog(1)),
    ] {
        let e = r.expect_err(op);
        assert_eq!(e.errno(), libc::EINVAL, "{op}: {e}");
        assert!(e.to_string().contains("configure_logfile"), "{e}");
    }

    // A second configure is EBUSY and leaves the first log in place.
    let first = MemoryLog::new();
    owner.configure_logfile(first.clone()).unwrap();
    let e = owner.configure_logfile(MemoryLog::new()).unwrap_err();
    assert_eq!(e.errno(), libc::EBUSY, "{e}");
    owner.writelog(7).unwrap();
    owner.close_logfile().unwrap();
    let kinds: Vec<u8> = first
        .events()
        .unwrap()
        .iter()
        .map(|e| e.record.kind())
        .collect();
    assert_eq!(
        kinds,
        vec![
            crate::log::kind::INITIALIZE,
            crate::log::kind::USERDATA,
            crate::log::kind::CLOSELOG
        ]
    );

    // ENOSPC on the destination reaches flush, with its errno.
    owner
        .configure_logfile(
            std::fs::File::options()
                .write(true)
                .open("/dev/full")
                .unwrap(),
        )
        .unwrap();
    owner.writelog(1).unwrap();
    let e = owner.flush_logfile().unwrap_err();
    assert_eq!(e.os_errno(), Some(libc::ENOSPC), "{e}");
    assert_eq!(e.errno(), libc::ENOSPC);
    // Closing still deconfigures, and reports the error too.
    assert_eq!(
        owner.close_logfile().unwrap_err().os_errno(),
        Some(libc::ENOSPC)
    );
    assert!(!owner.log_configured());

    // The log holds its own reference to the file: the caller's
    // descriptor can go.
    let dir = std::env::temp_dir().join(format!("pmc-log-fd-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("log");
    let file = std::fs::File::create(&path).unwrap();
    owner.configure_logfile_fd(&file).unwrap();
    drop(file);
    owner.writelog(0xfeed).unwrap();
    owner.close_logfile().unwrap();
    let bytes = std::fs::read(&path).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    let mut reader = crate::log::LogReader::from_memory();
    reader.feed(&bytes);
    let records: Vec<LogRecord> = reader.map(|e| e.unwrap().record).collect();
    assert!(
        records.contains(&LogRecord::Userdata { value: 0xfeed }),
        "{records:?}"
    );
    assert_eq!(records.last(), Some(&LogRecord::Closelog));
}

/// A drained batch goes in time order with its own timestamps, and
/// counts its samples (CALLCHAIN records) and lost samples (DROPNOTIFY
/// counts) in `stats`; without a log nothing is written nor counted.
/// `write` stamps CLOCK_MONOTONIC now (clock_gettime(2)).
#[test]
fn batches_are_written_in_time_order_and_counted() {
    let sim = SimBackend::new(1);
    let owner = Owner::new(sim.clone());
    let chain = |pid| LogRecord::Callchain {
        pid,
        tid: pid,
        pmcid: 0x100,
        cpu: 1,
        userspace: true,
        pcs: vec![0x1000],
    };
    let before = owner.stats();
    owner.write_batch(vec![
        (1, chain(1)),
        (2, LogRecord::Dropnotify { lost: Some(9) }),
    ]);
    owner.write_if_logging(|| chain(2));
    assert_eq!(owner.stats(), before, "nothing is counted without a log");

    let log = MemoryLog::new();
    owner.configure_logfile(log.clone()).unwrap();
    owner.write_batch(vec![
        (30, LogRecord::Dropnotify { lost: Some(3) }),
        (10, chain(1)),
        (30, chain(2)),
        (20, LogRecord::Dropnotify { lost: Some(4) }),
    ]);
    owner.write_batch(Vec::new());
    // Stamped with the owner's backend's clock: the simulator's.
    sim.advance(77_000);
    let (t0, t1) = (owner.now(), owner.now());
    assert_eq!(t0, 77_000);
    owner.writelog(5).unwrap();
    owner.close_logfile().unwrap();
    let after = owner.stats();
    assert_eq!((after.0 - before.0, after.1 - before.1), (2, 7));

    let events = log.events().unwrap();
    let got: Vec<(u64, LogRecord)> = events
        .iter()
        .filter(|e| {
            matches!(
                e.record,
                LogRecord::Callchain { .. }
                    | LogRecord::Dropnotify { .. }
                    | LogRecord::Userdata { .. }
            )
        })
        .map(|e| (e.timestamp, e.record.clone()))
        .collect();
    assert_eq!(
        got[..4],
        [
            (10, chain(1)),
            (20, LogRecord::Dropnotify { lost: Some(4) }),
            (30, LogRecord::Dropnotify { lost: Some(3) }),
            (30, chain(2)),
        ]
    );
    assert_eq!(got.len(), 5, "{got:?}");
    assert_eq!(got[4].1, LogRecord::Userdata { value: 5 });
    assert!(t0 <= got[4].0 && got[4].0 <= t1);
    // The raw bytes are the stream: INITIALIZE's header first
    // (_PMCLOG_TO_HEADER(INITIALIZE = 3, 112)).
    let bytes = log.bytes();
    assert_eq!(bytes.len() as u64, events.last().unwrap().end_offset);
    assert_eq!(
        bytes[..4],
        ((0xEEu32 << 24) | (3 << 16) | 112).to_ne_bytes()
    );
}

/// A source whose events the test hands it.
#[derive(Debug, Default)]
struct FakeSource {
    info: SourceInfo,
    queued: Mutex<Vec<(u64, BackendEvent)>>,
    drains: Mutex<Vec<Drain>>,
    stopped_by_log: Mutex<bool>,
}

impl FakeSource {
    fn new(info: SourceInfo) -> Arc<FakeSource> {
        Arc::new(FakeSource {
            info,
            ..FakeSource::default()
        })
    }

    fn push(&self, t: u64, event: BackendEvent) {
        self.queued.lock().unwrap().push((t, event));
    }
}

impl SampleSource for FakeSource {
    fn info(&self) -> SourceInfo {
        self.info.clone()
    }
    fn mappings(&self) -> &dyn MappingSource {
        &FakeMachine
    }
    fn drain(&self, how: Drain, out: &mut Vec<(u64, BackendEvent)>) -> bool {
        self.drains.lock().unwrap().push(how);
        out.append(&mut self.queued.lock().unwrap());
        false
    }
    fn stop_for_log_close(&self) {
        *self.stopped_by_log.lock().unwrap() = true;
    }
}

/// Processes 1 and 10–12, each with one mapping, and the kernel.
struct FakeMachine;

fn mapping(pid: u32, start: u64, path: &str) -> BackendEvent {
    BackendEvent::Mapping {
        pid,
        start,
        len: 0,
        pgoff: 0,
        path: path.into(),
    }
}

impl MappingSource for FakeMachine {
    fn kernel_mapping(&self) -> Option<BackendEvent> {
        Some(mapping(u32::MAX, 0xffff_8000, "[kernel]"))
    }
    fn all_processes(&self) -> Vec<u32> {
        vec![1]
    }
    fn process_mappings(&self, pid: u32) -> Vec<BackendEvent> {
        vec![mapping(pid, u64::from(pid) << 12, "/bin/x")]
    }
}

fn sample(pid: u32) -> BackendEvent {
    BackendEvent::Sample {
        pid,
        tid: pid,
        cpu: 0,
        user: true,
        pc: 0x1000 + u64::from(pid),
        callchain: None,
        user_stack: None,
    }
}

fn records(log: &MemoryLog) -> Vec<LogRecord> {
    log.events()
        .unwrap()
        .into_iter()
        .map(|e| e.record)
        .collect()
}

fn callchain_pids(log: &MemoryLog) -> Vec<u32> {
    records(log)
        .iter()
        .filter_map(|r| match r {
            LogRecord::Callchain { pid, .. } => Some(*pid),
            _ => None,
        })
        .collect()
}

/// hwpmc keeps PMCs, log and statistics per owner (`struct pmc_owner`:
/// `po_pmcs`, `po_file`, its own buffers): two owners in one process,
/// sampling at once, each write only their own records into their own log.
#[test]
fn two_owners_keep_their_pmcs_logs_and_statistics_apart() {
    let (a, b) = (sim_owner(), sim_owner());
    let (log_a, log_b) = (MemoryLog::new(), MemoryLog::new());
    a.configure_logfile(log_a.clone()).unwrap();
    b.configure_logfile(log_b.clone()).unwrap();
    let pmc_a = a
        .allocate("task-clock", Mode::TC, Flags::empty(), Cpu::Any)
        .unwrap();
    let (src_a, src_b) = (
        FakeSource::new(SourceInfo::default()),
        FakeSource::new(SourceInfo::default()),
    );
    let h_a = a
        .register_source(pmc_a.id().0, Mode::TS, Flags::empty(), src_a.clone())
        .unwrap();
    let h_b = b
        .register_source(7, Mode::TS, Flags::empty(), src_b.clone())
        .unwrap();
    for t in 1..=3 {
        src_a.push(t, sample(100));
        src_b.push(t, sample(200));
    }
    src_b.push(4, sample(200));
    h_a.drain_stopped();
    h_b.drain_stopped();
    a.flush_logfile().unwrap();
    b.flush_logfile().unwrap();
    assert_eq!(callchain_pids(&log_a), [100, 100, 100]);
    assert_eq!(callchain_pids(&log_b), [200, 200, 200, 200]);
    assert_eq!(a.stats(), (3, 0));
    assert_eq!(b.stats(), (4, 0));
    assert_eq!(a.pmcinfo().len(), 1);
    assert!(b.pmcinfo().is_empty(), "b has no PMCs");
    // One owner's close leaves the other's log and sources alone.
    a.close_logfile().unwrap();
    assert!(*src_a.stopped_by_log.lock().unwrap());
    assert!(!*src_b.stopped_by_log.lock().unwrap());
    assert!(b.log_configured());
    drop((h_a, h_b, pmc_a));
}

/// The drain thread sweeps a registered source with no stop or flush
/// (`Drain::Sweep`), and the source's last drain is final when its handle
/// goes (release, detach), before its counters close.
#[test]
fn the_drain_thread_sweeps_and_a_dropped_source_is_drained_to_the_end() {
    let owner = sim_owner();
    let log = MemoryLog::new();
    owner.configure_logfile(log.clone()).unwrap();
    let src = FakeSource::new(SourceInfo::default());
    let handle = owner
        .register_source(1, Mode::TS, Flags::empty(), src.clone())
        .unwrap();
    src.push(1, sample(5));
    let end = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while owner.stats().0 == 0 {
        assert!(std::time::Instant::now() < end, "no sweep in 10 s");
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    assert!(src.drains.lock().unwrap().contains(&Drain::Sweep));
    src.push(2, sample(6));
    drop(handle);
    assert_eq!(src.drains.lock().unwrap().last(), Some(&Drain::Final));
    owner.flush_logfile().unwrap();
    assert_eq!(callchain_pids(&log), [5, 6]);
    // Unregistered: nothing drains it any more.
    let drains = src.drains.lock().unwrap().len();
    src.push(3, sample(7));
    owner.flush_logfile().unwrap();
    assert_eq!(src.drains.lock().unwrap().len(), drains);
}

/// hwpmc_mod.c: a log's deconfiguration stops the PMCs that write into it
/// and what they still produce is dropped (`pmclog_deconfigure_log`);
/// once the PMC is stopped, a new log gets its records again.
#[test]
fn a_closed_log_drops_a_running_sources_records_until_its_pmc_stops() {
    let owner = sim_owner();
    owner.configure_logfile(MemoryLog::new()).unwrap();
    let src = FakeSource::new(SourceInfo::default());
    let handle = owner
        .register_source(1, Mode::TS, Flags::empty(), src.clone())
        .unwrap();
    owner.close_logfile().unwrap();
    assert!(*src.stopped_by_log.lock().unwrap());
    let log = MemoryLog::new();
    owner.configure_logfile(log.clone()).unwrap();
    src.push(10, sample(9));
    owner.flush_logfile().unwrap();
    assert!(callchain_pids(&log).is_empty(), "written after the close");
    handle.drain_stopped();
    src.push(20, sample(9));
    owner.flush_logfile().unwrap();
    assert_eq!(callchain_pids(&log), [9], "the stopped PMC logs again");
}

/// hwpmc_mod.c: the kernel's mappings are logged once per log owner
/// (`PMC_PO_INITIAL_MAPPINGS_DONE`, `pmc_log_kernel_mappings`), every
/// process's once per log for system sampling PMCs (`po_logprocmaps`,
/// `pmc_log_all_process_mappings`), then each PMC's attached processes
/// (`pmc_log_process_mappings`); a new log starts over.
#[test]
fn initial_mappings_are_claimed_once_per_log() {
    let owner = sim_owner();
    let system = |attached: Vec<u32>| SourceInfo {
        kernel_samples: true,
        system: true,
        attached,
        ..SourceInfo::default()
    };
    let mappings = |log: &MemoryLog| -> Vec<(u32, u64)> {
        records(log)
            .iter()
            .filter_map(|r| match r {
                LogRecord::MapIn { pid, start, .. } => Some((*pid, *start)),
                _ => None,
            })
            .collect()
    };
    for round in 0..2 {
        let log = MemoryLog::new();
        owner.configure_logfile(log.clone()).unwrap();
        let first = owner
            .register_source(
                1,
                Mode::SS,
                Flags::empty(),
                FakeSource::new(system(vec![11])),
            )
            .unwrap();
        let second = owner
            .register_source(
                2,
                Mode::SS,
                Flags::empty(),
                FakeSource::new(system(vec![12])),
            )
            .unwrap();
        owner.flush_logfile().unwrap();
        assert_eq!(
            mappings(&log),
            [
                (u32::MAX, 0xffff_8000),
                (1, 0x1000),
                (11, 0xb000),
                (12, 0xc000)
            ],
            "round {round}"
        );
        drop((first, second));
        owner.close_logfile().unwrap();
    }
}

/// What a profiler moves between threads: a PMC to the thread that starts
/// it, owners and errors anywhere.
#[test]
fn pmcs_owners_and_errors_cross_threads() {
    fn send<T: Send>() {}
    fn send_sync<T: Send + Sync>() {}
    send::<crate::Pmc>();
    send::<crate::PerCpu>();
    send_sync::<Owner>();
    send_sync::<MemoryLog>();
    send_sync::<crate::Error>();
    // An owner used from another thread is the same owner.
    let owner = sim_owner();
    let pmc = std::thread::scope(|s| {
        s.spawn(|| owner.allocate("task-clock", Mode::TC, Flags::empty(), Cpu::Any))
            .join()
            .unwrap()
    })
    .unwrap();
    assert_eq!(owner.pmcinfo()[0].id, pmc.id());
}

/// What a test unwinder was told, in order.
#[derive(Debug, Default)]
struct Told(Vec<String>);

/// A `StackUnwinder` that records its calls and "unwinds" a stack into
/// its pc, its fp and the stack's length: values the test can see again
/// in the CALLCHAIN record.
#[derive(Debug)]
struct RecordingUnwinder(Arc<Mutex<Told>>);

impl crate::sample::StackUnwinder for RecordingUnwinder {
    fn mapping(&mut self, pid: u32, m: &crate::sample::Mapping) {
        let line = format!(
            "map {pid} {:#x}+{:#x}@{:#x} {}",
            m.start, m.len, m.pgoff, m.path
        );
        self.0.lock().unwrap().0.push(line);
    }
    fn exec(&mut self, pid: u32) {
        self.0.lock().unwrap().0.push(format!("exec {pid}"));
    }
    fn fork(&mut self, parent: u32, child: u32) {
        self.0
            .lock()
            .unwrap()
            .0
            .push(format!("fork {parent} {child}"));
    }
    fn exit(&mut self, pid: u32) {
        self.0.lock().unwrap().0.push(format!("exit {pid}"));
    }
    fn unwind(&mut self, s: &crate::sample::StackSample<'_>) -> Vec<u64> {
        self.0
            .lock()
            .unwrap()
            .0
            .push(format!("unwind {} at {}", s.pid, s.time));
        if s.stack.bytes.is_empty() {
            return Vec::new();
        }
        vec![s.stack.regs.pc, s.stack.regs.fp, s.stack.bytes.len() as u64]
    }
}

fn stack_sample(pid: u32, bytes: usize, kernel_chain: Vec<u64>) -> BackendEvent {
    BackendEvent::Sample {
        pid,
        tid: pid,
        cpu: 0,
        user: true,
        pc: 0x4000,
        callchain: Some(crate::backend::event::Callchain {
            kernel: Vec::new(),
            user: kernel_chain,
        }),
        user_stack: Some(crate::sample::UserStack {
            regs: crate::sample::UserRegs {
                pc: 0x4000,
                sp: 0x7000,
                fp: 0x7777,
                lr: 0,
            },
            bytes: vec![0; bytes],
        }),
    }
}

/// The unwinding pass: the owner tells its unwinder each process's
/// mappings, forks, execs and exits in time order (whatever order the
/// source gave them), and logs the unwound frames as a sample's user
/// chain; an empty unwind keeps the kernel's chain; without an unwinder
/// the kernel's chain is logged.
#[test]
fn user_stacks_are_unwound_into_the_logged_chains_in_time_order() {
    let owner = sim_owner();
    let told = Arc::new(Mutex::new(Told::default()));
    owner.set_stack_unwinder(Some(Box::new(RecordingUnwinder(told.clone()))));
    let log = MemoryLog::new();
    owner.configure_logfile(log.clone()).unwrap();
    let src = FakeSource::new(SourceInfo::default());
    let handle = owner
        .register_source(1, Mode::TS, Flags::CALLCHAIN, src.clone())
        .unwrap();
    // Out of time order, as per-CPU rings interleave.
    src.push(30, stack_sample(5, 64, vec![0x4000, 0xbad]));
    src.push(
        10,
        BackendEvent::Mapping {
            pid: 5,
            start: 0x1000,
            len: 0x2000,
            pgoff: 0x1000,
            path: "/bin/x".into(),
        },
    );
    src.push(
        20,
        BackendEvent::Fork {
            parent: 5,
            child: 6,
        },
    );
    src.push(40, stack_sample(6, 0, vec![0x4000, 0x5000]));
    src.push(
        50,
        BackendEvent::Exec {
            pid: 6,
            path: "/bin/y".into(),
            base: 0,
            dynaddr: 0,
        },
    );
    src.push(
        60,
        BackendEvent::ProcessExit {
            pid: 5,
            value: None,
        },
    );
    owner.flush_logfile().unwrap();
    let chains: Vec<(u32, Vec<u64>)> = records(&log)
        .into_iter()
        .filter_map(|r| match r {
            LogRecord::Callchain { pid, pcs, .. } => Some((pid, pcs)),
            _ => None,
        })
        .collect();
    assert_eq!(
        chains,
        [(5, vec![0x4000, 0x7777, 64]), (6, vec![0x4000, 0x5000])]
    );
    assert_eq!(
        told.lock().unwrap().0,
        [
            "map 5 0x1000+0x2000@0x1000 /bin/x",
            "fork 5 6",
            "unwind 5 at 30",
            "unwind 6 at 40",
            "exec 6",
            "exit 5",
        ]
    );
    // No unwinder: the kernel's chain, and the stack is not kept.
    owner.set_stack_unwinder(None);
    src.push(70, stack_sample(5, 64, vec![0x4000, 0xbad]));
    owner.flush_logfile().unwrap();
    drop(handle);
    let last = records(&log)
        .into_iter()
        .filter_map(|r| match r {
            LogRecord::Callchain { pcs, .. } => Some(pcs),
            _ => None,
        })
        .next_back();
    assert_eq!(last, Some(vec![0x4000, 0xbad]));
    assert_eq!(
        told.lock().unwrap().0.len(),
        6,
        "told after it was replaced"
    );
}

/// A stack copy is a multiple of 8 bytes up to the kernel's u16 limit;
/// a bad size is EINVAL and leaves the setting alone.
#[test]
fn user_stack_sizes_follow_the_kernels_rules() {
    let owner = sim_owner();
    assert_eq!(owner.user_stack(), None);
    for bad in [0, 7, 12, 65536, u32::MAX] {
        let e = owner.set_user_stack(Some(bad)).expect_err("a bad size");
        assert_eq!(e.errno(), libc::EINVAL, "{bad}: {e}");
    }
    owner.set_user_stack(Some(8192)).unwrap();
    assert_eq!(owner.user_stack(), Some(8192));
    // The simulator copies no stacks: refused at allocate, not ignored.
    let e = owner
        .allocate("cpu-clock", Mode::TS, Flags::CALLCHAIN, Cpu::Any)
        .expect_err("a user-stack copy on the simulator");
    assert_eq!(e.errno(), libc::EOPNOTSUPP, "{e}");
    owner.set_user_stack(None).unwrap();
    assert_eq!(owner.user_stack(), None);
}

/// The owner's memo of the last parse answers as `spec::parse` does, for a
/// repeated text, another text, a text that fails and one after it.
#[test]
fn the_parse_memo_answers_as_a_fresh_parse() {
    let owner = sim_owner();
    for text in [
        "instructions,usr",
        "instructions,usr",
        "task-clock",
        "INSTRUCTIONS,usr",
        "instrutions",
        "instrutions",
        "instructions,usr",
        "sched:sched_switch,filter=prev_pid==1",
    ] {
        let memo = owner.parse_spec(text);
        let fresh = crate::spec::parse(text);
        assert_eq!(
            format!("{memo:?}"),
            format!("{fresh:?}"),
            "parse_spec({text:?})"
        );
        assert_eq!(memo.ok().map(|s| s.text), fresh.ok().map(|s| s.text));
    }
}

/// `MemoryLog::take_bytes` hands out each byte once: a reader fed the takes
/// in turn reads every record, a record split across two takes included,
/// and what was taken is gone from the log.
#[test]
fn a_memory_log_taken_in_parts_reads_whole() {
    let owner = sim_owner();
    let log = MemoryLog::new();
    owner.configure_logfile(log.clone()).unwrap();
    owner.writelog(1).unwrap();
    owner.flush_logfile().unwrap();
    let mut first = log.take_bytes();
    assert!(!first.is_empty());
    assert!(log.take_bytes().is_empty(), "taken once");
    assert!(log.bytes().is_empty(), "and gone from the log");
    owner.writelog(2).unwrap();
    owner.close_logfile().unwrap();
    // Split the first record between two feeds.
    let tail = first.split_off(first.len() / 2);
    let mut reader = crate::log::LogReader::from_memory();
    let mut userdata = Vec::new();
    for part in [first, tail, log.take_bytes()] {
        reader.feed(&part);
        while let crate::log::ReadState::Ok(e) = reader.read() {
            if let LogRecord::Userdata { value } = e.record {
                userdata.push(value);
            }
        }
    }
    assert_eq!(userdata, vec![1, 2]);
}

/// An unwinder that waits at every unwind until the test opens its gate:
/// a stage that falls behind.
#[derive(Debug)]
struct GatedUnwinder {
    open: Arc<(Mutex<bool>, std::sync::Condvar)>,
    unwound: Arc<Mutex<usize>>,
}

impl crate::sample::StackUnwinder for GatedUnwinder {
    fn mapping(&mut self, _pid: u32, _m: &crate::sample::Mapping) {}
    fn exec(&mut self, _pid: u32) {}
    fn fork(&mut self, _parent: u32, _child: u32) {}
    fn exit(&mut self, _pid: u32) {}
    fn unwind(&mut self, s: &crate::sample::StackSample<'_>) -> Vec<u64> {
        let (lock, opened) = &*self.open;
        let mut open = lock.lock().unwrap();
        while !*open {
            open = opened.wait(open).unwrap();
        }
        *self.unwound.lock().unwrap() += 1;
        vec![s.stack.regs.pc, 0x1234]
    }
}

/// Unwinding is off the drain's path: with the unwinder stuck, sweeps
/// still return and empty the source; the stage's queue holds at most its
/// bound of stack bytes, the samples past it are dropped and logged as
/// lost (DROPNOTIFY), and once the unwinder moves every queued sample is
/// logged with its unwound chain: logged + lost = taken.
#[test]
fn a_stuck_unwinder_neither_stalls_the_drain_nor_grows_its_queue() {
    let owner = sim_owner();
    let open = Arc::new((Mutex::new(false), std::sync::Condvar::new()));
    let unwound = Arc::new(Mutex::new(0));
    owner.set_stack_unwinder(Some(Box::new(GatedUnwinder {
        open: open.clone(),
        unwound: unwound.clone(),
    })));
    const STACK: usize = 1000;
    owner.inner.sources().unwinding.set_limit(3 * STACK);
    let log = MemoryLog::new();
    owner.configure_logfile(log.clone()).unwrap();
    let src = FakeSource::new(SourceInfo::default());
    let handle = owner
        .register_source(1, Mode::TS, Flags::CALLCHAIN, src.clone())
        .unwrap();
    let mut taken = 0;
    for round in 0..4u64 {
        for i in 0..5 {
            src.push(100 * round + i, stack_sample(7, STACK, vec![0x4000]));
            taken += 1;
        }
        // Returns although no unwind can finish, the source emptied.
        owner.sweep();
        assert!(src.queued.lock().unwrap().is_empty(), "round {round}");
        let queued = owner.inner.sources().unwinding.queued_bytes();
        assert!(queued <= 3 * STACK, "round {round}: {queued} bytes queued");
    }
    assert_eq!(*unwound.lock().unwrap(), 0, "the gate held");
    {
        let (lock, opened) = &*open;
        *lock.lock().unwrap() = true;
        opened.notify_all();
    }
    owner.flush_logfile().unwrap();
    let (mut chains, mut lost) = (Vec::new(), 0);
    for r in records(&log) {
        match r {
            LogRecord::Callchain { pcs, .. } => chains.push(pcs),
            LogRecord::Dropnotify { lost: Some(n) } => lost += u64::from(n),
            _ => {}
        }
    }
    assert_eq!(chains.len(), 3, "the bound's worth of samples: {chains:x?}");
    assert!(
        chains.iter().all(|pcs| pcs == &[0x4000, 0x1234]),
        "{chains:x?}"
    );
    assert_eq!(lost, taken - 3);
    // The queue emptied: the next samples all fit again.
    for i in 0..3 {
        src.push(1000 + i, stack_sample(7, STACK, vec![0x4000]));
    }
    owner.flush_logfile().unwrap();
    drop(handle);
    let after = records(&log)
        .iter()
        .filter(|r| matches!(r, LogRecord::Callchain { .. }))
        .count();
    assert_eq!(after, 6);
    assert_eq!(*unwound.lock().unwrap(), 6);
}

/// An unwinder that panics at its second unwind.
#[derive(Debug)]
struct PanickingUnwinder {
    unwinds: Arc<Mutex<usize>>,
}

impl crate::sample::StackUnwinder for PanickingUnwinder {
    fn mapping(&mut self, _pid: u32, _m: &crate::sample::Mapping) {}
    fn exec(&mut self, _pid: u32) {}
    fn fork(&mut self, _parent: u32, _child: u32) {}
    fn exit(&mut self, _pid: u32) {}
    fn unwind(&mut self, s: &crate::sample::StackSample<'_>) -> Vec<u64> {
        let unwinds = {
            let mut n = self.unwinds.lock().unwrap();
            *n += 1;
            *n
        };
        assert!(unwinds < 2, "the test unwinder's planned panic");
        vec![s.stack.regs.pc, 0x1234]
    }
}

/// A panic in the unwinder costs user frames, never samples: the batch it
/// happened in is logged whole (its process records too), the samples not
/// yet unwound with their kernel-made chain, no DROPNOTIFY; the unwinder
/// is not called again and later samples are logged the same way.
#[test]
fn a_panicking_unwinder_loses_no_sample() {
    let owner = sim_owner();
    let unwinds = Arc::new(Mutex::new(0));
    owner.set_stack_unwinder(Some(Box::new(PanickingUnwinder {
        unwinds: unwinds.clone(),
    })));
    let log = MemoryLog::new();
    owner.configure_logfile(log.clone()).unwrap();
    let src = FakeSource::new(SourceInfo::default());
    let handle = owner
        .register_source(1, Mode::TS, Flags::CALLCHAIN, src.clone())
        .unwrap();
    for i in 0..4 {
        src.push(10 + i, stack_sample(7, 100, vec![0x4000]));
    }
    src.push(
        20,
        BackendEvent::ProcessExit {
            pid: 7,
            value: None,
        },
    );
    owner.flush_logfile().unwrap();
    for i in 0..2 {
        src.push(30 + i, stack_sample(8, 100, vec![0x5000]));
    }
    owner.flush_logfile().unwrap();
    drop(handle);
    let (mut chains, mut lost, mut exits) = (Vec::new(), 0, 0);
    for r in records(&log) {
        match r {
            LogRecord::Callchain { pcs, .. } => chains.push(pcs),
            LogRecord::Dropnotify { .. } => lost += 1,
            LogRecord::ProcExit { .. } | LogRecord::SysExit { .. } => exits += 1,
            _ => {}
        }
    }
    assert_eq!(
        chains,
        vec![
            vec![0x4000, 0x1234],
            vec![0x4000],
            vec![0x4000],
            vec![0x4000],
            vec![0x5000],
            vec![0x5000],
        ]
    );
    assert_eq!(lost, 0);
    assert_eq!(exits, 1, "the batch's process record is kept");
    assert_eq!(*unwinds.lock().unwrap(), 2, "never called after its panic");
}

/// CLOSELOG is stamped with the close's time on the log's clock, as
/// hwpmc_logging.c stamps every record it reserves, never earlier than
/// a record before it (a reader may take the log's end time from it).
#[test]
fn closelog_is_stamped_at_the_close_and_last_in_time() {
    let sim = SimBackend::new(2);
    let owner = Owner::new(sim.clone());
    let log = MemoryLog::new();
    owner.configure_logfile(log.clone()).unwrap();
    sim.advance(100);
    owner.writelog(1).unwrap();
    sim.advance(100);
    owner.writelog(2).unwrap();
    sim.advance(100);
    let before_close = owner.now();
    owner.close_logfile().unwrap();
    let events = log.events().unwrap();
    let last = events.last().unwrap();
    assert!(matches!(last.record, LogRecord::Closelog), "{last:?}");
    let latest = events[..events.len() - 1]
        .iter()
        .map(|e| e.timestamp)
        .max()
        .unwrap();
    assert_eq!(latest, 200, "the USERDATA records are stamped");
    assert!(
        last.timestamp >= before_close,
        "{} < {before_close}",
        last.timestamp
    );
    assert!(last.timestamp >= latest, "{} < {latest}", last.timestamp);
}
