//! The process-wide log (`pmc_configure_logfile` and friends). Sampling
//! PMCs and the `LOG_PROC*` flags write into it; a PMC that needs it and
//! starts without one gets [`crate::Error::LogRequired`]. The operations
//! follow hwpmc's CONFIGURELOG / FLUSHLOG / CLOSELOG / WRITELOG
//! (hwpmc_mod.c `pmc_syscall_handler`, hwpmc_logging.c): without a log,
//! flush, writelog and deconfigure are EINVAL, and close is EINVAL unless
//! the process owns PMCs; a second configure is EBUSY.

use std::io::Write;
use std::sync::Mutex;

use super::{LogRecord, LogWriter};
use crate::{Error, Result};

type Writer = LogWriter<Box<dyn Write + Send>>;

static SINK: Mutex<Option<Writer>> = Mutex::new(None);

fn lock() -> std::sync::MutexGuard<'static, Option<Writer>> {
    SINK.lock().unwrap_or_else(|p| p.into_inner())
}

/// Directs the log to `out` (`pmc_configure_logfile`), starting with an
/// INITIALIZE record. The log owns `out` from now on. Like hwpmc's
/// `pmclog_configure_log`, a second configure while a log is configured
/// fails with EBUSY: close the first one with [`close_logfile`].
pub fn configure_logfile(out: impl Write + Send + 'static) -> Result<()> {
    let mut sink = lock();
    if sink.is_some() {
        return Err(Error::Busy {
            op: "configure_logfile",
            why: "a log file is already configured; close it with close_logfile first".into(),
        });
    }
    *sink = Some(LogWriter::new(Box::new(out) as Box<dyn Write + Send>)?);
    KERNEL_MAPPINGS_LOGGED.store(false, std::sync::atomic::Ordering::Relaxed);
    ALL_PROCESS_MAPPINGS_LOGGED.store(false, std::sync::atomic::Ordering::Relaxed);
    Ok(())
}

/// [`configure_logfile`] on a file descriptor open for writing, as
/// `pmc_configure_logfile(fd)`: the log holds its own reference to the open
/// file (a duplicate, as hwpmc's `fget_write`), so the caller may close its
/// descriptor and the log keeps working.
pub fn configure_logfile_fd(fd: impl std::os::fd::AsFd) -> Result<()> {
    let own = fd.as_fd().try_clone_to_owned().map_err(|e| Error::Log {
        what: format!(
            "configure_logfile_fd: duplicating the descriptor failed: {e}; pass an open \
             descriptor (and stay under RLIMIT_NOFILE)"
        ),
        os_errno: e.raw_os_error(),
    })?;
    configure_logfile(std::fs::File::from(own))
}

/// Whether a log is configured.
pub fn is_configured() -> bool {
    lock().is_some()
}

/// Writes out buffered records (`pmc_flush_logfile`), after collecting
/// the samples the running PMCs have produced. Without a log, EINVAL (as
/// hwpmc's FLUSHLOG); after a write error on the destination (ENOSPC,
/// EIO, …), that error with its errno, as hwpmc's `pmclog_flush` returns
/// `po_error`.
pub fn flush_logfile() -> Result<()> {
    <crate::backend::Native as crate::backend::Platform>::drain_samples();
    match lock().as_mut() {
        Some(w) => w.flush(),
        None => Err(no_log("flush_logfile")),
    }
}

/// Closes and deconfigures the log (`pmc_close_logfile`): writes
/// CLOSELOG, flushes, stops the PMCs that write into the log (hwpmc_mod.c
/// stops the running `PMC_F_NEEDS_LOGFILE` PMCs before
/// `pmclog_deconfigure_log`) and drops the destination. A write error of
/// the destination is returned after the log is deconfigured.
///
/// Without a log, as hwpmc's CLOSELOG: EINVAL when the process owns no
/// PMCs (it has no owner descriptor); an owner of PMCs gets success, as
/// `pmclog_close` returns 0 with nothing to close.
pub fn close_logfile() -> Result<()> {
    match take_log() {
        Some(w) => close_log(w),
        None => close_without_log(!crate::pmc::registry_snapshot().is_empty()),
    }
}

