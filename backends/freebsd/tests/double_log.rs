//! The kernel double's hwpmc log: what sys/dev/hwpmc/hwpmc_logging.c
//! writes (`pmclog_configure_log`'s INITIALIZE, `pmclog_process_*`'s
//! records in sys/sys/pmclog.h's layouts, CLOSELOG at `pmclog_close`), when
//! it reaches the file (a full buffer, `pmclog_flush`, `pmclog_close`), and
//! the errnos of PMC_OP_CONFIGURELOG/FLUSHLOG (`fget_write` → EBADF). The
//! pmc crate reads the same bytes back with its pmclog reader
//! (src/backend/freebsd/sampling/tests.rs); here they are taken apart by
//! hand, field by field.

mod common;

use common::{
    CHILD, ME, attach, configure, detach, kernel, logged, read, release, soft, start, stop, u32_at,
    u64_at,
};
use pmc_freebsd::abi::*;
use pmc_freebsd::double::{Image, LOG_BUFFER_BYTES};
use pmc_freebsd::transport::{Request, Transport};

/// One record: its type, its timestamp and its bytes after the header.
#[derive(Debug)]
struct Rec {
    kind: u32,
    tsc: u64,
    body: Vec<u8>,
}

/// Splits pmclog bytes into records by their headers.
fn records(bytes: &[u8]) -> Vec<Rec> {
    let mut out = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        let header = u32_at(bytes, at);
        assert_eq!(header >> 24, 0xEE, "PMCLOG_HEADER_MAGIC at {at}");
        let len = (header & 0xFFFF) as usize;
        assert_eq!(len % 4, 0, "_PMCLOG_RESERVE rounds to 4 bytes");
        out.push(Rec {
            kind: (header >> 16) & 0xFF,
            tsc: u64_at(bytes, at + 8),
            body: bytes[at + 16..at + len].to_vec(),
        });
        at += len;
    }
    assert_eq!(at, bytes.len(), "whole records only");
    out
}

#[test]
fn configurelog_needs_a_writable_descriptor_and_writes_initialize() {
    let k = kernel();
    // pmclog_configure_log: fget_write fails on a descriptor that is no
    // open file.
    assert_eq!(configure(&k, 7), Err(Errno::EBADF));
    let (fd, pipe) = k.pipe();
    configure(&k, fd).unwrap();
    let recs = records(&pipe.take());
    assert_eq!(recs.len(), 1, "INITIALIZE, written at once (DESPATCH_SYNC)");
    let init = &recs[0];
    assert_eq!(init.kind, 3);
    assert_eq!(
        init.body.len() + 16,
        112,
        "sizeof(struct pmclog_initialize)"
    );
    assert_eq!(u32_at(&init.body, 0), PMC_VERSION);
    assert_eq!(u32_at(&init.body, 4), CpuType::INTEL_SKYLAKE as u32);
    assert_eq!(u64_at(&init.body, 8), 1_000_000_000, "pl_tsc_freq");
    assert!(u64_at(&init.body, 16) > 1_600_000_000, "pl_ts: nanotime");
    assert!(init.body[32..].iter().all(|b| *b == 0), "pmc_cpuid empty");
    // pmclog_configure_log: one log per owner.
    assert_eq!(configure(&k, k.pipe().0), Err(Errno::EBUSY));
}

#[test]
fn records_wait_in_the_kernels_buffer_until_a_flush_or_a_full_buffer() {
    let k = kernel();
    let pipe = logged(&k);
    pipe.take();
    let id = soft(&k, Mode::TS, PMC_CPU_ANY, PMC_F_CALLCHAIN);
    attach(&k, id, CHILD).unwrap();
    start(&k, id).unwrap();
    k.sample(0, CHILD, CHILD, true, &[1, 2, 3]);
    assert!(pipe.take().is_empty(), "buffered (po_curbuf)");
    k.call(Request::FlushLog).unwrap();
    let recs = records(&pipe.take());
    // The attach (PMCATTACH) and pmc_start's kernel mapping (MAP_IN)
    // before the sample's CALLCHAIN.
    assert_eq!(
        recs.iter().map(|r| r.kind).collect::<Vec<_>>(),
        vec![6, 14, 16]
    );
    // Enough samples to fill the buffer are written without a flush.
    let per = 16 + 16 + 3 * 8;
    for _ in 0..LOG_BUFFER_BYTES / per + 1 {
        k.sample(0, CHILD, CHILD, true, &[1, 2, 3]);
    }
    assert!(!pipe.take().is_empty(), "a full buffer goes out");
}

