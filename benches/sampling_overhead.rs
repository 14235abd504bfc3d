//! Sampling overhead: a CPU-bound workload (this binary re-executed) timed
//! by itself alone, under `pmc` TS sampling at 10 kHz with callchains into
//! a pmclog, and under `perf record -F 10000 -g`. The workload reports its
//! own loop time, so tool start-up does not count. Prints one JSON line.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::Instant;

use pmc::global::log::{self, MemoryLog};
use pmc::log::LogRecord;
use pmc::{Cpu, Flags, Mode, Pmc};

const ENV: &str = "PMC_BENCH_WORKLOAD";
const ITERATIONS: u64 = 400_000_000;

#[inline(never)]
fn work() -> u64 {
    let mut x = 1u64;
    for _ in 0..ITERATIONS {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
    }
    x
}

/// The workload: optionally waits for a line on stdin, then prints the
/// nanoseconds its loop took.
fn workload(handshake: bool) -> ! {
    if handshake {
        println!("ready");
        let mut l = String::new();
        let _ = std::io::stdin().read_line(&mut l);
    }
    let t = Instant::now();
    std::hint::black_box(work());
    println!("{}", t.elapsed().as_nanos());
    std::process::exit(0);
}

fn spawn(handshake: bool) -> std::process::Child {
    Command::new(std::env::current_exe().expect("exe"))
        .env(ENV, if handshake { "handshake" } else { "plain" })
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn workload")
}

fn last_number(out: &str) -> f64 {
    out.lines()
        .rev()
        .find_map(|l| l.trim().parse::<f64>().ok())
        .expect("workload printed its time")
}

fn alone() -> f64 {
    let out = spawn(false).wait_with_output().expect("run");
    last_number(&String::from_utf8_lossy(&out.stdout))
}

fn under_pmc() -> (f64, u64, usize) {
    let log = MemoryLog::new();
    log::configure_logfile(log.clone()).expect("log");
    let mut child = spawn(true);
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
    let mut line = String::new();
    stdout.read_line(&mut line).expect("ready");
    let mut pmc =
        Pmc::allocate_with_count("cpu-clock", Mode::TS, Flags::CALLCHAIN, Cpu::Any, 100_000)
            .expect("allocate");
    pmc.attach(child.id()).expect("attach");
    pmc.start().expect("start");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(b"go\n")
        .expect("go");
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stdout, &mut rest).expect("output");
    child.wait().expect("wait");
    pmc.stop().expect("stop");
    drop(pmc);
    log::close_logfile().expect("close");
    let events = log.events().expect("log parses");
    let lost = events
        .iter()
        .filter_map(|e| match e.record {
            LogRecord::Dropnotify { lost } => lost.map(u64::from),
            _ => None,
        })
        .sum();
    let samples = events
        .iter()
        .filter(|e| matches!(e.record, LogRecord::Callchain { .. }))
        .count();
    (last_number(&rest), lost, samples)
}

fn under_perf() -> Option<f64> {
    let out = Command::new("perf")
        .args([
            "record",
            "-q",
            "-F",
            "10000",
            "-g",
            "-o",
            "/tmp/pmc-bench-perf.data",
            "--",
        ])
        .arg(std::env::current_exe().ok()?)
        .env(ENV, "plain")
        .output()
        .ok()?;
    let _ = std::fs::remove_file("/tmp/pmc-bench-perf.data");
    out.status
        .success()
        .then(|| last_number(&String::from_utf8_lossy(&out.stdout)))
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    if let Ok(mode) = std::env::var(ENV) {
        workload(mode == "handshake");
    }
    let mut base = Vec::new();
    let mut ours = Vec::new();
    let mut perf = Vec::new();
    // pmc's time over perf's in the same round: pairs out the machine's
    // drift between rounds.
    let mut versus_perf = Vec::new();
    let mut lost = 0;
    let mut samples = 0;
    for _ in 0..7 {
        base.push(alone());
        let (t, l, s) = under_pmc();
        ours.push(t);
        lost += l;
        samples += s;
        if let Some(p) = under_perf() {
            perf.push(p);
            versus_perf.push(t / p);
        }
    }
    let base = median(base);
    let ours = median(ours);
    let perf = (!perf.is_empty()).then(|| median(perf));
    let quartiles = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        (v[v.len() / 4], v[v.len() / 2], v[v.len() * 3 / 4])
    };
    let versus = (!versus_perf.is_empty()).then(|| quartiles(versus_perf));
    println!(
        "{{\"subject\":\"sampling\",\"alone_ns\":{base:.0},\"pmc_ns\":{ours:.0},\"perf_ns\":{},\"pmc_slowdown\":{:.4},\"perf_slowdown\":{},\"pmc_over_perf\":{},\"pmc_over_perf_q1\":{},\"pmc_over_perf_q3\":{},\"lost\":{lost},\"samples\":{samples}}}",
        perf.map_or("null".into(), |p| format!("{p:.0}")),
        ours / base,
        perf.map_or("null".into(), |p| format!("{:.4}", p / base)),
        versus.map_or("null".into(), |v| format!("{:.4}", v.1)),
        versus.map_or("null".into(), |v| format!("{:.4}", v.0)),
        versus.map_or("null".into(), |v| format!("{:.4}", v.2)),
    );
}
