//! Ready-made workspaces for benchmarks and tests, in this crate and in the
//! crates above it (the store's load/save bench uses `large_workspace`).
//!
//! Built only through the placement operations, so every fixture is closed:
//! `prune` finds nothing to do in it.

use crate::model::{
    IdSource, Provider, ProviderSessionId, SessionId, SessionMeta, Tab, TabId, Workspace,
};
use crate::placement::PanePosition;

const TABS: usize = 3;

/// `total` sessions: `panes` of them shown over three tabs (round robin),
/// the rest alternately parked and buried. Every session has a provider
/// session id and a title; parked sessions form orchestration trees of five
/// (a root and four children).
pub fn large_workspace(total: usize, panes: usize) -> Workspace {
    build(total, panes, true)
}

/// The field report that motivated hangar: 49 sessions, 9 of them in panes
/// over three tabs, 40 parked, with orchestration links among the parked.
pub fn field_workspace() -> Workspace {
    build(49, 9, false)
}

pub fn tab_id(index: usize) -> TabId {
    TabId::new(format!("tab-{index}"))
}

pub fn session_id(index: usize) -> SessionId {
    SessionId::new(format!("s{index:05}"))
}

fn meta(index: usize) -> SessionMeta {
    let provider = match index % 3 {
        0 => Provider::Claude,
        1 => Provider::Codex,
        _ => Provider::Opencode,
    };
    let mut meta = SessionMeta::new(
        session_id(index),
        provider,
        format!("/home/dev/project-{}", index % TABS),
    );
    meta.title = format!("agent {index}");
    meta.provider_session = Some(ProviderSessionId::new(
        format!("00000000-0000-4000-8000-{index:012}"),
        IdSource::Transcript,
    ));
    meta.created_at_ms = 1_700_000_000_000 + index as u64 * 1_000;
    meta.last_active_ms = meta.created_at_ms + 60_000;
    meta
}

fn build(total: usize, panes: usize, with_buried: bool) -> Workspace {
    let panes = panes.min(total);
    let mut ws = Workspace::default();
    for t in 0..TABS {
        let mut tab = Tab::new(tab_id(t), format!("project {t}"));
        tab.cwd = Some(format!("/home/dev/project-{t}"));
        // Fresh ids on an empty workspace: add_tab cannot fail.
        ws.add_tab(tab).expect("fixture tab ids are unique");
    }
    for i in 0..panes {
        ws.add_pane_session(meta(i), &tab_id(i % TABS), PanePosition::Auto)
            .expect("fixture session ids are unique and their tabs exist");
    }
    let mut tree_root = None;
    for (n, i) in (panes..total).enumerate() {
        let tab = tab_id(i % TABS);
        if with_buried && n % 2 == 1 {
            ws.add_pane_session(meta(i), &tab, PanePosition::Auto)
                .expect("fixture session ids are unique and their tabs exist");
            ws.bury(&session_id(i), 1_700_000_500_000)
                .expect("the session was just added as a pane");
            continue;
        }
        let mut m = meta(i);
        match tree_root {
            Some(root) if n % 5 != 0 => {
                m.relationships.orchestration_parent = Some(session_id(root));
                m.relationships.orchestration_root = Some(session_id(root));
                m.relationships.run = Some(format!("run-{root}"));
            }
            _ => tree_root = Some(i),
        }
        ws.add_parked_session(m, &tab, 1_700_000_400_000)
            .expect("fixture session ids are unique and their tabs exist");
    }
    ws
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ownership::{live_set, owned_set};
    use crate::prune::is_closed;

    #[test]
    fn the_large_workspace_is_closed_with_the_requested_counts() {
        let ws = large_workspace(1_000, 9);
        assert!(is_closed(&ws));
        assert_eq!(ws.sessions.len(), 1_000);
        assert_eq!(live_set(&ws).len(), 9);
        assert_eq!(ws.parked.len() + ws.buried.len(), 991);
        assert!(ws.tabs.iter().all(|t| t.leaves().len() == 3));
        assert_eq!(owned_set(&ws).len(), 1_000);
    }

    #[test]
    fn the_field_workspace_has_49_sessions_9_panes_and_40_parked_with_links() {
        let ws = field_workspace();
        assert!(is_closed(&ws));
        assert_eq!(
            (ws.sessions.len(), live_set(&ws).len(), ws.parked.len()),
            (49, 9, 40)
        );
        assert!(ws.buried.is_empty());
        assert!(
            ws.sessions
                .values()
                .all(|m| m.durable_provider_id().is_some() && !m.title.is_empty())
        );
        let linked = ws
            .sessions
            .values()
            .filter(|m| m.relationships.orchestration_parent.is_some())
            .count();
        assert_eq!(linked, 32);
    }
}
