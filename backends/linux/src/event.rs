//! An open perf event: the file descriptor, every ioctl as a method, and the
//! read formats.

use std::ffi::CString;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};

use crate::attr::{Attr, AttrBit, ReadFormat, SampleType};
use crate::error::{Error, Hint};
use crate::sys::{self, abi};
use crate::system;

bitflags::bitflags! {
    /// The `flags` argument of `perf_event_open(2)`. `FD_CLOEXEC` is always
    /// added: event fds never leak into exec'd programs.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
    pub struct OpenFlags: u64 {
        /// Create the event in a group without making it a member.
        const FD_NO_GROUP = abi::PERF_FLAG_FD_NO_GROUP;
        /// Route output to the group leader's buffer (broken since 2.6.35;
        /// use [`Event::set_output`]).
        const FD_OUTPUT = abi::PERF_FLAG_FD_OUTPUT;
        /// `pid` is a cgroup directory fd (system-wide, per-cgroup monitoring).
        const PID_CGROUP = abi::PERF_FLAG_PID_CGROUP;
    }
}

/// Who and where to monitor: the `pid` and `cpu` arguments.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Target {
    /// 0 = the calling thread, > 0 = that thread/process, -1 = every task
    /// (needs a CPU), or a cgroup fd with [`OpenFlags::PID_CGROUP`].
    pub pid: i32,
    /// -1 = any CPU, else only on that CPU.
    pub cpu: i32,
}

impl Target {
    /// The calling thread, on any CPU.
    pub const CALLER: Target = Target { pid: 0, cpu: -1 };

    /// One thread or process, on any CPU.
    pub fn task(pid: i32) -> Target {
        Target { pid, cpu: -1 }
    }

    /// Every task on one CPU (system-wide).
    pub fn cpu(cpu: u32) -> Target {
        Target {
            pid: -1,
            cpu: cpu as i32,
        }
    }
}

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

/// An open perf event. Closing happens on drop.
#[derive(Debug)]
pub struct Event {
    fd: OwnedFd,
    read_format: ReadFormat,
    sampling: bool,
}

impl Event {
    /// Opens an event (`perf_event_open(2)`), always with `O_CLOEXEC`.
    ///
    /// If the kernel is older than this crate's attr (`E2BIG`) and every
    /// field it does not know is zero, the call is retried with the size the
    /// kernel supports; otherwise the error names the size.
    pub fn open(
        attr: &Attr,
        target: Target,
        group: Option<&Event>,
        flags: OpenFlags,
    ) -> Result<Event, Error> {
        Event::open_raw(attr, attr.raw, target, group, flags)
    }

    /// Opens an event whose `config1` is a pointer to a NUL-terminated
    /// string: the uprobe PMU's binary path, the kprobe PMU's function
    /// name. The string is borrowed for the duration of the call, which
    /// is all the kernel needs (see [`crate::dynamic_probe`]).
    pub fn open_with_string(
        attr: &Attr,
        string: &std::ffi::CStr,
        target: Target,
        group: Option<&Event>,
        flags: OpenFlags,
    ) -> Result<Event, Error> {
        let mut raw = attr.raw;
        raw.config1 = string.as_ptr() as usize as u64;
        Event::open_raw(attr, raw, target, group, flags)
    }

    fn open_raw(
        attr: &Attr,
        raw: abi::RawAttr,
        target: Target,
        group: Option<&Event>,
        flags: OpenFlags,
    ) -> Result<Event, Error> {
        let first = raw;
        let mut raw = raw;
        let fl = flags.bits() | abi::PERF_FLAG_FD_CLOEXEC;
        let group_fd = group.map(|g| g.fd.as_fd());
        let mut result = sys::perf_event_open(&mut raw, target.pid, target.cpu, group_fd, fl);
        if matches!(result, Err(libc::E2BIG))
            && raw.size < attr.raw.size
            && raw.size >= abi::ATTR_SIZE_VER0
        {
            let kernel_size = raw.size as usize;
            if attr.to_bytes()[kernel_size..].iter().all(|b| *b == 0) {
                raw = first;
                raw.size = kernel_size as u32;
                result = sys::perf_event_open(&mut raw, target.pid, target.cpu, group_fd, fl);
            }
        }
        match result {
            Ok(fd) => Ok(Event {
                fd,
                read_format: attr.get_read_format(),
                sampling: attr.is_sampling(),
            }),
            Err(errno) => Err(Error::Os {
                op: format!(
                    "perf_event_open({}, pid {}, cpu {})",
                    attr.describe_event(),
                    target.pid,
                    target.cpu
                ),
                errno,
                hint: diagnose_open(errno, attr, &raw, target),
            }),
        }
    }

