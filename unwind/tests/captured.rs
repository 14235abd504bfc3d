//! The unwinder on a real stack: `tests/c/capture.c`, built with `cc -O2
//! -fomit-frame-pointer` (so only CFI can unwind it, as Debian's libc),
//! copies its registers and stack three calls deep, as perf does at a
//! sample; the tests unwind that copy with the program's and libc's CFI.
//! No PMU, no perf: only a C compiler.
#![cfg(all(target_os = "linux", target_arch = "x86_64"))]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use object::{Object, ObjectSymbol};
use pmc_unwind::{MAX_FRAMES, Mapping, Regs, Unwinder};
use proptest::prelude::*;

/// One run of the capture program.
struct Capture {
    _dir: tempfile::TempDir,
    exe: PathBuf,
    regs: Regs,
    stack: Vec<u8>,
    mappings: Vec<Mapping>,
}

fn capture() -> Capture {
    capture_built(&[])
}

/// A run of the capture program built with `extra` compiler flags too.
fn capture_built(extra: &[&str]) -> Capture {
    let dir = tempfile::tempdir().expect("temp dir");
    let exe = dir.path().join("capture");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c/capture.c");
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let built = Command::new(&cc)
        .args(["-O2", "-fomit-frame-pointer"])
        .args(extra)
        .arg("-o")
        .arg(&exe)
        .arg(&src)
        .status()
        .unwrap_or_else(|e| panic!("{cc} (a C compiler is needed for this test): {e}"));
    assert!(built.success(), "{cc} failed on {}", src.display());
    let (bin, maps) = (dir.path().join("stack.bin"), dir.path().join("maps"));
    let ran = Command::new(&exe).arg(&bin).arg(&maps).status().unwrap();
    assert!(ran.success(), "capture exited with {ran}");
    let raw = std::fs::read(&bin).unwrap();
    let word = |i: usize| u64::from_le_bytes(raw[i * 8..i * 8 + 8].try_into().unwrap());
    let regs = Regs {
        pc: word(0),
        sp: word(1),
        fp: word(2),
        lr: 0,
    };
    let stack = raw[24..].to_vec();
    let mappings = std::fs::read_to_string(&maps)
        .unwrap()
        .lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let (range, perms, off) = (f.next()?, f.next()?, f.next()?);
            let path = f.nth(2)?;
            if !perms.contains('x') || !path.starts_with('/') {
                return None;
            }
            let (lo, hi) = range.split_once('-')?;
            let lo = u64::from_str_radix(lo, 16).ok()?;
            Some(Mapping {
                start: lo,
                len: u64::from_str_radix(hi, 16).ok()? - lo,
                pgoff: u64::from_str_radix(off, 16).ok()?,
                path: path.to_string(),
            })
        })
        .collect();
    Capture {
        _dir: dir,
        exe,
        regs,
        stack,
        mappings,
    }
}

impl Capture {
    /// The program's own executable mappings.
    fn own_mappings(&self) -> Vec<&Mapping> {
        self.mappings
            .iter()
            .filter(|m| Path::new(&m.path) == self.exe)
            .collect()
    }

    /// The names of [`Capture::names`] that are the program's own.
    fn own_names(&self, frames: &[u64]) -> Vec<String> {
        self.names(frames).into_iter().flatten().collect()
    }

    /// An unwinder given the program's own object as `elf` (its path
    /// gone, as for a deleted file) and every other object by its path.
    fn unwinder_with_own_object(&self, elf: Vec<u8>) -> Unwinder {
        let elf: Arc<[u8]> = elf.into();
        let mut u = Unwinder::new();
        for m in &self.mappings {
            if Path::new(&m.path) == self.exe {
                let gone = Mapping {
                    path: "/nonexistent/capture (deleted)".into(),
                    ..m.clone()
                };
                u.add_mapping_with_object(7, &gone, elf.clone());
            } else {
                u.add_mapping(7, m);
            }
        }
        u
    }

    fn unwinder(&self) -> Unwinder {
        let mut u = Unwinder::new();
        for m in &self.mappings {
            u.add_mapping(7, m);
        }
        u
    }

