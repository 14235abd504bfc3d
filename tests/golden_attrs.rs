//! Golden attrs: what `Pmc::allocate` asks the kernel for, for a table of
//! (spec, mode, flags), checked field by field against values worked out
//! from the perf_event_open(2) ABI, on fixture sysfs trees (never the
//! host's /sys). No hardware or privilege needed.

// The hooks are the Linux backend's, which `--cfg pmc_force_portable` leaves out.
#![cfg(all(target_os = "linux", not(pmc_force_portable)))]

use pmc::{Flags, Mode};
use pmc_linux::attr::{Attr, AttrBit};

/// The attr in one line: type, config words, the bitfield members that are
/// set, read_format, sample_type and period (plus `max_stack` and
/// `clockid` when set).
fn summary(a: &Attr) -> String {
    let bits: Vec<String> = AttrBit::ALL
        .iter()
        .filter(|(_, b)| a.get(*b) != 0)
        .map(|(name, b)| match a.get(*b) {
            1 => name.to_ascii_lowercase(),
            v => format!("{}={v}", name.to_ascii_lowercase()),
        })
        .collect();
    let mut line = format!(
        "type={} config={:#x} config1={:#x} config2={:#x} bits=[{}] read_format={:#x} sample_type={:#x} period={}",
        a.type_id(),
        a.get_config(),
        a.get_config1(),
        a.get_config2(),
        bits.join(","),
        a.get_read_format().bits(),
        a.get_sample_type().bits(),
        a.get_sample_period_or_freq(),
    );
    if a.get_sample_max_stack() != 0 {
        line += &format!(" max_stack={}", a.get_sample_max_stack());
    }
    if a.is_set(AttrBit::USE_CLOCKID) {
        line += &format!(" clockid={}", a.get_clockid());
    }
    line
}

/// The fixture trees under backends/linux/tests/fixtures.
fn fixture(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("backends/linux/tests/fixtures")
        .join(name)
}

