//! `--help`, `man` and `docs/` say the same: the committed
//! docs/pmcstat.md and docs/pmccontrol.md are what `examples/generate`
//! writes from the clap definitions, and each man page lists the options
//! the tool's `--help` lists, with every value named in its synopsis.

use std::collections::BTreeSet;
use std::process::Command;

use pmc_tools::manual::{self, Manual};

#[allow(dead_code)]
#[path = "../examples/generate/man.rs"]
mod man;

const DOCS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs");

fn committed_doc_is_generated(manual: &Manual) {
    let name = manual.command.get_name();
    let path = format!("{DOCS}/{name}.md");
    let committed = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    assert!(
        committed == manual.markdown(),
        "{path} is not what the clap definitions give: run \
         `cargo run -p hwpmc-tools --example generate -- --docs docs` and commit the result"
    );
}

#[test]
fn docs_pmcstat_md_is_generated() {
    committed_doc_is_generated(&manual::pmcstat());
}

#[test]
fn docs_pmccontrol_md_is_generated() {
    committed_doc_is_generated(&manual::pmccontrol());
}

/// The options a man page describes: the `.TP` headers of its OPTIONS
/// section (`\fB\-p\fR \fI<SPEC>\fR`, `\fB\-h\fR, \fB\-\-help\fR`).
fn man_options(roff: &str) -> BTreeSet<String> {
    let options = roff
        .split(".SH OPTIONS")
        .nth(1)
        .and_then(|rest| rest.split("\n.SH ").next())
        .expect("an OPTIONS section");
    let mut found = BTreeSet::new();
    let mut lines = options.lines();
    while let Some(line) = lines.next() {
        if line != ".TP" {
            continue;
        }
        let header = lines.next().unwrap_or_default().replace("\\-", "-");
        for word in header.split([' ', ',']) {
            let word = word.trim_start_matches("\\fB").trim_end_matches("\\fR");
            if word.starts_with('-') {
                found.insert(word.to_string());
            }
        }
    }
    found
}

/// The options a `--help` text lists: the first words of its indented
/// lines that start with a hyphen (`  -p <SPEC>`, `  -h, --help`).
fn help_options(help: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    for line in help.lines() {
        let Some(rest) = line.strip_prefix("  ") else {
            continue;
        };
        let rest = rest.trim_start();
        if !rest.starts_with('-') {
            continue;
        }
        let names = rest.split("  ").next().unwrap_or_default();
        for word in names.split([' ', ',']) {
            let word = word.trim_end_matches("...");
            if word.starts_with('-') {
                found.insert(word.to_string());
            }
        }
    }
    found
}

fn rendered(manual: &Manual) -> String {
    String::from_utf8(man::man_page(manual).expect("rendered")).expect("UTF-8 roff")
}

#[test]
fn pmcstat_man_page_and_help_list_the_same_options() {
    let page = rendered(&manual::pmcstat());
    let out = Command::new(env!("CARGO_BIN_EXE_pmcstat"))
        .arg("--help")
        .output()
        .expect("pmcstat --help runs");
    assert!(out.status.success(), "pmcstat --help: {:?}", out.status);
    let help = String::from_utf8_lossy(&out.stdout);
    let in_man = man_options(&page);
    assert!(
        in_man.len() > 40,
        "too few options found in the man page: {in_man:?}"
    );
    assert_eq!(in_man, help_options(&help));
    // The epilogue of --help is the man page's EXIT STATUS and EXAMPLES.
    for example in manual::pmcstat().page.examples {
        assert!(
            help.contains(example.line),
            "--help lacks `{}`",
            example.line
        );
    }
    for (status, _) in manual::pmcstat().page.exit_status {
        assert!(
            help.contains(&format!(" {status}  ")),
            "--help lacks exit status {status}"
        );
    }
}

#[test]
fn man_pages_name_every_value_and_have_exit_status_and_examples() {
    for manual in [manual::pmcstat(), manual::pmccontrol()] {
        let page = rendered(&manual);
        let synopsis = page
            .split(".SH SYNOPSIS")
            .nth(1)
            .and_then(|rest| rest.split("\n.SH ").next())
            .expect("a SYNOPSIS section");
        // clap_mangen's own synopsis leaves a value out: `[\fB\-p \fR]`.
        assert!(
            !synopsis.contains(" \\fR]"),
            "an unnamed value:\n{synopsis}"
        );
        assert!(page.contains(".SH \"EXIT STATUS\""), "no EXIT STATUS");
        assert!(page.contains(".SH EXAMPLES"), "no EXAMPLES");
    }
    let pmcstat = rendered(&manual::pmcstat());
    assert!(pmcstat.contains("\\fB\\-P\\fR SPEC") || pmcstat.contains("[\\-P SPEC]"));
    assert!(
        manual::pmcstat()
            .page
            .examples
            .iter()
            .any(|e| e.line.contains(" -P ")),
        "no sampling example"
    );
}

#[test]
fn installed_help_points_at_nothing_in_the_source_tree() {
    let out = Command::new(env!("CARGO_BIN_EXE_pmccontrol"))
        .arg("--help")
        .output()
        .expect("pmccontrol --help runs");
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(help.contains("pmccontrol -L"), "not the usage: {help}");
    assert!(!help.contains("src/") && !help.contains("xtask"), "{help}");
}

/// The pages are ASCII, every typographic character a groff glyph: a
/// literal `…` made `man` in the C locale (CI's) warn "can't find special
/// character 'u2026'".
#[test]
fn man_pages_are_ascii_so_every_locale_renders_them() {
    for manual in [manual::pmcstat(), manual::pmccontrol()] {
        let page = rendered(&manual);
        let other: BTreeSet<char> = page.chars().filter(|c| !c.is_ascii()).collect();
        assert!(
            other.is_empty(),
            "{}.8 has {other:?}: give each a groff glyph in examples/generate/man.rs `ascii_roff`",
            manual.command.get_name()
        );
    }
    assert_eq!(man::ascii_roff("a … b — c"), "a ... b \\(em c");
}
