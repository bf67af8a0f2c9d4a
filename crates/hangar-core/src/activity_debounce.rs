//! One session's activity over time: the state it is in, since when, and
//! the debounce that keeps a flickering signal from flapping it.
//!
//! The caller passes the clock and the combined reading (`activity::combine`).
//! A change is only committed once the combined reading has said the same
//! thing for `debounce_ms`; the one exception is `force`, for a fact that
//! cannot flicker (a prompt was typed into the agent). Every commit is
//! returned exactly once as a `Transition`: that is what makes "one
//! notification per state change" hold.

use crate::activity::{Activity, Reading, Readings, expires_at};

/// A committed change of state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Transition {
    pub from: Activity,
    pub to: Activity,
    /// When the session entered `to`, in ms since the epoch.
    pub since_ms: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Pending {
    activity: Activity,
    /// When this daemon first saw the new state.
    first_seen_ms: u64,
    /// When the sources say the state began.
    at_ms: u64,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tracker {
    committed: Activity,
    since_ms: u64,
    pending: Option<Pending>,
}

impl Tracker {
    pub fn new(now_ms: u64) -> Tracker {
        Tracker {
            committed: Activity::Unknown,
            since_ms: now_ms,
            pending: None,
        }
    }

    pub fn activity(&self) -> Activity {
        self.committed
    }

    pub fn since_ms(&self) -> u64 {
        self.since_ms
    }

    /// Whether a different state is waiting out its debounce.
    pub fn is_settling(&self) -> bool {
        self.pending.is_some()
    }

    /// When the state waiting out its debounce is committed if the sources
    /// keep saying it.
    pub fn settles_at(&self, debounce_ms: u64) -> Option<u64> {
        self.pending
            .map(|p| p.first_seen_ms.saturating_add(debounce_ms))
    }

    /// Feed the combined reading of the sources (`None`: nobody knows).
    pub fn observe(
        &mut self,
        reading: Option<Reading>,
        now_ms: u64,
        debounce_ms: u64,
    ) -> Option<Transition> {
        let (activity, at_ms) = match reading {
            Some(r) => (r.activity, r.at_ms.min(now_ms)),
            None => (Activity::Unknown, now_ms),
        };
        if activity == self.committed {
            self.pending = None;
            return None;
        }
        let pending = match self.pending {
            Some(p) if p.activity == activity => p,
            _ => {
                let p = Pending {
                    activity,
                    first_seen_ms: now_ms,
                    at_ms,
                };
                self.pending = Some(p);
                p
            }
        };
        if now_ms.saturating_sub(pending.first_seen_ms) >= debounce_ms {
            Some(self.commit(pending.activity, pending.at_ms))
        } else {
            None
        }
    }

    /// Commit `activity` at once, without debounce. `None` when it is
    /// already the state.
    pub fn force(&mut self, activity: Activity, at_ms: u64) -> Option<Transition> {
        if activity == self.committed {
            self.pending = None;
            return None;
        }
        Some(self.commit(activity, at_ms))
    }

    fn commit(&mut self, to: Activity, at_ms: u64) -> Transition {
        let from = self.committed;
        // Never move `since` backwards: a source's own timestamp may predate
        // the previous commit by a clock tick.
        let since_ms = at_ms.max(self.since_ms);
        self.committed = to;
        self.since_ms = since_ms;
        self.pending = None;
        Transition { from, to, since_ms }
    }
}

/// When a session must be looked at again although no source reported
/// anything new: a pending state's debounce ends, or typed input alone
/// stops counting as a turn. `None`: only a new signal can change it, so a
/// watcher sleeps until one comes.
pub fn next_look(
    tracker: &Tracker,
    readings: &Readings,
    now_ms: u64,
    debounce_ms: u64,
) -> Option<u64> {
    let settle = tracker.settles_at(debounce_ms);
    let expiry = expires_at(readings, now_ms);
    match (settle, expiry) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(activity: Activity, at_ms: u64) -> Option<Reading> {
        Some(Reading { activity, at_ms })
    }

    #[test]
    fn the_next_look_is_the_debounce_end_or_the_typed_input_expiry_whichever_is_first() {
        use crate::activity::INPUT_ALONE_MS;
        let mut t = Tracker::new(0);
        let quiet = Readings::default();
        assert_eq!(next_look(&t, &quiet, 0, 1000), None, "nothing pending");
        t.observe(r(Activity::Working, 100), 100, 1000);
        assert_eq!(next_look(&t, &quiet, 100, 1000), Some(1100));
        let typed = Readings {
            input_ms: Some(50),
            ..Readings::default()
        };
        assert_eq!(
            next_look(&t, &typed, 100, 10_000),
            Some(50 + INPUT_ALONE_MS)
        );
        t.observe(r(Activity::Working, 100), 1100, 1000);
        assert!(!t.is_settling());
        assert_eq!(next_look(&t, &typed, 1100, 1000), Some(50 + INPUT_ALONE_MS));
        assert_eq!(
            next_look(&t, &typed, 50 + INPUT_ALONE_MS, 1000),
            None,
            "expired input is not a deadline"
        );
        // Committed once the deadline it named has come.
        let mut u = Tracker::new(0);
        u.observe(r(Activity::Idle, 10), 10, 500);
        let at = next_look(&u, &quiet, 10, 500).unwrap();
        assert!(u.observe(r(Activity::Idle, 10), at, 500).is_some());
    }

    #[test]
    fn a_change_is_committed_only_after_it_held_for_the_debounce() {
        let mut t = Tracker::new(0);
        assert_eq!(t.observe(r(Activity::Working, 100), 100, 1000), None);
        assert_eq!(t.observe(r(Activity::Working, 100), 600, 1000), None);
        assert!(t.is_settling());
        let tr = t.observe(r(Activity::Working, 100), 1100, 1000).unwrap();
        assert_eq!(
            tr,
            Transition {
                from: Activity::Unknown,
                to: Activity::Working,
                since_ms: 100
            }
        );
        assert_eq!(t.activity(), Activity::Working);
        assert_eq!(t.since_ms(), 100);
    }

    #[test]
    fn a_flicker_shorter_than_the_debounce_never_commits() {
        let mut t = Tracker::new(0);
        t.force(Activity::Working, 0);
        assert_eq!(t.observe(r(Activity::Idle, 10), 10, 1000), None);
        assert_eq!(t.observe(r(Activity::Working, 20), 500, 1000), None);
        assert!(!t.is_settling());
        assert_eq!(t.observe(r(Activity::Idle, 30), 900, 1000), None);
        // The flicker restarted the clock: 900 + 1000 is needed, not 10 + 1000.
        assert_eq!(t.observe(r(Activity::Idle, 30), 1500, 1000), None);
        assert!(t.observe(r(Activity::Idle, 30), 1900, 1000).is_some());
    }

    #[test]
    fn each_change_is_reported_once() {
        let mut t = Tracker::new(0);
        assert!(t.observe(r(Activity::Idle, 5), 5, 0).is_some());
        for now in 6..20 {
            assert_eq!(t.observe(r(Activity::Idle, 5), now, 0), None);
        }
    }

    #[test]
    fn force_skips_the_debounce_and_since_never_goes_backwards() {
        let mut t = Tracker::new(0);
        t.observe(r(Activity::Idle, 50), 50, 0);
        let tr = t.force(Activity::Working, 40).unwrap();
        assert_eq!(tr.from, Activity::Idle);
        assert_eq!(tr.since_ms, 50);
        assert_eq!(t.force(Activity::Working, 60), None);
    }

    #[test]
    fn losing_every_signal_is_unknown_after_the_debounce() {
        let mut t = Tracker::new(0);
        t.force(Activity::Idle, 0);
        assert_eq!(t.observe(None, 100, 200), None);
        let tr = t.observe(None, 300, 200).unwrap();
        assert_eq!(tr.to, Activity::Unknown);
    }

    proptest::proptest! {
        #[test]
        fn since_never_goes_backwards_and_every_transition_is_a_real_change(
            steps in proptest::collection::vec((0u8..5, 0u64..300, 0u64..400), 1..40),
            debounce in 0u64..500,
        ) {
            let mut t = Tracker::new(0);
            let mut now = 0;
            for (kind, dt, age) in steps {
                now += dt;
                let before = (t.activity(), t.since_ms());
                let reading = match kind {
                    0 => None,
                    k => Some(Reading {
                        activity: [Activity::Working, Activity::Waiting, Activity::Idle, Activity::Unknown][k as usize - 1],
                        at_ms: now.saturating_sub(age),
                    }),
                };
                let out = t.observe(reading, now, debounce);
                proptest::prop_assert!(t.since_ms() >= before.1);
                match out {
                    Some(tr) => {
                        proptest::prop_assert_eq!(tr.from, before.0);
                        proptest::prop_assert_ne!(tr.from, tr.to);
                        proptest::prop_assert_eq!(t.activity(), tr.to);
                        proptest::prop_assert_eq!(t.since_ms(), tr.since_ms);
                    }
                    None => proptest::prop_assert_eq!(t.activity(), before.0),
                }
            }
        }
    }
}
