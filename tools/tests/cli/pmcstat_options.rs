//! pmcstat(8)'s options beyond counting and `-G`: each on a real workload
//! (this test binary re-executed), checked against an independent source —
//! the same run's counted totals, the binary's own ELF symbol table and
//! source, the `-R` record dump, tmux's view of the terminal.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use object::{Object, ObjectSymbol};
use pmc::probe::Requirement as R;

use crate::ensure;
use crate::harness::{Context, LiveTest, TestResult, test};
use crate::temp::TempDir;

const PMCSTAT: &str = env!("CARGO_BIN_EXE_pmcstat");

pub fn tests() -> Vec<LiveTest> {
    vec![
        test(
            "pmcstat_options::exit_totals_of_e_equal_the_counted_total",
            // LOG_PROCCSW/LOG_PROCEXIT siblings sample in the kernel
            // (paranoid 1) and read each exit through sched_process_exit.
            vec![R::Paranoid(1), R::TracefsReadable],
            exit_totals_of_e_equal_the_counted_total,
        ),
        test(
            "pmcstat_options::switch_counts_of_w_add_up_to_the_total",
            // LOG_PROCCSW/LOG_PROCEXIT siblings sample in the kernel
            // (paranoid 1) and read each exit through sched_process_exit.
            vec![R::Paranoid(1), R::TracefsReadable],
            switch_counts_of_w_add_up_to_the_total,
        ),
        test(
            "pmcstat_options::pcs_of_m_fall_in_the_hot_functions_range",
            vec![R::Paranoid(2)],
            pcs_of_m_fall_in_the_hot_functions_range,
        ),
        test(
            "pmcstat_options::a_names_every_frame_with_its_source_line",
            vec![R::Paranoid(2)],
            a_names_every_frame_with_its_source_line,
        ),
        test(
            "pmcstat_options::z_limits_the_depth_and_v_counts_the_samples",
            vec![R::Paranoid(2)],
            z_limits_the_depth_and_v_counts_the_samples,
        ),
        test(
            "pmcstat_options::i_keeps_one_threads_samples",
            vec![R::Paranoid(2)],
            i_keeps_one_threads_samples,
        ),
        test(
            "pmcstat_options::r_looks_executables_up_under_a_root",
            vec![R::Paranoid(2)],
            r_looks_executables_up_under_a_root,
        ),
        test(
            "pmcstat_options::r_dumps_a_log_read_from_a_pipe",
            vec![R::Paranoid(2)],
            r_dumps_a_log_read_from_a_pipe,
        ),
        test(
            "pmcstat_options::l_lists_and_u_describes_events",
            vec![R::PerfEvent],
            l_lists_and_u_describes_events,
        ),
        test(
            "pmcstat_options::options_that_cannot_apply_say_why",
            vec![],
            options_that_cannot_apply_say_why,
        ),
        test(
            "pmcstat_options::top_view_without_a_terminal_prints_frames",
            vec![R::Paranoid(2)],
            top_view_without_a_terminal_prints_frames,
        ),
        test(
            "pmcstat_options::top_view_in_tmux_shows_the_hot_function_and_q_quits",
            vec![R::Paranoid(2), R::Program("tmux".into())],
            top_view_in_tmux_shows_the_hot_function_and_q_quits,
        ),
        test(
            "pmcstat_options::top_view_under_process_churn_quits_on_q",
            vec![
                R::Paranoid(2),
                R::Program("tmux".into()),
                R::Program("true".into()),
            ],
            top_view_under_process_churn_quits_on_q,
        ),
    ]
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn exe() -> Result<String, libtest_mimic::Failed> {
    Ok(std::env::current_exe()
        .ctx("current_exe")?
        .to_string_lossy()
        .into_owned())
}

/// pmcstat with `args`, the workload `name` in the environment, and
/// `stdin_line` written to its standard input (the handshake of workloads
/// that wait for one).
fn pmcstat(
    args: &[&str],
    workload: &str,
    stdin_line: bool,
) -> Result<Output, libtest_mimic::Failed> {
    let mut child = Command::new(PMCSTAT)
        .args(args)
        .env(crate::workloads::ENV, workload)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .ctx("spawn pmcstat")?;
    let mut stdin = child.stdin.take().ok_or("no stdin")?;
    if stdin_line {
        stdin.write_all(b"go\n").ctx("write go")?;
    }
    drop(stdin);
    let out = child.wait_with_output().ctx("wait pmcstat")?;
    ensure!(
        out.status.success(),
        "pmcstat {args:?}: {:?}\n{}",
        out.status,
        text(&out.stderr)
    );
    Ok(out)
}

/// The last CSV value of `label` (pmcstat's --csv count lines).
fn csv_total(out: &str, label: &str) -> Result<u64, libtest_mimic::Failed> {
    let quoted = format!(",\"{label}\",");
    out.lines()
        .rev()
        .find_map(|l| {
            l.split_once(&quoted)
                .and_then(|(_, r)| r.split(',').next()?.parse().ok())
        })
        .ok_or_else(|| format!("no {label} count in:\n{out}").into())
}

/// Records of one kind in pmcstat's text form: their fields after the kind.
fn records<'a>(out: &'a str, kind: &str) -> Vec<Vec<&'a str>> {
    out.lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            (f.next() == Some(kind)).then(|| f.collect())
        })
        .collect()
}

