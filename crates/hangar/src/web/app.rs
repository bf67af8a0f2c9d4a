//! What every route of `hangar web` shares: the server's state and its
//! JSON error replies (the routes, `api`, and the attach WebSocket,
//! `attach_ws`, both use them without importing each other).

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use hangar_protocol::message::codes;
use hangar_protocol::paths::Paths;
use serde_json::json;

use super::auth::Gate;
use crate::conn::tokio_link::LinkError;

pub struct App {
    pub paths: Paths,
    pub gate: Gate,
    /// Served over TLS: the cookie is `Secure`.
    pub secure: bool,
}

/// A JSON error reply, `{"error": {"code", "message"}}`.
pub fn error(status: StatusCode, code: &str, message: impl Into<String>) -> Response {
    let body = json!({"error": {"code": code, "message": message.into()}});
    (status, Json(body)).into_response()
}

/// The daemon's error code as an HTTP status.
pub fn status_of(e: &LinkError) -> StatusCode {
    match e {
        LinkError::Lost(_) => StatusCode::BAD_GATEWAY,
        LinkError::Daemon(b) => match b.code.as_str() {
            codes::NOT_FOUND => StatusCode::NOT_FOUND,
            codes::BAD_REQUEST | codes::INVALID | codes::TOO_LARGE => StatusCode::BAD_REQUEST,
            codes::AMBIGUOUS
            | codes::NEEDS_CONFIRMATION
            | codes::FAILED
            | codes::DUPLICATE
            | codes::CASCADE_REFUSED => StatusCode::CONFLICT,
            codes::SHUTTING_DOWN => StatusCode::SERVICE_UNAVAILABLE,
            _ => StatusCode::INTERNAL_SERVER_ERROR,
        },
    }
}

pub fn link_error(e: LinkError) -> Response {
    let code = match &e {
        LinkError::Daemon(b) => b.code.clone(),
        LinkError::Lost(_) => "daemon_unreachable".to_owned(),
    };
    error(status_of(&e), &code, e.to_string())
}
