//! The C entry points: the only code here allowed `unsafe`. Each function
//! checks its pointers (NULL or misaligned → EFAULT, as the kernel's
//! copyin/copyout would answer for a bad address), calls the safe
//! implementation in [`crate::api`] / [`crate::pmclog`], and turns the
//! outcome into libpmc's `0` / `-1` + errno. Nothing is ever printed.

#![allow(unsafe_code)]

use std::cell::RefCell;
use std::ffi::{CStr, CString, c_char, c_int, c_void};
use std::fs::File;
use std::os::fd::{FromRawFd, OwnedFd, RawFd};

use crate::types::{
    pmc_cpuinfo, pmc_driverstats, pmc_info, pmc_op_pmcallocate, pmc_pmcinfo, pmclog_ev, state,
};
use crate::{CResult, Failure, api, names, pmclog, pmu};

#[cfg(test)]
mod tests;

thread_local! {
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
}

fn set_errno(e: c_int) {
    // SAFETY: __errno_location returns the calling thread's errno slot,
    // valid for the life of the thread.
    unsafe { *libc::__errno_location() = e };
}

/// Keeps a message for `pmc_last_error`.
fn note(message: &str) {
    LAST_ERROR.with(|l| {
        *l.borrow_mut() = CString::new(message.replace('\0', "")).unwrap_or_default();
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

/// Allocates with the C allocator (the caller `free()`s it, as with
/// libpmc) and copies `bytes` in.
fn malloc_copy(bytes: &[u8]) -> CResult<*mut u8> {
    // SAFETY: malloc has no preconditions; a size of 0 is raised to 1.
    let p = unsafe { libc::malloc(bytes.len().max(1)) }.cast::<u8>();
    if p.is_null() {
        return Err(Failure::new(libc::ENOMEM, "out of memory (ENOMEM)"));
    }
    // SAFETY: p has room for bytes.len() bytes and does not overlap bytes.
    unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), p, bytes.len()) };
    Ok(p)
}

/// The bytes of a `#[repr(C)]` plain-data value.
fn bytes_of<T: Copy>(v: &T) -> &[u8] {
    // SAFETY: T is Copy plain data with no interior pointers we rely on;
    // reading its size_of bytes is in bounds.
    unsafe { std::slice::from_raw_parts((v as *const T).cast::<u8>(), size_of::<T>()) }
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
    status(api::init())
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
    status((|| {
        let spec = c_str(ctrspec, "pmc_allocate: the event specifier")?;
        if pmcid.is_null() || !pmcid.is_aligned() {
            return Err(efault("pmc_allocate: the pmcid pointer"));
        }
        let id = api::allocate(spec, mode, flags, cpu, count)?;
        put(pmcid, id, "pmc_allocate: the pmcid pointer")
    })())
}

/// pmc_attach(3)
#[unsafe(no_mangle)]
pub extern "C" fn pmc_attach(pmcid: u32, pid: libc::pid_t) -> c_int {
    status(api::attach(pmcid, pid))
}

/// pmc_detach(3)
#[unsafe(no_mangle)]
pub extern "C" fn pmc_detach(pmcid: u32, pid: libc::pid_t) -> c_int {
    status(api::detach(pmcid, pid))
}

/// pmc_release(3)
#[unsafe(no_mangle)]
pub extern "C" fn pmc_release(pmcid: u32) -> c_int {
    status(api::release(pmcid))
}

/// pmc_start(3)
#[unsafe(no_mangle)]
pub extern "C" fn pmc_start(pmcid: u32) -> c_int {
    status(api::start(pmcid))
}

/// pmc_stop(3)
#[unsafe(no_mangle)]
pub extern "C" fn pmc_stop(pmcid: u32) -> c_int {
    status(api::stop(pmcid))
}

/// pmc_read(3)
#[unsafe(no_mangle)]
pub extern "C" fn pmc_read(pmcid: u32, value: *mut u64) -> c_int {
    status((|| {
        if value.is_null() || !value.is_aligned() {
            return Err(efault("pmc_read: the value pointer"));
        }
        put(value, api::read(pmcid)?, "pmc_read: the value pointer")
    })())
}

/// pmc_write(3)
#[unsafe(no_mangle)]
pub extern "C" fn pmc_write(pmcid: u32, value: u64) -> c_int {
    status(api::write(pmcid, value))
}

