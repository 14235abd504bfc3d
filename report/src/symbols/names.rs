//! An object's names, from the first source that has them (issue 19's
//! order), and DWARF's frames at a pc.

use std::sync::Arc;

use object::Object;

use super::debuginfo::{self, DebugFile, DebugFiles, DebugRefs, OwnedDwarf};
use super::functions::{FunctionSymbol, function_at, plt_symbols, raw_symbols, sized_functions};
use super::{Frame, vdso};

/// Where an object's DWARF comes from.
enum Dwarf {
    /// The object's own `.debug_*` sections.
    Own(Box<addr2line::Loader>),
    /// A separate debug file's.
    Separate(Arc<DebugFile>),
}

impl Dwarf {
    fn context(&self) -> Option<&OwnedDwarf> {
        match self {
            Dwarf::Own(_) => None,
            Dwarf::Separate(file) => file.dwarf(),
        }
    }
}

/// An object's names, from the first source that has them.
pub(super) struct Names {
    /// Text symbols and PLT stubs, sorted by address ([`function_symbols`]).
    functions: Vec<FunctionSymbol>,
    dwarf: Option<Dwarf>,
}

impl std::fmt::Debug for Names {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Names")
            .field("functions", &self.functions.len())
            .field("dwarf", &self.dwarf.is_some())
            .finish()
    }
}

impl Names {
    pub(super) fn none() -> Names {
        Names {
            functions: Vec::new(),
            dwarf: None,
        }
    }

    /// Reads the names of the object at `path`, in issue 19's order (first
    /// hit wins): its own `.symtab`, then its DWARF; a separate debug file
    /// (by build id, then `.gnu_debuglink`); MiniDebugInfo; `.dynsym` (and
    /// PLT stubs) last, below every other source at the same address.
    pub(super) fn load(path: &str, debug: &mut DebugFiles) -> Names {
        let Some(data) = vdso::read_object(path) else {
            return Names::none();
        };
        let Ok(file) = object::File::parse(&*data) else {
            return Names::none();
        };
        let mut symbols = raw_symbols(&file, false);
        let own_dwarf = file.section_by_name(".debug_info").is_some() && path != vdso::VDSO;
        let mut dwarf = if own_dwarf {
            addr2line::Loader::new(path)
                .ok()
                .map(|l| Dwarf::Own(Box::new(l)))
        } else {
            None
        };
        if symbols.is_empty() || dwarf.is_none() {
            let refs = DebugRefs::of(&file);
            if let Some(separate) = debug.find(path, &refs) {
                if symbols.is_empty() {
                    symbols.clone_from(&separate.symtab);
                }
                if dwarf.is_none() && separate.has_dwarf {
                    dwarf = Some(Dwarf::Separate(separate));
                }
            }
        }
        if symbols.is_empty() {
            symbols = debuginfo::mini_debuginfo(&file, path, debug);
        }
        symbols.extend(raw_symbols(&file, true));
        symbols.extend(plt_symbols(&file));
        Names {
            functions: sized_functions(symbols),
            dwarf,
        }
    }
}

/// When the file at `path` last changed (its inode's ctime: a replacement
/// by rename, as package managers install, sets it even when the file
/// keeps its packaged mtime).
pub(super) fn changed_at(path: &str) -> Option<std::time::SystemTime> {
    use std::os::unix::fs::MetadataExt as _;
    let m = std::fs::metadata(path).ok()?;
    let secs = u64::try_from(m.ctime()).ok()?;
    let nanos = u32::try_from(m.ctime_nsec()).ok()?;
    std::time::UNIX_EPOCH.checked_add(std::time::Duration::new(secs, nanos))
}

impl Names {
    pub(super) fn symbol_at(&self, addr: u64) -> Option<(u64, &str)> {
        let f = function_at(&self.functions, addr)?;
        Some((f.start, f.name.as_str()))
    }

    /// The frames at `addr`, innermost first; with `names_only` the
    /// symbol's alone (DWARF is not read).
    pub(super) fn frames(&self, addr: u64, symbol: Option<&str>, names_only: bool) -> Vec<Frame> {
        let mut out = Vec::new();
        let dwarf = if names_only {
            None
        } else {
            self.dwarf.as_ref()
        };
        match dwarf {
            Some(Dwarf::Own(loader)) => {
                if let Ok(frames) = loader.find_frames(addr) {
                    collect_frames(frames, symbol, &mut out);
                }
            }
            Some(separate) => {
                if let Some(context) = separate.context()
                    && let Ok(frames) = context.find_frames(addr).skip_all_loads()
                {
                    collect_frames(frames, symbol, &mut out);
                }
            }
            None => {}
        }
        // The real (outermost) function is named by its symbol, as perf
        // names it: DWARF has glibc's internal alias (`__GI___libc_malloc`)
        // where the symbol table has `malloc`. C++ symbols stay mangled in
        // the table, so DWARF's demangled name stays.
        if let (Some(outer), Some(name)) = (out.last_mut(), symbol)
            && !name.starts_with("_Z")
        {
            name.clone_into(&mut outer.function);
        }
        if out.is_empty()
            && let Some(name) = symbol
        {
            out.push(Frame {
                function: name.to_string(),
                file: None,
                line: None,
            });
        }
        out
    }
}

/// DWARF's frames at a pc, innermost first; a frame DWARF leaves unnamed
/// takes the symbol's name.
fn collect_frames<R: addr2line::gimli::Reader>(
    mut frames: addr2line::FrameIter<'_, R>,
    symbol: Option<&str>,
    out: &mut Vec<Frame>,
) {
    while let Ok(Some(f)) = frames.next() {
        let function = f
            .function
            .as_ref()
            .and_then(|n| n.demangle().ok())
            .map(|n| n.into_owned());
        let (file, line) = match &f.location {
            Some(l) => (l.file.map(str::to_string), l.line),
            None => (None, None),
        };
        match (function, symbol) {
            (Some(function), _) => out.push(Frame {
                function,
                file,
                line,
            }),
            (None, Some(name)) => out.push(Frame {
                function: name.to_string(),
                file,
                line,
            }),
            (None, None) => {}
        }
    }
}
