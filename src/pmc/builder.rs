//! [`PmcBuilder`]: the one way a PMC is made. The mode follows from what
//! is built — a process PMC never gets a CPU, a system PMC always has one
//! — and the owner is named, never implied: [`Owner::pmc`] builds on that
//! owner, `Pmc::builder` on the process's.
//!
//! Not run as a doctest: `instructions` and `cycles` need a hardware PMU,
//! and the system PMCs root or `perf_event_paranoid` ≤ 0.
//!
//! ```no_run
//! use pmc::{Flags, Pmc};
//!
//! // A process counter (TC), started on the caller.
//! let mut tc = Pmc::builder("instructions,usr").build()?;
//! // A process sampler (TS) every 100 000 events, with callchains.
//! let ts = Pmc::builder("cpu-clock").sampling(100_000).flags(Flags::CALLCHAIN).build()?;
//! // A system counter (SC) on CPU 0, and a system sampler (SS) on CPU 1.
//! let sc = Pmc::builder("cycles").system(0).build()?;
//! let ss = Pmc::builder("cycles").system(1).sampling(1_000_000).build()?;
//! // A system counter on every online CPU, as `pmcstat -s` makes it.
//! let all = Pmc::builder("cycles").per_cpu().build()?;
//! tc.start()?;
//! # drop((ts, sc, ss, all));
//! # Ok::<(), pmc::Error>(())
//! ```

use std::path::PathBuf;

use super::allocate::{Allocation, Prefetched, allocate};
use super::{PerCpuBuilder, Pmc, default_count};
use crate::backend::CgroupDir;
use crate::spec::EventSpec;
use crate::{Cpu, Error, Flags, Mode, Owner, Result};

/// The event a [`PmcBuilder`] counts: a specifier's text (see
/// [`crate::spec`]), parsed when the PMC is built, or a parsed
/// [`EventSpec`].
#[derive(Clone, Debug)]
pub enum EventArg {
    /// An event specifier, e.g. `"instructions,usr"`.
    Text(String),
    /// A specifier parsed already.
    Spec(EventSpec),
}

impl From<&str> for EventArg {
    fn from(text: &str) -> EventArg {
        EventArg::Text(text.to_string())
    }
}

impl From<String> for EventArg {
    fn from(text: String) -> EventArg {
        EventArg::Text(text)
    }
}

impl From<&String> for EventArg {
    fn from(text: &String) -> EventArg {
        EventArg::Text(text.clone())
    }
}

impl From<EventSpec> for EventArg {
    fn from(spec: EventSpec) -> EventArg {
        EventArg::Spec(spec)
    }
}

impl From<&EventSpec> for EventArg {
    fn from(spec: &EventSpec) -> EventArg {
        EventArg::Spec(spec.clone())
    }
}

impl EventArg {
    /// The parsed specifier (a text is parsed through `owner`, which keeps
    /// its last parse).
    pub(super) fn parse(&self, owner: &Owner) -> Result<EventSpec> {
        match self {
            EventArg::Spec(spec) => Ok(spec.clone()),
            EventArg::Text(text) => owner.parse_spec(text).map_err(|source| Error::InvalidSpec {
                spec: text.clone(),
                source,
            }),
        }
    }
}

/// A PMC being built: a process counter (TC) until told otherwise —
/// [`PmcBuilder::system`] makes it count one CPU (SC),
/// [`PmcBuilder::sampling`] makes it sample (TS, SS), and
/// [`PmcBuilder::per_cpu`] makes one system PMC per CPU ([`PerCpu`](super::PerCpu)).
///
/// ```
/// use pmc::Pmc;
///
/// let mut pmc = Pmc::builder("task-clock,usr").build()?;
/// pmc.start()?; // never attached: counts the caller
/// let sum: u64 = (0..1_000_000u64).map(std::hint::black_box).sum();
/// pmc.stop()?;
/// assert!(pmc.read()? > 0, "{sum}");
/// # Ok::<(), pmc::Error>(())
/// ```
#[derive(Clone, Debug)]
#[must_use = "a builder does nothing until `build`"]
pub struct PmcBuilder {
    event: EventArg,
    owner: Owner,
    mode: Mode,
    cpu: Cpu,
    flags: Flags,
    /// The reload count of a sampling mode (else the default).
    period: Option<u64>,
    /// The initial value of a counting mode (else 0).
    initial: Option<u64>,
    /// Bytes of user stack each sample copies, if asked.
    user_stack: Option<u32>,
    /// The cgroup a system PMC counts in (Linux), as given.
    cgroup: Option<PathBuf>,
}

