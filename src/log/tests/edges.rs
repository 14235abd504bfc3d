//! The edges of the wire form: truncated strings, callchain depth, flag
//! words, short and foreign bytes, and a reader's sources failing.
//! Expected bytes are laid out by hand from sys/sys/pmclog.h (struct
//! offsets, `PMCLOG_HEADER_*`), hwpmc_logging.c (`_PMCLOG_TO_HEADER`,
//! `_PMCLOG_RESERVE`, `PMC_CALLCHAIN_TO_CPUFLAGS`) and lib/libpmc/pmclog.c
//! (`pmclog_get_event`), never by our encoder.

use super::super::*;
use super::{Golden, golden_records};

/// `pl_pathname[PATH_MAX]` (sys/syslimits.h PATH_MAX 1024, NUL included):
/// a longer path keeps its first 1023 bytes and the NUL, and the record is
/// `offsetof(pl_pathname) + 1024` bytes, the largest libpmc's
/// `PMCLOG_GET_PATHLEN` accepts (`(P) > PATH_MAX` is an error).
#[test]
fn a_path_is_cut_to_path_max_and_a_full_one_reads_back() {
    let long = "a".repeat(1100);
    let kept = "a".repeat(1023);
    let record = LogRecord::MapIn {
        pid: 42,
        start: 0x40_0000,
        path: long,
    };
    // struct pmclog_map_in: pl_pathname at 32.
    let golden = Golden::new(kind::MAP_IN, 32 + 1024, 9, 0)
        .u32(16, 42)
        .u64(24, 0x40_0000)
        .chars(32, &kept, 1024)
        .0;
    let mut bytes = Vec::new();
    record.encode(9, &mut bytes);
    assert_eq!(bytes.len(), 1056);
    assert_eq!(bytes, golden);
    let (_, back) = LogRecord::decode(&golden, 0).unwrap();
    assert_eq!(
        back,
        LogRecord::MapIn {
            pid: 42,
            start: 0x40_0000,
            path: kept.clone()
        }
    );

    // struct pmclog_pmcattach: pl_pathname at 24; the same cut.
    let golden = Golden::new(kind::PMCATTACH, 24 + 1024, 9, 0)
        .u32(16, 7)
        .u32(20, 8)
        .chars(24, &kept, 1024)
        .0;
    let mut bytes = Vec::new();
    LogRecord::PmcAttach {
        pmcid: 7,
        pid: 8,
        path: "a".repeat(1024),
    }
    .encode(9, &mut bytes);
    assert_eq!(bytes, golden);

    // One byte more than PATH_MAX is corrupt, and the error says so.
    let over = Golden::new(kind::MAP_IN, 32 + 1028, 0, b'a').0;
    let e = LogRecord::decode(&over, 5).unwrap_err().to_string();
    assert!(
        e.contains("record at byte 5") && e.contains("1028") && e.contains("PATH_MAX (1024)"),
        "{e}"
    );
}

