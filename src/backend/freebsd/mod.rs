//! The FreeBSD backend: hwpmc(4) through `pmc_freebsd::Hwpmc`.
//!
//! It only opens, controls and reads counters; FreeBSD's rules stay in
//! [`crate::Pmc`]. Each target of a `Pmc` is its own hwpmc PMC, as each is
//! its own perf fd on Linux:
//!
//! - a process target ([`PreparedEvent::open_process`]) is a `PMCALLOCATE`
//!   in the PMC's process mode (with `PMC_F_DESCENDANTS` when the target is
//!   a tree) followed by `PMCATTACH` to its pid;
//! - a CPU target ([`PreparedEvent::open_cpu`]) is a `PMCALLOCATE` in the
//!   system mode on that CPU;
//! - enable/disable/read are `PMCSTART`/`PMCSTOP`/`PMCRW` (old value), and
//!   dropping a target is `PMCRELEASE` (which detaches it);
//! - allocate's trial is a `PMCALLOCATE` released at once, so an event the
//!   machine cannot count fails at allocate with hwpmc's errno.
//!
//! hwpmc keeps no enabled/running times (a PMC owns its row while it is
//! scheduled, nothing is multiplexed): a value is reported with both times
//! 0 and `scaled` equal to the count. A running process PMC attached to
//! another process reads that process's value as of its last context
//! switch (`pm_savedvalue`), as hwpmc's PMCRW gives it. Since every target takes a row, a
//! `Pmc` attaches to at most as many processes at once as its class has
//! rows (`pm_num` of GETCPUINFO); hwpmc answers the next one with EINVAL.
//!
//! Sampling modes and the `LOG_PROC*` flags go through hwpmc's own log
//! (`sampling.rs`): the first PMC that needs it configures it
//! (`PMC_OP_CONFIGURELOG`) on a pipe the backend reads, and each of its
//! targets hands its owner a [`SampleSource`](crate::backend::source::SampleSource)
//! of the records hwpmc writes for it. hwpmc logs the samples of a PMC on
//! another process or CPU only: those of a process PMC attached to its own
//! process go to the process's profil(2) buffer (hwpmc_mod.c
//! `pmc_process_samples`, `PMC_F_ATTACHED_TO_OWNER`), so sampling the
//! caller logs no CALLCHAIN there — sample a child, as pmcstat does.
//!
//! The backend is generic over [`System`]: the FreeBSD system call
//! (`native.rs`, compiled only on FreeBSD; CI type-checks it with
//! `--target x86_64-unknown-freebsd`) or, in tests, `pmc_freebsd`'s kernel
//! double (`double.rs`).

use std::fmt;
use std::sync::Arc;

use pmc_freebsd::abi::{self, pmc_op_pmcallocate};
use pmc_freebsd::{Hwpmc, PmcId as HwpmcId, Transport};

use super::{BackendImpl, CounterValue, Counters, EventRequest, PreparedEvent};
use crate::{Capabilities, Class, Error, Mode, Result};
use crate::{ClassInfo, CpuInfo};

mod errors;
mod events;
mod sampling;

#[cfg(test)]
pub(crate) mod double;

cfg_if::cfg_if! {
    if #[cfg(target_os = "freebsd")] {
        // Selected on FreeBSD (`select.rs`).
        mod native;
        #[cfg_attr(not(target_os = "freebsd"), allow(unused_imports))]
        pub use native::open_default;
    }
}

pub use errors::from_freebsd;
pub use events::libpmc_spec;
pub use sampling::{HwpmcLog, HwpmcSource, LogPipe};

/// What the backend needs of the system besides hwpmc's operations: the
/// caller, the process table and the CPUs.
pub trait System: Transport + Send + Sync + fmt::Debug + 'static {
    /// The calling process's pid (what pid 0 means).
    fn caller_pid(&self) -> u32;
    /// Whether a process exists (and is not exiting).
    fn process_exists(&self, pid: u32) -> bool;
    /// The process table as `sysctl kern.proc` (KERN_PROC_PROC) gives it:
    /// `struct kinfo_proc` records (`pmc_freebsd::procs`), for the
    /// DESCENDANTS overlap rule; the errno when it cannot be read.
    fn kern_proc(&self) -> std::result::Result<Vec<u8>, pmc_freebsd::Errno>;
    /// The active CPUs among hwpmc's `0..ncpu`.
    fn online_cpus(&self, ncpu: u32) -> Vec<u32>;
    /// A pipe for hwpmc's log: its write end goes to
    /// `PMC_OP_CONFIGURELOG`, the backend reads the other.
    fn log_pipe(&self) -> Result<Box<dyn LogPipe>>;
}

