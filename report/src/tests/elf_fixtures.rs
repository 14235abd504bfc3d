//! The symbolizer on ELF objects built here with cc and binutils: names
//! among aliases, unsized symbols, PLT stubs, mappings and build ids,
//! separate debug files (by build id and by debuglink, with their checks)
//! and compressed DWARF. Expected addresses, sizes and names come from
//! readelf, nm and objdump, not from pmc. Skipped, saying so, without cc.

use std::path::{Path, PathBuf};
use std::process::Command;

use pmc::log::{LogEvent, LogRecord};

use super::ev;
use crate::*;

/// Where the fixture's first text page is mapped in the made-up process.
const BIAS: u64 = 0x5555_0000_0000;

/// Two C functions (line 3 and 4) with aliases that perf's rules rank
/// below `pmc_fixture_alpha`, assembly with unsized symbols and labels, a
/// PLT call to libc, one to an IFUNC of its own (an IRELATIVE slot) and
/// two to functions whose address it takes (`.plt.got`), an inlined
/// function, a local function named by a global alias and one with a
/// C++-style symbol (C's DWARF gives it that name too).
const SOURCE: &str = r#"#include <stdio.h>
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
struct Dir(PathBuf);

impl Dir {
    fn new(name: &str) -> Dir {
        let p = std::env::temp_dir().join(format!("pmc-report-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        Dir(p)
    }

    fn join(&self, p: &str) -> PathBuf {
        self.0.join(p)
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Whether cc and binutils are here; says why not.
fn have_tools() -> bool {
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

fn run(program: &str, args: &[&str]) -> String {
    let out = Command::new(program).args(args).output().unwrap();
    assert!(
        out.status.success(),
        "{program} {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Compiles [`SOURCE`] with debug info and a build id, and `flags`.
fn compile(dir: &Dir, name: &str, flags: &[&str]) -> PathBuf {
    let c = dir.join("prog.c");
    std::fs::write(&c, SOURCE).unwrap();
    let out = dir.join(name);
    let mut args = vec!["-O1", "-g", "-Wl,--build-id", "-o", s(&out), s(&c)];
    args.splice(0..0, flags.iter().copied());
    run("cc", &args);
    out
}

/// `readelf -sW`'s FUNC symbols: name → (value, size).
fn symbol(object: &Path, name: &str) -> (u64, u64) {
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
fn sections(object: &Path) -> Vec<(String, u64, u64, bool)> {
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

fn section(object: &Path, name: &str) -> (u64, u64) {
    let (_, a, n, _) = sections(object)
        .into_iter()
        .find(|(s, ..)| s == name)
        .unwrap();
    (a, n)
}

/// `readelf -lW`'s executable PT_LOADs: (offset, vaddr, filesz, memsz).
fn text_segments(object: &Path) -> Vec<(u64, u64, u64, u64)> {
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

fn build_id(object: &Path) -> String {
    run("readelf", &["-n", s(object)])
        .lines()
        .find_map(|l| l.trim().strip_prefix("Build ID: ").map(str::to_string))
        .unwrap()
}

/// The pc of link address `addr` with the first text page at [`BIAS`].
fn pc(object: &Path, addr: u64) -> u64 {
    addr - (text_segments(object)[0].1 & !0xfff) + BIAS
}

fn log(pid: u32, path: &Path) -> Vec<LogEvent> {
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

/// The program as the log names it, under the `-r` root.
const LOGGED: &str = "usr/bin/prog";

/// Builds the program, installs it stripped at [`LOGGED`] under
/// `dir/root`: (root, full program, installed path).
fn installed(dir: &Dir, strip_flags: &[&str]) -> (PathBuf, PathBuf, PathBuf) {
    let root = dir.join("root");
    let full = compile(dir, "full", &[]);
    let to = root.join(LOGGED);
    std::fs::create_dir_all(to.parent().unwrap()).unwrap();
    let mut args = strip_flags.to_vec();
    args.extend(["-o", s(&to), s(&full)]);
    run("strip", &args);
    (root, full, to)
}

fn keep_debug(from: &Path, to: &Path) {
    std::fs::create_dir_all(to.parent().unwrap()).unwrap();
    run("objcopy", &["--only-keep-debug", s(from), s(to)]);
}

fn build_id_path(root: &Path, id: &str) -> PathBuf {
    root.join("usr/lib/debug/.build-id")
        .join(&id[..2])
        .join(format!("{}.debug", &id[2..]))
}

/// A symbolizer of one process mapping `object`, debug files under `root`.
fn under(root: &Path, object: &Path) -> Symbolizer {
    Symbolizer::new(&log(1201, object)).with_debug_root(Some(root.to_path_buf()))
}

/// The outermost frame at `symbol`'s address + 1.
fn outer(sym: &mut Symbolizer, full: &Path, symbol_name: &str) -> Frame {
    let (addr, _) = symbol(full, symbol_name);
    let r = sym.resolve(1201, pc(full, addr + 1));
    r.frames.last().unwrap().clone()
}

fn unnamed(full: &Path, symbol_name: &str) -> String {
    format!("prog+{:#x}", symbol(full, symbol_name).0 + 1)
}

#[test]
fn a_stripped_object_is_named_from_its_build_id_debug_file_read_once() {
    if !have_tools() {
        return;
    }
    let dir = Dir::new("buildid");
    let (root, full, prog) = installed(&dir, &["--strip-all"]);
    let id = build_id(&full);
    // Not under the root: /usr/lib/debug has no such file.
    let mut sym = Symbolizer::new(&log(1201, &prog));
    assert_eq!(
        outer(&mut sym, &full, "pmc_fixture_alpha").function,
        unnamed(&full, "pmc_fixture_alpha")
    );
    assert_eq!(sym.debug_files_opened(), 0);
    let debug = build_id_path(&root, &id);
    keep_debug(&full, &debug);
    let mut sym = under(&root, &prog);
    let alpha = outer(&mut sym, &full, "pmc_fixture_alpha");
    assert_eq!(
        (alpha.function.as_str(), alpha.line),
        ("pmc_fixture_alpha", Some(3))
    );
    assert!(alpha.file.unwrap().ends_with("prog.c"));
    let beta = outer(&mut sym, &full, "pmc_fixture_beta");
    assert_eq!(
        (beta.function.as_str(), beta.line),
        ("pmc_fixture_beta", Some(4))
    );
    // Another process of the same object: the same debug file, read once.
    let (a, _) = symbol(&full, "pmc_fixture_alpha");
    let mut two = Symbolizer::new(&[log(1201, &prog), log(1202, &prog)].concat())
        .with_debug_root(Some(root.clone()));
    assert_eq!(two.name(1201, pc(&full, a + 1)), "pmc_fixture_alpha");
    assert_eq!(two.name(1202, pc(&full, a + 1)), "pmc_fixture_alpha");
    assert_eq!(two.debug_files_opened(), 1);
    assert_eq!(sym.debug_files_opened(), 1);
    assert_eq!(sym.debug_notes(), &[] as &[String]);
    let shown = format!("{sym:?}");
    assert!(
        shown.contains(&format!("DebugFile {{ path: {debug:?}, symtab: "))
            && shown.contains("has_dwarf: true"),
        "{shown}"
    );
    // Names alone: the debug file's symbols, no DWARF.
    let mut names = under(&root, &prog).with_names_only(true);
    let alpha = outer(&mut names, &full, "pmc_fixture_alpha");
    assert_eq!(
        (alpha.function.as_str(), alpha.file, alpha.line),
        ("pmc_fixture_alpha", None, None)
    );
    assert_eq!(names.debug_files_opened(), 1);
}

#[test]
fn a_debuglink_is_followed_in_each_of_its_three_places() {
    if !have_tools() {
        return;
    }
    let dir = Dir::new("debuglink");
    let (root, full, prog) = installed(&dir, &["--strip-all"]);
    let debug = dir.join("prog.debug");
    keep_debug(&full, &debug);
    run(
        "objcopy",
        &[&format!("--add-gnu-debuglink={}", s(&debug)), s(&prog)],
    );
    for place in [
        "usr/bin/prog.debug",
        "usr/bin/.debug/prog.debug",
        "usr/lib/debug/usr/bin/prog.debug",
    ] {
        let at = root.join(place);
        std::fs::create_dir_all(at.parent().unwrap()).unwrap();
        std::fs::copy(&debug, &at).unwrap();
        let mut sym = under(&root, &prog);
        let alpha = outer(&mut sym, &full, "pmc_fixture_alpha");
        assert_eq!(
            (alpha.function.as_str(), alpha.line),
            ("pmc_fixture_alpha", Some(3)),
            "{place}"
        );
        assert_eq!(sym.debug_files_opened(), 1, "{place}");
        assert_eq!(sym.debug_notes(), &[] as &[String], "{place}");
        std::fs::remove_file(&at).unwrap();
    }
    // None anywhere: each place said.
    let mut sym = under(&root, &prog);
    assert_eq!(
        outer(&mut sym, &full, "pmc_fixture_alpha").function,
        unnamed(&full, "pmc_fixture_alpha")
    );
    assert_eq!(sym.debug_files_opened(), 0);
    let id = build_id(&full);
    assert_eq!(
        sym.debug_notes(),
        &[format!(
            "{}: no separate debug info (looked for {}, {}, {}, {})",
            s(&prog),
            build_id_path(&root, &id).display(),
            root.join("usr/bin/prog.debug").display(),
            root.join("usr/bin/.debug/prog.debug").display(),
            root.join("usr/lib/debug/usr/bin/prog.debug").display(),
        )]
    );
}

/// A debuglink may name the object's own file name: the object itself is
/// not a candidate, its `.debug/` namesake is.
#[test]
fn a_debuglink_naming_the_object_itself_skips_the_object() {
    if !have_tools() {
        return;
    }
    let dir = Dir::new("selflink");
    let (root, full, prog) = installed(&dir, &["--strip-all"]);
    let debug = root.join("usr/bin/.debug/prog");
    keep_debug(&full, &debug);
    run(
        "objcopy",
        &[&format!("--add-gnu-debuglink={}", s(&debug)), s(&prog)],
    );
    let mut sym = under(&root, &prog);
    assert_eq!(
        outer(&mut sym, &full, "pmc_fixture_alpha").function,
        "pmc_fixture_alpha"
    );
    assert_eq!(sym.debug_files_opened(), 1);
    assert_eq!(sym.debug_notes(), &[] as &[String]);
}

#[test]
fn debug_files_that_are_not_the_objects_are_skipped_and_said() {
    if !have_tools() {
        return;
    }
    let dir = Dir::new("wrong");
    let (root, full, prog) = installed(&dir, &["--strip-all"]);
    let id = build_id(&full);
    let by_id = build_id_path(&root, &id);
    let name = unnamed(&full, "pmc_fixture_alpha");
    let alpha = |sym: &mut Symbolizer| outer(sym, &full, "pmc_fixture_alpha");

    // Another build's debug file at this build id's path.
    let other = compile(&dir, "other", &["-O2", "-DPMC_OTHER"]);
    keep_debug(&other, &by_id);
    let mut sym = under(&root, &prog);
    assert_eq!(alpha(&mut sym).function, name);
    assert_eq!(sym.debug_files_opened(), 1);
    let other_id = build_id(&other);
    assert_ne!(other_id, id);
    assert!(
        sym.debug_notes()[0].ends_with(&format!(
            "skipped debug file {}: its build id {other_id} is not the object's {id}",
            by_id.display()
        )),
        "{:?}",
        sym.debug_notes()
    );

    // Neither symbols nor DWARF.
    run("strip", &["--strip-all", "-o", s(&by_id), s(&full)]);
    let mut sym = under(&root, &prog);
    assert_eq!(alpha(&mut sym).function, name);
    assert!(
        sym.debug_notes()[0].ends_with("it has neither a symbol table nor DWARF"),
        "{:?}",
        sym.debug_notes()
    );

    // Symbols without DWARF: names, no file:line.
    run("strip", &["--strip-debug", "-o", s(&by_id), s(&full)]);
    let mut sym = under(&root, &prog);
    let f = alpha(&mut sym);
    assert_eq!(
        (f.function.as_str(), f.file, f.line),
        ("pmc_fixture_alpha", None, None)
    );
    assert_eq!(sym.debug_notes(), &[] as &[String]);

    // Unreadable (a directory): opened, skipped, said.
    std::fs::remove_file(&by_id).unwrap();
    std::fs::create_dir(&by_id).unwrap();
    let mut sym = under(&root, &prog);
    assert_eq!(alpha(&mut sym).function, name);
    assert_eq!(sym.debug_files_opened(), 1);
    assert!(
        sym.debug_notes()[0].starts_with(&format!(
            "{}: skipped debug file {}: ",
            s(&prog),
            by_id.display()
        )),
        "{:?}",
        sym.debug_notes()
    );
    std::fs::remove_dir(&by_id).unwrap();

    // A debuglink's CRC that is not the file's.
    let debug = dir.join("prog.debug");
    keep_debug(&full, &debug);
    run(
        "objcopy",
        &[&format!("--add-gnu-debuglink={}", s(&debug)), s(&prog)],
    );
    let want = crc32fast::hash(&std::fs::read(&debug).unwrap());
    let beside = root.join("usr/bin/prog.debug");
    let mut bytes = std::fs::read(&debug).unwrap();
    bytes.push(0);
    std::fs::write(&beside, &bytes).unwrap();
    let got = crc32fast::hash(&bytes);
    let mut sym = under(&root, &prog);
    assert_eq!(alpha(&mut sym).function, name);
    assert_eq!(sym.debug_files_opened(), 1);
    assert_eq!(
        sym.debug_notes()[0],
        format!(
            "{}: skipped debug file {}: CRC-32 {got:08x}, the object's .gnu_debuglink says {want:08x} (a debug file of another build)",
            s(&prog),
            beside.display()
        )
    );
}

/// Under a root, the log's path (without the root) is the one the
/// recorded build ids name, and JIT maps are looked for under the root.
#[test]
fn under_a_root_the_logged_path_and_the_perf_map_are_the_logs() {
    if !have_tools() {
        return;
    }
    let dir = Dir::new("rooted");
    let (root, full, prog) = installed(&dir, &["--strip-debug"]);
    let (a, _) = symbol(&full, "pmc_fixture_alpha");
    let with_id = |logged: String| {
        let mut sym = under(&root, &prog)
            .with_build_ids(std::collections::HashMap::from([(logged, vec![0xab; 20])]));
        sym.name(1201, pc(&full, a + 1))
    };
    assert_eq!(
        with_id(format!("/{LOGGED}")),
        unnamed(&full, "pmc_fixture_alpha")
    );
    assert_eq!(with_id(s(&prog).into()), "pmc_fixture_alpha");
    // A root that is a prefix of the path but not a directory of it.
    let twin = dir.join("root2").join(LOGGED);
    std::fs::create_dir_all(twin.parent().unwrap()).unwrap();
    std::fs::copy(&prog, &twin).unwrap();
    let mut sym = Symbolizer::new(&log(1201, &twin))
        .with_debug_root(Some(root.clone()))
        .with_build_ids(std::collections::HashMap::from([(
            s(&twin).to_string(),
            vec![0xab; 20],
        )]));
    assert_eq!(
        sym.name(1201, pc(&full, a + 1)),
        unnamed(&full, "pmc_fixture_alpha")
    );

    std::fs::create_dir_all(root.join("tmp")).unwrap();
    std::fs::write(root.join("tmp/perf-1299.map"), "4000 10 pmc_jitted\n").unwrap();
    let mut sym = Symbolizer::new(&[]).with_debug_root(Some(root.clone()));
    assert_eq!(sym.name(1299, 0x4008), "pmc_jitted");
}

/// Compressed DWARF (zlib and zstd `SHF_COMPRESSED` sections) names
/// frames with file:line like plain DWARF; a section claiming more than
/// the cap is not inflated, and said.
#[test]
fn compressed_dwarf_is_inflated_within_the_cap() {
    if !have_tools() {
        return;
    }
    let dir = Dir::new("compressed");
    let full = compile(&dir, "full", &[]);
    for format in ["zlib", "zstd"] {
        let prog = dir.join(&format!("prog-{format}"));
        let out = Command::new("objcopy")
            .args([
                &format!("--compress-debug-sections={format}"),
                s(&full),
                s(&prog),
            ])
            .output()
            .unwrap();
        if !out.status.success() {
            println!("skipped {format}: objcopy cannot compress with it");
            continue;
        }
        let mut sym = Symbolizer::new(&log(1201, &prog));
        let f = outer(&mut sym, &full, "pmc_fixture_alpha");
        assert_eq!(
            (f.function.as_str(), f.line),
            ("pmc_fixture_alpha", Some(3)),
            "{format}"
        );
        assert_eq!(sym.debug_notes(), &[] as &[String], "{format}");
    }
    // zlib's .debug_info claiming 2^40 bytes (Elf64_Chdr.ch_size).
    let prog = dir.join("prog-claims");
    run(
        "objcopy",
        &["--compress-debug-sections=zlib", s(&full), s(&prog)],
    );
    let mut bytes = std::fs::read(&prog).unwrap();
    let (offset, size) = {
        use object::{Object as _, ObjectSection as _};
        let file = object::File::parse(&*bytes).unwrap();
        let info = file.section_by_name(".debug_info").unwrap();
        let (offset, size) = info.file_range().unwrap();
        (offset as usize, size)
    };
    assert_eq!(
        &bytes[offset..offset + 4],
        &1u32.to_le_bytes(),
        "ELFCOMPRESS_ZLIB"
    );
    bytes[offset + 8..offset + 16].copy_from_slice(&(1u64 << 40).to_le_bytes());
    std::fs::write(&prog, &bytes).unwrap();
    let mut sym = Symbolizer::new(&log(1201, &prog));
    let f = outer(&mut sym, &full, "pmc_fixture_alpha");
    assert_eq!((f.function.as_str(), f.line), ("pmc_fixture_alpha", None));
    let compressed = size - 24;
    // Names alone: the object's DWARF is not read, so nothing is refused.
    let mut names = Symbolizer::new(&log(1201, &prog)).with_names_only(true);
    assert_eq!(
        outer(&mut names, &full, "pmc_fixture_alpha").function,
        "pmc_fixture_alpha"
    );
    assert_eq!(names.debug_notes(), &[] as &[String]);
    assert_eq!(
        sym.debug_notes(),
        &[format!(
            "{}: .debug_info claims {} bytes inflated from {compressed}, above the cap of {} (100:1 above 1048576 bytes, 1073741824 at most); not inflated",
            s(&prog),
            1u64 << 40,
            (compressed * 100).max(1 << 20)
        )]
    );
}

/// MiniDebugInfo: a stripped object's `.gnu_debugdata`, an xz-compressed
/// ELF file with a `.symtab`, names its functions; one that is not xz is
/// said and ignored.
#[test]
fn mini_debuginfo_names_a_stripped_object() {
    if !have_tools()
        || !Command::new("xz")
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    {
        println!("skipped: no xz");
        return;
    }
    let dir = Dir::new("minidebug");
    let (root, full, prog) = installed(&dir, &["--strip-all"]);
    let mini = dir.join("mini");
    run("strip", &["--strip-debug", "-o", s(&mini), s(&full)]);
    run("xz", &["-k", s(&mini)]);
    let with = dir.join("with");
    let plain = dir.join("plain");
    std::fs::copy(&prog, &plain).unwrap();
    run(
        "objcopy",
        &[
            &format!("--add-section=.gnu_debugdata={}.xz", s(&mini)),
            s(&prog),
            s(&with),
        ],
    );
    std::fs::copy(&with, &prog).unwrap();
    let mut sym = under(&root, &prog);
    let f = outer(&mut sym, &full, "pmc_fixture_alpha");
    assert_eq!((f.function.as_str(), f.line), ("pmc_fixture_alpha", None));
    let text = dir.join("text");
    std::fs::write(&text, "not xz").unwrap();
    run(
        "objcopy",
        &[
            &format!("--add-section=.gnu_debugdata={}", s(&text)),
            s(&plain),
            s(&with),
        ],
    );
    let notxz = root.join("usr/bin/notxz");
    std::fs::copy(&with, &notxz).unwrap();
    let mut sym = under(&root, &notxz);
    assert_eq!(
        outer(&mut sym, &full, "pmc_fixture_alpha").function,
        unnamed(&full, "pmc_fixture_alpha").replace("prog+", "notxz+")
    );
    assert!(
        sym.debug_notes().iter().any(|n| n.starts_with(&format!(
            "{}: skipped .gnu_debugdata (MiniDebugInfo): not xz data",
            s(&notxz)
        ))),
        "{:?}",
        sym.debug_notes()
    );
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

/// A build id of one byte has no `.build-id/xx/rest.debug` path: it is
/// not looked up (GDB needs a byte for the directory and more for the
/// file).
#[test]
fn a_one_byte_build_id_is_not_looked_up() {
    if !have_tools() {
        return;
    }
    let dir = Dir::new("shortid");
    let root = dir.join("root");
    let full = dir.join("full");
    std::fs::write(dir.join("prog.c"), SOURCE).unwrap();
    let c = dir.join("prog.c");
    run(
        "cc",
        &["-O1", "-g", "-Wl,--build-id=0xab", "-o", s(&full), s(&c)],
    );
    {
        use object::Object as _;
        let data = std::fs::read(&full).unwrap();
        let file = object::File::parse(&*data).unwrap();
        assert_eq!(file.build_id().unwrap(), Some(&[0xab][..]));
    }
    let prog = root.join(LOGGED);
    std::fs::create_dir_all(prog.parent().unwrap()).unwrap();
    run("strip", &["--strip-all", "-o", s(&prog), s(&full)]);
    keep_debug(&full, &root.join("usr/lib/debug/.build-id/ab/.debug"));
    let mut sym = under(&root, &prog);
    assert_eq!(
        outer(&mut sym, &full, "pmc_fixture_alpha").function,
        unnamed(&full, "pmc_fixture_alpha")
    );
    assert_eq!(sym.debug_files_opened(), 0);
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

/// Names alone: a program's own DWARF is not parsed, and no separate
/// debug file is looked for it. An object with symbols but no DWARF takes
/// a debug file's DWARF.
#[test]
fn own_dwarf_needs_no_debug_file_and_symbols_alone_take_one() {
    if !have_tools() {
        return;
    }
    let dir = Dir::new("owndwarf");
    let (root, full, prog) = installed(&dir, &["--strip-debug"]);
    let mut own = under(&root, &full).with_names_only(true);
    let f = outer(&mut own, &full, "pmc_fixture_alpha");
    assert_eq!((f.function.as_str(), f.line), ("pmc_fixture_alpha", None));
    assert_eq!(own.debug_notes(), &[] as &[String]);
    let mut own = under(&root, &full);
    assert_eq!(outer(&mut own, &full, "pmc_fixture_alpha").line, Some(3));
    assert_eq!(own.debug_notes(), &[] as &[String]);
    keep_debug(&full, &build_id_path(&root, &build_id(&full)));
    let mut sym = under(&root, &prog);
    let f = outer(&mut sym, &full, "pmc_fixture_alpha");
    assert_eq!(
        (f.function.as_str(), f.line),
        ("pmc_fixture_alpha", Some(3))
    );
    assert_eq!(sym.debug_files_opened(), 1);
}
