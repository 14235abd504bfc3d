//! The read side of an [`Event`]: one counter ([`Count`], [`TimedCount`]),
//! a group ([`GroupCount`]), multiplexing [`scale`], and the `read*`
//! methods. Reading allocates nothing (ARCHITECTURE.md invariant 6).

use std::os::fd::{AsFd, AsRawFd};

use super::Event;
use crate::attr::ReadFormat;
use crate::error::{Error, Hint};
use crate::sys;

/// One counter value as returned by `read(2)`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct Count {
    /// The raw count.
    pub value: u64,
    /// Nanoseconds the event was enabled (`TOTAL_TIME_ENABLED`).
    pub time_enabled: Option<u64>,
    /// Nanoseconds the event was on the PMU (`TOTAL_TIME_RUNNING`).
    pub time_running: Option<u64>,
    /// The event id (`ID`).
    pub id: Option<u64>,
    /// Lost samples (`LOST`, Linux 6.0+).
    pub lost: Option<u64>,
}

impl Count {
    /// The value scaled for multiplexing: `value × enabled / running`.
    ///
    /// `None` when the event was enabled but never got onto the PMU
    /// (`running == 0 < enabled`): there is no estimate, which is not the same
    /// as zero. Without the time fields, or when never enabled, it is `value`.
    /// A kernel that reports `running > enabled` is clamped, never trusted to
    /// scale down.
    #[inline]
    pub fn scaled(&self) -> Option<u64> {
        scale(self.value, self.time_enabled, self.time_running)
    }

    /// Whether the event shared the PMU (ran less than it was enabled).
    pub fn is_multiplexed(&self) -> bool {
        matches!((self.time_enabled, self.time_running), (Some(e), Some(r)) if r < e)
    }
}

/// A count with its multiplexing times, from [`Event::read_timed`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct TimedCount {
    /// The raw count.
    pub value: u64,
    /// Nanoseconds enabled (0 when the read format lacks it).
    pub time_enabled: u64,
    /// Nanoseconds on the PMU (0 when the read format lacks it).
    pub time_running: u64,
}

impl TimedCount {
    /// The value scaled for multiplexing (see [`Count::scaled`]); `None`
    /// when the event was enabled but never ran.
    #[inline]
    pub fn scaled(&self) -> Option<u64> {
        if self.time_enabled == self.time_running {
            return Some(self.value);
        }
        scale(self.value, Some(self.time_enabled), Some(self.time_running))
    }
}

/// Multiplexing scale: see [`Count::scaled`].
#[inline]
pub fn scale(value: u64, enabled: Option<u64>, running: Option<u64>) -> Option<u64> {
    match (enabled, running) {
        (Some(e), Some(0)) => (e == 0).then_some(value),
        (Some(e), Some(r)) if r < e => {
            let v = u128::from(value) * u128::from(e) / u128::from(r);
            Some(u64::try_from(v).unwrap_or(u64::MAX))
        }
        _ => Some(value),
    }
}

impl Event {
    /// The number of u64 words one non-group `read(2)` returns.
    #[inline]
    fn single_words(&self) -> usize {
        let extra = ReadFormat::TOTAL_TIME_ENABLED
            | ReadFormat::TOTAL_TIME_RUNNING
            | ReadFormat::ID
            | ReadFormat::LOST;
        1 + (self.read_format & extra).bits().count_ones() as usize
    }

    /// Reads the counter (events opened without `ReadFormat::GROUP`).
    /// Allocation-free: one `read(2)` into a stack buffer.
    #[inline]
    pub fn read(&self) -> Result<Count, Error> {
        if self.read_format.contains(ReadFormat::GROUP) {
            return Err(self.group_read_misuse());
        }
        let mut buf = [0u64; 5];
        let want = self.single_words();
        let n = self.read_words(&mut buf[..want])?;
        Ok(parse_single(self.read_format, &buf[..n]))
    }

