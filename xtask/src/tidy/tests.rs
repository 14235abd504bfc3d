use super::*;
use error_text::ErrorText;
use layers::Layering;

/// A temporary tree with the given files.
struct Tree(PathBuf);

impl Tree {
    fn new(files: &[(&str, String)]) -> Tree {
        let mut dir = std::env::temp_dir();
        let unique = format!(
            "xtask-tidy-{}-{:?}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos())
                .unwrap_or_default()
        );
        dir.push(unique);
        for (path, text) in files {
            let p = dir.join(path);
            fs::create_dir_all(p.parent().expect("files have a parent")).expect("mkdir");
            fs::write(p, text).expect("write");
        }
        Tree(dir)
    }
}

impl Drop for Tree {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

const RULES: Rules<'static> = Rules {
    unsafe_allowed: &["b/src/sys/"],
    max_lines: 10,
    portable_root: "src/",
    portable_platform_dirs: &["src/backend/linux/"],
    oversize_ratchet: &[],
    platform_path_ratchet: &[],
    layering: None,
    statics_allowed: None,
    error_text: None,
};

fn rules_found(files: &[(&str, String)], rules: &Rules<'_>) -> Vec<(String, &'static str)> {
    let tree = Tree::new(files);
    let checked = check_tree(&tree.0, rules).expect("the tree reads");
    checked
        .findings
        .into_iter()
        .map(|f| (f.path, f.rule))
        .collect()
}

fn found(files: &[(&str, &str)]) -> Vec<(String, &'static str)> {
    let files: Vec<_> = files.iter().map(|(p, t)| (*p, t.to_string())).collect();
    rules_found(&files, &RULES)
}

#[test]
fn unsafe_is_allowed_only_under_sys_and_needs_safety() {
    let block = "fn f() {\n    // SAFETY: nothing to uphold.\n    unsafe { g() }\n}\n";
    let bare = "fn f() {\n    let x = 1;\n    unsafe { g() }\n}\n";
    assert_eq!(found(&[("b/src/sys/a.rs", block)]), vec![]);
    assert_eq!(
        found(&[("b/src/sys/a.rs", bare)]),
        vec![("b/src/sys/a.rs".to_string(), "unsafe-without-safety")]
    );
    assert_eq!(
        found(&[("b/src/lib.rs", block)]),
        vec![("b/src/lib.rs".to_string(), "unsafe-outside-sys")]
    );
    // `unsafe fn` needs no SAFETY line, only the allowed place.
    assert_eq!(
        found(&[("b/src/sys/a.rs", "pub unsafe fn f() {}\n")]),
        vec![]
    );
    assert_eq!(
        found(&[("c/src/a.rs", "unsafe impl Send for X {}\n")]),
        vec![
            ("c/src/a.rs".to_string(), "unsafe-outside-sys"),
            ("c/src/a.rs".to_string(), "unsafe-without-safety"),
        ]
    );
}

#[test]
fn unsafe_in_comments_strings_and_names_is_not_unsafe() {
    let text = "#![deny(unsafe_code)]\n//! All `unsafe` lives in sys.\n/* unsafe { } */\nfn f() -> &'static str { let _c = 'u'; \"unsafe { }\" }\nconst R: &str = r#\"unsafe\"#;\nfn not_unsafe_at_all() {}\n";
    assert_eq!(found(&[("b/src/lib.rs", text)]), vec![]);
}

#[test]
fn a_safety_comment_may_sit_above_the_statement() {
    let text =
        "fn f() {\n    // SAFETY: the fd is open.\n    let n =\n        unsafe { g() };\n}\n";
    assert_eq!(found(&[("b/src/sys/a.rs", text)]), vec![]);
    // But not above an earlier, finished statement.
    let text = "fn f() {\n    // SAFETY: for h only.\n    h();\n    unsafe { g() };\n}\n";
    assert_eq!(
        found(&[("b/src/sys/a.rs", text)]),
        vec![("b/src/sys/a.rs".to_string(), "unsafe-without-safety")]
    );
}

