//! Synthetic pipe mode streams: the time order, ids, names, perf's own
//! records.

use super::*;
use crate::record::kind;

/// A record: type, then the body's words.
fn rec(kind: u32, words: &[u64]) -> Vec<u8> {
    let size = 8 + 8 * words.len();
    let mut b = kind.to_ne_bytes().to_vec();
    b.extend_from_slice(&0u16.to_ne_bytes());
    b.extend_from_slice(&(size as u16).to_ne_bytes());
    for w in words {
        b.extend_from_slice(&w.to_ne_bytes());
    }
    b
}

/// HEADER_ATTR of a software event sampling TID | TIME | ID (and
/// sample_id_all), with `ids`.
fn header_attr(config: u64, ids: &[u64]) -> Vec<u8> {
    let mut attr = [0u8; 136];
    attr[0..4].copy_from_slice(&1u32.to_ne_bytes());
    attr[4..8].copy_from_slice(&136u32.to_ne_bytes());
    attr[8..16].copy_from_slice(&config.to_ne_bytes());
    let t = SampleType::TID | SampleType::TIME | SampleType::ID;
    attr[24..32].copy_from_slice(&t.bits().to_ne_bytes());
    attr[40..48].copy_from_slice(&(1u64 << 18).to_ne_bytes());
    let mut body: Vec<u64> = attr
        .chunks_exact(8)
        .map(|c| u64::from_ne_bytes(c.try_into().unwrap_or_default()))
        .collect();
    body.extend_from_slice(ids);
    rec(64, &body)
}

/// A sample of TID | TIME | ID.
fn sample(tid: u32, time: u64, id: u64) -> Vec<u8> {
    rec(
        kind::SAMPLE,
        &[u64::from(tid) << 32 | u64::from(tid), time, id],
    )
}

fn stream(records: &[Vec<u8>]) -> Vec<u8> {
    let mut b = b"PERFILE2".to_vec();
    b.extend_from_slice(&16u64.to_ne_bytes());
    for r in records {
        b.extend_from_slice(r);
    }
    b
}

fn read(bytes: Vec<u8>) -> (PerfData, Vec<DataEvent>, Option<PerfDataError>) {
    let mut pd = PerfData::from_stream(std::io::Cursor::new(bytes)).expect("a stream");
    let mut events = Vec::new();
    let mut end = None;
    while let Some(e) = pd.next_event() {
        match e {
            Ok(e) => events.push(e),
            Err(e) => end = Some(e),
        }
    }
    (pd, events, end)
}

const ROUND: u32 = 68;

#[test]
fn rounds_release_what_is_older_than_the_previous_rounds_maximum() {
    let bytes = stream(&[
        header_attr(0, &[10]),
        sample(1, 50, 10),
        sample(1, 30, 10),
        rec(ROUND, &[]),
        sample(1, 20, 10),
        sample(1, 60, 10),
        rec(ROUND, &[]),
        // perf's promise: no older than the round before the last (50).
        sample(1, 55, 10),
    ]);
    let (_, events, end) = read(bytes);
    assert!(end.is_none());
    let times: Vec<u64> = events.iter().filter_map(|e| e.time).collect();
    // 20 came a round after 30 and 50, and still goes first.
    assert_eq!(times, vec![20, 30, 50, 55, 60]);
}

#[test]
fn ids_name_the_event_and_event_update_names_it() {
    // EVENT_UPDATE NAME (type 2) for id 21: "page-faults".
    let mut name = [0u8; 16];
    name[..11].copy_from_slice(b"page-faults");
    let mut words = vec![2u64, 21];
    words.extend(
        name.chunks_exact(8)
            .map(|c| u64::from_ne_bytes(c.try_into().unwrap_or_default())),
    );
    let bytes = stream(&[
        header_attr(0, &[10, 11]),
        header_attr(2, &[20, 21]),
        rec(78, &words),
        sample(7, 5, 21),
        sample(7, 6, 11),
        sample(7, 7, 99),
    ]);
    let (pd, events, _) = read(bytes);
    let names: Vec<&str> = pd.attrs().iter().map(|a| a.name.as_str()).collect();
    assert_eq!(names, ["cpu-clock", "page-faults"]);
    let attrs: Vec<usize> = events.iter().map(|e| e.attr).collect();
    assert_eq!(attrs, vec![1, 0]);
    assert_eq!(pd.skipped_samples(), 1);
}

#[test]
fn a_record_cut_short_ends_the_stream_after_the_records_before_it() {
    let mut bytes = stream(&[header_attr(0, &[10]), sample(1, 5, 10), sample(1, 6, 10)]);
    bytes.truncate(bytes.len() - 3);
    let (_, events, end) = read(bytes);
    assert_eq!(events.len(), 1);
    assert!(
        matches!(end, Some(PerfDataError::Truncated { .. })),
        "{end:?}"
    );
}

#[test]
fn compressed_records_say_what_to_do() {
    let bytes = stream(&[header_attr(0, &[10]), rec(81, &[0])]);
    let e = PerfData::from_stream(std::io::Cursor::new(bytes)).map(|_| ());
    assert!(
        matches!(e, Err(PerfDataError::Compressed { offset: 168 })),
        "{e:?}"
    );
    let e = e.err().map(|e| e.to_string()).unwrap_or_default();
    assert!(e.contains("perf inject"), "{e}");
}

#[test]
fn a_stream_without_events_or_magic_is_refused() {
    let e = PerfData::from_stream(std::io::Cursor::new(stream(&[sample(1, 1, 1)])));
    assert!(matches!(e, Err(PerfDataError::Corrupt { .. })), "{e:?}");
    let e = PerfData::from_stream(std::io::Cursor::new(b"\xee\0\0\0not".to_vec()));
    assert!(matches!(e, Err(PerfDataError::NotPerfData { .. })), "{e:?}");
}

#[test]
fn tracing_data_payloads_are_skipped() {
    let mut payload = rec(66, &[]);
    // HEADER_TRACING_DATA { size: 16 } then 16 bytes outside the record.
    payload[6..8].copy_from_slice(&12u16.to_ne_bytes());
    payload.extend_from_slice(&16u32.to_ne_bytes());
    payload.extend_from_slice(&[0xaa; 16]);
    let bytes = stream(&[header_attr(0, &[10]), payload, sample(1, 9, 10)]);
    let (_, events, end) = read(bytes);
    assert!(end.is_none(), "{end:?}");
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].time, Some(9));
}
