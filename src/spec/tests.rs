use proptest::prelude::*;

use super::*;

fn ok(s: &str) -> EventSpec {
    parse(s).unwrap_or_else(|e| panic!("{s:?} should parse: {e}"))
}

/// A `SOFT-*` name the parser leaves to hwpmc, and why Linux refuses it.
fn linux_err(s: &str) -> SpecError {
    let spec = ok(s);
    assert_eq!(
        (spec.class_prefix.as_deref(), &spec.event),
        (Some("soft"), &EventName::Named(s.to_string())),
        "{s}: passed through as written"
    );
    super::soft_without_linux(&spec).unwrap_or_else(|| panic!("{s}: Linux should refuse it"))
}

fn err(s: &str) -> SpecError {
    match parse(s) {
        Ok(spec) => panic!("{s:?} should be rejected, got {spec:?}"),
        Err(e) => e,
    }
}

fn hw(h: HardwareEvent) -> EventName {
    EventName::Hardware(h)
}

fn cache(cache: CacheLevel, op: CacheOp, result: CacheResult) -> EventName {
    EventName::Cache(CacheEvent { cache, op, result })
}

#[test]
fn freebsd_generic_aliases() {
    use HardwareEvent::*;
    for (s, e) in [
        ("instructions", hw(Instructions)),
        ("unhalted-cycles", hw(Cycles)),
        ("UNHALTED_CORE_CYCLES", hw(Cycles)),
        ("cycles", hw(Cycles)),
        ("branches", hw(Branches)),
        ("branch-mispredicts", hw(BranchMisses)),
        ("BRANCH_INSTRUCTION_RETIRED", hw(Branches)),
        ("BRANCH_MISSES_RETIRED", hw(BranchMisses)),
        ("LLC_MISSES", hw(CacheMisses)),
        ("LLC_REFERENCE", hw(CacheReferences)),
        ("interrupts", hw(Interrupts)),
        (
            "dc-misses",
            cache(CacheLevel::L1D, CacheOp::Read, CacheResult::Miss),
        ),
        (
            "ic-misses",
            cache(CacheLevel::L1I, CacheOp::Read, CacheResult::Miss),
        ),
    ] {
        assert_eq!(ok(s).event, e, "{s}");
    }
}

#[test]
fn freebsd_separators_and_case_are_equivalent() {
    for s in [
        "unhalted-cycles",
        "Unhalted_Cycles",
        "UNHALTED.CYCLES",
        "unhalted cycles",
    ] {
        assert_eq!(ok(s).event, hw(HardwareEvent::Cycles), "{s}");
    }
}

#[test]
fn perf_llc_misses_is_the_cache_event_but_freebsd_llc_misses_is_generic() {
    assert_eq!(
        ok("LLC-misses").event,
        cache(CacheLevel::LL, CacheOp::Read, CacheResult::Miss)
    );
    assert_eq!(ok("LLC_MISSES").event, hw(HardwareEvent::CacheMisses));
}

#[test]
fn every_perf_generic_name_parses_to_itself() {
    for (name, event) in generic_names() {
        let spec = ok(&name);
        assert_eq!(spec.event, event, "{name}");
    }
    let names: Vec<_> = generic_names().into_iter().map(|(n, _)| n).collect();
    for must in [
        "cache-misses",
        "task-clock",
        "L1-dcache-load-misses",
        "dTLB-store-misses",
        "LLC-prefetches",
        "branch-loads",
        "node-load-misses",
        "ref-cycles",
        "cgroup-switches",
    ] {
        assert!(names.iter().any(|n| n == must), "{must} missing");
    }
    assert_eq!(
        names
            .iter()
            .filter(|n| matches!(ok(n).event, EventName::Cache(_)))
            .count(),
        7 * 3 * 2 + 2,
        "the full cache product plus dc-misses/ic-misses"
    );
}

#[test]
fn display_names_are_perfs() {
    assert_eq!(HardwareEvent::Instructions.to_string(), "instructions");
    assert_eq!(SoftwareEvent::TaskClock.to_string(), "task-clock");
    let c = CacheEvent {
        cache: CacheLevel::L1D,
        op: CacheOp::Read,
        result: CacheResult::Miss,
    };
    assert_eq!(c.to_string(), "L1-dcache-load-misses");
}

