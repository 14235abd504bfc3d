//! Property test of pmcstat's parser ([`super::try_parse_from`]) over
//! generated argument vectors: real option spellings, numbers at the
//! edges (huge, negative, NaN, infinities, hex, with units), empty and
//! unicode strings, and junk (issue 32, item 10), parsed in-process.
//!
//! Asserted for every vector: the parser does not panic; a refusal is
//! EX_USAGE with a non-empty message (or status 0 with the text of
//! `--help`/`--version`); an accepted vector holds only numbers within
//! the ranges the live mode's arithmetic relies on (`check_accepted`).
//!
//! `PROPTEST_CASES` sets the number of vectors (default
//! [`DEFAULT_CASES`], a few seconds in the debug suite). The 1 000 000
//! run of issue 32:
//! `PROPTEST_CASES=1000000 cargo test --release -p hwpmc-tools --lib argv_properties -- --nocapture`
//! (each test prints its count and time).

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::{Duration, Instant};

use proptest::prelude::*;
use proptest::sample::select;
use proptest::test_runner::{Config, TestCaseError, TestRunner};

use super::ranges::{MAX_CPU_NUMBER, MAX_SECONDS, MAX_TID, MIN_INTERVAL_SECONDS};
use super::{Args, CallGraph, EventSpec, Refusal, parse_with, try_parse_from};

/// Vectors per run without `PROPTEST_CASES`.
const DEFAULT_CASES: u32 = 20_000;

/// Every spelling pmcstat knows, and some it does not.
const OPTIONS: &[&str] = &[
    "-p",
    "-s",
    "-P",
    "-S",
    "-n",
    "-N",
    "-U",
    "-O",
    "-R",
    "-G",
    "--folded",
    "--call-graph",
    "-F",
    "-g",
    "-D",
    "-M",
    "--pprof",
    "--pprof-every",
    "--flamegraph",
    "-c",
    "-d",
    "-t",
    "-w",
    "-l",
    "-C",
    "-o",
    "--json",
    "--csv",
    "--cgroup",
    "-q",
    "-T",
    "-m",
    "-a",
    "-z",
    "-E",
    "-W",
    "-L",
    "-u",
    "-I",
    "-k",
    "-r",
    "-v",
    "-e",
    "-f",
    "-i",
    "--",
    "-",
    "-h",
    "--help",
    "-V",
    "--version",
    "--nosuch",
    "-x",
    "-dC",
    "-vvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvv",
];

/// The options that take a number, for attached forms (`-l1e20`).
const NUMERIC: &[&str] = &[
    "-n",
    "-c",
    "-w",
    "-l",
    "-z",
    "-i",
    "-t",
    "--call-graph=dwarf,",
];

/// Values at the edges of every range pmcstat checks.
const EDGES: &[&str] = &[
    "",
    " ",
    "0",
    "-0",
    "1",
    "-1",
    "0.001",
    "0.0009",
    "1e-300",
    "4.9e-324",
    "1e19",
    "1e20",
    "1e308",
    "1e309",
    "-1e308",
    "99999999999999999999",
    "4294967295",
    "4294967296",
    "4294967295.0000001",
    "18446744073709551615",
    "18446744073709551616",
    "9223372036854775807",
    "9223372036854775808",
    "-9223372036854775808",
    "2147483647",
    "2147483648",
    "65535",
    "65536",
    "NaN",
    "nan",
    "-NaN",
    "inf",
    "-inf",
    "infinity",
    "+inf",
    "0x10",
    "0x",
    "0X7fffffff",
    "010",
    "5s",
    "1ms",
    "1.5.5",
    "1e",
    "e5",
    "0-3,6",
    "0-65535",
    "0-65536",
    "3-1",
    "1-2-3",
    ",,",
    "*",
    "0,*",
    "fp",
    "dwarf",
    "dwarf,8",
    "dwarf,65528",
    "dwarf,65536",
    "dwarf,0",
    "dwarf,",
    "dwarf,-8",
    "threshold=NaN",
    "threshold=1e400",
    "skiplink=2",
    "cpu-clock",
    "instructions,usr",
    "true",
    "\u{0}",
    "é",
    "𝟙",
    "١٢٣",
    "\u{202e}5",
    "--",
];

