//! pmcstat's outputs on a full disk: `-o` (the counts) and `-O` (the log)
//! fail alike — the error said with its errno, the PMCs stopped, what was
//! written left readable, the command pmcstat started ended with SIGTERM
//! and waited for (as perf record ends its workload), exit EX_IOERR (74).
//! Before, `-o` exited at once and left the command running behind it,
//! and `-O` said nothing until the command had run to its end.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use libtest_mimic::{Completion, Failed, Trial};
use pmc::probe::{Environment, Requirement as R};

use crate::ensure;
use crate::harness::{Context, FORCE_ENV, Forced, Gate, LiveTest, TestResult, gate, test};
use crate::temp::TempDir;

const PMCSTAT: &str = env!("CARGO_BIN_EXE_pmcstat");

/// The `-o` test: /dev/full is a full disk anyone may write to.
pub fn tests() -> Vec<LiveTest> {
    vec![test(
        "full_disk::counts_to_a_full_disk_end_the_command_and_close_the_log",
        vec![R::Paranoid(2), R::Program("bash".into())],
        counts_to_a_full_disk_end_the_command_and_close_the_log,
    )]
}

const LOG_TEST: &str = "full_disk::a_log_on_a_full_disk_ends_the_command_and_stays_readable";

/// The `-O` test, which needs a small tmpfs: root, then mount(8) itself
/// decides (a container without CAP_SYS_ADMIN cannot mount); it is
/// skipped with mount's own words when it cannot.
pub fn trials(env: &Environment) -> Vec<Trial> {
    let forced = Forced::parse(std::env::var(FORCE_ENV).ok().as_deref());
    let verdict = gate(
        &[R::Root, R::Paranoid(2), R::Program("bash".into())],
        env,
        &forced,
    );
    vec![Trial::ignorable_test(LOG_TEST, move || match verdict {
        Gate::Skip(reason) => Ok(Completion::ignored_with(reason)),
        Gate::Fail(reason) => Err(Failed::from(reason)),
        Gate::Run => match FullTmpfs::mount(4096)? {
            // Forced without root (the matrix proving [root]): mount(8)
            // refuses for want of it, which is this test failing, not a
            // machine without tmpfs.
            Err(reason) if !nix::unistd::geteuid().is_root() => Err(Failed::from(format!(
                "EPERM: mounting a tmpfs needs root: {reason}"
            ))),
            Err(reason) => Ok(Completion::ignored_with(format!("[tmpfs] {reason}"))),
            Ok(fs) => a_log_on_a_full_disk_ends_the_command_and_stays_readable(&fs)
                .map(|()| Completion::Completed),
        },
    })]
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A 64 KiB tmpfs with `free` bytes left, unmounted on drop (before its
/// directory is removed).
struct FullTmpfs {
    dir: TempDir,
}

impl FullTmpfs {
    /// `Ok(Err(why))` when this machine cannot mount a tmpfs.
    fn mount(free: usize) -> Result<Result<FullTmpfs, String>, Failed> {
        let dir = TempDir::new("full-disk")?;
        let out = Command::new("mount")
            .args(["-t", "tmpfs", "-o", "size=64k", "pmc-full-disk"])
            .arg(dir.dir())
            .output()
            .ctx("run mount")?;
        if !out.status.success() {
            return Ok(Err(format!(
                "cannot mount a 64 KiB tmpfs: mount: {:?} {}",
                out.status,
                text(&out.stderr).trim()
            )));
        }
        let fs = FullTmpfs { dir };
        std::fs::write(fs.dir.join("filler"), vec![0u8; 64 * 1024 - free]).ctx("fill the tmpfs")?;
        Ok(Ok(fs))
    }
}

impl Drop for FullTmpfs {
    fn drop(&mut self) {
        let unmounted = Command::new("umount")
            .arg(self.dir.dir())
            .status()
            .is_ok_and(|s| s.success());
        if !unmounted {
            let _ = Command::new("umount")
                .arg("-l")
                .arg(self.dir.dir())
                .status();
        }
    }
}

/// The processes whose command line is `argv`.
fn processes_running(argv: &[&str]) -> Vec<u32> {
    let wanted: Vec<u8> = argv
        .iter()
        .flat_map(|a| [a.as_bytes(), b"\0"].concat())
        .collect();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(PathBuf::from(format!("/proc/{pid}/cmdline"))).is_ok_and(|c| c == wanted)
        })
        .collect()
}

/// What became of a run of pmcstat on a full disk.
struct Outcome {
    code: Option<i32>,
    stderr: String,
}

