//! Opening an output the user named (pmcstat's `-O`, `-o`, `-G`,
//! `--folded`, `-m`, `-a`, `-F`, `--pprof`, `--flamegraph`, `-M` and the
//! gmon files under `-D`): in place, as FreeBSD's pmcstat opens them
//! (pmcstat_log.c `pmcstat_open_log`: `open(path, O_WRONLY | O_CREAT |
//! O_TRUNC, 0644)` for the log, `fopen(path, "w")` for the rest). A
//! device, FIFO or the target of a symlink is written through; an existing
//! regular file is truncated and keeps its inode, mode, owner and links (perf
//! record moves a non-empty regular `perf.data` aside instead; we keep
//! pmcstat's way); a Unix stream socket a program listens on is connected
//! to. A new file gets 0666 less the umask, as `File::create` gives.
//! Nothing is ever renamed over what the path names: as root, `-O
//! /dev/null` must leave the system's `/dev/null` a device.
//!
//! [`Identity`] is what [`crate::pmcstat`] compares to refuse an output
//! that is an input or another output; [`HeldOutput`] is the `-O` log,
//! kept in memory until every check has passed and the file is opened.

use std::fs::File;
use std::io::{self, Write};
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

/// What tells a waiting open (a FIFO without a reader) to give up.
type GiveUp = Box<dyn Fn() -> bool + Send + Sync>;

static GIVE_UP: OnceLock<GiveUp> = OnceLock::new();

/// From now on, an open waiting for a FIFO's reader gives up (with
/// [`io::ErrorKind::Interrupted`]) once `give_up` says so: pmcstat's
/// live mode catches Ctrl-C, which would otherwise not end a blocked
/// `open(2)`. Without it, the open blocks as pmcstat.c's does. The first
/// call counts.
pub fn give_up_waiting_when(give_up: impl Fn() -> bool + Send + Sync + 'static) {
    let _ = GIVE_UP.set(Box::new(give_up));
}

/// How often a FIFO's open is retried while it has no reader.
const READER_POLL: Duration = Duration::from_millis(10);

/// Opens `path` for writing in place (see the module's text): a new file
/// is made with mode 0666 less the umask, as `File::create` makes one.
/// A FIFO's open waits for its reader, as open(2) does.
pub fn create(path: &Path) -> io::Result<File> {
    // Follows symlinks: what the write will reach.
    match std::fs::metadata(path) {
        Ok(m) if m.file_type().is_socket() => {
            let stream = std::os::unix::net::UnixStream::connect(path)?;
            Ok(File::from(std::os::fd::OwnedFd::from(stream)))
        }
        Ok(m) if m.file_type().is_fifo() && GIVE_UP.get().is_some() => open_fifo(path),
        _ => std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(path),
    }
}

/// A FIFO opened without blocking, retried until it has a reader (ENXIO
/// before) or [`give_up_waiting_when`]'s test says to stop; the file is
/// blocking once open, as a plain open would give it.
fn open_fifo(path: &Path) -> io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    loop {
        match std::fs::OpenOptions::new()
            .write(true)
            .custom_flags(nix::fcntl::OFlag::O_NONBLOCK.bits())
            .open(path)
        {
            Ok(file) => {
                nix::fcntl::fcntl(
                    &file,
                    nix::fcntl::FcntlArg::F_SETFL(nix::fcntl::OFlag::empty()),
                )?;
                return Ok(file);
            }
            Err(e) if e.raw_os_error() == Some(nix::errno::Errno::ENXIO as i32) => {
                if GIVE_UP.get().is_some_and(|give_up| give_up()) {
                    return Err(io::Error::new(
                        io::ErrorKind::Interrupted,
                        "interrupted while waiting for a reader of the FIFO",
                    ));
                }
                std::thread::sleep(READER_POLL);
            }
            Err(e) => return Err(e),
        }
    }
}

/// [`create`]s `path` and writes `bytes` into it.
pub fn write_file(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut file = create(path)?;
    file.write_all(bytes)?;
    file.flush()
}

/// What a path names, to tell whether two paths reach one file: the
/// device and inode of an existing file, else the absolute path it would
/// be created at (its directory canonicalized, a dangling symlink
/// followed).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Identity {
    /// An existing file: (st_dev, st_ino), and whether it is a regular
    /// file.
    Existing {
        /// `st_dev`.
        dev: u64,
        /// `st_ino`.
        ino: u64,
        /// A regular file (writes through one name replace what another
        /// wrote), not a device, FIFO or socket.
        regular: bool,
    },
    /// A file not yet created: where it will be.
    Planned(PathBuf),
}

impl Identity {
    /// The identity of `path` (see [`Identity`]).
    pub fn of(path: &Path) -> io::Result<Identity> {
        match std::fs::metadata(path) {
            Ok(m) => Ok(Identity::Existing {
                dev: m.dev(),
                ino: m.ino(),
                regular: m.file_type().is_file(),
            }),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Identity::Planned(planned(path))),
            Err(e) => Err(e),
        }
    }

    /// Whether writing to both would lose data: the same regular file, or
    /// the same file still to be made. Two writers into one device, FIFO
    /// or socket take turns and lose nothing.
    pub fn clashes_with(&self, other: &Identity) -> bool {
        match (self, other) {
            (
                Identity::Existing { dev, ino, regular },
                Identity::Existing {
                    dev: dev2,
                    ino: ino2,
                    ..
                },
            ) => *regular && (dev, ino) == (dev2, ino2),
            (Identity::Planned(a), Identity::Planned(b)) => a == b,
            _ => false,
        }
    }
}

