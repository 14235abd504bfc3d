//! `write`, `rw` and `set`: the values a stopped PMC is given, per mode
//! as hwpmc_mod.c gives them.

use super::allocate::check_reload_count;
use super::{MIN_RELOAD_COUNT, Pmc};
use crate::{Error, Mode, Result, State};

impl Pmc {
    pub(super) fn require_stopped(&mut self, op: &'static str) -> Result<()> {
        self.settle()?;
        if self.state() == State::Running {
            return Err(Error::Busy {
                op: op.into(),
                why: "the PMC is running; stop it first".into(),
                source: None,
            });
        }
        Ok(())
    }

    /// Sets the value `read` returns (`pmc_write`, `PMC_OP_PMCRW` with a new
    /// value); the PMC must be stopped (EBUSY while running). Per mode, as
    /// hwpmc_mod.c does it:
    ///
    /// - **TC**: the PMC's value (`pm_savedvalue`); counting continues
    ///   from it at the next start.
    /// - **SC**: the counter itself, so `read` returns it while stopped;
    ///   but the next `start` writes the initial value (the value at the
    ///   last stop, or what [`Pmc::set`] gave) over it. *FreeBSD's
    ///   behaviour, kept: to resume an SC PMC from a value, use `set`.*
    /// - **TS**: the saved value that `read` returns whenever it does not
    ///   read the hardware. It is **not** the reload count (use
    ///   [`Pmc::set`] for that) and counts nothing.
    /// - **SS**: the counter (`read` returns it until the next start,
    ///   which reloads the sampling period).
    pub fn write(&mut self, value: u64) -> Result<()> {
        self.require_stopped("write")?;
        self.settle_saved()?;
        if self.mode == Mode::TC {
            let hardware = self.saved.value.wrapping_sub(self.offset);
            self.offset = value.wrapping_sub(hardware);
        }
        self.saved.value = value;
        self.publish();
        Ok(())
    }

    /// Reads the value and writes a new one in one step (`pmc_rw`); returns
    /// the previous value. The PMC must be stopped. See [`Pmc::read`] and
    /// [`Pmc::write`] for what the values mean in each mode.
    pub fn rw(&mut self, value: u64) -> Result<u64> {
        self.require_stopped("rw")?;
        let old = self.read()?;
        self.write(value)?;
        Ok(old)
    }

    /// `pmc_set` (`PMC_OP_PMCSETCOUNT`); the PMC must be stopped. Per mode:
    ///
    /// - **TS, SS**: the reload count (sample period); values below 1000
    ///   are raised to 1000 (hwpmc's `pmc_mincount`).
    /// - **SC**: the initial value, written to the counter at the next
    ///   start, so counting resumes from it.
    /// - **TC**: the initial value `pm_initial`, which hwpmc never uses for
    ///   a process PMC: **`read` does not change** (it returns
    ///   `pm_savedvalue`; use [`Pmc::write`]). *FreeBSD's behaviour, kept.*
    ///   [`Pmc::reload_count`] and `pmcinfo` show the value set.
    pub fn set(&mut self, value: u64) -> Result<()> {
        self.require_stopped("set")?;
        match self.mode {
            Mode::TS | Mode::SS => return self.set_reload(value),
            Mode::SC => self.initial = value,
            Mode::TC => {}
        }
        self.record.set_reload_count(value);
        Ok(())
    }

    fn set_reload(&mut self, value: u64) -> Result<()> {
        check_reload_count("set", value)?;
        self.record.set_reload_count(value.max(MIN_RELOAD_COUNT));
        Ok(())
    }
}
