//! Event specifier → `perf_event_attr`.

use std::ffi::CString;
use std::path::{Path, PathBuf};

use pmc_linux::attr::{self as la, Attr, EventConfig, ReadFormat};
use pmc_linux::pmu::{self as lpmu, Pmu};

use super::counters::{CpuCounters, ProcessCounters};
use crate::backend::{Counters, EventRequest, PreparedEvent};
use crate::spec::{self, EventName, EventSpec, Precise, Qualifiers};
use crate::{Capabilities, Class, Error, Flags, Result};

mod native;

/// A resolved event: one attr per core PMU (several on hybrid CPUs).
#[derive(Debug)]
pub(super) struct LinuxEvent {
    pub(super) attrs: Vec<Attr>,
    /// For each attr, the CPUs its PMU counts on (`None`: any CPU).
    pub(super) cpus: Vec<Option<Vec<u32>>>,
    /// The string `config1` points to (uprobe path, kprobe function).
    pub(super) string: Option<CString>,
    /// Sampling or `LOG_PROC*`: rings and what to log.
    pub(super) log: Option<super::sampling::LogPlan>,
    /// Per-thread values for `LOG_PROCCSW` and per-process `LOG_PROCEXIT`:
    /// the attrs of the sampling siblings grouped under each counter (see
    /// `sampling::SliceSiblings`).
    pub(super) slices: Option<super::sampling::SliceSiblings>,
    pub(super) class: Class,
    pub(super) caps: Capabilities,
    pub(super) description: String,
    pub(super) filter: Option<String>,
}

impl PreparedEvent for LinuxEvent {
    fn class(&self) -> Class {
        self.class.clone()
    }

    fn capabilities(&self) -> Capabilities {
        self.caps
    }

    fn width(&self) -> u32 {
        64
    }

    fn describe(&self) -> String {
        self.description.clone()
    }

    fn open_process(&self, pid: u32, descendants: bool) -> Result<Box<dyn Counters>> {
        Ok(Box::new(ProcessCounters::open(self, pid, descendants)?))
    }

    fn open_cpu(&self, cpu: u32) -> Result<Box<dyn Counters>> {
        Ok(Box::new(CpuCounters::open(self, cpu)?))
    }

    fn trial_open(&self) -> Result<()> {
        super::counters::trial_open(self)
    }
}

/// Capabilities of hardware-PMU classes.
fn hardware_caps(sysfs: &Sysfs) -> Capabilities {
    let mut caps = Capabilities::INTERRUPT
        | Capabilities::USER
        | Capabilities::SYSTEM
        | Capabilities::READ
        | Capabilities::WRITE;
    if max_precise(&sysfs.pmu_root) > 0 {
        caps |= Capabilities::PRECISE;
    }
    caps
}

/// Capabilities of raw/PMU-encoded events (qualifiers apply through the
/// format fields).
fn raw_caps(sysfs: &Sysfs) -> Capabilities {
    hardware_caps(sysfs)
        | Capabilities::EDGE
        | Capabilities::THRESHOLD
        | Capabilities::INVERT
        | Capabilities::QUALIFIER
}

fn software_caps() -> Capabilities {
    Capabilities::INTERRUPT
        | Capabilities::USER
        | Capabilities::SYSTEM
        | Capabilities::READ
        | Capabilities::WRITE
}

/// The highest `precise_ip` every core PMU under `pmu_root` supports
/// (`caps/max_precise`; the lowest of them on hybrid machines, so the
/// attr opens on each core type).
pub(super) fn max_precise(pmu_root: &Path) -> u8 {
    lpmu::core_pmus(pmu_root)
        .iter()
        .map(|p| p.caps.get("max_precise").and_then(|v| v.parse().ok()))
        .min()
        .flatten()
        .unwrap_or(0)
}

