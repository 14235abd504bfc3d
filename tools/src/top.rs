//! `pmcstat -T`: the top-like live view of sampling PMCs.
//!
//! Screen and keys follow FreeBSD's `usr.sbin/pmcstat/pmcstat_log.c`
//! (`pmcstat_refresh_top`: `PMC: [name] Samples: n (p%) , u unresolved`;
//! `pmcstat_keypress_log`: `c` then `a`/`d` accumulate or delta mode, `m`
//! merge PMCs of the same name, `n` next view, `p` next PMC, space pause,
//! `q` quit, `f` skip-link in the call-tree view) and `pmcpl_callgraph.c`
//! (`pmcpl_cg_topdisplay`: `%SAMP IMAGE FUNCTION CALLERS` rows, callers as
//! `name:pct` when there are several). `-f threshold=P` hides rows under P%
//! and `-f skiplink=1` shows them as a dot, as pmcstat's plugin options do.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

use pmc::log::{LogEvent, LogRecord};
use pmc_report::KERNEL_FRAME;

use crate::annotate::Resolver;

/// Samples of one PMC, aggregated by function.
#[derive(Debug, Default, Clone)]
struct PmcAgg {
    samples: u64,
    unresolved: u64,
    /// (image, function) → (self samples, caller → samples).
    leaves: HashMap<(String, String), (u64, HashMap<String, u64>)>,
    /// (image, function) → samples whose stack holds it anywhere.
    inclusive: HashMap<(String, String), u64>,
}

impl PmcAgg {
    fn merge(&mut self, other: &PmcAgg) {
        self.samples += other.samples;
        self.unresolved += other.unresolved;
        for (k, (n, callers)) in &other.leaves {
            let e = self.leaves.entry(k.clone()).or_default();
            e.0 += n;
            for (c, m) in callers {
                *e.1.entry(c.clone()).or_default() += m;
            }
        }
        for (k, n) in &other.inclusive {
            *self.inclusive.entry(k.clone()).or_default() += n;
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
    /// Self samples per function with its callers (pmcstat's callgraph).
    Callers,
    /// Samples with the function anywhere on the stack (call-tree cost).
    Inclusive,
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
}

impl TopView {
    /// A view: `threshold` in percent (rows below it are hidden),
    /// `skiplink` (show hidden rows as a dot), `show_address` (`-I`: the
    /// leaf as its address).
    pub fn new(threshold: f64, skiplink: bool, show_address: bool) -> TopView {
        TopView {
            accumulate: false,
            paused: false,
            merge: true,
            view: View::Callers,
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
        }
    }

    /// Whether space paused the display.
    pub fn paused(&self) -> bool {
        self.paused
    }

    /// Takes in the records logged since the last update; they become the
    /// new delta.
    pub fn update(&mut self, new: &[LogEvent]) {
        self.resolver.learn(new);
        let mut delta: HashMap<u32, PmcAgg> = HashMap::new();
        for e in new {
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
                    let agg = delta.entry(*pmcid).or_default();
                    agg.samples += 1;
                    let in_kernel = pmc_report::kernel_frames(*userspace, pcs);
                    let mut frames: Vec<(String, String)> = Vec::with_capacity(pcs.len());
                    for (i, &pc) in pcs.iter().enumerate() {
                        let probe = if i == 0 { pc } else { pc.saturating_sub(1) };
                        let frame = if i < in_kernel {
                            self.kernel_frame(probe, pc, i == 0)
                        } else {
                            self.frame(*pid, probe, i == 0)
                        };
                        // Unnamed kernel pcs in a row are one frame.
                        let unnamed = |f: &(String, String)| f.1 == KERNEL_FRAME;
                        if !(unnamed(&frame) && frames.last().is_some_and(unnamed)) {
                            frames.push(frame);
                        }
                    }
                    let Some(leaf) = frames.first() else {
                        agg.unresolved += 1;
                        continue;
                    };
                    if leaf.0 == "?" || leaf.1 == KERNEL_FRAME {
                        agg.unresolved += 1;
                    }
                    let entry = agg.leaves.entry(leaf.clone()).or_default();
                    entry.0 += 1;
                    if let Some(caller) = frames.get(1) {
                        *entry.1.entry(caller.1.clone()).or_default() += 1;
                    }
                    let mut on_stack: Vec<&(String, String)> = frames.iter().collect();
                    on_stack.sort();
                    on_stack.dedup();
                    for f in on_stack {
                        *agg.inclusive.entry(f.clone()).or_default() += 1;
                    }
                }
                _ => {}
            }
        }
        for (id, agg) in &delta {
            self.total.entry(*id).or_default().merge(agg);
        }
        self.delta = delta;
    }

