//! pmclog: FreeBSD's hwpmc log format, written and read.
//!
//! The layouts are those of `sys/sys/pmclog.h` in FreeBSD 12–14 (log
//! version [`PMC_VERSION`] `0x09030000`, pmclog "V6"): every record starts
//! with `PMCLOG_ENTRY_HEADER` — a `u32` header (magic `0xEE` in bits
//! 24–31, the type in bits 16–23, the length in bytes, header included, in
//! bits 0–15), a spare `u32` and a `u64` timestamp — followed by the
//! record's `__packed` fields in native byte order. hwpmc_logging.c's
//! `_PMCLOG_RESERVE` rounds every length up to 4 bytes (not 8), so records
//! with a path or a `MAXCOMLEN + 1` name end on a 4-byte boundary, and it
//! never writes the spare word nor most `pl_pad` words: readers must not
//! look at them.
//!
//! Record sizes (bytes; offsets in [`LogRecord::encode`]):
//!
//! | type | size |
//! |---|---|
//! | CLOSELOG, DROPNOTIFY | 16 |
//! | INITIALIZE | 112 |
//! | PMCALLOCATE | 40 |
//! | PMCATTACH | 24 + path + NUL, rounded up to 4 |
//! | PMCDETACH, PROCFORK, SYSEXIT, USERDATA, THR_EXIT | 24 |
//! | PROCCSW | 40 |
//! | PROCEXEC | 32 + path + NUL, rounded up to 4 (FreeBSD 15: 40 + …) |
//! | PROCEXIT | 32 |
//! | MAP_IN | 24 + path + NUL, rounded up to 4 |
//! | MAP_OUT | 40 |
//! | CALLCHAIN | 32 + 8 per pc |
//! | PMCALLOCATEDYN | 96 |
//! | THR_CREATE | 52 |
//! | PROC_CREATE | 44 |
//!
//! Conventions of the records this crate writes:
//! - timestamps are `CLOCK_MONOTONIC` nanoseconds, so INITIALIZE's
//!   `tsc_freq` is 1 000 000 000 ([`TIMESTAMP_FREQ`]);
//! - DROPNOTIFY carries the number of lost samples in the header's spare
//!   word. FreeBSD leaves that word uninitialised, so a reader trusts it
//!   only in a log whose INITIALIZE carries [`ORIGIN_MARK`] in the last 8
//!   bytes of `pl_cpuid` (hwpmc copies its zero-filled `pmc_cpuid[64]`
//!   there, so a FreeBSD log has zeros; FreeBSD's readers stop at the
//!   string's NUL and never see the mark);
//! - MAP_IN `start` is the start address of the object's first
//!   executable mapping, as hwpmc logs it (`hwpmc_mod.c`,
//!   `pmc_log_process_mappings`: `entry->start` of an executable entry).
//!   A symbolizer relocates by `start - page_down(p_vaddr of the first
//!   executable PT_LOAD)`, libpmcstat's `pmcstat_image_link` formula for
//!   FreeBSD's layouts, which also holds for lld's (`p_vaddr != p_offset`).
//!   Logs of pmc's earlier writer (INITIALIZE version `0x05000000`) carried
//!   `address - file offset` instead; `pmc-report` reads both.
//!
//! - [`LogRecord`]: one variant per record type, with [`LogRecord::encode`]
//!   and [`LogRecord::decode`];
//! - [`LogWriter`]: writes INITIALIZE first and CLOSELOG on close;
//! - [`LogReader`]: reads from a file/pipe or from memory fed piecewise,
//!   with libpmc's OK / EOF / REQUIRE_DATA / ERROR (sticky) states and its
//!   `pl_offset` / `pl_count`;
//! - [`sink`]: the process-wide log of `pmc_configure_logfile`.

pub mod cpu;
mod reader;
pub mod sink;
pub mod translate;
mod writer;

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::{Error, Result};

pub use reader::{LogReader, ReadState};
pub use writer::LogWriter;