impl PmcBuilder {
    /// A process counter (TC) of `event` on `owner`, to set up (see
    /// [`Owner::pmc`], and `Pmc::builder` for the process's owner).
    pub fn new(event: impl Into<EventArg>, owner: &Owner) -> PmcBuilder {
        PmcBuilder {
            event: event.into(),
            owner: owner.clone(),
            mode: Mode::TC,
            cpu: Cpu::Any,
            flags: Flags::empty(),
            period: None,
            initial: None,
            user_stack: None,
            cgroup: None,
        }
    }

    /// A process PMC (TC, or TS when sampling), the default: attach it, or
    /// start it on the caller.
    pub fn process(mut self) -> Self {
        self.mode = if self.mode.is_sampling() {
            Mode::TS
        } else {
            Mode::TC
        };
        self.cpu = Cpu::Any;
        self
    }

    /// A system PMC counting everything `cpu` runs (SC, or SS when
    /// sampling). Counting a whole CPU needs root, CAP_PERFMON or
    /// `perf_event_paranoid` ≤ 0.
    pub fn system(mut self, cpu: u32) -> Self {
        self.mode = system_mode(self.mode);
        self.cpu = Cpu::Id(cpu);
        self
    }

    /// Samples every `period` events (the reload count) instead of
    /// counting; raised to [`crate::MIN_RELOAD_COUNT`] as hwpmc does.
    pub fn sampling(mut self, period: u64) -> Self {
        self.mode = if self.mode.is_system() {
            Mode::SS
        } else {
            Mode::TS
        };
        self.period = Some(period);
        self
    }

    /// Copies the user registers and `bytes` of user stack with each
    /// sample (a multiple of 8 up to
    /// [`crate::sample::MAX_USER_STACK_BYTES`]; perf's default is
    /// [`crate::sample::DEFAULT_USER_STACK_BYTES`]), for the owner to
    /// unwind with the objects' CFI into the sample's user call chain as
    /// it writes the log, or for the embedder's own
    /// [`crate::sample::StackUnwinder`]: `--call-graph dwarf`. Sampling
    /// modes only; overrides [`Owner::set_user_stack`].
    pub fn user_stack(mut self, bytes: u32) -> Self {
        self.user_stack = Some(bytes);
        self
    }

    /// Counts only what the tasks of the cgroup at `path` run (a Linux
    /// extension, perf stat's `-G`; hwpmc has nothing like it): a system
    /// PMC ([`PmcBuilder::system`], [`PmcBuilder::per_cpu`]) restricted
    /// to a cgroup. `path` is a cgroup directory, absolute, or relative to
    /// the cgroup v2 mount (`"mygroup"`). Build fails with
    /// [`Error::InvalidArgument`] for a process mode, with
    /// [`Error::Unavailable`] and [`Reason::NoSuchCgroup`](crate::Reason::NoSuchCgroup)
    /// or [`Reason::NotACgroup`](crate::Reason::NotACgroup) for a path
    /// that is no cgroup, and with [`Error::NotSupported`] on a backend
    /// other than Linux perf_event's.
    pub fn cgroup(mut self, path: impl Into<PathBuf>) -> Self {
        self.cgroup = Some(path.into());
        self
    }

    /// Adds `flags` (`PMC_F_*`).
    pub fn flags(mut self, flags: Flags) -> Self {
        self.flags |= flags;
        self
    }

    /// The value a counting PMC starts from (see [`Pmc::set`]); ignored
    /// when sampling.
    pub fn initial_value(mut self, value: u64) -> Self {
        self.initial = Some(value);
        self
    }

    /// Builds on `owner` instead of the one the builder was made with.
    pub fn owner(mut self, owner: &Owner) -> Self {
        self.owner = owner.clone();
        self
    }

    /// One system PMC of this event on each online CPU (or those
    /// [`PerCpuBuilder::cpus`] names), as `pmcstat -s` makes them: SC, or
    /// SS when sampling.
    pub fn per_cpu(mut self) -> PerCpuBuilder {
        self.mode = system_mode(self.mode);
        PerCpuBuilder::new(self)
    }

    /// `pmc_allocate(3)`'s mode and CPU as given, for the positional
    /// calls: their pairing is checked at build, as libpmc checks it.
    pub(crate) fn positional(mut self, mode: Mode, cpu: Cpu) -> Self {
        self.mode = mode;
        self.cpu = cpu;
        self
    }

