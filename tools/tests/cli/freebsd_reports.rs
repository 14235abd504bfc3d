//! pmcstat's log reports against FreeBSD's printf formats: the `-R` dump
//! (usr.sbin/pmcstat/pmcstat_log.c `pmcstat_print_log`) and the `-G` call
//! graph (pmcpl_callgraph.c), from logs written here with the library's
//! encoder so the expected text is exact; and a closed output pipe, which
//! FreeBSD's pmcstat dies of quietly (SIGPIPE).

use std::io::BufRead as _;
use std::process::{Command, Stdio};

use pmc::log::LogRecord;
use pmc::probe::Requirement as R;

use crate::ensure;
use crate::harness::{Context, LiveTest, TestResult, test};
use crate::temp::TempDir;

const PMCSTAT: &str = env!("CARGO_BIN_EXE_pmcstat");

pub fn tests() -> Vec<LiveTest> {
    vec![
        test(
            "freebsd_reports::r_dump_is_pmcstat_logs_for_every_record_type",
            vec![],
            r_dump_is_pmcstat_logs_for_every_record_type,
        ),
        test(
            "freebsd_reports::g_is_pmcpl_callgraphs_tree",
            vec![],
            g_is_pmcpl_callgraphs_tree,
        ),
        test(
            "freebsd_reports::live_g_dash_writes_to_stderr_or_the_o_file",
            vec![R::Paranoid(2)],
            live_g_dash_writes_to_stderr_or_the_o_file,
        ),
        test(
            "freebsd_reports::r_of_an_unreadable_or_foreign_file_exits_as_pmcstat_does",
            vec![],
            r_of_an_unreadable_or_foreign_file_exits_as_pmcstat_does,
        ),
        test(
            "freebsd_reports::r_dump_into_a_closed_pipe_stops_quietly",
            vec![],
            r_dump_into_a_closed_pipe_stops_quietly,
        ),
    ]
}

