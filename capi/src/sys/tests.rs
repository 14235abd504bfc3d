//! The shim's mapping of each record into `struct pmclog_ev` (the wire
//! format itself is the `pmc` crate's, tested there). Here because reading
//! a union member is `unsafe`.

use pmc_core::log::cpu::CpuIdentity;
use pmc_core::log::{LogRecord, LogWriter, kind};

use crate::pmclog::{close, feed, open, read};
use crate::types::{pmclog_ev, state};

fn c_str(chars: &[std::ffi::c_char]) -> String {
    let bytes: Vec<u8> = chars
        .iter()
        .take_while(|&&c| c != 0)
        // c_char is i8 on x86_64, u8 on aarch64: the same bits either way.
        .map(|&c| u8::from_ne_bytes(c.to_ne_bytes()))
        .collect();
    String::from_utf8(bytes).unwrap()
}

/// Writes `records` after INITIALIZE, reads them back through a memory
/// parser, and returns the C events (INITIALIZE first) with the
/// PMCALLOCATE event names, copied while they are valid.
fn through_parser(records: &[LogRecord]) -> (Vec<pmclog_ev>, Vec<String>) {
    let cpu = CpuIdentity {
        cputype: 0x99,
        cpuid: "GenuineIntel-6-85-4".into(),
    };
    let mut w = LogWriter::new(Vec::new(), &cpu).unwrap();
    for (i, r) in records.iter().enumerate() {
        w.write(r, 1000 + i as u64).unwrap();
    }
    w.close().unwrap();
    let bytes = w.into_inner();
    let cookie = open(None);
    feed(cookie, &bytes).unwrap();
    let mut out = Vec::new();
    let mut names = Vec::new();
    loop {
        let (ev, why) = read(cookie).unwrap();
        assert_eq!(why, None);
        if ev.pl_state != state::OK {
            assert_eq!(ev.pl_state, state::EOF, "CLOSELOG reads as EOF");
            break;
        }
        if ev.pl_type == u32::from(kind::PMCALLOCATE) {
            // SAFETY: a PMCALLOCATE event's pl_a member is set, and its
            // pl_evname points at the parser's name until the next read.
            let name = unsafe { std::ffi::CStr::from_ptr(ev.pl_u.pl_a.pl_evname) };
            names.push(name.to_string_lossy().into_owned());
        }
        out.push(ev);
    }
    close(cookie);
    assert!(read(cookie).is_err(), "a closed cookie is unknown");
    (out, names)
}

/// FreeBSD's number for `PMC_EV_<name>` (include/pmc_events.h).
fn freebsd_event(name: &str) -> u32 {
    crate::names::freebsd_events()
        .iter()
        .find(|(_, c, n)| name.strip_prefix(c).and_then(|r| r.strip_prefix('_')) == Some(*n))
        .map(|(v, _, _)| *v)
        .unwrap()
}

