//! Unwinding sampled user stacks with the objects' CFI.
//!
//! A profiler that asks the kernel for the user registers and a copy of
//! the top of the user stack at each sample (perf's
//! `PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER`) turns them into a
//! call chain afterwards: this crate does that with
//! [`framehop`](https://docs.rs/framehop) (`.eh_frame_hdr`/`.eh_frame`,
//! `.debug_frame`, prologue/epilogue analysis, frame pointers where an
//! address has no CFI) over the ELF objects each process has mapped, read
//! with [`object`](https://docs.rs/object).
//!
//! Input: each process's executable file mappings ([`Mapping`], as perf's
//! MMAP2 records or `/proc/PID/maps` give them), and per sample the
//! registers ([`Regs`]) and the stack bytes copied from the stack pointer
//! up. Output: the return addresses, innermost first, starting with the
//! sampled pc. A stack that cannot be unwound further ends there: an
//! address outside the copy, CFI that does not advance, a loop or a
//! corrupt object end the chain, never with an invented frame.
//!
//! ```no_run
//! use pmc_unwind::{Mapping, Regs, Unwinder};
//!
//! let mut unwinder = Unwinder::new();
//! unwinder.add_mapping(42, &Mapping {
//!     start: 0x7f00_0002_8000,
//!     len: 0x195000,
//!     pgoff: 0x28000,
//!     path: "/usr/lib/x86_64-linux-gnu/libc.so.6".into(),
//! });
//! # let (pc, sp, fp, stack) = (0x7f00_0003_0000, 0x7ffd_0000_0000, 0, vec![0u8; 8192]);
//! let frames = unwinder.unwind(42, &Regs { pc, sp, fp, lr: 0 }, &stack);
//! println!("{frames:x?}");
//! ```

use std::collections::HashMap;
use std::fmt;
use std::ops::{Deref, Range};
use std::sync::Arc;

use framehop::{ExplicitModuleSectionInfo, Module, Unwinder as _};
use object::{Object, ObjectSection, ObjectSegment};

mod object_file;
mod vdso;
pub use object_file::{MAX_OBJECT_BYTES, ObjectFile, open_untrusted_object};
pub use vdso::{VDSO_PATH, own_vdso_image};

#[cfg(target_arch = "aarch64")]
use framehop::aarch64::{CacheAarch64 as Cache, UnwindRegsAarch64, UnwinderAarch64 as Native};
#[cfg(not(target_arch = "aarch64"))]
use framehop::x86_64::{CacheX86_64 as Cache, UnwindRegsX86_64, UnwinderX86_64 as Native};

/// The most frames one chain gets: a CFI loop the unwinder does not see
/// as one (two frames calling each other forever) ends here.
pub const MAX_FRAMES: usize = 512;

/// The registers an unwind starts from (the sampled thread's user
/// registers).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Regs {
    /// The program counter.
    pub pc: u64,
    /// The stack pointer: the address of the first byte of the stack copy.
    pub sp: u64,
    /// The frame pointer (x86-64 `rbp`, AArch64 `x29`).
    pub fp: u64,
    /// The link register (AArch64 `x30`; unused on x86-64).
    pub lr: u64,
}

/// An executable file mapping of a process.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Mapping {
    /// Its start address.
    pub start: u64,
    /// Its length in bytes (0: unknown, the object's executable segment's
    /// size is used).
    pub len: u64,
    /// The file offset mapped at `start`.
    pub pgoff: u64,
    /// The file.
    pub path: String,
}

/// Shared bytes of an object file's section: an object read once serves
/// every process that maps it.
#[derive(Clone, Default)]
struct Bytes {
    data: Arc<[u8]>,
    range: Range<usize>,
}

impl Deref for Bytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        self.data.get(self.range.clone()).unwrap_or(&[])
    }
}

/// What unwinding needs of one object, read once: its segments and the
/// bytes of the sections framehop uses (each read alone, so an object
/// costs those sections, not the whole file).
struct ObjectInfo {
    /// `PT_LOAD` segments: (file offset, vaddr, memsz, executable).
    segments: Vec<(u64, u64, u64, bool)>,
    /// Sections by name: (svma range, bytes).
    sections: HashMap<&'static str, (Range<u64>, Arc<[u8]>)>,
}

