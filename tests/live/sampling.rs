//! Sampling PMCs and pmclog on the real kernel.

use object::{Object, ObjectSymbol};
use pmc::log::sink::{self, MemoryLog};
use pmc::log::{LogEvent, LogRecord};
use pmc::probe::Requirement as R;
use pmc::{Cpu, Flags, Mode, Pmc};

use crate::ensure;
use crate::harness::{Context, LiveTest, TestResult, Workload, test};

pub fn tests() -> Vec<LiveTest> {
    vec![
        test(
            "sampling::ts_samples_land_in_the_busy_function_with_its_caller",
            vec![R::Paranoid(2)],
            ts_samples_land_in_the_busy_function_with_its_caller,
        ),
        test(
            "sampling::a_traced_childs_fork_exec_exit_appear_in_order",
            vec![R::Paranoid(1)],
            a_traced_childs_fork_exec_exit_appear_in_order,
        ),
        test(
            "sampling::a_tiny_buffer_loses_samples_as_dropnotify",
            vec![R::Paranoid(2)],
            a_tiny_buffer_loses_samples_as_dropnotify,
        ),
        test(
            "sampling::log_required_rules",
            vec![R::Paranoid(0)],
            log_required_rules,
        ),
        test(
            "sampling::log_proccsw_slices_add_up_to_the_counted_value",
            vec![R::Paranoid(1), R::TracefsReadable],
            log_proccsw_slices_add_up_to_the_counted_value,
        ),
        test(
            "sampling::log_proccsw_refused_by_paranoid_says_why",
            vec![R::RestrictedTo(2)],
            log_proccsw_refused_by_paranoid_says_why,
        ),
        test(
            "sampling::log_procexit_with_descendants_gives_each_process_its_own_value",
            vec![R::Paranoid(1), R::TracefsReadable],
            log_procexit_with_descendants_gives_each_process_its_own_value,
        ),
        test(
            "sampling::log_procexit_logs_the_exiting_childs_value",
            vec![R::Paranoid(1)],
            log_procexit_logs_the_exiting_childs_value,
        ),
        test(
            "sampling::write_tracepoint_samples_decode_count",
            vec![R::TracefsReadable, R::Paranoid(-1)],
            write_tracepoint_samples_decode_count,
        ),
    ]
}

/// Runs `f` with a fresh in-memory log and returns its events.
fn with_log(f: impl FnOnce() -> TestResult) -> Result<Vec<LogEvent>, libtest_mimic::Failed> {
    let log = MemoryLog::new();
    sink::configure_logfile(log.clone()).ctx("configure_logfile")?;
    let r = f();
    sink::close_logfile().ctx("close_logfile")?;
    r?;
    Ok(log.events()?)
}

/// The address range of the first symbol whose name contains `part`.
fn symbol_range(part: &str) -> Result<(u64, u64), libtest_mimic::Failed> {
    let exe = std::env::current_exe().ctx("current_exe")?;
    let data = std::fs::read(&exe).ctx("read exe")?;
    let file = object::File::parse(&*data).ctx("parse exe")?;
    let sym = file
        .symbols()
        .find(|s| s.name().is_ok_and(|n| n.contains(part)) && s.size() > 0)
        .ok_or_else(|| format!("no symbol {part}"))?;
    // The binary is position-independent: relocate by this function's
    // runtime address against its symbol address.
    let anchor = file
        .symbols()
        .find(|s| s.name().is_ok_and(|n| n.contains("sampling_anchor_symbol")))
        .ok_or("no anchor symbol")?;
    let bias = (sampling_anchor_symbol as *const () as usize as u64).wrapping_sub(anchor.address());
    Ok((
        sym.address().wrapping_add(bias),
        sym.address().wrapping_add(bias) + sym.size(),
    ))
}

#[inline(never)]
fn sampling_anchor_symbol() -> u64 {
    std::hint::black_box(1)
}

