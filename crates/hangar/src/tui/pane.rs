//! One visible pane: its session's screen, kept by a client-side vt100
//! parser sized to the pane's inner area, fed by its own `attach`
//! connection.
//!
//! The parser keeps the pane's history too ([`PANE_HISTORY_LINES`]): the
//! attach asks the daemon to print that much of the session's history
//! before its screen, and everything after it scrolls in as it is printed,
//! so scrolling back and copy mode never wait on the daemon.
//!
//! The connection's reader runs on its own thread and only sends events;
//! the parser lives on the UI thread. Dropping the connection shuts the
//! socket down, which ends the reader and detaches from the daemon: closing
//! a pane's view never stops its session.

use std::net::Shutdown;
use std::num::NonZeroU16;
use std::os::unix::net::UnixStream;
use std::sync::mpsc::Sender;
use std::time::{Duration, Instant};

use hangar_protocol::message::{self as msg, Request};
use hangar_protocol::paths::Paths;

use crate::client::{Client, Incoming};
use crate::tui::Event;
use crate::tui::copy::PaneLines;

const AUTO_RETRY_EVERY: Duration = Duration::from_secs(2);

/// Lines of history each pane keeps (and asks the daemon for on attach).
pub const PANE_HISTORY_LINES: usize = 10_000;

/// What a pane's connection reports.
#[derive(Debug)]
pub enum PaneEvent {
    /// The session's last saved screen, shown while it wakes.
    SavedScreen(String),
    /// The daemon accepted the attach: the live stream follows. It names
    /// the configured detach key, whose prefix is also the TUI's prefix.
    Attached {
        detach_key: Option<String>,
    },
    Data(Vec<u8>),
    Exited(i64),
    /// The attach was refused (a failed wake names its reason).
    Failed(String),
    /// The connection broke.
    Lost(String),
    /// The connection is open (made off the UI thread: to another host it
    /// is an ssh handshake); this is its writing half.
    Connected(Box<PaneConn>),
}

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
    pub parser: vt100::Parser,
    pub status: PaneStatus,
    /// Bumped per connection so events from an old one are ignored.
    pub generation: u64,
    conn: Option<PaneConn>,
    /// (rows, cols) of the inner area the session was last sized to.
    pub size: (u16, u16),
    connected_at: Option<Instant>,
    /// A connection is being made (its `Connected` has not come yet).
    connecting: bool,
}

pub struct PaneConn {
    writer: Client,
    stream: UnixStream,
    /// The (rows, cols) the attach asked for.
    size: (u16, u16),
}

impl std::fmt::Debug for PaneConn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PaneConn")
            .field("size", &self.size)
            .finish()
    }
}

impl Drop for PaneConn {
    fn drop(&mut self) {
        let _ = self.stream.shutdown(Shutdown::Both);
    }
}

fn nz(v: u16) -> NonZeroU16 {
    NonZeroU16::new(v).unwrap_or(NonZeroU16::MIN)
}

