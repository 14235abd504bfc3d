//! Name tables: perf's generic hardware/software/cache names, FreeBSD's
//! aliases and `SOFT-*` events, and the class prefixes libpmc accepts.

use super::{
    CacheEvent, CacheLevel, CacheOp, CacheResult, EventName, HardwareEvent, SoftwareEvent,
};

/// perf's hardware event names (exact, lower-case), canonical name first
/// for each event.
const PERF_HARDWARE: &[(&str, HardwareEvent)] = &[
    ("cycles", HardwareEvent::Cycles),
    ("cpu-cycles", HardwareEvent::Cycles),
    ("instructions", HardwareEvent::Instructions),
    ("cache-references", HardwareEvent::CacheReferences),
    ("cache-misses", HardwareEvent::CacheMisses),
    ("branch-instructions", HardwareEvent::Branches),
    ("branches", HardwareEvent::Branches),
    ("branch-misses", HardwareEvent::BranchMisses),
    ("bus-cycles", HardwareEvent::BusCycles),
    (
        "stalled-cycles-frontend",
        HardwareEvent::StalledCyclesFrontend,
    ),
    ("idle-cycles-frontend", HardwareEvent::StalledCyclesFrontend),
    (
        "stalled-cycles-backend",
        HardwareEvent::StalledCyclesBackend,
    ),
    ("idle-cycles-backend", HardwareEvent::StalledCyclesBackend),
    ("ref-cycles", HardwareEvent::RefCycles),
];

/// perf's software event names (exact, lower-case).
const PERF_SOFTWARE: &[(&str, SoftwareEvent)] = &[
    ("cpu-clock", SoftwareEvent::CpuClock),
    ("task-clock", SoftwareEvent::TaskClock),
    ("page-faults", SoftwareEvent::PageFaults),
    ("faults", SoftwareEvent::PageFaults),
    ("context-switches", SoftwareEvent::ContextSwitches),
    ("cs", SoftwareEvent::ContextSwitches),
    ("cpu-migrations", SoftwareEvent::CpuMigrations),
    ("migrations", SoftwareEvent::CpuMigrations),
    ("minor-faults", SoftwareEvent::MinorFaults),
    ("major-faults", SoftwareEvent::MajorFaults),
    ("alignment-faults", SoftwareEvent::AlignmentFaults),
    ("emulation-faults", SoftwareEvent::EmulationFaults),
    ("dummy", SoftwareEvent::Dummy),
    ("bpf-output", SoftwareEvent::BpfOutput),
    ("cgroup-switches", SoftwareEvent::CgroupSwitches),
];

/// FreeBSD's generic aliases, in normalized form (lower case, `-` for
/// every separator). `dc-misses`/`ic-misses` are L1 read misses.
const FREEBSD_ALIASES: &[(&str, FreeBsdAlias)] = &[
    (
        "instructions",
        FreeBsdAlias::Hw(HardwareEvent::Instructions),
    ),
    (
        "instruction-retired",
        FreeBsdAlias::Hw(HardwareEvent::Instructions),
    ),
    ("unhalted-cycles", FreeBsdAlias::Hw(HardwareEvent::Cycles)),
    (
        "unhalted-core-cycles",
        FreeBsdAlias::Hw(HardwareEvent::Cycles),
    ),
    ("cycles", FreeBsdAlias::Hw(HardwareEvent::Cycles)),
    ("branches", FreeBsdAlias::Hw(HardwareEvent::Branches)),
    (
        "branch-instruction-retired",
        FreeBsdAlias::Hw(HardwareEvent::Branches),
    ),
    (
        "branch-mispredicts",
        FreeBsdAlias::Hw(HardwareEvent::BranchMisses),
    ),
    (
        "branch-misses-retired",
        FreeBsdAlias::Hw(HardwareEvent::BranchMisses),
    ),
    ("llc-misses", FreeBsdAlias::Hw(HardwareEvent::CacheMisses)),
    (
        "llc-reference",
        FreeBsdAlias::Hw(HardwareEvent::CacheReferences),
    ),
    (
        "llc-references",
        FreeBsdAlias::Hw(HardwareEvent::CacheReferences),
    ),
    ("interrupts", FreeBsdAlias::Hw(HardwareEvent::Interrupts)),
    (
        "dc-misses",
        FreeBsdAlias::Cache(CacheEvent {
            cache: CacheLevel::L1D,
            op: CacheOp::Read,
            result: CacheResult::Miss,
        }),
    ),
    (
        "ic-misses",
        FreeBsdAlias::Cache(CacheEvent {
            cache: CacheLevel::L1I,
            op: CacheOp::Read,
            result: CacheResult::Miss,
        }),
    ),
];

