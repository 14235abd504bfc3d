//! [`Owner`]: hwpmc's `struct pmc_owner` as an object — the PMCs of one
//! owner, its log, and the drain that moves what its PMCs produce into
//! that log.
//!
//! FreeBSD has one owner per process: every PMC a process allocates
//! belongs to it, and so does the one log `pmc_configure_logfile` sets.
//! The libpmc-style entry points ([`Pmc::allocate`](crate::Pmc::allocate),
//! [`crate::global::log`], the C API) keep that rule through one lazily
//! created owner, [`Owner::global`]. A program that embeds `pmc` — a
//! profiler next to a library that counts on its own — makes owners of
//! its own with [`Owner::new`]: each has its own PMCs, pmcids, log,
//! statistics and drain thread, and its own backend, which is the one
//! that timestamps and drains its samples.
//!
//! The record flow: a logging target's rings → its backend's
//! [`SampleSource`] (neutral [`BackendEvent`]s) → the owner, which runs
//! hwpmc's logging rules ([`Translator`]) → the [`LogWriter`]. Backends
//! never see the log.

mod drain;
mod log;
mod prepared;
pub(crate) mod registry;
pub(crate) mod translate;
mod unwinding;

use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use crate::PmcInfo;
use crate::backend::Backend;
use crate::backend::event::BackendEvent;
use crate::backend::source::SampleSource;
use crate::periodic::Sweeper;
use crate::{Error, Flags, Mode, Result};
use log::LogState;
pub use log::MemoryLog;
use registry::Registry;
use translate::Translator;

/// The owner of a set of PMCs and of their log (hwpmc's `pmc_owner`).
/// Cloning gives another handle on the same owner.
///
/// ```no_run
/// use pmc::{Cpu, Flags, Mode, Owner};
///
/// // A profiler's own owner: its PMCs, its log, apart from the process's.
/// let owner = Owner::new(pmc::backend::Backend::selected());
/// let log = pmc::MemoryLog::new();
/// owner.configure_logfile(log.clone())?;
/// let mut pmc = owner.allocate("cpu-clock", Mode::TS, Flags::CALLCHAIN, Cpu::Any)?;
/// pmc.start()?;
/// let work: u64 = (0..10_000_000u64).sum();
/// pmc.stop()?;
/// owner.close_logfile()?;
/// println!("{work}: {} records", log.events().map_or(0, |e| e.len()));
/// # Ok::<(), pmc::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct Owner {
    inner: Arc<Inner>,
}

#[derive(Debug)]
pub(crate) struct Inner {
    backend: Backend,
    registry: Registry,
    /// The log, its sticky error and its per-log flags.
    log: Mutex<Option<LogState>>,
    /// The drain lock and what it guards: the registered sources and their
    /// translators. Records are taken out of a source and written to the
    /// log under it, so a flush or close (which drain first) never
    /// overtakes records a concurrent drain holds.
    sources: Mutex<drain::Sources>,
    /// The thread that sweeps the sources while one is registered.
    drainer: Arc<Sweeper>,
    /// CALLCHAIN records written to this owner's logs.
    samples: AtomicU64,
    /// Samples the DROPNOTIFY records written to its logs say were lost.
    lost: AtomicU64,
    /// Records offered to and dropped by its logs on pipes and sockets.
    log_queue: Arc<crate::log::queue::QueueCounts>,
    /// Data pages per ring for logging targets opened from now on (0: the
    /// backend's default).
    buffer_pages: AtomicUsize,
    /// The smallest ring the locked-memory limit cut (KiB), `usize::MAX`
    /// when none was.
    smallest_ring_kib: AtomicUsize,
    /// Bytes of user stack each sample of sampling PMCs allocated from now
    /// on copies (0: none).
    user_stack: AtomicU32,
    /// The specifier parsed last (parsing is a pure function of the text):
    /// a loop that allocates one event, or `PerCpu` allocating it on every
    /// CPU, parses it once.
    last_spec: Mutex<Option<crate::spec::EventSpec>>,
    /// What its backend prepared for recent requests (see
    /// `owner/prepared.rs`).
    prepared: Mutex<prepared::PreparedCache>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.drainer.shut_down();
    }
}

impl Owner {
    /// A new owner on `backend`, with no PMCs and no log.
    pub fn new(backend: impl Into<Backend>) -> Owner {
        Owner {
            inner: Arc::new(Inner {
                backend: backend.into(),
                registry: Registry::new(),
                log: Mutex::new(None),
                sources: Mutex::new(drain::Sources::new(crate::sample::default_unwinder())),
                drainer: Arc::new(Sweeper::new()),
                samples: AtomicU64::new(0),
                lost: AtomicU64::new(0),
                log_queue: Arc::default(),
                buffer_pages: AtomicUsize::new(0),
                smallest_ring_kib: AtomicUsize::new(usize::MAX),
                user_stack: AtomicU32::new(0),
                last_spec: Mutex::new(None),
                prepared: Mutex::default(),
            }),
        }
    }

