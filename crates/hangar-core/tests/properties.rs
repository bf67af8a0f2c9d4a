//! Properties of pruning and of the placement operations over arbitrary
//! workspaces, garbage included: ghosts, dangling pointers, duplicate leaves
//! and tabs, misfiled records, NaN and out-of-range ratios.

use std::collections::{BTreeMap, BTreeSet};

use hangar_core::placement::PanePosition;
use hangar_core::{
    BuriedRecord, Direction, DispatchLane, ParkedRecord, Provider, RestorePlan, SessionId,
    SessionMeta, Side, Tab, TabId, Tile, Workspace, live_set, owned_set, prune,
};
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;

const SESSIONS: usize = 12;
const TABS: usize = 4;

fn sid(i: usize) -> SessionId {
    SessionId::new(format!("s{i}"))
}

fn tid(i: usize) -> TabId {
    TabId::new(format!("t{i}"))
}

fn meta(i: usize) -> SessionMeta {
    SessionMeta::new(sid(i), Provider::Shell, "/work")
}

fn any_id() -> impl Strategy<Value = usize> {
    0..SESSIONS
}

fn any_ratio() -> impl Strategy<Value = f32> {
    prop_oneof![
        4 => 0.1f32..=0.9,
        1 => Just(f32::NAN),
        1 => -2.0f32..3.0,
    ]
}

fn any_direction() -> impl Strategy<Value = Direction> {
    prop_oneof![Just(Direction::Vertical), Just(Direction::Horizontal)]
}

fn any_side() -> impl Strategy<Value = Side> {
    prop_oneof![Just(Side::A), Just(Side::B)]
}

fn any_tree() -> impl Strategy<Value = Tile> {
    let leaf = any_id().prop_map(|i| Tile::leaf(sid(i)));
    leaf.prop_recursive(3, 6, 2, |inner| {
        (any_direction(), any_ratio(), inner.clone(), inner).prop_map(|(direction, ratio, a, b)| {
            Tile::Split {
                direction,
                ratio,
                a: Box::new(a),
                b: Box::new(b),
            }
        })
    })
}

/// Mostly tab `index`; sometimes another id, possibly a duplicate.
fn any_tab(index: usize) -> impl Strategy<Value = Tab> {
    (
        prop_oneof![4 => Just(index), 1 => 0..TABS + 1],
        proptest::option::weighted(0.8, any_tree()),
        proptest::option::of(any_id()),
    )
        .prop_map(|(t, root, focus)| {
            let mut tab = Tab::new(tid(t), format!("tab {t}"));
            tab.root = root;
            tab.focus = focus.map(sid);
            tab
        })
}

fn any_meta(key: usize) -> impl Strategy<Value = (usize, SessionMeta)> {
    (
        Just(key),
        prop::bool::weighted(0.05),
        any_id(),
        [
            proptest::option::of(0..SESSIONS + 3),
            proptest::option::of(0..SESSIONS + 3),
            proptest::option::of(0..SESSIONS + 3),
        ],
    )
        .prop_map(|(key, misfiled, own, links)| {
            let mut m = meta(if misfiled { own } else { key });
            m.relationships.linked_parent = links[0].map(sid);
            m.relationships.orchestration_parent = links[1].map(sid);
            m.relationships.orchestration_root = links[2].map(sid);
            (key, m)
        })
}

