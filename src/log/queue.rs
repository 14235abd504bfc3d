//! [`QueuedWriter`]: a log destination that never makes the log's caller
//! wait for the log's reader, as hwpmc's log never makes PMCSTOP,
//! PMCRELEASE or CLOSELOG wait (hwpmc_logging.c).
//!
//! hwpmc writes records into a fixed pool of buffers — `kern.hwpmc.
//! nbuffers_pcpu` (default 32) per CPU of `kern.hwpmc.logbuffersize` KiB
//! (default 256) each — and a per-owner kthread (`pmclog_loop`) writes the
//! filled ones to the log's file. A record that finds no free buffer
//! (`pmclog_reserve` → `pmclog_get_buffer` fails) is not written and
//! counted in `pm_buffer_requests_failed`. `pmclog_close` queues CLOSELOG
//! and returns without waiting for the kthread; `pmclog_deconfigure_log`
//! signals the kthread out of a blocked write and throws the queued buffers
//! away.
//!
//! Here the same, for destinations a reader drains (pipes, FIFOs and
//! sockets; a regular file, a disk or a device is written directly, as
//! before, losing nothing): [`crate::log::LogWriter`] hands its buffer of whole
//! records to [`QueuedWriter::write`], which queues a copy for the
//! `pmc-log-write` thread while the queue holds less than
//! [`capacity`] bytes, and otherwise drops the records, counts them
//! ([`QueueCounts`]) and, once a later write finds room, queues a DROPNOTIFY
//! carrying the number of samples (CALLCHAIN records) lost, before the
//! records that fit. The thread writes at most `PIPE_BUF` bytes at a time
//! after `poll` says the destination is writable, so it never blocks in
//! `write(2)` on a full pipe and notices a close. Closing (dropping the
//! writer, after CLOSELOG) waits while the reader keeps taking data; when
//! the destination takes nothing for [`CLOSE_STALL`], the rest is
//! dropped, counted, and the close returns.

use std::collections::VecDeque;
use std::fs::File;
use std::io::Write;
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::{HEADER_LEN, LogRecord, kind};

/// hwpmc's `kern.hwpmc.nbuffers_pcpu` default (`PMC_NLOGBUFFERS_PCPU`).
pub const NBUFFERS_PCPU: usize = 32;
/// hwpmc's `kern.hwpmc.logbuffersize` default, bytes
/// (`PMC_LOG_BUFFER_SIZE`, 256 KiB).
pub const LOG_BUFFER_SIZE: usize = 256 * 1024;
/// How long a close waits for a destination that takes no byte, before it
/// drops what is still queued.
pub const CLOSE_STALL: Duration = Duration::from_secs(5);
/// The writer thread looks at its close flags this often while the
/// destination is full (hwpmc's `pmclog_loop` sleeps 250 ms the same way).
const POLL_INTERVAL_MS: u16 = 100;
/// A write of at most `PIPE_BUF` bytes to a pipe `poll` calls writable
/// does not block (POSIX).
const PIPE_BUF: usize = 4096;

/// The queue's bound for a machine of `ncpu` CPUs: hwpmc's pool,
/// `nbuffers_pcpu × logbuffersize` per CPU. As hwpmc's loader tunables,
/// the environment may set them when the log is configured:
/// `PMC_NBUFFERS_PCPU` (buffers per CPU, > 0) and `PMC_LOGBUFFERSIZE`
/// (KiB, 1 to 16384), their product at most 32 MiB per CPU; a value
/// outside those ranges gives both defaults, as `pmclog_initialize` does.
pub fn capacity(ncpu: usize) -> usize {
    let tunable = |name: &str| {
        std::env::var(name)
            .ok()
            .and_then(|v| v.trim().parse::<usize>().ok())
    };
    let nbuffers = tunable("PMC_NBUFFERS_PCPU").unwrap_or(NBUFFERS_PCPU);
    let size_kib = tunable("PMC_LOGBUFFERSIZE").unwrap_or(LOG_BUFFER_SIZE / 1024);
    let valid =
        nbuffers > 0 && (1..=16 * 1024).contains(&size_kib) && nbuffers * size_kib <= 32 * 1024;
    let per_cpu = if valid {
        nbuffers * size_kib * 1024
    } else {
        NBUFFERS_PCPU * LOG_BUFFER_SIZE
    };
    per_cpu * ncpu.max(1)
}

