//! Carrying on by itself after a usage limit: at `resets_at + delay +
//! jitter`, type the continuation prompt once into each session the limit
//! stopped mid-task.
//!
//! Every decision is `hangar_core::usage_limits::decide_continue`; this
//! gathers the facts (the clock, mid-turn, a person's typing, hibernated)
//! and carries the answer out. It must never type mid-turn, never into a
//! session a person typed into since the limit, never twice for one limit,
//! and never before the reset (rule 13): a session whose reset is unknown
//! waits for a person.

use std::sync::Arc;
use std::time::Duration;

use hangar_core::SessionId;
use hangar_core::auto_prompt::{AutoPrompt, StandDown};
use hangar_core::usage_limits::{ContinueDecision, ContinueFacts, decide_continue};

use super::Ledger;
use crate::activity::Monitor;
use crate::delivery::Delivery;
use crate::governor::Governor;
use crate::journal::Caller;
use crate::sessions::Sessions;
use crate::shutdown::Shutdown;

/// Looks again at least this often (a clock jump, a turn that ended).
const MAX_NAP: Duration = Duration::from_secs(5);
/// How long (naps of `QUESTION_NAP`) a closed limit question may take to go.
const QUESTION_WAITS: u32 = 20;
const QUESTION_NAP: Duration = Duration::from_millis(100);

pub struct Continuation {
    pub ledger: Arc<Ledger>,
    pub sessions: Arc<Sessions>,
    pub monitor: Arc<Monitor>,
    pub delivery: Arc<Delivery>,
    pub governor: Arc<Governor>,
    pub shutdown: Shutdown,
    /// Sessions being moved to another account now (`[limits] failover`):
    /// a move hibernates and wakes, longer than a look, and is begun once.
    pub moving: std::sync::Mutex<std::collections::BTreeSet<SessionId>>,
}

impl Continuation {
    /// Run until the daemon shuts down.
    pub async fn run(self: Arc<Self>) {
        let mut down = self.shutdown.watch();
        loop {
            // No standing limit: nothing to wait for but a new one (an idle
            // daemon must not wake on a timer).
            match self.look().await {
                Some(nap) => tokio::select! {
                    _ = tokio::time::sleep(nap) => {}
                    _ = self.ledger.changed.notified() => {}
                    _ = down.wait_for(|s| *s) => return,
                },
                None => tokio::select! {
                    _ = self.ledger.changed.notified() => {}
                    _ = down.wait_for(|s| *s) => return,
                },
            }
        }
    }

    /// One look at every standing limit; returns how long to sleep, `None`
    /// when no limit is waiting for anything.
    async fn look(self: &Arc<Self>) -> Option<Duration> {
        let now = self.ledger.now();
        let config = self.ledger.limits_config();
        let mut nap = MAX_NAP;
        let mut waiting = false;
        for (id, limit, auto) in self.ledger.standing_limits() {
            let sid = SessionId::from(id.as_str());
            if self.sessions.meta(&sid).is_none() {
                // Closed: its limit goes with it.
                self.ledger.forget(&id);
                continue;
            }
            let live = self.sessions.process(&sid).is_some();
            let person_typed = self.ledger.person_typed_since(&id, limit.since_ms);
            if config.failover
                && !(live && self.monitor.is_busy(&sid))
                && !person_typed
                && self.fail_over(&sid, &limit, &config.continue_prompt)
            {
                continue;
            }
            let facts = ContinueFacts {
                now_ms: now,
                since_ms: limit.since_ms,
                continue_at: limit.continue_at,
                auto_continue: auto,
                stopped_mid_task: limit.stopped_mid_task,
                mid_turn: live && self.monitor.is_busy(&sid),
                person_typed_since: person_typed,
                hibernated: !live,
                wake_to_continue: config.wake_to_continue,
                already_continued: limit.continued,
                budget_spent: self.ledger.budget_spent_why(&id).is_some(),
            };
            match decide_continue(&facts) {
                ContinueDecision::WaitUntil(t) => {
                    waiting = true;
                    let wait = Duration::from_millis(u64::try_from(t - now).unwrap_or(0));
                    nap = nap.min(wait.max(Duration::from_millis(50)));
                }
                ContinueDecision::WaitForTurnEnd => {
                    waiting = true;
                    nap = nap.min(Duration::from_millis(500));
                }
                ContinueDecision::StandDown(reason) => {
                    self.ledger.stand_down(&id, limit.since_ms, reason)
                }
                ContinueDecision::Type { wake_first } => {
                    if !self.ledger.mark_continued(&id, limit.since_ms) {
                        continue;
                    }
                    let this = self.clone();
                    let prompt = config.continue_prompt.clone();
                    let since = limit.since_ms;
                    tokio::spawn(async move {
                        this.type_continuation(sid, since, wake_first, prompt).await
                    });
                }
            }
        }
        for id in self.ledger.queued_sessions() {
            let sid = SessionId::from(id.as_str());
            if self.sessions.meta(&sid).is_none() {
                self.ledger.forget(&id);
                continue;
            }
            waiting = true;
            if !self.ledger.may_use_account(&id) || self.ledger.budget_spent_why(&id).is_some() {
                // Looked at again when the limit changes, or at the reset;
                // a spent budget holds it until a person raises it.
                continue;
            }
            let live = self.sessions.process(&sid).is_some();
            if live && self.monitor.is_busy(&sid) {
                nap = nap.min(Duration::from_millis(500));
                continue;
            }
            if let Some(prompt) = self.ledger.take_queued_prompt(&id) {
                let this = self.clone();
                tokio::spawn(async move { this.deliver_queued(sid, prompt).await });
                nap = nap.min(Duration::from_millis(500));
            }
        }
        waiting.then_some(nap)
    }

