//! [`LogRecord`] (one variant per pmclog record type), its type numbers and
//! pmcstat -R's one-line form; [`LogEvent`], a record with its place in the
//! stream. The wire form is in `encode.rs` and `decode.rs`.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::kind;

/// One pmclog record.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[allow(missing_docs)]
pub enum LogRecord {
    Closelog,
    /// Samples were dropped (buffer full). FreeBSD's record has no payload;
    /// `lost` is the count this crate writes in the header's spare word,
    /// `None` when reading a log not written by this crate (the word is
    /// uninitialised there).
    Dropnotify {
        lost: Option<u32>,
    },
    Initialize {
        /// `pl_version`: `PMC_VERSION` of the writer.
        version: u32,
        /// `pl_cpu`: an `enum pmc_cputype` value (see [`cpu`](super::cpu)).
        arch: u32,
        /// Timestamp ticks per second.
        tsc_freq: u64,
        /// `pl_ts`: wall-clock time at the start of the log.
        time_sec: u64,
        time_nsec: u64,
        /// `pl_cpuid`: `kern.hwpmc.cpuid`, e.g. `GenuineIntel-6-55-4`.
        cpuid: String,
        /// Whether `pl_cpuid` ends with [`ORIGIN_MARK`](super::ORIGIN_MARK) (written by this
        /// crate; at most 55 bytes of `cpuid` are kept then).
        marked: bool,
    },
    PmcAllocate {
        pmcid: u32,
        event: u32,
        flags: u32,
        rate: u64,
    },
    PmcAttach {
        pmcid: u32,
        pid: u32,
        path: String,
    },
    PmcDetach {
        pmcid: u32,
        pid: u32,
    },
    ProcCsw {
        pmcid: u32,
        value: u64,
        pid: u32,
        tid: u32,
    },
    /// FreeBSD 14 and 15 ([`PMC_VERSION`](super::PMC_VERSION), written):
    /// `entry` is `pl_base` and `dynaddr` is `pl_dyn` (libpmc's
    /// `pl_baseaddr`/`pl_dynaddr`). A FreeBSD 12–13 log
    /// ([`PMC_VERSION_9`](super::PMC_VERSION_9)) has one address,
    /// `pl_start` (libpmc's `pl_entryaddr`), read as `entry` with
    /// `dynaddr` 0.
    ProcExec {
        pid: u32,
        pmcid: u32,
        entry: u64,
        dynaddr: u64,
        path: String,
    },
    ProcExit {
        pmcid: u32,
        pid: u32,
        value: u64,
    },
    ProcFork {
        oldpid: u32,
        newpid: u32,
    },
    SysExit {
        pid: u32,
    },
    Userdata {
        value: u32,
    },
    MapIn {
        /// `u32::MAX` (-1) for the kernel.
        pid: u32,
        /// See the module docs for the convention.
        start: u64,
        path: String,
    },
    MapOut {
        pid: u32,
        start: u64,
        end: u64,
    },
    Callchain {
        pid: u32,
        tid: u32,
        pmcid: u32,
        cpu: u16,
        userspace: bool,
        pcs: Vec<u64>,
    },
    /// `struct pmclog_pmcallocatedyn`, name at offset 32 as the header and
    /// libpmc's reader have it. (hwpmc_logging.c `pmclog_process_pmcallocate`
    /// emits the reload count there before the name, overrunning the
    /// record; libpmc, and this reader, then see the count's bytes as the
    /// name.)
    PmcAllocateDyn {
        pmcid: u32,
        event: u32,
        flags: u32,
        name: String,
    },
    ThrCreate {
        tid: u32,
        pid: u32,
        flags: u32,
        name: String,
    },
    ThrExit {
        tid: u32,
    },
    ProcCreate {
        pid: u32,
        flags: u32,
        name: String,
    },
}

/// A record with its place in the stream.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LogEvent {
    /// Byte offset of the record's first byte in the stream.
    pub offset: u64,
    /// libpmc's `pl_offset`: the stream offset just past this record.
    pub end_offset: u64,
    /// libpmc's `pl_count`: records read so far, this one included.
    pub count: u64,
    /// The header's timestamp.
    pub timestamp: u64,
    /// The record.
    pub record: LogRecord,
}

