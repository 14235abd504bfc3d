//! Machine description and event listing on Linux.

use pmc_linux::attr::{Attr, CacheEvent, EventConfig, Hardware, Software};
use pmc_linux::event::{Event, OpenFlags, Target};
use pmc_linux::system;

use super::resolve::caps::class_capabilities;
use super::resolve::description;
use crate::{Class, Result};
use crate::{ClassInfo, CpuInfo};

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

/// General-purpose and fixed counters per CPU: from CPUID on x86, from
/// what a group may hold on arm64 ([`arm_event_counters`]); 0 without a
/// hardware PMU or elsewhere.
fn hardware_counters() -> u32 {
    if !system::has_hardware_pmu() {
        return 0;
    }
    if cfg!(target_arch = "aarch64") {
        return arm_event_counters();
    }
    let Some([_, ebx, ecx, edx]) = system::cpuid(0, 0) else {
        return 0;
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
            return ebx & 0xf;
        }
        let ext_core = system::cpuid(0x8000_0001, 0).is_some_and(|r| r[2] & (1 << 23) != 0);
        return if ext_core { 6 } else { 4 };
    }
    system::cpuid(0xa, 0).map_or(0, |[eax, _, _, edx]| {
        let gp = (eax >> 8) & 0xff;
        let fixed = edx & 0x1f;
        gp + fixed
    })
}

/// The event counters of an Arm PMUv3 — PMCR_EL0.N, which hwpmc_arm64.c
/// reports as the ARMV8 class's `pcd_num` (the cycle counter is not one of
/// them) and which Linux does not show user space. The kernel checks at
/// open that a group fits the PMU (arm_pmu.c `validate_group`), so a
/// group of INST_RETIRED (0x08) counters, which cannot use the cycle
/// counter, opens exactly N members. They must be opened enabled: the
/// check passes every disabled member. They count this thread's user
/// instructions for a moment and are closed.
fn arm_event_counters() -> u32 {
    const INST_RETIRED: u64 = 0x08;
    let attr = Attr::new(EventConfig::Raw(INST_RETIRED))
        .exclude_kernel(true)
        .exclude_hv(true);
    let Ok(leader) = Event::open(&attr, Target::CALLER, None, OpenFlags::empty()) else {
        return 0;
    };
    // PMCR_EL0.N is a 5-bit field: at most 31 counters.
    let members: Vec<Event> = (1..31)
        .map_while(|_| Event::open(&attr, Target::CALLER, Some(&leader), OpenFlags::empty()).ok())
        .collect();
    members.len() as u32 + 1
}

/// `pmc_cpuinfo`: the CPU, its counters, and a row per class with the
/// capabilities every PMC of that class reports (one function computes
/// both: `resolve::caps::class_capabilities`).
pub(super) fn cpuinfo() -> CpuInfo {
    let npmc = hardware_counters();
    let ncpu = system::possible_cpus().iter().max().map_or(1, |m| m + 1);
    let d = description::system_checked();
    let mut classes = Vec::new();
    let row = |class: Class, width: u32, num: Option<u32>| ClassInfo {
        caps: class_capabilities(&class, &d),
        class,
        width,
        num,
    };
    // The kernel's software events first: hwpmc_mod.c's pmc_mdep_alloc
    // makes SOFT class index 0 on every platform, and libpmc's callers
    // (pmccontrol -L, pmc_cpuinfo) list the classes in that order.
    classes.push(row(Class::Software, 64, None));
    if system::has_hardware_pmu() {
        // `read` gives 64-bit values whatever the counters' own width
        // (the kernel extends them), so no value wraps below 64 bits: the
        // class width is 64, as for every other class.
        for class in [Class::Hardware, Class::Cache, Class::Raw] {
            classes.push(row(class, 64, Some(npmc)));
        }
    }
    for pmu in d.pmus() {
        // The core PMUs are the hardware, cache and raw classes above.
        if d.is_core(pmu) {
            continue;
        }
        let class = match pmu.name.as_str() {
            "software" => continue,
            "tracepoint" => Class::Tracepoint,
            "breakpoint" => Class::Breakpoint,
            "uprobe" => Class::Uprobe,
            "kprobe" => Class::Kprobe,
            _ => Class::Pmu(pmu.name.clone()),
        };
        classes.push(row(class, 64, None));
    }
    CpuInfo {
        cputype: cpu_model(),
        ncpu,
        npmc,
        classes,
    }
}

