//! Keeping the persisted model closed under restore (rule 2 of DESIGN.md).
//!
//! `prune` drops metadata that no owner references, owner records that point
//! at missing metadata, parked records whose project tab is gone (ghosts),
//! stale pointers (pins, focus, dispatch selection and lanes, active tab) and
//! relationship links to sessions that no longer exist. It never invents
//! anything and is idempotent.
//!
//! It also settles what a hand-edited file can get wrong about placement: a
//! session held by several owners keeps the strongest one (pane, then
//! parked, then buried), a session shown twice keeps its first pane, a
//! record filed under another session's key is re-filed under its own.

use std::collections::{BTreeMap, BTreeSet};

use crate::model::{SessionId, Tab, TabId, Workspace};

/// What `prune` removed, for reporting to the user.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PruneReport {
    /// Sessions whose metadata was dropped, sorted.
    pub dropped_sessions: Vec<SessionId>,
    /// Parked records dropped because their project tab is gone, because
    /// their session has no metadata, or because the session is also a pane.
    pub dropped_parked: Vec<SessionId>,
    /// Buried records dropped because their session has no metadata, or
    /// because the session is also a pane or parked.
    pub dropped_buried: Vec<SessionId>,
    /// Pane leaves removed because their session has no metadata, is already
    /// shown in an earlier pane, or sits in a second tab with the same id.
    pub dropped_leaves: Vec<(TabId, SessionId)>,
    /// Pins, focus, selection, lane entries and links that were cleared.
    pub cleared_pointers: usize,
    /// Repairs that dropped nothing: ratios clamped, records re-filed under
    /// their own session id, duplicate records merged.
    pub repaired: usize,
}

impl PruneReport {
    /// True when `prune` left the workspace exactly as it was.
    pub fn is_empty(&self) -> bool {
        self.dropped_sessions.is_empty()
            && self.dropped_parked.is_empty()
            && self.dropped_buried.is_empty()
            && self.dropped_leaves.is_empty()
            && self.cleared_pointers == 0
            && self.repaired == 0
    }
}

impl PruneReport {
    /// Add what a second `prune` removed to this report.
    pub fn merge(&mut self, other: PruneReport) {
        self.dropped_sessions.extend(other.dropped_sessions);
        self.dropped_sessions.sort();
        self.dropped_sessions.dedup();
        self.dropped_parked.extend(other.dropped_parked);
        self.dropped_buried.extend(other.dropped_buried);
        self.dropped_leaves.extend(other.dropped_leaves);
        self.cleared_pointers += other.cleared_pointers;
        self.repaired += other.repaired;
    }
}

/// Whether `prune` would leave this workspace unchanged.
pub fn is_closed(ws: &Workspace) -> bool {
    prune(ws.clone()).1.is_empty()
}

/// Repair a workspace so it is closed under restore.
pub fn prune(ws: Workspace) -> (Workspace, PruneReport) {
    let Workspace {
        tabs,
        active_tab,
        sessions,
        parked,
        buried,
        mut pins,
        mut dispatch,
        settings,
    } = ws;
    let mut report = PruneReport::default();

    let mut sessions = rekey(sessions, |m| &m.id, &mut report.repaired);

    let KeptTabs {
        tabs: kept_tabs,
        active_tab,
        ids: tab_ids,
        panes,
    } = keep_tabs(
        tabs,
        active_tab,
        |id| sessions.contains_key(id),
        &mut report,
    );

    let mut parked = rekey(parked, |p| &p.session, &mut report.repaired);
    parked.retain(|id, p| {
        let kept = sessions.contains_key(id) && tab_ids.contains(&p.tab) && !panes.contains(id);
        if !kept {
            report.dropped_parked.push(id.clone());
        }
        kept
    });

    let mut buried = rekey(buried, |b| &b.session, &mut report.repaired);
    buried.retain(|id, b| {
        let kept = sessions.contains_key(id) && !panes.contains(id) && !parked.contains_key(id);
        if !kept {
            report.dropped_buried.push(id.clone());
        } else if let Some(ratio) = b.ratio {
            let clamped = crate::tile::clamp_ratio(ratio);
            if clamped.to_bits() != ratio.to_bits() {
                b.ratio = Some(clamped);
                report.repaired += 1;
            }
        }
        kept
    });

    sessions.retain(|id, _| {
        let owned = panes.contains(id) || parked.contains_key(id) || buried.contains_key(id);
        if !owned {
            report.dropped_sessions.push(id.clone());
        }
        owned
    });

    // Two passes so the common case (nothing dangling) clones no ids.
    let dangling: Vec<(SessionId, Vec<SessionId>)> = sessions
        .values()
        .filter_map(|m| {
            let gone: Vec<SessionId> = m
                .relationships
                .session_links()
                .into_iter()
                .flatten()
                .filter(|target| !sessions.contains_key(*target))
                .cloned()
                .collect();
            (!gone.is_empty()).then(|| (m.id.clone(), gone))
        })
        .collect();
    for (id, gone) in dangling {
        if let Some(meta) = sessions.get_mut(&id) {
            report.cleared_pointers += meta.relationships.clear_links_where(|t| gone.contains(t));
        }
    }

    let mut seen = BTreeSet::new();
    let before = pins.len();
    pins.retain(|id| sessions.contains_key(id) && seen.insert(id.clone()));
    report.cleared_pointers += before - pins.len();

    if dispatch
        .selected
        .as_ref()
        .is_some_and(|s| !sessions.contains_key(s))
    {
        dispatch.selected = None;
        report.cleared_pointers += 1;
    }
    for lane in &mut dispatch.lanes {
        let mut seen = BTreeSet::new();
        let before = lane.sessions.len();
        lane.sessions
            .retain(|id| sessions.contains_key(id) && seen.insert(id.clone()));
        report.cleared_pointers += before - lane.sessions.len();
    }

    let ws = Workspace {
        tabs: kept_tabs,
        active_tab,
        sessions,
        parked,
        buried,
        pins,
        dispatch,
        settings,
    };
    (ws, report)
}

