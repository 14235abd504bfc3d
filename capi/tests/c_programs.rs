//! Compiles the C programs of `tests/c/` with `cc` against `include/` and
//! the libpmc that cargo built for this test run, runs them, and checks
//! what they report. Skipped, with the reason, where the machine lacks
//! what a program needs (a C compiler, CPU-wide counting rights, …),
//! judged by looking at the machine, never by the library failing.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

// Linked so that cargo rebuilds libpmc.so/.a before this test runs.
use pmc as _;

use libtest_mimic::{Arguments, Completion, Failed, Trial};
use pmc_core::probe::{Environment, Requirement, Tracefs, Verdict};

/// The gate's own look at the machine (plain std reads, no project code).
#[allow(dead_code)]
#[path = "../../tests/live/machine.rs"]
mod machine;

type TestResult = Result<(), Failed>;

const INCLUDE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/include");
const SOURCES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/c");

/// The directory holding the libpmc.so/libpmc.a built with this test
/// (cargo puts the cdylib/staticlib of the package next to its tests).
fn lib_dir() -> Result<PathBuf, Failed> {
    let exe = std::env::current_exe().map_err(|e| format!("current_exe: {e}"))?;
    let deps = exe.parent().ok_or("the test binary has no directory")?;
    for dir in [deps.to_path_buf(), deps.join("..")] {
        if dir.join("libpmc.so").exists() && dir.join("libpmc.a").exists() {
            return Ok(dir);
        }
    }
    Err(format!("libpmc.so/libpmc.a not found next to {}", exe.display()).into())
}

/// The C compiler, if the machine has one.
fn compiler() -> Option<String> {
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    Command::new(&cc)
        .arg("--version")
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|_| cc)
}