#[inline(never)]
fn sampling_caller_function() -> u64 {
    // Spins on CPU time, not wall time: under the matrix's load it still
    // yields the samples the test expects.
    std::hint::black_box(crate::workloads::hot_function_for_profiling(300))
}

fn ts_samples_land_in_the_busy_function_with_its_caller() -> TestResult {
    let me = std::process::id();
    // The PMC samples the whole process, as on FreeBSD; other test threads
    // run meanwhile, so judge only this thread's chains.
    let my_tid = pmc_linux::system::gettid() as u32;
    let events = with_log(|| {
        let mut pmc = Pmc::allocate_with_count(
            "cpu-clock,usr",
            Mode::TS,
            Flags::CALLCHAIN,
            Cpu::Any,
            100_000,
        )
        .ctx("allocate TS")?;
        pmc.start().ctx("start")?;
        std::hint::black_box(sampling_caller_function());
        pmc.stop().ctx("stop")?;
        Ok(())
    })?;
    let busy = symbol_range("hot_function_for_profiling")?;
    let caller = symbol_range("sampling_caller_function")?;
    let chains: Vec<&Vec<u64>> = events
        .iter()
        .filter_map(|e| match &e.record {
            LogRecord::Callchain {
                pid,
                tid,
                userspace: true,
                pcs,
                ..
            } if *pid == me && *tid == my_tid => Some(pcs),
            _ => None,
        })
        .collect();
    let inside = |r: (u64, u64), pc: u64| pc >= r.0 && pc < r.1;
    let in_busy = chains
        .iter()
        .filter(|c| c.iter().any(|pc| inside(busy, *pc)))
        .count();
    let with_caller = chains
        .iter()
        .filter(|c| c.iter().any(|pc| inside(busy, *pc)) && c.iter().any(|pc| inside(caller, *pc)))
        .count();
    println!(
        "{} user callchains, {in_busy} through the busy loop, {with_caller} with its caller",
        chains.len()
    );
    ensure!(
        chains.len() >= 1000,
        "300 ms of CPU at 10 kHz gave {} samples on this thread",
        chains.len()
    );
    ensure!(
        in_busy * 10 >= chains.len() * 8,
        "only {in_busy} of {} samples in the loop",
        chains.len()
    );
    ensure!(
        with_caller * 10 >= in_busy * 9,
        "only {with_caller} of {in_busy} chains show the caller"
    );
    Ok(())
}

fn a_traced_childs_fork_exec_exit_appear_in_order() -> TestResult {
    let mut child_pid = 0;
    let events = with_log(|| {
        let mut w = Workload::spawn("fork-spin", &["50"])?;
        child_pid = w.pid();
        let mut pmc =
            Pmc::allocate("cpu-clock", Mode::TS, Flags::DESCENDANTS, Cpu::Any).ctx("allocate")?;
        pmc.attach(w.pid()).ctx("attach")?;
        pmc.start().ctx("start")?;
        w.go()?;
        w.wait()?;
        pmc.stop().ctx("stop")?;
        Ok(())
    })?;
    let pos = |pred: &dyn Fn(&LogRecord) -> bool| events.iter().position(|e| pred(&e.record));
    let fork = pos(&|r| matches!(r, LogRecord::ProcFork { oldpid, .. } if *oldpid == child_pid))
        .ok_or("no PROCFORK from the child")?;
    let LogRecord::ProcFork { newpid, .. } = events[fork].record else {
        unreachable!()
    };
    let exec = pos(&|r| matches!(r, LogRecord::ProcExec { pid, .. } if *pid == newpid))
        .ok_or("no PROCEXEC of the grandchild")?;
    let exit =
        pos(&|r| matches!(r, LogRecord::SysExit { pid } if *pid == newpid)).ok_or_else(|| {
            let seen: Vec<String> = events
                .iter()
                .filter(|e| {
                    !matches!(
                        e.record,
                        LogRecord::Callchain { .. } | LogRecord::MapIn { .. }
                    )
                })
                .map(|e| format!("{}@{}", e.record, e.timestamp))
                .collect();
            format!("no SYSEXIT of the grandchild {newpid}; saw {seen:?}")
        })?;
    ensure!(
        fork < exec && exec < exit,
        "order fork {fork}, exec {exec}, exit {exit}"
    );
    ensure!(
        events
            .iter()
            .any(|e| matches!(&e.record, LogRecord::MapIn { pid, .. } if *pid == newpid)),
        "no MAP_IN for the grandchild's exec"
    );
    Ok(())
}

