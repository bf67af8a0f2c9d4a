//! The opencode style's own store, kept as real OpenCode 1.18.33 keeps it:
//! SQLite at `$XDG_DATA_HOME/opencode/opencode.db` (default
//! `$HOME/.local/share/opencode/opencode.db`), conversations in `session`,
//! their messages in `message` (role in the JSON `data`) and text in `part`.
//! The tables are the real ones (read with `.schema` from a database the
//! real CLI made), cut to the columns the fake fills.
//!
//! As in the real CLI: a fresh start has no id until the first prompt,
//! which creates the conversation (`ses_` and 26 letters or digits), and
//! `--session <id>` for an id the store does not have is refused with
//! `Error: Session not found: <id>` (exit 1).

use std::path::{Path, PathBuf};

use anyhow::Context;
use rusqlite::{Connection, OptionalExtension, params};

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS `session` (
  `id` text PRIMARY KEY, `project_id` text NOT NULL, `workspace_id` text, `parent_id` text,
  `slug` text NOT NULL, `directory` text NOT NULL, `path` text, `title` text NOT NULL,
  `version` text NOT NULL, `time_created` integer NOT NULL, `time_updated` integer NOT NULL);
CREATE TABLE IF NOT EXISTS `message` (
  `id` text PRIMARY KEY, `session_id` text NOT NULL, `time_created` integer NOT NULL,
  `time_updated` integer NOT NULL, `data` text NOT NULL);
CREATE TABLE IF NOT EXISTS `part` (
  `id` text PRIMARY KEY, `message_id` text NOT NULL, `session_id` text NOT NULL,
  `time_created` integer NOT NULL, `time_updated` integer NOT NULL, `data` text NOT NULL);
";

/// Where the store is, from the environment.
pub fn path(var: &dyn Fn(&str) -> Option<String>) -> Option<PathBuf> {
    let data = var("XDG_DATA_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            var("HOME")
                .filter(|v| !v.is_empty())
                .map(|h| Path::new(&h).join(".local/share"))
        })?;
    Some(data.join("opencode").join("opencode.db"))
}

/// A new conversation id in OpenCode's shape.
pub fn new_id() -> String {
    const ALPHABET: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    let mut bytes = uuid::Uuid::new_v4().as_bytes().to_vec();
    bytes.extend_from_slice(uuid::Uuid::new_v4().as_bytes());
    let tail: String = bytes
        .iter()
        .take(26)
        .map(|b| ALPHABET[*b as usize % ALPHABET.len()] as char)
        .collect();
    format!("ses_{tail}")
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

pub struct Store {
    conn: Connection,
}

impl Store {
    pub fn open(path: &Path) -> anyhow::Result<Store> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        }
        let conn = Connection::open(path).with_context(|| format!("opening {}", path.display()))?;
        conn.busy_timeout(std::time::Duration::from_secs(5))?;
        conn.execute_batch("PRAGMA journal_mode = WAL;")?;
        conn.execute_batch(SCHEMA)?;
        Ok(Store { conn })
    }

    pub fn has(&self, id: &str) -> anyhow::Result<bool> {
        Ok(self
            .conn
            .query_row("SELECT 1 FROM session WHERE id = ?1", [id], |_| Ok(()))
            .optional()?
            .is_some())
    }

    /// A user prompt: creates the conversation on its first one.
    pub fn user_prompt(&self, id: &str, directory: &str, text: &str) -> anyhow::Result<()> {
        let now = now_ms();
        self.conn.execute(
            "INSERT OR IGNORE INTO session (id, project_id, slug, directory, path, title, version, time_created, time_updated)
             VALUES (?1, 'global', 'fake-session', ?2, ?3, ?4, 'hangar-fake-agent', ?5, ?5)",
            params![id, directory, directory.trim_start_matches('/'), format!("New session - {now}"), now],
        )?;
        let message = format!("msg_{}", &new_id()[4..]);
        self.conn.execute(
            "INSERT INTO message (id, session_id, time_created, time_updated, data) VALUES (?1, ?2, ?3, ?3, ?4)",
            params![message, id, now, serde_json::json!({"role": "user", "time": {"created": now}}).to_string()],
        )?;
        self.conn.execute(
            "INSERT INTO part (id, message_id, session_id, time_created, time_updated, data) VALUES (?1, ?2, ?3, ?4, ?4, ?5)",
            params![format!("prt_{}", &new_id()[4..]), message, id, now,
                    serde_json::json!({"type": "text", "text": text}).to_string()],
        )?;
        self.conn.execute(
            "UPDATE session SET time_updated = ?2 WHERE id = ?1",
            params![id, now],
        )?;
        Ok(())
    }

    /// A finished answer: an assistant message with `time.completed` and
    /// `finish: "stop"` (the turn's end, as OpenCode 1.18.33 writes it),
    /// with its text as a part. No tokens: the fake makes no model request.
    pub fn answer(&self, id: &str, text: &str) -> anyhow::Result<()> {
        let now = now_ms();
        let message = format!("msg_{}", &new_id()[4..]);
        let data = serde_json::json!({
            "role": "assistant", "time": {"created": now, "completed": now}, "finish": "stop",
            "modelID": "fake-agent", "providerID": "fake", "cost": 0,
            "tokens": {"input": 0, "output": 0, "reasoning": 0, "cache": {"write": 0, "read": 0}}
        });
        self.conn.execute(
            "INSERT INTO message (id, session_id, time_created, time_updated, data) VALUES (?1, ?2, ?3, ?3, ?4)",
            params![message, id, now, data.to_string()],
        )?;
        self.conn.execute(
            "INSERT INTO part (id, message_id, session_id, time_created, time_updated, data) VALUES (?1, ?2, ?3, ?4, ?4, ?5)",
            params![format!("prt_{}", &new_id()[4..]), message, id, now,
                    serde_json::json!({"type": "text", "text": text}).to_string()],
        )?;
        Ok(())
    }
}

