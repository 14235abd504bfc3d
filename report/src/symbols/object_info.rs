//! One ELF object as the symbolizer needs it: its loadable segments, text
//! range, build id and entry, the MAP_IN `start` and object addresses of
//! its pcs under either convention, and its names, read once.

use object::{Object, ObjectSection, ObjectSegment, ReadRef};

use super::debuginfo::{DebugFiles, DebugRefs};
use super::names::Names;
use super::sampled::Recorded;
use super::vdso::{self, ObjectData};
use super::{MapStart, Mapping, PAGE};

/// An ELF object loaded once per path.
pub(super) struct ObjectInfo {
    /// (vaddr, memsz, file offset) of executable PT_LOADs, lowest first.
    pub(super) text_segments: Vec<(u64, u64, u64)>,
    /// All PT_LOADs: (file offset start, file offset end, vaddr).
    pub(super) segments: Vec<(u64, u64, u64)>,
    /// Function names and DWARF, found the first time a pc of the object
    /// needs a name ([`ObjectInfo::names`]).
    pub(super) names: Option<Names>,
    /// Lowest and highest address of executable sections (libpmcstat's
    /// `pi_start`/`pi_end`).
    pub(super) text_range: Option<(u64, u64)>,
    pub(super) build_id: Option<String>,
    /// `e_entry`.
    pub(super) entry: u64,
    /// PT_INTERP: the run-time linker a dynamic program names.
    pub(super) interpreter: Option<String>,
    /// `ET_DYN`: loaded wherever the kernel chooses.
    pub(super) position_independent: bool,
}

impl std::fmt::Debug for ObjectInfo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ObjectInfo")
            .field("names", &self.names)
            .finish()
    }
}

impl ObjectInfo {
    /// The object at `path` (refusals noted in `notes`), `None` when it
    /// cannot be read or is not an object file.
    pub(super) fn load(path: &str, notes: &mut DebugFiles) -> Option<ObjectInfo> {
        match vdso::open_object(path, notes)? {
            ObjectData::Image(image) => ObjectInfo::parse(&*image),
            ObjectData::File(file) => ObjectInfo::parse(&*file),
        }
    }

    fn parse<'d, R: ReadRef<'d>>(data: R) -> Option<ObjectInfo> {
        let file = object::File::parse(data).ok()?;
        let mut text_segments = Vec::new();
        let mut segments = Vec::new();
        let mut interpreter = None;
        if let object::File::Elf64(elf) = &file {
            use object::read::elf::ProgramHeader as _;
            let endian = elf.endian();
            for ph in elf.elf_program_headers() {
                if ph.p_type(endian) == object::elf::PT_INTERP {
                    interpreter = ph
                        .data(endian, data)
                        .ok()
                        .and_then(|d| std::ffi::CStr::from_bytes_until_nul(d).ok())
                        .map(|c| c.to_string_lossy().into_owned());
                }
                if ph.p_type(endian) != object::elf::PT_LOAD {
                    continue;
                }
                let (vaddr, memsz, off, filesz) = (
                    ph.p_vaddr(endian),
                    ph.p_memsz(endian),
                    ph.p_offset(endian),
                    ph.p_filesz(endian),
                );
                segments.push((off, off.saturating_add(filesz), vaddr));
                if ph.p_flags(endian) & object::elf::PF_X != 0 {
                    text_segments.push((vaddr, memsz, off));
                }
            }
        } else {
            for s in file.segments() {
                let (off, size) = s.file_range();
                segments.push((off, off.saturating_add(size), s.address()));
            }
        }
        text_segments.sort_unstable();
        let mut text_range: Option<(u64, u64)> = None;
        for s in file.sections() {
            if let object::SectionFlags::Elf { sh_flags } = s.flags()
                && sh_flags & u64::from(object::elf::SHF_EXECINSTR) != 0
            {
                let (lo, hi) = (s.address(), s.address().saturating_add(s.size()));
                text_range = Some(match text_range {
                    Some((a, b)) => (a.min(lo), b.max(hi)),
                    None => (lo, hi),
                });
            }
        }
        let entry = file.entry();
        let position_independent = file.kind() == object::ObjectKind::Dynamic;
        let build_id = DebugRefs::of(&file).build_id;
        Some(ObjectInfo {
            text_segments,
            segments,
            names: None,
            text_range,
            build_id,
            entry,
            interpreter,
            position_independent,
        })
    }

    /// The MAP_IN `start` ([`MapStart::FirstExecutableMapping`]) of this
    /// object loaded `bias` above its link addresses.
    pub(super) fn start_at_bias(&self, bias: u64) -> Option<u64> {
        let (vaddr, _, _) = self.text_segments.first()?;
        Some((vaddr & !(PAGE - 1)).wrapping_add(bias))
    }

    /// The object address of a pc, given the MAP_IN start.
    pub(super) fn object_address(&self, convention: MapStart, start: u64, pc: u64) -> Option<u64> {
        match convention {
            MapStart::FirstExecutableMapping => {
                let (vaddr, _, _) = self.text_segments.first()?;
                let bias = start.wrapping_sub(vaddr & !(PAGE - 1));
                Some(pc.wrapping_sub(bias))
            }
            MapStart::FileOffsetZero => {
                let file_offset = pc.checked_sub(start)?;
                let (off, _, vaddr) = self
                    .segments
                    .iter()
                    .find(|(s, e, _)| file_offset >= *s && file_offset < *e)?;
                Some(file_offset - off + vaddr)
            }
        }
    }

    /// The executable mapping's extent for a bias (runtime - object address).
    pub(super) fn mapping(&self, path: &str, bias: u64) -> Mapping {
        let (lo, hi, off) = match (self.text_segments.first(), self.text_segments.last()) {
            (Some(first), Some(last)) => (
                first.0 & !(PAGE - 1),
                (last.0 + last.1).next_multiple_of(PAGE),
                first.2 & !(PAGE - 1),
            ),
            _ => (0, 0, 0),
        };
        Mapping {
            memory_start: lo.wrapping_add(bias),
            memory_limit: hi.wrapping_add(bias),
            file_offset: off,
            path: path.to_string(),
            build_id: self.build_id.clone(),
            text_range: self.text_range,
        }
    }

    /// The object's names, read the first time they are needed. An object
    /// that is not the one the log sampled ([`Recorded::check`]) gets
    /// none: its names would be another build's.
    pub(super) fn names(
        &mut self,
        path: &str,
        debug: &mut DebugFiles,
        recorded: &Recorded,
        names_only: bool,
    ) -> &Names {
        self.names.get_or_insert_with(|| {
            let logged = debug.logged_path(path).to_string();
            Names::load(path, &logged, debug, names_only, recorded)
        })
    }
}
