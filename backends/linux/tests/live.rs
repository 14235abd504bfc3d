//! The binding against this machine's kernel: rings, self-monitoring,
//! sysfs, probes. Each test says at run time what it needs, checked by an
//! independent look at the machine (sysctls, sysfs, capabilities), never
//! by the code under test failing; when the machine lacks it the test is
//! reported `ignored` with `[token] reason` (never passed silently).
//! `PMC_LIVE_FORCE=token[,token…]` (or `1` for all) runs them anyway, as
//! `cargo xtask test --matrix` does, one requirement at a time, to prove
//! each skip.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use libtest_mimic::{Arguments, Completion, Failed, Trial};
use object::{Object, ObjectSymbol};
use pmc_linux::attr::{Attr, EventConfig, ReadFormat, SampleType, Software};
use pmc_linux::dynamic_probe::{Probe, symbol_file_offset};
use pmc_linux::event::{Event, OpenFlags, Target};
use pmc_linux::pmu::{Pmu, SYSFS_ROOT};
use pmc_linux::record::{Record, RecordParser};
use pmc_linux::ring::{RingBuffer, Wait};
use pmc_linux::selfmon::{FastReader, PageView, ReadPath, UserPage};
use pmc_linux::system;

#[path = "live/hardware.rs"]
mod hardware;

type Outcome = Result<Completion, Failed>;
type LiveTest = (&'static str, fn() -> Outcome);

/// Skips with `[token] reason` unless `holds` or `PMC_LIVE_FORCE` forces
/// `token` (same tokens as `pmc::probe::Requirement::token`).
macro_rules! require {
    ($token:expr, $holds:expr, $($reason:tt)+) => {
        if !$holds && !forced($token) {
            return Ok(Completion::ignored_with(format!("[{}] {}", $token, format!($($reason)+))));
        }
    };
}

/// Several requirements checked together, so a skip names every unmet one
/// (`[a,b] why a; why b`) and forcing one of them leaves the others as the
/// reason: `require_all!(("pmu:kprobe", holds, "why"), ("perfmon", …))`.
macro_rules! require_all {
    ($(($token:expr, $holds:expr, $($reason:tt)+)),+ $(,)?) => {
        let mut unmet: Vec<(&str, String)> = Vec::new();
        $(
            if !$holds && !forced($token) {
                unmet.push(($token, format!($($reason)+)));
            }
        )+
        if !unmet.is_empty() {
            let tokens: Vec<&str> = unmet.iter().map(|(t, _)| *t).collect();
            let reasons: Vec<&str> = unmet.iter().map(|(_, r)| r.as_str()).collect();
            return Ok(Completion::ignored_with(format!(
                "[{}] {}",
                tokens.join(","),
                reasons.join("; ")
            )));
        }
    };
}

/// The gate's own look at the machine, with plain reads rather than the
/// binding under test (`system::paranoid`, `system::has_capability`):
/// `kernel.perf_event_paranoid`, `None` without perf_event.
fn paranoid() -> Option<i32> {
    std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// Whether capability `bit` is in this process's effective set (`CapEff:`
/// of /proc/self/status).
fn has_capability(bit: u32) -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            let hex = s.lines().find_map(|l| l.strip_prefix("CapEff:"))?;
            u64::from_str_radix(hex.trim(), 16).ok()
        })
        .is_some_and(|caps| caps & (1 << bit) != 0)
}

/// CAP_PERFMON (38) or CAP_SYS_ADMIN (21), which the kernel lets override
/// perf_event_paranoid.
fn perfmon_capable() -> bool {
    has_capability(38) || has_capability(21)
}

/// Whether `PMC_LIVE_FORCE` names `token` (or is `1`/`all`).
fn forced(token: &str) -> bool {
    std::env::var("PMC_LIVE_FORCE").is_ok_and(|v| {
        let v = v.trim();
        v == "1" || v == "all" || v.split(',').any(|t| t.trim() == token)
    })
}

/// Opens a user-space self-monitoring event. perf_event_paranoid 2 allows
/// that to everyone, so the gate is the sysctl itself (an independent
/// look): only above 2 (Debian's 3, or perf_event absent) without
/// CAP_PERFMON is the test skipped; a refused open is then a failure.
macro_rules! open_self_event {
    ($attr:expr) => {{
        require!(
            "paranoid:2",
            paranoid().is_some_and(|p| p <= 2) || perfmon_capable(),
            "user-space self-monitoring needs perf_event_paranoid <= 2 (or CAP_PERFMON); it is {:?}",
            paranoid()
        );
        self_event($attr).map_err(|e| fail("open a user-space self-monitoring event", e))?
    }};
}

/// Fails with a message unless `cond` holds.
macro_rules! ensure {
    ($cond:expr, $($msg:tt)+) => {
        let holds: bool = $cond;
        if !holds {
            return Err(Failed::from(format!($($msg)+)));
        }
    };
}

