//! `pmccontrol` against FreeBSD's usr.sbin/pmccontrol/pmccontrol.c: the
//! expected text is built here from its printf formats (cited at each
//! use), with the machine's classes and rows from the `pmc` library (as
//! pmccontrol.c takes them from libpmc), the event names from outside it
//! (the uapi header with perf's names, sysfs, FreeBSD's table sizes) and
//! the FreeBSD class and CPU type names from sys/sys/pmc.h; exit statuses
//! are its sysexits.

use std::process::{Command, Output, Stdio};

use pmc::Class;
use pmc::probe::Requirement as R;

use crate::ensure;
use crate::harness::{Context, LiveTest, TestResult, test};

const PMCCONTROL: &str = env!("CARGO_BIN_EXE_pmccontrol");

// sysexits.h
const EX_USAGE: i32 = 64;
const EX_DATAERR: i32 = 65;
const EX_OSERR: i32 = 71;
const EX_IOERR: i32 = 74;
const EX_CONFIG: i32 = 78;

pub fn tests() -> Vec<LiveTest> {
    vec![
        test(
            "pmccontrol::freebsd::list_events_is_pmcc_do_list_events",
            vec![R::PerfEvent],
            list_events_is_pmcc_do_list_events,
        ),
        test(
            "pmccontrol::freebsd::list_events_with_a_core_pmu_is_pmc_pmu_print_counters",
            vec![R::PerfEvent, R::Pmu("cpu".into())],
            list_events_with_a_core_pmu_is_pmc_pmu_print_counters,
        ),
        test(
            "pmccontrol::freebsd::list_state_is_pmcc_do_list_state",
            vec![R::PerfEvent],
            list_state_is_pmcc_do_list_state,
        ),
        test(
            "pmccontrol::freebsd::statistics_are_pmcc_show_statistics",
            vec![R::PerfEvent],
            statistics_are_pmcc_show_statistics,
        ),
        test(
            "pmccontrol::freebsd::options_and_exit_statuses_are_pmccontrol_cs",
            vec![R::PerfEvent],
            options_and_exit_statuses_are_pmccontrol_cs,
        ),
        test(
            "pmccontrol::freebsd::enable_disable_checks_rows_as_pmcc_do_enable_disable",
            vec![R::PerfEvent],
            enable_disable_checks_rows_as_pmcc_do_enable_disable,
        ),
        test(
            "pmccontrol::freebsd::a_closed_output_pipe_ends_the_run_quietly",
            vec![R::PerfEvent, R::Program("sh".into())],
            a_closed_output_pipe_ends_the_run_quietly,
        ),
    ]
}