/// The fixed char arrays (`pl_cpuid[PMC_CPUID_LEN = 64]`,
/// `pl_evname[PMC_NAME_MAX = 64]`, `pl_tdname`/`pl_pcomm[MAXCOMLEN + 1 =
/// 20]`) keep at most their length - 1 bytes and a NUL, as hwpmc's
/// `strlcpy`/`snprintf` into them do; the record sizes do not change.
#[test]
fn long_names_are_cut_to_their_char_arrays() {
    let long = "x".repeat(100);
    let cut = |n: usize| "x".repeat(n);
    let cases: Vec<(LogRecord, Vec<u8>)> = vec![
        (
            LogRecord::ThrCreate {
                tid: 1,
                pid: 2,
                flags: 0,
                name: long.clone(),
            },
            Golden::new(kind::THR_CREATE, 52, 3, 0)
                .u32(16, 1)
                .u32(20, 2)
                .chars(32, &cut(19), 20)
                .0,
        ),
        (
            LogRecord::ProcCreate {
                pid: 2,
                flags: 0,
                name: long.clone(),
            },
            Golden::new(kind::PROC_CREATE, 44, 3, 0)
                .u32(16, 2)
                .chars(24, &cut(19), 20)
                .0,
        ),
        (
            LogRecord::PmcAllocateDyn {
                pmcid: 1,
                event: 2,
                flags: 3,
                name: long.clone(),
            },
            Golden::new(kind::PMCALLOCATEDYN, 96, 3, 0)
                .u32(16, 1)
                .u32(20, 2)
                .u32(24, 3)
                .chars(32, &cut(63), 64)
                .0,
        ),
        // A FreeBSD-style INITIALIZE (no mark): 63 bytes and the NUL.
        (
            LogRecord::Initialize {
                version: 0x0903_0000,
                arch: 0x400,
                tsc_freq: 1,
                time_sec: 2,
                time_nsec: 3,
                cpuid: long.clone(),
                marked: false,
            },
            Golden::new(kind::INITIALIZE, 112, 3, 0)
                .u32(16, 0x0903_0000)
                .u32(20, 0x400)
                .u64(24, 1)
                .u64(32, 2)
                .u64(40, 3)
                .chars(48, &cut(63), 64)
                .0,
        ),
        // Ours: 55 bytes and the NUL, then the 8-byte origin mark.
        (
            LogRecord::Initialize {
                version: 0x0903_0000,
                arch: 0x400,
                tsc_freq: 1,
                time_sec: 2,
                time_nsec: 3,
                cpuid: long,
                marked: true,
            },
            Golden::new(kind::INITIALIZE, 112, 3, 0)
                .u32(16, 0x0903_0000)
                .u32(20, 0x400)
                .u64(24, 1)
                .u64(32, 2)
                .u64(40, 3)
                .chars(48, &cut(55), 56)
                .bytes(104, b"pmc-rs1\0")
                .0,
        ),
    ];
    for (record, golden) in cases {
        let mut bytes = Vec::new();
        record.encode(3, &mut bytes);
        assert_eq!(bytes, golden, "{record:?}");
    }
}

/// A record is the same bytes wherever it starts in the output: its
/// length and padding count from its own first byte (`_PMCLOG_RESERVE`
/// rounds the record's LEN, not the buffer's).
#[test]
fn records_encode_the_same_after_any_prefix() {
    for prefix in [1usize, 2, 3, 5] {
        for (record, golden) in golden_records() {
            let mut bytes = vec![0x5A; prefix];
            record.encode(0x0102_0304_0506_0708, &mut bytes);
            assert_eq!(&bytes[..prefix], &vec![0x5A; prefix][..]);
            assert_eq!(&bytes[prefix..], &golden[..], "prefix {prefix}: {record:?}");
        }
    }
}

/// `pl_cpuflags` = `PMC_CALLCHAIN_TO_CPUFLAGS(cpu, flags)` = `cpu << 16 |
/// (flags & 0xFFFF)`; the reader takes `PMC_CALLCHAIN_CPUFLAGS_TO_CPU`
/// (`>> 16 & 0xFFFF`) and `PMC_CALLCHAIN_CPUFLAGS_TO_USERMODE` (`&
/// PMC_CC_F_USERSPACE`, 0x01).
#[test]
fn callchain_cpu_and_mode_share_one_word() {
    for (cpu, userspace, word) in [
        (0u16, true, 0x0000_0001u32),
        (0, false, 0),
        (5, false, 0x0005_0000),
        (0xFFFF, true, 0xFFFF_0001),
        (0x1234, false, 0x1234_0000),
    ] {
        let record = LogRecord::Callchain {
            pid: 1,
            tid: 2,
            pmcid: 3,
            cpu,
            userspace,
            pcs: vec![0xffff_ffff_8000_0000],
        };
        let golden = Golden::new(kind::CALLCHAIN, 40, 0, 0)
            .u32(16, 1)
            .u32(20, 2)
            .u32(24, 3)
            .u32(28, word)
            .u64(32, 0xffff_ffff_8000_0000)
            .0;
        let mut bytes = Vec::new();
        record.encode(0, &mut bytes);
        assert_eq!(bytes, golden, "{record:?}");
        assert_eq!(LogRecord::decode(&golden, 0).unwrap().1, record);
    }
    // Other flag bits than PMC_CC_F_USERSPACE are not "user".
    let other = Golden::new(kind::CALLCHAIN, 32, 0, 0)
        .u32(28, 0x0002_0002)
        .0;
    match LogRecord::decode(&other, 0).unwrap().1 {
        LogRecord::Callchain {
            cpu,
            userspace,
            pcs,
            ..
        } => assert_eq!((cpu, userspace, pcs.len()), (2, false, 0)),
        r => panic!("{r:?}"),
    }
}

