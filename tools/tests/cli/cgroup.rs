//! `pmcstat -s … --cgroup` against `perf stat -a -G`: a busy loop inside a
//! cgroup made for the test and one outside it, counted by both tools over
//! the same window (run side by side), split as perf splits them.
//!
//! Gated on root (making a cgroup, moving a task into it), perf on PATH,
//! and a cgroup2 mount in /proc/self/mountinfo, read here (`[cgroup2]`).

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use libtest_mimic::{Completion, Failed, Trial};
use pmc::probe::{Environment, Requirement as R};

use crate::ensure;
use crate::harness::{Context, FORCE_ENV, Forced, Gate, gate};

const PMCSTAT: &str = env!("CARGO_BIN_EXE_pmcstat");

const SPLIT_TEST: &str = "cgroup::a_cgroups_count_splits_as_perf_stat_g_splits_it";
const USAGE_TEST: &str = "cgroup::a_cgroup_without_s_is_a_usage_error";
const PORTABLE_TEST: &str = "cgroup::the_portable_backend_refuses_a_cgroup_as_a_linux_extension";
const EXPORTER_TEST: &str = "cgroup::the_exporter_labels_a_cgroups_series";

/// How far pmcstat's count of the cgroup may be from perf's: both count
/// the same loop over windows of the same length started together, which
/// differ by their tools' start-up (tens of milliseconds on a loaded
/// machine): 10 % of perf's count, and 50 ms of CPU.
const TOLERANCE: f64 = 0.10;
const SLACK_NS: f64 = 50e6;

/// The mount point of the first cgroup2 file system (the gate's own look).
fn cgroup2_mount() -> Option<PathBuf> {
    let text = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    text.lines().find_map(|line| {
        let (before, after) = line.split_once(" - ")?;
        (after.split(' ').next()? == "cgroup2").then_some(())?;
        Some(PathBuf::from(
            before.split(' ').nth(4)?.replace("\\040", " "),
        ))
    })
}

fn forced_token(token: &str) -> bool {
    match Forced::parse(std::env::var(FORCE_ENV).ok().as_deref()) {
        Forced::Nothing => false,
        Forced::Everything => true,
        Forced::Tokens(t) => t.iter().any(|t| t == token),
    }
}

pub fn trials(env: &Environment) -> Vec<Trial> {
    let forced = Forced::parse(std::env::var(FORCE_ENV).ok().as_deref());
    let verdict = gate(&[R::Root, R::Program("perf".into())], env, &forced);
    let mount = cgroup2_mount();
    let verdict = match (verdict, &mount) {
        (Gate::Run, None) if !forced_token("cgroup2") => {
            Gate::Skip("[cgroup2] no cgroup2 file system in /proc/self/mountinfo".into())
        }
        (Gate::Skip(reason), None) if !forced_token("cgroup2") => Gate::Skip(format!(
            "{reason}; [cgroup2] no cgroup2 file system in /proc/self/mountinfo"
        )),
        (verdict, _) => verdict,
    };
    let (exporter_verdict, exporter_mount) = (verdict.clone(), mount.clone());
    vec![
        Trial::ignorable_test(SPLIT_TEST, move || match verdict {
            Gate::Skip(reason) => Ok(Completion::ignored_with(reason)),
            Gate::Fail(reason) => Err(Failed::from(reason)),
            Gate::Run => {
                let mount = mount.clone().ok_or("no cgroup2 mount")?;
                a_cgroups_count_splits_as_perf_stat_g_splits_it(mount)
                    .map(|()| Completion::Completed)
            }
        }),
        Trial::ignorable_test(EXPORTER_TEST, move || match exporter_verdict {
            Gate::Skip(reason) => Ok(Completion::ignored_with(reason)),
            Gate::Fail(reason) => Err(Failed::from(reason)),
            Gate::Run => {
                let mount = exporter_mount.clone().ok_or("no cgroup2 mount")?;
                the_exporter_labels_a_cgroups_series(mount).map(|()| Completion::Completed)
            }
        }),
        Trial::test(USAGE_TEST, a_cgroup_without_s_is_a_usage_error),
        Trial::test(
            PORTABLE_TEST,
            the_portable_backend_refuses_a_cgroup_as_a_linux_extension,
        ),
    ]
}

