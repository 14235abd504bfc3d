//! Many CPUs, which the machines this runs on do not have (issue 36 §6),
//! through the simulator (`SimBackend`, feature `test-doubles`, which the
//! crate's dev-dependency on itself turns on):
//!
//! - `manycpus_sc`: system-counting PMCs of ten software events on every
//!   CPU of a simulated machine of 2, 16, 64 and 256 CPUs — the
//!   allocation (`per_cpu().build()`), start, read, stop and release of
//!   all of them, each timed on its own, as thread CPU time per CPU (the
//!   simulated counters cost next to nothing, so this is the portable
//!   layer's own cost: what grows faster than the CPUs is ours). Each
//!   round repeats a size until it has handled about as many PMCs as the
//!   largest size, after an untimed pass, and the figure is the median
//!   over rounds.
//! - `manycpus_ss`: the same with system sampling PMCs writing to a log
//!   (each CPU's PMC registers a ring with its owner, which stop and
//!   release look up and remove), for information.
//! - `manycpus_drain`: a system sampling PMC on each of 256 simulated
//!   CPUs, each sampled at 1 kHz of wall time for a few seconds by this
//!   thread while the owner's drain thread writes the samples to a log
//!   file; rings of 2 pages (128 samples: 128 ms at 1 kHz), so a drain
//!   that falls behind by more loses samples. Reports the samples, those
//!   lost, the most one ring held (its lag in ms at 1 kHz), the largest
//!   burst of ticks this thread fired after waking late (which fills the
//!   rings at once, whatever the drain does) and the CPU the rest of the
//!   process (the drain) spent.
//!
//! Prints one JSON object per line; `cargo xtask bench --manycpus-only`
//! reads them.

use std::hint::black_box;
use std::time::{Duration, Instant};

use pmc::backend::SimBackend;
use pmc::{Owner, PerCpu};

const SIZES: [u32; 4] = [2, 16, 64, 256];
const ROUNDS: usize = 7;

#[path = "common/software_events.rs"]
mod software_events;
use software_events::SOFTWARE_EVENTS as EVENTS;

/// The drain run: CPUs, each one's sampling rate, and how long.
const DRAIN_CPUS: u32 = 256;
const DRAIN_HZ: u64 = 1_000;
const DRAIN_SECONDS: u64 = 3;
/// Ring pages of the drain run: 2 × 4096 / 64 = 128 samples.
const DRAIN_PAGES: usize = 2;

fn clock_ns(id: nix::time::ClockId) -> f64 {
    let t = nix::time::clock_gettime(id).expect("clock_gettime");
    t.tv_sec() as f64 * 1e9 + t.tv_nsec() as f64
}

fn thread_cpu_ns() -> f64 {
    clock_ns(nix::time::ClockId::CLOCK_THREAD_CPUTIME_ID)
}