    /// The value with its enabled and running times: the hot path of a
    /// counting read. One `read(2)` of three words when the event was
    /// opened with exactly `TOTAL_TIME_ENABLED | TOTAL_TIME_RUNNING`; other
    /// read formats go through [`Event::read`] (missing times read as 0).
    #[inline(always)]
    pub fn read_timed(&self) -> Result<TimedCount, Error> {
        if self.read_format != ReadFormat::TOTAL_TIME_ENABLED | ReadFormat::TOTAL_TIME_RUNNING {
            return self.read().map(|c| TimedCount {
                value: c.value,
                time_enabled: c.time_enabled.unwrap_or(0),
                time_running: c.time_running.unwrap_or(0),
            });
        }
        let mut buf = [0u64; 3];
        self.read_words(&mut buf)?;
        Ok(TimedCount {
            value: buf[0],
            time_enabled: buf[1],
            time_running: buf[2],
        })
    }

    /// [`Event::read_timed`] reporting only an errno (`EINVAL` when the read
    /// format is not exactly the two times, `EIO` for a short read): for hot
    /// paths that build their own error, or retry through `read_timed`, on
    /// failure. Nothing is built on the way.
    #[inline(always)]
    pub fn read_timed_errno(&self) -> Result<TimedCount, i32> {
        if self.read_format != ReadFormat::TOTAL_TIME_ENABLED | ReadFormat::TOTAL_TIME_RUNNING {
            return Err(libc::EINVAL);
        }
        let mut buf = [0u64; 3];
        match sys::read_u64s(self.fd.as_fd(), &mut buf) {
            Ok(24) => Ok(TimedCount {
                value: buf[0],
                time_enabled: buf[1],
                time_running: buf[2],
            }),
            Ok(_) => Err(libc::EIO),
            Err(e) => Err(e),
        }
    }

    /// One `read(2)` that must fill `buf` exactly; returns the words read.
    #[inline(always)]
    fn read_words(&self, buf: &mut [u64]) -> Result<usize, Error> {
        match sys::read_u64s(self.fd.as_fd(), buf) {
            Ok(n) if n == buf.len() * 8 => Ok(buf.len()),
            Ok(n) => Err(self.short_read(n, buf.len() * 8)),
            Err(e) => Err(self.read_failed(e)),
        }
    }

    #[cold]
    #[inline(never)]
    fn group_read_misuse(&self) -> Error {
        Error::invalid(
            "Event::read",
            "the event was opened with ReadFormat::GROUP: use read_group",
        )
    }

    #[cold]
    #[inline(never)]
    fn read_failed(&self, errno: i32) -> Error {
        Error::os(format!("read(perf fd {})", self.fd.as_raw_fd()), errno)
    }

    #[cold]
    #[inline(never)]
    fn short_read(&self, n: usize, want: usize) -> Error {
        if n == 0 {
            // A pinned event that could not be scheduled is in error state.
            return Error::Os {
                op: format!("read(perf fd {})", self.fd.as_raw_fd()),
                errno: libc::ENODATA,
                hint: Some(Hint::Other(
                    "the event is in error state (a pinned event that could not stay on the \
                     PMU): reopen it unpinned to allow multiplexing"
                        .into(),
                )),
            };
        }
        Error::Os {
            op: format!(
                "read(perf fd {}): short read of {n} bytes, expected {want}",
                self.fd.as_raw_fd()
            ),
            errno: libc::EIO,
            hint: None,
        }
    }

    /// Reads a whole group in one `read(2)` (the leader must have been opened
    /// with `ReadFormat::GROUP`). Allocation-free once `out` is large enough;
    /// grows it once if the group outgrew it.
    pub fn read_group(&self, out: &mut GroupCount) -> Result<(), Error> {
        if !self.read_format.contains(ReadFormat::GROUP) {
            return Err(Error::invalid(
                "Event::read_group",
                "the leader was not opened with ReadFormat::GROUP",
            ));
        }
        out.read_format = self.read_format;
        loop {
            match sys::read_u64s(self.fd.as_fd(), &mut out.buf) {
                Ok(0) => {
                    return Err(Error::Os {
                        op: "read(group)".into(),
                        errno: libc::ENODATA,
                        hint: Some(Hint::Other(
                            "the group is in error state (pinned and could not be scheduled)"
                                .into(),
                        )),
                    });
                }
                Ok(n) => {
                    out.words = n / 8;
                    return out.validate();
                }
                Err(libc::ENOSPC) if out.buf.len() < 1 << 20 => {
                    let len = out.buf.len().max(8) * 2;
                    out.buf.resize(len, 0);
                }
                Err(e) => {
                    return Err(Error::Os {
                        op: "read(group)".into(),
                        errno: e,
                        hint: (e == libc::ECHILD).then(|| {
                            Hint::Other(
                                "this kernel cannot read inherited groups that lost members; \
                                 read each member separately"
                                    .into(),
                            )
                        }),
                    });
                }
            }
        }
    }