    /// An agent's prompt held while the account was limited, now that it
    /// may be used again.
    async fn deliver_queued(&self, id: SessionId, prompt: String) {
        // Held from the budget until the prompt is typed.
        let _held = match self.governor.wake_to_prompt(&id, Caller::Agent).await {
            Ok((crate::sessions::RunState::Live, held)) => held,
            Ok((other, _)) => {
                tracing::warn!(
                    "a queued prompt for {id} is dropped: it is {}",
                    other.name()
                );
                return;
            }
            Err(e) => {
                tracing::warn!("a queued prompt for {id} is dropped: {}", e.message);
                return;
            }
        };
        let check = || {
            self.ledger
                .may_type(id.as_str(), AutoPrompt::QueuedPrompt, 0)
        };
        match self.delivery.send_checked(&id, &prompt, true, check).await {
            Ok(Ok(_)) => self
                .ledger
                .continued(&id, true, Some("a queued prompt".to_owned())),
            Ok(Err(why)) => {
                tracing::info!("a queued prompt for {id} waits: {}", why.reason());
                self.ledger.requeue_prompt(id.as_str(), prompt);
            }
            Err(e) => tracing::warn!("cannot type a queued prompt into {id}: {}", e.message),
        }
    }

    /// `[limits] failover`: carry limited `id` on under another account of
    /// its provider that no standing limit holds
    /// (`hangar_core::accounts::failover_account`), in a task: the move
    /// (`Governor::move_to_account`, which refuses mid-turn, waiting or
    /// attached), then, when the limit stopped a task, the continuation
    /// prompt. `false` when there is no such account (the limit waits for
    /// its reset as before); `true` while a move is under way.
    pub(crate) fn fail_over(
        self: &Arc<Self>,
        id: &SessionId,
        limit: &hangar_core::usage_limits::SessionLimit,
        prompt: &str,
    ) -> bool {
        let Some(meta) = self.sessions.meta(id) else {
            return false;
        };
        let Some(current) = meta.account.clone() else {
            return false;
        };
        let limited: std::collections::BTreeSet<String> = self
            .ledger
            .standing_limits()
            .into_iter()
            .filter_map(|(other, _, _)| self.sessions.meta(&SessionId::from(other.as_str())))
            .filter_map(|m| m.account)
            .collect();
        let to = {
            let accounts = self.governor.spawner.accounts.get();
            hangar_core::accounts::failover_account(accounts, &current, &meta.provider, |name| {
                !limited.contains(name)
            })
        };
        let Some(to) = to else {
            return false;
        };
        let mut moving = self.moving.lock().unwrap_or_else(|p| p.into_inner());
        if !moving.insert(id.clone()) {
            return true;
        }
        drop(moving);
        let this = self.clone();
        let id = id.clone();
        let mid_task = limit.stopped_mid_task;
        let prompt = prompt.to_owned();
        tokio::spawn(async move {
            match this.governor.move_to_account(&id, &to).await {
                Ok(_) if mid_task => {
                    tracing::info!("{id} carries on under account {to:?} after its limit");
                    let typed = match this.governor.wake_to_prompt(&id, Caller::Agent).await {
                        Ok((_, _held)) => this.delivery.send(&id, &prompt, true).await.map(|_| ()),
                        Err(e) => Err(e),
                    };
                    if let Err(e) = typed {
                        tracing::warn!("cannot type the continuation into {id}: {}", e.message);
                    }
                }
                Ok(_) => tracing::info!("{id} moved to account {to:?} after its limit"),
                // Looked at again at the next look (a turn ends, a person
                // detaches); the reset's continuation stays as it was.
                Err(e) => tracing::info!("{id} cannot move to account {to:?} yet: {}", e.message),
            }
            this.moving
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .remove(&id);
            this.ledger.changed.notify_one();
        });
        true
    }