pub(super) fn hardware_event(h: spec::HardwareEvent) -> Option<la::Hardware> {
    use la::Hardware as L;
    use spec::HardwareEvent as H;
    Some(match h {
        H::Cycles => L::CpuCycles,
        H::Instructions => L::Instructions,
        H::CacheReferences => L::CacheReferences,
        H::CacheMisses => L::CacheMisses,
        H::Branches => L::BranchInstructions,
        H::BranchMisses => L::BranchMisses,
        H::BusCycles => L::BusCycles,
        H::StalledCyclesFrontend => L::StalledCyclesFrontend,
        H::StalledCyclesBackend => L::StalledCyclesBackend,
        H::RefCycles => L::RefCpuCycles,
        H::Interrupts => return None,
    })
}

pub(super) fn software_event(s: spec::SoftwareEvent) -> la::Software {
    use la::Software as L;
    use spec::SoftwareEvent as S;
    match s {
        S::CpuClock => L::CpuClock,
        S::TaskClock => L::TaskClock,
        S::PageFaults => L::PageFaults,
        S::ContextSwitches => L::ContextSwitches,
        S::CpuMigrations => L::CpuMigrations,
        S::MinorFaults => L::PageFaultsMin,
        S::MajorFaults => L::PageFaultsMaj,
        S::AlignmentFaults => L::AlignmentFaults,
        S::EmulationFaults => L::EmulationFaults,
        S::Dummy => L::Dummy,
        S::BpfOutput => L::BpfOutput,
        S::CgroupSwitches => L::CgroupSwitches,
    }
}

pub(super) fn cache_event(c: spec::CacheEvent) -> la::CacheEvent {
    use spec::{CacheLevel as C, CacheOp as O, CacheResult as R};
    la::CacheEvent {
        cache: match c.cache {
            C::L1D => la::CacheId::L1D,
            C::L1I => la::CacheId::L1I,
            C::LL => la::CacheId::LL,
            C::DTLB => la::CacheId::DTLB,
            C::ITLB => la::CacheId::ITLB,
            C::BPU => la::CacheId::BPU,
            C::NODE => la::CacheId::NODE,
        },
        op: match c.op {
            O::Read => la::CacheOp::Read,
            O::Write => la::CacheOp::Write,
            O::Prefetch => la::CacheOp::Prefetch,
        },
        result: match c.result {
            R::Access => la::CacheResult::Access,
            R::Miss => la::CacheResult::Miss,
        },
    }
}

/// The qualifiers that only a raw/PMU encoding can carry.
fn encoding_qualifiers(q: &Qualifiers) -> Vec<&'static str> {
    let mut v = Vec::new();
    if q.edge {
        v.push("edge");
    }
    if q.inv {
        v.push("inv");
    }
    if q.cmask.is_some() {
        v.push("cmask");
    }
    if q.umask.is_some() {
        v.push("umask");
    }
    if q.threshold.is_some() {
        v.push("threshold");
    }
    if q.anythread {
        v.push("anythread");
    }
    v
}

fn encoding_qualifier_error(spec: &EventSpec, what: &str) -> Error {
    let q = encoding_qualifiers(&spec.qualifiers);
    Error::NotSupported {
        what: format!("qualifier(s) {} on {what}", q.join(", ")),
        why: "they change the hardware event encoding, which generic events do not expose; \
              use the raw or PMU form, e.g. `cpu/event=0xc0,umask=0x0,cmask=1/` or `r…`"
            .into(),
    }
}

fn reject_encoding_qualifiers(spec: &EventSpec, what: &str) -> Result<()> {
    if encoding_qualifiers(&spec.qualifiers).is_empty() {
        Ok(())
    } else {
        Err(encoding_qualifier_error(spec, what))
    }
}

/// Where the resolver looks for PMUs and tracepoints.
#[derive(Clone, Debug)]
pub(super) struct Sysfs {
    pub(super) pmu_root: PathBuf,
    /// `None`: locate tracefs on this machine.
    pub(super) tracefs: Option<PathBuf>,
    /// The CPUID string (`GenuineIntel-6-55-4`) choosing the native event
    /// table; `None`: no table.
    pub(super) cpuid: Option<String>,
}