/// What the queued logs of one owner have been offered and dropped, as
/// hwpmc's `pmc_stats` count them: shared by every [`QueuedWriter`] an
/// [`crate::Owner`] configures, read by [`QueueCounts::stats`].
#[derive(Debug, Default)]
pub struct QueueCounts {
    buffer_requests: AtomicU64,
    buffer_requests_failed: AtomicU64,
    samples_dropped: AtomicU64,
}

/// What the queued logs of an owner have dropped so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QueueStats {
    /// Records offered to a queued log (hwpmc's `pm_buffer_requests`).
    pub buffer_requests: u64,
    /// Records dropped because the queue was full or the destination
    /// stayed full at close (`pm_buffer_requests_failed`).
    pub buffer_requests_failed: u64,
    /// Of those, samples (CALLCHAIN records).
    pub samples_dropped: u64,
}

impl QueueCounts {
    /// The counts so far.
    pub fn stats(&self) -> QueueStats {
        QueueStats {
            buffer_requests: self.buffer_requests.load(Relaxed),
            buffer_requests_failed: self.buffer_requests_failed.load(Relaxed),
            samples_dropped: self.samples_dropped.load(Relaxed),
        }
    }
}

/// Whether a destination of this type is written through the queue:
/// pipes, FIFOs and sockets, which wait for a reader. Files, disks and
/// devices are written directly (a write error such as `/dev/full`'s
/// ENOSPC comes back from the next flush, as before).
pub fn wants_queue(file: &File) -> bool {
    use std::os::unix::fs::FileTypeExt;
    file.metadata()
        .is_ok_and(|m| m.file_type().is_fifo() || m.file_type().is_socket())
}

#[derive(Default)]
struct State {
    /// Where offered and dropped records are counted.
    counts: Arc<QueueCounts>,
    chunks: VecDeque<Vec<u8>>,
    queued: usize,
    capacity: usize,
    /// Dropped since the last DROPNOTIFY: samples, and the timestamp of
    /// the last dropped record.
    unreported_samples: u64,
    unreported: bool,
    last_dropped_ts: u64,
    /// Bytes written so far (a close waits while this grows).
    written: u64,
    closing: bool,
    abandon: bool,
    done: bool,
    /// The destination failed: the thread stops writing.
    failed: bool,
    /// The destination's error, for the next write or flush.
    error: Option<std::io::Error>,
}

struct Shared {
    state: Mutex<State>,
    changed: Condvar,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// A destination written by a thread of its own through a bounded queue.
/// Each [`Write::write`] must be whole records (what `LogWriter` hands
/// over); it always takes all of `buf`, queued or dropped.
pub struct QueuedWriter {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for QueuedWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QueuedWriter").finish_non_exhaustive()
    }
}

impl QueuedWriter {
    /// Starts the writer thread on `file`, queueing at most `capacity`
    /// bytes, counting in `counts`.
    pub fn spawn(
        file: File,
        capacity: usize,
        counts: Arc<QueueCounts>,
    ) -> std::io::Result<QueuedWriter> {
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                counts,
                capacity,
                ..State::default()
            }),
            changed: Condvar::new(),
        });
        let for_thread = shared.clone();
        let thread = std::thread::Builder::new()
            .name("pmc-log-write".into())
            .spawn(move || write_loop(&for_thread, file))?;
        Ok(QueuedWriter {
            shared,
            thread: Some(thread),
        })
    }

    /// [`QueuedWriter::spawn`] with the bound [`capacity`] gives a
    /// machine of `ncpu` CPUs, as a log's destination.
    pub fn for_log(
        file: File,
        ncpu: usize,
        counts: Arc<QueueCounts>,
    ) -> crate::Result<QueuedWriter> {
        QueuedWriter::spawn(file, capacity(ncpu), counts).map_err(|e| crate::Error::Log {
            what: format!(
                "configure_logfile_fd: starting the log's writer thread failed: {e}; \
                 raise the process's thread limit or free memory"
            ),
            source: Some(e),
        })
    }
}

