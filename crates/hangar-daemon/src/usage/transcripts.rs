//! Usage and limits from the agents' own records, for the requests the
//! recording proxy did not see (capture off, a bypassed host): Claude
//! Code's transcript, Codex's rollout and OpenCode's database (the last two
//! read by their adapters, `hangar_providers::{codex,opencode}::usage`).
//!
//! Each live session's transcript is read, when a turn began or ended, from
//! where the last look stopped, complete lines only (a line cut in half by a
//! write in progress waits for its end). A Claude assistant line's
//! `message.usage` goes into the ledger under its `message.id`, the key the
//! proxy uses too, so a request both saw is one row with the largest counts
//! (several lines share one id: never summed); a Codex request under its
//! `response_id` the same way; a record that names no provider id (an older
//! rollout's `token_count`, an OpenCode message) under a key of its own,
//! which the ledger folds into the proxy's row of the same request. A
//! synthetic error line (`"error":"rate_limit"`, `isApiErrorMessage`,
//! docs/src/cli-facts.md) or a Codex `usage_limit_exceeded` written after hangar
//! first looked makes the session limited; history before that is never
//! acted on. A Codex rollout's `rate_limits` are the account's windows.

use std::collections::HashMap;
use std::io::{Read, Seek, SeekFrom};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use hangar_core::usage::{UsageRecord, UsageSource, claude_transcript_usage};
use hangar_core::usage_limits::{self, SessionLimit};
use hangar_core::{Provider, SessionId};
use hangar_providers::adapter::{UsageFact, adapter};

use super::Ledger;
use crate::sessions::Sessions;

/// The most read of a transcript at first sight (its newest part).
const FIRST_LOOK_BYTES: u64 = 16 << 20;

pub struct Transcripts {
    pub ledger: Arc<Ledger>,
    pub sessions: Arc<Sessions>,
    /// Per session: the file and how far it was read.
    pub read: Mutex<HashMap<String, (PathBuf, u64)>>,
    /// Per OpenCode session: the newest message update read.
    pub stored: Mutex<HashMap<String, i64>>,
    /// Per session: the reset of the window its records last showed used
    /// up, for a refusal read in a later look than that window.
    pub exhausted: Mutex<HashMap<String, i64>>,
    /// Per session: the model its records last named, for a request read
    /// in a later look than its turn's start (a look can fall between
    /// Codex's `turn_context` and its `token_usage_record`).
    pub models: Mutex<HashMap<String, String>>,
}

impl Transcripts {
    /// Read every live session's new usage records (called when a turn
    /// ended, by `screen_words.rs`).
    pub(crate) fn look(&self) {
        for c in self.sessions.budget_candidates() {
            match c.meta.provider {
                Provider::Claude | Provider::Codex => {
                    let Some(path) = hangar_providers::transcript::turns::transcript_path(&c.meta)
                    else {
                        continue;
                    };
                    let Some((lines, first_look)) = self.read_new(&c.id, &path) else {
                        continue;
                    };
                    if c.meta.provider == Provider::Claude {
                        self.claude_lines(&c.id, &lines, first_look);
                    } else {
                        let facts = adapter(&c.meta.provider).transcript_usage(&lines);
                        self.take_facts(&c.id, "codex", facts, first_look);
                    }
                }
                Provider::Opencode if c.meta.sandbox.is_none() => {
                    // A sandboxed OpenCode's database is its own (its
                    // requests go through the proxy, which counts them).
                    let Some(conversation) = c.meta.provider_session.as_ref().map(|p| p.id.clone())
                    else {
                        continue;
                    };
                    self.read_stored(&c.id, &c.meta.provider, &conversation);
                }
                _ => {}
            }
        }
        self.forget_closed();
    }

    /// A closed session's read positions and last used-up window go with it
    /// (a hibernated one's are kept: it reads on from there when woken).
    fn forget_closed(&self) {
        let open = |id: &String| self.sessions.contains(&SessionId::from(id.as_str()));
        lock(&self.read).retain(|id, _| open(id));
        lock(&self.stored).retain(|id, _| open(id));
        lock(&self.exhausted).retain(|id, _| open(id));
        lock(&self.models).retain(|id, _| open(id));
    }

