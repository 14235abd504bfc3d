//! Profiles from pmclog records, for profilers that embed `pmc`: log
//! records in, symbolised stacks and files out.
//!
//! [`Profile::from_events`] aggregates the callchains of a log per PMC,
//! process, thread and CPU, and resolves each distinct pc once through the
//! [`Symbolizer`] (ELF symbols, and inline frames with file:line from DWARF
//! where the object has debug info; kernel frames from `/proc/kallsyms`,
//! [`kallsyms`]). The writers turn a profile into the
//! formats the usual tools read:
//!
//! | writer | format | read by |
//! |---|---|---|
//! | [`folded`] | folded stacks | flamegraph.pl, inferno, speedscope |
//! | [`callgraph`] | pmcstat `-G` text | people |
//! | [`callgrind`] | callgrind profile | callgrind_annotate, KCachegrind |
//! | [`gmon`] | gprof `gmon.out` per object | gprof |
//! | [`pprof`] | gzipped `profile.proto` | go tool pprof, Parca, Pyroscope, Grafana |
//! | [`flamegraph`] | interactive SVG | browsers |

#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod callgrind_writer;
mod chains;
mod gmon_writer;
pub mod kallsyms;
mod pprof_writer;
pub mod rolling;
pub mod symbols;
mod text;

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use pmc::log::{LogEvent, LogRecord};

pub use callgrind_writer::callgrind;
pub use gmon_writer::{GmonFile, gmon};
pub use kallsyms::{
    KERNEL_FRAME, KernelNames, KernelNamesMissing, KernelSymbol, KernelSymbols, kernel_frames,
};
/// The one door to the object files a log names ([`ObjectFile::open`]).
pub use pmc_unwind::{MAX_OBJECT_BYTES, ObjectFile, open_untrusted_object};
pub use pprof_writer::{pprof, pprof_uncompressed};
pub use symbols::{
    DEBUG_DIR, DebugFiles, Frame, FunctionSymbol, MapStart, Mapping, Resolved, Symbolizer,
    frame_address, function_at, function_symbols,
};
pub use text::{callgraph, flamegraph, folded, write_callgraph, write_folded};

/// Errors of the writers.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Writing an output failed.
    #[error(
        "writing {what} failed: {source} (errno {errno:?}); check the destination's space and permissions"
    )]
    Write {
        /// Which output.
        what: &'static str,
        /// The errno, when the OS gave one.
        errno: Option<i32>,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The flame graph renderer refused the stacks.
    #[error(
        "rendering the flame graph failed: {0}; the folded stacks (--folded) still hold the data"
    )]
    Flamegraph(String),
}

impl Error {
    pub(crate) fn write(what: &'static str, source: std::io::Error) -> Error {
        Error::Write {
            what,
            errno: source.raw_os_error(),
            source,
        }
    }
}

/// Result of the writers.
pub type Result<T> = std::result::Result<T, Error>;

/// A sampled event: one PMC of the log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Event {
    /// The PMC id in the log.
    pub pmcid: u32,
    /// Its name (PMCALLOCATEDYN), or `pmc 0x…` when the log has none.
    pub name: String,
    /// Events between two samples (the reload count), when known.
    pub period: Option<u64>,
}

/// A distinct stack of one event, thread and CPU, with its sample count.
#[derive(Clone, Debug)]
pub struct Sample {
    /// Index into [`Profile::events`].
    pub event: usize,
    /// Process id.
    pub pid: u32,
    /// Thread id.
    pub tid: u32,
    /// CPU the samples were taken on.
    pub cpu: u16,
    /// Where its locations are in [`Profile::stack_locations`]
    /// ([`Profile::stack`]): the stacks of a profile are held end to end in
    /// one buffer, not one allocation each.
    pub stack: std::ops::Range<u32>,
    /// Number of samples.
    pub count: u64,
}

/// A distinct pc of a process (or of the kernel), resolved.
#[derive(Clone, Debug)]
pub struct Location {
    /// Process id; `u32::MAX` (hwpmc's kernel pid, -1) for kernel frames,
    /// which every process shares.
    pub pid: u32,
    /// The pc looked up: the sampled pc for leaves, the return address
    /// minus one for callers (so it falls inside the call).
    pub address: u64,
    /// What it resolved to.
    pub resolved: Arc<Resolved>,
}

impl Location {
    /// The outermost (real, not inlined) function.
    pub fn function(&self) -> &str {
        self.resolved
            .frames
            .last()
            .map(|f| f.function.as_str())
            .unwrap_or("")
    }
}

/// (pmcid, pid, tid, cpu).
type Who = (u32, u32, u32, u16);
/// The pid of kernel locations (hwpmc logs the kernel's mappings as pid -1).
const KERNEL_PID: u32 = u32::MAX;