#[test]
fn qualifiers() {
    let q = ok("instructions,usr").qualifiers;
    assert_eq!(
        q.privilege,
        Some(Privilege {
            user: true,
            kernel: false,
            hypervisor: false
        })
    );
    let q = ok("k8-dc-misses,os,usr").qualifiers;
    let p = q.privilege.unwrap();
    assert!(p.user && p.kernel && !p.hypervisor);
    let q = ok("r1c0,edge,inv,cmask=2,umask=0x41,threshold=010,anythread,precise=2").qualifiers;
    assert!(q.edge && q.inv && q.anythread);
    assert_eq!(
        (q.cmask, q.umask, q.threshold),
        (Some(2), Some(0x41), Some(8))
    );
    assert_eq!(q.precise, Some(Precise::Level(2)));
    let q = ok("cycles,COUNT=3,Mask=7,precise").qualifiers;
    assert_eq!((q.cmask, q.umask), (Some(3), Some(7)));
    assert_eq!(q.precise, Some(Precise::Max));
    let q = ok("cpu-clock,period=100000,pinned,exclusive").qualifiers;
    assert_eq!(q.period, Some(100_000));
    assert!(q.pinned && q.exclusive);
    assert_eq!(ok("cycles,freq=4000").qualifiers.freq, Some(4000));
    assert_eq!(ok("instructions").qualifiers, Qualifiers::default());
}

#[test]
fn filter_takes_the_rest_of_the_specifier() {
    let s = ok("syscalls:sys_enter_write,usr,filter=count == 3 && fd==1, x");
    assert_eq!(
        s.event,
        EventName::Tracepoint {
            subsystem: "syscalls".into(),
            event: "sys_enter_write".into()
        }
    );
    assert_eq!(
        s.qualifiers.filter.as_deref(),
        Some("count == 3 && fd==1, x")
    );
    assert!(s.qualifiers.privilege.unwrap().user);
}

#[test]
fn perf_modifiers() {
    let q = ok("instructions:u").qualifiers;
    assert_eq!(
        q.privilege,
        Some(Privilege {
            user: true,
            kernel: false,
            hypervisor: false
        })
    );
    let q = ok("cycles:kppp").qualifiers;
    assert!(q.privilege.unwrap().kernel);
    assert_eq!(q.precise, Some(Precise::Level(3)));
    let q = ok("cycles:GHIDSWeP").qualifiers;
    assert!(q.guest_only && q.host_only && q.exclude_idle);
    assert!(q.pinned && q.sample_read && q.weak_group && q.exclusive);
    assert_eq!(q.precise, Some(Precise::Max));
    let e = err("cycles:pppp");
    assert_eq!(e.column, 11);
    let q = ok("r01c0:u").qualifiers;
    assert!(q.privilege.unwrap().user);
    assert_eq!(ok("r01c0:u").event, EventName::Raw(0x1c0));
    let t = ok("sched:sched_switch:k");
    assert!(matches!(t.event, EventName::Tracepoint { .. }));
    assert!(t.qualifiers.privilege.unwrap().kernel);
}

#[test]
fn raw_events() {
    assert_eq!(ok("r1c0").event, EventName::Raw(0x1c0));
    assert_eq!(ok("rFFFF").event, EventName::Raw(0xffff));
    let e = err("r11112222333344445");
    assert!(e.message.contains("64 bits"), "{e}");
}

#[test]
fn pmu_terms() {
    let s = ok("cpu/event=0xc0,umask=0x1,cmask=1,edge/u");
    let EventName::Pmu { pmu, terms } = &s.event else {
        panic!("{s:?}")
    };
    assert_eq!(pmu, "cpu");
    assert_eq!(
        terms,
        &vec![
            Term {
                name: "event".into(),
                value: TermValue::Number(0xc0)
            },
            Term {
                name: "umask".into(),
                value: TermValue::Number(1)
            },
            Term {
                name: "cmask".into(),
                value: TermValue::Number(1)
            },
            Term {
                name: "edge".into(),
                value: TermValue::Flag
            },
        ]
    );
    assert!(s.qualifiers.privilege.unwrap().user);
    let s = ok("msr/tsc/");
    assert_eq!(
        s.event,
        EventName::Pmu {
            pmu: "msr".into(),
            terms: vec![Term {
                name: "tsc".into(),
                value: TermValue::Flag
            }]
        }
    );
    let s = ok("amd_df/name=foo,config1=5/,usr");
    let EventName::Pmu { terms, .. } = &s.event else {
        panic!()
    };
    assert_eq!(terms[0].value, TermValue::Str("foo".into()));
    assert!(s.qualifiers.privilege.unwrap().user);
    assert_eq!(err("cpu/event=0xc0").column, 15);
    assert_eq!(err("cpu//").column, 5);
    assert_eq!(err("cpu/event=,umask=1/").column, 11);
    assert_eq!(err("cpu/event=1,,umask=1/").column, 13);
    assert_eq!(err("cpu/event=1/x").column, 13);
}

