//! The independent look at whether perf_event can be used at all, made
//! once by the automatic backend choice (`crate::global::select`).

use pmc_linux::attr::{Attr, EventConfig, Software};
use pmc_linux::event::{Event, OpenFlags, Target};

/// Opens (disabled) and closes the software `task-clock` of the calling
/// thread, user space only: what every unprivileged caller may open at
/// perf_event_paranoid ≤ 2. `Err(errno)` when the kernel refused.
pub(crate) fn perf_event_trial() -> std::result::Result<(), i32> {
    let attr = Attr::new(EventConfig::Software(Software::TaskClock))
        .disabled(true)
        .exclude_kernel(true)
        .exclude_hv(true);
    Event::open(&attr, Target::CALLER, None, OpenFlags::empty())
        .map(drop)
        .map_err(|e| e.errno())
}

/// `kernel.perf_event_paranoid`; `None` when the kernel has no perf_event.
pub(crate) fn paranoid() -> Option<i32> {
    pmc_linux::system::paranoid()
}
