//! `#[repr(C)]` mirrors of FreeBSD's hwpmc system-call ABI.
//!
//! Source of every value here (the oracle, cited per item):
//! FreeBSD `sys/sys/pmc.h` at `PMC_VERSION` 0x0A000000 (the FreeBSD 14/15
//! header: V10 API with `PMC_F_EV_PMU`, 12-bit CPU field in the PMC id),
//! `sys/dev/hwpmc/pmc_events.h`, `sys/amd64/include/pmc_mdep.h`,
//! `sys/arm64/include/pmc_mdep.h`, `sys/dev/hwpmc/hwpmc_{amd,core,uncore,
//! cmn600,dmc620}.h`, `sys/sys/module.h` and `sys/sys/errno.h`.
//!
//! C `enum` fields are `int`-sized and kept as raw `u32` in the structures
//! (the kernel may hand back values this crate does not know); the Rust
//! enums below decode them with `from_raw`.
#![allow(non_camel_case_types)]

use std::fmt;

mod md;
mod ops;

pub use md::*;
pub use ops::*;

/// `PMC_MODULE_NAME`: the name libpmc passes to `modfind(2)`.
pub const PMC_MODULE_NAME: &str = "hwpmc";
/// `PMC_NAME_MAX`: size of the name arrays.
pub const PMC_NAME_MAX: usize = 64;
/// `PMC_CLASS_MAX`: classes in `pmc_op_getcpuinfo`.
pub const PMC_CLASS_MAX: usize = 8;
/// `PMC_VERSION_MAJOR`.
pub const PMC_VERSION_MAJOR: u32 = 0x0A;
/// `PMC_VERSION_MINOR`.
pub const PMC_VERSION_MINOR: u32 = 0x00;
/// `PMC_VERSION_PATCH`.
pub const PMC_VERSION_PATCH: u32 = 0x0000;
/// `PMC_VERSION`: `MAJOR << 24 | MINOR << 16 | PATCH`.
pub const PMC_VERSION: u32 = PMC_VERSION_MAJOR << 24 | PMC_VERSION_MINOR << 16 | PMC_VERSION_PATCH;
/// `PMC_CPU_ANY` (`~0`): the CPU of process-virtual PMCs.
pub const PMC_CPU_ANY: u32 = !0;
/// `PMC_ID_INVALID`.
pub const PMC_ID_INVALID: u32 = !0;
/// `PMC_CALLCHAIN_DEPTH_MAX`.
pub const PMC_CALLCHAIN_DEPTH_MAX: u32 = 512;

/// `pmc_id_t`.
pub type pmc_id_t = u32;
/// `pmc_value_t`.
pub type pmc_value_t = u64;
/// `pid_t` on FreeBSD (`__int32_t`).
pub type pid_t = i32;

// ---- PMC_F_* (sys/sys/pmc.h "Flags used in operations on PMCs") ----
/// Unused bit (was `PMC_F_FORCE`).
pub const PMC_F_UNUSED1: u32 = 0x0000_0001;
/// OP ALLOCATE: track descendants.
pub const PMC_F_DESCENDANTS: u32 = 0x0000_0002;
/// OP ALLOCATE: log context switches.
pub const PMC_F_LOG_PROCCSW: u32 = 0x0000_0004;
/// OP ALLOCATE: log process exits.
pub const PMC_F_LOG_PROCEXIT: u32 = 0x0000_0008;
/// OP RW: write a new value.
pub const PMC_F_NEWVALUE: u32 = 0x0000_0010;
/// OP RW: return the old value.
pub const PMC_F_OLDVALUE: u32 = 0x0000_0020;
/// OP ALLOCATE: capture callchains (V2).
pub const PMC_F_CALLCHAIN: u32 = 0x0000_0080;
/// OP ALLOCATE: capture user callchains from the user stack (V2).
pub const PMC_F_USERCALLCHAIN: u32 = 0x0000_0100;
/// OP ALLOCATE: `pm_ev` is a pmu-events index, the configuration is in
/// the class-dependent `pm_md` (V10).
pub const PMC_F_EV_PMU: u32 = 0x0000_0200;
/// Internal: attached to its owner.
pub const PMC_F_ATTACHED_TO_OWNER: u32 = 0x0001_0000;
/// Internal: needs a log file.
pub const PMC_F_NEEDS_LOGFILE: u32 = 0x0002_0000;
/// Internal: attached at least once.
pub const PMC_F_ATTACH_DONE: u32 = 0x0004_0000;
/// `PMC_CC_F_USERSPACE`: userspace callchain.
pub const PMC_CC_F_USERSPACE: u32 = 0x01;

