//! The C entry points: the only code here allowed `unsafe`. Each function
//! checks its pointers (NULL or misaligned → EFAULT, as the kernel's
//! copyin/copyout would answer for a bad address), calls the safe
//! implementation in [`crate::api`] / [`crate::pmclog`], and turns the
//! outcome into libpmc's `0` / `-1` + errno. Nothing is printed but a
//! panic's message (by the panic hook, on stderr).
//!
//! Every entry point runs its whole body in [`guard`]: a panic (a bug in
//! this library or the `pmc` crate) stops at the FFI edge and the C caller
//! gets the function's error value with errno `pmc::EDOOFUS` and the panic's
//! message in `pmc_last_error()`, instead of an aborted program. That needs
//! `panic = "unwind"`, the default of every profile of this workspace; a
//! build with `panic = "abort"` aborts, as it asked.
//!
//! Structs reach C memory only by typed writes (`ptr::write` of the value,
//! never a `&[u8]` view of a struct, whose padding bytes are uninitialised).

#![allow(unsafe_code)]

use std::cell::RefCell;
use std::ffi::{CStr, CString, c_char, c_int};
use std::fs::File;
use std::os::fd::{FromRawFd, OwnedFd, RawFd};
use std::panic::{AssertUnwindSafe, catch_unwind};

use crate::types::{pmc_cpuinfo, pmc_driverstats, pmc_info, pmc_pmcinfo};
use crate::{CResult, Failure, api, names};

mod errno;
mod log_entries;
#[cfg(test)]
mod panic_tests;
mod pmu_util;
#[cfg(test)]
mod tests;

#[cfg(all(test, target_os = "linux"))]
pub(crate) use pmu_util::{amd_config, iap_config, iap_rsp, md_config};

thread_local! {
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
}

fn set_errno(e: c_int) {
    errno::set(e);
}

/// Runs the body of the C entry point `entry`, stopping a panic at the FFI
/// edge (unwinding into C is undefined; Rust aborts the whole program
/// instead): after a panic it returns `on_panic`, the function's documented
/// error value, with errno `pmc::EDOOFUS` and the panic's message kept for
/// `pmc_last_error()`. The panic hook has printed the message to stderr
/// already, once, as for any panic.
///
/// `AssertUnwindSafe`: the state a body shares with later calls sits behind
/// mutexes whose poisoning every user recovers from (`api`, `pmclog`,
/// `pmu`), and the `pmc` crate's own state is as a panicking Rust caller
/// of `pmc` would leave it.
fn guard<R>(entry: &'static str, on_panic: R, body: impl FnOnce() -> R) -> R {
    let run = || {
        #[cfg(test)]
        panic_tests::panic_if_requested(entry);
        body()
    };
    match catch_unwind(AssertUnwindSafe(run)) {
        Ok(r) => r,
        Err(payload) => {
            let what = payload
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a panic without a message".to_owned());
            // A payload whose drop panics must not unwind out of here.
            let _ = catch_unwind(AssertUnwindSafe(move || drop(payload)));
            fail(Failure::new(
                pmc_core::EDOOFUS,
                format!(
                    "{entry}: internal error, libpmc panicked: {what}; this is a bug in libpmc, \
                     please report it (EDOOFUS)"
                ),
            ));
            on_panic
        }
    }
}

/// Keeps a message for `pmc_last_error`.
fn note(message: &str) {
    let message = CString::new(message.replace('\0', "")).unwrap_or_default();
    // try_with: during the thread's exit the message is dropped, not a
    // panic inside `guard`'s recovery.
    let _ = LAST_ERROR.try_with(|l| {
        if let Ok(mut l) = l.try_borrow_mut() {
            *l = message;
        }
    });
}

/// Records a failure: errno and the message for `pmc_last_error`.
fn fail(f: Failure) {
    note(&f.message);
    set_errno(f.errno);
}

