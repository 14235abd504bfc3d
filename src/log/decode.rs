//! [`LogRecord::decode`] / [`LogRecord::decode_with`]: one whole record
//! from its bytes, never reading past them; errors name the record's
//! offset and the missing field.

use super::{
    CALLCHAIN_MAX, CC_USERSPACE, COMM_LEN, CPUID_LEN, HEADER_LEN, LogRecord, MAGIC, NAME_MAX,
    ORIGIN_MARK, PATH_MAX, PMC_VERSION, kind,
};
use crate::{Error, Result};

impl LogRecord {
    /// Decodes one whole FreeBSD record (`bytes` is exactly its
    /// length); the spare word of DROPNOTIFY is read as a lost count. See
    /// [`LogRecord::decode_with`].
    pub fn decode(bytes: &[u8], offset: u64) -> Result<(u64, LogRecord)> {
        LogRecord::decode_with(bytes, offset, PMC_VERSION, true)
    }

    /// Decodes one whole record written by a hwpmc of `version` (its
    /// INITIALIZE's `pl_version`: PROCEXEC has one address below major 0x0A).
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
            source: None,
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
                let entry = r.u64().ok_or_else(|| missing("pl_base"))?;
                // FreeBSD 12–13 (major 0x09 and before) have only pl_start.
                let dynaddr = if version >> 24 >= PMC_VERSION >> 24 {
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