#[derive(Clone, Copy)]
enum FreeBsdAlias {
    Hw(HardwareEvent),
    Cache(CacheEvent),
}

/// FreeBSD `SOFT-*` events (normalized names as libpmc spells them) and
/// the Linux software event specifier that counts the same thing, if any.
///
/// `CLOCK.PROF` maps to `cpu-clock`, the timer Linux profilers sample on
/// (it counts nanoseconds, not ticks). The others have no Linux software
/// event: the interrupt and lock counters exist only as tracepoints, and
/// Linux does not split page faults by access type.
pub static SOFT_EVENTS: &[(&str, Option<&str>)] = &[
    ("CLOCK.HARD", None),
    ("CLOCK.STAT", None),
    ("CLOCK.PROF", Some("cpu-clock")),
    ("INTR.ALL", None),
    ("INTR.FILTER", None),
    ("INTR.ITHREAD", None),
    ("INTR.SCHEDULE", None),
    ("INTR.STRAY", None),
    ("INTR.WAITING", None),
    ("LOCK.FAILED", None),
    ("PAGE_FAULT.ALL", Some("page-faults")),
    ("PAGE_FAULT.READ", None),
    ("PAGE_FAULT.WRITE", None),
];

/// What a FreeBSD `SOFT-*` event without a Linux equivalent can be
/// replaced with.
pub(super) fn soft_event_advice(name: &str) -> &'static str {
    match name {
        n if n.starts_with("INTR") => "count the `irq:irq_handler_entry` tracepoint instead",
        n if n.starts_with("CLOCK") => "sample on `cpu-clock` instead",
        n if n.starts_with("PAGE_FAULT") => "`page-faults` counts all page faults",
        _ => "count the `lock:contention_begin` tracepoint instead",
    }
}

/// FreeBSD class prefixes (`k8-dc-misses`, `SOFT-PAGE_FAULT.ALL`), lower case.
const CLASS_PREFIXES: &[&str] = &[
    "soft",
    "tsc",
    "k7",
    "k8",
    "f17h",
    "iaf",
    "iap",
    "ucf",
    "ucp",
    "uncore",
    "p4",
    "p5",
    "p6",
    "core",
    "core2",
    "corei7",
    "armv7",
    "armv8",
    "arm64",
    "beri",
    "mips24k",
    "mips74k",
    "octeon",
    "ppc7450",
    "ppc970",
    "e500",
    "power8",
    "cmn600",
    "dmc620",
    "dmc620-c",
    "dmc620-cd2",
];

/// Normalizes a FreeBSD name: lower case, every separator a `-`.
pub(super) fn normalize(name: &str) -> String {
    name.chars().map(normalize_char).collect()
}

/// One character as [`normalize`] maps it.
fn normalize_char(c: char) -> char {
    match c {
        ' ' | '.' | '_' | '-' => '-',
        c => c.to_ascii_lowercase(),
    }
}

/// What follows `name`'s normalized form in `normalized` (already
/// [`normalize`]d), compared without building it: the parser asks this of
/// every generic name for an unknown one.
pub(super) fn strip_normalized_prefix<'a>(normalized: &'a str, name: &str) -> Option<&'a str> {
    let mut rest = normalized.char_indices();
    for c in name.chars() {
        let (_, n) = rest.next()?;
        if n != normalize_char(c) {
            return None;
        }
    }
    Some(rest.next().map_or("", |(at, _)| &normalized[at..]))
}

/// Looks up a perf generic name (hardware, software or cache), which perf
/// matches case-insensitively but with its own separators.
pub(super) fn perf_generic(name: &str) -> Option<EventName> {
    // The tables are lowercase.
    if let Some((_, h)) = PERF_HARDWARE
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
    {
        return Some(EventName::Hardware(*h));
    }
    if let Some((_, s)) = PERF_SOFTWARE
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
    {
        return Some(EventName::Software(*s));
    }
    perf_cache(&name.to_ascii_lowercase()).map(EventName::Cache)
}

