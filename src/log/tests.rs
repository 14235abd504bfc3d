//! Golden bytes of every record type. The expected bytes are laid out here
//! field by field at the offsets of FreeBSD 14's `sys/sys/pmclog.h`
//! (PMC_VERSION 0x0A000000; the V6 structs: `PMCLOG_ENTRY_HEADER` is `u32 pl_header; u32
//! pl_spare; u64 pl_tsc`, 16 bytes, and every struct is `__packed`), with
//! the lengths hwpmc_logging.c writes (`_PMCLOG_RESERVE` rounds up to
//! `sizeof(uint32_t)`; variable records are `offsetof(pl_pathname) +
//! strlen + 1`). They are never produced by our encoder.

use proptest::prelude::*;

use super::cpu::{self, CpuIdentity};
use super::*;

/// A record laid out by hand: header at 0, spare at 4, timestamp at 8,
/// fields at their struct offsets; unset bytes are `fill` (0 for what we
/// write, garbage for what hwpmc leaves uninitialised).
struct Golden(Vec<u8>);

impl Golden {
    fn new(kind: u8, len: usize, ts: u64, fill: u8) -> Golden {
        let mut b = vec![fill; len];
        // _PMCLOG_TO_HEADER: (PMCLOG_HEADER_MAGIC << 24) | (T << 16) | (L & 0xFFFF)
        let header = (0xEEu32 << 24) | (u32::from(kind) << 16) | len as u32;
        b[0..4].copy_from_slice(&header.to_ne_bytes());
        b[8..16].copy_from_slice(&ts.to_ne_bytes());
        Golden(b)
    }
    fn u32(mut self, at: usize, v: u32) -> Golden {
        self.0[at..at + 4].copy_from_slice(&v.to_ne_bytes());
        self
    }
    fn u64(mut self, at: usize, v: u64) -> Golden {
        self.0[at..at + 8].copy_from_slice(&v.to_ne_bytes());
        self
    }
    /// `s` then NUL padding up to `field` bytes.
    fn chars(mut self, at: usize, s: &str, field: usize) -> Golden {
        self.0[at..at + field].fill(0);
        self.0[at..at + s.len()].copy_from_slice(s.as_bytes());
        self
    }
    fn bytes(mut self, at: usize, b: &[u8]) -> Golden {
        self.0[at..at + b.len()].copy_from_slice(b);
        self
    }
}

