//! `hangar search` and the TUI's search dialog, the client side: one
//! `search` request, and a clear word when the daemon running is older
//! than this hangar and does not know the request.

use anyhow::anyhow;
use hangar_protocol::message::{self as msg, codes};
use hangar_protocol::view::SearchView;

use crate::api;
use crate::conn::{Client, DaemonError};

/// What a person is told when the daemon answers `unknown_kind`: an older
/// daemon still running after hangar was upgraded.
pub fn older_daemon() -> String {
    format!(
        "the running daemon is older than this hangar ({}) and cannot search; restart it with \
         `hangar shutdown` (sessions are kept) and search again",
        env!("CARGO_PKG_VERSION")
    )
}

/// Ask the daemon; an older daemon's `unknown_kind` becomes what to do.
pub fn request(c: &mut Client, req: msg::Search) -> anyhow::Result<SearchView> {
    api::search(c, req).map_err(explain)
}

fn explain(e: anyhow::Error) -> anyhow::Error {
    match e.downcast_ref::<DaemonError>() {
        Some(d) if d.0.code == codes::UNKNOWN_KIND => anyhow!(older_daemon()),
        _ => e,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hangar_protocol::message::ErrorBody;

    fn daemon_error(code: &str) -> anyhow::Error {
        anyhow!(DaemonError(ErrorBody {
            code: code.into(),
            message: "unknown request kind \"search\"; this daemon is version 0.0.9".into(),
            detail: serde_json::Value::Null,
        }))
    }

    #[test]
    fn an_older_daemon_that_does_not_know_search_is_named_with_what_to_do() {
        let e = explain(daemon_error(codes::UNKNOWN_KIND)).to_string();
        assert!(e.contains("older than this hangar"), "{e}");
        assert!(e.contains("hangar shutdown"), "{e}");
        let other = explain(daemon_error(codes::INVALID));
        assert!(
            other.downcast_ref::<DaemonError>().is_some(),
            "kept as it was"
        );
    }
}
