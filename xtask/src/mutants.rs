//! `cargo xtask mutants`: how strong the tests are, measured by
//! cargo-mutants on the files whose logic matters most, one target at a
//! time, each mutant tested only by the tests of the crate that owns the
//! file: its unit tests, plus the binding's live tests for the ring and
//! self-monitoring code that only the kernel exercises (fast enough for a
//! 2-core machine; `--shard k/n` splits a target across runs or machines). Prints caught / missed / unviable /
//! timeout per file and the score, caught / (caught + missed).
//!
//! A developer command: a full run takes hours here, far too long for CI.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

/// The measured targets: (package, file or glob, the `cargo test` target
/// selection that tests it).
pub const TARGETS: [(&str, &str, &[&str]); 7] = [
    ("pmc", "src/spec/**", &["--lib"]),
    ("pmc", "src/log/**", &["--lib"]),
    ("pmc", "src/pmc{.rs,/**}", &["--lib"]),
    // attr.rs and record.rs with the modules split out of them.
    ("pmc-linux", "backends/linux/src/attr{.rs,/**}", &["--lib"]),
    (
        "pmc-linux",
        "backends/linux/src/record{.rs,/**}",
        &["--lib", "--test=abi_header"],
    ),
    // Rings and the metadata page are only exercised by the kernel.
    (
        "pmc-linux",
        "backends/linux/src/ring.rs",
        &["--lib", "--test=live"],
    ),
    (
        "pmc-linux",
        "backends/linux/src/selfmon.rs",
        &["--lib", "--test=live"],
    ),
];

/// Options of `cargo xtask mutants`.
#[derive(clap::Args, Debug, Clone)]
pub struct MutantsArgs {
    /// Only the targets whose file contains this text (`ring`, `src/spec`);
    /// repeatable. Default: all of them.
    #[arg(long = "file", value_name = "TEXT")]
    pub files: Vec<String>,
    /// Run shard K of N of each target (`--shard 0/4`), round-robin: one
    /// shard alone is a sample of the whole file.
    #[arg(long, value_name = "K/N")]
    pub shard: Option<String>,
    /// Mutants built and tested at once (each needs a build directory).
    #[arg(long, default_value_t = 1)]
    pub jobs: u32,
    /// Where each target's `mutants.out` goes.
    #[arg(long, default_value = "target/mutants")]
    pub output: PathBuf,
    /// Only print the table from an earlier run's results.
    #[arg(long)]
    pub report_only: bool,
    /// List the mutants of the selected targets instead of testing them.
    #[arg(long)]
    pub list: bool,
}

/// Outcome counts of one source file.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct FileScore {
    pub caught: u32,
    pub missed: u32,
    pub unviable: u32,
    pub timeout: u32,
    /// The missed mutants, as cargo-mutants names them.
    pub survivors: Vec<String>,
}

impl FileScore {
    /// Caught over viable non-timeout mutants, in percent.
    pub fn score(&self) -> Option<f64> {
        let tested = self.caught + self.missed;
        (tested > 0).then(|| 100.0 * f64::from(self.caught) / f64::from(tested))
    }
}

/// The directory name of a target's results.
fn slug(file: &str) -> String {
    let flat = file
        .trim_end_matches("/**")
        .replace(['/', '.', '*', '{', '}', ','], "_");
    // `attr{.rs,/**}` and `attr.rs` share a name.
    let mut out = String::with_capacity(flat.len());
    for c in flat.chars() {
        if !(c == '_' && out.ends_with('_')) {
            out.push(c);
        }
    }
    out.trim_matches('_').to_string()
}

/// Adds the lines of one of cargo-mutants' outcome lists
/// (`path:line:col: replace … with …`) to the per-file scores.
pub fn tally_outcomes(text: &str, outcome: &str, scores: &mut BTreeMap<String, FileScore>) {
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let file = line.split(':').next().unwrap_or(line).to_string();
        let s = scores.entry(file).or_default();
        match outcome {
            "caught" => s.caught += 1,
            "missed" => {
                s.missed += 1;
                s.survivors.push(line.to_string());
            }
            "unviable" => s.unviable += 1,
            "timeout" => s.timeout += 1,
            _ => {}
        }
    }
}

/// Reads the outcome lists under `dir` (a target's `--output`).
fn read_results(dir: &Path, scores: &mut BTreeMap<String, FileScore>) -> bool {
    let out = dir.join("mutants.out");
    if !out.is_dir() {
        return false;
    }
    for outcome in ["caught", "missed", "unviable", "timeout"] {
        if let Ok(text) = std::fs::read_to_string(out.join(format!("{outcome}.txt"))) {
            tally_outcomes(&text, outcome, scores);
        }
    }
    true
}

/// The per-file table.
pub fn table(scores: &BTreeMap<String, FileScore>) -> String {
    use std::fmt::Write as _;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{:<36} {:>6} {:>6} {:>8} {:>7} {:>7}",
        "file", "caught", "missed", "unviable", "timeout", "score"
    );
    let mut total = FileScore::default();
    for (file, f) in scores {
        let _ = writeln!(
            s,
            "{:<36} {:>6} {:>6} {:>8} {:>7} {:>7}",
            file,
            f.caught,
            f.missed,
            f.unviable,
            f.timeout,
            f.score().map_or("-".into(), |p| format!("{p:.1}%"))
        );
        total.caught += f.caught;
        total.missed += f.missed;
        total.unviable += f.unviable;
        total.timeout += f.timeout;
    }
    let _ = writeln!(
        s,
        "{:<36} {:>6} {:>6} {:>8} {:>7} {:>7}",
        "total",
        total.caught,
        total.missed,
        total.unviable,
        total.timeout,
        total.score().map_or("-".into(), |p| format!("{p:.1}%"))
    );
    s
}

