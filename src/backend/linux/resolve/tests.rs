//! Capabilities from one function for PMCs and cpuinfo rows, and the
//! shared machine description, on fixture sysfs trees (no hardware needed).

use std::path::{Path, PathBuf};

use super::caps::{SOFT, class_capabilities};
use super::description::{MachineDescription, refreshed_if_stale};
use super::{Sysfs, resolve_in};
use crate::backend::EventRequest;
use crate::{Capabilities as C, Class, Flags, Mode};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("backends/linux/tests/fixtures")
        .join(name)
}

fn sysfs(name: &str) -> Sysfs {
    Sysfs {
        pmu_root: fixture(name).into(),
        tracefs: Some(fixture("tracefs")),
        cpuid: None,
    }
}

/// A counting request of `spec` in `mode`, nothing else set.
fn request(spec: &crate::spec::EventSpec, mode: Mode) -> EventRequest<'_> {
    EventRequest {
        spec,
        mode,
        flags: Flags::empty(),
        sample_period: 0,
        pmcid: 0,
        buffer_pages: None,
        user_stack: None,
    }
}

fn try_resolve(spec: &str, mode: Mode, sysfs: &Sysfs) -> crate::Result<super::LinuxEvent> {
    let parsed = crate::spec::parse(spec).expect("spec parses");
    resolve_in(&request(&parsed, mode), sysfs)
}

fn resolve(spec: &str, mode: Mode, sysfs: &Sysfs) -> super::LinuxEvent {
    try_resolve(spec, mode, sysfs).unwrap_or_else(|e| panic!("{spec}: {e}"))
}

/// The encoding-qualifier capabilities (`PMC_CAP_EDGE`, `_THRESHOLD`,
/// `_INVERT`, `_QUALIFIER` in sys/sys/pmc.h).
const ENCODING: C = C::EDGE
    .union(C::THRESHOLD)
    .union(C::INVERT)
    .union(C::QUALIFIER);

#[test]
fn software_like_classes_have_freebsd_soft_caps() {
    // hwpmc_soft.c: SOFT_CAPS = READ | WRITE | INTERRUPT | USER | SYSTEM;
    // no SYSWIDE (per-CPU counters), no PRECISE, no encoding qualifiers.
    assert_eq!(
        SOFT,
        C::READ | C::WRITE | C::INTERRUPT | C::USER | C::SYSTEM
    );
    let d = MachineDescription::read(&sysfs("sysfs-intel-icx"));
    for class in [
        Class::Software,
        Class::Tracepoint,
        Class::Breakpoint,
        Class::Uprobe,
        Class::Kprobe,
    ] {
        assert_eq!(class_capabilities(&class, &d), SOFT, "{class}");
    }
}

#[test]
fn hardware_classes_follow_the_core_pmu() {
    // Ice Lake server fixture: cpu/caps/max_precise = 3, so PRECISE.
    let icx = MachineDescription::read(&sysfs("sysfs-intel-icx"));
    assert_eq!(
        class_capabilities(&Class::Hardware, &icx),
        SOFT | C::PRECISE
    );
    assert_eq!(class_capabilities(&Class::Cache, &icx), SOFT | C::PRECISE);
    assert_eq!(
        class_capabilities(&Class::Raw, &icx),
        SOFT | C::PRECISE | ENCODING
    );
    assert_eq!(
        class_capabilities(&Class::Pmu("cpu".into()), &icx),
        SOFT | C::PRECISE | ENCODING
    );
    // Hybrid fixture: cpu_atom has no max_precise, so the lowest is 0.
    let hybrid = MachineDescription::read(&sysfs("sysfs-hybrid"));
    assert_eq!(class_capabilities(&Class::Hardware, &hybrid), SOFT);
}

#[test]
fn uncore_pmus_are_syswide_or_domwide_and_do_not_interrupt() {
    // sys/sys/pmc.h: PMC_CAP_SYSWIDE (one counter for the system),
    // PMC_CAP_DOMWIDE (one per NUMA domain). AMD fixture on 16 CPUs:
    // power's cpumask is CPU 0 (the machine), amd_df's is 0,8 (one CPU
    // per package).
    let d = MachineDescription::read(&sysfs("sysfs-amd")).with_online_cpus(16);
    let rw = C::READ | C::WRITE;
    assert_eq!(
        class_capabilities(&Class::Pmu("power".into()), &d),
        rw | C::SYSWIDE
    );
    assert_eq!(
        class_capabilities(&Class::Pmu("amd_df".into()), &d),
        rw | C::DOMWIDE
    );
    // On one CPU a one-CPU cpumask is not "the machine instead of each CPU".
    let one = MachineDescription::read(&sysfs("sysfs-amd")).with_online_cpus(1);
    assert_eq!(class_capabilities(&Class::Pmu("power".into()), &one), rw);
    // msr has no cpumask: a per-task PMU like the software ones.
    assert_eq!(class_capabilities(&Class::Pmu("msr".into()), &d), SOFT);
    // A PMU that is not there has only READ | WRITE.
    assert_eq!(class_capabilities(&Class::Pmu("nope".into()), &d), rw);
}

