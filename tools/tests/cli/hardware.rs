//! pmcstat on a core PMU: a program's instructions as perf stat counts
//! them, and sampling on counter overflow whose callchains `-R` reads
//! back. They skip without a counting PMU (`[hardware]`); `cargo xtask test
//! --vm arm64` runs them on QEMU's emulated PMUv3.

use std::process::Command;

use pmc::probe::Requirement as R;

use crate::ensure;
use crate::harness::{Context, LiveTest, TestResult, test};
use crate::temp::TempDir;

const PMCSTAT: &str = env!("CARGO_BIN_EXE_pmcstat");

pub fn tests() -> Vec<LiveTest> {
    vec![
        test(
            "hardware::pmcstat_counts_a_programs_instructions_as_perf_stat_does",
            vec![
                R::HardwareCounting,
                R::Paranoid(2),
                R::Program("perf".into()),
            ],
            pmcstat_counts_a_programs_instructions_as_perf_stat_does,
        ),
        test(
            "hardware::a_static_loop_counts_as_perf_stat_and_the_isa_say",
            vec![
                R::HardwareCounting,
                R::Paranoid(2),
                R::Program("perf".into()),
                R::Program("cc".into()),
            ],
            a_static_loop_counts_as_perf_stat_and_the_isa_say,
        ),
        test(
            "hardware::overflow_sampling_logs_callchains_that_r_reads_back",
            vec![
                R::HardwareCounting,
                R::Paranoid(2),
                R::Program("perf".into()),
            ],
            overflow_sampling_logs_callchains_that_r_reads_back,
        ),
    ]
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Both tools count `instructions:u` of this binary's "loop" workload
/// from its exec (enable_on_exec; pmcstat's `attach_at_exec`) to its exit.
/// They agree within 0.5 %. A dynamically linked Rust program is not
/// exact even under QEMU's `-icount`: two runs of perf stat itself differ
/// by up to 100 000 instructions in 140 M in two boots of three (cause not
/// pinned down; a loader, libc and many page faults run in it). The exact
/// comparison is
/// [`a_static_loop_counts_as_perf_stat_and_the_isa_say`].
fn pmcstat_counts_a_programs_instructions_as_perf_stat_does() -> TestResult {
    let (workload, arg) = ("loop", "20000000");
    let first = crate::tools::perf_stat("instructions:u", workload, arg)?;
    let second = crate::tools::perf_stat("instructions:u", workload, arg)?;
    let ours = crate::tools::pmcstat_count("instructions,usr", workload, arg)?;
    println!(
        "perf stat -e instructions:u: {first}, {second} ({}); pmcstat -p instructions,usr: \
         {ours} ({:+} from perf's first)",
        if first == second {
            "repeated exactly"
        } else {
            "not repeated"
        },
        ours as i64 - first as i64
    );
    let diff = (ours as f64 - first as f64).abs() / first as f64;
    ensure!(
        diff < 0.005,
        "pmcstat {ours} vs perf {first}: {:.3}% apart",
        diff * 100.0
    );
    Ok(())
}

/// Iterations of [`STATIC_LOOP`].
const LOOP_ITERATIONS: u64 = 10_000_000;

/// A program with no libc, no loader and one page of code, whose user
/// instructions the ISA fixes: a two-instruction loop run
/// [`LOOP_ITERATIONS`] times between a set-up and an `exit` system call —
/// and whose page faults (the only other thing an emulator's instruction
/// count could see) are the same every run. `(source, instructions)`.
const STATIC_LOOP: (&str, u64) = if cfg!(target_arch = "aarch64") {
    (
        // movz+movk, subs+b.ne per iteration, mov, mov, svc.
        ".global _start\n.text\n_start:\n\
         movz x0, #0x9680\nmovk x0, #0x98, lsl #16\n\
         1: subs x0, x0, #1\nb.ne 1b\n\
         mov x0, #0\nmov x8, #93\nsvc #0\n",
        2 + 2 * LOOP_ITERATIONS + 3,
    )
} else {
    (
        // mov, dec+jnz per iteration, mov, xor, syscall.
        ".global _start\n.text\n_start:\n\
         mov $10000000, %ecx\n\
         1: dec %ecx\njnz 1b\n\
         mov $60, %eax\nxor %edi, %edi\nsyscall\n",
        1 + 2 * LOOP_ITERATIONS + 3,
    )
};

/// Set by `cargo xtask test --vm`, which runs QEMU with `-icount`: every
/// instruction is counted exactly, so the counts must be equal, not near.
const EXACT_ENV: &str = "PMC_TEST_ICOUNT";

/// perf stat and pmcstat count the user instructions of [`STATIC_LOOP`]
/// from its exec to its exit: the ISA's number, within one instruction
/// (whether the `svc`/`syscall` that leaves user mode is counted there is
/// the PMU's choice), and on QEMU's exact PMU (`-icount`) perf stat's
/// number to the instruction, twice. On a real PMU, where interrupts and
/// faults may add a few, within 0.01 %.
fn a_static_loop_counts_as_perf_stat_and_the_isa_say() -> TestResult {
    let dir = TempDir::new("hw-static-loop")?;
    let (source, isa) = STATIC_LOOP;
    let (asm, exe) = (dir.path("loop.S"), dir.path("loop"));
    std::fs::write(&asm, source).ctx("write loop.S")?;
    let built = Command::new("cc")
        .args(["-nostdlib", "-static", "-no-pie", "-o", &exe, &asm])
        .output()
        .ctx("cc")?;
    ensure!(built.status.success(), "cc: {}", text(&built.stderr));
    let command = [std::ffi::OsStr::new(&exe)];
    let first = crate::tools::perf_stat_of("instructions:u", &command, &[])?;
    let second = crate::tools::perf_stat_of("instructions:u", &command, &[])?;
    let ours = crate::tools::pmcstat_count_of("instructions,usr", &command, &[])?;
    let exact = std::env::var_os(EXACT_ENV).is_some();
    println!(
        "ISA: {isa}; perf stat -e instructions:u: {first}, {second}; pmcstat -p \
         instructions,usr: {ours} ({:+} from perf's first, {:+} from the ISA){}",
        ours as i64 - first as i64,
        ours as i64 - isa as i64,
        if exact { "; exact PMU (-icount)" } else { "" }
    );
    for (who, n) in [
        ("perf stat", first),
        ("perf stat again", second),
        ("pmcstat", ours),
    ] {
        let off = n.abs_diff(isa);
        ensure!(
            if exact { off <= 1 } else { off * 10_000 <= isa },
            "{who} counted {n} user instructions of a program that retires {isa}"
        );
    }
    if exact {
        ensure!(
            first == second && ours == first,
            "on an exact PMU: perf stat {first} then {second}, pmcstat {ours}"
        );
    }
    Ok(())
}

/// `-P instructions,usr -n N` samples every N user instructions on the
/// PMU's overflow interrupt, with callchains; `-R -G` reads the log back:
/// the loop function tops the call graph with its callers below it, the
/// sample count is the work over N, and no sample of a `usr` PMC is in
/// the kernel (an overflow whose interrupt skids past a system call's
/// entry is the user pc it entered from).
fn overflow_sampling_logs_callchains_that_r_reads_back() -> TestResult {
    let dir = TempDir::new("hw-sampling")?;
    let (log, graph) = (dir.path("hw.pmclog"), dir.path("graph"));
    let exe = std::env::current_exe().ctx("current_exe")?;
    let period = 1_000_000u64;
    const ITERATIONS: &str = "50000000";
    let out = Command::new(PMCSTAT)
        .args([
            "-n",
            &period.to_string(),
            "-P",
            "instructions,usr",
            "-O",
            &log,
            "--",
        ])
        .arg(&exe)
        .arg(ITERATIONS)
        .env(crate::workloads::ENV, "loop")
        .output()
        .ctx("pmcstat -P")?;
    ensure!(out.status.success(), "pmcstat -P: {}", text(&out.stderr));
    // How many samples the same work gives perf record at the same period:
    // the count over the period, less what the kernel throttles (its
    // perf_event_max_sample_rate falls when interrupts look slow, as under
    // emulation).
    let counted = crate::tools::pmcstat_count("instructions,usr", "loop", ITERATIONS)?;
    let perf_data = dir.path("perf.data");
    let recorded = Command::new("perf")
        .args([
            "record",
            "-q",
            "-e",
            "instructions:u",
            "-c",
            &period.to_string(),
            "-o",
            &perf_data,
            "--",
        ])
        .arg(&exe)
        .arg(ITERATIONS)
        .env(crate::workloads::ENV, "loop")
        .output()
        .ctx("perf record")?;
    ensure!(
        recorded.status.success(),
        "perf record: {}",
        text(&recorded.stderr)
    );
    let script = Command::new("perf")
        .args(["script", "-F", "ip", "-i", &perf_data])
        .output()
        .ctx("perf script")?;
    let perf_samples = text(&script.stdout)
        .lines()
        .filter(|l| !l.trim().is_empty())
        .count() as u64;
    let out = Command::new(PMCSTAT)
        .args(["-R", &log, "-G", &graph])
        .output()
        .ctx("pmcstat -R -G")?;
    ensure!(out.status.success(), "pmcstat -R -G: {}", text(&out.stderr));
    let g = std::fs::read_to_string(&graph).ctx("read the call graph")?;
    let head = g.lines().next().unwrap_or("");
    let samples: u64 = head
        .split('[')
        .nth(1)
        .and_then(|h| h.split_whitespace().next()?.parse().ok())
        .ok_or_else(|| format!("no sample count in the header: {g}"))?;
    println!(
        "{head}; perf record: {perf_samples} samples; {counted} instructions counted over the same work"
    );
    // At most one sample per `period` instructions, and no fewer than perf
    // records of the same work (within 15 %).
    let most = counted / period + 1;
    ensure!(
        samples <= most && perf_samples <= most,
        "{samples} samples (perf {perf_samples}) for {counted} instructions at one per {period}"
    );
    // Throttling differs between two runs (perf record's own writing
    // slows the guest), so perf's count is a floor, not a target.
    ensure!(
        samples * 100 >= perf_samples * 85,
        "{samples} samples, fewer than perf record's {perf_samples} of the same work"
    );
    // pmcpl_callgraph.c: the top node, then its callers indented below.
    let top = g.lines().nth(2).unwrap_or("");
    ensure!(
        top.contains("known_loop"),
        "the top of the call graph is not the loop: {g}"
    );
    ensure!(
        !g.contains("[kernel.kallsyms]"),
        "a usr PMC's samples in the kernel: {g}"
    );
    let callers: Vec<&str> = g
        .lines()
        .skip(3)
        .take_while(|l| l.starts_with(' ') || l.starts_with('\t'))
        .collect();
    ensure!(
        callers.iter().any(|l| l.contains("main")),
        "no caller of the hot function reaches main: {g}"
    );
    Ok(())
}
