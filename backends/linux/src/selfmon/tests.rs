//! The page arithmetic on page images, with the expectations taken from
//! the comments of `struct perf_event_mmap_page` in
//! /usr/include/linux/perf_event.h. Tests against the kernel: `tests/live.rs`.

use super::*;
use std::cell::{Cell, RefCell};

/// `struct perf_event_mmap_page` transcribed from
/// /usr/include/linux/perf_event.h (the capability bit-field union is
/// one `__u64`; `__reserved[116*8]` pads to 1 KiB).
#[repr(C)]
#[allow(dead_code)]
struct PerfEventMmapPage {
    version: u32,
    compat_version: u32,
    lock: u32,
    index: u32,
    offset: i64,
    time_enabled: u64,
    time_running: u64,
    capabilities: u64,
    pmc_width: u16,
    time_shift: u16,
    time_mult: u32,
    time_offset: u64,
    time_zero: u64,
    size: u32,
    reserved_1: u32,
    time_cycles: u64,
    time_mask: u64,
    reserved: [u8; 116 * 8],
    data_head: u64,
    data_tail: u64,
    data_offset: u64,
    data_size: u64,
    aux_head: u64,
    aux_tail: u64,
    aux_offset: u64,
    aux_size: u64,
}

#[test]
fn page_offsets_match_the_header_layout() {
    use std::mem::offset_of;
    type P = PerfEventMmapPage;
    let rows = [
        ("version", offset_of!(P, version), mp::VERSION),
        (
            "compat_version",
            offset_of!(P, compat_version),
            mp::COMPAT_VERSION,
        ),
        ("lock", offset_of!(P, lock), mp::LOCK),
        ("index", offset_of!(P, index), mp::INDEX),
        ("offset", offset_of!(P, offset), mp::OFFSET),
        (
            "time_enabled",
            offset_of!(P, time_enabled),
            mp::TIME_ENABLED,
        ),
        (
            "time_running",
            offset_of!(P, time_running),
            mp::TIME_RUNNING,
        ),
        (
            "capabilities",
            offset_of!(P, capabilities),
            mp::CAPABILITIES,
        ),
        ("pmc_width", offset_of!(P, pmc_width), mp::PMC_WIDTH),
        ("time_shift", offset_of!(P, time_shift), mp::TIME_SHIFT),
        ("time_mult", offset_of!(P, time_mult), mp::TIME_MULT),
        ("time_offset", offset_of!(P, time_offset), mp::TIME_OFFSET),
        ("time_zero", offset_of!(P, time_zero), mp::TIME_ZERO),
        ("size", offset_of!(P, size), mp::SIZE),
        ("time_cycles", offset_of!(P, time_cycles), mp::TIME_CYCLES),
        ("time_mask", offset_of!(P, time_mask), mp::TIME_MASK),
        ("data_head", offset_of!(P, data_head), mp::DATA_HEAD),
        ("data_tail", offset_of!(P, data_tail), mp::DATA_TAIL),
        ("data_offset", offset_of!(P, data_offset), mp::DATA_OFFSET),
        ("data_size", offset_of!(P, data_size), mp::DATA_SIZE),
        ("aux_head", offset_of!(P, aux_head), mp::AUX_HEAD),
        ("aux_tail", offset_of!(P, aux_tail), mp::AUX_TAIL),
        ("aux_offset", offset_of!(P, aux_offset), mp::AUX_OFFSET),
        ("aux_size", offset_of!(P, aux_size), mp::AUX_SIZE),
    ];
    for (field, header, ours) in rows {
        assert_eq!(ours, header, "{field}");
    }
    // "align to 1k": the ring control words start at 1024.
    assert_eq!(offset_of!(P, data_head), 1024);
    assert_eq!(std::mem::size_of::<P>(), 1088);
    // Capability bits, in the order of the header's bit-field.
    let bits = [
        mp::CAP_BIT0,
        mp::CAP_BIT0_IS_DEPRECATED,
        mp::CAP_USER_RDPMC,
        mp::CAP_USER_TIME,
        mp::CAP_USER_TIME_ZERO,
        mp::CAP_USER_TIME_SHORT,
    ];
    for (bit, mask) in bits.into_iter().enumerate() {
        assert_eq!(mask, 1u64 << bit);
    }
}

/// An image of a metadata page that a test (playing the kernel) can
/// rewrite between loads.
struct PageImage(RefCell<Vec<u8>>);

