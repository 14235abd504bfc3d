//! Names from where distributions keep them: separate debug files by build
//! id and by `.gnu_debuglink`, MiniDebugInfo, and the files that must not
//! be used (another build's, a bad CRC, a corrupt one, an object replaced
//! after recording). Fixtures are built here with cc and binutils and
//! placed under a `-r` root, so the lookup of `/usr/lib/debug` under the
//! root is checked too; the expected names and addresses come from `nm`
//! and `readelf`, not from pmc.

use std::path::Path;
use std::process::{Command, Stdio};

use pmc::log::{LogRecord, LogWriter};
use pmc::probe::Requirement as R;

use crate::ensure;
use crate::harness::{Context, LiveTest, TestResult, test};
use crate::temp::TempDir;

const PMCSTAT: &str = env!("CARGO_BIN_EXE_pmcstat");

/// The program as the log names it (under the `-r` root).
const LOGGED: &str = "/usr/bin/prog";
/// Where the fixture's text is mapped in the made-up process.
const BIAS: u64 = 0x5555_0000_0000;

fn binutils() -> Vec<R> {
    ["cc", "objcopy", "strip", "nm", "readelf"]
        .into_iter()
        .map(|p| R::Program(p.into()))
        .collect()
}

pub fn tests() -> Vec<LiveTest> {
    let with_xz = {
        let mut r = binutils();
        r.push(R::Program("xz".into()));
        r
    };
    vec![
        test(
            "debug_symbols::the_vdso_is_named_from_its_image_in_memory",
            vec![R::Paranoid(2), R::Program("cc".into())],
            the_vdso_is_named_from_its_image_in_memory,
        ),
        test(
            "debug_symbols::jit_code_is_named_from_the_processs_perf_map",
            vec![],
            jit_code_is_named_from_the_processs_perf_map,
        ),
        test(
            "debug_symbols::a_vdso_of_another_boot_stays_unnamed",
            vec![],
            a_vdso_of_another_boot_stays_unnamed,
        ),
        test(
            "debug_symbols::a_stripped_object_is_named_from_its_build_id_debug_file",
            binutils(),
            a_stripped_object_is_named_from_its_build_id_debug_file,
        ),
        test(
            "debug_symbols::a_debuglink_is_followed_in_each_of_its_three_places",
            binutils(),
            a_debuglink_is_followed_in_each_of_its_three_places,
        ),
        test(
            "debug_symbols::wrong_debug_files_are_skipped_and_said_under_v",
            binutils(),
            wrong_debug_files_are_skipped_and_said_under_v,
        ),
        test(
            "debug_symbols::an_object_replaced_after_recording_stays_unnamed",
            binutils(),
            an_object_replaced_after_recording_stays_unnamed,
        ),
        test(
            "debug_symbols::a_status_change_keeps_names_a_new_build_does_not",
            {
                let mut r = binutils();
                r.push(R::Paranoid(2));
                r
            },
            a_status_change_keeps_names_a_new_build_does_not,
        ),
        test(
            "debug_symbols::a_perf_data_build_id_names_its_object_whatever_its_times",
            {
                let mut r = binutils();
                r.extend([R::Paranoid(2), R::Program("perf".into())]);
                r
            },
            a_perf_data_build_id_names_its_object_whatever_its_times,
        ),
        test(
            "debug_symbols::a_label_in_text_is_named_as_perf_names_it",
            binutils(),
            a_label_in_text_is_named_as_perf_names_it,
        ),
        test(
            "debug_symbols::mini_debuginfo_names_what_dynsym_does_not",
            with_xz,
            mini_debuginfo_names_what_dynsym_does_not,
        ),
    ]
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

use crate::run_ok as run;

/// A program whose two functions the samples hit; `variant` changes its
/// code, and so its build id.
fn source(variant: u32) -> String {
    format!(
        "__attribute__((noinline)) int pmc_fixture_alpha(int x) {{ return x * {m} + 1; }}\n\
         __attribute__((noinline)) int pmc_fixture_beta(int x) {{ return pmc_fixture_alpha(x) ^ {variant}; }}\n\
         int main(int argc, char **argv) {{ (void)argv; return pmc_fixture_beta(argc); }}\n",
        m = 3 + variant
    )
}

/// Compiles `source(variant)` with debug info and a build id into `out`.
fn compile(dir: &TempDir, variant: u32, out: &Path) -> TestResult {
    compile_source(dir, &format!("prog{variant}"), &source(variant), out)
}

/// Compiles C `source` (as `dir/NAME.c`) with debug info and a build id
/// into `out`.
fn compile_source(dir: &TempDir, name: &str, source: &str, out: &Path) -> TestResult {
    let c = dir.join(&format!("{name}.c"));
    std::fs::write(&c, source).ctx("write C source")?;
    run(
        "cc",
        &[
            "-O1",
            "-g",
            "-Wl,--build-id",
            "-o",
            &out.to_string_lossy(),
            &c.to_string_lossy(),
        ],
    )?;
    Ok(())
}

/// The address of `symbol` in `object` as nm gives it.
fn nm_address(object: &Path, symbol: &str) -> Result<u64, libtest_mimic::Failed> {
    let out = run("nm", &[&object.to_string_lossy()])?;
    text(&out.stdout)
        .lines()
        .find_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() == 3 && f[2] == symbol).then(|| u64::from_str_radix(f[0], 16).ok())?
        })
        .ok_or_else(|| format!("nm: no {symbol}").into())
}

