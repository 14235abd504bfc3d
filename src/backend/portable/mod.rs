//! The portable fallback backend: what any Unix can measure for the
//! calling process, with safe `nix`/`std` calls only.
//!
//! It counts in TC mode on the caller (pid 0 or its own pid): CPU time
//! (`task-clock`, `cpu-clock`; with `,usr`/`,os` the user or system part),
//! page faults (`page-faults`/`faults`, `minor-faults`, `major-faults`),
//! `context-switches`/`cs`, block I/O (`inblock`, `oublock`) and `signals`
//! (not on Linux, which does not maintain it). Every quantity is the whole
//! process's (all threads, as hwpmc's TC mode on a process), read from
//! `clock_gettime(CLOCK_PROCESS_CPUTIME_ID)` and `getrusage(RUSAGE_SELF)`
//! (see [`source`]); a PMC's count is the total at disable minus the total
//! at enable, summed over its enabled intervals. Everything else (system
//! and sampling modes, other processes, DESCENDANTS, the logging flags,
//! hardware, tracepoints, probes, PMU qualifiers) fails with
//! [`Error::NotSupported`] naming the portable backend, why it is in use,
//! and why it cannot. FreeBSD's rules stay in [`crate::Pmc`].
//!
//! It is chosen by `PMC_BACKEND=portable`, by [`crate::global::select()`],
//! automatically on Linux when perf_event cannot be used at all, and as the
//! native backend of platforms that have no other.

pub mod source;
#[cfg(test)]
mod tests;

use std::time::Instant;

use super::{BackendImpl, CounterValue, Counters, EventRequest, PreparedEvent};
use crate::{Capabilities, Class, Error, Flags, Mode, Result};
use crate::{ClassInfo, CpuInfo};
use source::Source;

/// The backend's name, as [`BackendImpl::name`] and `PMC_BACKEND` spell it.
pub const NAME: &str = "portable";

/// The portable backend; `reason` says why it is the one in use, and every
/// refusal repeats it.
#[derive(Debug, Clone)]
pub struct PortableBackend {
    reason: String,
}

impl PortableBackend {
    /// A portable backend chosen for `reason` (e.g. "PMC_BACKEND=portable").
    pub fn new(reason: impl Into<String>) -> PortableBackend {
        PortableBackend {
            reason: reason.into(),
        }
    }

    fn refuse(&self, what: String, why: &str) -> Error {
        Error::NotSupported {
            what,
            why: format!(
                "the portable backend ({}) cannot: {why}; it counts {} in TC mode on the \
                 calling process only",
                self.reason,
                source::names_here().join(", ")
            ),
            source: None,
        }
    }
}

impl Default for PortableBackend {
    fn default() -> PortableBackend {
        PortableBackend::new("the platform's native backend")
    }
}

impl BackendImpl for PortableBackend {
    fn name(&self) -> &'static str {
        NAME
    }

    fn prepare(&self, request: &EventRequest<'_>) -> Result<std::sync::Arc<dyn PreparedEvent>> {
        let why_mode = match request.mode {
            Mode::TC => None,
            Mode::SC => Some(
                "system-wide counting needs per-CPU counters; getrusage and clock_gettime \
                 account only for the calling process",
            ),
            Mode::SS | Mode::TS => Some(
                "sampling needs a counter that interrupts on overflow; the operating \
                 system's totals can only be read",
            ),
        };
        if let Some(why) = why_mode {
            return Err(self.refuse(format!("{} mode", request.mode), why));
        }
        // DESCENDANTS passes allocate, as in hwpmc; attaching with it is
        // refused (`open_process`), since nothing here follows children.
        let refused = request.flags & (Flags::LOG_PROCCSW | Flags::LOG_PROCEXIT);
        if !refused.is_empty() {
            return Err(self.refuse(
                format!("flags {refused:?}"),
                "there are no context-switch or process-exit events to log",
            ));
        }
        let source = source::resolve(request.spec, &self.reason)?;
        Ok(std::sync::Arc::new(PortableEvent {
            source,
            text: request.spec.text.clone(),
            reason: self.reason.clone(),
        }))
    }

    fn caller_pid(&self) -> u32 {
        std::process::id()
    }

    fn process_exists(&self, pid: u32) -> bool {
        process_exists(pid)
    }

    /// Best effort: the CPUs this process may use (no portable call lists
    /// the online ones).
    fn online_cpus(&self) -> Vec<u32> {
        let n = std::thread::available_parallelism().map_or(1, |n| n.get());
        (0..n as u32).collect()
    }

    fn executable_path(&self, pid: u32) -> Option<String> {
        (pid == std::process::id())
            .then(|| std::env::current_exe().ok())
            .flatten()
            .map(|p| p.to_string_lossy().into_owned())
    }

    /// `clock_gettime(CLOCK_MONOTONIC)`, the clock other processes' logs
    /// are stamped with too.
    fn monotonic_ns(&self) -> u64 {
        super::monotonic_clock_ns()
    }

    fn cpuinfo(&self) -> Result<CpuInfo> {
        Ok(CpuInfo {
            cputype: format!(
                "portable ({} {}; {})",
                std::env::consts::OS,
                std::env::consts::ARCH,
                self.reason
            ),
            ncpu: self.online_cpus().len() as u32,
            npmc: 0,
            classes: vec![ClassInfo {
                class: Class::Software,
                caps: class_capabilities(),
                width: 64,
                num: None,
            }],
        })
    }

    fn event_names(&self, class: &Class) -> Result<Vec<String>> {
        Ok(match class {
            Class::Software => source::names_here().into_iter().map(String::from).collect(),
            _ => Vec::new(),
        })
    }
}

