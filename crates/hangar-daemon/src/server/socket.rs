//! A client on the control socket (or a sandboxed session's own socket):
//! who it is, its outgoing queue, its requests (`connection.rs`) and what
//! they may leave behind: a link handed over (`link.rs`), the daemon's
//! shutdown.

use std::sync::Arc;

use hangar_core::SessionId;
use hangar_protocol::frame;
use hangar_protocol::message::{Reply, codes};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::UnixStream;

use super::attach_size::ClientSizes;
use super::conn::Conn;
use super::connection::{Ended, HANDSHAKE_TIMEOUT, close, serve};
use crate::Daemon;

fn peer_is_us(stream: &UnixStream) -> bool {
    let me = nix::unistd::geteuid().as_raw();
    stream.peer_cred().is_ok_and(|c| c.uid() == me)
}

/// Serve one client on the control socket. `scope` is the sandboxed session
/// whose own socket the client came in on (`sandbox::callback`): then only
/// that session's hooks and MCP calls are served.
pub(super) async fn handle(
    daemon: Arc<Daemon>,
    sizes: Arc<ClientSizes>,
    stream: UnixStream,
    scope: Option<SessionId>,
) {
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
        // Closing with the client's hello unread would reset the
        // connection, and the client could see that instead of the
        // refusal: read what it sends until it closes (briefly).
        let _ = stream.shutdown().await;
        let mut sink = [0u8; 4096];
        let _ = tokio::time::timeout(HANDSHAKE_TIMEOUT, async {
            while matches!(stream.read(&mut sink).await, Ok(n) if n > 0) {}
        })
        .await;
        return;
    }
    let (reader, mut writer) = stream.into_split();
    let (conn, mut out_rx) = Conn::new();
    let writer_task = tokio::spawn(async move {
        while let Some(bytes) = out_rx.recv().await {
            if writer.write_all(&bytes).await.is_err() {
                break;
            }
        }
    });
    // Only a bridge on the control socket itself may hand over a link.
    let may_take_link = scope.is_none();
    let ended = serve(
        daemon.clone(),
        sizes.clone(),
        reader,
        &conn,
        scope,
        may_take_link,
    )
    .await;
    let stop_daemon = matches!(ended, Ended::Shutdown);
    if let Ended::TakeLink(reader) = ended {
        super::link::take_link(daemon.clone(), sizes, reader).await;
    }
    close(&daemon, conn, writer_task, stop_daemon).await;
}
