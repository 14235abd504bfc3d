//! The symbolizer on ELF objects built here with cc and binutils: names
//! among aliases and labels, unsized symbols, PLT stubs, DWARF frames,
//! mappings and build ids, exec placement (separate debug files, compressed
//! DWARF and MiniDebugInfo: `debug_files.rs`). Expected addresses, sizes and names come from
//! readelf, nm and objdump, not from pmc. Skipped, saying so, without cc.

use std::path::{Path, PathBuf};
use std::process::Command;

use pmc::log::{LogEvent, LogRecord};

use super::ev;
use crate::*;

/// Where the fixture's first text page is mapped in the made-up process.
pub(super) const BIAS: u64 = 0x5555_0000_0000;

/// Two C functions (line 3 and 4) with aliases that perf's rules rank
/// below `pmc_fixture_alpha`, assembly with unsized symbols and labels, a
/// PLT call to libc, one to an IFUNC of its own (an IRELATIVE slot) and
/// two to functions whose address it takes (`.plt.got`), an inlined
/// function, a local function named by a global alias and one with a
/// C++-style symbol (C's DWARF gives it that name too).
pub(super) const SOURCE: &str = r#"#include <stdio.h>
int pmc_fixture_alpha(int x);
__attribute__((noinline)) int pmc_fixture_alpha(int x) { return x * 3 + 1; }
__attribute__((noinline)) int pmc_fixture_beta(int x) { puts("x"); return pmc_fixture_alpha(x) ^ pmc_ifunc_fn(x); }
int pmc_fa(int) __attribute__((alias("pmc_fixture_alpha")));
int pmc_fixture_alpha_weak_and_the_longest_name(int) __attribute__((weak, alias("pmc_fixture_alpha")));
static int pmc_fixture_alpha_local_and_a_long_name(int) __attribute__((alias("pmc_fixture_alpha"), used));
int __pmc_fixture_alpha_underscored_long(int) __attribute__((alias("pmc_fixture_alpha")));
__asm__(".text\n.globl pmc_asm_unsized\n.type pmc_asm_unsized, @function\npmc_asm_unsized:\n nop\n nop\n ret\n"
        ".globl pmc_asm_sized_twin_unsized_and_longer\n.type pmc_asm_sized_twin_unsized_and_longer, @function\n"
        ".globl pmc_asm_sized\n.type pmc_asm_sized, @function\n"
        "pmc_asm_sized_twin_unsized_and_longer:\npmc_asm_sized:\n nop\n ret\n.size pmc_asm_sized, 2\n");
static int pmc_impl(int x) { return x + 1; }
static void *pmc_resolver(void) { return pmc_impl; }
int pmc_ifunc_fn(int) __attribute__((ifunc("pmc_resolver")));
char *getenv(const char *);
long atol(const char *);
__attribute__((noinline)) void *pmc_fn_ptr(int x) { return x ? (void *)getenv : (void *)atol; }
static int pmc_dwarf_name(int x) { return x * 5 + 2; }
int pmc_the_symbols_longer_name(int) __attribute__((alias("pmc_dwarf_name")));
__attribute__((noinline)) int pmc_mangled(int x) __asm__("_Z11pmc_mangledi");
__attribute__((noinline)) int pmc_mangled(int x) { return x - 7; }
static inline __attribute__((always_inline)) int pmc_inlined(int x) { return x * x + (pmc_fn_ptr(x) != 0); }
__attribute__((noinline)) int pmc_inliner(int x) { return pmc_inlined(x) + 1; }
__asm__(".text\n.globl pmc_asm_label\npmc_asm_label:\n nop\n ret\n\"$pmc_mapping\":\n nop\n ret\n"
        ".data\n.globl pmc_data_label\npmc_data_label:\n .long 0\n.text\n");
int main(int argc, char **argv) {
  (void)argv;
  return pmc_fixture_beta(argc) + pmc_inliner(argc) + pmc_mangled(argc) + pmc_the_symbols_longer_name(argc)
      + (getenv("b") != 0) + (int)atol("1");
}
"#;

/// A scratch directory, removed when dropped.
pub(super) struct Dir(PathBuf);