#[path = "live/cgroup.rs"]
mod cgroup;

fn fail(what: &str, e: impl std::fmt::Display) -> Failed {
    Failed::from(format!("{what}: {e}"))
}

/// A user-space self-monitoring event, or the kernel's answer.
fn self_event(attr: &Attr) -> Result<Event, String> {
    Event::open(attr, Target::CALLER, None, OpenFlags::empty()).map_err(|e| e.to_string())
}

fn sampling(event: Software, period: u64) -> Attr {
    Attr::new(EventConfig::Software(event))
        .exclude_kernel(true)
        .sample_period(period)
        .sample_type(SampleType::IP | SampleType::TID | SampleType::TIME | SampleType::ID)
        .disabled(true)
}

/// Spins `ms` of this thread's CPU time.
fn spin_cpu_ms(ms: u64) {
    let end = system::thread_cpu_ns() + ms * 1_000_000;
    while system::thread_cpu_ns() < end {
        std::hint::black_box((0..1000u64).sum::<u64>());
    }
}

/// Counts the samples waiting in `ring` (and gives their space back).
fn drain_samples(ring: &mut RingBuffer, parser: &RecordParser) -> Result<Vec<(u64, u32)>, Failed> {
    let mut out = Vec::new();
    while let Some(bytes) = ring.next_record() {
        if let Record::Sample(s) = parser.parse(bytes, 0).map_err(|e| fail("parse", e))? {
            out.push((s.id().unwrap_or(0), s.tid().unwrap_or(0)));
        }
    }
    ring.release();
    Ok(out)
}

fn ring_sizes_must_be_powers_of_two() -> Outcome {
    let ev = open_self_event!(&sampling(Software::Dummy, 1));
    for n in [0, 3, 6] {
        ensure!(RingBuffer::new(&ev, n).is_err(), "{n} data pages accepted");
    }
    let one = RingBuffer::new(&ev, 1)
        .map_err(|e| fail("1 page", e))?
        .data_size();
    let ev2 = self_event(&sampling(Software::Dummy, 1)).map_err(|e| fail("open", e))?;
    let two = RingBuffer::new(&ev2, 2)
        .map_err(|e| fail("2 pages", e))?
        .data_size();
    ensure!(
        one == system::page_size() && two == 2 * one,
        "sizes {one} and {two}"
    );
    Ok(Completion::Completed)
}

fn ring_samples_arrive_and_wrap_without_losing_framing() -> Outcome {
    // 50 kHz cpu-clock samples of 40 bytes (header, IP, TID, TIME, ID) on
    // a one-page ring: it wraps about every 100 samples. How many arrive
    // per CPU second is the machine's (a loaded guest's timer fires late
    // and skips the periods it missed; exclude_kernel drops the ticks that
    // land in a system call), so the test runs until the ring wrapped
    // WRAPS times instead of for a fixed time, and bounds the count from
    // above by what a 20 µs timer can give in the wall time it ran.
    const WRAPS: usize = 20;
    const PERIOD_NS: u128 = 20_000;
    let attr = sampling(Software::CpuClock, PERIOD_NS as u64);
    let ev = open_self_event!(&attr);
    let id = ev.id().map_err(|e| fail("id", e))?;
    let mut ring = RingBuffer::new(&ev, 1).map_err(|e| fail("ring", e))?;
    let size = ring.data_size();
    let parser = RecordParser::for_attr(&attr);
    let me = system::gettid() as u32;
    let (mut samples, mut bytes, mut lost, mut last_time) = (0u128, 0usize, 0u64, 0u64);
    let started = Instant::now();
    ev.enable().map_err(|e| fail("enable", e))?;
    let give_up = system::thread_cpu_ns() + 20_000_000_000;
    while bytes < WRAPS * size && system::thread_cpu_ns() < give_up {
        std::hint::black_box((0..1000u64).sum::<u64>());
        while let Some(record) = ring.next_record() {
            bytes += record.len();
            match parser.parse(record, 0).map_err(|e| fail("parse", e))? {
                Record::Sample(s) => {
                    let (tid, time) = (s.tid().unwrap_or(0), s.time().unwrap_or(0));
                    ensure!(tid == me, "a sample of thread {tid}, not {me}");
                    ensure!(s.id() == Some(id), "sample id {:?}, not {id}", s.id());
                    ensure!(time >= last_time, "TIME {time} after {last_time}");
                    ensure!(record.len() == 40, "a {}-byte sample", record.len());
                    last_time = time;
                    samples += 1;
                }
                Record::Lost { lost: n, .. } => lost += n,
                other => return Err(format!("unexpected record {other:?}").into()),
            }
        }
        ring.release();
    }
    ev.disable().map_err(|e| fail("disable", e))?;
    let wall = started.elapsed().as_nanos();
    println!(
        "{samples} samples ({lost} lost) in {wall} ns, {bytes} bytes through a {size}-byte ring"
    );
    ensure!(
        bytes >= WRAPS * size,
        "{bytes} bytes in 20 s of CPU time: the {size}-byte ring wrapped fewer than {WRAPS} times"
    );
    ensure!(
        samples + u128::from(lost) <= wall / PERIOD_NS + 1,
        "{samples} samples and {lost} lost in {wall} ns: more than a {PERIOD_NS} ns timer gives"
    );
    Ok(Completion::Completed)
}

