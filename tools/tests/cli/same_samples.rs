//! pmcstat names perf's own samples as perf names them. One `perf record`
//! of a Debian program; its samples and executable mappings, as `perf
//! script` prints them, become a pmclog — MAP_IN at the mapping's start,
//! as the Linux backend writes it, and a one-frame CALLCHAIN per sample —
//! which `pmcstat -R -G` reads back. Both tools then name the very same
//! samples, so issue 19's comparison holds strictly, with no sampling
//! noise: every function perf names holds exactly perf's count in
//! pmcstat's report, and pmcstat leaves no more samples unnamed than perf.
//! (`debian_profiles.rs` compares two tools sampling one run: that part of
//! the agreement is sampling, and has a band.)

use std::collections::HashMap;

use pmc::log::{LogRecord, LogWriter};
use pmc::probe::Requirement as R;

use crate::ensure;
use crate::harness::{Context, LiveTest, TestResult, test};
use crate::temp::TempDir;

const PMCSTAT: &str = env!("CARGO_BIN_EXE_pmcstat");

/// 10 kHz of user-mode cpu-clock: thousands of samples in a second.
const PERIOD_NS: &str = "100000";

/// A function this share (%) of perf's samples must have exactly perf's
/// count in pmcstat's report.
const NOTABLE: f64 = 0.5;

fn needs(program: &str) -> Vec<R> {
    vec![
        R::Paranoid(2),
        R::Program("perf".into()),
        R::Program(program.into()),
    ]
}

pub fn tests() -> Vec<LiveTest> {
    vec![
        test(
            "same_samples::a_dash_loop_is_named_as_perf_names_it",
            needs("dash"),
            a_dash_loop_is_named_as_perf_names_it,
        ),
        test(
            "same_samples::gzip_is_named_as_perf_names_it",
            needs("gzip"),
            gzip_is_named_as_perf_names_it,
        ),
        test(
            "same_samples::sort_is_named_as_perf_names_it",
            needs("sort"),
            sort_is_named_as_perf_names_it,
        ),
        test(
            "same_samples::python3_is_named_as_perf_names_it",
            needs("/usr/bin/python3"),
            python3_is_named_as_perf_names_it,
        ),
        test(
            "same_samples::libcs_plt_stubs_are_named_as_objdump_names_them",
            vec![R::Program("objdump".into()), R::Program("readelf".into())],
            libcs_plt_stubs_are_named_as_objdump_names_them,
        ),
        test(
            "same_samples::the_profiled_programs_plt_stubs_are_named_as_objdump_names_them",
            [R::Program("objdump".into()), R::Program("readelf".into())]
                .into_iter()
                .chain(PROFILED.map(|p| R::Program(p.into())))
                .collect(),
            the_profiled_programs_plt_stubs_are_named_as_objdump_names_them,
        ),
    ]
}

fn a_dash_loop_is_named_as_perf_names_it() -> TestResult {
    let dir = TempDir::new("same-dash")?;
    compare(
        &dir,
        "dash",
        &[
            "dash",
            "-c",
            "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done",
        ],
    )
}

fn gzip_is_named_as_perf_names_it() -> TestResult {
    let dir = TempDir::new("same-gzip")?;
    let input = dir.path("input.txt");
    std::fs::write(&input, crate::debian_profiles::generated_text(300_000))
        .ctx("write the input")?;
    compare(&dir, "gzip", &["gzip", "-9", "-k", "-f", &input])
}

fn sort_is_named_as_perf_names_it() -> TestResult {
    let dir = TempDir::new("same-sort")?;
    let input = dir.path("input.txt");
    std::fs::write(&input, crate::debian_profiles::generated_text(500_000))
        .ctx("write the input")?;
    compare(
        &dir,
        "sort",
        &["sort", "--parallel=1", "-o", "/dev/null", &input],
    )
}

fn python3_is_named_as_perf_names_it() -> TestResult {
    let dir = TempDir::new("same-python3")?;
    compare(
        &dir,
        "python3",
        &[
            "/usr/bin/python3",
            "-c",
            "s = 0\nfor i in range(1_500_000):\n    s += i * i % 7\nprint(s)",
        ],
    )
}

/// (object file name, function) → samples; an unnamed sample's function
/// is `None`.
type Counts = HashMap<(String, Option<String>), u64>;

