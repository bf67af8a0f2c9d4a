//! Usage from OpenCode's database (issue 29), for the requests the
//! recording proxy did not see.
//!
//! OpenCode 1.18.33 keeps each model request's answer as an assistant row
//! of its `message` table (observed running it against the fake model API:
//! `opencode run "hello opencode"`), `data` being JSON with `role`,
//! `modelID`, `providerID`, `time.created` / `time.completed`, `cost` and
//! `tokens: {total, input, output, reasoning, cache: {write, read}}`. Its
//! `input` leaves the cached tokens out (sst/opencode `Session.getUsage`:
//! `inputTokens - cacheReadInputTokens - cacheWriteInputTokens` for
//! OpenAI-style APIs), as the ledger's does; each step of a message
//! overwrites `tokens` with its own request's (`processor.ts`,
//! `step-finish`). The row's `time_updated` moves at each write, so a look
//! from the last one read sees every message that changed since.
//!
//! `cost` is OpenCode's own figure in USD: `Session.getUsage` prices each
//! step's tokens by the model's `cost` (per million tokens: `input`,
//! `output`, `cache.read`, `cache.write`; reasoning at `output`) from its
//! model list or the config's `provider.<id>.models.<id>.cost`, and
//! `processor.ts` adds each step's to the message (`cost += usage.cost`). A
//! model with no cost there is priced at 0, so a 0 for tokens says nothing
//! (kept as no figure, never as free).
//!
//! OpenCode's message id is its own, not the provider's: a request is keyed
//! `agent:opencode:<message id>` and the ledger folds it into the proxy's
//! row of the same request (hangar-core `same_request`).

use std::path::Path;

use hangar_core::usage::{OWN_KEY_PREFIX, Tokens};

use crate::adapter::UsageFact;

/// The finished assistant messages of conversation `conversation` updated
/// at or after `since_ms`, as requests, with the newest `time_updated`
/// read (`since_ms` when none).
pub fn read_usage(
    db: &Path,
    conversation: &str,
    since_ms: i64,
) -> Result<(Vec<UsageFact>, i64), rusqlite::Error> {
    let conn = rusqlite::Connection::open_with_flags(
        db,
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    // OpenCode writes in WAL mode; a short wait rides out its commits.
    conn.busy_timeout(std::time::Duration::from_millis(250))?;
    let mut st = conn.prepare(
        "SELECT id, time_updated, data FROM message
         WHERE session_id = ?1 AND time_updated >= ?2
           AND json_extract(data, '$.role') = 'assistant'
         ORDER BY time_updated, id",
    )?;
    let rows: Vec<(String, i64, String)> = st
        .query_map(rusqlite::params![conversation, since_ms], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        })?
        .collect::<Result<_, _>>()?;
    let mut newest = since_ms;
    let mut out = Vec::new();
    for (id, updated, data) in rows {
        newest = newest.max(updated);
        if let Some(fact) = message_usage(&id, &data) {
            out.push(fact);
        }
    }
    Ok((out, newest))
}