impl fmt::Debug for ObjectInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ObjectInfo")
            .field("segments", &self.segments)
            .field("sections", &self.sections.keys().collect::<Vec<_>>())
            .finish()
    }
}

const SECTIONS: [&str; 5] = [
    ".text",
    ".eh_frame",
    ".eh_frame_hdr",
    ".debug_frame",
    ".got",
];

/// Sections whose address framehop needs (the bases of `DW_EH_PE_textrel`
/// and `datarel` pointers) but never their bytes on ELF: it reads code
/// only for Mach-O and PE. Their bytes are not read (a large program's
/// `.text` is most of its size: 100 MB and more for a compiler).
const ADDRESS_ONLY: [&str; 2] = [".text", ".got"];

impl ObjectInfo {
    /// Parses an ELF image in memory; `None` when it is not one (a corrupt
    /// section table leaves those sections out).
    fn parse(data: &[u8]) -> Option<ObjectInfo> {
        ObjectInfo::parse_with(data, |offset, size| {
            let lo = usize::try_from(offset).ok()?;
            let hi = lo.checked_add(usize::try_from(size).ok()?)?;
            data.get(lo..hi).map(Arc::from)
        })
    }

    /// Parses the object file at `path`, read through [`ObjectFile`]
    /// (an absolute path to a regular file; only what is used is read).
    fn read(path: &str) -> Option<ObjectInfo> {
        let file = ObjectFile::open(std::path::Path::new(path)).ok()?;
        ObjectInfo::parse_with(&file, |offset, size| {
            file.read_range(offset, size).map(Arc::from)
        })
    }

    /// Parses an ELF object from `data`, copying each used section out with
    /// `read` (file offset, size), which refuses ranges past the file.
    fn parse_with<'d, R: object::ReadRef<'d>>(
        data: R,
        read: impl Fn(u64, u64) -> Option<Arc<[u8]>>,
    ) -> Option<ObjectInfo> {
        let file = object::File::parse(data).ok()?;
        let segments = file
            .segments()
            .map(|s| {
                let (offset, _) = s.file_range();
                let executable = match s.flags() {
                    object::SegmentFlags::Elf { p_flags } => p_flags & object::elf::PF_X != 0,
                    _ => false,
                };
                (offset, s.address(), s.size(), executable)
            })
            .collect();
        let mut sections = HashMap::new();
        for name in SECTIONS {
            let Some(s) = file.section_by_name(name) else {
                continue;
            };
            // .bss-like sections have no bytes in the file.
            let Some((offset, size)) = s.file_range() else {
                continue;
            };
            // framehop takes `.debug_frame` only where `.eh_frame` is
            // missing.
            let unused = ADDRESS_ONLY.contains(&name)
                || (name == ".debug_frame"
                    && sections
                        .get(".eh_frame")
                        .is_some_and(|(_, d): &(_, Arc<[u8]>)| !d.is_empty()));
            let bytes = if unused {
                Arc::from(&[][..])
            } else {
                let Some(bytes) = read(offset, size) else {
                    continue;
                };
                bytes
            };
            let Some(end) = s.address().checked_add(s.size()) else {
                continue;
            };
            sections.insert(name, (s.address()..end, bytes));
        }
        Some(ObjectInfo { segments, sections })
    }

    fn section(&self, name: &str) -> Option<Bytes> {
        let (_, data) = self.sections.get(name).filter(|(_, d)| !d.is_empty())?;
        Some(Bytes {
            data: data.clone(),
            range: 0..data.len(),
        })
    }

    fn svma(&self, name: &str) -> Option<Range<u64>> {
        self.sections.get(name).map(|(svma, _)| svma.clone())
    }

