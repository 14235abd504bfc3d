//! Rolling profiles: a log's samples cut into intervals of a fixed length
//! by their timestamps, one complete [`Profile`] per interval, the way
//! continuous profilers ship a profile every few seconds.
//!
//! The [`Slicer`] is fed the log's records in stream order and hands back
//! each interval once it is closed. Its decisions depend on the records
//! alone, never on when they are fed: a live run feeding records as they
//! are written and `-R` reading the finished log give the same series.
//!
//! - Intervals start at the first sample's timestamp, the *origin*:
//!   interval `k` holds the samples stamped in `[origin + k·every, origin +
//!   (k+1)·every)`; one stamped before the origin (out of order) counts in
//!   the first.
//! - Wall-clock times are INITIALIZE's `pl_ts` plus the time since
//!   INITIALIZE's own timestamp, or since the first stamped record's
//!   where INITIALIZE is stamped 0 (this crate's writer stamps it 0 and
//!   takes `pl_ts` just before the PMCs are allocated).
//! - Samples of different CPUs reach the log out of time order, so an
//!   interval closes only once a sample stamped a *grace* past its end is
//!   seen: [`GRACE_NS`], or twice the most out of order a sample has been
//!   so far in the log if that is more. A sample later still goes to the
//!   oldest interval open ([`Slicer::late_samples`] counts them).
//! - Every interval from the first to the last sample's is handed back,
//!   those without samples too, so a series has no gaps; each carries the
//!   sample types of every event sampled so far.
//! - Each profile is complete on its own, named with the mappings logged
//!   until it closes (the objects themselves are read once per series).

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use pmc::log::{LogEvent, LogRecord};

use crate::{Event, Profile, ProfileBuilder, ProfileOptions, Result, Symbolizer};

/// How long past an interval's end its samples may still arrive, at
/// least: on a 2-CPU machine at load 10, samples reached the log up to
/// 1.19 s out of order between the CPUs (3.3 ms when less loaded).
pub const GRACE_NS: u64 = 2_000_000_000;

const NANOS: u128 = 1_000_000_000;

/// One closed interval and its profile.
#[derive(Debug)]
pub struct Slice {
    /// Its number: 0 for the interval at the log's origin.
    pub index: u64,
    /// Its start on the log's clock, in nanoseconds.
    pub start_ns: u64,
    /// Its length: the interval's, or up to the last record's time for the
    /// last one.
    pub duration_ns: u64,
    /// Its start as wall-clock nanoseconds since the Unix epoch (from
    /// INITIALIZE's `pl_ts`; the log's clock itself without one).
    pub wall_start_ns: u64,
    /// Its samples, symbolised.
    pub profile: Profile,
}

impl Slice {
    /// Its file name: the start in UTC, ISO 8601's basic form to the
    /// millisecond (`20261207T072603.554Z.pb.gz`), which sorts as time
    /// does and has no `:` for other systems' file names to trip on.
    pub fn file_name(&self) -> String {
        format!("{}.pb.gz", utc_basic(self.wall_start_ns))
    }

    /// The profile as gzipped pprof, with its `time_nanos` and
    /// `duration_nanos` (fields 9 and 10, appended after the writer's:
    /// a protobuf message may carry its fields in any order).
    pub fn pprof(&self, out: impl std::io::Write) -> Result<()> {
        use std::io::Write as _;
        let mut bytes = crate::pprof_uncompressed(&self.profile);
        for (field, value) in [(9u64, self.wall_start_ns), (10, self.duration_ns)] {
            if value != 0 {
                varint(&mut bytes, field << 3);
                varint(&mut bytes, value);
            }
        }
        let mut gz = flate2::write::GzEncoder::new(out, flate2::Compression::default());
        gz.write_all(&bytes)
            .and_then(|()| gz.finish().map(drop))
            .map_err(|e| crate::Error::write("a rolling pprof profile", e))
    }
}

fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// `YYYYMMDDTHHMMSS.mmmZ` of nanoseconds since the Unix epoch.
pub fn utc_basic(ns: u64) -> String {
    let secs = ns / 1_000_000_000;
    let millis = (ns / 1_000_000) % 1000;
    let (days, rest) = (secs / 86_400, secs % 86_400);
    let (year, month, day) = civil_date(days as i64);
    format!(
        "{year:04}{month:02}{day:02}T{:02}{:02}{:02}.{millis:03}Z",
        rest / 3600,
        rest / 60 % 60,
        rest % 60
    )
}

/// The proleptic Gregorian date of a day count from 1970-01-01, by 400-year
/// eras (each 146 097 days) counted from 0000-03-01, so that the leap day
/// is the last of its year.
fn civil_date(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097);
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_index = (5 * day_of_year + 2) / 153;
    let day = (day_of_year - (153 * month_index + 2) / 5 + 1) as u32;
    let month = if month_index < 10 {
        month_index + 3
    } else {
        month_index - 9
    } as u32;
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// Cuts a log's records into [`Slice`]s of a fixed length.
#[derive(Debug)]
pub struct Slicer {
    every_ns: u64,
    options: ProfileOptions,
    /// What the symbolizer of each interval learns the mappings from.
    context: Vec<LogEvent>,
    /// PMCALLOCATE(DYN): the names and rates each interval's builder needs.
    allocations: Vec<LogEvent>,
    names: BTreeMap<u32, String>,
    rates: BTreeMap<u32, u64>,
    tsc_freq: u64,
    /// INITIALIZE's `pl_ts` in nanoseconds, and its own timestamp.
    wall_at_initialize: Option<u64>,
    initialize_ns: u64,
    /// The first stamped record's time.
    first_stamped_ns: Option<u64>,
    /// The first sample's time: where interval 0 starts.
    origin_ns: Option<u64>,
    open: VecDeque<ProfileBuilder>,
    /// The interval number of `open[0]`.
    first_open: u64,
    /// The latest sample's time, and how far behind it a sample has
    /// arrived at most.
    latest_ns: u64,
    disorder_ns: u64,
    sampled: BTreeSet<u32>,
    late: u64,
    /// One symbolizer for the series, so each object is read once; it
    /// learns the mappings again when `context` has grown.
    symbolizer: Option<Symbolizer>,
    context_learnt: usize,
}

impl Slicer {
    /// A slicer into intervals of `every_ns` (at least 1), each profile
    /// built with `options`.
    pub fn new(every_ns: u64, options: ProfileOptions) -> Slicer {
        Slicer {
            every_ns: every_ns.max(1),
            options,
            context: Vec::new(),
            allocations: Vec::new(),
            names: BTreeMap::new(),
            rates: BTreeMap::new(),
            tsc_freq: NANOS as u64,
            wall_at_initialize: None,
            initialize_ns: 0,
            first_stamped_ns: None,
            origin_ns: None,
            open: VecDeque::new(),
            first_open: 0,
            latest_ns: 0,
            disorder_ns: 0,
            sampled: BTreeSet::new(),
            late: 0,
            symbolizer: None,
            context_learnt: 0,
        }
    }

    /// Samples that arrived after their interval had closed, counted in
    /// the oldest one still open.
    pub fn late_samples(&self) -> u64 {
        self.late
    }

    fn nanos(&self, ticks: u64) -> u64 {
        (u128::from(ticks) * NANOS / u128::from(self.tsc_freq.max(1))) as u64
    }

