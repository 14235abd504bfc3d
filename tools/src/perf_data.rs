//! A perf.data as pmclog records: what pmcstat `-R` reports of a file
//! `perf record` wrote, and what `-R perf.data -O LOG` writes.
//!
//! The records are those the live Linux backend and hwpmc's logging rules
//! (`pmc::log` `translate.rs`) would have written for the same recording:
//! INITIALIZE (the CPU from perf's `HEADER_CPUID`), one PMCALLOCATEDYN per
//! perf event (pmcid = the event's index, its perf name), PROCEXEC for an
//! exec (its path from the exec's first file mapping, as
//! `sampling/exec_path.rs` names it live), MAP_IN for each executable
//! mapping at its start address (the kernel's at its text start), PROCFORK
//! and THR_CREATE for FORK, SYSEXIT and THR_EXIT for EXIT, DROPNOTIFY for
//! LOST and LOST_SAMPLES, one CALLCHAIN per sample, CLOSELOG at the end.
//! Every record's timestamp is perf's time of it (the sample's time,
//! exactly, in nanoseconds of perf's clock).
//!
//! A sample's callchain is split at perf's context markers as the live
//! backend splits it ([`pmc_linux::record::split_callchain`]): a user-mode sample logs its
//! user frames, a kernel-mode one its kernel frames. A `--call-graph dwarf`
//! sample (user registers and stack) is unwound with
//! [`pmc::sample::DwarfUnwinder`], fed the recording's mappings, execs,
//! forks and exits in time order, so its user chain is the sample's pc and
//! the unwound frames, as live pmcstat logs DWARF stacks.

use std::collections::{HashMap, VecDeque};

use pmc::log::LogRecord;
use pmc::log::cpu::CpuIdentity;
use pmc::sample::{DwarfUnwinder, Mapping, StackSample, StackUnwinder, UserRegs, UserStack};
use pmc_linux::attr::SampleType;
use pmc_linux::perf_data::{DataEvent, PerfData, PerfDataError};
use pmc_linux::record::{Record, Sample, SplitCallchain, split_callchain};

/// `PROT_EXEC` in MMAP2's `prot`.
const PROT_EXEC: u32 = 4;
/// The path the report knows the kernel by.
const KERNEL: &str = "[kernel.kallsyms]";

/// Where an unwind's registers are among a sample's user registers.
#[derive(Clone, Copy, Debug)]
struct RegIndex {
    pc: usize,
    sp: usize,
    fp: usize,
    lr: Option<usize>,
}

/// A perf.data read as pmclog records (see the module docs).
#[derive(Debug)]
pub struct Converter {
    data: PerfData,
    out: VecDeque<(u64, u64, u64, LogRecord)>,
    /// Exec COMMs waiting for their image's first mapping: (time, comm,
    /// pmcid, offset).
    pending_exec: HashMap<u32, (u64, String, u32, u64)>,
    unwinder: Option<DwarfUnwinder>,
    regs: Vec<Option<RegIndex>>,
    started: bool,
    ended: bool,
    error: Option<PerfDataError>,
    count: u64,
    offset: u64,
    last_time: u64,
    written: std::time::SystemTime,
    kernel_text: Option<u64>,
}

impl Converter {
    /// Converts `data`; `written`: when the recording was made (the file's
    /// modification time), INITIALIZE's wall-clock time.
    pub fn new(data: PerfData, written: std::time::SystemTime) -> Converter {
        let arch = data.features().arch.clone();
        let regs: Vec<Option<RegIndex>> = data
            .attrs()
            .iter()
            .map(|a| {
                let wanted = SampleType::REGS_USER | SampleType::STACK_USER;
                a.sample_type
                    .contains(wanted)
                    .then(|| reg_index(arch.as_deref(), a.regs_user))
                    .flatten()
            })
            .collect();
        let unwinder = regs.iter().any(Option::is_some).then(DwarfUnwinder::new);
        Converter {
            data,
            out: VecDeque::new(),
            pending_exec: HashMap::new(),
            unwinder,
            regs,
            started: false,
            ended: false,
            error: None,
            count: 0,
            offset: 0,
            last_time: 0,
            written,
            kernel_text: None,
        }
    }