/// (record, its golden bytes as we write them: pads and spare zero).
fn golden_records() -> Vec<(LogRecord, Vec<u8>)> {
    use LogRecord::*;
    const TS: u64 = 0x0102_0304_0506_0708;
    vec![
        // struct pmclog_closelog: header only (CTASSERT 3 * 4 + TSDELTA = 16).
        (Closelog, Golden::new(kind::CLOSELOG, 16, TS, 0).0),
        // struct pmclog_dropnotify: header only; our lost count in pl_spare (4).
        (
            Dropnotify { lost: Some(17) },
            Golden::new(kind::DROPNOTIFY, 16, TS, 0).u32(4, 17).0,
        ),
        // struct pmclog_initialize: pl_version 16, pl_cpu 20, pl_tsc_freq 24,
        // pl_ts 32 (tv_sec) / 40 (tv_nsec), pl_cpuid[PMC_CPUID_LEN=64] 48;
        // sizeof = 112. The origin mark fills pl_cpuid[56..64].
        (
            Initialize {
                version: 0x0A00_0000,
                arch: 0x01,
                tsc_freq: 1_000_000_000,
                time_sec: 1_700_000_000,
                time_nsec: 5,
                cpuid: "AuthenticAMD-25-11-1".into(),
                marked: true,
            },
            Golden::new(kind::INITIALIZE, 112, TS, 0)
                .u32(16, 0x0A00_0000)
                .u32(20, 0x01)
                .u64(24, 1_000_000_000)
                .u64(32, 1_700_000_000)
                .u64(40, 5)
                .chars(48, "AuthenticAMD-25-11-1", 64)
                .bytes(104, b"pmc-rs1\0")
                .0,
        ),
        // struct pmclog_pmcallocate: pl_pmcid 16, pl_event 20, pl_flags 24,
        // pl_pad 28, pl_rate 32; CTASSERT 9 * 4 + TSDELTA = 40.
        (
            PmcAllocate {
                pmcid: 0x100,
                event: 3,
                flags: 0x80,
                rate: 65536,
            },
            Golden::new(kind::PMCALLOCATE, 40, TS, 0)
                .u32(16, 0x100)
                .u32(20, 3)
                .u32(24, 0x80)
                .u64(32, 65536)
                .0,
        ),
        // struct pmclog_pmcallocatedyn: pl_pmcid 16, pl_event 20, pl_flags
        // 24, pl_pad 28, pl_evname[PMC_NAME_MAX=64] 32; sizeof = 96.
        (
            PmcAllocateDyn {
                pmcid: 0x101,
                event: 0,
                flags: 0x4,
                name: "instructions,usr".into(),
            },
            Golden::new(kind::PMCALLOCATEDYN, 96, TS, 0)
                .u32(16, 0x101)
                .u32(24, 0x4)
                .chars(32, "instructions,usr", 64)
                .0,
        ),
        // struct pmclog_pmcattach: pl_pmcid 16, pl_pid 20, pl_pathname 24;
        // 24 + strlen("/usr/bin/true") + 1 = 38, rounded up to 40.
        (
            PmcAttach {
                pmcid: 0x100,
                pid: 42,
                path: "/usr/bin/true".into(),
            },
            Golden::new(kind::PMCATTACH, 40, TS, 0)
                .u32(16, 0x100)
                .u32(20, 42)
                .chars(24, "/usr/bin/true", 16)
                .0,
        ),
        // struct pmclog_pmcdetach: pl_pmcid 16, pl_pid 20; 24.
        (
            PmcDetach {
                pmcid: 0x100,
                pid: 42,
            },
            Golden::new(kind::PMCDETACH, 24, TS, 0)
                .u32(16, 0x100)
                .u32(20, 42)
                .0,
        ),
        // struct pmclog_proccsw (V6): pl_value 16, pl_pmcid 24, pl_pid 28,
        // pl_tid 32, pl_pad 36; CTASSERT 7 * 4 + 8 + TSDELTA = 40.
        (
            ProcCsw {
                pmcid: 0x100,
                value: 0x1122_3344_5566_7788,
                pid: 42,
                tid: 43,
            },
            Golden::new(kind::PROCCSW, 40, TS, 0)
                .u64(16, 0x1122_3344_5566_7788)
                .u32(24, 0x100)
                .u32(28, 42)
                .u32(32, 43)
                .0,
        ),
        // struct pmclog_procexec (FreeBSD 14 and 15, sys/sys/pmclog.h of
        // main, whose libpmc pmclog.h names them pl_baseaddr/pl_dynaddr):
        // pl_pid 16, pl_pmcid 20, pl_base 24, pl_dyn 32, pl_pathname 40;
        // 40 + strlen("/bin/sh") + 1 = 48.
        (
            ProcExec {
                pid: 42,
                pmcid: 0x100,
                entry: 0x8000_1000,
                dynaddr: 0x2000_0000,
                path: "/bin/sh".into(),
            },
            Golden::new(kind::PROCEXEC, 48, TS, 0)
                .u32(16, 42)
                .u32(20, 0x100)
                .u64(24, 0x8000_1000)
                .u64(32, 0x2000_0000)
                .chars(40, "/bin/sh", 8)
                .0,
        ),
        // struct pmclog_procexit: pl_pmcid 16, pl_pid 20, pl_value 24;
        // CTASSERT 5 * 4 + 8 + TSDELTA = 32.
        (
            ProcExit {
                pmcid: 0x100,
                pid: 42,
                value: 99,
            },
            Golden::new(kind::PROCEXIT, 32, TS, 0)
                .u32(16, 0x100)
                .u32(20, 42)
                .u64(24, 99)
                .0,
        ),
        // struct pmclog_procfork: pl_oldpid 16, pl_newpid 20; 24.
        (
            ProcFork {
                oldpid: 42,
                newpid: 44,
            },
            Golden::new(kind::PROCFORK, 24, TS, 0)
                .u32(16, 42)
                .u32(20, 44)
                .0,
        ),
        // struct pmclog_sysexit: pl_pid 16, pl_pad 20; CTASSERT 6 * 4 = 24.
        (
            SysExit { pid: 44 },
            Golden::new(kind::SYSEXIT, 24, TS, 0).u32(16, 44).0,
        ),
        // struct pmclog_userdata: pl_userdata 16, pl_pad 20; 24.
        (
            Userdata { value: 0xdead },
            Golden::new(kind::USERDATA, 24, TS, 0).u32(16, 0xdead).0,
        ),
        // struct pmclog_map_in: pl_pid 16, pl_pad 20, pl_start 24,
        // pl_pathname 32; 32 + strlen("/lib/libc.so.6") + 1 = 47 -> 48.
        (
            MapIn {
                pid: 42,
                start: 0x7f00_0000_0000,
                path: "/lib/libc.so.6".into(),
            },
            Golden::new(kind::MAP_IN, 48, TS, 0)
                .u32(16, 42)
                .u64(24, 0x7f00_0000_0000)
                .chars(32, "/lib/libc.so.6", 16)
                .0,
        ),
        // The kernel's: pid -1 (pmc_log_kernel_mappings); 32 + 5 + 1 -> 40.
        (
            MapIn {
                pid: u32::MAX,
                start: 0xffff_ffff_8100_0000,
                path: "/boot".into(),
            },
            Golden::new(kind::MAP_IN, 40, TS, 0)
                .u32(16, u32::MAX)
                .u64(24, 0xffff_ffff_8100_0000)
                .chars(32, "/boot", 8)
                .0,
        ),
        // struct pmclog_map_out: pl_pid 16, pl_pad 20, pl_start 24, pl_end
        // 32; 40.
        (
            MapOut {
                pid: 42,
                start: 0x1000,
                end: 0x2000,
            },
            Golden::new(kind::MAP_OUT, 40, TS, 0)
                .u32(16, 42)
                .u64(24, 0x1000)
                .u64(32, 0x2000)
                .0,
        ),
        // struct pmclog_callchain: pl_pid 16, pl_tid 20, pl_pmcid 24,
        // pl_cpuflags 28 (PMC_CALLCHAIN_TO_CPUFLAGS(cpu, PMC_CC_F_USERSPACE)
        // = cpu << 16 | 1), pl_pc[] 32; 32 + 3 * 8 = 56.
        (
            Callchain {
                pid: 42,
                tid: 43,
                pmcid: 0x100,
                cpu: 3,
                userspace: true,
                pcs: vec![0x40_1000, 0x40_1234, 0x7f00_0000_1000],
            },
            Golden::new(kind::CALLCHAIN, 56, TS, 0)
                .u32(16, 42)
                .u32(20, 43)
                .u32(24, 0x100)
                .u32(28, (3 << 16) | 1)
                .u64(32, 0x40_1000)
                .u64(40, 0x40_1234)
                .u64(48, 0x7f00_0000_1000)
                .0,
        ),
        // struct pmclog_threadcreate: pl_tid 16, pl_pid 20, pl_flags 24,
        // pl_pad 28, pl_tdname[MAXCOMLEN + 1 = 20] 32; sizeof = 52.
        (
            ThrCreate {
                tid: 43,
                pid: 42,
                flags: 0x10,
                name: "worker".into(),
            },
            Golden::new(kind::THR_CREATE, 52, TS, 0)
                .u32(16, 43)
                .u32(20, 42)
                .u32(24, 0x10)
                .chars(32, "worker", 20)
                .0,
        ),
        // struct pmclog_threadexit: pl_tid 16, pl_pad 20; 24.
        (
            ThrExit { tid: 43 },
            Golden::new(kind::THR_EXIT, 24, TS, 0).u32(16, 43).0,
        ),
        // struct pmclog_proccreate: pl_pid 16, pl_flags 20,
        // pl_pcomm[MAXCOMLEN + 1 = 20] 24; sizeof = 44 (a multiple of 4,
        // not of 8: hwpmc writes it as is).
        (
            ProcCreate {
                pid: 42,
                flags: 0x4000,
                name: "true".into(),
            },
            Golden::new(kind::PROC_CREATE, 44, TS, 0)
                .u32(16, 42)
                .u32(20, 0x4000)
                .chars(24, "true", 20)
                .0,
        ),
    ]
}

