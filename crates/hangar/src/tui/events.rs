//! What the TUI's threads tell its UI thread: the one event type the
//! keyboard, control, host-probe and pane threads send, and what each
//! carries. Its own module, so the threads and the UI import it without
//! importing each other.

use std::net::Shutdown;
use std::os::unix::net::UnixStream;

use hangar_core::Workspace;
use hangar_protocol::message::{ErrorBody, Request};
use hangar_protocol::view::SessionView;
use serde_json::Value;

use crate::conn::Client;

/// Everything the UI thread reacts to.
pub enum Event {
    Input(Vec<u8>),
    /// No byte came on stdin for `keys::ESCAPE_TIME` after the last read:
    /// input that waits for the rest of a key is taken as it is.
    InputQuiet,
    Snapshot(Box<Snapshot>),
    Done(Box<Outcome>),
    DaemonLost(String),
    /// A host switcher probe's answer (a `hangar hosts` row).
    Host {
        name: String,
        row: serde_json::Value,
    },
    Pane {
        session: String,
        generation: u64,
        event: PaneEvent,
    },
    /// The overview's answer: every host's sessions, and the hosts that
    /// did not answer.
    Overview {
        answered: Vec<(String, Vec<SessionView>)>,
        down: Vec<crate::remote::all_hosts::Down>,
    },
}

/// What the daemon looks like right now.
#[derive(Clone, Debug, Default)]
pub struct Snapshot {
    pub ws: Workspace,
    pub sessions: Vec<SessionView>,
    /// The live agents' memory against the budget (`status`), looked at
    /// every few polls; `None` until the first look.
    pub budget: Option<hangar_protocol::view::BudgetView>,
}

/// A command for the daemon, with a label for the status line.
#[derive(Clone, Debug)]
pub struct Command {
    pub request: Request,
    pub label: String,
}

/// How a command went.
#[derive(Clone, Debug)]
pub struct Outcome {
    pub command: Command,
    pub result: Result<Value, ErrorBody>,
}

/// What a pane's connection reports.
#[derive(Debug)]
pub enum PaneEvent {
    /// The session's last saved screen, shown while it wakes.
    SavedScreen(String),
    /// The daemon accepted the attach: the live stream follows. It names
    /// the configured detach key, whose prefix is also the TUI's prefix.
    Attached {
        detach_key: Option<String>,
        /// Where the session's history ends at the screen that follows
        /// (`None` from a daemon older than paged history).
        history_end: Option<u64>,
    },
    Data(Vec<u8>),
    /// Where history ends after the output sent so far.
    HistoryEnd(u64),
    Exited(i64),
    /// The attach was refused (a failed wake names its reason).
    Failed(String),
    /// The connection broke.
    Lost(String),
    /// The connection is open (made off the UI thread: to another host it
    /// is an ssh handshake); this is its writing half.
    Connected(Box<PaneConn>),
}

/// A pane's open connection: its writing half and the stream, shut down
/// when it is dropped (which detaches from the daemon).
pub struct PaneConn {
    pub(super) writer: Client,
    pub(super) stream: UnixStream,
    /// The (rows, cols) the attach asked for.
    pub(super) size: (u16, u16),
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
