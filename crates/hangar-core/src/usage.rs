//! The usage ledger's rules: what one request consumed, how records of the
//! same request from several sources become one, what it cost, and how an
//! agent's own transcript lines are read for usage.
//!
//! Pure: the daemon reads transcripts and the proxy's meters and hands the
//! facts here. It must never add two records of one request (Claude writes
//! several transcript lines sharing one `message.id`, each with the running
//! `output_tokens`), and never turn an unknown price into 0.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Tokens of one request, by kind.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tokens {
    pub input: u64,
    pub output: u64,
    pub cache_write: u64,
    pub cache_read: u64,
}

impl Tokens {
    pub fn add(&mut self, o: &Tokens) {
        self.input = self.input.saturating_add(o.input);
        self.output = self.output.saturating_add(o.output);
        self.cache_write = self.cache_write.saturating_add(o.cache_write);
        self.cache_read = self.cache_read.saturating_add(o.cache_read);
    }

    /// Two sightings of one request: each count is the largest seen (a
    /// stream's or a transcript's later line carries the running total).
    pub fn merge_max(&mut self, o: &Tokens) {
        self.input = self.input.max(o.input);
        self.output = self.output.max(o.output);
        self.cache_write = self.cache_write.max(o.cache_write);
        self.cache_read = self.cache_read.max(o.cache_read);
    }
}

/// Who saw a request, most trusted first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum UsageSource {
    /// The recording proxy (response body or SSE usage).
    Proxy,
    /// The agent's own transcript (Claude `message.usage`, Codex
    /// `token_count`).
    Transcript,
}

impl UsageSource {
    pub fn as_str(self) -> &'static str {
        match self {
            UsageSource::Proxy => "proxy",
            UsageSource::Transcript => "transcript",
        }
    }

    pub fn parse(s: &str) -> Option<UsageSource> {
        match s {
            "proxy" => Some(UsageSource::Proxy),
            "transcript" => Some(UsageSource::Transcript),
            _ => None,
        }
    }
}

/// One request in the ledger.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct UsageRecord {
    /// What makes two sightings the same request: the provider's message or
    /// response id (`msg_...`, `resp_...`) when known, else a key of the
    /// source's own (`proxy:<exchange>`).
    pub request_key: String,
    pub session: String,
    pub provider: String,
    /// A hash of the credential used, never the credential.
    pub account: Option<String>,
    pub model: Option<String>,
    pub at_ms: i64,
    pub tokens: Tokens,
    /// HTTP status when the proxy saw it, else `None`.
    pub status: Option<u16>,
    pub source: UsageSource,
    /// What the agent itself says the request cost, USD (OpenCode's
    /// `message.data.cost`); `None` when it says nothing, or 0 for tokens
    /// (OpenCode prices a model it has no cost for at 0: unknown, not free).
    #[serde(default)]
    pub agent_cost_usd: Option<f64>,
}

/// Two sightings' own figures for one request: the larger (an OpenCode
/// message's cost grows with each step), either when only one has one.
pub fn merge_agent_cost(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    }
}

/// Records of the same request merged into one: counts are the largest
/// seen (never summed), the most trusted source's status, model and
/// account win, and the earliest time is kept. The result is ordered by
/// time, then key.
pub fn merge_records(records: impl IntoIterator<Item = UsageRecord>) -> Vec<UsageRecord> {
    let mut by_key: BTreeMap<(String, String), UsageRecord> = BTreeMap::new();
    for r in records {
        let key = (r.session.clone(), r.request_key.clone());
        match by_key.get_mut(&key) {
            None => {
                by_key.insert(key, r);
            }
            Some(have) => {
                have.tokens.merge_max(&r.tokens);
                have.at_ms = have.at_ms.min(r.at_ms);
                have.agent_cost_usd = merge_agent_cost(have.agent_cost_usd, r.agent_cost_usd);
                if r.source < have.source {
                    have.source = r.source;
                    have.status = r.status.or(have.status);
                    have.model = r.model.or(have.model.take());
                    have.account = r.account.or(have.account.take());
                } else {
                    have.status = have.status.or(r.status);
                    have.model = have.model.take().or(r.model);
                    have.account = have.account.take().or(r.account);
                }
            }
        }
    }
    let mut out: Vec<UsageRecord> = by_key.into_values().collect();
    out.sort_by(|a, b| {
        a.at_ms
            .cmp(&b.at_ms)
            .then_with(|| a.request_key.cmp(&b.request_key))
    });
    out
}

