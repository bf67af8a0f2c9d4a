//! The routes of `hangar web`: the page, its assets, and `/api/`.
//!
//! Every route sits behind [`guard`]: a credential (Bearer token or a paired
//! browser's cookie) or 401; the Origin of every state-changing request and
//! WebSocket checked against the Host (403); read-only credentials refused
//! anything but looking (403); too many failed logins from one address
//! refused (429). Every response carries a strict Content-Security-Policy.
//!
//! The API's JSON is the CLI's: each read route passes the daemon's reply
//! body through unchanged (`GET /api/sessions` is `hangar ls --json`).

use std::convert::Infallible;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::{ConnectInfo, DefaultBodyLimit, Extension, Json, Path, Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use hangar_protocol::message as msg;
use hangar_protocol::paths::Paths;
use hangar_protocol::reply::{Kind, kind};
use serde::Deserialize;
use serde_json::{Value, json};

use super::app::{App, error, link_error};
use super::assets;
use super::attach_ws;
use super::auth::{self, Access, Presented, Verdict};
use super::far;
use super::keys;
use super::listener::PeerAddr;
use super::review;
use crate::conn::tokio_link::{DaemonLink, LinkError};

/// The page's only sources are this server. Styles may be inline because
/// xterm.js sizes its cells with `<style>` elements it writes as text; no
/// script is inline, none comes from elsewhere, and nothing may frame it.
pub const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; \
img-src 'self' data:; font-src 'self'; connect-src 'self'; manifest-src 'self'; \
base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// Requests larger than this are refused (a prompt is text, not a file).
const MAX_BODY: usize = 256 * 1024;
/// How often the live list asks the daemon for changes.
const EVENTS_EVERY: Duration = Duration::from_millis(500);

pub fn router(app: Arc<App>) -> Router {
    Router::new()
        .route("/", get(index))
        .route("/assets/{name}", get(asset))
        .route("/api/whoami", get(whoami))
        .route("/api/sessions", get(sessions))
        .route("/api/tabs", get(tabs))
        .route("/api/usage", get(usage))
        .route("/api/events", get(events))
        .route("/api/sessions/{id}/screen", get(screen))
        .route("/api/sessions/{id}/send", post(send))
        .route("/api/sessions/{id}/keys", post(type_keys))
        .route("/api/sessions/{id}/interrupt", post(interrupt))
        .route("/api/sessions/{id}/wake", post(wake))
        .route("/api/sessions/{id}/hibernate", post(hibernate))
        .route("/api/sessions/{id}/park", post(park))
        .route("/api/sessions/{id}/unpark", post(unpark))
        .route("/api/sessions/{id}/attach", get(attach_ws::attach))
        .route("/api/sessions/{id}/history", get(history))
        .route("/api/sessions/{id}/diff", get(review::files))
        .route("/api/sessions/{id}/diff/{index}", get(review::file))
        .route("/api/sessions/{id}/review", post(review::review))
        .route("/api/sessions/{id}/fork", post(review::fork))
        .route("/api/all-hosts/sessions", get(far::sessions))
        .route("/api/hosts/{host}/sessions/{id}/attach", get(far::attach))
        .route("/api/hosts/{host}/sessions/{id}/history", get(far::history))
        .fallback(not_found)
        .layer(DefaultBodyLimit::max(MAX_BODY))
        .layer(middleware::from_fn_with_state(app.clone(), guard))
        .with_state(app)
}

fn with_security_headers(mut resp: Response) -> Response {
    let h = resp.headers_mut();
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    // The pairing URL carries the token: never send it on as a referrer.
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.entry(header::CACHE_CONTROL)
        .or_insert(HeaderValue::from_static("no-store"));
    resp
}

fn presented(headers: &HeaderMap) -> Presented<'_> {
    if let Some(token) = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
    {
        return Presented::Bearer(token.trim());
    }
    for cookies in headers.get_all(header::COOKIE) {
        if let Some(c) = cookies
            .to_str()
            .ok()
            .and_then(|c| auth::cookie_value(c, auth::COOKIE))
        {
            return Presented::Cookie(c);
        }
    }
    Presented::Nothing
}