fn a_tiny_buffer_loses_samples_as_dropnotify() -> TestResult {
    sink::set_buffer_pages(1).ctx("set_buffer_pages")?;
    let events = with_log(|| {
        let mut pmc = Pmc::allocate_with_count(
            "cpu-clock,usr",
            Mode::TS,
            Flags::CALLCHAIN,
            Cpu::Any,
            20_000,
        )
        .ctx("allocate")?;
        pmc.start().ctx("start")?;
        std::hint::black_box(crate::workloads::hot_function_for_profiling(200));
        pmc.stop().ctx("stop")?;
        Ok(())
    });
    sink::set_buffer_pages(32).ctx("restore buffer pages")?;
    let events = events?;
    let lost: u64 = events
        .iter()
        .filter_map(|e| match e.record {
            LogRecord::Dropnotify { lost } => Some(u64::from(lost)),
            _ => None,
        })
        .sum();
    let kept = events
        .iter()
        .filter(|e| matches!(e.record, LogRecord::Callchain { .. }))
        .count();
    println!("one-page ring: {kept} samples kept, {lost} lost");
    ensure!(
        lost > 0,
        "no DROPNOTIFY with a one-page ring ({kept} samples kept)"
    );
    Ok(())
}

fn log_required_rules() -> TestResult {
    let _ = sink::close_logfile();
    let mut ss = Pmc::allocate("cpu-clock", Mode::SS, Flags::empty(), Cpu::Id(0)).ctx("SS")?;
    let e = ss.start().err().ok_or("SS started without a log")?;
    ensure!(e.errno() == pmc::EDOOFUS, "SS: {e}");
    let mut w = Workload::spawn("spin", &["10"])?;
    let mut ts = Pmc::allocate("cpu-clock", Mode::TS, Flags::empty(), Cpu::Any).ctx("TS")?;
    ts.attach(w.pid()).ctx("attach")?;
    let e = ts
        .start()
        .err()
        .ok_or("TS on another process started without a log")?;
    ensure!(e.errno() == pmc::EDOOFUS, "TS other: {e}");
    let mut own = Pmc::allocate("cpu-clock", Mode::TS, Flags::empty(), Cpu::Any).ctx("TS own")?;
    own.start().ctx("TS on the caller needs no log")?;
    own.stop().ctx("stop")?;
    let mut tc = Pmc::allocate("task-clock", Mode::TC, Flags::LOG_PROCEXIT, Cpu::Any).ctx("TC")?;
    let e = tc
        .start()
        .err()
        .ok_or("LOG_PROCEXIT started without a log")?;
    ensure!(e.errno() == pmc::EDOOFUS, "LOG_PROCEXIT: {e}");
    ensure!(e.to_string().contains("configure_logfile"), "{e}");
    w.go()?;
    w.wait()?;
    Ok(())
}