    /// `pmc_allocate`'s sixth argument: the reload count of a sampling
    /// mode, the initial value of a counting one.
    pub(crate) fn count(self, count: u64) -> Self {
        if self.mode.is_sampling() {
            Self {
                period: Some(count),
                ..self
            }
        } else {
            self.initial_value(count)
        }
    }

    /// The mode it builds.
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// The owner it builds on.
    pub(super) fn owner_ref(&self) -> &Owner {
        &self.owner
    }

    /// The event it counts.
    pub(super) fn event(&self) -> &EventArg {
        &self.event
    }

    /// The cgroup it counts in, opened by its owner's backend: `None`
    /// without [`PmcBuilder::cgroup`]; refused for a process mode, which
    /// follows its targets wherever they run.
    pub(super) fn open_cgroup(&self) -> Result<Option<CgroupDir>> {
        let Some(path) = &self.cgroup else {
            return Ok(None);
        };
        if self.mode.is_process() {
            return Err(Error::invalid(
                "allocate",
                format!(
                    "a cgroup ({}) restricts a system-mode PMC (SC, SS) to the cgroup's tasks \
                     on each CPU, not a {} PMC, which counts its target processes wherever \
                     they run: build with .system(cpu) or .per_cpu()",
                    path.display(),
                    self.mode
                ),
            ));
        }
        self.owner.binding().open_cgroup(path).map(Some)
    }

    /// What it allocates on `cpu` (in `cgroup`, when it has one).
    pub(super) fn allocation<'a>(&self, cpu: Cpu, cgroup: Option<&'a CgroupDir>) -> Allocation<'a> {
        let given = if self.mode.is_sampling() {
            self.period
        } else {
            self.initial
        };
        let count = given.unwrap_or_else(|| default_count(self.mode));
        Allocation {
            mode: self.mode,
            flags: self.flags,
            cpu,
            count,
            user_stack: self.user_stack,
            cgroup,
        }
    }

    /// Allocates the PMC (`pmc_allocate`): checks the mode, CPU and flags
    /// as hwpmc does, resolves the event, and opens a system PMC's CPU at
    /// once (a process PMC opens at attach or start).
    pub fn build(&self) -> Result<Pmc> {
        let spec = self.event.parse(&self.owner)?;
        let cgroup = self.open_cgroup()?;
        allocate(
            &self.owner,
            spec,
            &self.allocation(self.cpu, cgroup.as_ref()),
            Prefetched::default(),
        )
    }
}

/// The system mode of `mode`'s kind: SS for a sampling one, else SC.
fn system_mode(mode: Mode) -> Mode {
    if mode.is_sampling() {
        Mode::SS
    } else {
        Mode::SC
    }
}

/// The PMCs of an owner: its builder, and the positional libpmc-style
/// calls over it (the mode and CPU as `pmc_allocate(3)` takes them).
impl Owner {
    /// A PMC of this owner counting `event` (an event specifier, see
    /// [`crate::spec`], or a parsed [`EventSpec`]), to set up and
    /// [`build`](PmcBuilder::build): a process counter (TC) unless told
    /// otherwise.
    pub fn pmc(&self, event: impl Into<EventArg>) -> PmcBuilder {
        PmcBuilder::new(event, self)
    }

    /// Allocates a PMC of this owner (`pmc_allocate`) with no initial value
    /// / the default reload count: [`Owner::pmc`] with libpmc's
    /// positional arguments.
    pub fn allocate(&self, spec: &str, mode: Mode, flags: Flags, cpu: Cpu) -> Result<Pmc> {
        self.pmc(spec).positional(mode, cpu).flags(flags).build()
    }

