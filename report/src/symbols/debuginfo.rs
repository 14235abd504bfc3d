//! Symbols where a distribution keeps them: separate debug files found by
//! build id (`/usr/lib/debug/.build-id/ab/cdef….debug`) or by
//! `.gnu_debuglink` (beside the object, in its `.debug/`, under
//! `/usr/lib/debug/<dir>/`), and MiniDebugInfo (`.gnu_debugdata`, an
//! xz-compressed ELF holding a `.symtab`). The lookup order and the checks
//! are GDB's ("Debugging Information in Separate Files") and perf's.
//!
//! A candidate is used only when it proves to be the object's: the same
//! build id where either has one, and the debuglink's CRC-32 where the
//! lookup went by debuglink. Anything else is skipped with a note (pmcstat
//! prints the notes under `-v`), so a wrong file never names a frame.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use object::{Object, ObjectSection, ReadRef};
use pmc_unwind::ObjectFile;

use super::functions::{RawSymbol, raw_symbols};
use super::inflate;

/// Where distributions install separate debug info.
pub const DEBUG_DIR: &str = "/usr/lib/debug";

/// DWARF read from bytes already in memory (a debug file read once).
pub(crate) type OwnedDwarf = addr2line::Context<gimli::EndianArcSlice<gimli::RunTimeEndian>>;

/// What a separate debug file gives: its symbol table and its DWARF. The
/// DWARF is parsed when a report first needs frames (inline frames,
/// file:line), from the file opened again (and proved unchanged); a
/// report of names alone never inflates a distribution's compressed
/// `.debug_*` sections.
pub(crate) struct DebugFile {
    pub(crate) path: PathBuf,
    pub(crate) symtab: Vec<RawSymbol>,
    pub(crate) has_dwarf: bool,
    /// The file as it was read, to reopen it for its DWARF.
    identity: Option<std::fs::Metadata>,
    dwarf: std::cell::OnceCell<Option<OwnedDwarf>>,
}

impl DebugFile {
    /// The DWARF, when [`DebugFile::load_dwarf`] found one.
    pub(crate) fn dwarf(&self) -> Option<&OwnedDwarf> {
        self.dwarf.get()?.as_ref()
    }

    /// Parses the DWARF, once (what was capped or skipped noted in `notes`).
    pub(crate) fn load_dwarf(&self, object: &str, notes: &mut DebugFiles) {
        self.dwarf.get_or_init(|| {
            let identity = self.identity.as_ref()?;
            let file = ObjectFile::open(&self.path).ok()?;
            if !file.is_same_as(identity) {
                notes.note(format!(
                    "{object}: skipped the DWARF of debug file {}: it changed while the report ran",
                    self.path.display()
                ));
                return None;
            }
            let elf = object::File::parse(&file).ok()?;
            let shown = self.path.display().to_string();
            owned_dwarf(&elf, &|o, n| file.read_range(o, n), &shown, notes)
        });
    }
}

impl std::fmt::Debug for DebugFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DebugFile")
            .field("path", &self.path)
            .field("symtab", &self.symtab.len())
            .field("has_dwarf", &self.has_dwarf)
            .finish()
    }
}

/// What an object says about its separate debug info.
#[derive(Debug, Clone, Default)]
pub(crate) struct DebugRefs {
    pub(crate) build_id: Option<String>,
    /// `.gnu_debuglink`: file name and CRC-32 of the debug file.
    pub(crate) debuglink: Option<(String, u32)>,
}

impl DebugRefs {
    pub(crate) fn of<'d, R: ReadRef<'d>>(file: &object::File<'d, R>) -> DebugRefs {
        DebugRefs {
            build_id: file.build_id().ok().flatten().map(hex),
            debuglink: file
                .gnu_debuglink()
                .ok()
                .flatten()
                .map(|(name, crc)| (String::from_utf8_lossy(name).into_owned(), crc)),
        }
    }
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The separate debug files of one report: looked up lazily, each read at
/// most once (cached by build id, else by the object's path).
#[derive(Debug, Default)]
pub struct DebugFiles {
    /// `-r fsroot`: debug directories are looked up under it too.
    root: Option<PathBuf>,
    by_build_id: HashMap<String, Option<Arc<DebugFile>>>,
    by_object: HashMap<String, Option<Arc<DebugFile>>>,
    opened: usize,
    notes: Vec<String>,
}

impl DebugFiles {
    /// Looks up debug directories under `root` (pmcstat's `-r`).
    pub fn under_root(root: Option<PathBuf>) -> DebugFiles {
        DebugFiles {
            root,
            ..DebugFiles::default()
        }
    }

    /// How many candidate debug files were read (each at most once).
    pub fn opened(&self) -> usize {
        self.opened
    }

    /// What was skipped and why, for a verbose report.
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    /// Takes over the notes of `other` (made before the root was known).
    pub(crate) fn keep_notes_of(&mut self, other: DebugFiles) {
        for note in other.notes {
            self.note(note);
        }
    }

    pub(crate) fn note(&mut self, note: String) {
        if !self.notes.contains(&note) {
            self.notes.push(note);
        }
    }

