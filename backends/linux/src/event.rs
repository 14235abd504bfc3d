//! An open perf event: the file descriptor, every ioctl as a method, and the
//! read formats.
//!
//! `read.rs` holds the read side (`Count`, `TimedCount`, `GroupCount`,
//! `scale`, the `read*` methods); `diagnose.rs` explains a failed open.

mod diagnose;
mod read;

use std::ffi::CString;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};

pub use read::{Count, GroupCount, TimedCount, scale};

use diagnose::{diagnose_cgroup_open, diagnose_open};

use crate::attr::{Attr, ReadFormat};
use crate::cgroup::Cgroup;
use crate::error::{Error, Hint};
use crate::sys::{self, abi};

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
        /// `pid` is a cgroup directory fd (system-wide, per-cgroup monitoring;
        /// [`Event::open_in_cgroup`] sets it with a borrowed [`Cgroup`]).
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

/// What an open is for: a [`Target`], or a cgroup on one CPU.
#[derive(Clone, Copy)]
enum Who<'a> {
    Target(Target),
    Cgroup(&'a Cgroup, u32),
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
        Event::open_raw(attr, attr.raw, Who::Target(target), group, flags)
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
        Event::open_raw(attr, raw, Who::Target(target), group, flags)
    }

    /// Opens an event counting only what the tasks of `cgroup` run on
    /// `cpu` (`PERF_FLAG_PID_CGROUP` is added): system-wide monitoring,
    /// with its privilege (`perf_event_paranoid` <= 0 or CAP_PERFMON). The
    /// cgroup is borrowed for the call only: the kernel keeps its own
    /// reference.
    pub fn open_in_cgroup(
        attr: &Attr,
        cgroup: &Cgroup,
        cpu: u32,
        group: Option<&Event>,
        flags: OpenFlags,
    ) -> Result<Event, Error> {
        Event::open_raw(attr, attr.raw, Who::Cgroup(cgroup, cpu), group, flags)
    }

    /// [`Event::open_in_cgroup`] of an event whose `config1` is a string
    /// (see [`Event::open_with_string`]).
    pub fn open_with_string_in_cgroup(
        attr: &Attr,
        string: &std::ffi::CStr,
        cgroup: &Cgroup,
        cpu: u32,
        group: Option<&Event>,
        flags: OpenFlags,
    ) -> Result<Event, Error> {
        let mut raw = attr.raw;
        raw.config1 = string.as_ptr() as usize as u64;
        Event::open_raw(attr, raw, Who::Cgroup(cgroup, cpu), group, flags)
    }

    fn open_raw(
        attr: &Attr,
        raw: abi::RawAttr,
        who: Who<'_>,
        group: Option<&Event>,
        flags: OpenFlags,
    ) -> Result<Event, Error> {
        let (pid, cpu, flags) = match who {
            Who::Target(target) => (target.pid, target.cpu, flags),
            Who::Cgroup(cgroup, cpu) => {
                let cpu = i32::try_from(cpu).map_err(|_| {
                    Error::invalid(format!("cpu {cpu}"), "is beyond any CPU number")
                })?;
                // The descriptor stays open while `cgroup` is borrowed.
                let fd = cgroup.as_fd().as_raw_fd();
                (fd, cpu, flags | OpenFlags::PID_CGROUP)
            }
        };
        let first = raw;
        let mut raw = raw;
        let fl = flags.bits() | abi::PERF_FLAG_FD_CLOEXEC;
        let group_fd = group.map(|g| g.fd.as_fd());
        let mut result = sys::perf_event_open(&mut raw, pid, cpu, group_fd, fl);
        if matches!(result, Err(libc::E2BIG))
            && raw.size < attr.raw.size
            && raw.size >= abi::ATTR_SIZE_VER0
        {
            let kernel_size = raw.size as usize;
            if attr.to_bytes()[kernel_size..].iter().all(|b| *b == 0) {
                raw = first;
                raw.size = kernel_size as u32;
                result = sys::perf_event_open(&mut raw, pid, cpu, group_fd, fl);
            }
        }
        match result {
            Ok(fd) => Ok(Event {
                fd,
                read_format: attr.get_read_format(),
                sampling: attr.is_sampling(),
            }),
            Err(errno) => Err(Error::Os {
                op: match who {
                    Who::Target(_) => format!(
                        "perf_event_open({}, pid {pid}, cpu {cpu})",
                        attr.describe_event()
                    ),
                    Who::Cgroup(cgroup, _) => format!(
                        "perf_event_open({}, cgroup {}, cpu {cpu})",
                        attr.describe_event(),
                        cgroup.path().display()
                    ),
                },
                errno,
                hint: match who {
                    Who::Target(target) => diagnose_open(errno, attr, &raw, target),
                    Who::Cgroup(cgroup, _) => diagnose_cgroup_open(errno, cgroup, cpu)
                        .or_else(|| diagnose_open(errno, attr, &raw, Target { pid: -1, cpu })),
                },
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

    /// Waits up to `timeout_ms` (-1 = forever) for the event to become
    /// readable. Returns `(readable, hung_up)`: `hung_up` means the monitored
    /// task exited and no more data will come.
    pub fn poll(&self, timeout_ms: i32) -> Result<(bool, bool), Error> {
        sys::poll_in(self.fd.as_fd(), timeout_ms).map_err(|e| Error::os("poll(perf fd)", e))
    }
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