fn exit_totals_of_e_equal_the_counted_total() -> TestResult {
    let exe = exe()?;
    let out = pmcstat(
        &["-E", "-p", "page-faults,usr", "--csv", "--", &exe, "3000"],
        "touch",
        false,
    )?;
    let err = text(&out.stderr);
    let total = csv_total(&err, "p/page-faults,usr")?;
    // `exitval PMCID PID VALUE`, as pmcstat prints PMCLOG_TYPE_PROCEXIT.
    let exits = records(&err, "exitval");
    println!("counted {total}; exit records {exits:?}");
    ensure!(exits.len() == 1, "one process, one exit record: {err}");
    let value: u64 = exits[0][2].parse().ctx("exitval value")?;
    ensure!(value == total, "exit value {value} vs counted {total}");
    ensure!(total >= 3000, "3000 fresh pages touched, {total} faults");
    // With -d, a record per process of the tree (pmcstat(8): "useful for
    // mapping the performance characteristics of a complex pipeline").
    let out = pmcstat(
        &[
            "-d",
            "-E",
            "-p",
            "page-faults,usr",
            "--csv",
            "--",
            &exe,
            "2000",
            "6000",
        ],
        "fork-touch",
        true,
    )?;
    let err = text(&out.stderr);
    let total = csv_total(&err, "p/page-faults,usr")?;
    let exits = records(&err, "exitval");
    let forks = records(&err, "fork");
    println!("-d: counted {total}; exit records {exits:?}; forks {forks:?}");
    ensure!(
        exits.len() == 2,
        "parent and child, two exit records: {err}"
    );
    let value = |pid: &str| -> Result<u64, libtest_mimic::Failed> {
        exits
            .iter()
            .find(|f| f[1] == pid)
            .and_then(|f| f[2].parse().ok())
            .ok_or_else(|| format!("no exit record for {pid}: {err}").into())
    };
    let (parent, child) = (forks[0][0], forks[0][1]);
    let (p, c) = (value(parent)?, value(child)?);
    ensure!(
        c >= 2000 && p >= 6000,
        "child {c} (2000 pages), parent {p} (6000 pages)"
    );
    ensure!(p + c == total, "exit values {p} + {c} vs counted {total}");
    Ok(())
}

fn switch_counts_of_w_add_up_to_the_total() -> TestResult {
    let exe = exe()?;
    // One thread that sleeps 30 times (a switch each) while faulting.
    let out = pmcstat(
        &["-W", "-p", "page-faults,usr", "--csv", "--", &exe, "30"],
        "touch-sleep",
        true,
    )?;
    let err = text(&out.stderr);
    let total = csv_total(&err, "p/page-faults,usr")?;
    // `cswval PMCID PID VALUE` per switch-out: pmcstat_log.c prints
    // PMCLOG_TYPE_PROCCSW as "cswval" "0x%x %d %jd".
    let csw = records(&err, "cswval");
    let sum: u64 = csw.iter().filter_map(|f| f[2].parse::<u64>().ok()).sum();
    println!(
        "1 thread: {} switch records summing to {sum}; counted {total}",
        csw.len()
    );
    ensure!(csw.len() >= 30, "30 sleeps, {} switch records", csw.len());
    ensure!(
        sum == total,
        "switch counts sum to {sum}, counted {total} (the slice before exit comes from the sched:sched_process_exit tracepoint: tracefs)"
    );
    // Three spinning threads: records from each, all adding up. Page
    // faults add up exactly; task-clock within 0.01%: the switch records
    // come from sibling perf events opened next to the counter (see
    // src/backend/linux/sampling.rs), two clocks read microseconds apart.
    for (spec, tolerance) in [("page-faults,usr", 0.0), ("task-clock,usr", 1e-4)] {
        let out = pmcstat(
            &["-W", "-p", spec, "--csv", "--", &exe, "200"],
            "threads3",
            true,
        )?;
        let err = text(&out.stderr);
        let total = csv_total(&err, &format!("p/{spec}"))?;
        let csw = records(&err, "cswval");
        let sum: u64 = csw.iter().filter_map(|f| f[2].parse::<u64>().ok()).sum();
        // FreeBSD's cswval line has no thread id: the records of the four
        // threads are told apart only by their number here.
        println!(
            "3 threads, {spec}: {} switch records summing to {sum}; counted {total}",
            csw.len(),
        );
        ensure!(
            csw.len() >= 4,
            "main + 3 threads, {} switch records",
            csw.len()
        );
        let apart = (sum as f64 - total as f64).abs() / (total.max(1) as f64);
        ensure!(
            apart <= tolerance,
            "{spec}: switch counts sum to {sum}, counted {total} (each thread's slice before \
             its exit comes from the sched:sched_process_exit tracepoint: tracefs)"
        );
    }
    Ok(())
}

