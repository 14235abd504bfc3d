//! pmc(3) in safe Rust: what each C function does once `sys` has checked
//! and converted its pointers. Ids map to [`Pmc`] objects in a registry;
//! every rule is the `pmc` crate's, errors carry its errno.

use std::collections::HashMap;
use std::ffi::CStr;
use std::fs::File;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use pmc_core::CpuInfo;
use pmc_core::{Class, Cpu, Flags, Mode, Pmc};

use crate::types::{self, disp, pmc_classinfo, pmc_cpuinfo, pmc_driverstats, pmc_info};
use crate::{CResult, Failure};

type Shared = Arc<Mutex<Pmc>>;

/// The PMCs allocated through the C API, by `pmc_id_t`. The map's lock is
/// held only to look up, insert or remove; each PMC has its own lock, so
/// threads using different PMCs do not wait on each other.
static PMCS: Mutex<Option<HashMap<u32, Shared>>> = Mutex::new(None);

fn registry() -> MutexGuard<'static, Option<HashMap<u32, Shared>>> {
    PMCS.lock().unwrap_or_else(|p| p.into_inner())
}

fn unknown_id(op: &str, id: u32) -> Failure {
    // hwpmc_mod.c pmc_find_pmc(): an id the caller does not own is EINVAL.
    Failure::new(
        libc::EINVAL,
        format!(
            "{op}: no PMC with id {id:#x} is allocated in this process (EINVAL): it was never \
             returned by pmc_allocate or has been released"
        ),
    )
}

fn lookup(op: &str, id: u32) -> CResult<Shared> {
    registry()
        .as_ref()
        .and_then(|m| m.get(&id).cloned())
        .ok_or_else(|| unknown_id(op, id))
}

fn with_pmc<T>(op: &str, id: u32, f: impl FnOnce(&mut Pmc) -> pmc_core::Result<T>) -> CResult<T> {
    let shared = lookup(op, id)?;
    let mut pmc = shared.lock().unwrap_or_else(|p| p.into_inner());
    Ok(f(&mut pmc)?)
}

fn einval(message: String) -> Failure {
    Failure::new(libc::EINVAL, message)
}

/// Whether `pmc_init` succeeded: lib/libpmc/libpmc.c's `pmc_syscall`,
/// -1 until `pmc_init` finds hwpmc.
static INITIALIZED: AtomicBool = AtomicBool::new(false);

/// `pmc_init`: checks that performance counters can be described here.
pub fn init() -> CResult<()> {
    cpuinfo_and_vendor()?;
    INITIALIZED.store(true, Ordering::Release);
    Ok(())
}

/// Before `pmc_init`, a call libpmc.c makes through `PMC_CALL` issues
/// `syscall(-1, …)`, which FreeBSD fails with ENOSYS (and a SIGSYS, not
/// raised here).
pub fn require_init(op: &str) -> CResult<()> {
    if INITIALIZED.load(Ordering::Acquire) {
        return Ok(());
    }
    Err(Failure::new(
        libc::ENOSYS,
        format!("{op}: call pmc_init() first (ENOSYS, as libpmc before pmc_init)"),
    ))
}

/// Before `pmc_init`, libpmc.c's `pmc_cpuinfo`, `pmc_ncpu`, `pmc_npmc`
/// (and so `pmc_pmcinfo`) fail with ENXIO.
fn require_init_for_query(op: &str) -> CResult<()> {
    if INITIALIZED.load(Ordering::Acquire) {
        return Ok(());
    }
    Err(Failure::new(
        libc::ENXIO,
        format!("{op}: call pmc_init() first (ENXIO, as libpmc before pmc_init)"),
    ))
}

/// `enum pmc_mode` → [`Mode`].
pub fn mode_of(mode: i32) -> CResult<Mode> {
    Ok(match mode {
        0 => Mode::SS,
        1 => Mode::SC,
        2 => Mode::TS,
        3 => Mode::TC,
        _ => {
            return Err(einval(format!(
                "pmc_allocate: mode {mode} is not a PMC_MODE_* value (EINVAL)"
            )));
        }
    })
}

