//! The resource governor's loop: measure hangar's own live sessions' process
//! trees in `/proc` (only while a budget is set), ask
//! `hangar_core::governor` what to hibernate (and `hangar_core::in_use` who
//! is in use), and do it; evict stale parked records when a TTL is
//! configured.
//!
//! It never touches a session that is visible, attached, pinned, mid-turn
//! or waiting for the user; when nothing qualifies it reports "over budget" in `status`
//! and leaves the fleet alone.
//!
//! The `Governor` sits on the `Spawner`: its `wake_as` is the spawner's wake
//! followed by making room, and it hibernates through the spawner. Eviction
//! and close-idle (eviction.rs) and the close path every closer shares are
//! its methods too. It gets `[governor]` by value when built (machinery:
//! its interval, budget and TTL never change while it runs).

mod settings;

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::time::Duration;

use hangar_core::SessionId;
use hangar_core::governor::{BudgetDecision, LiveFacts, enforce_budget};
use hangar_core::in_use::{InUse, in_use};

use crate::Paths;
use crate::activity::{Activity, Hub, Monitor};
use crate::errors::ApiError;
use crate::journal::{Caller, Event, HibernateReason, Journal};
use crate::orchestration::{McpConfig, Orchestration};
use crate::os::{Os, ProcessControl};
use crate::section::Section;
use crate::sessions::{RunState, Sessions};
use crate::shutdown::Shutdown;
use crate::spawn::Spawner;
use crate::worktree::Worktrees;
pub use settings::{GovernorConfig, looks_like_auth_failure};

/// Resident memory of each process tree rooted at `roots` (hangar's own
/// sessions), in bytes: each tree is walked down from its root through the
/// kernel's children lists, and only its members' resident memory is read;
/// never a scan of every process on the machine.
pub fn tree_memory(os: &dyn ProcessControl, roots: &[u32]) -> HashMap<u32, u64> {
    roots
        .iter()
        .map(|&root| {
            let bytes = os
                .process_tree(root)
                .into_iter()
                .filter_map(|pid| os.resident_bytes(pid))
                .sum::<u64>();
            (root, bytes)
        })
        .collect()
}

/// The last budget check, for `status`.
#[derive(Clone, Debug, Default)]
pub struct BudgetStatus {
    pub live: usize,
    pub memory_bytes: u64,
    pub over_budget: bool,
    pub reason: Option<String>,
}

/// The resource governor: the live budget, evict and close-idle, and the
/// close path.
pub struct Governor {
    pub(crate) paths: Paths,
    pub(crate) sessions: Arc<Sessions>,
    pub(crate) journal: Arc<Journal>,
    /// The clock every age the governor judges is read from.
    pub(crate) os: Arc<dyn Os>,
    /// Who views each session (attached clients).
    pub(crate) activity: Arc<Hub>,
    pub(crate) monitor: Arc<Monitor>,
    pub(crate) spawner: Arc<Spawner>,
    /// Where sessions run: a close removes what their places made.
    pub(crate) places: Arc<crate::places::Places>,
    pub(crate) worktrees: Arc<Worktrees>,
    /// Tombstones of closed orchestration children.
    pub(crate) orchestration: Arc<Orchestration>,
    pub(crate) mcp: Section<McpConfig>,
    /// `[governor]` as at start.
    pub(crate) config: GovernorConfig,
    pub(crate) shutdown: Shutdown,
    /// The last budget check, for `status` (the governor's own: nothing
    /// else writes it).
    pub(crate) budget: std::sync::Mutex<BudgetStatus>,
    /// Usage limits: no agent's wake or prompt goes to a limited account
    /// before its reset (rule 13).
    pub(crate) usage: Arc<crate::usage::Ledger>,
}

impl Governor {
    /// Make `id` live on behalf of a person at the command line.
    pub async fn wake(&self, id: &SessionId) -> Result<RunState, ApiError> {
        self.wake_as(id, Caller::Cli).await
    }

