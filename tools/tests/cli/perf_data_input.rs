//! `pmcstat -R perf.data`: the files this machine's `perf record` writes
//! of Debian programs (dash, gzip), in file and pipe mode, feed the dump
//! and every report; `-G`'s sample total is perf's sample count exactly;
//! `-O` converts to a pmclog that reads back the same; a file that is
//! neither format, and a perf.data cut short, say so.

use std::process::{Command, Output, Stdio};

use pmc::probe::Requirement as R;

use crate::ensure;
use crate::harness::{Context, LiveTest, TestResult, test};
use crate::temp::TempDir;

const PMCSTAT: &str = env!("CARGO_BIN_EXE_pmcstat");

/// A dash loop long enough for a few hundred samples at perf's 4 kHz.
const DASH_LOOP: &str = "i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done";

fn needs(programs: &[&str]) -> Vec<R> {
    let mut r = vec![R::Paranoid(2), R::Program("perf".into())];
    r.extend(programs.iter().map(|p| R::Program((*p).into())));
    r
}

pub fn tests() -> Vec<LiveTest> {
    vec![
        test(
            "perf_data_input::every_report_reads_a_perf_data",
            needs(&["dash"]),
            every_report_reads_a_perf_data,
        ),
        test(
            "perf_data_input::g_counts_perfs_samples_in_file_and_pipe_mode",
            needs(&["dash"]),
            g_counts_perfs_samples_in_file_and_pipe_mode,
        ),
        test(
            "perf_data_input::o_converts_to_a_pmclog_that_reports_the_same",
            needs(&["dash"]),
            o_converts_to_a_pmclog_that_reports_the_same,
        ),
        test(
            "perf_data_input::dwarf_stacks_of_gzip_are_unwound",
            needs(&["gzip"]),
            dwarf_stacks_of_gzip_are_unwound,
        ),
        test(
            "perf_data_input::a_file_that_is_neither_says_so",
            Vec::new(),
            a_file_that_is_neither_says_so,
        ),
        test(
            "perf_data_input::a_perf_data_cut_short_reports_the_records_before_the_cut",
            needs(&["dash"]),
            a_perf_data_cut_short_reports_the_records_before_the_cut,
        ),
    ]
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// `perf record -e cpu-clock:u OPTIONS -o OUT -- COMMAND`; `OUT` `-`
/// writes the pipe mode stream into `data`.
fn record(data: &str, options: &[&str], pipe: bool, command: &[&str]) -> TestResult {
    let mut cmd = Command::new("perf");
    cmd.args(["record", "-q", "-e", "cpu-clock:u"])
        .args(options);
    if pipe {
        cmd.args(["-o", "-"])
            .stdout(std::fs::File::create(data).ctx("create the pipe file")?);
    } else {
        cmd.args(["-o", data]).stdout(Stdio::null());
    }
    let out = cmd
        .arg("--")
        .args(command)
        .stdin(Stdio::null())
        .output()
        .ctx("perf record")?;
    ensure!(
        out.status.success(),
        "perf record {options:?}: {:?}\n{}",
        out.status,
        text(&out.stderr)
    );
    Ok(())
}

fn dash_loop() -> [&'static str; 3] {
    ["dash", "-c", DASH_LOOP]
}

fn pmcstat(args: &[&str]) -> Result<Output, libtest_mimic::Failed> {
    Command::new(PMCSTAT)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .ctx("run pmcstat")
}

fn pmcstat_ok(args: &[&str]) -> Result<Output, libtest_mimic::Failed> {
    let out = pmcstat(args)?;
    ensure!(
        out.status.success(),
        "pmcstat {args:?}: {:?}\n{}",
        out.status,
        text(&out.stderr)
    );
    Ok(out)
}

/// The samples `-G` counts: the sum of its `@ EVENT [N samples]` headers.
fn graph_total(graph: &str) -> Option<u64> {
    let totals: Vec<u64> = graph
        .lines()
        .filter(|l| l.starts_with("@ "))
        .filter_map(|l| {
            let n = l.rsplit_once('[')?.1.strip_suffix(" samples]")?;
            n.parse().ok()
        })
        .collect();
    (!totals.is_empty()).then(|| totals.iter().sum())
}

/// perf's own count of the samples in `data` (`perf script`, one line per
/// sample), checked against `perf report --stats`.
fn perf_samples(data: &str) -> Result<u64, libtest_mimic::Failed> {
    let script = crate::run_ok("perf", &["script", "-G", "-F", "tid,time", "-i", data])?;
    let lines = text(&script.stdout)
        .lines()
        .filter(|l| !l.trim().is_empty())
        .count() as u64;
    let stats = crate::run_ok("perf", &["report", "--stats", "-i", data])?;
    let stats = text(&stats.stdout);
    let reported = stats
        .lines()
        .find(|l| l.trim_start().starts_with("SAMPLE events:"))
        .and_then(|l| l.split_whitespace().nth(2)?.parse::<u64>().ok());
    ensure!(
        reported == Some(lines),
        "perf script printed {lines} samples, perf report --stats says {reported:?}\n{stats}"
    );
    Ok(lines)
}

fn every_report_reads_a_perf_data() -> TestResult {
    let dir = TempDir::new("perf-data-reports")?;
    let data = dir.path("perf.data");
    record(&data, &["-g"], false, &dash_loop())?;
    // The dump: the records as the live log would have them.
    let dump = text(&pmcstat_ok(&["-R", &data])?.stdout);
    for what in [
        "initlog",
        "allocatedyn 0x0 \"cpu-clock:u\"",
        "exec ",
        "map-in ",
        "callchain ",
        "closelog",
    ] {
        ensure!(dump.contains(what), "the dump has no {what:?}:\n{dump}");
    }
    ensure!(
        dump.contains("/dash\""),
        "no record names dash's path:\n{dump}"
    );
    let files: [(&str, &[&str]); 8] = [
        ("g.txt", &["-G"]),
        ("f.txt", &["--folded"]),
        ("c.out", &["-F"]),
        ("p.pb.gz", &["--pprof"]),
        ("fg.svg", &["--flamegraph"]),
        ("a.txt", &["-a"]),
        ("m.txt", &["-m"]),
        ("gmon", &["-g", "-D"]),
    ];
    for (name, options) in files {
        let path = dir.path(name);
        let mut args = vec!["-R", &data];
        args.extend(options);
        args.push(&path);
        pmcstat_ok(&args)?;
        let size = if name == "gmon" {
            // DIR/EVENT/OBJECT.gmon: dash's among them.
            let event = dir.join("gmon").join("cpu-clock:u");
            let dash = std::fs::metadata(event.join("dash.gmon"));
            dash.map(|m| m.len()).unwrap_or(0)
        } else {
            std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0)
        };
        ensure!(size > 0, "pmcstat {args:?} wrote nothing to {path}");
    }
    let graph = std::fs::read_to_string(dir.join("g.txt")).ctx("read -G")?;
    ensure!(
        graph.contains("@ /usr/bin/dash") || graph.contains("/dash"),
        "-G names no dash function:\n{graph}"
    );
    Ok(())
}

