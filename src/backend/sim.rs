//! A deterministic backend for testing code that uses `pmc`, and for
//! testing `pmc`'s own hwpmc semantics without a kernel.
//!
//! Every counter counts ticks of one shared clock that the test advances
//! with [`SimBackend::advance`]; a counter counts while it is enabled. The
//! set of existing processes is explicit, and a counter can be made to
//! lose all its time to multiplexing.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};

use super::source::SampleSource;
use super::{BackendImpl, CounterValue, Counters, EventRequest, PreparedEvent};
pub use ring::SimSampleStats;
use ring::{RingTarget, RingTotals, SimRing};

mod ring;
use crate::spec::EventName;
use crate::{Capabilities, Class, Error, Result};
use crate::{ClassInfo, CpuInfo};

/// The simulated machine.
#[derive(Debug)]
pub struct SimBackend {
    clock: Arc<SimClock>,
    processes: Mutex<BTreeSet<u32>>,
    /// child → parent, for DESCENDANTS.
    parents: Mutex<BTreeMap<u32, u32>>,
    cpus: Vec<u32>,
    offline: Arc<Mutex<BTreeSet<u32>>>,
    /// What `online_cpus_last_seen` answers: the online CPUs of its first
    /// call, kept as the Linux backend keeps them (stale after a CPU goes
    /// offline, until `online_cpus` looks again).
    last_seen: Mutex<Option<Vec<u32>>>,
    caller: u32,
    /// The rdpmc index counters report (0: none, else index + 1).
    rdpmc: Arc<AtomicU32>,
    /// The errno every open fails with (0: opens work).
    refuse: Arc<AtomicU32>,
    /// The sampling counters' rings, which [`SimBackend::sample`] fills.
    rings: Rings,
}

/// The rings of a machine's sampling counters (those dropped since are
/// left out as the next `sample` passes), and what they saw.
#[derive(Debug, Default)]
struct RingList {
    live: Mutex<Vec<Weak<SimRing>>>,
    totals: Arc<RingTotals>,
}

type Rings = Arc<RingList>;

/// Simulated time: every tick adds to the enabled time of enabled counters,
/// and to their running time unless the machine is starved.
#[derive(Debug, Default)]
struct SimClock {
    ticks: AtomicU64,
    running_ticks: AtomicU64,
    starved: AtomicBool,
}

impl SimClock {
    fn now(&self) -> (u64, u64) {
        (
            self.ticks.load(Ordering::SeqCst),
            self.running_ticks.load(Ordering::SeqCst),
        )
    }
}

impl SimBackend {
    /// A machine with `cpus` CPUs where only the caller (pid 1000) exists.
    pub fn new(cpus: u32) -> Arc<SimBackend> {
        Arc::new(SimBackend {
            clock: Arc::new(SimClock::default()),
            processes: Mutex::new(BTreeSet::from([1000])),
            parents: Mutex::new(BTreeMap::new()),
            cpus: (0..cpus).collect(),
            offline: Arc::new(Mutex::new(BTreeSet::new())),
            last_seen: Mutex::new(None),
            caller: 1000,
            rdpmc: Arc::new(AtomicU32::new(0)),
            refuse: Arc::new(AtomicU32::new(0)),
            rings: Rings::default(),
        })
    }

    /// One sample on every enabled sampling counter (each system sampling
    /// PMC's CPU, each process sampling PMC's target), stamped with the
    /// clock now, into its ring; a full ring loses it, as a perf ring its
    /// owner drains too slowly does. A ring holds `pages * 4096 / 64`
    /// samples, `pages` being the owner's buffer size
    /// ([`Owner::set_buffer_pages`](crate::Owner::set_buffer_pages)).
    /// Returns how many counters were sampled.
    pub fn sample(&self) -> usize {
        let now = self.clock.now().0;
        let mut live = self.rings.live.lock().expect("sim lock");
        let mut sampled = 0;
        live.retain(|ring| match ring.upgrade() {
            Some(ring) => {
                sampled += usize::from(ring.sample(now));
                true
            }
            None => false,
        });
        sampled
    }