fn run_checked(cmd: &mut Command, what: &str) -> Result<Output, Failed> {
    let out = cmd.output().map_err(|e| format!("{what}: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "{what} failed ({}):\n--- stdout\n{}--- stderr\n{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
        .into());
    }
    Ok(out)
}

/// How to link a program.
#[derive(Clone, Copy)]
enum Link {
    Shared,
    Static,
}

/// Compiles `tests/c/<name>.c` into `dir`.
fn build(name: &str, dir: &Path, link: Link) -> Result<PathBuf, Failed> {
    let cc = compiler().ok_or("no C compiler")?;
    let libs = lib_dir()?;
    let exe = dir.join(name);
    let mut cmd = Command::new(cc);
    cmd.args([
        "-std=gnu11",
        "-Wall",
        "-Wextra",
        "-Werror",
        "-O1",
        "-I",
        INCLUDE,
    ])
    .arg(Path::new(SOURCES).join(format!("{name}.c")))
    .arg("-o")
    .arg(&exe);
    match link {
        Link::Shared => {
            // An RPATH (not RUNPATH) to this very build: cargo's
            // LD_LIBRARY_PATH may name an older uplifted copy.
            cmd.arg("-L")
                .arg(&libs)
                .arg(format!("-Wl,--disable-new-dtags,-rpath,{}", libs.display()));
            cmd.args(["-lpmc", "-lpthread"]);
        }
        Link::Static => {
            // The libraries a Rust staticlib needs (as libpmc.pc's Libs.private).
            cmd.arg(libs.join("libpmc.a"));
            cmd.args([
                "-lgcc_s",
                "-lutil",
                "-lrt",
                "-lpthread",
                "-lm",
                "-ldl",
                "-lc",
            ]);
        }
    }
    run_checked(&mut cmd, &format!("compiling {name}.c"))?;
    Ok(exe)
}

/// Builds and runs a program, returning its stdout.
fn build_and_run(name: &str, link: Link, args: &[&str]) -> Result<String, Failed> {
    let dir = tempfile::tempdir().map_err(|e| format!("tempdir: {e}"))?;
    let exe = build(name, dir.path(), link)?;
    let args: Vec<String> = args
        .iter()
        .map(|a| a.replace("{tmp}", &dir.path().display().to_string()))
        .collect();
    let out = run_checked(
        Command::new(&exe).args(&args).env_remove("LD_LIBRARY_PATH"),
        &format!("running {name}"),
    )?;
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

fn counting() -> TestResult {
    let out = build_and_run("counting", Link::Shared, &[])?;
    println!("{out}");
    Ok(())
}

fn counting_static() -> TestResult {
    let out = build_and_run("counting", Link::Static, &[])?;
    println!("{out}");
    Ok(())
}

fn hw_counting() -> TestResult {
    println!("{}", build_and_run("hw_counting", Link::Shared, &[])?);
    Ok(())
}

fn counting_sc() -> TestResult {
    println!("{}", build_and_run("counting_sc", Link::Shared, &[])?);
    Ok(())
}

fn errno_rules() -> TestResult {
    let out = build_and_run("errno", Link::Shared, &[])?;
    if !out.contains("all errno rules hold") {
        return Err(format!("errno printed {out:?}").into());
    }
    Ok(())
}

fn machine() -> TestResult {
    println!("{}", build_and_run("machine", Link::Shared, &[])?);
    Ok(())
}

fn log_on_fd() -> TestResult {
    println!(
        "{}",
        build_and_run("log_fd", Link::Shared, &["{tmp}/pmc.log"])?
    );
    Ok(())
}

fn user_stack() -> TestResult {
    println!(
        "{}",
        build_and_run("user_stack", Link::Shared, &["{tmp}/pmc.log"])?
    );
    Ok(())
}

fn log_procexit() -> TestResult {
    println!(
        "{}",
        build_and_run("log_procexit", Link::Shared, &["{tmp}/pmc.log"])?
    );
    Ok(())
}

fn log_in_memory() -> TestResult {
    println!(
        "{}",
        build_and_run("log_memory", Link::Shared, &["{tmp}/pmc.log"])?
    );
    Ok(())
}

/// `PMCLOG_PROCEXEC_ENTRYADDR`: a FreeBSD 12–13 program reads
/// `pl_entryaddr` (sys/sys/pmclog.h at 0x09030000: one `pl_start`); a 14
/// log's `pl_base`/`pl_dyn` come as `pl_baseaddr`/`pl_dynaddr`.
fn procexec_entryaddr() -> TestResult {
    println!(
        "{}",
        build_and_run("procexec_entryaddr", Link::Shared, &[])?
    );
    Ok(())
}

fn threads() -> TestResult {
    println!("{}", build_and_run("threads", Link::Shared, &[])?);
    Ok(())
}

/// Issue 32 item 13: a system sampling log on a pipe whose reader stops
/// reading; pmc_stop, pmc_release and pmc_close_logfile return within the
/// program's 30 s watchdog, and the dropped records are counted. The log
/// buffers are set small (hwpmc's tunables, as the environment gives
/// them) so that they fill at once.
fn log_pipe_unread() -> TestResult {
    let dir = tempfile::tempdir().map_err(|e| format!("tempdir: {e}"))?;
    let exe = build("log_pipe_unread", dir.path(), Link::Shared)?;
    let out = run_checked(
        Command::new(&exe)
            .env_remove("LD_LIBRARY_PATH")
            .env("PMC_NBUFFERS_PCPU", "1")
            .env("PMC_LOGBUFFERSIZE", "16"),
        "running log_pipe_unread",
    )?;
    println!("{}", String::from_utf8_lossy(&out.stdout));
    Ok(())
}

/// pmc(3) calls before pmc_init fail with libpmc.c's errnos.
fn init_required() -> TestResult {
    println!("{}", build_and_run("init_required", Link::Shared, &[])?);
    Ok(())
}

/// Builds `tests/c/<name>.c` and runs it under valgrind's memcheck:
/// any invalid read or write, or any use of an uninitialised byte
/// (`--track-origins` says where it came from), fails the run, as does
/// the program's own exit status. Returns the program's stdout.
fn under_valgrind(name: &str, args: &[&str]) -> Result<String, Failed> {
    let dir = tempfile::tempdir().map_err(|e| format!("tempdir: {e}"))?;
    let exe = build(name, dir.path(), Link::Shared)?;
    let args: Vec<String> = args
        .iter()
        .map(|a| a.replace("{tmp}", &dir.path().display().to_string()))
        .collect();
    let out = run_checked(
        Command::new("valgrind")
            .args([
                "--tool=memcheck",
                // Distinct from any exit status the programs use.
                "--error-exitcode=99",
                "--track-origins=yes",
                "--leak-check=no",
                "-q",
            ])
            .arg(&exe)
            .args(&args)
            .env_remove("LD_LIBRARY_PATH"),
        &format!("valgrind {name} (exit 99: memcheck found errors, see stderr)"),
    )?;
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Issue 32 item 14, under valgrind's memcheck: no invalid read of a
/// PMCALLOCATE's event name after later records and pmclog_close, no
/// uninitialised byte in a struct the library fills.
fn valgrind_lifetimes() -> TestResult {
    println!("{}", under_valgrind("valgrind_lifetimes", &[])?);
    Ok(())
}

/// The C programs of this suite under memcheck too: clean of invalid
/// reads and writes and of uninitialised bytes, and passing their own
/// checks. Left out: `counting` and `user_stack`, whose checks measure
/// the program as it runs natively (valgrind's CPU time is not the
/// program's, and a sample's stack is valgrind's translated code), and
/// `threads` (73 s) and `pmcids` (29 s) for time; each ran clean of
/// memcheck errors by hand (issue 32). The programs that count need
/// paranoid ≤ 1: [`valgrind_counting_programs`].
fn valgrind_log_programs() -> TestResult {
    let pmu_name = pmu_names().into_iter().next();
    let pmu_args: Vec<&str> = pmu_name.as_deref().into_iter().collect();
    all_under_valgrind(&[
        ("log_memory", &["{tmp}/pmc.log"][..]),
        ("log_raw", &["{tmp}/pmc.log"][..]),
        ("machine", &[][..]),
        ("procexec_entryaddr", &[][..]),
        ("events", &[][..]),
        ("pmu", &pmu_args[..]),
        ("pmccontrol_like", &["-L"][..]),
        ("pmccontrol_like", &["-s"][..]),
        ("freebsd_values", &[][..]),
        ("layout", &[][..]),
    ])
}

/// The programs that count and log under memcheck (paranoid ≤ 1, as
/// their own tests).
fn valgrind_counting_programs() -> TestResult {
    all_under_valgrind(&[
        // It allocates a bare cpu-clock (kernel mode too), as its own test.
        ("init_required", &[][..]),
        ("errno", &[][..]),
        ("log_fd", &["{tmp}/pmc.log"][..]),
        ("log_procexit", &["{tmp}/pmc.log"][..]),
    ])
}

/// [`under_valgrind`] for each program, two at a time (one per core of
/// the CI machine: memcheck is slow); every failure is reported.
fn all_under_valgrind(programs: &[(&str, &[&str])]) -> TestResult {
    let outcomes: Vec<Result<String, String>> = std::thread::scope(|scope| {
        let mut outcomes = Vec::new();
        for pair in programs.chunks(2) {
            let running: Vec<_> = pair
                .iter()
                .map(|&(name, args)| {
                    scope.spawn(move || {
                        under_valgrind(name, args)
                            .map(|out| format!("{name}: {out}"))
                            .map_err(|e| format!("{name}: {}", e.message().unwrap_or("failed")))
                    })
                })
                .collect();
            for run in running {
                outcomes.push(run.join().unwrap_or_else(|_| Err("panicked".into())));
            }
        }
        outcomes
    });
    let mut failed = Vec::new();
    for outcome in outcomes {
        match outcome {
            Ok(out) => print!("{out}"),
            Err(e) => failed.push(e),
        }
    }
    if failed.is_empty() {
        Ok(())
    } else {
        Err(failed.join("\n").into())
    }
}

/// The C headers against FreeBSD's amd64 layout (and so against the Rust
/// structs, which `src/layout.rs` checks against the same file).
fn layout() -> TestResult {
    let out = build_and_run("layout", Link::Shared, &[])?;
    let expected = pmc_layout_lines(include_str!("layout_freebsd_amd64.txt"));
    let got = pmc_layout_lines(&out);
    let mut problems = Vec::new();
    for line in &expected {
        if !got.contains(line) {
            let key = line.rsplit_once(' ').map(|(k, _)| k);
            let actual = got
                .iter()
                .find(|g| g.rsplit_once(' ').map(|(k, _)| k) == key)
                .map(String::as_str)
                .unwrap_or("missing");
            problems.push(format!("expected `{line}`, the header gives `{actual}`"));
        }
    }
    if got.len() != expected.len() {
        problems.push(format!(
            "layout.c printed {} lines, the FreeBSD table has {}",
            got.len(),
            expected.len()
        ));
    }
    if !problems.is_empty() {
        return Err(problems.join("\n").into());
    }
    println!("{} sizeof/offsetof values match FreeBSD amd64", got.len());
    Ok(())
}

fn pmc_layout_lines(text: &str) -> Vec<String> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(str::to_string)
        .collect()
}

/// A hardware event without a core PMU: −1 and an errno from pmc_allocate,
/// and not a byte printed (the program itself prints nothing).
fn no_pmu_hardware_event() -> TestResult {
    let dir = tempfile::tempdir().map_err(|e| format!("tempdir: {e}"))?;
    let exe = build("nopmu", dir.path(), Link::Shared)?;
    let out = Command::new(&exe)
        .env_remove("LD_LIBRARY_PATH")
        .output()
        .map_err(|e| format!("running nopmu: {e}"))?;
    if !out.stdout.is_empty() || !out.stderr.is_empty() {
        return Err(format!(
            "the library printed: stdout {:?}, stderr {:?}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
        .into());
    }
    match out.status.code() {
        Some(0) => Ok(()),
        Some(10) => Err("pmc_allocate(\"instructions\") succeeded without a core PMU".into()),
        Some(11) => Err("pmc_allocate returned -1 but left errno 0".into()),
        Some(20) => Err("pmc_allocate failed but wrote an id".into()),
        Some(30) => Err("pmc_allocate failed without a message for pmc_last_error".into()),
        Some(40) => Err("pmc_init failed".into()),
        other => Err(format!("nopmu exited with {other:?}").into()),
    }
}

/// `pkg-config --cflags --libs libpmc` with the generated libpmc.pc builds
/// and runs a program.
fn pkg_config() -> TestResult {
    let libs = lib_dir()?;
    // The .pc sits in <profile>/pkgconfig; tests run from <profile>/deps.
    let pcdir = [libs.join("pkgconfig"), libs.join("../pkgconfig")]
        .into_iter()
        .find(|d| d.join("libpmc.pc").exists())
        .ok_or("libpmc.pc was not generated next to the libraries")?;
    let flags = run_checked(
        Command::new("pkg-config")
            .env("PKG_CONFIG_PATH", &pcdir)
            // `cargo test` leaves the libraries in deps/ (only `cargo build`
            // copies them to the libdir the .pc names): point libdir there.
            .arg(format!("--define-variable=libdir={}", libs.display()))
            .args(["--cflags", "--libs", "libpmc"]),
        "pkg-config",
    )?;
    let flags = String::from_utf8_lossy(&flags.stdout).into_owned();
    let dir = tempfile::tempdir().map_err(|e| format!("tempdir: {e}"))?;
    let exe = dir.path().join("machine");
    let cc = compiler().ok_or("no C compiler")?;
    run_checked(
        Command::new(cc)
            .arg(Path::new(SOURCES).join("machine.c"))
            .arg("-o")
            .arg(&exe)
            .args(flags.split_whitespace()),
        "compiling machine.c with pkg-config's flags",
    )?;
    run_checked(
        Command::new(&exe).env_remove("LD_LIBRARY_PATH"),
        "running machine (pkg-config build)",
    )?;
    Ok(())
}

/// README.md holds the C example; docs/c-api.md the lines that build it
/// against a build tree (its "Using from C" section).
const DOCUMENTS: [(&str, &str); 2] = [
    ("README.md", include_str!("../../README.md")),
    ("docs/c-api.md", include_str!("../../docs/c-api.md")),
];

/// The ```c blocks of the documents and the command lines of the ```sh
/// block of docs/c-api.md's "Using from C" section (comments dropped).
fn readme_c() -> (Vec<String>, Vec<String>) {
    let (mut programs, mut commands) = (Vec::new(), Vec::new());
    for (name, text) in DOCUMENTS {
        let mut section = "";
        let mut block: Option<(&str, String)> = None;
        for line in text.lines() {
            let trimmed = line.trim();
            if let Some(fence) = trimmed.strip_prefix("```") {
                match block.take() {
                    Some(("c", text)) => programs.push(text),
                    Some(_) => {}
                    None => block = Some((fence, String::new())),
                }
                continue;
            }
            match &mut block {
                Some(("c", text)) => {
                    text.push_str(line);
                    text.push('\n');
                }
                Some(("sh", _)) if name == "docs/c-api.md" && section == "Using from C" => {
                    if !trimmed.is_empty() && !trimmed.starts_with('#') {
                        let command = trimmed.split_once(" #").map_or(trimmed, |(c, _)| c);
                        commands.push(command.trim().to_string());
                    }
                }
                Some(_) => {}
                None => {
                    if let Some(title) = line.strip_prefix("## ") {
                        section = title.trim();
                    }
                }
            }
        }
    }
    (programs, commands)
}

/// README's C program, built by each `cc` line of docs/c-api.md (as written,
/// in one shell, so `export` carries) and run. The scratch directory looks
/// like the workspace after `cargo build --release -p hwpmc-capi` (which
/// `.ci/run` runs): `capi/include` is the headers, `target/release` this
/// build's libpmc.so/.a and its libpmc.pc, whose `libdir` is pointed there
/// (`cargo test` leaves the libraries in deps/, not where the .pc says).
fn readme_program() -> TestResult {
    let (programs, commands) = readme_c();
    let [program] = programs.as_slice() else {
        return Err(format!(
            "README.md and docs/c-api.md have {} C programs; this test builds exactly one",
            programs.len()
        )
        .into());
    };
    let builds: Vec<&String> = commands
        .iter()
        .filter(|c| c.contains("cc prog.c"))
        .collect();
    if builds.len() < 3 {
        return Err(format!("docs/c-api.md's cc lines not found: {commands:?}").into());
    }
    let libs = lib_dir()?;
    let pc = [libs.join("pkgconfig"), libs.join("../pkgconfig")]
        .into_iter()
        .map(|d| d.join("libpmc.pc"))
        .find(|p| p.exists())
        .ok_or("libpmc.pc was not generated next to the libraries")?;
    let dir = tempfile::tempdir().map_err(|e| format!("tempdir: {e}"))?;
    let root = dir.path();
    let release = root.join("target/release");
    std::fs::create_dir_all(release.join("pkgconfig")).map_err(|e| format!("mkdir: {e}"))?;
    std::fs::create_dir_all(root.join("capi")).map_err(|e| format!("mkdir: {e}"))?;
    let link = |from: &Path, to: &Path| {
        std::os::unix::fs::symlink(from, to)
            .map_err(|e| Failed::from(format!("symlink {}: {e}", to.display())))
    };
    link(Path::new(INCLUDE), &root.join("capi/include"))?;
    for lib in ["libpmc.so", "libpmc.so.5", "libpmc.a"] {
        link(&libs.join(lib), &release.join(lib))?;
    }
    let pc_text = std::fs::read_to_string(&pc).map_err(|e| format!("{}: {e}", pc.display()))?;
    let pc_text: String = pc_text
        .lines()
        .map(|l| match l.strip_prefix("libdir=") {
            Some(_) => format!("libdir={}\n", release.display()),
            None => format!("{l}\n"),
        })
        .collect();
    std::fs::write(release.join("pkgconfig/libpmc.pc"), pc_text)
        .map_err(|e| format!("write libpmc.pc: {e}"))?;
    std::fs::write(root.join("prog.c"), program).map_err(|e| format!("prog.c: {e}"))?;
    // Warnings are defects in README's program too.
    let cc = compiler().ok_or("no C compiler")?;
    run_checked(
        Command::new(&cc)
            .args(["-std=gnu11", "-Wall", "-Wextra", "-Werror", "-fsyntax-only"])
            .arg("-I")
            .arg(INCLUDE)
            .arg(root.join("prog.c")),
        "README's C program with -Wall -Wextra -Werror",
    )?;
    // cargo's lines are cargo's (the libraries are this test's build).
    let mut script = String::from("set -e\n");
    for command in commands.iter().filter(|c| !c.starts_with("cargo ")) {
        let shown = command.replace('\'', "'\\''");
        script.push_str(&format!("printf '%s\\n' '$ {shown}'\n{command}\n"));
        if command.contains("cc prog.c") {
            script.push_str("./a.out\nrm a.out\n");
        }
    }
    let out = run_checked(
        Command::new("sh")
            .args(["-c", &script])
            .current_dir(root)
            .env("PWD", root)
            .env("CC", &cc)
            .env_remove("PKG_CONFIG_PATH")
            .env_remove("LD_LIBRARY_PATH"),
        "docs/c-api.md's build lines",
    )?;
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    println!("{stdout}");
    let counts: Vec<u64> = stdout
        .lines()
        .filter_map(|l| l.strip_suffix(" ns of user-mode CPU")?.parse().ok())
        .collect();
    if counts.len() != builds.len() || counts.contains(&0) {
        return Err(format!(
            "expected a non-zero count from each of the {} builds, got {counts:?}:\n{stdout}",
            builds.len()
        )
        .into());
    }
    Ok(())
}

/// `pmc_name_of_event`, the `PMC_EV_*`, `PMC_ID_*` and `PMC_OP_*` values.
fn events() -> TestResult {
    let out = build_and_run("events", Link::Shared, &[])?;
    if out.trim() != "events ok" {
        return Err(format!("events printed {out:?}").into());
    }
    Ok(())
}

/// The names libpmc's pmu functions cover here: the raw class's listing,
/// pmcstat's names for the core PMU (its placeholder `r<hex config>` is
/// not a name).
fn pmu_names() -> Vec<String> {
    pmc_core::event_names_of_class(&pmc_core::Class::Raw)
        .unwrap_or_default()
        .into_iter()
        .filter(|n| !n.starts_with("r<"))
        .collect()
}

/// The text between `--- <from>` and the next `--- ` line.
fn section<'a>(out: &'a str, from: &str) -> Vec<&'a str> {
    out.lines()
        .skip_while(|l| *l != format!("--- {from}"))
        .skip(1)
        .take_while(|l| !l.starts_with("--- "))
        .collect()
}

/// The pmu-events functions agree with the event list pmcstat uses:
/// libpmc_pmu_util.c's formats ("\t%s\n" per name; "name: %s\n" first in
/// the full listing), enabled exactly where there are names.
fn pmu_functions() -> TestResult {
    let names = pmu_names();
    let args: Vec<&str> = names.first().map(String::as_str).into_iter().collect();
    let out = build_and_run("pmu", Link::Shared, &args)?;
    let enabled = format!("enabled {}", u8::from(!names.is_empty()));
    if out.lines().next() != Some(enabled.as_str()) {
        return Err(format!("expected `{enabled}` first:\n{out}").into());
    }
    let want: Vec<String> = names.iter().map(|n| format!("\t{n}")).collect();
    let got = section(&out, "counters");
    if got != want {
        return Err(format!(
            "pmc_pmu_print_counters(NULL) printed {} lines, the list has {}:\n{out}",
            got.len(),
            want.len()
        )
        .into());
    }
    if let Some(first) = names.first() {
        let full = section(&out, "full");
        if full.first().copied() != Some(format!("name: {first}").as_str()) {
            return Err(format!("pmc_pmu_print_counter_full({first}) printed {full:?}").into());
        }
    }
    println!("{} pmu names, {enabled}", names.len());
    Ok(())
}

/// This build's pmccontrol, built by cargo (same profile and target
/// directory as this test, so it is current) beside the libraries. Where
/// cargo cannot run (e.g. the matrix's unprivileged user cannot take the
/// target directory's lock), the binary already there is used, and said.
fn pmccontrol() -> Result<PathBuf, Failed> {
    let libs = lib_dir()?;
    let profile_dir = if libs.ends_with("deps") {
        libs.parent().map(Path::to_path_buf).unwrap_or(libs.clone())
    } else {
        libs.clone()
    };
    let exe = profile_dir.join("pmccontrol");
    let profile = match profile_dir.file_name().and_then(|n| n.to_str()) {
        Some("debug") | None => "dev".to_string(),
        Some(other) => other.to_string(),
    };
    let mut cmd = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    cmd.args([
        "build",
        "-q",
        "-p",
        "hwpmc-tools",
        "--bin",
        "pmccontrol",
        "--profile",
    ])
    .arg(&profile)
    .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/.."));
    if let Some(target) = profile_dir.parent() {
        cmd.arg("--target-dir").arg(target);
    }
    match run_checked(&mut cmd, "building pmccontrol") {
        Ok(_) => {}
        Err(e) if exe.exists() => {
            println!("note: using the pmccontrol already built ({e:?})");
        }
        Err(e) => return Err(e),
    }
    if !exe.exists() {
        return Err(format!("pmccontrol not found at {}", exe.display()).into());
    }
    Ok(exe)
}

fn run_pmccontrol(arg: &str) -> Result<String, Failed> {
    let exe = pmccontrol()?;
    let out = run_checked(Command::new(exe).arg(arg), &format!("pmccontrol {arg}"))?;
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

fn line_diff(ours: &str, theirs: &str) -> Option<String> {
    let (a, b): (Vec<&str>, Vec<&str>) = (ours.lines().collect(), theirs.lines().collect());
    let first = (0..a.len().max(b.len())).find(|&i| a.get(i) != b.get(i))?;
    Some(format!(
        "line {}: the C program printed {:?}, pmccontrol {:?} ({} and {} lines)",
        first + 1,
        a.get(first),
        b.get(first),
        a.len(),
        b.len()
    ))
}

/// `-L` of our pmccontrol.c-like program (pmcc_do_list_events: on amd64
/// pmc_pmu_print_counters(NULL) where pmc_pmu_enabled(), elsewhere the
/// class listing) is `pmccontrol -L`, line for line.
fn pmccontrol_list_events() -> TestResult {
    let c = build_and_run("pmccontrol_like", Link::Shared, &["-L"])?;
    let tool = run_pmccontrol("-L")?;
    if let Some(d) = line_diff(&c, &tool) {
        return Err(d.into());
    }
    println!("{} lines alike", c.lines().count());
    Ok(())
}

/// The class libpmc's `pmc_name_of_class` names a core PMU's rows by, from
/// the CPU as the machine describes it (not from the library or the C
/// program): FreeBSD's sys/sys/pmc.h `__PMC_CLASSES()` lists
/// `__PMC_CLASS(K8, 0x02, "AMD K8 performance counters")`,
/// `__PMC_CLASS(IAP, 0x07, "Intel Core...Atom, programmable")` and
/// `__PMC_CLASS(ARMV8, 0x11, "ARMv8")`, and libpmc.c names a class by its
/// symbol (`#S`). hwpmc's amd64 drivers: hwpmc_amd.c for AMD and Hygon
/// (K8), hwpmc_intel.c/hwpmc_core.c for Intel (IAP); arm64's hwpmc_arm64.c
/// (ARMV8).
fn core_class() -> Result<&'static str, Failed> {
    if cfg!(target_arch = "aarch64") {
        return Ok("ARMV8");
    }
    let cpuinfo =
        std::fs::read_to_string("/proc/cpuinfo").map_err(|e| format!("/proc/cpuinfo: {e}"))?;
    let vendor = cpuinfo
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            (k.trim() == "vendor_id").then(|| v.trim().to_string())
        })
        .unwrap_or_default();
    match vendor.as_str() {
        "GenuineIntel" => Ok("IAP"),
        "AuthenticAMD" | "HygonGenuine" => Ok("K8"),
        other => Err(format!("PMC rows on a CPU of vendor {other:?}: which class?").into()),
    }
}