fn token() -> impl Strategy<Value = String> {
    prop_oneof![
        5 => select(OPTIONS).prop_map(str::to_string),
        4 => select(EDGES).prop_map(str::to_string),
        2 => (select(NUMERIC), select(EDGES)).prop_map(|(o, v)| format!("{o}{v}")),
        1 => any::<f64>().prop_map(|f| f.to_string()),
        1 => any::<i64>().prop_map(|n| n.to_string()),
        1 => any::<u128>().prop_map(|n| n.to_string()),
        1 => any::<i32>().prop_map(|n| format!("{n:#x}")),
        1 => (any::<f64>(), -400i32..400).prop_map(|(m, e)| format!("{m}e{e}")),
        1 => text(any::<char>(), 12),
        1 => text(select(JUNK), 16),
        1 => text(select(LETTERS), 6).prop_map(|l| format!("-{l}")),
    ]
}

/// Characters of plausible junk, and of clustered short options.
const JUNK: &[char] = &[
    '-', '0', '1', '9', 'e', 'x', '.', ',', '=', '*', '+', ' ', 'a', 'Z',
];
const LETTERS: &[char] = &[
    'C', 'd', 'E', 'e', 'g', 'I', 'L', 'N', 'q', 'T', 'U', 'v', 'W', 'l', 'w', 'n', 'z', 'h', 'V',
    'y',
];

/// Up to `max` characters of `chars`. (Not a regex strategy: each of those
/// seeds its own ChaCha generator, most of a debug run's time.)
fn text(chars: impl Strategy<Value = char>, max: usize) -> impl Strategy<Value = String> {
    proptest::collection::vec(chars, 0..=max).prop_map(|c| c.into_iter().collect())
}

fn argv() -> impl Strategy<Value = Vec<String>> {
    proptest::collection::vec(token(), 0..14)
}

/// The ranges the live mode's arithmetic relies on: `-l`/`-w` become
/// `Instant + Duration` (`mod.rs`, `watch.rs`), `-n` a perf period, `-c`
/// a CPU list, `--call-graph` a stack copy size.
fn check_accepted(args: &Args, specs: &[EventSpec]) -> Result<(), String> {
    for (flag, secs, in_range) in [
        ("-l", args.duration, (|s| s > 0.0) as fn(f64) -> bool),
        ("-w", args.interval, |s| s >= MIN_INTERVAL_SECONDS),
    ] {
        let Some(secs) = secs else { continue };
        if !(in_range(secs) && secs <= MAX_SECONDS) {
            return Err(format!("{flag} {secs} accepted"));
        }
        let later = Duration::try_from_secs_f64(secs)
            .ok()
            .and_then(|d| Instant::now().checked_add(d));
        if later.is_none() {
            return Err(format!("{flag} {secs} overflows Instant + Duration"));
        }
    }
    for ev in specs {
        if let Some(n) = ev.reload
            && !(1..=pmc::MAX_RELOAD_COUNT).contains(&n)
        {
            return Err(format!("-n {n} accepted"));
        }
        if let Some(cpu) = ev.cpus.iter().find(|&&c| c > MAX_CPU_NUMBER) {
            return Err(format!("-c CPU {cpu} accepted"));
        }
    }
    if args.depth == Some(0) {
        return Err("-z 0 accepted".into());
    }
    if args.thread.is_some_and(|t| i64::from(t) > MAX_TID) {
        return Err(format!("-i {:?} accepted", args.thread));
    }
    if let Some(CallGraph::Dwarf(bytes)) = args.call_graph
        && !(bytes > 0 && bytes % 8 == 0 && bytes <= pmc::sample::MAX_USER_STACK_BYTES)
    {
        return Err(format!("--call-graph dwarf,{bytes} accepted"));
    }
    if args.targets.iter().any(String::is_empty) {
        return Err("-t '' accepted".into());
    }
    Ok(())
}