fn run(args: &[&str]) -> Result<Output, libtest_mimic::Failed> {
    Command::new(PMCCONTROL)
        .args(args)
        .output()
        .ctx("pmccontrol")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The `enum pmc_class` name (sys/sys/pmc.h `__PMC_CLASSES`, named `#S`
/// by libpmc.c) libpmc reports each of our classes as: the core PMU by
/// vendor (IAP Intel, K8 AMD, ARMV8 arm64), the `msr` PMU TSC, other PMUs
/// UCP, every kernel-defined kind SOFT.
fn freebsd_class(class: &Class, cputype: &str) -> &'static str {
    let t = cputype.to_ascii_lowercase();
    match class {
        Class::Hardware | Class::Cache | Class::Raw if t.contains("intel") => "IAP",
        Class::Hardware | Class::Cache | Class::Raw if t.contains("amd") || t.contains("hygon") => {
            "K8"
        }
        Class::Hardware | Class::Cache | Class::Raw if cfg!(target_arch = "aarch64") => "ARMV8",
        Class::Hardware | Class::Cache | Class::Raw => "IAP",
        Class::Pmu(n) if n == "msr" => "TSC",
        Class::Pmu(_) => "UCP",
        _ => "SOFT",
    }
}

/// What `pmc_event_names_of_class` lists under a FreeBSD class, taken
/// from outside the library under test: under SOFT the kernel's software
/// events ([`software_names`]), under TSC the `msr` PMU's sysfs events
/// ([`sysfs_event_names`]), nothing under UCP; under ARMV8, libpmc's table
/// of this CPU type ([`armv8_names`]). The core class of x86 is listed by
/// [`pmu_print_counters`] instead (amd64's pmcc_do_list_events), so no
/// other class reaches here.
fn names_of(freebsd: &str) -> Result<Vec<String>, libtest_mimic::Failed> {
    match freebsd {
        "SOFT" => software_names(),
        "TSC" => sysfs_event_names("msr"),
        "UCP" => Ok(vec![]),
        "ARMV8" => armv8_names(),
        other => Err(format!("no independent listing of class {other} on this machine").into()),
    }
}

/// perf's names of the kernel's software events (tools/perf/util/
/// parse-events.c `event_symbols_sw[]`, indexed by `enum perf_sw_ids`),
/// transcribed: the uapi identifier and perf's `.symbol`.
const PERF_SW_SYMBOLS: &[(&str, &str)] = &[
    ("PERF_COUNT_SW_CPU_CLOCK", "cpu-clock"),
    ("PERF_COUNT_SW_TASK_CLOCK", "task-clock"),
    ("PERF_COUNT_SW_PAGE_FAULTS", "page-faults"),
    ("PERF_COUNT_SW_CONTEXT_SWITCHES", "context-switches"),
    ("PERF_COUNT_SW_CPU_MIGRATIONS", "cpu-migrations"),
    ("PERF_COUNT_SW_PAGE_FAULTS_MIN", "minor-faults"),
    ("PERF_COUNT_SW_PAGE_FAULTS_MAJ", "major-faults"),
    ("PERF_COUNT_SW_ALIGNMENT_FAULTS", "alignment-faults"),
    ("PERF_COUNT_SW_EMULATION_FAULTS", "emulation-faults"),
    ("PERF_COUNT_SW_DUMMY", "dummy"),
    ("PERF_COUNT_SW_BPF_OUTPUT", "bpf-output"),
    ("PERF_COUNT_SW_CGROUP_SWITCHES", "cgroup-switches"),
];

/// The SOFT list: every `PERF_COUNT_SW_*` of `enum perf_sw_ids` in the
/// system's /usr/include/linux/perf_event.h, in its value order, by
/// perf's name ([`PERF_SW_SYMBOLS`]); where perf is installed, the same
/// set as `perf list sw`'s "[Software event]" lines.
fn software_names() -> Result<Vec<String>, libtest_mimic::Failed> {
    let header = "/usr/include/linux/perf_event.h";
    let source = std::fs::read_to_string(header).ctx(header)?;
    let body = source
        .split_once("enum perf_sw_ids {")
        .and_then(|(_, rest)| rest.split_once("};"))
        .map(|(body, _)| body)
        .ok_or_else(|| format!("no enum perf_sw_ids in {header}"))?;
    let mut ids: Vec<(u32, &str)> = Vec::new();
    for line in body.lines() {
        if let Some((name, value)) = line.split_once('=') {
            let value = value.trim().trim_end_matches(',').trim();
            ids.push((value.parse().ctx(line)?, name.trim()));
        }
    }
    ids.sort();
    let mut names = Vec::new();
    for (_, id) in ids {
        let symbol = PERF_SW_SYMBOLS
            .iter()
            .find(|(i, _)| *i == id)
            .map(|(_, s)| s.to_string())
            .ok_or_else(|| format!("{header} has {id}, which PERF_SW_SYMBOLS lacks"))?;
        names.push(symbol);
    }
    if let Ok(out) = Command::new("perf").args(["list", "sw"]).output()
        && out.status.success()
    {
        let mut perf: Vec<String> = text(&out.stdout)
            .lines()
            .filter(|l| l.contains("[Software event]"))
            .filter_map(|l| l.split_whitespace().next().map(str::to_string))
            .collect();
        let mut ours = names.clone();
        perf.sort();
        ours.sort();
        ensure!(
            perf == ours,
            "perf list sw: {perf:?}; {header} with perf's names: {ours:?}"
        );
    }
    Ok(names)
}

/// A sysfs PMU's event aliases as `PMU/NAME/`, in name order: the files of
/// /sys/bus/event_source/devices/PMU/events/ less their `.scale`, `.unit`
/// (and other dotted) companions.
fn sysfs_event_names(pmu: &str) -> Result<Vec<String>, libtest_mimic::Failed> {
    let dir = format!("/sys/bus/event_source/devices/{pmu}/events");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .ctx(&dir)?
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| !n.contains('.'))
        .collect();
    names.sort();
    Ok(names.into_iter().map(|n| format!("{pmu}/{n}/")).collect())
}

