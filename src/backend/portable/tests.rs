//! The portable backend on this machine: values against independent
//! measurements (the burning thread's own CPU clock, a known number of
//! fresh pages, sleeps), and its refusals.
//!
//! Its quantities are process-wide, so the measuring tests run alone in a
//! fresh copy of this test binary ([`alone_in_child`]): the other tests'
//! threads would otherwise add to every total.

use std::process::Command;
use std::sync::Arc;

use super::PortableBackend;
use crate::{Capabilities, Cpu, Error, Flags, Mode, Pmc};

const CHILD_ENV: &str = "PMC_PORTABLE_TEST_CHILD";

/// In the parent, runs test `name` (this module's) alone in a fresh copy
/// of this test binary and requires that it ran and passed; returns false
/// there. In that child, returns true: the caller measures.
fn alone_in_child(name: &str) -> bool {
    if std::env::var_os(CHILD_ENV).is_some() {
        return true;
    }
    let module = module_path!()
        .split_once("::")
        .map_or(module_path!(), |(_, m)| m);
    let test = format!("{module}::{name}");
    let out = Command::new(std::env::current_exe().expect("current_exe"))
        .args([test.as_str(), "--exact", "--test-threads=1", "--nocapture"])
        .env(CHILD_ENV, "1")
        .output()
        .expect("run the test binary again");
    let text = format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success(),
        "{test} failed in its own process:\n{text}"
    );
    assert!(
        text.contains("1 passed"),
        "{test} did not run in its own process:\n{text}"
    );
    false
}

fn backend() -> Arc<PortableBackend> {
    Arc::new(PortableBackend::new("test"))
}

fn allocate(spec: &str, mode: Mode, flags: Flags) -> crate::Result<Pmc> {
    let cpu = if mode.is_system() {
        Cpu::Id(0)
    } else {
        Cpu::Any
    };
    crate::Owner::new(backend()).allocate_with_count(spec, mode, flags, cpu, 0)
}

fn tc(spec: &str) -> Pmc {
    let mut pmc =
        allocate(spec, Mode::TC, Flags::empty()).unwrap_or_else(|e| panic!("allocate {spec}: {e}"));
    pmc.attach(0)
        .unwrap_or_else(|e| panic!("attach {spec}: {e}"));
    pmc
}

/// The calling thread's CPU time (the reference clock: not what the
/// backend reads, which is the process's).
fn thread_cpu_ns() -> u64 {
    use nix::time::{ClockId, clock_gettime};
    let t = clock_gettime(ClockId::CLOCK_THREAD_CPUTIME_ID).expect("thread CPU clock");
    super::source::timespec_ns(t.tv_sec(), t.tv_nsec(), 1)
}

/// Burns `ms` of this thread's CPU time in user space; returns the thread
/// CPU time it took as measured around it.
fn burn_ms(ms: u64) -> u64 {
    let start = thread_cpu_ns();
    let end = start + ms * 1_000_000;
    let mut x = 1u64;
    while thread_cpu_ns() < end {
        for _ in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
        }
        std::hint::black_box(x);
    }
    thread_cpu_ns() - start
}

fn within(got: u64, want: u64, fraction: f64) -> bool {
    (got as f64 - want as f64).abs() <= want as f64 * fraction
}

#[test]
fn task_clock_matches_the_thread_cpu_time_of_a_burn() {
    if !alone_in_child("task_clock_matches_the_thread_cpu_time_of_a_burn") {
        return;
    }
    let mut task = tc("task-clock");
    let mut cpu = tc("cpu-clock");
    task.start().unwrap();
    cpu.start().unwrap();
    let burnt = burn_ms(300);
    cpu.stop().unwrap();
    task.stop().unwrap();
    let (t, c) = (task.read().unwrap(), cpu.read().unwrap());
    eprintln!("burnt {burnt} ns of thread CPU time; task-clock {t}, cpu-clock {c}");
    assert!(within(t, burnt, 0.03), "task-clock {t} vs {burnt} ns burnt");
    assert!(within(c, burnt, 0.03), "cpu-clock {c} vs {burnt} ns burnt");
    // Stopped: the value stays.
    burn_ms(20);
    assert_eq!(task.read().unwrap(), t);
}