/// `0` or `-1` + errno.
fn status(r: CResult<()>) -> c_int {
    match r {
        Ok(()) => 0,
        Err(f) => {
            fail(f);
            -1
        }
    }
}

fn efault(what: &str) -> Failure {
    Failure::new(
        libc::EFAULT,
        format!("{what} is NULL or not a valid address (EFAULT)"),
    )
}

/// Stores `v` through a C out-pointer.
fn put<T>(p: *mut T, v: T, what: &str) -> CResult<()> {
    if p.is_null() || !p.is_aligned() {
        return Err(efault(what));
    }
    // SAFETY: non-NULL and aligned; the C caller promises it points to a
    // writable T (the contract of every libpmc out-parameter).
    unsafe { p.write(v) };
    Ok(())
}

/// A NUL-terminated C string argument.
fn c_str<'a>(p: *const c_char, what: &str) -> CResult<&'a str> {
    if p.is_null() {
        return Err(efault(what));
    }
    // SAFETY: non-NULL; the caller passes a NUL-terminated string that
    // outlives this call.
    let s = unsafe { CStr::from_ptr(p) };
    s.to_str()
        .map_err(|_| Failure::new(libc::EINVAL, format!("{what} is not valid UTF-8 (EINVAL)")))
}

/// `head` followed, from byte `offset` on, by `items` (a C struct and its
/// flexible array member, `offset` being the member's `offset_of!`; `()`
/// and 0 for a bare array), each stored by a typed write into zeroed memory
/// from the C allocator, which the caller `free()`s, as with libpmc.
fn malloc_flex<H, T: Copy>(head: H, offset: usize, items: &[T]) -> CResult<*mut H> {
    let enomem = || Failure::new(libc::ENOMEM, "out of memory (ENOMEM)");
    assert!(
        offset >= size_of::<H>() && offset.is_multiple_of(align_of::<T>()),
        "malloc_flex: the array at {offset} overlaps its head or is misaligned"
    );
    let size = items
        .len()
        .checked_mul(size_of::<T>())
        .and_then(|n| n.checked_add(offset))
        .ok_or_else(enomem)?;
    // SAFETY: calloc has no preconditions; a size of 0 is raised to 1.
    let base = unsafe { libc::calloc(1, size.max(1)) }.cast::<u8>();
    if base.is_null() {
        return Err(enomem());
    }
    // malloc's memory is aligned for every fundamental type; checked
    // rather than assumed, for a T of unusual alignment.
    if !base.cast::<H>().is_aligned() || !base.cast::<T>().is_aligned() {
        // SAFETY: base came from calloc and is freed once.
        unsafe { libc::free(base.cast()) };
        return Err(Failure::new(
            libc::ENOMEM,
            "the C allocator's memory is not aligned for the result (ENOMEM)",
        ));
    }
    // SAFETY: base is aligned for H and has room for size_of::<H>() <=
    // offset <= size bytes.
    unsafe { base.cast::<H>().write(head) };
    // SAFETY: offset <= size, so the pointer stays within the allocation.
    let array = unsafe { base.add(offset) }.cast::<T>();
    for (i, item) in items.iter().enumerate() {
        // SAFETY: base and offset are aligned for T, and element i lies
        // within offset + items.len() * size_of::<T>() = size bytes, which
        // nothing else references yet.
        unsafe { array.add(i).write(*item) };
    }
    Ok(base.cast::<H>())
}

