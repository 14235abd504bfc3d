//! How `pmcstat -R` reads a log that does not end as it should: the dump
//! prints each record as it reads it (memory independent of the log's
//! length), a corrupt record ends it with pmcstat_log.c's "event parsing
//! failed (record N, offset 0x…)" and EX_DATAERR after the records before
//! it, and a log without CLOSELOG (the recording was killed, or its disk
//! filled) is read with one warning that it was cut short, by the dump and
//! by every report.

use std::process::{Command, Output, Stdio};

use pmc::log::{LogReader, LogRecord, LogWriter};
use pmc::probe::Requirement as R;

use crate::ensure;
use crate::harness::{Context, LiveTest, TestResult, test};
use crate::temp::TempDir;

const PMCSTAT: &str = env!("CARGO_BIN_EXE_pmcstat");

pub fn tests() -> Vec<LiveTest> {
    vec![
        test(
            "log_endings::dump_of_a_large_log_holds_little_memory",
            vec![R::Program("time".into())],
            dump_of_a_large_log_holds_little_memory,
        ),
        test(
            "log_endings::dump_prints_the_records_before_a_bad_one_then_the_error",
            vec![],
            dump_prints_the_records_before_a_bad_one_then_the_error,
        ),
        test(
            "log_endings::a_log_cut_short_is_read_with_one_warning",
            vec![],
            a_log_cut_short_is_read_with_one_warning,
        ),
    ]
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A sample as pmcstat logs one: a user callchain of `depth` pcs.
fn sample(i: u64, depth: u64) -> LogRecord {
    LogRecord::Callchain {
        pid: 100,
        tid: 101,
        pmcid: 0x1,
        cpu: 0,
        userspace: true,
        pcs: (0..depth).map(|d| 0x40_1000 + i % 64 + d * 0x100).collect(),
    }
}

/// A log of INITIALIZE, `samples` samples and, when `close`, CLOSELOG.
fn log_bytes(samples: u64, close: bool) -> Result<Vec<u8>, libtest_mimic::Failed> {
    let mut w = LogWriter::new(Vec::new(), &pmc::global::this_machine()).ctx("LogWriter::new")?;
    w.write(
        &LogRecord::PmcAllocateDyn {
            pmcid: 0x1,
            event: 0,
            flags: 0,
            name: "cpu-clock".into(),
        },
        1,
    )
    .ctx("write the allocation")?;
    for i in 0..samples {
        w.write(&sample(i, 8), 2 + i).ctx("write a sample")?;
    }
    if close {
        w.close().ctx("close the log")?;
    } else {
        w.flush().ctx("flush the log")?;
    }
    Ok(w.into_inner())
}

/// Each record of `bytes` with its offset, as pmclog(3) reads them.
fn records_of(bytes: &[u8]) -> Result<Vec<(u64, LogRecord)>, libtest_mimic::Failed> {
    let mut reader = LogReader::from_memory();
    reader.feed(bytes);
    reader
        .map(|e| e.map(|e| (e.offset, e.record)))
        .collect::<Result<_, _>>()
        .ctx("read the generated log")
}

/// What `pmcstat -R` prints of `records`: each record's text, one a line.
fn dump_text<'a>(records: impl IntoIterator<Item = &'a LogRecord>) -> String {
    records.into_iter().map(|r| format!("{r}\n")).collect()
}

fn pmcstat(args: &[&str]) -> Result<Output, libtest_mimic::Failed> {
    Command::new(PMCSTAT)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .ctx("run pmcstat")
}

/// The dump's memory does not grow with the log: a 50 MB log is dumped in
/// under 64 MB of peak RSS (it printed nothing until the whole log was in
/// memory, about 4.5 times its size, before).
fn dump_of_a_large_log_holds_little_memory() -> TestResult {
    let dir = TempDir::new("log-endings")?;
    let log = dir.path("large.pmclog");
    {
        use std::io::Write;
        let file = std::fs::File::create(&log).ctx("create the log")?;
        let mut w = LogWriter::new(std::io::BufWriter::new(file), &pmc::global::this_machine())
            .ctx("LogWriter::new")?;
        // 104-byte samples: 500 000 of them make 52 MB.
        for i in 0..500_000 {
            w.write(&sample(i, 9), i).ctx("write a sample")?;
        }
        w.close().ctx("close the log")?;
        w.into_inner().flush().ctx("flush the log")?;
    }
    let size = std::fs::metadata(&log).ctx("stat the log")?.len();
    ensure!(size > 50_000_000, "the log has {size} bytes");
    let out = Command::new("time")
        .args(["-f", "maxrss_kib=%M", PMCSTAT, "-R", &log])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .output()
        .ctx("run pmcstat under time(1)")?;
    let err = text(&out.stderr);
    let rss_kib: u64 = err
        .lines()
        .find_map(|l| l.strip_prefix("maxrss_kib=")?.trim().parse().ok())
        .ok_or_else(|| format!("no maxrss in time(1)'s output: {err}"))?;
    println!("dump of a {size}-byte log: peak RSS {rss_kib} KiB");
    ensure!(out.status.success(), "pmcstat -R: {:?}: {err}", out.status);
    ensure!(
        rss_kib < 64 * 1024,
        "pmcstat -R of a {size}-byte log peaked at {rss_kib} KiB of RSS (cap 64 MiB)"
    );
    Ok(())
}