impl From<LogRecord> for LogEvent {
    /// A record outside any stream (offsets, count and timestamp 0): for
    /// building synthetic logs to feed reports.
    fn from(record: LogRecord) -> LogEvent {
        LogEvent {
            offset: 0,
            end_offset: 0,
            count: 0,
            timestamp: 0,
            record,
        }
    }
}

impl LogRecord {
    /// The record type number.
    pub fn kind(&self) -> u8 {
        use LogRecord::*;
        match self {
            Closelog => kind::CLOSELOG,
            Dropnotify { .. } => kind::DROPNOTIFY,
            Initialize { .. } => kind::INITIALIZE,
            PmcAllocate { .. } => kind::PMCALLOCATE,
            PmcAttach { .. } => kind::PMCATTACH,
            PmcDetach { .. } => kind::PMCDETACH,
            ProcCsw { .. } => kind::PROCCSW,
            ProcExec { .. } => kind::PROCEXEC,
            ProcExit { .. } => kind::PROCEXIT,
            ProcFork { .. } => kind::PROCFORK,
            SysExit { .. } => kind::SYSEXIT,
            Userdata { .. } => kind::USERDATA,
            MapIn { .. } => kind::MAP_IN,
            MapOut { .. } => kind::MAP_OUT,
            Callchain { .. } => kind::CALLCHAIN,
            PmcAllocateDyn { .. } => kind::PMCALLOCATEDYN,
            ThrCreate { .. } => kind::THR_CREATE,
            ThrExit { .. } => kind::THR_EXIT,
            ProcCreate { .. } => kind::PROC_CREATE,
        }
    }
}

impl fmt::Display for LogRecord {
    /// pmcstat -R's one-line form.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use LogRecord::*;
        match self {
            Closelog => write!(f, "closelog"),
            Dropnotify { lost: Some(lost) } => write!(f, "drop {lost}"),
            Dropnotify { lost: None } => write!(f, "drop"),
            Initialize {
                version,
                arch,
                tsc_freq,
                cpuid,
                ..
            } => write!(f, "initlog 0x{version:x} {arch} {tsc_freq} \"{cpuid}\""),
            PmcAllocate {
                pmcid,
                event,
                flags,
                rate,
            } => write!(f, "allocate 0x{pmcid:x} 0x{event:x} 0x{flags:x} {rate}"),
            PmcAllocateDyn {
                pmcid,
                event,
                flags,
                name,
            } => write!(
                f,
                "allocatedyn 0x{pmcid:x} 0x{event:x} 0x{flags:x} \"{name}\""
            ),
            PmcAttach { pmcid, pid, path } => write!(f, "attach 0x{pmcid:x} {pid} \"{path}\""),
            PmcDetach { pmcid, pid } => write!(f, "detach 0x{pmcid:x} {pid}"),
            ProcCsw {
                pmcid,
                value,
                pid,
                tid,
            } => write!(f, "cswval 0x{pmcid:x} {pid} {tid} {value}"),
            ProcExec {
                pid,
                pmcid,
                entry,
                path,
                ..
            } => write!(f, "exec 0x{pmcid:x} {pid} 0x{entry:x} \"{path}\""),
            ProcExit { pmcid, pid, value } => write!(f, "exitval 0x{pmcid:x} {pid} {value}"),
            ProcFork { oldpid, newpid } => write!(f, "fork {oldpid} {newpid}"),
            SysExit { pid } => write!(f, "exit {pid}"),
            Userdata { value } => write!(f, "userdata 0x{value:x}"),
            MapIn { pid, start, path } => {
                write!(f, "map-in {} 0x{start:x} \"{path}\"", *pid as i32)
            }
            MapOut { pid, start, end } => {
                write!(f, "map-out {} 0x{start:x} 0x{end:x}", *pid as i32)
            }
            Callchain {
                pid,
                tid,
                pmcid,
                cpu,
                userspace,
                pcs,
            } => {
                write!(
                    f,
                    "callchain {pid} {tid} 0x{pmcid:x} {cpu} {} {}",
                    if *userspace { "u" } else { "s" },
                    pcs.len()
                )?;
                for pc in pcs {
                    write!(f, " 0x{pc:x}")?;
                }
                Ok(())
            }
            ThrCreate { tid, pid, name, .. } => write!(f, "thr-create {tid} {pid} \"{name}\""),
            ThrExit { tid } => write!(f, "thr-exit {tid}"),
            ProcCreate { pid, name, .. } => write!(f, "proc-create {pid} \"{name}\""),
        }
    }
}
