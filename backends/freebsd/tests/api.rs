//! The safe API end to end over the kernel double: libpmc's call sequences
//! (lib/libpmc/libpmc.c `pmc_init`, `pmc_allocate`, `pmc_read`, `pmc_rw`,
//! …) produce the requests the kernel expects, and replies decode.

use std::sync::Arc;

use pmc_freebsd::abi::{self, Class, Errno, Mode, Op};
use pmc_freebsd::double::{KernelDouble, Machine, Process};
use pmc_freebsd::{Error, Hwpmc, PmuEvent, PmuEvents, PmuVendor};

const ME: i32 = 4000;

fn kernel() -> Arc<KernelDouble> {
    let k = KernelDouble::new(Machine::intel_2cpu(), ME);
    k.add_process(
        4001,
        Process {
            parent: ME,
            exiting: false,
            debuggable: true,
        },
    );
    Arc::new(k)
}

/// The double simulates an Intel amd64 machine; libpmc's class tables are
/// chosen by the architecture libpmc was built for, so pin it (the tests
/// also run on arm64 hosts).
fn amd64<T: pmc_freebsd::Transport>(mut h: Hwpmc<T>) -> Hwpmc<T> {
    h.resolver_mut().arch = pmc_freebsd::Arch::Amd64;
    h
}

#[test]
fn open_reads_cpuinfo_and_soft_events() {
    let k = kernel();
    let h = amd64(Hwpmc::open(k.clone()).unwrap());
    assert_eq!(h.ncpu(), 2);
    assert_eq!(h.npmc(), 24);
    assert_eq!(h.cpuinfo().pm_nclass, 4);
    assert_eq!(h.cpuinfo().pm_classes[1].pm_class, Class::IAP as u32);
    let soft = h.event_names_of_class(Class::SOFT);
    assert_eq!(soft[0], "CLOCK.HARD");
    assert_eq!(soft.len(), 6);
    assert_eq!(
        h.event_names_of_class(Class::TSC),
        vec!["cycles".to_string()]
    );
}

/// pmc_init: a module whose major.minor differs → EPROGMISMATCH; the
/// kernel itself refuses clients newer than it.
#[test]
fn version_mismatch_is_reported() {
    let mut m = Machine::intel_2cpu();
    m.module_version = 0x0B00_0000; // a newer module: kernel answers, library refuses
    let err = Hwpmc::open(KernelDouble::new(m, ME)).unwrap_err();
    assert!(
        matches!(
            err,
            Error::Version {
                module: 0x0B00_0000,
                library: 0x0A00_0000
            }
        ),
        "{err}"
    );
    assert_eq!(err.errno(), Errno::EPROGMISMATCH);
    let mut m = Machine::intel_2cpu();
    m.module_version = 0x0900_0000; // an older module refuses us
    let err = Hwpmc::open(KernelDouble::new(m, ME)).unwrap_err();
    assert!(
        matches!(
            err,
            Error::Kernel {
                op: Op::GETMODULEVERSION,
                errno: Errno::EPROGMISMATCH,
                ..
            }
        ),
        "{err}"
    );
}

#[test]
fn process_counting_cycle() {
    let k = kernel();
    let h = Hwpmc::open(k.clone()).unwrap();
    let pmc = h
        .allocate("SOFT-PAGE_FAULT.ALL", Mode::TC, 0, None, 0)
        .unwrap();
    assert_eq!(pmc.class(), Some(Class::SOFT));
    assert_eq!(pmc.mode(), Some(Mode::TC));
    h.attach(pmc, 0).unwrap();
    h.attach(pmc, 4001).unwrap();
    h.start(pmc).unwrap();
    k.advance(ME, 0, 10);
    k.advance(4001, 1, 5);
    k.advance(9999, 1, 100); // not a target; switches 4001 out of CPU 1
    // hwpmc_mod.c pmc_do_op_pmcrw: RUNNING and attached to its owner, the
    // PMC is read from the owner's hardware, loaded with pm_savedvalue at
    // its last switch in (pmc_process_csw_in): 4001's 5, saved at its
    // switch out, are not there yet.
    assert_eq!(h.read(pmc).unwrap(), 10);
    k.switch_out(ME);
    assert_eq!(h.read(pmc).unwrap(), 15, "after the owner's next switch in");
    h.stop(pmc).unwrap();
    // pmc_stop only marks a process PMC STOPPED: it is on the owner's CPU
    // until its switch out, and counts there.
    k.advance(ME, 0, 50);
    assert_eq!(h.read(pmc).unwrap(), 15, "stopped: pm_savedvalue");
    k.switch_out(ME);
    assert_eq!(h.read(pmc).unwrap(), 65, "the switch out saved the 50");
    k.advance(ME, 0, 50);
    assert_eq!(h.read(pmc).unwrap(), 65, "stopped PMCs are not switched in");
    assert_eq!(h.rw(pmc, 100).unwrap(), 65);
    h.write(pmc, 7).unwrap();
    assert_eq!(h.read(pmc).unwrap(), 7);
    h.detach(pmc, 4001).unwrap();
    h.start(pmc).unwrap();
    k.advance(4001, 0, 1000);
    k.switch_out(4001);
    assert_eq!(
        h.read(pmc).unwrap(),
        7,
        "detached process no longer counted"
    );
    h.release(pmc).unwrap();
    assert_eq!(k.live_pmcs(), 0);
}