    /// The program's own function holding each frame (`None`: outside
    /// it, e.g. in libc). Return addresses are looked up one byte back,
    /// inside the call.
    fn names(&self, frames: &[u64]) -> Vec<Option<String>> {
        let data = std::fs::read(&self.exe).unwrap();
        let file = object::File::parse(&*data).unwrap();
        let exe_map = self
            .mappings
            .iter()
            .find(|m| Path::new(&m.path) == self.exe)
            .expect("the program's own mapping");
        // A PIE's first executable segment: bias = start - (vaddr at pgoff).
        let text_vaddr = file
            .segments()
            .find_map(|s| {
                use object::ObjectSegment;
                let (off, _) = s.file_range();
                (off == exe_map.pgoff).then(|| s.address())
            })
            .expect("the segment mapped at pgoff");
        let bias = exe_map.start - text_vaddr;
        let symbols: Vec<_> = file
            .symbols()
            .filter(|s| s.kind() == object::SymbolKind::Text && s.size() > 0)
            .collect();
        frames
            .iter()
            .enumerate()
            .map(|(i, &a)| {
                let at = a.wrapping_sub(bias).wrapping_sub(u64::from(i > 0));
                symbols
                    .iter()
                    .find(|s| s.address() <= at && at < s.address() + s.size())
                    .and_then(|s| s.name().ok())
                    .map(str::to_string)
            })
            .collect()
    }
}

#[test]
fn a_stack_without_frame_pointers_unwinds_through_libc_to_start() {
    let c = capture();
    let frames = c.unwinder().unwind(7, &c.regs, &c.stack);
    let names = c.names(&frames);
    let own: Vec<&str> = names.iter().flatten().map(String::as_str).collect();
    assert_eq!(
        own,
        ["capture", "level3", "level2", "level1", "main", "_start"],
        "frames {frames:x?} named {names:?}"
    );
    // Between main and _start: libc's __libc_start_call_main and
    // __libc_start_main, which have no frame pointers either.
    let libc = c
        .mappings
        .iter()
        .find(|m| m.path.contains("libc.so"))
        .expect("libc mapped");
    let in_libc = frames
        .iter()
        .filter(|&&a| a >= libc.start && a < libc.start + libc.len)
        .count();
    assert!(in_libc >= 1, "no frame in libc: {frames:x?}");
    assert_eq!(names.last(), Some(&Some("_start".to_string())));
}

#[test]
fn a_truncated_copy_ends_the_chain_at_a_prefix_of_the_whole_one() {
    let c = capture();
    let mut u = c.unwinder();
    let whole = u.unwind(7, &c.regs, &c.stack);
    let mut lengths = Vec::new();
    for cut in [0, 8, 16, 40, 64, 128, 512, c.stack.len() / 2] {
        let part = u.unwind(7, &c.regs, &c.stack[..cut.min(c.stack.len())]);
        assert!(!part.is_empty() && part.len() <= whole.len());
        assert_eq!(part, whole[..part.len()], "cut at {cut}");
        lengths.push(part.len());
    }
    // An empty copy still names the pc; the chain grows with the copy.
    assert_eq!(lengths[0], 1);
    assert!(lengths.windows(2).all(|w| w[0] <= w[1]), "{lengths:?}");
    // Some cut ends the chain partway: the frames the copy held, no more.
    assert!(
        lengths.iter().any(|&n| n > 1 && n < whole.len()),
        "{lengths:?} vs {}",
        whole.len()
    );
}

#[test]
fn a_frame_pointer_outside_the_copy_gives_the_pc_alone() {
    // Without CFI (no modules) only the frame pointer chain is left; one
    // pointing below the stack pointer or past the copy cannot be read,
    // so the chain is the pc, not frames made of other memory.
    let c = capture();
    let mut u = Unwinder::new();
    let past = c.regs.sp + c.stack.len() as u64;
    for fp in [
        0,
        8,
        c.regs.sp - 64,
        past,
        past + 4096,
        u64::MAX - 7,
        u64::MAX,
    ] {
        let regs = Regs { fp, ..c.regs };
        let frames = u.unwind(7, &regs, &c.stack);
        assert_eq!(frames, [c.regs.pc], "fp {fp:#x}");
    }
}