    /// The samples every ring took and lost so far, and the most one ring
    /// held at once.
    pub fn sample_stats(&self) -> SimSampleStats {
        self.rings.totals.stats()
    }

    /// The pid that stands for the caller.
    pub fn caller(&self) -> u32 {
        self.caller
    }

    /// Advances the shared clock: every enabled counter counts `ticks`.
    pub fn advance(&self, ticks: u64) {
        self.clock.ticks.fetch_add(ticks, Ordering::SeqCst);
        if !self.clock.starved.load(Ordering::SeqCst) {
            self.clock.running_ticks.fetch_add(ticks, Ordering::SeqCst);
        }
    }

    /// Makes a process exist.
    pub fn spawn(&self, pid: u32) {
        self.processes.lock().expect("sim lock").insert(pid);
    }

    /// Makes a process exist as a child of `parent`.
    pub fn spawn_child(&self, parent: u32, pid: u32) {
        self.spawn(pid);
        self.parents.lock().expect("sim lock").insert(pid, parent);
    }

    /// Makes a process disappear (its children are reparented away).
    pub fn exit(&self, pid: u32) {
        self.processes.lock().expect("sim lock").remove(&pid);
        let mut parents = self.parents.lock().expect("sim lock");
        parents.remove(&pid);
        parents.retain(|_, p| *p != pid);
    }

    /// Takes a CPU offline (it stays possible) or back online.
    pub fn set_online(&self, cpu: u32, online: bool) {
        let mut offline = self.offline.lock().expect("sim lock");
        if online {
            offline.remove(&cpu);
        } else {
            offline.insert(cpu);
        }
    }

    /// Makes every open fail with `errno` (`None`: opens work again), as
    /// on a machine that cannot count the event (ENOENT for a missing PMU,
    /// EACCES for paranoid).
    pub fn refuse_opens(&self, errno: Option<i32>) {
        self.refuse
            .store(errno.map_or(0, |e| e.unsigned_abs()), Ordering::SeqCst);
    }

    /// Makes every counter report this user-space rdpmc index (`None`:
    /// user-space reads are not allowed, as on a machine without a PMU).
    pub fn set_rdpmc_index(&self, index: Option<u32>) {
        self.rdpmc
            .store(index.map_or(0, |i| i + 1), Ordering::SeqCst);
    }

    /// While set, enabled counters accumulate enabled time but never run
    /// (as if multiplexed out entirely).
    pub fn starve(&self, on: bool) {
        self.clock.starved.store(on, Ordering::SeqCst);
    }
}

