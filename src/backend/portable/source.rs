//! What the portable backend can measure, how an event specifier maps onto
//! it, and the one system call that reads it.
//!
//! Everything here is a process-wide total of the calling process (all of
//! its threads, those that exited included), as hwpmc's TC mode on a
//! process counts all of its threads: `clock_gettime` of
//! `CLOCK_PROCESS_CPUTIME_ID` for CPU time and `getrusage(RUSAGE_SELF)`
//! for the rest. A counter's value is the difference of two such totals.

use crate::spec::{EventName, EventSpec, Privilege, Qualifiers, SoftwareEvent};
use crate::{Error, Result};

/// One quantity the operating system keeps for the calling process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// CPU time in nanoseconds, user + system (`task-clock`, `cpu-clock`):
    /// `CLOCK_PROCESS_CPUTIME_ID` where the OS has it, else `getrusage`.
    CpuTime,
    /// User CPU time in nanoseconds (`task-clock,usr`): `ru_utime`, whose
    /// resolution is a microsecond.
    UserTime,
    /// System CPU time in nanoseconds (`task-clock,os`): `ru_stime`.
    SystemTime,
    /// Page faults, minor + major (`page-faults`, `faults`).
    Faults,
    /// Page faults served without I/O (`minor-faults`): `ru_minflt`.
    MinorFaults,
    /// Page faults that needed I/O (`major-faults`): `ru_majflt`.
    MajorFaults,
    /// Voluntary + involuntary context switches (`context-switches`,
    /// `cs`): `ru_nvcsw + ru_nivcsw`.
    ContextSwitches,
    /// Block input operations (`inblock`): `ru_inblock` (on Linux, 512-byte
    /// units read from storage).
    BlockIn,
    /// Block output operations (`oublock`): `ru_oublock` (on Linux,
    /// 512-byte units written to storage, counted when the page is
    /// dirtied).
    BlockOut,
    /// Signals delivered (`signals`): `ru_nsignals`.
    Signals,
}

/// The event names the portable backend accepts besides perf's software
/// names (lower case): the `getrusage` fields without their `ru_` prefix,
/// as BSD's `struct rusage` spells them.
const RUSAGE_NAMES: &[(&str, Source)] = &[
    ("inblock", Source::BlockIn),
    ("oublock", Source::BlockOut),
    ("signals", Source::Signals),
];

/// Every event name the portable backend accepts, canonical spelling.
pub const EVENT_NAMES: &[&str] = &[
    "task-clock",
    "cpu-clock",
    "page-faults",
    "minor-faults",
    "major-faults",
    "context-switches",
    "inblock",
    "oublock",
    "signals",
];

/// The event names this OS gives values for ([`EVENT_NAMES`] without
/// those it does not maintain).
pub fn names_here() -> Vec<&'static str> {
    EVENT_NAMES
        .iter()
        .copied()
        .filter(|n| *n != "signals" || Source::Signals.unavailable_here().is_none())
        .collect()
}

impl Source {
    /// What the value is read from, for descriptions.
    pub fn origin(self) -> &'static str {
        match self {
            Source::CpuTime => {
                if CPU_CLOCK {
                    "clock_gettime(CLOCK_PROCESS_CPUTIME_ID), ns"
                } else {
                    "getrusage(RUSAGE_SELF) ru_utime + ru_stime, ns"
                }
            }
            Source::UserTime => "getrusage(RUSAGE_SELF) ru_utime, ns",
            Source::SystemTime => "getrusage(RUSAGE_SELF) ru_stime, ns",
            Source::Faults => "getrusage(RUSAGE_SELF) ru_minflt + ru_majflt",
            Source::MinorFaults => "getrusage(RUSAGE_SELF) ru_minflt",
            Source::MajorFaults => "getrusage(RUSAGE_SELF) ru_majflt",
            Source::ContextSwitches => "getrusage(RUSAGE_SELF) ru_nvcsw + ru_nivcsw",
            Source::BlockIn => "getrusage(RUSAGE_SELF) ru_inblock",
            Source::BlockOut => "getrusage(RUSAGE_SELF) ru_oublock",
            Source::Signals => "getrusage(RUSAGE_SELF) ru_nsignals",
        }
    }

    /// Why this OS cannot give the quantity, when it cannot.
    fn unavailable_here(self) -> Option<&'static str> {
        cfg_if::cfg_if! {
            if #[cfg(any(target_os = "linux", target_os = "android"))] {
                (self == Source::Signals).then_some(
                    "Linux does not maintain ru_nsignals (getrusage(2): \"this field is \
                     currently unused on Linux\"), so it would always read 0; count the \
                     `signal:signal_deliver` tracepoint with the linux backend instead",
                )
            } else if #[cfg(any(
                target_os = "redox",
                target_os = "fuchsia",
                target_os = "solaris",
                target_os = "illumos",
                target_os = "haiku"
            ))] {
                (self != Source::CpuTime || !CPU_CLOCK)
                    .then_some("this OS has no getrusage that nix wraps")
            } else {
                let _ = self;
                None
            }
        }
    }

    /// The current process-wide total; the errno and the call on failure.
    pub fn now(self) -> std::result::Result<u64, (i32, &'static str)> {
        if self == Source::CpuTime && CPU_CLOCK {
            return process_cpu_ns().map_err(|e| (e, "clock_gettime(CLOCK_PROCESS_CPUTIME_ID)"));
        }
        let usage = usage().map_err(|e| (e, "getrusage(RUSAGE_SELF)"))?;
        Ok(match self {
            Source::CpuTime => usage.user_ns.saturating_add(usage.system_ns),
            Source::UserTime => usage.user_ns,
            Source::SystemTime => usage.system_ns,
            Source::Faults => usage.minflt.saturating_add(usage.majflt),
            Source::MinorFaults => usage.minflt,
            Source::MajorFaults => usage.majflt,
            Source::ContextSwitches => usage.nvcsw.saturating_add(usage.nivcsw),
            Source::BlockIn => usage.inblock,
            Source::BlockOut => usage.oublock,
            Source::Signals => usage.nsignals,
        })
    }

    /// Whether `,usr`/`,os` select something for this quantity.
    pub fn splits_privilege(self) -> bool {
        matches!(
            self,
            Source::CpuTime | Source::UserTime | Source::SystemTime
        )
    }
}