/// Checks `fd` as hwpmc's CONFIGURELOG does and duplicates it, so the
/// library keeps its own reference after the caller closes its fd.
fn log_destination(fd: RawFd) -> CResult<File> {
    let ebadf = |why: &str| {
        Failure::new(
            libc::EBADF,
            format!("pmc_configure_logfile: fd {fd} {why} (EBADF)"),
        )
    };
    // SAFETY: fcntl(F_GETFL) only queries the descriptor table.
    let fl = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    if fl < 0 {
        return Err(ebadf("is not an open file descriptor"));
    }
    if fl & libc::O_ACCMODE == libc::O_RDONLY {
        return Err(ebadf(
            "is open read-only; the log needs a writable descriptor",
        ));
    }
    // SAFETY: an all-zero stat is a valid value for fstat to overwrite.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: st is a valid, writable stat buffer.
    if unsafe { libc::fstat(fd, &mut st) } < 0 {
        return Err(ebadf("cannot be examined"));
    }
    if st.st_mode & libc::S_IFMT == libc::S_IFDIR {
        return Err(ebadf("is a directory"));
    }
    // SAFETY: fcntl(F_DUPFD_CLOEXEC) creates a new descriptor and touches
    // no memory.
    let dup = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 0) };
    if dup < 0 {
        let e = std::io::Error::last_os_error();
        return Err(Failure::new(
            e.raw_os_error().unwrap_or(libc::EBADF),
            format!("pmc_configure_logfile: duplicating fd {fd} failed: {e}"),
        ));
    }
    // SAFETY: dup is a descriptor we just created and own exclusively.
    Ok(File::from(unsafe { OwnedFd::from_raw_fd(dup) }))
}

/// `pmclog_open(fd)`: a duplicate of `fd` to read from (the caller keeps
/// its own).
fn log_source(fd: RawFd) -> CResult<File> {
    // SAFETY: fcntl(F_DUPFD_CLOEXEC) creates a new descriptor and touches
    // no memory.
    let dup = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 0) };
    if dup < 0 {
        return Err(Failure::new(
            libc::EBADF,
            format!("pmclog_open: fd {fd} is not an open file descriptor (EBADF)"),
        ));
    }
    // SAFETY: dup is a descriptor we just created and own exclusively.
    Ok(File::from(unsafe { OwnedFd::from_raw_fd(dup) }))
}

// ---- pmc(3) ----

/// pmc_init(3)
#[unsafe(no_mangle)]
pub extern "C" fn pmc_init() -> c_int {
    guard("pmc_init", -1, || status(api::init()))
}

/// pmc_allocate(3), FreeBSD 12+ form with the initial count / reload count.
#[unsafe(no_mangle)]
pub extern "C" fn pmc_allocate(
    ctrspec: *const c_char,
    mode: c_int,
    flags: u32,
    cpu: c_int,
    pmcid: *mut u32,
    count: u64,
) -> c_int {
    guard("pmc_allocate", -1, || {
        status((|| {
            let spec = c_str(ctrspec, "pmc_allocate: the event specifier")?;
            if pmcid.is_null() || !pmcid.is_aligned() {
                return Err(efault("pmc_allocate: the pmcid pointer"));
            }
            let id = api::allocate(spec, mode, flags, cpu, count)?;
            put(pmcid, id, "pmc_allocate: the pmcid pointer")
        })())
    })
}

/// pmc_attach(3)
#[unsafe(no_mangle)]
pub extern "C" fn pmc_attach(pmcid: u32, pid: libc::pid_t) -> c_int {
    guard("pmc_attach", -1, || status(api::attach(pmcid, pid)))
}

/// pmc_detach(3)
#[unsafe(no_mangle)]
pub extern "C" fn pmc_detach(pmcid: u32, pid: libc::pid_t) -> c_int {
    guard("pmc_detach", -1, || status(api::detach(pmcid, pid)))
}

/// pmc_release(3)
#[unsafe(no_mangle)]
pub extern "C" fn pmc_release(pmcid: u32) -> c_int {
    guard("pmc_release", -1, || status(api::release(pmcid)))
}

/// pmc_start(3)
#[unsafe(no_mangle)]
pub extern "C" fn pmc_start(pmcid: u32) -> c_int {
    guard("pmc_start", -1, || status(api::start(pmcid)))
}

/// pmc_stop(3)
#[unsafe(no_mangle)]
pub extern "C" fn pmc_stop(pmcid: u32) -> c_int {
    guard("pmc_stop", -1, || status(api::stop(pmcid)))
}