impl Dir {
    pub(super) fn new(name: &str) -> Dir {
        let p = std::env::temp_dir().join(format!("pmc-report-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        Dir(p)
    }

    pub(super) fn join(&self, p: &str) -> PathBuf {
        self.0.join(p)
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Whether cc and binutils are here; says why not.
pub(super) fn have_tools() -> bool {
    for tool in ["cc", "objcopy", "strip", "readelf", "nm", "objdump"] {
        if !Command::new(tool)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
        {
            println!("skipped: no {tool} here to build the ELF fixtures");
            return false;
        }
    }
    true
}

pub(super) fn run(program: &str, args: &[&str]) -> String {
    let out = Command::new(program).args(args).output().unwrap();
    assert!(
        out.status.success(),
        "{program} {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

pub(super) fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Compiles [`SOURCE`] with debug info and a build id, and `flags`.
pub(super) fn compile(dir: &Dir, name: &str, flags: &[&str]) -> PathBuf {
    let c = dir.join("prog.c");
    std::fs::write(&c, SOURCE).unwrap();
    let out = dir.join(name);
    let mut args = vec!["-O1", "-g", "-Wl,--build-id", "-o", s(&out), s(&c)];
    args.splice(0..0, flags.iter().copied());
    run("cc", &args);
    out
}

/// `readelf -sW`'s FUNC symbols: name → (value, size).
pub(super) fn symbol(object: &Path, name: &str) -> (u64, u64) {
    run("readelf", &["-sW", s(object)])
        .lines()
        .find_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() == 8 && f[7] == name).then(|| {
                (
                    u64::from_str_radix(f[1], 16).unwrap(),
                    f[2].parse::<u64>().unwrap(),
                )
            })
        })
        .unwrap_or_else(|| panic!("readelf -s: no {name}"))
}

/// `readelf -SW`: (name, address, size, executable) of each section.
pub(super) fn sections(object: &Path) -> Vec<(String, u64, u64, bool)> {
    run("readelf", &["-SW", s(object)])
        .lines()
        .filter_map(|l| {
            let (_, rest) = l.split_once("] ")?;
            let f: Vec<&str> = rest.split_whitespace().collect();
            let addr = u64::from_str_radix(f.get(2)?, 16).ok()?;
            let size = u64::from_str_radix(f.get(4)?, 16).ok()?;
            let exec = f.get(6).is_some_and(|flags| flags.contains('X'));
            Some((f[0].to_string(), addr, size, exec))
        })
        .collect()
}

pub(super) fn section(object: &Path, name: &str) -> (u64, u64) {
    let (_, a, n, _) = sections(object)
        .into_iter()
        .find(|(s, ..)| s == name)
        .unwrap();
    (a, n)
}

/// `readelf -lW`'s executable PT_LOADs: (offset, vaddr, filesz, memsz).
pub(super) fn text_segments(object: &Path) -> Vec<(u64, u64, u64, u64)> {
    let hex = |w: &str| u64::from_str_radix(w.trim_start_matches("0x"), 16).unwrap();
    run("readelf", &["-lW", s(object)])
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.first() == Some(&"LOAD") && f[6..f.len() - 1].iter().any(|w| w.contains('E')))
                .then(|| (hex(f[1]), hex(f[2]), hex(f[4]), hex(f[5])))
        })
        .collect()
}

pub(super) fn build_id(object: &Path) -> String {
    run("readelf", &["-n", s(object)])
        .lines()
        .find_map(|l| l.trim().strip_prefix("Build ID: ").map(str::to_string))
        .unwrap()
}

/// The pc of link address `addr` with the first text page at [`BIAS`].
pub(super) fn pc(object: &Path, addr: u64) -> u64 {
    addr - (text_segments(object)[0].1 & !0xfff) + BIAS
}

pub(super) fn log(pid: u32, path: &Path) -> Vec<LogEvent> {
    vec![ev(LogRecord::MapIn {
        pid,
        start: BIAS,
        path: s(path).into(),
    })]
}

