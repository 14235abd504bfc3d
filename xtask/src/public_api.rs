//! `cargo xtask public-api [--bless]`: the public surface of each library
//! crate, listed from its rustdoc JSON by the `public-api` crate, against
//! the snapshot committed in `public-api/<package>.txt`. A difference fails
//! with the items added (+) and removed (-), so the surface changes only on
//! purpose; `--bless` rewrites the snapshots.
//!
//! Rustdoc JSON is unstable: `RUSTC_BOOTSTRAP=1` lets the project's stable
//! toolchain write it, and `public-api` reads one format version only
//! ([`FORMAT_VERSION`]; the crate is pinned in xtask/Cargo.toml). A new
//! toolchain that writes another format needs the `public-api` release
//! that reads it. The lists are of the host target (Linux) with default
//! features, sorted; blanket impls (`impl<T> From<T> for T` …) are left
//! out, auto traits (`Send`, `Sync` …) kept.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use clap::Args;

/// The library crates whose surface is kept: (package, library name).
const CRATES: &[(&str, &str)] = &[
    ("hwpmc", "pmc"),
    ("hwpmc-linux", "pmc_linux"),
    ("hwpmc-freebsd", "pmc_freebsd"),
    ("hwpmc-report", "pmc_report"),
    ("hwpmc-unwind", "pmc_unwind"),
    ("hwpmc-suggest", "pmc_suggest"),
];

/// The rustdoc JSON format `public-api` 0.52.1 (rustdoc-types 0.57) reads:
/// what rustc 1.95 writes.
const FORMAT_VERSION: u64 = 57;

/// Where the snapshots live, relative to the workspace root.
const SNAPSHOTS: &str = "public-api";

#[derive(Args)]
pub struct PublicApiArgs {
    /// Rewrite the snapshots with the current surface.
    #[arg(long)]
    bless: bool,
    /// Only these packages (default: every library crate).
    packages: Vec<String>,
}

pub fn run(args: &PublicApiArgs) -> ExitCode {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."));
    let mut failed = 0;
    for &(package, lib) in CRATES {
        if !args.packages.is_empty() && !args.packages.iter().any(|p| p == package) {
            continue;
        }
        let items = match surface(&root, package, lib) {
            Ok(items) => items,
            Err(why) => {
                eprintln!("xtask public-api: {package}: {why}");
                failed += 1;
                continue;
            }
        };
        let path = root.join(SNAPSHOTS).join(format!("{package}.txt"));
        let text = snapshot_text(package, lib, &items);
        if args.bless {
            if let Err(e) =
                fs::create_dir_all(root.join(SNAPSHOTS)).and_then(|()| fs::write(&path, &text))
            {
                eprintln!("xtask public-api: writing {}: {e}", path.display());
                failed += 1;
                continue;
            }
            println!(
                "public-api: {package}: {} items written to {SNAPSHOTS}/{package}.txt",
                items.len()
            );
            continue;
        }
        let kept = fs::read_to_string(&path).unwrap_or_default();
        let (added, removed) = difference(&items_of(&kept), &items);
        if added.is_empty() && removed.is_empty() {
            println!(
                "public-api: {package}: {} items, as in {SNAPSHOTS}/{package}.txt",
                items.len()
            );
            continue;
        }
        failed += 1;
        eprintln!(
            "public-api: {package}: the public surface differs from {SNAPSHOTS}/{package}.txt \
             ({} added, {} removed):",
            added.len(),
            removed.len()
        );
        for item in &removed {
            eprintln!("- {item}");
        }
        for item in &added {
            eprintln!("+ {item}");
        }
    }
    if failed == 0 {
        ExitCode::SUCCESS
    } else {
        eprintln!(
            "xtask public-api: {failed} crate(s) differ or failed; if the change is on purpose, \
             run `cargo xtask public-api --bless` and commit {SNAPSHOTS}/"
        );
        ExitCode::FAILURE
    }
}