/// Maps a specifier onto what the portable backend measures, or says why
/// it cannot (`context`: why the portable backend is the one in use).
pub fn resolve(spec: &EventSpec, context: &str) -> Result<Source> {
    let base = match &spec.event {
        EventName::Software(e) => match e {
            SoftwareEvent::TaskClock | SoftwareEvent::CpuClock => Source::CpuTime,
            SoftwareEvent::PageFaults => Source::Faults,
            SoftwareEvent::MinorFaults => Source::MinorFaults,
            SoftwareEvent::MajorFaults => Source::MajorFaults,
            SoftwareEvent::ContextSwitches => Source::ContextSwitches,
            other => {
                return Err(not_supported(
                    format!("software event `{other}`"),
                    format!(
                        "getrusage and clock_gettime have no such count{}",
                        alternatives()
                    ),
                    context,
                ));
            }
        },
        EventName::Named(name) => {
            let lower = name.to_ascii_lowercase();
            match RUSAGE_NAMES.iter().find(|(n, _)| *n == lower) {
                Some((_, source)) => *source,
                None => {
                    return Err(Error::UnknownEvent {
                        what: format!("event `{name}`"),
                        why: format!(
                            "the portable backend ({context}) knows only {}",
                            names_here().join(", ")
                        ),
                        reason: crate::Reason::UnknownEvent {
                            closest: pmc_suggest::closest(&lower, names_here(), 5),
                        }
                        .boxed(),
                    });
                }
            }
        }
        other => {
            return Err(not_supported(
                format!("{} event `{}`", kind_of(other), spec.text),
                format!(
                    "only the operating system's per-process accounting is available{}",
                    alternatives()
                ),
                context,
            ));
        }
    };
    if let Some(why) = base.unavailable_here() {
        return Err(not_supported(
            format!("`{}`", spec.text),
            why.into(),
            context,
        ));
    }
    let source = apply_privilege(base, spec)?;
    refuse_qualifiers(&spec.qualifiers, &spec.text, context)?;
    Ok(source)
}

/// `,usr`/`:u` and `,os`/`:k`: the CPU clocks split into `ru_utime` and
/// `ru_stime`; nothing else `getrusage` counts is split by privilege.
fn apply_privilege(base: Source, spec: &EventSpec) -> Result<Source> {
    let Some(p) = spec.qualifiers.privilege else {
        return Ok(base);
    };
    let Privilege { user, kernel, .. } = p;
    if user && kernel {
        return Ok(base);
    }
    if !base.splits_privilege() {
        return Err(Error::NotSupported {
            what: format!("the privilege qualifier of `{}`", spec.text),
            why: format!(
                "the portable backend counts {} at every privilege level (getrusage does not \
                 split them by user/kernel mode); drop `,usr`/`,os` (`:u`/`:k`)",
                base.origin()
            ),
            source: None,
        });
    }
    match (user, kernel) {
        (true, false) => Ok(Source::UserTime),
        (false, true) => Ok(Source::SystemTime),
        _ => Err(Error::NotSupported {
            what: format!("the privilege qualifier of `{}`", spec.text),
            why: "the portable backend counts user (`,usr`) and kernel (`,os`) time, \
                  not hypervisor time alone"
                .into(),
            source: None,
        }),
    }
}