#[test]
fn system_counting_with_initial_count() {
    let k = kernel();
    let h = amd64(Hwpmc::open(k.clone()).unwrap());
    let tsc = h.allocate("TSC-cycles", Mode::SC, 0, Some(1), 0).unwrap();
    assert_eq!(abi::pmc_id_to_cpu(tsc.0), 1);
    h.set(tsc, 1000).unwrap();
    h.start(tsc).unwrap();
    k.advance(ME, 1, 25);
    k.advance(ME, 0, 99); // other CPU
    assert_eq!(h.read(tsc).unwrap(), 1025);
    let rows = h.pmcinfo(1).unwrap();
    assert_eq!(rows[tsc.row() as usize].pm_ownerpid, ME);
    assert_eq!(rows[tsc.row() as usize].pm_event, abi::PMC_EV_TSC_TSC);
    assert_eq!(rows[tsc.row() as usize].pm_mode, Mode::SC as u32);
    assert_eq!(h.pmcinfo(0).unwrap()[tsc.row() as usize].pm_ownerpid, -1);
    h.release(tsc).unwrap();
}

#[test]
fn errors_say_what_failed_the_errno_and_what_to_do() {
    let k = kernel();
    let h = Hwpmc::open(k.clone()).unwrap();
    let pmc = h
        .allocate(
            "SOFT-CLOCK.HARD",
            Mode::TC,
            abi::PMC_F_LOG_PROCEXIT,
            None,
            0,
        )
        .unwrap();
    let err = h.start(pmc).unwrap_err();
    assert_eq!(err.errno(), Errno::EDOOFUS);
    let msg = err.to_string();
    assert!(
        msg.contains("PMCSTART") && msg.contains("EDOOFUS (88)") && msg.contains("configure"),
        "{msg}"
    );
    h.configure_logfile(k.pipe().0).unwrap();
    h.start(pmc).unwrap();
    h.writelog(0xABCD).unwrap();
    h.flush_logfile().unwrap();
    assert_eq!(k.log_cookies(), vec![0xABCD]);
    h.close_logfile().unwrap();

    h.attach(pmc, 4001).unwrap_err(); // running → EBUSY
    h.stop(pmc).unwrap();
    h.attach(pmc, 4001).unwrap();
    let err = h.attach(pmc, 4001).unwrap_err();
    assert!(
        matches!(
            err,
            Error::Kernel {
                op: Op::PMCATTACH,
                errno: Errno::EEXIST,
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("already attached"), "{err}");

    let err = h
        .allocate("SOFT-NOTHING", Mode::TC, 0, None, 0)
        .unwrap_err();
    assert_eq!(err.errno(), Errno::EINVAL);
    assert!(err.to_string().contains("SOFT-NOTHING"), "{err}");
    let err = h.pmcinfo(9).unwrap_err();
    assert!(err.to_string().contains("CPU 9"), "{err}");
}

#[test]
fn pmu_events_allocate_with_ev_pmu() {
    let k = kernel();
    let pmu = PmuEvents {
        vendor: PmuVendor::Intel,
        events: vec![PmuEvent {
            name: "br_inst_retired.all_branches".into(),
            event: "event=0xc4,umask=0x0".into(),
            topic: "pipeline".into(),
        }],
    };
    let mut h = Hwpmc::open_with_pmu(k.clone(), Some(pmu)).unwrap();
    h.resolver_mut().arch = pmc_freebsd::Arch::Amd64;
    // pmu_intel_alias_table: "branches" → "br_inst_retired.all_branches".
    let pmc = h.allocate("branches", Mode::TC, 0, None, 0).unwrap();
    assert_eq!(pmc.class(), Some(Class::IAP));
    let (_, flags) = k.recorded(pmc.0).unwrap();
    assert_ne!(flags & abi::PMC_F_EV_PMU, 0);
    h.start(pmc).unwrap();
    assert_eq!(h.get_msr(pmc).unwrap(), 0);
}

#[test]
fn admin_and_driver_stats() {
    let k = kernel();
    let h = amd64(Hwpmc::open(k.clone()).unwrap());
    h.disable(0, 0).unwrap();
    assert_eq!(h.pmcinfo(0).unwrap()[0].pm_enabled, 0);
    assert_eq!(
        h.allocate("TSC-cycles", Mode::SC, 0, Some(0), 0)
            .unwrap_err()
            .errno(),
        Errno::EPERM
    );
    h.enable(0, 0).unwrap();
    assert_eq!(h.pmcinfo(0).unwrap()[0].pm_enabled, 1);
    let stats = h.driver_stats().unwrap();
    // open: 3 calls; disable, pmcinfo, allocate (failed), enable, pmcinfo, stats.
    assert_eq!((stats.pm_syscalls, stats.pm_syscall_errors), (9, 1));
}

/// Off FreeBSD there is no hwpmc to open: `open_system` says so.
#[cfg(not(target_os = "freebsd"))]
#[test]
fn open_system_off_freebsd_is_unsupported() {
    let err = pmc_freebsd::open_system().unwrap_err();
    assert!(matches!(err, Error::Unsupported));
    assert!(err.to_string().contains("only available on FreeBSD"));
}

/// On FreeBSD `open_system` talks to the running kernel: it opens hwpmc
/// (pmc_init's GETMODULEVERSION and GETCPUINFO answered), or, without the
/// module (modfind fails), says to load it.
#[cfg(target_os = "freebsd")]
#[test]
fn open_system_on_freebsd_opens_or_names_kldload() {
    match Hwpmc::open_system() {
        Ok(h) => assert!(h.ncpu() >= 1 && h.npmc() >= 1, "{:?}", h.cpuinfo()),
        Err(e) => assert!(e.to_string().contains("kldload hwpmc"), "{e}"),
    }
}
