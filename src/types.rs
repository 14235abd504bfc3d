//! The vocabulary of hwpmc: modes, flags, CPUs, classes, capabilities, states.

use std::fmt;

use serde::{Deserialize, Serialize};

/// How a PMC counts, and for whom (`enum pmc_mode`).
///
/// The FreeBSD names are the constants `SS`, `SC`, `TS`, `TC`; the variants
/// spell them out.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Mode {
    /// System-scope sampling (`PMC_MODE_SS`): samples everything on one CPU.
    SystemSampling = 0,
    /// System-scope counting (`PMC_MODE_SC`): counts everything on one CPU.
    SystemCounting = 1,
    /// Process-scope sampling (`PMC_MODE_TS`): samples the attached processes.
    ProcessSampling = 2,
    /// Process-scope counting (`PMC_MODE_TC`): counts the attached processes.
    ProcessCounting = 3,
}

impl Mode {
    /// `PMC_MODE_SS`.
    pub const SS: Mode = Mode::SystemSampling;
    /// `PMC_MODE_SC`.
    pub const SC: Mode = Mode::SystemCounting;
    /// `PMC_MODE_TS`.
    pub const TS: Mode = Mode::ProcessSampling;
    /// `PMC_MODE_TC`.
    pub const TC: Mode = Mode::ProcessCounting;
    /// All four modes, in FreeBSD's numeric order.
    pub const ALL: [Mode; 4] = [Mode::SS, Mode::SC, Mode::TS, Mode::TC];

    /// System scope (SS, SC): one CPU, every process on it.
    pub fn is_system(self) -> bool {
        matches!(self, Mode::SystemSampling | Mode::SystemCounting)
    }

    /// Process scope (TS, TC): the attached processes, wherever they run.
    pub fn is_process(self) -> bool {
        !self.is_system()
    }

    /// Sampling (SS, TS): an interrupt every `count` events.
    pub fn is_sampling(self) -> bool {
        matches!(self, Mode::SystemSampling | Mode::ProcessSampling)
    }

    /// Counting (SC, TC).
    pub fn is_counting(self) -> bool {
        !self.is_sampling()
    }

    /// The short name libpmc prints (`pmc_name_of_mode`).
    pub fn short_name(self) -> &'static str {
        match self {
            Mode::SystemSampling => "SS",
            Mode::SystemCounting => "SC",
            Mode::ProcessSampling => "TS",
            Mode::ProcessCounting => "TC",
        }
    }

    /// Parses `SS`, `SC`, `TS`, `TC` (any case) or the long names.
    pub fn from_name(s: &str) -> Option<Mode> {
        let n = s.trim().to_ascii_lowercase().replace(['-', '_', ' '], "");
        Some(match n.as_str() {
            "ss" | "systemsampling" => Mode::SS,
            "sc" | "systemcounting" => Mode::SC,
            "ts" | "processsampling" => Mode::TS,
            "tc" | "processcounting" => Mode::TC,
            _ => return None,
        })
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.short_name())
    }
}

bitflags::bitflags! {
    /// Allocation flags (`PMC_F_*`), with FreeBSD's values.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
    pub struct Flags: u32 {
        /// Also follow the current and future children of every target.
        const DESCENDANTS = 0x2;
        /// Log the counter delta at every context switch (needs a log;
        /// TC only, as in hwpmc; on Linux also perf_event_paranoid <= 1).
        const LOG_PROCCSW = 0x4;
        /// Log the accumulated value when a target exits (needs a log).
        const LOG_PROCEXIT = 0x8;
        /// Capture call chains with each sample.
        const CALLCHAIN = 0x80;
        /// Capture the user call chain even when the sample lands in the
        /// kernel (needs `CALLCHAIN` and a sampling mode).
        const USERCALLCHAIN = 0x100;
        /// The event came from the pmu-events tables (`PMC_F_EV_PMU`,
        /// `sys/sys/pmc.h`). libpmc sets it for names it found there;
        /// `pmc` resolves every name itself, so the flag is accepted and
        /// changes nothing.
        const EV_PMU = 0x200;
    }
}

/// The CPU argument of `allocate`: `PMC_CPU_ANY` or one CPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Cpu {
    /// Any CPU (`PMC_CPU_ANY`): required by the process modes.
    Any,
    /// One CPU: required by the system modes.
    Id(u32),
}

impl fmt::Display for Cpu {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Cpu::Any => f.write_str("any"),
            Cpu::Id(n) => write!(f, "{n}"),
        }
    }
}

/// A process id as libpmc takes it: 0 means the caller.
pub type Pid = u32;

/// The opaque id of an allocated PMC (`pmc_id_t`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct PmcId(pub u32);

impl fmt::Display for PmcId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:#x}", self.0)
    }
}

