//! Open counters of one target.
//!
//! A process target is covered by one fd per existing thread (perf events
//! are per thread), each with `inherit` so that threads created later are
//! counted too; without DESCENDANTS `inherit_thread` keeps child processes
//! out, as hwpmc does. With DESCENDANTS the existing descendant processes
//! get fds of their own and future children are inherited.
//!
//! Here: the plan every target opens from, process targets and the
//! reading of their counts; `cpu` the system-wide targets, `open` the
//! opening (fallbacks, trial cache), `rings` a logging target's rings,
//! `hot` the inlined path of a one-fd counting target.

use pmc_linux::attr::Attr;
use pmc_linux::event::{Event, OpenFlags, Target};
use pmc_linux::system;

use std::borrow::Cow;
use std::ffi::CString;
use std::sync::Arc;

use super::from_linux;

mod cpu;
mod hot;
mod open;
mod rings;
use super::sampling::{self, LinuxSource};
use crate::backend::source::SampleSource;
use crate::backend::{CounterValue, Counters};
use crate::{Error, Result};
pub(super) use cpu::CpuCounters;
pub use hot::HotCounter;
pub(super) use open::{TrialCache, trial_open};
use rings::map_rings;

/// What the counters of every target of an event open: one attr per core
/// PMU (several on hybrid CPUs) and what logging needs.
#[derive(Debug)]
pub(super) struct OpenPlan {
    pub(super) attrs: Vec<Attr>,
    /// For each attr, the CPUs its PMU counts on (`None`: any CPU).
    pub(super) cpus: Vec<Option<Vec<u32>>>,
    /// The string `config1` points to (uprobe path, kprobe function).
    pub(super) string: Option<CString>,
    /// Sampling or `LOG_PROC*`: rings and what to log.
    pub(super) log: Option<sampling::LogPlan>,
    /// Per-thread values for `LOG_PROCCSW` and per-process `LOG_PROCEXIT`:
    /// the attrs of the sampling siblings grouped under each counter (see
    /// `sampling::SliceSiblings`).
    pub(super) slices: Option<sampling::SliceSiblings>,
    /// How errors and `describe` name the event.
    pub(super) description: Cow<'static, str>,
    /// The tracepoint filter, if any.
    pub(super) filter: Option<String>,
    /// The backend's collector and trial-open cache.
    pub(super) shared: Arc<super::Shared>,
}

/// When a process target's counters start counting.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Start {
    /// At the first enable.
    AtEnable,
    /// At the process's next exec after the first enable (perf_event's
    /// `enable_on_exec`), for a process held before its exec.
    AtExec,
}
use open::{open_sibling, open_with_fallback};

/// Sums the events of a target. `chunks` splits `events` into the
/// instances of one thread's counter (empty: one event each): its per-CPU
/// instances for a logging target, its per-core-type instances on a hybrid
/// machine. Such an instance is enabled whenever its thread runs but runs
/// only while the thread is on its CPU (or core type), so each chunk is
/// scaled as one counter, by its summed running time against its enabled
/// time; scaling the instances one by one would overcount. An event that
/// never ran contributes nothing (a thread's per-CPU event on a CPU it
/// never used); the sum is "never counted" only when no event ran although
/// time was enabled.
#[inline]
fn read_events(events: &[Event], chunks: &[usize]) -> Result<CounterValue> {
    sum_chunks(events, chunks, |e| e.read_timed().map_err(from_linux))
}