#[test]
fn every_record_lands_in_its_union_member() {
    let records = vec![
        LogRecord::PmcAllocate {
            pmcid: 7,
            event: 0x42,
            flags: 0x80,
            rate: 65536,
        },
        LogRecord::PmcDetach { pmcid: 7, pid: 11 },
        LogRecord::ProcCsw {
            pmcid: 7,
            value: 99,
            pid: 11,
            tid: 12,
        },
        LogRecord::ProcExec {
            pid: 11,
            pmcid: 7,
            entry: 0x401000,
            // A static executable without an interpreter: pl_dyn 0.
            dynaddr: 0,
            path: "/bin/true".into(),
        },
        LogRecord::ProcFork {
            oldpid: 11,
            newpid: 13,
        },
        LogRecord::SysExit { pid: 13 },
        LogRecord::MapIn {
            pid: u32::MAX,
            start: 0xffff_8000_0000_0000,
            path: "/boot/kernel".into(),
        },
        LogRecord::MapOut {
            pid: 11,
            start: 0x1000,
            end: 0x2000,
        },
        LogRecord::ThrCreate {
            tid: 12,
            pid: 11,
            flags: 0,
            name: "worker".into(),
        },
        LogRecord::ThrExit { tid: 12 },
        LogRecord::ProcCreate {
            pid: 11,
            flags: 1,
            name: "true".into(),
        },
        LogRecord::Dropnotify { lost: Some(3) },
        LogRecord::Callchain {
            pid: 11,
            tid: 12,
            pmcid: 7,
            cpu: 1,
            userspace: true,
            pcs: vec![0x10, 0x20],
        },
        LogRecord::PmcAllocate {
            pmcid: 8,
            event: freebsd_event("IAF_INSTR_RETIRED_ANY"),
            flags: 0,
            rate: 0,
        },
    ];
    let (evs, names) = through_parser(&records);
    // pmclog.c: pl_evname = pmc_name_of_event(pl_event); 0x42 is no
    // FreeBSD event number.
    assert_eq!(names, ["event-0x42", "INSTR_RETIRED_ANY"]);
    assert_eq!(evs.len(), records.len() + 1);
    assert_eq!(u32::from(kind::INITIALIZE), evs[0].pl_type);
    // SAFETY: each read below is of the member that pl_type selects,
    // written in full by to_c over an all-zero union.
    unsafe {
        let i = evs[0].pl_u.pl_i;
        assert_eq!(c_str(&i.pl_cpuid), "GenuineIntel-6-85-4");
        for (n, ev) in evs.iter().enumerate() {
            assert_eq!(ev.pl_count, n + 1);
        }
        let a = evs[1].pl_u.pl_a;
        assert_eq!(
            (a.pl_pmcid, a.pl_event, a.pl_flags, a.pl_rate),
            (7, 0x42, 0x80, 65536)
        );
        let d = evs[2].pl_u.pl_d;
        assert_eq!((d.pl_pmcid, d.pl_pid), (7, 11));
        let c = evs[3].pl_u.pl_c;
        assert_eq!(
            (c.pl_pid, c.pl_tid, c.pl_pmcid, c.pl_value),
            (11, 12, 7, 99)
        );
        let x = evs[4].pl_u.pl_x;
        assert_eq!(
            (x.pl_pid, x.pl_pmcid, x.pl_baseaddr, x.pl_dynaddr),
            (11, 7, 0x401000, 0)
        );
        assert_eq!(c_str(&x.pl_pathname), "/bin/true");
        let f = evs[5].pl_u.pl_f;
        assert_eq!((f.pl_oldpid, f.pl_newpid), (11, 13));
        assert_eq!(evs[6].pl_u.pl_se.pl_pid, 13);
        let mi = evs[7].pl_u.pl_mi;
        assert_eq!((mi.pl_pid, mi.pl_start), (-1, 0xffff_8000_0000_0000));
        assert_eq!(c_str(&mi.pl_pathname), "/boot/kernel");
        let mo = evs[8].pl_u.pl_mo;
        assert_eq!((mo.pl_pid, mo.pl_start, mo.pl_end), (11, 0x1000, 0x2000));
        let tc = evs[9].pl_u.pl_tc;
        assert_eq!((tc.pl_tid, tc.pl_pid), (12, 11));
        assert_eq!(c_str(&tc.pl_tdname), "worker");
        assert_eq!(evs[10].pl_u.pl_te.pl_tid, 12);
        let pc = evs[11].pl_u.pl_pc;
        assert_eq!((pc.pl_pid, pc.pl_flags), (11, 1));
        assert_eq!(c_str(&pc.pl_pcomm), "true");
        assert_eq!(evs[12].pl_type, u32::from(kind::DROPNOTIFY));
        let cc = evs[13].pl_u.pl_cc;
        assert_eq!(
            (cc.pl_pid, cc.pl_tid, cc.pl_pmcid, cc.pl_npc),
            (11, 12, 7, 2)
        );
        // sys/sys/pmclog.h PMC_CALLCHAIN_TO_CPUFLAGS(1, PMC_CC_F_USERSPACE)
        assert_eq!(cc.pl_cpuflags, (1 << 16) | 1);
        assert_eq!(&cc.pl_pc[..3], &[0x10, 0x20, 0]);
    }
    for (n, ev) in evs.iter().enumerate().skip(1) {
        assert_eq!(ev.pl_type, u32::from(records[n - 1].kind()));
        // pmclog.c: tv_sec carries the raw timestamp.
        assert_eq!(ev.pl_ts.tv_sec, 1000 + n as i64 - 1);
        assert_eq!(ev.pl_offset - evs[n - 1].pl_offset, i64::from(ev.pl_len));
    }
}

