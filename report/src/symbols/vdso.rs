//! The vDSO: no file holds it, so its image is this process's own (the
//! kernel maps the same one into every process of a boot).

use pmc_unwind::ObjectFile;
pub(crate) use pmc_unwind::VDSO_PATH as VDSO;

use super::DebugFiles;

/// An object to parse: this process's vDSO image, or a file opened by
/// [`ObjectFile::open`]'s rules (absolute path, regular file, ranges read
/// as parsed).
pub(crate) enum ObjectData {
    Image(Vec<u8>),
    File(Box<ObjectFile>),
}

/// Opens the object a log names: for [`VDSO`] this process's vDSO. A
/// refusal of the path (relative, not a regular file, too large) is
/// noted for `-v`, once per path; a missing file is not.
pub(crate) fn open_object(path: &str, notes: &mut DebugFiles) -> Option<ObjectData> {
    if path == VDSO {
        return pmc_unwind::own_vdso_image().map(ObjectData::Image);
    }
    match ObjectFile::open(std::path::Path::new(path)) {
        Ok(file) => Some(ObjectData::File(Box::new(file))),
        Err(e) => {
            if e.kind() == std::io::ErrorKind::InvalidInput {
                notes.note(format!("{path}: not opened: {e}"));
            }
            None
        }
    }
}

/// Whether a log that started at `time_sec` (wall clock) was written since
/// this machine booted (`btime` of `/proc/stat`), so by this kernel.
pub(crate) fn of_this_boot(time_sec: u64) -> bool {
    let Ok(stat) = std::fs::read_to_string("/proc/stat") else {
        return false;
    };
    stat.lines()
        .find_map(|l| l.strip_prefix("btime "))
        .and_then(|t| t.trim().parse::<u64>().ok())
        .is_some_and(|boot| time_sec >= boot)
}
