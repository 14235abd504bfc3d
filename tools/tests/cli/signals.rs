//! pmcstat killed as a supervisor, a closed terminal or a user kills it:
//! SIGTERM, SIGHUP and SIGQUIT end a run as SIGINT does (the command is
//! signalled, the counts printed, the log closed), a signal pmcstat was
//! started with ignored stays ignored, and even `kill -9` leaves a log
//! whose beginning reads.

use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;
use pmc::probe::Requirement as R;

use crate::ensure;
use crate::harness::{Context, LiveTest, TestResult, test};
use crate::temp::TempDir;

const PMCSTAT: &str = env!("CARGO_BIN_EXE_pmcstat");

/// The signals a session ends a program with, besides SIGINT.
const ENDING: [Signal; 3] = [Signal::SIGTERM, Signal::SIGHUP, Signal::SIGQUIT];

/// How long pmcstat may take to stop and report: a watchdog against a
/// hang, many times what it needs.
const WATCHDOG: Duration = Duration::from_secs(20);

pub fn tests() -> Vec<LiveTest> {
    vec![
        test(
            "signals::sigterm_sighup_sigquit_end_a_recording_with_a_closed_log",
            vec![R::Paranoid(2), R::Program("env".into())],
            sigterm_sighup_sigquit_end_a_recording_with_a_closed_log,
        ),
        test(
            "signals::sigterm_sighup_sigquit_end_a_count_with_its_table",
            vec![R::Paranoid(2), R::Program("env".into())],
            sigterm_sighup_sigquit_end_a_count_with_its_table,
        ),
        test(
            "signals::a_signal_ignored_at_start_stays_ignored",
            vec![R::Paranoid(2), R::Program("env".into())],
            a_signal_ignored_at_start_stays_ignored,
        ),
        test(
            "signals::kill_9_leaves_a_log_whose_beginning_reads",
            vec![R::Paranoid(2)],
            kill_9_leaves_a_log_whose_beginning_reads,
        ),
    ]
}

/// pmcstat with `args` in `dir` (where a command's core dump of SIGQUIT
/// would go), its signals as a login shell's foreground job has them (a
/// test run in the background ignores SIGINT and SIGQUIT, and a child
/// inherits that), or with `ignored` ignored as nohup(1) does.
fn spawn_pmcstat(
    args: &[&str],
    ignored: Option<&str>,
    dir: &TempDir,
) -> Result<Child, libtest_mimic::Failed> {
    // Every ending signal not ignored here at its default: this process
    // may have inherited SIGINT ignored (a background job of a
    // non-interactive shell, as `cargo xtask test &` in a script), which
    // pmcstat would pass on to its command.
    let mut dispositions = vec!["--default-signal=INT,TERM,HUP,QUIT".to_string()];
    if let Some(sigs) = ignored {
        let defaulted: Vec<&str> = ["INT", "TERM", "HUP", "QUIT"]
            .into_iter()
            .filter(|s| !sigs.split(',').any(|i| i == *s))
            .collect();
        dispositions = vec![
            format!("--default-signal={}", defaulted.join(",")),
            format!("--ignore-signal={sigs}"),
        ];
    }
    Command::new("env")
        .args(&dispositions)
        .arg(PMCSTAT)
        .args(args)
        .current_dir(dir.dir())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .ctx("spawn env pmcstat")
}

