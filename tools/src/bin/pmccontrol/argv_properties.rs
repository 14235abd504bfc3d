//! Property test of pmccontrol's getopt-style parser over generated
//! argument vectors (issue 32, item 10): its options bundled and split,
//! ids at the edges of strtoul and int, empty, unicode and junk words. No
//! vector panics; every refusal is EX_USAGE or pmccontrol.c's EX_DATAERR
//! for an id (each printed with its message by `errx` before the status
//! comes back); `--help`/`--version` print something; every id accepted
//! is a CPU or row number an int holds.
//!
//! `PROPTEST_CASES` sets the number of vectors (default
//! [`DEFAULT_CASES`]); the 1 000 000 run:
//! `PROPTEST_CASES=1000000 cargo test --release -p hwpmc-tools --bin pmccontrol argv_properties -- --nocapture`.

use std::panic::{AssertUnwindSafe, catch_unwind};

use proptest::prelude::*;
use proptest::sample::select;
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestRunner};

use super::{Command, EX_DATAERR, EX_USAGE, Parsed, Stop, parse};

/// Vectors per run without `PMC_ARGV_CASES`.
const DEFAULT_CASES: u32 = 50_000;

const OPTIONS: &[&str] = &[
    "-L",
    "-l",
    "-s",
    "-e",
    "-d",
    "-c",
    "--holders",
    "--limits",
    "--json",
    "--help",
    "--version",
    "--",
    "-",
    "-Ls",
    "-ce",
    "-lc",
    "-x",
    "--nosuch",
    "--c",
    "-e*",
    "-c*",
];

/// Ids at the edges of what strtoul reads and an int holds.
const EDGES: &[&str] = &[
    "",
    " ",
    "0",
    "-0",
    "1",
    "-1",
    "*",
    "**",
    "*1",
    "0x",
    "0x7fffffff",
    "0x80000000",
    "0xffffffff",
    "0x100000000",
    "010",
    "08",
    "2147483647",
    "2147483648",
    "4294967295",
    "4294967296",
    "18446744073709551615",
    "18446744073709551616",
    "99999999999999999999",
    "-9223372036854775808",
    "+2",
    " \t3",
    "1e3",
    "NaN",
    "inf",
    "é",
    "١",
    "\u{0}",
];

fn token() -> impl Strategy<Value = String> {
    prop_oneof![
        5 => select(OPTIONS).prop_map(str::to_string),
        4 => select(EDGES).prop_map(str::to_string),
        3 => (select(&["-c", "-e", "-d", "-Lc", "-se"][..]), select(EDGES))
            .prop_map(|(o, v)| format!("{o}{v}")),
        1 => any::<i64>().prop_map(|n| n.to_string()),
        1 => any::<u128>().prop_map(|n| format!("{n:#x}")),
        1 => proptest::collection::vec(any::<char>(), 0..=10)
            .prop_map(|c| c.into_iter().collect()),
        1 => proptest::collection::vec(select(&['-', 'c', 'd', 'e', 'l', 'L', 's', '*', '0', 'x'][..]), 0..=8)
            .prop_map(|c| c.into_iter().collect()),
    ]
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn check_accepted(p: &Parsed) -> Result<(), String> {
    if p.command != Command::EnableDisable && !p.ops.is_empty() {
        return Err(format!("{:?} with -e/-d operations", p.command));
    }
    for op in &p.ops {
        if op.cpu.is_some_and(|c| c < 0) || op.pmc.is_some_and(|r| r < 0) {
            return Err(format!("negative id: cpu {:?}, pmc {:?}", op.cpu, op.pmc));
        }
    }
    Ok(())
}

fn parse_one(argv: &[String]) -> Result<(), TestCaseError> {
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let said = |err: &[u8]| {
            let text = String::from_utf8_lossy(err);
            text.starts_with("pmccontrol: ") && text.trim_end().len() > "pmccontrol:".len()
        };
        match parse(argv, &mut out, &mut err) {
            Ok(Some(p)) if err.is_empty() => check_accepted(&p),
            Ok(Some(_)) => Err(format!("accepted, yet said {:?}", text(&err))),
            Ok(None) if !out.is_empty() => Ok(()),
            Ok(None) => Err("--help or --version printed nothing".into()),
            Err(Stop::Status(EX_USAGE | EX_DATAERR)) if said(&err) => Ok(()),
            Err(Stop::Status(code)) => Err(format!("status {code}, message {:?}", text(&err))),
            Err(Stop::Io(e)) => Err(format!("writing to memory: {e}")),
        }
    }));
    match outcome {
        Ok(Ok(())) => Ok(()),
        Ok(Err(why)) => Err(TestCaseError::fail(format!("pmccontrol {argv:?}: {why}"))),
        Err(_) => Err(TestCaseError::fail(format!("pmccontrol {argv:?} panicked"))),
    }
}

#[test]
fn no_argument_vector_panics_and_every_id_fits_an_int() {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(DEFAULT_CASES);
    let mut runner = TestRunner::new(Config {
        cases,
        failure_persistence: None,
        // The fastest generator: the vectors need no cryptographic quality.
        rng_algorithm: RngAlgorithm::XorShift,
        ..Config::default()
    });
    let start = std::time::Instant::now();
    let result = runner.run(&proptest::collection::vec(token(), 0..12), |argv| {
        parse_one(&argv)
    });
    eprintln!(
        "pmccontrol's parser: {cases} argument vectors in {:.1} s",
        start.elapsed().as_secs_f64()
    );
    if let Err(e) = result {
        panic!("{e}");
    }
}
