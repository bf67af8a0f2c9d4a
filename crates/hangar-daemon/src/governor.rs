//! The resource governor's loop: measure hangar's own live sessions' process
//! trees in `/proc` (their proportional set size, only while a budget is
//! set: `governor/memory.rs`), ask `hangar_core::governor` what to hibernate
//! (and `hangar_core::in_use` who is in use), and do it; evict stale parked
//! records when a TTL is configured.
//!
//! It never touches a session that is visible, attached, pinned, mid-turn,
//! waiting for the user or woken for a prompt not typed yet; when nothing
//! qualifies it reports "over budget" in `status` and leaves the fleet
//! alone.
//!
//! The `Governor` sits on the `Spawner`: its `wake_as` admits a wake under
//! the memory budget (room made first, or a wait in the queue), then is the
//! spawner's wake followed by making room, and it hibernates through the
//! spawner. A session's move to another account (`move_to_account`) is its
//! too: a hibernate and a wake. Eviction
//! and close-idle (eviction.rs) and the close path every closer shares are
//! its methods too. It gets `[governor]` by value when built (machinery:
//! its interval, budget and TTL never change while it runs).

mod memory;
mod settings;

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::time::Duration;

use hangar_core::SessionId;
use hangar_core::governor::{
    BudgetDecision, LiveFacts, WakeAdmission, admit_wake, enforce_budget, expected_wake_bytes,
};
use hangar_core::in_use::{InUse, in_use};

use crate::Paths;
use crate::activity::{Activity, Hub, Monitor};
use crate::errors::ApiError;
use crate::journal::{Caller, Event, HibernateReason, Journal};
use crate::orchestration::{McpConfig, Orchestration};
use crate::os::{Os, ProcessMemory};
use crate::section::Section;
use crate::sessions::{RunState, Sessions};
use crate::shutdown::Shutdown;
use crate::spawn::Spawner;
use crate::worktree::Worktrees;
pub use memory::{FleetMemory, Held, READ_GAP_MS, tree_memory};
pub use settings::{GovernorConfig, looks_like_auth_failure};

/// The last budget check, for `status`.
#[derive(Clone, Debug, Default)]
pub struct BudgetStatus {
    pub live: usize,
    /// The live agents' proportional memory (shared pages counted once).
    pub memory_bytes: u64,
    /// The same trees' resident memory (shared pages once per process).
    pub resident_bytes: u64,
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
    /// The live agents' memory readings and the memory budget's wake
    /// admission (`governor/memory.rs`).
    pub(crate) memory: FleetMemory,
}

/// Ends a wake's admission however the wake ends: a wake that waited and
/// whose caller went away leaves the queue, one admitted stops counting
/// its expected memory once its own reading counts.
struct Admission<'a> {
    memory: &'a FleetMemory,
    id: SessionId,
}

impl Drop for Admission<'_> {
    fn drop(&mut self) {
        self.memory.stop_waiting(&self.id);
        self.memory.settled(&self.id);
    }
}

impl Governor {
    /// Make `id` live on behalf of a person at the command line.
    pub async fn wake(&self, id: &SessionId) -> Result<RunState, ApiError> {
        self.wake_as(id, Caller::Cli).await
    }

    /// Make `id` live (`Spawner::wake_as`), then hibernate what the budget
    /// asks to make room for it. Under a memory budget the wake is admitted
    /// first: room is made before it starts, or it waits in the queue until
    /// there is room (`admit_by_memory`). A restore spawns the visible panes
    /// without looking at the budget.
    pub async fn wake_as(&self, id: &SessionId, caller: Caller) -> Result<RunState, ApiError> {
        if caller == Caller::Agent {
            self.refuse_if_limited(id)?;
        }
        let _admission = match caller {
            Caller::Restore => None,
            _ => self.admit_by_memory(id).await,
        };
        let state = self.spawner.wake_as(id, caller).await?;
        if state == RunState::Live && caller != Caller::Restore {
            let protect = BTreeSet::from([id.clone()]);
            self.enforce_budget_now(&protect).await;
        }
        Ok(state)
    }

