//! `start`, `stop` and `read`: the hot path (invariant 11 of
//! ARCHITECTURE.md) and the general path it falls back to.

use super::Pmc;
use crate::backend::CounterValue;
use crate::{Error, Flags, Mode, Reading, Result, State};

impl Pmc {
    /// A state change on the hot path (start/stop): no lock, no allocation.
    #[inline]
    pub(super) fn set_state(&mut self, state: State) {
        self.record.store(state);
    }

    /// Finishes the stop a log close made from the owner's side (hwpmc
    /// stops the PMCs that write into a log as it is deconfigured): the
    /// saved value and the sources' last drain, as `stop` makes them.
    pub(super) fn settle(&mut self) -> Result<()> {
        if self.record.take_stopped_by_log() {
            self.set_state(State::Running);
            self.stop_general()?;
        }
        Ok(())
    }

    /// Starts the PMC (`pmc_start`). A process PMC that was never attached
    /// is attached to the caller first; one whose targets were all detached
    /// or exited is ESRCH ([`Error::NoTargets`]), except after the last
    /// target of a DESCENDANTS PMC was detached (see [`Pmc::detach`]).
    /// Starting a running PMC succeeds.
    #[inline]
    pub fn start(&mut self) -> Result<()> {
        if let Some(hot) = &self.hot
            && self.state() != State::Running
            && hot.enable()
        {
            // The count at stop goes on from the counter itself.
            self.saved_in_counter = false;
            self.set_state(State::Running);
            return Ok(());
        }
        self.start_general()
    }

    #[inline(never)]
    fn start_general(&mut self) -> Result<()> {
        // A log closed under it: that stop is finished first.
        self.settle()?;
        if self.state() == State::Running {
            return Ok(());
        }
        // pmc_start (hwpmc_mod.c): with no targets, a PMC never attached
        // attaches its owner; one whose targets were all detached or
        // exited is ESRCH.
        if self.mode.is_process() {
            self.prune_exited()?;
            if self.targets.is_empty() {
                if self.attach_done {
                    return Err(Error::NoTargets { id: self.id });
                }
                self.attach(0)?;
            }
        }
        self.require_log_if_needed()?;
        let sampling = self.mode.is_sampling();
        // pmc_start writes the system PMC's counter: SC with `pm_initial`
        // (so counting resumes from the value at stop, or from `set`), SS
        // with the reload count (a fresh sampling period).
        if let Some(s) = &mut self.system {
            let now = s.read()?;
            match self.mode {
                Mode::SC => {
                    self.offset = self.initial.wrapping_sub(now.scaled.unwrap_or(now.raw));
                }
                _ => self.sample_base = now.raw,
            }
        }
        self.saved_in_counter = false;
        for t in &mut self.targets {
            if sampling {
                t.counters.set_period(self.record.reload_count())?;
            }
            t.counters.enable()?;
        }
        if let Some(s) = &mut self.system {
            if sampling {
                s.set_period(self.record.reload_count())?;
            }
            s.enable()?;
        }
        self.set_state(State::Running);
        Ok(())
    }

    /// Stops the PMC (`pmc_stop`) and saves its value. Stopping a stopped
    /// PMC succeeds; stopping one that never started is EINVAL.
    #[inline]
    pub fn stop(&mut self) -> Result<()> {
        if let Some(hot) = &self.hot
            && self.state() == State::Running
            && hot.disable()
        {
            self.set_state(State::Stopped);
            self.saved_in_counter = true;
            return Ok(());
        }
        self.stop_general()
    }

    /// Reads the value at stop out of the disabled counter where the hot
    /// `stop` left it; what needs `saved` calls this first. A counter
    /// that never ran is [`Error::NotCounted`] here, as `read` reports it.
    pub(super) fn settle_saved(&mut self) -> Result<()> {
        if !self.saved_in_counter {
            return Ok(());
        }
        let value = match self.hot.as_ref().and_then(|h| h.read_scaled()) {
            Some(v) => v.wrapping_add(self.offset),
            None => self.read_live()?.value,
        };
        self.saved_in_counter = false;
        self.saved.value = value;
        Ok(())
    }

