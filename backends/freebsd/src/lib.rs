//! `pmc-freebsd`: FreeBSD's hwpmc(4) driven directly through its system
//! call, as libpmc does.
//!
//! **The transport (`sys`, `SyscallTransport`) is compiled and run only on FreeBSD; its
//! structures and logic are tested on every platform.** Everything except
//! the final `syscall(2)` is platform-neutral:
//!
//! - [`abi`]: `#[repr(C)]` mirrors of every `PMC_OP_*` request/reply of
//!   `sys/sys/pmc.h` (FreeBSD 14/15, `PMC_VERSION` 0x0A000000), with the
//!   amd64 and arm64 `pmc_md_op_pmcallocate` unions; their sizes and
//!   offsets are tested against the header's values;
//! - [`event`]: event specifier → `pmc_op_pmcallocate` as libpmc's
//!   `pmc_allocate` builds it (TSC, K8, SOFT tables, pmu-events path with
//!   `PMC_F_EV_PMU` for Intel IAF/IAP/UCP, AMD K8 and arm64 ARMV8);
//! - [`transport`]: the [`Transport`] trait, one typed request per op;
//! - [`procs`]: the `kern.proc` sysctl's process table (pid, ppid);
//! - `double` (with the `test-doubles` cargo feature): a kernel double
//!   implementing hwpmc_mod.c's rules and errnos, so [`Hwpmc`] runs end to
//!   end on Linux;
//! - [`Hwpmc`]: the safe API (`open`, `allocate`, `attach`, `start`, …).
//!
//! ```
//! use pmc_freebsd::{Hwpmc, Mode, double::{KernelDouble, Machine}};
//! let kernel = KernelDouble::new(Machine::intel_2cpu(), 100);
//! let hwpmc = Hwpmc::open(&kernel).unwrap();
//! let pmc = hwpmc.allocate("SOFT-PAGE_FAULT.ALL", Mode::TC, 0, None, 0).unwrap();
//! hwpmc.start(pmc).unwrap();
//! kernel.advance(100, 0, 7);
//! assert_eq!(hwpmc.read(pmc).unwrap(), 7);
//! hwpmc.release(pmc).unwrap();
//! ```
#![deny(unsafe_code)]
#![warn(missing_docs)]

pub mod abi;
// The kernel double is test support: not in a production build.
#[cfg(any(test, feature = "test-doubles"))]
pub mod double;
pub mod event;
pub mod procs;
pub mod transport;

cfg_if::cfg_if! {
    // The system call exists only on FreeBSD; CI type-checks this arm
    // with `cargo clippy --target x86_64-unknown-freebsd`.
    if #[cfg(target_os = "freebsd")] {
        pub mod sys;
        pub use sys::SyscallTransport;
    }
}

pub use abi::{Class, CpuType, Errno, Mode, Op, State};
pub use event::{Arch, EventResolver, PmuEvent, PmuEvents, PmuVendor, SpecError};
pub use transport::{Request, Transport};

/// The crate's one error type: what failed, the errno, what to do.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The kernel refused an operation.
    #[error("hwpmc {op:?} failed with {errno}: {hint}")]
    Kernel {
        /// The operation.
        op: Op,
        /// The kernel's errno (FreeBSD numbering).
        errno: Errno,
        /// What the errno means for this operation and what to do.
        hint: &'static str,
    },
    /// The event specifier names nothing this CPU can count (libpmc: EINVAL).
    #[error("{0}; list the events with pmccontrol -L")]
    Spec(#[from] SpecError),
    /// The module speaks another ABI major/minor (libpmc: EPROGMISMATCH).
    #[error(
        "hwpmc module version {module:#010x} does not match this library's {library:#010x} (major.minor); use a matching kernel and library"
    )]
    Version {
        /// `PMC_VERSION` of the module.
        module: u32,
        /// `PMC_VERSION` of this crate.
        library: u32,
    },
    /// An argument was rejected before reaching the kernel (libpmc: EINVAL).
    #[error("{0}")]
    Invalid(String),
    /// hwpmc cannot be used on this platform.
    #[error("hwpmc is only available on FreeBSD (kldload hwpmc); use the kernel double for tests")]
    Unsupported,
}

impl Error {
    /// The errno libpmc would leave in `errno` for this failure.
    pub fn errno(&self) -> Errno {
        match self {
            Error::Kernel { errno, .. } => *errno,
            Error::Spec(_) | Error::Invalid(_) => Errno::EINVAL,
            Error::Version { .. } => Errno::EPROGMISMATCH,
            Error::Unsupported => Errno::ENXIO,
        }
    }
}

