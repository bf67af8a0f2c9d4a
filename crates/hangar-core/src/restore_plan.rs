//! Which sessions a restore spawns and which it leaves hibernated.
//!
//! Restore cost is O(visible), not O(persisted): the plan spawns the live set
//! (pane leaves) only, active tab first, then the other tabs in order, each
//! tab's leaves in reading order. Everything else owned is hibernated with its
//! metadata and relationships intact.

use std::collections::BTreeSet;

use crate::model::{SessionId, Tab, TabId, Workspace};
use crate::ownership::owned_set;
use crate::prune::{PruneReport, keep_tabs, prune};

#[derive(Clone, Debug, PartialEq)]
pub struct RestorePlan {
    /// The pruned workspace the plan was made from; this is what the daemon
    /// keeps and persists.
    pub workspace: Workspace,
    /// What pruning removed while planning.
    pub pruned: PruneReport,
    /// Sessions to spawn, in order.
    pub spawn: Vec<SessionId>,
    /// Owned sessions that stay without a process.
    pub hibernate: BTreeSet<SessionId>,
}

impl RestorePlan {
    pub fn new(ws: Workspace) -> RestorePlan {
        let (workspace, pruned) = prune(ws);
        let spawn = spawn_order(&workspace.tabs, workspace.active_tab.as_ref());
        let mut hibernate = owned_set(&workspace);
        for id in &spawn {
            hibernate.remove(id);
        }
        RestorePlan {
            workspace,
            pruned,
            spawn,
            hibernate,
        }
    }

    /// The live set size: what `status` reports as `restore.expected`.
    pub fn expected(&self) -> usize {
        self.spawn.len()
    }

    pub fn hibernated(&self) -> usize {
        self.hibernate.len()
    }
}

/// The sessions [`RestorePlan::new`] spawns, in its order, from a first
/// look at the workspace: its tabs, its active tab and the metadata of its
/// pane leaves' sessions (nothing else of it is read). The tabs are repaired
/// as `prune` repairs them, which depends on the sessions only through
/// whether a leaf has metadata, so this equals the full plan's `spawn` for
/// the workspace the first look was taken of: a restore can fork its panes
/// before the other sessions are loaded.
pub fn first_forks(first_look: &Workspace) -> Vec<SessionId> {
    let mut ignored = PruneReport::default();
    let kept = keep_tabs(
        first_look.tabs.clone(),
        first_look.active_tab.clone(),
        |id| first_look.sessions.contains_key(id),
        &mut ignored,
    );
    spawn_order(&kept.tabs, kept.active_tab.as_ref())
}

/// Active tab first, then the other tabs in order, each tab's leaves in
/// reading order.
fn spawn_order(tabs: &[Tab], active_tab: Option<&TabId>) -> Vec<SessionId> {
    let active = active_tab.and_then(|id| tabs.iter().find(|t| &t.id == id));
    let others = tabs.iter().filter(|t| Some(&t.id) != active.map(|a| &a.id));
    active
        .into_iter()
        .chain(others)
        .flat_map(Tab::leaves)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::{field_workspace, session_id, tab_id};
    use crate::ownership::owned_set;
    use crate::test_support::{add_meta, add_parked, ids, leaf, sid, tab, tid, v, workspace};

    #[test]
    fn restore_spawns_only_panes_and_hibernates_parked_agents() {
        let mut ws = field_workspace();
        assert_eq!(ws.sessions.len(), 49);
        assert_eq!(ws.parked.len(), 40);
        ws.active_tab = Some(tab_id(1));

        let plan = RestorePlan::new(ws.clone());

        // Panes were added round robin: tab k shows sessions k, k+3, k+6.
        let order: Vec<SessionId> = [1, 4, 7, 0, 3, 6, 2, 5, 8].map(session_id).into();
        assert_eq!(plan.spawn, order);
        assert_eq!(plan.expected(), 9);
        assert_eq!(plan.hibernated(), 40);
        assert_eq!(plan.hibernate, ws.parked.keys().cloned().collect());
        assert!(plan.pruned.is_empty());
        assert_eq!(plan.workspace, ws);
    }

    #[test]
    fn restore_spawns_the_active_tab_first_then_the_others_in_reading_order() {
        let mut ws = workspace(vec![
            tab("t1", Some(v(leaf("a"), leaf("b")))),
            tab("t2", Some(v(leaf("c"), v(leaf("d"), leaf("e"))))),
            tab("t3", None),
            tab("t4", Some(leaf("f"))),
        ]);
        ws.active_tab = Some(tid("t2"));
        let plan = RestorePlan::new(ws);
        assert_eq!(plan.spawn, ids(&["c", "d", "e", "a", "b", "f"]));
    }

    #[test]
    fn hibernated_parent_to_child_links_survive_a_restore_plan() {
        let mut ws = workspace(vec![tab("t1", Some(leaf("live")))]);
        add_parked(&mut ws, "parent", "t1");
        add_parked(&mut ws, "child", "t1");
        add_parked(&mut ws, "of-live", "t1");
        add_parked(&mut ws, "of-gone", "t1");
        fn rel<'a>(ws: &'a mut Workspace, id: &str) -> &'a mut crate::model::Relationships {
            &mut ws.sessions.get_mut(&sid(id)).unwrap().relationships
        }
        rel(&mut ws, "child").orchestration_parent = Some(sid("parent"));
        rel(&mut ws, "child").orchestration_root = Some(sid("parent"));
        rel(&mut ws, "child").linked_parent = Some(sid("parent"));
        rel(&mut ws, "of-live").linked_parent = Some(sid("live"));
        rel(&mut ws, "of-gone").linked_parent = Some(sid("gone"));

        let plan = RestorePlan::new(ws);

        assert_eq!(plan.spawn, ids(&["live"]));
        assert!(plan.hibernate.contains(&sid("parent")) && plan.hibernate.contains(&sid("child")));
        let kept = |id: &str| plan.workspace.sessions[&sid(id)].relationships.clone();
        assert_eq!(kept("child").orchestration_parent, Some(sid("parent")));
        assert_eq!(kept("child").orchestration_root, Some(sid("parent")));
        assert_eq!(kept("child").linked_parent, Some(sid("parent")));
        assert_eq!(kept("of-live").linked_parent, Some(sid("live")));
        assert_eq!(kept("of-gone").linked_parent, None);
        assert_eq!(plan.pruned.cleared_pointers, 1);
    }

    #[test]
    fn a_restore_plan_prunes_first_and_never_spawns_a_pointer() {
        let mut ws = workspace(vec![tab("t1", Some(leaf("a")))]);
        add_parked(&mut ws, "ghost", "closed");
        add_meta(&mut ws, "pinned-orphan");
        ws.pins = ids(&["pinned-orphan", "ghost"]);
        ws.dispatch.selected = Some(sid("ghost"));

        let plan = RestorePlan::new(ws);

        assert_eq!(plan.spawn, ids(&["a"]));
        assert!(plan.hibernate.is_empty());
        assert_eq!(
            plan.pruned.dropped_sessions,
            ids(&["ghost", "pinned-orphan"])
        );
        assert_eq!(
            owned_set(&plan.workspace),
            plan.spawn.iter().cloned().collect()
        );
    }

    #[test]
    fn an_empty_workspace_plans_nothing() {
        let plan = RestorePlan::new(Workspace::default());
        assert!(plan.spawn.is_empty() && plan.hibernate.is_empty());
    }
}
