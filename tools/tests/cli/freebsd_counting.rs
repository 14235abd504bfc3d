//! pmcstat's counting output, options and exit statuses against FreeBSD's
//! usr.sbin/pmcstat/pmcstat.c: each expected text is built here from the
//! printf formats cited beside it, never from our own code.

use std::process::{Command, Output, Stdio};

use pmc::probe::Requirement as R;

use crate::ensure;
use crate::harness::{Context, LiveTest, TestResult, test};

const PMCSTAT: &str = env!("CARGO_BIN_EXE_pmcstat");

// sysexits.h
const EX_USAGE: i32 = 64;
const EX_DATAERR: i32 = 65;
const EX_OSERR: i32 = 71;
const EX_IOERR: i32 = 74;

pub fn tests() -> Vec<LiveTest> {
    vec![
        test(
            "freebsd_counting::process_columns_are_pmcstat_c_s_and_exit_ex_ok",
            vec![R::Paranoid(2)],
            process_columns_are_pmcstat_c_s_and_exit_ex_ok,
        ),
        test(
            "freebsd_counting::system_counting_prints_one_column_per_cpu",
            vec![R::Paranoid(0)],
            system_counting_prints_one_column_per_cpu,
        ),
        test(
            "freebsd_counting::w_prints_a_line_per_interval_and_one_header",
            vec![R::Paranoid(2)],
            w_prints_a_line_per_interval_and_one_header,
        ),
        test(
            "freebsd_counting::without_w_the_timer_prints_every_5_seconds",
            vec![R::Paranoid(2)],
            without_w_the_timer_prints_every_5_seconds,
        ),
        test(
            "freebsd_counting::c_toggles_cumulative_for_the_specs_after_it",
            vec![R::Paranoid(2)],
            c_toggles_cumulative_for_the_specs_after_it,
        ),
        test(
            "freebsd_counting::o_file_has_no_final_newline",
            vec![R::Paranoid(2)],
            o_file_has_no_final_newline,
        ),
        test(
            "freebsd_counting::t_takes_a_regular_expression_over_process_names",
            vec![R::Paranoid(2)],
            t_takes_a_regular_expression_over_process_names,
        ),
        test(
            "freebsd_counting::p_without_o_prints_the_log",
            vec![R::Paranoid(2)],
            p_without_o_prints_the_log,
        ),
        test(
            "freebsd_counting::error_paths_exit_with_pmcstat_c_s_sysexits",
            vec![],
            error_paths_exit_with_pmcstat_c_s_sysexits,
        ),
        test(
            "freebsd_counting::a_closed_pipe_or_a_full_file_does_not_panic",
            vec![R::Paranoid(2)],
            a_closed_pipe_or_a_full_file_does_not_panic,
        ),
    ]
}

