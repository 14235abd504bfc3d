//! Event specifier → `struct pmc_op_pmcallocate`, as libpmc's
//! `pmc_allocate` builds it (lib/libpmc/libpmc.c) before `PMC_OP_PMCALLOCATE`:
//!
//! 1. if a pmu-events table exists for the CPU (`pmc_pmu_enabled`), the
//!    name before the first `,` is looked up there
//!    (lib/libpmc/libpmc_pmu_util.c `pmc_pmu_pmcallocate`): found → IAF /
//!    IAP / UCP (Intel), K8 (AMD) or ARMV8 (arm64) with `PMC_F_EV_PMU`,
//!    `pm_ev` = the table index and the encoding in `pm_md`; qualifiers
//!    after the name are ignored on that path, as in libpmc;
//! 2. otherwise the CPU type's alias list replaces a whole-spec alias;
//! 3. a class prefix (`TSC-`, `K8-`, `SOFT-`) restricts the search to that
//!    class, else every class of the CPU is searched in GETCPUINFO order,
//!    names compared case-insensitively with ` `, `_`, `-`, `.` alike
//!    (`pmc_match_event_name`);
//! 4. the class allocator (`tsc_`/`k8_`/`soft_allocate_pmc`) parses the
//!    qualifiers into `pm_caps` and `pm_md`.
//!
//! The crate does not depend on `pmc`'s spec parser: that parser maps
//! FreeBSD names onto Linux events, while hwpmc needs libpmc's own table
//! lookups over the strings, which are small and kept here.

use crate::abi::{self, Class, CpuType, Mode};

/// Which machine-dependent layout and pmu-events path to use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arch {
    /// amd64 (`__amd64__`): TSC, K8 and SOFT tables, Intel/AMD pmu-events.
    Amd64,
    /// arm64 (`__aarch64__`): SOFT table, ARMV8 pmu-events.
    Arm64,
}

impl Arch {
    /// The architecture this crate is compiled for.
    pub fn native() -> Arch {
        if cfg!(target_arch = "aarch64") {
            Arch::Arm64
        } else {
            Arch::Amd64
        }
    }
}

/// The vendor `kern.hwpmc.cpuid` names (libpmc_pmu_util.c `pmu_events_mfr`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PmuVendor {
    /// `GenuineIntel`.
    Intel,
    /// `AuthenticAMD`.
    Amd,
    /// arm64 (no vendor check on that path).
    Arm64,
}

/// One pmu-events entry (the JSON tables libpmc compiles in).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PmuEvent {
    /// Event name (`inst_retired.any`).
    pub name: String,
    /// Encoding, `key=value` pairs joined by `,` (`event=0xc0,umask=0x00`).
    pub event: String,
    /// Topic (`l3cache` and `data fabric` select AMD sub-classes).
    pub topic: String,
}

/// The pmu-events table of the running CPU.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PmuEvents {
    /// The vendor.
    pub vendor: PmuVendor,
    /// Entries in table order (`pm_ev` is the index).
    pub events: Vec<PmuEvent>,
}

/// Why a specifier cannot be allocated (libpmc sets `EINVAL`).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("event specifier {spec:?}: {reason}")]
pub struct SpecError {
    /// The specifier.
    pub spec: String,
    /// What is wrong, with the valid choices where there are few.
    pub reason: String,
}

/// Everything `pmc_allocate` consults: the machine (from GETCPUINFO), the
/// kernel's soft events (from GETDYNEVENTINFO) and the pmu-events table.
#[derive(Clone, Debug)]
pub struct EventResolver {
    /// Machine-dependent layout.
    pub arch: Arch,
    /// `pm_cputype` (raw).
    pub cputype: u32,
    /// `pm_classes[].pm_class` in GETCPUINFO order (raw).
    pub classes: Vec<u32>,
    /// Soft events: kernel name (`PAGE_FAULT.ALL`) and code.
    pub soft_events: Vec<(String, u32)>,
    /// pmu-events table, when the CPU has one (`pmc_pmu_enabled`).
    pub pmu: Option<PmuEvents>,
}

/// `pmc_match_event_name`: case-insensitive, ` _-.` interchangeable.
pub fn match_event_name(name: &str, canonical: &str) -> bool {
    let sep = |c: u8| matches!(c, b' ' | b'_' | b'-' | b'.');
    let (n, c) = (name.as_bytes(), canonical.as_bytes());
    n.len() == c.len()
        && n.iter()
            .zip(c)
            .all(|(&a, &b)| (sep(a) && sep(b)) || a.eq_ignore_ascii_case(&b))
}

