//! The warning of samples lost: at the end of a live recording and by
//! every `-R` report, as FreeBSD's pmcstat warns "sampling was paused at
//! least N times" and `perf report` "lost N chunks". A loss must never
//! pass silently: a profile with a fifth of its samples gone looks as
//! plausible as a whole one.

use pmc::log::{LogEvent, LogRecord};

use super::TOOL;

/// Samples recorded and lost, as the log's records tell them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(in crate::pmcstat) struct Losses {
    pub(super) recorded: u64,
    pub(super) lost: u64,
    /// DROPNOTIFY records without a count (a log hwpmc wrote): each is
    /// at least one sample.
    pub(super) uncounted: bool,
}

impl Losses {
    pub(in crate::pmcstat) fn add(&mut self, record: &LogRecord) {
        match record {
            LogRecord::Callchain { .. } => self.recorded += 1,
            LogRecord::Dropnotify { lost: Some(n) } => self.lost += u64::from(*n),
            LogRecord::Dropnotify { lost: None } => {
                self.lost += 1;
                self.uncounted = true;
            }
            _ => {}
        }
    }

    /// `recorded` samples and `lost` lost, as a log's writer counted
    /// them (a log that cannot be read back: a device, FIFO or socket).
    pub(in crate::pmcstat) fn counted(recorded: u64, lost: u64) -> Losses {
        Losses {
            recorded,
            lost,
            uncounted: false,
        }
    }

    /// These and `other`'s (two parts of one log).
    pub(in crate::pmcstat) fn merge(&mut self, other: Losses) {
        self.recorded += other.recorded;
        self.lost += other.lost;
        self.uncounted |= other.uncounted;
    }

    /// The losses in `events`.
    pub(in crate::pmcstat) fn of(events: &[LogEvent]) -> Losses {
        let mut losses = Losses::default();
        for e in events {
            losses.add(&e.record);
        }
        losses
    }

    /// The warning to print, `None` when nothing was lost. `ring_kib`:
    /// the smallest ring the locked-memory limit cut, if any (live only).
    pub(super) fn warning(&self, ring_kib: Option<usize>) -> Option<String> {
        if self.lost == 0 {
            return None;
        }
        let total = self.lost + self.recorded;
        let percent = self.lost as f64 * 100.0 / total as f64;
        let at_least = if self.uncounted { "at least " } else { "" };
        let mut text = format!(
            "{TOOL}: warning: {at_least}{} samples lost, {} recorded ({percent:.1} % lost): \
             the kernel's sample buffers overflowed before pmcstat emptied them; sample less \
             often with a larger reload count (-n) or on fewer CPUs (-c)",
            self.lost, self.recorded
        );
        if let Some(kib) = ring_kib {
            text.push_str(&format!(
                ", or let pmcstat lock more memory: the locked-memory limit cut the buffers to \
                 {kib} KiB per CPU (raise kernel.perf_event_mlock_kb or RLIMIT_MEMLOCK, or run \
                 with CAP_IPC_LOCK)"
            ));
        }
        Some(text)
    }
}

/// The end of a live recording (after `close_logfile`): warns on standard
/// error if `events`, the log just written, lost samples.
pub(in crate::pmcstat) fn warn_lost(events: &[LogEvent]) {
    Losses::of(events).warn(pmc::global::log::smallest_ring_kib());
}

impl Losses {
    /// Warns on standard error if samples were lost.
    pub(in crate::pmcstat) fn warn(&self, ring_kib: Option<usize>) {
        if let Some(w) = self.warning(ring_kib) {
            eprintln!("{w}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pmc::log::LogReader;

    fn events(records: Vec<LogRecord>) -> Vec<LogEvent> {
        let mut bytes = Vec::new();
        let mut w =
            pmc::log::LogWriter::new(&mut bytes, &pmc::global::this_machine()).expect("writer");
        for r in &records {
            w.write(r, 1).expect("write");
        }
        // Buffered until the close.
        w.close().expect("close");
        drop(w);
        let mut reader = LogReader::from_memory();
        reader.feed(&bytes);
        reader.collect::<Result<_, _>>().expect("decode")
    }

    fn sample() -> LogRecord {
        LogRecord::Callchain {
            pid: 1,
            tid: 1,
            pmcid: 1,
            cpu: 0,
            userspace: true,
            pcs: vec![0x1000],
        }
    }

    #[test]
    fn no_loss_no_warning() {
        let losses = Losses::of(&events(vec![sample(), sample()]));
        assert_eq!(losses.recorded, 2);
        assert_eq!(losses.warning(None), None);
    }

    #[test]
    fn the_warning_gives_both_counts_and_what_to_do() {
        let losses = Losses::of(&events(vec![
            sample(),
            LogRecord::Dropnotify { lost: Some(2) },
            sample(),
            LogRecord::Dropnotify { lost: Some(1) },
            sample(),
        ]));
        let w = losses.warning(None).expect("a warning");
        assert!(
            w.contains("3 samples lost, 3 recorded (50.0 % lost)"),
            "{w}"
        );
        assert!(w.contains("-n"), "{w}");
        assert!(!w.contains("mlock"), "{w}");
        let cut = losses.warning(Some(4)).expect("a warning");
        assert!(cut.contains("perf_event_mlock_kb"), "{cut}");
    }
}
