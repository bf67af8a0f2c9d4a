//! `hangar` with no arguments: the workspace on screen, tmux style.
//!
//! Threads: one reads the keyboard, one runs the control connection
//! (commands and polling, `control.rs`), one per visible pane reads its
//! attach stream (`pane.rs`); all of them send `Event`s to this thread,
//! which owns the state and the terminal. The TUI talks to the daemon only
//! through the socket protocol, and quitting never stops a session.

mod app;
mod clipboard;
mod control;
mod copy;
mod diff_view;
mod events;
pub(crate) mod help;
mod hosts;
mod layout;
mod overview;
mod pane;
mod pane_history;
mod pane_mouse;
mod render;
mod search;
mod usage_view;
mod widgets;

use std::io::{Read, Write};
use std::process::ExitCode;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context;
use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;
use ratatui::crossterm::{cursor, event, execute, terminal};

use crate::conn::Target;
use crate::tui::app::App;
use crate::tui::events::Event;
use hangar_core::keys;

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
        // The mouse (wheel, clicks, dividers) is read from stdin like keys.
        let mut out = std::io::stdout();
        out.write_all(keys::MOUSE_ON)
            .and_then(|()| out.flush())
            .context("cannot turn on the mouse")?;
        Ok(guard)
    }
}

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        let mut out = std::io::stdout();
        let _ = out.write_all(keys::MOUSE_OFF);
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

pub fn run(target: &Target) -> anyhow::Result<ExitCode> {
    // With hosts configured, a switcher over this machine and each of them.
    let configured = crate::remote::configured(&target.paths)?;
    let selected = target.host.clone();
    let mut bar = (!configured.is_empty()).then(|| {
        let hosts = configured
            .into_iter()
            .map(|(name, config)| crate::remote::Host { name, config })
            .collect();
        hosts::HostBar::new(hosts, selected.as_ref().map(|h| h.name.as_str()))
    });
    // This machine's daemon is connected to (started if need be) before
    // touching the terminal, so a failure prints a plain error. Another
    // host is reached in the background: one that is down must not keep
    // the screen (or the switch to another host) waiting.
    let mut first = match &selected {
        None => Some(target.connect()?),
        Some(_) => None,
    };
    // An older daemon would answer this TUI's newer requests with errors
    // mid-screen: say so plainly, with the way out, before drawing.
    if let Some(why) = first.as_ref().and_then(crate::conn::Client::older_daemon) {
        anyhow::bail!(why);
    }
    // Keys and probes go to the view on screen; a view's own threads get
    // a channel of their own, so nothing from a view switched away from
    // (another host's snapshot, a pane's bytes) reaches the next one.
    let (first_tx, mut events) = mpsc::channel::<Event>();
    let current_tx = Arc::new(Mutex::new(first_tx.clone()));
    let input_tx = current_tx.clone();
    std::thread::spawn(move || {
        let mut stdin = std::io::stdin();
        let mut buf = [0u8; 8192];
        let send = |event: Event| {
            input_tx
                .lock()
                .map(|tx| tx.send(event).is_ok())
                .unwrap_or(false)
        };
        loop {
            match stdin.read(&mut buf) {
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                // The terminal is gone: nothing more can be typed.
                Ok(0) | Err(_) => return,
                Ok(n) => {
                    if !send(Event::Input(buf[..n].to_vec())) {
                        return;
                    }
                }
            }
            // The escape time is measured here, where the bytes arrive, so
            // a busy UI thread never takes a key's second half for late:
            // this event follows every byte read before it.
            if !crate::attach::poll_stdin(keys::ESCAPE_TIME) && !send(Event::InputQuiet) {
                return;
            }
        }
    });
    if let Some(bar) = &bar {
        hosts::spawn_probes(bar, target, current_tx.clone());
    }

    let _guard = TerminalGuard::enter()?;
    let mut terminal = Terminal::new(CrosstermBackend::new(std::io::stdout()))
        .context("cannot draw on this terminal")?;
    // No `terminal.clear()`: it asks the terminal for the cursor position,
    // and the answer would arrive on stdin, which the input thread reads.
    let mut events_tx = first_tx;
    let mut view = target.clone();
    let mut go_to: Option<String> = None;
    loop {
        let (commands_tx, commands) = mpsc::channel();
        control::spawn(view.clone(), first.take(), commands, events_tx.clone());
        let mut app = App::new(view.clone(), events_tx, commands_tx);
        app.host_bar = bar.clone();
        app.go_to_after_switch = go_to.take();
        let switch = run_view(&mut terminal, &mut app, &events)?;
        // Dropping the panes detaches them; the sessions keep running.
        app.panes.clear();
        bar = app.host_bar.take();
        // The overview's Enter on another host's agent: gone to once that
        // host's view has its first snapshot.
        let go_to_next = app.go_to_after_switch.take();
        let (Some(step), Some(b)) = (switch, bar.as_mut()) else {
            break;
        };
        b.step(step);
        view = view.with_host(b.current().host.clone());
        go_to = go_to_next;
        let (tx, rx) = mpsc::channel::<Event>();
        *current_tx.lock().unwrap_or_else(|e| e.into_inner()) = tx.clone();
        events = rx;
        events_tx = tx;
    }
    Ok(ExitCode::SUCCESS)
}

/// Draw and handle events for one host's view until the person quits
/// (None) or switches host (the step).
fn run_view(
    terminal: &mut Terminal<CrosstermBackend<std::io::Stdout>>,
    app: &mut App,
    events: &mpsc::Receiver<Event>,
) -> anyhow::Result<Option<isize>> {
    loop {
        let size = terminal.size()?;
        let layout = app.layout(ratatui::layout::Rect::new(0, 0, size.width, size.height));
        app.sync_panes(&layout);
        app.prepare_views();
        terminal.draw(|f| render::draw(f, app, &layout, now_ms()))?;
        if !app.terminal_out.is_empty() {
            // A copy's OSC 52, for the outer terminal itself.
            let mut out = std::io::stdout();
            out.write_all(&std::mem::take(&mut app.terminal_out))
                .and_then(|()| out.flush())
                .context("cannot write to the terminal")?;
        }
        if app.quit {
            return Ok(None);
        }
        if let Some(step) = app.switch_host.take() {
            return Ok(Some(step));
        }
        let first = match events.recv_timeout(TICK) {
            Ok(e) => Some(e),
            Err(RecvTimeoutError::Timeout) => None,
            Err(RecvTimeoutError::Disconnected) => return Ok(None),
        };
        let deadline = Instant::now() + Duration::from_millis(15);
        let mut next = first;
        let mut handled = 0;
        while let Some(event) = next {
            handle(app, event);
            handled += 1;
            if app.quit
                || app.switch_host.is_some()
                || handled >= MAX_EVENTS_PER_FRAME
                || Instant::now() > deadline
            {
                break;
            }
            next = events.try_recv().ok();
        }
    }
}

fn handle(app: &mut App, event: Event) {
    match event {
        Event::Input(bytes) => app.handle_input(&bytes),
        Event::InputQuiet => app.input_quiet(),
        Event::Snapshot(s) => {
            app.apply_snapshot(*s);
            app.go_to_when_shown();
        }
        Event::Overview { answered, down } => app.overview_answered(answered, down),
        Event::Done(outcome) => app.apply_outcome(*outcome),
        Event::DaemonLost(e) => app.lost_daemon(e),
        Event::Host { name, row } => {
            if let Some(bar) = &mut app.host_bar {
                bar.update(&name, &row);
            }
        }
        Event::Pane {
            session,
            generation,
            event,
        } => app.apply_pane_event(&session, generation, event),
    }
}
