use proptest::prelude::*;

use super::*;
use crate::attr::{ReadFormat, SampleType};

/// Builds a record: header + body (padded to 8 bytes as the kernel does).
fn rec(record_type: u32, misc: u16, body: &[u8]) -> Vec<u8> {
    let mut body = body.to_vec();
    while !body.len().is_multiple_of(8) {
        body.push(0);
    }
    let size = (8 + body.len()) as u16;
    let mut v = Vec::new();
    v.extend_from_slice(&record_type.to_ne_bytes());
    v.extend_from_slice(&misc.to_ne_bytes());
    v.extend_from_slice(&size.to_ne_bytes());
    v.extend_from_slice(&body);
    v
}

#[derive(Default)]
struct Body(Vec<u8>);

impl Body {
    fn u64(mut self, v: u64) -> Self {
        self.0.extend_from_slice(&v.to_ne_bytes());
        self
    }
    fn u32(mut self, v: u32) -> Self {
        self.0.extend_from_slice(&v.to_ne_bytes());
        self
    }
    fn u16(mut self, v: u16) -> Self {
        self.0.extend_from_slice(&v.to_ne_bytes());
        self
    }
    fn bytes(mut self, b: &[u8]) -> Self {
        self.0.extend_from_slice(b);
        self
    }
    fn str8(self, s: &str) -> Self {
        let mut b = s.as_bytes().to_vec();
        b.push(0);
        while !b.len().is_multiple_of(8) {
            b.push(0);
        }
        self.bytes(&b)
    }
}

fn tid_time_parser() -> RecordParser {
    RecordParser {
        sample_type: SampleType::TID | SampleType::TIME,
        sample_id_all: true,
        ..RecordParser::default()
    }
}

fn trailer(b: Body) -> Body {
    b.u32(11).u32(12).u64(999)
}

fn sid() -> SampleId {
    SampleId {
        pid: Some(11),
        tid: Some(12),
        time: Some(999),
        ..SampleId::default()
    }
}

