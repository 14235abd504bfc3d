//! Counting PMCs (TC, SC) on the real kernel, with hwpmc semantics.

use libtest_mimic::Failed;
use pmc::probe::Requirement as R;
use pmc::{Cpu, Error, Flags, Mode, Pmc, State};

use crate::ensure;
use crate::harness::{Context, LiveTest, TestResult, Workload, open_fds, spin_ms, test};
use crate::workloads::{StealWindow, Usage, clock_agrees_with_cpu_time};

pub fn tests() -> Vec<LiveTest> {
    vec![
        test(
            "counting::a_pmc_on_one_thread_gives_its_perf_event_descriptor",
            vec![R::Paranoid(2)],
            a_pmc_on_one_thread_gives_its_perf_event_descriptor,
        ),
        test(
            "counting::tc_instructions_usr_agrees_with_perf_stat",
            vec![
                R::HardwareCounting,
                R::Paranoid(2),
                R::Program("perf".into()),
            ],
            tc_instructions_usr_agrees_with_perf_stat,
        ),
        test(
            "counting::tc_page_faults_usr_agrees_with_perf_stat",
            vec![R::Paranoid(2), R::Program("perf".into())],
            tc_page_faults_usr_agrees_with_perf_stat,
        ),
        test(
            "counting::tc_page_faults_count_fresh_pages",
            vec![R::Paranoid(2)],
            tc_page_faults_count_fresh_pages,
        ),
        test(
            "counting::tc_attach_sums_every_thread_of_a_child",
            vec![R::Paranoid(2)],
            tc_attach_sums_every_thread_of_a_child,
        ),
        test(
            "counting::tc_descendants_counts_a_grandchild",
            vec![R::Paranoid(2)],
            tc_descendants_counts_a_grandchild,
        ),
        test(
            "counting::tc_without_descendants_leaves_out_a_grandchild",
            vec![R::Paranoid(2)],
            tc_without_descendants_leaves_out_a_grandchild,
        ),
        test(
            "counting::sc_on_cpu0_counts",
            vec![R::Paranoid(0)],
            sc_on_cpu0_counts,
        ),
        test(
            "counting::per_cpu_sums_every_online_cpu",
            vec![R::Paranoid(0)],
            per_cpu_sums_every_online_cpu,
        ),
        test(
            "counting::tc_write_sets_the_value_and_set_does_not",
            vec![R::Paranoid(2)],
            tc_write_sets_the_value_and_set_does_not,
        ),
        test(
            "counting::ts_read_is_the_events_left_before_the_next_sample",
            vec![R::Paranoid(2)],
            ts_read_is_the_events_left_before_the_next_sample,
        ),
        test(
            "counting::detach_is_esrch_unmonitored_einval_for_another_pmc",
            vec![R::Paranoid(2)],
            detach_is_esrch_unmonitored_einval_for_another_pmc,
        ),
        test(
            "counting::width_and_caps_are_the_cpuinfo_class_rows",
            vec![R::Paranoid(2)],
            width_and_caps_are_the_cpuinfo_class_rows,
        ),
        test(
            "counting::get_msr_on_a_software_event_is_enosys",
            vec![R::Paranoid(2)],
            get_msr_on_a_software_event_is_enosys,
        ),
        test(
            "counting::get_msr_gives_the_rdpmc_index_then_attach_goes_on",
            vec![R::HardwareCounting, R::Paranoid(2)],
            get_msr_gives_the_rdpmc_index_then_attach_goes_on,
        ),
        test(
            "counting::write_rw_set_while_running_are_ebusy",
            vec![R::Paranoid(2)],
            write_rw_set_while_running_are_ebusy,
        ),
        test(
            "counting::start_attaches_the_caller_and_stop_saves_the_value",
            vec![R::Paranoid(2)],
            start_attaches_the_caller_and_stop_saves_the_value,
        ),
        test(
            "counting::a_single_threaded_process_brackets_its_own_work",
            vec![R::Paranoid(2)],
            a_single_threaded_process_brackets_its_own_work,
        ),
        test(
            "counting::an_exited_target_leaves_and_keeps_its_value",
            vec![R::Paranoid(2)],
            an_exited_target_leaves_and_keeps_its_value,
        ),
        test(
            "counting::attach_to_an_unused_pid_is_esrch",
            vec![R::PerfEvent],
            attach_to_an_unused_pid_is_esrch,
        ),
        test(
            "counting::attach_twice_is_eexist",
            vec![R::Paranoid(2)],
            attach_twice_is_eexist,
        ),
        test(
            "counting::einval_matrix_of_mode_cpu_and_flags",
            vec![R::PerfEvent],
            einval_matrix_of_mode_cpu_and_flags,
        ),
        test(
            "counting::fd_count_unchanged_after_10000_allocations",
            vec![R::Paranoid(2)],
            fd_count_unchanged_after_10000_allocations,
        ),
        test(
            "counting::hardware_events_work_or_explain_the_missing_pmu",
            vec![R::Paranoid(2)],
            hardware_events_work_or_explain_the_missing_pmu,
        ),
        test(
            "counting::kernel_counting_refused_by_paranoid_names_the_sysctl",
            vec![R::RestrictedTo(2)],
            kernel_counting_refused_by_paranoid_names_the_sysctl,
        ),
    ]
}