/// Samples the `hot` workload into a log in `dir`; returns the log's path.
fn sample_hot(dir: &TempDir, ms: &str) -> Result<String, libtest_mimic::Failed> {
    let log = dir.path("samples.pmclog");
    pmcstat(
        &[
            "-n",
            "200000",
            "-P",
            "cpu-clock,usr",
            "-O",
            &log,
            "--",
            &exe()?,
            ms,
        ],
        "hot",
        false,
    )?;
    Ok(log)
}

/// The hot function's address and size in this binary's symbol table.
fn hot_symbol() -> Result<(String, u64, u64), libtest_mimic::Failed> {
    let data = std::fs::read(exe()?).ctx("read own executable")?;
    let file = object::File::parse(&*data).ctx("parse own executable")?;
    file.symbols()
        .filter_map(|s| {
            let name = format!("{:#}", rustc_demangle::demangle(s.name().ok()?));
            name.ends_with("hot_function_for_profiling")
                .then(|| (name, s.address(), s.size()))
        })
        .next()
        .ok_or_else(|| "no hot_function_for_profiling symbol".into())
}

fn pcs_of_m_fall_in_the_hot_functions_range() -> TestResult {
    let dir = TempDir::new("options")?;
    let log = sample_hot(&dir, "300")?;
    let m = dir.path("pcs.txt");
    pmcstat(&["-R", &log, "-m", &m], "", false)?;
    let lines = std::fs::read_to_string(&m).ctx("read -m output")?;
    let (name, address, size) = hot_symbol()?;
    let mut hot = 0;
    let mut all = 0;
    for l in lines.lines() {
        // pmcpl_annotate.c `pmcpl_annotate_process`: "%p %s 0x%jx 0x%jx",
        // start and end from the symbol table (link-time, so a PIE's pc is
        // not between them); Rust names hold spaces.
        let bad = || format!("not `pc name start end`: {l}");
        let (pc, rest) = l.split_once(' ').ok_or_else(bad)?;
        let (rest, end) = rest.rsplit_once(' ').ok_or_else(bad)?;
        let (function, start) = rest.rsplit_once(' ').ok_or_else(bad)?;
        let f = [pc, function, start, end];
        let hex = |s: &str| u64::from_str_radix(s.trim_start_matches("0x"), 16);
        let (pc, start, end) = (hex(f[0]).ctx(l)?, hex(f[2]).ctx(l)?, hex(f[3]).ctx(l)?);
        ensure!(start < end && pc != 0, "not a function's range: {l}");
        all += 1;
        if f[1] == name {
            hot += 1;
            ensure!(
                start == address && end - start == size,
                "{l}: the ELF symbol is at {address:#x}, {size} bytes long"
            );
        }
    }
    println!("{hot} of {all} sampled pcs in {name} ({size} bytes)");
    ensure!(
        all > 100 && hot * 10 >= all * 9,
        "{hot} of {all} samples in the hot function"
    );
    Ok(())
}

fn a_names_every_frame_with_its_source_line() -> TestResult {
    let dir = TempDir::new("options")?;
    let log = sample_hot(&dir, "300")?;
    let a = dir.path("annotated.txt");
    pmcstat(&["-R", &log, "-a", &a], "", false)?;
    let annotated = std::fs::read_to_string(&a).ctx("read -a output")?;
    let dump = text(&pmcstat(&["-R", &log], "", false)?.stdout);
    let chains = dump.lines().filter(|l| l.starts_with("callchain ")).count();
    let samples = annotated.lines().filter(|l| *l == "--").count();
    ensure!(
        samples == chains,
        "{samples} samples in -a, {chains} callchains in the log"
    );
    // The hot function's lines in the workload's source.
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/live/workloads.rs");
    let src = std::fs::read_to_string(&source).ctx("read workloads.rs")?;
    let first = src
        .lines()
        .position(|l| l.contains("pub fn hot_function_for_profiling"))
        .ok_or("no hot function in workloads.rs")?
        + 1;
    let last = first
        + src
            .lines()
            .skip(first)
            .position(|l| l == "}")
            .ok_or("unterminated hot function")?
        + 1;
    // rustc gives a few compiler-made instructions of the hot loop DWARF
    // line 0, "no source line" (binutils' addr2line prints `?` for them);
    // `-a` prints those as pmcstat prints an unresolved line, `??:0`.
    let (mut hot, mut in_range, mut no_line) = (0, 0, 0);
    let mut outside = Vec::new();
    for l in annotated
        .lines()
        .filter(|l| l.contains("hot_function_for_profiling"))
    {
        // `pc function file:line` (pmcpl_annotate_cg.c).
        hot += 1;
        let (file, line) = l
            .rsplit_once(' ')
            .and_then(|(_, fl)| fl.rsplit_once(':'))
            .ok_or(l)?;
        let line: usize = line.parse().ctx(l)?;
        if file.ends_with("workloads.rs") && (first..=last).contains(&line) {
            in_range += 1;
        } else if (file, line) == ("??", 0) {
            no_line += 1;
        } else {
            outside.push(l);
        }
    }
    println!(
        "{samples} samples; {hot} hot frames, {in_range} on lines {first}-{last} of workloads.rs, \
         {no_line} on instructions without a line"
    );
    ensure!(
        outside.is_empty(),
        "{} hot frames outside lines {first}-{last}:\n{}",
        outside.len(),
        outside.join("\n")
    );
    ensure!(
        in_range >= samples * 9 / 10,
        "{in_range} of {samples} samples have a hot frame on its lines ({no_line} without a line)"
    );
    Ok(())
}

