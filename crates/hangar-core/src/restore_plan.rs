//! Which sessions a restore spawns and which it leaves hibernated.
//!
//! Restore cost is O(visible), not O(persisted): the plan spawns the live set
//! (pane leaves) only, active tab first, then the other tabs in order, each
//! tab's leaves in reading order. Everything else owned is hibernated with its
//! metadata and relationships intact.

use std::collections::BTreeSet;

use crate::model::{SessionId, Workspace};
use crate::prune::PruneReport;

#[derive(Clone, Debug, PartialEq)]
pub struct RestorePlan {
    /// The pruned workspace the plan was made from; this is what the daemon
    /// keeps and persists.
    pub workspace: Workspace,
    /// What pruning removed while planning.
    pub pruned: PruneReport,
    /// Sessions to spawn, in order.
    pub spawn: Vec<SessionId>,
    /// Owned sessions that stay without a process.
    pub hibernate: BTreeSet<SessionId>,
}

impl RestorePlan {
    pub fn new(ws: Workspace) -> RestorePlan {
        todo!()
    }

    /// The live set size: what `status` reports as `restore.expected`.
    pub fn expected(&self) -> usize {
        self.spawn.len()
    }

    pub fn hibernated(&self) -> usize {
        self.hibernate.len()
    }
}
