//! pmcstat's `-m`, `-a` and `-g` outputs against FreeBSD's sources: the
//! printf formats of usr.sbin/pmcstat/pmcpl_annotate.c and
//! pmcpl_annotate_cg.c, and pmcpl_gprof.c's gmon file names, from logs
//! written here with the library's encoder whose samples fall in this test
//! binary's own functions, so the expected text is exact.

use std::process::Command;

use object::{Object, ObjectSymbol};
use pmc::log::LogRecord;
use pmc::probe::Requirement as R;

use crate::ensure;
use crate::freebsd_reports::{own_text_start, rust_name, write_log};
use crate::harness::{Context, LiveTest, TestResult, test};
use crate::temp::TempDir;

const PMCSTAT: &str = env!("CARGO_BIN_EXE_pmcstat");

pub fn tests() -> Vec<LiveTest> {
    vec![
        test(
            "freebsd_annotate::m_is_pmcpl_annotates_pc_name_start_end",
            vec![],
            m_is_pmcpl_annotates_pc_name_start_end,
        ),
        test(
            "freebsd_annotate::a_is_pmcpl_annotate_cgs_frames",
            vec![R::Program("addr2line".into())],
            a_is_pmcpl_annotate_cgs_frames,
        ),
        test(
            "freebsd_annotate::g_names_gmon_files_as_pmcpl_gprof",
            vec![],
            g_names_gmon_files_as_pmcpl_gprof,
        ),
    ]
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// FreeBSD libc's `%p`: `0x` and the value in lowercase hex (`0x0` for 0).
fn c_p(v: u64) -> String {
    format!("0x{v:x}")
}

#[inline(never)]
fn an_leaf() -> u64 {
    std::hint::black_box(1)
}

#[inline(never)]
fn an_caller() -> u64 {
    std::hint::black_box(2) + an_leaf()
}

/// A function's value and size in this binary's symbol table.
fn elf_symbol(exe: &str, name: &str) -> Result<(u64, u64), libtest_mimic::Failed> {
    let data = std::fs::read(exe).ctx("read own executable")?;
    let file = object::File::parse(&*data).ctx("parse own executable")?;
    file.symbols()
        .find(|s| {
            s.name()
                .is_ok_and(|n| format!("{:#}", rustc_demangle::demangle(n)) == name)
        })
        .map(|s| (s.address(), s.size()))
        .ok_or_else(|| format!("no symbol {name} in {exe}").into())
}

/// The two functions' run-time addresses, symbol values and sizes, and the
/// log of samples in them (two in the leaf called from the caller, one in
/// the caller), one at an address nothing maps called from the caller, and
/// one of two kernel pcs no symbol covers.
struct Samples {
    exe: String,
    leaf: u64,
    caller: u64,
    leaf_symbol: (u64, u64),
    caller_symbol: (u64, u64),
    log: String,
}

/// An address nothing in the log maps.
const UNMAPPED: u64 = 0x10;

/// Kernel pcs in the last page of the address space, which no kernel
/// symbol covers (kallsyms lists none there).
const UNNAMED_KERNEL: [u64; 2] = [0xffff_ffff_ffff_f000, 0xffff_ffff_ffff_f008];

fn write_samples(dir: &TempDir) -> Result<Samples, libtest_mimic::Failed> {
    let exe = std::env::current_exe()
        .ctx("current_exe")?
        .display()
        .to_string();
    let start = own_text_start(&exe)?;
    let leaf = an_leaf as *const () as usize as u64;
    let caller = an_caller as *const () as usize as u64;
    let _ = an_caller();
    let leaf_symbol = elf_symbol(&exe, rust_name(an_leaf))?;
    let caller_symbol = elf_symbol(&exe, rust_name(an_caller))?;
    let log = dir.path("an.pmclog");
    let chain = |pcs: Vec<u64>| LogRecord::Callchain {
        pid: 10,
        tid: 10,
        pmcid: 0x500,
        cpu: 0,
        userspace: true,
        pcs,
    };
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
            chain(vec![caller + 1]),
            chain(vec![UNMAPPED, caller + 9]),
            LogRecord::Callchain {
                pid: 10,
                tid: 10,
                pmcid: 0x500,
                cpu: 0,
                userspace: false,
                pcs: UNNAMED_KERNEL.to_vec(),
            },
        ],
    )?;
    Ok(Samples {
        exe,
        leaf,
        caller,
        leaf_symbol,
        caller_symbol,
        log,
    })
}