/// The Origin a browser sends for this server, as the Host header names it.
fn origin_allowed(headers: &HeaderMap, secure: bool) -> Option<bool> {
    let origin = headers.get(header::ORIGIN)?.to_str().ok();
    let host = headers.get(header::HOST).and_then(|h| h.to_str().ok());
    let scheme = if secure { "https" } else { "http" };
    Some(match (origin, host) {
        (Some(o), Some(h)) => o == format!("{scheme}://{h}"),
        _ => false,
    })
}

fn is_websocket(headers: &HeaderMap) -> bool {
    headers
        .get(header::UPGRADE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.eq_ignore_ascii_case("websocket"))
}

fn refusal(verdict: Verdict, wants_page: bool) -> Response {
    match verdict {
        Verdict::Limited => {
            let mut r = error(
                StatusCode::TOO_MANY_REQUESTS,
                "rate_limited",
                "too many failed logins from this address; wait a minute",
            );
            r.headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from_static("60"));
            r
        }
        Verdict::Revoked if wants_page => unpaired_page(
            "This browser's pairing was revoked (hangar web --revoke). Run hangar web again \
             and open the URL it prints.",
        ),
        Verdict::Revoked => error(
            StatusCode::UNAUTHORIZED,
            "revoked",
            "every pairing of this server was revoked; run `hangar web` again for a new URL",
        ),
        _ if wants_page => unpaired_page(
            "Not paired. Open the URL that `hangar web` printed (it carries the pairing token \
             of that run), or scan its QR code.",
        ),
        _ => error(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "send the token hangar web printed as `Authorization: Bearer TOKEN`",
        ),
    }
}

fn unpaired_page(why: &str) -> Response {
    let body = assets::UNPAIRED_HTML.replace("{why}", why);
    (
        StatusCode::UNAUTHORIZED,
        [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
        body,
    )
        .into_response()
}

fn query_token(query: Option<&str>) -> Option<&str> {
    query?.split('&').find_map(|kv| kv.strip_prefix("token="))
}

/// Authentication, Origin and read-only checks for every request.
async fn guard(
    State(app): State<Arc<App>>,
    ConnectInfo(PeerAddr(peer)): ConnectInfo<PeerAddr>,
    mut req: Request,
    next: Next,
) -> Response {
    let now = Instant::now();
    let headers = req.headers();
    let wants_page = req.method() == Method::GET && req.uri().path() == "/";
    // Pairing: the printed URL's token becomes this browser's own cookie,
    // and the token leaves the address bar (and so the history) at once.
    if wants_page && let Some(token) = query_token(req.uri().query()) {
        return with_security_headers(match app.gate.pair(peer.ip(), token, now) {
            Ok(secret) => {
                let secure = if app.secure { "; Secure" } else { "" };
                let cookie = format!(
                    "{}={}; Path=/; HttpOnly; SameSite=Strict{secure}",
                    auth::COOKIE,
                    secret.expose()
                );
                let mut r = (StatusCode::SEE_OTHER, [(header::LOCATION, "/")]).into_response();
                if let Ok(v) = HeaderValue::from_str(&cookie) {
                    r.headers_mut().insert(header::SET_COOKIE, v);
                }
                r
            }
            Err(v) => refusal(v, true),
        });
    }
    let verdict = app.gate.check(peer.ip(), presented(headers), now);
    let Verdict::Allowed { access, by_cookie } = verdict else {
        return with_security_headers(refusal(verdict, wants_page));
    };
    let changes = !matches!(*req.method(), Method::GET | Method::HEAD);
    let websocket = is_websocket(headers);
    if changes || websocket {
        // A cookie rides along on forged cross-site requests; a Bearer
        // header never does, so scripts may leave the Origin out.
        let ok = origin_allowed(headers, app.secure).unwrap_or(!by_cookie);
        if !ok {
            return with_security_headers(error(
                StatusCode::FORBIDDEN,
                "bad_origin",
                "this request did not come from the hangar web page",
            ));
        }
    }
    if changes && access == Access::ReadOnly {
        return with_security_headers(error(
            StatusCode::FORBIDDEN,
            "read_only",
            "this is a read-only view: it can look but not type or act",
        ));
    }
    req.extensions_mut().insert(access);
    with_security_headers(next.run(req).await)
}

async fn not_found() -> Response {
    error(StatusCode::NOT_FOUND, "not_found", "no such page")
}

async fn index() -> Response {
    assets::page()
}

async fn asset(Path(name): Path<String>) -> Response {
    assets::asset(&name)
        .unwrap_or_else(|| error(StatusCode::NOT_FOUND, "not_found", "no such asset"))
}

/// Request kind `K` of the daemon; its reply is the API's answer, as the
/// JSON the daemon sent (keys sorted, through a JSON value).
async fn ask<K: Kind>(app: &App, body: K::Body) -> Response {
    match DaemonLink::once::<K>(&app.paths, body).await {
        Ok(v) => Json(serde_json::to_value(v).unwrap_or(Value::Null)).into_response(),
        Err(e) => link_error(e),
    }
}

async fn whoami(Extension(access): Extension<Access>) -> Response {
    Json(json!({
        "read_only": access == Access::ReadOnly,
        "version": env!("CARGO_PKG_VERSION"),
    }))
    .into_response()
}

async fn sessions(State(app): State<Arc<App>>) -> Response {
    ask::<kind::List>(&app, ()).await
}

/// `hangar usage --json` for the last 24 hours (the page's usage view).
async fn usage(State(app): State<Arc<App>>) -> Response {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0);
    ask::<kind::Usage>(
        &app,
        msg::UsageQuery {
            since_ms: now.saturating_sub(24 * 3_600_000),
            session: None,
        },
    )
    .await
}

