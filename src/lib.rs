#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod backend;
pub mod error;
pub mod log;
pub mod machine;
mod pmc;
pub mod probe;
pub mod spec;
mod types;

pub use error::{EDOOFUS, Error, Result};
pub use machine::{cpuinfo, event_names_of_class, ncpu, npmc, pmcinfo, process_exists};
pub use pmc::{DEFAULT_RELOAD_COUNT, MIN_RELOAD_COUNT, PerCpu, Pmc};
pub use types::*;
