//! Runtime pcs of logged processes to functions, with inline frames and
//! file:line from DWARF where the object has debug info.
//!
//! # MAP_IN `start`
//!
//! hwpmc logs one MAP_IN per run of executable map entries of a vnode, with
//! `start` = the first executable entry's start address
//! (`sys/dev/hwpmc/hwpmc_mod.c`, `pmc_log_process_mappings`: `start_addr =
//! entry->start` for entries with `VM_PROT_EXECUTE`). libpmcstat relocates
//! an image by `start - pi_vaddr` (`lib/libpmcstat/libpmcstat_image.c`,
//! `pmcstat_image_link`), where `pi_vaddr` is the address of the
//! executable PT_LOAD that maps file offset 0 for `ET_EXEC` and 0 otherwise
//! (`pmcstat_image_get_elf_params`). Both say: `start` is where the
//! object's first executable segment begins in memory. We therefore take
//! the load bias as `start - page_down(p_vaddr of the first executable
//! PT_LOAD)`, which is libpmcstat's formula for FreeBSD's usual layouts
//! (text at file offset 0) and stays right for objects whose text segment
//! does not start at offset 0 (`ld -z separate-code`, lld).
//!
//! Logs written by pmc before its writer followed hwpmc (INITIALIZE version
//! [`LEGACY_PMC_LOG_VERSION`]) put the address of file offset 0 there
//! instead; [`MapStart::for_log`] picks the convention from the log.

use std::collections::HashMap;
use std::sync::Arc;

use pmc::log::{LogEvent, LogRecord};

use crate::kallsyms::{KERNEL_FRAME, KernelNames, KernelNamesMissing, KernelSymbols};

mod debuginfo;
mod exec;
mod functions;
mod inflate;
mod jit;
mod names;
mod object_info;
mod sampled;
mod vdso;
pub use debuginfo::{DEBUG_DIR, DebugFiles};
use exec::exec_images;
pub use functions::{FunctionSymbol, function_at, function_symbols};
use object_info::ObjectInfo;
use sampled::Recorded;

/// INITIALIZE version of logs written by pmc before it logged MAP_IN the
/// way hwpmc does (those logs carry the address of file offset 0).
pub const LEGACY_PMC_LOG_VERSION: u32 = 0x0500_0000;

const PAGE: u64 = 4096;

/// What a MAP_IN record's `start` is the address of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MapStart {
    /// hwpmc's convention: the start of the object's first executable
    /// mapping.
    FirstExecutableMapping,
    /// The address where the object's file offset 0 would be mapped (pmc's
    /// logs before it followed hwpmc).
    FileOffsetZero,
}

impl MapStart {
    /// The convention of a log: [`MapStart::FileOffsetZero`] for logs whose
    /// INITIALIZE has [`LEGACY_PMC_LOG_VERSION`], hwpmc's otherwise.
    pub fn for_log(events: &[LogEvent]) -> MapStart {
        let legacy = events.iter().any(|e| {
            matches!(e.record, LogRecord::Initialize { version, .. } if version == LEGACY_PMC_LOG_VERSION)
        });
        if legacy {
            MapStart::FileOffsetZero
        } else {
            MapStart::FirstExecutableMapping
        }
    }
}

/// One source-level frame at a pc: a function, and where in it when debug
/// info says so. Inlined functions give several frames for one pc.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Frame {
    /// Demangled function name, `object+0xoffset` when the object has no
    /// symbol there, or `0xpc` when no mapping covers the pc.
    pub function: String,
    /// Source file, from DWARF.
    pub file: Option<String>,
    /// Source line, from DWARF.
    pub line: Option<u32>,
}

