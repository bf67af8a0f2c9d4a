//! Goals (issue 29): a task hangar keeps an agent on across turns. hangar
//! types the goal once; at each end of a turn it types a short
//! continuation naming the goal and how to finish, until the agent says
//! done or blocked (the MCP tool `goal_done`), a turn cap, a person, or an
//! error ends it.
//!
//! Pure: the daemon reports ends of turns (Claude's `Stop` hook, Codex and
//! OpenCode transcripts: never quiet output alone), failures (Claude's
//! `StopFailure`), `goal_done` calls and what it knows of the session (a
//! person typed, a usage limit), and carries out the step this returns. It
//! must never type while a person is using the session or while its
//! account is limited (rule 13), and never after the goal ended.

use serde::{Deserialize, Serialize};

/// The turn cap when `--max-turns` is not given.
pub const DEFAULT_MAX_TURNS: u32 = 20;
/// The largest turn cap accepted.
pub const MAX_MAX_TURNS: u32 = 1000;
/// The longest goal text accepted, in bytes (it is typed into the agent at
/// every turn).
pub const MAX_GOAL_BYTES: usize = 4096;
/// How long a person must have left a session alone before a goal paused
/// for them carries on by itself.
pub const PERSON_QUIET_MS: i64 = 5 * 60 * 1000;

/// Where a goal stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum GoalState {
    /// hangar continues it at each end of turn.
    Running,
    /// Waiting for a person to leave the session alone, or for a usage
    /// limit's reset; it carries on by itself.
    Paused,
    /// The agent called `goal_done` with `done`.
    Done,
    /// The agent called `goal_done` with `blocked`.
    Blocked,
    /// Ended by hangar (the turn cap, an error) or a person.
    Stopped,
}

impl GoalState {
    pub fn name(self) -> &'static str {
        match self {
            GoalState::Running => "running",
            GoalState::Paused => "paused",
            GoalState::Done => "done",
            GoalState::Blocked => "blocked",
            GoalState::Stopped => "stopped",
        }
    }

    /// The goal is over: nothing is ever typed for it again.
    pub fn ended(self) -> bool {
        matches!(
            self,
            GoalState::Done | GoalState::Blocked | GoalState::Stopped
        )
    }
}

/// Why a goal is paused (kept, so a restart resumes it the same way).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PauseCause {
    /// A person typed into the session since hangar's last prompt.
    Person,
    /// The session's provider account is limited.
    Limited,
}

/// A session's goal, as hangar keeps it (persisted with the session's
/// usage state, so a restart keeps it).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Goal {
    pub text: String,
    /// Ends of turns seen since the goal was typed.
    pub turns: u32,
    pub max_turns: u32,
    pub state: GoalState,
    /// Why it is paused or stopped, for a person to read.
    #[serde(default)]
    pub reason: Option<String>,
    /// The agent's own summary (`goal_done`).
    #[serde(default)]
    pub summary: Option<String>,
    #[serde(default)]
    pub pause: Option<PauseCause>,
    /// When hangar last typed for this goal (epoch ms): a person's typing
    /// after it pauses the goal.
    pub prompted_ms: i64,
}

/// Why a goal's text or cap is refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum GoalError {
    #[error("a goal needs some text")]
    Empty,
    #[error("the goal is {0} bytes; at most {MAX_GOAL_BYTES}")]
    TooLong(usize),
    #[error("--max-turns must be 1 to {MAX_MAX_TURNS}, not {0}")]
    BadMaxTurns(u32),
}

impl Goal {
    /// A new running goal, typed at `now_ms`. Control characters other
    /// than newline and tab are refused by being dropped (the text is typed
    /// into a terminal).
    pub fn new(text: &str, max_turns: Option<u32>, now_ms: i64) -> Result<Goal, GoalError> {
        let text: String = text
            .trim()
            .chars()
            .filter(|c| !c.is_control() || *c == '\n' || *c == '\t')
            .collect();
        if text.is_empty() {
            return Err(GoalError::Empty);
        }
        if text.len() > MAX_GOAL_BYTES {
            return Err(GoalError::TooLong(text.len()));
        }
        let max_turns = max_turns.unwrap_or(DEFAULT_MAX_TURNS);
        if !(1..=MAX_MAX_TURNS).contains(&max_turns) {
            return Err(GoalError::BadMaxTurns(max_turns));
        }
        Ok(Goal {
            text,
            turns: 0,
            max_turns,
            state: GoalState::Running,
            reason: None,
            summary: None,
            pause: None,
            prompted_ms: now_ms,
        })
    }

