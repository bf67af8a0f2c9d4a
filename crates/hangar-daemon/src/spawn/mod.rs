//! Bringing sessions to life and ending their processes.
//!
//! `wake.rs` is the single-flight wake (DESIGN.md rule 6), `launch.rs` starts
//! one process, `stop.rs` ends one and watches exits, `restore.rs` spawns the
//! visible panes at start (`start_slot.rs` is what its concurrency bound
//! counts), `queue.rs` is the wake queue that paces spawns and holds them
//! behind the authentication breaker.

mod launch;
pub mod queue;
pub mod restore;
pub mod start_slot;
mod stop;
mod wake;

use hangar_core::SessionId;

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

/// The first 8 characters of an id, as people see it in `ls`.
pub fn short(id: &SessionId) -> &str {
    let s = id.as_str();
    s.get(..8).unwrap_or(s)
}
