//! `pmcstat --listen` scraped by the real Prometheus (Debian's package):
//! what Prometheus stored is what pmcstat printed at its -w intervals, and
//! `promtool check metrics` passes on a scrape. Only 127.0.0.1; the test
//! starts and stops both processes itself (Debian's packaged service is
//! never used).

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use pmc::probe::Requirement as R;

use crate::ensure;
use crate::harness::{Context, LiveTest, TestResult, test};
use crate::temp::TempDir;

const PMCSTAT: &str = env!("CARGO_BIN_EXE_pmcstat");

/// A bound on waiting for Prometheus to start and scrape three times (it
/// needs about 5 s): against a hang, not a measure.
const PATIENCE: Duration = Duration::from_secs(120);

/// The events counted: one that runs on every CPU all the time, one that
/// the workload drives in bursts.
const EVENTS: [&str; 2] = ["cpu-clock", "context-switches"];

pub fn tests() -> Vec<LiveTest> {
    vec![
        test(
            "prometheus::prometheus_stores_what_pmcstat_prints_and_promtool_passes_a_scrape",
            vec![
                R::Paranoid(0),
                R::Program("prometheus".into()),
                R::Program("promtool".into()),
            ],
            prometheus_stores_what_pmcstat_prints_and_promtool_passes_a_scrape,
        ),
        test(
            "prometheus::listen_labels_a_commands_counts_refuses_a_taken_port_and_ends_with_it",
            vec![R::Paranoid(2)],
            listen_labels_a_commands_counts_refuses_a_taken_port_and_ends_with_it,
        ),
    ]
}

