//! pmclog: FreeBSD's hwpmc log format, written and read.
//!
//! Every record starts with a header of one `u32` — magic `0xEE` in bits
//! 24–31, the type in bits 16–23, the length in bytes (header included) in
//! bits 0–15 — a spare `u32` and a `u64` timestamp. Fields are native
//! endian `u32`s with 64-bit values 8-aligned; strings are NUL-terminated
//! and padded so every record is a multiple of 8 bytes.
//!
//! - [`LogRecord`]: one variant per record type, with [`LogRecord::encode`]
//!   and [`LogRecord::decode`];
//! - [`LogWriter`]: writes INITIALIZE first and CLOSELOG on close;
//! - [`LogReader`]: reads from a file/pipe or from memory fed piecewise,
//!   with libpmc's OK / EOF / REQUIRE_DATA / ERROR (sticky) states;
//! - [`sink`]: the process-wide log of `pmc_configure_logfile`.

pub mod sink;

use std::fmt;
use std::io::{Read, Write};

use serde::{Deserialize, Serialize};

use crate::{Error, Result};

/// The header magic.
pub const MAGIC: u32 = 0xEE;
/// The log format version written in INITIALIZE (FreeBSD's major 0x05).
pub const VERSION: u32 = 0x0500_0000;
/// The deepest callchain a record carries (FreeBSD's maximum).
pub const CALLCHAIN_MAX: usize = 512;
/// `pl_cpuflags` bit: the sample was taken in user space.
pub const CC_USERSPACE: u32 = 0x01;
/// Longest path stored (records are limited to 64 KiB).
pub const PATH_MAX: usize = 1024;
/// Length of the INITIALIZE cpuid field.
pub const CPUID_LEN: usize = 64;
/// Length of the PMCALLOCATEDYN event name field.
pub const NAME_MAX: usize = 64;
/// Length of thread/process names (`MAXCOMLEN + 1`).
pub const COMM_LEN: usize = 20;

