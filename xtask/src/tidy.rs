//! `cargo xtask tidy`: the invariants of ARCHITECTURE.md that a command can
//! check, on every `.rs` file of the tree (build output and hidden folders
//! skipped):
//!
//! 1. `unsafe` appears only under the directories of [`UNSAFE_ALLOWED`].
//! 2. Every `unsafe` block or impl has a `// SAFETY:` comment on its line or
//!    just above it (clippy's `undocumented_unsafe_blocks` checks the
//!    workspace; this also covers crates outside it, such as the fuzz one).
//! 3. No `.rs` file outside tests is longer than [`MAX_LINES`] lines.
//! 4. The portable crate (`src/` outside [`PORTABLE_PLATFORM_DIRS`]) has no
//!    `"/proc…"` or `"/sys…"` string literal: the backend answers those.
//!
//! 5. The layering (`tidy/layers.rs`): every non-test file of the portable
//!    crate sits in a layer and imports only its own and those below; no
//!    backend names the log's writing side, the owner or the global module;
//!    no crate depends on one above it.
//! 6. No process-wide `static` in any crate outside the allowed list
//!    (`tidy/statics.rs`).
//! 7. No code branches on an error's message (`tidy/error_text.rs`).
//!
//! Rules 5 to 7 bind non-test code only: not test folders, `tests.rs`,
//! modules declared under `#[cfg(test)]` (`mod x;`, their files and
//! folders) or a file's inline `#[cfg(test)] mod x { … }`; rule 3 exempts
//! test folders and `tests.rs`.
//!
//! Places that break a rule today because their fix is in flight are
//! listed in ratchets ([`OVERSIZE_RATCHET`], [`PLATFORM_PATH_RATCHET`],
//! `UPWARD_RATCHET`, `ERROR_TEXT_RATCHET`): those lists may only shrink,
//! and an entry that no longer breaks its rule is itself an error, so that
//! it is removed.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

mod error_text;
mod imports;
mod layers;
mod statics;

use error_text::ErrorText;
use layers::Layering;

/// Where `unsafe` may appear (prefixes of paths relative to the root).
const UNSAFE_ALLOWED: &[&str] = &[
    "backends/linux/src/sys/",
    "backends/freebsd/src/sys/",
    "backends/freebsd/src/sys.rs",
    // The C API crate's FFI module.
    "capi/src/sys/",
];

/// The longest a non-test `.rs` file may be.
const MAX_LINES: usize = 800;

/// The portable crate's root, and its platform directories (which may read
/// procfs and sysfs).
const PORTABLE_ROOT: &str = "src/";
const PORTABLE_PLATFORM_DIRS: &[&str] = &["src/backend/linux/"];

/// Over [`MAX_LINES`] today, each with the work that splits it. May only
/// shrink.
const OVERSIZE_RATCHET: &[(&str, &str)] = &[];

/// `/proc` or `/sys` paths in the portable crate today, each with the work
/// that moves them behind the backend. May only shrink.
const PLATFORM_PATH_RATCHET: &[(&str, &str)] = &[];

/// One rule broken at one place.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Finding {
    path: String,
    line: usize,
    rule: &'static str,
    what: String,
}

/// Runs every check on `root` (default: this workspace) and prints what
/// broke.
/// With `layers_report`, also every file of each layer and each upward
/// import (else one line per layer).
pub fn run(root: Option<PathBuf>, layers_report: bool) -> ExitCode {
    let root = root.unwrap_or_else(|| {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_else(|| PathBuf::from("."))
    });
    let rules = Rules::project();
    let Checked {
        findings,
        files,
        report,
    } = match check_tree(&root, &rules) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("xtask tidy: reading {}: {e}", root.display());
            return ExitCode::FAILURE;
        }
    };
    for (path, why) in rules.oversize_ratchet {
        println!("tidy: ratchet: {path} may exceed {MAX_LINES} lines for now ({why})");
    }
    for (path, why) in rules.platform_path_ratchet {
        println!("tidy: ratchet: {path} may name /proc or /sys for now ({why})");
    }
    if !layers::UPWARD_RATCHET.is_empty() {
        println!(
            "tidy: ratchet: {} upward imports may stay for now (UPWARD_RATCHET in tidy/layers.rs; --layers lists them)",
            layers::UPWARD_RATCHET.len()
        );
    }
    for (path, pattern) in error_text::ERROR_TEXT_RATCHET {
        println!("tidy: ratchet: {path} may branch on an error message for now: `{pattern}…`");
    }
    if let Some(report) = report {
        report.print(layers_report);
    }
    for f in &findings {
        eprintln!("{}:{}: {}: {}", f.path, f.line, f.rule, f.what);
    }
    if findings.is_empty() {
        println!("tidy: {files} files, every invariant holds (ratchet lists: tidy.rs, tidy/*.rs)");
        ExitCode::SUCCESS
    } else {
        eprintln!("tidy: {} problem(s) in {files} files", findings.len());
        ExitCode::FAILURE
    }
}

