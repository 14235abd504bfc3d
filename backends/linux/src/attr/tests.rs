use super::*;

#[test]
fn cache_config_encodes_id_op_result() {
    let e = CacheEvent {
        cache: CacheId::L1D,
        op: CacheOp::Read,
        result: CacheResult::Miss,
    };
    assert_eq!(e.config(), 0x10000);
    assert_eq!(e.name(), "L1-dcache-load-misses");
    assert_eq!(CacheEvent::all().count(), 42);
    let llc = CacheEvent {
        cache: CacheId::LL,
        op: CacheOp::Write,
        result: CacheResult::Access,
    };
    assert_eq!(llc.config(), 0x102);
    assert_eq!(llc.name(), "LLC-stores");
}

#[test]
fn hybrid_hardware_uses_the_extended_type() {
    let a = Attr::new(EventConfig::Hardware {
        event: Hardware::Instructions,
        pmu: Some(8),
    });
    assert_eq!(a.type_id(), 0);
    assert_eq!(a.get_config(), (8 << 32) | 1);
}

#[test]
fn freq_and_period_share_the_union() {
    let a = Attr::new(EventConfig::Software(Software::CpuClock)).sample_freq(4000);
    assert!(a.is_set(AttrBit::FREQ));
    assert_eq!(a.get_sample_period_or_freq(), 4000);
    let a = a.sample_period(10_000);
    assert!(!a.is_set(AttrBit::FREQ));
    assert_eq!(a.get_sample_period_or_freq(), 10_000);
}

#[test]
fn bytes_follow_the_declared_size() {
    let a = Attr::new(EventConfig::Raw(0xc0)).config3(7);
    let b = a.to_bytes();
    assert_eq!(b.len(), 136);
    assert_eq!(&b[128..136], &7u64.to_ne_bytes());
    assert_eq!(a.size(64).to_bytes().len(), 64);
}

#[test]
fn breakpoint_fields_land_in_config1_and_config2() {
    let a = Attr::new(EventConfig::Breakpoint {
        access: BreakpointAccess::Write,
        addr: 0x1000,
        len: 8,
    });
    assert_eq!(a.type_id(), 5);
    assert_eq!(a.get_bp_type(), 2);
    assert_eq!(a.get_config1(), 0x1000);
    assert_eq!(a.get_config2(), 8);
    assert!(format!("{a:?}").contains("bp_type"));
}

/// The `u64` at byte `at` of [`Attr::to_bytes`].
fn u64_at(bytes: &[u8], at: usize) -> u64 {
    u64::from_ne_bytes(bytes[at..at + 8].try_into().unwrap())
}

/// The `u32` at byte `at` of [`Attr::to_bytes`].
fn u32_at(bytes: &[u8], at: usize) -> u32 {
    u32::from_ne_bytes(bytes[at..at + 4].try_into().unwrap())
}

/// The `u16` at byte `at` of [`Attr::to_bytes`].
fn u16_at(bytes: &[u8], at: usize) -> u16 {
    u16::from_ne_bytes(bytes[at..at + 2].try_into().unwrap())
}

