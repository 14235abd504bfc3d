//! The pmcstat, pmccontrol and gprof lines of README.md and of the docs/
//! pages that hold what README used to, run as written, in their order, in
//! a scratch directory: `cargo run -p hwpmc-tools --bin X --` and a bare `X`
//! both run this build's X, and the programs they profile (`./a.out`,
//! `./my-program`) are a small C program spinning in `busy_loop`.
//! xtask/src/readme.rs checks that every other command of these documents
//! has a runner too.

use std::path::Path;
use std::process::Command;

use pmc::probe::Requirement as R;

use crate::ensure;
use crate::harness::{Context, LiveTest, TestResult, test};

const PMCSTAT: &str = env!("CARGO_BIN_EXE_pmcstat");
const PMCCONTROL: &str = env!("CARGO_BIN_EXE_pmccontrol");
/// The documents with tool lines, in the order their lines run (each
/// writes the logs its own reports read).
const DOCUMENTS: [(&str, &str); 3] = [
    ("README.md", include_str!("../../../README.md")),
    (
        "docs/profiles.md",
        include_str!("../../../docs/profiles.md"),
    ),
    ("docs/testing.md", include_str!("../../../docs/testing.md")),
];

pub fn tests() -> Vec<LiveTest> {
    vec![test(
        "readme::pmcstat_pmccontrol_and_gprof_lines_run_as_written",
        // Counting and user-mode sampling of a child; the C program; the
        // gprof line.
        vec![
            R::Paranoid(2),
            R::Program("cc".into()),
            R::Program("gprof".into()),
        ],
        pmcstat_pmccontrol_and_gprof_lines_run_as_written,
    )]
}

/// The lines of a document's ```sh blocks this test runs (the same rule as
/// xtask/src/readme.rs `runner`), comments dropped.
fn tool_lines(markdown: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut in_sh = false;
    for line in markdown.lines() {
        let trimmed = line.trim();
        if let Some(fence) = trimmed.strip_prefix("```") {
            in_sh = !in_sh && fence == "sh";
            continue;
        }
        if !in_sh || trimmed.starts_with('#') {
            continue;
        }
        let command = trimmed.split_once(" #").map_or(trimmed, |(c, _)| c).trim();
        let first = command.split_whitespace().next().unwrap_or_default();
        if matches!(first, "pmcstat" | "pmccontrol" | "gprof")
            || command.starts_with("cargo run -p hwpmc-tools ")
        {
            out.push(command.to_string());
        }
    }
    out
}

/// A program that spends ~300 ms of CPU in one function, for the
/// documents' profiling lines to sample.
const BUSY_C: &str = "#include <stdint.h>\n\
    __attribute__((noinline)) static uint64_t busy_loop(uint64_t n)\n\
    {\n\
    \tvolatile uint64_t sum = 0;\n\
    \tfor (uint64_t i = 0; i < n; i++)\n\
    \t\tsum += i;\n\
    \treturn sum;\n\
    }\n\
    int main(void) { return busy_loop(300000000) == 1; }\n";

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn pmcstat_pmccontrol_and_gprof_lines_run_as_written() -> TestResult {
    for (name, text) in DOCUMENTS {
        ensure!(
            tool_lines(text).iter().any(|l| l.starts_with("pmcstat ")
                || l.starts_with("cargo run -p hwpmc-tools --bin pmcstat ")),
            "{name}'s pmcstat lines not found"
        );
    }
    let lines: Vec<String> = DOCUMENTS
        .iter()
        .flat_map(|(_, text)| tool_lines(text))
        .collect();
    ensure!(
        lines.iter().any(|l| l.contains("--folded")),
        "no --folded line among the documents' pmcstat lines: {lines:?}"
    );
    let folded = lines
        .iter()
        .find_map(|line| line.split("--folded ").nth(1))
        .and_then(|rest| rest.split_whitespace().next())
        .ok_or("no --folded line")?
        .to_string();
    in_scratch_directory("readme", &lines, |dir| {
        // The profiled program was sampled and its hot function named.
        let stacks = std::fs::read_to_string(dir.join(&folded)).ctx(&folded)?;
        ensure!(
            stacks.contains("busy_loop"),
            "{folded} does not name busy_loop:\n{}",
            tail(&stacks)
        );
        Ok(())
    })
}

/// Runs `lines` with `sh -c`, each of which must succeed, in a new scratch
/// directory where `pmcstat` and `pmccontrol` are this build's and every
/// `./program` a line names is [`BUSY_C`]; then `check` on the directory.
pub(crate) fn in_scratch_directory(
    name: &str,
    lines: &[String],
    check: impl FnOnce(&Path) -> TestResult,
) -> TestResult {
    let dir = std::env::temp_dir().join(format!("pmc-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("bin")).ctx("scratch directory")?;
    let result = run_lines(&dir, lines).and_then(|()| check(&dir));
    let _ = std::fs::remove_dir_all(&dir);
    result
}

fn run_lines(dir: &Path, lines: &[String]) -> TestResult {
    // pmcstat and pmccontrol on PATH are this build's.
    std::os::unix::fs::symlink(PMCSTAT, dir.join("bin/pmcstat")).ctx("symlink pmcstat")?;
    std::os::unix::fs::symlink(PMCCONTROL, dir.join("bin/pmccontrol")).ctx("symlink pmccontrol")?;
    std::fs::write(dir.join("busy.c"), BUSY_C).ctx("busy.c")?;
    // Every ./program a line names is the busy program.
    let mut programs: Vec<&str> = lines
        .iter()
        .flat_map(|l| l.split_whitespace())
        .filter(|w| w.starts_with("./"))
        .collect();
    programs.sort();
    programs.dedup();
    for program in &programs {
        let out = Command::new("cc")
            .args([
                "-O1",
                "-g",
                "-fno-omit-frame-pointer",
                "busy.c",
                "-o",
                program,
            ])
            .current_dir(dir)
            .output()
            .ctx("cc busy.c")?;
        ensure!(out.status.success(), "cc busy.c: {}", text(&out.stderr));
    }
    let path = format!(
        "{}:{}",
        dir.join("bin").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    for line in lines {
        // `cargo run -p hwpmc-tools --bin X -- ARGS` runs X ARGS (cargo has
        // built X for this test already).
        let command = match line.strip_prefix("cargo run -p hwpmc-tools --bin ") {
            Some(rest) => rest.replacen(" -- ", " ", 1),
            None => line.clone(),
        };
        let out = Command::new("sh")
            .args(["-c", &command])
            .current_dir(dir)
            .env("PATH", &path)
            .output()
            .ctx(line)?;
        println!(
            "$ {line}\n{}{}",
            tail(&text(&out.stdout)),
            tail(&text(&out.stderr))
        );
        ensure!(
            out.status.success(),
            "the documented `{line}` failed ({}):\n{}{}",
            out.status,
            text(&out.stdout),
            text(&out.stderr)
        );
    }
    Ok(())
}

/// The last lines of an output, enough to see what happened.
fn tail(s: &str) -> String {
    let lines: Vec<&str> = s.lines().collect();
    let from = lines.len().saturating_sub(8);
    lines[from..].iter().map(|l| format!("{l}\n")).collect()
}
