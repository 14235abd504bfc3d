use std::collections::HashMap;

use super::*;

fn ev(record: LogRecord) -> LogEvent {
    LogEvent::from(record)
}

fn sample(pmcid: u32, pcs: Vec<u64>) -> LogEvent {
    ev(LogRecord::Callchain {
        pid: 7,
        tid: 7,
        pmcid,
        cpu: 0,
        userspace: true,
        pcs,
    })
}

fn alloc(pmcid: u32, name: &str) -> LogEvent {
    ev(LogRecord::PmcAllocateDyn {
        pmcid,
        event: 0,
        flags: 0,
        name: name.into(),
    })
}

#[test]
fn delta_and_accumulated_modes_and_keys() {
    let mut v = TopView::new(0.0, false, false);
    let mut log = vec![
        alloc(1, "cpu-clock"),
        alloc(2, "cpu-clock"),
        alloc(3, "page-faults"),
    ];
    log.extend((0..3).map(|_| sample(1, vec![0x10, 0x21])));
    log.push(sample(2, vec![0x30]));
    log.push(sample(3, vec![0x40]));
    v.update(&log);
    let screen = v.render(100, 20);
    // Merged: both cpu-clock PMCs, 4 of the 5 samples; unmapped pcs are
    // shown as addresses and counted unresolved.
    assert_eq!(
        screen[0],
        "PMC: [cpu-clock] Samples: 4 (80.0%) , 4 unresolved"
    );
    assert!(screen[2].starts_with("%SAMP IMAGE"), "{screen:?}");
    assert!(screen[3].starts_with(" 75.0 ?          0x10"), "{screen:?}");
    assert!(
        screen[3].ends_with(" 0x20"),
        "one caller, no share: {screen:?}"
    );
    // Delta mode: nothing new, nothing shown; accumulated: all of it.
    v.update(&[]);
    assert_eq!(
        v.render(100, 20)[0],
        "PMC: [cpu-clock] Samples: 0 (0.0%) , 0 unresolved"
    );
    assert_eq!(v.key('c'), KeyOutcome::Continue);
    v.key('a');
    assert!(v.render(100, 20)[1].contains("accumulation"));
    assert!(v.render(100, 20)[0].contains("Samples: 4 "));
    v.key('p');
    assert!(v.render(100, 20)[0].starts_with("PMC: [page-faults] Samples: 1 (20.0%)"));
    v.key('m');
    v.key('c');
    v.key('d');
    assert!(v.render(100, 20)[1].contains("delta"));
    assert_eq!(v.key(' '), KeyOutcome::Continue);
    assert!(v.paused());
    assert_eq!(v.key('q'), KeyOutcome::Quit);
}

#[test]
fn threshold_hides_rows_and_n_shows_the_calltree() {
    let mut v = TopView::new(30.0, true, false);
    let mut log = vec![alloc(1, "cpu-clock")];
    log.extend((0..3).map(|_| sample(1, vec![0x10, 0x21])));
    log.push(sample(1, vec![0x30, 0x21]));
    v.update(&log);
    let s = v.render(100, 20);
    assert_eq!(s.len(), 4, "the 25% row is under the threshold: {s:?}");
    assert_eq!(v.key('n'), KeyOutcome::Continue);
    assert_eq!(
        v.render(100, 20)[1],
        "Key: n => switching to plugin calltree"
    );
    // The next view starts from nothing, as pmcstat resets its statistics
    // (pl_shutdown, pmcstat_stats_reset, pl_init).
    assert_eq!(v.render(100, 20)[2..], ["%SAMP CALLTREE"]);
    assert!(v.render(100, 20)[0].contains("Samples: 0 "));
    v.update(&log[1..]);
    // pmcpl_ct_topdisplay: "%5.5s %s\n" of "%SAMP" "CALLTREE"; then per
    // path pmcpl_ct_node_printtop's "%5.5s " of the line's "%.1f" and per
    // node "%s%s%s " (name, "@image" on the first node, "(%.1f%%)" above
    // the threshold; "." under it with skiplink). The 25% arc to 0x30 is
    // under 30%: 0x20's only path goes to 0x10.
    assert_eq!(
        v.render(100, 20)[2..],
        ["%SAMP CALLTREE", " 75.0 . 0x10(75.0%) "]
    );
    assert_eq!(v.key('f'), KeyOutcome::Continue);
    assert_eq!(v.render(100, 20)[1], "Key: f => skip empty link off");
    assert_eq!(v.render(100, 20)[3], " 75.0 0x20@? 0x10(75.0%) ");
    assert_eq!(v.render(10, 2).len(), 2);
    assert!(v.render(10, 2).iter().all(|l| l.chars().count() <= 10));
}

