//! The daemon's state: the workspace model, the store, and each session's
//! runtime (its process, if any).
//!
//! The workspace is only edited by operations a person or agent asked for;
//! spawning and exits edit `runtimes` alone. That is why a restore in which
//! some spawns failed persists every record it loaded (DESIGN.md rule 5).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use hangar_core::{Placement, SessionId, TabId, Workspace};
use hangar_protocol::message::codes;
use hangar_protocol::view::{RestoreView, SessionCounts, SessionView, TabView};
use hangar_store::Store;
use tokio::sync::watch;

use crate::pty::LiveProcess;

/// A session's process state.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RunState {
    Hibernated,
    Spawning,
    Live,
    Failed(String),
    Exited(i32),
}

impl RunState {
    pub fn name(&self) -> &'static str {
        match self {
            RunState::Hibernated => "hibernated",
            RunState::Spawning => "spawning",
            RunState::Live => "live",
            RunState::Failed(_) => "failed",
            RunState::Exited(_) => "exited",
        }
    }
}

pub struct Runtime {
    pub state: RunState,
    pub proc: Option<Arc<LiveProcess>>,
    /// Whether the last start resumed a provider session.
    pub resumed: Option<bool>,
    /// In the restore's spawn set, waiting for a slot: shown as `spawning`
    /// (a pane about to start is not hibernated).
    pub awaiting_restore: bool,
    /// Bumped on every state change; waiters subscribe to it.
    pub changed: watch::Sender<u64>,
}

impl Runtime {
    pub fn new() -> Runtime {
        let (changed, _) = watch::channel(0);
        Runtime {
            state: RunState::Hibernated,
            proc: None,
            resumed: None,
            awaiting_restore: false,
            changed,
        }
    }

    pub fn set_state(&mut self, state: RunState) {
        self.state = state;
        self.changed.send_modify(|g| *g += 1);
    }
}

impl Default for Runtime {
    fn default() -> Self {
        Runtime::new()
    }
}

#[derive(Clone, Debug, Default)]
pub struct RestoreProgress {
    pub expected: usize,
    pub restored: usize,
    pub hibernated: usize,
    pub failed: usize,
    pub finished: usize,
    pub started: Option<Instant>,
    pub duration_ms: Option<u64>,
}

impl RestoreProgress {
    pub fn view(&self) -> RestoreView {
        RestoreView {
            expected: self.expected,
            restored: self.restored,
            hibernated: self.hibernated,
            failed: self.failed,
            complete: self.finished >= self.expected,
            all_live: self.finished >= self.expected && self.failed == 0,
            duration_ms: self.duration_ms.or_else(|| {
                self.started
                    .filter(|_| self.finished < self.expected)
                    .map(|s| s.elapsed().as_millis() as u64)
            }),
        }
    }
}

pub struct State {
    pub ws: Workspace,
    pub store: Store,
    pub runtimes: HashMap<SessionId, Runtime>,
    pub restore: RestoreProgress,
    pub notices: Vec<String>,
    pub shutting_down: bool,
    /// The governor's last budget check.
    pub budget: crate::governor::BudgetStatus,
}

/// An error a request's caller can act on.
#[derive(Clone, Debug, PartialEq)]
pub struct ApiError {
    pub code: &'static str,
    pub message: String,
    pub detail: serde_json::Value,
}

impl ApiError {
    pub fn new(code: &'static str, message: impl Into<String>) -> ApiError {
        ApiError {
            code,
            message: message.into(),
            detail: serde_json::Value::Null,
        }
    }
    pub fn invalid(message: impl Into<String>) -> ApiError {
        ApiError::new(codes::INVALID, message)
    }
    pub fn not_found(message: impl Into<String>) -> ApiError {
        ApiError::new(codes::NOT_FOUND, message)
    }
    pub fn internal(message: impl Into<String>) -> ApiError {
        ApiError::new(codes::INTERNAL, message)
    }
}

impl From<hangar_core::PlacementError> for ApiError {
    fn from(e: hangar_core::PlacementError) -> Self {
        ApiError::invalid(e.to_string())
    }
}

impl From<hangar_core::lookup::LookupError> for ApiError {
    fn from(e: hangar_core::lookup::LookupError) -> Self {
        let code = if e.is_not_found() {
            codes::NOT_FOUND
        } else if e.is_ambiguous() {
            codes::AMBIGUOUS
        } else {
            codes::INVALID
        };
        ApiError::new(code, e.to_string())
    }
}