/// Deconfigures the log as hwpmc's CONFIGURELOG with a negative fd
/// (`pmc_configure_logfile(-1)`, and any other negative fd): as
/// [`close_logfile`] with a log, EINVAL without one whatever the process
/// owns.
pub fn deconfigure_logfile() -> Result<()> {
    match take_log() {
        Some(w) => close_log(w),
        None => Err(no_log("configure_logfile(-1)")),
    }
}

fn take_log() -> Option<Writer> {
    <crate::backend::Native as crate::backend::Platform>::drain_samples();
    lock().take()
}

fn close_log(mut w: Writer) -> Result<()> {
    crate::pmc::mark_stopped_by_log_close(
        &<crate::backend::Native as crate::backend::Platform>::stop_logging_pmcs(),
    );
    w.close()
}

/// CLOSELOG without a log (hwpmc_mod.c): `pmc_find_owner_descriptor`
/// finds none for a process without PMCs → EINVAL; otherwise
/// `pmclog_close`'s 0.
fn close_without_log(owns_pmcs: bool) -> Result<()> {
    if owns_pmcs {
        Ok(())
    } else {
        Err(Error::InvalidArgument {
            op: "close_logfile",
            why: "no log file is configured and this process owns no PMCs \
                  (call configure_logfile first)"
                .into(),
        })
    }
}

/// Writes a USERDATA record (`pmc_writelog`). Without a log, EINVAL.
pub fn writelog(value: u32) -> Result<()> {
    match lock().as_mut() {
        Some(w) => w.write(&LogRecord::Userdata { value }, now()),
        None => Err(no_log("writelog")),
    }
}

/// Appends a record stamped now, if a log is configured.
pub(crate) fn write(record: &LogRecord) -> Result<()> {
    write_at(record, now())
}

/// Set once the kernel's MAP_IN has been written to the current log
/// (hwpmc's `PMC_PO_INITIAL_MAPPINGS_DONE`).
static KERNEL_MAPPINGS_LOGGED: std::sync::atomic::AtomicBool =
    std::sync::atomic::AtomicBool::new(false);

/// Whether the kernel's mappings still have to be logged to the current
/// log; true only for the first caller per log.
pub(crate) fn claim_kernel_mappings() -> bool {
    is_configured() && !KERNEL_MAPPINGS_LOGGED.swap(true, std::sync::atomic::Ordering::Relaxed)
}

/// Set once every process's mappings have been written to the current log
/// for a system sampling PMC (hwpmc's `po_logprocmaps`).
static ALL_PROCESS_MAPPINGS_LOGGED: std::sync::atomic::AtomicBool =
    std::sync::atomic::AtomicBool::new(false);

/// Whether every process's mappings still have to be logged to the
/// current log; true only for the first caller per log.
pub(crate) fn claim_all_process_mappings() -> bool {
    is_configured() && !ALL_PROCESS_MAPPINGS_LOGGED.swap(true, std::sync::atomic::Ordering::Relaxed)
}

static SAMPLES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
static LOST: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Samples (CALLCHAIN records) and lost samples (DROPNOTIFY counts)
/// written to logs by this process so far: for progress displays.
pub fn stats() -> (u64, u64) {
    use std::sync::atomic::Ordering::Relaxed;
    (SAMPLES.load(Relaxed), LOST.load(Relaxed))
}

/// Held by a backend from taking records out of its buffers until they
/// are in the log, so a flush or close (which drain first) never overtakes
/// records a concurrent drain holds.
#[cfg_attr(
    not(all(
        any(target_os = "linux", target_os = "android"),
        not(pmc_force_portable)
    )),
    allow(dead_code)
)]
static DRAINING: Mutex<()> = Mutex::new(());

/// Takes the drain lock (see [`DRAINING`]).
// Used by the platform backends; a target without one has no caller.
#[cfg_attr(
    not(all(
        any(target_os = "linux", target_os = "android"),
        not(pmc_force_portable)
    )),
    allow(dead_code)
)]
pub(crate) fn draining() -> std::sync::MutexGuard<'static, ()> {
    DRAINING.lock().unwrap_or_else(|p| p.into_inner())
}

