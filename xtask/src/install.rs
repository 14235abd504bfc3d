//! `cargo xtask install --prefix DIR [--destdir D]`: libpmc and the tools,
//! laid out as on any Unix system (paths below PREFIX; DESTDIR is
//! prepended for staging, as `make install DESTDIR=…` does):
//!
//! - `lib/libpmc.so.5` (its SONAME), `lib/libpmc.so` → it, `lib/libpmc.a`,
//!   `lib/pkgconfig/libpmc.pc` naming PREFIX's directories;
//! - `include/`: `pmc.h`, `pmclog.h`, `pmc_events.h`, `sys/…`, `dev/hwpmc/…`;
//! - `bin/pmcstat`, `bin/pmccontrol`;
//! - `share/man/man3/pmc.3`, `pmclog.3` and one `.so` page per function
//!   (`pmc_allocate.3` → pmc.3); `share/man/man8/pmcstat.8`, `pmccontrol.8`
//!   generated from the tools' clap definitions;
//! - bash, zsh and fish completions where those shells look for them.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

/// The SONAME capi/build.rs gives libpmc.so.
const SONAME: &str = "libpmc.so.5";

/// Options of `cargo xtask install`.
#[derive(clap::Args, Debug)]
pub struct InstallArgs {
    /// Where the files belong once installed (recorded in libpmc.pc).
    #[arg(long, default_value = "/usr/local")]
    prefix: PathBuf,
    /// A staging root prepended to every installed path (packaging).
    #[arg(long)]
    destdir: Option<PathBuf>,
}

pub fn run(args: &InstallArgs) -> ExitCode {
    match install(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("xtask install: {e}");
            ExitCode::FAILURE
        }
    }
}

fn install(args: &InstallArgs) -> Result<(), String> {
    if !args.prefix.is_absolute() {
        return Err(format!(
            "--prefix {} must be absolute: libpmc.pc records it",
            args.prefix.display()
        ));
    }
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .ok_or("xtask has no parent directory")?;
    let root = match &args.destdir {
        // PREFIX below DESTDIR: join would drop DESTDIR for an absolute path.
        Some(d) => d.join(args.prefix.strip_prefix("/").unwrap_or(&args.prefix)),
        None => args.prefix.clone(),
    };
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    run_cargo(
        &cargo,
        workspace,
        &[
            "build",
            "--release",
            "-p",
            "hwpmc-capi",
            "-p",
            "hwpmc-tools",
            "--bins",
            "--lib",
        ],
    )?;
    let (target, version) = metadata(&cargo, workspace)?;
    let target = target.join("release");

    let lib = root.join("lib");
    mkdir(&lib)?;
    copy(&target.join("libpmc.so"), &lib.join(SONAME))?;
    symlink(Path::new(SONAME), &lib.join("libpmc.so"))?;
    copy(&target.join("libpmc.a"), &lib.join("libpmc.a"))?;
    let template = read(&workspace.join("capi/pkgconfig/libpmc.pc.in"))?;
    let pc = template
        .replace("@LIBDIR@", &args.prefix.join("lib").display().to_string())
        .replace(
            "@INCLUDEDIR@",
            &args.prefix.join("include").display().to_string(),
        )
        .replace("@VERSION@", &version);
    write(&lib.join("pkgconfig/libpmc.pc"), &pc)?;

    copy_tree(&workspace.join("capi/include"), &root.join("include"))?;

    for tool in ["pmcstat", "pmccontrol"] {
        copy(&target.join(tool), &root.join("bin").join(tool))?;
    }

    let man3 = root.join("share/man/man3");
    for page in ["pmc", "pmclog"] {
        let text = read(&workspace.join(format!("capi/man/{page}.3")))?;
        let header = read(&workspace.join(format!("capi/include/{page}.h")))?;
        write(&man3.join(format!("{page}.3")), &text)?;
        // Every function the header declares is named by its page, and
        // `man pmc_allocate` finds that page.
        for function in declared_functions(&header) {
            if !name_section(&text).contains(&function) {
                return Err(format!(
                    "capi/man/{page}.3 does not name {function}, which {page}.h declares"
                ));
            }
            write(
                &man3.join(format!("{function}.3")),
                &format!(".so man3/{page}.3\n"),
            )?;
        }
    }

    // The tools' pages and completions, from their clap definitions.
    let generated = root.join(".xtask-generate");
    run_cargo(
        &cargo,
        workspace,
        &[
            "run",
            "-q",
            "--release",
            "-p",
            "hwpmc-tools",
            "--example",
            "generate",
            "--",
            &generated.join("man8").display().to_string(),
            &generated.join("completions").display().to_string(),
        ],
    )?;
    let share = root.join("share");
    for tool in ["pmcstat", "pmccontrol"] {
        let c = generated.join("completions");
        copy(
            &generated.join(format!("man8/{tool}.8")),
            &share.join(format!("man/man8/{tool}.8")),
        )?;
        copy(
            &c.join(format!("bash/{tool}")),
            &share.join(format!("bash-completion/completions/{tool}")),
        )?;
        copy(
            &c.join(format!("zsh/_{tool}")),
            &share.join(format!("zsh/site-functions/_{tool}")),
        )?;
        copy(
            &c.join(format!("fish/{tool}.fish")),
            &share.join(format!("fish/vendor_completions.d/{tool}.fish")),
        )?;
    }
    std::fs::remove_dir_all(&generated).map_err(|e| format!("{}: {e}", generated.display()))?;
    println!(
        "installed libpmc, its headers and man pages, pmcstat and pmccontrol under {}",
        root.display()
    );
    Ok(())
}