    /// The recording's CPU as INITIALIZE names it (from `HEADER_CPUID`).
    pub fn cpu(&self) -> CpuIdentity {
        cpu_identity(self.data.features().cpuid.as_deref())
    }

    /// The objects' build ids perf stored, by path (the path MAP_IN names).
    pub fn build_ids(&self) -> HashMap<String, Vec<u8>> {
        self.data
            .features()
            .build_ids
            .iter()
            .map(|b| {
                let path = if b.kernel && b.path.starts_with('[') {
                    KERNEL.to_string()
                } else {
                    b.path.clone()
                };
                (path, b.id.clone())
            })
            .collect()
    }

    /// The offset in the perf.data just past the last record read.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    fn push(&mut self, at: u64, end: u64, time: u64, record: LogRecord) {
        self.out.push_back((at, end, time, record));
    }

    fn start(&mut self) {
        let cpu = self.cpu();
        let wall = self
            .written
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        self.push(
            0,
            0,
            0,
            LogRecord::Initialize {
                version: pmc::log::VERSION,
                arch: cpu.cputype,
                tsc_freq: pmc::log::TIMESTAMP_FREQ,
                time_sec: wall.as_secs(),
                time_nsec: u64::from(wall.subsec_nanos()),
                cpuid: cpu.cpuid,
                marked: true,
            },
        );
        let allocations: Vec<LogRecord> = self
            .data
            .attrs()
            .iter()
            .enumerate()
            .map(|(i, a)| {
                let callchain = a.sample_type.contains(SampleType::CALLCHAIN)
                    || a.sample_type.contains(SampleType::STACK_USER);
                LogRecord::PmcAllocateDyn {
                    pmcid: i as u32,
                    event: 0,
                    flags: if callchain {
                        pmc::Flags::CALLCHAIN.bits()
                    } else {
                        0
                    },
                    name: a.name.clone(),
                }
            })
            .collect();
        for r in allocations {
            self.push(0, 0, 0, r);
        }
    }

    /// The PROCEXEC of `pid`'s pending exec, naming `path` (else its comm,
    /// as live when no mapping comes).
    fn flush_exec(&mut self, pid: u32, path: Option<String>) {
        if let Some((time, comm, pmcid, at)) = self.pending_exec.remove(&pid) {
            self.push(
                at,
                at,
                time,
                LogRecord::ProcExec {
                    pid,
                    pmcid,
                    entry: 0,
                    dynaddr: 0,
                    path: path.unwrap_or(comm),
                },
            );
        }
    }

    fn mapping(&mut self, ev: &DataEvent, pid: u32, m: Mapping, time: u64) {
        let (at, end) = (ev.offset, ev.offset + ev.bytes().len() as u64);
        if pid == u32::MAX {
            // The kernel (its modules are not logged, as live).
            if m.path.starts_with(KERNEL) {
                let start = self.kernel_start(m.start, m.pgoff);
                self.push(
                    at,
                    end,
                    time,
                    LogRecord::MapIn {
                        pid,
                        start,
                        path: KERNEL.into(),
                    },
                );
            }
            return;
        }
        if m.path.starts_with('/') && self.pending_exec.contains_key(&pid) {
            self.flush_exec(pid, Some(m.path.clone()));
        }
        if let Some(u) = &mut self.unwinder {
            u.mapping(pid, &m);
        }
        self.push(
            at,
            end,
            time,
            LogRecord::MapIn {
                pid,
                start: m.start,
                path: m.path,
            },
        );
    }

    /// The kernel's MAP_IN start: `_stext`, as live logs it. perf records
    /// the map's start and `_text` (its pgoff); when the running kernel's
    /// `_text` is that, this is the recording's boot and its `_stext` is
    /// the one.
    fn kernel_start(&mut self, start: u64, text: u64) -> u64 {
        let running = *self.kernel_text.get_or_insert_with(|| running_stext(text));
        if running != 0 {
            running
        } else if text != 0 {
            text
        } else {
            start
        }
    }

    fn convert(&mut self, ev: &DataEvent) -> Result<(), PerfDataError> {
        let record = ev.record()?;
        let time = ev.time.unwrap_or(0);
        let (at, end) = (ev.offset, ev.offset + ev.bytes().len() as u64);
        let pmcid = ev.attr as u32;
        match record {
            Record::Sample(s) => {
                let r = self.callchain(ev, &s, time);
                self.push(at, end, time, r);
            }
            Record::Comm {
                pid,
                tid,
                comm,
                exec: true,
                ..
            } if pid == tid => {
                // A second exec before the first one's mapping: the first
                // keeps its comm.
                self.flush_exec(pid, None);
                let comm = String::from_utf8_lossy(comm).into_owned();
                self.pending_exec.insert(pid, (time, comm, pmcid, at));
                if let Some(u) = &mut self.unwinder {
                    u.exec(pid);
                }
            }
            Record::Mmap {
                pid,
                addr,
                len,
                pgoff,
                filename,
                data: false,
                ..
            } => self.mapping(ev, pid, exec_mapping(addr, len, pgoff, filename), time),
            Record::Mmap2 {
                pid,
                addr,
                len,
                pgoff,
                prot,
                filename,
                ..
            } if prot & PROT_EXEC != 0 => {
                self.mapping(ev, pid, exec_mapping(addr, len, pgoff, filename), time)
            }
            Record::Fork { pid, ppid, tid, .. } => {
                if pid != ppid {
                    if let Some(u) = &mut self.unwinder {
                        u.fork(ppid, pid);
                    }
                    let r = LogRecord::ProcFork {
                        oldpid: ppid,
                        newpid: pid,
                    };
                    self.push(at, end, time, r);
                } else {
                    let r = LogRecord::ThrCreate {
                        tid,
                        pid,
                        flags: 0,
                        name: String::new(),
                    };
                    self.push(at, end, time, r);
                }
            }
            Record::Exit { pid, tid, .. } => {
                if pid == tid {
                    self.flush_exec(pid, None);
                    if let Some(u) = &mut self.unwinder {
                        u.exit(pid);
                    }
                    self.push(at, end, time, LogRecord::SysExit { pid });
                } else {
                    self.push(at, end, time, LogRecord::ThrExit { tid });
                }
            }
            Record::Lost { lost, .. } | Record::LostSamples { lost, .. } => {
                let lost = Some(u32::try_from(lost).unwrap_or(u32::MAX));
                self.push(at, end, time, LogRecord::Dropnotify { lost });
            }
            _ => {}
        }
        Ok(())
    }

    /// A sample's CALLCHAIN, as the live backend and the logging rules make
    /// it.
    fn callchain(&mut self, ev: &DataEvent, s: &Sample<'_>, time: u64) -> LogRecord {
        let attr = &self.data.attrs()[ev.attr];
        let mut user = s.is_user();
        let mut pc = s.ip().unwrap_or(0);
        let (pid, tid) = (s.pid().unwrap_or(0), s.tid().unwrap_or(0));
        let mut chain = s.callchain().map(|c| split_callchain(user, c.iter()));
        let stack = self.regs[ev.attr].and_then(|ix| user_stack(s, ix));
        if let (Some(stack), Some(u)) = (&stack, &mut self.unwinder) {
            let frames = u.unwind(&StackSample {
                pid,
                tid,
                time,
                stack,
            });
            if !frames.is_empty() {
                chain.get_or_insert_with(SplitCallchain::default).user = frames;
            }
        }
        if attr.exclude_kernel && !user {
            // Skid into the kernel of a user-only event: the user pc the
            // kernel was entered from, as live (sampling.rs `neutral`).
            let entered = chain
                .as_ref()
                .and_then(|c| c.user.first().copied())
                .or_else(|| stack.as_ref().map(|u| u.regs.pc));
            if let Some(p) = entered {
                pc = p;
                user = true;
                if let Some(c) = &mut chain {
                    c.kernel.clear();
                }
            }
        }
        let (userspace, mut pcs) = match chain {
            None => (user, vec![pc]),
            Some(c) if user => (true, c.user),
            Some(c) => (false, c.kernel),
        };
        if pcs.is_empty() {
            pcs.push(pc);
        }
        pcs.truncate(pmc::log::CALLCHAIN_MAX);
        LogRecord::Callchain {
            pid,
            tid,
            pmcid: ev.attr as u32,
            cpu: u16::try_from(s.cpu().unwrap_or(0)).unwrap_or(u16::MAX),
            userspace,
            pcs,
        }
    }

    fn finish(&mut self) {
        let mut pids: Vec<u32> = self.pending_exec.keys().copied().collect();
        pids.sort_unstable();
        for pid in pids {
            self.flush_exec(pid, None);
        }
    }
}