#[test]
fn tsc_is_the_msr_pmu() {
    for s in ["tsc", "TSC-TSC", "tsc-tsc"] {
        let spec = ok(s);
        assert_eq!(
            spec.event,
            EventName::Pmu {
                pmu: "msr".into(),
                terms: vec![Term {
                    name: "tsc".into(),
                    value: TermValue::Flag
                }]
            },
            "{s}"
        );
    }
    assert_eq!(ok("tsc-tsc").class_prefix.as_deref(), Some("tsc"));
}

#[test]
fn class_prefixes() {
    let s = ok("k8-dc-misses");
    assert_eq!(s.class_prefix.as_deref(), Some("k8"));
    assert_eq!(
        s.event,
        cache(CacheLevel::L1D, CacheOp::Read, CacheResult::Miss)
    );
    let s = ok("iaf-instr-retired.any");
    assert_eq!(s.class_prefix.as_deref(), Some("iaf"));
    assert_eq!(s.event, EventName::Named("instr-retired-any".into()));
}

#[test]
fn soft_events_map_to_linux_or_say_why_not() {
    assert_eq!(
        ok("SOFT-PAGE_FAULT.ALL").event,
        EventName::Software(SoftwareEvent::PageFaults)
    );
    assert_eq!(
        ok("soft-page-fault-all").class_prefix.as_deref(),
        Some("soft")
    );
    assert_eq!(
        ok("SOFT-CLOCK.PROF").event,
        EventName::Software(SoftwareEvent::CpuClock)
    );
    let e = linux_err("SOFT-INTR.ALL");
    assert!(e.message.contains("no Linux equivalent"), "{e}");
    assert!(e.message.contains("irq:irq_handler_entry"), "{e}");
    let e = linux_err("SOFT-PAGE_FAULT.AL");
    assert!(
        e.alternatives.contains(&"SOFT-PAGE_FAULT.ALL".to_string()),
        "{e}"
    );
    // Every SOFT name parses (hwpmc counts them: they reach the backend);
    // Linux refuses those it has no software event for.
    for (name, linux) in SOFT_EVENTS {
        let spec = ok(&format!("SOFT-{name}"));
        let refused = super::soft_without_linux(&spec);
        assert_eq!(
            refused.is_none(),
            linux.is_some(),
            "SOFT-{name}: {refused:?}"
        );
    }
    // A mapped one is Linux's own event, never refused.
    assert!(super::soft_without_linux(&ok("SOFT-PAGE_FAULT.ALL")).is_none());
    assert!(super::soft_without_linux(&ok("page-faults")).is_none());
}

#[test]
fn tracepoints() {
    let s = ok("syscalls:sys_enter_write");
    assert_eq!(
        s.event,
        EventName::Tracepoint {
            subsystem: "syscalls".into(),
            event: "sys_enter_write".into()
        }
    );
    assert_eq!(
        ok("sched:u").event,
        EventName::Tracepoint {
            subsystem: "sched".into(),
            event: "u".into()
        }
    );
    assert_eq!(err("sched:").column, 7);
    assert_eq!(err(":x").column, 1);
}

#[test]
fn breakpoints() {
    assert_eq!(
        ok("mem:0x1000/8:w").event,
        EventName::Breakpoint {
            addr: 0x1000,
            len: Some(8),
            access: BreakpointAccess::Write
        }
    );
    assert_eq!(
        ok("mem:4096").event,
        EventName::Breakpoint {
            addr: 4096,
            len: None,
            access: BreakpointAccess::ReadWrite
        }
    );
    assert_eq!(
        ok("MEM:0x10:x,period=1").event,
        EventName::Breakpoint {
            addr: 0x10,
            len: None,
            access: BreakpointAccess::Execute
        }
    );
    let e = err("mem:0x1000:rx");
    assert_eq!(e.column, 12);
    assert_eq!(e.alternatives, vec!["r", "w", "rw", "x"]);
    assert_eq!(err("mem:").column, 5);
    assert_eq!(err("mem:0x10/z").column, 10);
}