/// `-l` in pmccontrol.c's format (pmcc_do_list_state): the first line
/// "%d %s CPUs present, with %d PMCs per CPU", then per CPU "#CPU %d:"
/// and the column header, built here from the library's own answers, each
/// free row's class from the CPU's vendor ([`core_class`]); and the same
/// text as `pmccontrol -l`.
fn pmccontrol_list_state() -> TestResult {
    let c = build_and_run("pmccontrol_like", Link::Shared, &["-l"])?;
    let info = pmc_core::cpuinfo().map_err(|e| format!("cpuinfo: {e}"))?;
    let cputype = pmc::names::cputype(pmc_core::global::this_machine().cputype)
        .map_err(|f| f.message)?
        .to_string_lossy()
        .into_owned();
    let mut want = vec![format!(
        "{} {} CPUs present, with {} PMCs per CPU",
        info.ncpu, cputype, info.npmc
    )];
    for cpu in 0..info.ncpu {
        want.push(format!("#CPU {cpu}:"));
        want.push("#N  NAME             CLASS  STATE    ROW-DISP".into());
        // Rows: " %-2d %-16s %-6s %-8s %-10s"; none allocated here, so
        // each row of pmc_npmc(cpu) is FREE.
        for n in 0..pmc_core::npmc(cpu).unwrap_or(0) {
            let class = core_class()?;
            want.push(format!(
                " {n:<2} {:<16} {class:<6} {:<8} {:<10}",
                "", "ENABLED", "FREE"
            ));
        }
    }
    let got: Vec<&str> = c.lines().collect();
    if got != want {
        return Err(format!("-l printed\n{c}expected\n{}", want.join("\n")).into());
    }
    let tool = run_pmccontrol("-l")?;
    if let Some(d) = line_diff(&c, &tool) {
        return Err(d.into());
    }
    Ok(())
}