    /// Make `id` live (`Spawner::wake_as`), then hibernate what the budget
    /// asks to make room for it. A restore spawns the visible panes without
    /// looking at the budget.
    pub async fn wake_as(&self, id: &SessionId, caller: Caller) -> Result<RunState, ApiError> {
        if caller == Caller::Agent {
            self.refuse_if_limited(id)?;
        }
        let state = self.spawner.wake_as(id, caller).await?;
        if state == RunState::Live && caller != Caller::Restore {
            let protect = BTreeSet::from([id.clone()]);
            self.enforce_budget_now(&protect).await;
        }
        Ok(state)
    }

    /// Refuse what an agent asks of `id` (a wake, a prompt) while its
    /// provider account is limited: never hammer a limited account. A person
    /// is never refused (they see the limit and decide).
    pub fn refuse_if_limited(&self, id: &SessionId) -> Result<(), ApiError> {
        if self.usage.may_use_account(id.as_str()) {
            return Ok(());
        }
        let until = self
            .usage
            .limit_view(id.as_str())
            .and_then(|l| l.resets_at)
            .map(|t| format!("until {}", crate::usage::clock_text(t)))
            .unwrap_or_else(|| "until an unknown time (a person must continue it)".to_owned());
        Err(ApiError::new(
            hangar_protocol::message::codes::LIMITED,
            format!(
                "session {} is limited by its provider's usage limit {until}; \
                 hangar continues it by itself after the reset",
                id.short()
            ),
        ))
    }

    /// The last budget check.
    pub fn budget_status(&self) -> BudgetStatus {
        // A poisoned lock still holds a whole status (plain data).
        self.budget
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// The live agents' memory for `status`: the governor's last
    /// measurement while a budget is set; otherwise measured now, on this
    /// request only (the governor measures nothing without a budget).
    pub fn fleet_memory(&self) -> u64 {
        let budget = self.config.budget();
        if budget.max_live.is_some() || budget.max_memory_bytes.is_some() {
            return self.budget_status().memory_bytes;
        }
        let pids = self.sessions.budget_pids();
        tree_memory(self.os.as_ref(), &pids).values().sum()
    }

    /// Facts about every live agent session.
    fn live_facts(&self) -> Vec<LiveFacts> {
        let snapshot = self.sessions.budget_candidates();
        let pids: Vec<u32> = snapshot.iter().map(|c| c.pid).collect();
        let memory = tree_memory(self.os.as_ref(), &pids);
        snapshot
            .into_iter()
            .map(|c| {
                let (activity, _) = self.monitor.activity_of(&c.id);
                LiveFacts {
                    viewed: self.activity.viewers(&c.id) > 0,
                    last_active_ms: c.meta.last_active_ms,
                    visible: c.visible,
                    pinned: c.pinned,
                    busy: activity == Activity::Working,
                    waiting: activity == Activity::Waiting,
                    memory_bytes: memory.get(&c.pid).copied().unwrap_or(0),
                    id: c.id,
                }
            })
            .collect()
    }

    /// A person used `id` (attached to it, typed into it): it becomes the
    /// most recently used, so the budget takes others first. A `throttled`
    /// touch (every keystroke of an attached terminal lands here) is stored
    /// at most once per `hangar_core::in_use::TOUCH_EVERY_MS` per session.
    pub fn touch_used(&self, id: &SessionId, throttled: bool) {
        let now = self.os.now_ms();
        self.sessions.touch_if_due(id, now, throttled);
    }

    /// Why a person or a turn is using `id` right now (attached, mid-turn,
    /// waiting for the person), if so: what evict, close-idle and the budget
    /// must never interrupt.
    pub fn in_use(&self, id: &SessionId) -> Option<&'static str> {
        in_use(self.activity.viewers(id), || self.monitor.activity_of(id).0).map(InUse::reason)
    }

