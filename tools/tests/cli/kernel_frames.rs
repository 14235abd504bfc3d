//! Kernel frames of system-wide profiles, named as `/proc/kallsyms` names
//! them: checked against this test's own reading of kallsyms (the symbol
//! that covers each kernel pc) and against `perf report`.
//!
//! What a report may name depends on what kallsyms shows its reader
//! (`kernel.kptr_restrict`, root, `perf_event_paranoid`), which this test
//! reads itself: real addresses → every kernel frame named, no bare
//! address; every address 0 → one `[kernel.kallsyms]` frame per stack and
//! one warning that says why. Either way a kernel pc never prints as a
//! bare `0xffff…` address.

use pmc::probe::Requirement as R;

use crate::ensure;
use crate::harness::{Context, LiveTest, TestResult, test};
use crate::temp::TempDir;

const PMCSTAT: &str = env!("CARGO_BIN_EXE_pmcstat");

/// The one frame of unnamed kernel pcs (pmc_report::KERNEL_FRAME).
const KERNEL_FRAME: &str = "[kernel.kallsyms]";

/// A syscall-heavy command: two million 1-byte reads and writes.
const DD: [&str; 5] = [
    "dd",
    "if=/dev/zero",
    "of=/dev/null",
    "bs=1",
    "count=1000000",
];

pub fn tests() -> Vec<LiveTest> {
    vec![
        test(
            "kernel_frames::system_profiles_name_kernel_frames_as_kallsyms_does",
            // -S samples every CPU, the kernel included.
            vec![R::Paranoid(0), R::Program("dd".into())],
            system_profiles_name_kernel_frames_as_kallsyms_does,
        ),
        test(
            "kernel_frames::a_reader_without_kallsyms_gets_one_kernel_frame_and_one_warning",
            // Root records; the report runs as nobody.
            vec![
                R::Paranoid(0),
                R::Root,
                R::Program("dd".into()),
                R::Program("setpriv".into()),
            ],
            a_reader_without_kallsyms_gets_one_kernel_frame_and_one_warning,
        ),
        test(
            "kernel_frames::the_top_kernel_symbols_agree_with_perf_report",
            // dd's own kernel-mode samples (paranoid 1), not the whole
            // machine's: an idle CPU's halt loop would decide the top leaf
            // by when the other CPU happened to sleep.
            vec![
                R::Paranoid(1),
                R::Program("dd".into()),
                R::Program("perf".into()),
            ],
            the_top_kernel_symbols_agree_with_perf_report,
        ),
    ]
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

use crate::run_ok as run;

/// The kernel text symbols a reader sees: (address, name), sorted; empty
/// when kallsyms shows it every address as 0. `reader` runs `cat` (as
/// another user), or `None` reads the file as this process.
fn kallsyms_as(reader: Option<&[&str]>) -> Result<Vec<(u64, String)>, libtest_mimic::Failed> {
    let listing = match reader {
        None => std::fs::read_to_string("/proc/kallsyms").ctx("read /proc/kallsyms")?,
        Some(prefix) => {
            let mut args: Vec<&str> = prefix[1..].to_vec();
            args.extend(["cat", "/proc/kallsyms"]);
            text(&run(prefix[0], &args)?.stdout)
        }
    };
    let mut symbols: Vec<(u64, String)> = listing
        .lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let address = u64::from_str_radix(f.next()?, 16).ok()?;
            let kind = f.next()?;
            let name = f.next()?;
            (address != 0 && matches!(kind, "t" | "T" | "w" | "W"))
                .then(|| (address, name.to_string()))
        })
        .collect();
    symbols.sort();
    Ok(symbols)
}

/// Whether `name` is a kallsyms symbol at the address that covers `pc`
/// (the last address at or below it; aliases share it).
fn covers(symbols: &[(u64, String)], pc: u64, name: &str) -> bool {
    let i = symbols.partition_point(|(a, _)| *a <= pc);
    let Some(at) = i.checked_sub(1).map(|i| symbols[i].0) else {
        return false;
    };
    symbols[..i]
        .iter()
        .rev()
        .take_while(|(a, _)| *a == at)
        .any(|(_, n)| n == name)
}

