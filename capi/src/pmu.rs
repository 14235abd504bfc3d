//! libpmc's pmu-events functions (`lib/libpmc/libpmc_pmu_util.c`,
//! `pmc_pmu_*`) over the names pmcstat takes for the core PMU: the PMU's
//! sysfs events (`cpu/cycles/`) and the CPU model's pmu-events table
//! (`inst_retired.any`), in that order, as `pmc::event_names_of_class`
//! lists them for the raw class. An event's index is its place in that
//! list. Our tables carry no descriptions, topics or units, so the lines
//! libpmc prints only when those exist are not printed.

use std::ffi::{CStr, CString};
use std::sync::Arc;
#[cfg(target_os = "linux")]
use std::sync::{Mutex, OnceLock};

use crate::types::{class, pmc_md_op_pmcallocate, pmc_op_pmcallocate};

/// libpmcstat.h `DEFAULT_SAMPLE_COUNT`: the rate libpmc gives an event
/// whose table entry has no `period`.
pub const DEFAULT_SAMPLE_COUNT: u64 = 65536;

/// One event of the list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PmuEvent {
    /// The name pmcstat takes.
    pub name: CString,
    /// Its terms, `event=0xc0,umask=0x1` (libpmc's `pe->event`).
    pub event: String,
    /// The PMU that counts it.
    pub pmu: String,
}

/// The list of one CPU model (this machine's, or a cpuid's).
#[derive(Debug, Default)]
pub struct PmuList {
    /// The events, sysfs ones first.
    pub events: Vec<PmuEvent>,
    /// The CPU's vendor, for the alias table and PMCALLOCATE's encoding.
    pub vendor: Vendor,
}

/// libpmc_pmu_util.c `pmu_mfr_t`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Vendor {
    /// Neither: libpmc's `PMU_INVALID`.
    #[default]
    Invalid,
    /// GenuineIntel
    Intel,
    /// AuthenticAMD
    Amd,
    /// arm64, whose libpmc takes every table without a manufacturer check
    /// (its cpuid is MIDR_EL1, `0x…`).
    Arm,
}

impl Vendor {
    /// libpmc_pmu_util.c `pmu_events_mfr`: by the cpuid string.
    pub fn of_cpuid(cpuid: &str) -> Vendor {
        let lower = cpuid.to_ascii_lowercase();
        if lower.contains("authenticamd") {
            Vendor::Amd
        } else if lower.contains("genuineintel") {
            Vendor::Intel
        } else if cfg!(target_arch = "aarch64") && lower.starts_with("0x") {
            Vendor::Arm
        } else {
            Vendor::Invalid
        }
    }
}

#[cfg(target_os = "linux")]
fn terms_text(terms: &[pmc_linux::pmu::Term]) -> String {
    use pmc_linux::pmu::TermValue;
    terms
        .iter()
        .map(|t| match &t.value {
            TermValue::Flag => t.name.clone(),
            TermValue::Number(n) => format!("{}={n:#x}", t.name),
            TermValue::Str(s) => format!("{}={s}", t.name),
        })
        .collect::<Vec<_>>()
        .join(",")
}

#[cfg(target_os = "linux")]
fn cstring(s: &str) -> CString {
    CString::new(s.replace('\0', "")).unwrap_or_default()
}

impl PmuList {
    #[cfg(target_os = "linux")]
    /// The list of a machine with these core PMUs and this table: each
    /// core PMU's sysfs events as `pmu/name/`, then the table's names
    /// where a core PMU counts them (as the raw class's listing).
    pub fn from_parts(
        core: &[pmc_linux::pmu::Pmu],
        table: Option<&pmc_linux::pmu_events::EventTable>,
        vendor: Vendor,
    ) -> PmuList {
        let mut events = Vec::new();
        for p in core {
            for e in &p.events {
                events.push(PmuEvent {
                    name: cstring(&format!("{}/{}/", p.name, e.name)),
                    event: terms_text(&e.terms),
                    pmu: p.name.clone(),
                });
            }
        }
        if let (Some(table), Some(first)) = (table, core.first()) {
            let mut last: Option<&str> = None;
            for e in table.events() {
                // One entry per name, as the raw listing (hybrid tables
                // repeat a name per core PMU).
                if last.replace(&e.name) == Some(e.name.as_str()) {
                    continue;
                }
                events.push(PmuEvent {
                    name: cstring(&e.name),
                    event: terms_text(&e.terms),
                    pmu: e.pmu.clone().unwrap_or_else(|| first.name.clone()),
                });
            }
        }
        PmuList { events, vendor }
    }

