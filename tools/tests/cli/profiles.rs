//! pmcstat's profile files, opened by the programs people read them with:
//! callgrind_annotate (`-F`), gprof (`-g`), go tool pprof (`--pprof`) and
//! headless Chromium (`--flamegraph`). Each test samples this binary
//! spinning in `hot_function_for_profiling` with `cpu-clock` (no PMU
//! needed) and skips, with its reason, where its reader is not installed.

use std::path::Path;
use std::process::Command;

use pmc::probe::Requirement as R;

use crate::ensure;
use crate::harness::{Context, LiveTest, TestResult, test};
use crate::temp::TempDir;

const PMCSTAT: &str = env!("CARGO_BIN_EXE_pmcstat");
const HOT: &str = "hot_function_for_profiling";

pub fn tests() -> Vec<LiveTest> {
    vec![
        test(
            "profiles::callgrind_annotate_lists_the_hot_function_first",
            vec![R::Paranoid(2), R::Program("callgrind_annotate".into())],
            callgrind_annotate_lists_the_hot_function_first,
        ),
        test(
            "profiles::gprof_gives_the_hot_function_the_most_time",
            vec![R::Paranoid(2), R::Program("gprof".into())],
            gprof_gives_the_hot_function_the_most_time,
        ),
        test(
            "profiles::go_tool_pprof_tops_with_the_hot_function_and_the_logs_counts",
            vec![R::Paranoid(2), R::Program("go".into())],
            go_tool_pprof_tops_with_the_hot_function_and_the_logs_counts,
        ),
        test(
            "profiles::i_shows_leaves_as_addresses_and_keeps_their_callers",
            vec![R::Paranoid(2)],
            i_shows_leaves_as_addresses_and_keeps_their_callers,
        ),
        test(
            "profiles::a_log_cut_mid_record_still_reports_what_it_holds",
            vec![R::Paranoid(2)],
            a_log_cut_mid_record_still_reports_what_it_holds,
        ),
        test(
            "profiles::chromium_renders_the_flamegraph_with_the_hot_function_widest",
            vec![R::Paranoid(2), R::Program("chromium".into())],
            chromium_renders_the_flamegraph_with_the_hot_function_widest,
        ),
    ]
}