/// Runs pmcstat `args` on a bash loop of at most 30 s that writes
/// `signals` into `marker` when SIGTERM reaches it. Checks that pmcstat
/// failed with EX_IOERR, said ENOSPC, ended the command (SIGTERM) and
/// waited for it: no process runs the command once pmcstat has returned.
/// One left is killed, and the test fails.
fn runs_out_of_space(args: &[&str], scratch: &TempDir) -> Result<Outcome, Failed> {
    let marker = scratch.path("signals");
    let script = format!(
        "trap 'echo TERM >> {marker}; exit 143' TERM; while (( SECONDS < 30 )); do :; done"
    );
    // Unique to this run, so the command is found by its command line.
    let name = format!("pmc-full-disk-{}", std::process::id());
    let command = ["bash", "-c", script.as_str(), name.as_str()];
    // Standard error to a file: the command inherits it, and a pipe would
    // not reach its end while a command left behind holds it.
    let stderr = scratch.join("stderr");
    let began = Instant::now();
    let status = Command::new(PMCSTAT)
        .args(args)
        .arg("--")
        .args(command)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&stderr).ctx("create the stderr file")?)
        .status()
        .ctx("run pmcstat")?;
    let took = began.elapsed();
    let left = processes_running(&command);
    for &pid in &left {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid as i32),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
    let err = std::fs::read_to_string(&stderr).ctx("read pmcstat's stderr")?;
    let signals = std::fs::read_to_string(&marker).unwrap_or_default();
    println!(
        "pmcstat {args:?}: exit {:?} after {took:?}; still running: {left:?}; \
         signals the command got: {signals:?}\n{err}",
        status.code()
    );
    ensure!(
        status.code() == Some(74) && err.contains("No space left on device"),
        "pmcstat {args:?}: {status:?}, stderr {err:?}: expected EX_IOERR (74) and ENOSPC said"
    );
    ensure!(
        left.is_empty(),
        "pmcstat {args:?} returned and left the command running (pids {left:?}): \
         expected it ended and waited for"
    );
    ensure!(
        signals.trim() == "TERM" && err.contains("ending the command (pid "),
        "pmcstat {args:?}: the command got {signals:?}, stderr {err:?}: expected it ended \
         with SIGTERM, and said"
    );
    Ok(Outcome {
        code: status.code(),
        stderr: err,
    })
}

/// `-o /dev/full`: the first line of counts cannot be written. The `-O`
/// log beside it, on a disk with room, is closed whole: its records end
/// with CLOSELOG.
fn counts_to_a_full_disk_end_the_command_and_close_the_log() -> TestResult {
    let room = TempDir::new("full-disk")?;
    let log = room.path("x.log");
    let outcome = runs_out_of_space(
        &[
            "-p",
            "task-clock",
            "-P",
            "cpu-clock",
            "-O",
            &log,
            "-o",
            "/dev/full",
            "-w",
            "0.01",
        ],
        &room,
    )?;
    ensure!(
        outcome
            .stderr
            .contains("writing counts: No space left on device"),
        "exit {:?}, stderr {:?}: expected the counts' write error",
        outcome.code,
        outcome.stderr
    );
    let read = Command::new(PMCSTAT)
        .args(["-R", &log])
        .output()
        .ctx("run pmcstat -R")?;
    let dump = text(&read.stdout);
    ensure!(
        read.status.success()
            && dump.starts_with("initlog")
            && dump
                .lines()
                .last()
                .is_some_and(|l| l.starts_with("closelog"))
            && read.stderr.is_empty(),
        "pmcstat -R of the -O log beside the full -o: {:?}, stderr {:?}, records\n{dump}",
        read.status,
        text(&read.stderr)
    );
    Ok(())
}

/// `-O` on a tmpfs with one page free: the log's first write of samples
/// fills it. The log keeps what reached the disk and is read back with
/// the warning that it was cut short.
fn a_log_on_a_full_disk_ends_the_command_and_stays_readable(fs: &FullTmpfs) -> TestResult {
    let log = fs.dir.path("x.log");
    let scratch = TempDir::new("full-disk")?;
    let outcome = runs_out_of_space(&["-P", "cpu-clock", "-O", &log], &scratch)?;
    ensure!(
        outcome
            .stderr
            .contains("keeps the records written before the failure"),
        "stderr {:?}: expected where the records are",
        outcome.stderr
    );
    let bytes = Path::new(&log).metadata().map(|m| m.len()).unwrap_or(0);
    let read = Command::new(PMCSTAT)
        .args(["-R", &log])
        .output()
        .ctx("run pmcstat -R")?;
    let err = text(&read.stderr);
    let lines = text(&read.stdout).lines().count();
    println!("the log: {bytes} bytes, {lines} lines dumped by -R, which said {err:?}");
    ensure!(
        read.status.success()
            && text(&read.stdout).starts_with("initlog")
            && lines > 1
            && err.contains("ends without CLOSELOG: the recording was cut short"),
        "pmcstat -R of the log cut by the full disk ({bytes} bytes): {:?}, stderr {err:?}",
        read.status
    );
    Ok(())
}