#[test]
fn probes() {
    assert_eq!(
        ok("uprobe:/bin/true:main+4,period=1").event,
        EventName::Probe(ProbeSpec {
            kind: ProbeKind::Uprobe,
            path: "/bin/true".into(),
            symbol: Some("main".into()),
            offset: 4
        })
    );
    assert_eq!(
        ok("uretprobe:/lib/x.so:0x1234").event,
        EventName::Probe(ProbeSpec {
            kind: ProbeKind::Uretprobe,
            path: "/lib/x.so".into(),
            symbol: None,
            offset: 0x1234
        })
    );
    assert_eq!(
        ok("kretprobe:do_sys_open").event,
        EventName::Probe(ProbeSpec {
            kind: ProbeKind::Kretprobe,
            path: String::new(),
            symbol: Some("do_sys_open".into()),
            offset: 0
        })
    );
    assert!(err("uprobe:bin/true:main").message.contains("absolute"));
    assert!(err("uprobe:/bin/true").message.contains("uprobe:"));
    assert_eq!(err("kprobe:do sys").column, 10);
}

#[test]
fn libpfm_and_pmu_events_names_go_to_the_backend() {
    assert_eq!(
        ok("inst_retired.any").event,
        EventName::Named("inst_retired.any".into())
    );
    assert_eq!(
        ok("ex_ret_instr").event,
        EventName::Named("ex_ret_instr".into())
    );
    assert_eq!(
        ok("amd64_fam17h::retired_instructions:u").event,
        EventName::Named("amd64_fam17h::retired_instructions:u".into())
    );
}

#[test]
fn errors_carry_column_token_and_alternatives() {
    let e = err("instrutions,usr");
    assert_eq!((e.column, e.token.as_str()), (1, "instrutions"));
    assert_eq!(
        e.alternatives.first().map(String::as_str),
        Some("instructions")
    );
    let e = err("instructions,usr,bogus=3");
    assert_eq!((e.column, e.token.as_str()), (18, "bogus"));
    assert!(!e.alternatives.is_empty());
    let e = err("instructions,uss");
    assert_eq!(e.alternatives.first().map(String::as_str), Some("usr"));
    let e = err("instructions,cmask");
    assert_eq!(e.column, 14);
    let e = err("instructions,usr=1");
    assert_eq!(e.column, 18);
    assert_eq!(err("instructions,cmask=08").column, 20, "08 is not octal");
    assert_eq!(err("instructions,cmask=0x100000000").column, 20);
    assert_eq!(err("instructions,precise=4").column, 22);
    assert_eq!(err("instructions,,usr").column, 14);
    assert_eq!(err("cpu-clock,period=0").column, 18);
    assert!(
        err("cpu-clock,period=10,freq=10")
            .message
            .contains("exclude")
    );
    assert!(err("").message.contains("empty"));
    assert!(err("   ").message.contains("empty"));
    let e = err("task-clock\0");
    assert_eq!(e.column, 11);
    assert!(e.message.contains("NUL"));
    assert_eq!(err("cycles;x").column, 7);
    assert_eq!(err("cyclés").column, 5);
    let text = err("instrutions").to_string();
    assert!(
        text.contains("column 1") && text.contains("instructions"),
        "{text}"
    );
}

proptest! {
    #[test]
    fn random_input_never_panics(s in "\\PC{0,40}") {
        let _ = parse(&s);
    }

    #[test]
    fn random_spec_shaped_input_never_panics(
        s in "[a-zA-Z0-9:/,=._ +-]{0,40}"
    ) {
        if let Err(e) = parse(&s) {
            prop_assert!(e.column >= 1 && e.column <= s.chars().count() + 1);
        }
    }

    #[test]
    fn freebsd_spelling_variants_agree(
        idx in 0usize..9,
        seps in proptest::collection::vec(prop_oneof![Just('-'), Just('_'), Just('.'), Just(' ')], 4),
        upper in any::<bool>(),
    ) {
        let names = [
            "unhalted-cycles", "branch-mispredicts", "dc-misses", "ic-misses",
            "llc-misses", "llc-reference", "branch-instruction-retired",
            "unhalted-core-cycles", "branch-misses-retired",
        ];
        let base = names[idx];
        let mut k = 0;
        let variant: String = base.chars().map(|c| if c == '-' {
            let s = seps[k % seps.len()];
            k += 1;
            s
        } else if upper { c.to_ascii_uppercase() } else { c }).collect();
        // `llc-misses` in perf's own spelling is the cache event: compare
        // FreeBSD spellings (with an `_`) only.
        prop_assume!(!base.starts_with("llc") || variant.contains('_'));
        let want = parse(&base.replace('-', "_")).unwrap().event;
        prop_assert_eq!(parse(&variant).unwrap().event, want);
    }

    #[test]
    fn numbers_round_trip(n in any::<u32>()) {
        let q = parse(&format!("r1,cmask={n},umask={n:#x},threshold=0{n:o}")).unwrap().qualifiers;
        prop_assert_eq!((q.cmask, q.umask, q.threshold), (Some(n), Some(n), Some(n)));
    }
}