#[test]
fn long_files_fail_outside_tests() {
    let long = "fn f() {}\n".repeat(11);
    let short = "fn f() {}\n".repeat(10);
    assert_eq!(
        found(&[("a/src/big.rs", &long), ("a/src/ok.rs", &short)]),
        vec![("a/src/big.rs".to_string(), "file-too-long")]
    );
    assert_eq!(
        found(&[("a/tests/big.rs", &long), ("a/src/m/tests.rs", &long)]),
        vec![]
    );
}

#[test]
fn platform_paths_fail_in_the_portable_crate_only() {
    let text = "fn f() { let _ = std::fs::read(\"/proc/cpuinfo\"); }\n";
    let fmt = "fn f(p: i32) { let _ = format!(\"/sys/bus/{p}\"); }\n";
    let fine = "// reads /proc/self\nfn f() { let _ = \"/system/x\"; let _ = \"/process\"; }\n";
    assert_eq!(
        found(&[
            ("src/a.rs", text),
            ("src/b.rs", fmt),
            ("src/c.rs", fine),
            ("src/backend/linux/d.rs", text),
            ("tools/src/e.rs", text),
        ]),
        vec![
            ("src/a.rs".to_string(), "platform-path-in-portable-crate"),
            ("src/b.rs".to_string(), "platform-path-in-portable-crate"),
        ]
    );
}

#[test]
fn ratchets_excuse_their_files_and_must_shrink() {
    let rules = Rules {
        oversize_ratchet: &[("src/big.rs", "in flight"), ("src/fixed.rs", "done")],
        platform_path_ratchet: &[("src/proc.rs", "in flight"), ("src/clean.rs", "done")],
        ..RULES
    };
    let files = [
        ("src/big.rs", "fn f() {}\n".repeat(11)),
        ("src/fixed.rs", "fn f() {}\n".to_string()),
        (
            "src/proc.rs",
            "const P: &str = \"/proc/self/exe\";\n".to_string(),
        ),
        ("src/clean.rs", "fn f() {}\n".to_string()),
    ];
    assert_eq!(
        rules_found(&files, &rules),
        vec![
            ("src/clean.rs".to_string(), "ratchet"),
            ("src/fixed.rs".to_string(), "ratchet"),
        ]
    );
}

#[test]
fn the_project_ratchets_name_real_files() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask is in the workspace");
    for (path, _) in OVERSIZE_RATCHET.iter().chain(PLATFORM_PATH_RATCHET) {
        assert!(
            root.join(path).is_file(),
            "{path} is in a ratchet list but missing"
        );
    }
}

/// The project's layering, statics and error-text rules with empty
/// ratchets (or the given upward one), on fixture trees.
fn layered<'a>(upward_ratchet: &'a [(&'a str, &'a str)]) -> Rules<'a> {
    Rules {
        max_lines: 800,
        layering: Some(Layering {
            upward_ratchet,
            ..Layering::project()
        }),
        statics_allowed: Some(&[]),
        error_text: Some(ErrorText {
            ratchet: &[],
            ..ErrorText::project()
        }),
        ..RULES
    }
}

/// The findings (path, line, rule, what) on a fixture tree.
fn checked(files: &[(&str, &str)], rules: &Rules<'_>) -> Vec<Finding> {
    let files: Vec<_> = files.iter().map(|(p, t)| (*p, t.to_string())).collect();
    let tree = Tree::new(&files);
    check_tree(&tree.0, rules).expect("the tree reads").findings
}

fn rules_of(found: &[Finding]) -> Vec<(&str, usize, &str)> {
    found
        .iter()
        .map(|f| (f.path.as_str(), f.line, f.rule))
        .collect()
}

/// A small crate in the target layout.
const LIB: &str = "mod error;\nmod global;\nmod types;\nmod owner;\nmod pmc;\n\
                   pub use error::Error;\npub use owner::Owner;\npub use pmc::Pmc;\npub use types::*;\n";
const GLOBAL: &str = "use crate::{Owner, Pmc};\npub fn default_owner() -> Owner { Owner }\n";

