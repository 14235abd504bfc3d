//! Read-path latency: a `pmc` TC read against a raw `read(2)` on an fd
//! opened with the very same `perf_event_attr`, and a 4-member group read
//! against a single raw read. `cargo xtask bench` turns the medians into
//! ratios.
//!
//! The event is `instructions,usr` where hardware counters work and the
//! software event `context-switches,usr` elsewhere (the kernel read path is
//! the same shape; only the PMU differs).

use std::fs::File;
use std::hint::black_box;
use std::io::Read;
use std::os::fd::OwnedFd;

use criterion::{Criterion, criterion_group, criterion_main};
use pmc::{Cpu, Flags, Mode, Pmc};
use pmc_linux::attr::ReadFormat;
use pmc_linux::event::{Event, GroupCount, OpenFlags, Target};

fn event_spec() -> &'static str {
    if pmc::probe::Environment::detect().hardware_counting {
        "instructions,usr"
    } else {
        "context-switches,usr"
    }
}

fn bench_reads(c: &mut Criterion) {
    let spec = event_spec();
    eprintln!("read_path: event {spec}");
    let mut group = c.benchmark_group("read_path");

    // The pmc path: a TC PMC attached to this (single-threaded) process.
    let mut pmc = Pmc::allocate(spec, Mode::TC, Flags::empty(), Cpu::Any).expect("allocate");
    pmc.start().expect("start");
    group.bench_function("pmc_read", |b| {
        b.iter(|| black_box(pmc.read().expect("read")))
    });

    // The baseline: read(2) through std on an fd with the identical attr.
    let attr = pmc::__private_test_hooks::attrs_for(spec, Mode::TC, Flags::empty(), 0)
        .expect("attr")[0]
        .disabled(false);
    let fd: OwnedFd = Event::open(&attr, Target::CALLER, None, OpenFlags::empty())
        .expect("open raw")
        .into();
    let mut file = File::from(fd);
    let mut buf = [0u8; 24];
    group.bench_function("raw_read", |b| {
        b.iter(|| black_box(file.read(&mut buf).expect("read(2)")))
    });

    // A group of 4 read in one read(2).
    let leader_attr = attr.inherit(false).inherit_thread(false).read_format(
        ReadFormat::GROUP | ReadFormat::TOTAL_TIME_ENABLED | ReadFormat::TOTAL_TIME_RUNNING,
    );
    let leader =
        Event::open(&leader_attr, Target::CALLER, None, OpenFlags::empty()).expect("leader");
    let members: Vec<Event> = (0..3)
        .map(|_| {
            Event::open(
                &leader_attr,
                Target::CALLER,
                Some(&leader),
                OpenFlags::empty(),
            )
            .expect("member")
        })
        .collect();
    let mut counts = GroupCount::with_capacity(4);
    leader.read_group(&mut counts).expect("group read");
    assert_eq!(counts.len(), 1 + members.len());
    group.bench_function("group4_read", |b| {
        b.iter(|| {
            leader.read_group(&mut counts).expect("group read");
            black_box(counts.get(3))
        })
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(std::time::Duration::from_secs(1))
        .measurement_time(std::time::Duration::from_secs(3));
    targets = bench_reads
}
criterion_main!(benches);
