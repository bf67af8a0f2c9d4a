//! Runtime operations: each session's process and run state (wake's look,
//! a spawn's end, stop, exit, shutdown, the restore's progress) and the
//! facts the governor, identity and activity read about running sessions.
//! Each takes the lock once and lets go before it returns.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Instant;

use hangar_core::in_use::counts_toward_budget;
use hangar_core::wake_decision::{
    WakeLook, WakePhase, WakeRefusal, WakeStep, next_wake_step, refuse_wake,
};
use hangar_core::{Placement, Provider, SessionId, SessionMeta};
use hangar_protocol::message::codes;
use tokio::sync::watch;

use super::Sessions;
use super::state::{RestoreProgress, RunState};
use crate::errors::ApiError;
use crate::pty::LiveProcess;

/// What one look of a wake at a session's runtime decided, carried out of
/// the lock.
pub enum WakeLooked {
    /// Already live, or the spawn this wake joined ended so.
    Done(RunState),
    /// Another caller is spawning it: wait for the change.
    Join(watch::Receiver<u64>),
    /// Marked spawning by this wake; the state before, to go back to.
    Spawn(RunState),
    /// A person's wake while the breaker holds the queue.
    Paused,
}

/// A live agent the budget may weigh: what the governor's rules read.
pub struct BudgetCandidate {
    pub id: SessionId,
    pub meta: SessionMeta,
    pub pid: u32,
    pub visible: bool,
    pub pinned: bool,
}

/// What identity reads to find a session's conversation: its folder, its
/// durable id, the ids other sessions of its provider hold, and the pids
/// of the running ones beside it in the same folder.
pub struct IdentityFacts {
    pub cwd: String,
    pub current: Option<String>,
    pub held: BTreeSet<String>,
    pub neighbours: Vec<u32>,
}

