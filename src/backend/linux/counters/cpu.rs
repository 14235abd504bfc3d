//! A system-wide target: one CPU, one fd per core PMU that counts there.

use std::sync::Arc;

use pmc_linux::cgroup::Cgroup;
use pmc_linux::event::{Event, Target};

use super::open::{open_one, open_one_in_cgroup};
use super::rings::map_rings;
use super::{OpenPlan, for_each, read_events};
use crate::backend::linux::sampling::LinuxSource;
use crate::backend::source::SampleSource;
use crate::backend::{CounterValue, Counters};
use crate::{Error, Result};

/// A system-wide counter on one CPU (one fd per core PMU).
#[derive(Debug)]
pub(in crate::backend::linux) struct CpuCounters {
    events: Arc<[Event]>,
    rings: Option<Arc<LinuxSource>>,
}

impl CpuCounters {
    /// Opens `event` on `cpu`, counting only the tasks of `cgroup` if one
    /// is given (a Linux extension: perf's `-G`).
    pub(in crate::backend::linux) fn open(
        event: &OpenPlan,
        cpu: u32,
        cgroup: Option<&Cgroup>,
    ) -> Result<CpuCounters> {
        // Each attr counts only on its PMU's CPUs (hybrid core types,
        // uncore cpumasks).
        let mut events = Vec::with_capacity(event.attrs.len());
        for (attr, cpus) in event.attrs.iter().zip(&event.cpus) {
            if cpus.as_ref().is_some_and(|c| !c.contains(&cpu)) {
                continue;
            }
            events.push(match cgroup {
                Some(cgroup) => open_one_in_cgroup(attr, cgroup, cpu, event)?,
                None => open_one(attr, Target::cpu(cpu), event)?,
            });
        }
        if events.is_empty() {
            let cpus: Vec<u32> = event.cpus.iter().flatten().flatten().copied().collect();
            return Err(Error::Unavailable {
                what: format!("{} on CPU {cpu}", event.description),
                why: format!("its PMU counts only on CPUs {cpus:?}; choose one of them"),
                reason: None,
                source: None,
            });
        }
        let events = Arc::<[Event]>::from(events);
        // Only the rings (logging events) need a CPU per event.
        let rings = match event.log {
            Some(_) => map_rings(event, &vec![cpu as i32; events.len()], &events, &[], None)?,
            None => None,
        };
        Ok(CpuCounters { events, rings })
    }
}

impl Counters for CpuCounters {
    fn enable(&mut self) -> Result<()> {
        for_each(&self.events, Event::enable)
    }

    fn disable(&mut self) -> Result<()> {
        for_each(&self.events, Event::disable)?;
        Ok(())
    }

    fn read(&mut self) -> Result<CounterValue> {
        read_events(&self.events, &[])
    }

    fn set_period(&mut self, period: u64) -> Result<()> {
        if self.events.first().is_some_and(|e| e.is_sampling()) {
            for_each(&self.events, |e| e.set_period(period))?;
        }
        Ok(())
    }

    fn handles(&self) -> usize {
        self.events.len()
    }

    fn sample_source(&self) -> Option<Arc<dyn SampleSource>> {
        self.rings.clone().map(|r| r as Arc<dyn SampleSource>)
    }

    fn fd(&self) -> Option<std::os::fd::BorrowedFd<'_>> {
        use std::os::fd::AsFd;
        match &*self.events {
            [one] => Some(one.as_fd()),
            _ => None,
        }
    }
}
