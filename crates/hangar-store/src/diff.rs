//! What changed between the last saved workspace and a new one, row by row.
//!
//! Computed once per save: the store writes exactly these rows, checks rule 5
//! against the deleted sessions, and afterwards applies the same diff to its
//! record of the last save. That record keeps, for the keyed tables
//! (sessions, parked, buried), only a digest of each row's JSON, not a second
//! copy of every record: with 10,000 sessions a full copy doubled the
//! daemon's memory. It never decides anything about the model; it only
//! compares.

use std::cmp::Ordering;
use std::collections::{BTreeMap, HashMap};
use std::hash::Hasher;

use hangar_core::{
    BuriedRecord, Dispatch, ParkedRecord, SessionId, SessionMeta, Settings, Tab, TabId, Workspace,
};
use serde::Serialize;

/// The digest of one row's JSON text (64-bit SipHash; a collision would only
/// skip rewriting a changed row, at odds of 2^-64 per change).
pub(crate) fn row_digest(json: &[u8]) -> u64 {
    let mut hasher = std::hash::DefaultHasher::new();
    hasher.write(json);
    hasher.finish()
}

/// A row's digest per key: what the store remembers of a keyed table.
pub(crate) type Digests = BTreeMap<SessionId, u64>;

/// The last save as the store remembers it: the small parts whole, the keyed
/// tables as digests of the JSON written for each row.
#[derive(Debug, Default)]
pub(crate) struct LastSave {
    /// Tabs, pins, active tab, dispatch and settings; its three maps are
    /// always empty (see the digests).
    pub rest: Workspace,
    pub sessions: Digests,
    pub parked: Digests,
    pub buried: Digests,
}

impl LastSave {
    /// From a loaded workspace and the digests of the rows it was read from.
    pub(crate) fn new(mut ws: Workspace, digests: RowDigests) -> Self {
        ws.sessions.clear();
        ws.parked.clear();
        ws.buried.clear();
        LastSave {
            rest: ws,
            sessions: digests.sessions,
            parked: digests.parked,
            buried: digests.buried,
        }
    }
}

/// Digests of the keyed tables' rows as read by a load.
#[derive(Debug, Default)]
pub(crate) struct RowDigests {
    pub sessions: Digests,
    pub parked: Digests,
    pub buried: Digests,
}

/// A row that could not be encoded to JSON.
pub(crate) struct EncodeFailure {
    pub table: &'static str,
    pub id: SessionId,
    pub source: serde_json::Error,
}

/// Rows of one keyed table to write (with the digest of their new JSON) and
/// to delete.
pub(crate) struct MapDiff<'a, V> {
    pub upserts: Vec<(&'a SessionId, &'a V, u64)>,
    pub deletes: Vec<SessionId>,
}

impl<'a, V: Serialize> MapDiff<'a, V> {
    /// One merge walk over both sorted maps, encoding each new row once into
    /// a reused buffer to compare its digest.
    fn between(
        table: &'static str,
        old: &Digests,
        new: &'a BTreeMap<SessionId, V>,
    ) -> Result<Self, EncodeFailure> {
        let mut diff = MapDiff {
            upserts: Vec::new(),
            deletes: Vec::new(),
        };
        let mut buffer = Vec::new();
        let mut digest_of = |id: &SessionId, value: &V| {
            buffer.clear();
            serde_json::to_writer(&mut buffer, value)
                .map(|()| row_digest(&buffer))
                .map_err(|source| EncodeFailure {
                    table,
                    id: id.clone(),
                    source,
                })
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
                Ordering::Greater => {
                    if let Some((id, value)) = new_iter.next() {
                        let digest = digest_of(id, value)?;
                        diff.upserts.push((id, value, digest));
                    }
                }
                Ordering::Equal => {
                    if let (Some((_, old_digest)), Some((id, value))) =
                        (old_iter.next(), new_iter.next())
                    {
                        let digest = digest_of(id, value)?;
                        if digest != *old_digest {
                            diff.upserts.push((id, value, digest));
                        }
                    }
                }
            }
        }
        Ok(diff)
    }
}

