//! `pmcstat -T`: the top-like live view of sampling PMCs.
//!
//! Screen and keys follow FreeBSD's `usr.sbin/pmcstat/pmcstat_log.c`
//! (`pmcstat_refresh_top`: `PMC: [name] Samples: n (p%) , u unresolved`;
//! `pmcstat_keypress_log`: `c` then `a`/`d` accumulate or delta mode, `m`
//! merge PMCs of the same name, `n` next view (plugin), `p` next PMC, space
//! pause, `q` quit, each with its `Key: %c => ` message), the default view
//! `pmcpl_callgraph.c`'s (`pmcpl_cg_topdisplay`: `%SAMP IMAGE FUNCTION
//! CALLERS` rows, callers as `name:pct` when there are several) and the
//! other `pmcpl_calltree.c`'s (`top/calltree.rs`; `f` toggles skiplink
//! there). `-f threshold=P` hides rows under P% and `-f skiplink=1` shows
//! the call tree's nodes under it as a dot, as pmcstat's plugin options do.

use std::collections::{HashMap, HashSet, VecDeque};
use std::fmt::Write as _;
use std::rc::Rc;
use std::time::{Duration, Instant};

use pmc::log::{LogEvent, LogRecord};
use pmc_report::KERNEL_FRAME;

use crate::annotate::Resolver;

mod calltree;
mod event_loop;
pub mod feed;
mod screen;
use calltree::{CallTree, FastMap, Key, cut};
pub use event_loop::{Ended, Feed, RECORDS_PER_STEP, run};
use event_loop::{Input, Ui};
#[cfg(test)]
use event_loop::{next_refresh, run_on};

/// Samples of one PMC, aggregated by function.
#[derive(Debug, Default, Clone)]
struct PmcAgg {
    samples: u64,
    unresolved: u64,
    /// (image, function) → (self samples, caller → samples).
    leaves: FastMap<Key, (u64, FastMap<Rc<str>, u64>)>,
    /// The samples as pmcpl_calltree.c's graph (the `n` view).
    calltree: CallTree,
}

impl PmcAgg {
    /// One sample's frames, leaf first.
    fn add(&mut self, frames: &[Key]) {
        self.samples += 1;
        let Some(leaf) = frames.first() else {
            self.unresolved += 1;
            return;
        };
        if &*leaf.0 == "?" || &*leaf.1 == KERNEL_FRAME {
            self.unresolved += 1;
        }
        let entry = self.leaves.entry(leaf.clone()).or_default();
        entry.0 += 1;
        if let Some(caller) = frames.get(1) {
            *entry.1.entry(caller.1.clone()).or_default() += 1;
        }
        self.calltree.add(frames);
    }

    /// Adds a later interval's samples ([`CallTree::append`]).
    fn append(&mut self, later: &PmcAgg) {
        self.add_rows(later);
        self.calltree.append(&later.calltree);
    }

    fn merge(&mut self, other: &PmcAgg) {
        self.add_rows(other);
        self.calltree.merge(&other.calltree);
    }

    /// The counts and call graph rows of `other` added to these.
    fn add_rows(&mut self, other: &PmcAgg) {
        self.samples += other.samples;
        self.unresolved += other.unresolved;
        for (k, (n, callers)) in &other.leaves {
            let e = self.leaves.entry(k.clone()).or_default();
            e.0 += n;
            for (c, m) in callers {
                *e.1.entry(c.clone()).or_default() += m;
            }
        }
    }
}

/// What a key did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyOutcome {
    /// Redraw and go on.
    Continue,
    /// `q`: leave the view.
    Quit,
}

/// Which table the view shows (`n` switches).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum View {
    /// Self samples per function with its callers (pmcpl_callgraph.c).
    CallGraph,
    /// pmcpl_calltree.c's paths from the outermost callers.
    CallTree,
}

/// The state of the top view: options, modes and the samples so far.
#[derive(Debug)]
pub struct TopView {
    accumulate: bool,
    paused: bool,
    merge: bool,
    view: View,
    skiplink: bool,
    threshold: f64,
    show_address: bool,
    /// Index into the PMC (or merged name) list.
    selected: usize,
    awaiting_mode: bool,
    status: String,
    resolver: Resolver,
    /// pmcid → event name, in allocation order.
    pmcs: Vec<(u32, String)>,
    total: HashMap<u32, PmcAgg>,
    delta: HashMap<u32, PmcAgg>,
    /// What was absorbed since the last refresh: the next delta.
    pending: HashMap<u32, PmcAgg>,
    /// Processes that exited since the last refresh.
    exiting: HashSet<u32>,
    /// Processes that exited in the interval before: let go at the next
    /// refresh.
    exited: HashSet<u32>,
    /// Whether a process still exists, and when that was last asked.
    liveness: Option<(Exists, Instant)>,
    /// The frames named since the last refresh, by pid then (pc, leaf):
    /// a hot pc is looked up once an interval, not once a sample. A pid's
    /// are let go when its mappings change; all of them at each refresh,
    /// so the cache holds one interval's distinct pcs at most.
    named: FastMap<u32, FastMap<(u64, bool), Key>>,
}