/// Header-only samples (empty sample_type: every record is exactly 8
/// bytes, perf_event.h's `struct perf_event_header`) account for every
/// published byte: `available` shrinks by each record taken, the last
/// record (which fills what is left) is delivered, and nothing is left.
fn ring_records_account_for_every_published_byte() -> Outcome {
    const PERF_RECORD_SAMPLE: u32 = 9;
    let attr = Attr::new(EventConfig::Software(Software::CpuClock))
        .exclude_kernel(true)
        .sample_period(100_000)
        .sample_type(SampleType::empty())
        .disabled(true);
    let ev = open_self_event!(&attr);
    // 8 pages (32 KiB) hold far more than 20 ms at 10 kHz: no wrap, no loss.
    let mut ring = RingBuffer::new(&ev, 8).map_err(|e| fail("ring", e))?;
    ensure!(
        ring.available() == 0,
        "{} bytes before enabling",
        ring.available()
    );
    ev.enable().map_err(|e| fail("enable", e))?;
    spin_cpu_ms(20);
    ev.disable().map_err(|e| fail("disable", e))?;
    let published = ring.available();
    ensure!(
        published >= 8 * 20 && published % 8 == 0,
        "{published} bytes published for >= 20 header-only samples"
    );
    let mut taken = 0;
    while let Some(record) = ring.next_record() {
        let kind = u32::from_ne_bytes(record[..4].try_into().expect("4 bytes"));
        ensure!(
            record.len() == 8 && kind == PERF_RECORD_SAMPLE,
            "record of type {kind}, {} bytes",
            record.len()
        );
        taken += record.len();
        // The record being read counts as consumed.
        ensure!(
            ring.available() == published - taken,
            "{} available after taking {taken} of {published}",
            ring.available()
        );
    }
    ensure!(
        taken == published && ring.available() == 0,
        "took {taken} of {published} bytes; {} left",
        ring.available()
    );
    Ok(Completion::Completed)
}

fn ring_wait_times_out_then_hangs_up_when_the_target_exits() -> Outcome {
    // Nothing happens on a disabled event: the wait times out.
    let idle = open_self_event!(&sampling(Software::CpuClock, 100_000));
    let ring = RingBuffer::new(&idle, 2).map_err(|e| fail("ring", e))?;
    let t = Instant::now();
    let w = ring
        .wait(Some(Duration::from_millis(50)))
        .map_err(|e| fail("wait", e))?;
    ensure!(w == Wait::Timeout, "an idle ring said {w:?}");
    ensure!(
        t.elapsed() >= Duration::from_millis(40),
        "timed out after {:?}",
        t.elapsed()
    );
    // A busy child: samples make the ring ready; its exit hangs up.
    let mut child = Command::new("sh")
        .args([
            "-c",
            "read go; i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done",
        ])
        .stdin(Stdio::piped())
        .spawn()
        .map_err(|e| fail("spawn sh", e))?;
    let attr = sampling(Software::CpuClock, 100_000).disabled(false);
    let target = Target {
        pid: child.id() as i32,
        cpu: -1,
    };
    let ev = Event::open(&attr, target, None, OpenFlags::empty())
        .map_err(|e| fail("open on the child", e))?;
    let mut ring = RingBuffer::new(&ev, 8).map_err(|e| fail("ring", e))?;
    let parser = RecordParser::for_attr(&attr);
    drop(child.stdin.take());
    let started = Instant::now();
    let (mut samples, mut readies) = (0, 0);
    let hung_up = loop {
        ensure!(
            started.elapsed() < Duration::from_secs(20),
            "no hang-up 20 s after the child started"
        );
        match ring
            .wait(Some(Duration::from_millis(500)))
            .map_err(|e| fail("wait", e))?
        {
            Wait::Ready => {
                readies += 1;
                samples += drain_samples(&mut ring, &parser)?.len();
            }
            Wait::Timeout => {}
            Wait::HungUp => break true,
        }
    };
    samples += drain_samples(&mut ring, &parser)?.len();
    let status = child.wait().map_err(|e| fail("wait child", e))?;
    println!("{samples} samples over {readies} wake-ups, then hang-up ({status})");
    ensure!(
        hung_up && samples > 10,
        "{samples} samples before the hang-up"
    );
    Ok(Completion::Completed)
}

