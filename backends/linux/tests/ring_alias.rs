//! Two `RingBuffer`s on one event map the same kernel buffer. A record
//! handed out by one of them must stay what it was while the other reader
//! gives the space back and the kernel writes new records over it: the
//! safe API may not expose memory the kernel can rewrite under a borrow.
//!
//! Needs `perf_event_open` for a user-space software event of this
//! process (perf_event_paranoid <= 2, or root); without it the test is
//! reported ignored with the reason.

use libtest_mimic::{Arguments, Completion, Failed, Trial};
use pmc_linux::attr::{Attr, EventConfig, SampleType, Software};
use pmc_linux::event::{Event, OpenFlags, Target};
use pmc_linux::record::{Record, RecordParser};
use pmc_linux::ring::RingBuffer;

/// Why self-monitoring of software events is impossible here, judged from
/// the sysctl alone (not from the code under test failing).
fn self_monitoring_unavailable() -> Option<String> {
    let path = "/proc/sys/kernel/perf_event_paranoid";
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) => return Some(format!("{path} unreadable ({e}): no perf_event support")),
    };
    let level: i32 = text.trim().parse().unwrap_or(3);
    let root = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .and_then(|l| l.split_whitespace().nth(2).map(|u| u == "0"))
        })
        .unwrap_or(false);
    (level > 2 && !root)
        .then(|| format!("perf_event_paranoid is {level} (> 2) and this user is not root"))
}

/// Touches `pages` fresh pages: one page fault, hence one sample, each.
/// The allocation is above glibc's largest mmap threshold (32 MiB), so it
/// is a fresh mapping every time, never recycled heap.
fn fault_pages(pages: usize) {
    // One fault per page needs transparent huge pages off for this
    // process: Debian's arm64 kernel (and others) default THP to `always`,
    // where a 64 MiB zeroed buffer takes 2 MiB pages and faults 512× less.
    nix::sys::prctl::set_thp_disable(true).expect("PR_SET_THP_DISABLE");
    let mut v = vec![0u8; (40 << 20).max(pages * 4096)];
    for i in 0..pages {
        v[i * 4096] = 1;
    }
    std::hint::black_box(&v);
}

fn a_second_mapping_cannot_rewrite_a_handed_out_record() -> Result<Completion, Failed> {
    if let Some(reason) = self_monitoring_unavailable() {
        return Ok(Completion::ignored_with(reason));
    }
    let attr = Attr::new(EventConfig::Software(Software::PageFaults))
        .exclude_kernel(true)
        .sample_period(1)
        .sample_type(SampleType::IP | SampleType::TID | SampleType::TIME | SampleType::PERIOD)
        .disabled(true);
    let event = Event::open(&attr, Target::CALLER, None, OpenFlags::empty())
        .map_err(|e| format!("open page-faults: {e}"))?;
    let parser = RecordParser::for_attr(&attr);
    // One data page: a few hundred faults wrap it several times.
    let mut first = RingBuffer::new(&event, 1).map_err(|e| format!("first ring: {e}"))?;
    // perf_mmap() shares an event's buffer with every later mapping of the
    // same size (`if (event->rb) { if (data_page_nr(event->rb) != nr_pages)
    // -EINVAL; … }`, kernel/events/core.c since perf_event's first ring),
    // charging no more locked memory: a refusal is our mapping's error.
    let mut second =
        RingBuffer::new(&event, 1).map_err(|e| format!("second ring on the same event: {e}"))?;

    event.enable().map_err(|e| format!("enable: {e}"))?;
    fault_pages(16);
    event.disable().map_err(|e| format!("disable: {e}"))?;

    let record = first
        .next_record()
        .ok_or("no record after 16 page faults")?;
    let seen = record.to_vec();
    let time_before = match parser.parse(record, 0).map_err(|e| format!("parse: {e}"))? {
        Record::Sample(s) => s.time().ok_or("sample without TIME")?,
        other => return Err(format!("first record is not a sample: {other:?}").into()),
    };

    // The second reader consumes everything, so the kernel may reuse the
    // space, and new samples (later TIMEs) overwrite the whole data page
    // several times over.
    let mut consumed = 0usize;
    for _ in 0..10 {
        event.enable().map_err(|e| format!("enable: {e}"))?;
        fault_pages(50);
        event.disable().map_err(|e| format!("disable: {e}"))?;
        while second.next_record().is_some() {
            consumed += 1;
        }
        second.release();
    }
    if consumed < 200 {
        return Err(format!(
            "the second reader saw only {consumed} records; the ring did not wrap"
        )
        .into());
    }

    if record != seen.as_slice() {
        return Err(format!(
            "the record handed out by the first ring changed under its borrow \
             ({} bytes; now {:?}, was {:?})",
            seen.len(),
            record,
            seen
        )
        .into());
    }
    match parser
        .parse(record, 0)
        .map_err(|e| format!("parse again: {e}"))?
    {
        Record::Sample(s) if s.time() == Some(time_before) => Ok(Completion::Completed),
        other => Err(format!("record decodes differently now: {other:?}").into()),
    }
}

fn main() {
    let args = Arguments::from_args();
    let tests = vec![Trial::ignorable_test(
        "a_second_mapping_cannot_rewrite_a_handed_out_record",
        a_second_mapping_cannot_rewrite_a_handed_out_record,
    )];
    libtest_mimic::run(&args, tests).exit();
}
