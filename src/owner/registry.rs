//! An owner's pmcinfo registry: its PMCs as `pmc_pmcinfo` lists them.
//!
//! Each PMC and its registry row share one [`PmcRecord`]: what the row
//! lists (targets, reload count, state) is read from the record the PMC
//! writes, so `Owner::pmcinfo` and `Pmc::info` cannot disagree. The state
//! is an atomic byte in it, so start and stop take no lock.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use crate::PmcInfo;
use crate::{Class, Cpu, Flags, Mode, PmcId, State};

/// One owner's PMCs: hwpmc's `po_pmcs` list and the pmcid counter.
#[derive(Debug)]
pub(crate) struct Registry {
    /// The pmcids handed out and not yet released (allocated, or being
    /// allocated), and the row index to try next for each CPU, mode and
    /// class (keyed by the id with row 0).
    ids: Mutex<Ids>,
    /// The backend's `cputype` (which picks the core PMU's class).
    cputype: std::sync::OnceLock<String>,
    /// By pmcid. A hash map: a PMC's row is written at allocate and removed
    /// at release, and a tree's node shifts cost more than those of the
    /// open they go with (`PerCpu`'s many rows); listings sort by id.
    rows: Mutex<IdMap<Arc<PmcRecord>>>,
}

/// A map keyed by pmcids (or their row-0 prefixes). The ids are this
/// owner's own numbers, never input an attacker picks, so SipHash's flood
/// resistance buys nothing, and its cost was a tenth of an
/// allocate→release cycle (`benches/open_cost.rs`).
type IdMap<V> = HashMap<u32, V, BuildHasherDefault<IdHasher>>;

/// A multiplicative hash of one `u32`, folded so that the low bits (the
/// bucket) depend on every bit of the id: ids differ in their CPU field
/// (bits 20-31) as often as in their row.
#[derive(Default)]
struct IdHasher(u64);

impl Hasher for IdHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }

    fn write_u32(&mut self, n: u32) {
        self.0 = u64::from(n).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }

    fn finish(&self) -> u64 {
        self.0 ^ (self.0 >> 32)
    }
}

/// One PMC's pmcinfo row, the one copy of what it says: the PMC writes
/// it, its owner's registry lists it.
///
/// `State` is `#[repr(u8)]`: one relaxed byte store per start/stop. A log
/// close stops a running PMC from the owner's side and sets
/// [`STOPPED_BY_LOG`] beside the state, so the PMC still finishes that
/// stop (its saved value, its sources' final drain) when next used.
#[derive(Debug)]
pub(crate) struct PmcRecord {
    id: PmcId,
    name: String,
    class: Class,
    mode: Mode,
    flags: Flags,
    cpu: Cpu,
    owner_pid: u32,
    state: AtomicU8,
    /// The reload count (sampling) or initial value (counting).
    reload_count: AtomicU64,
    /// The processes attached, those that exited since included: readers
    /// leave those out as they read (see [`PmcRecord::info`]).
    targets: Mutex<Vec<u32>>,
}

/// The bit set beside `Stopped` by a log close.
const STOPPED_BY_LOG: u8 = 0x80;

impl PmcRecord {
    /// The record of a PMC described by `info` (its state, reload count
    /// and targets included).
    pub(crate) fn new(info: PmcInfo) -> PmcRecord {
        PmcRecord {
            id: info.id,
            name: info.name,
            class: info.class,
            mode: info.mode,
            flags: info.flags,
            cpu: info.cpu,
            owner_pid: info.owner_pid,
            state: AtomicU8::new(info.state as u8),
            reload_count: AtomicU64::new(info.reload_count),
            targets: Mutex::new(info.targets),
        }
    }

    /// The pmcinfo row now. `exists` says whether a target process is
    /// still alive (the owner is: it is the caller); those that exited
    /// are left out, as hwpmc unlinks them at exit.
    pub(crate) fn info(&self, exists: impl Fn(u32) -> bool) -> PmcInfo {
        PmcInfo {
            id: self.id,
            name: self.name.clone(),
            class: self.class.clone(),
            mode: self.mode,
            flags: self.flags,
            cpu: self.cpu,
            state: self.load(),
            owner_pid: self.owner_pid,
            reload_count: self.reload_count(),
            targets: self.live_targets(exists),
        }
    }

    /// The targets, less those `exists` says exited (the owner always
    /// counts as alive).
    pub(crate) fn live_targets(&self, exists: impl Fn(u32) -> bool) -> Vec<u32> {
        self.targets()
            .iter()
            .copied()
            .filter(|&pid| pid == self.owner_pid || exists(pid))
            .collect()
    }

    fn targets(&self) -> std::sync::MutexGuard<'_, Vec<u32>> {
        self.targets.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Replaces the list of targets (after an attach, detach or prune).
    pub(crate) fn set_targets(&self, pids: impl Iterator<Item = u32>) {
        let mut targets = self.targets();
        targets.clear();
        targets.extend(pids);
    }

