//! OpenCode's conversations, read from its SQLite database (issue 16,
//! defect 5), so a woken session resumes with `--session <ses_...>`.
//!
//! OpenCode 1.18 keeps conversations in `$XDG_DATA_HOME/opencode/opencode.db`
//! (tables `session`, `message`, `part`; observed on 1.18.33) and writes no
//! transcript file. The database is only ever opened read-only. Which
//! conversation is a session's own is `hangar_core::opencode_identity`'s
//! rule; watching for it while prompts wait to be matched is the daemon's.

use std::path::{Path, PathBuf};

use hangar_core::opencode_identity::OpencodeConversation;

/// Where OpenCode keeps its database, from the daemon's environment (the
/// one its agents inherit).
pub fn database_path(var: &dyn Fn(&str) -> Option<String>) -> Option<PathBuf> {
    let data = var("XDG_DATA_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            var("HOME")
                .filter(|v| !v.is_empty())
                .map(|h| Path::new(&h).join(".local").join("share"))
        })?;
    Some(data.join("opencode").join("opencode.db"))
}

/// Top-level conversations in `cwd` created at or after `since_ms` (and
/// `current`, the one the session has, whenever it was created), with
/// their user messages' text.
pub fn read_conversations(
    db: &Path,
    cwd: &str,
    since_ms: u64,
    current: Option<&str>,
) -> Result<Vec<OpencodeConversation>, rusqlite::Error> {
    let conn = rusqlite::Connection::open_with_flags(
        db,
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    // OpenCode writes in WAL mode; a short wait rides out its commits.
    conn.busy_timeout(std::time::Duration::from_millis(250))?;
    let mut sessions = conn.prepare(
        "SELECT id, directory, time_created FROM session \
         WHERE directory = ?1 AND (time_created >= ?2 OR id = ?3) AND parent_id IS NULL",
    )?;
    let mut parts = conn.prepare(
        "SELECT p.data FROM part p JOIN message m ON m.id = p.message_id \
         WHERE p.session_id = ?1 AND json_extract(m.data, '$.role') = 'user'",
    )?;
    let rows: Vec<(String, String, i64)> = sessions
        .query_map(rusqlite::params![cwd, since_ms as i64, current], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        })?
        .collect::<Result<_, _>>()?;
    let mut out = Vec::with_capacity(rows.len());
    for (id, directory, created) in rows {
        let texts: Vec<String> = parts
            .query_map([&id], |r| r.get::<_, String>(0))?
            .collect::<Result<Vec<_>, _>>()?
            .into_iter()
            .filter_map(|data| {
                let v: serde_json::Value = serde_json::from_str(&data).ok()?;
                (v["type"] == "text").then(|| v["text"].as_str().map(str::to_owned))?
            })
            .collect();
        out.push(OpencodeConversation {
            id,
            directory,
            created_ms: created.max(0) as u64,
            user_texts: texts,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The tables and columns OpenCode 1.18.33 created (read from a real
    /// `opencode.db` with `.schema`), cut to what is read here.
    fn opencode_db(dir: &Path) -> PathBuf {
        let path = dir.join("opencode.db");
        let c = rusqlite::Connection::open(&path).unwrap();
        c.execute_batch(
            "CREATE TABLE session (id text PRIMARY KEY, project_id text NOT NULL, parent_id text,
               slug text NOT NULL, directory text NOT NULL, title text NOT NULL,
               version text NOT NULL, time_created integer NOT NULL, time_updated integer NOT NULL);
             CREATE TABLE message (id text PRIMARY KEY, session_id text NOT NULL,
               time_created integer NOT NULL, time_updated integer NOT NULL, data text NOT NULL);
             CREATE TABLE part (id text PRIMARY KEY, message_id text NOT NULL, session_id text NOT NULL,
               time_created integer NOT NULL, time_updated integer NOT NULL, data text NOT NULL);
             INSERT INTO session VALUES ('ses_a', 'global', NULL, 'sunny-eagle', '/w', 't', '1.18.33', 2000, 2000);
             INSERT INTO session VALUES ('ses_child', 'global', 'ses_a', 'x', '/w', 't', '1.18.33', 2100, 2100);
             INSERT INTO session VALUES ('ses_old', 'global', NULL, 'y', '/w', 't', '1.18.33', 10, 10);
             INSERT INTO message VALUES ('msg_u', 'ses_a', 2001, 2001, '{\"role\":\"user\"}');
             INSERT INTO message VALUES ('msg_a', 'ses_a', 2002, 2002, '{\"role\":\"assistant\"}');
             INSERT INTO part VALUES ('prt_1', 'msg_u', 'ses_a', 2001, 2001, '{\"type\":\"text\",\"text\":\"hello opencode\"}');
             INSERT INTO part VALUES ('prt_2', 'msg_a', 'ses_a', 2002, 2002, '{\"type\":\"text\",\"text\":\"ANSWER(hello opencode)\"}');",
        )
        .unwrap();
        path
    }

    #[test]
    fn reads_top_level_conversations_of_the_folder_with_their_user_text_only() {
        let dir = tempfile::tempdir().unwrap();
        let db = opencode_db(dir.path());
        let got = read_conversations(&db, "/w", 1000, None).unwrap();
        assert_eq!(
            got,
            vec![OpencodeConversation {
                id: "ses_a".into(),
                directory: "/w".into(),
                created_ms: 2000,
                user_texts: vec!["hello opencode".into()],
            }]
        );
        assert!(
            read_conversations(&db, "/elsewhere", 0, None)
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn the_database_is_under_xdg_data_home_else_home() {
        let xdg = |k: &str| match k {
            "XDG_DATA_HOME" => Some("/x".to_owned()),
            "HOME" => Some("/h".to_owned()),
            _ => None,
        };
        assert_eq!(
            database_path(&xdg),
            Some(PathBuf::from("/x/opencode/opencode.db"))
        );
        let home = |k: &str| (k == "HOME").then(|| "/h".to_owned());
        assert_eq!(
            database_path(&home),
            Some(PathBuf::from("/h/.local/share/opencode/opencode.db"))
        );
    }
}
