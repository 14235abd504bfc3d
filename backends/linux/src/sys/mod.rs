//! The only place in the workspace with `unsafe` code: raw system calls,
//! ioctls, the shared mmap pages and the `rdpmc` instruction.
//!
//! Every function here is a thin, safe wrapper whose `// SAFETY:` comment
//! states why the call cannot violate memory safety. Errors are returned as
//! the raw `errno` so the safe layer above can diagnose them.

pub mod abi;
pub(crate) mod mmap;
#[cfg(feature = "libpfm")]
pub(crate) mod pfm;

use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};

use abi::RawAttr;

/// The errno of the last failed libc call on this thread.
fn last_errno() -> i32 {
    std::io::Error::last_os_error()
        .raw_os_error()
        .unwrap_or(libc::EIO)
}

/// `perf_event_open(2)`. `attr.size` must already be set by the caller; on
/// `E2BIG` the kernel writes the size it supports back into `attr.size`.
pub(crate) fn perf_event_open(
    attr: &mut RawAttr,
    pid: i32,
    cpu: i32,
    group_fd: Option<BorrowedFd<'_>>,
    flags: u64,
) -> Result<OwnedFd, i32> {
    let group = group_fd.map_or(-1, |fd| fd.as_raw_fd());
    // SAFETY: `attr` is a valid, exclusively borrowed `perf_event_attr` of
    // `attr.size` bytes (the struct is at least that large, checked by the
    // caller); the kernel reads it and may write back `size` on E2BIG.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_perf_event_open,
            attr as *mut RawAttr,
            pid as libc::c_int,
            cpu as libc::c_int,
            group as libc::c_int,
            flags as libc::c_ulong,
        )
    };
    if ret < 0 {
        return Err(last_errno());
    }
    // SAFETY: on success the syscall returns a new file descriptor that
    // nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(ret as RawFd) })
}

/// An ioctl whose argument is a plain integer (or unused).
#[inline]
pub(crate) fn ioctl_int(fd: BorrowedFd<'_>, request: u64, arg: u64) -> Result<i32, i32> {
    // SAFETY: the perf ioctls called through this wrapper take their
    // argument by value (ENABLE, DISABLE, RESET, REFRESH, SET_OUTPUT,
    // SET_BPF, PAUSE_OUTPUT), so no memory is passed to the kernel.
    let ret = unsafe { libc::ioctl(fd.as_raw_fd(), request as _, arg as libc::c_ulong) };
    if ret < 0 { Err(last_errno()) } else { Ok(ret) }
}

/// An ioctl that reads a `T` from user memory (PERIOD, MODIFY_ATTRIBUTES).
pub(crate) fn ioctl_in<T>(fd: BorrowedFd<'_>, request: u64, arg: &T) -> Result<i32, i32> {
    // SAFETY: `arg` is a valid reference to a `T` for the duration of the
    // call; the kernel only reads `size_of::<T>()` bytes (or, for
    // MODIFY_ATTRIBUTES, `attr.size` bytes, which never exceeds the struct).
    let ret = unsafe { libc::ioctl(fd.as_raw_fd(), request as _, arg as *const T) };
    if ret < 0 { Err(last_errno()) } else { Ok(ret) }
}

/// `PERF_EVENT_IOC_SET_FILTER`: the kernel reads a NUL-terminated string.
pub(crate) fn ioctl_set_filter(fd: BorrowedFd<'_>, filter: &std::ffi::CStr) -> Result<(), i32> {
    // SAFETY: `filter` is a valid NUL-terminated string that outlives the call.
    let ret = unsafe {
        libc::ioctl(
            fd.as_raw_fd(),
            abi::PERF_EVENT_IOC_SET_FILTER as _,
            filter.as_ptr(),
        )
    };
    if ret < 0 { Err(last_errno()) } else { Ok(()) }
}

/// `PERF_EVENT_IOC_ID`: the kernel writes a `u64`.
pub(crate) fn ioctl_id(fd: BorrowedFd<'_>) -> Result<u64, i32> {
    let mut id = 0u64;
    // SAFETY: `id` is a valid, writable u64 for the duration of the call.
    let ret = unsafe { libc::ioctl(fd.as_raw_fd(), abi::PERF_EVENT_IOC_ID as _, &mut id) };
    if ret < 0 { Err(last_errno()) } else { Ok(id) }
}