    #[inline]
    pub(crate) fn reload_count(&self) -> u64 {
        self.reload_count.load(Ordering::Relaxed)
    }

    pub(crate) fn set_reload_count(&self, count: u64) {
        self.reload_count.store(count, Ordering::Relaxed);
    }

    #[inline]
    pub(crate) fn store(&self, state: State) {
        self.state.store(state as u8, Ordering::Relaxed);
    }

    #[inline]
    pub(crate) fn load(&self) -> State {
        state_from_u8(self.state.load(Ordering::Relaxed) & !STOPPED_BY_LOG)
    }

    /// Running → Stopped, marked as done by a log close.
    fn stop_for_log_close(&self) {
        let _ = self.state.compare_exchange(
            State::Running as u8,
            State::Stopped as u8 | STOPPED_BY_LOG,
            Ordering::Relaxed,
            Ordering::Relaxed,
        );
    }

    /// Whether a log close stopped the PMC since the last call: the PMC
    /// then finishes the stop itself. Clears the mark.
    pub(crate) fn take_stopped_by_log(&self) -> bool {
        self.state
            .compare_exchange(
                State::Stopped as u8 | STOPPED_BY_LOG,
                State::Stopped as u8,
                Ordering::Relaxed,
                Ordering::Relaxed,
            )
            .is_ok()
    }
}

/// [`Registry::next_id`]'s book-keeping: per CPU, mode and class (the id
/// with row 0), which of the 256 rows are taken and where to look next.
#[derive(Debug, Default)]
struct Ids(IdMap<Rows>);

/// The rows of one CPU, mode and class.
#[derive(Debug, Default)]
struct Rows {
    taken: [u64; 4],
    /// The row to try first (one past the last handed out).
    cursor: u32,
}

impl Rows {
    fn is_taken(&self, row: u32) -> bool {
        self.taken[(row / 64) as usize] & (1 << (row % 64)) != 0
    }

    fn set(&mut self, row: u32, taken: bool) {
        let word = &mut self.taken[(row / 64) as usize];
        if taken {
            *word |= 1 << (row % 64);
        } else {
            *word &= !(1 << (row % 64));
        }
    }
}

/// sys/sys/pmc.h (PMC_VERSION 0x0A000000) `PMC_ID_MAKE_ID`.
pub(crate) fn make_id(cpu: u32, mode: u32, class: u32, row: u32) -> u32 {
    ((cpu & 0xFFF) << 20) | ((mode & 0xF) << 16) | ((class & 0xFF) << 8) | (row & 0xFF)
}

fn state_from_u8(v: u8) -> State {
    const STATES: [State; 6] = [
        State::Disabled,
        State::Free,
        State::Allocated,
        State::Stopped,
        State::Running,
        State::Deleted,
    ];
    STATES
        .into_iter()
        .find(|s| *s as u8 == v)
        .unwrap_or(State::Deleted)
}

impl Registry {
    pub(crate) fn new() -> Registry {
        Registry {
            ids: Mutex::new(Ids::default()),
            cputype: std::sync::OnceLock::new(),
            rows: Mutex::new(IdMap::default()),
        }
    }

    fn rows(&self) -> std::sync::MutexGuard<'_, IdMap<Arc<PmcRecord>>> {
        self.rows.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A fresh pmcid in FreeBSD's format (sys/sys/pmc.h `PMC_ID_MAKE_ID`:
    /// CPU 12 bits, mode 4, class 8, row index 8), so that a program's
    /// `PMC_ID_TO_CPU`/`_MODE`/`_CLASS`/`_ROWINDEX` read the PMC's own: `cpu`
    /// (0xFFF, `PMC_CPU_ANY` cut to 12 bits, for a process PMC), `mode`,
    /// `class` (`enum pmc_class`) and a row index no live PMC of this owner
    /// with the same CPU, mode and class has. Rows go round: an id comes
    /// back only after the 255 others of its CPU, mode and class were
    /// handed out. None when all 256 rows are in use.
    pub(crate) fn next_id(&self, cpu: u32, mode: u32, class: u32) -> Option<PmcId> {
        let key = make_id(cpu, mode, class, 0);
        let mut ids = self.ids.lock().unwrap_or_else(|p| p.into_inner());
        let rows = ids.0.entry(key).or_default();
        let row = (0..256)
            .map(|i| (rows.cursor + i) % 256)
            .find(|&row| !rows.is_taken(row))?;
        rows.cursor = row + 1;
        rows.set(row, true);
        Some(PmcId(key | row))
    }

    /// The owner's backend's `cputype`, asked once.
    pub(crate) fn cputype(&self, ask: impl FnOnce() -> String) -> &str {
        self.cputype.get_or_init(ask)
    }

    /// Gives back an id [`Registry::next_id`] handed out (the PMC was
    /// released, or its allocation failed).
    pub(crate) fn forget_id(&self, id: PmcId) {
        let mut ids = self.ids.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(rows) = ids.0.get_mut(&(id.0 & !0xFF)) {
            rows.set(id.0 & 0xFF, false);
        }
    }

