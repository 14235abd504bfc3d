//! Record decoding throughput: a stream of small samples (IP | TID | TIME |
//! PERIOD, 40 bytes each) decoded by `pmc-linux` and by `perf-event-data`
//! (the decoder perf-event2 uses) on the same bytes, in paired rounds.
//! Prints one JSON line; `cargo xtask bench` reports it.

use std::hint::black_box;
use std::time::Instant;

use perf_event_data::endian::Native;
use perf_event_data::parse::{ParseConfig, Parser};
use pmc_linux::attr::SampleType;
use pmc_linux::record::{Record, RecordParser};

const SAMPLES: usize = 200_000;
const ROUNDS: usize = 15;

fn stream() -> Vec<u8> {
    let mut v = Vec::with_capacity(SAMPLES * 40);
    for i in 0..SAMPLES as u64 {
        v.extend_from_slice(&9u32.to_ne_bytes()); // PERF_RECORD_SAMPLE
        v.extend_from_slice(&2u16.to_ne_bytes()); // misc: user
        v.extend_from_slice(&40u16.to_ne_bytes());
        v.extend_from_slice(&(0x40_0000 + (i % 4096) * 4).to_ne_bytes()); // ip
        v.extend_from_slice(&1234u32.to_ne_bytes()); // pid
        v.extend_from_slice(&1235u32.to_ne_bytes()); // tid
        v.extend_from_slice(&(1_000_000 + i * 100).to_ne_bytes()); // time
        v.extend_from_slice(&100_000u64.to_ne_bytes()); // period
    }
    v
}

fn ours(parser: &RecordParser, bytes: &[u8]) -> u64 {
    let mut sum = 0u64;
    for r in parser.records(bytes) {
        if let Ok((_, Record::Sample(s))) = r {
            sum = sum.wrapping_add(s.ip().unwrap_or(0));
        }
    }
    sum
}

fn peer(config: &ParseConfig<Native>, bytes: &[u8]) -> u64 {
    let mut parser = Parser::new(bytes, config.clone());
    let mut sum = 0u64;
    for _ in 0..SAMPLES {
        match parser.parse::<perf_event_data::Record<'_>>() {
            Ok(perf_event_data::Record::Sample(s)) => {
                sum = sum.wrapping_add(s.ip().unwrap_or(0));
            }
            Ok(_) => {}
            Err(_) => break,
        }
    }
    sum
}

fn main() {
    let bytes = stream();
    let sample_type = SampleType::IP | SampleType::TID | SampleType::TIME | SampleType::PERIOD;
    let ours_parser = RecordParser {
        sample_type,
        ..RecordParser::default()
    };
    let mut attr = perf_event_open_sys::bindings::perf_event_attr::default();
    attr.sample_type = sample_type.bits();
    let config = ParseConfig::<Native>::from(attr);
    assert_eq!(
        ours(&ours_parser, &bytes),
        peer(&config, &bytes),
        "both decoders agree"
    );

    let mut ours_rate = Vec::new();
    let mut peer_rate = Vec::new();
    let mut ratios = Vec::new();
    for round in 0..ROUNDS {
        let time = |f: &dyn Fn() -> u64| {
            let t = Instant::now();
            black_box(f());
            SAMPLES as f64 / t.elapsed().as_secs_f64()
        };
        let (a, b) = if round % 2 == 0 {
            let a = time(&|| ours(&ours_parser, &bytes));
            (a, time(&|| peer(&config, &bytes)))
        } else {
            let b = time(&|| peer(&config, &bytes));
            (time(&|| ours(&ours_parser, &bytes)), b)
        };
        ours_rate.push(a);
        peer_rate.push(b);
        ratios.push(a / b);
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    println!(
        "{{\"subject\":\"decode\",\"samples\":{SAMPLES},\"rounds\":{ROUNDS},\"ours_per_s\":{:.0},\"peer_per_s\":{:.0},\"ratio\":{:.3}}}",
        median(&mut ours_rate),
        median(&mut peer_rate),
        median(&mut ratios)
    );
}