fn z_limits_the_depth_and_v_counts_the_samples() -> TestResult {
    let dir = TempDir::new("options")?;
    let log = sample_hot(&dir, "200")?;
    let depth = |args: &[&str]| -> Result<Vec<usize>, libtest_mimic::Failed> {
        let f = dir.path("folded.txt");
        let mut all = vec!["-R", log.as_str(), "--folded", f.as_str()];
        all.extend_from_slice(args);
        pmcstat(&all, "", false)?;
        let folded = std::fs::read_to_string(&f).ctx("read folded")?;
        Ok(folded
            .lines()
            .filter_map(|l| Some(l.rsplit_once(' ')?.0.split(';').count()))
            .collect())
    };
    let full = depth(&[])?;
    let two = depth(&["-z", "2"])?;
    println!("frames per stack: full {full:?}, -z 2 {two:?}");
    ensure!(
        full.iter().any(|&d| d > 2),
        "stacks deeper than 2 without -z: {full:?}"
    );
    ensure!(
        !two.is_empty() && two.iter().all(|&d| d <= 2),
        "-z 2: {two:?}"
    );
    let out = pmcstat(&["-R", &log, "-v", "-z", "1", "-a", "-"], "", false)?;
    let o = text(&out.stdout);
    let dump = text(&pmcstat(&["-R", &log], "", false)?.stdout);
    let chains = dump.lines().filter(|l| l.starts_with("callchain ")).count();
    // -z 1 -a: one frame line, then `--`, per sample.
    let frames = o.lines().filter(|l| l.starts_with("0x")).count();
    ensure!(
        frames == chains,
        "{frames} frames for {chains} samples at depth 1"
    );
    let total = o
        .lines()
        .find_map(|l| {
            l.trim()
                .strip_prefix("#samples/total")?
                .trim()
                .parse::<usize>()
                .ok()
        })
        .ok_or_else(|| format!("no #samples/total in -v output:\n{o}"))?;
    ensure!(o.contains("CONVERSION STATISTICS:"), "{o}");
    ensure!(
        total == chains,
        "-v says {total} samples, the log has {chains}"
    );
    Ok(())
}

fn i_keeps_one_threads_samples() -> TestResult {
    let dir = TempDir::new("options")?;
    let log = dir.path("threads.pmclog");
    pmcstat(
        &[
            "-n",
            "500000",
            "-P",
            "cpu-clock,usr",
            "-O",
            &log,
            "--",
            &exe()?,
            "300",
        ],
        "threads3",
        true,
    )?;
    // Samples per thread, from the log's records (pmcstat -R's callchain
    // line, pmcstat_log.c's "%d 0x%x %d %d %c", has no thread id).
    let mut per_tid: std::collections::BTreeMap<String, usize> = Default::default();
    let file = std::fs::File::open(&log).ctx("open the log")?;
    for e in pmc::log::LogReader::from_reader(file) {
        if let pmc::log::LogRecord::Callchain { tid, .. } = e.ctx("read the log")?.record {
            *per_tid.entry(tid.to_string()).or_default() += 1;
        }
    }
    println!("samples per thread: {per_tid:?}");
    ensure!(
        per_tid.len() >= 3,
        "three spinning threads sampled: {per_tid:?}"
    );
    let all: usize = per_tid.values().sum();
    for (tid, n) in &per_tid {
        let out = pmcstat(&["-R", &log, "-i", tid, "-a", "-"], "", false)?;
        let kept = text(&out.stdout).lines().filter(|l| *l == "--").count();
        ensure!(
            kept == *n,
            "-i {tid}: {kept} samples, the log has {n} of {all}"
        );
    }
    Ok(())
}