/// The object's build id as readelf shows it.
fn build_id(object: &Path) -> Result<String, libtest_mimic::Failed> {
    let out = run("readelf", &["-n", &object.to_string_lossy()])?;
    text(&out.stdout)
        .lines()
        .find_map(|l| l.trim().strip_prefix("Build ID: ").map(str::to_string))
        .ok_or_else(|| "readelf -n: no build id".into())
}

/// The link address of the object's first executable PT_LOAD, page-aligned
/// (what a MAP_IN's start maps, hwpmc's convention).
fn first_text_page(object: &Path) -> Result<u64, libtest_mimic::Failed> {
    let out = run("readelf", &["-lW", &object.to_string_lossy()])?;
    text(&out.stdout)
        .lines()
        .filter(|l| l.trim_start().starts_with("LOAD") && l.contains('E'))
        .find_map(|l| {
            let vaddr = l.split_whitespace().nth(2)?;
            u64::from_str_radix(vaddr.trim_start_matches("0x"), 16).ok()
        })
        .map(|v| v & !0xfff)
        .ok_or_else(|| "readelf -l: no executable PT_LOAD".into())
}

/// A fixture: the full program, its build id, and the pcs of its two
/// functions in the made-up process.
struct Fixture {
    full: std::path::PathBuf,
    build_id: String,
    pcs: Vec<u64>,
}

fn fixture(dir: &TempDir, variant: u32) -> Result<Fixture, libtest_mimic::Failed> {
    let full = dir.join(&format!("full{variant}"));
    compile(dir, variant, &full)?;
    let page = first_text_page(&full)?;
    let mut pcs = Vec::new();
    for f in ["pmc_fixture_alpha", "pmc_fixture_beta"] {
        pcs.push(nm_address(&full, f)? - page + BIAS + 1);
    }
    Ok(Fixture {
        build_id: build_id(&full)?,
        full,
        pcs,
    })
}

/// A log of one process with its object at [`LOGGED`], one leaf sample
/// per pc; with `also`, a second process with the object at that path.
fn write_log(path: &Path, also: Option<&str>, pcs: &[u64]) -> TestResult {
    write_log_of(path, &[Some(LOGGED), also], pcs)
}

/// A log of one process per object path, one leaf sample per pc.
fn write_log_of(path: &Path, objects: &[Option<&str>], pcs: &[u64]) -> TestResult {
    let file = std::fs::File::create(path).ctx("create log")?;
    let mut w = LogWriter::new(file, &pmc::global::this_machine()).ctx("LogWriter::new")?;
    let mut records = vec![LogRecord::PmcAllocateDyn {
        pmcid: 1,
        event: 0,
        flags: 0,
        name: "cpu-clock".into(),
    }];
    for (pid, object) in (9..).zip(objects) {
        let Some(object) = object else { continue };
        records.push(LogRecord::MapIn {
            pid,
            start: BIAS,
            path: (*object).to_string(),
        });
        for pc in pcs {
            records.push(LogRecord::Callchain {
                pid,
                tid: pid,
                pmcid: 1,
                cpu: 0,
                userspace: true,
                pcs: vec![*pc],
            });
        }
    }
    for (t, r) in records.iter().enumerate() {
        w.write(r, t as u64 + 1).ctx("write record")?;
    }
    w.close().ctx("close log")?;
    Ok(())
}

