//! `cargo xtask bench`'s exporter case (issue 37 §5): the cost of one
//! scrape of `pmcstat --listen` counting ten software events system-wide
//! (on this machine's CPUs: 2 × 10 PMCs). Figures, each beside the same
//! server's `GET /` (an HTTP round trip that reads no PMC) measured in
//! the same run: the median scrape latency, and pmcstat's CPU per scrape
//! (its CPU over the scrapes less what it spends idle over that time,
//! from /proc/PID/stat, which counts every thread, exited ones too).

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Ten software events: every machine has them, no PMU needed.
const EVENTS: [&str; 10] = [
    "cpu-clock",
    "task-clock",
    "page-faults",
    "context-switches",
    "cpu-migrations",
    "minor-faults",
    "major-faults",
    "alignment-faults",
    "emulation-faults",
    "cgroup-switches",
];

/// Requests per measured series: /proc's CPU times tick at 10 ms, so the
/// CPU of 1000 requests is known to about 10 µs per request.
const REQUESTS: usize = 1000;

/// Targets: a scrape costs Prometheus's default 15 s interval nothing
/// that matters.
const LATENCY_TARGET_MS: f64 = 5.0;
const CPU_TARGET_MS: f64 = 1.0;

/// pmcstat, killed and reaped however the case ends.
struct Reaped(Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Builds the release `pmcstat` and runs the case with it.
pub fn run(cargo: &str) -> Result<(), String> {
    let pmcstat = crate::bench_report::release_pmcstat(cargo)?;
    run_with(&pmcstat)
}

fn run_with(pmcstat: &Path) -> Result<(), String> {
    let port = TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map_err(|e| format!("a free loopback port: {e}"))?
        .port();
    let mut command = Command::new(pmcstat);
    command.arg("--listen").arg(format!("127.0.0.1:{port}"));
    for e in EVENTS {
        command.args(["-s", e]);
    }
    let child = command
        .args(["-o", "/dev/null"])
        .stdin(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("{}: {e}", pmcstat.display()))?;
    let pmcstat = Reaped(child);
    let pid = pmcstat.0.id();
    wait_until_served(port)?;

    let cpus = count_series(&get(port, "/metrics")?);
    let idle_rate = {
        let (cpu0, t0) = (cpu_seconds(pid)?, Instant::now());
        std::thread::sleep(Duration::from_secs(2));
        (cpu_seconds(pid)? - cpu0) / t0.elapsed().as_secs_f64()
    };
    let (scrape_ms, scrape_cpu_ms) = series(port, pid, "/metrics", idle_rate)?;
    let (index_ms, index_cpu_ms) = series(port, pid, "/", idle_rate)?;
    drop(pmcstat);

    println!(
        "\nexporter: pmcstat --listen, {} events × {cpus} series each ({REQUESTS} requests per figure)",
        EVENTS.len()
    );
    report(
        "scrape_latency",
        "GET /metrics latency (median) vs GET /",
        scrape_ms,
        index_ms,
        "ms",
        LATENCY_TARGET_MS,
    );
    report(
        "scrape_cpu",
        "pmcstat CPU per scrape vs per GET /",
        scrape_cpu_ms,
        index_cpu_ms,
        "ms",
        CPU_TARGET_MS,
    );
    Ok(())
}

/// Polls until pmcstat answers (it binds before it allocates).
fn wait_until_served(port: u16) -> Result<(), String> {
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(30) {
        if get(port, "/metrics").is_ok() {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Err("pmcstat --listen did not answer within 30 s".into())
}

/// The number of CPUs each event was counted on (series per event).
fn count_series(body: &str) -> usize {
    body.lines()
        .filter(|l| l.starts_with("pmc_events_total{event=\"cpu-clock\""))
        .count()
}

/// `REQUESTS` GETs of `path`: the median latency and pmcstat's CPU per
/// request beyond its idle rate, both in ms.
fn series(port: u16, pid: u32, path: &str, idle_rate: f64) -> Result<(f64, f64), String> {
    let mut latencies = Vec::with_capacity(REQUESTS);
    let cpu0 = cpu_seconds(pid)?;
    let t0 = Instant::now();
    for _ in 0..REQUESTS {
        let start = Instant::now();
        get(port, path)?;
        latencies.push(start.elapsed().as_secs_f64() * 1e3);
    }
    let busy = cpu_seconds(pid)? - cpu0 - idle_rate * t0.elapsed().as_secs_f64();
    latencies.sort_by(f64::total_cmp);
    Ok((
        latencies[REQUESTS / 2],
        (busy.max(0.0) / REQUESTS as f64) * 1e3,
    ))
}

/// One GET over a fresh connection, as a scraper without keep-alive.
fn get(port: u16, path: &str) -> Result<String, String> {
    let mut stream =
        TcpStream::connect(("127.0.0.1", port)).map_err(|e| format!("connect: {e}"))?;
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    )
    .map_err(|e| format!("send: {e}"))?;
    let mut response = String::new();
    stream
        .read_to_string(&mut response)
        .map_err(|e| format!("receive: {e}"))?;
    if !response.starts_with("HTTP/1.1 200") {
        return Err(format!(
            "GET {path}: {}",
            response.lines().next().unwrap_or("")
        ));
    }
    Ok(response)
}

/// User + system CPU seconds of every thread of `pid`, exited ones
/// included (/proc/PID/stat's utime and stime, in clock ticks).
fn cpu_seconds(pid: u32) -> Result<f64, String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map_err(|e| format!("/proc/{pid}/stat: {e}"))?;
    // Fields after the command's closing parenthesis: state is field 3,
    // utime 14 and stime 15.
    let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let fields: Vec<&str> = after.split_whitespace().collect();
    let ticks = |i: usize| fields.get(i).and_then(|f| f.parse::<f64>().ok());
    let (Some(user), Some(system)) = (ticks(11), ticks(12)) else {
        return Err(format!("/proc/{pid}/stat: no utime and stime in {stat:?}"));
    };
    // /proc counts in USER_HZ, 100 on every Linux architecture.
    Ok((user + system) / 100.0)
}

/// Prints one figure and keeps it (`bench_summary::record`).
fn report(figure: &str, what: &str, ours: f64, baseline: f64, unit: &str, target: f64) {
    let ratio = ours / baseline;
    let met = ours <= target;
    let target_text = format!("<= {target} {unit}");
    println!(
        "{what:<46} {ours:>9.3}{unit} {baseline:>9.3}{unit} {ratio:>7.2} {target_text:>10}  {}",
        if met { "met" } else { "MISSED" }
    );
    crate::bench_summary::record(&crate::bench_summary::Figure {
        case: "exporter",
        figure,
        what,
        ours,
        baseline,
        unit,
        ratio: Some(ratio),
        target: &target_text,
        met,
    });
}