/// Keys an agent's own records give a request when they do not name the
/// provider's id for it (a Codex rollout's `token_count`, an OpenCode
/// message): `agent:<cli>:<its own id>`.
pub const OWN_KEY_PREFIX: &str = "agent:";

/// How far apart in time two sightings of one request without a shared key
/// may be: the proxy times the reply's start, the agent's record its end
/// (a long answer streams for minutes).
pub const SAME_REQUEST_WINDOW_MS: i64 = 10 * 60 * 1000;

/// A key of the agent's own (see [`OWN_KEY_PREFIX`]).
pub fn is_own_key(key: &str) -> bool {
    key.starts_with(OWN_KEY_PREFIX)
}

/// Whether `own` (a record under a key of the agent's own) and `keyed` (a
/// record under the provider's id, from the proxy or a record that names
/// it) are one request: the same session, the same counts of every kind,
/// and close in time. No key is shared, so the counts are the fingerprint;
/// a request with no tokens at all has none and is never matched.
pub fn same_request(own: &UsageRecord, keyed: &UsageRecord) -> bool {
    is_own_key(&own.request_key)
        && !is_own_key(&keyed.request_key)
        && own.session == keyed.session
        && own.tokens == keyed.tokens
        && own.tokens != Tokens::default()
        && (own.at_ms - keyed.at_ms).abs() <= SAME_REQUEST_WINDOW_MS
}

/// The key `own` is recorded under: the provider's id of the closest
/// record of `nearby` that is the same request (so one request is one row
/// whichever source saw it first), else its own.
pub fn key_for_own_record(own: &UsageRecord, nearby: &[UsageRecord]) -> String {
    nearby
        .iter()
        .filter(|k| same_request(own, k))
        .min_by_key(|k| (own.at_ms - k.at_ms).abs())
        .map(|k| k.request_key.clone())
        .unwrap_or_else(|| own.request_key.clone())
}

/// USD per million tokens of one model, with where the figure comes from.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Price {
    /// USD per million input tokens.
    pub input: f64,
    /// USD per million output tokens.
    pub output: f64,
    /// USD per million tokens written to the prompt cache.
    pub cache_write: f64,
    /// USD per million tokens read from the prompt cache.
    pub cache_read: f64,
    /// When the price was read (shown with it; not used in sums).
    #[serde(default)]
    pub date: Option<String>,
    /// Where the price was read (a URL, say; not used in sums).
    #[serde(default)]
    pub source: Option<String>,
}

/// Prices by model name (or name prefix).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PriceTable {
    pub models: BTreeMap<String, Price>,
}

/// The price table shipped with hangar (`crates/hangar-core/data/prices.json`).
pub const SHIPPED_PRICES: &str = include_str!("../data/prices.json");

#[derive(Debug, thiserror::Error)]
#[error("bad price table: {0}")]
pub struct PriceTableError(String);

impl PriceTable {
    /// The shipped table.
    pub fn shipped() -> Result<PriceTable, PriceTableError> {
        PriceTable::from_json(SHIPPED_PRICES)
    }

    pub fn from_json(text: &str) -> Result<PriceTable, PriceTableError> {
        #[derive(Deserialize)]
        struct File {
            models: BTreeMap<String, Price>,
        }
        let f: File = serde_json::from_str(text).map_err(|e| PriceTableError(e.to_string()))?;
        let t = PriceTable { models: f.models };
        t.check()?;
        Ok(t)
    }