// ---- PMC_CAP_* (`__PMC_CAPS()`: 1 << bit) ----
/// Generate interrupts.
pub const PMC_CAP_INTERRUPT: u32 = 1 << 0;
/// Count user-mode events.
pub const PMC_CAP_USER: u32 = 1 << 1;
/// Count system-mode events.
pub const PMC_CAP_SYSTEM: u32 = 1 << 2;
/// Edge detection.
pub const PMC_CAP_EDGE: u32 = 1 << 3;
/// Threshold.
pub const PMC_CAP_THRESHOLD: u32 = 1 << 4;
/// Read the counter.
pub const PMC_CAP_READ: u32 = 1 << 5;
/// Write the counter.
pub const PMC_CAP_WRITE: u32 = 1 << 6;
/// Invert the comparison.
pub const PMC_CAP_INVERT: u32 = 1 << 7;
/// Further qualify events.
pub const PMC_CAP_QUALIFIER: u32 = 1 << 8;
/// Precise sampling.
pub const PMC_CAP_PRECISE: u32 = 1 << 9;
/// Tag upstream events.
pub const PMC_CAP_TAGGING: u32 = 1 << 10;
/// Cascade counters.
pub const PMC_CAP_CASCADE: u32 = 1 << 11;
/// System-wide counter.
pub const PMC_CAP_SYSWIDE: u32 = 1 << 12;
/// NUMA-domain-wide counter.
pub const PMC_CAP_DOMWIDE: u32 = 1 << 13;

// ---- event numbers (sys/dev/hwpmc/pmc_events.h, `__PMC_EVENTS()`) ----
/// `PMC_EV_TSC_TSC`: block TSC starts at 0x1000.
pub const PMC_EV_TSC_TSC: u32 = 0x1000;
/// First AMD K8 event (`__PMC_EV_BLOCK(K8, 0x02080)`).
pub const PMC_EV_K8_FIRST: u32 = 0x2080;
/// First Intel fixed-function event (`__PMC_EV_BLOCK(IAF, 0x10000)`).
pub const PMC_EV_IAF_FIRST: u32 = 0x10000;
/// `PMC_EV_DYN_COUNT`: size of the dynamic (soft) event space.
pub const PMC_EV_DYN_COUNT: usize = 0x1000;
/// `PMC_EV_SOFT_FIRST`.
pub const PMC_EV_SOFT_FIRST: u32 = 0x20000;
/// `PMC_EV_SOFT_LAST`.
pub const PMC_EV_SOFT_LAST: u32 = PMC_EV_SOFT_FIRST + PMC_EV_DYN_COUNT as u32 - 1;

// ---- errno values of FreeBSD (sys/sys/errno.h); they differ from Linux ----
/// A FreeBSD errno value. The kernel double returns FreeBSD numbers, and
/// so does the real system call, whatever the host the code runs on.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Errno(pub i32);

#[allow(missing_docs)]
impl Errno {
    pub const EPERM: Errno = Errno(1);
    pub const ENOENT: Errno = Errno(2);
    pub const ESRCH: Errno = Errno(3);
    pub const ENXIO: Errno = Errno(6);
    pub const EBADF: Errno = Errno(9);
    pub const ENOMEM: Errno = Errno(12);
    pub const EFAULT: Errno = Errno(14);
    pub const EBUSY: Errno = Errno(16);
    pub const EEXIST: Errno = Errno(17);
    pub const EINVAL: Errno = Errno(22);
    pub const EOPNOTSUPP: Errno = Errno(45);
    pub const EPROGMISMATCH: Errno = Errno(75);
    pub const ENOSYS: Errno = Errno(78);
    pub const EDOOFUS: Errno = Errno(88);

