//! pmcstat unwinds perf's own samples as perf unwinds them. One `perf
//! record --call-graph dwarf` of a Debian program holds, per sample, the
//! user registers and a copy of the user stack; `pmcstat -R perf.data -O`
//! unwinds those very bytes with its own CFI unwinder (as a live
//! `--call-graph dwarf` run does) into a pmclog, and `perf script` prints
//! perf's unwinding of the same bytes. The two are compared sample by
//! sample — matched by thread and timestamp, which the conversion keeps —
//! frame by frame: no sampling noise, no tolerance band, no retry. Every
//! sample where they part is listed with the frame and addresses where they
//! do. Frame-pointer recordings (`perf record -g`, the kernel's own walk)
//! must agree on every sample.

use std::collections::HashMap;

use pmc::log::{LogReader, LogRecord};
use pmc::probe::Requirement as R;

use crate::ensure;
use crate::harness::{Context, LiveTest, TestResult, test};
use crate::same_samples::{ExecMapping, perf_script_samples};
use crate::temp::TempDir;

const PMCSTAT: &str = env!("CARGO_BIN_EXE_pmcstat");

/// The share of samples on which the two unwinders must agree on every
/// frame perf gives (issue 34: ≥ 99.5 %); where perf's unwinder stops and
/// pmcstat's goes on through the process's code, the sample is counted
/// apart and may be at most 1 % of them.
const AGREEMENT: f64 = 0.995;

/// Samples listed in full in a failure's message (all are counted).
const SHOWN: usize = 40;

fn needs(program: &str) -> Vec<R> {
    vec![
        R::Paranoid(2),
        R::Program("perf".into()),
        R::Program(program.into()),
    ]
}

/// How each program is recorded: `--call-graph` argument and command.
fn workloads(dir: &TempDir) -> Result<Vec<(&'static str, Vec<String>)>, libtest_mimic::Failed> {
    let text = dir.path("input.txt");
    std::fs::write(&text, crate::debian_profiles::generated_text(200_000))
        .ctx("write the input")?;
    // sort's work grows as n log n of lines, gzip's and the others' as
    // their bytes: more lines for sort, so that it too gives well over the
    // 500 samples a comparison needs.
    let lines = dir.path("lines.txt");
    std::fs::write(&lines, crate::debian_profiles::generated_text(500_000))
        .ctx("write sort's input")?;
    let owned = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    Ok(vec![
        (
            "dash",
            owned(&[
                "dash",
                "-c",
                "i=0; while [ $i -lt 150000 ]; do i=$((i+1)); done",
            ]),
        ),
        ("gzip", owned(&["gzip", "-6", "-c", &text])),
        ("sort", owned(&["sort", "--parallel=1", &lines])),
        (
            "python3",
            owned(&[
                "/usr/bin/python3",
                "-c",
                "s = 0\nfor i in range(6_000_000):\n    s += i * i % 7\nprint(s)",
            ]),
        ),
        (
            "perl",
            owned(&[
                "perl",
                "-e",
                "my %h; for my $i (1..2000000) { $h{$i % 1000} .= chr(65 + $i % 26) } print length(join '', values %h), \"\\n\"",
            ]),
        ),
        (
            "xz",
            owned(&["xz", "-T2", "--block-size=512KiB", "-3", "-c", &text]),
        ),
        ("bzip2", owned(&["bzip2", "-9", "-c", &text])),
    ])
}

/// One test per program and call-graph mode (the harness takes plain
/// `fn`s).
macro_rules! same_stacks_tests {
    ($( $name:ident: $program:literal, $executable:literal, [$($cg:literal),+]; )+) => {
        pub fn tests() -> Vec<LiveTest> {
            vec![$(test(
                concat!("same_stacks::", stringify!($name)),
                needs($executable),
                $name,
            )),+]
        }
        $(fn $name() -> TestResult {
            compare($program, &[$($cg),+])
        })+
    };
}

same_stacks_tests! {
    dash_dwarf_stacks_unwind_as_perf_unwinds_them: "dash", "dash", ["--call-graph", "dwarf"];
    gzip_dwarf_stacks_unwind_as_perf_unwinds_them: "gzip", "gzip", ["--call-graph", "dwarf"];
    sort_dwarf_stacks_unwind_as_perf_unwinds_them: "sort", "sort", ["--call-graph", "dwarf"];
    python3_dwarf_stacks_unwind_as_perf_unwinds_them:
        "python3", "/usr/bin/python3", ["--call-graph", "dwarf"];
    perl_dwarf_stacks_unwind_as_perf_unwinds_them: "perl", "perl", ["--call-graph", "dwarf"];
    xz_threads_dwarf_stacks_unwind_as_perf_unwinds_them: "xz", "xz", ["--call-graph", "dwarf"];
    bzip2_dwarf_stacks_unwind_as_perf_unwinds_them: "bzip2", "bzip2", ["--call-graph", "dwarf"];
    dash_frame_pointer_chains_read_as_perf_reads_them: "dash", "dash", ["-g"];
    xz_threads_frame_pointer_chains_read_as_perf_reads_them: "xz", "xz", ["-g"];
}