    /// The framehop module for this object mapped as `m`.
    fn module(&self, m: &Mapping) -> Module<Bytes> {
        // The segment holding the mapped file offset gives the load bias:
        // file offset `pgoff` is at `start`, and at `vaddr + (pgoff -
        // offset)` in the object's own addresses.
        let segment = self
            .segments
            .iter()
            .filter(|s| s.3)
            .find(|(offset, _, memsz, _)| {
                m.pgoff >= *offset && m.pgoff < offset.saturating_add(*memsz)
            })
            .or_else(|| self.segments.iter().find(|s| s.3));
        let (svma_at_start, len) = match segment {
            Some(&(offset, vaddr, memsz, _)) => (
                vaddr.wrapping_add(m.pgoff.wrapping_sub(offset)),
                memsz.saturating_sub(m.pgoff.saturating_sub(offset)),
            ),
            None => (m.pgoff, 0),
        };
        let base_avma = m.start.wrapping_sub(svma_at_start);
        let len = if m.len > 0 { m.len } else { len };
        let info = ExplicitModuleSectionInfo {
            base_svma: 0,
            text_svma: self.svma(".text"),
            got_svma: self.svma(".got"),
            eh_frame_svma: self.svma(".eh_frame"),
            eh_frame: self.section(".eh_frame"),
            eh_frame_hdr_svma: self.svma(".eh_frame_hdr"),
            eh_frame_hdr: self.section(".eh_frame_hdr"),
            debug_frame: self.section(".debug_frame"),
            ..Default::default()
        };
        Module::new(
            m.path.clone(),
            m.start..m.start.saturating_add(len),
            base_avma,
            info,
        )
    }
}

/// One process's modules.
#[derive(Clone, Default)]
struct Process {
    mappings: Vec<Mapping>,
    /// Mappings whose objects are read at the process's next unwind.
    unread: Vec<Mapping>,
    unwinder: Native<Bytes>,
}

impl Process {
    /// Makes room for `mapping`: one seen again (the same event from two
    /// rings, or the attach-time list after a live record) replaces the
    /// old one.
    fn replace(&mut self, mapping: &Mapping) {
        if let Some(old) = self.mappings.iter().position(|m| m.start == mapping.start) {
            self.mappings.remove(old);
            self.unread.retain(|m| m.start != mapping.start);
            self.unwinder.remove_module(mapping.start);
        }
        self.mappings.push(mapping.clone());
    }
}

/// The section bytes the unwinder keeps of objects read before, beyond
/// those mapped by a process it knows: a long system-wide recording on a
/// machine that builds software meets thousands of short-lived programs.
const OBJECT_CACHE_BYTES: usize = 256 << 20;

impl ObjectInfo {
    /// The bytes of its sections.
    fn bytes(&self) -> usize {
        self.sections.values().map(|(_, d)| d.len()).sum()
    }

    /// Whether a process's modules still use its bytes.
    fn in_use(&self) -> bool {
        self.sections
            .values()
            .any(|(_, d)| Arc::strong_count(d) > 1)
    }
}

/// Per-process module lists and the objects they map, unwinding samples.
pub struct Unwinder {
    /// Objects read so far, by path (`None`: unreadable or not ELF, not
    /// tried again).
    objects: HashMap<String, Option<Arc<ObjectInfo>>>,
    /// The section bytes `objects` holds, and the most it keeps of
    /// objects no process maps any more ([`OBJECT_CACHE_BYTES`]).
    object_bytes: usize,
    object_limit: usize,
    processes: HashMap<u32, Process>,
    cache: Cache,
}

impl fmt::Debug for Unwinder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Unwinder")
            .field("objects", &self.objects.len())
            .field("processes", &self.processes.len())
            .finish()
    }
}

impl Default for Unwinder {
    fn default() -> Self {
        Self::new()
    }
}

impl Unwinder {
    /// No processes, no objects.
    pub fn new() -> Unwinder {
        Unwinder {
            objects: HashMap::new(),
            object_bytes: 0,
            object_limit: OBJECT_CACHE_BYTES,
            processes: HashMap::new(),
            cache: Cache::new(),
        }
    }

    /// Process `pid` mapped a file: its CFI is used for addresses in the
    /// mapping from now on. The file is read when a stack of the process
    /// is first unwound after the mapping (so a profiler told of every
    /// process's mappings reads only the objects of those it unwinds), once
    /// per path; the vDSO, [`VDSO_PATH`], is this process's own image (the
    /// unwinder runs as the samples are taken). One that cannot be read
    /// (gone, not ELF) leaves the mapping's addresses to frame pointers.
    pub fn add_mapping(&mut self, pid: u32, mapping: &Mapping) {
        let process = self.processes.entry(pid).or_default();
        process.replace(mapping);
        process.unread.push(mapping.clone());
    }

