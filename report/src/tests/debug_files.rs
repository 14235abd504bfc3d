//! Names from where distributions keep them, on ELF fixtures built with
//! cc and binutils (`elf_fixtures.rs`): separate debug files by build id
//! and by `.gnu_debuglink` under a `-r` root, read once, and the ones that
//! must not be used (another build's, a bad CRC, unreadable, empty), said
//! for `-v`; compressed DWARF within the inflate cap; MiniDebugInfo.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::elf_fixtures::{Dir, SOURCE, build_id, compile, have_tools, log, pc, run, s, symbol};
use crate::*;

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