pub(crate) fn write_log(path: &str, records: &[LogRecord]) -> TestResult {
    let mut bytes = Vec::new();
    for (ts, r) in records.iter().enumerate() {
        r.encode(ts as u64, &mut bytes);
    }
    std::fs::write(path, bytes).ctx("write the log")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// pmcstat.h `PMCSTAT_PRINT_ENTRY(T, ...)`: `"%-9s"` of the type, then
/// `" "` and the record's own format, then `"\n"`.
fn entry(kind: &str, fields: &str) -> String {
    format!("{kind:<9} {fields}\n")
}

fn r_dump_is_pmcstat_logs_for_every_record_type() -> TestResult {
    let dir = TempDir::new("freebsd-reports")?;
    let log = dir.path("all.pmclog");
    write_log(
        &log,
        &[
            LogRecord::Initialize {
                version: pmc::log::PMC_VERSION,
                arch: 0x99,
                tsc_freq: 1_000_000_000,
                time_sec: 1,
                time_nsec: 2,
                cpuid: "GenuineIntel-6-55-4".into(),
                marked: true,
            },
            LogRecord::Initialize {
                version: pmc::log::PMC_VERSION,
                arch: 0x7777,
                tsc_freq: 0,
                time_sec: 0,
                time_nsec: 0,
                cpuid: String::new(),
                marked: false,
            },
            LogRecord::PmcAllocate {
                pmcid: 0x1100,
                event: 0x2000,
                flags: 0x40,
                rate: 65536,
            },
            LogRecord::PmcAllocateDyn {
                pmcid: 0x1200,
                event: 0,
                flags: 0x10,
                name: "cpu-clock".into(),
            },
            LogRecord::PmcAttach {
                pmcid: 0x1200,
                pid: 4242,
                path: "/usr/bin/prog".into(),
            },
            LogRecord::PmcDetach {
                pmcid: 0x1200,
                pid: 4242,
            },
            LogRecord::MapIn {
                pid: u32::MAX,
                start: 0xffff_ffff_8100_0000,
                path: "/boot/kernel/kernel".into(),
            },
            LogRecord::MapIn {
                pid: 4242,
                start: 0x20_0000,
                path: "/usr/bin/prog".into(),
            },
            LogRecord::MapOut {
                pid: 4242,
                start: 0x80_0000,
                end: 0x81_0000,
            },
            LogRecord::ProcExec {
                pid: 4242,
                pmcid: 0x1200,
                entry: 0x20_1234,
                dynaddr: 0,
                path: "/usr/bin/prog".into(),
            },
            LogRecord::ProcCsw {
                pmcid: 0x1200,
                value: 12345,
                pid: 4242,
                tid: 100_001,
            },
            LogRecord::ProcExit {
                pmcid: 0x1200,
                pid: 4242,
                value: u64::MAX,
            },
            LogRecord::ProcFork {
                oldpid: 4242,
                newpid: 4243,
            },
            LogRecord::SysExit { pid: 4243 },
            LogRecord::Userdata { value: 0xbeef },
            LogRecord::ProcCreate {
                pid: 4243,
                flags: 0x1a,
                name: "prog".into(),
            },
            LogRecord::ThrCreate {
                tid: 100_002,
                pid: 4243,
                flags: 0xb,
                name: "worker".into(),
            },
            LogRecord::ThrExit { tid: 100_002 },
            LogRecord::Callchain {
                pid: 4242,
                tid: 100_001,
                pmcid: 0x1200,
                cpu: 3,
                userspace: true,
                pcs: vec![0x20_1300, 0x20_1400, 0],
            },
            LogRecord::Callchain {
                pid: 4242,
                tid: 100_001,
                pmcid: 0x1200,
                cpu: 0,
                userspace: false,
                pcs: vec![0xffff_ffff_8100_1000],
            },
            LogRecord::Dropnotify { lost: Some(7) },
            LogRecord::Closelog,
        ],
    )?;
    let out = Command::new(PMCSTAT)
        .args(["-R", &log])
        .output()
        .ctx("run pmcstat -R")?;
    ensure!(
        out.status.success(),
        "pmcstat -R: {:?}: {}",
        out.status,
        text(&out.stderr)
    );
    // Each line from pmcstat_log.c `pmcstat_print_log`'s format for the
    // record type, through PMCSTAT_PRINT_ENTRY.
    let expected = [
        // "initlog" "0x%x \"%s\"": pl_version, pmc_name_of_cputype(pl_arch)
        // (libpmc: the __PMC_CPUS member, 0x99 INTEL_SKYLAKE_XEON).
        entry("initlog", "0xa000000 \"INTEL_SKYLAKE_XEON\""),
        // An unknown cputype: pmc_name_of_cputype returns NULL, which
        // FreeBSD's printf writes as "(null)".
        entry("initlog", "0xa000000 \"(null)\""),
        // "allocate" "0x%x \"%s\" 0x%x": pl_pmcid, pl_evname, pl_flags
        // (our libpmc's pmclog names an event number event-0x…).
        entry("allocate", "0x1100 \"event-0x2000\" 0x40"),
        // "allocatedyn" "0x%x \"%s\" 0x%x": longer than the 9 columns.
        entry("allocatedyn", "0x1200 \"cpu-clock\" 0x10"),
        // "attach" "0x%x %d \"%s\"".
        entry("attach", "0x1200 4242 \"/usr/bin/prog\""),
        // "detach" "0x%x %d".
        entry("detach", "0x1200 4242"),
        // "map-in" "%d %p \"%s\"": the kernel's pid -1.
        entry("map-in", "-1 0xffffffff81000000 \"/boot/kernel/kernel\""),
        entry("map-in", "4242 0x200000 \"/usr/bin/prog\""),
        // "map-out" "%d %p %p".
        entry("map-out", "4242 0x800000 0x810000"),
        // "exec" "0x%x %d %p \"%s\"": pl_pmcid, pl_pid, pl_entryaddr, path.
        entry("exec", "0x1200 4242 0x201234 \"/usr/bin/prog\""),
        // "cswval" "0x%x %d %jd": no thread id.
        entry("cswval", "0x1200 4242 12345"),
        // "exitval" "0x%x %d %jd": the value as a signed intmax_t.
        entry("exitval", "0x1200 4242 -1"),
        // "fork" "%d %d".
        entry("fork", "4242 4243"),
        // "exit" "%d" (SYSEXIT).
        entry("exit", "4243"),
        // "userdata" "0x%x".
        entry("userdata", "0xbeef"),
        // "create" "%d %x \"%s\"" (PROC_CREATE): flags in bare hex.
        entry("create", "4243 1a \"prog\""),
        // "thr-create" "%d %d %x \"%s\"".
        entry("thr-create", "100002 4243 b \"worker\""),
        // "thr-exit" "%d".
        entry("thr-exit", "100002"),
        // "callchain" "%d 0x%x %d %d %c": pid, pmcid, cpu, npc, u/s; then
        // PMCSTAT_PRINT_ENTRY("...", "%p") per pc (FreeBSD's %p of NULL is
        // 0x0).
        entry("callchain", "4242 0x1200 3 3 u"),
        entry("...", "0x201300"),
        entry("...", "0x201400"),
        entry("...", "0x0"),
        entry("callchain", "4242 0x1200 0 1 s"),
        entry("...", "0xffffffff81001000"),
        // "drop" and "closelog" with no fields: the padded type and " ".
        entry("drop", ""),
        entry("closelog", ""),
    ]
    .concat();
    let dump = text(&out.stdout);
    ensure!(
        dump == expected,
        "pmcstat -R:\n{dump}\nFreeBSD's pmcstat_print_log:\n{expected}"
    );
    Ok(())
}

#[inline(never)]
fn cg_leaf() -> u64 {
    std::hint::black_box(1)
}

#[inline(never)]
fn cg_caller() -> u64 {
    std::hint::black_box(2) + cg_leaf()
}

/// This test binary's first executable mapping's start: what hwpmc logs
/// as MAP_IN's `pl_start` (hwpmc_mod.c `pmc_log_process_mappings`).
pub(crate) fn own_text_start(exe: &str) -> Result<u64, libtest_mimic::Failed> {
    let maps = std::fs::read_to_string("/proc/self/maps").ctx("read /proc/self/maps")?;
    maps.lines()
        .filter(|l| l.ends_with(exe))
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let range = f.next()?;
            f.next()?.contains('x').then_some(())?;
            u64::from_str_radix(range.split('-').next()?, 16).ok()
        })
        .min()
        .ok_or_else(|| format!("no executable mapping of {exe}").into())
}