/// A `sh` child paused on `read go` running `script`, and a cpu-clock
/// sampling event on it (enabled) with its ring.
fn child_with_ring(
    script: &str,
    period: u64,
) -> Result<(std::process::Child, Event, RingBuffer, Attr), Failed> {
    let child = Command::new("sh")
        .args(["-c", &format!("read go; {script}")])
        .stdin(Stdio::piped())
        .spawn()
        .map_err(|e| fail("spawn sh", e))?;
    let attr = sampling(Software::CpuClock, period).disabled(false);
    let target = Target {
        pid: child.id() as i32,
        cpu: -1,
    };
    let ev = Event::open(&attr, target, None, OpenFlags::empty())
        .map_err(|e| fail("open on the child", e))?;
    let ring = RingBuffer::new(&ev, 8).map_err(|e| fail("ring", e))?;
    Ok((child, ev, ring, attr))
}

/// `wait(None)` blocks until the target exits (never a timeout), and a
/// ring still holding records says Ready before it says HungUp.
fn ring_wait_blocks_without_timeout_and_prefers_records_to_hang_up() -> Outcome {
    require!(
        "paranoid:2",
        paranoid().is_some_and(|p| p <= 2) || perfmon_capable(),
        "sampling a child needs perf_event_paranoid <= 2 (or CAP_PERFMON)"
    );
    // A sleeping child: no samples at a 1 s period; only its exit wakes us.
    let (mut child, _ev, ring, _) = child_with_ring("sleep 0.3", 1_000_000_000)?;
    drop(child.stdin.take());
    let t = Instant::now();
    let w = ring.wait(None).map_err(|e| fail("wait", e))?;
    let waited = t.elapsed();
    child.wait().map_err(|e| fail("wait child", e))?;
    ensure!(
        w == Wait::HungUp && waited >= Duration::from_millis(200),
        "wait(None) said {w:?} after {waited:?} (the child sleeps 300 ms)"
    );
    // A busy child that has exited with its samples still in the ring.
    let (mut child, _ev, mut ring, attr) =
        child_with_ring("i=0; while [ $i -lt 100000 ]; do i=$((i+1)); done", 100_000)?;
    drop(child.stdin.take());
    child.wait().map_err(|e| fail("wait child", e))?;
    let w = ring
        .wait(Some(Duration::ZERO))
        .map_err(|e| fail("wait", e))?;
    ensure!(
        w == Wait::Ready,
        "{w:?} with {} bytes of records waiting",
        ring.available()
    );
    let samples = drain_samples(&mut ring, &RecordParser::for_attr(&attr))?.len();
    let w = ring
        .wait(Some(Duration::ZERO))
        .map_err(|e| fail("wait", e))?;
    ensure!(
        samples > 0 && w == Wait::HungUp,
        "after draining {samples} samples: {w:?}"
    );
    Ok(Completion::Completed)
}

fn ring_pause_output_holds_back_samples() -> Outcome {
    let attr = sampling(Software::CpuClock, 50_000);
    let ev = open_self_event!(&attr);
    let mut ring = RingBuffer::new(&ev, 16).map_err(|e| fail("ring", e))?;
    let parser = RecordParser::for_attr(&attr);
    ev.enable().map_err(|e| fail("enable", e))?;
    ev.pause_output(true).map_err(|e| fail("pause", e))?;
    drain_samples(&mut ring, &parser)?;
    spin_cpu_ms(50);
    let paused = drain_samples(&mut ring, &parser)?.len();
    ev.pause_output(false).map_err(|e| fail("resume", e))?;
    spin_cpu_ms(50);
    ev.disable().map_err(|e| fail("disable", e))?;
    let resumed = drain_samples(&mut ring, &parser)?.len();
    println!("{paused} samples while paused, {resumed} after resuming");
    ensure!(paused == 0, "{paused} samples written while paused");
    ensure!(
        resumed > 100,
        "only {resumed} samples in 50 ms at 20 kHz after resuming"
    );
    Ok(Completion::Completed)
}

fn ring_set_output_routes_two_events_into_one_ring() -> Outcome {
    let a = sampling(Software::CpuClock, 100_000);
    let b = sampling(Software::TaskClock, 100_000);
    let first = open_self_event!(&a);
    let second = self_event(&b).map_err(|e| fail("open", e))?;
    let mut ring = RingBuffer::new(&first, 16).map_err(|e| fail("ring", e))?;
    second
        .set_output(Some(&first))
        .map_err(|e| fail("set_output", e))?;
    let ids = (
        first.id().map_err(|e| fail("id", e))?,
        second.id().map_err(|e| fail("id", e))?,
    );
    first.enable().map_err(|e| fail("enable", e))?;
    second.enable().map_err(|e| fail("enable", e))?;
    spin_cpu_ms(50);
    first.disable().map_err(|e| fail("disable", e))?;
    second.disable().map_err(|e| fail("disable", e))?;
    let samples = drain_samples(&mut ring, &RecordParser::for_attr(&a))?;
    let of = |id| samples.iter().filter(|(i, _)| *i == id).count();
    println!(
        "{} samples of the first event, {} of the second",
        of(ids.0),
        of(ids.1)
    );
    ensure!(
        of(ids.0) > 100 && of(ids.1) > 100,
        "ids {ids:?} in {} samples",
        samples.len()
    );
    Ok(Completion::Completed)
}