#[test]
fn a_frame_chain_that_loops_ends() {
    // A saved frame pointer pointing at itself: each step reads the same
    // frame, which does not advance the stack, so the walk stops.
    let sp = 0x7ff0_0000_0000u64;
    let mut stack = vec![0u8; 64];
    stack[16..24].copy_from_slice(&(sp + 16).to_le_bytes());
    stack[24..32].copy_from_slice(&0x4000_1234u64.to_le_bytes());
    let frames = Unwinder::new().unwind(
        7,
        &Regs {
            pc: 0x4000_0000,
            sp,
            fp: sp + 16,
            lr: 0,
        },
        &stack,
    );
    // The pc, then the one return address the frame holds; the next step
    // reads the same frame again and stops.
    assert_eq!(frames, [0x4000_0000, 0x4000_1234]);
}

#[test]
fn an_object_mapped_at_another_offset_is_not_used_for_wrong_frames() {
    // The program's CFI at a wrong load bias: the unwinder may stop early
    // but every frame it gives still starts with the real pc.
    let c = capture();
    let mut u = Unwinder::new();
    for m in &c.mappings {
        let shifted = Mapping {
            start: m.start + 0x1000,
            ..m.clone()
        };
        u.add_mapping(7, &shifted);
    }
    let frames = u.unwind(7, &c.regs, &c.stack);
    assert_eq!(frames.first(), Some(&c.regs.pc));
    assert!(frames.len() <= MAX_FRAMES);
}

/// The whole chain of the capture program, as its own functions name it.
const CHAIN: [&str; 6] = ["capture", "level3", "level2", "level1", "main", "_start"];

#[test]
fn a_forked_child_unwinds_through_its_parents_mappings_until_exec_or_exit() {
    let c = capture();
    let whole = c.unwinder().unwind(7, &c.regs, &c.stack);
    assert_eq!(c.own_names(&whole), CHAIN);
    // What an unwinder that knows no mapping of the process gives.
    let bare = Unwinder::new().unwind(7, &c.regs, &c.stack);
    assert_ne!(bare, whole);
    let mut u = c.unwinder();
    // Forked before the parent's objects were read: the child reads them.
    u.fork(7, 8);
    assert_eq!(u.mappings(8), u.mappings(7));
    assert_eq!(u.unwind(8, &c.regs, &c.stack), whole);
    // The child's exec forgets the parent's image, in the child only.
    u.exec(8);
    assert_eq!(u.mappings(8), &[] as &[Mapping]);
    assert_eq!(u.unwind(8, &c.regs, &c.stack), bare);
    assert_eq!(u.unwind(7, &c.regs, &c.stack), whole);
    // A fork of a process with no mappings gives none.
    u.fork(8, 9);
    assert_eq!(u.unwind(9, &c.regs, &c.stack), bare);
    u.exit(7);
    assert_eq!(u.mappings(7), &[] as &[Mapping]);
    assert_eq!(u.unwind(7, &c.regs, &c.stack), bare);
}

#[test]
fn a_mapping_seen_again_leaves_the_other_objects_to_be_read() {
    // The attach-time list after the live records: the program's mapping
    // is told again before the first unwind; libc's is still read.
    let c = capture();
    let whole = c.unwinder().unwind(7, &c.regs, &c.stack);
    let mut u = c.unwinder();
    let own = c.own_mappings()[0].clone();
    u.add_mapping(7, &own);
    assert_eq!(u.mappings(7).len(), c.mappings.len());
    assert_eq!(u.mappings(7).last(), Some(&own));
    assert_eq!(u.unwind(7, &c.regs, &c.stack), whole);
}

#[test]
fn an_object_given_as_bytes_unwinds_as_its_file_does() {
    let c = capture();
    let whole = c.unwinder().unwind(7, &c.regs, &c.stack);
    let mut u = c.unwinder_with_own_object(std::fs::read(&c.exe).unwrap());
    assert_eq!(u.unwind(7, &c.regs, &c.stack), whole);
    assert_eq!(u.mappings(7).len(), c.mappings.len());
}