    /// Every figure finite and not negative.
    pub fn check(&self) -> Result<(), PriceTableError> {
        for (m, p) in &self.models {
            for v in [p.input, p.output, p.cache_write, p.cache_read] {
                if !v.is_finite() || v < 0.0 {
                    return Err(PriceTableError(format!(
                        "model {m:?}: price {v} is not a non-negative number"
                    )));
                }
            }
        }
        Ok(())
    }

    /// `overrides` (config `[usage.prices]`) replace or add models.
    pub fn with_overrides(mut self, overrides: &BTreeMap<String, Price>) -> PriceTable {
        for (m, p) in overrides {
            self.models.insert(m.clone(), p.clone());
        }
        self
    }

    /// The price of `model`: the entry named exactly, else the longest
    /// entry that is a prefix of it ending at a `-` of the name (so
    /// `claude-sonnet-4-5-20250929` finds `claude-sonnet-4-5` or
    /// `claude-sonnet-4`, but `gpt-5.4` never finds `gpt-5`).
    pub fn price(&self, model: &str) -> Option<&Price> {
        if let Some(p) = self.models.get(model) {
            return Some(p);
        }
        self.models
            .iter()
            .filter(|(k, _)| {
                model.len() > k.len()
                    && model.starts_with(k.as_str())
                    && model.as_bytes()[k.len()] == b'-'
            })
            .max_by_key(|(k, _)| k.len())
            .map(|(_, p)| p)
    }

    /// What `tokens` of `model` cost in USD, `None` when the model has no
    /// price (never 0 for unknown).
    pub fn cost(&self, model: Option<&str>, tokens: &Tokens) -> Option<f64> {
        let p = self.price(model?)?;
        Some(
            (tokens.input as f64 * p.input
                + tokens.output as f64 * p.output
                + tokens.cache_write as f64 * p.cache_write
                + tokens.cache_read as f64 * p.cache_read)
                / 1_000_000.0,
        )
    }
}

/// Requests of one session and model, summed (the ledger's GROUP BY).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ModelSum {
    pub session: String,
    pub provider: String,
    pub model: Option<String>,
    pub requests: u64,
    pub tokens: Tokens,
    /// The agent's own figures (`UsageRecord::agent_cost_usd`) summed, over
    /// the requests that have one; `None` when none has.
    pub agent_cost_usd: Option<f64>,
    /// Requests with tokens but no figure of the agent's own.
    pub agent_unpriced: u64,
}

/// Where a cost comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CostFrom {
    /// hangar's price table (shipped, and `[usage.prices]`).
    Prices,
    /// The agent's own figures (OpenCode's `cost`), for a model the table
    /// has no price for and whose every request the agent priced.
    Agent,
}

/// What one sum cost and where the figure comes from; `None` when neither
/// the table nor the agent priced it (never 0). A sum with no tokens at
/// all (refusals) costs nothing.
pub fn sum_cost(s: &ModelSum, prices: &PriceTable) -> Option<(f64, CostFrom)> {
    if s.tokens == Tokens::default() {
        return Some((0.0, CostFrom::Prices));
    }
    if let Some(c) = prices.cost(s.model.as_deref(), &s.tokens) {
        return Some((c, CostFrom::Prices));
    }
    match s.agent_cost_usd {
        Some(c) if s.agent_unpriced == 0 && c.is_finite() && c > 0.0 => Some((c, CostFrom::Agent)),
        _ => None,
    }
}

/// One session in `hangar usage`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SessionUsage {
    pub id: String,
    pub title: String,
    pub provider: String,
    pub models: Vec<String>,
    pub requests: u64,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cache_read_tokens: u64,
    pub cache_write_tokens: u64,
    /// Null when any of its requests' models has no price (never 0).
    pub cost_usd: Option<f64>,
    pub priced: bool,
    /// Where `cost_usd`'s figures come from: `prices` (hangar's table)
    /// and/or the CLI's own name (`opencode`: its own figures, for a model
    /// the table has no price for).
    #[serde(default)]
    pub cost_from: Vec<String>,
    /// What the CLI itself says its requests cost (OpenCode's `cost`),
    /// summed over the requests it priced; null when it priced none.
    #[serde(default)]
    pub agent_cost_usd: Option<f64>,
}