    /// (image, function) of a pc; `?` image when no mapping covers it.
    fn frame(&mut self, pid: u32, pc: u64, leaf: bool) -> (String, String) {
        match self.resolver.place(pid, pc, false) {
            Some(p) => {
                let image = p.object.rsplit('/').next().unwrap_or(&p.object).to_string();
                let name = match p.function {
                    Some((name, ..)) if !(leaf && self.show_address) => name,
                    _ => format!("{pc:#x}"),
                };
                (image, name)
            }
            None => ("?".into(), format!("{pc:#x}")),
        }
    }

    /// (image, function) of a kernel pc: `[kernel.kallsyms]` (or the
    /// module) and its kallsyms name, else `[kernel.kallsyms]` for both.
    fn kernel_frame(&mut self, probe: u64, pc: u64, leaf: bool) -> (String, String) {
        let p = self.resolver.place_kernel(probe, false);
        let name = match p.function {
            _ if leaf && self.show_address => format!("{pc:#x}"),
            Some((name, ..)) => name,
            None => KERNEL_FRAME.to_string(),
        };
        (p.object, name)
    }

    /// Why kernel frames went unnamed, once one needed a name and got none.
    pub fn kernel_names_missing(&self) -> Option<&pmc_report::KernelNamesMissing> {
        self.resolver.kernel_names_missing()
    }

    /// The PMC choices `p` cycles through: names when merged, else pmcids.
    fn choices(&self) -> Vec<(String, Vec<u32>)> {
        let mut out: Vec<(String, Vec<u32>)> = Vec::new();
        for (id, name) in &self.pmcs {
            if self.merge
                && let Some(c) = out.iter_mut().find(|c| &c.0 == name)
            {
                c.1.push(*id);
                continue;
            }
            out.push((name.clone(), vec![*id]));
        }
        out
    }

    /// Handles one key, as pmcstat's top mode does.
    pub fn key(&mut self, c: char) -> KeyOutcome {
        if self.awaiting_mode {
            self.awaiting_mode = false;
            self.accumulate = c != 'd';
            self.status = if self.accumulate {
                "Key: c => switching to accumulation mode".into()
            } else {
                "Key: c => switching to delta mode".into()
            };
            return KeyOutcome::Continue;
        }
        self.status = format!("Key: {c} => ");
        match c {
            'q' => return KeyOutcome::Quit,
            'c' => {
                self.awaiting_mode = true;
                self.status.push_str("enter mode 'd' or 'a' => ");
            }
            'm' => {
                self.merge = !self.merge;
                // Merging changes what a row counts: start again.
                self.total.clear();
                self.delta.clear();
                self.selected = 0;
                let _ = write!(
                    self.status,
                    "merge PMC {}",
                    if self.merge { "on" } else { "off" }
                );
            }
            'n' => {
                self.view = match self.view {
                    View::Callers => View::Inclusive,
                    View::Inclusive => View::Callers,
                };
                let _ = write!(
                    self.status,
                    "{}",
                    match self.view {
                        View::Callers => "callgraph view",
                        View::Inclusive => "calltree view",
                    }
                );
            }
            'p' => {
                let n = self.choices().len().max(1);
                self.selected = (self.selected + 1) % n;
                let name = self
                    .choices()
                    .get(self.selected)
                    .map_or(String::new(), |c| c.0.clone());
                let _ = write!(self.status, "show next PMC => {name}");
            }
            'f' if self.view == View::Inclusive => {
                self.skiplink = !self.skiplink;
                let _ = write!(
                    self.status,
                    "skip empty link {}",
                    if self.skiplink { "on" } else { "off" }
                );
            }
            ' ' => {
                self.paused = !self.paused;
                let _ = write!(
                    self.status,
                    "{}",
                    if self.paused { "pause" } else { "resume" }
                );
            }
            _ => self.status.push_str("unknown command"),
        }
        KeyOutcome::Continue
    }

