//! A log is untrusted input (issue 32, items 3–6): the objects it names
//! are opened only as regular files named by absolute paths, with every
//! size in them checked, compressed debug sections are inflated only up to
//! a cap, and root does not read another user's log without `--force`.
//!
//! Each report runs as a child under a watchdog (a hang is killed after
//! [`WATCHDOG`] and fails), an address-space limit that keeps a runaway
//! read from taking the machine ([`ADDRESS_SPACE_KB`]), and GNU time's
//! peak resident set, which must stay under [`PEAK_RSS_CAP_KB`] — many
//! times what a report of these logs needs (about 20 MB).

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use pmc::log::{LogRecord, LogWriter};
use pmc::probe::Requirement as R;

use crate::ensure;
use crate::harness::{Context, LiveTest, TestResult, test};
use crate::temp::TempDir;

const PMCSTAT: &str = env!("CARGO_BIN_EXE_pmcstat");

/// A report that has not finished by then hangs.
const WATCHDOG: Duration = Duration::from_secs(60);
/// `ulimit -v` of the report: room for the 1 GiB a decompression bomb
/// inflates to (so its cost shows in the peak below), not for the
/// unbounded reads of a device.
const ADDRESS_SPACE_KB: u64 = 3 << 20;
/// The peak resident set a report of one of these logs may reach.
const PEAK_RSS_CAP_KB: u64 = 512 << 10;

/// Where the named object is mapped in the made-up process 100.
const BIAS: u64 = 0x5555_0000_0000;

fn guarded() -> Vec<R> {
    vec![R::Program("time".into())]
}

pub fn tests() -> Vec<LiveTest> {
    let with_binutils = || {
        let mut r = guarded();
        r.extend(["cc", "objcopy", "gzip"].map(|p| R::Program(p.into())));
        r
    };
    vec![
        test(
            "hostile_logs::a_map_in_naming_a_device_is_not_read",
            guarded(),
            a_map_in_naming_a_device_is_not_read,
        ),
        test(
            "hostile_logs::a_map_in_naming_a_fifo_does_not_block",
            guarded(),
            a_map_in_naming_a_fifo_does_not_block,
        ),
        test(
            "hostile_logs::a_sparse_2_gib_file_is_not_read_into_memory",
            guarded(),
            a_sparse_2_gib_file_is_not_read_into_memory,
        ),
        test(
            "hostile_logs::a_relative_exec_path_is_not_opened_in_the_current_directory",
            guarded(),
            a_relative_exec_path_is_not_opened_in_the_current_directory,
        ),
        test(
            "hostile_logs::a_debug_section_claiming_4_gib_is_not_inflated",
            with_binutils(),
            a_debug_section_claiming_4_gib_is_not_inflated,
        ),
        test(
            "hostile_logs::a_1_gib_zlib_bomb_in_debug_info_is_not_inflated",
            with_binutils(),
            a_1_gib_zlib_bomb_in_debug_info_is_not_inflated,
        ),
        test(
            "hostile_logs::root_refuses_a_log_another_user_owns_without_force",
            vec![R::Root],
            root_refuses_a_log_another_user_owns_without_force,
        ),
    ]
}

/// How a guarded report ended.
#[derive(Debug)]
struct Guarded {
    /// `None`: killed by the watchdog, or by a signal.
    status: Option<i32>,
    timed_out: bool,
    seconds: f64,
    peak_rss_kb: Option<u64>,
    stderr: String,
}

impl Guarded {
    /// The report finished, exited 0 and stayed under the memory cap.
    fn ok(&self, what: &str) -> TestResult {
        ensure!(
            !self.timed_out,
            "{what}: still running after {WATCHDOG:?} (killed); stderr: {}",
            self.stderr
        );
        ensure!(
            self.status == Some(0),
            "{what}: exit status {:?} after {:.1} s, peak RSS {:?} kB; stderr: {}",
            self.status,
            self.seconds,
            self.peak_rss_kb,
            self.stderr
        );
        let peak = self.peak_rss_kb.ok_or("GNU time gave no peak RSS")?;
        ensure!(
            peak <= PEAK_RSS_CAP_KB,
            "{what}: peak RSS {peak} kB, the cap is {PEAK_RSS_CAP_KB} kB"
        );
        Ok(())
    }
}