fn r_looks_executables_up_under_a_root() -> TestResult {
    let dir = TempDir::new("options")?;
    let log = sample_hot(&dir, "200")?;
    // A root holding a copy of this executable at its own path, and an
    // empty one.
    let exe = exe()?;
    let root = dir.path("root");
    let copy = format!("{root}{exe}");
    std::fs::create_dir_all(Path::new(&copy).parent().ok_or("no parent")?).ctx("mkdir root")?;
    std::fs::copy(&exe, &copy).ctx("copy executable")?;
    let empty = dir.path("empty");
    std::fs::create_dir_all(&empty).ctx("mkdir empty root")?;
    let graph = |root: &str| -> Result<String, libtest_mimic::Failed> {
        let out = pmcstat(&["-R", &log, "-r", root, "-G", "-"], "", false)?;
        Ok(text(&out.stdout))
    };
    let with = graph(&root)?;
    let without = graph(&empty)?;
    println!(
        "-r root: {} | -r empty: {}",
        with.lines().nth(2).unwrap_or(""),
        without.lines().nth(2).unwrap_or("")
    );
    ensure!(
        // The header, a blank line (pmcpl_callgraph.c), the top node.
        with.lines()
            .nth(2)
            .is_some_and(|l| l.contains("hot_function_for_profiling")),
        "the copy under the root resolves: {with}"
    );
    ensure!(
        !without.contains("hot_function_for_profiling"),
        "nothing under an empty root resolves: {without}"
    );
    Ok(())
}

/// `-R /dev/stdin` fed by a pipe (`cat log | pmcstat -R /dev/stdin`) dumps
/// what `-R log` does: the log is read once, as a pipe can be.
fn r_dumps_a_log_read_from_a_pipe() -> TestResult {
    let dir = TempDir::new("options")?;
    let log = sample_hot(&dir, "100")?;
    let from_file = text(&pmcstat(&["-R", &log], "", false)?.stdout);
    let mut cat = Command::new("cat")
        .arg(&log)
        .stdout(Stdio::piped())
        .spawn()
        .ctx("spawn cat")?;
    let pipe = cat.stdout.take().ok_or("no cat stdout")?;
    let out = Command::new(PMCSTAT)
        .args(["-R", "/dev/stdin"])
        .stdin(Stdio::from(pipe))
        .output()
        .ctx("run pmcstat -R /dev/stdin")?;
    let _ = cat.wait();
    ensure!(
        out.status.success(),
        "pmcstat -R /dev/stdin: {:?}\n{}",
        out.status,
        text(&out.stderr)
    );
    let from_pipe = text(&out.stdout);
    println!(
        "-R {} lines from the file, {} from a pipe",
        from_file.lines().count(),
        from_pipe.lines().count()
    );
    ensure!(
        from_file.lines().any(|l| l.starts_with("callchain ")),
        "the dump of the file has no callchain: {from_file}"
    );
    ensure!(
        from_pipe == from_file,
        "-R of a pipe printed {} lines, of the file {}",
        from_pipe.lines().count(),
        from_file.lines().count()
    );
    Ok(())
}

fn l_lists_and_u_describes_events() -> TestResult {
    let out = pmcstat(&["-L"], "", false)?;
    let list = text(&out.stdout);
    ensure!(
        list.lines().all(|l| l.starts_with('\t')) && list.contains("\tcpu-clock\n"),
        "-L: {list}"
    );
    // The software PMU's events in sysfs are in the list.
    for e in std::fs::read_dir("/sys/bus/event_source/devices/software/events")
        .into_iter()
        .flatten()
        .flatten()
    {
        let name = e.file_name().to_string_lossy().into_owned();
        if ["cpu-clock", "task-clock", "page-faults", "context-switches"].contains(&name.as_str()) {
            ensure!(list.contains(&format!("\t{name}\n")), "{name} not in -L");
        }
    }
    let out = pmcstat(&["-u", "CLOCK"], "", false)?;
    let desc = text(&out.stdout);
    ensure!(
        desc.contains("cpu-clock:\t") && desc.contains("task-clock:\t"),
        "-u CLOCK: {desc}"
    );
    ensure!(
        desc.lines().all(|l| l
            .split(":\t")
            .next()
            .is_some_and(|n| n.to_lowercase().contains("clock"))),
        "-u CLOCK matched a name without `clock`: {desc}"
    );
    Ok(())
}