fn tc(spec: &str) -> Result<Pmc, Failed> {
    Pmc::allocate(spec, Mode::TC, Flags::empty(), Cpu::Any).ctx(spec)
}

/// Runs `workload` (no handshake) under `perf stat -e event` and returns
/// perf's count.
fn perf_stat(event: &str, workload: &str, arg: &str) -> Result<u64, Failed> {
    let exe = std::env::current_exe().ctx("current_exe")?;
    let out = std::process::Command::new("perf")
        .args(["stat", "-x,", "-e", event, "--"])
        .arg(&exe)
        .arg(arg)
        .env(crate::workloads::ENV, workload)
        .output()
        .ctx("run perf stat")?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    let name = event.split(':').next().unwrap_or(event);
    Ok(stderr
        .lines()
        .find(|l| l.contains(name))
        .and_then(|l| l.split(',').next())
        .and_then(|v| v.trim().parse().ok())
        .ok_or_else(|| format!("no {event} count in perf output: {stderr}"))?)
}

/// Counts `spec` over `workload`'s handshake variant with a TC PMC
/// attached to the child, and checks it against `perf stat` on the same
/// work within `tolerance` (relative).
pub fn agrees_with_perf_stat(
    spec: &str,
    perf_event: &str,
    workload: &str,
    arg: &str,
    tolerance: f64,
) -> TestResult {
    let perf = perf_stat(perf_event, workload, arg)?;
    let mut pmc = tc(spec)?;
    let mut w = Workload::spawn(&format!("{workload}-handshake"), &[arg])?;
    pmc.attach(w.pid()).ctx("attach")?;
    pmc.start().ctx("start")?;
    w.go()?;
    w.wait()?;
    let ours = pmc.read().ctx("read")?;
    let diff = (ours as f64 - perf as f64).abs() / perf as f64;
    println!(
        "{spec}: pmc {ours} vs perf stat -e {perf_event} {perf}: {:.4}% apart",
        diff * 100.0
    );
    ensure!(
        diff < tolerance,
        "{spec}: pmc {ours} vs perf {perf}: {:.3}% apart (tolerance {:.2}%)",
        diff * 100.0,
        tolerance * 100.0
    );
    Ok(())
}

fn tc_instructions_usr_agrees_with_perf_stat() -> TestResult {
    agrees_with_perf_stat(
        "instructions,usr",
        "instructions:u",
        "loop",
        "200000000",
        0.005,
    )
}

/// The same comparison on a software event, so the agreement is measured
/// on machines without a hardware PMU too. perf counts from exec, we from
/// the handshake: the loader's few hundred faults are well under 0.5% of
/// 200 000.
fn tc_page_faults_usr_agrees_with_perf_stat() -> TestResult {
    agrees_with_perf_stat("page-faults,usr", "page-faults:u", "touch", "200000", 0.005)
}

fn tc_page_faults_count_fresh_pages() -> TestResult {
    const PAGES: usize = 2000;
    let mut pmc = tc("page-faults,usr")?;
    pmc.start().ctx("start")?;
    crate::workloads::touch_fresh_pages(PAGES);
    pmc.stop().ctx("stop")?;
    let faults = pmc.read().ctx("read")?;
    // One fault per fresh page, plus at most a few for code and stack.
    ensure!(
        (PAGES as u64..=PAGES as u64 + 64).contains(&faults),
        "{faults} page faults for {PAGES} fresh pages (want {PAGES}..={})",
        PAGES + 64
    );
    Ok(())
}

fn tc_attach_sums_every_thread_of_a_child() -> TestResult {
    // Three threads spin 300 ms each on a 2-CPU machine: more CPU time than
    // any single thread can have (300 ms) proves several were counted.
    let mut w = Workload::spawn("threads3", &["300"])?;
    let mut pmc = tc("task-clock,usr")?;
    pmc.attach(w.pid()).ctx("attach")?;
    // main + 3 threads, all created before `ready`: one fd each.
    ensure!(
        pmc.handles() == 4,
        "expected an fd per thread (4), got {}",
        pmc.handles()
    );
    let window = StealWindow::start();
    pmc.start().ctx("start")?;
    w.go()?;
    let usage = Usage::parse(&w.wait()?).ok_or("threads3 reported no usage")?;
    let ns = pmc.read().ctx("read")?;
    println!(
        "task-clock of 3 threads: {} ms; the child's getrusage: {} ms",
        ns / 1_000_000,
        usage.own_cpu_ns / 1_000_000
    );
    // 3 × 300 ms: more than one thread was counted, and the sum is the
    // child's own CPU time after `go` (getrusage, 1 µs resolution).
    clock_agrees_with_cpu_time(ns, usage.own_cpu_ns, 0.03, 0, &window)
        .map_err(|e| format!("the child's threads: {e}"))?;
    ensure!(
        usage.own_cpu_ns >= 900_000_000,
        "the workload spun {} ms, not 3 × 300",
        usage.own_cpu_ns / 1_000_000
    );
    Ok(())
}

