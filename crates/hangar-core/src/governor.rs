//! The resource governor's rules: which live session to hibernate when the
//! fleet is over budget, which parked records are stale enough to evict, and
//! the wake queue's admission and circuit-breaker rules.
//!
//! Modelled on Chrome's tab discarding: the least recently used session that
//! nobody is looking at and that is not in the middle of something goes
//! first. A session in a visible pane, a pinned one, one mid-turn or one
//! waiting on a permission prompt is never chosen; when nothing qualifies the
//! answer says so and nothing drastic happens.

use std::collections::BTreeSet;

use crate::model::{SessionId, Workspace};

/// The live budget from config. `None` means unlimited.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Budget {
    pub max_live: Option<usize>,
    pub max_memory_bytes: Option<u64>,
}

/// What the daemon observed about one live agent session.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LiveFacts {
    pub id: SessionId,
    pub last_active_ms: u64,
    /// Shown in a pane of some tab.
    pub visible: bool,
    /// A person's terminal is attached to it (`hangar attach`): taking it
    /// would throw them out.
    pub viewed: bool,
    pub pinned: bool,
    /// A turn is in progress.
    pub busy: bool,
    /// Waiting on the user (a permission prompt or a question).
    pub waiting: bool,
    /// Memory of its whole process tree: the proportional set size (a page
    /// shared with other processes counts its share only).
    pub memory_bytes: u64,
}

impl LiveFacts {
    pub fn evictable(&self) -> bool {
        !(self.visible || self.viewed || self.pinned || self.busy || self.waiting)
    }
}

/// The governor's answer for one check.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BudgetDecision {
    /// Sessions to hibernate, least recently used first.
    pub hibernate: Vec<SessionId>,
    /// Still over budget after those (nothing else qualified).
    pub over_budget: bool,
    /// Why it is still over budget, for `status`.
    pub reason: Option<String>,
}

/// Choose the sessions to hibernate so that the live set fits `budget`.
/// The live agents that may be hibernated to make room, least recently
/// used first (ties by id, so the order is the same on every look).
fn eviction_order<'a>(live: &'a [LiveFacts], protect: &BTreeSet<SessionId>) -> Vec<&'a LiveFacts> {
    let mut candidates: Vec<&LiveFacts> = live
        .iter()
        .filter(|l| l.evictable() && !protect.contains(&l.id))
        .collect();
    candidates.sort_by(|a, b| {
        a.last_active_ms
            .cmp(&b.last_active_ms)
            .then_with(|| a.id.cmp(&b.id))
    });
    candidates
}

/// `protect` names sessions that must stay (the one just woken).
pub fn enforce_budget(
    live: &[LiveFacts],
    budget: Budget,
    protect: &BTreeSet<SessionId>,
) -> BudgetDecision {
    let mut count = live.len();
    let mut memory: u64 = live.iter().map(|l| l.memory_bytes).sum();
    let over = |count: usize, memory: u64| {
        budget.max_live.is_some_and(|m| count > m)
            || budget.max_memory_bytes.is_some_and(|m| memory > m)
    };
    let candidates = eviction_order(live, protect);
    let mut decision = BudgetDecision::default();
    for c in candidates {
        if !over(count, memory) {
            break;
        }
        decision.hibernate.push(c.id.clone());
        count -= 1;
        memory = memory.saturating_sub(c.memory_bytes);
    }
    if over(count, memory) {
        decision.over_budget = true;
        decision.reason = Some(format!(
            "over budget ({count} live, {} MiB) but every live agent is visible, attached, pinned, busy or waiting",
            memory / (1024 * 1024)
        ));
    }
    decision
}

/// What a wake may do under a memory budget (`admit_wake`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WakeAdmission {
    /// Start it, after hibernating these (least recently used first) to
    /// make room.
    Admit { hibernate: Vec<SessionId> },
    /// It does not fit and hibernating every agent the budget may take
    /// would not free enough: it waits in the wake queue; `reason` says so
    /// in `ls`.
    Wait { reason: String },
}