/// pmc_read(3)
#[unsafe(no_mangle)]
pub extern "C" fn pmc_read(pmcid: u32, value: *mut u64) -> c_int {
    guard("pmc_read", -1, || {
        status((|| {
            if value.is_null() || !value.is_aligned() {
                return Err(efault("pmc_read: the value pointer"));
            }
            put(value, api::read(pmcid)?, "pmc_read: the value pointer")
        })())
    })
}

/// pmc_write(3)
#[unsafe(no_mangle)]
pub extern "C" fn pmc_write(pmcid: u32, value: u64) -> c_int {
    guard("pmc_write", -1, || status(api::write(pmcid, value)))
}

/// pmc_rw(3); `oldvalue` may be NULL.
#[unsafe(no_mangle)]
pub extern "C" fn pmc_rw(pmcid: u32, newvalue: u64, oldvalue: *mut u64) -> c_int {
    guard("pmc_rw", -1, || {
        status((|| {
            if !oldvalue.is_null() && !oldvalue.is_aligned() {
                return Err(efault("pmc_rw: the oldvalue pointer"));
            }
            let old = api::rw(pmcid, newvalue)?;
            if oldvalue.is_null() {
                return Ok(());
            }
            put(oldvalue, old, "pmc_rw: the oldvalue pointer")
        })())
    })
}

/// pmc_set(3)
#[unsafe(no_mangle)]
pub extern "C" fn pmc_set(pmcid: u32, value: u64) -> c_int {
    guard("pmc_set", -1, || status(api::set(pmcid, value)))
}

/// pmc_capabilities(3)
#[unsafe(no_mangle)]
pub extern "C" fn pmc_capabilities(pmcid: u32, caps: *mut u32) -> c_int {
    guard("pmc_capabilities", -1, || {
        status((|| {
            if caps.is_null() {
                return Err(efault("pmc_capabilities: the caps pointer"));
            }
            put(
                caps,
                api::capabilities(pmcid)?,
                "pmc_capabilities: the caps pointer",
            )
        })())
    })
}

/// pmc_width(3)
#[unsafe(no_mangle)]
pub extern "C" fn pmc_width(pmcid: u32, width: *mut u32) -> c_int {
    guard("pmc_width", -1, || {
        status((|| {
            if width.is_null() {
                return Err(efault("pmc_width: the width pointer"));
            }
            put(width, api::width(pmcid)?, "pmc_width: the width pointer")
        })())
    })
}

/// pmc_get_msr(3)
#[unsafe(no_mangle)]
pub extern "C" fn pmc_get_msr(pmcid: u32, msr: *mut u32) -> c_int {
    guard("pmc_get_msr", -1, || {
        status((|| {
            if msr.is_null() {
                return Err(efault("pmc_get_msr: the msr pointer"));
            }
            put(msr, api::get_msr(pmcid)?, "pmc_get_msr: the msr pointer")
        })())
    })
}

/// pmc_cpuinfo(3): a pointer to the library's own description.
#[unsafe(no_mangle)]
pub extern "C" fn pmc_cpuinfo(cpu_info: *mut *const pmc_cpuinfo) -> c_int {
    guard("pmc_cpuinfo", -1, || {
        status((|| {
            if cpu_info.is_null() {
                return Err(efault("pmc_cpuinfo: the cpu_info pointer"));
            }
            let info: *const pmc_cpuinfo = api::cpuinfo()?;
            put(cpu_info, info, "pmc_cpuinfo: the cpu_info pointer")
        })())
    })
}

/// pmc_ncpu(3)
#[unsafe(no_mangle)]
pub extern "C" fn pmc_ncpu() -> c_int {
    guard("pmc_ncpu", -1, || match api::ncpu() {
        Ok(n) => c_int::try_from(n).unwrap_or(c_int::MAX),
        Err(f) => {
            fail(f);
            -1
        }
    })
}

