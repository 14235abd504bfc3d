//! pmcstat names perf's own samples as perf names them, every frame of
//! every sample. One `perf record --call-graph dwarf` of a Debian program
//! (perf unwinds each sample itself); its samples and executable
//! mappings, as `perf script --no-inline` prints them, become a pmclog —
//! MAP_IN at the mapping's start, as the Linux backend writes it, and a
//! CALLCHAIN of perf's frames per sample — which `pmcstat -R -G` reads
//! back. Both tools then name the very same addresses, so the comparison
//! is exact, with no sampling noise: the multiset of named stacks is
//! perf's, stack for stack, and as many frames stay unnamed as perf leaves
//! unnamed. (`debian_profiles.rs` compares two tools sampling one run:
//! that part of the agreement is sampling, and has a band.)

use std::collections::HashMap;

use pmc::log::{LogRecord, LogWriter};
use pmc::probe::Requirement as R;

use crate::ensure;
use crate::harness::{Context, LiveTest, TestResult, test};
use crate::temp::TempDir;

const PMCSTAT: &str = env!("CARGO_BIN_EXE_pmcstat");

/// 10 kHz of user-mode cpu-clock: thousands of samples in a second.
const PERIOD_NS: &str = "100000";

fn needs(program: &str) -> Vec<R> {
    vec![
        R::Paranoid(2),
        R::Program("perf".into()),
        R::Program(program.into()),
        R::Program("readelf".into()),
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
            "same_samples::perl_is_named_as_perf_names_it",
            needs("perl"),
            perl_is_named_as_perf_names_it,
        ),
        test(
            "same_samples::two_xz_threads_are_named_as_perf_names_them",
            needs("xz"),
            two_xz_threads_are_named_as_perf_names_them,
        ),
        test(
            "same_samples::bzip2_is_named_as_perf_names_it",
            needs("bzip2"),
            bzip2_is_named_as_perf_names_it,
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

fn perl_is_named_as_perf_names_it() -> TestResult {
    let dir = TempDir::new("same-perl")?;
    compare(
        &dir,
        "perl",
        &[
            "perl",
            "-e",
            "my %h; for my $i (1..3000000) { $h{$i % 1000} .= chr(65 + $i % 26) } print length(join '', values %h), \"\\n\"",
        ],
    )
}

/// xz compresses in two threads: samples of both, each its own stack.
fn two_xz_threads_are_named_as_perf_names_them() -> TestResult {
    let dir = TempDir::new("same-xz")?;
    let input = dir.path("input.txt");
    std::fs::write(&input, crate::debian_profiles::generated_text(100_000))
        .ctx("write the input")?;
    compare(
        &dir,
        "xz",
        &["xz", "-T2", "--block-size=512KiB", "-3", "-k", "-f", &input],
    )
}

fn bzip2_is_named_as_perf_names_it() -> TestResult {
    let dir = TempDir::new("same-bzip2")?;
    let input = dir.path("input.txt");
    std::fs::write(&input, crate::debian_profiles::generated_text(300_000))
        .ctx("write the input")?;
    compare(&dir, "bzip2", &["bzip2", "-9", "-k", "-f", &input])
}

/// A sample's frames, leaf first, each named or `None` (unnamed).
type Stack = Vec<Option<String>>;

/// One sample of `perf script` (`--no-inline`): its frames, each an
/// address as perf prints it (relative to its object's mapping) with the
/// object's path (`None`: no mapping) and perf's name of it.
pub(crate) struct PerfSample {
    pub(crate) pid: u32,
    pub(crate) tid: u32,
    /// The timestamp in ns, where the script prints `time` (`--ns`).
    pub(crate) time: Option<u64>,
    pub(crate) frames: Vec<(u64, Option<String>, Option<String>)>,
}

/// An executable mapping perf saw: (start, length, file offset, path).
pub(crate) type ExecMapping = (u64, u64, u64, String);

fn compare(dir: &TempDir, comm: &str, command: &[&str]) -> TestResult {
    let data = dir.path("perf.data");
    // perf unwinds each sample's copied stack itself: every frame of every
    // sample, in Debian's binaries built without frame pointers.
    let mut args = vec![
        "record",
        "-q",
        "-e",
        "cpu-clock:u",
        "-c",
        PERIOD_NS,
        "--call-graph",
        "dwarf",
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
    let (mappings, mut samples) = perf_script_samples(&script, comm);
    let cut = cut_at_frames_in_no_code(&mappings, &mut samples);
    let log = dir.path("perf-samples.pmclog");
    write_log(&log, &records_of(&mappings, &samples)?)?;
    // Every frame: -z past perf's deepest stack (-G stops at 16 without).
    let graph = crate::run_ok(PMCSTAT, &["-R", &log, "-G", "-", "-z", "1000"])?;
    let mut ours: HashMap<Stack, u64> = HashMap::new();
    for (stack, n) in graph_stacks(&String::from_utf8_lossy(&graph.stdout)) {
        let stack = stack
            .into_iter()
            .map(|f| match f {
                Some(f) if f.ends_with("@plt") => Some(PLT.into()),
                f => f,
            })
            .collect();
        *ours.entry(stack).or_default() += n;
    }
    // PLT stubs: perf names some by `.rela.plt`'s order, which glibc's
    // interleaved IRELATIVE slots break, and leaves others unnamed;
    // pmcstat names each with objdump's label, which the PLT tests below
    // check stub by stub. Here a frame in a PLT section is one `<plt>`.
    let plt = plt_ranges(&mappings)?;
    let mut perf: HashMap<Stack, u64> = HashMap::new();
    for s in &samples {
        let stack = s
            .frames
            .iter()
            .map(|(address, path, name)| {
                let in_plt = path
                    .as_ref()
                    .and_then(|p| plt.get(p))
                    .is_some_and(|ranges| ranges.iter().any(|r| r.contains(address)));
                if in_plt {
                    Some(PLT.to_string())
                } else {
                    name.clone()
                }
            })
            .collect();
        *perf.entry(stack).or_default() += 1;
    }
    let total = samples.len() as u64;
    let frames: usize = samples.iter().map(|s| s.frames.len()).sum();
    ensure!(total >= 1000, "{comm}: only {total} samples to compare");
    let ours_total: u64 = ours.values().sum();
    let unnamed = |stacks: &HashMap<Stack, u64>| -> u64 {
        stacks
            .iter()
            .map(|(s, n)| n * s.iter().filter(|f| f.is_none()).count() as u64)
            .sum()
    };
    let (u_ours, u_perf) = (unnamed(&ours), unnamed(&perf));
    eprintln!(
        "{comm}: {total} samples, {frames} frames; unnamed frames: pmcstat {u_ours}, perf {u_perf}; \
         {cut} stacks cut at a frame in no executable mapping"
    );
    // Each stack either tool has that the other has not as often.
    let mut differ: Vec<(u64, u64, &Stack)> = perf
        .keys()
        .chain(ours.keys())
        .map(|k| {
            (
                ours.get(k).copied().unwrap_or(0),
                perf.get(k).copied().unwrap_or(0),
                k,
            )
        })
        .filter(|(mine, theirs, _)| mine != theirs)
        .collect();
    differ.sort_by(|a, b| (b.0.max(b.1)).cmp(&a.0.max(a.1)).then_with(|| a.2.cmp(b.2)));
    differ.dedup_by(|a, b| a.2 == b.2);
    let shown: Vec<String> = differ
        .iter()
        .take(12)
        .map(|(mine, theirs, stack)| {
            let names: Vec<&str> = stack.iter().map(|f| f.as_deref().unwrap_or("?")).collect();
            format!("{mine:>6} {theirs:>6}  {}", names.join(" <- "))
        })
        .collect();
    ensure!(
        ours_total == total && differ.is_empty(),
        "{comm}: of {total} samples ({ours_total} in pmcstat's -G), {} stacks are named otherwise \
         than perf names them (pmcstat perf, leaf first):\n{}",
        differ.len(),
        shown.join("\n")
    );
    ensure!(
        u_ours == u_perf,
        "{comm}: pmcstat leaves {u_ours} frames unnamed, perf {u_perf}"
    );
    Ok(())
}

/// Any frame in a PLT stub, for the comparison.
const PLT: &str = "<plt>";

/// The size of `.plt`'s resolver entry (PLT0): 16 bytes on x86-64, 32 on
/// AArch64.
const PLT_RESOLVER_ENTRY: u64 = if cfg!(target_arch = "aarch64") {
    32
} else {
    16
};

/// Each mapped object's PLT sections (`.plt`, `.plt.sec`, `.plt.got`) as
/// ranges of the addresses perf prints: file offsets for a shared object
/// or PIE, addresses for a fixed executable (readelf's Off and Address).
fn plt_ranges(
    mappings: &HashMap<u32, Vec<ExecMapping>>,
) -> Result<HashMap<String, Vec<std::ops::Range<u64>>>, libtest_mimic::Failed> {
    let mut ranges = HashMap::new();
    for (_, _, _, path) in mappings.values().flatten() {
        if ranges.contains_key(path) || !path.starts_with('/') {
            continue;
        }
        let headers = crate::run_ok("readelf", &["-SW", path])?;
        let mut of_object = Vec::new();
        for line in String::from_utf8_lossy(&headers.stdout).lines() {
            // `[Nr] Name Type Address Off Size …`
            let words: Vec<&str> = line
                .split(']')
                .nth(1)
                .unwrap_or("")
                .split_whitespace()
                .collect();
            if !matches!(words.first(), Some(&(".plt" | ".plt.sec" | ".plt.got"))) {
                continue;
            }
            let hex = |i: usize| words.get(i).and_then(|w| u64::from_str_radix(w, 16).ok());
            if let (Some(address), Some(offset), Some(size)) = (hex(2), hex(3), hex(4)) {
                // `.plt`'s first entry is the lazy-binding resolver's
                // trampoline (push the link map, jump to `_dl_runtime_resolve`),
                // no stub of a function: objdump labels it only as an offset
                // from the first stub (`<first@plt-0x10>`) and pmcstat leaves
                // it unnamed. A program without BIND_NOW runs it at a first
                // call, e.g. of an exit handler (sort at exit, seen once).
                let skip = if words[0] == ".plt" {
                    PLT_RESOLVER_ENTRY.min(size)
                } else {
                    0
                };
                of_object.push(address + skip..address + size);
                of_object.push(offset + skip..offset + size);
            }
        }
        ranges.insert(path.clone(), of_object);
    }
    Ok(ranges)
}

/// `perf script --show-mmap-events -F comm,pid,tid,ip,sym,dso` of `comm`:
/// its executable mappings per pid, and its samples with their frames.
pub(crate) fn perf_script_samples(
    script: &str,
    comm: &str,
) -> (HashMap<u32, Vec<ExecMapping>>, Vec<PerfSample>) {
    let mut mappings: HashMap<u32, Vec<ExecMapping>> = HashMap::new();
    let mut samples = Vec::new();
    let mut current: Option<PerfSample> = None;
    for line in script.lines() {
        if let Some(frame) = line.strip_prefix('\t') {
            let Some(sample) = current.as_mut() else {
                continue;
            };
            // `ADDR SYM (DSO)`
            let frame = frame.trim();
            let (Some((address, rest)), Some((_, dso))) =
                (frame.split_once(' '), frame.rsplit_once(" ("))
            else {
                continue;
            };
            let Ok(address) = u64::from_str_radix(address, 16) else {
                continue;
            };
            let sym = rest.rsplit_once(" (").map_or(rest, |(s, _)| s);
            let dso = dso.trim_end_matches(')');
            let name = (sym != "[unknown]").then(|| sym.to_string());
            let path = (dso != "[unknown]").then(|| dso.to_string());
            sample.frames.push((address, path, name));
            continue;
        }
        if let Some(done) = current.take().filter(|s| !s.frames.is_empty()) {
            samples.push(done);
        }
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
            let field = |after: &str, before: char| {
                line.split_once(after)
                    .and_then(|(_, r)| r.split_once(before))
                    .and_then(|(s, _)| u64::from_str_radix(s.trim_start_matches("0x"), 16).ok())
            };
            let (Some(start), Some(len), Some(pgoff)) =
                (field("[0x", '('), field("(0x", ')'), field(" @ ", ' '))
            else {
                continue;
            };
            let Some((perms, path)) = line.rsplit_once("]: ").and_then(|(_, r)| r.split_once(' '))
            else {
                continue;
            };
            if perms.contains('x') {
                mappings
                    .entry(pid)
                    .or_default()
                    .push((start, len, pgoff, path.trim().to_string()));
            }
            continue;
        }
        // `SECONDS.NANOSECONDS:` with `--ns`.
        let time = words.next().and_then(|w| {
            let (seconds, nanos) = w.strip_suffix(':')?.split_once('.')?;
            (nanos.len() == 9).then_some(())?;
            Some(seconds.parse::<u64>().ok()? * 1_000_000_000 + nanos.parse::<u64>().ok()?)
        });
        current = Some(PerfSample {
            pid,
            tid,
            time,
            frames: Vec::new(),
        });
    }
    samples.extend(current.filter(|s| !s.frames.is_empty()));
    (mappings, samples)
}

/// Cuts each sample's frames before the first (past the leaf) that lies
/// in its object but in no executable mapping of it: perf's unwinding
/// read data as a return address there (seen: `__quick_exit_funcs`, in
/// libc's data, under two xz threads) and named it by the nearest symbol.
/// Such a frame is no code to name, and a log has no mapping to place it.
/// Returns how many stacks were cut.
fn cut_at_frames_in_no_code(
    mappings: &HashMap<u32, Vec<ExecMapping>>,
    samples: &mut [PerfSample],
) -> usize {
    let mut cut = 0;
    for s in samples {
        let maps = mappings.get(&s.pid).map(Vec::as_slice).unwrap_or_default();
        let in_code = |address: u64, path: &str| {
            maps.iter()
                .any(|(_, len, pgoff, p)| p == path && (*pgoff..pgoff + len).contains(&address))
        };
        if let Some(at) =
            s.frames.iter().skip(1).position(|(address, path, _)| {
                path.as_deref().is_some_and(|p| !in_code(*address, p))
            })
        {
            s.frames.truncate(at + 1);
            cut += 1;
        }
    }
    cut
}

/// The log of perf's samples: each executable mapping as a MAP_IN at its
/// start (as the Linux backend writes it), each sample a CALLCHAIN of its
/// frames at their run-time addresses (perf prints them relative to their
/// mapping: address − file offset + start).
fn records_of(
    mappings: &HashMap<u32, Vec<ExecMapping>>,
    samples: &[PerfSample],
) -> Result<Vec<LogRecord>, libtest_mimic::Failed> {
    let mut records = Vec::new();
    for (&pid, maps) in mappings {
        records.extend(maps.iter().map(|(start, _, _, path)| LogRecord::MapIn {
            pid,
            start: *start,
            path: path.clone(),
        }));
    }
    for s in samples {
        let maps = mappings.get(&s.pid).map(Vec::as_slice).unwrap_or_default();
        let mut pcs = Vec::with_capacity(s.frames.len());
        for (address, path, name) in &s.frames {
            let pc = match path {
                None => *address,
                Some(path) => maps
                    .iter()
                    .find(|(_, len, pgoff, p)| p == path && (*pgoff..pgoff + len).contains(address))
                    .map(|(start, _, pgoff, _)| address - pgoff + start)
                    .ok_or_else(|| {
                        format!(
                            "no mapping of {path} holds {address:#x} ({name:?}) for pid {}",
                            s.pid
                        )
                    })?,
            };
            pcs.push(pc);
        }
        records.push(LogRecord::Callchain {
            pid: s.pid,
            tid: s.tid,
            pmcid: 1,
            cpu: 0,
            userspace: true,
            pcs,
        });
    }
    Ok(records)
}

/// The stacks of pmcstat's `-G` trees (leaf first, as the tree is) with
/// their samples: a node's own samples are its count less its callers'.
/// An unnamed frame (`0x…`, `image+0x…`) is `None`.
fn graph_stacks(graph: &str) -> HashMap<Stack, u64> {
    let mut stacks = HashMap::new();
    // The path from the leaf to the current node: (name, count, callers' count).
    let mut path: Vec<(Option<String>, u64, u64)> = Vec::new();
    let mut close = |path: &mut Vec<(Option<String>, u64, u64)>, depth: usize| {
        while path.len() > depth {
            let (_, count, callers) = path.last().cloned().unwrap_or_default();
            if count > callers {
                let stack = path.iter().map(|(n, _, _)| n.clone()).collect();
                *stacks.entry(stack).or_default() += count - callers;
            }
            path.pop();
            if let Some(parent) = path.last_mut() {
                parent.2 += count;
            }
        }
    };
    for line in graph.lines() {
        let depth = line.len() - line.trim_start().len();
        let Some((_, rest)) = line.trim_start().split_once("% ") else {
            continue;
        };
        let Some((count, name)) = rest
            .trim_start()
            .strip_prefix('[')
            .and_then(|r| r.split_once(']'))
        else {
            continue;
        };
        let Ok(count) = count.parse::<u64>() else {
            continue;
        };
        let name = name.trim();
        let name = name.rsplit_once(" @ ").map_or(name, |(n, _)| n).trim();
        let unnamed = name.starts_with("0x")
            || name
                .rsplit_once("+0x")
                .is_some_and(|(_, hex)| u64::from_str_radix(hex, 16).is_ok());
        close(&mut path, depth);
        path.push(((!unnamed).then(|| name.to_string()), count, 0));
    }
    close(&mut path, 0);
    stacks
}

/// (object file name, function) → samples; an unnamed sample's function
/// is `None`.
type Counts = HashMap<(String, Option<String>), u64>;

fn write_log(path: &str, records: &[LogRecord]) -> TestResult {
    let file = std::fs::File::create(path).ctx("create the log")?;
    let mut w = LogWriter::new(file, &pmc::global::this_machine()).ctx("LogWriter::new")?;
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
