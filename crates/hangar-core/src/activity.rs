//! What an agent is doing beside its process state, and the one rule that
//! merges what each source says about it.
//!
//! A session is `working` on a turn, `waiting` for the person (a question, a
//! permission prompt), `idle` (turn finished, ready for input) or `unknown`;
//! a session a usage limit stopped shows `limited` above all of them (`shown`).
//! The daemon reads the sources (the transcript, the capture proxy, the
//! provider's hooks, the screen, typed input) and passes their readings and
//! the time here; `combine` answers, and `activity_debounce` keeps the answer
//! from flapping. Nothing here reads a file or a clock.

use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Activity {
    Working,
    Waiting,
    Idle,
    Unknown,
}

impl Activity {
    pub fn name(self) -> &'static str {
        match self {
            Activity::Working => "working",
            Activity::Waiting => "waiting",
            Activity::Idle => "idle",
            Activity::Unknown => "unknown",
        }
    }

    /// Mid-turn or waiting for the person: what the governor, eviction and
    /// a prompt's delivery must never interrupt.
    pub fn is_busy(self) -> bool {
        matches!(self, Activity::Working | Activity::Waiting)
    }
}

/// One source's view: a state, and when the source says it began.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reading {
    pub activity: Activity,
    pub at_ms: u64,
}

/// Every source's current view of one session.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Readings {
    pub transcript: Option<Reading>,
    pub proxy: Option<Reading>,
    pub hooks: Option<Reading>,
    pub screen: Option<Reading>,
    /// When hangar last typed a prompt into the session (`hangar send`).
    pub input_ms: Option<u64>,
}

/// How long typed input alone counts as a turn in progress.
pub const INPUT_ALONE_MS: u64 = 5000;

/// The rule that merges the sources.
///
/// 1. A turn starts at the latest `working` reading or typed input; any
///    `idle` or `waiting` reading older than that is stale (it describes the
///    turn before) and is dropped.
/// 2. Of what remains, the most trusted source wins: transcript, proxy,
///    hooks, screen; with nothing left, typed input alone means working,
///    for `INPUT_ALONE_MS` (an agent no source can see must not stay
///    "working" forever after one `hangar send`).
/// 3. A turn in progress that a less trusted source sees blocked on the
///    person (a permission prompt on screen, a hook notification) is
///    `waiting`: the turn is real, and so is the prompt.
/// 4. But claude's `Stop` hook *is* the end of the turn: a `Stop` newer
///    than every sign of work ends it, even while a transcript still shows
///    a streaming entry as its last word. Output going quiet never does.
pub fn combine(r: &Readings, now_ms: u64) -> Option<Reading> {
    let ranked = [r.transcript, r.proxy, r.hooks, r.screen];
    let turn_start = turn_start(r);
    let current: Vec<Reading> = ranked
        .iter()
        .flatten()
        .copied()
        .filter(|x| match x.activity {
            Activity::Working => true,
            Activity::Unknown => false,
            _ => turn_start.is_none_or(|t| x.at_ms >= t),
        })
        .collect();
    let typed = r
        .input_ms
        .filter(|at| now_ms.saturating_sub(*at) < INPUT_ALONE_MS)
        .map(|at_ms| Reading {
            activity: Activity::Working,
            at_ms,
        });
    let best = current.first().copied().or(typed)?;
    if best.activity == Activity::Working
        && let Some(stop) = r.hooks.filter(|h| h.activity == Activity::Idle)
        && turn_start.is_none_or(|t| stop.at_ms >= t)
    {
        return Some(stop);
    }
    if best.activity == Activity::Working
        && let Some(w) = current.iter().find(|x| x.activity == Activity::Waiting)
    {
        return Some(*w);
    }
    Some(best)
}

/// When the latest turn started: the newest `working` reading or typed input.
fn turn_start(r: &Readings) -> Option<u64> {
    [r.transcript, r.proxy, r.hooks, r.screen]
        .iter()
        .flatten()
        .filter(|x| x.activity == Activity::Working)
        .map(|x| x.at_ms)
        .chain(r.input_ms)
        .max()
}

