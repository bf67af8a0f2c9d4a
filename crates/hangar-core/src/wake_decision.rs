//! What one look at a session decides for a wake (DESIGN.md rule 6: wake is
//! single flight).
//!
//! The first caller finds the session stopped and spawns it; every caller
//! that finds it already spawning joins that spawn and waits for its outcome
//! instead of starting a second process; a caller whose joined spawn ended in
//! failure reports that failure rather than trying again. A person is refused
//! at once while the wake queue's breaker is open, never left waiting behind
//! it. The daemon looks (under its state lock), asks `refuse_wake` and
//! `next_wake_step`, and acts.

/// Why a wake is refused before anything else is looked at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WakeRefusal {
    ShuttingDown,
    NoSession,
}

/// The first check of every look: a daemon shutting down starts nothing, and
/// a session that is gone (closed meanwhile) cannot be woken.
pub fn refuse_wake(shutting_down: bool, exists: bool) -> Option<WakeRefusal> {
    if shutting_down {
        Some(WakeRefusal::ShuttingDown)
    } else if !exists {
        Some(WakeRefusal::NoSession)
    } else {
        None
    }
}

/// A session's process as a wake sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WakePhase {
    Live,
    Spawning,
    /// Hibernated, failed or exited: no process, none starting.
    Stopped,
}

/// What one look at an existing session found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WakeLook {
    pub phase: WakePhase,
    /// This caller already waited on a spawn another caller started.
    pub joined: bool,
    /// The caller is a person (the command line, attach, send, ...).
    pub person: bool,
    /// The wake queue's breaker is open (repeated authentication failures).
    pub breaker_open: bool,
}

/// What the caller does next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WakeStep {
    /// Already live: nothing to do.
    Live,
    /// Another caller is spawning it: wait for that spawn's outcome, then
    /// look again.
    Join,
    /// The spawn this caller joined ended without a live process: report
    /// the state it left, do not start another.
    ReportJoined,
    /// A person while the breaker holds the queue: refuse at once.
    QueuePaused,
    /// Mark it spawning and spawn it.
    Spawn,
}

pub fn next_wake_step(look: WakeLook) -> WakeStep {
    match look.phase {
        WakePhase::Live => WakeStep::Live,
        WakePhase::Spawning => WakeStep::Join,
        WakePhase::Stopped if look.joined => WakeStep::ReportJoined,
        WakePhase::Stopped if look.person && look.breaker_open => WakeStep::QueuePaused,
        WakePhase::Stopped => WakeStep::Spawn,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn stopped() -> WakeLook {
        WakeLook {
            phase: WakePhase::Stopped,
            joined: false,
            person: true,
            breaker_open: false,
        }
    }

    #[test]
    fn the_first_wake_of_a_stopped_session_spawns_it() {
        assert_eq!(next_wake_step(stopped()), WakeStep::Spawn);
    }

    #[test]
    fn concurrent_wakes_of_one_session_join_one_spawn() {
        let look = WakeLook {
            phase: WakePhase::Spawning,
            ..stopped()
        };
        assert_eq!(next_wake_step(look), WakeStep::Join);
        // Still spawning after the first wait: keep waiting, never spawn.
        let again = WakeLook {
            joined: true,
            ..look
        };
        assert_eq!(next_wake_step(again), WakeStep::Join);
    }

    #[test]
    fn a_joined_spawn_that_failed_is_reported_not_retried() {
        let look = WakeLook {
            joined: true,
            ..stopped()
        };
        assert_eq!(next_wake_step(look), WakeStep::ReportJoined);
        // Even with the breaker open, the joined caller reports the outcome.
        let paused = WakeLook {
            breaker_open: true,
            ..look
        };
        assert_eq!(next_wake_step(paused), WakeStep::ReportJoined);
    }

    #[test]
    fn a_live_session_is_left_alone() {
        let look = WakeLook {
            phase: WakePhase::Live,
            joined: true,
            ..stopped()
        };
        assert_eq!(next_wake_step(look), WakeStep::Live);
    }

    #[test]
    fn an_open_breaker_refuses_a_person_at_once_but_queues_background_work() {
        let look = WakeLook {
            breaker_open: true,
            ..stopped()
        };
        assert_eq!(next_wake_step(look), WakeStep::QueuePaused);
        let agent = WakeLook {
            person: false,
            ..look
        };
        assert_eq!(next_wake_step(agent), WakeStep::Spawn);
    }

    #[test]
    fn shutting_down_is_refused_before_a_missing_session() {
        assert_eq!(refuse_wake(true, false), Some(WakeRefusal::ShuttingDown));
        assert_eq!(refuse_wake(true, true), Some(WakeRefusal::ShuttingDown));
        assert_eq!(refuse_wake(false, false), Some(WakeRefusal::NoSession));
        assert_eq!(refuse_wake(false, true), None);
    }

    fn phase() -> impl Strategy<Value = WakePhase> {
        prop_oneof![
            Just(WakePhase::Live),
            Just(WakePhase::Spawning),
            Just(WakePhase::Stopped)
        ]
    }

    proptest! {
        #[test]
        fn only_a_first_look_at_a_stopped_session_ever_spawns(
            phase in phase(),
            joined in any::<bool>(),
            person in any::<bool>(),
            breaker_open in any::<bool>(),
        ) {
            let look = WakeLook { phase, joined, person, breaker_open };
            let spawns = next_wake_step(look) == WakeStep::Spawn;
            prop_assert_eq!(
                spawns,
                phase == WakePhase::Stopped && !joined && !(person && breaker_open)
            );
            // A caller that joined never starts a second process.
            prop_assert!(!(joined && spawns));
        }
    }
}
