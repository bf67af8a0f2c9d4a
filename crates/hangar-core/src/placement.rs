//! Moving sessions between placements (pane, parked, buried), adding and
//! closing them, and tabs.
//!
//! Every operation leaves the model closed (rule 2 of DESIGN.md): after any
//! successful call, `prune` would find nothing to do. A failed call leaves the
//! workspace unchanged.

use std::collections::{BTreeMap, BTreeSet};

use thiserror::Error;

use crate::model::{BuriedRecord, ParkedRecord, SessionId, SessionMeta, Tab, TabId, Workspace};
use crate::tile::{Direction, FocusMove, LeafRemoval, Side, Tile, TileError};

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
    #[error("session {session} is not a pane of tab {tab}")]
    NotPaneOfTab { session: SessionId, tab: TabId },
    #[error("tab {0} already has panes; add it empty and place sessions into it")]
    TabNotEmpty(TabId),
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

/// Exactly where a pane goes, once a `PanePosition` or a buried record's
/// placement data has been chosen.
enum Spot {
    Position(PanePosition),
    Beside {
        target: SessionId,
        direction: Direction,
        ratio: f32,
        side: Side,
    },
}

impl Workspace {
    /// Add a tab at the end. The first tab becomes active. The tab must have
    /// no panes yet (a pane needs its session's metadata, which only the
    /// session operations add); a focus it carries is dropped.
    pub fn add_tab(&mut self, mut tab: Tab) -> Result<(), PlacementError> {
        if self.tab(&tab.id).is_some() {
            return Err(PlacementError::DuplicateTab(tab.id));
        }
        if tab.root.is_some() {
            return Err(PlacementError::TabNotEmpty(tab.id));
        }
        tab.focus = None;
        if self.tabs.is_empty() {
            self.active_tab = Some(tab.id.clone());
        }
        self.tabs.push(tab);
        Ok(())
    }

    /// Add a new session shown as a pane of `tab`; it becomes the focus.
    /// Links in `meta` to sessions that do not exist are dropped.
    pub fn add_pane_session(
        &mut self,
        mut meta: SessionMeta,
        tab: &TabId,
        position: PanePosition,
    ) -> Result<(), PlacementError> {
        self.check_new(&mut meta)?;
        self.place(&meta.id, tab, Spot::Position(position))?;
        self.sessions.insert(meta.id.clone(), meta);
        Ok(())
    }

    /// Add a new session straight into `tab`'s parked pool. Links in `meta`
    /// to sessions that do not exist are dropped.
    pub fn add_parked_session(
        &mut self,
        mut meta: SessionMeta,
        tab: &TabId,
        now_ms: u64,
    ) -> Result<(), PlacementError> {
        self.check_new(&mut meta)?;
        if self.tab(tab).is_none() {
            return Err(PlacementError::UnknownTab(tab.clone()));
        }
        let record = ParkedRecord {
            session: meta.id.clone(),
            tab: tab.clone(),
            parked_at_ms: now_ms,
        };
        self.parked.insert(meta.id.clone(), record);
        self.sessions.insert(meta.id.clone(), meta);
        Ok(())
    }

    /// Pane -> parked in the pane's own tab. Focus moves to a remaining leaf.
    pub fn park(&mut self, id: &SessionId, now_ms: u64) -> Result<TabId, PlacementError> {
        let (tab, _) = self.take_pane(id).ok_or_else(|| self.not_in_pane(id))?;
        let record = ParkedRecord {
            session: id.clone(),
            tab: tab.clone(),
            parked_at_ms: now_ms,
        };
        self.parked.insert(id.clone(), record);
        Ok(tab)
    }

    /// Parked -> pane in `tab` (default: the record's own tab).
    pub fn unpark(
        &mut self,
        id: &SessionId,
        tab: Option<&TabId>,
        position: PanePosition,
    ) -> Result<TabId, PlacementError> {
        if !self.sessions.contains_key(id) {
            return Err(PlacementError::UnknownSession(id.clone()));
        }
        let record = self
            .parked
            .get(id)
            .ok_or_else(|| PlacementError::NotParked(id.clone()))?;
        let tab = tab.unwrap_or(&record.tab).clone();
        self.place(id, &tab, Spot::Position(position))?;
        self.parked.remove(id);
        Ok(tab)
    }

