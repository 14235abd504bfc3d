//! The one allocation path: every way of making a PMC — [`PmcBuilder`](super::PmcBuilder),
//! [`PerCpu`](super::PerCpu), the positional libpmc-style calls — ends in
//! [`allocate`], which checks, resolves, opens and lists it.

use std::sync::Arc;

use super::validate::validate_allocation;
use super::{MAX_RELOAD_COUNT, MIN_RELOAD_COUNT, Pmc};
use crate::PmcInfo;
use crate::backend::{CgroupDir, CounterValue, EventRequest, PreparedEvent};
use crate::owner::Owner;
use crate::owner::registry::PmcRecord;
use crate::spec::EventSpec;
use crate::{Class, Cpu, Error, Flags, Mode, PmcId, Reading, Result, State};

/// What one PMC is allocated as: `pmc_allocate`'s arguments, and the
/// cgroup a system PMC counts in (a Linux extension).
#[derive(Clone, Copy, Debug)]
pub(super) struct Allocation<'a> {
    pub(super) mode: Mode,
    pub(super) flags: Flags,
    pub(super) cpu: Cpu,
    /// The reload count of a sampling mode, the initial value of a
    /// counting one.
    pub(super) count: u64,
    /// Bytes of user stack each sample copies (else the owner's setting).
    pub(super) user_stack: Option<u32>,
    /// The cgroup a system PMC counts in, opened by the owner's backend.
    pub(super) cgroup: Option<&'a CgroupDir>,
}

/// Backend answers the caller already has, so that an allocation on each
/// of many CPUs (`PerCpu`) asks them once, not once per CPU: each is a
/// system call or a sysfs read.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Prefetched<'a> {
    /// The online CPUs and the highest possible one (see
    /// `validate_allocation`).
    pub(super) online_cpus: Option<&'a [u32]>,
    pub(super) highest_cpu: Option<u32>,
    /// The calling process, the PMC's owner.
    pub(super) owner_pid: Option<u32>,
    /// The event another CPU's PMC of the same request prepared, when it
    /// serves every CPU (see `PreparedEvent::serves_every_cpu`).
    pub(super) prepared: Option<&'a Arc<dyn PreparedEvent>>,
}

/// A reload count above [`MAX_RELOAD_COUNT`] is EINVAL with the limit named
/// (the backend's own refusal would be a bare errno).
pub(super) fn check_reload_count(op: &'static str, count: u64) -> Result<()> {
    if count > MAX_RELOAD_COUNT {
        return Err(Error::invalid(
            op,
            format!("reload count {count} is too large: the maximum is {MAX_RELOAD_COUNT}"),
        ));
    }
    Ok(())
}

