//! The control socket: accepting clients and handing each connection its
//! own task.
//!
//! A bad client never takes the daemon down: malformed frames, unknown kinds
//! and oversized requests get an error reply; a client that vanishes
//! mid-request is simply dropped. Each connection has a bounded outgoing
//! queue, and attached output goes through a broadcast channel that never
//! blocks the session: a client that falls behind is resynced from the screen.
//!
//! `socket.rs` takes a client of the control socket, `connection.rs` speaks
//! the protocol of one client, `attach.rs` streams an
//! attached session, `attach_size.rs` keeps the size of a PTY several clients
//! view at once, `link.rs` serves a far hangar's channels on the link a
//! bridge hands over. What a request does is in `dispatch` and the handlers.

pub mod attach;
pub mod attach_size;
mod conn;
mod connection;
mod descriptors;
mod link;
mod settings;
mod socket;
mod terminal;

use std::sync::Arc;

use tokio::net::UnixListener;

use crate::Daemon;
use attach_size::ClientSizes;

pub use connection::HANDSHAKE_TIMEOUT;
pub use settings::AttachConfig;

pub async fn serve(daemon: Arc<Daemon>, listener: UnixListener) {
    let mut shutdown = daemon.shutdown_watch();
    // Every attached client's terminal size, per session: the PTY takes the
    // smallest (tmux's rule).
    let sizes = Arc::new(ClientSizes::default());
    // Sandboxed sessions' own sockets (`sandbox::callback`), confined to
    // their session.
    let mut callbacks = daemon.sandbox.callbacks.take_receiver();
    loop {
        tokio::select! {
            Some((session, stream)) = async {
                match callbacks.as_mut() {
                    Some(rx) => rx.recv().await,
                    None => std::future::pending().await,
                }
            } => {
                let daemon = daemon.clone();
                let sizes = sizes.clone();
                tokio::spawn(async move {
                    socket::handle(daemon, sizes, stream, Some(session)).await
                });
            }
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    let daemon = daemon.clone();
                    let sizes = sizes.clone();
                    tokio::spawn(async move { socket::handle(daemon, sizes, stream, None).await });
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
