//! The functions of an ELF object from its symbol tables: sized, unsized
//! ones ended by their neighbours or their section, and x86-64 PLT stubs.

use std::collections::HashMap;

use object::{Object, ObjectSection, ReadRef};

fn demangle(name: &str) -> String {
    format!("{:#}", rustc_demangle::demangle(name))
}

/// A function of an ELF object: its link-time `[start, end)` and demangled
/// name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FunctionSymbol {
    /// Link-time address of its first byte.
    pub start: u64,
    /// Link-time address past its last byte.
    pub end: u64,
    /// Demangled name; `name@plt` for a PLT stub.
    pub name: String,
}

/// The functions of an object, sorted by start: its text symbols (static
/// and dynamic, one per address) and, on x86-64, `name@plt` for each PLT
/// stub as binutils' objdump names them.
///
/// A sized symbol covers `size` bytes. An unsized one (assembly such as
/// crti's `_init` and `_fini`) reaches the next function or the end of its
/// section, whichever comes first, so that a pc in a stub section after
/// it (lld puts `.plt` after `.fini`) is not taken for it.
pub fn function_symbols<'d, R: ReadRef<'d>>(file: &object::File<'d, R>) -> Vec<FunctionSymbol> {
    let mut raw = raw_symbols(file, false);
    raw.extend(raw_symbols(file, true));
    raw.extend(plt_symbols(file));
    sized_functions(raw)
}

/// The PLT stubs as symbols of the last tier.
pub(super) fn plt_symbols<'d, R: ReadRef<'d>>(
    file: &object::File<'d, R>,
) -> impl Iterator<Item = RawSymbol> + use<R> {
    plt_stubs(file).into_iter().map(|(start, name)| RawSymbol {
        start,
        size: PLT_ENTRY,
        section_end: start + PLT_ENTRY,
        tier: Tier::Plt,
        alias: AliasRank::default(),
        name,
    })
}

/// Where a symbol comes from, best first: at one address a better
/// source's name wins.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Tier {
    /// `.symtab`: the object's own, a debug file's or MiniDebugInfo's.
    Symtab,
    Dynsym,
    Plt,
}

/// Among aliases of one source at one address, perf's choice
/// (`choose_best_symbol`, tools/perf/util/symbol.c): sized over unsized,
/// not weak over weak, global over local, fewer leading underscores, the
/// longer name; smaller is better. So glibc's `malloc` is `malloc`, not
/// `__GI___libc_malloc`, as `perf report` names it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct AliasRank {
    without_size: bool,
    weak: bool,
    local: bool,
    underscores: usize,
    shorter: std::cmp::Reverse<usize>,
}

/// A text symbol as its table gives it.
#[derive(Debug, Clone)]
pub(crate) struct RawSymbol {
    pub(super) start: u64,
    /// 0 for an unsized symbol.
    pub(super) size: u64,
    /// End of the symbol's section: an unsized symbol ends there at most.
    pub(super) section_end: u64,
    pub(super) tier: Tier,
    pub(super) alias: AliasRank,
    /// Demangled.
    pub(super) name: String,
}

/// The text symbols of `.symtab`, or with `dynamic` of `.dynsym`.
pub(crate) fn raw_symbols<'d, R: ReadRef<'d>>(
    file: &object::File<'d, R>,
    dynamic: bool,
) -> Vec<RawSymbol> {
    use object::ObjectSymbol as _;
    let section_end = |index: Option<object::SectionIndex>| {
        let section = file.section_by_index(index?).ok()?;
        Some(section.address() + section.size())
    };
    let symbols = if dynamic {
        file.dynamic_symbols()
    } else {
        file.symbols()
    };
    // A label (STT_NOTYPE: assembly's `_start` in ld.so, say) in an
    // executable section is a function to perf too (`elf_sym__is_label`);
    // ARM's `$x`/`$d` mapping symbols are not. A separate debug file's
    // `.text` is NOBITS, so its flags decide, not its kind.
    let executable = |index: Option<object::SectionIndex>| {
        index
            .and_then(|i| file.section_by_index(i).ok())
            .is_some_and(|section| match section.flags() {
                object::SectionFlags::Elf { sh_flags } => {
                    sh_flags & u64::from(object::elf::SHF_EXECINSTR) != 0
                }
                _ => false,
            })
    };
    // An undefined function's value, when it has one, is its canonical
    // address in a fixed-address executable: its PLT stub (python3's
    // `acos`), which the stub's own name describes (perf skips SHN_UNDEF).
    symbols
        .filter(|s| s.address() != 0 && !s.is_undefined())
        .filter(|s| match s.kind() {
            object::SymbolKind::Text => true,
            object::SymbolKind::Unknown => {
                executable(s.section_index()) && !s.name().is_ok_and(|n| n.starts_with('$'))
            }
            _ => false,
        })
        .filter_map(|s| {
            let name = s.name().ok().filter(|n| !n.is_empty())?;
            Some(RawSymbol {
                start: s.address(),
                size: s.size(),
                section_end: section_end(s.section_index()).unwrap_or(s.address()),
                tier: if dynamic { Tier::Dynsym } else { Tier::Symtab },
                alias: AliasRank {
                    without_size: s.size() == 0,
                    weak: s.is_weak(),
                    local: s.is_local(),
                    underscores: name.len() - name.trim_start_matches('_').len(),
                    shorter: std::cmp::Reverse(name.len()),
                },
                name: demangle(name),
            })
        })
        .collect()
}