/// `PERF_EVENT_IOC_QUERY_BPF`: fills `ids` with the attached program ids and
/// returns the total number of attached programs.
pub(crate) fn ioctl_query_bpf(fd: BorrowedFd<'_>, ids: &mut [u32]) -> Result<u32, i32> {
    // The kernel expects a header followed by `ids_len` u32 slots.
    let mut buf = vec![0u32; 2 + ids.len()];
    buf[0] = u32::try_from(ids.len()).map_err(|_| libc::EINVAL)?;
    // SAFETY: `buf` holds the `perf_event_query_bpf` header followed by
    // `ids_len` writable u32 slots, exactly what the kernel may write.
    let ret = unsafe {
        libc::ioctl(
            fd.as_raw_fd(),
            abi::PERF_EVENT_IOC_QUERY_BPF as _,
            buf.as_mut_ptr(),
        )
    };
    if ret < 0 {
        return Err(last_errno());
    }
    let prog_cnt = buf[1];
    let n = (prog_cnt as usize).min(ids.len());
    ids[..n].copy_from_slice(&buf[2..2 + n]);
    Ok(prog_cnt)
}

/// `read(2)` into a `u64` buffer (the perf read formats are arrays of u64).
/// The first attempt is inline; a failure (EINTR retries) is out of line,
/// which keeps callers' hot paths short.
#[inline(always)]
pub(crate) fn read_u64s(fd: BorrowedFd<'_>, buf: &mut [u64]) -> Result<usize, i32> {
    match read_u64s_once(fd, buf) {
        Ok(n) => Ok(n),
        Err(_) => read_u64s_retrying(fd, buf),
    }
}

#[inline(always)]
fn read_u64s_once(fd: BorrowedFd<'_>, buf: &mut [u64]) -> Result<usize, ()> {
    // SAFETY: `buf` is valid and writable for `size_of_val(buf)` bytes,
    // and any byte pattern is a valid u64.
    let ret = unsafe {
        libc::read(
            fd.as_raw_fd(),
            buf.as_mut_ptr().cast(),
            core::mem::size_of_val(buf),
        )
    };
    usize::try_from(ret).map_err(drop)
}

#[cold]
#[inline(never)]
fn read_u64s_retrying(fd: BorrowedFd<'_>, buf: &mut [u64]) -> Result<usize, i32> {
    loop {
        let e = last_errno();
        if e != libc::EINTR {
            return Err(e);
        }
        if let Ok(n) = read_u64s_once(fd, buf) {
            return Ok(n);
        }
    }
}

/// `prctl(PR_TASK_PERF_EVENTS_{ENABLE,DISABLE})`.
pub(crate) fn prctl_perf_events(enable: bool) -> Result<(), i32> {
    let op = if enable {
        abi::PR_TASK_PERF_EVENTS_ENABLE
    } else {
        abi::PR_TASK_PERF_EVENTS_DISABLE
    };
    // SAFETY: these prctl operations take no pointer arguments.
    let ret = unsafe { libc::prctl(op, 0, 0, 0, 0) };
    if ret < 0 { Err(last_errno()) } else { Ok(()) }
}

/// `poll(2)` for readability on one fd. Returns `Ok(true)` when readable,
/// `Ok(false)` on timeout; `POLLHUP` (the monitored task exited) is reported
/// as readable with `hup = true`.
pub(crate) fn poll_in(fd: BorrowedFd<'_>, timeout_ms: i32) -> Result<(bool, bool), i32> {
    let mut pfd = libc::pollfd {
        fd: fd.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    loop {
        // SAFETY: `pfd` is one valid pollfd for the duration of the call.
        let ret = unsafe { libc::poll(&mut pfd, 1, timeout_ms) };
        if ret >= 0 {
            let hup = pfd.revents & (libc::POLLHUP | libc::POLLERR) != 0;
            return Ok((pfd.revents & libc::POLLIN != 0 || hup, hup));
        }
        let e = last_errno();
        if e != libc::EINTR {
            return Err(e);
        }
    }
}

/// The caller's thread id.
pub(crate) fn gettid() -> i32 {
    // SAFETY: gettid takes no arguments and cannot fail.
    unsafe { libc::gettid() }
}

/// Whether a process or thread with this id exists (`kill(pid, 0)`):
/// `EPERM` means it exists but belongs to someone else.
pub(crate) fn process_exists(pid: i32) -> bool {
    if pid <= 0 {
        return false;
    }
    // SAFETY: signal 0 performs only the existence and permission checks.
    let ret = unsafe { libc::kill(pid, 0) };
    ret == 0 || last_errno() == libc::EPERM
}

/// The soft and hard `RLIMIT_NOFILE`.
pub(crate) fn nofile_limit() -> (u64, u64) {
    let mut rl = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `rl` is a valid, writable rlimit.
    let ret = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut rl) };
    if ret < 0 {
        return (0, 0);
    }
    #[allow(clippy::unnecessary_cast)] // rlim_t is not u64 on every target
    (rl.rlim_cur as u64, rl.rlim_max as u64)
}

