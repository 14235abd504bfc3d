//! pmclog(3) in safe Rust: parsers over [`LogReader`], kept in a registry
//! by cookie, and the conversion of records into `struct pmclog_ev` as
//! lib/libpmc/pmclog.c fills it.

use std::collections::HashMap;
use std::ffi::{CStr, CString};
use std::fs::File;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use pmc_core::log::{LogEvent, LogReader, LogRecord, ReadState, kind};

use crate::types::{self, pmclog_ev, state};
use crate::{CResult, Failure};

/// One parser (`struct pmclog_parse_state`).
#[derive(Debug)]
pub struct Parser {
    reader: LogReader,
    from_fd: bool,
    /// The stream's bytes not yet handed out as a record, as read or fed
    /// (the reader keeps its own copy).
    mirror: Arc<Mutex<Mirror>>,
    /// The last record's bytes, where `pl_data` points until the next read
    /// (pmclog.c points it into its buffer the same way).
    record: Vec<u8>,
}

/// The bytes of the stream from offset `base` on.
#[derive(Debug, Default)]
struct Mirror {
    base: u64,
    bytes: Vec<u8>,
}

impl Mirror {
    /// Moves the stream's bytes `start..end` into `out` and forgets
    /// everything before `end`.
    fn take(&mut self, start: u64, end: u64, out: &mut Vec<u8>) {
        out.clear();
        let from = start.saturating_sub(self.base) as usize;
        let to = (end.saturating_sub(self.base) as usize).min(self.bytes.len());
        if from < to {
            out.extend_from_slice(&self.bytes[from..to]);
        }
        self.bytes.drain(..to);
        self.base = self.base.max(end);
    }
}

/// A descriptor source that keeps a copy of what the reader reads.
struct Tee {
    inner: File,
    mirror: Arc<Mutex<Mirror>>,
}

impl std::io::Read for Tee {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.mirror
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .bytes
            .extend_from_slice(&buf[..n]);
        Ok(n)
    }
}

type Shared = Arc<Mutex<Parser>>;

/// Live parsers by cookie. The cookie is a number the C side holds as a
/// `void *` and is never dereferenced, so a closed or made-up cookie is
/// an error, not a crash.
static PARSERS: Mutex<Option<HashMap<usize, Shared>>> = Mutex::new(None);
/// Cookies are multiples of 16 (so they look like aligned pointers) and
/// never reused.
static NEXT: AtomicUsize = AtomicUsize::new(1);

fn parsers() -> MutexGuard<'static, Option<HashMap<usize, Shared>>> {
    PARSERS.lock().unwrap_or_else(|p| p.into_inner())
}

/// `pmclog_open`: a parser reading `source`, or fed from memory if `None`.
pub fn open(source: Option<File>) -> usize {
    let from_fd = source.is_some();
    let mirror = Arc::new(Mutex::new(Mirror::default()));
    let reader = match source {
        Some(f) => LogReader::from_reader(Tee {
            inner: f,
            mirror: mirror.clone(),
        }),
        None => LogReader::from_memory(),
    };
    let cookie = NEXT.fetch_add(1, Ordering::Relaxed) << 4;
    let parser = Parser {
        reader,
        from_fd,
        mirror,
        record: Vec::new(),
    };
    parsers()
        .get_or_insert_with(HashMap::new)
        .insert(cookie, Arc::new(Mutex::new(parser)));
    cookie
}

fn lookup(op: &str, cookie: usize) -> CResult<Shared> {
    parsers()
        .as_ref()
        .and_then(|m| m.get(&cookie).cloned())
        .ok_or_else(|| {
            Failure::new(
                libc::EINVAL,
                format!("{op}: {cookie:#x} is not an open pmclog parser (EINVAL)"),
            )
        })
}

/// `pmclog_feed`: adds a copy of `data` (so, unlike libpmc, the caller may
/// reuse its buffer at once).
pub fn feed(cookie: usize, data: &[u8]) -> CResult<()> {
    let shared = lookup("pmclog_feed", cookie)?;
    let mut p = shared.lock().unwrap_or_else(|e| e.into_inner());
    if p.from_fd {
        // pmclog.c pmclog_feed(): a file parser cannot be fed.
        return Err(Failure::new(
            libc::EINVAL,
            "pmclog_feed: this parser reads a file descriptor; only pmclog_open(-1) parsers \
             are fed (EINVAL)",
        ));
    }
    p.reader.feed(data);
    p.mirror
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .bytes
        .extend_from_slice(data);
    Ok(())
}