/// The sorted public items of one library, from its rustdoc JSON.
fn surface(root: &Path, package: &str, lib: &str) -> Result<Vec<String>, String> {
    let target = root.join("target");
    let status = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
        .current_dir(root)
        .env("RUSTC_BOOTSTRAP", "1")
        .args(["rustdoc", "-q", "--lib", "-p", package, "--target-dir"])
        .arg(&target)
        .args(["--", "-Z", "unstable-options", "--output-format", "json"])
        .status()
        .map_err(|e| format!("running cargo rustdoc: {e}"))?;
    if !status.success() {
        return Err(format!("cargo rustdoc failed ({status})"));
    }
    let json = target.join("doc").join(format!("{lib}.json"));
    let api = public_api::Builder::from_rustdoc_json(&json)
        .omit_blanket_impls(true)
        .build()
        .map_err(|e| {
            let written = format_version(&json).map_or_else(
                || "an unknown format".to_string(),
                |v| format!("format {v}"),
            );
            format!(
                "reading {}: {e} (rustdoc wrote {written}; public-api reads format \
                 {FORMAT_VERSION}: pin the public-api release for this toolchain in \
                 xtask/Cargo.toml)",
                json.display()
            )
        })?;
    Ok(api.items().map(ToString::to_string).collect())
}

/// The `format_version` of a rustdoc JSON file.
fn format_version(json: &Path) -> Option<u64> {
    let text = fs::read_to_string(json).ok()?;
    let value: serde_json::Value = serde_json::from_str(&text).ok()?;
    value.get("format_version")?.as_u64()
}

fn snapshot_text(package: &str, lib: &str, items: &[String]) -> String {
    let mut text = format!(
        "// The public surface of {package} (`{lib}`): `cargo xtask public-api` compares, \
         `--bless` rewrites.\n"
    );
    for item in items {
        text.push_str(item);
        text.push('\n');
    }
    text
}

/// A snapshot's items (`//` comment lines left out: an item may start
/// with `#[…]`).
fn items_of(snapshot: &str) -> Vec<String> {
    snapshot
        .lines()
        .filter(|l| !l.starts_with("//") && !l.is_empty())
        .map(str::to_string)
        .collect()
}

/// The items of `now` not in `kept` (added) and of `kept` not in `now`
/// (removed), each in its list's order.
fn difference(kept: &[String], now: &[String]) -> (Vec<String>, Vec<String>) {
    use std::collections::BTreeSet;
    let kept_set: BTreeSet<&String> = kept.iter().collect();
    let now_set: BTreeSet<&String> = now.iter().collect();
    let added = now
        .iter()
        .filter(|i| !kept_set.contains(i))
        .cloned()
        .collect();
    let removed = kept
        .iter()
        .filter(|i| !now_set.contains(i))
        .cloned()
        .collect();
    (added, removed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_snapshot_round_trips_and_differences_are_named() {
        let items = strings(&[
            "#[non_exhaustive] pub enum pmc::Error",
            "pub fn pmc::ncpu() -> usize",
            "pub mod pmc::spec",
        ]);
        let text = snapshot_text("hwpmc", "pmc", &items);
        assert!(text.starts_with("// "));
        assert_eq!(items_of(&text), items);
        let now = strings(&[
            "#[non_exhaustive] pub enum pmc::Error",
            "pub fn pmc::ncpu() -> u32",
            "pub mod pmc::spec",
        ]);
        let (added, removed) = difference(&items_of(&text), &now);
        assert_eq!(added, strings(&["pub fn pmc::ncpu() -> u32"]));
        assert_eq!(removed, strings(&["pub fn pmc::ncpu() -> usize"]));
        assert_eq!(difference(&items, &items), (vec![], vec![]));
    }

    #[test]
    fn every_listed_crate_is_a_workspace_library() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .expect("xtask is in the workspace");
        let mut manifests = vec![fs::read_to_string(root.join("Cargo.toml")).expect("root")];
        for dir in [
            "backends/linux",
            "backends/freebsd",
            "report",
            "unwind",
            "suggest",
        ] {
            manifests.push(fs::read_to_string(root.join(dir).join("Cargo.toml")).expect(dir));
        }
        for (package, lib) in CRATES {
            let found = manifests.iter().any(|m| {
                m.contains(&format!("name = \"{package}\""))
                    && m.contains(&format!("name = \"{lib}\""))
            });
            assert!(found, "{package} (lib {lib}) is not a workspace library");
        }
    }
}
