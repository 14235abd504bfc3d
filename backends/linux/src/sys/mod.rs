//! The operating-system layer of the binding, and the only place in the
//! workspace with `unsafe` code.
//!
//! What a well-kept crate wraps safely goes through it: nix for poll,
//! prctl, read, getrlimit, kill, gettid, sched_getcpu, sysconf, geteuid and
//! clock_gettime, memmap2 for mapping and unmapping. Hand-written `unsafe`
//! is left only where no crate helps: `perf_event_open` and the perf ioctls
//! (here), `capget` (no nix wrapper), the ring's volatile/atomic accesses
//! and `rdpmc`/`rdtsc` (`mmap.rs`), and libpfm4 (`pfm.rs`). Each block's
//! `// SAFETY:` comment says why it holds whatever the caller does.
//!
//! Errors are returned as the raw `errno` so the safe layer above can
//! diagnose them.

pub mod abi;
pub(crate) mod mmap;
#[cfg(feature = "libpfm")]
pub(crate) mod pfm;

use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};

use nix::errno::Errno;
use nix::poll::{PollFd, PollFlags, PollTimeout};
use nix::sys::resource::{Resource, getrlimit};
use nix::time::{ClockId, clock_gettime};
use nix::unistd::{Pid, SysconfVar, sysconf};

use abi::RawAttr;

/// The errno of the last failed libc call on this thread.
fn last_errno() -> i32 {
    Errno::last_raw()
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
    if attr.size as usize > core::mem::size_of::<RawAttr>() {
        // The kernel would read past the struct.
        return Err(libc::EINVAL);
    }
    let group = group_fd.map_or(-1, |fd| fd.as_raw_fd());
    // SAFETY: `attr` is a valid, exclusively borrowed `perf_event_attr` of
    // at least `attr.size` bytes (checked above); the kernel reads that
    // many and may write back `size` (a field of the struct) on E2BIG.
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

/// Opens a directory `O_RDONLY | O_CLOEXEC | O_DIRECTORY` (std adds
/// `O_CLOEXEC` to every open): a cgroup for `PERF_FLAG_PID_CGROUP`.
pub(crate) fn open_directory(path: &std::path::Path) -> Result<OwnedFd, i32> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECTORY)
        .open(path)
        .map(OwnedFd::from)
        .map_err(|e| e.raw_os_error().unwrap_or(libc::EIO))
}

/// Whether `fd` is on a cgroup file system, v1 or v2 (`fstatfs(2)`).
pub(crate) fn is_cgroup_fs(fd: BorrowedFd<'_>) -> Result<bool, i32> {
    use nix::sys::statfs::{CGROUP_SUPER_MAGIC, CGROUP2_SUPER_MAGIC, fstatfs};
    let kind = fstatfs(fd).map_err(|e| e as i32)?.filesystem_type();
    Ok(kind == CGROUP2_SUPER_MAGIC || kind == CGROUP_SUPER_MAGIC)
}

/// A perf ioctl that takes its argument by value, so no memory crosses the
/// call whatever the argument is. Only these requests exist: a request that
/// reads or writes through a pointer has its own typed wrapper below.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ValueIoctl(u64);

impl ValueIoctl {
    pub(crate) const ENABLE: ValueIoctl = ValueIoctl(abi::PERF_EVENT_IOC_ENABLE);
    pub(crate) const DISABLE: ValueIoctl = ValueIoctl(abi::PERF_EVENT_IOC_DISABLE);
    pub(crate) const RESET: ValueIoctl = ValueIoctl(abi::PERF_EVENT_IOC_RESET);
    pub(crate) const REFRESH: ValueIoctl = ValueIoctl(abi::PERF_EVENT_IOC_REFRESH);
    pub(crate) const SET_OUTPUT: ValueIoctl = ValueIoctl(abi::PERF_EVENT_IOC_SET_OUTPUT);
    pub(crate) const SET_BPF: ValueIoctl = ValueIoctl(abi::PERF_EVENT_IOC_SET_BPF);
    pub(crate) const PAUSE_OUTPUT: ValueIoctl = ValueIoctl(abi::PERF_EVENT_IOC_PAUSE_OUTPUT);
}