    /// Feeds one record; returns the intervals it closed, oldest first.
    pub fn push(&mut self, event: &LogEvent) -> Vec<Slice> {
        if let LogRecord::Initialize {
            tsc_freq,
            time_sec,
            time_nsec,
            ..
        } = &event.record
        {
            if *tsc_freq > 0 {
                self.tsc_freq = *tsc_freq;
            }
            self.wall_at_initialize = Some(time_sec * 1_000_000_000 + time_nsec);
            self.initialize_ns = self.nanos(event.timestamp);
        }
        let at = self.nanos(event.timestamp);
        if self.first_stamped_ns.is_none() && event.timestamp != 0 {
            self.first_stamped_ns = Some(at);
        }
        match &event.record {
            LogRecord::MapIn { .. }
            | LogRecord::ProcFork { .. }
            | LogRecord::ProcExec { .. }
            | LogRecord::Initialize { .. } => self.context.push(event.clone()),
            LogRecord::PmcAllocate { pmcid, rate, .. } => {
                if *rate > 0 {
                    self.rates.insert(*pmcid, *rate);
                }
                self.allocate(event);
            }
            LogRecord::PmcAllocateDyn { pmcid, name, .. } => {
                self.names.insert(*pmcid, name.clone());
                self.allocate(event);
            }
            LogRecord::Callchain { pmcid, pcs, .. } if !pcs.is_empty() => {
                let origin = *self.origin_ns.get_or_insert(at);
                let mut k = at.saturating_sub(origin) / self.every_ns;
                if k < self.first_open {
                    self.late += 1;
                    k = self.first_open;
                }
                while self.first_open + (self.open.len() as u64) <= k {
                    self.open.push_back(self.builder());
                }
                self.open[(k - self.first_open) as usize].push(event);
                self.sampled.insert(*pmcid);
                self.disorder_ns = self.disorder_ns.max(self.latest_ns.saturating_sub(at));
                self.latest_ns = self.latest_ns.max(at);
            }
            _ => {}
        }
        let grace = GRACE_NS.max(self.disorder_ns.saturating_mul(2));
        let mut closed = Vec::new();
        while let Some(end) = self.open_end() {
            if end.saturating_add(grace) > self.latest_ns {
                break;
            }
            closed.push(self.close_first());
        }
        closed
    }

    /// Closes every interval still open: the last one ends at the last
    /// record's time.
    pub fn finish(&mut self) -> Vec<Slice> {
        let mut closed = Vec::new();
        while !self.open.is_empty() {
            closed.push(self.close_first());
        }
        closed
    }

    fn allocate(&mut self, event: &LogEvent) {
        self.allocations.push(event.clone());
        for builder in &mut self.open {
            builder.push(event);
        }
    }

    fn builder(&self) -> ProfileBuilder {
        let mut builder = ProfileBuilder::new(self.options.clone());
        for e in &self.allocations {
            builder.push(e);
        }
        builder
    }

    /// The end of the oldest open interval on the log's clock.
    fn open_end(&self) -> Option<u64> {
        if self.open.is_empty() {
            return None;
        }
        let origin = self.origin_ns?;
        Some(origin.saturating_add((self.first_open + 1).saturating_mul(self.every_ns)))
    }

    fn close_first(&mut self) -> Slice {
        let builder = self.open.pop_front().unwrap_or_default();
        let index = self.first_open;
        self.first_open += 1;
        let origin = self.origin_ns.unwrap_or(0);
        let start_ns = origin.saturating_add(index.saturating_mul(self.every_ns));
        let duration_ns = self
            .every_ns
            .min(self.latest_ns.saturating_sub(start_ns).max(1));
        let wall_start_ns = match self.wall_at_initialize {
            // pl_ts was taken at INITIALIZE's timestamp, or at the first
            // stamped record's where INITIALIZE is stamped 0.
            Some(wall) => {
                let taken = if self.initialize_ns != 0 {
                    self.initialize_ns
                } else {
                    self.first_stamped_ns.unwrap_or(origin)
                };
                (wall + start_ns).saturating_sub(taken)
            }
            None => start_ns,
        };
        let symbolizer = match &mut self.symbolizer {
            Some(s) => {
                if self.context_learnt != self.context.len() {
                    s.learn_mappings(&self.context);
                }
                s
            }
            None => self
                .symbolizer
                .insert(self.options.symbolizer(&self.context)),
        };
        self.context_learnt = self.context.len();
        let mut profile = builder.finish_with(symbolizer);
        self.add_unsampled_events(&mut profile);
        Slice {
            index,
            start_ns,
            duration_ns,
            wall_start_ns,
            profile,
        }
    }