fn tc_descendants_counts_a_grandchild() -> TestResult {
    let mut w = Workload::spawn("fork-spin", &["300"])?;
    let mut pmc =
        Pmc::allocate("task-clock,usr", Mode::TC, Flags::DESCENDANTS, Cpu::Any).ctx("allocate")?;
    pmc.attach(w.pid()).ctx("attach")?;
    let window = StealWindow::start();
    pmc.start().ctx("start")?;
    w.go()?;
    let usage = Usage::parse(&w.wait()?).ok_or("fork-spin reported no usage")?;
    let ns = pmc.read().ctx("read")?;
    println!(
        "with DESCENDANTS: {} ms; the tree's getrusage: {} ms",
        ns / 1_000_000,
        usage.tree_cpu_ns() / 1_000_000
    );
    clock_agrees_with_cpu_time(ns, usage.tree_cpu_ns(), 0.03, 0, &window)
        .map_err(|e| format!("the child and its grandchild: {e}"))?;
    Ok(())
}

fn tc_without_descendants_leaves_out_a_grandchild() -> TestResult {
    let mut w = Workload::spawn("fork-spin", &["300"])?;
    let mut pmc = tc("task-clock,usr")?;
    pmc.attach(w.pid()).ctx("attach")?;
    let window = StealWindow::start();
    pmc.start().ctx("start")?;
    w.go()?;
    let reaped_before = Usage::now().children_cpu_ns;
    let usage = Usage::parse(&w.wait()?).ok_or("fork-spin reported no usage")?;
    // The child's whole life as wait4 accounts it (its exec and exit
    // included), less the grandchild it reaped: its own time, seen from
    // outside.
    let life = (Usage::now().children_cpu_ns - reaped_before).saturating_sub(usage.children_cpu_ns);
    let ns = pmc.read().ctx("read")?;
    let stolen = window.stolen_ns();
    println!(
        "without DESCENDANTS: {} µs; the child's own {} µs (its life {} µs), its grandchild's {} ms",
        ns / 1_000,
        usage.own_cpu_ns / 1_000,
        life / 1_000,
        usage.children_cpu_ns / 1_000_000
    );
    // The counter runs from before the child's own getrusage brackets to
    // its exit: at least what it measured of itself (less the clocks'
    // rounding, 3% + 50 µs), at most its life — none of the grandchild's
    // 300 ms — plus what the hypervisor stole while it ran, which
    // task-clock counts and getrusage leaves out (see StealWindow).
    let slack = |v: u64| v * 3 / 100 + 50_000;
    let (low, high) = (
        usage.own_cpu_ns.saturating_sub(slack(usage.own_cpu_ns)),
        life + slack(life) + stolen,
    );
    ensure!(
        (low..=high).contains(&ns),
        "pmc {} µs outside {} ..= {} µs: the child's own {} µs, its life {} µs, up to {} µs stolen (grandchild {} ms)",
        ns / 1_000,
        low / 1_000,
        high / 1_000,
        usage.own_cpu_ns / 1_000,
        life / 1_000,
        stolen / 1_000,
        usage.children_cpu_ns / 1_000_000
    );
    Ok(())
}

fn sc_on_cpu0_counts() -> TestResult {
    let mut pmc =
        Pmc::allocate("cpu-clock", Mode::SC, Flags::empty(), Cpu::Id(0)).ctx("allocate")?;
    ensure!(pmc.attach(0).is_err(), "attach on a system PMC must fail");
    let t0 = std::time::Instant::now();
    pmc.start().ctx("start")?;
    std::thread::sleep(std::time::Duration::from_millis(100));
    pmc.stop().ctx("stop")?;
    let wall = t0.elapsed().as_nanos() as u64;
    let ns = pmc.read().ctx("read")?;
    // A CPU's cpu-clock is wall time while enabled: at least the 100 ms
    // slept (less 3%), at most the time from before start to after stop.
    ensure!(
        (97_000_000..=wall).contains(&ns),
        "cpu-clock on CPU 0 counted {ns} ns over a 100 ms sleep ({wall} ns wall)"
    );
    Ok(())
}

