//! The rows people are shown, read from the state: a session's view with
//! its run state and relationships, the counts, the failed list, the tabs.
//!
//! Only reads; never edits the model or the runtimes. Also the facts
//! other subsystems read about several sessions at once (search's subjects,
//! the agents a caller sees, what a close or an eviction would take), each
//! read under the lock once and carried out as plain data.

use std::collections::HashMap;
use std::sync::Arc;

use hangar_core::governor::{stale_parked, whole_cascades};
use hangar_core::ledger::DuplicateGroup;
use hangar_core::orchestration::{AgentMatch, CloseRefusal, CloseRunPlan};
use hangar_core::worktree::WorktreeInfo;
use hangar_core::{Placement, SessionId, SessionMeta, TabId};
use hangar_protocol::view::{
    FailedView, RestoreView, SessionCounts, SessionView, TabView, WorktreeView,
};

use super::Sessions;
use super::state::{RunState, State};
use crate::errors::ApiError;
use crate::pty::LiveProcess;

/// One session's facts, copied out of the lock.
pub struct SessionFacts {
    pub id: SessionId,
    pub meta: SessionMeta,
    pub run_state: RunState,
    /// What people are shown (`spawning` while awaiting a restore slot).
    pub shown_state: RunState,
    pub placement: Option<Placement>,
    pub tab: Option<TabId>,
    pub process: Option<Arc<LiveProcess>>,
}

/// What `status` reads of the sessions.
pub struct StatusFacts {
    pub counts: SessionCounts,
    pub restore: RestoreView,
    pub dangerous: bool,
    pub notices: Vec<String>,
    pub failed: Vec<FailedView>,
}

/// One member of a duplicate group, for `doctor`.
pub struct DuplicateMember {
    pub id: SessionId,
    pub title: String,
    pub cwd: String,
    pub state: &'static str,
    pub placement: Option<&'static str>,
}

/// What closing a run closes: the members whose whole cascade is in the
/// run, as the caller may close them (or why not), and the others with what
/// closing each would also close.
pub struct RunClose {
    pub closing: Result<Vec<SessionId>, CloseRefusal>,
    pub skipped: Vec<(SessionId, Vec<SessionId>)>,
}

/// Where a screen is read from: the live terminal, or the one kept when
/// the session stopped.
pub enum ScreenSource {
    Live(Arc<LiveProcess>),
    Saved(Vec<u8>),
}

/// Fill in whether each row's worktree folder exists: one stat per row with
/// a worktree, made off the lock.
pub(super) fn with_worktree_folders(mut rows: Vec<SessionView>) -> Vec<SessionView> {
    for w in rows.iter_mut().filter_map(|r| r.worktree.as_mut()) {
        w.exists = std::path::Path::new(&w.path).is_dir();
    }
    rows
}

impl State {
    fn facts(&self, id: &SessionId) -> Option<SessionFacts> {
        let meta = self.ws.sessions.get(id)?;
        let placement = self.ws.placement_of(id);
        Some(SessionFacts {
            id: id.clone(),
            meta: meta.clone(),
            run_state: self.run_state(id),
            shown_state: self.shown_state(id),
            placement: placement.as_ref().map(|(p, _)| p.clone()),
            tab: placement.map(|(_, t)| t),
            process: self.runtimes.get(id).and_then(|r| r.proc.clone()),
        })
    }

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
            // Filled in by the caller from the usage ledger.
            limit: None,
            goal: None,
            engine: None,
            // Filled in by the caller from the sandbox settings (`handlers::sessions::list`).
            sandbox: None,
            forked_from: meta.forked_from.as_ref().map(|f| f.session.to_string()),
            handoff: meta.forked_from.as_ref().is_some_and(|f| f.handoff),
            account: meta.account.clone(),
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

impl Sessions {
    /// What `ls` shows of one session.
    pub fn view(&self, id: &SessionId) -> Option<SessionView> {
        let row = self.lock().session_view(id)?;
        with_worktree_folders(vec![row]).pop()
    }

    /// What `ls` shows of every session, in display order.
    pub fn views(&self) -> Vec<SessionView> {
        let rows = self.lock().ordered_session_views();
        with_worktree_folders(rows)
    }

    pub fn tab_views(&self) -> Vec<TabView> {
        self.lock().tab_views()
    }

    pub fn status_facts(&self) -> StatusFacts {
        let st = self.lock();
        StatusFacts {
            counts: st.counts(),
            restore: st.restore.view(),
            dangerous: st.ws.settings.dangerous,
            notices: st.notices.clone(),
            failed: st.failed_views(),
        }
    }