/// The attrs `allocate` would open on the Intel Ice Lake server fixture
/// (one core PMU, `max_precise` 3) with the fixture tracefs: never the
/// host's /sys.
fn icx(spec: &str, mode: Mode, flags: Flags, count: u64) -> pmc::Result<Vec<Attr>> {
    Ok(pmc::__private_test_hooks::attrs_for_sysfs(
        spec,
        mode,
        flags,
        count,
        &fixture("sysfs-intel-icx"),
        Some(&fixture("tracefs")),
    )?
    .into_iter()
    .map(|(a, _)| a)
    .collect())
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
    // --- Sampling (perf_event_open(2): sample_type bits IP 1<<0, TID 1<<1,
    // TIME 1<<2, CALLCHAIN 1<<5, ID 1<<6, CPU 1<<7, PERIOD 1<<8; clockid 1
    // is CLOCK_MONOTONIC, the clock pmclog timestamps use). hwpmc's
    // PMCLOG_TYPE_PCSAMPLE carries pid/tid, pc, cpu and the time
    // (sys/sys/pmclog.h `struct pmclog_pcsample`). A sampling event also
    // reads its lost-record count: read_format 0x13 = TOTAL_TIME_ENABLED
    // 1<<0 | TOTAL_TIME_RUNNING 1<<1 | PERF_FORMAT_LOST 1<<4
    // (linux/perf_event.h `enum perf_event_read_format`, "since Linux
    // 6.0" in perf_event_open(2)), which makes the DROPNOTIFY counts exact.
    // TS with CALLCHAIN: + CALLCHAIN, as deep as the kernel allows
    // (/proc/sys/kernel/perf_event_max_stack).
    (
        "instructions",
        Mode::TS,
        Flags::CALLCHAIN,
        100_000,
        "type=0 config=0x1 config1=0x0 config2=0x0 bits=[disabled,inherit,mmap,comm,task,sample_id_all,mmap2,comm_exec,use_clockid,inherit_thread] read_format=0x13 sample_type=0x1e7 period=100000 max_stack={max_stack} clockid=1",
    ),
    // SS: no inheritance, no callchain.
    (
        "cycles",
        Mode::SS,
        Flags::empty(),
        50_000,
        "type=0 config=0x0 config1=0x0 config2=0x0 bits=[disabled,mmap,comm,task,sample_id_all,mmap2,comm_exec,use_clockid] read_format=0x13 sample_type=0x1c7 period=50000 clockid=1",
    ),
    // SS with CALLCHAIN on a software event.
    (
        "cpu-clock",
        Mode::SS,
        Flags::CALLCHAIN,
        1_000_000,
        "type=1 config=0x0 config1=0x0 config2=0x0 bits=[disabled,mmap,comm,task,sample_id_all,mmap2,comm_exec,use_clockid] read_format=0x13 sample_type=0x1e7 period=1000000 max_stack={max_stack} clockid=1",
    ),
    // `freq=HZ`: the attr's union holds the frequency and `freq` is set.
    (
        "instructions,freq=4000",
        Mode::TS,
        Flags::empty(),
        100_000,
        "type=0 config=0x1 config1=0x0 config2=0x0 bits=[disabled,inherit,mmap,comm,freq,task,sample_id_all,mmap2,comm_exec,use_clockid,inherit_thread] read_format=0x13 sample_type=0x1c7 period=4000 clockid=1",
    ),
    // --- precise_ip (2 bits): `:p` 1, `:pp` 2, `:P` the PMU's
    // caps/max_precise (3 in the fixture, not this host's).
    (
        "instructions:p",
        Mode::SC,
        Flags::empty(),
        0,
        "type=0 config=0x1 config1=0x0 config2=0x0 bits=[disabled,precise_ip] read_format=0x3 sample_type=0x0 period=0",
    ),
    (
        "cycles:ppu",
        Mode::SC,
        Flags::empty(),
        0,
        "type=0 config=0x0 config1=0x0 config2=0x0 bits=[disabled,exclude_kernel,exclude_hv,precise_ip=2] read_format=0x3 sample_type=0x0 period=0",
    ),
    (
        "cycles:P",
        Mode::SC,
        Flags::empty(),
        0,
        "type=0 config=0x0 config1=0x0 config2=0x0 bits=[disabled,precise_ip=3] read_format=0x3 sample_type=0x0 period=0",
    ),
    // --- The Intel core PMU through its format files (fixture
    // sysfs-intel-icx/cpu/format: event 0-7, umask 8-15, edge 18, pc 19,
    // any 21, inv 23, cmask 24-31, ldlat config1:0-15, frontend
    // config1:0-23); type 4 from cpu/type.
    // 0xc0 | 1<<8 | edge 1<<18 | pc 1<<19 | any 1<<21 | inv 1<<23 | 2<<24.
    (
        "cpu/event=0xc0,umask=0x1,edge,pc,any,inv,cmask=2/",
        Mode::SC,
        Flags::empty(),
        0,
        "type=4 config=0x2ac01c0 config1=0x0 config2=0x0 bits=[disabled] read_format=0x3 sample_type=0x0 period=0",
    ),
    // The events/mem-loads alias: event=0xcd,umask=0x1,ldlat=3.
    (
        "cpu/mem-loads/",
        Mode::SC,
        Flags::empty(),
        0,
        "type=4 config=0x1cd config1=0x3 config2=0x0 bits=[disabled] read_format=0x3 sample_type=0x0 period=0",
    ),
    // The same alias sampled precisely (`/pp` after the PMU form).
    (
        "cpu/mem-loads/pp",
        Mode::TS,
        Flags::empty(),
        10_007,
        "type=4 config=0x1cd config1=0x3 config2=0x0 bits=[disabled,inherit,mmap,comm,task,precise_ip=2,sample_id_all,mmap2,comm_exec,use_clockid,inherit_thread] read_format=0x13 sample_type=0x1c7 period=10007 clockid=1",
    ),
    // frontend lives in config1 (FRONTEND_RETIRED.DSB_MISS = 0x11).
    (
        "cpu/event=0xc6,umask=0x1,frontend=0x11/",
        Mode::SC,
        Flags::empty(),
        0,
        "type=4 config=0x1c6 config1=0x11 config2=0x0 bits=[disabled] read_format=0x3 sample_type=0x0 period=0",
    ),
    // FreeBSD qualifiers on a raw event go through the core format:
    // cmask=2 → 2<<24, inv → 1<<23, edge → 1<<18.
    (
        "r1c0,cmask=2,inv,edge",
        Mode::SC,
        Flags::empty(),
        0,
        "type=4 config=0x28401c0 config1=0x0 config2=0x0 bits=[disabled] read_format=0x3 sample_type=0x0 period=0",
    ),
    // FreeBSD's Intel qualifiers (lib/libpmc/libpmc.c IAP_KW_ANYTHREAD
    // "anythread", IAP_KW_EDGE, IAP_KW_INV, IAP_KW_CMASK) land on the bits
    // hwpmc programs (sys/dev/hwpmc/hwpmc_core.h: IAP_EVSEL 0-7, IAP_UMASK
    // 8-15, IAP_EDGE 1<<18, IAP_ANY 1<<21, IAP_INV 1<<23, IAP_CMASK <<24):
    // the PMU-term row above without `pc` (1<<19).
    (
        "rc0,umask=1,anythread,edge,inv,cmask=2",
        Mode::SC,
        Flags::empty(),
        0,
        "type=4 config=0x2a401c0 config1=0x0 config2=0x0 bits=[disabled] read_format=0x3 sample_type=0x0 period=0",
    ),
    // The mem-loads alias by its bare name (resolved through events/).
    (
        "mem-loads",
        Mode::SC,
        Flags::empty(),
        0,
        "type=4 config=0x1cd config1=0x3 config2=0x0 bits=[disabled] read_format=0x3 sample_type=0x0 period=0",
    ),
    // LOG_PROCCSW on a counting PMC: the counter becomes a logging attr
    // (TID|TIME|ID|CPU = 0xc6, side-band records, the monotonic clock).
    (
        "instructions",
        Mode::TC,
        Flags::LOG_PROCCSW,
        0,
        "type=0 config=0x1 config1=0x0 config2=0x0 bits=[disabled,inherit,mmap,comm,task,sample_id_all,mmap2,comm_exec,use_clockid,inherit_thread] read_format=0x3 sample_type=0xc6 period=0 clockid=1",
    ),
];