#[test]
fn file_parsers_cannot_be_fed_and_garbage_is_a_sticky_error() {
    let cookie = open(None);
    feed(cookie, &[0x5a; 32]).unwrap();
    let (ev, why) = read(cookie).unwrap();
    assert_eq!(ev.pl_state, state::ERROR);
    assert!(why.unwrap().contains("magic"));
    assert_eq!(read(cookie).unwrap().0.pl_state, state::ERROR);
    close(cookie);
    let f = std::fs::File::open("/dev/null").unwrap();
    let cookie = open(Some(f));
    assert_eq!(feed(cookie, b"x").unwrap_err().errno, libc::EINVAL);
    assert_eq!(read(cookie).unwrap().0.pl_state, state::EOF);
    close(cookie);
}

/// pmclog_read(3) writes the event through its pointer: NULL and a
/// misaligned pointer are EFAULT, and nothing is written through them.
#[test]
fn pmclog_read_refuses_null_and_misaligned_events() {
    use super::log_entries::pmclog_read;
    let errno = || std::io::Error::last_os_error().raw_os_error();
    assert_eq!(pmclog_read(std::ptr::null_mut(), std::ptr::null_mut()), -1);
    assert_eq!(errno(), Some(libc::EFAULT));
    let align = std::mem::align_of::<pmclog_ev>();
    assert!(align > 1, "pmclog_ev is {align}-aligned");
    let mut buf = vec![0u8; std::mem::size_of::<pmclog_ev>() + align];
    let base = buf.as_mut_ptr();
    let off = (0..align)
        .find(|i| !(base as usize + i).is_multiple_of(align))
        .expect("a misaligned offset");
    // Only the address is formed; the function must not write through it.
    let ev = base.wrapping_add(off).cast::<pmclog_ev>();
    assert_eq!(pmclog_read(std::ptr::null_mut(), ev), -1);
    assert_eq!(errno(), Some(libc::EFAULT));
    assert!(
        buf.iter().all(|&b| b == 0),
        "written through a misaligned pointer"
    );
}

/// A refused call changes nothing: pmc_rw(3) with a misaligned `oldvalue`
/// is EFAULT before the PMC is written, so its value stays.
#[test]
fn pmc_rw_with_a_misaligned_oldvalue_writes_no_value() {
    use super::{pmc_allocate, pmc_init, pmc_read, pmc_release, pmc_rw};
    let errno = || std::io::Error::last_os_error().raw_os_error();
    let mut id = 0u32;
    assert_eq!(pmc_init(), 0);
    // TC (3) on PMC_CPU_ANY in user mode (what paranoid 2 allows anyone),
    // never started: its value is what write sets.
    assert_eq!(
        pmc_allocate(c"task-clock,usr".as_ptr(), 3, 0, -1, &mut id, 0),
        0
    );
    let mut buf = [0u64; 2];
    let misaligned = buf.as_mut_ptr().cast::<u8>().wrapping_add(1).cast::<u64>();
    assert_eq!(pmc_rw(id, 42, misaligned), -1);
    assert_eq!(errno(), Some(libc::EFAULT));
    assert_eq!(buf, [0, 0], "written through a misaligned pointer");
    let mut value = u64::MAX;
    assert_eq!(pmc_read(id, &mut value), 0);
    assert_eq!(value, 0, "the refused pmc_rw wrote its new value");
    assert_eq!(pmc_release(id), 0);
}