/// Parses perf's cache event names: `CACHE[-OP][-RESULT]`, e.g.
/// `L1-dcache-load-misses`, `LLC-loads`, `dTLB-store-misses`, `LLC-misses`.
fn perf_cache(lower: &str) -> Option<CacheEvent> {
    const CACHES: &[(&str, CacheLevel)] = &[
        ("l1-dcache", CacheLevel::L1D),
        ("l1-d", CacheLevel::L1D),
        ("l1d", CacheLevel::L1D),
        ("l1-data", CacheLevel::L1D),
        ("l1-icache", CacheLevel::L1I),
        ("l1-i", CacheLevel::L1I),
        ("l1i", CacheLevel::L1I),
        ("l1-instruction", CacheLevel::L1I),
        ("llc", CacheLevel::LL),
        ("l2", CacheLevel::LL),
        ("dtlb", CacheLevel::DTLB),
        ("d-tlb", CacheLevel::DTLB),
        ("data-tlb", CacheLevel::DTLB),
        ("itlb", CacheLevel::ITLB),
        ("i-tlb", CacheLevel::ITLB),
        ("instruction-tlb", CacheLevel::ITLB),
        ("branch", CacheLevel::BPU),
        ("bpu", CacheLevel::BPU),
        ("btb", CacheLevel::BPU),
        ("bpc", CacheLevel::BPU),
        ("node", CacheLevel::NODE),
    ];
    const OPS: &[(&str, CacheOp)] = &[
        ("load", CacheOp::Read),
        ("loads", CacheOp::Read),
        ("read", CacheOp::Read),
        ("store", CacheOp::Write),
        ("stores", CacheOp::Write),
        ("write", CacheOp::Write),
        ("prefetch", CacheOp::Prefetch),
        ("prefetches", CacheOp::Prefetch),
        ("speculative-read", CacheOp::Prefetch),
        ("speculative-load", CacheOp::Prefetch),
    ];
    const RESULTS: &[(&str, CacheResult)] = &[
        ("refs", CacheResult::Access),
        ("reference", CacheResult::Access),
        ("references", CacheResult::Access),
        ("access", CacheResult::Access),
        ("accesses", CacheResult::Access),
        ("misses", CacheResult::Miss),
        ("miss", CacheResult::Miss),
    ];
    // Longest cache name first so `l1-dcache` wins over `l1-d`.
    let mut caches: Vec<_> = CACHES
        .iter()
        .filter(|(n, _)| lower.starts_with(n))
        .collect();
    caches.sort_by_key(|(n, _)| std::cmp::Reverse(n.len()));
    for (cache_name, cache) in caches {
        let rest = &lower[cache_name.len()..];
        let rest = match rest.strip_prefix('-') {
            Some(r) => r,
            None if rest.is_empty() => {
                return Some(CacheEvent {
                    cache: *cache,
                    op: CacheOp::Read,
                    result: CacheResult::Access,
                });
            }
            None => continue,
        };
        let mut op = None;
        let mut result = None;
        let mut remaining = rest;
        // Operation: the longest matching name followed by `-` or the end.
        let mut ops: Vec<_> = OPS.iter().collect();
        ops.sort_by_key(|(n, _)| std::cmp::Reverse(n.len()));
        for (name, o) in ops {
            if let Some(r) = remaining.strip_prefix(name)
                && (r.is_empty() || r.starts_with('-'))
            {
                op = Some(*o);
                remaining = r.strip_prefix('-').unwrap_or(r);
                break;
            }
        }
        if !remaining.is_empty() {
            result = RESULTS
                .iter()
                .find(|(n, _)| *n == remaining)
                .map(|(_, r)| *r);
            result?;
        }
        if op.is_none() && result.is_none() {
            continue;
        }
        return Some(CacheEvent {
            cache: *cache,
            op: op.unwrap_or(CacheOp::Read),
            result: result.unwrap_or(CacheResult::Access),
        });
    }
    None
}

/// Looks up a FreeBSD generic alias by its normalized name.
pub(super) fn freebsd_alias(normalized: &str) -> Option<EventName> {
    FREEBSD_ALIASES
        .iter()
        .find(|(n, _)| *n == normalized)
        .map(|(_, a)| match a {
            FreeBsdAlias::Hw(h) => EventName::Hardware(*h),
            FreeBsdAlias::Cache(c) => EventName::Cache(*c),
        })
}

/// Looks up a `SOFT-*` event by its normalized name (without the prefix).
pub(super) fn soft_event(normalized: &str) -> Option<(&'static str, Option<&'static str>)> {
    SOFT_EVENTS
        .iter()
        .find(|(n, _)| normalize(n) == normalized)
        .copied()
}

/// Splits a known FreeBSD class prefix off a normalized name.
pub(super) fn split_class_prefix(normalized: &str) -> Option<(&'static str, &str)> {
    let mut prefixes: Vec<_> = CLASS_PREFIXES.to_vec();
    prefixes.sort_by_key(|p| std::cmp::Reverse(p.len()));
    prefixes.into_iter().find_map(|p| {
        normalized
            .strip_prefix(p)
            .and_then(|r| r.strip_prefix('-'))
            .filter(|r| !r.is_empty())
            .map(|r| (p, r))
    })
}