    /// `path` (already under the root) as the log names it: without the
    /// root, when there is one and `path` is under it.
    pub(crate) fn logged_path<'p>(&self, path: &'p str) -> &'p str {
        let Some(root) = self.root.as_ref().and_then(|r| r.to_str()) else {
            return path;
        };
        match path.strip_prefix(root.trim_end_matches('/')) {
            Some(rest) if rest.starts_with('/') => rest,
            _ => path,
        }
    }

    /// `path` (absolute) under the root, when there is one.
    pub(crate) fn rooted(&self, path: &str) -> PathBuf {
        match &self.root {
            Some(root) => root.join(path.trim_start_matches('/')),
            None => PathBuf::from(path),
        }
    }

    fn debug_dir(&self) -> PathBuf {
        match &self.root {
            Some(root) => root.join(DEBUG_DIR.trim_start_matches('/')),
            None => PathBuf::from(DEBUG_DIR),
        }
    }

    /// The separate debug file of the object at `path` (a path already
    /// under the root), when one proves to be its.
    pub(crate) fn find(&mut self, path: &str, refs: &DebugRefs) -> Option<Arc<DebugFile>> {
        if let Some(id) = &refs.build_id
            && let Some(found) = self.by_build_id.get(id)
        {
            return found.clone();
        }
        if refs.build_id.is_none()
            && let Some(found) = self.by_object.get(path)
        {
            return found.clone();
        }
        let found = self.search(path, refs).map(Arc::new);
        match &refs.build_id {
            Some(id) => self.by_build_id.insert(id.clone(), found.clone()),
            None => self.by_object.insert(path.to_string(), found.clone()),
        };
        found
    }

    fn search(&mut self, path: &str, refs: &DebugRefs) -> Option<DebugFile> {
        let mut looked: Vec<PathBuf> = Vec::new();
        if let Some(id) = &refs.build_id
            && id.len() > 2
        {
            let candidate = self
                .debug_dir()
                .join(".build-id")
                .join(&id[..2])
                .join(format!("{}.debug", &id[2..]));
            if let Some(found) = self.try_candidate(path, &candidate, refs, None) {
                return Some(found);
            }
            looked.push(candidate);
        }
        if let Some((name, crc)) = &refs.debuglink {
            let object = Path::new(path);
            let dir = object.parent().unwrap_or(Path::new("/"));
            // The object's directory as the log names it, for
            // /usr/lib/debug/<dir>/ (the root is already in `path`).
            let logged_dir = match &self.root {
                Some(root) => dir.strip_prefix(root).unwrap_or(dir),
                None => dir,
            };
            let candidates = [
                dir.join(name),
                dir.join(".debug").join(name),
                self.debug_dir()
                    .join(logged_dir.strip_prefix("/").unwrap_or(logged_dir))
                    .join(name),
            ];
            for candidate in candidates {
                // A debuglink may name the object's own file name.
                if same_file(&candidate, object) {
                    continue;
                }
                if let Some(found) = self.try_candidate(path, &candidate, refs, Some(*crc)) {
                    return Some(found);
                }
                looked.push(candidate);
            }
        }
        if !looked.is_empty() {
            let looked: Vec<String> = looked.iter().map(|p| p.display().to_string()).collect();
            self.note(format!(
                "{path}: no separate debug info (looked for {})",
                looked.join(", ")
            ));
        }
        None
    }

    /// Reads `candidate` when it exists and keeps it when it is the
    /// object's: same build id, and the debuglink's CRC when `crc` is given.
    fn try_candidate(
        &mut self,
        object: &str,
        candidate: &Path,
        refs: &DebugRefs,
        crc: Option<u32>,
    ) -> Option<DebugFile> {
        let data = match ObjectFile::open(candidate) {
            Ok(d) => d,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
            Err(e) => {
                self.opened += 1;
                self.note(format!(
                    "{object}: skipped debug file {}: {e}",
                    candidate.display()
                ));
                return None;
            }
        };
        self.opened += 1;
        let shown = candidate.display();
        if let Some(want) = crc {
            let mut hasher = crc32fast::Hasher::new();
            if let Err(e) = data.for_each_block(|block| hasher.update(block)) {
                self.note(format!("{object}: skipped debug file {shown}: {e}"));
                return None;
            }
            let got = hasher.finalize();
            if got != want {
                self.note(format!(
                    "{object}: skipped debug file {shown}: CRC-32 {got:08x}, the object's .gnu_debuglink says {want:08x} (a debug file of another build)"
                ));
                return None;
            }
        }
        let file = match object::File::parse(&data) {
            Ok(f) => f,
            Err(e) => {
                self.note(format!(
                    "{object}: skipped debug file {shown}: not a readable ELF file ({e})"
                ));
                return None;
            }
        };
        let theirs = DebugRefs::of(&file).build_id;
        if let (Some(ours), Some(theirs)) = (&refs.build_id, &theirs)
            && ours != theirs
        {
            self.note(format!(
                "{object}: skipped debug file {shown}: its build id {theirs} is not the object's {ours}"
            ));
            return None;
        }
        if refs.build_id.is_some() != theirs.is_some() {
            let which = if theirs.is_some() {
                "the object has none"
            } else {
                "the debug file has none"
            };
            self.note(format!(
                "{object}: skipped debug file {shown}: build ids cannot be compared ({which})"
            ));
            return None;
        }
        let symtab = raw_symbols(&file, false);
        let has_dwarf = file.section_by_name(".debug_info").is_some();
        drop(file);
        if symtab.is_empty() && !has_dwarf {
            self.note(format!(
                "{object}: skipped debug file {shown}: it has neither a symbol table nor DWARF"
            ));
            return None;
        }
        Some(DebugFile {
            path: candidate.to_path_buf(),
            symtab,
            has_dwarf,
            identity: has_dwarf.then(|| data.metadata().clone()),
            dwarf: std::cell::OnceCell::new(),
        })
    }
}

