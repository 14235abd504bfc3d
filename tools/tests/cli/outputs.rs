//! pmcstat's outputs never destroy what they do not own (issue 32, items
//! 1 and 2): an output is opened in place, as pmcstat.c's `open(2)` and
//! perf's do — a device, FIFO, socket or symlink target is written
//! through, an existing regular file keeps its inode, mode, owner and
//! links — and an output that is an input or another output is a usage
//! error before anything is written.
//!
//! The `-R` cases read a log written here with the library's encoder, so
//! they need no PMU; the live ones sample `cpu-clock,usr` of `true`.

use std::io::Read;
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::path::Path;
use std::process::{Command, Output, Stdio};

use pmc::log::LogRecord;
use pmc::probe::Requirement as R;

use crate::ensure;
use crate::harness::{Context, LiveTest, TestResult, test};
use crate::temp::TempDir;

const PMCSTAT: &str = env!("CARGO_BIN_EXE_pmcstat");

/// sysexits.h `EX_USAGE`.
const USAGE: i32 = 64;

pub fn tests() -> Vec<LiveTest> {
    vec![
        test(
            "outputs::o_log_writes_through_a_character_device",
            vec![R::Root, R::Paranoid(2)],
            o_log_writes_through_a_character_device,
        ),
        test(
            "outputs::o_log_feeds_a_fifos_reader",
            vec![R::Paranoid(2)],
            o_log_feeds_a_fifos_reader,
        ),
        test(
            "outputs::ctrl_c_ends_the_wait_for_a_fifos_reader",
            vec![R::Paranoid(2)],
            ctrl_c_ends_the_wait_for_a_fifos_reader,
        ),
        test(
            "outputs::o_log_through_a_symlink_keeps_the_link",
            vec![R::Paranoid(2)],
            o_log_through_a_symlink_keeps_the_link,
        ),
        test(
            "outputs::o_log_keeps_a_hard_links_inode_and_links",
            vec![R::Paranoid(2)],
            o_log_keeps_a_hard_links_inode_and_links,
        ),
        test(
            "outputs::o_log_keeps_an_existing_files_mode_and_owner",
            vec![R::Root, R::Paranoid(2)],
            o_log_keeps_an_existing_files_mode_and_owner,
        ),
        test(
            "outputs::lowercase_o_writes_through_a_device_and_a_fifo",
            vec![R::Root, R::Paranoid(2)],
            lowercase_o_writes_through_a_device_and_a_fifo,
        ),
        test(
            "outputs::a_report_writes_through_a_device_a_fifo_and_a_socket",
            vec![R::Root],
            a_report_writes_through_a_device_a_fifo_and_a_socket,
        ),
        test(
            "outputs::a_report_never_overwrites_its_own_log",
            vec![],
            a_report_never_overwrites_its_own_log,
        ),
        test(
            "outputs::two_outputs_into_one_file_are_refused",
            vec![],
            two_outputs_into_one_file_are_refused,
        ),
        test(
            "outputs::a_live_log_and_its_report_in_one_file_are_refused",
            vec![],
            a_live_log_and_its_report_in_one_file_are_refused,
        ),
    ]
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn run(args: &[&str]) -> Result<Output, libtest_mimic::Failed> {
    Command::new(PMCSTAT)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .ctx("run pmcstat")
}

fn describe(args: &[&str], out: &Output) -> String {
    format!(
        "pmcstat {args:?}: status {:?}, stderr {:?}",
        out.status.code(),
        text(&out.stderr)
    )
}

fn run_ok(args: &[&str]) -> Result<Output, libtest_mimic::Failed> {
    let out = run(args)?;
    ensure!(out.status.success(), "{}", describe(args, &out));
    Ok(out)
}

/// A short sampled run of `true` with `-O log` and `extra` options.
fn record(log: &str, extra: &[&str]) -> Result<Output, libtest_mimic::Failed> {
    let mut args = vec!["-P", "cpu-clock,usr", "-O", log];
    args.extend_from_slice(extra);
    args.extend_from_slice(&["--", "true"]);
    run_ok(&args)
}

/// Fails unless `bytes` start with a pmclog INITIALIZE record.
fn starts_a_pmclog(bytes: &[u8], what: &str) -> TestResult {
    ensure!(!bytes.is_empty(), "{what}: 0 bytes, expected a pmclog");
    let first = pmc::log::LogReader::from_reader(std::io::Cursor::new(bytes.to_vec())).next();
    match first {
        Some(Ok(e)) if matches!(e.record, LogRecord::Initialize { .. }) => Ok(()),
        other => Err(format!(
            "{what}: {} bytes that do not start with INITIALIZE: {other:?}",
            bytes.len()
        )
        .into()),
    }
}

/// `mknod path c 1 3`: a character device with /dev/null's numbers.
fn null_device(path: &Path) -> TestResult {
    let out = Command::new("mknod")
        .arg(path)
        .args(["c", "1", "3"])
        .output()
        .ctx("mknod")?;
    ensure!(
        out.status.success(),
        "mknod {} c 1 3: {}",
        path.display(),
        text(&out.stderr)
    );
    Ok(())
}

/// Fails unless `path` is still the character device (1, 3).
fn still_null_device(path: &Path, what: &str) -> TestResult {
    let m = std::fs::symlink_metadata(path).ctx("lstat the device")?;
    ensure!(
        m.file_type().is_char_device() && m.rdev() == libc::makedev(1, 3),
        "{what}: {} is no longer the character device (1, 3): {:?}, {} bytes",
        path.display(),
        m.file_type(),
        m.len()
    );
    Ok(())
}

/// A FIFO at `path` with its reader: everything written into it until
/// [`FifoReader::finish`], from however many writers.
struct FifoReader {
    // Held open so the reader sees no end of file before the writer under
    // test opens the FIFO (or never does).
    keep_open: Option<std::fs::File>,
    thread: std::thread::JoinHandle<std::io::Result<Vec<u8>>>,
}

impl FifoReader {
    fn new(path: &Path) -> Result<FifoReader, libtest_mimic::Failed> {
        use std::os::unix::fs::OpenOptionsExt;
        nix::unistd::mkfifo(path, nix::sys::stat::Mode::from_bits_truncate(0o600)).ctx("mkfifo")?;
        // A non-blocking open of the read end succeeds without a writer; the
        // test's own write end then lets the reader block for data.
        let mut reader = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(path)
            .ctx("open the FIFO's read end")?;
        let keep_open = std::fs::OpenOptions::new()
            .write(true)
            .open(path)
            .ctx("open the FIFO's write end")?;
        nix::fcntl::fcntl(
            &reader,
            nix::fcntl::FcntlArg::F_SETFL(nix::fcntl::OFlag::empty()),
        )
        .ctx("make the FIFO's read end blocking")?;
        let thread = std::thread::spawn(move || {
            let mut bytes = Vec::new();
            reader.read_to_end(&mut bytes).map(|_| bytes)
        });
        Ok(FifoReader {
            keep_open: Some(keep_open),
            thread,
        })
    }

    /// What was written, once every writer closed it.
    fn finish(mut self) -> Result<Vec<u8>, libtest_mimic::Failed> {
        drop(self.keep_open.take());
        self.thread
            .join()
            .map_err(|_| libtest_mimic::Failed::from("the FIFO's reader panicked"))?
            .ctx("read the FIFO")
    }
}

fn o_log_writes_through_a_character_device() -> TestResult {
    let dir = TempDir::new("outputs")?;
    let device = dir.join("fn");
    null_device(&device)?;
    record(&dir.path("fn"), &[])?;
    still_null_device(&device, "-O fn")
}

fn o_log_feeds_a_fifos_reader() -> TestResult {
    let dir = TempDir::new("outputs")?;
    let fifo = dir.join("log.fifo");
    // A run that fails its checks writes nothing into the FIFO (pmcstat.c
    // would have written INITIALIZE before its allocation failed).
    let reader = FifoReader::new(&fifo)?;
    let args = [
        "-P",
        "cpu-clokc,usr",
        "-O",
        &dir.path("log.fifo"),
        "--",
        "true",
    ];
    let out = run(&args);
    let bytes = reader.finish()?;
    let out = out?;
    ensure!(
        out.status.code() == Some(71) && bytes.is_empty(),
        "{}; the FIFO's reader got {} bytes",
        describe(&args, &out),
        bytes.len()
    );
    std::fs::remove_file(&fifo).ctx("remove the FIFO")?;
    let reader = FifoReader::new(&fifo)?;
    let out = record(&dir.path("log.fifo"), &[]);
    let bytes = reader.finish()?;
    out?;
    ensure!(
        std::fs::symlink_metadata(&fifo)
            .ctx("lstat the FIFO")?
            .file_type()
            .is_fifo(),
        "-O replaced the FIFO"
    );
    starts_a_pmclog(&bytes, "the FIFO's reader")
}

/// Whether process `pid` has a child (its held command: pmcstat catches
/// SIGINT from then on).
fn has_child(pid: u32) -> bool {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return false;
    };
    dir.filter_map(|e| e.ok())
        .filter_map(|e| std::fs::read_to_string(e.path().join("stat")).ok())
        .any(|stat| {
            // pid (comm) state ppid …: the fields after the last ')'.
            stat.rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().nth(1))
                .is_some_and(|ppid| ppid == pid.to_string())
        })
}

