//! OpenCode's conversation id (issue 16, defect 5): learnt from its SQLite
//! database so a woken session resumes with `--session <ses_...>`.
//!
//! OpenCode 1.18 keeps conversations in `$XDG_DATA_HOME/opencode/opencode.db`
//! (tables `session`, `message`, `part`; observed on 1.18.33) and writes no
//! transcript file. The proof that a conversation is the session's own is
//! `hangar_core::opencode_identity`'s: it holds a prompt hangar typed into
//! this session. The database (read by hangar-providers'
//! `opencode::database`) is only looked at while prompts typed since the
//! process started are waiting to be matched.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

use hangar_core::ledger::Observation;
use hangar_core::opencode_identity::{OwnSession, own_conversation};
use hangar_core::{IdSource, SessionId};
use hangar_providers::opencode::database::{database_path, read_conversations};
use hangar_providers::transcript::discovery;

use super::Identity;
use crate::pty::LiveProcess;

/// Prompts kept per session for matching; older ones are dropped.
const KEPT_PROMPTS: usize = 16;

/// The prompts hangar typed into each session, with when (wall clock ms).
#[derive(Default)]
pub struct TypedLog {
    by_session: Mutex<HashMap<SessionId, Vec<(u64, String)>>>,
}

impl TypedLog {
    pub fn note(&self, id: &SessionId, text: &str, now_ms: u64) {
        let mut map = self.by_session.lock().unwrap_or_else(|e| e.into_inner());
        let list = map.entry(id.clone()).or_default();
        list.push((now_ms, text.to_owned()));
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

/// The size and modification time of OpenCode's database and its
/// write-ahead log: what a write by OpenCode changes and a read by hangar
/// does not (a reader only touches the `-shm` index, through its mapping).
#[derive(Debug, PartialEq, Eq)]
struct DatabaseStamp([Option<(u64, std::time::SystemTime)>; 2]);

impl DatabaseStamp {
    fn of(db: &Path) -> DatabaseStamp {
        let stamp = |p: &Path| {
            let m = std::fs::metadata(p).ok()?;
            Some((m.len(), m.modified().ok()?))
        };
        let mut wal = db.as_os_str().to_owned();
        wal.push("-wal");
        DatabaseStamp([stamp(db), stamp(Path::new(&wal))])
    }
}

impl Identity {
    /// Keeps a prompt hangar typed into an opencode session, for matching.
    pub fn note_typed(&self, id: &SessionId, text: &str) {
        let is_opencode = self
            .sessions
            .provider_of(id)
            .is_some_and(|p| hangar_providers::adapter(&p).conversation_in_database());
        if is_opencode {
            self.typed.note(id, text, self.os.wall_ms());
        }
    }

    /// For an opencode session: while `live` is its process, match the
    /// conversations in OpenCode's database against the prompts hangar
    /// typed, and record the session's own one.
    /// `started_ms`: the wall clock just before the process was spawned
    /// (OpenCode's `time_created` is its wall clock; a `--fork` writes its
    /// copy at once, maybe before this watch starts).
    pub fn watch_opencode_identity(
        self: &Arc<Self>,
        id: SessionId,
        live: Arc<LiveProcess>,
        started_ms: u64,
    ) {
        let is_opencode = self
            .sessions
            .provider_of(&id)
            .is_some_and(|p| hangar_providers::adapter(&p).conversation_in_database());
        if !is_opencode {
            return;
        }
        // A sandboxed OpenCode keeps its database in the session's own
        // data folder (bound where `$XDG_DATA_HOME/opencode` is inside).
        let sandboxed = self.sessions.meta(&id).and_then(|m| {
            let dir = m.sandbox?;
            let folders = hangar_providers::adapter(&m.provider).sandbox_state();
            hangar_core::sandbox::state_dir_for_var(folders, &dir, "XDG_DATA_HOME")
        });
        let db = match sandboxed {
            Some(data) => std::path::PathBuf::from(data).join("opencode.db"),
            None => match database_path(&discovery::env_var) {
                Some(db) => db,
                None => return,
            },
        };
        let daemon = self.clone();
        tokio::spawn(async move {
            // A pane forked from a start's first look waits for every
            // session (see `watch_identity`).
            daemon.sessions.full_model().await;
            let mut exit = live.exit_watch();
            // The database and its write-ahead log change in their folder
            // when OpenCode records a prompt: nothing to look at before.
            let mut files = daemon.files.subscribe();
            files.watch(db.parent().map(Path::to_path_buf).into_iter().collect());
            let mut looks = Looks::default();
            let mut last_look: Option<tokio::time::Instant> = None;
            loop {
                let exited = tokio::select! {
                    _ = files.changed(super::POLL) => false,
                    // No change of the files may follow a look that failed
                    // or came too soon.
                    _ = tokio::time::sleep(super::POLL), if looks.retrying() => false,
                    _ = exit.wait_for(|e| e.is_some()) => true,
                };
                let current = daemon
                    .sessions
                    .process(&id)
                    .is_some_and(|p| Arc::ptr_eq(&p, &live));
                let ending = exited || !current;
                if !ending && let Some(at) = last_look {
                    // An agent busy writing its conversation is looked at
                    // no more often than a transcript is (`POLL`).
                    tokio::time::sleep_until(at + super::POLL).await;
                }
                // Taken before the read: a write during it is a change the
                // next wake looks at.
                let seen = (
                    DatabaseStamp::of(&db),
                    daemon.typed.since(&id, started_ms).len(),
                );
                // One last look once the process is gone or replaced: a
                // prompt sent just before a hibernate must still count.
                if ending || looks.due(&seen) {
                    last_look = Some(tokio::time::Instant::now());
                    let look = daemon.match_opencode_once(&id, &db, started_ms).await;
                    looks.done(seen, look);
                }
                if ending {
                    return;
                }
            }
        });
    }

    async fn match_opencode_once(
        self: &Arc<Self>,
        id: &SessionId,
        db: &Path,
        started_ms: u64,
    ) -> Look {
        let typed = self.typed.since(id, started_ms);
        if typed.is_empty() || !db.is_file() {
            return Look::Done;
        }
        let facts = self
            .sessions
            .claimed_ids(id)
            .map(|(cwd, claimed)| (discovery::canonical_cwd(&cwd), claimed));
        let Some((cwd, claimed)) = facts else {
            self.typed.forget(id);
            return Look::Done;
        };
        let db = db.to_path_buf();
        let dir = cwd.clone();
        let current = self
            .sessions
            .meta(id)
            .and_then(|m| m.durable_provider_id().map(str::to_owned));
        let current_id = current.clone();
        let read = tokio::task::spawn_blocking(move || {
            read_conversations(&db, &dir, started_ms, current_id.as_deref())
        })
        .await;
        let conversations = match read {
            Ok(Ok(c)) => c,
            Ok(Err(e)) => {
                tracing::info!("cannot read opencode's database for {id} (looking again): {e}");
                return Look::Failed;
            }
            Err(e) => {
                tracing::warn!("opencode database reader for {id} failed (looking again): {e}");
                return Look::Failed;
            }
        };
        let me = OwnSession {
            cwd: &cwd,
            started_ms,
            typed: &typed,
            current: current.as_deref(),
        };
        let Some(own) = own_conversation(&conversations, &me, &|c| claimed.iter().any(|h| h == c))
        else {
            return Look::Unmatched;
        };
        let observed = Observation {
            id: own.id.clone(),
            source: IdSource::Transcript,
            cwd: Some(own.directory.clone()),
        };
        self.record_provider_id(id, &observed, &cwd);
        Look::Done
    }
}

/// When the watch reads the database again. Reading it opens (and closes)
/// its `-shm` and `-wal` for writing, which the folder watch reports: a
/// look at the same files and prompts would wake itself without end.
#[derive(Default)]
struct Looks {
    /// What the last look saw: the database's files and the prompts typed.
    seen: Option<(DatabaseStamp, usize)>,
    /// The last look could not read the database (OpenCode mid-commit, a
    /// lock held past the busy wait): the next one must, files changed or not.
    failed: bool,
    /// Looks in a row that read the database and found no conversation
    /// holding this session's prompts yet, since its last prompt.
    unmatched: u32,
}

/// How many looks on the timer an unmatched prompt gets (about 20 s at
/// `POLL`). OpenCode's write of a prompt may land in the same clock tick
/// and at the same file size as the write the last look saw (the stamp's
/// time is the kernel's coarse one), so no change of the stamp is promised;
/// bounded, so a prompt that never reached OpenCode costs nothing for long.
const UNMATCHED_LOOKS: u32 = 30;

impl Looks {
    fn due(&self, now: &(DatabaseStamp, usize)) -> bool {
        self.retrying() || self.seen.as_ref() != Some(now)
    }

    /// Whether the next look is taken on the timer, the files changed or not.
    fn retrying(&self) -> bool {
        self.failed || (self.unmatched > 0 && self.unmatched < UNMATCHED_LOOKS)
    }

    fn done(&mut self, seen: (DatabaseStamp, usize), look: Look) {
        let prompts_before = self.seen.as_ref().map(|(_, typed)| *typed);
        if prompts_before != Some(seen.1) {
            self.unmatched = 0;
        }
        self.failed = look == Look::Failed;
        self.unmatched = match look {
            Look::Unmatched => self.unmatched.saturating_add(1),
            Look::Done => 0,
            Look::Failed => self.unmatched,
        };
        self.seen = Some(seen);
    }
}

/// How one look at OpenCode's database went.
#[derive(Debug, PartialEq, Eq)]
enum Look {
    /// Read (or nothing to look for).
    Done,
    /// The database could not be read; a later look must read it.
    Failed,
    /// Read, and no conversation holds this session's prompts yet.
    Unmatched,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_look_that_could_not_read_the_database_is_taken_again_with_nothing_changed() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("opencode.db");
        std::fs::write(&db, b"x").unwrap();
        let stamp = || (DatabaseStamp::of(&db), 1);
        let mut looks = Looks::default();
        assert!(looks.due(&stamp()), "the first look is due");
        looks.done(stamp(), Look::Failed);
        assert!(looks.due(&stamp()), "a failed look is taken again");
        looks.done(stamp(), Look::Done);
        assert!(!looks.due(&stamp()), "the same files and prompts: no look");
        assert!(looks.due(&(DatabaseStamp::of(&db), 2)), "a new prompt");
        std::fs::write(&db, b"xy").unwrap();
        assert!(looks.due(&stamp()), "the database changed");
    }

    #[test]
    fn a_look_that_found_no_conversation_is_taken_again_a_bounded_number_of_times() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("opencode.db");
        std::fs::write(&db, b"x").unwrap();
        let stamp = |prompts| (DatabaseStamp::of(&db), prompts);
        let mut looks = Looks::default();
        for _ in 1..UNMATCHED_LOOKS {
            looks.done(stamp(1), Look::Unmatched);
            assert!(looks.due(&stamp(1)), "nothing changed, taken again");
        }
        looks.done(stamp(1), Look::Unmatched);
        assert!(!looks.due(&stamp(1)), "given up until something changes");
        assert!(looks.due(&stamp(2)), "a new prompt");
        looks.done(stamp(2), Look::Unmatched);
        assert!(looks.retrying(), "a new prompt gets its own looks");
        looks.done(stamp(2), Look::Done);
        assert!(!looks.due(&stamp(2)), "found: no look until a change");
    }

    #[test]
    fn the_typed_log_keeps_recent_prompts_per_session() {
        let log = TypedLog::default();
        let a = SessionId::from("a");
        for i in 0..20 {
            log.note(&a, &format!("p{i}"), i);
        }
        let kept = log.since(&a, 0);
        assert_eq!(kept.len(), KEPT_PROMPTS);
        assert_eq!(kept.last().map(String::as_str), Some("p19"));
        assert!(log.since(&SessionId::from("b"), 0).is_empty());
        log.forget(&a);
        assert!(log.since(&a, 0).is_empty());
    }
}
