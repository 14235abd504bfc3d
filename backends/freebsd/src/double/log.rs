//! The double's hwpmc log: the owner's log file as hwpmc_logging.c keeps
//! it, and the records hwpmc_mod.c writes into it.
//!
//! - a descriptor is a pipe the double makes ([`KernelDouble::pipe`]): the
//!   caller passes its write end's number to `PMC_OP_CONFIGURELOG` and
//!   reads pmclog bytes from the [`LogPipe`], as pmcstat reads the pipe it
//!   gives hwpmc; a number that is no pipe of the double is EBADF, as
//!   `fget_write` fails in `pmclog_configure_log`;
//! - records are buffered in the kernel (`po_curbuf`) and reach the pipe
//!   when the buffer fills ([`LOG_BUFFER_BYTES`]), on `PMC_OP_FLUSHLOG`
//!   (`pmclog_flush` → `pmclog_schedule_all`), and on close
//!   (`pmclog_close` writes CLOSELOG and schedules everything);
//! - the records are `sys/sys/pmclog.h`'s structures as hwpmc_logging.c
//!   emits them: a `pmclog_header` (magic 0xEE, type, length rounded up to
//!   4 bytes by `_PMCLOG_RESERVE`, an unwritten spare word, the timestamp)
//!   and the record's packed fields in native byte order. The timestamp
//!   is the double's TSC: nanoseconds since the double was made, so
//!   INITIALIZE's `pl_tsc_freq` is `Machine::tsc_freq`, 1 000 000 000 (0
//!   models a machine where hwpmc does not fill it in).
//!
//! What writes which record (hwpmc_mod.c): CALLCHAIN for a sample of a
//! running sampling PMC not attached to its owner ([`KernelDouble::sample`],
//! `pmc_process_samples` → `pmclog_process_callchain`; one on its owner
//! feeds profil(2) instead); PROCCSW for a counting process PMC with
//! `PMC_F_LOG_PROCCSW` when its target is switched out
//! ([`KernelDouble::run_slice`], `pmc_process_csw_out`); PROCEXIT for a
//! counting PMC that needs the log as its target exits (`pmc_process_exit`);
//! PMCATTACH and, for a sampling PMC, the process's executable mappings as
//! MAP_IN at attach (`pmc_attach_one_process` → `pmc_log_process_mappings`);
//! the kernel's MAP_IN once per log when a sampling PMC starts
//! (`pmc_start` → `pmc_log_kernel_mappings`); USERDATA at WRITELOG.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use super::{Kernel, KernelDouble};
use crate::abi::{self, Errno, State};

/// Bytes the kernel buffers before it writes them out (the double's
/// `kern.hwpmc.logbuffersize`, small so that tests see both paths).
pub const LOG_BUFFER_BYTES: usize = 4096;

/// `enum pmclog_type` (sys/sys/pmclog.h).
mod kind {
    pub const CLOSELOG: u32 = 1;
    pub const INITIALIZE: u32 = 3;
    pub const PMCATTACH: u32 = 6;
    pub const PROCCSW: u32 = 8;
    pub const PROCEXIT: u32 = 10;
    pub const USERDATA: u32 = 13;
    pub const MAP_IN: u32 = 14;
    pub const CALLCHAIN: u32 = 16;
}

/// `PMCLOG_HEADER_MAGIC`.
const MAGIC: u32 = 0xEE;
/// `PMC_CALLCHAIN_DEPTH_MAX`.
const CALLCHAIN_DEPTH_MAX: usize = 512;
/// `PMC_CPUID_LEN`.
const CPUID_LEN: usize = 64;
/// The kernel's path in MAP_IN (`pmc_log_kernel_mappings` logs the
/// kernel's linker files; the double has one).
pub const KERNEL_PATH: &str = "/boot/kernel/kernel";
/// Where the double's kernel text starts (amd64's `KERNBASE` + 2 MiB).
pub const KERNEL_START: u64 = 0xffff_ffff_8020_0000;

type Shared = Arc<Mutex<PipeBuffer>>;

#[derive(Debug, Default)]
struct PipeBuffer {
    bytes: Vec<u8>,
    /// The kernel let go of the write end (after CLOSELOG).
    closed: bool,
}

/// The read end of a pipe made by [`KernelDouble::pipe`].
#[derive(Clone, Debug)]
pub struct LogPipe {
    shared: Shared,
}

impl LogPipe {
    /// Takes every byte written so far (a non-blocking read to the end).
    pub fn take(&self) -> Vec<u8> {
        std::mem::take(&mut self.shared.lock().unwrap_or_else(|e| e.into_inner()).bytes)
    }

    /// Whether the kernel closed its reference to the write end.
    pub fn writer_closed(&self) -> bool {
        self.shared.lock().unwrap_or_else(|e| e.into_inner()).closed
    }
}

