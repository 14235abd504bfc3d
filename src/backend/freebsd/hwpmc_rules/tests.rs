//! What the FreeBSD backend carries through from hwpmc(4) and libpmc, over
//! pmc-freebsd's kernel double: class rows (widths, capabilities, event
//! tables), CPUs, GETMSR, sampling reads under `kern.hwpmc.mincount`, and
//! hwpmc's log (timestamps, records without a PMC id, log close).

use std::sync::Arc;

use pmc_freebsd::abi;
use pmc_freebsd::double::{Image, KERNEL_PATH, KERNEL_START, KernelDouble, Machine, Process};

use super::*;
use crate::log::LogRecord;
use crate::{Cpu, Flags, MemoryLog, Owner, Pmc};

/// The caller: the owner of the tests' PMCs.
pub(super) const OWNER: i32 = 1000;
/// The caller's child.
pub(super) const CHILD: i32 = 42;

/// The double on `machine`, whose caller `OWNER` has a child `CHILD` that
/// may be debugged and runs `image`.
pub(super) fn kernel_with_child(machine: Machine, image: Image) -> Arc<KernelDouble> {
    let k = Arc::new(KernelDouble::new(machine, OWNER));
    k.add_process(
        CHILD,
        Process {
            parent: OWNER,
            exiting: false,
            debuggable: true,
        },
    );
    k.set_image(CHILD, image);
    k
}

/// The double's 2-CPU Intel machine (or `machine`), with a child of the
/// caller that may be debugged.
fn kernel_on(machine: Machine) -> Arc<KernelDouble> {
    kernel_with_child(
        machine,
        Image {
            path: "/usr/bin/yes".into(),
            mappings: vec![(0x20_0000, "/usr/bin/yes".into())],
        },
    )
}

fn kernel() -> Arc<KernelDouble> {
    kernel_on(Machine::intel_2cpu())
}

/// The backend over the double's hwpmc with Intel's `inst_retired.any`
/// (`double::intel_hwpmc`).
fn backend(k: &Arc<KernelDouble>) -> Arc<FreeBsdBackend<Arc<KernelDouble>>> {
    Arc::new(FreeBsdBackend::from_hwpmc(super::double::intel_hwpmc(k)))
}

/// The backend on four CPUs, CPU 2 inactive.
fn backend_with_cpu_2_inactive() -> Arc<FreeBsdBackend<Arc<KernelDouble>>> {
    backend(&kernel_on(Machine {
        ncpu: 4,
        inactive_cpus: [2].into(),
        ..Machine::intel_2cpu()
    }))
}

/// An owner over `backend` with a new memory log configured, and the log.
pub(super) fn owner_with_log(backend: impl Into<crate::backend::Backend>) -> (Owner, MemoryLog) {
    let owner = Owner::new(backend);
    let log = MemoryLog::new();
    owner.configure_logfile(log.clone()).unwrap();
    (owner, log)
}

/// A `SOFT-PAGE_FAULT.ALL` PMC of `owner` with a count of 1000.
pub(super) fn page_faults(owner: &Owner, mode: Mode, flags: Flags, cpu: Cpu) -> Pmc {
    owner
        .allocate_with_count("SOFT-PAGE_FAULT.ALL", mode, flags, cpu, 1000)
        .unwrap()
}

fn prepare(
    b: &FreeBsdBackend<Arc<KernelDouble>>,
    spec: &str,
    mode: Mode,
) -> Arc<dyn PreparedEvent> {
    let parsed = crate::spec::parse(spec).expect("spec parses");
    b.prepare(&EventRequest {
        spec: &parsed,
        mode,
        flags: Flags::empty(),
        sample_period: if mode.is_sampling() { 1000 } else { 0 },
        pmcid: 1,
        buffer_pages: None,
        user_stack: None,
    })
    .unwrap_or_else(|e| panic!("{spec}: {e}"))
}

/// `spec`'s counting PMC on process `pid` (not its descendants).
fn count_on(b: &FreeBsdBackend<Arc<KernelDouble>>, spec: &str, pid: i32) -> Box<dyn Counters> {
    prepare(b, spec, Mode::TC)
        .open_process(pid as u32, false)
        .unwrap()
}

/// GETCPUINFO's row of `class`, as the backend reports it.
fn class_row(b: &FreeBsdBackend<Arc<KernelDouble>>, class: &Class) -> ClassInfo {
    b.cpuinfo()
        .unwrap()
        .classes
        .into_iter()
        .find(|c| &c.class == class)
        .unwrap_or_else(|| panic!("no {class} row"))
}

/// The log's records with their times.
pub(super) fn log_records(log: &MemoryLog) -> Vec<(u64, LogRecord)> {
    log.events()
        .unwrap()
        .into_iter()
        .map(|e| (e.timestamp, e.record))
        .collect()
}