impl Iterator for Converter {
    type Item = Result<pmc::log::LogEvent, PerfDataError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some((offset, end, timestamp, record)) = self.out.pop_front() {
                self.count += 1;
                self.offset = self.offset.max(end);
                return Some(Ok(pmc::log::LogEvent {
                    offset,
                    end_offset: end,
                    count: self.count,
                    timestamp,
                    record,
                }));
            }
            if self.ended {
                return self.error.take().map(Err);
            }
            if !self.started {
                self.started = true;
                self.start();
                continue;
            }
            match self.data.next_event() {
                Some(Ok(ev)) => {
                    self.last_time = self.last_time.max(ev.time.unwrap_or(0));
                    if let Err(e) = self.convert(&ev) {
                        self.finish();
                        self.ended = true;
                        self.error = Some(e);
                    }
                }
                Some(Err(e)) => {
                    self.finish();
                    self.ended = true;
                    self.error = Some(e);
                }
                None => {
                    self.finish();
                    self.ended = true;
                    let (t, at) = (self.last_time, self.offset);
                    self.push(at, at, t, LogRecord::Closelog);
                }
            }
        }
    }
}

/// An executable MMAP or MMAP2 as the unwinder and the log take it.
fn exec_mapping(start: u64, len: u64, pgoff: u64, filename: &[u8]) -> Mapping {
    Mapping {
        start,
        len,
        pgoff,
        path: String::from_utf8_lossy(filename).into_owned(),
    }
}