/// A mapped object of a process, as pprof describes mappings.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Mapping {
    /// First address of the object's executable mapping.
    pub memory_start: u64,
    /// End (exclusive) of the executable mapping.
    pub memory_limit: u64,
    /// File offset mapped at `memory_start`.
    pub file_offset: u64,
    /// Path of the object.
    pub path: String,
    /// GNU build id, lowercase hex, when the object has one.
    pub build_id: Option<String>,
    /// Lowest and highest (exclusive) object address of the executable
    /// sections (libpmcstat's `pi_start`/`pi_end`).
    pub text_range: Option<(u64, u64)>,
}

/// Everything known about one pc.
#[derive(Clone, Debug)]
pub struct Resolved {
    /// Frames, innermost (inlined callee) first, outermost (the real
    /// function) last. Never empty.
    pub frames: Vec<Frame>,
    /// The object's mapping, when one covers the pc.
    pub mapping: Option<Arc<Mapping>>,
    /// The pc as an address of the object's ELF image (what `nm`, gprof
    /// and DWARF use), when a mapping covers it.
    pub object_address: Option<u64>,
    /// Start (object address) of the containing function symbol.
    pub symbol_start: Option<u64>,
    /// End (object address, exclusive) of the containing function symbol.
    pub symbol_end: Option<u64>,
}

impl Resolved {
    /// A kernel pc without a name: the one [`KERNEL_FRAME`] frame.
    pub fn is_unnamed_kernel(&self) -> bool {
        self.mapping.is_none()
            && self.symbol_start.is_none()
            && self.frames.len() == 1
            && self.frames[0].function == KERNEL_FRAME
    }

    /// Whether a function names the pc: a symbol holds it, or DWARF
    /// names its frames. Otherwise its one frame is a stand-in:
    /// `object+0xoffset`, `0xpc` or [`KERNEL_FRAME`] (pmcstat `-a`'s
    /// `<unknown>`).
    pub fn is_named(&self) -> bool {
        self.symbol_start.is_some()
            || self
                .frames
                .iter()
                .any(|f| f.file.is_some() || f.line.is_some())
    }

    fn unnamed_kernel() -> Resolved {
        Resolved {
            frames: vec![Frame {
                function: KERNEL_FRAME.to_string(),
                file: None,
                line: None,
            }],
            mapping: None,
            object_address: None,
            symbol_start: None,
            symbol_end: None,
        }
    }
}

/// Resolves pcs of logged processes, with a cache per pc.
#[derive(Debug)]
pub struct Symbolizer {
    convention: MapStart,
    /// Per pid: (start, path), sorted by start.
    maps: HashMap<u32, Vec<(u64, Arc<str>)>>,
    objects: HashMap<Arc<str>, Option<ObjectInfo>>,
    mappings: HashMap<(Arc<str>, u64), Arc<Mapping>>,
    cache: HashMap<(u32, u64), Arc<Resolved>>,
    /// Kernel pcs: names from kallsyms, and their own cache.
    kernel: KernelNames,
    kernel_cache: HashMap<u64, Arc<Resolved>>,
    /// Separate debug files, looked up lazily and read once each.
    debug: DebugFiles,
    /// What the log says of its objects (last write, build ids): objects
    /// that are not the ones sampled are not named
    /// ([`Symbolizer::with_recorded_until`], [`Symbolizer::with_build_ids`]).
    recorded: Recorded,
    /// Per pid: the functions of `/tmp/perf-PID.map`, when it exists.
    perf_maps: HashMap<u32, Option<Vec<FunctionSymbol>>>,
    /// INITIALIZE's wall-clock time (seconds): older perf maps are another
    /// process's of the same pid.
    log_started: Option<u64>,
    /// Functions by their symbols alone: no inline frames, no file:line.
    names_only: bool,
}

impl Symbolizer {
    /// Learns the mappings of a log, with the log's MAP_IN convention
    /// ([`MapStart::for_log`]).
    pub fn new(events: &[LogEvent]) -> Symbolizer {
        Symbolizer::with_convention(events, MapStart::for_log(events))
    }

