//! The control socket: accepting clients, checking who they are, decoding
//! frames and answering requests, and streaming attached sessions.
//!
//! A bad client never takes the daemon down: malformed frames, unknown kinds
//! and oversized requests get an error reply; a client that vanishes
//! mid-request is simply dropped. Each connection has a bounded outgoing
//! queue, and attached output goes through a broadcast channel that never
//! blocks the session: a client that falls behind is resynced from the screen.

use std::sync::Arc;

use hangar_protocol::frame::{self, Decoder, Frame, FrameError, MAX_CLIENT_FRAME};
use hangar_protocol::message::{self as msg, PROTOCOL_VERSION, Reply, Request, codes};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::{broadcast, mpsc};

use crate::Daemon;
use crate::attach_size::{ClientId, ClientSizes};
use crate::state::{ApiError, RunState};

/// Outgoing frames queued per connection before the writer pushes back.
/// Output frames are batched up to `MAX_BATCH`, so this bounds what a client
/// that stops reading costs (1 MiB); beyond it the session's own channel
/// lags and the client is resynced with a redraw.
const OUTGOING_QUEUE: usize = 16;
/// A client must finish the hello handshake within this time of connecting.
/// Without it, a client that connects and trickles bytes (or none) holds a
/// task and its buffers forever; after the handshake a slow client costs
/// only its own connection.
pub const HANDSHAKE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

pub async fn serve(daemon: Arc<Daemon>, listener: UnixListener) {
    let mut shutdown = daemon.shutdown_watch();
    // Every attached client's terminal size, per session: the PTY takes the
    // smallest (tmux's rule).
    let sizes = Arc::new(ClientSizes::default());
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    let daemon = daemon.clone();
                    let sizes = sizes.clone();
                    tokio::spawn(async move { handle(daemon, sizes, stream).await });
                }
                Err(e) => {
                    tracing::warn!("accept failed: {e}");
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                }
            },
            // The guard `wait_for` returns is dropped inside: held in the
            // select it would make this future not `Send`.
            _ = async { drop(shutdown.wait_for(|s| *s).await) } => break,
        }
    }
}

struct Conn {
    out: mpsc::Sender<Vec<u8>>,
}

impl Conn {
    async fn reply(&self, reply: Reply) -> bool {
        self.out
            .send(frame::encode(frame::TAG_MESSAGE, &reply.encode()))
            .await
            .is_ok()
    }

    async fn data(&self, bytes: &[u8]) -> bool {
        self.out
            .send(frame::encode(frame::TAG_DATA, bytes))
            .await
            .is_ok()
    }

    async fn event(&self, event: Value) -> bool {
        let bytes = serde_json::to_vec(&event).unwrap_or_default();
        self.out
            .send(frame::encode(frame::TAG_MESSAGE, &bytes))
            .await
            .is_ok()
    }
}

fn peer_is_us(stream: &UnixStream) -> bool {
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    stream.peer_cred().is_ok_and(|c| c.uid() == me)
}