/// Whether waking a session that will hold about `waking_bytes` keeps the
/// fleet (`live`) within `max_memory_bytes`, and what must be hibernated
/// first if it does not: the same choice as [`enforce_budget`] (the least
/// recently used agent nobody sees, holds, pinned, or that is not mid-turn
/// or waiting for a person; never one in `protect`).
///
/// An agent bigger than the whole budget counts as the budget: it runs
/// once the rest of the fleet has made way, never waits forever. Nothing
/// is hibernated for a wake that would have to wait anyway.
pub fn admit_wake(
    live: &[LiveFacts],
    max_memory_bytes: Option<u64>,
    waking_bytes: u64,
    protect: &BTreeSet<SessionId>,
) -> WakeAdmission {
    let Some(max) = max_memory_bytes else {
        return WakeAdmission::Admit {
            hibernate: Vec::new(),
        };
    };
    let need = waking_bytes.min(max);
    let fleet: u64 = live.iter().map(|l| l.memory_bytes).sum();
    let mut memory = fleet;
    let candidates = eviction_order(live, protect);
    let mut hibernate = Vec::new();
    for c in candidates {
        if memory + need <= max {
            break;
        }
        hibernate.push(c.id.clone());
        memory = memory.saturating_sub(c.memory_bytes);
    }
    if memory + need <= max {
        return WakeAdmission::Admit { hibernate };
    }
    let mib = |b: u64| b / (1024 * 1024);
    WakeAdmission::Wait {
        reason: format!(
            "waiting for memory: the fleet holds {} MiB of the {} MiB budget and this agent needs about {} MiB; \
             the rest is visible, attached, pinned, working or waiting for a person",
            mib(fleet),
            mib(max),
            mib(waking_bytes),
        ),
    }
}

/// The memory a session about to wake will hold: what it held when last
/// measured live, else the average of the live agents now (a fresh agent
/// of an average fleet), else nothing known (0).
pub fn expected_wake_bytes(remembered: Option<u64>, live: &[LiveFacts]) -> u64 {
    remembered.unwrap_or_else(|| {
        let total: u64 = live.iter().map(|l| l.memory_bytes).sum();
        total.checked_div(live.len() as u64).unwrap_or(0)
    })
}

/// Parked records untouched for longer than `older_than_ms` at `now_ms`, in
/// the order they were last used.
pub fn stale_parked(ws: &Workspace, now_ms: u64, older_than_ms: u64) -> Vec<SessionId> {
    let mut stale: Vec<(u64, SessionId)> = ws
        .parked
        .values()
        .filter(|p| ws.tab(&p.tab).is_some())
        .filter_map(|p| {
            let meta = ws.sessions.get(&p.session)?;
            let touched = meta.last_active_ms.max(p.parked_at_ms);
            (now_ms.saturating_sub(touched) > older_than_ms).then(|| (touched, p.session.clone()))
        })
        .collect();
    stale.sort();
    stale.into_iter().map(|(_, id)| id).collect()
}

/// What a close of `candidates` may take as whole close cascades: a
/// candidate goes only together with everything its close would take
/// (orchestration children, linked sessions), and only when every one of
/// those `qualifies` too; otherwise it stays, so closing a parent never
/// leaves its children running as orphans. Returns the groups to close and
/// the candidates held back, each with the linked session that holds it.
pub fn whole_cascades(
    ws: &Workspace,
    candidates: &[SessionId],
    qualifies: impl Fn(&SessionId) -> bool,
) -> (Vec<Vec<SessionId>>, Vec<(SessionId, SessionId)>) {
    let mut taken: BTreeSet<SessionId> = BTreeSet::new();
    let mut groups = Vec::new();
    let mut held = Vec::new();
    for id in candidates {
        if taken.contains(id) {
            continue;
        }
        let cascade = ws.close_cascade(id);
        if let Some(blocker) = cascade
            .iter()
            .find(|s| !taken.contains(*s) && !qualifies(s))
        {
            held.push((id.clone(), blocker.clone()));
            continue;
        }
        let group: Vec<SessionId> = cascade
            .into_iter()
            .filter(|s| taken.insert(s.clone()))
            .collect();
        if !group.is_empty() {
            groups.push(group);
        }
    }
    (groups, held)
}

/// Wake-queue settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QueueLimits {
    /// Spawns running at once.
    pub max_running: usize,
    /// Minimum gap between two starts.
    pub spacing_ms: u64,
    /// Consecutive auth-like failures that open the breaker.
    pub breaker_threshold: u32,
}

