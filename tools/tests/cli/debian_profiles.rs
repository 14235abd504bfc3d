//! Flat profiles of the machine's own (Debian's) programs agree with
//! `perf report`: the same workload sampled by each tool with the same
//! event (`cpu-clock`, user mode), in one run; every function above 2 % of
//! the samples in either report has the same share in the other within
//! sampling noise (`shares.rs`: the bound from both tools' numbers of
//! samples, 1e-4 false failures per function, never a rerun), and
//! pmcstat leaves no more samples unnamed than perf does (within the same
//! noise).
//!
//! Functions are matched by object file name and symbol, an unnamed pc by
//! object and address (perf's `0x…14a9e` is pmcstat's `dash+0x14a9e`).
//! Which names exist depends on what is installed (libc6-dbg names libc's
//! internals for both tools); the comparison holds either way.

use std::collections::HashMap;

use pmc::probe::Requirement as R;

use crate::ensure;
use crate::harness::{Context, LiveTest, TestResult, test};
use crate::shares::{Shares, Z};
use crate::temp::TempDir;

const PMCSTAT: &str = env!("CARGO_BIN_EXE_pmcstat");

/// cpu-clock's period in ns of pmcstat, ~15 kHz, given with -n: FreeBSD's
/// count, not pmcstat's default for a clock (250000, perf's rate; see why
/// the two differ below).
const PERIOD: &str = "65536";
/// perf's: 4 kHz. Not one period for both, as issue 19 asks: both sample
/// one run, and two timers of one period on one task keep a fixed phase,
/// each sampling the code the other's interrupt returns to (CI-like run
/// 4: `__strcmp_avx2` 22.97 % vs 18.71 % at 250 µs both); at 5 % apart and
/// 4 kHz both, the shares of short workloads were 3+ points apart in 3 of
/// 7 runs. Incommensurate periods (3.8:1) drift through every phase, and
/// pmcstat's 4× samples keep its side's noise small.
const PERF_PERIOD: &str = "250000";
/// A function this share of either report must be in both.
const NOTABLE: f64 = 2.0;
/// Points two shares may differ by beyond sampling noise: what the two
/// tools attribute differently by construction. None known: both sample
/// one run, and a function one names and the other leaves unnamed is a
/// bug this test is for.
const SYSTEMATIC: f64 = 0.0;

fn needs(programs: &[&str]) -> Vec<R> {
    let mut r = vec![
        R::Paranoid(2),
        R::Program("perf".into()),
        R::Program("readelf".into()),
    ];
    r.extend(programs.iter().map(|p| R::Program((*p).into())));
    r
}