async fn handle(daemon: Arc<Daemon>, sizes: Arc<ClientSizes>, stream: UnixStream) {
    if !peer_is_us(&stream) {
        let mut stream = stream;
        let reply = Reply::err(
            0,
            codes::BAD_REQUEST,
            "refused: the client runs as another user",
        );
        let _ = stream
            .write_all(&frame::encode(frame::TAG_MESSAGE, &reply.encode()))
            .await;
        return;
    }
    let (mut reader, mut writer) = stream.into_split();
    let (out, mut out_rx) = mpsc::channel::<Vec<u8>>(OUTGOING_QUEUE);
    let writer_task = tokio::spawn(async move {
        while let Some(bytes) = out_rx.recv().await {
            if writer.write_all(&bytes).await.is_err() {
                break;
            }
        }
    });
    let conn = Conn { out };
    let mut decoder = Decoder::new(MAX_CLIENT_FRAME);
    let mut buf = vec![0u8; 64 * 1024];
    let mut greeted = false;
    let mut stop_daemon = false;
    let handshake_deadline = tokio::time::Instant::now() + HANDSHAKE_TIMEOUT;
    let mut attached: Option<Attached> = None;
    'conn: loop {
        // Drain every complete frame before reading more.
        loop {
            let frame = match decoder.next_frame() {
                Ok(Some(f)) => f,
                Ok(None) => break,
                Err(FrameError::TooLarge { len, max }) => {
                    let r = Reply::err(
                        0,
                        codes::TOO_LARGE,
                        format!("request of {len} bytes exceeds the limit of {max} bytes"),
                    );
                    if !conn.reply(r).await {
                        break 'conn;
                    }
                    continue;
                }
                Err(e) => {
                    if !conn
                        .reply(Reply::err(0, codes::BAD_REQUEST, e.to_string()))
                        .await
                    {
                        break 'conn;
                    }
                    continue;
                }
            };
            match frame {
                Frame::Data(bytes) => {
                    if let Some(a) = &attached {
                        if let Err(e) = a.live.write(&bytes).await {
                            tracing::debug!("input to attached session failed: {e}");
                        }
                        // A person typing: the session is in use (throttled).
                        daemon.touch_used(&a.session, true);
                    } else if !conn
                        .reply(Reply::err(
                            0,
                            codes::BAD_REQUEST,
                            "terminal data sent while not attached",
                        ))
                        .await
                    {
                        break 'conn;
                    }
                }
                Frame::Unknown { tag, .. } => {
                    let r = Reply::err(0, codes::UNKNOWN_KIND, format!("unknown frame tag {tag}"));
                    if !conn.reply(r).await {
                        break 'conn;
                    }
                }
                Frame::Message(payload) => {
                    let (id, request) = match Request::decode(&payload) {
                        Ok(x) => x,
                        Err(bad) => {
                            let r =
                                Reply::err(bad.id.unwrap_or(0), codes::BAD_REQUEST, bad.message);
                            if !conn.reply(r).await {
                                break 'conn;
                            }
                            continue;
                        }
                    };
                    if !greeted {
                        match request {
                            Request::Hello(h) if h.protocol_version == PROTOCOL_VERSION => {
                                greeted = true;
                                let welcome = msg::Welcome {
                                    protocol_version: PROTOCOL_VERSION,
                                    daemon_version: env!("CARGO_PKG_VERSION").to_owned(),
                                    pid: std::process::id(),
                                };
                                let body = serde_json::to_value(welcome).unwrap_or(Value::Null);
                                if !conn.reply(Reply::ok(id, body)).await {
                                    break 'conn;
                                }
                            }
                            Request::Hello(h) => {
                                let r = Reply::err(
                                    id,
                                    codes::VERSION,
                                    format!(
                                        "client speaks protocol {} but this daemon speaks {PROTOCOL_VERSION}; restart the daemon with `hangar shutdown`",
                                        h.protocol_version
                                    ),
                                );
                                conn.reply(r).await;
                                break 'conn;
                            }
                            _ => {
                                conn.reply(Reply::err(id, codes::BAD_REQUEST, "send hello first"))
                                    .await;
                                break 'conn;
                            }
                        }
                        continue;
                    }
                    match request {
                        Request::Attach(a) => {
                            match start_attach(&daemon, &sizes, &conn, id, a).await {
                                Ok(att) => {
                                    if let Some(old) = attached.replace(att) {
                                        old.release(&sizes).await;
                                    }
                                }
                                Err(e) => {
                                    if !conn.reply(error_reply(id, e)).await {
                                        break 'conn;
                                    }
                                }
                            }
                        }
                        Request::Resize(r) => {
                            if let Some(a) = &attached
                                && let Some((rows, cols)) =
                                    sizes.set(&a.session, a.client, Some((r.rows, r.cols)))
                            {
                                let _ = a.live.resize(rows, cols).await;
                            }
                        }
                        Request::Detach => {
                            if let Some(a) = attached.take() {
                                a.release(&sizes).await;
                            }
                            if !conn.reply(Reply::ok(id, json!({"detached": true}))).await {
                                break 'conn;
                            }
                        }
                        Request::Shutdown => {
                            conn.reply(Reply::ok(id, json!({"stopping": true}))).await;
                            // Shut down only after the reply is written (below):
                            // the process exits when shutdown ends, and a reply
                            // still queued then was lost ("the daemon closed the
                            // connection").
                            stop_daemon = true;
                            break 'conn;
                        }
                        other => {
                            let reply = match dispatch(&daemon, other).await {
                                Ok(body) => Reply::ok(id, body),
                                Err(e) => error_reply(id, e),
                            };
                            if !conn.reply(reply).await {
                                break 'conn;
                            }
                        }
                    }
                }
            }
        }
        let read = if greeted {
            reader.read(&mut buf).await
        } else {
            match tokio::time::timeout_at(handshake_deadline, reader.read(&mut buf)).await {
                Ok(read) => read,
                Err(_) => {
                    tracing::debug!("dropping a client that did not say hello in time");
                    break;
                }
            }
        };
        let n = match read {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        decoder.push(&buf[..n]);
    }
    if let Some(a) = attached {
        a.release(&sizes).await;
    }
    drop(conn);
    let _ = writer_task.await;
    if stop_daemon {
        daemon.shutdown().await;
    }
}

fn error_reply(id: u64, e: ApiError) -> Reply {
    Reply::err_with(id, e.code, e.message, e.detail)
}