/// The pid of `parent`'s child running `comm` (the command, once exec'd:
/// pmcstat releases it after its PMCs run).
fn child_running(child: &mut Child, comm: &str) -> Result<u32, libtest_mimic::Failed> {
    let parent = child.id();
    let deadline = Instant::now() + WATCHDOG;
    loop {
        let (found, children) = crate::real_use::child_with_comm(parent, comm);
        if let Some(pid) = found {
            return Ok(pid);
        }
        if let Some(status) = child.try_wait().ctx("try_wait")? {
            return Err(format!("pmcstat exited ({status}) before it ran {comm}").into());
        }
        ensure!(
            Instant::now() < deadline,
            "pmcstat {parent} never ran {comm} (children: {children:?})"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Waits until `what` holds, for at most the watchdog's time.
fn wait_until(what: &str, mut holds: impl FnMut() -> bool) -> TestResult {
    let deadline = Instant::now() + WATCHDOG;
    while !holds() {
        ensure!(
            Instant::now() < deadline,
            "{what} did not happen within {WATCHDOG:?}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    Ok(())
}

fn send(pid: u32, signal: Signal) -> TestResult {
    let pid = nix::unistd::Pid::from_raw(i32::try_from(pid).ctx("pid")?);
    nix::sys::signal::kill(pid, signal).ctx(&format!("kill -{signal} {pid}"))
}

/// How a signalled pmcstat ended.
struct Ended {
    status: ExitStatus,
    stderr: String,
    /// The command (`sleep`) still ran when pmcstat had exited.
    command_left_running: bool,
}

/// pmcstat's exit, whether it left its command `command` running (which
/// is ended then) and its standard error; killed (with its command) and a
/// failure if it has not exited within the watchdog's time.
fn exit_of(child: &mut Child, command: u32, what: &str) -> Result<Ended, libtest_mimic::Failed> {
    use std::io::Read;
    let deadline = Instant::now() + WATCHDOG;
    let status = loop {
        if let Some(status) = child.try_wait().ctx("wait for pmcstat")? {
            break status;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            let _ = send(command, Signal::SIGKILL);
            return Err(format!("{what}: pmcstat did not exit within {WATCHDOG:?}").into());
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    // A command left running holds pmcstat's standard error open.
    let command_left_running = still_runs(command, "sleep");
    end_leftover(command, "sleep");
    let mut err = String::new();
    if let Some(mut stderr) = child.stderr.take() {
        stderr.read_to_string(&mut err).ctx("read stderr")?;
    }
    Ok(Ended {
        status,
        stderr: err,
        command_left_running,
    })
}

/// Whether `pid` still runs `comm` (not a zombie, not another process
/// that took the pid).
fn still_runs(pid: u32, comm: &str) -> bool {
    let name = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let state = stat.rsplit_once(')').map(|(_, rest)| rest.trim_start());
    name.trim() == comm && !state.is_some_and(|s| s.starts_with('Z'))
}

/// Ends a leftover command of a failed run (by its pid).
fn end_leftover(pid: u32, comm: &str) {
    if still_runs(pid, comm) {
        let _ = send(pid, Signal::SIGKILL);
    }
}

/// The end of every signalled run: EX_OK (pmcstat.c's `exit(EX_OK)`, as
/// for SIGINT), the command no longer runs.
fn check_ended(ended: &Ended, sleeper: u32, what: &str) -> TestResult {
    let mut wrong = Vec::new();
    if ended.status.code() != Some(0) {
        wrong.push(format!("pmcstat ended with {}, not EX_OK", ended.status));
    }
    if ended.command_left_running {
        wrong.push(format!(
            "the command (sleep, pid {sleeper}) still ran after pmcstat exited"
        ));
    }
    ensure!(
        wrong.is_empty(),
        "{what}: {}; stderr {:?}",
        wrong.join(", "),
        ended.stderr
    );
    Ok(())
}

/// Runs `case` for each of [`ENDING`]; fails with every signal's failure.
fn for_each_signal(mut case: impl FnMut(Signal) -> TestResult) -> TestResult {
    let failures: Vec<String> = ENDING
        .into_iter()
        .filter_map(|signal| case(signal).err())
        .map(|e| e.message().unwrap_or("failed").to_string())
        .collect();
    ensure!(failures.is_empty(), "{}", failures.join("\n"));
    Ok(())
}

fn sigterm_sighup_sigquit_end_a_recording_with_a_closed_log() -> TestResult {
    let dir = TempDir::new("signals")?;
    for_each_signal(|signal| {
        let log = dir.join(&format!("{signal}.pmclog"));
        let log_arg = log.to_string_lossy().into_owned();
        let what = format!("-P … -O, {signal}");
        let mut child = spawn_pmcstat(
            &["-P", "cpu-clock,usr", "-O", &log_arg, "--", "sleep", "30"],
            None,
            &dir,
        )?;
        // Recording runs once the command runs and the log has its name.
        let sleeper = child_running(&mut child, "sleep")?;
        wait_until(&format!("{what}: {} appearing", log.display()), || {
            log.exists()
        })?;
        send(child.id(), signal)?;
        let ended = exit_of(&mut child, sleeper, &what)?;
        check_ended(&ended, sleeper, &what)?;
        let dump = Command::new(PMCSTAT)
            .args(["-R", &log_arg])
            .stdin(Stdio::null())
            .output()
            .ctx("pmcstat -R")?;
        let text = String::from_utf8_lossy(&dump.stdout);
        ensure!(
            dump.status.success(),
            "{what}: pmcstat -R {} failed ({}): {}; the log is {} bytes",
            log.display(),
            dump.status,
            String::from_utf8_lossy(&dump.stderr),
            std::fs::metadata(&log).map_or(0, |m| m.len())
        );
        ensure!(
            text.lines()
                .next()
                .is_some_and(|l| l.starts_with("initlog"))
                && text
                    .lines()
                    .last()
                    .is_some_and(|l| l.starts_with("closelog")),
            "{what}: the log does not run from initlog to closelog: {text}"
        );
        Ok(())
    })
}

fn sigterm_sighup_sigquit_end_a_count_with_its_table() -> TestResult {
    let dir = TempDir::new("signals")?;
    for_each_signal(|signal| {
        let what = format!("-p task-clock, {signal}");
        let mut child = spawn_pmcstat(&["-p", "task-clock", "--", "sleep", "30"], None, &dir)?;
        let sleeper = child_running(&mut child, "sleep")?;
        send(child.id(), signal)?;
        let ended = exit_of(&mut child, sleeper, &what)?;
        check_ended(&ended, sleeper, &what)?;
        // The table: pmcstat_print_headers' "p/%*s " header, then a line
        // of values.
        let mut lines = ended
            .stderr
            .lines()
            .skip_while(|l| !l.contains(" p/task-clock"));
        ensure!(
            lines.next().is_some()
                && lines
                    .next()
                    .is_some_and(|l| l.split_whitespace().all(|v| v.parse::<u64>().is_ok())),
            "{what}: the counts were not printed: {:?}",
            ended.stderr
        );
        Ok(())
    })
}

/// Whether `pid`'s `field` mask (`SigIgn`, `SigCgt`) holds `signal`.
fn signal_mask_holds(pid: u32, field: &str, signal: Signal) -> Result<bool, libtest_mimic::Failed> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ctx("/proc/PID/status")?;
    let mask = status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|m| u64::from_str_radix(m.trim(), 16).ok())
        .ok_or_else(|| format!("no {field} in /proc/{pid}/status"))?;
    Ok(mask & (1 << (signal as u64 - 1)) != 0)
}

fn a_signal_ignored_at_start_stays_ignored() -> TestResult {
    // nohup(1) ignores SIGHUP, a shell's background job SIGQUIT: pmcstat
    // leaves those ignored, for itself and for its command.
    let dir = TempDir::new("signals")?;
    let log = dir.join("nohup.pmclog");
    let log_arg = log.to_string_lossy().into_owned();
    let mut child = spawn_pmcstat(
        &["-P", "cpu-clock,usr", "-O", &log_arg, "--", "sleep", "30"],
        Some("TERM,HUP,QUIT"),
        &dir,
    )?;
    let sleeper = child_running(&mut child, "sleep")?;
    let pmcstat = child.id();
    let mut wrong = Vec::new();
    for signal in ENDING {
        for (who, pid) in [("pmcstat", pmcstat), ("its command", sleeper)] {
            if !signal_mask_holds(pid, "SigIgn", signal)? {
                wrong.push(format!("{who} does not ignore {signal}"));
            }
        }
    }
    // SIGINT still ends it.
    send(pmcstat, Signal::SIGINT)?;
    let what = "-P … -O, ignored signals, then SIGINT";
    let ended = exit_of(&mut child, sleeper, what)?;
    check_ended(&ended, sleeper, what)?;
    ensure!(wrong.is_empty(), "{}", wrong.join("; "));
    Ok(())
}

fn kill_9_leaves_a_log_whose_beginning_reads() -> TestResult {
    let dir = TempDir::new("signals")?;
    let log = dir.join("killed.pmclog");
    let log_arg = log.to_string_lossy().into_owned();
    let mut child = spawn_pmcstat(
        &["-P", "cpu-clock,usr", "-O", &log_arg, "--", "sleep", "30"],
        None,
        &dir,
    )?;
    let sleeper = child_running(&mut child, "sleep")?;
    let written = wait_until("the start of the log being written", || {
        std::fs::metadata(&log).is_ok_and(|m| m.len() > 0)
    });
    let _ = child.kill();
    let _ = child.wait();
    end_leftover(sleeper, "sleep");
    written?;
    let bytes = std::fs::read(&log).ctx("read the log")?;
    let records = readable_prefix(&bytes);
    ensure!(
        matches!(
            records.first(),
            Some(pmc::log::LogRecord::Initialize { .. })
        ),
        "the killed run's log ({} bytes) does not start with INITIALIZE: {records:?}",
        bytes.len()
    );
    ensure!(
        records
            .iter()
            .any(|r| matches!(r, pmc::log::LogRecord::MapIn { .. })),
        "the killed run's log ({} bytes) has no MAP_IN: {records:?}",
        bytes.len()
    );
    ensure!(
        !records
            .iter()
            .any(|r| matches!(r, pmc::log::LogRecord::Closelog)),
        "a log of a killed run cannot have a CLOSELOG: {records:?}"
    );
    Ok(())
}

/// The records of `bytes` up to the first that does not read (a killed
/// recording's log ends anywhere).
fn readable_prefix(bytes: &[u8]) -> Vec<pmc::log::LogRecord> {
    let mut reader = pmc::log::LogReader::from_memory();
    reader.feed(bytes);
    let mut records = Vec::new();
    while let pmc::log::ReadState::Ok(e) = reader.read() {
        records.push(e.record);
    }
    records
}
