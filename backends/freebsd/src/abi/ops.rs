//! The request and reply structures of the `PMC_OP_*` operations
//! (sys/sys/pmc.h), the module status of modstat(2) (sys/sys/module.h),
//! and the C name arrays they carry.

use super::{
    PMC_CLASS_MAX, PMC_EV_DYN_COUNT, PMC_NAME_MAX, pid_t, pmc_id_t, pmc_md_union, pmc_value_t,
};

/// `struct pmc_op_pmcallocate` (OP PMCALLOCATE).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct pmc_op_pmcallocate {
    /// `PMC_CAP_*`.
    pub pm_caps: u32,
    /// CPU number or `PMC_CPU_ANY`.
    pub pm_cpu: u32,
    /// `enum pmc_class`.
    pub pm_class: u32,
    /// `enum pmc_event` (or a pmu-events index with `PMC_F_EV_PMU`).
    pub pm_ev: u32,
    /// `PMC_F_*`.
    pub pm_flags: u32,
    /// `enum pmc_mode`.
    pub pm_mode: u32,
    /// \[return\] the PMC id.
    pub pm_pmcid: pmc_id_t,
    /// Initial count or sampling reload count.
    pub pm_count: pmc_value_t,
    /// `union pmc_md_op_pmcallocate`.
    pub pm_md: pmc_md_union,
}

/// `struct pmc_op_pmcadmin` (OP PMCADMIN).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct pmc_op_pmcadmin {
    /// CPU.
    pub pm_cpu: i32,
    /// Flags.
    pub pm_flags: u32,
    /// Row index.
    pub pm_pmc: i32,
    /// `enum pmc_state`: DISABLED or FREE.
    pub pm_state: u32,
}

/// `struct pmc_op_pmcattach` (OP PMCATTACH / PMCDETACH).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct pmc_op_pmcattach {
    /// The PMC.
    pub pm_pmc: pmc_id_t,
    /// Target process (0 = the caller).
    pub pm_pid: pid_t,
}

/// `struct pmc_op_pmcsetcount` (OP PMCSETCOUNT).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct pmc_op_pmcsetcount {
    /// Initial/sample count.
    pub pm_count: pmc_value_t,
    /// The PMC.
    pub pm_pmcid: pmc_id_t,
}

/// `struct pmc_op_pmcrw` (OP PMCRW).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct pmc_op_pmcrw {
    /// `PMC_F_{OLD,NEW}VALUE`.
    pub pm_flags: u32,
    /// The PMC.
    pub pm_pmcid: pmc_id_t,
    /// New value in, old value out.
    pub pm_value: pmc_value_t,
}

/// `struct pmc_info` (one row of OP GETPMCINFO).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct pmc_info {
    /// Row name, NUL-terminated.
    pub pm_name: [u8; PMC_NAME_MAX],
    /// `enum pmc_class`.
    pub pm_class: u32,
    /// Whether enabled.
    pub pm_enabled: i32,
    /// `enum pmc_disp`.
    pub pm_rowdisp: u32,
    /// Owner, or -1.
    pub pm_ownerpid: pid_t,
    /// `enum pmc_mode`.
    pub pm_mode: u32,
    /// `enum pmc_event`.
    pub pm_event: u32,
    /// `PMC_F_*`.
    pub pm_flags: u32,
    /// Sampling reload count.
    pub pm_reloadcount: pmc_value_t,
}

impl Default for pmc_info {
    fn default() -> Self {
        pmc_info {
            pm_name: [0; PMC_NAME_MAX],
            pm_class: 0,
            pm_enabled: 0,
            pm_rowdisp: 0,
            pm_ownerpid: 0,
            pm_mode: 0,
            pm_event: 0,
            pm_flags: 0,
            pm_reloadcount: 0,
        }
    }
}

/// The fixed head of `struct pmc_op_getpmcinfo` (OP GETPMCINFO): `int32_t
/// pm_cpu` then the flexible `struct pmc_info pm_pmcs[]`, which starts at
/// [`GETPMCINFO_PMCS_OFFSET`] because `pmc_info` is 8-aligned.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct pmc_op_getpmcinfo {
    /// The CPU.
    pub pm_cpu: i32,
    /// `pm_pmcs[]` follows (here: explicit alignment to it).
    pub pm_pmcs: [pmc_info; 0],
}

/// Offset of `pm_pmcs` in `struct pmc_op_getpmcinfo`.
pub const GETPMCINFO_PMCS_OFFSET: usize = std::mem::offset_of!(pmc_op_getpmcinfo, pm_pmcs);

/// `struct pmc_classinfo`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct pmc_classinfo {
    /// `enum pmc_class`.
    pub pm_class: u32,
    /// Capabilities.
    pub pm_caps: u32,
    /// Counter width in bits.
    pub pm_width: u32,
    /// Number of PMCs in the class.
    pub pm_num: u32,
}

/// `struct pmc_op_getcpuinfo` (OP GETCPUINFO).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct pmc_op_getcpuinfo {
    /// `enum pmc_cputype`.
    pub pm_cputype: u32,
    /// Max CPU number + 1.
    pub pm_ncpu: u32,
    /// PMCs (rows) per CPU.
    pub pm_npmc: u32,
    /// Classes in `pm_classes`.
    pub pm_nclass: u32,
    /// The classes.
    pub pm_classes: [pmc_classinfo; PMC_CLASS_MAX],
}