    /// The `read_format` the event was opened with.
    pub fn read_format(&self) -> ReadFormat {
        self.read_format
    }

    /// Whether the event was opened as a sampling event.
    pub fn is_sampling(&self) -> bool {
        self.sampling
    }

    // Inlined so the ioctl is all a caller pays on success; building the
    // error is out of line.
    #[inline]
    fn ioctl(&self, name: &'static str, request: sys::ValueIoctl, arg: u64) -> Result<i32, Error> {
        match sys::ioctl_int(self.fd.as_fd(), request, arg) {
            Ok(v) => Ok(v),
            Err(e) => Err(self.ioctl_failed(name, e)),
        }
    }

    #[cold]
    #[inline(never)]
    fn ioctl_failed(&self, name: &str, errno: i32) -> Error {
        Error::os(
            format!("ioctl({name}) on perf fd {}", self.fd.as_raw_fd()),
            errno,
        )
    }

    /// `PERF_EVENT_IOC_ENABLE`.
    #[inline]
    pub fn enable(&self) -> Result<(), Error> {
        self.enable_errno()
            .map_err(|e| self.ioctl_failed("PERF_EVENT_IOC_ENABLE", e))
    }

    /// `PERF_EVENT_IOC_DISABLE`.
    #[inline]
    pub fn disable(&self) -> Result<(), Error> {
        self.disable_errno()
            .map_err(|e| self.ioctl_failed("PERF_EVENT_IOC_DISABLE", e))
    }

    /// [`Event::enable`] reporting only the errno (see
    /// [`Event::read_timed_errno`]).
    #[inline]
    pub fn enable_errno(&self) -> Result<(), i32> {
        sys::ioctl_int(self.fd.as_fd(), sys::ValueIoctl::ENABLE, 0).map(drop)
    }

    /// [`Event::disable`] reporting only the errno (see
    /// [`Event::read_timed_errno`]).
    #[inline]
    pub fn disable_errno(&self) -> Result<(), i32> {
        sys::ioctl_int(self.fd.as_fd(), sys::ValueIoctl::DISABLE, 0).map(drop)
    }

    /// `PERF_EVENT_IOC_RESET`: the count goes to zero (times are kept).
    pub fn reset(&self) -> Result<(), Error> {
        self.ioctl("PERF_EVENT_IOC_RESET", sys::ValueIoctl::RESET, 0)
            .map(drop)
    }

    /// `PERF_EVENT_IOC_ENABLE` with `PERF_IOC_FLAG_GROUP`: the whole group.
    pub fn enable_group(&self) -> Result<(), Error> {
        self.ioctl(
            "PERF_EVENT_IOC_ENABLE|GROUP",
            sys::ValueIoctl::ENABLE,
            abi::PERF_IOC_FLAG_GROUP,
        )
        .map(drop)
    }

    /// `PERF_EVENT_IOC_DISABLE` with `PERF_IOC_FLAG_GROUP`.
    pub fn disable_group(&self) -> Result<(), Error> {
        self.ioctl(
            "PERF_EVENT_IOC_DISABLE|GROUP",
            sys::ValueIoctl::DISABLE,
            abi::PERF_IOC_FLAG_GROUP,
        )
        .map(drop)
    }

    /// `PERF_EVENT_IOC_RESET` with `PERF_IOC_FLAG_GROUP`.
    pub fn reset_group(&self) -> Result<(), Error> {
        self.ioctl(
            "PERF_EVENT_IOC_RESET|GROUP",
            sys::ValueIoctl::RESET,
            abi::PERF_IOC_FLAG_GROUP,
        )
        .map(drop)
    }

