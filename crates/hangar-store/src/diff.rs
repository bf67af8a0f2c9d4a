//! What changed between the last saved workspace and a new one, row by row.
//!
//! Computed once per save: the store writes exactly these rows, checks rule 5
//! against the deleted sessions, and afterwards applies the same diff to its
//! record of the last save. That record keeps, for the keyed tables
//! (sessions, parked, buried), only a fingerprint of each row's record (a
//! 64-bit hash of its fields, `Fingerprint`), not a second copy of every
//! record: with 10,000 sessions a full copy doubled the daemon's memory. A
//! save hashes each record in memory, never encoding it unless it changed
//! (encoding all 10,000 to JSON to compare was 5 ms of every save). It never
//! decides anything about the model; it only compares.

use std::cmp::Ordering;
use std::collections::{BTreeMap, HashMap};
use std::hash::{BuildHasher, Hash};
use std::sync::LazyLock;

use hangar_core::{
    BuriedRecord, Dispatch, ParkedRecord, SessionId, SessionMeta, Settings, Tab, TabId, Workspace,
};

/// A record's fingerprint: a 64-bit hash of every field (a collision would
/// only skip rewriting a changed row, at odds of 2^-64 per change). Never
/// stored: the same process computes it at load and at each save.
pub(crate) trait Fingerprint {
    fn fingerprint(&self) -> u64;
}

/// The process's one fingerprint hasher: foldhash's quality variant, with a
/// seed drawn at random for the process so a record cannot be crafted to
/// collide with another. Over records of many small fields std's SipHash was
/// 43% of a save's CPU; with this a save of 10,000 sessions costs the daemon
/// 1.75-2.25 ms instead of 5.75-6.0 (docs/src/benchmarks-history.md).
static FINGERPRINTS: LazyLock<foldhash::quality::RandomState> = LazyLock::new(Default::default);

fn hash_of(value: &impl Hash) -> u64 {
    FINGERPRINTS.hash_one(value)
}

impl Fingerprint for SessionMeta {
    fn fingerprint(&self) -> u64 {
        hash_of(self)
    }
}

impl Fingerprint for ParkedRecord {
    fn fingerprint(&self) -> u64 {
        hash_of(self)
    }
}

impl Fingerprint for BuriedRecord {
    /// By hand: its ratio is an `f32`, which has no `Hash`; its bits do.
    /// Every field is named, so a new one cannot be left out unnoticed.
    fn fingerprint(&self) -> u64 {
        let BuriedRecord {
            session,
            source_tab,
            sibling,
            side,
            direction,
            ratio,
            buried_at_ms,
        } = self;
        hash_of(&(
            session,
            source_tab,
            sibling,
            side,
            direction,
            ratio.map(f32::to_bits),
            buried_at_ms,
        ))
    }
}

/// A row's fingerprint per key: what the store remembers of a keyed table.
pub(crate) type Digests = BTreeMap<SessionId, u64>;

/// The last save as the store remembers it: the small parts whole, the keyed
/// tables as the fingerprint of each row's record.
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

/// Fingerprints of the keyed tables' rows as read by a load.
#[derive(Debug, Default)]
pub(crate) struct RowDigests {
    pub sessions: Digests,
    pub parked: Digests,
    pub buried: Digests,
}

/// Rows of one keyed table to write (with their new fingerprint) and to
/// delete.
pub(crate) struct MapDiff<'a, V> {
    pub upserts: Vec<(&'a SessionId, &'a V, u64)>,
    pub deletes: Vec<SessionId>,
}

