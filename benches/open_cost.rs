//! The cost of opening (issue 14 §7), by paired rounds as `read_ratio`
//! does: every round times a subject and its raw-`perf_event_open`
//! baseline back to back (alternating which goes first), and the ratio is
//! the median over rounds of subject / baseline within a round.
//!
//! Subjects and their baselines (same attrs, from `attrs_for`):
//! - `open_cycle`: TC `task-clock` allocate → attach(0) → start → stop →
//!   release vs raw open / enable / disable / close;
//! - `percpu_open10`: `Pmc::builder(event).per_cpu()` (SC, every online CPU) of ten
//!   software events and drop vs raw opens of the ten attrs on each CPU;
//! - `allocate_tracepoint`: TC allocate + drop of a tracepoint vs raw
//!   open + close of it with another open of it held, so that neither
//!   registers the probe nor waits for RCU (skipped without tracefs);
//! - `allocate_software`: TC allocate + drop of `task-clock` vs raw open +
//!   close;
//! - `allocate_unknown`: allocate of a name no table knows (an error with
//!   suggestions) vs raw open + close of `task-clock`; its target is an
//!   absolute time, reported with the ratio.
//!
//! Each round also takes the thread CPU time of the same calls
//! (`subject_cpu_ns`, `baseline_cpu_ns`), and `cpu_ratio` is the median of
//! their per-round ratios: wall time on a shared, loaded machine includes
//! other programs' turns, thread CPU time only this thread's work (its
//! system calls included), so the targets are judged on CPU time (the
//! absolute one, unknown name ≤ 50 µs, too) with the wall ratio beside.
//!
//! Prints one JSON object per line; `cargo xtask bench` reads them. With
//! `PMC_BENCH_JSON` set, the figures that have a target are also appended
//! to that file as `{"case": "opencost", "figure", "ours", "baseline",
//! "unit", "ratio", "target", "met"}` (the targets are those `cargo xtask
//! bench` prints: CPU ratio ≤ 1.25 for the cycle, ≤ 1.1 for `PerCpu`, ≤
//! 50 µs of CPU for the unknown name).

use std::hint::black_box;
use std::time::Instant;

use pmc::{Cpu, Flags, Mode, PerCpu, Pmc};
use pmc_linux::attr::Attr;
use pmc_linux::event::{Event, OpenFlags, Target};

const ROUNDS: usize = 21;

#[path = "common/software_events.rs"]
mod software_events;
use software_events::SOFTWARE_EVENTS;

/// A tracepoint that exists wherever tracefs does.
const TRACEPOINT: &str = "sched:sched_process_fork";

type Op<'a> = Box<dyn FnMut() + 'a>;

struct Pair<'a> {
    name: &'static str,
    what: String,
    calls: u32,
    subject: Op<'a>,
    baseline: Op<'a>,
}

/// Wall time and thread CPU time per call of `f`, over the same calls.
fn time(f: &mut dyn FnMut(), calls: u32) -> Timing {
    let cpu = thread_cpu_ns();
    let t = Instant::now();
    for _ in 0..calls {
        f();
    }
    Timing {
        wall_ns: t.elapsed().as_nanos() as f64 / f64::from(calls),
        cpu_ns: (thread_cpu_ns() - cpu) / f64::from(calls),
    }
}

#[derive(Clone, Copy)]
struct Timing {
    wall_ns: f64,
    cpu_ns: f64,
}

