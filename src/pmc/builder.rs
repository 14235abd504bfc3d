//! Builders for [`Pmc`]: the mode follows from what is built, so a process
//! PMC never gets a CPU and a system PMC always has one.
//!
//! Not run as a doctest: `instructions` and `cycles` need a hardware PMU,
//! and the system PMCs root or `perf_event_paranoid` ≤ 0.
//!
//! ```no_run
//! use pmc::{Flags, Pmc};
//!
//! // A process counter (TC), started on the caller.
//! let mut tc = Pmc::process("instructions,usr").allocate()?;
//! // A process sampler (TS) every 100 000 events, with callchains.
//! let ts = Pmc::process("cpu-clock").sampling(100_000).flags(Flags::CALLCHAIN).allocate()?;
//! // A system counter (SC) on CPU 0, and a system sampler (SS) on CPU 1.
//! let sc = Pmc::system("cycles", 0).allocate()?;
//! let ss = Pmc::system("cycles", 1).sampling(1_000_000).allocate()?;
//! tc.start()?;
//! # drop((ts, sc, ss));
//! # Ok::<(), pmc::Error>(())
//! ```

use super::{Pmc, default_count};
use crate::{Cpu, Flags, Mode, Owner, Result};

/// A process PMC being built: TC, or TS with [`ProcessPmc::sampling`].
#[derive(Clone, Debug)]
#[must_use = "a builder does nothing until `allocate`"]
pub struct ProcessPmc<'a> {
    spec: &'a str,
    common: Common<'a>,
}

/// A system PMC being built on one CPU: SC, or SS with
/// [`SystemPmc::sampling`].
#[derive(Clone, Debug)]
#[must_use = "a builder does nothing until `allocate`"]
pub struct SystemPmc<'a> {
    spec: &'a str,
    cpu: u32,
    common: Common<'a>,
}

/// What both builders set.
#[derive(Clone, Debug, Default)]
struct Common<'a> {
    flags: Flags,
    /// `Some`: sampling, with this reload count.
    period: Option<u64>,
    /// The initial value of a counting PMC.
    initial: Option<u64>,
    owner: Option<&'a Owner>,
    /// Bytes of user stack each sample copies, if asked.
    user_stack: Option<u32>,
}

impl Common<'_> {
    fn mode(&self, counting: Mode, sampling: Mode) -> Mode {
        if self.period.is_some() {
            sampling
        } else {
            counting
        }
    }

    fn allocate(&self, spec: &str, mode: Mode, cpu: Cpu) -> Result<Pmc> {
        let count = self
            .period
            .or(self.initial)
            .unwrap_or_else(|| default_count(mode));
        let owner = self.owner.unwrap_or_else(|| Owner::global());
        match self.user_stack {
            Some(bytes) => {
                Pmc::allocate_with_user_stack(owner, spec, mode, self.flags, cpu, count, bytes)
            }
            None => owner.allocate_with_count(spec, mode, self.flags, cpu, count),
        }
    }
}

impl Pmc {
    /// Builds a process PMC counting `spec` (TC; TS with
    /// [`ProcessPmc::sampling`]): attach it, or start it on the caller.
    ///
    /// ```
    /// use pmc::Pmc;
    ///
    /// let mut pmc = Pmc::process("task-clock,usr").allocate()?;
    /// pmc.start()?; // never attached: counts the caller
    /// let sum: u64 = (0..1_000_000u64).map(std::hint::black_box).sum();
    /// pmc.stop()?;
    /// assert!(pmc.read()? > 0, "{sum}");
    /// # Ok::<(), pmc::Error>(())
    /// ```
    pub fn process(spec: &str) -> ProcessPmc<'_> {
        ProcessPmc {
            spec,
            common: Common::default(),
        }
    }

    /// Builds a system PMC counting `spec` on `cpu` (SC; SS with
    /// [`SystemPmc::sampling`]).
    ///
    /// Not run as a doctest: counting a whole CPU needs root, CAP_PERFMON
    /// or `perf_event_paranoid` ≤ 0.
    ///
    /// ```no_run
    /// use pmc::Pmc;
    ///
    /// // Everything CPU 0 runs, in CPU time (ns).
    /// let mut pmc = Pmc::system("cpu-clock", 0).allocate()?;
    /// pmc.start()?;
    /// std::thread::sleep(std::time::Duration::from_millis(10));
    /// pmc.stop()?;
    /// println!("CPU 0 ran {} ns", pmc.read()?);
    /// # Ok::<(), pmc::Error>(())
    /// ```
    pub fn system(spec: &str, cpu: u32) -> SystemPmc<'_> {
        SystemPmc {
            spec,
            cpu,
            common: Common::default(),
        }
    }
}