/// Which pcs are the kernel's, as this test knows them independently.
enum KernelPcs {
    /// The kernel frames of a log's `-R` dump: the leading upper-half pcs
    /// of `s` (kernel mode) callchains, each also as the return address
    /// minus one that reports look up.
    Logged(std::collections::HashSet<u64>),
    /// No log (reports written by the sampling run): kallsyms' extent, or
    /// without kallsyms the kernel half of x86-64 and arm64.
    Range(u64, u64),
}

impl KernelPcs {
    /// The leading kernel pcs of kernel-mode callchains in a `-R` dump:
    /// pmcstat_log.c prints `callchain PID PMCID CPU NPC u|s`, then one
    /// `...` line per pc.
    fn from_dump(dump: &str) -> KernelPcs {
        let mut pcs = std::collections::HashSet::new();
        let mut in_kernel_chain = false;
        for l in dump.lines() {
            let f: Vec<&str> = l.split_whitespace().collect();
            match f.first() {
                Some(&"callchain") => in_kernel_chain = f.get(5) == Some(&"s"),
                Some(&"...") if in_kernel_chain => {
                    match f
                        .get(1)
                        .map(|pc| u64::from_str_radix(pc.trim_start_matches("0x"), 16))
                    {
                        Some(Ok(pc)) if pc >= 1 << 63 => {
                            pcs.insert(pc);
                            pcs.insert(pc - 1);
                        }
                        // The user stack appended after the kernel's.
                        _ => in_kernel_chain = false,
                    }
                }
                _ => in_kernel_chain = false,
            }
        }
        KernelPcs::Logged(pcs)
    }

    fn from_kallsyms(symbols: &[(u64, String)]) -> KernelPcs {
        match (symbols.first(), symbols.last()) {
            (Some(first), Some(last)) => KernelPcs::Range(first.0, last.0 + 8192),
            _ => KernelPcs::Range(0xffff_8000_0000_0000, u64::MAX),
        }
    }

    /// Whether a printed word is one of the kernel's pcs, bare.
    fn is_bare(&self, word: &str) -> bool {
        let Some(pc) = word
            .strip_prefix("0x")
            .and_then(|h| u64::from_str_radix(h, 16).ok())
        else {
            return false;
        };
        match self {
            KernelPcs::Logged(pcs) => pcs.contains(&pc),
            KernelPcs::Range(lo, hi) => (*lo..=*hi).contains(&pc),
        }
    }
}

/// Frame names of a `-G` call graph (`  P%  name`, `  P%  <- name`).
/// The function of each `-G` node: pmcpl_callgraph.c's
/// `pmcstat_cgnode_print` line is the percentage, ` [count]` padded, the
/// name and ` @ image` when the image changes.
fn callgraph_names(g: &str) -> Vec<&str> {
    g.lines()
        .filter_map(|l| {
            let (_, rest) = l.split_once("% ")?;
            let (_, rest) = rest.trim_start().strip_prefix('[')?.split_once(']')?;
            let rest = rest.trim_start();
            Some(rest.rsplit_once(" @ ").map_or(rest, |(name, _)| name))
        })
        .collect()
}

/// (stack root first, count) of `--folded` lines.
fn folded_stacks(f: &str) -> Vec<(Vec<&str>, u64)> {
    f.lines()
        .filter_map(|l| {
            let (stack, n) = l.rsplit_once(' ')?;
            Some((stack.split(';').collect(), n.parse().ok()?))
        })
        .collect()
}