#[test]
fn every_record_type_encodes_to_the_header_layout() {
    let covered: std::collections::BTreeSet<u8> =
        golden_records().iter().map(|(r, _)| r.kind()).collect();
    let all = [
        1u8, 2, 3, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20,
    ];
    assert_eq!(covered, all.into_iter().collect(), "every enum pmclog_type");
    for (record, golden) in golden_records() {
        let mut bytes = Vec::new();
        record.encode(0x0102_0304_0506_0708, &mut bytes);
        assert_eq!(bytes, golden, "{record:?}");
    }
}

#[test]
fn every_record_type_decodes_from_the_header_layout() {
    for (record, golden) in golden_records() {
        let (ts, got) = LogRecord::decode(&golden, 0).unwrap();
        assert_eq!(ts, 0x0102_0304_0506_0708);
        assert_eq!(got, record);
    }
}

/// hwpmc_logging.c never writes pl_spare nor the pl_pad of SYSEXIT,
/// USERDATA and THR_EXIT (`PMCLOG_EMIT32` of the real fields only), and
/// its buffers are reused: FreeBSD's records carry whatever was there.
#[test]
fn uninitialised_spare_and_pad_words_are_ignored() {
    use LogRecord::*;
    let garbage = 0xA5;
    let ts = 77;
    let stream: Vec<(LogRecord, Vec<u8>)> = vec![
        (
            SysExit { pid: 44 },
            Golden::new(kind::SYSEXIT, 24, ts, garbage).u32(16, 44).0,
        ),
        (
            Userdata { value: 9 },
            Golden::new(kind::USERDATA, 24, ts, garbage).u32(16, 9).0,
        ),
        (
            ThrExit { tid: 43 },
            Golden::new(kind::THR_EXIT, 24, ts, garbage).u32(16, 43).0,
        ),
        (
            ProcCsw {
                pmcid: 1,
                value: 5,
                pid: 2,
                tid: 3,
            },
            Golden::new(kind::PROCCSW, 40, ts, garbage)
                .u64(16, 5)
                .u32(24, 1)
                .u32(28, 2)
                .u32(32, 3)
                .0,
        ),
        // Untrusted (no INITIALIZE with our mark): no lost count.
        (
            Dropnotify { lost: None },
            Golden::new(kind::DROPNOTIFY, 16, ts, garbage).0,
        ),
    ];
    let mut reader = LogReader::from_memory();
    for (_, bytes) in &stream {
        reader.feed(bytes);
    }
    for (want, _) in stream {
        match reader.read() {
            ReadState::Ok(e) => assert_eq!(e.record, want),
            other => panic!("{other:?}"),
        }
    }
}

