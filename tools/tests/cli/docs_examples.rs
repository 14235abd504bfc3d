//! The examples of docs/pmcstat.md and docs/pmccontrol.md (generated from
//! `pmc_tools::manual`, as the man pages' EXAMPLES are), run as written in
//! a scratch directory where `pmcstat` and `pmccontrol` are this build's
//! and `./a.out` is a small C program spinning in `busy_loop`. The
//! system-wide ones (`-s`, `-S`) need perf_event_paranoid <= 0 and run in
//! a test of their own.

use pmc::probe::Requirement as R;

use crate::ensure;
use crate::harness::{Context, LiveTest, TestResult, test};
use crate::readme::in_scratch_directory;

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
    in_scratch_directory("docs-examples", &lines, |dir| {
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
    in_scratch_directory("docs-examples", &lines, |_| Ok(()))
}