/// A perf ioctl whose argument is a plain integer (or unused).
#[inline]
pub(crate) fn ioctl_int(fd: BorrowedFd<'_>, request: ValueIoctl, arg: u64) -> Result<i32, i32> {
    // SAFETY: every `ValueIoctl` request takes its argument by value (see
    // the type), so the kernel dereferences no user memory.
    let ret = unsafe { libc::ioctl(fd.as_raw_fd(), request.0 as _, arg as libc::c_ulong) };
    if ret < 0 { Err(last_errno()) } else { Ok(ret) }
}

/// `PERF_EVENT_IOC_PERIOD`: the kernel reads a `u64`.
pub(crate) fn ioctl_period(fd: BorrowedFd<'_>, period: &u64) -> Result<i32, i32> {
    // SAFETY: `period` is a valid u64 for the duration of the call, and
    // PERF_EVENT_IOC_PERIOD reads exactly one u64 through its argument.
    let ret = unsafe {
        libc::ioctl(
            fd.as_raw_fd(),
            abi::PERF_EVENT_IOC_PERIOD as _,
            period as *const u64,
        )
    };
    if ret < 0 { Err(last_errno()) } else { Ok(ret) }
}

/// `PERF_EVENT_IOC_MODIFY_ATTRIBUTES`: the kernel reads a `perf_event_attr`.
pub(crate) fn ioctl_modify_attributes(fd: BorrowedFd<'_>, attr: &RawAttr) -> Result<i32, i32> {
    // SAFETY: `attr` is a valid `perf_event_attr` for the duration of the
    // call; the kernel reads at most `attr.size` bytes of it, and `Attr`
    // never sets `size` beyond the struct (`RawAttr` is the newest uapi
    // layout).
    let ret = unsafe {
        libc::ioctl(
            fd.as_raw_fd(),
            abi::PERF_EVENT_IOC_MODIFY_ATTRIBUTES as _,
            attr as *const RawAttr,
        )
    };
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

/// `read(2)` into a `u64` buffer (the perf read formats are arrays of u64),
/// seen as bytes. The first attempt is inline; a failure (EINTR retries) is
/// out of line, which keeps callers' hot paths short.
#[inline(always)]
pub(crate) fn read_u64s(fd: BorrowedFd<'_>, buf: &mut [u64]) -> Result<usize, i32> {
    match nix::unistd::read(fd, bytemuck::cast_slice_mut(buf)) {
        Ok(n) => Ok(n),
        Err(e) => read_u64s_retrying(fd, buf, e),
    }
}

#[cold]
#[inline(never)]
fn read_u64s_retrying(fd: BorrowedFd<'_>, buf: &mut [u64], first: Errno) -> Result<usize, i32> {
    let mut e = first;
    while e == Errno::EINTR {
        match nix::unistd::read(fd, bytemuck::cast_slice_mut(buf)) {
            Ok(n) => return Ok(n),
            Err(again) => e = again,
        }
    }
    Err(e as i32)
}

/// `prctl(PR_TASK_PERF_EVENTS_{ENABLE,DISABLE})`.
pub(crate) fn prctl_perf_events(enable: bool) -> Result<(), i32> {
    let done = if enable {
        nix::sys::prctl::task_perf_events_enable()
    } else {
        nix::sys::prctl::task_perf_events_disable()
    };
    done.map_err(|e| e as i32)
}

/// `poll(2)` for readability on one fd (a negative timeout waits forever).
/// Returns `Ok(true)` when readable, `Ok(false)` on timeout; `POLLHUP` (the
/// monitored task exited) is reported as readable with `hup = true`.
pub(crate) fn poll_in(fd: BorrowedFd<'_>, timeout_ms: i32) -> Result<(bool, bool), i32> {
    let timeout = PollTimeout::try_from(timeout_ms).unwrap_or(PollTimeout::NONE);
    let mut fds = [PollFd::new(fd, PollFlags::POLLIN)];
    loop {
        match nix::poll::poll(&mut fds, timeout) {
            Ok(_) => {
                let revents = fds[0].revents().unwrap_or(PollFlags::empty());
                let hup = revents.intersects(PollFlags::POLLHUP | PollFlags::POLLERR);
                return Ok((revents.contains(PollFlags::POLLIN) || hup, hup));
            }
            Err(Errno::EINTR) => continue,
            Err(e) => return Err(e as i32),
        }
    }
}

/// The caller's thread id.
pub(crate) fn gettid() -> i32 {
    nix::unistd::gettid().as_raw()
}

/// The calling process's id, with no system call after its first: it is
/// kept in a page mapped `MADV_WIPEONFORK` (madvise(2): "the child process
/// will see the memory as zero-filled" after a fork, whatever made the
/// fork — libc's `fork`, `clone` without `CLONE_VM`, a raw syscall), and
/// a zero means ask the kernel again. glibc dropped its own pid cache
/// because a raw `clone` left it stale; the kernel's wiping has no such
/// gap. Without `MADV_WIPEONFORK` (Linux < 4.14) every call is a getpid.
pub(crate) fn own_pid() -> u32 {
    use std::sync::OnceLock;
    use std::sync::atomic::{AtomicU32, Ordering};
    static WORD: OnceLock<Option<&'static AtomicU32>> = OnceLock::new();
    let Some(word) = *WORD.get_or_init(wipe_on_fork_word) else {
        return nix::unistd::getpid().as_raw() as u32;
    };
    match word.load(Ordering::Relaxed) {
        0 => {
            let pid = nix::unistd::getpid().as_raw() as u32;
            word.store(pid, Ordering::Relaxed);
            pid
        }
        pid => pid,
    }
}

/// One zero-filled `AtomicU32` that the kernel zeroes again in every
/// forked child, or `None` where it cannot (the page is then unmapped).
fn wipe_on_fork_word() -> Option<&'static std::sync::atomic::AtomicU32> {
    use nix::sys::mman::{MapFlags, MmapAdvise, ProtFlags, madvise, mmap_anonymous, munmap};
    let len = std::num::NonZeroUsize::new(page_size())?;
    // SAFETY: a new private anonymous mapping, at an address the kernel
    // chooses, aliases no Rust object.
    let page = unsafe {
        mmap_anonymous(
            None,
            len,
            ProtFlags::PROT_READ | ProtFlags::PROT_WRITE,
            MapFlags::MAP_PRIVATE,
        )
    }
    .ok()?;
    // SAFETY: `page` is the mapping made above, `len` bytes long, and
    // nothing refers to it yet; wiping it changes no live object.
    if unsafe { madvise(page, len.get(), MmapAdvise::MADV_WIPEONFORK) }.is_err() {
        // SAFETY: the mapping made above, not shared with anything.
        let _ = unsafe { munmap(page, len.get()) };
        return None;
    }
    // SAFETY: the page is readable and writable, zero-filled (a valid
    // AtomicU32), aligned to a page (more than AtomicU32's 4), and never
    // unmapped: the reference lives as long as the process. A forked
    // child's copy is zeroed by the kernel, which is again a valid value.
    Some(unsafe { &*page.as_ptr().cast::<std::sync::atomic::AtomicU32>() })
}