/// The header magic (`PMCLOG_HEADER_MAGIC`).
pub const MAGIC: u32 = 0xEE;
/// `PMC_VERSION` of FreeBSD 12–14 (`sys/sys/pmc.h`: major 0x09, minor
/// 0x03, patch 0), whose pmclog layouts this crate writes.
pub const PMC_VERSION: u32 = 0x0903_0000;
/// The log version written in INITIALIZE.
pub const VERSION: u32 = PMC_VERSION;
/// `PMC_VERSION` of FreeBSD 15 (major 0x0A), whose PROCEXEC record has
/// `pl_base` and `pl_dyn` instead of one start address.
pub const PMC_VERSION_15: u32 = 0x0A00_0000;
/// The deepest callchain a record carries (`PMC_CALLCHAIN_DEPTH_MAX`).
pub const CALLCHAIN_MAX: usize = 512;
/// `pl_cpuflags` bit: the callchain is a user-space one
/// (`PMC_CC_F_USERSPACE`).
pub const CC_USERSPACE: u32 = 0x01;
/// Longest path field (`PATH_MAX`, NUL included).
pub const PATH_MAX: usize = 1024;
/// Length of the INITIALIZE cpuid field (`PMC_CPUID_LEN`).
pub const CPUID_LEN: usize = 64;
/// Length of the PMCALLOCATEDYN event name field (`PMC_NAME_MAX`).
pub const NAME_MAX: usize = 64;
/// Length of thread/process names (`MAXCOMLEN + 1`).
pub const COMM_LEN: usize = 20;
/// Ticks per second of the timestamps this crate writes (nanoseconds).
pub const TIMESTAMP_FREQ: u64 = 1_000_000_000;
/// Written in the last 8 bytes of INITIALIZE's `pl_cpuid` by this crate:
/// marks a log whose DROPNOTIFY spare word holds a lost count.
pub const ORIGIN_MARK: [u8; 8] = *b"pmc-rs1\0";
/// Bytes of the header (`struct pmclog_header`).
pub const HEADER_LEN: usize = 16;

/// Record type numbers (`enum pmclog_type`).
#[allow(missing_docs)]
pub mod kind {
    pub const CLOSELOG: u8 = 1;
    pub const DROPNOTIFY: u8 = 2;
    pub const INITIALIZE: u8 = 3;
    pub const PMCALLOCATE: u8 = 5;
    pub const PMCATTACH: u8 = 6;
    pub const PMCDETACH: u8 = 7;
    pub const PROCCSW: u8 = 8;
    pub const PROCEXEC: u8 = 9;
    pub const PROCEXIT: u8 = 10;
    pub const PROCFORK: u8 = 11;
    pub const SYSEXIT: u8 = 12;
    pub const USERDATA: u8 = 13;
    pub const MAP_IN: u8 = 14;
    pub const MAP_OUT: u8 = 15;
    pub const CALLCHAIN: u8 = 16;
    pub const PMCALLOCATEDYN: u8 = 17;
    pub const THR_CREATE: u8 = 18;
    pub const THR_EXIT: u8 = 19;
    pub const PROC_CREATE: u8 = 20;
}

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
        /// `pl_cpu`: an `enum pmc_cputype` value (see [`cpu`]).
        arch: u32,
        /// Timestamp ticks per second.
        tsc_freq: u64,
        /// `pl_ts`: wall-clock time at the start of the log.
        time_sec: u64,
        time_nsec: u64,
        /// `pl_cpuid`: `kern.hwpmc.cpuid`, e.g. `GenuineIntel-6-55-4`.
        cpuid: String,
        /// Whether `pl_cpuid` ends with [`ORIGIN_MARK`] (written by this
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
    /// FreeBSD 12–14: `entry` is `pl_start` (the exec's entry address) and
    /// `dynaddr` is 0 (not in the record, not written). A FreeBSD 15 log
    /// ([`PMC_VERSION_15`]) has `entry` = `pl_base` (`AT_BASE`, the run-time
    /// linker's base) and `dynaddr` = `pl_dyn` (the PIE load base).
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

fn put_u32(out: &mut Vec<u8>, v: u32) {
    out.extend_from_slice(&v.to_ne_bytes());
}

fn put_u64(out: &mut Vec<u8>, v: u64) {
    out.extend_from_slice(&v.to_ne_bytes());
}

/// A NUL-terminated string of at most `max` bytes, NUL included (hwpmc
/// copies `strlen + 1` bytes; the record length is rounded up after).
fn put_str(out: &mut Vec<u8>, s: &str, max: usize) {
    let b = s.as_bytes();
    let n = b.len().min(max - 1);
    out.extend_from_slice(&b[..n]);
    out.push(0);
}

