//! The portable backend through the public API, in child processes (the
//! backend is chosen once per process): chosen by `PMC_BACKEND=portable`,
//! by `pmc::global::select`, and automatically when a seccomp filter
//! makes perf_event_open fail, as containers do. Each child measures its
//! own work independently (its thread's CPU clock, fresh pages it
//! touched) and prints what the PMCs and that measurement said.

use std::process::Command;

use libtest_mimic::Failed;
use pmc::backend::BackendKind;
use pmc::global;
use pmc::{Cpu, Flags, Mode, Pmc};

use crate::ensure;
use crate::harness::{Context, LiveTest, TestResult, spin_ms, test};

/// Whether `got` is within `fraction` of `want`. Both sides are CPU clocks
/// of this process, which exclude what the hypervisor steals.
fn within(got: u64, want: u64, fraction: f64) -> bool {
    (got as f64 - want as f64).abs() <= want as f64 * fraction
}

/// The environment variable naming the child's role.
const ROLE: &str = "PMC_LIVE_PORTABLE";

pub fn tests() -> Vec<LiveTest> {
    vec![
        test(
            "portable::pmc_backend_env_selects_the_portable_backend",
            vec![],
            pmc_backend_env_selects_the_portable_backend,
        ),
        test(
            "portable::select_before_the_first_allocate_chooses_it",
            vec![],
            select_before_the_first_allocate_chooses_it,
        ),
        test(
            "portable::seccomp_refusing_perf_event_open_falls_back_to_portable",
            vec![],
            seccomp_refusing_perf_event_open_falls_back_to_portable,
        ),
    ]
}