/// pmc_pmcinfo(3) writes its result through `pmc_info_out`: a misaligned
/// pointer is EFAULT and nothing is written through it.
#[test]
fn pmc_pmcinfo_refuses_a_misaligned_out_pointer() {
    use super::pmc_pmcinfo;
    let errno = || std::io::Error::last_os_error().raw_os_error();
    let mut buf = [0u8; 2 * std::mem::size_of::<usize>()];
    let misaligned = buf
        .as_mut_ptr()
        .wrapping_add(1)
        .cast::<*mut crate::types::pmc_pmcinfo>();
    assert_eq!(pmc_pmcinfo(0, misaligned), -1);
    assert_eq!(errno(), Some(libc::EFAULT));
    assert!(
        buf.iter().all(|&b| b == 0),
        "written through a misaligned pointer"
    );
}

/// pmc_pmu_idx_get_by_event: −1 for a model without a table or a NULL
/// event, as libpmc's "not found".
#[test]
fn pmu_idx_of_an_unknown_model_or_no_event_is_minus_one() {
    use super::pmu_util::pmc_pmu_idx_get_by_event;
    assert_eq!(
        pmc_pmu_idx_get_by_event(c"NoSuchVendor-1-2-3".as_ptr(), c"inst_retired.any".as_ptr()),
        -1
    );
    assert_eq!(
        pmc_pmu_idx_get_by_event(std::ptr::null(), std::ptr::null()),
        -1
    );
    // A model with a table: the event's index, which names it back.
    let skx = c"GenuineIntel-6-55-4";
    let idx = pmc_pmu_idx_get_by_event(skx.as_ptr(), c"inst_retired.any".as_ptr());
    assert!(idx >= 0, "inst_retired.any on Skylake-SP: {idx}");
    let name = super::pmu_util::pmc_pmu_event_get_by_idx(skx.as_ptr(), idx);
    assert!(!name.is_null());
    // SAFETY: a non-NULL result is a NUL-terminated name in the kept list.
    let name = unsafe { std::ffi::CStr::from_ptr(name) };
    assert_eq!(name.to_str().unwrap(), "inst_retired.any");
}

/// pmc_configure_logfile(3)'s checks, each with its own reason (all EBADF,
/// as hwpmc's CONFIGURELOG): a descriptor that is not open, one open
/// read-only; a writable file is taken.
#[test]
fn log_destination_says_why_a_descriptor_is_refused() {
    use std::os::fd::AsRawFd;
    let why = |fd| super::log_destination(fd).unwrap_err();
    let e = why(1 << 20);
    assert_eq!(e.errno, libc::EBADF);
    assert!(
        e.message.contains("is not an open file descriptor"),
        "{}",
        e.message
    );
    let dir = std::env::temp_dir().join(format!("capi-logdest-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("log");
    std::fs::write(&file, b"").unwrap();
    let read_only = std::fs::File::open(&file).unwrap();
    let e = why(read_only.as_raw_fd());
    assert!(e.message.contains("read-only"), "{}", e.message);
    // A directory is refused as read-only first: Linux opens none for
    // writing (EISDIR), so the directory check only guards other systems.
    let directory = std::fs::File::open(&dir).unwrap();
    assert_eq!(why(directory.as_raw_fd()).errno, libc::EBADF);
    let writable = std::fs::OpenOptions::new().write(true).open(&file).unwrap();
    assert!(super::log_destination(writable.as_raw_fd()).is_ok());
    std::fs::remove_dir_all(&dir).unwrap();
}