fn s(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Samples this binary spinning in the hot function for 300 ms of CPU into
/// `log`, with `extra` pmcstat options (profile outputs written live).
fn sample_hot(log: &Path, extra: &[&str]) -> TestResult {
    let exe = std::env::current_exe().ctx("current_exe")?;
    let mut args = vec!["-n", "100000", "-P", "cpu-clock,usr", "-O"];
    let log_s = s(log);
    args.push(&log_s);
    args.extend_from_slice(extra);
    let out = Command::new(PMCSTAT)
        .args(&args)
        .arg("--")
        .arg(&exe)
        .arg("300")
        .env(crate::workloads::ENV, "hot")
        .output()
        .ctx("pmcstat -P")?;
    ensure!(out.status.success(), "pmcstat -P: {}", text(&out.stderr));
    Ok(())
}

/// Callchain records in a log, by pmcstat -R's dump.
fn callchains_in(log: &Path) -> Result<u64, libtest_mimic::Failed> {
    let out = Command::new(PMCSTAT)
        .args(["-R", &s(log)])
        .output()
        .ctx("pmcstat -R")?;
    ensure!(out.status.success(), "pmcstat -R: {}", text(&out.stderr));
    Ok(text(&out.stdout)
        .lines()
        .filter(|l| l.starts_with("callchain "))
        .count() as u64)
}

fn callgrind_annotate_lists_the_hot_function_first() -> TestResult {
    let dir = TempDir::new("callgrind")?;
    let (log, cg) = (dir.join("log"), dir.join("callgrind.out"));
    // -F while sampling live.
    sample_hot(&log, &["-F", &s(&cg)])?;
    let out = Command::new("callgrind_annotate")
        .arg(&cg)
        .output()
        .ctx("callgrind_annotate")?;
    let report = text(&out.stdout);
    ensure!(
        out.status.success(),
        "callgrind_annotate: {}{report}",
        text(&out.stderr)
    );
    // The function table follows the header line ending in "file:function".
    let first = report
        .lines()
        .skip_while(|l| !l.trim_end().ends_with("file:function"))
        .nth(2)
        .unwrap_or("");
    println!("callgrind_annotate's first function: {first}");
    ensure!(first.contains(HOT), "first function: {first:?}\n{report}");
    let total = callchains_in(&log)?;
    ensure!(
        report.contains(&format!("{} (100.0%)  PROGRAM TOTALS", group(total))),
        "totals differ from the log's {total} callchains:\n{report}"
    );
    Ok(())
}

/// `1234567` as callgrind_annotate prints it: `1,234,567`.
fn group(n: u64) -> String {
    let d = n.to_string();
    let mut out = String::new();
    for (i, c) in d.chars().enumerate() {
        if i > 0 && (d.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn gprof_gives_the_hot_function_the_most_time() -> TestResult {
    let dir = TempDir::new("gprof")?;
    let log = dir.join("log");
    sample_hot(&log, &[])?;
    // -g from -R, into -D.
    let gmon_dir = dir.join("gmon");
    let map = dir.join("map");
    let out = Command::new(PMCSTAT)
        .args(["-R", &s(&log), "-g", "-D", &s(&gmon_dir), "-M", &s(&map)])
        .output()
        .ctx("pmcstat -R -g")?;
    ensure!(out.status.success(), "pmcstat -g: {}", text(&out.stderr));
    let exe = std::env::current_exe().ctx("current_exe")?;
    let base = exe
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let gmon = gmon_dir.join("cpu-clock,usr").join(format!("{base}.gmon"));
    ensure!(gmon.exists(), "no {}", gmon.display());
    // -M: pmcstat's `MAP:` lines (pmcpl_gprof.c `pmcpl_gmon_shutdown`), the
    // count of each event being the samples in that object's histogram.
    let map = std::fs::read_to_string(&map).ctx("-M map")?;
    ensure!(map.starts_with("MAP:\n"), "map: {map:?}");
    let line = map
        .lines()
        .find(|l| l.starts_with(&format!(" \"{}\" => \"{base}.gmon\" ", exe.display())))
        .ok_or_else(|| format!("no map line for {}: {map}", exe.display()))?;
    let mapped: u64 = line
        .rsplit_once(" cpu-clock,usr/")
        .and_then(|(_, n)| n.parse().ok())
        .ok_or_else(|| format!("no event count in {line:?}"))?;
    let bytes = std::fs::read(&gmon).ctx("gmon")?;
    // binutils gmon_out.h: 20-byte header, tag, 2 pointers, hist_size,
    // prof_rate, 15+1 bytes of dimension, then 16-bit bins.
    let bins_at = 20 + 1 + 16 + 4 + 4 + 16;
    let binned: u64 = bytes
        .get(bins_at..)
        .unwrap_or_default()
        .chunks_exact(2)
        .map(|b| u64::from(u16::from_ne_bytes([b[0], b[1]])))
        .sum();
    println!("-M: {line}; histogram total {binned}");
    ensure!(
        mapped > 0 && mapped == binned,
        "map says {mapped}, the histogram holds {binned}"
    );
    let out = Command::new("gprof")
        .args(["-b", "-p"])
        .arg(&exe)
        .arg(&gmon)
        .output()
        .ctx("gprof")?;
    let report = text(&out.stdout);
    ensure!(out.status.success(), "gprof: {}{report}", text(&out.stderr));
    // The flat profile's first row after its two header lines.
    let first = report
        .lines()
        .skip_while(|l| !l.trim_start().starts_with("time"))
        .nth(1)
        .unwrap_or("");
    println!("gprof's first row: {first}");
    ensure!(first.contains(HOT), "first row: {first:?}\n{report}");
    let pct: f64 = first
        .split_whitespace()
        .next()
        .and_then(|p| p.parse().ok())
        .unwrap_or(0.0);
    ensure!(pct >= 50.0, "the hot function has {pct}% of the time");
    Ok(())
}

fn go_tool_pprof_tops_with_the_hot_function_and_the_logs_counts() -> TestResult {
    let dir = TempDir::new("pprof")?;
    let (log, pb) = (dir.join("log"), dir.join("profile.pb.gz"));
    sample_hot(&log, &[])?;
    let out = Command::new(PMCSTAT)
        .args(["-R", &s(&log), "--pprof", &s(&pb)])
        .output()
        .ctx("pmcstat -R --pprof")?;
    ensure!(
        out.status.success(),
        "pmcstat --pprof: {}",
        text(&out.stderr)
    );
    let pprof = |args: &[&str]| {
        Command::new("go")
            .args(["tool", "pprof"])
            .args(args)
            .arg(&pb)
            // go wants a home and a cache; keep them out of the machine's.
            .env("HOME", dir.dir())
            .env("GOCACHE", dir.join("gocache"))
            .env("PPROF_TMPDIR", dir.dir())
            .output()
            .ctx("go tool pprof")
    };
    let out = pprof(&["-top", "-nodecount=5"])?;
    let top = text(&out.stdout);
    ensure!(
        out.status.success(),
        "go tool pprof -top: {}{top}",
        text(&out.stderr)
    );
    let first = top
        .lines()
        .skip_while(|l| !l.trim_start().starts_with("flat"))
        .nth(1)
        .unwrap_or("");
    println!("pprof's top row: {first}");
    ensure!(first.contains(HOT), "top row: {first:?}\n{top}");
    let total = callchains_in(&log)?;
    ensure!(
        top.contains(&format!("of {total}samples total"))
            || top.contains(&format!("of {total} total")),
        "pprof's total differs from the log's {total} callchains:\n{top}"
    );
    ensure!(
        top.contains("Type: cpu-clock,usr"),
        "the sample type is not the event's name:\n{top}"
    );
    // Labels and mappings as written.
    let out = pprof(&["-raw"])?;
    let raw = text(&out.stdout);
    ensure!(
        ["pid:[", "tid:[", "cpu:["].iter().all(|l| raw.contains(l)),
        "labels missing from -raw:\n{}",
        &raw[..raw.len().min(3000)]
    );
    let exe = std::env::current_exe().ctx("current_exe")?;
    ensure!(
        raw.contains(&*exe.to_string_lossy()),
        "the executable's mapping is missing from -raw"
    );
    Ok(())
}

/// pmcstat -I (`FLAG_SKIP_TOP_FN_RES`): each sample's leaf is its pc, the
/// callers stay named. Folded with and without -I must agree once the leaf
/// is taken off, count for count.
fn i_shows_leaves_as_addresses_and_keeps_their_callers() -> TestResult {
    let dir = TempDir::new("leaf-address")?;
    let log = dir.join("log");
    sample_hot(&log, &[])?;
    // Folded lines as (stack, count).
    let folded = |extra: &[&str]| -> Result<Vec<(String, u64)>, libtest_mimic::Failed> {
        let out = Command::new(PMCSTAT)
            .args(["-R", &s(&log), "--folded", "-"])
            .args(extra)
            .output()
            .ctx("pmcstat --folded")?;
        ensure!(out.status.success(), "pmcstat: {}", text(&out.stderr));
        let mut lines = Vec::new();
        for line in text(&out.stdout).lines() {
            let (stack, n) = line.rsplit_once(' ').ok_or("no count")?;
            lines.push((stack.to_string(), n.parse::<u64>().ctx(line)?));
        }
        Ok(lines)
    };
    let named = folded(&[])?;
    let addressed = folded(&["-I"])?;
    let total = |l: &[(String, u64)]| l.iter().map(|(_, n)| n).sum::<u64>();
    println!(
        "{} samples; {} named stacks, {} with -I",
        total(&named),
        named.len(),
        addressed.len()
    );
    ensure!(total(&named) > 0, "no samples");
    ensure!(
        total(&named) == total(&addressed),
        "-I changed the sample count"
    );
    // Each -I stack is callers;0xLEAF, and the callers (with the leaf pc's
    // inline frames gone, as it is not resolved) begin some named stack.
    let mut hot_callers = 0;
    for (stack, n) in &addressed {
        let (callers, leaf) = stack.rsplit_once(';').unwrap_or(("", stack));
        ensure!(
            leaf.starts_with("0x") && u64::from_str_radix(&leaf[2..], 16).is_ok(),
            "-I leaf is not an address: {stack}"
        );
        ensure!(
            callers.is_empty()
                || named
                    .iter()
                    .any(|(full, _)| full.starts_with(&format!("{callers};"))),
            "-I callers {callers:?} begin no named stack"
        );
        if callers.contains("cli::workloads::") {
            hot_callers += n;
        }
    }
    ensure!(
        hot_callers * 2 > total(&addressed),
        "most samples' callers are the workload's: {hot_callers} of {}",
        total(&addressed)
    );
    Ok(())
}

fn a_log_cut_mid_record_still_reports_what_it_holds() -> TestResult {
    let dir = TempDir::new("cut")?;
    let (log, cut) = (dir.join("log"), dir.join("cut"));
    sample_hot(&log, &[])?;
    let bytes = std::fs::read(&log).ctx("read log")?;
    // Three quarters of the log, ending 4 bytes into some record.
    // Record offsets, as the reader gives them.
    let offsets: Vec<u64> = pmc::log::LogReader::from_reader(std::io::Cursor::new(bytes.clone()))
        .filter_map(Result::ok)
        .map(|e| e.offset)
        .collect();
    ensure!(offsets.len() > 100, "only {} records", offsets.len());
    let cut_at = offsets[offsets.len() * 3 / 4] as usize + 4;
    std::fs::write(&cut, &bytes[..cut_at]).ctx("write cut log")?;
    let out = Command::new(PMCSTAT)
        .args(["-R", &s(&cut), "--folded", "-"])
        .output()
        .ctx("pmcstat -R --folded")?;
    let folded = text(&out.stdout);
    ensure!(
        out.status.success() && text(&out.stderr).contains("warning"),
        "status {:?}, stderr {}",
        out.status,
        text(&out.stderr)
    );
    let samples: u64 = folded
        .lines()
        .filter_map(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
        .sum();
    let whole = callchains_in(&log)?;
    println!("cut log: {samples} of {whole} samples reported");
    ensure!(
        samples > whole / 2 && samples < whole && folded.contains(HOT),
        "{samples} of {whole} samples from the cut log:\n{folded}"
    );
    Ok(())
}

/// Finds, in the rendered flame graph, the frame with the widest own part
/// (its width less the frames stacked on it): the page writes
/// `widest: NAME WIDTH` into #out once the SVG has loaded.
const CHECK_PAGE: &str = r#"<!doctype html><html><body>
<iframe id="f" src="flamegraph.svg" width="1200" height="700"></iframe>
<pre id="out">pending</pre>
<script>
document.getElementById('f').addEventListener('load', () => {
  const doc = document.getElementById('f').contentDocument;
  const frames = [];
  for (const g of doc.querySelectorAll('#frames > g')) {
    const t = g.querySelector('title'), r = g.querySelector('rect');
    if (!t || !r) continue;
    const b = r.getBoundingClientRect();
    frames.push({name: t.textContent.replace(/ \([^()]*\)$/, ''), x: b.x, y: b.y, w: b.width});
  }
  let best = null;
  for (const f of frames) {
    if (f.name === 'all') continue;
    let children = 0;
    for (const c of frames)
      if (c.y < f.y - 1 && c.y > f.y - 2 * 17 && c.x >= f.x - 0.01 && c.x + c.w <= f.x + f.w + 0.01)
        children += c.w;
    const own = f.w - children;
    if (!best || own > best.own) best = {name: f.name, own};
  }
  document.getElementById('out').textContent =
    best ? 'widest: ' + best.name + ' ' + best.own.toFixed(1) + ' of ' + frames.length : 'no frames';
});
</script></body></html>"#;

fn chromium(dir: &TempDir, args: &[&str]) -> Result<std::process::Output, libtest_mimic::Failed> {
    Command::new("timeout")
        .arg("120")
        .arg("chromium")
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--allow-file-access-from-files",
        ])
        .arg(format!(
            "--user-data-dir={}",
            s(&dir.join("chromium-profile"))
        ))
        .args(args)
        .output()
        .ctx("chromium")
}

fn chromium_renders_the_flamegraph_with_the_hot_function_widest() -> TestResult {
    let dir = TempDir::new("flamegraph")?;
    let (log, svg) = (dir.join("log"), dir.join("flamegraph.svg"));
    // --flamegraph while sampling live.
    sample_hot(&log, &["--flamegraph", &s(&svg)])?;
    let shot = dir.join("flamegraph.png");
    let out = chromium(
        &dir,
        &[
            &format!("--screenshot={}", s(&shot)),
            "--window-size=1200,700",
            &format!("file://{}", s(&svg)),
        ],
    )?;
    ensure!(
        out.status.success() && shot.exists(),
        "chromium --screenshot: {:?} {}",
        out.status,
        text(&out.stderr)
    );
    let png = std::fs::read(&shot).ctx("read screenshot")?;
    ensure!(
        png.starts_with(b"\x89PNG") && png.len() > 5000,
        "the screenshot is not a rendered page ({} bytes)",
        png.len()
    );
    if let Ok(keep) = std::env::var("PMC_KEEP_FLAMEGRAPH_PNG") {
        let _ = std::fs::copy(&shot, keep);
    }
    let page = dir.join("check.html");
    std::fs::write(&page, CHECK_PAGE).ctx("write check page")?;
    let out = chromium(
        &dir,
        &[
            "--virtual-time-budget=10000",
            "--dump-dom",
            &format!("file://{}", s(&page)),
        ],
    )?;
    let dom = text(&out.stdout);
    let verdict = dom
        .lines()
        .find_map(|l| l.split("<pre id=\"out\">").nth(1))
        .and_then(|l| l.split("</pre>").next())
        .unwrap_or("")
        .to_string();
    println!("rendered flame graph: {verdict}");
    ensure!(
        verdict.starts_with("widest: ") && verdict.contains(HOT),
        "the widest frame is not the hot function: {verdict:?} ({})",
        text(&out.stderr).lines().last().unwrap_or("")
    );
    Ok(())
}
