//! Placement operations: where sessions are shown and which exist (new,
//! park, unpark, bury, unbury, pin, focus, ratio, tabs, a child agent,
//! remove). Each edits the model through `hangar-core` under the lock and
//! saves it in one store transaction (`State::save`) before it returns; no
//! disk work other than the store's own happens here (a folder is checked
//! by the caller before).

use hangar_core::new_session::{
    NewSessionTab, new_session_cwd, new_session_tab, new_session_title,
};
use hangar_core::orchestration::{
    ChildRequest, child_session, project_tab, tree_size, visible_agents,
};
use hangar_core::placement::PanePosition;
use hangar_core::{Direction, Placement, Provider, SessionId, SessionMeta, Tab, TabId, Workspace};

use super::Sessions;
use super::state::State;
use crate::errors::ApiError;

fn new_tab_id() -> TabId {
    TabId::new(uuid::Uuid::new_v4().to_string())
}

/// Where a new session goes, as `hangar new` asked.
pub struct NewPlace<'a> {
    pub tab: Option<&'a str>,
    pub cwd: Option<&'a str>,
    pub fallback_cwd: Option<&'a str>,
}

/// A new session, placed: parked in its tab, or a pane (beside `split`).
pub struct NewSession<'a> {
    pub place: NewPlace<'a>,
    pub provider: Provider,
    pub title: Option<&'a str>,
    pub now_ms: u64,
    pub capture: bool,
    pub mcp: bool,
    pub parked: bool,
    pub split: Option<(&'a str, Direction)>,
}

/// What [`Sessions::add_session`] did.
pub enum Added {
    /// The session, saved.
    Session(SessionId),
    /// The folder it would get is not the one the caller checked (the tab's
    /// folder changed meanwhile): check this one and ask again.
    Recheck(String),
}

impl State {
    fn new_session_folder(&self, place: &NewPlace<'_>) -> Result<String, ApiError> {
        let tab_cwd = match new_session_tab(&self.ws, place.tab, place.cwd, place.fallback_cwd)? {
            NewSessionTab::Existing(t) => self.ws.tab(&t).and_then(|t| t.cwd.clone()),
            NewSessionTab::Create { cwd, .. } => cwd,
        };
        new_session_cwd(place.cwd, tab_cwd.as_deref(), place.fallback_cwd)
            .ok_or_else(|| ApiError::invalid("no folder given for the new session (--cwd)"))
    }
}

impl Sessions {
    /// The folder a new session placed at `place` gets (its tab's, or the
    /// fallback), for the caller to check on disk before
    /// [`Sessions::add_session`].
    pub fn new_session_folder(&self, place: &NewPlace<'_>) -> Result<String, ApiError> {
        self.lock().new_session_folder(place)
    }

    /// Add a new session at its place (creating its tab when asked), its
    /// record finished by `finish` (a prepared worktree), and save. `checked`
    /// is the folder the caller found on disk.
    pub fn add_session(
        &self,
        new: &NewSession<'_>,
        checked: &str,
        finish: impl FnOnce(&mut SessionMeta),
    ) -> Result<Added, ApiError> {
        let mut st = self.lock();
        let cwd = st.new_session_folder(&new.place)?;
        if cwd != checked {
            return Ok(Added::Recheck(cwd));
        }
        let place = &new.place;
        let tab_id = match new_session_tab(&st.ws, place.tab, place.cwd, place.fallback_cwd)? {
            NewSessionTab::Existing(t) => t,
            NewSessionTab::Create { title, cwd } => {
                let mut tab = Tab::new(new_tab_id(), title);
                tab.cwd = cwd;
                let id = tab.id.clone();
                st.ws.add_tab(tab)?;
                id
            }
        };
        let id = SessionId::new(uuid::Uuid::new_v4().to_string());
        let mut meta = SessionMeta::new(id.clone(), new.provider.clone(), cwd);
        meta.title = new_session_title(new.title, &new.provider);
        meta.created_at_ms = new.now_ms;
        meta.last_active_ms = new.now_ms;
        meta.capture = new.capture;
        meta.mcp = new.mcp;
        meta.dangerous = st.ws.settings.dangerous;
        finish(&mut meta);
        if new.parked {
            st.ws.add_parked_session(meta, &tab_id, new.now_ms)?;
        } else {
            let position = match new.split {
                Some((target, direction)) => PanePosition::Split {
                    target: st.resolve_session(target)?,
                    direction,
                },
                None => PanePosition::Auto,
            };
            st.ws.add_pane_session(meta, &tab_id, position)?;
            st.ws.active_tab = Some(tab_id);
        }
        st.save(&[])?;
        Ok(Added::Session(id))
    }

