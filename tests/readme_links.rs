//! README.md is the crate's documentation (`#![doc = include_str!]`), so
//! docs.rs renders it, where a link relative to the repository leads
//! nowhere: every link must be absolute (or an anchor in the page), and
//! links into the repository must start with the workspace's
//! `repository` when it declares one, so that moving the repository shows
//! every stale link. A host under `.invalid` (RFC 2606: it never resolves,
//! as the placeholder `repository` the manifests once carried) is refused:
//! such a link is broken everywhere, so name the file in text instead.

use std::path::Path;

/// The link targets of a Markdown text, outside code blocks and code
/// spans: inline links and images `[text](target "title")`, reference
/// definitions `[label]: target`, and HTML `href="…"`/`src="…"`.
fn link_targets(markdown: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut fenced = false;
    for line in markdown.lines() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        // Code spans: drop the text between backtick pairs.
        let text: String = line
            .split('`')
            .enumerate()
            .filter(|(i, _)| i % 2 == 0)
            .map(|(_, part)| part)
            .collect::<Vec<_>>()
            .join(" ");
        if let Some(rest) = text.trim_start().strip_prefix('[')
            && let Some((_, target)) = rest.split_once("]:")
            && let Some(target) = target.split_whitespace().next()
        {
            out.push(target.trim_matches(['<', '>']).to_string());
        }
        let mut rest = text.as_str();
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            let end = after.find(')').unwrap_or(after.len());
            let target = after[..end].split_whitespace().next().unwrap_or_default();
            out.push(target.trim_matches(['<', '>']).to_string());
            rest = &after[end..];
        }
        for attr in ["href=\"", "src=\""] {
            let mut rest = text.as_str();
            while let Some(at) = rest.find(attr) {
                let after = &rest[at + attr.len()..];
                let end = after.find('"').unwrap_or(after.len());
                out.push(after[..end].to_string());
                rest = &after[end..];
            }
        }
    }
    out
}

/// Whether a link target works wherever the page is rendered.
fn is_absolute(target: &str) -> bool {
    target.starts_with('#')
        || target.starts_with("mailto:")
        || target.split_once("://").is_some_and(|(scheme, _)| {
            !scheme.is_empty() && scheme.chars().all(|c| c.is_ascii_alphabetic())
        })
}

/// Whether a URL's host is a reserved name that never resolves (RFC 2606
/// `.invalid`, and `example.invalid`'s kind).
fn host_never_resolves(target: &str) -> bool {
    target
        .split_once("://")
        .and_then(|(_, rest)| rest.split(['/', ':', '?', '#']).next())
        .is_some_and(|host| host == "invalid" || host.ends_with(".invalid"))
}

/// The workspace's `repository` (`[workspace.package]` in Cargo.toml), if
/// it declares one (none until the project has a public home).
fn repository(root: &Path) -> Option<String> {
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).expect("read Cargo.toml");
    manifest.lines().find_map(|l| {
        let (key, value) = l.split_once('=')?;
        (key.trim() == "repository").then(|| value.trim().trim_matches('"').to_string())
    })
}

#[test]
fn the_extractor_finds_every_kind_of_link_and_skips_code() {
    let sample = "See [the map](ARCHITECTURE.md) and ![a graph](docs/x.svg \"title\").\n\
                  An [absolute](https://example.org/a) link, an [anchor](#layout).\n\
                  `[not a link](in/code)` and text.\n\
                  ```\n[also not](in/a/block)\n```\n\
                  [label]: relative/ref.md\n\
                  <img src=\"img/y.png\"> <a href=\"https://example.org/b\">b</a>\n";
    let targets = link_targets(sample);
    assert_eq!(
        targets,
        [
            "ARCHITECTURE.md",
            "docs/x.svg",
            "https://example.org/a",
            "#layout",
            "relative/ref.md",
            "https://example.org/b",
            "img/y.png",
        ]
    );
    let relative: Vec<&String> = targets.iter().filter(|t| !is_absolute(t)).collect();
    assert_eq!(
        relative,
        [
            "ARCHITECTURE.md",
            "docs/x.svg",
            "relative/ref.md",
            "img/y.png"
        ]
    );
}