    /// [`Unwinder::add_mapping`] with the object's bytes given instead of
    /// read from `mapping.path` (an object no longer on disk, or a test's).
    pub fn add_mapping_with_object(&mut self, pid: u32, mapping: &Mapping, elf: Arc<[u8]>) {
        let process = self.processes.entry(pid).or_default();
        process.replace(mapping);
        if let Some(object) = ObjectInfo::parse(&elf) {
            process.unwinder.add_module(object.module(mapping));
        }
    }

    /// The object at `path`, read the first time it is asked for.
    fn object(&mut self, path: &str) -> Option<Arc<ObjectInfo>> {
        if let Some(known) = self.objects.get(path) {
            return known.clone();
        }
        let read = if path == VDSO_PATH {
            own_vdso_image().and_then(|image| ObjectInfo::parse(&image))
        } else {
            ObjectInfo::read(path)
        }
        .map(Arc::new);
        if let Some(object) = &read {
            self.object_bytes += object.bytes();
            if self.object_bytes > self.object_limit {
                self.forget_unused_objects();
            }
        }
        self.objects.insert(path.to_string(), read.clone());
        read
    }

    /// Drops the objects no process maps (read again if one maps them
    /// later).
    fn forget_unused_objects(&mut self) {
        let mut freed = 0;
        self.objects.retain(|_, object| match object {
            Some(o) if !o.in_use() => {
                freed += o.bytes();
                false
            }
            _ => true,
        });
        self.object_bytes -= freed;
    }

    /// A smaller bound on the object cache, for tests.
    #[cfg(test)]
    fn set_object_limit(&mut self, bytes: usize) {
        self.object_limit = bytes;
    }

    /// Process `pid` replaced its image: its old mappings are gone.
    pub fn exec(&mut self, pid: u32) {
        self.processes.remove(&pid);
    }

    /// Process `parent` forked `child`, which starts with its mappings.
    pub fn fork(&mut self, parent: u32, child: u32) {
        if let Some(p) = self.processes.get(&parent).cloned() {
            self.processes.insert(child, p);
        }
    }

    /// Process `pid` ended.
    pub fn exit(&mut self, pid: u32) {
        self.processes.remove(&pid);
    }

    /// The mappings known for `pid`.
    pub fn mappings(&self, pid: u32) -> &[Mapping] {
        self.processes.get(&pid).map_or(&[], |p| &p.mappings)
    }