/// Builds a [`Profile`] from records fed one at a time, so a log of any
/// size is reported in memory proportional to its distinct stacks: only the
/// records that describe mappings and events are kept, and each distinct
/// callchain once, as a node of a tree its callers share.
#[derive(Debug, Default)]
pub struct ProfileBuilder {
    options: ProfileOptions,
    /// MAP_IN, PROCFORK, PROCEXEC, INITIALIZE, PMCALLOCATE(DYN) records.
    context: Vec<LogEvent>,
    /// The distinct callchains.
    chains: chains::ChainTree,
    /// Distinct ((pmcid, pid, tid, cpu), user mode sample), and each one's id.
    whos: Vec<(Who, bool)>,
    who_ids: rustc_hash::FxHashMap<(Who, bool), u32>,
    /// `who id << 32 | chain node` → samples (FxHash: every sample hashes
    /// its key once, and the keys are ours).
    counts: rustc_hash::FxHashMap<u64, u64>,
}

impl ProfileBuilder {
    /// An empty builder.
    pub fn new(options: ProfileOptions) -> ProfileBuilder {
        ProfileBuilder {
            options,
            ..ProfileBuilder::default()
        }
    }

    /// Feeds one record of the log.
    pub fn push(&mut self, event: &LogEvent) {
        match &event.record {
            LogRecord::Callchain {
                pid,
                tid,
                pmcid,
                cpu,
                userspace,
                pcs,
            } => {
                if pcs.is_empty() {
                    return;
                }
                let pcs = match self.options.max_depth {
                    Some(d) => &pcs[..pcs.len().min(d.max(1))],
                    None => &pcs[..],
                };
                let who = ((*pmcid, *pid, *tid, *cpu), *userspace);
                let who = match self.who_ids.get(&who) {
                    Some(&id) => id,
                    None => {
                        let id = self.whos.len() as u32;
                        self.whos.push(who);
                        self.who_ids.insert(who, id);
                        id
                    }
                };
                let node = self.chains.intern(pcs);
                *self
                    .counts
                    .entry(u64::from(who) << 32 | u64::from(node))
                    .or_default() += 1;
            }
            LogRecord::MapIn { .. }
            | LogRecord::ProcFork { .. }
            | LogRecord::ProcExec { .. }
            | LogRecord::Initialize { .. }
            | LogRecord::PmcAllocate { .. }
            | LogRecord::PmcAllocateDyn { .. } => self.context.push(event.clone()),
            _ => {}
        }
    }

    /// Distinct stacks so far: (event, process, thread, CPU, mode,
    /// callchain) with a count each, however many samples they hold.
    pub fn distinct_stacks(&self) -> usize {
        self.counts.len()
    }

    /// Symbolises the distinct pcs and returns the profile.
    pub fn finish(self) -> Profile {
        let mut symbolizer = self.options.symbolizer(&self.context);
        self.finish_with(&mut symbolizer)
    }

