//! pmcstat and pmccontrol, as a user runs them.

use std::process::{Command, Output};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use pmc::probe::Requirement as R;

use crate::ensure;
use crate::harness::{Context, LiveTest, TestResult, Workload, test};

const PMCSTAT: &str = env!("CARGO_BIN_EXE_pmcstat");
const PMCCONTROL: &str = env!("CARGO_BIN_EXE_pmccontrol");

pub fn tests() -> Vec<LiveTest> {
    vec![
        test(
            "pmcstat::instructions_agree_with_perf_stat",
            vec![
                R::HardwareCounting,
                R::Paranoid(2),
                R::Program("perf".into()),
            ],
            instructions_agree_with_perf_stat,
        ),
        test(
            "pmcstat::page_faults_agree_with_perf_stat",
            vec![R::Paranoid(2), R::Program("perf".into())],
            page_faults_agree_with_perf_stat,
        ),
        test(
            "pmcstat::the_command_exit_status_passes_through",
            vec![R::Paranoid(2)],
            the_command_exit_status_passes_through,
        ),
        test(
            "pmcstat::attach_with_t_counts_a_running_child",
            vec![R::Paranoid(2)],
            attach_with_t_counts_a_running_child,
        ),
        test(
            "pmcstat::system_wide_on_cpu_0_counts",
            vec![R::Paranoid(0)],
            system_wide_on_cpu_0_counts,
        ),
        test(
            "pmcstat::bad_options_and_specs_exit_with_sysexits_and_one_line",
            vec![],
            bad_options_and_specs_exit_with_sysexits_and_one_line,
        ),
        test(
            "pmcstat::a_missing_permission_prints_the_sysctl",
            vec![R::Root, R::PerfEvent, R::Program("setpriv".into())],
            a_missing_permission_prints_the_sysctl,
        ),
        test(
            "pmcstat::a_sampled_programs_hot_function_tops_the_callgraph",
            vec![R::Paranoid(2)],
            a_sampled_programs_hot_function_tops_the_callgraph,
        ),
        test(
            "pmccontrol::lists_classes_events_and_users",
            vec![R::PerfEvent],
            pmccontrol_lists_classes_events_and_users,
        ),
    ]
}