    /// Reads raw `read(2)` words into `buf`; returns the number of bytes.
    pub fn read_raw(&self, buf: &mut [u64]) -> Result<usize, Error> {
        sys::read_u64s(self.fd.as_fd(), buf).map_err(|e| Error::os("read(perf fd)", e))
    }
}

#[inline]
fn parse_single(f: ReadFormat, w: &[u64]) -> Count {
    let mut it = w.iter().copied();
    let mut c = Count {
        value: it.next().unwrap_or(0),
        ..Count::default()
    };
    if f.contains(ReadFormat::TOTAL_TIME_ENABLED) {
        c.time_enabled = it.next();
    }
    if f.contains(ReadFormat::TOTAL_TIME_RUNNING) {
        c.time_running = it.next();
    }
    if f.contains(ReadFormat::ID) {
        c.id = it.next();
    }
    if f.contains(ReadFormat::LOST) {
        c.lost = it.next();
    }
    c
}

/// The result of a group read, reusable across reads so that reading
/// allocates nothing.
#[derive(Debug, Clone)]
pub struct GroupCount {
    buf: Vec<u64>,
    words: usize,
    read_format: ReadFormat,
}

impl GroupCount {
    /// Room for a group of `members` events.
    pub fn with_capacity(members: usize) -> GroupCount {
        GroupCount {
            // nr, enabled, running + (value, id, lost) per member
            buf: vec![0; 3 + 3 * members.max(1)],
            words: 0,
            read_format: ReadFormat::empty(),
        }
    }

    fn stride(&self) -> usize {
        1 + usize::from(self.read_format.contains(ReadFormat::ID))
            + usize::from(self.read_format.contains(ReadFormat::LOST))
    }

    fn header(&self) -> usize {
        1 + usize::from(self.read_format.contains(ReadFormat::TOTAL_TIME_ENABLED))
            + usize::from(self.read_format.contains(ReadFormat::TOTAL_TIME_RUNNING))
    }

    fn validate(&self) -> Result<(), Error> {
        let need = self.header() + self.len() * self.stride();
        if self.words < self.header() || need > self.words {
            return Err(Error::Os {
                op: format!(
                    "read(group): {} words for {} members",
                    self.words,
                    self.len()
                ),
                errno: libc::EIO,
                hint: None,
            });
        }
        Ok(())
    }

    /// The number of members read.
    pub fn len(&self) -> usize {
        if self.words == 0 {
            0
        } else {
            self.buf[0] as usize
        }
    }

    /// Whether nothing was read.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Nanoseconds the group was enabled.
    pub fn time_enabled(&self) -> Option<u64> {
        self.read_format
            .contains(ReadFormat::TOTAL_TIME_ENABLED)
            .then(|| self.buf[1])
    }

    /// Nanoseconds the group was on the PMU.
    pub fn time_running(&self) -> Option<u64> {
        self.read_format
            .contains(ReadFormat::TOTAL_TIME_RUNNING)
            .then(|| {
                let i = 1 + usize::from(self.read_format.contains(ReadFormat::TOTAL_TIME_ENABLED));
                self.buf[i]
            })
    }

    /// Member `i` (in group order, leader first).
    pub fn get(&self, i: usize) -> Option<Count> {
        if i >= self.len() {
            return None;
        }
        let base = self.header() + i * self.stride();
        let mut c = Count {
            value: self.buf[base],
            time_enabled: self.time_enabled(),
            time_running: self.time_running(),
            ..Count::default()
        };
        let mut k = base + 1;
        if self.read_format.contains(ReadFormat::ID) {
            c.id = Some(self.buf[k]);
            k += 1;
        }
        if self.read_format.contains(ReadFormat::LOST) {
            c.lost = Some(self.buf[k]);
        }
        Some(c)
    }

    /// Every member, leader first.
    pub fn iter(&self) -> impl Iterator<Item = Count> + '_ {
        (0..self.len()).filter_map(|i| self.get(i))
    }
}

#[cfg(test)]
mod tests;