/// Record type numbers.
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
    /// Samples were dropped (buffer full). `lost` travels in the header's
    /// spare word (FreeBSD's record has no payload; its readers ignore it).
    Dropnotify {
        lost: u32,
    },
    Initialize {
        version: u32,
        /// `pl_cpu`: the architecture code.
        arch: u32,
        tsc_freq: u64,
        time_sec: u64,
        time_nsec: u64,
        cpuid: String,
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
    ProcExec {
        pid: u32,
        pmcid: u32,
        entry: u64,
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
    /// Byte offset of the record in the stream.
    pub offset: u64,
    /// The header's timestamp.
    pub timestamp: u64,
    /// The record.
    pub record: LogRecord,
}

fn put_u32(out: &mut Vec<u8>, v: u32) {
    out.extend_from_slice(&v.to_ne_bytes());
}

fn put_u64(out: &mut Vec<u8>, v: u64) {
    out.extend_from_slice(&v.to_ne_bytes());
}

/// A NUL-terminated string truncated to `max - 1` bytes, padded to 8.
fn put_str(out: &mut Vec<u8>, s: &str, max: usize) {
    let b = s.as_bytes();
    let n = b.len().min(max - 1);
    out.extend_from_slice(&b[..n]);
    out.push(0);
}

/// A fixed-size char array.
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

    /// Appends the wire form (header included) to `out`. Paths longer than
    /// [`PATH_MAX`] and callchains deeper than [`CALLCHAIN_MAX`] are
    /// truncated.
    pub fn encode(&self, timestamp: u64, out: &mut Vec<u8>) {
        use LogRecord::*;
        let start = out.len();
        put_u32(out, 0); // header, patched below
        put_u32(out, 0);
        put_u64(out, timestamp);
        match self {
            Closelog => {}
            Dropnotify { lost } => out[start + 4..start + 8].copy_from_slice(&lost.to_ne_bytes()),
            Initialize {
                version,
                arch,
                tsc_freq,
                time_sec,
                time_nsec,
                cpuid,
            } => {
                put_u32(out, *version);
                put_u32(out, *arch);
                put_u64(out, *tsc_freq);
                put_u64(out, *time_sec);
                put_u64(out, *time_nsec);
                put_fixed(out, cpuid, CPUID_LEN);
            }
            PmcAllocate {
                pmcid,
                event,
                flags,
                rate,
            } => {
                put_u32(out, *pmcid);
                put_u32(out, *event);
                put_u32(out, *flags);
                put_u32(out, 0);
                put_u64(out, *rate);
            }
            PmcAttach { pmcid, pid, path } => {
                put_u32(out, *pmcid);
                put_u32(out, *pid);
                put_str(out, path, PATH_MAX);
            }
            PmcDetach { pmcid, pid } => {
                put_u32(out, *pmcid);
                put_u32(out, *pid);
            }
            ProcCsw {
                pmcid,
                value,
                pid,
                tid,
            } => {
                put_u32(out, *pmcid);
                put_u32(out, 0);
                put_u64(out, *value);
                put_u32(out, *pid);
                put_u32(out, *tid);
            }
            ProcExec {
                pid,
                pmcid,
                entry,
                path,
            } => {
                put_u32(out, *pid);
                put_u32(out, *pmcid);
                put_u64(out, *entry);
                put_str(out, path, PATH_MAX);
            }
            ProcExit { pmcid, pid, value } => {
                put_u32(out, *pmcid);
                put_u32(out, *pid);
                put_u64(out, *value);
            }
            ProcFork { oldpid, newpid } => {
                put_u32(out, *oldpid);
                put_u32(out, *newpid);
            }
            SysExit { pid } => {
                put_u32(out, *pid);
                put_u32(out, 0);
            }
            Userdata { value } => {
                put_u32(out, *value);
                put_u32(out, 0);
            }
            MapIn { pid, start, path } => {
                put_u32(out, *pid);
                put_u32(out, 0);
                put_u64(out, *start);
                put_str(out, path, PATH_MAX);
            }
            MapOut { pid, start, end } => {
                put_u32(out, *pid);
                put_u32(out, 0);
                put_u64(out, *start);
                put_u64(out, *end);
            }
            Callchain {
                pid,
                tid,
                pmcid,
                cpu,
                userspace,
                pcs,
            } => {
                put_u32(out, *pid);
                put_u32(out, *tid);
                put_u32(out, *pmcid);
                put_u32(
                    out,
                    (u32::from(*cpu) << 16) | (u32::from(*userspace) * CC_USERSPACE),
                );
                for pc in pcs.iter().take(CALLCHAIN_MAX) {
                    put_u64(out, *pc);
                }
            }
            PmcAllocateDyn {
                pmcid,
                event,
                flags,
                name,
            } => {
                put_u32(out, *pmcid);
                put_u32(out, *event);
                put_u32(out, *flags);
                put_u32(out, 0);
                put_fixed(out, name, NAME_MAX);
            }
            ThrCreate {
                tid,
                pid,
                flags,
                name,
            } => {
                put_u32(out, *tid);
                put_u32(out, *pid);
                put_u32(out, *flags);
                put_u32(out, 0);
                put_fixed(out, name, COMM_LEN);
            }
            ThrExit { tid } => {
                put_u32(out, *tid);
                put_u32(out, 0);
            }
            ProcCreate { pid, flags, name } => {
                put_u32(out, *pid);
                put_u32(out, *flags);
                put_fixed(out, name, COMM_LEN);
            }
        }
        while (out.len() - start) % 8 != 0 {
            out.push(0);
        }
        let len = (out.len() - start) as u32;
        let header = (MAGIC << 24) | (u32::from(self.kind()) << 16) | (len & 0xffff);
        out[start..start + 4].copy_from_slice(&header.to_ne_bytes());
    }

    /// Decodes one whole record (`bytes` is exactly its length). Errors
    /// name what is wrong; `offset` places it in the stream.
    pub fn decode(bytes: &[u8], offset: u64) -> Result<(u64, LogRecord)> {
        let bad = |what: String| Error::Log {
            what: format!("record at byte {offset}: {what}"),
            os_errno: None,
        };
        if bytes.len() < 16 {
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
        let ts = u64::from_ne_bytes(bytes[8..16].try_into().unwrap_or([0; 8]));
        let mut r = Fields {
            b: &bytes[16..],
            pos: 0,
        };
        let missing = |name: &str| bad(format!("type {ty}: field {name} missing"));
        use LogRecord::*;
        let rec = match ty {
            kind::CLOSELOG => Closelog,
            kind::DROPNOTIFY => Dropnotify {
                lost: u32::from_ne_bytes([bytes[4], bytes[5], bytes[6], bytes[7]]),
            },
            kind::INITIALIZE => Initialize {
                version: r.u32().ok_or_else(|| missing("version"))?,
                arch: r.u32().ok_or_else(|| missing("cpu"))?,
                tsc_freq: r.u64().ok_or_else(|| missing("tsc_freq"))?,
                time_sec: r.u64().ok_or_else(|| missing("time"))?,
                time_nsec: r.u64().ok_or_else(|| missing("time"))?,
                cpuid: r.string(CPUID_LEN),
            },
            kind::PMCALLOCATE => {
                let (pmcid, event, flags) = (
                    r.u32().ok_or_else(|| missing("pmcid"))?,
                    r.u32().ok_or_else(|| missing("event"))?,
                    r.u32().ok_or_else(|| missing("flags"))?,
                );
                r.u32();
                PmcAllocate {
                    pmcid,
                    event,
                    flags,
                    rate: r.u64().ok_or_else(|| missing("rate"))?,
                }
            }
            kind::PMCATTACH => PmcAttach {
                pmcid: r.u32().ok_or_else(|| missing("pmcid"))?,
                pid: r.u32().ok_or_else(|| missing("pid"))?,
                path: r.string(PATH_MAX),
            },
            kind::PMCDETACH => PmcDetach {
                pmcid: r.u32().ok_or_else(|| missing("pmcid"))?,
                pid: r.u32().ok_or_else(|| missing("pid"))?,
            },
            kind::PROCCSW => {
                let pmcid = r.u32().ok_or_else(|| missing("pmcid"))?;
                r.u32();
                ProcCsw {
                    pmcid,
                    value: r.u64().ok_or_else(|| missing("value"))?,
                    pid: r.u32().ok_or_else(|| missing("pid"))?,
                    tid: r.u32().ok_or_else(|| missing("tid"))?,
                }
            }
            kind::PROCEXEC => ProcExec {
                pid: r.u32().ok_or_else(|| missing("pid"))?,
                pmcid: r.u32().ok_or_else(|| missing("pmcid"))?,
                entry: r.u64().ok_or_else(|| missing("entryaddr"))?,
                path: r.string(PATH_MAX),
            },
            kind::PROCEXIT => ProcExit {
                pmcid: r.u32().ok_or_else(|| missing("pmcid"))?,
                pid: r.u32().ok_or_else(|| missing("pid"))?,
                value: r.u64().ok_or_else(|| missing("value"))?,
            },
            kind::PROCFORK => ProcFork {
                oldpid: r.u32().ok_or_else(|| missing("oldpid"))?,
                newpid: r.u32().ok_or_else(|| missing("newpid"))?,
            },
            kind::SYSEXIT => SysExit {
                pid: r.u32().ok_or_else(|| missing("pid"))?,
            },
            kind::USERDATA => Userdata {
                value: r.u32().ok_or_else(|| missing("userdata"))?,
            },
            kind::MAP_IN => {
                let pid = r.u32().ok_or_else(|| missing("pid"))?;
                r.u32();
                MapIn {
                    pid,
                    start: r.u64().ok_or_else(|| missing("start"))?,
                    path: r.string(PATH_MAX),
                }
            }
            kind::MAP_OUT => {
                let pid = r.u32().ok_or_else(|| missing("pid"))?;
                r.u32();
                MapOut {
                    pid,
                    start: r.u64().ok_or_else(|| missing("start"))?,
                    end: r.u64().ok_or_else(|| missing("end"))?,
                }
            }
            kind::CALLCHAIN => {
                let pid = r.u32().ok_or_else(|| missing("pid"))?;
                let tid = r.u32().ok_or_else(|| missing("tid"))?;
                let pmcid = r.u32().ok_or_else(|| missing("pmcid"))?;
                let flags = r.u32().ok_or_else(|| missing("cpuflags"))?;
                let mut pcs = Vec::new();
                while let Some(pc) = r.u64() {
                    pcs.push(pc);
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
                let (pmcid, event, flags) = (
                    r.u32().ok_or_else(|| missing("pmcid"))?,
                    r.u32().ok_or_else(|| missing("event"))?,
                    r.u32().ok_or_else(|| missing("flags"))?,
                );
                r.u32();
                PmcAllocateDyn {
                    pmcid,
                    event,
                    flags,
                    name: r.string(NAME_MAX),
                }
            }
            kind::THR_CREATE => {
                let (tid, pid, flags) = (
                    r.u32().ok_or_else(|| missing("tid"))?,
                    r.u32().ok_or_else(|| missing("pid"))?,
                    r.u32().ok_or_else(|| missing("flags"))?,
                );
                r.u32();
                ThrCreate {
                    tid,
                    pid,
                    flags,
                    name: r.string(COMM_LEN),
                }
            }
            kind::THR_EXIT => ThrExit {
                tid: r.u32().ok_or_else(|| missing("tid"))?,
            },
            kind::PROC_CREATE => ProcCreate {
                pid: r.u32().ok_or_else(|| missing("pid"))?,
                flags: r.u32().ok_or_else(|| missing("flags"))?,
                name: r.string(COMM_LEN),
            },
            other => return Err(bad(format!("unknown record type {other}"))),
        };
        Ok((ts, rec))
    }
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

    fn string(&mut self, max: usize) -> String {
        let rest = self.b.get(self.pos..).unwrap_or(&[]);
        let rest = &rest[..rest.len().min(max)];
        let end = rest.iter().position(|&c| c == 0).unwrap_or(rest.len());
        self.pos += rest.len();
        String::from_utf8_lossy(&rest[..end]).into_owned()
    }
}

impl fmt::Display for LogRecord {
    /// pmcstat -R's one-line form.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use LogRecord::*;
        match self {
            Closelog => write!(f, "closelog"),
            Dropnotify { lost } => write!(f, "drop {lost}"),
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

/// The architecture code written in INITIALIZE (`pl_cpu`): 1 for x86_64,
/// 2 for aarch64, 0 otherwise.
pub fn arch_code() -> u32 {
    match std::env::consts::ARCH {
        "x86_64" => 1,
        "aarch64" => 2,
        _ => 0,
    }
}

/// Writes a pmclog stream: INITIALIZE first, CLOSELOG on close.
#[derive(Debug)]
pub struct LogWriter<W: Write> {
    out: W,
    buf: Vec<u8>,
    closed: bool,
}

/// Flush the buffer to the writer beyond this many bytes.
const WRITE_CHUNK: usize = 64 * 1024;

impl<W: Write> LogWriter<W> {
    /// Starts a log on `out` with its INITIALIZE record.
    pub fn new(out: W, cpuid: &str, tsc_freq: u64) -> Result<LogWriter<W>> {
        let mut w = LogWriter {
            out,
            buf: Vec::with_capacity(WRITE_CHUNK * 2),
            closed: false,
        };
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        w.write(
            &LogRecord::Initialize {
                version: VERSION,
                arch: arch_code(),
                tsc_freq,
                time_sec: now.as_secs(),
                time_nsec: u64::from(now.subsec_nanos()),
                cpuid: cpuid.to_string(),
            },
            0,
        )?;
        Ok(w)
    }

    /// Appends a record (buffered).
    pub fn write(&mut self, record: &LogRecord, timestamp: u64) -> Result<()> {
        if self.closed {
            return Err(Error::Log {
                what: "the log is closed".into(),
                os_errno: Some(libc_ebadf()),
            });
        }
        record.encode(timestamp, &mut self.buf);
        if self.buf.len() >= WRITE_CHUNK {
            self.flush()?;
        }
        Ok(())
    }

    /// A USERDATA record (`pmc_writelog`).
    pub fn writelog(&mut self, value: u32, timestamp: u64) -> Result<()> {
        self.write(&LogRecord::Userdata { value }, timestamp)
    }

    /// Writes out buffered records.
    pub fn flush(&mut self) -> Result<()> {
        let io = |e: std::io::Error| Error::Log {
            what: format!("writing the log: {e}"),
            os_errno: e.raw_os_error(),
        };
        self.out.write_all(&self.buf).map_err(io)?;
        self.buf.clear();
        self.out.flush().map_err(io)
    }

    /// Writes CLOSELOG and flushes; later writes fail.
    pub fn close(&mut self) -> Result<()> {
        if self.closed {
            return Ok(());
        }
        self.write(&LogRecord::Closelog, 0)?;
        self.closed = true;
        self.flush()
    }

    /// The underlying writer.
    pub fn into_inner(self) -> W {
        self.out
    }
}

fn libc_ebadf() -> i32 {
    9
}

/// What [`LogReader::read`] returns (libpmc's `pmclog_read` states).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReadState {
    /// A record.
    Ok(LogEvent),
    /// The end of the stream (also always after CLOSELOG).
    Eof,
    /// Memory mode: the next record is incomplete; feed more bytes.
    RequireData,
    /// The stream is corrupt; every later read returns the same error.
    Error(String),
}

/// Reads a pmclog stream from a reader, or from memory fed piecewise.
pub struct LogReader {
    source: Option<Box<dyn Read + Send>>,
    buf: Vec<u8>,
    start: usize,
    offset: u64,
    state: Option<ReadState>,
    /// The iterator already returned the sticky error.
    error_reported: bool,
}

impl fmt::Debug for LogReader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LogReader")
            .field("offset", &self.offset)
            .field("buffered", &(self.buf.len() - self.start))
            .field("state", &self.state)
            .finish()
    }
}

impl LogReader {
    /// Reads from a file, pipe or socket (`pmclog_open(fd)`).
    pub fn from_reader(r: impl Read + Send + 'static) -> LogReader {
        LogReader {
            source: Some(Box::new(r)),
            buf: Vec::new(),
            start: 0,
            offset: 0,
            state: None,
            error_reported: false,
        }
    }

    /// Reads from bytes given with [`LogReader::feed`] (`pmclog_open(-1)`).
    pub fn from_memory() -> LogReader {
        LogReader {
            source: None,
            buf: Vec::new(),
            start: 0,
            offset: 0,
            state: None,
            error_reported: false,
        }
    }

    /// The stream offset just past the last record returned (libpmc's
    /// `pl_offset`).
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Adds bytes (memory mode; `pmclog_feed`).
    pub fn feed(&mut self, bytes: &[u8]) {
        if self.start > 0 && self.start == self.buf.len() {
            self.buf.clear();
            self.start = 0;
        }
        self.buf.extend_from_slice(bytes);
    }

    fn fail(&mut self, what: String) -> ReadState {
        let s = ReadState::Error(what);
        self.state = Some(s.clone());
        s
    }

    /// The next record, or why there is none.
    pub fn read(&mut self) -> ReadState {
        if let Some(s) = &self.state {
            return s.clone();
        }
        loop {
            let avail = self.buf.len() - self.start;
            if avail >= 4 {
                let h = &self.buf[self.start..self.start + 4];
                let header = u32::from_ne_bytes([h[0], h[1], h[2], h[3]]);
                let len = (header & 0xffff) as usize;
                if header >> 24 != MAGIC {
                    return self.fail(format!(
                        "byte {}: bad magic {:#x} (not a pmclog stream, or corrupt)",
                        self.offset,
                        header >> 24
                    ));
                }
                if len < 16 || len % 4 != 0 {
                    return self.fail(format!("byte {}: bad record length {len}", self.offset));
                }
                if avail >= len {
                    let bytes = &self.buf[self.start..self.start + len];
                    let at = self.offset;
                    match LogRecord::decode(bytes, at) {
                        Ok((timestamp, record)) => {
                            self.start += len;
                            self.offset += len as u64;
                            if self.start > 1 << 20 {
                                self.buf.drain(..self.start);
                                self.start = 0;
                            }
                            let closing = record == LogRecord::Closelog;
                            let ev = ReadState::Ok(LogEvent {
                                offset: at,
                                timestamp,
                                record,
                            });
                            if closing {
                                self.state = Some(ReadState::Eof);
                            }
                            return ev;
                        }
                        Err(e) => return self.fail(e.to_string()),
                    }
                }
            }
            // Need more bytes.
            let Some(src) = self.source.as_mut() else {
                return ReadState::RequireData;
            };
            let mut chunk = [0u8; 16 * 1024];
            match src.read(&mut chunk) {
                Ok(0) => {
                    if self.buf.len() > self.start {
                        return self.fail(format!(
                            "byte {}: the stream ends inside a record ({} bytes of it)",
                            self.offset,
                            self.buf.len() - self.start
                        ));
                    }
                    self.state = Some(ReadState::Eof);
                    return ReadState::Eof;
                }
                Ok(n) => self.feed(&chunk[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return self.fail(format!("byte {}: read failed: {e}", self.offset)),
            }
        }
    }
}

impl Iterator for LogReader {
    type Item = std::result::Result<LogEvent, String>;

    /// Records until EOF; an error ends the iteration after being returned
    /// (memory mode also ends when more data is required).
    fn next(&mut self) -> Option<Self::Item> {
        match self.read() {
            ReadState::Ok(e) => Some(Ok(e)),
            ReadState::Eof | ReadState::RequireData => None,
            ReadState::Error(_) if self.error_reported => None,
            ReadState::Error(e) => {
                self.error_reported = true;
                Some(Err(e))
            }
        }
    }
}

#[cfg(test)]
mod tests;