impl PageImage {
    fn new() -> PageImage {
        PageImage(RefCell::new(vec![0; 1088]))
    }
    fn put(&self, offset: usize, bytes: &[u8]) {
        self.0.borrow_mut()[offset..offset + bytes.len()].copy_from_slice(bytes);
    }
    fn set_u16(&self, offset: usize, v: u16) {
        self.put(offset, &v.to_ne_bytes());
    }
    fn set_u32(&self, offset: usize, v: u32) {
        self.put(offset, &v.to_ne_bytes());
    }
    fn set_u64(&self, offset: usize, v: u64) {
        self.put(offset, &v.to_ne_bytes());
    }
    /// A page of an event on hardware counter `index` (1-based) with
    /// user rdpmc and the given counter width and offset.
    fn on_counter(index: u32, width: u16, offset: i64) -> PageImage {
        let page = PageImage::new();
        page.set_u32(mp::LOCK, 2);
        page.set_u32(mp::INDEX, index);
        page.set_u64(mp::OFFSET, offset as u64);
        page.set_u64(
            mp::CAPABILITIES,
            mp::CAP_BIT0_IS_DEPRECATED | mp::CAP_USER_RDPMC,
        );
        page.set_u16(mp::PMC_WIDTH, width);
        page.set_u64(mp::TIME_ENABLED, 5_000);
        page.set_u64(mp::TIME_RUNNING, 5_000);
        page
    }
}

impl PageView for PageImage {
    fn load_u16(&self, o: usize) -> u16 {
        u16::from_ne_bytes(self.0.borrow()[o..o + 2].try_into().unwrap())
    }
    fn load_u32(&self, o: usize) -> u32 {
        u32::from_ne_bytes(self.0.borrow()[o..o + 4].try_into().unwrap())
    }
    fn load_u64(&self, o: usize) -> u64 {
        u64::from_ne_bytes(self.0.borrow()[o..o + 8].try_into().unwrap())
    }
}

fn no_tsc() -> u64 {
    panic!("rdtsc read for an event that is not multiplexed")
}

#[test]
fn count_is_offset_plus_the_sign_extended_counter() {
    // (index, pmc_width, offset, raw rdpmc value, expected count)
    // "pmc <<= 64 - width; pmc >>= 64 - width; count += pmc" (header).
    let rows: [(u32, u16, i64, u64, u64); 8] = [
        // plain: small positive counter, positive offset
        (1, 48, 5, 1_000, 1_005),
        // 48-bit counter that wrapped: 0xffff_ffff_fff0 is -16
        (3, 48, 1_000_000, 0xffff_ffff_fff0, 999_984),
        // the kernel programs -period: offset compensates a negative pmc
        (2, 48, (1 << 47) + 100, 1 << 47, 100),
        // negative offset (counter started with a positive value)
        (4, 48, -500, 1_500, 1_000),
        // bits above the width are ignored (rdpmc garbage in 63:48)
        (1, 48, 0, 0xabcd_0000_0000_0010, 16),
        // 40-bit counter (AMD before Zen 2): bit 39 is the sign
        (1, 40, 10, 0xff_ffff_fff6, 0),
        // full 64-bit width: no extension, the sum wraps as u64
        (1, 64, -1, 0, u64::MAX),
        // a width the kernel never publishes (0) is clamped, no panic
        (1, 0, 7, 1, 6),
    ];
    for (index, width, offset, raw, expected) in rows {
        let page = PageImage::on_counter(index, width, offset);
        let asked = Cell::new(None);
        let got = read_page(
            &page,
            |counter| {
                asked.set(Some(counter));
                Some(raw)
            },
            no_tsc,
        );
        let row = format!("index {index} width {width} offset {offset} raw {raw:#x}");
        assert_eq!(asked.get(), Some(index - 1), "rdpmc(index - 1): {row}");
        let got = got.unwrap_or_else(|| panic!("refused: {row}"));
        assert_eq!(got.count, expected, "{row}");
        assert_eq!((got.time_enabled, got.time_running), (5_000, 5_000));
        assert!(!got.multiplexed());
        assert_eq!(got.scaled(), Some(expected), "{row}");
    }
}

#[test]
fn the_page_refuses_without_rdpmc_capability_or_index() {
    let index_zero = PageImage::on_counter(0, 48, 5);
    let no_cap = PageImage::on_counter(1, 48, 5);
    no_cap.set_u64(
        mp::CAPABILITIES,
        mp::CAP_BIT0_IS_DEPRECATED | mp::CAP_USER_TIME,
    );
    for (what, page) in [("index 0", &index_zero), ("no cap_user_rdpmc", &no_cap)] {
        let called = Cell::new(false);
        let got = read_page(
            page,
            |_| {
                called.set(true);
                Some(1)
            },
            no_tsc,
        );
        assert_eq!(got, None, "{what}");
        assert!(!called.get(), "{what}: rdpmc issued");
    }
    // rdpmc itself unavailable (not x86): refused, not a zero count.
    let page = PageImage::on_counter(1, 48, 5);
    assert_eq!(read_page(&page, |_| None, no_tsc), None);
}

