//! Running a command held before `exec`, so that process PMCs attach to
//! it before it runs a single instruction of its own (pmcstat forks, waits
//! and execs the same way).
//!
//! The tool re-executes itself as a trampoline with the gate's path in the
//! environment. The trampoline opens a FIFO for reading, which blocks until
//! the parent opens it for writing after attaching; then it execs the
//! command in the same process (same pid). No descriptor leaks into the
//! command: std opens files close-on-exec.

use std::ffi::OsString;
use std::io::{Read, Write};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus};
use std::time::Duration;

/// The environment variable that turns the tool into a trampoline.
pub const GATE_ENV: &str = "PMC_TOOLS_GATE";

/// If this process is a trampoline, waits at the gate and execs the
/// command (never returns); otherwise returns at once.
pub fn run_trampoline_if_requested() {
    let Some(gate) = std::env::var_os(GATE_ENV) else {
        return;
    };
    let args: Vec<OsString> = std::env::args_os().skip(1).collect();
    let tool = std::env::current_exe()
        .ok()
        .and_then(|p| Some(p.file_name()?.to_string_lossy().into_owned()))
        .unwrap_or_else(|| "pmc-tools".into());
    let wait = std::fs::File::open(&gate).and_then(|mut f| {
        let mut b = [0u8; 1];
        f.read(&mut b)
    });
    match wait {
        Ok(1) => {}
        // The parent gave up (closed without the go byte): do not run.
        Ok(_) => std::process::exit(125),
        Err(e) => {
            eprintln!("{tool}: waiting at the start gate: {e}");
            std::process::exit(125);
        }
    }
    let Some((program, rest)) = args.split_first() else {
        std::process::exit(125);
    };
    let err = Command::new(program).args(rest).env_remove(GATE_ENV).exec();
    eprintln!("{tool}: cannot run {}: {err}", program.to_string_lossy());
    std::process::exit(if err.kind() == std::io::ErrorKind::NotFound {
        127
    } else {
        126
    });
}

/// A command started and held before its `exec`.
#[derive(Debug)]
pub struct HeldCommand {
    child: Child,
    dir: PathBuf,
    released: bool,
}

impl HeldCommand {
    /// Starts `command args…` held at the gate.
    pub fn spawn(command: &[OsString]) -> std::io::Result<HeldCommand> {
        let Some(_) = command.first() else {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "no command given",
            ));
        };
        let dir = std::env::temp_dir().join(format!(
            "pmc-tools-gate-{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos())
        ));
        std::fs::create_dir(&dir)?;
        let fifo = dir.join("gate");
        nix::unistd::mkfifo(
            &fifo,
            nix::sys::stat::Mode::S_IRUSR | nix::sys::stat::Mode::S_IWUSR,
        )
        .map_err(std::io::Error::from)?;
        let exe = std::env::current_exe()?;
        let child = Command::new(exe).args(command).env(GATE_ENV, &fifo).spawn();
        match child {
            Ok(child) => Ok(HeldCommand {
                child,
                dir,
                released: false,
            }),
            Err(e) => {
                let _ = std::fs::remove_dir_all(&dir);
                Err(e)
            }
        }
    }

    /// The pid the command will run as.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Lets the command exec.
    pub fn release(&mut self) -> std::io::Result<()> {
        let fifo = self.dir.join("gate");
        // Opening for write blocks until the trampoline opened for read,
        // which it does first thing; it may have died instead, so poll.
        let mut file = loop {
            match std::fs::OpenOptions::new()
                .write(true)
                .custom_flags_nonblock()
                .open(&fifo)
            {
                Ok(f) => break f,
                Err(e) if e.raw_os_error() == Some(nix::errno::Errno::ENXIO as i32) => {
                    if let Some(status) = self.child.try_wait()? {
                        return Err(std::io::Error::other(format!(
                            "the command exited before it started ({status})"
                        )));
                    }
                    std::thread::sleep(Duration::from_millis(1));
                }
                Err(e) => return Err(e),
            }
        };
        file.write_all(&[1])?;
        self.released = true;
        let _ = std::fs::remove_dir_all(&self.dir);
        Ok(())
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

/// `O_NONBLOCK` for the FIFO's write side, so a dead reader is ENXIO
/// rather than a hang.
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