/// Writes a drained batch in time order (per-CPU buffers interleave;
/// records of one time keep their order), if a log is configured. A log
/// closed meanwhile loses the batch, as hwpmc's does.
#[cfg_attr(
    not(all(
        any(target_os = "linux", target_os = "android"),
        not(pmc_force_portable)
    )),
    allow(dead_code)
)]
pub(crate) fn write_batch(mut batch: Vec<(u64, LogRecord)>) {
    if batch.is_empty() {
        return;
    }
    batch.sort_by_key(|(t, _)| *t);
    // One lock for the batch: the drainer's sweeps write thousands.
    let mut sink = lock();
    let Some(w) = sink.as_mut() else {
        return;
    };
    for (t, r) in &batch {
        let _ = write_counted(w, r, *t);
    }
}

/// Appends a record with its own timestamp, if a log is configured; only
/// what a log takes counts in [`stats`].
pub(crate) fn write_at(record: &LogRecord, timestamp: u64) -> Result<()> {
    match lock().as_mut() {
        Some(w) => write_counted(w, record, timestamp),
        None => Err(no_log("writelog")),
    }
}

/// Writes `record` to the configured log `w` and counts it in [`stats`].
fn write_counted(w: &mut Writer, record: &LogRecord, timestamp: u64) -> Result<()> {
    use std::sync::atomic::Ordering::Relaxed;
    w.write(record, timestamp)?;
    match record {
        LogRecord::Callchain { .. } => {
            SAMPLES.fetch_add(1, Relaxed);
        }
        LogRecord::Dropnotify { lost } => {
            LOST.fetch_add(u64::from(lost.unwrap_or(1)), Relaxed);
        }
        _ => {}
    }
    Ok(())
}

fn no_log(op: &'static str) -> Error {
    Error::InvalidArgument {
        op,
        why: "no log file is configured (call configure_logfile first)".into(),
    }
}

/// The log's clock: CLOCK_MONOTONIC nanoseconds, the clock sampling PMCs
/// stamp their records with.
pub fn now() -> u64 {
    <crate::backend::Native as crate::backend::Platform>::monotonic_ns()
}

/// Data pages per CPU ring of logging PMCs allocated from now on (a power
/// of two; default [`DEFAULT_BUFFER_PAGES`]). Like hwpmc's
/// `kern.hwpmc.logbuffersize`, a process-wide tunable: small buffers lose
/// samples (DROPNOTIFY), large ones cost locked memory
/// (`kernel.perf_event_mlock_kb`). A ring the mlock limit refuses is
/// mapped with half the pages, down to one (see [`smallest_ring_kib`]).
pub fn set_buffer_pages(pages: usize) -> Result<()> {
    if pages == 0 || !pages.is_power_of_two() {
        return Err(Error::InvalidArgument {
            op: "set_buffer_pages",
            why: format!("{pages} is not a power of two"),
        });
    }
    BUFFER_PAGES.store(pages, std::sync::atomic::Ordering::Relaxed);
    Ok(())
}

/// The ring size for new logging PMCs: what [`set_buffer_pages`] set, or
/// [`DEFAULT_BUFFER_PAGES`].
pub fn buffer_pages() -> usize {
    buffer_pages_setting().unwrap_or(DEFAULT_BUFFER_PAGES)
}

/// What [`set_buffer_pages`] set, `None` before any call: a backend may
/// then size the rings itself (larger where no mlock limit applies).
#[cfg_attr(
    not(all(
        any(target_os = "linux", target_os = "android"),
        not(pmc_force_portable)
    )),
    allow(dead_code)
)]
pub(crate) fn buffer_pages_setting() -> Option<usize> {
    match BUFFER_PAGES.load(std::sync::atomic::Ordering::Relaxed) {
        0 => None,
        pages => Some(pages),
    }
}

/// The default ring size: 512 KiB of 4 KiB pages, perf record's default,
/// which the default `kernel.perf_event_mlock_kb` (516: 512 KiB and the
/// metadata page) lets any user lock on every CPU. It holds about 35 ms
/// of samples with 127-frame callchains at FreeBSD's default rate (a
/// reload count of 65536 cpu-clock ns) on a busy CPU. On Linux, a process
/// with CAP_IPC_LOCK (root), which no mlock limit binds, gets four times
/// as much unless [`set_buffer_pages`] was called: a drainer thread
/// preempted on a loaded machine then loses nothing for about 140 ms.
pub const DEFAULT_BUFFER_PAGES: usize = 128;

