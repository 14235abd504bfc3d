use super::tally::FAILED_OUTSIDE_LIBTEST;
use super::*;

/// A harness-less test binary that panicked leaves no `test result:`
/// line: the command's failure is counted, once, with a name that says
/// where to look; a passing command adds nothing.
#[test]
fn a_failure_without_a_libtest_summary_is_counted() {
    let mut t = Tally::default();
    t.line("test result: ok. 3 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out");
    t.command_ended(true, 0);
    assert_eq!((t.passed, t.failed), (3, 0));
    t.command_ended(false, 0);
    assert_eq!((t.passed, t.failed), (3, 1));
    assert_eq!(t.failures, vec![FAILED_OUTSIDE_LIBTEST.to_string()]);
}

#[test]
fn tallies_libtest_summaries_and_skip_reasons() {
    let mut t = Tally::default();
    for l in [
        "test a ... ok",
        "test b ... ignored (no hardware PMU)",
        "test c ... ignored, needs root",
        "test d ... FAILED",
        "test e ... ignored",
        "test f ... printed output",
        "FAILED",
        "failures:",
        "",
        "---- d ----",
        "only 12 of 40 samples in the loop",
        "",
        "---- f stdout ----",
        "thread 'f' panicked",
        "test x ... ok (inside a message, not a result)",
        "",
        "failures:",
        "    f",
        "    d",
        "",
        "test result: FAILED. 1 passed; 1 failed; 3 ignored; 0 measured; 0 filtered out; finished in 0.01s",
        "test result: ok. 7 passed; 0 failed; 0 ignored; 0 measured; 2 filtered out",
    ] {
        t.line(l);
    }
    assert_eq!((t.passed, t.failed, t.skipped), (8, 1, 3));
    // The command's failure is the failure tallied: not counted twice.
    t.command_ended(false, 0);
    assert_eq!(t.failed, 1);
    assert_eq!(t.failures, vec!["d".to_string(), "f".to_string()]);
    assert_eq!(t.reasons["no hardware PMU"], vec!["b".to_string()]);
    assert_eq!(t.reasons["needs root"], vec!["c".to_string()]);
    assert_eq!(t.reasons["no reason given"], vec!["e".to_string()]);
    assert_eq!(t.messages["d"], vec!["only 12 of 40 samples in the loop"]);
    assert_eq!(t.messages["f"].len(), 2);
    assert!(!t.reasons.contains_key("x"));
}