/// `/proc/sys/kernel/perf_event_max_stack`, read here (not through the
/// code under test): a CALLCHAIN attr asks for that many frames.
fn host_max_stack() -> String {
    std::fs::read_to_string("/proc/sys/kernel/perf_event_max_stack")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "0".into())
}

#[test]
fn attrs_match_the_golden_table() {
    let mut mismatches = Vec::new();
    for (spec, mode, flags, count, want) in GOLDEN {
        let attrs =
            icx(spec, *mode, *flags, *count).unwrap_or_else(|e| panic!("{spec} {mode}: {e}"));
        assert_eq!(attrs.len(), 1, "{spec}: one core PMU in the fixture");
        let got = summary(&attrs[0]);
        let want = want.replace("{max_stack}", &host_max_stack());
        if got != want {
            mismatches.push(format!(
                "{spec} {mode} {flags:?}\n  want {want}\n  got  {got}"
            ));
        }
    }
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
}

/// The size of the newest `struct perf_event_attr`: the kernel's
/// include/uapi/linux/perf_event.h, `#define PERF_ATTR_SIZE_VER8 136 /*
/// add: config3 */` (Linux 6.3; 6.13's `aux_action` took reserved bits of
/// the same size).
const PERF_ATTR_SIZE_VER8: u32 = 136;

/// Every `PERF_ATTR_SIZE_VER*` the system's linux/perf_event.h defines.
fn header_attr_sizes() -> Vec<(String, u32)> {
    let header = std::fs::read_to_string("/usr/include/linux/perf_event.h").expect(
        "/usr/include/linux/perf_event.h (apt-get install linux-libc-dev) is the oracle here",
    );
    header
        .lines()
        .filter_map(|l| {
            let mut words = l.split_whitespace();
            (words.next()? == "#define").then_some(())?;
            let name = words.next()?;
            name.starts_with("PERF_ATTR_SIZE_VER")
                .then(|| Some((name.to_string(), words.next()?.parse().ok()?)))?
        })
        .collect()
}

