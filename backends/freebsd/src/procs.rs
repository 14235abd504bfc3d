//! The process table as the `kern.proc` sysctl gives it
//! (`{CTL_KERN, KERN_PROC, KERN_PROC_PROC, 0}`: one `struct kinfo_proc`
//! per process, sys/sys/user.h), read for the pid/ppid pairs that
//! DESCENDANTS needs — what `pmc_attach_process` walks in the kernel
//! (`p_children`), and what libutil's `kinfo_getallproc` reads from user
//! space.
//!
//! Platform-neutral: the FreeBSD transport fetches the bytes
//! (`sys::kern_proc_proc`), the kernel double builds them
//! (`double::KernelDouble::kern_proc_proc`, feature `test-doubles`), and both are read
//! here.

/// `CTL_KERN` (sys/sys/sysctl.h).
pub const CTL_KERN: i32 = 1;
/// `KERN_PROC`.
pub const KERN_PROC: i32 = 14;
/// `KERN_PROC_PROC`: processes only, no threads.
pub const KERN_PROC_PROC: i32 = 8;

/// Bytes of a pointer in `struct kinfo_proc` (the kernel's, which is the
/// caller's: a 32-bit process on a 64-bit kernel gets `kinfo_proc32`).
const PTR: usize = std::mem::size_of::<usize>();
/// `ki_pid`: after `ki_structsize`, `ki_layout` and eight pointers
/// (`ki_args` … `ki_wchan`).
pub const KI_PID_OFFSET: usize = 8 + 8 * PTR;
/// `ki_ppid`, right after it.
pub const KI_PPID_OFFSET: usize = KI_PID_OFFSET + 4;
/// `KINFO_PROC_SIZE` of amd64 and arm64 (sys/amd64/include/proc.h,
/// sys/arm64/include/proc.h); i386's is 768.
pub const KINFO_PROC_SIZE: usize = if PTR == 8 { 1088 } else { 768 };

/// One process of the table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProcEntry {
    /// `ki_pid`.
    pub pid: i32,
    /// `ki_ppid`.
    pub ppid: i32,
}

fn i32_at(b: &[u8], at: usize) -> i32 {
    i32::from_ne_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// Reads the sysctl's array: each record is `ki_structsize` bytes, which
/// must be this platform's `KINFO_PROC_SIZE` (libutil's
/// `kinfo_getallproc` checks the same), and the array whole records.
pub fn parse_kinfo_procs(bytes: &[u8]) -> Result<Vec<ProcEntry>, String> {
    let mut out = Vec::with_capacity(bytes.len() / KINFO_PROC_SIZE);
    let mut at = 0;
    while at < bytes.len() {
        if bytes.len() - at < 4 {
            return Err(format!("a partial kinfo_proc at byte {at}"));
        }
        let size = i32_at(bytes, at);
        if size as usize != KINFO_PROC_SIZE {
            return Err(format!(
                "kinfo_proc at byte {at} says ki_structsize {size}, expected {KINFO_PROC_SIZE}"
            ));
        }
        if bytes.len() - at < KINFO_PROC_SIZE {
            return Err(format!("a partial kinfo_proc at byte {at}"));
        }
        out.push(ProcEntry {
            pid: i32_at(bytes, at + KI_PID_OFFSET),
            ppid: i32_at(bytes, at + KI_PPID_OFFSET),
        });
        at += KINFO_PROC_SIZE;
    }
    Ok(out)
}

/// A `struct kinfo_proc` with only what this crate reads filled in (the
/// kernel double's records).
pub fn encode_kinfo_proc(entry: ProcEntry, out: &mut Vec<u8>) {
    let start = out.len();
    out.resize(start + KINFO_PROC_SIZE, 0);
    let rec = &mut out[start..];
    rec[..4].copy_from_slice(&(KINFO_PROC_SIZE as i32).to_ne_bytes());
    rec[KI_PID_OFFSET..KI_PID_OFFSET + 4].copy_from_slice(&entry.pid.to_ne_bytes());
    rec[KI_PPID_OFFSET..KI_PPID_OFFSET + 4].copy_from_slice(&entry.ppid.to_ne_bytes());
}

/// The processes below `pid` in `table` (children, grandchildren, …),
/// sorted.
pub fn descendants(table: &[ProcEntry], pid: i32) -> Vec<i32> {
    let mut found = Vec::new();
    let mut todo = vec![pid];
    while let Some(p) = todo.pop() {
        for child in table.iter().filter(|e| e.ppid == p && e.pid != p) {
            if child.pid != pid && !found.contains(&child.pid) {
                found.push(child.pid);
                todo.push(child.pid);
            }
        }
    }
    found.sort_unstable();
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinfo_proc_pid_fields_are_where_user_h_puts_them() {
        // 64-bit: two ints and eight pointers before ki_pid.
        if PTR == 8 {
            assert_eq!((KI_PID_OFFSET, KI_PPID_OFFSET), (72, 76));
        }
        let mut bytes = Vec::new();
        for (pid, ppid) in [(1, 0), (10, 1), (11, 10), (12, 11), (20, 1)] {
            encode_kinfo_proc(ProcEntry { pid, ppid }, &mut bytes);
        }
        let table = parse_kinfo_procs(&bytes).unwrap();
        assert_eq!(table.len(), 5);
        assert_eq!(descendants(&table, 10), vec![11, 12]);
        assert_eq!(descendants(&table, 1), vec![10, 11, 12, 20]);
        assert!(descendants(&table, 12).is_empty());
    }

    #[test]
    fn a_record_of_another_size_or_a_partial_one_is_an_error() {
        let mut bytes = Vec::new();
        encode_kinfo_proc(ProcEntry { pid: 1, ppid: 0 }, &mut bytes);
        assert!(parse_kinfo_procs(&bytes[..100]).is_err());
        bytes[0] = 0x10;
        assert!(parse_kinfo_procs(&bytes).is_err());
        assert_eq!(parse_kinfo_procs(&[]), Ok(vec![]));
    }
}