#[test]
fn every_non_sample_record_type_decodes() {
    let p = tid_time_parser();
    let cases: Vec<(Vec<u8>, Record<'static>)> = vec![
        (
            rec(
                kind::MMAP,
                misc::BIT13,
                &trailer(
                    Body::default()
                        .u32(1)
                        .u32(2)
                        .u64(0x1000)
                        .u64(0x2000)
                        .u64(0)
                        .str8("/lib/a.so"),
                )
                .0,
            ),
            Record::Mmap {
                pid: 1,
                tid: 2,
                addr: 0x1000,
                len: 0x2000,
                pgoff: 0,
                filename: b"/lib/a.so",
                data: true,
                sample_id: sid(),
            },
        ),
        (
            rec(kind::LOST, 0, &trailer(Body::default().u64(7).u64(42)).0),
            Record::Lost {
                id: 7,
                lost: 42,
                sample_id: sid(),
            },
        ),
        (
            rec(
                kind::COMM,
                misc::BIT13,
                &trailer(Body::default().u32(5).u32(5).str8("true")).0,
            ),
            Record::Comm {
                pid: 5,
                tid: 5,
                comm: b"true",
                exec: true,
                sample_id: sid(),
            },
        ),
        (
            rec(
                kind::EXIT,
                0,
                &trailer(Body::default().u32(5).u32(1).u32(5).u32(1).u64(77)).0,
            ),
            Record::Exit {
                pid: 5,
                ppid: 1,
                tid: 5,
                ptid: 1,
                time: 77,
                sample_id: sid(),
            },
        ),
        (
            rec(
                kind::FORK,
                0,
                &trailer(Body::default().u32(6).u32(5).u32(6).u32(5).u64(78)).0,
            ),
            Record::Fork {
                pid: 6,
                ppid: 5,
                tid: 6,
                ptid: 5,
                time: 78,
                sample_id: sid(),
            },
        ),
        (
            rec(
                kind::THROTTLE,
                0,
                &trailer(Body::default().u64(1).u64(2).u64(3)).0,
            ),
            Record::Throttle {
                time: 1,
                id: 2,
                stream_id: 3,
                sample_id: sid(),
            },
        ),
        (
            rec(
                kind::UNTHROTTLE,
                0,
                &trailer(Body::default().u64(1).u64(2).u64(3)).0,
            ),
            Record::Unthrottle {
                time: 1,
                id: 2,
                stream_id: 3,
                sample_id: sid(),
            },
        ),
        (
            rec(
                kind::AUX,
                0,
                &trailer(Body::default().u64(1).u64(2).u64(3)).0,
            ),
            Record::Aux {
                aux_offset: 1,
                aux_size: 2,
                flags: 3,
                sample_id: sid(),
            },
        ),
        (
            rec(
                kind::ITRACE_START,
                0,
                &trailer(Body::default().u32(1).u32(2)).0,
            ),
            Record::ItraceStart {
                pid: 1,
                tid: 2,
                sample_id: sid(),
            },
        ),
        (
            rec(kind::LOST_SAMPLES, 0, &trailer(Body::default().u64(9)).0),
            Record::LostSamples {
                lost: 9,
                sample_id: sid(),
            },
        ),
        (
            rec(
                kind::SWITCH,
                misc::BIT13 | misc::BIT14,
                &trailer(Body::default()).0,
            ),
            Record::Switch {
                out: true,
                preempt: true,
                sample_id: sid(),
            },
        ),
        (
            rec(
                kind::SWITCH_CPU_WIDE,
                0,
                &trailer(Body::default().u32(3).u32(4)).0,
            ),
            Record::SwitchCpuWide {
                next_prev_pid: 3,
                next_prev_tid: 4,
                out: false,
                preempt: false,
                sample_id: sid(),
            },
        ),
        (
            rec(
                kind::KSYMBOL,
                0,
                &trailer(
                    Body::default()
                        .u64(0xffff)
                        .u32(16)
                        .u16(1)
                        .u16(0)
                        .str8("bpf_prog"),
                )
                .0,
            ),
            Record::Ksymbol {
                addr: 0xffff,
                len: 16,
                ksym_type: 1,
                flags: 0,
                name: b"bpf_prog",
                sample_id: sid(),
            },
        ),
        (
            rec(
                kind::BPF_EVENT,
                0,
                &trailer(
                    Body::default()
                        .u16(1)
                        .u16(0)
                        .u32(33)
                        .bytes(&[1, 2, 3, 4, 5, 6, 7, 8]),
                )
                .0,
            ),
            Record::BpfEvent {
                event_type: 1,
                flags: 0,
                id: 33,
                tag: [1, 2, 3, 4, 5, 6, 7, 8],
                sample_id: sid(),
            },
        ),
        (
            rec(
                kind::CGROUP,
                0,
                &trailer(Body::default().u64(4).str8("/user.slice")).0,
            ),
            Record::Cgroup {
                id: 4,
                path: b"/user.slice",
                sample_id: sid(),
            },
        ),
        (
            rec(
                kind::TEXT_POKE,
                0,
                &trailer(Body::default().u64(0x10).u16(2).u16(2).bytes(&[1, 2, 3, 4])).0,
            ),
            Record::TextPoke {
                addr: 0x10,
                old_len: 2,
                new_len: 2,
                bytes: &[1, 2, 3, 4],
                sample_id: sid(),
            },
        ),
        (
            rec(
                kind::AUX_OUTPUT_HW_ID,
                0,
                &trailer(Body::default().u64(5)).0,
            ),
            Record::AuxOutputHwId {
                hw_id: 5,
                sample_id: sid(),
            },
        ),
    ];
    for (bytes, want) in &cases {
        assert_eq!(&p.parse(bytes, 0).unwrap(), want);
    }
    // Records whose payload holds arrays.
    let ns = rec(
        kind::NAMESPACES,
        0,
        &trailer(
            Body::default()
                .u32(1)
                .u32(1)
                .u64(2)
                .u64(10)
                .u64(11)
                .u64(20)
                .u64(21),
        )
        .0,
    );
    match p.parse(&ns, 0).unwrap() {
        Record::Namespaces { namespaces, .. } => {
            assert_eq!(namespaces.to_vec(), vec![10, 11, 20, 21])
        }
        other => panic!("{other:?}"),
    }
    let inode = rec(
        kind::MMAP2,
        0,
        &trailer(
            Body::default()
                .u32(1)
                .u32(1)
                .u64(0x400000)
                .u64(0x1000)
                .u64(0)
                .u32(8)
                .u32(1)
                .u64(1234)
                .u64(1)
                .u32(5)
                .u32(2)
                .str8("/bin/x"),
        )
        .0,
    );
    match p.parse(&inode, 0).unwrap() {
        Record::Mmap2 {
            file:
                FileId::Inode {
                    maj: 8,
                    min: 1,
                    ino: 1234,
                    ino_generation: 1,
                },
            prot: 5,
            flags: 2,
            filename,
            ..
        } => assert_eq!(filename, b"/bin/x"),
        other => panic!("{other:?}"),
    }
    let mut id = [0u8; 20];
    id[..4].copy_from_slice(&[0xde, 0xad, 0xbe, 0xef]);
    let build = rec(
        kind::MMAP2,
        misc::BIT14,
        &trailer(
            Body::default()
                .u32(1)
                .u32(1)
                .u64(0)
                .u64(0)
                .u64(0)
                .bytes(&[4, 0, 0, 0])
                .bytes(&id)
                .u32(5)
                .u32(2)
                .str8("/bin/y"),
        )
        .0,
    );
    match p.parse(&build, 0).unwrap() {
        Record::Mmap2 {
            file: FileId::BuildId(b),
            ..
        } => assert_eq!(b, &[0xde, 0xad, 0xbe, 0xef]),
        other => panic!("{other:?}"),
    }
    let unknown = rec(99, 3, &[1, 2, 3, 4, 5, 6, 7, 8]);
    assert!(
        matches!(p.parse(&unknown, 0).unwrap(), Record::Unknown { record_type: 99, misc: 3, body } if body.len() == 8)
    );
}

