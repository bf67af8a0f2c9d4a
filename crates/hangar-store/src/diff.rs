//! What changed between the last saved workspace and a new one, row by row.
//!
//! Computed once per save: the store writes exactly these rows, checks rule 5
//! against the deleted sessions, and afterwards applies the same diff to its
//! copy of the last save, so a save costs allocations in proportion to what
//! changed, not a clone of the whole workspace. It never decides anything
//! about the model; it only compares.

use std::cmp::Ordering;
use std::collections::{BTreeMap, HashMap};

use hangar_core::{
    BuriedRecord, Dispatch, ParkedRecord, SessionId, SessionMeta, Settings, Tab, TabId, Workspace,
};

/// Rows of one keyed table to write and to delete.
pub(crate) struct MapDiff<'a, V> {
    pub upserts: Vec<(&'a SessionId, &'a V)>,
    pub deletes: Vec<SessionId>,
}

impl<'a, V: PartialEq> MapDiff<'a, V> {
    /// One merge walk over both sorted maps.
    fn between(old: &BTreeMap<SessionId, V>, new: &'a BTreeMap<SessionId, V>) -> Self {
        let mut diff = MapDiff {
            upserts: Vec::new(),
            deletes: Vec::new(),
        };
        let mut old_iter = old.iter().peekable();
        let mut new_iter = new.iter().peekable();
        loop {
            let order = match (old_iter.peek(), new_iter.peek()) {
                (None, None) => break,
                (Some(_), None) => Ordering::Less,
                (None, Some(_)) => Ordering::Greater,
                (Some((old_id, _)), Some((new_id, _))) => old_id.cmp(new_id),
            };
            match order {
                Ordering::Less => {
                    if let Some((id, _)) = old_iter.next() {
                        diff.deletes.push(id.clone());
                    }
                }
                Ordering::Greater => diff.upserts.extend(new_iter.next()),
                Ordering::Equal => {
                    if let (Some((_, old_value)), Some((id, value))) =
                        (old_iter.next(), new_iter.next())
                        && old_value != value
                    {
                        diff.upserts.push((id, value));
                    }
                }
            }
        }
        diff
    }

    fn is_empty(&self) -> bool {
        self.upserts.is_empty() && self.deletes.is_empty()
    }
}

impl<V: Clone> MapDiff<'_, V> {
    fn apply_to(&self, map: &mut BTreeMap<SessionId, V>) {
        for id in &self.deletes {
            map.remove(id);
        }
        for (id, value) in &self.upserts {
            map.insert((*id).clone(), (*value).clone());
        }
    }
}

pub(crate) enum TabChange<'a> {
    /// New or changed content (written with its position).
    Upsert { position: usize, tab: &'a Tab },
    /// Same content at another position.
    Move { position: usize, id: &'a TabId },
}

pub(crate) struct WorkspaceDiff<'a> {
    pub sessions: MapDiff<'a, SessionMeta>,
    pub parked: MapDiff<'a, ParkedRecord>,
    pub buried: MapDiff<'a, BuriedRecord>,
    pub tabs: Vec<TabChange<'a>>,
    pub tab_deletes: Vec<TabId>,
    pub pins: Option<&'a [SessionId]>,
    /// `Some(None)`: the active tab was cleared.
    pub active_tab: Option<Option<&'a TabId>>,
    pub dispatch: Option<&'a Dispatch>,
    pub settings: Option<&'a Settings>,
}

impl<'a> WorkspaceDiff<'a> {
    pub(crate) fn between(old: &Workspace, new: &'a Workspace) -> Self {
        let old_tabs: HashMap<&TabId, (usize, &Tab)> = old
            .tabs
            .iter()
            .enumerate()
            .map(|(i, t)| (&t.id, (i, t)))
            .collect();
        let mut tabs = Vec::new();
        for (position, tab) in new.tabs.iter().enumerate() {
            match old_tabs.get(&tab.id) {
                Some((old_position, old_tab)) if *old_tab == tab => {
                    if *old_position != position {
                        tabs.push(TabChange::Move {
                            position,
                            id: &tab.id,
                        });
                    }
                }
                _ => tabs.push(TabChange::Upsert { position, tab }),
            }
        }
        let tab_deletes = old
            .tabs
            .iter()
            .filter(|t| !new.tabs.iter().any(|n| n.id == t.id))
            .map(|t| t.id.clone())
            .collect();
        WorkspaceDiff {
            sessions: MapDiff::between(&old.sessions, &new.sessions),
            parked: MapDiff::between(&old.parked, &new.parked),
            buried: MapDiff::between(&old.buried, &new.buried),
            tabs,
            tab_deletes,
            pins: (old.pins != new.pins).then_some(new.pins.as_slice()),
            active_tab: (old.active_tab != new.active_tab).then_some(new.active_tab.as_ref()),
            dispatch: (old.dispatch != new.dispatch).then_some(&new.dispatch),
            settings: (old.settings != new.settings).then_some(&new.settings),
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.sessions.is_empty()
            && self.parked.is_empty()
            && self.buried.is_empty()
            && self.tabs.is_empty()
            && self.tab_deletes.is_empty()
            && self.pins.is_none()
            && self.active_tab.is_none()
            && self.dispatch.is_none()
            && self.settings.is_none()
    }

    /// Make `old` equal to the `new` this diff was computed from.
    pub(crate) fn apply_to(&self, old: &mut Workspace, new: &Workspace) {
        self.sessions.apply_to(&mut old.sessions);
        self.parked.apply_to(&mut old.parked);
        self.buried.apply_to(&mut old.buried);
        if !self.tabs.is_empty() || !self.tab_deletes.is_empty() {
            // Tabs are few; their order matters, so take them whole.
            old.tabs = new.tabs.clone();
        }
        if self.pins.is_some() {
            old.pins = new.pins.clone();
        }
        if self.active_tab.is_some() {
            old.active_tab = new.active_tab.clone();
        }
        if self.dispatch.is_some() {
            old.dispatch = new.dispatch.clone();
        }
        if self.settings.is_some() {
            old.settings = new.settings.clone();
        }
    }
}