/// Whether a process or thread with this id exists (`kill(pid, 0)`):
/// `EPERM` means it exists but belongs to someone else.
pub(crate) fn process_exists(pid: i32) -> bool {
    if pid <= 0 {
        return false;
    }
    matches!(
        nix::sys::signal::kill(Pid::from_raw(pid), None),
        Ok(()) | Err(Errno::EPERM)
    )
}

/// The soft and hard `RLIMIT_NOFILE`.
pub(crate) fn nofile_limit() -> (u64, u64) {
    #[allow(clippy::unnecessary_cast)] // rlim_t is not u64 on every target
    getrlimit(Resource::RLIMIT_NOFILE).map_or((0, 0), |(soft, hard)| (soft as u64, hard as u64))
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

cfg_if::cfg_if! {
    if #[cfg(target_arch = "x86_64")] {
        /// Raw CPUID (always available on x86_64, and a safe intrinsic).
        pub(crate) fn cpuid(leaf: u32, subleaf: u32) -> Option<[u32; 4]> {
            let r = core::arch::x86_64::__cpuid_count(leaf, subleaf);
            Some([r.eax, r.ebx, r.ecx, r.edx])
        }
    } else {
        /// No CPUID off x86.
        pub(crate) fn cpuid(_leaf: u32, _subleaf: u32) -> Option<[u32; 4]> {
            None
        }
    }
}