    /// Pane -> buried, remembering source tab, sibling, side, direction and
    /// ratio.
    pub fn bury(&mut self, id: &SessionId, now_ms: u64) -> Result<TabId, PlacementError> {
        let (tab, removal) = self.take_pane(id).ok_or_else(|| self.not_in_pane(id))?;
        let record = BuriedRecord {
            session: id.clone(),
            source_tab: tab.clone(),
            sibling: removal.sibling,
            side: removal.side,
            direction: removal.direction,
            ratio: removal.ratio,
            buried_at_ms: now_ms,
        };
        self.buried.insert(id.clone(), record);
        Ok(tab)
    }

    /// Buried -> pane: beside its sibling on its old side when the sibling is
    /// still a pane of the source tab, else in the source tab (Auto), else in
    /// the active tab, else in a new tab created with `fallback_tab`.
    ///
    /// The sibling is the first leaf of the subtree the pane was split from,
    /// so a pane buried beside a split comes back beside that split's first
    /// pane rather than beside the whole split.
    pub fn unbury(
        &mut self,
        id: &SessionId,
        fallback_tab: impl FnOnce() -> Tab,
    ) -> Result<TabId, PlacementError> {
        if !self.sessions.contains_key(id) {
            return Err(PlacementError::UnknownSession(id.clone()));
        }
        let record = self
            .buried
            .get(id)
            .ok_or_else(|| PlacementError::NotBuried(id.clone()))?;
        let (tab, spot) = if let Some(source) = self.tab(&record.source_tab) {
            let spot = match &record.sibling {
                Some(sibling) if source.contains_leaf(sibling) => Spot::Beside {
                    target: sibling.clone(),
                    direction: record.direction.unwrap_or(Direction::Vertical),
                    ratio: record.ratio.unwrap_or(0.5),
                    side: record.side.unwrap_or(Side::B),
                },
                _ => Spot::Position(PanePosition::Auto),
            };
            (source.id.clone(), spot)
        } else if let Some(active) = self.active_tab.as_ref().filter(|t| self.tab(t).is_some()) {
            (active.clone(), Spot::Position(PanePosition::Auto))
        } else {
            let tab = fallback_tab();
            let tab_id = tab.id.clone();
            self.add_tab(tab)?;
            (tab_id, Spot::Position(PanePosition::Auto))
        };
        self.place(id, &tab, spot)?;
        self.buried.remove(id);
        Ok(tab)
    }

    /// The sessions closing `id` would close: `id` itself first, then its
    /// linked children and orchestration children, transitively, each once.
    /// Breadth first, each generation sorted by id. Empty for an unknown id.
    pub fn close_cascade(&self, id: &SessionId) -> Vec<SessionId> {
        if !self.sessions.contains_key(id) {
            return Vec::new();
        }
        self.cascade_from(vec![id.clone()])
    }

    /// Remove sessions entirely: their panes (splits collapse), parked and
    /// buried records, pins, pointers and metadata; links from other sessions
    /// to them are cleared. Unknown ids are ignored.
    ///
    /// A buried record whose sibling is removed keeps it: it is placement
    /// data, and `unbury` falls back to Auto when the sibling is not a pane.
    pub fn remove_sessions(&mut self, ids: &[SessionId]) {
        let gone: BTreeSet<&SessionId> = ids.iter().collect();
        for id in &gone {
            while self.take_pane(id).is_some() {}
        }
        self.parked
            .retain(|key, p| !gone.contains(key) && !gone.contains(&p.session));
        self.buried
            .retain(|key, b| !gone.contains(key) && !gone.contains(&b.session));
        self.pins.retain(|p| !gone.contains(p));
        if self
            .dispatch
            .selected
            .as_ref()
            .is_some_and(|s| gone.contains(s))
        {
            self.dispatch.selected = None;
        }
        for lane in &mut self.dispatch.lanes {
            lane.sessions.retain(|s| !gone.contains(s));
        }
        for id in &gone {
            self.sessions.remove(*id);
        }
        for meta in self.sessions.values_mut() {
            meta.relationships.clear_links_where(|t| gone.contains(t));
        }
    }