fn compare(dir: &TempDir, comm: &str, command: &[&str]) -> TestResult {
    let data = dir.path("perf.data");
    let mut args = vec![
        "record",
        "-q",
        "-e",
        "cpu-clock:u",
        "-c",
        PERIOD_NS,
        "-o",
        &data,
        "--",
    ];
    args.extend_from_slice(command);
    crate::run_ok("perf", &args)?;
    let script = crate::run_ok(
        "perf",
        &[
            "script",
            "-i",
            &data,
            "--no-inline",
            "--show-mmap-events",
            "-F",
            "comm,pid,tid,ip,sym,dso",
        ],
    )?;
    let script = String::from_utf8_lossy(&script.stdout).into_owned();
    let (records, perf) = perf_samples(&script, comm);
    let log = dir.path("perf-samples.pmclog");
    write_log(&log, &records)?;
    let graph = crate::run_ok(PMCSTAT, &["-R", &log, "-G", "-"])?;
    // perf names a stub of an IRELATIVE slot `@plt`, objdump and pmcstat
    // `*ABS*+0xADDEND@plt` (see the PLT test below).
    let mut ours = Counts::new();
    for ((object, function), n) in pmcstat_counts(&String::from_utf8_lossy(&graph.stdout)) {
        let function = function.map(|f| {
            if f.starts_with("*ABS*+0x") && f.ends_with("@plt") {
                "@plt".to_string()
            } else {
                f
            }
        });
        *ours.entry((object, function)).or_default() += n;
    }

    let total: u64 = perf.values().sum();
    ensure!(total >= 1000, "{comm}: only {total} samples to compare");
    ensure!(
        ours.values().sum::<u64>() == total,
        "{comm}: pmcstat's report holds {} samples, the log {total}",
        ours.values().sum::<u64>()
    );
    let unnamed = |c: &Counts| -> u64 {
        c.iter()
            .filter(|((_, f), _)| f.is_none())
            .map(|(_, n)| n)
            .sum()
    };
    let mut table = String::new();
    let mut differ = Vec::new();
    let mut notable: Vec<_> = perf
        .iter()
        .filter(|((_, f), n)| f.is_some() && **n as f64 * 100.0 >= NOTABLE * total as f64)
        .collect();
    notable.sort_by(|a, b| b.1.cmp(a.1).then_with(|| a.0.cmp(b.0)));
    for (key, &theirs) in notable {
        let mine = ours.get(key).copied().unwrap_or(0);
        table.push_str(&format!(
            "{mine:>7} {theirs:>7}  {} {}\n",
            key.0,
            key.1.as_deref().unwrap_or("")
        ));
        if mine != theirs {
            differ.push(key.clone());
        }
    }
    // Below the notable share, what the tools name differently.
    let mut keys: Vec<_> = perf.keys().chain(ours.keys()).collect();
    keys.sort();
    keys.dedup();
    let mut others = String::new();
    for key in keys {
        let (mine, theirs) = (
            ours.get(key).copied().unwrap_or(0),
            perf.get(key).copied().unwrap_or(0),
        );
        if mine != theirs && key.1.is_some() {
            others.push_str(&format!(
                "{mine:>7} {theirs:>7}  {} {}\n",
                key.0,
                key.1.as_deref().unwrap_or("")
            ));
        }
    }
    if !others.is_empty() {
        table.push_str(&format!("named differently:\n{others}"));
    }
    let (u_ours, u_perf) = (unnamed(&ours), unnamed(&perf));
    table.push_str(&format!("{u_ours:>7} {u_perf:>7}  unnamed\n"));
    eprintln!("{comm}: pmcstat, perf samples of {total}\n{table}");
    ensure!(
        differ.is_empty(),
        "{comm}: functions perf names hold other counts in pmcstat's report: {differ:?}\npmcstat perf\n{table}"
    );
    // What the tools name differently first: the matrix shows a failure's
    // first lines only.
    ensure!(
        u_ours <= u_perf,
        "{comm}: pmcstat leaves {u_ours} of {total} samples unnamed, perf {u_perf}\n\
         named differently (pmcstat perf):\n{others}{table}"
    );
    Ok(())
}