fn run(program: &str, args: &[&str]) -> Result<Output, libtest_mimic::Failed> {
    Command::new(program).args(args).output().ctx(program)
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The value column of pmcstat's CSV for `label`.
fn csv_value(csv: &str, label: &str) -> Result<u64, libtest_mimic::Failed> {
    let quoted = format!("\"{label}\"");
    csv.lines()
        .rev()
        .find(|l| l.contains(&quoted) || l.split(',').nth(1) == Some(label))
        .and_then(|l| {
            let rest = l
                .split_once(if l.contains(&quoted) {
                    quoted.as_str()
                } else {
                    label
                })?
                .1;
            rest.trim_start_matches(',').split(',').next()?.parse().ok()
        })
        .ok_or_else(|| format!("no {label} row in pmcstat output:\n{csv}").into())
}

/// perf stat's count of `event` over this binary running `workload arg`.
pub(crate) fn perf_stat(
    event: &str,
    workload: &str,
    arg: &str,
) -> Result<u64, libtest_mimic::Failed> {
    let exe = std::env::current_exe().ctx("current_exe")?;
    perf_stat_of(
        event,
        &[exe.as_os_str(), arg.as_ref()],
        &[(crate::workloads::ENV, workload)],
    )
}

/// perf stat's count of `event` over `command`, run with `env` added.
pub(crate) fn perf_stat_of(
    event: &str,
    command: &[&std::ffi::OsStr],
    env: &[(&str, &str)],
) -> Result<u64, libtest_mimic::Failed> {
    let out = Command::new("perf")
        .args(["stat", "-x,", "-e", event, "--"])
        .args(command)
        .envs(env.iter().copied())
        .output()
        .ctx("perf stat")?;
    let err = text(&out.stderr);
    let name = event.split(':').next().unwrap_or(event);
    err.lines()
        .find(|l| l.contains(name))
        .and_then(|l| l.split(',').next()?.trim().parse().ok())
        .ok_or_else(|| format!("no {event} count from perf: {err}").into())
}

/// pmcstat's count of `spec` over the same workload.
pub(crate) fn pmcstat_count(
    spec: &str,
    workload: &str,
    arg: &str,
) -> Result<u64, libtest_mimic::Failed> {
    let exe = std::env::current_exe().ctx("current_exe")?;
    pmcstat_count_of(
        spec,
        &[exe.as_os_str(), arg.as_ref()],
        &[(crate::workloads::ENV, workload)],
    )
}

/// pmcstat's count of `spec` (`-p`) over `command`, run with `env` added.
pub(crate) fn pmcstat_count_of(
    spec: &str,
    command: &[&std::ffi::OsStr],
    env: &[(&str, &str)],
) -> Result<u64, libtest_mimic::Failed> {
    let out = Command::new(PMCSTAT)
        .args(["-p", spec, "--csv", "--"])
        .args(command)
        .envs(env.iter().copied())
        .output()
        .ctx("pmcstat")?;
    ensure!(
        out.status.success(),
        "pmcstat failed: {}",
        text(&out.stderr)
    );
    csv_value(&text(&out.stderr), &format!("p/{spec}"))
}

fn agree(spec: &str, perf_event: &str, workload: &str, arg: &str) -> TestResult {
    let perf = perf_stat(perf_event, workload, arg)?;
    let ours = pmcstat_count(spec, workload, arg)?;
    let diff = (ours as f64 - perf as f64).abs() / perf as f64;
    println!(
        "pmcstat -p {spec}: {ours}; perf stat -e {perf_event}: {perf}; {:.4}% apart",
        diff * 100.0
    );
    ensure!(
        diff < 0.005,
        "pmcstat {ours} vs perf {perf}: {:.3}% apart",
        diff * 100.0
    );
    Ok(())
}

fn instructions_agree_with_perf_stat() -> TestResult {
    agree("instructions,usr", "instructions:u", "loop", "200000000")
}

fn page_faults_agree_with_perf_stat() -> TestResult {
    agree("page-faults,usr", "page-faults:u", "touch", "100000")
}

fn the_command_exit_status_passes_through() -> TestResult {
    for code in [0, 3, 42] {
        let out = run(
            PMCSTAT,
            &[
                "-p",
                "task-clock,usr",
                "--",
                "sh",
                "-c",
                &format!("exit {code}"),
            ],
        )?;
        // pmcstat.c ends every run with exit(EX_OK), whatever the child's status.
        ensure!(
            out.status.code() == Some(0),
            "exit {code} became {:?}",
            out.status
        );
    }
    let out = run(
        PMCSTAT,
        &["-p", "task-clock,usr", "--", "sh", "-c", "kill -TERM $$"],
    )?;
    ensure!(
        out.status.code() == Some(0),
        "killed by SIGTERM became {:?}",
        out.status
    );
    let out = run(
        PMCSTAT,
        &["-p", "task-clock,usr", "--", "/nonexistent/program"],
    )?;
    // The child's err(EX_OSERR, "ERROR: execvp \"%s\" failed")
    // (libpmcstat pmcstat_create_process): EX_OSERR.
    ensure!(
        out.status.code() == Some(71),
        "a missing program: {:?}",
        out.status
    );
    Ok(())
}

fn attach_with_t_counts_a_running_child() -> TestResult {
    let mut w = Workload::spawn("spin", &["400"])?;
    let pid = w.pid().to_string();
    let pmcstat = Command::new(PMCSTAT)
        .args(["-p", "task-clock,usr", "-t", &pid, "--csv"])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .ctx("pmcstat -t")?;
    // Give pmcstat time to attach before the child starts spinning.
    std::thread::sleep(Duration::from_millis(200));
    let window = crate::workloads::StealWindow::start();
    w.go()?;
    let usage = crate::workloads::Usage::parse(&w.wait()?).ok_or("spin reported no usage")?;
    let out = pmcstat.wait_with_output().ctx("wait pmcstat")?;
    ensure!(out.status.success(), "pmcstat -t: {}", text(&out.stderr));
    let ns = csv_value(&text(&out.stderr), "p/task-clock,usr")?;
    // The child's own CPU time after `go` (getrusage), within 3% (and what
    // the hypervisor stole meanwhile, which task-clock includes).
    crate::workloads::clock_agrees_with_cpu_time(ns, usage.own_cpu_ns, 0.03, 0, &window)
        .map_err(|e| format!("a 400 ms spin under pmcstat -t: {e}"))?;
    Ok(())
}

fn system_wide_on_cpu_0_counts() -> TestResult {
    // /proc/stat's `ctxt`: context switches on all CPUs since boot.
    let ctxt = || -> Result<u64, libtest_mimic::Failed> {
        let stat = std::fs::read_to_string("/proc/stat").ctx("/proc/stat")?;
        stat.lines()
            .find_map(|l| l.strip_prefix("ctxt ")?.trim().parse().ok())
            .ok_or_else(|| "no ctxt line in /proc/stat".into())
    };
    // A thread of ours, pinned to CPU 0, sleeps 1 ms at a time while
    // pmcstat counts: each sleep is two switches on CPU 0 (the sleeper out
    // as it blocks, and in again as it wakes), whatever else runs there. It
    // notes when each sleep began and ended. Nothing in the scope returns
    // early, so the sleeper is always stopped.
    const WINDOW: Duration = Duration::from_millis(300);
    let stop = AtomicBool::new(false);
    let (sleeps, before, out, after, spawned, exited) = std::thread::scope(|s| {
        let sleeper = s.spawn(|| -> Result<Vec<(Instant, Instant)>, String> {
            let mut cpu0 = nix::sched::CpuSet::new();
            cpu0.set(0).map_err(|e| e.to_string())?;
            nix::sched::sched_setaffinity(nix::unistd::Pid::from_raw(0), &cpu0)
                .map_err(|e| format!("pin to CPU 0: {e}"))?;
            let mut sleeps = Vec::new();
            while !stop.load(Ordering::Relaxed) {
                let began = Instant::now();
                std::thread::sleep(Duration::from_millis(1));
                sleeps.push((began, Instant::now()));
            }
            Ok(sleeps)
        });
        std::thread::sleep(Duration::from_millis(20));
        let before = ctxt();
        let spawned = Instant::now();
        let out = run(
            PMCSTAT,
            &["-s", "context-switches", "-c", "0", "-l", "0.3", "--csv"],
        );
        let exited = Instant::now();
        let after = ctxt();
        stop.store(true, Ordering::Relaxed);
        (sleeper.join(), before, out, after, spawned, exited)
    });
    let sleeps = sleeps.map_err(|_| "the sleeper panicked")??;
    let all_cpus = after? - before?;
    let out = out?;
    ensure!(out.status.success(), "pmcstat -s: {}", text(&out.stderr));
    let n = csv_value(&text(&out.stderr), "s/context-switches")?;
    // pmcstat counted for 300 ms (`-l 0.3`) somewhere between its spawn
    // and its exit, so over at least [exit - 300 ms, spawn + 300 ms]:
    // every sleep inside that is two switches it counted.
    let (from, to) = (exited - WINDOW, spawned + WINDOW);
    let inside = sleeps
        .iter()
        .filter(|(b, e)| from <= *b && *e <= to)
        .count() as u64;
    println!(
        "CPU 0: {n} switches; the pinned thread slept {} times, {inside} within {:?} of \
         pmcstat's run; all CPUs: {all_cpus}",
        sleeps.len(),
        to.saturating_duration_since(from)
    );
    ensure!(
        inside > 0,
        "pmcstat took {:?} to count 300 ms: no interval it surely counted",
        exited - spawned
    );
    // At least those sleeps' switches, at most what all CPUs had meanwhile.
    ensure!(
        2 * inside <= n && n <= all_cpus,
        "CPU 0 counted {n} context switches in 300 ms while a thread pinned there slept \
         {inside} times (2 switches each) within it; /proc/stat saw {all_cpus} on all CPUs"
    );
    Ok(())
}

fn bad_options_and_specs_exit_with_sysexits_and_one_line() -> TestResult {
    // sysexits: EX_USAGE (64) for options (pmcstat.c's errx(EX_USAGE, …)),
    // EX_OSERR (71) for a specifier pmc_allocate refuses (pmcstat.c:
    // err(EX_OSERR, "ERROR: Cannot allocate %s-mode pmc with specification …")).
    for (args, needle, status) in [
        (vec!["-p", "instrutions", "--", "true"], "instructions", 71),
        (vec!["-p", "task-clock,bogus=1", "--", "true"], "bogus", 71),
        (vec!["--no-such-option"], "--no-such-option", 64),
        (vec!["-p", "task-clock"], "-p needs a command", 64),
        (vec!["-c", "9-1", "-s", "task-clock"], "CPU list", 64),
        (vec!["-p", "task-clock", "-w", "0", "--", "true"], "-w", 64),
        (vec![], "no events", 64),
    ] {
        let out = run(PMCSTAT, &args)?;
        let err = text(&out.stderr);
        ensure!(
            out.status.code() == Some(status),
            "{args:?}: status {:?}, {err}",
            out.status
        );
        ensure!(err.contains(needle), "{args:?}: {err}");
        let first = err.lines().next().unwrap_or("");
        ensure!(
            first.contains(needle) || args.first() == Some(&"--no-such-option"),
            "{args:?}: the first line must name the problem: {err}"
        );
    }
    Ok(())
}

fn a_missing_permission_prints_the_sysctl() -> TestResult {
    let paranoid: i32 = std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .ctx("read paranoid")?
        .trim()
        .parse()
        .ctx("parse paranoid")?;
    // As nobody: system-wide counting needs paranoid <= 0.
    let out = Command::new("setpriv")
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "--",
            PMCSTAT,
        ])
        .args(["-s", "context-switches", "-c", "0", "-l", "0.1"])
        .output()
        .ctx("setpriv pmcstat")?;
    let err = text(&out.stderr);
    if paranoid >= 1 {
        // A refused pmc_allocate: EX_OSERR, as pmcstat.c.
        ensure!(
            out.status.code() == Some(71),
            "refused run: {:?} {err}",
            out.status
        );
        ensure!(
            err.contains("perf_event_paranoid"),
            "no sysctl named: {err}"
        );
        ensure!(
            err.contains("EACCES") || err.contains("EPERM"),
            "no errno: {err}"
        );
    } else {
        ensure!(out.status.success(), "paranoid {paranoid} allows it: {err}");
    }
    Ok(())
}