/// pmcpl_ct_node_dumptop / printtop with the default threshold: every arc
/// counts, paths by the sum of their nodes' own samples.
#[test]
fn calltree_paths_are_pmcpl_calltrees() {
    let mut v = TopView::new(0.5, false, false);
    let mut log = vec![alloc(1, "cpu-clock")];
    log.extend((0..3).map(|_| sample(1, vec![0x10, 0x21])));
    log.push(sample(1, vec![0x30, 0x21]));
    v.key('n');
    v.update(&log);
    assert_eq!(
        v.render(100, 20)[2..],
        [
            "%SAMP CALLTREE",
            " 75.0 0x20@? 0x10(75.0%) ",
            " 25.0 0x20@? 0x30(25.0%) "
        ]
    );
    // `pmcstat_displaywidth` (columns - 1) reached: the node goes on a new
    // line indented by 6, and the screen loses a path.
    let s = v.render(19, 20);
    assert_eq!(s[3..5], [" 75.0 0x20@? ", "      0x10(75.0%) "], "{s:?}");
}

/// pmcpl_callgraph.c `pmcstat_cgnode_topprint`, cited format by format.
#[test]
fn callgraph_rows_are_pmcstat_cgnode_topprints() {
    let long = "a_function_name_longer_than_twenty_nine_characters";
    let of = |n: u64| n as f64;
    let callers: HashMap<String, u64> = [
        ("caller_one".to_string(), 50),
        ("x".repeat(40), 25),
        ("low".to_string(), 0),
    ]
    .into();
    // "%5.5s" of "%.1f"; " %-10.10s %-20.20s" of the image and the name
    // (from char ns[30]); callers down to the threshold, " %s" and
    // ":%.1f" as there are several; `pmcstat_displaywidth - 40` = 39
    // holds "caller_one:50.0" (10 + 5 + 1), not the 40-character name
    // (40 + 5 + 1): " ..." ends the line.
    assert_eq!(
        cg_topline("libverylongimage.so", long, 75.0, &callers, 79, &of, 0.5),
        format!(" 75.0 libverylon {} caller_one:50.0 ...", &long[..20])
    );
    // Wide enough: every caller above the threshold, each cut at 29.
    assert_eq!(
        cg_topline("img", "f", 100.0, &callers, 199, &of, 0.5),
        format!(
            "100.0 img        f                    caller_one:50.0 {}:25.0",
            "x".repeat(29)
        )
    );
    // One caller: its name alone. No caller above the threshold: nothing.
    let one: HashMap<String, u64> = [("main".to_string(), 9)].into();
    assert_eq!(
        cg_topline("img", "f", 9.0, &one, 79, &of, 0.5),
        "  9.0 img        f                    main"
    );
    assert_eq!(
        cg_topline("img", "f", 9.0, &one, 79, &of, 10.0),
        "  9.0 img        f                   "
    );
}