// ---------------------------------------------------------------------------
// Tests added for the surviving mutants of the `src/spec` run (issue 10 §4).
// Expected values come from the syntax's own documentation, cited per test.
// ---------------------------------------------------------------------------

/// The advice for each FreeBSD `SOFT-*` event Linux has no software event
/// for. The events are pmc.soft(3)'s (sys/dev/hwpmc/pmc_events.h
/// `__PMC_EV_SOFT`: CLOCK.HARD/STAT/PROF from kern_clock.c, INTR.* from
/// kern_intr.c, LOCK.FAILED from kern_lock.c, PAGE_FAULT.* from
/// vm_fault.c). The replacement each one is pointed at is the Linux event
/// that counts the same thing: interrupts are the `irq:irq_handler_entry`
/// tracepoint, the statclock/hardclock ticks are sampled as `cpu-clock`
/// (perf-list(1)'s software timer), `page-faults` counts every fault
/// without the read/write split, and a failed lock acquisition is the
/// `lock:contention_begin` tracepoint.
#[test]
fn soft_events_without_linux_say_what_to_use_instead() {
    for (name, advice) in [
        ("SOFT-INTR.ALL", "irq:irq_handler_entry"),
        ("SOFT-INTR.FILTER", "irq:irq_handler_entry"),
        ("SOFT-INTR.ITHREAD", "irq:irq_handler_entry"),
        ("SOFT-INTR.SCHEDULE", "irq:irq_handler_entry"),
        ("SOFT-INTR.STRAY", "irq:irq_handler_entry"),
        ("SOFT-INTR.WAITING", "irq:irq_handler_entry"),
        ("SOFT-CLOCK.HARD", "cpu-clock"),
        ("SOFT-CLOCK.STAT", "cpu-clock"),
        ("SOFT-PAGE_FAULT.READ", "page-faults"),
        ("SOFT-PAGE_FAULT.WRITE", "page-faults"),
        ("SOFT-LOCK.FAILED", "lock:contention_begin"),
    ] {
        let e = linux_err(name);
        assert_eq!((e.column, e.token.as_str()), (1, name));
        assert!(e.message.contains("no Linux equivalent"), "{name}: {e}");
        assert!(e.message.contains(advice), "{name}: {e}");
        // Exactly one piece of advice per event.
        for other in [
            "irq:irq_handler_entry",
            "cpu-clock",
            "page-faults",
            "lock:contention_begin",
        ] {
            assert_eq!(e.message.contains(other), other == advice, "{name}: {e}");
        }
    }
}

/// perf's legacy cache names may stop after the cache: tools/perf/util/
/// parse-events.l accepts `{lc_type}` alone, and
/// `parse_events__decode_legacy_cache` then defaults the operation to
/// `PERF_COUNT_HW_CACHE_OP_READ` and the result to
/// `PERF_COUNT_HW_CACHE_RESULT_ACCESS`.
#[test]
fn a_bare_perf_cache_name_is_its_read_accesses() {
    for (s, level) in [
        ("LLC", CacheLevel::LL),
        ("L1-dcache", CacheLevel::L1D),
        ("L1-icache", CacheLevel::L1I),
        ("dTLB", CacheLevel::DTLB),
        ("iTLB", CacheLevel::ITLB),
        ("node", CacheLevel::NODE),
    ] {
        assert_eq!(
            ok(s).event,
            cache(level, CacheOp::Read, CacheResult::Access),
            "{s}"
        );
    }
}

