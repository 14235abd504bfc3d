//! The hot path of a one-fd counting target: enable, disable and read as
//! the binding's inlined system calls.

use std::sync::Arc;

use pmc_linux::event::Event;

use crate::backend::HotHandle;

/// A target that is one plain counting fd, shared with its
/// `ProcessCounters` (see [`Counters::hot`]): each call is the binding's
/// inlined syscall, errors converted out of line.
#[derive(Debug, Clone)]
pub struct HotCounter(pub(super) Arc<[Event]>);

impl HotCounter {
    #[inline]
    fn event(&self) -> &Event {
        // `Counters::hot` hands out only one-event targets.
        &self.0[0]
    }

    // Each call answers only "did it work": on failure `Pmc` takes its
    // general path, which repeats the (idempotent) operation through
    // `Counters` and reports the error in full. Nothing here builds an
    // error on success, so the hot path is the syscall and a compare.
}

impl HotHandle for HotCounter {
    /// Enables; false when the ioctl failed.
    #[inline(always)]
    fn enable(&self) -> bool {
        self.event().enable_errno().is_ok()
    }

    /// Disables (`Pmc::stop`); false when the ioctl failed.
    #[inline(always)]
    fn disable(&self) -> bool {
        self.event().disable_errno().is_ok()
    }

    /// The scaled value; `None` when the read failed or the counter was
    /// enabled but never ran.
    #[inline(always)]
    fn read_scaled(&self) -> Option<u64> {
        self.event().read_timed_errno().ok()?.scaled()
    }
}