#[test]
fn mappings_of_unknown_length_cover_their_objects_executable_segment() {
    let c = capture();
    let whole = c.unwinder().unwind(7, &c.regs, &c.stack);
    let mut u = Unwinder::new();
    for m in &c.mappings {
        u.add_mapping(
            7,
            &Mapping {
                len: 0,
                ..m.clone()
            },
        );
    }
    assert_eq!(u.unwind(7, &c.regs, &c.stack), whole);
}

#[test]
fn an_address_past_a_mappings_length_is_not_its_objects() {
    // Only the program's mapping, cut to end just before the pc or just
    // after it: the pc is in the object's text either way, but its CFI
    // serves the mapping's addresses only.
    let c = capture();
    let own = c.own_mappings()[0].clone();
    let bare = Unwinder::new().unwind(7, &c.regs, &c.stack);
    let unwind = |len: u64| {
        let mut u = Unwinder::new();
        u.add_mapping(7, &Mapping { len, ..own.clone() });
        u.unwind(7, &c.regs, &c.stack)
    };
    let whole = c.unwinder().unwind(7, &c.regs, &c.stack);
    // Without CFI for the pc, the frame pointer does not find level3.
    assert_ne!(bare.get(1), Some(&whole[1]), "{bare:x?}");
    assert_eq!(unwind(c.regs.pc - own.start), bare);
    // With it, the return into level3 (whose address is past this
    // mapping: the chain ends there).
    let held = unwind(c.regs.pc - own.start + 1);
    assert_eq!(held.get(..2), Some(&whole[..2]), "{held:x?}");
}

/// Up to five of `names`: the chain up to `main` (what follows it, in
/// libc, depends on the objects given).
fn first_five(names: &[String]) -> Vec<&str> {
    names.iter().take(5).map(String::as_str).collect()
}

/// The file offset of each `PT_LOAD` program header of a 64-bit
/// little-endian ELF image, with its (p_flags, p_offset).
fn load_headers(elf: &[u8]) -> Vec<(usize, u32, u64)> {
    let u16_at = |o: usize| u16::from_le_bytes(elf[o..o + 2].try_into().unwrap());
    let u32_at = |o: usize| u32::from_le_bytes(elf[o..o + 4].try_into().unwrap());
    let u64_at = |o: usize| u64::from_le_bytes(elf[o..o + 8].try_into().unwrap());
    let (phoff, phentsize, phnum) = (u64_at(32) as usize, u16_at(54), u16_at(56));
    (0..usize::from(phnum))
        .map(|i| phoff + i * usize::from(phentsize))
        .filter(|&h| u32_at(h) == object::elf::PT_LOAD)
        .map(|h| (h, u32_at(h + 4), u64_at(h + 8)))
        .collect()
}

#[test]
fn each_executable_segment_is_biased_by_its_own_program_header() {
    // level2 in a second executable segment, linked 1 MiB up but stored
    // right after the data segment in the file: its mapping's file offset
    // is inside the data segment's memory size (.bss), and its load bias
    // differs from .text's.
    let c = capture_built(&["-DFAR_LEVEL2", "-Wl,--section-start=far_text=0x100000"]);
    assert_eq!(c.own_mappings().len(), 2, "{:x?}", c.mappings);
    let whole = c.unwinder().unwind(7, &c.regs, &c.stack);
    assert_eq!(c.own_names(&whole), CHAIN);
    // The first executable segment's memory size stretched to end exactly
    // where the second's file offset starts: the second mapping is still
    // the second segment's (a segment is [offset, offset + memsz)).
    let mut elf = std::fs::read(&c.exe).unwrap();
    let exec: Vec<_> = load_headers(&elf)
        .into_iter()
        .filter(|&(_, flags, _)| flags & object::elf::PF_X != 0)
        .collect();
    assert_eq!(exec.len(), 2, "{exec:x?}");
    let ((first, _, first_offset), (_, _, second_offset)) = (exec[0], exec[1]);
    let memsz = second_offset - first_offset;
    elf[first + 40..first + 48].copy_from_slice(&memsz.to_le_bytes());
    let mut u = c.unwinder_with_own_object(elf);
    assert_eq!(u.unwind(7, &c.regs, &c.stack), whole);
}

