//! `--pprof-every SECS DIR`: a live system-wide run writes one pprof file
//! per second of samples, each read by go tool pprof, each holding the
//! log's samples of its second, together the whole log's `--pprof`, and
//! `-R` on the log writes the very same files.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use pmc::log::{LogReader, LogRecord};
use pmc::probe::Requirement as R;

use crate::ensure;
use crate::harness::{Context, LiveTest, TestResult, test};
use crate::temp::TempDir;

const PMCSTAT: &str = env!("CARGO_BIN_EXE_pmcstat");
const SEC: u64 = 1_000_000_000;

pub fn tests() -> Vec<LiveTest> {
    vec![
        test(
            "rolling_pprof::live_and_r_write_the_same_series_and_it_adds_up_to_the_log",
            // -S samples every CPU; go reads the files.
            vec![
                R::Paranoid(0),
                R::Program("go".into()),
                R::Program("dd".into()),
                R::Program("timeout".into()),
            ],
            live_and_r_write_the_same_series_and_it_adds_up_to_the_log,
        ),
        test(
            "rolling_pprof::dir_is_made_when_missing_and_a_file_there_is_refused",
            vec![],
            dir_is_made_when_missing_and_a_file_there_is_refused,
        ),
        test(
            "rolling_pprof::a_profile_that_cannot_be_written_is_said_and_leaves_no_part",
            vec![],
            a_profile_that_cannot_be_written_is_said_and_leaves_no_part,
        ),
    ]
}

