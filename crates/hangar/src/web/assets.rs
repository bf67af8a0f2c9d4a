//! The page and its files, compiled into the binary: no CDN, no network, and
//! nothing on disk for anyone to swap. xterm.js is vendored (see
//! `static/vendor/README.md` for its version and origin).

use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};

const INDEX_HTML: &str = include_str!("static/index.html");
const APP_JS: &[u8] = include_bytes!("static/app.js");
const SCROLLBACK_JS: &[u8] = include_bytes!("static/scrollback.js");
const APP_CSS: &[u8] = include_bytes!("static/app.css");
const XTERM_JS: &[u8] = include_bytes!("static/vendor/xterm.js");
const XTERM_CSS: &[u8] = include_bytes!("static/vendor/xterm.css");
const FIT_JS: &[u8] = include_bytes!("static/vendor/addon-fit.js");
const XTERM_LICENSE: &[u8] = include_bytes!("static/vendor/LICENSE.xterm");
const FIT_LICENSE: &[u8] = include_bytes!("static/vendor/LICENSE.addon-fit");

/// Shown with a 401 to a browser that is not paired; `{why}` is replaced by
/// a fixed sentence of ours, never by request text.
pub const UNPAIRED_HTML: &str = include_str!("static/unpaired.html");

pub fn page() -> Response {
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
        INDEX_HTML,
    )
        .into_response()
}

/// One of the page's files by name, or `None`.
pub fn asset(name: &str) -> Option<Response> {
    let (body, kind): (&'static [u8], &str) = match name {
        "app.js" => (APP_JS, "text/javascript; charset=utf-8"),
        "scrollback.js" => (SCROLLBACK_JS, "text/javascript; charset=utf-8"),
        "app.css" => (APP_CSS, "text/css; charset=utf-8"),
        "xterm.js" => (XTERM_JS, "text/javascript; charset=utf-8"),
        "xterm.css" => (XTERM_CSS, "text/css; charset=utf-8"),
        "addon-fit.js" => (FIT_JS, "text/javascript; charset=utf-8"),
        "LICENSE.xterm" => (XTERM_LICENSE, "text/plain; charset=utf-8"),
        "LICENSE.addon-fit" => (FIT_LICENSE, "text/plain; charset=utf-8"),
        _ => return None,
    };
    Some((StatusCode::OK, [(header::CONTENT_TYPE, kind)], body).into_response())
}