impl Sysfs {
    pub(super) fn system() -> Sysfs {
        Sysfs {
            pmu_root: PathBuf::from(lpmu::SYSFS_ROOT),
            tracefs: None,
            cpuid: pmc_linux::pmu_events::host_cpuid().map(str::to_string),
        }
    }
}

/// One attr to open and the CPUs it may count on.
type Planned = (Attr, Option<Vec<u32>>);

/// The generic-event attrs for the core PMU(s): one per core PMU with the
/// extended type on hybrid machines (each counting on its own CPUs), a
/// plain one elsewhere.
fn core_attrs(sysfs: &Sysfs, make: impl Fn(Option<u32>) -> EventConfig) -> Vec<Planned> {
    let cores = lpmu::core_pmus(&sysfs.pmu_root);
    if cores.len() > 1 {
        cores
            .into_iter()
            .map(|p| (Attr::new(make(Some(p.type_id))), p.cpus))
            .collect()
    } else {
        vec![(Attr::new(make(None)), None)]
    }
}

fn not_supported(e: pmc_linux::Error) -> Error {
    super::from_linux(e)
}

/// The FreeBSD qualifiers that set format fields, as PMU terms.
fn qualifier_terms(q: &Qualifiers) -> Vec<lpmu::Term> {
    use lpmu::{Term, TermValue as V};
    let mut t = Vec::new();
    if q.edge {
        t.push(Term::new("edge", V::Flag));
    }
    if q.inv {
        t.push(Term::new("inv", V::Flag));
    }
    if let Some(c) = q.cmask {
        t.push(Term::new("cmask", V::Number(u64::from(c))));
    }
    if let Some(u) = q.umask {
        t.push(Term::new("umask", V::Number(u64::from(u))));
    }
    if let Some(th) = q.threshold {
        t.push(Term::new("threshold", V::Number(u64::from(th))));
    }
    if q.anythread {
        t.push(Term::new("any", V::Flag));
    }
    t
}

/// Checks that `pmu` has a format field for every qualifier term.
fn check_qualifier_fields(pmu: &Pmu, terms: &[lpmu::Term]) -> Result<()> {
    for t in terms {
        if pmu.format(&t.name).is_none() {
            let fields: Vec<&str> = pmu.formats.iter().map(|f| f.name.as_str()).collect();
            return Err(Error::NotSupported {
                what: format!("qualifier `{}` on PMU {}", t.name, pmu.name),
                why: format!(
                    "the PMU has no `{}` format field (it has: {})",
                    t.name,
                    fields.join(", ")
                ),
            });
        }
    }
    Ok(())
}

fn spec_terms(terms: &[spec::Term]) -> Vec<lpmu::Term> {
    terms
        .iter()
        .map(|t| {
            lpmu::Term::new(
                t.name.clone(),
                match &t.value {
                    spec::TermValue::Flag => lpmu::TermValue::Flag,
                    spec::TermValue::Number(n) => lpmu::TermValue::Number(*n),
                    spec::TermValue::Str(s) => lpmu::TermValue::Str(s.clone()),
                },
            )
        })
        .collect()
}

