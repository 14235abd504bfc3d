//! An object's names, from the first source that has them (issue 19's
//! order), and DWARF's frames at a pc.

use std::sync::Arc;

use object::{Object, ReadRef};

use super::Frame;
use super::debuginfo::{self, DebugFile, DebugFiles, DebugRefs, OwnedDwarf};
use super::functions::{FunctionRef, FunctionTable, plt_symbols, raw_symbols};
use super::sampled::Recorded;
use super::vdso::{self, ObjectData};

/// Where an object's DWARF comes from.
enum Dwarf {
    /// The object's own `.debug_*` sections.
    Own(Box<OwnedDwarf>),
    /// A separate debug file's.
    Separate(Arc<DebugFile>),
}

impl Dwarf {
    fn context(&self) -> Option<&OwnedDwarf> {
        match self {
            Dwarf::Own(own) => Some(own),
            Dwarf::Separate(file) => file.dwarf(),
        }
    }
}

/// An object's names, from the first source that has them.
pub(super) struct Names {
    /// Text symbols and PLT stubs, sorted by address ([`function_symbols`]).
    functions: FunctionTable,
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
            functions: FunctionTable::default(),
            dwarf: None,
        }
    }

    /// Reads the names of the object at `path`, in issue 19's order (first
    /// hit wins): its own `.symtab`, then its DWARF; a separate debug file
    /// (by build id, then `.gnu_debuglink`); MiniDebugInfo; `.dynsym` (and
    /// PLT stubs) last, below every other source at the same address. With
    /// `names_only` no DWARF is parsed. An object that is not the one the
    /// log sampled ([`Recorded::check`], `logged` the path as the log
    /// names it) gets none.
    pub(super) fn load(
        path: &str,
        logged: &str,
        debug: &mut DebugFiles,
        names_only: bool,
        recorded: &Recorded,
    ) -> Names {
        match vdso::open_object(path, debug) {
            Some(ObjectData::Image(image)) => Names::parse(path, &*image, None, debug, names_only),
            Some(ObjectData::File(file)) => {
                if let Err(why) = recorded.check(logged, &file) {
                    debug.note(format!("{path}: {why}; its frames stay unnamed"));
                    return Names::none();
                }
                let read = |o, n| file.read_range(o, n);
                Names::parse(path, &*file, Some(&read), debug, names_only)
            }
            None => Names::none(),
        }
    }

    /// [`Names::load`] of the object in `data`; `read` copies its file
    /// ranges out for its own DWARF (none for the vDSO).
    fn parse<'d, R: ReadRef<'d>>(
        path: &str,
        data: R,
        read: Option<&dyn Fn(u64, u64) -> Option<Vec<u8>>>,
        debug: &mut DebugFiles,
        names_only: bool,
    ) -> Names {
        let Ok(file) = object::File::parse(data) else {
            return Names::none();
        };
        let mut symbols = raw_symbols(&file, false);
        let own_dwarf = file.section_by_name(".debug_info").is_some();
        let mut dwarf = match read {
            Some(read) if own_dwarf && !names_only => {
                debuginfo::owned_dwarf(&file, read, path, debug).map(|d| Dwarf::Own(Box::new(d)))
            }
            _ => None,
        };
        // An own DWARF not parsed (names only) still counts as found: a
        // separate debug file is not looked for it.
        let dwarf_found = dwarf.is_some() || (own_dwarf && read.is_some() && names_only);
        if symbols.is_empty() || !dwarf_found {
            let refs = DebugRefs::of(&file);
            if let Some(separate) = debug.find(path, &refs) {
                if symbols.is_empty() {
                    symbols.clone_from(&separate.symtab);
                }
                if !dwarf_found && separate.has_dwarf {
                    if !names_only {
                        separate.load_dwarf(path, debug);
                    }
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
            functions: FunctionTable::of(symbols),
            dwarf,
        }
    }
}

impl Names {
    /// The function symbol holding `addr`: its start, end and name.
    pub(super) fn symbol_at(&self, addr: u64) -> Option<FunctionRef<'_>> {
        self.functions.at(addr)
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
        if let Some(context) = dwarf.and_then(Dwarf::context)
            && let Ok(frames) = context.find_frames(addr).skip_all_loads()
        {
            collect_frames(frames, symbol, &mut out);
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