/// perf's register numbers of what an unwind starts from
/// (`arch/*/include/uapi/asm/perf_regs.h`), as indices among the sample's
/// registers (those of `mask`, in bit order); `None` unless the mask has
/// them all.
fn reg_index(arch: Option<&str>, mask: u64) -> Option<RegIndex> {
    let at = |bit: u32| {
        (mask >> bit & 1 == 1).then(|| (mask & ((1u64 << bit) - 1)).count_ones() as usize)
    };
    let arm64 = match arch {
        Some(a) => a == "aarch64" || a == "arm64",
        None => cfg!(target_arch = "aarch64"),
    };
    if arm64 {
        // X29 29, LR 30, SP 31, PC 32.
        Some(RegIndex {
            fp: at(29)?,
            lr: Some(at(30)?),
            sp: at(31)?,
            pc: at(32)?,
        })
    } else {
        // x86-64: BP 6, SP 7, IP 8.
        Some(RegIndex {
            fp: at(6)?,
            sp: at(7)?,
            pc: at(8)?,
            lr: None,
        })
    }
}

/// A sample's user registers and stack copy (a 64-bit ABI, a non-empty
/// copy).
fn user_stack(s: &Sample<'_>, ix: RegIndex) -> Option<UserStack> {
    let f = s.fields().ok()?;
    let regs = f.regs_user?;
    if regs.abi != 2 {
        return None;
    }
    let r = |i: usize| regs.regs.get(i);
    let bytes = f.stack_user?.valid_bytes();
    if bytes.is_empty() {
        return None;
    }
    Some(UserStack {
        regs: UserRegs {
            pc: r(ix.pc)?,
            sp: r(ix.sp)?,
            fp: r(ix.fp)?,
            lr: match ix.lr {
                Some(i) => r(i)?,
                None => 0,
            },
        },
        bytes: bytes.to_vec(),
    })
}