fn run(args: &[&str]) -> Result<String, libtest_mimic::Failed> {
    let out = Command::new(PMCSTAT)
        .args(args)
        .output()
        .ctx("run pmcstat")?;
    ensure!(
        out.status.success(),
        "pmcstat {args:?}: {:?}: {}",
        out.status,
        text(&out.stderr)
    );
    Ok(text(&out.stdout))
}

fn m_is_pmcpl_annotates_pc_name_start_end() -> TestResult {
    let dir = TempDir::new("freebsd-annotate")?;
    let s = write_samples(&dir)?;
    let out = run(&["-R", &s.log, "-m", "-"])?;
    // pmcpl_annotate.c `pmcpl_annotate_process`: for the leaf pc cc[0],
    // "%p %s 0x%jx 0x%jx\n" of the pc, the symbol's name, and
    // ps_start + pi_vaddr, ps_end + pi_vaddr: the symbol table's start and
    // end (link-time addresses; this binary is a PIE, so they are not the
    // pc's run-time range). A pc no map covers prints nothing. Names are
    // demangled here (FreeBSD prints the table's raw names; C's are the
    // same).
    let line = |pc: u64, name: &str, (value, size): (u64, u64)| {
        format!("{} {name} 0x{:x} 0x{:x}\n", c_p(pc), value, value + size)
    };
    let (leaf, caller) = (rust_name(an_leaf), rust_name(an_caller));
    let expected = [
        line(s.leaf + 1, leaf, s.leaf_symbol),
        line(s.leaf + 2, leaf, s.leaf_symbol),
        line(s.caller + 1, caller, s.caller_symbol),
    ]
    .concat();
    ensure!(
        out == expected,
        "pmcstat -m:\n{out}\npmcpl_annotate.c's:\n{expected}"
    );
    Ok(())
}

/// What pmcstat_image_addr2line (libpmcstat) makes of binutils'
/// `addr2line -Cfe IMAGE` for an address: the function name line, and the
/// location line cut at its first `:` into the file and atoi of the rest.
fn addr2line(exe: &str, addr: u64) -> Result<(String, String, u32), libtest_mimic::Failed> {
    let out = Command::new("addr2line")
        .args(["-Cfe", exe, &format!("{addr:#x}")])
        .output()
        .ctx("run addr2line")?;
    ensure!(out.status.success(), "addr2line: {}", text(&out.stderr));
    let answer = text(&out.stdout);
    let mut lines = answer.lines();
    let func = lines.next().ok_or("addr2line printed nothing")?.to_string();
    let (file, rest) = lines
        .next()
        .and_then(|l| l.split_once(':'))
        .ok_or_else(|| format!("addr2line: no file:line in {answer:?}"))?;
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    Ok((func, file.to_string(), digits.parse().unwrap_or(0)))
}

fn a_is_pmcpl_annotate_cgs_frames() -> TestResult {
    let dir = TempDir::new("freebsd-annotate")?;
    let s = write_samples(&dir)?;
    let out = run(&["-R", &s.log, "-a", "-"])?;
    // Link-time address of a run-time pc of this binary.
    let bias = s.leaf - s.leaf_symbol.0;
    // pmcpl_annotate_cg.c `pmcpl_annotate_cg_process`, per pc of the
    // chain: "%p %s %s:%d\n" of the pc and addr2line's function, file and
    // line when a map and a symbol cover it, "%p <unknown> ??:0\n"
    // otherwise; "--\n" after the chain. FreeBSD asks addr2line about the
    // pc itself; callers' pcs (return addresses) are asked about one byte
    // before here, in the call instruction (annotate.rs says why).
    let frame = |pc: u64, probe: u64| -> Result<String, libtest_mimic::Failed> {
        let (func, file, line) = addr2line(&s.exe, probe - bias)?;
        Ok(format!("{} {func} {file}:{line}\n", c_p(pc)))
    };
    let caller_frame = frame(s.caller + 9, s.caller + 8)?;
    let expected = [
        frame(s.leaf + 1, s.leaf + 1)?,
        caller_frame.clone(),
        "--\n".into(),
        frame(s.leaf + 2, s.leaf + 2)?,
        caller_frame.clone(),
        "--\n".into(),
        frame(s.caller + 1, s.caller + 1)?,
        "--\n".into(),
        format!("{} <unknown> ??:0\n", c_p(UNMAPPED)),
        caller_frame,
        "--\n".into(),
        // The kernel is pmcstat_kernproc's map, unknown pcs as any other.
        format!("{} <unknown> ??:0\n", c_p(UNNAMED_KERNEL[0])),
        format!("{} <unknown> ??:0\n", c_p(UNNAMED_KERNEL[1])),
        "--\n".into(),
    ]
    .concat();
    ensure!(
        out == expected,
        "pmcstat -a:\n{out}\npmcpl_annotate_cg.c's (names and lines from addr2line -Cfe):\n{expected}"
    );
    Ok(())
}