/// The arithmetic of [`read_events`] over any readable instances.
#[inline]
fn sum_chunks<E>(
    events: &[E],
    chunks: &[usize],
    mut read: impl FnMut(&E) -> Result<pmc_linux::event::TimedCount>,
) -> Result<CounterValue> {
    let mut sum = CounterValue::ZERO;
    let mut any_ran = false;
    let mut rest = events;
    let mut sizes = chunks.iter().copied();
    while !rest.is_empty() {
        let n = sizes.next().unwrap_or(1).clamp(1, rest.len());
        let (chunk, tail) = rest.split_at(n);
        rest = tail;
        let mut c = pmc_linux::event::TimedCount::default();
        for e in chunk {
            let one = read(e)?;
            c.value = c.value.wrapping_add(one.value);
            c.time_running = c.time_running.saturating_add(one.time_running);
            c.time_enabled = c.time_enabled.max(one.time_enabled);
        }
        let scaled = if c.time_running == 0 {
            Some(0)
        } else {
            any_ran = true;
            c.scaled()
        };
        sum.accumulate(CounterValue {
            raw: c.value,
            time_enabled: c.time_enabled,
            time_running: c.time_running.min(c.time_enabled),
            scaled,
        });
    }
    if !any_ran && sum.time_enabled > 0 {
        sum.scaled = None;
    }
    Ok(sum)
}

fn for_each(events: &[Event], f: impl Fn(&Event) -> pmc_linux::error::Result<()>) -> Result<()> {
    events.iter().try_for_each(|e| f(e).map_err(from_linux))
}

/// The counters of a process tree.
#[derive(Debug)]
pub(super) struct ProcessCounters {
    /// Shared with the ring set, which reads the final value when the
    /// target exits (LOG_PROCEXIT).
    events: Arc<[Event]>,
    /// Logging targets: the per-CPU rings (drained at stop and drop).
    rings: Option<Arc<LinuxSource>>,
    /// The slice siblings grouped under the counters (see
    /// `sampling::SliceSiblings`); kept open, never read directly.
    siblings: Vec<Event>,
    /// How `events` splits into per-CPU instances of one thread's counter
    /// (see `read_events`).
    chunks: Vec<usize>,
    /// The attr a user-space read would need (one plain core attr: no
    /// probe string, filter, hybrid split or rings), for `rdpmc_index`.
    plain_attr: Option<Attr>,
    /// The calling thread's user-readable twin of the counter (see
    /// `rdpmc_index`), enabled and disabled with it; never summed.
    user_read: Option<(Event, pmc_linux::selfmon::UserPage)>,
    /// Whether the counters are enabled now.
    enabled: bool,
    /// Opened with `enable_on_exec` and not enabled yet: the first enable
    /// leaves them to the kernel, which enables them at the exec.
    armed_for_exec: bool,
    /// Software and tracepoint counters, which the kernel never multiplexes:
    /// their per-CPU instances' running times add up to a little less than
    /// the thread's enabled time only by scheduling overhead (0.2 % seen),
    /// so their sum is the count, never scaled up.
    never_multiplexed: bool,
}

/// The rdpmc index a metadata page grants (`pmc_get_msr`), or why not:
/// perf publishes `index` (1-based) only while the event sits on a
/// hardware counter, and `cap_user_rdpmc` only for PMUs that allow it.
pub(super) fn rdpmc_index_from_page(
    caps: pmc_linux::selfmon::UserPageCaps,
    enabled: bool,
) -> Result<u32> {
    let no = |why: &str| Error::Os {
        op: "get_msr".into(),
        source: std::io::Error::from_raw_os_error(libc::ENOSYS),
        hint: Some(why.into()),
    };
    if !caps.user_rdpmc {
        return Err(no(if cfg!(target_arch = "aarch64") {
            // arch/arm64/kernel/perf_event.c grants PMEVCNTR<n>_EL0 reads
            // only to events opened with config1 bit 1 while the sysctl
            // perf_user_access is 1; PMCs are opened without it, so
            // pmc_get_msr has no counter to give on arm64.
            "arm64 grants user-space counter reads only to events opened with config1:1 \
             (the `rdpmc` format bit) while /proc/sys/kernel/perf_user_access is 1; PMCs \
             are opened without it: read the counter with Pmc::read"
        } else {
            "the kernel does not let user space read this counter with rdpmc (software \
             events, no hardware PMU, or /sys/bus/event_source/devices/cpu/rdpmc is 0); \
             read it with Pmc::read"
        }));
    }
    match caps.index {
        0 if !enabled => Err(no(
            "perf assigns the hardware counter only while the PMC counts: start it, then \
             call get_msr",
        )),
        0 => Err(no(
            "the counter is not on the PMU right now (multiplexed out by other events); \
             use fewer events or read it with Pmc::read",
        )),
        i => Ok(i - 1),
    }
}

