//! Running a command held before `exec`, so that process PMCs attach to
//! it before it runs a single instruction of its own (pmcstat forks, waits
//! and execs the same way).
//!
//! The tool re-executes itself as a trampoline with the gate's directory in
//! the environment. The trampoline opens `status` for writing (close-on-exec)
//! and `gate` for reading; the latter blocks until the parent opens the
//! writing end. [`HeldCommand::spawn`] returns only once the trampoline
//! waits there, its own start-up done, so the PMCs attached next count none
//! of it. [`HeldCommand::release`] writes the go byte and then reads
//! `status` until it closes: an end of file means the exec succeeded (the
//! descriptor closed with it); bytes mean the exec failed, with its errno.
//! No descriptor leaks into the command: std opens files close-on-exec.

use std::ffi::{OsStr, OsString};
use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus};
use std::time::Duration;

/// The environment variable that turns the tool into a trampoline.
pub const GATE_ENV: &str = "PMC_TOOLS_GATE";

/// The shell's status for a command that was not found.
pub const EXIT_NOT_FOUND: u8 = 127;
/// The shell's status for a command found but not executable.
pub const EXIT_NOT_EXECUTABLE: u8 = 126;

/// If this process is a trampoline, waits at the gate and execs the
/// command (never returns); otherwise returns at once.
pub fn run_trampoline_if_requested() {
    let Some(dir) = std::env::var_os(GATE_ENV) else {
        return;
    };
    let dir = PathBuf::from(dir);
    let mut args = std::env::args_os().skip(1);
    let (Some(path), Some(arg0)) = (args.next(), args.next()) else {
        std::process::exit(125);
    };
    // Everything the exec needs is built before the gate: what runs after
    // it is counted. (std's `Command::exec` would copy the environment
    // after it: 11 749 user instructions on arm64, counted as the
    // command's.)
    let c_string = |s: &OsStr| std::ffi::CString::new(s.as_encoded_bytes()).ok();
    let exec_path = c_string(&path);
    let argv: Option<Vec<std::ffi::CString>> = std::iter::once(arg0)
        .chain(args)
        .map(|a| c_string(&a))
        .collect();
    let envp: Option<Vec<std::ffi::CString>> = std::env::vars_os()
        .filter(|(k, _)| k != GATE_ENV)
        .map(|(k, v)| {
            let mut entry = k;
            entry.push("=");
            entry.push(v);
            c_string(&entry)
        })
        .collect();
    let (Some(exec_path), Some(argv), Some(envp)) = (exec_path, argv, envp) else {
        // An argument with a NUL byte cannot be passed to execve.
        std::process::exit(125);
    };
    let Ok(mut status) = std::fs::OpenOptions::new()
        .write(true)
        .open(dir.join("status"))
    else {
        std::process::exit(125);
    };
    let wait = std::fs::File::open(dir.join("gate")).and_then(|mut f| {
        let mut b = [0u8; 1];
        f.read(&mut b)
    });
    if !matches!(wait, Ok(1)) {
        // The parent gave up (closed without the go byte): do not run.
        std::process::exit(125);
    }
    let Err(errno) = nix::unistd::execve(&exec_path, &argv, &envp);
    let err = std::io::Error::from(errno);
    let errno = err.raw_os_error().unwrap_or(0);
    let _ = status.write_all(&errno.to_ne_bytes());
    std::process::exit(i32::from(exit_code_of_exec_error(&err)));
}

/// The status a shell gives a command whose exec failed with `err`.
pub fn exit_code_of_exec_error(err: &std::io::Error) -> u8 {
    if err.kind() == std::io::ErrorKind::NotFound {
        EXIT_NOT_FOUND
    } else {
        EXIT_NOT_EXECUTABLE
    }
}

/// Finds `program` as a shell does: a name with a `/` as it is, any other
/// in `$PATH` (the first file the caller may execute). NotFound, or
/// PermissionDenied when only files the caller may not execute were found
/// (126 in a shell). A `$PATH` directory the caller may not search hides
/// nothing from it: that is "not found" too, as bash says, where `execvp`
/// would report its EACCES.
pub fn resolve_program(program: &OsStr) -> std::io::Result<PathBuf> {
    let executable = |p: &Path| -> std::io::Result<()> {
        let meta =
            std::fs::metadata(p).map_err(|_| std::io::Error::from(std::io::ErrorKind::NotFound))?;
        if meta.is_dir() || meta.permissions().mode() & 0o111 == 0 {
            return Err(std::io::Error::from(std::io::ErrorKind::PermissionDenied));
        }
        nix::unistd::access(p, nix::unistd::AccessFlags::X_OK).map_err(std::io::Error::from)
    };
    if program.is_empty() {
        return Err(std::io::Error::from(std::io::ErrorKind::NotFound));
    }
    if program.as_encoded_bytes().contains(&b'/') {
        let path = PathBuf::from(program);
        executable(&path)?;
        return Ok(path);
    }
    // execvp's default search path when PATH is unset.
    let search = std::env::var_os("PATH").unwrap_or_else(|| "/bin:/usr/bin".into());
    let mut denied = None;
    for dir in std::env::split_paths(&search) {
        let dir = if dir.as_os_str().is_empty() {
            PathBuf::from(".")
        } else {
            dir
        };
        let candidate = dir.join(program);
        match executable(&candidate) {
            Ok(()) => return Ok(candidate),
            // Found but not executable: reported only if nothing later
            // in the path is.
            Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
                denied.get_or_insert(e);
            }
            Err(_) => {}
        }
    }
    Err(denied.unwrap_or_else(|| std::io::Error::from(std::io::ErrorKind::NotFound)))
}