fn ring_beyond_the_mlock_limit_names_the_sysctl() -> Outcome {
    const IPC_LOCK: u32 = 14;
    // The kernel allows perf_event_mlock_kb per CPU, then charges the rest
    // to RLIMIT_MEMLOCK.
    let memlock_kb = locked_memory_limit_kb();
    require_all!(
        (
            "not-ipc-lock",
            !has_capability(IPC_LOCK),
            "CAP_IPC_LOCK lifts perf_event_mlock_kb for this caller"
        ),
        (
            "restricted:0",
            paranoid().is_some_and(|p| p > -1),
            "at perf_event_paranoid -1 the kernel applies no perf mlock limit"
        ),
        (
            "memlock-limited",
            memlock_kb.is_some(),
            "RLIMIT_MEMLOCK is unlimited here"
        ),
    );
    let limit_kb = system::mlock_kb().unwrap_or(516) * system::online_cpu_count() as u64
        + memlock_kb.unwrap_or(0);
    let pages = ((limit_kb * 1024) as usize / system::page_size() * 2).next_power_of_two();
    let ev = self_event(&sampling(Software::Dummy, 1)).map_err(|e| fail("open", e))?;
    match RingBuffer::new(&ev, pages) {
        Ok(_) => Err(Failed::from(format!(
            "{pages} pages mapped beyond {limit_kb} KiB"
        ))),
        Err(e) => {
            let text = e.to_string();
            println!("{text}");
            ensure!(
                text.contains("perf_event_mlock_kb"),
                "the error does not name the sysctl: {text}"
            );
            Ok(Completion::Completed)
        }
    }
}

/// RLIMIT_MEMLOCK in KiB, from /proc/self/limits (`None`: unlimited).
fn locked_memory_limit_kb() -> Option<u64> {
    let limits = std::fs::read_to_string("/proc/self/limits").ok()?;
    let line = limits
        .lines()
        .find(|l| l.starts_with("Max locked memory"))?;
    let soft = line.split_whitespace().nth(3)?;
    soft.parse::<u64>().ok().map(|bytes| bytes / 1024)
}

fn task_clock_attr() -> Attr {
    Attr::new(EventConfig::Software(Software::TaskClock))
        .exclude_kernel(true)
        .read_format(ReadFormat::TOTAL_TIME_ENABLED | ReadFormat::TOTAL_TIME_RUNNING)
}

fn selfmon_software_events_fall_back_to_read() -> Outcome {
    let ev = open_self_event!(&task_clock_attr());
    let page = UserPage::map(&ev).map_err(|e| fail("map", e))?;
    let caps = page.caps();
    // Software events have no counter index (perf_swevent_event_idx is 0)
    // and never PERF_EVENT_FLAG_USER_READ_CNT, so no cap_user_rdpmc.
    ensure!(
        caps.index == 0 && !caps.user_rdpmc,
        "a software event on a hardware counter: {caps:?}"
    );
    ensure!(page.read().is_none(), "rdpmc read a software event");
    ensure!(page.reading().is_none(), "rdpmc read a software event");
    // The page through its field loads, at the offsets of
    // `struct perf_event_mmap_page` (linux/perf_event.h): mapping ran
    // perf_event_init_userpage (cap_bit0_is_deprecated, bit 1 of the
    // capabilities at 40; `size` at 72 = offsetof(__reserved) = 96) and
    // perf_event_update_userpage (`lock` at 8 bumped twice: even, >= 2;
    // `index` at 12 = 0).
    let raw_caps = page.load_u64(40);
    ensure!(
        raw_caps & 2 != 0,
        "cap_bit0_is_deprecated clear: {raw_caps:#x}"
    );
    ensure!(
        caps.user_time == (raw_caps & 8 != 0),
        "cap_user_time {} but capabilities {raw_caps:#x}",
        caps.user_time
    );
    ensure!(
        page.time_conversion().is_some() == caps.user_time,
        "a time conversion without cap_user_time, or none with it"
    );
    let lock = page.load_u32(8);
    ensure!(lock >= 2 && lock % 2 == 0, "lock {lock} mid-update");
    ensure!(page.load_u32(12) == 0, "index {}", page.load_u32(12));
    let size_half = if cfg!(target_endian = "little") {
        72
    } else {
        74
    };
    ensure!(
        page.load_u32(72) == 96 && page.load_u16(size_half) == 96,
        "size {} (u16 {}), not offsetof(__reserved) = 96",
        page.load_u32(72),
        page.load_u16(size_half)
    );
    ensure!(
        page.load_u16(48) == caps.pmc_width,
        "pmc_width {} vs {}",
        page.load_u16(48),
        caps.pmc_width
    );
    let reader = FastReader::new(&ev, ReadPath::Rdpmc).map_err(|e| fail("reader", e))?;
    let a = reader.read(&ev).map_err(|e| fail("read", e))?.value;
    let b = ev.read().map_err(|e| fail("read", e))?.value;
    let c = reader.read(&ev).map_err(|e| fail("read", e))?.value;
    ensure!(
        a <= b && b <= c && c > 0,
        "not monotonic across paths: {a} {b} {c}"
    );
    Ok(Completion::Completed)
}

