//! One visible pane: its session's screen, kept by a client-side terminal
//! sized to the pane's inner area, fed by its own `attach` connection. The
//! terminal is the daemon's own engine (hangar-terminal), so a mode, a wide
//! character, a colour or a resize's rewrap reads the same on both sides.
//!
//! Its history is not used (kept at the smallest cap): the daemon has all
//! of it, rewrapped for the session's width on every resize, and the pane reads
//! it a page at a time by line number ([`PaneHistory`]) when copy mode or the
//! wheel goes above the screen. A view scrolled back is frozen on line
//! numbers, so output printed meanwhile never moves it.
//!
//! The connection's reader runs on its own thread and only sends events;
//! the terminal lives on the UI thread. Dropping the connection shuts the
//! socket down, which ends the reader and detaches from the daemon: closing
//! a pane's view never stops its session.

use std::sync::mpsc::Sender;
use std::time::{Duration, Instant};

use hangar_protocol::message as msg;
use hangar_terminal::Terminal;

use crate::api;
use crate::conn::{Client, Incoming, Target};
use crate::tui::copy::PaneLines;
use crate::tui::events::Event;
use crate::tui::pane_history::{Page, PageSource, PaneHistory, Renumbering};

const AUTO_RETRY_EVERY: Duration = Duration::from_secs(2);

/// After a page could not be read (the daemon is gone), the view shows blank
/// lines without asking again for this long: a frame asks for many lines.
const PAGE_RETRY_EVERY: Duration = Duration::from_secs(1);

/// While a resize under a frozen view may have rewrapped the daemon's
/// history, it is looked for this often even when no output says so.
const REWRAP_LOOK_EVERY: Duration = Duration::from_millis(200);

/// The longest a page is waited for (it takes about a millisecond).
const PAGE_TIMEOUT: Duration = Duration::from_secs(2);

pub use crate::tui::events::{PaneConn, PaneEvent};

#[derive(Debug, Clone, PartialEq)]
pub enum PaneStatus {
    /// Attach sent; the session may be waking. `saved` is its last screen.
    Connecting {
        saved: Option<String>,
    },
    Live,
    Failed(String),
    /// Its connection broke (a daemon restart, a dropped SSH link); it is
    /// attached again as soon as the session is seen live.
    Lost(String),
    Exited(i64),
}

pub struct Pane {
    pub session: String,
    pub term: Terminal,
    pub status: PaneStatus,
    /// Bumped per connection so events from an old one are ignored.
    pub generation: u64,
    conn: Option<PaneConn>,
    /// (rows, cols) of the inner area the session was last sized to.
    pub size: (u16, u16),
    connected_at: Option<Instant>,
    /// A connection is being made (its `Connected` has not come yet).
    connecting: bool,
    /// The session's history above the screen, numbered as the daemon does.
    pub history: PaneHistory,
    /// The daemon numbers history (it named `history_end` on attach).
    history_known: bool,
    /// The line shown on the pane's first row while its view is frozen
    /// (copy mode, the wheel); `None`: the live screen.
    view_top: Option<u64>,
    /// The frozen view, drawn: the history lines and screen rows it shows.
    view: Option<Terminal>,
    /// Where pages are read from: a connection of its own, made the first
    /// time one is needed.
    pages: Option<Client>,
    target: Option<Target>,
    page_failed_at: Option<Instant>,
    /// The daemon rewrapped the history under a frozen view: copy mode's
    /// positions move with it ([`Pane::take_renumbering`]).
    renumbering: Option<Renumbering>,
    rewrap_looked_at: Option<Instant>,
}

/// A terminal for a pane: its history is the daemon's, so it keeps the least.
fn terminal(rows: u16, cols: u16) -> Terminal {
    Terminal::new(
        rows,
        cols,
        hangar_terminal::Config {
            history_bytes: hangar_terminal::history::MIN_HISTORY_BYTES,
        },
    )
}

impl Pane {
    pub fn new(session: String, rows: u16, cols: u16) -> Pane {
        Pane {
            session,
            term: terminal(rows.max(1), cols.max(1)),
            status: PaneStatus::Connecting { saved: None },
            generation: 0,
            conn: None,
            size: (rows.max(1), cols.max(1)),
            connected_at: None,
            connecting: false,
            history: PaneHistory::new(0),
            history_known: false,
            view_top: None,
            view: None,
            pages: None,
            target: None,
            page_failed_at: None,
            renumbering: None,
            rewrap_looked_at: None,
        }
    }

