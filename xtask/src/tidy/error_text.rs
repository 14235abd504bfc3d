//! Rule 7 of `cargo xtask tidy`: no code branches on an error's message.
//! A message is for people and may be reworded at any time; code asks the
//! error's typed detail (`pmc::Error`'s variants, `Errno`) instead. In the
//! non-test code of the library crates ([`LIBRARY_SCOPE`]) none of
//! [`MESSAGE_TESTS`] may appear; the tools parse command-line text, so
//! there only [`ERROR_MESSAGE_TESTS`] (a test on a value named as an
//! error) count. Matched on code without comments, strings or whitespace.

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

/// Tests of a message's text in library code.
pub(super) const MESSAGE_TESTS: &[&str] = &[
    "why.starts_with(",
    "why.contains(",
    "why.ends_with(",
    "why==",
    "message.starts_with(",
    "message.contains(",
    "message.ends_with(",
    ".to_string().contains(",
    ".to_string().starts_with(",
    ".to_string().ends_with(",
];

/// Tests of an error value's text, anywhere (the tools too).
pub(super) const ERROR_MESSAGE_TESTS: &[&str] = &[
    "why.starts_with(",
    "why.contains(",
    "message.starts_with(",
    "message.contains(",
    "e.to_string().contains(",
    "e.to_string().starts_with(",
    "err.to_string().contains(",
    "err.to_string().starts_with(",
    "error.to_string().contains(",
    "error.to_string().starts_with(",
];

/// Branches on a message today, each removed by issue 35's typed errors:
/// (file, pattern). May only shrink; an entry that no longer occurs is an
/// error.
pub(super) const ERROR_TEXT_RATCHET: &[(&str, &str)] = &[
    ("src/backend/linux/resolve.rs", "why.starts_with("),
    ("src/backend/linux/resolve/pmu.rs", "why.starts_with("),
];

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
pub(super) fn message_tests(code: &[String], patterns: &[&str]) -> Vec<(usize, String)> {
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
        let starts_with_ident = pattern.starts_with(ident);
        for (at, _) in squeezed.match_indices(pattern) {
            // `e.to_string()` is not the tail of `name.to_string()`.
            let before = squeezed[..at].chars().next_back();
            if starts_with_ident && before.is_some_and(ident) {
                continue;
            }
            let line = line_of.get(at).copied().unwrap_or(0);
            out.push((line, pattern.to_string()));
        }
    }
    out.sort();
    out.dedup();
    out
}