/// The number of online CPUs as the C library reports it.
pub(crate) fn online_cpus() -> usize {
    match sysconf(SysconfVar::_NPROCESSORS_ONLN) {
        Ok(Some(n)) if n >= 1 => n as usize,
        _ => 1,
    }
}

/// The CPU the calling thread runs on right now.
pub(crate) fn current_cpu() -> Option<u32> {
    nix::sched::sched_getcpu()
        .ok()
        .and_then(|c| u32::try_from(c).ok())
}

/// The effective user id.
pub(crate) fn geteuid() -> u32 {
    nix::unistd::geteuid().as_raw()
}

/// The system page size.
pub(crate) fn page_size() -> usize {
    match sysconf(SysconfVar::PAGE_SIZE) {
        Ok(Some(n)) if n > 0 => n as usize,
        _ => 4096,
    }
}

/// `clock_gettime(CLOCK_MONOTONIC)` in nanoseconds (the clock perf stamps
/// records with when `use_clockid` selects it).
pub(crate) fn monotonic_ns() -> u64 {
    clock_ns(ClockId::CLOCK_MONOTONIC)
}

/// CPU time consumed by the calling thread, in nanoseconds.
pub(crate) fn thread_cpu_ns() -> u64 {
    clock_ns(ClockId::CLOCK_THREAD_CPUTIME_ID)
}

/// `clock_gettime(clock)` in nanoseconds; 0 if the clock is unavailable.
fn clock_ns(clock: ClockId) -> u64 {
    clock_gettime(clock).map_or(0, |ts| {
        (ts.tv_sec() as u64).wrapping_mul(1_000_000_000) + ts.tv_nsec() as u64
    })
}

#[cfg(test)]
mod tests {
    use super::own_pid;

    /// Forks with `fork` (the raw clone system call when `raw`), and in the child
    /// compares `own_pid` with the kernel's getpid: the exit status says
    /// whether they matched (0), or the cached parent pid was seen (1).
    fn child_sees_its_own_pid(raw: bool) -> i32 {
        let parent = own_pid();
        assert_eq!(parent, std::process::id(), "the parent's own pid");
        // SAFETY: the child only loads and stores an atomic, makes the
        // getpid system call and `_exit`s: no lock, no allocation, nothing
        // another thread of the parent could have left half done.
        let child = unsafe {
            if raw {
                // clone(SIGCHLD) is fork on every architecture (arm64 has
                // no fork system call).
                libc::syscall(libc::SYS_clone, libc::SIGCHLD, 0, 0, 0, 0) as libc::pid_t
            } else {
                libc::fork()
            }
        };
        assert!(child >= 0, "fork failed");
        if child == 0 {
            // SAFETY: getpid and _exit are async-signal-safe.
            unsafe {
                let ok = own_pid() == libc::getpid() as u32 && own_pid() != parent;
                libc::_exit(if ok { 0 } else { 1 });
            }
        }
        let mut status = 0;
        // SAFETY: waits for the child forked above; `status` is writable.
        let waited = unsafe { libc::waitpid(child, &mut status, 0) };
        assert_eq!(waited, child);
        assert!(libc::WIFEXITED(status), "child status {status:#x}");
        assert_eq!(own_pid(), parent, "the parent's pid after the fork");
        libc::WEXITSTATUS(status)
    }

    #[test]
    fn a_forked_child_sees_its_own_pid_not_the_cached_one() {
        assert_eq!(child_sees_its_own_pid(false), 0, "libc fork");
    }

    /// The case glibc's own pid cache got wrong: a fork libc never saw.
    #[test]
    fn a_child_of_a_raw_fork_system_call_sees_its_own_pid() {
        assert_eq!(child_sees_its_own_pid(true), 0, "raw fork syscall");
    }
}