/// What a process looks like to `pmc_log_process_mappings`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Image {
    /// Its executable (`p_textvp`'s path, PMCATTACH's `pl_pathname`).
    pub path: String,
    /// Its executable file mappings: (start of the first executable
    /// entry, path), as MAP_IN logs them.
    pub mappings: Vec<(u64, String)>,
}

/// The log state of the double's owner (`po_file`, `po_curbuf`, the
/// per-log flags) and what the records need of processes.
#[derive(Debug, Default)]
pub(super) struct Pmclog {
    pipes: BTreeMap<i32, Shared>,
    next_fd: i32,
    /// The configured log's pipe (`po_file`).
    file: Option<Shared>,
    /// Records not yet written out (`po_curbuf`).
    pending: Vec<u8>,
    /// `PMC_PO_INITIAL_MAPPINGS_DONE`.
    kernel_mappings_done: bool,
    /// `pp_pmcval` per (PMC id, pid): a process's value of each PMC.
    pmcval: BTreeMap<(u32, i32), u64>,
    /// Executables and mappings by pid.
    images: BTreeMap<i32, Image>,
    /// The last timestamp handed out.
    last_tsc: u64,
    /// The double's TSC origin.
    epoch: Option<Instant>,
}

impl Pmclog {
    /// The double's TSC: nanoseconds since its first use, strictly
    /// increasing so every record has its own time.
    fn tsc(&mut self) -> u64 {
        let epoch = *self.epoch.get_or_insert_with(Instant::now);
        let now = u64::try_from(epoch.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.last_tsc = now.max(self.last_tsc + 1);
        self.last_tsc
    }

    /// `_PMCLOG_RESERVE` + the fields + `PMCLOG_DESPATCH`: appends a record
    /// to the kernel's buffer, written out when it fills.
    fn emit(&mut self, kind: u32, fields: &[u8]) {
        if self.file.is_none() {
            return;
        }
        let tsc = self.tsc();
        let len = (16 + fields.len()).next_multiple_of(4);
        let header = (MAGIC << 24) | (kind << 16) | (len as u32 & 0xFFFF);
        self.pending.extend_from_slice(&header.to_ne_bytes());
        self.pending.extend_from_slice(&0u32.to_ne_bytes()); // pl_spare, unwritten
        self.pending.extend_from_slice(&tsc.to_ne_bytes());
        self.pending.extend_from_slice(fields);
        self.pending
            .resize(self.pending.len() + len - 16 - fields.len(), 0);
        if self.pending.len() >= LOG_BUFFER_BYTES {
            self.schedule_all();
        }
    }

    /// `pmclog_schedule_all`: the buffered records go to the file.
    fn schedule_all(&mut self) {
        if let Some(file) = &self.file {
            let mut pipe = file.lock().unwrap_or_else(|e| e.into_inner());
            pipe.bytes.append(&mut self.pending);
        }
        self.pending.clear();
    }

    /// `pmclog_close` + the kthread's exit: CLOSELOG, everything written,
    /// the file let go.
    fn close(&mut self) {
        self.emit(kind::CLOSELOG, &[]);
        self.schedule_all();
        if let Some(file) = self.file.take() {
            file.lock().unwrap_or_else(|e| e.into_inner()).closed = true;
        }
    }

    /// The owner descriptor is destroyed: a new one starts with no flags.
    pub(super) fn forget_owner(&mut self) {
        self.kernel_mappings_done = false;
    }

    fn map_in(&mut self, pid: i32, start: u64, path: &str) {
        let mut f = Vec::new();
        f.extend_from_slice(&pid.to_ne_bytes());
        f.extend_from_slice(&0u32.to_ne_bytes());
        f.extend_from_slice(&start.to_ne_bytes());
        f.extend_from_slice(path.as_bytes());
        f.push(0);
        self.emit(kind::MAP_IN, &f);
    }
}

fn u32s(values: &[u32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_ne_bytes()).collect()
}

impl KernelDouble {
    /// A pipe: the number of its write end, for `PMC_OP_CONFIGURELOG`, and
    /// its read end.
    pub fn pipe(&self) -> (i32, LogPipe) {
        let mut k = self.lock();
        let shared = Shared::default();
        k.pmclog.next_fd += 1;
        // Numbers well above what a test process has open.
        let fd = 1000 + k.pmclog.next_fd;
        k.pmclog.pipes.insert(fd, shared.clone());
        (fd, LogPipe { shared })
    }

    /// Gives process `pid` an executable and file mappings, which PMCATTACH
    /// and MAP_IN records name.
    pub fn set_image(&self, pid: i32, image: Image) {
        self.lock().pmclog.images.insert(pid, image);
    }

