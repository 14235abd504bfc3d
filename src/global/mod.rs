//! The process-wide defaults, as libpmc has them: the process's
//! [`Owner`] ([`Owner::global`]), the backend it counts on ([`select`],
//! [`active`]), its log ([`log`]), the machine queries (`pmc_cpuinfo`,
//! `pmc_ncpu`, …, also at the crate root) and this machine's identity for
//! a log's INITIALIZE ([`this_machine`]).
//!
//! This is the top of the crate: everything below it takes its backend
//! or owner as an argument, so only the code here (and the probe) fixes
//! the process's choice of backend.

mod allocate;
pub mod log;
mod machine;
mod select;

use std::sync::OnceLock;

use crate::Owner;
use crate::backend::Backend;
use crate::log::cpu::CpuIdentity;

pub use crate::backend::kind::compiled_backends;
pub use machine::{
    cpuinfo, event_names_of_class, libpmc_event_names, ncpu, npmc, online_cpus, pmcinfo,
    process_exists,
};
pub(crate) use select::default_backend;
pub use select::{BackendChoice, active, select};

/// This machine's identity as the selected backend tells it
/// ([`Backend::selected`]), for a log's INITIALIZE
/// ([`LogWriter::new`](crate::log::LogWriter::new));
/// [`PMC_CPU_GENERIC`](crate::log::cpu::PMC_CPU_GENERIC) and an empty
/// cpuid when unknown.
pub fn this_machine() -> CpuIdentity {
    default_backend().cpu_identity()
}

impl Owner {
    /// The process's owner, as FreeBSD has one per process: what
    /// [`Pmc::allocate`](crate::Pmc::allocate), [`log`] and the C API
    /// use. Created at the first use, on [`Backend::selected`].
    pub fn global() -> &'static Owner {
        static GLOBAL: OnceLock<Owner> = OnceLock::new();
        GLOBAL.get_or_init(|| Owner::new(Backend::selected()))
    }
}