/// Every setter lands at the byte offset of its member in
/// `struct perf_event_attr` (/usr/include/linux/perf_event.h: type 0,
/// size 4, config 8, sample_period 16, sample_type 24, read_format 32,
/// the bit-field 40, wakeup 48, bp_type 52, config1 56, config2 64,
/// branch_sample_type 72, sample_regs_user 80, sample_stack_user 88,
/// clockid 92, sample_regs_intr 96, aux_watermark 104, sample_max_stack
/// 108, aux_sample_size 112, aux_action 116 (`__reserved_3` before 6.13),
/// sig_data 120, config3 128), and its getter reads it back.
#[test]
fn every_field_lands_at_its_uapi_offset() {
    let a = Attr::new(EventConfig::Dynamic {
        pmu_type: 0x2a,
        config: 0x1111,
        config1: 0x5555,
        config2: 0x6666,
        config3: 0x7777,
    })
    .sample_period(0x2222)
    .sample_type(SampleType::IP | SampleType::CALLCHAIN)
    .read_format(ReadFormat::ID | ReadFormat::GROUP)
    .wakeup_events(0x33)
    .branch_sample_type(BranchSampleType::ANY_CALL)
    .sample_regs_user(0x8888)
    .sample_stack_user(0x9999)
    .clockid(-7)
    .sample_regs_intr(0xaaaa)
    .aux_watermark(0xbbbb)
    .sample_max_stack(0xcc)
    .aux_sample_size(0xdddd)
    .aux_action(AuxAction::PAUSE)
    .sig_data(0xeeee);
    let b = a.to_bytes();
    assert_eq!(b.len(), 136, "PERF_ATTR_SIZE_VER8");
    assert_eq!((u32_at(&b, 0), a.type_id()), (0x2a, 0x2a));
    assert_eq!((u32_at(&b, 4), a.size_bytes()), (136, 136));
    assert_eq!((u64_at(&b, 8), a.get_config()), (0x1111, 0x1111));
    assert_eq!(
        (u64_at(&b, 16), a.get_sample_period_or_freq()),
        (0x2222, 0x2222)
    );
    // PERF_SAMPLE_IP 1 << 0, PERF_SAMPLE_CALLCHAIN 1 << 5.
    assert_eq!(u64_at(&b, 24), 0x21);
    assert_eq!(a.get_sample_type().bits(), 0x21);
    // PERF_FORMAT_ID 1 << 2, PERF_FORMAT_GROUP 1 << 3.
    assert_eq!(u64_at(&b, 32), 0xc);
    assert_eq!(a.get_read_format().bits(), 0xc);
    // clockid() sets use_clockid (bit 25); sample_period() and
    // wakeup_events() clear freq (10) and watermark (14).
    assert_eq!(u64_at(&b, 40), 1 << 25);
    assert_eq!((u32_at(&b, 48), a.get_wakeup()), (0x33, 0x33));
    assert_eq!((u32_at(&b, 52), a.get_bp_type()), (0, 0));
    assert_eq!((u64_at(&b, 56), a.get_config1()), (0x5555, 0x5555));
    assert_eq!((u64_at(&b, 64), a.get_config2()), (0x6666, 0x6666));
    // PERF_SAMPLE_BRANCH_ANY_CALL 1 << 4.
    assert_eq!(u64_at(&b, 72), 0x10);
    assert_eq!(a.get_branch_sample_type().bits(), 0x10);
    assert_eq!((u64_at(&b, 80), a.get_sample_regs_user()), (0x8888, 0x8888));
    assert_eq!(
        (u32_at(&b, 88), a.get_sample_stack_user()),
        (0x9999, 0x9999)
    );
    assert_eq!((u32_at(&b, 92) as i32, a.get_clockid()), (-7, -7));
    assert_eq!((u64_at(&b, 96), a.get_sample_regs_intr()), (0xaaaa, 0xaaaa));
    assert_eq!((u32_at(&b, 104), a.get_aux_watermark()), (0xbbbb, 0xbbbb));
    assert_eq!((u16_at(&b, 108), a.get_sample_max_stack()), (0xcc, 0xcc));
    assert_eq!(u16_at(&b, 110), 0, "__reserved_2");
    assert_eq!((u32_at(&b, 112), a.get_aux_sample_size()), (0xdddd, 0xdddd));
    // PERF_AUX_ACTION_PAUSE is bit 1 of aux_action.
    assert_eq!(u32_at(&b, 116), 2);
    assert_eq!(a.get_aux_action(), AuxAction::PAUSE);
    assert_eq!((u64_at(&b, 120), a.get_sig_data()), (0xeeee, 0xeeee));
    assert_eq!((u64_at(&b, 128), a.get_config3()), (0x7777, 0x7777));
}

