//! The layering rules of `cargo xtask tidy` (ARCHITECTURE.md, issue 35):
//!
//! - **Layers of the portable crate.** Every non-test file of `src/` sits in
//!   one layer of [`LAYERS`] (longest path prefix wins; a file in no row is
//!   an error, so a new module must be placed). Every path into the crate a
//!   file names — each leaf of a `use` tree, `pub use` included, and each
//!   `crate::`/`super::`/`self::` path in code — is resolved through the
//!   module files and their re-exports to the file that defines it; a
//!   target in a higher layer than the importer is `upward-import`. So is a
//!   call in [`HIDDEN_UPWARD`] (`Owner::global()` reaches the default owner
//!   without importing it). [`UPWARD_RATCHET`] (empty) lists upward imports
//!   tolerated while a move is in flight: it may only shrink.
//! - **Backends hand out, the owner logs** (rule 5): no L1 file names the
//!   log's writing side, the owner or the global module.
//! - **Crates depend downwards**: the manifests of [`CRATE_DEPENDENCIES`]
//!   name none of the crates above them (no crate of `backends/` depends on
//!   the portable crate, which calls it).
//!
//! `cargo xtask tidy` prints a line per layer; `--layers` prints the files
//! of each and every upward import.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;

use super::Finding;
use super::imports::{self, Crate, FileNames};

/// The layers, lowest first: each imports only its own and those below.
pub(super) const LAYER_NAMES: &[&str] = &[
    "L0 vocabulary",
    "L1 backend seam and backends",
    "L2 owner",
    "L3 PMCs",
    "L4 process-wide defaults",
];

/// Path prefix → layer (index into [`LAYER_NAMES`]); the longest matching
/// prefix wins. Written for the layout of issue 35, with the files of
/// today that move placed by what they become.
pub(super) const LAYERS: &[(&str, usize)] = &[
    // L0: the vocabulary every layer speaks.
    ("src/error.rs", 0),
    ("src/types.rs", 0),
    ("src/types/", 0),
    ("src/spec/", 0),
    ("src/sample.rs", 0),
    ("src/log/", 0),
    ("src/periodic.rs", 0),
    ("src/periodic/", 0),
    // L1: the seam and its implementations.
    ("src/backend/", 1),
    // L2: the owner, with the translator.
    ("src/owner.rs", 2),
    ("src/owner/", 2),
    // L3: PMCs and their builder.
    ("src/pmc.rs", 3),
    ("src/pmc/", 3),
    // L4: the process-wide defaults, the probe and the crate root.
    ("src/global.rs", 4),
    ("src/global/", 4),
    ("src/probe/", 4),
    ("src/lib.rs", 4),
];

/// Paths that reach a layer without a `use`: (path, its layer).
pub(super) const HIDDEN_UPWARD: &[(&str, usize)] = &[
    // The default owner, defined in the global module (an `impl Owner`).
    ("Owner::global", 4),
];

/// Upward imports tolerated while a move is in flight: (importing file,
/// target file or hidden path). Empty since issue 35's layering landed (21
/// at b1234e5); it may only shrink, and an entry that no longer occurs is
/// an error.
pub(super) const UPWARD_RATCHET: &[(&str, &str)] = &[];

/// The tokens an L1 (backend) file's code may not contain.
const BACKEND_MAY_NOT_NAME: &[&str] = &[
    "global::log",
    "owner::translate",
    "Translator",
    "LogWriter",
    "Owner",
    "crate::global",
];

/// Manifests (a `*` matches one folder) and the packages they may not
/// depend on, in any dependency table.
pub(super) const CRATE_DEPENDENCIES: &[(&str, &[&str], &str)] = &[
    (
        "backends/*/Cargo.toml",
        &["hwpmc", "hwpmc-report", "hwpmc-tools", "hwpmc-capi"],
        "a platform binding sits below the portable crate, which calls it",
    ),
    (
        "unwind/Cargo.toml",
        &["hwpmc", "hwpmc-report", "hwpmc-tools", "hwpmc-capi"],
        "the unwinder is a leaf the portable crate builds on",
    ),
    (
        "suggest/Cargo.toml",
        &[
            "hwpmc",
            "hwpmc-linux",
            "hwpmc-report",
            "hwpmc-tools",
            "hwpmc-capi",
        ],
        "the name suggester is a leaf every crate may use",
    ),
    (
        "Cargo.toml",
        &["hwpmc-report", "hwpmc-tools", "hwpmc-capi"],
        "the portable crate sits below its report, tools and C API",
    ),
    (
        "report/Cargo.toml",
        &["hwpmc-tools", "hwpmc-capi"],
        "the report library sits below the tools",
    ),
];