fn log_procexit_logs_the_exiting_childs_value() -> TestResult {
    let mut child = 0;
    let events = with_log(|| {
        let mut w = Workload::spawn("spin", &["150"])?;
        child = w.pid();
        let mut pmc =
            Pmc::allocate("task-clock", Mode::TC, Flags::LOG_PROCEXIT, Cpu::Any).ctx("allocate")?;
        pmc.attach(w.pid()).ctx("attach")?;
        pmc.start().ctx("start")?;
        w.go()?;
        w.wait()?;
        // The exit is in the ring; stop drains it.
        pmc.stop().ctx("stop")?;
        Ok(())
    })?;
    let exits: Vec<(u32, u64)> = events
        .iter()
        .filter_map(|e| match e.record {
            LogRecord::ProcExit { pid, value, .. } => Some((pid, value)),
            _ => None,
        })
        .collect();
    println!("PROCEXIT records: {exits:?}");
    let (_, value) = exits
        .iter()
        .find(|(pid, _)| *pid == child)
        .ok_or("no PROCEXIT for the child")?;
    ensure!(
        *value >= 100_000_000,
        "the child spun 150 ms, logged {value} ns"
    );
    Ok(())
}

/// Runs `workload args` under a TC `page-faults,usr` PMC with `flags`,
/// attached before it starts; returns the log and the PMC's final value.
fn logged_child_run(
    flags: Flags,
    workload: &str,
    args: &[&str],
) -> Result<(Vec<LogEvent>, u32, u64), libtest_mimic::Failed> {
    let (mut child, mut total) = (0, 0);
    let events = with_log(|| {
        let mut w = Workload::spawn(workload, args)?;
        child = w.pid();
        let mut pmc =
            Pmc::allocate("page-faults,usr", Mode::TC, flags, Cpu::Any).ctx("allocate")?;
        pmc.attach(w.pid()).ctx("attach")?;
        pmc.start().ctx("start")?;
        w.go()?;
        w.wait()?;
        pmc.stop().ctx("stop")?;
        total = pmc.read().ctx("read")?;
        Ok(())
    })?;
    Ok((events, child, total))
}

fn log_proccsw_slices_add_up_to_the_counted_value() -> TestResult {
    const ROUNDS: usize = 20;
    let (events, child, total) = logged_child_run(
        Flags::LOG_PROCCSW | Flags::LOG_PROCEXIT,
        "touch-sleep",
        &["20"],
    )?;
    let slices: Vec<u64> = events
        .iter()
        .filter_map(|e| match e.record {
            LogRecord::ProcCsw { pid, value, .. } if pid == child => Some(value),
            _ => None,
        })
        .collect();
    let exit = events.iter().find_map(|e| match e.record {
        LogRecord::ProcExit { pid, value, .. } if pid == child => Some(value),
        _ => None,
    });
    let sum: u64 = slices.iter().sum();
    let busy = slices.iter().filter(|v| **v >= 50).count();
    println!(
        "{} PROCCSW slices ({busy} with >= 50 faults) sum to {sum}; PMC {total}; PROCEXIT {exit:?}",
        slices.len()
    );
    ensure!(
        slices.len() > ROUNDS,
        "{} slices for {ROUNDS} sleeps",
        slices.len()
    );
    // Each round's slice, and the last one that exit ends (a preemption
    // in the middle of a round splits its faults over two slices).
    ensure!(
        busy >= ROUNDS - 2,
        "only {busy} slices hold a round's 50 page faults"
    );
    ensure!(
        sum == total,
        "the slices sum to {sum}, the PMC counted {total}"
    );
    ensure!(
        exit == Some(total),
        "PROCEXIT says {exit:?}, the PMC counted {total}"
    );
    Ok(())
}

fn log_proccsw_refused_by_paranoid_says_why() -> TestResult {
    let mut error = None;
    with_log(|| {
        // Refused at allocate (its trial open), as hwpmc refuses there.
        error = match Pmc::allocate("page-faults,usr", Mode::TC, Flags::LOG_PROCCSW, Cpu::Any) {
            Err(e) => Some(e),
            Ok(mut pmc) => pmc.start().err(),
        };
        Ok(())
    })?;
    let e = error.ok_or("LOG_PROCCSW allowed although kernel samples are refused")?;
    ensure!(e.errno() == libc::EPERM, "{e}");
    let msg = e.to_string();
    println!("{msg}");
    for needle in [
        "LOG_PROCCSW",
        "context switches",
        "perf_event_paranoid",
        "sysctl",
    ] {
        ensure!(msg.contains(needle), "message lacks {needle:?}: {msg}");
    }
    Ok(())
}

