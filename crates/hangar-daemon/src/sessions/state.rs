//! The daemon's state: the workspace model, the store, and each session's
//! runtime (its process, if any). Only `Sessions` holds it, behind its
//! private lock.
//!
//! The workspace is only edited by operations a person or agent asked for;
//! spawning and exits edit `runtimes` alone. That is why a restore in which
//! some spawns failed persists every record it loaded (DESIGN.md rule 5).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use hangar_core::{SessionId, TabId, Workspace};
use hangar_protocol::message::codes;
use hangar_protocol::view::RestoreView;
use hangar_store::Store;
use serde_json::json;
use tokio::sync::watch;

use crate::errors::{ApiError, save_refusal};
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

    /// Live or spawning: a process is there or coming.
    pub fn is_running(&self) -> bool {
        matches!(self, RunState::Live | RunState::Spawning)
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
    /// A save was asked for while the store held only a first look, with the
    /// sessions it named as removed: the full load makes it
    /// (`Sessions::install_full_load`).
    pub save_put_off: Option<Vec<SessionId>>,
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
    ///
    /// Before a start's full load, the model holds only the visible panes'
    /// sessions (a change to one of them, such as a provider id minted at
    /// its fork): the save is put off until the full load, which makes it,
    /// since saving the first look's model would drop every other session.
    pub fn save(&mut self, removed: &[SessionId]) -> Result<(), ApiError> {
        if self.put_off_save(removed) {
            return Ok(());
        }
        match self.store.save(&self.ws, removed) {
            Ok(_) => Ok(()),
            Err(e) => {
                // The store keeps only digests of what it saved, so the
                // model is read back from the file (reads work on a full
                // disk). If even that fails, the model keeps the refused
                // change and a later save may write it; the log says so.
                match self.store.load_saved() {
                    Ok(saved) => self.ws = saved,
                    Err(reload) => tracing::error!(
                        "the refused change stays in memory (a later save may write it): reading the last save back failed: {reload}"
                    ),
                }
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
        if self.put_off_save(removed) {
            return Ok(());
        }
        self.store.save(&self.ws, removed)?;
        Ok(())
    }

    /// Whether a save must wait for the full load (see `save`).
    fn put_off_save(&mut self, removed: &[SessionId]) -> bool {
        if self.store.is_loaded() {
            return false;
        }
        self.save_put_off
            .get_or_insert_with(Vec::new)
            .extend(removed.iter().cloned());
        true
    }

    /// Refuse to wake `id` while another running session holds its durable
    /// provider session id (`hangar_core::ledger::may_wake`).
    pub fn refuse_duplicate_wake(&self, id: &SessionId) -> Result<(), ApiError> {
        hangar_core::ledger::may_wake(&self.ws, id, |o| self.run_state(o).is_running()).map_err(
            |e| {
                let mut err = ApiError::new(codes::DUPLICATE, e.to_string());
                err.detail = json!({
                    "live": e.live.to_string(),
                    "provider_session_id": e.provider_session_id,
                });
                err
            },
        )
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
}