/// `pmclog_read`: the next event; `pl_state` says what happened, and for
/// PMCLOG_ERROR the second value says why (pmclog.c sets no errno then).
pub fn read(cookie: usize) -> CResult<(pmclog_ev, Option<String>)> {
    let shared = lookup("pmclog_read", cookie)?;
    let mut p = shared.lock().unwrap_or_else(|e| e.into_inner());
    Ok(match p.reader.read() {
        ReadState::Ok(ev) => (to_c(&mut p, ev), None),
        ReadState::Eof => (pmclog_ev::with_state(state::EOF), None),
        ReadState::RequireData => (pmclog_ev::with_state(state::REQUIRE_DATA), None),
        ReadState::Error(why) => (
            pmclog_ev::with_state(state::ERROR),
            Some(format!("pmclog_read: {why}")),
        ),
    })
}

/// `pmclog_close`
pub fn close(cookie: usize) {
    if let Some(m) = parsers().as_mut() {
        m.remove(&cookie);
    }
}

/// Distinct `event-0x…` names kept at most; beyond, [`UNNAMED_EVENT`].
const UNNAMED_EVENTS_MAX: usize = 4096;
/// The name of any further event without one.
const UNNAMED_EVENT: &CStr = c"event-unknown";

/// `pl_evname` of a PMCALLOCATE: a string that lives as long as the
/// library, as pmclog.c's `pmc_name_of_event` result points into libpmc's
/// static tables (lib/libpmc/pmclog.c `pmclog_get_event`), so a caller
/// may keep it past the next record and `pmclog_close`. Where we have no
/// equivalent the record still reads, with the number in the name
/// (instead of pmclog.c's error); those names are made once per number,
/// up to [`UNNAMED_EVENTS_MAX`] numbers, so a hostile log cannot grow them
/// without bound.
fn event_name(event: u32) -> &'static CStr {
    if let Ok(name) = crate::names::event(event) {
        return name;
    }
    static UNNAMED: Mutex<Option<HashMap<u32, &'static CStr>>> = Mutex::new(None);
    let mut table = UNNAMED.lock().unwrap_or_else(|e| e.into_inner());
    let table = table.get_or_insert_with(HashMap::new);
    if let Some(name) = table.get(&event) {
        return name;
    }
    if table.len() >= UNNAMED_EVENTS_MAX {
        return UNNAMED_EVENT;
    }
    let Ok(name) = CString::new(format!("event-{event:#x}")) else {
        return UNNAMED_EVENT;
    };
    let name: &'static CStr = Box::leak(name.into_boxed_c_str());
    table.insert(event, name);
    name
}

fn pid(p: u32) -> libc::pid_t {
    p as libc::pid_t
}

