//! The C entry points of pmclog(3), each in [`guard`].

use std::ffi::{c_char, c_int, c_void};

use super::{efault, fail, guard, log_source, note, status};
use crate::Failure;
use crate::pmclog;
use crate::types::{pmclog_ev, state};

fn cookie_of(p: *mut c_void) -> usize {
    p as usize
}

/// pmclog_open(3): `fd` or `PMCLOG_FD_NONE` (−1) for a memory parser.
#[unsafe(no_mangle)]
pub extern "C" fn pmclog_open(fd: c_int) -> *mut c_void {
    guard("pmclog_open", std::ptr::null_mut(), || {
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
    })
}

/// pmclog_feed(3): the bytes are copied.
#[unsafe(no_mangle)]
pub extern "C" fn pmclog_feed(cookie: *mut c_void, data: *mut c_char, len: c_int) -> c_int {
    guard("pmclog_feed", -1, || {
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
    })
}

/// pmclog_read(3): 0 with `pl_state` PMCLOG_OK, else −1 with the state
/// (PMCLOG_ERROR after a panic too: the guard wraps the read, and the
/// event is written after it either way).
#[unsafe(no_mangle)]
pub extern "C" fn pmclog_read(cookie: *mut c_void, ev: *mut pmclog_ev) -> c_int {
    if ev.is_null() || !ev.is_aligned() {
        fail(efault("pmclog_read: the event pointer"));
        return -1;
    }
    let write = |out: pmclog_ev| {
        let ok = out.pl_state == state::OK;
        // SAFETY: ev is non-NULL and aligned, and the caller passes a
        // writable struct pmclog_ev.
        unsafe { ev.write(out) };
        if ok { 0 } else { -1 }
    };
    let out = guard("pmclog_read", None, || {
        Some(match pmclog::read(cookie_of(cookie)) {
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
        })
    });
    write(out.unwrap_or_else(|| pmclog_ev::with_state(state::ERROR)))
}

/// pmclog_close(3); an unknown cookie is ignored.
#[unsafe(no_mangle)]
pub extern "C" fn pmclog_close(cookie: *mut c_void) {
    guard("pmclog_close", (), || {
        pmclog::close(cookie_of(cookie));
    })
}
