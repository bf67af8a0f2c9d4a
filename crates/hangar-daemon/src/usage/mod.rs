//! The usage ledger and usage limits (issue 29): what every agent's requests
//! consumed, which sessions a provider refused for a usage limit, and
//! carrying on by itself when the limit resets.
//!
//! Facts come from the recording proxy (`ExchangeReport`s: tokens, the
//! rate-limit headers, a refusal's body); every decision is hangar-core's
//! (`usage`, `usage_limits`). The ledger, the windows and each session's
//! limit are kept in the store (its own connection, never the state lock),
//! so a restart keeps every limit and every scheduled continuation. Nothing
//! here types into a session: `continuation.rs` does, by the core's rules.

pub mod budget;
pub mod continuation;
pub mod goals;
#[cfg(test)]
mod races;
pub mod screen_words;
pub mod transcripts;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use hangar_core::SessionId;
use hangar_core::auto_prompt::{AutoPrompt, GoalNow, StandDown, TypingFacts};
use hangar_core::usage::{Price, PriceTable, Tokens, UsageRecord, UsageSource};
use hangar_core::usage_limits::{
    self, Api, ResetVerdict, SessionLimit, UsageSessionState, judge_reset,
};
use hangar_protocol::view::LimitView;
use hangar_proxy::ExchangeReport;
use hangar_store::UsageLedger;
use serde::Deserialize;

use crate::activity::notify::{self, NotifyConfig};
use crate::journal::{Event, Journal};
use crate::os::Clock;
use crate::section::Section;
use crate::sessions::Sessions;

/// `[usage]` in config.toml.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UsageConfig {
    /// Read limits and usage from agents' screens, Claude and Codex
    /// transcripts and OpenCode's database at
    /// each activity change. Off by default: today each look wakes the
    /// daemon on every activity change, which an idle fleet must not pay
    /// for (`idle_daemon_wakes_for_nothing`).
    #[serde(default)]
    pub watch_agents: bool,
    /// Prices that replace or add to the shipped table, by model name
    /// (`[usage.prices."claude-x"] input = 3.0 ...`, USD per million tokens).
    #[serde(default)]
    pub prices: BTreeMap<String, Price>,
    /// The fleet's cost budget per day (since local midnight), USD: at 80 %
    /// the person is told; at 100 % every session that spent today
    /// finishes its turn and hibernates. Refused over an unpriced model.
    #[serde(default)]
    pub max_cost_usd_per_day: Option<f64>,
}

/// `[limits]` in config.toml.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LimitsConfig {
    /// Type `continue_prompt` into a session a limit stopped mid-task once
    /// the limit resets.
    #[serde(default = "yes")]
    pub auto_continue: bool,
    /// What is typed to carry on after a limit.
    #[serde(default = "default_prompt")]
    pub continue_prompt: String,
    /// Seconds after the reset (plus up to 30 s of jitter per session).
    #[serde(default = "default_delay")]
    pub continue_delay_secs: u64,
    /// Wake a hibernated limited session to continue it.
    #[serde(default)]
    pub wake_to_continue: bool,
    /// The most jitter added per session (0..=30 s), so a fleet limited
    /// together does not wake at one instant.
    #[serde(default = "default_jitter")]
    pub continue_jitter_secs: u64,
    /// Carry a limited session on under another `[accounts.NAME]` of its
    /// provider that is not limited, at once, instead of waiting for the
    /// reset (only a session that runs under an account).
    #[serde(default)]
    pub failover: bool,
}

fn default_jitter() -> u64 {
    30
}

fn yes() -> bool {
    true
}

fn default_prompt() -> String {
    "continue".to_owned()
}

fn default_delay() -> u64 {
    60
}

impl Default for LimitsConfig {
    fn default() -> Self {
        LimitsConfig {
            auto_continue: true,
            continue_prompt: default_prompt(),
            continue_delay_secs: default_delay(),
            wake_to_continue: false,
            continue_jitter_secs: default_jitter(),
            failover: false,
        }
    }
}

/// The most prompts held for one limited session.
const MAX_QUEUED_PROMPTS: usize = 16;

