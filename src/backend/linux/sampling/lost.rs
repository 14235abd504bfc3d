//! Exact DROPNOTIFY counts: the kernel's `PERF_RECORD_LOST` records
//! reconciled with each event's `PERF_FORMAT_LOST` count.
//!
//! The kernel counts a record that does not fit in a ring twice: in the
//! ring (`rb->lost`, reported by a LOST record written before the next
//! record that fits, so the losses at the end of a burst can stay
//! unreported) and in the event (`lost_samples`, which `read(2)` returns
//! with `PERF_FORMAT_LOST`, Linux 6.0+). ring_buffer.c
//! `__perf_output_begin` charges an inherited event's loss to its parent
//! (`event = event->parent` before `atomic64_inc(&event->lost_samples)`),
//! so the sum over the events routed into a ring is every loss of that ring.
//!
//! Per ring, [`LostAccount`] reports the LOST records as they come and, at
//! a final drain, whatever the events' counts add beyond what was reported;
//! a LOST record that arrives later for losses already reported adds
//! nothing. What is reported is the running maximum of two lower bounds of
//! the same total, so it is never more than the kernel lost and, after a
//! final drain, exactly that.

use std::sync::{Arc, OnceLock};

use pmc_linux::attr::{Attr, EventConfig, ReadFormat, Software};
use pmc_linux::event::{Event, OpenFlags, Target};

/// The losses of one ring, as reported so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct LostAccount {
    /// The sum of the ring's LOST records.
    records: u64,
    /// The sum of what was reported (DROPNOTIFY counts).
    reported: u64,
}

impl LostAccount {
    /// A LOST record of `count`: what to report now (0: nothing new, the
    /// losses were reported by an earlier reconciliation).
    pub(super) fn record(&mut self, count: u64) -> u64 {
        self.records = self.records.saturating_add(count);
        self.report_up_to(self.records)
    }

    /// The ring's events' `PERF_FORMAT_LOST` total: what to report now
    /// beyond the records and earlier reconciliations.
    pub(super) fn reconcile(&mut self, kernel_total: u64) -> u64 {
        self.report_up_to(kernel_total)
    }

    fn report_up_to(&mut self, total: u64) -> u64 {
        let new = total.saturating_sub(self.reported);
        self.reported = self.reported.max(total);
        new
    }
}

/// The events of a ring set with the ring each writes into, and each
/// ring's account.
#[derive(Debug)]
pub(super) struct RingLosses {
    events: Arc<[Event]>,
    /// `ring_of[i]`: the ring `events[i]` writes into.
    ring_of: Vec<usize>,
    accounts: Vec<LostAccount>,
}

impl RingLosses {
    /// The accounts of `rings` rings fed by `events` (`ring_of[i]` the ring
    /// of `events[i]`); `None` when the events were opened without
    /// `PERF_FORMAT_LOST` (a kernel before 6.0): the LOST records are
    /// then all there is.
    pub(super) fn new(
        events: Arc<[Event]>,
        ring_of: Vec<usize>,
        rings: usize,
    ) -> Option<RingLosses> {
        events
            .first()?
            .read_format()
            .contains(ReadFormat::LOST)
            .then(|| RingLosses {
                events,
                ring_of,
                accounts: vec![LostAccount::default(); rings],
            })
    }

    /// A LOST record read from `ring`: what to report now.
    pub(super) fn record(&mut self, ring: usize, count: u64) -> u64 {
        match self.accounts.get_mut(ring) {
            Some(a) => a.record(count),
            None => count,
        }
    }

    /// Reads every event's lost count and returns what to report beyond
    /// what was (call after the rings were drained). An event that cannot
    /// be read leaves its ring's total low, which only delays a report.
    pub(super) fn reconcile(&mut self) -> u64 {
        let mut totals = vec![None; self.accounts.len()];
        for (event, &ring) in self.events.iter().zip(&self.ring_of) {
            if let (Some(total), Some(lost)) =
                (totals.get_mut(ring), event.read().ok().and_then(|c| c.lost))
            {
                let t: &mut u64 = Option::get_or_insert(total, 0);
                *t = t.saturating_add(lost);
            }
        }
        reconcile_totals(&mut self.accounts, &totals)
    }
}

/// Reconciles each ring's account with its kernel total (`None`: unknown)
/// and returns the sum to report.
fn reconcile_totals(accounts: &mut [LostAccount], totals: &[Option<u64>]) -> u64 {
    accounts
        .iter_mut()
        .zip(totals)
        .filter_map(|(a, t)| t.map(|t| a.reconcile(t)))
        .fold(0, u64::saturating_add)
}

/// `attr` as this kernel accepts it: without `PERF_FORMAT_LOST` where the
/// kernel predates it (before 6.0 an unknown read_format bit is EINVAL).
pub(in crate::backend::linux) fn for_this_kernel(attr: &Attr) -> Attr {
    let format = attr.get_read_format();
    if !format.contains(ReadFormat::LOST) || lost_format_supported() {
        return *attr;
    }
    attr.read_format(format - ReadFormat::LOST)
}

