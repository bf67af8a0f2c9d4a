//! Cost budgets (issue 29): `[usage] max_cost_usd_per_day` (the fleet's
//! spending since local midnight) and a session's own `--max-cost` (all it
//! spent). The rules are `hangar_core::budget`'s; this looks after each
//! request the ledger recorded, tells the person at 80 %, and at 100 % stops
//! the session's goal, lets the turn it is on finish (for a bounded while,
//! shorter when the agent waits for a person), then hibernates it (journal
//! `hibernate` with reason `budget`, and the person is told).
//!
//! It must never count unpriced usage as zero (an unpriced request under a
//! budget spends it), never act twice on one spent budget, and never hold
//! the ledger's lock while it waits for a turn to end.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hangar_core::SessionId;
use hangar_core::budget::{
    BudgetError, BudgetLevel, BudgetStop, budget_level, budget_stop, check_budget,
};
use hangar_core::usage::PriceTable;

use super::Ledger;
use super::goals::Goals;
use crate::activity::Monitor;
use crate::journal::{Event, HibernateReason, Journal};
use crate::section::Section;
use crate::sessions::Sessions;
use crate::shutdown::Shutdown;
use crate::spawn::Spawner;

/// How far back the models a new budget covers are looked for.
const MODELS_LOOKBACK_MS: i64 = 7 * 24 * 3600 * 1000;

pub struct Budgets {
    pub ledger: Arc<Ledger>,
    pub sessions: Arc<Sessions>,
    pub monitor: Arc<Monitor>,
    pub spawner: Arc<Spawner>,
    pub goals: Arc<Goals>,
    pub journal: Arc<Journal>,
    pub usage: Section<super::UsageConfig>,
    pub shutdown: Shutdown,
    /// Budgets already told at 80 % / acted on at 100 %: (scope, day or
    /// session budget) keys.
    pub warned: Mutex<HashSet<String>>,
    pub spent: Mutex<HashSet<String>>,
}

/// Local midnight of the day `now_ms` is in (epoch ms).
pub(super) fn local_midnight(now_ms: i64) -> i64 {
    let offset = super::local_offset_ms(now_ms);
    let day = 86_400_000;
    (now_ms + offset).div_euclid(day) * day - offset
}

/// `[usage] max_cost_usd_per_day` checked when config.toml is read: a
/// positive amount, and every model the store saw in the last 7 days
/// priced (shipped table or `[usage.prices]`, else the agent's own figure
/// for every request of it: OpenCode's `cost`).
pub fn check_fleet_budget(
    max_usd: f64,
    overrides: &std::collections::BTreeMap<String, hangar_core::usage::Price>,
    store: &std::path::Path,
    now_ms: i64,
) -> Result<(), String> {
    let prices = PriceTable::shipped()
        .unwrap_or_default()
        .with_overrides(overrides);
    let sums = if store.is_file() {
        hangar_store::UsageLedger::open(store)
            .and_then(|l| l.sums_since(now_ms - MODELS_LOOKBACK_MS, None))
            .unwrap_or_default()
    } else {
        Vec::new()
    };
    check_budget(max_usd, &sums, &prices).map_err(|e| format!("[usage] max_cost_usd_per_day: {e}"))
}

impl Budgets {
    /// `hangar new --max-cost`, `hangar limit ID --max-cost`: refused when
    /// not positive or when a model the session (or, new, its provider)
    /// used has no price (hangar's table's, else the agent's own figure for
    /// every request of it).
    pub fn set_session_budget(&self, id: &SessionId, max_usd: Option<f64>) -> Result<(), String> {
        if let Some(max) = max_usd {
            let provider = self
                .sessions
                .provider_of(id)
                .map(|p| p.name().to_owned())
                .unwrap_or_default();
            let since = self.ledger.now() - MODELS_LOOKBACK_MS;
            let sums: Vec<_> = self
                .ledger
                .sums(since, None)
                .into_iter()
                .filter(|s| s.session == id.as_str() || s.provider == provider)
                .collect();
            check_budget(max, &sums, self.ledger.prices())
                .map_err(|e: BudgetError| format!("--max-cost for session {}: {e}", id.short()))?;
        }
        self.ledger.set_session_budget(id, max_usd);
        self.forget(id.as_str());
        self.ledger.budget_check.notify_one();
        Ok(())
    }

    fn forget(&self, id: &str) {
        let key = format!("session:{id}");
        lock(&self.warned).remove(&key);
        lock(&self.spent).remove(&key);
        self.ledger.note_budget_spent(id, None);
        self.ledger.note_budget_hibernated(id, None);
    }

