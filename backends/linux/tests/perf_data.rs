//! `pmc_linux::perf_data` against the files this machine's `perf record`
//! writes (file mode, pipe mode, `-g`, `--call-graph dwarf`, two events),
//! checked against what `perf report --stats` and `perf script` read from
//! the same files; and against hostile input: every truncation of a real
//! file, random bytes, sizes and offsets past the end. A test that needs
//! `perf` is reported `ignored` with `[token] reason` when the machine
//! lacks it (an independent look: the program on PATH, the privilege).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use libtest_mimic::{Arguments, Completion, Failed, Trial};
use pmc_linux::perf_data::{DataEvent, PerfData, PerfDataError};
use pmc_linux::record::{Record, kind};

type Outcome = Result<Completion, Failed>;
type Test = (&'static str, fn() -> Outcome);

macro_rules! ensure {
    ($cond:expr, $($msg:tt)+) => {
        if !$cond {
            return Err(Failed::from(format!($($msg)+)));
        }
    };
}

fn fail(what: &str, e: impl std::fmt::Display) -> Failed {
    Failed::from(format!("{what}: {e}"))
}

/// Whether `PMC_LIVE_FORCE` names `token` (or is `1`/`all`).
fn forced(token: &str) -> bool {
    std::env::var("PMC_LIVE_FORCE").is_ok_and(|v| {
        let v = v.trim();
        v == "1" || v == "all" || v.split(',').any(|t| t.trim() == token)
    })
}

/// `perf` on PATH, found by looking (not by running the code under test).
fn perf_on_path() -> bool {
    std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join("perf").is_file()))
}

/// Root, or perf_event_paranoid ≤ 2: `perf record` samples its command's
/// user mode (every recording here is of `:u` events).
fn may_record() -> bool {
    let root = std::fs::read_to_string("/proc/self/status").is_ok_and(|s| {
        s.lines()
            .find_map(|l| l.strip_prefix("Uid:"))
            .and_then(|l| l.split_whitespace().nth(1).map(|u| u == "0"))
            .unwrap_or(false)
    });
    let paranoid = std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .ok()
        .and_then(|s| s.trim().parse::<i32>().ok());
    root || paranoid.is_some_and(|p| p <= 2)
}

macro_rules! require_perf {
    () => {
        if !perf_on_path() && !forced("program:perf") {
            return Ok(Completion::ignored_with(
                "[program:perf] no `perf` on PATH (Debian: linux-perf)".to_string(),
            ));
        }
        if !may_record() && !forced("paranoid:2") {
            return Ok(Completion::ignored_with(
                "[paranoid:2] perf record of its own user mode needs perf_event_paranoid <= 2"
                    .to_string(),
            ));
        }
    };
}

/// A temporary directory removed at drop.
struct Dir(PathBuf);