fn ctrl_c_ends_the_wait_for_a_fifos_reader() -> TestResult {
    let dir = TempDir::new("outputs")?;
    let fifo = dir.join("log.fifo");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).ctx("mkfifo")?;
    let ran = dir.join("ran");
    let mut child = Command::new(PMCSTAT)
        .args(["-P", "cpu-clock,usr", "-O", &dir.path("log.fifo"), "--"])
        .args(["touch", &dir.path("ran")])
        .stdin(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .ctx("spawn pmcstat")?;
    // Its command is held before the FIFO is opened; no reader ever comes.
    let mut polls = 0;
    while !has_child(child.id()) {
        polls += 1;
        if polls > 6000 || child.try_wait().ctx("wait")?.is_some() {
            let _ = child.kill();
            let out = child.wait_with_output().ctx("wait")?;
            return Err(format!(
                "pmcstat never held its command: {:?} {}",
                out.status,
                text(&out.stderr)
            )
            .into());
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    // Again until it ends: started with SIGINT ignored, pmcstat installs
    // its handler just after the command is held.
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    while child.try_wait().ctx("wait")?.is_none() {
        nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT).ctx("SIGINT")?;
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let out = child.wait_with_output().ctx("wait for pmcstat")?;
    ensure!(
        out.status.code() == Some(130) && text(&out.stderr).contains("reader of the FIFO"),
        "after SIGINT: status {:?}, stderr {:?}",
        out.status,
        text(&out.stderr)
    );
    ensure!(!ran.exists(), "the command ran though nothing was recorded");
    Ok(())
}

fn o_log_through_a_symlink_keeps_the_link() -> TestResult {
    let dir = TempDir::new("outputs")?;
    let target = dir.join("target.pmclog");
    std::fs::write(&target, b"").ctx("create the target")?;
    let link = dir.join("link.pmclog");
    std::os::unix::fs::symlink(&target, &link).ctx("symlink")?;
    record(&dir.path("link.pmclog"), &[])?;
    let m = std::fs::symlink_metadata(&link).ctx("lstat the link")?;
    ensure!(
        m.file_type().is_symlink(),
        "-O link replaced the symlink by a {:?}",
        m.file_type()
    );
    starts_a_pmclog(
        &std::fs::read(&target).ctx("read the target")?,
        "the link's target",
    )?;
    // A link to this process's standard output sends the log there.
    let stdout_link = dir.join("stdout.pmclog");
    std::os::unix::fs::symlink("/proc/self/fd/1", &stdout_link).ctx("symlink")?;
    let out = record(&dir.path("stdout.pmclog"), &[])?;
    ensure!(
        std::fs::symlink_metadata(&stdout_link)
            .ctx("lstat")?
            .file_type()
            .is_symlink(),
        "-O replaced the link to /proc/self/fd/1"
    );
    starts_a_pmclog(&out.stdout, "standard output through /proc/self/fd/1")
}

fn o_log_keeps_a_hard_links_inode_and_links() -> TestResult {
    let dir = TempDir::new("outputs")?;
    let log = dir.join("a.pmclog");
    std::fs::write(&log, b"an older recording").ctx("write the log")?;
    let other = dir.join("b.pmclog");
    std::fs::hard_link(&log, &other).ctx("link")?;
    let before = std::fs::metadata(&log).ctx("stat")?;
    record(&dir.path("a.pmclog"), &[])?;
    let after = std::fs::metadata(&log).ctx("stat")?;
    ensure!(
        (after.ino(), after.nlink()) == (before.ino(), 2),
        "-O gave the log inode {} with {} links, it had inode {} with 2",
        after.ino(),
        after.nlink(),
        before.ino()
    );
    starts_a_pmclog(
        &std::fs::read(&other).ctx("read the other link")?,
        "the other name of the log",
    )
}

fn o_log_keeps_an_existing_files_mode_and_owner() -> TestResult {
    let dir = TempDir::new("outputs")?;
    let log = dir.join("nobody.pmclog");
    std::fs::write(&log, b"old").ctx("write the log")?;
    std::fs::set_permissions(&log, std::fs::Permissions::from_mode(0o600)).ctx("chmod")?;
    let owner = crate::temp::another_user();
    std::os::unix::fs::chown(&log, Some(owner), Some(owner)).ctx(&format!("chown {owner}"))?;
    record(&dir.path("nobody.pmclog"), &[])?;
    let m = std::fs::metadata(&log).ctx("stat")?;
    ensure!(
        (m.mode() & 0o7777, m.uid(), m.gid()) == (0o600, owner, owner),
        "-O left the log with mode {:o}, owner {}:{}; it was 600 {owner}:{owner}",
        m.mode() & 0o7777,
        m.uid(),
        m.gid()
    );
    starts_a_pmclog(&std::fs::read(&log).ctx("read")?, "the log")
}

fn lowercase_o_writes_through_a_device_and_a_fifo() -> TestResult {
    let dir = TempDir::new("outputs")?;
    let device = dir.join("counts.dev");
    null_device(&device)?;
    run_ok(&[
        "-p",
        "task-clock",
        "-o",
        &dir.path("counts.dev"),
        "--",
        "true",
    ])?;
    still_null_device(&device, "-o")?;
    let reader = FifoReader::new(&dir.join("counts.fifo"))?;
    let out = run_ok(&[
        "-p",
        "task-clock",
        "-o",
        &dir.path("counts.fifo"),
        "--",
        "true",
    ]);
    let bytes = reader.finish()?;
    out?;
    ensure!(
        text(&bytes).contains("p/task-clock"),
        "-o FIFO: its reader got {:?}, not the count table",
        text(&bytes)
    );
    Ok(())
}

/// A pmclog with one sample of `0x1000 ← 0x2000` in process 100.
fn write_log(path: &Path) -> TestResult {
    crate::bad_input::write_log(&path.to_string_lossy(), &[100])
}

fn a_report_writes_through_a_device_a_fifo_and_a_socket() -> TestResult {
    let dir = TempDir::new("outputs")?;
    write_log(&dir.join("g.log"))?;
    let log = dir.path("g.log");
    let device = dir.join("graph.dev");
    null_device(&device)?;
    run_ok(&["-R", &log, "-G", &dir.path("graph.dev")])?;
    still_null_device(&device, "-G")?;
    run_ok(&["-R", &log, "--folded", &dir.path("graph.dev")])?;
    still_null_device(&device, "--folded")?;

    let reader = FifoReader::new(&dir.join("graph.fifo"))?;
    let out = run_ok(&["-R", &log, "-G", &dir.path("graph.fifo")]);
    let bytes = reader.finish()?;
    out?;
    ensure!(
        text(&bytes).contains("cpu-clock"),
        "-G FIFO: its reader got {:?}, not the call graph",
        text(&bytes)
    );

    // A Unix stream socket a program listens on gets the report.
    let listener = std::os::unix::net::UnixListener::bind(dir.join("graph.sock")).ctx("bind")?;
    let accept = std::thread::spawn(move || -> std::io::Result<Vec<u8>> {
        let (mut stream, _) = listener.accept()?;
        let mut bytes = Vec::new();
        stream.read_to_end(&mut bytes)?;
        Ok(bytes)
    });
    let out = run(&["-R", &log, "--folded", &dir.path("graph.sock")])?;
    if !out.status.success() {
        // Unblock the accept so the thread ends.
        let _ = std::os::unix::net::UnixStream::connect(dir.join("graph.sock"));
    }
    let bytes = accept
        .join()
        .map_err(|_| libtest_mimic::Failed::from("the socket's reader panicked"))?
        .ctx("read the socket")?;
    ensure!(
        out.status.success(),
        "{}",
        describe(&["-R", "g.log", "--folded", "graph.sock"], &out)
    );
    ensure!(
        text(&bytes).contains("0x1000"),
        "--folded socket: its reader got {:?}, not the stacks",
        text(&bytes)
    );
    Ok(())
}

/// Fails unless `args` exit with `EX_USAGE`, saying what clashes.
fn refused(args: &[&str]) -> TestResult {
    let out = run(args)?;
    let err = text(&out.stderr);
    ensure!(
        out.status.code() == Some(USAGE) && err.contains("same file"),
        "expected status {USAGE} naming the same file; {}",
        describe(args, &out)
    );
    Ok(())
}

fn a_report_never_overwrites_its_own_log() -> TestResult {
    let dir = TempDir::new("outputs")?;
    let x = dir.join("x.log");
    write_log(&x)?;
    let before = std::fs::read(&x).ctx("read the log")?;
    let log = dir.path("x.log");
    // The same file by another name: a relative path, a symlink.
    std::os::unix::fs::symlink(&x, dir.join("alias.log")).ctx("symlink")?;
    let alias = dir.path("alias.log");
    let cases: Vec<Vec<&str>> = vec![
        vec!["-G", &log],
        vec!["-F", &log],
        vec!["--folded", &log],
        vec!["--flamegraph", &log],
        vec!["--pprof", &log],
        vec!["-m", &log],
        vec!["-a", &log],
        vec!["-o", &log, "-G", "-"],
        vec!["-o", &log],
        vec!["-G", &alias],
    ];
    for case in cases {
        let mut args = vec!["-R", log.as_str()];
        args.extend_from_slice(&case);
        refused(&args)?;
        let now = std::fs::read(&x).ctx("read the log")?;
        ensure!(
            now == before,
            "pmcstat {args:?} changed its own input: {} bytes now, {} before",
            now.len(),
            before.len()
        );
    }
    // Standard output appended to the log (`pmcstat -R x.log >> x.log`).
    let append = std::fs::OpenOptions::new()
        .append(true)
        .open(&x)
        .ctx("open the log to append")?;
    let out = Command::new(PMCSTAT)
        .args(["-R", &log])
        .stdin(Stdio::null())
        .stdout(append)
        .output()
        .ctx("run pmcstat")?;
    let now = std::fs::read(&x).ctx("read the log")?;
    ensure!(
        out.status.code() == Some(USAGE) && now == before,
        "pmcstat -R x.log >> x.log: status {:?}, the log {} bytes now, {} before; stderr {:?}",
        out.status.code(),
        now.len(),
        before.len(),
        text(&out.stderr)
    );
    // `-G -` still writes the graph to standard output.
    let out = run_ok(&["-R", &log, "-G", "-"])?;
    ensure!(
        text(&out.stdout).contains("cpu-clock"),
        "-G - printed {:?}",
        text(&out.stdout)
    );
    Ok(())
}

fn two_outputs_into_one_file_are_refused() -> TestResult {
    let dir = TempDir::new("outputs")?;
    write_log(&dir.join("g.log"))?;
    let log = dir.path("g.log");
    let f = dir.path("F");
    // Not yet created: the same path, spelt the same or not.
    let dotted = format!("{}/./F", dir.dir().display());
    for case in [
        vec!["-G", f.as_str(), "--folded", f.as_str()],
        vec!["-G", f.as_str(), "--pprof", dotted.as_str()],
        vec!["-o", f.as_str(), "-F", f.as_str()],
    ] {
        let mut args = vec!["-R", log.as_str()];
        args.extend_from_slice(&case);
        refused(&args)?;
        ensure!(
            !dir.join("F").exists(),
            "pmcstat {args:?} (refused) created F"
        );
    }
    // Existing: one inode under two names.
    std::fs::write(dir.join("F"), b"keep").ctx("write F")?;
    std::fs::hard_link(dir.join("F"), dir.join("H")).ctx("link")?;
    let h = dir.path("H");
    refused(&["-R", &log, "-G", &f, "--flamegraph", &h])?;
    ensure!(
        std::fs::read(dir.join("F")).ctx("read F")? == b"keep",
        "a refused run wrote F"
    );
    Ok(())
}

fn a_live_log_and_its_report_in_one_file_are_refused() -> TestResult {
    let dir = TempDir::new("outputs")?;
    let f = dir.path("F");
    refused(&["-P", "cpu-clock,usr", "-O", &f, "-G", &f, "--", "true"])?;
    ensure!(!dir.join("F").exists(), "a refused run created F");
    std::fs::write(dir.join("F"), b"keep").ctx("write F")?;
    refused(&["-P", "cpu-clock,usr", "-O", &f, "-o", &f, "--", "true"])?;
    ensure!(
        std::fs::read(dir.join("F")).ctx("read F")? == b"keep",
        "a refused run wrote F"
    );
    Ok(())
}
