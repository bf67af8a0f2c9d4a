//! The usage ledger's rows in the store (issue 29): one per request, each
//! account's windows, and each session's limit.
//!
//! It opens its own connection to the store's file (WAL lets it write
//! beside the workspace's connection), so the ledger never waits on the
//! daemon's state lock. The tables come from the store's migration 2; this
//! module never creates or alters a table. A request seen by two sources
//! updates one row: each count is the largest seen and the more trusted
//! source (`proxy` sorts before `transcript`) keeps its status, never a sum.

use std::path::{Path, PathBuf};

use hangar_core::usage::{
    ModelSum, OWN_KEY_PREFIX, SAME_REQUEST_WINDOW_MS, Tokens, UsageRecord, UsageSource, is_own_key,
    key_for_own_record, merge_agent_cost, same_request,
};
use hangar_core::usage_limits::{UsageSessionState, Window};
use rusqlite::{Connection, OpenFlags, params};

use crate::error::StoreError;
use crate::store::BUSY_TIMEOUT;

/// An account's window as last reported.
#[derive(Clone, Debug, PartialEq)]
pub struct AccountWindow {
    pub provider: String,
    pub account: String,
    pub window: Window,
    pub updated_ms: i64,
}

/// Every session's kept usage state, and the sessions whose row did not
/// decode.
pub type KeptSessions = (Vec<(String, UsageSessionState)>, Vec<String>);

pub struct UsageLedger {
    conn: Connection,
    path: PathBuf,
}

fn sql<'a>(path: &'a Path, action: &'static str) -> impl Fn(rusqlite::Error) -> StoreError + 'a {
    move |source| StoreError::Sqlite {
        action,
        path: path.to_path_buf(),
        source,
    }
}

fn to_i64(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

fn to_u64(v: i64) -> u64 {
    u64::try_from(v).unwrap_or(0)
}

/// Insert `r`, or fold it into its row: each count the largest seen, the
/// earliest time, the more trusted source's status, model and account.
fn upsert(conn: &Connection, r: &UsageRecord) -> rusqlite::Result<usize> {
    conn.execute(
        "INSERT INTO usage_requests (session, request_key, provider, account, model, at_ms,
             input, output, cache_write, cache_read, status, source, agent_cost_usd)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)
         ON CONFLICT (session, request_key) DO UPDATE SET
             agent_cost_usd = CASE
                 WHEN agent_cost_usd IS NULL THEN excluded.agent_cost_usd
                 WHEN excluded.agent_cost_usd IS NULL THEN agent_cost_usd
                 ELSE max(agent_cost_usd, excluded.agent_cost_usd) END,
             input = max(input, excluded.input),
             output = max(output, excluded.output),
             cache_write = max(cache_write, excluded.cache_write),
             cache_read = max(cache_read, excluded.cache_read),
             at_ms = min(at_ms, excluded.at_ms),
             status = CASE WHEN excluded.source < source
                 THEN coalesce(excluded.status, status) ELSE coalesce(status, excluded.status) END,
             model = CASE WHEN excluded.source < source
                 THEN coalesce(excluded.model, model) ELSE coalesce(model, excluded.model) END,
             account = CASE WHEN excluded.source < source
                 THEN coalesce(excluded.account, account) ELSE coalesce(account, excluded.account) END,
             source = min(source, excluded.source)",
        params![
            r.session,
            r.request_key,
            r.provider,
            r.account,
            r.model,
            r.at_ms,
            to_i64(r.tokens.input),
            to_i64(r.tokens.output),
            to_i64(r.tokens.cache_write),
            to_i64(r.tokens.cache_read),
            r.status.map(i64::from),
            r.source.as_str(),
            r.agent_cost_usd.filter(|c| c.is_finite()),
        ],
    )
}

/// Requests matching `filter` (over `session, at_ms`...), as records.
fn rows(
    conn: &Connection,
    filter: &str,
    params: impl rusqlite::Params,
) -> rusqlite::Result<Vec<UsageRecord>> {
    let mut st = conn.prepare(&format!(
        "SELECT session, request_key, provider, account, model, at_ms, input, output,
                cache_write, cache_read, status, source, agent_cost_usd
         FROM usage_requests {filter}"
    ))?;
    let rows = st.query_map(params, row_record)?;
    rows.collect()
}

