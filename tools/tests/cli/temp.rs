//! The cli tests' temporary directories.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::ensure;
use crate::harness::Context;

/// A fresh directory under the system's temporary directory, readable by
/// everyone (the matrix reads logs in it as nobody), removed on drop.
pub struct TempDir(PathBuf);

impl TempDir {
    /// `pmc-WHAT.XXXXXX`, made by mktemp(1).
    pub fn new(what: &str) -> Result<TempDir, libtest_mimic::Failed> {
        let out = Command::new("mktemp")
            .args(["-d", "-t", &format!("pmc-{what}.XXXXXX")])
            .output()
            .ctx("mktemp")?;
        ensure!(out.status.success(), "mktemp -d failed");
        let dir = TempDir(PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()));
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&dir.0, std::fs::Permissions::from_mode(0o755))
            .ctx("chmod the temporary directory")?;
        Ok(dir)
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.0
    }

    /// `name` in the directory.
    pub fn join(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }

    /// `name` in the directory, as an argument.
    pub fn path(&self, name: &str) -> String {
        self.join(name).to_string_lossy().into_owned()
    }

    /// The names in the directory, sorted.
    pub fn names(&self) -> Result<Vec<String>, libtest_mimic::Failed> {
        let mut names: Vec<String> = std::fs::read_dir(&self.0)
            .ctx("read the temporary directory")?
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        Ok(names)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A user other than the caller to own a file (root's tests give files to
/// `nobody`, 65534 on Debian and FreeBSD). A caller without root, as a
/// forced matrix run is, cannot give a file away: its `chown` fails with
/// EPERM, which is the `[root]` requirement showing.
pub fn another_user() -> u32 {
    let me = nix::unistd::geteuid().as_raw();
    if me == 65534 { 1 } else { 65534 }
}