/// The names of the functions a header declares (`name(` after a type).
fn declared_functions(header: &str) -> Vec<String> {
    let mut names: Vec<String> = header
        .lines()
        .filter(|l| !l.starts_with([' ', '\t', '#', '/', '*']))
        .filter_map(|l| {
            let (head, _) = l.split_once('(')?;
            let name = head.rsplit([' ', '\t', '*']).next()?;
            name.starts_with("pmc").then(|| name.to_string())
        })
        .collect();
    names.sort();
    names.dedup();
    names
}

/// The NAME section of a man(7) page: the names before `\-`.
fn name_section(page: &str) -> Vec<String> {
    let text: String = page
        .split(".SH NAME")
        .nth(1)
        .and_then(|s| s.split("\\-").next())
        .unwrap_or_default()
        .to_string();
    text.split([',', ' ', '\n'])
        .filter(|w| !w.is_empty())
        .map(str::to_string)
        .collect()
}

fn run_cargo(cargo: &str, dir: &Path, args: &[&str]) -> Result<(), String> {
    let status = Command::new(cargo)
        .args(args)
        .current_dir(dir)
        .status()
        .map_err(|e| format!("{cargo}: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("cargo {} failed ({status})", args.join(" ")))
    }
}

/// Where cargo builds (CARGO_TARGET_DIR or the workspace's `target`) and
/// libpmc's version (hwpmc-capi's), for libpmc.pc.
fn metadata(cargo: &str, dir: &Path) -> Result<(PathBuf, String), String> {
    let out = Command::new(cargo)
        .args(["metadata", "--format-version", "1", "--no-deps"])
        .current_dir(dir)
        .output()
        .map_err(|e| format!("cargo metadata: {e}"))?;
    let meta: serde_json::Value =
        serde_json::from_slice(&out.stdout).map_err(|e| format!("cargo metadata's output: {e}"))?;
    let target = meta["target_directory"]
        .as_str()
        .map(PathBuf::from)
        .ok_or("cargo metadata gave no target_directory")?;
    let version = meta["packages"]
        .as_array()
        .and_then(|p| p.iter().find(|p| p["name"] == "hwpmc-capi"))
        .and_then(|p| p["version"].as_str())
        .ok_or("cargo metadata lists no hwpmc-capi version")?;
    Ok((target, version.to_string()))
}

fn mkdir(dir: &Path) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("mkdir {}: {e}", dir.display()))
}

fn read(path: &Path) -> Result<String, String> {
    std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))
}

fn write(path: &Path, text: &str) -> Result<(), String> {
    mkdir(path.parent().ok_or("a file has a directory")?)?;
    std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))
}

/// Copies a file, keeping its permission bits (executables stay so).
fn copy(from: &Path, to: &Path) -> Result<(), String> {
    mkdir(to.parent().ok_or("a file has a directory")?)?;
    // A running program may map the old file: replace, never overwrite.
    let _ = std::fs::remove_file(to);
    std::fs::copy(from, to)
        .map(drop)
        .map_err(|e| format!("copy {} to {}: {e}", from.display(), to.display()))
}

fn symlink(target: &Path, link: &Path) -> Result<(), String> {
    let _ = std::fs::remove_file(link);
    std::os::unix::fs::symlink(target, link).map_err(|e| format!("symlink {}: {e}", link.display()))
}

fn copy_tree(from: &Path, to: &Path) -> Result<(), String> {
    let entries = std::fs::read_dir(from).map_err(|e| format!("{}: {e}", from.display()))?;
    for entry in entries {
        let entry = entry.map_err(|e| format!("{}: {e}", from.display()))?;
        let path = entry.path();
        let dest = to.join(entry.file_name());
        if path.is_dir() {
            copy_tree(&path, &dest)?;
        } else {
            copy(&path, &dest)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_headers_functions_and_the_pages_names_are_read() {
        let header = "int\tpmc_init(void);\nconst char\t*pmc_name_of_class(enum pmc_class _pc);\n\
                      void\t*pmclog_open(int _fd);\n\tint _cpu, pmc_id_t *x);\n#define PMC_X(a) a\n";
        assert_eq!(
            declared_functions(header),
            ["pmc_init", "pmc_name_of_class", "pmclog_open"]
        );
        let page = ".TH X 3\n.SH NAME\npmc_init, pmc_read,\npmc_stop \\- counters\n.SH SYNOPSIS\npmc_start\n";
        assert_eq!(name_section(page), ["pmc_init", "pmc_read", "pmc_stop"]);
    }
}