/// A `pmu/terms/` event (and named aliases resolved to one).
fn pmu_event(
    sysfs: &Sysfs,
    request: &EventRequest<'_>,
    pmu: &str,
    terms: &[lpmu::Term],
) -> Result<(Vec<Planned>, Class, Capabilities, String)> {
    let pmu = Pmu::find(&sysfs.pmu_root, pmu).map_err(|e| match e {
        // An unknown PMU is an unknown name (EINVAL).
        pmc_linux::Error::Unsupported { what, why } if why.starts_with("there is no such PMU") => {
            Error::UnknownEvent { what, why }
        }
        other => not_supported(other),
    })?;
    let q = qualifier_terms(&request.spec.qualifiers);
    check_qualifier_fields(&pmu, &q)?;
    let mut all = terms.to_vec();
    all.extend(q);
    let enc = pmu.encode(&all).map_err(not_supported)?;
    if request.mode.is_process() && !pmu.is_core() && pmu.cpus.is_some() {
        return Err(Error::NotSupported {
            what: format!("process mode on PMU {}", pmu.name),
            why: format!(
                "{} is an uncore/system PMU (it counts on CPUs {:?}); allocate it in SC or SS \
                 mode on one of those CPUs",
                pmu.name,
                pmu.cpus.clone().unwrap_or_default()
            ),
        });
    }
    let config = EventConfig::Dynamic {
        pmu_type: pmu.type_id,
        config: enc.config[0],
        config1: enc.config[1],
        config2: enc.config[2],
        config3: enc.config[3],
    };
    let caps = if pmu
        .formats
        .iter()
        .any(|f| f.name == "edge" || f.name == "cmask")
    {
        raw_caps(sysfs)
    } else {
        software_caps()
    };
    let described: Vec<String> = terms
        .iter()
        .map(|t| match &t.value {
            lpmu::TermValue::Flag => t.name.clone(),
            lpmu::TermValue::Number(n) => format!("{}={n:#x}", t.name),
            lpmu::TermValue::Str(s) => format!("{}={s}", t.name),
        })
        .collect();
    Ok((
        vec![(Attr::new(config), pmu.cpus.clone())],
        Class::Pmu(pmu.name.clone()),
        caps,
        format!("{}/{}/", pmu.name, described.join(",")),
    ))
}

/// A name the parser did not know: a sysfs event alias of some PMU (core
/// PMUs first), else an error listing the closest known names.
fn named_event(
    sysfs: &Sysfs,
    request: &EventRequest<'_>,
    name: &str,
) -> Result<(Vec<Planned>, Class, Capabilities, String)> {
    let pmus = Pmu::all(&sysfs.pmu_root);
    let lower = name.to_ascii_lowercase();
    let mut owners: Vec<&Pmu> = pmus
        .iter()
        .filter(|p| p.events.iter().any(|e| e.name.eq_ignore_ascii_case(&lower)))
        .collect();
    owners.sort_by_key(|p| !p.is_core());
    if let Some(first) = owners.first() {
        let alias = first
            .events
            .iter()
            .find(|e| e.name.eq_ignore_ascii_case(&lower))
            .map(|e| e.name.clone())
            .unwrap_or_default();
        let term = [lpmu::Term::new(alias, lpmu::TermValue::Flag)];
        if first.is_core() && owners.iter().filter(|p| p.is_core()).count() > 1 {
            // Hybrid: the alias on every core PMU that has it.
            let mut planned = Vec::new();
            let mut last = None;
            for p in owners.iter().filter(|p| p.is_core()) {
                let (mut a, class, caps, desc) = pmu_event(sysfs, request, &p.name, &term)?;
                planned.append(&mut a);
                last = Some((class, caps, desc));
            }
            let (class, caps, desc) = last.expect("at least two core PMUs");
            return Ok((planned, class, caps, desc));
        }
        return pmu_event(sysfs, request, &first.name.clone(), &term);
    }
    if let Some(found) = native::native_event(sysfs, request, &lower) {
        return found;
    }
    #[cfg(feature = "libpfm")]
    if let Ok(attr) = pmc_linux::pfm::encode(name) {
        let class = match attr.type_id() {
            0 => Class::Hardware,
            1 => Class::Software,
            3 => Class::Cache,
            4 => Class::Raw,
            _ => Class::Pmu("libpfm4".into()),
        };
        return Ok((
            vec![(attr, None)],
            class,
            raw_caps(sysfs),
            format!("{name} (libpfm4)"),
        ));
    }
    let mut known: Vec<String> = crate::spec::generic_names()
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    for p in &pmus {
        known.extend(p.events.iter().map(|e| e.name.clone()));
    }
    known.extend(native::names(sysfs));
    let near = lpmu::closest(&lower, known.iter().map(String::as_str), 5);
    Err(Error::UnknownEvent {
        what: format!("event `{name}`"),
        why: format!(
            "it is not a generic name nor an event alias of any PMU in {}, {}{}; other \
             native events need the PMU form `cpu/event=0x..,umask=0x../`",
            sysfs.pmu_root.display(),
            native::why_not(sysfs),
            if near.is_empty() {
                String::new()
            } else {
                format!(" (closest: {})", near.join(", "))
            }
        ),
    })
}

