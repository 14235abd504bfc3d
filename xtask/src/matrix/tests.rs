use super::*;

fn tally_of(lines: &[&str]) -> Tally {
    let mut t = Tally::default();
    for l in lines {
        t.line(l);
    }
    t
}

fn failed_with(test: &str, message: &str) -> Tally {
    tally_of(&[
        &format!("test {test} ... FAILED"),
        "failures:",
        &format!("---- {test} ----"),
        message,
        "",
        "failures:",
        &format!("    {test}"),
        "",
        "test result: FAILED. 0 passed; 1 failed; 0 ignored; 0 measured; 40 filtered out",
    ])
}

#[test]
fn skip_reasons_name_their_tokens() {
    assert_eq!(
        skip_tokens("[tracefs,paranoid:-1] tracefs is not mounted; needs …"),
        Some(vec!["tracefs".to_string(), "paranoid:-1".to_string()])
    );
    assert_eq!(
        skip_tokens("[hardware] no hardware PMU"),
        Some(vec!["hardware".to_string()])
    );
    assert_eq!(skip_tokens("no hardware PMU"), None);
    assert!(is_not_applicable(
        "n/a: freebsd-hwpmc: sampling is not connected to hwpmc's log yet"
    ));
    assert!(!is_not_applicable("[hardware] no hardware PMU"));
    assert_eq!(skip_tokens("[] nothing"), None);
    assert_eq!(skip_tokens("[unterminated"), None);
}

#[test]
fn signatures_match_the_requirements_errors() {
    // What the suite printed on this machine when each was forced.
    assert!(shows_signature(
        "hardware",
        "no instructions:u count in perf output: <not supported>,,instructions:u,0,100.00,,"
    ));
    assert!(shows_signature(
        "hardware",
        "instructions,usr: ENOENT: no PMU for hardware events"
    ));
    assert!(shows_signature(
        "paranoid:1",
        "start: EACCES: perf_event_paranoid is 2; kernel events need <= 1 (sysctl …)"
    ));
    // The errno alone is not the sysctl's signature.
    assert!(!shows_signature("paranoid:1", "open: EACCES"));
    assert!(shows_signature(
        "pmu:kprobe",
        "kprobe:do_sys_openat2: Kprobe is not supported (EOPNOTSUPP): this kernel has no `kprobe` PMU"
    ));
    assert!(!shows_signature("pmu:kprobe", "uprobe: ENOENT"));
    assert!(shows_signature(
        "tracefs",
        "tracefs: not mounted at /sys/kernel/tracing"
    ));
    assert!(shows_signature(
        "restricted:2",
        "kernel counting allowed at paranoid 2"
    ));
    assert!(shows_signature(
        "not-ipc-lock",
        "8192 pages mapped beyond 9224 KiB"
    ));
    assert!(shows_signature(
        "program:perf",
        "spawn perf: No such file or directory"
    ));
    // An unrelated panic proves nothing.
    for token in [
        "hardware",
        "paranoid:0",
        "tracefs",
        "perfmon",
        "restricted:2",
    ] {
        assert!(
            !shows_signature(token, "test panicked: index out of bounds"),
            "{token}"
        );
    }
    assert!(signature("no-such-token").is_none());
}

#[test]
fn a_forced_run_proves_a_skip_only_by_the_requirements_failure() {
    let t = "counting::x";
    let one = vec!["hardware".to_string()];
    let proof = failed_with(t, "instructions,usr: ENOENT: no PMU");
    assert_eq!(
        judge_forcing(t, "hardware", &one, true, &proof),
        Forcing::Proved
    );
    // Failing for another reason is no proof.
    let unrelated = failed_with(
        t,
        "test panicked: called `Option::unwrap()` on a `None` value",
    );
    assert!(matches!(
        judge_forcing(t, "hardware", &one, true, &unrelated),
        Forcing::NoProof(m) if m.contains("without the signature")
    ));
    // A crash, or a filter that matched nothing.
    assert!(matches!(
        judge_forcing(t, "hardware", &one, false, &proof),
        Forcing::NoProof(m) if m.contains("crashed")
    ));
    let none =
        tally_of(&["test result: ok. 0 passed; 0 failed; 0 ignored; 0 measured; 41 filtered out"]);
    assert!(matches!(
        judge_forcing(t, "hardware", &one, true, &none),
        Forcing::NoProof(m) if m.contains("no test matched")
    ));
    // More than the one test.
    let two = tally_of(&[
        "test result: FAILED. 1 passed; 1 failed; 0 ignored; 0 measured; 39 filtered out",
    ]);
    assert!(matches!(
        judge_forcing(t, "hardware", &one, true, &two),
        Forcing::NoProof(m) if m.contains("2 tests ran")
    ));
    // Passing when forced: declared too strictly.
    let passed = tally_of(&[
        "test counting::x ... ok",
        "test result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 40 filtered out",
    ]);
    assert_eq!(
        judge_forcing(t, "hardware", &one, true, &passed),
        Forcing::TooStrict
    );
    // Still skipped although its only requirement was forced.
    let still = tally_of(&[
        "test counting::x ... ignored ([hardware] no hardware PMU)",
        "test result: ok. 0 passed; 0 failed; 1 ignored; 0 measured; 40 filtered out",
    ]);
    assert!(matches!(
        judge_forcing(t, "hardware", &one, true, &still),
        Forcing::NoProof(m) if m.contains("still skipped")
    ));
    // Two unmet: forcing one leaves the other as the reason.
    let both = vec!["tracefs".to_string(), "paranoid:-1".to_string()];
    let other = tally_of(&[
        "test counting::x ... ignored ([paranoid:-1] needs perf_event_paranoid <= -1)",
        "test result: ok. 0 passed; 0 failed; 1 ignored; 0 measured; 40 filtered out",
    ]);
    assert_eq!(
        judge_forcing(t, "tracefs", &both, true, &other),
        Forcing::Deferred
    );
}