fn g_counts_perfs_samples_in_file_and_pipe_mode() -> TestResult {
    let dir = TempDir::new("perf-data-counts")?;
    for pipe in [false, true] {
        let data = dir.path(if pipe { "pipe.data" } else { "file.data" });
        record(&data, &["-g"], pipe, &dash_loop())?;
        let perfs = perf_samples(&data)?;
        ensure!(perfs > 50, "only {perfs} samples in {data}");
        let graph = text(&pmcstat_ok(&["-R", &data, "-G", "-"])?.stdout);
        let ours = graph_total(&graph);
        ensure!(
            ours == Some(perfs),
            "{data}: -G counts {ours:?} samples, perf {perfs}"
        );
        // Standard input: a pipe mode stream as perf record -o - writes it.
        if pipe {
            let out = Command::new(PMCSTAT)
                .args(["-R", "-", "-G", "-"])
                .stdin(std::fs::File::open(&data).ctx("open the pipe file")?)
                .output()
                .ctx("pmcstat -R -")?;
            ensure!(out.status.success(), "-R -: {}", text(&out.stderr));
            let ours = graph_total(&text(&out.stdout));
            ensure!(ours == Some(perfs), "-R - counts {ours:?}, perf {perfs}");
        }
    }
    Ok(())
}

fn o_converts_to_a_pmclog_that_reports_the_same() -> TestResult {
    let dir = TempDir::new("perf-data-convert")?;
    let data = dir.path("perf.data");
    record(&data, &["-g"], false, &dash_loop())?;
    let log = dir.path("out.pmclog");
    let out = pmcstat_ok(&["-R", &data, "-O", &log])?;
    ensure!(
        out.stdout.is_empty(),
        "-O printed a dump:\n{}",
        text(&out.stdout)
    );
    let from_log = text(&pmcstat_ok(&["-R", &log, "-G", "-"])?.stdout);
    let from_data = text(&pmcstat_ok(&["-R", &data, "-G", "-"])?.stdout);
    ensure!(
        from_log == from_data,
        "-R LOG -G differs from -R perf.data -G:\n{from_log}\n---\n{from_data}"
    );
    let dump = text(&pmcstat_ok(&["-R", &log])?.stdout);
    ensure!(
        dump.lines().last() == Some("closelog  "),
        "the converted log does not end with CLOSELOG"
    );
    // Each CALLCHAIN is one of perf's samples: its thread and perf's time
    // of it, in perf's order.
    let ours = log_samples(&log)?;
    let theirs = perf_tid_times(&data)?;
    ensure!(
        ours == theirs,
        "(tid, time) of {} CALLCHAINs differ from perf script's {} samples (first: {:?} vs {:?})",
        ours.len(),
        theirs.len(),
        ours.first(),
        theirs.first()
    );
    Ok(())
}

