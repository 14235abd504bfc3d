//! `pmc-linux`: a complete, safe binding of Linux `perf_event_open(2)`.
//!
//! It is the Linux backend of the `pmc` crate but stands on its own:
//!
//! - [`attr`]: every field of `perf_event_attr`, built safely.
//! - [`event`]: opening events, every ioctl, read formats, group reads.
//! - [`ring`]: the mmap ring buffer: records copied out, wait with timeout.
//! - [`record`]: every `PERF_RECORD_*` and `PERF_SAMPLE_*`, decoded lazily.
//! - [`perf_data`]: the files `perf record` writes (file and pipe mode),
//!   their events, features and records in time order.
//! - [`pmu`], [`tracefs`], [`dynamic_probe`], [`breakpoint`]: sysfs PMUs
//!   and their format fields, tracepoints and their formats, uprobes and
//!   kprobes (dynamic probes), validated hardware breakpoints.
//! - [`selfmon`]: user-space `rdpmc` reads with a calibrated choice.
//! - [`cgroup`]: cgroups as targets of system-wide events (perf's `-G`).
//! - [`system`]: the perf sysctls, capabilities and the procfs task tree.
//! - `pfm` (feature `libpfm`): native event names through libpfm4.
//! - [`error`]: errors that say what failed, the errno, and what to do.
//!
//! `examples/sample_self.rs` samples its own loop through a ring buffer.
//!
//! All `unsafe` code lives in the private `sys` module: the crate denies
//! `unsafe_code` everywhere else. The ring buffer hands out copies of its
//! records, never views of memory the kernel may rewrite.
//!
//! ```no_run
//! use pmc_linux::attr::{Attr, EventConfig, ReadFormat, Software};
//! use pmc_linux::event::{Event, OpenFlags, Target};
//!
//! let attr = Attr::new(EventConfig::Software(Software::TaskClock))
//!     .disabled(true)
//!     .read_format(ReadFormat::TOTAL_TIME_ENABLED | ReadFormat::TOTAL_TIME_RUNNING);
//! let ev = Event::open(&attr, Target::CALLER, None, OpenFlags::empty())?;
//! ev.enable()?;
//! let busy: u64 = (0..1_000_000u64).sum();
//! ev.disable()?;
//! println!("{busy}: {} ns of CPU", ev.read()?.value);
//! # Ok::<(), pmc_linux::Error>(())
//! ```

#![warn(missing_docs)]
#![deny(unsafe_code)]

pub mod attr;
pub mod breakpoint;
pub mod cgroup;
pub mod dynamic_probe;
pub mod error;
pub mod event;
pub mod perf_data;
#[cfg(feature = "libpfm")]
pub mod pfm;
pub mod pmu;
pub mod pmu_events;
pub mod record;
pub mod ring;
pub mod selfmon;
pub mod system;
pub mod tracefs;

// The one place allowed to use `unsafe`; each block carries its SAFETY.
#[allow(unsafe_code)]
mod sys;

pub use error::{Error, Hint};