async fn dispatch(daemon: &Arc<Daemon>, request: Request) -> Result<Value, ApiError> {
    match request {
        Request::New(r) => daemon.op_new(r).await,
        Request::List => Ok(daemon.op_list_with_worktrees().await),
        Request::Status => Ok(daemon.op_status()),
        Request::Send(r) => daemon.op_send(r).await,
        Request::Park(r) => daemon.op_park(&r.session).await,
        Request::Unpark(r) => daemon.op_unpark(r).await,
        Request::Bury(r) => daemon.op_bury(&r.session).await,
        Request::Unbury(r) => daemon.op_unbury(&r.session).await,
        Request::Pin(r) => daemon.op_pin(&r.session, true),
        Request::Unpin(r) => daemon.op_pin(&r.session, false),
        Request::Wake(r) => daemon.op_wake(&r.session).await,
        Request::Hibernate(r) => daemon.op_hibernate(&r.session).await,
        Request::Close(r) => daemon.op_close(r).await,
        Request::TabNew(r) => daemon.op_tab_new(r),
        Request::TabList => Ok(daemon.op_tab_list()),
        Request::TabClose(r) => daemon.op_tab_close(r).await,
        Request::TabRename(r) => daemon.op_tab_rename(r),
        Request::Reload(r) => daemon.op_reload(r).await,
        Request::Screen(r) => daemon.op_screen(&r.session, r.scrollback),
        Request::Doctor(r) => match daemon.op_doctor(r).await {
            Ok(mut v) => {
                v["clis"] = daemon.cli_report().await;
                Ok(v)
            }
            Err(e) => Err(e),
        },
        Request::Transcript(r) => daemon.op_transcript(r).await,
        Request::Export => daemon.op_export(),
        Request::Import(r) => daemon.op_import(r).await,
        Request::Workspace => daemon.op_workspace(),
        Request::Worktrees(r) => daemon.op_worktrees(r).await,
        Request::Focus(r) => daemon.op_focus(r),
        Request::Evict(r) => daemon.evict_parked(r.parked_older_than_ms, r.dry_run).await,
        Request::CloseIdle(r) => {
            daemon
                .close_idle(r.older_than_ms, r.include_live, r.yes)
                .await
        }
        Request::ResumeQueue => Ok(daemon.resume_queue()),
        Request::Ratio(r) => daemon.op_ratio(r),
        Request::Agent(call) => daemon.op_agent(call).await,
        Request::Wait(r) => daemon.op_wait(&r.sessions, &r.until, r.timeout_ms).await,
        Request::Hook(r) if crate::identity::is_session_start(&r.event) => {
            daemon.op_session_start(&r)
        }
        Request::Hook(r) => daemon.op_hook(&r.session, &r.event),
        Request::Hello(_) => Err(ApiError::new(codes::BAD_REQUEST, "already greeted")),
        Request::Resize(_) | Request::Detach | Request::Attach(_) | Request::Shutdown => {
            Err(ApiError::new(codes::BAD_REQUEST, "not valid here"))
        }
        Request::Unknown(kind) => Err(ApiError::new(
            codes::UNKNOWN_KIND,
            format!(
                "unknown request kind {kind:?}; this daemon is version {}",
                env!("CARGO_PKG_VERSION")
            ),
        )),
    }
}

struct Attached {
    session: hangar_core::SessionId,
    /// This connection's entry in the table of client sizes.
    client: ClientId,
    live: Arc<crate::pty::LiveProcess>,
    forwarder: tokio::task::JoinHandle<()>,
    /// Counts this client as viewing the session: no notifications about it.
    _viewer: crate::activity::ViewerGuard,
}

impl Attached {
    /// Stop streaming to this client and give the session the smallest size
    /// of the clients still attached (a big client leaving must not leave
    /// the PTY too large for a small one).
    async fn release(self, sizes: &ClientSizes) {
        self.forwarder.abort();
        if let Some((rows, cols)) = sizes.set(&self.session, self.client, None)
            && self.live.exited().is_none()
        {
            let _ = self.live.resize(rows, cols).await;
        }
    }
}

