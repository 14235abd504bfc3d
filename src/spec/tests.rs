use proptest::prelude::*;

use super::*;

fn ok(s: &str) -> EventSpec {
    parse(s).unwrap_or_else(|e| panic!("{s:?} should parse: {e}"))
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
    let e = err("SOFT-INTR.ALL");
    assert!(e.message.contains("no Linux equivalent"), "{e}");
    assert!(e.message.contains("irq:irq_handler_entry"), "{e}");
    let e = err("SOFT-PAGE_FAULT.AL");
    assert!(
        e.alternatives.contains(&"SOFT-PAGE_FAULT.ALL".to_string()),
        "{e}"
    );
    for (name, linux) in SOFT_EVENTS {
        let r = parse(&format!("SOFT-{name}"));
        assert_eq!(r.is_ok(), linux.is_some(), "SOFT-{name}: {r:?}");
    }
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