fn tracepoint_event(
    sysfs: &Sysfs,
    subsystem: &str,
    event: &str,
) -> Result<(Vec<Planned>, Class, Capabilities, String)> {
    let tracefs = match &sysfs.tracefs {
        Some(root) => pmc_linux::tracefs::Tracefs::at(root.clone()),
        None => pmc_linux::tracefs::Tracefs::locate().map_err(not_supported)?,
    };
    let id = tracefs
        .tracepoint_id(subsystem, event)
        .map_err(|e| match e {
            pmc_linux::Error::File { why, .. } if why.starts_with("no tracepoint") => {
                Error::UnknownEvent {
                    what: format!("tracepoint {subsystem}:{event}"),
                    why,
                }
            }
            other => not_supported(other),
        })?;
    Ok((
        vec![(Attr::new(EventConfig::Tracepoint(id)), None)],
        Class::Tracepoint,
        software_caps(),
        format!("{subsystem}:{event}"),
    ))
}

fn probe_event(
    sysfs: &Sysfs,
    p: &spec::ProbeSpec,
) -> Result<(Vec<Planned>, Class, Capabilities, String, CString)> {
    use pmc_linux::probe::Probe;
    use spec::ProbeKind as K;
    let root = &sysfs.pmu_root;
    let (probe, class, desc) = match p.kind {
        K::Uprobe | K::Uretprobe => {
            let path = Path::new(&p.path);
            let offset = match &p.symbol {
                Some(sym) => pmc_linux::probe::symbol_file_offset(path, sym)
                    .map_err(not_supported)?
                    .wrapping_add(p.offset),
                None => p.offset,
            };
            let probe =
                Probe::uprobe(root, path, offset, p.kind == K::Uretprobe).map_err(not_supported)?;
            (
                probe,
                Class::Uprobe,
                format!("uprobe:{}+{offset:#x}", p.path),
            )
        }
        K::Kprobe | K::Kretprobe => {
            let ret = p.kind == K::Kretprobe;
            let probe = match &p.symbol {
                Some(sym) => Probe::kprobe(root, sym, p.offset, ret),
                None => Probe::kprobe_at(root, p.offset, ret),
            }
            .map_err(not_supported)?;
            let desc = match &p.symbol {
                Some(sym) => format!("kprobe:{sym}+{:#x}", p.offset),
                None => format!("kprobe:{:#x}", p.offset),
            };
            (probe, Class::Kprobe, desc)
        }
    };
    let string = probe.target().cloned().unwrap_or_default();
    Ok((
        vec![(*probe.attr(), None)],
        class,
        software_caps(),
        desc,
        string,
    ))
}

/// Resolves a request into attrs, class and capabilities.
pub(super) fn resolve(request: &EventRequest<'_>) -> Result<LinuxEvent> {
    resolve_in(request, &Sysfs::system())
}

