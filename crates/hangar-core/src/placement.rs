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
        self.tile_holding(id)?
            .set_ratio(id, ratio)
            .map_err(|_| self.not_in_pane(id))
    }

    /// The tile tree of the tab where `id` is a pane.
    fn tile_holding(&mut self, id: &SessionId) -> Result<&mut crate::tile::Tile, PlacementError> {
        let not_in_pane = self.not_in_pane(id);
        self.tabs
            .iter_mut()
            .find(|t| t.contains_leaf(id))
            .and_then(|t| t.root.as_mut())
            .ok_or(not_in_pane)
    }

    /// Resize the nearest split of `direction` around pane `id` (see
    /// `Tile::set_enclosing_ratio`). `Ok(false)`: no split that way around it.
    pub fn set_split_ratio(
        &mut self,
        id: &SessionId,
        direction: crate::tile::Direction,
        ratio: f32,
    ) -> Result<bool, PlacementError> {
        self.tile_holding(id)?
            .set_enclosing_ratio(id, direction, ratio)
            .map_err(|_| self.not_in_pane(id))
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prune::is_closed;
    use crate::test_support::{
        add_buried, add_parked, h, ids, leaf, meta, sid, split, tab, tid, v, workspace,
    };

    fn closed(ws: &Workspace) {
        assert!(is_closed(ws), "prune would change {ws:#?}");
    }

    fn no_fallback() -> Tab {
        panic!("no new tab expected")
    }

    #[test]
    fn the_first_tab_added_becomes_active_and_a_duplicate_id_is_refused() {
        let mut ws = Workspace::default();
        ws.add_tab(Tab::new(tid("t1"), "one")).unwrap();
        ws.add_tab(Tab::new(tid("t2"), "two")).unwrap();
        assert_eq!(ws.active_tab, Some(tid("t1")));
        assert_eq!(
            ws.add_tab(Tab::new(tid("t1"), "again")),
            Err(PlacementError::DuplicateTab(tid("t1")))
        );
        assert_eq!(
            ws.add_tab(tab("t3", Some(leaf("x")))),
            Err(PlacementError::TabNotEmpty(tid("t3")))
        );
        assert_eq!(ws.tabs.len(), 2);
        closed(&ws);
    }

    #[test]
    fn a_new_pane_becomes_the_root_of_an_empty_tab_then_splits_the_focus_vertically() {
        let mut ws = workspace(vec![tab("t1", None)]);
        ws.add_pane_session(meta("a"), &tid("t1"), PanePosition::Auto)
            .unwrap();
        ws.add_pane_session(meta("b"), &tid("t1"), PanePosition::Auto)
            .unwrap();
        ws.add_pane_session(
            meta("c"),
            &tid("t1"),
            PanePosition::Split {
                target: sid("a"),
                direction: Direction::Horizontal,
            },
        )
        .unwrap();
        assert_eq!(ws.tabs[0].root, Some(v(h(leaf("a"), leaf("c")), leaf("b"))));
        assert_eq!(ws.tabs[0].focus, Some(sid("c")));
        closed(&ws);
    }

    #[test]
    fn adding_a_session_fails_without_changing_anything_when_it_cannot_be_placed() {
        let mut ws = workspace(vec![tab("t1", Some(leaf("a"))), tab("t2", Some(leaf("b")))]);
        let before = ws.clone();
        let elsewhere = PanePosition::Split {
            target: sid("b"),
            direction: Direction::Vertical,
        };
        assert_eq!(
            ws.add_pane_session(meta("n"), &tid("t1"), elsewhere),
            Err(PlacementError::SplitTargetNotInTab {
                target: sid("b"),
                tab: tid("t1")
            })
        );
        assert_eq!(
            ws.add_pane_session(meta("a"), &tid("t2"), PanePosition::Auto),
            Err(PlacementError::DuplicateSession(sid("a")))
        );
        assert_eq!(
            ws.add_parked_session(meta("n"), &tid("nope"), 0),
            Err(PlacementError::UnknownTab(tid("nope")))
        );
        assert_eq!(ws, before);
    }

    #[test]
    fn a_new_sessions_links_to_missing_sessions_are_dropped_and_others_kept() {
        let mut ws = workspace(vec![tab("t1", Some(leaf("a")))]);
        let mut m = meta("n");
        m.relationships.linked_parent = Some(sid("a"));
        m.relationships.orchestration_parent = Some(sid("gone"));
        m.relationships.orchestration_root = Some(sid("n"));
        ws.add_parked_session(m, &tid("t1"), 5).unwrap();
        let r = &ws.sessions[&sid("n")].relationships;
        assert_eq!(r.linked_parent, Some(sid("a")));
        assert_eq!(r.orchestration_parent, None);
        assert_eq!(r.orchestration_root, Some(sid("n")));
        closed(&ws);
    }

    #[test]
    fn parking_a_pane_moves_it_to_its_tabs_pool_and_the_focus_to_its_sibling() {
        let mut ws = workspace(vec![tab("t1", Some(v(leaf("a"), h(leaf("b"), leaf("c")))))]);
        ws.tabs[0].focus = Some(sid("a"));

        assert_eq!(ws.park(&sid("a"), 42), Ok(tid("t1")));

        assert_eq!(ws.tabs[0].root, Some(h(leaf("b"), leaf("c"))));
        assert_eq!(ws.tabs[0].focus, Some(sid("b")));
        assert_eq!(ws.parked[&sid("a")].tab, tid("t1"));
        assert_eq!(ws.parked[&sid("a")].parked_at_ms, 42);
        assert_eq!(
            ws.park(&sid("a"), 43),
            Err(PlacementError::NotInPane(sid("a")))
        );
        assert_eq!(
            ws.park(&sid("x"), 43),
            Err(PlacementError::UnknownSession(sid("x")))
        );
        closed(&ws);
    }

    #[test]
    fn parking_the_last_pane_leaves_the_tab_empty_but_open() {
        let mut ws = workspace(vec![tab("t1", Some(leaf("a")))]);
        ws.park(&sid("a"), 0).unwrap();
        assert_eq!(ws.tabs.len(), 1);
        assert_eq!(ws.tabs[0].root, None);
        assert_eq!(ws.tabs[0].focus, None);
        closed(&ws);
    }

    #[test]
    fn unparking_returns_to_its_own_tab_by_default_splitting_the_focused_pane() {
        let mut ws = workspace(vec![
            tab("t1", Some(v(leaf("a"), leaf("b")))),
            tab("t2", None),
        ]);
        add_parked(&mut ws, "k", "t1");
        ws.tabs[0].focus = Some(sid("b"));

        assert_eq!(
            ws.unpark(&sid("k"), None, PanePosition::Auto),
            Ok(tid("t1"))
        );

        assert_eq!(ws.tabs[0].root, Some(v(leaf("a"), v(leaf("b"), leaf("k")))));
        assert_eq!(ws.tabs[0].focus, Some(sid("k")));
        assert!(ws.parked.is_empty());
        assert_eq!(
            ws.unpark(&sid("k"), None, PanePosition::Auto),
            Err(PlacementError::NotParked(sid("k")))
        );
        closed(&ws);
    }

    #[test]
    fn unparking_into_another_tab_puts_the_pane_there() {
        let mut ws = workspace(vec![tab("t1", Some(leaf("a"))), tab("t2", None)]);
        add_parked(&mut ws, "k", "t1");
        let before = ws.clone();
        assert_eq!(
            ws.unpark(&sid("k"), Some(&tid("nope")), PanePosition::Auto),
            Err(PlacementError::UnknownTab(tid("nope")))
        );
        assert_eq!(ws, before);

        assert_eq!(
            ws.unpark(&sid("k"), Some(&tid("t2")), PanePosition::Auto),
            Ok(tid("t2"))
        );
        assert_eq!(ws.tabs[1].root, Some(leaf("k")));
        closed(&ws);
    }

    #[test]
    fn burying_and_unburying_puts_the_pane_back_beside_its_sibling_on_the_same_side() {
        let original = v(
            leaf("a"),
            split(Direction::Horizontal, 0.3, leaf("b"), leaf("c")),
        );
        for buried in ["a", "b", "c"] {
            let mut ws = workspace(vec![tab("t1", Some(original.clone()))]);
            assert_eq!(ws.bury(&sid(buried), 9), Ok(tid("t1")));
            assert!(!ws.tabs[0].contains_leaf(&sid(buried)));
            assert!(ws.buried.contains_key(&sid(buried)));
            closed(&ws);

            assert_eq!(ws.unbury(&sid(buried), no_fallback), Ok(tid("t1")));

            // "a" comes back beside "b", the first leaf of the split it shared.
            let expected = if buried == "a" {
                split(
                    Direction::Horizontal,
                    0.3,
                    v(leaf("a"), leaf("b")),
                    leaf("c"),
                )
            } else {
                original.clone()
            };
            assert_eq!(ws.tabs[0].root, Some(expected), "burying {buried}");
            assert_eq!(ws.tabs[0].focus, Some(sid(buried)));
            assert!(ws.buried.is_empty());
            closed(&ws);
        }
    }

    #[test]
    fn burying_records_source_tab_sibling_side_direction_and_ratio() {
        let mut ws = workspace(vec![tab(
            "t1",
            Some(split(Direction::Horizontal, 0.7, leaf("a"), leaf("b"))),
        )]);
        ws.bury(&sid("a"), 9).unwrap();
        let record = &ws.buried[&sid("a")];
        assert_eq!(record.source_tab, tid("t1"));
        assert_eq!(record.sibling, Some(sid("b")));
        assert_eq!(record.side, Some(Side::A));
        assert_eq!(record.direction, Some(Direction::Horizontal));
        assert_eq!(record.ratio, Some(0.7));
        assert_eq!(record.buried_at_ms, 9);
    }

    #[test]
    fn unburying_without_its_sibling_splits_the_source_tabs_focus() {
        let mut ws = workspace(vec![tab("t1", Some(v(leaf("a"), leaf("b"))))]);
        add_buried(&mut ws, "z", "t1", Some("gone"));
        ws.tabs[0].focus = Some(sid("a"));
        assert_eq!(ws.unbury(&sid("z"), no_fallback), Ok(tid("t1")));
        assert_eq!(ws.tabs[0].root, Some(v(v(leaf("a"), leaf("z")), leaf("b"))));
        closed(&ws);
    }

    #[test]
    fn unburying_after_its_source_tab_closed_goes_to_the_active_tab() {
        let mut ws = workspace(vec![tab("t1", Some(leaf("a"))), tab("t2", None)]);
        ws.active_tab = Some(tid("t2"));
        add_buried(&mut ws, "z", "closed", Some("a"));
        assert_eq!(ws.unbury(&sid("z"), no_fallback), Ok(tid("t2")));
        assert_eq!(ws.tabs[1].root, Some(leaf("z")));
        closed(&ws);
    }

    #[test]
    fn unburying_with_no_tab_left_opens_the_fallback_tab() {
        let mut ws = workspace(vec![]);
        add_buried(&mut ws, "z", "closed", None);
        assert_eq!(
            ws.unbury(&sid("z"), || Tab::new(tid("new"), "restored")),
            Ok(tid("new"))
        );
        assert_eq!(ws.tabs.len(), 1);
        assert_eq!(ws.tabs[0].root, Some(leaf("z")));
        assert_eq!(ws.active_tab, Some(tid("new")));
        closed(&ws);
        assert_eq!(
            ws.unbury(&sid("z"), no_fallback),
            Err(PlacementError::NotBuried(sid("z")))
        );
    }

    fn family() -> Workspace {
        // root -> (linked) l1, l2 ; l1 -> (orchestrated) o1 ; o1 -> (linked) root (a cycle)
        let mut ws = workspace(vec![tab("t1", Some(v(leaf("root"), leaf("l2"))))]);
        add_parked(&mut ws, "l1", "t1");
        add_parked(&mut ws, "o1", "t1");
        add_parked(&mut ws, "other", "t1");
        let mut set = |child: &str, linked: Option<&str>, orch: Option<&str>| {
            let r = &mut ws.sessions.get_mut(&sid(child)).unwrap().relationships;
            r.linked_parent = linked.map(sid);
            r.orchestration_parent = orch.map(sid);
        };
        set("l2", Some("root"), None);
        set("l1", Some("root"), Some("root"));
        set("o1", None, Some("l1"));
        set("root", Some("o1"), None);
        ws
    }

    #[test]
    fn closing_a_session_cascades_to_its_linked_and_orchestrated_children_breadth_first() {
        let ws = family();
        assert_eq!(
            ws.close_cascade(&sid("root")),
            ids(&["root", "l1", "l2", "o1"])
        );
        assert_eq!(
            ws.close_cascade(&sid("l1")),
            ids(&["l1", "o1", "root", "l2"])
        );
        assert_eq!(ws.close_cascade(&sid("other")), ids(&["other"]));
        assert!(ws.close_cascade(&sid("unknown")).is_empty());
    }

    #[test]
    fn removing_sessions_clears_every_pointer_and_link_to_them() {
        let mut ws = family();
        ws.pins = ids(&["l1", "other", "root"]);
        ws.dispatch.selected = Some(sid("l1"));
        ws.dispatch.mode = Some("lanes".into());
        ws.dispatch.lanes.push(crate::model::DispatchLane {
            name: "x".into(),
            sessions: ids(&["l1", "other"]),
        });
        add_buried(&mut ws, "z", "t1", Some("root"));

        ws.remove_sessions(&ids(&["root", "l1", "nonexistent"]));

        assert_eq!(ws.tabs[0].root, Some(leaf("l2")));
        assert_eq!(ws.tabs[0].focus, Some(sid("l2")));
        assert!(!ws.sessions.contains_key(&sid("root")));
        assert!(!ws.parked.contains_key(&sid("l1")));
        assert_eq!(ws.pins, ids(&["other"]));
        assert_eq!(ws.dispatch.selected, None);
        assert_eq!(ws.dispatch.lanes[0].sessions, ids(&["other"]));
        assert_eq!(ws.sessions[&sid("l2")].relationships.linked_parent, None);
        assert_eq!(
            ws.sessions[&sid("o1")].relationships.orchestration_parent,
            None
        );
        assert_eq!(ws.buried[&sid("z")].sibling, Some(sid("root")));
        closed(&ws);
    }

    #[test]
    fn removing_the_last_pane_of_a_tab_leaves_the_tab_with_no_root() {
        let mut ws = workspace(vec![tab("t1", Some(leaf("a")))]);
        ws.remove_sessions(&ids(&["a"]));
        assert_eq!(ws.tabs.len(), 1);
        assert_eq!(ws.tabs[0].root, None);
        assert_eq!(ws.tabs[0].focus, None);
        closed(&ws);
    }

    #[test]
    fn closing_a_tab_closes_its_panes_then_its_parked_agents_and_their_cascades() {
        let mut ws = workspace(vec![
            tab("t1", Some(v(leaf("a"), leaf("b")))),
            tab("t2", Some(leaf("c"))),
            tab("t3", Some(leaf("d"))),
        ]);
        add_parked(&mut ws, "k", "t2");
        add_parked(&mut ws, "elsewhere", "t1");
        add_buried(&mut ws, "z", "t2", Some("c"));
        ws.sessions
            .get_mut(&sid("a"))
            .unwrap()
            .relationships
            .linked_parent = Some(sid("k"));
        ws.active_tab = Some(tid("t2"));

        assert_eq!(ws.tab_close_cascade(&tid("t2")), Ok(ids(&["c", "k", "a"])));
        assert_eq!(ws.remove_tab(&tid("t2")), Ok(ids(&["c", "k", "a"])));

        assert_eq!(
            ws.tabs.iter().map(|t| t.id.clone()).collect::<Vec<_>>(),
            vec![tid("t1"), tid("t3")]
        );
        assert_eq!(ws.active_tab, Some(tid("t3")));
        assert_eq!(ws.tabs[0].root, Some(leaf("b")));
        assert!(
            ws.buried.contains_key(&sid("z")),
            "buried records outlive their source tab"
        );
        assert!(ws.parked.contains_key(&sid("elsewhere")));
        closed(&ws);

        assert_eq!(ws.remove_tab(&tid("t3")), Ok(ids(&["d"])));
        assert_eq!(ws.active_tab, Some(tid("t1")));
        assert_eq!(ws.remove_tab(&tid("t1")), Ok(ids(&["b", "elsewhere"])));
        assert_eq!(ws.active_tab, None);
        assert_eq!(
            ws.remove_tab(&tid("t1")),
            Err(PlacementError::UnknownTab(tid("t1")))
        );
        closed(&ws);
    }

    #[test]
    fn pins_keep_order_without_duplicates_and_refuse_unknown_sessions() {
        let mut ws = workspace(vec![tab("t1", Some(v(leaf("a"), leaf("b"))))]);
        ws.pin(&sid("b")).unwrap();
        ws.pin(&sid("a")).unwrap();
        ws.pin(&sid("b")).unwrap();
        assert_eq!(ws.pins, ids(&["b", "a"]));
        ws.unpin(&sid("b")).unwrap();
        ws.unpin(&sid("b")).unwrap();
        assert_eq!(ws.pins, ids(&["a"]));
        assert_eq!(
            ws.pin(&sid("x")),
            Err(PlacementError::UnknownSession(sid("x")))
        );
        closed(&ws);
    }

    #[test]
    fn focus_and_active_tab_can_only_be_set_to_what_exists() {
        let mut ws = workspace(vec![
            tab("t1", Some(v(leaf("a"), leaf("b")))),
            tab("t2", None),
        ]);
        ws.set_focus(&tid("t1"), &sid("b")).unwrap();
        assert_eq!(ws.move_focus(&tid("t1"), FocusMove::Left), Some(sid("a")));
        assert_eq!(ws.tabs[0].focus, Some(sid("a")));
        assert_eq!(ws.move_focus(&tid("t1"), FocusMove::Left), None);
        assert_eq!(
            ws.set_focus(&tid("t2"), &sid("a")),
            Err(PlacementError::NotPaneOfTab {
                session: sid("a"),
                tab: tid("t2")
            })
        );
        ws.set_active_tab(&tid("t2")).unwrap();
        assert_eq!(
            ws.set_active_tab(&tid("x")),
            Err(PlacementError::UnknownTab(tid("x")))
        );
        ws.set_ratio(&sid("a"), 2.0).unwrap();
        assert!(matches!(ws.tabs[0].root, Some(Tile::Split { ratio, .. }) if ratio == 0.9));
        closed(&ws);
    }
}
