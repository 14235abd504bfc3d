use super::*;

fn specs(argv: &[&str]) -> Vec<EventSpec> {
    let matches = crate::cli::pmcstat()
        .try_get_matches_from(std::iter::once("pmcstat").chain(argv.iter().copied()))
        .unwrap();
    ordered_specs(&matches).unwrap()
}

#[test]
fn toggles_apply_to_the_specs_after_them() {
    // pmcstat.c's getopt loop: `-d`, `-E`, `-W`, `-C`, `-N`, `-U` flip a
    // variable copied into each pmcstat_ev parsed after them.
    let s = specs(&[
        "-p", "a", "-d", "-C", "-p", "b", "-E", "-d", "-p", "c", "-W", "-C", "-C", "-N", "-U",
        "-P", "d", "--", "true",
    ]);
    let row = |e: &EventSpec| {
        (
            e.spec.clone(),
            e.mode,
            e.descendants,
            e.cumulative,
            e.log_exit,
            e.log_csw,
            e.callchain,
            e.user_callchain,
        )
    };
    const TC: pmc::Mode = pmc::Mode::TC;
    const TS: pmc::Mode = pmc::Mode::TS;
    assert_eq!(
        s.iter().map(row).collect::<Vec<_>>(),
        vec![
            ("a".into(), TC, false, false, false, false, true, false),
            ("b".into(), TC, true, true, false, false, true, false),
            ("c".into(), TC, false, true, true, false, true, false),
            ("d".into(), TS, false, true, true, true, false, true),
        ]
    );
}

#[test]
fn clustered_toggles_count_each_letter() {
    // `-dC` is `-d -C`; `-dd` toggles twice.
    let s = specs(&["-dC", "-p", "a", "-dd", "-p", "b", "--", "true"]);
    assert!(s[0].descendants && s[0].cumulative);
    assert!(s[1].descendants && s[1].cumulative);
    let s = specs(&["-dd", "-p", "a", "--", "true"]);
    assert!(!s[0].descendants);
}

#[test]
fn c_and_n_set_the_cpus_and_count_of_later_specs() {
    let s = specs(&[
        "-S", "x", "-c", "0", "-s", "y", "-n", "5000", "-c", "0,0", "-S", "z", "-P", "w", "--",
        "true",
    ]);
    // Before any -c: every CPU (pmcstat.c's root set).
    assert_eq!(s[0].cpus, pmc::global::online_cpus());
    // Before any -n: no count, so the event's default applies.
    assert_eq!(s[0].reload, None);
    assert_eq!((s[1].spec.as_str(), s[1].cpus.as_slice()), ("y", &[0][..]));
    assert_eq!(s[1].reload, None);
    assert_eq!((s[2].cpus.as_slice(), s[2].reload), (&[0][..], Some(5000)));
    // Process modes have no CPUs; the count carries on.
    assert_eq!((s[3].cpus.len(), s[3].reload), (0, Some(5000)));
}

/// Without -n a clock samples at perf record's 4 kHz (250 µs of CPU time),
/// a counted event every 65536 events, FreeBSD's pmcstat.h default.
#[test]
fn the_default_reload_is_by_the_events_unit() {
    assert_eq!(default_reload(true), 250_000);
    assert_eq!(default_reload(false), 65_536);
    assert_eq!(DEFAULT_SAMPLE_COUNT, 65_536);
}

/// perf record's `--call-graph` spelling: `fp`, `dwarf`, `dwarf,SIZE`
/// with the kernel's size rules; anything else is refused with what
/// to give.
#[test]
fn call_graph_modes_are_perfs() {
    assert_eq!(call_graph("fp"), Ok(CallGraph::FramePointers));
    assert_eq!(call_graph("dwarf"), Ok(CallGraph::Dwarf(8192)));
    assert_eq!(call_graph("dwarf,4096"), Ok(CallGraph::Dwarf(4096)));
    assert_eq!(call_graph("dwarf,65528"), Ok(CallGraph::Dwarf(65528)));
    for bad in ["dwarf,0", "dwarf,12", "dwarf,65536", "dwarf,x", "dwarf,"] {
        let e = call_graph(bad).expect_err(bad);
        assert!(e.contains("multiple of 8"), "{bad}: {e}");
    }
    for bad in ["lbr", "fp,8", "", "DWARF"] {
        let e = call_graph(bad).expect_err(bad);
        assert!(e.contains("`fp` or `dwarf[,SIZE]`"), "{bad}: {e}");
    }
}