fn kernel_map_in(r: &LogRecord) -> bool {
    matches!(r, LogRecord::MapIn { pid, start, path }
        if *pid == u32::MAX && *start == KERNEL_START && path == KERNEL_PATH)
}

#[test]
fn possible_cpus_are_every_cpu_getcpuinfo_counts() {
    // hwpmc_mod.c PMC_OP_GETCPUINFO: pm_ncpu = pmc_cpu_max(), the CPUs a
    // PMC may name (pmc_do_op_pmcallocate: EINVAL from pmc_cpu_max() on),
    // whether or not each is active.
    let b = backend_with_cpu_2_inactive();
    assert_eq!(b.possible_cpus(), vec![0, 1, 2, 3]);
    assert_eq!(b.online_cpus(), vec![0, 1, 3]);
}

#[test]
fn an_inactive_cpu_is_enxio_and_the_advice_names_it() {
    // hwpmc_mod.c pmc_do_op_pmcallocate: a system PMC on a CPU for which
    // pmc_cpu_is_active() is false is ENXIO; the way out is to make that
    // CPU active, and the advice says which one.
    let b = backend_with_cpu_2_inactive();
    let advice = b.how_to_online(2);
    assert!(
        advice.contains("CPU 2") && advice.contains("active"),
        "{advice:?}"
    );
    let e = Owner::new(b.clone())
        .allocate("SOFT-PAGE_FAULT.ALL", Mode::SC, Flags::empty(), Cpu::Id(2))
        .unwrap_err();
    assert!(matches!(e, Error::Unavailable { .. }), "{e:?}");
    assert_eq!(e.errno(), libc::ENXIO, "{e}");
    assert!(e.to_string().contains(&advice), "{e}");
}

#[test]
fn an_events_width_is_its_classs_getcpuinfo_width() {
    // hwpmc_mod.c PMC_OP_GETCPUINFO: each class row's pm_width is the
    // class's pcd_width; hwpmc_core.c gives the fixed-function IAF class
    // the counter width CPUID reports (48 bits on this Skylake), unlike the
    // 64-bit TSC and SOFT classes (hwpmc_tsc.c, hwpmc_soft.c).
    let k = kernel();
    let b = backend(&k);
    let ev = prepare(&b, "inst_retired.any", Mode::TC);
    assert_eq!(ev.class(), Class::Pmu("IAF".into()));
    let row = class_row(&b, &ev.class());
    assert_eq!(row.width, 48);
    assert_eq!(ev.width(), row.width);
    let soft = prepare(&b, "SOFT-PAGE_FAULT.ALL", Mode::TC);
    assert_eq!(soft.width(), 64, "hwpmc_soft.c pcd_width");
}

#[test]
fn a_sampling_events_capabilities_include_interrupt_within_its_class() {
    // hwpmc_mod.c pmc_do_op_pmcallocate: every sampling PMC needs
    // PMC_CAP_INTERRUPT, and the capabilities asked for must be among the
    // class's (pcd_caps, GETCPUINFO's pm_caps) or it is EOPNOTSUPP; a
    // counter is readable (PMC_CAP_READ, IAF_PMC_CAPS in hwpmc_core.c).
    let k = kernel();
    let b = backend(&k);
    let ev = prepare(&b, "inst_retired.any", Mode::TS);
    let caps = ev.capabilities();
    assert!(
        caps.contains(Capabilities::INTERRUPT | Capabilities::READ),
        "{caps:?}"
    );
    let row = class_row(&b, &ev.class());
    assert!(row.caps.contains(caps), "{caps:?} within {:?}", row.caps);
}

#[test]
fn an_event_is_described_by_its_class_and_specifier() {
    // libpmc names classes as hwpmc's __PMC_CLASSES() does ("IAF" for
    // PMC_CLASS_IAF); the description names the class the event resolved
    // to and the specifier it was asked by.
    let k = kernel();
    let b = backend(&k);
    let d = prepare(&b, "inst_retired.any", Mode::TC).describe();
    assert!(d.contains("IAF") && d.contains("inst_retired.any"), "{d:?}");
    let d = prepare(&b, "SOFT-CLOCK.HARD", Mode::TC).describe();
    assert!(d.contains("SOFT") && d.contains("CLOCK.HARD"), "{d:?}");
}

#[test]
fn a_pmu_classs_event_names_are_libpmcs_table() {
    // lib/libpmc/libpmc.c tsc_event_table = __PMC_EV_ALIAS_TSC()
    // (sys/dev/hwpmc/pmc_events.h): the TSC class's one event, "cycles".
    let k = kernel();
    let b = backend(&k);
    assert_eq!(
        b.event_names(&Class::Pmu("TSC".into())).unwrap(),
        vec!["cycles".to_string()]
    );
}