/// A name as the ELF symbol table gives it, demangled without its hash:
/// Rust's own path of the function.
pub(crate) fn rust_name<T>(_: T) -> &'static str {
    std::any::type_name::<T>()
}

fn g_is_pmcpl_callgraphs_tree() -> TestResult {
    let exe = std::env::current_exe()
        .ctx("current_exe")?
        .display()
        .to_string();
    let start = own_text_start(&exe)?;
    let leaf = cg_leaf as *const () as usize as u64;
    let caller = cg_caller as *const () as usize as u64;
    let _ = cg_caller();
    let dir = TempDir::new("freebsd-reports")?;
    let log = dir.path("cg.pmclog");
    let chain = |pcs: Vec<u64>| LogRecord::Callchain {
        pid: 10,
        tid: 10,
        pmcid: 0x500,
        cpu: 0,
        userspace: true,
        pcs,
    };
    // Three samples in cg_leaf called from cg_caller, one in cg_caller
    // itself (pcs inside the functions; callers are return addresses).
    write_log(
        &log,
        &[
            LogRecord::MapIn {
                pid: 10,
                start,
                path: exe.clone(),
            },
            LogRecord::PmcAllocateDyn {
                pmcid: 0x500,
                event: 0,
                flags: 0,
                name: "cpu-clock".into(),
            },
            chain(vec![leaf + 1, caller + 9]),
            chain(vec![leaf + 2, caller + 9]),
            chain(vec![leaf + 1, caller + 9]),
            chain(vec![caller + 1]),
        ],
    )?;
    let out = Command::new(PMCSTAT)
        .args(["-R", &log, "-G", "-"])
        .output()
        .ctx("run pmcstat -R -G")?;
    ensure!(
        out.status.success(),
        "pmcstat -R -G: {:?}: {}",
        out.status,
        text(&out.stderr)
    );
    let (leaf_name, caller_name) = (rust_name(cg_leaf), rust_name(cg_caller));
    // pmcpl_callgraph.c: "@ %s [%u samples]\n\n"; per top node
    // (pmcstat_cgnode_print): the depth in spaces, "%05.2f%% " of the
    // parent's count or "100.0%% " for all of it, " [%u] " padded to 12
    // characters, the depth again, the name, " @ %s" when the image
    // changes; a blank line after each top node.
    let expected = format!(
        "@ cpu-clock [4 samples]\n\n\
         75.00%  [3]        {leaf_name} @ {exe}\n \
         100.0%  [3]         {caller_name}\n\
         \n\
         25.00%  [1]        {caller_name} @ {exe}\n\
         \n"
    );
    let graph = text(&out.stdout);
    ensure!(
        graph == expected,
        "pmcstat -G:\n{graph}\npmcpl_callgraph.c's:\n{expected}"
    );
    // pmcstat.c: `-G -` is `pa_graphfile = pa_printfile`, and `-o FILE`
    // makes FILE the print file whether it comes before or after `-R`
    // (`case 'R'` swaps only a still-default stderr for stdout). -r makes
    // the report take the in-memory path, the other the streamed one.
    for args in [
        vec!["-R", &log, "-G", "-", "-o"],
        vec!["-o", "OUT", "-R", &log, "-G", "-"],
        vec!["-R", &log, "-r", "/", "-G", "-", "-o"],
    ] {
        let file = dir.path("printfile.txt");
        let _ = std::fs::remove_file(&file);
        let mut args: Vec<&str> = args
            .into_iter()
            .map(|a| if a == "OUT" { file.as_str() } else { a })
            .collect();
        if args.last() == Some(&"-o") {
            args.push(&file);
        }
        let out = Command::new(PMCSTAT)
            .args(&args)
            .output()
            .ctx("run pmcstat -G - -o")?;
        ensure!(
            out.status.success(),
            "pmcstat {args:?}: {}",
            text(&out.stderr)
        );
        let printed = std::fs::read_to_string(&file).unwrap_or_default();
        ensure!(
            printed == expected && out.stdout.is_empty(),
            "pmcstat {args:?}: the -o file has\n{printed}\nstdout {:?}",
            text(&out.stdout)
        );
    }
    Ok(())
}