    /// The symbolic name, for messages.
    pub fn name(self) -> &'static str {
        match self.0 {
            1 => "EPERM",
            2 => "ENOENT",
            3 => "ESRCH",
            6 => "ENXIO",
            9 => "EBADF",
            12 => "ENOMEM",
            14 => "EFAULT",
            16 => "EBUSY",
            17 => "EEXIST",
            22 => "EINVAL",
            45 => "EOPNOTSUPP",
            75 => "EPROGMISMATCH",
            78 => "ENOSYS",
            88 => "EDOOFUS",
            _ => "E?",
        }
    }
}

impl fmt::Debug for Errno {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}({})", self.name(), self.0)
    }
}

impl fmt::Display for Errno {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.name(), self.0)
    }
}

macro_rules! raw_enum {
    ($(#[$m:meta])* $name:ident { $($(#[$vm:meta])* $v:ident = $n:expr),* $(,)? }) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        #[repr(u32)]
        #[allow(missing_docs)] // variants are the header's names
        pub enum $name { $($(#[$vm])* $v = $n),* }

        impl $name {
            /// Every value, in header order.
            pub const ALL: &'static [$name] = &[$($name::$v),*];
            /// Decodes the raw `int` the kernel uses.
            pub fn from_raw(raw: u32) -> Option<$name> {
                match raw { $($n => Some($name::$v),)* _ => None }
            }
            /// The header's symbolic suffix (`TSC`, `SC`, …).
            pub fn name(self) -> &'static str {
                match self { $($name::$v => stringify!($v)),* }
            }
        }
    };
}

raw_enum! {
    /// `enum pmc_ops` (`__PMC_OPS()`, numbered from 0 in header order).
    Op {
        CONFIGURELOG = 0, FLUSHLOG = 1, GETCPUINFO = 2, GETDRIVERSTATS = 3,
        GETMODULEVERSION = 4, GETPMCINFO = 5, PMCADMIN = 6, PMCALLOCATE = 7,
        PMCATTACH = 8, PMCDETACH = 9, PMCGETMSR = 10, PMCRELEASE = 11,
        PMCRW = 12, PMCSETCOUNT = 13, PMCSTART = 14, PMCSTOP = 15,
        WRITELOG = 16, CLOSELOG = 17, GETDYNEVENTINFO = 18,
    }
}

raw_enum! {
    /// `enum pmc_class` (`__PMC_CLASSES()`, explicit values).
    Class {
        TSC = 0x00, K8 = 0x02, IAF = 0x06, IAP = 0x07, UCF = 0x08, UCP = 0x09,
        XSCALE = 0x0A, PPC7450 = 0x0D, PPC970 = 0x0E, SOFT = 0x0F, ARMV7 = 0x10,
        ARMV8 = 0x11, E500 = 0x13, POWER8 = 0x15, DMC620_PMU_CD2 = 0x16,
        DMC620_PMU_C = 0x17, CMN600_PMU = 0x18,
    }
}

raw_enum! {
    /// `enum pmc_cputype` (`__PMC_CPUS()`).
    CpuType {
        AMD_K8 = 0x01, INTEL_CORE = 0x87, INTEL_CORE2 = 0x88,
        INTEL_CORE2EXTREME = 0x89, INTEL_ATOM = 0x8A, INTEL_COREI7 = 0x8B,
        INTEL_WESTMERE = 0x8C, INTEL_SANDYBRIDGE = 0x8D, INTEL_IVYBRIDGE = 0x8E,
        INTEL_SANDYBRIDGE_XEON = 0x8F, INTEL_IVYBRIDGE_XEON = 0x90,
        INTEL_HASWELL = 0x91, INTEL_ATOM_SILVERMONT = 0x92,
        INTEL_NEHALEM_EX = 0x93, INTEL_WESTMERE_EX = 0x94,
        INTEL_HASWELL_XEON = 0x95, INTEL_BROADWELL = 0x96,
        INTEL_BROADWELL_XEON = 0x97, INTEL_SKYLAKE = 0x98,
        INTEL_SKYLAKE_XEON = 0x99, INTEL_ATOM_GOLDMONT = 0x9A,
        INTEL_ICELAKE = 0x9B, INTEL_ICELAKE_XEON = 0x9C, INTEL_ALDERLAKE = 0x9D,
        INTEL_ATOM_GOLDMONT_P = 0x9E, INTEL_ATOM_TREMONT = 0x9F,
        INTEL_XSCALE = 0x100, PPC_7450 = 0x300, PPC_E500 = 0x340,
        PPC_970 = 0x380, PPC_POWER8 = 0x390, GENERIC = 0x400,
        ARMV7_CORTEX_A5 = 0x500, ARMV7_CORTEX_A7 = 0x501,
        ARMV7_CORTEX_A8 = 0x502, ARMV7_CORTEX_A9 = 0x503,
        ARMV7_CORTEX_A15 = 0x504, ARMV7_CORTEX_A17 = 0x505,
        ARMV8_CORTEX_A53 = 0x600, ARMV8_CORTEX_A57 = 0x601,
        ARMV8_CORTEX_A76 = 0x602,
    }
}

raw_enum! {
    /// `enum pmc_state` (`__PMC_STATES()` then `MAX`).
    State {
        DISABLED = 0, FREE = 1, ALLOCATED = 2, STOPPED = 3, RUNNING = 4,
        DELETED = 5, MAX = 6,
    }
}

raw_enum! {
    /// `enum pmc_mode` (`__PMC_MODES()`).
    Mode { SS = 0, SC = 1, TS = 2, TC = 3 }
}

raw_enum! {
    /// `enum pmc_disp` (`__PMC_DISPOSITIONS()`).
    Disp { STANDALONE = 0, FREE = 1, THREAD = 2, UNKNOWN = 3 }
}

impl Mode {
    /// `PMC_IS_COUNTING_MODE`.
    pub fn is_counting(self) -> bool {
        matches!(self, Mode::SC | Mode::TC)
    }
    /// `PMC_IS_SYSTEM_MODE`.
    pub fn is_system(self) -> bool {
        matches!(self, Mode::SS | Mode::SC)
    }
    /// `PMC_IS_SAMPLING_MODE`.
    pub fn is_sampling(self) -> bool {
        matches!(self, Mode::SS | Mode::TS)
    }
    /// `PMC_IS_VIRTUAL_MODE`.
    pub fn is_virtual(self) -> bool {
        matches!(self, Mode::TS | Mode::TC)
    }
}

// ---- PMC ids: CPU 12 bits, MODE 4, CLASS 8, ROW INDEX 8 ----
/// `PMC_ID_MAKE_ID(CPU, MODE, CLASS, ROWINDEX)`.
pub const fn pmc_id_make(cpu: u32, mode: u32, class: u32, ri: u32) -> pmc_id_t {
    ((cpu & 0xFFF) << 20) | ((mode & 0xF) << 16) | ((class & 0xFF) << 8) | (ri & 0xFF)
}
/// `PMC_ID_TO_ROWINDEX`.
pub const fn pmc_id_to_rowindex(id: pmc_id_t) -> u32 {
    id & 0xFF
}
/// `PMC_ID_TO_CLASS`.
pub const fn pmc_id_to_class(id: pmc_id_t) -> u32 {
    (id & 0xFF00) >> 8
}
/// `PMC_ID_TO_MODE`.
pub const fn pmc_id_to_mode(id: pmc_id_t) -> u32 {
    (id & 0xF0000) >> 16
}
/// `PMC_ID_TO_CPU`.
pub const fn pmc_id_to_cpu(id: pmc_id_t) -> u32 {
    (id & 0xFFF0_0000) >> 20
}