/// The effective capability set of the calling thread (capget v3), as a
/// 64-bit mask indexed by `CAP_*` number.
pub(crate) fn effective_capabilities() -> Result<u64, i32> {
    #[repr(C)]
    struct Header {
        version: u32,
        pid: i32,
    }
    #[repr(C)]
    #[derive(Clone, Copy, Default)]
    struct Data {
        effective: u32,
        permitted: u32,
        inheritable: u32,
    }
    const LINUX_CAPABILITY_VERSION_3: u32 = 0x2008_0522;
    let mut header = Header {
        version: LINUX_CAPABILITY_VERSION_3,
        pid: 0,
    };
    let mut data = [Data::default(); 2];
    // SAFETY: version 3 of capget writes two `Data` elements; both buffers
    // are valid and writable for the call.
    let ret = unsafe { libc::syscall(libc::SYS_capget, &mut header, data.as_mut_ptr()) };
    if ret < 0 {
        return Err(last_errno());
    }
    Ok(u64::from(data[0].effective) | (u64::from(data[1].effective) << 32))
}

/// Raw CPUID on x86; `None` elsewhere.
pub(crate) fn cpuid(leaf: u32, subleaf: u32) -> Option<[u32; 4]> {
    #[cfg(target_arch = "x86_64")]
    {
        // CPUID is always available on x86_64 and safe to call.
        let r = core::arch::x86_64::__cpuid_count(leaf, subleaf);
        Some([r.eax, r.ebx, r.ecx, r.edx])
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (leaf, subleaf);
        None
    }
}

/// The number of online CPUs as the C library reports it.
pub(crate) fn online_cpus() -> usize {
    // SAFETY: sysconf has no memory effects.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    if n < 1 { 1 } else { n as usize }
}

/// The CPU the calling thread runs on right now.
pub(crate) fn current_cpu() -> Option<u32> {
    // SAFETY: sched_getcpu has no memory effects.
    let c = unsafe { libc::sched_getcpu() };
    u32::try_from(c).ok()
}

/// The effective user id.
pub(crate) fn geteuid() -> u32 {
    // SAFETY: geteuid takes no arguments and cannot fail.
    unsafe { libc::geteuid() }
}

/// The system page size.
pub(crate) fn page_size() -> usize {
    // SAFETY: sysconf has no memory effects.
    let n = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if n <= 0 { 4096 } else { n as usize }
}

/// `clock_gettime(CLOCK_MONOTONIC)` in nanoseconds (the clock perf stamps
/// records with when `use_clockid` selects it).
pub(crate) fn monotonic_ns() -> u64 {
    clock_ns(libc::CLOCK_MONOTONIC)
}

/// CPU time consumed by the calling thread, in nanoseconds.
pub(crate) fn thread_cpu_ns() -> u64 {
    clock_ns(libc::CLOCK_THREAD_CPUTIME_ID)
}

/// `clock_gettime(clock)` in nanoseconds; 0 if the clock is unavailable.
fn clock_ns(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid timespec for the kernel to fill.
    let ret = unsafe { libc::clock_gettime(clock, &mut ts) };
    if ret != 0 {
        return 0;
    }
    (ts.tv_sec as u64).wrapping_mul(1_000_000_000) + ts.tv_nsec as u64
}