    /// The sessions closing a tab would close: its panes, then its parked
    /// records (and their cascades), each once.
    pub fn tab_close_cascade(&self, tab: &TabId) -> Result<Vec<SessionId>, PlacementError> {
        let t = self
            .tab(tab)
            .ok_or_else(|| PlacementError::UnknownTab(tab.clone()))?;
        let mut seeds = t.leaves();
        seeds.extend(
            self.parked
                .values()
                .filter(|p| &p.tab == tab)
                .map(|p| p.session.clone()),
        );
        Ok(self.cascade_from(seeds))
    }

    /// Remove a tab and every session `tab_close_cascade` names. Buried
    /// records whose source tab it was stay owned. The active tab moves to a
    /// neighbour.
    pub fn remove_tab(&mut self, tab: &TabId) -> Result<Vec<SessionId>, PlacementError> {
        let closing = self.tab_close_cascade(tab)?;
        self.remove_sessions(&closing);
        if let Some(index) = self.tabs.iter().position(|t| &t.id == tab) {
            self.tabs.remove(index);
            if self.active_tab.as_ref() == Some(tab) {
                let neighbour = self
                    .tabs
                    .get(index)
                    .or_else(|| index.checked_sub(1).and_then(|i| self.tabs.get(i)));
                self.active_tab = neighbour.map(|t| t.id.clone());
            }
        }
        Ok(closing)
    }

    /// Append to the pins (no duplicates).
    pub fn pin(&mut self, id: &SessionId) -> Result<(), PlacementError> {
        if !self.sessions.contains_key(id) {
            return Err(PlacementError::UnknownSession(id.clone()));
        }
        if !self.pins.contains(id) {
            self.pins.push(id.clone());
        }
        Ok(())
    }

    pub fn unpin(&mut self, id: &SessionId) -> Result<(), PlacementError> {
        if !self.sessions.contains_key(id) {
            return Err(PlacementError::UnknownSession(id.clone()));
        }
        self.pins.retain(|p| p != id);
        Ok(())
    }

    /// Make `tab` the active tab.
    pub fn set_active_tab(&mut self, tab: &TabId) -> Result<(), PlacementError> {
        if self.tab(tab).is_none() {
            return Err(PlacementError::UnknownTab(tab.clone()));
        }
        self.active_tab = Some(tab.clone());
        Ok(())
    }

    /// Focus pane `id` of `tab`.
    pub fn set_focus(&mut self, tab: &TabId, id: &SessionId) -> Result<(), PlacementError> {
        let t = self
            .tab_mut(tab)
            .ok_or_else(|| PlacementError::UnknownTab(tab.clone()))?;
        if !t.contains_leaf(id) {
            return Err(PlacementError::NotPaneOfTab {
                session: id.clone(),
                tab: tab.clone(),
            });
        }
        t.focus = Some(id.clone());
        Ok(())
    }

    /// Move `tab`'s focus to the neighbouring pane in `dir` and return it;
    /// `None` (focus unchanged) at the edge or when the tab has no focus.
    pub fn move_focus(&mut self, tab: &TabId, dir: FocusMove) -> Option<SessionId> {
        let t = self.tab_mut(tab)?;
        let next = t.root.as_ref()?.neighbour(t.focus.as_ref()?, dir)?;
        t.focus = Some(next.clone());
        Some(next)
    }

    /// Resize the split directly holding pane `id` (the ratio is clamped).
    pub fn set_ratio(&mut self, id: &SessionId, ratio: f32) -> Result<(), PlacementError> {
        let not_in_pane = self.not_in_pane(id);
        let root = self
            .tabs
            .iter_mut()
            .find(|t| t.contains_leaf(id))
            .and_then(|t| t.root.as_mut())
            .ok_or(not_in_pane)?;
        root.set_ratio(id, ratio).map_err(|_| self.not_in_pane(id))
    }

    fn not_in_pane(&self, id: &SessionId) -> PlacementError {
        if self.sessions.contains_key(id) {
            PlacementError::NotInPane(id.clone())
        } else {
            PlacementError::UnknownSession(id.clone())
        }
    }