    /// A sample: every RUNNING sampling PMC that sees it — a process PMC
    /// attached to `pid` (and not to its owner), a system PMC on `cpu` —
    /// logs a CALLCHAIN with
    /// `pcs` (innermost first; only the first without `PMC_F_CALLCHAIN`,
    /// as hwpmc captures only the interrupted pc then), `user` marking a
    /// user-space chain (`PMC_CC_F_USERSPACE`). Nothing is logged without
    /// a log file (hwpmc_mod.c `pmc_process_samples` hands samples to the
    /// owner's log).
    pub fn sample(&self, cpu: u32, pid: i32, tid: i32, user: bool, pcs: &[u64]) {
        let mut k = self.lock();
        let k = &mut *k;
        let hits: Vec<(u32, u32)> = k
            .pmcs
            .iter()
            .filter(|p| p.state == State::RUNNING && p.mode.is_sampling())
            // A process PMC attached to its owner feeds the owner's
            // profil(2) buffer (`addupc_intr`), not the log.
            .filter(|p| p.flags & abi::PMC_F_ATTACHED_TO_OWNER == 0)
            .filter(|p| {
                if p.mode.is_virtual() {
                    p.targets.contains(&pid)
                } else {
                    p.cpu == cpu
                }
            })
            .map(|p| (p.id, p.flags))
            .collect();
        for (id, flags) in hits {
            let n = if flags & abi::PMC_F_CALLCHAIN != 0 {
                pcs.len().min(CALLCHAIN_DEPTH_MAX)
            } else {
                pcs.len().min(1)
            };
            // PMC_CALLCHAIN_TO_CPUFLAGS(cpu, flags).
            let cpuflags = ((cpu & 0xFFFF) << 16) | if user { abi::PMC_CC_F_USERSPACE } else { 0 };
            let mut f = u32s(&[pid as u32, tid as u32, id, cpuflags]);
            for pc in &pcs[..n] {
                f.extend_from_slice(&pc.to_ne_bytes());
            }
            k.pmclog.emit(kind::CALLCHAIN, &f);
        }
    }

    /// A thread `tid` of `pid` runs `events` events on the caller's CPU
    /// and is switched out (hwpmc_mod.c `pmc_process_csw_in`, then
    /// `pmc_process_csw_out`): its RUNNING process PMCs count them there; a
    /// counting one adds the slice to its saved value and to the process's
    /// `pp_pmcval` and, with `PMC_F_LOG_PROCCSW`, logs PROCCSW with the
    /// slice's value and the thread.
    pub fn run_slice(&self, pid: i32, tid: i32, events: u64) {
        let mut k = self.lock();
        let cpu = k.on_cpu.get(&pid).copied().unwrap_or(super::CALLER_CPU);
        Self::csw_in(&mut k, pid, cpu);
        k.on_thread.insert(pid, tid);
        Self::count(&mut k, cpu, events, false);
        Self::csw_out(&mut k, pid);
    }

    /// `pmclog_process_proccsw`: PMC `id` counted `slice` for thread `tid`
    /// of `pid` before it was switched out.
    pub(super) fn log_proccsw(k: &mut Kernel, id: u32, pid: i32, tid: i32, slice: u64) {
        let mut f = slice.to_ne_bytes().to_vec();
        f.extend(u32s(&[id, pid as u32, tid as u32, 0]));
        k.pmclog.emit(kind::PROCCSW, &f);
    }

    /// The value of PMC `id` for process `pid` (`pp_pmcval`): what its
    /// PROCEXIT would say.
    pub fn process_value(&self, id: u32, pid: i32) -> u64 {
        self.lock()
            .pmclog
            .pmcval
            .get(&(id, pid))
            .copied()
            .unwrap_or(0)
    }

    /// Bytes buffered in the kernel, not yet written to the log file.
    pub fn log_pending(&self) -> usize {
        self.lock().pmclog.pending.len()
    }

    /// `PMC_OP_CONFIGURELOG` with a descriptor (`pmclog_configure_log`):
    /// EBUSY with a log, EBADF for a number that is no pipe; then
    /// INITIALIZE, written out at once (`PMCLOG_DESPATCH_SYNC`).
    pub(super) fn configure_log(&self, k: &mut Kernel, fd: i32) -> Result<(), Errno> {
        if k.owns_logfile {
            return Err(Errno::EBUSY);
        }
        let Some(pipe) = k.pmclog.pipes.get(&fd).cloned() else {
            return Err(Errno::EBADF);
        };
        pipe.lock().unwrap_or_else(|e| e.into_inner()).closed = false;
        k.owns_logfile = true;
        k.logfd = fd;
        k.pmclog.file = Some(pipe);
        k.pmclog.pending.clear();
        let wall = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        let mut f = u32s(&[abi::PMC_VERSION, self.machine.cputype as u32]);
        f.extend_from_slice(&self.machine.tsc_freq.to_ne_bytes()); // pl_tsc_freq
        f.extend_from_slice(&wall.as_secs().to_ne_bytes()); // pl_ts
        f.extend_from_slice(&u64::from(wall.subsec_nanos()).to_ne_bytes());
        f.resize(f.len() + CPUID_LEN, 0); // pmc_cpuid: empty
        k.pmclog.emit(kind::INITIALIZE, &f);
        k.pmclog.schedule_all();
        Ok(())
    }

