//! Machine description and event listing on Linux.

use pmc_linux::attr::{CacheEvent, Hardware, Software};
use pmc_linux::system;

use super::resolve::max_precise;
use crate::machine::{ClassInfo, CpuInfo};
use crate::{Capabilities, Class, Result};

const SYSFS_PMUS: &str = "/sys/bus/event_source/devices";

fn cpu_model() -> String {
    let text = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let field = |key: &str| {
        text.lines()
            .find(|l| l.split(':').next().is_some_and(|k| k.trim() == key))
            .and_then(|l| l.split_once(':'))
            .map(|(_, v)| v.trim().to_string())
    };
    let name = field("model name").unwrap_or_else(|| std::env::consts::ARCH.to_string());
    match (field("cpu family"), field("model")) {
        (Some(f), Some(m)) => format!("{name} (family {f}, model {m})"),
        _ => name,
    }
}

/// General-purpose and fixed counters per CPU, and their width, from CPUID.
fn hardware_counters() -> (u32, u32) {
    if !system::has_hardware_pmu() {
        return (0, 0);
    }
    let Some([_, ebx, ecx, edx]) = system::cpuid(0, 0) else {
        return (0, 48);
    };
    let vendor: Vec<u8> = [ebx, edx, ecx]
        .iter()
        .flat_map(|r| r.to_le_bytes())
        .collect();
    if vendor == b"AuthenticAMD" || vendor == b"HygonGenuine" {
        let max_ext = system::cpuid(0x8000_0000, 0).map_or(0, |r| r[0]);
        if max_ext >= 0x8000_0022
            && let Some([eax, ebx, ..]) = system::cpuid(0x8000_0022, 0)
            && eax & 1 != 0
        {
            return (ebx & 0xf, 48);
        }
        let ext_core = system::cpuid(0x8000_0001, 0).is_some_and(|r| r[2] & (1 << 23) != 0);
        return (if ext_core { 6 } else { 4 }, 48);
    }
    match system::cpuid(0xa, 0) {
        Some([eax, _, _, edx]) => {
            let gp = (eax >> 8) & 0xff;
            let fixed = edx & 0x1f;
            (gp + fixed, (eax >> 16) & 0xff)
        }
        None => (0, 48),
    }
}

fn sysfs_pmus() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(SYSFS_PMUS)
        .map(|d| {
            d.filter_map(|e| e.ok()?.file_name().into_string().ok())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// `PMC_CAP_SYSWIDE` / `PMC_CAP_DOMWIDE` as FreeBSD means them (one
/// counter for the machine / per memory domain, so pmc-stat allocates it
/// on one CPU each): an uncore PMU whose sysfs `cpumask` names one CPU
/// counts for the whole machine, one naming a CPU per package counts per
/// package. Per-CPU PMUs (no cpumask, or every CPU) have neither.
fn scope_caps(pmu: &str) -> Capabilities {
    let cpus = pmc_linux::pmu::Pmu::find(std::path::Path::new(SYSFS_PMUS), pmu)
        .ok()
        .and_then(|p| p.cpus);
    let online = system::online_cpus().len();
    match cpus {
        Some(c) if c.len() == 1 && online > 1 => Capabilities::SYSWIDE,
        Some(c) if c.len() > 1 && c.len() < online => Capabilities::DOMWIDE,
        _ => Capabilities::empty(),
    }
}

pub(super) fn cpuinfo() -> CpuInfo {
    let (npmc, width) = hardware_counters();
    let ncpu = system::possible_cpus().iter().max().map_or(1, |m| m + 1);
    let mut classes = Vec::new();
    let hw = system::has_hardware_pmu();
    let rw = Capabilities::READ | Capabilities::WRITE;
    let base = rw | Capabilities::INTERRUPT | Capabilities::USER | Capabilities::SYSTEM;
    if hw {
        let mut caps = base;
        if max_precise(std::path::Path::new(pmc_linux::pmu::SYSFS_ROOT)) > 0 {
            caps |= Capabilities::PRECISE;
        }
        classes.push(ClassInfo {
            class: Class::Hardware,
            caps,
            width,
            num: Some(npmc),
        });
        classes.push(ClassInfo {
            class: Class::Cache,
            caps,
            width,
            num: Some(npmc),
        });
        classes.push(ClassInfo {
            class: Class::Raw,
            caps: caps
                | Capabilities::EDGE
                | Capabilities::THRESHOLD
                | Capabilities::INVERT
                | Capabilities::QUALIFIER,
            width,
            num: Some(npmc),
        });
    }
    classes.push(ClassInfo {
        class: Class::Software,
        caps: base,
        width: 64,
        num: None,
    });
    for pmu in sysfs_pmus() {
        let class = match pmu.as_str() {
            "cpu" | "software" => continue,
            "tracepoint" => Class::Tracepoint,
            "breakpoint" => Class::Breakpoint,
            "uprobe" => Class::Uprobe,
            "kprobe" => Class::Kprobe,
            _ => Class::Pmu(pmu.clone()),
        };
        let caps = match class {
            Class::Tracepoint => rw | Capabilities::INTERRUPT,
            Class::Breakpoint => base,
            Class::Uprobe | Class::Kprobe => rw | Capabilities::INTERRUPT,
            _ => rw | scope_caps(&pmu),
        };
        classes.push(ClassInfo {
            class,
            caps,
            width: 64,
            num: None,
        });
    }
    CpuInfo {
        cputype: cpu_model(),
        ncpu,
        npmc,
        classes,
    }
}

pub(super) fn event_names(class: &Class) -> Result<Vec<String>> {
    Ok(match class {
        Class::Hardware => Hardware::ALL.iter().map(|h| h.name().to_string()).collect(),
        Class::Cache => CacheEvent::all().map(|c| c.name()).collect(),
        Class::Software => Software::ALL.iter().map(|s| s.name().to_string()).collect(),
        Class::Raw => {
            let mut v = vec!["r<hex config>".to_string()];
            let cores = pmc_linux::pmu::core_pmus(std::path::Path::new(pmc_linux::pmu::SYSFS_ROOT));
            for p in &cores {
                v.extend(p.events.iter().map(|e| format!("{}/{}/", p.name, e.name)));
            }
            // The CPU's native (pmu-events) names, where a core PMU counts them.
            if let Some(table) =
                pmc_linux::pmu_events::EventTable::host().filter(|_| !cores.is_empty())
            {
                v.extend(table.names().map(str::to_string));
            }
            v
        }
        Class::Tracepoint => pmc_linux::tracefs::Tracefs::locate()
            .and_then(|t| t.list())
            .map_err(super::from_linux)?
            .into_iter()
            .map(|(s, e)| format!("{s}:{e}"))
            .collect(),
        Class::Breakpoint => vec!["mem:<addr>[/<1|2|4|8>][:r|w|rw|x]".into()],
        Class::Uprobe => vec![
            "uprobe:<absolute path>:<symbol>[+<offset>]".into(),
            "uprobe:<absolute path>:<file offset>".into(),
            "uretprobe:<absolute path>:<symbol>".into(),
        ],
        Class::Kprobe => vec![
            "kprobe:<function>[+<offset>]".into(),
            "kprobe:<address>".into(),
            "kretprobe:<function>".into(),
        ],
        Class::Pmu(name) => {
            let pmu =
                pmc_linux::pmu::Pmu::find(std::path::Path::new(pmc_linux::pmu::SYSFS_ROOT), name)
                    .map_err(super::from_linux)?;
            pmu.events
                .iter()
                .map(|e| format!("{}/{}/", pmu.name, e.name))
                .collect()
        }
    })
}