    /// The screen: `height` lines at most, each cut to `width`.
    pub fn render(&self, width: usize, height: usize) -> Vec<String> {
        let choices = self.choices();
        let (name, ids) = choices
            .get(self.selected.min(choices.len().saturating_sub(1)))
            .cloned()
            .unwrap_or_else(|| ("-".into(), Vec::new()));
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
        let mut lines = vec![
            format!(
                "PMC: [{name}] Samples: {} ({pct:.1}%) , {} unresolved",
                agg.samples, agg.unresolved
            ),
            self.status.clone(),
        ];
        let of = |n: u64| {
            if agg.samples == 0 {
                0.0
            } else {
                100.0 * n as f64 / agg.samples as f64
            }
        };
        match self.view {
            View::Callers => {
                // pmcstat's 20 columns, wider for long (Rust) names while
                // they take less than 40% of the screen.
                let fw = agg
                    .leaves
                    .keys()
                    .map(|(_, f)| f.chars().count())
                    .max()
                    .unwrap_or(0)
                    .clamp(20, (width * 2 / 5).max(20));
                lines.push(format!(
                    "{:>5.5} {:<10.10} {:<fw$.fw$} {}",
                    "%SAMP", "IMAGE", "FUNCTION", "CALLERS"
                ));
                let mut rows: Vec<_> = agg.leaves.iter().collect();
                rows.sort_by(|a, b| b.1.0.cmp(&a.1.0).then(a.0.cmp(b.0)));
                for ((image, func), (n, callers)) in rows {
                    if of(*n) < self.threshold {
                        break;
                    }
                    let mut line = format!(
                        "{:>5.5} {image:<10.10} {func:<fw$.fw$}",
                        format!("{:.1}", of(*n))
                    );
                    let mut callers: Vec<_> = callers.iter().collect();
                    callers.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
                    let callers: Vec<_> = callers
                        .into_iter()
                        .take_while(|(_, m)| of(**m) >= self.threshold)
                        .collect();
                    let mut room = width.saturating_sub(fw + 20);
                    for (caller, m) in &callers {
                        let item = if callers.len() > 1 {
                            format!(" {caller}:{:.1}", of(**m))
                        } else {
                            format!(" {caller}")
                        };
                        if item.len() > room {
                            line.push_str(" ...");
                            break;
                        }
                        room -= item.len();
                        line.push_str(&item);
                    }
                    lines.push(line);
                }
            }
            View::Inclusive => {
                lines.push(format!(
                    "{:>5.5} {:<10.10} {}",
                    "%INCL", "IMAGE", "FUNCTION"
                ));
                let mut rows: Vec<_> = agg.inclusive.iter().collect();
                rows.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
                let mut dotted = false;
                for ((image, func), n) in rows {
                    if of(*n) < self.threshold {
                        if self.skiplink && !dotted {
                            lines.push(".".into());
                            dotted = true;
                        }
                        continue;
                    }
                    lines.push(format!(
                        "{:>5.5} {image:<10.10} {func}",
                        format!("{:.1}", of(*n))
                    ));
                }
            }
        }
        lines.truncate(height.max(1));
        lines
            .into_iter()
            .map(|l| l.chars().take(width).collect())
            .collect()
    }
}

/// Why the view ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// The user pressed `q` (or Ctrl-C).
    Quit,
    /// What was measured is gone (the command or process exited).
    TargetDone,
}

/// Puts the terminal back however the view ends (errors, panics).
struct Screen;

impl Screen {
    fn enter() -> std::io::Result<Screen> {
        crossterm::terminal::enable_raw_mode()?;
        let s = Screen;
        crossterm::execute!(
            std::io::stdout(),
            crossterm::terminal::EnterAlternateScreen,
            crossterm::cursor::Hide
        )?;
        Ok(s)
    }
}