/// The tabs `prune` keeps, and what the rest of it needs to know of them.
pub(crate) struct KeptTabs {
    pub tabs: Vec<Tab>,
    pub active_tab: Option<TabId>,
    /// Every kept tab's id.
    pub ids: BTreeSet<TabId>,
    /// Every kept pane leaf.
    pub panes: BTreeSet<SessionId>,
}

/// `prune`'s repair of the tabs: a second tab with an id already seen is
/// dropped, a leaf whose session has no metadata (`has_meta`) or is already
/// shown in an earlier pane is removed, ratios are clamped, a focus or
/// active tab that points nowhere moves. It depends on the sessions only
/// through `has_meta`, which is what lets a restore fork its panes from the
/// tabs and their leaves' rows alone (`restore_plan::first_forks`).
pub(crate) fn keep_tabs(
    tabs: Vec<Tab>,
    active_tab: Option<TabId>,
    has_meta: impl Fn(&SessionId) -> bool,
    report: &mut PruneReport,
) -> KeptTabs {
    let mut tab_ids = BTreeSet::new();
    let mut panes = BTreeSet::new();
    let mut kept_tabs = Vec::with_capacity(tabs.len());
    for mut tab in tabs {
        if !tab_ids.insert(tab.id.clone()) {
            // Nothing can address a second tab with the same id.
            for leaf in tab.leaves() {
                report.dropped_leaves.push((tab.id.clone(), leaf));
            }
            continue;
        }
        if let Some(root) = tab.root.take() {
            let mut keep = |id: &SessionId| {
                let kept = has_meta(id) && panes.insert(id.clone());
                if !kept {
                    report.dropped_leaves.push((tab.id.clone(), id.clone()));
                }
                kept
            };
            tab.root = root.retain_leaves(&mut keep);
        }
        if let Some(root) = &mut tab.root {
            report.repaired += root.clamp_ratios();
        }
        if let Some(focus) = &tab.focus
            && !tab.contains_leaf(focus)
        {
            tab.focus = tab.root.as_ref().map(|r| r.first_leaf().clone());
            report.cleared_pointers += 1;
        }
        kept_tabs.push(tab);
    }

    let active_tab = match active_tab {
        Some(id) if !tab_ids.contains(&id) => {
            report.cleared_pointers += 1;
            kept_tabs.first().map(|t| t.id.clone())
        }
        other => other,
    };

    KeptTabs {
        tabs: kept_tabs,
        active_tab,
        ids: tab_ids,
        panes,
    }
}