/// How one pane of a restore ended, for its progress.
pub enum RestoreOutcome<'a> {
    Ended(&'a RunState),
    Refused(&'a ApiError),
}

impl Sessions {
    pub fn run_state(&self, id: &SessionId) -> RunState {
        self.lock().run_state(id)
    }

    /// The session's running process, if any.
    pub fn process(&self, id: &SessionId) -> Option<Arc<LiveProcess>> {
        self.lock().runtimes.get(id).and_then(|r| r.proc.clone())
    }

    pub fn shutting_down(&self) -> bool {
        self.lock().shutting_down
    }

    /// One look of a wake (`hangar_core::wake_decision`): refuse it (the
    /// daemon shutting down, no such session, a duplicate running), report
    /// a state, join a spawn under way, or mark the session spawning.
    /// Returns whether this look is the wake's request (to journal) too.
    pub fn wake_look(
        &self,
        id: &SessionId,
        joined: bool,
        requested: bool,
        person: bool,
        breaker_open: impl FnOnce() -> bool,
    ) -> Result<(bool, WakeLooked), ApiError> {
        let mut st = self.lock();
        let exists = st.ws.sessions.contains_key(id);
        match refuse_wake(st.shutting_down, exists) {
            Some(WakeRefusal::ShuttingDown) => {
                return Err(ApiError::new(
                    codes::SHUTTING_DOWN,
                    "the daemon is shutting down",
                ));
            }
            Some(WakeRefusal::NoSession) => {
                return Err(ApiError::not_found(format!("no session {id}")));
            }
            None => {}
        }
        st.refuse_duplicate_wake(id)?;
        let rt = st.runtime(id);
        let record_request = !requested && rt.state != RunState::Live;
        let look = WakeLook {
            phase: match rt.state {
                RunState::Live => WakePhase::Live,
                RunState::Spawning => WakePhase::Spawning,
                _ => WakePhase::Stopped,
            },
            joined,
            person,
            breaker_open: person && breaker_open(),
        };
        let looked = match next_wake_step(look) {
            WakeStep::Live => WakeLooked::Done(RunState::Live),
            WakeStep::Join => WakeLooked::Join(rt.changed.subscribe()),
            // The spawn we joined failed: report it, don't start another.
            WakeStep::ReportJoined => WakeLooked::Done(rt.state.clone()),
            // A person is told at once, never left waiting silently behind
            // an open breaker.
            WakeStep::QueuePaused => WakeLooked::Paused,
            WakeStep::Spawn => {
                let before = rt.state.clone();
                rt.set_state(RunState::Spawning);
                WakeLooked::Spawn(before)
            }
        };
        Ok((record_request, looked))
    }

    /// Put back the state a session had (a paused queue refused a wake that
    /// had marked it spawning).
    pub fn restore_run_state(&self, id: &SessionId, before: RunState) {
        if let Some(rt) = self.lock().runtimes.get_mut(id) {
            rt.set_state(before);
        }
    }

    /// A spawn ended: live, or failed with `failure` (its process dropped).
    /// `record` journals it under the lock, before the state changes, with
    /// the process's pid (0 when none), so a waiter woken by the change (or
    /// the exit watcher) records after it.
    pub fn finish_spawn(
        &self,
        id: &SessionId,
        failure: Option<String>,
        record: impl FnOnce(u32),
    ) -> RunState {
        let mut st = self.lock();
        let rt = st.runtime(id);
        let state = match failure {
            None => {
                record(rt.proc.as_ref().map(|p| p.pid).unwrap_or(0));
                RunState::Live
            }
            Some(message) => {
                rt.proc = None;
                record(0);
                RunState::Failed(message)
            }
        };
        rt.set_state(state.clone());
        state
    }

    /// Mark a session failed for `reason` (its worktree's setup failed).
    pub fn mark_failed(&self, id: &SessionId, reason: String) -> RunState {
        let failed = RunState::Failed(reason);
        self.lock().runtime(id).set_state(failed.clone());
        failed
    }

    /// A watch on a session that is spawning, to wait out the spawn; `None`
    /// when it is not spawning.
    pub fn spawning_watch(&self, id: &SessionId) -> Result<Option<watch::Receiver<u64>>, ApiError> {
        let mut st = self.lock();
        if !st.ws.sessions.contains_key(id) {
            return Err(ApiError::not_found(format!("no session {id}")));
        }
        let rt = st.runtime(id);
        Ok((rt.state == RunState::Spawning).then(|| rt.changed.subscribe()))
    }

    /// Take a session's process out of its runtime and mark it hibernated
    /// (the caller stops the process off the lock).
    pub fn take_process(&self, id: &SessionId) -> Option<Arc<LiveProcess>> {
        let mut st = self.lock();
        let rt = st.runtime(id);
        let live = rt.proc.take();
        rt.set_state(RunState::Hibernated);
        live
    }

    /// [`Sessions::take_process`] of each of `ids` that has a runtime.
    pub fn take_processes(&self, ids: &[SessionId]) -> Vec<Arc<LiveProcess>> {
        let mut st = self.lock();
        ids.iter()
            .filter_map(|id| {
                let rt = st.runtimes.get_mut(id)?;
                let live = rt.proc.take();
                rt.set_state(RunState::Hibernated);
                live
            })
            .collect()
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
        super::forget_process_logged(&mut st.store, id);
        let is_current = st
            .runtimes
            .get(id)
            .and_then(|r| r.proc.as_ref())
            .is_some_and(|p| Arc::ptr_eq(p, live));
        if !is_current {
            return false;
        }
        if st.ws.sessions.contains_key(id) {
            super::save_screen_logged(&mut st.store, id, screen, now_ms);
        }
        let rt = st.runtime(id);
        rt.proc = None;
        if rt.state == RunState::Live {
            rt.set_state(RunState::Exited(code));
            return true;
        }
        false
    }

    /// `id`'s record while `live` is still its process (an activity
    /// watcher's look); `None` once the process was replaced or the session
    /// is gone.
    pub fn meta_while_current(
        &self,
        id: &SessionId,
        live: &Arc<LiveProcess>,
    ) -> Option<SessionMeta> {
        let st = self.lock();
        let is_current = st
            .runtimes
            .get(id)
            .and_then(|r| r.proc.as_ref())
            .is_some_and(|p| Arc::ptr_eq(p, live));
        is_current
            .then(|| st.ws.sessions.get(id).cloned())
            .flatten()
    }

    /// Whether the last start of `id` resumed a provider session, and its
    /// provider session id.
    pub fn started_and_provider_id(&self, id: &SessionId) -> (Option<bool>, Option<String>) {
        let st = self.lock();
        (
            st.runtimes.get(id).and_then(|r| r.resumed),
            st.ws
                .sessions
                .get(id)
                .and_then(|m| m.provider_session.as_ref())
                .map(|p| p.id.clone()),
        )
    }

    /// The live orchestration children of `parent`.
    pub fn live_children(&self, parent: &SessionId) -> Vec<SessionId> {
        let st = self.lock();
        hangar_core::orchestration::live_children(&st.ws, parent, |id| {
            matches!(st.run_state(id), RunState::Live)
        })
    }

    /// The pids of the live sessions that count toward the budget.
    pub fn budget_pids(&self) -> Vec<u32> {
        let st = self.lock();
        st.runtimes
            .iter()
            .filter(|(id, rt)| {
                st.ws
                    .sessions
                    .get(*id)
                    .is_some_and(|m| counts_toward_budget(&m.provider, rt.state == RunState::Live))
            })
            .filter_map(|(_, rt)| rt.proc.as_ref().map(|p| p.pid))
            .collect()
    }

    /// How many live sessions count toward the budget (`status`).
    pub fn budget_live_count(&self) -> usize {
        let st = self.lock();
        st.runtimes
            .iter()
            .filter(|(id, r)| {
                st.ws
                    .sessions
                    .get(*id)
                    .is_some_and(|m| counts_toward_budget(&m.provider, r.state == RunState::Live))
            })
            .count()
    }

    /// Every live agent that counts toward the budget, with its process.
    pub fn budget_candidates(&self) -> Vec<BudgetCandidate> {
        let st = self.lock();
        st.runtimes
            .iter()
            .filter_map(|(id, rt)| {
                let meta = st.ws.sessions.get(id)?;
                if !counts_toward_budget(&meta.provider, rt.state == RunState::Live) {
                    return None;
                }
                let proc = rt.proc.as_ref()?;
                Some(BudgetCandidate {
                    id: id.clone(),
                    meta: meta.clone(),
                    pid: proc.pid,
                    visible: matches!(st.ws.placement_of(id), Some((Placement::Pane, _))),
                    pinned: st.ws.is_pinned(id),
                })
            })
            .collect()
    }

    /// When `id` was last used and whether it runs (close-idle's look).
    pub fn last_use(&self, id: &SessionId) -> Option<(u64, bool)> {
        let st = self.lock();
        let meta = st.ws.sessions.get(id)?;
        let running = st.runtimes.get(id).is_some_and(|r| r.state.is_running());
        Some((meta.last_active_ms, running))
    }

    /// What identity reads about `id` and the other sessions of `provider`.
    pub fn identity_facts(&self, id: &SessionId, provider: &Provider) -> Option<IdentityFacts> {
        let st = self.lock();
        let meta = st.ws.sessions.get(id)?;
        let same_provider = st
            .ws
            .sessions
            .iter()
            .filter(|(o, m)| *o != id && m.provider == *provider);
        let mut held = BTreeSet::new();
        let mut neighbours = Vec::new();
        for (other, m) in same_provider {
            if let Some(pid) = m.durable_provider_id() {
                held.insert(pid.to_owned());
            }
            let beside = m.cwd == meta.cwd && st.run_state(other).is_running();
            if beside && let Some(p) = st.runtimes.get(other).and_then(|r| r.proc.as_ref()) {
                neighbours.push(p.pid);
            }
        }
        // A fork's origin is its parent's, even once the parent is closed.
        if let Some(origin) = meta
            .forked_from
            .as_ref()
            .and_then(|o| o.provider_session_id.clone())
        {
            held.insert(origin);
        }
        Some(IdentityFacts {
            cwd: meta.cwd.clone(),
            current: meta.durable_provider_id().map(str::to_owned),
            held,
            neighbours,
        })
    }

    /// `id`'s folder while it runs; `None` when it is not running, an error
    /// when there is no such session.
    pub fn running_cwd(&self, id: &SessionId) -> Result<Option<String>, ApiError> {
        let st = self.lock();
        let meta = st
            .ws
            .sessions
            .get(id)
            .ok_or_else(|| ApiError::not_found(format!("no session {id}")))?;
        Ok(st.run_state(id).is_running().then(|| meta.cwd.clone()))
    }

    /// A start's restore, from its first look: mark the panes it forks as
    /// awaiting their slot and count them; returns them, in order.
    pub fn adopt_first_forks(&self, forks: Vec<SessionId>) -> Vec<SessionId> {
        let mut st = self.lock();
        // A hibernated session gets no runtime until something wakes or
        // watches it: without one it reads as hibernated, and 10,000 of them
        // would cost a map entry and a watch channel each. Shown as
        // `spawning` until its slot comes (cleared by `restore_outcome`).
        for id in &forks {
            st.runtime(id).awaiting_restore = true;
        }
        st.restore.expected += forks.len();
        if st.restore.started.is_none() {
            st.restore.started = Some(Instant::now());
        }
        st.restore.duration_ms = None;
        forks
    }

    /// Once the whole model is loaded: every session the start's restore
    /// does not fork stays hibernated; counted in the restore's progress.
    pub fn count_hibernated(&self, forks: &[SessionId]) -> usize {
        let mut st = self.lock();
        let forked = forks
            .iter()
            .filter(|id| st.ws.sessions.contains_key(*id))
            .count();
        let hibernated = st.ws.sessions.len() - forked;
        st.restore.hibernated += hibernated;
        hibernated
    }

    /// How many sessions a restore leaves hibernated, once the whole store
    /// is loaded (not known during a start's first look).
    pub fn restore_hibernated(&self) -> Option<usize> {
        let st = self.lock();
        st.store.is_loaded().then_some(st.restore.hibernated)
    }

    /// One pane of a restore ended: it no longer awaits its slot, and the
    /// progress counts it. A refused wake (a duplicate provider id) starts
    /// no process: the pane says why, not only the count.
    pub fn restore_outcome(&self, id: &SessionId, outcome: RestoreOutcome<'_>) {
        let mut st = self.lock();
        if let Some(rt) = st.runtimes.get_mut(id) {
            rt.awaiting_restore = false;
        }
        match outcome {
            RestoreOutcome::Ended(RunState::Failed(reason)) => {
                tracing::warn!("restore of {id} failed: {reason}");
                st.restore.failed += 1;
            }
            RestoreOutcome::Ended(_) => st.restore.restored += 1,
            RestoreOutcome::Refused(e) => {
                tracing::warn!("restore of {id} failed: {}", e.message);
                st.restore.failed += 1;
                if e.code != codes::SHUTTING_DOWN
                    && let Some(rt) = st.runtimes.get_mut(id)
                {
                    rt.set_state(RunState::Failed(e.message.clone()));
                }
            }
        }
        st.restore.finished += 1;
    }

    /// The restore is over: its duration (from its first start, else from
    /// `started`), and the progress as it ends.
    pub fn finish_restore(&self, started: Instant) -> RestoreProgress {
        let mut st = self.lock();
        st.restore.duration_ms = Some(
            st.restore
                .started
                .map(|s| s.elapsed())
                .unwrap_or_else(|| started.elapsed())
                .as_millis() as u64,
        );
        st.restore.clone()
    }
}