    #[inline(never)]
    pub(super) fn stop_general(&mut self) -> Result<()> {
        if self.record.take_stopped_by_log() {
            self.set_state(State::Running);
        }
        match self.state() {
            State::Running => {}
            State::Stopped => return Ok(()),
            _ => {
                return Err(Error::invalid("stop", "the PMC was never started"));
            }
        }
        let lean = self.single_target;
        for t in &mut self.targets {
            t.counters.disable()?;
        }
        if let Some(s) = &mut self.system {
            s.disable()?;
        }
        // What the stopped counters produced reaches the log now, and a
        // later start writes into the log configured then.
        for source in self.sources() {
            source.drain_stopped();
        }
        self.set_state(State::Stopped);
        match self.mode {
            // hwpmc keeps no value for a stopped TS PMC: `read` returns
            // `pm_savedvalue`, which only `write` sets.
            Mode::TS => return Ok(()),
            // The SS counter holds the events left in its period.
            Mode::SS => {
                let raw = self.sum_counters()?.raw;
                self.saved.value = self.events_to_next_sample(raw);
                return Ok(());
            }
            _ => {}
        }
        // The counters are disabled now, so this value stays what they
        // hold; `read_detailed` reads them again for raw and times.
        self.saved.value = match (lean, self.targets.first_mut()) {
            (true, Some(t)) => match t.counters.read_scaled()? {
                Some(v) => v.wrapping_add(self.offset),
                None => self.read_live()?.value,
            },
            _ => self.read_live()?.value,
        };
        // pmc_stop reads the SC counter back into `pm_initial`.
        if self.mode == Mode::SC {
            self.initial = self.saved.value;
        }
        Ok(())
    }

    /// What hwpmc's `pcd_read_pmc` returns for a sampling PMC: the events
    /// left before the next sample (the counter counts up from
    /// 2^width − reload count to the overflow).
    fn events_to_next_sample(&self, raw: u64) -> u64 {
        let period = self.record.reload_count().max(1);
        period - raw.wrapping_sub(self.sample_base) % period
    }

    /// The sum of every counter, detached targets included.
    fn sum_counters(&mut self) -> Result<CounterValue> {
        let mut sum = self.detached;
        for t in &mut self.targets {
            sum.accumulate(t.counters.read()?);
        }
        if let Some(s) = &mut self.system {
            sum.accumulate(s.read()?);
        }
        Ok(sum)
    }

    /// `pmc_read` of a sampling PMC (the `PMC_OP_PMCRW` case of
    /// hwpmc_mod.c): the hardware, i.e. the events left before the next
    /// sample, for a running SS PMC and a running TS PMC attached to its
    /// owner; otherwise the saved value, which only `write` sets.
    fn read_sampling(&mut self) -> Result<u64> {
        let hardware = self.state() == State::Running
            && (self.mode == Mode::SS || self.targets.iter().any(|t| t.pid == self.owner_pid));
        if !hardware {
            return Ok(self.saved.value);
        }
        let raw = self.sum_counters()?.raw;
        Ok(self.events_to_next_sample(raw))
    }

    #[inline]
    fn read_live(&mut self) -> Result<Reading> {
        let sum = self.sum_counters()?;
        let Some(scaled) = sum.scaled else {
            return Err(Error::NotCounted {
                what: format!("PMC {} ({})", self.id, self.spec.text),
                time_enabled: sum.time_enabled,
            });
        };
        Ok(Reading {
            value: scaled.wrapping_add(self.offset),
            raw: sum.raw,
            time_enabled: sum.time_enabled,
            time_running: sum.time_running,
            multiplexed: sum.time_running < sum.time_enabled,
        })
    }