/// Where a path that does not exist will be created: a dangling symlink's
/// target (as open(2) with O_CREAT creates it), with its directory
/// canonicalized; lexically absolute where the directory is missing too
/// (the open fails there anyway).
fn planned(path: &Path) -> PathBuf {
    let mut path = path.to_path_buf();
    // Linux's MAXSYMLINKS.
    for _ in 0..40 {
        match std::fs::read_link(&path) {
            Ok(target) => {
                path = match path.parent() {
                    Some(dir) => dir.join(target),
                    None => target,
                }
            }
            Err(_) => break,
        }
    }
    let absolute = std::path::absolute(&path).unwrap_or_else(|_| path.clone());
    match (absolute.parent(), absolute.file_name()) {
        (Some(dir), Some(name)) => match std::fs::canonicalize(dir) {
            Ok(dir) => dir.join(name),
            Err(_) => absolute,
        },
        _ => absolute,
    }
}

/// The `-O` log until its file is opened: the log is configured (its
/// INITIALIZE, then the PMCs' allocation records go in it) before the
/// PMCs are allocated, and its destination is opened only once nothing
/// the user asked for can fail any more — so a typo leaves an existing
/// log as it was, and a FIFO is not opened for a run that will not
/// happen. Until [`HeldOutput::open`], writes are kept in memory; then
/// they are written out and every later write goes to the file.
#[derive(Clone, Debug, Default)]
pub struct HeldOutput(Arc<Mutex<Held>>);

#[derive(Debug, Default)]
struct Held {
    file: Option<File>,
    /// Written before the open.
    pending: Vec<u8>,
    /// Every byte written, when a copy is asked for.
    copy: Option<Vec<u8>>,
    /// The opened file is a regular file (it can be read back).
    regular: bool,
}

impl HeldOutput {
    /// An output held in memory; with `keep_copy`, every byte is also
    /// kept to be read back ([`HeldOutput::copy`]) where the destination
    /// cannot be (a device, FIFO or socket).
    pub fn new(keep_copy: bool) -> HeldOutput {
        HeldOutput(Arc::new(Mutex::new(Held {
            copy: keep_copy.then(Vec::new),
            ..Held::default()
        })))
    }

    fn held(&self) -> std::sync::MutexGuard<'_, Held> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Writes what was held into `file`, which every later write goes to.
    /// The copy is kept only if `file` is not a regular file.
    pub fn open(&self, mut file: File) -> io::Result<()> {
        let mut held = self.held();
        held.regular = file.metadata().is_ok_and(|m| m.file_type().is_file());
        if held.regular {
            held.copy = None;
        }
        let pending = std::mem::take(&mut held.pending);
        file.write_all(&pending)?;
        held.file = Some(file);
        Ok(())
    }

    /// Whether the destination is a regular file (readable again by its
    /// path).
    pub fn is_regular_file(&self) -> bool {
        self.held().regular
    }

    /// Every byte written, if a copy was kept.
    pub fn copy(&self) -> Option<Vec<u8>> {
        self.held().copy.clone()
    }
}

impl Write for HeldOutput {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let mut held = self.held();
        let held = &mut *held;
        let written = match &mut held.file {
            Some(file) => file.write(buf)?,
            None => {
                held.pending.extend_from_slice(buf);
                buf.len()
            }
        };
        if let Some(copy) = &mut held.copy {
            copy.extend_from_slice(&buf[..written]);
        }
        Ok(written)
    }

    fn flush(&mut self) -> io::Result<()> {
        match &mut self.held().file {
            Some(file) => file.flush(),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_held_output_reaches_its_file_whole_and_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log");
        let mut held = HeldOutput::new(false);
        held.write_all(b"before ").unwrap();
        held.open(create(&path).unwrap()).unwrap();
        held.write_all(b"after").unwrap();
        held.flush().unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"before after");
        assert!(held.is_regular_file());
        assert_eq!(held.copy(), None);
    }

    #[test]
    fn a_held_output_keeps_a_copy_of_what_a_device_swallows() {
        let mut held = HeldOutput::new(true);
        held.write_all(b"one ").unwrap();
        held.open(create(Path::new("/dev/null")).unwrap()).unwrap();
        held.write_all(b"two").unwrap();
        assert!(!held.is_regular_file());
        assert_eq!(held.copy().as_deref(), Some(&b"one two"[..]));
    }

    #[test]
    fn identities_clash_for_one_regular_file_or_one_planned_path() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a");
        std::fs::write(&a, b"x").unwrap();
        std::fs::hard_link(&a, dir.path().join("b")).unwrap();
        let of = |p: &Path| Identity::of(p).unwrap();
        assert!(of(&a).clashes_with(&of(&dir.path().join("b"))));
        // Not yet made: the same place by two spellings, and a dangling
        // symlink to it.
        let new = dir.path().join("new");
        let dotted = dir.path().join(".").join("new");
        assert!(of(&new).clashes_with(&of(&dotted)));
        std::os::unix::fs::symlink("new", dir.path().join("link")).unwrap();
        assert!(of(&new).clashes_with(&of(&dir.path().join("link"))));
        assert!(!of(&new).clashes_with(&of(&a)));
        assert!(!of(&a).clashes_with(&of(&new)));
        // Two writers of one device lose nothing.
        let null = of(Path::new("/dev/null"));
        assert!(!null.clashes_with(&null));
    }
}