/// C `strtol(s, &end, base)` with the full string required
/// (`e == q || *e != '\0'` → error), as libpmc parses numbers.
fn c_strtol(s: &str, base: u32) -> Option<i64> {
    let t = s.trim_start();
    let (neg, t) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let (radix, digits) =
        if (base == 0 || base == 16) && (t.starts_with("0x") || t.starts_with("0X")) && t.len() > 2
        {
            (16, &t[2..])
        } else if base == 0 && t.len() > 1 && t.starts_with('0') {
            (8, &t[1..])
        } else if base == 0 {
            (10, t)
        } else {
            (base, t)
        };
    if digits.is_empty() {
        return None;
    }
    let v = u64::from_str_radix(digits, radix).ok()? as i64;
    Some(if neg { v.wrapping_neg() } else { v })
}

/// `strtol(value, NULL, base)` without the end check (pmu_parse_event):
/// the longest valid prefix, 0 when there is none.
fn c_strtol_prefix(s: &str, base: u32) -> i64 {
    let t = s.trim_start();
    let t = if base == 16 {
        t.strip_prefix("0x")
            .or_else(|| t.strip_prefix("0X"))
            .unwrap_or(t)
    } else {
        t
    };
    let end = t.find(|c: char| !c.is_digit(base)).unwrap_or(t.len());
    i64::from_str_radix(&t[..end], base).unwrap_or(0)
}

mod tables;

use tables::{GENERIC_ALIASES, K8_ALIASES, PMU_AMD_ALIASES, PMU_INTEL_ALIASES, k8_masks};
pub use tables::{IAF_EVENTS, K8_EVENTS, amd, iap, k8_event};

/// `struct pmu_event_desc` as `pmu_parse_event` fills it.
#[derive(Debug, Default)]
struct PmuDesc {
    offcore_rsp: u64,
    l3_thread: u64,
    l3_slice: u64,
    event: u64,
    umask: i64,
    cmask: u64,
    any: u64,
    inv: u64,
    edge: u64,
}

fn parse_pmu_event(s: &str) -> PmuDesc {
    let mut d = PmuDesc {
        umask: -1,
        ..PmuDesc::default()
    };
    for kvp in s.split(',') {
        let (key, value) = kvp.split_once('=').unwrap_or((kvp, ""));
        let hex = || c_strtol_prefix(value, 16) as u64;
        let dec = || c_strtol_prefix(value, 10) as u64;
        match key {
            "umask" => d.umask = c_strtol_prefix(value, 16) as i16 as i64,
            "event" => d.event = hex() & 0xFFFF_FFFF,
            "offcore_rsp" => d.offcore_rsp = hex(),
            "any" => d.any = dec() & 0xFF,
            "cmask" => d.cmask = dec() & 0xFF,
            "inv" => d.inv = dec() & 0xFF,
            "edge" => d.edge = dec() & 0xFF,
            "l3_thread_mask" => d.l3_thread = hex(),
            "l3_slice_mask" => d.l3_slice = hex(),
            _ => {}
        }
    }
    d
}

fn alias<'a>(table: &[(&str, &'a str)], name: &'a str) -> &'a str {
    table
        .iter()
        .find(|(a, _)| a.eq_ignore_ascii_case(name))
        .map_or(name, |(_, to)| to)
}