/// A test's retry, reported on its standard error after another
/// writer's partial line, is one flake: the closing line counts it,
/// and `--expect` fails on it even where everything else is as
/// expected. A `FLAKE:` text on standard output (a test quoting one)
/// is not a report.
#[test]
fn a_reported_retry_is_a_flake_and_fails_the_expectation() {
    let mut t = run_with_skips();
    t.line("FLAKE: quoted::in_stdout: not a report");
    let stderr = "dash: pmcstat %, perf % (a partial line)\n\
                  FLAKE: real_use::counts: task-clock rounds 1 and 2 disagreed\n\
                  thread 'main' panicked elsewhere\n";
    for l in stderr.lines() {
        t.stderr_line(l);
    }
    assert_eq!(
        t.flakes,
        vec!["real_use::counts: task-clock rounds 1 and 2 disagreed".to_string()]
    );
    assert_eq!(
        t.summary(),
        "40 executed: 40 passed, 0 failed, 3 skipped, 1 flaky"
    );
    let expect = "min-executed 40\nskip counting::hw [hardware]\n\
                  skip events::kprobe [pmu:kprobe]\nskip conformance::portable::ts []\n";
    let e = Expected::parse(expect).unwrap();
    assert_eq!(
        e.check(&t),
        vec![
            "flaky: real_use::counts: task-clock rounds 1 and 2 disagreed \
             (the test retried after a failed try)"
                .to_string()
        ]
    );
    // The same run without the flake is as expected.
    assert!(e.check(&run_with_skips()).is_empty());

    // The exit status of `cargo xtask test --expect FILE`.
    let dir = std::env::temp_dir().join(format!("xtask-flake-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("expected-skips");
    std::fs::write(&file, expect).unwrap();
    let args = TestArgs {
        matrix: false,
        verbose: false,
        expect: Some(file),
        record_skips: None,
        vm: None,
        vm_timeout: 60,
        test_args: Vec::new(),
    };
    assert_eq!(summarize(t, true, &args), ExitCode::FAILURE);
    assert_eq!(summarize(run_with_skips(), true, &args), ExitCode::SUCCESS);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `run_tallied` reads a command's standard error beside its standard
/// output: the FLAKE line a test binary writes reaches the tally.
#[test]
fn a_commands_standard_error_is_read_for_flakes() {
    let mut t = Tally::default();
    let ok = run_tallied(
        Command::new("sh").args([
            "-c",
            "echo 'test a ... ok'; printf 'partial' >&2; \
             printf '\\nFLAKE: a: retried once\\n' >&2; \
             echo 'test result: ok. 1 passed; 0 failed; 0 ignored'",
        ]),
        &mut t,
    );
    assert!(ok);
    assert_eq!(
        (t.passed, t.flakes.clone()),
        (1, vec!["a: retried once".to_string()])
    );
    assert!(
        t.summary()
            .ends_with("1 passed, 0 failed, 0 skipped, 1 flaky")
    );
}

fn run_with_skips() -> Tally {
    let mut t = Tally::default();
    for l in [
        "test counting::hw ... ignored ([hardware] no hardware PMU)",
        "test events::kprobe ... ignored ([pmu:kprobe] no `kprobe` PMU)",
        // A conformance scenario a backend cannot run: no requirement.
        "test conformance::portable::ts ... ignored, n/a: portable: it has no sampling modes",
        "test result: ok. 40 passed; 0 failed; 3 ignored; 0 measured; 0 filtered out",
    ] {
        t.line(l);
    }
    t
}

#[test]
fn expected_skips_round_trip_and_pass() {
    let t = run_with_skips();
    let text = Expected::record(&t);
    assert!(text.contains("min-executed 40\n"), "{text}");
    assert!(text.contains("skip counting::hw [hardware]\n"), "{text}");
    assert!(
        text.contains("skip conformance::portable::ts []\n"),
        "{text}"
    );
    let e = Expected::parse(&text).unwrap();
    assert_eq!(e.min_executed, 40);
    assert_eq!(e.skips.len(), 3);
    assert_eq!(e.skips["conformance::portable::ts"], Vec::<String>::new());
    assert_eq!(e.check(&t), Vec::<String>::new());
}

#[test]
fn an_unexpected_skip_or_fewer_tests_fail_the_expectation() {
    let e = Expected::parse(
        "# CI\nmin-executed 41  # last known\nskip counting::hw [hardware]\n\
         skip events::kprobe [perfmon]\nskip never::skipped [tracefs]\n\
         skip conformance::portable::ts []\n",
    )
    .unwrap();
    let problems = e.check(&run_with_skips());
    assert_eq!(problems.len(), 2, "{problems:?}");
    assert!(problems[0].contains("40 tests executed, fewer than the 41"));
    assert!(problems[1].contains("events::kprobe skipped for [pmu:kprobe], expected [perfmon]"));
    let mut t = run_with_skips();
    t.line("test events::new ... ignored ([tracefs] tracefs is not mounted)");
    let e = Expected::parse(
        "min-executed 40\nskip counting::hw [hardware]\nskip events::kprobe [pmu:kprobe]\n\
         skip conformance::portable::ts []",
    )
    .unwrap();
    let problems = e.check(&t);
    assert_eq!(
        problems,
        vec!["unexpected skip: events::new ([tracefs] tracefs is not mounted)".to_string()]
    );
    // An expected skip that ran instead is fine (a better machine).
    let e = Expected::parse("min-executed 0\nskip counting::hw [hardware]\nskip events::kprobe [pmu:kprobe]\nskip a::b [root]\nskip conformance::portable::ts []").unwrap();
    assert!(e.check(&run_with_skips()).is_empty());
}

#[test]
fn a_stale_not_applicable_entry_fails_the_expectation() {
    let mut t = run_with_skips();
    t.line("test conformance::freebsd_double::ts ... ok");
    let e = Expected::parse(
        "min-executed 0\nskip counting::hw [hardware]\nskip events::kprobe [pmu:kprobe]\n\
         skip conformance::portable::ts []\nskip conformance::freebsd_double::ts []\nskip conformance::portable::renamed []\n",
    )
    .unwrap();
    assert_eq!(
        e.check(&t),
        vec![
            "stale entry: conformance::freebsd_double::ts is listed as an n/a skip but ran; remove its line"
                .to_string(),
            "stale entry: conformance::portable::renamed is listed as an n/a skip but no test of that name reported; remove or rename its line"
                .to_string(),
        ]
    );
    // A failed test ran too.
    let mut t = run_with_skips();
    t.line("test conformance::freebsd_double::ts ... FAILED");
    let e = Expected::parse(
        "min-executed 0\nskip counting::hw [hardware]\nskip events::kprobe [pmu:kprobe]\n\
         skip conformance::portable::ts []\nskip conformance::freebsd_double::ts []\n",
    )
    .unwrap();
    assert_eq!(e.check(&t).len(), 1, "{:?}", e.check(&t));
}

#[test]
fn skipped_names_may_contain_spaces() {
    let e =
        Expected::parse("min-executed 1\nskip feature libpfm: pfm::tests, x [libpfm]\n").unwrap();
    assert_eq!(
        e.skips.get("feature libpfm: pfm::tests, x"),
        Some(&vec!["libpfm".to_string()])
    );
}

#[test]
fn malformed_expectations_are_refused_with_the_line() {
    assert!(
        Expected::parse("skip a [b]")
            .unwrap_err()
            .contains("min-executed")
    );
    assert!(
        Expected::parse("min-executed x")
            .unwrap_err()
            .contains("line 1")
    );
    assert!(
        Expected::parse("min-executed 1\nskip a b")
            .unwrap_err()
            .contains("line 2")
    );
    assert!(
        Expected::parse("min-executed 1\nwhat")
            .unwrap_err()
            .contains("line 2")
    );
}
