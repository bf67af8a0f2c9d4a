//! Persistence operations: what the daemon observed and keeps (a last use,
//! a provider id, a launch's minted id, a stopped session's screen, pids),
//! the store's reads (saved screens, recorded processes, export), import,
//! a store re-created after its file was deleted, and the notices `status`
//! shows. Each takes the lock once; the store's own transaction is the only
//! disk work done under it.

use std::path::Path;

use anyhow::Context;
use hangar_core::ledger::{self, IdDecision, Observation};
use hangar_core::{ProviderSessionId, RestorePlan, SessionId, Workspace};
use hangar_store::{RecordedProcess, Screens, Store, StoreError};

use super::Sessions;
use crate::errors::ApiError;

impl Sessions {
    /// Persist the model, keeping it in memory when the store cannot write
    /// (`State::save_observed`).
    pub fn save_observed(&self) -> Result<(), ApiError> {
        self.lock().save_observed(&[])
    }

    /// A person or an agent used `id` at `now_ms`: its last-use time, kept
    /// in memory until the next save.
    pub fn touch(&self, id: &SessionId, now_ms: u64) {
        if let Some(m) = self.lock().ws.sessions.get_mut(id) {
            m.last_active_ms = now_ms;
        }
    }

    /// A use of `id` at `now_ms`, stored when `hangar_core::in_use::touch_is_due`
    /// says so (an agent's calls are throttled).
    pub fn touch_if_due(&self, id: &SessionId, now_ms: u64, throttled: bool) {
        let mut st = self.lock();
        let Some(meta) = st.ws.sessions.get_mut(id) else {
            return;
        };
        if !hangar_core::in_use::touch_is_due(meta.last_active_ms, now_ms, throttled) {
            return;
        }
        meta.last_active_ms = now_ms;
        if let Err(e) = st.save_observed(&[]) {
            tracing::warn!("cannot store the last use of {id}: {e:?}");
        }
    }

    /// `id` runs under `account` from its next start on (`None`: the
    /// provider's own login), its CLI with the config folder `folder`
    /// (`None`: the daemon's), and the ledger records the move (its
    /// conversation already carried there); stored at once.
    pub fn set_account(
        &self,
        id: &SessionId,
        account: Option<String>,
        folder: Option<&str>,
        now_ms: u64,
    ) -> Result<(), ApiError> {
        let mut st = self.lock();
        let Some(meta) = st.ws.sessions.get_mut(id) else {
            return Err(ApiError::not_found(format!("no session {id}")));
        };
        hangar_core::ledger::move_to_account(meta, account, folder, now_ms);
        st.save(&[])
    }

    /// Keep `id`'s CLI state folder as its account's config now says
    /// (a start reads the account afresh), saved only when it changed.
    pub fn set_state_folder(&self, id: &SessionId, folder: Option<&str>) -> Result<(), ApiError> {
        let mut st = self.lock();
        let Some(meta) = st.ws.sessions.get_mut(id) else {
            return Err(ApiError::not_found(format!("no session {id}")));
        };
        if meta.state_folder.as_deref() == folder {
            return Ok(());
        }
        meta.state_folder = folder.map(Box::from);
        st.save(&[])
    }

    /// Forget a session's recorded pid (its process ended).
    pub fn forget_process(&self, id: &SessionId) {
        super::forget_process_logged(&mut self.lock().store, id);
    }

    /// Keep the last screen of a session whose process was stopped, and
    /// forget that process's pid. What cannot be written is logged: the
    /// session then shows no last screen, or a restart looks for a process
    /// that is gone (harmless: its start time no longer matches).
    pub fn keep_stopped_screen(&self, id: &SessionId, screen: &[u8], now_ms: u64) {
        let mut st = self.lock();
        super::save_screen_logged(&mut st.store, id, screen, now_ms);
        super::forget_process_logged(&mut st.store, id);
    }

    /// A session's saved screen (its last, kept when it stopped).
    pub fn load_screen(&self, id: &SessionId) -> Result<Option<Vec<u8>>, StoreError> {
        self.lock().store.load_screen(id)
    }