    /// Learns the mappings of a log whose MAP_IN `start`s follow `convention`.
    pub fn with_convention(events: &[LogEvent], convention: MapStart) -> Symbolizer {
        let mut maps: HashMap<u32, Vec<(u64, Arc<str>)>> = HashMap::new();
        let mut objects = HashMap::new();
        // Images placed from PROCEXEC rather than logged by MAP_IN.
        let mut placed: Vec<(u32, u64, Arc<str>)> = Vec::new();
        let mut version = pmc::log::PMC_VERSION;
        let mut kernel = KernelNames::running();
        let mut log_started = None;
        // Notes of the objects refused while placing execs, for -v.
        let mut debug = DebugFiles::default();
        for e in events {
            match &e.record {
                LogRecord::Initialize {
                    version: v,
                    time_sec,
                    ..
                } => {
                    version = *v;
                    log_started = Some(*time_sec);
                }
                // The vDSO is named from this process's own image, the
                // same kernel's only when the log is of this boot; else
                // it stays `[vdso]+0xoff`.
                LogRecord::MapIn { pid, start, path } if path == vdso::VDSO => {
                    maps.entry(*pid)
                        .or_default()
                        .push((*start, Arc::from(vdso::VDSO)));
                }
                LogRecord::MapIn { pid, start, path }
                    if *pid == u32::MAX && path == KERNEL_FRAME =>
                {
                    kernel.learn_kernel_mapping(*start);
                }
                LogRecord::MapIn { pid, start, path } if path.starts_with('/') => {
                    maps.entry(*pid)
                        .or_default()
                        .push((*start, Arc::from(path.as_str())));
                }
                // A child inherits its parent's mappings until it execs.
                LogRecord::ProcFork { oldpid, newpid } => {
                    let parent = maps.get(oldpid).cloned().unwrap_or_default();
                    maps.entry(*newpid).or_default().extend(parent);
                }
                LogRecord::ProcExec {
                    pid,
                    entry,
                    dynaddr,
                    path,
                    ..
                } => {
                    maps.remove(pid);
                    if convention == MapStart::FirstExecutableMapping {
                        let images =
                            exec_images(&mut objects, &mut debug, version, path, *entry, *dynaddr);
                        for (start, image) in images {
                            maps.entry(*pid).or_default().push((start, image.clone()));
                            placed.push((*pid, start, image));
                        }
                    }
                }
                _ => {}
            }
        }
        for (pid, m) in maps.iter_mut() {
            m.sort();
            m.dedup();
            // A MAP_IN at the same start says the same as a placement (and
            // names the file as the kernel does); keep the MAP_IN.
            let logged: Vec<u64> = m
                .iter()
                .filter(|(start, path)| !placed.contains(&(*pid, *start, path.clone())))
                .map(|(start, _)| *start)
                .collect();
            m.retain(|(start, path)| {
                !placed.contains(&(*pid, *start, path.clone())) || !logged.contains(start)
            });
        }
        if !log_started.is_some_and(vdso::of_this_boot) {
            objects.insert(Arc::from(vdso::VDSO), None);
        }
        Symbolizer {
            convention,
            maps,
            objects,
            mappings: HashMap::new(),
            cache: HashMap::new(),
            kernel,
            kernel_cache: HashMap::new(),
            debug,
            recorded: Recorded::default(),
            perf_maps: HashMap::new(),
            log_started,
            names_only: false,
        }
    }

    /// Looks separate debug files up under `root` (pmcstat's `-r`: the
    /// log's paths are already under it) instead of [`DEBUG_DIR`].
    pub fn with_debug_root(mut self, root: Option<std::path::PathBuf>) -> Symbolizer {
        let notes = std::mem::take(&mut self.debug);
        self.debug = DebugFiles::under_root(root);
        self.debug.keep_notes_of(notes);
        self.cache.clear();
        self
    }