/// The records in `bytes` (whole records, as encoded here): how many, how
/// many are CALLCHAINs, and the last one's timestamp.
fn count_records(bytes: &[u8]) -> (u64, u64, u64) {
    let (mut records, mut samples, mut last_ts) = (0, 0, 0);
    let mut at = 0;
    while let Some(header) = bytes.get(at..at + HEADER_LEN) {
        let word = u32::from_ne_bytes([header[0], header[1], header[2], header[3]]);
        let len = (word & 0xFFFF) as usize;
        records += 1;
        if (word >> 16) as u8 == kind::CALLCHAIN {
            samples += 1;
        }
        let mut ts = [0; 8];
        ts.copy_from_slice(&header[8..16]);
        last_ts = u64::from_ne_bytes(ts);
        if len < HEADER_LEN {
            break;
        }
        at += len;
    }
    (records, samples, last_ts)
}

/// The length of the longest run of whole records at the start of
/// `bytes` that is at most `room` bytes.
fn whole_records_within(bytes: &[u8], room: usize) -> usize {
    let mut at = 0;
    while let Some(header) = bytes.get(at..at + HEADER_LEN) {
        let word = u32::from_ne_bytes([header[0], header[1], header[2], header[3]]);
        let len = (word & 0xFFFF) as usize;
        if len < HEADER_LEN || at + len > room.min(bytes.len()) {
            break;
        }
        at += len;
    }
    at
}

/// The last record of `bytes`, if it is a CLOSELOG.
fn last_closelog(bytes: &[u8]) -> Option<&[u8]> {
    let (mut at, mut last) = (0, None);
    while let Some(header) = bytes.get(at..at + HEADER_LEN) {
        let word = u32::from_ne_bytes([header[0], header[1], header[2], header[3]]);
        let len = (word & 0xFFFF) as usize;
        if len < HEADER_LEN {
            return None;
        }
        last = Some((at, (word >> 16) as u8));
        at += len;
    }
    match last {
        Some((start, kind::CLOSELOG)) if at == bytes.len() => Some(&bytes[start..]),
        _ => None,
    }
}

fn count_dropped(state: &mut State, bytes: &[u8]) {
    if bytes.is_empty() {
        return;
    }
    let (records, samples, ts) = count_records(bytes);
    state
        .counts
        .buffer_requests_failed
        .fetch_add(records, Relaxed);
    state.counts.samples_dropped.fetch_add(samples, Relaxed);
    state.unreported = true;
    state.unreported_samples += samples;
    state.last_dropped_ts = ts;
}