/// The refreshes an object no process maps any longer is kept for: the
/// short-lived processes of a loop or a build map the same objects one
/// after another, and reading a large one's symbols again for each took
/// seconds.
pub const OBJECT_GRACE: u32 = 10;

/// Whether a process exists (`pmc::process_exists`).
type Exists = fn(u32) -> bool;

/// How often the view asks whether the processes it holds still exist.
const LIVENESS_SWEEP: Duration = Duration::from_secs(5);

impl TopView {
    /// A view: `threshold` in percent (rows below it are hidden),
    /// `skiplink` (show hidden rows as a dot), `show_address` (`-I`: the
    /// leaf as its address).
    pub fn new(threshold: f64, skiplink: bool, show_address: bool) -> TopView {
        TopView {
            accumulate: false,
            paused: false,
            merge: true,
            view: View::CallGraph,
            skiplink,
            threshold,
            show_address,
            selected: 0,
            awaiting_mode: false,
            status: String::new(),
            resolver: Resolver::default(),
            pmcs: Vec::new(),
            total: HashMap::new(),
            delta: HashMap::new(),
            pending: HashMap::new(),
            exiting: HashSet::new(),
            exited: HashSet::new(),
            liveness: None,
            named: FastMap::default(),
        }
    }

    /// Whether space paused the display.
    pub fn paused(&self) -> bool {
        self.paused
    }

    /// Takes in the records logged since the last update; they become the
    /// new delta (one refresh: [`TopView::absorb`], then
    /// [`TopView::refresh`]).
    pub fn update(&mut self, new: &[LogEvent]) {
        self.absorb(new);
        self.refresh();
    }

    /// Takes in records, in log order, into the interval being gathered:
    /// each mapping, fork and exec is learnt where it stands, so a sample
    /// is named by the mappings its process had when it was taken.
    pub fn absorb(&mut self, new: &[LogEvent]) {
        for e in new {
            match &e.record {
                LogRecord::ProcFork { newpid, .. } => {
                    // A new process, whatever its pid held before (an
                    // exit not yet let go, or one never logged): it starts
                    // with its parent's mappings only.
                    self.exiting.remove(newpid);
                    self.exited.remove(newpid);
                    self.resolver.forget_process(*newpid);
                    self.named.remove(newpid);
                }
                LogRecord::ProcExit { pid, .. } | LogRecord::SysExit { pid } => {
                    self.exiting.insert(*pid);
                }
                // What its pcs name changes with its mappings.
                LogRecord::MapIn { pid, .. }
                | LogRecord::MapOut { pid, .. }
                | LogRecord::ProcExec { pid, .. } => {
                    self.named.remove(pid);
                }
                _ => {}
            }
            self.resolver.learn(std::slice::from_ref(e));
            match &e.record {
                LogRecord::PmcAllocateDyn { pmcid, name, .. } => {
                    self.pmcs.push((*pmcid, name.clone()));
                }
                LogRecord::Callchain {
                    pid,
                    pmcid,
                    pcs,
                    userspace,
                    ..
                } => {
                    let in_kernel = pmc_report::kernel_frames(*userspace, pcs);
                    let mut frames: Vec<Key> = Vec::with_capacity(pcs.len());
                    for (i, &pc) in pcs.iter().enumerate() {
                        let frame = self.named_frame(*pid, pc, i == 0, i < in_kernel);
                        // Unnamed kernel pcs in a row are one frame.
                        let unnamed = |f: &Key| &*f.1 == KERNEL_FRAME;
                        if !(unnamed(&frame) && frames.last().is_some_and(unnamed)) {
                            frames.push(frame);
                        }
                    }
                    // Into the interval's only: the totals take each
                    // interval whole at its refresh, once per row.
                    self.pending.entry(*pmcid).or_default().add(&frames);
                }
                _ => {}
            }
        }
    }