/// Functions from symbols: at one address the best [`Tier`]'s best
/// [`AliasRank`] wins (then the first listed); an unsized symbol reaches
/// the next function or its section's end, whichever comes first.
pub(super) fn sized_functions(raw: Vec<RawSymbol>) -> Vec<FunctionSymbol> {
    sized(raw)
        .map(|(start, end, name)| FunctionSymbol { start, end, name })
        .collect()
}

/// [`sized_functions`] as (start, end, name), sorted by start.
fn sized(mut raw: Vec<RawSymbol>) -> impl ExactSizeIterator<Item = (u64, u64, String)> {
    // Stable: among equals the first listed stays first.
    raw.sort_by_key(|f| (f.start, f.tier, f.alias));
    raw.dedup_by_key(|f| f.start);
    let ends: Vec<u64> = raw
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let end = match (f.size, raw.get(i + 1)) {
                (0, Some(next)) => next.start.min(f.section_end),
                (0, None) => f.section_end,
                _ => f.start.saturating_add(f.size),
            };
            end.max(f.start)
        })
        .collect();
    raw.into_iter()
        .zip(ends)
        .map(|(f, end)| (f.start, end, f.name))
}

/// An object's functions as [`sized_functions`] gives them, their names
/// end to end in one string: an object's table lives as long as the
/// report, and a String apiece would cost an allocation per symbol.
#[derive(Debug, Default)]
pub(crate) struct FunctionTable {
    /// (start, end, where the name ends in `names`), sorted by start; a
    /// name begins where the one before it ends.
    functions: Vec<(u64, u64, u32)>,
    names: String,
}

/// A function of a [`FunctionTable`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct FunctionRef<'a> {
    pub(crate) start: u64,
    pub(crate) end: u64,
    pub(crate) name: &'a str,
}

impl FunctionTable {
    /// The functions of `raw` ([`sized_functions`]).
    pub(crate) fn of(raw: Vec<RawSymbol>) -> FunctionTable {
        let sized = sized(raw);
        let mut functions = Vec::with_capacity(sized.len());
        let mut names = String::new();
        for (start, end, name) in sized {
            names.push_str(&name);
            // Past 4 GiB of names the rest go unnamed (no object has that).
            let Ok(name_end) = u32::try_from(names.len()) else {
                names.truncate(names.len() - name.len());
                break;
            };
            functions.push((start, end, name_end));
        }
        names.shrink_to_fit();
        FunctionTable { functions, names }
    }

    /// How many functions it holds.
    pub(crate) fn len(&self) -> usize {
        self.functions.len()
    }

    /// The function that covers `addr` ([`function_at`]).
    pub(crate) fn at(&self, addr: u64) -> Option<FunctionRef<'_>> {
        let i = self.functions.partition_point(|f| f.0 <= addr);
        let i = i.checked_sub(1)?;
        let (start, end, name_end) = self.functions[i];
        let name_start = match i {
            0 => 0,
            _ => self.functions[i - 1].2,
        };
        (addr < end).then(|| FunctionRef {
            start,
            end,
            name: &self.names[name_start as usize..name_end as usize],
        })
    }
}

/// The function of `functions` (sorted by start) that covers `addr`.
pub fn function_at(functions: &[FunctionSymbol], addr: u64) -> Option<&FunctionSymbol> {
    let i = functions.partition_point(|f| f.start <= addr);
    let f = functions.get(i.checked_sub(1)?)?;
    (addr < f.end).then_some(f)
}