fn selfmon_calibration_picks_read_when_rdpmc_is_unusable() -> Outcome {
    let ev = open_self_event!(&task_clock_attr());
    let cal = ReadPath::calibrate(&ev).map_err(|e| fail("calibrate", e))?;
    println!("{cal:?}");
    ensure!(
        cal.syscall_ns > 0.0,
        "read(2) measured at {} ns",
        cal.syscall_ns
    );
    ensure!(
        cal.chosen == ReadPath::Syscall && cal.rdpmc_ns.is_none(),
        "{cal:?}"
    );
    // A software event never has cap_user_rdpmc (see above): that is the
    // first reason checked, and the one given.
    ensure!(
        cal.rdpmc_unavailable
            .as_deref()
            .is_some_and(|r| r.contains("cap_user_rdpmc")),
        "not the missing capability as the reason: {cal:?}"
    );
    Ok(Completion::Completed)
}

fn perf_users_finds_this_process_with_an_open_event() -> Outcome {
    let _open = open_self_event!(&sampling(Software::Dummy, 1));
    let me = std::process::id() as i32;
    let users = system::perf_users();
    let mine = users
        .iter()
        .find(|u| u.pid == me)
        .ok_or("this process is not listed")?;
    ensure!(mine.events >= 1 && !mine.command.is_empty(), "{mine:?}");
    Ok(Completion::Completed)
}

fn this_machine_lists_its_pmus() -> Outcome {
    let all = Pmu::all_system();
    // perf_event exists (the binding is in use): an empty list is a broken
    // sysfs, not a machine without PMUs.
    ensure!(
        !all.is_empty() || paranoid().is_none(),
        "no PMUs in /sys/bus/event_source/devices although perf_event is present"
    );
    let software = all
        .iter()
        .find(|p| p.name == "software")
        .ok_or("no software PMU")?;
    ensure!(
        software.type_id == 1,
        "software PMU type {}",
        software.type_id
    );
    if let Some(msr) = all.iter().find(|p| p.name == "msr") {
        ensure!(msr.alias("tsc").is_some(), "msr lists no tsc: {msr:?}");
    }
    Ok(Completion::Completed)
}

#[inline(never)]
fn uprobe_target_function(x: u64) -> u64 {
    std::hint::black_box(x.rotate_left(7))
}

/// This test binary's mangled name for `uprobe_target_function`.
fn own_symbol() -> Option<(PathBuf, String)> {
    let exe = std::env::current_exe().ok()?;
    let data = std::fs::read(&exe).ok()?;
    let file = object::File::parse(&*data).ok()?;
    let name = file
        .symbols()
        .filter_map(|s| s.name().ok().map(str::to_string))
        .find(|n| n.contains("uprobe_target_function"))?;
    Some((exe, name))
}

fn count_calls(probe: &Probe, calls: impl Fn(u64)) -> Vec<(u64, u64)> {
    // The error's Display names the errno (EACCES, …): the matrix's proof.
    let ev = probe
        .open(Target::CALLER, None, OpenFlags::empty())
        .unwrap_or_else(|e| panic!("open uprobe: {e}"));
    let mut out = Vec::new();
    for n in [0u64, 1, 7, 1000] {
        ev.reset().unwrap();
        ev.enable().unwrap();
        for i in 0..n {
            calls(i);
        }
        ev.disable().unwrap();
        out.push((n, ev.read().unwrap().value));
    }
    out
}

fn uprobes_count_exactly_the_calls() -> Outcome {
    let root = Path::new(SYSFS_ROOT);
    require!(
        "pmu:uprobe",
        root.join("uprobe").exists(),
        "no uprobe PMU on this kernel"
    );
    let configure = |a: pmc_linux::attr::Attr| {
        a.disabled(true)
            .exclude_kernel(false)
            .read_format(ReadFormat::TOTAL_TIME_ENABLED | ReadFormat::TOTAL_TIME_RUNNING)
    };
    // A function of this binary, found by its (mangled) symbol.
    let (exe, sym) = own_symbol().expect("the test binary keeps its symbols");
    let off = symbol_file_offset(&exe, &sym).unwrap();
    let probe = match Probe::uprobe(root, &exe, off, false) {
        Ok(p) => p.configure(configure),
        Err(e) => panic!("{e}"),
    };
    require!(
        "perfmon",
        perfmon_capable(),
        "uprobes need CAP_PERFMON or CAP_SYS_ADMIN"
    );
    for (n, counted) in count_calls(&probe, |i| {
        std::hint::black_box(uprobe_target_function(i));
    }) {
        assert_eq!(counted, n, "{n} calls of {sym}");
    }
    // A libc function, and its return probe.
    let libc = pmc_linux::dynamic_probe::mapped_library("/libc.so").expect("libc is mapped");
    let off = symbol_file_offset(&libc, "getpid").unwrap();
    for ret in [false, true] {
        let probe = Probe::uprobe(root, &libc, off, ret)
            .unwrap()
            .configure(configure);
        for (n, counted) in count_calls(&probe, |_| {
            std::hint::black_box(std::process::id());
        }) {
            assert_eq!(counted, n, "{n} getpid calls (ret={ret})");
        }
    }
    Ok(Completion::Completed)
}

