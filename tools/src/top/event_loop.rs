//! The view's loop: take in the records the log gives, refresh on the
//! interval's grid, draw, and answer keys, until `q` or the target's end.

use std::collections::VecDeque;
use std::io::IsTerminal;
use std::time::{Duration, Instant};

use pmc::log::LogEvent;

use super::screen::{Frames, Screen, Terminal, terminal_error};
use super::{KeyOutcome, TopView};

/// Why the view ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// The user pressed `q` (or Ctrl-C).
    Quit,
    /// What was measured is gone (the command or process exited).
    TargetDone,
}

/// The most records the view takes in between two looks at the keyboard
/// (and at `done`): naming a sample's frames is the view's costly work,
/// and under a flood of samples (system-wide, every CPU busy) a refresh's
/// worth took seconds, keys waiting all along. A few thousand take
/// milliseconds.
pub const RECORDS_PER_STEP: usize = 4096;

/// The most time the view spends taking in records between two looks at
/// the keyboard, unless one record takes longer (the first sample in a
/// large object reads its symbols).
const STEP_TIME: Duration = Duration::from_millis(50);

/// Where the view's records come from.
pub trait Feed {
    /// Takes in what was logged since the last pull, to be handed out by
    /// [`Feed::take`]; `refresh`: at a refresh (push out what the recorder
    /// holds first).
    fn pull(&mut self, refresh: bool) -> Result<(), String>;
    /// At most `limit` of the records pulled and not yet taken, in log
    /// order.
    fn take(&mut self, limit: usize) -> Result<Vec<LogEvent>, String>;
    /// Whether records pulled wait to be taken.
    fn behind(&self) -> bool;
}

/// What the loop asks of the screen: the terminal, standard output, or a
/// test's double.
pub(super) trait Ui {
    /// Shows the view.
    fn draw(&mut self, view: &TopView) -> Result<(), String>;
    /// A key pressed within `wait`, if any (Ctrl-C is `Input::Interrupt`).
    fn input(&mut self, view: &TopView, wait: Duration) -> Result<Option<Input>, String>;
    /// Whether the whole run is shown once more when the target is gone:
    /// frames printed for a reader, who keeps the last one (a terminal's
    /// screen closes at once).
    fn shows_final_frame(&self) -> bool {
        false
    }
}

/// An input the loop acts on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Input {
    Key(char),
    Interrupt,
}

/// Runs the view until `q` or until `done()` says the target is gone:
/// every `interval` a refresh shows what `feed` gave since the last one.
/// On a terminal the view takes the screen and reads keys; otherwise it
/// prints one frame per interval to standard output.
pub fn run(
    view: &mut TopView,
    interval: Duration,
    feed: &mut dyn Feed,
    done: impl FnMut() -> bool,
) -> Result<Ended, String> {
    let interactive = std::io::stdout().is_terminal() && std::io::stdin().is_terminal();
    if interactive {
        let mut ui = Terminal {
            _screen: Screen::enter().map_err(terminal_error)?,
        };
        run_on(view, interval, feed, done, &mut ui)
    } else {
        run_on(view, interval, feed, done, &mut Frames)
    }
}

/// The loop of [`run`] on a screen. Each turn takes in records for
/// [`STEP_TIME`] at most (from [`RECORDS_PER_STEP`] taken at once), then
/// looks at `done` and the keyboard (without waiting while records wait):
/// a key is answered after one step's work, however far behind the
/// recording the view is. Between
/// refreshes it takes in what the log holds as it comes, so a refresh
/// finds little left to do.
pub(super) fn run_on(
    view: &mut TopView,
    interval: Duration,
    feed: &mut dyn Feed,
    mut done: impl FnMut() -> bool,
    ui: &mut dyn Ui,
) -> Result<Ended, String> {
    let mut next = Instant::now();
    // Taken from the feed, not yet absorbed.
    let mut queue: VecDeque<LogEvent> = VecDeque::new();
    loop {
        if done() {
            if ui.shows_final_frame() {
                // What the target did last, however far behind the view
                // was: the steps above take in records as time allows.
                feed.pull(true)?;
                loop {
                    view.absorb_for(&mut queue, Duration::MAX);
                    queue.extend(feed.take(RECORDS_PER_STEP)?);
                    if queue.is_empty() {
                        break;
                    }
                }
                view.refresh();
                ui.draw(view)?;
            }
            return Ok(Ended::TargetDone);
        }
        let due = Instant::now() >= next;
        if due || (queue.is_empty() && !feed.behind()) {
            feed.pull(due)?;
        }
        if queue.is_empty() {
            queue.extend(feed.take(RECORDS_PER_STEP)?);
        }
        view.absorb_for(&mut queue, STEP_TIME);
        if due {
            next = next_refresh(next, interval, Instant::now());
            view.refresh();
            // Space holds the screen as it is.
            if !view.paused() {
                ui.draw(view)?;
            }
        }
        let wait = if !queue.is_empty() || feed.behind() {
            Duration::ZERO
        } else {
            next.saturating_duration_since(Instant::now())
                .min(Duration::from_millis(50))
        };
        match ui.input(view, wait)? {
            None => {}
            Some(Input::Interrupt) => return Ok(Ended::Quit),
            Some(Input::Key(c)) => {
                if view.key(c) == KeyOutcome::Quit {
                    return Ok(Ended::Quit);
                }
                ui.draw(view)?;
            }
        }
    }
}

/// The refresh after the one due at `due`, on the grid of `interval`s
/// from the first: the first grid point after `now`. A refresh that took
/// longer than an interval (the first symbol lookup of a large program)
/// skips the refreshes it overran, as the periodic kqueue timer of
/// FreeBSD's pmcstat coalesces expirations into one event, instead of
/// printing a burst of empty frames to catch up.
pub(super) fn next_refresh(due: Instant, interval: Duration, now: Instant) -> Instant {
    let mut next = due + interval;
    if next <= now && !interval.is_zero() {
        let behind = now.duration_since(next).as_nanos() / interval.as_nanos();
        next += interval * u32::try_from(behind + 1).unwrap_or(u32::MAX);
    }
    next
}