#[test]
fn read_records_honour_read_format() {
    let group = RecordParser {
        read_format: ReadFormat::GROUP | ReadFormat::TOTAL_TIME_ENABLED | ReadFormat::ID,
        ..RecordParser::default()
    };
    let bytes = rec(
        kind::READ,
        0,
        &Body::default()
            .u32(1)
            .u32(2)
            .u64(2)
            .u64(100)
            .u64(5)
            .u64(50)
            .u64(6)
            .u64(60)
            .0,
    );
    let Record::Read { values, .. } = group.parse(&bytes, 0).unwrap() else {
        panic!()
    };
    assert_eq!(values.time_enabled, Some(100));
    let v: Vec<_> = values.values().collect();
    assert_eq!(
        v,
        vec![
            ReadValue {
                value: 5,
                id: Some(50),
                lost: None
            },
            ReadValue {
                value: 6,
                id: Some(60),
                lost: None
            }
        ]
    );
    let single = RecordParser {
        read_format: ReadFormat::TOTAL_TIME_ENABLED
            | ReadFormat::TOTAL_TIME_RUNNING
            | ReadFormat::ID
            | ReadFormat::LOST,
        ..RecordParser::default()
    };
    let bytes = rec(
        kind::READ,
        0,
        &Body::default()
            .u32(1)
            .u32(2)
            .u64(9)
            .u64(100)
            .u64(90)
            .u64(3)
            .u64(0)
            .0,
    );
    let Record::Read { values, .. } = single.parse(&bytes, 0).unwrap() else {
        panic!()
    };
    assert_eq!(
        (values.time_enabled, values.time_running),
        (Some(100), Some(90))
    );
    assert_eq!(
        values.values().collect::<Vec<_>>(),
        vec![ReadValue {
            value: 9,
            id: Some(3),
            lost: Some(0)
        }]
    );
}

#[test]
fn samples_decode_every_field_in_abi_order() {
    let p = RecordParser {
        sample_type: SampleType::IDENTIFIER
            | SampleType::IP
            | SampleType::TID
            | SampleType::TIME
            | SampleType::ADDR
            | SampleType::ID
            | SampleType::STREAM_ID
            | SampleType::CPU
            | SampleType::PERIOD
            | SampleType::READ
            | SampleType::CALLCHAIN
            | SampleType::RAW
            | SampleType::BRANCH_STACK
            | SampleType::REGS_USER
            | SampleType::STACK_USER
            | SampleType::WEIGHT_STRUCT
            | SampleType::DATA_SRC
            | SampleType::TRANSACTION
            | SampleType::REGS_INTR
            | SampleType::PHYS_ADDR
            | SampleType::CGROUP
            | SampleType::DATA_PAGE_SIZE
            | SampleType::CODE_PAGE_SIZE
            | SampleType::AUX,
        read_format: ReadFormat::TOTAL_TIME_ENABLED,
        regs_user: 2,
        regs_intr: 1,
        branch_hw_index: true,
        ..RecordParser::default()
    };
    let body = Body::default()
        .u64(1) // identifier
        .u64(0x4000) // ip
        .u32(10)
        .u32(11) // pid tid
        .u64(12) // time
        .u64(13) // addr
        .u64(14) // id
        .u64(15) // stream_id
        .u32(1)
        .u32(0) // cpu res
        .u64(16) // period
        .u64(17)
        .u64(18) // read: value, enabled
        .u64(3)
        .u64(context::USER)
        .u64(0x4000)
        .u64(0x5000) // callchain
        .u32(4)
        .bytes(&[9, 9, 9, 9]) // raw (size 4 + 4 bytes = 8)
        .u64(1)
        .u64(77)
        .u64(0xa)
        .u64(0xb)
        .u64(0xc) // branch nr, hw_idx, entry
        .u64(2)
        .u64(100)
        .u64(101) // regs_user abi 64, 2 regs
        .u64(8)
        .bytes(&[7; 8])
        .u64(8) // stack_user
        .u32(300)
        .u16(2)
        .u16(3) // weight struct
        .u64(19) // data_src
        .u64(20) // transaction
        .u64(2)
        .u64(200) // regs_intr
        .u64(21) // phys_addr
        .u64(22) // cgroup
        .u64(4096) // data page size
        .u64(8192) // code page size
        .u64(8)
        .bytes(&[5; 8]); // aux
    let bytes = rec(kind::SAMPLE, misc::USER, &body.0);
    let Record::Sample(view) = p.parse(&bytes, 0).unwrap() else {
        panic!()
    };
    assert!(view.is_user());
    assert_eq!(
        (
            view.ip(),
            view.pid(),
            view.tid(),
            view.time(),
            view.cpu(),
            view.period()
        ),
        (
            Some(0x4000),
            Some(10),
            Some(11),
            Some(12),
            Some(1),
            Some(16)
        )
    );
    assert_eq!(view.callchain().unwrap().len(), 3);
    let s = view.fields().unwrap();
    assert_eq!(
        (s.identifier, s.ip, s.pid, s.tid, s.time),
        (Some(1), Some(0x4000), Some(10), Some(11), Some(12))
    );
    assert_eq!(
        (s.addr, s.id, s.stream_id, s.cpu, s.period),
        (Some(13), Some(14), Some(15), Some(1), Some(16))
    );
    let read = s.read.unwrap();
    assert_eq!(
        (read.time_enabled, read.values().next().unwrap().value),
        (Some(18), 17)
    );
    assert_eq!(
        s.callchain.unwrap().to_vec(),
        vec![context::USER, 0x4000, 0x5000]
    );
    assert_eq!(s.raw, Some(&[9u8, 9, 9, 9][..]));
    let b = s.branch_stack.unwrap();
    assert_eq!(b.hw_index, Some(77));
    assert_eq!(
        b.entries().collect::<Vec<_>>(),
        vec![Branch {
            from: 0xa,
            to: 0xb,
            flags: 0xc
        }]
    );
    assert_eq!(s.regs_user.unwrap().regs.to_vec(), vec![100, 101]);
    assert_eq!(s.stack_user.unwrap().dyn_size, 8);
    assert_eq!(
        s.weight,
        Some(Weight::Struct {
            var1: 300,
            var2: 2,
            var3: 3
        })
    );
    assert_eq!(
        (s.data_src, s.transaction, s.phys_addr, s.cgroup),
        (Some(19), Some(20), Some(21), Some(22))
    );
    assert_eq!(s.regs_intr.unwrap().regs.to_vec(), vec![200]);
    assert_eq!(
        (s.data_page_size, s.code_page_size),
        (Some(4096), Some(8192))
    );
    assert_eq!(s.aux, Some(&[5u8; 8][..]));
}