/// A cgroup made for the test, with the tasks moved into it; on drop
/// (failure too) the tasks are killed and the cgroup removed.
struct TestCgroup {
    dir: PathBuf,
    tasks: Vec<Child>,
}

impl TestCgroup {
    fn make(mount: &std::path::Path, suffix: &str) -> Result<TestCgroup, Failed> {
        let dir = mount.join(format!("pmc-cli-{}-{suffix}", std::process::id()));
        std::fs::create_dir(&dir).ctx(&format!("mkdir {}", dir.display()))?;
        Ok(TestCgroup {
            dir,
            tasks: Vec::new(),
        })
    }

    fn name(&self) -> String {
        self.dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    }

    fn adopt(&mut self, child: Child) -> Result<u32, Failed> {
        let pid = child.id();
        self.tasks.push(child);
        std::fs::write(self.dir.join("cgroup.procs"), pid.to_string()).ctx("write cgroup.procs")?;
        Ok(pid)
    }
}

impl Drop for TestCgroup {
    fn drop(&mut self) {
        for child in &mut self.tasks {
            let _ = child.kill();
            let _ = child.wait();
        }
        let deadline = Instant::now() + Duration::from_secs(5);
        while std::fs::remove_dir(&self.dir).is_err() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// A loop outside any test cgroup, killed on drop.
struct Outside(Child);

impl Drop for Outside {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn busy_loop() -> Result<Child, Failed> {
    Command::new("sh")
        .args(["-c", "while :; do :; done"])
        .stdin(Stdio::null())
        .spawn()
        .ctx("spawn a busy loop")
}

/// A task's CPU time so far, in ns (`/proc/PID/schedstat`).
fn cpu_ns(pid: u32) -> Result<f64, Failed> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/schedstat")).ctx("schedstat")?;
    text.split_whitespace()
        .next()
        .and_then(|f| f.parse().ok())
        .ok_or_else(|| Failed::from(format!("schedstat {text:?}")))
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// One loop in cgroup `busy`, none in cgroup `idle`, one outside both.
/// `pmcstat -s cpu-clock --cgroup busy --cgroup idle -l 2 --json` and
/// `perf stat -a -e cpu-clock -G busy,idle -- sleep 2` run side by side:
/// perf counts the busy cgroup the loop's CPU time; pmcstat's count is
/// perf's within [`TOLERANCE`] and [`SLACK_NS`], at most the loop's own
/// CPU time over the whole run (so not the loop outside: the cgroup's
/// count is about one busy CPU, well under two), and the idle cgroup's
/// is 0 in both. The table labels a column per cgroup.
fn a_cgroups_count_splits_as_perf_stat_g_splits_it(mount: PathBuf) -> Result<(), Failed> {
    let mut busy = TestCgroup::make(&mount, "busy")?;
    let idle = TestCgroup::make(&mount, "idle")?;
    let inside = busy.adopt(busy_loop()?)?;
    let outside = Outside(busy_loop()?);
    let (b, i) = (busy.name(), idle.name());
    let (inside_before, outside_before) = (cpu_ns(inside)?, cpu_ns(outside.0.id())?);
    let perf = Command::new("perf")
        .args(["stat", "-a", "-x", ",", "-e", "cpu-clock,cpu-clock", "-G"])
        .arg(format!("{b},{i}"))
        .args(["--", "sleep", "2"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .ctx("spawn perf stat")?;
    let ours = Command::new(PMCSTAT)
        .args([
            "--json",
            "-s",
            "cpu-clock",
            "--cgroup",
            &b,
            "--cgroup",
            &i,
            "-l",
            "2",
        ])
        .stdin(Stdio::null())
        .output()
        .ctx("run pmcstat")?;
    let perf = perf.wait_with_output().ctx("wait for perf stat")?;
    let inside_ran = cpu_ns(inside)? - inside_before;
    let outside_ran = cpu_ns(outside.0.id())? - outside_before;
    ensure!(
        ours.status.success(),
        "pmcstat: {:?}\n{}",
        ours.status,
        text(&ours.stderr)
    );
    ensure!(
        perf.status.success(),
        "perf stat: {:?}\n{}",
        perf.status,
        text(&perf.stderr)
    );
    let pmcstat_of = counts_of_pmcstat(&text(&ours.stderr))?;
    let perf_of = counts_of_perf(&text(&perf.stderr))?;
    let get = |counts: &[(String, f64)], cgroup: &str| {
        counts
            .iter()
            .find(|(c, _)| c == cgroup)
            .map(|&(_, v)| v)
            .ok_or_else(|| Failed::from(format!("no count for cgroup {cgroup} in {counts:?}")))
    };
    let (our_busy, our_idle) = (get(&pmcstat_of, &b)?, get(&pmcstat_of, &i)?);
    let (perf_busy, perf_idle) = (get(&perf_of, &b)?, get(&perf_of, &i)?);
    let summary = format!(
        "cgroup {b}: pmcstat {our_busy:.0} ns, perf stat {perf_busy:.0} ns; cgroup {i}: \
         {our_idle:.0} and {perf_idle:.0} ns; the loop inside ran {inside_ran:.0} ns, the one \
         outside {outside_ran:.0} ns over the whole run"
    );
    println!("{summary}");
    ensure!(
        our_idle == 0.0 && perf_idle == 0.0,
        "a cgroup without tasks counted: {summary}"
    );
    ensure!(
        perf_busy > 0.0 && perf_busy <= inside_ran * 1.02 + 5e6,
        "perf stat's own split is not the loop's: {summary}"
    );
    ensure!(
        (our_busy - perf_busy).abs() <= TOLERANCE * perf_busy + SLACK_NS,
        "pmcstat and perf stat -G apart by more than {:.0} % + {:.0} ms: {summary}",
        TOLERANCE * 100.0,
        SLACK_NS / 1e6
    );
    ensure!(
        our_busy <= inside_ran * 1.02 + 5e6,
        "pmcstat counted more than the loop inside ran (the one outside too?): {summary}"
    );
    // The table: a column per cgroup, labelled with it.
    let table = Command::new(PMCSTAT)
        .args([
            "-s",
            "cpu-clock",
            "--cgroup",
            &b,
            "--cgroup",
            &i,
            "-l",
            "0.2",
        ])
        .stdin(Stdio::null())
        .output()
        .ctx("run pmcstat (table)")?;
    let header = text(&table.stderr);
    ensure!(
        table.status.success()
            && header.contains(&format!("s/{b}/cpu-clock"))
            && header.contains(&format!("s/{i}/cpu-clock")),
        "the table's header names no cgroup: {header}"
    );
    drop(idle);
    Ok(())
}

/// (cgroup, ns) from pmcstat's JSON line: labels `s/cpu-clock@CGROUP`.
fn counts_of_pmcstat(out: &str) -> Result<Vec<(String, f64)>, Failed> {
    let line = out
        .lines()
        .rev()
        .find(|l| l.starts_with('{'))
        .ok_or_else(|| Failed::from(format!("no JSON line in {out:?}")))?;
    let json: serde_json::Value = serde_json::from_str(line).ctx("pmcstat's JSON")?;
    let counters = json["counters"]
        .as_array()
        .ok_or_else(|| Failed::from(format!("no counters in {line}")))?;
    counters
        .iter()
        .map(|c| {
            let label = c["label"].as_str().unwrap_or_default();
            let cgroup = label
                .strip_prefix("s/cpu-clock@")
                .ok_or_else(|| Failed::from(format!("label {label:?}")))?;
            Ok((cgroup.to_string(), c["value"].as_f64().unwrap_or(-1.0)))
        })
        .collect()
}

/// (cgroup, ns) from `perf stat -x,`: `VALUE,msec,cpu-clock,CGROUP,…`,
/// `<not counted>` as 0.
fn counts_of_perf(out: &str) -> Result<Vec<(String, f64)>, Failed> {
    let rows: Vec<(String, f64)> = out
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            (f.len() > 3 && f[2] == "cpu-clock").then_some(())?;
            let msec = if f[0] == "<not counted>" {
                0.0
            } else {
                f[0].parse::<f64>().ok()?
            };
            Some((f[3].to_string(), msec * 1e6))
        })
        .collect();
    ensure!(rows.len() == 2, "perf stat -x, printed {out:?}");
    Ok(rows)
}

/// `--cgroup` restricts `-s`: without one it is EX_USAGE (64) with the
/// reason, before anything is counted.
fn a_cgroup_without_s_is_a_usage_error() -> Result<(), Failed> {
    let out = Command::new(PMCSTAT)
        .args(["--cgroup", "web", "-p", "task-clock", "--", "true"])
        .stdin(Stdio::null())
        .output()
        .ctx("run pmcstat")?;
    let err = text(&out.stderr);
    ensure!(
        out.status.code() == Some(64) && err.contains("--cgroup") && err.contains("-s"),
        "{:?}: {err}",
        out.status
    );
    Ok(())
}

/// A backend that cannot count per cgroup (the portable one here, as
/// FreeBSD's) refuses `--cgroup` with EOPNOTSUPP, naming the Linux
/// extension: exit 71 (EX_OSERR) before anything is counted.
fn the_portable_backend_refuses_a_cgroup_as_a_linux_extension() -> Result<(), Failed> {
    let out = Command::new(PMCSTAT)
        .env("PMC_BACKEND", "portable")
        .args(["-s", "cpu-clock", "--cgroup", "web", "-l", "0.1"])
        .stdin(Stdio::null())
        .output()
        .ctx("run pmcstat")?;
    let err = text(&out.stderr);
    ensure!(
        out.status.code() == Some(71)
            && err.contains("EOPNOTSUPP")
            && err.contains("Linux extension"),
        "{:?}: {err}",
        out.status
    );
    Ok(())
}

/// `--listen` with `--cgroup`: each CPU's series of the cgroup's counter
/// carries the `cgroup` label, and counts the busy loop in it (the CPUs'
/// series of a cgroup with a busy task add up to more than nothing).
fn the_exporter_labels_a_cgroups_series(mount: PathBuf) -> Result<(), Failed> {
    use crate::prometheus::{Reaped, free_port, get};
    let mut busy = TestCgroup::make(&mount, "listen")?;
    busy.adopt(busy_loop()?)?;
    let name = busy.name();
    let port = free_port()?;
    let _pmcstat = Reaped(
        Command::new(PMCSTAT)
            .args(["--listen", &format!("127.0.0.1:{port}")])
            .args(["-s", "cpu-clock", "--cgroup", &name, "-l", "20"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .ctx("pmcstat --listen --cgroup")?,
    );
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let body = match get(port, "/metrics", "*/*") {
            Ok((200, body)) => body,
            _ if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(100));
                continue;
            }
            other => return Err(format!("no scrape of pmcstat --listen: {other:?}").into()),
        };
        let label = format!("cgroup=\"{name}\"");
        let series: Vec<&str> = body
            .lines()
            .filter(|l| l.starts_with("pmc_events_total{") && l.contains(&label))
            .collect();
        ensure!(
            !series.is_empty(),
            "no pmc_events_total series labelled {label} in:\n{body}"
        );
        ensure!(
            series.iter().all(|l| l.contains("cpu=\"")),
            "a cgroup counter's series are per CPU: {series:?}"
        );
        let total: f64 = series
            .iter()
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .sum();
        if total > 0.0 {
            return Ok(());
        }
        ensure!(
            Instant::now() < deadline,
            "the cgroup's series stay 0 with a busy loop in it: {series:?}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}