/// Runs the selected targets and prints the table.
pub fn run(args: &MutantsArgs) -> ExitCode {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let targets: Vec<(&str, &str, &[&str])> = TARGETS
        .iter()
        .copied()
        .filter(|(_, f, _)| {
            args.files.is_empty() || args.files.iter().any(|x| f.contains(x.as_str()))
        })
        .collect();
    if targets.is_empty() {
        eprintln!(
            "xtask mutants: no target matches {:?}; targets: {:?}",
            args.files,
            TARGETS.map(|(_, f, _)| f)
        );
        return ExitCode::FAILURE;
    }
    let mut ok = true;
    if !args.report_only {
        for (package, file, test_targets) in &targets {
            let out = args.output.join(slug(file));
            if let Err(e) = std::fs::create_dir_all(&out) {
                eprintln!("xtask mutants: create {}: {e}", out.display());
                return ExitCode::FAILURE;
            }
            // Lowest priority: the machine is shared, and a mutant run is long.
            let mut cmd = Command::new("nice");
            cmd.args([
                "-n",
                "19",
                &cargo,
                "mutants",
                "--package",
                package,
                "--file",
                file,
            ])
            .arg("--output")
            .arg(&out)
            .args(["--jobs", &args.jobs.to_string(), "--no-shuffle"]);
            // Only the tests of the crate that owns the file.
            for t in *test_targets {
                cmd.arg(format!("--cargo-test-arg={t}"));
            }
            if let Some(shard) = &args.shard {
                // Round-robin: every shard is a sample spread over the
                // whole file, so one shard alone estimates its score.
                cmd.args(["--shard", shard, "--sharding", "round-robin"]);
            }
            if args.list {
                cmd.arg("--list");
            }
            eprintln!("xtask: running {cmd:?}");
            match cmd.status() {
                // 0: all caught, 2: some missed, 3: some timed out.
                Ok(s) if matches!(s.code(), Some(0 | 2 | 3)) => {}
                Ok(s) => {
                    eprintln!(
                        "xtask mutants: cargo mutants on {file} ended with {s} (is cargo-mutants installed? cargo install cargo-mutants)"
                    );
                    ok = false;
                }
                Err(e) => {
                    eprintln!(
                        "xtask mutants: cannot run cargo mutants: {e} (cargo install cargo-mutants)"
                    );
                    return ExitCode::FAILURE;
                }
            }
        }
        if args.list {
            return if ok {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            };
        }
    }
    let mut scores = BTreeMap::new();
    for (_, file, _) in &targets {
        if !read_results(&args.output.join(slug(file)), &mut scores) {
            println!("{file}: no results under {}", args.output.display());
        }
    }
    print!("{}", table(&scores));
    for (file, f) in &scores {
        if !f.survivors.is_empty() {
            println!("\nsurvivors in {file}:");
            for m in &f.survivors {
                println!("  {m}");
            }
        }
    }
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outcome_lists_are_tallied_per_file() {
        let mut scores = BTreeMap::new();
        tally_outcomes(
            "src/spec/parse.rs:10:5: replace parse -> bool with true\n\
             src/spec/parse.rs:12:5: replace + with -\n\
             src/spec/names.rs:3:1: replace f with ()\n",
            "caught",
            &mut scores,
        );
        tally_outcomes(
            "src/spec/parse.rs:40:9: replace == with !=\n",
            "missed",
            &mut scores,
        );
        tally_outcomes(
            "src/spec/names.rs:7:1: replace g with Default::default()\n",
            "unviable",
            &mut scores,
        );
        tally_outcomes(
            "src/spec/parse.rs:50:1: replace loop\n",
            "timeout",
            &mut scores,
        );
        let parse = &scores["src/spec/parse.rs"];
        assert_eq!(
            (parse.caught, parse.missed, parse.unviable, parse.timeout),
            (2, 1, 0, 1)
        );
        assert_eq!(
            parse.survivors,
            vec!["src/spec/parse.rs:40:9: replace == with !="]
        );
        assert!((parse.score().unwrap() - 200.0 / 3.0).abs() < 1e-9);
        let names = &scores["src/spec/names.rs"];
        assert_eq!((names.caught, names.unviable), (1, 1));
        assert_eq!(names.score(), Some(100.0));
        let t = table(&scores);
        assert!(t.contains("66.7%"), "{t}");
        let total = t.lines().last().unwrap();
        assert!(
            total.starts_with("total") && total.contains("75.0%"),
            "{total}"
        );
    }

    #[test]
    fn nothing_tested_has_no_score() {
        let f = FileScore {
            unviable: 3,
            ..Default::default()
        };
        assert_eq!(f.score(), None);
    }

    #[test]
    fn each_target_has_its_own_result_directory() {
        let slugs: Vec<String> = TARGETS.iter().map(|(_, f, _)| slug(f)).collect();
        assert_eq!(slugs[0], "src_spec");
        assert_eq!(slugs[3], "backends_linux_src_attr_rs");
        assert_eq!(slugs[4], "backends_linux_src_record_rs");
        let mut unique = slugs.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), slugs.len());
    }
}