#[test]
fn truncated_and_corrupt_streams_are_errors_with_offsets() {
    let p = tid_time_parser();
    let good = rec(kind::LOST, 0, &trailer(Body::default().u64(1).u64(2)).0);
    let mut stream = good.clone();
    stream.extend_from_slice(&good[..12]);
    let out: Vec<_> = p.records(&stream).collect();
    assert_eq!(out.len(), 2);
    assert!(out[0].is_ok());
    let e = out[1].as_ref().unwrap_err().to_string();
    assert!(e.contains(&format!("byte {}", good.len())), "{e}");
    // A sample whose callchain claims more entries than the record holds.
    let p = RecordParser {
        sample_type: SampleType::CALLCHAIN,
        ..RecordParser::default()
    };
    let bad = rec(kind::SAMPLE, 0, &Body::default().u64(1000).u64(1).0);
    let e = p.parse(&bad, 64).unwrap_err().to_string();
    assert!(e.contains("callchain") && e.contains("byte 64"), "{e}");
}

#[test]
fn owned_records_outlive_their_buffer() {
    let p = tid_time_parser();
    let owned = {
        let bytes = rec(kind::LOST_SAMPLES, 0, &trailer(Body::default().u64(3)).0);
        OwnedRecord::new(&bytes)
    };
    assert_eq!(
        owned.parse(&p).unwrap(),
        Record::LostSamples {
            lost: 3,
            sample_id: sid()
        }
    );
}

fn any_parser() -> impl Strategy<Value = RecordParser> {
    (
        any::<u32>(),
        any::<u8>(),
        any::<bool>(),
        0u32..4,
        0u32..4,
        any::<bool>(),
    )
        .prop_map(|(st, rf, all, ru, ri, hw)| RecordParser {
            sample_type: SampleType::from_bits_truncate(u64::from(st)),
            read_format: ReadFormat::from_bits_truncate(u64::from(rf)),
            sample_id_all: all,
            regs_user: ru,
            regs_intr: ri,
            branch_hw_index: hw,
        })
}

/// Touches every accessor of a decoded record, as a consumer would.
fn use_record(r: &Record<'_>) {
    if let Record::Sample(s) = r {
        let _ = (
            s.misc(),
            s.is_user(),
            s.identifier(),
            s.ip(),
            s.pid(),
            s.tid(),
        );
        let _ = (
            s.time(),
            s.addr(),
            s.id(),
            s.stream_id(),
            s.cpu(),
            s.period(),
        );
        let _ = (s.callchain(), s.raw(), s.read().map(|r| r.values().count()));
        if let Ok(f) = s.fields() {
            let _ = f.branch_stack.map(|b| b.entries().count());
            let _ = f.callchain.map(|c| c.to_vec());
            if let Some(u) = f.stack_user {
                assert!(u.valid_bytes().len() <= u.data.len());
            }
            let _ = f.regs_user.map(|r| r.regs.to_vec());
        }
    }
    let _ = format!("{r:?}");
}