/// `pmcstat -R log -r root -v --folded FILE`: (distinct folded leaves,
/// stderr).
fn report(root: &Path, log: &Path) -> Result<(Vec<String>, String), libtest_mimic::Failed> {
    report_under(Some(root), log)
}

/// [`report`], with `-r root` when given.
fn report_under(
    root: Option<&Path>,
    log: &Path,
) -> Result<(Vec<String>, String), libtest_mimic::Failed> {
    let folded = log.with_extension("folded");
    let mut args = vec!["-R".to_string(), log.to_string_lossy().into_owned()];
    if let Some(root) = root {
        args.extend(["-r".to_string(), root.to_string_lossy().into_owned()]);
    }
    args.extend([
        "-v".to_string(),
        "--folded".to_string(),
        folded.to_string_lossy().into_owned(),
    ]);
    let out = Command::new(PMCSTAT)
        .args(&args)
        .stdin(Stdio::null())
        .output()
        .ctx("pmcstat")?;
    ensure!(out.status.success(), "pmcstat: {}", text(&out.stderr));
    let folded = std::fs::read_to_string(&folded).ctx("read the folded stacks")?;
    let mut leaves: Vec<String> = folded
        .lines()
        .filter_map(|l| {
            let (stack, count) = l.rsplit_once(' ')?;
            count.parse::<u64>().ok()?;
            Some(stack.rsplit(';').next()?.to_string())
        })
        .collect();
    leaves.sort();
    leaves.dedup();
    Ok((leaves, text(&out.stderr)))
}

fn mkdirs(p: &Path) -> TestResult {
    if let Some(parent) = p.parent() {
        std::fs::create_dir_all(parent).ctx("mkdir -p")?;
    }
    Ok(())
}

/// Installs `from`, stripped, at [`LOGGED`] under `root`.
fn install_stripped(from: &Path, root: &Path) -> Result<std::path::PathBuf, libtest_mimic::Failed> {
    let to = root.join(LOGGED.trim_start_matches('/'));
    mkdirs(&to)?;
    run(
        "strip",
        &[
            "--strip-all",
            "-o",
            &to.to_string_lossy(),
            &from.to_string_lossy(),
        ],
    )?;
    Ok(to)
}

fn keep_debug(from: &Path, to: &Path) -> TestResult {
    mkdirs(to)?;
    run(
        "objcopy",
        &[
            "--only-keep-debug",
            &from.to_string_lossy(),
            &to.to_string_lossy(),
        ],
    )?;
    Ok(())
}

fn build_id_path(root: &Path, id: &str) -> std::path::PathBuf {
    root.join("usr/lib/debug/.build-id")
        .join(&id[..2])
        .join(format!("{}.debug", &id[2..]))
}

const NAMED: [&str; 2] = ["pmc_fixture_alpha", "pmc_fixture_beta"];

/// Leaves that are `prog+0x…` at the functions' own offsets, never a bare
/// address or another name.
fn all_unnamed(leaves: &[String]) -> bool {
    !leaves.is_empty() && leaves.iter().all(|l| l.starts_with("prog+0x"))
}

fn a_stripped_object_is_named_from_its_build_id_debug_file() -> TestResult {
    let dir = TempDir::new("debugsym")?;
    let fx = fixture(&dir, 0)?;
    let root = dir.join("root");
    let object = install_stripped(&fx.full, &root)?;
    let linked = root.join("usr/lib/prog");
    mkdirs(&linked)?;
    std::fs::hard_link(&object, &linked).ctx("hard link")?;
    let log = dir.join("log");
    write_log(&log, Some("/usr/lib/prog"), &fx.pcs)?;
    // Without the debug file: the object alone has no names for them.
    let (leaves, _) = report(&root, &log)?;
    ensure!(all_unnamed(&leaves), "stripped, no debug file: {leaves:?}");
    keep_debug(&fx.full, &build_id_path(&root, &fx.build_id))?;
    let (leaves, stderr) = report(&root, &log)?;
    ensure!(leaves == NAMED, "by build id: {leaves:?}\n{stderr}");
    // Two paths of one build (a hard link, /lib and /usr/lib): one read.
    ensure!(
        stderr.contains("symbols: 1 debug file read"),
        "one debug file, read once: {stderr}"
    );
    Ok(())
}