#[test]
fn resolved_events_report_their_class_row() {
    // The PMC's capabilities (resolution) and cpuinfo's row for its class
    // (class_capabilities) are the same function's answer.
    for (tree, spec, mode) in [
        ("sysfs-intel-icx", "instructions", Mode::TC),
        ("sysfs-intel-icx", "r00c0", Mode::TC),
        ("sysfs-intel-icx", "cpu/event=0xc0,umask=0x0/", Mode::TC),
        ("sysfs-intel-icx", "task-clock", Mode::TC),
        ("sysfs-intel-icx", "syscalls:sys_enter_getpid", Mode::TC),
        ("sysfs-intel-icx", "mem:0x1000/8:w", Mode::TC),
        ("sysfs-intel-icx", "msr/tsc/", Mode::TC),
        ("sysfs-amd", "power/energy-pkg/", Mode::SC),
    ] {
        let s = sysfs(tree);
        let event = resolve(spec, mode, &s);
        let d = MachineDescription::read(&s);
        assert_eq!(
            event.caps,
            class_capabilities(&event.class, &d),
            "{tree} {spec} ({})",
            event.class
        );
    }
}

#[test]
fn the_description_is_reread_when_a_pmu_appears() {
    let root = tempfile::tempdir().expect("temp dir");
    let add_pmu = |name: &str, type_id: u32| {
        let dir = root.path().join(name);
        std::fs::create_dir_all(dir.join("format")).expect("mkdir");
        std::fs::write(dir.join("type"), format!("{type_id}\n")).expect("type");
        std::fs::write(dir.join("format/event"), "config:0-7\n").expect("format");
    };
    add_pmu("software", 1);
    let s = Sysfs {
        pmu_root: root.path().to_path_buf().into(),
        tracefs: None,
        cpuid: None,
    };
    let before = MachineDescription::read(&s);
    assert!(before.pmu("late").is_err());
    assert!(refreshed_if_stale(&s, &before).is_none(), "nothing changed");
    add_pmu("late", 42);
    let after = refreshed_if_stale(&s, &before).expect("the directory changed");
    assert_eq!(after.pmu("late").map(|p| p.type_id).ok(), Some(42));
    // Resolution against a description read before the PMU appeared
    // finds it through the refresh.
    let parsed = crate::spec::parse("late/event=0x3/").expect("parses");
    let resolved = super::pmu::pmu_event(&s, &before, &request(&parsed, Mode::TC), "late", &[])
        .expect("found after refresh");
    assert_eq!(resolved.class, Class::Pmu("late".into()));
}

#[test]
fn the_system_description_is_shared() {
    let a = super::description::system();
    let b = super::description::system();
    assert!(std::sync::Arc::ptr_eq(&a, &b), "read once, shared");
    assert!(Sysfs::system().is_system());
    assert!(!sysfs("sysfs-amd").is_system());
}

/// A FreeBSD SOFT event the parser leaves to hwpmc is refused here with
/// the parser's old reason and errno (EINVAL): Linux has no such count.
#[test]
fn soft_events_linux_lacks_are_refused_at_resolution_with_advice() {
    for (spec, says) in [
        ("SOFT-CLOCK.HARD", "cpu-clock"),
        ("SOFT-INTR.ALL", "irq:irq_handler_entry"),
        ("SOFT-PAGE_FAULT.AL", "unknown SOFT event"),
    ] {
        let parsed = crate::spec::parse(spec).expect("left to the backend");
        let request = EventRequest {
            spec: &parsed,
            mode: Mode::TC,
            flags: Flags::empty(),
            sample_period: 0,
            pmcid: 0,
            buffer_pages: None,
            user_stack: None,
        };
        let e = resolve_in(&request, &sysfs("sysfs-intel-icx")).unwrap_err();
        assert_eq!(e.errno(), libc::EINVAL, "{spec}: {e}");
        assert!(e.to_string().contains(says), "{spec}: {e}");
    }
    // The mapped ones are Linux's own events.
    resolve("SOFT-PAGE_FAULT.ALL", Mode::TC, &sysfs("sysfs-intel-icx"));
}

/// An Arm PMUv3 as Linux 6.1's arm_pmuv3 driver shows it (format
/// `event` = config:0-15, `cpus`), with MIDR `cpuid`.
fn arm_sysfs(root: &Path, cpuid: &'static str) -> Sysfs {
    let dir = root.join("armv8_pmuv3");
    std::fs::create_dir_all(dir.join("format")).expect("mkdir");
    std::fs::create_dir_all(dir.join("events")).expect("mkdir");
    std::fs::write(dir.join("type"), "8\n").expect("type");
    std::fs::write(dir.join("cpus"), "0-1\n").expect("cpus");
    std::fs::write(dir.join("format/event"), "config:0-15\n").expect("format");
    std::fs::write(dir.join("events/inst_retired"), "event=0x0008\n").expect("event");
    Sysfs {
        pmu_root: root.to_path_buf().into(),
        tracefs: None,
        cpuid: Some(cpuid.into()),
    }
}

