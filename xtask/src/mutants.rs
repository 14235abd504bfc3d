//! `cargo xtask mutants`: how strong the tests are, measured by
//! cargo-mutants on the files whose logic matters most, one target at a
//! time, each mutant tested only by the tests of the crate that owns the
//! file: its unit tests, plus the live tests of the code only the kernel
//! exercises: the binding's rings and self-monitoring, and the live
//! conformance subject of `Pmc` (hot path, real per-CPU counters;
//! `PMC_LIVE_ONLY` keeps the rest of that binary out). Fast enough for a
//! 2-core machine; `--shard k/n` splits a target across runs or machines.
//! Prints caught / missed / unviable /
//! timeout per file and the score, caught / (caught + missed).
//!
//! `--re REGEX` re-tests only the matching mutants (the survivors of a
//! full run, after new tests) into `<target>/rerun`; the table then shows
//! the full run with those outcomes replaced: the after-score without
//! another full run.
//!
//! A developer command: a full run takes hours here, far too long for CI.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

/// One measured target.
#[derive(Debug, Clone, Copy)]
pub struct Target {
    /// The package that owns the file.
    pub package: &'static str,
    /// The file or glob cargo-mutants mutates.
    pub file: &'static str,
    /// The `cargo test` target selection that tests it.
    pub tests: &'static [&'static str],
    /// Only the trials of a libtest-mimic binary whose name starts with
    /// one of these comma-separated prefixes: (variable, prefixes), the
    /// variable being read by the binary (`PMC_LIVE_ONLY` in
    /// tests/live/main.rs, `PMC_CLI_ONLY` in tools/tests/cli/main.rs; a
    /// test-binary filter would filter the lib tests of the same `cargo
    /// test` too).
    pub only: Option<(&'static str, &'static str)>,
    /// The mutant builds' debug info (`CARGO_PROFILE_DEV_DEBUG`): none
    /// unless a test reads the binaries' own lines.
    pub debug: &'static str,
}

const fn target(
    package: &'static str,
    file: &'static str,
    tests: &'static [&'static str],
) -> Target {
    Target {
        package,
        file,
        tests,
        only: None,
        debug: "0",
    }
}