fn a_debuglink_is_followed_in_each_of_its_three_places() -> TestResult {
    let dir = TempDir::new("debuglink")?;
    let fx = fixture(&dir, 0)?;
    let debug = dir.join("prog.debug");
    keep_debug(&fx.full, &debug)?;
    for (i, place) in ["usr/bin", "usr/bin/.debug", "usr/lib/debug/usr/bin"]
        .iter()
        .enumerate()
    {
        let root = dir.join(&format!("root{i}"));
        let object = install_stripped(&fx.full, &root)?;
        // --add-gnu-debuglink reads the debug file for its CRC.
        run(
            "objcopy",
            &[
                &format!("--add-gnu-debuglink={}", debug.display()),
                &object.to_string_lossy(),
            ],
        )?;
        let placed = root.join(place).join("prog.debug");
        mkdirs(&placed)?;
        std::fs::copy(&debug, &placed).ctx("place the debug file")?;
        // Recorded after the object took its final form.
        let log = dir.join(&format!("log{i}"));
        write_log(&log, None, &fx.pcs)?;
        let (leaves, stderr) = report(&root, &log)?;
        ensure!(
            leaves == NAMED,
            "debuglink in {place}: {leaves:?}\n{stderr}"
        );
    }
    Ok(())
}

fn wrong_debug_files_are_skipped_and_said_under_v() -> TestResult {
    let dir = TempDir::new("wrongdebug")?;
    let fx = fixture(&dir, 0)?;
    let other = fixture(&dir, 1)?;
    ensure!(fx.build_id != other.build_id, "two builds, one build id");
    let log = dir.join("log");

    // Another build's debug file where this build id's belongs.
    let root = dir.join("other_build");
    install_stripped(&fx.full, &root)?;
    keep_debug(&other.full, &build_id_path(&root, &fx.build_id))?;
    write_log(&log, None, &fx.pcs)?;
    let (leaves, stderr) = report(&root, &log)?;
    ensure!(all_unnamed(&leaves), "another build's names: {leaves:?}");
    ensure!(
        stderr.contains(&format!(
            "its build id {} is not the object's {}",
            other.build_id, fx.build_id
        )),
        "the skip is said: {stderr}"
    );

    // A corrupt file there.
    let root = dir.join("corrupt");
    install_stripped(&fx.full, &root)?;
    let at = build_id_path(&root, &fx.build_id);
    mkdirs(&at)?;
    std::fs::write(&at, b"\x7fELF but not really").ctx("write corrupt file")?;
    write_log(&log, None, &fx.pcs)?;
    let (leaves, stderr) = report(&root, &log)?;
    ensure!(all_unnamed(&leaves), "corrupt: {leaves:?}");
    ensure!(
        stderr.contains("not a readable ELF file"),
        "the skip is said: {stderr}"
    );

    // A debuglink whose file changed since (same build id, other bytes).
    let root = dir.join("bad_crc");
    let object = install_stripped(&fx.full, &root)?;
    let debug = dir.join("prog.debug");
    keep_debug(&fx.full, &debug)?;
    run(
        "objcopy",
        &[
            &format!("--add-gnu-debuglink={}", debug.display()),
            &object.to_string_lossy(),
        ],
    )?;
    write_log(&log, None, &fx.pcs)?;
    let placed = root.join("usr/bin/prog.debug");
    let note = dir.join("note");
    std::fs::write(&note, b"changed").ctx("write a section")?;
    run(
        "objcopy",
        &[
            "--add-section",
            &format!(".pmc_note={}", note.display()),
            &debug.to_string_lossy(),
            &placed.to_string_lossy(),
        ],
    )?;
    let (leaves, stderr) = report(&root, &log)?;
    ensure!(all_unnamed(&leaves), "bad CRC: {leaves:?}");
    ensure!(stderr.contains("CRC-32"), "the skip is said: {stderr}");

    // None at all: said too.
    let root = dir.join("missing");
    install_stripped(&fx.full, &root)?;
    write_log(&log, None, &fx.pcs)?;
    let (leaves, stderr) = report(&root, &log)?;
    ensure!(all_unnamed(&leaves), "missing: {leaves:?}");
    ensure!(
        stderr.contains("no separate debug info"),
        "the miss is said: {stderr}"
    );
    Ok(())
}