/// [`resolve`] against the given sysfs/tracefs roots.
pub(super) fn resolve_in(request: &EventRequest<'_>, sysfs: &Sysfs) -> Result<LinuxEvent> {
    let spec = request.spec;
    let q = &spec.qualifiers;
    let mut string = None;
    let (planned, class, caps, description) = match &spec.event {
        EventName::Hardware(h) => {
            reject_encoding_qualifiers(spec, "a generic hardware event")?;
            let Some(event) = hardware_event(*h) else {
                return interrupts_event();
            };
            (
                core_attrs(sysfs, |pmu| EventConfig::Hardware { event, pmu }),
                Class::Hardware,
                hardware_caps(sysfs),
                event.name().to_string(),
            )
        }
        EventName::Cache(c) => {
            reject_encoding_qualifiers(spec, "a generic cache event")?;
            let event = cache_event(*c);
            (
                core_attrs(sysfs, |pmu| EventConfig::Cache { event, pmu }),
                Class::Cache,
                hardware_caps(sysfs),
                event.name(),
            )
        }
        EventName::Software(s) => {
            reject_encoding_qualifiers(spec, "a software event")?;
            let event = software_event(*s);
            (
                vec![(Attr::new(EventConfig::Software(event)), None)],
                Class::Software,
                software_caps(),
                event.name().to_string(),
            )
        }
        EventName::Raw(config) => {
            let q_terms = qualifier_terms(q);
            let mut config = *config;
            if !q_terms.is_empty() {
                // FreeBSD qualifiers on a raw event go through the core
                // PMU's format fields.
                let cores = lpmu::core_pmus(&sysfs.pmu_root);
                let [core] = cores.as_slice() else {
                    return Err(encoding_qualifier_error(
                        spec,
                        "a raw event on a machine without a single core PMU format",
                    ));
                };
                check_qualifier_fields(core, &q_terms)?;
                config |= core.encode(&q_terms).map_err(not_supported)?.config[0];
            }
            (
                vec![(Attr::new(EventConfig::Raw(config)), None)],
                Class::Raw,
                raw_caps(sysfs),
                format!("r{config:x}"),
            )
        }
        EventName::Breakpoint { addr, len, access } => {
            reject_encoding_qualifiers(spec, "a breakpoint")?;
            let access = match access {
                spec::BreakpointAccess::Read => la::BreakpointAccess::Read,
                spec::BreakpointAccess::Write => la::BreakpointAccess::Write,
                spec::BreakpointAccess::ReadWrite => la::BreakpointAccess::ReadWrite,
                spec::BreakpointAccess::Execute => la::BreakpointAccess::Execute,
            };
            let config = pmc_linux::breakpoint::breakpoint(access, *addr, *len)
                .map_err(super::from_linux)?;
            let len = match config {
                EventConfig::Breakpoint { len, .. } => len,
                _ => 0,
            };
            (
                vec![(Attr::new(config), None)],
                Class::Breakpoint,
                software_caps(),
                format!("mem:{addr:#x}/{len}:{}", breakpoint_access_name(access)),
            )
        }
        EventName::Pmu { pmu, terms } => pmu_event(sysfs, request, pmu, &spec_terms(terms))?,
        EventName::Named(name) => named_event(sysfs, request, name)?,
        EventName::Tracepoint { subsystem, event } => {
            reject_encoding_qualifiers(spec, "a tracepoint")?;
            tracepoint_event(sysfs, subsystem, event)?
        }
        EventName::Probe(p) => {
            reject_encoding_qualifiers(spec, "a probe")?;
            let (planned, class, caps, desc, s) = probe_event(sysfs, p)?;
            string = Some(s);
            (planned, class, caps, desc)
        }
    };
    if q.filter.is_some() && class != Class::Tracepoint {
        return Err(Error::invalid(
            "allocate",
            format!("`filter=` applies to tracepoints only, not to {description}"),
        ));
    }
    let sampling = request.mode.is_sampling();
    let log = (sampling
        || request
            .flags
            .intersects(Flags::LOG_PROCEXIT | Flags::LOG_PROCCSW))
    .then(|| super::sampling::LogPlan {
        pmcid: request.pmcid,
        flags: request.flags,
        sampling,
        pages: crate::log::sink::buffer_pages(),
    });
    let mut attrs = Vec::with_capacity(planned.len());
    let mut cpus = Vec::with_capacity(planned.len());
    for (attr, c) in planned {
        let mut a = mode_attr(attr, request, sysfs)?;
        if log.is_some() {
            a = super::sampling::logging_attr(a, request.flags, sampling);
        }
        attrs.push(a);
        cpus.push(c);
    }
    let slices = match attrs.first() {
        Some(leader) if super::sampling::SliceSiblings::wanted(request.mode, request.flags) => {
            Some(super::sampling::SliceSiblings::new(
                leader,
                exit_tracepoint(sysfs, request.flags)?,
            ))
        }
        _ => None,
    };
    Ok(LinuxEvent {
        attrs,
        cpus,
        log,
        string,
        class,
        caps,
        description,
        filter: q.filter.clone(),
        slices,
    })
}

