//! The C structs of `pmc.h` and `pmclog.h`, `#[repr(C)]`, and the enum
//! values they carry (FreeBSD 14's `sys/sys/pmc.h`, `sys/sys/pmclog.h`,
//! `lib/libpmc/pmc.h`, `lib/libpmc/pmclog.h`).

#![allow(non_camel_case_types, missing_docs, missing_debug_implementations)]

use std::ffi::{c_char, c_int, c_uint, c_void};

/// `PMC_NAME_MAX`
pub const PMC_NAME_MAX: usize = 64;
/// `PMC_CLASS_MAX`
pub const PMC_CLASS_MAX: usize = 8;
/// `PMC_CALLCHAIN_DEPTH_MAX`
pub const PMC_CALLCHAIN_DEPTH_MAX: usize = 512;
/// FreeBSD's `PATH_MAX`, the size of the path arrays in `struct pmclog_ev_*`.
pub const FREEBSD_PATH_MAX: usize = 1024;
/// `MAXCOMLEN + 1`
pub const COMM_LEN: usize = 20;

/// `enum pmc_class` values used here.
pub mod class {
    pub const TSC: u32 = 0x00;
    pub const K8: u32 = 0x02;
    pub const IAF: u32 = 0x06;
    pub const IAP: u32 = 0x07;
    pub const UCP: u32 = 0x09;
    pub const SOFT: u32 = 0x0F;
    pub const ARMV8: u32 = 0x11;
}

/// `enum pmc_disp`
pub mod disp {
    pub const STANDALONE: u32 = 0;
    pub const FREE: u32 = 1;
    pub const THREAD: u32 = 2;
}

/// `enum pmclog_state`
pub mod state {
    pub const OK: u32 = 0;
    pub const EOF: u32 = 1;
    pub const REQUIRE_DATA: u32 = 2;
    pub const ERROR: u32 = 3;
}

/// `struct pmc_classinfo`
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct pmc_classinfo {
    pub pm_class: u32,
    pub pm_caps: u32,
    pub pm_width: u32,
    pub pm_num: u32,
}

/// `struct pmc_cpuinfo`
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct pmc_cpuinfo {
    pub pm_cputype: u32,
    pub pm_ncpu: u32,
    pub pm_npmc: u32,
    pub pm_nclass: u32,
    pub pm_classes: [pmc_classinfo; PMC_CLASS_MAX],
}

/// `struct pmc_info`
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct pmc_info {
    pub pm_name: [c_char; PMC_NAME_MAX],
    pub pm_class: u32,
    pub pm_enabled: c_int,
    pub pm_rowdisp: u32,
    pub pm_ownerpid: libc::pid_t,
    pub pm_mode: u32,
    pub pm_event: u32,
    pub pm_flags: u32,
    /// The padding C leaves before `pm_reloadcount`, as a field so that
    /// every byte handed to C is written (valgrind, MSan).
    pub _pad0: u32,
    pub pm_reloadcount: u64,
}

/// `struct pmc_pmcinfo` without its flexible array `pm_pmcs[]`, which
/// starts at `size_of::<pmc_pmcinfo>()`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct pmc_pmcinfo {
    pub pm_cpu: i32,
    /// The padding before the 8-aligned `pm_pmcs[]`.
    pub _pad0: u32,
    pub pm_pmcs: [pmc_info; 0],
}