/// A record with a bad header at index k (INITIALIZE is index 0): the
/// dump prints the k records before it, then pmcstat_print_log's error
/// naming it as FreeBSD counts it (record k + 1, `pl_count + 1`) at its
/// offset, and exits EX_DATAERR.
fn dump_prints_the_records_before_a_bad_one_then_the_error() -> TestResult {
    let dir = TempDir::new("log-endings")?;
    let bytes = log_bytes(20, true)?;
    let records = records_of(&bytes)?;
    for k in [1usize, 7, records.len() - 1] {
        let (offset, _) = records[k];
        let mut bad = bytes.clone();
        // The header's top byte is the magic (native order: byte 3 on a
        // little-endian machine).
        let magic_at = offset as usize + if cfg!(target_endian = "little") { 3 } else { 0 };
        bad[magic_at] = 0x12;
        let path = dir.path(&format!("bad-at-{k}.pmclog"));
        std::fs::write(&path, &bad).ctx("write the log")?;
        let out = pmcstat(&["-R", &path])?;
        let err = text(&out.stderr);
        let expected = dump_text(records[..k].iter().map(|(_, r)| r));
        ensure!(
            text(&out.stdout) == expected,
            "bad record at {k}: stdout\n{}\nexpected\n{expected}",
            text(&out.stdout)
        );
        // pmcstat_log.c: errx(EX_DATAERR, "ERROR: event parsing failed
        // (record %jd, offset 0x%jx).", pl_count + 1, pl_offset).
        let named = format!(
            "pmcstat: ERROR: event parsing failed (record {}, offset {offset:#x}).",
            k + 1
        );
        ensure!(
            out.status.code() == Some(65) && err.lines().next() == Some(named.as_str()),
            "bad record at {k}: {:?}, stderr {err:?}, expected 65 and {named:?}",
            out.status
        );
    }
    // The log unharmed still dumps whole.
    let path = dir.path("whole.pmclog");
    std::fs::write(&path, &bytes).ctx("write the log")?;
    let out = pmcstat(&["-R", &path])?;
    ensure!(
        out.status.success()
            && text(&out.stdout) == dump_text(records.iter().map(|(_, r)| r))
            && out.stderr.is_empty(),
        "whole log: {:?}, stderr {}",
        out.status,
        text(&out.stderr)
    );
    Ok(())
}

/// A log without CLOSELOG, and one whose last record is cut in the middle:
/// the dump prints every whole record, `-G` reports them, each says once on
/// standard error that the recording was cut short, and both exit 0 (as
/// pmclog_read, which ends such a stream at PMCLOG_EOF: pmcstat.c exits
/// EX_OK there, silently).
fn a_log_cut_short_is_read_with_one_warning() -> TestResult {
    let dir = TempDir::new("log-endings")?;
    let unclosed = log_bytes(10, false)?;
    let records = records_of(&unclosed)?;
    let (last_offset, _) = *records.last().ok_or("no records")?;
    // Cut inside the last sample: the records before it are whole.
    let mid_record = unclosed[..last_offset as usize + 20].to_vec();
    for (name, bytes, whole) in [
        ("unclosed.pmclog", &unclosed, records.len()),
        ("mid-record.pmclog", &mid_record, records.len() - 1),
    ] {
        let path = dir.path(name);
        std::fs::write(&path, bytes).ctx("write the log")?;
        let warning = format!(
            "pmcstat: warning: {path} ends without CLOSELOG: the recording was cut short \
             (killed or out of space); reporting the {whole} records it holds"
        );
        let out = pmcstat(&["-R", &path])?;
        let err = text(&out.stderr);
        let expected = dump_text(records[..whole].iter().map(|(_, r)| r));
        ensure!(
            out.status.success() && text(&out.stdout) == expected,
            "{name}: dump {:?}, stdout\n{}\nexpected\n{expected}\nstderr {err}",
            out.status,
            text(&out.stdout)
        );
        ensure!(
            err.matches(&warning).count() == 1 && err.lines().count() == 1,
            "{name}: dump's stderr {err:?}, expected the one line {warning:?}"
        );
        let out = pmcstat(&["-R", &path, "-G", "-"])?;
        let err = text(&out.stderr);
        ensure!(
            out.status.success() && !out.stdout.is_empty(),
            "{name}: -G {:?}, stderr {err}",
            out.status
        );
        ensure!(
            err.matches(&warning).count() == 1,
            "{name}: -G's stderr {err:?}, expected {warning:?} once"
        );
        // The reports that read every event at once (-m) warn the same.
        let pcs = dir.path(&format!("{name}.pcs"));
        let out = pmcstat(&["-R", &path, "-m", &pcs])?;
        let err = text(&out.stderr);
        ensure!(
            out.status.success() && err.matches(&warning).count() == 1,
            "{name}: -m {:?}, stderr {err:?}, expected {warning:?} once",
            out.status
        );
    }
    Ok(())
}