impl Default for QueueLimits {
    fn default() -> Self {
        QueueLimits {
            max_running: 2,
            spacing_ms: 500,
            breaker_threshold: 3,
        }
    }
}

/// Who asked for a wake. People go ahead of background work.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum WakePriority {
    /// A person attached, sent a prompt or asked explicitly.
    Person = 0,
    /// An agent (orchestration) or the system.
    Background = 1,
}

/// The wake queue's state, without clocks or tasks.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct QueueState {
    pub running: usize,
    pub last_start_ms: Option<u64>,
    pub consecutive_auth_failures: u32,
    pub breaker_open: bool,
}

/// What the queue head may do now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Admission {
    Start,
    /// Try again at this time (spacing).
    WaitUntil(u64),
    /// Wait for a running spawn to finish, or for a person to close the
    /// breaker.
    Blocked,
}

impl QueueState {
    pub fn admit(&self, limits: QueueLimits, now_ms: u64) -> Admission {
        if self.breaker_open || self.running >= limits.max_running.max(1) {
            return Admission::Blocked;
        }
        match self.last_start_ms {
            Some(last) if now_ms < last + limits.spacing_ms => {
                Admission::WaitUntil(last + limits.spacing_ms)
            }
            _ => Admission::Start,
        }
    }

    pub fn started(&mut self, now_ms: u64) {
        self.running += 1;
        self.last_start_ms = Some(now_ms);
    }

    /// Record how a spawn ended. Returns `true` when this trips the breaker.
    pub fn finished(&mut self, limits: QueueLimits, auth_failure: bool) -> bool {
        self.running = self.running.saturating_sub(1);
        if auth_failure {
            self.consecutive_auth_failures += 1;
            if !self.breaker_open && self.consecutive_auth_failures >= limits.breaker_threshold {
                self.breaker_open = true;
                return true;
            }
        } else {
            self.consecutive_auth_failures = 0;
        }
        false
    }

    /// A person resumed the queue.
    pub fn reset_breaker(&mut self) {
        self.breaker_open = false;
        self.consecutive_auth_failures = 0;
    }
}

/// Does this failure output look like an authentication failure? Patterns
/// are matched case-insensitively.
pub fn looks_like_auth_failure(output: &str, patterns: &[String]) -> bool {
    let lower = output.to_lowercase();
    patterns.iter().any(|p| lower.contains(&p.to_lowercase()))
}