fn per_cpu_sums_every_online_cpu() -> TestResult {
    let mut all = Pmc::builder("cpu-clock")
        .per_cpu()
        .build()
        .ctx("allocate")?;
    let t0 = std::time::Instant::now();
    all.start().ctx("start")?;
    std::thread::sleep(std::time::Duration::from_millis(100));
    all.stop().ctx("stop")?;
    let wall = t0.elapsed().as_nanos() as u64;
    let each = all.read_each().ctx("read_each")?;
    let total = all.read().ctx("read")?;
    ensure!(
        each.len() == pmc::global::online_cpus().len(),
        "one PMC per online CPU"
    );
    ensure!(
        each.iter().all(|(_, v)| (97_000_000..=wall).contains(v)),
        "each CPU counts the 100 ms sleep (less 3%) and at most {wall} ns: {each:?}"
    );
    ensure!(
        total == each.iter().map(|(_, v)| v).sum::<u64>(),
        "read is the sum"
    );
    Ok(())
}

fn tc_write_sets_the_value_and_set_does_not() -> TestResult {
    // hwpmc_mod.c: a TC's value is pm_gv.pm_savedvalue, which PMCRW's new
    // value sets; PMCSETCOUNT sets pm_sc.pm_initial, unused for process
    // PMCs. Page faults are taken from user mode, so `usr` counts them.
    let mut pmc = tc("page-faults,usr")?;
    pmc.set(42).ctx("set")?;
    ensure!(pmc.read().ctx("read")? == 0, "set(42) changed a TC's value");
    ensure!(pmc.reload_count() == 42, "set(42) not kept as pm_initial");
    pmc.write(42).ctx("write")?;
    ensure!(pmc.read().ctx("read")? == 42, "write(42) then read");
    pmc.start().ctx("start")?;
    let pages = crate::workloads::touch_fresh_pages(64);
    pmc.stop().ctx("stop")?;
    let v = pmc.read().ctx("read")?;
    ensure!(
        (42 + 64..=42 + 64 + 64).contains(&v),
        "64 fresh pages from 42 counted to {v} ({pages}; want 106..=170)"
    );
    pmc.write(7).ctx("write")?;
    ensure!(pmc.read().ctx("read")? == 7, "write(7) then read");
    let old = pmc.rw(1000).ctx("rw")?;
    ensure!(old == 7, "rw returned {old}, not the previous 7");
    ensure!(pmc.read().ctx("read")? == 1000, "after rw(1000)");
    Ok(())
}

fn ts_read_is_the_events_left_before_the_next_sample() -> TestResult {
    // hwpmc_mod.c PMC_OP_PMCRW: a running TS PMC attached to its owner
    // reads the hardware, which for a sampling PMC is the events left
    // before the next interrupt; stopped, it reads pm_savedvalue, which only
    // a write sets, and a write is not the reload count.
    const PERIOD: u64 = 1_000_000; // 1 ms of task-clock
    let mut pmc =
        Pmc::allocate_with_count("task-clock,usr", Mode::TS, Flags::empty(), Cpu::Any, PERIOD)
            .ctx("allocate")?;
    pmc.start().ctx("start")?;
    // The counter counts from its enable at start, where hwpmc loads
    // 2^width - PERIOD: after r events, PERIOD - r % PERIOD are left. The
    // kernel's own count (the raw value) just after start bounds how far
    // the count was already past 0 where the period began; the raw values
    // read just before and after `read` bound r there.
    let at_start = pmc.read_detailed().ctx("read_detailed at start")?.raw;
    spin_ms(5);
    let before = pmc.read_detailed().ctx("read_detailed before")?.raw;
    let left = pmc.read().ctx("read running")?;
    let after = pmc.read_detailed().ctx("read_detailed after")?.raw;
    pmc.stop().ctx("stop")?;
    ensure!(
        (1..=PERIOD).contains(&left),
        "{left} events left is outside 1..={PERIOD}"
    );
    ensure!(before >= 4_000_000, "5 ms spun, {before} ns counted");
    // left = PERIOD - (r - b) % PERIOD with r in [before, after] and the
    // period's start b in [0, at_start]: (left + before) % PERIOD is b
    // less the events between `before` and r, modulo PERIOD.
    let k = (left + before) % PERIOD;
    println!(
        "{left} left after {before}..{after} events, {at_start} at start: {k} off a period boundary"
    );
    ensure!(
        k <= at_start || PERIOD - k <= after - before,
        "{left} events left; with {before}..={after} counted ({at_start} at start), \
         PERIOD - count % PERIOD is {}..={}",
        PERIOD - after % PERIOD,
        PERIOD - before % PERIOD
    );
    ensure!(
        pmc.read().ctx("read stopped")? == 0,
        "stopped TS reads pm_savedvalue, 0"
    );
    pmc.write(5).ctx("write")?;
    ensure!(pmc.read().ctx("read")? == 5, "write(5) then read");
    ensure!(
        pmc.reload_count() == PERIOD,
        "write changed the reload count"
    );
    Ok(())
}

