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
}

impl Vendor {
    /// libpmc_pmu_util.c `pmu_events_mfr`: by the cpuid string.
    pub fn of_cpuid(cpuid: &str) -> Vendor {
        let lower = cpuid.to_ascii_lowercase();
        if lower.contains("authenticamd") {
            Vendor::Amd
        } else if lower.contains("genuineintel") {
            Vendor::Intel
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
        let table = match self.vendor {
            Vendor::Intel => INTEL,
            Vendor::Amd => AMD,
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
            Vendor::Invalid => return libc::ENOENT,
        }
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
mod tests {
    use super::*;
    use pmc_linux::pmu_events::EventTable;
    use std::path::Path;

    const SKX: &str = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../backends/linux/tests/fixtures/sysfs-intel-skx"
    );

    fn skx() -> PmuList {
        let core = pmc_linux::pmu::core_pmus(Path::new(SKX));
        assert!(!core.is_empty(), "the fixture has a core PMU");
        // Skylake server (family 6, model 0x55) has a table.
        let table = EventTable::for_cpuid("GenuineIntel-6-55-4").expect("skx table");
        PmuList::from_parts(&core, Some(&table), Vendor::Intel)
    }

    #[test]
    fn the_list_is_sysfs_events_then_the_table() {
        let l = skx();
        let first = l.events.first().unwrap().name.to_str().unwrap().to_string();
        assert!(first.starts_with("cpu/") && first.ends_with('/'), "{first}");
        assert!(l.find("inst_retired.any").is_some());
        // libpmc compares names case-insensitively.
        let (i, e) = l.find("INST_RETIRED.ANY").unwrap();
        assert_eq!(e.name.to_str().unwrap(), "inst_retired.any");
        assert_eq!(l.events[i].name, e.name);
    }

    #[test]
    fn print_formats_are_libpmcs() {
        let l = skx();
        // libpmc_pmu_util.c pmc_pmu_print_counters: "\t%s\n".
        let t = counters_text(&l, Some("INST_RETIRED.ANY"));
        assert!(t.lines().any(|x| x == "\tinst_retired.any"), "{t}");
        assert!(t.lines().all(|x| x.starts_with('\t')));
        // pmc_pmu_print_counter_full: "name: %s\n", "event: %s\n", "pmu: %s\n".
        let f = full_text(&l, Some("inst_retired.any_p"));
        let lines: Vec<&str> = f.lines().collect();
        assert_eq!(lines[0], "name: inst_retired.any_p");
        assert!(lines[1].starts_with("event: event=0xc0"), "{f}");
        assert_eq!(lines[2], "pmu: cpu");
        assert_eq!(desc_text(&l, Some("inst")), "");
    }

    #[test]
    fn pmcallocate_encodes_as_libpmc() {
        let l = skx();
        let mut pm = request(CAP_USER);
        // libpmc_pmu_util.c pmc_pmu_intel_pmcallocate: no umask is the
        // fixed-function class, without QUALIFIER.
        assert_eq!(l.pmcallocate("br_inst_retired.all_branches", &mut pm), 0);
        let (idx, _) = l.find("br_inst_retired.all_branches").unwrap();
        assert_eq!(pm.pm_ev, idx as u32);
        assert_eq!(pm.pm_class, class::IAF);
        assert_eq!(pm.pm_caps, CAP_USER | CAP_READ | CAP_WRITE);
        // event=0xc4, IAP_USR (1 << 16) for PMC_CAP_USER alone.
        assert_eq!(crate::sys::iap_config(&pm.pm_md), 0xc4 | 1 << 16);
        // A umask: IAP, QUALIFIER, IAP_UMASK(1) = 1 << 8; no user/system
        // caps is both IAP_USR and IAP_OS.
        pm.pm_caps = 0;
        assert_eq!(l.pmcallocate("BR_INST_RETIRED.CONDITIONAL", &mut pm), 0);
        assert_eq!(pm.pm_class, class::IAP);
        assert_eq!(pm.pm_caps, CAP_READ | CAP_WRITE | CAP_QUALIFIER);
        assert_eq!(
            crate::sys::iap_config(&pm.pm_md),
            0xc4 | 1 << 8 | 1 << 16 | 1 << 17
        );
        // An unknown name: ENOENT.
        assert_eq!(l.pmcallocate("no.such.event", &mut pm), libc::ENOENT);
        // No vendor: ENOENT, as libpmc without kern.hwpmc.cpuid.
        let none = PmuList::default();
        assert_eq!(none.pmcallocate("inst_retired.any", &mut pm), libc::ENOENT);
    }

    // sys/sys/pmc.h __PMC_CAPS(): the bits as FreeBSD numbers them, not
    // this file's constants (which the tests check).
    const INTERRUPT: u32 = 1 << 0;
    const USER: u32 = 1 << 1;
    const SYSTEM: u32 = 1 << 2;
    const READ_WRITE: u32 = 1 << 5 | 1 << 6;
    const QUALIFIER: u32 = 1 << 8;

    fn list(vendor: Vendor, events: &[(&str, &str)]) -> PmuList {
        PmuList {
            events: events
                .iter()
                .map(|(name, event)| PmuEvent {
                    name: cstring(name),
                    event: (*event).into(),
                    pmu: "cpu".into(),
                })
                .collect(),
            vendor,
        }
    }

    fn request(caps: u32) -> pmc_op_pmcallocate {
        pmc_op_pmcallocate {
            pm_caps: caps,
            pm_cpu: 0,
            pm_class: 0,
            pm_ev: 0,
            pm_flags: 0,
            pm_mode: 3,
            pm_pmcid: 0,
            pm_count: 0,
            pm_md: pmc_md_op_pmcallocate { __pad: [7; 4] },
        }
    }

    /// libpmc_pmu_util.c `pmc_pmu_intel_pmcallocate`, bit by bit, with
    /// hwpmc_core.h's IAP_EVSEL (& 0xFF), IAP_UMASK (<< 8), IAP_USR
    /// (1 << 16), IAP_OS (1 << 17), IAP_EDGE (1 << 18), IAP_INT (1 << 20),
    /// IAP_ANY (1 << 21), IAP_CMASK (<< 24): `inv` sets IAP_EDGE too;
    /// "UNC_" names and "uncore" ones are UCP with QUALIFIER; event 0 with
    /// umask 3 is IAF, as is an event without umask; an offcore response
    /// goes to pm_iap_rsp.
    #[test]
    fn intel_pmcallocate_sets_libpmcs_bits() {
        let l = list(
            Vendor::Intel,
            &[
                ("x.all", "event=0x3c,umask=0x2,cmask=3,edge=1,any=1"),
                ("x.inv", "event=0xa3,umask=0x1,inv=1"),
                ("x.zero", "event=0x0,umask=0x3"),
                ("x.umask3", "event=0x3c,umask=0x3"),
                ("x.event0", "event=0x0,umask=0x1"),
                ("UNC_M_CAS_COUNT.RD", "event=0x4,umask=0x3"),
                ("x.uncore_thing", "event=0x5,umask=0x1"),
                ("x.rsp", "event=0xb7,umask=0x1,offcore_rsp=0x10001"),
            ],
        );
        let mut pm = request(INTERRUPT | SYSTEM);
        assert_eq!(l.pmcallocate("x.all", &mut pm), 0);
        assert_eq!(pm.pm_class, class::IAP);
        assert_eq!(pm.pm_caps, INTERRUPT | SYSTEM | READ_WRITE | QUALIFIER);
        assert_eq!(
            crate::sys::iap_config(&pm.pm_md),
            0x3c | 2 << 8 | 3 << 24 | 1 << 17 | 1 << 18 | 1 << 21 | 1 << 20
        );
        let mut pm = request(USER | SYSTEM);
        assert_eq!(l.pmcallocate("x.inv", &mut pm), 0);
        assert_eq!(
            crate::sys::iap_config(&pm.pm_md),
            0xa3 | 1 << 8 | 1 << 16 | 1 << 17 | 1 << 18
        );
        let mut pm = request(0);
        assert_eq!(l.pmcallocate("x.zero", &mut pm), 0);
        assert_eq!(pm.pm_class, class::IAF);
        assert_eq!(pm.pm_caps, READ_WRITE);
        // Only both together: umask 3 of another event, or event 0 with
        // another umask, is programmable.
        for iap in ["x.umask3", "x.event0"] {
            let mut pm = request(0);
            assert_eq!(l.pmcallocate(iap, &mut pm), 0);
            assert_eq!(pm.pm_class, class::IAP, "{iap}");
        }
        for uncore in ["UNC_M_CAS_COUNT.RD", "x.uncore_thing"] {
            let mut pm = request(0);
            assert_eq!(l.pmcallocate(uncore, &mut pm), 0);
            assert_eq!(pm.pm_class, class::UCP, "{uncore}");
            assert_eq!(pm.pm_caps, READ_WRITE | QUALIFIER);
        }
        let mut pm = request(0);
        assert_eq!(l.pmcallocate("x.rsp", &mut pm), 0);
        assert_eq!(crate::sys::iap_rsp(&pm.pm_md), 0x10001);
    }

    /// libpmc_pmu_util.c `pmc_pmu_amd_pmcallocate` for a core event, with
    /// hwpmc_amd.h's AMD_PMC_TO_UNITMASK ((x << 8) & 0xFF00),
    /// AMD_PMC_TO_EVENTMASK ((x & 0xFF) | (x & 0xF00) << 24), USR/OS/EDGE/
    /// INT at bits 16/17/18/20: class K8, QUALIFIER only with a umask.
    #[test]
    fn amd_pmcallocate_sets_libpmcs_bits() {
        let l = list(
            Vendor::Amd,
            &[
                ("ex_big", "event=0x1c0,umask=0x4,edge=1"),
                ("ex_plain", "event=0x76"),
                ("ex_inv", "event=0x10,inv=1"),
            ],
        );
        let mut pm = request(USER | INTERRUPT);
        assert_eq!(l.pmcallocate("ex_big", &mut pm), 0);
        assert_eq!(pm.pm_class, class::K8);
        assert_eq!(pm.pm_caps, USER | INTERRUPT | READ_WRITE | QUALIFIER);
        assert_eq!(
            crate::sys::amd_config(&pm.pm_md),
            (0xc0 | 0x1 << 32 | 4 << 8 | 1 << 16 | 1 << 18 | 1 << 20, 0)
        );
        let mut pm = request(SYSTEM);
        assert_eq!(l.pmcallocate("ex_plain", &mut pm), 0);
        assert_eq!(pm.pm_caps, SYSTEM | READ_WRITE);
        assert_eq!(crate::sys::amd_config(&pm.pm_md), (0x76 | 1 << 17, 0));
        let mut pm = request(0);
        assert_eq!(l.pmcallocate("ex_inv", &mut pm), 0);
        assert_eq!(
            crate::sys::amd_config(&pm.pm_md),
            (0x10 | 1 << 16 | 1 << 17 | 1 << 18, 0)
        );
    }

    /// A hybrid model's table lists a name once per core PMU; the list
    /// keeps one entry per name, in the table's order (`from_table`), and
    /// another model's list is its table, not this machine's.
    #[test]
    fn another_models_list_is_its_table_once_per_name() {
        let id = "GenuineIntel-6-97-2"; // Alder Lake: cpu_core and cpu_atom
        let table = EventTable::for_cpuid(id).expect("an Alder Lake table");
        let l = PmuList::from_table(&table, Vendor::Intel);
        let names: Vec<&CStr> = l.events.iter().map(|e| e.name.as_c_str()).collect();
        assert!(names.len() > 100, "{} names", names.len());
        assert!(
            names.windows(2).all(|w| w[0] != w[1]),
            "a name twice in a row"
        );
        let mut distinct = Vec::new();
        for e in table.events() {
            if distinct.last() != Some(&e.name) {
                distinct.push(e.name.clone());
            }
        }
        assert_eq!(names.len(), distinct.len());
        // Not the host's list, whatever this machine is.
        let other = if pmc_linux::pmu_events::host_cpuid() == Some(id) {
            "GenuineIntel-6-55-4"
        } else {
            id
        };
        let got = for_cpuid(Some(other)).expect("a table for the model");
        let want = PmuList::from_table(&EventTable::for_cpuid(other).unwrap(), Vendor::Intel);
        assert_eq!(got.events.len(), want.events.len());
        assert_eq!(got.vendor, Vendor::Intel);
        // Lists are kept per model: asked again after another one, each
        // model still gets its own. Haswell, unless this machine is one
        // (only Intel tables ship: an AMD cpuid has a list only as the
        // host's, so the second model cannot be AMD's on every machine).
        let second = if pmc_linux::pmu_events::host_cpuid() == Some("GenuineIntel-6-3C-3") {
            "GenuineIntel-6-3F-2"
        } else {
            "GenuineIntel-6-3C-3"
        };
        let haswell = for_cpuid(Some(second)).expect("a Haswell list");
        assert_ne!(haswell.events.len(), want.events.len());
        let again = for_cpuid(Some(other)).unwrap();
        assert_eq!(again.events.len(), want.events.len());
        assert_eq!(again.vendor, Vendor::Intel);
        assert_eq!(
            for_cpuid(Some(second)).unwrap().events.len(),
            haswell.events.len()
        );
        // An AMD model other than this machine's has no table here.
        let amd = "AuthenticAMD-25-1-1";
        if pmc_linux::pmu_events::host_cpuid() != Some(amd) {
            assert!(for_cpuid(Some(amd)).is_none());
        }
    }

    #[test]
    fn sample_rate_is_the_period_or_libpmcs_default() {
        let l = skx();
        assert_eq!(l.sample_rate("no.such.event"), DEFAULT_SAMPLE_COUNT);
        let with_period = PmuEvent {
            name: c"x.y".into(),
            event: "event=0x3c,period=2000003".into(),
            pmu: "cpu".into(),
        };
        let l2 = PmuList {
            events: vec![with_period],
            vendor: Vendor::Intel,
        };
        assert_eq!(l2.sample_rate("X.Y"), 2_000_003);
    }

    #[test]
    fn aliases_are_the_vendors() {
        let l = skx();
        assert_eq!(l.alias("llc-misses"), "LONGEST_LAT_CACHE.MISS");
        assert_eq!(l.alias("inst_retired.any"), "inst_retired.any");
        let amd = PmuList {
            events: vec![],
            vendor: Vendor::Amd,
        };
        assert_eq!(amd.alias("unhalted-core-cycles"), "ls_not_halted_cyc");
        assert_eq!(amd.alias("llc-misses"), "llc-misses");
        assert_eq!(Vendor::of_cpuid("AuthenticAMD-25-1-1"), Vendor::Amd);
    }

    /// This machine's list has the raw class's names, in its order.
    #[test]
    fn host_list_is_the_raw_listing() {
        let raw = pmc_core::event_names_of_class(&pmc_core::Class::Raw).unwrap_or_default();
        let ours: Vec<String> = host()
            .events
            .iter()
            .map(|e| e.name.to_string_lossy().into_owned())
            .collect();
        let want: Vec<String> = raw.into_iter().filter(|n| !n.starts_with("r<")).collect();
        assert_eq!(ours, want);
    }
}