/// libpmc.c's ARMV8 table for this CPU's type (`cortex_a53_event_table`
/// and its siblings): the aliases of the type's
/// `__PMC_EV_ALIAS_ARMV8_CORTEX_*()` — 34 for A53 (FreeBSD's default), 84
/// for A57, 107 for A76 in pmc_events.h, `SW_INCR` first as
/// `__PMC_EV_ALIAS_ARMV8_COMMON()` begins — then `__PMC_EV_ARMV8()`'s
/// `EVENT_00H` … `EVENT_3FFH`, built here.
fn armv8_names() -> Result<Vec<String>, libtest_mimic::Failed> {
    let aliases = match cputype_of_midr()?.as_str() {
        "ARMV8_CORTEX_A57" => 84,
        "ARMV8_CORTEX_A76" => 107,
        _ => 34,
    };
    let listed = pmc::global::libpmc_event_names(pmc::LibpmcClass::Armv8).ctx("ARMV8 names")?;
    ensure!(
        listed.len() == aliases + 1024 && listed[0] == "SW_INCR",
        "{} ARMV8 names, first {:?}; libpmc's table has {aliases} aliases and 1024 events",
        listed.len(),
        listed.first()
    );
    let mut names = listed[..aliases].to_vec();
    ensure!(
        names.iter().all(|n| !n.starts_with("EVENT_")),
        "an alias named as a raw event: {names:?}"
    );
    names.extend((0..0x400).map(|code| format!("EVENT_{code:02X}H")));
    Ok(names)
}

/// hwpmc_arm64.c's `pmc_arm64_initialize` type from PMCR_EL0's IDCODE,
/// which on Arm's cores names the core MIDR_EL1's part number names (read
/// here from sysfs): Cortex-A76 / Neoverse-N1 (parts 0xD0B, 0xD0C) are
/// ARMV8_CORTEX_A76, Cortex-A57 / -A72 (0xD07, 0xD08) ARMV8_CORTEX_A57,
/// anything else ARMV8_CORTEX_A53 — the names of sys/sys/pmc.h's
/// `__PMC_CPUS()`.
fn cputype_of_midr() -> Result<String, libtest_mimic::Failed> {
    let path = "/sys/devices/system/cpu/cpu0/regs/identification/midr_el1";
    let text = std::fs::read_to_string(path).ctx(path)?;
    let midr = u64::from_str_radix(text.trim().trim_start_matches("0x"), 16).ctx("MIDR")?;
    let (implementer, part) = ((midr >> 24) & 0xFF, (midr >> 4) & 0xFFF);
    Ok(match (implementer, part) {
        (0x41, 0xD0B | 0xD0C) => "ARMV8_CORTEX_A76",
        (0x41, 0xD07 | 0xD08) => "ARMV8_CORTEX_A57",
        _ => "ARMV8_CORTEX_A53",
    }
    .to_string())
}

