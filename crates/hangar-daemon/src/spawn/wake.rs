//! Waking a session: single flight (DESIGN.md rule 6). The first caller
//! marks the session `spawning` and spawns through the wake queue; every
//! concurrent caller sees `spawning` and waits for the state to change
//! instead of spawning a second process. What each look decides is
//! `hangar_core::wake_decision`. Making room for the woken session is the
//! governor's `wake_as`, which wraps this one.

use std::sync::Arc;

use hangar_core::SessionId;
use hangar_core::governor::WakePriority;
use hangar_protocol::message::codes;

use super::Spawner;
use crate::errors::ApiError;
use crate::journal::{Caller, Event, FailureKind};
use crate::lifecycle::LifecycleEvent;
use crate::sessions::{RunState, WakeLooked};
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
            let step = self
                .sessions
                .wake_look(id, joined, requested, caller.is_person(), || {
                    self.queue.snapshot().breaker_open
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
                WakeLooked::Done(state) => return Ok(state),
                WakeLooked::Paused => return Err(self.queue_paused_error()),
                WakeLooked::Spawn(before) => break before,
                WakeLooked::Join(rx) => rx,
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
                self.sessions.restore_run_state(id, before);
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
        // A fork's handoff prompt is typed once it runs (lib.rs listens).
        match state {
            RunState::Live => self.lifecycle.announce(LifecycleEvent::Woke {
                session: id.clone(),
            }),
            RunState::Failed(_) => self.lifecycle.announce(LifecycleEvent::Failed {
                session: id.clone(),
            }),
            _ => {}
        }
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
            let failures = self.start_rules.breaker_threshold;
            tracing::warn!("{failures} consecutive authentication failures: wake queue paused");
            self.journal.record(Event::BreakerTrip { failures });
            if let Err(f) = &mut outcome {
                f.message.push_str(&format!(
                    "; that is {failures} authentication failures in a row, so the wake queue is now paused: log in again, then `hangar wake --resume-queue`"
                ));
            }
        }
        let failure = outcome.as_ref().err().map(|f| f.message.clone());
        // Journalled under the lock, before the state changes: a waiter
        // woken by the change (or the exit watcher) records after it.
        let state = self
            .sessions
            .finish_spawn(id, failure, |pid| match &outcome {
                Ok(()) => self.journal.record(Event::SpawnEnd {
                    session: id.to_string(),
                    pid,
                    duration_ms: begun.elapsed().as_millis() as u64,
                }),
                Err(failure) => self.journal.record(Event::SpawnFailed {
                    session: id.to_string(),
                    kind: failure.kind,
                    exit_code: failure.exit_code,
                }),
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
