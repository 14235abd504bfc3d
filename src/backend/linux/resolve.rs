//! Event specifier → `perf_event_attr`.

use std::borrow::Cow;
use std::ffi::CString;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use pmc_linux::attr::{self as la, Attr, EventConfig, ReadFormat};
use pmc_linux::pmu as lpmu;

use super::counters::OpenPlan;
use super::event::LinuxEvent;
use crate::backend::EventRequest;
use crate::spec::{self, EventName, EventSpec, Precise, Qualifiers};
use crate::{Capabilities, Class, Error, Flags, Result};

pub(super) mod caps;
pub(super) mod description;
mod native;
mod pmu;
#[cfg(test)]
mod tests;

use description::MachineDescription;

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
        source: None,
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
    /// Borrowed for this machine's: a resolve per allocation reads it.
    pub(super) pmu_root: Cow<'static, Path>,
    /// `None`: locate tracefs on this machine.
    pub(super) tracefs: Option<PathBuf>,
    /// The CPUID string (`GenuineIntel-6-55-4`) choosing the native event
    /// table; `None`: no table.
    pub(super) cpuid: Option<Cow<'static, str>>,
}

impl Sysfs {
    pub(super) fn system() -> Sysfs {
        Sysfs {
            pmu_root: Cow::Borrowed(Path::new(lpmu::SYSFS_ROOT)),
            tracefs: None,
            cpuid: pmc_linux::pmu_events::host_cpuid().map(Cow::Borrowed),
        }
    }

    /// Whether this is this machine's sysfs (whose description is shared).
    pub(super) fn is_system(&self) -> bool {
        self.tracefs.is_none()
            && *self.pmu_root == *Path::new(lpmu::SYSFS_ROOT)
            && self.cpuid.as_deref() == pmc_linux::pmu_events::host_cpuid()
    }

    /// The description of the machine this points to: the shared one for
    /// this machine, a fresh read for another tree.
    pub(super) fn description(&self) -> Arc<MachineDescription> {
        if self.is_system() {
            description::system()
        } else {
            Arc::new(MachineDescription::read(self))
        }
    }
}

/// One attr to open and the CPUs it may count on (`None`: any CPU).
#[derive(Debug)]
pub(super) struct Planned {
    pub(super) attr: Attr,
    pub(super) cpus: Option<Vec<u32>>,
}

impl Planned {
    fn anywhere(attr: Attr) -> Planned {
        Planned { attr, cpus: None }
    }
}

/// What a specifier resolves to before the mode's settings apply.
#[derive(Debug)]
pub(super) struct Resolved {
    /// One attr per PMU that counts it (each core PMU on hybrid machines).
    pub(super) planned: Vec<Planned>,
    pub(super) class: Class,
    pub(super) caps: Capabilities,
    /// How `describe` names it (`cycles`, `cpu/event=0xc0/`, …).
    pub(super) description: Cow<'static, str>,
    /// The string `config1` points to (uprobe path, kprobe function).
    pub(super) string: Option<CString>,
}

/// The generic-event attrs for the core PMU(s): one per core PMU with the
/// extended type on hybrid machines (each counting on its own CPUs), a
/// plain one elsewhere.
fn core_attrs(d: &MachineDescription, make: impl Fn(Option<u32>) -> EventConfig) -> Vec<Planned> {
    let cores = d.core_pmus();
    if cores.len() > 1 {
        cores
            .map(|p| Planned {
                attr: Attr::new(make(Some(p.type_id))),
                cpus: p.cpus.clone(),
            })
            .collect()
    } else {
        vec![Planned::anywhere(Attr::new(make(None)))]
    }
}

fn not_supported(e: pmc_linux::Error) -> Error {
    super::from_linux(e)
}

/// A tracepoint tracefs lacks is an unknown name (EINVAL, `from_linux`);
/// a tracefs that is not there is unavailable.
fn tracepoint_event(d: &MachineDescription, subsystem: &str, event: &str) -> Result<Resolved> {
    let id = d
        .tracepoint_id(subsystem, event)
        .map_err(super::from_linux)?;
    Ok(Resolved {
        planned: vec![Planned::anywhere(Attr::new(EventConfig::Tracepoint(id)))],
        class: Class::Tracepoint,
        caps: caps::class_capabilities(&Class::Tracepoint, d),
        description: format!("{subsystem}:{event}").into(),
        string: None,
    })
}