/// The family of events a PMC belongs to (`enum pmc_class`, mapped to what
/// Linux offers).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Class {
    /// Generic hardware events (cycles, instructions, …): libpmc's
    /// architectural class (IAF/K8 generic names).
    Hardware,
    /// Hardware cache events (L1D/L1I/LLC/TLB/BPU/NODE × op × result).
    Cache,
    /// Raw CPU-specific encodings (`rNNNN`, `cpu/event=…/`).
    Raw,
    /// Kernel software events (libpmc's `SOFT` class).
    Software,
    /// Kernel tracepoints (`subsys:event`).
    Tracepoint,
    /// Hardware breakpoints (`mem:ADDR`).
    Breakpoint,
    /// User-space probes.
    Uprobe,
    /// Kernel probes.
    Kprobe,
    /// Another PMU from sysfs, by name (`msr`, `power`, uncore PMUs, …).
    Pmu(String),
}

impl Class {
    /// libpmc-style name (`pmc_name_of_class`).
    pub fn name(&self) -> &str {
        match self {
            Class::Hardware => "hardware",
            Class::Cache => "cache",
            Class::Raw => "raw",
            Class::Software => "software",
            Class::Tracepoint => "tracepoint",
            Class::Breakpoint => "breakpoint",
            Class::Uprobe => "uprobe",
            Class::Kprobe => "kprobe",
            Class::Pmu(n) => n,
        }
    }
}

/// A class of FreeBSD's `enum pmc_class` (`sys/sys/pmc.h` `__PMC_CLASSES`):
/// the ones libpmc reports this crate's classes as ([`Class::libpmc_class`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[repr(u32)]
pub enum LibpmcClass {
    /// `PMC_CLASS_TSC`: the `msr` PMU (its `tsc` event).
    Tsc = 0x00,
    /// `PMC_CLASS_K8`: the core PMU of AMD (and Hygon) CPUs.
    K8 = 0x02,
    /// `PMC_CLASS_IAP`: the core PMU of Intel CPUs, and of CPUs of no known vendor.
    Iap = 0x07,
    /// `PMC_CLASS_UCP`: any other PMU (uncore, power, …).
    Ucp = 0x09,
    /// `PMC_CLASS_SOFT`: software events, tracepoints, breakpoints, probes.
    Soft = 0x0F,
    /// `PMC_CLASS_ARMV8`: the core PMU of arm64 CPUs.
    Armv8 = 0x11,
}

impl LibpmcClass {
    /// `pmc_name_of_class`: libpmc.c names a class by its enum member
    /// without the `PMC_CLASS_` prefix.
    pub fn name(self) -> &'static str {
        match self {
            LibpmcClass::Tsc => "TSC",
            LibpmcClass::K8 => "K8",
            LibpmcClass::Iap => "IAP",
            LibpmcClass::Ucp => "UCP",
            LibpmcClass::Soft => "SOFT",
            LibpmcClass::Armv8 => "ARMV8",
        }
    }

    /// The `enum pmc_class` value.
    pub fn code(self) -> u32 {
        self as u32
    }

    /// The classes whose event names `pmc_event_names_of_class` lists under
    /// this one, in order: the generic hardware and cache events under the
    /// core class (raw and native names are listed by `pmcstat -L`), the
    /// kernel's software events under SOFT (tracepoints and probes are
    /// named by the user, not listed), `msr` under TSC, none under UCP.
    /// (ARMV8 lists libpmc's own table: [`crate::global::libpmc_event_names`].)
    pub fn listed_classes(self) -> Vec<Class> {
        match self {
            LibpmcClass::K8 | LibpmcClass::Iap | LibpmcClass::Armv8 => {
                vec![Class::Hardware, Class::Cache]
            }
            LibpmcClass::Soft => vec![Class::Software],
            LibpmcClass::Tsc => vec![Class::Pmu("msr".into())],
            LibpmcClass::Ucp => Vec::new(),
        }
    }
}

impl Class {
    /// The FreeBSD class libpmc reports this class as, on a CPU whose
    /// [`crate::CpuInfo::cputype`] is `cputype` (the vendor in it
    /// picks the core PMU's class).
    pub fn libpmc_class(&self, cputype: &str) -> LibpmcClass {
        match self {
            // The core PMU's own format is libpmc's pmu-events path.
            Class::Pmu(n) if is_core_pmu(n) => Class::Raw.libpmc_class(cputype),
            Class::Hardware | Class::Cache | Class::Raw => {
                let t = cputype.to_ascii_lowercase();
                if t.contains("intel") {
                    LibpmcClass::Iap
                } else if t.contains("amd") || t.contains("hygon") {
                    LibpmcClass::K8
                } else if cfg!(target_arch = "aarch64") {
                    LibpmcClass::Armv8
                } else {
                    LibpmcClass::Iap
                }
            }
            Class::Pmu(n) if n == "msr" => LibpmcClass::Tsc,
            Class::Pmu(_) => LibpmcClass::Ucp,
            Class::Software
            | Class::Tracepoint
            | Class::Breakpoint
            | Class::Uprobe
            | Class::Kprobe => LibpmcClass::Soft,
        }
    }
}