/// Fills a `struct pmclog_ev` as pmclog.c `pmclog_get_event()` does.
fn to_c(p: &mut Parser, ev: LogEvent) -> pmclog_ev {
    use types::*;
    let mut out = pmclog_ev::with_state(state::OK);
    out.pl_type = u32::from(ev.record.kind());
    out.pl_offset = ev.end_offset as libc::off_t;
    out.pl_count = ev.count as usize;
    out.pl_len = i32::try_from(ev.end_offset - ev.offset).unwrap_or(i32::MAX);
    // pmclog.c copies the header's raw timestamp into tv_sec.
    out.pl_ts.tv_sec = ev.timestamp as libc::time_t;
    let mut record = std::mem::take(&mut p.record);
    p.mirror
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .take(ev.offset, ev.end_offset, &mut record);
    p.record = record;
    out.pl_data = p.record.as_mut_ptr().cast();
    match ev.record {
        LogRecord::Closelog => {
            // pmclog.c: CLOSELOG is read as the end of the log.
            let mut eof = pmclog_ev::with_state(state::EOF);
            eof.pl_type = u32::from(kind::CLOSELOG);
            return eof;
        }
        LogRecord::Dropnotify { .. } => {}
        LogRecord::Initialize {
            version,
            arch,
            tsc_freq,
            time_sec,
            time_nsec,
            cpuid,
            ..
        } => {
            out.pl_u.pl_i = pmclog_ev_initialize {
                pl_version: version,
                pl_arch: arch,
                pl_tsc_freq: tsc_freq,
                pl_ts: libc::timespec {
                    tv_sec: time_sec as libc::time_t,
                    tv_nsec: time_nsec as libc::c_long,
                },
                pl_cpuid: fill_chars(&cpuid),
            }
        }
        LogRecord::PmcAllocate {
            pmcid,
            event,
            flags,
            rate,
        } => {
            out.pl_u.pl_a = pmclog_ev_pmcallocate {
                pl_evname: event_name(event).as_ptr(),
                pl_rate: rate,
                pl_event: event,
                pl_flags: flags,
                pl_pmcid: pmcid,
                _pad0: 0,
            }
        }
        LogRecord::PmcAllocateDyn {
            pmcid,
            event,
            flags,
            name,
        } => {
            out.pl_u.pl_ad = pmclog_ev_pmcallocatedyn {
                pl_evname: fill_chars(&name),
                pl_event: event,
                pl_flags: flags,
                pl_pmcid: pmcid,
            }
        }
        LogRecord::PmcAttach {
            pmcid,
            pid: target,
            path,
        } => {
            out.pl_u.pl_t = pmclog_ev_pmcattach {
                pl_pmcid: pmcid,
                pl_pid: pid(target),
                pl_pathname: fill_chars(&path),
            }
        }
        LogRecord::PmcDetach { pmcid, pid: target } => {
            out.pl_u.pl_d = pmclog_ev_pmcdetach {
                pl_pmcid: pmcid,
                pl_pid: pid(target),
            }
        }
        LogRecord::ProcCsw {
            pmcid,
            value,
            pid: target,
            tid,
        } => {
            out.pl_u.pl_c = pmclog_ev_proccsw {
                pl_pid: pid(target),
                pl_tid: pid(tid),
                pl_pmcid: pmcid,
                _pad0: 0,
                pl_value: value,
            }
        }
        LogRecord::ProcExec {
            pid: target,
            pmcid,
            entry,
            dynaddr,
            path,
        } => {
            out.pl_u.pl_x = pmclog_ev_procexec {
                pl_pid: pid(target),
                pl_pmcid: pmcid,
                pl_baseaddr: entry as usize,
                pl_dynaddr: dynaddr as usize,
                pl_pathname: fill_chars(&path),
            }
        }
        LogRecord::ProcExit {
            pmcid,
            pid: target,
            value,
        } => {
            out.pl_u.pl_e = pmclog_ev_procexit {
                pl_pid: target,
                pl_pmcid: pmcid,
                pl_value: value,
            }
        }
        LogRecord::ProcFork { oldpid, newpid } => {
            out.pl_u.pl_f = pmclog_ev_procfork {
                pl_oldpid: pid(oldpid),
                pl_newpid: pid(newpid),
            }
        }
        LogRecord::SysExit { pid: target } => {
            out.pl_u.pl_se = pmclog_ev_sysexit {
                pl_pid: pid(target),
            }
        }
        LogRecord::Userdata { value } => out.pl_u.pl_u = pmclog_ev_userdata { pl_userdata: value },
        LogRecord::MapIn {
            pid: target,
            start,
            path,
        } => {
            out.pl_u.pl_mi = pmclog_ev_map_in {
                pl_pid: pid(target),
                _pad0: 0,
                pl_start: start,
                pl_pathname: fill_chars(&path),
            }
        }
        LogRecord::MapOut {
            pid: target,
            start,
            end,
        } => {
            out.pl_u.pl_mo = pmclog_ev_map_out {
                pl_pid: pid(target),
                _pad0: 0,
                pl_start: start,
                pl_end: end,
            }
        }
        LogRecord::Callchain {
            pid: target,
            tid,
            pmcid,
            cpu,
            userspace,
            pcs,
        } => {
            let mut pl_pc = [0u64; PMC_CALLCHAIN_DEPTH_MAX];
            let n = pcs.len().min(PMC_CALLCHAIN_DEPTH_MAX);
            pl_pc[..n].copy_from_slice(&pcs[..n]);
            // sys/sys/pmclog.h PMC_CALLCHAIN_TO_CPUFLAGS(cpu, flags).
            let flags = if userspace { 1 } else { 0 };
            out.pl_u.pl_cc = pmclog_ev_callchain {
                pl_pid: target,
                pl_tid: tid,
                pl_pmcid: pmcid,
                pl_cpuflags: (u32::from(cpu) << 16) | flags,
                pl_cpuflags2: 0,
                pl_npc: n as u32,
                pl_pc,
            }
        }
        LogRecord::ThrCreate {
            tid,
            pid: target,
            flags,
            name,
        } => {
            out.pl_u.pl_tc = pmclog_ev_threadcreate {
                pl_tid: pid(tid),
                pl_pid: pid(target),
                pl_flags: flags,
                pl_tdname: fill_chars(&name),
            }
        }
        LogRecord::ThrExit { tid } => out.pl_u.pl_te = pmclog_ev_threadexit { pl_tid: pid(tid) },
        LogRecord::ProcCreate {
            pid: target,
            flags,
            name,
        } => {
            out.pl_u.pl_pc = pmclog_ev_proccreate {
                pl_pid: pid(target),
                pl_flags: flags,
                pl_pcomm: fill_chars(&name),
            }
        }
    }
    out
}