#[test]
fn a_programs_pcs_name_its_functions_with_its_mapping_and_build_id() {
    if !have_tools() {
        return;
    }
    let dir = Dir::new("mapping");
    let prog = compile(&dir, "prog", &[]);
    let mut sym = Symbolizer::new(&log(1101, &prog));
    let (alpha, alpha_size) = symbol(&prog, "pmc_fixture_alpha");
    let r = sym.resolve(1101, pc(&prog, alpha + 1));
    let outer = r.frames.last().unwrap();
    assert_eq!(outer.function, "pmc_fixture_alpha", "{r:?}");
    assert!(outer.file.as_deref().unwrap().ends_with("prog.c"), "{r:?}");
    assert_eq!(outer.line, Some(3));
    assert_eq!(r.object_address, Some(alpha + 1));
    assert_eq!(
        (r.symbol_start, r.symbol_end),
        (Some(alpha), Some(alpha + alpha_size))
    );
    let texts = text_segments(&prog);
    let (first, last) = (texts[0], texts[texts.len() - 1]);
    let exec: Vec<(u64, u64)> = sections(&prog)
        .into_iter()
        .filter(|(.., x)| *x)
        .map(|(_, a, n, _)| (a, a + n))
        .collect();
    let text_range = (
        exec.iter().map(|e| e.0).min().unwrap(),
        exec.iter().map(|e| e.1).max().unwrap(),
    );
    let m = r.mapping.as_deref().unwrap();
    assert_eq!(
        m,
        &Mapping {
            memory_start: BIAS,
            memory_limit: BIAS + (last.1 + last.3).next_multiple_of(0x1000) - (first.1 & !0xfff),
            file_offset: first.0 & !0xfff,
            path: s(&prog).into(),
            build_id: Some(build_id(&prog)),
            text_range: Some(text_range),
        }
    );
    assert_eq!(sym.text_range(s(&prog)), Some(text_range));
    let (beta, _) = symbol(&prog, "pmc_fixture_beta");
    let r = sym.resolve(1101, pc(&prog, beta + 1));
    assert_eq!(r.frames.last().unwrap().function, "pmc_fixture_beta");
    assert_eq!(r.frames.last().unwrap().line, Some(4));
    // The object's names were read once, and say so.
    assert!(
        format!("{sym:?}").contains("ObjectInfo { names: Some(Names { functions: "),
        "{sym:?}"
    );
}

/// perf's choice among aliases: sized over unsized, not weak over weak,
/// global over local, fewer leading underscores, then the longer name.
/// An unsized symbol reaches the next function or its section's end.
#[test]
fn aliases_are_ranked_as_perf_ranks_them_and_unsized_symbols_end_early() {
    if !have_tools() {
        return;
    }
    let dir = Dir::new("aliases");
    let prog = compile(&dir, "prog", &[]);
    let data = std::fs::read(&prog).unwrap();
    let functions = function_symbols(&object::File::parse(&*data).unwrap());
    let at = |addr: u64| function_at(&functions, addr).unwrap();
    let (alpha, size) = symbol(&prog, "pmc_fixture_alpha");
    assert_eq!(
        at(alpha),
        &FunctionSymbol {
            start: alpha,
            end: alpha + size,
            name: "pmc_fixture_alpha".into()
        }
    );
    let (sized, sized_size) = symbol(&prog, "pmc_asm_sized");
    assert_eq!(sized_size, 2);
    assert_eq!(
        at(sized),
        &FunctionSymbol {
            start: sized,
            end: sized + 2,
            name: "pmc_asm_sized".into()
        }
    );
    let (bare, zero) = symbol(&prog, "pmc_asm_unsized");
    assert_eq!(zero, 0);
    assert_eq!(
        at(bare),
        &FunctionSymbol {
            start: bare,
            end: sized,
            name: "pmc_asm_unsized".into()
        }
    );
    // crti's `_init` has no size: it ends with `.init`.
    let (init, zero) = symbol(&prog, "_init");
    assert_eq!(zero, 0);
    let (init_start, init_size) = section(&prog, ".init");
    assert_eq!(init, init_start);
    assert_eq!(at(init).end, init_start + init_size, "{:?}", at(init));
    assert!(function_at(&functions, init_start + init_size).is_none_or(|f| f.name != "_init"));
}