/// Whether this machine has a core PMU, looked at directly in sysfs (the
/// PMU directories libpmc's pmu-events list is read for).
fn has_core_pmu() -> bool {
    let root = std::path::Path::new("/sys/bus/event_source/devices");
    root.join("cpu/type").exists()
        || ["cpu_core", "cpu_atom"]
            .iter()
            .any(|p| root.join(p).join("cpus").exists())
}

/// pmccontrol.c `pmcc_do_list_events` on amd64 and i386 is
/// `pmc_pmu_print_counters(NULL)` (libpmc_pmu_util.c: `printf("\t%s\n",
/// pe->name)` per pmu-events entry): here the core PMUs' sysfs events, read
/// from sysfs ([`sysfs_event_names`]), then the CPU's pmu-events names. The
/// latter are the library's table (no other copy of the kernel's JSON is
/// on the machine), taken from the raw class's listing after the sysfs
/// names, which must be exactly those sysfs lists. `None` where
/// pmccontrol.c's other listing applies: another architecture, or no core
/// PMU (`pmc_pmu_enabled()` false).
fn pmu_print_counters() -> Result<Option<String>, libtest_mimic::Failed> {
    if !cfg!(any(target_arch = "x86_64", target_arch = "x86")) || !has_core_pmu() {
        return Ok(None);
    }
    let mut sysfs = Vec::new();
    for pmu in ["cpu", "cpu_core", "cpu_atom"] {
        if std::path::Path::new("/sys/bus/event_source/devices")
            .join(pmu)
            .join("events")
            .is_dir()
        {
            sysfs.extend(sysfs_event_names(pmu)?);
        }
    }
    let listed = pmc::event_names_of_class(&Class::Raw).ctx("event names of the raw class")?;
    let listed: Vec<&String> = listed.iter().filter(|n| !n.starts_with("r<")).collect();
    let (of_sysfs, native): (Vec<&String>, Vec<&String>) =
        listed.iter().partition(|n| n.ends_with('/'));
    ensure!(
        of_sysfs
            .iter()
            .map(|n| n.as_str())
            .eq(sysfs.iter().map(String::as_str)),
        "the raw class lists {of_sysfs:?} of sysfs; sysfs has {sysfs:?}"
    );
    Ok(Some(
        sysfs
            .iter()
            .chain(native)
            .map(|n| format!("\t{n}\n"))
            .collect(),
    ))
}

/// On a machine with a core PMU, `-L` is libpmc's pmu-events list, one
/// `"\t%s\n"` per name and no class line (amd64's pmcc_do_list_events).
fn list_events_with_a_core_pmu_is_pmc_pmu_print_counters() -> TestResult {
    let out = run(&["-L"])?;
    ensure!(
        out.status.code() == Some(0),
        "-L: {:?} {}",
        out.status,
        text(&out.stderr)
    );
    let got = text(&out.stdout);
    match pmu_print_counters()? {
        Some(expected) => {
            ensure!(
                !expected.is_empty() && got == expected,
                "-L is not pmc_pmu_print_counters(NULL):\n--- got\n{got}--- expected\n{expected}"
            );
            ensure!(
                got.lines().all(|l| l.starts_with('\t')),
                "a class line: {got}"
            );
        }
        // Not amd64: pmccontrol.c's class listing.
        None if !cfg!(any(target_arch = "x86_64", target_arch = "x86")) => {
            ensure!(got.starts_with("SOFT\n"), "{got}");
        }
        // The gate found a core PMU; without one (a forced run) there is
        // nothing this test can check.
        None => {
            return Err(format!(
                "no `cpu` PMU in /sys/bus/event_source/devices: amd64's \
                 pmc_pmu_print_counters lists its events; -L printed:\n{got}"
            )
            .into());
        }
    }
    Ok(())
}

