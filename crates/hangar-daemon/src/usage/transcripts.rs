//! Usage and limits from Claude Code's own transcript, for the requests the
//! recording proxy did not see (capture off, a bypassed host).
//!
//! Each live claude session's transcript is read, when a turn began or
//! ended, from where the last look stopped, complete lines only (a line cut in half by a write in progress
//! waits for its end). An assistant line's `message.usage` goes into the
//! ledger under its `message.id`, the key the proxy uses too, so a request
//! both saw is one row with the largest counts (several lines share one id:
//! never summed). A synthetic error line (`"error":"rate_limit"`,
//! `isApiErrorMessage`, REAL_CLIS.md) written after hangar first looked
//! makes the session limited; history before that is never acted on.

use std::collections::HashMap;
use std::io::{Read, Seek, SeekFrom};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use hangar_core::usage::{UsageRecord, UsageSource, claude_transcript_usage};
use hangar_core::usage_limits::{self, SessionLimit};
use hangar_core::{Provider, SessionId};

use super::Ledger;
use crate::sessions::Sessions;

/// The most read of a transcript at first sight (its newest part).
const FIRST_LOOK_BYTES: u64 = 16 << 20;

pub struct Transcripts {
    pub ledger: Arc<Ledger>,
    pub sessions: Arc<Sessions>,
    /// Per session: the file and how far it was read.
    pub read: Mutex<HashMap<String, (PathBuf, u64)>>,
}

impl Transcripts {
    /// Read every live claude session's new transcript lines (called when
    /// a turn ended, by `screen_words.rs`).
    pub(crate) fn look(&self) {
        for c in self.sessions.budget_candidates() {
            if c.meta.provider != Provider::Claude {
                continue;
            }
            let Some(path) = hangar_providers::transcript::turns::transcript_path(&c.meta) else {
                continue;
            };
            self.read_new(&c.id, &path);
        }
    }

    fn read_new(&self, id: &SessionId, path: &PathBuf) {
        let Ok(mut f) = std::fs::File::open(path) else {
            return;
        };
        let len = f.metadata().map(|m| m.len()).unwrap_or(0);
        let (start, first_look) = {
            let read = self.read.lock().unwrap_or_else(|p| p.into_inner());
            match read.get(id.as_str()) {
                // A file cut shorter (or another file): read it again.
                Some((p, off)) if p == path && *off <= len => (*off, false),
                _ => (len.saturating_sub(FIRST_LOOK_BYTES), true),
            }
        };
        if start >= len {
            return;
        }
        let mut bytes = Vec::new();
        if f.seek(SeekFrom::Start(start)).is_err() || f.read_to_end(&mut bytes).is_err() {
            return;
        }
        // Complete lines only: a half-written last line waits.
        let Some(end) = bytes.iter().rposition(|b| *b == b'\n') else {
            return;
        };
        let now = self.ledger.now();
        let provider = "claude".to_owned();
        for line in String::from_utf8_lossy(&bytes[..=end]).lines() {
            if let Some(u) = claude_transcript_usage(line) {
                self.ledger.record_usage(UsageRecord {
                    request_key: u.message_id,
                    session: id.to_string(),
                    provider: provider.clone(),
                    account: None,
                    model: u.model,
                    at_ms: u.at_ms.unwrap_or(now),
                    tokens: u.tokens,
                    status: None,
                    source: UsageSource::Transcript,
                });
            } else if !first_look && let Some(reset) = rate_limit_line(line) {
                let resets_at =
                    usage_limits::resolve_reset(&reset, now, &|z| super::zone_offset(z, now));
                self.ledger.limited(
                    id,
                    SessionLimit {
                        kind: "rate_limit".to_owned(),
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
        self.read
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(id.to_string(), (path.clone(), start + end as u64 + 1));
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
