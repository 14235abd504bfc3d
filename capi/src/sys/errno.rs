//! The calling thread's `errno`, set as each C library exposes it: `errno`
//! is a macro over a function returning the thread's slot, and the function
//! is named differently per C library.
//!
//! FreeBSD (sys/sys/errno.h): `int *__error(void);` with
//! `#define errno (* __error())`. On other hosts `--cfg pmc_freebsd_check_sys`
//! compiles this FreeBSD arm (with the prototype declared here, as libc's
//! own binding is FreeBSD-only) so that CI type-checks it (`.ci/run`); such
//! a build is never linked.

use std::ffi::c_int;

cfg_if::cfg_if! {
    if #[cfg(any(target_os = "freebsd", pmc_freebsd_check_sys))] {
        #[cfg(target_os = "freebsd")]
        use libc::__error as location;
        #[cfg(not(target_os = "freebsd"))]
        unsafe extern "C" {
            /// sys/sys/errno.h's `int *__error(void)`.
            #[link_name = "__error"]
            fn location() -> *mut c_int;
        }
    } else if #[cfg(any(target_os = "macos", target_os = "ios"))] {
        use libc::__error as location;
    } else if #[cfg(any(target_os = "linux", target_os = "dragonfly", target_os = "redox"))] {
        use libc::__errno_location as location;
    } else if #[cfg(any(target_os = "android", target_os = "netbsd", target_os = "openbsd"))] {
        use libc::__errno as location;
    } else {
        compile_error!("libpmc: name this target's errno location function in capi/src/sys/errno.rs");
    }
}

/// Sets the calling thread's `errno` to `e`.
pub(super) fn set(e: c_int) {
    // SAFETY: each C library's errno function takes no arguments and
    // returns the calling thread's errno slot, valid and writable for the
    // life of the thread.
    unsafe { *location() = e };
}