fn options_that_cannot_apply_say_why() -> TestResult {
    for (args, needle) in [
        (vec!["-e", "-P", "cpu-clock", "-O", "x", "--", "true"], "-e"),
        (vec!["-M", "map", "-R", "x"], "-M"),
        (vec!["-e", "-g", "-R", "x"], "binutils gprof"),
        (vec!["-I", "-R", "x"], "-I"),
        (vec!["-f", "threshold=5", "-R", "x", "-G", "-"], "-f"),
        (
            vec!["-T", "-f", "threshold=x", "-P", "cpu-clock", "--", "true"],
            "threshold",
        ),
        (vec!["-E", "-s", "page-faults"], "-E and -W"),
        (
            vec!["-W", "-P", "cpu-clock", "-O", "x", "--", "true"],
            "-E and -W",
        ),
        (vec!["-T", "-p", "task-clock", "--", "true"], "-T"),
        (vec!["-T", "-l", "1", "-P", "cpu-clock", "--", "true"], "-l"),
        (vec!["-z", "0", "-R", "x"], "-z"),
    ] {
        let out = Command::new(PMCSTAT).args(&args).output().ctx("pmcstat")?;
        let err = text(&out.stderr);
        // EX_USAGE, as pmcstat.c's errx(EX_USAGE, …) for each misuse.
        ensure!(
            out.status.code() == Some(64),
            "{args:?}: {:?} {err}",
            out.status
        );
        ensure!(
            err.contains(needle),
            "{args:?} does not name {needle}: {err}"
        );
    }
    // -k is accepted with a warning, as pmcstat does since -k became moot.
    let out = Command::new(PMCSTAT)
        .args(["-k", "/boot/kernel", "-p", "task-clock,usr", "--", "true"])
        .output()
        .ctx("pmcstat -k")?;
    ensure!(out.status.success(), "-k: {}", text(&out.stderr));
    ensure!(
        text(&out.stderr).contains("-k /boot/kernel has no effect"),
        "{}",
        text(&out.stderr)
    );
    Ok(())
}

/// A tmux server of our own (its own socket), killed on drop.
struct Tmux(String);

impl Tmux {
    fn run(&self, args: &[&str]) -> Result<String, libtest_mimic::Failed> {
        // The pane's command runs under $SHELL, else the user's login
        // shell: `nobody`'s is nologin, and CI's environment has no SHELL.
        let out = Command::new("tmux")
            .args(["-L", &self.0, "-f", "/dev/null"])
            .args(args)
            .env("SHELL", "/bin/sh")
            .output()
            .ctx("tmux")?;
        ensure!(out.status.success(), "tmux {args:?}: {}", text(&out.stderr));
        Ok(text(&out.stdout))
    }

    /// Polls the pane until `pred` holds or `secs` pass.
    fn wait_for(
        &self,
        secs: u64,
        pred: impl Fn(&str) -> bool,
    ) -> Result<String, libtest_mimic::Failed> {
        let end = Instant::now() + Duration::from_secs(secs);
        loop {
            let screen = self.run(&["capture-pane", "-p"])?;
            if pred(&screen) {
                return Ok(screen);
            }
            if Instant::now() >= end {
                return Err(format!("after {secs} s the pane shows:\n{screen}").into());
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["-L", &self.0, "kill-server"])
            .output();
    }
}

/// Pids of the processes whose environment holds `var=value` (those of
/// other users, unreadable, are not ours).
fn processes_with_env(mark: &str) -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ"))
                .is_ok_and(|env| env.split(|&b| b == 0).any(|v| v == mark.as_bytes()))
        })
        .collect()
}

/// The hot function in the top view's FUNCTION column: its name cut and
/// padded by pmcpl_callgraph.c's `" %-10.10s %-20.20s"`
/// (pmcstat_cgnode_topprint), which starts after `"%5.5s"` and the image.
fn hot_function_column() -> String {
    let name = crate::freebsd_reports::rust_name(crate::workloads::hot_function_for_profiling);
    format!("{name:<20.20}")
}

/// The hot function's caller in the CALLERS column: pmcstat_cgnode_topprint
/// prints each caller from a `char ns[30]`, so cut at 29 characters.
fn caller_column() -> String {
    let name = crate::freebsd_reports::rust_name(crate::workloads::run_if_requested);
    name.chars().take(29).collect()
}

/// Whether a top view row (not the header) shows the hot function.
fn shows_hot_function(row: &str) -> bool {
    row.chars().skip(17).take(20).collect::<String>() == hot_function_column()
}

/// The `Samples: N` of the top view's first line.
fn samples_shown(screen: &str) -> Option<u64> {
    let l = screen.lines().next()?;
    l.split("Samples: ").nth(1)?.split(' ').next()?.parse().ok()
}

