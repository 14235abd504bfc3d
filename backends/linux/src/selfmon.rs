//! Self-monitoring reads through the event's metadata page (`rdpmc`),
//! with a calibrated choice between that and `read(2)`.
//!
//! The kernel publishes in the first mmap page of an event the counter
//! index, an offset and the enabled/running times, under a sequence lock.
//! When `cap_user_rdpmc` is set and `index` is non-zero, a user-space
//! `rdpmc` plus the offset is the count, without a system call. That holds
//! only for an event of the calling thread that is on the PMU right now, so
//! every read checks again and falls back to `read(2)` whenever the page
//! says no. In virtual machines `rdpmc` may trap to the hypervisor and be
//! slower than the syscall: [`ReadPath::calibrate`] measures both.

use std::os::fd::AsFd;
use std::time::Instant;

use crate::error::{Error, Result};
use crate::event::{Count, Event};
use crate::sys::abi::mmap_page as mp;
use crate::sys::{self, mmap::Mmap};

/// The mapped metadata page of one event.
#[derive(Debug)]
pub struct UserPage {
    page: Mmap,
}

/// What the metadata page says about user-space reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct UserPageCaps {
    /// `cap_user_rdpmc`: user-space rdpmc is allowed for this event.
    pub user_rdpmc: bool,
    /// `cap_user_time`: the time conversion fields are valid.
    pub user_time: bool,
    /// The counter index (1-based; 0: not on a counter right now).
    pub index: u32,
    /// The hardware counter width in bits.
    pub pmc_width: u16,
}

impl UserPage {
    /// Maps `event`'s metadata page (one page, read-only, pre-faulted).
    pub fn map(event: &Event) -> Result<UserPage> {
        let page = Mmap::new(event.as_fd(), sys::page_size(), false, true)
            .map_err(|errno| Error::os("mmap(perf metadata page)", errno))?;
        Ok(UserPage { page })
    }

    /// The capabilities as published now.
    pub fn caps(&self) -> UserPageCaps {
        let caps = self.page.load_u64(mp::CAPABILITIES);
        UserPageCaps {
            user_rdpmc: caps & mp::CAP_USER_RDPMC != 0,
            user_time: caps & mp::CAP_USER_TIME != 0,
            index: self.page.load_u32(mp::INDEX),
            pmc_width: self.page.load_u16(mp::PMC_WIDTH),
        }
    }

    /// Reads the count with `rdpmc` under the page's sequence lock.
    /// `None` when the page does not allow it now (no rdpmc capability,
    /// index 0 because the event is off the PMU or not a hardware counter,
    /// or multiplexed without user time): the caller reads with `read(2)`.
    #[inline]
    pub fn read(&self) -> Option<u64> {
        loop {
            let seq = self.page.load_u32(mp::LOCK);
            Mmap::barrier();
            let caps = self.page.load_u64(mp::CAPABILITIES);
            let index = self.page.load_u32(mp::INDEX);
            if caps & mp::CAP_USER_RDPMC == 0 || index == 0 {
                return None;
            }
            let enabled = self.page.load_u64(mp::TIME_ENABLED);
            let running = self.page.load_u64(mp::TIME_RUNNING);
            if enabled != running {
                // Multiplexed: scaling needs the clock fields; read(2)
                // does it exactly.
                return None;
            }
            let offset = self.page.load_u64(mp::OFFSET) as i64;
            let width = u32::from(self.page.load_u16(mp::PMC_WIDTH)).clamp(1, 64);
            let raw = rdpmc(index - 1)?;
            Mmap::barrier();
            if self.page.load_u32(mp::LOCK) != seq {
                continue;
            }
            // Sign-extend the counter from its width, then add the offset.
            let shift = 64 - width;
            let pmc = ((raw << shift) as i64) >> shift;
            return Some(offset.wrapping_add(pmc) as u64);
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn rdpmc(counter: u32) -> Option<u64> {
    Some(sys::mmap::rdpmc(counter))
}

#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
fn rdpmc(_counter: u32) -> Option<u64> {
    None
}

/// How an event is read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum ReadPath {
    /// The `read(2)` system call.
    Syscall,
    /// User-space `rdpmc` through the metadata page (falling back to
    /// `read(2)` whenever the page says so).
    Rdpmc,
}

/// The outcome of measuring both read paths on one event.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Calibration {
    /// The faster path (ties go to `read(2)`, which never needs a fallback).
    pub chosen: ReadPath,
    /// Median ns per `read(2)`.
    pub syscall_ns: f64,
    /// Median ns per rdpmc read, when rdpmc is usable on this event.
    pub rdpmc_ns: Option<f64>,
    /// Why rdpmc was not measured, if it was not.
    pub rdpmc_unavailable: Option<String>,
}

impl ReadPath {
    /// Measures `read(2)` and, where the page allows it, `rdpmc` on
    /// `event` (which must be enabled, of the calling thread), and picks
    /// the faster.
    pub fn calibrate(event: &Event) -> Result<Calibration> {
        let syscall_ns = median_ns(|| event.read().map(|c| c.value).unwrap_or(0));
        event.read()?;
        let page = UserPage::map(event)?;
        let caps = page.caps();
        let unavailable = if !caps.user_rdpmc {
            Some("the metadata page does not grant cap_user_rdpmc for this event".to_string())
        } else if caps.index == 0 {
            Some("the event is not on a hardware counter (index 0)".to_string())
        } else if page.read().is_none() {
            Some("the page refused the read (multiplexed or off the PMU)".to_string())
        } else {
            None
        };
        let rdpmc_ns = unavailable
            .is_none()
            .then(|| median_ns(|| page.read().unwrap_or(0)));
        let chosen = match rdpmc_ns {
            Some(r) if r < syscall_ns => ReadPath::Rdpmc,
            _ => ReadPath::Syscall,
        };
        Ok(Calibration {
            chosen,
            syscall_ns,
            rdpmc_ns,
            rdpmc_unavailable: unavailable,
        })
    }
}

/// Median over 9 rounds of the mean ns per call of `f` (200 calls each).
fn median_ns(mut f: impl FnMut() -> u64) -> f64 {
    const ROUNDS: usize = 9;
    const CALLS: u32 = 200;
    let mut rounds = [0f64; ROUNDS];
    for r in &mut rounds {
        let t = Instant::now();
        for _ in 0..CALLS {
            std::hint::black_box(f());
        }
        *r = t.elapsed().as_nanos() as f64 / f64::from(CALLS);
    }
    rounds.sort_by(f64::total_cmp);
    rounds[ROUNDS / 2]
}

/// An event read through the path its calibration chose.
#[derive(Debug)]
pub struct FastReader {
    page: Option<UserPage>,
}

impl FastReader {
    /// A reader for `event` using `path`.
    pub fn new(event: &Event, path: ReadPath) -> Result<FastReader> {
        Ok(FastReader {
            page: match path {
                ReadPath::Rdpmc => Some(UserPage::map(event)?),
                ReadPath::Syscall => None,
            },
        })
    }

    /// The count: through rdpmc when chosen and allowed right now, else
    /// `read(2)`. Either way the value is the same counter's.
    #[inline]
    pub fn read(&self, event: &Event) -> Result<Count> {
        if let Some(v) = self.page.as_ref().and_then(UserPage::read) {
            return Ok(Count {
                value: v,
                time_enabled: None,
                time_running: None,
                id: None,
                lost: None,
            });
        }
        event.read()
    }
}

// Tests against the kernel: `tests/live.rs`.