    /// Whether new sessions start with the agents' dangerous flags.
    pub fn dangerous(&self) -> bool {
        self.lock().ws.settings.dangerous
    }

    /// Each group of sessions sharing a durable provider session id, with
    /// its members as `doctor` shows them.
    pub fn duplicate_groups(&self) -> Vec<(DuplicateGroup, Vec<DuplicateMember>)> {
        let st = self.lock();
        hangar_core::ledger::duplicate_groups(&st.ws)
            .into_iter()
            .map(|g| {
                let members = g
                    .sessions
                    .iter()
                    .map(|s| {
                        let meta = st.ws.sessions.get(s);
                        DuplicateMember {
                            id: s.clone(),
                            title: meta.map(|m| m.title.clone()).unwrap_or_default(),
                            cwd: meta.map(|m| m.cwd.clone()).unwrap_or_default(),
                            state: st.run_state(s).name(),
                            placement: st.ws.placement_of(s).map(|(p, _)| p.name()),
                        }
                    })
                    .collect();
                (g, members)
            })
            .collect()
    }

    /// The facts of each of `ids` that exists, in that order.
    pub fn facts(&self, ids: &[SessionId]) -> Vec<SessionFacts> {
        let st = self.lock();
        ids.iter().filter_map(|id| st.facts(id)).collect()
    }

    /// The facts of the session `given` names, or of every session in
    /// display order.
    pub fn facts_of(&self, given: Option<&str>) -> Result<Vec<SessionFacts>, ApiError> {
        let st = self.lock();
        let ids = match given {
            Some(given) => vec![st.resolve_session(given)?],
            None => st.ordered_sessions(),
        };
        Ok(ids.iter().filter_map(|id| st.facts(id)).collect())
    }

    /// Every session id.
    pub fn ids(&self) -> Vec<SessionId> {
        self.lock().ws.sessions.keys().cloned().collect()
    }

    /// The records of each of `ids` that exists, in that order.
    pub fn metas(&self, ids: &[SessionId]) -> Vec<SessionMeta> {
        let st = self.lock();
        ids.iter()
            .filter_map(|id| st.ws.sessions.get(id).cloned())
            .collect()
    }

    /// A session and a copy of its record, from an id or a unique prefix.
    pub fn resolve_meta(&self, given: &str) -> Result<(SessionId, SessionMeta), ApiError> {
        let st = self.lock();
        let id = st.resolve_session(given)?;
        let meta = st
            .ws
            .sessions
            .get(&id)
            .cloned()
            .ok_or_else(|| ApiError::not_found(format!("no session {id}")))?;
        Ok((id, meta))
    }

    /// Each of `given` resolved (all or the first error).
    pub fn resolve_all(&self, given: &[String]) -> Result<Vec<SessionId>, ApiError> {
        let st = self.lock();
        given.iter().map(|s| st.resolve_session(s)).collect()
    }

    /// The screen of the session `given` names: its live terminal, or the
    /// one kept when it stopped (read from the store).
    pub fn screen_source(&self, given: &str) -> Result<(SessionId, ScreenSource), ApiError> {
        let st = self.lock();
        let id = st.resolve_session(given)?;
        let source = match st.runtimes.get(&id).and_then(|r| r.proc.clone()) {
            Some(live) => ScreenSource::Live(live),
            None => ScreenSource::Saved(st.store.load_screen(&id)?.unwrap_or_default()),
        };
        Ok((id, source))
    }

    /// The worktree of each of `ids` (none for a session without one, or
    /// gone).
    pub fn worktrees_of(&self, ids: &[SessionId]) -> Vec<Option<WorktreeInfo>> {
        let st = self.lock();
        ids.iter()
            .map(|id| st.ws.sessions.get(id)?.worktree.as_deref().cloned())
            .collect()
    }

    /// The records of the sessions that have a worktree.
    pub fn with_worktrees(&self) -> Vec<SessionMeta> {
        self.lock()
            .ws
            .sessions
            .values()
            .filter(|m| m.worktree.is_some())
            .cloned()
            .collect()
    }

    /// The folder a `new --worktree` starts from: the one given, else the
    /// tab's (the named one, or the active), else the fallback.
    pub fn worktree_base_folder(
        &self,
        tab: Option<&str>,
        cwd: Option<&str>,
        fallback_cwd: Option<&str>,
    ) -> Result<String, ApiError> {
        let st = self.lock();
        let tab = match tab {
            Some(t) => Some(st.resolve_tab(t)?),
            None => st.ws.active_tab.clone(),
        };
        cwd.map(str::to_owned)
            .or_else(|| tab.and_then(|t| st.ws.tab(&t).and_then(|t| t.cwd.clone())))
            .or_else(|| fallback_cwd.map(str::to_owned))
            .ok_or_else(|| ApiError::invalid("no folder given for the new session (--cwd)"))
    }