    /// `spec::parse(text)`, from the last parse when it was of `text`.
    pub(crate) fn parse_spec(
        &self,
        text: &str,
    ) -> std::result::Result<crate::spec::EventSpec, crate::spec::SpecError> {
        let mut last = self
            .inner
            .last_spec
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        if let Some(spec) = last.as_ref().filter(|s| s.text == text) {
            return Ok(spec.clone());
        }
        let spec = crate::spec::parse(text)?;
        *last = Some(spec.clone());
        Ok(spec)
    }

    /// What its backend prepared for an earlier allocation of the same
    /// request, when the backend let the owner keep it (the pmcid aside:
    /// a kept preparation holds none).
    pub(crate) fn kept_preparation(
        &self,
        request: &crate::backend::EventRequest<'_>,
    ) -> Option<Arc<dyn crate::backend::PreparedEvent>> {
        self.prepared_cache().get(request)
    }

    /// `request` prepared by its backend now, and kept if it may be.
    pub(crate) fn prepare(
        &self,
        request: &crate::backend::EventRequest<'_>,
    ) -> Result<Arc<dyn crate::backend::PreparedEvent>> {
        let event = self.binding().prepare(request)?;
        self.prepared_cache().keep(request, &event);
        Ok(event)
    }

    fn prepared_cache(&self) -> std::sync::MutexGuard<'_, prepared::PreparedCache> {
        self.inner
            .prepared
            .lock()
            .unwrap_or_else(|p| p.into_inner())
    }

    /// The backend its PMCs are allocated on.
    pub fn backend(&self) -> &Backend {
        &self.inner.backend
    }

    /// The binding behind [`Owner::backend`], for the crate's own use.
    pub(crate) fn binding(&self) -> &Arc<dyn crate::backend::BackendImpl> {
        self.inner.backend.get()
    }

    /// Its PMCs as `pmc_pmcinfo` lists them, as they are now: what each
    /// PMC's `Pmc::info` says.
    pub fn pmcinfo(&self) -> Vec<PmcInfo> {
        let backend = self.binding();
        self.inner
            .registry
            .snapshot(|pid| backend.process_exists(pid))
    }

    /// The log's clock: its backend's CLOCK_MONOTONIC nanoseconds, the
    /// clock its samples are stamped with.
    pub fn now(&self) -> u64 {
        self.inner.backend.now()
    }

    /// Samples (CALLCHAIN records) and lost samples (DROPNOTIFY counts)
    /// written to this owner's logs so far: for progress displays.
    pub fn stats(&self) -> (u64, u64) {
        (
            self.inner.samples.load(Ordering::Relaxed),
            self.inner.lost.load(Ordering::Relaxed),
        )
    }

    /// Records offered to this owner's logs on pipes, FIFOs and sockets,
    /// and those dropped there for want of buffer space (hwpmc's
    /// `pm_buffer_requests`/`_failed`; see [`crate::log::queue`]).
    pub fn log_queue_stats(&self) -> crate::log::queue::QueueStats {
        self.inner.log_queue.stats()
    }

    /// Data pages per CPU ring of logging PMCs attached from now on (a
    /// power of two; default [`crate::global::log::DEFAULT_BUFFER_PAGES`]).
    /// Like hwpmc's `kern.hwpmc.logbuffersize`: small buffers lose samples
    /// (DROPNOTIFY), large ones cost locked memory
    /// (`kernel.perf_event_mlock_kb`). A ring the mlock limit refuses is
    /// mapped with half the pages, down to one (see
    /// [`Owner::smallest_ring_kib`]).
    pub fn set_buffer_pages(&self, pages: usize) -> Result<()> {
        if pages == 0 || !pages.is_power_of_two() {
            return Err(Error::InvalidArgument {
                op: "set_buffer_pages".into(),
                why: format!("{pages} is not a power of two"),
            });
        }
        self.inner.buffer_pages.store(pages, Ordering::Relaxed);
        Ok(())
    }

    /// The ring size for new logging PMCs: what
    /// [`Owner::set_buffer_pages`] set, or the default.
    pub fn buffer_pages(&self) -> usize {
        self.buffer_pages_setting()
            .unwrap_or(crate::backend::source::DEFAULT_BUFFER_PAGES)
    }

    /// What [`Owner::set_buffer_pages`] set, `None` before any call: the
    /// backend then sizes the rings itself.
    pub(crate) fn buffer_pages_setting(&self) -> Option<usize> {
        match self.inner.buffer_pages.load(Ordering::Relaxed) {
            0 => None,
            pages => Some(pages),
        }
    }

    /// Sampling PMCs allocated from now on copy the user registers and
    /// `bytes` of user stack with each sample of user code (`None`: no
    /// copy, the default), which this owner unwinds into the samples' user
    /// call chains as it writes the log (`--call-graph dwarf`; see
    /// [`crate::sample`]). A multiple of 8, at most
    /// [`crate::sample::MAX_USER_STACK_BYTES`]; perf's default is
    /// [`crate::sample::DEFAULT_USER_STACK_BYTES`]. Backends that cannot
    /// copy stacks refuse such PMCs at allocate (EOPNOTSUPP).
    pub fn set_user_stack(&self, bytes: Option<u32>) -> Result<()> {
        if let Some(b) = bytes {
            check_user_stack_bytes(b)?;
        }
        self.inner
            .user_stack
            .store(bytes.unwrap_or(0), Ordering::Relaxed);
        Ok(())
    }

    /// What [`Owner::set_user_stack`] set.
    pub fn user_stack(&self) -> Option<u32> {
        match self.inner.user_stack.load(Ordering::Relaxed) {
            0 => None,
            b => Some(b),
        }
    }

    /// Replaces the [`StackUnwinder`](crate::sample::StackUnwinder) that
    /// turns samples' user stacks into their logged user call chains
    /// (`None`: samples keep the kernel's frame-pointer chain). An owner
    /// starts with `pmc::sample::DwarfUnwinder` where the `dwarf-unwind`
    /// feature is on, else with none. Takes effect from the
    /// next drain; mappings logged before are not told to the new one.
    pub fn set_stack_unwinder(&self, unwinder: Option<Box<dyn crate::sample::StackUnwinder>>) {
        self.inner.sources().unwinding.replace(unwinder);
    }

    /// The data size in KiB of the smallest ring the locked-memory limit
    /// cut below the size asked for, if any was: what a loss warning can
    /// name as its likely cause.
    pub fn smallest_ring_kib(&self) -> Option<usize> {
        match self.inner.smallest_ring_kib.load(Ordering::Relaxed) {
            usize::MAX => None,
            kib => Some(kib),
        }
    }

    pub(crate) fn registry(&self) -> &Registry {
        &self.inner.registry
    }

    /// Whether `other` is this owner.
    pub fn same_as(&self, other: &Owner) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }

    /// Registers a logging target's source (called as it is opened, before
    /// it is enabled): the owner translates and logs what it produces, and
    /// its drain thread sweeps it. The returned handle drains it a last
    /// time and removes it when dropped.
    pub(crate) fn register_source(
        &self,
        pmcid: u32,
        mode: Mode,
        flags: Flags,
        source: Arc<dyn SampleSource>,
    ) -> Result<SourceHandle> {
        let info = source.info();
        if let Some(kib) = info.ring_cut_to_kib {
            self.inner
                .smallest_ring_kib
                .fetch_min(kib, Ordering::Relaxed);
        }
        let key = drain::register(self, pmcid, mode, flags, source, &info);
        let handle = SourceHandle {
            owner: Arc::downgrade(&self.inner),
            key,
        };
        // A source nobody sweeps would lose samples between stops: an
        // error (the handle unregisters it).
        let weak = Arc::downgrade(&self.inner);
        self.inner
            .drainer
            .registered(crate::periodic::spawn_thread, move || {
                weak.upgrade().map_or(0, |inner| Owner { inner }.sweep())
            })
            .map_err(|e| crate::periodic::spawn_error(&e))?;
        Ok(handle)
    }
}

