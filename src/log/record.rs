//! [`LogRecord`] (one variant per pmclog record type), its type numbers and
//! pmcstat -R's text form (pmcstat_log.c's); [`LogEvent`], a record with its place in the
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
    /// pmcstat -R's text of the record, as usr.sbin/pmcstat/pmcstat_log.c
    /// `pmcstat_print_log` prints it through `PMCSTAT_PRINT_ENTRY`
    /// (pmcstat.h: the type as `"%-9s"`, then `" "` and the record's
    /// format): each field in FreeBSD's order and printf conversion (`%d`
    /// pids as signed, `%jd` values as signed, `%p` as `0x…`). A callchain
    /// is its own line then one `...` line per pc (lines joined by `\n`,
    /// no final newline). Fields FreeBSD does not print (a callchain's tid,
    /// PROCCSW's tid, DROPNOTIFY's count, PMCALLOCATE's rate) are not
    /// printed.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use LogRecord::*;
        // PMCSTAT_PRINT_ENTRY(T, ...): "%-9s", then " " and the fields.
        let entry = |f: &mut fmt::Formatter<'_>, kind: &str| write!(f, "{kind:<9} ");
        match self {
            Closelog => entry(f, "closelog"),
            Dropnotify { .. } => entry(f, "drop"),
            Initialize { version, arch, .. } => {
                entry(f, "initlog")?;
                // "0x%x \"%s\"": pl_version, pmc_name_of_cputype(pl_arch);
                // FreeBSD's printf writes a NULL %s as "(null)".
                let name = super::cpu::cputype_name(*arch).unwrap_or("(null)");
                write!(f, "0x{version:x} \"{name}\"")
            }
            MapIn { pid, start, path } => {
                entry(f, "map-in")?;
                write!(f, "{} 0x{start:x} \"{path}\"", *pid as i32)
            }
            MapOut { pid, start, end } => {
                entry(f, "map-out")?;
                write!(f, "{} 0x{start:x} 0x{end:x}", *pid as i32)
            }
            PmcAllocate {
                pmcid,
                event,
                flags,
                ..
            } => {
                entry(f, "allocate")?;
                // "0x%x \"%s\" 0x%x": pl_evname is pmclog(3)'s name of
                // pl_event; this crate has no table of FreeBSD's event
                // numbers, so it names the event as our libpmc's pmclog
                // does.
                write!(f, "0x{pmcid:x} \"event-0x{event:x}\" 0x{flags:x}")
            }
            PmcAllocateDyn {
                pmcid, flags, name, ..
            } => {
                entry(f, "allocatedyn")?;
                write!(f, "0x{pmcid:x} \"{name}\" 0x{flags:x}")
            }
            PmcAttach { pmcid, pid, path } => {
                entry(f, "attach")?;
                write!(f, "0x{pmcid:x} {} \"{path}\"", *pid as i32)
            }
            PmcDetach { pmcid, pid } => {
                entry(f, "detach")?;
                write!(f, "0x{pmcid:x} {}", *pid as i32)
            }
            ProcCsw {
                pmcid, value, pid, ..
            } => {
                entry(f, "cswval")?;
                write!(f, "0x{pmcid:x} {} {}", *pid as i32, *value as i64)
            }
            ProcCreate { pid, flags, name } => {
                entry(f, "create")?;
                write!(f, "{} {flags:x} \"{name}\"", *pid as i32)
            }
            ProcExec {
                pid,
                pmcid,
                entry: address,
                path,
                ..
            } => {
                entry(f, "exec")?;
                write!(f, "0x{pmcid:x} {} 0x{address:x} \"{path}\"", *pid as i32)
            }
            ProcExit { pmcid, pid, value } => {
                entry(f, "exitval")?;
                write!(f, "0x{pmcid:x} {} {}", *pid as i32, *value as i64)
            }
            ProcFork { oldpid, newpid } => {
                entry(f, "fork")?;
                write!(f, "{} {}", *oldpid as i32, *newpid as i32)
            }
            Userdata { value } => {
                entry(f, "userdata")?;
                write!(f, "0x{value:x}")
            }
            SysExit { pid } => {
                entry(f, "exit")?;
                write!(f, "{}", *pid as i32)
            }
            ThrCreate {
                tid,
                pid,
                flags,
                name,
            } => {
                entry(f, "thr-create")?;
                write!(f, "{} {} {flags:x} \"{name}\"", *tid as i32, *pid as i32)
            }
            ThrExit { tid } => {
                entry(f, "thr-exit")?;
                write!(f, "{}", *tid as i32)
            }
            Callchain {
                pid,
                pmcid,
                cpu,
                userspace,
                pcs,
                ..
            } => {
                entry(f, "callchain")?;
                // "%d 0x%x %d %d %c": pid, pmcid, cpu, npc, 'u' or 's'.
                write!(
                    f,
                    "{} 0x{pmcid:x} {cpu} {} {}",
                    *pid as i32,
                    pcs.len(),
                    if *userspace { 'u' } else { 's' }
                )?;
                // Then PMCSTAT_PRINT_ENTRY("...", "%p") per pc.
                for pc in pcs {
                    f.write_str("\n")?;
                    entry(f, "...")?;
                    write!(f, "0x{pc:x}")?;
                }
                Ok(())
            }
        }
    }
}