async fn tabs(State(app): State<Arc<App>>) -> Response {
    ask::<kind::TabList>(&app, ()).await
}

async fn screen(State(app): State<Arc<App>>, Path(id): Path<String>) -> Response {
    ask::<kind::Screen>(
        &app,
        msg::Screen {
            session: id,
            scrollback: None,
        },
    )
    .await
}

#[derive(Deserialize)]
struct HistoryQuery {
    before: Option<u64>,
    lines: Option<u32>,
}

/// `GET /api/sessions/ID/history?before=N&lines=M`: a page of the session's
/// history by line number (the daemon's `history` request, as the TUI's
/// panes read it): the terminal's scrollback reads it a page at a time.
async fn history(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
    axum::extract::Query(q): axum::extract::Query<HistoryQuery>,
) -> Response {
    ask::<kind::History>(
        &app,
        msg::HistoryPage {
            session: id,
            before: q.before,
            lines: q
                .lines
                .unwrap_or(super::MAX_HISTORY_PAGE)
                .min(super::MAX_HISTORY_PAGE),
        },
    )
    .await
}

#[derive(Deserialize)]
struct SendBody {
    text: String,
}

async fn send(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
    Json(body): Json<SendBody>,
) -> Response {
    ask::<kind::Send>(
        &app,
        msg::Send {
            session: id,
            text: body.text,
            enter: true,
        },
    )
    .await
}

#[derive(Deserialize)]
struct KeysBody {
    keys: Vec<String>,
}

async fn type_keys(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
    Json(body): Json<KeysBody>,
) -> Response {
    match keys::bytes_of_all(body.keys.iter().map(String::as_str)) {
        Ok(bytes) if !bytes.is_empty() => press(&app, id, bytes).await,
        Ok(_) => error(StatusCode::BAD_REQUEST, "invalid", "no keys given"),
        Err(name) => error(
            StatusCode::BAD_REQUEST,
            "invalid",
            format!(
                "unknown key {name:?}: use one character, or enter, esc, tab, backspace, \
                 ctrl-c, ctrl-d, up, down, left, right, space"
            ),
        ),
    }
}