/// The rule parameters, so tests can run them on a temporary tree.
struct Rules<'a> {
    unsafe_allowed: &'a [&'a str],
    max_lines: usize,
    portable_root: &'a str,
    portable_platform_dirs: &'a [&'a str],
    oversize_ratchet: &'a [(&'a str, &'a str)],
    platform_path_ratchet: &'a [(&'a str, &'a str)],
    /// Rule 5 (off for the fixture trees of rules 1–4).
    layering: Option<Layering<'a>>,
    /// Rule 6: the statics allowed (off for those fixtures).
    statics_allowed: Option<&'a [(&'a str, &'a str, &'a str)]>,
    /// Rule 7 (off for those fixtures).
    error_text: Option<ErrorText<'a>>,
}

impl Rules<'static> {
    fn project() -> Self {
        Rules {
            unsafe_allowed: UNSAFE_ALLOWED,
            max_lines: MAX_LINES,
            portable_root: PORTABLE_ROOT,
            portable_platform_dirs: PORTABLE_PLATFORM_DIRS,
            oversize_ratchet: OVERSIZE_RATCHET,
            platform_path_ratchet: PLATFORM_PATH_RATCHET,
            layering: Some(Layering::project()),
            statics_allowed: Some(statics::STATICS_ALLOWED),
            error_text: Some(ErrorText::project()),
        }
    }
}

/// What a check of a tree found.
struct Checked {
    /// Sorted by path and line.
    findings: Vec<Finding>,
    /// The number of files read.
    files: usize,
    /// The layer report, when the layering rule ran.
    report: Option<layers::Report>,
}