/// The rule parameters, so tests can run them on a temporary tree.
#[derive(Debug, Clone, Copy)]
pub(super) struct Layering<'a> {
    /// The portable crate's source root (`src/`).
    pub crate_root: &'a str,
    pub layers: &'a [(&'a str, usize)],
    pub hidden: &'a [(&'a str, usize)],
    pub upward_ratchet: &'a [(&'a str, &'a str)],
    pub crate_dependencies: &'a [(&'a str, &'a [&'a str], &'a str)],
}

impl Layering<'static> {
    pub fn project() -> Self {
        Layering {
            crate_root: "src/",
            layers: LAYERS,
            hidden: HIDDEN_UPWARD,
            upward_ratchet: UPWARD_RATCHET,
            crate_dependencies: CRATE_DEPENDENCIES,
        }
    }
}

impl Layering<'_> {
    /// The layer of a file by the longest matching prefix.
    pub fn layer_of(&self, rel: &str) -> Option<usize> {
        self.layers
            .iter()
            .filter(|(prefix, _)| rel.starts_with(prefix))
            .max_by_key(|(prefix, _)| prefix.len())
            .map(|&(_, layer)| layer)
    }
}

/// One file of the portable crate: its path, code lines (comments, strings
/// and inline test modules blanked) and line count.
pub(super) struct Source {
    pub rel: String,
    pub code: Vec<String>,
    pub lines: usize,
}

/// An import from one file to another (or to a hidden path).
#[derive(Debug, Clone)]
pub(super) struct Edge {
    pub from: String,
    pub line: usize,
    pub to: String,
    /// How the importer wrote it.
    pub written: String,
    pub from_layer: usize,
    pub to_layer: usize,
}

/// What the layer check saw, for the report.
#[derive(Debug, Default)]
pub(super) struct Report {
    /// Per layer: its files with their line counts.
    pub files: Vec<Vec<(String, usize)>>,
    /// Distinct (file, target) imports per importing layer: (down, within).
    pub counts: Vec<(usize, usize)>,
    /// Every upward import (first line per file and target).
    pub upward: Vec<Edge>,
}

/// The module path of a file under the crate root: `src/a/b.rs` and
/// `src/a/b/mod.rs` are `a::b`, `src/lib.rs` is the root.
fn module_of(crate_root: &str, rel: &str) -> Vec<String> {
    let inner = rel.strip_prefix(crate_root).unwrap_or(rel);
    let inner = inner.strip_suffix(".rs").unwrap_or(inner);
    let mut parts: Vec<String> = inner.split('/').map(str::to_string).collect();
    if parts.last().is_some_and(|p| p == "mod") || parts == ["lib"] {
        parts.pop();
    }
    parts
}