/// hwpmc behind a [`System`].
#[derive(Debug)]
pub struct FreeBsdBackend<S: System> {
    hwpmc: Arc<Hwpmc<S>>,
    /// hwpmc's log, configured by the first PMC that needs it.
    log: std::sync::Mutex<Option<Arc<HwpmcLog<S>>>>,
}

impl<S: System> FreeBsdBackend<S> {
    /// Opens hwpmc (libpmc's `pmc_init`: module version, CPU information,
    /// soft events).
    pub fn open(system: S) -> Result<FreeBsdBackend<S>> {
        let hwpmc = Hwpmc::open(system).map_err(|e| from_freebsd(e, "open hwpmc"))?;
        Ok(Self::from_hwpmc(hwpmc))
    }

    /// Wraps an opened hwpmc (e.g. one given a pmu-events table).
    pub fn from_hwpmc(hwpmc: Hwpmc<S>) -> FreeBsdBackend<S> {
        FreeBsdBackend {
            hwpmc: Arc::new(hwpmc),
            log: std::sync::Mutex::new(None),
        }
    }

    /// hwpmc's log, configured now if it is not yet (a failure is
    /// retried by the next PMC that needs it).
    pub fn hwpmc_log(&self) -> Result<Arc<HwpmcLog<S>>> {
        let mut log = self.log.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(log) = log.as_ref() {
            return Ok(log.clone());
        }
        let configured = Arc::new(HwpmcLog::configure(self.hwpmc.clone())?);
        *log = Some(configured.clone());
        Ok(configured)
    }

    fn class_row(&self, raw_class: u32) -> Option<abi::pmc_classinfo> {
        let info = self.hwpmc.cpuinfo();
        let n = (info.pm_nclass as usize).min(info.pm_classes.len());
        info.pm_classes[..n]
            .iter()
            .find(|c| c.pm_class == raw_class)
            .copied()
    }
}

/// Our name for a hwpmc class: `SOFT` is the software class, every other
/// (`TSC`, `IAF`, `IAP`, `K8`, `ARMV8`, …) a PMU of that name.
pub fn class_of(raw: u32) -> Class {
    match pmc_freebsd::Class::from_raw(raw) {
        Some(pmc_freebsd::Class::SOFT) => Class::Software,
        Some(c) => Class::Pmu(c.name().to_string()),
        None => Class::Pmu(format!("class-{raw}")),
    }
}

fn raw_class_of(class: &Class) -> Option<pmc_freebsd::Class> {
    match class {
        Class::Software => Some(pmc_freebsd::Class::SOFT),
        Class::Pmu(name) => pmc_freebsd::Class::ALL
            .iter()
            .copied()
            .find(|c| c.name().eq_ignore_ascii_case(name)),
        _ => None,
    }
}

fn hwpmc_mode(mode: Mode) -> pmc_freebsd::Mode {
    match mode {
        Mode::SS => pmc_freebsd::Mode::SS,
        Mode::SC => pmc_freebsd::Mode::SC,
        Mode::TS => pmc_freebsd::Mode::TS,
        Mode::TC => pmc_freebsd::Mode::TC,
    }
}