/// `kill(pid, 0)`: the process exists when the signal could be sent or was
/// refused for lack of permission.
fn process_exists(pid: u32) -> bool {
    cfg_if::cfg_if! {
        if #[cfg(unix)] {
            // 0 and negative pids name process groups, not a process.
            let Ok(raw) = i32::try_from(pid) else { return false };
            if raw <= 0 {
                return false;
            }
            match nix::sys::signal::kill(nix::unistd::Pid::from_raw(raw), None) {
                Ok(()) => true,
                Err(e) => e == nix::errno::Errno::EPERM,
            }
        } else {
            pid == std::process::id()
        }
    }
}

/// What the portable Software class can do: read, write (`Pmc::write`
/// offsets), and `,usr`/`,os` on the CPU clocks.
fn class_capabilities() -> Capabilities {
    Capabilities::READ | Capabilities::WRITE | Capabilities::USER | Capabilities::SYSTEM
}

/// A resolved portable event.
#[derive(Debug)]
struct PortableEvent {
    source: Source,
    text: String,
    reason: String,
}

impl PortableEvent {
    fn counters(&self) -> Result<PortableCounters> {
        // Read once so a failing call is reported at allocate/attach.
        now(self.source, &self.text)?;
        Ok(PortableCounters {
            source: self.source,
            text: self.text.clone(),
            since: None,
            counted: 0,
            enabled_ns: 0,
        })
    }
}

impl PreparedEvent for PortableEvent {
    fn class(&self) -> Class {
        Class::Software
    }

    /// The class row's, as libpmc's `pmc_capabilities` answers.
    fn capabilities(&self) -> Capabilities {
        class_capabilities()
    }

    fn width(&self) -> u32 {
        64
    }

    fn describe(&self) -> String {
        format!("portable {} ({})", self.text, self.source.origin())
    }

    fn counts_nanoseconds(&self) -> bool {
        matches!(
            self.source,
            Source::CpuTime | Source::UserTime | Source::SystemTime
        )
    }

    fn open_process(&self, pid: u32, descendants: bool) -> Result<Box<dyn Counters>> {
        let caller = std::process::id();
        if pid != caller {
            return Err(Error::NotSupported {
                what: format!("counting `{}` in process {pid}", self.text),
                why: format!(
                    "the portable backend ({}) reads getrusage/clock_gettime of the calling \
                     process ({caller}) only; attach to pid 0",
                    self.reason
                ),
                source: None,
            });
        }
        if descendants {
            return Err(Error::NotSupported {
                what: format!("counting `{}` with DESCENDANTS", self.text),
                why: format!(
                    "the portable backend ({}) cannot follow child processes while they run \
                     (getrusage's RUSAGE_CHILDREN counts only children that were waited \
                     for); allocate without DESCENDANTS",
                    self.reason
                ),
                source: None,
            });
        }
        Ok(Box::new(self.counters()?))
    }

    fn open_cpu(&self, cpu: u32) -> Result<Box<dyn Counters>> {
        Err(Error::NotSupported {
            what: format!("counting `{}` on cpu {cpu}", self.text),
            why: format!(
                "the portable backend ({}) has no per-CPU counts; use TC mode",
                self.reason
            ),
            source: None,
        })
    }

    fn trial_open(&self) -> Result<()> {
        self.counters().map(drop)
    }
}

/// The current total of `source`, as a crate error.
fn now(source: Source, text: &str) -> Result<u64> {
    source.now().map_err(|(errno, call)| Error::Os {
        op: format!("portable backend: {call} for `{text}`").into(),
        source: std::io::Error::from_raw_os_error(errno),
        hint: Some("the operating system refused its own accounting call; report this".into()),
    })
}

/// One PMC's counter on the calling process: the totals at enable and the
/// sum over finished intervals.
#[derive(Debug)]
struct PortableCounters {
    source: Source,
    text: String,
    /// The total and the time at the last enable, while enabled.
    since: Option<(u64, Instant)>,
    /// The sum over finished enabled intervals.
    counted: u64,
    /// Nanoseconds enabled in finished intervals.
    enabled_ns: u64,
}

impl PortableCounters {
    /// (count, ns) of the interval in progress.
    fn pending(&self) -> Result<(u64, u64)> {
        match self.since {
            None => Ok((0, 0)),
            Some((start, at)) => Ok((
                now(self.source, &self.text)?.saturating_sub(start),
                at.elapsed().as_nanos().try_into().unwrap_or(u64::MAX),
            )),
        }
    }
}

impl Counters for PortableCounters {
    fn enable(&mut self) -> Result<()> {
        if self.since.is_none() {
            self.since = Some((now(self.source, &self.text)?, Instant::now()));
        }
        Ok(())
    }

    fn disable(&mut self) -> Result<()> {
        let (count, ns) = self.pending()?;
        self.counted = self.counted.saturating_add(count);
        self.enabled_ns = self.enabled_ns.saturating_add(ns);
        self.since = None;
        Ok(())
    }

    fn read(&mut self) -> Result<CounterValue> {
        let (count, ns) = self.pending()?;
        let raw = self.counted.saturating_add(count);
        let enabled = self.enabled_ns.saturating_add(ns);
        // Never multiplexed: it runs whenever it is enabled.
        Ok(CounterValue {
            raw,
            time_enabled: enabled,
            time_running: enabled,
            scaled: Some(raw),
        })
    }

    fn handles(&self) -> usize {
        0
    }
}