fn an_object_replaced_after_recording_stays_unnamed() -> TestResult {
    let dir = TempDir::new("replaced")?;
    let fx = fixture(&dir, 0)?;
    let other = fixture(&dir, 1)?;
    // No -r: a root's files are copies made after recording by nature, so
    // only objects at their logged paths are checked.
    let object = dir.join("prog");
    std::fs::copy(&fx.full, &object).ctx("install")?;
    let logged = object.to_string_lossy().into_owned();
    let log = dir.join("log");
    write_log_of(&log, &[Some(&logged)], &fx.pcs)?;
    let (leaves, stderr) = report_under(None, &log)?;
    ensure!(leaves == NAMED, "as recorded: {leaves:?}\n{stderr}");
    // ctime has a clock tick's resolution: let it pass the log's mtime.
    std::thread::sleep(std::time::Duration::from_millis(20));
    // Replaced as a package manager does: another file renamed over it.
    let new = object.with_extension("new");
    std::fs::copy(&other.full, &new).ctx("copy the other build")?;
    std::fs::rename(&new, &object).ctx("rename over")?;
    let (leaves, stderr) = report_under(None, &log)?;
    ensure!(all_unnamed(&leaves), "replaced: {leaves:?}");
    ensure!(
        stderr.contains("changed on disk after the log was written"),
        "said under -v: {stderr}"
    );
    Ok(())
}

/// A program spending its time in `pmc_fixture_spin`; `variant` changes
/// its code, and so its build id.
fn spin_source(variant: u32) -> String {
    format!(
        "__attribute__((noinline)) long pmc_fixture_spin(long n) {{\n\
         volatile long s = 0; for (long i = 0; i < n; i++) s += i ^ {variant}; return s; }}\n\
         int main(void) {{ return pmc_fixture_spin(150000000L) == 1; }}\n"
    )
}

/// ctime is no content change: a program sampled, then `chmod`, a hard
/// link (perf's `~/.debug` cache makes one) and a `chown` to its own
/// owner (a backup tool's restore) keep its names; its content rewritten
/// by another build (a new mtime, no build id recorded) blanks them.
fn a_status_change_keeps_names_a_new_build_does_not() -> TestResult {
    use std::os::unix::fs::MetadataExt as _;
    let dir = TempDir::new("status-change")?;
    let prog = dir.join("spin");
    compile_source(&dir, "spin0", &spin_source(0), &prog)?;
    let log = dir.join("spin.pmclog");
    run(
        PMCSTAT,
        &[
            "-q",
            "-P",
            "cpu-clock,usr",
            "-O",
            &log.to_string_lossy(),
            "--",
            &prog.to_string_lossy(),
        ],
    )?;
    let named = |what: &str| -> TestResult {
        let (leaves, stderr) = report_under(None, &log)?;
        ensure!(
            leaves.iter().any(|l| l == "pmc_fixture_spin"),
            "{what}: the program's leaves are {leaves:?}\n{stderr}"
        );
        Ok(())
    };
    named("as recorded")?;
    // Past the log's last write, at any clock tick's resolution.
    std::thread::sleep(std::time::Duration::from_millis(20));
    let mode = std::fs::metadata(&prog).ctx("stat")?.mode();
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(&prog, std::fs::Permissions::from_mode(0o700)).ctx("chmod")?;
    named("after chmod 700")?;
    std::fs::set_permissions(&prog, std::fs::Permissions::from_mode(mode & 0o7777))
        .ctx("chmod back")?;
    std::fs::hard_link(&prog, dir.join("spin.link")).ctx("ln")?;
    named("after a hard link")?;
    let meta = std::fs::metadata(&prog).ctx("stat")?;
    std::os::unix::fs::chown(&prog, Some(meta.uid()), Some(meta.gid())).ctx("chown")?;
    named("after chown to its owner")?;
    let before = std::fs::metadata(&prog).ctx("stat")?;
    ensure!(
        before.ctime() > before.mtime()
            || (before.ctime() == before.mtime() && before.ctime_nsec() > before.mtime_nsec()),
        "the status changes left ctime at the mtime"
    );
    // Another build written over its content, in place (same inode).
    let other = dir.join("spin1");
    compile_source(&dir, "spin1", &spin_source(1), &other)?;
    std::fs::write(&prog, std::fs::read(&other).ctx("read the new build")?)
        .ctx("rewrite the program")?;
    let (leaves, stderr) = report_under(None, &log)?;
    ensure!(
        !leaves
            .iter()
            .any(|l| l == "pmc_fixture_spin" || l == "main")
            && leaves.iter().any(|l| l.starts_with("spin+0x")),
        "a new build still names the old one's samples: {leaves:?}"
    );
    ensure!(
        stderr.contains("changed on disk after the log was written"),
        "said under -v: {stderr}"
    );
    Ok(())
}