proptest! {
    /// `--call-graph dwarf`'s sample: the registers in mask order, then
    /// the stack copy of `size` bytes and its `dyn_size`, whatever the
    /// values; the valid bytes are the first `dyn_size` (at most `size`).
    #[test]
    fn user_registers_and_stack_copies_decode_as_written(
        regs in proptest::collection::vec(any::<u64>(), 1..8),
        words in proptest::collection::vec(any::<u64>(), 0..64),
        dyn_size in any::<u64>(),
        ip in any::<u64>(),
    ) {
        let p = RecordParser {
            sample_type: SampleType::IP | SampleType::REGS_USER | SampleType::STACK_USER,
            regs_user: regs.len() as u32,
            ..RecordParser::default()
        };
        let mut body = Body::default().u64(ip).u64(2);
        for r in &regs {
            body = body.u64(*r);
        }
        body = body.u64(8 * words.len() as u64);
        for w in &words {
            body = body.u64(*w);
        }
        if !words.is_empty() {
            body = body.u64(dyn_size);
        }
        let bytes = rec(kind::SAMPLE, 0, &body.0);
        let Ok(Record::Sample(s)) = p.parse(&bytes, 0) else {
            panic!("a well-formed sample did not parse");
        };
        let f = s.fields().unwrap();
        prop_assert_eq!(f.ip, Some(ip));
        let got = f.regs_user.unwrap();
        prop_assert_eq!((got.abi, got.regs.to_vec()), (2, regs));
        let stack = f.stack_user.unwrap();
        let copied: Vec<u8> = words.iter().flat_map(|w| w.to_ne_bytes()).collect();
        prop_assert_eq!(stack.data, &copied[..]);
        let valid = if words.is_empty() { 0 } else { dyn_size.min(copied.len() as u64) as usize };
        prop_assert_eq!(stack.valid_bytes(), &copied[..valid]);
    }

    #[test]
    fn random_streams_never_panic(p in any_parser(), bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        // The iterator ends after the first error.
        for (_, r) in p.records(&bytes).flatten() {
            use_record(&r);
        }
    }

    #[test]
    fn random_bodies_with_valid_headers_never_panic(
        p in any_parser(),
        t in 0u32..25,
        body in proptest::collection::vec(any::<u8>(), 0..256),
    ) {
        let bytes = rec(t, 0, &body);
        if let Ok(r) = p.parse(&bytes, 0) {
            use_record(&r);
        }
    }
}

#[test]
fn without_sample_id_all_other_records_have_no_trailer() {
    // The sample type names TID and TIME, but only samples carry them.
    let p = RecordParser {
        sample_id_all: false,
        ..tid_time_parser()
    };
    let bytes = rec(kind::LOST, 0, &Body::default().u64(7).u64(42).0);
    assert_eq!(
        p.parse(&bytes, 0).unwrap(),
        Record::Lost {
            id: 7,
            lost: 42,
            sample_id: SampleId::default()
        }
    );
}

/// The fixed-size sample fields in the order of `PERF_RECORD_SAMPLE` in
/// perf_event_open(2) (identifier, ip, pid+tid, time, addr, id,
/// stream_id, cpu+res, period), each as one u64 word.
const FIXED_ORDER: [SampleType; 9] = [
    SampleType::IDENTIFIER,
    SampleType::IP,
    SampleType::TID,
    SampleType::TIME,
    SampleType::ADDR,
    SampleType::ID,
    SampleType::STREAM_ID,
    SampleType::CPU,
    SampleType::PERIOD,
];

#[test]
fn every_subset_of_fixed_fields_is_read_at_its_abi_position() {
    for subset in 0u32..(1 << FIXED_ORDER.len()) {
        let mut t = SampleType::empty();
        let mut body = Body::default();
        for (k, flag) in FIXED_ORDER.iter().enumerate() {
            if subset & (1 << k) == 0 {
                continue;
            }
            t |= *flag;
            // Field k holds 100 + k (pid/tid and cpu/res: two halves).
            let v = 100 + k as u32;
            body = match *flag {
                SampleType::TID => body.u32(v).u32(v + 50),
                SampleType::CPU => body.u32(v).u32(0),
                _ => body.u64(u64::from(v)),
            };
        }
        let p = RecordParser {
            sample_type: t,
            ..RecordParser::default()
        };
        let bytes = rec(kind::SAMPLE, misc::KERNEL, &body.0);
        let Record::Sample(s) = p.parse(&bytes, 0).unwrap() else {
            panic!("{t:?}: not a sample")
        };
        let want = |k: usize| (subset & (1 << k) != 0).then_some(100 + k as u64);
        let got = [
            s.identifier(),
            s.ip(),
            s.pid().map(u64::from),
            s.time(),
            s.addr(),
            s.id(),
            s.stream_id(),
            s.cpu().map(u64::from),
            s.period(),
        ];
        for (k, (got, flag)) in got.iter().zip(FIXED_ORDER).enumerate() {
            assert_eq!(*got, want(k), "{t:?}: field {flag:?}");
        }
        assert_eq!(s.tid().map(u64::from), want(2).map(|v| v + 50), "{t:?}");
        // The walk agrees with the precomputed offsets.
        let f = s.fields().unwrap();
        let walked = [
            f.identifier,
            f.ip,
            f.pid.map(u64::from),
            f.time,
            f.addr,
            f.id,
            f.stream_id,
            f.cpu.map(u64::from),
            f.period,
        ];
        assert_eq!(walked, got, "{t:?}");
        assert_eq!(f.misc, misc::KERNEL);
        // One byte short of the fixed prefix is an error, naming the record.
        if !body.0.is_empty() {
            let mut short = body.0.clone();
            short.truncate(short.len() - 8);
            let bytes = rec(kind::SAMPLE, 0, &short);
            let e = p.parse(&bytes, 40).unwrap_err().to_string();
            assert!(e.contains("record at byte 40"), "{t:?}: {e}");
        }
    }
}

