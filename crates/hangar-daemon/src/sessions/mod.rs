//! The one owner of the workspace model, the store and each session's
//! runtime (its process, its run state, its waiters).
//!
//! The lock and `State`'s fields are private: callers use the named
//! operations, grouped by concern (`runtime.rs`: processes and run states;
//! `placement.rs`: where sessions are shown and which exist;
//! `persistence.rs`: what is kept and the store's reads; `views.rs`: what
//! people and other subsystems read). Each takes the lock once, does its
//! work on plain data, and lets go before it returns; none awaits, so the
//! lock is never held across an await (tokio's shared-state guidance). A
//! closure an operation takes (a journal record, a merge) runs under the
//! lock and sees only what the operation hands it.
//!
//! What must never happen here: slow I/O other than the store's own
//! transaction (no PATH search, no config file written, no folder stat), and
//! no call back into the rest of the daemon while the lock is held.

#[cfg(test)]
mod operations_tests;
mod persistence;
mod placement;
mod runtime;
mod state;
mod views;

use std::sync::{Mutex, MutexGuard};

use tokio::sync::watch;

use hangar_core::{Provider, SessionId, SessionMeta, TabId, Workspace};
use hangar_store::Store;

use crate::errors::ApiError;
pub use placement::{Added, NewPlace, NewSession};
pub use runtime::{BudgetCandidate, IdentityFacts, RestoreOutcome, WakeLooked};
use state::State;
pub use state::{RestoreProgress, RunState};
pub use views::{DuplicateMember, RunClose, ScreenSource, SessionFacts, StatusFacts};

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

    /// Read the state under the lock (this module's tests).
    #[cfg(test)]
    fn read<R>(&self, f: impl FnOnce(&State) -> R) -> R {
        f(&self.lock())
    }

    /// Change the state under the lock (this module's tests).
    #[cfg(test)]
    fn edit<R>(&self, f: impl FnOnce(&mut State) -> R) -> R {
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

    /// Run `f` while `id` exists, the lock held across the check and `f`
    /// (so a close, which removes the session under the lock, cannot
    /// interleave); `None` when there is no such session. `f` sees nothing
    /// of the state.
    pub fn while_known<R>(&self, id: &SessionId, f: impl FnOnce() -> R) -> Option<R> {
        let st = self.lock();
        st.ws.sessions.contains_key(id).then(f)
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
}

/// Forget the recorded pid of `id`'s process, logging what could not be
/// written: the next start would look for a process that is gone.
fn forget_process_logged(store: &mut Store, id: &SessionId) {
    if let Err(e) = store.forget_process(id) {
        tracing::warn!("could not forget the recorded pid of session {id}: {e}");
    }
}

/// Keep `id`'s last screen, logging what could not be written: the session
/// then shows no last screen after a restart.
fn save_screen_logged(store: &mut Store, id: &SessionId, screen: &[u8], now_ms: u64) {
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