/// `pmc_allocate`, returning the new id.
pub fn allocate(spec: &str, mode: i32, flags: u32, cpu: i32, count: u64) -> CResult<u32> {
    let mode = mode_of(mode)?;
    require_init("pmc_allocate")?;
    let flags = Flags::from_bits(flags).ok_or_else(|| {
        einval(format!(
            "pmc_allocate: flags {flags:#x} include bits pmc_allocate(3) does not accept (EINVAL)"
        ))
    })?;
    // PMC_CPU_ANY is ~0, i.e. -1 as an int.
    let cpu = match cpu {
        -1 => Cpu::Any,
        n if n >= 0 => Cpu::Id(n as u32),
        n => {
            return Err(einval(format!(
                "pmc_allocate: cpu {n} is neither a CPU number nor PMC_CPU_ANY (EINVAL)"
            )));
        }
    };
    // libpmc takes an event's name in its class (what pmc_name_of_event
    // gives): here that of an event one of ours counts.
    let freebsd = crate::names::spec_of_freebsd_name(spec);
    let spec = freebsd.as_deref().unwrap_or(spec);
    let pmc = Pmc::allocate_with_count(spec, mode, flags, cpu, count)?;
    let id = pmc.id().0;
    registry()
        .get_or_insert_with(HashMap::new)
        .insert(id, Arc::new(Mutex::new(pmc)));
    Ok(id)
}

/// hwpmc_mod.c PMCATTACH/PMCDETACH: a negative pid is EINVAL, checked
/// before the PMC is looked up; 0 is the caller.
fn pid_of(op: &str, pid: i32) -> CResult<u32> {
    u32::try_from(pid).map_err(|_| {
        einval(format!(
            "{op}: pid {pid} is negative; give a process id, or 0 for the caller (EINVAL)"
        ))
    })
}

/// `pmc_attach`
pub fn attach(id: u32, pid: i32) -> CResult<()> {
    require_init("pmc_attach")?;
    let pid = pid_of("pmc_attach", pid)?;
    with_pmc("pmc_attach", id, |p| p.attach(pid))
}

/// `pmc_detach`
pub fn detach(id: u32, pid: i32) -> CResult<()> {
    require_init("pmc_detach")?;
    let pid = pid_of("pmc_detach", pid)?;
    with_pmc("pmc_detach", id, |p| p.detach(pid))
}

/// `pmc_release`: the id is invalid afterwards, even when releasing fails.
pub fn release(id: u32) -> CResult<()> {
    require_init("pmc_release")?;
    let shared = registry()
        .as_mut()
        .and_then(|m| m.remove(&id))
        .ok_or_else(|| unknown_id("pmc_release", id))?;
    // Another thread may still hold a clone for a call in progress; then
    // the PMC is released when that call returns (its Drop).
    match Arc::try_unwrap(shared) {
        Ok(m) => Ok(m
            .into_inner()
            .unwrap_or_else(|p| p.into_inner())
            .release()?),
        Err(_) => Ok(()),
    }
}

/// `pmc_start`
pub fn start(id: u32) -> CResult<()> {
    require_init("pmc_start")?;
    with_pmc("pmc_start", id, Pmc::start)
}

/// `pmc_stop`
pub fn stop(id: u32) -> CResult<()> {
    require_init("pmc_stop")?;
    with_pmc("pmc_stop", id, Pmc::stop)
}

/// `pmc_read`
pub fn read(id: u32) -> CResult<u64> {
    require_init("pmc_read")?;
    with_pmc("pmc_read", id, Pmc::read)
}

/// `pmc_write`
pub fn write(id: u32, value: u64) -> CResult<()> {
    require_init("pmc_write")?;
    with_pmc("pmc_write", id, |p| p.write(value))
}

/// `pmc_rw`: writes `value`, returns the previous value.
pub fn rw(id: u32, value: u64) -> CResult<u64> {
    require_init("pmc_rw")?;
    with_pmc("pmc_rw", id, |p| p.rw(value))
}

/// `pmc_set`
pub fn set(id: u32, value: u64) -> CResult<()> {
    require_init("pmc_set")?;
    with_pmc("pmc_set", id, |p| p.set(value))
}

/// `pmc_capabilities`
pub fn capabilities(id: u32) -> CResult<u32> {
    with_pmc("pmc_capabilities", id, |p| Ok(p.capabilities().bits()))
}

/// `pmc_width`
pub fn width(id: u32) -> CResult<u32> {
    with_pmc("pmc_width", id, |p| Ok(p.width()))
}

