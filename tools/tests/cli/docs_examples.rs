//! The examples of docs/pmcstat.md and docs/pmccontrol.md (generated from
//! `pmc_tools::manual`, as the man pages' EXAMPLES are), run as written in
//! a scratch directory where `pmcstat` and `pmccontrol` are this build's
//! and `./a.out` is a small C program spinning in `busy_loop`. The
//! system-wide ones (`-s`, `-S`) need perf_event_paranoid <= 0 and run in
//! a test of their own.

use std::path::Path;
use std::process::Command;

use pmc::probe::Requirement as R;

use crate::ensure;
use crate::harness::{Context, LiveTest, TestResult, test};

const PMCSTAT: &str = env!("CARGO_BIN_EXE_pmcstat");
const PMCCONTROL: &str = env!("CARGO_BIN_EXE_pmccontrol");
const DOCS: [&str; 2] = [
    include_str!("../../../docs/pmcstat.md"),
    include_str!("../../../docs/pmccontrol.md"),
];

pub fn tests() -> Vec<LiveTest> {
    vec![
        test(
            "docs_examples::own_process_examples_run_as_written",
            vec![R::Paranoid(2), R::Program("cc".into())],
            own_process_examples_run_as_written,
        ),
        test(
            "docs_examples::system_wide_examples_run_as_written",
            vec![R::Paranoid(0), R::Program("cc".into())],
            system_wide_examples_run_as_written,
        ),
    ]
}

/// The lines of the docs' ```sh blocks, in order.
fn example_lines() -> Vec<String> {
    let mut out = Vec::new();
    for markdown in DOCS {
        let mut in_sh = false;
        for line in markdown.lines() {
            if let Some(fence) = line.trim().strip_prefix("```") {
                in_sh = !in_sh && fence == "sh";
            } else if in_sh {
                out.push(line.trim().to_string());
            }
        }
    }
    out
}

fn system_wide(line: &str) -> bool {
    line.split_whitespace().any(|w| w == "-s" || w == "-S")
}

fn own_process_examples_run_as_written() -> TestResult {
    let lines: Vec<String> = example_lines()
        .into_iter()
        .filter(|l| !system_wide(l))
        .collect();
    ensure!(
        lines.iter().any(|l| l.contains(" -P ")) && lines.iter().any(|l| l.contains(" -R ")),
        "the docs' sampling and report examples not found: {lines:?}"
    );
    in_scratch_directory(&lines, |dir| {
        // The sampling example was reported from: folded stacks naming
        // the program's hot function.
        let folded = std::fs::read_to_string(dir.join("prof.folded")).ctx("prof.folded")?;
        ensure!(
            folded.contains("busy_loop"),
            "prof.folded does not name busy_loop:\n{folded}"
        );
        Ok(())
    })
}

fn system_wide_examples_run_as_written() -> TestResult {
    let lines: Vec<String> = example_lines()
        .into_iter()
        .filter(|l| system_wide(l))
        .collect();
    ensure!(!lines.is_empty(), "no system-wide example in the docs");
    in_scratch_directory(&lines, |_| Ok(()))
}

/// A program that spends ~300 ms of CPU in one function.
const BUSY_C: &str = "#include <stdint.h>\n\
    __attribute__((noinline)) static uint64_t busy_loop(uint64_t n)\n\
    {\n\
    \tvolatile uint64_t sum = 0;\n\
    \tfor (uint64_t i = 0; i < n; i++)\n\
    \t\tsum += i;\n\
    \treturn sum;\n\
    }\n\
    int main(void) { return busy_loop(300000000) == 1; }\n";

/// Runs `lines` with `sh -c` in a new scratch directory holding `./a.out`,
/// each of which must succeed, then `check` on the directory.
fn in_scratch_directory(lines: &[String], check: impl FnOnce(&Path) -> TestResult) -> TestResult {
    let dir = std::env::temp_dir().join(format!("pmc-docs-examples-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("bin")).ctx("scratch directory")?;
    let result = run_lines(&dir, lines).and_then(|()| check(&dir));
    let _ = std::fs::remove_dir_all(&dir);
    result
}

fn run_lines(dir: &Path, lines: &[String]) -> TestResult {
    std::os::unix::fs::symlink(PMCSTAT, dir.join("bin/pmcstat")).ctx("symlink pmcstat")?;
    std::os::unix::fs::symlink(PMCCONTROL, dir.join("bin/pmccontrol")).ctx("symlink pmccontrol")?;
    std::fs::write(dir.join("busy.c"), BUSY_C).ctx("busy.c")?;
    let cc = Command::new("cc")
        .args([
            "-O1",
            "-g",
            "-fno-omit-frame-pointer",
            "busy.c",
            "-o",
            "a.out",
        ])
        .current_dir(dir)
        .output()
        .ctx("cc busy.c")?;
    ensure!(cc.status.success(), "cc busy.c: {}", text(&cc.stderr));
    let path = format!(
        "{}:{}",
        dir.join("bin").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    for line in lines {
        let out = Command::new("sh")
            .args(["-c", line])
            .current_dir(dir)
            .env("PATH", &path)
            .output()
            .ctx(line)?;
        ensure!(
            out.status.success(),
            "the docs' `{line}` failed ({}):\n{}{}",
            out.status,
            text(&out.stdout),
            text(&out.stderr)
        );
    }
    Ok(())
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}