#[test]
fn a_ts_read_stays_within_the_reload_count_when_mincount_is_higher() {
    // hwpmc_mod.c PMC_OP_PMCSETCOUNT: a sampling PMC's reload count is
    // raised to kern.hwpmc.mincount (CTLFLAG_RWTUN, here 5000), so the
    // hardware of a running TS PMC attached to its owner, which
    // pmc_do_op_pmcrw reads with the class's pcd_read_pmc (the events left
    // before the overflow, e.g. hwpmc_core.c
    // iap_perfctr_value_to_reload_count), may hold more events left than
    // the 1000 the PMC was set to. The read stays the events left before
    // the PMC's next sample: between 1 and its reload count.
    let k = kernel_on(Machine {
        mincount: 5000,
        ..Machine::intel_2cpu()
    });
    let owner = Owner::new(backend(&k));
    let mut p = page_faults(&owner, Mode::TS, Flags::empty(), Cpu::Any);
    p.start().unwrap();
    let setcount = k
        .calls()
        .into_iter()
        .rfind(|c| c.op == abi::Op::PMCSETCOUNT)
        .expect("the period is set before the start");
    assert_eq!(setcount.value, 1000);
    k.advance(OWNER, 0, 100);
    let left = p.read().unwrap();
    assert!(
        (1..=p.reload_count()).contains(&left),
        "{left} of {}",
        p.reload_count()
    );
}

#[test]
fn rdpmc_index_is_the_classs_msr_or_none_without_getmsr() {
    // hwpmc_mod.c PMC_OP_PMCGETMSR: ENOSYS when the PMC's class has no
    // pcd_get_msr (hwpmc_soft.c sets it NULL): no user-space read, not a
    // failure. IAF's is IAF_RI_TO_MSR(ri) = ri + (1 << 30) (hwpmc_core.c).
    let k = kernel();
    let b = backend(&k);
    let mut soft = count_on(&b, "SOFT-PAGE_FAULT.ALL", OWNER);
    assert_eq!(soft.rdpmc_index().unwrap(), None);
    let mut iaf = count_on(&b, "inst_retired.any", OWNER);
    assert_eq!(iaf.rdpmc_index().unwrap(), Some(1 << 30));
}

#[test]
fn rdpmc_index_of_a_pmc_on_another_process_is_einval() {
    // hwpmc_mod.c PMC_OP_PMCGETMSR: the PMC must be attached to its owner
    // and nothing else, else EINVAL — checked before the class's
    // pcd_get_msr, so even a SOFT PMC gets EINVAL, not ENOSYS.
    let k = kernel();
    let b = backend(&k);
    let mut c = count_on(&b, "SOFT-PAGE_FAULT.ALL", CHILD);
    let e = c.rdpmc_index().unwrap_err();
    assert_eq!(e.errno(), libc::EINVAL, "{e}");
    assert!(e.to_string().contains("PMCGETMSR"), "{e}");
}

#[test]
fn closing_the_owners_log_stops_the_hwpmc_pmcs_that_need_it() {
    // hwpmc_mod.c PMC_OP_CONFIGURELOG with fd < 0: the owner's running
    // PMC_F_NEEDS_LOGFILE PMCs (every system sampling PMC,
    // pmc_do_op_pmcallocate) are pmc_stop()ped before the log goes; a
    // stopped PMC's samples are not processed (pmc_process_samples). The
    // backend's hwpmc log outlives one owner's log, so closing the owner's
    // log must stop its hwpmc PMCs the same way.
    let k = kernel();
    let (owner, _log) = owner_with_log(backend(&k));
    let mut p = page_faults(&owner, Mode::SS, Flags::CALLCHAIN, Cpu::Id(0));
    k.take_calls();
    p.start().unwrap();
    let started = k
        .take_calls()
        .into_iter()
        .find(|c| c.op == abi::Op::PMCSTART && c.result.is_ok())
        .expect("PMCSTART")
        .pmcid;
    owner.close_logfile().unwrap();
    let stops: Vec<_> = k
        .take_calls()
        .into_iter()
        .filter(|c| c.op == abi::Op::PMCSTOP && c.pmcid == started)
        .collect();
    assert!(
        stops.iter().any(|c| c.result.is_ok()),
        "no PMCSTOP of {started:#x}"
    );
    let pending = k.log_pending();
    k.sample(0, 7, 7, true, &[0x10]);
    assert_eq!(k.log_pending(), pending, "a stopped PMC takes no samples");
}