/// A fixed-size char array, NUL-padded (always NUL-terminated).
fn put_fixed(out: &mut Vec<u8>, s: &str, len: usize) {
    let b = s.as_bytes();
    let n = b.len().min(len - 1);
    out.extend_from_slice(&b[..n]);
    out.resize(out.len() + (len - n), 0);
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

    /// Appends the FreeBSD 12–14 wire form (header included) to `out`.
    /// Paths longer than [`PATH_MAX`] - 1 bytes and callchains deeper than
    /// [`CALLCHAIN_MAX`] are truncated. Padding and spare words are zero.
    pub fn encode(&self, timestamp: u64, out: &mut Vec<u8>) {
        use LogRecord::*;
        let start = out.len();
        put_u32(out, 0); // pl_header, patched below
        put_u32(out, 0); // pl_spare
        put_u64(out, timestamp); // pl_tsc
        match self {
            Closelog => {}
            Dropnotify { lost } => {
                out[start + 4..start + 8].copy_from_slice(&lost.unwrap_or(0).to_ne_bytes())
            }
            Initialize {
                version,
                arch,
                tsc_freq,
                time_sec,
                time_nsec,
                cpuid,
                marked,
            } => {
                put_u32(out, *version); // 16 pl_version
                put_u32(out, *arch); // 20 pl_cpu
                put_u64(out, *tsc_freq); // 24 pl_tsc_freq
                put_u64(out, *time_sec); // 32 pl_ts.tv_sec
                put_u64(out, *time_nsec); // 40 pl_ts.tv_nsec
                let field = out.len(); // 48 pl_cpuid[64]
                if *marked {
                    put_fixed(out, cpuid, CPUID_LEN - ORIGIN_MARK.len());
                    out.extend_from_slice(&ORIGIN_MARK);
                } else {
                    put_fixed(out, cpuid, CPUID_LEN);
                }
                debug_assert_eq!(out.len() - field, CPUID_LEN);
            }
            PmcAllocate {
                pmcid,
                event,
                flags,
                rate,
            } => {
                put_u32(out, *pmcid); // 16
                put_u32(out, *event); // 20
                put_u32(out, *flags); // 24
                put_u32(out, 0); // 28 pl_pad
                put_u64(out, *rate); // 32
            }
            PmcAttach { pmcid, pid, path } => {
                put_u32(out, *pmcid); // 16
                put_u32(out, *pid); // 20
                put_str(out, path, PATH_MAX); // 24
            }
            PmcDetach { pmcid, pid } => {
                put_u32(out, *pmcid); // 16
                put_u32(out, *pid); // 20
            }
            ProcCsw {
                pmcid,
                value,
                pid,
                tid,
            } => {
                put_u64(out, *value); // 16 pl_value
                put_u32(out, *pmcid); // 24
                put_u32(out, *pid); // 28
                put_u32(out, *tid); // 32
                put_u32(out, 0); // 36 pl_pad
            }
            ProcExec {
                pid,
                pmcid,
                entry,
                path,
                ..
            } => {
                put_u32(out, *pid); // 16
                put_u32(out, *pmcid); // 20
                put_u64(out, *entry); // 24 pl_start
                put_str(out, path, PATH_MAX); // 32
            }
            ProcExit { pmcid, pid, value } => {
                put_u32(out, *pmcid); // 16
                put_u32(out, *pid); // 20
                put_u64(out, *value); // 24
            }
            ProcFork { oldpid, newpid } => {
                put_u32(out, *oldpid); // 16
                put_u32(out, *newpid); // 20
            }
            SysExit { pid } => {
                put_u32(out, *pid); // 16
                put_u32(out, 0); // 20 pl_pad
            }
            Userdata { value } => {
                put_u32(out, *value); // 16
                put_u32(out, 0); // 20 pl_pad
            }
            MapIn { pid, start, path } => {
                put_u32(out, *pid); // 16
                put_u32(out, 0); // 20 pl_pad
                put_u64(out, *start); // 24
                put_str(out, path, PATH_MAX); // 32
            }
            MapOut { pid, start, end } => {
                put_u32(out, *pid); // 16
                put_u32(out, 0); // 20 pl_pad
                put_u64(out, *start); // 24
                put_u64(out, *end); // 32
            }
            Callchain {
                pid,
                tid,
                pmcid,
                cpu,
                userspace,
                pcs,
            } => {
                put_u32(out, *pid); // 16
                put_u32(out, *tid); // 20
                put_u32(out, *pmcid); // 24
                // 28: PMC_CALLCHAIN_TO_CPUFLAGS(cpu, flags)
                put_u32(
                    out,
                    (u32::from(*cpu) << 16) | (u32::from(*userspace) * CC_USERSPACE),
                );
                for pc in pcs.iter().take(CALLCHAIN_MAX) {
                    put_u64(out, *pc); // 32 + 8i
                }
            }
            PmcAllocateDyn {
                pmcid,
                event,
                flags,
                name,
            } => {
                put_u32(out, *pmcid); // 16
                put_u32(out, *event); // 20
                put_u32(out, *flags); // 24
                put_u32(out, 0); // 28 pl_pad
                put_fixed(out, name, NAME_MAX); // 32 pl_evname[64]
            }
            ThrCreate {
                tid,
                pid,
                flags,
                name,
            } => {
                put_u32(out, *tid); // 16
                put_u32(out, *pid); // 20
                put_u32(out, *flags); // 24
                put_u32(out, 0); // 28 pl_pad
                put_fixed(out, name, COMM_LEN); // 32 pl_tdname[20]
            }
            ThrExit { tid } => {
                put_u32(out, *tid); // 16
                put_u32(out, 0); // 20 pl_pad
            }
            ProcCreate { pid, flags, name } => {
                put_u32(out, *pid); // 16
                put_u32(out, *flags); // 20
                put_fixed(out, name, COMM_LEN); // 24 pl_pcomm[20]
            }
        }
        // _PMCLOG_RESERVE: roundup(LEN, sizeof(uint32_t)).
        while !(out.len() - start).is_multiple_of(4) {
            out.push(0);
        }
        let len = (out.len() - start) as u32;
        let header = (MAGIC << 24) | (u32::from(self.kind()) << 16) | (len & 0xffff);
        out[start..start + 4].copy_from_slice(&header.to_ne_bytes());
    }

    /// Decodes one whole FreeBSD 12–14 record (`bytes` is exactly its
    /// length); the spare word of DROPNOTIFY is read as a lost count. See
    /// [`LogRecord::decode_with`].
    pub fn decode(bytes: &[u8], offset: u64) -> Result<(u64, LogRecord)> {
        LogRecord::decode_with(bytes, offset, PMC_VERSION, true)
    }

    /// Decodes one whole record written by a hwpmc of `version` (its
    /// INITIALIZE's `pl_version`: PROCEXEC differs from major 0x0A on).
    /// `trust_spare`: whether DROPNOTIFY's spare word is a lost count (a
    /// log from this crate). Errors name what is wrong; `offset` places it
    /// in the stream.
    pub fn decode_with(
        bytes: &[u8],
        offset: u64,
        version: u32,
        trust_spare: bool,
    ) -> Result<(u64, LogRecord)> {
        let bad = |what: String| Error::Log {
            what: format!("record at byte {offset}: {what}"),
            os_errno: None,
        };
        if bytes.len() < HEADER_LEN {
            return Err(bad(format!("{} bytes, shorter than a header", bytes.len())));
        }
        let header = u32::from_ne_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
        if header >> 24 != MAGIC {
            return Err(bad(format!(
                "bad magic {:#x} (header {header:#010x})",
                header >> 24
            )));
        }
        let ty = ((header >> 16) & 0xff) as u8;
        let spare = u32::from_ne_bytes([bytes[4], bytes[5], bytes[6], bytes[7]]);
        let ts = u64::from_ne_bytes(bytes[8..16].try_into().unwrap_or([0; 8]));
        let mut r = Fields {
            b: &bytes[HEADER_LEN..],
            pos: 0,
        };
        let missing = |name: &str| {
            bad(format!(
                "type {ty}: {} bytes end before field {name}",
                bytes.len()
            ))
        };
        use LogRecord::*;
        let rec = match ty {
            kind::CLOSELOG => Closelog,
            kind::DROPNOTIFY => Dropnotify {
                lost: trust_spare.then_some(spare),
            },
            kind::INITIALIZE => {
                let version = r.u32().ok_or_else(|| missing("pl_version"))?;
                let arch = r.u32().ok_or_else(|| missing("pl_cpu"))?;
                let tsc_freq = r.u64().ok_or_else(|| missing("pl_tsc_freq"))?;
                let time_sec = r.u64().ok_or_else(|| missing("pl_ts"))?;
                let time_nsec = r.u64().ok_or_else(|| missing("pl_ts"))?;
                let field = r.fixed(CPUID_LEN).ok_or_else(|| missing("pl_cpuid"))?;
                let marked = field[CPUID_LEN - ORIGIN_MARK.len()..] == ORIGIN_MARK;
                let text = if marked {
                    &field[..CPUID_LEN - ORIGIN_MARK.len()]
                } else {
                    field
                };
                Initialize {
                    version,
                    arch,
                    tsc_freq,
                    time_sec,
                    time_nsec,
                    cpuid: c_string(text),
                    marked,
                }
            }
            kind::PMCALLOCATE => {
                let pmcid = r.u32().ok_or_else(|| missing("pl_pmcid"))?;
                let event = r.u32().ok_or_else(|| missing("pl_event"))?;
                let flags = r.u32().ok_or_else(|| missing("pl_flags"))?;
                r.u32().ok_or_else(|| missing("pl_pad"))?;
                PmcAllocate {
                    pmcid,
                    event,
                    flags,
                    rate: r.u64().ok_or_else(|| missing("pl_rate"))?,
                }
            }
            kind::PMCATTACH => PmcAttach {
                pmcid: r.u32().ok_or_else(|| missing("pl_pmcid"))?,
                pid: r.u32().ok_or_else(|| missing("pl_pid"))?,
                path: r.path().map_err(|n| bad(path_too_long(n)))?,
            },
            kind::PMCDETACH => PmcDetach {
                pmcid: r.u32().ok_or_else(|| missing("pl_pmcid"))?,
                pid: r.u32().ok_or_else(|| missing("pl_pid"))?,
            },
            kind::PROCCSW => ProcCsw {
                value: r.u64().ok_or_else(|| missing("pl_value"))?,
                pmcid: r.u32().ok_or_else(|| missing("pl_pmcid"))?,
                pid: r.u32().ok_or_else(|| missing("pl_pid"))?,
                tid: r.u32().ok_or_else(|| missing("pl_tid"))?,
            },
            kind::PROCEXEC => {
                let pid = r.u32().ok_or_else(|| missing("pl_pid"))?;
                let pmcid = r.u32().ok_or_else(|| missing("pl_pmcid"))?;
                let entry = r.u64().ok_or_else(|| missing("pl_start"))?;
                let dynaddr = if version >> 24 >= PMC_VERSION_15 >> 24 {
                    r.u64().ok_or_else(|| missing("pl_dyn"))?
                } else {
                    0
                };
                ProcExec {
                    pid,
                    pmcid,
                    entry,
                    dynaddr,
                    path: r.path().map_err(|n| bad(path_too_long(n)))?,
                }
            }
            kind::PROCEXIT => ProcExit {
                pmcid: r.u32().ok_or_else(|| missing("pl_pmcid"))?,
                pid: r.u32().ok_or_else(|| missing("pl_pid"))?,
                value: r.u64().ok_or_else(|| missing("pl_value"))?,
            },
            kind::PROCFORK => ProcFork {
                oldpid: r.u32().ok_or_else(|| missing("pl_oldpid"))?,
                newpid: r.u32().ok_or_else(|| missing("pl_newpid"))?,
            },
            kind::SYSEXIT => SysExit {
                pid: r.u32().ok_or_else(|| missing("pl_pid"))?,
            },
            kind::USERDATA => Userdata {
                value: r.u32().ok_or_else(|| missing("pl_userdata"))?,
            },
            kind::MAP_IN => {
                let pid = r.u32().ok_or_else(|| missing("pl_pid"))?;
                r.u32().ok_or_else(|| missing("pl_pad"))?;
                MapIn {
                    pid,
                    start: r.u64().ok_or_else(|| missing("pl_start"))?,
                    path: r.path().map_err(|n| bad(path_too_long(n)))?,
                }
            }
            kind::MAP_OUT => {
                let pid = r.u32().ok_or_else(|| missing("pl_pid"))?;
                r.u32().ok_or_else(|| missing("pl_pad"))?;
                MapOut {
                    pid,
                    start: r.u64().ok_or_else(|| missing("pl_start"))?,
                    end: r.u64().ok_or_else(|| missing("pl_end"))?,
                }
            }
            kind::CALLCHAIN => {
                let pid = r.u32().ok_or_else(|| missing("pl_pid"))?;
                let tid = r.u32().ok_or_else(|| missing("pl_tid"))?;
                let pmcid = r.u32().ok_or_else(|| missing("pl_pmcid"))?;
                let flags = r.u32().ok_or_else(|| missing("pl_cpuflags"))?;
                let mut pcs = Vec::new();
                while let Some(pc) = r.u64() {
                    pcs.push(pc);
                }
                if pcs.len() > CALLCHAIN_MAX {
                    return Err(bad(format!(
                        "callchain of {} pcs, deeper than PMC_CALLCHAIN_DEPTH_MAX {CALLCHAIN_MAX}",
                        pcs.len()
                    )));
                }
                Callchain {
                    pid,
                    tid,
                    pmcid,
                    cpu: (flags >> 16) as u16,
                    userspace: flags & CC_USERSPACE != 0,
                    pcs,
                }
            }
            kind::PMCALLOCATEDYN => {
                let pmcid = r.u32().ok_or_else(|| missing("pl_pmcid"))?;
                let event = r.u32().ok_or_else(|| missing("pl_event"))?;
                let flags = r.u32().ok_or_else(|| missing("pl_flags"))?;
                r.u32().ok_or_else(|| missing("pl_pad"))?;
                PmcAllocateDyn {
                    pmcid,
                    event,
                    flags,
                    name: c_string(r.fixed(NAME_MAX).ok_or_else(|| missing("pl_evname"))?),
                }
            }
            kind::THR_CREATE => {
                let tid = r.u32().ok_or_else(|| missing("pl_tid"))?;
                let pid = r.u32().ok_or_else(|| missing("pl_pid"))?;
                let flags = r.u32().ok_or_else(|| missing("pl_flags"))?;
                r.u32().ok_or_else(|| missing("pl_pad"))?;
                ThrCreate {
                    tid,
                    pid,
                    flags,
                    name: c_string(r.fixed(COMM_LEN).ok_or_else(|| missing("pl_tdname"))?),
                }
            }
            kind::THR_EXIT => ThrExit {
                tid: r.u32().ok_or_else(|| missing("pl_tid"))?,
            },
            kind::PROC_CREATE => ProcCreate {
                pid: r.u32().ok_or_else(|| missing("pl_pid"))?,
                flags: r.u32().ok_or_else(|| missing("pl_flags"))?,
                name: c_string(r.fixed(COMM_LEN).ok_or_else(|| missing("pl_pcomm"))?),
            },
            other => return Err(bad(format!("unknown record type {other}"))),
        };
        Ok((ts, rec))
    }
}