/// The error a request gets when its change could not be saved: what
/// happened, that nothing changed, and what to do about it.
fn save_refusal(e: &hangar_store::StoreError) -> ApiError {
    let hint = if e.is_disk_full() {
        "; the disk is full: free some space, then try again"
    } else if e.is_read_only() {
        "; the folder is read-only: make it writable again, then try again"
    } else {
        ""
    };
    ApiError::internal(format!(
        "could not save the workspace, so nothing was changed: {e}{hint}"
    ))
}

impl From<hangar_store::StoreError> for ApiError {
    fn from(e: hangar_store::StoreError) -> Self {
        ApiError::internal(format!("could not save the workspace: {e}"))
    }
}

impl State {
    pub fn runtime(&mut self, id: &SessionId) -> &mut Runtime {
        self.runtimes.entry(id.clone()).or_default()
    }

    pub fn run_state(&self, id: &SessionId) -> RunState {
        self.runtimes
            .get(id)
            .map(|r| r.state.clone())
            .unwrap_or(RunState::Hibernated)
    }

    /// The state people are shown: `run_state`, except that a pane waiting
    /// for a restore slot is `spawning`.
    pub fn shown_state(&self, id: &SessionId) -> RunState {
        match self.runtimes.get(id) {
            Some(r) if r.awaiting_restore && r.state == RunState::Hibernated => RunState::Spawning,
            Some(r) => r.state.clone(),
            None => RunState::Hibernated,
        }
    }

    /// Persist the model; `removed` names every session intentionally gone.
    ///
    /// When the store cannot write (a full disk, a read-only home), the
    /// model goes back to the last save and the caller gets an error saying
    /// nothing was changed: a refused change must not show in `ls` as if it
    /// had happened, nor reach the disk with the next unrelated save.
    pub fn save(&mut self, removed: &[SessionId]) -> Result<(), ApiError> {
        match self.store.save(&self.ws, removed) {
            Ok(_) => Ok(()),
            Err(e) => {
                self.ws = self.store.last_saved().clone();
                let refusal = save_refusal(&e);
                tracing::error!("{}", refusal.message);
                Err(refusal)
            }
        }
    }

    /// Persist the model, keeping it in memory when the store cannot write:
    /// for what the daemon itself observed (a provider id, a last use), which
    /// a later save carries to disk once it can.
    pub fn save_observed(&mut self, removed: &[SessionId]) -> Result<(), ApiError> {
        self.store.save(&self.ws, removed)?;
        Ok(())
    }

    /// A session id from an exact id or a unique prefix
    /// (`hangar_core::lookup`).
    pub fn resolve_session(&self, given: &str) -> Result<SessionId, ApiError> {
        Ok(hangar_core::lookup::resolve_session(&self.ws, given)?)
    }

    /// A tab from its id, a unique id prefix, or its exact title
    /// (`hangar_core::lookup`).
    pub fn resolve_tab(&self, given: &str) -> Result<TabId, ApiError> {
        Ok(hangar_core::lookup::resolve_tab(&self.ws, given)?)
    }

    pub fn session_view(&self, id: &SessionId) -> Option<SessionView> {
        self.session_view_with(id, crate::identity::duplicate_ids(&self.ws, id))
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
            worktree: meta.worktree.as_ref().map(crate::worktree::static_view),
            // Filled in from the proxy by the caller (`Daemon::op_list`).
            usage: None,
            // Filled in by the caller from the activity board (`Daemon::op_list`).
            activity: "unknown".to_owned(),
            activity_since: None,
        })
    }

    /// Sessions in display order: tabs in order (panes, then parked), then
    /// buried.
    pub fn ordered_sessions(&self) -> Vec<SessionId> {
        let mut out = Vec::with_capacity(self.ws.sessions.len());
        let mut seen = std::collections::HashSet::new();
        for tab in &self.ws.tabs {
            for leaf in tab.leaves() {
                if seen.insert(leaf.clone()) {
                    out.push(leaf);
                }
            }
            for p in self.ws.parked.values().filter(|p| p.tab == tab.id) {
                if seen.insert(p.session.clone()) {
                    out.push(p.session.clone());
                }
            }
        }
        for id in self.ws.sessions.keys() {
            if seen.insert(id.clone()) {
                out.push(id.clone());
            }
        }
        out
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