/// The default auth-failure patterns for the known agent CLIs.
pub fn default_auth_patterns() -> Vec<String> {
    [
        "401",
        "authentication_error",
        "oauth token has expired",
        "please run /login",
        "invalid api key",
        "not logged in",
        "unauthorized",
    ]
    .into_iter()
    .map(str::to_owned)
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(id: &str, last: u64) -> LiveFacts {
        LiveFacts {
            id: SessionId::from(id),
            last_active_ms: last,
            visible: false,
            viewed: false,
            pinned: false,
            busy: false,
            waiting: false,
            memory_bytes: 100,
        }
    }

    #[test]
    fn over_the_live_budget_the_least_recently_used_eligible_session_is_hibernated() {
        let mut live = vec![
            facts("a", 10),
            facts("b", 5),
            facts("c", 1),
            facts("d", 2),
            facts("e", 3),
            facts("f", 50),
        ];
        live[2].visible = true; // c: oldest but on screen
        live[3].pinned = true; // d
        live[4].busy = true; // e
        let budget = Budget {
            max_live: Some(5),
            max_memory_bytes: None,
        };
        let d = enforce_budget(&live, budget, &BTreeSet::new());
        assert_eq!(d.hibernate, vec![SessionId::from("b")]);
        assert!(!d.over_budget);
    }

    #[test]
    fn a_session_a_person_is_attached_to_is_never_chosen() {
        let mut live = vec![facts("attached", 0), facts("other", 1)];
        live[0].viewed = true;
        let budget = Budget {
            max_live: Some(1),
            max_memory_bytes: None,
        };
        let d = enforce_budget(&live, budget, &BTreeSet::new());
        assert_eq!(d.hibernate, vec![SessionId::from("other")]);
        live[1].viewed = true;
        assert!(enforce_budget(&live, budget, &BTreeSet::new()).over_budget);
    }

    #[test]
    fn the_session_just_woken_is_never_chosen() {
        let live = vec![facts("new", 0), facts("old", 1)];
        let budget = Budget {
            max_live: Some(1),
            max_memory_bytes: None,
        };
        let protect = BTreeSet::from([SessionId::from("new")]);
        assert_eq!(
            enforce_budget(&live, budget, &protect).hibernate,
            vec![SessionId::from("old")]
        );
    }

    #[test]
    fn when_nothing_qualifies_it_says_so_and_hibernates_nothing() {
        let mut live = vec![facts("a", 1), facts("b", 2)];
        live[0].waiting = true;
        live[1].visible = true;
        let budget = Budget {
            max_live: Some(1),
            max_memory_bytes: None,
        };
        let d = enforce_budget(&live, budget, &BTreeSet::new());
        assert!(d.hibernate.is_empty());
        assert!(d.over_budget);
        assert!(
            d.reason
                .unwrap()
                .contains("visible, attached, pinned, busy or waiting")
        );
    }

    #[test]
    fn a_memory_budget_hibernates_until_the_fleet_fits() {
        let mut live = vec![facts("a", 1), facts("b", 2), facts("c", 3)];
        for l in &mut live {
            l.memory_bytes = 1000;
        }
        let budget = Budget {
            max_live: None,
            max_memory_bytes: Some(1500),
        };
        let d = enforce_budget(&live, budget, &BTreeSet::new());
        assert_eq!(
            d.hibernate,
            vec![SessionId::from("a"), SessionId::from("b")]
        );
    }

    fn sized(id: &str, last: u64, bytes: u64) -> LiveFacts {
        LiveFacts {
            memory_bytes: bytes,
            ..facts(id, last)
        }
    }

    fn admit(hibernate: &[&str]) -> WakeAdmission {
        WakeAdmission::Admit {
            hibernate: hibernate.iter().map(|s| SessionId::from(*s)).collect(),
        }
    }

    #[test]
    fn a_wake_that_fits_the_memory_budget_is_admitted_as_it_is() {
        let live = vec![sized("a", 1, 400), sized("b", 2, 400)];
        let none = BTreeSet::new();
        assert_eq!(admit_wake(&live, Some(1200), 400, &none), admit(&[]));
        assert_eq!(admit_wake(&live, None, 1 << 40, &none), admit(&[]));
    }

    #[test]
    fn a_wake_over_the_memory_budget_hibernates_the_least_recently_used_idle_agents_first() {
        let mut live = vec![
            sized("old", 1, 300),
            sized("older-but-working", 0, 300),
            sized("mid", 2, 300),
            sized("new", 3, 300),
        ];
        live[1].busy = true;
        let d = admit_wake(&live, Some(1300), 700, &BTreeSet::new());
        assert_eq!(d, admit(&["old", "mid"]), "900 + 700 fits 1300 after two");
    }

    #[test]
    fn a_wake_that_cannot_fit_waits_and_hibernates_nothing() {
        let mut live = vec![sized("idle", 1, 300), sized("held", 2, 900)];
        live[1].waiting = true;
        let d = admit_wake(&live, Some(1000), 400, &BTreeSet::new());
        let WakeAdmission::Wait { reason } = d else {
            panic!("admitted: {d:?}");
        };
        assert!(reason.starts_with("waiting for memory"), "{reason}");
        // Once the held agent's turn is over it may go, and the wake fits.
        live[1].waiting = false;
        assert_eq!(
            admit_wake(&live, Some(1000), 400, &BTreeSet::new()),
            admit(&["idle", "held"])
        );
    }

    #[test]
    fn an_agent_bigger_than_the_whole_budget_runs_once_the_fleet_made_way() {
        let live = vec![sized("a", 1, 100)];
        let none = BTreeSet::new();
        assert_eq!(admit_wake(&live, Some(1000), 5000, &none), admit(&["a"]));
        assert_eq!(admit_wake(&[], Some(1000), 5000, &none), admit(&[]));
    }

    #[test]
    fn a_wake_is_expected_to_hold_what_it_held_before_else_the_fleets_average() {
        let live = vec![sized("a", 1, 100), sized("b", 2, 300)];
        assert_eq!(expected_wake_bytes(Some(50), &live), 50);
        assert_eq!(expected_wake_bytes(None, &live), 200);
        assert_eq!(expected_wake_bytes(None, &[]), 0);
    }

    #[test]
    fn the_queue_admits_at_most_k_with_spacing_and_stops_when_the_breaker_opens() {
        let limits = QueueLimits {
            max_running: 2,
            spacing_ms: 500,
            breaker_threshold: 3,
        };
        let mut q = QueueState::default();
        assert_eq!(q.admit(limits, 0), Admission::Start);
        q.started(0);
        assert_eq!(q.admit(limits, 100), Admission::WaitUntil(500));
        q.started(500);
        assert_eq!(q.admit(limits, 2000), Admission::Blocked);
        assert!(!q.finished(limits, true));
        assert!(!q.finished(limits, true));
        q.started(3000);
        assert!(q.finished(limits, true), "third auth failure trips");
        assert_eq!(q.admit(limits, 9000), Admission::Blocked);
        q.reset_breaker();
        assert_eq!(q.admit(limits, 9000), Admission::Start);
    }

    #[test]
    fn a_success_resets_the_consecutive_auth_failure_count() {
        let limits = QueueLimits::default();
        let mut q = QueueState::default();
        q.finished(limits, true);
        q.finished(limits, true);
        q.finished(limits, false);
        assert!(!q.finished(limits, true));
        assert!(!q.breaker_open);
    }

    #[test]
    fn auth_failures_are_recognised_from_provider_output() {
        let p = default_auth_patterns();
        assert!(looks_like_auth_failure(
            "API Error: 401 {\"type\":\"error\",\"error\":{\"type\":\"authentication_error\"}}",
            &p
        ));
        assert!(!looks_like_auth_failure(
            "exited with code 1: cwd missing",
            &p
        ));
    }

    #[test]
    fn stale_parked_records_are_those_untouched_longer_than_the_limit() {
        use crate::model::{Provider, SessionMeta, Tab, TabId};
        let mut ws = Workspace::default();
        ws.add_tab(Tab::new(TabId::from("t"), "t")).unwrap();
        let day = 86_400_000;
        for (id, last) in [("old", 0), ("fresh", 9 * day)] {
            let mut m = SessionMeta::new(SessionId::from(id), Provider::Claude, "/tmp");
            m.last_active_ms = last;
            ws.add_parked_session(m, &TabId::from("t"), last).unwrap();
        }
        assert_eq!(
            stale_parked(&ws, 10 * day, 7 * day),
            vec![SessionId::from("old")]
        );
    }

    #[test]
    fn a_parent_goes_only_with_its_whole_cascade_and_only_when_all_of_it_qualifies() {
        use crate::model::{Provider, SessionMeta, Tab, TabId};
        let mut ws = Workspace::default();
        ws.add_tab(Tab::new(TabId::from("t"), "t")).unwrap();
        for (id, parent) in [
            ("p1", None),
            ("c1", Some("p1")),
            ("p2", None),
            ("c2", Some("p2")),
            ("lone", None),
        ] {
            let mut m = SessionMeta::new(SessionId::from(id), Provider::Claude, "/tmp");
            m.relationships.orchestration_parent = parent.map(SessionId::from);
            ws.add_parked_session(m, &TabId::from("t"), 0).unwrap();
        }
        let ids = |v: &[&str]| v.iter().map(|s| SessionId::from(*s)).collect::<Vec<_>>();
        // c2 is busy: p2 must stay (its close would take c2), c2 too.
        let qualifies = |s: &SessionId| s.as_str() != "c2";
        let (groups, held) = whole_cascades(&ws, &ids(&["p1", "p2", "lone"]), qualifies);
        assert_eq!(groups, vec![ids(&["p1", "c1"]), ids(&["lone"])]);
        assert_eq!(held, vec![(SessionId::from("p2"), SessionId::from("c2"))]);
        // A child listed before its parent goes once, alone, then the parent.
        let (groups, held) = whole_cascades(&ws, &ids(&["c1", "p1"]), |_| true);
        assert_eq!(groups, vec![ids(&["c1"]), ids(&["p1"])]);
        assert!(held.is_empty());
    }
}
