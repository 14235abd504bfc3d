//! Rule 6 of `cargo xtask tidy`: no process-wide `static` in the non-test
//! code of any crate of the workspace ([`STATICS_SCOPE`]: the portable
//! crate, the bindings, the tools, the C API, the report, the unwinder, the
//! suggester; not xtask, benches or examples) except those of
//! [`STATICS_ALLOWED`], each with why it is not mutable shared state or,
//! where it is, why the state must be process-wide. An entry no file
//! declares any more is itself an error, so the list stays true.

/// The source roots the rule covers (a `*` matches one folder).
pub(super) const STATICS_SCOPE: &[&str] = &[
    "src/",
    "backends/*/src/",
    "tools/src/",
    "capi/src/",
    "report/src/",
    "unwind/src/",
    "suggest/src/",
];

/// The process-wide statics allowed: (file, name, why).
pub(super) const STATICS_ALLOWED: &[(&str, &str, &str)] = &[
    // The portable crate.
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
    // pmc-linux.
    (
        "backends/linux/src/pmu_events/mod.rs",
        "CACHE",
        "parsed event tables by CPUID: append-only, one parse per CPUID \
         (MUTABLE, a memo: the same CPUID always gets the same table)",
    ),
    (
        "backends/linux/src/pmu_events/mod.rs",
        "HOST",
        "this machine's CPUID, read once",
    ),
    (
        "backends/linux/src/sys/mod.rs",
        "WORD",
        "where the pid cache lives: a MADV_WIPEONFORK page the kernel zeroes \
         in a forked child, so the cached pid is never another process's",
    ),
    (
        "backends/linux/src/sys/pfm.rs",
        "INIT",
        "libpfm4's own initialization, once per process as libpfm requires",
    ),
    (
        "backends/linux/src/system.rs",
        "POSSIBLE",
        "the possible CPUs, fixed at boot",
    ),
    (
        "backends/linux/src/system.rs",
        "KEPT_ONLINE",
        "MUTABLE process-wide state: the last online-CPU list, reused while \
         the calling thread's affinity is unchanged and all possible CPUs are \
         online (a sysfs read costs more than an open); online_cpus_last_seen \
         reads it unchecked, stale until an open fails with ENODEV",
    ),
    (
        "backends/linux/src/system.rs",
        "OWN_TASKS",
        "MUTABLE process-wide state: the process's own /proc/PID/task \
         directory, kept open (one fstat counts threads) and rewound under \
         the lock; a forked child reopens its own",
    ),
    // The tools.
    (
        "tools/src/destination.rs",
        "GIVE_UP",
        "set once by pmcstat's live mode: Ctrl-C ends an open that waits for \
         a FIFO's reader",
    ),
    (
        "tools/src/report.rs",
        "SAID",
        "MUTABLE but only a warn-once flag: every report of a run reads the \
         same /proc/kallsyms",
    ),
    // The C API: libpmc's interface is process-wide by definition (an
    // integer pmc_id_t, a void * log cookie, static strings).
    (
        "capi/src/api.rs",
        "PMCS",
        "MUTABLE process-wide state: libpmc's pmc_id_t -> PMC table, which \
         the C interface implies",
    ),
    (
        "capi/src/api.rs",
        "INITIALIZED",
        "MUTABLE: whether pmc_init succeeded, as libpmc's pmc_syscall",
    ),
    ("capi/src/api.rs", "CPUINFO", "pmc_cpuinfo, read once"),
    (
        "capi/src/api.rs",
        "INTERNED",
        "event names handed to C, interned for the process's life (append-only)",
    ),
    (
        "capi/src/pmclog.rs",
        "PARSERS",
        "MUTABLE process-wide state: pmclog_open's parsers by cookie, which \
         the C interface implies",
    ),
    (
        "capi/src/pmclog.rs",
        "NEXT",
        "the next pmclog cookie (never reused)",
    ),
    (
        "capi/src/pmclog.rs",
        "UNNAMED",
        "interned names of unknown event numbers, bounded (append-only)",
    ),
    (
        "capi/src/pmu.rs",
        "HOST",
        "this machine's PMU list, read once",
    ),
    (
        "capi/src/pmu.rs",
        "OTHERS",
        "PMU lists of other CPUIDs by CPUID: append-only, one parse each",
    ),
    (
        "capi/src/pmu.rs",
        "STAT_MODE_COUNTERS",
        "a constant name table",
    ),
    (
        "capi/src/sys/pmu_util.rs",
        "STAT_MODE",
        "a constant array of pointers to C string literals",
    ),
    (
        "capi/src/sys/mod.rs",
        "LAST_ERROR",
        "thread-local (thread_local!): the calling thread's last error text, as errno",
    ),
    (
        "capi/src/names.rs",
        "TABLE",
        "FreeBSD's event enumerators, built once from an included header",
    ),
    (
        "capi/src/names.rs",
        "NAMES",
        "the enumerators' C names, built once",
    ),
    // The report.
    (
        "report/src/kallsyms.rs",
        "RUNNING",
        "the running kernel's symbols, read once per process",
    ),
];

