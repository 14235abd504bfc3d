//! The vDSO: no file holds it, so its image is this process's own (the
//! kernel maps the same one into every process of a boot).

pub(crate) use pmc_unwind::VDSO_PATH as VDSO;

/// The bytes of an object: the file at `path`, or for [`VDSO`] this
/// process's vDSO.
pub(crate) fn read_object(path: &str) -> Option<Vec<u8>> {
    if path == VDSO {
        pmc_unwind::own_vdso_image()
    } else {
        std::fs::read(path).ok()
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
