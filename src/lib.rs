#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]
#![warn(missing_docs)]

// The pages of docs/ that README points to: their Rust blocks run as
// doctests, as README's do (the pages are read in the repository, not here).
#[cfg(doctest)]
#[doc = include_str!("../docs/semantics.md")]
mod docs_semantics {}
#[cfg(doctest)]
#[doc = include_str!("../docs/events.md")]
mod docs_events {}
#[cfg(doctest)]
#[doc = include_str!("../docs/profiles.md")]
mod docs_profiles {}
#[cfg(doctest)]
#[doc = include_str!("../docs/c-api.md")]
mod docs_c_api {}
#[cfg(doctest)]
#[doc = include_str!("../docs/backends.md")]
mod docs_backends {}
#[cfg(doctest)]
#[doc = include_str!("../docs/testing.md")]
mod docs_testing {}

pub mod backend;
pub mod error;
pub mod global;
pub mod log;
mod owner;
mod periodic;
mod pmc;
pub mod probe;
pub mod sample;
pub mod spec;
mod types;

pub use error::{EDOOFUS, Errno, Error, Op, Reason, Result};
pub use global::{cpuinfo, event_names_of_class, ncpu, npmc, pmcinfo, process_exists};
pub use owner::{MemoryLog, Owner};
pub use pmc::{
    DEFAULT_RELOAD_COUNT, EventArg, MAX_RELOAD_COUNT, MIN_RELOAD_COUNT, PerCpu, PerCpuBuilder, Pmc,
    PmcBuilder,
};
pub use types::*;

/// Not public API: hooks for this workspace's own tests and benchmarks
/// (the attrs `allocate` would open, against fixture sysfs trees), which
/// may change or go at any time; only with the `test-doubles` feature.
#[cfg(feature = "test-doubles")]
#[doc(hidden)]
pub mod __private_test_hooks {
    #[cfg(all(
        any(target_os = "linux", target_os = "android"),
        not(pmc_force_portable)
    ))]
    pub use crate::backend::linux::test_hooks::*;
}