/// libpmc's `struct pmclog_ev_callchain` holds `pl_pc[PMC_CALLCHAIN_DEPTH_MAX
/// = 512]` (sys/sys/pmc.h): a record of 512 pcs (32 + 4096 bytes) is the
/// deepest; one pc more is corrupt (libpmc would overrun its array), and
/// the writer cuts deeper chains to 512.
#[test]
fn callchains_are_at_most_512_deep() {
    let pcs: Vec<u64> = (0..600).map(|i| 0x1000 + i * 8).collect();
    let mut golden = Golden::new(kind::CALLCHAIN, 32 + 512 * 8, 0, 0)
        .u32(16, 1)
        .u32(20, 2)
        .u32(24, 3)
        .u32(28, 1);
    for (i, pc) in pcs.iter().take(512).enumerate() {
        golden = golden.u64(32 + 8 * i, *pc);
    }
    let golden = golden.0;
    let mut bytes = Vec::new();
    LogRecord::Callchain {
        pid: 1,
        tid: 2,
        pmcid: 3,
        cpu: 0,
        userspace: true,
        pcs: pcs.clone(),
    }
    .encode(0, &mut bytes);
    assert_eq!(bytes, golden);
    match LogRecord::decode(&golden, 0).unwrap().1 {
        LogRecord::Callchain { pcs: got, .. } => assert_eq!(got, pcs[..512]),
        r => panic!("{r:?}"),
    }
    let deeper = Golden::new(kind::CALLCHAIN, 32 + 513 * 8, 0, 0).0;
    let e = LogRecord::decode(&deeper, 64).unwrap_err().to_string();
    assert!(
        e.contains("record at byte 64") && e.contains("513 pcs"),
        "{e}"
    );
    // And through a reader: an error, not a record.
    let mut r = LogReader::from_memory();
    r.feed(&deeper);
    assert!(
        matches!(r.read(), ReadState::Error(e @ ReadError::BadRecord { offset: 0, .. }) if e.to_string().contains("513 pcs"))
    );
}

/// `struct pmclog_header` is 16 bytes and starts with the
/// `PMCLOG_HEADER_MAGIC` (0xEE) byte in bits 24-31: anything shorter or
/// else is no record; a type outside `enum pmclog_type` neither.
#[test]
fn decode_refuses_short_foreign_and_unknown_records() {
    let closelog = Golden::new(kind::CLOSELOG, 16, 0, 0).0;
    for n in [0, 4, 8, 15] {
        let e = LogRecord::decode(&closelog[..n], 3)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains(&format!("{n} bytes, shorter than a header")),
            "{n}: {e}"
        );
    }
    let mut foreign = closelog.clone();
    foreign[0..4].copy_from_slice(&((0xEFu32 << 24) | (1 << 16) | 16).to_ne_bytes());
    let e = LogRecord::decode(&foreign, 0).unwrap_err().to_string();
    assert!(e.contains("bad magic 0xef"), "{e}");
    // Type 4 was never assigned (V1 went from INITIALIZE 3 to PMCALLOCATE 5).
    for ty in [0u32, 4, 21, 0xFF] {
        let mut unknown = closelog.clone();
        unknown[0..4].copy_from_slice(&((0xEEu32 << 24) | (ty << 16) | 16).to_ne_bytes());
        let e = LogRecord::decode(&unknown, 0).unwrap_err().to_string();
        assert!(e.contains(&format!("unknown record type {ty}")), "{e}");
    }
    // A record cut before a field names the field: struct pmclog_proccsw
    // has pl_pid at 28.
    let proccsw = &golden_records()[7].1;
    let e = LogRecord::decode(&proccsw[..28], 0)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("type 8: 28 bytes end before field pl_pid"),
        "{e}"
    );
}

/// The reader checks each header before waiting for the record: a length
/// below the 16-byte header, or not a multiple of 4 (`_PMCLOG_RESERVE`
/// rounds every record up to `sizeof(uint32_t)`), is corrupt at once.
#[test]
fn a_bad_record_length_is_an_error_at_its_offset() {
    let userdata = golden_records()[12].1.clone();
    for (ty, len) in [
        (kind::CLOSELOG, 8u32),
        (kind::CLOSELOG, 12),
        (kind::CLOSELOG, 18),
        (kind::USERDATA, 22),
    ] {
        let mut bytes = userdata.clone();
        let mut bad = vec![0u8; 24];
        bad[0..4].copy_from_slice(&((0xEEu32 << 24) | (u32::from(ty) << 16) | len).to_ne_bytes());
        bytes.extend_from_slice(&bad);
        let mut r = LogReader::from_memory();
        r.feed(&bytes);
        assert!(matches!(r.read(), ReadState::Ok(_)));
        match r.read() {
            ReadState::Error(e @ ReadError::BadLength { offset: 24, .. }) => assert!(
                e.to_string().contains(&format!("bad record length {len}")),
                "{len}: {e}"
            ),
            other => panic!("{len}: {other:?}"),
        }
    }
}