impl fmt::Display for Class {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Class::Pmu(n) => write!(f, "pmu:{n}"),
            c => f.write_str(c.name()),
        }
    }
}

bitflags::bitflags! {
    /// What a PMC's class can do (`PMC_CAP_*`, FreeBSD's bit values).
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
    pub struct Capabilities: u32 {
        /// Can interrupt on overflow (sampling).
        const INTERRUPT = 1 << 0;
        /// Can count user mode only.
        const USER = 1 << 1;
        /// Can count kernel mode only.
        const SYSTEM = 1 << 2;
        /// Edge detection.
        const EDGE = 1 << 3;
        /// Counter-mask threshold.
        const THRESHOLD = 1 << 4;
        /// Readable.
        const READ = 1 << 5;
        /// Writable (initial value / reload count).
        const WRITE = 1 << 6;
        /// Inverted comparison.
        const INVERT = 1 << 7;
        /// Unit mask qualifiers.
        const QUALIFIER = 1 << 8;
        /// Precise (skid-free) sampling.
        const PRECISE = 1 << 9;
        /// Tagging.
        const TAGGING = 1 << 10;
        /// Cascading counters.
        const CASCADE = 1 << 11;
        /// One counter for the whole machine, not one per CPU: allocate it
        /// on one CPU only (`PMC_CAP_SYSWIDE`; pmc-stat then counts it on
        /// CPU 0 alone). Per-CPU core and software counters lack it.
        const SYSWIDE = 1 << 12;
        /// One counter per memory domain (NUMA node), not per CPU
        /// (`PMC_CAP_DOMWIDE`).
        const DOMWIDE = 1 << 13;
    }
}

impl fmt::Display for Capabilities {
    /// Space-separated capability names as `pmc_name_of_capability` gives them.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        for (name, _) in self.iter_names() {
            if !first {
                f.write_str(" ")?;
            }
            first = false;
            f.write_str(name)?;
        }
        Ok(())
    }
}

/// The life-cycle state of a PMC (`enum pmc_state`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[repr(u8)]
pub enum State {
    /// Administratively disabled.
    Disabled,
    /// Not allocated.
    Free,
    /// Allocated, never started.
    Allocated,
    /// Started at least once, now stopped.
    Stopped,
    /// Counting or sampling.
    Running,
    /// Released.
    Deleted,
}

impl fmt::Display for State {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            State::Disabled => "DISABLED",
            State::Free => "FREE",
            State::Allocated => "ALLOCATED",
            State::Stopped => "STOPPED",
            State::Running => "RUNNING",
            State::Deleted => "DELETED",
        })
    }
}

/// A counter value with its multiplexing times (from [`crate::Pmc::read_detailed`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Reading {
    /// The value `read()` returns: the scaled count plus any initial value.
    pub value: u64,
    /// The unscaled count the hardware produced (summed over targets).
    pub raw: u64,
    /// Nanoseconds the PMC was enabled (summed over targets).
    pub time_enabled: u64,
    /// Nanoseconds the PMC was actually on the hardware (summed over targets).
    pub time_running: u64,
    /// Whether the value was extrapolated because the PMU was shared.
    pub multiplexed: bool,
}

impl Reading {
    /// The fraction of enabled time the counter actually ran (1.0 when it
    /// was never multiplexed or never enabled).
    pub fn running_fraction(&self) -> f64 {
        if self.time_enabled == 0 {
            1.0
        } else {
            (self.time_running as f64 / self.time_enabled as f64).min(1.0)
        }
    }
}

/// Whether a sysfs PMU name is a core (CPU) PMU: `cpu`, the hybrid
/// `cpu_core`/`cpu_atom`, or an Arm `armv*` PMU (public as
/// `pmc::probe::is_core_pmu`).
pub(crate) fn is_core_pmu(name: &str) -> bool {
    name == "cpu" || name.starts_with("cpu_") || name.starts_with("armv")
}

/// One class of PMCs on this machine (`struct pmc_classinfo`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClassInfo {
    /// The class.
    pub class: Class,
    /// What its PMCs can do.
    pub caps: Capabilities,
    /// The hardware counter width in bits (values read through `pmc` are
    /// always extended to 64 bits).
    pub width: u32,
    /// How many PMCs of the class each CPU has (`None`: limited only by
    /// kernel resources, as for software events).
    pub num: Option<u32>,
}