    pub fn is_connected(&self) -> bool {
        self.conn.is_some() || self.connecting
    }

    /// Reattaching without a key press (the session went live elsewhere) is
    /// spaced out, so a session that keeps failing is not hammered.
    pub fn may_retry_on_its_own(&self) -> bool {
        self.connected_at
            .is_none_or(|t| t.elapsed() >= AUTO_RETRY_EVERY)
    }

    /// (Re)attach: a fresh connection asks for the saved screen, then
    /// attaches (which wakes the session).
    pub fn connect(&mut self, target: &Target, events: &Sender<Event>, generation: u64) {
        self.conn = None;
        self.connected_at = Some(Instant::now());
        self.generation = generation;
        self.status = PaneStatus::Connecting { saved: None };
        self.term = terminal(self.size.0, self.size.1);
        self.history = PaneHistory::new(0);
        self.history_known = false;
        self.view_top = None;
        self.view = None;
        self.target = Some(target.clone());
        let session = self.session.clone();
        let (rows, cols) = self.size;
        let send = {
            let events = events.clone();
            let session = session.clone();
            move |event: PaneEvent| {
                events
                    .send(Event::Pane {
                        session: session.clone(),
                        generation,
                        event,
                    })
                    .is_ok()
            }
        };
        self.connecting = true;
        let target = target.clone();
        std::thread::spawn(move || {
            let client = match target.connect() {
                Ok(c) => c,
                Err(e) => {
                    send(PaneEvent::Failed(format!("{e:#}")));
                    return;
                }
            };
            let conn = match client
                .try_clone_stream()
                .and_then(|s| Ok((s, client.writer()?)))
            {
                Ok((stream, writer)) => PaneConn {
                    writer,
                    stream,
                    size: (rows, cols),
                },
                Err(e) => {
                    send(PaneEvent::Failed(format!("{e:#}")));
                    return;
                }
            };
            if send(PaneEvent::Connected(Box::new(conn))) {
                read_pane(client, session, rows, cols, send);
            }
        });
    }

    /// Apply an event from this pane's current connection.
    pub fn apply(&mut self, event: PaneEvent) {
        if !matches!(event, PaneEvent::SavedScreen(_) | PaneEvent::Data(_)) {
            self.connecting = false;
        }
        match event {
            PaneEvent::Connected(conn) => {
                let mut conn = *conn;
                // The layout may have changed while the connection was made.
                let (rows, cols) = self.size;
                if conn.size != (rows, cols) {
                    let _ = api::send_resize(&mut conn.writer, cols, rows);
                }
                self.conn = Some(conn);
            }
            PaneEvent::SavedScreen(text) => {
                if let PaneStatus::Connecting { saved } = &mut self.status {
                    *saved = Some(text);
                }
            }
            PaneEvent::Attached { history_end, .. } => {
                self.status = PaneStatus::Live;
                self.history = PaneHistory::new(history_end.unwrap_or(0));
                self.history_known = history_end.is_some();
            }
            // A frozen view is on line numbers: output moves neither it
            // nor the history lines it shows.
            PaneEvent::Data(bytes) => {
                self.term.feed(&bytes);
                self.term.catch_up();
            }
            PaneEvent::HistoryEnd(end) => self.history.rebase(end),
            PaneEvent::Exited(code) => {
                self.status = PaneStatus::Exited(code);
                self.conn = None;
                // Its history is read from what the daemon saved now.
                self.history.renumber();
            }
            PaneEvent::Lost(reason) => {
                self.status = PaneStatus::Lost(reason);
                self.conn = None;
            }
            PaneEvent::Failed(reason) => {
                self.status = PaneStatus::Failed(reason);
                self.conn = None;
            }
        }
    }

    /// Follow the layout: resize the local screen and the session's PTY.
    pub fn resize(&mut self, rows: u16, cols: u16) {
        let (rows, cols) = (rows.max(1), cols.max(1));
        if self.size == (rows, cols) {
            return;
        }
        self.size = (rows, cols);
        // Rewrapped as the daemon rewraps its screen for the same size.
        self.term.resize(rows, cols);
        self.term.catch_up();
        if self.view_top.is_some() {
            // The frozen view's lines are numbered for the old width.
            let (history, mut source) = self.history_and_pages();
            history.expect_rewrap(&mut source);
        }
        if let Some(conn) = &mut self.conn {
            let _ = api::send_resize(&mut conn.writer, cols, rows);
        }
    }