/// The layering check on the portable crate's non-test files (test files
/// and `#[cfg(test)]` modules left out by the caller): findings, and the
/// report.
pub(super) fn check(sources: &[Source], rules: &Layering<'_>, out: &mut Vec<Finding>) -> Report {
    let hidden: Vec<&str> = rules.hidden.iter().map(|(h, _)| *h).collect();
    let modules: Vec<Vec<String>> = sources
        .iter()
        .map(|s| module_of(rules.crate_root, &s.rel))
        .collect();
    let names: Vec<FileNames> = sources
        .iter()
        .zip(&modules)
        .map(|(s, m)| imports::scan(&s.code, m, &hidden))
        .collect();
    let krate = Crate::new(&modules, &names);

    let mut report = Report {
        files: vec![Vec::new(); LAYER_NAMES.len()],
        counts: vec![(0, 0); LAYER_NAMES.len()],
        upward: Vec::new(),
    };
    let mut layer = vec![None; sources.len()];
    for (i, s) in sources.iter().enumerate() {
        match rules.layer_of(&s.rel) {
            Some(l) => {
                layer[i] = Some(l);
                report.files[l].push((s.rel.clone(), s.lines));
            }
            None => out.push(Finding {
                path: s.rel.clone(),
                line: 1,
                rule: "no-layer",
                what: format!(
                    "in no layer: add its path to LAYERS in xtask/src/tidy/layers.rs (the layers: {})",
                    LAYER_NAMES.join(", ")
                ),
            }),
        }
    }

    let mut seen: BTreeSet<(String, String)> = BTreeSet::new();
    let mut edges = Vec::new();
    for (i, s) in sources.iter().enumerate() {
        let Some(from_layer) = layer[i] else { continue };
        for (line, written) in &names[i].refs {
            let Some(abs) = krate.absolute(written) else {
                continue;
            };
            let Some(t) = krate.resolve(&abs) else {
                continue;
            };
            let Some(to_layer) = layer[t] else { continue };
            if t == i {
                continue;
            }
            edges.push(Edge {
                from: s.rel.clone(),
                line: *line,
                to: sources[t].rel.clone(),
                written: written.segments.join("::"),
                from_layer,
                to_layer,
            });
        }
        for (line, path) in &names[i].hidden {
            let to_layer = rules
                .hidden
                .iter()
                .find(|(h, _)| h == path)
                .map_or(0, |&(_, l)| l);
            edges.push(Edge {
                from: s.rel.clone(),
                line: *line,
                to: path.clone(),
                written: path.clone(),
                from_layer,
                to_layer,
            });
        }
        if from_layer == 1 {
            backend_names(s, out);
        }
    }

    let mut upward_seen: BTreeSet<(String, String)> = BTreeSet::new();
    for e in edges {
        if !seen.insert((e.from.clone(), e.to.clone())) {
            continue;
        }
        let counts = &mut report.counts[e.from_layer];
        if e.to_layer < e.from_layer {
            counts.0 += 1;
        } else if e.to_layer == e.from_layer {
            counts.1 += 1;
        } else {
            upward_seen.insert((e.from.clone(), e.to.clone()));
            let excused = rules
                .upward_ratchet
                .iter()
                .any(|(f, t)| *f == e.from && *t == e.to);
            if !excused {
                out.push(Finding {
                    path: e.from.clone(),
                    line: e.line,
                    rule: "upward-import",
                    what: format!(
                        "`{}` is {} ({}) and this file is {}: a layer imports only its own and \
                         those below (xtask/src/tidy/layers.rs); move the code down or hand the \
                         value in",
                        e.written, e.to, LAYER_NAMES[e.to_layer], LAYER_NAMES[e.from_layer]
                    ),
                });
            }
            report.upward.push(e);
        }
    }
    for (f, t) in rules.upward_ratchet {
        if !upward_seen.contains(&(f.to_string(), t.to_string())) {
            out.push(Finding {
                path: (*f).into(),
                line: 0,
                rule: "ratchet",
                what: format!(
                    "imports nothing upward from {t} any more (or is gone): remove it from \
                     UPWARD_RATCHET in xtask/src/tidy/layers.rs"
                ),
            });
        }
    }
    report
}

/// Rule 5 on one L1 file.
fn backend_names(s: &Source, out: &mut Vec<Finding>) {
    for (i, line) in s.code.iter().enumerate() {
        for token in BACKEND_MAY_NOT_NAME {
            if contains_token(line, token) {
                out.push(Finding {
                    path: s.rel.clone(),
                    line: i + 1,
                    rule: "backend-writes-log",
                    what: format!(
                        "a backend names `{token}`: hand the owner a SampleSource \
                         (src/backend/source.rs) instead; only the owner logs, and a \
                         backend never reaches the process-wide defaults"
                    ),
                });
            }
        }
    }
}

/// Whether `line` holds `token` with no identifier character on either
/// side.
pub(super) fn contains_token(line: &str, token: &str) -> bool {
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    line.match_indices(token).any(|(at, _)| {
        let before = line[..at].chars().next_back();
        let after = line[at + token.len()..].chars().next();
        !before.is_some_and(ident) && !after.is_some_and(ident)
    })
}