fn g_names_gmon_files_as_pmcpl_gprof() -> TestResult {
    let dir = TempDir::new("freebsd-annotate")?;
    let s = write_samples(&dir)?;
    // A second object with the executable's basename: the same file seen
    // through a symbolic link in another directory, mapped by process 11.
    let base = s.exe.rsplit('/').next().ok_or("no basename")?.to_string();
    std::fs::create_dir(dir.path("other")).ctx("mkdir other")?;
    let twin = dir.path(&format!("other/{base}"));
    std::os::unix::fs::symlink(&s.exe, &twin).ctx("symlink")?;
    let start = own_text_start(&s.exe)?;
    let log = dir.path("twins.pmclog");
    let sample = |pid| LogRecord::Callchain {
        pid,
        tid: pid,
        pmcid: 0x500,
        cpu: 0,
        userspace: true,
        pcs: vec![s.leaf + 1],
    };
    write_log(
        &log,
        &[
            LogRecord::MapIn {
                pid: 10,
                start,
                path: s.exe.clone(),
            },
            LogRecord::MapIn {
                pid: 11,
                start,
                path: twin.clone(),
            },
            LogRecord::PmcAllocateDyn {
                pmcid: 0x500,
                event: 0,
                flags: 0,
                name: "cpu-clock".into(),
            },
            sample(10),
            sample(11),
            sample(11),
        ],
    )?;
    let gmon = dir.path("gmon");
    let out = Command::new(PMCSTAT)
        .args(["-R", &log, "-g", "-D", &gmon, "-M", "-"])
        .output()
        .ctx("run pmcstat -g")?;
    ensure!(out.status.success(), "pmcstat -g: {}", text(&out.stderr));
    // pmcpl_gprof.c `pmcstat_gmon_create_name`: "%s/%s/%s" of the -D
    // directory, the PMC's name and the image's sample name, which
    // `pmcpl_gmon_initimage` makes "%.*s.gmon" of the basename, or, when
    // an earlier image took it, "%.*s~%3.3d.gmon" from 001.
    let mut names: Vec<String> = std::fs::read_dir(format!("{gmon}/cpu-clock"))
        .ctx("read the cpu-clock directory")?
        .filter_map(|e| Some(e.ok()?.file_name().to_string_lossy().into_owned()))
        .collect();
    names.sort();
    let expected = vec![format!("{base}.gmon"), format!("{base}~001.gmon")];
    ensure!(
        names == expected,
        "gmon files {names:?}, pmcpl_gprof.c names {expected:?}"
    );
    // pmcpl_gprof.c `pmcpl_gmon_shutdown`: " \"%s\" => \"%s\"" of the
    // image's path and sample name, then " %s/%d" per PMC (samples).
    let err = text(&out.stderr);
    for (path, name, n) in [(&s.exe, &expected[0], 1), (&twin, &expected[1], 2)] {
        let line = format!(" \"{path}\" => \"{name}\" cpu-clock/{n}");
        ensure!(
            err.lines().any(|l| l == line),
            "no `{line}` in the -M map:\n{err}"
        );
    }
    Ok(())
}