#[test]
fn callchain_has_pmclog_h_layout() {
    // pmclog_process_callchain: pid, tid, pmcid, PMC_CALLCHAIN_TO_CPUFLAGS,
    // then the pcs.
    let k = kernel();
    let pipe = logged(&k);
    let id = soft(&k, Mode::SS, 1, PMC_F_CALLCHAIN);
    start(&k, id).unwrap();
    k.sample(1, CHILD, 4242, false, &[0xAAAA, 0xBBBB]);
    k.sample(0, CHILD, 4242, false, &[0xCCCC]); // another CPU
    k.call(Request::FlushLog).unwrap();
    let recs = records(&pipe.take());
    let chains: Vec<&Rec> = recs.iter().filter(|r| r.kind == 16).collect();
    assert_eq!(chains.len(), 1);
    let b = &chains[0].body;
    assert_eq!(b.len() + 16, 32 + 2 * 8);
    assert_eq!(
        (u32_at(b, 0), u32_at(b, 4), u32_at(b, 8)),
        (CHILD as u32, 4242, id)
    );
    assert_eq!(u32_at(b, 12), 1 << 16, "CPU 1, kernel chain");
    assert_eq!((u64_at(b, 16), u64_at(b, 24)), (0xAAAA, 0xBBBB));
    // The kernel's MAP_IN came first, at start (pmc_log_kernel_mappings).
    assert_eq!(recs.iter().position(|r| r.kind == 14), Some(1));
    let tscs: Vec<u64> = recs.iter().map(|r| r.tsc).collect();
    assert!(tscs.windows(2).all(|w| w[0] < w[1]), "{tscs:?}");
}

#[test]
fn a_sampling_pmc_logs_pmcattach_and_the_mappings_at_attach() {
    // pmc_attach_one_process: PMCATTACH with the executable's path, then
    // pmc_log_process_mappings' MAP_IN per executable mapping.
    let k = kernel();
    k.set_image(
        CHILD,
        Image {
            path: "/bin/sh".into(),
            mappings: vec![(0x1000, "/bin/sh".into())],
        },
    );
    let pipe = logged(&k);
    pipe.take();
    let counting = soft(&k, Mode::TC, PMC_CPU_ANY, 0);
    attach(&k, counting, CHILD).unwrap();
    let sampling = soft(&k, Mode::TS, PMC_CPU_ANY, 0);
    attach(&k, sampling, CHILD).unwrap();
    k.call(Request::FlushLog).unwrap();
    let recs = records(&pipe.take());
    let kinds: Vec<u32> = recs.iter().map(|r| r.kind).collect();
    assert_eq!(
        kinds,
        vec![6, 6, 14],
        "PMCATTACH ×2, MAP_IN for the sampling one"
    );
    assert_eq!(u32_at(&recs[1].body, 0), sampling);
    assert_eq!(&recs[1].body[8..16], b"/bin/sh\0");
    let map = &recs[2].body;
    assert_eq!((u32_at(map, 0), u64_at(map, 8)), (CHILD as u32, 0x1000));
    assert_eq!(&map[16..24], b"/bin/sh\0");
}

