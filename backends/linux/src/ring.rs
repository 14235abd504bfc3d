//! The perf ring buffer: the mmap of an event's metadata page plus 2^n
//! data pages, read with the kernel's head/tail protocol.
//!
//! `data_head` is loaded with acquire ordering (the kernel's writes of the
//! records before it are then visible), records between the tail and the
//! head are handed out as borrowed byte slices (a record that wraps around
//! the end is copied into a scratch buffer owned by the ring, reused, so
//! steady-state reading allocates nothing), and `data_tail` is stored with
//! release ordering only after the caller is done with a record.

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
    /// buffer is empty. The slice is valid until the next call; the space
    /// is given back to the kernel then (or by [`RingBuffer::release`]).
    pub fn next_record(&mut self) -> Option<&[u8]> {
        self.release_pending();
        let head = self.map.load_u64_acquire(mp::DATA_HEAD);
        if head == self.tail {
            return None;
        }
        let mask = (self.size - 1) as u64;
        let start = (self.tail & mask) as usize;
        let mut header = [0u8; 8];
        self.copy(start, &mut header);
        let size = usize::from(u16::from_ne_bytes([header[6], header[7]]));
        let avail = head.wrapping_sub(self.tail) as usize;
        if size < 8 || size > avail {
            // A corrupt header: drop everything published so far rather
            // than loop on it.
            self.tail = head;
            self.map.store_u64_release(mp::DATA_TAIL, self.tail);
            return None;
        }
        self.pending = size as u64;
        let off = self.page + start;
        if start + size <= self.size {
            Some(self.map.published(off, size))
        } else {
            self.scratch.resize(size, 0);
            let mut scratch = std::mem::take(&mut self.scratch);
            self.copy(start, &mut scratch);
            self.scratch = scratch;
            Some(&self.scratch)
        }
    }

    /// Copies `dst.len()` bytes of the data area starting at `start`,
    /// wrapping around the end.
    fn copy(&self, start: usize, dst: &mut [u8]) {
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

// Tests against the kernel: `tests/live.rs`.