/// `hangar usage`'s totals.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct UsageTotal {
    pub requests: u64,
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// The priced requests' cost; `unpriced_requests` says what it leaves out.
    pub cost_usd: f64,
    pub unpriced_requests: u64,
}

/// Per-session usage and the totals, from per-model sums. A session's cost
/// is null as soon as one of its models has no price: a partial figure
/// would read as the whole.
pub fn summarize(
    sums: &[ModelSum],
    prices: &PriceTable,
    title_of: &dyn Fn(&str) -> String,
) -> (Vec<SessionUsage>, UsageTotal) {
    let mut by_session: BTreeMap<&str, SessionUsage> = BTreeMap::new();
    let mut total = UsageTotal::default();
    for s in sums {
        let e = by_session
            .entry(s.session.as_str())
            .or_insert_with(|| SessionUsage {
                id: s.session.clone(),
                title: title_of(&s.session),
                provider: s.provider.clone(),
                models: Vec::new(),
                requests: 0,
                input_tokens: 0,
                output_tokens: 0,
                cache_read_tokens: 0,
                cache_write_tokens: 0,
                cost_usd: Some(0.0),
                priced: true,
                cost_from: Vec::new(),
                agent_cost_usd: None,
            });
        if let Some(m) = &s.model
            && !e.models.contains(m)
        {
            e.models.push(m.clone());
        }
        e.requests += s.requests;
        e.input_tokens += s.tokens.input;
        e.output_tokens += s.tokens.output;
        e.cache_read_tokens += s.tokens.cache_read;
        e.cache_write_tokens += s.tokens.cache_write;
        total.requests += s.requests;
        total.input_tokens += s.tokens.input;
        total.output_tokens += s.tokens.output;
        e.agent_cost_usd = merge_sum(e.agent_cost_usd, s.agent_cost_usd);
        match sum_cost(s, prices) {
            Some((c, from)) => {
                let from = match from {
                    CostFrom::Prices => "prices",
                    CostFrom::Agent => s.provider.as_str(),
                };
                if s.tokens != Tokens::default() && !e.cost_from.iter().any(|f| f == from) {
                    e.cost_from.push(from.to_owned());
                }
                total.cost_usd += c;
                if let Some(have) = e.cost_usd.as_mut() {
                    *have += c;
                }
            }
            None => {
                e.cost_usd = None;
                e.priced = false;
                total.unpriced_requests += s.requests;
            }
        }
    }
    (by_session.into_values().collect(), total)
}

fn merge_sum(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a + b),
        (a, b) => a.or(b),
    }
}

/// What one Claude transcript line says about usage: the message id, the
/// model and its tokens. `None` for lines that carry no usage, for
/// synthetic error lines (`"model":"<synthetic>"`, zero usage), for lines
/// with no tokens at all, and for a
/// line that is not whole JSON (a line cut in half by a write in progress).
pub fn claude_transcript_usage(line: &str) -> Option<TranscriptUsage> {
    let v: serde_json::Value = serde_json::from_str(line.trim()).ok()?;
    if v.get("type").and_then(|t| t.as_str()) != Some("assistant") {
        return None;
    }
    let msg = v.get("message")?;
    let model = msg.get("model").and_then(|m| m.as_str());
    if model == Some("<synthetic>") {
        return None;
    }
    let id = msg.get("id").and_then(|i| i.as_str())?;
    let u = msg.get("usage")?;
    let n = |k: &str| u.get(k).and_then(|x| x.as_u64()).unwrap_or(0);
    let tokens = Tokens {
        input: n("input_tokens"),
        output: n("output_tokens"),
        cache_write: n("cache_creation_input_tokens"),
        cache_read: n("cache_read_input_tokens"),
    };
    // A model request always reads its input: a line with no tokens at all
    // is no request (a local message, an interrupted one).
    if tokens == Tokens::default() {
        return None;
    }
    let at_ms = v
        .get("timestamp")
        .and_then(|t| t.as_str())
        .and_then(crate::usage_limits::parse_rfc3339_ms);
    Some(TranscriptUsage {
        message_id: id.to_owned(),
        model: model.map(str::to_owned),
        at_ms,
        tokens,
    })
}