/// The calling thread's CPU time in ns: the absolute figure of a shared,
/// loaded machine (wall time there includes other programs' turns).
fn thread_cpu_ns() -> f64 {
    let t = nix::time::clock_gettime(nix::time::ClockId::CLOCK_THREAD_CPUTIME_ID)
        .expect("CLOCK_THREAD_CPUTIME_ID");
    t.tv_sec() as f64 * 1e9 + t.tv_nsec() as f64
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn quartiles(v: &mut [f64]) -> (f64, f64) {
    v.sort_by(f64::total_cmp);
    (v[v.len() / 4], v[3 * v.len() / 4])
}

fn attr_of(spec: &str, mode: Mode) -> Attr {
    pmc::__private_test_hooks::attrs_for(spec, mode, Flags::empty(), 0)
        .unwrap_or_else(|e| panic!("attrs_for {spec}: {e}"))[0]
}

fn raw_open(attr: &Attr, target: Target) -> Event {
    Event::open(attr, target, None, OpenFlags::empty()).expect("raw perf_event_open")
}

/// Whether `spec` can be allocated here (tracepoints need tracefs).
fn available(spec: &str) -> Result<(), String> {
    Pmc::allocate(spec, Mode::TC, Flags::empty(), Cpu::Any)
        .map(drop)
        .map_err(|e| e.to_string())
}

/// The target of a subject that has one: the CPU ratio's bound, or (for
/// the unknown name) the subject's CPU µs bound.
fn target(subject: &str) -> Option<(&'static str, f64)> {
    match subject {
        "open_cycle" => Some(("ratio", 1.25)),
        "percpu_open10" => Some(("ratio", 1.1)),
        "allocate_unknown" => Some(("us", 50.0)),
        _ => None,
    }
}

/// Appends a subject's figure to the file `PMC_BENCH_JSON` names, if it
/// does and the subject has a target.
fn record(subject: &str, subject_cpu_ns: f64, baseline_cpu_ns: f64, cpu_ratio: f64) {
    use std::io::Write;
    let (Ok(path), Some((kind, bound))) = (std::env::var("PMC_BENCH_JSON"), target(subject)) else {
        return;
    };
    let (target, met) = match kind {
        "ratio" => (format!("CPU ratio <= {bound}"), cpu_ratio <= bound),
        _ => (format!("CPU <= {bound} us"), subject_cpu_ns / 1e3 <= bound),
    };
    let line = serde_json::json!({
        "case": "opencost",
        "figure": subject,
        "ours": subject_cpu_ns / 1e3,
        "baseline": baseline_cpu_ns / 1e3,
        "unit": "us of thread CPU (median of rounds; ratio: median of per-round ratios)",
        "ratio": cpu_ratio,
        "target": target,
        "met": met,
    });
    let written = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .and_then(|mut f| writeln!(f, "{line}"));
    if let Err(e) = written {
        eprintln!("open_cost: appending to {path}: {e}");
    }
}

fn main() {
    let cpus = pmc::global::online_cpus();
    let task_clock = attr_of("task-clock", Mode::TC);
    let per_cpu_attrs: Vec<Attr> = SOFTWARE_EVENTS
        .iter()
        .map(|s| attr_of(s, Mode::SC))
        .collect();

    let mut pairs: Vec<Pair<'_>> = vec![
        Pair {
            name: "open_cycle",
            what: "TC task-clock allocate→attach(0)→start→stop→release".into(),
            calls: 500,
            subject: Box::new(|| {
                let mut p = Pmc::allocate("task-clock", Mode::TC, Flags::empty(), Cpu::Any)
                    .expect("allocate");
                p.attach(0).expect("attach");
                p.start().expect("start");
                p.stop().expect("stop");
                p.release().expect("release");
            }),
            baseline: Box::new(|| {
                let e = raw_open(&task_clock, Target::CALLER);
                e.enable().expect("enable");
                e.disable().expect("disable");
                drop(black_box(e));
            }),
        },
        Pair {
            name: "percpu_open10",
            what: format!(
                "PerCpu SC × {} events × {} CPUs",
                SOFTWARE_EVENTS.len(),
                cpus.len()
            ),
            calls: 50,
            subject: Box::new(|| {
                let all: Vec<PerCpu> = SOFTWARE_EVENTS
                    .iter()
                    .map(|s| Pmc::builder(*s).per_cpu().build().expect("PerCpu"))
                    .collect();
                drop(black_box(all));
            }),
            baseline: Box::new(|| {
                let all: Vec<Event> = per_cpu_attrs
                    .iter()
                    .flat_map(|a| cpus.iter().map(|&c| raw_open(a, Target::cpu(c))))
                    .collect();
                drop(black_box(all));
            }),
        },
        Pair {
            name: "allocate_software",
            what: "TC allocate+drop of task-clock".into(),
            calls: 500,
            subject: Box::new(|| {
                drop(black_box(
                    Pmc::allocate("task-clock", Mode::TC, Flags::empty(), Cpu::Any)
                        .expect("allocate"),
                ));
            }),
            baseline: Box::new(|| drop(black_box(raw_open(&task_clock, Target::CALLER)))),
        },
        Pair {
            name: "allocate_unknown",
            what: "allocate of an unknown name (error + suggestions)".into(),
            calls: 200,
            subject: Box::new(|| {
                let r = Pmc::allocate("no-such-evnt", Mode::TC, Flags::empty(), Cpu::Any);
                assert!(r.is_err(), "an unknown name allocated");
                drop(black_box(r));
            }),
            baseline: Box::new(|| drop(black_box(raw_open(&task_clock, Target::CALLER)))),
        },
    ];
    match available(TRACEPOINT) {
        Ok(()) => {
            let tp = attr_of(TRACEPOINT, Mode::TC);
            // Held open throughout: the first open of a tracepoint
            // registers its probe and the last close waits for an RCU
            // grace period (milliseconds), which is not the open's cost.
            let held = raw_open(&tp, Target::CALLER);
            pairs.push(Pair {
                name: "allocate_tracepoint",
                what: format!("TC allocate+drop of {TRACEPOINT}"),
                calls: 500,
                subject: Box::new(|| {
                    drop(black_box(
                        Pmc::allocate(TRACEPOINT, Mode::TC, Flags::empty(), Cpu::Any)
                            .expect("allocate"),
                    ));
                }),
                baseline: Box::new(move || {
                    black_box(&held);
                    drop(black_box(raw_open(&tp, Target::CALLER)));
                }),
            });
        }
        Err(why) => println!(
            "{}",
            serde_json::json!({"subject": "allocate_tracepoint", "skipped": why})
        ),
    }

    // Warm up every path (the first allocate of an event opens it once).
    for p in &mut pairs {
        time(p.baseline.as_mut(), 10);
        time(p.subject.as_mut(), 10);
    }
    for (i, p) in pairs.iter_mut().enumerate() {
        let mut base_ns = Vec::with_capacity(ROUNDS);
        let mut base_cpu_ns = Vec::with_capacity(ROUNDS);
        let mut subject_ns = Vec::with_capacity(ROUNDS);
        let mut subject_cpu_ns = Vec::with_capacity(ROUNDS);
        let mut ratios = Vec::with_capacity(ROUNDS);
        let mut cpu_ratios = Vec::with_capacity(ROUNDS);
        for round in 0..ROUNDS {
            let (b, s) = if (round + i) % 2 == 0 {
                let b = time(p.baseline.as_mut(), p.calls);
                (b, time(p.subject.as_mut(), p.calls))
            } else {
                let s = time(p.subject.as_mut(), p.calls);
                (time(p.baseline.as_mut(), p.calls), s)
            };
            base_ns.push(b.wall_ns);
            base_cpu_ns.push(b.cpu_ns);
            subject_ns.push(s.wall_ns);
            subject_cpu_ns.push(s.cpu_ns);
            ratios.push(s.wall_ns / b.wall_ns);
            cpu_ratios.push(s.cpu_ns / b.cpu_ns);
        }
        let (q1, q3) = quartiles(&mut ratios);
        let (cpu_q1, cpu_q3) = quartiles(&mut cpu_ratios);
        record(
            p.name,
            median(&mut subject_cpu_ns),
            median(&mut base_cpu_ns),
            median(&mut cpu_ratios),
        );
        println!(
            "{}",
            serde_json::json!({
                "subject": p.name,
                "what": p.what,
                "subject_ns": median(&mut subject_ns),
                "subject_cpu_ns": median(&mut subject_cpu_ns),
                "baseline_ns": median(&mut base_ns),
                "baseline_cpu_ns": median(&mut base_cpu_ns),
                "ratio": median(&mut ratios),
                "ratio_q1": q1,
                "ratio_q3": q3,
                "cpu_ratio": median(&mut cpu_ratios),
                "cpu_ratio_q1": cpu_q1,
                "cpu_ratio_q3": cpu_q3,
                "rounds": ROUNDS,
                "calls_per_round": p.calls,
            })
        );
    }
}