impl EventResolver {
    /// libpmc's `pmc_pmu_pmcallocate`: `Some` when the table has the name.
    fn pmu_allocate(&self, name: &str, pa: &mut abi::pmc_op_pmcallocate) -> bool {
        let Some(pmu) = &self.pmu else { return false };
        let name = match pmu.vendor {
            PmuVendor::Intel => alias(PMU_INTEL_ALIASES, name),
            PmuVendor::Amd => alias(PMU_AMD_ALIASES, name),
            PmuVendor::Arm64 => name,
        };
        let Some((idx, pe)) = pmu
            .events
            .iter()
            .enumerate()
            .find(|(_, e)| e.name.eq_ignore_ascii_case(name))
        else {
            // On failure libpmc resets pm_ev, pm_caps and pm_class.
            pa.pm_ev = 0;
            pa.pm_caps = 0;
            pa.pm_class = 0;
            return false;
        };
        let d = parse_pmu_event(&pe.event);
        pa.pm_ev = idx as u32;
        let both = abi::PMC_CAP_USER | abi::PMC_CAP_SYSTEM;
        match pmu.vendor {
            PmuVendor::Arm64 => {
                let mut md = pa.pm_md.arm64();
                md.set_md_config(d.event as u32);
                pa.pm_md.set_arm64(md);
                pa.pm_class = Class::ARMV8 as u32;
                pa.pm_caps |= abi::PMC_CAP_READ | abi::PMC_CAP_WRITE;
            }
            PmuVendor::Intel => {
                pa.pm_md = abi::pmc_md_union::default();
                pa.pm_caps |= abi::PMC_CAP_READ | abi::PMC_CAP_WRITE;
                let upper = name.to_ascii_uppercase();
                if upper.starts_with("UNC_") || upper.contains("UNCORE") {
                    pa.pm_class = Class::UCP as u32;
                    pa.pm_caps |= abi::PMC_CAP_QUALIFIER;
                } else if d.event == 0 {
                    pa.pm_class = Class::IAF as u32;
                } else {
                    pa.pm_class = Class::IAP as u32;
                    pa.pm_caps |= abi::PMC_CAP_QUALIFIER;
                }
                let mut c = iap::evsel(d.event);
                if d.umask > 0 {
                    c |= iap::umask(d.umask as u64);
                }
                c |= iap::cmask(d.cmask);
                let sel = pa.pm_caps & both;
                c |= if sel == 0 || sel == both {
                    iap::USR | iap::OS
                } else if sel & abi::PMC_CAP_USER != 0 {
                    iap::USR
                } else {
                    iap::OS
                };
                if d.edge != 0 {
                    c |= iap::EDGE;
                }
                if d.any != 0 {
                    c |= iap::ANY;
                }
                if d.inv != 0 {
                    c |= iap::INV;
                }
                if pa.pm_caps & abi::PMC_CAP_INTERRUPT != 0 {
                    c |= iap::INT;
                }
                let mut md = abi::pmc_md_op_pmcallocate_amd64::default();
                md.set_iap(abi::pmc_md_iap_op_pmcallocate {
                    pm_iap_config: c,
                    pm_iap_rsp: d.offcore_rsp,
                });
                pa.pm_md.set_amd64(md);
            }
            PmuVendor::Amd => {
                pa.pm_md = abi::pmc_md_union::default();
                pa.pm_caps |= abi::PMC_CAP_READ | abi::PMC_CAP_WRITE;
                let mut c = 0;
                if d.umask > 0 {
                    pa.pm_caps |= abi::PMC_CAP_QUALIFIER;
                    c |= amd::to_unitmask(d.umask as u64);
                }
                pa.pm_class = Class::K8 as u32;
                let sub;
                if pe.topic == "l3cache" {
                    c |= amd::to_eventmask(d.event)
                        | amd::to_l3slice(d.l3_slice)
                        | amd::to_l3core(d.l3_thread);
                    sub = abi::PMC_AMD_SUB_CLASS_L3_CACHE;
                } else if pe.topic == "data fabric" {
                    c |= amd::to_eventmask_df(d.event);
                    sub = abi::PMC_AMD_SUB_CLASS_DATA_FABRIC;
                } else {
                    c |= amd::to_eventmask(d.event);
                    sub = abi::PMC_AMD_SUB_CLASS_CORE;
                    let sel = pa.pm_caps & both;
                    c |= if sel == 0 || sel == both {
                        amd::USR | amd::OS
                    } else if sel & abi::PMC_CAP_USER != 0 {
                        amd::USR
                    } else {
                        amd::OS
                    };
                    if d.edge != 0 {
                        c |= amd::EDGE;
                    }
                    if d.inv != 0 {
                        c |= amd::INVERT;
                    }
                    if pa.pm_caps & abi::PMC_CAP_INTERRUPT != 0 {
                        c |= amd::INT;
                    }
                }
                let mut md = abi::pmc_md_op_pmcallocate_amd64::default();
                md.set_amd(abi::pmc_md_amd_op_pmcallocate {
                    pm_amd_config: c,
                    pm_amd_sub_class: sub,
                });
                pa.pm_md.set_amd64(md);
            }
        }
        pa.pm_flags |= abi::PMC_F_EV_PMU;
        true
    }

    /// The classes with a libpmc table on this architecture, in GETCPUINFO
    /// order (`pmc_init`'s class table).
    fn class_table(&self) -> Vec<Class> {
        self.classes
            .iter()
            .filter_map(|&c| Class::from_raw(c))
            .filter(|c| match self.arch {
                Arch::Amd64 => matches!(c, Class::TSC | Class::K8 | Class::SOFT),
                Arch::Arm64 => matches!(c, Class::SOFT),
            })
            .collect()
    }

