//! Event specifiers: FreeBSD's `name[,qualifier[=value]]…` and the Linux
//! forms, parsed without any I/O into an [`EventSpec`].
//!
//! Grammar (the first matching form wins):
//!
//! | form | example | meaning |
//! |---|---|---|
//! | FreeBSD | `instructions,usr`, `SOFT-PAGE_FAULT.ALL`, `k8-dc-misses,os` | generic/class names with qualifiers |
//! | perf generic | `cache-misses`, `task-clock`, `L1-dcache-load-misses` | every perf hw/sw/cache name |
//! | perf modifiers | `instructions:u`, `cycles:ppp` | `u k h G H I p P S D W e` |
//! | PMU terms | `cpu/event=0xc0,umask=0x1,cmask=1,edge/u`, `msr/tsc/` | sysfs PMU encoding |
//! | raw | `r1c0`, `r01c0:u` | `PERF_TYPE_RAW` config in hex |
//! | tracepoint | `syscalls:sys_enter_write,filter=count==3` | tracefs `subsys:event` |
//! | breakpoint | `mem:0x1000/8:w` | `mem:ADDR[/LEN][:r|w|rw|x]` |
//! | probe | `uprobe:/bin/true:main`, `kretprobe:do_sys_open` | uprobes/kprobes |
//!
//! FreeBSD names are matched case-insensitively with space, `.`, `_` and `-`
//! treated alike; tracepoint, PMU and probe names are kept verbatim.
//! Qualifiers after a `,` apply to every form: `usr`, `os`, `edge`, `inv`,
//! `cmask=`/`count=`, `umask=`/`mask=`, `threshold=`, `anythread`,
//! `precise[=N]`, and the extensions `period=`, `freq=`, `filter=`,
//! `pinned`, `exclusive`. `filter=` takes the rest of the specifier.

pub mod armv8;
mod names;
mod parse;

#[cfg(test)]
mod tests;

use std::fmt;

use serde::{Deserialize, Serialize};

pub use names::{SOFT_EVENTS, generic_names};
pub use parse::parse;
#[cfg(any(
    test,
    all(
        any(target_os = "linux", target_os = "android"),
        not(pmc_force_portable)
    )
))]
pub(crate) use parse::soft_without_linux;

/// A parsed event specifier.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct EventSpec {
    /// The specifier as given.
    pub text: String,
    /// The class prefix that was given, lower-cased without its separator
    /// (`soft`, `k8`, `iaf`, `tsc`, …), if any.
    pub class_prefix: Option<String>,
    /// What to count.
    pub event: EventName,
    /// Qualifiers and modifiers.
    pub qualifiers: Qualifiers,
}

/// What an event specifier names.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum EventName {
    /// A generic hardware event.
    Hardware(HardwareEvent),
    /// A kernel software event.
    Software(SoftwareEvent),
    /// A hardware cache event.
    Cache(CacheEvent),
    /// A raw CPU encoding (`rNNNN`).
    Raw(u64),
    /// A sysfs PMU with terms: `pmu/term[=value],…/`.
    Pmu {
        /// The PMU name (`cpu`, `msr`, `cpu_core`, `amd_df`, …).
        pmu: String,
        /// The terms in order.
        terms: Vec<Term>,
    },
    /// A tracepoint `subsystem:event`.
    Tracepoint {
        /// The subsystem (`syscalls`).
        subsystem: String,
        /// The event (`sys_enter_write`).
        event: String,
    },
    /// A hardware breakpoint `mem:ADDR[/LEN][:ACCESS]`.
    Breakpoint {
        /// The address.
        addr: u64,
        /// The length in bytes, if given.
        len: Option<u64>,
        /// The access type (default read-write, as perf).
        access: BreakpointAccess,
    },
    /// A uprobe or kprobe.
    Probe(ProbeSpec),
    /// A name the parser does not know statically: a sysfs event alias, a
    /// pmu-events JSON name (`inst_retired.any`), or a native libpfm4 name.
    /// The backend resolves it (or reports the closest known names).
    Named(String),
}

/// Generic hardware events (the portable set; each backend maps them).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[allow(missing_docs)]
pub enum HardwareEvent {
    Cycles,
    Instructions,
    CacheReferences,
    CacheMisses,
    Branches,
    BranchMisses,
    BusCycles,
    StalledCyclesFrontend,
    StalledCyclesBackend,
    RefCycles,
    /// Hardware interrupts taken (FreeBSD `interrupts`): no generic Linux
    /// event; backends map it to the CPU's native event where one exists.
    Interrupts,
}

/// Kernel software events.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[allow(missing_docs)]
pub enum SoftwareEvent {
    CpuClock,
    TaskClock,
    PageFaults,
    ContextSwitches,
    CpuMigrations,
    MinorFaults,
    MajorFaults,
    AlignmentFaults,
    EmulationFaults,
    Dummy,
    BpfOutput,
    CgroupSwitches,
}