/// A frame as perf prints it: the object's path (`None`: no mapping) and
/// the address relative to it.
type Frame = (Option<String>, u64);

fn compare(program: &str, call_graph: &[&str]) -> TestResult {
    let dir = TempDir::new(&format!("same-stacks-{program}"))?;
    let (comm, command) = workloads(&dir)?
        .into_iter()
        .find(|(c, _)| *c == program)
        .ok_or("no such workload")?;
    let data = dir.path("perf.data");
    let mut args = vec!["record", "-q", "-e", "cpu-clock:u", "-c", "200000"];
    args.extend_from_slice(call_graph);
    args.extend(["-o", &data, "--"]);
    args.extend(command.iter().map(String::as_str));
    let out = std::process::Command::new("perf")
        .args(&args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .output()
        .ctx("perf record")?;
    ensure!(
        out.status.success(),
        "perf record: {:?}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let script = crate::run_ok(
        "perf",
        &[
            "script",
            "-i",
            &data,
            "--ns",
            "--no-inline",
            "--show-mmap-events",
            "-F",
            "comm,pid,tid,time,ip,sym,dso",
        ],
    )?;
    let script = String::from_utf8_lossy(&script.stdout).into_owned();
    let (mappings, samples) = perf_script_samples(&script, comm);
    let log = dir.path("converted.pmclog");
    crate::run_ok(PMCSTAT, &["-R", &data, "-O", &log])?;
    let ours = logged_stacks(&log, &mappings)?;

    let dwarf = call_graph.contains(&"dwarf");
    let mut agree = 0usize;
    let mut parted = Vec::new();
    // Samples where perf's whole chain agrees and pmcstat's goes further.
    let mut beyond_perf = Vec::new();
    let mut unmatched = 0usize;
    // perf's frames that are none (see `not_a_frame`), where its chain is
    // cut, by address.
    let mut ends: HashMap<u64, usize> = HashMap::new();
    for s in &samples {
        let Some(time) = s.time else {
            return Err(format!("perf script printed no time for a sample of {}", s.tid).into());
        };
        let Some(mine) = ours.get(&(s.tid, time)) else {
            unmatched += 1;
            continue;
        };
        let mut theirs: Vec<Frame> = s.frames.iter().map(|(a, p, _)| (p.clone(), *a)).collect();
        // perf prints on past frames that are none; pmcstat ends there.
        if let Some(at) = theirs.iter().skip(1).position(|f| not_a_frame(f, dwarf)) {
            *ends.entry(theirs[at + 1].1).or_default() += 1;
            theirs.truncate(at + 1);
        }
        let mut mine = mine.clone();
        if !dwarf && let Some(at) = mine.iter().skip(1).position(|f| not_a_frame(f, dwarf)) {
            mine.truncate(at + 1);
        }
        let mine = &mine;
        match where_they_part(mine, &theirs, dwarf) {
            None => agree += 1,
            // Every frame of perf's agrees and perf's unwinder stopped where
            // pmcstat's went on through frames of the process's executable
            // mappings: perf has no word on those, so they are counted and
            // listed, not taken as a parting.
            Some(i) if dwarf && i == theirs.len() && mine[i..].iter().all(|(p, _)| p.is_some()) => {
                beyond_perf.push(describe(s, mine, i, dwarf));
            }
            Some(i) => parted.push(describe(s, mine, i, dwarf)),
        }
    }
    let total = samples.len();
    let share = (agree + beyond_perf.len()) as f64 / total.max(1) as f64;
    eprintln!(
        "{comm} ({}): {agree} of {total} samples unwound alike, {} more where pmcstat went on \
         past perf's last frame ({:.2} %), {} part, {unmatched} not in pmcstat's log",
        call_graph.join(" "),
        beyond_perf.len(),
        100.0 * share,
        parted.len()
    );
    ensure!(
        beyond_perf.len() * 100 <= total,
        "{comm}: pmcstat went on past perf's last frame in {} of {total} samples (more than 1 %): \
         one of the unwinders changed; the first ones:\n{}",
        beyond_perf.len(),
        beyond_perf
            .iter()
            .take(SHOWN)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
    ensure!(total >= 500, "{comm}: only {total} samples to compare");
    ensure!(
        unmatched == 0,
        "{comm}: {unmatched} of perf's {total} samples have no CALLCHAIN of the same thread and \
         time in pmcstat's conversion ({} there)",
        ours.len()
    );
    let needed = if dwarf { AGREEMENT } else { 1.0 };
    ensure!(
        share >= needed,
        "{comm}: {} of {total} samples unwound alike ({:.2} % < {:.1} %); where they part \
         (frame: pmcstat's address, perf's):\n{}{}",
        agree + beyond_perf.len(),
        100.0 * share,
        100.0 * needed,
        parted
            .iter()
            .take(SHOWN)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n"),
        if parted.len() > SHOWN {
            format!("\n… and {} more", parted.len() - SHOWN)
        } else {
            String::new()
        }
    );
    if !ends.is_empty() {
        let mut examples: Vec<_> = ends.iter().collect();
        examples.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        let examples: Vec<String> = examples
            .iter()
            .take(4)
            .map(|(a, n)| format!("{a:#x} ×{n}"))
            .collect();
        eprintln!(
            "{comm}: {} of perf's chains cut at a frame that is none (e.g. {})",
            ends.values().sum::<usize>(),
            examples.join(", ")
        );
    }
    if !parted.is_empty() {
        eprintln!("where they part:\n{}", parted.join("\n"));
    }
    if !beyond_perf.is_empty() {
        eprintln!(
            "where pmcstat went on past perf's last frame:\n{}",
            beyond_perf.join("\n")
        );
    }
    Ok(())
}

/// A frame perf prints that is none, where the comparison ends the chain:
/// in a stack perf unwound, a return address of 0 (the outermost frame's,
/// printed less one as `0xffffffffffffffff`, where pmcstat's unwinder
/// stops). In the kernel's frame-pointer walk of code built without frame
/// pointers, any value no executable mapping holds: the walk is reading
/// data as return addresses. The tools then differ in what they print of
/// it — pmcstat ends the user chain at a kernel-half value
/// (`src/backend/linux/sampling/callchain.rs`) and at a word that happens
/// to equal a context marker (`PERF_CONTEXT_KERNEL`, -128, seen in dash's
/// stack), perf prints on — so both chains are compared up to the first
/// such value.
fn not_a_frame((path, address): &Frame, dwarf: bool) -> bool {
    path.is_none() && (!dwarf || *address == u64::MAX)
}

/// The first frame where pmcstat's stack and perf's differ, or `None`.
/// In a stack it unwound itself (`dwarf`), perf prints a caller's frame at
/// its return address less one (the call instruction's last byte, which
/// names the caller's line); pmcstat logs the return address itself, as
/// the kernel's frame-pointer chain has it, which perf prints as it is.
fn where_they_part(mine: &[Frame], theirs: &[Frame], dwarf: bool) -> Option<usize> {
    let n = mine.len().max(theirs.len());
    (0..n).find(|&i| {
        let adjust = u64::from(dwarf && i > 0);
        match (mine.get(i), theirs.get(i)) {
            (Some((p, a)), Some((q, b))) => p != q || a.wrapping_sub(adjust) != *b,
            _ => true,
        }
    })
}

fn describe(s: &crate::same_samples::PerfSample, mine: &[Frame], i: usize, dwarf: bool) -> String {
    let show = |f: Option<&Frame>, adjust: u64| match f {
        Some((Some(p), a)) => format!("{:#x} {}", a.wrapping_sub(adjust), file_name(p)),
        Some((None, a)) => format!("{a:#x}"),
        None => "(end)".to_string(),
    };
    let name = s
        .frames
        .get(i)
        .and_then(|(_, _, n)| n.clone())
        .unwrap_or_else(|| "?".into());
    let chain = |frames: &mut dyn Iterator<Item = u64>| {
        frames
            .map(|a| format!("{a:x}"))
            .collect::<Vec<_>>()
            .join(" ")
    };
    format!(
        "  tid {} time {}: frame {i} of {}/{}: pmcstat {}, perf {} ({name})\n    pmcstat: {}\n    perf:    {}",
        s.tid,
        s.time.unwrap_or(0),
        mine.len(),
        s.frames.len(),
        show(mine.get(i), u64::from(dwarf && i > 0)),
        show(s.frames.get(i).map(|(a, p, _)| (p.clone(), *a)).as_ref(), 0),
        chain(&mut mine.iter().map(|(_, a)| *a)),
        chain(&mut s.frames.iter().map(|(a, _, _)| *a)),
    )
}

fn file_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// The converted log's CALLCHAINs by (thread, timestamp), each pc put as
/// perf prints it: relative to the executable mapping holding it.
fn logged_stacks(
    log: &str,
    mappings: &HashMap<u32, Vec<ExecMapping>>,
) -> Result<HashMap<(u32, u64), Vec<Frame>>, libtest_mimic::Failed> {
    let file = std::fs::File::open(log).ctx("open the converted log")?;
    let mut stacks = HashMap::new();
    for event in LogReader::from_reader(std::io::BufReader::new(file)) {
        let event = event.ctx("read the converted log")?;
        if let LogRecord::Callchain { pid, tid, pcs, .. } = event.record {
            let maps = mappings.get(&pid).map(Vec::as_slice).unwrap_or_default();
            let frames = pcs
                .iter()
                .map(|&pc| {
                    maps.iter()
                        .find(|(start, len, _, _)| (*start..start + len).contains(&pc))
                        .map_or((None, pc), |(start, _, pgoff, path)| {
                            (Some(path.clone()), pc - start + pgoff)
                        })
                })
                .collect();
            stacks.insert((tid, event.timestamp), frames);
        }
    }
    Ok(stacks)
}