#[test]
fn an_upward_import_fails_and_a_downward_one_passes() {
    let tree = [
        ("src/lib.rs", LIB),
        ("src/error.rs", "pub struct Error;\n"),
        ("src/global.rs", GLOBAL),
        (
            "src/types.rs",
            "use crate::error::Error;\nuse crate::global::default_owner;\npub struct Cpu;\n",
        ),
        (
            "src/owner.rs",
            "use crate::{Cpu, Error};\npub struct Owner;\n",
        ),
        ("src/pmc.rs", "use crate::Owner;\npub struct Pmc;\n"),
    ];
    let found = checked(&tree, &layered(&[]));
    assert_eq!(rules_of(&found), vec![("src/types.rs", 2, "upward-import")]);
    assert!(found[0].what.contains("src/global.rs"), "{}", found[0].what);
    assert!(found[0].what.contains("L4"), "{}", found[0].what);
}

#[test]
fn grouped_renamed_and_reexported_paths_resolve_to_their_definition() {
    let tree = [
        ("src/lib.rs", LIB),
        ("src/error.rs", "pub struct Error;\n"),
        ("src/global.rs", GLOBAL),
        ("src/types.rs", "pub struct Cpu;\n"),
        // `crate::Error` and `crate::Cpu` go through lib.rs's re-exports
        // (a plain and a glob one) down to L0: no finding. `crate::Pmc`
        // goes through lib.rs up to L3, in a nested group, renamed.
        (
            "src/owner.rs",
            "mod registry;\nuse crate::{\n    Cpu, Error,\n    pmc::{self as p, Pmc as P},\n};\npub struct Owner;\n",
        ),
        // `super::` from a child module, and a path in code.
        (
            "src/owner/registry.rs",
            "use super::Owner;\nfn f() -> crate::Pmc { todo!() }\n",
        ),
        (
            "src/pmc.rs",
            "use crate::{Owner as O, error};\npub struct Pmc;\n",
        ),
    ];
    let found = checked(&tree, &layered(&[]));
    assert_eq!(
        rules_of(&found),
        vec![
            ("src/owner.rs", 4, "upward-import"),
            ("src/owner/registry.rs", 2, "upward-import"),
        ]
    );
    assert!(
        found.iter().all(|f| f.what.contains("src/pmc.rs")),
        "{found:?}"
    );
}

#[test]
fn a_file_in_no_layer_fails() {
    let tree = [
        ("src/lib.rs", "mod stray;\n"),
        ("src/stray.rs", "pub fn f() {}\n"),
    ];
    assert_eq!(
        rules_of(&checked(&tree, &layered(&[]))),
        vec![("src/stray.rs", 1, "no-layer")]
    );
}

#[test]
fn test_code_and_hidden_calls() {
    let tree = [
        ("src/lib.rs", LIB),
        ("src/error.rs", "pub struct Error;\n"),
        ("src/global.rs", GLOBAL),
        (
            "src/types.rs",
            "#[cfg(test)]\nuse crate::global::default_owner;\n#[cfg(test)]\nmod helpers;\n\
             #[cfg(test)]\nmod tests {\n    use crate::Pmc;\n}\npub struct Cpu;\n",
        ),
        // A module declared under #[cfg(test)]: not bound.
        ("src/types/helpers.rs", "use crate::Pmc;\n"),
        ("src/owner.rs", "pub struct Owner;\n"),
        // The default owner without an import: still upward from L3.
        (
            "src/pmc.rs",
            "use crate::Owner;\npub struct Pmc;\nfn f() { let _ = Owner::global(); }\n",
        ),
        (
            "src/pmc/builder.rs",
            "fn f() {\n    let _ = crate::Owner::global();\n}\n",
        ),
    ];
    let found = checked(&tree, &layered(&[]));
    assert_eq!(
        rules_of(&found),
        vec![
            ("src/pmc.rs", 3, "upward-import"),
            ("src/pmc/builder.rs", 2, "upward-import"),
        ]
    );
    assert!(found.iter().all(|f| f.what.contains("Owner::global")));
}