/// Checks the `-G`, `--folded`, `-a` and `-m` outputs of one profile
/// against what kallsyms shows their reader; `warnings` is the report's
/// standard error. Returns how many samples had a named kernel frame.
fn check_reports(
    symbols: &[(u64, String)],
    kernel: &KernelPcs,
    graph: &str,
    folded: &str,
    annotated: &str,
    sampled: &str,
    warnings: &str,
) -> Result<u64, libtest_mimic::Failed> {
    let readable = !symbols.is_empty();
    let names = callgraph_names(graph);
    let stacks = folded_stacks(folded);
    ensure!(
        !names.is_empty() && !stacks.is_empty(),
        "empty reports:\n{graph}\n{folded}"
    );
    for name in names.iter().chain(stacks.iter().flat_map(|s| s.0.iter())) {
        ensure!(
            !kernel.is_bare(name),
            "a kernel frame printed as a bare address: {name}\n-G:\n{graph}"
        );
    }
    let said: Vec<&str> = warnings
        .lines()
        .filter(|l| l.contains("kernel frames are shown as"))
        .collect();
    // -a: each kernel pc with the symbol that covers it in kallsyms.
    let mut named_pcs = 0;
    for l in annotated.lines().filter(|l| *l != "--") {
        let (pc, rest) = l.split_once(' ').ok_or(l)?;
        if !kernel.is_bare(pc) {
            continue;
        }
        let (name, _) = rest.rsplit_once(' ').ok_or(l)?;
        let pc = u64::from_str_radix(&pc[2..], 16).ctx(l)?;
        // pmcpl_annotate_cg.c: "%p <unknown> ??:0" for a pc it cannot name.
        if name == "<unknown>" {
            ensure!(!readable, "-a: kallsyms is readable, yet {l}");
            continue;
        }
        // Return addresses are looked up one byte back.
        ensure!(
            covers(symbols, pc, name) || covers(symbols, pc - 1, name),
            "-a: {name} does not cover {pc:#x} in kallsyms: {l}"
        );
        named_pcs += 1;
    }
    // -m: `pc name start end` with kallsyms' start.
    for l in sampled.lines() {
        let f: Vec<&str> = l.split(' ').collect();
        if !kernel.is_bare(f[0]) {
            continue;
        }
        ensure!(readable, "-m: no kallsyms, yet a kernel function: {l}");
        let hex = |s: &str| u64::from_str_radix(s.trim_start_matches("0x"), 16);
        let (pc, start, end) = (hex(f[0]).ctx(l)?, hex(f[2]).ctx(l)?, hex(f[3]).ctx(l)?);
        ensure!(
            start <= pc && pc < end && covers(symbols, pc, f[1]) && covers(symbols, start, f[1]),
            "-m: {l} against kallsyms"
        );
    }
    let kernel_names = name_set(symbols);
    let kernel_named: u64 = stacks
        .iter()
        .filter(|(s, _)| s.iter().any(|n| kernel_names.contains(n)))
        .map(|(_, n)| n)
        .sum();
    if readable {
        ensure!(said.is_empty(), "kallsyms is readable, yet: {warnings}");
        ensure!(
            named_pcs > 0 && kernel_named > 0,
            "no kernel frame named ({named_pcs} named pcs in -a); -G:\n{graph}"
        );
    } else {
        ensure!(
            said.len() == 1 && said[0].contains("kptr_restrict"),
            "one warning naming kptr_restrict, got:\n{warnings}"
        );
        ensure!(
            names.contains(&KERNEL_FRAME),
            "no {KERNEL_FRAME} frame in -G:\n{graph}"
        );
        for (stack, _) in &stacks {
            ensure!(
                !stack
                    .windows(2)
                    .any(|w| w[0] == KERNEL_FRAME && w[1] == KERNEL_FRAME),
                "unnamed kernel pcs in a row are one frame: {}",
                stack.join(";")
            );
        }
    }
    Ok(kernel_named)
}

/// `-R LOG` with `-G`, `--folded`, `-a` and `-m` into `dir`, run through
/// `prefix` (another user) or directly: (graph, folded, -a, -m, stderr).
fn report(
    dir: &TempDir,
    log: &str,
    prefix: &[&str],
    tag: &str,
) -> Result<[String; 5], libtest_mimic::Failed> {
    let paths = ["g", "f", "a", "m"].map(|n| dir.path(&format!("{tag}.{n}")));
    let mut args: Vec<&str> = prefix.to_vec();
    args.extend([
        PMCSTAT, "-R", log, "-G", &paths[0], "--folded", &paths[1], "-a", &paths[2], "-m",
        &paths[3],
    ]);
    // Outputs nobody may write.
    for p in &paths {
        std::fs::write(p, "").ctx("create output")?;
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o666)).ctx("chmod")?;
    }
    let out = run(args[0], &args[1..])?;
    let read = |p: &str| std::fs::read_to_string(p).ctx("read report");
    Ok([
        read(&paths[0])?,
        read(&paths[1])?,
        read(&paths[2])?,
        read(&paths[3])?,
        text(&out.stderr),
    ])
}