    /// How line numbers moved when the daemon rewrapped the history under
    /// the frozen view (once).
    pub fn take_renumbering(&mut self) -> Option<Renumbering> {
        self.renumbering.take()
    }

    /// The number of the screen's top row: history is the lines before it.
    pub fn history_end(&self) -> usize {
        self.history.end() as usize
    }

    /// The line the frozen view shows first, if it is frozen.
    pub fn view_top(&self) -> Option<usize> {
        self.view_top.map(|t| t as usize)
    }

    /// Freeze the view with line `top` on its first row, or (`None`) go
    /// back to the live screen.
    pub fn set_view_top(&mut self, top: Option<usize>) {
        self.view_top = top.map(|t| t as u64);
        if self.view_top.is_none() {
            self.view = None;
            self.history.forget_rewrap();
        }
    }

    /// History lines plus the screen's rows: the lines copy mode moves over
    /// (numbered as the daemon numbers history; the oldest it still keeps
    /// is [`Pane::first_line`]).
    pub fn total_lines(&self) -> usize {
        self.history_end() + usize::from(self.size.0)
    }

    /// The oldest line there is (asks the daemon the first time).
    pub fn first_line(&mut self) -> usize {
        let (history, mut source) = self.history_and_pages();
        history.first(&mut source) as usize
    }

    /// The text of line `line`, trailing blanks dropped.
    pub fn line_text(&mut self, line: usize) -> String {
        let end = self.history_end();
        if line >= end {
            let text = self
                .term
                .screen_rows_formatted()
                .into_iter()
                .nth(line - end)
                .unwrap_or_default();
            return hangar_terminal::history::plain(&text).trim_end().to_owned();
        }
        let (history, mut source) = self.history_and_pages();
        history
            .line(line as u64, &mut source)
            .map(|l| hangar_terminal::history::plain(l).trim_end().to_owned())
            .unwrap_or_default()
    }

    fn history_and_pages(&mut self) -> (&mut PaneHistory, DaemonPages<'_>) {
        (
            &mut self.history,
            DaemonPages {
                client: &mut self.pages,
                target: self.target.as_ref().filter(|_| self.history_known),
                session: &self.session,
                failed_at: &mut self.page_failed_at,
            },
        )
    }

    /// Draw the frozen view (history lines and screen rows) into its own
    /// parser, for the renderer; reads the pages it needs first.
    pub fn prepare_view(&mut self) {
        let Some(mut top) = self.view_top else {
            self.view = None;
            return;
        };
        let anyway = self
            .rewrap_looked_at
            .is_none_or(|t| t.elapsed() >= REWRAP_LOOK_EVERY);
        if anyway {
            self.rewrap_looked_at = Some(Instant::now());
        }
        let rewrapped = {
            let (history, mut source) = self.history_and_pages();
            history.rewrapped(&mut source, anyway)
        };
        if let Some(map) = rewrapped {
            top = map.map(top);
            self.view_top = Some(top);
            self.renumbering = Some(map);
        }
        let (rows, cols) = self.size;
        let end = self.history.end();
        // The screen's rows the view shows, below its history lines.
        let screen: Vec<String> = if top + u64::from(rows) > end {
            self.term.screen_rows_formatted()
        } else {
            Vec::new()
        };
        // No autowrap: a history line wider than the pane (printed when the
        // session was wider) is cut at its edge, not run into the next row.
        let mut bytes = Vec::from(&b"\x1b[?7l"[..]);
        for row in 0..rows {
            let line = top + u64::from(row);
            bytes.extend_from_slice(format!("\x1b[{};1H\x1b[0m", row + 1).as_bytes());
            let text = if line < end {
                let (history, mut source) = self.history_and_pages();
                history.line(line, &mut source)
            } else {
                screen.get((line - end) as usize).map(String::as_str)
            };
            if let Some(text) = text {
                bytes.extend_from_slice(text.as_bytes());
            }
        }
        let mut view = terminal(rows, cols);
        view.feed(&bytes);
        view.catch_up();
        self.view = Some(view);
    }

    /// What the renderer draws: the frozen view, or the live screen.
    pub fn shown_screen(&self) -> &Terminal {
        match (&self.view, self.view_top) {
            (Some(view), Some(_)) => view,
            _ => &self.term,
        }
    }

    /// Type into the session (only once attached).
    pub fn type_bytes(&mut self, bytes: &[u8]) {
        if self.status != PaneStatus::Live || bytes.is_empty() {
            return;
        }
        let bytes = hangar_core::keys::adapt_for_pane(
            bytes,
            self.term.application_cursor(),
            self.term.bracketed_paste(),
        );
        self.send_raw(&bytes);
    }