#[test]
fn the_upward_ratchet_excuses_and_must_shrink() {
    let tree = [
        ("src/lib.rs", LIB),
        ("src/error.rs", "pub struct Error;\n"),
        ("src/global.rs", GLOBAL),
        ("src/types.rs", "use crate::global::default_owner;\n"),
        ("src/owner.rs", "pub struct Owner;\n"),
        ("src/pmc.rs", "pub struct Pmc;\n"),
    ];
    let ratchet = [
        ("src/types.rs", "src/global.rs"),
        ("src/owner.rs", "src/pmc.rs"),
    ];
    assert_eq!(
        rules_of(&checked(&tree, &layered(&ratchet))),
        vec![("src/owner.rs", 0, "ratchet")]
    );
}

#[test]
fn a_backend_may_not_name_the_log_the_owner_or_the_global_module() {
    let tree = [
        ("src/lib.rs", "mod backend;\nmod log;\n"),
        ("src/log/mod.rs", "pub struct LogWriter;\n"),
        (
            "src/backend/mod.rs",
            "use crate::log::LogWriter;\nfn f() { let _ = crate::global::x(); }\nstruct OwnerPid;\n",
        ),
    ];
    let found = checked(&tree, &layered(&[]));
    assert_eq!(
        rules_of(&found)
            .into_iter()
            .filter(|f| f.2 == "backend-writes-log")
            .collect::<Vec<_>>(),
        vec![
            ("src/backend/mod.rs", 1, "backend-writes-log"),
            ("src/backend/mod.rs", 2, "backend-writes-log"),
        ]
    );
}

#[test]
fn a_new_static_in_any_crate_fails() {
    let tree = [
        (
            "backends/linux/src/cache.rs",
            "use std::sync::Mutex;\nstatic SEEN: Mutex<Vec<u32>> = Mutex::new(Vec::new());\n",
        ),
        ("tools/src/a.rs", "pub static NAMES: &[&str] = &[];\n"),
        // Test code, xtask and benches are not bound.
        ("backends/linux/src/tests.rs", "static T: u8 = 0;\n"),
        (
            "capi/src/lib.rs",
            "#[cfg(test)]\nmod panic_tests;\n#[cfg(test)]\nmod t {\n    static U: u8 = 0;\n}\n",
        ),
        ("capi/src/panic_tests.rs", "static V: u8 = 0;\n"),
        ("xtask/src/a.rs", "static W: u8 = 0;\n"),
        ("backends/linux/benches/b.rs", "static X: u8 = 0;\n"),
    ];
    assert_eq!(
        rules_of(&checked(&tree, &layered(&[]))),
        vec![
            ("backends/linux/src/cache.rs", 2, "process-wide-static"),
            ("tools/src/a.rs", 1, "process-wide-static"),
        ]
    );
    // Listed: allowed; a listed static no file declares: an error.
    let rules = Rules {
        statics_allowed: Some(&[
            ("backends/linux/src/cache.rs", "SEEN", "a cache"),
            ("tools/src/a.rs", "NAMES", "constant"),
            ("unwind/src/gone.rs", "GONE", "removed"),
        ]),
        ..layered(&[])
    };
    assert_eq!(
        rules_of(&checked(&tree, &rules)),
        vec![("unwind/src/gone.rs", 0, "ratchet")]
    );
}