fn log_procexit_with_descendants_gives_each_process_its_own_value() -> TestResult {
    const GRANDCHILD: u64 = 2000;
    const OWN: u64 = 6000;
    let (events, child, total) = logged_child_run(
        Flags::LOG_PROCEXIT | Flags::DESCENDANTS,
        "fork-touch",
        &[&GRANDCHILD.to_string(), &OWN.to_string()],
    )?;
    let exits: Vec<(u32, u64)> = events
        .iter()
        .filter_map(|e| match e.record {
            LogRecord::ProcExit { pid, value, .. } => Some((pid, value)),
            _ => None,
        })
        .collect();
    println!("PROCEXIT records: {exits:?}; PMC {total}");
    let own = exits
        .iter()
        .find(|(pid, _)| *pid == child)
        .map(|e| e.1)
        .ok_or("no PROCEXIT for the child")?;
    let others: Vec<u64> = exits
        .iter()
        .filter(|(pid, _)| *pid != child)
        .map(|e| e.1)
        .collect();
    let [grandchild] = others[..] else {
        return Err(format!("expected one grandchild PROCEXIT, got {others:?}").into());
    };
    ensure!(
        (GRANDCHILD..OWN).contains(&grandchild),
        "the grandchild touched {GRANDCHILD} pages, logged {grandchild}"
    );
    ensure!(
        (OWN..OWN + GRANDCHILD).contains(&own),
        "the child touched {OWN} pages itself, logged {own}"
    );
    ensure!(
        own + grandchild == total,
        "{own} + {grandchild} logged, the PMC counted {total}"
    );
    Ok(())
}

fn write_tracepoint_samples_decode_count() -> TestResult {
    use pmc_linux::attr::{Attr, EventConfig, SampleType};
    use pmc_linux::event::{Event, OpenFlags, Target};
    use pmc_linux::record::Record;
    use pmc_linux::ring::RingBuffer;
    use pmc_linux::tracefs::{FieldValue, Tracefs};
    use std::io::Write;
    let tracefs = Tracefs::locate().ctx("tracefs")?;
    let id = tracefs
        .tracepoint_id("syscalls", "sys_enter_write")
        .ctx("id")?;
    let format = tracefs
        .format("syscalls", "sys_enter_write")
        .ctx("format")?;
    let attr = Attr::new(EventConfig::Tracepoint(id))
        .disabled(true)
        .sample_period(1)
        .sample_type(SampleType::TID | SampleType::RAW);
    let ev = Event::open(&attr, Target::CALLER, None, OpenFlags::empty()).ctx("open")?;
    let mut ring = RingBuffer::new(&ev, 8).ctx("ring")?;
    let mut null = std::fs::File::create("/dev/null").ctx("/dev/null")?;
    ev.enable().ctx("enable")?;
    for len in [3usize, 17, 4096] {
        null.write_all(&vec![0u8; len]).ctx("write")?;
    }
    ev.disable().ctx("disable")?;
    let parser = pmc_linux::record::RecordParser::for_attr(&attr);
    let mut counts = Vec::new();
    while let Some(bytes) = ring.next_record() {
        if let Ok(Record::Sample(s)) = parser.parse(bytes, 0) {
            let raw = s.raw().ok_or("no raw data")?;
            match format.decode(raw, "count") {
                Some(FieldValue::Unsigned(n)) => counts.push(n),
                other => return Err(format!("count decoded as {other:?}").into()),
            }
        }
    }
    ensure!(counts == vec![3, 17, 4096], "decoded counts {counts:?}");
    Ok(())
}