/// A short explanation of `errno` for `op`, from hwpmc_mod.c's uses.
fn hint(op: Op, errno: Errno) -> &'static str {
    match (op, errno) {
        (_, Errno::EDOOFUS) => {
            "the PMC needs a log file: configure one (CONFIGURELOG) before starting it"
        }
        (Op::PMCATTACH, Errno::EEXIST) => "the PMC is already attached to that process",
        (Op::PMCATTACH, Errno::EBUSY) => {
            "stop the PMC first, or the process already has a PMC at that row"
        }
        (Op::PMCATTACH | Op::PMCDETACH, Errno::ESRCH) => {
            "no such (live) process, or it is not attached"
        }
        (Op::PMCATTACH, Errno::EPERM) => "the process may not be debugged by this one",
        (Op::PMCALLOCATE, Errno::EPERM) => {
            "system-wide PMCs need root outside a jail (security.bsd.unprivileged_syspmcs)"
        }
        (Op::PMCALLOCATE, Errno::EOPNOTSUPP) => {
            "the class cannot do the requested capabilities (qualifiers)"
        }
        (Op::PMCALLOCATE, Errno::ENXIO) => "that CPU is not active",
        (Op::PMCALLOCATE, Errno::EINVAL) => "bad mode, CPU or flags, or no free row of that class",
        (Op::PMCRW | Op::PMCSETCOUNT, Errno::EBUSY) => "stop the PMC before writing it",
        (Op::PMCSTART, Errno::ESRCH) => "the PMC was detached from every process; attach it again",
        (Op::PMCADMIN, Errno::EPERM) => "PMCADMIN needs PRIV_PMC_MANAGE (root)",
        (Op::PMCADMIN, Errno::EBUSY) => "the row is in use",
        (Op::PMCGETMSR, Errno::ENOSYS) => "this class has no machine register to read directly",
        (Op::PMCGETMSR, Errno::EINVAL) => {
            "GETMSR needs a process-mode PMC attached only to its owner"
        }
        (Op::FLUSHLOG | Op::WRITELOG, Errno::EINVAL) => "no log file is configured",
        (Op::CONFIGURELOG, Errno::EBUSY) => "a log file is already configured; close it first",
        (_, Errno::ESRCH) => "this process owns no PMCs",
        (_, Errno::EINVAL) => "invalid PMC id, state or argument for this operation",
        (_, Errno::ENXIO) => "the CPU is not active",
        _ => "see hwpmc(4)",
    }
}

/// A PMC handle (`pmc_id_t`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PmcId(pub abi::pmc_id_t);

impl PmcId {
    /// The row index encoded in the id.
    pub fn row(self) -> u32 {
        abi::pmc_id_to_rowindex(self.0)
    }
    /// The class encoded in the id.
    pub fn class(self) -> Option<Class> {
        Class::from_raw(abi::pmc_id_to_class(self.0))
    }
    /// The mode encoded in the id.
    pub fn mode(self) -> Option<Mode> {
        Mode::from_raw(abi::pmc_id_to_mode(self.0))
    }
}

/// hwpmc behind a transport, initialised as libpmc's `pmc_init`: module
/// version check, CPU information, soft event list.
#[derive(Debug)]
pub struct Hwpmc<T: Transport> {
    transport: T,
    cpuinfo: abi::pmc_op_getcpuinfo,
    resolver: EventResolver,
}

impl<T: Transport> Hwpmc<T> {
    /// Opens hwpmc through `transport` (libpmc `pmc_init`).
    pub fn open(transport: T) -> Result<Hwpmc<T>, Error> {
        Self::open_with_pmu(transport, None)
    }

    /// Opens with the CPU's pmu-events table (libpmc consults it first).
    pub fn open_with_pmu(transport: T, pmu: Option<PmuEvents>) -> Result<Hwpmc<T>, Error> {
        let mut version = abi::PMC_VERSION;
        call(&transport, Request::GetModuleVersion(&mut version))?;
        if version & 0xFFFF_0000 != abi::PMC_VERSION & 0xFFFF_0000 {
            return Err(Error::Version {
                module: version,
                library: abi::PMC_VERSION,
            });
        }
        let mut cpuinfo = abi::pmc_op_getcpuinfo::default();
        call(&transport, Request::GetCpuInfo(&mut cpuinfo))?;
        let mut dyn_events = abi::pmc_op_getdyneventinfo::new_boxed(Class::SOFT as u32);
        call(&transport, Request::GetDynEventInfo(&mut dyn_events))?;
        let n = (dyn_events.pm_nevent as usize).min(abi::PMC_EV_DYN_COUNT);
        let soft_events = dyn_events.pm_events[..n]
            .iter()
            .map(|e| (e.name(), e.pm_ev_code))
            .collect();
        let nclass = (cpuinfo.pm_nclass as usize).min(abi::PMC_CLASS_MAX);
        let resolver = EventResolver {
            arch: Arch::native(),
            cputype: cpuinfo.pm_cputype,
            classes: cpuinfo.pm_classes[..nclass]
                .iter()
                .map(|c| c.pm_class)
                .collect(),
            soft_events,
            pmu,
        };
        Ok(Hwpmc {
            transport,
            cpuinfo,
            resolver,
        })
    }

