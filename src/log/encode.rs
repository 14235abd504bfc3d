//! [`LogRecord::encode`]: the FreeBSD 14 wire form of a record, at the
//! offsets of `sys/sys/pmclog.h` (commented per field).

use super::{
    CALLCHAIN_MAX, CC_USERSPACE, COMM_LEN, CPUID_LEN, LogRecord, MAGIC, NAME_MAX, ORIGIN_MARK,
    PATH_MAX,
};

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
    /// Appends the FreeBSD 14 wire form (header included) to `out`.
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
                dynaddr,
                path,
            } => {
                put_u32(out, *pid); // 16
                put_u32(out, *pmcid); // 20
                put_u64(out, *entry); // 24 pl_base
                put_u64(out, *dynaddr); // 32 pl_dyn
                put_str(out, path, PATH_MAX); // 40
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
                let flags = if *userspace { CC_USERSPACE } else { 0 };
                put_u32(out, (u32::from(*cpu) << 16) | flags);
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
}