pub fn tests() -> Vec<LiveTest> {
    vec![
        test(
            "debian_profiles::a_dash_loop_agrees_with_perf_report",
            needs(&["dash"]),
            a_dash_loop_agrees_with_perf_report,
        ),
        test(
            "debian_profiles::gzip_agrees_with_perf_report",
            needs(&["gzip"]),
            gzip_agrees_with_perf_report,
        ),
        test(
            "debian_profiles::sort_agrees_with_perf_report",
            needs(&["sort"]),
            sort_agrees_with_perf_report,
        ),
        test(
            "debian_profiles::python3_agrees_with_perf_report",
            // Debian's own, not a python3 first on PATH (a pyenv shim is a
            // bash script).
            needs(&[DEBIAN_PYTHON3]),
            python3_agrees_with_perf_report,
        ),
    ]
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A flat profile: (object file name, function or `0x` + object address)
/// → percent of samples.
type Flat = HashMap<(String, String), f64>;

/// Runs `program args` ([`crate::run_ok`]); its standard output.
fn run(program: &str, args: &[&str]) -> Result<String, libtest_mimic::Failed> {
    Ok(text(&crate::run_ok(program, args)?.stdout))
}

/// `0x` + the address without leading zeros, as both tools' unnamed pcs
/// are keyed.
fn address_key(hex: &str) -> Option<String> {
    let v = u64::from_str_radix(hex.trim_start_matches("0x"), 16).ok()?;
    Some(format!("{v:#x}"))
}

/// One top-level line of pmcstat's `-G` (pmcpl_callgraph.c: a sampled
/// function with its own share): `NN.NN%  [count]  name @ path`.
pub(crate) struct GraphRow {
    pub(crate) percent: f64,
    pub(crate) count: u64,
    /// The function, or `image+0xoff` / a bare address where unnamed.
    pub(crate) name: String,
    /// The object's path (`None`: the line names none).
    pub(crate) path: Option<String>,
}

impl GraphRow {
    /// The object's file name (`[unknown]` without a path).
    pub(crate) fn object(&self) -> &str {
        self.path
            .as_deref()
            .map_or("[unknown]", |p| p.rsplit('/').next().unwrap_or(p))
    }

    /// The offset of an unnamed pc in its own image (`image+0xoff`), or
    /// the bare address.
    pub(crate) fn unnamed_offset(&self) -> Option<&str> {
        if self.name.starts_with("0x") {
            return Some(&self.name);
        }
        match self.name.rsplit_once("+0x") {
            Some((image, offset)) if image == self.object() => Some(offset),
            _ => None,
        }
    }
}

/// The top-level lines of `pmcstat -R -G` output.
pub(crate) fn graph_rows(graph: &str) -> Vec<GraphRow> {
    graph
        .lines()
        .filter(|l| l.starts_with(|c: char| c.is_ascii_digit()))
        .filter_map(|l| {
            let (percent, rest) = l.split_once('%')?;
            let (count, rest) = rest.split_once('[')?.1.split_once(']')?;
            let (name, path) = match rest.trim().rsplit_once(" @ ") {
                Some((n, p)) => (n.trim(), Some(p.to_string())),
                None => (rest.trim(), None),
            };
            Some(GraphRow {
                percent: percent.trim().parse().ok()?,
                count: count.parse().ok()?,
                name: name.to_string(),
                path,
            })
        })
        .collect()
}

/// pmcstat's flat profile from its `-G` top-level lines, and its number
/// of samples (the rows' counts); `paths` learns each object's path by its
/// file name.
fn pmcstat_flat(graph: &str, paths: &mut HashMap<String, String>) -> (Flat, usize) {
    let mut flat = Flat::new();
    let mut samples = 0;
    for row in graph_rows(graph) {
        samples += row.count as usize;
        if let Some(p) = &row.path {
            paths.insert(row.object().to_string(), p.clone());
        }
        let key = match row.unnamed_offset() {
            Some(offset) if !row.name.starts_with("0x") => {
                address_key(offset).unwrap_or_else(|| row.name.clone())
            }
            _ => row.name.clone(),
        };
        *flat.entry((row.object().to_string(), key)).or_default() += row.percent;
    }
    (flat, samples)
}

/// `perf report --sort comm,dso,sym --stdio -n` lines of `comm`
/// (`NN.NN%  SAMPLES  comm  dso  [.] symbol`), as percents of that
/// command's samples, and their number.
fn perf_flat(report: &str, comm: &str) -> (Flat, usize) {
    let mut flat = Flat::new();
    let mut samples = 0;
    for l in report.lines() {
        let l = l.trim();
        if l.starts_with('#') || l.is_empty() {
            continue;
        }
        let mut f = l.splitn(2, '%');
        let (Some(percent), Some(rest)) = (f.next(), f.next()) else {
            continue;
        };
        let Ok(percent) = percent.trim().parse::<f64>() else {
            continue;
        };
        let Some((comm_dso, sym)) = rest.split_once("[.]") else {
            continue;
        };
        let mut words = comm_dso.split_whitespace();
        let Some(Ok(count)) = words.next().map(str::parse::<usize>) else {
            continue;
        };
        if words.next() != Some(comm) {
            continue;
        }
        samples += count;
        let dso = words.collect::<Vec<_>>().join(" ");
        let sym = sym.trim();
        let key = if sym.starts_with("0x") {
            address_key(sym).unwrap_or_else(|| sym.to_string())
        } else {
            sym.to_string()
        };
        *flat.entry((dso, key)).or_default() += percent;
    }
    let total: f64 = flat.values().sum();
    if total > 0.0 {
        flat.values_mut().for_each(|p| *p *= 100.0 / total);
    }
    (flat, samples)
}

/// perf shows an unnamed pc by its file offset, pmcstat by its address in
/// the object (what nm and addr2line use); they differ in objects linked
/// at a fixed address (Debian's python3.11 is not PIE). perf's offsets
/// become object addresses by the object's PT_LOADs, read with readelf.
fn in_object_addresses(
    flat: Flat,
    paths: &HashMap<String, String>,
) -> Result<Flat, libtest_mimic::Failed> {
    let mut out = Flat::new();
    let mut loads: HashMap<String, Vec<(u64, u64, u64)>> = HashMap::new();
    for ((dso, key), percent) in flat {
        let address = key
            .strip_prefix("0x")
            .and_then(|h| u64::from_str_radix(h, 16).ok());
        let key = match (address, paths.get(&dso)) {
            (Some(offset), Some(path)) => {
                if !loads.contains_key(&dso) {
                    loads.insert(dso.clone(), pt_loads(path)?);
                }
                loads[&dso]
                    .iter()
                    .find(|(off, size, _)| (*off..off + size).contains(&offset))
                    .map_or(key, |(off, _, vaddr)| {
                        format!("{:#x}", vaddr + (offset - off))
                    })
            }
            _ => key,
        };
        *out.entry((dso, key)).or_default() += percent;
    }
    Ok(out)
}

/// (file offset, file size, vaddr) of each PT_LOAD, as `readelf -lW` shows.
fn pt_loads(path: &str) -> Result<Vec<(u64, u64, u64)>, libtest_mimic::Failed> {
    let listing = run("readelf", &["-lW", path])?;
    let hex = |w: &str| u64::from_str_radix(w.trim_start_matches("0x"), 16).ok();
    Ok(listing
        .lines()
        .filter(|l| l.trim_start().starts_with("LOAD"))
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            Some((hex(f.get(1)?)?, hex(f.get(4)?)?, hex(f.get(2)?)?))
        })
        .collect())
}