/// The measured targets.
pub const TARGETS: [Target; 13] = [
    target("hwpmc", "src/spec/**", &["--lib"]),
    target("hwpmc", "src/log/**", &["--lib"]),
    // The conformance suite runs in the lib tests over the simulated and
    // FreeBSD-double backends; only its live subject on perf_event reaches
    // the hot path (`HotCounter`) and real per-CPU counters, and only the
    // live log tests the log a start needs (0.5 s together).
    Target {
        only: Some((
            "PMC_LIVE_ONLY",
            "conformance::linux::,sampling::log_required_rules",
        )),
        ..target("hwpmc", "src/pmc{.rs,/**}", &["--lib", "--test=live"])
    },
    // attr.rs and record.rs with the modules split out of them.
    target(
        "hwpmc-linux",
        "backends/linux/src/attr{.rs,/**}",
        &["--lib"],
    ),
    target(
        "hwpmc-linux",
        "backends/linux/src/record{.rs,/**}",
        &["--lib", "--test=abi_header"],
    ),
    // Rings and the metadata page are only exercised by the kernel.
    target(
        "hwpmc-linux",
        "backends/linux/src/ring.rs",
        &["--lib", "--test=live", "--test=ring_alias"],
    ),
    target(
        "hwpmc-linux",
        "backends/linux/src/selfmon.rs",
        &["--lib", "--test=live"],
    ),
    // The FreeBSD kernel double: its own tests (the conformance suite over
    // it runs in pmc's lib tests, whose build per mutant is ten times
    // longer).
    target(
        "hwpmc-freebsd",
        "backends/freebsd/src/double/**",
        &["--tests"],
    ),
    // The FreeBSD adapter, tested over the double by pmc's lib tests.
    target("hwpmc", "src/backend/freebsd/**", &["--lib"]),
    // The CFI unwinder: its unit tests and the captured stacks of a C
    // program (tests/captured.rs, with its proptest of hostile input).
    target("hwpmc-unwind", "unwind/src/**", &["--tests"]),
    // The report's symbolizer, by the report crate's own tests (the CLI
    // comparisons with perf build the tools per mutant: hours here); they
    // name frames of the test binary itself, by its line tables.
    Target {
        debug: "line-tables-only",
        ..target("hwpmc-report", "report/src/symbols{.rs,/**}", &["--tests"])
    },
    // libpmc for C: the Rust tests and the C programs (tests/c_programs.rs).
    target("hwpmc-capi", "capi/src/**", &["--tests"]),
    // pmcstat's output formats: the golden tests of FreeBSD's printfs and
    // the counting tools' output (the profile comparisons with perf, which
    // never reach this file, take ten times longer).
    // (`pmcstat_options::a_names_every_frame_with_its_source_line` reads
    // the test binary's line tables.)
    Target {
        only: Some((
            "PMC_CLI_ONLY",
            "freebsd_counting::,pmcstat_options::,pmcstat::,pmccontrol::,bad_input::,real_use::,freebsd_pmccontrol::",
        )),
        debug: "line-tables-only",
        ..target(
            "hwpmc-tools",
            "tools/src/output.rs",
            &["--lib", "--test=cli"],
        )
    },
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
    /// Only the mutants whose name matches this regex (cargo-mutants
    /// `--re`), repeatable: a re-run of earlier survivors. Its outcomes go
    /// to `<target>/rerun` and replace those of the full run in the table.
    #[arg(long = "re", value_name = "REGEX")]
    pub re: Vec<String>,
    /// The least time a mutant's tests get before counting as a timeout, in
    /// seconds. cargo-mutants derives the limit from the unmutated run; on
    /// a loaded shared machine a caught mutant (failing tests print
    /// backtraces) can take several times that.
    #[arg(long, default_value_t = 120)]
    pub min_test_timeout: u32,
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

/// The outcomes of a re-run go here, under a target's directory.
const RERUN: &str = "rerun";

/// The outcome lists of one `mutants.out`: (outcome, mutant name) pairs.
fn outcome_lines(out: &Path) -> Option<Vec<(&'static str, String)>> {
    if !out.is_dir() {
        return None;
    }
    let mut lines = Vec::new();
    for outcome in ["caught", "missed", "unviable", "timeout"] {
        if let Ok(text) = std::fs::read_to_string(out.join(format!("{outcome}.txt"))) {
            lines.extend(
                text.lines()
                    .filter(|l| !l.trim().is_empty())
                    .map(|l| (outcome, l.to_string())),
            );
        }
    }
    Some(lines)
}

/// A mutant's name without its `line:col` (new tests shift the lines of
/// the file they are in): `path: replace … in f`.
fn without_position(name: &str) -> String {
    let mut parts = name.splitn(4, ':');
    let file = parts.next().unwrap_or_default();
    match (parts.next(), parts.next(), parts.next()) {
        (Some(_), Some(_), Some(rest)) => format!("{file}:{}", rest.trim_start()),
        _ => name.to_string(),
    }
}

/// Replaces, in `full`, the outcome of each mutant that `rerun` tested
/// again: matched by its whole name where the file has not moved, else by
/// name without position (new tests shift lines), one for one, a survivor
/// of the full run first (a re-run re-tests survivors; several mutants of
/// one function can share a name without position).
pub fn overlay(
    mut full: Vec<(&'static str, String)>,
    rerun: &[(&'static str, String)],
) -> Vec<(&'static str, String)> {
    let mut replaced = vec![false; full.len()];
    let mut moved = Vec::new();
    for again in rerun {
        match (0..full.len()).find(|&i| !replaced[i] && full[i].1 == again.1) {
            Some(i) => {
                full[i] = again.clone();
                replaced[i] = true;
            }
            None => moved.push(again),
        }
    }
    for again in moved {
        let key = without_position(&again.1);
        let pick = (0..full.len())
            .filter(|&i| !replaced[i] && without_position(&full[i].1) == key)
            .min_by_key(|&i| full[i].0 == "caught");
        if let Some(i) = pick {
            full[i] = again.clone();
            replaced[i] = true;
        }
    }
    full
}

/// Reads the outcome lists under `dir` (a target's `--output`), with a
/// re-run's outcomes in place of the full run's.
fn read_results(dir: &Path, scores: &mut BTreeMap<String, FileScore>) -> bool {
    let Some(mut lines) = outcome_lines(&dir.join("mutants.out")) else {
        return false;
    };
    if let Some(rerun) = outcome_lines(&dir.join(RERUN).join("mutants.out")) {
        lines = overlay(lines, &rerun);
    }
    for (outcome, line) in lines {
        tally_outcomes(&line, outcome, scores);
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
    let targets: Vec<Target> = TARGETS
        .iter()
        .copied()
        .filter(|t| args.files.is_empty() || args.files.iter().any(|x| t.file.contains(x.as_str())))
        .collect();
    if targets.is_empty() {
        eprintln!(
            "xtask mutants: no target matches {:?}; targets: {:?}",
            args.files,
            TARGETS.map(|t| t.file)
        );
        return ExitCode::FAILURE;
    }
    let mut ok = true;
    if !args.report_only {
        for &Target {
            package,
            file,
            tests: test_targets,
            only,
            debug,
        } in &targets
        {
            let mut out = args.output.join(slug(file));
            if !args.re.is_empty() {
                out = out.join(RERUN);
            }
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
            .args(["--jobs", &args.jobs.to_string(), "--no-shuffle"])
            .args(["--minimum-test-timeout", &args.min_test_timeout.to_string()])
            // A caught mutant's panics need no symbolised backtrace: under
            // load that alone took 13 s of a 20 s limit.
            .env("RUST_BACKTRACE", "0")
            // No debug info where nothing reads it: every mutant relinks
            // the test binaries.
            .env("CARGO_PROFILE_DEV_DEBUG", debug);
            for re in &args.re {
                cmd.args(["--re", re]);
            }
            // Only the tests of the crate that owns the file.
            for t in test_targets {
                cmd.arg(format!("--cargo-test-arg={t}"));
            }
            if let Some((variable, prefixes)) = only {
                cmd.env(variable, prefixes);
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
    for Target { file, .. } in &targets {
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
    fn a_rerun_replaces_the_outcomes_of_the_mutants_it_tested_again() {
        let full = vec![
            ("caught", "a.rs:3:1: replace f -> u8 with 0".to_string()),
            ("missed", "a.rs:9:5: replace | with ^ in g".to_string()),
            ("missed", "a.rs:9:12: replace | with ^ in g".to_string()),
            (
                "timeout",
                "a.rs:20:1: replace h -> bool with true".to_string(),
            ),
        ];
        // Lines moved by 2 since: matched without the position.
        let rerun = vec![
            ("caught", "a.rs:11:5: replace | with ^ in g".to_string()),
            (
                "caught",
                "a.rs:22:1: replace h -> bool with true".to_string(),
            ),
        ];
        let merged = overlay(full, &rerun);
        let outcomes: Vec<&str> = merged.iter().map(|(o, _)| *o).collect();
        assert_eq!(outcomes, ["caught", "caught", "missed", "caught"]);
        assert_eq!(merged[1].1, "a.rs:11:5: replace | with ^ in g");
        assert_eq!(merged[2].1, "a.rs:9:12: replace | with ^ in g");
        assert_eq!(
            without_position("a.rs:9:12: replace | with ^ in g"),
            "a.rs:replace | with ^ in g"
        );
    }

    /// Where the lines did not move, each re-run outcome replaces the
    /// mutant of its exact name, not the first one sharing its name
    /// without position (a caught one listed before the survivors).
    #[test]
    fn a_rerun_replaces_the_mutant_of_its_exact_name_first() {
        let full = vec![
            ("caught", "b.rs:5:1: replace & with | in f".to_string()),
            ("missed", "b.rs:25:3: replace & with | in f".to_string()),
            ("missed", "b.rs:40:3: replace & with | in f".to_string()),
        ];
        let rerun = vec![("caught", "b.rs:40:3: replace & with | in f".to_string())];
        let merged = overlay(full, &rerun);
        let outcomes: Vec<&str> = merged.iter().map(|(o, _)| *o).collect();
        assert_eq!(outcomes, ["caught", "missed", "caught"]);
        // Moved: the first survivor sharing its name takes it.
        let full = vec![
            ("caught", "b.rs:5:1: replace & with | in f".to_string()),
            ("missed", "b.rs:25:3: replace & with | in f".to_string()),
        ];
        let rerun = vec![("caught", "b.rs:27:3: replace & with | in f".to_string())];
        let outcomes: Vec<&str> = overlay(full, &rerun).iter().map(|(o, _)| *o).collect();
        assert_eq!(outcomes, ["caught", "caught"]);
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
        let slugs: Vec<String> = TARGETS.iter().map(|t| slug(t.file)).collect();
        assert_eq!(slugs[0], "src_spec");
        assert_eq!(slugs[3], "backends_linux_src_attr_rs");
        assert_eq!(slugs[4], "backends_linux_src_record_rs");
        let mut unique = slugs.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), slugs.len());
    }
}