    /// Park a pane in its tab; returns it and the tab.
    pub fn park(&self, given: &str, now_ms: u64) -> Result<(SessionId, TabId), ApiError> {
        let mut st = self.lock();
        let id = st.resolve_session(given)?;
        let tab = st.ws.park(&id, now_ms)?;
        st.save(&[])?;
        Ok((id, tab))
    }

    /// Make a parked session a pane (of `tab`, or beside `split`'s target,
    /// split the way `direction` says) and its tab the active one.
    pub fn unpark(
        &self,
        given: &str,
        tab: Option<&str>,
        split: Option<&str>,
        direction: impl FnOnce() -> Result<Direction, ApiError>,
    ) -> Result<(SessionId, TabId), ApiError> {
        let mut st = self.lock();
        let id = st.resolve_session(given)?;
        let mut tab = tab.map(|t| st.resolve_tab(t)).transpose()?;
        let position = match split {
            Some(target) => {
                let target = st.resolve_session(target)?;
                if tab.is_none() {
                    tab = st.ws.pane_tab(&target).map(|t| t.id.clone());
                }
                PanePosition::Split {
                    target,
                    direction: direction()?,
                }
            }
            None => PanePosition::Auto,
        };
        let tab = st.ws.unpark(&id, tab.as_ref(), position)?;
        st.ws.active_tab = Some(tab.clone());
        st.save(&[])?;
        Ok((id, tab))
    }

    pub fn bury(&self, given: &str, now_ms: u64) -> Result<(SessionId, TabId), ApiError> {
        let mut st = self.lock();
        let id = st.resolve_session(given)?;
        let tab = st.ws.bury(&id, now_ms)?;
        st.save(&[])?;
        Ok((id, tab))
    }

    /// Bring a buried session back as a pane (into a new `main` tab when no
    /// tab is left).
    pub fn unbury(&self, given: &str) -> Result<(SessionId, TabId), ApiError> {
        let mut st = self.lock();
        let id = st.resolve_session(given)?;
        let tab = st.ws.unbury(&id, || Tab::new(new_tab_id(), "main"))?;
        st.save(&[])?;
        Ok((id, tab))
    }

    pub fn pin(&self, given: &str, pin: bool) -> Result<SessionId, ApiError> {
        let mut st = self.lock();
        let id = st.resolve_session(given)?;
        if pin {
            st.ws.pin(&id)?;
        } else {
            st.ws.unpin(&id)?;
        }
        st.save(&[])?;
        Ok(id)
    }

    /// Make a tab active (the one named, else the given session's) and
    /// focus the session in it; returns the tab and its focus.
    pub fn focus(
        &self,
        tab: Option<&str>,
        session: Option<&str>,
    ) -> Result<(TabId, Option<SessionId>), ApiError> {
        let mut st = self.lock();
        let session = session.map(|s| st.resolve_session(s)).transpose()?;
        let tab = match (tab, &session) {
            (Some(t), _) => st.resolve_tab(t)?,
            (None, Some(id)) => st.ws.pane_tab(id).map(|t| t.id.clone()).ok_or_else(|| {
                ApiError::invalid(format!("session {id} is not a pane of any tab"))
            })?,
            (None, None) => return Err(ApiError::invalid("focus needs a tab or a session")),
        };
        st.ws.set_active_tab(&tab)?;
        if let Some(id) = &session {
            st.ws.set_focus(&tab, id)?;
        }
        st.save(&[])?;
        let focus = st.ws.tab(&tab).and_then(|t| t.focus.clone());
        Ok((tab, focus))
    }

    /// Set the split ratio around a pane (the nearest split, or the nearest
    /// of `direction`).
    pub fn set_ratio(
        &self,
        given: &str,
        direction: Option<Direction>,
        ratio: f32,
    ) -> Result<SessionId, ApiError> {
        let mut st = self.lock();
        let id = st.resolve_session(given)?;
        match direction {
            None => st.ws.set_ratio(&id, ratio)?,
            Some(d) => {
                if !st.ws.set_split_ratio(&id, d, ratio)? {
                    let name = match d {
                        Direction::Vertical => "vertical",
                        Direction::Horizontal => "horizontal",
                    };
                    return Err(ApiError::invalid(format!(
                        "no {name} split around session {id}"
                    )));
                }
            }
        }
        st.save(&[])?;
        Ok(id)
    }

    /// Add a tab titled `title` (in `cwd`) and make it active.
    pub fn add_tab(&self, title: &str, cwd: Option<String>) -> Result<TabId, ApiError> {
        let mut st = self.lock();
        let mut tab = Tab::new(new_tab_id(), title);
        tab.cwd = cwd;
        let id = tab.id.clone();
        st.ws.add_tab(tab)?;
        st.ws.active_tab = Some(id.clone());
        st.save(&[])?;
        Ok(id)
    }

