//! What procfs tells the log of processes and the kernel: the exec
//! addresses PROCEXEC records, the existing mappings of MAP_IN, the
//! kernel's text.

use std::os::unix::fs::FileExt;

use crate::backend::event::BackendEvent;
use crate::backend::source::MappingSource;

/// The two addresses FreeBSD 14's PROCEXEC carries for a process that
/// just exec'd (kern_exec.c hands hwpmc `imgp->reloc_base` and
/// `imgp->et_dyn_addr`; libpmcstat_process.c `pmcstat_process_elf_exec`
/// links the run-time linker at the first and the executable at its
/// `pi_vaddr` plus the second).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct ExecAddresses {
    /// `pl_base`: where the run-time linker is loaded (AT_BASE); for a
    /// program without one, its own load base (imgact_elf.c sets
    /// `reloc_base` to `et_dyn_addr` then).
    pub base: u64,
    /// `pl_dyn`: the load base of a position-independent executable
    /// (`et_dyn_addr`), 0 for one linked at a fixed address.
    pub dynaddr: u64,
}

/// PROCEXEC's addresses for `pid` from `/proc/PID/auxv` and the program
/// headers of `/proc/PID/exe`; zeros for what is gone or unreadable.
pub(super) fn exec_addresses(pid: u32) -> ExecAddresses {
    let Ok(auxv) = std::fs::read(format!("/proc/{pid}/auxv")) else {
        return ExecAddresses::default();
    };
    let headers = std::fs::File::open(format!("/proc/{pid}/exe"))
        .ok()
        .and_then(|f| elf_headers(&f))
        .unwrap_or_default();
    addresses_from_auxv(&auxv, &headers)
}

/// The ELF header and program headers at the start of `file` (a program's
/// headers are read, not the whole file, which may be large).
fn elf_headers(file: &std::fs::File) -> Option<Vec<u8>> {
    let mut header = vec![0u8; 64];
    file.read_exact_at(&mut header, 0).ok()?;
    let phoff = u64::from_ne_bytes(header.get(32..40)?.try_into().ok()?);
    let phentsize = u16::from_ne_bytes(header.get(54..56)?.try_into().ok()?);
    let phnum = u16::from_ne_bytes(header.get(56..58)?.try_into().ok()?);
    let end = phoff.checked_add(u64::from(phentsize) * u64::from(phnum))?;
    // e_phnum is 16 bits: 64 KiB of headers at most, beyond any real table.
    let end = usize::try_from(end).ok().filter(|e| *e <= 1 << 20)?;
    let mut image = vec![0u8; end.max(64)];
    file.read_exact_at(&mut image, 0).ok()?;
    Some(image)
}

/// PROCEXEC's addresses from an auxiliary vector and the executable's ELF
/// and program headers (`exe`, empty when unreadable). The PIE load base
/// is AT_PHDR minus the address the program headers are linked at (the
/// PT_PHDR entry, or the PT_LOAD holding `e_phoff`): 0 for a fixed-address
/// executable, as `et_dyn_addr` is.
fn addresses_from_auxv(auxv: &[u8], exe: &[u8]) -> ExecAddresses {
    const AT_PHDR: u64 = 3;
    const AT_BASE: u64 = 7;
    let (mut phdr, mut base) = (0, 0);
    for pair in auxv.chunks_exact(16) {
        let key = u64::from_ne_bytes(pair[..8].try_into().unwrap_or_default());
        let value = u64::from_ne_bytes(pair[8..].try_into().unwrap_or_default());
        match key {
            AT_PHDR => phdr = value,
            AT_BASE => base = value,
            0 => break,
            _ => {}
        }
    }
    let dynaddr = match (phdr, program_headers_vaddr(exe)) {
        (0, _) | (_, None) => 0,
        (phdr, Some(linked)) => phdr.wrapping_sub(linked),
    };
    ExecAddresses {
        base: if base != 0 { base } else { dynaddr },
        dynaddr,
    }
}