#[test]
fn every_attr_is_the_current_uapi_size_and_starts_disabled() {
    // The system's header agrees with the kernel's, and has no newer size.
    let sizes = header_attr_sizes();
    assert!(
        sizes
            .iter()
            .any(|(n, v)| n == "PERF_ATTR_SIZE_VER0" && *v == 64),
        "{sizes:?}"
    );
    for (name, size) in &sizes {
        assert!(
            *size <= PERF_ATTR_SIZE_VER8,
            "linux/perf_event.h's {name} is {size}: a newer perf_event_attr than ours"
        );
        if name == "PERF_ATTR_SIZE_VER8" {
            assert_eq!(*size, PERF_ATTR_SIZE_VER8, "{name}");
        }
    }
    for (spec, mode, flags, count, _) in GOLDEN {
        for a in icx(spec, *mode, *flags, *count).unwrap() {
            assert!(a.is_set(AttrBit::DISABLED), "{spec}: enabled only by start");
            assert_eq!(a.size_bytes(), PERF_ATTR_SIZE_VER8, "{spec}: attr.size");
            assert_eq!(
                a.to_bytes().len() as u32,
                PERF_ATTR_SIZE_VER8,
                "{spec}: the bytes written"
            );
        }
    }
}

#[test]
fn encoding_qualifiers_on_generic_events_are_refused_with_the_raw_form_as_remedy() {
    let e = icx("instructions,cmask=1", Mode::TC, Flags::empty(), 0).unwrap_err();
    assert_eq!(e.errno(), libc::EOPNOTSUPP, "{e}");
    assert!(e.to_string().contains("cmask"), "{e}");
}

/// perf's cache names (tools/perf/util/evsel.c `evsel__hw_cache`) with
/// the ids of `enum perf_hw_cache_id` (linux/perf_event.h).
const CACHES: [(&str, u64); 7] = [
    ("L1-dcache", 0),
    ("L1-icache", 1),
    ("LLC", 2),
    ("dTLB", 3),
    ("iTLB", 4),
    ("branch", 5),
    ("node", 6),
];
/// `enum perf_hw_cache_op_id` with perf's singular and plural spellings.
const CACHE_OPS: [(&str, &str, u64); 3] = [
    ("load", "loads", 0),
    ("store", "stores", 1),
    ("prefetch", "prefetches", 2),
];

/// Every cache event name with its `config` by perf_event_open(2):
/// "(perf_hw_cache_id) | (perf_hw_cache_op_id << 8) |
/// (perf_hw_cache_op_result_id << 16)", ACCESS = 0, MISS = 1.
fn cache_product() -> Vec<(String, u64)> {
    let mut all = Vec::new();
    for (cache, id) in CACHES {
        for (op, ops, op_id) in CACHE_OPS {
            all.push((format!("{cache}-{ops}"), id | op_id << 8));
            all.push((format!("{cache}-{op}-misses"), id | op_id << 8 | 1 << 16));
        }
    }
    all
}

#[test]
fn every_cache_type_op_and_result_encodes_by_the_man_page_formula() {
    let all = cache_product();
    assert_eq!(all.len(), 7 * 3 * 2);
    for (name, config) in &all {
        for mode in Mode::ALL {
            let attrs =
                icx(name, mode, Flags::empty(), 1_000).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(attrs.len(), 1, "{name}");
            // PERF_TYPE_HW_CACHE = 3.
            assert_eq!(
                (attrs[0].type_id(), attrs[0].get_config()),
                (3, *config),
                "{name} {mode}"
            );
        }
    }
}

/// The `(type, config)` of a generic event on each core PMU of the hybrid
/// fixture: PERF_TYPE_HARDWARE/HW_CACHE with the PMU's type in bits 32-63
/// ("the extended type", perf_event_open(2) since Linux 6.0), on its CPUs.
#[test]
fn hybrid_generic_events_carry_the_pmu_type_in_the_upper_config_bits() {
    use pmc::__private_test_hooks::attrs_for_sysfs;
    let hybrid = fixture("sysfs-hybrid");
    // cpu_core: type 4, CPUs 0-7; cpu_atom: type 10, CPUs 8-15 (fixture).
    let cores: [(u64, Vec<u32>); 2] = [(4, (0..8).collect()), (10, (8..16).collect())];
    // enum perf_hw_id.
    let hardware: [(&str, u64); 10] = [
        ("cycles", 0),
        ("instructions", 1),
        ("cache-references", 2),
        ("cache-misses", 3),
        ("branch-instructions", 4),
        ("branch-misses", 5),
        ("bus-cycles", 6),
        ("stalled-cycles-frontend", 7),
        ("stalled-cycles-backend", 8),
        ("ref-cycles", 9),
    ];
    let rows = hardware
        .iter()
        .map(|(n, c)| (n.to_string(), 0u32, *c))
        .chain(cache_product().into_iter().map(|(n, c)| (n, 3u32, c)));
    let mut checked = 0;
    for (name, kind, config) in rows {
        let mut got: Vec<(u32, u64, Option<Vec<u32>>)> =
            attrs_for_sysfs(&name, Mode::TC, Flags::empty(), 0, &hybrid, None)
                .unwrap_or_else(|e| panic!("{name}: {e}"))
                .into_iter()
                .map(|(a, cpus)| (a.type_id(), a.get_config(), cpus))
                .collect();
        got.sort_by_key(|(_, c, _)| *c);
        let want: Vec<(u32, u64, Option<Vec<u32>>)> = cores
            .iter()
            .map(|(t, cpus)| (kind, t << 32 | config, Some(cpus.clone())))
            .collect();
        assert_eq!(got, want, "{name}");
        checked += 1;
    }
    assert_eq!(checked, 10 + 42);
}