    /// [`ProfileBuilder::finish`] with `symbolizer` (made by
    /// [`ProfileOptions::symbolizer`] from the same log), which other
    /// reports of the log then share: its objects and debug files are read
    /// once for all of them, and each pc is named alike in each.
    pub fn finish_with(self, symbolizer: &mut Symbolizer) -> Profile {
        let ProfileBuilder {
            options,
            context,
            mut chains,
            whos,
            who_ids,
            counts,
        } = self;
        drop(who_ids);
        chains.freeze();
        let mut names: HashMap<u32, String> = HashMap::new();
        let mut rates: HashMap<u32, u64> = HashMap::new();
        for e in &context {
            match &e.record {
                LogRecord::PmcAllocateDyn { pmcid, name, .. } => {
                    names.insert(*pmcid, name.clone());
                }
                LogRecord::PmcAllocate { pmcid, rate, .. } if *rate > 0 => {
                    rates.insert(*pmcid, *rate);
                }
                _ => {}
            }
        }
        let mut pmcids: Vec<u32> = whos.iter().map(|k| k.0.0).collect();
        pmcids.sort_unstable();
        pmcids.dedup();
        let event_index: HashMap<u32, usize> =
            pmcids.iter().enumerate().map(|(i, p)| (*p, i)).collect();
        let events_out: Vec<Event> = pmcids
            .iter()
            .map(|&pmcid| Event {
                pmcid,
                name: names
                    .get(&pmcid)
                    .cloned()
                    .unwrap_or_else(|| format!("pmc {pmcid:#x}")),
                period: options
                    .periods
                    .get(&pmcid)
                    .or_else(|| rates.get(&pmcid))
                    .copied(),
            })
            .collect();
        let mut locations: Vec<Location> = Vec::new();
        let mut location_index: HashMap<(u32, u64, bool), usize> = HashMap::new();
        // Deterministic output: sorted by whose samples, then chain (leaf
        // first), compared along the tree without making the chains.
        // Each distinct stack is made its Sample at once, and filled in
        // below: until then `event` holds its who id and `stack.start` its
        // chain node (so no second list of them is held meanwhile).
        let mut samples: Vec<Sample> = counts
            .into_iter()
            .map(|(k, count)| Sample {
                event: (k >> 32) as usize,
                pid: 0,
                tid: 0,
                cpu: 0,
                stack: k as u32..0,
                count,
            })
            .collect();
        samples.sort_unstable_by(|a, b| {
            whos[a.event]
                .cmp(&whos[b.event])
                .then_with(|| chains.walk(a.stack.start).cmp(chains.walk(b.stack.start)))
        });
        // At most a location per pc: room for all of them at once.
        let pcs_in_all: usize = samples
            .iter()
            .map(|s| chains.walk(s.stack.start).count())
            .sum();
        let mut stack_locations: Vec<u32> = Vec::with_capacity(pcs_in_all);
        let mut pcs: Vec<u64> = Vec::new();
        for sample in samples.iter_mut() {
            let (who, node) = (sample.event, sample.stack.start);
            let ((pmcid, pid, tid, cpu), userspace) = whos[who];
            chains.chain(node, &mut pcs);
            let in_kernel = kernel_frames(userspace, &pcs);
            let first = stack_locations.len();
            for (i, pc) in pcs.iter().enumerate() {
                // Return addresses point after the call: step back one
                // byte so they fall inside the calling function.
                let address = frame_address(i, *pc);
                // pmcstat -I: the leaf is shown as its address, unresolved.
                let unresolved = i == 0 && options.leaf_address;
                let kernel = i < in_kernel;
                let owner = if kernel { KERNEL_PID } else { pid };
                let l = *location_index
                    .entry((owner, address, unresolved))
                    .or_insert_with(|| {
                        let resolved = if unresolved {
                            Arc::new(Resolved {
                                frames: vec![Frame {
                                    function: format!("{address:#x}"),
                                    file: None,
                                    line: None,
                                }],
                                mapping: None,
                                object_address: None,
                                symbol_start: None,
                                symbol_end: None,
                            })
                        } else {
                            symbolizer.resolve_frame_once(pid, i, *pc, kernel)
                        };
                        locations.push(Location {
                            pid: owner,
                            address,
                            resolved,
                        });
                        locations.len() - 1
                    });
                // Unnamed kernel pcs in a row are one [kernel.kallsyms] frame.
                let repeats_unnamed_kernel = kernel
                    && locations[l].resolved.is_unnamed_kernel()
                    && stack_locations[first..]
                        .last()
                        .is_some_and(|&p| locations[p as usize].resolved.is_unnamed_kernel());
                if !repeats_unnamed_kernel {
                    stack_locations.push(l as u32);
                }
            }
            *sample = Sample {
                event: event_index[&pmcid],
                pid,
                tid,
                cpu,
                stack: first as u32..stack_locations.len() as u32,
                count: sample.count,
            };
        }
        stack_locations.shrink_to_fit();
        Profile {
            events: events_out,
            locations,
            samples,
            stack_locations,
            max_frames: options.max_depth,
            kernel_names_missing: symbolizer.kernel_names_missing().cloned(),
            debug_notes: symbolizer.debug_notes().to_vec(),
            debug_files_opened: symbolizer.debug_files_opened(),
        }
    }
}

/// A symbolised profile of a log.
#[derive(Debug, Default)]
pub struct Profile {
    /// The sampled events, in pmcid order.
    pub events: Vec<Event>,
    /// The distinct pcs.
    pub locations: Vec<Location>,
    /// The distinct stacks with their counts.
    pub samples: Vec<Sample>,
    /// The samples' stacks end to end: indices into
    /// [`Profile::locations`], each stack leaf first ([`Profile::stack`]).
    pub stack_locations: Vec<u32>,
    /// [`ProfileOptions::max_depth`]: named stacks keep this many innermost
    /// frames (inline frames count, as a reader counts the names it sees).
    pub max_frames: Option<usize>,
    /// Why kernel frames are unnamed ([`KERNEL_FRAME`]), when the profile
    /// has kernel frames and no names for them: for the caller to say once.
    pub kernel_names_missing: Option<KernelNamesMissing>,
    /// Debug files skipped and why ([`Symbolizer::debug_notes`]), for a
    /// verbose report.
    pub debug_notes: Vec<String>,
    /// Candidate debug files read ([`Symbolizer::debug_files_opened`]).
    pub debug_files_opened: usize,
}