    #[cfg(target_os = "linux")]
    /// A CPU model's table alone (another machine's cpuid: its sysfs is
    /// not this one's).
    pub fn from_table(table: &pmc_linux::pmu_events::EventTable, vendor: Vendor) -> PmuList {
        let mut events: Vec<PmuEvent> = Vec::new();
        for e in table.events() {
            if events
                .last()
                .is_some_and(|l| l.name.as_bytes() == e.name.as_bytes())
            {
                continue;
            }
            events.push(PmuEvent {
                name: cstring(&e.name),
                event: terms_text(&e.terms),
                pmu: e.pmu.clone().unwrap_or_else(|| "cpu".into()),
            });
        }
        PmuList { events, vendor }
    }

    /// libpmc_pmu_util.c `pmu_event_get`: the first entry named `name`,
    /// case-insensitively, and its index.
    pub fn find(&self, name: &str) -> Option<(usize, &PmuEvent)> {
        self.events
            .iter()
            .enumerate()
            .find(|(_, e)| e.name.to_bytes().eq_ignore_ascii_case(name.as_bytes()))
    }

    /// libpmc_pmu_util.c `pmu_alias_get`: FreeBSD's generic names of the
    /// vendor's table, else `name` itself.
    pub fn alias<'a>(&self, name: &'a str) -> &'a str {
        const INTEL: &[(&str, &str)] = &[
            ("UNHALTED_CORE_CYCLES", "CPU_CLK_UNHALTED.THREAD_P_ANY"),
            ("UNHALTED-CORE-CYCLES", "CPU_CLK_UNHALTED.THREAD_P_ANY"),
            ("LLC_MISSES", "LONGEST_LAT_CACHE.MISS"),
            ("LLC-MISSES", "LONGEST_LAT_CACHE.MISS"),
            ("LLC_REFERENCE", "LONGEST_LAT_CACHE.REFERENCE"),
            ("LLC-REFERENCE", "LONGEST_LAT_CACHE.REFERENCE"),
            ("LLC_MISS_RHITM", "mem_load_l3_miss_retired.remote_hitm"),
            ("LLC-MISS-RHITM", "mem_load_l3_miss_retired.remote_hitm"),
            ("RESOURCE_STALL", "RESOURCE_STALLS.ANY"),
            ("RESOURCE_STALLS_ANY", "RESOURCE_STALLS.ANY"),
            ("BRANCH_INSTRUCTION_RETIRED", "BR_INST_RETIRED.ALL_BRANCHES"),
            ("BRANCH-INSTRUCTION-RETIRED", "BR_INST_RETIRED.ALL_BRANCHES"),
            ("BRANCH_MISSES_RETIRED", "BR_MISP_RETIRED.ALL_BRANCHES"),
            ("BRANCH-MISSES-RETIRED", "BR_MISP_RETIRED.ALL_BRANCHES"),
            ("cycles", "tsc-tsc"),
            ("instructions", "inst-retired.any_p"),
            ("branch-mispredicts", "br_misp_retired.all_branches"),
            ("branches", "br_inst_retired.all_branches"),
            ("interrupts", "hw_interrupts.received"),
            ("ic-misses", "frontend_retired.l1i_miss"),
        ];
        const AMD: &[(&str, &str)] = &[
            ("UNHALTED_CORE_CYCLES", "ls_not_halted_cyc"),
            ("UNHALTED-CORE-CYCLES", "ls_not_halted_cyc"),
        ];
        // The aarch64 `pmu_armv8_alias_table`.
        const ARM: &[(&str, &str)] = &[
            ("UNHALTED_CORE_CYCLES", "CPU_CYCLES"),
            ("UNHALTED-CORE-CYCLES", "CPU_CYCLES"),
            ("LLC_MISSES", "LL_CACHE_MISS_RD"),
            ("LLC-MISSES", "LL_CACHE_MISS_RD"),
            ("LLC_REFERENCE", "LL_CACHE_RD"),
            ("LLC-REFERENCE", "LL_CACHE_RD"),
            ("BRANCH_INSTRUCTION_RETIRED", "BR_RETIRED"),
            ("BRANCH-INSTRUCTION-RETIRED", "BR_RETIRED"),
            ("BRANCH_MISSES_RETIRED", "BR_MIS_PRED_RETIRED"),
            ("BRANCH-MISSES-RETIRED", "BR_MIS_PRED_RETIRED"),
            ("unhalted-cycles", "CPU_CYCLES"),
            ("instructions", "INST_RETIRED"),
            ("branch-mispredicts", "BR_MIS_PRED_RETIRED"),
            ("branches", "BR_RETIRED"),
            ("interrupts", "EXC_IRQ"),
        ];
        let table = match self.vendor {
            Vendor::Intel => INTEL,
            Vendor::Amd => AMD,
            Vendor::Arm => ARM,
            Vendor::Invalid => return name,
        };
        table
            .iter()
            .find(|(a, _)| a.eq_ignore_ascii_case(name))
            .map_or(name, |(_, real)| real)
    }

    /// `pmc_pmu_sample_rate_get`: the entry's `period`, else
    /// [`DEFAULT_SAMPLE_COUNT`].
    pub fn sample_rate(&self, name: &str) -> u64 {
        let Some((_, e)) = self.find(self.alias(name)) else {
            return DEFAULT_SAMPLE_COUNT;
        };
        e.parsed().period
    }

    /// `pmc_pmu_pmcallocate` on `pm`: 0 or libpmc's errno (ENOENT).
    pub fn pmcallocate(&self, name: &str, pm: &mut pmc_op_pmcallocate) -> i32 {
        if self.vendor == Vendor::Arm {
            return self.arm64_pmcallocate(name, pm);
        }
        if self.vendor == Vendor::Invalid {
            return libc::ENOENT;
        }
        pm.pm_md = pmc_md_op_pmcallocate { __pad: [0; 4] };
        pm.pm_caps |= CAP_READ | CAP_WRITE;
        let name = self.alias(name);
        let Some((idx, e)) = self.find(name) else {
            return libc::ENOENT;
        };
        pm.pm_ev = idx as u32;
        if e.event.is_empty() {
            return libc::ENOENT;
        }
        let ped = e.parsed();
        let user_system = pm.pm_caps & (CAP_USER | CAP_SYSTEM);
        let (usr, os) = match user_system {
            0 => (true, true),
            x if x == CAP_USER | CAP_SYSTEM => (true, true),
            x => (x & CAP_USER != 0, x & CAP_SYSTEM != 0),
        };
        let interrupt = pm.pm_caps & CAP_INTERRUPT != 0;
        match self.vendor {
            Vendor::Intel => {
                let lower = name.to_ascii_lowercase();
                pm.pm_class = if lower.starts_with("unc_") || lower.contains("uncore") {
                    pm.pm_caps |= CAP_QUALIFIER;
                    class::UCP
                } else if ped.umask == -1 || (ped.event == 0 && ped.umask == 3) {
                    class::IAF
                } else {
                    pm.pm_caps |= CAP_QUALIFIER;
                    class::IAP
                };
                // hwpmc_core.h IAP_* bits.
                let mut config = (ped.event & 0xFF) as u32;
                if ped.umask > 0 {
                    config |= ((ped.umask as u32) & 0xFF) << 8;
                }
                config |= ((ped.cmask as u32) & 0xFF) << 24;
                config |= u32::from(usr) << 16 | u32::from(os) << 17;
                // libpmc sets the edge bit for `inv` too.
                if ped.edge || ped.inv {
                    config |= 1 << 18;
                }
                if ped.any {
                    config |= 1 << 21;
                }
                if interrupt {
                    config |= 1 << 20;
                }
                pm.pm_md.pm_iap = crate::types::pmc_md_iap_op_pmcallocate {
                    pm_iap_config: config,
                    _pad0: 0,
                    pm_iap_rsp: ped.offcore_rsp,
                };
            }
            Vendor::Amd => {
                // hwpmc_amd.h AMD_PMC_* bits; a core event (our tables
                // carry no l3cache/data fabric topic).
                let mut config = 0u64;
                if ped.umask > 0 {
                    pm.pm_caps |= CAP_QUALIFIER;
                    config |= ((ped.umask as u64) << 8) & 0xFF00;
                }
                pm.pm_class = class::K8;
                config |= (ped.event & 0xFF) | ((ped.event & 0xF00) << 24);
                config |= u64::from(usr) << 16 | u64::from(os) << 17;
                if ped.edge || ped.inv {
                    config |= 1 << 18;
                }
                if interrupt {
                    config |= 1 << 20;
                }
                pm.pm_md.pm_amd = crate::types::pmc_md_amd_op_pmcallocate {
                    pm_amd_config: config,
                    pm_amd_sub_class: 0,
                    _pad0: 0,
                };
            }
            Vendor::Arm | Vendor::Invalid => return libc::ENOENT,
        }
        0
    }

    /// The aarch64 `pmc_pmu_pmcallocate_md` of libpmc_pmu_util.c: no
    /// manufacturer check and no clearing of `pm_md`; the entry's `event=`
    /// goes to `pm_md_config`, the class is ARMV8, READ and WRITE are added.
    fn arm64_pmcallocate(&self, name: &str, pm: &mut pmc_op_pmcallocate) -> i32 {
        let name = self.alias(name);
        let Some((idx, e)) = self.find(name) else {
            return libc::ENOENT;
        };
        if e.event.is_empty() {
            return libc::ENOENT;
        }
        let ped = e.parsed();
        pm.pm_ev = idx as u32;
        pm.pm_md.pm_md_config = ped.event as u32;
        pm.pm_class = class::ARMV8;
        pm.pm_caps |= CAP_READ | CAP_WRITE;
        0
    }
}

