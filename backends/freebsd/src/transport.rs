//! The seam between the platform-neutral backend and the kernel: one
//! typed request per `PMC_OP_*`, answered by the FreeBSD system call
//! (`sys`, FreeBSD only) or by the kernel double (`double`, feature `test-doubles`).
//!
//! Typed requests instead of a raw pointer keep every operation checked at
//! compile time and leave the only pointer cast to the FreeBSD transport.

use crate::abi::{self, Errno, Op};

/// The argument of one hwpmc operation, borrowed mutably because the
/// kernel writes replies into the same structure (`copyout`).
#[derive(Debug)]
pub enum Request<'a> {
    /// `PMC_OP_CONFIGURELOG`.
    ConfigureLog(&'a mut abi::pmc_op_configurelog),
    /// `PMC_OP_FLUSHLOG` (no argument).
    FlushLog,
    /// `PMC_OP_GETCPUINFO`.
    GetCpuInfo(&'a mut abi::pmc_op_getcpuinfo),
    /// `PMC_OP_GETDRIVERSTATS`.
    GetDriverStats(&'a mut abi::pmc_op_getdriverstats),
    /// `PMC_OP_GETMODULEVERSION`: the client's version in, the module's out.
    GetModuleVersion(&'a mut u32),
    /// `PMC_OP_GETPMCINFO`: `pm_cpu` and room for `npmc` rows.
    GetPmcInfo {
        /// The CPU.
        cpu: i32,
        /// One slot per row (`pm_npmc` of GETCPUINFO).
        pmcs: &'a mut [abi::pmc_info],
    },
    /// `PMC_OP_PMCADMIN`.
    PmcAdmin(&'a mut abi::pmc_op_pmcadmin),
    /// `PMC_OP_PMCALLOCATE`.
    PmcAllocate(&'a mut abi::pmc_op_pmcallocate),
    /// `PMC_OP_PMCATTACH`.
    PmcAttach(&'a mut abi::pmc_op_pmcattach),
    /// `PMC_OP_PMCDETACH`.
    PmcDetach(&'a mut abi::pmc_op_pmcattach),
    /// `PMC_OP_PMCGETMSR`.
    PmcGetMsr(&'a mut abi::pmc_op_getmsr),
    /// `PMC_OP_PMCRELEASE`.
    PmcRelease(&'a mut abi::pmc_op_simple),
    /// `PMC_OP_PMCRW`.
    PmcRw(&'a mut abi::pmc_op_pmcrw),
    /// `PMC_OP_PMCSETCOUNT`.
    PmcSetCount(&'a mut abi::pmc_op_pmcsetcount),
    /// `PMC_OP_PMCSTART`.
    PmcStart(&'a mut abi::pmc_op_simple),
    /// `PMC_OP_PMCSTOP`.
    PmcStop(&'a mut abi::pmc_op_simple),
    /// `PMC_OP_WRITELOG`.
    WriteLog(&'a mut abi::pmc_op_writelog),
    /// `PMC_OP_CLOSELOG` (no argument).
    CloseLog,
    /// `PMC_OP_GETDYNEVENTINFO`.
    GetDynEventInfo(&'a mut abi::pmc_op_getdyneventinfo),
}

impl Request<'_> {
    /// The same request, borrowed again (so a caller can look at the
    /// replies after handing it on).
    pub fn reborrow(&mut self) -> Request<'_> {
        match self {
            Request::ConfigureLog(r) => Request::ConfigureLog(r),
            Request::FlushLog => Request::FlushLog,
            Request::GetCpuInfo(r) => Request::GetCpuInfo(r),
            Request::GetDriverStats(r) => Request::GetDriverStats(r),
            Request::GetModuleVersion(r) => Request::GetModuleVersion(r),
            Request::GetPmcInfo { cpu, pmcs } => Request::GetPmcInfo { cpu: *cpu, pmcs },
            Request::PmcAdmin(r) => Request::PmcAdmin(r),
            Request::PmcAllocate(r) => Request::PmcAllocate(r),
            Request::PmcAttach(r) => Request::PmcAttach(r),
            Request::PmcDetach(r) => Request::PmcDetach(r),
            Request::PmcGetMsr(r) => Request::PmcGetMsr(r),
            Request::PmcRelease(r) => Request::PmcRelease(r),
            Request::PmcRw(r) => Request::PmcRw(r),
            Request::PmcSetCount(r) => Request::PmcSetCount(r),
            Request::PmcStart(r) => Request::PmcStart(r),
            Request::PmcStop(r) => Request::PmcStop(r),
            Request::WriteLog(r) => Request::WriteLog(r),
            Request::CloseLog => Request::CloseLog,
            Request::GetDynEventInfo(r) => Request::GetDynEventInfo(r),
        }
    }

    /// The `PMC_OP_*` this request is.
    pub fn op(&self) -> Op {
        match self {
            Request::ConfigureLog(_) => Op::CONFIGURELOG,
            Request::FlushLog => Op::FLUSHLOG,
            Request::GetCpuInfo(_) => Op::GETCPUINFO,
            Request::GetDriverStats(_) => Op::GETDRIVERSTATS,
            Request::GetModuleVersion(_) => Op::GETMODULEVERSION,
            Request::GetPmcInfo { .. } => Op::GETPMCINFO,
            Request::PmcAdmin(_) => Op::PMCADMIN,
            Request::PmcAllocate(_) => Op::PMCALLOCATE,
            Request::PmcAttach(_) => Op::PMCATTACH,
            Request::PmcDetach(_) => Op::PMCDETACH,
            Request::PmcGetMsr(_) => Op::PMCGETMSR,
            Request::PmcRelease(_) => Op::PMCRELEASE,
            Request::PmcRw(_) => Op::PMCRW,
            Request::PmcSetCount(_) => Op::PMCSETCOUNT,
            Request::PmcStart(_) => Op::PMCSTART,
            Request::PmcStop(_) => Op::PMCSTOP,
            Request::WriteLog(_) => Op::WRITELOG,
            Request::CloseLog => Op::CLOSELOG,
            Request::GetDynEventInfo(_) => Op::GETDYNEVENTINFO,
        }
    }
}

/// Carries hwpmc operations to a kernel: the real one through `syscall(2)`
/// on FreeBSD, or the kernel double (`double::KernelDouble`, feature `test-doubles`) anywhere.
pub trait Transport {
    /// Performs one operation; `Err` is the kernel's errno (FreeBSD
    /// numbering, see [`Errno`]).
    fn call(&self, request: Request<'_>) -> Result<(), Errno>;
}

impl<T: Transport + ?Sized> Transport for &T {
    fn call(&self, request: Request<'_>) -> Result<(), Errno> {
        (**self).call(request)
    }
}

impl<T: Transport + ?Sized> Transport for std::sync::Arc<T> {
    fn call(&self, request: Request<'_>) -> Result<(), Errno> {
        (**self).call(request)
    }
}