    /// The processes the store recorded (a predecessor's, at a start).
    pub fn recorded_processes(&self) -> Result<Vec<RecordedProcess>, StoreError> {
        self.lock().store.recorded_processes()
    }

    /// What a launch decided about `id`'s record: the provider session id
    /// it minted and the dangerous setting it ran with, saved in one store
    /// transaction when either changed.
    pub fn record_launch(
        &self,
        id: &SessionId,
        minted: Option<ProviderSessionId>,
        dangerous: bool,
    ) -> Result<(), ApiError> {
        let mut st = self.lock();
        let mut changed = false;
        if let Some(minted) = minted
            && let Some(m) = st.ws.sessions.get_mut(id)
        {
            m.provider_session = Some(minted);
            changed = true;
        }
        if let Some(m) = st.ws.sessions.get_mut(id)
            && m.dangerous != dangerous
        {
            m.dangerous = dangerous;
            changed = true;
        }
        if changed { st.save(&[]) } else { Ok(()) }
    }

    /// A fork's handoff prompt (issue 30), taken out of its record and
    /// saved before the caller types it: typed at most once, even across a
    /// restart. `None` when it has none (left).
    pub fn take_pending_prompt(&self, id: &SessionId) -> Result<Option<String>, ApiError> {
        let mut st = self.lock();
        let Some(text) = st
            .ws
            .sessions
            .get_mut(id)
            .and_then(|m| m.forked_from.as_mut())
            .and_then(|o| o.pending_prompt.take())
        else {
            return Ok(None);
        };
        if let Err(e) = st.save(&[]) {
            if let Some(o) = st
                .ws
                .sessions
                .get_mut(id)
                .and_then(|m| m.forked_from.as_mut())
            {
                o.pending_prompt = Some(text);
            }
            return Err(e);
        }
        Ok(Some(text))
    }

