//! The shell commands of README.md and of the docs/ pages it points to,
//! each accounted for: run as written by `.ci/run` or by a test, or (the
//! few that take hours or need nightly) not run, with the reason and their
//! arguments checked. A command these documents gain that nobody runs fails
//! here, so they cannot drift from what works.

use std::path::{Path, PathBuf};

use clap::Parser;

use crate::Cli;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask sits in the workspace")
        .to_path_buf()
}

fn read(path: &str) -> String {
    std::fs::read_to_string(root().join(path)).unwrap_or_else(|e| panic!("read {path}: {e}"))
}

/// The documents whose commands are accounted for: README.md and the
/// pages of docs/ that hold what README used to (docs/pmcstat.md is
/// generated from pmcstat's own option definitions).
const DOCUMENTS: [&str; 7] = [
    "README.md",
    "docs/semantics.md",
    "docs/events.md",
    "docs/profiles.md",
    "docs/c-api.md",
    "docs/backends.md",
    "docs/testing.md",
];

/// The command lines of a document's ```sh blocks, comments dropped, with the
/// `## ` section each sits in.
fn shell_commands(markdown: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut section = String::new();
    let mut in_sh = false;
    for line in markdown.lines() {
        let trimmed = line.trim();
        if let Some(fence) = trimmed.strip_prefix("```") {
            in_sh = !in_sh && fence == "sh";
            continue;
        }
        if !in_sh {
            if let Some(title) = line.strip_prefix("## ") {
                section = title.trim().to_string();
            }
            continue;
        }
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let command = trimmed.split_once(" #").map_or(trimmed, |(c, _)| c).trim();
        out.push((section.clone(), command.to_string()));
    }
    out
}

/// Who runs a README command.
#[derive(Debug, PartialEq)]
enum Runner {
    /// `.ci/run` runs it as written (or with more arguments after it).
    CiRun,
    /// tools/tests/cli/readme.rs (`readme::…`) runs every `pmcstat`,
    /// `pmccontrol` (also through `cargo run -p hwpmc-tools`) and `gprof`
    /// line, in README's order, in a scratch directory.
    ToolsTest,
    /// capi/tests/c_programs.rs (`c::readme_program_…`) runs every line
    /// of docs/c-api.md's "Using from C" block but cargo's, on README's C
    /// program.
    CapiTest,
    /// The path form of an unpublished crate (`cargo add hwpmc --path
    /// DIR`): `.ci/run` runs it with its own directory and `-q`.
    CiRunPathForm,
    /// The install line: names exactly `.ci/packages`, which `.ci/run`
    /// installs.
    Packages,
    /// Not run by the suite, for the reason given; the test checks what
    /// it can without running it.
    NotRun(&'static str),
}

const TAKES_LONG: &str = "takes from minutes to hours; run by hand";
const NIGHTLY: &str = "cargo-fuzz needs a nightly toolchain, which CI does not install";
const UNPUBLISHED: &str = "the crates are not on crates.io yet; .ci/run runs the path form \
                           (cargo add hwpmc --path, cargo install --path tools)";

fn runner(section: &str, command: &str, ci_run: &str) -> Option<Runner> {
    let ci_runs = ci_run.lines().map(str::trim).any(|l| {
        l == command
            || l.strip_prefix(command)
                .is_some_and(|rest| rest.starts_with(' '))
    });
    let first = command.split_whitespace().next().unwrap_or_default();
    Some(match first {
        _ if ci_runs => Runner::CiRun,
        "cargo"
            if command.starts_with("cargo add hwpmc --path ")
                && ci_run.contains("cargo add -q hwpmc --path ") =>
        {
            Runner::CiRunPathForm
        }
        "pmcstat" | "pmccontrol" | "gprof" => Runner::ToolsTest,
        _ if command.starts_with("cargo run -p hwpmc-tools ") => Runner::ToolsTest,
        "cc" | "export" if section == "Using from C" => Runner::CapiTest,
        "apt-get" => Runner::Packages,
        "cargo" if command.starts_with("cargo xtask mutants ") => Runner::NotRun(TAKES_LONG),
        "cargo" if command == "cargo xtask bench" => Runner::NotRun(TAKES_LONG),
        "cargo" if command == "cargo install cargo-fuzz" => Runner::NotRun(NIGHTLY),
        "cargo" if command.starts_with("cargo add hwpmc") => Runner::NotRun(UNPUBLISHED),
        "cargo" if command.starts_with("cargo install hwpmc") => Runner::NotRun(UNPUBLISHED),
        "(cd" if command.contains("cargo +nightly fuzz run ") => Runner::NotRun(NIGHTLY),
        _ => return None,
    })
}

/// The names of the workspace's packages that may be published: each
/// member's `[package] name`, unless it says `publish = false`. Read from
/// the manifests, not `cargo metadata`: the privilege matrix runs this test
/// as nobody, who cannot run root's cargo.
fn publishable_packages() -> Vec<String> {
    let workspace = read("Cargo.toml");
    let members = workspace
        .split_once("members = [")
        .and_then(|(_, rest)| rest.split_once(']'))
        .map(|(list, _)| list)
        .expect("Cargo.toml lists its members");
    members
        .split(',')
        .map(|m| m.trim().trim_matches('"'))
        .filter(|m| !m.is_empty())
        .filter_map(|member| {
            let manifest = read(&format!("{member}/Cargo.toml"));
            let package = manifest.split_once("[package]")?.1;
            let package = package.split("\n[").next().unwrap_or(package);
            let field = |key: &str| {
                package.lines().find_map(|l| {
                    let (k, v) = l.split_once('=')?;
                    (k.trim() == key).then(|| v.trim().trim_matches('"').to_string())
                })
            };
            (field("publish").as_deref() != Some("false")).then(|| field("name"))?
        })
        .collect()
}

/// The packages of .ci/packages (first word of each line).
fn ci_packages() -> Vec<String> {
    let mut packages: Vec<String> = read(".ci/packages")
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|w| !w.starts_with('#'))
        .map(str::to_string)
        .collect();
    packages.sort();
    packages
}

