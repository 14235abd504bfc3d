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
    let callers: FastMap<Rc<str>, u64> = [
        ("caller_one".into(), 50),
        ("x".repeat(40).into(), 25),
        ("low".into(), 0),
    ]
    .into_iter()
    .collect();
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
    let one: FastMap<Rc<str>, u64> = [("main".into(), 9)].into_iter().collect();
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

/// One short-lived process as a system-wide log shows it: forked from
/// `parent`, exec'd, its own objects mapped in, sampled in them, exited.
fn lifetime(parent: u32, pid: u32) -> Vec<LogEvent> {
    let own = format!("/nonexistent/pmc-top-churn/{pid}/a.out");
    let lib = format!("/nonexistent/pmc-top-churn/{pid}/libown.so");
    let mut log = vec![
        ev(LogRecord::ProcFork {
            oldpid: parent,
            newpid: pid,
        }),
        ev(LogRecord::ProcExec {
            pid,
            pmcid: 1,
            entry: 0x1000,
            dynaddr: 0,
            path: own.clone(),
        }),
    ];
    for (start, path) in [
        (0x40_0000u64, own),
        (0x7f00_0000_0000, lib),
        (
            0x7f10_0000_0000,
            "/nonexistent/pmc-top-churn/libc.so.6".into(),
        ),
    ] {
        log.push(ev(LogRecord::MapIn { pid, start, path }));
        log.push(ev(LogRecord::Callchain {
            pid,
            tid: pid,
            pmcid: 1,
            cpu: 0,
            userspace: true,
            pcs: vec![start + 0x123, start + 0x456],
        }));
    }
    log.push(ev(LogRecord::ProcExit {
        pmcid: 1,
        pid,
        value: 0,
    }));
    log
}

/// `-T` under process churn (`while :; do /bin/true; done` system-wide):
/// 5000 processes come and go, each with its own objects, beside a few
/// that live throughout. What the view keeps is bounded by the live
/// processes (and the few that exited since the last refresh), not by
/// every process the session saw: exited processes' maps and the objects
/// only they mapped are let go.
#[test]
fn exited_processes_leave_no_maps_or_objects_behind() {
    const LIVE: u32 = 5;
    const PER_REFRESH: u32 = 50;
    let mut v = TopView::new(0.0, false, false);
    let mut log = vec![alloc(1, "cpu-clock")];
    for pid in 1..=LIVE {
        log.push(ev(LogRecord::MapIn {
            pid,
            start: 0x7f10_0000_0000,
            path: "/nonexistent/pmc-top-churn/libc.so.6".into(),
        }));
        log.push(ev(LogRecord::Callchain {
            pid,
            tid: pid,
            pmcid: 1,
            cpu: 0,
            userspace: true,
            pcs: vec![0x7f10_0000_0100],
        }));
    }
    v.update(&log);
    let mut most = crate::annotate::Retained::default();
    let mut pid = 1000;
    for _ in 0..100 {
        let mut batch = Vec::new();
        for _ in 0..PER_REFRESH {
            pid += 1;
            batch.extend(lifetime(1, pid));
        }
        v.update(&batch);
        let r = v.retained();
        most.processes = most.processes.max(r.processes);
        most.mappings = most.mappings.max(r.mappings);
        most.objects = most.objects.max(r.objects);
    }
    // At most the live ones and two refreshes' worth of exits (an exited
    // process is let go a refresh later: samples of its last moments may
    // follow its exit record); each short-lived one maps 3 objects, 2 its
    // own, kept OBJECT_GRACE refreshes after.
    let recent = 2 * PER_REFRESH as usize;
    assert!(
        most.processes <= LIVE as usize + recent,
        "5000 processes came and went, {} live: {most:?} retained",
        LIVE
    );
    assert!(most.mappings <= LIVE as usize + 3 * recent, "{most:?}");
    let graced = (OBJECT_GRACE as usize + 2) * PER_REFRESH as usize;
    assert!(most.objects <= 1 + 2 * graced, "{most:?}");
    // Quiet refreshes after the last exit: only the live ones are left,
    // with the one object they map.
    for _ in 0..OBJECT_GRACE + 2 {
        v.update(&[]);
    }
    assert_eq!(
        v.retained(),
        crate::annotate::Retained {
            processes: LIVE as usize,
            mappings: LIVE as usize,
            objects: 1,
        },
        "after every short-lived process exited"
    );
    // The live processes keep their mappings: a sample of one is still
    // in its object, not `?`.
    v.update(&[ev(LogRecord::Callchain {
        pid: LIVE,
        tid: LIVE,
        pmcid: 1,
        cpu: 0,
        userspace: true,
        pcs: vec![0x7f10_0000_0200],
    })]);
    let screen = v.render(100, 20);
    assert!(screen[3].starts_with("100.0 libc.so.6"), "{screen:?}");
}

/// A feed that never catches up: every take is full, as when the
/// recording logs faster than the view names samples.
struct Flood {
    taken: usize,
}