    /// Allocates a PMC of this owner with a reload count (sampling) or
    /// initial value (counting), FreeBSD 12's sixth argument of
    /// `pmc_allocate` (see [`Pmc::set`]).
    pub fn allocate_with_count(
        &self,
        spec: &str,
        mode: Mode,
        flags: Flags,
        cpu: Cpu,
        count: u64,
    ) -> Result<Pmc> {
        self.pmc(spec)
            .positional(mode, cpu)
            .flags(flags)
            .count(count)
            .build()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::sim::SimBackend;

    /// Each way of building allocates the mode, CPU, flags and count the
    /// positional `allocate` would be given, on the owner it names.
    #[test]
    fn the_builder_allocates_what_allocate_would() {
        let owner = Owner::new(SimBackend::new(2));
        let tc = owner.pmc("task-clock").build().unwrap();
        assert_eq!(
            (tc.mode(), tc.cpu(), tc.reload_count()),
            (Mode::TC, Cpu::Any, 0)
        );
        let ts = owner
            .pmc("task-clock")
            .sampling(5_000)
            .flags(Flags::CALLCHAIN)
            .build()
            .unwrap();
        assert_eq!(
            (ts.mode(), ts.flags(), ts.reload_count()),
            (Mode::TS, Flags::CALLCHAIN, 5_000)
        );
        let sc = owner
            .pmc("task-clock")
            .system(1)
            .initial_value(7)
            .build()
            .unwrap();
        assert_eq!(
            (sc.mode(), sc.cpu(), sc.reload_count()),
            (Mode::SC, Cpu::Id(1), 7)
        );
        // The order of `system` and `sampling` does not matter.
        let ss = owner.pmc("task-clock").sampling(10).system(0);
        assert_eq!(ss.mode(), Mode::SS);
        let ss = ss.build().unwrap();
        // pmc_allocate's minimum reload count applies here too.
        assert_eq!(ss.reload_count(), crate::MIN_RELOAD_COUNT);
        assert_eq!(owner.pmcinfo().len(), 4);
        // The CPU is checked as allocate checks it.
        let e = owner.pmc("task-clock").system(9).build().unwrap_err();
        assert_eq!(e.errno(), libc::EINVAL, "{e}");
    }

    /// `.owner` moves the PMC to another owner: its pmcinfo lists it, the
    /// first owner's does not.
    #[test]
    fn the_owner_named_last_gets_the_pmc() {
        let first = Owner::new(SimBackend::new(1));
        let second = Owner::new(SimBackend::new(1));
        let pmc = first.pmc("task-clock").owner(&second).build().unwrap();
        assert!(pmc.owner().same_as(&second));
        assert_eq!(second.pmcinfo().len(), 1);
        assert!(first.pmcinfo().is_empty());
    }

    /// A parsed specifier builds the PMC its text builds; a text that does
    /// not parse fails at build, as `allocate` fails.
    #[test]
    fn an_event_is_text_or_a_parsed_spec() {
        let owner = Owner::new(SimBackend::new(1));
        let spec = crate::spec::parse("task-clock,usr").unwrap();
        let typed = owner.pmc(&spec).build().unwrap();
        let text = owner.pmc("task-clock,usr").build().unwrap();
        assert_eq!(typed.spec(), text.spec());
        assert_eq!(typed.info().name, "task-clock,usr");
        let e = owner.pmc("task-clock,nosuchqualifier").build().unwrap_err();
        assert!(matches!(e, Error::InvalidSpec { .. }), "{e}");
    }

    /// A user-stack copy needs a sampling mode.
    #[test]
    fn a_user_stack_copy_needs_a_sampling_mode() {
        let owner = Owner::new(SimBackend::new(1));
        let e = owner.pmc("task-clock").user_stack(64).build().unwrap_err();
        assert_eq!(e.errno(), libc::EINVAL, "{e}");
        let e = owner
            .pmc("task-clock")
            .sampling(1_000)
            .user_stack(7)
            .build()
            .unwrap_err();
        assert_eq!(e.errno(), libc::EINVAL, "{e}");
    }

    /// A cgroup restricts system modes only: a process PMC with one is
    /// EINVAL saying why, before any backend is asked; a backend that
    /// cannot count per cgroup (the simulator, as FreeBSD's and the
    /// portable one) refuses with EOPNOTSUPP naming the Linux extension,
    /// for one CPU and for every CPU, and nothing is left allocated.
    #[test]
    fn a_cgroup_is_for_system_pmcs_on_a_backend_that_has_them() {
        let owner = Owner::new(SimBackend::new(2));
        let e = owner.pmc("task-clock").cgroup("a").build().unwrap_err();
        assert!(matches!(e, Error::InvalidArgument { .. }), "{e:?}");
        assert!(e.to_string().contains(".system(cpu)"), "{e}");
        let e = owner
            .pmc("task-clock")
            .sampling(5_000)
            .cgroup("a")
            .build()
            .unwrap_err();
        assert_eq!(e.errno(), libc::EINVAL, "{e}");
        let e = owner
            .pmc("task-clock")
            .system(0)
            .cgroup("a")
            .build()
            .unwrap_err();
        assert!(matches!(e, Error::NotSupported { .. }), "{e:?}");
        assert_eq!(e.errno(), libc::EOPNOTSUPP, "{e}");
        assert!(e.to_string().contains("Linux extension"), "{e}");
        let e = owner
            .pmc("task-clock")
            .per_cpu()
            .cgroup("a")
            .build()
            .unwrap_err();
        assert_eq!(e.errno(), libc::EOPNOTSUPP, "{e}");
        assert!(owner.pmcinfo().is_empty());
    }
}
