//! Numbers and patterns on the command line that nobody here wrote: every
//! numeric option of pmcstat and pmccontrol is range-checked as it is
//! parsed (EX_USAGE with the accepted range; never a panic, never a file
//! touched first), and `-t` refuses the empty pattern and names a process
//! id that does not exist (issue 32, items 10 and 12).
//!
//! The in-process property tests over generated argument vectors are unit
//! tests beside the parsers (`pmcstat/options/argv_properties.rs`,
//! `bin/pmccontrol.rs`).

use std::process::{Command, Output};

use crate::ensure;
use crate::harness::{Context, LiveTest, TestResult, test};
use crate::temp::TempDir;
use pmc::probe::Requirement as R;

const PMCSTAT: &str = env!("CARGO_BIN_EXE_pmcstat");
const PMCCONTROL: &str = env!("CARGO_BIN_EXE_pmccontrol");

/// sysexits.h `EX_USAGE`.
const USAGE: i32 = 64;
/// sysexits.h `EX_DATAERR`: pmcstat.c's status when no target is found.
const DATAERR: i32 = 65;

/// What an `-o` file held before the run: it must hold it after.
const KEPT: &str = "counts of an earlier run\n";

pub fn tests() -> Vec<LiveTest> {
    vec![
        test(
            "argument_ranges::huge_seconds_are_usage_errors_and_leave_the_o_file_alone",
            vec![],
            huge_seconds_are_usage_errors_and_leave_the_o_file_alone,
        ),
        test(
            "argument_ranges::every_numeric_option_names_its_range",
            vec![],
            every_numeric_option_names_its_range,
        ),
        test(
            "argument_ranges::pmccontrol_ids_out_of_range_are_refused_without_a_panic",
            vec![],
            pmccontrol_ids_out_of_range_are_refused_without_a_panic,
        ),
        test(
            "argument_ranges::an_empty_t_pattern_is_refused",
            vec![],
            an_empty_t_pattern_is_refused,
        ),
        test(
            "argument_ranges::a_t_pid_that_does_not_exist_is_named",
            vec![],
            a_t_pid_that_does_not_exist_is_named,
        ),
        test(
            "argument_ranges::a_missing_t_pid_beside_a_running_one_is_skipped",
            vec![R::Paranoid(2)],
            a_missing_t_pid_beside_a_running_one_is_skipped,
        ),
    ]
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn run(program: &str, args: &[&str]) -> Result<Output, libtest_mimic::Failed> {
    Command::new(program)
        .args(args)
        .stdin(std::process::Stdio::null())
        .output()
        .ctx(program)
}

/// Fails unless the run exited with `code`, did not panic, and its
/// standard error holds every one of `needles`.
fn expect(args: &[&str], out: &Output, code: i32, needles: &[&str]) -> TestResult {
    let err = text(&out.stderr);
    ensure!(
        out.status.code() == Some(code),
        "{args:?}: status {:?}, expected {code}; stderr: {err}",
        out.status
    );
    ensure!(!err.contains("panicked"), "{args:?} panicked: {err}");
    for needle in needles {
        ensure!(
            err.contains(needle),
            "{args:?}: stderr does not say {needle:?}: {err}"
        );
    }
    Ok(())
}

/// `-l 99999999999999999999` panicked (exit 101) in
/// `Duration::from_secs_f64` after the `-o` file had been created empty;
/// `-l 1e19` in `Instant + Duration`. Each is a usage error naming the
/// range now, before anything is opened.
fn huge_seconds_are_usage_errors_and_leave_the_o_file_alone() -> TestResult {
    let dir = TempDir::new("ranges")?;
    let counts = dir.join("counts.txt");
    let counts_arg = dir.path("counts.txt");
    for (flag, value, range) in [
        ("-l", "99999999999999999999", "(0, 4294967295]"),
        ("-l", "1e19", "(0, 4294967295]"),
        ("-l", "inf", "(0, 4294967295]"),
        ("-l", "NaN", "(0, 4294967295]"),
        ("-l", "0", "(0, 4294967295]"),
        ("-w", "1e20", "[0.001, 4294967295]"),
        ("-w", "99999999999999999999", "[0.001, 4294967295]"),
        ("-w", "-inf", "[0.001, 4294967295]"),
        ("-w", "0.0001", "[0.001, 4294967295]"),
    ] {
        std::fs::write(&counts, KEPT).ctx("write the -o file")?;
        let args = [
            "-p",
            "task-clock",
            "-o",
            &counts_arg,
            flag,
            value,
            "--",
            "true",
        ];
        let out = run(PMCSTAT, &args)?;
        expect(&args, &out, USAGE, &[flag, range])?;
        let after = std::fs::read_to_string(&counts).ctx("read the -o file")?;
        ensure!(after == KEPT, "{args:?} changed the -o file to {after:?}");
    }
    Ok(())
}

/// The other numbers: each out-of-range value is EX_USAGE with what
/// is accepted (`-i 99999999999` said only "number too large to fit in
/// target type"; `-c 4294967295` reached the allocation).
fn every_numeric_option_names_its_range() -> TestResult {
    for (args, needles) in [
        (
            &["-R", "x.log", "-G", "-", "-i", "99999999999"][..],
            &["-i", "0..=2147483647"][..],
        ),
        (&["-R", "x.log", "-G", "-", "-i", "-1"], &["0..=2147483647"]),
        (
            &["-R", "x.log", "-G", "-", "-z", "99999999999"],
            &["1..=4294967295"],
        ),
        (&["-R", "x.log", "-G", "-", "-z", "0"], &["1..=4294967295"]),
        (
            &[
                "-P",
                "cpu-clock",
                "-n",
                "99999999999999999999",
                "--",
                "true",
            ],
            &["-n", "1 to 9223372036854775807"],
        ),
        (
            &["-P", "cpu-clock", "-n", "-5", "--", "true"],
            &["1 to 9223372036854775807"],
        ),
        (
            &[
                "-P",
                "cpu-clock",
                "--call-graph",
                "dwarf,99999999999999999999",
                "--",
                "true",
            ],
            &["8 to 65528"],
        ),
        (
            &["-c", "4294967295", "-s", "cpu-clock", "-l", "1"],
            &["-c", "0 to 65535"],
        ),
        (
            &["-c", "0-99999999999", "-s", "cpu-clock", "-l", "1"],
            &["-c", "0 to 65535"],
        ),
    ] {
        let out = run(PMCSTAT, args)?;
        expect(args, &out, USAGE, needles)?;
    }
    Ok(())
}

/// pmccontrol's `-c`/`-e`/`-d` ids are strtoul'd into an int as
/// pmccontrol.c does: a number too large for one is pmccontrol.c's
/// EX_DATAERR "is not a valid … id" (its status, kept), never a panic,
/// and a second line gives the range.
fn pmccontrol_ids_out_of_range_are_refused_without_a_panic() -> TestResult {
    for args in [
        &["-c", "99999999999999999999", "-e", "0"][..],
        &["-c", "0", "-e", "18446744073709551616"],
        &["-d", "0x80000000"],
        &["-c", "-1", "-d", "*"],
    ] {
        let out = run(PMCCONTROL, args)?;
        expect(
            args,
            &out,
            DATAERR,
            &["is not a valid", "from 0 to 2147483647"],
        )?;
    }
    Ok(())
}

/// `-t ''` matched every process on the machine (the empty regular
/// expression matches every name).
fn an_empty_t_pattern_is_refused() -> TestResult {
    let args = ["-p", "task-clock", "-t", "", "-l", "0.1"];
    let out = run(PMCSTAT, &args)?;
    expect(&args, &out, USAGE, &["-t", "empty"])?;
    Ok(())
}

/// `-t 999999999` (above any pid_max: no process ever had it) and the pid
/// of a command that has exited and been reaped said "the targets of -t
/// exited": each names the process id that does not exist, and that no
/// process matches. (pmcstat.c's status, EX_DATAERR, kept.)
fn a_t_pid_that_does_not_exist_is_named() -> TestResult {
    let pid_max: u64 = std::fs::read_to_string("/proc/sys/kernel/pid_max")
        .ctx("pid_max")?
        .trim()
        .parse()
        .ctx("pid_max")?;
    ensure!(pid_max < 999_999_999, "pid_max is {pid_max}");
    let mut gone = Command::new("true").spawn().ctx("spawn true")?;
    let gone_pid = gone.id().to_string();
    gone.wait().ctx("wait for true")?;
    for pid in ["999999999", &gone_pid] {
        let args = ["-p", "task-clock", "-t", pid, "-l", "0.1"];
        let out = run(PMCSTAT, &args)?;
        let named = format!("-t {pid}: process {pid} does not exist");
        let none = format!("no process matches -t {pid}");
        expect(&args, &out, DATAERR, &[&named, &none])?;
        ensure!(
            !text(&out.stderr).contains("exited"),
            "{}",
            text(&out.stderr)
        );
    }
    Ok(())
}

/// With a running target beside it, a pid that does not exist is said
/// and skipped, as pmcstat.c skips a target whose attach fails with
/// ESRCH: the running one is counted.
fn a_missing_t_pid_beside_a_running_one_is_skipped() -> TestResult {
    let mut child = Command::new("sleep").arg("30").spawn().ctx("spawn sleep")?;
    let live = child.id().to_string();
    let args = [
        "-p",
        "task-clock",
        "-t",
        &live,
        "-t",
        "999999999",
        "-l",
        "0.3",
    ];
    let out = run(PMCSTAT, &args);
    let _ = child.kill();
    let _ = child.wait();
    let out = out?;
    expect(
        &args,
        &out,
        0,
        &[
            "-t 999999999: process 999999999 does not exist",
            "task-clock",
        ],
    )?;
    ensure!(
        !text(&out.stderr).contains("no process matches"),
        "{}",
        text(&out.stderr)
    );
    Ok(())
}