/// Whether the kernel accepts `PERF_FORMAT_LOST`, found once by opening a
/// user-only dummy software event on the calling thread with and, if that
/// fails, without it.
fn lost_format_supported() -> bool {
    static SUPPORTED: OnceLock<bool> = OnceLock::new();
    *SUPPORTED.get_or_init(|| {
        let open = |format: ReadFormat| {
            let attr = Attr::new(EventConfig::Software(Software::Dummy))
                .disabled(true)
                .exclude_kernel(true)
                .exclude_hv(true)
                .read_format(format);
            Event::open(&attr, Target::CALLER, None, OpenFlags::empty())
                .map(drop)
                .map_err(|e| e.errno())
        };
        let with = open(ReadFormat::LOST);
        judge_lost_support(with, || open(ReadFormat::empty()))
    })
}

/// The decision of [`lost_format_supported`] from the trial opens: only
/// EINVAL with the bit while the same open succeeds without it says the
/// bit is unknown. Any other failure keeps the bit (the real open then
/// reports its own error, which is not about the bit).
fn judge_lost_support(
    with_lost: Result<(), i32>,
    without_lost: impl FnOnce() -> Result<(), i32>,
) -> bool {
    match with_lost {
        Err(libc::EINVAL) => without_lost().is_err(),
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A burst whose tail the LOST records miss: the final count reports
    /// the rest, once.
    #[test]
    fn a_larger_final_count_reports_the_unrecorded_rest() {
        let mut a = LostAccount::default();
        assert_eq!(a.record(300), 300);
        assert_eq!(a.record(50), 50);
        assert_eq!(a.reconcile(367), 17);
        // A second final drain (release after stop) adds nothing.
        assert_eq!(a.reconcile(367), 0);
    }

    #[test]
    fn equal_counts_report_nothing_more() {
        let mut a = LostAccount::default();
        assert_eq!(a.record(40), 40);
        assert_eq!(a.reconcile(40), 0);
        // No losses at all.
        assert_eq!(LostAccount::default().reconcile(0), 0);
    }

    /// Stop, start, stop: the LOST record for the first stop's unrecorded
    /// losses arrives after the restart, merged with new losses; only the
    /// new ones are reported again, and the totals match the kernel's.
    #[test]
    fn repeated_stops_never_count_a_loss_twice() {
        let mut a = LostAccount::default();
        let mut reported = a.record(10);
        reported += a.reconcile(25); // first stop: 15 unrecorded
        assert_eq!(reported, 25);
        // After the restart: one record for the 15 old and 5 new losses.
        assert_eq!(a.record(20), 5);
        reported += 5;
        reported += a.reconcile(30); // second stop: 30 in all
        assert_eq!(reported, 30);
        // A late record for losses already reconciled adds nothing.
        assert_eq!(a.record(0), 0);
        assert_eq!(a.reconcile(30), 0);
    }

    /// A count read lower than the records (an unreadable event left out of
    /// the sum) never takes back what was reported.
    #[test]
    fn a_low_total_reports_nothing_and_takes_nothing_back() {
        let mut a = LostAccount::default();
        assert_eq!(a.record(100), 100);
        assert_eq!(a.reconcile(60), 0);
        assert_eq!(a.reconcile(110), 10);
    }

    #[test]
    fn rings_are_reconciled_apart_and_unknown_totals_skipped() {
        let mut accounts = [LostAccount::default(); 3];
        assert_eq!(accounts[0].record(5), 5);
        assert_eq!(accounts[1].record(9), 9);
        // Ring 0: 3 more than recorded; ring 1 lower than its own
        // records must not offset ring 0; ring 2 unknown.
        assert_eq!(
            reconcile_totals(&mut accounts, &[Some(8), Some(4), None]),
            3
        );
        assert_eq!(
            reconcile_totals(&mut accounts, &[Some(8), Some(12), Some(2)]),
            5
        );
    }

    /// Linux before 6.0 rejects the unknown read_format bit with EINVAL
    /// (perf_event_open.2, PERF_FORMAT_LOST "since Linux 6.0").
    #[test]
    fn only_einval_with_the_bit_alone_means_unsupported() {
        assert!(judge_lost_support(Ok(()), || unreachable!()));
        assert!(!judge_lost_support(Err(libc::EINVAL), || Ok(())));
        // EINVAL either way: something else is wrong; keep the bit.
        assert!(judge_lost_support(Err(libc::EINVAL), || Err(libc::EINVAL)));
        // Not allowed at all: the real open will say so.
        assert!(judge_lost_support(Err(libc::EACCES), || Ok(())));
    }

    /// `for_this_kernel` leaves attrs without the bit untouched, keeps the
    /// other bits, and keeps LOST on a 6.0+ kernel (by its release, an
    /// independent look at the machine).
    #[test]
    fn the_bit_is_kept_where_the_kernel_knows_it() {
        let plain = Attr::new(EventConfig::Software(Software::TaskClock))
            .read_format(ReadFormat::TOTAL_TIME_ENABLED);
        assert_eq!(for_this_kernel(&plain), plain);
        let with = plain.read_format(ReadFormat::TOTAL_TIME_ENABLED | ReadFormat::LOST);
        let got = for_this_kernel(&with).get_read_format();
        assert!(got.contains(ReadFormat::TOTAL_TIME_ENABLED));
        let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
        let major: u32 = release
            .split('.')
            .next()
            .and_then(|m| m.trim().parse().ok())
            .unwrap_or(0);
        if major >= 6 {
            assert!(got.contains(ReadFormat::LOST), "kernel {release}");
        }
    }
}
