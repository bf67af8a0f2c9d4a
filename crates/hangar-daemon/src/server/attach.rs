//! An attached session on one connection: the reply, the screen as it is,
//! then its output as it comes (batched, with a redraw when the client falls
//! behind), other sessions' notification escapes, and the exit event.
//!
//! The session is counted as viewed from before its wake to the release, so
//! no budget check or notification takes the session a person is looking at.

use std::sync::Arc;

use hangar_protocol::message::{self as msg, Reply, codes};
use hangar_protocol::reply;
use serde_json::json;
use tokio::sync::broadcast;

use super::attach_size::{ClientId, ClientSizes};
use super::conn::Conn;
use super::descriptors;
use super::terminal::Terminal;
use crate::Daemon;
use crate::errors::ApiError;
use crate::sessions::RunState;
use hangar_core::keys::{DetachFilter, DetachKey, ESCAPE_TIME};

pub(super) struct Attached {
    pub(super) session: hangar_core::SessionId,
    /// This connection's entry in the table of client sizes.
    pub(super) client: ClientId,
    pub(super) live: Arc<crate::pty::LiveProcess>,
    forwarder: tokio::task::JoinHandle<()>,
    /// Reads the person's keys when the daemon holds their terminal.
    keys: Option<tokio::task::JoinHandle<()>>,
    /// Counts this client as viewing the session: no notifications about it.
    _viewer: crate::activity::ViewerGuard,
}

impl Attached {
    /// Stop streaming to this client and give the session the smallest size
    /// of the clients still attached (a big client leaving must not leave
    /// the PTY too large for a small one).
    pub(super) async fn release(self, sizes: &ClientSizes) {
        self.forwarder.abort();
        if let Some(keys) = &self.keys {
            keys.abort();
        }
        if let Some((rows, cols)) = sizes.set(&self.session, self.client, None)
            && self.live.exited().is_none()
        {
            let _ = self.live.resize(rows, cols).await;
        }
    }
}

pub(super) async fn start_attach(
    daemon: &Arc<Daemon>,
    sizes: &ClientSizes,
    conn: &Conn,
    id: u64,
    req: msg::Attach,
    // The control socket, when the client may hand over its terminal on it.
    terminal_socket: Option<&tokio::net::UnixStream>,
) -> Result<Attached, ApiError> {
    let session = daemon.sessions.resolve(&req.session)?;
    // Counted as viewed before it wakes, so the budget check of any wake
    // from here on never takes the session this person is attaching to.
    let viewer = daemon.activity.view(&session);
    if let RunState::Failed(reason) = daemon
        .governor
        .wake_as(&session, crate::journal::Caller::Attach)
        .await?
    {
        return Err(ApiError::new(codes::FAILED, reason));
    }
    daemon.governor.touch_used(&session, false);
    let live = daemon
        .sessions
        .process(&session)
        .ok_or_else(|| ApiError::new(codes::FAILED, "the session is not running"))?;
    let client = sizes.new_client();
    if let Some((rows, cols)) = sizes.set(&session, client, Some((req.rows, req.cols))) {
        let _ = live.resize(rows, cols).await;
    }
    let detach_key = daemon.attach_settings.get().detach_key.clone();
    // The screen is taken before the reply, which names its history's end;
    // what is printed in between is in `rx`, after the screen.
    let history = req.history.map(|n| n as usize);
    let (snapshot, history_end, rx) = live.snapshot_and_subscribe(history);
    let terminal_socket = terminal_socket.filter(|_| req.terminal);
    conn.reply(Reply::ok_typed(
        id,
        &reply::Attached {
            id: session.to_string(),
            detach_key: detach_key.clone(),
            history_end: Some(history_end),
            send_terminal: terminal_socket.is_some(),
        },
    ))
    .await;
    let terminal = match terminal_socket {
        Some(socket) => take_terminal(socket, conn).await,
        None => None,
    };
    let out = Output {
        conn: Conn {
            out: conn.out.clone(),
        },
        terminal: terminal.clone(),
    };
    out.data(&snapshot).await;
    let keys = terminal.map(|terminal| {
        tokio::spawn(read_keys(
            daemon.clone(),
            terminal,
            live.clone(),
            session.clone(),
            DetachKey::parse(&detach_key),
            Conn {
                out: conn.out.clone(),
            },
        ))
    });
    let notices = daemon
        .config
        .notify
        .osc
        .then(|| daemon.activity.osc_notifications());
    let forwarder = tokio::spawn(forward_output(
        out,
        live.clone(),
        rx,
        (session.clone(), notices),
        req.history_events.then_some(HistoryEvents {
            last: Some(history_end),
        }),
    ));
    Ok(Attached {
        session,
        client,
        live,
        forwarder,
        keys,
        _viewer: viewer,
    })
}