fn symbol_lookup_errors_name_the_closest_symbols() -> Outcome {
    let Some((exe, _)) = own_symbol() else {
        panic!("the test binary keeps its symbols");
    };
    let e = symbol_file_offset(&exe, "no_such_symbol_anywhere_xyz").unwrap_err();
    assert_eq!(e.errno(), libc::ENOENT, "{e}");
    let e = symbol_file_offset(Path::new("/nonexistent/bin"), "main").unwrap_err();
    assert!(e.to_string().contains("/nonexistent/bin"), "{e}");
    Ok(Completion::Completed)
}

fn kprobes_count_kernel_function_calls() -> Outcome {
    let root = Path::new(SYSFS_ROOT);
    if !root.join("kprobe").exists() {
        // Without the PMU the error says so; counting is then impossible.
        let e = Probe::kprobe(root, "do_sys_openat2", 0, false)
            .err()
            .ok_or("a kprobe without a kprobe PMU")?;
        ensure!(e.to_string().contains("kprobe"), "{e}");
    }
    require_all!(
        (
            "pmu:kprobe",
            root.join("kprobe").exists(),
            "no kprobe PMU on this kernel"
        ),
        (
            "perfmon",
            perfmon_capable(),
            "kprobes need CAP_PERFMON or CAP_SYS_ADMIN"
        ),
    );
    match Probe::kprobe(root, "do_sys_openat2", 0, false) {
        Err(e) => panic!("{e}"),
        Ok(p) => {
            let ev =
                p.configure(|a| a.disabled(true))
                    .open(Target::CALLER, None, OpenFlags::empty());
            match ev {
                Ok(ev) => {
                    ev.enable().unwrap();
                    for _ in 0..5 {
                        let _ = std::fs::File::open("/proc/self/stat");
                    }
                    ev.disable().unwrap();
                    // One do_sys_openat2 per open(2) of this thread, and
                    // nothing else opens a file on it in between (as
                    // tests/live/events.rs's pmc-level count of the same).
                    assert_eq!(ev.read().unwrap().value, 5, "5 opens");
                }
                Err(e) => panic!("{e}"),
            }
        }
    }
    Ok(Completion::Completed)
}

/// `ftrace:function` is refused to perf_event_open even with CAP_SYS_ADMIN
/// on some kernels (`perf stat -e ftrace:function` is refused too) while
/// `sched:sched_switch` opens in the same process: the hint must say the
/// kernel refuses this event, not blame a seccomp filter that would have
/// refused both. Whether this kernel refuses it is perf's answer, not the
/// binding's: where `perf stat` counts the event there is no refusal to
/// diagnose, and where perf refuses it our open must fail too.
fn a_refused_tracepoint_is_blamed_when_others_open() -> Outcome {
    let perf = perf_stat_of("ftrace:function");
    require_all!(
        (
            "perfmon",
            perfmon_capable(),
            "the refusal under test is the one a privileged process gets"
        ),
        (
            "tracefs",
            Path::new("/sys/kernel/tracing/events/ftrace/function").is_dir(),
            "needs tracefs at /sys/kernel/tracing with the ftrace:function event"
        ),
        (
            "program:perf",
            perf.is_some(),
            "perf tells whether this kernel refuses ftrace:function"
        ),
        (
            "kernel",
            perf.as_ref().is_none_or(|counted| !counted),
            "`perf stat -e ftrace:function true` counts it on this kernel; no refusal to diagnose"
        ),
    );
    let tracefs = pmc_linux::tracefs::Tracefs::at("/sys/kernel/tracing");
    let open = |event: &str| {
        let (sub, name) = event.split_once(':').expect("subsystem:event");
        let id = tracefs
            .tracepoint_id(sub, name)
            .map_err(|e| fail(&format!("the id of {event}"), e))?;
        Ok::<_, Failed>(Event::open(
            &Attr::new(EventConfig::Tracepoint(id)).disabled(true),
            Target::CALLER,
            None,
            OpenFlags::empty(),
        ))
    };
    open("sched:sched_switch")?.map_err(|e| fail("open sched:sched_switch", e))?;
    let Some(perf_counts) = perf else {
        return Err("perf: not found; it tells whether this kernel refuses ftrace:function".into());
    };
    let refusal = match open("ftrace:function")? {
        Ok(_) => {
            return Err(format!(
                "the binding opened ftrace:function; `perf stat -e ftrace:function true` {}",
                if perf_counts {
                    "counts it too"
                } else {
                    "is refused it"
                }
            )
            .into());
        }
        Err(e) => e,
    };
    let text = refusal.to_string();
    ensure!(
        matches!(refusal.errno(), libc::EPERM | libc::EACCES),
        "expected EPERM/EACCES, got: {text}"
    );
    ensure!(
        !text.contains("seccomp") && text.contains("the kernel refuses"),
        "the hint should blame the event (another tracepoint opened), got: {text}"
    );
    Ok(Completion::Completed)
}