    /// Absorbs records from the front of `queue` until it is empty or
    /// `budget` is spent, so that the keyboard is read between steps. (A
    /// sample in an object not read yet reads its symbols first: a large
    /// library's take a second or more, keys waiting.)
    fn absorb_for(&mut self, queue: &mut VecDeque<LogEvent>, budget: Duration) {
        let start = Instant::now();
        while let Some(e) = queue.pop_front() {
            self.absorb(std::slice::from_ref(&e));
            if start.elapsed() >= budget {
                break;
            }
        }
    }

    /// Ends the interval: what was absorbed since the last refresh becomes
    /// the delta. The processes whose exit came before the last refresh
    /// are let go; those that exited since are kept one interval more, for
    /// samples of their last moments logged after their exit. An object
    /// is let go once no process the view holds has mapped it for
    /// [`OBJECT_GRACE`] refreshes. So the view holds the live processes,
    /// one or two intervals' exits and the objects of the last few
    /// intervals, however many came and went before.
    pub fn refresh(&mut self) {
        self.delta = std::mem::take(&mut self.pending);
        for (pmcid, agg) in &self.delta {
            self.total.entry(*pmcid).or_default().append(agg);
        }
        self.named.clear();
        for pid in self.exited.drain() {
            self.resolver.forget_process(pid);
        }
        self.resolver.drop_unmapped_objects(OBJECT_GRACE);
        self.exited = std::mem::take(&mut self.exiting);
        if let Some((exists, last)) = self.liveness
            && last.elapsed() >= LIVENESS_SWEEP
        {
            self.liveness = Some((exists, Instant::now()));
            self.forget_gone(exists);
        }
    }

    /// Has each refresh, every `LIVENESS_SWEEP` (5 s) at most, let go of the
    /// processes `exists` says are gone ([`TopView::forget_gone`]).
    pub fn check_liveness(&mut self, exists: Exists) {
        self.liveness = Some((exists, Instant::now()));
    }

    /// Lets go, as exited ones, of the processes `exists` says are gone,
    /// however their end was missed (a lost PROCEXIT; a log that does not
    /// write exits). The kernel's mappings stay.
    pub fn forget_gone(&mut self, exists: impl Fn(u32) -> bool) {
        let gone: Vec<u32> = self
            .resolver
            .processes()
            .filter(|&pid| pid != u32::MAX && !self.exited.contains(&pid) && !exists(pid))
            .collect();
        self.exiting.extend(gone);
    }

    /// The (image, function) of frame `pc` of a sample of `pid` (`leaf`:
    /// its first; `kernel`: one of its kernel frames), from the names of
    /// this interval when it was named already.
    fn named_frame(&mut self, pid: u32, pc: u64, leaf: bool, kernel: bool) -> Key {
        // A return address is looked up within its call instruction.
        let probe = if leaf { pc } else { pc.saturating_sub(1) };
        // Kernel pcs are every process's: the kernel's pid in the log.
        let owner = if kernel { u32::MAX } else { pid };
        if let Some(k) = self.named.get(&owner).and_then(|m| m.get(&(probe, leaf))) {
            return k.clone();
        }
        let (image, name) = if kernel {
            self.kernel_frame(probe, pc, leaf)
        } else {
            self.frame(pid, probe, leaf)
        };
        let key: Key = (image.into(), name.into());
        self.named
            .entry(owner)
            .or_default()
            .insert((probe, leaf), key.clone());
        key
    }

    /// (image, function) of a pc; `?` image when no mapping covers it. A
    /// pc no symbol names is its address in its image, as
    /// pmcpl_callgraph.c's `pmcstat_cgnode_hash_lookup_pc` keys it ("an
    /// offset in the image"): one node however many processes run the
    /// object at other addresses.
    fn frame(&mut self, pid: u32, pc: u64, leaf: bool) -> (String, String) {
        match self.resolver.place(pid, pc) {
            Some(p) => {
                let image = p.object.rsplit('/').next().unwrap_or(&p.object).to_string();
                let name = match p.function {
                    Some((name, ..)) if !(leaf && self.show_address) => name,
                    Some(_) => format!("{pc:#x}"),
                    None => format!("{:#x}", p.image_address.unwrap_or(pc)),
                };
                (image, name)
            }
            None => ("?".into(), format!("{pc:#x}")),
        }
    }

    /// (image, function) of a kernel pc: `[kernel.kallsyms]` (or the
    /// module) and its kallsyms name, else `[kernel.kallsyms]` for both.
    fn kernel_frame(&mut self, probe: u64, pc: u64, leaf: bool) -> (String, String) {
        let p = self.resolver.place_kernel(probe);
        let name = match p.function {
            _ if leaf && self.show_address => format!("{pc:#x}"),
            Some((name, ..)) => name,
            None => KERNEL_FRAME.to_string(),
        };
        (p.object, name)
    }