/// A perf.data records each sampled object's build id: the object that
/// has it is the one sampled whatever its times say (touched after the
/// recording: still named), and one with another build id is not (a new
/// build written over it, its time set back before the recording: unnamed,
/// and `-v` says why).
fn a_perf_data_build_id_names_its_object_whatever_its_times() -> TestResult {
    let dir = TempDir::new("perf-build-id")?;
    let prog = dir.join("spin");
    compile_source(&dir, "spin0", &spin_source(0), &prog)?;
    let data = dir.join("spin.data");
    run(
        "perf",
        &[
            "record",
            "-q",
            "-e",
            "cpu-clock:u",
            "-o",
            &data.to_string_lossy(),
            "--",
            &prog.to_string_lossy(),
        ],
    )?;
    let set_mtime = |seconds_from_now: i64| -> TestResult {
        let when = std::time::SystemTime::now()
            .checked_add(std::time::Duration::from_secs(
                seconds_from_now.max(0) as u64
            ))
            .and_then(|t| {
                t.checked_sub(std::time::Duration::from_secs(
                    (-seconds_from_now).max(0) as u64
                ))
            })
            .ok_or("a time out of range")?;
        std::fs::File::options()
            .write(true)
            .open(&prog)
            .and_then(|f| f.set_modified(when))
            .ctx("set the program's mtime")
    };
    // Modified "after" the recording: the mtime rule alone would blank it.
    set_mtime(3600)?;
    let (leaves, stderr) = report_under(None, &data)?;
    ensure!(
        leaves.iter().any(|l| l == "pmc_fixture_spin"),
        "touched after recording, the program that has the recorded build id is unnamed: \
         {leaves:?}\n{stderr}"
    );
    // The streamed report (-G alone) takes the build ids too.
    let graph = run(PMCSTAT, &["-R", &data.to_string_lossy(), "-G", "-"])?;
    ensure!(
        text(&graph.stdout).contains("pmc_fixture_spin"),
        "-G alone: {}",
        text(&graph.stdout)
    );
    // Another build over it, dated before the recording.
    let other = dir.join("spin1");
    compile_source(&dir, "spin1", &spin_source(1), &other)?;
    std::fs::write(&prog, std::fs::read(&other).ctx("read the new build")?)
        .ctx("rewrite the program")?;
    set_mtime(-3600)?;
    let (leaves, stderr) = report_under(None, &data)?;
    ensure!(
        !leaves
            .iter()
            .any(|l| l == "pmc_fixture_spin" || l == "main")
            && leaves.iter().any(|l| l.starts_with("spin+0x")),
        "another build, dated before the recording, names the recorded one's samples: {leaves:?}"
    );
    ensure!(stderr.contains("build id"), "said under -v: {stderr}");
    Ok(())
}

fn mini_debuginfo_names_what_dynsym_does_not() -> TestResult {
    let dir = TempDir::new("minidebug")?;
    let fx = fixture(&dir, 0)?;
    let root = dir.join("root");
    let object = install_stripped(&fx.full, &root)?;
    // Fedora's recipe: the symbol table alone, xz-compressed, as
    // .gnu_debugdata of the stripped object.
    let mini = dir.join("mini");
    run(
        "objcopy",
        &[
            "--only-keep-debug",
            "--strip-debug",
            &fx.full.to_string_lossy(),
            &mini.to_string_lossy(),
        ],
    )?;
    run("xz", &["-f", &mini.to_string_lossy()])?;
    run(
        "objcopy",
        &[
            "--add-section",
            &format!(".gnu_debugdata={}.xz", mini.display()),
            &object.to_string_lossy(),
        ],
    )?;
    let log = dir.join("log");
    write_log(&log, None, &fx.pcs)?;
    let (leaves, stderr) = report(&root, &log)?;
    ensure!(leaves == NAMED, "MiniDebugInfo: {leaves:?}\n{stderr}");
    // A section that is not xz data is skipped and said.
    let root = dir.join("bad");
    let object = install_stripped(&fx.full, &root)?;
    let junk = dir.join("junk");
    std::fs::write(&junk, b"not xz").ctx("write junk")?;
    run(
        "objcopy",
        &[
            "--add-section",
            &format!(".gnu_debugdata={}", junk.display()),
            &object.to_string_lossy(),
        ],
    )?;
    write_log(&log, None, &fx.pcs)?;
    let (leaves, stderr) = report(&root, &log)?;
    ensure!(all_unnamed(&leaves), "bad MiniDebugInfo: {leaves:?}");
    ensure!(stderr.contains(".gnu_debugdata"), "said: {stderr}");
    Ok(())
}