/// Usage read from one transcript line.
#[derive(Clone, Debug, PartialEq)]
pub struct TranscriptUsage {
    pub message_id: String,
    pub model: Option<String>,
    pub at_ms: Option<i64>,
    pub tokens: Tokens,
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn rec(key: &str, src: UsageSource, out: u64, at: i64) -> UsageRecord {
        UsageRecord {
            request_key: key.into(),
            session: "s1".into(),
            provider: "claude".into(),
            account: None,
            model: Some("claude-sonnet-4-5".into()),
            at_ms: at,
            tokens: Tokens {
                input: 10,
                output: out,
                ..Default::default()
            },
            status: (src == UsageSource::Proxy).then_some(200),
            source: src,
            agent_cost_usd: None,
        }
    }

    #[test]
    fn claude_lines_sharing_one_message_id_keep_the_largest_output_never_the_sum() {
        // Claude Code writes one assistant line per content block of a
        // message, each with the message's usage so far.
        let lines = [
            r#"{"type":"assistant","timestamp":"2026-12-02T10:00:00.000Z","message":{"id":"msg_1","model":"claude-sonnet-4-5-20250929","usage":{"input_tokens":3,"cache_creation_input_tokens":100,"cache_read_input_tokens":5000,"output_tokens":1}}}"#,
            r#"{"type":"assistant","timestamp":"2026-12-02T10:00:01.000Z","message":{"id":"msg_1","model":"claude-sonnet-4-5-20250929","usage":{"input_tokens":3,"cache_creation_input_tokens":100,"cache_read_input_tokens":5000,"output_tokens":250}}}"#,
        ];
        let recs: Vec<UsageRecord> = lines
            .iter()
            .filter_map(|l| claude_transcript_usage(l))
            .map(|u| UsageRecord {
                request_key: u.message_id,
                session: "s".into(),
                provider: "claude".into(),
                account: None,
                model: u.model,
                at_ms: u.at_ms.unwrap(),
                tokens: u.tokens,
                status: None,
                source: UsageSource::Transcript,
                agent_cost_usd: None,
            })
            .collect();
        let merged = merge_records(recs);
        assert_eq!(merged.len(), 1);
        assert_eq!(merged[0].tokens.output, 250);
        assert_eq!(merged[0].tokens.cache_read, 5000);
    }

    #[test]
    fn a_request_seen_by_the_proxy_and_the_transcript_counts_once_with_the_proxy_status() {
        let merged = merge_records([
            rec("msg_1", UsageSource::Transcript, 40, 5),
            rec("msg_1", UsageSource::Proxy, 42, 7),
            rec("msg_2", UsageSource::Transcript, 1, 9),
        ]);
        assert_eq!(merged.len(), 2);
        assert_eq!(merged[0].source, UsageSource::Proxy);
        assert_eq!(merged[0].status, Some(200));
        assert_eq!(merged[0].tokens.output, 42);
        assert_eq!(merged[0].at_ms, 5);
    }

    #[test]
    fn synthetic_error_lines_and_lines_cut_in_half_carry_no_usage() {
        // The line Claude Code 2.1.197 writes at a usage limit
        // (docs/src/cli-facts.md): model <synthetic>, zero usage.
        let synthetic = r#"{"type":"assistant","message":{"id":"x","model":"<synthetic>","usage":{"input_tokens":0,"output_tokens":0}},"error":"rate_limit","isApiErrorMessage":true,"apiErrorStatus":429}"#;
        assert_eq!(claude_transcript_usage(synthetic), None);
        let whole = r#"{"type":"assistant","message":{"id":"m","model":"claude-haiku-4-5","usage":{"input_tokens":1,"output_tokens":2}}}"#;
        assert!(claude_transcript_usage(whole).is_some());
        assert_eq!(claude_transcript_usage(&whole[..whole.len() / 2]), None);
        let empty = r#"{"type":"assistant","message":{"id":"m","model":"x","usage":{"input_tokens":0,"output_tokens":0}}}"#;
        assert_eq!(claude_transcript_usage(empty), None);
    }