    /// Gives the profile every event sampled so far, in pmcid order, so
    /// that each interval of a series has the same sample types.
    fn add_unsampled_events(&self, profile: &mut Profile) {
        if profile.events.len() == self.sampled.len() {
            return;
        }
        let events: Vec<Event> = self
            .sampled
            .iter()
            .map(|&pmcid| {
                profile
                    .events
                    .iter()
                    .find(|e| e.pmcid == pmcid)
                    .cloned()
                    .unwrap_or_else(|| Event {
                        pmcid,
                        name: self
                            .names
                            .get(&pmcid)
                            .cloned()
                            .unwrap_or_else(|| format!("pmc {pmcid:#x}")),
                        period: self
                            .options
                            .periods
                            .get(&pmcid)
                            .or_else(|| self.rates.get(&pmcid))
                            .copied(),
                    })
            })
            .collect();
        for sample in &mut profile.samples {
            let pmcid = profile.events[sample.event].pmcid;
            sample.event = events.iter().position(|e| e.pmcid == pmcid).unwrap_or(0);
        }
        profile.events = events;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ts: u64, record: LogRecord) -> LogEvent {
        LogEvent {
            timestamp: ts,
            ..LogEvent::from(record)
        }
    }

    fn sample(ts: u64, pc: u64) -> LogEvent {
        at(
            ts,
            LogRecord::Callchain {
                pid: 1,
                tid: 1,
                pmcid: 7,
                cpu: 0,
                userspace: true,
                pcs: vec![pc],
            },
        )
    }

    fn initialize(ts: u64) -> LogEvent {
        at(
            ts,
            LogRecord::Initialize {
                version: pmc::log::PMC_VERSION,
                arch: 0,
                tsc_freq: 1_000_000_000,
                time_sec: 1_800_000_000,
                time_nsec: 0,
                cpuid: String::new(),
                marked: true,
            },
        )
    }

    const SEC: u64 = 1_000_000_000;

    fn counts(slices: &[Slice]) -> Vec<(u64, u64)> {
        slices
            .iter()
            .map(|s| (s.index, s.profile.total(0)))
            .collect()
    }

    #[test]
    fn samples_fall_in_the_interval_of_their_timestamp_with_no_gaps() {
        let mut slicer = Slicer::new(SEC, ProfileOptions::default());
        let mut slices = Vec::new();
        let origin = 100 * SEC;
        for e in [
            initialize(0),
            sample(origin, 0x10),
            sample(origin + SEC / 2, 0x10),
            // Interval 1 has none; interval 2 two, one slightly out of order.
            sample(origin + 2 * SEC + 10, 0x20),
            sample(origin + 2 * SEC + 5, 0x20),
            sample(origin + 3 * SEC + GRACE_NS, 0x30),
        ] {
            slices.extend(slicer.push(&e));
        }
        // Interval 3 stays open until a sample GRACE_NS past its end.
        assert_eq!(counts(&slices), [(0, 2), (1, 0), (2, 2)]);
        slices.extend(slicer.finish());
        assert_eq!(
            counts(&slices),
            [(0, 2), (1, 0), (2, 2), (3, 0), (4, 0), (5, 1)]
        );
        // Each carries the event's sample type, the empty one too.
        assert!(slices.iter().all(|s| s.profile.events.len() == 1));
        assert_eq!(slices[0].wall_start_ns, 1_800_000_000 * SEC);
        assert_eq!(slices[2].wall_start_ns, 1_800_000_002 * SEC);
        assert_eq!(slices[0].duration_ns, SEC);
        // The last ends at its one sample, its start.
        assert_eq!(slices[5].duration_ns, 1);
        assert_eq!(slices[2].file_name(), "20270115T080002.000Z.pb.gz");
    }