    /// Leaves unnamed the objects modified on disk after `time` (the log's
    /// last write) whose build id the log did not record: pmclog names
    /// objects by path, so a file rebuilt since is another build whose
    /// names would be wrong. Only the modification time counts: a status
    /// change (`chmod`, a hard link) leaves the content as sampled.
    pub fn with_recorded_until(mut self, time: Option<std::time::SystemTime>) -> Symbolizer {
        self.recorded.until = time;
        self.cache.clear();
        self
    }

    /// The build ids the objects had when sampled, by path as the log
    /// names them: an object with one is named when its build id matches,
    /// whatever its times, and left `object+0xoff` when it does not (said
    /// in [`Symbolizer::debug_notes`]).
    pub fn with_build_ids(
        mut self,
        build_ids: std::collections::HashMap<String, Vec<u8>>,
    ) -> Symbolizer {
        self.recorded.build_ids = build_ids;
        self.cache.clear();
        self
    }

    /// Names each pc by its function's symbol alone, without DWARF's
    /// inline frames and file:line (all that `pmcstat -G` prints): a
    /// separate debug file's DWARF is then never parsed.
    pub fn with_names_only(mut self, names_only: bool) -> Symbolizer {
        self.names_only = names_only;
        self.cache.clear();
        self
    }

    /// Learns the mappings of `events` anew: the same log read further on
    /// (rolling profiles, [`crate::rolling`]), keeping the objects, debug
    /// files and kernel names read so far. Every pc is looked up again: a
    /// pid's mappings may have changed (an exec).
    pub fn learn_mappings(&mut self, events: &[LogEvent]) {
        let fresh = Symbolizer::with_convention(events, self.convention);
        self.maps = fresh.maps;
        for (path, object) in fresh.objects {
            self.objects.entry(path).or_insert(object);
        }
        self.log_started = fresh.log_started;
        self.cache.clear();
    }

    /// What the debug-file lookup skipped and why (missing, corrupt, other
    /// build id, bad CRC; objects changed since the log), for `-v`.
    pub fn debug_notes(&self) -> &[String] {
        self.debug.notes()
    }

    /// How many candidate debug files were read: each at most once per
    /// report, and only when one of its object's pcs needed a name.
    pub fn debug_files_opened(&self) -> usize {
        self.debug.opened()
    }

    /// Names kernel pcs from `symbols` instead of the running kernel's
    /// `/proc/kallsyms`.
    pub fn with_kernel_symbols(mut self, symbols: Arc<KernelSymbols>) -> Symbolizer {
        self.kernel.use_symbols(symbols);
        self.kernel_cache.clear();
        self.cache.clear();
        self
    }

    /// Why kernel pcs went unnamed, once one needed a name and got none.
    pub fn kernel_names_missing(&self) -> Option<&KernelNamesMissing> {
        self.kernel.missing()
    }

    /// [`Symbolizer::resolve_frame`] for a caller that keeps what it gets
    /// for each (pid, pc) itself: what the caches hold already is taken
    /// from them, and nothing is added to them (a profile's locations
    /// would be held twice).
    pub(crate) fn resolve_frame_once(
        &mut self,
        pid: u32,
        index: usize,
        pc: u64,
        kernel: bool,
    ) -> Arc<Resolved> {
        let address = frame_address(index, pc);
        if kernel {
            match self.kernel_cache.get(&address) {
                Some(r) => r.clone(),
                None => self.resolve_kernel_uncached(address),
            }
        } else {
            match self.cache.get(&(pid, address)) {
                Some(r) => r.clone(),
                None => Arc::new(self.resolve_named(pid, address)),
            }
        }
    }

    /// Everything known about a kernel pc (a frame the log marks as the
    /// kernel's, [`crate::kernel_frames`]): the kernel ELF of the log's
    /// kernel mapping where it has one (FreeBSD's `/boot/kernel/kernel`),
    /// else its kallsyms symbol, else the one [`KERNEL_FRAME`] frame.
    pub fn resolve_kernel(&mut self, pc: u64) -> Arc<Resolved> {
        if let Some(r) = self.kernel_cache.get(&pc) {
            return r.clone();
        }
        let r = self.resolve_kernel_uncached(pc);
        self.kernel_cache.insert(pc, r.clone());
        r
    }

