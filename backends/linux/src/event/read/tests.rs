//! The read layouts against the `read_format` bits (`linux/perf_event.h`,
//! `struct read_format`), and multiplexing scaling.

use super::*;

#[test]
fn scaling_handles_multiplexing_and_odd_times() {
    assert_eq!(scale(100, Some(10), Some(10)), Some(100));
    assert_eq!(scale(100, Some(20), Some(10)), Some(200));
    assert_eq!(scale(100, Some(10), Some(0)), None);
    assert_eq!(scale(0, Some(0), Some(0)), Some(0));
    // running > enabled happens with inherited counters; never scale down.
    assert_eq!(scale(100, Some(10), Some(20)), Some(100));
    assert_eq!(scale(u64::MAX, Some(u64::MAX), Some(1)), Some(u64::MAX));
    assert_eq!(scale(7, None, None), Some(7));
}

#[test]
fn single_read_layout_follows_read_format() {
    let f = ReadFormat::TOTAL_TIME_ENABLED | ReadFormat::ID;
    let c = parse_single(f, &[5, 6, 7]);
    assert_eq!(c.value, 5);
    assert_eq!(c.time_enabled, Some(6));
    assert_eq!(c.time_running, None);
    assert_eq!(c.id, Some(7));
}

#[test]
fn group_layout_follows_read_format() {
    let mut g = GroupCount::with_capacity(2);
    g.read_format = ReadFormat::GROUP
        | ReadFormat::TOTAL_TIME_ENABLED
        | ReadFormat::TOTAL_TIME_RUNNING
        | ReadFormat::ID;
    g.buf[..7].copy_from_slice(&[2, 100, 50, 11, 1, 22, 2]);
    g.words = 7;
    g.validate().unwrap();
    assert_eq!(g.len(), 2);
    let m: Vec<_> = g.iter().map(|c| (c.value, c.id, c.scaled())).collect();
    assert_eq!(m, vec![(11, Some(1), Some(22)), (22, Some(2), Some(44))]);
    g.words = 5;
    assert!(g.validate().is_err());
}