impl<V> MapDiff<'_, V> {
    fn is_empty(&self) -> bool {
        self.upserts.is_empty() && self.deletes.is_empty()
    }

    fn apply_to(&self, digests: &mut Digests) {
        for id in &self.deletes {
            digests.remove(id);
        }
        for (id, _, digest) in &self.upserts {
            digests.insert((*id).clone(), *digest);
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
    pub(crate) fn between(old_save: &LastSave, new: &'a Workspace) -> Result<Self, EncodeFailure> {
        let old = &old_save.rest;
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
        Ok(WorkspaceDiff {
            sessions: MapDiff::between("sessions", &old_save.sessions, &new.sessions)?,
            parked: MapDiff::between("parked", &old_save.parked, &new.parked)?,
            buried: MapDiff::between("buried", &old_save.buried, &new.buried)?,
            tabs,
            tab_deletes,
            pins: (old.pins != new.pins).then_some(new.pins.as_slice()),
            active_tab: (old.active_tab != new.active_tab).then_some(new.active_tab.as_ref()),
            dispatch: (old.dispatch != new.dispatch).then_some(&new.dispatch),
            settings: (old.settings != new.settings).then_some(&new.settings),
        })
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
    pub(crate) fn apply_to(&self, old_save: &mut LastSave, new: &Workspace) {
        self.sessions.apply_to(&mut old_save.sessions);
        self.parked.apply_to(&mut old_save.parked);
        self.buried.apply_to(&mut old_save.buried);
        let old = &mut old_save.rest;
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

#[cfg(test)]
mod tests {
    use super::*;
    use hangar_core::Provider;

    fn workspace(n: usize) -> Workspace {
        let mut ws = Workspace::default();
        for i in 0..n {
            let id = SessionId::new(format!("s{i:05}"));
            ws.sessions
                .insert(id.clone(), SessionMeta::new(id, Provider::Claude, "/w"));
        }
        ws
    }

    /// The digests a save of `ws` leaves, built the way the store writes rows.
    fn saved(ws: &Workspace) -> LastSave {
        let digest = |json: String| row_digest(json.as_bytes());
        let digests = RowDigests {
            sessions: ws
                .sessions
                .iter()
                .map(|(id, v)| (id.clone(), digest(serde_json::to_string(v).unwrap())))
                .collect(),
            parked: Digests::new(),
            buried: Digests::new(),
        };
        LastSave::new(ws.clone(), digests)
    }

    fn upserted(diff: &WorkspaceDiff<'_>) -> Vec<String> {
        let ids = diff
            .sessions
            .upserts
            .iter()
            .map(|(id, _, _)| id.to_string());
        ids.collect()
    }

    #[test]
    fn each_changed_field_of_one_session_among_many_is_found() {
        let ws = workspace(1_000);
        let last = saved(&ws);
        let unchanged = WorkspaceDiff::between(&last, &ws).ok().unwrap();
        assert!(
            unchanged.is_empty(),
            "the same workspace differs in nothing"
        );

        let id = SessionId::new("s00500");
        let changes: [fn(&mut SessionMeta); 4] = [
            |m| m.title.push('x'),
            |m| m.last_active_ms += 1,
            |m| m.draft = Some(String::new()),
            |m| m.dangerous = !m.dangerous,
        ];
        for change in changes {
            let mut changed = ws.clone();
            change(changed.sessions.get_mut(&id).unwrap());
            let diff = WorkspaceDiff::between(&last, &changed).ok().unwrap();
            assert_eq!(upserted(&diff), vec!["s00500".to_owned()]);
            assert!(diff.sessions.deletes.is_empty());
        }
    }

    #[test]
    fn applying_a_diff_leaves_the_digests_of_the_new_workspace() {
        let ws = workspace(10);
        let mut last = saved(&ws);
        let mut next = ws.clone();
        next.sessions.remove(&SessionId::new("s00003"));
        next.sessions
            .get_mut(&SessionId::new("s00007"))
            .unwrap()
            .title = "renamed".to_owned();
        let added = SessionId::new("s00042");
        next.sessions.insert(
            added.clone(),
            SessionMeta::new(added, Provider::Codex, "/x"),
        );

        let diff = WorkspaceDiff::between(&last, &next).ok().unwrap();
        assert_eq!(
            upserted(&diff),
            vec!["s00007".to_owned(), "s00042".to_owned()]
        );
        assert_eq!(diff.sessions.deletes, vec![SessionId::new("s00003")]);
        diff.apply_to(&mut last, &next);
        assert_eq!(last.sessions, saved(&next).sessions);
        assert!(
            WorkspaceDiff::between(&last, &next)
                .ok()
                .unwrap()
                .is_empty()
        );
    }
}
