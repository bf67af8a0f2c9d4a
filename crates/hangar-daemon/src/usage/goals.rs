//! Goals (issue 29): `hangar goal ID TEXT`, the MCP tools `goal_start`,
//! `goal_stop` and `goal_done`, and typing the continuation at each end of
//! a turn.
//!
//! Every decision is `hangar_core::goal`'s; this gathers the facts (an end
//! of turn, a failure, a person's typing, the session's limit) and carries
//! the answer out. Ends of turns come from Claude's `Stop` hook and, for
//! Codex and OpenCode, from their transcripts (OpenCode's: its database;
//! `activity::Hub::turn_ends`),
//! never from quiet output alone. It must never type into a session a
//! person typed into since hangar's last prompt, nor while its account is
//! limited (rule 13), and never after the goal ended: all of it is looked at
//! again inside the step that types (`auto_prompt::may_type`), as a turn is
//! waited on to settle first. The goal is kept with the session's usage
//! state, so a restart keeps it.

use std::sync::Arc;
use std::time::Duration;

use hangar_core::SessionId;
use hangar_core::auto_prompt::{AutoPrompt, StandDown};
use hangar_core::goal::{self, Goal, GoalStep, QuietFacts, TurnFacts};
use hangar_protocol::message::codes;
use hangar_protocol::view::GoalView;

use super::Ledger;
use crate::activity::{Hub, Monitor};
use crate::delivery::Delivery;
use crate::errors::ApiError;
use crate::governor::Governor;
use crate::journal::{Caller, Event, Journal};
use crate::sessions::{RunState, Sessions};
use crate::shutdown::Shutdown;

/// The most an end of turn is waited on to settle before typing.
const SETTLE_WAIT: Duration = Duration::from_secs(10);

pub struct Goals {
    pub ledger: Arc<Ledger>,
    pub sessions: Arc<Sessions>,
    pub monitor: Arc<Monitor>,
    pub activity: Arc<Hub>,
    pub delivery: Arc<Delivery>,
    pub governor: Arc<Governor>,
    pub journal: Arc<Journal>,
    pub shutdown: Shutdown,
    /// Wakes the loop that resumes goals paused for a person.
    pub changed: tokio::sync::Notify,
}

/// `ls --json`'s `goal`.
pub fn view(g: &Goal) -> GoalView {
    GoalView {
        text: g.text.clone(),
        turns: g.turns,
        max_turns: g.max_turns,
        state: g.state.name().to_owned(),
        reason: g.reason.clone(),
        summary: g.summary.clone(),
    }
}

impl Goals {
    pub fn view_of(&self, id: &str) -> Option<GoalView> {
        self.ledger.goal_of(id).map(|g| view(&g))
    }

    /// Give `id` a goal (replacing any it had) and type it; `caller` wakes
    /// a hibernated session. A limited account gets the goal paused: it is
    /// typed after the limit's continuation (rule 13).
    pub async fn start(
        &self,
        id: &SessionId,
        text: &str,
        max_turns: Option<u32>,
        caller: Caller,
    ) -> Result<GoalView, ApiError> {
        let is_agent = self.sessions.provider_of(id).is_some_and(|p| p.is_agent());
        if !is_agent {
            return Err(ApiError::invalid(format!(
                "session {} runs no agent CLI; a goal needs claude, codex or opencode",
                id.short()
            )));
        }
        let now = self.ledger.now();
        let mut g =
            Goal::new(text, max_turns, now).map_err(|e| ApiError::invalid(e.to_string()))?;
        let limited =
            self.ledger.limit_stands(id.as_str()) || !self.ledger.may_use_account(id.as_str());
        if limited {
            goal::on_failure(&mut g, "rate_limit");
        }
        let prompt = goal::first_prompt(&g);
        self.ledger
            .update_goal(id.as_str(), |slot| *slot = Some(g.clone()));
        self.journal.record(Event::Goal {
            session: id.to_string(),
            state: g.state.name().to_owned(),
            turns: 0,
            reason: g.reason.clone(),
        });
        if !limited {
            // Held from the budget until the prompt is typed.
            let (state, _held) = self.governor.wake_to_prompt(id, caller).await?;
            match state {
                RunState::Failed(reason) => return Err(ApiError::new(codes::FAILED, reason)),
                RunState::Live | RunState::Spawning => {}
                other => {
                    return Err(ApiError::new(
                        codes::FAILED,
                        format!("session {} is {}", id.short(), other.name()),
                    ));
                }
            }
            self.delivery.send(id, &prompt, true).await?;
        }
        self.changed.notify_one();
        Ok(self.view_of(id.as_str()).unwrap_or_else(|| view(&g)))
    }

