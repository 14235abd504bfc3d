#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod backend;
pub mod backends;
pub mod error;
mod global;
pub mod log;
pub mod machine;
mod owner;
mod pmc;
pub mod probe;
pub mod sample;
pub mod spec;
mod types;

pub use error::{EDOOFUS, Errno, Error, Op, Result};
pub use machine::{cpuinfo, event_names_of_class, ncpu, npmc, pmcinfo, process_exists};
pub use owner::{MemoryLog, Owner};
pub use pmc::{
    DEFAULT_RELOAD_COUNT, EventArg, MAX_RELOAD_COUNT, MIN_RELOAD_COUNT, PerCpu, PerCpuBuilder, Pmc,
    PmcBuilder,
};
pub use types::*;

/// Not public API: hooks for this workspace's own tests and benchmarks
/// (the attrs `allocate` would open, against fixture sysfs trees), which
/// may change or go at any time.
#[doc(hidden)]
pub mod __private_test_hooks {
    #[cfg(all(
        any(target_os = "linux", target_os = "android"),
        not(pmc_force_portable)
    ))]
    pub use crate::backend::linux::test_hooks::*;
}
