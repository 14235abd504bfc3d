//! `libpmc` for C: FreeBSD's pmc(3) and pmclog(3) over the `pmc` crate.
//!
//! `cargo build --release -p hwpmc-capi` gives `target/release/libpmc.so`,
//! `libpmc.a` and `pkgconfig/libpmc.pc`; the headers are `capi/include/pmc.h`
//! and `pmclog.h`. The shim only translates: FreeBSD's rules live in the
//! `pmc` crate, this crate turns ids into [`pmc_core::Pmc`] objects (a
//! thread-safe registry), errors into errno (`Error::errno`) and records
//! into C structs. Raw pointers are touched only in [`sys`], the one module
//! allowed `unsafe`.

#![deny(unsafe_code)]
#![warn(missing_docs)]

pub mod api;
pub mod layout;
pub mod names;
pub mod pmclog;
pub mod pmu;
mod sys;
pub mod types;

/// A failure as C sees it: the errno, and the full message kept for
/// `pmc_last_error()`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// The errno libpmc sets.
    pub errno: i32,
    /// What failed and what to do.
    pub message: String,
}

impl Failure {
    /// A failure decided by the shim itself (bad pointer, unknown id).
    pub fn new(errno: i32, message: impl Into<String>) -> Failure {
        Failure {
            errno,
            message: message.into(),
        }
    }
}

impl From<pmc_core::Error> for Failure {
    fn from(e: pmc_core::Error) -> Failure {
        Failure {
            errno: e.errno().raw(),
            message: e.to_string(),
        }
    }
}

/// The result of a shim call.
pub type CResult<T> = Result<T, Failure>;