/// pmc_rw(3); `oldvalue` may be NULL.
#[unsafe(no_mangle)]
pub extern "C" fn pmc_rw(pmcid: u32, newvalue: u64, oldvalue: *mut u64) -> c_int {
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
}

/// pmc_set(3)
#[unsafe(no_mangle)]
pub extern "C" fn pmc_set(pmcid: u32, value: u64) -> c_int {
    status(api::set(pmcid, value))
}

/// pmc_capabilities(3)
#[unsafe(no_mangle)]
pub extern "C" fn pmc_capabilities(pmcid: u32, caps: *mut u32) -> c_int {
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
}

/// pmc_width(3)
#[unsafe(no_mangle)]
pub extern "C" fn pmc_width(pmcid: u32, width: *mut u32) -> c_int {
    status((|| {
        if width.is_null() {
            return Err(efault("pmc_width: the width pointer"));
        }
        put(width, api::width(pmcid)?, "pmc_width: the width pointer")
    })())
}

/// pmc_get_msr(3)
#[unsafe(no_mangle)]
pub extern "C" fn pmc_get_msr(pmcid: u32, msr: *mut u32) -> c_int {
    status((|| {
        if msr.is_null() {
            return Err(efault("pmc_get_msr: the msr pointer"));
        }
        put(msr, api::get_msr(pmcid)?, "pmc_get_msr: the msr pointer")
    })())
}

/// pmc_cpuinfo(3): a pointer to the library's own description.
#[unsafe(no_mangle)]
pub extern "C" fn pmc_cpuinfo(cpu_info: *mut *const pmc_cpuinfo) -> c_int {
    status((|| {
        if cpu_info.is_null() {
            return Err(efault("pmc_cpuinfo: the cpu_info pointer"));
        }
        let info: *const pmc_cpuinfo = api::cpuinfo()?;
        put(cpu_info, info, "pmc_cpuinfo: the cpu_info pointer")
    })())
}

/// pmc_ncpu(3)
#[unsafe(no_mangle)]
pub extern "C" fn pmc_ncpu() -> c_int {
    match api::ncpu() {
        Ok(n) => c_int::try_from(n).unwrap_or(c_int::MAX),
        Err(f) => {
            fail(f);
            -1
        }
    }
}

/// pmc_npmc(3)
#[unsafe(no_mangle)]
pub extern "C" fn pmc_npmc(cpu: c_int) -> c_int {
    match api::npmc(cpu) {
        Ok(n) => c_int::try_from(n).unwrap_or(c_int::MAX),
        Err(f) => {
            fail(f);
            -1
        }
    }
}

/// pmc_pmcinfo(3): a malloc'ed `struct pmc_pmcinfo` the caller frees.
#[unsafe(no_mangle)]
pub extern "C" fn pmc_pmcinfo(cpu: c_int, pmc_info_out: *mut *mut pmc_pmcinfo) -> c_int {
    status((|| {
        if pmc_info_out.is_null() || !pmc_info_out.is_aligned() {
            return Err(efault("pmc_pmcinfo: the pmc_info pointer"));
        }
        let rows = api::pmcinfo(cpu)?;
        let head = pmc_pmcinfo {
            pm_cpu: cpu,
            pm_pmcs: [],
        };
        let mut bytes = bytes_of(&head).to_vec();
        for r in &rows {
            bytes.extend_from_slice(bytes_of::<pmc_info>(r));
        }
        let p = malloc_copy(&bytes)?.cast::<pmc_pmcinfo>();
        put(pmc_info_out, p, "pmc_pmcinfo: the pmc_info pointer")
    })())
}

/// pmc_get_driver_stats(3)
#[unsafe(no_mangle)]
pub extern "C" fn pmc_get_driver_stats(gms: *mut pmc_driverstats) -> c_int {
    status(put(
        gms,
        api::driver_stats(),
        "pmc_get_driver_stats: the stats pointer",
    ))
}

/// pmc_enable(3)
#[unsafe(no_mangle)]
pub extern "C" fn pmc_enable(cpu: c_int, pmc: c_int) -> c_int {
    status(api::admin("pmc_enable", cpu, pmc))
}

/// pmc_disable(3)
#[unsafe(no_mangle)]
pub extern "C" fn pmc_disable(cpu: c_int, pmc: c_int) -> c_int {
    status(api::admin("pmc_disable", cpu, pmc))
}