fn list_events_is_pmcc_do_list_events() -> TestResult {
    if let Some(expected) = pmu_print_counters()? {
        let got = text(&run(&["-L"])?.stdout);
        ensure!(
            got == expected,
            "-L:\n--- got\n{got}--- expected\n{expected}"
        );
        return Ok(());
    }
    let info = pmc::cpuinfo().ctx("pmc::cpuinfo")?;
    let mut seen: Vec<&str> = Vec::new();
    for c in &info.classes {
        let name = freebsd_class(&c.class, &info.cputype);
        if !seen.contains(&name) {
            seen.push(name);
        }
    }
    // hwpmc_mod.c pmc_mdep_alloc: SOFT is class index 0, the machine's
    // own classes follow.
    seen.sort_by_key(|c| *c != "SOFT");
    let mut expected = String::new();
    for name in seen {
        // pmccontrol.c pmcc_do_list_events: printf("%s\n", pmc_name_of_class(c))
        expected.push_str(&format!("{name}\n"));
        for n in names_of(name)? {
            // then printf("\t%s\n", eventnamelist[j]) for each event
            expected.push_str(&format!("\t{n}\n"));
        }
    }
    let out = run(&["-L"])?;
    ensure!(
        out.status.code() == Some(0),
        "-L: {:?} {}",
        out.status,
        text(&out.stderr)
    );
    let got = text(&out.stdout);
    ensure!(
        got == expected,
        "-L differs from pmcc_do_list_events:\n--- got\n{got}--- expected\n{expected}"
    );
    // The kernel's software events are always there, under libpmc's SOFT.
    ensure!(got.starts_with("SOFT\n\tcpu-clock\n"), "{got}");
    Ok(())
}

/// libpmc's `pmc_name_of_cputype` of this CPU, from /proc/cpuinfo as
/// hwpmc_amd.c/hwpmc_intel.c classify it: AMD/Hygon family ≥ 0xF is
/// AMD_K8; Intel family 6 an INTEL_* type or GENERIC; others GENERIC. On
/// arm64 hwpmc_arm64.c's type ([`cputype_of_midr`]).
fn cputype_name_ok(name: &str) -> Result<bool, libtest_mimic::Failed> {
    if cfg!(target_arch = "aarch64") {
        return Ok(name == cputype_of_midr()?);
    }
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").ctx("/proc/cpuinfo")?;
    let field = |key: &str| {
        cpuinfo
            .lines()
            .find(|l| l.split(':').next().is_some_and(|k| k.trim() == key))
            .and_then(|l| l.split_once(':'))
            .map(|(_, v)| v.trim().to_string())
    };
    let vendor = field("vendor_id").unwrap_or_default();
    let family: u32 = field("cpu family")
        .and_then(|f| f.parse().ok())
        .unwrap_or(0);
    Ok(match vendor.as_str() {
        "AuthenticAMD" | "HygonGenuine" if family >= 0xF => name == "AMD_K8",
        "GenuineIntel" if family == 6 => name.starts_with("INTEL_") || name == "GENERIC",
        _ => name == "GENERIC",
    })
}

fn online_cpus() -> Result<Vec<u32>, libtest_mimic::Failed> {
    let list = std::fs::read_to_string("/sys/devices/system/cpu/online").ctx("cpu/online")?;
    let mut cpus = Vec::new();
    for part in list.trim().split(',') {
        let (a, b) = part.split_once('-').unwrap_or((part, part));
        let (a, b): (u32, u32) = (a.parse().ctx("cpu")?, b.parse().ctx("cpu")?);
        cpus.extend(a..=b);
    }
    Ok(cpus)
}