    /// [`Governor::wake_as`] for a prompt: `id` is kept from the budget
    /// (neither another wake's room nor the budget's check takes it) until
    /// the returned hold is dropped, which the caller does once the prompt
    /// is typed. Without it a wake admitted next could hibernate the agent
    /// woken a moment before, idle still, and the prompt found it gone.
    pub async fn wake_to_prompt(
        &self,
        id: &SessionId,
        caller: Caller,
    ) -> Result<(RunState, Held<'_>), ApiError> {
        let held = self.memory.hold(id);
        let state = self.wake_as(id, caller).await?;
        Ok((state, held))
    }

    /// Carry `id` on under the account `to` (`hangar limit ID --failover
    /// ACCOUNT`): an account of its provider that no session of it finds
    /// limited now (rule 13 holds for each account), and only while no
    /// turn runs, it waits for no one and no person is attached
    /// (`hangar_core::accounts::may_move_now`). A live agent is hibernated
    /// and woken again under `to`: the same pane, the same conversation
    /// (resumed by its provider session id). The move is journalled by
    /// name and the limit it stood under is forgotten (its old account's).
    pub async fn move_to_account(&self, id: &SessionId, to: &str) -> Result<RunState, ApiError> {
        let meta = self
            .sessions
            .meta(id)
            .ok_or_else(|| ApiError::not_found(format!("no session {id}")))?;
        let folder = {
            let accounts = self.spawner.accounts.get();
            crate::account_folders::folder_under(accounts, Some(to), &meta)
                .map_err(|e| ApiError::invalid(e.to_string()))?
        };
        if meta.account.as_deref() == Some(to) {
            return Ok(self.sessions.run_state(id));
        }
        let limited_on_to = self
            .usage
            .limited_sessions()
            .into_iter()
            .filter_map(|(other, _)| self.sessions.meta(&SessionId::from(other.as_str())))
            .any(|m| m.account.as_deref() == Some(to));
        if limited_on_to {
            return Err(ApiError::new(
                hangar_protocol::message::codes::LIMITED,
                format!(
                    "account {to:?} is limited too: a session under it stands at a usage limit"
                ),
            ));
        }
        let (activity, _) = self.monitor.activity_of(id);
        let attached = self.activity.viewers(id) > 0;
        if !hangar_core::accounts::may_move_now(
            activity == Activity::Working,
            activity == Activity::Waiting,
            attached,
        ) {
            let why = self.in_use(id).unwrap_or("in use");
            return Err(ApiError::invalid(format!(
                "session {} cannot move to account {to:?} now: it is {why}; try again when it is idle",
                id.short()
            )));
        }
        let was_running = self.sessions.run_state(id).is_running();
        if was_running {
            self.spawner.hibernate_session(id).await?;
        }

        // Its CLI resumes only what the new account's folder holds: carried
        // there before the move, which a failed copy refuses.
        let carried = self
            .sessions
            .meta(id)
            .ok_or_else(|| ApiError::not_found(format!("no session {id}")))
            .and_then(|now| {
                crate::account_folders::carry_to(&now, folder.as_deref())
                    .map_err(|e| ApiError::new(hangar_protocol::message::codes::FAILED, e))
            });
        if let Err(e) = carried {
            if was_running && let Err(back) = self.wake_as(id, Caller::Cli).await {
                // Back as it was, under its own account, or said why not.
                tracing::warn!(
                    "{id}: not woken again after a refused move: {}",
                    back.message
                );
            }
            return Err(e);
        }
        self.sessions
            .set_account(id, Some(to.to_owned()), folder.as_deref(), self.os.now_ms())?;
        self.journal.record(Event::AccountMove {
            session: id.to_string(),
            from: meta.account.clone(),
            to: to.to_owned(),
        });
        self.usage.moved_account(id);
        if !was_running {
            return Ok(self.sessions.run_state(id));
        }
        self.wake_as(id, Caller::Cli).await
    }

    /// What `id`'s agent is doing that stopping its process would cut
    /// (`hangar_core::work_in_flight`): a command it started that still
    /// runs under it, seen in `/proc`. A running turn is not a refusal
    /// here: where hangar cannot see a CLI's turns end (no transcript, no
    /// hooks) its activity may read "working" long after, and a stop
    /// already waits for a turn's record (`hangar_core::stop_gate`).
    /// `None` when it is not live, is a plain shell, or nothing runs.
    pub fn work_in_flight(&self, id: &SessionId) -> Option<hangar_core::work_in_flight::InFlight> {
        let pid = self.sessions.process(id)?.pid;
        if self.sessions.provider_of(id)? == hangar_core::Provider::Shell {
            return None;
        }
        self.command_in_flight(pid)
    }