impl Store {
    /// `--session FROM --fork`: a new conversation `new` in `directory`,
    /// titled `<FROM's title> (fork #N)`, with FROM's messages and parts
    /// copied under new ids at this time (as OpenCode 1.18.33 does).
    pub fn fork(&self, from: &str, new: &str, directory: &str) -> anyhow::Result<()> {
        let now = now_ms();
        let title: String =
            self.conn
                .query_row("SELECT title FROM session WHERE id = ?1", [from], |r| {
                    r.get(0)
                })?;
        let forks: i64 = self.conn.query_row(
            "SELECT count(*) FROM session WHERE title LIKE ?1",
            [format!("{title} (fork #%")],
            |r| r.get(0),
        )?;
        self.conn.execute(
            "INSERT INTO session (id, project_id, slug, directory, path, title, version, time_created, time_updated)
             VALUES (?1, 'global', 'fake-session', ?2, ?3, ?4, 'hangar-fake-agent', ?5, ?5)",
            params![new, directory, directory.trim_start_matches('/'),
                    format!("{title} (fork #{})", forks + 1), now],
        )?;
        let messages: Vec<(String, String)> = self
            .conn
            .prepare(
                "SELECT id, data FROM message WHERE session_id = ?1 ORDER BY time_created, id",
            )?
            .query_map([from], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect::<Result<_, _>>()?;
        for (old_message, data) in messages {
            let message = format!("msg_{}", &new_id()[4..]);
            self.conn.execute(
                "INSERT INTO message (id, session_id, time_created, time_updated, data) VALUES (?1, ?2, ?3, ?3, ?4)",
                params![message, new, now, data],
            )?;
            let parts: Vec<String> = self
                .conn
                .prepare("SELECT data FROM part WHERE message_id = ?1 ORDER BY time_created, id")?
                .query_map([&old_message], |r| r.get(0))?
                .collect::<Result<_, _>>()?;
            for part in parts {
                self.conn.execute(
                    "INSERT INTO part (id, message_id, session_id, time_created, time_updated, data) VALUES (?1, ?2, ?3, ?4, ?4, ?5)",
                    params![format!("prt_{}", &new_id()[4..]), message, new, now, part],
                )?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_prompt_creates_the_conversation_once_and_keeps_its_text() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("opencode").join("opencode.db")).unwrap();
        let id = new_id();
        assert!(id.starts_with("ses_") && id.len() == 30, "{id}");
        assert!(!store.has(&id).unwrap());
        store.user_prompt(&id, "/w", "hello").unwrap();
        store.user_prompt(&id, "/w", "again").unwrap();
        assert!(store.has(&id).unwrap());
        let n: i64 = store
            .conn
            .query_row("SELECT count(*) FROM session", [], |r| r.get(0))
            .unwrap();
        assert_eq!(n, 1);
        let texts: Vec<String> = store
            .conn
            .prepare("SELECT json_extract(data, '$.text') FROM part ORDER BY time_created, id")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(texts.len(), 2);
        assert!(texts.contains(&"hello".to_owned()));
    }

    #[test]
    fn a_fork_copies_the_conversation_under_a_new_id_and_leaves_it_alone() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("opencode.db")).unwrap();
        let from = new_id();
        store.user_prompt(&from, "/w", "hello").unwrap();
        let fork = new_id();
        store.fork(&from, &fork, "/w").unwrap();
        let count = |id: &str| -> i64 {
            store
                .conn
                .query_row(
                    "SELECT count(*) FROM part WHERE session_id = ?1",
                    [id],
                    |r| r.get(0),
                )
                .unwrap()
        };
        assert_eq!((count(&from), count(&fork)), (1, 1));
        let title: String = store
            .conn
            .query_row("SELECT title FROM session WHERE id = ?1", [&fork], |r| {
                r.get(0)
            })
            .unwrap();
        assert!(title.ends_with(" (fork #1)"), "{title}");
    }
}