#[test]
fn proccsw_and_procexit_carry_the_slice_and_the_process_value() {
    let k = kernel();
    let pipe = logged(&k);
    pipe.take();
    let id = soft(
        &k,
        Mode::TC,
        PMC_CPU_ANY,
        PMC_F_LOG_PROCCSW | PMC_F_LOG_PROCEXIT,
    );
    attach(&k, id, CHILD).unwrap();
    start(&k, id).unwrap();
    k.run_slice(CHILD, 300, 11);
    // Counted on CPU 0, where the child stays: part of the slice its next
    // switch out ends (pmc_process_csw_out reads what the row counted
    // since the switch in).
    k.advance(CHILD, 0, 4);
    k.run_slice(CHILD, 301, 22);
    assert_eq!(k.process_value(id, CHILD), 37);
    k.exit_process(CHILD);
    k.call(Request::FlushLog).unwrap();
    let recs: Vec<Rec> = records(&pipe.take())
        .into_iter()
        .filter(|r| r.kind != 6)
        .collect();
    let csw: Vec<(u64, u32, u32, u32)> = recs
        .iter()
        .filter(|r| r.kind == 8)
        .map(|r| {
            assert_eq!(r.body.len() + 16, 40, "sizeof(struct pmclog_proccsw)");
            (
                u64_at(&r.body, 0),
                u32_at(&r.body, 8),
                u32_at(&r.body, 12),
                u32_at(&r.body, 16),
            )
        })
        .collect();
    assert_eq!(
        csw,
        vec![(11, id, CHILD as u32, 300), (4 + 22, id, CHILD as u32, 301)]
    );
    let exit = recs.iter().find(|r| r.kind == 10).expect("PROCEXIT");
    assert_eq!(exit.body.len() + 16, 32, "sizeof(struct pmclog_procexit)");
    assert_eq!(
        (
            u32_at(&exit.body, 0),
            u32_at(&exit.body, 4),
            u64_at(&exit.body, 8)
        ),
        (id, CHILD as u32, 37)
    );
}

/// hwpmc_mod.c `pmc_process_samples`: a sample of a process PMC attached
/// to its owner updates the owner's profil(2) buffer (`addupc_intr`); only
/// a PMC on another process, or a system one, logs a CALLCHAIN.
#[test]
fn a_sample_of_a_pmc_on_its_owner_is_not_logged() {
    let k = kernel();
    let pipe = logged(&k);
    let mine = soft(&k, Mode::TS, PMC_CPU_ANY, 0);
    attach(&k, mine, ME).unwrap();
    start(&k, mine).unwrap();
    let child = soft(&k, Mode::TS, PMC_CPU_ANY, 0);
    attach(&k, child, CHILD).unwrap();
    start(&k, child).unwrap();
    let system = soft(&k, Mode::SS, 0, 0);
    start(&k, system).unwrap();
    pipe.take();
    k.sample(0, ME, ME, true, &[0x10]);
    k.sample(1, CHILD, CHILD, true, &[0x20]);
    k.call(Request::FlushLog).unwrap();
    let chains: Vec<(u32, u32, u64)> = records(&pipe.take())
        .iter()
        .filter(|r| r.kind == 16)
        .map(|r| (u32_at(&r.body, 0), u32_at(&r.body, 8), u64_at(&r.body, 16)))
        .collect();
    // The owner's sample (CPU 0) is logged by the system PMC only, the
    // child's (CPU 1) by the child's PMC.
    assert_eq!(
        chains,
        vec![(ME as u32, system, 0x10), (CHILD as u32, child, 0x20)]
    );
    // With the PMC on its owner stopped, the same sample logs the same.
    stop(&k, mine).unwrap();
    k.sample(0, ME, ME, true, &[0x10]);
    k.call(Request::FlushLog).unwrap();
    assert_eq!(
        records(&pipe.take())
            .iter()
            .filter(|r| r.kind == 16)
            .count(),
        1
    );
}

/// hwpmc_mod.c `pmc_log_kernel_mappings`: the kernel's MAP_IN once per
/// owner descriptor — `PMC_PO_INITIAL_MAPPINGS_DONE` is set at the first
/// start of a sampling PMC with or without a log to take the record, a
/// log's close leaves it, and only a new owner descriptor (after
/// `pmc_maybe_remove_owner`) starts without it.
#[test]
fn the_kernels_mappings_are_logged_once_per_owner() {
    let k = kernel();
    let kernel_map_ins = |bytes: &[u8]| {
        records(bytes)
            .iter()
            .filter(|r| r.kind == 14 && u32_at(&r.body, 0) == u32::MAX)
            .count()
    };
    // A TS on its owner needs no log: the first start marks them done.
    let mine = soft(&k, Mode::TS, PMC_CPU_ANY, 0);
    start(&k, mine).unwrap();
    stop(&k, mine).unwrap();
    let pipe = logged(&k);
    let child = soft(&k, Mode::TS, PMC_CPU_ANY, 0);
    attach(&k, child, CHILD).unwrap();
    start(&k, child).unwrap();
    k.call(Request::FlushLog).unwrap();
    assert_eq!(kernel_map_ins(&pipe.take()), 0, "done before the log");
    // Closed and configured again: still done.
    stop(&k, child).unwrap();
    k.call(Request::CloseLog).unwrap();
    let pipe = logged(&k);
    start(&k, child).unwrap();
    k.call(Request::FlushLog).unwrap();
    assert_eq!(kernel_map_ins(&pipe.take()), 0, "a close leaves the flag");
    // The log gone and then every PMC released: the owner descriptor goes
    // (PMCRELEASE's pmc_maybe_remove_owner; CONFIGURELOG(-1) keeps it).
    stop(&k, child).unwrap();
    configure(&k, -1).unwrap();
    release(&k, child).unwrap();
    release(&k, mine).unwrap();
    let pipe = logged(&k);
    let again = soft(&k, Mode::SS, 0, 0);
    start(&k, again).unwrap();
    k.call(Request::FlushLog).unwrap();
    assert_eq!(kernel_map_ins(&pipe.take()), 1, "a new owner logs them");
}