    /// The panes a start's restore forks (`hangar_core::restore_plan`).
    pub fn first_forks(&self) -> Vec<SessionId> {
        hangar_core::restore_plan::first_forks(&self.lock().ws)
    }

    /// A launch's facts: the session's record and the dangerous setting.
    pub fn launch_facts(&self, id: &SessionId) -> (Option<SessionMeta>, bool) {
        let st = self.lock();
        (st.ws.sessions.get(id).cloned(), st.ws.settings.dangerous)
    }

    /// `id`'s folder and the durable ids the other sessions of its provider
    /// hold (OpenCode's identity look).
    pub fn claimed_ids(&self, id: &SessionId) -> Option<(String, Vec<String>)> {
        let st = self.lock();
        let meta = st.ws.sessions.get(id)?;
        let mut claimed: Vec<String> = st
            .ws
            .sessions
            .iter()
            .filter(|(o, m)| *o != id && m.provider == meta.provider)
            .filter_map(|(_, m)| m.durable_provider_id().map(str::to_owned))
            .collect();
        // A fork's origin stays its parent's, even once the parent is closed.
        claimed.extend(
            meta.forked_from
                .as_ref()
                .and_then(|o| o.provider_session_id.clone()),
        );
        Some((meta.cwd.clone(), claimed))
    }

    /// Parked records untouched for longer than `older_than_ms`.
    pub fn stale_parked(&self, now_ms: u64, older_than_ms: u64) -> Vec<SessionId> {
        stale_parked(&self.lock().ws, now_ms, older_than_ms)
    }

    /// `candidates` as whole close cascades that `qualifies` accepts, and
    /// the ones held back with their blocker
    /// (`hangar_core::governor::whole_cascades`).
    pub fn whole_cascades(
        &self,
        candidates: &[SessionId],
        qualifies: impl Fn(&SessionId) -> bool,
    ) -> (Vec<Vec<SessionId>>, Vec<(SessionId, SessionId)>) {
        whole_cascades(&self.lock().ws, candidates, qualifies)
    }

    /// Which of the caller's agents `given` names, and whether any session
    /// has that id (for the refusal's words).
    pub fn resolve_agent(&self, caller: &SessionId, given: &str) -> (AgentMatch, bool) {
        let st = self.lock();
        let found = hangar_core::orchestration::resolve_agent(&st.ws, caller, given);
        let exists = matches!(found, AgentMatch::NoMatch) && st.resolve_session(given).is_ok();
        (found, exists)
    }

    /// The sessions `caller` may see and act on.
    pub fn visible_agents(&self, caller: &SessionId) -> Vec<SessionId> {
        hangar_core::orchestration::visible_agents(&self.lock().ws, caller)
    }

    /// The caller's project tab, and each session's orchestration parent.
    pub fn agent_tab_and_parents(
        &self,
        caller: &SessionId,
    ) -> (Option<TabId>, HashMap<String, String>) {
        let st = self.lock();
        let tab = hangar_core::orchestration::project_tab(&st.ws, caller);
        let parents = st
            .ws
            .sessions
            .values()
            .filter_map(|m| {
                Some((
                    m.id.to_string(),
                    m.relationships.orchestration_parent.as_ref()?.to_string(),
                ))
            })
            .collect();
        (tab, parents)
    }

    /// What closing `named` on behalf of `caller` would close, or why not.
    pub fn check_close(
        &self,
        caller: &SessionId,
        named: &[SessionId],
    ) -> Result<Vec<SessionId>, CloseRefusal> {
        hangar_core::orchestration::check_close(&self.lock().ws, caller, named)
    }

    /// Close a run: the members whose whole cascade is in the run, checked
    /// for `caller` (empty when none), and the others with their cascade.
    pub fn close_run_plan(&self, caller: &SessionId, named: &[SessionId]) -> RunClose {
        let st = self.lock();
        let CloseRunPlan { closable, skipped } =
            hangar_core::orchestration::close_run_plan(&st.ws, named);
        let closing = if closable.is_empty() {
            Ok(Vec::new())
        } else {
            hangar_core::orchestration::check_close(&st.ws, caller, &closable)
        };
        RunClose { closing, skipped }
    }
}
