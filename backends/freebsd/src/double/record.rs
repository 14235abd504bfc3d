//! The requests the double received, with their arguments and replies, so
//! a test can assert what a backend asked of the kernel (which PMC, which
//! pid, which flags), not only what came back.

use crate::abi::{Errno, Op};
use crate::transport::Request;

/// One request as the kernel saw it. Fields an operation does not carry
/// are 0.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Call {
    /// The operation.
    pub op: Op,
    /// The PMC it names (`pm_pmcid`, PMCATTACH/PMCDETACH `pm_pmc`); for
    /// PMCALLOCATE the id given back (0 when refused).
    pub pmcid: u32,
    /// PMCATTACH/PMCDETACH `pm_pid`.
    pub pid: i32,
    /// PMCALLOCATE `pm_mode`.
    pub mode: u32,
    /// PMCALLOCATE `pm_cpu`; GETPMCINFO and PMCADMIN the CPU.
    pub cpu: u32,
    /// PMCALLOCATE `pm_class`.
    pub class: u32,
    /// PMCALLOCATE `pm_ev`.
    pub event: u32,
    /// PMCALLOCATE and PMCRW `pm_flags`.
    pub flags: u32,
    /// PMCALLOCATE and PMCSETCOUNT `pm_count`; PMCRW the `pm_value` sent.
    pub value: u64,
    /// PMCRW's old value (with `PMC_F_OLDVALUE`); PMCGETMSR `pm_msr`.
    pub reply: u64,
    /// The kernel's answer.
    pub result: Result<(), Errno>,
}

impl Call {
    /// The arguments of `request` as it arrives.
    pub(super) fn received(request: &Request<'_>) -> Call {
        let mut c = Call {
            op: request.op(),
            pmcid: 0,
            pid: 0,
            mode: 0,
            cpu: 0,
            class: 0,
            event: 0,
            flags: 0,
            value: 0,
            reply: 0,
            result: Ok(()),
        };
        match request {
            Request::PmcAllocate(pa) => {
                c.mode = pa.pm_mode;
                c.cpu = pa.pm_cpu;
                c.class = pa.pm_class;
                c.event = pa.pm_ev;
                c.flags = pa.pm_flags;
                c.value = pa.pm_count;
            }
            Request::PmcAttach(a) | Request::PmcDetach(a) => {
                c.pmcid = a.pm_pmc;
                c.pid = a.pm_pid;
            }
            Request::PmcRw(rw) => {
                c.pmcid = rw.pm_pmcid;
                c.flags = rw.pm_flags;
                c.value = rw.pm_value;
            }
            Request::PmcSetCount(sc) => {
                c.pmcid = sc.pm_pmcid;
                c.value = sc.pm_count;
            }
            Request::PmcGetMsr(gm) => c.pmcid = gm.pm_pmcid,
            Request::PmcRelease(sp) | Request::PmcStart(sp) | Request::PmcStop(sp) => {
                c.pmcid = sp.pm_pmcid;
            }
            Request::GetPmcInfo { cpu, .. } => c.cpu = *cpu as u32,
            Request::PmcAdmin(pma) => c.cpu = pma.pm_cpu as u32,
            _ => {}
        }
        c
    }

    /// What the kernel wrote back, and its answer.
    pub(super) fn replied(&mut self, request: &Request<'_>, result: Result<(), Errno>) {
        self.result = result;
        if result.is_err() {
            return;
        }
        match request {
            Request::PmcAllocate(pa) => self.pmcid = pa.pm_pmcid,
            Request::PmcRw(rw) if rw.pm_flags & crate::abi::PMC_F_OLDVALUE != 0 => {
                self.reply = rw.pm_value;
            }
            Request::PmcGetMsr(gm) => self.reply = u64::from(gm.pm_msr),
            _ => {}
        }
    }
}
