//! Counting per cgroup: a system-wide event restricted to the tasks of one
//! cgroup (`PERF_FLAG_PID_CGROUP`, perf stat's `-G`), a Linux extension.
//!
//! A [`Cgroup`] is an open cgroup directory; [`Event::open_in_cgroup`]
//! passes its descriptor as `perf_event_open`'s `pid`, with a CPU (the
//! kernel refuses a cgroup on any CPU). The kernel takes its own reference
//! to the cgroup at the open, so events outlive the `Cgroup` they were
//! opened with, and dropping it closes the directory.
//!
//! A path is either absolute (a directory on a cgroup file system, v1 or
//! v2) or relative to the cgroup v2 mount, found in
//! `/proc/self/mountinfo` as perf finds it (`pmctest` is
//! `<mount>/pmctest`). The hierarchy must have the perf_event
//! controller: on cgroup v2 it always does unless a v1 hierarchy holds it.
//!
//! [`Event::open_in_cgroup`]: crate::event::Event::open_in_cgroup

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Component, Path, PathBuf};

use crate::error::{Error, Hint, Result};
use crate::sys;

/// Where the mount table of the calling process is read.
pub const MOUNTINFO: &str = "/proc/self/mountinfo";

/// An open cgroup directory (`O_RDONLY | O_CLOEXEC | O_DIRECTORY`), checked
/// to be on a cgroup file system.
#[derive(Debug)]
pub struct Cgroup {
    path: PathBuf,
    dir: OwnedFd,
}

impl Cgroup {
    /// Opens the cgroup at `path`: an absolute directory as it is, a
    /// relative path under the cgroup v2 mount ([`v2_mount`]). An
    /// absolute path that is no cgroup directory is then tried under the
    /// mount too, as perf's `-G` reads every name (`/` is the root
    /// cgroup, `/web` is `<mount>/web`). A relative path may not leave the
    /// mount (`..`). The error names every directory tried when none
    /// exists or is a cgroup.
    pub fn open(path: impl AsRef<Path>) -> Result<Cgroup> {
        let path = path.as_ref();
        if path.is_absolute() {
            let first = match Cgroup::open_dir(path, None) {
                Ok(cgroup) => return Ok(cgroup),
                Err(e) if e.hint().is_some() => e,
                Err(e) => return Err(e),
            };
            let Ok(mount) = v2_mount() else {
                return Err(first);
            };
            let under = under_mount(&mount, path.strip_prefix("/").unwrap_or(path));
            if under == path {
                return Err(first);
            }
            return Cgroup::open_dir(&under, Some(&mount)).map_err(|_| match first {
                Error::File {
                    path,
                    why,
                    errno,
                    hint,
                } => Error::File {
                    why: format!(
                        "{why}; nor is {} (the path under the cgroup v2 mount, as perf -G \
                         reads it) a cgroup",
                        under.display()
                    ),
                    path,
                    errno,
                    hint,
                },
                other => other,
            });
        }
        if path.components().any(|c| c == Component::ParentDir) {
            return Err(Error::invalid(
                format!("cgroup {}", path.display()),
                "a relative cgroup path names a cgroup under the cgroup v2 mount and may not \
                 contain `..`: give the absolute directory instead",
            ));
        }
        let mount = v2_mount()?;
        Cgroup::open_dir(&under_mount(&mount, path), Some(&mount))
    }

    /// Opens `dir`; `mount` is the cgroup v2 mount a relative path was
    /// joined to (named in the errors).
    fn open_dir(dir: &Path, mount: Option<&Path>) -> Result<Cgroup> {
        let tried = dir.display().to_string();
        let fd = sys::open_directory(dir).map_err(|errno| {
            let hint = match errno {
                libc::ENOENT => Some(Hint::NoSuchCgroup {
                    tried: tried.clone(),
                    mount: mount.map(|m| m.display().to_string()),
                }),
                libc::ENOTDIR => Some(Hint::NotACgroup {
                    tried: tried.clone(),
                    why: "it is not a directory",
                }),
                _ => None,
            };
            Error::File {
                path: tried.clone(),
                why: format!(
                    "cannot open the cgroup directory{}: {} ({})",
                    relative_note(mount),
                    crate::error::strerror(errno),
                    crate::error::errno_name(errno)
                ),
                errno: Some(errno),
                hint,
            }
        })?;
        match sys::is_cgroup_fs(fd.as_fd()) {
            Ok(true) => Ok(Cgroup {
                path: dir.to_path_buf(),
                dir: fd,
            }),
            Ok(false) => Err(Error::File {
                path: tried.clone(),
                why: format!(
                    "not a cgroup: the directory{} is not on a cgroup file system",
                    relative_note(mount)
                ),
                errno: Some(libc::ENOTDIR),
                hint: Some(Hint::NotACgroup {
                    tried,
                    why: "it is not on a cgroup file system (cgroup or cgroup2)",
                }),
            }),
            Err(errno) => Err(Error::os(format!("fstatfs({tried})"), errno)),
        }
    }