impl ProcessCounters {
    pub(super) fn open(
        event: &OpenPlan,
        pid: u32,
        descendants: bool,
        start: Start,
    ) -> Result<ProcessCounters> {
        let root = i32::try_from(pid).map_err(|_| Error::NoSuchProcess {
            op: "attach".into(),
            pid,
        })?;
        // (No allocation for what the common case does not need: an attach
        // to the caller is timed against the bare system calls.)
        let descendants = if descendants {
            system::descendants_of(root)
        } else {
            Vec::new()
        };
        // Logging events are mapped, and perf maps inherited per-task
        // events only per CPU: one per (thread, CPU) then; only the rings
        // need each event's CPU.
        let logging = event.log.is_some();
        let logged_cpus: Option<Vec<i32>> = logging.then(|| {
            system::online_cpus()
                .into_iter()
                .map(|c| c as i32)
                .collect()
        });
        let cpus = logged_cpus.as_deref().unwrap_or(&[-1]);
        let mut event_cpus: Vec<i32> = Vec::new();
        let mut events: Vec<Event> = Vec::new();
        let mut siblings: Vec<(i32, Event)> = Vec::new();
        let mut chunks = Vec::new();
        let mut single_chunks = 0;
        for p in std::iter::once(root).chain(descendants) {
            let tids = match system::threads_of(p) {
                Ok(t) => t,
                // A descendant may exit while we look; the root must exist.
                Err(_) if p != root => continue,
                Err(_) => {
                    return Err(Error::NoSuchProcess {
                        op: "attach".into(),
                        pid,
                    });
                }
            };
            events.reserve(tids.len() * event.attrs.len() * cpus.len());
            for tid in tids {
                // One chunk per thread: its instances on every core PMU
                // (hybrid) and CPU (logging) are one counter to scale.
                let first = events.len();
                for attr in &event.attrs {
                    let attr = &attr.enable_on_exec(start == Start::AtExec);
                    for &cpu in cpus {
                        let target = Target { pid: tid, cpu };
                        let leader = match open_with_fallback(attr, target, event) {
                            Ok(e) => e,
                            // The thread exited between listing and opening.
                            Err(e) if e.os_errno() == Some(libc::ESRCH) && tid != p => break,
                            Err(e) => return Err(e),
                        };
                        let mut group = Vec::new();
                        for sibling in event.slices.iter().flat_map(|s| s.attrs()) {
                            match open_sibling(sibling, target, &leader) {
                                Ok(e) => group.push((cpu, e)),
                                Err(e) if e.os_errno() == Some(libc::ESRCH) && tid != p => break,
                                Err(e) => return Err(e),
                            }
                        }
                        if event
                            .slices
                            .as_ref()
                            .is_some_and(|s| s.attrs().count() != group.len())
                        {
                            break;
                        }
                        siblings.extend(group);
                        if logging {
                            event_cpus.push(cpu);
                        }
                        events.push(leader);
                    }
                }
                match events.len() - first {
                    0 => {}
                    // Left empty while every chunk is one event, which
                    // `read_events` assumes of no chunks (no allocation
                    // for the common target: one thread, one attr).
                    1 if chunks.is_empty() => single_chunks += 1,
                    n => {
                        if chunks.is_empty() {
                            chunks.resize(single_chunks, 1);
                        }
                        chunks.push(n);
                    }
                }
            }
        }
        if events.is_empty() {
            return Err(Error::NoSuchProcess {
                op: "attach".into(),
                pid,
            });
        }
        let events: Arc<[Event]> = match <[Event; 1]>::try_from(events) {
            // One allocation instead of the vector's copy.
            Ok(one) => Arc::new(one),
            Err(events) => Arc::from(events),
        };
        let rings = map_rings(
            event,
            &event_cpus,
            &events,
            &siblings,
            Some((pid, events.clone())),
        )?;
        let plain_attr = match &event.attrs[..] {
            [one]
                if event.string.is_none()
                    && event.filter.is_none()
                    && event.log.is_none()
                    && event.slices.is_none() =>
            {
                Some(*one)
            }
            _ => None,
        };
        Ok(ProcessCounters {
            events,
            rings,
            siblings: siblings.into_iter().map(|(_, e)| e).collect(),
            chunks,
            plain_attr,
            user_read: None,
            enabled: false,
            armed_for_exec: start == Start::AtExec,
            // linux/perf_event.h: PERF_TYPE_SOFTWARE 1, PERF_TYPE_TRACEPOINT 2.
            never_multiplexed: event.attrs.iter().all(|a| matches!(a.type_id(), 1 | 2)),
        })
    }
}