/// FreeBSD spells the Intel architectural aliases in upper case with `_`
/// (lib/libpmc/libpmc_pmu_util.c `pmu_intel_alias_table`:
/// `UNHALTED_CORE_CYCLES`, `LLC_MISSES`, `LLC_REFERENCE`,
/// `BRANCH_INSTRUCTION_RETIRED`, `BRANCH_MISSES_RETIRED`) and the generic
/// ones in lower case with `-` (the same table and libpmc.c's `EV_ALIAS`
/// lists: `branch-mispredicts`, `interrupts`, `ic-misses`, `dc-misses`,
/// `unhalted-cycles`); the list of names shows each as libpmc spells it.
#[test]
fn generic_names_spell_freebsd_aliases_as_libpmc_does() {
    let names = generic_names();
    let find = |s: &str| names.iter().find(|(n, _)| n == s).map(|(_, e)| e.clone());
    use HardwareEvent::*;
    for (s, e) in [
        ("UNHALTED_CORE_CYCLES", hw(Cycles)),
        ("LLC_MISSES", hw(CacheMisses)),
        ("LLC_REFERENCE", hw(CacheReferences)),
        ("BRANCH_INSTRUCTION_RETIRED", hw(Branches)),
        ("BRANCH_MISSES_RETIRED", hw(BranchMisses)),
        ("branch-mispredicts", hw(BranchMisses)),
        ("interrupts", hw(Interrupts)),
        ("unhalted-cycles", hw(Cycles)),
        (
            "ic-misses",
            cache(CacheLevel::L1I, CacheOp::Read, CacheResult::Miss),
        ),
        (
            "dc-misses",
            cache(CacheLevel::L1D, CacheOp::Read, CacheResult::Miss),
        ),
    ] {
        assert_eq!(find(s), Some(e), "{s} missing or wrong");
    }
    for lower in [
        "unhalted-core-cycles",
        "llc-misses",
        "branch-misses-retired",
    ] {
        assert_eq!(find(lower), None, "{lower} is not libpmc's spelling");
    }
}

/// perf's event modifiers are one or more letters (parse-events.l:
/// `modifier_event [ukhpPGHSDIWeb]+`): a trailing `:` with none is an error,
/// not an event without modifiers.
#[test]
fn a_colon_needs_at_least_one_modifier() {
    let e = err("instructions:");
    assert!(e.message.contains("tracepoint"), "{e}");
    let e = err("r1c0:");
    assert!(e.message.contains("tracepoint"), "{e}");
}

/// A word after `:` that is no modifier list (parse-events.l's
/// `modifier_event [ukhpPGHSDIWeb]+`) is not read as modifiers: `cycles:foo`
/// is the tracepoint form `subsys:event` (the first form that matches,
/// module doc), for the backend to look up in tracefs.
#[test]
fn a_word_that_is_no_modifier_list_is_a_tracepoint_event() {
    assert_eq!(
        ok("cycles:foo").event,
        EventName::Tracepoint {
            subsystem: "cycles".into(),
            event: "foo".into()
        }
    );
    assert_eq!(
        ok("r1c0:xyz").event,
        EventName::Tracepoint {
            subsystem: "r1c0".into(),
            event: "xyz".into()
        }
    );
}

/// Tracepoints are tracefs directories `events/SUBSYSTEM/EVENT`; neither
/// name holds a space (tracefs event names are C identifiers, and
/// parse-events.l's `name` has no space either).
#[test]
fn tracepoint_names_hold_no_space() {
    let e = err("sched:sched switch");
    assert_eq!((e.column, e.token.as_str()), (7, "sched switch"));
    let e = err("sched switch:sched_switch");
    assert_eq!((e.column, e.token.as_str()), (1, "sched switch"));
}

/// Event specifiers are printable ASCII everywhere (module doc of
/// `parse`: the error names the column of the first offending
/// character), also inside a tracepoint filter, a PMU term value or a
/// probe path, which are otherwise taken verbatim.
#[test]
fn control_and_non_ascii_characters_are_rejected_anywhere() {
    let e = err("syscalls:sys_enter_write,filter=comm==\"café\"");
    assert_eq!((e.column, e.token.as_str()), (43, "é"));
    assert!(e.message.contains("printable ASCII"), "{e}");
    let e = err("cpu/name=\u{1}x/");
    assert_eq!(e.column, 10);
    assert!(e.message.contains("printable ASCII"), "{e}");
    let e = err("uprobe:/bin/tr\tue:main");
    assert_eq!(e.column, 15);
    assert!(e.message.contains("printable ASCII"), "{e}");
}

/// perf_event_open(2), `precise_ip`: 0 arbitrary skid, 1 constant skid,
/// 2 requested zero skid, 3 must have zero skid. All four levels parse;
/// 4 does not.
#[test]
fn precise_levels_zero_to_three() {
    for n in 0..=3u8 {
        assert_eq!(
            ok(&format!("cycles,precise={n}")).qualifiers.precise,
            Some(Precise::Level(n)),
            "precise={n}"
        );
    }
    assert_eq!(err("cycles,precise=4").column, 16);
}

