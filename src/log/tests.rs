use proptest::prelude::*;

use super::*;

fn every_record() -> Vec<LogRecord> {
    use LogRecord::*;
    vec![
        Initialize {
            version: VERSION,
            arch: 1,
            tsc_freq: 2_000_000_000,
            time_sec: 1_700_000_000,
            time_nsec: 5,
            cpuid: "AuthenticAMD-23-1".into(),
        },
        PmcAllocate {
            pmcid: 0x100,
            event: 3,
            flags: 0x80,
            rate: 65536,
        },
        PmcAllocateDyn {
            pmcid: 0x101,
            event: 0,
            flags: 0,
            name: "instructions,usr".into(),
        },
        PmcAttach {
            pmcid: 0x100,
            pid: 42,
            path: "/usr/bin/true".into(),
        },
        PmcDetach {
            pmcid: 0x100,
            pid: 42,
        },
        ProcCsw {
            pmcid: 0x100,
            value: 1234,
            pid: 42,
            tid: 43,
        },
        ProcExec {
            pid: 42,
            pmcid: 0x100,
            entry: 0x401000,
            path: "/bin/sh".into(),
        },
        ProcExit {
            pmcid: 0x100,
            pid: 42,
            value: 99,
        },
        ProcFork {
            oldpid: 42,
            newpid: 44,
        },
        SysExit { pid: 44 },
        Userdata { value: 0xdead },
        MapIn {
            pid: 42,
            start: 0x7f00_0000_0000,
            path: "/lib/libc.so.6".into(),
        },
        MapIn {
            pid: u32::MAX,
            start: 0xffff_ffff_8100_0000,
            path: "/boot/kernel".into(),
        },
        MapOut {
            pid: 42,
            start: 0x1000,
            end: 0x2000,
        },
        Callchain {
            pid: 42,
            tid: 43,
            pmcid: 0x100,
            cpu: 1,
            userspace: true,
            pcs: vec![0x401000, 0x401234, 0x7f00_0000_1000],
        },
        ThrCreate {
            tid: 43,
            pid: 42,
            flags: 0,
            name: "worker".into(),
        },
        ThrExit { tid: 43 },
        ProcCreate {
            pid: 42,
            flags: 0,
            name: "true".into(),
        },
        Dropnotify { lost: 17 },
        Closelog,
    ]
}

#[test]
fn every_record_type_round_trips() {
    let mut bytes = Vec::new();
    for (i, r) in every_record().iter().enumerate() {
        let before = bytes.len();
        r.encode(i as u64 * 10, &mut bytes);
        assert_eq!((bytes.len() - before) % 8, 0, "{r:?} is padded to 8");
        let header = u32::from_ne_bytes(bytes[before..before + 4].try_into().unwrap());
        assert_eq!(header >> 24, MAGIC);
        assert_eq!(((header >> 16) & 0xff) as u8, r.kind());
        assert_eq!((header & 0xffff) as usize, bytes.len() - before);
    }
    let mut reader = LogReader::from_memory();
    reader.feed(&bytes);
    let mut got = Vec::new();
    loop {
        match reader.read() {
            ReadState::Ok(e) => got.push((e.timestamp, e.record)),
            ReadState::Eof => break,
            other => panic!("{other:?}"),
        }
    }
    let want: Vec<_> = every_record()
        .into_iter()
        .enumerate()
        .map(|(i, r)| (i as u64 * 10, r))
        .collect();
    assert_eq!(got, want);
    assert_eq!(reader.read(), ReadState::Eof, "EOF after CLOSELOG stays");
}

#[test]
fn writer_starts_with_initialize_and_ends_with_closelog() {
    let mut w = LogWriter::new(Vec::new(), "cpu", 0).unwrap();
    w.writelog(7, 1).unwrap();
    w.close().unwrap();
    assert!(
        w.write(&LogRecord::Dropnotify { lost: 1 }, 0).is_err(),
        "closed logs refuse writes"
    );
    let bytes = w.into_inner();
    let reader = LogReader::from_reader(std::io::Cursor::new(bytes));
    let kinds: Vec<u8> = reader.map(|e| e.unwrap().record.kind()).collect();
    assert_eq!(
        kinds,
        vec![kind::INITIALIZE, kind::USERDATA, kind::CLOSELOG]
    );
}

#[test]
fn feeding_byte_by_byte_gives_the_same_events() {
    let mut bytes = Vec::new();
    for r in every_record() {
        r.encode(3, &mut bytes);
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
    assert_eq!(got, every_record());
    assert!(needs > 0);
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
    let mut r = LogReader::from_reader(std::io::Cursor::new(cut.clone()));
    assert!(matches!(r.read(), ReadState::Ok(_)));
    match r.read() {
        ReadState::Error(e) => assert!(e.contains("byte 24") && e.contains("ends inside"), "{e}"),
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
        matches!(&first, ReadState::Error(e) if e.contains("magic") && e.contains("byte 24")),
        "{first:?}"
    );
    r.feed(&bytes);
    assert_eq!(r.read(), first, "errors are sticky");
}

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
    assert_eq!(cc.to_string(), "callchain 5 6 0x100 1 u 2 0x10 0x20");
    assert_eq!(
        LogRecord::MapIn {
            pid: u32::MAX,
            start: 0x1000,
            path: "k".into()
        }
        .to_string(),
        "map-in -1 0x1000 \"k\""
    );
    assert_eq!(
        LogRecord::ProcExit {
            pmcid: 1,
            pid: 2,
            value: 3
        }
        .to_string(),
        "exitval 0x1 2 3"
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
        any::<u32>().prop_map(|value| LogRecord::Userdata { value }),
    ]
}

proptest! {
    #[test]
    fn random_records_round_trip(records in proptest::collection::vec((any_record(), any::<u64>()), 0..20)) {
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