/// INITIALIZE's CPU from perf's `HEADER_CPUID`: x86's
/// `vendor,family,model,stepping`, arm64's MIDR.
fn cpu_identity(cpuid: Option<&str>) -> CpuIdentity {
    use pmc::log::cpu;
    let Some(id) = cpuid else {
        return CpuIdentity::unknown();
    };
    if let Some(midr) = cpu::midr(id) {
        return CpuIdentity {
            cputype: cpu::arm64_cputype(midr),
            cpuid: cpu::hwpmc_cpuid_arm64(midr),
        };
    }
    let f: Vec<&str> = id.split(',').map(str::trim).collect();
    match f[..] {
        [vendor, family, model, stepping, ..] => {
            let n = |s: &str| s.parse::<u32>().ok();
            match (n(family), n(model), n(stepping)) {
                (Some(fa), Some(m), Some(st)) => CpuIdentity {
                    cputype: cpu::pmc_cputype(vendor, fa, m, st),
                    cpuid: cpu::hwpmc_cpuid(vendor, fa, m, st),
                },
                _ => CpuIdentity::unknown(),
            }
        }
        _ => CpuIdentity::unknown(),
    }
}

/// The running kernel's `_stext` when its `_text` is `text` (the
/// recording's boot), else 0.
fn running_stext(text: u64) -> u64 {
    use std::io::BufRead as _;
    let Ok(f) = std::fs::File::open("/proc/kallsyms") else {
        return 0;
    };
    let (mut text_here, mut stext) = (None, None);
    for line in std::io::BufReader::new(f).lines().map_while(Result::ok) {
        let mut w = line.split_whitespace();
        let (Some(addr), Some(_), Some(name)) = (w.next(), w.next(), w.next()) else {
            continue;
        };
        match name {
            "_text" => text_here = u64::from_str_radix(addr, 16).ok(),
            "_stext" => stext = u64::from_str_radix(addr, 16).ok(),
            _ => continue,
        }
        if text_here.is_some() && stext.is_some() {
            break;
        }
    }
    match (text_here, stext) {
        (Some(t), Some(s)) if t == text && t != 0 => s,
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unwind_registers_are_found_by_their_bits() {
        // perf's x86-64 dwarf mask: AX..R15 but the segment registers.
        let ix = reg_index(Some("x86_64"), 0xff0fff).expect("BP, SP, IP");
        assert_eq!((ix.fp, ix.sp, ix.pc), (6, 7, 8));
        let ix = reg_index(Some("x86_64"), 0b111 << 6).expect("BP, SP, IP");
        assert_eq!((ix.fp, ix.sp, ix.pc), (0, 1, 2));
        assert!(reg_index(Some("x86_64"), 0b11 << 6).is_none());
        let ix = reg_index(Some("aarch64"), (1 << 33) - 1).expect("X29, LR, SP, PC");
        assert_eq!((ix.fp, ix.lr, ix.sp, ix.pc), (29, Some(30), 31, 32));
    }

    #[test]
    fn the_cpu_comes_from_perfs_cpuid() {
        let c = cpu_identity(Some("GenuineIntel,6,85,7"));
        assert_eq!(c.cpuid, "GenuineIntel-6-55-7");
        assert_eq!(c.cputype, 0x99);
        let c = cpu_identity(Some("0x00000000410fd0c0"));
        assert_eq!(c.cputype, 0x602);
        assert_eq!(cpu_identity(None), CpuIdentity::unknown());
        assert_eq!(cpu_identity(Some("weird")), CpuIdentity::unknown());
    }
}
