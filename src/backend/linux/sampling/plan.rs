//! What a logging event asks perf for: the sample fields and side-band
//! records of its attr, its ring size, and the siblings that read a
//! counter at each context switch and exit.

use pmc_linux::attr::{Attr, AttrBit, EventConfig, ReadFormat, SampleType, Software};

use super::records::UNWIND_REGS_MASK;
use crate::{Flags, Mode};

/// The siblings that sample a counter's per-thread value, each reading the
/// group (the counter leads it) when it fires:
/// - `switch`: the `context-switches` software event, period 1: fires as a
///   thread is switched out, so consecutive values of one (thread, CPU)
///   differ by that slice's count (hwpmc's PROCCSW);
/// - `exit`: the `sched:sched_process_exit` tracepoint, which fires in the
///   exiting thread before its counters are torn down: its last slice.
///
/// A thread's value is the sum of its slices, a process's the sum of its
/// threads', exact per process even where children inherit the counter.
/// Both fire in the kernel, so they need `perf_event_paranoid` <= 1 (or
/// CAP_PERFMON) even for a user-mode counter.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(in crate::backend::linux) struct SliceSiblings {
    pub(in crate::backend::linux) switch: Attr,
    pub(in crate::backend::linux) exit: Option<Attr>,
}

impl SliceSiblings {
    /// Whether a PMC needs them: hwpmc logs PROCCSW for counting process
    /// PMCs only, and per-process exit values matter once descendants are
    /// followed.
    pub(in crate::backend::linux) fn wanted(mode: Mode, flags: Flags) -> bool {
        mode == Mode::TC
            && (flags.contains(Flags::LOG_PROCCSW)
                || flags.contains(Flags::LOG_PROCEXIT | Flags::DESCENDANTS))
    }

    /// Siblings for `leader` (a logging counter attr); `exit_tracepoint` is
    /// the id of `sched:sched_process_exit` when exit values are wanted.
    pub(in crate::backend::linux) fn new(
        leader: &Attr,
        exit_tracepoint: Option<u64>,
    ) -> SliceSiblings {
        let sibling = |event| {
            Attr::new(event)
                .inherit(leader.is_set(AttrBit::INHERIT))
                .inherit_thread(leader.is_set(AttrBit::INHERIT_THREAD))
                .sample_period(1)
                // The leader's sample_id fields, so every record in the
                // shared ring ends with the same trailer.
                .sample_type(leader.get_sample_type() | SampleType::READ)
                .read_format(ReadFormat::GROUP)
                .set(AttrBit::SAMPLE_ID_ALL, 1)
                .set(AttrBit::USE_CLOCKID, 1)
                .clockid(leader.get_clockid())
        };
        SliceSiblings {
            switch: sibling(EventConfig::Software(Software::ContextSwitches)),
            exit: exit_tracepoint.map(|id| sibling(EventConfig::Tracepoint(id))),
        }
    }

    /// The attrs to open under each counter, in group order.
    pub(in crate::backend::linux) fn attrs(&self) -> impl Iterator<Item = &Attr> {
        std::iter::once(&self.switch).chain(self.exit.as_ref())
    }
}

/// What a logging event needs beyond counting.
#[derive(Clone, Debug)]
pub(in crate::backend::linux) struct LogPlan {
    pub(in crate::backend::linux) flags: Flags,
    pub(in crate::backend::linux) sampling: bool,
    pub(in crate::backend::linux) pages: usize,
}

/// The data pages of a ring when the user set none: 512 KiB (perf's
/// default, within the default `perf_event_mlock_kb` on every CPU), four
/// times that where no mlock limit applies (CAP_IPC_LOCK), and there, for
/// samples that copy `user_stack` bytes of stack, once more up to four
/// times that (8 MiB for 8 KiB stacks): a ring then holds as many samples
/// as without stacks, about 60 ms of a busy CPU at 15 kHz, time for the
/// collector's turn on a loaded machine.
pub(in crate::backend::linux) fn default_ring_pages(user_stack: Option<u32>) -> usize {
    use pmc_linux::system::{CAP_IPC_LOCK, has_capability};
    let pages = crate::backend::source::DEFAULT_BUFFER_PAGES;
    if !has_capability(CAP_IPC_LOCK) {
        return pages;
    }
    let stack_factor = user_stack.map_or(1, |bytes| (bytes as usize / 2048).clamp(1, 4));
    4 * pages * stack_factor.next_power_of_two()
}

/// The sampling/log bits of a logging attr: sample fields, side-band
/// records, the monotonic clock, and for a sampling event its lost count
/// (`PERF_FORMAT_LOST`, dropped at open where the kernel lacks it:
/// [`for_this_kernel`](super::lost::for_this_kernel)).
pub(in crate::backend::linux) fn logging_attr(
    mut a: Attr,
    flags: Flags,
    sampling: bool,
    user_stack: Option<u32>,
) -> Attr {
    let mut t = SampleType::TID | SampleType::TIME | SampleType::CPU | SampleType::ID;
    if sampling {
        t |= SampleType::IP | SampleType::PERIOD;
        a = a.read_format(a.get_read_format() | ReadFormat::LOST);
        if flags.contains(Flags::CALLCHAIN) {
            t |= SampleType::CALLCHAIN;
            if let Some(max) = pmc_linux::system::max_stack() {
                a = a.sample_max_stack(u16::try_from(max).unwrap_or(u16::MAX));
            }
        }
        if let Some(bytes) = user_stack {
            // The unwinder's registers only: each one costs 8 bytes of
            // every sample.
            t |= SampleType::REGS_USER | SampleType::STACK_USER;
            a = a
                .sample_regs_user(UNWIND_REGS_MASK)
                .sample_stack_user(bytes);
        }
    }
    a = a
        .sample_type(t)
        .set(AttrBit::SAMPLE_ID_ALL, 1)
        .set(AttrBit::USE_CLOCKID, 1)
        .clockid(libc::CLOCK_MONOTONIC)
        .set(AttrBit::TASK, 1)
        .set(AttrBit::COMM, 1)
        .set(AttrBit::COMM_EXEC, 1)
        .set(AttrBit::MMAP2, 1)
        .set(AttrBit::MMAP, 1);
    if flags.contains(Flags::LOG_PROCEXIT) {
        a = a.set(AttrBit::INHERIT_STAT, 1);
    }
    a
}
