//! The FreeBSD-only part: find hwpmc's system call number with
//! `modfind(2)`/`modstat(2)` and issue `syscall(num, op, arg)`, exactly as
//! libpmc's `pmc_init` and `PMC_CALL` do (lib/libpmc/libpmc.c).
//!
//! Compiled and run only on FreeBSD; everything it passes to the kernel is
//! a `#[repr(C)]` mirror from [`crate::abi`] whose layout is tested on
//! every platform. This is the crate's only `unsafe` code.
#![allow(unsafe_code)]

use std::ffi::{CString, c_int, c_void};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use crate::abi::{self, Errno, Op};
use crate::transport::{Request, Transport};

unsafe extern "C" {
    fn modfind(modname: *const libc::c_char) -> c_int;
    fn modstat(modid: c_int, stat: *mut abi::module_stat) -> c_int;
    fn sysctl(
        name: *const c_int,
        namelen: libc::c_uint,
        oldp: *mut c_void,
        oldlenp: *mut usize,
        newp: *const c_void,
        newlen: usize,
    ) -> c_int;
}

/// `sysctl {CTL_KERN, KERN_PROC, KERN_PROC_PROC, 0}`: every process as a
/// `struct kinfo_proc` (read with [`crate::procs::parse_kinfo_procs`]),
/// sized first and retried while processes appear (ENOMEM), as libutil's
/// `kinfo_getallproc` does.
pub fn kern_proc_proc() -> Result<Vec<u8>, Errno> {
    use crate::procs::{CTL_KERN, KERN_PROC, KERN_PROC_PROC};
    let mib = [CTL_KERN, KERN_PROC, KERN_PROC_PROC, 0];
    for _ in 0..8 {
        let mut len = 0usize;
        // SAFETY: a null buffer asks only for the size, written to `len`.
        let rc = unsafe {
            sysctl(
                mib.as_ptr(),
                4,
                std::ptr::null_mut(),
                &mut len,
                std::ptr::null(),
                0,
            )
        };
        if rc < 0 {
            return Err(last_errno());
        }
        // Room for processes created meanwhile.
        len += len / 8;
        let mut buf = vec![0u8; len];
        // SAFETY: `buf` has `len` writable bytes; the kernel writes at most
        // `len` and stores how many it wrote in `len`.
        let rc = unsafe {
            sysctl(
                mib.as_ptr(),
                4,
                buf.as_mut_ptr().cast(),
                &mut len,
                std::ptr::null(),
                0,
            )
        };
        if rc == 0 {
            buf.truncate(len);
            return Ok(buf);
        }
        let errno = last_errno();
        if errno != Errno::ENOMEM {
            return Err(errno);
        }
    }
    Err(Errno::ENOMEM)
}

fn last_errno() -> Errno {
    Errno(std::io::Error::last_os_error().raw_os_error().unwrap_or(0))
}

/// hwpmc's system call, located through the loaded module.
#[derive(Debug, Clone, Copy)]
pub struct SyscallTransport {
    syscall: c_int,
}

impl SyscallTransport {
    /// Finds the `hwpmc` module's syscall number. `Err(ENOENT)` when the
    /// module is not loaded (`kldload hwpmc`).
    pub fn open() -> Result<SyscallTransport, Errno> {
        let name = CString::new(abi::PMC_MODULE_NAME).expect("module name has no NUL");
        // SAFETY: `name` is a valid NUL-terminated string that outlives the call.
        let id = unsafe { modfind(name.as_ptr()) };
        if id < 0 {
            return Err(last_errno());
        }
        let mut stat = abi::module_stat::new();
        // SAFETY: `stat` is a writable `struct module_stat` mirror whose
        // `version` field holds its size, as modstat(2) requires.
        if unsafe { modstat(id, &mut stat) } < 0 {
            return Err(last_errno());
        }
        Ok(SyscallTransport {
            syscall: stat.intval(),
        })
    }

    fn raw(&self, op: Op, arg: *mut c_void) -> Result<(), Errno> {
        // SAFETY: `arg` is null (FLUSHLOG/CLOSELOG take none) or points to
        // the exclusively borrowed `#[repr(C)]` structure the operation
        // `op` reads and writes, alive for the whole call.
        let rc = unsafe { libc::syscall(self.syscall as _, op as c_int, arg) };
        if rc < 0 { Err(last_errno()) } else { Ok(()) }
    }
}