/// `pmc_get_msr`
pub fn get_msr(id: u32) -> CResult<u32> {
    require_init("pmc_get_msr")?;
    with_pmc("pmc_get_msr", id, |p| p.get_msr())
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Vendor {
    Intel,
    Amd,
    Arm,
    Other,
}

fn vendor(info: &CpuInfo) -> Vendor {
    let t = info.cputype.to_ascii_lowercase();
    if t.contains("intel") {
        Vendor::Intel
    } else if t.contains("amd") || t.contains("hygon") {
        Vendor::Amd
    } else if cfg!(target_arch = "aarch64") {
        Vendor::Arm
    } else {
        Vendor::Other
    }
}

/// The `enum pmc_class` FreeBSD gives a class of ours: the core PMU's
/// class for hardware events (IAP on Intel, K8 on AMD, ARMV8 on arm64),
/// SOFT for the kernel's software-defined events, TSC for the `msr` PMU,
/// UCP for other PMUs.
fn class_to_c(class: &Class, vendor: Vendor) -> u32 {
    match class {
        // An event through the core PMU's own format (`cpu/event=0xc0/`,
        // an ARMV8 name) is libpmc's pmu-events path: the core class.
        Class::Hardware | Class::Cache | Class::Raw => match vendor {
            Vendor::Amd => types::class::K8,
            Vendor::Arm => types::class::ARMV8,
            Vendor::Intel | Vendor::Other => types::class::IAP,
        },
        Class::Pmu(n) if pmc_core::probe::is_core_pmu(n) => class_to_c(&Class::Raw, vendor),
        Class::Pmu(n) if n == "msr" => types::class::TSC,
        Class::Pmu(_) => types::class::UCP,
        _ => types::class::SOFT,
    }
}

static CPUINFO: OnceLock<(pmc_cpuinfo, Vendor)> = OnceLock::new();

fn cpuinfo_and_vendor() -> CResult<&'static (pmc_cpuinfo, Vendor)> {
    if let Some(c) = CPUINFO.get() {
        return Ok(c);
    }
    let info = pmc_core::cpuinfo()?;
    let vendor = vendor(&info);
    let mut out = pmc_cpuinfo {
        // The crate's one mapping (the log's INITIALIZE pl_cpu too).
        pm_cputype: pmc_core::global::this_machine().cputype,
        pm_ncpu: info.ncpu,
        pm_npmc: info.npmc,
        ..pmc_cpuinfo::default()
    };
    let mut n = 0;
    for c in &info.classes {
        let class = class_to_c(&c.class, vendor);
        let existing = out.pm_classes[..n].iter_mut().find(|e| e.pm_class == class);
        let num = c.num.unwrap_or(0);
        match existing {
            // Several of our classes share FreeBSD's (all SOFT kinds): one row.
            Some(e) => {
                e.pm_caps |= c.caps.bits();
                e.pm_num = e.pm_num.max(num);
                e.pm_width = e.pm_width.max(c.width);
            }
            None if n < types::PMC_CLASS_MAX => {
                out.pm_classes[n] = pmc_classinfo {
                    pm_class: class,
                    pm_caps: c.caps.bits(),
                    pm_width: c.width,
                    pm_num: num,
                };
                n += 1;
            }
            None => {}
        }
    }
    out.pm_nclass = n as u32;
    Ok(CPUINFO.get_or_init(|| (out, vendor)))
}

/// `pmc_cpuinfo`: a description that lives as long as the process.
pub fn cpuinfo() -> CResult<&'static pmc_cpuinfo> {
    require_init_for_query("pmc_cpuinfo")?;
    cpuinfo_and_vendor().map(|(c, _)| c)
}

/// `pmc_ncpu`
pub fn ncpu() -> CResult<u32> {
    require_init_for_query("pmc_ncpu")?;
    Ok(pmc_core::ncpu()?)
}

fn cpu_arg(op: &str, cpu: i32) -> CResult<u32> {
    u32::try_from(cpu).map_err(|_| einval(format!("{op}: cpu {cpu} does not exist (EINVAL)")))
}

/// `pmc_npmc`
pub fn npmc(cpu: i32) -> CResult<u32> {
    require_init_for_query("pmc_npmc")?;
    Ok(pmc_core::npmc(cpu_arg("pmc_npmc", cpu)?)?)
}