/// Where an attached session's output goes: the client's terminal when the
/// daemon holds it, else the client's connection. Events always go on the
/// connection.
struct Output {
    conn: Conn,
    terminal: Option<Arc<Terminal>>,
}

impl Output {
    async fn data(&self, bytes: &[u8]) -> bool {
        match &self.terminal {
            Some(terminal) => terminal.write_all(bytes).await.is_ok(),
            None => self.conn.data(bytes).await,
        }
    }
}

/// Receive the terminal the client offered and say on the connection
/// whether the daemon took it (`{"event": "terminal", "taken": ...}`);
/// when not, the client relays its terminal's bytes as before.
async fn take_terminal(socket: &tokio::net::UnixStream, conn: &Conn) -> Option<Arc<Terminal>> {
    let taken = descriptors::receive::<1>(socket)
        .await
        .and_then(|[fd]| Terminal::open(fd));
    match taken {
        Ok(terminal) => conn
            .event(json!({"event": "terminal", "taken": true}))
            .await
            .then(|| Arc::new(terminal)),
        Err(e) => {
            tracing::info!("an attaching client's terminal was not taken: {e}");
            conn.event(json!({"event": "terminal", "taken": false, "reason": e.to_string()}))
                .await;
            None
        }
    }
}

/// The person's keys, from their terminal to the session, until they press
/// the detach key (said on the connection as `{"event": "detach_asked"}`:
/// the client then detaches as ever) or the terminal hangs up. A sequence a
/// read cut off (an escape, a paste marker) waits the escape time for its
/// rest, as in the client.
async fn read_keys(
    daemon: Arc<Daemon>,
    terminal: Arc<Terminal>,
    live: Arc<crate::pty::LiveProcess>,
    session: hangar_core::SessionId,
    key: DetachKey,
    conn: Conn,
) {
    let mut filter = DetachFilter::new(key);
    let mut buf = [0u8; 4096];
    loop {
        let read = if filter.pending() {
            match tokio::time::timeout(ESCAPE_TIME, terminal.read(&mut buf)).await {
                Ok(read) => read,
                Err(_quiet) => {
                    let held = filter.flush();
                    if let Err(e) = live.write(&held).await {
                        tracing::debug!("input to attached session failed: {e}");
                    }
                    continue;
                }
            }
        } else {
            terminal.read(&mut buf).await
        };
        let n = match read {
            Ok(0) => return,
            Ok(n) => n,
            Err(e) => {
                tracing::debug!("an attached terminal could not be read: {e}");
                return;
            }
        };
        let (bytes, detach) = filter.feed(&buf[..n]);
        if !bytes.is_empty() {
            if let Err(e) = live.write(&bytes).await {
                tracing::debug!("input to attached session failed: {e}");
            }
            // A person typing: the session is in use (throttled).
            daemon.governor.touch_used(&session, true);
            daemon.usage.person_typed(&session);
        }
        if detach {
            conn.event(json!({"event": "detach_asked"})).await;
            return;
        }
    }
}

/// Notification escapes about other sessions, for the client viewing one.
type Notices = (
    hangar_core::SessionId,
    Option<broadcast::Receiver<(hangar_core::SessionId, Vec<u8>)>>,
);