/// A source that fails in the given ways before giving `data`.
struct Flaky {
    errors: Vec<std::io::ErrorKind>,
    data: std::io::Cursor<Vec<u8>>,
}

impl std::io::Read for Flaky {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if !self.errors.is_empty() {
            return Err(self.errors.remove(0).into());
        }
        self.data.read(buf)
    }
}

/// std::io::Read: `Interrupted` is retried (the read is restartable);
/// `WouldBlock` on a non-blocking source is libpmc's PMCLOG_REQUIRE_DATA
/// (pmclog.c `pmclog_read`: EAGAIN is not an error); any other error is
/// PMCLOG_ERROR, sticky.
#[test]
fn a_sources_errors_are_retried_waited_for_or_fatal() {
    use std::io::ErrorKind::{Interrupted, Other, WouldBlock};
    let userdata = golden_records()[12].1.clone();
    let flaky = |errors| Flaky {
        errors,
        data: std::io::Cursor::new(userdata.clone()),
    };

    let mut r = LogReader::from_reader(flaky(vec![Interrupted, Interrupted]));
    assert!(
        matches!(r.read(), ReadState::Ok(e) if e.record == LogRecord::Userdata { value: 0xdead })
    );

    let mut r = LogReader::from_reader(flaky(vec![WouldBlock]));
    assert_eq!(r.read(), ReadState::RequireData);
    assert!(matches!(r.read(), ReadState::Ok(_)));
    assert_eq!(r.read(), ReadState::Eof);

    let mut r = LogReader::from_reader(flaky(vec![Other]));
    let first = r.read();
    assert!(
        matches!(
            &first,
            ReadState::Error(ReadError::Io {
                offset: 0,
                kind: Other,
                ..
            })
        ),
        "{first:?}"
    );
    assert_eq!(r.read(), first, "sticky");
}

/// As an iterator, an error comes once (the iteration then ends), so
/// `collect` over a corrupt stream ends.
#[test]
fn the_iterator_reports_an_error_once() {
    let mut bytes = golden_records()[12].1.clone();
    bytes.extend_from_slice(&[0x11; 24]);
    bytes.extend_from_slice(&golden_records()[12].1);
    let mut r = LogReader::from_memory();
    r.feed(&bytes);
    assert!(matches!(r.next(), Some(Ok(_))));
    match r.next() {
        Some(Err(ReadError::BadMagic { offset: 24, .. })) => {}
        other => panic!("{other:?}"),
    }
    assert_eq!(r.next(), None);
    assert_eq!(r.next(), None);
    let mut r = LogReader::from_reader(std::io::Cursor::new(bytes));
    let all: Vec<_> = r.by_ref().collect();
    assert_eq!(all.len(), 2, "{all:?}");
    assert!(all[1].is_err());
}

/// A log is written in 64 KiB pieces (and on flush): nothing reaches the
/// destination while less is pending, the whole of it once 64 KiB are.
#[test]
fn the_writer_writes_in_64_kib_pieces() {
    let out = crate::MemoryLog::new();
    let mut w = LogWriter::new(out.clone(), &cpu::CpuIdentity::unknown()).unwrap();
    // INITIALIZE (112) + 2725 USERDATA (24 each) = 65512 < 65536.
    for i in 0..2725 {
        w.writelog(i, u64::from(i)).unwrap();
    }
    assert_eq!(out.bytes().len(), 0, "below 64 KiB nothing is written");
    w.writelog(2725, 2725).unwrap();
    assert_eq!(out.bytes().len(), 65536, "at 64 KiB the buffer is written");
    w.writelog(2726, 2726).unwrap();
    assert_eq!(out.bytes().len(), 65536);
    w.flush().unwrap();
    assert_eq!(out.bytes().len(), 65560, "flush writes the rest");
    let events = out.events().unwrap();
    assert_eq!(events.len(), 2728);
    assert_eq!(events[2727].record, LogRecord::Userdata { value: 2726 });
    assert_eq!(w.write_error(), None);
}