/// A program that calls `clock_gettime` 5 million times: most of its time
/// is in the vDSO's `__vdso_clock_gettime`. Built with `cc` in `dir`.
pub fn clock_gettime_loop(dir: &TempDir) -> Result<std::path::PathBuf, libtest_mimic::Failed> {
    let c = dir.join("clock.c");
    std::fs::write(
        &c,
        "#include <time.h>\nint main(void) { struct timespec t; long s = 0;\n\
         for (long i = 0; i < 5000000; i++) { clock_gettime(CLOCK_MONOTONIC, &t); s += t.tv_nsec; }\n\
         return s == 1; }\n",
    )
    .ctx("write C source")?;
    let exe = dir.join("clock");
    run(
        "cc",
        &["-O1", "-o", &exe.to_string_lossy(), &c.to_string_lossy()],
    )?;
    Ok(exe)
}

fn the_vdso_is_named_from_its_image_in_memory() -> TestResult {
    let dir = TempDir::new("vdso")?;
    let exe = clock_gettime_loop(&dir)?;
    let log = dir.path("clock.pmclog");
    run(
        PMCSTAT,
        &[
            "-q",
            "-P",
            "cpu-clock,usr",
            "-O",
            &log,
            "--",
            &exe.to_string_lossy(),
        ],
    )?;
    let out = run(PMCSTAT, &["-R", &log, "-G", "-"])?;
    let graph = text(&out.stdout);
    // glibc's clock_gettime calls the vDSO's, where the loop spends most
    // of its time; the kernel exports it as __vdso_clock_gettime.
    let vdso: Vec<&str> = graph.lines().filter(|l| l.ends_with("@ [vdso]")).collect();
    ensure!(
        vdso.iter()
            .any(|l| l.contains("__vdso_clock_gettime") || l.contains(" clock_gettime")),
        "the vDSO's frames are named: {graph}"
    );
    ensure!(
        !graph.contains("[vdso]+0x"),
        "no unnamed vDSO frame: {graph}"
    );
    Ok(())
}

fn a_vdso_of_another_boot_stays_unnamed() -> TestResult {
    let dir = TempDir::new("vdso-old")?;
    let log = dir.join("old.pmclog");
    let file = std::fs::File::create(&log).ctx("create log")?;
    let mut w = LogWriter::new(file, &pmc::global::this_machine()).ctx("LogWriter::new")?;
    let records = [
        // Started in 1970: long before this boot.
        LogRecord::Initialize {
            version: pmc::log::PMC_VERSION,
            arch: 0,
            tsc_freq: 0,
            time_sec: 1,
            time_nsec: 0,
            cpuid: String::new(),
            marked: false,
        },
        LogRecord::PmcAllocateDyn {
            pmcid: 1,
            event: 0,
            flags: 0,
            name: "cpu-clock".into(),
        },
        LogRecord::MapIn {
            pid: 9,
            start: BIAS,
            path: "[vdso]".into(),
        },
        LogRecord::Callchain {
            pid: 9,
            tid: 9,
            pmcid: 1,
            cpu: 0,
            userspace: true,
            pcs: vec![BIAS + 0x9c0],
        },
    ];
    for (t, r) in records.iter().enumerate() {
        w.write(r, t as u64 + 1).ctx("write record")?;
    }
    w.close().ctx("close log")?;
    let folded = dir.join("old.folded");
    run(
        PMCSTAT,
        &[
            "-R",
            &log.to_string_lossy(),
            "--folded",
            &folded.to_string_lossy(),
        ],
    )?;
    let folded = std::fs::read_to_string(&folded).ctx("read folded")?;
    // Another kernel's vDSO: this one's names would be wrong, the image
    // and offset are not.
    ensure!(folded == "[vdso]+0x9c0 1\n", "{folded}");
    Ok(())
}