/// `-s` in pmccontrol.c's format (pmcc_show_statistics: "%-40s %d\n" per
/// statistic, in its order).
fn pmccontrol_statistics() -> TestResult {
    let c = build_and_run("pmccontrol_like", Link::Shared, &["-s"])?;
    let labels = [
        "interrupts processed:",
        "non-PMC interrupts:",
        "sampling stalls due to space shortages:",
        "system calls:",
        "system calls with errors:",
        "buffer requests:",
        "buffer requests failed:",
        "sampling log sweeps:",
    ];
    let lines: Vec<&str> = c.lines().collect();
    if lines.len() != labels.len() {
        return Err(format!("-s printed {} lines:\n{c}", lines.len()).into());
    }
    for (line, label) in lines.iter().zip(labels) {
        let value = line.get(41..).unwrap_or("");
        if line.get(..41) != Some(format!("{label:<40} ").as_str()) || value.parse::<i64>().is_err()
        {
            return Err(format!("`{line}` is not \"%-40s %d\" of {label:?}").into());
        }
    }
    Ok(())
}

/// pl_data is each record as written (sys/sys/pmclog.h structs).
fn log_raw() -> TestResult {
    println!(
        "{}",
        build_and_run("log_raw", Link::Shared, &["{tmp}/pmc.log"])?
    );
    Ok(())
}