/// The address a 64-bit ELF image links its program header table at.
fn program_headers_vaddr(image: &[u8]) -> Option<u64> {
    const PT_LOAD: u32 = 1;
    const PT_PHDR: u32 = 6;
    (image.get(..5)? == b"\x7fELF\x02").then_some(())?;
    let u64_at = |at: usize| Some(u64::from_ne_bytes(image.get(at..at + 8)?.try_into().ok()?));
    let u32_at = |at: usize| Some(u32::from_ne_bytes(image.get(at..at + 4)?.try_into().ok()?));
    let phoff = u64_at(32)?;
    let phentsize = usize::from(u16::from_ne_bytes(image.get(54..56)?.try_into().ok()?));
    let phnum = usize::from(u16::from_ne_bytes(image.get(56..58)?.try_into().ok()?));
    let table = usize::try_from(phoff).ok()?;
    let entries = (0..phnum).map(|i| table + i * phentsize);
    // Elf64_Phdr: p_type 0, p_offset 8, p_vaddr 16, p_filesz 32.
    let mut from_load = None;
    for at in entries {
        let (kind, offset, vaddr, filesz) = (
            u32_at(at)?,
            u64_at(at + 8)?,
            u64_at(at + 16)?,
            u64_at(at + 32)?,
        );
        if kind == PT_PHDR {
            return Some(vaddr);
        }
        if kind == PT_LOAD
            && from_load.is_none()
            && (offset..offset.saturating_add(filesz)).contains(&phoff)
        {
            from_load = Some(vaddr.wrapping_add(phoff - offset));
        }
    }
    from_load
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
        let (Ok(lo), Ok(hi), Ok(offset)) = (
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
            // The run grows: its MAP_IN covers it all (the unwinder needs
            // the whole range).
            if let Some(BackendEvent::Mapping { start, len, .. }) = out.last_mut() {
                *len = hi - *start;
            }
            last = Some((hi, path));
            continue;
        }
        out.push(BackendEvent::Mapping {
            pid,
            start: lo,
            len: hi.saturating_sub(lo),
            pgoff: offset,
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
        len: 0,
        pgoff: 0,
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
                    len: 0x5000,
                    pgoff: 0x1000,
                    path: "/usr/bin/prog".into()
                },
                BackendEvent::Mapping {
                    pid: 42,
                    start: 0x7f00_0002_8000,
                    len: 0x195000,
                    pgoff: 0x28000,
                    path: "/usr/lib/libc.so.6".into()
                },
                BackendEvent::Mapping {
                    pid: 42,
                    start: 0x7fff_f800_0000,
                    len: 0x1000,
                    pgoff: 0x2000,
                    path: "/opt/my lib.so".into()
                },
            ]
        );
    }

    /// An auxiliary vector image of `(key, value)` pairs.
    fn auxv(pairs: &[(u64, u64)]) -> Vec<u8> {
        pairs
            .iter()
            .flat_map(|(k, v)| [k.to_ne_bytes(), v.to_ne_bytes()].concat())
            .collect()
    }

    /// A 64-bit ELF header and program header table image: `e_type`, then
    /// `(p_type, p_offset, p_vaddr, p_filesz)` per entry, the table at 64.
    fn elf(e_type: u16, phdrs: &[(u32, u64, u64, u64)]) -> Vec<u8> {
        let mut image = vec![0u8; 64];
        image[..5].copy_from_slice(b"\x7fELF\x02");
        image[16..18].copy_from_slice(&e_type.to_ne_bytes());
        image[32..40].copy_from_slice(&64u64.to_ne_bytes());
        image[54..56].copy_from_slice(&56u16.to_ne_bytes());
        image[56..58].copy_from_slice(&(phdrs.len() as u16).to_ne_bytes());
        for &(kind, offset, vaddr, filesz) in phdrs {
            let mut entry = [0u8; 56];
            entry[..4].copy_from_slice(&kind.to_ne_bytes());
            entry[8..16].copy_from_slice(&offset.to_ne_bytes());
            entry[16..24].copy_from_slice(&vaddr.to_ne_bytes());
            entry[32..40].copy_from_slice(&filesz.to_ne_bytes());
            image.extend_from_slice(&entry);
        }
        image
    }

    /// imgact_elf.c: `reloc_base` is the interpreter's load address
    /// (AT_BASE), or `et_dyn_addr` without an interpreter; `et_dyn_addr`
    /// is a PIE's load base and 0 for ET_EXEC. FreeBSD 14's kern_exec.c
    /// logs those two, and libpmcstat_process.c `pmcstat_process_elf_exec`
    /// links rtld at the first and the program at `pi_vaddr` + the second.
    #[test]
    fn exec_addresses_are_at_base_and_the_pie_load_base() {
        const ET_EXEC: u16 = 2;
        const ET_DYN: u16 = 3;
        const LOAD: u32 = 1;
        const PHDR: u32 = 6;
        let ld_so = 0x7f00_0000_0000;
        let pie = elf(ET_DYN, &[(PHDR, 64, 64, 0x2d8), (LOAD, 0, 0, 0x1000)]);
        let fixed = elf(
            ET_EXEC,
            &[(PHDR, 64, 0x40_0040, 0x2d8), (LOAD, 0, 0x40_0000, 0x1000)],
        );
        let static_fixed = elf(ET_EXEC, &[(LOAD, 0, 0x40_0000, 0x1000)]);
        let static_pie = elf(ET_DYN, &[(LOAD, 0, 0, 0x2000)]);
        // The table sits in the second PT_LOAD (text first, -z separate-code).
        let headers_later = elf(
            ET_DYN,
            &[(LOAD, 0x1000, 0x1000, 0x1000), (LOAD, 0, 0x10_0000, 0x800)],
        );
        // (what, auxv, executable's headers, pl_base, pl_dyn)
        type Case<'a> = (&'a str, Vec<u8>, &'a [u8], u64, u64);
        let cases: &[Case<'_>] = &[
            (
                "dynamic PIE",
                auxv(&[(3, 0x5555_5555_4040), (7, ld_so), (0, 0)]),
                &pie,
                ld_so,
                0x5555_5555_4000,
            ),
            (
                "dynamic, fixed address",
                auxv(&[(3, 0x40_0040), (7, ld_so), (0, 0)]),
                &fixed,
                ld_so,
                0,
            ),
            (
                "static, fixed address",
                auxv(&[(3, 0x40_0040), (7, 0), (0, 0)]),
                &static_fixed,
                0,
                0,
            ),
            (
                "static PIE",
                auxv(&[(3, 0x7ff0_0000_0040), (0, 0)]),
                &static_pie,
                0x7ff0_0000_0000,
                0x7ff0_0000_0000,
            ),
            (
                "headers in a later PT_LOAD",
                auxv(&[(3, 0x5555_0010_0040), (7, ld_so), (0, 0)]),
                &headers_later,
                ld_so,
                0x5555_0000_0000,
            ),
            (
                "executable unreadable",
                auxv(&[(3, 0x5555_5555_4040), (7, ld_so), (0, 0)]),
                b"",
                ld_so,
                0,
            ),
            (
                "not ELF",
                auxv(&[(3, 0x5555_5555_4040), (7, ld_so), (0, 0)]),
                b"#!/bin/sh\n",
                ld_so,
                0,
            ),
            (
                "pairs after AT_NULL ignored",
                auxv(&[(0, 0), (3, 0x5555_5555_4040), (7, ld_so)]),
                &pie,
                0,
                0,
            ),
            ("no auxv", Vec::new(), &pie, 0, 0),
        ];
        for (what, auxv, exe, base, dynaddr) in cases {
            assert_eq!(
                addresses_from_auxv(auxv, exe),
                ExecAddresses {
                    base: *base,
                    dynaddr: *dynaddr
                },
                "{what}"
            );
        }
    }

    /// The addresses of this test process, against its `/proc/self/maps`:
    /// the PIE load base is where the executable's file offset 0 is
    /// mapped, less the first PT_LOAD's vaddr (0 for a PIE); AT_BASE is
    /// where the run-time linker's offset 0 is mapped.
    #[test]
    fn exec_addresses_of_this_process_match_its_mappings() {
        let got = exec_addresses(std::process::id());
        let exe = std::fs::read_link("/proc/self/exe").expect("/proc/self/exe");
        let maps = std::fs::read_to_string("/proc/self/maps").expect("/proc/self/maps");
        let mapped_at_offset_zero = |path: &str| {
            maps.lines().find_map(|l| {
                let f: Vec<&str> = l.split_whitespace().collect();
                (f.get(2) == Some(&"00000000") && f.get(5) == Some(&path))
                    .then(|| u64::from_str_radix(f[0].split('-').next()?, 16).ok())?
            })
        };
        let mut header = [0u8; 18];
        std::fs::File::open(&exe)
            .and_then(|f| f.read_exact_at(&mut header, 0))
            .expect("the test executable's ELF header");
        let is_pie = u16::from_ne_bytes([header[16], header[17]]) == 3;
        let lowest = mapped_at_offset_zero(exe.to_str().unwrap()).expect("executable mapped");
        assert_eq!(got.dynaddr, if is_pie { lowest } else { 0 });
        let interp = maps.lines().find_map(|l| {
            let path = l.split_whitespace().nth(5)?;
            path.contains("/ld-").then(|| path.to_string())
        });
        match interp {
            Some(ld) => assert_eq!(Some(got.base), mapped_at_offset_zero(&ld)),
            None => assert_eq!(got.base, got.dynaddr),
        }
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
