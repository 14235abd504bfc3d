//! pmcstat(8)'s per-sample outputs and log filters: `-m` (sampled pcs with
//! the function they fall in), `-a` (every frame of every callchain with
//! function and file:line), `-v` (conversion statistics), and the
//! post-processing options `-r` (file system root), `-i` (one thread) and
//! `-z` (callchain depth), applied to the records before any report.
//!
//! Formats follow FreeBSD's `usr.sbin/pmcstat/pmcpl_annotate.c`
//! (`pc name start end`), `pmcpl_annotate_cg.c` (`pc function file:line`
//! per frame, `--` after each sample) and `pmcstat_log.c`
//! (`pmcstat_shutdown_logging`: `CONVERSION STATISTICS:` and `#name value`
//! lines). As in pmcpl_annotate.c, `-m`'s start and end are the
//! function's addresses in its object's symbol table (link-time: offsets
//! into a shared library or a PIE executable, which its pc is not), and
//! `-a` prints `pc <unknown> ??:0` for every pc it cannot name, kernel ones
//! included.
//!
//! `-m` and `-a` name pcs with the report's [`Symbolizer`] (the one `-G`,
//! `--folded` and the profiles use, shared with them in one run): separate
//! debug files, MiniDebugInfo, inline frames and file:line from whichever
//! DWARF the object's names came with. Two differences from FreeBSD:
//! `-a` looks a caller up one byte before its return address, in the call
//! instruction (FreeBSD's addr2line gets the return address itself, the
//! line after the call when it differs); and a pc inside inlined calls
//! prints one line per function, innermost first, as `addr2line -i` does
//! (FreeBSD's `addr2line -f` prints the innermost alone).

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::Path;

use object::{Object, ObjectSegment};
use pmc::log::{LogEvent, LogRecord};
use pmc_report::{
    FunctionSymbol, KERNEL_FRAME, KernelNames, KernelNamesMissing, MapStart, Symbolizer,
};

const PAGE: u64 = 4096;

/// Applies `-r ROOT` (look executables up under ROOT), `-i TID` (keep that
/// thread's samples only) and `-z DEPTH` (keep the DEPTH innermost frames
/// of each callchain) to a log's records.
pub fn prepare(
    events: &[LogEvent],
    root: Option<&Path>,
    tid: Option<u32>,
    depth: Option<usize>,
) -> Vec<LogEvent> {
    events
        .iter()
        .filter(|e| match (&e.record, tid) {
            (LogRecord::Callchain { tid: t, .. }, Some(want)) => *t == want,
            _ => true,
        })
        .map(|e| {
            let mut e = e.clone();
            match &mut e.record {
                LogRecord::MapIn { path, .. } if path.starts_with('/') => {
                    if let Some(root) = root {
                        *path =
                            format!("{}{path}", root.display().to_string().trim_end_matches('/'));
                    }
                }
                LogRecord::Callchain { pcs, .. } => {
                    if let Some(d) = depth {
                        pcs.truncate(d);
                    }
                }
                _ => {}
            }
            e
        })
        .collect()
}

/// What one object file knows about its addresses.
struct ObjectInfo {
    /// (file offset start, file offset end, vaddr start) of loadable segments.
    segments: Vec<(u64, u64, u64)>,
    /// Link-time address of the first executable segment.
    first_text_vaddr: Option<u64>,
    /// Sorted by start ([`pmc_report::function_symbols`]).
    functions: Vec<FunctionSymbol>,
}

