//! May this automatic prompt be typed now? The one check every prompt hangar
//! types on its own (a goal's turn, a limit's continuation, an agent's prompt
//! held for a limit) passes at the moment of typing (DESIGN rules 13 and 15).
//!
//! The decision to type is taken earlier (at an end of turn, at a limit's
//! reset), and a turn is then waited on to settle: a `goal --stop`, a limit,
//! a spent budget or a person's typing can arrive in between. So the daemon
//! gathers these facts again right before the first key goes out (inside the
//! step that types) and types only when this says so; it must never type
//! after the state the decision depended on changed.
//!
//! Pure: no clock, no I/O.

use crate::goal::{self, Goal, GoalState};

/// What kind of automatic prompt is about to be typed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AutoPrompt {
    /// A goal's continuation (or its first prompt after a pause), decided
    /// when the goal's `prompted_ms` became this.
    GoalTurn { prompted_ms: i64 },
    /// The continuation after a usage limit's reset.
    LimitContinuation,
    /// An agent's prompt held while the account was limited.
    QueuedPrompt,
}

/// A goal as it stands at the moment of typing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GoalNow {
    pub state: GoalState,
    pub prompted_ms: i64,
}

/// What the daemon knows at the moment of typing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TypingFacts {
    pub prompt: AutoPrompt,
    /// The session's goal now (`None`: it has none).
    pub goal: Option<GoalNow>,
    /// A limit stands that nothing continued yet (a continuation marks its
    /// own limit continued before it types, so this is a newer refusal).
    pub limit_stands: bool,
    /// The account may be used (no limit, or its reset passed).
    pub account_usable: bool,
    /// The session's own budget or the day's is spent.
    pub budget_spent: bool,
    /// A person typed into the session since the decision's reference
    /// (the goal's last prompt, the limit's start).
    pub person_typed_since: bool,
    /// `hangar limit ID --continue` is on (only read for a continuation).
    pub auto_continue: bool,
}

/// Why an automatic prompt is not typed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StandDown {
    /// The goal ended (done, blocked, stopped by a person or the budget)
    /// or is gone.
    GoalEnded,
    /// The goal was paused since the decision.
    GoalPaused,
    /// Another prompt for the goal was decided since (a newer turn, a new
    /// goal): this one is stale, and typing it would type twice.
    GoalReplaced,
    /// A cost budget is spent.
    BudgetSpent,
    /// The account is limited.
    Limited,
    /// A person typed into the session: it is theirs.
    PersonTyped,
    /// The automatic continuation was switched off.
    ContinueOff,
}

impl StandDown {
    /// For the journal and the log.
    pub fn reason(self) -> &'static str {
        match self {
            StandDown::GoalEnded => "the goal ended",
            StandDown::GoalPaused => "the goal is paused",
            StandDown::GoalReplaced => "a newer prompt was decided for the goal",
            StandDown::BudgetSpent => "the cost budget is spent",
            StandDown::Limited => "the account is limited",
            StandDown::PersonTyped => "a person typed into the session",
            StandDown::ContinueOff => "the automatic continuation is off",
        }
    }
}

/// Whether the automatic prompt `f.prompt` may be typed now. The most final
/// reason wins: an ended goal, then a spent budget, a limit, a person.
pub fn may_type(f: &TypingFacts) -> Result<(), StandDown> {
    if let AutoPrompt::GoalTurn { prompted_ms } = f.prompt {
        let Some(goal) = f.goal.filter(|g| !g.state.ended()) else {
            return Err(StandDown::GoalEnded);
        };
        if goal.state != GoalState::Running {
            return Err(StandDown::GoalPaused);
        }
        if goal.prompted_ms != prompted_ms {
            return Err(StandDown::GoalReplaced);
        }
    }
    if f.budget_spent {
        return Err(StandDown::BudgetSpent);
    }
    if f.limit_stands || !f.account_usable {
        return Err(StandDown::Limited);
    }
    match f.prompt {
        // An agent's prompt held for the limit is not hangar's own: a
        // person's typing does not cancel what another agent asked for.
        AutoPrompt::QueuedPrompt => {}
        AutoPrompt::GoalTurn { .. } | AutoPrompt::LimitContinuation => {
            if f.person_typed_since {
                return Err(StandDown::PersonTyped);
            }
        }
    }
    if f.prompt == AutoPrompt::LimitContinuation && !f.auto_continue {
        return Err(StandDown::ContinueOff);
    }
    Ok(())
}