/// pmcstat_refresh_top's header and pmcstat_keypress_log's status lines.
#[test]
fn header_and_keys_are_pmcstat_logs() {
    let mut v = TopView::new(0.5, false, false);
    let samples = vec![sample(1, vec![0x10]), sample(2, vec![0x10])];
    let mut log = vec![alloc(1, "cpu-clock"), alloc(2, "cpu-clock")];
    log.extend(samples.iter().cloned());
    v.update(&log);
    // "PMC: %s Samples: %u (%.1f%%) , %u unresolved", "[%s]" when merged.
    assert_eq!(
        v.render(80, 24)[0],
        "PMC: [cpu-clock] Samples: 2 (100.0%) , 2 unresolved"
    );
    assert_eq!(
        v.render(80, 24)[2],
        "%SAMP IMAGE      FUNCTION             CALLERS"
    );
    v.key('c');
    v.key('a');
    assert_eq!(
        v.render(80, 24)[1],
        "Key: c => enter mode 'd' or 'a' => switching to accumulation mode"
    );
    v.key('m');
    assert_eq!(v.render(80, 24)[1], "Key: m => merge PMC off");
    v.update(&samples);
    // Not merged: "%s.%d", the name and the PMC's index.
    assert!(
        v.render(80, 24)[0].starts_with("PMC: cpu-clock.0 Samples: 1 (50.0%) ,"),
        "{:?}",
        v.render(80, 24)
    );
    v.key('p');
    assert_eq!(
        v.render(80, 24)[1],
        "Key: p => switching to PMC cpu-clock.1"
    );
    assert!(v.render(80, 24)[0].starts_with("PMC: cpu-clock.1 "));
    v.key(' ');
    assert_eq!(
        v.render(80, 24)[1],
        "Key:   => pause => press space again to continue"
    );
    v.key(' ');
    assert_eq!(v.render(80, 24)[1], "Key:   => ");
    v.key('x');
    assert_eq!(v.render(80, 24)[1], "Key: x => ");
    assert_eq!(v.key('q'), KeyOutcome::Quit);
}

#[test]
fn a_slow_refresh_skips_the_refreshes_it_overran() {
    use std::time::{Duration, Instant};
    let t0 = Instant::now();
    let ms = Duration::from_millis;
    // On time: the next grid point.
    assert_eq!(next_refresh(t0, ms(200), t0 + ms(10)), t0 + ms(200));
    // 2.7 s late: the next grid point after now, not 13 at once.
    assert_eq!(next_refresh(t0, ms(200), t0 + ms(2700)), t0 + ms(2800));
    // Exactly on a grid point: the one after it.
    assert_eq!(next_refresh(t0, ms(200), t0 + ms(400)), t0 + ms(600));
    assert!(next_refresh(t0, Duration::ZERO, t0 + ms(5)) == t0);
}

/// An unnamed pc is its address in its image (pmcpl_callgraph.c keys a
/// node by "an offset in the image"): two processes running one PIE at
/// other addresses share a row, however many processes there are.
#[test]
fn an_unnamed_pc_is_its_image_address_in_every_process() {
    // Debian's dash (essential) is stripped: its own functions have no
    // symbol.
    let dash = "/usr/bin/dash";
    assert!(std::path::Path::new(dash).exists(), "needs Debian's {dash}");
    let mut v = TopView::new(0.0, false, false);
    let mut log = vec![alloc(1, "cpu-clock")];
    for (pid, start) in [(7u32, 0x5555_5555_4000u64), (8, 0x5600_0000_0000)] {
        log.push(ev(LogRecord::MapIn {
            pid,
            start,
            path: dash.into(),
        }));
        log.push(ev(LogRecord::Callchain {
            pid,
            tid: pid,
            pmcid: 1,
            cpu: 0,
            userspace: true,
            pcs: vec![start + 0x2345],
        }));
    }
    v.update(&log);
    let screen = v.render(120, 20);
    let rows: Vec<&String> = screen.iter().filter(|l| l.contains(" dash ")).collect();
    assert_eq!(rows.len(), 1, "{screen:?}");
    assert!(rows[0].starts_with("100.0 dash"), "{screen:?}");
    assert!(
        !rows[0].contains("0x5555") && !rows[0].contains("0x5600"),
        "{screen:?}"
    );
}