fn pmccontrol_lists_classes_events_and_users() -> TestResult {
    // -L names classes as libpmc does (pmc_name_of_class: SOFT), as
    // FreeBSD's pmccontrol prints them; the exact text is checked in
    // freebsd_pmccontrol.rs.
    let out = run(PMCCONTROL, &["-L"])?;
    let list = text(&out.stdout);
    ensure!(out.status.success(), "pmccontrol -L: {}", text(&out.stderr));
    ensure!(
        list.contains("SOFT\n") && list.contains("\ttask-clock"),
        "{list}"
    );
    // The perf_event holders, which -l showed before it followed FreeBSD,
    // are our --holders.
    let out = run(PMCCONTROL, &["--holders", "--json"])?;
    let v: serde_json::Value =
        serde_json::from_slice(&out.stdout).ctx("pmccontrol --holders --json")?;
    ensure!(v["perf_users"].is_array(), "{v}");
    // -e: pmccontrol.c's sysexits: EX_CONFIG (78) without hardware PMCs,
    // EX_OSERR (71) when pmc_enable fails, as it always does on Linux.
    let out = run(PMCCONTROL, &["-e", "*"])?;
    ensure!(
        matches!(out.status.code(), Some(71 | 78)),
        "-e: {:?}",
        out.status
    );
    // No command: EX_USAGE (64), as pmccontrol.c.
    let out = run(PMCCONTROL, &[])?;
    // usage(): EX_USAGE (tools/src/lib.rs, sysexits as pmccontrol.c's usage).
    ensure!(
        out.status.code() == Some(64),
        "no arguments: {:?}",
        out.status
    );
    Ok(())
}

