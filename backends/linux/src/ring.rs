//! The perf ring buffer: the mmap of an event's metadata page plus 2^n
//! data pages, read with the kernel's head/tail protocol.
//!
//! `data_head` is loaded with acquire ordering (the kernel's writes of the
//! records before it are then visible), each record between the tail and
//! the head is copied into a scratch buffer owned by the ring (grown to
//! the largest record seen, so steady-state reading allocates nothing) and
//! handed out as a slice of it, and `data_tail` is stored with release
//! ordering only after the caller is done with a record.
//!
//! Records are copied, never lent out of the mapping, because nothing can
//! stop a second reader of the same kernel buffer (another `RingBuffer` on
//! the same event, an event routed here with [`Event::set_output`], a
//! forked child) from moving `data_tail` and letting the kernel rewrite the
//! bytes under a borrow. Two readers of one buffer share its records
//! between them; each record a reader holds stays intact.

use std::os::fd::{AsFd, OwnedFd};
use std::time::Duration;

use crate::error::{Error, Hint, Result};
use crate::event::Event;
use crate::sys::abi::mmap_page as mp;
use crate::sys::{self, mmap::Mmap};

/// What [`RingBuffer::wait`] saw.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wait {
    /// Records are available.
    Ready,
    /// The timeout passed with nothing new.
    Timeout,
    /// The event is gone (its task exited): no more records will come.
    /// Those already in the buffer can still be read.
    HungUp,
}

/// A mapped ring buffer of one event (and of the events routed into it
/// with [`Event::set_output`]).
#[derive(Debug)]
pub struct RingBuffer {
    map: Mmap,
    fd: OwnedFd,
    page: usize,
    size: usize,
    /// Bytes of the record handed out last, released at the next call.
    pending: u64,
    tail: u64,
    /// The record handed out last (its first `pending` bytes).
    scratch: Vec<u8>,
}

impl RingBuffer {
    /// Maps `event` with `data_pages` data pages (a power of two),
    /// pre-faulted. Beyond `kernel.perf_event_mlock_kb` (for callers
    /// without CAP_IPC_LOCK) the error names the limit and the sysctl.
    pub fn new(event: &Event, data_pages: usize) -> Result<RingBuffer> {
        if data_pages == 0 || !data_pages.is_power_of_two() {
            return Err(Error::invalid(
                format!("ring buffer of {data_pages} data pages"),
                "the data area must be a power of two pages (1, 2, 4, 8, …)",
            ));
        }
        let page = sys::page_size();
        let len = page
            .checked_mul(data_pages + 1)
            .ok_or_else(|| Error::invalid("ring buffer size", "overflows"))?;
        let fd = event
            .as_fd()
            .try_clone_to_owned()
            .map_err(|e| Error::os("dup(perf fd)", e.raw_os_error().unwrap_or(libc::EIO)))?;
        let map = Mmap::new(fd.as_fd(), len, true, true).map_err(|errno| {
            let kb = len / 1024;
            let hint = match errno {
                libc::EPERM | libc::ENOMEM => Some(Hint::Other(format!(
                    "{kb} KiB exceeds what this user may lock for perf buffers \
                     (kernel.perf_event_mlock_kb = {} KiB per CPU, plus RLIMIT_MEMLOCK): use fewer \
                     pages, raise it with `sysctl kernel.perf_event_mlock_kb=N`, or run with \
                     CAP_IPC_LOCK",
                    crate::system::mlock_kb().map_or("?".into(), |v| v.to_string())
                ))),
                libc::EINVAL => Some(Hint::Other(
                    "the event cannot be mapped (an inherited per-task event, or a group member \
                     whose output goes to another buffer)"
                        .into(),
                )),
                _ => None,
            };
            Error::Os {
                op: format!("mmap({} data pages of perf fd)", data_pages),
                errno,
                hint,
            }
        })?;
        let tail = map.load_u64_acquire(mp::DATA_TAIL);
        Ok(RingBuffer {
            map,
            fd,
            page,
            size: page * data_pages,
            pending: 0,
            tail,
            scratch: Vec::new(),
        })
    }

    /// The data area size in bytes.
    pub fn data_size(&self) -> usize {
        self.size
    }

    /// Bytes published and not yet consumed.
    pub fn available(&self) -> usize {
        let head = self.map.load_u64_acquire(mp::DATA_HEAD);
        head.wrapping_sub(self.tail + self.pending) as usize
    }

    fn release_pending(&mut self) {
        if self.pending != 0 {
            self.tail = self.tail.wrapping_add(self.pending);
            self.pending = 0;
            self.map.store_u64_release(mp::DATA_TAIL, self.tail);
        }
    }

