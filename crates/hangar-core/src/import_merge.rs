//! How an imported workspace merges with the current one (`hangar import`).
//!
//! All at once or not at all: a session id or tab id already present refuses
//! the whole import, so nothing is ever half-imported. Otherwise the imported
//! tabs come after the current ones, its records and pins join theirs, and the
//! result is pruned (DESIGN.md rule 2) before anything is saved. Into an
//! empty workspace the import also brings its active tab and dispatch view.

use crate::model::{SessionId, TabId, Workspace};

/// Why an import was refused; nothing was imported.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum MergeError {
    #[error("session {0} is already in this workspace; nothing was imported")]
    SessionExists(SessionId),
    #[error("tab {id} ({title:?}) is already in this workspace; nothing was imported")]
    TabExists { id: TabId, title: String },
}

/// `current` plus `imported`, pruned, or why they cannot be merged.
pub fn merge_import(mut current: Workspace, imported: Workspace) -> Result<Workspace, MergeError> {
    if let Some(dup) = imported
        .sessions
        .keys()
        .find(|id| current.sessions.contains_key(id))
    {
        return Err(MergeError::SessionExists(dup.clone()));
    }
    if let Some(dup) = imported.tabs.iter().find(|t| current.tab(&t.id).is_some()) {
        return Err(MergeError::TabExists {
            id: dup.id.clone(),
            title: dup.title.clone(),
        });
    }
    if current.tabs.is_empty() {
        current.active_tab = imported.active_tab.clone();
        current.dispatch = imported.dispatch.clone();
    }
    current.tabs.extend(imported.tabs);
    current.sessions.extend(imported.sessions);
    current.parked.extend(imported.parked);
    current.buried.extend(imported.buried);
    for pin in imported.pins {
        if !current.pins.contains(&pin) {
            current.pins.push(pin);
        }
    }
    let (merged, _) = crate::prune::prune(current);
    Ok(merged)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::*;
    use proptest::prelude::*;

    #[test]
    fn an_import_into_an_empty_workspace_brings_its_active_tab() {
        let imported = workspace(vec![tab("t1", Some(leaf("a")))]);
        let merged = merge_import(Workspace::default(), imported.clone()).unwrap();
        assert_eq!(merged.active_tab, Some(tid("t1")));
        assert_eq!(merged, crate::prune::prune(imported).0);
    }

    #[test]
    fn imported_tabs_follow_the_current_ones_and_the_active_tab_stays() {
        let current = workspace(vec![tab("t1", Some(leaf("a")))]);
        let imported = workspace(vec![tab("t2", Some(leaf("b")))]);
        let merged = merge_import(current, imported).unwrap();
        let order: Vec<_> = merged.tabs.iter().map(|t| t.id.as_str()).collect();
        assert_eq!(order, ["t1", "t2"]);
        assert_eq!(merged.active_tab, Some(tid("t1")));
        assert!(merged.sessions.contains_key(&sid("a")) && merged.sessions.contains_key(&sid("b")));
    }

    #[test]
    fn a_session_already_present_refuses_the_whole_import() {
        let current = workspace(vec![tab("t1", Some(leaf("a")))]);
        let imported = workspace(vec![tab("t2", Some(v(leaf("b"), leaf("a"))))]);
        let e = merge_import(current, imported).unwrap_err();
        assert_eq!(e, MergeError::SessionExists(sid("a")));
        assert_eq!(
            e.to_string(),
            "session a is already in this workspace; nothing was imported"
        );
    }

    #[test]
    fn a_tab_already_present_refuses_the_whole_import() {
        let current = workspace(vec![tab("t1", Some(leaf("a")))]);
        let imported = workspace(vec![tab("t1", Some(leaf("b")))]);
        assert_eq!(
            merge_import(current, imported).unwrap_err().to_string(),
            r#"tab t1 ("t1") is already in this workspace; nothing was imported"#
        );
    }

    #[test]
    fn pins_are_joined_without_duplicates_and_dangling_ones_are_pruned() {
        let mut current = workspace(vec![tab("t1", Some(leaf("a")))]);
        current.pins = ids(&["a"]);
        let mut imported = workspace(vec![tab("t2", Some(v(leaf("b"), leaf("c"))))]);
        imported.pins = ids(&["c", "a", "gone"]);
        let merged = merge_import(current, imported).unwrap();
        assert_eq!(merged.pins, ids(&["a", "c"]));
    }

    proptest! {
        #[test]
        fn a_merge_keeps_every_session_of_both_sides_or_refuses(
            left in proptest::collection::btree_set("[a-e]", 0..4),
            right in proptest::collection::btree_set("[a-e]", 0..4),
        ) {
            let build = |tab_id: &str, ids: &std::collections::BTreeSet<String>| {
                let mut ws = workspace(vec![tab(tab_id, None)]);
                for id in ids {
                    add_parked(&mut ws, id, tab_id);
                }
                ws
            };
            let result = merge_import(build("l", &left), build("r", &right));
            match result {
                Ok(merged) => {
                    prop_assert!(left.is_disjoint(&right));
                    prop_assert_eq!(merged.sessions.len(), left.len() + right.len());
                }
                Err(MergeError::SessionExists(id)) => {
                    prop_assert!(left.contains(id.as_str()) && right.contains(id.as_str()));
                }
                Err(e) => prop_assert!(false, "unexpected {e}"),
            }
        }
    }
}
