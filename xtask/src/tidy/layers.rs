//! Rules 5 and 6 of `cargo xtask tidy`, the owner's layering:
//!
//! 5. No non-test file under `src/backend/` names the log's writing side
//!    (the sink, the translator, the writer) or the owner (reading pmclog
//!    records, as a FreeBSD backend reads hwpmc's own log, is allowed):
//!    backends hand out sample sources, and only the owner logs.
//! 6. No process-wide `static` in the portable crate's non-test code
//!    except those of [`STATICS_ALLOWED`] (the default owner, the backend
//!    choice and read-only caches); an entry no file declares any more is
//!    itself an error, so the list stays true.

/// The tokens a backend file's code may not contain.
const LOG_WRITING_SIDE: &[&str] = &[
    "log::sink",
    "log::translate",
    "Translator",
    "LogWriter",
    "Owner",
];

/// The process-wide statics the portable crate may hold: (file, name,
/// why it is not mutable shared state).
pub(super) const STATICS_ALLOWED: &[(&str, &str, &str)] = &[
    (
        "src/global/mod.rs",
        "GLOBAL",
        "the process's default owner (FreeBSD: one per process)",
    ),
    (
        "src/global/select.rs",
        "SELECTOR",
        "the backend chosen once per process",
    ),
    ("src/spec/names.rs", "SOFT_EVENTS", "a constant name table"),
    ("src/spec/names.rs", "TABLE", "a name table built once"),
    (
        "src/probe/works.rs",
        "WATCHED",
        "the address the probe's breakpoint row watches",
    ),
    ("src/backend/mod.rs", "START", "the fallback clock's origin"),
    (
        "src/backend/linux/resolve/description.rs",
        "SYSTEM",
        "the machine description cache, re-read when the PMU directory changes",
    ),
    (
        "src/backend/linux/mod.rs",
        "POSSIBLE",
        "the possible CPUs, fixed at boot",
    ),
    (
        "src/backend/linux/sampling/lost.rs",
        "SUPPORTED",
        "a kernel feature probe",
    ),
];

/// A rule broken in one file: (line, rule, what).
pub(super) type Broken = (usize, &'static str, String);

/// Rule 5 on one file's code lines (comments and strings blanked).
pub(super) fn backend_names_log(rel: &str, code: &[String]) -> Vec<Broken> {
    if !rel.starts_with("src/backend/") || rel.starts_with("src/backend/conformance/") {
        return Vec::new();
    }
    let mut out = Vec::new();
    for (i, line) in code.iter().enumerate() {
        for token in LOG_WRITING_SIDE {
            if contains_token(line, token) {
                out.push((
                    i + 1,
                    "backend-writes-log",
                    format!(
                        "a backend names `{token}`: hand the owner a SampleSource \
                         (src/backend/source.rs) instead; only the owner logs"
                    ),
                ));
            }
        }
    }
    out
}

/// Rule 6 on one file: the statics it declares that the list does not
/// allow, and (for the caller's check of stale entries) every static name
/// it declares.
pub(super) fn statics(
    rel: &str,
    code: &[String],
    allowed: &[(&str, &str, &str)],
) -> (Vec<Broken>, Vec<String>) {
    let mut out = Vec::new();
    let mut declared = Vec::new();
    if !rel.starts_with("src/") {
        return (out, declared);
    }
    for (i, line) in code.iter().enumerate() {
        let Some(name) = static_name(line) else {
            continue;
        };
        declared.push(name.clone());
        if !allowed.iter().any(|(p, n, _)| *p == rel && *n == name) {
            out.push((
                i + 1,
                "process-wide-static",
                format!(
                    "static `{name}` is process-wide state: keep it in the Owner or the \
                     backend instance (or, for a read-only cache, list it in \
                     STATICS_ALLOWED in xtask/src/tidy/layers.rs with why)"
                ),
            ));
        }
    }
    (out, declared)
}

/// The code lines before a file's `#[cfg(test)] mod …` (its inline test
/// module, which the layering rules do not bind).
pub(super) fn before_test_module(code: &[String]) -> usize {
    code.windows(2)
        .position(|w| {
            let item = w[1].trim();
            w[0].trim() == "#[cfg(test)]" && item.starts_with("mod ") && item.ends_with('{')
        })
        .unwrap_or(code.len())
}

/// The name of a `static NAME:` item declared on a code line.
fn static_name(line: &str) -> Option<String> {
    let mut words = line.split(|c: char| !(c.is_alphanumeric() || c == '_'));
    let mut last_was_static = false;
    for w in words.by_ref() {
        if w.is_empty() {
            continue;
        }
        if last_was_static {
            let upper = w
                .chars()
                .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_');
            return (upper && w != "_").then(|| w.to_string());
        }
        last_was_static = w == "static";
    }
    None
}

/// Whether `line` holds `token` with no identifier character on either
/// side.
fn contains_token(line: &str, token: &str) -> bool {
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    line.match_indices(token).any(|(at, _)| {
        let before = line[..at].chars().next_back();
        let after = line[at + token.len()..].chars().next();
        !before.is_some_and(ident) && !after.is_some_and(ident)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(text: &str) -> Vec<String> {
        text.lines().map(str::to_string).collect()
    }

    #[test]
    fn a_backend_may_not_name_the_log_or_the_owner() {
        let bad = lines("use crate::log::sink;\nfn f(t: Translator) {}\nlet o: Owner;\n");
        let found = backend_names_log("src/backend/linux/x.rs", &bad);
        assert_eq!(found.iter().map(|f| f.0).collect::<Vec<_>>(), vec![1, 2, 3]);
        // Elsewhere, under conformance tests, or as part of a longer name:
        // allowed.
        assert!(backend_names_log("src/owner.rs", &bad).is_empty());
        assert!(backend_names_log("src/backend/conformance/suite.rs", &bad).is_empty());
        let fine =
            lines("use crate::log::cpu::CpuIdentity;\nlet owner_pid = 1;\nstruct OwnerPid;\n");
        assert!(backend_names_log("src/backend/mod.rs", &fine).is_empty());
    }

    #[test]
    fn an_inline_test_module_is_not_bound() {
        let code = lines("fn f() {}\n#[cfg(test)]\nmod tests {\n    use crate::Owner;\n}\n");
        assert_eq!(before_test_module(&code), 1);
        assert_eq!(
            before_test_module(&lines("#[cfg(test)]\nfn only_in_tests() {}\n")),
            2
        );
    }

    #[test]
    fn statics_need_a_place_on_the_list() {
        let allowed = [("src/a.rs", "CACHE", "read-only")];
        let text = lines(
            "static CACHE: OnceLock<u8> = OnceLock::new();\n\
             pub(crate) static SINK: Mutex<u8> = Mutex::new(0);\n\
             fn f() -> &'static str { \"\" }\n",
        );
        let (found, declared) = statics("src/a.rs", &text, &allowed);
        assert_eq!(declared, vec!["CACHE", "SINK"]);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].0, 2);
        assert!(found[0].2.contains("SINK"));
        // Outside the portable crate: not this rule's business.
        assert_eq!(statics("xtask/src/a.rs", &text, &allowed).0.len(), 0);
    }
}