    /// The event names of a class's table, with their codes.
    pub fn class_events(&self, class: Class) -> Vec<(String, u32)> {
        match class {
            Class::TSC => vec![("cycles".to_string(), abi::PMC_EV_TSC_TSC)],
            Class::K8 => K8_EVENTS
                .iter()
                .enumerate()
                .map(|(i, n)| (n.to_string(), abi::PMC_EV_K8_FIRST + i as u32))
                .collect(),
            Class::IAF => IAF_EVENTS
                .iter()
                .enumerate()
                .map(|(i, n)| (n.to_string(), abi::PMC_EV_IAF_FIRST + i as u32))
                .collect(),
            Class::SOFT => self.soft_events.clone(),
            _ => Vec::new(),
        }
    }

    /// Builds the PMCALLOCATE request for `spec`, as `pmc_allocate` does.
    pub fn allocate_request(
        &self,
        spec: &str,
        mode: Mode,
        flags: u32,
        cpu: u32,
        count: u64,
    ) -> Result<abi::pmc_op_pmcallocate, SpecError> {
        let err = |reason: String| SpecError {
            spec: spec.to_string(),
            reason,
        };
        let mut pa = abi::pmc_op_pmcallocate {
            pm_cpu: cpu,
            pm_mode: mode as u32,
            pm_flags: flags,
            pm_count: count,
            ..Default::default()
        };
        if mode.is_sampling() {
            pa.pm_caps |= abi::PMC_CAP_INTERRUPT;
        }
        let ctrname = spec.split(',').next().unwrap_or("");
        if self.pmu_allocate(ctrname, &mut pa) {
            return Ok(pa);
        }
        let aliases: &[(&str, &str)] = match CpuType::from_raw(self.cputype) {
            Some(CpuType::AMD_K8) if self.arch == Arch::Amd64 => K8_ALIASES,
            Some(CpuType::GENERIC) => GENERIC_ALIASES,
            _ => &[],
        };
        let spec2 = alias(aliases, spec);
        let (ctrname, rest) = match spec2.split_once(',') {
            Some((n, r)) => (n, Some(r)),
            None => (spec2, None),
        };
        let table = self.class_table();
        let prefix = |c: Class| format!("{}-", c.name());
        let mut found = None;
        for &class in &table {
            let p = prefix(class);
            if ctrname
                .get(..p.len())
                .is_some_and(|head| head.eq_ignore_ascii_case(&p))
            {
                let ev = self
                    .class_events(class)
                    .into_iter()
                    .find(|(n, _)| match_event_name(&ctrname[p.len()..], n));
                match ev {
                    Some((n, code)) => found = Some((class, n, code)),
                    None => {
                        return Err(err(format!(
                            "no event {:?} in class {} (see pmccontrol -L for its events)",
                            &ctrname[p.len()..],
                            class.name()
                        )));
                    }
                }
                break;
            }
        }
        if found.is_none() {
            found = table.iter().find_map(|&class| {
                self.class_events(class)
                    .into_iter()
                    .find(|(n, _)| match_event_name(ctrname, n))
                    .map(|(n, c)| (class, n, c))
            });
        }
        let Some((class, name, code)) = found else {
            let classes: Vec<&str> = table.iter().map(|c| c.name()).collect();
            return Err(err(format!(
                "no event named {ctrname:?} in the classes of this CPU ({})",
                classes.join(", ")
            )));
        };
        pa.pm_ev = code;
        pa.pm_class = class as u32;
        let ok = match class {
            Class::TSC => tsc_allocate(code, rest, &mut pa),
            Class::K8 => k8_allocate(&name, rest, &mut pa),
            Class::SOFT => soft_allocate(code, &mut pa),
            _ => false,
        };
        if !ok {
            return Err(err(format!(
                "qualifiers {:?} are not valid for {}-{}",
                rest.unwrap_or(""),
                class.name(),
                name
            )));
        }
        Ok(pa)
    }
}