fn top_view_in_tmux_shows_the_hot_function_and_q_quits() -> TestResult {
    let tmux = Tmux(format!("pmcstat-top-{}", std::process::id()));
    let exe = exe()?;
    // After pmcstat: its status and whether the terminal is back in
    // canonical mode (stty prints `icanon`, not `-icanon`).
    // The workload inherits a mark of this run, so that the check below
    // finds its process and no other run's.
    let mark = format!("PMC_TOP_TEST={}", std::process::id());
    let script = format!(
        "env {}=hot {mark} {PMCSTAT} -T -P cpu-clock,usr -n 1000000 -w 0.3 -- {exe} 60000; \
         echo EXIT:$?; stty -a | grep -o -- '-\\?icanon\\b'; sleep 60",
        crate::workloads::ENV
    );
    tmux.run(&["new-session", "-d", "-x", "150", "-y", "30", &script])?;
    let first = tmux.wait_for(30, |s| s.lines().nth(3).is_some_and(shows_hot_function))?;
    println!("{}", first.lines().take(4).collect::<Vec<_>>().join("\n"));
    ensure!(
        first.starts_with("PMC: [cpu-clock,usr] Samples: "),
        "{first}"
    );
    ensure!(
        first
            .lines()
            .nth(2)
            // pmcpl_cg_topdisplay: "%5.5s %-10.10s %-20.20s %s\n".
            .is_some_and(|l| l == "%SAMP IMAGE      FUNCTION             CALLERS"),
        "{first}"
    );
    ensure!(
        !processes_with_env(&mark).is_empty(),
        "the running workload is not found by its mark {mark}"
    );
    let alt = tmux.run(&["display", "-p", "#{alternate_on}"])?;
    ensure!(
        alt.trim() == "1",
        "the view is not on the alternate screen: {alt}"
    );
    // It updates: accumulate mode (`c` `a`) makes the count grow.
    tmux.run(&["send-keys", "c", "a"])?;
    let before =
        samples_shown(&tmux.wait_for(10, |s| s.contains("accumulation mode"))?).unwrap_or(0);
    let later = tmux.wait_for(10, |s| samples_shown(s).is_some_and(|n| n > before))?;
    println!("samples: {before} → {:?}", samples_shown(&later));
    // Space pauses the display: the count stays; space again resumes.
    tmux.run(&["send-keys", "Space"])?;
    let paused = samples_shown(&tmux.wait_for(10, |s| s.contains("=> pause"))?);
    std::thread::sleep(Duration::from_millis(1000));
    let still = samples_shown(&tmux.run(&["capture-pane", "-p"])?);
    ensure!(
        paused == still,
        "paused display changed: {paused:?} → {still:?}"
    );
    tmux.run(&["send-keys", "Space"])?;
    tmux.wait_for(10, |s| samples_shown(s) != paused)?;
    tmux.run(&["send-keys", "q"])?;
    // Both lines: the shell prints stty's answer after EXIT, and a loaded
    // machine can be caught between the two.
    let after = tmux.wait_for(15, |s| {
        s.contains("EXIT:") && s.lines().any(|l| matches!(l.trim(), "icanon" | "-icanon"))
    })?;
    println!("{}", after.trim());
    ensure!(after.contains("EXIT:0"), "q: {after}");
    ensure!(
        after.lines().any(|l| l.trim() == "icanon"),
        "terminal left in raw mode: {after}"
    );
    ensure!(
        !after.contains("%SAMP"),
        "the view is still on screen: {after}"
    );
    let alt = tmux.run(&["display", "-p", "#{alternate_on} #{cursor_flag}"])?;
    ensure!(
        alt.trim() == "0 1",
        "alternate screen / cursor not restored: {alt}"
    );
    // q interrupted the 60 s workload: no process of it is left.
    let left = processes_with_env(&mark);
    ensure!(left.is_empty(), "the workload still runs: {left:?}");
    // A command that ignores SIGINT is killed: q still ends pmcstat.
    let tmux = Tmux(format!("pmcstat-top-int-{}", std::process::id()));
    let script = format!(
        "{PMCSTAT} -T -P cpu-clock,usr -w 0.3 -- sh -c 'trap \"\" INT; while :; do :; done'; \
         echo EXIT:$?; sleep 60"
    );
    tmux.run(&["new-session", "-d", "-x", "150", "-y", "30", &script])?;
    tmux.wait_for(30, |s| s.starts_with("PMC: [cpu-clock,usr]"))?;
    tmux.run(&["send-keys", "q"])?;
    let after = tmux.wait_for(15, |s| s.contains("EXIT:"))?;
    ensure!(
        after.contains("EXIT:0"),
        "q with a SIGINT-proof command: {after}"
    );
    Ok(())
}