impl Dir {
    fn new(name: &str) -> Result<Dir, Failed> {
        let p = std::env::temp_dir().join(format!("pmc-perf-data-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).map_err(|e| fail("create a temporary directory", e))?;
        Ok(Dir(p))
    }
    fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A shell loop of `n` iterations (dash, as Debian has it).
fn workload(n: u32) -> Vec<String> {
    vec![
        "sh".into(),
        "-c".into(),
        format!("i=0; while [ $i -lt {n} ]; do i=$((i+1)); done"),
    ]
}

/// `perf record OPTIONS -o OUT -- workload`; `OUT` `-` records to a pipe,
/// saved as `file`.
fn record(file: &Path, options: &[&str], pipe: bool, n: u32) -> Result<(), Failed> {
    let mut cmd = Command::new("perf");
    cmd.arg("record").args(options);
    if pipe {
        cmd.args(["-o", "-"]);
        let out = std::fs::File::create(file).map_err(|e| fail("create the pipe file", e))?;
        cmd.stdout(out);
    } else {
        cmd.arg("-o").arg(file);
        cmd.stdout(std::process::Stdio::null());
    }
    cmd.arg("--").args(workload(n));
    let out = cmd.output().map_err(|e| fail("run perf record", e))?;
    ensure!(
        out.status.success(),
        "perf record {options:?}: {:?}: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(())
}

/// `perf report --stats`'s aggregated counts by record name (`SAMPLE`,
/// `MMAP2`, …).
fn perf_stats(file: &Path) -> Result<HashMap<String, u64>, Failed> {
    let out = Command::new("perf")
        .args(["report", "--stats", "-i"])
        .arg(file)
        .output()
        .map_err(|e| fail("run perf report --stats", e))?;
    let text = String::from_utf8_lossy(&out.stdout);
    let mut stats = HashMap::new();
    for line in text
        .lines()
        .skip_while(|l| !l.contains("Aggregated stats"))
        .skip(1)
    {
        let Some((name, rest)) = line.split_once(" events:") else {
            if line.trim().ends_with("stats:") {
                break;
            }
            continue;
        };
        if let Some(n) = rest.split_whitespace().next().and_then(|n| n.parse().ok()) {
            stats.insert(name.trim().to_string(), n);
        }
    }
    ensure!(
        !stats.is_empty(),
        "perf report --stats printed no counts:\n{text}"
    );
    Ok(stats)
}

/// `perf script -F event,tid,time --ns`: each sample's (event, tid, time).
fn perf_script(file: &Path) -> Result<Vec<(String, u32, u64)>, Failed> {
    let out = Command::new("perf")
        .args(["script", "-F", "event,tid,time", "--ns", "-i"])
        .arg(file)
        .output()
        .map_err(|e| fail("run perf script", e))?;
    ensure!(
        out.status.success(),
        "perf script: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut samples = Vec::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let mut f = line.split_whitespace();
        let (Some(tid), Some(time), Some(event)) = (f.next(), f.next(), f.next()) else {
            continue;
        };
        let time = time.trim_end_matches(':');
        let Some((s, ns)) = time.split_once('.') else {
            continue;
        };
        let (Ok(tid), Ok(s), Ok(ns)) = (tid.parse(), s.parse::<u64>(), ns.parse::<u64>()) else {
            continue;
        };
        samples.push((
            event.trim_end_matches(':').to_string(),
            tid,
            s * 1_000_000_000 + ns,
        ));
    }
    Ok(samples)
}

/// Everything a read gives: the events in order and the error that ended
/// them.
struct Read {
    pd: PerfData,
    events: Vec<DataEvent>,
    end: Option<PerfDataError>,
}

fn read_all(mut pd: PerfData) -> Read {
    let mut events = Vec::new();
    let mut end = None;
    while let Some(e) = pd.next_event() {
        match e {
            Ok(e) => events.push(e),
            Err(e) => {
                end = Some(e);
                break;
            }
        }
    }
    Read { pd, events, end }
}

fn open(file: &Path) -> Result<Read, Failed> {
    let f = std::fs::File::open(file).map_err(|e| fail("open", e))?;
    Ok(read_all(
        PerfData::open(f).map_err(|e| fail("PerfData::open", e))?,
    ))
}

fn count(events: &[DataEvent], k: u32) -> u64 {
    events.iter().filter(|e| e.record_type() == k).count() as u64
}

/// Our samples as (event name, tid, time), in the order read.
fn samples(r: &Read) -> Result<Vec<(String, u32, u64)>, Failed> {
    let mut out = Vec::new();
    for e in r.events.iter().filter(|e| e.record_type() == kind::SAMPLE) {
        let Record::Sample(s) = e.record().map_err(|e| fail("decode a sample", e))? else {
            return Err(Failed::from("a SAMPLE record decoded as another type"));
        };
        out.push((
            r.pd.attrs()[e.attr].name.clone(),
            s.tid().unwrap_or(0),
            s.time().unwrap_or(0),
        ));
    }
    Ok(out)
}

/// What perf reads of `file` is what we read: the record counts of
/// `perf report --stats`, and perf script's samples in the same order
/// with the same event, thread and time.
fn same_as_perf(file: &Path, r: &Read) -> Result<(), Failed> {
    ensure!(r.end.is_none(), "the read ended with {:?}", r.end);
    let stats = perf_stats(file)?;
    for (name, k) in [
        ("SAMPLE", kind::SAMPLE),
        ("MMAP", kind::MMAP),
        ("MMAP2", kind::MMAP2),
        ("COMM", kind::COMM),
        ("EXIT", kind::EXIT),
        ("FORK", kind::FORK),
    ] {
        let ours = count(&r.events, k);
        let theirs = stats.get(name).copied().unwrap_or(0);
        ensure!(
            ours == theirs,
            "{name}: we read {ours}, perf report --stats {theirs}"
        );
    }
    let ours = samples(r)?;
    let theirs = perf_script(file)?;
    ensure!(
        ours.len() == theirs.len(),
        "{} samples read, perf script prints {}",
        ours.len(),
        theirs.len()
    );
    for (i, (a, b)) in ours.iter().zip(&theirs).enumerate() {
        ensure!(a == b, "sample {i}: we read {a:?}, perf script {b:?}");
    }
    Ok(())
}

fn file_mode_with_callchains_reads_as_perf_does() -> Outcome {
    require_perf!();
    let dir = Dir::new("file")?;
    let file = dir.path("perf.data");
    record(&file, &["-e", "cpu-clock:u", "-g"], false, 300_000)?;
    let r = open(&file)?;
    same_as_perf(&file, &r)?;
    ensure!(!r.pd.is_pipe(), "a file mode file read as a pipe");
    let attr = &r.pd.attrs()[0];
    ensure!(
        attr.name == "cpu-clock:u",
        "the event is named {:?}",
        attr.name
    );
    let f = r.pd.features();
    ensure!(
        f.hostname.is_some() && f.os_release.is_some() && f.nr_cpus_online.is_some(),
        "features missing: {f:?}"
    );
    ensure!(
        f.cmdline.iter().any(|a| a.contains("record")),
        "cmdline {:?}",
        f.cmdline
    );
    ensure!(
        f.build_ids
            .iter()
            .any(|b| b.path.ends_with("/dash") && b.id.len() == 20),
        "no build id of dash among {:?}",
        f.build_ids.iter().map(|b| &b.path).collect::<Vec<_>>()
    );
    // The callchains decode.
    let chains = r
        .events
        .iter()
        .filter(|e| e.record_type() == kind::SAMPLE)
        .filter_map(|e| match e.record() {
            Ok(Record::Sample(s)) => s.callchain().map(|c| c.len()),
            _ => None,
        })
        .filter(|n| *n > 0)
        .count();
    ensure!(chains > 0, "no sample has a callchain");
    Ok(Completion::Completed)
}

fn pipe_mode_reads_as_perf_does_from_a_file_and_a_stream() -> Outcome {
    require_perf!();
    let dir = Dir::new("pipe")?;
    let file = dir.path("pipe.data");
    record(&file, &["-e", "cpu-clock:u"], true, 300_000)?;
    let r = open(&file)?;
    ensure!(r.pd.is_pipe(), "a pipe mode file read as file mode");
    same_as_perf(&file, &r)?;
    ensure!(
        r.pd.attrs()[0].name == "cpu-clock:u",
        "named {:?}",
        r.pd.attrs()[0].name
    );
    let f = std::fs::File::open(&file).map_err(|e| fail("open", e))?;
    let s = read_all(PerfData::from_stream(f).map_err(|e| fail("from_stream", e))?);
    ensure!(
        s.events == r.events,
        "from_stream read {} events, open {}",
        s.events.len(),
        r.events.len()
    );
    ensure!(
        s.pd.features().hostname.is_some(),
        "the pipe's HEADER_FEATURE hostname is missing"
    );
    Ok(Completion::Completed)
}

fn two_events_are_told_apart_by_their_ids() -> Outcome {
    require_perf!();
    let dir = Dir::new("two")?;
    let file = dir.path("two.data");
    record(&file, &["-e", "cpu-clock:u,task-clock:u"], false, 300_000)?;
    let r = open(&file)?;
    let names: Vec<&str> = r.pd.attrs().iter().map(|a| a.name.as_str()).collect();
    ensure!(names == ["cpu-clock:u", "task-clock:u"], "events {names:?}");
    same_as_perf(&file, &r)?;
    let per: Vec<u64> = (0..2)
        .map(|i| {
            r.events
                .iter()
                .filter(|e| e.attr == i && e.record_type() == kind::SAMPLE)
                .count() as u64
        })
        .collect();
    ensure!(per[0] > 0 && per[1] > 0, "samples per event {per:?}");
    Ok(Completion::Completed)
}

fn dwarf_samples_carry_registers_and_stacks() -> Outcome {
    require_perf!();
    let dir = Dir::new("dwarf")?;
    let file = dir.path("dwarf.data");
    record(
        &file,
        &["-e", "cpu-clock:u", "--call-graph", "dwarf"],
        false,
        100_000,
    )?;
    let r = open(&file)?;
    same_as_perf(&file, &r)?;
    let attr = &r.pd.attrs()[0];
    ensure!(
        attr.stack_user == 8192 && attr.regs_user != 0,
        "stack {} regs {:#x}",
        attr.stack_user,
        attr.regs_user
    );
    let mut with_stack = 0;
    for e in r.events.iter().filter(|e| e.record_type() == kind::SAMPLE) {
        let Ok(Record::Sample(s)) = e.record() else {
            return Err(Failed::from("a sample does not decode"));
        };
        let f = s.fields().map_err(|e| fail("sample fields", e))?;
        if let (Some(regs), Some(stack)) = (f.regs_user, f.stack_user)
            && regs.regs.len() == attr.regs_user.count_ones() as usize
            && !stack.valid_bytes().is_empty()
        {
            with_stack += 1;
        }
    }
    ensure!(with_stack > 0, "no sample carries user registers and stack");
    Ok(Completion::Completed)
}

/// Reads `bytes` as a file: never a panic; the events it gives.
fn read_bytes(dir: &Dir, bytes: &[u8]) -> Result<(usize, Option<String>), Failed> {
    let path = dir.path("hostile.data");
    std::fs::write(&path, bytes).map_err(|e| fail("write", e))?;
    let f = std::fs::File::open(&path).map_err(|e| fail("open", e))?;
    match PerfData::open(f) {
        Err(e) => Ok((0, Some(e.to_string()))),
        Ok(pd) => {
            let r = read_all(pd);
            for e in &r.events {
                // Decoding may fail, never panic.
                let _ = e.record().map(|r| {
                    if let Record::Sample(s) = r {
                        let _ = s.fields();
                    }
                });
            }
            Ok((r.events.len(), r.end.map(|e| e.to_string())))
        }
    }
}

fn every_truncation_of_a_real_file_ends_in_an_error_not_a_panic() -> Outcome {
    require_perf!();
    let dir = Dir::new("cut")?;
    for (name, pipe) in [("file.data", false), ("pipe.data", true)] {
        let file = dir.path(name);
        record(
            &file,
            &["-e", "cpu-clock:u", "-c", "200000", "-g"],
            pipe,
            20_000,
        )?;
        let bytes = std::fs::read(&file).map_err(|e| fail("read", e))?;
        let whole = open(&file)?.events.len();
        let mut last = 0;
        for cut in 0..bytes.len() {
            let (n, end) = read_bytes(&dir, &bytes[..cut])?;
            ensure!(
                n <= whole,
                "{name} cut at {cut}: {n} records, more than the whole file's {whole}"
            );
            // A file mode file cut short says so (its data section is
            // shorter than its header says); a pipe has no length, so only
            // a cut inside a record is seen there.
            ensure!(
                end.is_some() || n == whole || pipe,
                "{name} cut at {cut}: {n} of {whole} records and no error"
            );
            if pipe {
                // A pipe is read in order: a longer prefix gives no fewer.
                ensure!(
                    n >= last || n == 0,
                    "{name} cut at {cut}: {n} records after {last}"
                );
                last = n;
            }
        }
    }
    Ok(Completion::Completed)
}

/// A file mode header (104 bytes) with these sections.
fn header(attr_entry: u64, attrs: (u64, u64), data: (u64, u64), features: u64) -> Vec<u8> {
    let mut h = b"PERFILE2".to_vec();
    for w in [
        104, attr_entry, attrs.0, attrs.1, data.0, data.1, 0, 0, features, 0, 0, 0,
    ] {
        h.extend_from_slice(&u64::to_ne_bytes(w));
    }
    h
}

fn sizes_and_offsets_past_the_end_are_errors() -> Outcome {
    let dir = Dir::new("sizes")?;
    let attr = {
        let mut a = vec![0u8; 136 + 16];
        a[0..4].copy_from_slice(&1u32.to_ne_bytes());
        a[4..8].copy_from_slice(&136u32.to_ne_bytes());
        a
    };
    let mut cases: Vec<(&str, Vec<u8>)> = vec![
        ("huge attr entry", header(u64::MAX, (104, 152), (256, 0), 0)),
        (
            "attrs past the end",
            header(152, (104, u64::MAX - 50), (256, 0), 0),
        ),
        (
            "data past the end",
            [header(152, (104, 152), (u64::MAX - 7, 16), 0), attr.clone()].concat(),
        ),
        ("empty", Vec::new()),
        ("short magic", b"PERF".to_vec()),
        ("other endian", {
            let mut h = header(152, (104, 152), (256, 0), 0);
            h[..8].reverse();
            h
        }),
        ("compressed", header(152, (104, 152), (256, 0), 1 << 27)),
    ];
    // Ids past the end; features past the end.
    let mut ids = attr.clone();
    ids[136..144].copy_from_slice(&1_000_000u64.to_ne_bytes());
    ids[144..152].copy_from_slice(&(u64::MAX / 2).to_ne_bytes());
    cases.push((
        "ids past the end",
        [header(152, (104, 152), (256, 0), 0), ids].concat(),
    ));
    let mut with_features = [
        header(152, (104, 152), (256, 8), u64::MAX << 1 & !(1 << 27)),
        attr.clone(),
    ]
    .concat();
    with_features.resize(256, 0);
    // One record of 8 bytes: a FINISHED_ROUND.
    with_features.extend_from_slice(&[68, 0, 0, 0, 0, 0, 8, 0]);
    cases.push(("features past the end", with_features.clone()));
    for (what, bytes) in &cases {
        let (n, end) = read_bytes(&dir, bytes)?;
        let fine = *what == "features past the end";
        ensure!(fine || end.is_some(), "{what}: no error, {n} records");
    }
    // Features past the end are skipped, with a note.
    let path = dir.path("features.data");
    std::fs::write(&path, &with_features).map_err(|e| fail("write", e))?;
    let pd = PerfData::open(std::fs::File::open(&path).map_err(|e| fail("open", e))?)
        .map_err(|e| fail("open a file whose features are past its end", e))?;
    ensure!(
        !pd.features().skipped.is_empty(),
        "no note of the missing features"
    );
    let e = read_bytes(&dir, &cases[6].1)?.1.unwrap_or_default();
    ensure!(e.contains("perf inject"), "compressed: {e}");
    let e = read_bytes(&dir, &cases[5].1)?.1.unwrap_or_default();
    ensure!(e.contains("byte order"), "other endian: {e}");
    Ok(Completion::Completed)
}

fn random_bytes_never_panic() -> Outcome {
    use proptest::prelude::*;
    use proptest::test_runner::{Config, TestRunner};
    let dir = Dir::new("random")?;
    let mut runner = TestRunner::new(Config {
        cases: 512,
        ..Config::default()
    });
    // Random tails after a plausible header, and wholly random files.
    let strategy = (
        any::<bool>(),
        proptest::collection::vec(any::<u8>(), 0..2048),
    );
    runner
        .run(&strategy, |(with_header, tail)| {
            let mut bytes = if with_header {
                let mut h = header(152, (104, 152), (256, 1024), 0x1ffe);
                let mut a = vec![0u8; 152];
                a[4..8].copy_from_slice(&136u32.to_ne_bytes());
                h.extend_from_slice(&a);
                h
            } else {
                Vec::new()
            };
            bytes.extend_from_slice(&tail);
            read_bytes(&dir, &bytes).map_err(|e| TestCaseError::fail(format!("{e:?}")))?;
            Ok(())
        })
        .map_err(|e| fail("random bytes", e))?;
    Ok(Completion::Completed)
}

fn main() {
    let mut args = Arguments::from_args();
    // perf record and the reads share two cores with others: one at a time.
    args.test_threads = Some(1);
    let tests: [Test; 7] = [
        (
            "file_mode_with_callchains_reads_as_perf_does",
            file_mode_with_callchains_reads_as_perf_does,
        ),
        (
            "pipe_mode_reads_as_perf_does_from_a_file_and_a_stream",
            pipe_mode_reads_as_perf_does_from_a_file_and_a_stream,
        ),
        (
            "two_events_are_told_apart_by_their_ids",
            two_events_are_told_apart_by_their_ids,
        ),
        (
            "dwarf_samples_carry_registers_and_stacks",
            dwarf_samples_carry_registers_and_stacks,
        ),
        (
            "every_truncation_of_a_real_file_ends_in_an_error_not_a_panic",
            every_truncation_of_a_real_file_ends_in_an_error_not_a_panic,
        ),
        (
            "sizes_and_offsets_past_the_end_are_errors",
            sizes_and_offsets_past_the_end_are_errors,
        ),
        ("random_bytes_never_panic", random_bytes_never_panic),
    ];
    let trials = tests
        .into_iter()
        .map(|(name, f)| Trial::ignorable_test(name, f))
        .collect();
    libtest_mimic::run(&args, trials).exit();
}