/// `pmc_pmcinfo`: the rows for `cpu`: this process's PMCs, then FREE rows
/// (empty name, owner −1) up to at least `pmc_npmc(cpu)` rows and always
/// at least one, so that FreeBSD's loop over `pmc_npmc(cpu)` rows reads
/// only what was allocated, and a loop to the first FREE row ends.
pub fn pmcinfo(cpu: i32) -> CResult<Vec<pmc_info>> {
    require_init_for_query("pmc_pmcinfo")?;
    let cpu = cpu_arg("pmc_pmcinfo", cpu)?;
    let vendor = cpuinfo_and_vendor()?.1;
    let npmc = pmc_core::npmc(cpu)? as usize;
    let rows = pmc_core::pmcinfo(cpu)?;
    let free = pmc_info {
        pm_name: [0; types::PMC_NAME_MAX],
        // A free row is a hardware counter's: the core PMU's class.
        pm_class: class_to_c(&Class::Raw, vendor),
        pm_enabled: 1,
        pm_rowdisp: disp::FREE,
        pm_ownerpid: -1,
        pm_mode: 0,
        pm_event: 0,
        pm_flags: 0,
        _pad0: 0,
        pm_reloadcount: 0,
    };
    let total = npmc.max(rows.len() + 1);
    let mut out: Vec<pmc_info> = rows
        .into_iter()
        .map(|p| pmc_info {
            pm_name: types::fill_chars(&p.name),
            pm_class: class_to_c(&p.class, vendor),
            pm_event: freebsd_event_of(&p.name, class_to_c(&p.class, vendor)),
            pm_enabled: 1,
            pm_rowdisp: if p.mode.is_process() {
                disp::THREAD
            } else {
                disp::STANDALONE
            },
            pm_ownerpid: p.owner_pid as libc::pid_t,
            pm_mode: p.mode as u32,
            pm_flags: p.flags.bits(),
            _pad0: 0,
            pm_reloadcount: p.reload_count,
        })
        .collect();
    out.resize(total, free);
    Ok(out)
}

/// FreeBSD's number for the event of a row (what `pmc_name_of_event`
/// maps back to the same name), or 0 where FreeBSD has none: the generic
/// events are numbered in the fixed-function class on Intel (IAF), where
/// FreeBSD puts them, and in the row's own class elsewhere.
fn freebsd_event_of(spec: &str, class: u32) -> u32 {
    let name = spec
        .split([',', ' ', '\t'])
        .next()
        .unwrap_or("")
        .to_ascii_lowercase();
    let class_name = match class {
        types::class::IAP => "IAF",
        c => match crate::names::class(c) {
            Ok(n) => n.to_str().unwrap_or(""),
            Err(_) => return 0,
        },
    };
    crate::names::event_number(class_name, &name).unwrap_or(0)
}

/// `pmc_get_driver_stats`: the log's sample and loss counts, and the
/// records offered to logs on pipes and sockets and dropped there for want
/// of buffer space (hwpmc's `pm_buffer_requests`/`_failed`,
/// [`pmc_core::log::queue`]); the rest counts kernel work that has no
/// equivalent here and stays 0.
pub fn driver_stats() -> CResult<pmc_driverstats> {
    require_init("pmc_get_driver_stats")?;
    let (samples, lost) = pmc_core::global::log::stats();
    let queue = pmc_core::global::log::queue_stats();
    let clamp = |v: u64| u32::try_from(v).unwrap_or(u32::MAX);
    Ok(pmc_driverstats {
        pm_intr_processed: clamp(samples),
        pm_intr_bufferfull: clamp(lost),
        pm_buffer_requests: clamp(queue.buffer_requests),
        pm_buffer_requests_failed: clamp(queue.buffer_requests_failed),
        ..pmc_driverstats::default()
    })
}

/// `pmc_enable`/`pmc_disable` (hwpmc's PMCADMIN): the CPU and row are
/// checked as hwpmc does; Linux has no administrative state per counter.
pub fn admin(op: &str, cpu: i32, row: i32) -> CResult<()> {
    require_init(op)?;
    let npmc = npmc(cpu).map_err(|f| Failure::new(f.errno, f.message.replace("pmc_npmc", op)))?;
    if row < 0 || row as u32 >= npmc {
        return Err(einval(format!(
            "{op}: cpu {cpu} has no hardware PMC row {row} (it has {npmc}) (EINVAL)"
        )));
    }
    Err(Failure::new(
        libc::EOPNOTSUPP,
        format!(
            "{op}: Linux has no per-counter administrative state (EOPNOTSUPP): restrict counters \
             with kernel.perf_event_paranoid instead"
        ),
    ))
}