/// `-T` on a shell that runs `true` over and over (`env true`: the
/// shell's own is a builtin; thousands of processes
/// a second come and go, each followed, mapped and exited in the log):
/// after a while of it the view still shows frames, and `q` ends pmcstat
/// and the loop. Before the view let go of exited processes and took its
/// records a bounded number at a time, this view grew by megabytes a
/// second and `q` waited for it to catch up (more than 15 s after a
/// minute). The guard below only marks a hang.
fn top_view_under_process_churn_quits_on_q() -> TestResult {
    let tmux = Tmux(format!("pmcstat-top-churn-{}", std::process::id()));
    let mark = format!("PMC_TOP_CHURN_TEST={}", std::process::id());
    let script = format!(
        "env {mark} {PMCSTAT} -T -P cpu-clock -w 0.5 -- sh -c 'while :; do env true; done'; \
         echo EXIT:$?; sleep 60"
    );
    tmux.run(&["new-session", "-d", "-x", "150", "-y", "30", &script])?;
    // `[cpu-clock]`, or `[cpu-clock,usr]` where pmcstat falls back to user
    // mode (paranoid 2 without CAP_PERFMON).
    tmux.wait_for(30, |s| s.starts_with("PMC: [cpu-clock"))?;
    // Let the churn run, then see the view still refreshes.
    std::thread::sleep(Duration::from_secs(10));
    let before = samples_shown(&tmux.run(&["capture-pane", "-p"])?);
    tmux.wait_for(30, |s| {
        s.starts_with("PMC: [cpu-clock") && samples_shown(s) != before
    })?;
    let asked = Instant::now();
    tmux.run(&["send-keys", "q"])?;
    let after = tmux.wait_for(30, |s| s.contains("EXIT:"))?;
    println!("q answered within {:?}", asked.elapsed());
    ensure!(after.contains("EXIT:0"), "q under churn: {after}");
    let left = processes_with_env(&mark);
    ensure!(left.is_empty(), "the loop still runs: {left:?}");
    Ok(())
}

/// `pmcstat -T … -- <this binary>` running the `hot-until-eof` workload,
/// piped: its output so far is given to `enough` after each frame, and
/// once it says so the workload's standard input closes, the workload
/// ends and so does the view. The view's first frame with samples
/// resolves this (large, debug) binary's symbols, which takes seconds on
/// a loaded machine: a workload of fixed length could end before the view
/// has shown it twice.
fn top_until(
    args: &[&str],
    enough: impl Fn(&str) -> bool,
) -> Result<String, libtest_mimic::Failed> {
    use std::io::BufRead;
    let exe = exe()?;
    let mut all: Vec<&str> = args.to_vec();
    all.extend(["--", &exe, "60000"]);
    let mut child = Command::new(PMCSTAT)
        .args(&all)
        .env(crate::workloads::ENV, "hot-until-eof")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .ctx("spawn pmcstat")?;
    let stdin = child.stdin.take().ok_or("no stdin")?;
    let mut stdout = std::io::BufReader::new(child.stdout.take().ok_or("no stdout")?);
    let mut o = String::new();
    let mut line = String::new();
    while stdout.read_line(&mut line).ctx("read the view")? > 0 {
        o.push_str(&line);
        line.clear();
        if o.ends_with("\n\n") && enough(&o) {
            break;
        }
    }
    drop(stdin);
    std::io::Read::read_to_string(&mut stdout, &mut o).ctx("read the view")?;
    let out = child.wait_with_output().ctx("wait pmcstat")?;
    ensure!(
        out.status.success(),
        "pmcstat {all:?}: {:?}\n{}",
        out.status,
        text(&out.stderr)
    );
    Ok(o)
}

fn top_view_without_a_terminal_prints_frames() -> TestResult {
    // Piped, the view prints a frame per interval and ends with the command.
    let frames = |o: &str| o.matches("PMC: [cpu-clock,usr] Samples: ").count();
    let hot = |o: &str| {
        o.lines()
            .filter(|l| shows_hot_function(l) && !l.contains("CALLERS"))
            .count()
    };
    let o = top_until(
        &["-T", "-n", "1000000", "-P", "cpu-clock,usr", "-w", "0.2"],
        |o| frames(o) >= 3 && hot(o) >= 2,
    )?;
    println!("{} frames, {} with the hot function", frames(&o), hot(&o));
    ensure!(
        frames(&o) >= 3 && hot(&o) >= 2,
        "the command ended before 3 frames, 2 with the hot function:\n{o}"
    );
    ensure!(!o.contains('\u{1b}'), "escape sequences in piped output");
    // -I: the leaf as its address, its caller still named.
    let caller_rows = |o: &str| {
        o.lines()
            .filter(|l| l.contains(&caller_column()) && !l.contains("CALLERS"))
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    let o = top_until(
        &[
            "-T",
            "-I",
            "-n",
            "1000000",
            "-P",
            "cpu-clock,usr",
            "-w",
            "0.2",
        ],
        |o| !caller_rows(o).is_empty(),
    )?;
    let rows = caller_rows(&o);
    println!("-I rows: {:?}", rows.first());
    ensure!(!rows.is_empty(), "no rows with the caller:\n{o}");
    ensure!(
        rows.iter().all(|r| r
            .split_whitespace()
            .nth(2)
            .is_some_and(|f| f.starts_with("0x"))),
        "-I shows names for leaves:\n{o}"
    );
    Ok(())
}