/// Allocates a PMC of `owner` counting `spec` (see the checks and rules
/// of [`Pmc`]'s module).
pub(super) fn allocate(
    owner: &Owner,
    spec: EventSpec,
    what: &Allocation<'_>,
    known: Prefetched<'_>,
) -> Result<Pmc> {
    let Allocation {
        mode,
        flags,
        cpu,
        count,
        user_stack,
        cgroup,
    } = *what;
    if let Some(bytes) = user_stack {
        crate::owner::check_user_stack_bytes(bytes)?;
        if !mode.is_sampling() {
            return Err(Error::invalid(
                "allocate",
                format!("a user-stack copy needs a sampling mode (SS, TS), not {mode}"),
            ));
        }
    }
    let backend = owner.binding();
    validate_allocation(
        mode,
        flags,
        cpu,
        &**backend,
        (known.online_cpus, known.highest_cpu),
    )?;
    let reload_count = if mode.is_sampling() {
        let asked = spec.qualifiers.period.unwrap_or(count);
        check_reload_count("allocate", asked)?;
        asked.max(MIN_RELOAD_COUNT)
    } else {
        count
    };
    // The pmcid carries the PMC's CPU, mode and class as FreeBSD's
    // does. The class is the prepared event's; the request needs the
    // id first, so it is asked with the class the specifier names and
    // asked again in the rare case the backend resolves it to another.
    let registry = owner.registry();
    let cputype = registry.cputype(|| backend.cpuinfo().map(|i| i.cputype).unwrap_or_default());
    let class_code = |class: &Class| class.libpmc_class(cputype).code();
    let cpu_field = match cpu {
        Cpu::Id(n) => n,
        Cpu::Any => u32::MAX,
    };
    let new_id = |class: &Class| {
        registry
            .next_id(cpu_field, mode as u32, class_code(class))
            .map(|id| IdGuard {
                registry,
                id,
                keep: false,
            })
            .ok_or_else(|| Error::Busy {
                op: "allocate".into(),
                why: format!(
                    "all 256 row indexes of {cpu} {mode} PMCs of class {} are in use; \
                     release some",
                    class.libpmc_class(cputype).name()
                ),
                source: None,
            })
    };
    let request = |id: PmcId| EventRequest {
        spec: &spec,
        mode,
        flags,
        sample_period: reload_count,
        pmcid: id.0,
        buffer_pages: owner.buffer_pages_setting(),
        user_stack: user_stack
            .or_else(|| owner.user_stack())
            .filter(|_| mode.is_sampling()),
    };
    // Prepared already: by another CPU's PMC of a `PerCpu`, or for an
    // earlier allocation of the same request (the key has no pmcid).
    let ready = match known.prepared {
        Some(event) => Some(Arc::clone(event)),
        None => owner.kept_preparation(&request(PmcId(0))),
    };
    let (mut id_guard, event) = match ready {
        Some(event) => (new_id(&event.class())?, event),
        None => {
            let guess = named_class(&spec);
            let guard = new_id(&guess)?;
            let event = owner.prepare(&request(guard.id))?;
            if class_code(&event.class()) == class_code(&guess) {
                (guard, event)
            } else {
                drop(guard);
                let guard = new_id(&event.class())?;
                let event = owner.prepare(&request(guard.id))?;
                (guard, event)
            }
        }
    };
    let id = id_guard.id;
    // hwpmc allocates the hardware at allocate, so an event this
    // machine cannot count fails here: system PMCs open their CPU now,
    // process PMCs try the event on the calling thread.
    let system = match (cpu, cgroup) {
        (Cpu::Id(n), Some(cgroup)) => Some(event.open_cpu_in_cgroup(n, cgroup)?),
        (Cpu::Id(n), None) => Some(event.open_cpu(n)?),
        (Cpu::Any, _) => {
            event.trial_open()?;
            None
        }
    };
    let system_source = match system.as_ref().and_then(|s| s.sample_source()) {
        Some(source) => Some(owner.register_source(id.0, mode, flags, source)?),
        None => None,
    };
    let owner_pid = known.owner_pid.unwrap_or_else(|| backend.caller_pid());
    let record = Arc::new(PmcRecord::new(PmcInfo {
        id,
        name: spec.text.clone(),
        class: event.class(),
        mode,
        flags,
        cpu,
        state: State::Allocated,
        owner_pid,
        reload_count,
        targets: Vec::new(),
    }));
    let mut pmc = Pmc {
        id,
        spec,
        mode,
        flags,
        cpu,
        owner: owner.clone(),
        event,
        targets: Vec::new(),
        system_source,
        system,
        attach_done: false,
        initial: if mode.is_counting() { count } else { 0 },
        owner_pid,
        hot: None,
        single_target: false,
        record: Arc::clone(&record),
        // TC: the count is `pm_initial`, which hwpmc never uses for
        // process PMCs (their value is `pm_savedvalue`, 0 until a
        // write); SC: it is written to the counter at start.
        offset: 0,
        detached: CounterValue::ZERO,
        saved: Reading::default(),
        saved_in_counter: false,
        sample_base: 0,
        cgroup: cgroup.map(|c| c.path().to_path_buf()),
    };
    // From here the PMC's release frees its id.
    id_guard.keep = true;
    pmc.publish();
    registry.insert(record);
    owner.write_if_logging(|| crate::log::LogRecord::PmcAllocateDyn {
        pmcid: id.0,
        event: 0,
        flags: flags.bits(),
        name: pmc.spec.text.clone(),
    });
    Ok(pmc)
}

/// A pmcid being allocated: given back unless the allocation succeeds.
struct IdGuard<'a> {
    registry: &'a crate::owner::registry::Registry,
    id: PmcId,
    keep: bool,
}

impl Drop for IdGuard<'_> {
    fn drop(&mut self) {
        if !self.keep {
            self.registry.forget_id(self.id);
        }
    }
}

/// The class a specifier names before the backend resolves it (its kind
/// of event; a PMU by name is that PMU).
fn named_class(spec: &EventSpec) -> Class {
    use crate::spec::EventName;
    match &spec.event {
        EventName::Hardware(_) => Class::Hardware,
        EventName::Cache(_) => Class::Cache,
        EventName::Raw(_) | EventName::Named(_) => Class::Raw,
        EventName::Software(_) => Class::Software,
        EventName::Pmu { pmu, .. } => Class::Pmu(pmu.clone()),
        EventName::Tracepoint { .. } => Class::Tracepoint,
        EventName::Breakpoint { .. } => Class::Breakpoint,
        EventName::Probe(_) => Class::Uprobe,
    }
}