/// The union members and the flags that select between them:
/// `sample_freq` with `freq` (bit 10), `wakeup_watermark` with
/// `watermark` (bit 14), `precise_ip` the two bits 15-16.
#[test]
fn union_selectors_and_precise_ip_follow_the_bitfield() {
    let base = Attr::new(EventConfig::Software(Software::CpuClock));
    let freq = base.sample_freq(997);
    assert_eq!(u64_at(&freq.to_bytes(), 40), 1 << 10);
    assert_eq!(freq.get(AttrBit::FREQ), 1);
    assert!(freq.is_sampling());
    let watermark = base.wakeup_watermark(4096);
    assert_eq!(u64_at(&watermark.to_bytes(), 40), 1 << 14);
    assert_eq!(u32_at(&watermark.to_bytes(), 48), 4096);
    let events = watermark.wakeup_events(3);
    assert_eq!(u64_at(&events.to_bytes(), 40), 0);
    for (level, field) in [(0u8, 0u64), (1, 1), (2, 2), (3, 3), (9, 3)] {
        let a = base.precise_ip(level);
        assert_eq!(u64_at(&a.to_bytes(), 40), field << 15, "precise_ip {level}");
        assert_eq!(a.get(AttrBit::PRECISE_IP), field);
        assert_eq!(a.is_set(AttrBit::PRECISE_IP), field != 0);
    }
    // A counting event: sample_period 0 (perf_event_open(2): "sampling"
    // means a non-zero sample_period/sample_freq).
    assert!(!base.is_sampling());
    assert!(base.sample_period(1).is_sampling());
    assert!(!base.sample_period(1).sample_period(0).is_sampling());
}

/// `Attr::set` writes one member, leaving the others; `exclude_kernel`
/// (bit 5) decides whether kernel mode is counted.
#[test]
fn set_touches_one_member_and_exclude_kernel_decides_kernel_counting() {
    let a = Attr::new(EventConfig::Software(Software::TaskClock))
        .set(AttrBit::EXCLUDE_HV, 1)
        .set(AttrBit::SIGTRAP, 1);
    assert_eq!(u64_at(&a.to_bytes(), 40), (1 << 6) | (1 << 37));
    assert!(a.counts_kernel());
    let k = a.exclude_kernel(true);
    assert_eq!(u64_at(&k.to_bytes(), 40), (1 << 5) | (1 << 6) | (1 << 37));
    assert!(!k.counts_kernel());
    assert!(k.is_set(AttrBit::EXCLUDE_KERNEL));
    assert!(!k.is_set(AttrBit::EXCLUDE_USER));
    assert!(k.exclude_kernel(false).counts_kernel());
}

/// `Attr::event` sets `type` and `config` per perf_event_open(2), and
/// clears what an earlier selection left in `bp_type`, `config1..3`.
#[test]
fn event_selection_sets_type_and_config_and_clears_the_extensions() {
    // (event, type, config): PERF_TYPE_* and the PERF_COUNT_* numbers of
    // perf_event.h; the hybrid form puts the PMU type in config 63:32
    // (PERF_PMU_TYPE_SHIFT).
    let rows: [(EventConfig, u32, u64); 9] = [
        (
            EventConfig::Hardware {
                event: Hardware::BranchMisses,
                pmu: None,
            },
            0,
            5,
        ),
        (
            EventConfig::Hardware {
                event: Hardware::RefCpuCycles,
                pmu: Some(4),
            },
            0,
            (4 << 32) | 9,
        ),
        (EventConfig::Software(Software::CgroupSwitches), 1, 11),
        (EventConfig::Tracepoint(312), 2, 312),
        (
            EventConfig::Cache {
                event: CacheEvent {
                    cache: CacheId::DTLB,
                    op: CacheOp::Prefetch,
                    result: CacheResult::Miss,
                },
                pmu: None,
            },
            3,
            0x1_02_03,
        ),
        (
            EventConfig::Cache {
                event: CacheEvent {
                    cache: CacheId::ITLB,
                    op: CacheOp::Write,
                    result: CacheResult::Access,
                },
                pmu: Some(10),
            },
            3,
            (10 << 32) | 0x1_04,
        ),
        (EventConfig::Raw(0x5300c0), 4, 0x5300c0),
        (
            EventConfig::Breakpoint {
                access: BreakpointAccess::Execute,
                addr: 0x40_1000,
                len: 8,
            },
            5,
            0,
        ),
        (
            EventConfig::Dynamic {
                pmu_type: 9,
                config: 0x77,
                config1: 0,
                config2: 0,
                config3: 0,
            },
            9,
            0x77,
        ),
    ];
    // An earlier selection with every extension set.
    let dirty = Attr::new(EventConfig::Dynamic {
        pmu_type: 8,
        config: 1,
        config1: 2,
        config2: 3,
        config3: 4,
    })
    .event(EventConfig::Breakpoint {
        access: BreakpointAccess::ReadWrite,
        addr: 5,
        len: 4,
    });
    assert_eq!(dirty.get_bp_type(), 3, "HW_BREAKPOINT_RW");
    for (event, type_, config) in rows {
        let a = dirty.event(event);
        assert_eq!((a.type_id(), a.get_config()), (type_, config), "{event:?}");
        if let EventConfig::Breakpoint { addr, len, .. } = event {
            // HW_BREAKPOINT_X = 4; bp_addr is config1, bp_len config2.
            assert_eq!(a.get_bp_type(), 4);
            assert_eq!((a.get_config1(), a.get_config2()), (addr, len));
        } else {
            assert_eq!(a.get_bp_type(), 0, "HW_BREAKPOINT_EMPTY: {event:?}");
            assert_eq!((a.get_config1(), a.get_config2()), (0, 0), "{event:?}");
        }
        assert_eq!(a.get_config3(), 0, "{event:?}");
    }
    let access = [
        (BreakpointAccess::Read, 1),
        (BreakpointAccess::Write, 2),
        (BreakpointAccess::ReadWrite, 3),
        (BreakpointAccess::Execute, 4),
    ];
    for (access, bp_type) in access {
        let a = Attr::new(EventConfig::Breakpoint {
            access,
            addr: 0,
            len: 1,
        });
        assert_eq!(a.get_bp_type(), bp_type, "{access:?}");
    }
}