impl Counters for ProcessCounters {
    #[inline]
    fn enable(&mut self) -> Result<()> {
        if self.armed_for_exec {
            // The kernel enables them at the exec; an ioctl now would count
            // what the process does before it.
            self.armed_for_exec = false;
            self.enabled = true;
            return Ok(());
        }
        if let [one] = &self.events[..] {
            one.enable().map_err(from_linux)?;
        } else {
            for_each(&self.events, Event::enable)?;
        }
        if let Some((e, _)) = &self.user_read {
            e.enable().map_err(from_linux)?;
        }
        self.enabled = true;
        Ok(())
    }

    #[inline]
    fn disable(&mut self) -> Result<()> {
        if let [one] = &self.events[..] {
            one.disable().map_err(from_linux)?;
        } else {
            for_each(&self.events, Event::disable)?;
        }
        if let Some((e, _)) = &self.user_read {
            e.disable().map_err(from_linux)?;
        }
        self.enabled = false;
        Ok(())
    }

    fn read(&mut self) -> Result<CounterValue> {
        let mut v = read_events(&self.events, &self.chunks)?;
        if self.never_multiplexed && v.scaled.is_some() {
            v.scaled = Some(v.raw);
            v.time_running = v.time_enabled;
        }
        Ok(v)
    }

    #[inline]
    fn read_scaled(&mut self) -> Result<Option<u64>> {
        match &self.events[..] {
            [one] => {
                let c = one.read_timed().map_err(from_linux)?;
                Ok(c.scaled())
            }
            _ => Ok(self.read()?.scaled),
        }
    }

    fn set_period(&mut self, period: u64) -> Result<()> {
        if self.events.first().is_some_and(|e| e.is_sampling()) {
            for_each(&self.events, |e| e.set_period(period))?;
        }
        Ok(())
    }

    fn handles(&self) -> usize {
        self.events.len() + self.siblings.len()
    }

    fn sample_source(&self) -> Option<Arc<dyn SampleSource>> {
        self.rings.clone().map(|r| r as Arc<dyn SampleSource>)
    }