/// A log that hwpmc wrote: INITIALIZE with `pmc_cpuid` zero-filled past
/// its string (a static `char[PMC_CPUID_LEN]`), then a DROPNOTIFY whose
/// spare word is stale: the count is not believed. After our mark, it is.
#[test]
fn dropnotify_counts_are_believed_only_in_our_logs() {
    let freebsd_init = Golden::new(kind::INITIALIZE, 112, 0, 0)
        .u32(16, 0x0903_0000)
        .u32(20, 0x99)
        .u64(24, 2_100_000_000)
        .chars(48, "GenuineIntel-6-55-4", 64)
        .0;
    let drop = Golden::new(kind::DROPNOTIFY, 16, 1, 0).u32(4, 12345).0;
    let mut r = LogReader::from_memory();
    r.feed(&freebsd_init);
    r.feed(&drop);
    match r.read() {
        ReadState::Ok(e) => assert!(
            matches!(&e.record, LogRecord::Initialize { marked: false, cpuid, .. } if cpuid == "GenuineIntel-6-55-4"),
            "{e:?}"
        ),
        other => panic!("{other:?}"),
    }
    assert!(!r.is_from_this_crate());
    assert!(
        matches!(r.read(), ReadState::Ok(e) if e.record == LogRecord::Dropnotify { lost: None })
    );

    let mut ours = LogWriter::new(
        Vec::new(),
        &CpuIdentity {
            cputype: 0x99,
            cpuid: "GenuineIntel-6-55-4".into(),
        },
    )
    .unwrap();
    ours.write(&LogRecord::Dropnotify { lost: Some(12345) }, 1)
        .unwrap();
    ours.flush().unwrap();
    let mut r = LogReader::from_reader(std::io::Cursor::new(ours.into_inner()));
    assert!(matches!(r.read(), ReadState::Ok(_)));
    assert!(r.is_from_this_crate());
    assert!(
        matches!(r.read(), ReadState::Ok(e) if e.record == LogRecord::Dropnotify { lost: Some(12345) })
    );
}

/// FreeBSD 12–13's `struct pmclog_procexec` (sys/sys/pmclog.h at
/// PMC_VERSION 0x09030000, e.g. releng 13.2): pl_pid 16, pl_pmcid 20,
/// pl_start 24, pl_pathname 32 (libpmc's `pl_entryaddr`), in a log whose
/// INITIALIZE says 0x09030000; then the same stream switching to
/// FreeBSD 14's two addresses after an INITIALIZE of 0x0A000000.
#[test]
fn procexec_follows_the_logs_version() {
    let init = |version| {
        Golden::new(kind::INITIALIZE, 112, 0, 0)
            .u32(16, version)
            .u32(20, 0x01)
            .chars(48, "AuthenticAMD-25-11-1", 64)
            .0
    };
    let exec13 = Golden::new(kind::PROCEXEC, 40, 1, 0)
        .u32(16, 42)
        .u32(20, 0x100)
        .u64(24, 0x40_1000)
        .chars(32, "/bin/sh", 8)
        .0;
    let exec14 = Golden::new(kind::PROCEXEC, 48, 2, 0)
        .u32(16, 43)
        .u32(20, 0x100)
        .u64(24, 0x8000_1000)
        .u64(32, 0x2000_0000)
        .chars(40, "/bin/sh", 8)
        .0;
    let mut r = LogReader::from_memory();
    for part in [init(0x0903_0000), exec13, init(0x0A00_0000), exec14] {
        r.feed(&part);
    }
    assert!(matches!(r.read(), ReadState::Ok(_)));
    assert_eq!(r.version(), PMC_VERSION_9);
    let exec = |r: &mut LogReader| match r.read() {
        ReadState::Ok(e) => e.record,
        other => panic!("{other:?}"),
    };
    assert_eq!(
        exec(&mut r),
        LogRecord::ProcExec {
            pid: 42,
            pmcid: 0x100,
            entry: 0x40_1000,
            dynaddr: 0,
            path: "/bin/sh".into()
        }
    );
    assert!(matches!(r.read(), ReadState::Ok(_)));
    assert_eq!(r.version(), PMC_VERSION);
    assert_eq!(
        exec(&mut r),
        LogRecord::ProcExec {
            pid: 43,
            pmcid: 0x100,
            entry: 0x8000_1000,
            dynaddr: 0x2000_0000,
            path: "/bin/sh".into()
        }
    );
}