/// `pmcstat ARGS` in `cwd`, under the watchdog, the address-space limit
/// and GNU time (its own process group, killed whole on a hang).
fn run_guarded(cwd: &Path, args: &[&str]) -> Result<Guarded, libtest_mimic::Failed> {
    use std::os::unix::process::CommandExt as _;
    let rss = cwd.join(".peak-rss");
    let _ = std::fs::remove_file(&rss);
    let stderr_path = cwd.join(".stderr");
    let stderr = std::fs::File::create(&stderr_path).ctx("create the stderr file")?;
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(r#"ulimit -v "$1" && out="$2" && shift 2 && exec time -f %M -o "$out" "$@""#)
        .arg("sh")
        .arg(ADDRESS_SPACE_KB.to_string())
        .arg(&rss)
        .arg(PMCSTAT)
        .args(args)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(stderr)
        .process_group(0)
        .spawn()
        .ctx("spawn pmcstat under sh and time")?;
    let started = Instant::now();
    let mut timed_out = false;
    let status = loop {
        if let Some(status) = child.try_wait().ctx("wait for pmcstat")? {
            break status;
        }
        if started.elapsed() > WATCHDOG {
            timed_out = true;
            let group = nix::unistd::Pid::from_raw(child.id() as i32);
            let _ = nix::sys::signal::killpg(group, nix::sys::signal::Signal::SIGKILL);
            break child.wait().ctx("reap the killed report")?;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let seconds = started.elapsed().as_secs_f64();
    // GNU time writes "Command exited with non-zero status N" before %M
    // when the command fails: the number is the last line.
    let peak_rss_kb = std::fs::read_to_string(&rss)
        .ok()
        .and_then(|t| t.lines().last().and_then(|l| l.trim().parse().ok()));
    let stderr = std::fs::read_to_string(&stderr_path).unwrap_or_default();
    let _ = std::fs::remove_file(&stderr_path);
    let status = if timed_out { None } else { status.code() };
    // GNU time exits with its command's status; a command killed by a
    // signal is 128 + the signal.
    Ok(Guarded {
        status,
        timed_out,
        seconds,
        peak_rss_kb,
        stderr,
    })
}

/// A log of process 100 with `before` (MAP_IN, PROCEXEC …) and one sample
/// per pc.
fn write_log(path: &Path, before: Vec<LogRecord>, pcs: &[u64]) -> TestResult {
    let file = std::fs::File::create(path).ctx("create log")?;
    let mut w = LogWriter::new(file, &pmc::global::this_machine()).ctx("LogWriter::new")?;
    let mut records = vec![LogRecord::PmcAllocateDyn {
        pmcid: 1,
        event: 0,
        flags: 0,
        name: "cpu-clock".into(),
    }];
    records.extend(before);
    for pc in pcs {
        records.push(LogRecord::Callchain {
            pid: 100,
            tid: 100,
            pmcid: 1,
            cpu: 0,
            userspace: true,
            pcs: vec![*pc, *pc + 0x10],
        });
    }
    for (t, r) in records.iter().enumerate() {
        w.write(r, t as u64 + 1).ctx("write record")?;
    }
    w.close().ctx("close log")?;
    Ok(())
}

fn map_in(path: &str) -> LogRecord {
    LogRecord::MapIn {
        pid: 100,
        start: BIAS,
        path: path.to_string(),
    }
}

/// Every report that opens objects (the profile's symbolizer, with and
/// without DWARF, and `-a`/`-m`), at once, with `-v`.
fn report_everything(dir: &TempDir, log: &Path) -> Result<Guarded, libtest_mimic::Failed> {
    let log = log.to_string_lossy().into_owned();
    let (g, f, a, m) = (
        dir.path("out.graph"),
        dir.path("out.folded"),
        dir.path("out.a"),
        dir.path("out.m"),
    );
    let run = run_guarded(
        dir.dir(),
        &[
            "-R", &log, "-v", "-G", &g, "--folded", &f, "-a", &a, "-m", &m,
        ],
    )?;
    println!(
        "pmcstat -R {log} -v -G -a -m --folded: status {:?}, {:.2} s, peak RSS {:?} kB",
        run.status, run.seconds, run.peak_rss_kb
    );
    Ok(run)
}

/// The report named the object `name+0x…` (it was not read) and said why.
fn unread_and_said(dir: &TempDir, run: &Guarded, path: &str, why: &str) -> TestResult {
    run.ok(path)?;
    let folded = std::fs::read_to_string(dir.join("out.folded")).ctx("read the folded stacks")?;
    let name = path.rsplit('/').next().unwrap_or(path);
    ensure!(
        folded.contains(&format!("{name}+0x")),
        "{path}: the folded stacks do not hold the unread object's frames: {folded}"
    );
    ensure!(
        run.stderr.contains(path) && run.stderr.contains(why),
        "{path}: -v does not say {why:?}: {}",
        run.stderr
    );
    Ok(())
}

fn a_map_in_naming_a_device_is_not_read() -> TestResult {
    for device in ["/dev/zero", "/dev/urandom"] {
        let dir = TempDir::new("hostile")?;
        let log = dir.join("device.log");
        write_log(&log, vec![map_in(device)], &[BIAS + 0x1000])?;
        let run = report_everything(&dir, &log)?;
        unread_and_said(&dir, &run, device, "not a regular file")?;
    }
    Ok(())
}

fn a_map_in_naming_a_fifo_does_not_block() -> TestResult {
    let dir = TempDir::new("hostile")?;
    let fifo = dir.path("prog");
    nix::unistd::mkfifo(
        fifo.as_str(),
        nix::sys::stat::Mode::from_bits_truncate(0o644),
    )
    .ctx("mkfifo")?;
    let log = dir.join("fifo.log");
    write_log(&log, vec![map_in(&fifo)], &[BIAS + 0x1000])?;
    let run = report_everything(&dir, &log)?;
    unread_and_said(&dir, &run, &fifo, "not a regular file")
}

fn a_sparse_2_gib_file_is_not_read_into_memory() -> TestResult {
    let dir = TempDir::new("hostile")?;
    let sparse = dir.path("sparse");
    std::fs::File::create(&sparse)
        .and_then(|f| f.set_len(2 << 30))
        .ctx("make a sparse 2 GiB file")?;
    let log = dir.join("sparse.log");
    write_log(&log, vec![map_in(&sparse)], &[BIAS + 0x1000])?;
    let run = report_everything(&dir, &log)?;
    // Not an ELF file: nothing to say beyond the name it keeps.
    run.ok(&sparse)?;
    let folded = std::fs::read_to_string(dir.join("out.folded")).ctx("read the folded stacks")?;
    ensure!(folded.contains("sparse+0x"), "{folded}");
    Ok(())
}

fn a_relative_exec_path_is_not_opened_in_the_current_directory() -> TestResult {
    let dir = TempDir::new("hostile")?;
    // What a comm-named exec record makes the reader open: ./true.
    nix::unistd::mkfifo(
        dir.join("true").as_path(),
        nix::sys::stat::Mode::from_bits_truncate(0o644),
    )
    .ctx("mkfifo")?;
    let log = dir.join("exec.log");
    let exec = LogRecord::ProcExec {
        pid: 100,
        pmcid: 1,
        entry: 0,
        dynaddr: BIAS,
        path: "true".into(),
    };
    write_log(&log, vec![exec, map_in("true")], &[BIAS + 0x1000])?;
    let run = report_everything(&dir, &log)?;
    run.ok("PROCEXEC \"true\"")?;
    ensure!(
        run.stderr.contains("true") && run.stderr.contains("not an absolute path"),
        "-v does not say the relative path was not opened: {}",
        run.stderr
    );
    ensure!(
        run.stderr.matches("not an absolute path").count() == 1,
        "said more than once per path: {}",
        run.stderr
    );
    Ok(())
}

/// A program with DWARF, its debug sections zlib-compressed
/// (`SHF_COMPRESSED`), and the pc of its `main` in process 100.
fn compressed_program(dir: &TempDir) -> Result<(std::path::PathBuf, u64), libtest_mimic::Failed> {
    use object::{Object as _, ObjectSegment as _, ObjectSymbol as _};
    let source = dir.join("prog.c");
    std::fs::write(
        &source,
        "int pmc_hostile_leaf(int x) { return x * 3; }\n\
         int main(int argc, char **argv) { (void)argv; return pmc_hostile_leaf(argc); }\n",
    )
    .ctx("write prog.c")?;
    let prog = dir.join("prog");
    crate::run_ok(
        "cc",
        &[
            "-g",
            "-O0",
            "-o",
            &prog.to_string_lossy(),
            &source.to_string_lossy(),
        ],
    )?;
    crate::run_ok(
        "objcopy",
        &["--compress-debug-sections=zlib", &prog.to_string_lossy()],
    )?;
    let bytes = std::fs::read(&prog).ctx("read prog")?;
    let elf = object::File::parse(&*bytes).ctx("parse prog")?;
    let page = elf
        .segments()
        .filter(|s| {
            matches!(s.flags(), object::SegmentFlags::Elf { p_flags } if p_flags & object::elf::PF_X != 0)
        })
        .map(|s| s.address() & !0xfff)
        .min()
        .ok_or("prog has no executable segment")?;
    let main = elf
        .symbols()
        .find(|s| s.name() == Ok("main"))
        .ok_or("prog has no main")?
        .address();
    Ok((prog, main - page + BIAS + 1))
}

/// The file offset of the section header of `name` (64-bit ELF).
fn section_header(bytes: &[u8], name: &str) -> Result<usize, libtest_mimic::Failed> {
    use object::read::elf::{FileHeader as _, SectionHeader as _};
    let header = object::elf::FileHeader64::<object::Endianness>::parse(bytes).ctx("ELF header")?;
    let endian = header.endian().ctx("endianness")?;
    let sections = header.sections(endian, bytes).ctx("section table")?;
    let (index, section) = sections
        .iter()
        .enumerate()
        .find(|(_, s)| sections.section_name(endian, s) == Ok(name.as_bytes()))
        .ok_or_else(|| format!("no {name}"))?;
    ensure!(
        section.sh_flags(endian) & u64::from(object::elf::SHF_COMPRESSED) != 0,
        "{name} is not SHF_COMPRESSED"
    );
    Ok(header.e_shoff(endian) as usize + index * header.e_shentsize(endian) as usize)
}

fn u64_at(bytes: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap())
}

/// The report of a log naming `prog`: it still names `main`, and `-v`
/// says the section was not inflated.
fn report_of_bomb(dir: &TempDir, prog: &Path, pc: u64, claimed: &str) -> TestResult {
    let log = dir.join("bomb.log");
    let path = prog.to_string_lossy().into_owned();
    write_log(&log, vec![map_in(&path)], &[pc])?;
    let run = report_everything(dir, &log)?;
    run.ok(&path)?;
    let annotated = std::fs::read_to_string(dir.join("out.a")).ctx("read -a")?;
    ensure!(
        annotated.contains(" main "),
        "-a does not name main from the symbol table: {annotated}"
    );
    ensure!(
        run.stderr.contains(&path)
            && run.stderr.contains(".debug_info")
            && run.stderr.contains(claimed),
        "-v does not say .debug_info of {path} claims {claimed}: {}",
        run.stderr
    );
    Ok(())
}

fn a_debug_section_claiming_4_gib_is_not_inflated() -> TestResult {
    let dir = TempDir::new("hostile")?;
    let (prog, pc) = compressed_program(&dir)?;
    let mut bytes = std::fs::read(&prog).ctx("read prog")?;
    let header = section_header(&bytes, ".debug_info")?;
    // Elf64_Chdr at the section's offset: ch_type, ch_reserved, ch_size.
    let offset = u64_at(&bytes, header + 24) as usize;
    bytes[offset + 8..offset + 16].copy_from_slice(&(4u64 << 30).to_le_bytes());
    std::fs::write(&prog, &bytes).ctx("write prog")?;
    report_of_bomb(&dir, &prog, pc, "4294967296")
}

fn a_1_gib_zlib_bomb_in_debug_info_is_not_inflated() -> TestResult {
    const SIZE: u64 = 1 << 30;
    let dir = TempDir::new("hostile")?;
    let (prog, pc) = compressed_program(&dir)?;
    // 1 GiB of zeros as deflate (gzip -9: about 1 MB), in a zlib frame:
    // the 2-byte header, gzip's deflate data without its 10-byte header
    // and 8-byte trailer, and the Adler-32 of SIZE zeros.
    let gzip = Command::new("sh")
        .arg("-c")
        .arg(format!("head -c {SIZE} /dev/zero | gzip -9 -n"))
        .output()
        .ctx("gzip 1 GiB of zeros")?;
    ensure!(
        gzip.status.success() && gzip.stdout.len() > 18,
        "gzip failed"
    );
    let deflate = &gzip.stdout[10..gzip.stdout.len() - 8];
    let adler = ((SIZE % 65521) << 16) as u32 | 1;
    let mut section = Vec::new();
    // Elf64_Chdr: ELFCOMPRESS_ZLIB, reserved, ch_size, ch_addralign.
    section.extend_from_slice(&1u32.to_le_bytes());
    section.extend_from_slice(&0u32.to_le_bytes());
    section.extend_from_slice(&SIZE.to_le_bytes());
    section.extend_from_slice(&1u64.to_le_bytes());
    section.extend_from_slice(&[0x78, 0xda]);
    section.extend_from_slice(deflate);
    section.extend_from_slice(&adler.to_be_bytes());
    // The bomb goes at the end of the file; .debug_info's header points
    // at it.
    let mut bytes = std::fs::read(&prog).ctx("read prog")?;
    let header = section_header(&bytes, ".debug_info")?;
    let offset = bytes.len() as u64;
    bytes.extend_from_slice(&section);
    bytes[header + 24..header + 32].copy_from_slice(&offset.to_le_bytes());
    bytes[header + 32..header + 40].copy_from_slice(&(section.len() as u64).to_le_bytes());
    std::fs::write(&prog, &bytes).ctx("write prog")?;
    println!(
        "bomb: {} compressed bytes claiming {SIZE}",
        section.len() - 24
    );
    report_of_bomb(&dir, &prog, pc, &SIZE.to_string())
}

fn root_refuses_a_log_another_user_owns_without_force() -> TestResult {
    let dir = TempDir::new("hostile")?;
    let log = dir.join("theirs.log");
    write_log(&log, vec![map_in("/usr/bin/true")], &[BIAS + 0x1000])?;
    let owner = crate::temp::another_user();
    std::os::unix::fs::chown(&log, Some(owner), Some(owner))
        .ctx(&format!("chown the log to {owner}"))?;
    let (log, graph) = (log.to_string_lossy().into_owned(), dir.path("g"));
    let refused = Command::new(PMCSTAT)
        .args(["-R", &log, "-G", &graph])
        .output()
        .ctx("run pmcstat")?;
    let err = String::from_utf8_lossy(&refused.stderr);
    ensure!(
        refused.status.code() == Some(77),
        "a log of uid {owner} read as root: status {:?}, expected 77 (EX_NOPERM); stderr: {err}",
        refused.status
    );
    ensure!(
        err.contains(&owner.to_string()) && err.contains("--force") && !Path::new(&graph).exists(),
        "the refusal does not name the owner and --force, or wrote {graph}: {err}"
    );
    // The dump too reads the log.
    let dump = Command::new(PMCSTAT)
        .args(["-R", &log])
        .output()
        .ctx("run pmcstat")?;
    ensure!(
        dump.status.code() == Some(77),
        "the dump of another user's log: {:?}",
        dump.status
    );
    let forced = Command::new(PMCSTAT)
        .args(["-R", &log, "--force", "-G", &graph])
        .output()
        .ctx("run pmcstat")?;
    ensure!(
        forced.status.success() && Path::new(&graph).exists(),
        "--force: {:?} {}",
        forced.status,
        String::from_utf8_lossy(&forced.stderr)
    );
    Ok(())
}
