//! Where an OpenCode conversation is in its turn, read from its database
//! (issue 29): OpenCode writes no transcript file, so its `message` rows
//! are what says a turn began and ended. Goals and limit continuations wait
//! for that end, never for quiet output.
//!
//! OpenCode 1.18.33 (observed running it against the fake model API, and
//! sst/opencode `session/prompt.ts`, `session/processor.ts`): a prompt is a
//! `user` message; each model request (a step) is an `assistant` message,
//! written when the step starts (no `time.completed`) and again when it
//! ends, with `time.completed` and `finish` (the model's finish reason).
//! OpenCode starts another step while the last one finished with
//! `tool-calls`; any other finish (`stop`, `length`, an `error` on the
//! message) ends the turn. The database is only ever opened read-only.

use std::path::Path;

use hangar_core::activity::{Activity, Reading};

/// The turn of conversation `conversation` as its newest message says:
/// `None` before it has any message.
pub fn turn_reading(db: &Path, conversation: &str) -> Result<Option<Reading>, rusqlite::Error> {
    let conn = rusqlite::Connection::open_with_flags(
        db,
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    // OpenCode writes in WAL mode; a short wait rides out its commits.
    conn.busy_timeout(std::time::Duration::from_millis(250))?;
    let newest: Option<(i64, String)> = conn
        .query_row(
            "SELECT time_created, data FROM message WHERE session_id = ?1
             ORDER BY time_created DESC, id DESC LIMIT 1",
            [conversation],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .map(Some)
        .or_else(|e| match e {
            rusqlite::Error::QueryReturnedNoRows => Ok(None),
            e => Err(e),
        })?;
    Ok(newest.and_then(|(created, data)| message_reading(created, &data)))
}

/// One message's word on the turn; `None` for data that is not JSON.
fn message_reading(created_ms: i64, data: &str) -> Option<Reading> {
    let v: serde_json::Value = serde_json::from_str(data).ok()?;
    let at = |ms: i64| u64::try_from(ms).unwrap_or(0);
    let working = |ms: i64| Reading {
        activity: Activity::Working,
        at_ms: at(ms),
    };
    if v["role"] != "assistant" {
        // The person's prompt: the model has yet to answer it.
        return Some(working(created_ms));
    }
    let Some(completed) = v["time"]["completed"].as_i64() else {
        return Some(working(created_ms));
    };
    if v["finish"] == "tool-calls" && v["error"].is_null() {
        // A tool runs, and another step follows.
        return Some(working(completed));
    }
    Some(Reading {
        activity: Activity::Idle,
        at_ms: at(completed),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The `message` table as OpenCode 1.18.33 made it, with rows shaped as
    /// `opencode run` wrote them against the fake model API (the finished
    /// answer's `data` whole, as in `usage.rs`'s fixture), in one
    /// conversation per stage of a turn.
    fn opencode_db(dir: &Path) -> std::path::PathBuf {
        let path = dir.join("opencode.db");
        let c = rusqlite::Connection::open(&path).unwrap();
        c.execute_batch(
            r#"CREATE TABLE message (id text PRIMARY KEY, session_id text NOT NULL,
               time_created integer NOT NULL, time_updated integer NOT NULL, data text NOT NULL);
             INSERT INTO message VALUES ('msg_1u', 'ses_asked', 1000, 1000,
               '{"role":"user","time":{"created":1000},"agent":"build","model":{"providerID":"fake","modelID":"fake-model"}}');
             INSERT INTO message VALUES ('msg_2u', 'ses_streaming', 1000, 1000, '{"role":"user","time":{"created":1000}}');
             INSERT INTO message VALUES ('msg_2a', 'ses_streaming', 1100, 1100,
               '{"role":"assistant","cost":0,"tokens":{"input":0,"output":0,"reasoning":0,"cache":{"write":0,"read":0}},"modelID":"fake-model","providerID":"fake","time":{"created":1100}}');
             INSERT INTO message VALUES ('msg_3u', 'ses_tool', 1000, 1000, '{"role":"user","time":{"created":1000}}');
             INSERT INTO message VALUES ('msg_3a', 'ses_tool', 1100, 1300,
               '{"role":"assistant","time":{"created":1100,"completed":1300},"finish":"tool-calls"}');
             INSERT INTO message VALUES ('msg_4u', 'ses_done', 1000, 1000, '{"role":"user","time":{"created":1000}}');
             INSERT INTO message VALUES ('msg_4a', 'ses_done', 1100, 1700,
               '{"parentID":"msg_4u","role":"assistant","mode":"build","agent":"build","path":{"cwd":"/tmp/rc/work","root":"/"},"cost":0,"tokens":{"total":7677,"input":7674,"output":3,"reasoning":0,"cache":{"write":0,"read":0}},"modelID":"fake-model","providerID":"fake","time":{"created":1100,"completed":1700},"finish":"stop"}');
             INSERT INTO message VALUES ('msg_5u', 'ses_failed', 1000, 1000, '{"role":"user","time":{"created":1000}}');
             INSERT INTO message VALUES ('msg_5a', 'ses_failed', 1100, 1200,
               '{"role":"assistant","time":{"created":1100,"completed":1200},"finish":"tool-calls","error":{"name":"APIError"}}');"#,
        )
        .unwrap();
        path
    }

    fn reading(activity: Activity, at_ms: u64) -> Option<Reading> {
        Some(Reading { activity, at_ms })
    }

    #[test]
    fn the_newest_message_says_whether_the_turn_goes_on_or_ended() {
        let dir = tempfile::tempdir().unwrap();
        let db = opencode_db(dir.path());
        let r = |c: &str| turn_reading(&db, c).unwrap();
        assert_eq!(r("ses_asked"), reading(Activity::Working, 1000));
        assert_eq!(r("ses_streaming"), reading(Activity::Working, 1100));
        assert_eq!(r("ses_tool"), reading(Activity::Working, 1300));
        assert_eq!(r("ses_done"), reading(Activity::Idle, 1700));
        assert_eq!(r("ses_failed"), reading(Activity::Idle, 1200));
        assert_eq!(r("ses_none"), None);
    }

    #[test]
    fn a_file_that_is_not_opencodes_database_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("opencode.db");
        std::fs::write(&path, b"not a database at all, just some bytes in a file").unwrap();
        assert!(turn_reading(&path, "ses_x").is_err());
    }
}