fn same_file(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

/// The DWARF of an ELF object, its sections copied out with `read` (file
/// offset, size → bytes) and inflated within [`inflate::cap`] where
/// compressed, or `None` without `.debug_info`. A section refused or
/// broken is noted (`path` names the object) and left empty.
pub(crate) fn owned_dwarf<'d, R: ReadRef<'d>>(
    file: &object::File<'d, R>,
    read: &dyn Fn(u64, u64) -> Option<Vec<u8>>,
    path: &str,
    notes: &mut DebugFiles,
) -> Option<OwnedDwarf> {
    file.section_by_name(".debug_info")?;
    let endian = if file.is_little_endian() {
        gimli::RunTimeEndian::Little
    } else {
        gimli::RunTimeEndian::Big
    };
    let mut load = |id: gimli::SectionId| -> Result<_, gimli::Error> {
        // Variable locations name no function: not inflated (the largest
        // compressed sections of a distribution's debug file after
        // .debug_info).
        let unused = matches!(
            id,
            gimli::SectionId::DebugLoc | gimli::SectionId::DebugLocLists
        );
        let data: Arc<[u8]> = file
            .section_by_name(id.name())
            .filter(|_| !unused)
            .and_then(|s| section_bytes(&s, read, path, notes))
            .map(Arc::from)
            .unwrap_or_else(|| Arc::from(&[][..]));
        Ok(gimli::EndianArcSlice::new(data, endian))
    };
    let dwarf = gimli::Dwarf::load(&mut load).ok()?;
    addr2line::Context::from_dwarf(dwarf).ok()
}

/// A section's bytes, inflated when compressed and the claim is within
/// the cap; `None` (noted) otherwise.
fn section_bytes<'d, R: ReadRef<'d>>(
    section: &object::Section<'d, '_, R>,
    read: &dyn Fn(u64, u64) -> Option<Vec<u8>>,
    path: &str,
    notes: &mut DebugFiles,
) -> Option<Vec<u8>> {
    let range = section.compressed_file_range().ok()?;
    let name = section.name().unwrap_or("?");
    if range.format == object::CompressionFormat::None {
        return read(range.offset, range.compressed_size);
    }
    if let Some(why) = inflate::refusal(range.compressed_size, range.uncompressed_size) {
        notes.note(format!("{path}: {name} {why}"));
        return None;
    }
    let compressed = read(range.offset, range.compressed_size)?;
    match inflate::inflate(range.format, &compressed, range.uncompressed_size) {
        Ok(bytes) => Some(bytes),
        Err(e) => {
            notes.note(format!("{path}: {name} not inflated: {e}"));
            None
        }
    }
}

/// MiniDebugInfo: the `.symtab` of the xz-compressed ELF in
/// `.gnu_debugdata` (Fedora's stripped objects keep their local function
/// symbols there). A section that does not decompress to an ELF file is
/// noted and ignored.
pub(crate) fn mini_debuginfo<'d, R: ReadRef<'d>>(
    file: &object::File<'d, R>,
    path: &str,
    debug: &mut DebugFiles,
) -> Vec<RawSymbol> {
    let Some(section) = file.section_by_name(".gnu_debugdata") else {
        return Vec::new();
    };
    let Ok(compressed) = section.data() else {
        return Vec::new();
    };
    // xz says no size up front: inflating stops at the cap.
    let limit = inflate::cap(compressed.len() as u64);
    let mut elf = inflate::Bounded {
        out: Vec::new(),
        limit: usize::try_from(limit).unwrap_or(usize::MAX),
    };
    if let Err(e) = lzma_rs::xz_decompress(&mut std::io::Cursor::new(compressed), &mut elf) {
        debug.note(format!(
            "{path}: skipped .gnu_debugdata (MiniDebugInfo): not xz data, or more than the cap ({e})"
        ));
        return Vec::new();
    }
    let elf = elf.out;
    match object::File::parse(&*elf) {
        Ok(inner) => raw_symbols(&inner, false),
        Err(e) => {
            debug.note(format!(
                "{path}: skipped .gnu_debugdata (MiniDebugInfo): not an ELF file ({e})"
            ));
            Vec::new()
        }
    }
}