/// `elf` with its sections named `.eh_frame*` renamed `.no_frame*`.
fn without_eh_frame(mut elf: Vec<u8>) -> Vec<u8> {
    use object::ObjectSection;
    let names = object::File::parse(&*elf)
        .unwrap()
        .section_by_name(".shstrtab")
        .and_then(|s| s.file_range())
        .expect("a section name table");
    let (lo, hi) = (names.0 as usize, (names.0 + names.1) as usize);
    for at in lo..hi.saturating_sub(9) {
        if &elf[at..at + 9] == b".eh_frame" {
            elf[at..at + 9].copy_from_slice(b".no_frame");
        }
    }
    elf
}

#[test]
fn an_object_whose_cfi_is_in_debug_frame_alone_unwinds_by_it() {
    // Without unwind tables, GCC writes the program's CFI to .debug_frame;
    // only crt1's _start keeps .eh_frame, which is hidden here (an
    // object with .eh_frame is unwound by it alone).
    let c = capture_built(&["-fno-asynchronous-unwind-tables", "-g"]);
    let elf = without_eh_frame(std::fs::read(&c.exe).unwrap());
    {
        use object::Object as _;
        let file = object::File::parse(&*elf).unwrap();
        assert!(file.section_by_name(".eh_frame").is_none());
        assert!(file.section_by_name(".debug_frame").is_some());
    }
    let mut u = c.unwinder_with_own_object(elf);
    let frames = u.unwind(7, &c.regs, &c.stack);
    let names = c.own_names(&frames);
    assert_eq!(first_five(&names), CHAIN[..5], "{frames:x?}");
}

/// `elf` with each FDE's start address in `.eh_frame` written relative to
/// the section `base` with `encoding` (`DW_EH_PE_datarel | sdata4` for
/// `.got`, `DW_EH_PE_textrel | sdata4` for `.text`) instead of relative to
/// the field itself (`DW_EH_PE_pcrel | sdata4`, which GCC and GAS write):
/// encodings the ELF ABIs allow (i386 objects use `.got`-relative ones),
/// which resolve only with that section's address.
fn eh_frame_relative_to(mut elf: Vec<u8>, base: &str, encoding: u8) -> Vec<u8> {
    use object::ObjectSection;
    let (frame_svma, range, base_svma) = {
        let file = object::File::parse(&*elf).unwrap();
        let frame = file.section_by_name(".eh_frame").unwrap();
        let (offset, size) = frame.file_range().unwrap();
        let base = file.section_by_name(base).unwrap().address();
        (
            frame.address(),
            offset as usize..(offset + size) as usize,
            base,
        )
    };
    let frame = &mut elf[range];
    let u32_at = |f: &[u8], o: usize| u32::from_le_bytes(f[o..o + 4].try_into().unwrap());
    let (mut at, mut fdes) = (0, 0);
    while at + 8 <= frame.len() {
        let len = u32_at(frame, at) as usize;
        if len == 0 {
            break;
        }
        assert_ne!(len, 0xffff_ffff, "64-bit DWARF in .eh_frame");
        if u32_at(frame, at + 4) == 0 {
            // A CIE: version 1, "zR", code and data alignment (LEB128),
            // the return address register (a byte), 1 byte of
            // augmentation data: the FDE address encoding.
            assert_eq!(&frame[at + 8..at + 12], b"\x01zR\0", "CIE at {at:#x}");
            let mut p = at + 12;
            for _ in 0..2 {
                while frame[p] & 0x80 != 0 {
                    p += 1;
                }
                p += 1;
            }
            p += 1;
            assert_eq!(frame[p], 1, "augmentation length");
            assert_eq!(frame[p + 1], 0x1b, "pcrel sdata4");
            frame[p + 1] = encoding;
        } else {
            let field = at + 8;
            let old = i32::from_le_bytes(frame[field..field + 4].try_into().unwrap());
            let start = (frame_svma + field as u64).wrapping_add_signed(i64::from(old));
            let new = i32::try_from(start.wrapping_sub(base_svma) as i64).unwrap();
            frame[field..field + 4].copy_from_slice(&new.to_le_bytes());
            fdes += 1;
        }
        at += 4 + len;
    }
    assert!(fdes >= 5, "{fdes} FDEs");
    elf
}