    /// `pmclog_flush`: EINVAL without a log; the buffered records go out.
    pub(super) fn flush_log(k: &mut Kernel) -> Result<(), Errno> {
        if !k.owns_logfile {
            return Err(Errno::EINVAL);
        }
        k.pmclog.schedule_all();
        Ok(())
    }

    /// `pmclog_close` (CLOSELOG, and CONFIGURELOG with a negative fd
    /// before `pmclog_deconfigure_log`).
    pub(super) fn close_log(k: &mut Kernel) {
        k.pmclog.close();
    }

    /// `pmclog_process_userlog`.
    pub(super) fn log_userdata(k: &mut Kernel, value: u32) {
        k.pmclog.emit(kind::USERDATA, &u32s(&[value, 0]));
    }

    /// What `pmc_attach_one_process` logs after linking PMC `idx` to `pid`
    /// with a log configured: PMCATTACH with the executable's path, and a
    /// sampling PMC's `pmc_log_process_mappings`.
    pub(super) fn log_attach(&self, k: &mut Kernel, idx: usize, pid: i32) {
        if !k.owns_logfile {
            return;
        }
        let (id, sampling) = (k.pmcs[idx].id, k.pmcs[idx].mode.is_sampling());
        let image = k.pmclog.images.get(&pid).cloned().unwrap_or_default();
        let mut f = u32s(&[id, pid as u32]);
        f.extend_from_slice(image.path.as_bytes());
        f.push(0);
        k.pmclog.emit(kind::PMCATTACH, &f);
        if sampling {
            for (start, path) in &image.mappings {
                k.pmclog.map_in(pid, *start, path);
            }
        }
    }

    /// `pmc_start` of a sampling PMC: the kernel's mappings, once per
    /// owner descriptor (`pmc_log_kernel_mappings` sets
    /// `PMC_PO_INITIAL_MAPPINGS_DONE` whether or not a log takes the
    /// MAP_IN; a log's close does not clear it).
    pub(super) fn log_start(k: &mut Kernel, idx: usize) {
        if k.pmcs[idx].mode.is_sampling() && !k.pmclog.kernel_mappings_done {
            k.pmclog.kernel_mappings_done = true;
            k.pmclog.map_in(-1, KERNEL_START, KERNEL_PATH);
        }
    }

    /// `pmc_process_exit`, for each PMC attached to the exiting `pid`: a
    /// counting PMC that needs the log logs PROCEXIT with `pp_pmcval`.
    pub(super) fn log_exit(k: &mut Kernel, pid: i32) {
        let exits: Vec<u32> = k
            .pmcs
            .iter()
            .filter(|p| p.targets.contains(&pid))
            .filter(|p| p.flags & abi::PMC_F_NEEDS_LOGFILE != 0 && !p.mode.is_sampling())
            .map(|p| p.id)
            .collect();
        for id in exits {
            let value = k.pmclog.pmcval.remove(&(id, pid)).unwrap_or(0);
            let mut f = u32s(&[id, pid as u32]);
            f.extend_from_slice(&value.to_ne_bytes());
            k.pmclog.emit(kind::PROCEXIT, &f);
        }
    }

    /// Adds `events` counted for `pid` by PMC `id` to the process's value.
    pub(super) fn add_process_value(log: &mut Pmclog, id: u32, pid: i32, events: u64) {
        let v = log.pmcval.entry((id, pid)).or_default();
        *v = v.wrapping_add(events);
    }

    /// Makes every PMCALLOCATE fail with `errno` (`None`: succeed again),
    /// as a class's `pcd_allocate_pmc` refuses an event the hardware
    /// cannot count.
    pub fn refuse_allocations(&self, errno: Option<Errno>) {
        self.lock().refuse_allocate = errno;
    }
}

/// PMCRW's old value of a RUNNING sampling process PMC on its owner:
/// `pcd_read_pmc` of a sampling PMC gives the events left before the next
/// overflow (the hardware counts up from `-reloadcount`).
pub(super) fn events_to_overflow(count: u64, hw: u64) -> u64 {
    let count = count.max(1);
    count - hw % count
}