#[test]
fn counts_sum_over_enabled_intervals_only() {
    if !alone_in_child("counts_sum_over_enabled_intervals_only") {
        return;
    }
    let mut pmc = tc("task-clock");
    pmc.start().unwrap();
    let first = burn_ms(100);
    pmc.stop().unwrap();
    let not_counted = burn_ms(200);
    pmc.start().unwrap();
    let second = burn_ms(100);
    // Read live while running, then stopped.
    let live = pmc.read().unwrap();
    pmc.stop().unwrap();
    let total = pmc.read().unwrap();
    let reading = pmc.read_detailed().unwrap();
    eprintln!("intervals {first} + {second} (gap {not_counted}): counted {total}");
    assert!(
        within(total, first + second, 0.03),
        "{total} vs {}",
        first + second
    );
    assert!(
        live <= total && within(live, first + second, 0.03),
        "live {live}"
    );
    assert!(!reading.multiplexed, "{reading:?}");
    assert_eq!(reading.time_running, reading.time_enabled);
    assert!(reading.time_enabled >= first + second, "{reading:?}");
}

#[test]
fn usr_and_os_split_the_cpu_time() {
    if !alone_in_child("usr_and_os_split_the_cpu_time") {
        return;
    }
    let mut usr = tc("task-clock,usr");
    let mut os = tc("task-clock:k");
    assert!(
        usr.capabilities()
            .contains(Capabilities::USER | Capabilities::SYSTEM)
    );
    usr.start().unwrap();
    os.start().unwrap();
    let burnt = burn_ms(300);
    os.stop().unwrap();
    usr.stop().unwrap();
    let (u, s) = (usr.read().unwrap(), os.read().unwrap());
    eprintln!("burnt {burnt} ns in user space: usr {u}, os {s}");
    // ru_utime/ru_stime split the precise total by the ticks that found
    // the process in each mode: a user-space loop is (nearly) all user.
    assert!(
        u >= burnt * 8 / 10 && u <= burnt * 103 / 100,
        "usr {u} of {burnt}"
    );
    assert!(s <= burnt * 2 / 10, "os {s} of {burnt}");
}

/// Writes one byte to each page of `buf`: a zeroed allocation larger than
/// glibc's largest mmap threshold (32 MiB) is fresh anonymous memory past
/// its first page (where malloc writes its chunk header), and with
/// transparent huge pages off for this process each page faults once.
fn touch_fresh_pages(buf: &mut [u8], page: usize) {
    for i in (0..buf.len()).step_by(page) {
        buf[i] = 1;
    }
    std::hint::black_box(&buf);
}

#[test]
fn faults_count_fresh_pages() {
    if !alone_in_child("faults_count_fresh_pages") {
        return;
    }
    #[cfg(target_os = "linux")]
    nix::sys::prctl::set_thp_disable(true).expect("PR_SET_THP_DISABLE");
    let page = nix::unistd::sysconf(nix::unistd::SysconfVar::PAGE_SIZE)
        .expect("sysconf")
        .expect("a page size") as usize;
    const PAGES: u64 = 2000;
    let mut buf = vec![0u8; (64 << 20).max((PAGES as usize + 1) * page)];
    let mut faults = tc("page-faults");
    let mut minor = tc("minor-faults");
    let mut major = tc("major-faults");
    for p in [&mut faults, &mut minor, &mut major] {
        p.start().unwrap();
    }
    touch_fresh_pages(&mut buf[page..(PAGES as usize + 1) * page], page);
    for p in [&mut faults, &mut minor, &mut major] {
        p.stop().unwrap();
    }
    let (f, mi, ma) = (
        faults.read().unwrap(),
        minor.read().unwrap(),
        major.read().unwrap(),
    );
    eprintln!("{PAGES} fresh pages: page-faults {f}, minor {mi}, major {ma}");
    assert!((PAGES..=PAGES + 64).contains(&f), "page-faults {f}");
    assert!((PAGES..=PAGES + 64).contains(&mi), "minor-faults {mi}");
    assert!(ma <= 64, "major-faults {ma}");
}