/// The (tid, timestamp) of a pmclog's CALLCHAIN records, in order.
fn log_samples(log: &str) -> Result<Vec<(u32, u64)>, libtest_mimic::Failed> {
    let file = std::fs::File::open(log).ctx("open the converted log")?;
    let mut out = Vec::new();
    for e in pmc::log::LogReader::from_reader(std::io::BufReader::new(file)) {
        let e = e.ctx("read the converted log")?;
        if let pmc::log::LogRecord::Callchain { tid, .. } = e.record {
            out.push((tid, e.timestamp));
        }
    }
    Ok(out)
}

/// `perf script -F tid,time --ns`: each sample's thread and time in ns.
fn perf_tid_times(data: &str) -> Result<Vec<(u32, u64)>, libtest_mimic::Failed> {
    let out = crate::run_ok(
        "perf",
        &["script", "-G", "-F", "tid,time", "--ns", "-i", data],
    )?;
    let mut samples = Vec::new();
    for line in text(&out.stdout).lines() {
        let mut f = line.split_whitespace();
        let (Some(tid), Some(time)) = (f.next(), f.next()) else {
            continue;
        };
        let Some((s, ns)) = time.trim_end_matches(':').split_once('.') else {
            continue;
        };
        let (Ok(tid), Ok(s), Ok(ns)) = (tid.parse(), s.parse::<u64>(), ns.parse::<u64>()) else {
            continue;
        };
        samples.push((tid, s * 1_000_000_000 + ns));
    }
    Ok(samples)
}

fn dwarf_stacks_of_gzip_are_unwound() -> TestResult {
    let dir = TempDir::new("perf-data-dwarf")?;
    let input = dir.join("input");
    // Something to compress for a few hundred milliseconds.
    let mut bytes = Vec::with_capacity(4 << 20);
    let mut x: u32 = 1;
    while bytes.len() < 4 << 20 {
        x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
        bytes.push(b'a' + (x >> 16) as u8 % 8);
    }
    std::fs::write(&input, bytes).ctx("write gzip's input")?;
    let data = dir.path("dwarf.data");
    let input = input.to_string_lossy().into_owned();
    record(
        &data,
        &["--call-graph", "dwarf"],
        false,
        &["gzip", "-9", "-k", "-f", &input],
    )?;
    let perfs = perf_samples(&data)?;
    let graph = text(&pmcstat_ok(&["-R", &data, "-G", "-"])?.stdout);
    ensure!(
        graph_total(&graph) == Some(perfs),
        "-G counts {:?}, perf {perfs}",
        graph_total(&graph)
    );
    // Unwound from the stack copies: gzip's stacks reach main's caller.
    ensure!(
        graph.contains("__libc_start_call_main"),
        "no stack unwound to __libc_start_call_main:\n{graph}"
    );
    Ok(())
}

fn a_file_that_is_neither_says_so() -> TestResult {
    let dir = TempDir::new("perf-data-neither")?;
    let path = dir.path("neither");
    std::fs::write(&path, b"neither a pmclog nor a perf.data\n").ctx("write")?;
    for report in [&[][..], &["-G", "-"][..]] {
        let mut args = vec!["-R", path.as_str()];
        args.extend(report);
        let out = pmcstat(&args)?;
        let err = text(&out.stderr);
        ensure!(
            out.status.code() == Some(65)
                && err.contains("not a pmclog")
                && err.contains("nor a perf.data"),
            "pmcstat {args:?}: {:?} {err}",
            out.status
        );
    }
    // perf's magic on a broken header: not a readable perf.data.
    let mut bad = b"PERFILE2".to_vec();
    bad.extend_from_slice(&[0xff; 96]);
    std::fs::write(&path, bad).ctx("write")?;
    let out = pmcstat(&["-R", &path])?;
    let err = text(&out.stderr);
    ensure!(
        out.status.code() == Some(65) && err.contains("perf.data"),
        "a broken perf.data: {:?} {err}",
        out.status
    );
    Ok(())
}

fn a_perf_data_cut_short_reports_the_records_before_the_cut() -> TestResult {
    let dir = TempDir::new("perf-data-cut")?;
    let data = dir.path("perf.data");
    record(&data, &[], false, &dash_loop())?;
    let whole = graph_total(&text(&pmcstat_ok(&["-R", &data, "-G", "-"])?.stdout))
        .ok_or("no samples in the whole file")?;
    let bytes = std::fs::read(&data).ctx("read perf.data")?;
    let cut = dir.path("cut.data");
    // Into the data, away from its end (the features follow it).
    std::fs::write(&cut, &bytes[..bytes.len() / 2]).ctx("write the cut file")?;
    for report in [&["-G", "-"][..], &[][..]] {
        let mut args = vec!["-R", cut.as_str()];
        args.extend(report);
        let out = pmcstat_ok(&args)?;
        let err = text(&out.stderr);
        ensure!(
            err.contains("cut short") && err.contains("records read before it"),
            "pmcstat {args:?} gave no warning: {err}"
        );
        if !report.is_empty() {
            let n = graph_total(&text(&out.stdout)).unwrap_or(0);
            ensure!(
                n > 0 && n < whole,
                "the cut file gives {n} samples, the whole {whole}"
            );
        }
    }
    Ok(())
}
