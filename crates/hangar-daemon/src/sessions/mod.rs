//! The one owner of the workspace model, the store and each session's
//! runtime (its process, its run state, its waiters).
//!
//! The lock is private: callers use the operations below, each of which
//! takes the lock once, does its work on plain data, and lets go before it
//! returns. A closure given to [`Sessions::read`] or [`Sessions::edit`] runs
//! under the lock and cannot await, so the lock is never held across an
//! await (tokio's shared-state guidance). The closures are the door for the
//! long tail of operations; the common ones are named.
//!
//! What must never happen here: slow I/O other than the store's own
//! transaction (no PATH search, no config file written, no folder stat), and
//! no call back into the rest of the daemon while the lock is held.

mod state;
mod views;

use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::watch;

use hangar_core::{Provider, SessionId, SessionMeta, TabId, Workspace};
use hangar_protocol::view::SessionView;
use hangar_store::Store;

use crate::errors::ApiError;
use crate::pty::LiveProcess;
pub use state::{RestoreProgress, RunState, Runtime, State};

/// The workspace model, the store and the runtimes, behind one lock.
pub struct Sessions {
    state: Mutex<State>,
    /// Whether the model is the whole workspace: false between a start's
    /// first look and the end of its full load (see `install_full_load`).
    full: watch::Sender<bool>,
}

impl Sessions {
    /// The owner of a workspace just loaded from `store`, with the notices
    /// the load produced (a repaired store, duplicate identities).
    pub fn new(ws: Workspace, store: Store, notices: Vec<String>) -> Sessions {
        Sessions::with_model(ws, store, notices, true)
    }

    /// The owner of a daemon start's first look (`Store::open_first_look`):
    /// the tabs and the visible panes' sessions only, until
    /// [`Sessions::install_full_load`]. Meanwhile a save is put off (see
    /// `State::save`), and whatever needs every session waits for
    /// [`Sessions::full_model`].
    pub fn first_look(ws: Workspace, store: Store, notices: Vec<String>) -> Sessions {
        Sessions::with_model(ws, store, notices, false)
    }

    fn with_model(ws: Workspace, store: Store, notices: Vec<String>, full: bool) -> Sessions {
        Sessions {
            state: Mutex::new(State {
                ws,
                store,
                runtimes: Default::default(),
                restore: RestoreProgress::default(),
                notices,
                shutting_down: false,
                save_put_off: None,
            }),
            full: watch::channel(full).0,
        }
    }

    /// Wait until the model holds the whole workspace (at once, except
    /// during a start's first look).
    pub async fn full_model(&self) {
        let mut rx = self.full.subscribe();
        // The sender lives as long as `self`, so this cannot fail.
        let _ = rx.wait_for(|full| *full).await;
    }

