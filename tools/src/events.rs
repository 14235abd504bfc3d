//! `pmcstat -L` and `-u SPEC`: list the machine's events and describe the
//! ones whose name contains SPEC (case-insensitive), in the formats of
//! FreeBSD's `lib/libpmc/libpmc_pmu_util.c` (`pmc_pmu_print_counters`: a
//! tab and the name per line; `pmc_pmu_print_counter_desc`: `name:\tdesc`).
//!
//! Linux gives descriptions for no event through sysfs, so those of perf's
//! generic events are stated here from perf_event_open(2); other events are
//! described by their class.

/// Descriptions of perf's generic events, after perf_event_open(2).
const GENERIC: &[(&str, &str)] = &[
    ("cycles", "Total cycles (affected by CPU frequency scaling)"),
    (
        "cpu-cycles",
        "Total cycles (affected by CPU frequency scaling)",
    ),
    ("instructions", "Retired instructions"),
    (
        "cache-references",
        "Cache accesses, usually last-level cache",
    ),
    ("cache-misses", "Cache misses, usually last-level cache"),
    ("branch-instructions", "Retired branch instructions"),
    ("branches", "Retired branch instructions"),
    ("branch-misses", "Mispredicted branch instructions"),
    (
        "bus-cycles",
        "Bus cycles, which can differ from total cycles",
    ),
    ("stalled-cycles-frontend", "Stalled cycles during issue"),
    ("stalled-cycles-backend", "Stalled cycles during retirement"),
    (
        "ref-cycles",
        "Total cycles, not affected by CPU frequency scaling",
    ),
    (
        "cpu-clock",
        "The CPU clock, a high-resolution per-CPU timer (ns)",
    ),
    (
        "task-clock",
        "A clock count specific to the task that is running (ns)",
    ),
    ("page-faults", "Page faults"),
    ("context-switches", "Context switches"),
    ("cpu-migrations", "Times the process migrated to a new CPU"),
    ("minor-faults", "Minor page faults: no disk I/O was needed"),
    ("major-faults", "Major page faults: disk I/O was needed"),
    (
        "alignment-faults",
        "Alignment faults (unaligned memory accesses)",
    ),
    (
        "emulation-faults",
        "Unimplemented instructions that were emulated",
    ),
    ("dummy", "A placeholder event that counts nothing"),
    (
        "bpf-output",
        "Output of BPF programs through perf_event_output",
    ),
    (
        "cgroup-switches",
        "Context switches to a task in a different cgroup",
    ),
];

/// A class's name and its event names, or why they cannot be listed.
pub type ClassEvents = (String, Result<Vec<String>, String>);

/// Every event name of every class.
pub fn all() -> pmc::Result<Vec<ClassEvents>> {
    let info = pmc::cpuinfo()?;
    Ok(info
        .classes
        .iter()
        .map(|c| {
            (
                c.class.name().to_string(),
                pmc::event_names_of_class(&c.class).map_err(|e| e.to_string()),
            )
        })
        .collect())
}

/// The classes `pmc_cpuinfo` reports, in its order (SOFT first, as
/// hwpmc): each of this machine's classes as the FreeBSD class libpmc
/// reports it ([`pmc::Class::libpmc_class`]), one row per FreeBSD class at
/// its first appearance, with the names `pmc_event_names_of_class`
/// gives it ([`pmc::global::libpmc_event_names`]) — what pmccontrol.c's
/// `pmcc_do_list_events` prints.
pub fn libpmc_classes(info: &pmc::CpuInfo) -> Vec<(pmc::LibpmcClass, pmc::Result<Vec<String>>)> {
    let mut classes: Vec<pmc::LibpmcClass> = Vec::new();
    for c in &info.classes {
        let class = c.class.libpmc_class(&info.cputype);
        if !classes.contains(&class) {
            classes.push(class);
        }
    }
    classes
        .into_iter()
        .map(|class| (class, pmc::global::libpmc_event_names(class)))
        .collect()
}

/// libpmc's pmu-events list, which `pmc_pmu_print_counters` walks
/// (libpmc_pmu_util.c): each core PMU's sysfs events as `PMU/name/`, then
/// the CPU model's table names, once each, where a core PMU exists to
/// count them — the list of our libpmc's `pmc_pmu_*` functions
/// (capi/src/pmu.rs `PmuList::from_parts`). Empty without a core PMU,
/// where `pmc_pmu_enabled()` is false.
#[cfg(any(target_os = "linux", target_os = "android"))]
pub fn pmu_counter_names(
    root: &std::path::Path,
    table: Option<&pmc_linux::pmu_events::EventTable>,
) -> Vec<String> {
    let core = pmc_linux::pmu::core_pmus(root);
    let mut names: Vec<String> = core
        .iter()
        .flat_map(|p| {
            p.events
                .iter()
                .map(move |e| format!("{}/{}/", p.name, e.name))
        })
        .collect();
    if let Some(table) = table.filter(|_| !core.is_empty()) {
        names.extend(table.names().map(str::to_string));
    }
    names
}