/// Every cache event: `config = id | (op << 8) | (result << 16)`
/// (perf_event.h, PERF_TYPE_HW_CACHE), and perf's name: the cache
/// (`L1-dcache`, `L1-icache`, `LLC`, `dTLB`, `iTLB`, `branch`, `node`),
/// then `loads`/`stores`/`prefetches` for accesses or
/// `load-misses`/`store-misses`/`prefetch-misses` (tools/perf/util/evsel.c,
/// `evsel__hw_cache_type_op_res_name`).
#[test]
fn the_full_cache_product_encodes_and_names_like_perf() {
    let caches = [
        "L1-dcache",
        "L1-icache",
        "LLC",
        "dTLB",
        "iTLB",
        "branch",
        "node",
    ];
    let access = ["loads", "stores", "prefetches"];
    let miss = ["load-misses", "store-misses", "prefetch-misses"];
    let all: Vec<CacheEvent> = CacheEvent::all().collect();
    assert_eq!(all.len(), 7 * 3 * 2);
    let mut seen = std::collections::HashSet::new();
    for e in all {
        let (id, op, result) = (e.cache as u64, e.op as u64, e.result as u64);
        assert!(seen.insert((id, op, result)), "{e:?} twice");
        assert_eq!(e.config(), id + op * 256 + result * 65536, "{e:?}");
        let suffix = if result == 0 { access } else { miss }[op as usize];
        assert_eq!(e.name(), format!("{}-{suffix}", caches[id as usize]));
        let a = Attr::new(EventConfig::Cache {
            event: e,
            pmu: Some(8),
        });
        assert_eq!(a.describe_event(), e.name(), "the PMU bits are ignored");
    }
    assert_eq!(seen.len(), 42);
}

/// perf's names of the generic events (`perf list`; tools/perf/util/
/// parse-events.c `event_symbols_hw`/`event_symbols_sw`), in
/// PERF_COUNT_HW_*/PERF_COUNT_SW_* order.
#[test]
fn generic_events_carry_perfs_names_in_abi_order() {
    let hw = [
        "cpu-cycles",
        "instructions",
        "cache-references",
        "cache-misses",
        "branch-instructions",
        "branch-misses",
        "bus-cycles",
        "stalled-cycles-frontend",
        "stalled-cycles-backend",
        "ref-cycles",
    ];
    for (n, h) in Hardware::ALL.iter().enumerate() {
        assert_eq!((*h as usize, h.name()), (n, hw[n]));
        let a = Attr::new(EventConfig::Hardware {
            event: *h,
            pmu: Some(8),
        });
        assert_eq!(a.describe_event(), hw[n]);
    }
    let sw = [
        "cpu-clock",
        "task-clock",
        "page-faults",
        "context-switches",
        "cpu-migrations",
        "minor-faults",
        "major-faults",
        "alignment-faults",
        "emulation-faults",
        "dummy",
        "bpf-output",
        "cgroup-switches",
    ];
    for (n, s) in Software::ALL.iter().enumerate() {
        assert_eq!((*s as usize, s.name()), (n, sw[n]));
        assert_eq!(Attr::new(EventConfig::Software(*s)).describe_event(), sw[n]);
    }
}