fn process_cpu_ns() -> f64 {
    clock_ns(nix::time::ClockId::CLOCK_PROCESS_CPUTIME_ID)
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// The phases of one size, in order; each sample is the CPU ns of one
/// phase over `reps` repetitions.
const PHASES: [&str; 5] = ["allocate", "start", "read", "stop", "release"];

/// One round at `cpus` CPUs: `reps` times every phase, after one untimed
/// pass (so that every size is timed on memory the allocator has handed
/// out before, and on preparations its owner kept: a first pass's page
/// faults would weigh on the size repeated least); the CPU ns each phase
/// took in all.
fn round(cpus: u32, reps: u32, sampling: bool) -> [f64; 5] {
    let sim = SimBackend::new(cpus);
    let owner = Owner::new(sim.clone());
    if sampling {
        owner
            .configure_logfile(std::io::sink())
            .expect("a log for SS");
    }
    let build = |event: &str| {
        let pmc = owner.pmc(event);
        let pmc = if sampling {
            pmc.sampling(1_000_000)
        } else {
            pmc
        };
        pmc.per_cpu().build().expect("a PMC on every CPU")
    };
    let mut spent = [0.0; 5];
    for rep in 0..=reps {
        if rep == 1 {
            spent = [0.0; 5];
        }
        let t = thread_cpu_ns();
        let mut all: Vec<PerCpu> = EVENTS.iter().map(|e| build(e)).collect();
        spent[0] += thread_cpu_ns() - t;
        let t = thread_cpu_ns();
        for p in &mut all {
            p.start().expect("start");
        }
        spent[1] += thread_cpu_ns() - t;
        sim.advance(1_000);
        let t = thread_cpu_ns();
        for p in &mut all {
            black_box(p.read().expect("read"));
        }
        spent[2] += thread_cpu_ns() - t;
        let t = thread_cpu_ns();
        for p in &mut all {
            p.stop().expect("stop");
        }
        spent[3] += thread_cpu_ns() - t;
        let t = thread_cpu_ns();
        drop(black_box(all));
        spent[4] += thread_cpu_ns() - t;
        assert!(owner.pmcinfo().is_empty(), "every PMC released");
    }
    spent
}

fn scaling(sampling: bool) {
    let largest = *SIZES.iter().max().unwrap_or(&1);
    for &cpus in &SIZES {
        // About as many PMCs per round at every size.
        let reps = (largest / cpus).max(1);
        let mut per_cpu_us: Vec<Vec<f64>> = vec![Vec::with_capacity(ROUNDS); PHASES.len()];
        for _ in 0..ROUNDS {
            let spent = round(cpus, reps, sampling);
            for (phase, ns) in spent.iter().enumerate() {
                per_cpu_us[phase].push(ns / 1e3 / f64::from(reps * cpus));
            }
        }
        let mut row = serde_json::json!({
            "subject": if sampling { "manycpus_ss" } else { "manycpus_sc" },
            "cpus": cpus,
            "events": EVENTS.len(),
            "rounds": ROUNDS,
            "reps_per_round": reps,
        });
        let mut total = 0.0;
        for (phase, samples) in PHASES.iter().zip(&mut per_cpu_us) {
            let us = median(samples);
            total += us;
            row[format!("{phase}_us_per_cpu")] = us.into();
        }
        row["total_us_per_cpu"] = total.into();
        println!("{row}");
    }
}

fn drain() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("manycpus.pmclog");
    let sim = SimBackend::new(DRAIN_CPUS);
    let owner = Owner::new(sim.clone());
    owner.set_buffer_pages(DRAIN_PAGES).expect("ring pages");
    let file = std::fs::File::create(&path).expect("the log file");
    owner
        .configure_logfile(std::io::BufWriter::new(file))
        .expect("configure the log");
    let period_ns = 1_000_000_000 / DRAIN_HZ;
    let mut all = owner
        .pmc("cpu-clock")
        .sampling(period_ns)
        .per_cpu()
        .build()
        .expect("SS on every CPU");
    all.start().expect("start");
    let ticks = DRAIN_HZ * DRAIN_SECONDS;
    let process_cpu = process_cpu_ns();
    let own_cpu = thread_cpu_ns();
    let began = Instant::now();
    let mut fired = 0;
    let mut largest_burst = 0;
    // One sample per CPU per millisecond of wall time; a late wake-up
    // fires the ticks it missed, so every ring gets `ticks` samples (such
    // a burst fills the rings at once: it is reported beside the lag).
    while fired < ticks {
        let due = (began.elapsed().as_nanos() as u64 / period_ns).min(ticks);
        largest_burst = largest_burst.max(due.saturating_sub(fired));
        while fired < due {
            sim.advance(period_ns);
            sim.sample();
            fired += 1;
        }
        std::thread::sleep(Duration::from_micros(200));
    }
    let wall = began.elapsed().as_secs_f64();
    let producer_cpu = thread_cpu_ns() - own_cpu;
    all.stop().expect("stop");
    let drain_cpu = process_cpu_ns() - process_cpu - (thread_cpu_ns() - own_cpu);
    owner.close_logfile().expect("close the log");
    drop(all);
    let stats = sim.sample_stats();
    let (logged, logged_lost) = owner.stats();
    let ring_samples = DRAIN_PAGES * 4096 / 64;
    println!(
        "{}",
        serde_json::json!({
            "subject": "manycpus_drain",
            "cpus": DRAIN_CPUS,
            "rate_hz": DRAIN_HZ,
            "seconds": wall,
            "expected": u64::from(DRAIN_CPUS) * ticks,
            "samples": stats.samples,
            "logged": logged,
            "lost": stats.lost,
            "logged_lost": logged_lost,
            "most_pending": stats.most_pending,
            "largest_burst": largest_burst,
            "lag_ms": stats.most_pending as f64 * 1e3 / DRAIN_HZ as f64,
            "ring_samples": ring_samples,
            "ring_ms": ring_samples as f64 * 1e3 / DRAIN_HZ as f64,
            "drain_cpu_fraction": drain_cpu / 1e9 / wall,
            "producer_cpu_fraction": producer_cpu / 1e9 / wall,
            "log_bytes": std::fs::metadata(&path).map_or(0, |m| m.len()),
        })
    );
}

fn main() {
    scaling(false);
    scaling(true);
    drain();
}