    /// `hangar goal ID --stop` (and the MCP `goal_stop`).
    pub fn stop(&self, id: &SessionId) -> Result<GoalView, ApiError> {
        let g = self
            .ledger
            .update_goal(id.as_str(), |slot| {
                slot.as_mut().map(|g| {
                    goal::on_stop(g);
                    g.clone()
                })
            })
            .ok_or_else(|| {
                ApiError::new(
                    codes::NOT_FOUND,
                    format!("session {} has no goal", id.short()),
                )
            })?;
        self.ended(id, &g);
        Ok(view(&g))
    }

    /// The agent's own `goal_done`.
    pub fn done(&self, id: &SessionId, blocked: bool, summary: &str) -> Result<GoalView, ApiError> {
        let g = self
            .ledger
            .update_goal(id.as_str(), |slot| {
                slot.as_mut().map(|g| {
                    goal::on_done(g, blocked, summary);
                    g.clone()
                })
            })
            .ok_or_else(|| {
                ApiError::new(
                    codes::NOT_FOUND,
                    "you have no goal: goal_done ends a goal hangar gave you (hangar goal)",
                )
            })?;
        self.ended(id, &g);
        Ok(view(&g))
    }

    /// The budget stopped `id`: its goal stops too.
    pub fn budget_spent(&self, id: &SessionId) {
        let g = self.ledger.update_goal(id.as_str(), |slot| {
            slot.as_mut().map(|g| {
                goal::on_budget(g);
                g.clone()
            })
        });
        if let Some(g) = g {
            self.ended(id, &g);
        }
    }

    fn ended(&self, id: &SessionId, g: &Goal) {
        self.journal.record(Event::Goal {
            session: id.to_string(),
            state: g.state.name().to_owned(),
            turns: g.turns,
            reason: g.reason.clone(),
        });
    }

    /// An end of `id`'s turn (Claude's `Stop` hook, a transcript's turn
    /// end).
    pub fn turn_ended(self: &Arc<Self>, id: &SessionId) {
        let Some(before) = self.ledger.goal_of(id.as_str()) else {
            return;
        };
        if before.state.ended() {
            return;
        }
        let now = self.ledger.now();
        let facts = TurnFacts {
            now_ms: now,
            person_typed_since_prompt: self
                .ledger
                .person_typed_since(id.as_str(), before.prompted_ms),
            limited: self.ledger.limit_stands(id.as_str())
                || !self.ledger.may_use_account(id.as_str()),
        };
        let (step, after) = self.ledger.update_goal(id.as_str(), |slot| {
            let Some(g) = slot.as_mut() else {
                return (GoalStep::Nothing, None);
            };
            (goal::on_turn_end(g, &facts), Some(g.clone()))
        });
        let Some(after) = after else { return };
        if after.state != before.state || after.turns != before.turns {
            self.journal.record(Event::Goal {
                session: id.to_string(),
                state: after.state.name().to_owned(),
                turns: after.turns,
                reason: after.reason.clone(),
            });
        }
        self.carry_out(id, step);
        self.changed.notify_one();
    }

    /// `id`'s turn ended in an error (Claude's `StopFailure`).
    pub fn failed(&self, id: &SessionId, error: &str) {
        let g = self.ledger.update_goal(id.as_str(), |slot| {
            slot.as_mut().filter(|g| !g.state.ended()).map(|g| {
                goal::on_failure(g, error);
                g.clone()
            })
        });
        if let Some(g) = g {
            self.ended(id, &g);
        }
    }

