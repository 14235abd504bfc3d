//! The path a PROCEXEC names: an exec's COMM waits in its ring for the
//! executable's first mapping.

use pmc_linux::record::Record;

use super::procfs::exec_addresses;
use crate::backend::event::BackendEvent;

/// An exec COMM whose PROCEXEC waits for the executable's path. hwpmc logs
/// the image's full path (hwpmc_mod.c takes it from the vnode); a COMM
/// carries only `comm`, and `/proc/PID/exe` is gone once a short-lived
/// process has exited (a system log named `/usr/bin/true` "true", which a
/// reader then looked for in its own directory). The kernel maps the
/// executable's text right after the exec's COMM (fs/exec.c
/// `begin_new_exec` sets the comm, then `load_elf_binary` maps the
/// program's segments before its interpreter's), into the same ring: its
/// MMAP names the image as `/proc/PID/exe` would.
#[derive(Debug)]
pub(super) struct PendingExec {
    pub(super) pid: u32,
    pub(super) time: u64,
    pub(super) comm: String,
}

impl PendingExec {
    /// Its PROCEXEC, naming `path` (the mapping's), else what
    /// `/proc/PID/exe` says now, else — the process gone and its mapping
    /// lost — `comm`, which no reader resolves as a path.
    pub(super) fn into_event(self, path: Option<String>) -> (u64, BackendEvent) {
        let path = path
            .or_else(|| super::super::executable_path(self.pid))
            .unwrap_or(self.comm);
        let addresses = exec_addresses(self.pid);
        (
            self.time,
            BackendEvent::Exec {
                pid: self.pid,
                path,
                base: addresses.base,
                dynaddr: addresses.dynaddr,
            },
        )
    }
}

/// The absolute path an executable mapping names, if it names one
/// (`//anon`, `[vdso]` and the like are no image).
pub(super) fn mapped_image(record: &Record<'_>) -> Option<(u32, String)> {
    match record {
        Record::Mmap { pid, filename, .. } | Record::Mmap2 { pid, filename, .. }
            if filename.first() == Some(&b'/') =>
        {
            Some((*pid, String::from_utf8_lossy(filename).into_owned()))
        }
        _ => None,
    }
}
