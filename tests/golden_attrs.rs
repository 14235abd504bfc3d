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

/// Golden attrs on fixture sysfs trees (machines this one is not).
mod fixtures {
    use std::path::{Path, PathBuf};

    use pmc::backend::linux::attrs_for_sysfs;
    use pmc::{Flags, Mode};
    use pmc_linux::attr::AttrBit;

    fn root(name: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("backends/linux/tests/fixtures")
            .join(name)
    }

    fn one(spec: &str, mode: Mode, tree: &str) -> (u32, u64, u64, u64, Option<Vec<u32>>) {
        let tracefs = root("tracefs");
        let mut v = attrs_for_sysfs(spec, mode, Flags::empty(), 0, &root(tree), Some(&tracefs))
            .unwrap_or_else(|e| panic!("{spec}: {e}"));
        assert_eq!(v.len(), 1, "{spec}");
        let (a, cpus) = v.remove(0);
        (
            a.type_id(),
            a.get_config(),
            a.get_config1(),
            a.get_config2(),
            cpus,
        )
    }

    #[test]
    fn amd_pmu_terms_and_freebsd_qualifiers_encode_through_format_files() {
        assert_eq!(
            one("cpu/event=0x1c7/", Mode::TC, "sysfs-amd").1,
            0x1_0000_00c7
        );
        assert_eq!(
            one(
                "cpu/event=0xc0,umask=0x1,cmask=1,edge/",
                Mode::TC,
                "sysfs-amd"
            )
            .1,
            0xc0 | 1 << 8 | 1 << 24 | 1 << 18
        );
        // The same through FreeBSD qualifiers on the PMU and raw forms.
        assert_eq!(
            one(
                "cpu/event=0xc0/,umask=1,cmask=1,edge",
                Mode::TC,
                "sysfs-amd"
            )
            .1,
            0xc0 | 1 << 8 | 1 << 24 | 1 << 18
        );
        assert_eq!(
            one("r1c0,cmask=2,inv", Mode::SC, "sysfs-amd").1,
            0x1c0 | 2 << 24 | 1 << 23
        );
        assert_eq!(one("cpu/instructions/", Mode::TC, "sysfs-amd").1, 0xc0);
        let a = attrs_for_sysfs(
            "cpu/event=0xc0/u",
            Mode::TC,
            Flags::empty(),
            0,
            &root("sysfs-amd"),
            None,
        )
        .unwrap();
        assert!(a[0].0.is_set(AttrBit::EXCLUDE_KERNEL));
    }

    #[test]
    fn named_aliases_uncore_and_msr() {
        let (t, c, _, _, _) = one("tsc", Mode::TC, "sysfs-amd");
        assert_eq!((t, c), (9, 0));
        let (t, c, _, _, _) = one("energy-pkg", Mode::SC, "sysfs-amd");
        assert_eq!((t, c), (12, 2));
        let (t, c, _, _, cpus) = one(
            "amd_df/dram_channel_data_controller_0/",
            Mode::SC,
            "sysfs-amd",
        );
        assert_eq!((t, c, cpus), (11, 0x007 | 0x38 << 8, Some(vec![0, 8])));
        let e = attrs_for_sysfs(
            "amd_df/event=1/",
            Mode::TC,
            Flags::empty(),
            0,
            &root("sysfs-amd"),
            None,
        )
        .unwrap_err();
        assert!(e.to_string().contains("uncore"), "{e}");
    }

    #[test]
    fn hybrid_generic_events_open_on_every_core_type() {
        let v = attrs_for_sysfs(
            "instructions",
            Mode::TC,
            Flags::empty(),
            0,
            &root("sysfs-hybrid"),
            None,
        )
        .unwrap();
        let got: Vec<(u32, u64, Option<Vec<u32>>)> = v
            .into_iter()
            .map(|(a, c)| (a.type_id(), a.get_config(), c))
            .collect();
        assert_eq!(
            got,
            vec![
                (0, 10 << 32 | 1, Some((8..16).collect())),
                (0, 4 << 32 | 1, Some((0..8).collect())),
            ]
        );
        let v = attrs_for_sysfs(
            "L1-dcache-load-misses",
            Mode::SC,
            Flags::empty(),
            0,
            &root("sysfs-hybrid"),
            None,
        )
        .unwrap();
        assert_eq!(v.len(), 2);
        assert!(
            v.iter()
                .all(|(a, _)| a.type_id() == 3 && a.get_config() & 0xffff_ffff == 0x10000)
        );
    }

    #[test]
    fn probes_and_tracepoints() {
        let (t, c, _, c2, _) = one("uretprobe:/bin/true:0x40", Mode::TC, "sysfs-amd");
        assert_eq!((t, c, c2), (8, 1, 0x40));
        let (t, c, _, c2, _) = one("kprobe:vfs_read+4", Mode::TC, "sysfs-amd");
        assert_eq!((t, c, c2), (7, 0, 4));
        let (t, c, _, _, _) = one("syscalls:sys_enter_getpid", Mode::TC, "sysfs-amd");
        assert_eq!((t, c), (2, 123));
        let e = attrs_for_sysfs(
            "syscalls:sys_enter_getpd",
            Mode::TC,
            Flags::empty(),
            0,
            &root("sysfs-amd"),
            Some(&root("tracefs")),
        )
        .unwrap_err();
        assert!(e.to_string().contains("sys_enter_getpid"), "{e}");
    }

    #[test]
    fn bad_terms_name_the_valid_ones() {
        let e = attrs_for_sysfs(
            "cpu/evnt=1/",
            Mode::TC,
            Flags::empty(),
            0,
            &root("sysfs-amd"),
            None,
        )
        .unwrap_err();
        assert!(e.to_string().contains("event"), "{e}");
        let e = attrs_for_sysfs(
            "cpu/event=0xc0/,threshold=3",
            Mode::TC,
            Flags::empty(),
            0,
            &root("sysfs-amd"),
            None,
        )
        .unwrap_err();
        assert!(e.to_string().contains("threshold"), "{e}");
        let e = attrs_for_sysfs(
            "nosuchpmu/event=1/",
            Mode::TC,
            Flags::empty(),
            0,
            &root("sysfs-amd"),
            None,
        )
        .unwrap_err();
        assert!(e.to_string().contains("cpu"), "{e}");
        let e = attrs_for_sysfs(
            "frobnicate_widgets",
            Mode::TC,
            Flags::empty(),
            0,
            &root("sysfs-amd"),
            None,
        )
        .unwrap_err();
        // pmc_allocate(3): an unrecognised event specification is EINVAL.
        assert_eq!(e.errno(), libc::EINVAL, "{e}");
    }
}

/// Native names through libpfm4 (only with the `libpfm` feature).
#[cfg(feature = "libpfm")]
#[test]
fn libpfm_native_names_resolve() {
    let a = attrs_for("perf::instructions:u", Mode::TC, Flags::empty(), 0).unwrap();
    assert_eq!((a[0].type_id(), a[0].get_config()), (0, 1));
    assert!(a[0].is_set(AttrBit::EXCLUDE_KERNEL));
    assert!(a[0].is_set(AttrBit::DISABLED), "mode settings still apply");
}