/// Checks every `.rs` file under `root`.
fn check_tree(root: &Path, rules: &Rules<'_>) -> std::io::Result<Checked> {
    let mut files = Vec::new();
    collect_rs(root, root, &mut files)?;
    files.sort();
    let mut texts = Vec::new();
    for rel in &files {
        let text = fs::read_to_string(root.join(rel))?;
        let lexed = lex(&text);
        texts.push((rel, text, lexed));
    }
    // Modules declared under `#[cfg(test)]`: their files (and folders).
    let mut test_modules = Vec::new();
    for (rel, _, lexed) in &texts {
        let children = match rel.rsplit_once('/') {
            Some((dir, "mod.rs" | "lib.rs" | "main.rs")) => format!("{dir}/"),
            _ => format!("{}/", rel.trim_end_matches(".rs")),
        };
        for name in imports::test_modules(&lexed.code) {
            test_modules.push(format!("{children}{name}.rs"));
            test_modules.push(format!("{children}{name}/"));
        }
    }
    let is_test = |rel: &str| is_test_file(rel) || test_modules.iter().any(|t| rel.starts_with(t));

    let mut findings = Vec::new();
    let mut oversize_seen = Vec::new();
    let mut platform_seen = Vec::new();
    let mut statics_seen = Vec::new();
    let mut error_text_seen = Vec::new();
    let mut sources = Vec::new();
    for (rel, text, lexed) in &texts {
        let rel = rel.as_str();
        let (over, platform) = check_file(rel, text, lexed, rules, &mut findings);
        if over {
            oversize_seen.push(rel.to_string());
        }
        if platform {
            platform_seen.push(rel.to_string());
        }
        if is_test(rel) {
            continue;
        }
        let code = statics::without_test_modules(&lexed.code);
        if let Some(allowed) = rules.statics_allowed
            && statics::in_scope(rel, statics::STATICS_SCOPE)
        {
            let (broken, declared) = statics::statics(rel, &code, allowed);
            statics_seen.extend(declared.into_iter().map(|n| (rel.to_string(), n)));
            findings.extend(broken.into_iter().map(|(line, rule, what)| Finding {
                path: rel.into(),
                line,
                rule,
                what,
            }));
        }
        if let Some(et) = &rules.error_text {
            check_error_text(
                rel,
                &code,
                &lexed.strings,
                et,
                &mut findings,
                &mut error_text_seen,
            );
        }
        if let Some(layering) = &rules.layering
            && rel.starts_with(layering.crate_root)
        {
            sources.push(layers::Source {
                rel: rel.to_string(),
                code,
                lines: text.lines().count(),
            });
        }
    }
    let report = rules.layering.as_ref().map(|layering| {
        layers::check_manifests(root, layering, &mut findings);
        layers::check(&sources, layering, &mut findings)
    });
    for (path, _) in rules.oversize_ratchet {
        if !oversize_seen.iter().any(|p| p == path) {
            findings.push(Finding {
                path: (*path).into(),
                line: 0,
                rule: "ratchet",
                what: format!(
                    "no longer over {} lines (or gone): remove it from OVERSIZE_RATCHET in xtask/src/tidy.rs",
                    rules.max_lines
                ),
            });
        }
    }
    for (path, _) in rules.platform_path_ratchet {
        if !platform_seen.iter().any(|p| p == path) {
            findings.push(Finding {
                path: (*path).into(),
                line: 0,
                rule: "ratchet",
                what: "names no /proc or /sys path any more (or is gone): remove it from PLATFORM_PATH_RATCHET in xtask/src/tidy.rs".into(),
            });
        }
    }
    for (path, name, _) in rules.statics_allowed.unwrap_or_default() {
        if !statics_seen.iter().any(|(p, n)| p == path && n == name) {
            findings.push(Finding {
                path: (*path).into(),
                line: 0,
                rule: "ratchet",
                what: format!(
                    "declares no static `{name}` any more: remove it from STATICS_ALLOWED \
                     in xtask/src/tidy/statics.rs"
                ),
            });
        }
    }
    for (path, pattern) in rules.error_text.map(|e| e.ratchet).unwrap_or_default() {
        if !error_text_seen
            .iter()
            .any(|(p, n)| p == path && n == pattern)
        {
            findings.push(Finding {
                path: (*path).into(),
                line: 0,
                rule: "ratchet",
                what: format!(
                    "no longer tests a message with `{pattern}`: remove it from \
                     ERROR_TEXT_RATCHET in xtask/src/tidy/error_text.rs"
                ),
            });
        }
    }
    findings.sort_by(|a, b| (&a.path, a.line).cmp(&(&b.path, b.line)));
    Ok(Checked {
        findings,
        files: files.len(),
        report,
    })
}

/// Rule 7 on one non-test file.
fn check_error_text(
    rel: &str,
    code: &[String],
    strings: &[(usize, String)],
    rules: &ErrorText<'_>,
    out: &mut Vec<Finding>,
    seen: &mut Vec<(String, String)>,
) {
    let patterns = if statics::in_scope(rel, rules.library) {
        error_text::library_patterns()
    } else if statics::in_scope(rel, rules.tools) {
        error_text::tools_patterns()
    } else {
        return;
    };
    for (line, pattern) in error_text::message_tests(code, strings, &patterns) {
        let excused = rules
            .ratchet
            .iter()
            .any(|(p, n)| *p == rel && *n == pattern);
        if !excused {
            out.push(Finding {
                path: rel.into(),
                line,
                rule: "branch-on-error-text",
                what: format!(
                    "`{pattern}…` decides on an error's message, which is for people and may \
                     change: match the error's typed detail (its variant, its Errno) instead"
                ),
            });
        }
        seen.push((rel.to_string(), pattern));
    }
}

/// The `.rs` files below `dir`, relative to `root` with `/` separators;
/// skips hidden folders and `target`.
fn collect_rs(root: &Path, dir: &Path, out: &mut Vec<String>) -> std::io::Result<()> {
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        let name = entry.file_name();
        let name = name.to_string_lossy();
        let path = entry.path();
        let kind = entry.file_type()?;
        if kind.is_dir() {
            if name.starts_with('.') || name == "target" {
                continue;
            }
            collect_rs(root, &path, out)?;
        } else if kind.is_file() && name.ends_with(".rs") {
            let rel = path.strip_prefix(root).unwrap_or(&path);
            let rel: Vec<_> = rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy())
                .collect();
            out.push(rel.join("/"));
        }
    }
    Ok(())
}

