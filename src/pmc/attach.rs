//! Targets: `attach`, `detach`, and the exited targets leaving the list.

use super::{Pmc, Target};
use crate::{Error, Flags, Result, State};

impl Pmc {
    fn resolve_pid(&self, pid: u32) -> u32 {
        if pid == 0 { self.owner_pid } else { pid }
    }

    /// Attaches a process PMC to a process (`pmc_attach`); pid 0 is the
    /// caller. Every existing thread is covered, and new threads as they are
    /// created; with [`Flags::DESCENDANTS`], existing and future child
    /// processes too.
    ///
    /// ```
    /// use pmc::Pmc;
    ///
    /// // A child of ours, in user mode: perf_event_paranoid 2 allows it.
    /// let mut child = std::process::Command::new("sleep").arg("0.2").spawn().unwrap();
    /// let mut pmc = Pmc::builder("task-clock,usr").build()?;
    /// pmc.attach(child.id())?;
    /// pmc.start()?;
    /// child.wait().unwrap();
    /// pmc.stop()?;
    /// println!("sleep ran {} ns in user mode", pmc.read()?);
    /// # Ok::<(), pmc::Error>(())
    /// ```
    pub fn attach(&mut self, pid: u32) -> Result<()> {
        self.attach_target(pid, false)
    }

    /// Attaches, as [`Pmc::attach`], to a process held before an `exec`
    /// (a command being started, as pmcstat starts one): the PMC counts
    /// from that exec on, so nothing the process does before it — the
    /// starting program's own loading, its wait — is in the count.
    ///
    /// Start the PMC before letting the process exec: the first
    /// [`Pmc::start`] arms the counters and the exec starts them (on Linux,
    /// perf_event's `enable_on_exec`). A backend without such a trigger
    /// (the portable and FreeBSD ones) attaches as [`Pmc::attach`] does and
    /// counts from the start, as FreeBSD's pmcstat does.
    pub fn attach_at_exec(&mut self, pid: u32) -> Result<()> {
        self.attach_target(pid, true)
    }

    fn attach_target(&mut self, pid: u32, at_exec: bool) -> Result<()> {
        if self.mode.is_system() {
            return Err(Error::invalid(
                "attach",
                format!(
                    "{} is a system-mode PMC; only process PMCs (TC, TS) attach",
                    self.mode
                ),
            ));
        }
        self.settle()?;
        if self.state() == State::Running {
            return Err(Error::Busy {
                op: "attach".into(),
                why: "the PMC is running; stop it before attaching".into(),
                source: None,
            });
        }
        let pid = self.resolve_pid(pid);
        self.prune_exited()?;
        if !self.owner_or_exists(pid) {
            return Err(Error::NoSuchProcess {
                op: "attach".into(),
                pid,
            });
        }
        // No refusal after a granted get_msr: pmc_attach_process's EPERM
        // tests the PP flag in pm_flags, where GETMSR never sets it
        // (hwpmc_mod.c; see the conformance scenario
        // get_msr_returns_the_index_and_leaves_attach_open).
        self.check_overlap(pid)?;
        let descendants = self.flags.contains(Flags::DESCENDANTS);
        let counters = if at_exec {
            self.event.open_process_at_exec(pid, descendants)?
        } else {
            self.event.open_process(pid, descendants)?
        };
        let source = match counters.sample_source() {
            Some(source) => Some(
                self.owner
                    .register_source(self.id.0, self.mode, self.flags, source)?,
            ),
            None => None,
        };
        self.targets.push(Target {
            pid,
            source,
            counters,
        });
        if self.owner.log_configured() {
            let path = self
                .owner
                .binding()
                .executable_path(pid)
                .unwrap_or_default();
            self.owner
                .write_if_logging(|| crate::log::LogRecord::PmcAttach {
                    pmcid: self.id.0,
                    pid,
                    path,
                });
        }
        self.attach_done = true;
        self.publish();
        Ok(())
    }