/// The ledger and every session's limit.
pub struct Ledger {
    store_path: PathBuf,
    sessions: Arc<Sessions>,
    journal: Arc<Journal>,
    activity: Arc<crate::activity::Hub>,
    notify: Section<NotifyConfig>,
    limits: Section<LimitsConfig>,
    prices: PriceTable,
    /// The daemon's clock (its `Os`), so a test on `FakeOs` moves it.
    clock: Arc<dyn Clock>,
    /// Opened when the daemon starts (after the store was migrated).
    store: Mutex<Option<UsageLedger>>,
    states: Mutex<HashMap<String, UsageSessionState>>,
    /// When a person last typed into each session (attach input, `hangar
    /// send`): a continuation stands down after that.
    person_input: Mutex<HashMap<String, i64>>,
    /// The account (credential hash) each session's requests last used, as
    /// the proxy saw it: an agent's own record of windows names none.
    accounts: Mutex<HashMap<String, String>>,
    /// Limits whose standing down was already journaled (session, since).
    stood_down: Mutex<HashSet<(String, i64)>>,
    /// Sessions whose own cost budget is spent, with why (`budget::Budgets`
    /// sets them; an automatic prompt checks them at the moment of typing).
    budget_spent: Mutex<HashMap<String, String>>,
    /// The local midnight of the day whose fleet budget is spent, with why.
    day_budget_spent: Mutex<Option<(i64, String)>>,
    /// Sessions a spent budget hibernated, with why: `ls` says so.
    budget_hibernated: Mutex<HashMap<String, String>>,
    /// Wakes the continuation scheduler when a limit changes.
    pub(crate) changed: tokio::sync::Notify,
    /// Wakes the budget checker after a request was recorded.
    pub(crate) budget_check: tokio::sync::Notify,
    reports: tokio::sync::mpsc::UnboundedSender<(String, ExchangeReport)>,
    receiver: Mutex<Option<tokio::sync::mpsc::UnboundedReceiver<(String, ExchangeReport)>>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // Plain data: a poisoned lock still holds a whole value.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl crate::activity::StandingLimits for Ledger {
    fn standing(&self, id: &str) -> Option<hangar_core::activity::StandingLimit> {
        self.limit_view(id)
            .map(|l| hangar_core::activity::StandingLimit {
                resets_at: l.resets_at,
            })
    }

    fn now_ms(&self) -> i64 {
        self.now()
    }
}

impl Ledger {
    /// The daemon's clock now, in ms since the epoch.
    pub(crate) fn now(&self) -> i64 {
        i64::try_from(self.clock.now_ms()).unwrap_or(i64::MAX)
    }