    /// Reads the value (`pmc_read`, `PMC_OP_PMCRW` of hwpmc_mod.c). Per mode:
    ///
    /// - **TC**: the count (plus what [`Pmc::write`] set), live while
    ///   running, the value at `stop` otherwise. hwpmc reads the hardware
    ///   only for a PMC attached to its owner and otherwise returns the
    ///   value as of the targets' last context switch; `pmc` always reads
    ///   the current count, which is never older.
    /// - **SC**: the count on the CPU, starting from the initial value
    ///   (allocate's count or [`Pmc::set`]) at each start.
    /// - **TS** (*FreeBSD's surprising rule, kept*): not a count. While
    ///   running and attached to its owner, the events left before the
    ///   next sample (between 1 and the reload count); otherwise the value
    ///   [`Pmc::write`] last stored (0 at first).
    /// - **SS**: the events left before the next sample, also after `stop`.
    ///
    /// Multiplexed counts are scaled to the enabled time; a counting PMC
    /// that was enabled but never scheduled is an error
    /// ([`Error::NotCounted`]), never a silent 0.
    #[inline]
    pub fn read(&mut self) -> Result<u64> {
        // The call profilers make in loops: a running PMC that is one plain
        // counter reads it directly; anything else (or a failed read, to
        // report it in full) takes the general path.
        if let Some(hot) = &self.hot
            && self.state() == State::Running
            && let Some(value) = hot.read_scaled()
        {
            return Ok(value.wrapping_add(self.offset));
        }
        self.read_general()
    }

    #[inline(never)]
    fn read_general(&mut self) -> Result<u64> {
        self.settle()?;
        if self.mode.is_sampling() {
            return self.read_sampling();
        }
        // One running process target and nothing detached: the backend's
        // scaled-only read.
        if self.state() == State::Running
            && self.single_target
            && let Some(target) = self.targets.first_mut()
        {
            return match target.counters.read_scaled()? {
                Some(v) => Ok(v.wrapping_add(self.offset)),
                None => self.read_live().map(|r| r.value),
            };
        }
        if self.state() != State::Running {
            self.settle_saved()?;
            return Ok(self.saved.value);
        }
        Ok(self.read_live()?.value)
    }

    /// Like [`Pmc::read`], with the raw count and the enabled/running times.
    pub fn read_detailed(&mut self) -> Result<Reading> {
        self.settle()?;
        self.settle_saved()?;
        match self.state() {
            // Stopped counters are disabled: reading them gives the counts
            // they held at stop, with the raw count and times; `value` is
            // what `read` returns.
            State::Running | State::Stopped => {
                let mut r = match self.read_live() {
                    Err(Error::NotCounted { .. }) if self.mode.is_sampling() => Reading {
                        multiplexed: true,
                        ..self.saved
                    },
                    other => other?,
                };
                if self.mode.is_sampling() || self.state() == State::Stopped {
                    r.value = self.read()?;
                }
                Ok(r)
            }
            _ => Ok(self.saved),
        }
    }

    /// hwpmc's rule: a system sampling PMC, a process sampling PMC
    /// attached to another process, and the `LOG_PROC*` flags need a log.
    fn require_log_if_needed(&self) -> Result<()> {
        let why = if self.mode == Mode::SS {
            Some("a system sampling PMC writes its samples to the log".to_string())
        } else if self.mode == Mode::TS && self.targets.iter().any(|t| t.pid != self.owner_pid) {
            Some("a process sampling PMC attached to another process logs its samples".into())
        } else if self
            .flags
            .intersects(Flags::LOG_PROCEXIT | Flags::LOG_PROCCSW)
        {
            Some(format!("{:?} writes process events to the log", self.flags))
        } else {
            None
        };
        // Only PMCs that need a log look for one (a lock).
        match why {
            Some(why) if !self.owner.log_configured() => Err(Error::LogRequired {
                op: "start".into(),
                why,
            }),
            _ => Ok(()),
        }
    }
}
