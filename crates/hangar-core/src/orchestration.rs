//! The rules of orchestration (DESIGN.md rule 9): which sessions an agent may
//! see and act on, and whether a close it asks for is safe.
//!
//! An agent sees only its own orchestration descendants that sit in its own
//! project tab; everything else is invisible to it. A close is refused when it
//! names the agent itself, names a session the agent cannot see, or would
//! cascade to a session that was not named. These functions only decide; they
//! never change the workspace.

use std::collections::{BTreeMap, BTreeSet};

use crate::model::{SessionId, TabId, Workspace};

/// The project tab a session belongs to (pane, parked or buried).
pub fn project_tab(ws: &Workspace, id: &SessionId) -> Option<TabId> {
    ws.placement_of(id).map(|(_, tab)| tab)
}

/// Every orchestration descendant of `ancestor` (children, their children,
/// ...), breadth first. Cycles in a hand-edited file are tolerated.
pub fn descendants(ws: &Workspace, ancestor: &SessionId) -> Vec<SessionId> {
    let mut children: BTreeMap<&SessionId, Vec<&SessionId>> = BTreeMap::new();
    for meta in ws.sessions.values() {
        if let Some(parent) = &meta.relationships.orchestration_parent {
            children.entry(parent).or_default().push(&meta.id);
        }
    }
    let mut seen: BTreeSet<&SessionId> = BTreeSet::from([ancestor]);
    let mut out: Vec<SessionId> = Vec::new();
    let mut frontier = vec![ancestor];
    while !frontier.is_empty() {
        let mut next = Vec::new();
        for parent in frontier {
            for child in children.get(parent).into_iter().flatten() {
                if seen.insert(child) {
                    out.push((*child).clone());
                    next.push(*child);
                }
            }
        }
        frontier = next;
    }
    out
}

/// The orchestration tree `id` belongs to: its recorded root, or itself
/// when it was not created by an agent.
pub fn tree_root(ws: &Workspace, id: &SessionId) -> SessionId {
    ws.sessions
        .get(id)
        .and_then(|m| m.relationships.orchestration_root.clone())
        .unwrap_or_else(|| id.clone())
}

/// How many agents the orchestration tree of `id` holds (every descendant
/// of its root). A limit on what one caller created alone would let each
/// child create as many again, so a runaway tree is bounded by this count.
pub fn tree_size(ws: &Workspace, id: &SessionId) -> usize {
    descendants(ws, &tree_root(ws, id)).len()
}

/// The sessions `caller` may see and act on: its descendants in its own
/// project tab. A caller with no tab sees nothing.
pub fn visible_agents(ws: &Workspace, caller: &SessionId) -> Vec<SessionId> {
    let Some(tab) = project_tab(ws, caller) else {
        return Vec::new();
    };
    descendants(ws, caller)
        .into_iter()
        .filter(|id| project_tab(ws, id).as_ref() == Some(&tab))
        .collect()
}

/// Why an agent's close was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CloseRefusal {
    /// An agent can never close itself.
    SelfClose,
    /// Not a descendant of the caller in its project tab.
    NotYours(SessionId),
    /// Closing the named sessions would also close these others; the whole
    /// set the close would affect is `would_close`.
    Cascade {
        beyond: Vec<SessionId>,
        would_close: Vec<SessionId>,
    },
}

