//! The queued log writer: a pipe nobody reads never blocks the log's
//! caller; what did not fit is counted and said by DROPNOTIFY.

use std::io::Read;
use std::os::fd::OwnedFd;
use std::sync::mpsc;
use std::time::Duration;

use super::*;
use crate::backend::sim::SimBackend;
use crate::log::cpu::{self, CpuIdentity};
use crate::log::{LogReader, LogWriter};
use crate::{Owner, Result};

/// Generous: only a hang (the bug) comes near it.
const WATCHDOG: Duration = Duration::from_secs(30);

fn pipe() -> (std::io::PipeReader, File) {
    let (r, w) = std::io::pipe().expect("pipe");
    (r, File::from(OwnedFd::from(w)))
}

fn callchain(i: u64) -> LogRecord {
    LogRecord::Callchain {
        pid: 1,
        tid: 1,
        pmcid: 7,
        cpu: 0,
        userspace: true,
        pcs: vec![0x1000 + i; 100],
    }
}

fn read_all(mut r: impl Read) -> Vec<LogRecord> {
    let mut bytes = Vec::new();
    r.read_to_end(&mut bytes).expect("read the pipe");
    let mut reader = LogReader::from_memory();
    reader.feed(&bytes);
    reader
        .map(|e| e.expect("every record whole").record)
        .collect()
}

/// Runs `f` on a thread; fails the test if it does not return within the
/// watchdog (the failure this file is about is a call that never returns).
fn within_watchdog<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(WATCHDOG).unwrap_or_else(|_| {
        panic!(
            "{what} did not return within {} s: it waits for a reader",
            WATCHDOG.as_secs()
        )
    })
}

/// A queue of 4 KiB behind a pipe nobody reads: samples beyond what the
/// pipe and the queue hold are dropped, not waited for; when the reader
/// comes back, it reads every record whole, a DROPNOTIFY whose count is
/// exactly the samples it did not get, and CLOSELOG last.
#[test]
fn a_full_pipe_drops_samples_and_dropnotify_counts_them() {
    let (r, w) = pipe();
    let counts = Arc::new(QueueCounts::default());
    let queue = QueuedWriter::spawn(w, 4096, counts.clone()).expect("spawn");
    let mut log = LogWriter::new(
        queue,
        &CpuIdentity {
            cputype: cpu::PMC_CPU_GENERIC,
            cpuid: String::new(),
        },
    )
    .expect("INITIALIZE");
    const OFFERED: u64 = 2000; // 2000 × 832 bytes: 1.6 MB, far beyond pipe + queue
    let mut log = within_watchdog("writing samples into a full pipe", move || {
        for i in 0..OFFERED {
            log.write(&callchain(i), i).unwrap();
            log.flush().unwrap();
        }
        log
    });
    let reader = std::thread::spawn(move || read_all(r));
    within_watchdog("close with a reader", move || log.close().unwrap());
    let records = reader.join().unwrap();
    let samples = records
        .iter()
        .filter(|r| matches!(r, LogRecord::Callchain { .. }))
        .count() as u64;
    let lost: u64 = records
        .iter()
        .filter_map(|r| match r {
            LogRecord::Dropnotify { lost } => Some(u64::from(lost.expect("our count"))),
            _ => None,
        })
        .sum();
    println!("{OFFERED} samples offered: {samples} read, {lost} lost by DROPNOTIFY");
    assert!(lost > 0, "nothing was dropped: {samples} samples read");
    assert_eq!(samples + lost, OFFERED, "{samples} read + {lost} lost");
    assert!(matches!(
        records.first(),
        Some(LogRecord::Initialize { .. })
    ));
    assert!(matches!(records.last(), Some(LogRecord::Closelog)));
    // This writer's counts, exactly: every dropped sample was reported.
    assert_eq!(counts.stats().samples_dropped, lost);
    assert!(counts.stats().buffer_requests_failed >= lost);
    assert_eq!(
        counts.stats().buffer_requests,
        OFFERED + 2,
        "INITIALIZE, the samples and CLOSELOG"
    );
}

/// The owner's log on a pipe nobody reads (issue 32's `pmc_stop` that
/// never returned): writing, flushing and closing all return; the close
/// gives up on the pipe after [`CLOSE_STALL`] and counts what it dropped.
#[test]
fn flush_and_close_do_not_wait_for_a_pipe_nobody_reads() -> Result<()> {
    let owner = Owner::new(SimBackend::new(2));
    let (r, w) = pipe();
    owner.configure_logfile_fd(&w)?;
    drop(w);
    let owner = within_watchdog("writelog/flush into a full pipe", move || {
        // 24-byte records, far beyond a 64 KiB pipe and the 16 MiB+ queue.
        for i in 0..(capacity(2) / 24 + 100_000) {
            owner.writelog(i as u32).unwrap();
            if i % 4096 == 0 {
                owner.flush_logfile().unwrap();
            }
        }
        owner.flush_logfile().unwrap();
        owner
    });
    assert!(
        owner.log_queue_stats().buffer_requests_failed > 0,
        "the queue dropped nothing"
    );
    within_watchdog("close_logfile on a full pipe", move || {
        owner.close_logfile().unwrap()
    });
    drop(r);
    Ok(())
}

/// A regular file is written directly: nothing is queued or dropped.
#[test]
fn regular_files_are_not_queued() {
    let file = tempfile::tempfile().unwrap();
    assert!(!wants_queue(&file));
    let (_r, w) = pipe();
    assert!(wants_queue(&w));
}