#[test]
fn descriptions_name_events_outside_the_tables_by_number() {
    let d = |e| Attr::new(e).describe_event();
    assert_eq!(
        Attr::new(EventConfig::Software(Software::Dummy))
            .config(77)
            .describe_event(),
        "software 0x4d"
    );
    assert_eq!(
        Attr::new(EventConfig::Hardware {
            event: Hardware::CpuCycles,
            pmu: None
        })
        .config(0x33)
        .describe_event(),
        "hardware 0x33"
    );
    assert_eq!(
        Attr::new(EventConfig::Cache {
            event: CacheEvent {
                cache: CacheId::L1D,
                op: CacheOp::Read,
                result: CacheResult::Access
            },
            pmu: None
        })
        .config(0x0303)
        .describe_event(),
        "cache 0x303"
    );
    assert_eq!(d(EventConfig::Raw(0x1a2)), "r1a2");
    assert_eq!(d(EventConfig::Tracepoint(42)), "tracepoint id 42");
    assert_eq!(
        d(EventConfig::Breakpoint {
            access: BreakpointAccess::Write,
            addr: 0x1000,
            len: 8
        }),
        "breakpoint 0x1000/8 type 2"
    );
    assert_eq!(
        d(EventConfig::Dynamic {
            pmu_type: 11,
            config: 0xff,
            config1: 0,
            config2: 0,
            config3: 0
        }),
        "pmu type 11 config 0xff"
    );
}

/// The `Debug` dump names every non-zero member by its uapi name and
/// leaves zero ones out; the union is named by the `freq` bit.
#[test]
fn debug_names_the_non_zero_members() {
    let a = Attr::new(EventConfig::Software(Software::TaskClock))
        .sample_period(4000)
        .sample_type(SampleType::TID)
        .read_format(ReadFormat::ID)
        .disabled(true)
        .sig_data(5);
    let text = format!("{a:?}");
    for want in [
        "type: 1",
        "size: 136",
        "config: 0x1",
        "sample_period: 4000",
        "sample_type: SampleType(TID)",
        "read_format: ReadFormat(ID)",
        "disabled: 1",
        "sig_data: 0x5",
    ] {
        assert!(text.contains(want), "{want} missing in {text}");
    }
    for absent in ["sample_freq", "inherit", "config1", "wakeup", "clockid"] {
        assert!(!text.contains(absent), "{absent} shown in {text}");
    }
    let f = format!("{:?}", a.sample_freq(99));
    assert!(
        f.contains("sample_freq: 99") && f.contains("freq: 1"),
        "{f}"
    );
    assert!(!f.contains("sample_period"), "{f}");
    let zero = format!("{:?}", Attr::new(EventConfig::Software(Software::CpuClock)));
    assert_eq!(zero, "Attr { type: 1, size: 136, config: 0x0 }");
}

#[test]
fn size_declares_an_older_abi_within_the_published_range() {
    let a = Attr::new(EventConfig::Software(Software::Dummy)).config2(9);
    // PERF_ATTR_SIZE_VER1 = 72 adds config2.
    assert_eq!(a.size(72).size_bytes(), 72);
    assert_eq!(u64_at(&a.size(72).to_bytes(), 64), 9);
    assert_eq!(a.size(64).to_bytes().len(), 64);
    // Below VER0 and above the current size are clamped.
    assert_eq!(a.size(8).size_bytes(), 64);
    assert_eq!(a.size(4096).size_bytes(), 136);
    // config1 (bp_addr, kprobe_func, uprobe_path) at 56, config2 at 64.
    let c = a.config1(0xabc);
    assert_eq!((c.get_config1(), u64_at(&c.to_bytes(), 56)), (0xabc, 0xabc));
    assert_eq!(c.get_config2(), 9);
    assert_eq!(u32_at(&a.size(72).to_bytes(), 4), 72);
}