fn detach_is_esrch_unmonitored_einval_for_another_pmc() -> TestResult {
    // hwpmc_mod.c pmc_detach_one_process: a process no PMC monitors is
    // ESRCH; one another PMC monitors, EINVAL.
    let mut w = Workload::spawn("spin", &["1"])?;
    let mut mine = tc("task-clock,usr")?;
    let mut other = tc("task-clock,usr")?;
    mine.attach(0).ctx("attach self")?;
    let e = mine
        .detach(w.pid())
        .err()
        .ok_or("detached an unmonitored child")?;
    ensure!(e.errno() == libc::ESRCH, "unmonitored: {e}");
    other.attach(w.pid()).ctx("attach child")?;
    let e = mine
        .detach(w.pid())
        .err()
        .ok_or("detached another PMC's child")?;
    ensure!(e.errno() == libc::EINVAL, "another PMC's: {e}");
    other.detach(w.pid()).ctx("detach child")?;
    w.go()?;
    w.wait()?;
    Ok(())
}

fn width_and_caps_are_the_cpuinfo_class_rows() -> TestResult {
    // libpmc.c pmc_width / pmc_capabilities, and cpuinfo's class rows,
    // against what hwpmc and sysfs say, not pmc's own class table:
    // hwpmc_soft.c's SOFT_CAPS (READ | WRITE | INTERRUPT | USER | SYSTEM),
    // for software events and for a PMU without a cpumask (per task, like
    // `msr`, whose only format field `event` sets no encoding qualifier);
    // generic hardware events add PRECISE when every core PMU's
    // caps/max_precise is above 0. Every value is 64 bits wide (perf's
    // counts). A class whose PMU sysfs does not list must be refused.
    use pmc::Capabilities as C;
    let soft = C::READ | C::WRITE | C::INTERRUPT | C::USER | C::SYSTEM;
    let env = crate::machine::environment();
    let pmus = std::path::Path::new("/sys/bus/event_source/devices");
    let core: Vec<&String> = env
        .pmus
        .iter()
        .filter(|p| pmc::probe::is_core_pmu(p))
        .collect();
    let precise = !core.is_empty()
        && core.iter().all(|p| {
            std::fs::read_to_string(pmus.join(p).join("caps/max_precise"))
                .ok()
                .and_then(|v| v.trim().parse::<u32>().ok())
                .is_some_and(|v| v > 0)
        });
    let msr_per_task = !pmus.join("msr/cpumask").exists() && !pmus.join("msr/cpus").exists();
    let cases = [
        ("task-clock,usr", true, Some(soft)),
        (
            "instructions,usr",
            !core.is_empty(),
            Some(if precise { soft | C::PRECISE } else { soft }),
        ),
        // An msr PMU with a cpumask would be system-wide: not this case.
        // It takes no exclude_* bits (PERF_PMU_CAP_NO_EXCLUDE), so it
        // counts kernel mode too: paranoid <= 1 or CAP_PERFMON.
        (
            "msr/tsc/",
            env.has_pmu("msr") && env.effective_paranoid().is_some_and(|p| p <= 1),
            msr_per_task.then_some(soft),
        ),
    ];
    let info = pmc::global::cpuinfo().ctx("cpuinfo")?;
    for (spec, present, caps) in cases {
        let pmc = match (
            Pmc::allocate(spec, Mode::TC, Flags::empty(), Cpu::Any),
            present,
        ) {
            (Ok(p), true) => p,
            (Err(e), false) => {
                println!("{spec}: refused, as sysfs and paranoid say: {e}");
                continue;
            }
            (Ok(_), false) => {
                return Err(format!("{spec} allocated; sysfs lists no PMU for it").into());
            }
            (Err(e), true) => return Err(format!("{spec}: {e}").into()),
        };
        let row = info
            .classes
            .iter()
            .find(|c| c.class == pmc.class())
            .ok_or_else(|| format!("{spec}: class {} not in cpuinfo", pmc.class()))?;
        ensure!(
            pmc.width() == 64 && row.width == 64,
            "{spec}: width {} and its class row's {}, not 64",
            pmc.width(),
            row.width
        );
        if let Some(caps) = caps {
            ensure!(
                pmc.capabilities() == caps && row.caps == caps,
                "{spec}: caps {:?}, its class row's {:?}, hwpmc's {caps:?}",
                pmc.capabilities(),
                row.caps
            );
        }
    }
    // PMC_CAP_SYSWIDE means one counter for the whole machine (pmc-stat
    // then uses CPU 0 only): per-CPU software counters lack it.
    let soft_row = info
        .classes
        .iter()
        .find(|c| c.class == pmc::Class::Software)
        .ok_or("no software class")?;
    ensure!(
        !soft_row.caps.contains(C::SYSWIDE),
        "software counters are per CPU, not SYSWIDE"
    );
    Ok(())
}