/// Numbers are read as `strtoul(s, NULL, 0)` reads them (libpmc's
/// qualifier parsing, e.g. `k8_allocate_pmc`'s `count=`/`mask=`): a lone
/// `0` is zero (C11 7.22.1.4: the `0` octal prefix with no digit after it
/// is the number 0).
#[test]
fn a_lone_zero_is_zero() {
    let q = ok("cycles,cmask=0,umask=0,threshold=00").qualifiers;
    assert_eq!((q.cmask, q.umask, q.threshold), (Some(0), Some(0), Some(0)));
    assert_eq!(
        ok("mem:0").event,
        EventName::Breakpoint {
            addr: 0,
            len: None,
            access: BreakpointAccess::ReadWrite
        }
    );
}

/// perf-list(1): `mem:<addr>[/len][:access]`, access `r`, `w`, `x` or a
/// combination (parse-events.l `modifier_bp [rwx]{1,3}`); `rw` and `wr` are
/// the same read-write breakpoint (`HW_BREAKPOINT_R | HW_BREAKPOINT_W`,
/// linux/hw_breakpoint.h).
#[test]
fn breakpoint_access_letters() {
    for (a, access) in [
        ("r", BreakpointAccess::Read),
        ("R", BreakpointAccess::Read),
        ("w", BreakpointAccess::Write),
        ("rw", BreakpointAccess::ReadWrite),
        ("wr", BreakpointAccess::ReadWrite),
        ("x", BreakpointAccess::Execute),
    ] {
        assert_eq!(
            ok(&format!("mem:0x1000/4:{a}")).event,
            EventName::Breakpoint {
                addr: 0x1000,
                len: Some(4),
                access
            },
            "{a}"
        );
    }
}

/// A probe offset after `+` is a number as the kernel reads it
/// (Documentation/trace/kprobetrace.rst and uprobetracer.rst: `SYM[+offs]`,
/// parsed with `kstrtoul(…, 0)`), so hex and octal work as in perf's
/// `-e probe:…` and `perf probe FUNC+OFFS`.
#[test]
fn probe_offsets_after_a_symbol_are_hex_octal_or_decimal() {
    for (s, offset) in [
        ("kprobe:do_sys_open+0x10", 0x10),
        ("kprobe:do_sys_open+010", 8),
        ("kprobe:do_sys_open+16", 16),
        ("uprobe:/bin/true:main+0x1f", 0x1f),
    ] {
        let EventName::Probe(p) = ok(s).event else {
            panic!("{s}")
        };
        assert_eq!(p.offset, offset, "{s}");
    }
    assert_eq!(err("kprobe:do_sys_open+0xg").column, 20);
}

/// PMU names are perf's `name` token (tools/perf/util/parse-events.l:
/// `[a-zA-Z_*?\[\]][a-zA-Z0-9_*?.\[\]!\-]*`, less the glob characters):
/// letters, digits, `_`, `-` and `.` (a discrete i915 GPU's PMU is
/// `i915_0000_03_00.0`, drivers/gpu/drm/i915/i915_pmu.c); anything else,
/// or no name at all, is an error at the PMU name.
#[test]
fn pmu_names_are_letters_digits_underscore_dash_and_dot() {
    for pmu in [
        "cpu",
        "cpu_core",
        "i915_0000_03_00.0",
        "arm-spe",
        "a.b-c_d9",
    ] {
        let s = ok(&format!("{pmu}/config=1/"));
        let EventName::Pmu { pmu: got, .. } = &s.event else {
            panic!("{pmu}: {s:?}")
        };
        assert_eq!(got, pmu);
    }
    for bad in ["/config=1/", "c@u/config=1/", "cp u/config=1/"] {
        let e = err(bad);
        assert_eq!(e.column, 1, "{bad}: {e}");
        assert!(e.message.contains("PMU name"), "{bad}: {e}");
    }
}

/// PMU terms are `name[=value]` (perf-list(1), "PMU terms"; the term name
/// is parse-events.l's `name`): a term without a name is an error at the
/// term.
#[test]
fn pmu_terms_need_a_name() {
    let e = err("cpu/=1/");
    assert_eq!(e.column, 5);
    assert!(e.message.contains("term name"), "{e}");
    let e = err("cpu/event=1,um@sk=2/");
    assert_eq!((e.column, e.token.as_str()), (13, "um@sk"));
}