/// The function names `header` declares (`type name(` at a line start,
/// after a tab or `*`).
/// Our headers' values against FreeBSD's, transcribed in
/// `freebsd_values.c` from the 0x0A000000 tree (cited there by file and
/// macro), and the X-macro lists expanded as pmcstat and pmccontrol do.
fn freebsd_values() -> TestResult {
    let out = build_and_run("freebsd_values", Link::Shared, &[])?;
    if out.trim() != "freebsd values ok" {
        return Err(format!("freebsd_values printed {out:?}").into());
    }
    Ok(())
}

/// Each pmcid `pmc_allocate` returns decodes with FreeBSD's macros to the
/// PMC's CPU, mode, class (as `pmc_pmcinfo` reports it) and its own row.
fn pmcids() -> TestResult {
    let out = build_and_run("pmcids", Link::Shared, &["instructions"])?;
    println!("{out}");
    for want in ["task-clock TC", "task-clock TS", "pmcids ok"] {
        if !out.lines().any(|l| l == want) {
            return Err(format!("expected a line `{want}`:\n{out}").into());
        }
    }
    Ok(())
}

/// A C++ program including <pmc.h> and <pmclog.h>, built with
/// `g++ -Wall -Wextra -Werror`, runs.
fn cxx_headers() -> TestResult {
    let dir = tempfile::tempdir().map_err(|e| format!("tempdir: {e}"))?;
    let libs = lib_dir()?;
    let exe = dir.path().join("cxx_headers");
    let cxx = std::env::var("CXX").unwrap_or_else(|_| "g++".into());
    run_checked(
        Command::new(&cxx)
            .args([
                "-std=c++17",
                "-Wall",
                "-Wextra",
                "-Werror",
                "-O1",
                "-I",
                INCLUDE,
            ])
            .arg(Path::new(SOURCES).join("cxx_headers.cc"))
            .arg("-o")
            .arg(&exe)
            .arg("-L")
            .arg(&libs)
            .arg(format!("-Wl,--disable-new-dtags,-rpath,{}", libs.display()))
            .args(["-lpmc", "-lpthread"]),
        &format!("compiling cxx_headers.cc with {cxx}"),
    )?;
    let out = run_checked(
        Command::new(&exe).env_remove("LD_LIBRARY_PATH"),
        "running cxx_headers",
    )?;
    let out = String::from_utf8_lossy(&out.stdout);
    if out.trim() != "c++ ok" {
        return Err(format!("cxx_headers printed {out:?}").into());
    }
    Ok(())
}

