//! Why a spawn failed (a leaf: the proxy's grants and the launch both make
//! one).

use crate::journal::FailureKind;

/// Why a spawn failed: a category for the journal and the breaker, and a
/// message for the person.
#[derive(Clone, Debug, PartialEq)]
pub struct SpawnFailure {
    pub kind: FailureKind,
    pub message: String,
    pub exit_code: Option<i32>,
}

impl SpawnFailure {
    pub fn new(kind: FailureKind, message: impl Into<String>) -> SpawnFailure {
        SpawnFailure {
            kind,
            message: message.into(),
            exit_code: None,
        }
    }
}