/// 0: not set (the default).
static BUFFER_PAGES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// The data size in KiB of the smallest ring the locked-memory limit cut
/// below [`buffer_pages`] in this process, if any was cut: what a loss
/// warning can name as its likely cause.
pub fn smallest_ring_kib() -> Option<usize> {
    match SMALLEST_RING_KIB.load(std::sync::atomic::Ordering::Relaxed) {
        usize::MAX => None,
        kib => Some(kib),
    }
}

/// Notes a ring mapped smaller than asked (the mlock limit), of `kib` KiB.
#[cfg_attr(
    not(all(
        any(target_os = "linux", target_os = "android"),
        not(pmc_force_portable)
    )),
    allow(dead_code)
)]
pub(crate) fn ring_cut_to(kib: usize) {
    SMALLEST_RING_KIB.fetch_min(kib, std::sync::atomic::Ordering::Relaxed);
}

static SMALLEST_RING_KIB: std::sync::atomic::AtomicUsize =
    std::sync::atomic::AtomicUsize::new(usize::MAX);

/// An in-memory log: give a clone to [`configure_logfile`] and read the
/// records back in the same process, without a file.
#[derive(Clone, Debug, Default)]
pub struct MemoryLog {
    bytes: std::sync::Arc<Mutex<Vec<u8>>>,
}

impl MemoryLog {
    /// An empty log.
    pub fn new() -> MemoryLog {
        MemoryLog::default()
    }

    /// Every record written so far (the log keeps them).
    pub fn events(&self) -> std::result::Result<Vec<super::LogEvent>, String> {
        let bytes = self.bytes.lock().unwrap_or_else(|p| p.into_inner()).clone();
        let mut reader = super::LogReader::from_memory();
        reader.feed(&bytes);
        reader.collect()
    }