    /// Run until the daemon stops: look after each recorded request.
    pub async fn run(self: Arc<Self>) {
        let mut down = self.shutdown.watch();
        loop {
            tokio::select! {
                _ = self.ledger.budget_check.notified() => {}
                _ = down.wait_for(|s| *s) => return,
            }
            let this = self.clone();
            let acts = tokio::task::spawn_blocking(move || this.look()).await;
            match acts {
                Ok(spent) => {
                    for (id, why) in spent {
                        let this = self.clone();
                        tokio::spawn(async move { this.spend(id, why).await });
                    }
                }
                Err(e) => tracing::warn!("budget look failed: {e}"),
            }
            // Requests come in bursts: one look per burst is enough.
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// One look at every budget; returns the sessions to stop, with why.
    pub(super) fn look(&self) -> Vec<(SessionId, String)> {
        let now = self.ledger.now();
        let mut out = Vec::new();
        let prices = self.ledger.prices();
        if let Some(max) = self.usage.get().max_cost_usd_per_day {
            let since = local_midnight(now);
            let sums = self.ledger.sums(since, None);
            let key = format!("day:{since}");
            match budget_level(&sums, prices, max) {
                BudgetLevel::Under => {}
                BudgetLevel::Warn { spent_usd } => {
                    if lock(&self.warned).insert(key) {
                        self.ledger.tell_fleet(&format!(
                            "spent ${spent_usd:.2} of the day's ${max:.2} budget"
                        ));
                    }
                }
                BudgetLevel::Spent { why } => {
                    if lock(&self.spent).insert(key) {
                        self.ledger.note_day_budget_spent(since, &why);
                        self.ledger
                            .tell_fleet(&format!("the day's cost budget is spent ({why})"));
                        let mut ids: Vec<String> = sums.iter().map(|s| s.session.clone()).collect();
                        ids.dedup();
                        out.extend(
                            ids.into_iter()
                                .map(|s| (SessionId::from(s.as_str()), why.clone())),
                        );
                    }
                }
            }
        }
        for (id, max) in self.ledger.session_budgets() {
            let sums = self.ledger.sums(0, Some(&id));
            let key = format!("session:{id}");
            let sid = SessionId::from(id.as_str());
            match budget_level(&sums, prices, max) {
                BudgetLevel::Under => {}
                BudgetLevel::Warn { spent_usd } => {
                    if lock(&self.warned).insert(key) {
                        self.ledger.tell(
                            &sid,
                            "budget",
                            &format!("spent ${spent_usd:.2} of its ${max:.2} budget"),
                        );
                    }
                }
                BudgetLevel::Spent { why } => {
                    if lock(&self.spent).insert(key) {
                        self.ledger.note_budget_spent(&id, Some(&why));
                        out.push((sid, why));
                    }
                }
            }
        }
        out
    }

    /// The budget of `id` is spent: its goal stops now (and nothing more
    /// is typed into it on hangar's own), the turn it is on may finish, then
    /// it hibernates; mid-turn or waiting for a person, after a bounded wait
    /// (`hangar_core::budget::budget_stop`). The person is told either way,
    /// and when it cannot be hibernated, why.
    pub(crate) async fn spend(&self, id: SessionId, why: String) {
        if self.sessions.meta(&id).is_none() {
            return;
        }
        self.goals.budget_spent(&id);
        self.journal.record(Event::Budget {
            session: id.to_string(),
            why: why.clone(),
        });
        self.ledger.tell(
            &id,
            "budget",
            &format!("stops: its cost budget is spent ({why})"),
        );
        let mut down = self.shutdown.watch();
        let spent_at = tokio::time::Instant::now();
        loop {
            if self.sessions.process(&id).is_none() {
                return;
            }
            let (activity, _) = self.monitor.activity_of(&id);
            let waited = u64::try_from(spent_at.elapsed().as_millis()).unwrap_or(u64::MAX);
            if budget_stop(activity, waited) == BudgetStop::Hibernate {
                if activity.is_busy() {
                    tracing::info!(
                        "{id} is still {} {waited} ms after its budget was spent; hibernating it",
                        activity.name()
                    );
                }
                break;
            }
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_millis(500)) => {}
                _ = down.wait_for(|s| *s) => return,
            }
        }
        match self.spawner.hibernate_session(&id).await {
            Ok(()) => {
                self.ledger.note_budget_hibernated(id.as_str(), Some(&why));
                self.journal.record(Event::Hibernate {
                    session: id.to_string(),
                    reason: HibernateReason::Budget,
                });
                self.ledger
                    .tell(&id, "budget", "is hibernated: its cost budget is spent");
            }
            Err(e) => {
                tracing::warn!("cannot hibernate {id} at its budget: {}", e.message);
                self.ledger.tell(
                    &id,
                    "budget",
                    &format!(
                        "spent its cost budget but cannot be hibernated: {}",
                        e.message
                    ),
                );
            }
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_midnight_is_a_day_boundary_at_or_before_now() {
        let now = 1_800_000_123_456;
        let m = local_midnight(now);
        assert!(m <= now && now - m < 86_400_000);
    }
}
