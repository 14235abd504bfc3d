//! Rule 7 of `cargo xtask tidy`: no code branches on an error's message.
//! A message is for people and may be reworded at any time; code asks the
//! error's typed detail (`pmc::Error`'s variants, `Errno`) instead. The
//! patterns (helper "errors", issue 35): a text test (`starts_with`,
//! `ends_with`, `contains`, `find`, `==`) of an error's prose field
//! ([`PROSE_FIELDS`]: `why.starts_with(…)`), of an error value's Display
//! text ([`ERROR_VALUES`]: `e.to_string().contains(…)`), or of a formatted
//! error (`format!("{e}").contains(…)`). They bind the non-test code of the
//! library crates ([`LIBRARY_SCOPE`]); the tools parse command-line text,
//! so there only tests of an error value and of `why` count. Matched on
//! code without comments, strings or whitespace.

/// The library crates' source roots (a `*` matches one folder).
pub(super) const LIBRARY_SCOPE: &[&str] = &[
    "src/",
    "backends/*/src/",
    "capi/src/",
    "report/src/",
    "unwind/src/",
    "suggest/src/",
];

/// The tools' source roots, where only tests of an error value count.
pub(super) const TOOLS_SCOPE: &[&str] = &["tools/src/"];

/// Names of an error's prose fields (`Error::File { why, .. }`).
pub(super) const PROSE_FIELDS: &[&str] = &["why", "message", "msg", "hint", "detail", "note"];

/// The prose fields compared with `==` too.
const COMPARED_FIELDS: &[&str] = &["why", "message", "msg"];

/// Names an error value goes by.
pub(super) const ERROR_VALUES: &[&str] = &["e", "err", "error", "other"];

/// The names of an error formatted alone (`format!("{e}")`).
const FORMATTED_VALUES: &[&str] = &["e", "err", "error"];

/// The text tests, as called.
const TEXT_TESTS: &[&str] = &["starts_with(", "ends_with(", "contains(", "find("];

/// A `format!` whose only argument is an error (`"{e}"`, `"{err:?}"`):
/// its string literal, as the lexer keeps it.
fn formats_an_error(literal: &str) -> bool {
    let inner = literal.strip_prefix('{').and_then(|l| l.strip_suffix('}'));
    let name = inner.map(|i| i.strip_suffix(":?").unwrap_or(i));
    name.is_some_and(|n| FORMATTED_VALUES.contains(&n))
}

/// The code patterns of the library crates.
pub(super) fn library_patterns() -> Vec<String> {
    let mut out = Vec::new();
    for test in TEXT_TESTS {
        out.extend(PROSE_FIELDS.iter().map(|f| format!("{f}.{test}")));
    }
    out.extend(COMPARED_FIELDS.iter().map(|f| format!("{f}==")));
    out.extend(error_value_patterns());
    out
}

/// The code patterns of the tools: tests of an error value, and of `why`.
pub(super) fn tools_patterns() -> Vec<String> {
    let mut out: Vec<String> = TEXT_TESTS.iter().map(|t| format!("why.{t}")).collect();
    out.push("why==".into());
    out.extend(error_value_patterns());
    out
}

fn error_value_patterns() -> Vec<String> {
    let mut out = Vec::new();
    for value in ERROR_VALUES {
        out.extend(
            TEXT_TESTS
                .iter()
                .map(|t| format!("{value}.to_string().{t}")),
        );
        out.push(format!("{value}.to_string()=="));
    }
    // `format!("{e}")`, its literal blanked: checked against the literal.
    out.extend(TEXT_TESTS.iter().map(|t| format!("format!().{t}")));
    out
}

/// Branches on a message today, each removed by issue 35's typed errors:
/// (file, pattern). May only shrink; an entry that no longer occurs is an
/// error.
pub(super) const ERROR_TEXT_RATCHET: &[(&str, &str)] = &[];

/// The rule's parameters, so tests can run it on a temporary tree.
#[derive(Debug, Clone, Copy)]
pub(super) struct ErrorText<'a> {
    pub library: &'a [&'a str],
    pub tools: &'a [&'a str],
    pub ratchet: &'a [(&'a str, &'a str)],
}

impl ErrorText<'static> {
    pub fn project() -> Self {
        ErrorText {
            library: LIBRARY_SCOPE,
            tools: TOOLS_SCOPE,
            ratchet: ERROR_TEXT_RATCHET,
        }
    }
}

/// The (line, pattern) of every message test in one file's code (comments,
/// strings and inline test modules blanked).
/// `strings` are the file's string literals with their line, for the
/// `format!` patterns.
pub(super) fn message_tests(
    code: &[String],
    strings: &[(usize, String)],
    patterns: &[String],
) -> Vec<(usize, String)> {
    let mut squeezed = String::new();
    let mut line_of = Vec::new();
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    // Whitespace goes, except one space between two words.
    let mut gap = false;
    for (i, line) in code.iter().enumerate() {
        for c in line.chars() {
            if c.is_whitespace() {
                gap = true;
                continue;
            }
            if gap && ident(c) && squeezed.chars().next_back().is_some_and(ident) {
                squeezed.push(' ');
                line_of.push(i + 1);
            }
            gap = false;
            squeezed.push(c);
            line_of.push(i + 1);
        }
        gap = true;
    }
    let mut out = Vec::new();
    for pattern in patterns {
        let pattern = pattern.as_str();
        let starts_with_ident = pattern.starts_with(ident);
        for (at, _) in squeezed.match_indices(pattern) {
            // `e.to_string()` is not the tail of `name.to_string()`.
            let before = squeezed[..at].chars().next_back();
            if starts_with_ident && before.is_some_and(ident) {
                continue;
            }
            let line = line_of.get(at).copied().unwrap_or(0);
            let formatted = pattern.starts_with("format!");
            if formatted
                && !strings
                    .iter()
                    .any(|(l, s)| *l == line && formats_an_error(s))
            {
                continue;
            }
            // Named as written: `format!("{e}").contains(`.
            out.push((line, pattern.replace("format!()", "format!(\"{e}\")")));
        }
    }
    out.sort();
    out.dedup();
    out
}