#[test]
fn reserved_hosts_are_recognised() {
    assert!(host_never_resolves(
        "https://example.invalid/pmc/blob/main/A.md"
    ));
    assert!(host_never_resolves("http://invalid"));
    assert!(!host_never_resolves("https://docs.rs/pmc"));
    assert!(!host_never_resolves("https://invalid.example.org/x"));
    assert!(!host_never_resolves("#layout"));
}

#[test]
fn readme_links_work_on_docs_rs() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).expect("read README.md");
    let targets = link_targets(&readme);
    let unreachable: Vec<&String> = targets.iter().filter(|t| host_never_resolves(t)).collect();
    assert!(
        unreachable.is_empty(),
        "README.md links to hosts that never resolve (the placeholder repository?); \
         name the file in text until there is a real URL: {unreachable:?}"
    );
    let relative: Vec<&String> = targets.iter().filter(|t| !is_absolute(t)).collect();
    assert!(
        relative.is_empty(),
        "README.md is the crate doc on docs.rs, where these relative links lead nowhere; \
         use absolute URLs (the repository's, for its files): {relative:?}"
    );
    let Some(repository) = repository(root) else {
        return;
    };
    let host = repository
        .split("://")
        .nth(1)
        .and_then(|r| r.split('/').next())
        .expect("repository is a URL");
    for t in targets
        .iter()
        .filter(|t| t.contains(&format!("://{host}/")))
    {
        assert!(
            t.starts_with(&format!("{repository}/")),
            "{t} points at the repository's host but not under its URL {repository}"
        );
    }
}

/// The repository files README names in text (`docs/x.md`, `ARCHITECTURE.md`,
/// …): it cannot link them (docs.rs), so a name is its link.
fn named_files(markdown: &str) -> Vec<String> {
    let mut out: Vec<String> = markdown
        .split(|c: char| !(c.is_ascii_alphanumeric() || "/._-".contains(c)))
        .filter(|w| {
            w.ends_with(".md")
                && (w.starts_with("docs/")
                    || w.trim_end_matches(".md")
                        .chars()
                        .all(|c| !c.is_ascii_lowercase()))
        })
        .map(|w| w.trim_start_matches("./").to_string())
        .collect();
    out.sort();
    out.dedup();
    out
}

#[test]
fn the_name_extractor_finds_repository_files() {
    let sample = "See `docs/semantics.md` — and ARCHITECTURE.md, (docs/c-api.md); \
                  not other.md or docs.rs.";
    assert_eq!(
        named_files(sample),
        ["ARCHITECTURE.md", "docs/c-api.md", "docs/semantics.md"]
    );
}

#[test]
fn the_pages_readme_names_exist_and_their_links_resolve() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).expect("read README.md");
    let named = named_files(&readme);
    assert!(
        named.iter().filter(|n| n.starts_with("docs/")).count() >= 5,
        "README names too few docs/ pages: {named:?}"
    );
    let missing: Vec<&String> = named.iter().filter(|n| !root.join(n).is_file()).collect();
    assert!(
        missing.is_empty(),
        "README.md points to pages that do not exist: {missing:?}"
    );
    // The docs/ pages are read in the repository, where a relative link
    // works if its file exists.
    for page in named.iter().filter(|n| n.starts_with("docs/")) {
        let text = std::fs::read_to_string(root.join(page)).expect("read a named page");
        for target in link_targets(&text).iter().filter(|t| !is_absolute(t)) {
            let file = target.split('#').next().unwrap_or_default();
            assert!(
                root.join("docs").join(file).exists(),
                "{page} links to {target}, which does not exist"
            );
        }
    }
}
