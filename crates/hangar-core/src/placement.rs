//! Moving sessions between placements (pane, parked, buried), adding and
//! closing them, and tabs.
//!
//! Every operation leaves the model closed (rule 2 of DESIGN.md): after any
//! successful call, `prune` would find nothing to do. A failed call leaves the
//! workspace unchanged.

use thiserror::Error;

use crate::model::{SessionId, SessionMeta, Tab, TabId, Workspace};
use crate::tile::Direction;

#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum PlacementError {
    #[error("no session {0}")]
    UnknownSession(SessionId),
    #[error("no tab {0}")]
    UnknownTab(TabId),
    #[error("a session {0} already exists")]
    DuplicateSession(SessionId),
    #[error("a tab {0} already exists")]
    DuplicateTab(TabId),
    #[error("session {0} is not in a pane")]
    NotInPane(SessionId),
    #[error("session {0} is not parked")]
    NotParked(SessionId),
    #[error("session {0} is not buried")]
    NotBuried(SessionId),
    #[error("session {target} to split is not a pane of tab {tab}")]
    SplitTargetNotInTab { target: SessionId, tab: TabId },
}

/// Where a new or returning session goes in a tab's grid.
#[derive(Clone, Debug, PartialEq)]
pub enum PanePosition {
    /// Split this leaf (which must be in the tab), the new pane on side `b`.
    Split {
        target: SessionId,
        direction: Direction,
    },
    /// Split the tab's focused leaf vertically, or become the root of an
    /// empty tab.
    Auto,
}

impl Workspace {
    /// Add a tab at the end. The first tab becomes active.
    pub fn add_tab(&mut self, tab: Tab) -> Result<(), PlacementError> {
        todo!()
    }

    /// Add a new session shown as a pane of `tab`; it becomes the focus.
    pub fn add_pane_session(
        &mut self,
        meta: SessionMeta,
        tab: &TabId,
        position: PanePosition,
    ) -> Result<(), PlacementError> {
        todo!()
    }

    /// Add a new session straight into `tab`'s parked pool.
    pub fn add_parked_session(
        &mut self,
        meta: SessionMeta,
        tab: &TabId,
        now_ms: u64,
    ) -> Result<(), PlacementError> {
        todo!()
    }

    /// Pane -> parked in the pane's own tab. Focus moves to a remaining leaf.
    pub fn park(&mut self, id: &SessionId, now_ms: u64) -> Result<TabId, PlacementError> {
        todo!()
    }

    /// Parked -> pane in `tab` (default: the record's own tab).
    pub fn unpark(
        &mut self,
        id: &SessionId,
        tab: Option<&TabId>,
        position: PanePosition,
    ) -> Result<TabId, PlacementError> {
        todo!()
    }

    /// Pane -> buried, remembering source tab, sibling, side, direction and
    /// ratio.
    pub fn bury(&mut self, id: &SessionId, now_ms: u64) -> Result<TabId, PlacementError> {
        todo!()
    }

    /// Buried -> pane: beside its sibling on its old side when the sibling is
    /// still a pane of the source tab, else in the source tab (Auto), else in
    /// the active tab, else in a new tab created with `fallback_tab`.
    pub fn unbury(
        &mut self,
        id: &SessionId,
        fallback_tab: impl FnOnce() -> Tab,
    ) -> Result<TabId, PlacementError> {
        todo!()
    }

    /// The sessions closing `id` would close: `id` itself first, then its
    /// linked children and orchestration children, transitively, each once.
    pub fn close_cascade(&self, id: &SessionId) -> Vec<SessionId> {
        todo!()
    }

    /// Remove sessions entirely: their panes (splits collapse), parked and
    /// buried records, pins, pointers and metadata; links from other sessions
    /// to them are cleared. Unknown ids are ignored.
    pub fn remove_sessions(&mut self, ids: &[SessionId]) {
        todo!()
    }

    /// The sessions closing a tab would close: its panes, then its parked
    /// records (and their cascades), each once.
    pub fn tab_close_cascade(&self, tab: &TabId) -> Result<Vec<SessionId>, PlacementError> {
        todo!()
    }

    /// Remove a tab and every session `tab_close_cascade` names. Buried
    /// records whose source tab it was stay owned. The active tab moves to a
    /// neighbour.
    pub fn remove_tab(&mut self, tab: &TabId) -> Result<Vec<SessionId>, PlacementError> {
        todo!()
    }

    /// Append to the pins (no duplicates).
    pub fn pin(&mut self, id: &SessionId) -> Result<(), PlacementError> {
        todo!()
    }

    pub fn unpin(&mut self, id: &SessionId) -> Result<(), PlacementError> {
        todo!()
    }
}