fn row_record(row: &rusqlite::Row<'_>) -> rusqlite::Result<UsageRecord> {
    Ok(UsageRecord {
        session: row.get(0)?,
        request_key: row.get(1)?,
        provider: row.get(2)?,
        account: row.get(3)?,
        model: row.get(4)?,
        at_ms: row.get(5)?,
        tokens: Tokens {
            input: to_u64(row.get(6)?),
            output: to_u64(row.get(7)?),
            cache_write: to_u64(row.get(8)?),
            cache_read: to_u64(row.get(9)?),
        },
        status: row
            .get::<_, Option<i64>>(10)?
            .and_then(|s| u16::try_from(s).ok()),
        source: UsageSource::parse(&row.get::<_, String>(11)?).unwrap_or(UsageSource::Transcript),
        agent_cost_usd: row.get(12)?,
    })
}

/// Just past every own key (`agent:` .. `agent;`).
const OWN_KEY_END: &str = "agent;";

impl UsageLedger {
    /// Open the ledger of the store at `path`. The store must have been
    /// opened (and so migrated) by `Store::open` first.
    pub fn open(path: &Path) -> Result<UsageLedger, StoreError> {
        let conn = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(sql(path, "open the usage ledger in"))?;
        conn.busy_timeout(BUSY_TIMEOUT)
            .map_err(sql(path, "configure"))?;
        conn.prepare("SELECT session FROM usage_requests LIMIT 0")
            .map_err(sql(path, "find the usage ledger in"))?;
        Ok(UsageLedger {
            conn,
            path: path.to_path_buf(),
        })
    }

    /// Add a request, or fold a new sighting into its row. A record under a
    /// key of the agent's own (no provider id in its source) takes the key
    /// of the same request already seen under the provider's id; a record
    /// under the provider's id takes over the row of the same request first
    /// seen under the agent's own key (hangar-core's `same_request`), so a
    /// request is one row whichever source saw it first.
    pub fn record(&mut self, r: &UsageRecord) -> Result<(), StoreError> {
        let lo = r.at_ms.saturating_sub(SAME_REQUEST_WINDOW_MS);
        let hi = r.at_ms.saturating_add(SAME_REQUEST_WINDOW_MS);
        let tx = self
            .conn
            .transaction()
            .map_err(sql(&self.path, "record usage in"))?;
        let mut record = r.clone();
        if is_own_key(&r.request_key) {
            let nearby = rows(
                &tx,
                "WHERE session = ?1 AND at_ms BETWEEN ?2 AND ?3",
                params![r.session, lo, hi],
            )
            .map_err(sql(&self.path, "record usage in"))?;
            record.request_key = key_for_own_record(r, &nearby);
        } else {
            // Own keys sort together (`agent:` .. `agent;`): the primary
            // key's index finds them without a scan of the session.
            let own = rows(
                &tx,
                "WHERE session = ?1 AND request_key >= ?4 AND request_key < ?5
                   AND at_ms BETWEEN ?2 AND ?3",
                params![r.session, lo, hi, OWN_KEY_PREFIX, OWN_KEY_END],
            )
            .map_err(sql(&self.path, "record usage in"))?;
            if let Some(first) = own
                .iter()
                .filter(|o| same_request(o, r))
                .min_by_key(|o| (o.at_ms - r.at_ms).abs())
            {
                // The earlier sighting's time and the rest fold in below.
                record.at_ms = record.at_ms.min(first.at_ms);
                record.model = record.model.or_else(|| first.model.clone());
                record.agent_cost_usd =
                    merge_agent_cost(record.agent_cost_usd, first.agent_cost_usd);
                tx.execute(
                    "DELETE FROM usage_requests WHERE session = ?1 AND request_key = ?2",
                    params![first.session, first.request_key],
                )
                .map_err(sql(&self.path, "record usage in"))?;
            }
        }
        upsert(&tx, &record).map_err(sql(&self.path, "record usage in"))?;
        tx.commit().map_err(sql(&self.path, "record usage in"))?;
        Ok(())
    }

    /// Every request at or after `since_ms` (of `session` when given).
    pub fn records_since(
        &self,
        since_ms: i64,
        session: Option<&str>,
    ) -> Result<Vec<UsageRecord>, StoreError> {
        let mut st = self
            .conn
            .prepare(
                "SELECT session, request_key, provider, account, model, at_ms, input, output,
                        cache_write, cache_read, status, source, agent_cost_usd
                 FROM usage_requests WHERE at_ms >= ?1 AND (?2 IS NULL OR session = ?2)
                 ORDER BY at_ms, request_key",
            )
            .map_err(sql(&self.path, "read usage from"))?;
        let rows = st
            .query_map(params![since_ms, session], row_record)
            .and_then(|rows| rows.collect::<rusqlite::Result<Vec<_>>>())
            .map_err(sql(&self.path, "read usage from"))?;
        Ok(rows)
    }