/// The machine description (`struct pmc_cpuinfo`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CpuInfo {
    /// The CPU model, e.g. `AMD EPYC (family 0x19, model 0x1)`.
    pub cputype: String,
    /// Highest possible CPU number + 1 (`pmc_ncpu`).
    pub ncpu: u32,
    /// Hardware PMCs per CPU (general-purpose + fixed), 0 without a PMU.
    pub npmc: u32,
    /// The classes available.
    pub classes: Vec<ClassInfo>,
}

/// One allocated PMC as `pmc_pmcinfo` describes it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PmcInfo {
    /// The PMC's id.
    pub id: PmcId,
    /// The event specifier it was allocated with.
    pub name: String,
    /// Its class.
    pub class: Class,
    /// Its mode.
    pub mode: Mode,
    /// Its flags.
    pub flags: Flags,
    /// Its CPU argument.
    pub cpu: Cpu,
    /// Its state.
    pub state: State,
    /// The owning process.
    pub owner_pid: u32,
    /// The reload count (sampling) or initial value (counting).
    pub reload_count: u64,
    /// The processes it is attached to.
    pub targets: Vec<u32>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_have_freebsd_numbers_and_names() {
        assert_eq!(Mode::SS as u32, 0);
        assert_eq!(Mode::SC as u32, 1);
        assert_eq!(Mode::TS as u32, 2);
        assert_eq!(Mode::TC as u32, 3);
        for m in Mode::ALL {
            assert_eq!(Mode::from_name(&m.to_string()), Some(m));
        }
        assert_eq!(Mode::from_name("process-counting"), Some(Mode::TC));
        assert!(Mode::SS.is_system() && Mode::SS.is_sampling());
        assert!(Mode::TC.is_process() && Mode::TC.is_counting());
    }

    #[test]
    fn libpmc_classes_have_freebsd_values_names_and_vendors() {
        // sys/sys/pmc.h __PMC_CLASSES(): TSC 0x00, K8 0x02, IAP 0x07,
        // UCP 0x09, SOFT 0x0F, ARMV8 0x11; libpmc.c names each `#S`.
        for (c, code, name) in [
            (LibpmcClass::Tsc, 0x00, "TSC"),
            (LibpmcClass::K8, 0x02, "K8"),
            (LibpmcClass::Iap, 0x07, "IAP"),
            (LibpmcClass::Ucp, 0x09, "UCP"),
            (LibpmcClass::Soft, 0x0F, "SOFT"),
            (LibpmcClass::Armv8, 0x11, "ARMV8"),
        ] {
            assert_eq!((c.code(), c.name()), (code, name));
        }
        let amd = "AMD EPYC (family 25, model 1)";
        let intel = "Intel(R) Xeon(R) (family 6, model 85)";
        assert_eq!(Class::Cache.libpmc_class(amd), LibpmcClass::K8);
        assert_eq!(Class::Raw.libpmc_class("Hygon C86"), LibpmcClass::K8);
        assert_eq!(Class::Hardware.libpmc_class(intel), LibpmcClass::Iap);
        assert_eq!(Class::Tracepoint.libpmc_class(amd), LibpmcClass::Soft);
        assert_eq!(Class::Pmu("msr".into()).libpmc_class(amd), LibpmcClass::Tsc);
        assert_eq!(
            Class::Pmu("power".into()).libpmc_class(amd),
            LibpmcClass::Ucp
        );
        assert_eq!(
            Class::Pmu("cpu".into()).libpmc_class(intel),
            LibpmcClass::Iap
        );
        assert_eq!(
            Class::Pmu("cpu_core".into()).libpmc_class(amd),
            LibpmcClass::K8
        );
        assert_eq!(LibpmcClass::Soft.listed_classes(), vec![Class::Software]);
        assert!(LibpmcClass::Ucp.listed_classes().is_empty());
    }

    #[test]
    fn flags_and_caps_have_freebsd_values() {
        assert_eq!(Flags::DESCENDANTS.bits(), 0x2);
        assert_eq!(Flags::USERCALLCHAIN.bits(), 0x100);
        // sys/sys/pmc.h: `#define PMC_F_EV_PMU 0x00000200`.
        assert_eq!(Flags::EV_PMU.bits(), 0x200);
        // sys/sys/pmc.h __PMC_CAPS(): SYSWIDE is bit 12, DOMWIDE bit 13.
        assert_eq!(Capabilities::SYSWIDE.bits(), 1 << 12);
        assert_eq!(Capabilities::DOMWIDE.bits(), 1 << 13);
        assert_eq!(Capabilities::PRECISE.bits(), 1 << 9);
        let caps = Capabilities::READ | Capabilities::WRITE;
        assert_eq!(caps.to_string(), "READ WRITE");
        assert_eq!(State::Running.to_string(), "RUNNING");
        assert_eq!(Class::Pmu("msr".into()).to_string(), "pmu:msr");
    }
}