/// A command started and held before its `exec`.
#[derive(Debug)]
pub struct HeldCommand {
    child: Child,
    dir: PathBuf,
    /// The gate's writing end: the go byte goes here.
    gate: std::fs::File,
    /// The exec's outcome arrives here (see the module doc).
    status: std::fs::File,
    released: bool,
}

impl HeldCommand {
    /// Starts `command args…` and returns once it waits at the gate, before
    /// its exec. Finds the program first (see [`resolve_program`]), so a
    /// command that cannot run fails here, before anything is counted.
    pub fn spawn(command: &[OsString]) -> std::io::Result<HeldCommand> {
        let Some(program) = command.first() else {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "no command given",
            ));
        };
        let path = resolve_program(program)?;
        let dir = std::env::temp_dir().join(format!(
            "pmc-tools-gate-{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos())
        ));
        std::fs::create_dir(&dir)?;
        let cleanup = |e: std::io::Error, dir: &Path| {
            let _ = std::fs::remove_dir_all(dir);
            e
        };
        let mode = nix::sys::stat::Mode::S_IRUSR | nix::sys::stat::Mode::S_IWUSR;
        for fifo in ["gate", "status"] {
            nix::unistd::mkfifo(&dir.join(fifo), mode)
                .map_err(|e| cleanup(std::io::Error::from(e), &dir))?;
        }
        // Opened before the child, without blocking: the trampoline's open
        // for writing then finds a reader.
        let status = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags_nonblock()
            .open(dir.join("status"))
            .map_err(|e| cleanup(e, &dir))?;
        let exe = std::env::current_exe().map_err(|e| cleanup(e, &dir))?;
        let child = Command::new(exe)
            .arg(&path)
            .arg(program)
            .args(&command[1..])
            .env(GATE_ENV, &dir)
            .spawn()
            .map_err(|e| cleanup(e, &dir))?;
        let mut child = child;
        match wait_at_gate(&mut child, &dir) {
            Ok(gate) => Ok(HeldCommand {
                child,
                dir,
                gate,
                status,
                released: false,
            }),
            Err(e) => {
                let _ = child.kill();
                let _ = child.wait();
                Err(cleanup(e, &dir))
            }
        }
    }

    /// The pid the command will run as.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Lets the command exec, and returns once it has: an error is the
    /// exec's own (the command never ran; see [`exit_code_of_exec_error`]).
    pub fn release(&mut self) -> std::io::Result<()> {
        self.gate.write_all(&[1])?;
        self.released = true;
        let _ = std::fs::remove_dir_all(&self.dir);
        // The status pipe was opened non-blocking; poll it until the
        // trampoline's end closes (exec or exit).
        let mut errno = Vec::new();
        let mut buf = [0u8; 4];
        loop {
            match self.status.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => errno.extend_from_slice(&buf[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    std::thread::sleep(Duration::from_micros(100));
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        match <[u8; 4]>::try_from(errno.as_slice()) {
            Ok(bytes) => Err(std::io::Error::from_raw_os_error(i32::from_ne_bytes(bytes))),
            Err(_) if errno.is_empty() => Ok(()),
            Err(_) => Err(std::io::Error::other("the command's exec reported garbage")),
        }
    }

    /// Sends `signal` to the command (pmcstat.c's `pmcstat_kill_process`
    /// sends SIGINT when pmcstat is interrupted).
    pub fn signal(&self, signal: nix::sys::signal::Signal) -> std::io::Result<()> {
        let pid = i32::try_from(self.child.id()).map_err(std::io::Error::other)?;
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), signal)
            .map_err(std::io::Error::from)
    }

    /// Waits for the command to exit.
    pub fn wait(&mut self) -> std::io::Result<ExitStatus> {
        self.child.wait()
    }

    /// Whether the command has exited (non-blocking).
    pub fn try_wait(&mut self) -> std::io::Result<Option<ExitStatus>> {
        self.child.try_wait()
    }
}

/// Opens the gate's writing end, which succeeds once the trampoline waits
/// in its open for reading; it may have died instead, so poll.
fn wait_at_gate(child: &mut Child, dir: &Path) -> std::io::Result<std::fs::File> {
    loop {
        match std::fs::OpenOptions::new()
            .write(true)
            .custom_flags_nonblock()
            .open(dir.join("gate"))
        {
            Ok(f) => return Ok(f),
            Err(e) if e.raw_os_error() == Some(nix::errno::Errno::ENXIO as i32) => {
                if let Some(status) = child.try_wait()? {
                    return Err(std::io::Error::other(format!(
                        "the command exited before it started ({status})"
                    )));
                }
                std::thread::sleep(Duration::from_micros(200));
            }
            Err(e) => return Err(e),
        }
    }
}

impl Drop for HeldCommand {
    fn drop(&mut self) {
        if !self.released {
            // Never release a command we did not mean to run.
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// `O_NONBLOCK` for the FIFOs, so a dead reader is ENXIO rather than a
/// hang, and the status reader can be opened before any writer.
trait NonBlocking {
    fn custom_flags_nonblock(&mut self) -> &mut Self;
}

impl NonBlocking for std::fs::OpenOptions {
    fn custom_flags_nonblock(&mut self) -> &mut Self {
        use std::os::unix::fs::OpenOptionsExt;
        self.custom_flags(nix::fcntl::OFlag::O_NONBLOCK.bits())
    }
}
/// The shell-style exit status of a finished command: its code, or 128 +
/// the signal that killed it.
pub fn exit_code(status: ExitStatus) -> u8 {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(c), _) => u8::try_from(c).unwrap_or(1),
        (None, Some(sig)) => u8::try_from(128 + sig).unwrap_or(255),
        _ => 1,
    }
}