    /// Close a question the CLI asked at the limit (Codex offers another
    /// model; an Enter there would take it), as its adapter says, and wait
    /// a little for it to go.
    async fn close_limit_question(&self, id: &SessionId) {
        let Some(live) = self.sessions.process(id) else {
            return;
        };
        let Some(provider) = self.sessions.provider_of(id) else {
            return;
        };
        let adapter = hangar_providers::adapter(&provider);
        let Some(keys) = adapter.limit_question_dismissal(&live.text()) else {
            return;
        };
        if let Err(e) = live.write(keys).await {
            tracing::warn!("cannot close {id}'s limit question: {e}");
            return;
        }
        for _ in 0..QUESTION_WAITS {
            tokio::time::sleep(QUESTION_NAP).await;
            if adapter.limit_question_dismissal(&live.text()).is_none() {
                return;
            }
        }
        tracing::warn!("{id}'s limit question is still on screen");
    }

    /// Type the continuation of `id`'s limit that began at `since_ms`,
    /// already marked continued. What the decision depended on is looked
    /// at again before the wake, before the limit question is closed and,
    /// inside the step that types, right before the keys: a limit, a spent
    /// budget, a person's typing or the switch turned off meanwhile stand
    /// it down (rules 13 and 15), and the limit stands again for the
    /// scheduler to decide anew (and journal why).
    pub(crate) async fn type_continuation(
        &self,
        id: SessionId,
        since_ms: i64,
        wake_first: bool,
        prompt: String,
    ) {
        let check = || {
            self.ledger
                .may_type(id.as_str(), AutoPrompt::LimitContinuation, since_ms)
        };
        if let Err(why) = check() {
            return self.stood_down(&id, since_ms, why);
        }
        if wake_first {
            match self.governor.wake_as(&id, Caller::Restore).await {
                Ok(crate::sessions::RunState::Live) => {}
                Ok(other) => {
                    self.ledger.continued(
                        &id,
                        false,
                        Some(format!("the wake ended {}", other.name())),
                    );
                    return;
                }
                Err(e) => {
                    tracing::warn!("cannot wake {id} to continue it: {}", e.message);
                    self.ledger
                        .continued(&id, false, Some("wake failed".to_owned()));
                    return;
                }
            }
        }
        if let Err(why) = check() {
            return self.stood_down(&id, since_ms, why);
        }
        self.close_limit_question(&id).await;
        match self.delivery.send_checked(&id, &prompt, true, check).await {
            Ok(Ok(_)) => self.ledger.continued(&id, true, None),
            Ok(Err(why)) => self.stood_down(&id, since_ms, why),
            Err(e) => {
                tracing::warn!("cannot type the continuation into {id}: {}", e.message);
                self.ledger
                    .continued(&id, false, Some("typing failed".to_owned()));
            }
        }
    }

    fn stood_down(&self, id: &SessionId, since_ms: i64, why: StandDown) {
        tracing::info!(
            "{id}: the limit's continuation is not typed: {}",
            why.reason()
        );
        self.ledger.unmark_continued(id.as_str(), since_ms);
    }
}