#[test]
fn branching_on_an_error_message_fails() {
    let tree = [
        (
            "src/a.rs",
            "fn f(why: &str) -> bool {\n    if why.starts_with(\"no tracepoint\") { return true; }\n    false\n}\n",
        ),
        (
            "backends/linux/src/b.rs",
            "fn f(e: std::io::Error) -> bool {\n    e.to_string()\n        .contains(\"ENOENT\")\n}\n",
        ),
        // A formatted error, another prose field, an equality; but not a
        // formatted other value.
        (
            "report/src/f.rs",
            "fn f(err: E, note: &str, x: u8) -> bool {\n    format!(\"{err:?}\").find(\"x\").is_some()\n        || note.contains(\"y\")\n        || format!(\"{x}\").contains(\"1\")\n        || e.to_string() == \"z\"\n}\n",
        ),
        // The tools parse arguments: only a test of an error value counts.
        (
            "tools/src/c.rs",
            "fn f(arg: &str, name: u8, msg: &str) -> bool {\n    arg.starts_with(\"-\") || name.to_string().contains(\"1\") || msg.contains(\"-\")\n}\n",
        ),
        (
            "tools/src/d.rs",
            "fn f(err: std::io::Error) -> bool { err.to_string().contains(\"x\") }\n",
        ),
        // Comments, strings and tests do not count.
        (
            "src/e.rs",
            "// why.starts_with(\nconst S: &str = \"why.contains(\";\n#[cfg(test)]\nmod tests {\n    fn t(e: u8) { assert!(e.to_string().contains(\"1\")); }\n}\n",
        ),
    ];
    let rules = Rules {
        layering: None,
        ..layered(&[])
    };
    assert_eq!(
        rules_of(&checked(&tree, &rules)),
        vec![
            ("backends/linux/src/b.rs", 2, "branch-on-error-text"),
            ("report/src/f.rs", 2, "branch-on-error-text"),
            ("report/src/f.rs", 3, "branch-on-error-text"),
            ("report/src/f.rs", 5, "branch-on-error-text"),
            ("src/a.rs", 2, "branch-on-error-text"),
            ("tools/src/d.rs", 1, "branch-on-error-text"),
        ]
    );
    let rules = Rules {
        layering: None,
        error_text: Some(ErrorText {
            ratchet: &[
                ("src/a.rs", "why.starts_with("),
                ("src/e.rs", "why.contains("),
            ],
            ..ErrorText::project()
        }),
        ..layered(&[])
    };
    assert_eq!(
        rules_of(&checked(&tree, &rules)),
        vec![
            ("backends/linux/src/b.rs", 2, "branch-on-error-text"),
            ("report/src/f.rs", 2, "branch-on-error-text"),
            ("report/src/f.rs", 3, "branch-on-error-text"),
            ("report/src/f.rs", 5, "branch-on-error-text"),
            ("src/e.rs", 0, "ratchet"),
            ("tools/src/d.rs", 1, "branch-on-error-text"),
        ]
    );
}

#[test]
fn a_crate_may_not_depend_on_one_above_it() {
    let tree = [
        (
            "Cargo.toml",
            "[workspace.dependencies]\npmc = { package = \"hwpmc\", path = \".\" }\n\n[package]\nname = \"hwpmc\"\n",
        ),
        (
            "backends/linux/Cargo.toml",
            "[package]\nname = \"hwpmc-linux\"\n\n[dev-dependencies]\nlibc = \"0.2\"\npmc.workspace = true\n",
        ),
        (
            "backends/freebsd/Cargo.toml",
            "[dependencies]\ncore_api = { package = \"hwpmc\", path = \"../..\" }\n",
        ),
        (
            "report/Cargo.toml",
            "[dependencies]\npmc.workspace = true\n",
        ),
        ("src/lib.rs", ""),
    ];
    assert_eq!(
        rules_of(&checked(&tree, &layered(&[]))),
        vec![
            ("backends/freebsd/Cargo.toml", 2, "upward-crate-dependency"),
            ("backends/linux/Cargo.toml", 6, "upward-crate-dependency"),
        ]
    );
}

#[test]
fn the_layering_ratchets_name_real_files() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask is in the workspace");
    let hidden: Vec<&str> = layers::HIDDEN_UPWARD.iter().map(|(h, _)| *h).collect();
    for (file, target) in layers::UPWARD_RATCHET {
        assert!(
            root.join(file).is_file(),
            "{file} is in UPWARD_RATCHET but missing"
        );
        assert!(
            root.join(target).is_file() || hidden.contains(target),
            "{target} is in UPWARD_RATCHET but neither a file nor a hidden path"
        );
    }
    for (file, _) in error_text::ERROR_TEXT_RATCHET {
        assert!(
            root.join(file).is_file(),
            "{file} is in ERROR_TEXT_RATCHET but missing"
        );
    }
}