/// The share of a profile no symbol names.
fn unnamed(flat: &Flat) -> f64 {
    flat.iter()
        .filter(|((_, f), _)| f.starts_with("0x"))
        .map(|(_, p)| p)
        .sum()
}

/// The rows summed into [`unnamed`]'s share.
fn unnamed_rows(flat: &Flat) -> usize {
    flat.keys().filter(|(_, f)| f.starts_with("0x")).count()
}

/// How far two sums of printed shares, of `rows` rows in all, may be
/// apart by rounding alone: each share is printed to 0.01 (both reports
/// print two decimals), an error uniform over ±0.005 (standard deviation
/// 0.01/√12), so the sum's is 0.01·√(rows/12), taken [`Z`] times. (gzip,
/// stripped, is all unnamed: its sums read 100.16 % and 99.95 %, which a
/// bound of sampling noise alone — zero at a share of 100 % — failed.)
fn rounding_of_sums(rows: usize) -> f64 {
    Z * 0.01 * (rows as f64 / 12.0).sqrt()
}

/// Samples one run of `command` with both tools at once (perf records
/// pmcstat, which records the command), so the two profiles differ by
/// sampling alone, not by two runs of a workload that varies (a hash
/// seed, the cache, a loaded machine); of perf's report the command's own
/// rows count, relative to their total. Once: the bound is the sampling
/// noise of the two tools' numbers of samples (`shares.rs`), so a
/// disagreement beyond it is a bug to see, not a run to repeat.
fn agrees_with_perf(what: &str, command: &[&str]) -> TestResult {
    let dir = TempDir::new(&format!("debian-{what}"))?;
    let log = dir.path("s.pmclog");
    let data = dir.path("perf.data");
    let mut args = vec![
        "record",
        "-q",
        "-e",
        "cpu-clock:u",
        "-c",
        PERF_PERIOD,
        "-o",
        &data,
        "--",
        PMCSTAT,
        // -n sets the rate of the sampling PMCs after it (pmcstat(8)).
        "-n",
        PERIOD,
        "-P",
        "cpu-clock,usr",
        "-O",
        &log,
        "--",
    ];
    args.extend(command);
    run("perf", &args)?;
    let graph = run(PMCSTAT, &["-R", &log, "-G", "-"])?;
    let mut paths = HashMap::new();
    let (ours, n_ours) = pmcstat_flat(&graph, &mut paths);
    let comm = command[0].rsplit('/').next().unwrap_or(command[0]);
    // perf 6.1's `--comms` drops some of the command's own entries
    // (__memcmp_avx2_movbe of `sort`, in some runs): sort by comm instead
    // and keep the command's rows.
    let report = run(
        "perf",
        &[
            "report",
            "-i",
            &data,
            "--sort",
            "comm,dso,sym",
            "--stdio",
            "-q",
            "-n",
        ],
    )?;
    let (perfs, n_perf) = perf_flat(&report, comm);
    let perfs = in_object_addresses(perfs, &paths)?;
    ensure!(
        !ours.is_empty() && !perfs.is_empty(),
        "empty profile: pmcstat\n{graph}\nperf\n{report}"
    );

    let mut keys: Vec<&(String, String)> = ours
        .iter()
        .chain(perfs.iter())
        .filter(|(_, p)| **p > NOTABLE)
        .map(|(k, _)| k)
        .collect();
    keys.sort();
    keys.dedup();
    let mut table = String::new();
    let mut off = Vec::new();
    let shares = |ours: f64, theirs: f64| Shares {
        ours,
        n_ours,
        theirs,
        n_theirs: n_perf,
    };
    for k in keys {
        let (a, b) = (
            ours.get(k).copied().unwrap_or(0.0),
            perfs.get(k).copied().unwrap_or(0.0),
        );
        let (agrees, figures) = shares(a, b).within(SYSTEMATIC);
        table.push_str(&format!("{figures}  {} {}\n", k.0, k.1));
        if !agrees {
            off.push(k.clone());
        }
    }
    let (u_ours, u_perf) = (unnamed(&ours), unnamed(&perfs));
    // One-sided: pmcstat may name more than perf, never less.
    let (named_enough, figures) = Shares {
        ours: u_perf,
        n_ours: n_perf,
        theirs: u_ours,
        n_theirs: n_ours,
    }
    .not_below(SYSTEMATIC + rounding_of_sums(unnamed_rows(&ours) + unnamed_rows(&perfs)));
    table.push_str(&format!("unnamed, perf vs pmcstat: {figures}\n"));
    eprintln!("{what}: pmcstat vs perf, each function's share of its samples\n{table}");
    ensure!(
        off.is_empty(),
        "{what}: shares further apart than sampling noise (z = {Z}, 1e-4 per function): {off:?}\n{table}"
    );
    ensure!(
        named_enough,
        "{what}: pmcstat leaves {u_ours:.2} % unnamed, perf {u_perf:.2} %\n{table}"
    );
    Ok(())
}