/// `:P` on a hybrid machine: the lowest `caps/max_precise` of the core
/// PMUs, so the attr opens on each core type (the fixture's cpu_atom
/// publishes none: 0).
#[test]
fn hybrid_max_precise_is_the_lowest_of_the_core_pmus() {
    let v = pmc::__private_test_hooks::attrs_for_sysfs(
        "cycles:P",
        Mode::SC,
        Flags::empty(),
        0,
        &fixture("sysfs-hybrid"),
        None,
    )
    .unwrap();
    assert_eq!(v.len(), 2);
    for (a, _) in &v {
        assert_eq!(a.get(AttrBit::PRECISE_IP), 0, "{}", summary(a));
    }
    // On the Ice Lake fixture the one core PMU's 3.
    let a = icx("cycles:P", Mode::SC, Flags::empty(), 0).unwrap();
    assert_eq!(a[0].get(AttrBit::PRECISE_IP), 3);
}

/// LOG_PROCCSW: the counter leads a group with a context-switch sibling
/// that samples every switch with PERF_SAMPLE_READ of the group, and with
/// the exit tracepoint when tracefs has it (fixture id 316).
#[test]
fn log_proccsw_siblings() {
    let siblings = pmc::__private_test_hooks::slice_siblings_for_sysfs(
        "instructions",
        Mode::TC,
        Flags::LOG_PROCCSW,
        0,
        &fixture("sysfs-intel-icx"),
        Some(&fixture("tracefs")),
    )
    .unwrap();
    let got: Vec<String> = siblings.iter().map(summary).collect();
    // PERF_COUNT_SW_CONTEXT_SWITCHES = 3; sample_type = the leader's 0xc6
    // | READ 1<<4; read_format GROUP 1<<3; period 1; not disabled (a
    // sibling follows its leader).
    assert_eq!(
        got,
        [
            "type=1 config=0x3 config1=0x0 config2=0x0 bits=[inherit,sample_id_all,use_clockid,inherit_thread] read_format=0x8 sample_type=0xd6 period=1 clockid=1",
            "type=2 config=0x13c config1=0x0 config2=0x0 bits=[inherit,sample_id_all,use_clockid,inherit_thread] read_format=0x8 sample_type=0xd6 period=1 clockid=1",
        ]
    );
    // No siblings without the flag or in sampling modes (hwpmc logs
    // PROCCSW for counting process PMCs: hwpmc_mod.c pmc_process_csw_out).
    for (mode, flags) in [(Mode::TC, Flags::empty()), (Mode::SC, Flags::LOG_PROCCSW)] {
        let none = pmc::__private_test_hooks::slice_siblings_for_sysfs(
            "instructions",
            mode,
            flags,
            0,
            &fixture("sysfs-intel-icx"),
            Some(&fixture("tracefs")),
        );
        assert!(none.unwrap().is_empty(), "{mode} {flags:?}");
    }
}

/// Golden attrs on fixture sysfs trees (machines this one is not).
mod fixtures {
    use std::path::{Path, PathBuf};

    use pmc::__private_test_hooks::attrs_for_sysfs;
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
    let a =
        pmc::__private_test_hooks::attrs_for("perf::instructions:u", Mode::TC, Flags::empty(), 0)
            .unwrap();
    assert_eq!((a[0].type_id(), a[0].get_config()), (0, 1));
    assert!(a[0].is_set(AttrBit::EXCLUDE_KERNEL));
    assert!(a[0].is_set(AttrBit::DISABLED), "mode settings still apply");
}