fn probe_event(d: &MachineDescription, p: &spec::ProbeSpec) -> Result<Resolved> {
    use pmc_linux::dynamic_probe::Probe;
    use spec::ProbeKind as K;
    let root = d.pmu_root();
    let (probe, class, description) = match p.kind {
        K::Uprobe | K::Uretprobe => {
            let path = Path::new(&p.path);
            let offset = match &p.symbol {
                Some(sym) => pmc_linux::dynamic_probe::symbol_file_offset(path, sym)
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
    Ok(Resolved {
        planned: vec![Planned::anywhere(*probe.attr())],
        caps: caps::class_capabilities(&class, d),
        class,
        description: description.into(),
        string: Some(probe.target().cloned().unwrap_or_default()),
    })
}

/// Resolves a request into attrs, class and capabilities.
pub(super) fn resolve(
    request: &EventRequest<'_>,
    shared: Arc<super::Shared>,
) -> Result<LinuxEvent> {
    resolve_with(request, &Sysfs::system(), shared)
}

/// An event of one of the fixed classes: one attr on any CPU.
fn fixed(
    d: &MachineDescription,
    config: EventConfig,
    class: Class,
    description: Cow<'static, str>,
) -> Resolved {
    Resolved {
        planned: vec![Planned::anywhere(Attr::new(config))],
        caps: caps::class_capabilities(&class, d),
        class,
        description,
        string: None,
    }
}

/// What the specifier's event name is on the machine `d` describes.
fn resolve_name(
    sysfs: &Sysfs,
    d: &MachineDescription,
    request: &EventRequest<'_>,
) -> Result<Resolved> {
    let spec = request.spec;
    Ok(match &spec.event {
        EventName::Hardware(h) => {
            reject_encoding_qualifiers(spec, "a generic hardware event")?;
            let Some(event) = hardware_event(*h) else {
                return Err(interrupts_event());
            };
            Resolved {
                planned: core_attrs(d, |pmu| EventConfig::Hardware { event, pmu }),
                caps: caps::class_capabilities(&Class::Hardware, d),
                class: Class::Hardware,
                description: event.name().into(),
                string: None,
            }
        }
        EventName::Cache(c) => {
            reject_encoding_qualifiers(spec, "a generic cache event")?;
            let event = cache_event(*c);
            Resolved {
                planned: core_attrs(d, |pmu| EventConfig::Cache { event, pmu }),
                caps: caps::class_capabilities(&Class::Cache, d),
                class: Class::Cache,
                description: event.name().into(),
                string: None,
            }
        }
        EventName::Software(s) => {
            reject_encoding_qualifiers(spec, "a software event")?;
            let event = software_event(*s);
            fixed(
                d,
                EventConfig::Software(event),
                Class::Software,
                event.name().into(),
            )
        }
        EventName::Raw(config) => {
            let q_terms = pmu::qualifier_terms(&spec.qualifiers);
            let mut config = *config;
            if !q_terms.is_empty() {
                // FreeBSD qualifiers on a raw event go through the core
                // PMU's format fields.
                let mut cores = d.core_pmus();
                let (Some(core), None) = (cores.next(), cores.next()) else {
                    return Err(encoding_qualifier_error(
                        spec,
                        "a raw event on a machine without a single core PMU format",
                    ));
                };
                pmu::check_qualifier_fields(core, &q_terms)?;
                config |= core.encode(&q_terms).map_err(not_supported)?.config[0];
            }
            fixed(
                d,
                EventConfig::Raw(config),
                Class::Raw,
                format!("r{config:x}").into(),
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
            fixed(
                d,
                config,
                Class::Breakpoint,
                format!("mem:{addr:#x}/{len}:{}", breakpoint_access_name(access)).into(),
            )
        }
        EventName::Pmu { pmu, terms } => {
            pmu::pmu_event(sysfs, d, request, pmu, &pmu::spec_terms(terms))?
        }
        EventName::Named(name) => pmu::named_event(sysfs, d, request, name)?,
        EventName::Tracepoint { subsystem, event } => {
            reject_encoding_qualifiers(spec, "a tracepoint")?;
            tracepoint_event(d, subsystem, event)?
        }
        EventName::Probe(p) => {
            reject_encoding_qualifiers(spec, "a probe")?;
            probe_event(d, p)?
        }
    })
}

/// [`resolve`] against the given sysfs/tracefs roots.
#[cfg(any(test, feature = "test-doubles"))]
pub(super) fn resolve_in(request: &EventRequest<'_>, sysfs: &Sysfs) -> Result<LinuxEvent> {
    resolve_with(request, sysfs, Arc::default())
}

/// [`resolve_in`] for a backend instance, whose collector and trial-open
/// cache the event shares.
fn resolve_with(
    request: &EventRequest<'_>,
    sysfs: &Sysfs,
    shared: Arc<super::Shared>,
) -> Result<LinuxEvent> {
    // A FreeBSD SOFT event the parser leaves to hwpmc: Linux has none.
    if let Some(source) = crate::spec::soft_without_linux(request.spec) {
        return Err(Error::InvalidSpec {
            spec: request.spec.text.clone(),
            source,
        });
    }
    let d = sysfs.description();
    let q = &request.spec.qualifiers;
    let Resolved {
        planned,
        class,
        caps,
        description,
        string,
    } = resolve_name(sysfs, &d, request)?;
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
        flags: request.flags,
        sampling,
        pages: request.buffer_pages.unwrap_or_else(|| {
            super::sampling::default_ring_pages(request.user_stack.filter(|_| sampling))
        }),
    });
    let mut attrs = Vec::with_capacity(planned.len());
    let mut cpus = Vec::with_capacity(planned.len());
    for Planned { attr, cpus: c } in planned {
        let mut a = mode_attr(attr, request, &d);
        if log.is_some() {
            let stack = request.user_stack.filter(|_| sampling);
            a = super::sampling::logging_attr(a, request.flags, sampling, stack);
        }
        attrs.push(a);
        cpus.push(c);
    }
    let slices = match attrs.first() {
        Some(leader) if super::sampling::SliceSiblings::wanted(request.mode, request.flags) => {
            Some(super::sampling::SliceSiblings::new(
                leader,
                exit_tracepoint(&d, request.flags)?,
            ))
        }
        _ => None,
    };
    Ok(LinuxEvent {
        plan: OpenPlan {
            attrs,
            cpus,
            log,
            string,
            description,
            filter: q.filter.clone(),
            slices,
            shared,
        },
        class,
        caps,
        tried: Default::default(),
    })
}

/// The `sched:sched_process_exit` id for the exit sibling: required for
/// per-process exit values under DESCENDANTS; otherwise taken when tracefs
/// is there (without it, a thread's last slice before exit is not logged).
fn exit_tracepoint(d: &MachineDescription, flags: Flags) -> Result<Option<u64>> {
    let required = flags.contains(Flags::LOG_PROCEXIT | Flags::DESCENDANTS);
    match d.tracepoint_id("sched", "sched_process_exit") {
        Ok(id) => Ok(Some(id)),
        Err(_) if !required => Ok(None),
        Err(e) => Err(Error::NotSupported {
            what: "LOG_PROCEXIT with DESCENDANTS".into(),
            why: format!(
                "each process's value at exit is read by the sched:sched_process_exit \
                 tracepoint, which needs tracefs: {e} (as root: \
                 `mount -t tracefs nodev /sys/kernel/tracing`)"
            ),
            source: None,
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

fn interrupts_event() -> Error {
    Error::NotSupported {
        what: "the generic event `interrupts`".into(),
        why: "Linux has no generic hardware-interrupt counter and this CPU's native \
              event is not known; count the `irq:irq_handler_entry` tracepoint instead"
            .into(),
        source: None,
    }
}

/// Applies qualifiers and the mode's settings to an attr.
fn mode_attr(attr: Attr, request: &EventRequest<'_>, d: &MachineDescription) -> Attr {
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
        Some(Precise::Max) => a = a.precise_ip(d.max_precise()),
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
    a
}