fn declared_functions(header: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in header.lines() {
        if line.starts_with([' ', '\t', '#', '/', '*', '}']) || !line.contains('(') {
            continue;
        }
        let before = &line[..line.find('(').unwrap_or(0)];
        let name = before
            .rsplit(|c: char| c.is_whitespace() || c == '*')
            .next()
            .unwrap_or("");
        if name.starts_with("pmc") {
            out.push(name.to_string());
        }
    }
    out
}

/// libpmc.so exports its API and nothing else: exactly the functions
/// pmc.h and pmclog.h declare (`nm -D --defined-only`).
fn exported_symbols() -> TestResult {
    let libs = lib_dir()?;
    let out = run_checked(
        Command::new("nm")
            .args(["-D", "--defined-only"])
            .arg(libs.join("libpmc.so")),
        "nm -D libpmc.so",
    )?;
    let mut exported: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().nth(2).map(str::to_string))
        .collect();
    exported.sort();
    let mut declared = declared_functions(include_str!("../include/pmc.h"));
    declared.extend(declared_functions(include_str!("../include/pmclog.h")));
    // Exported for programs built before, no longer declared by the 0x0A
    // tree's lib/libpmc/pmc.h (pmc.h says so).
    declared.push("pmc_pmu_stat_mode".into());
    declared.sort();
    if exported != declared {
        let extra: Vec<_> = exported.iter().filter(|e| !declared.contains(e)).collect();
        let missing: Vec<_> = declared.iter().filter(|d| !exported.contains(d)).collect();
        return Err(format!(
            "exported but not declared: {extra:?}; declared but not exported: {missing:?}"
        )
        .into());
    }
    println!("{} functions, all declared, all exported", exported.len());
    Ok(())
}