/// The `sched:sched_process_exit` id for the exit sibling: required for
/// per-process exit values under DESCENDANTS; otherwise taken when tracefs
/// is there (without it, a thread's last slice before exit is not logged).
fn exit_tracepoint(sysfs: &Sysfs, flags: Flags) -> Result<Option<u64>> {
    let required = flags.contains(Flags::LOG_PROCEXIT | Flags::DESCENDANTS);
    let tracefs = match &sysfs.tracefs {
        Some(root) => Ok(pmc_linux::tracefs::Tracefs::at(root.clone())),
        None => pmc_linux::tracefs::Tracefs::locate(),
    };
    match tracefs.and_then(|t| t.tracepoint_id("sched", "sched_process_exit")) {
        Ok(id) => Ok(Some(id)),
        Err(_) if !required => Ok(None),
        Err(e) => Err(Error::NotSupported {
            what: "LOG_PROCEXIT with DESCENDANTS".into(),
            why: format!(
                "each process's value at exit is read by the sched:sched_process_exit \
                 tracepoint, which needs tracefs: {e} (as root: \
                 `mount -t tracefs nodev /sys/kernel/tracing`)"
            ),
        }),
    }
}

fn breakpoint_access_name(a: la::BreakpointAccess) -> &'static str {
    match a {
        la::BreakpointAccess::Read => "r",
        la::BreakpointAccess::Write => "w",
        la::BreakpointAccess::ReadWrite => "rw",
        la::BreakpointAccess::Execute => "x",
    }
}

fn interrupts_event() -> Result<LinuxEvent> {
    Err(Error::NotSupported {
        what: "the generic event `interrupts`".into(),
        why: "Linux has no generic hardware-interrupt counter and this CPU's native \
              event is not known; count the `irq:irq_handler_entry` tracepoint instead"
            .into(),
    })
}

/// Applies qualifiers and the mode's settings to an attr.
fn mode_attr(attr: Attr, request: &EventRequest<'_>, sysfs: &Sysfs) -> Result<Attr> {
    let q = &request.spec.qualifiers;
    let mut a = attr.disabled(true);
    if let Some(p) = q.privilege {
        a = a
            .exclude_user(!p.user)
            .exclude_kernel(!p.kernel)
            .exclude_hv(!p.hypervisor);
    }
    match q.precise {
        Some(Precise::Level(n)) => a = a.precise_ip(n),
        Some(Precise::Max) => a = a.precise_ip(max_precise(&sysfs.pmu_root)),
        None => {}
    }
    a = a
        .pinned(q.pinned)
        .exclusive(q.exclusive)
        .exclude_idle(q.exclude_idle)
        .exclude_host(q.guest_only)
        .exclude_guest(q.host_only);
    a = a.read_format(ReadFormat::TOTAL_TIME_ENABLED | ReadFormat::TOTAL_TIME_RUNNING);
    if request.mode.is_process() {
        // New threads are counted through inheritance; new processes only
        // with DESCENDANTS (hwpmc follows children only when asked).
        a = a
            .inherit(true)
            .inherit_thread(!request.flags.contains(Flags::DESCENDANTS));
    }
    if request.mode.is_sampling() {
        a = match q.freq {
            Some(hz) => a.sample_freq(hz),
            None => a.sample_period(request.sample_period),
        };
    }
    Ok(a)
}