fn system_profiles_name_kernel_frames_as_kallsyms_does() -> TestResult {
    let dir = TempDir::new("kernel-frames")?;
    let symbols = kallsyms_as(None)?;
    println!("kallsyms shows this user {} text symbols", symbols.len());
    // Written directly by the sampling run (no -O).
    let (g, f, a, m) = (dir.path("g"), dir.path("f"), dir.path("a"), dir.path("m"));
    let mut args = vec![
        "-S",
        "cpu-clock",
        "-G",
        &g,
        "--folded",
        &f,
        "-a",
        &a,
        "-m",
        &m,
        "--",
    ];
    args.extend(DD);
    let out = run(PMCSTAT, &args)?;
    let read = |p: &str| std::fs::read_to_string(p).ctx("read report");
    let live = check_reports(
        &symbols,
        &KernelPcs::from_kallsyms(&symbols),
        &read(&g)?,
        &read(&f)?,
        &read(&a)?,
        &read(&m)?,
        &text(&out.stderr),
    )?;
    // From a log, with the profile outputs too.
    let log = dir.path("s.pmclog");
    let mut args = vec!["-S", "cpu-clock", "-O", &log, "--"];
    args.extend(DD);
    run(PMCSTAT, &args)?;
    let [g, f, a, m, err] = report(&dir, &log, &[], "r")?;
    let kernel = KernelPcs::from_dump(&text(&run(PMCSTAT, &["-R", &log])?.stdout));
    let logged = check_reports(&symbols, &kernel, &g, &f, &a, &m, &err)?;
    let (cg, svg) = (dir.path("cg"), dir.path("svg"));
    let out = run(PMCSTAT, &["-R", &log, "-F", &cg, "--flamegraph", &svg])?;
    let callgrind = read(&cg)?;
    let flamegraph = read(&svg)?;
    for (what, body) in [("-F", &callgrind), ("--flamegraph", &flamegraph)] {
        ensure!(
            !body
                .split(|c: char| !c.is_ascii_alphanumeric())
                .any(|w| kernel.is_bare(w)),
            "{what}: a bare kernel address"
        );
    }
    if !symbols.is_empty() {
        ensure!(
            callgrind.contains("ob=[kernel.kallsyms]\n"),
            "-F: no function of the kernel image"
        );
    }
    ensure!(
        text(&out.stderr)
            .matches("kernel frames are shown as")
            .count()
            == usize::from(symbols.is_empty()),
        "-F/--flamegraph warnings: {}",
        text(&out.stderr)
    );
    // The top view, piped: frames printed per interval.
    let mut args = vec!["-T", "-S", "cpu-clock", "-w", "0.5", "--"];
    args.extend(DD);
    let out = run(PMCSTAT, &args)?;
    let top = text(&out.stdout);
    let kernel = KernelPcs::from_kallsyms(&symbols);
    ensure!(
        !top.split_whitespace().any(|w| kernel.is_bare(w)),
        "-T: a bare kernel address:\n{top}"
    );
    let kernel_rows = top
        .lines()
        .filter(|l| {
            l.split_whitespace()
                .nth(1)
                .is_some_and(|i| i.starts_with("[kernel"))
        })
        .count();
    println!(
        "samples with a named kernel frame: {live} (live), {logged} (from the log); \
         -T rows of the kernel image: {kernel_rows}"
    );
    ensure!(kernel_rows > 0, "-T shows no kernel row:\n{top}");
    Ok(())
}