/// Records of 4-byte-multiple lengths follow each other without 8-byte
/// padding (PMCATTACH of "/a": 24 + 3 = 27 -> 28; PROC_CREATE: 44).
#[test]
fn four_byte_aligned_records_stream() {
    let attach = Golden::new(kind::PMCATTACH, 28, 1, 0)
        .u32(16, 7)
        .u32(20, 8)
        .chars(24, "/a", 4)
        .0;
    let create = Golden::new(kind::PROC_CREATE, 44, 2, 0)
        .u32(16, 8)
        .chars(24, "a", 20)
        .0;
    let mut stream = attach.clone();
    stream.extend_from_slice(&create);
    stream.extend_from_slice(&attach);
    let mut r = LogReader::from_memory();
    r.feed(&stream);
    let got: Vec<(u64, u64, u64)> = r
        .by_ref()
        .map(|e| e.unwrap())
        .map(|e| (e.offset, e.end_offset, e.count))
        .collect();
    // libpmc: pl_offset = ps_offset += evlen; pl_count = ++ps_count.
    assert_eq!(got, vec![(0, 28, 1), (28, 72, 2), (72, 100, 3)]);
}

/// A complete log read from a file ends the iteration cleanly: EOF on a
/// record boundary is the end (pmclog.c `pmclog_read`: PMCLOG_EOF), not a
/// truncated record; `offset`/`count` are libpmc's `ps_offset`/`ps_count`.
#[test]
fn a_complete_file_ends_on_a_record_boundary() {
    let (_, userdata) = &golden_records()[12];
    let (_, proccsw) = &golden_records()[7];
    let mut bytes = userdata.clone();
    bytes.extend_from_slice(proccsw);
    let mut r = LogReader::from_reader(std::io::Cursor::new(bytes.clone()));
    let events: Vec<_> = (&mut r).collect();
    assert_eq!(events.len(), 2, "{events:?}");
    assert!(events.iter().all(Result::is_ok), "{events:?}");
    assert_eq!(r.offset(), bytes.len() as u64);
    assert_eq!(r.records_read(), 2);
    assert_eq!(r.read(), ReadState::Eof);
}