    // Each piece the ledger holds, given once by `Daemon::new`.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        store_path: PathBuf,
        sessions: Arc<Sessions>,
        journal: Arc<Journal>,
        activity: Arc<crate::activity::Hub>,
        notify: Section<NotifyConfig>,
        limits: Section<LimitsConfig>,
        usage: &UsageConfig,
        clock: Arc<dyn Clock>,
    ) -> Ledger {
        let prices = match PriceTable::shipped() {
            Ok(t) => t,
            Err(e) => {
                // The shipped file is checked by hangar-core's tests; if it
                // still fails, every model is unpriced (never priced at 0).
                tracing::error!("{e}");
                PriceTable::default()
            }
        }
        .with_overrides(&usage.prices);
        let (reports, receiver) = tokio::sync::mpsc::unbounded_channel();
        Ledger {
            store_path,
            sessions,
            journal,
            activity,
            notify,
            limits,
            prices,
            clock,
            store: Mutex::new(None),
            states: Mutex::new(HashMap::new()),
            person_input: Mutex::new(HashMap::new()),
            accounts: Mutex::new(HashMap::new()),
            stood_down: Mutex::new(HashSet::new()),
            budget_spent: Mutex::new(HashMap::new()),
            day_budget_spent: Mutex::new(None),
            budget_hibernated: Mutex::new(HashMap::new()),
            changed: tokio::sync::Notify::new(),
            budget_check: tokio::sync::Notify::new(),
            reports,
            receiver: Mutex::new(Some(receiver)),
        }
    }

    /// What the proxy observer hands reports to (it must never wait).
    pub fn report_sender(&self) -> tokio::sync::mpsc::UnboundedSender<(String, ExchangeReport)> {
        self.reports.clone()
    }

    /// Open the ledger's store connection, read back every kept limit and
    /// start taking the proxy's reports. Called once the store is whole.
    pub fn start(self: &Arc<Self>) {
        match UsageLedger::open(&self.store_path) {
            Ok(l) => {
                match l.sessions() {
                    Ok((states, bad)) => {
                        for s in bad {
                            tracing::warn!("the kept limit of session {s} is unreadable; dropped");
                        }
                        lock(&self.states).extend(states);
                    }
                    Err(e) => tracing::warn!("cannot read kept limits: {e}"),
                }
                *lock(&self.store) = Some(l);
            }
            Err(e) => tracing::warn!("usage ledger unavailable, usage is not recorded: {e}"),
        }
        let Some(mut rx) = lock(&self.receiver).take() else {
            return;
        };
        // A task, not a thread parked on the channel: the runtime's shutdown
        // must not wait for a receiver whose sender the ledger itself holds.
        let ledger = Arc::downgrade(self);
        tokio::spawn(async move {
            while let Some((session, report)) = rx.recv().await {
                let Some(ledger) = ledger.upgrade() else {
                    return;
                };
                // SQLite writes: off the runtime's workers.
                let written =
                    tokio::task::spawn_blocking(move || ledger.take_report(&session, report)).await;
                if let Err(e) = written {
                    tracing::warn!("usage ledger: a report was lost: {e}");
                }
            }
        });
    }

    /// Changes on every committed activity change (a turn began or ended):
    /// when the screen and transcript readers look, never on a timer (an
    /// idle fleet must not wake the daemon).
    pub(crate) fn activity_changes(&self) -> tokio::sync::watch::Receiver<u64> {
        self.activity.changes()
    }

    /// A person typed into `id` (attach input, `hangar send`).
    pub fn person_typed(&self, id: &SessionId) {
        lock(&self.person_input).insert(id.to_string(), self.now());
    }

    pub(crate) fn person_typed_since(&self, id: &str, since_ms: i64) -> bool {
        lock(&self.person_input)
            .get(id)
            .is_some_and(|t| *t >= since_ms)
    }

    fn with_store<R>(
        &self,
        what: &str,
        f: impl FnOnce(&mut UsageLedger) -> Result<R, hangar_store::StoreError>,
    ) -> Option<R> {
        let mut guard = lock(&self.store);
        let store = guard.as_mut()?;
        match f(store) {
            Ok(r) => Some(r),
            Err(e) => {
                tracing::warn!("usage ledger: cannot {what}: {e}");
                None
            }
        }
    }

    /// One metered exchange from the proxy.
    fn take_report(&self, session: &str, r: ExchangeReport) {
        let Some(api) = Api::from_path(&r.path) else {
            return;
        };
        let now = self.now();
        let id = SessionId::from(session);
        let provider = self
            .sessions
            .provider_of(&id)
            .map(|p| p.name().to_owned())
            .unwrap_or_else(|| "unknown".to_owned());
        let record = UsageRecord {
            request_key: r
                .detail
                .message_id
                .clone()
                .unwrap_or_else(|| format!("proxy:{}:{}", r.at_ms, r.exchange)),
            session: session.to_owned(),
            provider: provider.clone(),
            account: r.account.clone(),
            model: r.detail.model.clone(),
            at_ms: r.at_ms,
            tokens: Tokens {
                input: r.detail.input_uncached,
                output: r.usage.output_tokens,
                cache_write: r.detail.cache_write,
                cache_read: r.detail.cache_read,
            },
            status: Some(r.status),
            source: UsageSource::Proxy,
            agent_cost_usd: None,
        };
        // The windows before the request: a reader that sees the request
        // sees what its reply said of the account.
        if let Some(account) = &r.account {
            lock(&self.accounts).insert(session.to_owned(), account.clone());
        }
        let windows = usage_limits::windows_from_headers(&r.headers);
        if !windows.is_empty() {
            let account = r.account.clone().unwrap_or_else(|| "unknown".to_owned());
            self.with_store("save limit windows", |s| {
                s.save_windows(&provider, &account, &windows, now)
            });
        }
        self.with_store("record a request", |s| s.record(&record));
        self.budget_check.notify_one();
        let body = r.detail.error_body.as_deref().unwrap_or_default();
        match usage_limits::classify_refusal(api, r.status, &r.headers, body, now) {
            Some(hit) => self.limited(
                &id,
                SessionLimit {
                    kind: hit.kind,
                    resets_at: hit.resets_at,
                    source: "proxy".to_owned(),
                    since_ms: now,
                    continue_at: None,
                    // A refused request ends the turn the agent was on
                    // (`limited` knows the agents that retry it).
                    stopped_mid_task: true,
                    continued: false,
                    account: r.account,
                },
            ),
            None if r.status < 400 && r.error.is_none() => self.allowed(&id),
            None => {}
        }
    }

    /// A request seen by a source other than the proxy (the agent's own
    /// transcript): one row per request key, whichever source saw it.
    pub(crate) fn record_usage(&self, record: UsageRecord) {
        self.with_store("record a request", |s| s.record(&record));
        self.budget_check.notify_one();
    }

    /// An account's windows as an agent's own records report them (a Codex
    /// rollout's `rate_limits`), under the account the proxy last saw the
    /// session use, else `unknown`.
    pub(crate) fn agent_windows(
        &self,
        id: &SessionId,
        provider: &str,
        windows: &[usage_limits::Window],
    ) {
        if windows.is_empty() {
            return;
        }
        let account = lock(&self.accounts)
            .get(id.as_str())
            .cloned()
            .unwrap_or_else(|| "unknown".to_owned());
        let now = self.now();
        self.with_store("save limit windows", |s| {
            s.save_windows(provider, &account, windows, now)
        });
    }

    /// The prices in use (shipped table and `[usage.prices]`).
    pub(crate) fn prices(&self) -> &PriceTable {
        &self.prices
    }

    /// Per-session, per-model sums since `since_ms`.
    pub(crate) fn sums(
        &self,
        since_ms: i64,
        session: Option<&str>,
    ) -> Vec<hangar_core::usage::ModelSum> {
        self.with_store("sum usage", |s| s.sums_since(since_ms, session))
            .unwrap_or_default()
    }

    /// A session's own cost budget (`hangar new --max-cost`).
    pub(crate) fn set_session_budget(&self, id: &SessionId, max_usd: Option<f64>) {
        let snapshot = {
            let mut states = lock(&self.states);
            let state = states.entry(id.to_string()).or_default();
            state.max_cost_usd = max_usd;
            state.clone()
        };
        self.with_store("keep a session's budget", |s| {
            s.save_session(id.as_str(), Some(&snapshot))
        });
    }

    pub fn session_budget(&self, id: &str) -> Option<f64> {
        lock(&self.states).get(id)?.max_cost_usd
    }

    /// Every session with a budget of its own.
    pub(crate) fn session_budgets(&self) -> Vec<(String, f64)> {
        lock(&self.states)
            .iter()
            .filter_map(|(id, s)| Some((id.clone(), s.max_cost_usd?)))
            .collect()
    }

    /// `id`'s own cost budget is spent (`why`), or with `None` set again.
    pub(crate) fn note_budget_spent(&self, id: &str, why: Option<&str>) {
        let mut spent = lock(&self.budget_spent);
        match why {
            Some(why) => spent.insert(id.to_owned(), why.to_owned()),
            None => spent.remove(id),
        };
    }

    /// A spent budget hibernated `id` (`why`), or with `None` set again.
    pub(crate) fn note_budget_hibernated(&self, id: &str, why: Option<&str>) {
        let mut hibernated = lock(&self.budget_hibernated);
        match why {
            Some(why) => hibernated.insert(id.to_owned(), why.to_owned()),
            None => hibernated.remove(id),
        };
    }

    /// Why a spent budget hibernated `id`, if it did.
    pub fn budget_hibernated_why(&self, id: &str) -> Option<String> {
        lock(&self.budget_hibernated).get(id).cloned()
    }

    /// The fleet's budget for the day starting at local midnight `since`
    /// is spent.
    pub(crate) fn note_day_budget_spent(&self, since: i64, why: &str) {
        *lock(&self.day_budget_spent) = Some((since, why.to_owned()));
    }

    /// Why no more may be spent by `id` today: its own budget, or the day's
    /// fleet budget (until local midnight).
    pub fn budget_spent_why(&self, id: &str) -> Option<String> {
        if let Some(why) = lock(&self.budget_spent).get(id) {
            return Some(why.clone());
        }
        let today = budget::local_midnight(self.now());
        lock(&self.day_budget_spent)
            .as_ref()
            .filter(|(since, _)| *since == today)
            .map(|(_, why)| format!("the day's budget: {why}"))
    }

    /// The check at the moment of typing an automatic prompt into `id`
    /// (`hangar_core::auto_prompt::may_type`), on the facts as they are
    /// now. `person_since_ms` is what a person's typing is compared with
    /// (the goal's last prompt, the limit's start).
    pub(crate) fn may_type(
        &self,
        id: &str,
        prompt: AutoPrompt,
        person_since_ms: i64,
    ) -> Result<(), StandDown> {
        let now = self.now();
        let (goal, limit_stands, account_usable, auto_continue) = {
            let states = lock(&self.states);
            let state = states.get(id);
            let goal = state.and_then(|s| s.goal.as_ref()).map(|g| GoalNow {
                state: g.state,
                prompted_ms: g.prompted_ms,
            });
            let standing = state
                .and_then(|s| s.limit.as_ref())
                .filter(|l| !l.continued);
            let account_usable = standing.is_none_or(|l| {
                usage_limits::account_may_be_used(l.resets_at, l.resets_at.is_none(), now)
            });
            (
                goal,
                standing.is_some(),
                account_usable,
                self.auto_continue(id, &states),
            )
        };
        let facts = TypingFacts {
            prompt,
            goal,
            limit_stands,
            account_usable,
            budget_spent: self.budget_spent_why(id).is_some(),
            person_typed_since: self.person_typed_since(id, person_since_ms),
            auto_continue,
        };
        hangar_core::auto_prompt::may_type(&facts)
    }

    /// Tell the person something about the whole fleet (the notify
    /// commands and desktop notification, as for a session).
    pub(crate) fn tell_fleet(&self, what: &str) {
        let text = format!("hangar: {what}");
        let config = self.notify.get();
        notify::run_text_commands(config, "", "", "budget", &text);
    }

    /// A source saw `id` refused for a usage limit.
    pub fn limited(&self, id: &SessionId, mut seen: SessionLimit) {
        // A CLI that retries by itself after the refusal (OpenCode, whose
        // screen says `Rate limit reached ... [retrying in 8s]`) carries on
        // without hangar's prompt, whichever source saw the limit: a screen
        // read between two of its retries must not arm a continuation that
        // types over the retry.
        if self
            .sessions
            .provider_of(id)
            .is_some_and(|p| hangar_providers::adapter(&p).retries_after_a_refusal())
        {
            seen.stopped_mid_task = false;
        }
        let now = self.now();
        let config = self.limits.get();
        let (limit, is_new) = {
            let mut states = lock(&self.states);
            let state = states.entry(id.to_string()).or_default();
            let mut limit = usage_limits::fold_limit(state.limit.as_ref(), seen);
            limit.resets_at = match judge_reset(limit.resets_at, now) {
                ResetVerdict::At(t) => Some(t),
                // Already passed: the account may be used again now.
                ResetVerdict::Passed => Some(now),
                ResetVerdict::Unknown => None,
            };
            limit.continue_at = usage_limits::continue_at(
                limit.resets_at,
                config.continue_delay_secs,
                i64::try_from(config.continue_jitter_secs.saturating_mul(1000)).unwrap_or(i64::MAX),
                id.as_str(),
            );
            let is_new = state.limit.as_ref() != Some(&limit);
            let was_limited = state.limit.as_ref().is_some_and(|l| !l.continued);
            state.limit = Some(limit.clone());
            let snapshot = state.clone();
            drop(states);
            if is_new {
                self.with_store("keep a limit", |s| {
                    s.save_session(id.as_str(), Some(&snapshot))
                });
            }
            (limit, is_new && !was_limited)
        };
        if !is_new {
            self.changed.notify_one();
            return;
        }
        tracing::info!(
            "session {id} is limited ({}) until {:?} (from the {})",
            limit.kind,
            limit.resets_at,
            limit.source
        );
        self.journal.record(Event::Limited {
            session: id.to_string(),
            kind: limit.kind.clone(),
            resets_at: limit.resets_at,
            source: limit.source.clone(),
        });
        let until = limit
            .resets_at
            .map(|t| format!("until {}", clock_text(t)))
            .unwrap_or_else(|| "until an unknown time".to_owned());
        self.tell(id, "limited", &format!("is limited {until}"));
        self.activity.bump_changes();
        self.changed.notify_one();
    }

    /// `id` moved to another account: the limit it stood under was its old
    /// account's, and no longer holds it back.
    pub fn moved_account(&self, id: &SessionId) {
        self.allowed(id);
    }

    /// An allowed reply: the account is usable, `id`'s limit is over.
    fn allowed(&self, id: &SessionId) {
        let snapshot = {
            let mut states = lock(&self.states);
            let Some(state) = states.get_mut(id.as_str()) else {
                return;
            };
            if state.limit.is_none() {
                return;
            }
            state.limit = None;
            state.clone()
        };
        self.with_store("forget a limit", |s| {
            s.save_session(id.as_str(), Some(&snapshot))
        });
        self.activity.bump_changes();
        self.changed.notify_one();
    }

    /// Tell the person (notify command, OSC, desktop), unless someone is
    /// looking at the session.
    pub(crate) fn tell(&self, id: &SessionId, state: &str, what: &str) {
        if self.activity.viewers(id) > 0 {
            return;
        }
        let title = self.sessions.meta(id).map(|m| m.title).unwrap_or_default();
        let who = if title.trim().is_empty() {
            id.short().to_owned()
        } else {
            title.trim().to_owned()
        };
        let text = format!("{who} {what}");
        let config = self.notify.get();
        notify::run_text_commands(config, id.as_str(), &title, state, &text);
        if config.osc {
            self.activity.send_osc(id, notify::osc_bytes(&text));
        }
    }

    /// `ls --json`'s `limit` of `id`: while a limit stands and has not been
    /// continued.
    pub fn limit_view(&self, id: &str) -> Option<LimitView> {
        let states = lock(&self.states);
        let l = states.get(id)?.limit.as_ref()?;
        if l.continued {
            return None;
        }
        Some(LimitView {
            kind: l.kind.clone(),
            resets_at: l.resets_at,
            source: l.source.clone(),
            continue_at: self
                .auto_continue(id, &states)
                .then_some(l.continue_at)
                .flatten(),
        })
    }

    /// Whether `id`'s limits are continued by themselves.
    pub fn auto_continue_of(&self, id: &str) -> bool {
        let states = lock(&self.states);
        self.auto_continue(id, &states)
    }

    /// Every session limited now, with its `ls` view, in id order.
    pub fn limited_sessions(&self) -> Vec<(String, LimitView)> {
        let mut ids: Vec<String> = lock(&self.states).keys().cloned().collect();
        ids.sort();
        ids.into_iter()
            .filter_map(|id| {
                let view = self.limit_view(&id)?;
                Some((id, view))
            })
            .collect()
    }

    fn auto_continue(&self, id: &str, states: &HashMap<String, UsageSessionState>) -> bool {
        states
            .get(id)
            .and_then(|s| s.auto_continue)
            .unwrap_or(self.limits.get().auto_continue)
    }

    /// `hangar limit ID --continue on|off` (and `hangar new
    /// --no-auto-continue`).
    pub fn set_auto_continue(&self, id: &SessionId, on: bool) {
        let snapshot = {
            let mut states = lock(&self.states);
            let state = states.entry(id.to_string()).or_default();
            state.auto_continue = Some(on);
            state.clone()
        };
        self.with_store("keep the auto-continue switch", |s| {
            s.save_session(id.as_str(), Some(&snapshot))
        });
        self.changed.notify_one();
    }

    /// A closed session's limit and switch are forgotten.
    pub fn forget(&self, id: &str) {
        lock(&self.budget_spent).remove(id);
        lock(&self.budget_hibernated).remove(id);
        if lock(&self.states).remove(id).is_some() {
            self.with_store("forget a closed session's limit", |s| {
                s.save_session(id, None)
            });
        }
    }

    /// Every limit that has not been continued, with its session's switch.
    pub(crate) fn standing_limits(&self) -> Vec<(String, SessionLimit, bool)> {
        let states = lock(&self.states);
        states
            .iter()
            .filter_map(|(id, s)| {
                let l = s.limit.as_ref().filter(|l| !l.continued)?;
                Some((id.clone(), l.clone(), self.auto_continue(id, &states)))
            })
            .collect()
    }

    /// Mark `id`'s limit continued (before typing: never twice).
    pub(crate) fn mark_continued(&self, id: &str, since_ms: i64) -> bool {
        let snapshot = {
            let mut states = lock(&self.states);
            let Some(state) = states.get_mut(id) else {
                return false;
            };
            match state.limit.as_mut() {
                Some(l) if l.since_ms == since_ms && !l.continued => l.continued = true,
                _ => return false,
            }
            state.clone()
        };
        self.with_store("mark a limit continued", |s| {
            s.save_session(id, Some(&snapshot))
        });
        self.activity.bump_changes();
        true
    }

    /// Undo `mark_continued`: the continuation was not typed after all
    /// (the check at the moment of typing stood it down), so the limit
    /// stands again and the scheduler decides anew.
    pub(crate) fn unmark_continued(&self, id: &str, since_ms: i64) {
        let snapshot = {
            let mut states = lock(&self.states);
            let Some(state) = states.get_mut(id) else {
                return;
            };
            match state.limit.as_mut() {
                Some(l) if l.since_ms == since_ms && l.continued => l.continued = false,
                _ => return,
            }
            state.clone()
        };
        self.with_store("keep a limit standing", |s| {
            s.save_session(id, Some(&snapshot))
        });
        self.activity.bump_changes();
        self.changed.notify_one();
    }

    /// Journal a continuation that stands down, once per limit.
    pub(crate) fn stand_down(&self, id: &str, since_ms: i64, reason: &str) {
        if lock(&self.stood_down).insert((id.to_owned(), since_ms)) {
            self.journal.record(Event::LimitContinue {
                session: id.to_owned(),
                typed: false,
                reason: Some(reason.to_owned()),
            });
        }
    }

    pub(crate) fn continued(&self, id: &SessionId, typed: bool, reason: Option<String>) {
        self.journal.record(Event::LimitContinue {
            session: id.to_string(),
            typed,
            reason,
        });
        if typed {
            self.tell(id, "limit-continue", "carries on after its usage limit");
        }
    }

    pub(crate) fn limits_config(&self) -> &'static LimitsConfig {
        self.limits.get()
    }

    /// `id`'s goal, changed by `f` and kept in the store when it changed.
    pub(crate) fn update_goal<R>(
        &self,
        id: &str,
        f: impl FnOnce(&mut Option<hangar_core::goal::Goal>) -> R,
    ) -> R {
        let (r, snapshot) = {
            let mut states = lock(&self.states);
            let state = states.entry(id.to_owned()).or_default();
            let before = state.goal.clone();
            let r = f(&mut state.goal);
            let snapshot = (state.goal != before).then(|| state.clone());
            (r, snapshot)
        };
        if let Some(snapshot) = snapshot {
            self.with_store("keep a goal", |s| s.save_session(id, Some(&snapshot)));
            self.activity.bump_changes();
        }
        r
    }

    pub fn goal_of(&self, id: &str) -> Option<hangar_core::goal::Goal> {
        lock(&self.states).get(id)?.goal.clone()
    }

    /// Every session with a goal that has not ended.
    pub(crate) fn open_goals(&self) -> Vec<(String, hangar_core::goal::Goal)> {
        lock(&self.states)
            .iter()
            .filter_map(|(id, s)| {
                let g = s.goal.as_ref().filter(|g| !g.state.ended())?;
                Some((id.clone(), g.clone()))
            })
            .collect()
    }

    /// When a person last typed into `id` (this daemon's run).
    pub(crate) fn person_typed_at(&self, id: &str) -> Option<i64> {
        lock(&self.person_input).get(id).copied()
    }

    /// `id`'s limit stands: the provider refused it and the continuation
    /// has not been typed yet.
    pub(crate) fn limit_stands(&self, id: &str) -> bool {
        lock(&self.states)
            .get(id)
            .and_then(|s| s.limit.as_ref())
            .is_some_and(|l| !l.continued)
    }

    /// Hold an agent's prompt to `id` until its account may be used again;
    /// returns the reset it waits for (`None`: unknown, a person decides).
    pub fn queue_prompt(&self, id: &SessionId, prompt: &str) -> Result<Option<i64>, String> {
        let (snapshot, resets_at) = {
            let mut states = lock(&self.states);
            let state = states.entry(id.to_string()).or_default();
            if state.queued_prompts.len() >= MAX_QUEUED_PROMPTS {
                return Err(format!(
                    "session {} already holds {MAX_QUEUED_PROMPTS} prompts for after its limit",
                    id.short()
                ));
            }
            state.queued_prompts.push(prompt.to_owned());
            let resets_at = state.limit.as_ref().and_then(|l| l.resets_at);
            (state.clone(), resets_at)
        };
        self.with_store("keep a queued prompt", |s| {
            s.save_session(id.as_str(), Some(&snapshot))
        });
        self.changed.notify_one();
        Ok(resets_at)
    }

    /// Put back a queued prompt that was taken but not typed, first in line.
    pub(crate) fn requeue_prompt(&self, id: &str, prompt: String) {
        let snapshot = {
            let mut states = lock(&self.states);
            let state = states.entry(id.to_owned()).or_default();
            state.queued_prompts.insert(0, prompt);
            state.clone()
        };
        self.with_store("keep a queued prompt", |s| {
            s.save_session(id, Some(&snapshot))
        });
    }

    /// Sessions holding queued prompts.
    pub(crate) fn queued_sessions(&self) -> Vec<String> {
        lock(&self.states)
            .iter()
            .filter(|(_, s)| !s.queued_prompts.is_empty())
            .map(|(id, _)| id.clone())
            .collect()
    }

    /// Take `id`'s oldest queued prompt; a standing limit counts as
    /// continued by it (the agent's own words stand in for "continue").
    pub(crate) fn take_queued_prompt(&self, id: &str) -> Option<String> {
        let snapshot = {
            let mut states = lock(&self.states);
            let state = states.get_mut(id)?;
            if state.queued_prompts.is_empty() {
                return None;
            }
            let prompt = state.queued_prompts.remove(0);
            if let Some(l) = state.limit.as_mut() {
                l.continued = true;
            }
            (prompt, state.clone())
        };
        self.with_store("take a queued prompt", |s| {
            s.save_session(id, Some(&snapshot.1))
        });
        self.activity.bump_changes();
        Some(snapshot.0)
    }

    /// Whether a wake or prompt may go to `id`'s account now (rule 13).
    pub fn may_use_account(&self, id: &str) -> bool {
        let states = lock(&self.states);
        let Some(l) = states.get(id).and_then(|s| s.limit.as_ref()) else {
            return true;
        };
        if l.continued {
            return true;
        }
        usage_limits::account_may_be_used(l.resets_at, l.resets_at.is_none(), self.now())
    }

    /// Session `id`'s usage from `since_ms` to `until_ms` (`None`: now),
    /// priced: one stretch of it under one account.
    pub fn session_usage_between(
        &self,
        id: &str,
        since_ms: i64,
        until_ms: Option<i64>,
    ) -> Result<Option<hangar_core::usage::SessionUsage>, String> {
        let guard = lock(&self.store);
        let Some(store) = guard.as_ref() else {
            return Err("the usage ledger is not open (see the daemon log)".to_owned());
        };
        let sums = store
            .sums_between(since_ms, until_ms, Some(id))
            .map_err(|e| e.to_string())?;
        drop(guard);
        let (sessions, _) = hangar_core::usage::summarize(&sums, &self.prices, &|_| String::new());
        Ok(sessions.into_iter().next())
    }

    /// The ledger's store and prices, for `hangar usage`.
    pub fn report(&self, since_ms: i64, session: Option<&str>) -> Result<UsageFacts, String> {
        let guard = lock(&self.store);
        let Some(store) = guard.as_ref() else {
            return Err("the usage ledger is not open (see the daemon log)".to_owned());
        };
        let sums = store
            .sums_since(since_ms, session)
            .map_err(|e| e.to_string())?;
        let windows = store.windows().map_err(|e| e.to_string())?;
        let limited: Vec<(String, Option<String>, Option<i64>)> = lock(&self.states)
            .iter()
            .filter_map(|(id, s)| {
                let l = s.limit.as_ref().filter(|l| !l.continued)?;
                Some((id.clone(), l.account.clone(), l.resets_at))
            })
            .collect();
        Ok(UsageFacts {
            sums,
            windows,
            limited,
            prices: self.prices.clone(),
        })
    }
}