/// Whether `rel` is test code: under a `tests` folder or a `tests.rs`.
fn is_test_file(rel: &str) -> bool {
    let mut parts = rel.split('/').collect::<Vec<_>>();
    let file = parts.pop().unwrap_or_default();
    file == "tests.rs" || parts.contains(&"tests")
}

/// Checks one file; returns whether it is over the line limit and whether
/// it names a platform path (whether allowed by a ratchet or not).
fn check_file(
    rel: &str,
    text: &str,
    lexed: &Lexed,
    rules: &Rules<'_>,
    out: &mut Vec<Finding>,
) -> (bool, bool) {
    let raw_lines: Vec<&str> = text.lines().collect();

    // 1 and 2: unsafe only where allowed, each with a SAFETY comment.
    let unsafe_ok_here = rules.unsafe_allowed.iter().any(|p| rel.starts_with(p));
    for (i, code) in lexed.code.iter().enumerate() {
        for rest in unsafe_uses(code) {
            let line = i + 1;
            if !unsafe_ok_here {
                out.push(Finding {
                    path: rel.into(),
                    line,
                    rule: "unsafe-outside-sys",
                    what: format!(
                        "`unsafe` outside the allowed directories ({}): move it into the crate's sys module",
                        rules.unsafe_allowed.join(", ")
                    ),
                });
            }
            let needs_comment = rest.starts_with('{') || rest.starts_with("impl");
            if needs_comment && !has_safety_comment(&raw_lines, &lexed.code, i) {
                out.push(Finding {
                    path: rel.into(),
                    line,
                    rule: "unsafe-without-safety",
                    what: "`unsafe` block or impl without a `// SAFETY:` comment on its line or just above: state why it is sound".into(),
                });
            }
        }
    }

    // 3: file length.
    let lines = raw_lines.len();
    let over = lines > rules.max_lines && !is_test_file(rel);
    if over && !rules.oversize_ratchet.iter().any(|(p, _)| *p == rel) {
        out.push(Finding {
            path: rel.into(),
            line: lines,
            rule: "file-too-long",
            what: format!(
                "{lines} lines, the limit outside tests is {}: split it along its seams",
                rules.max_lines
            ),
        });
    }

    // 4: no procfs/sysfs path in the portable crate.
    let portable = rel.starts_with(rules.portable_root)
        && !rules
            .portable_platform_dirs
            .iter()
            .any(|d| rel.starts_with(d));
    let mut platform = false;
    if portable {
        let ratcheted = rules.platform_path_ratchet.iter().any(|(p, _)| *p == rel);
        for (line, s) in &lexed.strings {
            if names_platform_path(s) {
                platform = true;
                if !ratcheted {
                    out.push(Finding {
                        path: rel.into(),
                        line: *line,
                        rule: "platform-path-in-portable-crate",
                        what: format!(
                            "the portable crate names {s:?}: ask the backend (pmc-linux) instead"
                        ),
                    });
                }
            }
        }
    }
    (over, platform)
}

/// Whether a string literal's text is a procfs or sysfs path.
fn names_platform_path(s: &str) -> bool {
    ["/proc", "/sys"].iter().any(|p| {
        s.strip_prefix(p)
            .is_some_and(|r| r.is_empty() || r.starts_with('/'))
    })
}

/// For each `unsafe` keyword in a code line (comments and strings blanked),
/// the text after it, trimmed.
fn unsafe_uses(code: &str) -> Vec<&str> {
    let bytes = code.as_bytes();
    let is_ident = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(at) = code[from..].find("unsafe").map(|i| i + from) {
        let end = at + "unsafe".len();
        let before_ok = at == 0 || !is_ident(bytes[at - 1]);
        let after_ok = end == bytes.len() || !is_ident(bytes[end]);
        if before_ok && after_ok {
            out.push(code[end..].trim_start());
        }
        from = end;
    }
    out
}

/// Whether line `i` (0-based), or the lines of the same statement and the
/// comments just above it, carry `SAFETY:`.
fn has_safety_comment(raw: &[&str], code: &[String], i: usize) -> bool {
    if raw.get(i).is_some_and(|l| l.contains("SAFETY:")) {
        return true;
    }
    let mut j = i;
    while j > 0 && i - j < 12 {
        j -= 1;
        let line = raw.get(j).copied().unwrap_or_default();
        if line.contains("SAFETY:") {
            return true;
        }
        let trimmed = line.trim();
        if trimmed.is_empty() {
            return false;
        }
        let c = code.get(j).map(|c| c.trim()).unwrap_or_default();
        // A comment or attribute line: keep looking up. A finished
        // statement or an opened block: the comment would have been below.
        if !c.is_empty()
            && !c.starts_with("#[")
            && (c.ends_with(';') || c.ends_with('{') || c.ends_with('}'))
        {
            return false;
        }
    }
    false
}

