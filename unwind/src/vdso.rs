//! The vDSO: no file holds it, so its image is this process's own — the
//! kernel maps the same one into every (native) process of a boot, so a
//! profiler reading it while it profiles has the target's.

/// How the kernel names the vDSO's mapping in `/proc/PID/maps` and perf's
/// MMAP records (and pmc's MAP_IN records).
pub const VDSO_PATH: &str = "[vdso]";

/// This process's vDSO image, read through `/proc/self/mem` (`None` where
/// procfs or the mapping is not there).
pub fn own_vdso_image() -> Option<Vec<u8>> {
    use std::io::{Read as _, Seek as _, SeekFrom};
    let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
    let range = maps
        .lines()
        .find(|l| l.ends_with(VDSO_PATH))?
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

#[cfg(all(test, target_os = "linux", target_arch = "x86_64"))]
mod tests {
    use object::{Object as _, ObjectSymbol as _};

    use super::*;
    use crate::{Mapping, Regs, Unwinder};

    /// At the first instruction of the vDSO's `clock_gettime` the return
    /// address is at `[sp]` and `rbp` is still the caller's: the vDSO's
    /// CFI finds the return address, where frame pointers alone would take
    /// `[rbp + 8]` and skip the caller.
    #[test]
    fn a_pc_at_a_vdso_functions_entry_unwinds_by_the_vdsos_cfi() {
        let image = own_vdso_image().expect("this process has a vDSO");
        let elf = object::File::parse(&*image).expect("the vDSO is ELF");
        let entry = elf
            .dynamic_symbols()
            .find(|s| s.name() == Ok("__vdso_clock_gettime"))
            .expect("the x86-64 vDSO exports __vdso_clock_gettime")
            .address();
        // Linked at 0; mapped anywhere.
        let base = 0x7fff_f7fc_0000u64;
        let mut u = Unwinder::new();
        u.add_mapping(
            7,
            &Mapping {
                start: base,
                len: image.len() as u64,
                pgoff: 0,
                path: VDSO_PATH.into(),
            },
        );
        let sp = 0x7ffd_0000_1000u64;
        let fp = sp + 0x40;
        let mut stack = vec![0u8; 0x80];
        let mut put = |at: u64, v: u64| {
            let o = (at - sp) as usize;
            stack[o..o + 8].copy_from_slice(&v.to_le_bytes());
        };
        put(sp, 0x5555_0000_1234); // the return into clock_gettime's caller
        put(fp, 0); // the caller's caller's frame: the outermost
        put(fp + 8, 0x5555_0000_9999);
        let frames = u.unwind(
            7,
            &Regs {
                pc: base + entry,
                sp,
                fp,
                lr: 0,
            },
            &stack,
        );
        assert_eq!(
            frames.get(..2),
            Some(&[base + entry, 0x5555_0000_1234][..]),
            "{frames:x?}"
        );
    }
}