impl BackendImpl for SimBackend {
    fn name(&self) -> &'static str {
        "sim"
    }

    fn prepare(&self, request: &EventRequest<'_>) -> Result<Arc<dyn PreparedEvent>> {
        if request.user_stack.is_some() {
            return Err(Error::NotSupported {
                what: "copying user stacks with samples".into(),
                why: "this backend takes no user registers or stack; use frame-pointer callchains (CALLCHAIN)".into(),
                source: None,
            });
        }
        let class = match &request.spec.event {
            EventName::Software(_) => Class::Software,
            EventName::Hardware(_) => Class::Hardware,
            EventName::Cache(_) => Class::Cache,
            EventName::Named(name) => {
                return Err(Error::UnknownEvent {
                    what: format!("event `{name}`"),
                    why: "the simulator knows generic hardware, cache and software names only"
                        .into(),
                    reason: crate::Reason::UnknownEvent {
                        closest: Vec::new(),
                    }
                    .boxed(),
                });
            }
            other => {
                return Err(Error::NotSupported {
                    what: format!("{other:?}"),
                    why: "the simulator has generic hardware, cache and software events only"
                        .into(),
                    source: None,
                });
            }
        };
        Ok(Arc::new(SimEvent {
            class,
            offline: self.offline.clone(),
            clock: self.clock.clone(),
            rdpmc: self.rdpmc.clone(),
            refuse: self.refuse.clone(),
            ring_pages: request.mode.is_sampling().then(|| {
                request
                    .buffer_pages
                    .unwrap_or(super::source::DEFAULT_BUFFER_PAGES)
            }),
            caller: self.caller,
            rings: self.rings.clone(),
        }))
    }

    fn caller_pid(&self) -> u32 {
        self.caller
    }

    fn process_exists(&self, pid: u32) -> bool {
        self.processes.lock().expect("sim lock").contains(&pid)
    }

    fn online_cpus(&self) -> Vec<u32> {
        let offline = self.offline.lock().expect("sim lock");
        let online: Vec<u32> = self
            .cpus
            .iter()
            .copied()
            .filter(|c| !offline.contains(c))
            .collect();
        *self.last_seen.lock().expect("sim lock") = Some(online.clone());
        online
    }

    fn online_cpus_last_seen(&self) -> Vec<u32> {
        let kept = self.last_seen.lock().expect("sim lock").clone();
        kept.unwrap_or_else(|| self.online_cpus())
    }

    fn possible_cpus(&self) -> Vec<u32> {
        self.cpus.clone()
    }

    fn descendants(&self, pid: u32) -> Vec<u32> {
        let parents = self.parents.lock().expect("sim lock");
        let mut found = vec![pid];
        let mut i = 0;
        while i < found.len() {
            let p = found[i];
            found.extend(parents.iter().filter(|(_, pp)| **pp == p).map(|(c, _)| *c));
            i += 1;
        }
        found.remove(0);
        found
    }

    /// The shared clock's ticks: the simulator's log is stamped with the
    /// time it simulates.
    fn monotonic_ns(&self) -> u64 {
        self.clock.now().0
    }

    fn cpuinfo(&self) -> Result<CpuInfo> {
        Ok(CpuInfo {
            cputype: "simulated".into(),
            ncpu: self.cpus.len() as u32,
            npmc: 4,
            // A 48-bit PMU like x86's, and 64-bit software counters.
            classes: [
                (Class::Hardware, 48),
                (Class::Cache, 48),
                (Class::Software, 64),
            ]
            .into_iter()
            .map(|(class, width)| ClassInfo {
                class,
                caps: Capabilities::READ
                    | Capabilities::WRITE
                    | Capabilities::USER
                    | Capabilities::SYSTEM
                    | Capabilities::INTERRUPT,
                width,
                num: Some(4),
            })
            .collect(),
        })
    }

    fn event_names(&self, _class: &Class) -> Result<Vec<String>> {
        Ok(vec!["task-clock".into()])
    }
}

#[derive(Debug)]
struct SimEvent {
    class: Class,
    offline: Arc<Mutex<BTreeSet<u32>>>,
    clock: Arc<SimClock>,
    rdpmc: Arc<AtomicU32>,
    refuse: Arc<AtomicU32>,
    /// A sampling event's ring size in pages (`None`: it counts).
    ring_pages: Option<usize>,
    caller: u32,
    rings: Rings,
}

impl SimEvent {
    /// A counter of this event on `target`, with its ring if it samples.
    fn counter(&self, target: RingTarget) -> Box<dyn Counters> {
        let ring = self.ring_pages.map(|pages| {
            let ring = Arc::new(SimRing::new(target, pages, self.rings.totals.clone()));
            let mut live = self.rings.live.lock().expect("sim lock");
            live.push(Arc::downgrade(&ring));
            ring
        });
        Box::new(SimCounter::new(self, ring))
    }

    /// (`target` names what was opened, made only for the error.)
    fn check_open(&self, target: impl FnOnce() -> String) -> Result<()> {
        match self.refuse.load(Ordering::SeqCst) {
            0 => Ok(()),
            errno => Err(Error::Os {
                op: format!("sim open of {} on {}", self.class, target()).into(),
                source: std::io::Error::from_raw_os_error(errno as i32),
                hint: Some("refused by SimBackend::refuse_opens".into()),
            }),
        }
    }
}