fn a_reader_without_kallsyms_gets_one_kernel_frame_and_one_warning() -> TestResult {
    let dir = TempDir::new("kernel-frames")?;
    let log = dir.path("s.pmclog");
    let mut args = vec!["-S", "cpu-clock", "-O", &log, "--"];
    args.extend(DD);
    run(PMCSTAT, &args)?;
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&log, std::fs::Permissions::from_mode(0o644)).ctx("chmod log")?;
    let nobody = [
        "setpriv",
        "--reuid=65534",
        "--regid=65534",
        "--clear-groups",
    ];
    // What nobody sees decides what its report must show: on most
    // machines (kptr_restrict >= 1, or 0 with perf_event_paranoid >= 2)
    // every address is 0.
    let symbols = kallsyms_as(Some(&nobody))?;
    println!("kallsyms shows nobody {} text symbols", symbols.len());
    let [g, f, a, m, err] = report(&dir, &log, &nobody, "nobody")?;
    print!("{err}");
    let kernel = KernelPcs::from_dump(&text(&run(PMCSTAT, &["-R", &log])?.stdout));
    check_reports(&symbols, &kernel, &g, &f, &a, &m, &err)?;
    Ok(())
}

/// perf's kernel symbols by self share: `P%  [k] name` lines of
/// `perf report --sort sym`.
fn perf_kernel_symbols(report: &str) -> Vec<(f64, String)> {
    report
        .lines()
        .filter_map(|l| {
            let (pct, rest) = l.trim().split_once("%  [k] ")?;
            Some((pct.parse().ok()?, rest.trim().to_string()))
        })
        .collect()
}

fn the_top_kernel_symbols_agree_with_perf_report() -> TestResult {
    let dir = TempDir::new("kernel-frames")?;
    let symbols = kallsyms_as(None)?;
    let kernel_names = name_set(&symbols);
    // pmcstat first: where the machine forbids kernel sampling, its error
    // names the errno and the sysctl (perf's own names neither).
    let f = dir.path("f");
    let mut args = vec!["-P", "cpu-clock,os", "--folded", &f, "--"];
    args.extend(DD);
    run(PMCSTAT, &args)?;
    let data = dir.path("perf.data");
    let mut args = vec!["record", "-q", "-e", "cpu-clock:k", "-g", "-o", &data, "--"];
    args.extend(DD);
    run("perf", &args)?;
    let out = run(
        "perf",
        &[
            "report",
            "-i",
            &data,
            "--stdio",
            "--sort",
            "sym",
            "--no-children",
            "-g",
            "none",
        ],
    )?;
    let perf = perf_kernel_symbols(&text(&out.stdout));
    let folded = std::fs::read_to_string(&f).ctx("read --folded")?;
    // pmcstat's kernel leaves by self samples.
    let mut leaves: std::collections::HashMap<&str, u64> = std::collections::HashMap::new();
    for (stack, n) in folded_stacks(&folded) {
        let leaf = stack.last().copied().unwrap_or("");
        if kernel_names.contains(leaf) {
            *leaves.entry(leaf).or_default() += n;
        }
    }
    let mut ours: Vec<(&str, u64)> = leaves.into_iter().collect();
    ours.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    println!(
        "perf's top kernel symbols: {:?}",
        &perf[..perf.len().min(5)]
    );
    println!("pmcstat's: {:?}", &ours[..ours.len().min(5)]);
    if symbols.is_empty() {
        // perf too shows addresses then; both must have kernel samples.
        ensure!(
            folded.contains(KERNEL_FRAME),
            "no {KERNEL_FRAME} frame:\n{folded}"
        );
        return Ok(());
    }
    let (_, perf_top) = perf.first().ok_or("perf report shows no kernel symbol")?;
    let (our_top, _) = ours.first().ok_or("pmcstat names no kernel leaf")?;
    ensure!(
        ours.iter().any(|(n, _)| n == perf_top),
        "perf's top kernel symbol {perf_top} is no kernel leaf of pmcstat's: {ours:?}"
    );
    ensure!(
        perf.iter().any(|(_, n)| n == our_top),
        "pmcstat's top kernel leaf {our_top} is not in perf's report: {perf:?}"
    );
    Ok(())
}

fn name_set(symbols: &[(u64, String)]) -> std::collections::HashSet<&str> {
    symbols.iter().map(|(_, n)| n.as_str()).collect()
}