#[test]
fn fde_addresses_relative_to_got_or_text_are_resolved() {
    let c = capture();
    let whole = c.unwinder().unwind(7, &c.regs, &c.stack);
    for (base, encoding) in [(".got", 0x3b), (".text", 0x2b)] {
        let elf = eh_frame_relative_to(std::fs::read(&c.exe).unwrap(), base, encoding);
        let mut u = c.unwinder_with_own_object(elf);
        assert_eq!(u.unwind(7, &c.regs, &c.stack), whole, "{base}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Arbitrary registers and stack bytes over the real objects: the
    /// unwinder ends, at most MAX_FRAMES deep, starting at the pc.
    #[test]
    fn arbitrary_registers_and_stack_end_cleanly(
        pc in any::<u64>(),
        sp_off in any::<i16>(),
        fp in any::<u64>(),
        bytes in proptest::collection::vec(any::<u8>(), 0..2048),
        pick_pc_in_module in any::<bool>(),
    ) {
        let c = capture_cached();
        let mut u = c.unwinder();
        let pc = if pick_pc_in_module {
            let m = &c.mappings[(pc as usize) % c.mappings.len()];
            m.start + pc % m.len.max(1)
        } else {
            pc
        };
        let regs = Regs { pc, sp: c.regs.sp.wrapping_add_signed(i64::from(sp_off)), fp, lr: 0 };
        let frames = u.unwind(7, &regs, &bytes);
        prop_assert_eq!(frames.first(), Some(&pc));
        prop_assert!(frames.len() <= MAX_FRAMES);
    }

    /// The program's CFI corrupted at random (bytes of .eh_frame,
    /// .eh_frame_hdr and .text overwritten): the real stack still unwinds
    /// to an end, never past MAX_FRAMES, never panicking.
    #[test]
    fn corrupt_cfi_ends_cleanly(
        edits in proptest::collection::vec((any::<u32>(), any::<u8>()), 1..64),
    ) {
        let c = capture_cached();
        let mut elf = std::fs::read(&c.exe).unwrap();
        let ranges = cfi_ranges(&elf);
        for (at, value) in edits {
            let (lo, hi) = ranges[at as usize % ranges.len()];
            if hi > lo {
                elf[lo + at as usize % (hi - lo)] = value;
            }
        }
        let elf: Arc<[u8]> = elf.into();
        let mut u = Unwinder::new();
        for m in &c.mappings {
            if Path::new(&m.path) == c.exe {
                u.add_mapping_with_object(7, m, elf.clone());
            } else {
                u.add_mapping(7, m);
            }
        }
        let frames = u.unwind(7, &c.regs, &c.stack);
        prop_assert_eq!(frames.first(), Some(&c.regs.pc));
        prop_assert!(frames.len() <= MAX_FRAMES);
    }
}

/// The file ranges of the program's CFI and code.
fn cfi_ranges(elf: &[u8]) -> Vec<(usize, usize)> {
    use object::ObjectSection;
    let file = object::File::parse(elf).unwrap();
    [".eh_frame", ".eh_frame_hdr", ".text"]
        .iter()
        .filter_map(|n| file.section_by_name(n)?.file_range())
        .map(|(o, s)| (o as usize, (o + s) as usize))
        .collect()
}

/// One capture for all of a proptest's cases (each case building the
/// program again would take minutes).
fn capture_cached() -> Arc<Capture> {
    thread_local! {
        static CAPTURE: std::cell::OnceCell<Arc<Capture>> = const { std::cell::OnceCell::new() };
    }
    CAPTURE.with(|c| c.get_or_init(|| Arc::new(capture())).clone())
}