impl ObjectInfo {
    fn load(path: &str) -> ObjectInfo {
        let empty = || ObjectInfo {
            segments: Vec::new(),
            first_text_vaddr: None,
            functions: Vec::new(),
        };
        // The log names it: an absolute path to a regular file, read as
        // parsed (pmc_report::ObjectFile).
        let Ok(data) = pmc_report::ObjectFile::open(Path::new(path)) else {
            return empty();
        };
        let Ok(file) = object::File::parse(&data) else {
            return empty();
        };
        let first_text_vaddr = file
            .segments()
            .filter(|s| {
                matches!(s.flags(), object::SegmentFlags::Elf { p_flags } if p_flags & object::elf::PF_X != 0)
            })
            .map(|s| s.address())
            .min();
        let segments = file
            .segments()
            .map(|s| {
                let (off, size) = s.file_range();
                (off, off.saturating_add(size), s.address())
            })
            .collect();
        let functions = pmc_report::function_symbols(&file);
        ObjectInfo {
            segments,
            first_text_vaddr,
            functions,
        }
    }

    /// Whether a link-time address lies in one of the loadable segments (a
    /// pc past the object belongs to no function of it).
    fn holds_vaddr(&self, vaddr: u64) -> bool {
        self.segments
            .iter()
            .any(|(s, e, v)| vaddr >= *v && vaddr - v < e - s)
    }

    /// The link-time address of a file offset.
    fn vaddr(&self, file_offset: u64) -> Option<u64> {
        self.segments
            .iter()
            .find(|(s, e, _)| file_offset >= *s && file_offset < *e)
            .map(|(s, _, v)| file_offset - s + v)
    }

    fn function(&self, vaddr: u64) -> Option<&FunctionSymbol> {
        pmc_report::function_at(&self.functions, vaddr)
    }
}

/// Where a pc of a process lies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Place {
    /// The mapped object's path.
    pub object: String,
    /// The function's name and its run-time `[start, end)`.
    pub function: Option<(String, u64, u64)>,
    /// The function's `[start, end)` in its object's symbol table (the
    /// run-time one for kernel functions named through kallsyms).
    pub symbol_range: Option<(u64, u64)>,
    /// The pc's address in its object (link-time), when the object was
    /// read: the same for every process that maps it, wherever ASLR put it.
    pub image_address: Option<u64>,
}

/// Counts of what a [`Resolver`] holds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Retained {
    /// Processes whose mappings it knows.
    pub processes: usize,
    /// Their mappings, summed.
    pub mappings: usize,
    /// Objects read (symbols, segments), one per path.
    pub objects: usize,
}

/// Resolves pcs of the processes in a log to objects, functions and lines,
/// following MAP_IN, fork and exec records like `report::Symbolizer`, and
/// kernel pcs through the running kernel's kallsyms
/// (`pmc_report::KernelNames`; `-r` does not move the kernel).
pub struct Resolver {
    maps: HashMap<u32, Vec<(u64, String)>>,
    objects: HashMap<String, ObjectInfo>,
    /// The [`Resolver::drop_unmapped_objects`] sweep each object path was
    /// last seen mapped at, and the sweeps so far.
    last_mapped: HashMap<String, u32>,
    sweeps: u32,
    /// What MAP_IN's `start` is the address of in this log.
    convention: MapStart,
    kernel: KernelNames,
}

impl Default for Resolver {
    fn default() -> Resolver {
        Resolver {
            maps: HashMap::new(),
            objects: HashMap::new(),
            last_mapped: HashMap::new(),
            sweeps: 0,
            convention: MapStart::FirstExecutableMapping,
            kernel: KernelNames::running(),
        }
    }
}

impl std::fmt::Debug for Resolver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Resolver")
            .field("processes", &self.maps.len())
            .field("objects", &self.objects.len())
            .finish()
    }
}

impl Resolver {
    /// Learns the mappings of a log.
    pub fn new(events: &[LogEvent]) -> Resolver {
        let mut r = Resolver::default();
        r.learn(events);
        r
    }

