//! When a session's process may be stopped without losing its last turn.
//!
//! Claude Code draws an answer before its transcript holds it, and on a
//! loaded machine the gap is long enough for a hibernate (or a budget stop)
//! to land inside it: claude's own shutdown drains its queued writes but
//! races that against 2 s, so the answer, and on a first turn the whole
//! conversation, was lost ("No conversation found" on the next wake). The
//! rule: a turn started since the transcript last ended one means its
//! process is stopped only once the transcript ends it too, or after a
//! bound (a turn still running is not waited out: the person asked for the
//! stop).

use crate::activity::{Activity, Readings};

/// How long a stop waits for a transcript to catch up with an answer the
/// hooks already reported (its end of turn came; only the write is late).
pub const ANSWERED_WAIT_MS: u64 = 10_000;

/// How long a stop waits when a turn started and nothing says it ended yet:
/// the answer may be on screen with the `Stop` hook still to come.
pub const IN_TURN_WAIT_MS: u64 = 3_000;

/// Transcript lines are dated by the agent's clock at the entry's making,
/// hooks and typed input by hangar's when they arrive: an entry this much
/// older than the turn's start still counts as the turn's.
pub const CLOCK_SLACK_MS: u64 = 500;

/// What to do before stopping a session's process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BeforeStop {
    /// Nothing to lose: stop it now.
    Now,
    /// Look again until the transcript ends the turn, for at most this long
    /// from the first look.
    AwaitTranscript { up_to_ms: u64 },
}

/// The rule. `keeps_transcript`: the provider writes a transcript hangar
/// reads (claude, codex); `prompt_submitted_ms`: its `UserPromptSubmit`
/// hook's last report; `readings`: every source as the activity monitor
/// has them, the transcript read now.
pub fn before_stop(
    keeps_transcript: bool,
    readings: &Readings,
    prompt_submitted_ms: Option<u64>,
) -> BeforeStop {
    if !keeps_transcript {
        return BeforeStop::Now;
    }
    let hook_start = readings
        .hooks
        .filter(|h| h.activity == Activity::Working)
        .map(|h| h.at_ms);
    let Some(turn_start) = [prompt_submitted_ms, readings.input_ms, hook_start]
        .into_iter()
        .flatten()
        .max()
    else {
        // Nothing was asked of it since it started: whatever it resumed is
        // already in its transcript.
        return BeforeStop::Now;
    };
    let ended = |activity: Activity| matches!(activity, Activity::Idle | Activity::Waiting);
    let saved = readings
        .transcript
        .is_some_and(|t| ended(t.activity) && t.at_ms + CLOCK_SLACK_MS >= turn_start);
    if saved {
        return BeforeStop::Now;
    }
    let answered = readings
        .hooks
        .is_some_and(|h| ended(h.activity) && h.at_ms >= turn_start);
    BeforeStop::AwaitTranscript {
        up_to_ms: if answered {
            ANSWERED_WAIT_MS
        } else {
            IN_TURN_WAIT_MS
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::activity::Reading;

    fn at(activity: Activity, at_ms: u64) -> Option<Reading> {
        Some(Reading { activity, at_ms })
    }

    #[test]
    fn a_provider_without_a_transcript_or_a_session_never_asked_stops_now() {
        let r = Readings::default();
        assert_eq!(before_stop(false, &r, Some(10)), BeforeStop::Now);
        assert_eq!(before_stop(true, &r, None), BeforeStop::Now);
    }

    #[test]
    fn an_answer_the_hooks_reported_but_the_transcript_lacks_is_waited_for() {
        // The failure: the Stop hook came, the transcript has only the
        // prompt (or no file yet, on a first turn).
        let r = Readings {
            hooks: at(Activity::Idle, 2_000),
            transcript: at(Activity::Working, 1_010),
            ..Readings::default()
        };
        assert_eq!(
            before_stop(true, &r, Some(1_000)),
            BeforeStop::AwaitTranscript {
                up_to_ms: ANSWERED_WAIT_MS
            }
        );
        let first_turn = Readings {
            hooks: at(Activity::Idle, 2_000),
            ..Readings::default()
        };
        assert_eq!(
            before_stop(true, &first_turn, Some(1_000)),
            BeforeStop::AwaitTranscript {
                up_to_ms: ANSWERED_WAIT_MS
            }
        );
    }

    #[test]
    fn once_the_transcript_ends_the_turn_it_stops_now() {
        let r = Readings {
            hooks: at(Activity::Idle, 2_000),
            // Dated a little before the hook saw the prompt: still this turn.
            transcript: at(Activity::Idle, 900),
            ..Readings::default()
        };
        assert_eq!(before_stop(true, &r, Some(1_000)), BeforeStop::Now);
    }

    #[test]
    fn the_previous_turns_end_does_not_count_for_a_new_prompt() {
        let r = Readings {
            transcript: at(Activity::Idle, 1_000),
            input_ms: Some(5_000),
            ..Readings::default()
        };
        assert_eq!(
            before_stop(true, &r, None),
            BeforeStop::AwaitTranscript {
                up_to_ms: IN_TURN_WAIT_MS
            }
        );
    }

    #[test]
    fn a_turn_still_running_is_waited_for_only_briefly() {
        let r = Readings {
            hooks: at(Activity::Working, 1_000),
            transcript: at(Activity::Working, 1_100),
            ..Readings::default()
        };
        assert_eq!(
            before_stop(true, &r, Some(1_000)),
            BeforeStop::AwaitTranscript {
                up_to_ms: IN_TURN_WAIT_MS
            }
        );
    }
}