/// Where an agent's turn is, for a prompt about to be typed into it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TurnEnd {
    /// No turn runs: a prompt typed now starts one, which can be watched for.
    Over,
    /// The transcript shows the answer, but the agent's `Stop` hook has not
    /// reported yet: it is still running its end-of-turn hooks, and a prompt
    /// typed now is queued behind them.
    Ending,
    /// Mid-turn or waiting for the person: a prompt typed now is queued or
    /// answers a question, and starts no turn of its own.
    Busy,
}

/// Where the turn is by the sources' latest readings, not by the debounced
/// state (which keeps saying `working` for a second or more after a turn
/// ended: a `/clear` typed right after an answer was then never confirmed,
/// so a lost Enter left it in the input box). `stop_hooks` says the agent
/// reports its turns' ends by a hook (claude running hangar's hooks): then
/// the turn is over only at a `Stop` (or `StopFailure`) reported since the
/// turn began, as claude takes a prompt as a turn of its own only once its
/// stop hooks are done.
pub fn turn_end(r: &Readings, now_ms: u64, stop_hooks: bool) -> TurnEnd {
    match combine(r, now_ms) {
        Some(x) if x.activity.is_busy() => TurnEnd::Busy,
        Some(x) if x.activity == Activity::Idle && stop_hooks => {
            let stopped = r.hooks.is_some_and(|h| {
                h.activity == Activity::Idle && turn_start(r).is_none_or(|t| h.at_ms >= t)
            });
            if stopped {
                TurnEnd::Over
            } else {
                TurnEnd::Ending
            }
        }
        _ => TurnEnd::Over,
    }
}

/// When `combine`'s answer for `r` can change with no new reading: the
/// moment typed input alone stops counting as a turn. `None` when nothing
/// in `r` expires after `now_ms`.
pub fn expires_at(r: &Readings, now_ms: u64) -> Option<u64> {
    r.input_ms
        .map(|at| at.saturating_add(INPUT_ALONE_MS))
        .filter(|end| *end > now_ms)
}

/// A hibernated session's activity from its transcript's last reading: a
/// turn that was in progress when the process ended is over, so it is idle.
pub fn offline_activity(transcript: Reading) -> Reading {
    match transcript.activity {
        Activity::Working => Reading {
            activity: Activity::Idle,
            ..transcript
        },
        _ => transcript,
    }
}

/// What a session's row says it is doing (`ls`, the TUI, the web page):
/// its agent's activity, or `limited`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shown {
    Agent(Activity),
    Limited,
}

impl Shown {
    pub fn name(self) -> &'static str {
        match self {
            Shown::Agent(a) => a.name(),
            Shown::Limited => "limited",
        }
    }
}

/// A usage limit that stands: the provider refused the session, no
/// continuation was typed and no request was allowed since.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StandingLimit {
    /// Epoch ms; `None` when the reset is unknown.
    pub resets_at: Option<i64>,
}