/// A cache, as in perf's `L1-dcache`, `LLC`, `dTLB`, ….
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[allow(missing_docs)]
pub enum CacheLevel {
    L1D,
    L1I,
    LL,
    DTLB,
    ITLB,
    BPU,
    NODE,
}

/// A cache operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[allow(missing_docs)]
pub enum CacheOp {
    Read,
    Write,
    Prefetch,
}

/// A cache result.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[allow(missing_docs)]
pub enum CacheResult {
    Access,
    Miss,
}

/// A hardware cache event.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct CacheEvent {
    /// Which cache.
    pub cache: CacheLevel,
    /// Which operation.
    pub op: CacheOp,
    /// Accesses or misses.
    pub result: CacheResult,
}

/// A breakpoint's trigger.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum BreakpointAccess {
    /// `r`
    Read,
    /// `w`
    Write,
    /// `rw` (the default)
    ReadWrite,
    /// `x`
    Execute,
}

/// The kind of a probe.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ProbeKind {
    /// `uprobe:PATH:SYMBOL[+OFF]` or `uprobe:PATH:0xOFFSET`
    Uprobe,
    /// `uretprobe:…`
    Uretprobe,
    /// `kprobe:FUNC[+OFF]` or `kprobe:0xADDR`
    Kprobe,
    /// `kretprobe:FUNC`
    Kretprobe,
}

/// A uprobe/kprobe location.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ProbeSpec {
    /// Which kind.
    pub kind: ProbeKind,
    /// For uprobes, the binary's path (absolute); for kprobes, empty.
    pub path: String,
    /// The symbol (function), if given by name.
    pub symbol: Option<String>,
    /// The offset from the symbol, or the file offset (uprobe) / address
    /// (kprobe) when no symbol is given.
    pub offset: u64,
}

/// One `term[=value]` inside `pmu/…/`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Term {
    /// The term name as written (`event`, `umask`, `config1`, `edge`, …).
    pub name: String,
    /// Its value.
    pub value: TermValue,
}

/// The value of a PMU term.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum TermValue {
    /// A bare term (`edge`): the same as `=1`, or an event alias (`cpu/instructions/`).
    Flag,
    /// A number, decimal or `0x` hex.
    Number(u64),
    /// Any other value (`name=foo`).
    Str(String),
}

/// Which privilege levels to count. `None` everywhere means the default
/// (all levels, as FreeBSD counts both `usr` and `os` unless told).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Privilege {
    /// Count user mode.
    pub user: bool,
    /// Count kernel mode.
    pub kernel: bool,
    /// Count the hypervisor.
    pub hypervisor: bool,
}

/// Precise (low-skid) sampling.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Precise {
    /// An explicit level 0–3 (`precise=N`, `:p`×N).
    Level(u8),
    /// The highest level the PMU supports (`precise`, `:P`).
    Max,
}

/// Qualifiers (FreeBSD) and modifiers (perf) of an event.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Qualifiers {
    /// `usr`/`os` or `:u`/`:k`/`:h`; `None` = count everything.
    pub privilege: Option<Privilege>,
    /// `edge`
    pub edge: bool,
    /// `inv`
    pub inv: bool,
    /// `cmask=N` / `count=N`
    pub cmask: Option<u32>,
    /// `umask=N` / `mask=N`
    pub umask: Option<u32>,
    /// `threshold=N`
    pub threshold: Option<u32>,
    /// `anythread`
    pub anythread: bool,
    /// `precise[=N]`, `:p`, `:P`
    pub precise: Option<Precise>,
    /// `period=N` (sampling reload count)
    pub period: Option<u64>,
    /// `freq=HZ` (frequency-mode sampling)
    pub freq: Option<u64>,
    /// `filter=EXPR` (tracepoint filter; takes the rest of the specifier)
    pub filter: Option<String>,
    /// `pinned` / `:D`
    pub pinned: bool,
    /// `exclusive` / `:e`
    pub exclusive: bool,
    /// `:I` (do not count while idle)
    pub exclude_idle: bool,
    /// `:G` (count only in guests)
    pub guest_only: bool,
    /// `:H` (count only in the host)
    pub host_only: bool,
    /// `:S` (sample by reading the group)
    pub sample_read: bool,
    /// `:W` (weak group)
    pub weak_group: bool,
}

/// Why an event specifier was rejected.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[error(
    "at column {column}, {token:?}: {message}{}",
    alternatives_suffix(alternatives)
)]
pub struct SpecError {
    /// 1-based column (in characters) where the problem starts.
    pub column: usize,
    /// The offending token.
    pub token: String,
    /// What is wrong.
    pub message: String,
    /// Valid alternatives (closest first), possibly empty.
    pub alternatives: Vec<String>,
}

fn alternatives_suffix(alts: &[String]) -> String {
    if alts.is_empty() {
        String::new()
    } else {
        format!(" (valid: {})", alts.join(", "))
    }
}

impl fmt::Display for HardwareEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(names::hardware_name(*self))
    }
}

impl fmt::Display for SoftwareEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(names::software_name(*self))
    }
}

impl fmt::Display for CacheEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&names::cache_name(*self))
    }
}