    /// Check the budget once and hibernate what the rules choose.
    pub async fn enforce_budget_now(&self, protect: &BTreeSet<SessionId>) -> BudgetDecision {
        let budget = self.config.budget();
        let facts = self.live_facts();
        let decision = enforce_budget(&facts, budget, protect);
        let memory: u64 = facts.iter().map(|f| f.memory_bytes).sum();
        let remaining = memory.saturating_sub(
            facts
                .iter()
                .filter(|f| decision.hibernate.contains(&f.id))
                .map(|f| f.memory_bytes)
                .sum(),
        );
        *self.budget.lock().unwrap_or_else(|p| p.into_inner()) = BudgetStatus {
            live: facts.len() - decision.hibernate.len(),
            memory_bytes: remaining,
            over_budget: decision.over_budget,
            reason: decision.reason.clone(),
        };
        if budget.max_live.is_none() && budget.max_memory_bytes.is_none() {
            return decision;
        }
        if !decision.hibernate.is_empty() || decision.over_budget {
            self.journal.record(Event::BudgetDecision {
                live: facts.len(),
                memory_bytes: memory,
                hibernated: decision.hibernate.len(),
                over_budget: decision.over_budget,
            });
        }
        for id in &decision.hibernate {
            tracing::info!("over budget: hibernating {id}");
            if self.spawner.hibernate_session(id).await.is_ok() {
                self.journal.record(Event::Hibernate {
                    session: id.to_string(),
                    reason: HibernateReason::Budget,
                });
            }
        }
        decision
    }