fn get_msr_on_a_software_event_is_enosys() -> TestResult {
    // hwpmc_mod.c PMC_OP_PMCGETMSR: a class without pcd_get_msr is ENOSYS.
    let mut pmc = tc("task-clock,usr")?;
    pmc.attach(0).ctx("attach")?;
    pmc.start().ctx("start")?;
    let e = pmc
        .get_msr()
        .err()
        .ok_or("get_msr of task-clock succeeded")?;
    pmc.stop().ctx("stop")?;
    ensure!(e.errno() == libc::ENOSYS, "{e}");
    ensure!(e.to_string().contains("rdpmc"), "{e}");
    // The refused get_msr opened and closed its twin: counting goes on.
    pmc.start().ctx("restart")?;
    spin_ms(2);
    pmc.stop().ctx("stop")?;
    ensure!(pmc.read().ctx("read")? > 0, "task-clock counted nothing");
    Ok(())
}

fn get_msr_gives_the_rdpmc_index_then_attach_goes_on() -> TestResult {
    let rdpmc_sysfs =
        std::fs::read_to_string("/sys/bus/event_source/devices/cpu/rdpmc").unwrap_or_default();
    let mut pmc = tc("instructions,usr")?;
    pmc.attach(0).ctx("attach")?;
    pmc.start().ctx("start")?;
    let r = pmc.get_msr();
    pmc.stop().ctx("stop")?;
    match r {
        Ok(index) => {
            // The index is the counter the kernel gave the PMC's event, its
            // metadata page's `index - 1` (linux/perf_event.h). Stopped,
            // the PMC gave that counter back; the same event opened now
            // through the binding on this thread takes the same one (Intel:
            // fixed counter 0 for instructions; elsewhere the first free
            // one again), and its own page says which, while it runs.
            use pmc_linux::attr::{Attr, EventConfig, Hardware};
            use pmc_linux::event::{Event, OpenFlags, Target};
            let attr = Attr::new(EventConfig::Hardware {
                event: Hardware::Instructions,
                pmu: None,
            })
            .exclude_kernel(true)
            .exclude_hv(true);
            let ev = Event::open(&attr, Target::CALLER, None, OpenFlags::empty())
                .ctx("open instructions:u")?;
            let page = pmc_linux::selfmon::UserPage::map(&ev).ctx("map its page")?;
            ev.enable().ctx("enable")?;
            spin_ms(1);
            let on_page = page.caps().index;
            ev.disable().ctx("disable")?;
            ensure!(
                on_page != 0 && index == on_page - 1,
                "get_msr gave {index:#x}; the same event's page says index {on_page:#x} (rdpmc index + 1)"
            );
            let mut w = Workload::spawn("spin", &["1"])?;
            // hwpmc_mod.c pmc_attach_process: its EPERM after a GETMSR
            // tests PMC_PP_ENABLE_MSR_ACCESS in pm_flags, where GETMSR
            // never sets it (it sets the target's pp_flags): the attach
            // goes on.
            pmc.attach(w.pid()).ctx("attach after get_msr")?;
            w.go()?;
            w.wait()?;
        }
        Err(e) if cfg!(target_arch = "aarch64") => {
            // Linux arm64 (Documentation/arm64/perf.rst): user reads need
            // an event opened with config1:1 and perf_user_access=1; hwpmc
            // has no such flag, so pmc_get_msr is ENOSYS saying so.
            ensure!(
                e.errno() == libc::ENOSYS && e.to_string().contains("perf_user_access"),
                "get_msr on arm64: {e}"
            );
        }
        Err(e) => {
            ensure!(
                rdpmc_sysfs.trim() == "0" && e.errno() == libc::ENOSYS,
                "get_msr failed with rdpmc={}: {e}",
                rdpmc_sysfs.trim()
            );
        }
    }
    Ok(())
}

fn write_rw_set_while_running_are_ebusy() -> TestResult {
    let mut pmc = tc("task-clock,usr")?;
    pmc.start().ctx("start")?;
    for (op, r) in [
        ("write", pmc.write(1).map(drop)),
        ("rw", pmc.rw(1).map(drop)),
        ("set", pmc.set(1)),
    ] {
        let e = r
            .err()
            .ok_or_else(|| format!("{op} while running succeeded"))?;
        ensure!(e.errno() == libc::EBUSY, "{op}: {e} (errno {})", e.errno());
    }
    pmc.stop().ctx("stop")?;
    pmc.write(1).ctx("write after stop")?;
    Ok(())
}

fn start_attaches_the_caller_and_stop_saves_the_value() -> TestResult {
    let mut pmc = tc("task-clock,usr")?;
    ensure!(pmc.state() == State::Allocated, "fresh state");
    let e = pmc.stop().err().ok_or("stop before start succeeded")?;
    ensure!(e.errno() == libc::EINVAL, "stop before start: {e}");
    pmc.start().ctx("start")?;
    pmc.start().ctx("second start")?;
    ensure!(
        pmc.targets() == vec![std::process::id()],
        "attached to {:?}",
        pmc.targets()
    );
    let window = StealWindow::start();
    let cpu0 = pmc_linux::system::thread_cpu_ns();
    spin_ms(100);
    pmc.stop().ctx("stop")?;
    let spun = pmc_linux::system::thread_cpu_ns() - cpu0;
    pmc.stop().ctx("second stop")?;
    let saved = pmc.read().ctx("read")?;
    spin_ms(20);
    ensure!(
        pmc.read().ctx("read again")? == saved,
        "a stopped PMC must keep its value"
    );
    // This thread's CPU time from before the spin to after stop, within
    // 3% (task-clock and the thread CPU clock are accounted at slightly
    // different points of the scheduler).
    clock_agrees_with_cpu_time(saved, spun, 0.03, 0, &window)
        .map_err(|e| format!("100 ms spin + stop: {e}"))?;
    Ok(())
}