    #[test]
    fn shipped_prices_load_and_an_unknown_model_has_no_price_not_zero() {
        let t = PriceTable::shipped().unwrap();
        for p in t.models.values() {
            assert!(p.date.is_some() && p.source.is_some());
        }
        let toks = Tokens {
            input: 1_000_000,
            output: 1_000_000,
            cache_write: 0,
            cache_read: 0,
        };
        assert_eq!(
            t.cost(Some("claude-sonnet-4-5-20250929"), &toks),
            Some(18.0)
        );
        assert_eq!(t.cost(Some("fake-model"), &toks), None);
        assert_eq!(t.cost(None, &toks), None);
        assert!(
            t.price("gpt-5.4").is_none(),
            "a different model never borrows a price"
        );
        assert!(t.price("gpt-5-codex").is_some());
    }

    #[test]
    fn overrides_replace_and_add_prices() {
        let mut o = BTreeMap::new();
        o.insert(
            "fake-model".to_owned(),
            Price {
                input: 1.0,
                output: 2.0,
                cache_write: 0.0,
                cache_read: 0.0,
                date: None,
                source: None,
            },
        );
        let t = PriceTable::shipped().unwrap().with_overrides(&o);
        let toks = Tokens {
            input: 500_000,
            output: 500_000,
            ..Default::default()
        };
        assert_eq!(t.cost(Some("fake-model"), &toks), Some(1.5));
        assert!(
            PriceTable::from_json(
                r#"{"models":{"m":{"input":-1,"output":0,"cache_write":0,"cache_read":0}}}"#
            )
            .is_err()
        );
    }

    #[test]
    fn a_session_with_an_unpriced_model_has_a_null_cost_and_is_counted_as_unpriced() {
        let prices = PriceTable::shipped().unwrap();
        let toks = Tokens {
            input: 1_000_000,
            ..Default::default()
        };
        let sums = vec![
            ModelSum {
                session: "a".into(),
                provider: "claude".into(),
                model: Some("claude-haiku-4-5".into()),
                requests: 2,
                tokens: toks,
                ..Default::default()
            },
            ModelSum {
                session: "b".into(),
                provider: "claude".into(),
                model: Some("claude-haiku-4-5".into()),
                requests: 1,
                tokens: toks,
                ..Default::default()
            },
            ModelSum {
                session: "b".into(),
                provider: "claude".into(),
                model: Some("fake-model".into()),
                requests: 3,
                tokens: toks,
                ..Default::default()
            },
        ];
        let (sessions, total) = summarize(&sums, &prices, &|id| format!("t-{id}"));
        assert_eq!(sessions[0].cost_usd, Some(1.0));
        assert!(sessions[0].priced);
        assert_eq!(sessions[1].cost_usd, None);
        assert!(!sessions[1].priced);
        assert_eq!(sessions[1].models, vec!["claude-haiku-4-5", "fake-model"]);
        assert_eq!(total.requests, 6);
        assert_eq!(total.unpriced_requests, 3);
        assert_eq!(total.cost_usd, 2.0);
    }