    /// The next record's bytes (header included), or `None` when the
    /// buffer is empty. The bytes are a copy owned by the ring, valid until
    /// the next call; the record's space in the kernel buffer is given back
    /// then (or by [`RingBuffer::release`]).
    ///
    /// ```no_run
    /// # use pmc_linux::ring::RingBuffer;
    /// fn first_two(ring: &mut RingBuffer) -> Vec<Vec<u8>> {
    ///     let mut kept = Vec::new();
    ///     while let Some(record) = ring.next_record() {
    ///         kept.push(record.to_vec()); // copy what must outlive the call
    ///         if kept.len() == 2 {
    ///             break;
    ///         }
    ///     }
    ///     kept
    /// }
    /// ```
    ///
    /// A record cannot be held across the next call, which reuses its
    /// buffer and gives its space back to the kernel:
    ///
    /// ```compile_fail,E0499
    /// # use pmc_linux::ring::RingBuffer;
    /// fn first_two(ring: &mut RingBuffer) -> Vec<Vec<u8>> {
    ///     let first = ring.next_record();
    ///     let second = ring.next_record();
    ///     vec![first.unwrap_or_default().to_vec(), second.unwrap_or_default().to_vec()]
    /// }
    /// ```
    ///
    /// nor outlive the ring (the mapping):
    ///
    /// ```compile_fail,E0505
    /// # use pmc_linux::ring::RingBuffer;
    /// fn first(mut ring: RingBuffer) -> Vec<u8> {
    ///     let record = ring.next_record().unwrap_or_default();
    ///     drop(ring);
    ///     record.to_vec()
    /// }
    /// ```
    pub fn next_record(&mut self) -> Option<&[u8]> {
        self.release_pending();
        let head = self.map.load_u64_acquire(mp::DATA_HEAD);
        if head == self.tail {
            return None;
        }
        let mask = (self.size - 1) as u64;
        let start = (self.tail & mask) as usize;
        if self.scratch.len() < 8 {
            self.scratch.resize(8, 0);
        }
        self.copy(start, 0..8);
        let size = usize::from(u16::from_ne_bytes([self.scratch[6], self.scratch[7]]));
        let avail = head.wrapping_sub(self.tail) as usize;
        if size < 8 || size > avail {
            // A corrupt header: drop everything published so far rather
            // than loop on it.
            self.tail = head;
            self.map.store_u64_release(mp::DATA_TAIL, self.tail);
            return None;
        }
        self.pending = size as u64;
        if self.scratch.len() < size {
            self.scratch.resize(size, 0);
        }
        // The header is already there: copy the rest of the record.
        self.copy((start + 8) & mask as usize, 8..size);
        Some(&self.scratch[..size])
    }

    /// Appends every published record to `out` as the kernel wrote them
    /// (whole records, headers included) and gives their space back to the
    /// kernel at once; returns the bytes appended. One copy of the whole
    /// area instead of one per record: the way to empty a ring fast and
    /// decode its records later, as `perf record` writes the raw area out.
    pub fn take_all_into(&mut self, out: &mut Vec<u8>) -> usize {
        self.release_pending();
        let head = self.map.load_u64_acquire(mp::DATA_HEAD);
        let avail = head.wrapping_sub(self.tail) as usize;
        if avail == 0 {
            return 0;
        }
        if avail > self.size {
            // A corrupt head: drop everything published so far.
            self.tail = head;
            self.map.store_u64_release(mp::DATA_TAIL, self.tail);
            return 0;
        }
        let start = (self.tail & (self.size as u64 - 1)) as usize;
        let at = out.len();
        out.resize(at + avail, 0);
        let first = avail.min(self.size - start);
        self.map
            .copy_out(self.page + start, &mut out[at..at + first]);
        if first < avail {
            self.map.copy_out(self.page, &mut out[at + first..]);
        }
        self.tail = head;
        self.map.store_u64_release(mp::DATA_TAIL, self.tail);
        avail
    }

    /// Copies the data-area bytes starting at `start` (wrapping around the
    /// end) into `self.scratch[range]`.
    fn copy(&mut self, start: usize, range: std::ops::Range<usize>) {
        let dst = &mut self.scratch[range];
        let first = dst.len().min(self.size - start);
        self.map.copy_out(self.page + start, &mut dst[..first]);
        if first < dst.len() {
            self.map.copy_out(self.page, &mut dst[first..]);
        }
    }

    /// Gives the last record's space back to the kernel now.
    pub fn release(&mut self) {
        self.release_pending();
    }

    /// Waits until records are available, the timeout passes (`None`:
    /// forever), or the event hangs up.
    pub fn wait(&self, timeout: Option<Duration>) -> Result<Wait> {
        if self.available() > 0 {
            return Ok(Wait::Ready);
        }
        let ms = timeout.map_or(-1, |t| i32::try_from(t.as_millis()).unwrap_or(i32::MAX));
        let (ready, hup) =
            sys::poll_in(self.fd.as_fd(), ms).map_err(|e| Error::os("poll(perf fd)", e))?;
        Ok(if self.available() > 0 {
            Wait::Ready
        } else if hup {
            Wait::HungUp
        } else if ready {
            Wait::Ready
        } else {
            Wait::Timeout
        })
    }
}

// Tests against the kernel: `tests/live.rs`; the head/tail protocol over a
// file playing the kernel: `ring/tests.rs`.
#[cfg(test)]
mod tests;
