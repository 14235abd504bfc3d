//! `Pmc::builder` on the process's owner, and the positional libpmc-style
//! calls (`pmc_allocate(3)`) as thin wrappers over it.

use crate::pmc::{EventArg, PmcBuilder};
use crate::{Cpu, Flags, Mode, Owner, Pmc, Result};

impl Pmc {
    /// A PMC of the process's owner ([`Owner::global`]) counting `event`
    /// (an event specifier, see [`crate::spec`], or a parsed
    /// [`EventSpec`](crate::spec::EventSpec)): a process counter (TC)
    /// unless told otherwise (see [`PmcBuilder`]; [`PmcBuilder::owner`]
    /// or [`Owner::pmc`] for another owner).
    ///
    /// ```
    /// use pmc::Pmc;
    ///
    /// // A process counter (TC) of user-mode CPU time in nanoseconds: a
    /// // software event, so it counts even without a hardware PMU.
    /// let mut pmc = Pmc::builder("task-clock,usr").build()?;
    /// pmc.attach(0)?; // the calling process
    /// pmc.start()?;
    /// let sum: u64 = (0..1_000_000u64).map(std::hint::black_box).sum();
    /// pmc.stop()?;
    /// assert!(pmc.read()? > 0, "{sum}");
    /// pmc.release()?;
    /// # Ok::<(), pmc::Error>(())
    /// ```
    pub fn builder(event: impl Into<EventArg>) -> PmcBuilder {
        Owner::global().pmc(event)
    }

    /// Allocates a PMC (`pmc_allocate`) of the process's owner
    /// ([`Owner::global`]) with no initial value / the default reload
    /// count: [`Pmc::builder`] with libpmc's positional arguments.
    ///
    /// `spec` is an event specifier (see [`crate::spec`]); `cpu` must be
    /// [`Cpu::Any`] for the process modes (TC, TS) and a CPU for the system
    /// modes (SC, SS).
    ///
    /// ```
    /// use pmc::{Cpu, Flags, Mode, Pmc};
    ///
    /// let mut pmc = Pmc::allocate("task-clock,usr", Mode::TC, Flags::empty(), Cpu::Any)?;
    /// pmc.start()?; // attaches to the calling process
    /// let work: u64 = (0..1_000_000u64).map(std::hint::black_box).sum();
    /// pmc.stop()?;
    /// assert!(pmc.read()? > 0, "{work}");
    /// # Ok::<(), pmc::Error>(())
    /// ```
    pub fn allocate(spec: &str, mode: Mode, flags: Flags, cpu: Cpu) -> Result<Pmc> {
        Owner::global().allocate(spec, mode, flags, cpu)
    }

    /// Allocates a PMC with FreeBSD 12's sixth argument: the reload count
    /// (sample period) of a sampling PMC (values below 1000 are raised to
    /// 1000, as hwpmc does), or the initial value of a counting PMC, which
    /// an SC PMC starts counting from and a TC PMC ignores, as hwpmc does
    /// (see [`Pmc::set`]).
    pub fn allocate_with_count(
        spec: &str,
        mode: Mode,
        flags: Flags,
        cpu: Cpu,
        count: u64,
    ) -> Result<Pmc> {
        Owner::global().allocate_with_count(spec, mode, flags, cpu, count)
    }
}
