//! The built `pmcstat` and `pmccontrol` run on real commands. The live
//! suite's harness and workloads are shared (this binary re-executes
//! itself as the workload, like the live tests do).

#[allow(dead_code)]
#[path = "../../../tests/live/harness.rs"]
mod harness;
#[path = "../../../tests/live/machine.rs"]
mod machine;
#[allow(dead_code)]
#[path = "../../../tests/live/workloads.rs"]
mod workloads;

// The probe types `machine` fills (the requirement checker's input).
use pmc::probe::{Environment, Tracefs};

mod argument_ranges;
mod bad_input;
mod cgroup;
mod debian_profiles;
mod debug_symbols;
mod default_rates;
mod docs_examples;
mod dwarf_stacks;
mod freebsd_annotate;
mod freebsd_counting;
mod freebsd_pmccontrol;
mod freebsd_reports;
mod full_disk;
mod hardware;
mod hostile_logs;
mod kernel_frames;
mod log_endings;
mod lost_samples;
mod one_symbolizer;
mod outputs;
mod perf_data_input;
mod pmcstat_options;
mod profiles;
mod prometheus;
mod readme;
mod real_use;
mod rolling_pprof;
mod same_samples;
mod same_stacks;
mod shares;
mod signals;
mod temp;
mod tools;

/// Runs `program args` with its output captured; it must succeed (the
/// error names the command, its status and its standard error).
pub(crate) fn run_ok(
    program: &str,
    args: &[&str],
) -> Result<std::process::Output, libtest_mimic::Failed> {
    use harness::Context;
    let out = std::process::Command::new(program)
        .args(args)
        .stdin(std::process::Stdio::null())
        .output()
        .ctx(program)?;
    ensure!(
        out.status.success(),
        "{program} {args:?}: {:?}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(out)
}

fn main() {
    workloads::run_if_requested();
    let mut args = libtest_mimic::Arguments::from_args();
    if args.test_threads.is_none() {
        args.test_threads = Some(1);
    }
    // The gate reads the machine itself (`machine.rs`), not through pmc.
    let env = machine::environment();
    let mut tests = tools::tests();
    tests.extend(pmcstat_options::tests());
    tests.extend(profiles::tests());
    tests.extend(real_use::tests());
    tests.extend(same_samples::tests());
    tests.extend(same_stacks::tests());
    tests.extend(bad_input::tests());
    tests.extend(argument_ranges::tests());
    tests.extend(freebsd_pmccontrol::tests());
    tests.extend(freebsd_reports::tests());
    tests.extend(freebsd_annotate::tests());
    tests.extend(readme::tests());
    tests.extend(docs_examples::tests());
    tests.extend(kernel_frames::tests());
    tests.extend(freebsd_counting::tests());
    tests.extend(lost_samples::tests());
    tests.extend(default_rates::tests());
    tests.extend(log_endings::tests());
    tests.extend(full_disk::tests());
    tests.extend(dwarf_stacks::tests());
    tests.extend(debug_symbols::tests());
    tests.extend(debian_profiles::tests());
    tests.extend(one_symbolizer::tests());
    tests.extend(outputs::tests());
    tests.extend(signals::tests());
    tests.extend(hostile_logs::tests());
    tests.extend(hardware::tests());
    tests.extend(shares::tests());
    tests.extend(perf_data_input::tests());
    tests.extend(prometheus::tests());
    tests.extend(rolling_pprof::tests());
    let mut trials = harness::trials(tests, &env);
    trials.extend(full_disk::trials(&env));
    trials.extend(cgroup::trials(&env));
    harness::keep_only_named_in("PMC_CLI_ONLY", &mut trials);
    libtest_mimic::run(&args, trials).exit();
}
