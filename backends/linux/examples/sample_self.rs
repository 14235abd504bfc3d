//! Samples this program's own busy loop: a `cpu-clock` event every 100 µs
//! of CPU, samples read from the ring buffer as they arrive, and the
//! instruction pointers that came up most often.
//!
//! `cargo run -p hwpmc-linux --example sample_self`

use std::collections::HashMap;
use std::time::Duration;

use pmc_linux::attr::{Attr, EventConfig, SampleType, Software};
use pmc_linux::event::{Event, OpenFlags, Target};
use pmc_linux::record::{Record, RecordParser};
use pmc_linux::ring::{RingBuffer, Wait};

#[inline(never)]
fn busy(rounds: u64) -> u64 {
    let mut x = 1u64;
    for _ in 0..rounds {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
    }
    x
}

fn main() -> Result<(), pmc_linux::Error> {
    // User space only: allowed at the default perf_event_paranoid (2).
    let attr = Attr::new(EventConfig::Software(Software::CpuClock))
        .exclude_kernel(true)
        .sample_period(100_000)
        .sample_type(SampleType::IP | SampleType::TID | SampleType::TIME)
        .disabled(true);
    let event = Event::open(&attr, Target::CALLER, None, OpenFlags::empty())?;
    let mut ring = RingBuffer::new(&event, 16)?;
    let parser = RecordParser::for_attr(&attr);
    let mut hits: HashMap<u64, u64> = HashMap::new();

    event.enable()?;
    for _ in 0..20 {
        std::hint::black_box(busy(5_000_000));
        // Collect what is there without blocking; a reader thread would
        // use `ring.wait(Some(timeout))` instead.
        if ring.wait(Some(Duration::ZERO))? == Wait::Ready {
            while let Some(bytes) = ring.next_record() {
                if let Record::Sample(s) = parser.parse(bytes, 0)? {
                    *hits.entry(s.ip().unwrap_or(0)).or_default() += 1;
                }
            }
            ring.release();
        }
    }
    event.disable()?;

    let total: u64 = hits.values().sum();
    let mut top: Vec<_> = hits.into_iter().collect();
    top.sort_by_key(|&(_, n)| std::cmp::Reverse(n));
    println!(
        "{total} samples; busiest instruction pointers (`busy` is at {:p}):",
        busy as fn(u64) -> u64
    );
    for (ip, n) in top.iter().take(5) {
        println!("  {ip:#x}  {n}");
    }
    Ok(())
}