/// May `caller` close exactly `named`? On success, the sessions to close (the
/// named ones, in cascade order).
pub fn check_close(
    ws: &Workspace,
    caller: &SessionId,
    named: &[SessionId],
) -> Result<Vec<SessionId>, CloseRefusal> {
    if named.contains(caller) {
        return Err(CloseRefusal::SelfClose);
    }
    let visible: BTreeSet<SessionId> = visible_agents(ws, caller).into_iter().collect();
    if let Some(stranger) = named.iter().find(|id| !visible.contains(*id)) {
        return Err(CloseRefusal::NotYours(stranger.clone()));
    }
    let named_set: BTreeSet<&SessionId> = named.iter().collect();
    let mut would_close: Vec<SessionId> = Vec::new();
    let mut seen = BTreeSet::new();
    for id in named {
        for c in ws.close_cascade(id) {
            if seen.insert(c.clone()) {
                would_close.push(c);
            }
        }
    }
    // The caller itself can be reached through a linked-child loop; that is
    // a self close too.
    if seen.contains(caller) {
        return Err(CloseRefusal::SelfClose);
    }
    let beyond: Vec<SessionId> = would_close
        .iter()
        .filter(|c| !named_set.contains(c))
        .cloned()
        .collect();
    if beyond.is_empty() {
        Ok(would_close)
    } else {
        Err(CloseRefusal::Cascade {
            beyond,
            would_close,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::*;

    /// Tab t1: pane `p` with children `a`, `b` (parked in t1), grandchild `g`
    /// under `a`, and `x` a child of `p` moved to tab t2. Pane `q` in t1 is
    /// another agent with its own child `z`.
    fn family() -> Workspace {
        let mut ws = workspace(vec![
            tab("t1", Some(v(leaf("p"), leaf("q")))),
            tab("t2", Some(leaf("other"))),
        ]);
        for (child, parent, tab) in [
            ("a", "p", "t1"),
            ("b", "p", "t1"),
            ("g", "a", "t1"),
            ("x", "p", "t2"),
            ("z", "q", "t1"),
        ] {
            add_parked(&mut ws, child, tab);
            let m = ws.sessions.get_mut(&sid(child)).unwrap();
            m.relationships.orchestration_parent = Some(sid(parent));
            m.relationships.orchestration_root = Some(sid("p"));
        }
        ws
    }

    #[test]
    fn an_agent_sees_its_descendants_in_its_own_tab_only() {
        let ws = family();
        assert_eq!(visible_agents(&ws, &sid("p")), ids(&["a", "b", "g"]));
        assert_eq!(visible_agents(&ws, &sid("a")), ids(&["g"]));
        assert_eq!(visible_agents(&ws, &sid("q")), ids(&["z"]));
        assert!(visible_agents(&ws, &sid("nobody")).is_empty());
    }

    #[test]
    fn a_tree_is_counted_from_its_root_whoever_asks() {
        let ws = family();
        // p's tree: a, b, g and x (in another tab, still created by it).
        for member in ["p", "a", "b", "g"] {
            assert_eq!(tree_size(&ws, &sid(member)), 4, "asked by {member}");
        }
        // A grandchild alone has no children, yet its tree is full-sized:
        // a per-caller count would let it create as many again.
        assert!(visible_agents(&ws, &sid("g")).is_empty());
        assert_eq!(tree_size(&ws, &sid("q")), 1);
        assert_eq!(tree_root(&ws, &sid("q")), sid("q"));
    }

    #[test]
    fn an_agent_can_never_close_itself() {
        let ws = family();
        assert_eq!(
            check_close(&ws, &sid("a"), &ids(&["a"])),
            Err(CloseRefusal::SelfClose)
        );
    }

    #[test]
    fn closing_another_agents_child_or_another_tabs_session_is_not_yours() {
        let ws = family();
        assert_eq!(
            check_close(&ws, &sid("p"), &ids(&["z"])),
            Err(CloseRefusal::NotYours(sid("z")))
        );
        assert_eq!(
            check_close(&ws, &sid("p"), &ids(&["x"])),
            Err(CloseRefusal::NotYours(sid("x")))
        );
        assert_eq!(
            check_close(&ws, &sid("p"), &ids(&["other"])),
            Err(CloseRefusal::NotYours(sid("other")))
        );
    }

    #[test]
    fn a_close_that_cascades_beyond_the_named_sessions_is_refused_with_what_it_would_close() {
        let ws = family();
        assert_eq!(
            check_close(&ws, &sid("p"), &ids(&["a"])),
            Err(CloseRefusal::Cascade {
                beyond: ids(&["g"]),
                would_close: ids(&["a", "g"]),
            })
        );
        assert_eq!(
            check_close(&ws, &sid("p"), &ids(&["a", "g"])),
            Ok(ids(&["a", "g"]))
        );
        assert_eq!(check_close(&ws, &sid("p"), &ids(&["b"])), Ok(ids(&["b"])));
    }

    #[test]
    fn a_linked_child_in_another_tab_makes_a_close_cascade() {
        let mut ws = family();
        ws.sessions
            .get_mut(&sid("other"))
            .unwrap()
            .relationships
            .linked_parent = Some(sid("b"));
        assert!(matches!(
            check_close(&ws, &sid("p"), &ids(&["b"])),
            Err(CloseRefusal::Cascade { beyond, .. }) if beyond == ids(&["other"])
        ));
    }
}