    /// The models requests used since `since_ms` (of one provider, or all)
    /// that carried tokens: what a budget set now would cover.
    pub fn models_since(
        &self,
        since_ms: i64,
        provider: Option<&str>,
        session: Option<&str>,
    ) -> Result<Vec<String>, StoreError> {
        let mut st = self
            .conn
            .prepare(
                "SELECT DISTINCT model FROM usage_requests
                 WHERE at_ms >= ?1 AND model IS NOT NULL
                   AND (?2 IS NULL OR provider = ?2) AND (?3 IS NULL OR session = ?3)
                   AND input + output + cache_write + cache_read > 0
                 ORDER BY model",
            )
            .map_err(sql(&self.path, "read models from"))?;
        let rows = st
            .query_map(params![since_ms, provider, session], |row| row.get(0))
            .and_then(|rows| rows.collect::<rusqlite::Result<Vec<String>>>())
            .map_err(sql(&self.path, "read models from"))?;
        Ok(rows)
    }

    /// Usage since `since_ms` summed per session and model, in SQL (the
    /// ledger may hold hundreds of thousands of requests).
    pub fn sums_since(
        &self,
        since_ms: i64,
        session: Option<&str>,
    ) -> Result<Vec<ModelSum>, StoreError> {
        self.sums_between(since_ms, None, session)
    }

    /// [`Self::sums_since`] of the requests before `until_ms` too (`None`:
    /// up to now): a session's usage under one account, between two moves.
    pub fn sums_between(
        &self,
        since_ms: i64,
        until_ms: Option<i64>,
        session: Option<&str>,
    ) -> Result<Vec<ModelSum>, StoreError> {
        let mut st = self
            .conn
            .prepare(
                "SELECT session, provider, model, count(*), sum(input), sum(output),
                        sum(cache_write), sum(cache_read), sum(agent_cost_usd),
                        sum(agent_cost_usd IS NULL
                            AND input + output + cache_write + cache_read > 0)
                 FROM usage_requests WHERE at_ms >= ?1 AND (?2 IS NULL OR session = ?2)
                     AND (?3 IS NULL OR at_ms < ?3)
                 GROUP BY session, provider, model ORDER BY session, provider, model",
            )
            .map_err(sql(&self.path, "sum usage in"))?;
        let rows = st
            .query_map(params![since_ms, session, until_ms], |row| {
                Ok(ModelSum {
                    session: row.get(0)?,
                    provider: row.get(1)?,
                    model: row.get(2)?,
                    requests: to_u64(row.get(3)?),
                    tokens: Tokens {
                        input: to_u64(row.get(4)?),
                        output: to_u64(row.get(5)?),
                        cache_write: to_u64(row.get(6)?),
                        cache_read: to_u64(row.get(7)?),
                    },
                    agent_cost_usd: row.get(8)?,
                    agent_unpriced: to_u64(row.get(9)?),
                })
            })
            .and_then(|rows| rows.collect::<rusqlite::Result<Vec<_>>>())
            .map_err(sql(&self.path, "sum usage in"))?;
        Ok(rows)
    }

    /// Replace what is known of an account's windows.
    pub fn save_windows(
        &mut self,
        provider: &str,
        account: &str,
        windows: &[Window],
        now_ms: i64,
    ) -> Result<(), StoreError> {
        let tx = self
            .conn
            .transaction()
            .map_err(sql(&self.path, "save usage windows in"))?;
        for w in windows {
            tx.execute(
                "INSERT INTO usage_windows (provider, account, kind, used_percent, resets_at, status, updated_ms)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
                 ON CONFLICT (provider, account, kind) DO UPDATE SET
                     used_percent = excluded.used_percent, resets_at = excluded.resets_at,
                     status = excluded.status, updated_ms = excluded.updated_ms",
                params![provider, account, w.kind, w.used_percent, w.resets_at, w.status, now_ms],
            )
            .map_err(sql(&self.path, "save usage windows in"))?;
        }
        tx.commit()
            .map_err(sql(&self.path, "save usage windows in"))?;
        Ok(())
    }

    pub fn windows(&self) -> Result<Vec<AccountWindow>, StoreError> {
        let mut st = self
            .conn
            .prepare(
                "SELECT provider, account, kind, used_percent, resets_at, status, updated_ms
                 FROM usage_windows ORDER BY provider, account, kind",
            )
            .map_err(sql(&self.path, "read usage windows from"))?;
        let rows = st
            .query_map([], |row| {
                Ok(AccountWindow {
                    provider: row.get(0)?,
                    account: row.get(1)?,
                    window: Window {
                        kind: row.get(2)?,
                        used_percent: row.get(3)?,
                        resets_at: row.get(4)?,
                        status: row.get(5)?,
                    },
                    updated_ms: row.get(6)?,
                })
            })
            .and_then(|rows| rows.collect::<rusqlite::Result<Vec<_>>>())
            .map_err(sql(&self.path, "read usage windows from"))?;
        Ok(rows)
    }