/// pmc_configure_logfile(3): a negative `fd` deconfigures (hwpmc_mod.c
/// CONFIGURELOG tests `pm_logfd >= 0`, so −2 is −1's case, not EBADF).
#[unsafe(no_mangle)]
pub extern "C" fn pmc_configure_logfile(fd: c_int) -> c_int {
    status((|| {
        let out = if fd < 0 {
            None
        } else {
            Some(log_destination(fd)?)
        };
        api::configure_logfile(out)
    })())
}

/// pmc_flush_logfile(3)
#[unsafe(no_mangle)]
pub extern "C" fn pmc_flush_logfile() -> c_int {
    status(api::flush_logfile())
}

/// pmc_close_logfile(3)
#[unsafe(no_mangle)]
pub extern "C" fn pmc_close_logfile() -> c_int {
    status(api::close_logfile())
}

/// pmc_writelog(3)
#[unsafe(no_mangle)]
pub extern "C" fn pmc_writelog(udata: u32) -> c_int {
    status(api::writelog(udata))
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
    name_or_null(names::capability(c))
}

/// pmc_name_of_class(3)
#[unsafe(no_mangle)]
pub extern "C" fn pmc_name_of_class(c: u32) -> *const c_char {
    name_or_null(names::class(c))
}

/// pmc_name_of_cputype(3)
#[unsafe(no_mangle)]
pub extern "C" fn pmc_name_of_cputype(c: u32) -> *const c_char {
    name_or_null(names::cputype(c))
}

/// pmc_name_of_disposition(3)
#[unsafe(no_mangle)]
pub extern "C" fn pmc_name_of_disposition(d: u32) -> *const c_char {
    name_or_null(names::disposition(d))
}

/// pmc_name_of_event(3)
#[unsafe(no_mangle)]
pub extern "C" fn pmc_name_of_event(e: u32) -> *const c_char {
    name_or_null(names::event(e))
}

/// pmc_name_of_mode(3)
#[unsafe(no_mangle)]
pub extern "C" fn pmc_name_of_mode(m: u32) -> *const c_char {
    name_or_null(names::mode(m))
}

/// pmc_name_of_state(3)
#[unsafe(no_mangle)]
pub extern "C" fn pmc_name_of_state(s: u32) -> *const c_char {
    name_or_null(names::state(s))
}