    /// A command the agent process `pid` started that still runs (its
    /// descendants read from `/proc`; `hangar_core::work_in_flight`).
    fn command_in_flight(&self, pid: u32) -> Option<hangar_core::work_in_flight::InFlight> {
        let descendants: Vec<hangar_core::work_in_flight::TreeProcess> = self
            .os
            .process_tree(pid)
            .into_iter()
            .filter(|p| *p != pid)
            .map(|p| hangar_core::work_in_flight::TreeProcess {
                pid: p,
                parent: self.os.parent_of(p),
                argv: self.os.cmdline(p),
            })
            .collect();
        hangar_core::work_in_flight::in_flight(false, &descendants)
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

    /// Under a memory budget, wait until waking `id` fits it: hibernate
    /// what `hangar_core::governor::admit_wake` chooses to make room, or
    /// wait (shown in `ls` and `status`) until the fleet changes (a turn
    /// ends, an agent exits or is hibernated, a person detaches) and look
    /// again, at least every [`READ_GAP_MS`] (memory shrinks without
    /// telling anyone). `None` when no admission applies: no memory budget,
    /// not an agent, or already running.
    async fn admit_by_memory(&self, id: &SessionId) -> Option<Admission<'_>> {
        let max = self.config.budget().max_memory_bytes?;
        let agent = self.sessions.meta(id)?.provider.is_agent();
        if !agent || self.sessions.run_state(id).is_running() {
            return None;
        }
        let admission = Admission {
            memory: &self.memory,
            id: id.clone(),
        };
        let mut fleet = self.activity.changes();
        // The first look reads the fleet anew; a wake that waits looks again
        // at each change of the fleet, on readings at most READ_GAP_MS old.
        let mut fresh = true;
        loop {
            let deciding = self.memory.deciding.lock().await;
            let mut protect = self.memory.held();
            protect.insert(id.clone());
            let (mut facts, _) = self.live_facts(std::mem::take(&mut fresh));
            let expected = expected_wake_bytes(self.memory.remembered(id), &facts);
            // Wakes admitted a moment ago hold at least what they were
            // admitted for until they are read at it: a fresh process reads
            // small, and the next wake must not take its room.
            for (other, bytes) in self.memory.admitted() {
                match facts.iter_mut().find(|f| f.id == other) {
                    Some(f) => f.memory_bytes = f.memory_bytes.max(bytes),
                    None if other != *id => facts.push(LiveFacts {
                        id: other,
                        last_active_ms: u64::MAX,
                        visible: false,
                        viewed: false,
                        pinned: false,
                        busy: true,
                        waiting: false,
                        memory_bytes: bytes,
                    }),
                    None => {}
                }
            }
            match admit_wake(&facts, Some(max), expected, &protect) {
                WakeAdmission::Admit { hibernate } => {
                    self.make_room(id, &hibernate).await;
                    self.memory.admit(id, expected);
                    drop(deciding);
                    return Some(admission);
                }
                WakeAdmission::Wait { reason } => {
                    if !self.is_waiting(id) {
                        tracing::info!("wake of {id} waits for memory: {reason}");
                    }
                    self.memory.wait(id, &reason);
                }
            }
            drop(deciding);
            tokio::select! {
                _ = fleet.changed() => {}
                _ = tokio::time::sleep(Duration::from_millis(READ_GAP_MS)) => {}
            }
        }
    }

    fn is_waiting(&self, id: &SessionId) -> bool {
        self.memory.waiting().iter().any(|w| w == id.as_str())
    }

    /// Hibernate `hibernate` so that `id` fits the memory budget, and say
    /// so in `ls` on each of them and on `id`.
    async fn make_room(&self, id: &SessionId, hibernate: &[SessionId]) {
        let mut made = Vec::new();
        for other in hibernate {
            tracing::info!("memory budget: hibernating {other} to make room for {id}");
            if self.spawner.hibernate_session(other).await.is_ok() {
                self.journal.record(Event::Hibernate {
                    session: other.to_string(),
                    reason: HibernateReason::Budget,
                });
                self.memory.note(
                    other,
                    "hibernated",
                    format!(
                        "hibernated by the memory budget to make room for {}",
                        id.short()
                    ),
                );
                made.push(other.short().to_owned());
            }
        }
        if !made.is_empty() {
            self.memory.note(
                id,
                "live",
                format!(
                    "woke within the memory budget after hibernating {}",
                    made.join(", ")
                ),
            );
        }
    }