fn a_sampled_programs_hot_function_tops_the_callgraph() -> TestResult {
    let dir = std::env::temp_dir().join(format!("pmcstat-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).ctx("temp dir")?;
    let log = dir.join("samples.pmclog");
    let graph = dir.join("callgraph.txt");
    let folded = dir.join("folded.txt");
    let exe = std::env::current_exe().ctx("current_exe")?;
    let exe = exe.to_string_lossy().into_owned();
    let log_s = log.to_string_lossy().into_owned();
    let out = Command::new(PMCSTAT)
        .args([
            "-n",
            "100000",
            "-P",
            "cpu-clock,usr",
            "-O",
            &log_s,
            "--",
            &exe,
            "300",
        ])
        .env(crate::workloads::ENV, "hot")
        .output()
        .ctx("pmcstat -P")?;
    ensure!(out.status.success(), "pmcstat -P: {}", text(&out.stderr));
    let out = run(
        PMCSTAT,
        &[
            "-R",
            &log_s,
            "-G",
            &graph.to_string_lossy(),
            "--folded",
            &folded.to_string_lossy(),
        ],
    )?;
    ensure!(out.status.success(), "pmcstat -R -G: {}", text(&out.stderr));
    let g = std::fs::read_to_string(&graph).ctx("read callgraph")?;
    // pmcpl_callgraph.c: "@ %s [%u samples]\n\n", then the top node.
    let first = g.lines().nth(2).unwrap_or("");
    println!(
        "callgraph head: {} | {first}",
        g.lines().next().unwrap_or("")
    );
    ensure!(
        first.contains("hot_function_for_profiling"),
        "top of the callgraph: {g}"
    );
    let pct: f64 = first
        .trim()
        .split('%')
        .next()
        .unwrap_or("0")
        .trim()
        .parse()
        .unwrap_or(0.0);
    // 300 ms in the hot function against a few ms of exec and exit.
    ensure!(
        pct >= 90.0,
        "the hot function has only {pct}% of samples: {g}"
    );
    // `[N samples]`: one per 100 µs of the workload's 300 ms of CPU: at
    // most 10 % more (the exec and exit add a few); up to 25 % fewer,
    // since cpu-clock samples once per hrtimer expiry and a VM's timer can
    // fire late under steal time (2473 seen in the matrix), never early.
    let samples: u64 = g
        .lines()
        .next()
        .and_then(|h| h.split('[').nth(1)?.split_whitespace().next()?.parse().ok())
        .ok_or_else(|| format!("no sample count in the header: {g}"))?;
    ensure!(
        (2_250..=3_300).contains(&samples),
        "{samples} samples for 300 ms at one per 100 µs"
    );
    let f = std::fs::read_to_string(&folded).ctx("read folded")?;
    ensure!(
        f.lines().any(|l| l.contains("hot_function_for_profiling")
            && l.rsplit(' ')
                .next()
                .is_some_and(|n| n.parse::<u64>().is_ok())),
        "folded stacks: {f}"
    );
    let dump = run(PMCSTAT, &["-R", &log_s])?;
    let d = text(&dump.stdout);
    ensure!(
        d.starts_with("initlog") && d.contains("\ncallchain "),
        "dump: {d}"
    );
    let bad = run(PMCSTAT, &["-R", &log_s, "-p", "task-clock"])?;
    ensure!(
        bad.status.code() == Some(64),
        "-R with specs: {:?}",
        bad.status
    );
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}