    /// Record an observed provider session id if the ledger accepts it;
    /// persist it, and add a notice for a duplicate it creates. Returns
    /// whether the session's record changed.
    pub fn record_provider_id(
        &self,
        id: &SessionId,
        observed: &Observation,
        session_cwd: &str,
        now_ms: u64,
    ) -> bool {
        let mut st = self.lock();
        let Some(meta) = st.ws.sessions.get_mut(id) else {
            return false;
        };
        let decision = ledger::decide_for(meta, observed, session_cwd, now_ms);
        match &decision {
            IdDecision::Refuse(why) => {
                tracing::debug!("not adopting provider id {} for {id}: {why}", observed.id);
                return false;
            }
            IdDecision::Replace { .. } => tracing::info!(
                "session {id}: provider session id {} -> {} ({:?})",
                meta.provider_session
                    .as_ref()
                    .map(|p| p.id.as_str())
                    .unwrap_or("none"),
                observed.id,
                observed.source
            ),
            _ => {}
        }
        if !ledger::apply(meta, decision) {
            return false;
        }
        if let Err(e) = st.save_observed(&[]) {
            tracing::warn!("could not save the provider id of {id}: {}", e.message);
        }
        let dups = ledger::duplicates_of(&st.ws, id);
        if !dups.is_empty() {
            let notice = format!(
                "session {id} now shares its provider session id {} with {}; `hangar doctor` shows how to fix it",
                observed.id,
                dups.iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            tracing::warn!("{notice}");
            st.notices.push(notice);
        }
        true
    }

    /// `hangar doctor --fork`: forget a stopped session's provider session
    /// id, so its next start is a fresh conversation; returns the id and
    /// the provider id forgotten.
    pub fn fork_provider_id(
        &self,
        given: &str,
        now_ms: u64,
    ) -> Result<(SessionId, Option<String>), ApiError> {
        let mut st = self.lock();
        let id = st.resolve_session(given)?;
        if st.run_state(&id).is_running() {
            return Err(ApiError::invalid(format!(
                "session {id} is running; forking it now would leave its process writing the \
                 old conversation. Run `hangar hibernate {id}` first, then `hangar doctor --fork {id}`"
            )));
        }
        let meta = st
            .ws
            .sessions
            .get_mut(&id)
            .ok_or_else(|| ApiError::not_found(format!("no session {id}")))?;
        let old = ledger::forget_provider_id(meta, now_ms);
        st.save(&[])?;
        Ok((id, old))
    }

    /// A line for `status`'s notices.
    pub fn notice(&self, line: String) {
        self.lock().notices.push(line);
    }

    /// A line for `status`'s notices unless it is there already; returns
    /// whether it was added.
    pub fn notice_once(&self, line: String) -> bool {
        let mut st = self.lock();
        if st.notices.contains(&line) {
            return false;
        }
        st.notices.push(line);
        true
    }

    /// `hangar export`: the workspace and every session's last screen (a
    /// live session's is the one it shows now: what it would keep if it
    /// were hibernated, and what the imported copy must show).
    pub fn export_document(&self, now_ms: u64) -> Result<String, ApiError> {
        let st = self.lock();
        let mut screens = st.store.screens()?;
        for (id, rt) in &st.runtimes {
            if let Some(live) = &rt.proc {
                let saved = hangar_store::SavedScreen {
                    screen: live.formatted(),
                    updated_ms: now_ms,
                };
                screens.insert(id.clone(), saved);
            }
        }
        Ok(hangar_store::export_document(&st.ws, &screens))
    }

    /// The workspace model as it is now (the `workspace` request).
    pub fn workspace(&self) -> Workspace {
        self.lock().ws.clone()
    }

    /// Import `imported` (with its screens) into the model through `merge`,
    /// saved in one transaction; its sessions join the restore's progress.
    /// Returns the ones to spawn (the imported visible panes).
    pub fn import(
        &self,
        imported: &Workspace,
        screens: &Screens,
        merge: impl FnOnce(Workspace, Workspace) -> Result<Workspace, ApiError>,
    ) -> Result<Vec<SessionId>, ApiError> {
        let mut st = self.lock();
        let merged = merge(st.ws.clone(), imported.clone())?;
        st.store.save_with_screens(&merged, &[], screens)?;
        st.ws = merged;
        let plan = RestorePlan::new(imported.clone());
        for id in &plan.hibernate {
            st.runtime(id);
        }
        st.restore.expected += plan.spawn.len();
        st.restore.hibernated += plan.hibernate.len();
        Ok(plan.spawn)
    }

    /// Write the whole workspace, the saved screens and the live processes
    /// (their start times from `start_time`) to a new store file at
    /// `store_path`, and use it from now on; a file someone put there is
    /// moved aside, never overwritten. Under the lock from the first read
    /// to the switch, so no save lands in the old file meanwhile. The
    /// notice it adds names `home`.
    pub fn rewrite_store(
        &self,
        store_path: &Path,
        home: &Path,
        now_ms: u64,
        start_time: impl Fn(u32) -> Option<u64>,
    ) -> anyhow::Result<()> {
        let mut st = self.lock();
        let screens = st
            .store
            .screens()
            .context("cannot read the saved screens from the old store")?;
        let store_replaced = store_path.exists();
        if store_replaced {
            let aside = store_path.with_extension(format!("db.replaced-{now_ms}"));
            std::fs::rename(store_path, &aside)
                .with_context(|| format!("cannot move {} aside", store_path.display()))?;
        }
        let fresh = Store::open(store_path)
            .with_context(|| format!("cannot create the store {}", store_path.display()))?;
        let mut store = fresh.store;
        store
            .save_with_screens(&st.ws, &[], &screens)
            .context("cannot write the workspace to the new store")?;
        for (id, rt) in &st.runtimes {
            if let Some(p) = &rt.proc {
                let start = start_time(p.pid).unwrap_or(0);
                if let Err(e) = store.record_process(id, p.pid, p.pgid(), start) {
                    tracing::warn!("could not record pid of {id} in the new store: {e}");
                }
            }
        }
        st.store = store;
        let msg = format!(
            "{} was {} while the daemon ran; it was re-created and the workspace ({} sessions) written again",
            home.display(),
            if store_replaced {
                "replaced"
            } else {
                "deleted"
            },
            st.ws.sessions.len()
        );
        tracing::warn!("{msg}");
        st.notices.push(msg);
        Ok(())
    }
}