    /// Keep a session's limit and switch (`None` forgets them).
    pub fn save_session(
        &mut self,
        session: &str,
        state: Option<&UsageSessionState>,
    ) -> Result<(), StoreError> {
        match state {
            None => self
                .conn
                .execute(
                    "DELETE FROM usage_sessions WHERE session = ?1",
                    params![session],
                )
                .map(|_| ()),
            Some(s) => {
                let data = serde_json::to_string(s).map_err(|source| StoreError::Encode {
                    what: format!("the usage state of session {session}"),
                    path: self.path.clone(),
                    source,
                })?;
                self.conn
                    .execute(
                        "INSERT INTO usage_sessions (session, data) VALUES (?1, ?2)
                         ON CONFLICT (session) DO UPDATE SET data = excluded.data",
                        params![session, data],
                    )
                    .map(|_| ())
            }
        }
        .map_err(sql(&self.path, "save a session's limit in"))
    }

    /// Every session's kept state. A row that does not decode is skipped
    /// with its session named in the second list (never fatal: a damaged
    /// limit must not stop the daemon).
    pub fn sessions(&self) -> Result<KeptSessions, StoreError> {
        let mut st = self
            .conn
            .prepare("SELECT session, data FROM usage_sessions ORDER BY session")
            .map_err(sql(&self.path, "read limits from"))?;
        let rows = st
            .query_map([], |row| {
                Ok((row.get::<_, String>(0)?, row.get::<_, String>(1)?))
            })
            .and_then(|rows| rows.collect::<rusqlite::Result<Vec<_>>>())
            .map_err(sql(&self.path, "read limits from"))?;
        let mut ok = Vec::new();
        let mut bad = Vec::new();
        for (session, data) in rows {
            match serde_json::from_str(&data) {
                Ok(s) => ok.push((session, s)),
                Err(_) => bad.push(session),
            }
        }
        Ok((ok, bad))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hangar_core::usage_limits::SessionLimit;

    fn ledger() -> (tempfile::TempDir, UsageLedger) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.db");
        crate::Store::open(&path).unwrap();
        let l = UsageLedger::open(&path).unwrap();
        (dir, l)
    }

    fn rec(key: &str, source: UsageSource, output: u64) -> UsageRecord {
        UsageRecord {
            request_key: key.into(),
            session: "s1".into(),
            provider: "claude".into(),
            account: None,
            model: Some("m".into()),
            at_ms: 10,
            tokens: Tokens {
                input: 5,
                output,
                ..Default::default()
            },
            status: (source == UsageSource::Proxy).then_some(200),
            source,
            agent_cost_usd: None,
        }
    }

    #[test]
    fn a_request_seen_under_the_agents_own_key_and_the_providers_id_is_one_row_in_either_order() {
        // A Codex rollout's `token_count` or an OpenCode message names no
        // provider id; the proxy's record does (`resp_...`, `chatcmpl-...`).
        let own = |key: &str, at: i64| UsageRecord {
            at_ms: at,
            ..rec(key, UsageSource::Transcript, 7)
        };
        let proxy = |key: &str, at: i64| UsageRecord {
            at_ms: at,
            ..rec(key, UsageSource::Proxy, 7)
        };
        let (_d, mut l) = ledger();
        // The proxy first, the agent's record a moment later.
        l.record(&proxy("resp_1", 1_000)).unwrap();
        l.record(&own("agent:codex:t:12", 2_000)).unwrap();
        // Read again (a restart reads the newest part once more).
        l.record(&own("agent:codex:t:12", 2_000)).unwrap();
        // The agent's record first, the proxy later.
        l.record(&own("agent:opencode:msg_9", 50_000_000)).unwrap();
        l.record(&proxy("chatcmpl-9", 49_999_000)).unwrap();
        // A request only the agent saw stays under its own key.
        l.record(&own("agent:codex:t:99", 90_000_000)).unwrap();
        let rows = l.records_since(0, None).unwrap();
        let keys: Vec<&str> = rows.iter().map(|r| r.request_key.as_str()).collect();
        assert_eq!(keys, ["resp_1", "chatcmpl-9", "agent:codex:t:99"]);
        assert_eq!(rows[0].source, UsageSource::Proxy);
        assert_eq!(rows[1].at_ms, 49_999_000);
        let sums = l.sums_since(0, None).unwrap();
        assert_eq!((sums[0].requests, sums[0].tokens.output), (3, 21));
        // Between two times: the requests of one stretch (an account's).
        let early = l.sums_between(0, Some(49_999_000), None).unwrap();
        assert_eq!(early[0].requests, 1, "only resp_1 came before");
        let late = l.sums_between(49_999_000, None, None).unwrap();
        assert_eq!(late[0].requests, 2);
    }