/// What `hangar usage` is built from.
pub struct UsageFacts {
    pub sums: Vec<hangar_core::usage::ModelSum>,
    pub windows: Vec<hangar_store::AccountWindow>,
    /// Sessions limited now: (session, account, resets_at).
    pub limited: Vec<(String, Option<String>, Option<i64>)>,
    pub prices: PriceTable,
}

/// `16:00` in local time (the C library's zone rules).
pub fn clock_text(ms: i64) -> String {
    usage_limits::clock_text(ms, local_offset_ms(ms))
}

/// How far local time is ahead of UTC at `ms`, in ms.
pub fn local_offset_ms(ms: i64) -> i64 {
    hangar_providers::transcript::discovery::local_offset_ms(u64::try_from(ms).unwrap_or(0))
}

/// The UTC offset (seconds) at `now_ms` of a zone a limit text names: the
/// local zone when none is named, else the IANA zone of that name from the
/// system's zone database (jiff; `Europe/Berlin`, `UTC`); `None` for a
/// zone it does not know (the reset is then unknown, never guessed).
pub(crate) fn zone_offset(zone: Option<&str>, now_ms: i64) -> Option<i32> {
    let Some(zone) = zone else {
        return i32::try_from(local_offset_ms(now_ms) / 1000).ok();
    };
    // UTC needs no zone database (a machine without tzdata still knows it).
    if matches!(zone, "UTC" | "GMT" | "Etc/UTC" | "Etc/GMT" | "Z") {
        return Some(0);
    }
    let tz = jiff::tz::TimeZone::get(zone).ok()?;
    let at = jiff::Timestamp::from_millisecond(now_ms).ok()?;
    Some(tz.to_offset(at).seconds())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn named_zones_come_from_the_zone_database_and_unknown_ones_are_unknown() {
        // 2026-07-01T12:00:00Z: Berlin is on summer time (+2), New York -4.
        let july = 1_782_907_200_000;
        assert_eq!(zone_offset(Some("Europe/Berlin"), july), Some(7200));
        assert_eq!(zone_offset(Some("America/New_York"), july), Some(-4 * 3600));
        // 2026-01-15: winter time.
        let january = 1_768_478_400_000;
        assert_eq!(zone_offset(Some("Europe/Berlin"), january), Some(3600));
        assert_eq!(zone_offset(Some("UTC"), july), Some(0));
        assert_eq!(zone_offset(Some("Mars/Olympus"), july), None);
        assert_eq!(zone_offset(Some("../../etc/passwd"), july), None);
    }
}
