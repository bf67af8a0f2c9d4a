//! Owned versus live: the two sets rule 1 of DESIGN.md is about.
//!
//! *Owned* = every pane leaf, every parked record whose project tab exists,
//! every buried record. *Live at restore* = pane leaves only. Nothing else (a
//! pin, a dispatch selection, a lane, a relationship) ever owns a session.

use std::collections::BTreeSet;

use crate::model::{SessionId, Tab, Workspace};

/// Every session some owner record holds. Computed from the owner records
/// alone: whether each has metadata is `prune`'s business.
pub fn owned_set(ws: &Workspace) -> BTreeSet<SessionId> {
    let mut owned = live_set(ws);
    owned.extend(
        ws.parked
            .values()
            .filter(|p| ws.tab(&p.tab).is_some())
            .map(|p| p.session.clone()),
    );
    owned.extend(ws.buried.values().map(|b| b.session.clone()));
    owned
}

/// The sessions a restore spawns: pane leaves only.
pub fn live_set(ws: &Workspace) -> BTreeSet<SessionId> {
    ws.tabs.iter().flat_map(Tab::leaves).collect()
}

/// Sessions with metadata that no owner holds.
pub fn unowned_sessions(ws: &Workspace) -> BTreeSet<SessionId> {
    let owned = owned_set(ws);
    ws.sessions
        .keys()
        .filter(|id| !owned.contains(*id))
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{
        add_buried, add_meta, add_parked, ids, leaf, sid, tab, v, workspace,
    };

    fn set(list: &[&str]) -> BTreeSet<SessionId> {
        ids(list).into_iter().collect()
    }

    #[test]
    fn owned_is_pane_leaves_plus_parked_plus_buried_and_live_is_pane_leaves_only() {
        let mut ws = workspace(vec![
            tab("t1", Some(v(leaf("p1"), leaf("p2")))),
            tab("t2", Some(leaf("p3"))),
        ]);
        add_parked(&mut ws, "k1", "t1");
        add_parked(&mut ws, "k2", "t2");
        add_buried(&mut ws, "b1", "t1", Some("p1"));

        assert_eq!(owned_set(&ws), set(&["p1", "p2", "p3", "k1", "k2", "b1"]));
        assert_eq!(live_set(&ws), set(&["p1", "p2", "p3"]));
        assert!(unowned_sessions(&ws).is_empty());
    }

    #[test]
    fn without_tabs_the_live_set_is_empty_even_with_parked_and_buried_records() {
        let mut ws = workspace(vec![]);
        add_parked(&mut ws, "k1", "gone");
        add_buried(&mut ws, "b1", "gone", None);

        assert!(live_set(&ws).is_empty());
        // Every buried record is owned; a parked record needs its tab.
        assert_eq!(owned_set(&ws), set(&["b1"]));
    }

    #[test]
    fn a_parked_record_whose_project_tab_no_longer_exists_is_not_owned() {
        let mut ws = workspace(vec![tab("t1", None)]);
        add_parked(&mut ws, "real", "t1");
        add_parked(&mut ws, "ghost", "closed-tab");

        assert_eq!(owned_set(&ws), set(&["real"]));
        assert_eq!(unowned_sessions(&ws), set(&["ghost"]));
    }

    #[test]
    fn pins_dispatch_and_links_never_own_a_session() {
        let mut ws = workspace(vec![tab("t1", Some(leaf("p1")))]);
        add_meta(&mut ws, "pointed-at");
        ws.pins.push(sid("pointed-at"));
        ws.dispatch.selected = Some(sid("pointed-at"));
        ws.dispatch.lanes.push(crate::model::DispatchLane {
            name: "todo".into(),
            sessions: ids(&["pointed-at"]),
        });
        if let Some(m) = ws.sessions.get_mut(&sid("p1")) {
            m.relationships.linked_parent = Some(sid("pointed-at"));
        }

        assert_eq!(unowned_sessions(&ws), set(&["pointed-at"]));
    }
}