/// libpmc.so is named by its SONAME, FreeBSD's `libpmc.so.5`, so programs
/// linked with `-lpmc` load the ABI they were built against.
fn soname() -> TestResult {
    let libs = lib_dir()?;
    let out = run_checked(
        Command::new("readelf")
            .arg("-d")
            .arg(libs.join("libpmc.so")),
        "readelf -d libpmc.so",
    )?;
    let dynamic = String::from_utf8_lossy(&out.stdout);
    let sonames: Vec<&str> = dynamic.lines().filter(|l| l.contains("(SONAME)")).collect();
    match sonames.as_slice() {
        [line] if line.contains("[libpmc.so.5]") => Ok(()),
        _ => Err(format!("expected SONAME libpmc.so.5, readelf shows {sonames:?}").into()),
    }
}

/// What the runner does with a test (tests/live/harness.rs `Gate`).
enum Gate {
    Run,
    /// `[token,…] reason; reason`: every unmet requirement named.
    Skip(String),
    /// The machine is broken in a way no requirement allows.
    Fail(String),
}

/// An independent look at the machine decides: unmet requirements skip
/// with their tokens, broken ones fail, forced tokens count as met.
fn gate(requires: &[Requirement], env: &Environment, forced: &[String]) -> Gate {
    let mut tokens = Vec::new();
    let mut reasons = Vec::new();
    for r in requires.iter().filter(|r| !forced.contains(&r.token())) {
        match r.verdict(env) {
            Verdict::Met => {}
            Verdict::Unmet(reason) => {
                tokens.push(r.token());
                reasons.push(reason);
            }
            Verdict::Broken(reason) => return Gate::Fail(format!("[{}] {reason}", r.token())),
        }
    }
    if tokens.is_empty() {
        Gate::Run
    } else {
        Gate::Skip(format!("[{}] {}", tokens.join(","), reasons.join("; ")))
    }
}

struct CTest {
    name: &'static str,
    requires: Vec<Requirement>,
    run: fn() -> TestResult,
}