/// `pmc_configure_logfile` with a checked, duplicated descriptor, or
/// `None` for a negative fd (deconfigure).
pub fn configure_logfile(out: Option<File>) -> CResult<()> {
    require_init("pmc_configure_logfile")?;
    match out {
        // By descriptor: a pipe or socket gets the never-blocking queue.
        Some(f) => Ok(pmc_core::global::log::configure_logfile_fd(&f)?),
        None => Ok(pmc_core::global::log::deconfigure_logfile()?),
    }
}

/// `pmc_flush_logfile`
pub fn flush_logfile() -> CResult<()> {
    require_init("pmc_flush_logfile")?;
    Ok(pmc_core::global::log::flush_logfile()?)
}

/// `pmc_close_logfile`
pub fn close_logfile() -> CResult<()> {
    require_init("pmc_close_logfile")?;
    Ok(pmc_core::global::log::close_logfile()?)
}

/// `pmc_writelog`
pub fn writelog(value: u32) -> CResult<()> {
    require_init("pmc_writelog")?;
    Ok(pmc_core::global::log::writelog(value)?)
}

/// `pmc_set_user_stack` (extension): sampling PMCs allocated from now on
/// copy `bytes` of user stack per sample (0: none), unwound into their
/// logged callchains.
pub fn set_user_stack(bytes: u32) -> CResult<()> {
    Ok(pmc_core::Owner::global().set_user_stack((bytes > 0).then_some(bytes))?)
}

/// Event names handed to C: interned for the life of the process, since
/// libpmc's arrays point at static strings the caller never frees.
static INTERNED: Mutex<Option<HashMap<String, &'static CStr>>> = Mutex::new(None);

fn intern(s: &str) -> Option<&'static CStr> {
    let mut map = INTERNED.lock().unwrap_or_else(|p| p.into_inner());
    let map = map.get_or_insert_with(HashMap::new);
    if let Some(c) = map.get(s) {
        return Some(c);
    }
    let c: &'static CStr = Box::leak(std::ffi::CString::new(s).ok()?.into_boxed_c_str());
    map.insert(s.to_string(), c);
    Some(c)
}