    /// The rest of the store, read after the first forks
    /// (`hangar_store::read_rest`), becomes the model: with what the forks
    /// changed in the visible sessions, and saved when they changed
    /// something or a save was put off meanwhile. From then on the model is
    /// whole and [`Sessions::full_model`] returns.
    pub fn install_full_load(
        &self,
        rest: hangar_store::RestOfStore,
    ) -> Result<hangar_store::FullLoad, hangar_store::StoreError> {
        let mut guard = self.lock();
        let st = &mut *guard;
        let mut full = st.store.finish_loading(rest, &st.ws)?;
        st.ws = std::mem::take(&mut full.workspace);
        let put_off = st.save_put_off.take();
        if (full.changed_since_first_look || put_off.is_some())
            && let Err(e) = st.save_observed(&put_off.unwrap_or_default())
        {
            // Kept in memory; the next save carries it.
            tracing::warn!("could not save what the first forks changed: {}", e.message);
        }
        drop(guard);
        self.full.send_replace(true);
        Ok(full)
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic inside one request must not wedge every other client; the
        // state is plain data and stays consistent between statements.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Read the state under the lock.
    pub fn read<R>(&self, f: impl FnOnce(&State) -> R) -> R {
        f(&self.lock())
    }

    /// Change the state under the lock; a change of the model is saved by
    /// the closure with one `State::save` (one store transaction).
    pub fn edit<R>(&self, f: impl FnOnce(&mut State) -> R) -> R {
        f(&mut self.lock())
    }

    /// A session id from an exact id or a unique prefix.
    pub fn resolve(&self, given: &str) -> Result<SessionId, ApiError> {
        self.lock().resolve_session(given)
    }

    /// A tab from its id, a unique id prefix, or its exact title.
    pub fn resolve_tab(&self, given: &str) -> Result<TabId, ApiError> {
        self.lock().resolve_tab(given)
    }

    pub fn contains(&self, id: &SessionId) -> bool {
        self.lock().ws.sessions.contains_key(id)
    }

    /// A copy of a session's metadata, to work on off the lock.
    pub fn meta(&self, id: &SessionId) -> Option<SessionMeta> {
        self.lock().ws.sessions.get(id).cloned()
    }

    pub fn provider_of(&self, id: &SessionId) -> Option<Provider> {
        self.lock().ws.sessions.get(id).map(|m| m.provider.clone())
    }

    pub fn run_state(&self, id: &SessionId) -> RunState {
        self.lock().run_state(id)
    }

    /// What `ls` shows of one session.
    pub fn view(&self, id: &SessionId) -> Option<SessionView> {
        let row = self.lock().session_view(id)?;
        views::with_worktree_folders(vec![row]).pop()
    }

    /// What `ls` shows of every session, in display order.
    pub fn views(&self) -> Vec<SessionView> {
        let rows = self.lock().ordered_session_views();
        views::with_worktree_folders(rows)
    }

    /// The session's running process, if any.
    pub fn process(&self, id: &SessionId) -> Option<Arc<LiveProcess>> {
        self.lock().runtimes.get(id).and_then(|r| r.proc.clone())
    }

    pub fn shutting_down(&self) -> bool {
        self.lock().shutting_down
    }

    /// A line for `status`'s notices.
    pub fn notice(&self, line: String) {
        self.lock().notices.push(line);
    }

    /// Mark the daemon as shutting down and take every live process out of
    /// its runtime; `None` when another caller already began the shutdown.
    pub fn begin_shutdown(&self) -> Option<Vec<(SessionId, Arc<LiveProcess>)>> {
        let mut st = self.lock();
        if st.shutting_down {
            return None;
        }
        st.shutting_down = true;
        Some(
            st.runtimes
                .iter_mut()
                .filter_map(|(id, rt)| rt.proc.take().map(|p| (id.clone(), p)))
                .collect(),
        )
    }

    /// Keep the last screen of a session whose process was stopped, and
    /// forget that process's pid. What cannot be written is logged: the
    /// session then shows no last screen, or a restart looks for a process
    /// that is gone (harmless: its start time no longer matches).
    pub fn keep_stopped_screen(&self, id: &SessionId, screen: &[u8], now_ms: u64) {
        let mut st = self.lock();
        save_screen_logged(&mut st.store, id, screen, now_ms);
        forget_process_logged(&mut st.store, id);
    }

    /// A process just started for `id`: record its pid (so a successor can
    /// end it if this daemon is killed) and make it the session's process.
    pub fn attach_process(
        &self,
        id: &SessionId,
        live: Arc<LiveProcess>,
        start_time: u64,
        resumed: bool,
    ) {
        let mut st = self.lock();
        if let Err(e) = st
            .store
            .record_process(id, live.pid, live.pgid(), start_time)
        {
            tracing::warn!("could not record pid of {id}: {e}");
        }
        let rt = st.runtime(id);
        rt.proc = Some(live);
        rt.resumed = Some(resumed);
    }

    /// Process `live` of `id` exited on its own with `code`: forget its pid,
    /// and when it is still the session's process, keep its last screen and
    /// mark the session exited. Returns whether a live session became
    /// exited (the caller journals it).
    pub fn process_exited(
        &self,
        id: &SessionId,
        live: &Arc<LiveProcess>,
        screen: &[u8],
        code: i32,
        now_ms: u64,
    ) -> bool {
        let mut st = self.lock();
        forget_process_logged(&mut st.store, id);
        let is_current = st
            .runtimes
            .get(id)
            .and_then(|r| r.proc.as_ref())
            .is_some_and(|p| Arc::ptr_eq(p, live));
        if !is_current {
            return false;
        }
        if st.ws.sessions.contains_key(id) {
            save_screen_logged(&mut st.store, id, screen, now_ms);
        }
        let rt = st.runtime(id);
        rt.proc = None;
        if rt.state == RunState::Live {
            rt.set_state(RunState::Exited(code));
            return true;
        }
        false
    }

    /// A person or an agent used `id` at `now_ms`: its last-use time, kept
    /// in memory until the next save.
    pub fn touch(&self, id: &SessionId, now_ms: u64) {
        if let Some(m) = self.lock().ws.sessions.get_mut(id) {
            m.last_active_ms = now_ms;
        }
    }

    /// Forget a session's recorded pid (its process ended).
    pub fn forget_process(&self, id: &SessionId) {
        forget_process_logged(&mut self.lock().store, id);
    }
}

/// Forget the recorded pid of `id`'s process, logging what could not be
/// written: the next start would look for a process that is gone.
pub(crate) fn forget_process_logged(store: &mut Store, id: &SessionId) {
    if let Err(e) = store.forget_process(id) {
        tracing::warn!("could not forget the recorded pid of session {id}: {e}");
    }
}

/// Keep `id`'s last screen, logging what could not be written: the session
/// then shows no last screen after a restart.
pub(crate) fn save_screen_logged(store: &mut Store, id: &SessionId, screen: &[u8], now_ms: u64) {
    if let Err(e) = store.save_screen(id, screen, now_ms) {
        tracing::warn!(
            "lost the last screen of session {id} ({} bytes): {e}",
            screen.len()
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hangar_core::fixtures::large_workspace;
    use hangar_core::restore_plan::first_forks;

    #[test]
    fn a_save_before_the_full_load_is_put_off_and_made_by_it_with_every_session() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.db");
        let ws = large_workspace(300, 4);
        Store::open(&path).unwrap().store.save(&ws, &[]).unwrap();

        let look = Store::open_first_look(&path).unwrap();
        let sessions = Sessions::first_look(look.workspace, look.store, Vec::new());
        assert!(!*sessions.full.borrow(), "not whole yet");
        let pane = sessions.read(|st| first_forks(&st.ws))[0].clone();
        // What a fork does before the rest is loaded: change its record, save.
        sessions
            .edit(|st| {
                st.ws.sessions.get_mut(&pane).unwrap().title = "renamed at its fork".into();
                st.save(&[])
            })
            .expect("a put-off save is no error");
        assert!(sessions.read(|st| st.save_put_off.is_some()));
        let rest = hangar_store::read_rest(&path).unwrap();
        assert_eq!(
            rest.workspace().sessions[&pane].title,
            ws.sessions[&pane].title,
            "nothing was written from the first look's model"
        );

        sessions.install_full_load(rest).unwrap();
        assert!(*sessions.full.borrow(), "whole now");
        assert_eq!(sessions.read(|st| st.ws.sessions.len()), 300);
        assert!(sessions.read(|st| st.save_put_off.is_none()));
        drop(sessions);
        let again = Store::open(&path).unwrap();
        assert_eq!(again.workspace.sessions.len(), 300, "every session kept");
        assert_eq!(again.workspace.sessions[&pane].title, "renamed at its fork");
    }
}