/// The records of `perf script`'s output for `comm`'s process: each
/// executable mapping as a MAP_IN, each sample as a one-frame CALLCHAIN,
/// in perf's order; and perf's names of those samples.
fn perf_samples(script: &str, comm: &str) -> (Vec<LogRecord>, Counts) {
    let mut records = Vec::new();
    let mut counts = Counts::new();
    for line in script.lines() {
        let mut words = line.split_whitespace();
        if words.next() != Some(comm) {
            continue;
        }
        let Some((pid, tid)) = words.next().and_then(|w| w.split_once('/')) else {
            continue;
        };
        let (Ok(pid), Ok(tid)) = (pid.parse::<u32>(), tid.parse::<u32>()) else {
            continue;
        };
        if line.contains("PERF_RECORD_MMAP") {
            // `[0xSTART(0xLEN) @ 0xPGOFF …]: r-xp PATH`
            let Some(start) = line
                .split_once("[0x")
                .and_then(|(_, r)| r.split_once('('))
                .and_then(|(s, _)| u64::from_str_radix(s, 16).ok())
            else {
                continue;
            };
            let Some((perms, path)) = line.rsplit_once("]: ").and_then(|(_, r)| r.split_once(' '))
            else {
                continue;
            };
            if perms.contains('x') {
                records.push(LogRecord::MapIn {
                    pid,
                    start,
                    path: path.trim().to_string(),
                });
            }
            continue;
        }
        // `IP SYM (DSO)`
        let rest = words.collect::<Vec<_>>().join(" ");
        let Some((ip, rest)) = rest.split_once(' ') else {
            continue;
        };
        let Ok(ip) = u64::from_str_radix(ip, 16) else {
            continue;
        };
        let Some((sym, dso)) = rest.rsplit_once(" (") else {
            continue;
        };
        let dso = dso.trim_end_matches(')');
        let object = dso.rsplit('/').next().unwrap_or(dso).to_string();
        let function = (sym != "[unknown]" && !sym.starts_with("0x")).then(|| sym.to_string());
        *counts.entry((object, function)).or_default() += 1;
        records.push(LogRecord::Callchain {
            pid,
            tid,
            pmcid: 1,
            cpu: 0,
            userspace: true,
            pcs: vec![ip],
        });
    }
    (records, counts)
}

fn write_log(path: &str, records: &[LogRecord]) -> TestResult {
    let file = std::fs::File::create(path).ctx("create the log")?;
    let mut w = LogWriter::new(file).ctx("LogWriter::new")?;
    let allocate = LogRecord::PmcAllocateDyn {
        pmcid: 1,
        event: 0,
        flags: 0,
        name: "cpu-clock,usr".into(),
    };
    for (t, r) in std::iter::once(&allocate).chain(records).enumerate() {
        w.write(r, t as u64 + 1).ctx("write a record")?;
    }
    w.close().ctx("close the log")?;
    Ok(())
}

/// pmcstat's `-G` top-level lines as sample counts; `image+0xoff` and
/// bare addresses unnamed.
fn pmcstat_counts(graph: &str) -> Counts {
    let mut counts = Counts::new();
    for row in crate::debian_profiles::graph_rows(graph) {
        let function = row.unnamed_offset().is_none().then(|| row.name.clone());
        *counts
            .entry((row.object().to_string(), function))
            .or_default() += row.count;
    }
    counts
}

/// glibc's `.rela.plt` lists its IRELATIVE relocations after the
/// JUMP_SLOT ones while their stubs are interleaved, so a stub's name
/// comes from the GOT slot its jump reads, as objdump finds it: a sample
/// on each of libc's PLT stubs is named by pmcstat with objdump's label
/// (`realloc@plt`, `*ABS*+0x9f550@plt`).
fn libcs_plt_stubs_are_named_as_objdump_names_them() -> TestResult {
    let maps = std::fs::read_to_string("/proc/self/maps").ctx("read /proc/self/maps")?;
    let libc = maps
        .lines()
        .filter_map(|l| l.split_whitespace().nth(5))
        .find(|p| p.ends_with("/libc.so.6"))
        .ok_or("this test program maps no libc.so.6")?
        .to_string();
    plt_stubs_are_named_as_objdump_names_them(&libc)
}

/// The programs the comparisons above profile: each calls libc through
/// its own stubs — `.plt`, and `.plt.got` for a slot bound at load time
/// (dash's `__cxa_finalize@plt`) — and python3 is not position-independent.
/// A sample on any of them is named with objdump's label.
fn the_profiled_programs_plt_stubs_are_named_as_objdump_names_them() -> TestResult {
    let mut failures = Vec::new();
    for program in PROFILED {
        let path = on_path(program).ok_or_else(|| format!("{program} is not on PATH"))?;
        let path = std::fs::canonicalize(&path).ctx("resolve the program's path")?;
        if let Err(e) = plt_stubs_are_named_as_objdump_names_them(&path.to_string_lossy()) {
            failures.push(format!("{program}: {}", e.message().unwrap_or("failed")));
        }
    }
    ensure!(failures.is_empty(), "{}", failures.join("\n"));
    Ok(())
}

