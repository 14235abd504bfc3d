//! pmclog: FreeBSD's hwpmc log format, written and read.
//!
//! The layouts are those of `sys/sys/pmclog.h` in FreeBSD 14 and 15 (log
//! version [`PMC_VERSION`] `0x0A000000`); FreeBSD 12–13's logs
//! ([`PMC_VERSION_9`] `0x09030000`) differ only in PROCEXEC and are read
//! too. Every record starts
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
//! | PROCEXEC | 40 + path + NUL, rounded up to 4 (FreeBSD 12–13: 32 + …) |
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
//! - [`crate::global::log`]: the process-wide log of `pmc_configure_logfile`;
//! - [`queue`]: the bounded, never-blocking writer of logs on pipes and
//!   sockets (hwpmc's log buffers and DROPNOTIFY).

pub mod cpu;
mod decode;
mod encode;
pub mod queue;
mod reader;
mod record;
mod writer;

pub use reader::{LogReader, ReadError, ReadState};
pub use record::{LogEvent, LogRecord};
pub use writer::LogWriter;

/// The header magic (`PMCLOG_HEADER_MAGIC`).
pub const MAGIC: u32 = 0xEE;
/// `PMC_VERSION` of FreeBSD 14 and 15 (`sys/sys/pmc.h`: major 0x0A, minor
/// 0, patch 0), whose pmclog layouts this crate writes: PROCEXEC carries
/// `pl_base` and `pl_dyn`. Main's pmc.h has 0x0A; main's libpmc pmclog.h
/// already had `pl_baseaddr`/`pl_dynaddr` before stable/14 branched.
pub const PMC_VERSION: u32 = 0x0A00_0000;
/// The log version written in INITIALIZE.
pub const VERSION: u32 = PMC_VERSION;
/// `PMC_VERSION` of FreeBSD 12–13 (major 0x09, minor 0x03), whose
/// PROCEXEC record has one start address (`pl_start`, libpmc's
/// `pl_entryaddr`) where 14 has two; read, never written.
pub const PMC_VERSION_9: u32 = 0x0903_0000;
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

#[cfg(test)]
mod tests;
