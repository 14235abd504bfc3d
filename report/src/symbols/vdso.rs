//! The vDSO: no file holds it, so its image is this process's own (the
//! kernel maps the same one into every process of a boot).

/// How the kernel names the vDSO's mapping (and pmc's MAP_IN records it).
pub(crate) const VDSO: &str = "[vdso]";

/// The bytes of an object: the file at `path`, or for [`VDSO`] this
/// process's vDSO read through `/proc/self/mem`.
pub(crate) fn read_object(path: &str) -> Option<Vec<u8>> {
    if path == VDSO {
        own_vdso()
    } else {
        std::fs::read(path).ok()
    }
}

fn own_vdso() -> Option<Vec<u8>> {
    use std::io::{Read as _, Seek as _, SeekFrom};
    let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
    let range = maps
        .lines()
        .find(|l| l.ends_with(VDSO))?
        .split_whitespace()
        .next()?;
    let (lo, hi) = range.split_once('-')?;
    let (lo, hi) = (
        u64::from_str_radix(lo, 16).ok()?,
        u64::from_str_radix(hi, 16).ok()?,
    );
    let mut mem = std::fs::File::open("/proc/self/mem").ok()?;
    mem.seek(SeekFrom::Start(lo)).ok()?;
    let mut image = vec![0; usize::try_from(hi.checked_sub(lo)?).ok()?];
    mem.read_exact(&mut image).ok()?;
    Some(image)
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