    /// Send bytes already in the program's terms (a mouse report) as they are.
    pub fn send_raw(&mut self, bytes: &[u8]) {
        if self.status != PaneStatus::Live || bytes.is_empty() {
            return;
        }
        if let Some(conn) = &mut self.conn
            && conn.writer.send_data(bytes).is_err()
        {
            self.conn = None;
            self.status = PaneStatus::Lost("lost the connection to the daemon".into());
        }
    }
}

impl PaneLines for Pane {
    fn total_lines(&self) -> usize {
        Pane::total_lines(self)
    }
    fn first_line(&mut self) -> usize {
        Pane::first_line(self)
    }
    fn rows(&self) -> usize {
        usize::from(self.size.0)
    }
    fn cols(&self) -> usize {
        usize::from(self.size.1)
    }
    fn line_text(&mut self, line: usize) -> String {
        Pane::line_text(self, line)
    }
}

/// Pages of a session's history from the daemon, on the pane's own
/// connection (made the first time, without starting a daemon).
struct DaemonPages<'a> {
    client: &'a mut Option<Client>,
    /// `None`: there is no daemon to ask that numbers history.
    target: Option<&'a Target>,
    session: &'a str,
    failed_at: &'a mut Option<Instant>,
}

impl PageSource for DaemonPages<'_> {
    fn page(&mut self, before: Option<u64>, lines: u64) -> Option<Page> {
        let target = self.target?;
        if self
            .failed_at
            .is_some_and(|t| t.elapsed() < PAGE_RETRY_EVERY)
        {
            return None;
        }
        if self.client.is_none() {
            *self.client = target.connect_existing().ok().flatten();
            // The UI thread waits on this reply: a daemon that does not
            // answer costs a blank page, never a frozen TUI.
            if let Some(stream) = self.client.as_ref().and_then(|c| c.try_clone_stream().ok()) {
                let _ = stream.set_read_timeout(Some(PAGE_TIMEOUT));
            }
        }
        let client = self.client.as_mut()?;
        let request = msg::HistoryPage {
            session: self.session.to_owned(),
            before,
            lines: u32::try_from(lines).unwrap_or(u32::MAX),
        };
        let page = api::history(client, request).ok().map(|v| Page {
            first: v.first,
            end: v.end,
            start: v.start,
            lines: v.lines,
        });
        match page {
            Some(page) => {
                *self.failed_at = None;
                Some(page)
            }
            None => {
                // A broken connection is made again after the pause.
                *self.client = None;
                *self.failed_at = Some(Instant::now());
                None
            }
        }
    }
}

fn read_pane(
    mut client: Client,
    session: String,
    rows: u16,
    cols: u16,
    send: impl Fn(PaneEvent) -> bool,
) {
    // The saved screen first: attach may take a while when it wakes.
    if let Ok(v) = api::screen(
        &mut client,
        msg::Screen {
            session: session.clone(),
            scrollback: None,
        },
    ) && v.source == "saved"
        && !send(PaneEvent::SavedScreen(v.screen))
    {
        return;
    }
    match api::attach(
        &mut client,
        msg::Attach {
            session,
            cols,
            rows,
            history: None,
            history_events: true,
            terminal: false,
        },
    ) {
        Ok(reply) => {
            let detach_key = Some(reply.detach_key);
            let history_end = reply.history_end;
            if !send(PaneEvent::Attached {
                detach_key,
                history_end,
            }) {
                return;
            }
        }
        Err(e) => {
            let reason = match e.downcast_ref::<crate::conn::DaemonError>() {
                Some(d) => d.0.message.clone(),
                None => format!("{e:#}"),
            };
            send(PaneEvent::Failed(reason));
            return;
        }
    }
    loop {
        let event = match client.read() {
            Ok(Incoming::Data(d)) => PaneEvent::Data(d),
            Ok(Incoming::Event(e)) if e["event"] == "exited" => {
                send(PaneEvent::Exited(e["code"].as_i64().unwrap_or(-1)));
                return;
            }
            Ok(Incoming::Event(e)) if e["event"] == "history" => match e["end"].as_u64() {
                Some(end) => PaneEvent::HistoryEnd(end),
                None => continue,
            },
            Ok(_) => continue,
            Err(e) => {
                send(PaneEvent::Lost(format!("{e:#}")));
                return;
            }
        };
        if !send(event) {
            return;
        }
    }
}