    /// What the view's resolver holds (processes, mappings, objects).
    pub fn retained(&self) -> crate::annotate::Retained {
        self.resolver.retained()
    }

    /// Why kernel frames went unnamed, once one needed a name and got none.
    pub fn kernel_names_missing(&self) -> Option<&pmc_report::KernelNamesMissing> {
        self.resolver.kernel_names_missing()
    }

    /// The PMC choices `p` cycles through: names when merged, else pmcids;
    /// each with pmcstat's index of its PMC (`pmcstat_pmcinfilter`: the
    /// order PMCs appear in the log; a merged name's first PMC).
    fn choices(&self) -> Vec<(String, Vec<u32>, usize)> {
        let mut out: Vec<(String, Vec<u32>, usize)> = Vec::new();
        for (index, (id, name)) in self.pmcs.iter().enumerate() {
            if self.merge
                && let Some(c) = out.iter_mut().find(|c| &c.0 == name)
            {
                c.1.push(*id);
                continue;
            }
            out.push((name.clone(), vec![*id], index));
        }
        out
    }

    /// Handles one key, as pmcstat's top mode does. The status line is
    /// `pmcstat_keypress_log`'s (pmcstat_log.c): `"Key: %c => "`, then what
    /// the key did; keys it does not know go to the view's plugin
    /// (`pmcpl_ct_topkeypress`: `f`), which says nothing for the others.
    pub fn key(&mut self, c: char) -> KeyOutcome {
        if self.awaiting_mode {
            // The same line: "enter mode 'd' or 'a' => " then the answer.
            self.awaiting_mode = false;
            self.accumulate = c != 'd';
            self.status.push_str(if self.accumulate {
                "switching to accumulation mode"
            } else {
                "switching to delta mode"
            });
            return KeyOutcome::Continue;
        }
        self.status = format!("Key: {c} => ");
        match c {
            'q' => {
                self.status.push_str("exiting...");
                return KeyOutcome::Quit;
            }
            'c' => {
                self.awaiting_mode = true;
                self.status.push_str("enter mode 'd' or 'a' => ");
            }
            'm' => {
                self.merge = !self.merge;
                // Merging changes what a row counts: start again.
                self.total.clear();
                self.delta.clear();
                self.pending.clear();
                self.selected = 0;
                let _ = write!(
                    self.status,
                    "merge PMC {}",
                    if self.merge { "on" } else { "off" }
                );
            }
            'n' => {
                self.view = match self.view {
                    View::CallGraph => View::CallTree,
                    View::CallTree => View::CallGraph,
                };
                // The next plugin starts from nothing (pl_shutdown,
                // pmcstat_stats_reset, pl_init).
                self.total.clear();
                self.delta.clear();
                self.pending.clear();
                let _ = write!(
                    self.status,
                    "switching to plugin {}",
                    match self.view {
                        View::CallGraph => "callgraph",
                        View::CallTree => "calltree",
                    }
                );
            }
            'p' => {
                let choices = self.choices();
                self.selected = (self.selected + 1) % choices.len().max(1);
                if let Some((name, _, index)) = choices.get(self.selected) {
                    let _ = write!(self.status, "switching to PMC {name}.{index}");
                }
            }
            'f' if self.view == View::CallTree => {
                self.skiplink = !self.skiplink;
                let _ = write!(
                    self.status,
                    "skip empty link {}",
                    if self.skiplink { "on" } else { "off" }
                );
            }
            ' ' => {
                self.paused = !self.paused;
                if self.paused {
                    self.status
                        .push_str("pause => press space again to continue");
                }
            }
            _ => {}
        }
        KeyOutcome::Continue
    }

