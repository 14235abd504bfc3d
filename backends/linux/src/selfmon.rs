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
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
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

/// Loads of the fields of a `struct perf_event_mmap_page`, at the byte
/// offsets of `linux/perf_event.h`: the mapped page of an event, or an
/// image of one (tests). Every load must read the current value (the
/// kernel rewrites the page under its sequence lock).
pub trait PageView {
    /// The `u16` at `offset`.
    fn load_u16(&self, offset: usize) -> u16;
    /// The `u32` at `offset`.
    fn load_u32(&self, offset: usize) -> u32;
    /// The `u64` at `offset`.
    fn load_u64(&self, offset: usize) -> u64;
}

/// The live page: [`read_page`] and [`TimeConversion::of`] over the
/// kernel's current values (and any field at a `linux/perf_event.h`
/// offset, for callers that read more than this module does).
impl PageView for UserPage {
    fn load_u16(&self, offset: usize) -> u16 {
        self.page.load_u16(offset)
    }
    fn load_u32(&self, offset: usize) -> u32 {
        self.page.load_u32(offset)
    }
    fn load_u64(&self, offset: usize) -> u64 {
        self.page.load_u64(offset)
    }
}

/// One consistent read of a metadata page (all fields from the same
/// sequence-lock generation).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct PageReading {
    /// `offset` plus the sign-extended `rdpmc` value: the raw count, as
    /// `read(2)` would return it.
    pub count: u64,
    /// `time_enabled`, advanced to now through the TSC when the page has
    /// `cap_user_time` and the event is multiplexed.
    pub time_enabled: u64,
    /// `time_running`, advanced like `time_enabled`.
    pub time_running: u64,
}

impl PageReading {
    /// Whether the event was off the PMU for part of the time.
    pub fn multiplexed(&self) -> bool {
        self.time_running != self.time_enabled
    }

    /// The count scaled to the enabled time (`count * enabled / running`,
    /// without overflow); `None` when it never ran.
    pub fn scaled(&self) -> Option<u64> {
        if self.time_running == 0 {
            return None;
        }
        let scaled =
            u128::from(self.count) * u128::from(self.time_enabled) / u128::from(self.time_running);
        Some(u64::try_from(scaled).unwrap_or(u64::MAX))
    }
}

/// The TSC to nanoseconds conversion published in the page
/// (`time_shift`, `time_mult`, `time_offset`, `time_zero`, `time_cycles`,
/// `time_mask`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct TimeConversion {
    /// `time_shift`.
    pub shift: u16,
    /// `time_mult`.
    pub mult: u32,
    /// `time_offset`.
    pub offset: u64,
    /// `time_zero`, when `cap_user_time_zero` is set.
    pub zero: Option<u64>,
    /// `(time_cycles, time_mask)`, when `cap_user_time_short` is set (a
    /// TSC narrower than 64 bits).
    pub short: Option<(u64, u64)>,
}

impl TimeConversion {
    /// Reads the conversion fields of `page`; `None` without
    /// `cap_user_time`.
    pub fn of(page: &impl PageView) -> Option<TimeConversion> {
        let caps = page.load_u64(mp::CAPABILITIES);
        if caps & mp::CAP_USER_TIME == 0 {
            return None;
        }
        Some(TimeConversion {
            shift: page.load_u16(mp::TIME_SHIFT),
            mult: page.load_u32(mp::TIME_MULT),
            offset: page.load_u64(mp::TIME_OFFSET),
            zero: (caps & mp::CAP_USER_TIME_ZERO != 0).then(|| page.load_u64(mp::TIME_ZERO)),
            short: (caps & mp::CAP_USER_TIME_SHORT != 0)
                .then(|| (page.load_u64(mp::TIME_CYCLES), page.load_u64(mp::TIME_MASK))),
        })
    }

    /// The cycle count with a short TSC's wrap undone.
    fn cycles(&self, cyc: u64) -> u64 {
        match self.short {
            Some((base, mask)) => base.wrapping_add(cyc.wrapping_sub(base) & mask),
            None => cyc,
        }
    }

    /// `quot * mult + ((rem * mult) >> shift)` of `cyc`: cycles to ns.
    fn scale(&self, cyc: u64) -> u64 {
        let shift = u32::from(self.shift).min(63);
        let mult = u64::from(self.mult);
        let quot = cyc >> shift;
        let rem = cyc & ((1u64 << shift) - 1);
        quot.wrapping_mul(mult)
            .wrapping_add(rem.wrapping_mul(mult) >> shift)
    }

    /// Nanoseconds to add to `time_enabled`/`time_running` at TSC `cyc`.
    pub fn delta_ns(&self, cyc: u64) -> u64 {
        self.offset.wrapping_add(self.scale(self.cycles(cyc)))
    }