#[test]
fn record_times_follow_initializes_tsc_frequency() {
    // hwpmc stamps each record with pmc_rdtsc() (hwpmc_mod.c
    // pmc_add_sample) and INITIALIZE gives the counter's rate,
    // pl_tsc_freq (sys/sys/pmclog.h struct pmclog_initialize): records k
    // ticks apart are k / pl_tsc_freq seconds apart. At 1 Hz each tick is a
    // second, and the double stamps every record with a tick of its own.
    let k = kernel_on(Machine {
        tsc_freq: 1,
        ..Machine::intel_2cpu()
    });
    let (owner, log) = owner_with_log(backend(&k));
    let mut p = page_faults(&owner, Mode::TS, Flags::CALLCHAIN, Cpu::Any);
    p.attach(CHILD as u32).unwrap();
    p.start().unwrap();
    k.sample(0, CHILD, CHILD, true, &[0x10]);
    k.sample(0, CHILD, CHILD, true, &[0x20]);
    p.stop().unwrap();
    owner.close_logfile().unwrap();
    let times: Vec<u64> = log_records(&log)
        .into_iter()
        .filter_map(|(t, r)| matches!(r, LogRecord::Callchain { .. }).then_some(t))
        .collect();
    assert_eq!(times.len(), 2, "{times:?}");
    let apart = times[1].checked_sub(times[0]).expect("in order");
    assert!(apart >= 1_000_000_000, "{times:?}");
    assert_eq!(apart % 1_000_000_000, 0, "whole ticks of 1 s: {times:?}");
}

#[test]
fn a_started_pmc_gets_the_kernel_mappings_after_another_pmc_came_and_went() {
    // hwpmc_mod.c pmc_start → pmc_log_kernel_mappings: the first sampling
    // PMC started writes the kernel's mappings, once per log
    // (PMC_PO_INITIAL_MAPPINGS_DONE), as MAP_IN with pid -1 and no PMC id:
    // they are the records of the PMC that was started. Allocating and
    // releasing another PMC (allocate's trial PMC) in between changes
    // nothing.
    let k = kernel();
    let (owner, log) = owner_with_log(backend(&k));
    let mut p = page_faults(&owner, Mode::TS, Flags::CALLCHAIN, Cpu::Any);
    p.attach(CHILD as u32).unwrap();
    // What hwpmc wrote at the attach (PMCATTACH, CHILD's MAP_IN) is read.
    owner.flush_logfile().unwrap();
    let other = page_faults(&owner, Mode::TS, Flags::CALLCHAIN, Cpu::Any);
    p.start().unwrap();
    p.stop().unwrap();
    other.release().unwrap();
    owner.close_logfile().unwrap();
    let log: Vec<LogRecord> = log_records(&log).into_iter().map(|(_, r)| r).collect();
    assert_eq!(
        log.iter().filter(|r| kernel_map_in(r)).count(),
        1,
        "{log:#?}"
    );
}

#[test]
fn a_released_pmcs_reused_id_does_not_take_another_pmcs_records() {
    // hwpmc_mod.c pmc_do_op_pmcallocate: a PMC's id is its CPU, mode,
    // class and row (PMC_ID_MAKE_ID), so a PMC allocated after one is
    // released may get the same id. The kernel mappings hwpmc logs at
    // another owner's start (pmc_start → pmc_log_kernel_mappings) are
    // not the new PMC's records: an owner that never started a PMC gets
    // only its targets' mappings (pmc_attach_one_process →
    // pmc_log_process_mappings), once per attach.
    let k = kernel();
    let b = backend(&k);
    let (sampler, _sampler_log) = owner_with_log(b.clone());
    let mut ss = page_faults(&sampler, Mode::SS, Flags::CALLCHAIN, Cpu::Id(0));
    let (watcher, log) = owner_with_log(b);
    let ts = || page_faults(&watcher, Mode::TS, Flags::CALLCHAIN, Cpu::Any);
    // The PMC of the latest PMCATTACH.
    let attached = || {
        k.calls()
            .into_iter()
            .rfind(|c| c.op == abi::Op::PMCATTACH)
            .unwrap()
            .pmcid
    };
    let mut first = ts();
    first.attach(CHILD as u32).unwrap();
    let first_id = attached();
    first.release().unwrap();
    ss.start().unwrap();
    let mut second = ts();
    second.attach(CHILD as u32).unwrap();
    let second_id = attached();
    assert_eq!(second_id, first_id, "the released PMC's row again");
    second.release().unwrap();
    watcher.close_logfile().unwrap();
    let map_ins: Vec<LogRecord> = log_records(&log)
        .into_iter()
        .map(|(_, r)| r)
        .filter(|r| matches!(r, LogRecord::MapIn { .. }))
        .collect();
    let child = LogRecord::MapIn {
        pid: CHILD as u32,
        start: 0x20_0000,
        path: "/usr/bin/yes".into(),
    };
    assert_eq!(map_ins, vec![child.clone(), child], "{map_ins:#?}");
    ss.stop().unwrap();
}