/// File every record under its own session id. A record under a foreign key
/// yields to one already filed under the right key; each move or merge counts
/// as a repair.
fn rekey<T>(
    map: BTreeMap<SessionId, T>,
    own_id: impl Fn(&T) -> &SessionId,
    repaired: &mut usize,
) -> BTreeMap<SessionId, T> {
    if map.iter().all(|(key, v)| key == own_id(v)) {
        return map;
    }
    let mut filed = BTreeMap::new();
    let mut misfiled = Vec::new();
    for (key, v) in map {
        if &key == own_id(&v) {
            filed.insert(key, v);
        } else {
            misfiled.push(v);
        }
    }
    for v in misfiled {
        *repaired += 1;
        let id = own_id(&v).clone();
        filed.entry(id).or_insert(v);
    }
    filed
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{DispatchLane, ParkedRecord};
    use crate::ownership::{live_set, owned_set};
    use crate::test_support::{
        add_buried, add_meta, add_parked, h, ids, leaf, sid, split, tab, tid, v, workspace,
    };
    use crate::tile::{Direction, Tile};

    fn link(ws: &mut Workspace, child: &str, parent: &str) {
        let m = ws.sessions.get_mut(&sid(child)).unwrap();
        m.relationships.linked_parent = Some(sid(parent));
    }

    #[test]
    fn pruning_keeps_the_real_agents_and_drops_82_ghosts_and_one_orphan() {
        let mut ws = workspace(vec![
            tab("t1", Some(v(leaf("pane-1"), leaf("pane-2")))),
            tab("t2", Some(leaf("pane-3"))),
        ]);
        for i in 0..8 {
            add_parked(
                &mut ws,
                &format!("real-{i}"),
                if i % 2 == 0 { "t1" } else { "t2" },
            );
        }
        add_buried(&mut ws, "buried", "t1", Some("pane-1"));
        for i in 0..82 {
            add_parked(
                &mut ws,
                &format!("ghost-{i:02}"),
                &format!("closed-tab-{}", i % 4),
            );
        }
        add_meta(&mut ws, "orphan");
        let real = owned_set(&ws);
        assert_eq!(real.len(), 3 + 8 + 1);

        let (pruned, report) = prune(ws);

        let mut expected: Vec<SessionId> = (0..82).map(|i| sid(&format!("ghost-{i:02}"))).collect();
        expected.push(sid("orphan"));
        expected.sort();
        assert_eq!(report.dropped_sessions.len(), 83);
        assert_eq!(report.dropped_sessions, expected);
        assert_eq!(report.dropped_parked.len(), 82);
        assert_eq!(
            pruned.sessions.keys().cloned().collect::<BTreeSet<_>>(),
            real
        );
        assert_eq!(owned_set(&pruned), real);
        assert_eq!(pruned.parked.len(), 8);
        assert_eq!(pruned.buried.len(), 1);
    }

    #[test]
    fn an_owner_record_pointing_at_missing_metadata_is_dropped() {
        let mut ws = workspace(vec![tab("t1", Some(v(leaf("a"), h(leaf("b"), leaf("c")))))]);
        ws.sessions.remove(&sid("b"));
        add_parked(&mut ws, "k", "t1");
        ws.sessions.remove(&sid("k"));
        add_buried(&mut ws, "z", "t1", Some("a"));
        ws.sessions.remove(&sid("z"));
        ws.tabs[0].focus = Some(sid("b"));

        let (pruned, report) = prune(ws);

        assert_eq!(pruned.tabs[0].root, Some(v(leaf("a"), leaf("c"))));
        assert_eq!(pruned.tabs[0].focus, Some(sid("a")));
        assert!(pruned.parked.is_empty());
        assert!(pruned.buried.is_empty());
        assert_eq!(report.dropped_leaves, vec![(tid("t1"), sid("b"))]);
        assert_eq!(report.dropped_parked, ids(&["k"]));
        assert_eq!(report.dropped_buried, ids(&["z"]));
        assert!(report.dropped_sessions.is_empty());
    }

    #[test]
    fn a_stale_dispatch_selection_is_cleared_while_mode_and_lanes_are_kept() {
        let mut ws = workspace(vec![tab("t1", Some(v(leaf("a"), leaf("b"))))]);
        ws.dispatch.mode = Some("lanes".into());
        ws.dispatch.selected = Some(sid("deleted"));
        ws.dispatch.lanes = vec![
            DispatchLane {
                name: "doing".into(),
                sessions: ids(&["a", "deleted", "b"]),
            },
            DispatchLane {
                name: "empty".into(),
                sessions: ids(&["deleted"]),
            },
        ];

        let (pruned, report) = prune(ws);

        assert_eq!(pruned.dispatch.selected, None);
        assert_eq!(pruned.dispatch.mode.as_deref(), Some("lanes"));
        assert_eq!(pruned.dispatch.lanes.len(), 2);
        assert_eq!(pruned.dispatch.lanes[0].sessions, ids(&["a", "b"]));
        assert!(pruned.dispatch.lanes[1].sessions.is_empty());
        assert_eq!(report.cleared_pointers, 3);
    }

    #[test]
    fn a_valid_dispatch_selection_is_kept() {
        let mut ws = workspace(vec![tab("t1", Some(leaf("a")))]);
        ws.dispatch.selected = Some(sid("a"));
        let (pruned, report) = prune(ws.clone());
        assert_eq!(pruned, ws);
        assert!(report.is_empty());
    }

    #[test]
    fn links_to_missing_sessions_are_cleared_and_links_to_existing_ones_survive() {
        let mut ws = workspace(vec![tab("t1", Some(leaf("live")))]);
        add_parked(&mut ws, "parent", "t1");
        add_parked(&mut ws, "child", "t1");
        add_parked(&mut ws, "to-live", "t1");
        add_parked(&mut ws, "to-gone", "t1");
        link(&mut ws, "child", "parent");
        link(&mut ws, "to-live", "live");
        link(&mut ws, "to-gone", "gone");
        let m = ws.sessions.get_mut(&sid("child")).unwrap();
        m.relationships.orchestration_parent = Some(sid("parent"));
        m.relationships.orchestration_root = Some(sid("gone"));
        m.relationships.run = Some("run-1".into());

        let (pruned, report) = prune(ws);

        let rel = |id: &str| pruned.sessions[&sid(id)].relationships.clone();
        assert_eq!(rel("child").linked_parent, Some(sid("parent")));
        assert_eq!(rel("child").orchestration_parent, Some(sid("parent")));
        assert_eq!(rel("child").orchestration_root, None);
        assert_eq!(rel("child").run.as_deref(), Some("run-1"));
        assert_eq!(rel("to-live").linked_parent, Some(sid("live")));
        assert_eq!(rel("to-gone").linked_parent, None);
        assert_eq!(report.cleared_pointers, 2);
    }

    #[test]
    fn a_link_to_a_session_dropped_in_the_same_prune_is_cleared() {
        let mut ws = workspace(vec![tab("t1", Some(leaf("a")))]);
        add_parked(&mut ws, "ghost", "closed");
        link(&mut ws, "a", "ghost");
        let (pruned, _) = prune(ws);
        assert_eq!(pruned.sessions[&sid("a")].relationships.linked_parent, None);
        assert!(prune(pruned).1.is_empty());
    }

    #[test]
    fn a_session_held_by_several_owners_keeps_the_strongest_placement() {
        let mut ws = workspace(vec![tab("t1", Some(v(leaf("a"), leaf("b"))))]);
        add_parked(&mut ws, "a", "t1");
        add_buried(&mut ws, "a", "t1", None);
        add_parked(&mut ws, "k", "t1");
        add_buried(&mut ws, "k", "t1", None);

        let (pruned, report) = prune(ws);

        assert!(pruned.tabs[0].contains_leaf(&sid("a")));
        assert_eq!(
            pruned.parked.keys().cloned().collect::<Vec<_>>(),
            ids(&["k"])
        );
        assert!(pruned.buried.is_empty());
        assert_eq!(report.dropped_parked, ids(&["a"]));
        assert_eq!(report.dropped_buried, ids(&["a", "k"]));
        assert!(report.dropped_sessions.is_empty());
    }

    #[test]
    fn a_session_shown_twice_keeps_its_first_pane() {
        let mut ws = workspace(vec![
            tab("t1", Some(v(leaf("a"), h(leaf("b"), leaf("a"))))),
            tab("t2", Some(v(leaf("b"), leaf("c")))),
        ]);
        ws.tabs[1].focus = Some(sid("b"));

        let (pruned, report) = prune(ws);

        assert_eq!(pruned.tabs[0].root, Some(v(leaf("a"), leaf("b"))));
        assert_eq!(pruned.tabs[1].root, Some(leaf("c")));
        assert_eq!(pruned.tabs[1].focus, Some(sid("c")));
        assert_eq!(
            report.dropped_leaves,
            vec![(tid("t1"), sid("a")), (tid("t2"), sid("b"))]
        );
    }

    #[test]
    fn a_second_tab_with_the_same_id_is_dropped() {
        let mut ws = workspace(vec![tab("t1", Some(leaf("a"))), tab("t1", Some(leaf("b")))]);
        add_parked(&mut ws, "k", "t1");
        let (pruned, report) = prune(ws);
        assert_eq!(pruned.tabs.len(), 1);
        assert_eq!(report.dropped_leaves, vec![(tid("t1"), sid("b"))]);
        assert_eq!(report.dropped_sessions, ids(&["b"]));
        assert!(pruned.parked.contains_key(&sid("k")));
    }

    #[test]
    fn a_parked_record_filed_under_another_key_is_refiled_under_its_own_session() {
        let mut ws = workspace(vec![tab("t1", Some(leaf("a")))]);
        add_meta(&mut ws, "k");
        add_meta(&mut ws, "m");
        let record = |s: &str| ParkedRecord {
            session: sid(s),
            tab: tid("t1"),
            parked_at_ms: 7,
        };
        ws.parked.insert(sid("wrong-key"), record("k"));
        // Two records for "m": the one filed correctly wins.
        ws.parked.insert(
            sid("another-wrong-key"),
            ParkedRecord {
                parked_at_ms: 1,
                ..record("m")
            },
        );
        ws.parked.insert(sid("m"), record("m"));

        let (pruned, report) = prune(ws);

        assert_eq!(
            pruned.parked.keys().cloned().collect::<Vec<_>>(),
            ids(&["k", "m"])
        );
        assert_eq!(pruned.parked[&sid("k")].session, sid("k"));
        assert_eq!(pruned.parked[&sid("m")].parked_at_ms, 7);
        assert_eq!(report.repaired, 2);
        assert!(report.dropped_sessions.is_empty());
    }

    #[test]
    fn focus_outside_its_tab_and_a_missing_active_tab_are_repaired() {
        let mut ws = workspace(vec![
            tab("t1", Some(v(leaf("a"), leaf("b")))),
            tab("t2", None),
        ]);
        ws.tabs[0].focus = Some(sid("nowhere"));
        ws.tabs[1].focus = Some(sid("a"));
        ws.active_tab = Some(tid("closed"));

        let (pruned, report) = prune(ws);

        assert_eq!(pruned.tabs[0].focus, Some(sid("a")));
        assert_eq!(pruned.tabs[1].focus, None);
        assert_eq!(pruned.active_tab, Some(tid("t1")));
        assert_eq!(report.cleared_pointers, 3);

        let (no_tabs, _) = prune(Workspace {
            active_tab: Some(tid("closed")),
            ..Workspace::default()
        });
        assert_eq!(no_tabs.active_tab, None);
    }

    #[test]
    fn pins_are_filtered_to_existing_sessions_and_deduplicated_in_order() {
        let mut ws = workspace(vec![tab("t1", Some(v(leaf("a"), v(leaf("b"), leaf("c")))))]);
        ws.pins = ids(&["c", "gone", "a", "c", "b", "a"]);
        let (pruned, report) = prune(ws);
        assert_eq!(pruned.pins, ids(&["c", "a", "b"]));
        assert_eq!(report.cleared_pointers, 3);
    }

    #[test]
    fn out_of_range_and_nan_ratios_are_repaired() {
        let mut ws = workspace(vec![tab(
            "t1",
            Some(split(
                Direction::Vertical,
                f32::NAN,
                leaf("a"),
                split(Direction::Horizontal, 3.0, leaf("b"), leaf("c")),
            )),
        )]);
        add_buried(&mut ws, "z", "t1", Some("a"));
        ws.buried.get_mut(&sid("z")).unwrap().ratio = Some(-1.0);

        let (pruned, report) = prune(ws);

        let Some(Tile::Split { ratio, b, .. }) = &pruned.tabs[0].root else {
            panic!("split expected");
        };
        assert_eq!(*ratio, 0.5);
        assert!(matches!(**b, Tile::Split { ratio, .. } if ratio == 0.9));
        assert_eq!(pruned.buried[&sid("z")].ratio, Some(0.1));
        assert_eq!(report.repaired, 3);
    }

    #[test]
    fn a_buried_record_keeps_a_sibling_that_no_longer_exists() {
        let mut ws = workspace(vec![tab("t1", Some(leaf("a")))]);
        add_buried(&mut ws, "z", "t1", Some("long-gone"));
        let (pruned, report) = prune(ws.clone());
        assert_eq!(pruned, ws);
        assert!(report.is_empty());
    }

    #[test]
    fn pruning_twice_changes_nothing_the_second_time() {
        let mut ws = workspace(vec![
            tab("t1", Some(v(leaf("a"), h(leaf("b"), leaf("a"))))),
            tab("t2", None),
        ]);
        ws.sessions.remove(&sid("b"));
        add_parked(&mut ws, "ghost", "closed");
        add_parked(&mut ws, "k", "t2");
        link(&mut ws, "k", "ghost");
        ws.pins = ids(&["ghost", "k", "k"]);
        ws.dispatch.selected = Some(sid("b"));
        ws.active_tab = Some(tid("closed"));

        let (once, first) = prune(ws);
        let (twice, second) = prune(once.clone());

        assert!(!first.is_empty());
        assert!(second.is_empty(), "{second:?}");
        assert_eq!(once, twice);
        assert!(is_closed(&once));
        assert!(live_set(&once).is_subset(&owned_set(&once)));
    }
}