    /// The raw pmclog bytes so far.
    pub fn bytes(&self) -> Vec<u8> {
        self.bytes.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

impl Write for MemoryLog {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.bytes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Serialises the lib tests that use the process-wide log.
#[cfg(test)]
pub(crate) fn test_log_lock() -> std::sync::MutexGuard<'static, ()> {
    static TESTS: Mutex<()> = Mutex::new(());
    TESTS.lock().unwrap_or_else(|p| p.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// hwpmc_mod.c PMC_OP_CLOSELOG (what libpmc.c pmc_close_logfile
    /// calls): EINVAL only when the process has no owner descriptor; an
    /// owner of PMCs gets pmclog_close's 0 with no log configured.
    /// PMC_OP_CONFIGURELOG with a negative fd and no log is EINVAL whatever
    /// the process owns.
    #[test]
    fn close_without_a_log_is_ok_for_an_owner_of_pmcs_and_deconfigure_is_einval() {
        let _log = test_log_lock();
        let sim: std::sync::Arc<dyn crate::backend::Backend> =
            crate::backend::sim::SimBackend::new(1);
        let pmc = crate::Pmc::allocate_on(
            sim,
            "task-clock",
            crate::Mode::TC,
            crate::Flags::empty(),
            crate::Cpu::Any,
            0,
        )
        .expect("allocate on the simulator");
        assert!(!is_configured());
        close_logfile().expect("CLOSELOG by an owner of PMCs without a log");
        let e = deconfigure_logfile().expect_err("CONFIGURELOG(-1) without a log");
        assert_eq!(e.errno(), libc::EINVAL, "{e}");
        drop(pmc);
    }

    /// hwpmc_mod.c PMC_OP_CLOSELOG: pmc_find_owner_descriptor finds none
    /// (no PMCs, no log) → EINVAL. (The registry is shared by parallel
    /// tests, so this case is checked on the rule itself.)
    #[test]
    fn close_without_a_log_or_pmcs_is_einval() {
        let e = close_without_log(false).expect_err("no owner descriptor");
        assert_eq!(e.errno(), libc::EINVAL, "{e}");
        assert!(close_without_log(true).is_ok());
    }

    /// The ring size is a power of two of pages (perf_event_open(2): the
    /// data area of an mmap is 2^n pages); anything else is EINVAL and
    /// leaves the setting alone. Only the default is set here, so
    /// parallel tests never see another size.
    #[test]
    fn buffer_pages_are_a_power_of_two() {
        for bad in [0, 3, 24] {
            let e = set_buffer_pages(bad).expect_err("not a power of two");
            assert_eq!(e.errno(), libc::EINVAL, "{bad}: {e}");
            assert_eq!(
                buffer_pages(),
                DEFAULT_BUFFER_PAGES,
                "{bad} changed the setting"
            );
        }
        set_buffer_pages(DEFAULT_BUFFER_PAGES).expect("the default");
        assert_eq!(buffer_pages(), DEFAULT_BUFFER_PAGES);
    }

    /// Expectations from hwpmc_mod.c `pmc_syscall_handler` (FLUSHLOG,
    /// WRITELOG, CONFIGURELOG(-1) without an owner/log: EINVAL; CLOSELOG
    /// depends on the PMCs parallel tests hold, so it has its own tests),
    /// hwpmc_logging.c `pmclog_configure_log` (EBUSY when a log is
    /// present) and `pmclog_flush` (returns the kthread's `po_error`).
    #[test]
    fn log_operations_follow_hwpmc() {
        let _log = test_log_lock();
        // No log.
        for (op, r) in [
            ("flush", flush_logfile()),
            ("deconfigure", deconfigure_logfile()),
            ("writelog", writelog(1)),
        ] {
            let e = r.expect_err(op);
            assert_eq!(e.errno(), libc::EINVAL, "{op}: {e}");
            assert!(e.to_string().contains("configure_logfile"), "{e}");
        }

        // A second configure is EBUSY and leaves the first log in place.
        let first = MemoryLog::new();
        configure_logfile(first.clone()).unwrap();
        let e = configure_logfile(MemoryLog::new()).unwrap_err();
        assert_eq!(e.errno(), libc::EBUSY, "{e}");
        writelog(7).unwrap();
        close_logfile().unwrap();
        let kinds: Vec<u8> = first
            .events()
            .unwrap()
            .iter()
            .map(|e| e.record.kind())
            .collect();
        assert_eq!(
            kinds,
            vec![
                super::super::kind::INITIALIZE,
                super::super::kind::USERDATA,
                super::super::kind::CLOSELOG
            ]
        );

        // ENOSPC on the destination reaches flush, with its errno.
        configure_logfile(
            std::fs::File::options()
                .write(true)
                .open("/dev/full")
                .unwrap(),
        )
        .unwrap();
        writelog(1).unwrap();
        let e = flush_logfile().unwrap_err();
        assert_eq!(e.os_errno(), Some(libc::ENOSPC), "{e}");
        assert_eq!(e.errno(), libc::ENOSPC);
        // Closing still deconfigures, and reports the error too.
        assert_eq!(close_logfile().unwrap_err().os_errno(), Some(libc::ENOSPC));
        assert!(!is_configured());

        // The log holds its own reference to the file: the caller's
        // descriptor can go.
        let dir = std::env::temp_dir().join(format!("pmc-log-fd-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("log");
        let file = std::fs::File::create(&path).unwrap();
        configure_logfile_fd(&file).unwrap();
        drop(file);
        writelog(0xfeed).unwrap();
        close_logfile().unwrap();
        let bytes = std::fs::read(&path).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        let mut reader = super::super::LogReader::from_memory();
        reader.feed(&bytes);
        let records: Vec<LogRecord> = reader.map(|e| e.unwrap().record).collect();
        assert!(
            records.contains(&LogRecord::Userdata { value: 0xfeed }),
            "{records:?}"
        );
        assert_eq!(records.last(), Some(&LogRecord::Closelog));
    }

    /// hwpmc_mod.c: the kernel's mappings are logged once per log owner
    /// (`PMC_PO_INITIAL_MAPPINGS_DONE`), every process's once per log for
    /// system sampling PMCs (`po_logprocmaps`): each claim is true for the
    /// first caller after a configure, false without a log (and then not
    /// used up), and the two are independent.
    #[test]
    fn mapping_claims_are_once_per_log() {
        let _log = test_log_lock();
        assert!(!is_configured());
        assert!(!claim_kernel_mappings(), "no log");
        assert!(!claim_all_process_mappings(), "no log");
        for round in 0..2 {
            configure_logfile(MemoryLog::new()).unwrap();
            assert!(claim_all_process_mappings(), "round {round}");
            assert!(!claim_all_process_mappings(), "round {round}");
            assert!(claim_kernel_mappings(), "round {round}");
            assert!(!claim_kernel_mappings(), "round {round}");
            assert!(!claim_all_process_mappings(), "round {round}");
            close_logfile().unwrap();
            assert!(!claim_kernel_mappings());
            assert!(!claim_all_process_mappings());
        }
    }

    /// A drained batch goes in time order with its own timestamps, and
    /// counts its samples (CALLCHAIN records) and lost samples (DROPNOTIFY
    /// counts) in `stats`; without a log nothing is written nor counted.
    /// `write` stamps CLOCK_MONOTONIC now (clock_gettime(2)).
    #[test]
    fn batches_are_written_in_time_order_and_counted() {
        let _log = test_log_lock();
        let chain = |pid| LogRecord::Callchain {
            pid,
            tid: pid,
            pmcid: 0x100,
            cpu: 1,
            userspace: true,
            pcs: vec![0x1000],
        };
        let before = stats();
        write_batch(vec![
            (1, chain(1)),
            (2, LogRecord::Dropnotify { lost: Some(9) }),
        ]);
        let e = write_at(&chain(2), 3).unwrap_err();
        assert_eq!(e.errno(), libc::EINVAL, "{e}");
        let e = write(&chain(2)).unwrap_err();
        assert_eq!(e.errno(), libc::EINVAL, "{e}");
        assert_eq!(stats(), before, "nothing is counted without a log");

        let log = MemoryLog::new();
        configure_logfile(log.clone()).unwrap();
        write_batch(vec![
            (30, LogRecord::Dropnotify { lost: Some(3) }),
            (10, chain(1)),
            (30, chain(2)),
            (20, LogRecord::Dropnotify { lost: Some(4) }),
        ]);
        write_batch(Vec::new());
        let clock = || {
            let t = nix::time::clock_gettime(nix::time::ClockId::CLOCK_MONOTONIC).unwrap();
            t.tv_sec() as u64 * 1_000_000_000 + t.tv_nsec() as u64
        };
        let t0 = clock();
        let stamped = now();
        write(&LogRecord::Userdata { value: 5 }).unwrap();
        let t1 = clock();
        assert!(t0 <= stamped && stamped <= t1, "{t0} <= {stamped} <= {t1}");
        close_logfile().unwrap();
        let after = stats();
        assert_eq!((after.0 - before.0, after.1 - before.1), (2, 7));

        let events = log.events().unwrap();
        // Other lib tests may allocate PMCs meanwhile (PMCALLOCATEDYN
        // records); none writes these kinds.
        let got: Vec<(u64, LogRecord)> = events
            .iter()
            .filter(|e| {
                matches!(
                    e.record,
                    LogRecord::Callchain { .. }
                        | LogRecord::Dropnotify { .. }
                        | LogRecord::Userdata { .. }
                )
            })
            .map(|e| (e.timestamp, e.record.clone()))
            .collect();
        assert_eq!(
            got[..4],
            [
                (10, chain(1)),
                (20, LogRecord::Dropnotify { lost: Some(4) }),
                (30, LogRecord::Dropnotify { lost: Some(3) }),
                (30, chain(2)),
            ]
        );
        assert_eq!(got.len(), 5, "{got:?}");
        assert_eq!(got[4].1, LogRecord::Userdata { value: 5 });
        assert!(t0 <= got[4].0 && got[4].0 <= t1);
        // The raw bytes are the stream: INITIALIZE's header first
        // (_PMCLOG_TO_HEADER(INITIALIZE = 3, 112)).
        let bytes = log.bytes();
        assert_eq!(bytes.len() as u64, events.last().unwrap().end_offset);
        assert_eq!(
            bytes[..4],
            ((0xEEu32 << 24) | (3 << 16) | 112).to_ne_bytes()
        );
    }
}