    #[test]
    fn one_request_seen_by_two_sources_is_one_row_with_the_largest_counts() {
        let (_d, mut l) = ledger();
        l.record(&rec("msg_1", UsageSource::Transcript, 3)).unwrap();
        l.record(&rec("msg_1", UsageSource::Transcript, 40))
            .unwrap();
        l.record(&rec("msg_1", UsageSource::Proxy, 39)).unwrap();
        l.record(&rec("msg_2", UsageSource::Proxy, 1)).unwrap();
        let rows = l.records_since(0, None).unwrap();
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].tokens.output, 40);
        assert_eq!(rows[0].source, UsageSource::Proxy);
        assert_eq!(rows[0].status, Some(200));
        let sums = l.sums_since(0, Some("s1")).unwrap();
        assert_eq!(sums.len(), 1);
        assert_eq!((sums[0].requests, sums[0].tokens.output), (2, 41));
        assert!(l.sums_since(11, None).unwrap().is_empty());
    }

    #[test]
    fn the_agents_own_cost_is_kept_per_request_and_summed_where_it_priced_every_request() {
        let (_d, mut l) = ledger();
        let own = |key: &str, at: i64, cost: Option<f64>| UsageRecord {
            at_ms: at,
            model: Some("fake-model".into()),
            agent_cost_usd: cost,
            ..rec(key, UsageSource::Transcript, 7)
        };
        // An OpenCode message read mid-way, then finished: the larger cost.
        l.record(&own("agent:opencode:msg_1", 1_000, Some(0.01)))
            .unwrap();
        l.record(&own("agent:opencode:msg_1", 1_000, Some(0.03)))
            .unwrap();
        // The proxy's sighting of the same request takes the row over and
        // keeps the agent's figure.
        l.record(&UsageRecord {
            at_ms: 900,
            model: Some("fake-model".into()),
            ..rec("chatcmpl-1", UsageSource::Proxy, 7)
        })
        .unwrap();
        let rows = l.records_since(0, None).unwrap();
        assert_eq!(rows.len(), 1, "{rows:?}");
        assert_eq!(rows[0].request_key, "chatcmpl-1");
        assert_eq!(rows[0].agent_cost_usd, Some(0.03));
        let sums = l.sums_since(0, None).unwrap();
        assert_eq!(
            (sums[0].agent_cost_usd, sums[0].agent_unpriced),
            (Some(0.03), 0)
        );
        // A request of the same model the agent did not price.
        l.record(&own("agent:opencode:msg_2", 90_000_000, None))
            .unwrap();
        let sums = l.sums_since(0, None).unwrap();
        assert_eq!(
            (sums[0].agent_cost_usd, sums[0].agent_unpriced),
            (Some(0.03), 1)
        );
    }

    #[test]
    fn limits_and_windows_survive_reopening() {
        let (d, mut l) = ledger();
        let state = UsageSessionState {
            limit: Some(SessionLimit {
                kind: "five_hour".into(),
                resets_at: Some(123),
                source: "proxy".into(),
                since_ms: 1,
                continue_at: Some(456),
                stopped_mid_task: true,
                continued: false,
                account: Some("sha256:00".into()),
            }),
            auto_continue: Some(false),
            goal: hangar_core::goal::Goal::new("ship it", Some(3), 7).ok(),
            max_cost_usd: Some(2.5),
            queued_prompts: vec!["after the reset".into()],
        };
        l.save_session("s1", Some(&state)).unwrap();
        l.save_windows(
            "claude",
            "sha256:00",
            &[Window {
                kind: "five_hour".into(),
                used_percent: Some(42.0),
                resets_at: Some(9),
                status: Some("allowed".into()),
            }],
            5,
        )
        .unwrap();
        drop(l);
        let l = UsageLedger::open(&d.path().join("state.db")).unwrap();
        assert_eq!(l.sessions().unwrap().0, vec![("s1".to_owned(), state)]);
        assert_eq!(l.windows().unwrap()[0].window.used_percent, Some(42.0));
    }
}
