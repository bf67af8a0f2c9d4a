//! The error a request's caller gets: a protocol error code, a message
//! that says what happened, to what, and what to do next, and optional
//! structured detail (the cascade a close would take, ...).

use hangar_protocol::message::codes;

/// An error a request's caller can act on.
#[derive(Clone, Debug, PartialEq)]
pub struct ApiError {
    pub code: &'static str,
    pub message: String,
    pub detail: serde_json::Value,
}

impl ApiError {
    pub fn new(code: &'static str, message: impl Into<String>) -> ApiError {
        ApiError {
            code,
            message: message.into(),
            detail: serde_json::Value::Null,
        }
    }
    pub fn invalid(message: impl Into<String>) -> ApiError {
        ApiError::new(codes::INVALID, message)
    }
    pub fn not_found(message: impl Into<String>) -> ApiError {
        ApiError::new(codes::NOT_FOUND, message)
    }
    pub fn internal(message: impl Into<String>) -> ApiError {
        ApiError::new(codes::INTERNAL, message)
    }
}

impl From<hangar_core::PlacementError> for ApiError {
    fn from(e: hangar_core::PlacementError) -> Self {
        ApiError::invalid(e.to_string())
    }
}

impl From<hangar_core::lookup::LookupError> for ApiError {
    fn from(e: hangar_core::lookup::LookupError) -> Self {
        let code = if e.is_not_found() {
            codes::NOT_FOUND
        } else if e.is_ambiguous() {
            codes::AMBIGUOUS
        } else {
            codes::INVALID
        };
        ApiError::new(code, e.to_string())
    }
}

/// The error a request gets when its change could not be saved: what
/// happened, that nothing changed, and what to do about it.
pub(crate) fn save_refusal(e: &hangar_store::StoreError) -> ApiError {
    let hint = if e.is_disk_full() {
        "; the disk is full: free some space, then try again"
    } else if e.is_read_only() {
        "; the folder is read-only: make it writable again, then try again"
    } else {
        ""
    };
    ApiError::internal(format!(
        "could not save the workspace, so nothing was changed: {e}{hint}"
    ))
}

impl From<hangar_store::StoreError> for ApiError {
    fn from(e: hangar_store::StoreError) -> Self {
        ApiError::internal(format!("could not save the workspace: {e}"))
    }
}
