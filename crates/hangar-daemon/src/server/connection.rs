//! One client's connection: the hello handshake, decoding frames, answering
//! requests in order, and the attach/detach of a session on this connection.
//!
//! A request's own work is `dispatch`'s; this file never decides what a
//! request means, only how it travels.

use std::sync::Arc;

use hangar_protocol::frame::{Decoder, Frame, FrameError, MAX_CLIENT_FRAME};
use hangar_protocol::message::{self as msg, PROTOCOL_VERSION, Reply, Request, codes};
use hangar_protocol::reply;
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::task::JoinHandle;

use super::attach::{Attached, start_attach};
use super::attach_size::ClientSizes;
use super::conn::Conn;
use crate::Daemon;
use crate::errors::ApiError;
use hangar_core::SessionId;

/// A client must finish the hello handshake within this time of connecting.
/// Without it, a client that connects and trickles bytes (or none) holds a
/// task and its buffers forever; after the handshake a slow client costs
/// only its own connection.
pub const HANDSHAKE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// How a connection's requests ended.
pub(super) enum Ended<R> {
    /// The client left (or broke the protocol).
    Closed,
    /// The client asked the daemon to stop; its reply is queued.
    Shutdown,
    /// A bridge hands over its link (`take_link`): its descriptors follow
    /// on this socket.
    TakeLink(R),
}

/// What a connection's requests are read from: the control socket, on
/// which a client may also hand over descriptors (its terminal), or a far
/// hangar's channel, which carries bytes only.
pub(super) trait ClientReader: AsyncRead + Unpin {
    /// The socket a client's descriptors come on, if they can.
    fn socket(&self) -> Option<&tokio::net::UnixStream>;
}

impl ClientReader for tokio::net::unix::OwnedReadHalf {
    fn socket(&self) -> Option<&tokio::net::UnixStream> {
        Some(self.as_ref())
    }
}

impl ClientReader for tokio::io::DuplexStream {
    fn socket(&self) -> Option<&tokio::net::UnixStream> {
        None
    }
}

/// The requests of one connection, read from `reader`, answered through
/// `conn`, until the client leaves; attach, resize and detach are served
/// here, every other request by `dispatch`. The daemon stops after a
/// `shutdown`'s reply is written. A link's channels are served here too
/// (`link.rs`), each its own connection.
pub(super) async fn serve<R: ClientReader>(
    daemon: Arc<Daemon>,
    sizes: Arc<ClientSizes>,
    mut reader: R,
    conn: &Conn,
    scope: Option<SessionId>,
    may_take_link: bool,
) -> Ended<R> {
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
                        daemon.governor.touch_used(&a.session, true);
                        daemon.usage.person_typed(&a.session);
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
                    if let Some(session) = &scope
                        && let Some(why) = crate::sandbox::callback::refusal(session, &request)
                    {
                        if !conn.reply(Reply::err(id, codes::UNAUTHORIZED, why)).await {
                            break 'conn;
                        }
                        continue;
                    }
                    match request {
                        Request::Attach(a) => {
                            // Only the person's own clients (not a sandboxed
                            // agent's socket) may hand over a terminal.
                            let terminal_socket = reader.socket().filter(|_| scope.is_none());
                            match start_attach(&daemon, &sizes, conn, id, a, terminal_socket).await
                            {
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
                            if !conn
                                .reply(Reply::ok_typed(id, &reply::Detached { detached: true }))
                                .await
                            {
                                break 'conn;
                            }
                        }
                        Request::Shutdown => {
                            conn.reply(Reply::ok_typed(id, &reply::Stopping { stopping: true }))
                                .await;
                            // The caller shuts down once the reply is written.
                            stop_daemon = true;
                            break 'conn;
                        }
                        Request::TakeLink if may_take_link => {
                            if let Some(a) = attached.take() {
                                a.release(&sizes).await;
                            }
                            let r = Reply::ok_typed(
                                id,
                                &reply::LinkTaken {
                                    send_descriptors: true,
                                },
                            );
                            if !conn.reply(r).await {
                                break 'conn;
                            }
                            return Ended::TakeLink(reader);
                        }
                        Request::TakeLink => {
                            let r = Reply::err(
                                id,
                                codes::BAD_REQUEST,
                                "a link is handed over on the control socket only",
                            );
                            if !conn.reply(r).await {
                                break 'conn;
                            }
                        }
                        other => {
                            let reply = match crate::handlers::dispatch(&daemon, other).await {
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
    if stop_daemon {
        return Ended::Shutdown;
    }
    Ended::Closed
}

/// A connection's end: its way out closed, everything queued written, then
/// the daemon stopped if the client asked. Only in that order: the process
/// exits when shutdown ends, and a reply still queued then was lost ("the
/// daemon closed the connection").
pub(super) async fn close(
    daemon: &Arc<Daemon>,
    conn: Conn,
    writer: JoinHandle<()>,
    stop_daemon: bool,
) {
    drop(conn);
    let _ = writer.await;
    if stop_daemon {
        daemon.shutdown().await;
    }
}

pub(super) fn error_reply(id: u64, e: ApiError) -> Reply {
    Reply::err_with(id, e.code, e.message, e.detail)
}