    /// The governor loop: budget checks and the parked TTL. With neither
    /// configured it measures nothing and only waits for shutdown.
    ///
    /// A budget is checked when the fleet changes (a spawn, an exit, an
    /// activity change: what makes a session count or become eligible).
    /// The remaining interval exists only where no event says a check is
    /// due: memory grows without telling anyone (only while `max_memory_mb`
    /// is set), a parked TTL expires with time (only while `parked_ttl` is
    /// set), and a fleet over budget with nothing eligible waits for a
    /// person to detach or unpin (only while it is over budget).
    pub async fn govern(self: Arc<Self>) {
        let mut shutdown = self.shutdown.watch();
        let mut fleet = self.activity.changes();
        let budget = self.config.budget();
        let ttl = self.config.parked_ttl().ok().flatten();
        let measuring = budget.max_live.is_some() || budget.max_memory_bytes.is_some();
        let interval = Duration::from_millis(self.config.check_interval_ms.max(100));
        let mut over_budget = false;
        let mut last_eviction = tokio::time::Instant::now();
        loop {
            let timed = budget.max_memory_bytes.is_some() || ttl.is_some() || over_budget;
            let tick = async {
                match timed {
                    true => tokio::time::sleep(interval).await,
                    false => std::future::pending().await,
                }
            };
            tokio::select! {
                _ = fleet.changed(), if measuring => {}
                _ = tick => {}
                _ = shutdown.wait_for(|s| *s) => return,
            }
            if self.sessions.shutting_down() {
                return;
            }
            if measuring {
                over_budget = self.enforce_budget_now(&BTreeSet::new()).await.over_budget;
            }
            if let Some(ttl) = ttl
                && last_eviction.elapsed() >= interval
            {
                last_eviction = tokio::time::Instant::now();
                let _ = self.evict_parked(ttl.as_millis() as u64, false).await;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::on_a_fake_machine::{FakeMachine, build};
    use crate::os::FakeOs;
    use hangar_core::Provider;

    fn id(s: &str) -> SessionId {
        SessionId::from(s)
    }

    /// Claude agents (they count toward the budget; shells do not): the
    /// `panes` visible, the `parked` hidden, all last used now; at most
    /// `max_live` live when given.
    fn fleet(panes: &[&str], parked: &[&str], max_live: Option<usize>) -> FakeMachine {
        build(
            panes,
            parked,
            |c| {
                c.governor.max_live = max_live;
                // The fake machine runs no program, but the launch looks
                // the program up first: any that exists does.
                let claude = hangar_providers::ProviderConfig {
                    program: Some("/bin/sh".into()),
                    ..Default::default()
                };
                c.providers.insert("claude".into(), claude);
            },
            |m| m.provider = Provider::Claude,
        )
    }

    /// Wake `ids` in turn as a person would, a second apart, each used
    /// when woken (so each is more recently used than the one before).
    async fn wake_in_turn(m: &FakeMachine, ids: &[&str]) {
        for s in ids {
            m.os.advance(Duration::from_secs(1));
            let state = m.daemon.governor.wake(&id(s)).await.unwrap();
            assert_eq!(state, RunState::Live, "{s} woke");
            m.daemon.governor.touch_used(&id(s), false);
        }
    }

    fn live(m: &FakeMachine) -> Vec<String> {
        let mut ids: Vec<String> = ["pane", "p2", "old", "mid", "new"]
            .iter()
            .filter(|s| m.daemon.sessions.run_state(&id(s)) == RunState::Live)
            .map(|s| s.to_string())
            .collect();
        ids.sort();
        ids
    }

    #[tokio::test(start_paused = true)]
    async fn over_max_live_the_least_recently_used_hidden_agent_is_hibernated_never_a_visible_one()
    {
        let m = fleet(&["pane"], &["old", "mid", "new"], Some(2));
        wake_in_turn(&m, &["pane", "old"]).await;
        assert_eq!(live(&m), ["old", "pane"], "two fit the budget");
        wake_in_turn(&m, &["mid"]).await;
        assert_eq!(live(&m), ["mid", "pane"], "old was the least recently used");
        // The visible pane is the least recently used of all now; still it stays.
        wake_in_turn(&m, &["new"]).await;
        assert_eq!(live(&m), ["new", "pane"]);
        let status = m.daemon.governor.budget_status();
        assert_eq!((status.live, status.over_budget), (2, false));
        // Hibernated, not closed: each is kept to be woken again.
        for s in ["old", "mid"] {
            assert_eq!(m.daemon.sessions.run_state(&id(s)), RunState::Hibernated);
        }
    }

    #[tokio::test(start_paused = true)]
    async fn an_attached_or_pinned_agent_is_never_hibernated_and_the_fleet_says_it_is_over_budget()
    {
        let m = fleet(&["pane"], &["old", "mid", "new"], Some(1));
        let _watching = m.daemon.activity.view(&id("old"));
        m.daemon.sessions.pin("mid", true).unwrap();
        wake_in_turn(&m, &["old", "mid", "new"]).await;
        // old is attached, mid pinned; new was just woken (protected).
        assert_eq!(live(&m), ["mid", "new", "old"]);
        let decision = m.daemon.governor.enforce_budget_now(&BTreeSet::new()).await;
        assert_eq!(decision.hibernate, [id("new")], "the one nobody holds");
        assert!(decision.over_budget, "two held agents are still over one");
        let status = m.daemon.governor.budget_status();
        assert!(status.over_budget);
        let reason = status.reason.unwrap_or_default();
        assert!(reason.contains("attached, pinned"), "{reason}");
        assert_eq!(live(&m), ["mid", "old"]);
    }

    #[tokio::test(start_paused = true)]
    async fn without_a_budget_nothing_is_hibernated_however_many_run() {
        let m = fleet(&["pane"], &["old", "mid", "new"], None);
        wake_in_turn(&m, &["pane", "old", "mid", "new"]).await;
        assert_eq!(live(&m), ["mid", "new", "old", "pane"]);
        let decision = m.daemon.governor.enforce_budget_now(&BTreeSet::new()).await;
        assert!(decision.hibernate.is_empty() && !decision.over_budget);
    }

    #[test]
    fn a_trees_memory_is_its_members_and_never_another_trees() {
        let os = FakeOs::default();
        let mib = 1024 * 1024;
        // An agent (10) with a child (11) and a grandchild (12); another
        // session's agent (20); a stranger (30) that is no one's child.
        for (pid, parent, bytes) in [
            (10, None, 100),
            (11, Some(10), 50),
            (12, Some(11), 25),
            (20, None, 7),
            (30, None, 999),
        ] {
            os.spawn(pid, pid, 1);
            os.set_process(pid, parent, bytes * mib);
        }
        let memory = tree_memory(&os, &[10, 20]);
        assert_eq!(memory[&10], 175 * mib);
        assert_eq!(memory[&20], 7 * mib);
        assert_eq!(memory.len(), 2, "only the roots asked for");
        // 11 ends; its child 12 is the kernel's init's now, outside the tree.
        os.end_group(11);
        assert_eq!(tree_memory(&os, &[10])[&10], 100 * mib);
    }
}