    /// The complete lines of `path` written since the last look, and
    /// whether this is the first look (history, never acted on).
    fn read_new(&self, id: &SessionId, path: &PathBuf) -> Option<(Vec<String>, bool)> {
        let mut f = std::fs::File::open(path).ok()?;
        let len = f.metadata().map(|m| m.len()).unwrap_or(0);
        let (start, first_look) = {
            let read = lock(&self.read);
            match read.get(id.as_str()) {
                // A file cut shorter (or another file): read it again.
                Some((p, off)) if p == path && *off <= len => (*off, false),
                _ => (len.saturating_sub(FIRST_LOOK_BYTES), true),
            }
        };
        if start >= len {
            return None;
        }
        let mut bytes = Vec::new();
        if f.seek(SeekFrom::Start(start)).is_err() || f.read_to_end(&mut bytes).is_err() {
            return None;
        }
        // Complete lines only: a half-written last line waits.
        let end = bytes.iter().rposition(|b| *b == b'\n')?;
        lock(&self.read).insert(id.to_string(), (path.clone(), start + end as u64 + 1));
        let lines = String::from_utf8_lossy(&bytes[..=end])
            .lines()
            .map(str::to_owned)
            .collect();
        Some((lines, first_look))
    }

    fn claude_lines(&self, id: &SessionId, lines: &[String], first_look: bool) {
        let now = self.ledger.now();
        for line in lines {
            if let Some(u) = claude_transcript_usage(line) {
                self.record(id, "claude", u.message_id, u.model, u.at_ms, u.tokens, None);
            } else if !first_look && let Some(reset) = rate_limit_line(line) {
                let resets_at =
                    usage_limits::resolve_reset(&reset, now, &|z| super::zone_offset(z, now));
                self.limited(id, "rate_limit", resets_at, now);
            }
        }
    }

    /// OpenCode's database: the messages updated since the last look.
    fn read_stored(&self, id: &SessionId, provider: &Provider, conversation: &str) {
        let since = lock(&self.stored).get(id.as_str()).copied().unwrap_or(0);
        let var = hangar_providers::transcript::discovery::env_var;
        match adapter(provider).stored_usage(conversation, since, &var) {
            Ok(Some((facts, newest))) => {
                lock(&self.stored).insert(id.to_string(), newest);
                self.take_facts(id, provider.name(), facts, since == 0);
            }
            Ok(None) => {}
            Err(e) => tracing::warn!("usage of session {id}: {e}"),
        }
    }

    /// An adapter's facts into the ledger.
    fn take_facts(&self, id: &SessionId, provider: &str, facts: Vec<UsageFact>, first_look: bool) {
        let now = self.ledger.now();
        for fact in facts {
            match fact {
                UsageFact::Model(model) => {
                    lock(&self.models).insert(id.to_string(), model);
                }
                UsageFact::Request {
                    key,
                    model,
                    at_ms,
                    tokens,
                    agent_cost_usd,
                } => {
                    let model = model.or_else(|| lock(&self.models).get(id.as_str()).cloned());
                    self.record(id, provider, key, model, at_ms, tokens, agent_cost_usd)
                }
                UsageFact::Windows(windows) => {
                    if let Some(reset) = usage_limits::exhausted_reset(&windows) {
                        lock(&self.exhausted).insert(id.to_string(), reset);
                    }
                    self.ledger.agent_windows(id, provider, &windows);
                }
                UsageFact::Limited { .. } if first_look => {}
                UsageFact::Limited { resets_at, text } => {
                    let last_exhausted = lock(&self.exhausted).get(id.as_str()).copied();
                    let resets_at = usage_limits::refusal_reset(resets_at, last_exhausted, now);
                    let resets_at = resets_at.or_else(|| {
                        let reset = usage_limits::parse_limit_text(&text)
                            .unwrap_or(usage_limits::ResetText::Unknown);
                        usage_limits::resolve_reset(&reset, now, &|z| super::zone_offset(z, now))
                    });
                    self.limited(id, "usage_limit", resets_at, now);
                }
            }
        }
    }