/// pmc_event_names_of_class(3): a malloc'ed array of static strings; the
/// caller frees the array only.
#[unsafe(no_mangle)]
pub extern "C" fn pmc_event_names_of_class(
    class: u32,
    eventnames: *mut *mut *const c_char,
    nevents: *mut c_int,
) -> c_int {
    status((|| {
        if eventnames.is_null() || !eventnames.is_aligned() {
            return Err(efault("pmc_event_names_of_class: the eventnames pointer"));
        }
        if nevents.is_null() || !nevents.is_aligned() {
            return Err(efault("pmc_event_names_of_class: the nevents pointer"));
        }
        let list = api::event_names_of_class(class)?;
        let ptrs: Vec<usize> = list.iter().map(|s| s.as_ptr() as usize).collect();
        let bytes: Vec<u8> = ptrs.iter().flat_map(|p| p.to_ne_bytes()).collect();
        let array = malloc_copy(&bytes)?.cast::<*const c_char>();
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
}

/// Linux extension: the calling thread's last failure message.
#[unsafe(no_mangle)]
pub extern "C" fn pmc_last_error() -> *const c_char {
    // The CString stays in the thread-local until the thread's next
    // failure, which the header documents.
    LAST_ERROR.with(|l| l.borrow().as_ptr())
}

// ---- lib/libpmc/libpmc_pmu_util.c ----

/// Writes `text` to C's `stdout`, as libpmc's printf does, so that it
/// interleaves with the caller's own stdio output in order.
fn print_c(text: &str) {
    if text.is_empty() {
        return;
    }
    let c = CString::new(text.replace('\0', "")).unwrap_or_default();
    // SAFETY: a "%s" format with one valid NUL-terminated string argument.
    unsafe { libc::printf(c"%s".as_ptr(), c.as_ptr()) };
}

/// A C string argument that may be NULL (libpmc's filters and cpuids).
fn opt_c_str<'a>(p: *const c_char) -> Option<&'a str> {
    if p.is_null() {
        return None;
    }
    // SAFETY: non-NULL; the caller passes a NUL-terminated string that
    // outlives this call.
    unsafe { CStr::from_ptr(p) }.to_str().ok()
}

/// pmc_pmu_enabled(3): 1 where this machine's core PMU has events.
#[unsafe(no_mangle)]
pub extern "C" fn pmc_pmu_enabled() -> c_int {
    c_int::from(pmu::enabled())
}

/// pmc_pmu_print_counters: `"\t%s\n"` per event whose name contains
/// `event_name` (any case); NULL lists all.
#[unsafe(no_mangle)]
pub extern "C" fn pmc_pmu_print_counters(event_name: *const c_char) {
    print_c(&pmu::counters_text(&pmu::host(), opt_c_str(event_name)));
}

/// pmc_pmu_print_counter_desc: descriptions, which our tables lack.
#[unsafe(no_mangle)]
pub extern "C" fn pmc_pmu_print_counter_desc(event_name: *const c_char) {
    print_c(&pmu::desc_text(&pmu::host(), opt_c_str(event_name)));
}

/// pmc_pmu_print_counter_desc_long: as pmc_pmu_print_counter_desc.
#[unsafe(no_mangle)]
pub extern "C" fn pmc_pmu_print_counter_desc_long(event_name: *const c_char) {
    print_c(&pmu::desc_text(&pmu::host(), opt_c_str(event_name)));
}

/// pmc_pmu_print_counter_full: `name:`, `event:`, `pmu:` lines.
#[unsafe(no_mangle)]
pub extern "C" fn pmc_pmu_print_counter_full(event_name: *const c_char) {
    print_c(&pmu::full_text(&pmu::host(), opt_c_str(event_name)));
}

/// pmc_pmu_sample_rate_get: the event's period, else 65536.
#[unsafe(no_mangle)]
pub extern "C" fn pmc_pmu_sample_rate_get(event_name: *const c_char) -> u64 {
    match opt_c_str(event_name) {
        Some(n) => pmu::host().sample_rate(n),
        None => pmu::DEFAULT_SAMPLE_COUNT,
    }
}

/// pmc_pmu_pmcallocate: 0, or an errno value (not −1 + errno, as libpmc).
#[unsafe(no_mangle)]
pub extern "C" fn pmc_pmu_pmcallocate(
    event_name: *const c_char,
    pm: *mut pmc_op_pmcallocate,
) -> c_int {
    let Some(name) = opt_c_str(event_name) else {
        return libc::EFAULT;
    };
    if pm.is_null() || !pm.is_aligned() {
        return libc::EFAULT;
    }
    // SAFETY: non-NULL and aligned; the caller passes a writable struct
    // pmc_op_pmcallocate, whose fields are plain integers and a union of
    // them (every bit pattern valid).
    let pm = unsafe { &mut *pm };
    pmu::host().pmcallocate(name, pm)
}

/// pmc_pmu_event_get_by_idx: the name at `idx` of `cpuid`'s list (NULL:
/// this machine), or NULL. The string lives as long as the process.
#[unsafe(no_mangle)]
pub extern "C" fn pmc_pmu_event_get_by_idx(cpuid: *const c_char, idx: c_int) -> *const c_char {
    let Some(list) = pmu::for_cpuid(opt_c_str(cpuid)) else {
        return std::ptr::null();
    };
    usize::try_from(idx)
        .ok()
        .and_then(|i| list.events.get(i))
        // The lists are kept in statics: the pointer stays valid.
        .map_or(std::ptr::null(), |e| e.name.as_ptr())
}

/// pmc_pmu_idx_get_by_event: the index of `event` (or of its FreeBSD
/// alias) in `cpuid`'s list, or −1.
#[unsafe(no_mangle)]
pub extern "C" fn pmc_pmu_idx_get_by_event(cpuid: *const c_char, event: *const c_char) -> c_int {
    let (Some(list), Some(event)) = (pmu::for_cpuid(opt_c_str(cpuid)), opt_c_str(event)) else {
        return -1;
    };
    list.find(list.alias(event))
        .and_then(|(i, _)| c_int::try_from(i).ok())
        .unwrap_or(-1)
}

/// The static array `pmc_pmu_stat_mode` hands out.
struct StatModeCounters([*const c_char; 6]);
// SAFETY: the pointers are to 'static C string literals, never written.
unsafe impl Sync for StatModeCounters {}

static STAT_MODE: StatModeCounters = StatModeCounters([
    pmu::STAT_MODE_COUNTERS[0].as_ptr(),
    pmu::STAT_MODE_COUNTERS[1].as_ptr(),
    pmu::STAT_MODE_COUNTERS[2].as_ptr(),
    pmu::STAT_MODE_COUNTERS[3].as_ptr(),
    pmu::STAT_MODE_COUNTERS[4].as_ptr(),
    pmu::STAT_MODE_COUNTERS[5].as_ptr(),
]);

/// pmc_pmu_stat_mode: libpmc's six default counters where the pmu-events
/// table is enabled, else EOPNOTSUPP (an errno value, as libpmc).
#[unsafe(no_mangle)]
pub extern "C" fn pmc_pmu_stat_mode(counters: *mut *const *const c_char) -> c_int {
    if !pmu::enabled() {
        return libc::EOPNOTSUPP;
    }
    match put(counters, STAT_MODE.0.as_ptr(), "pmc_pmu_stat_mode") {
        Ok(()) => 0,
        Err(f) => f.errno,
    }
}

/// The IAP config word of a union filled by `pmc_pmu_pmcallocate`.
#[cfg(test)]
pub(crate) fn iap_config(md: &crate::types::pmc_md_op_pmcallocate) -> u32 {
    // SAFETY: read after PmuList::pmcallocate wrote pm_iap, whose fields
    // are plain integers.
    unsafe { md.pm_iap.pm_iap_config }
}

// ---- pmclog(3) ----

fn cookie_of(p: *mut c_void) -> usize {
    p as usize
}

/// pmclog_open(3): `fd` or `PMCLOG_FD_NONE` (−1) for a memory parser.
#[unsafe(no_mangle)]
pub extern "C" fn pmclog_open(fd: c_int) -> *mut c_void {
    let source = if fd == -1 {
        None
    } else {
        match log_source(fd) {
            Ok(f) => Some(f),
            Err(f) => {
                fail(f);
                return std::ptr::null_mut();
            }
        }
    };
    std::ptr::without_provenance_mut(pmclog::open(source))
}

/// pmclog_feed(3): the bytes are copied.
#[unsafe(no_mangle)]
pub extern "C" fn pmclog_feed(cookie: *mut c_void, data: *mut c_char, len: c_int) -> c_int {
    status((|| {
        let len = usize::try_from(len).map_err(|_| {
            Failure::new(
                libc::EINVAL,
                format!("pmclog_feed: length {len} is negative (EINVAL)"),
            )
        })?;
        let bytes: &[u8] = if len == 0 {
            &[]
        } else if data.is_null() {
            return Err(efault("pmclog_feed: the data pointer"));
        } else {
            // SAFETY: non-NULL; the caller passes len readable bytes that
            // stay valid for this call (they are copied).
            unsafe { std::slice::from_raw_parts(data.cast::<u8>(), len) }
        };
        pmclog::feed(cookie_of(cookie), bytes)
    })())
}

/// pmclog_read(3): 0 with `pl_state` PMCLOG_OK, else −1 with the state.
#[unsafe(no_mangle)]
pub extern "C" fn pmclog_read(cookie: *mut c_void, ev: *mut pmclog_ev) -> c_int {
    if ev.is_null() || !ev.is_aligned() {
        fail(efault("pmclog_read: the event pointer"));
        return -1;
    }
    let out = match pmclog::read(cookie_of(cookie)) {
        Ok((e, why)) => {
            if let Some(why) = why {
                note(&why);
            }
            e
        }
        Err(f) => {
            fail(f);
            pmclog_ev::with_state(state::ERROR)
        }
    };
    let ok = out.pl_state == state::OK;
    // SAFETY: ev is non-NULL and aligned, and the caller passes a writable
    // struct pmclog_ev.
    unsafe { ev.write(out) };
    if ok { 0 } else { -1 }
}

/// pmclog_close(3); an unknown cookie is ignored.
#[unsafe(no_mangle)]
pub extern "C" fn pmclog_close(cookie: *mut c_void) {
    pmclog::close(cookie_of(cookie));
}