fn a_dash_loop_agrees_with_perf_report() -> TestResult {
    agrees_with_perf(
        "dash",
        &[
            "dash",
            "-c",
            "i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done",
        ],
    )
}

/// Deterministic text of `lines` lines of pseudo-random words (an LCG, so
/// every run compresses and sorts the same input).
pub(crate) fn generated_text(lines: usize) -> String {
    const WORDS: [&str; 16] = [
        "counter", "sample", "period", "event", "kernel", "process", "thread", "symbol", "profile",
        "stack", "frame", "object", "debug", "build", "record", "report",
    ];
    let mut state: u64 = 0x2545_f491_4f6c_dd1d;
    let mut out = String::with_capacity(lines * 40);
    for _ in 0..lines {
        for _ in 0..5 {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            out.push_str(WORDS[(state >> 60) as usize]);
            out.push_str(&format!("{} ", (state >> 40) & 0xfff));
        }
        out.push('\n');
    }
    out
}

fn gzip_agrees_with_perf_report() -> TestResult {
    let dir = TempDir::new("gzip-input")?;
    let input = dir.path("input.txt");
    std::fs::write(&input, generated_text(400_000)).ctx("write the input")?;
    // -k: the input stays for the second tool's run; -f: its output
    // replaces the first run's.
    agrees_with_perf("gzip", &["gzip", "-9", "-k", "-f", &input])
}

fn sort_agrees_with_perf_report() -> TestResult {
    let dir = TempDir::new("sort-input")?;
    let input = dir.path("input.txt");
    std::fs::write(&input, generated_text(1_000_000)).ctx("write the input")?;
    // One thread: sort's helper threads made the two tools' shares of
    // sort's own code differ by 3.5 points once in a loaded full run
    // (27.4 % against 23.9 %), which this test is not about.
    agrees_with_perf("sort", &["sort", "--parallel=1", "-o", "/dev/null", &input])
}

/// Debian's python3 (`python3-minimal`).
const DEBIAN_PYTHON3: &str = "/usr/bin/python3";

fn python3_agrees_with_perf_report() -> TestResult {
    agrees_with_perf(
        "python3",
        &[
            DEBIAN_PYTHON3,
            "-c",
            "s = 0\nfor i in range(3_000_000):\n    s += i * i % 7\nprint(s)",
        ],
    )
}
