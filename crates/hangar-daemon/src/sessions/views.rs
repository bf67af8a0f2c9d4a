//! The rows people are shown, read from the state: a session's view with
//! its run state and relationships, the counts, the failed list, the tabs.
//!
//! Only reads; never edits the model or the runtimes.

use hangar_core::{Placement, SessionId};
use hangar_protocol::view::{SessionCounts, SessionView, TabView, WorktreeView};

use super::state::{RunState, State};

/// Fill in whether each row's worktree folder exists: one stat per row with
/// a worktree, made off the lock.
pub(super) fn with_worktree_folders(mut rows: Vec<SessionView>) -> Vec<SessionView> {
    for w in rows.iter_mut().filter_map(|r| r.worktree.as_mut()) {
        w.exists = std::path::Path::new(&w.path).is_dir();
    }
    rows
}

impl State {
    pub fn session_view(&self, id: &SessionId) -> Option<SessionView> {
        let duplicates = hangar_core::ledger::duplicates_of(&self.ws, id);
        self.session_view_with(id, duplicates.iter().map(|s| s.to_string()).collect())
    }

    /// Every session's view in display order. The duplicate groups are found
    /// once: asking per session made `ls` quadratic (100,000 sessions never
    /// answered).
    pub fn ordered_session_views(&self) -> Vec<SessionView> {
        let mut duplicates: std::collections::HashMap<SessionId, Vec<String>> =
            std::collections::HashMap::new();
        for group in hangar_core::ledger::duplicate_groups(&self.ws) {
            for id in &group.sessions {
                let others = group.sessions.iter().filter(|o| *o != id);
                duplicates.insert(id.clone(), others.map(|o| o.to_string()).collect());
            }
        }
        self.ordered_sessions()
            .iter()
            .filter_map(|id| self.session_view_with(id, duplicates.remove(id).unwrap_or_default()))
            .collect()
    }

    fn session_view_with(&self, id: &SessionId, duplicate_of: Vec<String>) -> Option<SessionView> {
        let meta = self.ws.sessions.get(id)?;
        let (placement, tab) = match self.ws.placement_of(id) {
            Some((p, t)) => (p, Some(t)),
            None => (Placement::Parked, None),
        };
        let rt = self.runtimes.get(id);
        let state = self.shown_state(id);
        let pid = rt
            .filter(|r| matches!(r.state, RunState::Live | RunState::Spawning))
            .and_then(|r| r.proc.as_ref())
            .map(|p| p.pid);
        let reason = match &state {
            RunState::Failed(r) => Some(r.clone()),
            RunState::Exited(c) => Some(format!("exited with code {c}")),
            _ => None,
        };
        let rel = &meta.relationships;
        Some(SessionView {
            id: id.to_string(),
            provider: meta.provider.name().to_owned(),
            cwd: meta.cwd.clone(),
            title: meta.title.clone(),
            placement: placement.name().to_owned(),
            tab: tab.map(|t| t.to_string()),
            state: state.name().to_owned(),
            pid,
            provider_session_id: meta.provider_session.as_ref().map(|p| p.id.clone()),
            provider_session_source: meta.provider_session.as_ref().and_then(|p| {
                p.source.map(|s| {
                    serde_json::to_value(s)
                        .ok()
                        .and_then(|v| v.as_str().map(str::to_owned))
                        .unwrap_or_default()
                })
            }),
            pinned: self.ws.is_pinned(id),
            parent: rel.orchestration_parent.as_ref().map(|s| s.to_string()),
            root: rel.orchestration_root.as_ref().map(|s| s.to_string()),
            run: rel.run.clone(),
            linked_parent: rel.linked_parent.as_ref().map(|s| s.to_string()),
            role: rel.role.clone(),
            reason,
            started: rt
                .and_then(|r| r.resumed)
                .map(|r| if r { "resumed" } else { "fresh" }.to_owned()),
            dangerous: meta.dangerous,
            exit_code: match state {
                RunState::Exited(c) => Some(c),
                _ => None,
            },
            duplicate_of,
            // Whether the folder is there is looked at after the lock is let go
            // (`with_worktree_folders`): no stat under the lock.
            worktree: meta.worktree.as_ref().map(|w| WorktreeView {
                path: w.path.clone(),
                branch: w.branch.clone(),
                base: w.base.clone(),
                exists: false,
                dirty: None,
                ahead: None,
                behind: None,
            }),
            // Filled in from the proxy by the caller (`handlers::sessions::list`).
            usage: None,
            // Filled in by the caller from the activity board (`handlers::sessions::list`).
            activity: "unknown".to_owned(),
            activity_since: None,
        })
    }

    pub fn counts(&self) -> SessionCounts {
        let mut c = SessionCounts {
            total: self.ws.sessions.len(),
            ..Default::default()
        };
        for id in self.ws.sessions.keys() {
            match self.ws.placement_of(id).map(|(p, _)| p) {
                Some(Placement::Pane) => c.panes += 1,
                Some(Placement::Buried) => c.buried += 1,
                _ => c.parked += 1,
            }
            match self.shown_state(id) {
                RunState::Live => c.live += 1,
                RunState::Hibernated => c.hibernated += 1,
                RunState::Failed(_) => c.failed += 1,
                RunState::Spawning => c.spawning += 1,
                RunState::Exited(_) => c.exited += 1,
            }
        }
        c
    }

    /// Every failed session with its reason, in display order.
    pub fn failed_views(&self) -> Vec<hangar_protocol::view::FailedView> {
        self.ordered_sessions()
            .into_iter()
            .filter_map(|id| {
                let RunState::Failed(reason) = self.run_state(&id) else {
                    return None;
                };
                let title = self.ws.sessions.get(&id)?.title.clone();
                Some(hangar_protocol::view::FailedView {
                    id: id.to_string(),
                    title,
                    reason,
                })
            })
            .collect()
    }

    pub fn tab_views(&self) -> Vec<TabView> {
        self.ws
            .tabs
            .iter()
            .map(|t| TabView {
                id: t.id.to_string(),
                title: t.title.clone(),
                cwd: t.cwd.clone(),
                active: self.ws.active_tab.as_ref() == Some(&t.id),
                panes: t.leaves().iter().map(|s| s.to_string()).collect(),
                parked: self
                    .ws
                    .parked
                    .values()
                    .filter(|p| p.tab == t.id)
                    .map(|p| p.session.to_string())
                    .collect(),
                focus: t.focus.as_ref().map(|s| s.to_string()),
            })
            .collect()
    }
}