fn list_state_is_pmcc_do_list_state() -> TestResult {
    let info = pmc::cpuinfo().ctx("pmc::cpuinfo")?;
    let out = run(&["-l"])?;
    ensure!(
        out.status.code() == Some(0),
        "-l: {:?} {}",
        out.status,
        text(&out.stderr)
    );
    let got = text(&out.stdout);
    let mut lines = got.lines();
    // printf("%d %s CPUs present, with %d PMCs per CPU\n", pm_ncpu,
    // pmc_name_of_cputype(pm_cputype), pm_npmc)
    let first = lines.next().unwrap_or_default();
    let words: Vec<&str> = first.split(' ').collect();
    ensure!(
        words.len() == 9
            && words[0] == info.ncpu.to_string()
            && words[2..]
                == [
                    "CPUs",
                    "present,",
                    "with",
                    &info.npmc.to_string(),
                    "PMCs",
                    "per",
                    "CPU"
                ],
        "first line: {first:?}"
    );
    ensure!(
        cputype_name_ok(words[1])?,
        "cpu type {:?} for this CPU",
        words[1]
    );
    let mut expected = format!("{first}\n");
    let core = freebsd_class(&Class::Hardware, &info.cputype);
    // Offline CPUs are skipped (pmc_pmcinfo's ENXIO); `c` counts the shown ones.
    for (c, cpu) in online_cpus()?.into_iter().enumerate() {
        // printf("#CPU %d:\n", c++) and the column header
        expected.push_str(&format!(
            "#CPU {c}:\n#N  NAME             CLASS  STATE    ROW-DISP\n"
        ));
        for n in 0..pmc::npmc(cpu).ctx("npmc")? {
            // printf(" %-2d %-16s %-6s %-8s %-10s", n, pm_name,
            // pmc_name_of_class, "ENABLED", pmc_name_of_disposition) and
            // "\n": a free row, pmccontrol owning no PMC.
            expected.push_str(&format!(
                " {n:<2} {:<16} {core:<6} {:<8} {:<10}\n",
                "", "ENABLED", "FREE"
            ));
        }
    }
    ensure!(
        got == expected,
        "-l differs from pmcc_do_list_state:\n--- got\n{got}--- expected\n{expected}"
    );
    // An Arm PMU's rows are PMCR_EL0.N, hwpmc_arm64.c's `pcd_num`; the
    // kernel's boot line ("hw perfevents: enabled with armv8_pmuv3 PMU
    // driver, 7 counters available") counts the cycle counter too. Where
    // the kernel log is readable, they agree.
    if cfg!(target_arch = "aarch64") && info.npmc > 0 {
        let log = Command::new("dmesg").output().map(|o| text(&o.stdout));
        match log.as_deref().unwrap_or("").lines().find_map(|l| {
            l.split_once("PMU driver, ")
                .and_then(|(_, r)| r.strip_suffix(" counters available"))
        }) {
            Some(n) => {
                ensure!(
                    n.trim().parse::<u32>().ok() == Some(info.npmc + 1),
                    "-l shows {} PMCs per CPU; the kernel says {n} counters (with the cycle counter)",
                    info.npmc
                );
            }
            None => eprintln!(
                "note: no PMU line in dmesg to compare {} PMCs with",
                info.npmc
            ),
        }
    }
    Ok(())
}

fn statistics_are_pmcc_show_statistics() -> TestResult {
    let out = run(&["-s"])?;
    ensure!(out.status.code() == Some(0), "-s: {:?}", out.status);
    // pmccontrol.c pmcc_show_statistics: PRINT(N,V) is
    // printf("%-40s %d\n", N, gms.pm_V), for these labels in this order;
    // every value is 0 here (documented in pmccontrol.rs: Linux keeps no
    // driver-wide counts, and pmccontrol has no log of its own).
    let mut expected = String::new();
    for label in [
        "interrupts processed:",
        "non-PMC interrupts:",
        "sampling stalls due to space shortages:",
        "system calls:",
        "system calls with errors:",
        "buffer requests:",
        "buffer requests failed:",
        "sampling log sweeps:",
    ] {
        expected.push_str(&format!("{label:<40} 0\n"));
    }
    let got = text(&out.stdout);
    ensure!(
        got == expected,
        "-s differs from pmcc_show_statistics:\n--- got\n{got}--- expected\n{expected}"
    );
    Ok(())
}