    fn stop(&mut self, reason: impl Into<String>) {
        self.state = GoalState::Stopped;
        self.pause = None;
        self.reason = Some(reason.into());
    }

    fn pause_for(&mut self, cause: PauseCause, reason: impl Into<String>) {
        self.state = GoalState::Paused;
        self.pause = Some(cause);
        self.reason = Some(reason.into());
    }

    fn resume(&mut self) {
        self.state = GoalState::Running;
        self.pause = None;
        self.reason = None;
    }
}

/// The first prompt: the goal and how to finish it.
pub fn first_prompt(goal: &Goal) -> String {
    format!(
        "Goal: {} -- Work on this goal over as many turns as it needs. When it is done, call \
         the hangar MCP tool goal_done with status \"done\" and a one-line summary; if you \
         cannot go on without a person, call goal_done with status \"blocked\" and say why.",
        one_line(&goal.text)
    )
}

/// The continuation typed at an end of turn: short, naming the goal and how
/// to finish.
pub fn continuation_prompt(goal: &Goal) -> String {
    format!(
        "Continue with the goal (turn {} of {}): {} -- when it is done call goal_done \
         (status \"done\", summary); if you are stuck call goal_done (status \"blocked\").",
        goal.turns + 1,
        goal.max_turns,
        one_line(&goal.text)
    )
}

/// Typed text is one line: a newline would submit it early.
fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// What the daemon knows at an end of turn.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TurnFacts {
    pub now_ms: i64,
    /// A person typed into the session after `prompted_ms`.
    pub person_typed_since_prompt: bool,
    /// The session's limit stands (not yet continued).
    pub limited: bool,
}

/// What to do for a goal now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GoalStep {
    /// Type this prompt (and note the time as `prompted_ms`).
    Type(String),
    /// Nothing to type.
    Nothing,
}

/// An end of turn (Claude's `Stop`, a transcript's turn end) of a session
/// with `goal`.
pub fn on_turn_end(goal: &mut Goal, f: &TurnFacts) -> GoalStep {
    if goal.state.ended() {
        return GoalStep::Nothing;
    }
    if f.limited {
        goal.pause_for(PauseCause::Limited, "the provider's usage limit");
        return GoalStep::Nothing;
    }
    if f.person_typed_since_prompt {
        // The turn that ended was (also) the person's: never type over them.
        goal.pause_for(PauseCause::Person, "a person typed into the session");
        return GoalStep::Nothing;
    }
    // A goal paused for a limit carries on after the limit's continuation
    // turn; one paused for a person waits for `on_quiet`.
    if goal.state == GoalState::Paused && goal.pause == Some(PauseCause::Person) {
        return GoalStep::Nothing;
    }
    goal.resume();
    goal.turns = goal.turns.saturating_add(1);
    if goal.turns >= goal.max_turns {
        goal.stop(format!("reached --max-turns {}", goal.max_turns));
        return GoalStep::Nothing;
    }
    goal.prompted_ms = f.now_ms;
    GoalStep::Type(continuation_prompt(goal))
}

/// The agent's turn ended in an error (Claude's `StopFailure`, with its
/// `error`). A usage limit pauses the goal (it resumes after the limit's
/// continuation); any other error stops it, with the reason.
pub fn on_failure(goal: &mut Goal, error: &str) {
    if goal.state.ended() {
        return;
    }
    if error == "rate_limit" {
        goal.pause_for(PauseCause::Limited, "the provider's usage limit");
    } else {
        let error: String = error
            .chars()
            .filter(|c| c.is_ascii_alphanumeric() || *c == '_')
            .take(64)
            .collect();
        goal.stop(format!("the turn ended in an error ({error})"));
    }
}

