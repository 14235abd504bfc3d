//! Writes pmcstat(8) and pmccontrol(8) and the bash, zsh and fish
//! completions of both tools from their clap definitions
//! (`pmc_tools::cli`, `pmc_tools::manual`), into the directories
//! `cargo xtask install` gives; or, with `--docs`, their Markdown pages
//! (`docs/pmcstat.md`, `docs/pmccontrol.md`):
//!
//! ```text
//! cargo run -p hwpmc-tools --example generate -- MAN8_DIR COMPLETIONS_DIR
//! cargo run -p hwpmc-tools --example generate -- --docs docs
//! ```
//!
//! COMPLETIONS_DIR receives `bash/NAME`, `zsh/_NAME` and `fish/NAME.fish`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap_complete::Shell;
use pmc_tools::manual::Manual;

mod man;

fn main() -> ExitCode {
    let args: Vec<PathBuf> = std::env::args_os().skip(1).map(PathBuf::from).collect();
    let manuals = || {
        [
            pmc_tools::manual::pmcstat(),
            pmc_tools::manual::pmccontrol(),
        ]
    };
    let written = match args.as_slice() {
        [flag, docs] if flag.as_os_str() == "--docs" => {
            manuals().iter().try_for_each(|m| write_doc(m, docs))
        }
        [man8, completions] if !man8.starts_with("--") => manuals()
            .iter()
            .try_for_each(|m| write_man_and_completions(m, man8, completions)),
        _ => {
            eprintln!("usage: generate MAN8_DIR COMPLETIONS_DIR | generate --docs DOCS_DIR");
            return ExitCode::from(64);
        }
    };
    match written {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("generate: {e}");
            ExitCode::FAILURE
        }
    }
}

fn write_doc(manual: &Manual, docs: &Path) -> Result<(), String> {
    let name = manual.command.get_name();
    create(
        &docs.join(format!("{name}.md")),
        manual.markdown().as_bytes(),
    )
}

fn write_man_and_completions(
    manual: &Manual,
    man8: &Path,
    completions: &Path,
) -> Result<(), String> {
    let mut command = manual.command.clone();
    let name = command.get_name().to_string();
    let roff = man::man_page(manual).map_err(|e| format!("{name}.8: {e}"))?;
    create(&man8.join(format!("{name}.8")), &roff)?;
    for (shell, dir, file) in [
        (Shell::Bash, "bash", name.clone()),
        (Shell::Zsh, "zsh", format!("_{name}")),
        (Shell::Fish, "fish", format!("{name}.fish")),
    ] {
        let mut script = Vec::new();
        clap_complete::generate(shell, &mut command, name.clone(), &mut script);
        create(&completions.join(dir).join(file), &script)?;
    }
    Ok(())
}

fn create(path: &Path, bytes: &[u8]) -> Result<(), String> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    std::fs::write(path, bytes).map_err(|e| format!("{}: {e}", path.display()))
}