impl Report {
    /// One line per layer; with `full`, its files and the upward imports.
    pub fn print(&self, full: bool) {
        for (l, name) in LAYER_NAMES.iter().enumerate() {
            let files = &self.files[l];
            let lines: usize = files.iter().map(|f| f.1).sum();
            let up = self.upward.iter().filter(|e| e.from_layer == l).count();
            let (down, within) = self.counts[l];
            println!(
                "tidy: layer {name}: {} files, {lines} lines; file-to-file imports {down} down, {within} within, {up} up",
                files.len()
            );
            if full {
                for (f, n) in files {
                    println!("    {f} ({n})");
                }
            }
        }
        if full {
            println!("tidy: upward imports ({}):", self.upward.len());
            for e in &self.upward {
                println!(
                    "    {}:{} ({}) -> {} ({}) via `{}`",
                    e.from,
                    e.line,
                    short(e.from_layer),
                    e.to,
                    short(e.to_layer),
                    e.written
                );
            }
        }
    }
}

fn short(layer: usize) -> &'static str {
    LAYER_NAMES[layer].split(' ').next().unwrap_or("?")
}

/// The crate dependency rule: every manifest of the table against its
/// forbidden packages.
pub(super) fn check_manifests(root: &Path, rules: &Layering<'_>, out: &mut Vec<Finding>) {
    let workspace = fs::read_to_string(root.join("Cargo.toml")).unwrap_or_default();
    let packages = workspace_packages(&workspace);
    for (pattern, forbidden, why) in rules.crate_dependencies {
        for rel in expand(root, pattern) {
            let Ok(text) = fs::read_to_string(root.join(&rel)) else {
                continue;
            };
            for (line, package) in dependencies(&text, &packages) {
                if forbidden.contains(&package.as_str()) {
                    out.push(Finding {
                        path: rel.clone(),
                        line,
                        rule: "upward-crate-dependency",
                        what: format!(
                            "depends on {package}: {why} (CRATE_DEPENDENCIES in xtask/src/tidy/layers.rs)"
                        ),
                    });
                }
            }
        }
    }
}

/// The manifests a pattern names (`*` matches one folder).
fn expand(root: &Path, pattern: &str) -> Vec<String> {
    let mut found = vec![String::new()];
    for part in pattern.split('/') {
        let mut next = Vec::new();
        for base in &found {
            let join = |name: &str| {
                if base.is_empty() {
                    name.to_string()
                } else {
                    format!("{base}/{name}")
                }
            };
            if part == "*" {
                let Ok(dir) = fs::read_dir(root.join(base)) else {
                    continue;
                };
                let mut names: Vec<String> = dir
                    .flatten()
                    .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .filter(|n| !n.starts_with('.'))
                    .collect();
                names.sort();
                next.extend(names.iter().map(|n| join(n)));
            } else {
                next.push(join(part));
            }
        }
        found = next;
    }
    found.retain(|rel| root.join(rel).is_file());
    found
}

/// The workspace's dependency keys and the packages they stand for
/// (`pmc = { package = "hwpmc", … }`).
fn workspace_packages(manifest: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut inside = false;
    for line in manifest.lines() {
        let t = line.trim();
        if t.starts_with('[') {
            inside = t == "[workspace.dependencies]";
            continue;
        }
        if inside && let Some((key, package)) = dependency_line(t) {
            out.insert(key, package);
        }
    }
    out
}

/// `key = …` or `key.workspace = true` in a dependency table: the key and
/// the package it names (`package = "…"` or the key itself).
fn dependency_line(line: &str) -> Option<(String, String)> {
    if line.is_empty() || line.starts_with('#') {
        return None;
    }
    let (left, right) = line.split_once('=')?;
    let key = left
        .trim()
        .split('.')
        .next()?
        .trim()
        .trim_matches('"')
        .to_string();
    let package = right
        .split_once("package")
        .and_then(|(_, p)| p.split('"').nth(1))
        .map_or_else(|| key.clone(), str::to_string);
    Some((key, package))
}

/// Every (line, package) a manifest depends on, in any dependency table
/// (normal, dev, build, per target).
fn dependencies(manifest: &str, workspace: &BTreeMap<String, String>) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut inside = false;
    for (i, line) in manifest.lines().enumerate() {
        let t = line.trim();
        if t.starts_with('[') {
            inside = t.ends_with("dependencies]") && t != "[workspace.dependencies]";
            continue;
        }
        if !inside {
            continue;
        }
        if let Some((key, mut package)) = dependency_line(t) {
            let explicit = t.contains("package");
            if !explicit && let Some(p) = workspace.get(&key) {
                package = p.clone();
            }
            out.push((i + 1, package));
        }
    }
    out
}