    #[test]
    fn a_model_only_the_agent_prices_is_priced_from_its_own_figure_said_as_such() {
        let prices = PriceTable::shipped().unwrap();
        let toks = Tokens {
            input: 7674,
            output: 3,
            ..Default::default()
        };
        let sum = |session: &str, model: &str, cost: Option<f64>, unpriced: u64| ModelSum {
            session: session.into(),
            provider: "opencode".into(),
            model: Some(model.into()),
            requests: 2,
            tokens: toks,
            agent_cost_usd: cost,
            agent_unpriced: unpriced,
        };
        let sums = vec![
            // Only OpenCode prices it.
            sum("a", "fake-model", Some(0.0231), 0),
            // The table prices it: the table's figure, OpenCode's shown too.
            sum("b", "claude-haiku-4-5", Some(5.0), 0),
            // One of its requests OpenCode did not price: unpriced.
            sum("c", "fake-model", Some(0.01), 1),
            // OpenCode's 0 for tokens is a model it has no cost for.
            sum("d", "fake-model", Some(0.0), 0),
        ];
        let (s, total) = summarize(&sums, &prices, &|id| id.to_owned());
        assert_eq!(s[0].cost_usd, Some(0.0231));
        assert!(s[0].priced);
        assert_eq!(s[0].cost_from, vec!["opencode"]);
        assert_eq!(s[0].agent_cost_usd, Some(0.0231));
        assert_eq!(s[1].cost_from, vec!["prices"]);
        assert_ne!(s[1].cost_usd, Some(5.0));
        assert_eq!(s[1].agent_cost_usd, Some(5.0));
        assert_eq!((s[2].cost_usd, s[2].priced), (None, false));
        assert_eq!((s[3].cost_usd, s[3].priced), (None, false));
        assert_eq!(total.unpriced_requests, 4);
        assert_eq!(
            merge_agent_cost(Some(0.01), Some(0.02)),
            Some(0.02),
            "a message's cost grows with its steps"
        );
        assert_eq!(merge_agent_cost(None, Some(0.02)), Some(0.02));
    }

    #[test]
    fn an_own_record_takes_the_key_of_the_same_request_seen_under_the_providers_id() {
        let mut own = rec("agent:codex:t1:10254", UsageSource::Transcript, 3, 60_000);
        own.tokens.input = 10251;
        let mut proxy = rec("resp_1", UsageSource::Proxy, 3, 59_000);
        proxy.tokens.input = 10251;
        let mut other = rec("resp_2", UsageSource::Proxy, 4, 59_500);
        other.tokens.input = 10251;
        let mut far = rec(
            "resp_3",
            UsageSource::Proxy,
            3,
            60_000 + SAME_REQUEST_WINDOW_MS + 1,
        );
        far.tokens.input = 10251;
        assert_eq!(
            key_for_own_record(&own, &[other.clone(), proxy.clone(), far.clone()]),
            "resp_1"
        );
        // Other counts, too far in time, another session: its own key.
        assert_eq!(key_for_own_record(&own, &[other, far]), own.request_key);
        let mut elsewhere = proxy.clone();
        elsewhere.session = "s2".into();
        assert_eq!(key_for_own_record(&own, &[elsewhere]), own.request_key);
        // Two own records never fold into each other, nor a request with
        // no tokens into another.
        let twin = UsageRecord {
            request_key: "agent:codex:t1:20000".into(),
            ..own.clone()
        };
        assert_eq!(key_for_own_record(&own, &[twin]), own.request_key);
        let empty = UsageRecord {
            tokens: Tokens::default(),
            ..own.clone()
        };
        let empty_proxy = UsageRecord {
            tokens: Tokens::default(),
            ..proxy
        };
        assert_eq!(key_for_own_record(&empty, &[empty_proxy]), own.request_key);
    }

    proptest! {
        #[test]
        fn merging_never_sums_and_is_order_independent(
            outs in proptest::collection::vec((0u8..4, 0u64..1000, any::<bool>()), 0..20)
        ) {
            let recs: Vec<UsageRecord> = outs.iter().enumerate().map(|(i, (k, o, p))| {
                rec(&format!("m{k}"), if *p { UsageSource::Proxy } else { UsageSource::Transcript }, *o, i as i64)
            }).collect();
            let a = merge_records(recs.clone());
            let mut rev = recs.clone();
            rev.reverse();
            let b = merge_records(rev);
            prop_assert_eq!(a.len(), b.len());
            for (x, y) in a.iter().zip(b.iter()) {
                prop_assert_eq!(x.tokens, y.tokens);
                prop_assert_eq!(x.source, y.source);
            }
            for m in &a {
                let max = recs.iter().filter(|r| r.request_key == m.request_key).map(|r| r.tokens.output).max().unwrap();
                prop_assert_eq!(m.tokens.output, max);
            }
        }
    }
}
