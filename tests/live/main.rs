//! Live tests against the real kernel. Each test declares its requirements
//! (paranoid level, PMUs, tracefs, …); unmet ones make it `ignored` with the
//! reason, visible in the summary. Tests run one at a time because process
//! PMCs attached to this process would see the other tests' work.

mod conformance;
mod counting;
mod drainer;
mod events;
mod fd_leak;
mod hardware;
mod harness;
mod machine;
mod native;
mod portable;
mod probe;
mod sampling;
mod scaling;
mod workloads;

// The probe types `machine` fills (the requirement checker's input).
use pmc::probe::{Environment, Tracefs};

fn main() {
    workloads::run_if_requested();
    portable::run_if_requested();
    conformance::run_if_requested();
    let mut args = libtest_mimic::Arguments::from_args();
    if args.test_threads.is_none() {
        args.test_threads = Some(1);
    }
    // The gate reads the machine itself (`machine.rs`), not through pmc.
    let env = machine::environment();
    let mut tests = Vec::new();
    tests.extend(harness::tests());
    tests.extend(counting::tests());
    tests.extend(drainer::tests());
    tests.extend(events::tests());
    tests.extend(events::tracepoint_and_probe_tests());
    tests.extend(probe::tests());
    tests.extend(fd_leak::tests());
    tests.extend(native::tests());
    tests.extend(hardware::tests());
    tests.extend(sampling::tests());
    tests.extend(scaling::tests());
    tests.extend(portable::tests());
    let mut trials = harness::trials(tests, &env);
    trials.extend(conformance::trials(&env));
    harness::keep_only_named_in("PMC_LIVE_ONLY", &mut trials);
    libtest_mimic::run(&args, trials).exit();
}