/// `perf stat -e EVENT true`: `Some(true)` where perf counts the event,
/// `Some(false)` where perf says it has no permission to enable it ("No
/// permission to enable EVENT event."), `None` where perf cannot be run or
/// fails for another reason.
fn perf_stat_of(event: &str) -> Option<bool> {
    let out = Command::new("perf")
        .args(["stat", "-e", event, "true"])
        .stdin(Stdio::null())
        .output()
        .ok()?;
    if out.status.success() {
        return Some(true);
    }
    let err = String::from_utf8_lossy(&out.stderr).to_ascii_lowercase();
    (err.contains("no permission") || err.contains("not permitted")).then_some(false)
}

fn main() {
    let mut args = Arguments::from_args();
    // Probes and self-monitoring count this process: one test at a time.
    args.test_threads = Some(1);
    let tests: [LiveTest; 20] = [
        (
            "cgroup::a_loop_inside_is_counted_and_one_outside_is_not",
            cgroup::a_loop_inside_is_counted_and_one_outside_is_not,
        ),
        (
            "cgroup::a_hierarchy_without_perf_event_is_named_in_the_refusal",
            cgroup::a_hierarchy_without_perf_event_is_named_in_the_refusal,
        ),
        (
            "hardware::a_group_of_cycles_and_instructions_reads_in_one_call",
            hardware::a_group_of_cycles_and_instructions_reads_in_one_call,
        ),
        (
            "hardware::more_events_than_counters_are_multiplexed_and_scaled_like_perf_stat",
            hardware::more_events_than_counters_are_multiplexed_and_scaled_like_perf_stat,
        ),
        (
            "ring::sizes_must_be_powers_of_two",
            ring_sizes_must_be_powers_of_two,
        ),
        (
            "ring::samples_arrive_and_wrap_without_losing_framing",
            ring_samples_arrive_and_wrap_without_losing_framing,
        ),
        (
            "ring::records_account_for_every_published_byte",
            ring_records_account_for_every_published_byte,
        ),
        (
            "ring::wait_times_out_then_hangs_up_when_the_target_exits",
            ring_wait_times_out_then_hangs_up_when_the_target_exits,
        ),
        (
            "ring::wait_blocks_without_timeout_and_prefers_records_to_hang_up",
            ring_wait_blocks_without_timeout_and_prefers_records_to_hang_up,
        ),
        (
            "ring::pause_output_holds_back_samples",
            ring_pause_output_holds_back_samples,
        ),
        (
            "ring::set_output_routes_two_events_into_one_ring",
            ring_set_output_routes_two_events_into_one_ring,
        ),
        (
            "ring::beyond_the_mlock_limit_names_the_sysctl",
            ring_beyond_the_mlock_limit_names_the_sysctl,
        ),
        (
            "selfmon::software_events_fall_back_to_read",
            selfmon_software_events_fall_back_to_read,
        ),
        (
            "selfmon::calibration_picks_read_when_rdpmc_is_unusable",
            selfmon_calibration_picks_read_when_rdpmc_is_unusable,
        ),
        (
            "system::perf_users_finds_this_process_with_an_open_event",
            perf_users_finds_this_process_with_an_open_event,
        ),
        (
            "pmu::this_machine_lists_its_pmus",
            this_machine_lists_its_pmus,
        ),
        (
            "probe::uprobes_count_exactly_the_calls",
            uprobes_count_exactly_the_calls,
        ),
        (
            "probe::symbol_lookup_errors_name_the_closest_symbols",
            symbol_lookup_errors_name_the_closest_symbols,
        ),
        (
            "probe::kprobes_count_kernel_function_calls",
            kprobes_count_kernel_function_calls,
        ),
        (
            "tracepoint::a_refused_event_is_blamed_when_others_open",
            a_refused_tracepoint_is_blamed_when_others_open,
        ),
    ];
    let trials = tests
        .into_iter()
        .map(|(name, f)| Trial::ignorable_test(name, f))
        .collect();
    libtest_mimic::run(&args, trials).exit();
}