impl Feed for Flood {
    fn pull(&mut self, _: bool) -> Result<(), String> {
        Ok(())
    }

    fn take(&mut self, limit: usize) -> Result<Vec<LogEvent>, String> {
        self.taken += limit;
        let mut records = vec![alloc(1, "cpu-clock")];
        records.extend((1..limit).map(|i| sample(1, vec![0x1000 + i as u64])));
        Ok(records)
    }

    fn behind(&self) -> bool {
        true
    }
}

/// A screen double: `q` pressed before anything was drawn.
struct QuitAtOnce {
    asked: usize,
}

impl Ui for QuitAtOnce {
    fn draw(&mut self, _: &TopView) -> Result<(), String> {
        Ok(())
    }

    fn input(&mut self, _: &TopView, _: Duration) -> Result<Option<Input>, String> {
        self.asked += 1;
        Ok(Some(Input::Key('q')))
    }
}

/// A key waits for one step's records, not for the view to catch up
/// with the recording: `q` under a flood that never ends still quits,
/// after at most [`RECORDS_PER_STEP`] records.
#[test]
fn q_is_answered_while_the_view_is_behind() {
    let mut v = TopView::new(0.0, false, false);
    let mut feed = Flood { taken: 0 };
    let mut ui = QuitAtOnce { asked: 0 };
    let ended = run_on(&mut v, Duration::from_secs(1), &mut feed, || false, &mut ui);
    assert_eq!(ended, Ok(Ended::Quit));
    assert_eq!(ui.asked, 1);
    assert_eq!(feed.taken, RECORDS_PER_STEP);
}

/// A feed of `left` samples of pc 0x1000, [`RECORDS_PER_STEP`] a take.
struct Backlog {
    left: usize,
    allocated: bool,
}

impl Feed for Backlog {
    fn pull(&mut self, _: bool) -> Result<(), String> {
        Ok(())
    }

    fn take(&mut self, limit: usize) -> Result<Vec<LogEvent>, String> {
        let mut records = Vec::new();
        if !self.allocated {
            self.allocated = true;
            records.push(alloc(1, "cpu-clock"));
        }
        let n = self.left.min(limit);
        self.left -= n;
        records.extend((0..n).map(|_| sample(1, vec![0x1000])));
        Ok(records)
    }

    fn behind(&self) -> bool {
        self.left > 0
    }
}

/// Frames off a terminal: the frames drawn, as rendered.
struct Printed {
    frames: Vec<Vec<String>>,
}

impl Ui for Printed {
    fn draw(&mut self, view: &TopView) -> Result<(), String> {
        self.frames.push(view.render(100, 20));
        Ok(())
    }

    fn input(&mut self, _: &TopView, _: Duration) -> Result<Option<Input>, String> {
        Ok(None)
    }

    fn shows_final_frame(&self) -> bool {
        true
    }
}

/// When the target is gone while the view is behind (a matrix run's -T
/// frames showed 1 sample of a whole run), frames printed for a reader
/// end with one that holds every sample logged.
#[test]
fn the_last_frame_off_a_terminal_holds_every_sample() {
    let mut v = TopView::new(0.0, false, false);
    let mut feed = Backlog {
        left: 3 * RECORDS_PER_STEP + 7,
        allocated: false,
    };
    let mut ui = Printed { frames: Vec::new() };
    let ended = run_on(
        &mut v,
        Duration::from_secs(3600),
        &mut feed,
        || true,
        &mut ui,
    );
    assert_eq!(ended, Ok(Ended::TargetDone));
    let last = ui.frames.last().expect("a final frame");
    let expected = format!("Samples: {}", 3 * RECORDS_PER_STEP + 7);
    assert!(last[0].contains(&expected), "{last:?}");
}

/// A pc named once an interval is named again once its process's mappings
/// change: a sample before the MAP_IN that covers it is `?`, one after it
/// is the object's, in the same interval.
#[test]
fn a_cached_frame_follows_its_processs_new_mappings() {
    let mut v = TopView::new(0.0, false, false);
    let pc = 0x7000_0000_1234u64;
    let mut log = vec![alloc(1, "cpu-clock"), sample(1, vec![pc])];
    log.push(ev(LogRecord::MapIn {
        pid: 7,
        start: 0x7000_0000_0000,
        path: "/nonexistent/pmc-top-cache/libnew.so".into(),
    }));
    log.extend((0..3).map(|_| sample(1, vec![pc])));
    v.update(&log);
    let screen = v.render(120, 20);
    let row = |image: &str| {
        screen
            .iter()
            .find(|l| l.split_whitespace().nth(1) == Some(image))
            .cloned()
    };
    assert!(
        row("?").is_some_and(|l| l.starts_with(" 25.0")),
        "{screen:?}"
    );
    assert!(
        row("libnew.so").is_some_and(|l| l.starts_with(" 75.0")),
        "{screen:?}"
    );
}