    /// The transport (for what else it knows of the system).
    pub fn transport(&self) -> &T {
        &self.transport
    }

    /// The event resolver, as `pmc_init` set it up.
    pub fn resolver(&self) -> &EventResolver {
        &self.resolver
    }

    /// The event resolver (to change the architecture or pmu table).
    pub fn resolver_mut(&mut self) -> &mut EventResolver {
        &mut self.resolver
    }

    /// GETCPUINFO as read at open (`pmc_cpuinfo`).
    pub fn cpuinfo(&self) -> &abi::pmc_op_getcpuinfo {
        &self.cpuinfo
    }

    /// `pmc_ncpu`.
    pub fn ncpu(&self) -> u32 {
        self.cpuinfo.pm_ncpu
    }

    /// `pmc_npmc`.
    pub fn npmc(&self) -> u32 {
        self.cpuinfo.pm_npmc
    }

    /// `pmc_event_names_of_class`.
    pub fn event_names_of_class(&self, class: Class) -> Vec<String> {
        self.resolver
            .class_events(class)
            .into_iter()
            .map(|(n, _)| n)
            .collect()
    }

    /// `pmc_allocate(spec, mode, flags, cpu, &id, count)`: `cpu` is `None`
    /// for process modes (`PMC_CPU_ANY`).
    pub fn allocate(
        &self,
        spec: &str,
        mode: Mode,
        flags: u32,
        cpu: Option<u32>,
        count: u64,
    ) -> Result<PmcId, Error> {
        let cpu = cpu.unwrap_or(abi::PMC_CPU_ANY);
        let mut pa = self
            .resolver
            .allocate_request(spec, mode, flags, cpu, count)?;
        call(&self.transport, Request::PmcAllocate(&mut pa))?;
        Ok(PmcId(pa.pm_pmcid))
    }

    /// Allocates from a prepared request (the caller did the mapping).
    pub fn allocate_raw(&self, request: &mut abi::pmc_op_pmcallocate) -> Result<PmcId, Error> {
        call(&self.transport, Request::PmcAllocate(request))?;
        Ok(PmcId(request.pm_pmcid))
    }

    /// `pmc_attach` (pid 0 = the caller).
    pub fn attach(&self, pmc: PmcId, pid: i32) -> Result<(), Error> {
        let mut a = abi::pmc_op_pmcattach {
            pm_pmc: pmc.0,
            pm_pid: pid,
        };
        call(&self.transport, Request::PmcAttach(&mut a))
    }

    /// `pmc_detach`.
    pub fn detach(&self, pmc: PmcId, pid: i32) -> Result<(), Error> {
        let mut a = abi::pmc_op_pmcattach {
            pm_pmc: pmc.0,
            pm_pid: pid,
        };
        call(&self.transport, Request::PmcDetach(&mut a))
    }

    /// `pmc_start`.
    pub fn start(&self, pmc: PmcId) -> Result<(), Error> {
        call(
            &self.transport,
            Request::PmcStart(&mut abi::pmc_op_simple { pm_pmcid: pmc.0 }),
        )
    }

    /// `pmc_stop`.
    pub fn stop(&self, pmc: PmcId) -> Result<(), Error> {
        call(
            &self.transport,
            Request::PmcStop(&mut abi::pmc_op_simple { pm_pmcid: pmc.0 }),
        )
    }

    /// `pmc_release`.
    pub fn release(&self, pmc: PmcId) -> Result<(), Error> {
        call(
            &self.transport,
            Request::PmcRelease(&mut abi::pmc_op_simple { pm_pmcid: pmc.0 }),
        )
    }

    /// `pmc_read`.
    pub fn read(&self, pmc: PmcId) -> Result<u64, Error> {
        let mut rw = abi::pmc_op_pmcrw {
            pm_flags: abi::PMC_F_OLDVALUE,
            pm_pmcid: pmc.0,
            pm_value: u64::MAX,
        };
        call(&self.transport, Request::PmcRw(&mut rw))?;
        Ok(rw.pm_value)
    }

    /// `pmc_write`.
    pub fn write(&self, pmc: PmcId, value: u64) -> Result<(), Error> {
        let mut rw = abi::pmc_op_pmcrw {
            pm_flags: abi::PMC_F_NEWVALUE,
            pm_pmcid: pmc.0,
            pm_value: value,
        };
        call(&self.transport, Request::PmcRw(&mut rw))
    }