/// A goal's prompt was stood down: a limit pauses the goal (it resumes
/// after the limit's continuation turn), a person pauses it until they
/// leave the session alone, a spent budget stops it; a goal already ended,
/// paused or prompted again since is left as it is.
pub fn on_stand_down(g: &mut Goal, why: StandDown) {
    match why {
        StandDown::Limited => goal::on_failure(g, "rate_limit"),
        StandDown::PersonTyped => goal::on_person(g),
        StandDown::BudgetSpent => goal::on_budget(g),
        StandDown::GoalEnded
        | StandDown::GoalPaused
        | StandDown::GoalReplaced
        | StandDown::ContinueOff => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn goal_turn() -> TypingFacts {
        TypingFacts {
            prompt: AutoPrompt::GoalTurn { prompted_ms: 100 },
            goal: Some(GoalNow {
                state: GoalState::Running,
                prompted_ms: 100,
            }),
            limit_stands: false,
            account_usable: true,
            budget_spent: false,
            person_typed_since: false,
            auto_continue: true,
        }
    }

    fn continuation() -> TypingFacts {
        TypingFacts {
            prompt: AutoPrompt::LimitContinuation,
            goal: None,
            ..goal_turn()
        }
    }

    #[test]
    fn a_goal_turn_nothing_changed_for_is_typed() {
        assert_eq!(may_type(&goal_turn()), Ok(()));
        assert_eq!(may_type(&continuation()), Ok(()));
    }

    #[test]
    fn a_goal_stopped_done_or_gone_since_the_decision_types_nothing() {
        for state in [GoalState::Stopped, GoalState::Done, GoalState::Blocked] {
            let f = TypingFacts {
                goal: Some(GoalNow {
                    state,
                    prompted_ms: 100,
                }),
                ..goal_turn()
            };
            assert_eq!(may_type(&f), Err(StandDown::GoalEnded), "{state:?}");
        }
        let gone = TypingFacts {
            goal: None,
            ..goal_turn()
        };
        assert_eq!(may_type(&gone), Err(StandDown::GoalEnded));
    }

    #[test]
    fn a_goal_paused_or_prompted_again_since_the_decision_types_nothing() {
        let paused = TypingFacts {
            goal: Some(GoalNow {
                state: GoalState::Paused,
                prompted_ms: 100,
            }),
            ..goal_turn()
        };
        assert_eq!(may_type(&paused), Err(StandDown::GoalPaused));
        let newer = TypingFacts {
            goal: Some(GoalNow {
                state: GoalState::Running,
                prompted_ms: 200,
            }),
            ..goal_turn()
        };
        assert_eq!(may_type(&newer), Err(StandDown::GoalReplaced));
    }

    #[test]
    fn a_limit_arriving_or_an_account_still_limited_types_nothing() {
        for f in [goal_turn(), continuation()] {
            let refused = TypingFacts {
                limit_stands: true,
                ..f
            };
            assert_eq!(may_type(&refused), Err(StandDown::Limited));
            let before_reset = TypingFacts {
                account_usable: false,
                ..f
            };
            assert_eq!(may_type(&before_reset), Err(StandDown::Limited));
        }
        let queued = TypingFacts {
            prompt: AutoPrompt::QueuedPrompt,
            limit_stands: true,
            ..continuation()
        };
        assert_eq!(may_type(&queued), Err(StandDown::Limited));
    }

    #[test]
    fn a_spent_budget_types_nothing_and_outranks_a_limit() {
        for prompt in [
            AutoPrompt::GoalTurn { prompted_ms: 100 },
            AutoPrompt::LimitContinuation,
            AutoPrompt::QueuedPrompt,
        ] {
            let f = TypingFacts {
                prompt,
                budget_spent: true,
                limit_stands: true,
                ..goal_turn()
            };
            assert_eq!(may_type(&f), Err(StandDown::BudgetSpent), "{prompt:?}");
        }
    }

    #[test]
    fn a_person_typing_since_stops_hangar_s_own_prompts_but_not_an_agent_s_queued_one() {
        for f in [goal_turn(), continuation()] {
            let typed = TypingFacts {
                person_typed_since: true,
                ..f
            };
            assert_eq!(may_type(&typed), Err(StandDown::PersonTyped));
        }
        let queued = TypingFacts {
            prompt: AutoPrompt::QueuedPrompt,
            person_typed_since: true,
            ..continuation()
        };
        assert_eq!(may_type(&queued), Ok(()));
    }

    #[test]
    fn a_continuation_switched_off_since_types_nothing() {
        let off = TypingFacts {
            auto_continue: false,
            ..continuation()
        };
        assert_eq!(may_type(&off), Err(StandDown::ContinueOff));
        // The switch is the limit's, not the goal's.
        let goal = TypingFacts {
            auto_continue: false,
            ..goal_turn()
        };
        assert_eq!(may_type(&goal), Ok(()));
    }

    #[test]
    fn a_goal_prompt_stood_down_pauses_for_a_limit_or_a_person_and_stops_for_a_budget() {
        use crate::goal::PauseCause;
        let fresh = || Goal::new("make the tests pass", Some(5), 1_000).unwrap();
        let mut g = fresh();
        on_stand_down(&mut g, StandDown::Limited);
        assert_eq!(
            (g.state, g.pause),
            (GoalState::Paused, Some(PauseCause::Limited))
        );
        let mut g = fresh();
        on_stand_down(&mut g, StandDown::PersonTyped);
        assert_eq!(
            (g.state, g.pause),
            (GoalState::Paused, Some(PauseCause::Person))
        );
        let mut g = fresh();
        on_stand_down(&mut g, StandDown::BudgetSpent);
        assert_eq!(g.state, GoalState::Stopped);
        // A goal a person stopped stays stopped, with their reason.
        let mut g = fresh();
        goal::on_stop(&mut g);
        let before = g.clone();
        for why in [
            StandDown::Limited,
            StandDown::PersonTyped,
            StandDown::BudgetSpent,
        ] {
            on_stand_down(&mut g, why);
            assert_eq!(g, before);
        }
        // A stale prompt leaves the goal as the newer decision made it.
        let mut g = fresh();
        on_stand_down(&mut g, StandDown::GoalReplaced);
        assert_eq!(g, fresh());
    }

    proptest! {
        #[test]
        fn nothing_is_typed_over_a_person_a_limit_a_spent_budget_or_an_ended_goal(
            kind in 0u8..3,
            state in prop_oneof![
                Just(GoalState::Running), Just(GoalState::Paused), Just(GoalState::Done),
                Just(GoalState::Blocked), Just(GoalState::Stopped)
            ],
            has_goal: bool,
            same_prompt: bool,
            limit_stands: bool,
            account_usable: bool,
            budget_spent: bool,
            person_typed_since: bool,
            auto_continue: bool,
        ) {
            let prompt = match kind {
                0 => AutoPrompt::GoalTurn { prompted_ms: 100 },
                1 => AutoPrompt::LimitContinuation,
                _ => AutoPrompt::QueuedPrompt,
            };
            let f = TypingFacts {
                prompt,
                goal: has_goal.then_some(GoalNow {
                    state,
                    prompted_ms: if same_prompt { 100 } else { 101 },
                }),
                limit_stands,
                account_usable,
                budget_spent,
                person_typed_since,
                auto_continue,
            };
            if may_type(&f).is_ok() {
                prop_assert!(!budget_spent && !limit_stands && account_usable);
                if prompt != AutoPrompt::QueuedPrompt {
                    prop_assert!(!person_typed_since);
                }
                if let AutoPrompt::GoalTurn { .. } = prompt {
                    prop_assert!(has_goal && same_prompt && state == GoalState::Running);
                }
            }
        }
    }
}