/// Runs this test binary as a child in `role`, with `env`; its stdout.
fn child(role: &str, env: &[(&str, &str)]) -> Result<String, Failed> {
    let mut cmd = Command::new(std::env::current_exe().ctx("current_exe")?);
    cmd.env(ROLE, role).env_remove("PMC_BACKEND");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().ctx("spawn child")?;
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    if !out.status.success() {
        return Err(Failed::from(format!(
            "child {role} failed ({}):\n{stdout}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        )));
    }
    Ok(stdout)
}

/// The `key=value` fields a child printed.
fn field(out: &str, key: &str) -> Result<String, Failed> {
    out.lines()
        .find_map(|l| l.strip_prefix(&format!("{key}=")))
        .map(str::to_string)
        .ok_or_else(|| Failed::from(format!("no {key}= in the child's output:\n{out}")))
}

fn number(out: &str, key: &str) -> Result<u64, Failed> {
    field(out, key)?
        .parse()
        .map_err(|e| Failed::from(format!("{key}: {e}\n{out}")))
}

/// The counts a child reports checked against its own measurement:
/// task-clock within 3 % of the CPU time its one busy thread burnt, and at
/// least one page fault per fresh page it touched.
fn check_counts(out: &str) -> TestResult {
    let (counted, burnt) = (number(out, "task_clock")?, number(out, "burnt_ns")?);
    ensure!(
        within(counted, burnt, 0.03),
        "task-clock {counted} ns vs {burnt} ns of thread CPU time burnt\n{out}"
    );
    let (faults, pages) = (number(out, "page_faults")?, number(out, "pages")?);
    ensure!(
        (pages..=pages + 64).contains(&faults),
        "page-faults {faults} for {pages} fresh pages\n{out}"
    );
    Ok(())
}

fn pmc_backend_env_selects_the_portable_backend() -> TestResult {
    let out = child("count", &[("PMC_BACKEND", "portable")])?;
    ensure!(
        field(&out, "backend")?.starts_with("portable (PMC_BACKEND=portable); compiled in: "),
        "{out}"
    );
    // The probe report's line.
    ensure!(
        field(&out, "probe")?.starts_with("portable (PMC_BACKEND=portable)"),
        "{out}"
    );
    ensure!(field(&out, "cputype")?.starts_with("portable ("), "{out}");
    check_counts(&out)
}

fn select_before_the_first_allocate_chooses_it() -> TestResult {
    let out = child("select", &[])?;
    ensure!(
        field(&out, "backend")?.starts_with("portable (pmc::global::select(Portable))"),
        "{out}"
    );
    // After the first allocate, another backend is EBUSY; the same is fine.
    ensure!(field(&out, "select_linux_after")? == "EBUSY", "{out}");
    ensure!(field(&out, "select_portable_after")? == "ok", "{out}");
    check_counts(&out)
}

fn seccomp_refusing_perf_event_open_falls_back_to_portable() -> TestResult {
    for (role, errno) in [("seccomp-eperm", "EPERM"), ("seccomp-enosys", "ENOSYS")] {
        let out = child(role, &[])?;
        // The filter works: the binding's own open is refused.
        ensure!(field(&out, "direct_open")? == errno, "{out}");
        let chosen = field(&out, "backend")?;
        ensure!(chosen.starts_with("portable ("), "{role}: {chosen}");
        let why = if errno == "EPERM" {
            "seccomp"
        } else {
            "ENOSYS"
        };
        ensure!(chosen.contains(why), "{role}: {chosen}");
        check_counts(&out)?;
    }
    Ok(())
}

/// In a child: does the role's work and exits.
pub fn run_if_requested() {
    let Ok(role) = std::env::var(ROLE) else {
        return;
    };
    let result = match role.as_str() {
        "count" => count_and_report(),
        "select" => select_then_count(),
        "seccomp-eperm" => refuse_perf_event_open(libc::EPERM).and_then(|()| count_and_report()),
        "seccomp-enosys" => refuse_perf_event_open(libc::ENOSYS).and_then(|()| count_and_report()),
        other => Err(format!("unknown role {other}")),
    };
    match result {
        Ok(()) => std::process::exit(0),
        Err(e) => {
            println!("failed: {e}");
            std::process::exit(1);
        }
    }
}

fn select_then_count() -> Result<(), String> {
    global::select(BackendKind::Portable).map_err(|e| e.to_string())?;
    count_and_report()?;
    let again = |kind| match global::select(kind) {
        Ok(()) => "ok".to_string(),
        Err(e) if e.errno() == libc::EBUSY => "EBUSY".into(),
        Err(e) => e.to_string(),
    };
    println!("select_linux_after={}", again(BackendKind::Linux));
    println!("select_portable_after={}", again(BackendKind::Portable));
    Ok(())
}

/// Counts CPU time and page faults of known work with the default backend
/// and prints them with the independent measurement.
fn count_and_report() -> Result<(), String> {
    const PAGES: usize = 1000;
    let allocate = |spec| {
        let mut p = Pmc::allocate(spec, Mode::TC, Flags::empty(), Cpu::Any)
            .map_err(|e| format!("allocate {spec}: {e}"))?;
        p.attach(0).map_err(|e| format!("attach {spec}: {e}"))?;
        Ok::<Pmc, String>(p)
    };
    let mut clock = allocate("task-clock")?;
    let mut faults = allocate("page-faults")?;
    let page = pmc_linux::system::page_size();
    nix::sys::prctl::set_thp_disable(true).map_err(|e| format!("PR_SET_THP_DISABLE: {e}"))?;
    // Past the first page, where malloc writes its chunk header: fresh.
    let mut buf = vec![0u8; (64 << 20).max((PAGES + 1) * page)];
    clock.start().map_err(|e| e.to_string())?;
    let before = pmc_linux::system::thread_cpu_ns();
    std::hint::black_box(spin_ms(200));
    let burnt = pmc_linux::system::thread_cpu_ns() - before;
    clock.stop().map_err(|e| e.to_string())?;
    faults.start().map_err(|e| e.to_string())?;
    for i in 1..=PAGES {
        buf[i * page] = 1;
    }
    std::hint::black_box(&buf);
    faults.stop().map_err(|e| e.to_string())?;
    println!("backend={}", global::active());
    println!("task_clock={}", clock.read().map_err(|e| e.to_string())?);
    println!("burnt_ns={burnt}");
    println!("page_faults={}", faults.read().map_err(|e| e.to_string())?);
    println!("pages={PAGES}");
    println!(
        "cputype={}",
        pmc::cpuinfo().map_err(|e| e.to_string())?.cputype
    );
    println!("probe={}", pmc::probe::Report::detect().backend);
    Ok(())
}

/// Installs a seccomp filter on this process (before any thread exists)
/// making perf_event_open fail with `errno`, and reports what a direct
/// open through the binding now gets.
fn refuse_perf_event_open(errno: i32) -> Result<(), String> {
    use seccompiler::{BpfProgram, SeccompAction, SeccompFilter};
    let filter = SeccompFilter::new(
        [(libc::SYS_perf_event_open, vec![])].into_iter().collect(),
        SeccompAction::Allow,
        SeccompAction::Errno(errno as u32),
        std::env::consts::ARCH
            .try_into()
            .map_err(|e| format!("seccomp arch: {e:?}"))?,
    )
    .map_err(|e| format!("seccomp filter: {e}"))?;
    let program: BpfProgram = filter.try_into().map_err(|e| format!("bpf: {e:?}"))?;
    seccompiler::apply_filter(&program).map_err(|e| format!("apply seccomp: {e}"))?;
    use pmc_linux::attr::{Attr, EventConfig, Software};
    use pmc_linux::event::{Event, OpenFlags, Target};
    let attr = Attr::new(EventConfig::Software(Software::TaskClock))
        .disabled(true)
        .exclude_kernel(true);
    let direct = match Event::open(&attr, Target::CALLER, None, OpenFlags::empty()) {
        Ok(_) => "opened".to_string(),
        Err(e) => pmc_linux::error::errno_name(e.errno()).to_string(),
    };
    println!("direct_open={direct}");
    Ok(())
}
