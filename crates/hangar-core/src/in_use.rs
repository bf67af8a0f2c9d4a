//! "In use" and "idle": which sessions a person or a turn is using right
//! now, and which have gone unused long enough for close-idle, eviction and
//! the budget to take them.
//!
//! A session is in use while a person's terminal is attached to it, while it
//! is mid-turn, or while it waits for the person; nothing automatic ever
//! interrupts one (the governor's `LiveFacts::evictable` says the same for the
//! budget). These functions take the facts the daemon gathered (viewer
//! counts, process state, activity, times) and decide; they read no clock.

use crate::activity::Activity;
use crate::model::Provider;

/// A person's attached input stores a session's last use at most this
/// often, so every keystroke does not write the store.
pub const TOUCH_EVERY_MS: u64 = 5_000;

/// Why a session is in use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InUse {
    /// A person's terminal is attached (`hangar attach`).
    Attached,
    /// A turn is in progress.
    Working,
    /// It asked the person something (a question, a permission prompt).
    Waiting,
}

impl InUse {
    /// The reason as people read it in a skip ("its linked session 3f2a is
    /// attached").
    pub fn reason(self) -> &'static str {
        match self {
            InUse::Attached => "attached",
            InUse::Working => "working",
            InUse::Waiting => "waiting for the person",
        }
    }
}

/// Whether a session with `viewers` attached clients is in use, and why.
/// `activity` is asked only when nobody is attached: reading a hibernated
/// session's activity may read its transcript.
pub fn in_use(viewers: usize, activity: impl FnOnce() -> Activity) -> Option<InUse> {
    if viewers > 0 {
        return Some(InUse::Attached);
    }
    match activity() {
        Activity::Working => Some(InUse::Working),
        Activity::Waiting => Some(InUse::Waiting),
        Activity::Idle | Activity::Unknown => None,
    }
}

/// `in_use` as eviction of stale parked records sees it: a record nobody is
/// attached to and with no process is never in use, even when its
/// transcript ends with a question, since nothing runs and it is stale by
/// its age (its resume command is kept). Close-idle uses `in_use`, since a
/// person may still answer.
pub fn in_use_when_evicting(
    viewers: usize,
    running: bool,
    activity: impl FnOnce() -> Activity,
) -> Option<InUse> {
    if viewers == 0 && !running {
        return None;
    }
    in_use(viewers, activity)
}

/// Whether a session is a close-idle candidate: unused for longer than
/// `older_than_ms` at `now_ms`, and not `running` (live or spawning) unless
/// `include_live`. Whether it is in use is checked separately.
pub fn is_idle(
    last_active_ms: u64,
    now_ms: u64,
    older_than_ms: u64,
    running: bool,
    include_live: bool,
) -> bool {
    now_ms.saturating_sub(last_active_ms) > older_than_ms && (include_live || !running)
}

/// Whether a live session counts against the live budget: agent CLIs only
/// (a shell costs next to nothing and holds a person's work).
pub fn counts_toward_budget(provider: &Provider, live: bool) -> bool {
    live && provider.is_agent()
}

/// Whether a use at `now_ms` is stored as the session's last use. A
/// `throttled` use (a keystroke of an attached terminal) is stored at most
/// once per [`TOUCH_EVERY_MS`].
pub fn touch_is_due(last_active_ms: u64, now_ms: u64, throttled: bool) -> bool {
    !(throttled && now_ms.saturating_sub(last_active_ms) < TOUCH_EVERY_MS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn an_attached_session_is_in_use_without_asking_its_activity() {
        let asked = std::cell::Cell::new(false);
        let got = in_use(1, || {
            asked.set(true);
            Activity::Idle
        });
        assert_eq!(got, Some(InUse::Attached));
        assert!(!asked.get());
        assert_eq!(got.unwrap().reason(), "attached");
    }

    #[test]
    fn a_turn_or_a_question_for_the_person_is_in_use_and_idle_or_unknown_is_not() {
        assert_eq!(in_use(0, || Activity::Working), Some(InUse::Working));
        assert_eq!(in_use(0, || Activity::Waiting), Some(InUse::Waiting));
        assert_eq!(InUse::Waiting.reason(), "waiting for the person");
        assert_eq!(InUse::Working.reason(), "working");
        assert_eq!(in_use(0, || Activity::Idle), None);
        assert_eq!(in_use(0, || Activity::Unknown), None);
    }

    #[test]
    fn eviction_ignores_a_question_in_the_transcript_of_a_record_with_no_process() {
        assert_eq!(in_use_when_evicting(0, false, || Activity::Waiting), None);
        assert_eq!(
            in_use_when_evicting(0, true, || Activity::Waiting),
            Some(InUse::Waiting)
        );
        assert_eq!(
            in_use_when_evicting(2, false, || Activity::Idle),
            Some(InUse::Attached)
        );
    }

    #[test]
    fn idle_means_unused_for_longer_than_the_limit_and_not_live_unless_asked() {
        assert!(is_idle(0, 1001, 1000, false, false));
        assert!(
            !is_idle(0, 1000, 1000, false, false),
            "exactly the limit is not older"
        );
        assert!(!is_idle(0, 5000, 1000, true, false));
        assert!(is_idle(0, 5000, 1000, true, true));
        assert!(
            !is_idle(9000, 5000, 1000, false, false),
            "a use in the future is recent"
        );
    }

    #[test]
    fn only_live_agent_clis_count_toward_the_budget() {
        assert!(counts_toward_budget(&Provider::Claude, true));
        assert!(!counts_toward_budget(&Provider::Claude, false));
        assert!(!counts_toward_budget(&Provider::Shell, true));
        assert!(!counts_toward_budget(&Provider::Custom("x".into()), true));
    }

    #[test]
    fn attached_keystrokes_store_the_last_use_at_most_every_five_seconds() {
        assert!(!touch_is_due(10_000, 14_999, true));
        assert!(touch_is_due(10_000, 15_000, true));
        assert!(touch_is_due(10_000, 10_001, false));
    }

    fn activity() -> impl Strategy<Value = Activity> {
        prop_oneof![
            Just(Activity::Working),
            Just(Activity::Waiting),
            Just(Activity::Idle),
            Just(Activity::Unknown)
        ]
    }

    proptest! {
        #[test]
        fn eviction_never_sees_more_in_use_than_close_idle(
            viewers in 0usize..3,
            running in any::<bool>(),
            a in activity(),
        ) {
            let evicting = in_use_when_evicting(viewers, running, || a);
            let closing = in_use(viewers, || a);
            prop_assert!(evicting.is_none() || evicting == closing);
            prop_assert_eq!(closing.is_some(), viewers > 0 || a.is_busy());
        }
    }
}
