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
//! 5. No backend file names the log's writing side or the owner, and
//! 6. no process-wide `static` outside the allowed list (`tidy/layers.rs`).
//!
//! Files that break rule 3 or 4 today because their fix is in flight are
//! listed in [`OVERSIZE_RATCHET`] and [`PLATFORM_PATH_RATCHET`]: those
//! lists may only shrink, and an entry that no longer breaks its rule is
//! itself an error, so that it is removed.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

mod layers;

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
pub fn run(root: Option<PathBuf>) -> ExitCode {
    let root = root.unwrap_or_else(|| {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_else(|| PathBuf::from("."))
    });
    let rules = Rules::project();
    let (findings, files) = match check_tree(&root, &rules) {
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
    for f in &findings {
        eprintln!("{}:{}: {}: {}", f.path, f.line, f.rule, f.what);
    }
    if findings.is_empty() {
        println!("tidy: {files} files, every invariant holds (ratchet lists: tidy.rs)");
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
    /// Rules 5 and 6 (the project's layering; off for the fixture trees).
    layers: bool,
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
            layers: true,
        }
    }
}

/// Checks every `.rs` file under `root`; returns the findings (sorted) and
/// the number of files read.
fn check_tree(root: &Path, rules: &Rules<'_>) -> std::io::Result<(Vec<Finding>, usize)> {
    let mut files = Vec::new();
    collect_rs(root, root, &mut files)?;
    files.sort();
    let mut findings = Vec::new();
    let mut oversize_seen = Vec::new();
    let mut platform_seen = Vec::new();
    let mut statics_seen = Vec::new();
    for rel in &files {
        let text = fs::read_to_string(root.join(rel))?;
        let (over, platform) = check_file(rel, &text, rules, &mut findings);
        if rules.layers {
            check_layers(rel, &text, &mut findings, &mut statics_seen);
        }
        if over {
            oversize_seen.push(rel.clone());
        }
        if platform {
            platform_seen.push(rel.clone());
        }
    }
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
    if rules.layers {
        for (path, name, _) in layers::STATICS_ALLOWED {
            if !statics_seen.iter().any(|(p, n)| p == path && n == name) {
                findings.push(Finding {
                    path: (*path).into(),
                    line: 0,
                    rule: "ratchet",
                    what: format!(
                        "declares no static `{name}` any more: remove it from STATICS_ALLOWED \
                         in xtask/src/tidy/layers.rs"
                    ),
                });
            }
        }
    }
    findings.sort_by(|a, b| (&a.path, a.line).cmp(&(&b.path, b.line)));
    Ok((findings, files.len()))
}

/// Rules 5 and 6 on one non-test file of the portable crate.
fn check_layers(
    rel: &str,
    text: &str,
    out: &mut Vec<Finding>,
    statics_seen: &mut Vec<(String, String)>,
) {
    if is_test_file(rel) || rel.starts_with("src/backend/conformance/") {
        return;
    }
    let mut code = lex(text).code;
    code.truncate(layers::before_test_module(&code));
    let (broken, declared) = layers::statics(rel, &code, layers::STATICS_ALLOWED);
    statics_seen.extend(declared.into_iter().map(|n| (rel.to_string(), n)));
    for (line, rule, what) in layers::backend_names_log(rel, &code)
        .into_iter()
        .chain(broken)
    {
        out.push(Finding {
            path: rel.into(),
            line,
            rule,
            what,
        });
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
fn check_file(rel: &str, text: &str, rules: &Rules<'_>, out: &mut Vec<Finding>) -> (bool, bool) {
    let lexed = lex(text);
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