prop_compose! {
    fn any_workspace()(
        tab_count in prop_oneof![1 => Just(0), 4 => 1..=TABS],
        tabs in [any_tab(0), any_tab(1), any_tab(2), any_tab(3)],
        active in proptest::option::of(0..TABS + 1),
        present in prop::collection::vec(prop::bool::weighted(0.85), SESSIONS),
        sessions in (0..SESSIONS).map(any_meta).collect::<Vec<_>>(),
        parked in prop::collection::vec((any_id(), any_id(), 0..TABS + 1), 0..10),
        buried in prop::collection::vec(
            (any_id(), any_id(), 0..TABS + 2, proptest::option::of(any_id()),
             proptest::option::of(any_side()), proptest::option::of(any_direction()),
             proptest::option::of(any_ratio())),
            0..5,
        ),
        pins in prop::collection::vec(0..SESSIONS + 3, 0..6),
        selected in proptest::option::of(0..SESSIONS + 3),
        lanes in prop::collection::vec(prop::collection::vec(0..SESSIONS + 3, 0..4), 0..3),
    ) -> Workspace {
        let mut ws = Workspace {
            tabs: tabs.into_iter().take(tab_count).collect(),
            active_tab: active.map(tid),
            ..Workspace::default()
        };
        ws.sessions = sessions
            .into_iter()
            .zip(present)
            .filter(|(_, present)| *present)
            .map(|((key, m), _)| (sid(key), m))
            .collect();
        // Keys and records mostly agree; a mismatch is a misfiled record.
        ws.parked = parked
            .into_iter()
            .map(|(key, session, tab)| {
                let session = if key % 4 == 0 { session } else { key };
                (sid(key), ParkedRecord { session: sid(session), tab: tid(tab), parked_at_ms: 0 })
            })
            .collect();
        ws.buried = buried
            .into_iter()
            .map(|(key, session, tab, sibling, side, direction, ratio)| {
                let session = if key % 4 == 0 { session } else { key };
                let record = BuriedRecord {
                    session: sid(session),
                    source_tab: tid(tab),
                    sibling: sibling.map(sid),
                    side,
                    direction,
                    ratio,
                    buried_at_ms: 0,
                };
                (sid(key), record)
            })
            .collect();
        ws.pins = pins.into_iter().map(sid).collect();
        ws.dispatch.mode = Some("lanes".into());
        ws.dispatch.selected = selected.map(sid);
        ws.dispatch.lanes = lanes
            .into_iter()
            .enumerate()
            .map(|(i, l)| DispatchLane { name: format!("lane {i}"), sessions: l.into_iter().map(sid).collect() })
            .collect();
        ws
    }
}

/// Which session or tab an operation names: mostly one that exists in the
/// workspace at that point (from the pool the operation is about), sometimes
/// an arbitrary id, so that refusals are exercised too.
#[derive(Clone, Debug)]
enum Pick {
    Existing(prop::sample::Index),
    Raw(usize),
}

fn any_pick(raw: usize) -> impl Strategy<Value = Pick> {
    prop_oneof![
        4 => any::<prop::sample::Index>().prop_map(Pick::Existing),
        1 => (0..raw).prop_map(Pick::Raw),
    ]
}

fn pick<T: Clone>(pool: Vec<T>, p: &Pick, raw: impl Fn(usize) -> T) -> T {
    match p {
        Pick::Existing(i) if !pool.is_empty() => pool[i.index(pool.len())].clone(),
        Pick::Existing(i) => raw(i.index(SESSIONS)),
        Pick::Raw(n) => raw(*n),
    }
}

#[derive(Clone, Debug)]
enum Op {
    AddTab(usize),
    AddPane {
        id: usize,
        tab: Pick,
        split: Option<(Pick, Direction)>,
    },
    AddParked {
        id: usize,
        tab: Pick,
    },
    Park(Pick),
    Unpark(Pick, Option<Pick>),
    Bury(Pick),
    Unbury(Pick, usize),
    Remove(Vec<Pick>),
    RemoveTab(Pick),
    Pin(Pick),
    Unpin(Pick),
    SetRatio(Pick, f32),
}

fn any_op() -> impl Strategy<Value = Op> {
    let new_id = || 0..SESSIONS * 3;
    let session = || any_pick(SESSIONS + 2);
    let tab = || any_pick(TABS + 2);
    prop_oneof![
        (0..TABS + 2).prop_map(Op::AddTab),
        (
            new_id(),
            tab(),
            proptest::option::of((session(), any_direction()))
        )
            .prop_map(|(id, tab, split)| Op::AddPane { id, tab, split }),
        (new_id(), tab()).prop_map(|(id, tab)| Op::AddParked { id, tab }),
        session().prop_map(Op::Park),
        (session(), proptest::option::of(tab())).prop_map(|(id, tab)| Op::Unpark(id, tab)),
        session().prop_map(Op::Bury),
        (session(), 0..TABS + 2).prop_map(|(id, tab)| Op::Unbury(id, tab)),
        prop::collection::vec(session(), 0..3).prop_map(Op::Remove),
        tab().prop_map(Op::RemoveTab),
        session().prop_map(Op::Pin),
        session().prop_map(Op::Unpin),
        (session(), any_ratio()).prop_map(|(id, r)| Op::SetRatio(id, r)),
    ]
}