    fn carry_out(self: &Arc<Self>, id: &SessionId, step: GoalStep) {
        let GoalStep::Type(prompt) = step else {
            return;
        };
        // The prompt this step decided: a goal prompted again since (or a
        // new goal) makes it stale.
        let Some(prompted_ms) = self.ledger.goal_of(id.as_str()).map(|g| g.prompted_ms) else {
            return;
        };
        let this = self.clone();
        let id = id.clone();
        tokio::spawn(async move {
            // The end of a turn (a Stop hook) comes before the activity
            // settles on idle; typed then, the prompt could not be
            // confirmed (and an Enter can be lost, docs/src/cli-facts.md).
            let deadline = tokio::time::Instant::now() + SETTLE_WAIT;
            while this.monitor.is_busy(&id) && tokio::time::Instant::now() < deadline {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            if this.sessions.process(&id).is_none() {
                tracing::info!("goal of {id}: the session is not live; the continuation waits");
                return;
            }
            // Everything the decision depended on is looked at again inside
            // the step that types, right before the keys (rules 13 and 15).
            let check = || {
                this.ledger.may_type(
                    id.as_str(),
                    AutoPrompt::GoalTurn { prompted_ms },
                    prompted_ms,
                )
            };
            match this.delivery.send_checked(&id, &prompt, true, check).await {
                Ok(Ok(_)) => {}
                Ok(Err(why)) => this.stood_down(&id, why),
                Err(e) => {
                    tracing::warn!(
                        "cannot type the goal's continuation into {id}: {}",
                        e.message
                    );
                    let g = this.ledger.update_goal(id.as_str(), |slot| {
                        slot.as_mut().filter(|g| !g.state.ended()).map(|g| {
                            goal::on_failure(g, "typing_failed");
                            g.clone()
                        })
                    });
                    if let Some(g) = g {
                        this.ended(&id, &g);
                    }
                }
            }
        });
    }

    /// A goal's prompt was not typed: what changed since the decision
    /// pauses or stops the goal (`auto_prompt::on_stand_down`), and the journal
    /// says so.
    fn stood_down(&self, id: &SessionId, why: StandDown) {
        tracing::info!(
            "goal of {id}: the continuation is not typed: {}",
            why.reason()
        );
        let changed = self.ledger.update_goal(id.as_str(), |slot| {
            let g = slot.as_mut()?;
            let before = g.clone();
            hangar_core::auto_prompt::on_stand_down(g, why);
            (*g != before).then(|| g.clone())
        });
        if let Some(g) = changed {
            self.ended(id, &g);
        }
        self.changed.notify_one();
    }

    /// Ends of turns the transcripts saw (Codex, OpenCode; Claude without
    /// hooks), and goals paused for a person that may carry on. Sleeps on
    /// no timer while no goal is paused for a person.
    pub async fn run(self: Arc<Self>) {
        let mut down = self.shutdown.watch();
        let mut turn_ends = self.activity.turn_ends();
        loop {
            let nap = self.look_quiet();
            let sleep = async {
                match nap {
                    Some(d) => tokio::time::sleep(d).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                ended = turn_ends.recv() => match ended {
                    Ok(id) => self.turn_ended(&id),
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(n)) => {
                        tracing::warn!("goals: {n} ends of turns were missed");
                    }
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
                },
                _ = sleep => {}
                _ = self.changed.notified() => {}
                _ = down.wait_for(|s| *s) => return,
            }
        }
    }

    /// Resume the goals paused for a person that may carry on; how long
    /// until the next look, `None` when no goal waits on the clock.
    fn look_quiet(self: &Arc<Self>) -> Option<Duration> {
        let now = self.ledger.now();
        let mut next: Option<i64> = None;
        for (id, g) in self.ledger.open_goals() {
            if g.pause != Some(goal::PauseCause::Person) {
                continue;
            }
            let sid = SessionId::from(id.as_str());
            if self.sessions.process(&sid).is_none() {
                // Hibernated: it carries on after a person wakes it and
                // their turn ends.
                continue;
            }
            let facts = QuietFacts {
                now_ms: now,
                person_typed_ms: self.ledger.person_typed_at(&id),
                busy: self.monitor.is_busy(&sid),
                viewed: self.activity.viewers(&sid) > 0,
                limited: self.ledger.limit_stands(&id) || !self.ledger.may_use_account(&id),
            };
            let step = self
                .ledger
                .update_goal(&id, |slot| slot.as_mut().map(|g| goal::on_quiet(g, &facts)));
            match step {
                Some(Ok(step)) => {
                    self.journal.record(Event::Goal {
                        session: id.clone(),
                        state: "running".to_owned(),
                        turns: g.turns,
                        reason: None,
                    });
                    self.carry_out(&sid, step);
                }
                Some(Err(Some(at))) => next = Some(next.map_or(at, |n| n.min(at))),
                _ => {}
            }
        }
        next.map(|at| Duration::from_millis(u64::try_from(at - now).unwrap_or(0).max(50)))
    }
}