    /// The screen of a `width` × `height` terminal: `height` lines at most,
    /// each cut to `width`. pmcstat reads the window as
    /// `pmcstat_displaywidth = ws_col - 1`, `pmcstat_displayheight =
    /// ws_row - 1` (pmcstat.c); the header is `pmcstat_refresh_top`'s
    /// (pmcstat_log.c): `"PMC: %s Samples: %u "`, `"(%.1f%%) "`, `", %u
    /// unresolved\n\n"`, the name `"[%s]"` when PMCs are merged and
    /// `"%s.%d"` (name, index) when not, in a `char[40]`.
    pub fn render(&self, width: usize, height: usize) -> Vec<String> {
        let display_width = width.saturating_sub(1);
        let display_height = height.saturating_sub(1);
        let choices = self.choices();
        let (name, ids, index) = choices
            .get(self.selected.min(choices.len().saturating_sub(1)))
            .cloned()
            .unwrap_or_else(|| ("-".into(), Vec::new(), 0));
        let source = if self.accumulate {
            &self.total
        } else {
            &self.delta
        };
        let mut agg = PmcAgg::default();
        let mut all = 0u64;
        for (id, a) in source {
            all += a.samples;
            if ids.contains(id) {
                agg.merge(a);
            }
        }
        let pct = if all == 0 {
            0.0
        } else {
            100.0 * agg.samples as f64 / all as f64
        };
        let pmcname = if self.merge {
            format!("[{name}]")
        } else {
            format!("{name}.{index}")
        };
        let mut lines = vec![
            format!(
                "PMC: {} Samples: {} ({pct:.1}%) , {} unresolved",
                cut(&pmcname, 39),
                agg.samples,
                agg.unresolved
            ),
            self.status.clone(),
        ];
        // PMCPL_CG_COUNTP: a node's count over all the PMC's samples.
        let of = |n: u64| {
            if agg.samples == 0 {
                0.0
            } else {
                100.0 * n as f64 / agg.samples as f64
            }
        };
        match self.view {
            View::CallGraph => {
                // pmcpl_cg_topdisplay (pmcpl_callgraph.c): the header
                // "%5.5s %-10.10s %-20.20s %s\n", then at most
                // `pmcstat_displayheight - 2` nodes by count, down to the
                // threshold.
                lines.push(format!(
                    "{:>5.5} {:<10.10} {:<20.20} {}",
                    "%SAMP", "IMAGE", "FUNCTION", "CALLERS"
                ));
                let mut rows: Vec<_> = agg.leaves.iter().collect();
                rows.sort_by(|a, b| b.1.0.cmp(&a.1.0).then(a.0.cmp(b.0)));
                let rows = rows
                    .into_iter()
                    .take(display_height.saturating_sub(2))
                    .take_while(|(_, (n, _))| of(*n) >= self.threshold);
                for ((image, func), (n, callers)) in rows {
                    lines.push(cg_topline(
                        image,
                        func,
                        of(*n),
                        callers,
                        display_width,
                        &of,
                        self.threshold,
                    ));
                }
            }
            View::CallTree => {
                // pmcpl_ct_topdisplay: "%5.5s %s\n" "%SAMP" "CALLTREE".
                lines.push(format!("{:>5.5} {}", "%SAMP", "CALLTREE"));
                lines.extend(agg.calltree.render(
                    agg.samples,
                    self.threshold,
                    self.skiplink,
                    display_width,
                    display_height.saturating_sub(2),
                ));
            }
        }
        lines.truncate(height.max(1));
        lines
            .into_iter()
            .map(|l| l.chars().take(width).collect())
            .collect()
    }
}

/// One node of pmcstat's callgraph top view (`pmcstat_cgnode_topprint`,
/// pmcpl_callgraph.c): `"%5.5s"` of the `"%.1f"` share, `" %-10.10s
/// %-20.20s"` image and name (the name from a `char ns[30]`), then the
/// callers down to the threshold, each `" %s"` (cut at 29 too) with
/// `":%.1f"` when there are several, as long as `pmcstat_displaywidth - 40`
/// holds them: snprintf's uncut lengths plus one each; the first that does
/// not fit is `" ..."` and ends the line.
fn cg_topline(
    image: &str,
    func: &str,
    share: f64,
    callers: &FastMap<Rc<str>, u64>,
    display_width: usize,
    of: &dyn Fn(u64) -> f64,
    threshold: f64,
) -> String {
    let mut line = format!(
        "{:>5.5} {image:<10.10} {:<20.20}",
        format!("{share:.1}"),
        cut(func, 29)
    );
    let mut callers: Vec<_> = callers.iter().collect();
    callers.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    let shown = callers
        .iter()
        .take_while(|(_, m)| of(**m) >= threshold)
        .count();
    let mut room = display_width as i64 - 40;
    for (caller, m) in &callers[..shown] {
        let vs = if shown > 1 {
            format!(":{:.1}", of(**m))
        } else {
            String::new()
        };
        let len = (caller.len() + vs.len() + 1) as i64;
        if room - len < 0 {
            line.push_str(" ...");
            break;
        }
        room -= len;
        let _ = write!(line, " {}{vs}", cut(caller, 29));
    }
    line
}

#[cfg(test)]
mod tests;