/// Whether a user-mode counter of `config` opens on this thread (disabled).
fn opens(config: EventConfig) -> bool {
    let attr = Attr::new(config).exclude_kernel(true).exclude_hv(true);
    Event::open(&attr, Target::CALLER, None, OpenFlags::empty()).is_ok()
}

pub(super) fn event_names(class: &Class) -> Result<Vec<String>> {
    Ok(match class {
        // The generic events this CPU's PMU counts, as `perf list` shows
        // them (is_event_supported: each opened once on this thread); a
        // PMUv3, for one, has no L1-icache stores.
        Class::Hardware => Hardware::ALL
            .iter()
            .filter(|&&event| opens(EventConfig::Hardware { event, pmu: None }))
            .map(|h| h.name().to_string())
            .collect(),
        Class::Cache => CacheEvent::all()
            .filter(|&event| opens(EventConfig::Cache { event, pmu: None }))
            .map(|c| c.name())
            .collect(),
        Class::Software => Software::ALL.iter().map(|s| s.name().to_string()).collect(),
        Class::Raw => {
            let mut v = vec!["r<hex config>".to_string()];
            let d = description::system_checked();
            for p in d.core_pmus() {
                v.extend(p.events.iter().map(|e| format!("{}/{}/", p.name, e.name)));
            }
            // The CPU's native (pmu-events) names, where a core PMU counts them.
            if let Some(table) = d.table().filter(|_| d.core_pmus().len() > 0) {
                v.extend(table.names().map(str::to_string));
            }
            v
        }
        Class::Tracepoint => description::system_checked()
            .tracefs()
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
            let d = description::system_checked();
            let pmu = d.pmu(name).map_err(super::from_linux)?;
            pmu.events
                .iter()
                .map(|e| format!("{}/{}/", pmu.name, e.name))
                .collect()
        }
    })
}

#[cfg(test)]
mod cpu_identity_tests {
    /// This machine's INITIALIZE (the Linux backend's `cpu_identity`, what
    /// `pmc::global::this_machine` asks of it) describes the CPU of /proc/cpuinfo, read here on its
    /// own: the cpuid is hwpmc's `"%s-%d-%02X-%X"` of its vendor, family,
    /// model and stepping, and the cputype follows hwpmc_amd.c's family test
    /// (`PMC_CPU_AMD_K8` = 0x01, `PMC_CPU_GENERIC` = 0x400 in sys/sys/pmc.h).
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn this_machine_is_described_from_proc_cpuinfo() {
        let text = std::fs::read_to_string("/proc/cpuinfo").expect("/proc/cpuinfo");
        let value = |key: &str| -> String {
            let line = text
                .lines()
                .find(|l| l.split(':').next().map(str::trim) == Some(key))
                .unwrap_or_else(|| panic!("no {key} in /proc/cpuinfo"));
            line.split_once(':').unwrap().1.trim().to_string()
        };
        let number = |key: &str| value(key).parse::<u32>().expect(key);
        let vendor = value("vendor_id");
        let (family, model, stepping) = (number("cpu family"), number("model"), number("stepping"));
        let me = crate::backend::BackendImpl::cpu_identity(&super::super::LinuxBackend::new());
        assert_eq!(
            me.cpuid,
            format!("{vendor}-{family}-{model:02X}-{stepping:X}")
        );
        if (vendor == "AuthenticAMD" || vendor == "HygonGenuine") && family >= 0xF {
            assert_eq!(me.cputype, 0x01, "PMC_CPU_AMD_K8");
        } else if vendor != "GenuineIntel" {
            assert_eq!(me.cputype, 0x400, "PMC_CPU_GENERIC");
        }
        assert_ne!(me.cputype, 0, "0 is no enum pmc_cputype");
    }
}