/// libpmc's ARMV8 names resolve to the PMUv3 event number pmc_events.h
/// gives them (`INST_RETIRED` is `ARMV8_EVENT_08H`, `STALL_FRONTEND`
/// `_23H` in the Cortex-A76 table only, `EVENT_2A0H` 0x2A0), on the Arm
/// core PMU's own type, with the table hwpmc's CPU type selects from MIDR.
#[test]
fn libpmc_armv8_names_resolve_on_an_arm_core_pmu() {
    let root = tempfile::tempdir().expect("temp dir");
    // Cortex-A76: implementer 0x41, part 0xD0B.
    let a76 = arm_sysfs(root.path(), "0x00000000410fd0b0");
    for (spec, config) in [
        ("INST_RETIRED", 0x08),
        ("ARMV8-EVENT_11H", 0x11),
        ("BR_MIS_PRED", 0x10),
        ("stall-frontend", 0x23),
        ("EVENT_2A0H,usr", 0x2A0),
    ] {
        let e = resolve(spec, Mode::TC, &a76);
        assert_eq!(e.plan.attrs.len(), 1, "{spec}");
        assert_eq!(
            (e.plan.attrs[0].type_id(), e.plan.attrs[0].get_config()),
            (8, config),
            "{spec}"
        );
    }
    // QEMU's `-cpu max` (implementer 0): hwpmc's default, the A53 table,
    // which has LD_RETIRED and no STALL_FRONTEND.
    let root = tempfile::tempdir().expect("temp dir");
    let qemu = arm_sysfs(root.path(), "0x00000000000f0510");
    let e = resolve("LD_RETIRED", Mode::TC, &qemu);
    assert_eq!(e.plan.attrs[0].get_config(), 0x06);
    let Err(err) = try_resolve("STALL_FRONTEND", Mode::TC, &qemu) else {
        panic!("STALL_FRONTEND is not an A53 name");
    };
    assert!(err.to_string().contains("STALL_FRONTEND"), "{err}");
    // No Arm PMU, no ARMV8 names.
    assert!(try_resolve("STALL_FRONTEND", Mode::TC, &sysfs("sysfs-intel-icx")).is_err());
    assert!(try_resolve("EVENT_08H", Mode::TC, &sysfs("sysfs-amd")).is_err());
}

/// A name that names nothing here is an unknown event (EINVAL) whose typed
/// reason says which kind of name it was and offers the closest ones: a
/// PMU the sysfs tree lacks, a tracepoint tracefs lacks, an event name no
/// table knows.
#[test]
fn unknown_names_carry_their_typed_reason() {
    use crate::Reason;
    let icx = sysfs("sysfs-intel-icx");

    let e = try_resolve("cpv/event=0xc0/", Mode::TC, &icx).expect_err("no PMU cpv");
    assert_eq!(e.errno(), crate::Errno::INVAL, "{e}");
    match e.reason() {
        Some(Reason::NoSuchPmu { name, closest }) => {
            assert_eq!(name, "cpv");
            assert!(closest.iter().any(|c| c == "cpu"), "{closest:?}");
        }
        other => panic!("{other:?}: {e}"),
    }
    assert!(e.to_string().contains("there is no such PMU"), "{e}");

    let e = try_resolve("sched:sched_process_exix", Mode::TC, &icx).expect_err("no tracepoint");
    assert_eq!(e.errno(), crate::Errno::INVAL, "{e}");
    match e.reason() {
        Some(Reason::NoSuchTracepoint {
            subsystem,
            event,
            closest,
        }) => {
            assert_eq!(
                (subsystem.as_str(), event.as_str()),
                ("sched", "sched_process_exix")
            );
            assert!(
                closest.iter().any(|c| c == "sched:sched_process_exit"),
                "{closest:?}"
            );
        }
        other => panic!("{other:?}: {e}"),
    }

    let e = try_resolve("topdown-retirinx", Mode::TC, &icx).expect_err("no such event");
    match e.reason() {
        Some(Reason::UnknownEvent { closest }) => {
            assert!(
                closest.iter().any(|c| c == "topdown-retiring"),
                "{closest:?}"
            );
        }
        other => panic!("{other:?}: {e}"),
    }
}

/// pmcstat's default period depends on whether an event counts time: the
/// resolved attr decides it, whatever the spelling.
#[test]
fn clocks_count_nanoseconds_in_every_spelling_and_counted_events_do_not() {
    use crate::backend::PreparedEvent;
    let sysfs = sysfs("sysfs-intel-icx");
    for spec in [
        "cpu-clock",
        "task-clock",
        "cpu-clock:u",
        "cpu-clock,usr",
        "task-clock:k",
        "SOFT-CLOCK.PROF",
        "soft-clock.prof,usr",
    ] {
        let event = resolve(spec, Mode::TS, &sysfs);
        assert!(event.counts_nanoseconds(), "{spec} counts nanoseconds");
    }
    for spec in [
        "page-faults",
        "context-switches",
        "cs:u",
        "instructions",
        "cycles,usr",
        "SOFT-PAGE_FAULT.ALL",
    ] {
        let event = resolve(spec, Mode::TS, &sysfs);
        assert!(!event.counts_nanoseconds(), "{spec} counts events");
    }
}
