//! Sampling PMCs and pmclog on the real kernel.

use object::{Object, ObjectSymbol};
use pmc::global::log::{self, MemoryLog};
use pmc::log::{LogEvent, LogRecord};
use pmc::probe::Requirement as R;
use pmc::{Cpu, Flags, Mode, Owner, Pmc};

use crate::ensure;
use crate::harness::{Context, LiveTest, TestResult, Workload, test};
use crate::workloads::{StealWindow, Usage, clock_agrees_with_cpu_time};

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
            "sampling::procexec_names_the_image_of_a_process_gone_before_the_drain",
            vec![R::Paranoid(1)],
            procexec_names_the_image_of_a_process_gone_before_the_drain,
        ),
        test(
            "sampling::a_tiny_buffer_loses_samples_as_dropnotify",
            vec![R::Paranoid(2)],
            a_tiny_buffer_loses_samples_as_dropnotify,
        ),
        test(
            "sampling::a_descendants_lost_samples_are_counted_too",
            vec![R::Paranoid(2)],
            a_descendants_lost_samples_are_counted_too,
        ),
        test(
            "sampling::log_required_rules",
            vec![R::Paranoid(0)],
            log_required_rules,
        ),
        test(
            "sampling::log_proccsw_slices_add_up_to_the_counted_value",
            vec![R::Paranoid(1), R::TracefsReadable, R::Kernel(6, 12)],
            log_proccsw_slices_add_up_to_the_counted_value,
        ),
        test(
            "sampling::log_proccsw_refused_by_paranoid_says_why",
            vec![R::RestrictedTo(2)],
            log_proccsw_refused_by_paranoid_says_why,
        ),
        test(
            "sampling::log_procexit_with_descendants_gives_each_process_its_own_value",
            vec![R::Paranoid(1), R::TracefsReadable, R::Kernel(6, 12)],
            log_procexit_with_descendants_gives_each_process_its_own_value,
        ),
        test(
            "sampling::log_procexit_logs_the_exiting_childs_value",
            vec![R::Paranoid(1)],
            log_procexit_logs_the_exiting_childs_value,
        ),
        test(
            "sampling::attach_logs_the_existing_mappings_of_a_running_process",
            vec![R::Paranoid(2)],
            attach_logs_the_existing_mappings_of_a_running_process,
        ),
        test(
            "sampling::usercallchain_gives_one_chain_kernel_then_user",
            vec![R::Paranoid(1)],
            usercallchain_gives_one_chain_kernel_then_user,
        ),
        test(
            "sampling::closing_the_log_stops_the_pmcs_that_write_to_it",
            vec![R::Paranoid(2)],
            closing_the_log_stops_the_pmcs_that_write_to_it,
        ),
        test(
            "sampling::closing_the_log_stops_system_sampling_pmcs",
            vec![R::Paranoid(0)],
            closing_the_log_stops_system_sampling_pmcs,
        ),
        test(
            "sampling::system_sampling_logs_every_processs_mappings_once",
            vec![R::Paranoid(0)],
            system_sampling_logs_every_processs_mappings_once,
        ),
        test(
            "sampling::two_owners_sample_at_once_into_their_own_logs",
            vec![R::Paranoid(2)],
            two_owners_sample_at_once_into_their_own_logs,
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
    log::configure_logfile(log.clone()).ctx("configure_logfile")?;
    let r = f();
    log::close_logfile().ctx("close_logfile")?;
    r?;
    Ok(log.events()?)
}

/// [`with_log`] with a one-page ring buffer (the default again afterwards):
/// small enough for a burst of samples to overflow it between drains.
fn with_one_page_ring(
    f: impl FnOnce() -> TestResult,
) -> Result<Vec<LogEvent>, libtest_mimic::Failed> {
    log::set_buffer_pages(1).ctx("set_buffer_pages")?;
    let events = with_log(f);
    log::set_buffer_pages(log::DEFAULT_BUFFER_PAGES).ctx("restore buffer pages")?;
    events
}