    /// What the memory budget says about `id` in `ls` while it is in
    /// `state`: that its wake waits for room, that it was hibernated to
    /// make room, or that its wake made room.
    pub fn memory_note(&self, id: &SessionId, state: &str) -> Option<String> {
        self.memory.note_for(id, state)
    }

    /// The wakes waiting for memory (`status`).
    pub fn waiting_for_memory(&self) -> Vec<String> {
        self.memory.waiting()
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
    pub fn fleet_memory(&self) -> ProcessMemory {
        let budget = self.config.budget();
        if budget.max_live.is_some() || budget.max_memory_bytes.is_some() {
            let last = self.budget_status();
            return ProcessMemory {
                proportional: last.memory_bytes,
                resident: last.resident_bytes,
            };
        }
        self.live_facts(false).1.values().copied().sum()
    }

    /// Facts about every live agent session, and each one's memory (read
    /// now when `fresh`, else at most every [`READ_GAP_MS`]).
    fn live_facts(&self, fresh: bool) -> (Vec<LiveFacts>, HashMap<SessionId, ProcessMemory>) {
        let snapshot = self.sessions.budget_candidates();
        let live: Vec<(SessionId, u32)> = snapshot.iter().map(|c| (c.id.clone(), c.pid)).collect();
        let memory = self.memory.measure(self.os.as_ref(), &live, fresh);
        let facts = snapshot
            .into_iter()
            .map(|c| {
                let (activity, _) = self.monitor.activity_of(&c.id);
                // A command it started in the background outlives its turn
                // (issue 46 part 3): stopping it would cut that too.
                let busy = activity == Activity::Working
                    || (c.meta.provider != hangar_core::Provider::Shell
                        && self.command_in_flight(c.pid).is_some());
                LiveFacts {
                    viewed: self.activity.viewers(&c.id) > 0,
                    last_active_ms: c.meta.last_active_ms,
                    visible: c.visible,
                    pinned: c.pinned,
                    busy,
                    waiting: activity == Activity::Waiting,
                    memory_bytes: memory.get(&c.id).map_or(0, |m| m.proportional),
                    id: c.id,
                }
            })
            .collect();
        (facts, memory)
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
        in_use(self.activity.viewers(id), || self.monitor.activity_of(id).0)
            .map(InUse::reason)
            .or_else(|| {
                let pid = self.sessions.process(id)?.pid;
                (self.sessions.provider_of(id)? != hangar_core::Provider::Shell)
                    .then(|| self.command_in_flight(pid))
                    .flatten()
                    .map(|_| "running a command it started")
            })
    }

    /// Check the budget once and hibernate what the rules choose.
    pub async fn enforce_budget_now(&self, protect: &BTreeSet<SessionId>) -> BudgetDecision {
        let budget = self.config.budget();
        let (facts, trees) = self.live_facts(false);
        let mut protect = protect.clone();
        protect.extend(self.memory.held());
        let decision = enforce_budget(&facts, budget, &protect);
        let memory: u64 = facts.iter().map(|f| f.memory_bytes).sum();
        let remaining: ProcessMemory = trees
            .iter()
            .filter(|(id, _)| !decision.hibernate.contains(id))
            .map(|(_, m)| *m)
            .sum();
        *self.budget.lock().unwrap_or_else(|p| p.into_inner()) = BudgetStatus {
            live: facts.len() - decision.hibernate.len(),
            memory_bytes: remaining.proportional,
            resident_bytes: remaining.resident,
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
                self.memory.note(
                    id,
                    "hibernated",
                    "hibernated by the budget: the least recently used idle agent".to_owned(),
                );
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
    use crate::on_a_fake_machine::{FakeMachine, build, until};
    use hangar_core::Provider;

    fn id(s: &str) -> SessionId {
        SessionId::from(s)
    }

    /// Claude agents (they count toward the budget; shells do not): the
    /// `panes` visible, the `parked` hidden, all last used now; at most
    /// `max_live` live when given.
    fn fleet(panes: &[&str], parked: &[&str], max_live: Option<usize>) -> FakeMachine {
        fleet_within(panes, parked, max_live, None)
    }

    /// [`fleet`] under a memory budget of `max_memory_mb` too.
    fn fleet_within(
        panes: &[&str],
        parked: &[&str],
        max_live: Option<usize>,
        max_memory_mb: Option<u64>,
    ) -> FakeMachine {
        build(
            panes,
            parked,
            |c| {
                c.governor.max_live = max_live;
                c.governor.max_memory_mb = max_memory_mb;
                crate::on_a_fake_machine::find_claude(c);
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

    /// `session`'s agent process starts `argv` under it (as Claude Code
    /// runs a background Bash task): pid `child`.
    fn runs_command(m: &FakeMachine, session: &str, child: u32, argv: &[&str]) {
        let agent = m.daemon.sessions.process(&id(session)).unwrap().pid;
        m.os.spawn(child, agent, 7);
        m.os.set_process(child, Some(agent), 4096);
        m.os.set_cmdline(child, argv);
    }

    #[tokio::test(start_paused = true)]
    async fn an_agent_running_a_command_it_started_is_never_hibernated_by_the_budget() {
        let m = fleet(&["pane"], &["old", "new"], Some(1));
        wake_in_turn(&m, &["old"]).await;
        runs_command(&m, "old", 90_001, &["/bin/bash", "-c", "sleep 300"]);
        wake_in_turn(&m, &["new"]).await;
        assert_eq!(live(&m), ["new", "old"], "old's command goes on");
        assert_eq!(
            m.daemon.governor.in_use(&id("old")),
            Some("running a command it started")
        );
        // A helper process that is not a shell (an MCP server) holds
        // nothing back.
        m.os.set_cmdline(90_001, &["/usr/bin/hangar", "mcp"]);
        let decision = m.daemon.governor.enforce_budget_now(&BTreeSet::new()).await;
        assert_eq!(decision.hibernate.len(), 1, "{decision:?}");
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

    const MIB: u64 = 1024 * 1024;

    /// The pid of the program last started for session `s`.
    fn pid_of(m: &FakeMachine, s: &str) -> u32 {
        m.os.spawned()
            .iter()
            .rev()
            .find(|p| p.session.as_deref() == Some(s))
            .map(|p| p.pid)
            .unwrap_or_else(|| panic!("{s} never started"))
    }

    /// The memory budget's word on `s`, which `hangar ls` shows as its
    /// reason (asked here, not through the handler: the governor stays
    /// below handlers/ in the daemon's imports).
    fn ls_reason(m: &FakeMachine, s: &str) -> Option<String> {
        let state = m.daemon.sessions.run_state(&id(s));
        m.daemon.governor.memory_note(&id(s), state.name())
    }

    #[tokio::test(start_paused = true)]
    async fn a_wake_over_the_memory_budget_hibernates_the_least_recently_used_idle_agent_before_it_starts()
     {
        let m = fleet_within(&["pane"], &["old", "mid", "new"], None, Some(1000));
        wake_in_turn(&m, &["old", "mid"]).await;
        for s in ["old", "mid"] {
            m.os.set_memory(pid_of(&m, s), 400 * MIB, 400 * MIB);
        }
        // new is expected to hold what an agent holds on average (400 MiB):
        // 1200 MiB would not fit, so old goes first. new reads 0 once it
        // runs, so no check after the wake would have taken old.
        wake_in_turn(&m, &["new"]).await;
        assert_eq!(live(&m), ["mid", "new"]);
        let old = ls_reason(&m, "old").unwrap_or_default();
        assert!(
            old.contains("hibernated by the memory budget to make room for new"),
            "{old}"
        );
        let new = ls_reason(&m, "new").unwrap_or_default();
        assert!(new.contains("after hibernating old"), "{new}");
        assert_eq!(ls_reason(&m, "mid"), None, "mid was not touched");
    }

    #[tokio::test(start_paused = true)]
    async fn a_wake_that_cannot_fit_waits_in_the_queue_says_so_in_ls_and_starts_once_room_is_made()
    {
        let m = fleet_within(&["pane"], &["old", "mid", "new"], None, Some(1000));
        wake_in_turn(&m, &["old", "mid"]).await;
        for s in ["old", "mid"] {
            m.os.set_memory(pid_of(&m, s), 450 * MIB, 450 * MIB);
        }
        // Neither may go: a person is attached to old, mid is pinned.
        let _watching = m.daemon.activity.view(&id("old"));
        m.daemon.sessions.pin("mid", true).unwrap();
        let governor = m.daemon.governor.clone();
        let wake = tokio::spawn(async move { governor.wake(&id("new")).await });
        until("new's wake waits for memory", || {
            ls_reason(&m, "new").is_some_and(|r| r.starts_with("waiting for memory"))
        })
        .await;
        assert_eq!(
            m.daemon.sessions.run_state(&id("new")),
            RunState::Hibernated
        );
        assert!(
            m.os.spawned()
                .iter()
                .all(|p| p.session.as_deref() != Some("new"))
        );
        assert_eq!(m.daemon.governor.waiting_for_memory(), ["new"]);
        let status = crate::handlers::status::status(&m.daemon);
        assert_eq!(status.budget.waiting_for_memory, ["new"]);
        // The person unpins mid: it is idle and least recently used, so it
        // makes room and new starts.
        m.daemon.sessions.pin("mid", false).unwrap();
        let state = wake.await.unwrap().unwrap();
        assert_eq!(state, RunState::Live);
        assert_eq!(live(&m), ["new", "old"]);
        assert!(m.daemon.governor.waiting_for_memory().is_empty());
        let mid = ls_reason(&m, "mid").unwrap_or_default();
        assert!(mid.contains("to make room for new"), "{mid}");
    }

    /// Regression: a send's wake was admitted, then the next wake's
    /// admission took that agent (idle still, least recently used) before
    /// the prompt was typed, and the send failed with "session is not
    /// running" (bench/memory_budget.py, 20 agents under a budget).
    #[tokio::test(start_paused = true)]
    async fn an_agent_woken_for_a_prompt_is_not_taken_for_room_before_the_prompt_is_typed() {
        let m = fleet_within(&["pane"], &["old", "mid", "new"], None, Some(1000));
        wake_in_turn(&m, &["old", "mid"]).await;
        for s in ["old", "mid"] {
            m.os.set_memory(pid_of(&m, s), 450 * MIB, 450 * MIB);
        }
        let (state, held) = m
            .daemon
            .governor
            .wake_to_prompt(&id("old"), Caller::Send)
            .await
            .unwrap();
        assert_eq!(state, RunState::Live);
        wake_in_turn(&m, &["new"]).await;
        assert_eq!(live(&m), ["new", "old"], "mid went, not the held old");
        drop(held);
        assert!(m.daemon.governor.memory.held().is_empty());
    }

    #[tokio::test(start_paused = true)]
    async fn shared_pages_count_once_so_a_fleet_whose_resident_sum_is_over_the_budget_still_fits() {
        let m = fleet_within(&["pane"], &["old", "mid", "new"], None, Some(1000));
        wake_in_turn(&m, &["old", "mid"]).await;
        // Each maps the same 900 MiB as the two others (a runtime's pages):
        // resident 900 MiB each, its proportional share 300 MiB.
        for s in ["old", "mid"] {
            m.os.set_memory(pid_of(&m, s), 300 * MIB, 900 * MIB);
        }
        wake_in_turn(&m, &["new"]).await;
        assert_eq!(live(&m), ["mid", "new", "old"], "900 MiB fits 1000");
        m.os.set_memory(pid_of(&m, "new"), 300 * MIB, 900 * MIB);
        m.os.advance(Duration::from_millis(READ_GAP_MS));
        let decision = m.daemon.governor.enforce_budget_now(&BTreeSet::new()).await;
        assert!(decision.hibernate.is_empty() && !decision.over_budget);
        let status = crate::handlers::status::status(&m.daemon);
        assert_eq!(status.budget.memory_bytes, 900 * MIB);
        assert_eq!(status.budget.resident_bytes, 2700 * MIB);
        assert_eq!(status.budget.max_memory_bytes, Some(1000 * MIB));
    }

    #[tokio::test(start_paused = true)]
    async fn without_a_budget_nothing_is_hibernated_however_many_run() {
        let m = fleet(&["pane"], &["old", "mid", "new"], None);
        wake_in_turn(&m, &["pane", "old", "mid", "new"]).await;
        assert_eq!(live(&m), ["mid", "new", "old", "pane"]);
        let decision = m.daemon.governor.enforce_budget_now(&BTreeSet::new()).await;
        assert!(decision.hibernate.is_empty() && !decision.over_budget);
    }
}
