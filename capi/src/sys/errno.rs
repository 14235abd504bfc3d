//! The calling thread's `errno`, set as each C library exposes it: `errno`
//! is a macro over a function returning the thread's slot, and the function
//! is named differently per C library.
//!
//! FreeBSD (sys/sys/errno.h): `int *__error(void);` with
//! `#define errno (* __error())` (`.ci/run` type-checks this arm with
//! `--target x86_64-unknown-freebsd`).

use std::ffi::c_int;

cfg_if::cfg_if! {
    if #[cfg(target_os = "freebsd")] {
        use libc::__error as location;
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