/// The samples lost in all the DROPNOTIFY records of `events` (our own log
/// carries the lost count in each).
fn dropnotify_lost_total(events: &[LogEvent]) -> Result<u64, libtest_mimic::Failed> {
    let lost = events
        .iter()
        .filter_map(|e| match e.record {
            LogRecord::Dropnotify { lost } => Some(lost.map(u64::from)),
            _ => None,
        })
        .sum::<Option<u64>>()
        .ok_or("a DROPNOTIFY of our own log has no lost count")?;
    Ok(lost)
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
    let mut spun = 0;
    let mut window = None;
    let events = with_log(|| {
        let mut pmc = Pmc::allocate_with_count(
            "cpu-clock,usr",
            Mode::TS,
            Flags::CALLCHAIN,
            Cpu::Any,
            100_000,
        )
        .ctx("allocate TS")?;
        window = Some(StealWindow::start());
        let cpu0 = pmc_linux::system::thread_cpu_ns();
        pmc.start().ctx("start")?;
        std::hint::black_box(sampling_caller_function());
        pmc.stop().ctx("stop")?;
        spun = pmc_linux::system::thread_cpu_ns() - cpu0;
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
        "{} user callchains, {in_busy} through the busy loop, {with_caller} with its caller; {spun} ns of thread CPU",
        chains.len()
    );
    // One sample per 100 µs of this thread's CPU time. cpu-clock samples
    // once per hrtimer expiry, and a loaded VM fires it late (the late part
    // of a period is not made up): up to 25 % short, as pmcstat's sampling
    // test allows. Never more than 5 % over, beyond what the hypervisor
    // stole (the clock runs on through it; see StealWindow).
    let expected = spun / 100_000;
    let stolen = window.map_or(0, |w| w.stolen_ns());
    let most = expected + expected / 20 + stolen / 100_000;
    ensure!(
        chains.len() as u64 >= expected * 3 / 4 && chains.len() as u64 <= most,
        "{spun} ns of CPU at one sample per 100 µs gave {} samples on this thread; {expected} expected (-25% .. +5% + {stolen} ns stolen: at most {most})",
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

/// hwpmc's PROCEXEC carries the image's full path; a COMM carries only
/// the program's name, and `/proc/PID/exe` is gone by the time a drain
/// reads a short-lived process's exec. Fifty runs of `true`: each PROCEXEC
/// names `true`'s absolute path (before: "true", which `pmcstat -R` then
/// looked for in the reader's own directory).
fn procexec_names_the_image_of_a_process_gone_before_the_drain() -> TestResult {
    const RUNS: usize = 50;
    let mut workload_pid = 0;
    let events = with_log(|| {
        let mut w = Workload::spawn("exec-true", &[&RUNS.to_string()])?;
        workload_pid = w.pid();
        let mut pmc =
            Pmc::allocate("cpu-clock", Mode::TS, Flags::DESCENDANTS, Cpu::Any).ctx("allocate")?;
        pmc.attach(w.pid()).ctx("attach")?;
        pmc.start().ctx("start")?;
        w.go()?;
        w.wait()?;
        pmc.stop().ctx("stop")?;
        Ok(())
    })?;
    let true_path = crate::workloads::system_true();
    let true_path = true_path.to_str().ok_or("true's path is not UTF-8")?;
    let execs: Vec<&str> = events
        .iter()
        .filter_map(|e| match &e.record {
            LogRecord::ProcExec { pid, path, .. } if *pid != workload_pid => Some(path.as_str()),
            _ => None,
        })
        .collect();
    let named_true = execs.iter().filter(|p| **p == true_path).count();
    let not_absolute: Vec<&&str> = execs.iter().filter(|p| !p.starts_with('/')).collect();
    ensure!(
        not_absolute.is_empty(),
        "{} of {} PROCEXECs of the workload's children name no absolute path: {:?}",
        not_absolute.len(),
        execs.len(),
        &not_absolute[..not_absolute.len().min(5)]
    );
    ensure!(
        named_true == RUNS,
        "{named_true} of {RUNS} runs of true logged as {true_path}; the children's PROCEXECs: {:?}",
        &execs[..execs.len().min(5)]
    );
    Ok(())
}

fn a_tiny_buffer_loses_samples_as_dropnotify() -> TestResult {
    // A child faults 20 000 fresh pages under a page-fault PMC sampling
    // every fault: 20 000 samples, far more than a one-page ring holds
    // between drains. A fault count is exact where a clock's is not (a
    // loaded VM fires hrtimers late and skips periods), so the accounting
    // is checked against the faults the child counted itself.
    const PAGES: &str = "20000";
    let mut child_faults = 0;
    let mut child = 0;
    let events = with_one_page_ring(|| {
        // The child's exit record follows the burst, before which the
        // kernel writes the LOST record it owes; where no record follows,
        // the stop's reconciliation with PERF_FORMAT_LOST reports the
        // rest (sampling::a_descendants_lost_samples_are_counted_too).
        let mut w = Workload::spawn("touch-handshake", &[PAGES])?;
        child = w.pid();
        let mut pmc =
            Pmc::allocate_with_count("page-faults,usr", Mode::TS, Flags::CALLCHAIN, Cpu::Any, 1)
                .ctx("allocate")?;
        pmc.attach(w.pid()).ctx("attach")?;
        pmc.start().ctx("start")?;
        w.go()?;
        let usage = Usage::parse(&w.wait()?).ok_or("touch-handshake reported no usage")?;
        child_faults = usage.own_minflt;
        pmc.stop().ctx("stop")?;
        Ok(())
    })?;
    // Our own log carries the lost count of every DROPNOTIFY.
    let lost = dropnotify_lost_total(&events)?;
    let kept = events
        .iter()
        .filter(|e| matches!(e.record, LogRecord::Callchain { pid, .. } if pid == child))
        .count() as u64;
    println!(
        "one-page ring: {kept} samples kept, {lost} lost; the child counted {child_faults} faults"
    );
    ensure!(
        lost > 0,
        "no DROPNOTIFY with a one-page ring ({kept} samples kept)"
    );
    // Every sample is either logged or accounted as lost: at least the
    // child's own fault count, and at most 64 over it (the lost count also
    // covers side-band records, e.g. the child's exit and its report's
    // mappings). The LOST records alone fall short (the kernel writes one
    // only before a later record that fits); the stop's reconciliation
    // with the event's PERF_FORMAT_LOST count reports the rest.
    let accounted = kept + lost;
    ensure!(
        (child_faults..=child_faults + 64).contains(&accounted),
        "{kept} kept + {lost} lost = {accounted}, the child faulted {child_faults} times (want {child_faults}..={})",
        child_faults + 64
    );
    ensure!(
        child_faults >= 20_000,
        "the child faulted {child_faults} times for 20 000 fresh pages"
    );
    Ok(())
}

/// A grandchild's samples go through an inherited event, whose ring
/// losses the kernel charges to the parent event we read
/// (ring_buffer.c `__perf_output_begin`: `event = event->parent`): with
/// DESCENDANTS and a one-page ring, every sample the PMC counted is
/// either logged or accounted as lost.
fn a_descendants_lost_samples_are_counted_too() -> TestResult {
    const GRANDCHILD: &str = "20000";
    const OWN: &str = "2000";
    let mut counted = 0;
    let mut usage = Usage::default();
    let events = with_one_page_ring(|| {
        let mut w = Workload::spawn("fork-touch", &[GRANDCHILD, OWN])?;
        let mut pmc = Pmc::allocate_with_count(
            "page-faults,usr",
            Mode::TS,
            Flags::CALLCHAIN | Flags::DESCENDANTS,
            Cpu::Any,
            1,
        )
        .ctx("allocate")?;
        // The same faults counted: with a period of 1, the samples the
        // kernel made (a TS PMC's read is not a count).
        let mut tc = Pmc::allocate("page-faults,usr", Mode::TC, Flags::DESCENDANTS, Cpu::Any)
            .ctx("allocate TC")?;
        pmc.attach(w.pid()).ctx("attach")?;
        tc.attach(w.pid()).ctx("attach TC")?;
        tc.start().ctx("start TC")?;
        pmc.start().ctx("start")?;
        w.go()?;
        usage = Usage::parse(&w.wait()?).ok_or("fork-touch reported no usage")?;
        pmc.stop().ctx("stop")?;
        tc.stop().ctx("stop TC")?;
        counted = tc.read().ctx("read TC")?;
        Ok(())
    })?;
    let lost = dropnotify_lost_total(&events)?;
    let kept = events
        .iter()
        .filter(|e| matches!(e.record, LogRecord::Callchain { .. }))
        .count() as u64;
    println!(
        "one-page ring, DESCENDANTS: {kept} samples kept, {lost} lost; the PMC counted {counted}; getrusage {usage:?}"
    );
    // The grandchild's own faults dominate: most samples, and most
    // losses, are an inherited event's.
    ensure!(
        usage.children_minflt >= 20_000 && counted >= 22_000,
        "the grandchild faulted {} times, the PMC counted {counted} for 22 000 fresh pages",
        usage.children_minflt
    );
    // Lost also covers side-band records (the grandchild's exec mappings,
    // its comm, fork and exit): at most 64 of them.
    let accounted = kept + lost;
    ensure!(
        (counted..=counted + 64).contains(&accounted),
        "{kept} kept + {lost} lost = {accounted}, the PMC counted {counted} samples (want {counted}..={})",
        counted + 64
    );
    Ok(())
}

fn log_required_rules() -> TestResult {
    let _ = log::close_logfile();
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
    let mut usage = Usage::default();
    let mut window = None;
    let events = with_log(|| {
        let mut w = Workload::spawn("spin", &["150"])?;
        child = w.pid();
        let mut pmc =
            Pmc::allocate("task-clock", Mode::TC, Flags::LOG_PROCEXIT, Cpu::Any).ctx("allocate")?;
        pmc.attach(w.pid()).ctx("attach")?;
        window = Some(StealWindow::start());
        pmc.start().ctx("start")?;
        w.go()?;
        usage = Usage::parse(&w.wait()?).ok_or("spin reported no usage")?;
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
    let window = window.ok_or("the PMC never started")?;
    clock_agrees_with_cpu_time(*value, usage.own_cpu_ns, 0.03, 0, &window)
        .map_err(|e| format!("the child's PROCEXIT value: {e}"))?;
    Ok(())
}

/// Runs `workload args` under a TC `page-faults,usr` PMC with `flags`,
/// attached before it starts; returns the log, the child's pid, the PMC's
/// final value and what the child measured of itself.
fn logged_child_run(
    flags: Flags,
    workload: &str,
    args: &[&str],
) -> Result<(Vec<LogEvent>, u32, u64, Usage), libtest_mimic::Failed> {
    let (mut child, mut total, mut usage) = (0, 0, Usage::default());
    let events = with_log(|| {
        let mut w = Workload::spawn(workload, args)?;
        child = w.pid();
        let mut pmc =
            Pmc::allocate("page-faults,usr", Mode::TC, flags, Cpu::Any).ctx("allocate")?;
        pmc.attach(w.pid()).ctx("attach")?;
        pmc.start().ctx("start")?;
        w.go()?;
        usage = Usage::parse(&w.wait()?).ok_or_else(|| format!("{workload} reported no usage"))?;
        pmc.stop().ctx("stop")?;
        total = pmc.read().ctx("read")?;
        Ok(())
    })?;
    Ok((events, child, total, usage))
}

fn log_proccsw_slices_add_up_to_the_counted_value() -> TestResult {
    const ROUNDS: usize = 20;
    let (events, child, total, usage) = logged_child_run(
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
        "{} PROCCSW slices ({busy} with >= 50 faults) sum to {sum}; PMC {total}; PROCEXIT {exit:?}; the child's getrusage {usage:?}",
        slices.len()
    );
    // The slice that exit ends is read through sched:sched_process_exit;
    // without tracefs it is missing (a known loss, see ARCHITECTURE).
    const EXIT_SLICE: &str =
        "the slice before exit comes from the sched:sched_process_exit tracepoint (tracefs)";
    // A slice per sleep and the one exit ends; a few preemptions more.
    ensure!(
        (ROUNDS + 1..=3 * ROUNDS).contains(&slices.len()),
        "{} slices for {ROUNDS} sleeps; {EXIT_SLICE}",
        slices.len()
    );
    // 21 × 50 fresh pages, plus at most 64 other faults; and what the
    // child counted itself (getrusage minflt) within 64.
    let pages = (ROUNDS as u64 + 1) * 50;
    ensure!(
        (pages..=pages + 64).contains(&total) && total.abs_diff(usage.own_minflt) <= 64,
        "{total} faults counted for {pages} fresh pages; the child's getrusage says {}",
        usage.own_minflt
    );
    // Each round's slice, and the last one that exit ends (a preemption
    // in the middle of a round splits its faults over two slices).
    ensure!(
        busy >= ROUNDS - 2,
        "only {busy} slices hold a round's 50 page faults"
    );
    ensure!(
        sum == total,
        "the slices sum to {sum}, the PMC counted {total}; {EXIT_SLICE}"
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
    let (events, child, total, usage) = logged_child_run(
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
    println!("PROCEXIT records: {exits:?}; PMC {total}; the child's getrusage {usage:?}");
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
    // Each process's value is its own faults as it counted them
    // (getrusage minflt, within 64: faults taken in the kernel are in
    // minflt only); the grandchild's include its exec's loader faults.
    ensure!(
        grandchild >= GRANDCHILD && grandchild.abs_diff(usage.children_minflt) <= 64,
        "the grandchild touched {GRANDCHILD} pages and counted {} faults itself, logged {grandchild}",
        usage.children_minflt
    );
    ensure!(
        (OWN..=OWN + 64).contains(&own) && own.abs_diff(usage.own_minflt) <= 64,
        "the child touched {OWN} pages and counted {} faults itself, logged {own}",
        usage.own_minflt
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

/// hwpmc_mod.c `pmc_attach_one_process` logs the target's existing
/// executable mappings (`pmc_log_process_mappings`): a process that was
/// already running when the PMC attached gets MAP_IN for its executable
/// and libraries, which perf only reports for mappings made later.
fn attach_logs_the_existing_mappings_of_a_running_process() -> TestResult {
    let mut w = Workload::spawn("spin", &["100"])?;
    let pid = w.pid();
    let exe = std::fs::read_link(format!("/proc/{pid}/exe")).ctx("workload exe")?;
    let exe = exe.display().to_string();
    let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).ctx("workload maps")?;
    // The expected start, from the maps line of the executable's first
    // executable mapping: its address (hwpmc_mod.c
    // `pmc_log_process_mappings` logs `entry->start`).
    let expected = maps
        .lines()
        .find_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() >= 6 && f[1].contains('x') && f[5] == exe)
                .then(|| u64::from_str_radix(f[0].split('-').next()?, 16).ok())?
        })
        .ok_or("the workload has no executable mapping of its exe")?;
    let events = with_log(|| {
        let mut pmc =
            Pmc::allocate("cpu-clock,usr", Mode::TS, Flags::CALLCHAIN, Cpu::Any).ctx("allocate")?;
        pmc.attach(pid).ctx("attach")?;
        pmc.start().ctx("start")?;
        w.go()?;
        w.wait()?;
        pmc.stop().ctx("stop")?;
        Ok(())
    })?;
    let maps_in: Vec<(u64, &str)> = events
        .iter()
        .filter_map(|e| match &e.record {
            LogRecord::MapIn {
                pid: p,
                start,
                path,
            } if *p == pid => Some((*start, path.as_str())),
            _ => None,
        })
        .collect();
    println!("MAP_IN of the running process: {maps_in:x?}");
    ensure!(
        maps_in.contains(&(expected, exe.as_str())),
        "no MAP_IN of {exe} at {expected:#x}"
    );
    ensure!(
        maps_in.iter().any(|(_, p)| p.contains("libc")),
        "no MAP_IN of libc"
    );
    // Before the samples, so a sequential reader can place them.
    let first_map = events
        .iter()
        .position(|e| matches!(&e.record, LogRecord::MapIn { pid: p, .. } if *p == pid));
    let first_sample = events
        .iter()
        .position(|e| matches!(&e.record, LogRecord::Callchain { pid: p, .. } if *p == pid));
    ensure!(
        first_sample.is_some() && first_map < first_sample,
        "MAP_IN at {first_map:?}, first sample at {first_sample:?}"
    );
    Ok(())
}

/// With PMC_F_USERCALLCHAIN a kernel sample carries the interrupted user
/// stack in the same CALLCHAIN record, after the kernel frames (hwpmc
/// appends it in `pmc_capture_user_callchain`); the kernel's MAP_IN is
/// logged once (`pmc_log_kernel_mappings`, `PMC_PO_INITIAL_MAPPINGS_DONE`).
fn usercallchain_gives_one_chain_kernel_then_user() -> TestResult {
    let me = std::process::id();
    let my_tid = pmc_linux::system::gettid() as u32;
    let events = with_log(|| {
        let mut pmc = Pmc::allocate_with_count(
            "cpu-clock",
            Mode::TS,
            Flags::CALLCHAIN | Flags::USERCALLCHAIN,
            Cpu::Any,
            50_000,
        )
        .ctx("allocate")?;
        pmc.start().ctx("start")?;
        // Time in the kernel: small writes to /dev/null.
        let mut null = std::fs::File::create("/dev/null").ctx("open /dev/null")?;
        let until = std::time::Instant::now() + std::time::Duration::from_millis(300);
        while std::time::Instant::now() < until {
            for _ in 0..1000 {
                std::io::Write::write_all(&mut null, b"x").ctx("write")?;
            }
        }
        pmc.stop().ctx("stop")?;
        Ok(())
    })?;
    let kernel = |pc: u64| pc >= 0xffff_8000_0000_0000;
    let mine: Vec<(u64, bool, &Vec<u64>)> = events
        .iter()
        .filter_map(|e| match &e.record {
            LogRecord::Callchain {
                pid,
                tid,
                userspace,
                pcs,
                ..
            } if *pid == me && *tid == my_tid => Some((e.timestamp, *userspace, pcs)),
            _ => None,
        })
        .collect();
    let kernel_chains: Vec<&Vec<u64>> = mine
        .iter()
        .filter(|(_, u, _)| !u)
        .map(|(_, _, p)| *p)
        .collect();
    let with_user = kernel_chains
        .iter()
        .filter(|p| p.iter().any(|pc| !kernel(*pc)))
        .count();
    println!(
        "{} chains, {} from the kernel, {with_user} of those with user frames",
        mine.len(),
        kernel_chains.len()
    );
    ensure!(!kernel_chains.is_empty(), "no kernel samples");
    for p in &kernel_chains {
        let split = p.iter().position(|pc| !kernel(*pc)).unwrap_or(p.len());
        ensure!(
            p[split..].iter().all(|pc| !kernel(*pc)),
            "a kernel frame after a user frame: {p:x?}"
        );
    }
    // Every kernel sample of this thread interrupted a system call it made
    // from user space (its writes), so every one has user registers, and
    // perf's user callchain starts with their pc at least.
    ensure!(
        with_user == kernel_chains.len(),
        "only {with_user} of {} kernel chains carry the user stack",
        kernel_chains.len()
    );
    // One record per sample: no user-only record at a kernel sample's time.
    let kernel_times: std::collections::HashSet<u64> = mine
        .iter()
        .filter(|(_, u, _)| !u)
        .map(|(t, _, _)| *t)
        .collect();
    let doubled = mine
        .iter()
        .filter(|(t, u, _)| *u && kernel_times.contains(t))
        .count();
    ensure!(
        doubled == 0,
        "{doubled} samples gave a second, user-only record"
    );
    let kernel_maps = events
        .iter()
        .filter(|e| matches!(e.record, LogRecord::MapIn { pid: u32::MAX, .. }))
        .count();
    ensure!(kernel_maps == 1, "{kernel_maps} kernel MAP_IN records");
    Ok(())
}

/// hwpmc_mod.c CONFIGURELOG with fd -1 stops the running PMCs that need
/// the log (`PMC_F_NEEDS_LOGFILE`) before `pmclog_deconfigure_log`: after
/// close_logfile, a sampling PMC is Stopped and writes nothing into the
/// next log until it is started again.
fn closing_the_log_stops_the_pmcs_that_write_to_it() -> TestResult {
    closing_the_log_stops("cpu-clock,usr", Mode::TS, Cpu::Any)
}

fn closing_the_log_stops_system_sampling_pmcs() -> TestResult {
    closing_the_log_stops("cpu-clock", Mode::SS, Cpu::Id(0))
}

fn closing_the_log_stops(spec: &str, mode: Mode, cpu: Cpu) -> TestResult {
    let samples = |log: &MemoryLog| -> Result<usize, libtest_mimic::Failed> {
        Ok(log
            .events()?
            .iter()
            .filter(|e| matches!(e.record, LogRecord::Callchain { .. }))
            .count())
    };
    let first = MemoryLog::new();
    log::configure_logfile(first.clone()).ctx("configure")?;
    let mut pmc =
        Pmc::allocate_with_count(spec, mode, Flags::empty(), cpu, 100_000).ctx("allocate")?;
    pmc.start().ctx("start")?;
    std::hint::black_box(crate::workloads::hot_function_for_profiling(100));
    log::close_logfile().ctx("close")?;
    ensure!(
        pmc.state() == pmc::State::Stopped,
        "state after the log closed: {:?}",
        pmc.state()
    );
    let second = MemoryLog::new();
    log::configure_logfile(second.clone()).ctx("configure again")?;
    std::hint::black_box(crate::workloads::hot_function_for_profiling(100));
    log::flush_logfile().ctx("flush")?;
    let while_stopped = samples(&second)?;
    // As pmc_start on a STOPPED PMC: it runs again, into the new log.
    pmc.start().ctx("restart")?;
    std::hint::black_box(crate::workloads::hot_function_for_profiling(100));
    pmc.stop().ctx("stop again")?;
    log::close_logfile().ctx("close again")?;
    let (before, after) = (samples(&first)?, samples(&second)?);
    println!(
        "samples: {before} in the closed log, {while_stopped} in the next one while \
         stopped, {after} after a restart"
    );
    ensure!(before > 0, "no samples before the close");
    ensure!(
        while_stopped == 0,
        "{while_stopped} samples after the log was closed"
    );
    ensure!(after > 0, "no samples after the restart");
    Ok(())
}

/// hwpmc_mod.c `pmc_start` of the owner's first system sampling PMC logs
/// the mappings of every process (`pmc_log_all_process_mappings`, once per
/// owner: `po_logprocmaps`), so samples of processes that were already
/// running resolve.
fn system_sampling_logs_every_processs_mappings_once() -> TestResult {
    let me = std::process::id();
    let exe = std::env::current_exe().ctx("current_exe")?;
    let exe = exe.display().to_string();
    // Another process already running when the PMC starts: a workload of
    // ours, loaded and waiting, so its /proc/PID/maps is readable whatever
    // our privileges and no mapping of its start-up races with the log.
    let mut w = Workload::spawn("spin", &["1"])?;
    let child = w.pid();
    let events = with_log(|| {
        let mut cpus = pmc::Pmc::builder("cpu-clock")
            .sampling(pmc::DEFAULT_RELOAD_COUNT)
            .per_cpu()
            .build()
            .ctx("allocate on every CPU")?;
        cpus.start().ctx("start")?;
        std::thread::sleep(std::time::Duration::from_millis(50));
        cpus.stop().ctx("stop")?;
        Ok(())
    })?;
    w.go()?;
    w.wait()?;
    let logged = |pid: u32| {
        events
            .iter()
            .filter(|e| matches!(&e.record, LogRecord::MapIn { pid: p, path, .. } if *p == pid && *path == exe))
            .count()
    };
    let (mine, childs) = (logged(me), logged(child));
    let pids: std::collections::HashSet<u32> = events
        .iter()
        .filter_map(|e| match e.record {
            LogRecord::MapIn { pid, .. } if pid != u32::MAX => Some(pid),
            _ => None,
        })
        .collect();
    let kernel = events
        .iter()
        .filter(|e| matches!(e.record, LogRecord::MapIn { pid: u32::MAX, .. }))
        .count();
    println!(
        "MAP_IN for {} processes; this one's executable {mine} time(s), the running \
         workload's {childs}; kernel {kernel}",
        pids.len()
    );
    ensure!(mine == 1, "this process's executable logged {mine} times");
    ensure!(
        childs == 1,
        "the running workload's executable logged {childs} times"
    );
    ensure!(kernel == 1, "the kernel logged {kernel} times");
    // Other users' processes: only when their maps are readable to us
    // (root, or CAP_SYS_PTRACE), looked at independently through init's.
    if std::fs::read_to_string("/proc/1/maps").is_ok_and(|m| !m.is_empty()) {
        ensure!(
            pids.contains(&1),
            "/proc/1/maps is readable but init's mappings were not logged"
        );
    }
    Ok(())
}

/// hwpmc's `struct pmc_owner` holds its PMCs and its log: two owners in
/// one process (a profiler and a library beside it) sample two children at
/// the same time, each into its own log, which holds only its own PMC's
/// records (samples of its own child, its own PMCALLOCATE and PMCATTACH),
/// and each counts only its own samples.
fn two_owners_sample_at_once_into_their_own_logs() -> TestResult {
    let backend = pmc::backend::Backend::selected();
    let owners = [Owner::new(backend.clone()), Owner::new(backend)];
    let logs = [MemoryLog::new(), MemoryLog::new()];
    let mut children = Vec::new();
    let mut pmcs = Vec::new();
    for (owner, log) in owners.iter().zip(&logs) {
        owner
            .configure_logfile(log.clone())
            .ctx("configure_logfile")?;
        // A second PMC on the second owner first: ids are per owner, so
        // the two sampling PMCs get different ones.
        if !pmcs.is_empty() {
            pmcs.push(
                owner
                    .allocate("task-clock,usr", Mode::TC, Flags::empty(), Cpu::Any)
                    .ctx("allocate")?,
            );
        }
        let w = Workload::spawn("spin", &["300"])?;
        let mut pmc = owner
            .allocate_with_count("cpu-clock,usr", Mode::TS, Flags::empty(), Cpu::Any, 100_000)
            .ctx("allocate")?;
        pmc.attach(w.pid()).ctx("attach")?;
        pmc.start().ctx("start")?;
        children.push(w);
        pmcs.push(pmc);
    }
    for w in &mut children {
        w.go()?;
    }
    let pids: Vec<u32> = children.iter().map(Workload::pid).collect();
    for w in children {
        w.wait()?;
    }
    for p in pmcs.iter_mut().filter(|p| p.mode() == Mode::TS) {
        p.stop().ctx("stop")?;
    }
    for owner in &owners {
        owner.close_logfile().ctx("close_logfile")?;
    }
    let ids: Vec<u32> = pmcs
        .iter()
        .filter(|p| p.mode() == Mode::TS)
        .map(|p| p.id().0)
        .collect();
    for (i, log) in logs.iter().enumerate() {
        let events = log.events()?;
        let mut samples = 0u64;
        for e in &events {
            match &e.record {
                LogRecord::Callchain { pid, pmcid, .. } => {
                    ensure!(
                        *pid == pids[i] && *pmcid == ids[i],
                        "owner {i}'s log holds a sample of pid {pid} by PMC {pmcid:#x}; \
                         its own are pid {} by PMC {:#x}",
                        pids[i],
                        ids[i]
                    );
                    samples += 1;
                }
                LogRecord::PmcAttach { pid, .. } => {
                    ensure!(*pid == pids[i], "owner {i}'s log attaches pid {pid}");
                }
                _ => {}
            }
        }
        ensure!(samples > 0, "owner {i}'s log has no sample of its child");
        let (counted, _) = owners[i].stats();
        ensure!(
            counted == samples,
            "owner {i} counted {counted} samples, its log holds {samples}"
        );
    }
    Ok(())
}