async fn forward_output(
    out: Output,
    live: Arc<crate::pty::LiveProcess>,
    mut rx: broadcast::Receiver<bytes::Bytes>,
    (viewing, mut notices): Notices,
    mut events: Option<HistoryEvents>,
) {
    let mut exit = live.exit_watch();
    loop {
        tokio::select! {
            notice = async { notices.as_mut()?.recv().await.ok() }, if notices.is_some() => {
                // The terminal shows its own notification (OSC 9 / 777).
                if let Some((about, bytes)) = notice
                    && about != viewing
                    && !out.data(&bytes).await
                {
                    return;
                }
            },
            chunk = rx.recv() => match chunk {
                Ok(bytes) => {
                    // Everything already queued, sent in frames of up to
                    // `MAX_BATCH`: one frame per PTY read made the client pay
                    // per read. Behind by more than `RESYNC_BYTES`: the
                    // current screen, not the backlog.
                    let (queued, end) = match &events {
                        Some(_) => {
                            let (queued, end) =
                                live.take_with_history_end(|| take_queued(bytes, &mut rx));
                            (queued, Some(end))
                        }
                        None => (take_queued(bytes, &mut rx), None),
                    };
                    let end = match queued {
                        Queued::Behind => match resync(&out, &live, &mut rx).await {
                            Some(end) => Some(end),
                            None => return,
                        },
                        Queued::Output(queued) => {
                            if !send_batches(&out, &queued).await {
                                return;
                            }
                            end
                        }
                    };
                    if let (Some(events), Some(end)) = (&mut events, end)
                        && !events.send(&out.conn, end).await
                    {
                        return;
                    }
                }
                Err(broadcast::error::RecvError::Lagged(_)) => {
                    // Too slow to keep up: redraw from the screen state.
                    let Some(end) = resync(&out, &live, &mut rx).await else {
                        return;
                    };
                    if let Some(events) = &mut events
                        && !events.send(&out.conn, end).await
                    {
                        return;
                    }
                }
                Err(broadcast::error::RecvError::Closed) => break,
            },
            _ = async { exit.wait_for(|e| e.is_some()).await.map(|_| ()) } => {
                // Let the last output drain before saying it ended.
                while let Ok(bytes) = rx.try_recv() {
                    if !out.data(&bytes).await {
                        return;
                    }
                }
                if let Some(events) = &mut events {
                    let ((), end) = live.take_with_history_end(|| ());
                    events.send(&out.conn, end).await;
                }
                break;
            }
        }
    }
    let code = live.exited();
    out.conn
        .event(json!({"event": "exited", "code": code}))
        .await;
}

/// Output a client may be behind (printed, not yet handed to its
/// connection) before it gets the current screen instead of the backlog:
/// a client that keeps up gets every byte, one that fell behind never queues
/// bulk output. Counted in bytes, not PTY reads: a program printing a line
/// per write (a shell's `echo`, an agent CLI drawing piece by piece) makes
/// reads of a few bytes, and 64 of them are no backlog at all.
const RESYNC_BYTES: usize = 256 * 1024;

/// Send the current screen (every mode included) and continue from the
/// output after it, dropping what was queued before. Returns where history
/// ends at that screen: the lines the client missed went to history without
/// passing through it.
async fn resync(
    out: &Output,
    live: &crate::pty::LiveProcess,
    rx: &mut broadcast::Receiver<bytes::Bytes>,
) -> Option<u64> {
    let (redraw, history_end, fresh) = live.snapshot_and_subscribe(None);
    *rx = fresh;
    out.data(&redraw).await.then_some(history_end)
}

/// For a client that asked (`history_events`): the history's end after the
/// output it was just sent, when it moved. A client that reads history a
/// page at a time by number (the TUI) knows from it which line is just above
/// its screen, whatever the program did (clears, resizes, a resync).
struct HistoryEvents {
    last: Option<u64>,
}

impl HistoryEvents {
    async fn send(&mut self, conn: &Conn, end: u64) -> bool {
        if self.last == Some(end) {
            return true;
        }
        self.last = Some(end);
        conn.event(json!({"event": "history", "end": end})).await
    }
}

/// Largest batch of output sent to an attached client as one frame.
const MAX_BATCH: usize = 64 * 1024;

/// What was queued for a client, taken at once.
enum Queued {
    Output(bytes::Bytes),
    /// More than `RESYNC_BYTES`, or the channel dropped some: redraw.
    Behind,
}

/// `first` plus every chunk already waiting, unless that is more than
/// `RESYNC_BYTES` or the receiver lagged meanwhile.
fn take_queued(first: bytes::Bytes, rx: &mut broadcast::Receiver<bytes::Bytes>) -> Queued {
    let mut queued: Option<Vec<u8>> = None;
    loop {
        match rx.try_recv() {
            Ok(more) => {
                let all = queued.get_or_insert_with(|| first.to_vec());
                all.extend_from_slice(&more);
                if all.len() > RESYNC_BYTES {
                    return Queued::Behind;
                }
            }
            Err(broadcast::error::TryRecvError::Lagged(_)) => return Queued::Behind,
            Err(_) => break,
        }
    }
    Queued::Output(queued.map_or(first, bytes::Bytes::from))
}

/// Send `queued` in frames of at most `MAX_BATCH` bytes.
async fn send_batches(out: &Output, queued: &[u8]) -> bool {
    for batch in queued.chunks(MAX_BATCH) {
        if !out.data(batch).await {
            return false;
        }
    }
    true
}