/// Bytes of one x86-64 PLT entry, and of `.plt`'s first (resolver) entry.
pub(super) const PLT_ENTRY: u64 = 16;

/// `(address, "name@plt")` of an x86-64 object's PLT stubs, named as
/// objdump names them: each stub's `jmp *disp32(%rip)` reads a GOT slot,
/// and the relocation of that slot names it — in `.rela.plt`, `name@plt`
/// for a JUMP_SLOT and `*ABS*+0xADDEND@plt` for an IRELATIVE one (glibc's
/// calls to its own IFUNCs; perf prints those as `@plt`); in `.rela.dyn`,
/// `name@plt` for the GLOB_DAT slot of a `.plt.got` stub (a function whose
/// address the object also takes: libc's `malloc`, a PIE's
/// `__cxa_finalize`). The stubs callers use are `.plt.sec`'s with IBT, else
/// `.plt`'s after its resolver entry, and `.plt.got`'s; the relocations
/// are not in stub order (glibc puts its IRELATIVE ones last), so only the
/// slot ties a stub to its name. A stub whose jump cannot be read stays
/// unnamed.
pub(super) fn plt_stubs<'d, R: ReadRef<'d>>(file: &object::File<'d, R>) -> Vec<(u64, String)> {
    if file.architecture() != object::Architecture::X86_64 || !file.is_little_endian() {
        return Vec::new();
    }
    let mut slots = relocated_slots(file, ".rela.plt", &[R_X86_64_JUMP_SLOT, R_X86_64_IRELATIVE]);
    slots.extend(relocated_slots(file, ".rela.dyn", &[R_X86_64_GLOB_DAT]));
    let mut stubs = match (
        file.section_by_name(".plt.sec"),
        file.section_by_name(".plt"),
    ) {
        (Some(sec), _) => section_stubs(&sec, 0, PLT_ENTRY, &slots),
        (None, Some(plt)) => section_stubs(&plt, PLT_ENTRY, PLT_ENTRY, &slots),
        _ => Vec::new(),
    };
    if let Some(got) = file.section_by_name(".plt.got") {
        // `jmp *disp32(%rip)` and a 2-byte nop; with IBT an endbr64 first
        // and 16 bytes an entry.
        let entry = match got.data() {
            Ok(bytes) if bytes.starts_with(&ENDBR64) => PLT_ENTRY,
            _ => PLT_GOT_ENTRY,
        };
        stubs.extend(section_stubs(&got, 0, entry, &slots));
    }
    stubs
}

/// The stubs of one PLT section, `entry` bytes each from `first` on, that
/// jump through a slot of `slots`.
fn section_stubs<'d, R: ReadRef<'d>>(
    section: &object::Section<'d, '_, R>,
    first: u64,
    entry: u64,
    slots: &HashMap<u64, String>,
) -> Vec<(u64, String)> {
    let (base, Ok(bytes)) = (section.address(), section.data()) else {
        return Vec::new();
    };
    (base + first..base + section.size())
        .step_by(entry as usize)
        .filter_map(|stub| {
            let at = usize::try_from(stub - base).ok()?;
            let bytes = bytes.get(at..at + entry as usize)?;
            let slot = stub.wrapping_add_signed(got_jump(bytes)?);
            Some((stub, slots.get(&slot)?.clone()))
        })
        .collect()
}

/// GOT slot → stub name, for the relocations of `section` of the `kinds`
/// given.
fn relocated_slots<'d, R: ReadRef<'d>>(
    file: &object::File<'d, R>,
    section: &str,
    kinds: &[u64],
) -> HashMap<u64, String> {
    use object::ObjectSymbol as _;
    use object::ObjectSymbolTable as _;
    let (Some(rela), Some(dynsym)) = (file.section_by_name(section), file.dynamic_symbol_table())
    else {
        return HashMap::new();
    };
    let Ok(data) = rela.data() else {
        return HashMap::new();
    };
    // Elf64_Rela: r_offset, r_info (symbol << 32 | type), r_addend.
    data.chunks_exact(24)
        .filter_map(|r| {
            let offset = u64::from_le_bytes(r[0..8].try_into().ok()?);
            let info = u64::from_le_bytes(r[8..16].try_into().ok()?);
            let addend = i64::from_le_bytes(r[16..24].try_into().ok()?);
            let kind = info & 0xffff_ffff;
            if !kinds.contains(&kind) {
                return None;
            }
            let name = match (info >> 32, kind) {
                (0, R_X86_64_IRELATIVE) => format!("*ABS*+{addend:#x}@plt"),
                (index, _) => {
                    let symbol = dynsym
                        .symbol_by_index(object::SymbolIndex(index as usize))
                        .ok()?;
                    let name = symbol.name().ok().filter(|n| !n.is_empty())?;
                    format!("{}@plt", demangle(name))
                }
            };
            Some((offset, name))
        })
        .collect()
}