fn check_refused(refusal: &Refusal) -> Result<(), String> {
    let (status, message) = match refusal {
        Refusal::Clap(e) => (refusal.status(), e.render().to_string()),
        Refusal::Usage(m) => (refusal.status(), m.clone()),
    };
    let shows_help_or_version = matches!(
        refusal,
        Refusal::Clap(e) if matches!(
            e.kind(),
            clap::error::ErrorKind::DisplayHelp | clap::error::ErrorKind::DisplayVersion
        )
    );
    match status {
        64 if !message.trim().is_empty() => Ok(()),
        0 if shows_help_or_version => Ok(()),
        _ => Err(format!("status {status}, message {message:?}")),
    }
}

/// pmcstat's clap command, built (and debug-asserted) once: clap's checks
/// of the definition, run at each build in a debug build, would take most
/// of each case.
fn built_command() -> &'static clap::Command {
    static BUILT: std::sync::OnceLock<clap::Command> = std::sync::OnceLock::new();
    BUILT.get_or_init(|| {
        let mut command = <Args as clap::CommandFactory>::command();
        command.build();
        command
    })
}

fn parse_one(argv: &[String]) -> Result<(), TestCaseError> {
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        let full = std::iter::once("pmcstat".to_string()).chain(argv.iter().cloned());
        match parse_with(built_command().clone(), full) {
            Ok((args, specs)) => check_accepted(&args, &specs),
            Err(refusal) => check_refused(&refusal),
        }
    }));
    match outcome {
        Ok(Ok(())) => Ok(()),
        Ok(Err(why)) => Err(TestCaseError::fail(format!("pmcstat {argv:?}: {why}"))),
        Err(_) => Err(TestCaseError::fail(format!("pmcstat {argv:?} panicked"))),
    }
}

/// `PROPTEST_CASES`, or `default`. (proptest's own reading of it is
/// overridden by the explicit `Config::cases`.)
pub(crate) fn cases(default: u32) -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(default)
}

#[test]
fn no_argument_vector_panics_and_every_number_is_in_range() {
    let cases = cases(DEFAULT_CASES);
    let mut runner = TestRunner::new(Config {
        cases,
        failure_persistence: None,
        // The fastest generator: the vectors need no cryptographic quality.
        rng_algorithm: proptest::test_runner::RngAlgorithm::XorShift,
        ..Config::default()
    });
    let start = Instant::now();
    let result = runner.run(&argv(), |argv| parse_one(&argv));
    eprintln!(
        "pmcstat's parser: {cases} argument vectors in {:.1} s",
        start.elapsed().as_secs_f64()
    );
    if let Err(e) = result {
        panic!("{e}");
    }
}

/// The cases of issue 32 item 10, each refused with EX_USAGE and its range.
#[test]
fn the_reported_numbers_are_refused_with_their_range() {
    for (argv, range) in [
        (&["-l", "99999999999999999999"][..], "(0, 4294967295]"),
        (&["-l", "1e19"], "(0, 4294967295]"),
        (&["-w", "1e20"], "[0.001, 4294967295]"),
        (&["-w", "99999999999999999999"], "[0.001, 4294967295]"),
        (&["-t", ""], "empty pattern"),
    ] {
        let full = ["pmcstat", "-p", "task-clock"]
            .iter()
            .chain(argv)
            .chain(&["--", "true"]);
        let refusal = try_parse_from(full).expect_err("refused");
        assert_eq!(refusal.status(), 64, "{argv:?}");
        let Refusal::Clap(e) = refusal else {
            panic!("{argv:?}: not clap's")
        };
        let message = e.render().to_string();
        assert!(message.contains(range), "{argv:?}: {message}");
    }
}