impl Drop for Screen {
    fn drop(&mut self) {
        let _ = crossterm::execute!(
            std::io::stdout(),
            crossterm::cursor::Show,
            crossterm::terminal::LeaveAlternateScreen
        );
        let _ = crossterm::terminal::disable_raw_mode();
    }
}

fn draw(view: &TopView) -> std::io::Result<()> {
    use crossterm::{cursor::MoveTo, queue, terminal};
    let (w, h) = terminal::size().unwrap_or((80, 24));
    let mut out = std::io::stdout().lock();
    queue!(out, terminal::Clear(terminal::ClearType::All))?;
    for (row, line) in view.render(w as usize, h as usize).iter().enumerate() {
        queue!(out, MoveTo(0, row as u16))?;
        out.write_all(line.as_bytes())?;
    }
    out.flush()
}

/// Runs the view until `q` or until `done()` says the target is gone:
/// every `interval`, `fetch()` gives the records logged since its last call. On a terminal the
/// view takes the screen and reads keys; otherwise it prints one frame per
/// interval to standard output.
pub fn run(
    view: &mut TopView,
    interval: Duration,
    mut fetch: impl FnMut() -> Result<Vec<LogEvent>, String>,
    mut done: impl FnMut() -> bool,
) -> Result<Ended, String> {
    use crossterm::event::{self, Event, KeyCode, KeyEventKind, KeyModifiers};
    let interactive = std::io::stdout().is_terminal() && std::io::stdin().is_terminal();
    let io = |e: std::io::Error| format!("top view: terminal: {e}");
    let _screen = if interactive {
        Some(Screen::enter().map_err(io)?)
    } else {
        None
    };
    let mut next = Instant::now();
    loop {
        if done() {
            return Ok(Ended::TargetDone);
        }
        if Instant::now() >= next {
            next = next_refresh(next, interval, Instant::now());
            view.update(&fetch()?);
            if interactive {
                if !view.paused() {
                    draw(view).map_err(io)?;
                }
            } else {
                let mut frame = view.render(200, 60).join("\n");
                frame.push_str("\n\n");
                std::io::stdout()
                    .write_all(frame.as_bytes())
                    .map_err(|e| format!("top view: writing: {e}"))?;
            }
        }
        let wait = next
            .saturating_duration_since(Instant::now())
            .min(Duration::from_millis(50));
        if !interactive {
            std::thread::sleep(wait);
            continue;
        }
        if !event::poll(wait).map_err(io)? {
            continue;
        }
        match event::read().map_err(io)? {
            Event::Key(k) if k.kind != KeyEventKind::Release => {
                let c = match k.code {
                    KeyCode::Char('c') if k.modifiers.contains(KeyModifiers::CONTROL) => {
                        return Ok(Ended::Quit);
                    }
                    KeyCode::Char(c) => c,
                    _ => continue,
                };
                if view.key(c) == KeyOutcome::Quit {
                    return Ok(Ended::Quit);
                }
                draw(view).map_err(io)?;
            }
            Event::Resize(..) => draw(view).map_err(io)?,
            _ => {}
        }
    }
}