/// pmccontrol.c's `usage_message`, as errx(3) prints it.
const USAGE: &str = "pmccontrol: Usage:
       pmccontrol -L
       pmccontrol -l
       pmccontrol -s
       pmccontrol [-e pmc | -d pmc | -c cpu] ...
";

fn options_and_exit_statuses_are_pmccontrol_cs() -> TestResult {
    // (arguments, status, what stderr starts with): main()'s getopt loop
    // over ":c:d:e:lLs" and the checks after it.
    let cases: &[(&[&str], i32, &str)] = &[
        // command == PMCC_PRINT_USAGE: errx(EX_USAGE, "%s", usage_message)
        (&[], EX_USAGE, USAGE),
        // case '?': warnx("Unrecognized option \"-%c\"", optopt), then the usage
        (
            &["-x"],
            EX_USAGE,
            "pmccontrol: Unrecognized option \"-x\"\npmccontrol: Usage:",
        ),
        // case ':': errx(EX_USAGE, "Missing argument to option '-%c'", optopt)
        (
            &["-e"],
            EX_USAGE,
            "pmccontrol: Missing argument to option '-e'\n",
        ),
        (
            &["-Lc"],
            EX_USAGE,
            "pmccontrol: Missing argument to option '-c'\n",
        ),
        // -L, -l, -s each set error = 1 when a command is set: exit(EX_USAGE)
        (&["-L", "-l"], EX_USAGE, "pmccontrol: "),
        (&["-ls"], EX_USAGE, "pmccontrol: "),
        (&["-s", "-e", "0"], EX_USAGE, "pmccontrol: "),
        (&["-e", "0", "-L"], EX_USAGE, "pmccontrol: "),
        // strtoul with *dummy != '\0' or a negative int:
        // errx(EX_DATAERR, "\"%s\" is not a valid PMC id" / "CPU id")
        (
            &["-e", "abc"],
            EX_DATAERR,
            "pmccontrol: \"abc\" is not a valid PMC id\n",
        ),
        (
            &["-d", "-1"],
            EX_DATAERR,
            "pmccontrol: \"-1\" is not a valid PMC id\n",
        ),
        (
            &["-c", "1x", "-e", "0"],
            EX_DATAERR,
            "pmccontrol: \"1x\" is not a valid CPU id\n",
        ),
        // -c alone: errx(EX_USAGE, "No PMCs specified to enable or disable")
        (
            &["-c", "0"],
            EX_USAGE,
            "pmccontrol: No PMCs specified to enable or disable\n",
        ),
        (
            &["-c", "*"],
            EX_USAGE,
            "pmccontrol: No PMCs specified to enable or disable\n",
        ),
    ];
    for (args, status, stderr) in cases {
        let out = run(args)?;
        let err = text(&out.stderr);
        ensure!(
            out.status.code() == Some(*status) && err.starts_with(stderr),
            "pmccontrol {args:?}: {:?}, stderr {err:?}; pmccontrol.c: {status}, {stderr:?}",
            out.status
        );
        ensure!(out.stdout.is_empty(), "{args:?}: {}", text(&out.stdout));
    }
    // getopt stops at the first operand; pmccontrol.c ignores the rest.
    let out = run(&["-L", "operand", "-l"])?;
    ensure!(
        out.status.code() == Some(0),
        "-L operand -l: {:?}",
        out.status
    );
    ensure!(
        text(&out.stdout) == text(&run(&["-L"])?.stdout),
        "-L operand"
    );
    // Flags bundle and arguments attach as getopt allows.
    let out = run(&["-c0"])?;
    ensure!(out.status.code() == Some(EX_USAGE), "-c0: {:?}", out.status);
    Ok(())
}