pub(crate) fn hardware_name(e: HardwareEvent) -> &'static str {
    if e == HardwareEvent::Interrupts {
        return "interrupts";
    }
    PERF_HARDWARE
        .iter()
        .find(|(_, h)| *h == e)
        .map(|(n, _)| *n)
        .unwrap_or("?")
}

pub(crate) fn software_name(e: SoftwareEvent) -> &'static str {
    PERF_SOFTWARE
        .iter()
        .find(|(_, s)| *s == e)
        .map(|(n, _)| *n)
        .unwrap_or("?")
}

/// perf's spelling of a cache event (`L1-dcache-load-misses`, `LLC-loads`).
pub(crate) fn cache_name(e: CacheEvent) -> String {
    let cache = match e.cache {
        CacheLevel::L1D => "L1-dcache",
        CacheLevel::L1I => "L1-icache",
        CacheLevel::LL => "LLC",
        CacheLevel::DTLB => "dTLB",
        CacheLevel::ITLB => "iTLB",
        CacheLevel::BPU => "branch",
        CacheLevel::NODE => "node",
    };
    let op = match e.op {
        CacheOp::Read => "load",
        CacheOp::Write => "store",
        CacheOp::Prefetch => "prefetch",
    };
    match e.result {
        CacheResult::Access if e.op == CacheOp::Prefetch => format!("{cache}-prefetches"),
        CacheResult::Access => format!("{cache}-{op}s"),
        CacheResult::Miss => format!("{cache}-{op}-misses"),
    }
}

/// Every cache event, in a stable order.
pub(super) fn all_cache_events() -> impl Iterator<Item = CacheEvent> {
    use CacheLevel::*;
    [L1D, L1I, LL, DTLB, ITLB, BPU, NODE]
        .into_iter()
        .flat_map(|cache| {
            [CacheOp::Read, CacheOp::Write, CacheOp::Prefetch]
                .into_iter()
                .flat_map(move |op| {
                    [CacheResult::Access, CacheResult::Miss]
                        .into_iter()
                        .map(move |result| CacheEvent { cache, op, result })
                })
        })
}

/// Every name the parser knows statically, with what it means: perf's
/// hardware, software and cache names, FreeBSD's generic aliases (in
/// libpmc's upper-case spelling) and the `SOFT-*` events that have a
/// Linux equivalent.
pub fn generic_names() -> Vec<(String, EventName)> {
    generic_name_table().to_vec()
}

/// [`generic_names`], built once: the parser compares every name it does
/// not know with them, and an unknown name should cost microseconds.
pub(crate) fn generic_name_table() -> &'static [(String, EventName)] {
    static TABLE: std::sync::OnceLock<Vec<(String, EventName)>> = std::sync::OnceLock::new();
    TABLE.get_or_init(build_generic_names)
}

fn build_generic_names() -> Vec<(String, EventName)> {
    let mut v: Vec<(String, EventName)> = Vec::new();
    v.extend(
        PERF_HARDWARE
            .iter()
            .map(|(n, h)| (n.to_string(), EventName::Hardware(*h))),
    );
    v.extend(
        PERF_SOFTWARE
            .iter()
            .map(|(n, s)| (n.to_string(), EventName::Software(*s))),
    );
    v.extend(all_cache_events().map(|c| (cache_name(c), EventName::Cache(c))));
    for (n, _) in FREEBSD_ALIASES {
        if !v.iter().any(|(m, _)| m == n) {
            let event = freebsd_alias(n).expect("alias table is self-consistent");
            let spelled = if n.starts_with("llc") || n.contains("retired") || n.contains("core") {
                n.replace('-', "_").to_ascii_uppercase()
            } else {
                n.to_string()
            };
            v.push((spelled, event));
        }
    }
    for (n, linux) in SOFT_EVENTS {
        if let Some(linux) = linux {
            let event = perf_generic(linux).expect("SOFT table maps to perf names");
            v.push((format!("SOFT-{n}"), event));
        }
    }
    v
}

#[cfg(test)]
mod normalized_prefix_tests {
    use super::*;

    /// The same answer as stripping the built normalized prefix.
    #[test]
    fn strip_normalized_prefix_is_strip_prefix_of_normalize() {
        let names = [
            "cycles",
            "cpu-cycles",
            "CPU_CYCLES",
            "l1d.read",
            "",
            "cycles-t",
        ];
        for a in names {
            let normalized = normalize(a);
            for b in names {
                assert_eq!(
                    strip_normalized_prefix(&normalized, b),
                    normalized.strip_prefix(normalize(b).as_str()),
                    "{a:?} {b:?}"
                );
            }
        }
    }
}
