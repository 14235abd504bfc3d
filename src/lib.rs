//! `pmc`: FreeBSD hwpmc/libpmc semantics on top of Linux perf_event.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod error;
pub mod log;
pub mod spec;
mod types;

pub use error::{Error, Result};
pub use types::*;