/// Bytes of one `.plt.got` entry without IBT.
const PLT_GOT_ENTRY: u64 = 8;

/// `endbr64`, which starts every PLT entry of an object built with IBT.
const ENDBR64: [u8; 4] = [0xf3, 0x0f, 0x1e, 0xfa];

/// `R_X86_64_GLOB_DAT` and `R_X86_64_JUMP_SLOT` (elf.h): the slot gets the
/// symbol's address, at load time or at the first call.
const R_X86_64_GLOB_DAT: u64 = 6;
const R_X86_64_JUMP_SLOT: u64 = 7;

/// `R_X86_64_IRELATIVE` (elf.h): the slot gets what the resolver at the
/// addend returns.
const R_X86_64_IRELATIVE: u64 = 37;

/// Where a PLT entry's `jmp *disp32(%rip)` reads, relative to the entry:
/// `ff 25` at its start, after a `bnd` prefix (`f2`), after an `endbr64`
/// (`f3 0f 1e fa`), or both.
fn got_jump(entry: &[u8]) -> Option<i64> {
    let at = if entry.starts_with(&ENDBR64) { 4 } else { 0 };
    let at = if entry.get(at) == Some(&0xf2) {
        at + 1
    } else {
        at
    };
    if entry.get(at..at + 2)? != [0xff, 0x25] {
        return None;
    }
    let disp = i32::from_le_bytes(entry.get(at + 2..at + 6)?.try_into().ok()?);
    Some(at as i64 + 6 + i64::from(disp))
}

#[cfg(test)]
mod tests {
    use super::{
        AliasRank, FunctionTable, RawSymbol, Tier, function_at, got_jump, sized_functions,
    };

    /// The one-string table names every address as the list of
    /// [`sized_functions`] does: each name cut at its own bounds, gaps and
    /// ends alike.
    #[test]
    fn the_function_table_names_each_address_as_the_list_does() {
        let raw = |start: u64, size: u64, name: &str| RawSymbol {
            start,
            size,
            section_end: 0x100,
            tier: Tier::Symtab,
            alias: AliasRank::default(),
            name: name.to_string(),
        };
        let symbols = vec![
            raw(0x40, 0x10, "beta"),
            raw(0x10, 0x8, "alpha"),
            raw(0x60, 0, "gamma_unsized"),
            raw(0x40, 0x10, "beta_alias"),
        ];
        let list = sized_functions(symbols.clone());
        let table = FunctionTable::of(symbols);
        assert_eq!(table.len(), 3);
        for addr in 0..0x110 {
            let ours = table.at(addr).map(|f| (f.start, f.end, f.name));
            let theirs = function_at(&list, addr).map(|f| (f.start, f.end, f.name.as_str()));
            assert_eq!(ours, theirs, "at {addr:#x}");
        }
        assert_eq!(table.at(0x68).map(|f| f.name), Some("gamma_unsized"));
    }

    /// The four forms of an x86-64 PLT entry's jump (as binutils' and
    /// lld's PLTs write them): the slot is read relative to the end of the
    /// `jmp *disp32(%rip)`.
    #[test]
    fn a_plt_entrys_jump_is_found_after_endbr64_and_bnd() {
        let disp = 0x2fe2_i32.to_le_bytes();
        let jmp = |prefix: &[u8]| [prefix, &[0xff, 0x25], &disp[..], &[0x90; 4]].concat();
        assert_eq!(got_jump(&jmp(&[])), Some(6 + 0x2fe2));
        assert_eq!(got_jump(&jmp(&[0xf2])), Some(7 + 0x2fe2));
        assert_eq!(got_jump(&jmp(&[0xf3, 0x0f, 0x1e, 0xfa])), Some(10 + 0x2fe2));
        assert_eq!(
            got_jump(&jmp(&[0xf3, 0x0f, 0x1e, 0xfa, 0xf2])),
            Some(11 + 0x2fe2)
        );
        // The resolver entry (`push; jmp *`) and a short entry are not stubs.
        assert_eq!(got_jump(&[0xff, 0x35, 0, 0, 0, 0, 0xff, 0x25]), None);
        assert_eq!(got_jump(&[0xff, 0x25, 0, 0]), None);
    }
}