/// Options of [`Profile::from_events_with`].
#[derive(Clone, Debug, Default)]
pub struct ProfileOptions {
    /// Sampling period per pmcid, overriding what the log says (pmcstat
    /// knows its `-n`).
    pub periods: HashMap<u32, u64>,
    /// MAP_IN convention; `None` picks it from the log
    /// ([`MapStart::for_log`]).
    pub map_start: Option<MapStart>,
    /// Keep only the innermost `max_depth` pcs of each callchain, and the
    /// innermost `max_depth` names of each named stack (a pc with inlined
    /// calls names several functions).
    pub max_depth: Option<usize>,
    /// Show each sample's leaf pc as its address instead of resolving it
    /// (pmcstat `-I`, `FLAG_SKIP_TOP_FN_RES`).
    pub leaf_address: bool,
    /// The kernel's symbols for kernel frames; `None` reads the running
    /// kernel's `/proc/kallsyms` the first time a kernel pc needs a name.
    pub kernel_symbols: Option<Arc<KernelSymbols>>,
    /// Look separate debug files up under this root (pmcstat's `-r`), not
    /// in the running system's [`DEBUG_DIR`].
    pub debug_root: Option<std::path::PathBuf>,
    /// When the log was last written: objects modified on disk after it
    /// whose build id `build_ids` does not give stay unnamed
    /// ([`Symbolizer::with_recorded_until`]).
    pub recorded_until: Option<std::time::SystemTime>,
    /// The build id of each object when it was sampled, by its path
    /// exactly as the log names it (perf.data's build-id section, say): a
    /// match names the object whatever its times, a mismatch leaves it
    /// `object+0xoff` ([`Symbolizer::with_build_ids`]). Empty by default.
    pub build_ids: HashMap<String, Vec<u8>>,
    /// Name pcs by their functions' symbols alone, without inline frames
    /// and file:line ([`Symbolizer::with_names_only`]).
    pub names_only: bool,
}

impl ProfileOptions {
    /// The symbolizer these options describe for a log (its mappings from
    /// `events`' MAP_IN, fork and exec records): what names every frame of
    /// every report, [`Profile`] and pmcstat's `-a` and `-m` alike.
    pub fn symbolizer(&self, events: &[LogEvent]) -> Symbolizer {
        let mut symbolizer = match self.map_start {
            Some(c) => Symbolizer::with_convention(events, c),
            None => Symbolizer::new(events),
        };
        if let Some(symbols) = &self.kernel_symbols {
            symbolizer = symbolizer.with_kernel_symbols(symbols.clone());
        }
        symbolizer
            .with_debug_root(self.debug_root.clone())
            .with_recorded_until(self.recorded_until)
            .with_build_ids(self.build_ids.clone())
            .with_names_only(self.names_only)
    }
}

impl Profile {
    /// Aggregates and symbolises the callchains of a log.
    pub fn from_events(events: &[LogEvent]) -> Profile {
        Profile::from_events_with(events, &ProfileOptions::default())
    }

    /// [`Profile::from_events`] with options.
    pub fn from_events_with(events: &[LogEvent], options: &ProfileOptions) -> Profile {
        let mut builder = ProfileBuilder::new(options.clone());
        for e in events {
            builder.push(e);
        }
        builder.finish()
    }

    /// [`Profile::from_events_with`], naming pcs with `symbolizer` (made
    /// by [`ProfileOptions::symbolizer`] from `events`), which the
    /// caller's other reports of the log then share.
    pub fn from_events_using(
        events: &[LogEvent],
        options: &ProfileOptions,
        symbolizer: &mut Symbolizer,
    ) -> Profile {
        let mut builder = ProfileBuilder::new(options.clone());
        for e in events {
            builder.push(e);
        }
        builder.finish_with(symbolizer)
    }

    /// The locations of a sample's stack (indices into
    /// [`Profile::locations`]), leaf first.
    pub fn stack(&self, sample: &Sample) -> &[u32] {
        &self.stack_locations[sample.stack.start as usize..sample.stack.end as usize]
    }

    /// Total samples of an event.
    pub fn total(&self, event: usize) -> u64 {
        self.samples
            .iter()
            .filter(|s| s.event == event)
            .map(|s| s.count)
            .sum()
    }

    /// The stacks of each event as function names (inline frames
    /// expanded), leaf first, with their sample counts. Keys are pmcids.
    pub fn stacks(&self) -> BTreeMap<u32, HashMap<Vec<String>, u64>> {
        let mut out: BTreeMap<u32, HashMap<Vec<String>, u64>> = BTreeMap::new();
        for s in &self.samples {
            let names: Vec<String> = self
                .stack(s)
                .iter()
                .flat_map(|&l| self.locations[l as usize].resolved.frames.iter())
                .map(|f| f.function.clone())
                .take(self.max_frames.map_or(usize::MAX, |d| d.max(1)))
                .collect();
            *out.entry(self.events[s.event].pmcid)
                .or_default()
                .entry(names)
                .or_default() += s.count;
        }
        out
    }
}

#[cfg(test)]
mod tests;
