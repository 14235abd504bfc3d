//! Golden attrs: what `Pmc::allocate` asks the kernel for, for a table of
//! (spec, mode, flags), checked field by field against values worked out
//! from the perf_event_open(2) ABI. No hardware or privilege needed.

#![cfg(target_os = "linux")]

use pmc::backend::linux::attrs_for;
use pmc::{Flags, Mode};
use pmc_linux::attr::{Attr, AttrBit};

/// The attr in one line: type, config words, the bitfield members that are
/// set, read_format, sample_type and period.
fn summary(a: &Attr) -> String {
    let bits: Vec<String> = AttrBit::ALL
        .iter()
        .filter(|(_, b)| a.get(*b) != 0)
        .map(|(name, b)| match a.get(*b) {
            1 => name.to_ascii_lowercase(),
            v => format!("{}={v}", name.to_ascii_lowercase()),
        })
        .collect();
    format!(
        "type={} config={:#x} config1={:#x} config2={:#x} bits=[{}] read_format={:#x} sample_type={:#x} period={}",
        a.type_id(),
        a.get_config(),
        a.get_config1(),
        a.get_config2(),
        bits.join(","),
        a.get_read_format().bits(),
        a.get_sample_type().bits(),
        a.get_sample_period_or_freq(),
    )
}

// read_format TOTAL_TIME_ENABLED | TOTAL_TIME_RUNNING = 0x1 | 0x2.
const GOLDEN: &[(&str, Mode, Flags, u64, &str)] = &[
    // Generic hardware (type 0): instructions = 1, user only; a process
    // PMC inherits to new threads (inherit_thread: not to new processes).
    (
        "instructions,usr",
        Mode::TC,
        Flags::empty(),
        0,
        "type=0 config=0x1 config1=0x0 config2=0x0 bits=[disabled,inherit,exclude_kernel,exclude_hv,inherit_thread] read_format=0x3 sample_type=0x0 period=0",
    ),
    // DESCENDANTS: inherit to child processes as well.
    (
        "cycles",
        Mode::TC,
        Flags::DESCENDANTS,
        0,
        "type=0 config=0x0 config1=0x0 config2=0x0 bits=[disabled,inherit] read_format=0x3 sample_type=0x0 period=0",
    ),
    // System counting: no inheritance, kernel only.
    (
        "branch-mispredicts,os",
        Mode::SC,
        Flags::empty(),
        0,
        "type=0 config=0x5 config1=0x0 config2=0x0 bits=[disabled,exclude_user,exclude_hv] read_format=0x3 sample_type=0x0 period=0",
    ),
    // Software (type 1): task-clock = 1, page-faults = 2.
    (
        "task-clock",
        Mode::TC,
        Flags::empty(),
        0,
        "type=1 config=0x1 config1=0x0 config2=0x0 bits=[disabled,inherit,inherit_thread] read_format=0x3 sample_type=0x0 period=0",
    ),
    (
        "SOFT-PAGE_FAULT.ALL",
        Mode::SC,
        Flags::empty(),
        0,
        "type=1 config=0x2 config1=0x0 config2=0x0 bits=[disabled] read_format=0x3 sample_type=0x0 period=0",
    ),
    // Cache (type 3): id | op << 8 | result << 16. L1D=0 READ=0 MISS=1.
    (
        "L1-dcache-load-misses",
        Mode::SC,
        Flags::empty(),
        0,
        "type=3 config=0x10000 config1=0x0 config2=0x0 bits=[disabled] read_format=0x3 sample_type=0x0 period=0",
    ),
    // dTLB=3 WRITE=1 ACCESS=0; perf modifier `:k`.
    (
        "dTLB-stores:k",
        Mode::SC,
        Flags::empty(),
        0,
        "type=3 config=0x103 config1=0x0 config2=0x0 bits=[disabled,exclude_user,exclude_hv] read_format=0x3 sample_type=0x0 period=0",
    ),
    // FreeBSD's ic-misses: L1I=1 READ MISS.
    (
        "k8-ic-misses",
        Mode::SC,
        Flags::empty(),
        0,
        "type=3 config=0x10001 config1=0x0 config2=0x0 bits=[disabled] read_format=0x3 sample_type=0x0 period=0",
    ),
    // Raw (type 4), pinned and exclusive.
    (
        "r1c0,pinned,exclusive",
        Mode::SC,
        Flags::empty(),
        0,
        "type=4 config=0x1c0 config1=0x0 config2=0x0 bits=[disabled,pinned,exclusive] read_format=0x3 sample_type=0x0 period=0",
    ),
    // perf modifiers: `u` and `I` (exclude idle), `H` host only.
    (
        "ref-cycles:uIH",
        Mode::SC,
        Flags::empty(),
        0,
        "type=0 config=0x9 config1=0x0 config2=0x0 bits=[disabled,exclude_kernel,exclude_hv,exclude_idle,exclude_guest] read_format=0x3 sample_type=0x0 period=0",
    ),
];

#[test]
fn attrs_match_the_golden_table() {
    let mut mismatches = Vec::new();
    for (spec, mode, flags, count, want) in GOLDEN {
        let attrs =
            attrs_for(spec, *mode, *flags, *count).unwrap_or_else(|e| panic!("{spec} {mode}: {e}"));
        assert_eq!(attrs.len(), 1, "{spec}: one core PMU here");
        let got = summary(&attrs[0]);
        if got != *want {
            mismatches.push(format!(
                "{spec} {mode} {flags:?}\n  want {want}\n  got  {got}"
            ));
        }
    }
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
}

#[test]
fn every_attr_is_the_current_uapi_size_and_starts_disabled() {
    for (spec, mode, flags, count, _) in GOLDEN {
        for a in attrs_for(spec, *mode, *flags, *count).unwrap() {
            assert!(a.is_set(AttrBit::DISABLED), "{spec}: enabled only by start");
            assert_eq!(a.to_bytes().len() as u32, a.size_bytes(), "{spec}");
        }
    }
}

#[test]
fn encoding_qualifiers_on_generic_events_are_refused_with_the_raw_form_as_remedy() {
    let e = attrs_for("instructions,cmask=1", Mode::TC, Flags::empty(), 0).unwrap_err();
    assert_eq!(e.errno(), libc::EOPNOTSUPP, "{e}");
    assert!(e.to_string().contains("cmask"), "{e}");
}
