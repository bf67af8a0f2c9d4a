//! Waking a session: single flight (DESIGN.md rule 6). The first caller
//! marks the session `spawning` and spawns through the wake queue; every
//! concurrent caller sees `spawning` and waits for the state to change
//! instead of spawning a second process. What each look decides is
//! `hangar_core::wake_decision`. Making room for the woken session is the
//! governor's `wake_as`, which wraps this one.

use std::sync::Arc;

use hangar_core::SessionId;
use hangar_core::governor::WakePriority;
use hangar_core::wake_decision::{
    WakeLook, WakePhase, WakeRefusal, WakeStep, next_wake_step, refuse_wake,
};
use hangar_protocol::message::codes;

use super::Spawner;
use crate::errors::ApiError;
use crate::journal::{Caller, Event, FailureKind};
use crate::sessions::RunState;
use crate::spawn::start_slot::StartSlot;

impl Spawner {
    /// Make `id` live, joining a spawn already under way. Returns the state
    /// the session ended in (`Live`, or `Failed` with its reason). The
    /// budget is not looked at here (see `Governor::wake_as`).
    pub async fn wake_as(
        self: &Arc<Self>,
        id: &SessionId,
        caller: Caller,
    ) -> Result<RunState, ApiError> {
        self.wake_in_slot(id, caller, StartSlot::none()).await
    }

    /// [`Spawner::wake_as`] holding a restore slot, which the spawn gives up
    /// as soon as its process has shown its first output (`start_slot.rs`).
    pub async fn wake_in_slot(
        self: &Arc<Self>,
        id: &SessionId,
        caller: Caller,
        mut slot: StartSlot,
    ) -> Result<RunState, ApiError> {
        let mut joined = false;
        let mut requested = false;
        // The state before this wake marked it spawning, to go back to when
        // a paused queue refuses a person's wake.
        let before = loop {
            let step = self.sessions.edit(|st| {
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
                let person = caller.is_person();
                let look = WakeLook {
                    phase: match rt.state {
                        RunState::Live => WakePhase::Live,
                        RunState::Spawning => WakePhase::Spawning,
                        _ => WakePhase::Stopped,
                    },
                    joined,
                    person,
                    breaker_open: person && self.queue.snapshot().breaker_open,
                };
                let looked = match next_wake_step(look) {
                    WakeStep::Live => Looked::Done(RunState::Live),
                    WakeStep::Join => Looked::Join(rt.changed.subscribe()),
                    // The spawn we joined failed: report it, don't start another.
                    WakeStep::ReportJoined => Looked::Done(rt.state.clone()),
                    // A person is told at once, never left waiting silently
                    // behind an open breaker.
                    WakeStep::QueuePaused => Looked::Paused,
                    WakeStep::Spawn => {
                        let before = rt.state.clone();
                        rt.set_state(RunState::Spawning);
                        Looked::Spawn(before)
                    }
                };
                Ok((record_request, looked))
            });
            let (record_request, step) = step?;
            if record_request {
                requested = true;
                self.journal.record(Event::WakeRequest {
                    session: id.to_string(),
                    caller,
                });
            }
            let mut rx = match step {
                Looked::Done(state) => return Ok(state),
                Looked::Paused => return Err(self.queue_paused_error()),
                Looked::Spawn(before) => break before,
                Looked::Join(rx) => rx,
            };
            // Another caller is spawning this session: wait for its outcome,
            // forking nothing, so a restore slot goes to the next pane.
            slot.release();
            joined = true;
            if rx.changed().await.is_err() {
                return Err(ApiError::internal("session runtime went away"));
            }
        };
        let state = match self.spawn_marked(id, caller, slot).await {
            Ok(state) => state,
            Err(paused) => {
                self.sessions.edit(|st| {
                    if let Some(rt) = st.runtimes.get_mut(id) {
                        rt.set_state(before);
                    }
                });
                self.journal.record(Event::WakeResult {
                    session: id.to_string(),
                    caller,
                    ok: false,
                    joined: false,
                });
                return Err(paused);
            }
        };
        self.journal.record(Event::WakeResult {
            session: id.to_string(),
            caller,
            ok: state == RunState::Live,
            joined: false,
        });
        Ok(state)
    }

    /// Spawn a session already marked `Spawning` by the caller, through the
    /// wake queue. A person's wake is refused (not queued) while the breaker
    /// is open.
    async fn spawn_marked(
        self: &Arc<Self>,
        id: &SessionId,
        caller: Caller,
        start_slot: StartSlot,
    ) -> Result<RunState, ApiError> {
        // The queue's slot covers the whole spawn, settle included: its
        // breaker needs the outcome. Restore has its own bound (`start_slot`)
        // and only honours the breaker here.
        let slot = match caller {
            Caller::Restore => self.queue.acquire_breaker_only().await,
            Caller::Agent => self.queue.acquire(WakePriority::Background).await,
            _ => self.queue.acquire(WakePriority::Person).await,
        };
        let Some(slot) = slot else {
            return Err(self.queue_paused_error());
        };
        let begun = std::time::Instant::now();
        let mut outcome = self.try_spawn(id, start_slot).await;
        let auth = matches!(&outcome, Err(f) if f.kind == FailureKind::AuthFailure);
        if self.queue.finish(slot, auth) {
            let failures = self.governor.breaker_threshold;
            tracing::warn!("{failures} consecutive authentication failures: wake queue paused");
            self.journal.record(Event::BreakerTrip { failures });
            if let Err(f) = &mut outcome {
                f.message.push_str(&format!(
                    "; that is {failures} authentication failures in a row, so the wake queue is now paused: log in again, then `hangar wake --resume-queue`"
                ));
            }
        }
        let state = self.sessions.edit(|st| {
            let rt = st.runtime(id);
            // Journalled under the lock, before the state changes: a waiter
            // woken by the change (or the exit watcher) records after it.
            let state = match outcome {
                Ok(()) => {
                    let pid = rt.proc.as_ref().map(|p| p.pid).unwrap_or(0);
                    self.journal.record(Event::SpawnEnd {
                        session: id.to_string(),
                        pid,
                        duration_ms: begun.elapsed().as_millis() as u64,
                    });
                    RunState::Live
                }
                Err(failure) => {
                    rt.proc = None;
                    self.journal.record(Event::SpawnFailed {
                        session: id.to_string(),
                        kind: failure.kind,
                        exit_code: failure.exit_code,
                    });
                    RunState::Failed(failure.message)
                }
            };
            rt.set_state(state.clone());
            state
        });
        Ok(state)
    }

    /// The answer to a person's wake while the breaker holds the queue.
    fn queue_paused_error(&self) -> ApiError {
        let failures = self.queue.snapshot().consecutive_auth_failures;
        ApiError::new(
            codes::FAILED,
            format!(
                "the wake queue is paused after {failures} consecutive authentication failures; log in to the provider again, then run `hangar wake --resume-queue`"
            ),
        )
    }
}

/// What one look at a session's runtime did, carried out of the lock.
enum Looked {
    /// Already live, or the spawn this wake joined ended so.
    Done(RunState),
    /// Another caller is spawning it: wait for the change.
    Join(tokio::sync::watch::Receiver<u64>),
    /// Marked spawning by this wake; the state before, to go back to.
    Spawn(RunState),
    /// A person's wake while the breaker holds the queue.
    Paused,
}