    /// Adds the mappings of more records (the top view's new ones).
    pub fn learn(&mut self, events: &[LogEvent]) {
        for e in events {
            match &e.record {
                LogRecord::Initialize { .. } => {
                    self.convention = MapStart::for_log(std::slice::from_ref(e));
                }
                LogRecord::MapIn { pid, start, path }
                    if *pid == u32::MAX && path == KERNEL_FRAME =>
                {
                    self.kernel.learn_kernel_mapping(*start);
                }
                LogRecord::MapIn { pid, start, path } if path.starts_with('/') => {
                    let m = self.maps.entry(*pid).or_default();
                    if let Err(i) = m.binary_search(&(*start, path.clone())) {
                        m.insert(i, (*start, path.clone()));
                    }
                }
                LogRecord::ProcFork { oldpid, newpid } => {
                    let parent = self.maps.get(oldpid).cloned().unwrap_or_default();
                    let child = self.maps.entry(*newpid).or_default();
                    child.extend(parent);
                    child.sort();
                    child.dedup();
                }
                LogRecord::ProcExec { pid, .. } => {
                    self.maps.remove(pid);
                }
                _ => {}
            }
        }
    }

    /// Lets go of a process's mappings (it exited, or its pid starts over
    /// as another process). Objects stay until
    /// [`Resolver::drop_unmapped_objects`].
    pub fn forget_process(&mut self, pid: u32) {
        self.maps.remove(&pid);
    }

    /// The processes whose mappings it holds (the kernel's, `u32::MAX`, too).
    pub fn processes(&self) -> impl Iterator<Item = u32> + '_ {
        self.maps.keys().copied()
    }

    /// Lets go of the objects (symbols, segments) no process
    /// it knows has mapped in its last `sweeps` calls: one copy per object
    /// file while mapped, none once unmapped that long. The grace keeps an
    /// object that short-lived processes map one after another (a build's
    /// compilers, a shell loop's commands) from being read again for each.
    pub fn drop_unmapped_objects(&mut self, sweeps: u32) {
        self.sweeps += 1;
        let now = self.sweeps;
        for path in self.maps.values().flatten().map(|(_, path)| path) {
            match self.last_mapped.get_mut(path.as_str()) {
                Some(seen) => *seen = now,
                None => {
                    self.last_mapped.insert(path.clone(), now);
                }
            }
        }
        self.last_mapped
            .retain(|_, seen| now.saturating_sub(*seen) < sweeps.max(1));
        let last_mapped = &self.last_mapped;
        self.objects
            .retain(|path, _| last_mapped.contains_key(path.as_str()));
    }

    /// What the resolver holds: processes with mappings, their mappings,
    /// and objects read (counted, not sized: what a long session must keep
    /// bounded by the live processes).
    pub fn retained(&self) -> Retained {
        Retained {
            processes: self.maps.len(),
            mappings: self.maps.values().map(Vec::len).sum(),
            objects: self.objects.len(),
        }
    }

    /// The mapping a pc falls in: (object start, path).
    fn mapping(&self, pid: u32, pc: u64) -> Option<(u64, &str)> {
        let maps = self.maps.get(&pid)?;
        let i = maps.partition_point(|(start, _)| *start <= pc);
        let (start, path) = maps.get(i.checked_sub(1)?)?;
        Some((*start, path.as_str()))
    }

    /// The object and function of a kernel pc (a frame the log marks as
    /// the kernel's, `pmc_report::kernel_frames`): through the log's kernel
    /// ELF where it has one (FreeBSD's), else kallsyms; `[kernel.kallsyms]`
    /// without a function when neither names it.
    pub fn place_kernel(&mut self, pc: u64) -> Place {
        if let Some(p) = self.place(u32::MAX, pc)
            && p.function.is_some()
        {
            return p;
        }
        match self.kernel.symbol_at(pc) {
            Some(s) => Place {
                object: s.object(),
                function: Some((s.name.clone(), s.start, s.end)),
                symbol_range: Some((s.start, s.end)),
                image_address: None,
            },
            None => Place {
                object: KERNEL_FRAME.into(),
                function: None,
                symbol_range: None,
                image_address: None,
            },
        }
    }

    /// Why kernel pcs went unnamed, once one needed a name and got none.
    pub fn kernel_names_missing(&self) -> Option<&KernelNamesMissing> {
        self.kernel.missing()
    }

    /// The object and function of `pc` in `pid`, or `None` when no
    /// mapping covers it.
    pub fn place(&mut self, pid: u32, pc: u64) -> Option<Place> {
        let (start, path) = self.mapping(pid, pc)?;
        let path = path.to_string();
        let info = self
            .objects
            .entry(path.clone())
            .or_insert_with(|| ObjectInfo::load(&path));
        let vaddr = match self.convention {
            MapStart::FileOffsetZero => info.vaddr(pc - start),
            // hwpmc: `start` is where the first executable segment's page begins.
            MapStart::FirstExecutableMapping => info
                .first_text_vaddr
                .map(|v| (pc - start).wrapping_add(v & !(PAGE - 1)))
                .filter(|&v| info.holds_vaddr(v)),
        };
        let symbol = vaddr.and_then(|v| info.function(v));
        let symbol_range = symbol.map(|f| (f.start, f.end));
        let function = symbol.map(|f| {
            // Run-time address = link-time address + (pc - its vaddr).
            let bias = pc.wrapping_sub(vaddr.unwrap_or(0));
            (
                f.name.clone(),
                f.start.wrapping_add(bias),
                f.end.wrapping_add(bias),
            )
        });
        Some(Place {
            object: path,
            function,
            symbol_range,
            image_address: vaddr,
        })
    }
}

