//! Ring drain throughput: page-fault samples (IP | TID | TIME | PERIOD,
//! 40 bytes each) filled into a 512-page ring by touching fresh pages, then
//! read back with `RingBuffer::next_record` and decoded. Only the drain is
//! timed. The same run also decodes the same number of records from a
//! plain `Vec` (no ring), so `ratio` = ring drain rate / in-memory decode
//! rate shows what reading through the ring costs. Prints one JSON line.

use std::hint::black_box;
use std::time::Instant;

use pmc_linux::attr::{Attr, EventConfig, SampleType, Software};
use pmc_linux::event::{Event, OpenFlags, Target};
use pmc_linux::record::{Record, RecordParser};
use pmc_linux::ring::RingBuffer;

const ROUNDS: usize = 15;
const DATA_PAGES: usize = 512;
/// Faults per round: well under the ring's capacity (2 MiB / 40 B), so
/// nothing is lost.
const FAULTS: usize = 30_000;

/// Touches `FAULTS` fresh pages (one page fault, so one sample, each).
fn fault_pages() {
    let page = 4096;
    // Above glibc's largest mmap threshold: fresh pages every round.
    let mut v = vec![0u8; (40 << 20).max(FAULTS * page)];
    for i in 0..FAULTS {
        v[i * page] = 1;
    }
    black_box(&v);
}

fn decode(parser: &RecordParser, bytes: &[u8], sum: &mut u64) -> u64 {
    if let Ok(Record::Sample(s)) = parser.parse(bytes, 0) {
        *sum = sum.wrapping_add(s.ip().unwrap_or(0));
        1
    } else {
        0
    }
}

fn main() {
    let attr = Attr::new(EventConfig::Software(Software::PageFaults))
        .exclude_kernel(true)
        .sample_period(1)
        .sample_type(SampleType::IP | SampleType::TID | SampleType::TIME | SampleType::PERIOD)
        .disabled(true);
    let event = match Event::open(&attr, Target::CALLER, None, OpenFlags::empty()) {
        Ok(e) => e,
        Err(e) => {
            println!("{{\"subject\":\"ring_drain\",\"skipped\":\"{e}\"}}");
            return;
        }
    };
    let mut ring = RingBuffer::new(&event, DATA_PAGES).expect("map the ring");
    let parser = RecordParser::for_attr(&attr);
    let mut ring_rate = Vec::new();
    let mut vec_rate = Vec::new();
    let mut ratios = Vec::new();
    let mut sum = 0u64;
    for _ in 0..ROUNDS {
        event.enable().expect("enable");
        fault_pages();
        event.disable().expect("disable");

        let t = Instant::now();
        let mut n = 0u64;
        while let Some(bytes) = ring.next_record() {
            n += decode(&parser, bytes, &mut sum);
        }
        ring.release();
        let ring_s = t.elapsed().as_secs_f64();
        assert!(n as usize >= FAULTS / 2, "only {n} samples drained");

        // Refill and keep a copy of the records as one byte stream: the
        // in-memory baseline decodes the same kind and number of records.
        event.enable().expect("enable");
        fault_pages();
        event.disable().expect("disable");
        let mut stream = Vec::new();
        while let Some(bytes) = ring.next_record() {
            stream.extend_from_slice(bytes);
        }
        ring.release();
        let t = Instant::now();
        let mut m = 0u64;
        let mut at = 0;
        while at + 8 <= stream.len() {
            let size = usize::from(u16::from_ne_bytes([stream[at + 6], stream[at + 7]]));
            m += decode(&parser, &stream[at..at + size], &mut sum);
            at += size;
        }
        let vec_s = t.elapsed().as_secs_f64();
        let a = n as f64 / ring_s;
        let b = m as f64 / vec_s;
        ring_rate.push(a);
        vec_rate.push(b);
        ratios.push(a / b);
    }
    black_box(sum);
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    println!(
        "{{\"subject\":\"ring_drain\",\"rounds\":{ROUNDS},\"records_per_round\":{FAULTS},\"ring_per_s\":{:.0},\"memory_per_s\":{:.0},\"ratio\":{:.3}}}",
        median(&mut ring_rate),
        median(&mut vec_rate),
        median(&mut ratios)
    );
}