#[test]
fn a_lock_change_mid_read_retries_with_the_new_generation() {
    let page = PageImage::on_counter(2, 48, 100);
    let calls = Cell::new(0u32);
    let got = read_page(
        &page,
        |counter| {
            calls.set(calls.get() + 1);
            if calls.get() == 1 {
                // The kernel reprograms the counter between our loads:
                // new lock generation, offset and index.
                page.set_u32(mp::LOCK, 4);
                page.set_u64(mp::OFFSET, 7_000);
                page.set_u32(mp::INDEX, 3);
                Some(999_999)
            } else {
                assert_eq!(counter, 2, "the retry uses the new index");
                Some(11)
            }
        },
        no_tsc,
    )
    .expect("the retry reads");
    assert_eq!(calls.get(), 2);
    assert_eq!(got.count, 7_011);

    // The counter leaves the PMU while we read: the retry refuses.
    let page = PageImage::on_counter(1, 48, 100);
    let got = read_page(
        &page,
        |_| {
            page.set_u32(mp::LOCK, 3);
            page.set_u32(mp::INDEX, 0);
            Some(5)
        },
        no_tsc,
    );
    assert_eq!(got, None);
}

/// The header's cycles → ns formula, written out independently:
/// `quot = cyc >> shift; rem = cyc & ((1 << shift) - 1);
///  delta = offset + quot * mult + ((rem * mult) >> shift)`.
fn header_delta(cyc: u64, shift: u16, mult: u32, offset: u64) -> u64 {
    let quot = cyc >> shift;
    let rem = cyc & ((1u64 << shift) - 1);
    offset + quot * u64::from(mult) + ((rem * u64::from(mult)) >> shift)
}

/// The header's scaling: `quot = count / running; rem = count %
/// running; count = quot * enabled + (rem * enabled) / running`.
fn header_scaled(count: u64, enabled: u64, running: u64) -> u64 {
    count / running * enabled + (count % running) * enabled / running
}

#[test]
fn multiplexed_times_advance_by_the_tsc_delta_and_scale() {
    // (enabled, running, shift, mult, time_offset, tsc, count)
    let rows: [(u64, u64, u16, u32, u64, u64, u64); 4] = [
        (1_000_000, 400_000, 10, 1_000, 0, 1 << 20, 123_456),
        // 3 GHz TSC: mult/2^shift = 1/3 ns per cycle
        (
            8_000_000,
            2_000_000,
            31,
            715_827_882,
            12_345,
            3_000_000_000,
            9_999_999,
        ),
        // time_offset is what makes delta relative to enabling: it is
        // "negative" (wraps) so that delta starts at 0
        (50, 20, 0, 1, 0u64.wrapping_sub(1_000), 1_500, 77),
        // large counts: quot/rem form does not overflow
        (u64::MAX / 4, u64::MAX / 8, 1, 2, 0, 0, u64::MAX / 3),
    ];
    for (enabled, running, shift, mult, time_offset, tsc, count) in rows {
        let page = PageImage::on_counter(1, 64, count as i64);
        page.set_u64(
            mp::CAPABILITIES,
            mp::CAP_BIT0_IS_DEPRECATED | mp::CAP_USER_RDPMC | mp::CAP_USER_TIME,
        );
        page.set_u64(mp::TIME_ENABLED, enabled);
        page.set_u64(mp::TIME_RUNNING, running);
        page.set_u16(mp::TIME_SHIFT, shift);
        page.set_u32(mp::TIME_MULT, mult);
        page.set_u64(mp::TIME_OFFSET, time_offset);
        let got = read_page(&page, |_| Some(0), || tsc).expect("user time allows it");
        let delta = header_delta(tsc, shift, mult, 0).wrapping_add(time_offset);
        let row = format!("{enabled} {running} {shift} {mult} {time_offset} {tsc}");
        assert_eq!(got.count, count, "{row}");
        assert_eq!(got.time_enabled, enabled.wrapping_add(delta), "{row}");
        assert_eq!(got.time_running, running.wrapping_add(delta), "{row}");
        assert!(got.multiplexed(), "{row}");
        let e = u128::from(got.time_enabled);
        let r = u128::from(got.time_running);
        let expected = u64::try_from(u128::from(count) * e / r).unwrap_or(u64::MAX);
        assert_eq!(got.scaled(), Some(expected), "{row}");
        if count.checked_mul(got.time_enabled).is_some() {
            // Where the header's u64 form does not overflow, it agrees.
            assert_eq!(
                got.scaled(),
                Some(header_scaled(count, got.time_enabled, got.time_running)),
                "{row}"
            );
        }
    }
}