macro_rules! common_setters {
    ($builder:ident) => {
        impl<'a> $builder<'a> {
            /// Samples every `period` events (the reload count) instead of
            /// counting; raised to [`crate::MIN_RELOAD_COUNT`] as hwpmc does.
            pub fn sampling(mut self, period: u64) -> Self {
                self.common.period = Some(period);
                self
            }

            /// Copies the user registers and `bytes` of user stack with
            /// each sample (a multiple of 8 up to
            /// [`crate::sample::MAX_USER_STACK_BYTES`]; perf's default is
            /// [`crate::sample::DEFAULT_USER_STACK_BYTES`]), for the owner
            /// to unwind with the objects' CFI into the sample's user call
            /// chain as it writes the log, or for the embedder's own
            /// [`crate::sample::StackUnwinder`]: `--call-graph dwarf`.
            /// Sampling modes only; overrides [`Owner::set_user_stack`].
            pub fn user_stack(mut self, bytes: u32) -> Self {
                self.common.user_stack = Some(bytes);
                self
            }

            /// Adds `flags` (`PMC_F_*`).
            pub fn flags(mut self, flags: Flags) -> Self {
                self.common.flags |= flags;
                self
            }

            /// The value a counting PMC starts from (see [`Pmc::set`]);
            /// ignored once [`Self::sampling`] is set.
            pub fn initial_value(mut self, value: u64) -> Self {
                self.common.initial = Some(value);
                self
            }

            /// Allocates on `owner` instead of the process's
            /// ([`Owner::global`]).
            pub fn owner(mut self, owner: &'a Owner) -> Self {
                self.common.owner = Some(owner);
                self
            }
        }
    };
}

common_setters!(ProcessPmc);
common_setters!(SystemPmc);

impl ProcessPmc<'_> {
    /// The mode this builder allocates: TC, or TS when sampling.
    pub fn mode(&self) -> Mode {
        self.common.mode(Mode::TC, Mode::TS)
    }

    /// Allocates it (`pmc_allocate` with `PMC_CPU_ANY`).
    pub fn allocate(&self) -> Result<Pmc> {
        self.common.allocate(self.spec, self.mode(), Cpu::Any)
    }
}

impl SystemPmc<'_> {
    /// The mode this builder allocates: SC, or SS when sampling.
    pub fn mode(&self) -> Mode {
        self.common.mode(Mode::SC, Mode::SS)
    }

    /// Allocates it (`pmc_allocate` on its CPU).
    pub fn allocate(&self) -> Result<Pmc> {
        self.common
            .allocate(self.spec, self.mode(), Cpu::Id(self.cpu))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::sim::SimBackend;

    /// Each builder allocates the mode, CPU, flags and count the positional
    /// `allocate` would be given, on the owner it names.
    #[test]
    fn builders_allocate_what_allocate_would() {
        let owner = Owner::new(SimBackend::new(2));
        let tc = Pmc::process("task-clock").owner(&owner).allocate().unwrap();
        assert_eq!(
            (tc.mode(), tc.cpu(), tc.reload_count()),
            (Mode::TC, Cpu::Any, 0)
        );
        let ts = Pmc::process("task-clock")
            .sampling(5_000)
            .flags(Flags::CALLCHAIN)
            .owner(&owner)
            .allocate()
            .unwrap();
        assert_eq!(
            (ts.mode(), ts.flags(), ts.reload_count()),
            (Mode::TS, Flags::CALLCHAIN, 5_000)
        );
        let sc = Pmc::system("task-clock", 1)
            .initial_value(7)
            .owner(&owner)
            .allocate()
            .unwrap();
        assert_eq!(
            (sc.mode(), sc.cpu(), sc.reload_count()),
            (Mode::SC, Cpu::Id(1), 7)
        );
        let ss = Pmc::system("task-clock", 0).sampling(10).owner(&owner);
        assert_eq!(ss.mode(), Mode::SS);
        let ss = ss.allocate().unwrap();
        // pmc_allocate's minimum reload count applies here too.
        assert_eq!(ss.reload_count(), crate::MIN_RELOAD_COUNT);
        assert_eq!(owner.pmcinfo().len(), 4);
        // The CPU is checked as allocate checks it.
        let e = Pmc::system("task-clock", 9)
            .owner(&owner)
            .allocate()
            .unwrap_err();
        assert_eq!(e.errno(), libc::EINVAL, "{e}");
    }
}