    /// Lists a PMC: its row is `record`, which the PMC keeps writing.
    pub(crate) fn insert(&self, record: Arc<PmcRecord>) {
        self.rows().insert(record.id.0, record);
    }

    /// Removes a released PMC's row and frees its id.
    pub(crate) fn remove(&self, id: PmcId) {
        self.rows().remove(&id.0);
        self.forget_id(id);
    }

    /// Another PMC of this owner than `id` that monitors `pid`.
    pub(crate) fn other_monitor(&self, id: PmcId, pid: u32) -> Option<PmcId> {
        // The lowest such id, as the tree this was gave.
        self.rows()
            .values()
            .filter(|row| row.id != id && row.targets().contains(&pid))
            .map(|row| row.id)
            .min_by_key(|id| id.0)
    }

    /// Marks the running PMCs `ids` Stopped: their log was closed, and
    /// hwpmc stops the PMCs that need the log when it is deconfigured (the
    /// owner has already stopped their counters). Each PMC finishes that
    /// stop at its next operation ([`PmcRecord::take_stopped_by_log`]).
    pub(crate) fn mark_stopped_by_log_close(&self, ids: &[u32]) {
        let rows = self.rows();
        for row in ids.iter().filter_map(|id| rows.get(id)) {
            row.stop_for_log_close();
        }
    }

    /// Whether the owner has PMCs.
    pub(crate) fn is_empty(&self) -> bool {
        self.rows().is_empty()
    }

    /// Every row as it is now (see [`PmcRecord::info`] for `exists`).
    pub(crate) fn snapshot(&self, exists: impl Fn(u32) -> bool) -> Vec<PmcInfo> {
        let mut rows: Vec<PmcInfo> = self.rows().values().map(|row| row.info(&exists)).collect();
        rows.sort_by_key(|row| row.id.0);
        rows
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record_in(state: State) -> PmcRecord {
        PmcRecord::new(PmcInfo {
            id: PmcId(1),
            name: "task-clock".into(),
            class: Class::Software,
            mode: Mode::TC,
            flags: Flags::empty(),
            cpu: Cpu::Any,
            state,
            owner_pid: 1,
            reload_count: 0,
            targets: Vec::new(),
        })
    }

    #[test]
    fn every_state_survives_the_shared_byte() {
        for s in [
            State::Disabled,
            State::Free,
            State::Allocated,
            State::Stopped,
            State::Running,
            State::Deleted,
        ] {
            let shared = record_in(State::Free);
            shared.store(s);
            assert_eq!(shared.load(), s);
        }
    }

    /// Rows go round per CPU, mode and class: a released id comes back
    /// only after the other 255 were handed out, and with all 256 in use
    /// there is none; another CPU's (or mode's, or class's) rows are apart.
    #[test]
    fn row_indexes_go_round_and_run_out_per_cpu_mode_and_class() {
        let r = Registry::new();
        let ids: Vec<u32> = (0..256).map(|_| r.next_id(3, 1, 7).unwrap().0).collect();
        assert_eq!(ids[0], make_id(3, 1, 7, 0));
        assert_eq!(ids[255], make_id(3, 1, 7, 255));
        assert_eq!(r.next_id(3, 1, 7), None, "all 256 rows in use");
        for (cpu, mode, class) in [(4, 1, 7), (3, 2, 7), (3, 1, 8), (0xFFF, 1, 7)] {
            assert_eq!(
                r.next_id(cpu, mode, class),
                Some(PmcId(make_id(cpu, mode, class, 0)))
            );
        }
        r.forget_id(PmcId(ids[10]));
        r.forget_id(PmcId(ids[3]));
        assert_eq!(r.next_id(3, 1, 7), Some(PmcId(ids[3])));
        assert_eq!(r.next_id(3, 1, 7), Some(PmcId(ids[10])));
        assert_eq!(r.next_id(3, 1, 7), None);
        // From a released row on, the others first.
        let fresh = Registry::new();
        let a = fresh.next_id(0, 0, 0).unwrap();
        fresh.forget_id(a);
        assert_eq!(fresh.next_id(0, 0, 0), Some(PmcId(make_id(0, 0, 0, 1))));
    }

    #[test]
    fn a_log_close_stops_only_running_pmcs_and_says_so_once() {
        let running = record_in(State::Running);
        let allocated = record_in(State::Allocated);
        running.stop_for_log_close();
        allocated.stop_for_log_close();
        assert_eq!(running.load(), State::Stopped);
        assert_eq!(allocated.load(), State::Allocated);
        assert!(running.take_stopped_by_log());
        assert!(!running.take_stopped_by_log(), "the mark is taken once");
        assert_eq!(running.load(), State::Stopped);
        assert!(!allocated.take_stopped_by_log());
    }
}