    /// The directory opened.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// `relative` under `mount` (the mount itself for an empty path, with no
/// trailing `/`).
fn under_mount(mount: &Path, relative: &Path) -> PathBuf {
    if relative.as_os_str().is_empty() {
        mount.to_path_buf()
    } else {
        mount.join(relative)
    }
}

/// " (relative to the cgroup v2 mount M)" when a relative path was joined.
fn relative_note(mount: Option<&Path>) -> String {
    mount.map_or_else(String::new, |m| {
        format!(
            " (the path given, relative to the cgroup v2 mount {})",
            m.display()
        )
    })
}

impl AsFd for Cgroup {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.dir.as_fd()
    }
}

impl From<Cgroup> for OwnedFd {
    fn from(c: Cgroup) -> OwnedFd {
        c.dir
    }
}

/// Where the cgroup v2 hierarchy is mounted, from [`MOUNTINFO`].
pub fn v2_mount() -> Result<PathBuf> {
    let text = std::fs::read_to_string(MOUNTINFO).map_err(|e| Error::file(MOUNTINFO, &e))?;
    v2_mount_in(&text).ok_or_else(|| Error::File {
        path: MOUNTINFO.into(),
        why: "no cgroup2 file system is mounted, so a relative cgroup path names nothing".into(),
        errno: Some(libc::ENOENT),
        hint: Some(Hint::Other(
            "give the cgroup's absolute directory, or mount cgroup v2 as root \
             (`mount -t cgroup2 none /sys/fs/cgroup/unified`)"
                .into(),
        )),
    })
}

/// The cgroup v2 mount point in a mountinfo text (proc(5)): the first
/// `cgroup2` mount of the hierarchy's root, else the first `cgroup2`
/// mount; `None` without one.
pub fn v2_mount_in(mountinfo: &str) -> Option<PathBuf> {
    let mut any = None;
    for line in mountinfo.lines() {
        // Fields: id parent major:minor root mount-point options
        // [optional…] - fstype source super-options.
        let Some((before, after)) = line.split_once(" - ") else {
            continue;
        };
        if after.split(' ').next() != Some("cgroup2") {
            continue;
        }
        let fields: Vec<&str> = before.split(' ').collect();
        let (Some(root), Some(point)) = (fields.get(3), fields.get(4)) else {
            continue;
        };
        let point = PathBuf::from(unescape(point));
        if *root == "/" {
            return Some(point);
        }
        any.get_or_insert(point);
    }
    any
}

/// Undoes mountinfo's octal escapes of space, tab, newline and backslash.
fn unescape(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let octal = bytes
            .get(i + 1..i + 4)
            .filter(|d| bytes[i] == b'\\' && d.iter().all(|b| (b'0'..=b'7').contains(b)));
        match octal {
            Some(d) => {
                let value = d.iter().fold(0u32, |v, b| v * 8 + u32::from(b - b'0'));
                out.push(u8::try_from(value).unwrap_or(b'?'));
                i += 4;
            }
            None => {
                out.push(bytes[i]);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    const MOUNTINFO_V1_AND_V2: &str = "\
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime shared:9 - cgroup cgroup rw,cpu
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime shared:10 - cgroup2 cgroup2 rw
";

    /// The v2 mount is found among v1 hierarchies, with optional fields
    /// before the separator; a bind mount of a subtree yields to the
    /// hierarchy's root; escapes are undone; no cgroup2, no mount.
    #[test]
    fn the_v2_mount_is_read_from_mountinfo() {
        assert_eq!(
            v2_mount_in(MOUNTINFO_V1_AND_V2),
            Some(PathBuf::from("/sys/fs/cgroup/unified"))
        );
        let subtree_first = "\
50 1 0:40 /system.slice /mnt/sub rw - cgroup2 cgroup2 rw
51 1 0:40 / /mnt/my\\040cgroups rw - cgroup2 cgroup2 rw
";
        assert_eq!(
            v2_mount_in(subtree_first),
            Some(PathBuf::from("/mnt/my cgroups"))
        );
        assert_eq!(
            v2_mount_in(subtree_first.lines().next().unwrap()),
            Some(PathBuf::from("/mnt/sub"))
        );
        assert_eq!(
            v2_mount_in(&MOUNTINFO_V1_AND_V2.replace("cgroup2", "x")),
            None
        );
        assert_eq!(unescape("a\\134b\\011c\\0"), "a\\b\tc\\0");
    }

    /// A directory that is not a cgroup, and one that does not exist, are
    /// refused with the directory tried named and the kind of refusal as
    /// the hint; a relative path may not climb out of the mount.
    #[test]
    fn a_path_that_is_no_cgroup_names_what_was_tried() {
        let temp = std::env::temp_dir();
        let e = Cgroup::open(&temp).unwrap_err();
        assert!(
            matches!(e.hint(), Some(Hint::NotACgroup { tried, .. }) if *tried == temp.display().to_string()),
            "{e:?}"
        );
        let missing = temp.join(format!("pmc-no-cgroup-{}", std::process::id()));
        let e = Cgroup::open(&missing).unwrap_err();
        assert_eq!(e.errno(), libc::ENOENT, "{e}");
        assert!(
            matches!(e.hint(), Some(Hint::NoSuchCgroup { tried, mount: None }) if *tried == missing.display().to_string()),
            "{e:?}"
        );
        assert!(
            e.to_string().contains(&missing.display().to_string()),
            "{e}"
        );
        let e = Cgroup::open("a/../../etc").unwrap_err();
        assert_eq!(e.errno(), libc::EINVAL, "{e}");
    }
}
