//! OpenCode's conversation id (issue 16, defect 5): learnt from its SQLite
//! database so a woken session resumes with `--session <ses_...>`.
//!
//! OpenCode 1.18 keeps conversations in `$XDG_DATA_HOME/opencode/opencode.db`
//! (tables `session`, `message`, `part`; observed on 1.18.33) and writes no
//! transcript file. The proof that a conversation is the session's own is
//! `hangar_core::opencode_identity`'s: it holds a prompt hangar typed into
//! this session. The database is opened read-only and only looked at while
//! prompts typed since the process started are waiting to be matched.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use hangar_core::ledger::Observation;
use hangar_core::opencode_identity::{OpencodeConversation, OwnSession, own_conversation};
use hangar_core::{IdSource, Provider, SessionId};

use crate::Daemon;
use crate::pty::LiveProcess;

/// Prompts kept per session for matching; older ones are dropped.
const KEPT_PROMPTS: usize = 16;

/// The prompts hangar typed into each session, with when (ms).
#[derive(Default)]
pub struct TypedLog {
    by_session: Mutex<HashMap<SessionId, Vec<(u64, String)>>>,
}

impl TypedLog {
    pub fn note(&self, id: &SessionId, text: &str) {
        let mut map = self.by_session.lock().unwrap_or_else(|e| e.into_inner());
        let list = map.entry(id.clone()).or_default();
        list.push((crate::now_ms(), text.to_owned()));
        let extra = list.len().saturating_sub(KEPT_PROMPTS);
        list.drain(..extra);
    }

    /// Prompts typed at or after `since_ms`.
    pub fn since(&self, id: &SessionId, since_ms: u64) -> Vec<String> {
        let map = self.by_session.lock().unwrap_or_else(|e| e.into_inner());
        map.get(id)
            .map(|l| {
                l.iter()
                    .filter(|(at, _)| *at >= since_ms)
                    .map(|(_, t)| t.clone())
                    .collect()
            })
            .unwrap_or_default()
    }

    pub fn forget(&self, id: &SessionId) {
        self.by_session
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(id);
    }
}

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

/// Top-level conversations in `cwd` created at or after `since_ms`, with
/// their user messages' text.
pub fn read_conversations(
    db: &Path,
    cwd: &str,
    since_ms: u64,
) -> Result<Vec<OpencodeConversation>, rusqlite::Error> {
    let conn = rusqlite::Connection::open_with_flags(
        db,
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    // OpenCode writes in WAL mode; a short wait rides out its commits.
    conn.busy_timeout(std::time::Duration::from_millis(250))?;
    let mut sessions = conn.prepare(
        "SELECT id, directory, time_created FROM session \
         WHERE directory = ?1 AND time_created >= ?2 AND parent_id IS NULL",
    )?;
    let mut parts = conn.prepare(
        "SELECT p.data FROM part p JOIN message m ON m.id = p.message_id \
         WHERE p.session_id = ?1 AND json_extract(m.data, '$.role') = 'user'",
    )?;
    let rows: Vec<(String, String, i64)> = sessions
        .query_map(rusqlite::params![cwd, since_ms as i64], |r| {
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

impl Daemon {
    /// Keeps a prompt hangar typed into an opencode session, for matching.
    pub fn note_typed(&self, id: &SessionId, text: &str) {
        let is_opencode = self.sessions.provider_of(id) == Some(Provider::Opencode);
        if is_opencode {
            self.typed.note(id, text);
        }
    }

    /// For an opencode session: while `live` is its process, match the
    /// conversations in OpenCode's database against the prompts hangar
    /// typed, and record the session's own one.
    pub fn watch_opencode_identity(self: &Arc<Self>, id: SessionId, live: Arc<LiveProcess>) {
        let is_opencode = self.sessions.provider_of(&id) == Some(Provider::Opencode);
        if !is_opencode {
            return;
        }
        let Some(db) = database_path(&super::discovery::env_var) else {
            return;
        };
        let started_ms = crate::now_ms();
        let daemon = self.clone();
        tokio::spawn(async move {
            let mut exit = live.exit_watch();
            loop {
                let exited = tokio::select! {
                    _ = tokio::time::sleep(super::POLL) => false,
                    _ = exit.wait_for(|e| e.is_some()) => true,
                };
                let current = daemon
                    .sessions
                    .process(&id)
                    .is_some_and(|p| Arc::ptr_eq(&p, &live));
                // One last look once the process is gone or replaced: a
                // prompt sent just before a hibernate must still count.
                daemon.match_opencode_once(&id, &db, started_ms).await;
                if exited || !current {
                    return;
                }
            }
        });
    }

    async fn match_opencode_once(self: &Arc<Self>, id: &SessionId, db: &Path, started_ms: u64) {
        let typed = self.typed.since(id, started_ms);
        if typed.is_empty() || !db.is_file() {
            return;
        }
        let facts = self.sessions.read(|st| {
            let meta = st.ws.sessions.get(id)?;
            let claimed: Vec<String> = st
                .ws
                .sessions
                .iter()
                .filter(|(o, m)| *o != id && m.provider == Provider::Opencode)
                .filter_map(|(_, m)| m.durable_provider_id().map(str::to_owned))
                .collect();
            Some((super::discovery::canonical_cwd(&meta.cwd), claimed))
        });
        let Some((cwd, claimed)) = facts else {
            self.typed.forget(id);
            return;
        };
        let db = db.to_path_buf();
        let dir = cwd.clone();
        let read =
            tokio::task::spawn_blocking(move || read_conversations(&db, &dir, started_ms)).await;
        let conversations = match read {
            Ok(Ok(c)) => c,
            Ok(Err(e)) => {
                tracing::debug!("cannot read opencode's database for {id}: {e}");
                return;
            }
            Err(e) => {
                tracing::warn!("opencode database reader for {id} failed: {e}");
                return;
            }
        };
        let me = OwnSession {
            cwd: &cwd,
            started_ms,
            typed: &typed,
        };
        let Some(own) = own_conversation(&conversations, &me, &|c| claimed.iter().any(|h| h == c))
        else {
            return;
        };
        let observed = Observation {
            id: own.id.clone(),
            source: IdSource::Transcript,
            cwd: Some(own.directory.clone()),
        };
        self.record_provider_id(id, &observed, &cwd);
    }
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
        let got = read_conversations(&db, "/w", 1000).unwrap();
        assert_eq!(
            got,
            vec![OpencodeConversation {
                id: "ses_a".into(),
                directory: "/w".into(),
                created_ms: 2000,
                user_texts: vec!["hello opencode".into()],
            }]
        );
        assert!(read_conversations(&db, "/elsewhere", 0).unwrap().is_empty());
    }

    #[test]
    fn the_typed_log_keeps_recent_prompts_per_session() {
        let log = TypedLog::default();
        let a = SessionId::from("a");
        for i in 0..20 {
            log.note(&a, &format!("p{i}"));
        }
        let kept = log.since(&a, 0);
        assert_eq!(kept.len(), KEPT_PROMPTS);
        assert_eq!(kept.last().map(String::as_str), Some("p19"));
        assert!(log.since(&SessionId::from("b"), 0).is_empty());
        log.forget(&a);
        assert!(log.since(&a, 0).is_empty());
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
