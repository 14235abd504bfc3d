//! Writes pmcstat(8) and pmccontrol(8) and the bash, zsh and fish
//! completions of both tools from their clap definitions
//! (`pmc_tools::cli`), into the directories `cargo xtask install` gives:
//!
//! ```text
//! cargo run -p hwpmc-tools --example generate -- MAN8_DIR COMPLETIONS_DIR
//! ```
//!
//! COMPLETIONS_DIR receives `bash/NAME`, `zsh/_NAME` and `fish/NAME.fish`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Command;
use clap_complete::Shell;

fn main() -> ExitCode {
    let dirs: Vec<PathBuf> = std::env::args_os().skip(1).map(PathBuf::from).collect();
    let [man8, completions] = dirs.as_slice() else {
        eprintln!("usage: generate MAN8_DIR COMPLETIONS_DIR");
        return ExitCode::from(64);
    };
    let tools = [pmc_tools::cli::pmcstat(), pmc_tools::cli::pmccontrol()];
    for command in tools {
        if let Err(e) = write(command, man8, completions) {
            eprintln!("generate: {e}");
            return ExitCode::FAILURE;
        }
    }
    ExitCode::SUCCESS
}

fn write(mut command: Command, man8: &Path, completions: &Path) -> Result<(), String> {
    let name = command.get_name().to_string();
    let page = man8.join(format!("{name}.8"));
    let mut roff = Vec::new();
    clap_mangen::Man::new(command.clone())
        .section("8")
        .manual("System Manager's Manual")
        .source(format!("hwpmc-tools {}", env!("CARGO_PKG_VERSION")))
        .render(&mut roff)
        .map_err(|e| format!("{name}.8: {e}"))?;
    create(&page, &roff)?;
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