    fn resolve_kernel_uncached(&mut self, pc: u64) -> Arc<Resolved> {
        if self.maps.contains_key(&u32::MAX) {
            let r = self.resolve(u32::MAX, pc);
            if r.mapping.is_some() {
                return r;
            }
        }
        let Some(symbol) = self.kernel.symbol_at(pc).cloned() else {
            return Arc::new(Resolved::unnamed_kernel());
        };
        let object: Arc<str> = Arc::from(symbol.object());
        let mapping = match self.mappings.get(&(object.clone(), 0)) {
            Some(m) => m.clone(),
            None => {
                // The object's extent: from its first symbol to its last's end.
                let symbols = self.kernel.symbols().map(|s| s.symbols()).unwrap_or(&[]);
                let mut of_object = symbols.iter().filter(|s| s.module == symbol.module);
                let first = of_object.next().map_or(symbol.start, |s| s.start);
                let limit = of_object.next_back().map_or(symbol.end, |s| s.end);
                let m = Arc::new(Mapping {
                    memory_start: first,
                    memory_limit: limit.max(symbol.end),
                    file_offset: 0,
                    path: object.to_string(),
                    build_id: None,
                    text_range: None,
                });
                self.mappings.insert((object, 0), m.clone());
                m
            }
        };
        Arc::new(Resolved {
            frames: vec![Frame {
                function: symbol.name,
                file: None,
                line: None,
            }],
            mapping: Some(mapping),
            object_address: Some(pc),
            symbol_start: Some(symbol.start),
            symbol_end: Some(symbol.end),
        })
    }

    /// The convention in use.
    pub fn convention(&self) -> MapStart {
        self.convention
    }

    /// The innermost function name at a pc of `pid` (`object+0xoffset`
    /// without a symbol, `0xpc` without a mapping).
    pub fn name(&mut self, pid: u32, pc: u64) -> String {
        self.resolve(pid, pc)
            .frames
            .first()
            .map(|f| f.function.clone())
            .unwrap_or_default()
    }

    /// The frames of the `index`th pc of a callchain of `pid` (leaf
    /// first), as every report names them: the leaf looked up at its pc,
    /// a caller one byte before its return address ([`frame_address`]),
    /// kernel pcs (`kernel`, [`crate::kernel_frames`]) through
    /// [`Symbolizer::resolve_kernel`].
    pub fn resolve_frame(
        &mut self,
        pid: u32,
        index: usize,
        pc: u64,
        kernel: bool,
    ) -> Arc<Resolved> {
        let address = frame_address(index, pc);
        if kernel {
            self.resolve_kernel(address)
        } else {
            self.resolve(pid, address)
        }
    }

    /// Everything known about a pc of `pid`, through the log's mappings
    /// (kernel frames: [`Symbolizer::resolve_kernel`]).
    pub fn resolve(&mut self, pid: u32, pc: u64) -> Arc<Resolved> {
        if let Some(r) = self.cache.get(&(pid, pc)) {
            return r.clone();
        }
        let r = Arc::new(self.resolve_named(pid, pc));
        self.cache.insert((pid, pc), r.clone());
        r
    }

    /// A pc of `pid` through the log's mappings, else the process's perf
    /// map; uncached.
    fn resolve_named(&mut self, pid: u32, pc: u64) -> Resolved {
        let mut r = self.resolve_uncached(pid, pc);
        let log_started = self.log_started;
        // No object maps it: JIT code, named by the process's perf map.
        if r.mapping.is_none() {
            let file = self.debug.rooted(&jit::perf_map_path(pid));
            let map = self
                .perf_maps
                .entry(pid)
                .or_insert_with(|| jit::read_perf_map(&file, log_started));
            if let Some(found) = jit::resolve(map.as_deref(), &file, pc) {
                r = found;
            }
        }
        // Frames are pushed one by one (a Vec's first push holds room for
        // four); one Resolved is kept per distinct pc, so hold them exactly.
        r.frames.shrink_to_fit();
        r
    }