#[test]
fn the_cpu_mode_is_the_low_three_misc_bits() {
    // PERF_RECORD_MISC_CPUMODE_MASK = 7; USER = 2 (perf_event.h); the
    // other bits (EXACT_IP, bit 14) do not change the mode.
    let p = RecordParser {
        sample_type: SampleType::IP,
        ..RecordParser::default()
    };
    for mode in 0u16..8 {
        for extra in [0, misc::BIT14, misc::BIT13 | 0x100] {
            let bytes = rec(kind::SAMPLE, mode | extra, &Body::default().u64(1).0);
            let Record::Sample(s) = p.parse(&bytes, 0).unwrap() else {
                panic!()
            };
            assert_eq!(s.misc(), mode | extra);
            assert_eq!(s.is_user(), mode == 2, "misc {:#x}", mode | extra);
        }
    }
}

#[test]
fn records_in_a_stream_come_with_their_offsets() {
    let p = RecordParser::default();
    // A header-only record (SWITCH without sample_id_all is 8 bytes),
    // a LOST of 24 and a LOST_SAMPLES of 16.
    let mut stream = rec(kind::SWITCH, misc::BIT13, &[]);
    stream.extend(rec(kind::LOST, 0, &Body::default().u64(1).u64(2).0));
    stream.extend(rec(kind::LOST_SAMPLES, 0, &Body::default().u64(3).0));
    let got: Vec<(usize, Record<'_>)> = p.records(&stream).map(Result::unwrap).collect();
    assert_eq!(
        got.iter().map(|(at, _)| *at).collect::<Vec<_>>(),
        vec![0, 8, 32]
    );
    assert!(matches!(got[0].1, Record::Switch { out: true, .. }));
    assert!(matches!(got[1].1, Record::Lost { id: 1, lost: 2, .. }));
    assert!(matches!(got[2].1, Record::LostSamples { lost: 3, .. }));
    assert_eq!(p.records(&[]).count(), 0);
    // A header alone parses; shorter bytes, or a size below 8 or beyond
    // the bytes, are errors.
    assert!(p.parse(&stream[..8], 0).is_ok());
    assert!(p.parse(&stream[..7], 0).is_err());
    let mut small = stream[..8].to_vec();
    small[6] = 7;
    assert!(p.parse(&small, 0).is_err());
    assert!(p.records(&small).next().unwrap().is_err());
    let mut big = stream[..8].to_vec();
    big[6] = 16;
    assert!(p.parse(&big, 0).is_err());
    let e = p.records(&big).next().unwrap().unwrap_err().to_string();
    assert!(e.contains("header size 16"), "{e}");
    // A record that ends the stream exactly is whole.
    let last = stream.len() - 16;
    assert_eq!(p.records(&stream[last..]).count(), 1);
}

#[test]
fn the_full_sample_id_trailer_follows_the_abi_order() {
    // struct sample_id (perf_event_open(2)): pid, tid; time; id;
    // stream_id; cpu, res; identifier.
    let p = RecordParser {
        sample_type: SampleType::TID
            | SampleType::TIME
            | SampleType::ID
            | SampleType::STREAM_ID
            | SampleType::CPU
            | SampleType::IDENTIFIER
            | SampleType::IP,
        sample_id_all: true,
        ..RecordParser::default()
    };
    let body = Body::default()
        .u64(5)
        .u64(6) // LOST: id, lost
        .u32(1)
        .u32(2)
        .u64(3)
        .u64(4)
        .u64(7)
        .u32(8)
        .u32(0)
        .u64(9);
    let bytes = rec(kind::LOST, 0, &body.0);
    assert_eq!(
        p.parse(&bytes, 0).unwrap(),
        Record::Lost {
            id: 5,
            lost: 6,
            sample_id: SampleId {
                pid: Some(1),
                tid: Some(2),
                time: Some(3),
                id: Some(4),
                stream_id: Some(7),
                cpu: Some(8),
                identifier: Some(9),
            }
        }
    );
    // A body holding no more than part of the trailer is an error; the
    // trailer alone (a SWITCH) is not.
    let e = p.parse(&rec(kind::LOST, 0, &body.0[..40]), 8).unwrap_err();
    assert!(e.to_string().contains("record at byte 8"), "{e}");
    let switch = rec(kind::SWITCH, 0, &body.0[16..]);
    assert!(matches!(
        p.parse(&switch, 0).unwrap(),
        Record::Switch {
            out: false,
            preempt: false,
            sample_id: SampleId { cpu: Some(8), .. }
        }
    ));
}

#[test]
fn group_reads_with_lost_and_empty_groups() {
    // read_format GROUP: nr, [enabled], [running], then nr × {value,
    // [id], [lost]} (perf_event_open(2), "struct read_format").
    let p = RecordParser {
        read_format: ReadFormat::GROUP
            | ReadFormat::TOTAL_TIME_RUNNING
            | ReadFormat::ID
            | ReadFormat::LOST,
        ..RecordParser::default()
    };
    let body = Body::default()
        .u32(1)
        .u32(2)
        .u64(3) // nr
        .u64(70) // running
        .u64(10)
        .u64(11)
        .u64(12)
        .u64(20)
        .u64(21)
        .u64(22)
        .u64(30)
        .u64(31)
        .u64(32);
    let bytes = rec(kind::READ, 0, &body.0);
    let Record::Read { values, .. } = p.parse(&bytes, 0).unwrap() else {
        panic!()
    };
    assert_eq!((values.time_enabled, values.time_running), (None, Some(70)));
    assert_eq!((values.len(), values.is_empty()), (3, false));
    let v: Vec<(u64, Option<u64>, Option<u64>)> =
        values.values().map(|r| (r.value, r.id, r.lost)).collect();
    assert_eq!(
        v,
        vec![
            (10, Some(11), Some(12)),
            (20, Some(21), Some(22)),
            (30, Some(31), Some(32))
        ]
    );
    // Lost without id: value, lost.
    let p = RecordParser {
        read_format: ReadFormat::GROUP | ReadFormat::LOST,
        ..RecordParser::default()
    };
    let body = Body::default()
        .u32(1)
        .u32(2)
        .u64(2)
        .u64(5)
        .u64(6)
        .u64(7)
        .u64(8);
    let bytes = rec(kind::READ, 0, &body.0);
    let Record::Read { values, .. } = p.parse(&bytes, 0).unwrap() else {
        panic!()
    };
    let v: Vec<(u64, Option<u64>, Option<u64>)> =
        values.values().map(|r| (r.value, r.id, r.lost)).collect();
    assert_eq!(v, vec![(5, None, Some(6)), (7, None, Some(8))]);
    // An empty group.
    let body = Body::default().u32(1).u32(2).u64(0);
    let bytes = rec(kind::READ, 0, &body.0);
    let Record::Read { values, .. } = p.parse(&bytes, 0).unwrap() else {
        panic!()
    };
    assert_eq!((values.len(), values.is_empty()), (0, true));
    assert_eq!(values.values().count(), 0);
    // One counter without GROUP.
    let p = RecordParser::default();
    let body = Body::default().u32(1).u32(2).u64(44);
    let bytes = rec(kind::READ, 0, &body.0);
    let Record::Read { values, .. } = p.parse(&bytes, 0).unwrap() else {
        panic!()
    };
    assert_eq!((values.len(), values.is_empty()), (1, false));
    // A group claiming more entries than the record holds.
    let p = RecordParser {
        read_format: ReadFormat::GROUP | ReadFormat::ID,
        ..RecordParser::default()
    };
    let body = Body::default().u32(1).u32(2).u64(2).u64(1).u64(2).u64(3);
    assert!(p.parse(&rec(kind::READ, 0, &body.0), 0).is_err());
}

#[test]
fn variable_sample_fields_keep_their_positions() {
    // STACK_USER of size 0 has no dyn_size word; REGS_USER with abi 0
    // (PERF_SAMPLE_REGS_ABI_NONE) has no registers; WEIGHT is one u64;
    // two branch entries of {from, to, flags}.
    let p = RecordParser {
        sample_type: SampleType::BRANCH_STACK
            | SampleType::REGS_USER
            | SampleType::STACK_USER
            | SampleType::WEIGHT
            | SampleType::DATA_SRC,
        regs_user: 3,
        ..RecordParser::default()
    };
    let body = Body::default()
        .u64(2) // branch nr, no hw_idx
        .u64(1)
        .u64(2)
        .u64(3)
        .u64(4)
        .u64(5)
        .u64(6)
        .u64(0) // regs abi none
        .u64(0) // stack size 0
        .u64(700) // weight
        .u64(800); // data_src
    let bytes = rec(kind::SAMPLE, 0, &body.0);
    let Record::Sample(s) = p.parse(&bytes, 0).unwrap() else {
        panic!()
    };
    let f = s.fields().unwrap();
    let b = f.branch_stack.unwrap();
    assert_eq!(b.hw_index, None);
    assert_eq!(
        b.entries()
            .map(|e| (e.from, e.to, e.flags))
            .collect::<Vec<_>>(),
        vec![(1, 2, 3), (4, 5, 6)]
    );
    let regs = f.regs_user.unwrap();
    assert_eq!(
        (regs.abi, regs.regs.len(), regs.regs.is_empty()),
        (0, 0, true)
    );
    let stack = f.stack_user.unwrap();
    assert_eq!((stack.data.len(), stack.dyn_size), (0, 0));
    assert_eq!(f.weight, Some(Weight::Full(700)));
    assert_eq!(f.data_src, Some(800));
    assert_eq!((f.callchain, f.raw, f.read), (None, None, None));
    assert_eq!((s.callchain(), s.raw(), s.read()), (None, None, None));
}

#[test]
fn sample_views_of_callchain_raw_and_read() {
    let p = RecordParser {
        sample_type: SampleType::READ | SampleType::CALLCHAIN | SampleType::RAW,
        read_format: ReadFormat::ID,
        ..RecordParser::default()
    };
    let body = Body::default()
        .u64(9)
        .u64(99) // read: value, id
        .u64(2)
        .u64(context::KERNEL)
        .u64(0xffff_1234) // callchain
        .u32(3)
        .bytes(&[1, 2, 3, 0]); // raw: 3 bytes + pad to the u64
    let bytes = rec(kind::SAMPLE, 0, &body.0);
    let Record::Sample(s) = p.parse(&bytes, 0).unwrap() else {
        panic!()
    };
    let chain = s.callchain().unwrap();
    assert_eq!((chain.len(), chain.is_empty()), (2, false));
    assert_eq!(
        (chain.get(0), chain.get(1), chain.get(2)),
        (Some(context::KERNEL), Some(0xffff_1234), None)
    );
    assert_eq!(chain.iter().collect::<Vec<_>>(), chain.to_vec());
    assert_eq!(s.raw(), Some(&[1u8, 2, 3][..]));
    let read = s.read().unwrap();
    assert_eq!(
        read.values().map(|r| (r.value, r.id)).collect::<Vec<_>>(),
        vec![(9, Some(99))]
    );
    // An empty callchain.
    let p = RecordParser {
        sample_type: SampleType::CALLCHAIN,
        ..RecordParser::default()
    };
    let bytes = rec(kind::SAMPLE, 0, &Body::default().u64(0).0);
    let Record::Sample(s) = p.parse(&bytes, 0).unwrap() else {
        panic!()
    };
    let chain = s.callchain().unwrap();
    assert_eq!(
        (chain.len(), chain.is_empty(), chain.get(0)),
        (0, true, None)
    );
}

#[test]
fn a_truncated_field_names_its_own_byte() {
    // A sample at stream byte 64: header 64..72, callchain nr 72..80, the
    // entries would start at 80.
    let p = RecordParser {
        sample_type: SampleType::CALLCHAIN,
        ..RecordParser::default()
    };
    let bad = rec(kind::SAMPLE, 0, &Body::default().u64(5).u64(1).0);
    let e = p.parse(&bad, 64).unwrap_err().to_string();
    assert!(
        e.contains("record at byte 64") && e.contains("callchain at byte 80"),
        "{e}"
    );
    // In a non-sample record, past the trailer split: a MMAP whose body
    // is only pid and tid (trailer-less parser).
    let p = RecordParser::default();
    let bad = rec(kind::MMAP, 0, &Body::default().u32(1).u32(2).0);
    let e = p.parse(&bad, 16).unwrap_err().to_string();
    assert!(e.contains("addr at byte 32"), "{e}");
}

#[test]
fn text_poke_carries_old_and_new_bytes() {
    // addr, old_len, new_len, then old_len + new_len bytes.
    let p = RecordParser::default();
    let body = Body::default()
        .u64(0xffff_8000)
        .u16(2)
        .u16(3)
        .bytes(&[1, 2, 3, 4, 5, 0, 0, 0, 0, 0, 0, 0]);
    let bytes = rec(kind::TEXT_POKE, 0, &body.0);
    let Record::TextPoke {
        old_len,
        new_len,
        bytes,
        ..
    } = p.parse(&bytes, 0).unwrap()
    else {
        panic!()
    };
    assert_eq!((old_len, new_len, bytes), (2, 3, &[1u8, 2, 3, 4, 5][..]));
}

#[test]
fn the_layout_comes_from_the_attr() {
    use crate::attr::{Attr, BranchSampleType, EventConfig, Software};
    // regs_user/regs_intr: one register per set mask bit; hw_index from
    // PERF_SAMPLE_BRANCH_HW_INDEX in branch_sample_type.
    let attr = Attr::new(EventConfig::Software(Software::CpuClock))
        .sample_type(SampleType::IP | SampleType::REGS_USER)
        .read_format(ReadFormat::ID)
        .sample_id_all(true)
        .sample_regs_user(0b1011)
        .sample_regs_intr(0b11 << 40)
        .branch_sample_type(BranchSampleType::ANY | BranchSampleType::HW_INDEX);
    assert_eq!(
        RecordParser::for_attr(&attr),
        RecordParser {
            sample_type: SampleType::IP | SampleType::REGS_USER,
            read_format: ReadFormat::ID,
            sample_id_all: true,
            regs_user: 3,
            regs_intr: 2,
            branch_hw_index: true,
        }
    );
    let plain = Attr::new(EventConfig::Software(Software::CpuClock))
        .branch_sample_type(BranchSampleType::ANY);
    assert_eq!(RecordParser::for_attr(&plain), RecordParser::default());
}

#[test]
fn an_owned_record_keeps_its_bytes() {
    let bytes = rec(kind::LOST, 0, &Body::default().u64(1).u64(2).0);
    let owned = OwnedRecord::new(&bytes);
    assert_eq!(owned.bytes(), &bytes[..]);
    assert_eq!(
        owned.parse(&RecordParser::default()).unwrap(),
        Record::Lost {
            id: 1,
            lost: 2,
            sample_id: SampleId::default()
        }
    );
}