    /// Refuse an id that exists; drop links to sessions that do not (a link
    /// to the new session itself, as an orchestration root has, is kept).
    fn check_new(&self, meta: &mut SessionMeta) -> Result<(), PlacementError> {
        if self.sessions.contains_key(&meta.id) {
            return Err(PlacementError::DuplicateSession(meta.id.clone()));
        }
        let own = meta.id.clone();
        meta.relationships
            .clear_links_where(|t| t != &own && !self.sessions.contains_key(t));
        Ok(())
    }

    /// Put `id` into `tab`'s grid and focus it. Changes nothing on error.
    fn place(&mut self, id: &SessionId, tab: &TabId, spot: Spot) -> Result<(), PlacementError> {
        let t = self
            .tab_mut(tab)
            .ok_or_else(|| PlacementError::UnknownTab(tab.clone()))?;
        let (target, direction, ratio, side) = match spot {
            Spot::Beside {
                target,
                direction,
                ratio,
                side,
            } => (target, direction, ratio, side),
            Spot::Position(PanePosition::Split { target, direction }) => {
                (target, direction, 0.5, Side::B)
            }
            Spot::Position(PanePosition::Auto) => match &t.root {
                None => {
                    t.root = Some(Tile::leaf(id.clone()));
                    t.focus = Some(id.clone());
                    return Ok(());
                }
                Some(root) => {
                    let target = t
                        .focus
                        .clone()
                        .filter(|f| root.contains(f))
                        .unwrap_or_else(|| root.first_leaf().clone());
                    (target, Direction::Vertical, 0.5, Side::B)
                }
            },
        };
        let not_in_tab = |target: SessionId| PlacementError::SplitTargetNotInTab {
            target,
            tab: tab.clone(),
        };
        let Some(root) = t.root.as_mut() else {
            return Err(not_in_tab(target));
        };
        root.split(&target, id.clone(), direction, ratio, side)
            .map_err(|e| match e {
                TileError::NoSuchLeaf(target) => not_in_tab(target),
                TileError::DuplicateLeaf(id) => PlacementError::DuplicateSession(id),
            })?;
        t.focus = Some(id.clone());
        Ok(())
    }

    /// Take pane `id` out of the grid of the first tab showing it. If it had
    /// the focus, the focus moves to the pane it shared a split with.
    fn take_pane(&mut self, id: &SessionId) -> Option<(TabId, LeafRemoval)> {
        let tab = self.tabs.iter_mut().find(|t| t.contains_leaf(id))?;
        let mut removal = tab.root.take()?.close_present(id);
        tab.root = removal.remaining.take();
        if tab.focus.as_ref() == Some(id) {
            tab.focus = tab.root.as_ref().map(|root| {
                removal
                    .sibling
                    .clone()
                    .unwrap_or_else(|| root.first_leaf().clone())
            });
        }
        Some((tab.id.clone(), removal))
    }

    /// `seeds` in order (each once), then every session linked or
    /// orchestrated from them, breadth first, each generation sorted by id.
    fn cascade_from(&self, seeds: Vec<SessionId>) -> Vec<SessionId> {
        let mut children: BTreeMap<&SessionId, Vec<&SessionId>> = BTreeMap::new();
        for meta in self.sessions.values() {
            let r = &meta.relationships;
            for parent in [&r.linked_parent, &r.orchestration_parent]
                .into_iter()
                .flatten()
            {
                children.entry(parent).or_default().push(&meta.id);
            }
        }
        let mut seen: BTreeSet<SessionId> = BTreeSet::new();
        let mut order: Vec<SessionId> = seeds
            .into_iter()
            .filter(|s| seen.insert(s.clone()))
            .collect();
        let mut generation_start = 0;
        while generation_start < order.len() {
            let next: BTreeSet<&SessionId> = order[generation_start..]
                .iter()
                .filter_map(|parent| children.get(parent))
                .flatten()
                .copied()
                .filter(|child| !seen.contains(*child))
                .collect();
            generation_start = order.len();
            for child in next {
                seen.insert(child.clone());
                order.push(child.clone());
            }
        }
        order
    }
}