#[test]
fn the_extractor_takes_sh_lines_without_comments() {
    let md = "## A\n```sh\n# a comment\ncargo xtask probe     # why\n\nls -l\n```\n\
              ```text\nnot a command\n```\n## B\n```sh\n(cd x && y) # z\n```\n";
    assert_eq!(
        shell_commands(md),
        [
            ("A".to_string(), "cargo xtask probe".to_string()),
            ("A".to_string(), "ls -l".to_string()),
            ("B".to_string(), "(cd x && y)".to_string()),
        ]
    );
    assert_eq!(runner("A", "ls -l", ""), None, "an unknown command");
    assert_eq!(
        runner("A", "cargo xtask test", "cargo xtask test --expect f\n"),
        Some(Runner::CiRun)
    );
    assert_eq!(runner("A", "cargo xtask te", "cargo xtask test\n"), None);
}

#[test]
fn every_readme_command_is_run_or_checked() {
    let ci_run = read(".ci/run");
    let commands: Vec<(&str, String, String)> = DOCUMENTS
        .iter()
        .flat_map(|doc| {
            shell_commands(&read(doc))
                .into_iter()
                .map(move |(section, command)| (*doc, section, command))
        })
        .collect();
    assert!(
        commands.len() > 20,
        "the documents' commands not found: {commands:?}"
    );
    let mut unrun = Vec::new();
    for (doc, section, command) in &commands {
        let Some(who) = runner(section, command, &ci_run) else {
            unrun.push(format!("{command:?} (in {doc}, \"{section}\")"));
            continue;
        };
        println!("{who:?}: {doc}: {command}");
        // The tests that run these lines read these documents only.
        let read_by = match who {
            Runner::ToolsTest => &["README.md", "docs/profiles.md", "docs/testing.md"][..],
            Runner::CapiTest => &["docs/c-api.md"][..],
            _ => &[*doc][..],
        };
        assert!(
            read_by.contains(doc),
            "{doc}'s {command:?} is for a test that reads only {read_by:?}: \
             move it there or make the test read {doc}"
        );
        if command.starts_with("cargo xtask ") {
            let args = command.split_whitespace().skip(2);
            let args = std::iter::once("cargo xtask").chain(args);
            if let Err(e) = Cli::try_parse_from(args) {
                panic!("{doc}'s {command:?} is not a valid xtask command: {e}");
            }
        }
        if let Some(file) = command.strip_prefix("cargo xtask mutants --file ") {
            assert!(
                crate::mutants::TARGETS
                    .iter()
                    .any(|t| t.file.contains(file)),
                "{doc}'s {command:?}: no mutants target file contains {file:?}"
            );
        }
        if command.contains("fuzz run ") {
            let target = command
                .split("fuzz run ")
                .nth(1)
                .and_then(|r| r.split([' ', ')']).next())
                .unwrap_or_default();
            // `(cd DIR && cargo +nightly fuzz run TARGET)`: DIR/fuzz has it.
            let dir = command
                .strip_prefix("(cd ")
                .and_then(|r| r.split(" &&").next())
                .unwrap_or("backends/linux");
            let fuzz = read(&format!("{dir}/fuzz/Cargo.toml"));
            assert!(
                fuzz.contains(&format!("name = \"{target}\"")),
                "{doc}'s {command:?}: {dir}/fuzz has no target {target:?}"
            );
        }
        if who == Runner::NotRun(UNPUBLISHED) {
            let name = command.split_whitespace().nth(2).unwrap_or_default();
            assert!(
                publishable_packages().iter().any(|p| p == name),
                "{doc}'s {command:?}: {name:?} is not a publishable package of the workspace \
                 ({:?})",
                publishable_packages()
            );
            let path_form = match name {
                "hwpmc-tools" => "cargo install --locked --path tools".to_string(),
                _ => format!("cargo add -q {name} --path"),
            };
            assert!(
                ci_run.contains(&path_form),
                "{doc}'s {command:?}: .ci/run does not run its path form {path_form:?}"
            );
        }
        if who == Runner::Packages {
            let mut named: Vec<String> = command
                .split_whitespace()
                .skip(2)
                .filter(|w| !w.starts_with('-'))
                .map(str::to_string)
                .collect();
            named.sort();
            assert_eq!(
                named,
                ci_packages(),
                "README's install line and .ci/packages (what .ci/run installs) differ"
            );
        }
    }
    assert!(
        unrun.is_empty(),
        "README.md and docs/ have commands that no test and not .ci/run runs: {unrun:#?}\n\
         run them (xtask/src/readme.rs `runner` says who runs what) or drop them"
    );
    assert!(
        commands
            .iter()
            .any(|(_, _, c)| c.starts_with("apt-get install ")),
        "README lists no packages for a full run (.ci/packages)"
    );
}