/// The same semantics in a single-threaded process, where the PMC is one
/// fd and start/read/stop take their direct path.
fn a_single_threaded_process_brackets_its_own_work() -> TestResult {
    let exe = std::env::current_exe().ctx("current_exe")?;
    let out = std::process::Command::new(exe)
        .env(crate::workloads::ENV, "self-bracket")
        .output()
        .ctx("run self-bracket")?;
    let text = String::from_utf8_lossy(&out.stdout);
    println!("{}", text.trim());
    ensure!(out.status.success(), "{}", text.trim());
    Ok(())
}

fn an_exited_target_leaves_and_keeps_its_value() -> TestResult {
    // hwpmc_mod.c: pmc_process_exit unlinks the exited target, whose counts
    // stay in pm_savedvalue; pmc_start then finds no target and
    // PMC_F_ATTACH_DONE, so ESRCH; pmc_do_op_pmcdetach: pfind fails, ESRCH.
    let mut w = Workload::spawn("spin", &["100"])?;
    let mut pmc = tc("task-clock,usr")?;
    pmc.attach(w.pid()).ctx("attach")?;
    let window = StealWindow::start();
    pmc.start().ctx("start")?;
    w.go()?;
    let pid = w.pid();
    let usage = Usage::parse(&w.wait()?).ok_or("spin reported no usage")?;
    pmc.stop().ctx("stop")?;
    let before = pmc.read().ctx("read")?;
    // The PMC also counts what the child runs after its own getrusage: the
    // report and the exit teardown (measured up to 3.3 ms on a loaded VM),
    // so up to 5 ms more than 3 % above, never below 3 % under.
    let own = usage.own_cpu_ns;
    clock_agrees_with_cpu_time(before, own, 0.03, 5_000_000, &window)
        .map_err(|e| format!("the child and up to 5 ms of its exit: {e}"))?;
    ensure!(pmc.targets().is_empty(), "exited {pid} still a target");
    let e = pmc
        .detach(pid)
        .err()
        .ok_or("detach of an exited pid succeeded")?;
    ensure!(e.errno() == libc::ESRCH, "detach: {e}");
    let e = pmc.start().err().ok_or("start with every target gone")?;
    ensure!(e.errno() == libc::ESRCH, "start: {e}");
    let after = pmc.read().ctx("read")?;
    ensure!(after == before, "the value changed: {before} -> {after}");
    Ok(())
}

fn unused_pid() -> u32 {
    // pid_max itself is never assigned (pids are < pid_max).
    std::fs::read_to_string("/proc/sys/kernel/pid_max")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(4_194_304)
}

fn attach_to_an_unused_pid_is_esrch() -> TestResult {
    let mut pmc = tc("task-clock,usr")?;
    let e = pmc
        .attach(unused_pid())
        .err()
        .ok_or("attach to an unused pid succeeded")?;
    ensure!(e.errno() == libc::ESRCH, "{e}");
    ensure!(matches!(e, Error::NoSuchProcess { .. }), "{e:?}");
    Ok(())
}

fn attach_twice_is_eexist() -> TestResult {
    let mut pmc = tc("task-clock,usr")?;
    pmc.attach(0).ctx("attach")?;
    let e = pmc
        .attach(std::process::id())
        .err()
        .ok_or("second attach succeeded")?;
    ensure!(e.errno() == libc::EEXIST, "{e}");
    Ok(())
}

fn einval_matrix_of_mode_cpu_and_flags() -> TestResult {
    let bad: &[(Mode, Flags, Cpu)] = &[
        (Mode::TC, Flags::empty(), Cpu::Id(0)),
        (Mode::TS, Flags::empty(), Cpu::Id(0)),
        (Mode::SC, Flags::empty(), Cpu::Any),
        (Mode::SS, Flags::empty(), Cpu::Any),
        (Mode::TS, Flags::USERCALLCHAIN, Cpu::Any),
        (Mode::TC, Flags::CALLCHAIN | Flags::USERCALLCHAIN, Cpu::Any),
        (Mode::SC, Flags::LOG_PROCEXIT, Cpu::Id(0)),
        (Mode::SS, Flags::LOG_PROCCSW, Cpu::Id(0)),
        (Mode::TC, Flags::from_bits_retain(0x4000), Cpu::Any),
        // Beyond the possible CPUs (hwpmc: `cpu >= pmc_cpu_max()`).
        (Mode::SC, Flags::empty(), Cpu::Id(u32::MAX - 1)),
    ];
    for &(mode, flags, cpu) in bad {
        let e = Pmc::allocate("task-clock,usr", mode, flags, cpu)
            .err()
            .ok_or_else(|| format!("{mode} {flags:?} cpu {cpu} was accepted"))?;
        ensure!(e.errno() == libc::EINVAL, "{mode} {flags:?} cpu {cpu}: {e}");
    }
    let e = Pmc::allocate("", Mode::TC, Flags::empty(), Cpu::Any)
        .err()
        .ok_or("empty spec")?;
    ensure!(e.errno() == libc::EINVAL, "empty spec: {e}");
    let e = Pmc::allocate("task-clock\0", Mode::TC, Flags::empty(), Cpu::Any)
        .err()
        .ok_or("NUL byte")?;
    ensure!(e.errno() == libc::EINVAL, "NUL spec: {e}");
    Ok(())
}