async fn interrupt(State(app): State<Arc<App>>, Path(id): Path<String>) -> Response {
    press(&app, id, b"\x03".to_vec()).await
}

/// Type raw key bytes: attach without a size (the PTY keeps its own), send,
/// detach. A pasted `send` cannot carry keys (see `keys`).
async fn press(app: &App, session: String, bytes: Vec<u8>) -> Response {
    let result = async {
        let mut link = DaemonLink::connect(&app.paths).await?;
        let reply = link
            .ask::<kind::Attach>(msg::Attach {
                session,
                cols: 0,
                rows: 0,
                history: None,
                history_events: false,
                terminal: false,
            })
            .await?;
        link.writer.send_data(&bytes).await?;
        link.ask::<kind::Detach>(()).await?;
        Ok::<Value, LinkError>(json!({"id": reply.id, "sent": bytes.len()}))
    }
    .await;
    match result {
        Ok(v) => Json(v).into_response(),
        Err(e) => link_error(e),
    }
}

async fn wake(State(app): State<Arc<App>>, Path(id): Path<String>) -> Response {
    ask::<kind::Wake>(&app, msg::SessionRef { session: id }).await
}

async fn hibernate(State(app): State<Arc<App>>, Path(id): Path<String>) -> Response {
    ask::<kind::Hibernate>(
        &app,
        msg::HibernateSession {
            session: id,
            force: false,
        },
    )
    .await
}

async fn park(State(app): State<Arc<App>>, Path(id): Path<String>) -> Response {
    ask::<kind::Park>(&app, msg::SessionRef { session: id }).await
}

async fn unpark(State(app): State<Arc<App>>, Path(id): Path<String>) -> Response {
    ask::<kind::Unpark>(
        &app,
        msg::Unpark {
            session: id,
            ..Default::default()
        },
    )
    .await
}

/// The session list, tabs and the live agents' memory against the budget
/// as one snapshot, for the live stream.
async fn snapshot(paths: &Paths) -> Result<Value, LinkError> {
    let mut link = DaemonLink::connect(paths).await?;
    let sessions = link.ask::<kind::List>(()).await?;
    let tabs = link.ask::<kind::TabList>(()).await?;
    // Whole MiB: a reading that moved by a few pages is not news worth
    // sending the whole list again.
    let budget = link.ask::<kind::Status>(()).await.ok().map(|s| {
        let mut b = s.budget;
        b.memory_bytes -= b.memory_bytes % (1024 * 1024);
        b.resident_bytes -= b.resident_bytes % (1024 * 1024);
        b
    });
    Ok(json!({"sessions": sessions, "tabs": tabs, "budget": budget}))
}

/// Server-sent events: a `sessions` event whenever the list changes (state,
/// activity, titles, placement), checked every [`EVENTS_EVERY`]. Ends when
/// this server's pairings are revoked.
async fn events(
    State(app): State<Arc<App>>,
) -> Sse<impl futures::Stream<Item = Result<Event, Infallible>>> {
    let stream = futures::stream::unfold(
        (app, None::<String>, true),
        |(app, mut last, first)| async move {
            if !first {
                tokio::time::sleep(EVENTS_EVERY).await;
            }
            loop {
                if app.gate.revoked() {
                    return None;
                }
                let event = match snapshot(&app.paths).await {
                    Ok(v) => {
                        let text = v.to_string();
                        if last.as_deref() == Some(text.as_str()) {
                            None
                        } else {
                            last = Some(text.clone());
                            Some(Event::default().event("sessions").data(text))
                        }
                    }
                    Err(e) => Some(
                        Event::default()
                            .event("problem")
                            .data(json!({"message": e.to_string()}).to_string()),
                    ),
                };
                if let Some(ev) = event {
                    return Some((Ok(ev), (app, last, false)));
                }
                tokio::time::sleep(EVENTS_EVERY).await;
            }
        },
    );
    Sse::new(stream).keep_alive(KeepAlive::default())
}