impl<'a, V: Fingerprint> MapDiff<'a, V> {
    /// One merge walk over both sorted maps, fingerprinting each new row.
    fn between(old: &Digests, new: &'a BTreeMap<SessionId, V>) -> Self {
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
                Ordering::Greater => {
                    if let Some((id, value)) = new_iter.next() {
                        diff.upserts.push((id, value, value.fingerprint()));
                    }
                }
                Ordering::Equal => {
                    if let (Some((_, old_digest)), Some((id, value))) =
                        (old_iter.next(), new_iter.next())
                    {
                        let digest = value.fingerprint();
                        if digest != *old_digest {
                            diff.upserts.push((id, value, digest));
                        }
                    }
                }
            }
        }
        diff
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
    pub(crate) fn between(old_save: &LastSave, new: &'a Workspace) -> Self {
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
        WorkspaceDiff {
            sessions: MapDiff::between(&old_save.sessions, &new.sessions),
            parked: MapDiff::between(&old_save.parked, &new.parked),
            buried: MapDiff::between(&old_save.buried, &new.buried),
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
    use hangar_core::{Direction, Provider, Side};

    fn fingerprints<V: Fingerprint>(map: &BTreeMap<SessionId, V>) -> Digests {
        map.iter()
            .map(|(id, v)| (id.clone(), v.fingerprint()))
            .collect()
    }

    fn saved_whole(ws: &Workspace) -> LastSave {
        let digests = RowDigests {
            sessions: fingerprints(&ws.sessions),
            parked: fingerprints(&ws.parked),
            buried: fingerprints(&ws.buried),
        };
        LastSave::new(ws.clone(), digests)
    }

    #[test]
    fn each_changed_field_of_a_parked_or_buried_record_is_found_and_the_same_record_is_not() {
        let mut ws = workspace(3);
        let (p, b) = (SessionId::new("s00000"), SessionId::new("s00001"));
        let tab = TabId::new("t1");
        ws.parked.insert(
            p.clone(),
            ParkedRecord {
                session: p.clone(),
                tab: tab.clone(),
                parked_at_ms: 7,
            },
        );
        ws.buried.insert(
            b.clone(),
            BuriedRecord {
                session: b.clone(),
                source_tab: tab,
                sibling: Some(SessionId::new("s00002")),
                side: Some(Side::A),
                direction: Some(Direction::Vertical),
                ratio: Some(0.5),
                buried_at_ms: 9,
            },
        );
        let last = saved_whole(&ws);
        assert!(WorkspaceDiff::between(&last, &ws).is_empty());
        assert!(
            WorkspaceDiff::between(&last, &ws.clone()).is_empty(),
            "a copy fingerprints the same"
        );

        let parked_changes: [fn(&mut ParkedRecord); 2] =
            [|r| r.tab = TabId::new("t2"), |r| r.parked_at_ms += 1];
        for change in parked_changes {
            let mut changed = ws.clone();
            change(changed.parked.get_mut(&p).unwrap());
            let diff = WorkspaceDiff::between(&last, &changed);
            assert_eq!(diff.parked.upserts.len(), 1);
            assert!(diff.sessions.upserts.is_empty() && diff.buried.upserts.is_empty());
        }
        let buried_changes: [fn(&mut BuriedRecord); 7] = [
            |r| r.source_tab = TabId::new("t2"),
            |r| r.sibling = None,
            |r| r.side = Some(Side::B),
            |r| r.direction = Some(Direction::Horizontal),
            |r| r.ratio = Some(0.6),
            |r| r.ratio = None,
            |r| r.buried_at_ms += 1,
        ];
        for change in buried_changes {
            let mut changed = ws.clone();
            change(changed.buried.get_mut(&b).unwrap());
            let diff = WorkspaceDiff::between(&last, &changed);
            assert_eq!(diff.buried.upserts.len(), 1);
            assert!(diff.sessions.upserts.is_empty() && diff.parked.upserts.is_empty());
        }
    }

    fn workspace(n: usize) -> Workspace {
        let mut ws = Workspace::default();
        for i in 0..n {
            let id = SessionId::new(format!("s{i:05}"));
            ws.sessions
                .insert(id.clone(), SessionMeta::new(id, Provider::Claude, "/w"));
        }
        ws
    }

    /// The fingerprints a save of `ws` leaves.
    fn saved(ws: &Workspace) -> LastSave {
        let digests = RowDigests {
            sessions: ws
                .sessions
                .iter()
                .map(|(id, v)| (id.clone(), v.fingerprint()))
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
        let unchanged = WorkspaceDiff::between(&last, &ws);
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
            let diff = WorkspaceDiff::between(&last, &changed);
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

        let diff = WorkspaceDiff::between(&last, &next);
        assert_eq!(
            upserted(&diff),
            vec!["s00007".to_owned(), "s00042".to_owned()]
        );
        assert_eq!(diff.sessions.deletes, vec![SessionId::new("s00003")]);
        diff.apply_to(&mut last, &next);
        assert_eq!(last.sessions, saved(&next).sessions);
        assert!(WorkspaceDiff::between(&last, &next).is_empty());
    }
}