    /// `PERF_EVENT_IOC_REFRESH`: enable for `overflows` more overflows
    /// (sampling events; 0 is rejected by the kernel).
    pub fn refresh(&self, overflows: u32) -> Result<(), Error> {
        self.ioctl(
            "PERF_EVENT_IOC_REFRESH",
            sys::ValueIoctl::REFRESH,
            u64::from(overflows),
        )
        .map(drop)
    }

    /// `PERF_EVENT_IOC_PERIOD`: a new sample period (or frequency).
    pub fn set_period(&self, period: u64) -> Result<(), Error> {
        sys::ioctl_period(self.fd.as_fd(), &period)
            .map(drop)
            .map_err(|e| Error::os("ioctl(PERF_EVENT_IOC_PERIOD)", e))
    }

    /// `PERF_EVENT_IOC_SET_OUTPUT`: send this event's records to `target`'s
    /// ring buffer (same CPU/task rules as the kernel's); `None` stops it.
    pub fn set_output(&self, target: Option<&Event>) -> Result<(), Error> {
        let arg = target.map_or(-1i64, |t| i64::from(t.fd.as_raw_fd()));
        self.ioctl(
            "PERF_EVENT_IOC_SET_OUTPUT",
            sys::ValueIoctl::SET_OUTPUT,
            arg as u64,
        )
        .map(drop)
    }

    /// `PERF_EVENT_IOC_SET_FILTER`: a tracepoint filter expression (or an
    /// address filter for AUX PMUs).
    pub fn set_filter(&self, filter: &str) -> Result<(), Error> {
        let c = CString::new(filter)
            .map_err(|_| Error::invalid(format!("filter {filter:?}"), "contains a NUL byte"))?;
        sys::ioctl_set_filter(self.fd.as_fd(), &c).map_err(|e| Error::Os {
            op: format!("ioctl(PERF_EVENT_IOC_SET_FILTER, {filter:?})"),
            errno: e,
            hint: (e == libc::EINVAL).then(|| {
                Hint::Other(
                    "the kernel rejected the filter: check the field names against the \
                     tracepoint's format file and the operators (==, !=, <, <=, >, >=, &, ~, &&, ||)"
                        .into(),
                )
            }),
        })
    }

    /// `PERF_EVENT_IOC_ID`: the id that appears in records and group reads.
    pub fn id(&self) -> Result<u64, Error> {
        sys::ioctl_id(self.fd.as_fd()).map_err(|e| Error::os("ioctl(PERF_EVENT_IOC_ID)", e))
    }

    /// `PERF_EVENT_IOC_SET_BPF`: attach a BPF program (by fd) to a
    /// tracepoint/kprobe event.
    pub fn set_bpf(&self, prog: BorrowedFd<'_>) -> Result<(), Error> {
        self.ioctl(
            "PERF_EVENT_IOC_SET_BPF",
            sys::ValueIoctl::SET_BPF,
            prog.as_raw_fd() as u64,
        )
        .map(drop)
    }

    /// `PERF_EVENT_IOC_PAUSE_OUTPUT`: stop (true) or resume (false) writing
    /// to the ring buffer; records are counted as lost meanwhile.
    pub fn pause_output(&self, pause: bool) -> Result<(), Error> {
        self.ioctl(
            "PERF_EVENT_IOC_PAUSE_OUTPUT",
            sys::ValueIoctl::PAUSE_OUTPUT,
            u64::from(pause),
        )
        .map(drop)
    }

    /// `PERF_EVENT_IOC_QUERY_BPF`: fills `ids` with the attached BPF program
    /// ids and returns how many are attached in total.
    pub fn query_bpf(&self, ids: &mut [u32]) -> Result<u32, Error> {
        sys::ioctl_query_bpf(self.fd.as_fd(), ids)
            .map_err(|e| Error::os("ioctl(PERF_EVENT_IOC_QUERY_BPF)", e))
    }