/// `-m`: one line per sample, `pc function start end` for samples whose
/// leaf pc lies in a known function (others are skipped, as pmcstat does).
/// pmcpl_annotate.c `pmcpl_annotate_process`: `"%p %s 0x%jx 0x%jx\n"` of
/// the pc, the symbol's name, and its start and end plus the image's
/// `pi_vaddr` (the symbol table's values). The function is the one the
/// symbol names, the outermost of the pc's frames (the report's
/// `Location::function`). `symbolizer` is the run's
/// ([`pmc_report::ProfileOptions::symbolizer`] of `events`).
pub fn sampled_pcs(events: &[LogEvent], symbolizer: &mut Symbolizer) -> String {
    let mut out = String::new();
    for e in events {
        if let LogRecord::Callchain {
            pid,
            pcs,
            userspace,
            ..
        } = &e.record
            && let Some(&pc) = pcs.first()
        {
            let kernel = pmc_report::kernel_frames(*userspace, pcs) > 0;
            let r = symbolizer.resolve_frame(*pid, 0, pc, kernel);
            if let (Some(start), Some(end), Some(function)) =
                (r.symbol_start, r.symbol_end, r.frames.last())
            {
                let name = &function.function;
                let _ = writeln!(out, "{pc:#x} {name} {start:#x} {end:#x}");
            }
        }
    }
    out
}

/// `-a`: every frame of every sample as `pc function file:line` (or
/// `pc <unknown> ??:0`), each sample ended by `--`. pmcpl_annotate_cg.c
/// `pmcpl_annotate_cg_process`: `"%p %s %s:%d\n"` for a pc in a known
/// function, `"%p <unknown> ??:0\n"` for any other, `"--\n"` after each
/// sample. A pc inside inlined calls has a line per function, innermost
/// first, each with its own file:line (`??:0` where DWARF has no line): the
/// frames `--folded` and `--pprof` show. `symbolizer` is the run's;
/// `max_frames` (`-z`) keeps each sample's innermost lines, counted as
/// `--folded` counts its names (inline frames included).
pub fn annotated_callchains(
    events: &[LogEvent],
    symbolizer: &mut Symbolizer,
    max_frames: Option<usize>,
) -> String {
    let max_frames = max_frames.map_or(usize::MAX, |d| d.max(1));
    let mut out = String::new();
    for e in events {
        if let LogRecord::Callchain {
            pid,
            pcs,
            userspace,
            ..
        } = &e.record
        {
            let in_kernel = pmc_report::kernel_frames(*userspace, pcs);
            let mut left = max_frames;
            for (i, &pc) in pcs.iter().enumerate() {
                let r = symbolizer.resolve_frame(*pid, i, pc, i < in_kernel);
                if !r.is_named() && left > 0 {
                    let _ = writeln!(out, "{pc:#x} <unknown> ??:0");
                    left -= 1;
                    continue;
                }
                for f in r.frames.iter().take(left) {
                    // DWARF's line 0 ("no source line") is unresolved too.
                    let (file, line) = match (&f.file, f.line) {
                        (Some(file), Some(line)) => (file.as_str(), line),
                        _ => ("??", 0),
                    };
                    let _ = writeln!(out, "{pc:#x} {} {file}:{line}", f.function);
                    left -= 1;
                }
            }
            out.push_str("--\n");
        }
    }
    out
}