/// Whether `rel` is under one of the source roots of `scope`.
pub(super) fn in_scope(rel: &str, scope: &[&str]) -> bool {
    scope.iter().any(|root| {
        let mut path = rel.split('/');
        root.trim_end_matches('/')
            .split('/')
            .all(|part| path.next().is_some_and(|p| part == "*" || p == part))
    })
}

/// A rule broken in one file: (line, rule, what).
pub(super) type Broken = (usize, &'static str, String);

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
                     STATICS_ALLOWED in xtask/src/tidy/statics.rs with why)"
                ),
            ));
        }
    }
    (out, declared)
}

/// A file's code lines with each inline `#[cfg(test)] mod … { … }` blanked
/// (the rules of non-test code do not bind it); the line count stays.
pub(super) fn without_test_modules(code: &[String]) -> Vec<String> {
    let mut out = code.to_vec();
    let mut i = 0;
    while i + 1 < out.len() {
        let item = out[i + 1].trim();
        let opens =
            out[i].trim() == "#[cfg(test)]" && item.starts_with("mod ") && item.ends_with('{');
        if !opens {
            i += 1;
            continue;
        }
        let mut depth = 0i64;
        let mut j = i + 1;
        while j < out.len() {
            depth += out[j].matches('{').count() as i64 - out[j].matches('}').count() as i64;
            out[j].clear();
            j += 1;
            if depth <= 0 {
                break;
            }
        }
        out[i].clear();
        i = j;
    }
    out
}

/// The name of a `static NAME:` item declared on a code line (not a
/// `'static` lifetime).
fn static_name(line: &str) -> Option<String> {
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    line.match_indices("static").find_map(|(at, _)| {
        let before = line[..at].chars().next_back();
        if before.is_some_and(|c| ident(c) || c == '\'') {
            return None;
        }
        let rest = &line[at + "static".len()..];
        if !rest.starts_with(char::is_whitespace) {
            return None;
        }
        let rest = rest.trim_start();
        let rest = rest.strip_prefix("mut ").unwrap_or(rest).trim_start();
        let name: String = rest.chars().take_while(|&c| ident(c)).collect();
        let upper = !name.is_empty()
            && name
                .chars()
                .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_');
        (upper && name != "_").then_some(name)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(text: &str) -> Vec<String> {
        text.lines().map(str::to_string).collect()
    }

    #[test]
    fn an_inline_test_module_is_not_bound() {
        let code = lines(
            "fn f() {}\n#[cfg(test)]\nmod tests {\n    use crate::Owner;\n    fn g() {}\n}\nfn h() {}\n",
        );
        let kept = without_test_modules(&code);
        assert_eq!(kept, lines("fn f() {}\n\n\n\n\n\nfn h() {}\n"));
        let not_a_module = lines("#[cfg(test)]\nfn only_in_tests() {}\n");
        assert_eq!(without_test_modules(&not_a_module), not_a_module);
    }

    #[test]
    fn statics_need_a_place_on_the_list() {
        let allowed = [("src/a.rs", "CACHE", "read-only")];
        let text = lines(
            "static CACHE: OnceLock<u8> = OnceLock::new();\n\
             pub(crate) static SINK: Mutex<u8> = Mutex::new(0);\n\
             fn f() -> &'static str { \"\" }\n\
             fn g<T>(t: &'static T) {}\n\
             static mut RAW: u8 = 0;\n",
        );
        let (found, declared) = statics("src/a.rs", &text, &allowed);
        assert_eq!(declared, vec!["CACHE", "SINK", "RAW"]);
        assert_eq!(found.iter().map(|f| f.0).collect::<Vec<_>>(), vec![2, 5]);
        assert!(found[0].2.contains("SINK"));
    }

    #[test]
    fn the_scope_is_every_crate_s_source_root() {
        for rel in [
            "src/a.rs",
            "backends/linux/src/sys/mod.rs",
            "capi/src/api.rs",
        ] {
            assert!(in_scope(rel, STATICS_SCOPE), "{rel}");
        }
        for rel in [
            "xtask/src/tidy.rs",
            "backends/linux/fuzz/src/a.rs",
            "backends/linux/benches/b.rs",
            "tools/tests/t.rs",
        ] {
            assert!(!in_scope(rel, STATICS_SCOPE), "{rel}");
        }
    }
}