/// A live run's `-G -` goes to pmcstat.c's `pa_printfile`: standard error
/// (`args.pa_printfile = stderr` in main's defaults; only `-R` and `-T`
/// swap it for stdout), or the `-o` file.
fn live_g_dash_writes_to_stderr_or_the_o_file() -> TestResult {
    let dir = TempDir::new("freebsd-reports")?;
    let run = |extra: &[&str]| {
        let mut args = vec!["-P", "cpu-clock,usr", "-G", "-"];
        args.extend(extra);
        // A few hundred milliseconds of user time: samples to print.
        args.extend([
            "--",
            "sh",
            "-c",
            "i=0; while [ $i -lt 30000 ]; do i=$((i+1)); done",
        ]);
        Command::new(PMCSTAT)
            .args(&args)
            .output()
            .ctx("run pmcstat -P -G -")
    };
    // pmcpl_callgraph.c's first line: "@ %s [%u samples]\n\n".
    let head = "@ cpu-clock,usr [";
    let out = run(&[])?;
    let (o, e) = (text(&out.stdout), text(&out.stderr));
    ensure!(out.status.success(), "pmcstat -P -G -: {e}");
    ensure!(
        o.is_empty() && e.lines().any(|l| l.starts_with(head)),
        "-G - without -o: stdout {o:?}, stderr {e:?}"
    );
    let file = dir.path("graph.txt");
    let out = run(&["-o", &file])?;
    let printed = std::fs::read_to_string(&file).unwrap_or_default();
    ensure!(
        out.status.success(),
        "pmcstat -P -G - -o: {}",
        text(&out.stderr)
    );
    ensure!(
        printed.starts_with(head) && out.stdout.is_empty() && !text(&out.stderr).contains(head),
        "-G - -o FILE: file {printed:?}, stdout {:?}, stderr {:?}",
        text(&out.stdout),
        text(&out.stderr)
    );
    Ok(())
}