/// The agent called `goal_done`.
pub fn on_done(goal: &mut Goal, blocked: bool, summary: &str) {
    if goal.state.ended() {
        return;
    }
    goal.state = if blocked {
        GoalState::Blocked
    } else {
        GoalState::Done
    };
    goal.pause = None;
    goal.reason = None;
    let summary: String = summary
        .chars()
        .filter(|c| !c.is_control() || *c == '\n')
        .take(2000)
        .collect();
    goal.summary = (!summary.trim().is_empty()).then(|| summary.trim().to_owned());
}

/// A person stopped it (`hangar goal ID --stop`).
pub fn on_stop(goal: &mut Goal) {
    if !goal.state.ended() {
        goal.stop("stopped by a person");
    }
}

/// The budget stopped it.
pub fn on_budget(goal: &mut Goal) {
    if !goal.state.ended() {
        goal.stop("the cost budget is spent");
    }
}

/// A person typed into the session after hangar's prompt was decided and
/// before it went out: the goal waits for them to leave it alone.
pub fn on_person(goal: &mut Goal) {
    if !goal.state.ended() {
        goal.pause_for(PauseCause::Person, "a person typed into the session");
    }
}

/// What the daemon knows of a paused goal's session between turns.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QuietFacts {
    pub now_ms: i64,
    /// When a person last typed into the session (epoch ms), if ever.
    pub person_typed_ms: Option<i64>,
    /// A turn is running, or the agent waits for the person.
    pub busy: bool,
    /// Someone is attached to the session now.
    pub viewed: bool,
    /// The session's limit stands (not yet continued).
    pub limited: bool,
}