/// A `/` after the first `,` belongs to the qualifiers (`filter=` takes
/// the rest of the specifier, module doc), not to a `pmu/…/` form: the PMU
/// form is a PMU name followed by `/` (perf-list(1)).
#[test]
fn a_slash_in_the_qualifiers_is_no_pmu_form() {
    let s = ok("cpu-clock,filter=a/b");
    assert_eq!(s.event, EventName::Software(SoftwareEvent::CpuClock));
    assert_eq!(s.qualifiers.filter.as_deref(), Some("a/b"));
    // A `/` after a `:` is in a name, which has no `/`.
    let e = err("sched:sched/switch");
    assert_eq!((e.column, e.token.as_str()), (12, "/"));
}

/// perf's raw events are `r` followed by at least one hex digit
/// (parse-events.l: `r{num_raw_hex}`, `num_raw_hex [a-fA-F0-9]+`); a lone
/// `r` is no raw event but a name for the backend.
#[test]
fn a_lone_r_is_no_raw_event() {
    assert_eq!(ok("r").event, EventName::Named("r".into()));
    assert_eq!(ok("R").event, EventName::Named("R".into()));
}

/// Names the kernel's PMUs export in sysfs pass through to the backend,
/// even short ones a couple of edits away from a generic name: the msr
/// PMU's `smi` (arch/x86/events/msr.c `PERF_MSR_SMI`, two edits from `cs`)
/// and `aperf`/`mperf`. Only a near miss of a long name is taken for a
/// typo.
#[test]
fn short_sysfs_names_are_not_typos() {
    for s in ["smi", "aperf", "mperf", "pperf", "ptsc"] {
        assert_eq!(ok(s).event, EventName::Named(s.into()), "{s}");
    }
}

/// FreeBSD's TSC class has one event, the time-stamp counter (pmc.tsc(3)):
/// `TSC-TSC` in libpmc's old tables (pmc_events.h `__PMC_EV(TSC, TSC, tsc)`),
/// `TSC-cycles` in today's (libpmc.c `tsc_event_table`, the alias "cycles"
/// for `PMC_EV_TSC_TSC`); libpmc.c `tsc_allocate_pmc` returns -1 for any
/// other event. Both spellings are the msr PMU's `tsc`, any other `TSC-`
/// name is rejected.
#[test]
fn the_tsc_class_has_one_event() {
    let msr_tsc = EventName::Pmu {
        pmu: "msr".into(),
        terms: vec![Term {
            name: "tsc".into(),
            value: TermValue::Flag,
        }],
    };
    for s in ["TSC-cycles", "TSC-CYCLES", "tsc.cycles", "TSC-TSC"] {
        let spec = ok(s);
        assert_eq!(spec.event, msr_tsc, "{s}");
        assert_eq!(spec.class_prefix.as_deref(), Some("tsc"), "{s}");
    }
    let e = err("TSC-INSTRUCTIONS");
    assert_eq!((e.column, e.token.as_str()), (1, "TSC-INSTRUCTIONS"));
    assert_eq!(e.alternatives, vec!["TSC-cycles", "TSC-TSC"]);
    assert!(err("tsc-ref-cycles").message.contains("TSC"));
}

/// An unknown name within a quarter of its length in edits of a generic
/// name is taken for a typo of it and rejected with that name offered (the
/// module doc of `parse`); farther names are left to the backend.
#[test]
fn a_near_miss_of_a_generic_name_is_a_typo() {
    for (s, near) in [
        ("branchez", "branches"),
        ("ref-cycle", "ref-cycles"),
        ("task-clk", "task-clock"),
        ("dumy", "dummy"),
        ("cpu-clocks", "cpu-clock"),
    ] {
        let e = err(s);
        assert_eq!(e.message, "unknown event", "{s}");
        assert_eq!(
            e.alternatives.first().map(String::as_str),
            Some(near),
            "{s}"
        );
    }
    // Two edits in four characters is more than a quarter.
    assert_eq!(ok("cycl").event, EventName::Named("cycl".into()));
}

/// Real sysfs event names next to generic ones are not typos: ARM's PMUv3
/// exports `cpu_cycles` and `bus_cycles` (drivers/perf/arm_pmuv3.c
/// `ARMV8_EVENT_ATTR`), which perf's separator-exact names (perf-list(1):
/// `cpu-cycles`, `bus-cycles`) do not match, and Intel's core PMU exports
/// the TSX events `cycles-t` and `cycles-ct` (arch/x86/events/intel/core.c
/// `EVENT_ATTR_STR`). They go to the backend.
#[test]
fn sysfs_names_next_to_generic_ones_go_to_the_backend() {
    for s in ["cpu_cycles", "bus_cycles", "cycles-t", "cycles-ct"] {
        assert_eq!(ok(s).event, EventName::Named(s.into()), "{s}");
    }
}