/// Every `name@plt` objdump prints, at its address, and no other: lazy
/// `.plt`, IBT's `.plt.sec`, `.plt.got`, IRELATIVE slots, a fixed-address
/// program.
#[test]
fn plt_stubs_are_named_as_objdump_names_them() {
    if !have_tools() || !cfg!(target_arch = "x86_64") {
        return;
    }
    let dir = Dir::new("plt");
    // Fixed-address code without PIC takes a function's address as its
    // PLT stub's: the undefined symbol has the stub's address as value.
    let variants: [(&str, &[&str]); 5] = [
        ("pie", &[]),
        ("ibt", &["-fcf-protection=full", "-Wl,-z,ibtplt"]),
        ("fixed", &["-no-pie"]),
        ("fixed-nopic", &["-fno-pic", "-no-pie"]),
        ("now", &["-Wl,-z,now"]),
    ];
    for (name, flags) in variants {
        let prog = compile(&dir, name, flags);
        let mut want: Vec<(u64, String)> = run("objdump", &["-d", s(&prog)])
            .lines()
            .filter_map(|l| {
                let (addr, label) = l.strip_suffix(">:")?.split_once(" <")?;
                label
                    .ends_with("@plt")
                    .then(|| (u64::from_str_radix(addr, 16).unwrap(), label.to_string()))
            })
            .collect();
        want.sort();
        let data = std::fs::read(&prog).unwrap();
        let got: Vec<(u64, String)> = function_symbols(&object::File::parse(&*data).unwrap())
            .into_iter()
            .filter(|f| f.name.ends_with("@plt"))
            .map(|f| (f.start, f.name))
            .collect();
        assert!(want.len() >= 2, "{name}: {want:x?}");
        assert_eq!(got, want, "{name}");
    }
}

/// A legacy log's MAP_IN start is where file offset 0 is: a pc at a file
/// offset no PT_LOAD holds is nobody's.
#[test]
fn a_legacy_pc_past_the_text_segments_file_bytes_is_nobodys() {
    if !have_tools() {
        return;
    }
    let dir = Dir::new("legacy");
    let prog = compile(&dir, "prog", &[]);
    let (off, vaddr, filesz, _) = text_segments(&prog)[0];
    let base = 0x7700_0000_0000u64;
    let events = vec![
        ev(LogRecord::Initialize {
            version: symbols::LEGACY_PMC_LOG_VERSION,
            arch: 0,
            tsc_freq: 0,
            time_sec: 0,
            time_nsec: 0,
            cpuid: String::new(),
            marked: false,
        }),
        ev(LogRecord::MapIn {
            pid: 1111,
            start: base,
            path: s(&prog).into(),
        }),
    ];
    let mut sym = Symbolizer::new(&events);
    let (alpha, _) = symbol(&prog, "pmc_fixture_alpha");
    assert_eq!(
        sym.name(1111, base + off + (alpha - vaddr)),
        "pmc_fixture_alpha"
    );
    let end = base + off + filesz;
    assert!(
        section(&prog, ".fini").0 + section(&prog, ".fini").1 == vaddr + filesz,
        "the text segment ends with .fini"
    );
    assert_eq!(sym.name(1111, end - 1), "_fini");
    assert_eq!(sym.name(1111, end), format!("{end:#x}"));
}

/// A PIE linked at 0 that PROCEXEC leaves at 0 (no `pl_dyn`): the log did
/// not say where it was, so its pcs are nobody's; a fixed-address program
/// is at its link address.
#[test]
fn an_exec_places_a_fixed_program_but_not_a_pie_it_does_not_locate() {
    if !have_tools() {
        return;
    }
    let dir = Dir::new("exec");
    // ld makes a PIE with a text-segment address ET_EXEC; a shared object
    // (ET_DYN, position-independent too) keeps it.
    let pie_above_0 = ["-shared", "-fPIC", "-Wl,-Ttext-segment=0x10000000"];
    for (name, flags, placed) in [
        ("pie", &[][..], false),
        ("fixed", &["-no-pie"][..], true),
        ("pie-above-0", &pie_above_0[..], true),
    ] {
        let prog = compile(&dir, name, flags);
        let events = vec![
            ev(LogRecord::Initialize {
                version: pmc::log::PMC_VERSION,
                arch: 0,
                tsc_freq: 0,
                time_sec: 0,
                time_nsec: 0,
                cpuid: String::new(),
                marked: false,
            }),
            ev(LogRecord::ProcExec {
                pid: 1121,
                pmcid: 1,
                entry: 0,
                dynaddr: 0,
                path: s(&prog).into(),
            }),
        ];
        let (alpha, _) = symbol(&prog, "pmc_fixture_alpha");
        let name_at = Symbolizer::new(&events).name(1121, alpha + 1);
        let want = if placed {
            "pmc_fixture_alpha".to_string()
        } else {
            format!("{:#x}", alpha + 1)
        };
        assert_eq!(name_at, want, "{name}");
        // No `pl_base`: the run-time linker is not placed.
        let Some(interp) = run("readelf", &["-lW", s(&prog)]).lines().find_map(|l| {
            l.trim()
                .strip_prefix("[Requesting program interpreter: ")?
                .strip_suffix(']')
                .map(str::to_string)
        }) else {
            continue;
        };
        let rtld = std::fs::read(&interp).unwrap();
        let entry = {
            use object::Object as _;
            object::File::parse(&*rtld).unwrap().entry()
        };
        let at_entry = Symbolizer::new(&events).name(1121, entry);
        assert_eq!(at_entry, format!("{entry:#x}"), "{name}");
    }
}

