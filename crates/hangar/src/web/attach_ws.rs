//! `GET /api/sessions/ID/attach`: a browser's terminal (xterm.js) attached
//! to a session over a WebSocket, through the daemon's own attach protocol
//! (what `hangar attach` speaks).
//!
//! Browser to server: binary messages are keystrokes, passed on unchanged;
//! text messages are JSON controls, `{"type":"resize","cols","rows"}`.
//! Server to browser: binary messages are the terminal's bytes (the screen
//! first, then the live stream); text messages are JSON notices
//! (`exited`, `error`, `lost`, and `history`: `{"type":"history","end":N}`,
//! the number of the line just below the session's history after the bytes
//! sent before it, so the page's scrollback reads the lines above its screen
//! by number from `GET /api/sessions/ID/history`).
//!
//! A read-only viewer attaches without a size (it never shrinks the PTY for
//! the people typing) and every keystroke it sends is refused. A revoked
//! pairing closes the socket within a second.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::ws::{CloseFrame, Message, WebSocket, WebSocketUpgrade};
use axum::extract::{Extension, Path, Query, State};
use axum::response::Response;
use futures::{SinkExt, StreamExt};
use hangar_protocol::message::{self as msg, Request as DaemonRequest};
use hangar_protocol::reply::kind;
use serde::Deserialize;
use serde_json::{Value, json};

use super::app::{App, link_error};
use super::auth::Access;
use crate::conn::tokio_link::{DaemonLink, Incoming};

/// The close code for "policy violation" (RFC 6455): revoked.
const POLICY_VIOLATION: u16 = 1008;
const REVOCATION_CHECK: Duration = Duration::from_millis(500);
/// Terminal sizes beyond this are nonsense from a client, not a screen.
const MAX_SIDE: u16 = 1000;

#[derive(Deserialize)]
pub struct SizeQuery {
    cols: Option<u16>,
    rows: Option<u16>,
}

fn clamp_side(v: u16) -> u16 {
    v.clamp(1, MAX_SIDE)
}

pub async fn attach(
    State(app): State<Arc<App>>,
    Extension(access): Extension<Access>,
    Path(id): Path<String>,
    Query(size): Query<SizeQuery>,
    ws: WebSocketUpgrade,
) -> Response {
    let link = match DaemonLink::connect(&app.paths).await {
        Ok(l) => l,
        Err(e) => return link_error(e),
    };
    attach_on(app, link, access, id, size, ws).await
}

/// Attach session `id` on `link` (this machine's daemon, or another host's
/// over its ssh link: `far`) and bridge it to the browser's WebSocket.
pub async fn attach_on(
    app: Arc<App>,
    mut link: DaemonLink,
    access: Access,
    id: String,
    size: SizeQuery,
    ws: WebSocketUpgrade,
) -> Response {
    let (cols, rows) = match access {
        Access::ReadOnly => (0, 0),
        Access::Full => (
            clamp_side(size.cols.unwrap_or(80)),
            clamp_side(size.rows.unwrap_or(24)),
        ),
    };
    // Attach before upgrading, so "no such session" is a plain 404.
    let history_end = match link
        .ask::<kind::Attach>(msg::Attach {
            session: id,
            cols,
            rows,
            history: None,
            history_events: true,
            terminal: false,
        })
        .await
    {
        Ok(reply) => reply.history_end,
        Err(e) => return link_error(e),
    };
    ws.on_upgrade(move |socket| bridge(socket, link, access, app, history_end))
}

fn notice(v: Value) -> Message {
    Message::Text(v.to_string().into())
}

async fn bridge(
    socket: WebSocket,
    link: DaemonLink,
    access: Access,
    app: Arc<App>,
    history_end: Option<u64>,
) {
    let (mut to_browser, mut from_browser) = socket.split();
    // Where history ends at the screen the daemon sends first.
    if let Some(end) = history_end
        && to_browser
            .send(notice(json!({"type": "history", "end": end})))
            .await
            .is_err()
    {
        return;
    }
    let DaemonLink {
        mut reader,
        mut writer,
        far: _far_link_held,
    } = link;
    let mut revocation = tokio::time::interval(REVOCATION_CHECK);
    loop {
        tokio::select! {
            incoming = reader.read() => match incoming {
                Ok(Incoming::Data(d)) => {
                    if to_browser.send(Message::Binary(Bytes::from(d))).await.is_err() {
                        break;
                    }
                }
                Ok(Incoming::Event(e)) if e["event"] == "exited" => {
                    let _ = to_browser
                        .send(notice(json!({"type": "exited", "code": e["code"]})))
                        .await;
                    break;
                }
                Ok(Incoming::Event(e)) if e["event"] == "history" => {
                    if to_browser
                        .send(notice(json!({"type": "history", "end": e["end"]})))
                        .await
                        .is_err()
                    {
                        break;
                    }
                }
                Ok(Incoming::Reply(r)) if r.body.get("detached").is_some() => break,
                Ok(_) => {}
                Err(e) => {
                    let _ = to_browser
                        .send(notice(json!({"type": "lost", "message": e.to_string()})))
                        .await;
                    break;
                }
            },
            from = from_browser.next() => match from {
                Some(Ok(Message::Binary(bytes))) => {
                    if access == Access::ReadOnly {
                        let refused = json!({"type": "error", "code": "read_only",
                            "message": "this is a read-only view: it can look but not type"});
                        if to_browser.send(notice(refused)).await.is_err() {
                            break;
                        }
                    } else if writer.send_data(&bytes).await.is_err() {
                        break;
                    }
                }
                Some(Ok(Message::Text(text))) => {
                    let control: Value = serde_json::from_str(text.as_str()).unwrap_or(Value::Null);
                    if control["type"] == "resize" && access == Access::Full {
                        let side = |k: &str| control[k].as_u64().map(|v| clamp_side(v.min(u16::MAX as u64) as u16));
                        if let (Some(cols), Some(rows)) = (side("cols"), side("rows"))
                            && writer
                                .send_request(&DaemonRequest::Resize(msg::Resize { cols, rows }))
                                .await
                                .is_err()
                        {
                            break;
                        }
                    }
                }
                Some(Ok(Message::Ping(_) | Message::Pong(_))) => {}
                Some(Ok(Message::Close(_))) | Some(Err(_)) | None => {
                    // Leave the session running, as a detach does.
                    let _ = writer.send_request(&DaemonRequest::Detach).await;
                    break;
                }
            },
            _ = revocation.tick() => {
                if app.gate.revoked() {
                    let _ = to_browser
                        .send(Message::Close(Some(CloseFrame {
                            code: POLICY_VIOLATION,
                            reason: "revoked".into(),
                        })))
                        .await;
                    let _ = writer.send_request(&DaemonRequest::Detach).await;
                    break;
                }
            }
        }
    }
}
