//! Neutral backend events: what a platform observes while its PMCs run,
//! in its own terms but without its record format. Backends emit them;
//! `crate::owner::translate` applies hwpmc's logging rules (PROCCSW deltas,
//! PROCEXIT sums, USERCALLCHAIN, SYSEXIT vs THR_EXIT) and turns them into
//! pmclog records, so a second backend does not repeat those rules.

/// A sampled call chain, split by the mode each frame ran in.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Callchain {
    /// Kernel frames, innermost first.
    pub kernel: Vec<u64>,
    /// User frames, innermost first (for a kernel-mode sample, the user
    /// stack the kernel was entered from, where the platform captured it).
    pub user: Vec<u64>,
}

/// One thing a backend observed, stamped by the caller with its time (the
/// log's clock) as `(time, BackendEvent)`.
// Made by the Linux backend (the portable backend does not sample; the
// FreeBSD one hands over hwpmc's own records, `Logged`) and tests.
#[cfg_attr(
    not(any(
        test,
        all(
            any(target_os = "linux", target_os = "android"),
            not(pmc_force_portable)
        )
    )),
    allow(dead_code)
)]
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BackendEvent {
    /// A sample of a sampling PMC.
    Sample {
        /// The sampled process.
        pid: u32,
        /// The sampled thread.
        tid: u32,
        /// The CPU it ran on.
        cpu: u32,
        /// Whether the sample interrupted user mode.
        user: bool,
        /// The interrupted program counter.
        pc: u64,
        /// The call chain, when the PMC asked for one.
        callchain: Option<Callchain>,
        /// The user registers and stack copy, when the PMC asked for them
        /// and the sample interrupted user code (the owner unwinds them
        /// into `callchain.user` as it writes the log).
        user_stack: Option<crate::sample::UserStack>,
    },
    /// An executable file mapping of a process (`pid` `u32::MAX`: the
    /// kernel's).
    Mapping {
        /// The process.
        pid: u32,
        /// The start address of its first executable mapping (hwpmc logs
        /// `entry->start`; see [`crate::log`] on MAP_IN).
        start: u64,
        /// Its length in bytes (0: unknown).
        len: u64,
        /// The file offset mapped at `start`.
        pgoff: u64,
        /// The file.
        path: String,
    },
    /// A process replaced its image.
    Exec {
        /// The process.
        pid: u32,
        /// The new executable.
        path: String,
        /// Where its run-time linker is loaded (AT_BASE; the program's
        /// own load base when it has none): FreeBSD 14's `pl_base`.
        base: u64,
        /// Its load base when position-independent, else 0: `pl_dyn`.
        dynaddr: u64,
    },
    /// A new process.
    Fork {
        /// The parent.
        parent: u32,
        /// The child.
        child: u32,
    },
    /// A new thread in a process.
    ThreadCreate {
        /// The process.
        pid: u32,
        /// The new thread.
        tid: u32,
    },
    /// A thread other than a process's last ended.
    ThreadExit {
        /// Its process.
        pid: u32,
        /// The thread.
        tid: u32,
    },
    /// A process ended.
    ProcessExit {
        /// The process.
        pid: u32,
        /// The counter's final value for the process where the backend
        /// reads it directly (the attached process's own counters); `None`
        /// where it comes from [`BackendEvent::Slice`]s or
        /// [`BackendEvent::ExitValue`]s instead.
        value: Option<u64>,
    },
    /// Part of a process's counted value as (one of) its thread(s) exited,
    /// reported apart from the exit itself; summed into its PROCEXIT.
    ExitValue {
        /// The process.
        pid: u32,
        /// The value.
        value: u64,
    },
    /// A thread was switched out (or exited) on a CPU: the counter's total
    /// for that (thread, CPU) so far. Consecutive totals of one (thread,
    /// CPU) differ by that time slice's count.
    Slice {
        /// The process.
        pid: u32,
        /// The thread.
        tid: u32,
        /// The CPU.
        cpu: u32,
        /// The counter's total on (tid, cpu) at the end of the slice.
        total: u64,
    },
    /// Records the platform lost (a full buffer).
    Lost {
        /// How many.
        count: u64,
    },
    /// A record the platform's kernel already wrote by hwpmc's logging
    /// rules: FreeBSD's hwpmc applies them itself (PROCCSW's slice value,
    /// PROCEXIT's `pp_pmcval`, USERCALLCHAIN's merged chain, the mappings
    /// at attach) and writes pmclog records, which the FreeBSD backend
    /// reads from hwpmc's log. Logged as it is (with the PMC's id in place
    /// of hwpmc's): re-deriving it would need what the record no longer
    /// holds (a PROCCSW has no CPU, a merged chain no kernel/user split).
    Logged(crate::log::LogRecord),
}