#[test]
fn no_log_no_records_and_close_writes_closelog() {
    let k = kernel();
    let id = soft(&k, Mode::TS, PMC_CPU_ANY, 0);
    start(&k, id).unwrap();
    // No log (and pmc_start attached the PMC to its owner: profil's).
    k.sample(0, ME, ME, true, &[1]);
    assert_eq!(k.log_pending(), 0);
    let pipe = logged(&k);
    k.call(Request::WriteLog(&mut pmc_op_writelog {
        pm_userdata: 0x55,
    }))
    .unwrap();
    k.call(Request::CloseLog).unwrap();
    let recs = records(&pipe.take());
    let kinds: Vec<u32> = recs.iter().map(|r| r.kind).collect();
    assert_eq!(kinds, vec![3, 13, 1], "INITIALIZE, USERDATA, CLOSELOG");
    assert_eq!(u32_at(&recs[1].body, 0), 0x55);
    assert!(pipe.writer_closed(), "the kernel let the file go");
    // CONFIGURELOG(-1) closes the same way (pmclog_close first).
    let pipe = logged(&k);
    configure(&k, -1).unwrap();
    let kinds: Vec<u32> = records(&pipe.take()).iter().map(|r| r.kind).collect();
    assert_eq!(kinds, vec![3, 1]);
}

#[test]
fn allocations_can_be_refused_on_demand() {
    let k = kernel();
    k.refuse_allocations(Some(Errno::ENOENT));
    let mut pa = pmc_op_pmcallocate {
        pm_cpu: PMC_CPU_ANY,
        pm_class: Class::SOFT as u32,
        pm_ev: PMC_EV_SOFT_FIRST,
        pm_mode: Mode::TC as u32,
        ..Default::default()
    };
    assert_eq!(k.call(Request::PmcAllocate(&mut pa)), Err(Errno::ENOENT));
    k.refuse_allocations(None);
    assert_eq!(k.call(Request::PmcAllocate(&mut pa)), Ok(()));
}

#[test]
fn a_callchain_without_pmc_f_callchain_holds_only_the_interrupted_pc() {
    // pmc_add_sample: without PMC_F_CALLCHAIN only the interrupted pc is
    // captured (pmclog_process_callchain writes ps_nsamples pcs).
    let k = kernel();
    let pipe = logged(&k);
    let chain = soft(&k, Mode::TS, PMC_CPU_ANY, PMC_F_CALLCHAIN);
    let pc_only = soft(&k, Mode::TS, PMC_CPU_ANY, 0);
    for id in [chain, pc_only] {
        attach(&k, id, CHILD).unwrap();
        start(&k, id).unwrap();
    }
    pipe.take();
    k.sample(0, CHILD, 201, true, &[0x10, 0x20, 0x30]);
    k.call(Request::FlushLog).unwrap();
    let pcs: Vec<(u32, usize)> = records(&pipe.take())
        .into_iter()
        .filter(|r| r.kind == 16)
        .map(|r| (u32_at(&r.body, 8), (r.body.len() - 16) / 8))
        .collect();
    assert_eq!(pcs, vec![(chain, 3), (pc_only, 1)]);
}

