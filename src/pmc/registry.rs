//! The pmcinfo registry: this process's PMCs as `pmc_pmcinfo` lists them.
//!
//! Each PMC's row is written when its targets or settings change
//! (`Pmc::publish`), never on start/stop: the state lives in a
//! [`SharedState`], an atomic the PMC and its row share, so the hot path
//! takes no lock. Each row also names its backend (the `Arc`'s address),
//! so that the detach rule looks only at PMCs on the same machine (the
//! simulators of concurrent tests are different machines).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU8, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use crate::machine::PmcInfo;
use crate::{PmcId, State};

static NEXT_ID: AtomicU32 = AtomicU32::new(1);

static REGISTRY: Mutex<BTreeMap<u32, Row>> = Mutex::new(BTreeMap::new());

/// A pmcinfo row, the PMC's shared state, and its backend's address.
struct Row {
    info: PmcInfo,
    state: SharedState,
    backend: usize,
}

/// A fresh pmcid: ids are never reused within a process.
pub(super) fn next_id() -> PmcId {
    PmcId(NEXT_ID.fetch_add(1, Ordering::Relaxed))
}

/// A PMC's state, shared between the PMC and its registry row. `State` is
/// `#[repr(u8)]`: one relaxed byte store per start/stop.
#[derive(Debug, Clone)]
pub(super) struct SharedState(Arc<AtomicU8>);

impl SharedState {
    pub(super) fn new(state: State) -> SharedState {
        SharedState(Arc::new(AtomicU8::new(state as u8)))
    }

    #[inline]
    pub(super) fn store(&self, state: State) {
        self.0.store(state as u8, Ordering::Relaxed);
    }

    pub(super) fn load(&self) -> State {
        state_from_u8(self.0.load(Ordering::Relaxed))
    }

    /// `from` → `to` if the state is still `from`.
    fn replace(&self, from: State, to: State) {
        let _ = self
            .0
            .compare_exchange(from as u8, to as u8, Ordering::Relaxed, Ordering::Relaxed);
    }
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

/// Writes (or replaces) a PMC's row.
pub(super) fn publish(info: PmcInfo, state: &SharedState, backend: usize) {
    if let Ok(mut r) = REGISTRY.lock() {
        r.insert(
            info.id.0,
            Row {
                info,
                state: state.clone(),
                backend,
            },
        );
    }
}

/// Removes a released PMC's row.
pub(super) fn remove(id: PmcId) {
    if let Ok(mut r) = REGISTRY.lock() {
        r.remove(&id.0);
    }
}

/// Another PMC on the same backend as `id` that monitors `pid`.
pub(super) fn other_monitor(backend: usize, id: PmcId, pid: u32) -> Option<PmcId> {
    let r = REGISTRY.lock().ok()?;
    r.values()
        .find(|row| row.backend == backend && row.info.id != id && row.info.targets.contains(&pid))
        .map(|row| row.info.id)
}

/// Marks the running PMCs `ids` Stopped: their log was closed, and hwpmc
/// stops the PMCs that need the log when it is deconfigured (the log
/// module has already stopped their counters).
pub(crate) fn mark_stopped_by_log_close(ids: &[u32]) {
    if let Ok(r) = REGISTRY.lock() {
        for row in ids.iter().filter_map(|id| r.get(id)) {
            row.state.replace(State::Running, State::Stopped);
        }
    }
}

/// Every row, with the current states.
pub(crate) fn registry_snapshot() -> Vec<PmcInfo> {
    REGISTRY
        .lock()
        .map(|r| {
            r.values()
                .map(|row| PmcInfo {
                    state: row.state.load(),
                    ..row.info.clone()
                })
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

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
            let shared = SharedState::new(State::Free);
            shared.store(s);
            assert_eq!(shared.load(), s);
        }
    }

    #[test]
    fn a_log_close_stops_only_running_pmcs() {
        let running = SharedState::new(State::Running);
        let allocated = SharedState::new(State::Allocated);
        running.replace(State::Running, State::Stopped);
        allocated.replace(State::Running, State::Stopped);
        assert_eq!(running.load(), State::Stopped);
        assert_eq!(allocated.load(), State::Allocated);
    }
}
