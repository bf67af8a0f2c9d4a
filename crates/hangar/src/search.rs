//! `hangar search` and the TUI's search dialog, the client side: one
//! `search` request, and a clear word when the daemon running is older
//! than this hangar and does not know the request.

use anyhow::anyhow;
use hangar_protocol::message::{self as msg, Request, codes};

use crate::client::{Client, DaemonError};

/// Ask the daemon; an older daemon's `unknown_kind` becomes what to do.
pub fn request(c: &mut Client, req: msg::Search) -> anyhow::Result<serde_json::Value> {
    c.request(Request::Search(req))
        .map_err(|e| match e.downcast_ref::<DaemonError>() {
            Some(d) if d.0.code == codes::UNKNOWN_KIND => anyhow!(
                "the running daemon is older than this hangar ({}) and cannot search; \
                 restart it with `hangar shutdown` (sessions are kept) and search again",
                env!("CARGO_PKG_VERSION")
            ),
            _ => e,
        })
}
