//! What procfs tells the log of processes and the kernel: the exec entry
//! PROCEXEC records, the existing mappings of MAP_IN, the kernel's text.

use crate::backend::event::BackendEvent;
use crate::log::translate::MappingSource;

/// PROCEXEC's `pl_start` for a process that just exec'd: hwpmc logs
/// `imgp->entry_addr` (kern_exec.c `pm_entryaddr`), which is the run-time
/// linker's entry point for a dynamic executable (imgact_elf.c) and the
/// program's own for a static one; libpmcstat's `pmcstat_process_elf_exec`
/// places the run-time linker at `entry - its e_entry`. 0 when the process
/// is gone or unreadable.
pub(super) fn exec_entry(pid: u32) -> u64 {
    let Ok(auxv) = std::fs::read(format!("/proc/{pid}/auxv")) else {
        return 0;
    };
    let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).unwrap_or_default();
    entry_from_auxv(&auxv, |base| {
        let path = maps.lines().find_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let lo = u64::from_str_radix(f.first()?.split('-').next()?, 16).ok()?;
            (lo == base && f.get(2) == Some(&"00000000") && f.len() >= 6).then(|| f[5..].join(" "))
        })?;
        elf_entry(&std::fs::read(path).ok()?)
    })
}

/// The entry address from an auxiliary vector: `AT_BASE + e_entry` of the
/// interpreter (found by `interp_entry(AT_BASE)`) when there is one, else
/// `AT_ENTRY`.
fn entry_from_auxv(auxv: &[u8], interp_entry: impl Fn(u64) -> Option<u64>) -> u64 {
    const AT_BASE: u64 = 7;
    const AT_ENTRY: u64 = 9;
    let (mut base, mut entry) = (0, 0);
    for pair in auxv.chunks_exact(16) {
        let key = u64::from_ne_bytes(pair[..8].try_into().unwrap_or_default());
        let value = u64::from_ne_bytes(pair[8..].try_into().unwrap_or_default());
        match key {
            AT_BASE => base = value,
            AT_ENTRY => entry = value,
            0 => break,
            _ => {}
        }
    }
    if base != 0
        && let Some(e) = interp_entry(base)
    {
        return base.wrapping_add(e);
    }
    entry
}

/// `e_entry` of a 64-bit ELF image (offset 24 of `Elf64_Ehdr`).
fn elf_entry(image: &[u8]) -> Option<u64> {
    (image.get(..5)? == b"\x7fELF\x02").then_some(())?;
    Some(u64::from_ne_bytes(image.get(24..32)?.try_into().ok()?))
}

/// The mappings that exist now, from `/proc`.
pub(super) struct ProcMappings;

impl MappingSource for ProcMappings {
    fn kernel_mapping(&self) -> Option<BackendEvent> {
        Some(kernel_mapping())
    }
    fn all_processes(&self) -> Vec<u32> {
        all_processes()
    }
    fn process_mappings(&self, pid: u32) -> Vec<BackendEvent> {
        process_mappings(pid)
    }
}

/// Every process's pid, from `/proc`.
fn all_processes() -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut pids: Vec<u32> = dir
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .collect();
    pids.sort_unstable();
    pids
}

/// The executable file mappings `pid` has now, from `/proc/<pid>/maps`
/// (for hwpmc's `pmc_log_process_mappings`).
pub(crate) fn process_mappings(pid: u32) -> Vec<BackendEvent> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/maps")).unwrap_or_default();
    mappings_from_maps(pid, &text)
}

/// The executable file mappings of a `/proc/<pid>/maps` text (MAP_IN
/// records once translated). Contiguous executable mappings of one file give one record, as
/// hwpmc skips "contiguous regions that point to the same vnode"; `start`
/// is the first executable mapping's start, the convention of
/// [`crate::log`].
pub(crate) fn mappings_from_maps(pid: u32, text: &str) -> Vec<BackendEvent> {
    let mut out = Vec::new();
    let mut last: Option<(u64, String)> = None; // (end, path)
    for line in text.lines() {
        let mut fields = line.split_whitespace();
        let (Some(range), Some(perms), Some(offset), Some(_dev), Some(_inode)) = (
            fields.next(),
            fields.next(),
            fields.next(),
            fields.next(),
            fields.next(),
        ) else {
            continue;
        };
        let path = fields.collect::<Vec<_>>().join(" ");
        let Some((lo, hi)) = range.split_once('-') else {
            continue;
        };
        let (Ok(lo), Ok(hi), Ok(_offset)) = (
            u64::from_str_radix(lo, 16),
            u64::from_str_radix(hi, 16),
            u64::from_str_radix(offset, 16),
        ) else {
            continue;
        };
        if perms.as_bytes().get(2) != Some(&b'x') || !path.starts_with('/') {
            continue;
        }
        if last
            .as_ref()
            .is_some_and(|(end, p)| *end == lo && *p == path)
        {
            last = Some((hi, path));
            continue;
        }
        out.push(BackendEvent::Mapping {
            pid,
            start: lo,
            path: path.clone(),
        });
        last = Some((hi, path));
    }
    out
}