fn r_dump_into_a_closed_pipe_stops_quietly() -> TestResult {
    let dir = TempDir::new("freebsd-reports")?;
    let log = dir.path("big.pmclog");
    // Far more text than a pipe holds (64 KiB on Linux), so pmcstat is
    // still writing when the reader goes away.
    let mut records = vec![LogRecord::PmcAllocateDyn {
        pmcid: 1,
        event: 0,
        flags: 0,
        name: "cpu-clock".into(),
    }];
    records.extend((0..20_000u64).map(|i| LogRecord::Callchain {
        pid: 1,
        tid: 1,
        pmcid: 1,
        cpu: 0,
        userspace: true,
        pcs: vec![0x1000 + i, 0x2000, 0x3000],
    }));
    write_log(&log, &records)?;
    // `pmcstat -R log | head -1`.
    let mut child = Command::new(PMCSTAT)
        .args(["-R", &log])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .ctx("spawn pmcstat -R")?;
    let stdout = child.stdout.take().ok_or("no stdout")?;
    let mut first = String::new();
    std::io::BufReader::new(stdout)
        .read_line(&mut first)
        .ctx("read one line")?;
    // The reader is dropped here: the pipe's read end is closed.
    let out = child.wait_with_output().ctx("wait for pmcstat")?;
    let err = text(&out.stderr);
    println!(
        "first line {first:?}; status {:?}; stderr {err:?}",
        out.status
    );
    ensure!(
        first == entry("allocatedyn", "0x1 \"cpu-clock\" 0x0"),
        "first line {first:?}"
    );
    ensure!(
        out.status.code() != Some(101) && !err.contains("panicked"),
        "pmcstat panicked on the closed pipe: {:?}: {err}",
        out.status
    );
    // FreeBSD's pmcstat is killed by SIGPIPE: nothing on standard error,
    // and the status a shell shows for it, 128 + SIGPIPE.
    ensure!(err.is_empty(), "stderr on a closed pipe: {err}");
    ensure!(
        out.status.code() == Some(128 + libc::SIGPIPE),
        "status {:?}, expected {} as for a process SIGPIPE killed",
        out.status,
        128 + libc::SIGPIPE
    );
    Ok(())
}

/// `-R` of a file that cannot be opened is pmcstat_open_log's
/// `errx(EX_OSERR, "ERROR: Cannot open \"%s\" for %s: %s.")`; of one that
/// is not a pmclog, the format FreeBSD's usr.sbin/pmcstat/pmcstat_log.c
/// (freebsd-src 9fd96b41) ends pmcstat_print_log with:
/// `errx(EX_DATAERR, "ERROR: event parsing failed (record %jd, offset
/// 0x%jx).", (uintmax_t) ev.pl_count + 1, ev.pl_offset)`. The first record
/// is bad, so pl_count is 0 and pl_offset 0: "(record 1, offset 0x0).",
/// errx's "pmcstat: " before it, EX_DATAERR (65). For the dump and for
/// reports alike; what our reader found may follow on later lines.
fn r_of_an_unreadable_or_foreign_file_exits_as_pmcstat_does() -> TestResult {
    let dir = TempDir::new("freebsd-reports")?;
    let missing = dir.path("missing.pmclog");
    let foreign = dir.path("foreign.pmclog");
    std::fs::write(&foreign, b"not a pmclog at all\n").ctx("write a foreign file")?;
    // sysexits.h: EX_DATAERR 65, EX_OSERR 71.
    const PARSE_FAILED: &str = "pmcstat: ERROR: event parsing failed (record 1, offset 0x0).";
    for report in [&[][..], &["-G", "-"][..]] {
        for (path, status, first_line, whole) in [
            (
                &missing,
                71,
                format!("pmcstat: ERROR: Cannot open \"{missing}\" for reading: "),
                false,
            ),
            (&foreign, 65, PARSE_FAILED.to_owned(), true),
        ] {
            let mut args = vec!["-R", path.as_str()];
            args.extend(report);
            let out = Command::new(PMCSTAT)
                .args(&args)
                .output()
                .ctx("run pmcstat -R")?;
            let err = text(&out.stderr);
            let line = err.lines().next().unwrap_or("");
            let matches = if whole {
                line == first_line
            } else {
                line.starts_with(&first_line)
            };
            ensure!(
                out.status.code() == Some(status) && matches && out.stdout.is_empty(),
                "pmcstat {args:?}: {:?}, stderr {err:?}, expected {status} and a first line {first_line:?}",
                out.status
            );
        }
    }
    Ok(())
}