/// `-v`: pmcstat's conversion statistics for a log.
pub fn statistics(events: &[LogEvent]) -> String {
    let r = Resolver::new(events);
    let (mut total, mut unclaimed, mut empty, mut execs, mut lost) = (0u64, 0u64, 0u64, 0u64, 0u64);
    for e in events {
        match &e.record {
            LogRecord::Callchain { pid, pcs, .. } => {
                total += 1;
                match pcs.first() {
                    None => empty += 1,
                    Some(&pc) if r.mapping(*pid, pc).is_none() => unclaimed += 1,
                    Some(_) => {}
                }
            }
            LogRecord::ProcExec { .. } => execs += 1,
            LogRecord::Dropnotify { lost: n } => lost += n.map_or(1, u64::from),
            _ => {}
        }
    }
    let mut out = String::from("CONVERSION STATISTICS:\n");
    for (name, v) in [
        ("#exec/elf", execs),
        ("#samples/total", total),
        ("#samples/unclaimed", unclaimed),
        ("#callchain/empty", empty),
        ("#samples/lost", lost),
    ] {
        let _ = writeln!(out, " {name:<40} {v}");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(record: LogRecord) -> LogEvent {
        LogEvent::from(record)
    }

    fn chain(tid: u32, pcs: Vec<u64>) -> LogEvent {
        ev(LogRecord::Callchain {
            pid: 1,
            tid,
            pmcid: 1,
            cpu: 0,
            userspace: true,
            pcs,
        })
    }

    #[test]
    fn prepare_filters_threads_truncates_chains_and_reroots_paths() {
        let events = vec![
            ev(LogRecord::MapIn {
                pid: 1,
                start: 0x1000,
                path: "/usr/bin/x".into(),
            }),
            chain(1, vec![1, 2, 3, 4]),
            chain(2, vec![5, 6, 7]),
        ];
        let out = prepare(&events, Some(Path::new("/srv/root/")), Some(2), Some(2));
        assert_eq!(out.len(), 2, "{out:?}");
        assert!(
            matches!(&out[0].record, LogRecord::MapIn { path, .. } if path == "/srv/root/usr/bin/x")
        );
        assert!(
            matches!(&out[1].record, LogRecord::Callchain { tid: 2, pcs, .. } if pcs == &[5, 6])
        );
        assert_eq!(prepare(&events, None, None, None), events);
    }

    #[test]
    fn unmapped_pcs_are_unknown_and_counted_unclaimed() {
        let events = vec![chain(1, vec![0x10, 0x20]), chain(1, vec![])];
        let mut symbolizer = pmc_report::ProfileOptions::default().symbolizer(&events);
        assert_eq!(
            annotated_callchains(&events, &mut symbolizer, None),
            "0x10 <unknown> ??:0\n0x20 <unknown> ??:0\n--\n--\n"
        );
        assert_eq!(sampled_pcs(&events, &mut symbolizer), "");
        let s = statistics(&events);
        assert!(
            s.contains(" #samples/total                           2\n"),
            "{s}"
        );
        assert!(
            s.contains(" #samples/unclaimed                       1\n"),
            "{s}"
        );
        assert!(
            s.contains(" #callchain/empty                         1\n"),
            "{s}"
        );
    }
}