    /// The perf clock timestamp (`PERF_SAMPLE_TIME`'s clock) of TSC `cyc`,
    /// when the page publishes `time_zero`.
    pub fn timestamp(&self, cyc: u64) -> Option<u64> {
        Some(self.zero?.wrapping_add(self.scale(self.cycles(cyc))))
    }
}

/// Reads `page` the way `linux/perf_event.h` prescribes (the comment above
/// `perf_event_mmap_page::lock`): under the sequence lock, `offset` plus
/// `rdpmc(index - 1)` sign-extended from `pmc_width`, and with
/// `cap_user_time` the enabled/running times advanced by the TSC delta.
///
/// `rdpmc` reads a counter (its argument is `index - 1`; `None`: the
/// instruction is not available); `rdtsc` reads the time-stamp counter.
/// `None` when the page does not allow a user-space read now
/// (`cap_user_rdpmc` clear, index 0 because the event is off the PMU or not
/// a hardware counter, or multiplexed without `cap_user_time`): the caller
/// reads with `read(2)`.
pub fn read_page(
    page: &impl PageView,
    mut rdpmc: impl FnMut(u32) -> Option<u64>,
    mut rdtsc: impl FnMut() -> u64,
) -> Option<PageReading> {
    use std::sync::atomic::{Ordering, compiler_fence};
    loop {
        let seq = page.load_u32(mp::LOCK);
        compiler_fence(Ordering::SeqCst);
        let mut enabled = page.load_u64(mp::TIME_ENABLED);
        let mut running = page.load_u64(mp::TIME_RUNNING);
        let caps = page.load_u64(mp::CAPABILITIES);
        let clock = if enabled != running {
            // Multiplexed: scaling needs the times up to now.
            Some((TimeConversion::of(page)?, rdtsc()))
        } else {
            None
        };
        let index = page.load_u32(mp::INDEX);
        if caps & mp::CAP_USER_RDPMC == 0 || index == 0 {
            return None;
        }
        let offset = page.load_u64(mp::OFFSET) as i64;
        let width = u32::from(page.load_u16(mp::PMC_WIDTH)).clamp(1, 64);
        let raw = rdpmc(index - 1)?;
        compiler_fence(Ordering::SeqCst);
        if page.load_u32(mp::LOCK) != seq {
            continue;
        }
        // Sign-extend the counter from its width, then add the offset.
        let shift = 64 - width;
        let pmc = ((raw << shift) as i64) >> shift;
        if let Some((conversion, cyc)) = clock {
            let delta = conversion.delta_ns(cyc);
            enabled = enabled.wrapping_add(delta);
            // index != 0 here: the event is on the PMU, so it runs too.
            running = running.wrapping_add(delta);
        }
        return Some(PageReading {
            count: offset.wrapping_add(pmc) as u64,
            time_enabled: enabled,
            time_running: running,
        });
    }
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

    /// The TSC conversion as published now (`None` without
    /// `cap_user_time`).
    pub fn time_conversion(&self) -> Option<TimeConversion> {
        TimeConversion::of(self)
    }

    /// Reads count and times with `rdpmc` ([`read_page`] on this page).
    #[inline]
    pub fn reading(&self) -> Option<PageReading> {
        read_page(self, rdpmc, sys::mmap::rdtsc)
    }

    /// Reads the count with `rdpmc` under the page's sequence lock.
    /// `None` when the page does not allow it now (see [`read_page`]) or
    /// the event is multiplexed (the count alone would need scaling):
    /// the caller reads with `read(2)`.
    #[inline]
    pub fn read(&self) -> Option<u64> {
        self.reading().filter(|r| !r.multiplexed()).map(|r| r.count)
    }
}

cfg_if::cfg_if! {
    if #[cfg(target_arch = "x86_64")] {
        #[inline(always)]
        fn rdpmc(counter: u32) -> Option<u64> {
            Some(sys::mmap::rdpmc(counter))
        }
    } else {
        /// No user-space counter read off x86: always `read(2)`.
        #[inline(always)]
        fn rdpmc(_counter: u32) -> Option<u64> {
            None
        }
    }
}

/// How an event is read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub enum ReadPath {
    /// The `read(2)` system call.
    Syscall,
    /// User-space `rdpmc` through the metadata page (falling back to
    /// `read(2)` whenever the page says so).
    Rdpmc,
}

/// The outcome of measuring both read paths on one event.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
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
        Ok(Calibration {
            chosen: ReadPath::faster(syscall_ns, rdpmc_ns),
            syscall_ns,
            rdpmc_ns,
            rdpmc_unavailable: unavailable,
        })
    }
}

impl ReadPath {
    /// The path with the lower time per read; a tie, or rdpmc unmeasured,
    /// goes to `read(2)` (it never needs a fallback).
    fn faster(syscall_ns: f64, rdpmc_ns: Option<f64>) -> ReadPath {
        match rdpmc_ns {
            Some(r) if r < syscall_ns => ReadPath::Rdpmc,
            _ => ReadPath::Syscall,
        }
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

#[cfg(test)]
mod tests;