/// lib/libpmc/pmclog.c `pmclog_read`: a file read that returns 0 bytes is
/// PMCLOG_EOF even inside a record, and the saved partial record goes on
/// when the next read brings the rest (a profiler tailing a live log).
#[test]
fn a_log_being_written_is_tailed_not_corrupt() {
    #[derive(Clone, Default)]
    struct Growing(std::sync::Arc<std::sync::Mutex<(Vec<u8>, usize)>>);
    impl std::io::Read for Growing {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let mut g = self.0.lock().unwrap();
            let (data, pos) = &mut *g;
            let n = buf.len().min(data.len() - *pos);
            buf[..n].copy_from_slice(&data[*pos..*pos + n]);
            *pos += n;
            Ok(n)
        }
    }
    let file = Growing::default();
    let append = |b: &[u8]| file.0.lock().unwrap().0.extend_from_slice(b);
    let (_, userdata) = &golden_records()[12];
    let (_, proccsw) = &golden_records()[7];
    let mut r = LogReader::from_reader(file.clone());
    assert_eq!(r.read(), ReadState::Eof, "empty so far");
    append(&userdata[..10]);
    assert_eq!(r.read(), ReadState::Eof, "inside the header");
    append(&userdata[10..]);
    append(&proccsw[..30]);
    assert!(
        matches!(r.read(), ReadState::Ok(e) if e.record == LogRecord::Userdata { value: 0xdead })
    );
    assert_eq!(r.read(), ReadState::Eof, "inside PROCCSW");
    append(&proccsw[30..]);
    match r.read() {
        ReadState::Ok(e) => {
            assert!(matches!(e.record, LogRecord::ProcCsw { tid: 43, .. }));
            assert_eq!((e.offset, e.end_offset, e.count), (24, 64, 2));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(r.read(), ReadState::Eof);
}

#[test]
fn feeding_byte_by_byte_gives_the_same_events() {
    let mut bytes = Vec::new();
    for (_, g) in golden_records() {
        bytes.extend_from_slice(&g);
    }
    let mut reader = LogReader::from_memory();
    let mut got = Vec::new();
    let mut needs = 0;
    for b in &bytes {
        reader.feed(std::slice::from_ref(b));
        loop {
            match reader.read() {
                ReadState::Ok(e) => got.push(e.record),
                ReadState::RequireData => {
                    needs += 1;
                    break;
                }
                ReadState::Eof => break,
                ReadState::Error(e) => panic!("{e}"),
            }
        }
    }
    // The golden stream starts with CLOSELOG, after which a log is over;
    // its INITIALIZE carries our mark, so the DROPNOTIFY before it (read
    // first) is not believed. Compare from a stream without CLOSELOG.
    assert_eq!(got, vec![LogRecord::Closelog]);
    assert!(needs > 0);

    let mut reader = LogReader::from_memory();
    let mut got = Vec::new();
    let wanted: Vec<LogRecord> = golden_records()
        .into_iter()
        .skip(2)
        .map(|(r, _)| r)
        .collect();
    for (_, g) in golden_records().into_iter().skip(2) {
        for b in &g {
            reader.feed(std::slice::from_ref(b));
            if let ReadState::Ok(e) = reader.read() {
                got.push(e.record);
            }
        }
    }
    assert_eq!(got, wanted);
}

#[test]
fn truncation_and_corruption_are_errors_with_offsets() {
    let mut bytes = Vec::new();
    LogRecord::Userdata { value: 1 }.encode(0, &mut bytes);
    LogRecord::ProcFork {
        oldpid: 1,
        newpid: 2,
    }
    .encode(0, &mut bytes);
    let cut = bytes[..bytes.len() - 4].to_vec();
    // A whole file read as an iterator: nothing more will come.
    let mut r = LogReader::from_reader(std::io::Cursor::new(cut.clone()));
    assert!(matches!(r.next(), Some(Ok(_))));
    match r.next() {
        Some(Err(e @ ReadError::Truncated { offset: 24, .. })) => {
            assert!(e.to_string().contains("ends inside"), "{e}")
        }
        other => panic!("{other:?}"),
    }
    let mut m = LogReader::from_memory();
    m.feed(&cut);
    assert!(matches!(m.read(), ReadState::Ok(_)));
    assert_eq!(m.read(), ReadState::RequireData);
    let mut bad = bytes.clone();
    bad[27] = 0x11; // magic of the second record (high byte, little endian)
    let mut r = LogReader::from_memory();
    r.feed(&bad);
    assert!(matches!(r.read(), ReadState::Ok(_)));
    let first = r.read();
    assert!(
        matches!(
            &first,
            ReadState::Error(ReadError::BadMagic {
                offset: 24,
                magic: 0x11
            })
        ),
        "{first:?}"
    );
    r.feed(&bytes);
    assert_eq!(r.read(), first, "errors are sticky");
    // PMCLOG_GET_PATHLEN: a path field longer than PATH_MAX is an error.
    let long = Golden::new(kind::MAP_IN, 32 + 1028, 0, b'a').0;
    assert!(LogRecord::decode(&long, 0).is_err());
}

#[test]
fn writer_starts_with_initialize_and_ends_with_closelog() {
    let cpu = CpuIdentity {
        cputype: cpu::PMC_CPU_AMD_K8,
        cpuid: "AuthenticAMD-25-11-1".into(),
    };
    let mut w = LogWriter::new(Vec::new(), &cpu).unwrap();
    w.writelog(7, 1).unwrap();
    w.close().unwrap();
    assert!(
        w.write(&LogRecord::Dropnotify { lost: Some(1) }, 0)
            .is_err(),
        "closed logs refuse writes"
    );
    let bytes = w.into_inner();
    let events: Vec<LogEvent> = LogReader::from_reader(std::io::Cursor::new(bytes))
        .map(|e| e.unwrap())
        .collect();
    let kinds: Vec<u8> = events.iter().map(|e| e.record.kind()).collect();
    assert_eq!(
        kinds,
        vec![kind::INITIALIZE, kind::USERDATA, kind::CLOSELOG]
    );
    match &events[0].record {
        LogRecord::Initialize {
            version,
            arch,
            tsc_freq,
            cpuid,
            marked,
            ..
        } => {
            // sys/sys/pmc.h of FreeBSD 14 and main: PMC_VERSION_MAJOR 0x0A,
            // MINOR 0x00, PATCH 0.
            assert_eq!(*version, 0x0A00_0000);
            assert_eq!(*arch, 0x01);
            // Our timestamps are nanoseconds.
            assert_eq!(*tsc_freq, 1_000_000_000);
            assert_eq!(cpuid, "AuthenticAMD-25-11-1");
            assert!(*marked);
        }
        other => panic!("{other:?}"),
    }
}

/// hwpmc's log kthread keeps the first write error (`po_error`) and
/// `pmclog_flush` returns it: a full device gives ENOSPC at flush, every
/// time, and later records are dropped rather than piling up.
#[test]
fn a_write_error_reaches_flush_with_its_errno() {
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .expect("/dev/full exists on Linux");
    let mut w = LogWriter::new(full, &cpu::CpuIdentity::unknown()).unwrap();
    w.writelog(1, 1).unwrap();
    let e = w.flush().unwrap_err();
    assert_eq!(e.os_errno(), Some(libc::ENOSPC), "{e}");
    assert!(e.to_string().contains("free space"), "{e}");
    w.writelog(2, 2).unwrap();
    assert_eq!(w.flush().unwrap_err().os_errno(), Some(libc::ENOSPC));
    assert_eq!(w.write_error(), Some(libc::ENOSPC));
}

/// `LogWriter::error` tells the failure without writing: nothing before
/// the first write out, the flush's error after it.
#[test]
fn a_write_error_is_told_without_writing() {
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .expect("/dev/full exists on Linux");
    let mut w = LogWriter::new(full, &cpu::CpuIdentity::unknown()).unwrap();
    w.writelog(1, 1).unwrap();
    assert!(w.error().is_none(), "nothing was written yet");
    let flushed = w.flush().unwrap_err().to_string();
    let told = w.error().expect("the write error, kept");
    assert_eq!(told.os_errno(), Some(libc::ENOSPC), "{told}");
    assert_eq!(told.to_string(), flushed);
}

/// usr.sbin/pmcstat/pmcstat_log.c `pmcstat_print_log` through pmcstat.h
/// `PMCSTAT_PRINT_ENTRY` (`"%-9s"`, `" "`, the record's format).
#[test]
fn text_form_matches_pmcstat_r() {
    let cc = LogRecord::Callchain {
        pid: 5,
        tid: 6,
        pmcid: 0x100,
        cpu: 1,
        userspace: true,
        pcs: vec![0x10, 0x20],
    };
    // "callchain" "%d 0x%x %d %d %c", then "..." "%p" per pc.
    assert_eq!(
        cc.to_string(),
        "callchain 5 0x100 1 2 u\n...       0x10\n...       0x20"
    );
    // "map-in" "%d %p \"%s\"".
    assert_eq!(
        LogRecord::MapIn {
            pid: u32::MAX,
            start: 0x1000,
            path: "k".into()
        }
        .to_string(),
        "map-in    -1 0x1000 \"k\""
    );
    // "exitval" "0x%x %d %jd".
    assert_eq!(
        LogRecord::ProcExit {
            pmcid: 1,
            pid: 2,
            value: 3
        }
        .to_string(),
        "exitval   0x1 2 3"
    );
    // "closelog" with no fields: the padded type, then the " ".
    assert_eq!(LogRecord::Closelog.to_string(), "closelog  ");
}

/// hwpmc_intel.c `pmc_intel_initialize` and hwpmc_amd.c
/// `pmc_amd_initialize`: `"%s-%d-%02X-%X"` of vendor, family, model,
/// stepping; cputypes from sys/sys/pmc.h `__PMC_CPUS`.
#[test]
fn cpu_identity_is_hwpmcs() {
    // Skylake-SP: family 6, model 0x55 (85), stepping 4.
    assert_eq!(
        cpu::hwpmc_cpuid("GenuineIntel", 6, 85, 4),
        "GenuineIntel-6-55-4"
    );
    assert_eq!(cpu::pmc_cputype("GenuineIntel", 6, 0x55, 4), 0x99); // INTEL_SKYLAKE_XEON
    assert_eq!(cpu::pmc_cputype("GenuineIntel", 6, 0x9E, 0), 0x98); // INTEL_SKYLAKE
    assert_eq!(cpu::pmc_cputype("GenuineIntel", 6, 0x97, 0), 0x9D); // INTEL_ALDERLAKE
    // Sapphire Rapids (0x8F) is not in hwpmc's table: Generic.
    assert_eq!(cpu::pmc_cputype("GenuineIntel", 6, 0x8F, 0), 0x400);
    // Zen 4 (Genoa): family 25, model 0x11 (17), stepping 1; every AMD
    // CPU of base family 0xF is PMC_CPU_AMD_K8.
    assert_eq!(
        cpu::hwpmc_cpuid("AuthenticAMD", 25, 17, 1),
        "AuthenticAMD-25-11-1"
    );
    assert_eq!(cpu::pmc_cputype("AuthenticAMD", 25, 17, 1), 0x01);
    assert_eq!(cpu::pmc_cputype("HygonGenuine", 24, 0, 0), 0x01);
    assert_eq!(cpu::pmc_cputype("CentaurHauls", 6, 15, 0), 0x400);
    // hwpmc_arm64.c: MIDR_EL1 without variant and revision, "0x%016lx".
    assert_eq!(cpu::hwpmc_cpuid_arm64(0x413f_d0c1), "0x00000000410fd0c0");
    // hwpmc_arm64.c pmc_arm64_initialize: A76/N1 → PMC_CPU_ARMV8_CORTEX_A76
    // (0x602), A57/A72 → _A57 (0x601), the rest → _A53 (0x600,
    // sys/sys/pmc.h __PMC_CPUS); MIDR parts D0B, D0C, D07, D08, D03.
    assert_eq!(cpu::arm64_cputype(0x413f_d0c1), 0x602); // Neoverse-N1
    assert_eq!(cpu::arm64_cputype(0x414f_d0b0), 0x602); // Cortex-A76
    assert_eq!(cpu::arm64_cputype(0x411f_d071), 0x601); // Cortex-A57
    assert_eq!(cpu::arm64_cputype(0x410f_d083), 0x601); // Cortex-A72
    assert_eq!(cpu::arm64_cputype(0x410f_d034), 0x600); // Cortex-A53
    assert_eq!(cpu::arm64_cputype(0x000f_0510), 0x600); // QEMU -cpu max
    // perf's arm64 cpuid string is MIDR as 0x%016x; x86's is no MIDR.
    assert_eq!(cpu::midr("0x00000000410fd0b0"), Some(0x410f_d0b0));
    assert_eq!(cpu::midr("GenuineIntel-6-55-4"), None);
    assert_eq!(cpu::arm64_cputype(0x610f_0000), 0x600); // Apple: not Arm Ltd
    assert_eq!(cpu::arm64_cputype(0x460f_d0c0), 0x600); // Fujitsu, same part
    let cpuinfo = "processor\t: 0\nvendor_id\t: GenuineIntel\ncpu family\t: 6\n\
                   model\t\t: 85\nmodel name\t: Intel(R) Xeon(R)\nstepping\t: 4\n";
    assert_eq!(
        cpu::identity_from_cpuinfo(cpuinfo),
        Some(CpuIdentity {
            cputype: 0x99,
            cpuid: "GenuineIntel-6-55-4".into()
        })
    );
}

fn any_record() -> impl Strategy<Value = LogRecord> {
    let s = "[a-zA-Z0-9/._ -]{0,40}";
    prop_oneof![
        (any::<u32>(), any::<u32>(), any::<u32>(), any::<u64>()).prop_map(
            |(pmcid, event, flags, rate)| LogRecord::PmcAllocate {
                pmcid,
                event,
                flags,
                rate
            }
        ),
        (any::<u32>(), any::<u32>(), s).prop_map(|(pmcid, pid, path)| LogRecord::PmcAttach {
            pmcid,
            pid,
            path
        }),
        (any::<u32>(), any::<u64>(), any::<u32>(), any::<u32>()).prop_map(
            |(pmcid, value, pid, tid)| LogRecord::ProcCsw {
                pmcid,
                value,
                pid,
                tid
            }
        ),
        (any::<u32>(), any::<u64>(), s).prop_map(|(pid, start, path)| LogRecord::MapIn {
            pid,
            start,
            path
        }),
        (
            any::<u32>(),
            any::<u32>(),
            any::<u32>(),
            any::<u16>(),
            any::<bool>(),
            proptest::collection::vec(any::<u64>(), 0..40)
        )
            .prop_map(
                |(pid, tid, pmcid, cpu, userspace, pcs)| LogRecord::Callchain {
                    pid,
                    tid,
                    pmcid,
                    cpu,
                    userspace,
                    pcs
                }
            ),
        (any::<u32>(), any::<u32>(), any::<u32>(), "[a-z0-9,=]{0,60}").prop_map(
            |(pmcid, event, flags, name)| LogRecord::PmcAllocateDyn {
                pmcid,
                event,
                flags,
                name
            }
        ),
        (any::<u32>(), any::<u32>(), "[a-z]{0,19}")
            .prop_map(|(pid, flags, name)| { LogRecord::ProcCreate { pid, flags, name } }),
        any::<u32>().prop_map(|value| LogRecord::Userdata { value }),
    ]
}

proptest! {
    /// Consistency of writer and reader over arbitrary field values (the
    /// layouts themselves are pinned by the golden tests above).
    #[test]
    fn random_records_read_back(records in proptest::collection::vec((any_record(), any::<u64>()), 0..20)) {
        let mut bytes = Vec::new();
        for (r, ts) in &records {
            r.encode(*ts, &mut bytes);
        }
        let mut reader = LogReader::from_memory();
        reader.feed(&bytes);
        let got: Vec<_> = reader.map(|e| { let e = e.unwrap(); (e.record, e.timestamp) }).collect();
        prop_assert_eq!(got, records);
    }

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
        let mut reader = LogReader::from_memory();
        reader.feed(&bytes);
        for _ in reader.by_ref() {}
        let mut r = LogReader::from_reader(std::io::Cursor::new(bytes));
        for _ in r.by_ref() {}
    }
}

mod cpu_models;
mod edges;

/// A writer closed without a time stamps CLOSELOG with the latest
/// timestamp it wrote (the log stays in time order); one given an earlier
/// time does the same.
#[test]
fn closelog_is_never_stamped_before_the_records_it_follows() {
    for close_at in [None, Some(10), Some(900)] {
        let mut w = LogWriter::new(Vec::new(), &CpuIdentity::unknown()).unwrap();
        w.writelog(1, 500).unwrap();
        w.writelog(2, 300).unwrap();
        match close_at {
            None => w.close().unwrap(),
            Some(t) => w.close_at(t).unwrap(),
        }
        let bytes = w.into_inner();
        let events: Vec<LogEvent> = LogReader::from_reader(std::io::Cursor::new(bytes))
            .collect::<Result<_, _>>()
            .unwrap();
        let last = events.last().unwrap();
        assert!(matches!(last.record, LogRecord::Closelog));
        assert_eq!(last.timestamp, close_at.map_or(500, |t| t.max(500)));
    }
}
