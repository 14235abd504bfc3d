use super::*;

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
    layers: false,
};

fn rules_found(files: &[(&str, String)], rules: &Rules<'_>) -> Vec<(String, &'static str)> {
    let tree = Tree::new(files);
    let (found, _) = check_tree(&tree.0, rules).expect("the tree reads");
    found.into_iter().map(|f| (f.path, f.rule)).collect()
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
