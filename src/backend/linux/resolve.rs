//! Event specifier → `perf_event_attr`.

use pmc_linux::attr::{self as la, Attr, EventConfig, ReadFormat};

use super::counters::{CpuCounters, ProcessCounters};
use crate::backend::{Counters, EventRequest, PreparedEvent};
use crate::spec::{self, EventName, EventSpec, Precise, Qualifiers};
use crate::{Capabilities, Class, Error, Flags, Result};

/// A resolved event: one attr per core PMU (several on hybrid CPUs).
#[derive(Debug)]
pub(super) struct LinuxEvent {
    pub(super) attrs: Vec<Attr>,
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
}

/// Capabilities of hardware-PMU classes.
fn hardware_caps() -> Capabilities {
    let mut caps = Capabilities::INTERRUPT
        | Capabilities::USER
        | Capabilities::SYSTEM
        | Capabilities::READ
        | Capabilities::WRITE
        | Capabilities::SYSWIDE;
    if max_precise() > 0 {
        caps |= Capabilities::PRECISE;
    }
    caps
}

/// Capabilities of raw/PMU-encoded events (qualifiers apply through the
/// format fields).
fn raw_caps() -> Capabilities {
    hardware_caps()
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
        | Capabilities::SYSWIDE
}

/// The highest `precise_ip` the core PMU supports (`caps/max_precise`).
pub(super) fn max_precise() -> u8 {
    std::fs::read_to_string("/sys/bus/event_source/devices/cpu/caps/max_precise")
        .ok()
        .and_then(|s| s.trim().parse().ok())
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

fn reject_encoding_qualifiers(spec: &EventSpec, what: &str) -> Result<()> {
    let q = encoding_qualifiers(&spec.qualifiers);
    if q.is_empty() {
        return Ok(());
    }
    Err(Error::NotSupported {
        what: format!("qualifier(s) {} on {what}", q.join(", ")),
        why: "they change the hardware event encoding, which generic events do not expose; \
              use the raw or PMU form, e.g. `cpu/event=0xc0,umask=0x0,cmask=1/` or `r…`"
            .into(),
    })
}

/// The generic-event configs for the core PMU(s).
fn core_configs(make: impl Fn(Option<u32>) -> EventConfig) -> Vec<EventConfig> {
    vec![make(None)]
}

/// Resolves a request into attrs, class and capabilities.
pub(super) fn resolve(request: &EventRequest<'_>) -> Result<LinuxEvent> {
    let spec = request.spec;
    let q = &spec.qualifiers;
    let (configs, class, caps, description) = match &spec.event {
        EventName::Hardware(h) => {
            reject_encoding_qualifiers(spec, "a generic hardware event")?;
            let Some(event) = hardware_event(*h) else {
                return interrupts_event();
            };
            (
                core_configs(|pmu| EventConfig::Hardware { event, pmu }),
                Class::Hardware,
                hardware_caps(),
                event.name().to_string(),
            )
        }
        EventName::Cache(c) => {
            reject_encoding_qualifiers(spec, "a generic cache event")?;
            let event = cache_event(*c);
            (
                core_configs(|pmu| EventConfig::Cache { event, pmu }),
                Class::Cache,
                hardware_caps(),
                event.name(),
            )
        }
        EventName::Software(s) => {
            let event = software_event(*s);
            (
                vec![EventConfig::Software(event)],
                Class::Software,
                software_caps(),
                event.name().to_string(),
            )
        }
        EventName::Raw(config) => {
            reject_encoding_qualifiers(spec, "a raw event without a core PMU format")?;
            (
                vec![EventConfig::Raw(*config)],
                Class::Raw,
                raw_caps(),
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
                vec![config],
                Class::Breakpoint,
                software_caps(),
                format!("mem:{addr:#x}/{len}:{}", breakpoint_access_name(access)),
            )
        }
        other => {
            return Err(Error::NotSupported {
                what: format!("{other:?}"),
                why: "this event form is not wired into the Linux backend yet".into(),
            });
        }
    };
    let attrs = configs
        .into_iter()
        .map(|c| mode_attr(Attr::new(c), request))
        .collect::<Result<Vec<_>>>()?;
    Ok(LinuxEvent {
        attrs,
        class,
        caps,
        description,
        filter: q.filter.clone(),
    })
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
fn mode_attr(attr: Attr, request: &EventRequest<'_>) -> Result<Attr> {
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
        Some(Precise::Max) => a = a.precise_ip(max_precise()),
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