fn s(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// What the log itself says: samples per one-second interval from its
/// first sample, and each interval's start as wall-clock nanoseconds
/// (INITIALIZE's time, at the first stamped record: pmc's writer stamps
/// INITIALIZE 0).
fn log_intervals(log: &Path) -> Result<(Vec<u64>, Vec<u64>), libtest_mimic::Failed> {
    let file = std::fs::File::open(log).ctx("open the log")?;
    let mut wall = None;
    let mut first_stamp = None;
    let mut origin = None;
    let mut per: BTreeMap<u64, u64> = BTreeMap::new();
    for e in LogReader::from_reader(file) {
        let e = e.ctx("read the log")?;
        if e.timestamp != 0 && first_stamp.is_none() {
            first_stamp = Some(e.timestamp);
        }
        match e.record {
            LogRecord::Initialize {
                tsc_freq,
                time_sec,
                time_nsec,
                ..
            } => {
                ensure!(
                    tsc_freq == SEC && e.timestamp == 0,
                    "pmc's log: ns stamps, INITIALIZE stamped 0"
                );
                wall = Some(time_sec * SEC + time_nsec);
            }
            LogRecord::Callchain { ref pcs, .. } if !pcs.is_empty() => {
                let origin = *origin.get_or_insert(e.timestamp);
                *per.entry(e.timestamp.saturating_sub(origin) / SEC)
                    .or_default() += 1;
            }
            _ => {}
        }
    }
    let (Some(wall), Some(first), Some(origin)) = (wall, first_stamp, origin) else {
        return Err("the log has no INITIALIZE or no samples".into());
    };
    let last = per.keys().last().copied().unwrap_or(0);
    let counts = (0..=last)
        .map(|k| per.get(&k).copied().unwrap_or(0))
        .collect();
    let starts = (0..=last)
        .map(|k| wall + origin + k * SEC - first)
        .collect();
    Ok((counts, starts))
}

/// `YYYYMMDDTHHMMSS.mmmZ.pb.gz` of wall-clock nanoseconds, by date(1).
fn expected_name(ns: u64) -> Result<String, libtest_mimic::Failed> {
    let out = Command::new("date")
        .args(["-u", "-d", &format!("@{}", ns / SEC), "+%Y%m%dT%H%M%S"])
        .output()
        .ctx("date")?;
    ensure!(out.status.success(), "date: {}", text(&out.stderr));
    Ok(format!(
        "{}.{:03}Z.pb.gz",
        text(&out.stdout).trim(),
        ns / 1_000_000 % 1000
    ))
}

/// A sample's labels and its stack: per location, what -raw shows of it
/// (function, file:line, inline frames), without its ids. Not addresses:
/// pprof holds one address space, and go tool pprof moves the locations
/// of one object mapped at several addresses (several processes of a
/// system-wide profile) onto one of them.
type Stack = (String, Vec<String>);

/// One profile as go tool pprof -raw shows it: the samples per stack
/// (every event's sample column summed).
struct Raw {
    stacks: BTreeMap<Stack, u64>,
    total: u64,
}

fn pprof_raw(file: &Path, home: &Path) -> Result<Raw, libtest_mimic::Failed> {
    let out = Command::new("go")
        .args(["tool", "pprof", "-raw"])
        .arg(file)
        // go wants a home and a cache; keep them out of the machine's.
        .env("HOME", home)
        .env("GOCACHE", home.join("gocache"))
        .env("PPROF_TMPDIR", home)
        .output()
        .ctx("go tool pprof -raw")?;
    let raw = text(&out.stdout);
    ensure!(
        out.status.success(),
        "go tool pprof -raw {}: {}",
        file.display(),
        text(&out.stderr)
    );
    let mut locations: BTreeMap<u64, String> = BTreeMap::new();
    let mut last = None;
    for line in raw
        .lines()
        .skip_while(|l| !l.starts_with("Locations"))
        .skip(1)
        .take_while(|l| l.starts_with(' '))
    {
        // `     7: 0x401000 M=1 name file:line s=0`; inline frames follow
        // on lines without an id.
        let located = line.trim_start().split_once(": 0x").and_then(|(id, rest)| {
            let id = id.parse::<u64>().ok()?;
            let (_address, shown) = rest.split_once(' ')?;
            let shown = match shown.split_once(' ') {
                Some((m, named)) if m.starts_with("M=") => named,
                _ => shown,
            };
            Some((id, shown.to_string()))
        });
        match (located, last) {
            (Some((id, shown)), _) => {
                locations.insert(id, shown);
                last = Some(id);
            }
            (None, Some(id)) => {
                if let Some(l) = locations.get_mut(&id) {
                    l.push_str(" | ");
                    l.push_str(line.trim());
                }
            }
            (None, None) => {}
        }
    }
    let mut stacks = BTreeMap::new();
    let mut total = 0;
    let mut pending: Option<(Vec<String>, u64)> = None;
    // Samples: `   v0 v1 v2 v3: loc loc …`, then its labels' line.
    for line in raw
        .lines()
        .skip_while(|l| !l.starts_with("Samples:"))
        .skip(2)
        .take_while(|l| l.starts_with(' '))
    {
        let sample = line.split_once(':').filter(|(values, _)| {
            !values.trim().is_empty() && values.split_whitespace().all(|v| v.parse::<u64>().is_ok())
        });
        if let Some((values, locations_of)) = sample {
            let values: Vec<u64> = values
                .split_whitespace()
                .map(|v| v.parse().ctx("a sample value"))
                .collect::<Result<_, _>>()?;
            let samples: u64 = values.iter().step_by(2).sum();
            let stack = locations_of
                .split_whitespace()
                .map(|id| {
                    id.parse::<u64>()
                        .ok()
                        .and_then(|id| locations.get(&id).cloned())
                        .ok_or_else(|| format!("location {id} not listed"))
                })
                .collect::<Result<Vec<String>, _>>()?;
            pending = Some((stack, samples));
        } else if let Some((stack, samples)) = pending.take() {
            total += samples;
            *stacks.entry((line.trim().to_string(), stack)).or_default() += samples;
        }
    }
    ensure!(pending.is_none(), "a sample without labels in -raw");
    Ok(Raw { stacks, total })
}

fn live_and_r_write_the_same_series_and_it_adds_up_to_the_log() -> TestResult {
    let dir = TempDir::new("rolling")?;
    let (log, live, from_log) = (dir.join("log"), dir.join("live"), dir.join("from-log"));
    // Sampled every millisecond per CPU while dd runs 3.5 s; `live` does
    // not exist yet and is created.
    let out = Command::new(PMCSTAT)
        .args(["-n", "1000000", "-S", "cpu-clock", "-O", &s(&log)])
        .args(["--pprof-every", "1", &s(&live), "--"])
        .args(["timeout", "3.5", "dd", "if=/dev/zero", "of=/dev/null"])
        .output()
        .ctx("pmcstat --pprof-every")?;
    ensure!(
        out.status.success(),
        "pmcstat --pprof-every: {:?}\n{}",
        out.status,
        text(&out.stderr)
    );
    let (counts, starts) = log_intervals(&log)?;
    println!("samples per second in the log: {counts:?}");
    let mut names: Vec<String> = std::fs::read_dir(&live)
        .ctx("read the series' directory")?
        .map(|e| e.map(|e| e.file_name().to_string_lossy().into_owned()))
        .collect::<Result<_, _>>()
        .ctx("list the series")?;
    names.sort();
    println!("live series: {names:?}");
    ensure!(
        names.len() == counts.len() && counts.len() >= 3,
        "{} files for the log's {} intervals: {names:?}",
        names.len(),
        counts.len()
    );
    let mut union: BTreeMap<Stack, u64> = BTreeMap::new();
    for ((name, count), start) in names.iter().zip(&counts).zip(&starts) {
        ensure!(
            *name == expected_name(*start)?,
            "{name} is not named by its interval's start {}",
            expected_name(*start)?
        );
        let raw = pprof_raw(&live.join(name), dir.dir())?;
        ensure!(
            raw.total == *count,
            "{name}: {} samples, the log has {count} in its interval\n{}",
            raw.total,
            text(&out.stderr)
        );
        for (stack, n) in raw.stacks {
            *union.entry(stack).or_default() += n;
        }
    }
    // The union is the whole log's profile, stack for stack. (Each
    // interval names pcs with the mappings logged until it closed, the
    // whole log's with all of them: a process that forked in one interval
    // and exec'd more than 2 s into the next could differ; none here.)
    let whole = dir.join("whole.pb.gz");
    crate::run_ok(PMCSTAT, &["-R", &s(&log), "--pprof", &s(&whole)])?;
    let whole = pprof_raw(&whole, dir.dir())?;
    ensure!(
        whole.total == counts.iter().sum::<u64>(),
        "--pprof has {} samples, the log {}",
        whole.total,
        counts.iter().sum::<u64>()
    );
    let differing = union
        .iter()
        .filter(|(k, v)| whole.stacks.get(*k) != Some(*v))
        .count();
    ensure!(
        union == whole.stacks,
        "the series' stacks differ from --pprof's: {differing} of {} differ, {} stacks in --pprof",
        union.len(),
        whole.stacks.len()
    );
    // -R on the log: the same files, byte for byte.
    crate::run_ok(
        PMCSTAT,
        &["-R", &s(&log), "--pprof-every", "1", &s(&from_log)],
    )?;
    for name in &names {
        let (a, b) = (
            std::fs::read(live.join(name)).ctx("read a live profile")?,
            std::fs::read(from_log.join(name)).ctx("read a profile of -R")?,
        );
        ensure!(a == b, "{name}: -R wrote other contents than the live run");
    }
    let again = std::fs::read_dir(&from_log)
        .ctx("list -R's series")?
        .count();
    ensure!(again == names.len(), "-R wrote {again} files");
    Ok(())
}

/// A log of pmc's own writer with one sample.
fn one_sample_log(log: &Path) -> TestResult {
    let out = std::fs::File::create(log).ctx("create the log")?;
    let mut w = pmc::log::LogWriter::new(out, &pmc::log::cpu::CpuIdentity::unknown())
        .ctx("start the log")?;
    let sample = LogRecord::Callchain {
        pid: 1,
        tid: 1,
        pmcid: 0x100,
        cpu: 0,
        userspace: true,
        pcs: vec![0x1000],
    };
    w.write(&sample, 5 * SEC).ctx("write a sample")?;
    w.close().ctx("close the log")?;
    Ok(())
}

/// DIR is created when missing, never made of something else: a file in
/// its place is refused before anything is read and stays as it was.
fn dir_is_made_when_missing_and_a_file_there_is_refused() -> TestResult {
    let dir = TempDir::new("rolling-file")?;
    let (log, file) = (dir.join("log"), dir.join("not-a-dir"));
    one_sample_log(&log)?;
    std::fs::write(&file, b"keep me").ctx("write the file")?;
    let out = Command::new(PMCSTAT)
        .args(["-R", &s(&log), "--pprof-every", "1", &s(&file)])
        .output()
        .ctx("pmcstat")?;
    let stderr = text(&out.stderr);
    ensure!(
        out.status.code() == Some(73) && stderr.contains("not a directory"),
        "exit {:?}: {stderr}",
        out.status
    );
    ensure!(
        std::fs::read(&file).ctx("read the file")? == b"keep me",
        "the file was changed"
    );
    // A missing directory, two levels deep, is created and gets the one
    // profile.
    let deep = dir.join("a/b");
    crate::run_ok(PMCSTAT, &["-R", &s(&log), "--pprof-every", "1", &s(&deep)])?;
    let files: Vec<_> = std::fs::read_dir(&deep).ctx("list")?.collect();
    ensure!(
        files.len() == 1,
        "{} files in {}",
        files.len(),
        deep.display()
    );
    Ok(())
}

/// A profile whose name is taken by a directory cannot be renamed into
/// place: the error names the file with its errno and what to do, exit
/// 74, no temporary file stays, and the log is untouched.
fn a_profile_that_cannot_be_written_is_said_and_leaves_no_part() -> TestResult {
    let dir = TempDir::new("rolling-error")?;
    let (log, first, blocked) = (dir.join("log"), dir.join("first"), dir.join("blocked"));
    one_sample_log(&log)?;
    crate::run_ok(PMCSTAT, &["-R", &s(&log), "--pprof-every", "1", &s(&first)])?;
    let name = std::fs::read_dir(&first)
        .ctx("list")?
        .next()
        .ok_or("no profile written")?
        .ctx("list")?
        .file_name();
    std::fs::create_dir_all(blocked.join(&name).join("in-the-way")).ctx("block the name")?;
    let before = std::fs::read(&log).ctx("read the log")?;
    let out = Command::new(PMCSTAT)
        .args(["-R", &s(&log), "--pprof-every", "1", &s(&blocked)])
        .output()
        .ctx("pmcstat")?;
    let stderr = text(&out.stderr);
    println!("{stderr}");
    ensure!(
        out.status.code() == Some(74)
            && stderr.contains(&*name.to_string_lossy())
            && stderr.contains("(EISDIR)")
            && stderr.contains("check the space and permissions"),
        "exit {:?}: {stderr}",
        out.status
    );
    let left: Vec<_> = std::fs::read_dir(&blocked)
        .ctx("list")?
        .map(|e| e.map(|e| e.file_name()))
        .collect::<Result<_, _>>()
        .ctx("list")?;
    ensure!(left == [name], "left in DIR: {left:?}");
    ensure!(
        std::fs::read(&log).ctx("read the log")? == before,
        "the log changed"
    );
    Ok(())
}