/// README is a first page and ARCHITECTURE a one-page map (issue 35): the
/// reference lives in docs/, the history in CHANGELOG.md. Past these
/// limits, move the new text there rather than raise them.
#[test]
fn the_first_pages_stay_short() {
    let readme_lines = read("README.md").lines().count();
    assert!(
        readme_lines <= 250,
        "README.md has {readme_lines} lines (at most 250): move reference text to docs/"
    );
    let architecture_words = read("ARCHITECTURE.md").split_whitespace().count();
    assert!(
        architecture_words <= 2000,
        "ARCHITECTURE.md has {architecture_words} words (at most 2,000): keep it a map; \
         history goes to CHANGELOG.md, semantics to docs/"
    );
}

/// README's performance lines and docs/performance.md are the recorded
/// bench run's figures, rendered (`cargo xtask bench --record`), never
/// prose edited apart from the measurement.
#[test]
fn the_performance_lines_come_from_the_recorded_bench() {
    use crate::bench_summary as summary;
    let figures = summary::parse(&read(summary::RECORDED))
        .unwrap_or_else(|e| panic!("{}: {e}", summary::RECORDED));
    assert!(
        figures
            .iter()
            .any(|v| v["headline"].as_bool() == Some(true)),
        "{} marks no headline figure: README would show none",
        summary::RECORDED
    );
    assert_eq!(
        read(summary::TABLE),
        summary::render_table(&figures),
        "{} is not the rendering of {}: rerun `cargo xtask bench --record`",
        summary::TABLE,
        summary::RECORDED
    );
    let readme = read("README.md");
    let block = summary::render_readme(&figures);
    assert!(
        readme.contains(&block),
        "README.md's performance lines are not those of {}: rerun `cargo xtask bench --record`\n\
         expected:\n{block}",
        summary::RECORDED
    );
}

#[test]
fn a_figure_file_renders_its_headlines_and_replaces_reruns() {
    use crate::bench_summary as summary;
    let text = r#"{"case":"a","figure":"x","what":"thing","ours":1.5,"baseline":3.0,"unit":"ms","ratio":0.5,"target":"<= 1","met":true,"headline":true}
{"case":"a","figure":"y","what":"other","ours":900.0,"baseline":300.0,"unit":"MB","ratio":3.0,"target":"<= 1","met":false}
{"case":"a","figure":"x","what":"thing","ours":2.5,"baseline":5.0,"unit":"ms","ratio":0.5,"target":"<= 1","met":true,"headline":true}
"#;
    let figures = summary::parse(text).expect("valid figures");
    assert_eq!(figures.len(), 2, "the rerun of a/x replaces the first");
    let block = summary::render_readme(&figures);
    assert!(
        block.contains("- thing: 2.50 ms against 5 ms (target <= 1: met)"),
        "{block}"
    );
    assert!(!block.contains("other"), "not a headline: {block}");
    let table = summary::render_table(&figures);
    assert!(
        table.contains("| a | other | 900 MB | 300 MB | 3 | <= 1 | missed |"),
        "{table}"
    );
    let readme = format!("intro\n{}\nrest\n", summary::render_readme(&[]));
    let spliced = summary::splice_readme(&readme, &block).expect("markers present");
    assert!(spliced.starts_with("intro\n") && spliced.ends_with("\nrest\n"));
    assert!(spliced.contains("- thing: 2.50 ms"), "{spliced}");
    assert!(
        summary::parse("{\"case\":\"a\"}").is_err(),
        "a figure lacking fields"
    );
}