const CAP_INTERRUPT: u32 = 1 << 0;
const CAP_USER: u32 = 1 << 1;
const CAP_SYSTEM: u32 = 1 << 2;
const CAP_READ: u32 = 1 << 5;
const CAP_WRITE: u32 = 1 << 6;
const CAP_QUALIFIER: u32 = 1 << 8;

/// libpmc_pmu_util.c `struct pmu_event_desc`, the fields used here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Parsed {
    /// `period=`, else [`DEFAULT_SAMPLE_COUNT`].
    pub period: u64,
    /// `event=`
    pub event: u64,
    /// `umask=`, −1 when absent (libpmc's fixed-function test).
    pub umask: i64,
    /// `cmask=`
    pub cmask: u64,
    /// `offcore_rsp=`
    pub offcore_rsp: u64,
    /// `edge`
    pub edge: bool,
    /// `inv`
    pub inv: bool,
    /// `any`
    pub any: bool,
}

impl PmuEvent {
    /// libpmc_pmu_util.c `pmu_parse_event` over the entry's terms.
    pub fn parsed(&self) -> Parsed {
        let mut p = Parsed {
            period: DEFAULT_SAMPLE_COUNT,
            event: 0,
            umask: -1,
            cmask: 0,
            offcore_rsp: 0,
            edge: false,
            inv: false,
            any: false,
        };
        for kv in self.event.split(',') {
            let (key, value) = kv.split_once('=').unwrap_or((kv, "1"));
            let num = || {
                let v = value.trim();
                v.strip_prefix("0x")
                    .map_or_else(|| v.parse().ok(), |h| u64::from_str_radix(h, 16).ok())
                    .unwrap_or(0)
            };
            match key {
                "umask" => p.umask = num() as i64,
                "event" => p.event = num(),
                "period" => p.period = num(),
                "offcore_rsp" => p.offcore_rsp = num(),
                "cmask" => p.cmask = num(),
                "edge" => p.edge = num() != 0,
                "inv" => p.inv = num() != 0,
                "any" => p.any = num() != 0,
                _ => {}
            }
        }
        p
    }
}