impl Pane {
    pub fn new(session: String, rows: u16, cols: u16) -> Pane {
        Pane {
            session,
            parser: vt100::Parser::new(nz(rows), nz(cols), PANE_HISTORY_LINES),
            status: PaneStatus::Connecting { saved: None },
            generation: 0,
            conn: None,
            size: (rows.max(1), cols.max(1)),
            connected_at: None,
            connecting: false,
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
    pub fn connect(&mut self, paths: &Paths, events: &Sender<Event>, generation: u64) {
        self.conn = None;
        self.connected_at = Some(Instant::now());
        self.generation = generation;
        self.status = PaneStatus::Connecting { saved: None };
        self.parser = vt100::Parser::new(nz(self.size.0), nz(self.size.1), PANE_HISTORY_LINES);
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
        let paths = paths.clone();
        std::thread::spawn(move || {
            let client = match Client::connect(&paths) {
                Ok(c) => c,
                Err(e) => {
                    send(PaneEvent::Failed(format!("{e:#}")));
                    return;
                }
            };
            let conn = match client
                .try_clone_stream()
                .and_then(|s| Ok((s.try_clone()?, Client::from_stream(s))))
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
                    let _ = conn
                        .writer
                        .send_request(&Request::Resize(msg::Resize { cols, rows }));
                }
                self.conn = Some(conn);
            }
            PaneEvent::SavedScreen(text) => {
                if let PaneStatus::Connecting { saved } = &mut self.status {
                    *saved = Some(text);
                }
            }
            PaneEvent::Attached { .. } => self.status = PaneStatus::Live,
            PaneEvent::Data(bytes) => {
                // A pane scrolled back stays on the lines it shows while
                // output arrives (vt100 keeps the offset from the bottom).
                let before = self.history_len();
                let offset = self.parser.screen().scrollback();
                self.parser.process(&bytes);
                if offset > 0 {
                    let grown = self.history_len().saturating_sub(before);
                    self.parser.screen_mut().set_scrollback(offset + grown);
                }
            }
            PaneEvent::Exited(code) => {
                self.status = PaneStatus::Exited(code);
                self.conn = None;
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
        self.parser.screen_mut().set_size(nz(rows), nz(cols));
        if let Some(conn) = &mut self.conn {
            let _ = conn
                .writer
                .send_request(&Request::Resize(msg::Resize { cols, rows }));
        }
    }

    /// Lines of history the pane holds above its screen.
    pub fn history_len(&self) -> usize {
        self.parser.screen().scrollback_len()
    }

    /// How many lines the view is scrolled back (0: the live screen).
    pub fn view_offset(&self) -> usize {
        self.parser.screen().scrollback()
    }

    pub fn set_view_offset(&mut self, offset: usize) {
        let offset = offset.min(self.history_len());
        self.parser.screen_mut().set_scrollback(offset);
    }

    /// Lines of history plus the screen's rows: the lines copy mode moves over.
    pub fn total_lines(&self) -> usize {
        self.history_len() + usize::from(self.size.0)
    }

    /// The text of line `line` (0 is the oldest history line), trailing
    /// blanks dropped.
    pub fn line_text(&mut self, line: usize) -> String {
        let history = self.history_len();
        let keep = self.view_offset();
        let (offset, row) = if line < history {
            (history - line, 0)
        } else {
            (0, line - history)
        };
        self.parser.screen_mut().set_scrollback(offset);
        let cols = self.size.1;
        let text = self
            .parser
            .screen()
            .rows(0, cols)
            .nth(row)
            .unwrap_or_default();
        self.parser.screen_mut().set_scrollback(keep);
        text.trim_end().to_owned()
    }

    /// Type into the session (only once attached).
    pub fn type_bytes(&mut self, bytes: &[u8]) {
        if self.status != PaneStatus::Live || bytes.is_empty() {
            return;
        }
        let screen = self.parser.screen();
        let bytes = crate::tui::keys::adapt_for_pane(
            bytes,
            screen.application_cursor(),
            screen.bracketed_paste(),
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

fn read_pane(
    mut client: Client,
    session: String,
    rows: u16,
    cols: u16,
    send: impl Fn(PaneEvent) -> bool,
) {
    // The saved screen first: attach may take a while when it wakes.
    if let Ok(v) = client.request(Request::Screen(msg::Screen {
        session: session.clone(),
        scrollback: None,
    })) && v["source"] == "saved"
        && !send(PaneEvent::SavedScreen(
            v["screen"].as_str().unwrap_or_default().to_owned(),
        ))
    {
        return;
    }
    match client.request(Request::Attach(msg::Attach {
        session,
        cols,
        rows,
        history: Some(PANE_HISTORY_LINES as u32),
    })) {
        Ok(reply) => {
            let detach_key = reply["detach_key"].as_str().map(str::to_owned);
            if !send(PaneEvent::Attached { detach_key }) {
                return;
            }
        }
        Err(e) => {
            let reason = match e.downcast_ref::<crate::client::DaemonError>() {
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