/// A goal paused for a person carries on once the person has left the
/// session alone for [`PERSON_QUIET_MS`], nobody is attached, the agent is
/// between turns and the account is not limited. Returns the instant to
/// look again when it is not yet time.
pub fn on_quiet(goal: &mut Goal, f: &QuietFacts) -> Result<GoalStep, Option<i64>> {
    if goal.state != GoalState::Paused || goal.pause != Some(PauseCause::Person) {
        return Err(None);
    }
    if f.busy || f.viewed || f.limited {
        return Err(Some(f.now_ms + 5_000));
    }
    let quiet_at = f.person_typed_ms.unwrap_or(goal.prompted_ms) + PERSON_QUIET_MS;
    if f.now_ms < quiet_at {
        return Err(Some(quiet_at));
    }
    goal.resume();
    goal.prompted_ms = f.now_ms;
    Ok(GoalStep::Type(continuation_prompt(goal)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn goal(max: u32) -> Goal {
        Goal::new("make the tests pass", Some(max), 1_000).unwrap()
    }

    fn turn(now: i64) -> TurnFacts {
        TurnFacts {
            now_ms: now,
            ..Default::default()
        }
    }

    #[test]
    fn each_end_of_turn_types_a_continuation_naming_the_goal_until_the_cap() {
        let mut g = goal(3);
        let GoalStep::Type(p) = on_turn_end(&mut g, &turn(2_000)) else {
            panic!("continues")
        };
        assert!(
            p.contains("make the tests pass") && p.contains("goal_done"),
            "{p}"
        );
        assert!(p.contains("turn 2 of 3"), "{p}");
        assert_eq!(g.prompted_ms, 2_000);
        assert!(matches!(
            on_turn_end(&mut g, &turn(3_000)),
            GoalStep::Type(_)
        ));
        assert_eq!(on_turn_end(&mut g, &turn(4_000)), GoalStep::Nothing);
        assert_eq!(g.state, GoalState::Stopped);
        assert_eq!(g.turns, 3);
        assert_eq!(g.reason.as_deref(), Some("reached --max-turns 3"));
        assert_eq!(on_turn_end(&mut g, &turn(5_000)), GoalStep::Nothing);
        assert_eq!(g.turns, 3, "an ended goal counts nothing");
    }

    #[test]
    fn goal_done_ends_it_and_nothing_is_typed_after() {
        let mut g = goal(20);
        on_done(&mut g, false, "all green\u{1b}[2J");
        assert_eq!(g.state, GoalState::Done);
        assert_eq!(g.summary.as_deref(), Some("all green[2J"));
        assert_eq!(on_turn_end(&mut g, &turn(2_000)), GoalStep::Nothing);
        let mut b = goal(20);
        on_done(&mut b, true, "needs a key");
        assert_eq!(b.state, GoalState::Blocked);
    }

    #[test]
    fn a_person_typing_pauses_it_and_it_resumes_only_after_they_leave_it_alone() {
        let mut g = goal(20);
        let facts = TurnFacts {
            now_ms: 2_000,
            person_typed_since_prompt: true,
            limited: false,
        };
        assert_eq!(on_turn_end(&mut g, &facts), GoalStep::Nothing);
        assert_eq!(g.state, GoalState::Paused);
        // The person's next turn ends: still paused, nothing typed.
        assert_eq!(on_turn_end(&mut g, &turn(3_000)), GoalStep::Nothing);
        assert_eq!(g.state, GoalState::Paused);
        let quiet = QuietFacts {
            now_ms: 10_000,
            person_typed_ms: Some(9_000),
            ..Default::default()
        };
        assert_eq!(on_quiet(&mut g, &quiet), Err(Some(9_000 + PERSON_QUIET_MS)));
        let viewed = QuietFacts {
            now_ms: 9_000 + PERSON_QUIET_MS,
            viewed: true,
            ..quiet
        };
        assert!(on_quiet(&mut g, &viewed).is_err());
        let later = QuietFacts {
            now_ms: 9_000 + PERSON_QUIET_MS,
            ..quiet
        };
        assert!(matches!(on_quiet(&mut g, &later), Ok(GoalStep::Type(_))));
        assert_eq!(g.state, GoalState::Running);
    }

    #[test]
    fn a_limit_pauses_it_and_the_turn_after_the_limits_continuation_resumes_it() {
        let mut g = goal(20);
        on_failure(&mut g, "rate_limit");
        assert_eq!(g.state, GoalState::Paused);
        assert_eq!(g.pause, Some(PauseCause::Limited));
        // Still limited at an end of turn: nothing typed.
        let limited = TurnFacts {
            now_ms: 2_000,
            limited: true,
            ..Default::default()
        };
        assert_eq!(on_turn_end(&mut g, &limited), GoalStep::Nothing);
        // The continuation's turn ended; the limit is over.
        assert!(matches!(
            on_turn_end(&mut g, &turn(3_000)),
            GoalStep::Type(_)
        ));
        assert_eq!(g.state, GoalState::Running);
        // A limit-paused goal is not resumed by quiet alone.
        on_failure(&mut g, "rate_limit");
        assert_eq!(
            on_quiet(
                &mut g,
                &QuietFacts {
                    now_ms: i64::MAX / 2,
                    ..Default::default()
                }
            ),
            Err(None)
        );
    }

    #[test]
    fn another_error_stops_it_with_the_reason() {
        let mut g = goal(20);
        on_failure(&mut g, "authentication_failed\n\u{1b}");
        assert_eq!(g.state, GoalState::Stopped);
        assert_eq!(
            g.reason.as_deref(),
            Some("the turn ended in an error (authentication_failed)")
        );
    }

    #[test]
    fn bad_goals_are_refused_with_a_reason() {
        assert_eq!(Goal::new("  \u{7} ", None, 0), Err(GoalError::Empty));
        assert_eq!(Goal::new("x", Some(0), 0), Err(GoalError::BadMaxTurns(0)));
        assert!(matches!(
            Goal::new(&"x".repeat(MAX_GOAL_BYTES + 1), None, 0),
            Err(GoalError::TooLong(_))
        ));
        assert_eq!(
            Goal::new("x", None, 0).unwrap().max_turns,
            DEFAULT_MAX_TURNS
        );
    }

    #[test]
    fn a_goal_with_newlines_is_typed_as_one_line() {
        let g = Goal::new("fix\nthe  build", None, 0).unwrap();
        let p = first_prompt(&g);
        assert!(!p.contains('\n') && p.contains("fix the build"), "{p}");
    }

    #[test]
    fn a_person_stopping_it_is_final() {
        let mut g = goal(20);
        on_stop(&mut g);
        assert_eq!(g.state, GoalState::Stopped);
        on_done(&mut g, false, "late");
        assert_eq!(g.state, GoalState::Stopped, "an ended goal stays ended");
    }
}