/// `pmc_event_names_of_class`: the names of a class this machine has.
pub fn event_names_of_class(class: u32) -> CResult<Vec<&'static CStr>> {
    let (info, vendor) = cpuinfo_and_vendor()?;
    let present = info.pm_classes[..info.pm_nclass as usize]
        .iter()
        .any(|c| c.pm_class == class);
    if !present {
        return Err(einval(format!(
            "pmc_event_names_of_class: class {class:#x} ({}) is not present on this machine \
             (EINVAL); pmc_cpuinfo() lists the classes",
            crate::names::class(class)
                .map(|c| c.to_string_lossy().into_owned())
                .unwrap_or_else(|_| "unknown".into())
        )));
    }
    if class == types::class::ARMV8 {
        // libpmc's table of this CPU type (`cortex_a53_event_table`, …).
        let names = pmc_core::global::libpmc_event_names(pmc_core::LibpmcClass::Armv8)?;
        return Ok(names.iter().filter_map(|n| intern(n)).collect());
    }
    let ours: Vec<Class> = match class {
        types::class::SOFT => vec![Class::Software],
        types::class::TSC => vec![Class::Pmu("msr".into())],
        c if c == class_to_c(&Class::Hardware, *vendor) => vec![Class::Hardware, Class::Cache],
        _ => Vec::new(),
    };
    let mut names = Vec::new();
    for c in &ours {
        for n in pmc_core::event_names_of_class(c)? {
            names.extend(intern(&n));
        }
    }
    Ok(names)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The class numbers are sys/sys/pmc.h's `__PMC_CLASSES()`: TSC 0x00,
    /// K8 0x02, IAP 0x07, UCP 0x09, …, SOFT 0x0F, ARMV7 0x10, ARMV8 0x11. Hardware, cache
    /// and raw events are the vendor's core class, as libpmc's pmu-events
    /// path allocates them (IAP, K8; ARMV8 on arm64).
    #[test]
    fn classes_are_freebsds_numbers() {
        for class in [Class::Hardware, Class::Cache, Class::Raw] {
            assert_eq!(class_to_c(&class, Vendor::Intel), 0x07, "{class:?}");
            assert_eq!(class_to_c(&class, Vendor::Other), 0x07, "{class:?}");
            assert_eq!(class_to_c(&class, Vendor::Amd), 0x02, "{class:?}");
            assert_eq!(class_to_c(&class, Vendor::Arm), 0x11, "{class:?}");
        }
        assert_eq!(class_to_c(&Class::Pmu("msr".into()), Vendor::Intel), 0x00);
        // The core PMU's own format: the core class.
        assert_eq!(class_to_c(&Class::Pmu("cpu".into()), Vendor::Intel), 0x07);
        assert_eq!(
            class_to_c(&Class::Pmu("armv8_pmuv3".into()), Vendor::Arm),
            0x11
        );
        assert_eq!(
            class_to_c(&Class::Pmu("uncore_imc_0".into()), Vendor::Intel),
            0x09
        );
        for class in [Class::Software, Class::Tracepoint, Class::Uprobe] {
            assert_eq!(class_to_c(&class, Vendor::Amd), 0x0F, "{class:?}");
        }
    }

    /// sys/sys/pmc.h `__PMC_MODES()`: SS 0, SC 1, TS 2, TC 3; anything else
    /// is EINVAL, as pmc_allocate(3) says.
    #[test]
    fn modes_are_freebsds_numbers() {
        let modes: Vec<Mode> = (0..4).map(|m| mode_of(m).unwrap()).collect();
        assert_eq!(modes, [Mode::SS, Mode::SC, Mode::TS, Mode::TC]);
        for bad in [-1, 4, i32::MAX] {
            assert_eq!(mode_of(bad).unwrap_err().errno, libc::EINVAL, "{bad}");
        }
    }

    /// pmc_allocate(3)'s CPU is a CPU number or PMC_CPU_ANY (~0, -1): any
    /// other negative value is the shim's EINVAL, not a huge CPU number.
    #[test]
    fn a_negative_cpu_other_than_any_is_einval() {
        init().unwrap();
        let e = allocate("task-clock", 1, 0, -2, 0).unwrap_err();
        assert_eq!(e.errno, libc::EINVAL);
        assert!(e.message.contains("cpu -2 is neither"), "{}", e.message);
    }

    /// pmc_pmcinfo: the FREE rows after this process's PMCs are owned by
    /// nobody (`pm_ownerpid` −1), and there is always one.
    #[test]
    fn free_pmcinfo_rows_have_no_owner() {
        init().unwrap();
        let rows = pmcinfo(0).unwrap();
        let free: Vec<&pmc_info> = rows.iter().filter(|r| r.pm_rowdisp == disp::FREE).collect();
        assert!(!free.is_empty());
        assert!(free.iter().all(|r| r.pm_ownerpid == -1));
    }

    /// The vendor the C API's classes follow, from the CPU model's name:
    /// AMD's and Hygon's (Zen) are K8-class, Intel's IAP.
    #[test]
    fn the_vendor_follows_the_cpu_model() {
        let of = |cputype: &str| {
            vendor(&CpuInfo {
                cputype: cputype.into(),
                ncpu: 1,
                npmc: 0,
                classes: Vec::new(),
            })
        };
        assert!(of("AMD EPYC (family 0x19, model 0x1)") == Vendor::Amd);
        assert!(of("Hygon C86 7185 32-core Processor") == Vendor::Amd);
        assert!(of("Intel(R) Xeon(R) Platinum 8272CL") == Vendor::Intel);
    }

    /// hwpmc's PMCADMIN checks the row against the CPU's rows first: row
    /// `npmc` (one past the last) and −1 are EINVAL, not the Linux
    /// backend's EOPNOTSUPP for a real row.
    #[test]
    fn admin_rows_are_checked_before_the_refusal() {
        init().unwrap();
        let rows = npmc(0).unwrap() as i32;
        for row in [rows, -1, rows + 5] {
            let e = admin("pmc_enable", 0, row).unwrap_err();
            assert_eq!(e.errno, libc::EINVAL, "row {row} of {rows}: {}", e.message);
        }
        if rows > 0 {
            assert_eq!(
                admin("pmc_enable", 0, 0).unwrap_err().errno,
                libc::EOPNOTSUPP
            );
        }
    }

    /// pmc_cpuinfo(3)'s `pm_ncpu` and `pm_npmc` are the machine's CPUs and
    /// PMC rows per CPU, the counts `pmc_cpuinfo` of the crate gives (a
    /// machine without a core PMU has no rows: 0 there).
    #[test]
    fn cpuinfo_carries_the_cpu_and_row_counts() {
        let (c, _) = cpuinfo_and_vendor().unwrap();
        let info = pmc_core::cpuinfo().unwrap();
        assert!(info.ncpu > 0, "{info:?}");
        assert_eq!((c.pm_ncpu, c.pm_npmc), (info.ncpu, info.npmc));
    }
}