/// Every qualifier but the privilege level and `pinned` (always true here:
/// nothing multiplexes) needs a PMU.
fn refuse_qualifiers(q: &Qualifiers, text: &str, context: &str) -> Result<()> {
    let refused: &[(&str, bool)] = &[
        ("edge", q.edge),
        ("inv", q.inv),
        ("cmask", q.cmask.is_some()),
        ("umask", q.umask.is_some()),
        ("threshold", q.threshold.is_some()),
        ("anythread", q.anythread),
        ("precise", q.precise.is_some()),
        ("period", q.period.is_some()),
        ("freq", q.freq.is_some()),
        ("filter", q.filter.is_some()),
        ("exclusive", q.exclusive),
        (":I (exclude idle)", q.exclude_idle),
        (":G (guest only)", q.guest_only),
        (":H (host only)", q.host_only),
        (":S (sample read)", q.sample_read),
        (":W (weak group)", q.weak_group),
    ];
    let named: Vec<&str> = refused
        .iter()
        .filter(|(_, on)| *on)
        .map(|(n, _)| *n)
        .collect();
    if named.is_empty() {
        return Ok(());
    }
    Err(not_supported(
        format!("qualifier(s) {} of `{text}`", named.join(", ")),
        "they configure a PMU or a sampling counter; the portable backend reads the \
         operating system's totals, which take only `,usr`/`,os` (CPU time) and `pinned`"
            .into(),
        context,
    ))
}

fn not_supported(what: String, why: String, context: &str) -> Error {
    Error::NotSupported {
        what,
        why: format!("the portable backend ({context}) cannot count it: {why}"),
        source: None,
    }
}

fn alternatives() -> String {
    format!("; it counts {}", names_here().join(", "))
}

fn kind_of(e: &EventName) -> &'static str {
    match e {
        EventName::Hardware(_) => "hardware",
        EventName::Cache(_) => "cache",
        EventName::Raw(_) => "raw",
        EventName::Pmu { .. } => "PMU",
        EventName::Tracepoint { .. } => "tracepoint",
        EventName::Breakpoint { .. } => "breakpoint",
        EventName::Probe(_) => "probe",
        EventName::Software(_) => "software",
        EventName::Named(_) => "named",
    }
}

// One platform list (nix's, for `CLOCK_PROCESS_CPUTIME_ID`) decides both
// the flag and the reader.
cfg_if::cfg_if! {
    if #[cfg(any(
        target_os = "linux",
        target_os = "android",
        target_vendor = "apple",
        target_os = "freebsd",
        target_os = "dragonfly",
        target_os = "netbsd",
        target_os = "openbsd",
    ))] {
        /// Whether `CLOCK_PROCESS_CPUTIME_ID` exists here (nix's list).
        const CPU_CLOCK: bool = true;

        /// CPU time of the process in nanoseconds.
        fn process_cpu_ns() -> std::result::Result<u64, i32> {
            use nix::time::{ClockId, clock_gettime};
            let t = clock_gettime(ClockId::CLOCK_PROCESS_CPUTIME_ID).map_err(|e| e as i32)?;
            Ok(timespec_ns(t.tv_sec(), t.tv_nsec(), 1))
        }
    } else {
        /// Whether `CLOCK_PROCESS_CPUTIME_ID` exists here (nix's list).
        const CPU_CLOCK: bool = false;

        /// CPU time of the process in nanoseconds: no such clock here.
        fn process_cpu_ns() -> std::result::Result<u64, i32> {
            Err(libc::ENOSYS)
        }
    }
}

/// Seconds and a fraction in units of `unit_ns` (1 for a `timespec`, 1000
/// for a `timeval`) as nanoseconds, whatever integer types the platform
/// gives them; a negative part (never produced by these clocks) counts as 0.
pub(crate) fn timespec_ns(sec: impl Into<i64>, fraction: impl Into<i64>, unit_ns: u64) -> u64 {
    let part = |v: i64| u64::try_from(v).unwrap_or(0);
    part(sec.into())
        .saturating_mul(1_000_000_000)
        .saturating_add(part(fraction.into()).saturating_mul(unit_ns))
}

/// The fields of `struct rusage` the backend reads, as unsigned totals.
#[derive(Clone, Copy, Debug, Default)]
struct Usage {
    user_ns: u64,
    system_ns: u64,
    minflt: u64,
    majflt: u64,
    nvcsw: u64,
    nivcsw: u64,
    inblock: u64,
    oublock: u64,
    nsignals: u64,
}

fn usage() -> std::result::Result<Usage, i32> {
    cfg_if::cfg_if! {
        if #[cfg(not(any(
            target_os = "redox",
            target_os = "fuchsia",
            target_os = "solaris",
            target_os = "illumos",
            target_os = "haiku"
        )))] {
            use nix::sys::resource::{UsageWho, getrusage};
            let u = getrusage(UsageWho::RUSAGE_SELF).map_err(|e| e as i32)?;
            let count = |v: libc::c_long| u64::try_from(v).unwrap_or(0);
            let (ut, st) = (u.user_time(), u.system_time());
            Ok(Usage {
                user_ns: timespec_ns(ut.tv_sec(), ut.tv_usec(), 1000),
                system_ns: timespec_ns(st.tv_sec(), st.tv_usec(), 1000),
                minflt: count(u.minor_page_faults()),
                majflt: count(u.major_page_faults()),
                nvcsw: count(u.voluntary_context_switches()),
                nivcsw: count(u.involuntary_context_switches()),
                inblock: count(u.block_reads()),
                oublock: count(u.block_writes()),
                nsignals: count(u.signals()),
            })
        } else {
            Err(libc::ENOSYS)
        }
    }
}
