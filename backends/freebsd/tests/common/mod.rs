//! What the kernel double's tests (tests/double_*.rs) share: the double
//! with its caller and child processes, and hwpmc requests made straight
//! through the `Transport`, as libpmc's PMC_CALL would. A request helper
//! returns the kernel's answer (its errno on failure) for the test to
//! check or unwrap.

// Each test file is its own crate and uses only some of these.
#![allow(dead_code)]

use pmc_freebsd::abi::*;
use pmc_freebsd::double::{KernelDouble, LogPipe, Machine, Process};
use pmc_freebsd::transport::{Request, Transport};

/// The caller: the owner of every PMC a test allocates.
pub const ME: i32 = 100;
/// The caller's child.
pub const CHILD: i32 = 200;

/// The rows of `Machine::intel_2cpu`: TSC×1, IAP×4, IAF×3, SOFT×16.
pub const NROWS: usize = 24;

/// A live process under `parent` that the caller may debug.
pub fn process(parent: i32) -> Process {
    Process {
        parent,
        exiting: false,
        debuggable: true,
    }
}

/// `Machine::intel_2cpu` with the caller `ME` and, for each
/// `(pid, parent)`, a live process the caller may debug.
pub fn kernel_with(processes: &[(i32, i32)]) -> KernelDouble {
    let k = KernelDouble::new(Machine::intel_2cpu(), ME);
    for &(pid, parent) in processes {
        k.add_process(pid, process(parent));
    }
    k
}

/// The double with the caller `ME` and its child `CHILD`.
pub fn kernel() -> KernelDouble {
    kernel_with(&[(CHILD, ME)])
}

/// A PMCALLOCATE request for event `ev` of `class` in `mode` on `cpu`,
/// asking to read and write, with `flags` and no count.
pub fn alloc_req(class: Class, ev: u32, mode: Mode, cpu: u32, flags: u32) -> pmc_op_pmcallocate {
    pmc_op_pmcallocate {
        pm_caps: PMC_CAP_READ | PMC_CAP_WRITE,
        pm_cpu: cpu,
        pm_class: class as u32,
        pm_ev: ev,
        pm_flags: flags,
        pm_mode: mode as u32,
        ..Default::default()
    }
}

/// PMCALLOCATE: the new PMC's id.
pub fn allocate(k: &KernelDouble, mut pa: pmc_op_pmcallocate) -> Result<u32, Errno> {
    k.call(Request::PmcAllocate(&mut pa)).map(|()| pa.pm_pmcid)
}

/// A SOFT PMC of the first registered soft event, readable and writable,
/// with a count of 1000.
pub fn soft(k: &KernelDouble, mode: Mode, cpu: u32, flags: u32) -> u32 {
    allocate(
        k,
        pmc_op_pmcallocate {
            pm_count: 1000,
            ..alloc_req(Class::SOFT, PMC_EV_SOFT_FIRST, mode, cpu, flags)
        },
    )
    .unwrap()
}

pub fn attach(k: &KernelDouble, id: u32, pid: i32) -> Result<(), Errno> {
    k.call(Request::PmcAttach(&mut pmc_op_pmcattach {
        pm_pmc: id,
        pm_pid: pid,
    }))
}

pub fn detach(k: &KernelDouble, id: u32, pid: i32) -> Result<(), Errno> {
    k.call(Request::PmcDetach(&mut pmc_op_pmcattach {
        pm_pmc: id,
        pm_pid: pid,
    }))
}

pub fn start(k: &KernelDouble, id: u32) -> Result<(), Errno> {
    k.call(Request::PmcStart(&mut pmc_op_simple { pm_pmcid: id }))
}

pub fn stop(k: &KernelDouble, id: u32) -> Result<(), Errno> {
    k.call(Request::PmcStop(&mut pmc_op_simple { pm_pmcid: id }))
}

pub fn release(k: &KernelDouble, id: u32) -> Result<(), Errno> {
    k.call(Request::PmcRelease(&mut pmc_op_simple { pm_pmcid: id }))
}

/// PMCRW with `flags` and `value`: the value copied out.
pub fn rw(k: &KernelDouble, id: u32, flags: u32, value: u64) -> Result<u64, Errno> {
    let mut r = pmc_op_pmcrw {
        pm_flags: flags,
        pm_pmcid: id,
        pm_value: value,
    };
    k.call(Request::PmcRw(&mut r)).map(|()| r.pm_value)
}

/// PMCRW's read (`PMC_F_OLDVALUE`), which must succeed.
pub fn read(k: &KernelDouble, id: u32) -> u64 {
    rw(k, id, PMC_F_OLDVALUE, 0).unwrap()
}

/// PMCRW's write (`PMC_F_NEWVALUE`).
pub fn write(k: &KernelDouble, id: u32, value: u64) -> Result<(), Errno> {
    rw(k, id, PMC_F_NEWVALUE, value).map(drop)
}

pub fn configurelog(k: &KernelDouble, flags: i32, fd: i32) -> Result<(), Errno> {
    k.call(Request::ConfigureLog(&mut pmc_op_configurelog {
        pm_flags: flags,
        pm_logfd: fd,
    }))
}

/// CONFIGURELOG of `fd` (a negative one deconfigures the log).
pub fn configure(k: &KernelDouble, fd: i32) -> Result<(), Errno> {
    configurelog(k, 0, fd)
}

/// A pipe configured as the caller's log.
pub fn logged(k: &KernelDouble) -> LogPipe {
    let (fd, pipe) = k.pipe();
    configure(k, fd).unwrap();
    pipe
}

/// PMCADMIN: row `ri` of `cpu` to `state`.
pub fn admin(k: &KernelDouble, cpu: i32, ri: u32, state: State) -> Result<(), Errno> {
    k.call(Request::PmcAdmin(&mut pmc_op_pmcadmin {
        pm_cpu: cpu,
        pm_flags: 0,
        pm_pmc: ri as i32,
        pm_state: state as u32,
    }))
}

/// PMCGETMSR: the PMC's MSR.
pub fn getmsr(k: &KernelDouble, id: u32) -> Result<u32, Errno> {
    let mut gm = pmc_op_getmsr {
        pm_msr: 0,
        pm_pmcid: id,
    };
    k.call(Request::PmcGetMsr(&mut gm)).map(|()| gm.pm_msr)
}

/// GETPMCINFO of `cpu`: each row's PMC and disposition.
pub fn pmcinfo(k: &KernelDouble, cpu: i32) -> Vec<pmc_info> {
    let mut rows = vec![pmc_info::default(); NROWS];
    k.call(Request::GetPmcInfo {
        cpu,
        pmcs: &mut rows,
    })
    .unwrap();
    rows
}

pub fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_ne_bytes(b[at..at + 4].try_into().unwrap())
}

pub fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_ne_bytes(b[at..at + 8].try_into().unwrap())
}