/// One assistant message's request; `None` while it is being answered (no
/// `time.completed`), for no tokens, or for data that is not JSON.
fn message_usage(id: &str, data: &str) -> Option<UsageFact> {
    let v: serde_json::Value = serde_json::from_str(data).ok()?;
    v["time"]["completed"].as_i64()?;
    let t = &v["tokens"];
    let n = |x: &serde_json::Value| x.as_u64().unwrap_or(0);
    let tokens = Tokens {
        input: n(&t["input"]),
        output: n(&t["output"]),
        cache_write: n(&t["cache"]["write"]),
        cache_read: n(&t["cache"]["read"]),
    };
    if tokens == Tokens::default() {
        return None;
    }
    let agent_cost_usd = v["cost"].as_f64().filter(|c| c.is_finite() && *c > 0.0);
    Some(UsageFact::Request {
        key: format!("{OWN_KEY_PREFIX}opencode:{id}"),
        model: v["modelID"].as_str().map(str::to_owned),
        at_ms: v["time"]["created"].as_i64(),
        tokens,
        agent_cost_usd,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The `message` table as OpenCode 1.18.33 made it (`.schema` of a real
    /// `opencode.db`), and the rows `opencode run "hello opencode"` wrote
    /// against the fake model API on 2026-12-03, whole; plus one assistant
    /// message still being answered (the same row before its step finished:
    /// no `time.completed`, zero tokens).
    fn opencode_db(dir: &Path) -> std::path::PathBuf {
        let path = dir.join("opencode.db");
        let c = rusqlite::Connection::open(&path).unwrap();
        c.execute_batch(
            r#"CREATE TABLE message (id text PRIMARY KEY, session_id text NOT NULL,
               time_created integer NOT NULL, time_updated integer NOT NULL, data text NOT NULL);
             INSERT INTO message VALUES ('msg_23b79958e0015XG4p7bglyoJCJ', 'ses_dc4866b58ffePZz31aYIsiKM7H', 1796294153615, 1796294153615,
               '{"role":"user","time":{"created":1796294153615},"agent":"build","model":{"providerID":"fake","modelID":"fake-model"},"summary":{"diffs":[]}}');
             INSERT INTO message VALUES ('msg_23b79a452001ESmWlWVCEHhjM7', 'ses_dc4866b58ffePZz31aYIsiKM7H', 1796294157394, 1796294157989,
               '{"parentID":"msg_23b79958e0015XG4p7bglyoJCJ","role":"assistant","mode":"build","agent":"build","path":{"cwd":"/tmp/rc/work","root":"/"},"cost":0,"tokens":{"total":7677,"input":7674,"output":3,"reasoning":0,"cache":{"write":0,"read":0}},"modelID":"fake-model","providerID":"fake","time":{"created":1796294157394,"completed":1796294157989},"finish":"stop"}');
             INSERT INTO message VALUES ('msg_pending', 'ses_dc4866b58ffePZz31aYIsiKM7H', 1796294160000, 1796294160000,
               '{"role":"assistant","cost":0,"tokens":{"input":0,"output":0,"reasoning":0,"cache":{"write":0,"read":0}},"modelID":"fake-model","providerID":"fake","time":{"created":1796294160000}}');
             INSERT INTO message VALUES ('msg_other', 'ses_other', 1796294157394, 1796294157989,
               '{"role":"assistant","tokens":{"input":1,"output":1,"cache":{"write":0,"read":0}},"modelID":"m","time":{"created":1,"completed":2}}');"#,
        )
        .unwrap();
        path
    }

    #[test]
    fn finished_assistant_messages_of_the_conversation_are_its_requests() {
        let dir = tempfile::tempdir().unwrap();
        let db = opencode_db(dir.path());
        let (facts, newest) = read_usage(&db, "ses_dc4866b58ffePZz31aYIsiKM7H", 0).unwrap();
        assert_eq!(
            facts,
            vec![UsageFact::Request {
                key: "agent:opencode:msg_23b79a452001ESmWlWVCEHhjM7".into(),
                model: Some("fake-model".into()),
                at_ms: Some(1_796_294_157_394),
                tokens: Tokens {
                    input: 7674,
                    output: 3,
                    ..Default::default()
                },
                // OpenCode priced the fake model at 0 (no cost configured).
                agent_cost_usd: None,
            }]
        );
        assert_eq!(newest, 1_796_294_160_000);
        // The next look starts at the newest update: the pending message
        // is read again once it finishes.
        let (again, _) = read_usage(&db, "ses_dc4866b58ffePZz31aYIsiKM7H", newest).unwrap();
        assert!(again.is_empty());
        assert!(read_usage(&db, "ses_none", 0).unwrap().0.is_empty());
    }

    #[test]
    fn a_database_that_is_not_opencodes_is_an_error_not_zero_usage() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("opencode.db");
        std::fs::write(&path, b"not a database at all, just some bytes in a file").unwrap();
        assert!(read_usage(&path, "ses_x", 0).is_err());
        assert!(read_usage(&dir.path().join("missing.db"), "ses_x", 0).is_err());
    }
}