    /// `pmc_rw`: writes `value`, returns the old value.
    pub fn rw(&self, pmc: PmcId, value: u64) -> Result<u64, Error> {
        let mut rw = abi::pmc_op_pmcrw {
            pm_flags: abi::PMC_F_NEWVALUE | abi::PMC_F_OLDVALUE,
            pm_pmcid: pmc.0,
            pm_value: value,
        };
        call(&self.transport, Request::PmcRw(&mut rw))?;
        Ok(rw.pm_value)
    }

    /// `pmc_set`: the reload count (sampling) or initial count (counting).
    pub fn set(&self, pmc: PmcId, count: u64) -> Result<(), Error> {
        let mut sc = abi::pmc_op_pmcsetcount {
            pm_count: count,
            pm_pmcid: pmc.0,
        };
        call(&self.transport, Request::PmcSetCount(&mut sc))
    }

    /// `pmc_get_msr`.
    pub fn get_msr(&self, pmc: PmcId) -> Result<u32, Error> {
        let mut gm = abi::pmc_op_getmsr {
            pm_msr: 0,
            pm_pmcid: pmc.0,
        };
        call(&self.transport, Request::PmcGetMsr(&mut gm))?;
        Ok(gm.pm_msr)
    }

    /// `pmc_pmcinfo(cpu)`: one row per PMC of the CPU.
    pub fn pmcinfo(&self, cpu: u32) -> Result<Vec<abi::pmc_info>, Error> {
        if cpu >= self.cpuinfo.pm_ncpu {
            return Err(Error::Invalid(format!(
                "pmcinfo: CPU {cpu} is out of range 0..{}",
                self.cpuinfo.pm_ncpu
            )));
        }
        let mut rows = vec![abi::pmc_info::default(); self.cpuinfo.pm_npmc as usize];
        call(
            &self.transport,
            Request::GetPmcInfo {
                cpu: cpu as i32,
                pmcs: &mut rows,
            },
        )?;
        Ok(rows)
    }

    /// `pmc_get_driver_stats`.
    pub fn driver_stats(&self) -> Result<abi::pmc_op_getdriverstats, Error> {
        let mut s = abi::pmc_op_getdriverstats::default();
        call(&self.transport, Request::GetDriverStats(&mut s))?;
        Ok(s)
    }

    /// `pmc_configure_logfile(fd)` (-1 deconfigures).
    pub fn configure_logfile(&self, fd: i32) -> Result<(), Error> {
        call(
            &self.transport,
            Request::ConfigureLog(&mut abi::pmc_op_configurelog {
                pm_flags: 0,
                pm_logfd: fd,
            }),
        )
    }

    /// `pmc_flush_logfile`.
    pub fn flush_logfile(&self) -> Result<(), Error> {
        call(&self.transport, Request::FlushLog)
    }

    /// `pmc_close_logfile`.
    pub fn close_logfile(&self) -> Result<(), Error> {
        call(&self.transport, Request::CloseLog)
    }

    /// `pmc_writelog`.
    pub fn writelog(&self, userdata: u32) -> Result<(), Error> {
        call(
            &self.transport,
            Request::WriteLog(&mut abi::pmc_op_writelog {
                pm_userdata: userdata,
            }),
        )
    }

    /// `pmc_enable(cpu, row)` (PMCADMIN to FREE).
    pub fn enable(&self, cpu: i32, row: i32) -> Result<(), Error> {
        self.admin(cpu, row, State::FREE)
    }

    /// `pmc_disable(cpu, row)` (PMCADMIN to DISABLED).
    pub fn disable(&self, cpu: i32, row: i32) -> Result<(), Error> {
        self.admin(cpu, row, State::DISABLED)
    }

    fn admin(&self, cpu: i32, row: i32, state: State) -> Result<(), Error> {
        let mut a = abi::pmc_op_pmcadmin {
            pm_cpu: cpu,
            pm_flags: 0,
            pm_pmc: row,
            pm_state: state as u32,
        };
        call(&self.transport, Request::PmcAdmin(&mut a))
    }
}

cfg_if::cfg_if! {
    if #[cfg(target_os = "freebsd")] {
        impl Hwpmc<SyscallTransport> {
            /// Opens the running kernel's hwpmc.
            pub fn open_system() -> Result<Hwpmc<SyscallTransport>, Error> {
                let t = SyscallTransport::open().map_err(|errno| Error::Kernel {
                    op: Op::GETMODULEVERSION,
                    errno,
                    hint: "the hwpmc module is not loaded: kldload hwpmc",
                })?;
                Hwpmc::open(t)
            }
        }
    } else {
        /// Opening the running kernel's hwpmc off FreeBSD: always
        /// [`Error::Unsupported`].
        pub fn open_system() -> Result<(), Error> {
            Err(Error::Unsupported)
        }
    }
}

fn call<T: Transport>(transport: &T, request: Request<'_>) -> Result<(), Error> {
    let op = request.op();
    transport.call(request).map_err(|errno| Error::Kernel {
        op,
        errno,
        hint: hint(op, errno),
    })
}