/// `struct pmc_op_configurelog` (OP CONFIGURELOG).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct pmc_op_configurelog {
    /// Must be 0.
    pub pm_flags: i32,
    /// Log file descriptor, or -1 to deconfigure.
    pub pm_logfd: i32,
}

/// `struct pmc_op_getdriverstats` (OP GETDRIVERSTATS).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct pmc_op_getdriverstats {
    /// Interrupts ignored.
    pub pm_intr_ignored: u32,
    /// Interrupts processed.
    pub pm_intr_processed: u32,
    /// Interrupts with ENOSPC.
    pub pm_intr_bufferfull: u32,
    /// System calls.
    pub pm_syscalls: u32,
    /// System calls with errors.
    pub pm_syscall_errors: u32,
    /// Buffer requests.
    pub pm_buffer_requests: u32,
    /// Failed buffer requests.
    pub pm_buffer_requests_failed: u32,
    /// Sample buffer processing passes.
    pub pm_log_sweeps: u32,
}

/// `struct pmc_op_simple` (OP PMCRELEASE / PMCSTART / PMCSTOP).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct pmc_op_simple {
    /// The PMC.
    pub pm_pmcid: pmc_id_t,
}

/// `struct pmc_op_writelog` (OP WRITELOG).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct pmc_op_writelog {
    /// 4 bytes of user data.
    pub pm_userdata: u32,
}

/// `struct pmc_op_getmsr` (OP PMCGETMSR).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct pmc_op_getmsr {
    /// \[return\] the machine-specific counter address.
    pub pm_msr: u32,
    /// The PMC.
    pub pm_pmcid: pmc_id_t,
}

/// `struct pmc_dyn_event_descr`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct pmc_dyn_event_descr {
    /// Event name, NUL-terminated.
    pub pm_ev_name: [u8; PMC_NAME_MAX],
    /// `enum pmc_event`.
    pub pm_ev_code: u32,
}

impl pmc_dyn_event_descr {
    /// All zeroes.
    pub const ZERO: pmc_dyn_event_descr = pmc_dyn_event_descr {
        pm_ev_name: [0; PMC_NAME_MAX],
        pm_ev_code: 0,
    };

    /// The name up to its NUL (lossy UTF-8).
    pub fn name(&self) -> String {
        c_name(&self.pm_ev_name)
    }
}

/// `struct pmc_op_getdyneventinfo` (OP GETDYNEVENTINFO): 278 536 bytes,
/// so it is always handled boxed.
#[repr(C)]
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct pmc_op_getdyneventinfo {
    /// `enum pmc_class` (only SOFT is dynamic).
    pub pm_class: u32,
    /// \[return\] events filled in.
    pub pm_nevent: u32,
    /// The events.
    pub pm_events: [pmc_dyn_event_descr; PMC_EV_DYN_COUNT],
}

impl pmc_op_getdyneventinfo {
    /// A zeroed request for `class`, on the heap.
    pub fn new_boxed(class: u32) -> Box<pmc_op_getdyneventinfo> {
        let mut b = Box::new(pmc_op_getdyneventinfo {
            pm_class: 0,
            pm_nevent: 0,
            pm_events: [pmc_dyn_event_descr::ZERO; PMC_EV_DYN_COUNT],
        });
        b.pm_class = class;
        b
    }
}

/// `MAXMODNAME` of sys/sys/module.h.
pub const MAXMODNAME: usize = 32;

/// `struct module_stat` of sys/sys/module.h (`modstat(2)`); `data` is
/// `modspecific_t`, a union of `int`/`u_int`/`long`/`u_long` whose `intval`
/// is the syscall number of a syscall module.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct module_stat {
    /// Set to `sizeof(struct module_stat)`.
    pub version: i32,
    /// Module name.
    pub name: [u8; MAXMODNAME],
    /// References.
    pub refs: i32,
    /// Module id.
    pub id: i32,
    /// `modspecific_t` storage (`u_long`-sized).
    pub data: u64,
}

impl module_stat {
    /// A request with `version` set as `modstat(2)` wants.
    pub fn new() -> module_stat {
        module_stat {
            version: std::mem::size_of::<module_stat>() as i32,
            name: [0; MAXMODNAME],
            refs: 0,
            id: 0,
            data: 0,
        }
    }
    /// `data.intval`: the low 4 bytes in native order.
    pub fn intval(&self) -> i32 {
        let b = self.data.to_ne_bytes();
        if cfg!(target_endian = "little") {
            i32::from_ne_bytes([b[0], b[1], b[2], b[3]])
        } else {
            i32::from_ne_bytes([b[4], b[5], b[6], b[7]])
        }
    }
}

impl Default for module_stat {
    fn default() -> Self {
        module_stat::new()
    }
}

/// Copies `name` into a NUL-terminated C name array (truncating).
pub fn set_c_name(dst: &mut [u8; PMC_NAME_MAX], name: &str) {
    *dst = [0; PMC_NAME_MAX];
    let n = name.len().min(PMC_NAME_MAX - 1);
    dst[..n].copy_from_slice(&name.as_bytes()[..n]);
}

/// Reads a NUL-terminated C name array.
pub fn c_name(src: &[u8]) -> String {
    let end = src.iter().position(|&b| b == 0).unwrap_or(src.len());
    String::from_utf8_lossy(&src[..end]).into_owned()
}