/// The activity precedence: a limited session reads `limited` whatever its
/// agent seems to do until the reset passes (or, with `limit` gone, a turn
/// succeeded or the continuation was typed). A CLI that retries by itself
/// at a refusal (claude, codex) keeps a request in flight and would read
/// `working` for the whole limit; a turn that cannot get through is not
/// work. An unknown reset stays `limited` until a person or a reply ends it.
pub fn shown(agent: Activity, limit: Option<StandingLimit>, now_ms: i64) -> Shown {
    match limit {
        Some(l) if l.resets_at.is_none_or(|t| now_ms < t) => Shown::Limited,
        _ => Shown::Agent(agent),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn at(activity: Activity, at_ms: u64) -> Option<Reading> {
        Some(Reading { activity, at_ms })
    }

    #[test]
    fn the_most_trusted_source_wins() {
        let r = Readings {
            transcript: at(Activity::Idle, 10),
            hooks: at(Activity::Idle, 12),
            proxy: at(Activity::Idle, 11),
            ..Default::default()
        };
        assert_eq!(combine(&r, 25), at(Activity::Idle, 10));
        let r = Readings {
            hooks: at(Activity::Idle, 12),
            ..Default::default()
        };
        assert_eq!(combine(&r, 25), at(Activity::Idle, 12));
        assert_eq!(combine(&Readings::default(), 0), None);
    }

    #[test]
    fn a_reading_older_than_the_last_turn_start_is_stale() {
        // The transcript still shows the previous answer; the prompt was typed after it.
        let r = Readings {
            transcript: at(Activity::Idle, 10),
            input_ms: Some(20),
            ..Default::default()
        };
        assert_eq!(combine(&r, 25), at(Activity::Working, 20));
        // Typed input nobody picked up stops counting after a while.
        assert_eq!(combine(&r, 20 + INPUT_ALONE_MS), None);
        // A hook saw the new prompt start; the older transcript is stale too.
        let r = Readings {
            transcript: at(Activity::Idle, 10),
            hooks: at(Activity::Working, 15),
            ..Default::default()
        };
        assert_eq!(combine(&r, 25), at(Activity::Working, 15));
        // Once the transcript records the answer, it wins again.
        let r = Readings {
            transcript: at(Activity::Idle, 30),
            hooks: at(Activity::Working, 15),
            input_ms: Some(14),
            ..Default::default()
        };
        assert_eq!(combine(&r, 25), at(Activity::Idle, 30));
    }

    #[test]
    fn a_prompt_on_screen_during_a_turn_is_waiting() {
        let r = Readings {
            transcript: at(Activity::Working, 10),
            screen: at(Activity::Waiting, 50),
            ..Default::default()
        };
        assert_eq!(combine(&r, 25), at(Activity::Waiting, 50));
        let r = Readings {
            screen: at(Activity::Waiting, 50),
            ..Default::default()
        };
        assert_eq!(combine(&r, 25), at(Activity::Waiting, 50));
    }

    #[test]
    fn a_stop_hook_after_the_last_sign_of_work_ends_the_turn() {
        // The transcript's last entry is still a streaming assistant one.
        let r = Readings {
            transcript: at(Activity::Working, 10),
            hooks: at(Activity::Idle, 12),
            input_ms: Some(9),
            ..Default::default()
        };
        assert_eq!(combine(&r, 25), at(Activity::Idle, 12));
        // A Stop from the turn before a new prompt says nothing of this one.
        let r = Readings {
            transcript: at(Activity::Working, 20),
            hooks: at(Activity::Idle, 12),
            ..Default::default()
        };
        assert_eq!(combine(&r, 25), at(Activity::Working, 20));
    }

    /// Regression: CI's `claude_clear_is_followed_with_hooks_on` typed
    /// `/clear` just after an answer, while the debounced state still said
    /// working; it was sent with one unconfirmed Enter and never taken.
    #[test]
    fn a_turn_is_over_for_a_prompt_once_its_answer_and_stop_hook_are_in() {
        // Prompt typed at 10, its hook at 11; the transcript shows the
        // answer at 20, the Stop hook reports at 21.
        let answered = Readings {
            transcript: at(Activity::Idle, 20),
            hooks: at(Activity::Working, 11),
            input_ms: Some(10),
            ..Default::default()
        };
        assert_eq!(turn_end(&answered, 20, true), TurnEnd::Ending);
        assert_eq!(turn_end(&answered, 20, false), TurnEnd::Over);
        let stopped = Readings {
            hooks: at(Activity::Idle, 21),
            ..answered
        };
        assert_eq!(turn_end(&stopped, 21, true), TurnEnd::Over);
        // The Stop alone ends the turn even before the transcript has the answer.
        let stop_first = Readings {
            transcript: at(Activity::Working, 12),
            ..stopped
        };
        assert_eq!(turn_end(&stop_first, 21, true), TurnEnd::Over);
    }

    #[test]
    fn a_turn_is_not_over_for_a_prompt_while_it_runs_or_asks() {
        let running = Readings {
            transcript: at(Activity::Working, 12),
            hooks: at(Activity::Working, 11),
            input_ms: Some(10),
            ..Default::default()
        };
        assert_eq!(turn_end(&running, 13, true), TurnEnd::Busy);
        assert_eq!(turn_end(&running, 13, false), TurnEnd::Busy);
        let asking = Readings {
            transcript: at(Activity::Waiting, 14),
            ..running
        };
        assert_eq!(turn_end(&asking, 15, true), TurnEnd::Busy);
        // The Stop of the turn before a new prompt does not end this one.
        let stale_stop = Readings {
            transcript: at(Activity::Idle, 30),
            hooks: at(Activity::Idle, 5),
            input_ms: Some(10),
            ..Default::default()
        };
        assert_eq!(turn_end(&stale_stop, 31, true), TurnEnd::Ending);
        // Nothing known at all: nothing runs.
        assert_eq!(turn_end(&Readings::default(), 0, true), TurnEnd::Over);
    }

    #[test]
    fn a_hook_notification_answered_since_is_stale() {
        let r = Readings {
            hooks: at(Activity::Waiting, 10),
            transcript: at(Activity::Working, 20),
            ..Default::default()
        };
        assert_eq!(combine(&r, 25), at(Activity::Working, 20));
    }

    #[test]
    fn an_unknown_reading_never_wins() {
        let r = Readings {
            transcript: at(Activity::Unknown, 30),
            screen: at(Activity::Idle, 5),
            ..Default::default()
        };
        assert_eq!(combine(&r, 40), at(Activity::Idle, 5));
    }

    #[test]
    fn a_turn_in_progress_when_the_process_ended_reads_as_idle() {
        let r = Reading {
            activity: Activity::Working,
            at_ms: 7,
        };
        assert_eq!(offline_activity(r), at(Activity::Idle, 7).unwrap());
        let w = at(Activity::Waiting, 9).unwrap();
        assert_eq!(offline_activity(w), w);
    }

    #[test]
    fn a_limited_session_reads_limited_whatever_its_agent_does_until_the_reset() {
        let limit = Some(StandingLimit {
            resets_at: Some(1_000),
        });
        for agent in [
            Activity::Working,
            Activity::Waiting,
            Activity::Idle,
            Activity::Unknown,
        ] {
            assert_eq!(shown(agent, limit, 999), Shown::Limited, "{agent:?}");
            // Once the reset passed, the account may be used: the agent's own.
            assert_eq!(shown(agent, limit, 1_000), Shown::Agent(agent));
            // A turn that succeeded (or the continuation) ended the limit.
            assert_eq!(shown(agent, None, 0), Shown::Agent(agent));
            let unknown = Some(StandingLimit { resets_at: None });
            assert_eq!(shown(agent, unknown, i64::MAX), Shown::Limited);
        }
        assert_eq!(Shown::Limited.name(), "limited");
        assert_eq!(Shown::Agent(Activity::Working).name(), "working");
    }

    #[test]
    fn busy_means_working_or_waiting() {
        assert!(Activity::Working.is_busy());
        assert!(Activity::Waiting.is_busy());
        assert!(!Activity::Idle.is_busy());
        assert!(!Activity::Unknown.is_busy());
    }

    fn reading() -> impl Strategy<Value = Option<Reading>> {
        proptest::option::of(
            (
                prop_oneof![
                    Just(Activity::Working),
                    Just(Activity::Waiting),
                    Just(Activity::Idle),
                    Just(Activity::Unknown)
                ],
                0u64..100,
            )
                .prop_map(|(activity, at_ms)| Reading { activity, at_ms }),
        )
    }

    proptest! {
        #[test]
        fn the_answer_is_one_of_the_readings_or_the_typed_input_and_never_unknown(
            transcript in reading(),
            proxy in reading(),
            hooks in reading(),
            screen in reading(),
            input_ms in proptest::option::of(0u64..100),
            now in 0u64..10_000,
        ) {
            let r = Readings { transcript, proxy, hooks, screen, input_ms };
            if let Some(out) = combine(&r, now) {
                prop_assert_ne!(out.activity, Activity::Unknown);
                let typed = input_ms.map(|at_ms| Reading { activity: Activity::Working, at_ms });
                let sources = [transcript, proxy, hooks, screen, typed];
                prop_assert!(sources.contains(&Some(out)));
            }
        }
    }
}
