//! Owned versus live: the two sets rule 1 of DESIGN.md is about.
//!
//! *Owned* = every pane leaf, every parked record whose project tab exists,
//! every buried record. *Live at restore* = pane leaves only. Nothing else (a
//! pin, a dispatch selection, a lane, a relationship) ever owns a session.

use std::collections::BTreeSet;

use crate::model::{SessionId, Workspace};

/// Every session some owner record holds.
pub fn owned_set(ws: &Workspace) -> BTreeSet<SessionId> {
    todo!()
}

/// The sessions a restore spawns: pane leaves only.
pub fn live_set(ws: &Workspace) -> BTreeSet<SessionId> {
    todo!()
}

/// Sessions with metadata that no owner holds.
pub fn unowned_sessions(ws: &Workspace) -> BTreeSet<SessionId> {
    todo!()
}