    fn resolve_uncached(&mut self, pid: u32, pc: u64) -> Resolved {
        let raw = || Resolved {
            frames: vec![Frame {
                function: format!("{pc:#x}"),
                file: None,
                line: None,
            }],
            mapping: None,
            object_address: None,
            symbol_start: None,
            symbol_end: None,
        };
        // The process's own objects first, then the kernel's (hwpmc logs
        // kernel MAP_INs with pid -1, pmc_log_kernel_mappings).
        let lookup = |pid: u32| {
            let maps = self.maps.get(&pid)?;
            let i = maps.partition_point(|(start, _)| *start <= pc);
            i.checked_sub(1).and_then(|i| maps.get(i)).cloned()
        };
        let found = match lookup(pid) {
            Some(m) if pid != u32::MAX && self.maps.contains_key(&u32::MAX) => {
                // A kernel pc lies above every user mapping: prefer the
                // kernel's mapping when it starts above the user one.
                match lookup(u32::MAX) {
                    Some(k) if k.0 > m.0 => Some(k),
                    _ => Some(m),
                }
            }
            Some(m) => Some(m),
            None => lookup(u32::MAX),
        };
        let Some((start, path)) = found else {
            return raw();
        };
        let debug = &mut self.debug;
        let info = self
            .objects
            .entry(path.clone())
            .or_insert_with(|| ObjectInfo::load(&path, debug));
        let file_name = path.rsplit('/').next().unwrap_or(&path).to_string();
        let Some(info) = info else {
            return Resolved {
                frames: vec![Frame {
                    function: format!("{file_name}+{:#x}", pc - start),
                    file: None,
                    line: None,
                }],
                ..raw()
            };
        };
        let Some(addr) = info.object_address(self.convention, start, pc) else {
            return raw();
        };
        let bias = pc.wrapping_sub(addr);
        let mapping = self
            .mappings
            .entry((path.clone(), bias))
            .or_insert_with(|| Arc::new(info.mapping(&path, bias)))
            .clone();
        // MAP_IN has no end: past the object's text the pc is not its.
        if !(mapping.memory_start..mapping.memory_limit).contains(&pc) {
            return raw();
        }
        let names = info.names(&path, &mut self.debug, &self.recorded, self.names_only);
        let symbol = names.symbol_at(addr);
        let mut frames = names.frames(addr, symbol.map(|s| s.name), self.names_only);
        if frames.is_empty() {
            frames.push(Frame {
                function: format!("{file_name}+{addr:#x}"),
                file: None,
                line: None,
            });
        }
        Resolved {
            frames,
            mapping: Some(mapping),
            object_address: Some(addr),
            symbol_start: symbol.map(|s| s.start),
            symbol_end: symbol.map(|s| s.end),
        }
    }

    /// Executable-section extent (object addresses) of the object at
    /// `path`, libpmcstat's `pi_start`/`pi_end`.
    pub fn text_range(&mut self, path: &str) -> Option<(u64, u64)> {
        let key: Arc<str> = Arc::from(path);
        let debug = &mut self.debug;
        self.objects
            .entry(key)
            .or_insert_with(|| ObjectInfo::load(path, debug))
            .as_ref()?
            .text_range
    }
}

/// Where a callchain's `index`th pc (leaf first) is looked up: the leaf at
/// its own pc; a caller's pc is a return address, after the call, so one
/// byte before it, inside the calling instruction.
pub fn frame_address(index: usize, pc: u64) -> u64 {
    if index == 0 { pc } else { pc.saturating_sub(1) }
}