async fn start_attach(
    daemon: &Arc<Daemon>,
    sizes: &ClientSizes,
    conn: &Conn,
    id: u64,
    req: msg::Attach,
) -> Result<Attached, ApiError> {
    let session = daemon.lock().resolve_session(&req.session)?;
    // Counted as viewed before it wakes, so the budget check of any wake
    // from here on never takes the session this person is attaching to.
    let viewer = daemon.activity.view(&session);
    if let RunState::Failed(reason) = daemon
        .wake_as(&session, crate::journal::Caller::Attach)
        .await?
    {
        return Err(ApiError::new(codes::FAILED, reason));
    }
    daemon.touch_used(&session, false);
    let live = daemon
        .lock()
        .runtimes
        .get(&session)
        .and_then(|r| r.proc.clone())
        .ok_or_else(|| ApiError::new(codes::FAILED, "the session is not running"))?;
    let client = sizes.new_client();
    if let Some((rows, cols)) = sizes.set(&session, client, Some((req.rows, req.cols))) {
        let _ = live.resize(rows, cols).await;
    }
    let detach_key = daemon.config.attach.detach_key.clone();
    conn.reply(Reply::ok(
        id,
        json!({"id": session.to_string(), "detach_key": detach_key}),
    ))
    .await;
    let history = req.history.map(|n| n as usize);
    let (snapshot, rx) = live.snapshot_and_subscribe(history);
    conn.data(&snapshot).await;
    let notices = daemon
        .config
        .notify
        .osc
        .then(|| daemon.activity.osc_notifications());
    let forwarder = tokio::spawn(forward_output(
        Conn {
            out: conn.out.clone(),
        },
        live.clone(),
        rx,
        (session.clone(), notices),
    ));
    Ok(Attached {
        session,
        client,
        live,
        forwarder,
        _viewer: viewer,
    })
}

/// Notification escapes about other sessions, for the client viewing one.
type Notices = (
    hangar_core::SessionId,
    Option<broadcast::Receiver<(hangar_core::SessionId, Vec<u8>)>>,
);

async fn forward_output(
    conn: Conn,
    live: Arc<crate::pty::LiveProcess>,
    mut rx: broadcast::Receiver<bytes::Bytes>,
    (viewing, mut notices): Notices,
) {
    let mut exit = live.exit_watch();
    loop {
        tokio::select! {
            notice = async { notices.as_mut()?.recv().await.ok() }, if notices.is_some() => {
                // The terminal shows its own notification (OSC 9 / 777).
                if let Some((about, bytes)) = notice
                    && about != viewing
                    && !conn.data(&bytes).await
                {
                    return;
                }
            },
            chunk = rx.recv() => match chunk {
                Ok(_) if rx.len() > RESYNC_BACKLOG => {
                    // Behind by more than a moment of bulk output: the
                    // current screen, not the backlog.
                    if !resync(&conn, &live, &mut rx).await {
                        return;
                    }
                }
                Ok(bytes) => {
                    // Coalesce what is already queued into one frame: one
                    // frame per PTY read made the client pay per 4 KiB.
                    let (batch, lagged) = coalesce(bytes, &mut rx);
                    let sent = if lagged {
                        resync(&conn, &live, &mut rx).await
                    } else {
                        conn.data(&batch).await
                    };
                    if !sent {
                        return;
                    }
                }
                Err(broadcast::error::RecvError::Lagged(_)) => {
                    // Too slow to keep up: redraw from the screen state.
                    if !resync(&conn, &live, &mut rx).await {
                        return;
                    }
                }
                Err(broadcast::error::RecvError::Closed) => break,
            },
            _ = async { exit.wait_for(|e| e.is_some()).await.map(|_| ()) } => {
                // Let the last output drain before saying it ended.
                while let Ok(bytes) = rx.try_recv() {
                    if !conn.data(&bytes).await {
                        return;
                    }
                }
                break;
            }
        }
    }
    let code = live.exited();
    conn.event(json!({"event": "exited", "code": code})).await;
}

/// Output chunks a client may be behind before it gets the current screen
/// instead of the backlog (up to 1 MiB of PTY reads): a client that keeps
/// up gets every byte, one that fell behind never queues bulk output.
const RESYNC_BACKLOG: usize = 64;

/// Send the current screen (every mode included) and continue from the
/// output after it, dropping what was queued before.
async fn resync(
    conn: &Conn,
    live: &crate::pty::LiveProcess,
    rx: &mut broadcast::Receiver<bytes::Bytes>,
) -> bool {
    let (redraw, fresh) = live.snapshot_and_subscribe(None);
    *rx = fresh;
    conn.data(&redraw).await
}

/// Largest batch of output sent to an attached client as one frame.
const MAX_BATCH: usize = 64 * 1024;

/// `first` plus every chunk already waiting, up to `MAX_BATCH` bytes, and
/// whether the receiver lagged meanwhile (the caller then redraws).
fn coalesce(
    first: bytes::Bytes,
    rx: &mut broadcast::Receiver<bytes::Bytes>,
) -> (bytes::Bytes, bool) {
    let mut batch: Option<Vec<u8>> = None;
    while batch.as_ref().map_or(first.len(), Vec::len) < MAX_BATCH {
        match rx.try_recv() {
            Ok(more) => batch
                .get_or_insert_with(|| first.to_vec())
                .extend_from_slice(&more),
            Err(broadcast::error::TryRecvError::Lagged(_)) => {
                return (batch.map_or(first, bytes::Bytes::from), true);
            }
            Err(_) => break,
        }
    }
    (batch.map_or(first, bytes::Bytes::from), false)
}