/// The kernel's mapping (pid -1), logged once per log when samples may
/// come from the kernel (hwpmc's `pmc_log_kernel_mappings`):
/// `[kernel.kallsyms]` at `_stext` as `/proc/kallsyms` gives it (0 where
/// kptr_restrict hides addresses), as perf names the kernel image.
fn kernel_mapping() -> BackendEvent {
    let text = std::fs::read_to_string("/proc/kallsyms").unwrap_or_default();
    BackendEvent::Mapping {
        pid: u32::MAX,
        start: kernel_text_start(&text),
        path: "[kernel.kallsyms]".into(),
    }
}

/// `_stext`'s address in a `/proc/kallsyms` text, or 0.
fn kernel_text_start(kallsyms: &str) -> u64 {
    kallsyms
        .lines()
        .find_map(|l| {
            let mut f = l.split_whitespace();
            let (addr, _, name) = (f.next()?, f.next()?, f.next()?);
            (name == "_stext").then(|| u64::from_str_radix(addr, 16).ok())?
        })
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// hwpmc_mod.c `pmc_log_process_mappings`: executable, file-backed
    /// entries only, one MAP_IN per run of contiguous entries of one file.
    #[test]
    fn existing_mappings_become_map_in_records() {
        let maps = "\
5555_0000_0000-5555_0000_1000 r--p 00000000 08:01 100 /usr/bin/prog
555500001000-555500005000 r-xp 00001000 08:01 100 /usr/bin/prog
555500005000-555500006000 r-xp 00005000 08:01 100 /usr/bin/prog
555500006000-555500008000 r--p 00006000 08:01 100 /usr/bin/prog
555500100000-555500200000 rw-p 00000000 00:00 0 [heap]
7f0000000000-7f0000028000 r--p 00000000 08:01 200 /usr/lib/libc.so.6
7f0000028000-7f00001bd000 r-xp 00028000 08:01 200 /usr/lib/libc.so.6
7f0000300000-7f0000301000 r-xp 00000000 00:00 0
7ffff7fc1000-7ffff7fc3000 r-xp 00000000 00:00 0 [vdso]
7ffff8000000-7ffff8001000 r-xp 00002000 08:01 300 /opt/my lib.so
";
        let got = mappings_from_maps(42, &maps.replace('_', ""));
        assert_eq!(
            got,
            vec![
                BackendEvent::Mapping {
                    pid: 42,
                    start: 0x5555_0000_1000,
                    path: "/usr/bin/prog".into()
                },
                BackendEvent::Mapping {
                    pid: 42,
                    start: 0x7f00_0002_8000,
                    path: "/usr/lib/libc.so.6".into()
                },
                BackendEvent::Mapping {
                    pid: 42,
                    start: 0x7fff_f800_0000,
                    path: "/opt/my lib.so".into()
                },
            ]
        );
    }

    /// kern_exec.c/imgact_elf.c: a dynamic program's entry address is its
    /// interpreter's (AT_BASE + the interpreter's e_entry); a static one's
    /// is AT_ENTRY.
    #[test]
    fn the_exec_entry_is_the_run_time_linkers() {
        let auxv = |pairs: &[(u64, u64)]| -> Vec<u8> {
            pairs
                .iter()
                .flat_map(|(k, v)| [k.to_ne_bytes(), v.to_ne_bytes()].concat())
                .collect()
        };
        let dynamic = auxv(&[
            (6, 4096),
            (7, 0x7f00_0000_0000),
            (9, 0x5555_0000_1040),
            (0, 0),
        ]);
        let interp = |base| (base == 0x7f00_0000_0000).then_some(0x1c80);
        assert_eq!(entry_from_auxv(&dynamic, interp), 0x7f00_0000_1c80);
        let fixed = auxv(&[(7, 0), (9, 0x40_1000), (0, 0)]);
        assert_eq!(entry_from_auxv(&fixed, interp), 0x40_1000);
        let mut elf = vec![0u8; 64];
        elf[..5].copy_from_slice(b"\x7fELF\x02");
        elf[24..32].copy_from_slice(&0x1c80u64.to_ne_bytes());
        assert_eq!(elf_entry(&elf), Some(0x1c80));
        assert_eq!(elf_entry(b"#!/bin/sh"), None);
    }

    #[test]
    fn the_kernel_text_start_comes_from_kallsyms() {
        let kallsyms = "ffffffff81000000 T startup_64\nffffffff81001000 T _stext\n";
        assert_eq!(kernel_text_start(kallsyms), 0xffff_ffff_8100_1000);
        // kptr_restrict: addresses read as zero.
        assert_eq!(kernel_text_start("0000000000000000 T _stext\n"), 0);
        assert_eq!(kernel_text_start(""), 0);
    }
}