    #[allow(clippy::too_many_arguments)] // one request's fields, as read
    fn record(
        &self,
        id: &SessionId,
        provider: &str,
        key: String,
        model: Option<String>,
        at_ms: Option<i64>,
        tokens: hangar_core::usage::Tokens,
        agent_cost_usd: Option<f64>,
    ) {
        let now = self.ledger.now();
        self.ledger.record_usage(UsageRecord {
            request_key: key,
            session: id.to_string(),
            provider: provider.to_owned(),
            account: None,
            model,
            at_ms: at_ms.unwrap_or(now),
            tokens,
            status: None,
            source: UsageSource::Transcript,
            agent_cost_usd,
        });
    }

    fn limited(&self, id: &SessionId, kind: &str, resets_at: Option<i64>, now: i64) {
        self.ledger.limited(
            id,
            SessionLimit {
                kind: kind.to_owned(),
                resets_at,
                source: "transcript".to_owned(),
                since_ms: now,
                continue_at: None,
                stopped_mid_task: true,
                continued: false,
                account: None,
            },
        );
    }
}

/// Claude Code's synthetic error line at a limit: `"error":"rate_limit"`
/// with `isApiErrorMessage`; its text may name the reset.
fn rate_limit_line(line: &str) -> Option<usage_limits::ResetText> {
    let v: serde_json::Value = serde_json::from_str(line.trim()).ok()?;
    if v.get("error").and_then(|e| e.as_str()) != Some("rate_limit")
        || v.get("isApiErrorMessage").and_then(|e| e.as_bool()) != Some(true)
    {
        return None;
    }
    let text: String = v
        .pointer("/message/content")
        .and_then(|c| c.as_array())
        .into_iter()
        .flatten()
        .filter_map(|p| p.get("text").and_then(|t| t.as_str()))
        .collect::<Vec<_>>()
        .join(" ");
    Some(usage_limits::parse_limit_text(&text).unwrap_or(usage_limits::ResetText::Unknown))
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

#[cfg(test)]
mod tests {
    use crate::on_a_fake_machine::with_sessions;
    use hangar_core::SessionId;
    use hangar_providers::adapter::UsageFact;

    #[tokio::test]
    async fn a_request_read_a_look_after_its_turns_model_is_counted_under_that_model() {
        // CI's codex usage test: a look fell between Codex's `turn_context`
        // and its `token_usage_record`, and the request was counted with
        // no model.
        let m = with_sessions(&["a"], &[]);
        m.daemon.usage.start();
        let (t, a) = (&m.daemon.transcripts, SessionId::from("a"));
        t.take_facts(
            &a,
            "codex",
            vec![UsageFact::Model("fake-model".into())],
            false,
        );
        let request = UsageFact::Request {
            key: "resp_1".into(),
            model: None,
            at_ms: Some(m.daemon.usage.now()),
            tokens: hangar_core::usage::Tokens {
                input: 10,
                output: 3,
                ..Default::default()
            },
            agent_cost_usd: None,
        };
        t.take_facts(&a, "codex", vec![request], false);
        let facts = m.daemon.usage.report(0, Some("a")).unwrap();
        let models: Vec<_> = facts.sums.iter().map(|s| s.model.clone()).collect();
        assert_eq!(models, [Some("fake-model".to_owned())]);
    }

    #[test]
    fn a_closed_session_s_read_positions_are_forgotten_and_a_hibernated_one_s_kept() {
        let m = with_sessions(&["pane"], &["parked"]);
        let t = &m.daemon.transcripts;
        for id in ["pane", "parked", "closed"] {
            super::lock(&t.read).insert(id.to_owned(), ("/t.jsonl".into(), 10));
            super::lock(&t.stored).insert(id.to_owned(), 1);
            super::lock(&t.exhausted).insert(id.to_owned(), 2);
            super::lock(&t.models).insert(id.to_owned(), "m".to_owned());
        }
        t.look();
        for map in [
            super::lock(&t.read).keys().cloned().collect::<Vec<_>>(),
            super::lock(&t.stored).keys().cloned().collect(),
            super::lock(&t.exhausted).keys().cloned().collect(),
            super::lock(&t.models).keys().cloned().collect(),
        ] {
            let mut ids = map;
            ids.sort();
            assert_eq!(ids, ["pane", "parked"]);
        }
    }
}
