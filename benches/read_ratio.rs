//! Read-path ratios by paired rounds: every round times each subject and
//! its baseline back to back (in rotating order), and the ratio is the
//! median over rounds of subject / baseline within a round. Sequential
//! benchmarks drift by several percent on a virtual machine; pairing
//! cancels most of that, which a 2% target needs.
//!
//! Prints one JSON object per line; `cargo xtask bench` reads them.
//! Subjects: `pmc` TC read, the binding's `Event::read_timed`, perf-event
//! and perf-event2 reads of the same event, a 4-member group read; the
//! baseline is `read(2)` through std on an fd with the identical attr.

use std::fs::File;
use std::hint::black_box;
use std::io::Read;
use std::os::fd::OwnedFd;
use std::time::Instant;

use pmc::{Cpu, Flags, Mode, Pmc};
use pmc_linux::attr::ReadFormat;
use pmc_linux::event::{Event, GroupCount, OpenFlags, Target};

const ROUNDS: usize = 41;
const CALLS: u32 = 4000;

type Subject<'a> = (&'static str, Box<dyn FnMut() + 'a>);

fn event_spec() -> (&'static str, bool) {
    if pmc::probe::Environment::detect().hardware_counting {
        ("instructions,usr", true)
    } else {
        ("context-switches,usr", false)
    }
}

fn time(f: &mut dyn FnMut()) -> f64 {
    let t = Instant::now();
    for _ in 0..CALLS {
        f();
    }
    t.elapsed().as_nanos() as f64 / f64::from(CALLS)
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn quartiles(v: &mut [f64]) -> (f64, f64) {
    v.sort_by(f64::total_cmp);
    (v[v.len() / 4], v[3 * v.len() / 4])
}

fn main() {
    // `cargo bench` passes `--bench`; nothing else is accepted.
    let (spec, hardware) = event_spec();
    let attr = pmc::__private_test_hooks::attrs_for(spec, Mode::TC, Flags::empty(), 0)
        .expect("attr")[0]
        .disabled(false);

    let mut pmc = Pmc::allocate(spec, Mode::TC, Flags::empty(), Cpu::Any).expect("allocate");
    pmc.start().expect("start");
    let raw_fd: OwnedFd = Event::open(&attr, Target::CALLER, None, OpenFlags::empty())
        .expect("open raw")
        .into();
    let mut raw = File::from(raw_fd);
    let binding = Event::open(&attr, Target::CALLER, None, OpenFlags::empty()).expect("binding");

    let leader_attr = attr.inherit(false).inherit_thread(false).read_format(
        ReadFormat::GROUP | ReadFormat::TOTAL_TIME_ENABLED | ReadFormat::TOTAL_TIME_RUNNING,
    );
    let leader =
        Event::open(&leader_attr, Target::CALLER, None, OpenFlags::empty()).expect("leader");
    let _members: Vec<Event> = (0..3)
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
    // The same group read with read(2) directly: what the kernel alone costs.
    let raw_group = File::from(
        std::os::fd::AsFd::as_fd(&leader)
            .try_clone_to_owned()
            .expect("dup leader"),
    );
    let mut group_buf = [0u8; 8 * 7];

    let mut pe2 = if hardware {
        perf_event2::Builder::new(perf_event2::events::Hardware::INSTRUCTIONS)
            .exclude_kernel(true)
            .enabled(true)
            .build()
    } else {
        perf_event2::Builder::new(perf_event2::events::Software::CONTEXT_SWITCHES)
            .exclude_kernel(true)
            .enabled(true)
            .build()
    }
    .expect("perf-event2 counter");
    let mut pe = {
        let kind: perf_event_04::events::Event = if hardware {
            perf_event_04::events::Hardware::INSTRUCTIONS.into()
        } else {
            perf_event_04::events::Software::CONTEXT_SWITCHES.into()
        };
        let mut c = perf_event_04::Builder::new()
            .kind(kind)
            .build()
            .expect("perf-event counter");
        c.enable().expect("enable");
        c
    };

    let mut buf = [0u8; 24];
    let mut baseline = move || {
        black_box(raw.read(&mut buf).expect("read(2)"));
    };
    let mut subjects: Vec<Subject<'_>> = vec![
        (
            "pmc_read",
            Box::new(|| {
                black_box(pmc.read().expect("pmc read"));
            }),
        ),
        (
            "pmc_linux_read_timed",
            Box::new(|| {
                black_box(binding.read_timed().expect("read_timed"));
            }),
        ),
        (
            "perf_event2_read",
            Box::new(|| {
                black_box(pe2.read().expect("perf-event2 read"));
            }),
        ),
        (
            "perf_event_read",
            Box::new(|| {
                black_box(pe.read().expect("perf-event read"));
            }),
        ),
        (
            "group4_read",
            Box::new(|| {
                leader.read_group(&mut counts).expect("group read");
                black_box(counts.get(3));
            }),
        ),
        (
            "raw_group4_read",
            Box::new(|| {
                black_box((&raw_group).read(&mut group_buf).expect("group read(2)"));
            }),
        ),
    ];

    // Warm up every path.
    for _ in 0..3 {
        time(&mut baseline);
        for (_, f) in &mut subjects {
            time(f.as_mut());
        }
    }
    let mut base_ns = Vec::with_capacity(ROUNDS);
    let mut ratios: Vec<Vec<f64>> = vec![Vec::with_capacity(ROUNDS); subjects.len()];
    let mut subject_ns: Vec<Vec<f64>> = vec![Vec::with_capacity(ROUNDS); subjects.len()];
    for round in 0..ROUNDS {
        for (i, (_, f)) in subjects.iter_mut().enumerate() {
            // Alternate which of the pair goes first.
            let (b, s) = if (round + i) % 2 == 0 {
                let b = time(&mut baseline);
                (b, time(f.as_mut()))
            } else {
                let s = time(f.as_mut());
                (time(&mut baseline), s)
            };
            base_ns.push(b);
            subject_ns[i].push(s);
            ratios[i].push(s / b);
        }
    }
    let base = median(&mut base_ns);
    for (i, (name, _)) in subjects.iter().enumerate() {
        let (q1, q3) = quartiles(&mut ratios[i]);
        let line = serde_json::json!({
            "subject": name,
            "baseline": "raw_read",
            "event": spec,
            "subject_ns": median(&mut subject_ns[i]),
            "baseline_ns": base,
            "ratio": median(&mut ratios[i]),
            "ratio_q1": q1,
            "ratio_q3": q3,
            "rounds": ROUNDS,
            "calls_per_round": CALLS,
        });
        println!("{line}");
    }
}