impl PreparedEvent for SimEvent {
    fn class(&self) -> Class {
        self.class.clone()
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities::READ | Capabilities::WRITE | Capabilities::USER | Capabilities::SYSTEM
    }

    fn width(&self) -> u32 {
        64
    }

    fn describe(&self) -> String {
        format!("sim {}", self.class)
    }

    fn open_process(&self, pid: u32, _descendants: bool) -> Result<Box<dyn Counters>> {
        self.check_open(|| format!("process {pid}"))?;
        Ok(self.counter(RingTarget::Process(pid)))
    }

    fn open_cpu(&self, cpu: u32) -> Result<Box<dyn Counters>> {
        self.check_open(|| format!("cpu {cpu}"))?;
        // As perf_event_open on an offline CPU (ENODEV).
        if self.offline.lock().expect("sim lock").contains(&cpu) {
            return Err(Error::Unavailable {
                what: format!("cpu {cpu}"),
                why: "the CPU is offline".into(),
                reason: crate::Reason::OfflineCpu { cpu }.boxed(),
                source: Some(crate::Errno::NODEV.into()),
            });
        }
        Ok(self.counter(RingTarget::Cpu {
            cpu,
            pid: self.caller,
        }))
    }

    fn trial_open(&self) -> Result<()> {
        self.check_open(|| "the calling thread".into())
    }

    /// Its class and the machine's shared state: nothing of one PMC's.
    fn serves_every_cpu(&self) -> bool {
        true
    }

    fn reusable(&self) -> bool {
        true
    }
}

#[derive(Debug)]
struct SimCounter {
    clock: Arc<SimClock>,
    rdpmc: Arc<AtomicU32>,
    /// The clock (total, running) when last enabled.
    since: Option<(u64, u64)>,
    counted: u64,
    enabled: u64,
    /// A sampling counter's ring.
    ring: Option<Arc<SimRing>>,
}

impl SimCounter {
    fn new(e: &SimEvent, ring: Option<Arc<SimRing>>) -> SimCounter {
        SimCounter {
            clock: e.clock.clone(),
            rdpmc: e.rdpmc.clone(),
            since: None,
            counted: 0,
            enabled: 0,
            ring,
        }
    }

    /// (enabled, running) ticks since the last enable.
    fn pending(&self) -> (u64, u64) {
        let (now, running) = self.clock.now();
        self.since.map_or((0, 0), |(t, r)| (now - t, running - r))
    }
}

impl Counters for SimCounter {
    fn enable(&mut self) -> Result<()> {
        if self.since.is_none() {
            self.since = Some(self.clock.now());
        }
        if let Some(ring) = &self.ring {
            ring.set_enabled(true);
        }
        Ok(())
    }

    fn disable(&mut self) -> Result<()> {
        let (enabled, running) = self.pending();
        self.enabled += enabled;
        self.counted += running;
        self.since = None;
        if let Some(ring) = &self.ring {
            ring.set_enabled(false);
        }
        Ok(())
    }

    fn sample_source(&self) -> Option<Arc<dyn SampleSource>> {
        self.ring.clone().map(|r| r as Arc<dyn SampleSource>)
    }

    fn rdpmc_index(&mut self) -> Result<Option<u32>> {
        Ok(self.rdpmc.load(Ordering::SeqCst).checked_sub(1))
    }

    fn read(&mut self) -> Result<CounterValue> {
        let (pending_enabled, pending_running) = self.pending();
        let raw = self.counted + pending_running;
        let enabled = self.enabled + pending_enabled;
        // One tick of the clock is one nanosecond of running time.
        let running = raw;
        let scaled = match running {
            0 if enabled > 0 => None,
            0 => Some(0),
            r => Some(raw * enabled / r),
        };
        Ok(CounterValue {
            raw,
            time_enabled: enabled,
            time_running: running,
            scaled,
        })
    }
}
