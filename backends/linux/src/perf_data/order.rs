//! perf's ordered events: records buffered and handed out in time order,
//! flushed at FINISHED_ROUND marks, bounded.

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

use super::DataEvent;

/// The most record bytes held before the oldest is handed out regardless.
pub(super) const MAX_BUFFERED_BYTES: usize = 128 << 20;
/// The most records held before the oldest is handed out regardless.
pub(super) const MAX_BUFFERED_EVENTS: usize = 1 << 20;

/// One buffered record, ordered by (time, arrival).
#[derive(Debug)]
struct Entry {
    key: (u64, u64),
    event: DataEvent,
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Entry {
    fn cmp(&self, other: &Self) -> Ordering {
        self.key.cmp(&other.key)
    }
}

/// The buffer.
#[derive(Debug, Default)]
pub(super) struct Queue {
    heap: BinaryHeap<Reverse<Entry>>,
    bytes: usize,
    seq: u64,
    /// The largest time pushed.
    max_time: u64,
    /// The largest time pushed before the last round mark.
    round_max: u64,
    /// Records at or before this time may be handed out.
    limit: Option<u64>,
}

impl Queue {
    /// Buffers a record (one without a time sorts at the largest time seen).
    pub(super) fn push(&mut self, event: DataEvent) {
        let time = match event.time {
            Some(t) => {
                self.max_time = self.max_time.max(t);
                t
            }
            None => self.max_time,
        };
        self.bytes += event.bytes.len();
        self.seq += 1;
        self.heap.push(Reverse(Entry {
            key: (time, self.seq),
            event,
        }));
        if self.bytes > MAX_BUFFERED_BYTES || self.heap.len() > MAX_BUFFERED_EVENTS {
            // Over the cap: the oldest may go now.
            if let Some(Reverse(top)) = self.heap.peek() {
                let t = top.key.0;
                self.limit = Some(self.limit.map_or(t, |l| l.max(t)));
            }
        }
    }

    /// A FINISHED_ROUND: what is no later than the previous round's largest
    /// time may go.
    pub(super) fn round(&mut self) {
        self.limit = Some(self.limit.map_or(self.round_max, |l| l.max(self.round_max)));
        self.round_max = self.max_time;
    }

    /// The end: everything may go.
    pub(super) fn finish(&mut self) {
        self.limit = Some(u64::MAX);
    }

    /// The earliest record, if it may go.
    pub(super) fn pop_ready(&mut self) -> Option<DataEvent> {
        let limit = self.limit?;
        let Reverse(top) = self.heap.peek()?;
        if top.key.0 > limit {
            return None;
        }
        let Reverse(entry) = self.heap.pop()?;
        self.bytes -= entry.event.bytes.len();
        Some(entry.event)
    }
}