/// The refresh after the one due at `due`, on the grid of `interval`s
/// from the first: the first grid point after `now`. A refresh that took
/// longer than an interval (the first symbol lookup of a large program)
/// skips the refreshes it overran, as the periodic kqueue timer of
/// FreeBSD's pmcstat coalesces expirations into one event, instead of
/// printing a burst of empty frames to catch up.
fn next_refresh(due: Instant, interval: Duration, now: Instant) -> Instant {
    let mut next = due + interval;
    if next <= now && !interval.is_zero() {
        let behind = now.duration_since(next).as_nanos() / interval.as_nanos();
        next += interval * u32::try_from(behind + 1).unwrap_or(u32::MAX);
    }
    next
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slow_refresh_skips_the_refreshes_it_overran() {
        let t0 = Instant::now();
        let ms = Duration::from_millis;
        // On time: the next grid point.
        assert_eq!(next_refresh(t0, ms(200), t0 + ms(10)), t0 + ms(200));
        // 2.7 s late: the next grid point after now, not 13 at once.
        assert_eq!(next_refresh(t0, ms(200), t0 + ms(2700)), t0 + ms(2800));
        // Exactly on a grid point: the one after it.
        assert_eq!(next_refresh(t0, ms(200), t0 + ms(400)), t0 + ms(600));
        assert!(next_refresh(t0, Duration::ZERO, t0 + ms(5)) == t0);
    }

    fn ev(record: LogRecord) -> LogEvent {
        LogEvent::from(record)
    }

    fn sample(pmcid: u32, pcs: Vec<u64>) -> LogEvent {
        ev(LogRecord::Callchain {
            pid: 7,
            tid: 7,
            pmcid,
            cpu: 0,
            userspace: true,
            pcs,
        })
    }

    fn alloc(pmcid: u32, name: &str) -> LogEvent {
        ev(LogRecord::PmcAllocateDyn {
            pmcid,
            event: 0,
            flags: 0,
            name: name.into(),
        })
    }

    #[test]
    fn delta_and_accumulated_modes_and_keys() {
        let mut v = TopView::new(0.0, false, false);
        let mut log = vec![
            alloc(1, "cpu-clock"),
            alloc(2, "cpu-clock"),
            alloc(3, "page-faults"),
        ];
        log.extend((0..3).map(|_| sample(1, vec![0x10, 0x21])));
        log.push(sample(2, vec![0x30]));
        log.push(sample(3, vec![0x40]));
        v.update(&log);
        let screen = v.render(100, 20);
        // Merged: both cpu-clock PMCs, 4 of the 5 samples; unmapped pcs are
        // shown as addresses and counted unresolved.
        assert_eq!(
            screen[0],
            "PMC: [cpu-clock] Samples: 4 (80.0%) , 4 unresolved"
        );
        assert!(screen[2].starts_with("%SAMP IMAGE"), "{screen:?}");
        assert!(screen[3].starts_with(" 75.0 ?          0x10"), "{screen:?}");
        assert!(
            screen[3].ends_with(" 0x20"),
            "one caller, no share: {screen:?}"
        );
        // Delta mode: nothing new, nothing shown; accumulated: all of it.
        v.update(&[]);
        assert_eq!(
            v.render(100, 20)[0],
            "PMC: [cpu-clock] Samples: 0 (0.0%) , 0 unresolved"
        );
        assert_eq!(v.key('c'), KeyOutcome::Continue);
        v.key('a');
        assert!(v.render(100, 20)[1].contains("accumulation"));
        assert!(v.render(100, 20)[0].contains("Samples: 4 "));
        v.key('p');
        assert!(v.render(100, 20)[0].starts_with("PMC: [page-faults] Samples: 1 (20.0%)"));
        v.key('m');
        v.key('c');
        v.key('d');
        assert!(v.render(100, 20)[1].contains("delta"));
        assert_eq!(v.key(' '), KeyOutcome::Continue);
        assert!(v.paused());
        assert_eq!(v.key('q'), KeyOutcome::Quit);
    }

    #[test]
    fn threshold_hides_rows_and_the_calltree_counts_stacks() {
        let mut v = TopView::new(30.0, true, false);
        let mut log = vec![alloc(1, "cpu-clock")];
        log.extend((0..3).map(|_| sample(1, vec![0x10, 0x21])));
        log.push(sample(1, vec![0x30, 0x21]));
        v.update(&log);
        let s = v.render(100, 20);
        assert_eq!(s.len(), 4, "the 25% row is under the threshold: {s:?}");
        v.key('n');
        let s = v.render(100, 20);
        assert!(s[2].starts_with("%INCL"), "{s:?}");
        assert!(s[3].starts_with("100.0 ?          0x20"), "{s:?}");
        assert_eq!(s.last().map(String::as_str), Some("."), "skiplink: {s:?}");
        assert_eq!(v.render(10, 2).len(), 2);
        assert!(v.render(10, 2).iter().all(|l| l.chars().count() <= 10));
    }
}
