//! Keeping the persisted model closed under restore (rule 2 of DESIGN.md).
//!
//! `prune` drops metadata that no owner references, owner records that point
//! at missing metadata, parked records whose project tab is gone (ghosts),
//! stale pointers (pins, focus, dispatch selection and lanes, active tab) and
//! relationship links to sessions that no longer exist. It never invents
//! anything and is idempotent.

use crate::model::{SessionId, TabId, Workspace};

/// What `prune` removed, for reporting to the user.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PruneReport {
    /// Sessions whose metadata was dropped, sorted.
    pub dropped_sessions: Vec<SessionId>,
    /// Parked records dropped because their project tab is gone, or because
    /// their session has no metadata.
    pub dropped_parked: Vec<SessionId>,
    /// Buried records dropped because their session has no metadata.
    pub dropped_buried: Vec<SessionId>,
    /// Pane leaves removed because their session has no metadata.
    pub dropped_leaves: Vec<(TabId, SessionId)>,
    /// Pins, focus, selection, lane entries and links that were cleared.
    pub cleared_pointers: usize,
}

impl PruneReport {
    pub fn is_empty(&self) -> bool {
        self.dropped_sessions.is_empty()
            && self.dropped_parked.is_empty()
            && self.dropped_buried.is_empty()
            && self.dropped_leaves.is_empty()
            && self.cleared_pointers == 0
    }
}

/// Repair a workspace so it is closed under restore.
pub fn prune(ws: Workspace) -> (Workspace, PruneReport) {
    todo!()
}