fn path_too_long(n: usize) -> String {
    format!("path field of {n} bytes is longer than PATH_MAX ({PATH_MAX})")
}

/// The string up to the first NUL (libpmc's `strlcpy`).
fn c_string(b: &[u8]) -> String {
    let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    String::from_utf8_lossy(&b[..end]).into_owned()
}

/// Field reader over a record body (never reads past it).
struct Fields<'a> {
    b: &'a [u8],
    pos: usize,
}

impl Fields<'_> {
    fn u32(&mut self) -> Option<u32> {
        let v = self.b.get(self.pos..self.pos + 4)?;
        self.pos += 4;
        Some(u32::from_ne_bytes(v.try_into().ok()?))
    }

    fn u64(&mut self) -> Option<u64> {
        let v = self.b.get(self.pos..self.pos + 8)?;
        self.pos += 8;
        Some(u64::from_ne_bytes(v.try_into().ok()?))
    }

    fn fixed(&mut self, len: usize) -> Option<&[u8]> {
        let v = self.b.get(self.pos..self.pos + len)?;
        self.pos += len;
        Some(v)
    }

    /// The rest of the record as a path (`PMCLOG_GET_PATHLEN`: at most
    /// `PATH_MAX` bytes, else the record is corrupt).
    fn path(&mut self) -> std::result::Result<String, usize> {
        let rest = self.b.get(self.pos..).unwrap_or(&[]);
        if rest.len() > PATH_MAX {
            return Err(rest.len());
        }
        self.pos += rest.len();
        Ok(c_string(rest))
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

/// The `enum pmc_cputype` written in INITIALIZE's `pl_cpu` for this
/// machine (see [`cpu::pmc_cputype`]).
pub fn arch_code() -> u32 {
    cpu::this_machine().cputype
}

#[cfg(test)]
mod tests;