impl<S: System> BackendImpl for FreeBsdBackend<S> {
    fn name(&self) -> &'static str {
        "freebsd-hwpmc"
    }

    fn prepare(&self, request: &EventRequest<'_>) -> Result<Arc<dyn PreparedEvent>> {
        if request.user_stack.is_some() {
            return Err(Error::NotSupported {
                what: "copying user stacks with samples".into(),
                why: "this backend takes no user registers or stack; use frame-pointer callchains (CALLCHAIN)".into(),
                source: None,
            });
        }
        let spec = libpmc_spec(request.spec)?;
        let cpu = if request.mode.is_system() {
            0
        } else {
            abi::PMC_CPU_ANY
        };
        // DESCENDANTS is a property of each process target (open_process).
        let flags = request.flags.bits() & !abi::PMC_F_DESCENDANTS;
        let template = self
            .hwpmc
            .resolver()
            .allocate_request(&spec, hwpmc_mode(request.mode), flags, cpu, 0)
            .map_err(|e| from_freebsd(e.into(), "allocate"))?;
        let row = self.class_row(template.pm_class);
        // Samples and LOG_PROC* records are written by hwpmc into its log,
        // which must exist before the PMC attaches (PMCATTACH and MAP_IN
        // are logged then) and starts (pmc_start: EDOOFUS without it).
        let log_flags = crate::Flags::LOG_PROCCSW | crate::Flags::LOG_PROCEXIT;
        let log = if request.mode.is_sampling() || request.flags.intersects(log_flags) {
            Some(self.hwpmc_log()?)
        } else {
            None
        };
        Ok(Arc::new(HwpmcEvent {
            log,
            pmcid: request.pmcid,
            hwpmc: self.hwpmc.clone(),
            template,
            class: class_of(template.pm_class),
            width: row.map_or(64, |r| r.pm_width),
            description: format!(
                "hwpmc {} event {:#x} ({spec})",
                class_of(template.pm_class),
                template.pm_ev
            ),
        }))
    }

    fn caller_pid(&self) -> u32 {
        self.hwpmc.transport().caller_pid()
    }

    fn process_exists(&self, pid: u32) -> bool {
        self.hwpmc.transport().process_exists(pid)
    }

    fn online_cpus(&self) -> Vec<u32> {
        self.hwpmc.transport().online_cpus(self.hwpmc.ncpu())
    }

    fn possible_cpus(&self) -> Vec<u32> {
        (0..self.hwpmc.ncpu()).collect()
    }

    /// The processes below `pid` in the `kern.proc` table (none when it
    /// cannot be read or `pid` is no pid).
    fn descendants(&self, pid: u32) -> Vec<u32> {
        let Ok(pid) = i32::try_from(pid) else {
            return Vec::new();
        };
        let table = self
            .hwpmc
            .transport()
            .kern_proc()
            .ok()
            .and_then(|bytes| pmc_freebsd::procs::parse_kinfo_procs(&bytes).ok())
            .unwrap_or_default();
        pmc_freebsd::procs::descendants(&table, pid)
            .into_iter()
            .map(|p| p as u32)
            .collect()
    }

    fn how_to_online(&self, cpu: u32) -> String {
        format!("enable CPU {cpu} (hwpmc counts only on active CPUs)")
    }

    /// CLOCK_MONOTONIC, which hwpmc's log timestamps follow.
    fn monotonic_ns(&self) -> u64 {
        crate::backend::monotonic_clock_ns()
    }

    /// hwpmc's own `pm_cputype`; the cpuid string (`kern.hwpmc.cpuid`) is
    /// not read yet.
    fn cpu_identity(&self) -> crate::log::cpu::CpuIdentity {
        crate::log::cpu::CpuIdentity {
            cputype: self.hwpmc.cpuinfo().pm_cputype,
            cpuid: String::new(),
        }
    }

    fn cpuinfo(&self) -> Result<CpuInfo> {
        let info = self.hwpmc.cpuinfo();
        let n = (info.pm_nclass as usize).min(info.pm_classes.len());
        Ok(CpuInfo {
            cputype: pmc_freebsd::CpuType::from_raw(info.pm_cputype).map_or_else(
                || format!("cputype {:#x}", info.pm_cputype),
                |c| c.name().to_string(),
            ),
            ncpu: info.pm_ncpu,
            npmc: info.pm_npmc,
            classes: info.pm_classes[..n]
                .iter()
                .map(|c| ClassInfo {
                    class: class_of(c.pm_class),
                    caps: Capabilities::from_bits_truncate(c.pm_caps),
                    width: c.pm_width,
                    num: Some(c.pm_num),
                })
                .collect(),
        })
    }

    fn event_names(&self, class: &Class) -> Result<Vec<String>> {
        let raw = raw_class_of(class).ok_or_else(|| Error::NotSupported {
            what: format!("class {class}"),
            why: "hwpmc has no such class; see pmc::cpuinfo for the classes of this machine".into(),
            source: None,
        })?;
        Ok(self.hwpmc.event_names_of_class(raw))
    }
}

/// A resolved event: the PMCALLOCATE request every target starts from.
#[derive(Debug)]
struct HwpmcEvent<S: System> {
    hwpmc: Arc<Hwpmc<S>>,
    /// hwpmc's log, for a PMC whose records go there.
    log: Option<Arc<HwpmcLog<S>>>,
    /// The `Pmc`'s id, written in its records.
    pmcid: u32,
    template: pmc_op_pmcallocate,
    class: Class,
    width: u32,
    description: String,
}

impl<S: System> HwpmcEvent<S> {
    /// PMCALLOCATE for one target; the returned counter releases it when
    /// dropped, so every later failure leaves nothing behind.
    fn allocate(&self, cpu: u32, descendants: bool, target: String) -> Result<HwpmcCounter<S>> {
        let mut pa = self.template;
        pa.pm_cpu = cpu;
        if descendants {
            pa.pm_flags |= abi::PMC_F_DESCENDANTS;
        }
        let id = self
            .hwpmc
            .allocate_raw(&mut pa)
            .map_err(|e| from_freebsd(e, &format!("allocate {} on {target}", self.class)))?;
        if let Some(log) = &self.log {
            log.register(id, self.pmcid);
        }
        Ok(HwpmcCounter {
            hwpmc: self.hwpmc.clone(),
            log: self.log.clone(),
            id,
            sampling: pmc_freebsd::Mode::from_raw(self.template.pm_mode)
                .is_some_and(|m| m.is_sampling()),
            period: 0,
            target,
        })
    }
}

