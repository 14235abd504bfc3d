//! Reports from a pmclog: the record dump (`pmcstat -R`), a call graph
//! with symbols (`-G`) and folded stacks for flamegraph tools (`--folded`).
//!
//! The symbolizer and the writers live in the `pmc-report` crate (a library
//! profilers embedding `pmc` can call); these are its log-in, text-out
//! shortcuts for the tools.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};

use pmc::log::LogEvent;
pub use pmc_report::{KernelNamesMissing, Profile, ProfileOptions, Symbolizer};

/// Says on standard error why kernel frames are unnamed, the first time a
/// report of this process finds them so (every report of a run reads the
/// same `/proc/kallsyms`: one line is enough).
pub fn warn_kernel_names_missing(tool: &str, missing: Option<&KernelNamesMissing>) {
    static SAID: AtomicBool = AtomicBool::new(false);
    if let Some(missing) = missing
        && !SAID.swap(true, Ordering::Relaxed)
    {
        eprintln!("{tool}: warning: {missing}");
    }
}

/// The stacks of the log's callchains as function names, leaf first, with
/// their sample counts, per PMC.
pub fn stacks(events: &[LogEvent]) -> BTreeMap<u32, HashMap<Vec<String>, u64>> {
    Profile::from_events(events).stacks()
}

/// Folded stacks (`root;…;leaf count`), one line each, for flamegraph tools.
pub fn folded(events: &[LogEvent]) -> String {
    pmc_report::folded(&Profile::from_events(events))
}

/// A call graph: per PMC, functions by the share of samples they were
/// running in (self), each with the callers that led to it.
pub fn callgraph(events: &[LogEvent]) -> String {
    pmc_report::callgraph(&Profile::from_events(events))
}

#[cfg(test)]
mod tests {
    use super::*;
    use pmc::log::LogRecord;

    fn ev(record: LogRecord) -> LogEvent {
        LogEvent::from(record)
    }

    #[inline(never)]
    fn report_test_target() -> u64 {
        std::hint::black_box(7)
    }

    #[test]
    fn pcs_resolve_to_this_binarys_functions() {
        let exe = std::env::current_exe().unwrap().display().to_string();
        // Our executable mapping from /proc/self/maps; hwpmc's MAP_IN start
        // is the start of the first executable map entry.
        let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
        let (start, _pgoff) = maps
            .lines()
            .filter(|l| l.ends_with(&exe))
            .filter_map(|l| {
                let mut f = l.split_whitespace();
                let range = f.next()?;
                if !f.next()?.contains('x') {
                    return None;
                }
                let off = u64::from_str_radix(f.next()?, 16).ok()?;
                let lo = u64::from_str_radix(range.split('-').next()?, 16).ok()?;
                Some((lo, off))
            })
            .min()
            .unwrap();
        let pc = report_test_target as *const () as usize as u64;
        let events = vec![
            ev(LogRecord::MapIn {
                pid: 1,
                start,
                path: exe.clone(),
            }),
            ev(LogRecord::PmcAllocateDyn {
                pmcid: 5,
                event: 0,
                flags: 0,
                name: "cpu-clock".into(),
            }),
            ev(LogRecord::Callchain {
                pid: 1,
                tid: 1,
                pmcid: 5,
                cpu: 0,
                userspace: true,
                pcs: vec![pc + 1, pc + 2],
            }),
        ];
        let mut s = Symbolizer::new(&events);
        assert!(
            s.name(1, pc + 1).contains("report_test_target"),
            "{}",
            s.name(1, pc + 1)
        );
        assert_eq!(
            s.name(2, 0x1234),
            "0x1234",
            "unknown processes give raw pcs"
        );
        let graph = callgraph(&events);
        // pmcpl_callgraph.c: "@ %s [%u samples]\n\n", then the leaf with
        // all the samples: "100.0%% ", " [%u] " padded to 12, the name.
        assert!(
            graph.starts_with("@ cpu-clock [1 samples]\n\n100.0%  [1]        "),
            "{graph}"
        );
        assert!(graph.contains("report_test_target"), "{graph}");
        let f = folded(&events);
        assert!(
            f.ends_with(" 1\n") && f.contains("report_test_target;"),
            "{f}"
        );
    }
}