fn jit_code_is_named_from_the_processs_perf_map() -> TestResult {
    let dir = TempDir::new("perfmap")?;
    let root = dir.join("root");
    let map = root.join("tmp/perf-9.map");
    mkdirs(&map)?;
    // perf's jit-interface.txt: START SIZE symbolname, hex.
    std::fs::write(
        &map,
        "7f0000001000 40 LazyCompile:*fib app.js:1\n7f0000001040 20 Stub:CEntry\n",
    )
    .ctx("write the perf map")?;
    let log = dir.join("jit.pmclog");
    let file = std::fs::File::create(&log).ctx("create log")?;
    let mut w = LogWriter::new(file, &pmc::global::this_machine()).ctx("LogWriter::new")?;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .ctx("clock")?
        .as_secs();
    let mut records = vec![
        LogRecord::Initialize {
            version: pmc::log::PMC_VERSION,
            arch: 0,
            tsc_freq: 0,
            time_sec: now,
            time_nsec: 0,
            cpuid: String::new(),
            marked: false,
        },
        LogRecord::PmcAllocateDyn {
            pmcid: 1,
            event: 0,
            flags: 0,
            name: "cpu-clock".into(),
        },
    ];
    // No MAP_IN covers them: anonymous executable memory.
    for pc in [0x7f00_0000_1010_u64, 0x7f00_0000_1050, 0x7f00_0000_2000] {
        records.push(LogRecord::Callchain {
            pid: 9,
            tid: 9,
            pmcid: 1,
            cpu: 0,
            userspace: true,
            pcs: vec![pc],
        });
    }
    for (t, r) in records.iter().enumerate() {
        w.write(r, t as u64 + 1).ctx("write record")?;
    }
    w.close().ctx("close log")?;
    let (leaves, stderr) = report(&root, &log)?;
    ensure!(
        leaves == ["0x7f0000002000", "LazyCompile:*fib app.js:1", "Stub:CEntry"],
        "{leaves:?}\n{stderr}"
    );
    Ok(())
}

/// An assembly label (`.globl` without `.type`: STT_NOTYPE, size 0) in
/// `.text` names its pcs, as perf's `elf_sym__is_label` takes it (ld.so's
/// `_start` is one): from the object itself and from its separate debug
/// file, whose `.text` is NOBITS.
fn a_label_in_text_is_named_as_perf_names_it() -> TestResult {
    let dir = TempDir::new("debugsym-label")?;
    let full = dir.join("label");
    compile_source(
        &dir,
        "label",
        "__asm__(\".text\\n.globl pmc_fixture_label\\npmc_fixture_label:\\n\\tnop\\n\\tnop\\n\\tnop\\n\\tret\\n\");\n\
         int main(void) { return 0; }\n",
        &full,
    )?;
    let symbols = text(&run("readelf", &["-sW", &full.to_string_lossy()])?.stdout);
    ensure!(
        symbols
            .lines()
            .any(|l| l.contains(" NOTYPE ") && l.ends_with(" pmc_fixture_label")),
        "the fixture's label is not STT_NOTYPE:\n{symbols}"
    );
    let pc = nm_address(&full, "pmc_fixture_label")? - first_text_page(&full)? + BIAS + 2;
    // In the object itself.
    let root = dir.join("root");
    let object = root.join("usr/bin/prog");
    mkdirs(&object)?;
    std::fs::copy(&full, &object).ctx("copy the program")?;
    let log = dir.join("log");
    write_log(&log, None, &[pc])?;
    let (leaves, stderr) = report(&root, &log)?;
    ensure!(
        leaves == ["pmc_fixture_label"],
        "from the object: {leaves:?}\n{stderr}"
    );
    // Stripped, from its debug file by build id.
    let root = dir.join("root2");
    install_stripped(&full, &root)?;
    keep_debug(&full, &build_id_path(&root, &build_id(&full)?))?;
    let (leaves, stderr) = report(&root, &log)?;
    ensure!(
        leaves == ["pmc_fixture_label"],
        "from the debug file: {leaves:?}\n{stderr}"
    );
    Ok(())
}