    /// The call chain of a sample of `pid`: the pc, then each caller's
    /// return address, innermost first, at most [`MAX_FRAMES`]. `stack`
    /// holds the bytes from `regs.sp` up. Ends where the stack cannot be
    /// unwound further: a read outside `stack`, CFI that does not
    /// advance, a null return address, or an unmapped pc without a frame
    /// pointer chain.
    pub fn unwind(&mut self, pid: u32, regs: &Regs, stack: &[u8]) -> Vec<u64> {
        let unread = self
            .processes
            .get_mut(&pid)
            .map(|p| std::mem::take(&mut p.unread))
            .unwrap_or_default();
        for mapping in unread {
            if let Some(object) = self.object(&mapping.path)
                && let Some(process) = self.processes.get_mut(&pid)
            {
                process.unwinder.add_module(object.module(&mapping));
            }
        }
        let empty = Process::default();
        let process = self.processes.get(&pid).unwrap_or(&empty);
        let sp = regs.sp;
        let mut read_stack = |addr: u64| -> Result<u64, ()> {
            let offset = usize::try_from(addr.checked_sub(sp).ok_or(())?).map_err(|_| ())?;
            let end = offset.checked_add(8).ok_or(())?;
            let word = stack.get(offset..end).ok_or(())?;
            Ok(u64::from_le_bytes(word.try_into().map_err(|_| ())?))
        };
        #[cfg(target_arch = "aarch64")]
        let start = UnwindRegsAarch64::new(regs.lr, regs.sp, regs.fp);
        #[cfg(not(target_arch = "aarch64"))]
        let start = UnwindRegsX86_64::new(regs.pc, regs.sp, regs.fp);
        let mut frames = Vec::new();
        // gimli's `.eh_frame_hdr` lookup subtracts pointers from a corrupt
        // table unchecked (an overflow panic where debug assertions are
        // on, a wrapped offset its bounds checks refuse elsewhere): a
        // panic there ends the chain like any other unreadable frame.
        let walked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let mut iter =
                process
                    .unwinder
                    .iter_frames(regs.pc, start, &mut self.cache, &mut read_stack);
            while frames.len() < MAX_FRAMES {
                match iter.next() {
                    Ok(Some(frame)) => frames.push(frame.address()),
                    Ok(None) | Err(_) => break,
                }
            }
        }));
        if walked.is_err() {
            // Its rule cache may hold a half-written entry.
            self.cache = Cache::new();
        }
        frames
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unknown_process_gives_its_pc_and_nothing_invented() {
        let mut u = Unwinder::new();
        // No modules, no frame pointer: framehop's fallback reads rbp's
        // frame, which is outside the (empty) copy.
        let frames = u.unwind(
            1,
            &Regs {
                pc: 0x1000,
                sp: 0x7000,
                fp: 0x7100,
                lr: 0,
            },
            &[],
        );
        assert_eq!(frames, vec![0x1000]);
    }

    /// A system-wide profiler is told of every process's mappings; only
    /// those of a process whose stack it unwinds are read (reading all of
    /// them held 1.5 GB of a loaded machine's objects in `pmcstat -T -S`).
    #[test]
    fn objects_are_read_at_their_process_first_unwind() {
        let exe = std::env::current_exe().expect("this test's path");
        let mut u = Unwinder::new();
        let mapping = Mapping {
            start: 0x5555_0000_0000,
            len: 0x1000,
            pgoff: 0,
            path: exe.to_string_lossy().into_owned(),
        };
        u.add_mapping(1, &mapping);
        u.add_mapping(2, &mapping);
        let read = |u: &Unwinder| format!("{u:?}");
        assert!(read(&u).contains("objects: 0"), "{}", read(&u));
        let regs = Regs {
            pc: 0x1000,
            sp: 0x7000,
            fp: 0,
            lr: 0,
        };
        u.unwind(3, &regs, &[]);
        assert!(read(&u).contains("objects: 0"), "{}", read(&u));
        u.unwind(1, &regs, &[]);
        assert!(read(&u).contains("objects: 1"), "{}", read(&u));
        // Read once by path: process 2's unwind reads nothing more.
        u.unwind(2, &regs, &[]);
        assert!(read(&u).contains("objects: 1"), "{}", read(&u));
        assert_eq!(u.mappings(2), &[mapping]);
    }

    /// Past its bound, the object cache forgets the objects no process
    /// maps any more, and keeps those a process still unwinds with.
    #[test]
    fn the_object_cache_forgets_unmapped_objects_past_its_bound() {
        let exe = std::env::current_exe().expect("this test's path");
        let path = exe.to_string_lossy().into_owned();
        let mut u = Unwinder::new();
        u.set_object_limit(1);
        let regs = Regs {
            pc: 0x1000,
            sp: 0x7000,
            fp: 0,
            lr: 0,
        };
        let at = |start| Mapping {
            start,
            len: 0x1000,
            pgoff: 0,
            path: path.clone(),
        };
        u.add_mapping(1, &at(0x5555_0000_0000));
        u.unwind(1, &regs, &[]);
        let read = |u: &Unwinder| format!("{u:?}");
        assert!(read(&u).contains("objects: 1"), "{}", read(&u));
        // In use by process 1: kept however small the bound.
        u.add_mapping(2, &at(0x6666_0000_0000));
        u.add_mapping(2, &mapping(0x7777_0000_0000, VDSO_PATH));
        u.unwind(2, &regs, &[]);
        assert!(read(&u).contains("objects: 2"), "{}", read(&u));
        assert!(u.objects.contains_key(&path));
        // Nobody maps the test's executable any more: the next object read
        // past the bound drops it.
        u.exit(1);
        u.exit(2);
        u.add_mapping(3, &mapping(0x8888_0000_0000, VDSO_PATH));
        u.objects.remove(VDSO_PATH);
        u.unwind(3, &regs, &[]);
        assert!(!u.objects.contains_key(&path), "{:?}", u.objects.keys());
        assert!(u.objects.contains_key(VDSO_PATH));
    }

    fn mapping(start: u64, path: &str) -> Mapping {
        Mapping {
            start,
            len: 0x1000,
            pgoff: 0,
            path: path.into(),
        }
    }

    #[test]
    fn a_mapping_replaces_only_the_one_at_its_start() {
        let mut u = Unwinder::new();
        let (a, b) = (mapping(0x1000, "/a"), mapping(0x5000, "/b"));
        u.add_mapping(1, &a);
        u.add_mapping(1, &b);
        assert_eq!(u.mappings(1), [a.clone(), b.clone()]);
        let a2 = mapping(0x1000, "/a2");
        u.add_mapping_with_object(1, &a2, Arc::from(&b"not ELF"[..]));
        assert_eq!(u.mappings(1), [b.clone(), a2.clone()]);
        u.add_mapping(1, &a);
        assert_eq!(u.mappings(1), [b, a]);
    }

    #[test]
    fn fork_copies_the_mappings_exec_and_exit_drop_them() {
        let mut u = Unwinder::new();
        let (a, b) = (mapping(0x1000, "/a"), mapping(0x5000, "/b"));
        u.add_mapping(1, &a);
        u.fork(1, 2);
        u.add_mapping(2, &b);
        assert_eq!(u.mappings(1), std::slice::from_ref(&a));
        assert_eq!(u.mappings(2), [a.clone(), b.clone()]);
        // A fork of an unknown process knows nothing of the child.
        u.fork(3, 4);
        assert_eq!(u.mappings(4), []);
        u.exec(2);
        assert_eq!(u.mappings(2), []);
        assert_eq!(u.mappings(1), [a]);
        u.exit(1);
        assert_eq!(u.mappings(1), []);
    }

    /// A frame pointer chain longer than [`MAX_FRAMES`]: the unwind ends
    /// at exactly that many frames.
    #[cfg(not(target_arch = "aarch64"))]
    #[test]
    fn a_chain_ends_at_max_frames() {
        let sp = 0x7000_0000u64;
        let frames_on_stack = MAX_FRAMES as u64 + 100;
        let mut stack = Vec::new();
        for i in 0..frames_on_stack {
            // Frame i at sp + 16 i: the caller's frame, then the return
            // address into it.
            stack.extend_from_slice(&(sp + 16 * (i + 1)).to_le_bytes());
            stack.extend_from_slice(&(0x10_0000 + i).to_le_bytes());
        }
        let regs = Regs {
            pc: 0x1000,
            sp,
            fp: sp,
            lr: 0,
        };
        let frames = Unwinder::new().unwind(1, &regs, &stack);
        assert_eq!(frames.len(), MAX_FRAMES, "{frames:x?}");
        let expected: Vec<u64> = std::iter::once(0x1000)
            .chain((0..MAX_FRAMES as u64 - 1).map(|i| 0x10_0000 + i))
            .collect();
        assert_eq!(frames, expected);
    }

    #[test]
    fn a_frame_pointer_chain_is_followed_where_no_cfi_covers_the_pc() {
        let mut u = Unwinder::new();
        // Two frames: [fp] = caller's fp, [fp+8] = return address; the
        // outermost frame's saved fp is 0.
        let sp = 0x7000u64;
        let mut stack = vec![0u8; 0x40];
        let put = |s: &mut Vec<u8>, at: u64, v: u64| {
            let o = (at - sp) as usize;
            s[o..o + 8].copy_from_slice(&v.to_le_bytes());
        };
        put(&mut stack, 0x7010, 0x7020); // saved fp of frame 1
        put(&mut stack, 0x7018, 0x4444); // return into caller
        put(&mut stack, 0x7020, 0); // outermost: no caller
        put(&mut stack, 0x7028, 0x5555);
        let frames = u.unwind(
            1,
            &Regs {
                pc: 0x1000,
                sp,
                fp: 0x7010,
                lr: 0,
            },
            &stack,
        );
        // The pc, frame 1's return address, and the outermost frame's: its
        // saved fp of 0 ends the chain after it.
        #[cfg(not(target_arch = "aarch64"))]
        assert_eq!(frames, [0x1000, 0x4444, 0x5555]);
        #[cfg(target_arch = "aarch64")]
        assert!(frames.len() <= 3, "{frames:x?}");
    }
}