/// Whether process `pid` exists: `kill(pid, 0)` succeeds, or fails only
/// with EPERM (it exists but belongs to someone else).
pub fn process_exists(pid: i32) -> bool {
    if pid <= 0 {
        return false;
    }
    // SAFETY: signal 0 performs only the existence and permission checks;
    // no signal is delivered.
    let rc = unsafe { libc::kill(pid, 0) };
    rc == 0 || last_errno() == Errno::EPERM
}

/// `CLOCK_MONOTONIC` in nanoseconds (the clock hwpmc's log records use).
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable `timespec` for the whole call.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    if rc != 0 {
        return 0;
    }
    (ts.tv_sec as u64)
        .saturating_mul(1_000_000_000)
        .saturating_add(ts.tv_nsec as u64)
}

/// A pipe for hwpmc's log, both ends close-on-exec: `(read, write)`, the
/// read end non-blocking (the write end stays blocking: hwpmc's logger
/// thread treats a failed write, EAGAIN included, as the log's error).
pub fn log_pipe() -> Result<(OwnedFd, OwnedFd), Errno> {
    let mut fds: [c_int; 2] = [-1, -1];
    // SAFETY: `fds` is a writable array of two ints, as pipe2(2) requires.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } < 0 {
        return Err(last_errno());
    }
    // SAFETY: pipe2 succeeded: both descriptors are open and owned by no
    // one else.
    let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    // SAFETY: fcntl on an open descriptor with integer arguments only.
    let flags = unsafe { libc::fcntl(read.as_raw_fd(), libc::F_GETFL) };
    if flags < 0 {
        return Err(last_errno());
    }
    // SAFETY: as above; O_NONBLOCK on the read end only.
    let set = unsafe { libc::fcntl(read.as_raw_fd(), libc::F_SETFL, flags | libc::O_NONBLOCK) };
    if set < 0 {
        return Err(last_errno());
    }
    Ok((read, write))
}

fn ptr<T>(r: &mut T) -> *mut c_void {
    (r as *mut T).cast()
}

impl Transport for SyscallTransport {
    fn call(&self, request: Request<'_>) -> Result<(), Errno> {
        let op = request.op();
        match request {
            Request::FlushLog | Request::CloseLog => self.raw(op, std::ptr::null_mut()),
            Request::ConfigureLog(a) => self.raw(op, ptr(a)),
            Request::GetCpuInfo(a) => self.raw(op, ptr(a)),
            Request::GetDriverStats(a) => self.raw(op, ptr(a)),
            Request::GetModuleVersion(a) => self.raw(op, ptr(a)),
            Request::PmcAdmin(a) => self.raw(op, ptr(a)),
            Request::PmcAllocate(a) => self.raw(op, ptr(a)),
            Request::PmcAttach(a) | Request::PmcDetach(a) => self.raw(op, ptr(a)),
            Request::PmcGetMsr(a) => self.raw(op, ptr(a)),
            Request::PmcRelease(a) | Request::PmcStart(a) | Request::PmcStop(a) => {
                self.raw(op, ptr(a))
            }
            Request::PmcRw(a) => self.raw(op, ptr(a)),
            Request::PmcSetCount(a) => self.raw(op, ptr(a)),
            Request::WriteLog(a) => self.raw(op, ptr(a)),
            Request::GetDynEventInfo(a) => self.raw(op, ptr(a)),
            Request::GetPmcInfo { cpu, pmcs } => {
                // The flexible array follows the 8-aligned head: build the
                // contiguous C layout in u64 storage and copy the rows back.
                let head = abi::GETPMCINFO_PMCS_OFFSET;
                let row = std::mem::size_of::<abi::pmc_info>();
                let mut buf = vec![0u64; (head + std::mem::size_of_val(pmcs)).div_ceil(8)];
                let base = buf.as_mut_ptr().cast::<u8>();
                // SAFETY: `buf` holds at least `head + row * len` bytes, is
                // 8-aligned like `pmc_info`, and the head starts with the
                // i32 `pm_cpu`.
                unsafe { base.cast::<i32>().write(cpu) };
                self.raw(op, base.cast())?;
                for (i, slot) in pmcs.iter_mut().enumerate() {
                    // SAFETY: row `i` lies inside `buf` at an 8-aligned
                    // offset and holds plain data the kernel wrote.
                    *slot = unsafe { base.add(head + i * row).cast::<abi::pmc_info>().read() };
                }
                Ok(())
            }
        }
    }
}