/// pmc_npmc(3)
#[unsafe(no_mangle)]
pub extern "C" fn pmc_npmc(cpu: c_int) -> c_int {
    guard("pmc_npmc", -1, || match api::npmc(cpu) {
        Ok(n) => c_int::try_from(n).unwrap_or(c_int::MAX),
        Err(f) => {
            fail(f);
            -1
        }
    })
}

/// pmc_pmcinfo(3): a malloc'ed `struct pmc_pmcinfo` the caller frees.
#[unsafe(no_mangle)]
pub extern "C" fn pmc_pmcinfo(cpu: c_int, pmc_info_out: *mut *mut pmc_pmcinfo) -> c_int {
    guard("pmc_pmcinfo", -1, || {
        status((|| {
            if pmc_info_out.is_null() || !pmc_info_out.is_aligned() {
                return Err(efault("pmc_pmcinfo: the pmc_info pointer"));
            }
            let rows = api::pmcinfo(cpu)?;
            let head = pmc_pmcinfo {
                pm_cpu: cpu,
                _pad0: 0,
                pm_pmcs: [],
            };
            let p = malloc_flex::<_, pmc_info>(
                head,
                std::mem::offset_of!(pmc_pmcinfo, pm_pmcs),
                &rows,
            )?;
            put(pmc_info_out, p, "pmc_pmcinfo: the pmc_info pointer")
        })())
    })
}

/// pmc_get_driver_stats(3)
#[unsafe(no_mangle)]
pub extern "C" fn pmc_get_driver_stats(gms: *mut pmc_driverstats) -> c_int {
    guard("pmc_get_driver_stats", -1, || {
        status(
            api::driver_stats()
                .and_then(|stats| put(gms, stats, "pmc_get_driver_stats: the stats pointer")),
        )
    })
}

/// pmc_enable(3)
#[unsafe(no_mangle)]
pub extern "C" fn pmc_enable(cpu: c_int, pmc: c_int) -> c_int {
    guard("pmc_enable", -1, || {
        status(api::admin("pmc_enable", cpu, pmc))
    })
}

/// pmc_disable(3)
#[unsafe(no_mangle)]
pub extern "C" fn pmc_disable(cpu: c_int, pmc: c_int) -> c_int {
    guard("pmc_disable", -1, || {
        status(api::admin("pmc_disable", cpu, pmc))
    })
}

/// pmc_configure_logfile(3): a negative `fd` deconfigures (hwpmc_mod.c
/// CONFIGURELOG tests `pm_logfd >= 0`, so −2 is −1's case, not EBADF).
#[unsafe(no_mangle)]
pub extern "C" fn pmc_configure_logfile(fd: c_int) -> c_int {
    guard("pmc_configure_logfile", -1, || {
        status((|| {
            api::require_init("pmc_configure_logfile")?;
            let out = if fd < 0 {
                None
            } else {
                Some(log_destination(fd)?)
            };
            api::configure_logfile(out)
        })())
    })
}

/// pmc_flush_logfile(3)
#[unsafe(no_mangle)]
pub extern "C" fn pmc_flush_logfile() -> c_int {
    guard("pmc_flush_logfile", -1, || status(api::flush_logfile()))
}

/// pmc_close_logfile(3)
#[unsafe(no_mangle)]
pub extern "C" fn pmc_close_logfile() -> c_int {
    guard("pmc_close_logfile", -1, || status(api::close_logfile()))
}

/// pmc_writelog(3)
#[unsafe(no_mangle)]
pub extern "C" fn pmc_writelog(udata: u32) -> c_int {
    guard("pmc_writelog", -1, || status(api::writelog(udata)))
}

/// pmc_set_user_stack (extension; see pmc.h)
#[unsafe(no_mangle)]
pub extern "C" fn pmc_set_user_stack(bytes: u32) -> c_int {
    guard("pmc_set_user_stack", -1, || {
        status(api::set_user_stack(bytes))
    })
}

