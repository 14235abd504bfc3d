//! A resolved event as the backend seam's [`PreparedEvent`]: what the
//! resolver made of a specifier (class, capabilities) and the plan the
//! counters open from it. The resolver builds it; it opens counters;
//! counters know nothing of it.

use std::sync::atomic::{AtomicBool, Ordering};

use pmc_linux::attr::{Attr, EventConfig, Software};

use crate::backend::{CgroupDir, Counters, PreparedEvent};
use crate::{Capabilities, Class, Result};

use super::counters::{self, CpuCounters, OpenPlan, ProcessCounters, Start};

/// A resolved event: its class row and the counters' plan.
#[derive(Debug)]
pub(super) struct LinuxEvent {
    /// What each target opens.
    pub(super) plan: OpenPlan,
    pub(super) class: Class,
    pub(super) caps: Capabilities,
    /// Its trial open succeeded once: a preparation its owner keeps is
    /// not tried again (as the backend's trial cache would answer).
    pub(super) tried: AtomicBool,
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
        self.plan.description.to_string()
    }

    fn counts_nanoseconds(&self) -> bool {
        // Decided from the attrs opened, so every spelling of a clock
        // (`cpu-clock:u`, `SOFT-CLOCK.PROF`, `software/config=1/`) is one.
        let clock = |attr: &Attr| {
            [Software::CpuClock, Software::TaskClock].iter().any(|&s| {
                let c = Attr::new(EventConfig::Software(s));
                attr.type_id() == c.type_id() && attr.get_config() == c.get_config()
            })
        };
        !self.plan.attrs.is_empty() && self.plan.attrs.iter().all(clock)
    }

    fn serves_every_cpu(&self) -> bool {
        // Attrs, CPU lists and the log plan: nothing is one PMC's.
        true
    }

    fn open_process(&self, pid: u32, descendants: bool) -> Result<Box<dyn Counters>> {
        Ok(Box::new(ProcessCounters::open(
            &self.plan,
            pid,
            descendants,
            Start::AtEnable,
        )?))
    }

    fn open_process_at_exec(&self, pid: u32, descendants: bool) -> Result<Box<dyn Counters>> {
        Ok(Box::new(ProcessCounters::open(
            &self.plan,
            pid,
            descendants,
            Start::AtExec,
        )?))
    }

    fn open_cpu(&self, cpu: u32) -> Result<Box<dyn Counters>> {
        Ok(Box::new(CpuCounters::open(&self.plan, cpu, None)?))
    }

    fn open_cpu_in_cgroup(&self, cpu: u32, cgroup: &CgroupDir) -> Result<Box<dyn Counters>> {
        let CgroupDir::PerfEvent(cgroup) = cgroup;
        Ok(Box::new(CpuCounters::open(&self.plan, cpu, Some(cgroup))?))
    }

    fn trial_open(&self) -> Result<()> {
        if self.tried.load(Ordering::Relaxed) {
            return Ok(());
        }
        counters::trial_open(&self.plan)?;
        self.tried.store(true, Ordering::Relaxed);
        Ok(())
    }

    fn reusable(&self) -> bool {
        // Counting events of the machine description read once; not a
        // tracepoint (tracefs ids change as dynamic events come and go),
        // a probe (its file's symbols), nor a logging plan (its ring size
        // follows the caller's CAP_IPC_LOCK at prepare).
        let p = &self.plan;
        !matches!(
            self.class,
            Class::Tracepoint | Class::Uprobe | Class::Kprobe
        ) && p.log.is_none()
            && p.slices.is_none()
            && p.string.is_none()
            && p.filter.is_none()
    }
}