#[test]
fn procexit_is_logged_only_for_counting_pmcs_that_asked_for_it() {
    // pmc_process_exit: PROCEXIT only for a counting PMC with
    // PMC_F_NEEDS_LOGFILE (LOG_PROCEXIT/LOG_PROCCSW set it at allocate).
    let k = kernel();
    let pipe = logged(&k);
    let quiet = soft(&k, Mode::TC, PMC_CPU_ANY, 0);
    let logged_exit = soft(&k, Mode::TC, PMC_CPU_ANY, PMC_F_LOG_PROCEXIT);
    for id in [quiet, logged_exit] {
        attach(&k, id, CHILD).unwrap();
        start(&k, id).unwrap();
    }
    k.run_slice(CHILD, 201, 5);
    pipe.take();
    k.exit_process(CHILD);
    k.call(Request::FlushLog).unwrap();
    let exits: Vec<(u32, u64)> = records(&pipe.take())
        .into_iter()
        .filter(|r| r.kind == 10)
        .map(|r| (u32_at(&r.body, 0), u64_at(&r.body, 8)))
        .collect();
    assert_eq!(exits, vec![(logged_exit, 5)]);
}

#[test]
fn a_running_system_sampling_pmc_reads_the_events_left_in_its_period() {
    // pcd_read_pmc of a sampling PMC converts the hardware count to the
    // events left before the next overflow (the counter counts up from
    // -reloadcount and reloads at each overflow): 1000 - 1300 % 1000.
    let k = kernel();
    let _pipe = logged(&k);
    let id = soft(&k, Mode::SS, 0, 0);
    start(&k, id).unwrap();
    k.advance(ME, 0, 1300);
    assert_eq!(read(&k, id), 700);
    stop(&k, id).unwrap();
    assert_eq!(read(&k, id), 700, "the stopped hardware keeps it");
}

#[test]
fn pipes_are_distinct_and_records_wait_in_the_buffer() {
    let k = kernel();
    let (a, _pa) = k.pipe();
    let (b, _pb) = k.pipe();
    assert_ne!(a, b, "each pipe its own descriptor");
    let pipe = logged(&k);
    let id = soft(&k, Mode::TS, PMC_CPU_ANY, 0);
    attach(&k, id, CHILD).unwrap();
    start(&k, id).unwrap();
    k.call(Request::FlushLog).unwrap();
    pipe.take();
    assert_eq!(k.log_pending(), 0, "flushed");
    k.sample(0, CHILD, 201, true, &[0x10]);
    // struct pmclog_callchain with one pc: the 16-byte header, pid, tid,
    // pmcid, cpuflags, one uintfptr_t.
    assert_eq!(k.log_pending(), 16 + 16 + 8, "in the kernel's buffer");
    assert!(pipe.take().is_empty(), "not yet written out");
}

#[test]
fn system_pmcs_on_two_cpus_share_a_row() {
    // pmc_can_allocate_rowindex: a system PMC conflicts only with a system
    // PMC on the same CPU, so the same row serves CPU 0 and CPU 1.
    let k = kernel();
    let on0 = soft(&k, Mode::SC, 0, 0);
    let on1 = soft(&k, Mode::SC, 1, 0);
    let again0 = soft(&k, Mode::SC, 0, 0);
    let row = |id: u32| id & 0xFF;
    assert_eq!(row(on0), row(on1), "{on0:#x} {on1:#x}");
    assert_ne!(row(on0), row(again0), "CPU 0's row is taken");
}

#[test]
fn detaching_another_process_keeps_the_owners_reading_on_its_hardware() {
    // pmc_detach_one_process clears PMC_F_ATTACHED_TO_OWNER only when the
    // owner itself is detached; while it is set, PMCRW of a running PMC
    // reads the owner's CPU row (pmc_do_op_pmcrw), not pm_savedvalue.
    let k = kernel();
    let id = soft(&k, Mode::TC, PMC_CPU_ANY, 0);
    attach(&k, id, ME).unwrap();
    attach(&k, id, CHILD).unwrap();
    start(&k, id).unwrap();
    k.advance(ME, 0, 50);
    detach(&k, id, CHILD).unwrap();
    assert_eq!(read(&k, id), 50, "the owner's row, not yet saved");
}