fn name_or_null(r: CResult<&'static CStr>) -> *const c_char {
    match r {
        Ok(s) => s.as_ptr(),
        Err(f) => {
            fail(f);
            std::ptr::null()
        }
    }
}

/// pmc_name_of_capability(3)
#[unsafe(no_mangle)]
pub extern "C" fn pmc_name_of_capability(c: u32) -> *const c_char {
    guard("pmc_name_of_capability", std::ptr::null(), || {
        name_or_null(names::capability(c))
    })
}

/// pmc_name_of_class(3)
#[unsafe(no_mangle)]
pub extern "C" fn pmc_name_of_class(c: u32) -> *const c_char {
    guard("pmc_name_of_class", std::ptr::null(), || {
        name_or_null(names::class(c))
    })
}

/// pmc_name_of_cputype(3)
#[unsafe(no_mangle)]
pub extern "C" fn pmc_name_of_cputype(c: u32) -> *const c_char {
    guard("pmc_name_of_cputype", std::ptr::null(), || {
        name_or_null(names::cputype(c))
    })
}

/// pmc_name_of_disposition(3)
#[unsafe(no_mangle)]
pub extern "C" fn pmc_name_of_disposition(d: u32) -> *const c_char {
    guard("pmc_name_of_disposition", std::ptr::null(), || {
        name_or_null(names::disposition(d))
    })
}

/// pmc_name_of_event(3)
#[unsafe(no_mangle)]
pub extern "C" fn pmc_name_of_event(e: u32) -> *const c_char {
    guard("pmc_name_of_event", std::ptr::null(), || {
        name_or_null(names::event(e))
    })
}

/// pmc_name_of_mode(3)
#[unsafe(no_mangle)]
pub extern "C" fn pmc_name_of_mode(m: u32) -> *const c_char {
    guard("pmc_name_of_mode", std::ptr::null(), || {
        name_or_null(names::mode(m))
    })
}

/// pmc_name_of_state(3)
#[unsafe(no_mangle)]
pub extern "C" fn pmc_name_of_state(s: u32) -> *const c_char {
    guard("pmc_name_of_state", std::ptr::null(), || {
        name_or_null(names::state(s))
    })
}

/// pmc_event_names_of_class(3): a malloc'ed array of static strings; the
/// caller frees the array only.
#[unsafe(no_mangle)]
pub extern "C" fn pmc_event_names_of_class(
    class: u32,
    eventnames: *mut *mut *const c_char,
    nevents: *mut c_int,
) -> c_int {
    guard("pmc_event_names_of_class", -1, || {
        status((|| {
            if eventnames.is_null() || !eventnames.is_aligned() {
                return Err(efault("pmc_event_names_of_class: the eventnames pointer"));
            }
            if nevents.is_null() || !nevents.is_aligned() {
                return Err(efault("pmc_event_names_of_class: the nevents pointer"));
            }
            let list = api::event_names_of_class(class)?;
            let ptrs: Vec<*const c_char> = list.iter().map(|s| s.as_ptr()).collect();
            let array = malloc_flex((), 0, &ptrs)?.cast::<*const c_char>();
            put(
                eventnames,
                array,
                "pmc_event_names_of_class: the eventnames pointer",
            )?;
            put(
                nevents,
                c_int::try_from(list.len()).unwrap_or(c_int::MAX),
                "pmc_event_names_of_class: the nevents pointer",
            )
        })())
    })
}

/// What `pmc_last_error` returns if it cannot reach the message.
const LAST_ERROR_LOST: &CStr = c"libpmc: the last error message is unavailable";

/// Linux extension: the calling thread's last failure message.
#[unsafe(no_mangle)]
pub extern "C" fn pmc_last_error() -> *const c_char {
    guard("pmc_last_error", LAST_ERROR_LOST.as_ptr(), || {
        // The CString stays in the thread-local until the thread's next
        // failure, which the header documents.
        LAST_ERROR.with(|l| l.borrow().as_ptr())
    })
}