    #[test]
    fn a_sample_later_than_the_grace_counts_in_the_oldest_open_interval() {
        let mut slicer = Slicer::new(SEC, ProfileOptions::default());
        let mut slices = Vec::new();
        for e in [
            sample(SEC, 1),
            sample(2 * SEC + GRACE_NS, 1),
            sample(SEC + 1, 1),
        ] {
            slices.extend(slicer.push(&e));
        }
        slices.extend(slicer.finish());
        assert_eq!(counts(&slices), [(0, 1), (1, 1), (2, 0), (3, 1)]);
        assert_eq!(slicer.late_samples(), 1);
    }

    #[test]
    fn the_grace_grows_to_twice_the_most_out_of_order_sample() {
        let mut slicer = Slicer::new(SEC, ProfileOptions::default());
        let mut slices = Vec::new();
        // 1.5 s out of order: the grace becomes 3 s.
        for e in [
            sample(SEC, 1),
            sample(SEC + 1_500_000_000, 1),
            sample(SEC, 1),
            sample(2 * SEC + GRACE_NS, 1),
        ] {
            slices.extend(slicer.push(&e));
        }
        assert!(slices.is_empty());
        slices.extend(slicer.push(&sample(2 * SEC + 3 * SEC, 1)));
        assert_eq!(counts(&slices), [(0, 2)]);
        assert_eq!(slicer.late_samples(), 0);
    }

    #[test]
    fn the_same_records_fed_in_any_chunks_give_the_same_series() {
        let records: Vec<LogEvent> = (0..50).map(|i| sample(SEC + i * SEC / 7, i % 3)).collect();
        let series = |chunk: usize| {
            let mut slicer = Slicer::new(SEC, ProfileOptions::default());
            let mut out = Vec::new();
            for part in records.chunks(chunk) {
                for e in part {
                    out.extend(slicer.push(e));
                }
            }
            out.extend(slicer.finish());
            counts(&out)
        };
        assert_eq!(series(1), series(17));
        assert_eq!(series(1).iter().map(|c| c.1).sum::<u64>(), 50);
    }

    #[test]
    fn intervals_start_at_the_first_sample_and_wall_time_at_the_first_stamp() {
        let mut slicer = Slicer::new(SEC, ProfileOptions::default());
        let allocated = at(
            10 * SEC,
            LogRecord::PmcAllocateDyn {
                pmcid: 7,
                event: 0,
                flags: 0,
                name: "cpu-clock".into(),
            },
        );
        for e in [initialize(0), allocated, sample(10 * SEC + SEC / 2, 1)] {
            assert!(slicer.push(&e).is_empty());
        }
        let slices = slicer.finish();
        assert_eq!(slices[0].start_ns, 10 * SEC + SEC / 2);
        assert_eq!(slices[0].wall_start_ns, 1_800_000_000 * SEC + SEC / 2);
        assert_eq!(slices[0].profile.events[0].name, "cpu-clock");
    }

    #[test]
    fn utc_names_match_known_dates() {
        assert_eq!(utc_basic(0), "19700101T000000.000Z");
        // 2000-02-29 (a leap day of a century year) 12:34:56.789.
        assert_eq!(utc_basic(951_827_696_789_000_000), "20000229T123456.789Z");
        assert_eq!(utc_basic(4_102_444_799 * SEC), "20991231T235959.000Z");
    }

    #[test]
    fn the_pprof_carries_its_time_and_duration() {
        let mut slicer = Slicer::new(SEC, ProfileOptions::default());
        slicer.push(&initialize(0));
        slicer.push(&sample(5 * SEC, 1));
        let slices = slicer.finish();
        let mut gz = Vec::new();
        slices[0].pprof(&mut gz).unwrap();
        let mut raw = Vec::new();
        std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&gz[..]), &mut raw).unwrap();
        let mut tail = Vec::new();
        varint(&mut tail, 9 << 3);
        varint(&mut tail, 1_800_000_000 * SEC);
        // The last interval ends at its last record: 1 ns at least.
        varint(&mut tail, 10 << 3);
        varint(&mut tail, 1);
        assert!(raw.ends_with(&tail), "time_nanos, duration_nanos");
    }
}