    fn fd(&self) -> Option<std::os::fd::BorrowedFd<'_>> {
        use std::os::fd::AsFd;
        match &*self.events {
            [one] if self.siblings.is_empty() && self.user_read.is_none() => Some(one.as_fd()),
            _ => None,
        }
    }

    fn hot(&self) -> Option<crate::backend::HotCounter> {
        // An armed counter's first enable is not an ioctl.
        (self.events.len() == 1
            && self.rings.is_none()
            && self.user_read.is_none()
            && !self.armed_for_exec)
            .then(|| crate::backend::HotCounter::PerfEvent(HotCounter(self.events.clone())))
    }

    fn rdpmc_index(&mut self) -> Result<Option<u32>> {
        // perf refuses to map an inherited per-task counter (perf_mmap:
        // EINVAL for `inherit` with cpu -1), and ours inherit to cover new
        // threads. So the calling thread gets a twin without inherit that
        // perf lets it map; it counts the same event on this thread and
        // follows the PMC's enable/disable.
        if self.user_read.is_none() {
            let Some(attr) = self.plain_attr else {
                return Err(Error::Os {
                    op: "get_msr".into(),
                    source: std::io::Error::from_raw_os_error(libc::ENOSYS),
                    hint: Some(
                        "this PMC is not one plain counter (a probe, a filter, a hybrid \
                         CPU's several core PMUs, or a logging PMC): read it with Pmc::read"
                            .into(),
                    ),
                });
            };
            let attr = attr.inherit(false).inherit_thread(false);
            let twin = Event::open(&attr, Target { pid: 0, cpu: -1 }, None, OpenFlags::empty())
                .map_err(from_linux)?;
            let page = pmc_linux::selfmon::UserPage::map(&twin).map_err(from_linux)?;
            if self.enabled {
                twin.enable().map_err(from_linux)?;
            }
            self.user_read = Some((twin, page));
        }
        let Some((_, page)) = &self.user_read else {
            return Ok(None);
        };
        rdpmc_index_from_page(page.caps(), self.enabled).map(Some)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pmc_linux::event::TimedCount;
    use pmc_linux::selfmon::UserPageCaps;

    fn t(value: u64, time_enabled: u64, time_running: u64) -> TimedCount {
        TimedCount {
            value,
            time_enabled,
            time_running,
        }
    }

    fn sum(counts: &[TimedCount], chunks: &[usize]) -> CounterValue {
        sum_chunks(counts, chunks, |c| Ok(*c)).unwrap()
    }

    fn value(raw: u64, enabled: u64, running: u64, scaled: Option<u64>) -> CounterValue {
        CounterValue {
            raw,
            time_enabled: enabled,
            time_running: running,
            scaled,
        }
    }

    fn caps(user_rdpmc: bool, index: u32) -> UserPageCaps {
        UserPageCaps {
            user_rdpmc,
            user_time: true,
            index,
            pmc_width: 48,
        }
    }

    #[test]
    fn instances_of_one_thread_are_scaled_as_one_counter() {
        // (instances, chunks, expected). The expectation is worked out by
        // hand: within a chunk, value and running time add up and the
        // enabled time is the thread's (the largest); scaled =
        // value * enabled / running once per chunk.
        let rows: Vec<(Vec<TimedCount>, Vec<usize>, CounterValue)> = vec![
            // Plain counters, one event each: a sum.
            (
                vec![t(10, 100, 100), t(32, 50, 50)],
                vec![],
                value(42, 150, 150, Some(42)),
            ),
            // One thread on 2 CPUs (per-CPU instances of a logging
            // target): 30 % then 70 % of its time. Each instance alone
            // would scale to 1000: the chunk must give 1000, not 2000.
            (
                vec![t(300, 100, 30), t(700, 100, 70)],
                vec![2],
                value(1000, 100, 100, Some(1000)),
            ),
            // Hybrid: one thread's cpu_core and cpu_atom instances (40 %
            // and 60 % of the thread's time) are one chunk too.
            (
                vec![t(4_000, 1_000, 400), t(3_000, 1_000, 600)],
                vec![2],
                value(7_000, 1_000, 1_000, Some(7_000)),
            ),
            // A CPU the thread never used: contributes nothing.
            (
                vec![t(500, 100, 100), t(0, 100, 0)],
                vec![2],
                value(500, 100, 100, Some(500)),
            ),
            // Multiplexed on the PMU as well: the chunk ran 50 of 100 ns
            // in total, so it scales by 2.
            (
                vec![t(200, 100, 20), t(300, 100, 30)],
                vec![2],
                value(500, 100, 50, Some(1_000)),
            ),
            // Two threads × 2 instances: chunk sums add up, each scaled
            // on its own (thread 1 fully on, thread 2 half multiplexed).
            (
                vec![t(100, 40, 10), t(300, 40, 30), t(50, 80, 20), t(50, 80, 20)],
                vec![2, 2],
                value(500, 120, 80, Some(400 + 200)),
            ),
            // A chunk size beyond the events is clamped.
            (
                vec![t(1, 10, 5), t(1, 10, 5)],
                vec![9],
                value(2, 10, 10, Some(2)),
            ),
            // Running beyond enabled (kernel rounding) is clamped, never
            // scaled down.
            (
                vec![t(100, 10, 6), t(100, 10, 6)],
                vec![2],
                value(200, 10, 10, Some(200)),
            ),
        ];
        for (i, (counts, chunks, want)) in rows.iter().enumerate() {
            assert_eq!(sum(counts, chunks), *want, "row {i}: {counts:?} {chunks:?}");
        }
    }

    #[test]
    fn scaling_instances_one_by_one_would_overcount() {
        // The same hybrid thread, chunked per instance (the old per-attr
        // chunks): each half scales to the thread's full time.
        let halves = [t(4_000, 1_000, 400), t(3_000, 1_000, 600)];
        assert_eq!(sum(&halves, &[1, 1]).scaled, Some(10_000 + 5_000));
        assert_eq!(sum(&halves, &[2]).scaled, Some(7_000));
    }

    #[test]
    fn never_counted_only_when_nothing_ran() {
        // Enabled, never on any CPU: no estimate (Error::NotCounted above).
        let never = [t(0, 100, 0), t(0, 100, 0)];
        assert_eq!(sum(&never, &[2]).scaled, None);
        assert_eq!(sum(&never, &[]).scaled, None);
        // Never enabled: zero, not "never counted".
        assert_eq!(sum(&[t(0, 0, 0)], &[]), value(0, 0, 0, Some(0)));
        // One thread never ran while another did: the sum is estimable.
        let mixed = [t(0, 100, 0), t(9, 100, 100)];
        assert_eq!(sum(&mixed, &[1, 1]).scaled, Some(9));
        // Nothing at all.
        assert_eq!(sum(&[], &[]), CounterValue::ZERO);
    }

    #[test]
    fn a_read_error_is_returned_not_summed() {
        let counts = [t(1, 1, 1), t(2, 2, 2)];
        let mut calls = 0;
        let got = sum_chunks(&counts, &[], |c| {
            calls += 1;
            if c.value == 2 {
                Err(Error::NoBackend { platform: "test" })
            } else {
                Ok(*c)
            }
        });
        assert!(got.is_err());
        assert_eq!(calls, 2);
    }

    #[test]
    fn the_page_index_is_one_based_and_zero_means_not_on_a_counter() {
        // linux/perf_event.h, struct perf_event_mmap_page: `index` is the
        // hardware counter + 1 ("if (idx) rdpmc(idx - 1)"), 0 when the
        // event is not on a counter; `cap_user_rdpmc` says rdpmc is allowed.
        assert_eq!(rdpmc_index_from_page(caps(true, 1), true).unwrap(), 0);
        // Intel fixed counters: rdpmc index (1 << 30) | n, page index + 1.
        let fixed = (1u32 << 30) | 1;
        assert_eq!(
            rdpmc_index_from_page(caps(true, fixed + 1), true).unwrap(),
            fixed
        );
        for (c, enabled, why) in [
            (caps(false, 3), true, "rdpmc"),
            (caps(true, 0), false, "start it"),
            (caps(true, 0), true, "multiplexed"),
        ] {
            let e = rdpmc_index_from_page(c, enabled).unwrap_err();
            // hwpmc_mod.c PMC_OP_PMCGETMSR: no pcd_get_msr → ENOSYS.
            assert_eq!(e.errno(), libc::ENOSYS, "{e}");
            assert!(e.to_string().contains(why), "{why}: {e}");
        }
    }
}