/// `struct pmc_driverstats`
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct pmc_driverstats {
    pub pm_intr_ignored: c_uint,
    pub pm_intr_processed: c_uint,
    pub pm_intr_bufferfull: c_uint,
    pub pm_syscalls: c_uint,
    pub pm_syscall_errors: c_uint,
    pub pm_buffer_requests: c_uint,
    pub pm_buffer_requests_failed: c_uint,
    pub pm_log_sweeps: c_uint,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct pmclog_ev_callchain {
    pub pl_pid: u32,
    pub pl_tid: u32,
    pub pl_pmcid: u32,
    pub pl_cpuflags: u32,
    pub pl_cpuflags2: u32,
    pub pl_npc: u32,
    pub pl_pc: [u64; PMC_CALLCHAIN_DEPTH_MAX],
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct pmclog_ev_initialize {
    pub pl_version: u32,
    pub pl_arch: u32,
    pub pl_tsc_freq: u64,
    pub pl_ts: libc::timespec,
    pub pl_cpuid: [c_char; FREEBSD_PATH_MAX],
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct pmclog_ev_map_in {
    pub pl_pid: libc::pid_t,
    pub _pad0: u32,
    pub pl_start: u64,
    pub pl_pathname: [c_char; FREEBSD_PATH_MAX],
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct pmclog_ev_map_out {
    pub pl_pid: libc::pid_t,
    pub _pad0: u32,
    pub pl_start: u64,
    pub pl_end: u64,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct pmclog_ev_pmcallocate {
    pub pl_evname: *const c_char,
    pub pl_rate: u64,
    pub pl_event: u32,
    pub pl_flags: u32,
    pub pl_pmcid: u32,
    pub _pad0: u32,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct pmclog_ev_pmcallocatedyn {
    pub pl_evname: [c_char; PMC_NAME_MAX],
    pub pl_event: u32,
    pub pl_flags: u32,
    pub pl_pmcid: u32,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct pmclog_ev_pmcattach {
    pub pl_pmcid: u32,
    pub pl_pid: libc::pid_t,
    pub pl_pathname: [c_char; FREEBSD_PATH_MAX],
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct pmclog_ev_pmcdetach {
    pub pl_pmcid: u32,
    pub pl_pid: libc::pid_t,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct pmclog_ev_proccsw {
    pub pl_pid: libc::pid_t,
    pub pl_tid: libc::pid_t,
    pub pl_pmcid: u32,
    pub _pad0: u32,
    pub pl_value: u64,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct pmclog_ev_proccreate {
    pub pl_pid: libc::pid_t,
    pub pl_flags: u32,
    pub pl_pcomm: [c_char; COMM_LEN],
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct pmclog_ev_procexec {
    pub pl_pid: libc::pid_t,
    pub pl_pmcid: u32,
    /// FreeBSD 14's `pl_baseaddr`; a 12–13 log's one address
    /// (`pl_entryaddr` under `PMCLOG_PROCEXEC_ENTRYADDR`, same bytes).
    pub pl_baseaddr: usize,
    pub pl_dynaddr: usize,
    pub pl_pathname: [c_char; FREEBSD_PATH_MAX],
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct pmclog_ev_procexit {
    pub pl_pid: u32,
    pub pl_pmcid: u32,
    pub pl_value: u64,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct pmclog_ev_procfork {
    pub pl_oldpid: libc::pid_t,
    pub pl_newpid: libc::pid_t,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct pmclog_ev_sysexit {
    pub pl_pid: libc::pid_t,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct pmclog_ev_threadcreate {
    pub pl_tid: libc::pid_t,
    pub pl_pid: libc::pid_t,
    pub pl_flags: u32,
    pub pl_tdname: [c_char; COMM_LEN],
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct pmclog_ev_threadexit {
    pub pl_tid: libc::pid_t,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct pmclog_ev_userdata {
    pub pl_userdata: u32,
}

/// The `pl_u` union of `struct pmclog_ev` (closelog and dropnotify are
/// empty and have no member here).
#[repr(C)]
#[derive(Clone, Copy)]
pub union pmclog_ev_u {
    pub pl_cc: pmclog_ev_callchain,
    pub pl_i: pmclog_ev_initialize,
    pub pl_mi: pmclog_ev_map_in,
    pub pl_mo: pmclog_ev_map_out,
    pub pl_a: pmclog_ev_pmcallocate,
    pub pl_ad: pmclog_ev_pmcallocatedyn,
    pub pl_t: pmclog_ev_pmcattach,
    pub pl_d: pmclog_ev_pmcdetach,
    pub pl_c: pmclog_ev_proccsw,
    pub pl_pc: pmclog_ev_proccreate,
    pub pl_x: pmclog_ev_procexec,
    pub pl_e: pmclog_ev_procexit,
    pub pl_f: pmclog_ev_procfork,
    pub pl_se: pmclog_ev_sysexit,
    pub pl_tc: pmclog_ev_threadcreate,
    pub pl_te: pmclog_ev_threadexit,
    pub pl_u: pmclog_ev_userdata,
}

/// An all-zero union (its largest member zeroed, so every byte is set).
pub const ZERO_EV_U: pmclog_ev_u = pmclog_ev_u {
    pl_cc: pmclog_ev_callchain {
        pl_pid: 0,
        pl_tid: 0,
        pl_pmcid: 0,
        pl_cpuflags: 0,
        pl_cpuflags2: 0,
        pl_npc: 0,
        pl_pc: [0; PMC_CALLCHAIN_DEPTH_MAX],
    },
};

/// `struct pmclog_ev`. The `_pad` fields are where C pads, written as
/// fields (and the union from [`ZERO_EV_U`]) so that every byte copied to
/// the caller is initialised: the structs here have no implicit padding
/// ([`no_implicit_padding`] checks it).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct pmclog_ev {
    pub pl_state: u32,
    pub _pad0: u32,
    pub pl_offset: libc::off_t,
    pub pl_count: usize,
    pub pl_ts: libc::timespec,
    pub pl_type: u32,
    pub _pad1: u32,
    pub pl_data: *mut c_void,
    pub pl_len: c_int,
    pub _pad2: u32,
    pub pl_u: pmclog_ev_u,
}

impl pmclog_ev {
    /// An event with only its state set.
    pub fn with_state(state: u32) -> pmclog_ev {
        pmclog_ev {
            pl_state: state,
            _pad0: 0,
            pl_offset: 0,
            pl_count: 0,
            pl_ts: libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            },
            pl_type: 0,
            _pad1: 0,
            pl_data: std::ptr::null_mut(),
            pl_len: 0,
            _pad2: 0,
            pl_u: ZERO_EV_U,
        }
    }
}

/// Copies `s` into a fixed C array, truncated and NUL-terminated.
pub fn fill_chars<const N: usize>(s: &str) -> [c_char; N] {
    let mut out = [0 as c_char; N];
    for (d, b) in out.iter_mut().zip(s.bytes().take(N.saturating_sub(1))) {
        *d = b as c_char;
    }
    out
}

/// `struct pmc_md_amd_op_pmcallocate` (dev/hwpmc/hwpmc_amd.h)
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct pmc_md_amd_op_pmcallocate {
    pub pm_amd_config: u64,
    pub pm_amd_sub_class: u32,
    pub _pad0: u32,
}

/// `struct pmc_md_iap_op_pmcallocate` (dev/hwpmc/hwpmc_core.h)
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct pmc_md_iap_op_pmcallocate {
    pub pm_iap_config: u32,
    pub _pad0: u32,
    pub pm_iap_rsp: u64,
}

/// `union pmc_md_op_pmcallocate` (amd64 and arm64 machine/pmc_mdep.h):
/// the AMD, IAP and arm64 members this library fills, and `__pad[4]`,
/// which sizes it.
#[repr(C)]
#[derive(Clone, Copy)]
pub union pmc_md_op_pmcallocate {
    pub pm_amd: pmc_md_amd_op_pmcallocate,
    pub pm_iap: pmc_md_iap_op_pmcallocate,
    /// The core PMU's event on arm64 (its machine/pmc_mdep.h), at offset 0.
    pub pm_md_config: u32,
    pub __pad: [u64; 4],
}

/// `struct pmc_op_pmcallocate` (sys/sys/pmc.h)
#[repr(C)]
#[derive(Clone, Copy)]
pub struct pmc_op_pmcallocate {
    pub pm_caps: u32,
    pub pm_cpu: u32,
    pub pm_class: u32,
    pub pm_ev: u32,
    pub pm_flags: u32,
    pub pm_mode: u32,
    pub pm_pmcid: u32,
    pub pm_count: u64,
    pub pm_md: pmc_md_op_pmcallocate,
}

/// Fails to compile where a struct handed to C has implicit padding (a
/// target whose sizes differ from amd64's and arm64's): each is the sum
/// of its fields.
#[allow(dead_code)]
const fn no_implicit_padding() {
    use std::mem::size_of as sz;
    const P: usize = size_of::<*const c_char>();
    assert!(sz::<pmc_info>() == PMC_NAME_MAX + 8 * 4 + 8);
    assert!(sz::<pmc_pmcinfo>() == 8);
    assert!(sz::<pmclog_ev_map_in>() == 8 + 8 + FREEBSD_PATH_MAX);
    assert!(sz::<pmclog_ev_map_out>() == 8 + 8 + 8);
    assert!(sz::<pmclog_ev_pmcallocate>() == P + 8 + 4 * 4);
    assert!(sz::<pmclog_ev_proccsw>() == 4 * 4 + 8);
    assert!(sz::<pmclog_ev_callchain>() == 6 * 4 + 8 * PMC_CALLCHAIN_DEPTH_MAX);
    assert!(sz::<pmclog_ev_u>() == sz::<pmclog_ev_callchain>());
    assert!(
        sz::<pmclog_ev>()
            == 8 + sz::<libc::off_t>()
                + sz::<usize>()
                + sz::<libc::timespec>()
                + 8
                + P
                + 8
                + sz::<pmclog_ev_u>()
    );
    assert!(sz::<pmc_md_amd_op_pmcallocate>() == 16);
    assert!(sz::<pmc_md_iap_op_pmcallocate>() == 16);
}
const _: () = no_implicit_padding();