const PROFILED: [&str; 4] = ["dash", "gzip", "sort", "/usr/bin/python3"];

/// Where PATH finds `program` (an absolute path stands for itself).
fn on_path(program: &str) -> Option<std::path::PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|d| d.join(program))
        .find(|p| p.is_file())
}

/// One sample on each PLT stub objdump labels in `object` (`.plt`,
/// `.plt.sec`, `.plt.got`), mapped as the Linux backend maps it; pmcstat
/// must name every one with objdump's label.
fn plt_stubs_are_named_as_objdump_names_them(object: &str) -> TestResult {
    let headers = crate::run_ok("readelf", &["-hSlW", object])?;
    let headers = String::from_utf8_lossy(&headers.stdout).into_owned();
    let mut args = vec!["-d"];
    for section in [".plt", ".plt.sec", ".plt.got"] {
        if headers.contains(&format!(" {section} ")) {
            args.extend(["-j", section]);
        }
    }
    args.push(object);
    let listing = crate::run_ok("objdump", &args)?;
    let stubs: Vec<(u64, String)> = String::from_utf8_lossy(&listing.stdout)
        .lines()
        .filter_map(|l| {
            let (address, label) = l.split_once(" <")?;
            let name = label.strip_suffix(">:")?;
            // `.plt`'s resolver entry is `<first@plt-0x10>`.
            (name.ends_with("@plt") && !name.contains("@plt-"))
                .then(|| Some((u64::from_str_radix(address, 16).ok()?, name.to_string())))?
        })
        .collect();
    ensure!(
        stubs.len() >= 10,
        "objdump labels only {} PLT stubs in {object}",
        stubs.len()
    );
    // The MAP_IN maps the first executable PT_LOAD's page there: anywhere
    // for a shared object or PIE, at its own address for a fixed one.
    let text_page = headers
        .lines()
        .filter(|l| l.trim_start().starts_with("LOAD") && l.contains(" R E "))
        .find_map(|l| {
            let vaddr = l.split_whitespace().nth(2)?;
            u64::from_str_radix(vaddr.trim_start_matches("0x"), 16).ok()
        })
        .ok_or("readelf -l: no executable PT_LOAD")?
        & !0xfff;
    let fixed = headers
        .lines()
        .any(|l| l.trim_start().starts_with("Type:") && l.contains("EXEC"));
    let bias: u64 = if fixed { text_page } else { 0x7f00_0000_0000 };
    let dir = TempDir::new("plt-names")?;
    let mut records = vec![LogRecord::MapIn {
        pid: 9,
        start: bias,
        path: object.to_string(),
    }];
    records.extend(stubs.iter().map(|(address, _)| LogRecord::Callchain {
        pid: 9,
        tid: 9,
        pmcid: 1,
        cpu: 0,
        userspace: true,
        pcs: vec![address - text_page + bias],
    }));
    let log = dir.path("plt.pmclog");
    write_log(&log, &records)?;
    let graph = crate::run_ok(PMCSTAT, &["-R", &log, "-G", "-"])?;
    let graph = String::from_utf8_lossy(&graph.stdout).into_owned();
    let ours = pmcstat_counts(&graph);
    let file = object.rsplit('/').next().unwrap_or(object).to_string();
    let mut expected = Counts::new();
    for (_, name) in &stubs {
        *expected
            .entry((file.clone(), Some(name.clone())))
            .or_default() += 1;
    }
    let mut wrong: Vec<String> = expected
        .iter()
        .filter(|(k, n)| ours.get(*k) != Some(*n))
        .map(|((_, f), n)| {
            let f = f.as_deref().unwrap_or("");
            format!(
                "{f}: objdump {n}, pmcstat {}",
                ours.get(&(file.clone(), Some(f.into())))
                    .copied()
                    .unwrap_or(0)
            )
        })
        .collect();
    wrong.sort();
    ensure!(
        wrong.is_empty(),
        "{} of {} PLT stubs of {object} named otherwise than objdump names them:\n{}\npmcstat -G:\n{graph}",
        wrong.len(),
        stubs.len(),
        wrong.join("\n")
    );
    Ok(())
}
