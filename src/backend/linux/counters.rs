//! Open counters of one target.
//!
//! A process target is covered by one fd per existing thread (perf events
//! are per thread), each with `inherit` so that threads created later are
//! counted too; without DESCENDANTS `inherit_thread` keeps child processes
//! out, as hwpmc does. With DESCENDANTS the existing descendant processes
//! get fds of their own and future children are inherited.

use pmc_linux::attr::{Attr, AttrBit};
use pmc_linux::event::{Event, OpenFlags, Target};
use pmc_linux::system;

use super::from_linux;
use super::resolve::LinuxEvent;
use crate::backend::{CounterValue, Counters};
use crate::{Error, Result};

fn open_one(attr: &Attr, target: Target, event: &LinuxEvent) -> Result<Event> {
    let opened = match &event.string {
        Some(s) => Event::open_with_string(attr, s, target, None, OpenFlags::empty()),
        None => Event::open(attr, target, None, OpenFlags::empty()),
    };
    let filter = event.filter.as_deref();
    let event = opened.map_err(from_linux)?;
    if let Some(f) = filter {
        event.set_filter(f).map_err(from_linux)?;
    }
    Ok(event)
}

#[inline]
fn read_events(events: &[Event]) -> Result<CounterValue> {
    let mut sum = CounterValue::ZERO;
    for e in events {
        let c = e.read_timed().map_err(from_linux)?;
        sum.accumulate(CounterValue {
            raw: c.value,
            time_enabled: c.time_enabled,
            time_running: c.time_running,
            scaled: c.scaled(),
        });
    }
    Ok(sum)
}

fn for_each(events: &[Event], f: impl Fn(&Event) -> pmc_linux::error::Result<()>) -> Result<()> {
    events.iter().try_for_each(|e| f(e).map_err(from_linux))
}

/// The counters of a process tree.
#[derive(Debug)]
pub(super) struct ProcessCounters {
    events: Vec<Event>,
}

impl ProcessCounters {
    pub(super) fn open(event: &LinuxEvent, pid: u32, descendants: bool) -> Result<ProcessCounters> {
        let root = i32::try_from(pid).map_err(|_| Error::NoSuchProcess { op: "attach", pid })?;
        let mut processes = vec![root];
        if descendants {
            processes.extend(system::descendants_of(root));
        }
        let mut events = Vec::new();
        for p in processes {
            let tids = match system::threads_of(p) {
                Ok(t) => t,
                // A descendant may exit while we look; the root must exist.
                Err(_) if p != root => continue,
                Err(_) => return Err(Error::NoSuchProcess { op: "attach", pid }),
            };
            for tid in tids {
                for attr in &event.attrs {
                    match open_with_fallback(attr, Target::task(tid), event) {
                        Ok(e) => events.push(e),
                        // The thread exited between listing and opening.
                        Err(e) if e.os_errno() == Some(libc::ESRCH) && tid != p => continue,
                        Err(e) => return Err(e),
                    }
                }
            }
        }
        if events.is_empty() {
            return Err(Error::NoSuchProcess { op: "attach", pid });
        }
        Ok(ProcessCounters { events })
    }
}

/// Opens, retrying without `inherit_thread` on kernels older than 5.13 that
/// reject it (their inherited counters then include child processes too).
fn open_with_fallback(attr: &Attr, target: Target, event: &LinuxEvent) -> Result<Event> {
    match open_one(attr, target, event) {
        Err(e) if e.os_errno() == Some(libc::EINVAL) && attr.is_set(AttrBit::INHERIT_THREAD) => {
            open_one(&attr.inherit_thread(false), target, event)
        }
        other => other,
    }
}

impl Counters for ProcessCounters {
    fn enable(&mut self) -> Result<()> {
        for_each(&self.events, Event::enable)
    }

    fn disable(&mut self) -> Result<()> {
        for_each(&self.events, Event::disable)
    }

    fn read(&mut self) -> Result<CounterValue> {
        read_events(&self.events)
    }

    #[inline]
    fn read_scaled(&mut self) -> Result<Option<u64>> {
        match self.events.as_slice() {
            [one] => {
                let c = one.read_timed().map_err(from_linux)?;
                Ok(c.scaled())
            }
            _ => Ok(read_events(&self.events)?.scaled),
        }
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

    fn rdpmc_index(&self) -> Option<u32> {
        // Only a single-thread target can be read with rdpmc, and only on
        // that thread: the page's index is then this thread's counter.
        let [event] = self.events.as_slice() else {
            return None;
        };
        let caps = pmc_linux::selfmon::UserPage::map(event).ok()?.caps();
        (caps.user_rdpmc && caps.index != 0).then(|| caps.index - 1)
    }
}

/// A system-wide counter on one CPU (one fd per core PMU).
#[derive(Debug)]
pub(super) struct CpuCounters {
    events: Vec<Event>,
}

impl CpuCounters {
    pub(super) fn open(event: &LinuxEvent, cpu: u32) -> Result<CpuCounters> {
        // Each attr counts only on its PMU's CPUs (hybrid core types,
        // uncore cpumasks).
        let mut events = Vec::new();
        for (attr, cpus) in event.attrs.iter().zip(&event.cpus) {
            if cpus.as_ref().is_some_and(|c| !c.contains(&cpu)) {
                continue;
            }
            events.push(open_one(attr, Target::cpu(cpu), event)?);
        }
        if events.is_empty() {
            let cpus: Vec<u32> = event.cpus.iter().flatten().flatten().copied().collect();
            return Err(Error::Unavailable {
                what: format!("{} on CPU {cpu}", event.description),
                why: format!("its PMU counts only on CPUs {cpus:?}; choose one of them"),
            });
        }
        Ok(CpuCounters { events })
    }
}

impl Counters for CpuCounters {
    fn enable(&mut self) -> Result<()> {
        for_each(&self.events, Event::enable)
    }

    fn disable(&mut self) -> Result<()> {
        for_each(&self.events, Event::disable)
    }

    fn read(&mut self) -> Result<CounterValue> {
        read_events(&self.events)
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
}