/// `-p` with a command: its series carry the command's pid and name; a
/// second pmcstat on the same port fails before it runs anything, saying
/// the errno; the server goes with the command's end.
fn listen_labels_a_commands_counts_refuses_a_taken_port_and_ends_with_it() -> TestResult {
    let port = free_port()?;
    let listen = format!("127.0.0.1:{port}");
    let exe = std::env::current_exe().ctx("current_exe")?;
    let mut pmcstat = Reaped(
        Command::new(PMCSTAT)
            .args(["--listen", &listen, "-p", "task-clock,usr", "--"])
            .arg(&exe)
            .arg("2000")
            .env(crate::workloads::ENV, "hot")
            .stdin(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .ctx("pmcstat --listen -p")?,
    );
    let start = Instant::now();
    let body = loop {
        if let Ok((200, body)) = get(port, "/metrics", "*/*") {
            break body;
        }
        ensure!(
            start.elapsed() < PATIENCE,
            "pmcstat --listen never answered"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    let name = exe.file_name().unwrap_or_default().to_string_lossy();
    let series = body
        .lines()
        .find(|l| l.starts_with("pmc_events_total{"))
        .ok_or_else(|| format!("no pmc_events_total in\n{body}"))?;
    let pid = series
        .split("pid=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .and_then(|p| p.parse::<u32>().ok())
        .ok_or_else(|| format!("no numeric pid label in {series}"))?;
    ensure!(
        series.contains(r#"event="task-clock,usr",mode="TC""#)
            && series.contains(&format!(r#"command="{name}""#))
            && !series.contains("cpu="),
        "{series}"
    );
    ensure!(
        pid != pmcstat.0.id(),
        "the pid label is pmcstat's own: {series}"
    );

    let taken = Command::new(PMCSTAT)
        .args(["--listen", &listen, "-p", "task-clock,usr", "--", "true"])
        .stdin(Stdio::null())
        .output()
        .ctx("a second pmcstat --listen")?;
    let said = String::from_utf8_lossy(&taken.stderr);
    ensure!(
        taken.status.code() == Some(71) && said.contains("EADDRINUSE") && said.contains("--listen"),
        "a taken port: {:?}, {said}",
        taken.status
    );

    let status = pmcstat.0.wait().ctx("wait for pmcstat")?;
    ensure!(status.success(), "pmcstat: {status:?}");
    ensure!(
        TcpStream::connect(("127.0.0.1", port)).is_err(),
        "port {port} still served after pmcstat's command ended"
    );
    Ok(())
}

/// A child killed and reaped when the test ends, failed or not.
pub(crate) struct Reaped(pub(crate) Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A loopback port free now (the kernel picks it; nothing else on this
/// machine is told to take it meanwhile).
pub(crate) fn free_port() -> Result<u16, libtest_mimic::Failed> {
    let listener = TcpListener::bind("127.0.0.1:0").ctx("bind 127.0.0.1:0")?;
    Ok(listener.local_addr().ctx("local_addr")?.port())
}

/// `GET path` of 127.0.0.1:`port` with `accept`: the status and the body.
pub(crate) fn get(
    port: u16,
    path: &str,
    accept: &str,
) -> Result<(u16, String), libtest_mimic::Failed> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).ctx("connect")?;
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .ctx("set_read_timeout")?;
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAccept: {accept}\r\nConnection: close\r\n\r\n"
    )
    .ctx("send the request")?;
    let mut response = String::new();
    stream
        .read_to_string(&mut response)
        .ctx("read the response")?;
    let (head, body) = response
        .split_once("\r\n\r\n")
        .ok_or_else(|| format!("no end of headers in {response:?}"))?;
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| format!("no status in {head:?}"))?;
    // Prometheus's API answers chunked; a chunk-size line is hex alone.
    let body = if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        dechunk(body)
    } else {
        body.to_string()
    };
    Ok((status, body))
}

fn dechunk(mut rest: &str) -> String {
    let mut out = String::new();
    while let Some((size, after)) = rest.split_once("\r\n") {
        let Ok(n) = usize::from_str_radix(size.trim(), 16) else {
            break;
        };
        if n == 0 || after.len() < n {
            break;
        }
        out.push_str(&after[..n]);
        rest = after[n..].trim_start_matches("\r\n");
    }
    out
}

/// Prometheus's answer to the instant query `q`: its `result` array.
fn query(port: u16, q: &str) -> Result<Vec<serde_json::Value>, libtest_mimic::Failed> {
    let encoded: String = q
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect();
    let (status, body) = get(port, &format!("/api/v1/query?query={encoded}"), "*/*")?;
    ensure!(status == 200, "query {q}: status {status}: {body}");
    let v: serde_json::Value = serde_json::from_str(&body).ctx("the query's JSON")?;
    Ok(v["data"]["result"].as_array().cloned().unwrap_or_default())
}

/// A sample's value (`[time, "value"]`) as a number.
fn value_of(sample: &serde_json::Value) -> Result<f64, libtest_mimic::Failed> {
    sample[1]
        .as_str()
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| format!("no value in {sample}").into())
}

/// pmcstat's -C table: each column's name (`s/00/cpu-clock`) with its
/// totals, one per printed line.
fn table_columns(text: &str) -> Vec<(String, Vec<f64>)> {
    let mut columns: Vec<(String, Vec<f64>)> = Vec::new();
    for line in text.lines() {
        if let Some(header) = line.strip_prefix('#') {
            if columns.is_empty() {
                columns = header
                    .split_whitespace()
                    .map(|n| (n.to_string(), Vec::new()))
                    .collect();
            }
            continue;
        }
        let values: Vec<f64> = line
            .split_whitespace()
            .filter_map(|v| v.parse().ok())
            .collect();
        if values.len() == columns.len() {
            for (column, v) in columns.iter_mut().zip(values) {
                column.1.push(v);
            }
        }
    }
    columns
}

fn prometheus_stores_what_pmcstat_prints_and_promtool_passes_a_scrape() -> TestResult {
    let dir = TempDir::new("prometheus")?;
    let exporter_port = free_port()?;
    let prometheus_port = free_port()?;
    let exe = std::env::current_exe().ctx("current_exe")?;
    let _busy = Reaped(
        Command::new(&exe)
            .arg("60000")
            .env(crate::workloads::ENV, "hot")
            .stdout(Stdio::null())
            .spawn()
            .ctx("the busy workload")?,
    );
    let counts = dir.path("counts.txt");
    // pmcstat starts its clock a little after this: its lines are up to
    // that much later than the times computed from here.
    let started_at = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .ctx("the clock")?
        .as_secs_f64();
    let listen = format!("127.0.0.1:{exporter_port}");
    let mut args = vec!["--listen", &listen, "-C"];
    for event in EVENTS {
        args.extend(["-s", event]);
    }
    args.extend(["-w", "1", "-o", &counts]);
    let mut pmcstat = Reaped(
        Command::new(PMCSTAT)
            .args(&args)
            .stdin(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .ctx("pmcstat --listen")?,
    );

    let config = dir.join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n\
             scrape_configs:\n  - job_name: pmcstat\n    static_configs:\n      \
             - targets: ['127.0.0.1:{exporter_port}']\n"
        ),
    )
    .ctx("write prometheus.yml")?;
    let prometheus_log = std::fs::File::create(dir.join("prometheus.log")).ctx("prometheus.log")?;
    let _prometheus = Reaped(
        Command::new("prometheus")
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.join("data").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{prometheus_port}"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(prometheus_log)
            .spawn()
            .ctx("prometheus")?,
    );

    // Three scrapes stored for each series.
    let start = Instant::now();
    let scrapes = loop {
        let series = query(prometheus_port, "count_over_time(pmc_up[5m])").unwrap_or_default();
        let fewest = series
            .iter()
            .map(|s| value_of(&s["value"]).unwrap_or(0.0))
            .fold(f64::INFINITY, f64::min);
        if series.len() == 2 * EVENTS.len() && fewest >= 3.0 {
            break fewest;
        }
        // pmcstat refused (the paranoid level, say): its own error, not
        // Prometheus's silence, is the failure.
        if let Some(status) = pmcstat.0.try_wait().ctx("pmcstat's status")? {
            let mut said = String::new();
            if let Some(mut err) = pmcstat.0.stderr.take() {
                let _ = err.read_to_string(&mut said);
            }
            return Err(
                format!("pmcstat --listen ended ({status}) before three scrapes: {said}").into(),
            );
        }
        if start.elapsed() > PATIENCE {
            let log = std::fs::read_to_string(dir.join("prometheus.log")).unwrap_or_default();
            return Err(format!(
                "Prometheus stored {} series, the fewest scraped {fewest} times, after {PATIENCE:?}; its log:\n{log}",
                series.len()
            )
            .into());
        }
        std::thread::sleep(Duration::from_millis(500));
    };

    // promtool on one scrape as curl gets it (Prometheus's text format),
    // and the OpenMetrics one Prometheus gets ends as the format says.
    let (status, text) = get(exporter_port, "/metrics", "*/*")?;
    ensure!(status == 200, "GET /metrics: {status}");
    let mut promtool = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .ctx("promtool")?;
    promtool
        .stdin
        .take()
        .ok_or("promtool's stdin")?
        .write_all(text.as_bytes())
        .ctx("feed promtool")?;
    let checked = promtool.wait_with_output().ctx("promtool")?;
    ensure!(
        checked.status.success(),
        "promtool check metrics: {:?}\n{}{}\non:\n{text}",
        checked.status,
        String::from_utf8_lossy(&checked.stdout),
        String::from_utf8_lossy(&checked.stderr)
    );
    let (_, open_metrics) = get(
        exporter_port,
        "/metrics",
        "application/openmetrics-text;version=1.0.0",
    )?;
    ensure!(
        open_metrics.ends_with("# EOF\n"),
        "no # EOF: {open_metrics}"
    );
    let (status, _) = get(exporter_port, "/elsewhere", "*/*")?;
    ensure!(status == 404, "GET /elsewhere: {status}");

    // Every scrape stored, with its time.
    let stored = query(prometheus_port, "pmc_events_total[5m]")?;
    let up = query(prometheus_port, "up{job=\"pmcstat\"}")?;
    ensure!(
        up.len() == 1 && value_of(&up[0]["value"])? == 1.0,
        "up: {up:?}"
    );

    // pmcstat's own lines: its last one printed after the query.
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pmcstat.0.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .ctx("SIGTERM pmcstat")?;
    let status = pmcstat.0.wait().ctx("wait for pmcstat")?;
    let mut stderr = String::new();
    if let Some(mut e) = pmcstat.0.stderr.take() {
        let _ = e.read_to_string(&mut stderr);
    }
    ensure!(status.success(), "pmcstat: {status:?}\n{stderr}");
    let printed = std::fs::read_to_string(&counts).ctx("pmcstat's counts")?;
    let columns = table_columns(&printed);

    ensure!(
        stored.len() == 2 * EVENTS.len(),
        "Prometheus has {} pmc_events_total series, not one per event and CPU: {stored:?}",
        stored.len()
    );
    let mut compared = Vec::new();
    for series in &stored {
        let labels = &series["metric"];
        let event = labels["event"].as_str().unwrap_or_default();
        let cpu: u32 = labels["cpu"]
            .as_str()
            .and_then(|c| c.parse().ok())
            .ok_or_else(|| format!("no cpu label: {labels}"))?;
        ensure!(labels["mode"] == "SC", "mode: {labels}");
        let column = format!("s/{cpu:02}/{event}");
        let (_, totals) = columns
            .iter()
            .find(|(name, _)| *name == column)
            .ok_or_else(|| format!("no column {column} in pmcstat's lines:\n{printed}"))?;
        ensure!(
            totals.len() >= 3 && totals.windows(2).all(|w| w[0] <= w[1]),
            "{column}: not three rising totals in pmcstat's lines:\n{printed}"
        );
        let samples = series["values"].as_array().cloned().unwrap_or_default();
        ensure!(
            samples.len() >= 3,
            "{column}: {} scrapes stored",
            samples.len()
        );
        let mut previous = 0.0;
        for sample in &samples {
            let v = value_of(sample)?;
            let at = sample[0]
                .as_f64()
                .ok_or_else(|| format!("no time in {sample}"))?;
            // pmcstat's line n (from 1) is its total n seconds after it
            // started (a tick of -w 1); the last one, at SIGTERM, is the
            // final total. A scrape `elapsed` seconds in read a value
            // between the lines one interval either side of it.
            let elapsed = at - started_at;
            let line = |n: f64| -> f64 {
                if n < 1.0 {
                    0.0
                } else {
                    let last = totals.len() - 1;
                    totals[(n as usize - 1).min(last)]
                }
            };
            let (low, high) = (line(elapsed.floor() - 1.0), line(elapsed.ceil() + 1.0));
            ensure!(
                v >= previous && low <= v && v <= high,
                "{column}: Prometheus stored {v} {elapsed:.3} s after pmcstat started, \
                 not between its totals {low} and {high} one interval either side \
                 (previous scrape {previous}); pmcstat printed {totals:?}"
            );
            previous = v;
        }
        compared.push(format!(
            "{column}: stored {} at {:.2} s, printed {totals:?}",
            previous,
            samples
                .last()
                .and_then(|s| s[0].as_f64())
                .unwrap_or_default()
                - started_at
        ));
    }
    eprintln!(
        "prometheus: {scrapes} scrapes or more; {}",
        compared.join("; ")
    );
    Ok(())
}