fn enable_disable_checks_rows_as_pmcc_do_enable_disable() -> TestResult {
    let ncpu = pmc::ncpu().ctx("ncpu")?;
    let npmc = (0..ncpu)
        .map(|c| pmc::npmc(c).unwrap_or(0))
        .max()
        .unwrap_or(0);
    let check = |args: &[&str], status: i32, stderr: &str| -> TestResult {
        let out = run(args)?;
        let err = text(&out.stderr);
        ensure!(
            out.status.code() == Some(status) && err.starts_with(stderr),
            "pmccontrol {args:?}: {:?} {err:?}; pmccontrol.c: {status} {stderr:?}",
            out.status
        );
        Ok(())
    };
    if npmc == 0 {
        // if (npmc == 0) errx(EX_CONFIG, "No PMCs found"), before any row check.
        check(&["-e", "0"], EX_CONFIG, "pmccontrol: No PMCs found\n")?;
        check(
            &["-c", "*", "-d", "*"],
            EX_CONFIG,
            "pmccontrol: No PMCs found\n",
        )?;
        return check(
            &["-c", &ncpu.to_string(), "-e", "0"],
            EX_CONFIG,
            "pmccontrol: No PMCs found\n",
        );
    }
    // errx(EX_DATAERR, "CPU id too large: \"%d\"") / "PMC id too large: \"%d\""
    check(
        &["-c", &ncpu.to_string(), "-e", "0"],
        EX_DATAERR,
        &format!("pmccontrol: CPU id too large: \"{ncpu}\"\n"),
    )?;
    check(
        &["-e", &npmc.to_string()],
        EX_DATAERR,
        &format!("pmccontrol: PMC id too large: \"{npmc}\"\n"),
    )?;
    // pmc_enable fails (Linux keeps no per-row state: EOPNOTSUPP):
    // err(EX_OSERR, "%s of PMC %d on CPU %d failed", …) on the first row.
    check(
        &["-c", "0", "-e", "0"],
        EX_OSERR,
        "pmccontrol: Enable of PMC 0 on CPU 0 failed: ",
    )?;
    check(
        &["-d", "*"],
        EX_OSERR,
        "pmccontrol: Disable of PMC 0 on CPU 0 failed: ",
    )
}

fn a_closed_output_pipe_ends_the_run_quietly() -> TestResult {
    // A pipe whose reader is gone before pmccontrol writes: every write
    // fails with EPIPE, deterministically.
    for args in [&["-L"][..], &["-l"], &["-s"], &["--help"]] {
        let (reader, writer) = std::io::pipe().ctx("pipe")?;
        drop(reader);
        let out = Command::new(PMCCONTROL)
            .args(args)
            .stdout(writer)
            .stderr(Stdio::piped())
            .output()
            .ctx("pmccontrol")?;
        let err = text(&out.stderr);
        ensure!(
            out.status.code() == Some(0) && err.is_empty(),
            "pmccontrol {args:?} into a closed pipe: {:?}, stderr {err:?}",
            out.status
        );
    }
    // The issue's own line, through a shell: head takes one line and goes.
    let out = Command::new("sh")
        .args(["-c", &format!("'{PMCCONTROL}' -L | head -1")])
        .output()
        .ctx("sh")?;
    // amd64 with a core PMU prints pmu-events names, one per line;
    // elsewhere the first class, SOFT.
    let first = match pmu_print_counters()? {
        Some(listing) => listing.lines().next().unwrap_or_default().to_string() + "\n",
        None => "SOFT\n".to_string(),
    };
    ensure!(text(&out.stdout) == first, "{}", text(&out.stdout));
    ensure!(text(&out.stderr).is_empty(), "{}", text(&out.stderr));
    // Any other write error is reported: EX_IOERR.
    if std::path::Path::new("/dev/full").exists() {
        let full = std::fs::File::create("/dev/full").ctx("/dev/full")?;
        let out = Command::new(PMCCONTROL)
            .arg("-L")
            .stdout(full)
            .output()
            .ctx("pmccontrol")?;
        let err = text(&out.stderr);
        ensure!(
            out.status.code() == Some(EX_IOERR) && err.contains("No space left on device"),
            "-L > /dev/full: {:?} {err:?}",
            out.status
        );
    }
    Ok(())
}
