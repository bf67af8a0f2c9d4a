//! Every host's agents on the web page (issue 47): the list of this
//! machine's and every `[hosts.NAME]`'s sessions, and a far session's
//! terminal and history, through this process's own ssh link to that host
//! (`conn::ssh`, the link `hangar --host NAME` uses). Nothing listens on the
//! other machine; the page reaches only this server, behind its token.
//!
//! `GET /api/all-hosts/sessions` is `hangar ls --all-hosts --json`: each
//! host asked at once within its bound (`remote::all_hosts`), a host that
//! is down listed under `down` with its reason and never holding up the
//! others. `GET /api/hosts/HOST/sessions/ID/attach` and `.../history` are
//! the local routes' twins; `HOST` `local` is this machine.

use std::sync::Arc;

use axum::extract::ws::WebSocketUpgrade;
use axum::extract::{Extension, Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use hangar_core::hosts::LOCAL;
use hangar_protocol::message as msg;
use hangar_protocol::reply::kind;

use super::app::{App, error, link_error};
use super::attach_ws::{self, SizeQuery};
use super::auth::Access;
use crate::api;
use crate::conn::tokio_link::DaemonLink;
use crate::remote::{self, all_hosts};

/// `hangar ls --all-hosts --json`.
pub async fn sessions(State(app): State<Arc<App>>) -> Response {
    let paths = app.paths.clone();
    let asked = tokio::task::spawn_blocking(move || {
        all_hosts::ask(&paths, |t| {
            // This machine's daemon is not started by a browser (as
            // `DaemonLink::connect`); a far one's bridge starts its own.
            let c = t
                .connect_existing()?
                .ok_or_else(|| anyhow::anyhow!("no hangar daemon is running"))?;
            api::list(&mut all_hosts::bounded(c, t)?)
        })
    })
    .await;
    match asked {
        Ok(Ok(answers)) => {
            let (answered, down) = all_hosts::split(answers);
            axum::Json(all_hosts::ls_document(&answered, &down)).into_response()
        }
        Ok(Err(e)) => error(
            StatusCode::INTERNAL_SERVER_ERROR,
            "config",
            format!("{e:#}"),
        ),
        Err(e) => error(StatusCode::INTERNAL_SERVER_ERROR, "internal", e.to_string()),
    }
}

/// A link to `host`'s daemon: this machine's socket for `local`, else a
/// channel of the ssh link to it. Errors are the page's replies: 404 for a
/// host config.toml does not name, 502 for one that cannot be reached.
async fn link_to(app: &App, host: &str) -> Result<DaemonLink, Response> {
    if host == LOCAL {
        return DaemonLink::connect(&app.paths).await.map_err(link_error);
    }
    let paths = app.paths.clone();
    let name = host.to_owned();
    let connected = tokio::task::spawn_blocking(move || {
        let host = remote::resolve(&paths, &name).map_err(|e| (StatusCode::NOT_FOUND, e))?;
        crate::conn::ssh::connect(&host).map_err(|e| (StatusCode::BAD_GATEWAY, e))
    })
    .await
    .map_err(|e| error(StatusCode::INTERNAL_SERVER_ERROR, "internal", e.to_string()))?;
    match connected {
        Ok(client) => DaemonLink::over_client(client).map_err(link_error),
        Err((status, e)) => {
            let code = if status == StatusCode::NOT_FOUND {
                "no_such_host"
            } else {
                "host_down"
            };
            Err(error(status, code, format!("{e:#}")))
        }
    }
}

/// `GET /api/hosts/HOST/sessions/ID/attach`: the local route's WebSocket,
/// on `HOST`'s daemon.
pub async fn attach(
    State(app): State<Arc<App>>,
    Extension(access): Extension<Access>,
    Path((host, id)): Path<(String, String)>,
    Query(size): Query<SizeQuery>,
    ws: WebSocketUpgrade,
) -> Response {
    let link = match link_to(&app, &host).await {
        Ok(l) => l,
        Err(r) => return r,
    };
    attach_ws::attach_on(app, link, access, id, size, ws).await
}

#[derive(serde::Deserialize)]
pub struct HistoryQuery {
    before: Option<u64>,
    lines: Option<u32>,
}

/// `GET /api/hosts/HOST/sessions/ID/history`: a page of a far session's
/// history, as the local route reads one.
pub async fn history(
    State(app): State<Arc<App>>,
    Path((host, id)): Path<(String, String)>,
    Query(q): Query<HistoryQuery>,
) -> Response {
    let mut link = match link_to(&app, &host).await {
        Ok(l) => l,
        Err(r) => return r,
    };
    let page = msg::HistoryPage {
        session: id,
        before: q.before,
        lines: q
            .lines
            .unwrap_or(super::MAX_HISTORY_PAGE)
            .min(super::MAX_HISTORY_PAGE),
    };
    match link.ask::<kind::History>(page).await {
        Ok(v) => axum::Json(v).into_response(),
        Err(e) => link_error(e),
    }
}
