//! Opening one counter: the kernel-version fallbacks, the trial open that
//! `allocate` makes, and what a refused slice sibling means.

use pmc_linux::attr::{Attr, AttrBit, EventConfig, SampleType, Software};
use pmc_linux::cgroup::Cgroup;
use pmc_linux::event::{Event, OpenFlags, Target};
use pmc_linux::system;
use std::sync::Mutex;

use super::super::from_linux;
use super::super::sampling;
use super::OpenPlan;
use crate::{Error, Result};

pub(super) fn open_one(attr: &Attr, target: Target, event: &OpenPlan) -> Result<Event> {
    let attr = &sampling::for_this_kernel(attr);
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

/// [`open_one`] counting only the tasks of `cgroup` on `cpu`.
pub(super) fn open_one_in_cgroup(
    attr: &Attr,
    cgroup: &Cgroup,
    cpu: u32,
    event: &OpenPlan,
) -> Result<Event> {
    let attr = &sampling::for_this_kernel(attr);
    let opened = match &event.string {
        Some(s) => {
            Event::open_with_string_in_cgroup(attr, s, cgroup, cpu, None, OpenFlags::empty())
        }
        None => Event::open_in_cgroup(attr, cgroup, cpu, None, OpenFlags::empty()),
    };
    let event_opened = opened.map_err(from_linux)?;
    if let Some(f) = event.filter.as_deref() {
        event_opened.set_filter(f).map_err(from_linux)?;
    }
    Ok(event_opened)
}

/// Opens every attr of `event` (with its slice siblings) on the calling
/// thread and closes them: the errors attach would meet, at allocate.
///
/// A perf open and close of a task counter costs tens of microseconds, ten
/// times the rest of `allocate`, and programs allocate the same event over
/// and over: what opened once is not tried again (a later failure, e.g.
/// after a paranoid change, still surfaces at attach).
pub(in crate::backend::linux) fn trial_open(event: &OpenPlan) -> Result<()> {
    let cache = &event.shared.opened;
    // Looked up by hash and compared in place: the key is copied only
    // when it is new.
    let hash = TrialCache::hash(event);
    if cache.contains(hash, event) {
        return Ok(());
    }
    trial_open_uncached(event)?;
    cache.insert(hash, event);
    Ok(())
}

/// What identifies a trial open: the attrs, the siblings', the probe
/// string and the filter.
type TrialKey = (
    Vec<Attr>,
    Option<sampling::SliceSiblings>,
    Option<std::ffi::CString>,
    Option<String>,
);

/// The events of one backend whose trial open succeeded, by the hash of
/// their key.
#[derive(Debug, Default)]
pub(crate) struct TrialCache(Mutex<std::collections::HashMap<u64, Vec<TrialKey>, KeyIsHash>>);

/// A word-at-a-time multiplicative hash (rustc's FxHash): the key is
/// this process's own attrs, not input an attacker chooses, so SipHash's
/// flood resistance buys nothing, and its cost per small write (the attr
/// hashes field by field) is a measurable part of an allocate (`cargo
/// xtask bench`). Collisions only cost a comparison.
#[derive(Default)]
struct WordHash(u64);

impl WordHash {
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
}

impl std::hash::Hasher for WordHash {
    fn write(&mut self, bytes: &[u8]) {
        let mut words = bytes.chunks_exact(8);
        for w in &mut words {
            self.add(u64::from_le_bytes(w.try_into().unwrap_or([0; 8])));
        }
        for &b in words.remainder() {
            self.add(u64::from(b));
        }
    }

    fn write_u8(&mut self, n: u8) {
        self.add(u64::from(n));
    }

    fn write_u16(&mut self, n: u16) {
        self.add(u64::from(n));
    }

    fn write_u32(&mut self, n: u32) {
        self.add(u64::from(n));
    }

    fn write_u64(&mut self, n: u64) {
        self.add(n);
    }

    fn write_usize(&mut self, n: usize) {
        self.add(n as u64);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// The map's keys are hashes already: used as they are.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct KeyIsHash;

/// Passes a `u64` key through.
#[derive(Default)]
pub(crate) struct PassThrough(u64);

impl std::hash::Hasher for PassThrough {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

impl std::hash::BuildHasher for KeyIsHash {
    type Hasher = PassThrough;

    fn build_hasher(&self) -> PassThrough {
        PassThrough::default()
    }
}

impl TrialCache {
    fn hash(event: &OpenPlan) -> u64 {
        use std::hash::{Hash, Hasher};
        let mut h = WordHash::default();
        event.attrs.hash(&mut h);
        event.slices.hash(&mut h);
        event.string.hash(&mut h);
        event.filter.hash(&mut h);
        h.finish()
    }

    // Whole values compared, not iterators over them: optimized code
    // comparing a flattened iterator branched on the unset payload of its
    // empty state (valgrind memcheck's report in the C API's release test).
    fn matches(key: &TrialKey, event: &OpenPlan) -> bool {
        key.0 == event.attrs
            && key.1 == event.slices
            && key.2 == event.string
            && key.3 == event.filter
    }

    fn contains(&self, hash: u64, event: &OpenPlan) -> bool {
        self.0.lock().is_ok_and(|map| {
            map.get(&hash)
                .is_some_and(|keys| keys.iter().any(|k| Self::matches(k, event)))
        })
    }

    fn insert(&self, hash: u64, event: &OpenPlan) {
        let Ok(mut map) = self.0.lock() else {
            return;
        };
        // A bound for programs that allocate endless distinct events.
        if map.len() >= 4096 {
            map.clear();
        }
        let key = (
            event.attrs.clone(),
            event.slices.clone(),
            event.string.clone(),
            event.filter.clone(),
        );
        map.entry(hash).or_default().push(key);
    }
}

fn trial_open_uncached(event: &OpenPlan) -> Result<()> {
    let target = Target { pid: 0, cpu: -1 };
    for attr in &event.attrs {
        let leader = open_with_fallback(attr, target, event)?;
        for sibling in event.slices.iter().flat_map(|s| s.attrs()) {
            open_sibling(sibling, target, &leader)?;
        }
    }
    Ok(())
}

/// Says why a slice sibling was opened: its permission error is about
/// kernel-side sampling, which the counter itself may not need.
pub(super) fn sibling_error(e: Error) -> Error {
    match e {
        Error::PermissionDenied { op, source, .. } => Error::PermissionDenied {
            reason: system::paranoid()
                .and_then(|level| crate::Reason::Paranoid { level, needed: 1 }.boxed()),
            op: format!(
                "{op}, which LOG_PROCCSW and per-process LOG_PROCEXIT use to read the counter \
                 at context switches and exits (kernel-side samples, even for a user-mode counter)"
            )
            .into(),
            source,
            hint: Some(format!(
                "kernel-side samples need kernel.perf_event_paranoid <= 1 (it is {}); run \
                 `sysctl -w kernel.perf_event_paranoid=1` as root, or grant the program \
                 CAP_PERFMON (Linux >= 5.8) or CAP_SYS_ADMIN",
                system::paranoid().map_or("unknown".into(), |p| p.to_string())
            )),
        },
        other => other,
    }
}

/// Opens a slice sibling into `leader`'s group. A sibling must inherit as
/// its leader does, and an inherited event with `PERF_SAMPLE_READ` — how
/// a sibling's sample carries each thread's count — is refused (EINVAL)
/// by kernels before 6.12 ("We currently do not support PERF_SAMPLE_READ
/// on inherited events", kernel/events/core.c): there the flags that need
/// it are not supported, and the error says so.
pub(super) fn open_sibling(sibling: &Attr, target: Target, leader: &Event) -> Result<Event> {
    Event::open(sibling, target, Some(leader), OpenFlags::empty()).map_err(|e| {
        if e.errno() == libc::EINVAL
            && sibling.is_set(AttrBit::INHERIT)
            && sibling.get_sample_type().contains(SampleType::READ)
            && !inherited_sample_read_supported()
        {
            Error::NotSupported {
                what: "LOG_PROCCSW, and LOG_PROCEXIT with DESCENDANTS, on a process PMC".into(),
                why: format!(
                    "they read each thread's count at its context switches and exit with \
                     PERF_SAMPLE_READ on an inherited event, which Linux accepts from 6.12 on; \
                     this kernel ({}) refuses it (EINVAL). Use a system-mode PMC, or leave \
                     out the flag",
                    system::kernel_release()
                ),
                source: None,
            }
        } else {
            sibling_error(from_linux(e))
        }
    })
}

/// Whether this kernel opens an inherited event with `PERF_SAMPLE_READ`
/// (and `PERF_SAMPLE_TID`, as 6.12's rule asks): a user-only dummy event
/// on the calling thread, tried once.
pub(super) fn inherited_sample_read_supported() -> bool {
    let attr = Attr::new(EventConfig::Software(Software::Dummy))
        .disabled(true)
        .exclude_kernel(true)
        .exclude_hv(true)
        .inherit(true)
        .sample_period(1)
        .sample_type(SampleType::TID | SampleType::READ);
    Event::open(&attr, Target::CALLER, None, OpenFlags::empty()).is_ok()
}

/// Opens, retrying without `inherit_thread` on kernels older than 5.13 that
/// reject it (their inherited counters then include child processes too).
pub(super) fn open_with_fallback(attr: &Attr, target: Target, event: &OpenPlan) -> Result<Event> {
    match open_one(attr, target, event) {
        Err(e) if e.os_errno() == Some(libc::EINVAL) && attr.is_set(AttrBit::INHERIT_THREAD) => {
            open_one(&attr.inherit_thread(false), target, event)
        }
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sampling::SliceSiblings;

    fn plan(slices: Option<SliceSiblings>) -> OpenPlan {
        OpenPlan {
            attrs: vec![Attr::new(EventConfig::Software(Software::TaskClock))],
            cpus: vec![None],
            string: None,
            log: None,
            slices,
            description: "task-clock".into(),
            filter: None,
            shared: std::sync::Arc::default(),
        }
    }

    #[test]
    fn the_trial_cache_tells_plans_apart_by_their_siblings() {
        let leader = Attr::new(EventConfig::Software(Software::TaskClock)).inherit(true);
        let bare = plan(None);
        let switches = plan(Some(SliceSiblings::new(&leader, None)));
        let exits = plan(Some(SliceSiblings::new(&leader, Some(7))));
        let other_exit = plan(Some(SliceSiblings::new(&leader, Some(8))));
        let cache = TrialCache::default();
        let known = |p: &OpenPlan| cache.contains(TrialCache::hash(p), p);
        cache.insert(TrialCache::hash(&bare), &bare);
        assert!(known(&bare));
        assert!(!known(&switches), "siblings make another trial");
        cache.insert(TrialCache::hash(&switches), &switches);
        assert!(known(&switches));
        assert!(!known(&exits), "an exit sibling makes another trial");
        cache.insert(TrialCache::hash(&exits), &exits);
        assert!(known(&exits));
        assert!(!known(&other_exit), "so does another exit tracepoint");
    }
}