fn panes(ws: &Workspace) -> Vec<SessionId> {
    ws.tabs.iter().flat_map(Tab::leaves).collect()
}

fn all_sessions(ws: &Workspace) -> Vec<SessionId> {
    ws.sessions.keys().cloned().collect()
}

/// Apply `op`; false when the operation refused.
fn apply(ws: &mut Workspace, op: &Op) -> bool {
    let tab_ids: Vec<TabId> = ws.tabs.iter().map(|t| t.id.clone()).collect();
    let tab = |p: &Pick| pick(tab_ids.clone(), p, tid);
    match op {
        Op::AddTab(t) => ws.add_tab(Tab::new(tid(*t), "new")).is_ok(),
        Op::AddPane { id, tab: t, split } => {
            let position = match split {
                Some((target, direction)) => PanePosition::Split {
                    target: pick(panes(ws), target, sid),
                    direction: *direction,
                },
                None => PanePosition::Auto,
            };
            ws.add_pane_session(meta(*id), &tab(t), position).is_ok()
        }
        Op::AddParked { id, tab: t } => ws.add_parked_session(meta(*id), &tab(t), 1).is_ok(),
        Op::Park(p) => ws.park(&pick(panes(ws), p, sid), 2).is_ok(),
        Op::Unpark(p, t) => {
            let id = pick(ws.parked.keys().cloned().collect(), p, sid);
            ws.unpark(&id, t.as_ref().map(tab).as_ref(), PanePosition::Auto)
                .is_ok()
        }
        Op::Bury(p) => ws.bury(&pick(panes(ws), p, sid), 3).is_ok(),
        Op::Unbury(p, t) => {
            let id = pick(ws.buried.keys().cloned().collect(), p, sid);
            ws.unbury(&id, || Tab::new(tid(*t), "fallback")).is_ok()
        }
        Op::Remove(ps) => {
            let ids: Vec<SessionId> = ps.iter().map(|p| pick(all_sessions(ws), p, sid)).collect();
            ws.remove_sessions(&ids);
            true
        }
        Op::RemoveTab(t) => ws.remove_tab(&tab(t)).is_ok(),
        Op::Pin(p) => ws.pin(&pick(all_sessions(ws), p, sid)).is_ok(),
        Op::Unpin(p) => ws.unpin(&pick(ws.pins.clone(), p, sid)).is_ok(),
        Op::SetRatio(p, r) => ws.set_ratio(&pick(panes(ws), p, sid), *r).is_ok(),
    }
}