#[test]
fn context_switches_count_sleeps() {
    if !alone_in_child("context_switches_count_sleeps") {
        return;
    }
    const SLEEPS: u64 = 30;
    let mut cs = tc("cs");
    cs.start().unwrap();
    for _ in 0..SLEEPS {
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    cs.stop().unwrap();
    let n = cs.read().unwrap();
    eprintln!("{SLEEPS} sleeps: {n} context switches");
    // Each sleep blocks once (a voluntary switch); preemptions may add some.
    assert!((SLEEPS..=SLEEPS + 200).contains(&n), "context-switches {n}");
}

fn refusal(spec: &str, mode: Mode, flags: Flags) -> Error {
    match allocate(spec, mode, flags) {
        Ok(pmc) => panic!(
            "{spec} in {mode} {flags:?} was allocated: {:?}",
            pmc.event_description()
        ),
        Err(e) => e,
    }
}

#[test]
fn modes_other_than_tc_are_refused_at_allocate_naming_the_backend() {
    for mode in [Mode::SC, Mode::SS, Mode::TS] {
        let e = refusal("task-clock", mode, Flags::empty());
        assert!(matches!(e, Error::NotSupported { .. }), "{mode}: {e}");
        assert_eq!(e.errno(), libc::EOPNOTSUPP);
        let text = e.to_string();
        assert!(
            text.contains("portable backend (test)") && text.contains(&mode.to_string()),
            "{text}"
        );
    }
}

#[test]
fn logging_flags_are_refused_and_descendants_at_attach() {
    for flags in [Flags::LOG_PROCCSW, Flags::LOG_PROCEXIT] {
        let e = refusal("task-clock", Mode::TC, flags);
        assert!(matches!(e, Error::NotSupported { .. }), "{flags:?}: {e}");
        assert!(e.to_string().contains("portable backend"), "{e}");
    }
    // hwpmc accepts CALLCHAIN on a counting PMC (it only affects samples),
    // and DESCENDANTS at allocate; following children is refused at attach.
    allocate("task-clock", Mode::TC, Flags::CALLCHAIN).unwrap();
    let mut p = allocate("task-clock", Mode::TC, Flags::DESCENDANTS).unwrap();
    let e = p.attach(0).unwrap_err();
    assert!(matches!(e, Error::NotSupported { .. }), "{e}");
    assert!(e.to_string().contains("DESCENDANTS"), "{e}");
}

#[test]
fn events_without_an_os_total_are_refused() {
    for spec in [
        "instructions",
        "cycles",
        "L1-dcache-load-misses",
        "r1c0",
        "syscalls:sys_enter_write",
        "mem:0x1000",
        "cpu/event=0xc0/",
        "cpu-migrations",
        "alignment-faults",
    ] {
        let e = refusal(spec, Mode::TC, Flags::empty());
        assert!(matches!(e, Error::NotSupported { .. }), "{spec}: {e}");
        let text = e.to_string();
        assert!(
            text.contains("portable backend") && text.contains("task-clock"),
            "{text}"
        );
        // What it offers instead is only what this OS maintains.
        assert_eq!(
            text.contains("signals"),
            !cfg!(any(target_os = "linux", target_os = "android")),
            "{text}"
        );
    }
    let e = refusal("frobnicate", Mode::TC, Flags::empty());
    assert!(matches!(e, Error::UnknownEvent { .. }), "{e}");
    assert_eq!(e.errno(), libc::EINVAL);
    assert!(e.to_string().contains("inblock"), "{e}");
    // The typed reason offers the names nearest the one asked for.
    let e = refusal("inblocks", Mode::TC, Flags::empty());
    match e.reason() {
        Some(crate::Reason::UnknownEvent { closest }) => {
            assert_eq!(closest.first().map(String::as_str), Some("inblock"), "{e}");
        }
        other => panic!("{other:?}: {e}"),
    }
}

#[test]
fn qualifiers_it_cannot_honour_are_refused() {
    for spec in ["page-faults,usr", "cs:k", "inblock,os"] {
        let e = refusal(spec, Mode::TC, Flags::empty());
        assert!(matches!(e, Error::NotSupported { .. }), "{spec}: {e}");
        assert!(e.to_string().contains("every privilege level"), "{e}");
    }
    for spec in [
        "task-clock,edge",
        "page-faults,precise",
        "cs,inv",
        "task-clock:I",
    ] {
        let e = refusal(spec, Mode::TC, Flags::empty());
        assert!(matches!(e, Error::NotSupported { .. }), "{spec}: {e}");
        assert!(e.to_string().contains("qualifier"), "{e}");
    }
    // Honoured: both levels (everything), and `pinned` (never multiplexed).
    for spec in [
        "task-clock,usr,os",
        "page-faults:uk",
        "cs,pinned",
        "SOFT-PAGE_FAULT.ALL",
    ] {
        allocate(spec, Mode::TC, Flags::empty()).unwrap_or_else(|e| panic!("{spec}: {e}"));
    }
}

#[test]
fn block_io_names_resolve_and_signals_only_where_maintained() {
    for spec in ["inblock", "OUBLOCK"] {
        let pmc = allocate(spec, Mode::TC, Flags::empty()).unwrap();
        assert!(
            pmc.event_description().contains("ru_"),
            "{}",
            pmc.event_description()
        );
    }
    let signals = allocate("signals", Mode::TC, Flags::empty());
    if cfg!(any(target_os = "linux", target_os = "android")) {
        let e = signals.unwrap_err();
        assert!(e.to_string().contains("ru_nsignals"), "{e}");
    } else {
        signals.unwrap();
    }
}

#[test]
fn only_the_calling_process_can_be_attached() {
    let mut pmc = allocate("task-clock", Mode::TC, Flags::empty()).unwrap();
    // Our parent exists but is another process.
    let parent = std::os::unix::process::parent_id();
    let e = pmc.attach(parent).unwrap_err();
    assert!(matches!(e, Error::NotSupported { .. }), "{e}");
    assert!(e.to_string().contains("calling process"), "{e}");
    // A pid that does not exist is hwpmc's ESRCH, decided by `Pmc`.
    let e = pmc.attach(i32::MAX as u32).unwrap_err();
    assert_eq!(e.errno(), libc::ESRCH, "{e}");
    // The caller by pid and as 0.
    pmc.attach(std::process::id()).unwrap();
    assert_eq!(pmc.handles(), 0);
}

#[test]
fn start_attaches_the_caller_and_freebsd_rules_come_from_pmc() {
    let mut pmc = allocate("page-faults", Mode::TC, Flags::empty()).unwrap();
    // pmc_stop of a PMC never started is EINVAL.
    assert_eq!(pmc.stop().unwrap_err().errno(), libc::EINVAL);
    pmc.start().unwrap();
    assert_eq!(pmc.targets(), vec![std::process::id()]);
    // pmc_write while running is EBUSY.
    assert_eq!(pmc.write(5).unwrap_err().errno(), libc::EBUSY);
    pmc.stop().unwrap();
    let v = pmc.read().unwrap();
    pmc.write(v + 1000).unwrap();
    assert_eq!(pmc.read().unwrap(), v + 1000);
}

#[test]
fn the_machine_it_describes() {
    let b = PortableBackend::new("test");
    let info = crate::backend::BackendImpl::cpuinfo(&b).unwrap();
    assert_eq!(info.npmc, 0);
    assert_eq!(info.classes.len(), 1);
    let names = crate::backend::BackendImpl::event_names(&b, &crate::Class::Software).unwrap();
    assert!(names.contains(&"task-clock".to_string()), "{names:?}");
    assert_eq!(
        names.contains(&"signals".to_string()),
        !cfg!(any(target_os = "linux", target_os = "android"))
    );
    assert!(crate::backend::BackendImpl::process_exists(
        &b,
        std::process::id()
    ));
    assert!(!crate::backend::BackendImpl::process_exists(&b, 0));
    assert!(crate::backend::BackendImpl::executable_path(&b, std::process::id()).is_some());
}

/// Linux's `ru_oublock`/`ru_inblock` are the task's storage write and read
/// bytes / 512: written when a page is dirtied, read when a read misses
/// the page cache. Block-less file systems (tmpfs) account none.
#[cfg(target_os = "linux")]
#[test]
fn block_io_counts_synced_writes_and_uncached_reads() {
    use std::io::{Read, Write};
    if !alone_in_child("block_io_counts_synced_writes_and_uncached_reads") {
        return;
    }
    const BYTES: usize = 4 << 20;
    // Next to the test binary: the build's own file system; the temporary
    // directory where this user cannot write there (the privilege
    // matrix runs the tests as nobody in root's build tree).
    let exe = std::env::current_exe().unwrap();
    let dir = tempfile::tempdir_in(exe.parent().unwrap())
        .or_else(|_| tempfile::tempdir())
        .unwrap();
    let fs = nix::sys::statfs::statfs(dir.path()).unwrap();
    let block_less = fs.filesystem_type() == nix::sys::statfs::TMPFS_MAGIC;
    let path = dir.path().join("blocks");
    let mut out = tc("oublock");
    let mut inb = tc("inblock");
    out.start().unwrap();
    let mut file = std::fs::File::create(&path).unwrap();
    file.write_all(&vec![7u8; BYTES]).unwrap();
    file.sync_all().unwrap();
    out.stop().unwrap();
    let mut file = std::fs::File::open(&path).unwrap();
    // The pages are clean after the sync: dropping them makes the read
    // go to storage.
    nix::fcntl::posix_fadvise(
        &file,
        0,
        0,
        nix::fcntl::PosixFadviseAdvice::POSIX_FADV_DONTNEED,
    )
    .unwrap();
    let mut back = Vec::with_capacity(BYTES);
    inb.start().unwrap();
    file.read_to_end(&mut back).unwrap();
    inb.stop().unwrap();
    assert_eq!(back.len(), BYTES);
    let (o, i) = (out.read().unwrap(), inb.read().unwrap());
    let want = (BYTES / 512) as u64;
    eprintln!(
        "{BYTES} bytes on {:?}: oublock {o}, inblock {i} (512-byte units: {want})",
        fs.filesystem_type()
    );
    if block_less {
        assert_eq!((o, i), (0, 0), "tmpfs does no block I/O");
    } else {
        assert!((want..=want * 2).contains(&o), "oublock {o}, want ≥ {want}");
        assert!((want..=want * 2).contains(&i), "inblock {i}, want ≥ {want}");
    }
}

/// The CPU clocks count nanoseconds (pmcstat's default period for them is
/// a time); the rusage counts count events.
#[test]
fn the_cpu_clocks_count_nanoseconds_and_the_rusage_counts_do_not() {
    for (spec, nanoseconds) in [
        ("task-clock", true),
        ("cpu-clock,usr", true),
        ("task-clock,os", true),
        ("page-faults", false),
        ("context-switches", false),
    ] {
        let pmc = tc(spec);
        assert_eq!(pmc.counts_nanoseconds(), nanoseconds, "{spec}");
    }
}