impl Write for QueuedWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let mut state = self.shared.lock();
        if let Some(e) = state.error.take() {
            return Err(e);
        }
        if state.failed {
            count_dropped(&mut state, buf);
            return Ok(buf.len());
        }
        (state.counts.buffer_requests).fetch_add(count_records(buf).0, Relaxed);
        let mut chunk = Vec::new();
        if state.unreported {
            let lost = u32::try_from(state.unreported_samples).unwrap_or(u32::MAX);
            LogRecord::Dropnotify { lost: Some(lost) }.encode(state.last_dropped_ts, &mut chunk);
        }
        let room = state.capacity.saturating_sub(state.queued + chunk.len());
        // As hwpmc reserves each record: those that fit are queued.
        let fits = whole_records_within(buf, room);
        if fits > 0 {
            if state.unreported {
                state.unreported = false;
                state.unreported_samples = 0;
            }
            chunk.extend_from_slice(&buf[..fits]);
            state.queued += chunk.len();
            state.chunks.push_back(chunk);
            self.shared.changed.notify_all();
        }
        let rest = &buf[fits..];
        match last_closelog(rest) {
            _ if rest.is_empty() => {}
            Some(closelog) => {
                // The close's CLOSELOG (and the DROPNOTIFY before it) is
                // queued beyond the bound, so that a reader that catches
                // up sees the log end, and how much it lost.
                count_dropped(&mut state, &rest[..rest.len() - closelog.len()]);
                let mut chunk = Vec::new();
                if state.unreported {
                    let lost = u32::try_from(state.unreported_samples).unwrap_or(u32::MAX);
                    LogRecord::Dropnotify { lost: Some(lost) }
                        .encode(state.last_dropped_ts, &mut chunk);
                }
                chunk.extend_from_slice(closelog);
                state.unreported = false;
                state.unreported_samples = 0;
                state.queued += chunk.len();
                state.chunks.push_back(chunk);
                self.shared.changed.notify_all();
            }
            None => count_dropped(&mut state, rest),
        }
        Ok(buf.len())
    }

    /// Does not wait for the thread (hwpmc's FLUSHLOG schedules the I/O);
    /// the destination's error, if the thread met one.
    fn flush(&mut self) -> std::io::Result<()> {
        match self.shared.lock().error.take() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

impl Drop for QueuedWriter {
    /// The close: lets the thread write what is queued while the
    /// destination takes data, drops the rest once it takes nothing for
    /// [`CLOSE_STALL`].
    fn drop(&mut self) {
        let mut state = self.shared.lock();
        state.closing = true;
        self.shared.changed.notify_all();
        let mut seen = state.written;
        let mut since = Instant::now();
        while !state.done {
            if state.written != seen {
                seen = state.written;
                since = Instant::now();
            }
            let stalled = since.elapsed();
            if stalled >= CLOSE_STALL {
                if state.abandon {
                    // The thread is inside one write(2) that does not
                    // return (another writer filled the pipe after poll):
                    // leave it, it ends when the pipe is read or closed.
                    return;
                }
                state.abandon = true;
                since = Instant::now();
                self.shared.changed.notify_all();
                continue;
            }
            state = self
                .shared
                .changed
                .wait_timeout(state, CLOSE_STALL - stalled)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
        drop(state);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The `pmc-log-write` thread: writes queued chunks in order until closed
/// and empty, or abandoned, or the destination fails; then drops (and
/// counts) what is left and closes `file`.
fn write_loop(shared: &Shared, file: File) {
    loop {
        let chunk = {
            let mut state = shared.lock();
            loop {
                if state.abandon || state.failed {
                    break None;
                }
                if let Some(c) = state.chunks.pop_front() {
                    break Some(c);
                }
                if state.closing {
                    break None;
                }
                state = shared
                    .changed
                    .wait(state)
                    .unwrap_or_else(|p| p.into_inner());
            }
        };
        let Some(chunk) = chunk else { break };
        let outcome = write_chunk(shared, &file, &chunk);
        let mut state = shared.lock();
        state.queued -= chunk.len();
        match outcome {
            Ok(()) => {}
            Err(Some(e)) => {
                count_dropped(&mut state, &chunk);
                state.failed = true;
                state.error = Some(e);
            }
            // Abandoned mid-chunk: its records count as dropped.
            Err(None) => count_dropped(&mut state, &chunk),
        }
        shared.changed.notify_all();
    }
    let mut state = shared.lock();
    let left: Vec<Vec<u8>> = state.chunks.drain(..).collect();
    for chunk in &left {
        count_dropped(&mut state, chunk);
    }
    state.queued = 0;
    state.done = true;
    shared.changed.notify_all();
    drop(state);
    drop(file);
}

/// Writes `chunk` in pieces `poll` says fit. `Err(None)`: abandoned by a
/// close; `Err(Some(e))`: the destination failed.
fn write_chunk(shared: &Shared, file: &File, chunk: &[u8]) -> Result<(), Option<std::io::Error>> {
    use nix::poll::{PollFd, PollFlags, poll};
    let mut at = 0;
    while at < chunk.len() {
        let mut fds = [PollFd::new(file.as_fd(), PollFlags::POLLOUT)];
        match poll(&mut fds, POLL_INTERVAL_MS) {
            Ok(0) | Err(nix::errno::Errno::EINTR) => {
                if shared.lock().abandon {
                    return Err(None);
                }
                continue;
            }
            Ok(_) => {}
            Err(e) => return Err(Some(std::io::Error::from(e))),
        }
        // POLLERR/POLLHUP: the write below reports the error.
        let piece = &chunk[at..chunk.len().min(at + PIPE_BUF)];
        match (&*file).write(piece) {
            Ok(0) => return Err(Some(std::io::ErrorKind::WriteZero.into())),
            Ok(n) => {
                at += n;
                shared.lock().written += n as u64;
                shared.changed.notify_all();
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(e) => return Err(Some(e)),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