/// `tsc_allocate_pmc`: TSC events must be unqualified.
fn tsc_allocate(code: u32, rest: Option<&str>, pa: &mut abi::pmc_op_pmcallocate) -> bool {
    if code != abi::PMC_EV_TSC_TSC || rest.is_some_and(|r| !r.is_empty()) {
        return false;
    }
    let mut md = pa.pm_md.amd64();
    md.set_amd(abi::pmc_md_amd_op_pmcallocate::default());
    pa.pm_md.set_amd64(md);
    pa.pm_caps |= abi::PMC_CAP_READ;
    true
}

/// `soft_allocate_pmc`: qualifiers are ignored.
fn soft_allocate(code: u32, pa: &mut abi::pmc_op_pmcallocate) -> bool {
    if !(abi::PMC_EV_SOFT_FIRST..=abi::PMC_EV_SOFT_LAST).contains(&code) {
        return false;
    }
    pa.pm_caps |= abi::PMC_CAP_READ | abi::PMC_CAP_WRITE;
    true
}

/// `k8_allocate_pmc`: `count=`, `edge`, `inv`, `mask=a+b`, `os`, `usr`.
fn k8_allocate(event: &str, rest: Option<&str>, pa: &mut abi::pmc_op_pmcallocate) -> bool {
    pa.pm_caps |= abi::PMC_CAP_READ | abi::PMC_CAP_WRITE;
    let mut config: u64 = 0;
    let pmask = k8_masks(event);
    let mut evmask: u64 = 0;
    let prefix = |p: &str, kw: &str| {
        p.get(..kw.len())
            .is_some_and(|head| head.eq_ignore_ascii_case(kw))
    };
    for p in rest.into_iter().flat_map(|r| r.split(',')) {
        if prefix(p, "count=") {
            let q = &p[6..];
            if q.is_empty() {
                return false;
            }
            let Some(count) = c_strtol(q, 0) else {
                return false;
            };
            pa.pm_caps |= abi::PMC_CAP_THRESHOLD;
            config |= amd::to_counter(count as u32 as u64);
        } else if p.eq_ignore_ascii_case("edge") {
            pa.pm_caps |= abi::PMC_CAP_EDGE;
        } else if p.eq_ignore_ascii_case("inv") {
            pa.pm_caps |= abi::PMC_CAP_INVERT;
        } else if prefix(p, "mask=") {
            let Some(masks) = pmask else { return false };
            let q = &p[5..];
            if q.is_empty() {
                return false;
            }
            for r in q.split('+') {
                let Some((_, bit)) = masks.iter().find(|(n, _)| n.eq_ignore_ascii_case(r)) else {
                    return false;
                };
                evmask |= 1 << bit;
            }
            pa.pm_caps |= abi::PMC_CAP_QUALIFIER;
        } else if p.eq_ignore_ascii_case("os") {
            pa.pm_caps |= abi::PMC_CAP_SYSTEM;
        } else if p.eq_ignore_ascii_case("usr") {
            pa.pm_caps |= abi::PMC_CAP_USER;
        } else {
            return false;
        }
    }
    match event {
        "LS_LOCKED_OPERATION" => {
            if evmask & evmask.wrapping_sub(1) != 0 {
                return false;
            }
            if evmask == 0 {
                evmask = 0x01;
                pa.pm_caps |= abi::PMC_CAP_QUALIFIER;
            }
        }
        "FP_DISPATCHED_FPU_OPS"
        | "FP_CYCLES_WITH_NO_FPU_OPS_RETIRED"
        | "FP_DISPATCHED_FPU_FAST_FLAG_OPS"
        | "FR_RETIRED_FASTPATH_DOUBLE_OP_INSTRUCTIONS"
        | "FR_RETIRED_FPU_INSTRUCTIONS"
        | "FR_FPU_EXCEPTIONS"
        | "DC_DCACHE_ACCESSES_BY_LOCKS" => {}
        _ => {
            if let (0, Some(masks)) = (evmask, pmask) {
                evmask = masks.iter().fold(0, |m, (_, bit)| m | 1 << bit);
                pa.pm_caps |= abi::PMC_CAP_QUALIFIER;
            }
        }
    }
    // As libpmc: a unit mask replaces the whole config (a count= given with
    // it is dropped; the kernel rebuilds the rest from pm_caps).
    if pa.pm_caps & abi::PMC_CAP_QUALIFIER != 0 {
        config = amd::to_unitmask(evmask);
    }
    let mut md = abi::pmc_md_op_pmcallocate_amd64::default();
    md.set_amd(abi::pmc_md_amd_op_pmcallocate {
        pm_amd_config: config,
        pm_amd_sub_class: 0,
    });
    pa.pm_md.set_amd64(md);
    true
}