/// This machine's list (read once).
#[cfg(target_os = "linux")]
pub fn host() -> Arc<PmuList> {
    static HOST: OnceLock<Arc<PmuList>> = OnceLock::new();
    HOST.get_or_init(|| {
        let root = std::path::Path::new(pmc_linux::pmu::SYSFS_ROOT);
        let core = pmc_linux::pmu::core_pmus(root);
        let cpuid = pmc_linux::pmu_events::host_cpuid();
        let table = pmc_linux::pmu_events::EventTable::host();
        let vendor = cpuid.map(Vendor::of_cpuid).unwrap_or_default();
        Arc::new(PmuList::from_parts(&core, table.as_deref(), vendor))
    })
    .clone()
}

/// This machine's list: none without the Linux tables.
#[cfg(not(target_os = "linux"))]
pub fn host() -> Arc<PmuList> {
    Arc::new(PmuList::default())
}

/// Another machine's list: none without the Linux tables.
#[cfg(not(target_os = "linux"))]
pub fn for_cpuid(cpuid: Option<&str>) -> Option<Arc<PmuList>> {
    cpuid.is_none().then(host)
}

/// The list for a cpuid argument: NULL or this machine's cpuid is this
/// machine's list; another is that model's table, if we have it.
#[cfg(target_os = "linux")]
pub fn for_cpuid(cpuid: Option<&str>) -> Option<Arc<PmuList>> {
    let host_id = pmc_linux::pmu_events::host_cpuid();
    match cpuid {
        None => Some(host()),
        Some(c) if Some(c) == host_id => Some(host()),
        Some(c) => {
            static OTHERS: Mutex<Vec<(String, Option<Arc<PmuList>>)>> = Mutex::new(Vec::new());
            let mut others = OTHERS.lock().unwrap_or_else(|e| e.into_inner());
            if let Some((_, l)) = others.iter().find(|(k, _)| k == c) {
                return l.clone();
            }
            let list = pmc_linux::pmu_events::EventTable::for_cpuid(c)
                .map(|t| Arc::new(PmuList::from_table(&t, Vendor::of_cpuid(c))));
            others.push((c.to_string(), list.clone()));
            list
        }
    }
}