/// Without a recorded build id, an object modified after the log's last
/// write is another build; modified at that very time, it is the one.
#[test]
fn an_object_modified_after_the_log_stays_unnamed_one_modified_at_its_end_does_not() {
    if !have_tools() {
        return;
    }
    let dir = Dir::new("mtime");
    let prog = compile(&dir, "prog", &[]);
    let modified = std::fs::metadata(&prog).unwrap().modified().unwrap();
    let (a, _) = symbol(&prog, "pmc_fixture_alpha");
    let name = |until| {
        Symbolizer::new(&log(1301, &prog))
            .with_recorded_until(Some(until))
            .name(1301, pc(&prog, a))
    };
    assert_eq!(name(modified), "pmc_fixture_alpha");
    assert_eq!(
        name(modified - std::time::Duration::from_secs(1)),
        format!("prog+{a:#x}")
    );
}

/// A label (no type) in text is a function to perf; a `$` mapping symbol
/// and a label in data are not.
#[test]
fn labels_in_text_are_functions_mapping_symbols_and_data_labels_are_not() {
    if !have_tools() {
        return;
    }
    let dir = Dir::new("labels");
    let prog = compile(&dir, "prog", &[]);
    let data = std::fs::read(&prog).unwrap();
    let functions = function_symbols(&object::File::parse(&*data).unwrap());
    let (label, _) = symbol(&prog, "pmc_asm_label");
    let (mapping, _) = symbol(&prog, "$pmc_mapping");
    assert_eq!(mapping, label + 2);
    let f = function_at(&functions, mapping).unwrap();
    assert_eq!((f.start, f.name.as_str()), (label, "pmc_asm_label"));
    assert!(f.end > mapping, "{f:?}");
    for absent in ["$pmc_mapping", "pmc_data_label"] {
        assert!(functions.iter().all(|f| f.name != absent), "{absent}");
    }
}

/// DWARF's frames at each pc of a function with an inlined callee are
/// addr2line's, innermost first; the outermost is named by the symbol
/// table (a global alias over DWARF's local name).
#[test]
fn dwarf_frames_are_addr2lines_and_the_outermost_is_the_symbols() {
    if !have_tools() {
        return;
    }
    let dir = Dir::new("frames");
    let prog = compile(&dir, "prog", &[]);
    let mut sym = Symbolizer::new(&log(1501, &prog));
    let (start, size) = symbol(&prog, "pmc_inliner");
    let addrs: Vec<String> = (start..start + size).map(|a| format!("{a:#x}")).collect();
    let mut args = vec!["-a", "-i", "-f", "-e", s(&prog)];
    args.extend(addrs.iter().map(String::as_str));
    let out = run("addr2line", &args);
    let mut theirs: Vec<Vec<String>> = Vec::new();
    let mut lines = out.lines();
    while let Some(l) = lines.next() {
        if l.starts_with("0x") {
            theirs.push(Vec::new());
        } else {
            theirs.last_mut().unwrap().push(l.to_string());
            lines.next();
        }
    }
    assert_eq!(theirs.len(), size as usize);
    let mut inlined = 0;
    for (a, want) in (start..start + size).zip(theirs) {
        let r = sym.resolve(1501, pc(&prog, a));
        let ours: Vec<&str> = r.frames.iter().map(|f| f.function.as_str()).collect();
        assert_eq!(ours, want, "{a:#x}");
        inlined += usize::from(ours == ["pmc_inlined", "pmc_inliner"]);
    }
    assert!(inlined > 0, "no pc of pmc_inlined in pmc_inliner");
    let outer_at = |sym: &mut Symbolizer, name: &str| {
        let (a, _) = symbol(&prog, name);
        let r = sym.resolve(1501, pc(&prog, a));
        let f = r.frames.last().unwrap();
        (f.function.clone(), f.line)
    };
    assert_eq!(
        outer_at(&mut sym, "pmc_the_symbols_longer_name"),
        ("pmc_the_symbols_longer_name".into(), Some(19))
    );
}