impl<S: System> PreparedEvent for HwpmcEvent<S> {
    fn class(&self) -> Class {
        self.class.clone()
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities::from_bits_truncate(self.template.pm_caps)
    }

    fn width(&self) -> u32 {
        self.width
    }

    fn describe(&self) -> String {
        self.description.clone()
    }

    fn open_process(&self, pid: u32, descendants: bool) -> Result<Box<dyn Counters>> {
        let counter = self.allocate(abi::PMC_CPU_ANY, descendants, format!("process {pid}"))?;
        let hwpmc_pid = i32::try_from(pid).map_err(|_| Error::NoSuchProcess {
            op: "attach".into(),
            pid,
        })?;
        self.hwpmc
            .attach(counter.id, hwpmc_pid)
            .map_err(|e| from_freebsd(e, &format!("attach to process {pid}")))?;
        Ok(Box::new(counter))
    }

    fn open_cpu(&self, cpu: u32) -> Result<Box<dyn Counters>> {
        Ok(Box::new(self.allocate(cpu, false, format!("cpu {cpu}"))?))
    }

    fn trial_open(&self) -> Result<()> {
        self.allocate(abi::PMC_CPU_ANY, false, "the calling process".into())
            .map(drop)
    }
}

/// One hwpmc PMC (a target of a `Pmc`), released on drop.
#[derive(Debug)]
struct HwpmcCounter<S: System> {
    hwpmc: Arc<Hwpmc<S>>,
    /// hwpmc's log, when its records go there.
    log: Option<Arc<HwpmcLog<S>>>,
    id: HwpmcId,
    /// A sampling PMC: PMCRW gives the events left in its period.
    sampling: bool,
    /// Its reload count, as last set.
    period: u64,
    /// What it counts, for messages.
    target: String,
}

impl<S: System> HwpmcCounter<S> {
    fn op(&self, what: &str) -> String {
        format!("{what} hwpmc PMC {:#x} on {}", self.id.0, self.target)
    }
}

impl<S: System> Counters for HwpmcCounter<S> {
    fn enable(&mut self) -> Result<()> {
        self.hwpmc
            .start(self.id)
            .map_err(|e| from_freebsd(e, &self.op("start")))
    }

    fn disable(&mut self) -> Result<()> {
        self.hwpmc
            .stop(self.id)
            .map_err(|e| from_freebsd(e, &self.op("stop")))
    }

    fn read(&mut self) -> Result<CounterValue> {
        let mut value = self
            .hwpmc
            .read(self.id)
            .map_err(|e| from_freebsd(e, &self.op("read")))?;
        if self.sampling {
            // pcd_read_pmc of a sampling PMC: the events left before the
            // overflow. `Pmc` wants the events into the period.
            value = match value {
                left @ 1.. if left <= self.period => self.period - left,
                _ => 0,
            };
        }
        // hwpmc does not multiplex: the count is the whole value, and it
        // keeps no enabled/running times.
        Ok(CounterValue {
            raw: value,
            time_enabled: 0,
            time_running: 0,
            scaled: Some(value),
        })
    }

    /// `PMC_OP_PMCSETCOUNT` (the PMC is not running: `Pmc` sets the
    /// period before each start).
    fn set_period(&mut self, period: u64) -> Result<()> {
        self.hwpmc
            .set(self.id, period)
            .map_err(|e| from_freebsd(e, &self.op("set the reload count of")))?;
        self.period = period;
        Ok(())
    }

    fn rdpmc_index(&mut self) -> Result<Option<u32>> {
        match self.hwpmc.get_msr(self.id) {
            Ok(msr) => Ok(Some(msr)),
            // hwpmc_mod.c PMC_OP_PMCGETMSR: a class without pcd_get_msr.
            Err(pmc_freebsd::Error::Kernel { errno, .. })
                if errno == pmc_freebsd::Errno::ENOSYS =>
            {
                Ok(None)
            }
            Err(e) => Err(from_freebsd(e, &self.op("get_msr of"))),
        }
    }

    fn sample_source(&self) -> Option<Arc<dyn crate::backend::source::SampleSource>> {
        let log = self.log.clone()?;
        Some(Arc::new(HwpmcSource::new(log, self.id)))
    }
}

impl<S: System> Drop for HwpmcCounter<S> {
    fn drop(&mut self) {
        // PMCRELEASE detaches every target; nothing to report from a drop.
        let _ = self.hwpmc.release(self.id);
        if let Some(log) = &self.log {
            log.unregister(self.id);
        }
    }
}

#[cfg(test)]
#[path = "gaps/tests.rs"]
mod gaps_tests;
// What hwpmc and libpmc give that the adapter must carry through (class
// rows, CPUs, GETMSR, mincount, the log's times and close).
#[cfg(test)]
#[path = "hwpmc_rules/tests.rs"]
mod hwpmc_rules_tests;
#[cfg(test)]
mod tests;