fn fd_count_unchanged_after_10000_allocations() -> TestResult {
    // Warm up lazily opened files (sysfs, procfs) before counting fds.
    let mut p = tc("task-clock,usr")?;
    p.start().ctx("warm-up start")?;
    drop(p);
    let before = open_fds();
    for i in 0..10_000 {
        let mut p = tc("task-clock,usr")?;
        if i % 2 == 0 {
            p.start().ctx("start")?;
            p.read().ctx("read")?;
        }
        if i % 3 == 0 {
            p.release().ctx("release")?;
        }
        // Failing allocations must not leak either.
        let _ = Pmc::allocate("task-clock", Mode::SC, Flags::empty(), Cpu::Id(u32::MAX));
    }
    let after = open_fds();
    ensure!(before == after, "fds before {before}, after {after}");
    Ok(())
}

fn hardware_events_work_or_explain_the_missing_pmu() -> TestResult {
    let env = crate::machine::environment();
    // Without a PMU the event fails at allocate, as hwpmc's allocate fails
    // for a class the machine lacks, not later at attach or start.
    match Pmc::allocate("instructions,usr", Mode::TC, Flags::empty(), Cpu::Any) {
        Ok(mut pmc) => {
            ensure!(
                env.hardware_counting,
                "instructions allocated without a PMU"
            );
            pmc.start().ctx("start")?;
            spin_ms(5);
            pmc.stop().ctx("stop")?;
            let n = pmc.read().ctx("read")?;
            ensure!(n > 0, "instructions counted 0");
        }
        Err(e) => {
            ensure!(
                !env.hardware_counting,
                "hardware counts here but allocate failed: {e}"
            );
            let msg = e.to_string();
            ensure!(msg.contains("ENXIO"), "no PMU should be ENXIO: {msg}");
            ensure!(msg.contains("virtual machine"), "hint missing: {msg}");
        }
    }
    Ok(())
}

fn kernel_counting_refused_by_paranoid_names_the_sysctl() -> TestResult {
    // hwpmc refuses at allocate; so does pmc (its trial open).
    let e = Pmc::allocate("task-clock", Mode::TC, Flags::empty(), Cpu::Any)
        .err()
        .ok_or("kernel counting allowed at paranoid 2")?;
    ensure!(e.errno() == libc::EPERM, "{e}");
    let msg = e.to_string();
    for needle in ["perf_event_paranoid", "sysctl", "CAP_PERFMON", "usr"] {
        ensure!(msg.contains(needle), "message lacks {needle:?}: {msg}");
    }
    Ok(())
}

/// `Pmc::fd` is the one perf_event descriptor of a PMC that has one (a
/// single-threaded child), and none for a PMC that is not attached or is
/// spread over several.
fn a_pmc_on_one_thread_gives_its_perf_event_descriptor() -> TestResult {
    let mut w = Workload::spawn("spin", &["20"])?;
    let mut other = Workload::spawn("spin", &["1"])?;
    let mut pmc = Pmc::builder("task-clock,usr").build().ctx("allocate")?;
    ensure!(pmc.fd().is_none(), "an unattached PMC has a descriptor");
    pmc.attach(w.pid()).ctx("attach")?;
    let fd = {
        use std::os::fd::AsRawFd;
        pmc.fd().ok_or("no descriptor for one thread")?.as_raw_fd()
    };
    let target = std::fs::read_link(format!("/proc/self/fd/{fd}")).ctx("readlink")?;
    ensure!(
        target.to_string_lossy() == "anon_inode:[perf_event]",
        "fd {fd} is {}",
        target.display()
    );
    // Attached to a second live process: two descriptors, none to give.
    pmc.attach(other.pid()).ctx("attach a second")?;
    ensure!(
        pmc.fd().is_none(),
        "a PMC on two processes gave one descriptor"
    );
    pmc.start().ctx("start")?;
    w.go()?;
    other.go()?;
    w.wait()?;
    other.wait()?;
    pmc.stop().ctx("stop")?;
    Ok(())
}
