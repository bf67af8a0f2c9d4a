//! `hangar` with no arguments: the workspace on screen, tmux style.
//!
//! Threads: one reads the keyboard, one runs the control connection
//! (commands and polling, `control.rs`), one per visible pane reads its
//! attach stream (`pane.rs`); all of them send `Event`s to this thread,
//! which owns the state and the terminal. The TUI talks to the daemon only
//! through the socket protocol, and quitting never stops a session.

mod app;
mod control;
mod help;
pub(crate) mod keys;
mod layout;
mod pane;
mod render;

use std::io::{Read, Write};
use std::process::ExitCode;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::{Duration, Instant};

use anyhow::Context;
use hangar_daemon::Paths;
use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;
use ratatui::crossterm::{cursor, event, execute, terminal};

use crate::client::Client;
use crate::tui::app::App;
use crate::tui::pane::PaneEvent;

/// Everything the UI thread reacts to.
pub enum Event {
    Input(Vec<u8>),
    Snapshot(Box<control::Snapshot>),
    Done(Box<control::Outcome>),
    DaemonLost(String),
    Pane {
        session: String,
        generation: u64,
        event: PaneEvent,
    },
}

/// Redraw at least this often (ages in the side list, terminal resizes).
const TICK: Duration = Duration::from_millis(100);
/// Events handled before the screen is drawn again, so a flood of output
/// cannot starve the keyboard or the screen.
const MAX_EVENTS_PER_FRAME: usize = 512;

/// Puts the terminal back however the TUI ends (an error, a panic).
struct TerminalGuard;

impl TerminalGuard {
    fn enter() -> anyhow::Result<TerminalGuard> {
        terminal::enable_raw_mode().context("cannot put the terminal in raw mode")?;
        let guard = TerminalGuard;
        execute!(
            std::io::stdout(),
            terminal::EnterAlternateScreen,
            terminal::Clear(terminal::ClearType::All),
            event::EnableBracketedPaste,
            cursor::Hide
        )
        .context("cannot set up the terminal")?;
        Ok(guard)
    }
}

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        let mut out = std::io::stdout();
        let _ = execute!(
            out,
            event::DisableBracketedPaste,
            terminal::LeaveAlternateScreen,
            cursor::Show
        );
        let _ = terminal::disable_raw_mode();
        let _ = out.flush();
    }
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

pub fn run(paths: &Paths) -> anyhow::Result<ExitCode> {
    // Connect (starting the daemon if needed) before touching the terminal,
    // so a failure prints a plain error.
    let client = Client::connect(paths)?;
    let (events_tx, events) = mpsc::channel::<Event>();
    let (commands_tx, commands) = mpsc::channel();
    control::spawn(paths.clone(), client, commands, events_tx.clone());
    let input_tx = events_tx.clone();
    std::thread::spawn(move || {
        let mut stdin = std::io::stdin();
        let mut buf = [0u8; 8192];
        loop {
            match stdin.read(&mut buf) {
                Ok(0) | Err(_) => return,
                Ok(n) => {
                    if input_tx.send(Event::Input(buf[..n].to_vec())).is_err() {
                        return;
                    }
                }
            }
        }
    });

    let _guard = TerminalGuard::enter()?;
    let mut terminal = Terminal::new(CrosstermBackend::new(std::io::stdout()))
        .context("cannot draw on this terminal")?;
    // No `terminal.clear()`: it asks the terminal for the cursor position,
    // and the answer would arrive on stdin, which the input thread reads.
    let mut app = App::new(paths.clone(), events_tx, commands_tx);
    loop {
        let size = terminal.size()?;
        let layout = app.layout(ratatui::layout::Rect::new(0, 0, size.width, size.height));
        app.sync_panes(&layout);
        terminal.draw(|f| render::draw(f, &app, &layout, now_ms()))?;
        if app.quit {
            break;
        }
        let first = match events.recv_timeout(TICK) {
            Ok(e) => Some(e),
            Err(RecvTimeoutError::Timeout) => None,
            Err(RecvTimeoutError::Disconnected) => break,
        };
        let deadline = Instant::now() + Duration::from_millis(15);
        let mut next = first;
        let mut handled = 0;
        while let Some(event) = next {
            handle(&mut app, event);
            handled += 1;
            if app.quit || handled >= MAX_EVENTS_PER_FRAME || Instant::now() > deadline {
                break;
            }
            next = events.try_recv().ok();
        }
    }
    // Dropping the panes detaches them; the sessions keep running.
    app.panes.clear();
    Ok(ExitCode::SUCCESS)
}

fn handle(app: &mut App, event: Event) {
    match event {
        Event::Input(bytes) => app.handle_input(&bytes),
        Event::Snapshot(s) => app.apply_snapshot(*s),
        Event::Done(outcome) => app.apply_outcome(*outcome),
        Event::DaemonLost(e) => app.daemon_lost = Some(e),
        Event::Pane {
            session,
            generation,
            event,
        } => app.apply_pane_event(&session, generation, event),
    }
}