    /// EEXIST when `pid` is already monitored by this PMC: a target, or
    /// with DESCENDANTS inside a target's tree or the root of a tree that
    /// holds a target (`pmc_attach_one_process` meets the process already
    /// at its row). Nothing is opened before this check, so a refused
    /// attach leaves the PMC as it was.
    fn check_overlap(&self, pid: u32) -> Result<()> {
        if self.targets.iter().any(|t| t.pid == pid) {
            return Err(Error::AlreadyAttached { pid });
        }
        if !self.flags.contains(Flags::DESCENDANTS) {
            return Ok(());
        }
        let new_tree = self.owner.binding().descendants(pid);
        for t in &self.targets {
            if new_tree.contains(&t.pid) {
                return Err(Error::AlreadyAttached { pid: t.pid });
            }
            if self.owner.binding().descendants(t.pid).contains(&pid) {
                return Err(Error::AlreadyAttached { pid });
            }
        }
        Ok(())
    }

    /// Targets that exited leave the list (hwpmc unlinks them at exit,
    /// `pmc_process_exit`); what they counted stays in the value.
    pub(super) fn prune_exited(&mut self) -> Result<()> {
        let before = self.targets.len();
        let mut i = 0;
        while i < self.targets.len() {
            if self.owner_or_exists(self.targets[i].pid) {
                i += 1;
                continue;
            }
            let mut gone = self.targets.remove(i);
            let value = gone.counters.read()?;
            self.detached.accumulate(value);
        }
        if self.targets.len() != before {
            self.publish();
        }
        Ok(())
    }

    /// Detaches a process (`pmc_detach`). The counts it accumulated stay in
    /// the PMC's value. A live process that no PMC of this process monitors
    /// is ESRCH, one that another of its PMCs monitors EINVAL
    /// (`pmc_detach_one_process`). Detaching the last target of a
    /// DESCENDANTS PMC lets the next `start` attach the owner again, as
    /// `pmc_detach_process` clears `PMC_F_ATTACH_DONE` only then.
    pub fn detach(&mut self, pid: u32) -> Result<()> {
        // hwpmc_mod.c pmc_do_op_pmcdetach has no mode check: a system PMC
        // has no targets, so the rules below make it ESRCH or EINVAL.
        let pid = self.resolve_pid(pid);
        self.settle()?;
        self.prune_exited()?;
        let Some(i) = self.targets.iter().position(|t| t.pid == pid) else {
            // pmc_do_op_pmcdetach: a process that does not exist (or is
            // exiting) is ESRCH; pmc_detach_one_process: one no PMC
            // monitors is ESRCH, one another PMC monitors is EINVAL.
            if !self.owner.binding().process_exists(pid) {
                return Err(Error::NoSuchProcess {
                    op: "detach".into(),
                    pid,
                });
            }
            let other = self.owner.registry().other_monitor(self.id, pid);
            return Err(match other {
                Some(other) => Error::invalid(
                    "detach",
                    format!(
                        "process {pid} is monitored by PMC {other} of this process, not by PMC {}",
                        self.id
                    ),
                ),
                None => Error::NotMonitored { pid },
            });
        };
        let mut target = self.targets.remove(i);
        if self.state() == State::Running {
            target.counters.disable()?;
        }
        let value = target.counters.read()?;
        self.detached.accumulate(value);
        // Its last records reach the log before the PMCDETACH.
        drop(target);
        self.owner
            .write_if_logging(|| crate::log::LogRecord::PmcDetach {
                pmcid: self.id.0,
                pid,
            });
        // hwpmc_mod.c pmc_detach_process: detaching the last tree of a
        // DESCENDANTS PMC clears PMC_F_ATTACH_DONE, so its next start
        // attaches the owner again (a plain PMC's start is ESRCH then).
        // FreeBSD's asymmetry, kept.
        if self.flags.contains(Flags::DESCENDANTS) && self.targets.is_empty() {
            self.attach_done = false;
        }
        self.publish();
        Ok(())
    }
}