#[test]
fn multiplexed_without_user_time_is_refused() {
    let page = PageImage::on_counter(1, 48, 5);
    page.set_u64(mp::TIME_RUNNING, 1_000);
    assert_eq!(read_page(&page, |_| Some(1), no_tsc), None);
}

#[test]
fn short_tsc_and_time_zero_follow_the_header() {
    let page = PageImage::on_counter(1, 48, 0);
    page.set_u64(
        mp::CAPABILITIES,
        mp::CAP_USER_RDPMC | mp::CAP_USER_TIME | mp::CAP_USER_TIME_ZERO | mp::CAP_USER_TIME_SHORT,
    );
    page.set_u16(mp::TIME_SHIFT, 4);
    page.set_u32(mp::TIME_MULT, 48);
    page.set_u64(mp::TIME_OFFSET, 100);
    page.set_u64(mp::TIME_ZERO, 1_000_000);
    // A 32-bit clock last seen at 0xffff_fff0 that has since wrapped
    // to 0x10: "cyc = time_cycles + ((cyc - time_cycles) & time_mask)".
    page.set_u64(mp::TIME_CYCLES, 0xffff_fff0);
    page.set_u64(mp::TIME_MASK, 0xffff_ffff);
    let conv = TimeConversion::of(&page).expect("cap_user_time");
    let cyc = 0x1_0000_0010u64; // 0xffff_fff0 + 0x20
    assert_eq!(conv.delta_ns(0x10), header_delta(cyc, 4, 48, 100));
    // "timestamp = time_zero + quot * time_mult + ((rem * time_mult) >> time_shift)"
    assert_eq!(
        conv.timestamp(0x10),
        Some(1_000_000 + header_delta(cyc, 4, 48, 0))
    );
    // Without the short/zero capabilities those fields are ignored.
    page.set_u64(mp::CAPABILITIES, mp::CAP_USER_RDPMC | mp::CAP_USER_TIME);
    let conv = TimeConversion::of(&page).unwrap();
    assert_eq!(conv.delta_ns(0x10), header_delta(0x10, 4, 48, 100));
    assert_eq!(conv.timestamp(0x10), None);
    page.set_u64(mp::CAPABILITIES, mp::CAP_USER_RDPMC);
    assert_eq!(TimeConversion::of(&page), None);
}

#[test]
fn scaling_never_ran_and_saturation() {
    let never = PageReading {
        count: 0,
        time_enabled: 10,
        time_running: 0,
    };
    assert_eq!(never.scaled(), None);
    let half = PageReading {
        count: 1_001,
        time_enabled: 10,
        time_running: 5,
    };
    assert_eq!(half.scaled(), Some(2_002));
    let huge = PageReading {
        count: u64::MAX,
        time_enabled: 2,
        time_running: 1,
    };
    assert_eq!(huge.scaled(), Some(u64::MAX));
}

#[test]
fn the_faster_path_wins_and_ties_go_to_read() {
    assert_eq!(ReadPath::faster(100.0, Some(20.0)), ReadPath::Rdpmc);
    assert_eq!(ReadPath::faster(100.0, Some(100.0)), ReadPath::Syscall);
    assert_eq!(ReadPath::faster(100.0, Some(250.0)), ReadPath::Syscall);
    assert_eq!(ReadPath::faster(100.0, None), ReadPath::Syscall);
}

/// Spins until `ns` nanoseconds have passed.
fn spin(ns: u64) -> u64 {
    let t = Instant::now();
    let mut n = 0u64;
    while t.elapsed().as_nanos() < u128::from(ns) {
        n += 1;
    }
    n
}

#[test]
fn median_is_the_middle_round_of_per_call_means() {
    // Round r of 9 costs COST[r] µs per call (200 calls each, in an
    // order that is not sorted). Each call lasts at least its cost,
    // so the median of the per-call means is at least the middle
    // cost (5 µs), whatever else runs on the machine; and it is not
    // a total or a product of the round (200 calls of 9 µs at most
    // cost 1.8 ms: a mean per call above 1 ms is impossible unless
    // the whole round sat descheduled for over 100 ms on average).
    const COST: [u64; 9] = [9, 1, 8, 2, 7, 3, 6, 4, 5];
    let calls = Cell::new(0usize);
    let median = median_ns(|| {
        let round = calls.get() / 200;
        calls.set(calls.get() + 1);
        spin(COST[round] * 1_000)
    });
    assert_eq!(calls.get(), 9 * 200, "9 rounds of 200 calls");
    assert!(median >= 5_000.0, "median {median} ns below the 5 µs round");
    assert!(
        median < 1_000_000.0,
        "median {median} ns is no mean per call"
    );
}