/// Checks a user-stack copy size (the kernel's rules: a multiple of 8,
/// at most a u16's worth).
pub(crate) fn check_user_stack_bytes(bytes: u32) -> Result<()> {
    if bytes == 0 || !bytes.is_multiple_of(8) || bytes > crate::sample::MAX_USER_STACK_BYTES {
        return Err(Error::InvalidArgument {
            op: "user_stack".into(),
            why: format!(
                "{bytes} bytes: the stack copy is a multiple of 8 from 8 to {}",
                crate::sample::MAX_USER_STACK_BYTES
            ),
        });
    }
    Ok(())
}

/// A registered source: drained a last time and removed when dropped (at
/// detach, release, or an exited target's pruning), before its counters
/// close.
#[derive(Debug)]
pub(crate) struct SourceHandle {
    owner: std::sync::Weak<Inner>,
    key: u64,
}

impl SourceHandle {
    /// Drains the source completely (its PMC stopped): a later start
    /// writes into the log configured then.
    pub(crate) fn drain_stopped(&self) {
        if let Some(inner) = self.owner.upgrade() {
            Owner { inner }.drain_one(self.key, drain::AfterDrain::KeepForRestart);
        }
    }
}

impl Drop for SourceHandle {
    fn drop(&mut self) {
        if let Some(inner) = self.owner.upgrade() {
            Owner { inner }.drain_one(self.key, drain::AfterDrain::Unregister);
        }
    }
}

/// The translator of one registered source and what it still has to log.
#[derive(Debug)]
struct Registered {
    pmcid: u32,
    source: Arc<dyn SampleSource>,
    translator: Translator,
    /// When it was registered: the timestamp of its initial mappings,
    /// which precede its every record.
    attached_at: u64,
    /// Initial mappings read at registration, logged by the first drain.
    pending: Vec<(u64, BackendEvent)>,
}

#[cfg(test)]
mod tests;
