//! One perf record as the backend event it says: samples (with their
//! callchain and user stack), mappings, execs, forks, exits, counter
//! values at context switches and exits, and losses.

use std::sync::Arc;

use pmc_linux::record::{Record, Sample};

use super::callchain;
use crate::backend::event::BackendEvent;
use crate::sample::{UserRegs, UserStack};

/// The backend event one perf record says (`None`: nothing to log).
pub(super) fn backend_event(
    record: &Record<'_>,
    sampling: bool,
    user_only: bool,
    root: Option<&(u32, Arc<[pmc_linux::event::Event]>)>,
) -> Option<(u64, BackendEvent)> {
    Some(match record {
        Record::Sample(s) if sampling => {
            let mut user = s.is_user();
            let mut pc = s.ip().unwrap_or(0);
            let mut callchain = s.callchain().map(|pcs| callchain::split(user, pcs.iter()));
            // A kernel-mode sample's user registers are the ones it
            // entered the kernel with: its user stack unwinds from there
            // (perf's `--call-graph dwarf` does too).
            let user_stack = user_stack(s);
            if user_only && !user {
                // Skid: a user-only counter overflowed in user mode but
                // its interrupt came after the entry to the kernel (a
                // system call), whose pc the kernel then reports. The
                // sample is the user pc the kernel was entered from (the
                // callchain's user part starts with it), as hwpmc, which
                // takes a `usr` PMC's pc from the trap frame, logs it.
                let entered_from = callchain
                    .as_ref()
                    .and_then(|c| c.user.first().copied())
                    .or_else(|| user_stack.as_ref().map(|u| u.regs.pc));
                if let Some(user_pc) = entered_from {
                    pc = user_pc;
                    user = true;
                    if let Some(c) = &mut callchain {
                        c.kernel.clear();
                    }
                }
            }
            (
                s.time().unwrap_or(0),
                BackendEvent::Sample {
                    pid: s.pid().unwrap_or(0),
                    tid: s.tid().unwrap_or(0),
                    cpu: s.cpu().unwrap_or(0),
                    user,
                    pc,
                    callchain,
                    user_stack,
                },
            )
        }
        // MAP_IN's start is the executable mapping's start address, as hwpmc
        // logs it (hwpmc_mod.c `pmc_log_process_mappings`: `entry->start`);
        // perf reports executable mmaps only (`mmap_data` is off).
        Record::Mmap2 {
            pid,
            addr,
            len,
            pgoff,
            filename,
            sample_id,
            ..
        }
        | Record::Mmap {
            pid,
            addr,
            len,
            pgoff,
            filename,
            sample_id,
            ..
        } => (
            sample_id.time.unwrap_or(0),
            BackendEvent::Mapping {
                pid: *pid,
                start: *addr,
                len: *len,
                pgoff: *pgoff,
                path: String::from_utf8_lossy(filename).into_owned(),
            },
        ),
        Record::Fork {
            pid, ppid, time, ..
        } if pid != ppid => (
            *time,
            BackendEvent::Fork {
                parent: *ppid,
                child: *pid,
            },
        ),
        Record::Fork { pid, tid, time, .. } => (
            *time,
            BackendEvent::ThreadCreate {
                pid: *pid,
                tid: *tid,
            },
        ),
        // A child's value as it exits (INHERIT_STAT), possibly in another
        // CPU's ring than its EXIT.
        Record::Read {
            pid,
            values,
            sample_id,
            ..
        } => (
            sample_id.time.unwrap_or(0),
            BackendEvent::ExitValue {
                pid: *pid,
                value: values.values().map(|v| v.value).sum(),
            },
        ),
        Record::Exit { pid, tid, time, .. } if pid == tid => (
            *time,
            BackendEvent::ProcessExit {
                pid: *pid,
                value: root.filter(|(r, _)| r == pid).map(|(_, events)| {
                    events
                        .iter()
                        .filter_map(|e| e.read_timed().ok())
                        .map(|c| c.value)
                        .sum()
                }),
            },
        ),
        Record::Exit { pid, tid, time, .. } => (
            *time,
            BackendEvent::ThreadExit {
                pid: *pid,
                tid: *tid,
            },
        ),
        Record::Lost {
            lost, sample_id, ..
        }
        | Record::LostSamples { lost, sample_id } => (
            sample_id.time.unwrap_or(0),
            BackendEvent::Lost { count: *lost },
        ),
        _ => return None,
    })
}

/// perf's register numbers (`arch/*/include/uapi/asm/perf_regs.h`) of
/// the registers an unwind starts from, in mask order: x86-64 BP (6), SP
/// (7), IP (8); AArch64 X29 (29), LR (30), SP (31), PC (32).
#[cfg(target_arch = "aarch64")]
pub(super) const UNWIND_REGS_MASK: u64 = 0xf << 29;
#[cfg(not(target_arch = "aarch64"))]
pub(super) const UNWIND_REGS_MASK: u64 = 0b111 << 6;

/// The user registers and stack copy of a sample, when it has them (a
/// 64-bit ABI, the registers the mask asked for, a non-empty copy).
fn user_stack(s: &Sample<'_>) -> Option<UserStack> {
    let fields = s.fields().ok()?;
    let regs = fields.regs_user?;
    // PERF_SAMPLE_REGS_ABI_64; a 32-bit task's registers unwind otherwise.
    if regs.abi != 2 {
        return None;
    }
    let r = |i: usize| regs.regs.get(i);
    #[cfg(target_arch = "aarch64")]
    let regs = UserRegs {
        fp: r(0)?,
        lr: r(1)?,
        sp: r(2)?,
        pc: r(3)?,
    };
    #[cfg(not(target_arch = "aarch64"))]
    let regs = UserRegs {
        fp: r(0)?,
        sp: r(1)?,
        pc: r(2)?,
        lr: 0,
    };
    let bytes = fields.stack_user?.valid_bytes();
    if bytes.is_empty() {
        return None;
    }
    Some(UserStack {
        regs,
        bytes: bytes.to_vec(),
    })
}

/// The slice a sibling's sample reports: the group's first value is the
/// counter's total on (tid, cpu).
pub(super) fn slice_event(s: &Sample<'_>) -> Option<(u64, BackendEvent)> {
    let total = s.read()?.values().next()?.value;
    Some((
        s.time().unwrap_or(0),
        BackendEvent::Slice {
            pid: s.pid()?,
            tid: s.tid()?,
            cpu: s.cpu().unwrap_or(0),
            total,
        },
    ))
}