fn pmcstat(args: &[&str]) -> Result<Output, libtest_mimic::Failed> {
    Command::new(PMCSTAT).args(args).output().ctx("pmcstat")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A software counter is 64 bits wide (FreeBSD's SOFT class, and Linux's
/// perf counts): pmcstat.c main, "compute printout widths":
/// `display_width = (int) floor(counter_width / 3.32193) + 1`.
const DISPLAY_WIDTH_64: usize = 20;

/// (field width, field skip) of one column, as pmcstat.c main computes
/// them: `header_width = strlen(ev->ev_name) + 2`, `+= 3` in system mode;
/// the larger of it and the display width; the skip is the difference.
fn layout(name: &str, system: bool) -> (usize, usize) {
    let header = name.len() + 2 + if system { 3 } else { 0 };
    if header > DISPLAY_WIDTH_64 {
        (header, 0)
    } else {
        (DISPLAY_WIDTH_64, DISPLAY_WIDTH_64 - header)
    }
}

/// pmcstat_print_headers: PRINT_HEADER_PREFIX `"# "`, then per column
/// `"%*s"` of `ev_fieldskip` spaces and `"p/%*s "` (w = fieldwidth -
/// fieldskip - 2) or `"s/%02d/%-*s "` (w - 3).
fn header(columns: &[(&str, Option<u32>)]) -> String {
    let mut out = String::from("# ");
    for &(name, cpu) in columns {
        let (width, skip) = layout(name, cpu.is_some());
        out.push_str(&" ".repeat(skip));
        let w = width - skip - 2;
        match cpu {
            Some(cpu) => out.push_str(&format!("s/{cpu:02}/{name:<0$} ", w - 3)),
            None => out.push_str(&format!("p/{name:>w$} ")),
        }
    }
    out
}

/// pmcstat_print_counters: `"%*ju "` of `ev_fieldwidth + extra_width`, the
/// extra being `sizeof(PRINT_HEADER_PREFIX) - 1` for the first column only.
fn values(columns: &[(&str, Option<u32>)], values: &[u64]) -> String {
    let mut out = String::new();
    let mut extra = 2;
    for (&(name, cpu), v) in columns.iter().zip(values) {
        let (width, _) = layout(name, cpu.is_some());
        out.push_str(&format!("{v:>0$} ", width + extra));
        extra = 0;
    }
    out
}

/// Splits the table pmcstat printed into its header and value lines, and
/// checks it against the formats: pmcstat_print_pmcs prints the header at
/// the first line, then `"\n"` and the values; the final `"\n"` at exit.
/// Returns the value lines' numbers.
fn check_table(
    out: &str,
    columns: &[(&str, Option<u32>)],
    final_newline: bool,
) -> Result<Vec<Vec<u64>>, libtest_mimic::Failed> {
    let expected_header = header(columns);
    let body = if final_newline {
        out.strip_suffix('\n')
            .ok_or_else(|| format!("no final newline: {out:?}"))?
    } else {
        ensure!(!out.ends_with('\n'), "a final newline after -o: {out:?}");
        out
    };
    let mut lines = body.split('\n');
    let first = lines.next().unwrap_or_default();
    ensure!(
        first == expected_header,
        "header\n  {first:?}\nexpected (pmcstat_print_headers)\n  {expected_header:?}"
    );
    let mut rows = Vec::new();
    for line in lines {
        let numbers: Vec<u64> = line
            .split_whitespace()
            .map(str::parse)
            .collect::<Result<_, _>>()
            .ctx(&format!("value line {line:?}"))?;
        let expected = values(columns, &numbers);
        ensure!(
            line == expected,
            "value line\n  {line:?}\nexpected (pmcstat_print_counters)\n  {expected:?}"
        );
        rows.push(numbers);
    }
    ensure!(!rows.is_empty(), "no value line: {out:?}");
    Ok(rows)
}

fn process_columns_are_pmcstat_c_s_and_exit_ex_ok() -> TestResult {
    // `false` exits 1; pmcstat.c ends main with exit(EX_OK) whatever it.
    let out = pmcstat(&[
        "-p",
        "task-clock,usr",
        "-p",
        "page-faults,usr",
        "--",
        "false",
    ])?;
    let err = text(&out.stderr);
    ensure!(
        out.status.code() == Some(0),
        "status {:?} (pmcstat.c: exit(EX_OK)): {err}",
        out.status
    );
    // The name is cut at the first `,`, space or tab (strcspn(optarg, ", \t")).
    let rows = check_table(&err, &[("task-clock", None), ("page-faults", None)], true)?;
    ensure!(rows.len() == 1, "one line for a short run: {err:?}");
    ensure!(rows[0][1] > 0, "page faults of a program: {err:?}");
    Ok(())
}

fn system_counting_prints_one_column_per_cpu() -> TestResult {
    let two = pmc::global::online_cpus().contains(&1);
    let list = if two { "0-1" } else { "0" };
    let out = pmcstat(&["-s", "context-switches", "-c", list, "-l", "0.2"])?;
    let err = text(&out.stderr);
    ensure!(
        out.status.code() == Some(0),
        "status {:?}: {err}",
        out.status
    );
    // pmcstat.c clones a system PMC per CPU of the mask, in CPU order.
    let mut columns = vec![("context-switches", Some(0))];
    if two {
        columns.push(("context-switches", Some(1)));
    }
    check_table(&err, &columns, true)?;
    Ok(())
}

fn w_prints_a_line_per_interval_and_one_header() -> TestResult {
    let out = pmcstat(&["-w", "0.2", "-p", "page-faults,usr", "--", "sleep", "1.5"])?;
    let err = text(&out.stderr);
    ensure!(
        out.status.code() == Some(0),
        "status {:?}: {err}",
        out.status
    );
    // The header once (DEFAULT_DISPLAY_HEIGHT 256 lines to a file), a
    // line per timer tick, the last one at the exit.
    let rows = check_table(&err, &[("page-faults", None)], true)?;
    ensure!(rows.len() >= 3, "a line per 0.2 s over 1.5 s: {err:?}");
    Ok(())
}

fn without_w_the_timer_prints_every_5_seconds() -> TestResult {
    // pmcstat.c arms EVFILT_TIMER with pa_interval = DEFAULT_WAIT_INTERVAL
    // (5.0) whatever -w: a 6 s command gets a line at 5 s and one at exit.
    let out = pmcstat(&["-p", "page-faults,usr", "--", "sleep", "6"])?;
    let err = text(&out.stderr);
    ensure!(
        out.status.code() == Some(0),
        "status {:?}: {err}",
        out.status
    );
    let rows = check_table(&err, &[("page-faults", None)], true)?;
    ensure!(rows.len() == 2, "lines at 5 s and at the exit: {err:?}");
    Ok(())
}

fn c_toggles_cumulative_for_the_specs_after_it() -> TestResult {
    // -C toggles ev_cumulative for the specifiers after it: the first
    // column is cumulative, the second (after a second -C) is not.
    let out = pmcstat(&[
        "-w",
        "0.2",
        "-C",
        "-p",
        "page-faults,usr",
        "-C",
        "-p",
        "page-faults,usr",
        "--",
        "sh",
        "-c",
        "for i in 1 2 3 4 5 6; do ls / >/dev/null; sleep 0.2; done",
    ])?;
    let err = text(&out.stderr);
    ensure!(
        out.status.code() == Some(0),
        "status {:?}: {err}",
        out.status
    );
    let rows = check_table(&err, &[("page-faults", None), ("page-faults", None)], true)?;
    ensure!(rows.len() >= 2, "several intervals: {err:?}");
    let totals: Vec<u64> = rows.iter().map(|r| r[0]).collect();
    ensure!(
        totals.windows(2).all(|w| w[0] <= w[1]),
        "cumulative column decreases: {totals:?}"
    );
    let deltas: u64 = rows.iter().map(|r| r[1]).sum();
    ensure!(
        deltas == *totals.last().unwrap_or(&0),
        "the deltas sum to {deltas}, the cumulative column ends at {totals:?}"
    );
    Ok(())
}

fn o_file_has_no_final_newline() -> TestResult {
    let dir = tempdir()?;
    let file = dir.join("counts");
    let path = file.to_str().ok_or("temp path not UTF-8")?;
    let out = pmcstat(&["-o", path, "-p", "page-faults,usr", "--", "true"])?;
    ensure!(
        out.status.code() == Some(0),
        "status {:?}: {}",
        out.status,
        text(&out.stderr)
    );
    let written = std::fs::read_to_string(&file).ctx("read -o file")?;
    // -o sets FLAG_DO_PRINT, which skips pmcstat.c's "final newline".
    check_table(&written, &[("page-faults", None)], false)?;
    std::fs::remove_dir_all(&dir).ctx("remove temp dir")?;
    Ok(())
}

fn tempdir() -> Result<std::path::PathBuf, libtest_mimic::Failed> {
    let dir = std::env::temp_dir().join(format!("pmcstat-freebsd-{}", std::process::id()));
    std::fs::create_dir_all(&dir).ctx("temp dir")?;
    Ok(dir)
}

fn t_takes_a_regular_expression_over_process_names() -> TestResult {
    // A process with a name no other has: a copy of sleep.
    let dir = tempdir()?;
    let name = format!("pmct{}", std::process::id() % 100_000);
    let copy = dir.join(&name);
    std::fs::copy("/bin/sleep", &copy).ctx("copy sleep")?;
    let mut child = Command::new(&copy).arg("30").spawn().ctx("spawn")?;
    // pmcstat_find_targets: not a number, so a regcomp(REG_EXTENDED) over
    // ki_comm of every process.
    let pattern = format!("^pmc[t]{}$", &name[4..]);
    let out = pmcstat(&["-p", "context-switches,usr", "-t", &pattern, "-l", "0.3"]);
    let _ = child.kill();
    let _ = child.wait();
    let out = out?;
    let err = text(&out.stderr);
    ensure!(
        out.status.code() == Some(0),
        "status {:?}: {err}",
        out.status
    );
    check_table(&err, &[("context-switches", None)], true)?;
    // Nothing matching: errx(EX_DATAERR, "ERROR: No matching target processes.").
    let none = pmcstat(&["-p", "context-switches", "-t", "^no such process name$"])?;
    ensure!(
        none.status.code() == Some(EX_DATAERR),
        "no match: {:?} {}",
        none.status,
        text(&none.stderr)
    );
    // A bad pattern: err(EX_DATAERR, "ERROR: Failed to compile regex …").
    let bad = pmcstat(&["-p", "context-switches", "-t", "(unclosed"])?;
    ensure!(
        bad.status.code() == Some(EX_DATAERR),
        "bad regex: {:?} {}",
        bad.status,
        text(&bad.stderr)
    );
    std::fs::remove_dir_all(&dir).ctx("remove temp dir")?;
    Ok(())
}

fn p_without_o_prints_the_log() -> TestResult {
    // Without -O and a report, pmcstat.c reads the log through a pipe and
    // prints it (FLAG_HAS_PIPE, FLAG_DO_PRINT) to pa_printfile, stderr.
    let out = pmcstat(&[
        "-n",
        "100000",
        "-P",
        "cpu-clock,usr",
        "--",
        "sh",
        "-c",
        "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done",
    ])?;
    let err = text(&out.stderr);
    ensure!(
        out.status.code() == Some(0),
        "status {:?}: {err}",
        out.status
    );
    // pmcstat_log.c pmcstat_print_log: the first record, INITIALIZE, is
    // PMCSTAT_PRINT_ENTRY("initlog", …); samples are "callchain" entries.
    ensure!(
        err.lines().next().is_some_and(|l| l.starts_with("initlog")),
        "the printed log starts with its initialize record: {err}"
    );
    ensure!(
        err.lines().any(|l| l.starts_with("callchain")),
        "samples are printed: {err}"
    );
    Ok(())
}

fn error_paths_exit_with_pmcstat_c_s_sysexits() -> TestResult {
    for (args, status, why) in [
        // getopt's '?' → pmcstat_show_usage → errx(EX_USAGE, …).
        (vec!["-Y"], EX_USAGE, "unknown option"),
        (vec!["-p"], EX_USAGE, "missing argument"),
        // errx(EX_USAGE, "ERROR: Illegal wait interval value …").
        (
            vec!["-w", "0", "-p", "task-clock", "--", "true"],
            EX_USAGE,
            "-w 0",
        ),
        // errx(EX_USAGE, "ERROR: Illegal count value …").
        (
            vec!["-n", "0", "-P", "cpu-clock", "--", "true"],
            EX_USAGE,
            "-n 0",
        ),
        // pmc_allocate fails: err(EX_OSERR, "ERROR: Cannot allocate
        // %s-mode pmc with specification \"%s\"").
        (
            vec!["-p", "no-such-event-anywhere", "--", "true"],
            EX_OSERR,
            "unknown event",
        ),
        // The child's execvp fails: err(EX_OSERR, "ERROR: execvp \"%s\" failed").
        (
            vec!["-p", "task-clock", "--", "/no/such/program"],
            EX_OSERR,
            "command that cannot run",
        ),
        // "option -O is required if counting and sampling PMCs are
        // specified together" (EX_USAGE).
        (
            vec!["-p", "task-clock", "-P", "cpu-clock", "--", "true"],
            EX_USAGE,
            "counting and sampling without -O",
        ),
    ] {
        let out = pmcstat(&args)?;
        ensure!(
            out.status.code() == Some(status),
            "{why} ({args:?}): status {:?}, expected {status}: {}",
            out.status,
            text(&out.stderr)
        );
        let err = text(&out.stderr);
        ensure!(!err.contains("panicked"), "{why}: {err}");
    }
    Ok(())
}

fn a_closed_pipe_or_a_full_file_does_not_panic() -> TestResult {
    // The reader of standard error is gone before pmcstat writes.
    let (reader, writer) = std::io::pipe().ctx("pipe")?;
    drop(reader);
    let out = Command::new(PMCSTAT)
        .args(["-p", "task-clock,usr", "--", "true"])
        .stdout(Stdio::null())
        .stderr(writer)
        .output()
        .ctx("pmcstat")?;
    // FreeBSD's pmcstat dies of SIGPIPE there: the shell's 128 + 13.
    ensure!(
        out.status.code() == Some(141),
        "closed pipe: status {:?} (101 is a panic)",
        out.status
    );
    // A write error other than EPIPE says so and exits EX_IOERR.
    if std::path::Path::new("/dev/full").exists() {
        let out = pmcstat(&["-o", "/dev/full", "-p", "task-clock,usr", "--", "true"])?;
        let err = text(&out.stderr);
        ensure!(
            out.status.code() == Some(EX_IOERR) && err.contains("No space left"),
            "-o /dev/full: status {:?}: {err}",
            out.status
        );
    }
    Ok(())
}
