//! The `-T` view's screens: the terminal (alternate screen, raw mode, keys
//! read with crossterm, put back however the view ends) and, off a
//! terminal, one frame per refresh on standard output.

use std::io::Write;
use std::time::Duration;

use super::{Input, TopView, Ui};

/// Puts the terminal back however the view ends (errors, panics).
pub(super) struct Screen;

impl Screen {
    pub(super) fn enter() -> std::io::Result<Screen> {
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

/// The terminal: the alternate screen, keys read with crossterm.
pub(super) struct Terminal {
    pub(super) _screen: Screen,
}

pub(super) fn terminal_error(e: std::io::Error) -> String {
    format!("top view: terminal: {e}")
}

impl Ui for Terminal {
    fn draw(&mut self, view: &TopView) -> Result<(), String> {
        draw(view).map_err(terminal_error)
    }

    fn input(&mut self, view: &TopView, wait: Duration) -> Result<Option<Input>, String> {
        use crossterm::event::{self, Event, KeyCode, KeyEventKind, KeyModifiers};
        if !event::poll(wait).map_err(terminal_error)? {
            return Ok(None);
        }
        match event::read().map_err(terminal_error)? {
            Event::Key(k) if k.kind != KeyEventKind::Release => Ok(match k.code {
                KeyCode::Char('c') if k.modifiers.contains(KeyModifiers::CONTROL) => {
                    Some(Input::Interrupt)
                }
                KeyCode::Char(c) => Some(Input::Key(c)),
                _ => None,
            }),
            Event::Resize(..) => draw(view).map(|()| None).map_err(terminal_error),
            _ => Ok(None),
        }
    }
}

/// Not a terminal: one frame per refresh on standard output, no keys.
pub(super) struct Frames;

impl Ui for Frames {
    fn draw(&mut self, view: &TopView) -> Result<(), String> {
        // pmcstat.c sets the display size from the terminal only:
        // elsewhere it stays pmcstat.h's file virtual size (render takes
        // the window's, one more than pmcstat's).
        let mut frame = view
            .render(
                crate::output::DEFAULT_DISPLAY_WIDTH + 1,
                crate::output::DEFAULT_DISPLAY_HEIGHT + 1,
            )
            .join("\n");
        frame.push_str("\n\n");
        std::io::stdout()
            .write_all(frame.as_bytes())
            .map_err(|e| format!("top view: writing: {e}"))
    }

    fn input(&mut self, _: &TopView, wait: Duration) -> Result<Option<Input>, String> {
        std::thread::sleep(wait);
        Ok(None)
    }

    fn shows_final_frame(&self) -> bool {
        true
    }
}