/// `pmccontrol -L` where pmccontrol.c's `pmcc_do_list_events` is
/// `pmc_pmu_print_counters(NULL)`: on amd64 and i386 it prints `"\t%s\n"`
/// per pmu-events name and nothing else. `None` where our pmccontrol
/// prints the class listing instead: on other architectures (pmccontrol.c's
/// `#else`, `"%s\n"` per class then `"\t%s\n"` per event), and where no
/// core PMU exists (`pmc_pmu_enabled()` false), where FreeBSD's amd64
/// pmccontrol would print nothing at all.
#[cfg(any(target_os = "linux", target_os = "android"))]
pub fn pmu_listing(
    root: &std::path::Path,
    table: Option<&pmc_linux::pmu_events::EventTable>,
) -> Option<String> {
    if !cfg!(any(target_arch = "x86_64", target_arch = "x86")) {
        return None;
    }
    let names = pmu_counter_names(root, table);
    (!names.is_empty()).then(|| names.iter().map(|n| format!("\t{n}\n")).collect())
}

/// `-L`: a tab and the name, one event per line.
pub fn list(classes: &[ClassEvents]) -> String {
    let mut out = String::new();
    for (_, names) in classes {
        for n in names.iter().flatten() {
            out.push('\t');
            out.push_str(n);
            out.push('\n');
        }
    }
    out
}

/// `-u SPEC`: `name:\tdescription` for each event whose name contains SPEC.
pub fn describe(classes: &[ClassEvents], spec: &str) -> String {
    let want = spec.to_ascii_lowercase();
    let mut out = String::new();
    for (class, names) in classes {
        for n in names.iter().flatten() {
            if !n.to_ascii_lowercase().contains(&want) {
                continue;
            }
            let bare = n.rsplit('/').next().unwrap_or(n);
            match GENERIC.iter().find(|(g, _)| *g == bare) {
                Some((_, d)) => out.push_str(&format!("{n}:\t{d}\n")),
                None => out.push_str(&format!("{n}:\t{} event\n", class.to_ascii_uppercase())),
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_and_describe_formats() {
        let classes = vec![
            (
                "software".to_string(),
                Ok(vec!["cpu-clock".to_string(), "page-faults".to_string()]),
            ),
            (
                "tracepoint".to_string(),
                Err("tracefs not mounted".to_string()),
            ),
            ("msr".to_string(), Ok(vec!["msr/tsc/".to_string()])),
        ];
        assert_eq!(list(&classes), "\tcpu-clock\n\tpage-faults\n\tmsr/tsc/\n");
        assert_eq!(
            describe(&classes, "CLOCK"),
            "cpu-clock:\tThe CPU clock, a high-resolution per-CPU timer (ns)\n"
        );
        assert_eq!(describe(&classes, "tsc"), "msr/tsc/:\tMSR event\n");
        assert_eq!(describe(&classes, "nothing-like-this"), "");
    }

    /// pmccontrol's `-L` choice on fixture sysfs roots: a core PMU makes
    /// it libpmc_pmu_util.c's `pmc_pmu_print_counters` list (`"\t%s\n"`
    /// per name: sysfs events, then the table's names once each); none, as
    /// on this project's CI machines, leaves the class listing.
    #[cfg(any(target_os = "linux", target_os = "android"))]
    #[test]
    fn pmu_listing_needs_a_core_pmu() {
        use pmc_linux::pmu_events::EventTable;
        let dir = tempfile::tempdir().unwrap();
        let write = |path: &str, text: &str| {
            let p = dir.path().join(path);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        };
        write("software/type", "1\n");
        write("msr/type", "9\n");
        write("msr/events/tsc", "event=0x00\n");
        let table = EventTable::parse(
            ">testmodel\tGenuineIntel-6-55\tv1\n\
             inst_retired.any\tevent=0xc0\n\
             mem_load.miss\tevent=0xd1,umask=0x20\tcpu_core\n\
             mem_load.miss\tevent=0xd1,umask=0x20\tcpu_atom\n",
            "GenuineIntel-6-55-4",
        )
        .unwrap()
        .unwrap();
        // No core PMU: pmc_pmu_enabled() is false; the msr PMU is not one.
        assert!(pmu_counter_names(dir.path(), Some(&table)).is_empty());
        assert_eq!(pmu_listing(dir.path(), Some(&table)), None);
        write("cpu/type", "4\n");
        write("cpu/format/event", "config:0-7\n");
        write("cpu/events/cycles", "event=0x3c\n");
        let listing = pmu_listing(dir.path(), Some(&table));
        if cfg!(any(target_arch = "x86_64", target_arch = "x86")) {
            assert_eq!(
                listing.as_deref(),
                Some("\tcpu/cycles/\n\tinst_retired.any\n\tmem_load.miss\n")
            );
        } else {
            assert_eq!(listing, None, "pmccontrol.c's #else: the class listing");
        }
    }
}