    /// A tab and the sessions closing it closes.
    pub fn tab_close_plan(&self, given: &str) -> Result<(TabId, Vec<SessionId>), ApiError> {
        let st = self.lock();
        let tab = st.resolve_tab(given)?;
        let cascade = st.ws.tab_close_cascade(&tab)?;
        Ok((tab, cascade))
    }

    pub fn remove_tab(&self, tab: &TabId) -> Result<(), ApiError> {
        let mut st = self.lock();
        st.ws.remove_tab(tab)?;
        st.save(&[])
    }

    pub fn rename_tab(&self, given: &str, title: &str) -> Result<TabId, ApiError> {
        let mut st = self.lock();
        let tab = st.resolve_tab(given)?;
        if let Some(t) = st.ws.tab_mut(&tab) {
            t.title = title.to_owned();
        }
        st.save(&[])?;
        Ok(tab)
    }

    /// The sessions closing `given` closes (itself first).
    pub fn close_cascade(&self, given: &str) -> Result<Vec<SessionId>, ApiError> {
        let st = self.lock();
        let id = st.resolve_session(given)?;
        Ok(st.ws.close_cascade(&id))
    }

    /// Remove `ids` from the model and their runtimes, forget their pids,
    /// and save, naming them as removed. `before` sees the model as it was
    /// (orchestration keeps tombstones of the closed children).
    pub fn remove_sessions(
        &self,
        ids: &[SessionId],
        before: impl FnOnce(&Workspace),
    ) -> Result<(), ApiError> {
        let mut st = self.lock();
        before(&st.ws);
        st.ws.remove_sessions(ids);
        for id in ids {
            st.runtimes.remove(id);
            super::forget_process_logged(&mut st.store, id);
        }
        st.save(ids)
    }

    /// A child agent of `caller`, parked in the caller's project tab, with
    /// at most `max_agents` agents per caller and per tree. Returns its
    /// provider's name and its title.
    pub fn add_child_agent(
        &self,
        caller: &SessionId,
        id: SessionId,
        request: ChildRequest,
        max_agents: usize,
        now_ms: u64,
    ) -> Result<(String, String), ApiError> {
        let mut st = self.lock();
        let parent = st
            .ws
            .sessions
            .get(caller)
            .cloned()
            .ok_or_else(|| ApiError::not_found("your session no longer exists"))?;
        let tab: TabId = project_tab(&st.ws, caller).ok_or_else(|| {
            ApiError::invalid("your session has no project tab to create agents in")
        })?;
        if visible_agents(&st.ws, caller).len() >= max_agents {
            return Err(ApiError::invalid(format!(
                "you already have {max_agents} agents; close some (close_agent, close_run) first"
            )));
        }
        if tree_size(&st.ws, caller) >= max_agents {
            return Err(ApiError::invalid(format!(
                "the orchestration tree you belong to already has {max_agents} agents; \
                 its root agent or a person must close some first"
            )));
        }
        if let Some(why) =
            hangar_core::orchestration::sandboxed_child_refusal(&parent, request.cwd.as_deref())
        {
            return Err(ApiError::invalid(why));
        }
        let meta = child_session(&parent, id, request, st.ws.settings.dangerous, now_ms);
        let named = (meta.provider.name().to_owned(), meta.title.clone());
        st.ws.add_parked_session(meta, &tab, now_ms)?;
        st.save(&[])?;
        Ok(named)
    }

    /// Park an agent's pane; returns whether it changed (a parked one
    /// stays). A buried agent is a person's to unbury.
    pub fn park_agent(&self, id: &SessionId, now_ms: u64) -> Result<bool, ApiError> {
        let mut st = self.lock();
        match st.ws.placement_of(id).map(|(p, _)| p) {
            Some(Placement::Pane) => {
                st.ws.park(id, now_ms)?;
                st.save(&[])?;
                Ok(true)
            }
            Some(Placement::Parked) => Ok(false),
            _ => Err(ApiError::invalid(format!(
                "agent {id} is buried; a person unburies it"
            ))),
        }
    }

    /// `hangar reload`: store the dangerous setting when given, and return
    /// the running agents to restart, in display order.
    pub fn reload_restart_set(
        &self,
        dangerous: Option<bool>,
        has_dangerous_args: impl Fn(&str) -> bool,
    ) -> Result<Vec<SessionId>, ApiError> {
        let mut st = self.lock();
        if let Some(d) = dangerous {
            st.ws.settings.dangerous = d;
        }
        st.save(&[])?;
        Ok(hangar_core::reload_plan::reload_restart_set(
            &st.ws,
            &st.ordered_sessions(),
            |id| st.run_state(id).is_running(),
            has_dangerous_args,
        ))
    }
}