/// `pmc_pmu_enabled`: this machine has a list.
pub fn enabled() -> bool {
    !host().events.is_empty()
}

/// libpmc's `strcasestr(pe->name, ev) != NULL`; no filter matches all.
fn matches(name: &CStr, filter: Option<&str>) -> bool {
    match filter {
        None => true,
        Some(f) => name
            .to_string_lossy()
            .to_ascii_lowercase()
            .contains(&f.to_ascii_lowercase()),
    }
}

/// `pmc_pmu_print_counters`: `"\t%s\n"` per matching name.
pub fn counters_text(list: &PmuList, filter: Option<&str>) -> String {
    list.events
        .iter()
        .filter(|e| matches(&e.name, filter))
        .map(|e| format!("\t{}\n", e.name.to_string_lossy()))
        .collect()
}

/// `pmc_pmu_print_counter_desc` / `_desc_long`: `"%s:\t%s\n"` /
/// `"%s:\n%s\n"` for entries with a description; ours have none.
pub fn desc_text(_list: &PmuList, _filter: Option<&str>) -> String {
    String::new()
}

/// `pmc_pmu_print_counter_full`: `"name: %s\n"`, then `"event: %s\n"` and
/// `"pmu: %s\n"` (the fields our tables have) per matching entry.
pub fn full_text(list: &PmuList, filter: Option<&str>) -> String {
    let mut s = String::new();
    for e in list.events.iter().filter(|e| matches(&e.name, filter)) {
        s.push_str(&format!("name: {}\n", e.name.to_string_lossy()));
        if !e.event.is_empty() {
            s.push_str(&format!("event: {}\n", e.event));
        }
        s.push_str(&format!("pmu: {}\n", e.pmu));
    }
    s
}

/// libpmc_pmu_util.c `stat_mode_cntrs`: what `pmcstat` counts without
/// arguments where the pmu-events table is enabled.
pub static STAT_MODE_COUNTERS: [&CStr; 6] = [
    c"cpu_clk_unhalted.thread",
    c"inst_retired.any",
    c"br_inst_retired.all_branches",
    c"br_misp_retired.all_branches",
    c"longest_lat_cache.reference",
    c"longest_lat_cache.miss",
];

#[cfg(all(test, target_os = "linux"))]
mod tests;