    /// `PERF_EVENT_IOC_MODIFY_ATTRIBUTES`: change a breakpoint's address,
    /// length or type in place (the only events the kernel allows it for).
    pub fn modify_attributes(&self, attr: &Attr) -> Result<(), Error> {
        sys::ioctl_modify_attributes(self.fd.as_fd(), &attr.raw)
            .map(drop)
            .map_err(|e| Error::os("ioctl(PERF_EVENT_IOC_MODIFY_ATTRIBUTES)", e))
    }

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

    /// Waits up to `timeout_ms` (-1 = forever) for the event to become
    /// readable. Returns `(readable, hung_up)`: `hung_up` means the monitored
    /// task exited and no more data will come.
    pub fn poll(&self, timeout_ms: i32) -> Result<(bool, bool), Error> {
        sys::poll_in(self.fd.as_fd(), timeout_ms).map_err(|e| Error::os("poll(perf fd)", e))
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

impl AsFd for Event {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

impl AsRawFd for Event {
    fn as_raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

impl From<Event> for OwnedFd {
    fn from(e: Event) -> OwnedFd {
        e.fd
    }
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

/// Enables every counter attached to the calling process
/// (`prctl(PR_TASK_PERF_EVENTS_ENABLE)`).
pub fn enable_all_for_task() -> Result<(), Error> {
    sys::prctl_perf_events(true).map_err(|e| Error::os("prctl(PR_TASK_PERF_EVENTS_ENABLE)", e))
}

/// Disables every counter attached to the calling process
/// (`prctl(PR_TASK_PERF_EVENTS_DISABLE)`).
pub fn disable_all_for_task() -> Result<(), Error> {
    sys::prctl_perf_events(false).map_err(|e| Error::os("prctl(PR_TASK_PERF_EVENTS_DISABLE)", e))
}

/// Explains a failed `perf_event_open`, the way `perf` does.
fn diagnose_open(errno: i32, attr: &Attr, after: &abi::RawAttr, target: Target) -> Option<Hint> {
    let hw_type = matches!(
        attr.type_id(),
        abi::PERF_TYPE_HARDWARE | abi::PERF_TYPE_HW_CACHE | abi::PERF_TYPE_RAW
    );
    match errno {
        libc::EACCES | libc::EPERM => {
            let level = system::paranoid().unwrap_or(2);
            if system::perfmon_capable() {
                if target.pid > 0 {
                    return Some(Hint::Ptrace { pid: target.pid });
                }
                return Some(Hint::Other(
                    "refused even with CAP_PERFMON/CAP_SYS_ADMIN: a seccomp filter, LSM \
                     (SELinux, AppArmor) or container runtime blocks perf_event_open"
                        .into(),
                ));
            }
            if level > 2 {
                return Some(Hint::Paranoid {
                    level,
                    needed: 2,
                    reason: "any use of perf_event_open by unprivileged users",
                });
            }
            let raw_samples = attr.type_id() == abi::PERF_TYPE_TRACEPOINT
                && attr.get_sample_type().contains(SampleType::RAW);
            if raw_samples && level > -1 {
                return Some(Hint::Paranoid {
                    level,
                    needed: -1,
                    reason: "sampling raw tracepoint data",
                });
            }
            if target.pid == -1 && level > 0 {
                return Some(Hint::Paranoid {
                    level,
                    needed: 0,
                    reason: "system-wide (per-CPU) monitoring",
                });
            }
            if attr.counts_kernel() && level > 1 {
                return Some(Hint::Paranoid {
                    level,
                    needed: 1,
                    reason: "counting kernel-mode events (count user space only with the \
                             `usr` qualifier or `:u`)",
                });
            }
            if attr.type_id() == abi::PERF_TYPE_TRACEPOINT && level > 1 {
                return Some(Hint::Paranoid {
                    level,
                    needed: 1,
                    reason: "tracepoints",
                });
            }
            if target.pid > 0 {
                return Some(Hint::Ptrace { pid: target.pid });
            }
            None
        }
        libc::ENOENT if hw_type && !system::has_hardware_pmu() => Some(Hint::NoHardwarePmu),
        libc::ENOENT => Some(Hint::EventNotSupported {
            what: attr.describe_event(),
        }),
        libc::EOPNOTSUPP if hw_type && !system::has_hardware_pmu() => Some(Hint::NoHardwarePmu),
        libc::EOPNOTSUPP => Some(Hint::EventNotSupported {
            what: if attr.is_sampling() {
                format!(
                    "sampling {} (no overflow interrupt?)",
                    attr.describe_event()
                )
            } else {
                format!(
                    "{} with these exclude_* or branch settings",
                    attr.describe_event()
                )
            },
        }),
        libc::ENODEV => Some(Hint::EventNotSupported {
            what: format!("{} on cpu {}", attr.describe_event(), target.cpu),
        }),
        libc::EMFILE | libc::ENFILE => {
            let (soft, hard) = system::nofile_limit();
            Some(Hint::FdLimit { soft, hard })
        }
        libc::E2BIG => Some(Hint::AttrTooBig {
            kernel_size: after.size,
        }),
        libc::EBUSY => Some(Hint::Busy {
            what: "the PMU (another exclusive or pinned user, e.g. the NMI watchdog: \
                   `sysctl -w kernel.nmi_watchdog=0`)",
        }),
        libc::ENOSPC if attr.type_id() == abi::PERF_TYPE_BREAKPOINT => Some(Hint::Busy {
            what: "every hardware breakpoint slot",
        }),
        libc::EOVERFLOW => Some(Hint::MaxStack {
            limit: system::max_stack().unwrap_or(127),
        }),
        libc::ESRCH => Some(Hint::Other(format!("no process or thread {}", target.pid))),
        libc::EINVAL if attr.get(AttrBit::PRECISE_IP) > 0 => Some(Hint::Other(
            "the PMU refused precise_ip (`precise`/`:p`): lower the level or drop it".into(),
        )),
        libc::EINVAL if target.cpu >= system::online_cpu_count() as i32 => Some(Hint::Other(
            format!("cpu {} does not exist or is offline", target.cpu),
        )),
        libc::EINVAL if attr.is_sampling() && attr.is_set(AttrBit::FREQ) => {
            Some(Hint::Other(format!(
                "the sample frequency may exceed kernel.perf_event_max_sample_rate ({})",
                system::max_sample_rate().unwrap_or(0)
            )))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scaling_handles_multiplexing_and_odd_times() {
        assert_eq!(scale(100, Some(10), Some(10)), Some(100));
        assert_eq!(scale(100, Some(20), Some(10)), Some(200));
        assert_eq!(scale(100, Some(10), Some(0)), None);
        assert_eq!(scale(0, Some(0), Some(0)), Some(0));
        // running > enabled happens with inherited counters; never scale down.
        assert_eq!(scale(100, Some(10), Some(20)), Some(100));
        assert_eq!(scale(u64::MAX, Some(u64::MAX), Some(1)), Some(u64::MAX));
        assert_eq!(scale(7, None, None), Some(7));
    }

    #[test]
    fn single_read_layout_follows_read_format() {
        let f = ReadFormat::TOTAL_TIME_ENABLED | ReadFormat::ID;
        let c = parse_single(f, &[5, 6, 7]);
        assert_eq!(c.value, 5);
        assert_eq!(c.time_enabled, Some(6));
        assert_eq!(c.time_running, None);
        assert_eq!(c.id, Some(7));
    }

    #[test]
    fn group_layout_follows_read_format() {
        let mut g = GroupCount::with_capacity(2);
        g.read_format = ReadFormat::GROUP
            | ReadFormat::TOTAL_TIME_ENABLED
            | ReadFormat::TOTAL_TIME_RUNNING
            | ReadFormat::ID;
        g.buf[..7].copy_from_slice(&[2, 100, 50, 11, 1, 22, 2]);
        g.words = 7;
        g.validate().unwrap();
        assert_eq!(g.len(), 2);
        let m: Vec<_> = g.iter().map(|c| (c.value, c.id, c.scaled())).collect();
        assert_eq!(m, vec![(11, Some(1), Some(22)), (22, Some(2), Some(44))]);
        g.words = 5;
        assert!(g.validate().is_err());
    }
}
