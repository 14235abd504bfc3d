//! The `PATH` an unprivileged cell runs with.
//!
//! The matrix is started by root, whose `PATH` often names directories
//! under `/root` (`~/.cargo/bin`, pyenv shims) that `nobody` cannot search.
//! execvp(3) — and so `Command::new("perf")`, `timeout chromium …` — then
//! fails with EACCES for a program that is simply not installed, instead of
//! ENOENT: the forced run of a `[program:…]` skip shows "Permission denied"
//! and the proof by signature ("not found"/"No such file") fails. The
//! requirement checker decides the same program absent (it cannot stat
//! through such a directory either), so the cell's user gets the `PATH`
//! entries it can search, the ones execvp would not stumble on.

use std::ffi::{OsStr, OsString};
use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};

/// The caller's `PATH` as `uid`/`gid` can use it ([`searchable_by`]).
pub(super) fn for_user(uid: u32, gid: u32) -> OsString {
    searchable_by(&std::env::var_os("PATH").unwrap_or_default(), uid, gid)
}

/// The entries of `path` that `uid`/`gid` (no supplementary groups, as
/// `setpriv --clear-groups` runs it) can search down to, in order; entries
/// that do not exist are kept (they give ENOENT, which is harmless).
pub(super) fn searchable_by(path: &OsStr, uid: u32, gid: u32) -> OsString {
    let kept: Vec<PathBuf> = std::env::split_paths(path)
        .filter(|dir| searchable(dir, uid, gid))
        .collect();
    std::env::join_paths(kept).unwrap_or_default()
}

/// Whether every directory from `/` down to `dir` grants `uid`/`gid` search
/// (execute) permission, by the mode bits the kernel checks: the owner's
/// when `uid` owns it, else the group's when `gid` is its group, else the
/// others'. uid 0 searches everything. A component that does not exist
/// ends the walk as searchable (execvp gets ENOENT there, not EACCES).
fn searchable(dir: &Path, uid: u32, gid: u32) -> bool {
    if uid == 0 {
        return true;
    }
    // A relative entry is judged from the current directory.
    let mut at = PathBuf::from(if dir.is_absolute() { "/" } else { "." });
    for part in dir.components().filter(|c| *c != Component::RootDir) {
        let Ok(meta) = std::fs::metadata(&at) else {
            return true;
        };
        if !may_search(meta.mode(), meta.uid(), meta.gid(), uid, gid) {
            return false;
        }
        at.push(part);
    }
    match std::fs::metadata(&at) {
        Ok(meta) => may_search(meta.mode(), meta.uid(), meta.gid(), uid, gid),
        Err(_) => true,
    }
}

/// The kernel's permission check for search on one directory.
fn may_search(mode: u32, owner: u32, group: u32, uid: u32, gid: u32) -> bool {
    let bit = if owner == uid {
        0o100
    } else if group == gid {
        0o010
    } else {
        0o001
    };
    mode & bit != 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn the_owner_group_and_others_bits_decide_alone() {
        // rwx------ root:root: only root's owner bit.
        assert!(!may_search(0o40700, 0, 0, 65534, 65534));
        assert!(may_search(0o40700, 65534, 0, 65534, 65534));
        // The group bit for a member, even when others may.
        assert!(!may_search(0o40705, 0, 65534, 1000, 65534));
        assert!(may_search(0o40755, 0, 0, 65534, 65534));
        // The owner bit for the owner, even when others may.
        assert!(!may_search(0o40075, 1000, 0, 1000, 1000));
    }

    #[test]
    fn a_directory_under_one_nobody_cannot_search_is_left_out() {
        let root = std::env::temp_dir().join(format!("pmc-xtask-path-{}", std::process::id()));
        let closed = root.join("closed");
        let inner = closed.join("bin");
        let open = root.join("open");
        std::fs::create_dir_all(&inner).unwrap();
        std::fs::create_dir_all(&open).unwrap();
        let uid = std::fs::metadata(&root).unwrap().uid();
        let gid = std::fs::metadata(&root).unwrap().gid();
        let set = |p: &Path, m: u32| {
            std::fs::set_permissions(p, std::fs::Permissions::from_mode(m)).unwrap()
        };
        set(&root, 0o755);
        set(&open, 0o755);
        set(&inner, 0o755);
        set(&closed, 0o700);
        let path = std::env::join_paths([&inner, &open, &root.join("absent")]).unwrap();
        // Another user (neither the owner nor in the group) loses the
        // entry below the closed directory, keeps the others in order.
        let other = (uid.wrapping_add(1), gid.wrapping_add(1));
        let kept = searchable_by(&path, other.0, other.1);
        let want = std::env::join_paths([&open, &root.join("absent")]).unwrap();
        // The owner keeps everything; root too.
        let mine = searchable_by(&path, uid, gid);
        let roots = searchable_by(&path, 0, 0);
        set(&closed, 0o755);
        std::fs::remove_dir_all(&root).unwrap();
        assert_eq!(kept, want);
        assert_eq!(mine, path);
        assert_eq!(roots, path);
    }
}