fn check_closed(ws: &Workspace) -> Result<(), TestCaseError> {
    let (pruned, report) = prune(ws.clone());
    prop_assert!(report.is_empty(), "prune found {report:?}");
    prop_assert_eq!(&pruned, ws);

    let owned = owned_set(ws);
    let live = live_set(ws);
    prop_assert!(live.is_subset(&owned));
    let with_meta: BTreeSet<SessionId> = ws.sessions.keys().cloned().collect();
    prop_assert_eq!(&owned, &with_meta, "owned sessions and metadata differ");
    for (key, m) in &ws.sessions {
        prop_assert_eq!(key, &m.id);
    }

    let mut placements: BTreeMap<&SessionId, usize> = BTreeMap::new();
    let mut tab_ids = BTreeSet::new();
    for tab in &ws.tabs {
        prop_assert!(tab_ids.insert(&tab.id), "tab {} twice", tab.id);
        for leaf in tab.leaves() {
            *placements
                .entry(ws.sessions.get_key_value(&leaf).map(|(k, _)| k).unwrap())
                .or_default() += 1;
        }
        if let Some(focus) = &tab.focus {
            prop_assert!(
                tab.contains_leaf(focus),
                "focus {focus} not in tab {}",
                tab.id
            );
        }
    }
    for (key, p) in &ws.parked {
        prop_assert_eq!(key, &p.session);
        *placements.entry(key).or_default() += 1;
    }
    for (key, b) in &ws.buried {
        prop_assert_eq!(key, &b.session);
        *placements.entry(key).or_default() += 1;
    }
    for (id, count) in placements {
        prop_assert_eq!(count, 1, "{} has {} placements", id, count);
    }
    if let Some(active) = &ws.active_tab {
        prop_assert!(ws.tab(active).is_some());
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn pruning_is_idempotent(ws in any_workspace()) {
        let (once, _) = prune(ws);
        let (twice, second) = prune(once.clone());
        prop_assert!(second.is_empty(), "second prune found {second:?}");
        prop_assert_eq!(twice, once);
    }

    #[test]
    fn a_pruned_workspace_is_closed(ws in any_workspace()) {
        let (pruned, _) = prune(ws);
        check_closed(&pruned)?;
    }

    #[test]
    fn an_empty_prune_report_means_nothing_changed(ws in any_workspace()) {
        let (pruned, report) = prune(ws.clone());
        if report.is_empty() {
            prop_assert_eq!(pruned, ws);
        }
    }

    #[test]
    fn pruning_never_invents_a_session(ws in any_workspace()) {
        let before: BTreeSet<SessionId> = ws.sessions.values().map(|m| m.id.clone()).collect();
        let (pruned, report) = prune(ws);
        for id in pruned.sessions.keys() {
            prop_assert!(before.contains(id));
        }
        let mut sorted = report.dropped_sessions.clone();
        sorted.sort();
        sorted.dedup();
        prop_assert_eq!(sorted, report.dropped_sessions);
    }

    #[test]
    fn a_restore_plan_spawns_the_live_set_and_hibernates_the_rest_of_the_owned(ws in any_workspace()) {
        let plan = RestorePlan::new(ws);
        let spawn: BTreeSet<SessionId> = plan.spawn.iter().cloned().collect();
        prop_assert_eq!(spawn.len(), plan.spawn.len(), "a session spawned twice");
        prop_assert_eq!(&spawn, &live_set(&plan.workspace));
        prop_assert!(spawn.is_disjoint(&plan.hibernate));
        let all: BTreeSet<SessionId> = spawn.union(&plan.hibernate).cloned().collect();
        prop_assert_eq!(all, owned_set(&plan.workspace));
    }

    #[test]
    fn the_first_forks_from_the_tabs_and_their_leaves_rows_are_the_full_plans_spawns(
        ws in any_workspace(),
    ) {
        // What a store holds: each record under its own id (a row whose id
        // differs from its record's is set aside at load).
        let mut ws = ws;
        ws.sessions.retain(|id, m| *id == m.id);
        // The daemon's first look: tabs, active tab, leaves' metadata.
        let leaves: BTreeSet<SessionId> = ws.tabs.iter().flat_map(Tab::leaves).collect();
        let first_look = Workspace {
            tabs: ws.tabs.clone(),
            active_tab: ws.active_tab.clone(),
            sessions: ws
                .sessions
                .iter()
                .filter(|(id, _)| leaves.contains(*id))
                .map(|(id, m)| (id.clone(), m.clone()))
                .collect(),
            settings: ws.settings.clone(),
            ..Workspace::default()
        };
        let forks = hangar_core::restore_plan::first_forks(&first_look);
        prop_assert_eq!(forks, RestorePlan::new(ws).spawn);
    }

    #[test]
    fn every_operation_keeps_the_model_closed_or_changes_nothing(
        ws in prop_oneof![any_workspace(), Just(Workspace::default())],
        ops in prop::collection::vec(any_op(), 1..40),
    ) {
        let (mut ws, _) = prune(ws);
        for op in &ops {
            let before = ws.clone();
            if apply(&mut ws, op) {
                check_closed(&ws).map_err(|e| TestCaseError::fail(format!("after {op:?}: {e}")))?;
            } else {
                prop_assert_eq!(&ws, &before, "refused {:?} but changed the workspace", op);
            }
        }
    }

    #[test]
    fn a_close_cascade_names_the_session_first_and_each_session_once(
        ws in any_workspace(),
        id in any_id(),
    ) {
        let (ws, _) = prune(ws);
        let cascade = ws.close_cascade(&sid(id));
        if ws.sessions.contains_key(&sid(id)) {
            prop_assert_eq!(cascade.first(), Some(&sid(id)));
        } else {
            prop_assert!(cascade.is_empty());
        }
        let unique: BTreeSet<&SessionId> = cascade.iter().collect();
        prop_assert_eq!(unique.len(), cascade.len());
        for s in &cascade {
            prop_assert!(ws.sessions.contains_key(s));
        }
    }
}