/// A file with comments and string/char literals blanked out of its code
/// lines, and the string literals with their line.
struct Lexed {
    code: Vec<String>,
    strings: Vec<(usize, String)>,
}

/// Splits Rust source into code (comments and literals replaced by spaces,
/// line structure kept) and string literal contents. Lifetimes stay code.
fn lex(text: &str) -> Lexed {
    let chars: Vec<char> = text.chars().collect();
    let mut code = String::with_capacity(text.len());
    let mut strings = Vec::new();
    let mut line = 1;
    let mut i = 0;
    let blank = |c: char, code: &mut String, line: &mut usize| {
        if c == '\n' {
            *line += 1;
            code.push('\n');
        } else {
            code.push(' ');
        }
    };
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                code.push(' ');
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    code.push_str("  ");
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    code.push_str("  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    blank(chars[i], &mut code, &mut line);
                    i += 1;
                }
            }
        } else if let Some(hashes) = raw_string_start(&chars, i) {
            // r"…", r#"…"#, br"…", cr"…": no escapes.
            let start_line = line;
            let open = chars[i..].iter().position(|&c| c == '"').unwrap_or(0) + i;
            for _ in i..=open {
                code.push(' ');
            }
            i = open + 1;
            let mut s = String::new();
            while i < chars.len() {
                if chars[i] == '"' && (1..=hashes).all(|k| chars.get(i + k) == Some(&'#')) {
                    for _ in 0..=hashes {
                        code.push(' ');
                    }
                    i += hashes + 1;
                    break;
                }
                s.push(chars[i]);
                blank(chars[i], &mut code, &mut line);
                i += 1;
            }
            strings.push((start_line, s));
        } else if c == '"' && (i == 0 || !ident(chars[i - 1]) || matches!(chars[i - 1], 'b' | 'c'))
        {
            let start_line = line;
            code.push(' ');
            i += 1;
            let mut s = String::new();
            while i < chars.len() && chars[i] != '"' {
                if chars[i] == '\\' && i + 1 < chars.len() {
                    s.push(chars[i]);
                    code.push(' ');
                    i += 1;
                }
                s.push(chars[i]);
                blank(chars[i], &mut code, &mut line);
                i += 1;
            }
            code.push(' ');
            i += 1;
            strings.push((start_line, s));
        } else if c == '\'' && char_literal_len(&chars, i).is_some() {
            let n = char_literal_len(&chars, i).unwrap_or(1);
            for _ in 0..n {
                code.push(' ');
            }
            i += n;
        } else {
            if c == '\n' {
                line += 1;
            }
            code.push(c);
            i += 1;
        }
    }
    Lexed {
        code: code.lines().map(str::to_string).collect(),
        strings,
    }
}

/// At a raw string's start (`r`, `br` or `cr`, hashes, quote): the number
/// of hashes.
fn raw_string_start(chars: &[char], i: usize) -> Option<usize> {
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    if i > 0 && ident(chars[i - 1]) {
        return None;
    }
    let mut k = i;
    if matches!(chars.get(k), Some('b' | 'c')) {
        k += 1;
    }
    if chars.get(k) != Some(&'r') {
        return None;
    }
    k += 1;
    let mut hashes = 0;
    while chars.get(k) == Some(&'#') {
        hashes += 1;
        k += 1;
    }
    (chars.get(k) == Some(&'"')).then_some(hashes)
}

/// The length of a char literal starting at `i` (`'a'`, `'\n'`,
/// `'\u{1F600}'`), or `None` for a lifetime or label.
fn char_literal_len(chars: &[char], i: usize) -> Option<usize> {
    match chars.get(i + 1)? {
        '\\' => {
            let close = chars[i + 2..].iter().take(12).position(|&c| c == '\'')?;
            Some(close + 3)
        }
        '\n' => None,
        _ => (chars.get(i + 2) == Some(&'\'')).then_some(3),
    }
}

#[cfg(test)]
mod tests;
