//! `hangar usage` and `hangar limit` (issue 29): the ledger summed per
//! session and account, and a session's auto-continue switch.

use std::collections::BTreeMap;
use std::sync::Arc;

use hangar_core::usage::summarize;
use hangar_protocol::message::{GoalSet, LimitSet, UsageQuery, codes};
use hangar_protocol::reply::{AccountUsage, GoalState, LimitState, UsageReport, UsageWindow};
use serde_json::Value;

use crate::Daemon;
use crate::errors::ApiError;
use crate::journal::Caller;

/// What the figures are, said in every answer: list prices, so for a
/// subscription login an estimate, not what is billed.
const COST_NOTE: &str = "cost_usd is at list prices (hangar's price table and [usage.prices]); \
     for a subscription login it is an estimate, not what is billed. null: a model with no price. \
     cost_from says whose figures: \"prices\" (the table) or a CLI's own (\"opencode\": OpenCode's \
     cost, for a model only it prices); agent_cost_usd is what the CLI itself says";

pub fn usage(daemon: &Arc<Daemon>, req: UsageQuery) -> Result<UsageReport, ApiError> {
    let session = match &req.session {
        Some(s) => Some(daemon.sessions.resolve(s)?.to_string()),
        None => None,
    };
    let facts = daemon
        .usage
        .report(req.since_ms, session.as_deref())
        .map_err(|e| ApiError::new(codes::FAILED, format!("cannot read the usage ledger: {e}")))?;
    let title_of = |id: &str| {
        daemon
            .sessions
            .meta(&hangar_core::SessionId::from(id))
            .map(|m| m.title)
            .unwrap_or_default()
    };
    let (sessions, total) = summarize(&facts.sums, &facts.prices, &title_of);
    let mut accounts: BTreeMap<(String, String), (Vec<UsageWindow>, Option<i64>)> = BTreeMap::new();
    for w in &facts.windows {
        accounts
            .entry((w.provider.clone(), w.account.clone()))
            .or_default()
            .0
            .push(UsageWindow {
                kind: w.window.kind.clone(),
                used_percent: w.window.used_percent,
                resets_at: w.window.resets_at,
            });
    }
    for (id, account, resets_at) in &facts.limited {
        let provider = daemon
            .sessions
            .provider_of(&hangar_core::SessionId::from(id.as_str()))
            .map(|p| p.name().to_owned())
            .unwrap_or_else(|| "unknown".to_owned());
        let account = account.clone().unwrap_or_else(|| "unknown".to_owned());
        let entry = accounts.entry((provider, account)).or_default();
        entry.1 = match (entry.1, resets_at) {
            (Some(a), Some(b)) => Some(a.max(*b)),
            (a, b) => a.or(*b),
        };
    }
    let accounts = accounts
        .into_iter()
        .map(
            |((provider, account), (windows, limited_until))| AccountUsage {
                provider,
                account,
                windows,
                limited_until,
            },
        )
        .collect();
    let named_accounts = hangar_core::accounts::usage_per_account(&account_stretches(
        daemon,
        &sessions,
        req.since_ms,
    )?);
    Ok(UsageReport {
        since: req.since_ms,
        sessions,
        accounts,
        named_accounts,
        total,
        note: COST_NOTE.to_owned(),
    })
}

/// Each session's usage with the account it ran under: whole for one never
/// moved, else split at its moves (`hangar_core::accounts::account_stretches`),
/// so what a session spent before a failover stays its old account's.
fn account_stretches(
    daemon: &Arc<Daemon>,
    sessions: &[hangar_core::usage::SessionUsage],
    since_ms: i64,
) -> Result<Vec<(hangar_core::usage::SessionUsage, Option<String>)>, ApiError> {
    let mut out = Vec::new();
    for s in sessions {
        let Some(meta) = daemon
            .sessions
            .meta(&hangar_core::SessionId::from(s.id.as_str()))
        else {
            continue;
        };
        let stretches = hangar_core::accounts::account_stretches(&meta);
        if let [only] = stretches.as_slice() {
            out.push((s.clone(), only.account.clone()));
            continue;
        }
        for stretch in stretches {
            let from = stretch.from_ms.map_or(since_ms, |f| since_ms.max(f as i64));
            let until = stretch.until_ms.map(|u| u as i64);
            if until.is_some_and(|u| u <= from) {
                continue;
            }
            let part = daemon
                .usage
                .session_usage_between(&s.id, from, until)
                .map_err(|e| {
                    ApiError::new(codes::FAILED, format!("cannot read the usage ledger: {e}"))
                })?;
            if let Some(part) = part {
                out.push((part, stretch.account));
            }
        }
    }
    Ok(out)
}

pub async fn limit(daemon: &Arc<Daemon>, req: LimitSet) -> Result<LimitState, ApiError> {
    let id = daemon.sessions.resolve(&req.session)?;
    if let Some(to) = req.failover.as_deref().map(str::trim) {
        daemon.governor.move_to_account(&id, to).await?;
    }
    if let Some(max) = req.max_cost_usd {
        daemon
            .budgets
            .set_session_budget(&id, Some(max))
            .map_err(ApiError::invalid)?;
    }
    if let Some(on) = req.auto_continue {
        daemon.usage.set_auto_continue(&id, on);
    }
    Ok(LimitState {
        id: id.to_string(),
        auto_continue: daemon.usage.auto_continue_of(id.as_str()),
        max_cost_usd: daemon.usage.session_budget(id.as_str()),
        limit: daemon.usage.limit_view(id.as_str()),
        account: daemon.sessions.meta(&id).and_then(|m| m.account),
    })
}

/// `hangar goal ID TEXT [--max-turns N]`, `hangar goal ID --stop`, and
/// `hangar goal ID` (read).
pub async fn goal(daemon: &Arc<Daemon>, req: GoalSet) -> Result<GoalState, ApiError> {
    let id = daemon.sessions.resolve(&req.session)?;
    let goal = match (&req.text, req.stop) {
        (Some(_), true) => {
            return Err(ApiError::invalid("give a goal's text or --stop, not both"));
        }
        (Some(text), false) => Some(
            daemon
                .goals
                .start(&id, text, req.max_turns, Caller::Cli)
                .await?,
        ),
        (None, true) => Some(daemon.goals.stop(&id)?),
        (None, false) => daemon.goals.view_of(id.as_str()),
    };
    Ok(GoalState {
        id: id.to_string(),
        goal,
    })
}

/// The MCP tool `usage_read`: `hangar usage --json` for the last
/// `since_hours` hours (default 24, at most 31 days). Read from hangar's own
/// ledger, so nothing is cached and nothing polls a provider; a ledger that
/// cannot be read is an error, never zero usage.
pub fn usage_read(daemon: &Arc<Daemon>, args: Value) -> Result<UsageReport, ApiError> {
    #[derive(serde::Deserialize, Default)]
    #[serde(deny_unknown_fields)]
    struct Args {
        #[serde(default)]
        since_hours: Option<u64>,
        #[serde(default)]
        session: Option<String>,
    }
    let args: Args = if args.is_null() {
        Args::default()
    } else {
        serde_json::from_value(args)
            .map_err(|e| ApiError::new(codes::INVALID, format!("usage_read: {e}")))?
    };
    let hours = args.since_hours.unwrap_or(24).clamp(1, 31 * 24);
    let now = i64::try_from(crate::now_ms()).unwrap_or(i64::MAX);
    let since_ms = now.saturating_sub(i64::try_from(hours * 3_600_000).unwrap_or(i64::MAX));
    usage(
        daemon,
        UsageQuery {
            since_ms,
            session: args.session,
        },
    )
}