fn main() {
    let args = Arguments::from_args();
    let env = machine::environment();
    let cc = compiler();
    // `cargo xtask test --matrix` forces skipped tests, one requirement token
    // at a time, to prove they need what they declare (as
    // tests/live/harness.rs does; that file cannot be included here, where
    // `pmc` names this crate).
    let force_value = std::env::var("PMC_LIVE_FORCE").unwrap_or_default();
    let force = matches!(force_value.trim(), "1" | "all");
    let forced_tokens: Vec<String> = force_value
        .split(',')
        .map(|t| t.trim().to_string())
        .filter(|t| !t.is_empty())
        .collect();
    // The C programs count events such as `task-clock` without `,usr`,
    // which counts kernel mode too: paranoid <= 1 or CAP_PERFMON.
    let perf = || vec![Requirement::PerfEvent, Requirement::Paranoid(1)];
    let tests = vec![
        CTest {
            name: "c::layout_matches_freebsd_amd64",
            requires: vec![],
            run: layout,
        },
        CTest {
            name: "c::counting_tc_software_events",
            requires: perf(),
            run: counting,
        },
        CTest {
            name: "c::counting_tc_linked_statically",
            requires: perf(),
            run: counting_static,
        },
        CTest {
            name: "c::counting_tc_hardware_instructions",
            requires: vec![Requirement::HardwareCounting],
            run: hw_counting,
        },
        CTest {
            name: "c::counting_sc_on_cpu0",
            // CPU-wide counting: perf_event_paranoid <= 0 or CAP_PERFMON.
            requires: vec![Requirement::Paranoid(0)],
            run: counting_sc,
        },
        CTest {
            name: "c::errno_rules",
            requires: perf(),
            run: errno_rules,
        },
        CTest {
            name: "c::machine_queries",
            requires: vec![Requirement::PerfEvent],
            run: machine,
        },
        CTest {
            name: "c::sampling_into_a_log_on_an_fd",
            requires: perf(),
            run: log_on_fd,
        },
        CTest {
            name: "c::user_stacks_unwound_into_callchains",
            // User-mode samples of its own process: any user at paranoid 2.
            requires: vec![Requirement::Paranoid(2)],
            run: user_stack,
        },
        CTest {
            name: "c::log_procexit_of_a_child",
            requires: perf(),
            run: log_procexit,
        },
        CTest {
            name: "c::pmclog_feed_memory_parser",
            requires: vec![Requirement::PerfEvent],
            run: log_in_memory,
        },
        CTest {
            name: "c::procexec_entryaddr_of_freebsd13_logs",
            requires: vec![],
            run: procexec_entryaddr,
        },
        CTest {
            name: "c::threads",
            requires: perf(),
            run: threads,
        },
        CTest {
            name: "c::pmc_events_numbers_names_and_id_macros",
            requires: vec![Requirement::PerfEvent],
            run: events,
        },
        CTest {
            name: "c::values_are_freebsd_0x0a_and_lists_expand",
            requires: vec![],
            run: freebsd_values,
        },
        CTest {
            name: "c::pmcids_decode_with_freebsd_macros",
            requires: perf(),
            run: pmcids,
        },
        CTest {
            name: "c::cxx_program_includes_pmc_h_and_pmclog_h",
            requires: vec![Requirement::Program("g++".into())],
            run: cxx_headers,
        },
        CTest {
            name: "c::pmu_functions_over_pmcstat_names",
            requires: vec![Requirement::PerfEvent],
            run: pmu_functions,
        },
        CTest {
            name: "c::pmccontrol_like_list_events_is_pmccontrol_L",
            requires: vec![Requirement::PerfEvent],
            run: pmccontrol_list_events,
        },
        CTest {
            name: "c::pmccontrol_like_list_state_in_pmccontrol_format",
            requires: vec![Requirement::PerfEvent],
            run: pmccontrol_list_state,
        },
        CTest {
            name: "c::pmccontrol_like_statistics_in_pmccontrol_format",
            requires: vec![Requirement::PerfEvent],
            run: pmccontrol_statistics,
        },
        CTest {
            name: "c::log_pipe_nobody_reads_never_blocks_stop_release_close",
            // System sampling on every CPU: paranoid <= 0 or CAP_PERFMON.
            requires: vec![Requirement::Paranoid(0)],
            run: log_pipe_unread,
        },
        CTest {
            name: "c::calls_before_pmc_init_fail_as_libpmc",
            requires: perf(),
            run: init_required,
        },
        CTest {
            name: "c::valgrind_evname_lifetime_and_struct_padding",
            requires: vec![
                Requirement::PerfEvent,
                Requirement::Program("valgrind".into()),
            ],
            run: valgrind_lifetimes,
        },
        CTest {
            name: "c::valgrind_c_programs_are_memcheck_clean",
            requires: vec![
                Requirement::PerfEvent,
                Requirement::Program("valgrind".into()),
            ],
            run: valgrind_log_programs,
        },
        CTest {
            name: "c::valgrind_counting_programs_are_memcheck_clean",
            requires: vec![
                Requirement::PerfEvent,
                Requirement::Paranoid(1),
                Requirement::Program("valgrind".into()),
            ],
            run: valgrind_counting_programs,
        },
        CTest {
            name: "c::libpmc_so_is_named_libpmc_so_5",
            requires: vec![Requirement::Program("readelf".into())],
            run: soname,
        },
        CTest {
            name: "c::libpmc_exports_exactly_its_headers_functions",
            requires: vec![Requirement::Program("nm".into())],
            run: exported_symbols,
        },
        CTest {
            name: "c::pmclog_pl_data_is_the_raw_record",
            requires: vec![Requirement::PerfEvent],
            run: log_raw,
        },
        CTest {
            name: "c::readme_program_builds_and_runs_as_readme_says",
            // task-clock,usr of the caller; pkg-config for README's line.
            requires: vec![
                Requirement::PerfEvent,
                Requirement::Program("pkg-config".into()),
            ],
            run: readme_program,
        },
        CTest {
            name: "c::pkg_config_build",
            requires: vec![
                Requirement::PerfEvent,
                Requirement::Program("pkg-config".into()),
            ],
            run: pkg_config,
        },
    ];
    let mut trials: Vec<Trial> = tests
        .into_iter()
        .map(|t| {
            let verdict = match &cc {
                _ if force => Gate::Run,
                None => Gate::Skip("[cc] no C compiler (`cc --version` failed; set CC)".into()),
                // The expected sizes and offsets are FreeBSD amd64's, whose
                // machine-dependent unions other targets do not have.
                Some(_)
                    if t.name == "c::layout_matches_freebsd_amd64"
                        && !cfg!(target_arch = "x86_64") =>
                {
                    Gate::Skip(format!(
                        "[amd64] the layouts compared are FreeBSD amd64's; this is {}",
                        std::env::consts::ARCH
                    ))
                }
                Some(_) => gate(&t.requires, &env, &forced_tokens),
            };
            let run = t.run;
            Trial::ignorable_test(t.name, move || match verdict {
                Gate::Skip(reason) => Ok(Completion::ignored_with(reason)),
                Gate::Fail(reason) => Err(Failed::from(reason)),
                Gate::Run => run().map(|()| Completion::Completed),
            })
        })
        .collect();
    // Only meaningful where there is no core PMU: decided from sysfs.
    let core_pmu = env.has_core_pmu();
    let have_cc = cc.is_some();
    trials.push(Trial::ignorable_test(
        "c::hardware_event_without_core_pmu_fails_quietly",
        move || {
            if !have_cc && !force {
                return Ok(Completion::ignored_with("[cc] no C compiler"));
            }
            if core_pmu && !force {
                return Ok(Completion::ignored_with(
                    "[core-pmu-present] this machine has a core PMU, so hardware events open",
                ));
            }
            no_pmu_hardware_event().map(|()| Completion::Completed)
        },
    ));
    libtest_mimic::run(&args, trials).exit();
}
