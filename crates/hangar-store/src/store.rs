//! Crash-safe SQLite persistence of the hangar [`Workspace`].
//!
//! One row per entity (see `schema.rs`), so a change writes only what
//! changed, and every [`Store::save`] is one transaction: it commits whole or
//! writes nothing.
//!
//! # Rule 5 by construction: a partial restore never overwrites a full save
//!
//! `save` diffs the workspace it is given against the last one it saved. If a
//! session present in the last save is missing from the new workspace and is
//! not named in `removed`, `save` refuses with
//! [`StoreError::UnexplainedDrop`] and writes nothing. Every intentional
//! removal (close, evict, prune at load) names its sessions. Because a
//! restore never edits the model (a failed spawn is runtime state in the
//! daemon), a partial restore cannot drop a record, and an empty or
//! half-built model can never silently replace a full one.
//!
//! # Opening never loses a file
//!
//! - A file written by a newer schema is checked read-only (header bytes,
//!   then a read-only connection) before anything else, and refused with
//!   [`StoreError::NewerSchema`]: it stays byte-for-byte unchanged.
//! - A damaged file (not a database, truncated, failing `PRAGMA quick_check`,
//!   a required table missing or misshapen) is moved aside, with its `-wal`,
//!   `-shm` and `-journal` companions, to `<path>.corrupt-<unix ms>`; the
//!   store starts from an empty workspace and says so in
//!   [`Opened::recovered`]. Errors that say nothing about the file's content
//!   (locked, permission denied, disk full) are returned, never "recovered".
//! - Rows whose JSON does not decode are skipped individually, but only after
//!   a consistent copy of the whole file was written to
//!   `<path>.backup-<unix ms>`; the skipped rows are listed in
//!   [`Recovery::skipped_rows`] and removed from the live file.
//! - The loaded workspace is repaired with `hangar_core::prune` (a hand-edited
//!   file is repaired on load, never propagated) and the repair is saved,
//!   naming the sessions it dropped.
//!
//! # Durability
//!
//! WAL with `synchronous=FULL`: with NORMAL, a WAL commit survives a process
//! crash but may be lost on power failure, and a change hangar has
//! acknowledged to a person (a close, a park) must not come back after a
//! reboot. Saves happen once per user-visible change, so one fsync each is
//! cheap.

use std::collections::BTreeSet;
use std::fs::{self, OpenOptions};
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use hangar_core::{
    BuriedRecord, ParkedRecord, PruneReport, SessionId, SessionMeta, Tab, Workspace,
};
use rusqlite::config::DbConfig;
use rusqlite::types::{Value as SqlValue, ValueRef};
use rusqlite::{Connection, ErrorCode, OpenFlags, OptionalExtension, Transaction, params};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::diff::{Digests, Fingerprint, LastSave, MapDiff, RowDigests, TabChange, WorkspaceDiff};
use crate::error::StoreError;
use crate::schema::{self, SUPPORTED_VERSION};
use crate::screen::{SavedScreen, Screens};

/// How long a statement waits for a lock held by another connection before
/// failing with "database is locked".
pub(crate) const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

const SQLITE_MAGIC: &[u8; 16] = b"SQLite format 3\0";

/// The page cache kept once the store is loaded, in KiB.
pub(crate) const AFTER_LOAD_CACHE_KIB: u32 = 256;

const KV_ACTIVE_TAB: &str = "active_tab";
const KV_DISPATCH: &str = "dispatch";
const KV_SETTINGS: &str = "settings";

/// The open store: one connection, and what `save` diffs against: the last
/// save, its keyed rows kept as fingerprints only (see `diff.rs`).
pub struct Store {
    pub(crate) conn: Connection,
    pub(crate) path: PathBuf,
    /// `None` between a first look and the end of its load
    /// (`first_look.rs`): a save then refuses, since the model it would be
    /// given lacks every session the first look did not read.
    pub(crate) last_saved: Option<LastSave>,
    /// The fingerprints of the session rows a first look read, to check that the
    /// full read found the same rows.
    pub(crate) first_look_rows: Digests,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("path", &self.path)
            .field(
                "sessions",
                &self.last_saved.as_ref().map(|l| l.sessions.len()),
            )
            .finish_non_exhaustive()
    }
}

/// The result of [`Store::open`].
#[derive(Debug)]
pub struct Opened {
    pub store: Store,
    /// The loaded workspace, already pruned and equal to what
    /// `store.load_saved()` reads back.
    pub workspace: Workspace,
    /// Set when the file was damaged: moved aside entirely, or some rows were
    /// skipped after a backup copy was made.
    pub recovered: Option<Recovery>,
    /// What pruning removed from the loaded workspace (already persisted).
    pub pruned: PruneReport,
}

/// A damaged store file was set aside; nothing was deleted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Recovery {
    /// Where the damaged file now is (moved aside), or, when only some rows
    /// were skipped, where the full copy of the original was written.
    pub moved_to: PathBuf,
    /// What was wrong, for the user.
    pub reason: String,
    /// Rows left out because they did not decode. Empty when the whole file
    /// was moved aside (the workspace then starts empty).
    pub skipped_rows: Vec<SkippedRow>,
}

/// One row that could not be decoded on load.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SkippedRow {
    pub table: &'static str,
    /// The row's key (session id, tab id, pin position or kv key).
    pub key: String,
    pub error: String,
}

/// How many rows a save wrote (inserted or updated) and deleted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SaveStats {
    pub written: usize,
    pub deleted: usize,
}

/// A child process a previous daemon recorded as live. After a daemon
/// SIGKILL the next start ends these, but only after checking that the pid's
/// current start time still equals `start_time` (a reused pid is never
/// killed).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordedProcess {
    pub session: SessionId,
    pub pid: u32,
    pub pgid: u32,
    /// Process start time as the daemon read it (on Linux, field 22 of
    /// `/proc/<pid>/stat`, in clock ticks since boot).
    pub start_time: u64,
}

impl Store {
    /// Open (or create) the store at `path`, load and prune the workspace.
    ///
    /// Creates the parent folder (0700) and the file (0600) if missing.
    pub fn open(path: &Path) -> Result<Opened, StoreError> {
        let path = path.to_path_buf();
        ensure_file(&path)?;
        if let Some(reason) = check_version_read_only(&path)? {
            return Self::open_after_moving_aside(path, reason);
        }
        match open_and_load(&path) {
            Ok(loaded) => Self::finish_open(path, loaded, None),
            Err(Failure::Corrupt(reason)) => Self::open_after_moving_aside(path, reason),
            Err(Failure::Fatal(e)) => Err(e),
        }
    }

    fn open_after_moving_aside(path: PathBuf, reason: String) -> Result<Opened, StoreError> {
        let (loaded, recovery) = start_fresh_after_moving_aside(&path, reason, open_and_load)?;
        Self::finish_open(path, loaded, Some(recovery))
    }

    fn finish_open(
        path: PathBuf,
        loaded: Loaded,
        mut recovered: Option<Recovery>,
    ) -> Result<Opened, StoreError> {
        let Loaded {
            mut conn,
            workspace,
            digests,
            skipped,
        } = loaded;
        if !skipped.is_empty() {
            recovered = Some(set_skipped_rows_aside(&mut conn, &path, skipped)?);
        }

        let (repaired, pruned) = hangar_core::prune(workspace);
        let (mut store, workspace) = if pruned.is_empty() {
            // `prune` left it exactly as loaded: nothing to write.
            let last_saved = LastSave::new(without_keyed_rows(&repaired), digests);
            let store = Store {
                conn,
                path,
                last_saved: Some(last_saved),
                first_look_rows: Digests::new(),
            };
            (store, repaired)
        } else {
            // Rare: read the file's own state again (cheaper than cloning
            // every load) so the repair is saved as a diff against it, naming
            // the sessions it dropped.
            let (as_loaded, digests, _) =
                load_workspace(&mut conn).map_err(sql_error(&path, "reload"))?;
            let removed: Vec<SessionId> = as_loaded
                .sessions
                .keys()
                .filter(|id| !repaired.sessions.contains_key(*id))
                .cloned()
                .collect();
            let mut store = Store {
                conn,
                path,
                last_saved: Some(LastSave::new(as_loaded, digests)),
                first_look_rows: Digests::new(),
            };
            store.save(&repaired, &removed)?;
            (store, repaired)
        };
        store.drop_orphan_screens()?;
        store.release_load_cache()?;
        Ok(Opened {
            workspace,
            store,
            recovered,
            pruned,
        })
    }

    /// Persist `ws`, writing only the rows that differ from the last save, in
    /// one transaction.
    ///
    /// `removed` names every session intentionally removed since the last
    /// save (closed, evicted, pruned). A session of the last save that is
    /// missing from `ws` and not named here makes the save fail with
    /// [`StoreError::UnexplainedDrop`] and write nothing. The screens and
    /// process records of removed sessions are deleted in the same
    /// transaction.
    pub fn save(&mut self, ws: &Workspace, removed: &[SessionId]) -> Result<SaveStats, StoreError> {
        self.save_with_screens(ws, removed, &Screens::new())
    }

    /// [`Store::save`], and in the same transaction the last screens of
    /// sessions of `ws` (an import brings a workspace and its screens: both
    /// are saved, or neither). A screen of a session that is not in `ws` is
    /// refused, since nothing would ever show or delete it.
    pub fn save_with_screens(
        &mut self,
        ws: &Workspace,
        removed: &[SessionId],
        screens: &Screens,
    ) -> Result<SaveStats, StoreError> {
        if let Some(id) = screens.keys().find(|id| !ws.sessions.contains_key(*id)) {
            return Err(StoreError::ScreenWithoutSession { id: id.clone() });
        }
        let Some(last_saved) = self.last_saved.as_mut() else {
            return Err(StoreError::NotLoaded {
                path: self.path.clone(),
            });
        };
        let diff = WorkspaceDiff::between(last_saved, ws);
        let removed: BTreeSet<&SessionId> = removed.iter().collect();
        let unexplained: Vec<SessionId> = diff
            .sessions
            .deletes
            .iter()
            .filter(|id| !removed.contains(id))
            .cloned()
            .collect();
        if !unexplained.is_empty() {
            return Err(StoreError::UnexplainedDrop { ids: unexplained });
        }
        let mut seen_tabs = BTreeSet::new();
        for tab in &ws.tabs {
            if !seen_tabs.insert(&tab.id) {
                return Err(StoreError::DuplicateTab { id: tab.id.clone() });
            }
        }
        let gone: Vec<&SessionId> = removed
            .into_iter()
            .filter(|id| !ws.sessions.contains_key(*id))
            .collect();
        if diff.is_empty() && gone.is_empty() && screens.is_empty() {
            return Ok(SaveStats::default());
        }

        let path = self.path.as_path();
        let tx = self
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(sql_error(path, "start saving the workspace to"))?;
        let mut writer = Writer {
            tx: &tx,
            path,
            stats: SaveStats::default(),
        };
        writer.write(&diff, &gone)?;
        writer.write_screens(screens)?;
        let stats = writer.stats;
        // Dropping `tx` without commit (on any `?` above) rolls it back.
        tx.commit()
            .map_err(sql_error(path, "commit the workspace to"))?;
        diff.apply_to(last_saved, ws);
        Ok(stats)
    }

    /// The workspace as of the last successful save (or load), read back
    /// from the file: the store keeps only fingerprints of its rows in memory.
    /// For the rare moment a caller must undo a refused change.
    pub fn load_saved(&mut self) -> Result<Workspace, StoreError> {
        let (ws, _, _) =
            load_workspace(&mut self.conn).map_err(sql_error(&self.path, "read back"))?;
        Ok(ws)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Remember the last screen of a session (replacing the previous one).
    pub fn save_screen(
        &mut self,
        id: &SessionId,
        screen: &[u8],
        now_ms: u64,
    ) -> Result<(), StoreError> {
        let now = to_i64(now_ms, "screen updated_ms", &self.path)?;
        self.conn
            .prepare_cached(
                "INSERT INTO screens (session, screen, updated_ms) VALUES (?1, ?2, ?3)
                 ON CONFLICT(session) DO UPDATE
                 SET screen = excluded.screen, updated_ms = excluded.updated_ms",
            )
            .and_then(|mut st| st.execute(params![id.as_str(), screen, now]))
            .map_err(sql_error(&self.path, "save a screen to"))?;
        Ok(())
    }

    /// The last screen saved for a session, if any.
    pub fn load_screen(&self, id: &SessionId) -> Result<Option<Vec<u8>>, StoreError> {
        self.conn
            .prepare_cached("SELECT screen FROM screens WHERE session = ?1")
            .and_then(|mut st| {
                st.query_row(params![id.as_str()], |row| row.get::<_, Vec<u8>>(0))
                    .optional()
            })
            .map_err(sql_error(&self.path, "load a screen from"))
    }

    /// Every saved screen, by session (what an export carries).
    pub fn screens(&self) -> Result<Screens, StoreError> {
        let mut st = self
            .conn
            .prepare_cached("SELECT session, screen, updated_ms FROM screens")
            .map_err(sql_error(&self.path, "load screens from"))?;
        let rows = st
            .query_map([], |row| {
                Ok((
                    row.get::<_, String>(0)?,
                    row.get::<_, Vec<u8>>(1)?,
                    row.get::<_, i64>(2)?,
                ))
            })
            .map_err(sql_error(&self.path, "load screens from"))?;
        let mut screens = Screens::new();
        for row in rows {
            let (id, screen, updated) = row.map_err(sql_error(&self.path, "load screens from"))?;
            screens.insert(
                SessionId::new(id),
                SavedScreen {
                    screen,
                    // A negative time can only come from a hand-edited file.
                    updated_ms: u64::try_from(updated).unwrap_or(0),
                },
            );
        }
        Ok(screens)
    }

    /// Record a live child process of a session (replacing any previous
    /// record for it). A pid or pgid of 0 is refused: ending "group 0" would
    /// signal the daemon's own process group.
    pub fn record_process(
        &mut self,
        id: &SessionId,
        pid: u32,
        pgid: u32,
        start_time: u64,
    ) -> Result<(), StoreError> {
        for (what, value) in [("pid", pid), ("pgid", pgid)] {
            if value == 0 || value > i32::MAX as u32 {
                return Err(StoreError::OutOfRange {
                    what,
                    value: value.into(),
                    path: self.path.clone(),
                });
            }
        }
        let start = to_i64(start_time, "process start_time", &self.path)?;
        self.conn
            .prepare_cached(
                "INSERT INTO processes (session, pid, start_time, pgid) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT(session) DO UPDATE
                 SET pid = excluded.pid, start_time = excluded.start_time, pgid = excluded.pgid",
            )
            .and_then(|mut st| st.execute(params![id.as_str(), pid, start, pgid]))
            .map_err(sql_error(&self.path, "record a process in"))?;
        Ok(())
    }

    /// Forget the process record of a session (its process was reaped).
    pub fn forget_process(&mut self, id: &SessionId) -> Result<(), StoreError> {
        self.conn
            .prepare_cached("DELETE FROM processes WHERE session = ?1")
            .and_then(|mut st| st.execute(params![id.as_str()]))
            .map_err(sql_error(&self.path, "forget a process in"))?;
        Ok(())
    }

    /// Every recorded process, ordered by session id. Rows whose pid or pgid
    /// is not a positive 32-bit number (a hand-edited file) are never
    /// returned: signalling pid 0 or -1 would hit the daemon's own group or
    /// every process of the user.
    pub fn recorded_processes(&self) -> Result<Vec<RecordedProcess>, StoreError> {
        let mut st = self
            .conn
            .prepare_cached("SELECT session, pid, pgid, start_time FROM processes ORDER BY session")
            .map_err(sql_error(&self.path, "read recorded processes from"))?;
        let rows = st
            .query_map([], |row| {
                Ok((
                    row.get::<_, SqlValue>(0)?,
                    row.get::<_, SqlValue>(1)?,
                    row.get::<_, SqlValue>(2)?,
                    row.get::<_, SqlValue>(3)?,
                ))
            })
            .map_err(sql_error(&self.path, "read recorded processes from"))?;
        let mut out = Vec::new();
        for row in rows {
            let (session, pid, pgid, start) =
                row.map_err(sql_error(&self.path, "read recorded processes from"))?;
            let positive_u32 = |v: &SqlValue| match v {
                SqlValue::Integer(n) if *n > 0 => u32::try_from(*n).ok(),
                _ => None,
            };
            let (Ok(session), Some(pid), Some(pgid), SqlValue::Integer(start)) = (
                text_of(session),
                positive_u32(&pid),
                positive_u32(&pgid),
                start,
            ) else {
                continue;
            };
            let Ok(start_time) = u64::try_from(start) else {
                continue;
            };
            out.push(RecordedProcess {
                session: SessionId(session),
                pid,
                pgid,
                start_time,
            });
        }
        Ok(out)
    }

    /// After the load: give back the page cache the whole-file check and
    /// load filled (2 MB for 10,000 sessions, SQLite's default cap), and keep
    /// the cap small from now on. What follows reads and writes a few rows
    /// at a time; the daemon's memory should not carry the load's pages.
    pub(crate) fn release_load_cache(&mut self) -> Result<(), StoreError> {
        self.conn
            .execute_batch(&format!(
                "PRAGMA cache_size = -{AFTER_LOAD_CACHE_KIB}; PRAGMA shrink_memory;"
            ))
            .map_err(sql_error(&self.path, "release the load's page cache of"))
    }

    /// Screens of sessions that no longer exist (left by a crash between a
    /// `save_screen` and the save that removed the session).
    pub(crate) fn drop_orphan_screens(&mut self) -> Result<(), StoreError> {
        let any: bool = self
            .conn
            .query_row(
                "SELECT EXISTS (SELECT 1 FROM screens WHERE session NOT IN (SELECT id FROM sessions))",
                [],
                |row| row.get(0),
            )
            .map_err(sql_error(&self.path, "check screens in"))?;
        if any {
            self.conn
                .execute(
                    "DELETE FROM screens WHERE session NOT IN (SELECT id FROM sessions)",
                    [],
                )
                .map_err(sql_error(&self.path, "delete orphan screens in"))?;
        }
        Ok(())
    }
}

pub(crate) fn sql_error<'p>(
    path: &'p Path,
    action: &'static str,
) -> impl Fn(rusqlite::Error) -> StoreError + 'p {
    move |source| StoreError::Sqlite {
        action,
        path: path.to_path_buf(),
        source,
    }
}

fn to_i64(value: u64, what: &'static str, path: &Path) -> Result<i64, StoreError> {
    i64::try_from(value).map_err(|_| StoreError::OutOfRange {
        what,
        value,
        path: path.to_path_buf(),
    })
}

/// Writes a [`WorkspaceDiff`] inside one transaction.
struct Writer<'a> {
    tx: &'a Transaction<'a>,
    path: &'a Path,
    stats: SaveStats,
}

impl Writer<'_> {
    fn write(&mut self, diff: &WorkspaceDiff<'_>, gone: &[&SessionId]) -> Result<(), StoreError> {
        self.write_map(
            "sessions",
            &diff.sessions,
            "INSERT INTO sessions (id, data) VALUES (?1, ?2)
             ON CONFLICT(id) DO UPDATE SET data = excluded.data",
            "DELETE FROM sessions WHERE id = ?1",
        )?;
        for change in &diff.tabs {
            match change {
                TabChange::Move { position, id } => {
                    self.stats.written += self.exec(
                        "UPDATE tabs SET position = ?2 WHERE id = ?1",
                        params![id.as_str(), *position as i64],
                    )?;
                }
                TabChange::Upsert { position, tab } => {
                    let data = self.encode(|| format!("tab {}", tab.id), tab)?;
                    self.stats.written += self.exec(
                        "INSERT INTO tabs (id, position, data) VALUES (?1, ?2, ?3)
                         ON CONFLICT(id) DO UPDATE
                         SET position = excluded.position, data = excluded.data",
                        params![tab.id.as_str(), *position as i64, data],
                    )?;
                }
            }
        }
        for id in &diff.tab_deletes {
            self.stats.deleted +=
                self.exec("DELETE FROM tabs WHERE id = ?1", params![id.as_str()])?;
        }
        self.write_map(
            "parked",
            &diff.parked,
            "INSERT INTO parked (session, data) VALUES (?1, ?2)
             ON CONFLICT(session) DO UPDATE SET data = excluded.data",
            "DELETE FROM parked WHERE session = ?1",
        )?;
        self.write_map(
            "buried",
            &diff.buried,
            "INSERT INTO buried (session, data) VALUES (?1, ?2)
             ON CONFLICT(session) DO UPDATE SET data = excluded.data",
            "DELETE FROM buried WHERE session = ?1",
        )?;
        if let Some(pins) = diff.pins {
            self.stats.deleted += self.exec("DELETE FROM pins", params![])?;
            for (position, id) in pins.iter().enumerate() {
                self.stats.written += self.exec(
                    "INSERT INTO pins (position, session) VALUES (?1, ?2)",
                    params![position as i64, id.as_str()],
                )?;
            }
        }
        match diff.active_tab {
            Some(Some(tab)) => self.put_kv(KV_ACTIVE_TAB, tab)?,
            Some(None) => {
                self.stats.deleted +=
                    self.exec("DELETE FROM kv WHERE key = ?1", params![KV_ACTIVE_TAB])?;
            }
            None => {}
        }
        if let Some(dispatch) = diff.dispatch {
            self.put_kv(KV_DISPATCH, dispatch)?;
        }
        if let Some(settings) = diff.settings {
            self.put_kv(KV_SETTINGS, settings)?;
        }
        // The last screen and process record of a removed session go with it.
        for id in gone {
            self.stats.deleted += self.exec(
                "DELETE FROM screens WHERE session = ?1",
                params![id.as_str()],
            )?;
            self.stats.deleted += self.exec(
                "DELETE FROM processes WHERE session = ?1",
                params![id.as_str()],
            )?;
        }
        Ok(())
    }

    fn write_screens(&mut self, screens: &Screens) -> Result<(), StoreError> {
        for (id, saved) in screens {
            let updated = to_i64(saved.updated_ms, "screen updated_ms", self.path)?;
            self.stats.written += self.exec(
                "INSERT INTO screens (session, screen, updated_ms) VALUES (?1, ?2, ?3)
                 ON CONFLICT(session) DO UPDATE
                 SET screen = excluded.screen, updated_ms = excluded.updated_ms",
                params![id.as_str(), saved.screen, updated],
            )?;
        }
        Ok(())
    }

    fn exec(&self, sql: &str, params: impl rusqlite::Params) -> Result<usize, StoreError> {
        self.tx
            .prepare_cached(sql)
            .and_then(|mut st| st.execute(params))
            .map_err(sql_error(self.path, "save the workspace to"))
    }

    fn encode<T: Serialize>(
        &self,
        what: impl FnOnce() -> String,
        value: &T,
    ) -> Result<String, StoreError> {
        serde_json::to_string(value).map_err(|source| StoreError::Encode {
            what: what(),
            path: self.path.to_path_buf(),
            source,
        })
    }

    fn write_map<V: Serialize>(
        &mut self,
        table: &str,
        diff: &MapDiff<'_, V>,
        upsert: &str,
        delete: &str,
    ) -> Result<(), StoreError> {
        for (id, value, _) in &diff.upserts {
            let data = self.encode(|| format!("{table} row {id}"), value)?;
            self.stats.written += self.exec(upsert, params![id.as_str(), data])?;
        }
        for id in &diff.deletes {
            self.stats.deleted += self.exec(delete, params![id.as_str()])?;
        }
        Ok(())
    }

    fn put_kv<T: Serialize>(&mut self, key: &str, value: &T) -> Result<(), StoreError> {
        let data = self.encode(|| key.to_owned(), value)?;
        self.stats.written += self.exec(
            "INSERT INTO kv (key, value) VALUES (?1, ?2)
             ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            params![key, data],
        )?;
        Ok(())
    }
}

// ---------------------------------------------------------------------------
// Opening and loading
// ---------------------------------------------------------------------------

/// Why opening stopped: the file's content is damaged (move it aside), or
/// something else went wrong (report it; never touch the file).
pub(crate) enum Failure {
    Corrupt(String),
    Fatal(StoreError),
}

struct Loaded {
    conn: Connection,
    workspace: Workspace,
    digests: RowDigests,
    skipped: Vec<Skipped>,
}

pub(crate) struct Skipped {
    pub(crate) rowid: i64,
    pub(crate) row: SkippedRow,
}

pub(crate) fn classify<'p>(
    path: &'p Path,
    action: &'static str,
) -> impl Fn(rusqlite::Error) -> Failure + 'p {
    move |e| match e.sqlite_error_code() {
        Some(ErrorCode::DatabaseCorrupt | ErrorCode::NotADatabase) => Failure::Corrupt(format!(
            "SQLite said \"{e}\" while trying to {action} the file"
        )),
        _ => Failure::Fatal(StoreError::Sqlite {
            action,
            path: path.to_path_buf(),
            source: e,
        }),
    }
}

pub(crate) fn ensure_file(path: &Path) -> Result<(), StoreError> {
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        let mut builder = fs::DirBuilder::new();
        builder.recursive(true);
        #[cfg(unix)]
        std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
        builder.create(parent).map_err(|source| StoreError::Io {
            action: "create the folder",
            path: parent.to_path_buf(),
            source,
        })?;
    }
    let mut options = OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    match options.open(path) {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(()),
        Err(source) => Err(StoreError::Io {
            action: "create the store file",
            path: path.to_path_buf(),
            source,
        }),
    }
}

enum Header {
    Empty,
    NotSqlite(String),
    Sqlite { user_version: u32 },
}

fn read_header(path: &Path) -> Result<Header, StoreError> {
    let io_error = |source| StoreError::Io {
        action: "read the store file",
        path: path.to_path_buf(),
        source,
    };
    let mut header = Vec::with_capacity(100);
    fs::File::open(path)
        .and_then(|f| f.take(100).read_to_end(&mut header))
        .map_err(io_error)?;
    Ok(if header.is_empty() {
        Header::Empty
    } else if header.len() < 100 {
        Header::NotSqlite(format!(
            "the file is {} bytes long, shorter than an SQLite header",
            header.len()
        ))
    } else if &header[..16] != SQLITE_MAGIC {
        Header::NotSqlite("the file is not an SQLite database".to_owned())
    } else {
        Header::Sqlite {
            user_version: u32::from_be_bytes([header[60], header[61], header[62], header[63]]),
        }
    })
}

/// Refuse a newer schema before anything could write to the file: first from
/// the header bytes, then through a read-only connection (the WAL may hold a
/// newer version than the main file's header). Returns a reason when the file
/// is damaged.
pub(crate) fn check_version_read_only(path: &Path) -> Result<Option<String>, StoreError> {
    let newer = |found: u32| StoreError::NewerSchema {
        path: path.to_path_buf(),
        found,
        supported: SUPPORTED_VERSION,
    };
    match read_header(path)? {
        Header::Empty => Ok(None),
        Header::NotSqlite(reason) => Ok(Some(reason)),
        Header::Sqlite { user_version } if user_version > SUPPORTED_VERSION => {
            Err(newer(user_version))
        }
        Header::Sqlite { .. } => {
            let check = || -> rusqlite::Result<i64> {
                let ro = Connection::open_with_flags(
                    path,
                    OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
                )?;
                ro.busy_timeout(BUSY_TIMEOUT)?;
                // A read-only connection cannot checkpoint anyway; this says
                // so explicitly.
                ro.set_db_config(DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, true)?;
                ro.pragma_query_value(None, "user_version", |row| row.get(0))
            };
            match check() {
                Ok(v) if v > i64::from(SUPPORTED_VERSION) => {
                    Err(newer(u32::try_from(v).unwrap_or(u32::MAX)))
                }
                Ok(_) => Ok(None),
                Err(e) => match classify(path, "read the schema version of")(e) {
                    Failure::Corrupt(reason) => Ok(Some(reason)),
                    Failure::Fatal(e) => Err(e),
                },
            }
        }
    }
}

/// Move a damaged file aside and open a fresh one in its place with `open`:
/// what every way of opening does once the file's content is found damaged.
pub(crate) fn start_fresh_after_moving_aside<T>(
    path: &Path,
    reason: String,
    open: impl Fn(&Path) -> Result<T, Failure>,
) -> Result<(T, Recovery), StoreError> {
    let moved_to = move_aside(path)?;
    ensure_file(path)?;
    let opened = match open(path) {
        Ok(opened) => opened,
        Err(Failure::Fatal(e)) => return Err(e),
        Err(Failure::Corrupt(again)) => {
            return Err(StoreError::Io {
                action: "create a fresh store at",
                path: path.to_path_buf(),
                source: io::Error::other(format!(
                    "the new file is reported damaged too ({again}); the old one was moved to {}",
                    moved_to.display()
                )),
            });
        }
    };
    let recovery = Recovery {
        reason: format!(
            "the store file was damaged ({reason}); it was moved to {} and hangar started \
             with an empty workspace",
            moved_to.display()
        ),
        moved_to,
        skipped_rows: Vec::new(),
    };
    Ok((opened, recovery))
}

fn open_and_load(path: &Path) -> Result<Loaded, Failure> {
    let mut conn = open_checked(path)?;
    let (workspace, digests, skipped) =
        load_workspace(&mut conn).map_err(classify(path, "load"))?;
    Ok(Loaded {
        conn,
        workspace,
        digests,
        skipped,
    })
}

/// Open the file read-write, refuse a newer schema, check the whole file
/// (`PRAGMA quick_check`), enable WAL, migrate and check every table's
/// shape: everything before reading a row.
pub(crate) fn open_checked(path: &Path) -> Result<Connection, Failure> {
    let mut conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(classify(path, "open"))?;
    conn.busy_timeout(BUSY_TIMEOUT)
        .map_err(classify(path, "configure"))?;

    let version: i64 = conn
        .pragma_query_value(None, "user_version", |row| row.get(0))
        .map_err(classify(path, "read the schema version of"))?;
    if version > i64::from(SUPPORTED_VERSION) {
        // Another process upgraded the file since the read-only check.
        return Err(Failure::Fatal(StoreError::NewerSchema {
            path: path.to_path_buf(),
            found: u32::try_from(version).unwrap_or(u32::MAX),
            supported: SUPPORTED_VERSION,
        }));
    }
    let version = u32::try_from(version)
        .map_err(|_| Failure::Corrupt(format!("negative schema version {version}")))?;

    // quick_check rather than integrity_check: it finds the same page-level
    // damage (truncation, broken b-trees) in O(N) without cross-checking
    // index contents, which keeps opening a 10,000-session store fast.
    let problems: Vec<String> = {
        let mut st = conn
            .prepare("PRAGMA quick_check")
            .map_err(classify(path, "check"))?;
        st.query_map([], |row| row.get::<_, String>(0))
            .and_then(|rows| rows.collect::<rusqlite::Result<Vec<_>>>())
            .map_err(classify(path, "check"))?
    };
    if problems.first().is_none_or(|p| p != "ok") {
        let shown = problems
            .iter()
            .take(3)
            .cloned()
            .collect::<Vec<_>>()
            .join("; ");
        return Err(Failure::Corrupt(format!("integrity check failed: {shown}")));
    }

    let _mode: String = conn
        .query_row("PRAGMA journal_mode = WAL", [], |row| row.get(0))
        .map_err(classify(path, "enable WAL on"))?;
    conn.pragma_update(None, "synchronous", "FULL")
        .map_err(classify(path, "configure"))?;

    if version < SUPPORTED_VERSION {
        schema::migrate(&mut conn, version).map_err(classify(path, "migrate the schema of"))?;
    }
    for (table, sql) in schema::SHAPE_CHECKS {
        if let Err(e) = conn.prepare(sql) {
            return match classify(path, "check the shape of")(e) {
                Failure::Fatal(StoreError::Sqlite { source, .. })
                    if source.sqlite_error_code() == Some(ErrorCode::Unknown) =>
                {
                    Err(Failure::Corrupt(format!(
                        "table {table} is missing or has the wrong columns ({source})"
                    )))
                }
                other => Err(other),
            };
        }
    }
    Ok(conn)
}

fn text_of(value: SqlValue) -> Result<String, String> {
    match value {
        SqlValue::Text(s) => Ok(s),
        SqlValue::Blob(b) => String::from_utf8(b).map_err(|e| format!("not UTF-8 text: {e}")),
        SqlValue::Null => Err("expected text, found NULL".to_owned()),
        SqlValue::Integer(n) => Err(format!("expected text, found the integer {n}")),
        SqlValue::Real(x) => Err(format!("expected text, found the number {x}")),
    }
}

fn text_ref(value: ValueRef<'_>) -> Result<&str, String> {
    match value {
        ValueRef::Text(b) | ValueRef::Blob(b) => {
            std::str::from_utf8(b).map_err(|e| format!("not UTF-8 text: {e}"))
        }
        ValueRef::Null => Err("expected text, found NULL".to_owned()),
        ValueRef::Integer(n) => Err(format!("expected text, found the integer {n}")),
        ValueRef::Real(x) => Err(format!("expected text, found the number {x}")),
    }
}

/// A row key as shown in a report, whatever its type.
pub(crate) fn key_text(value: ValueRef<'_>) -> String {
    match value {
        ValueRef::Text(b) | ValueRef::Blob(b) => String::from_utf8_lossy(b).into_owned(),
        ValueRef::Null => "NULL".to_owned(),
        ValueRef::Integer(n) => n.to_string(),
        ValueRef::Real(x) => x.to_string(),
    }
}

fn decode_value<T: DeserializeOwned>(data: ValueRef<'_>) -> Result<T, String> {
    serde_json::from_str(text_ref(data)?).map_err(|e| format!("JSON does not decode: {e}"))
}

/// Decode a `(key, JSON data)` row; `own_key` says which key the record
/// itself names, which must match the row's.
pub(crate) fn decode<T: DeserializeOwned>(
    key: ValueRef<'_>,
    data: ValueRef<'_>,
    own_key: impl Fn(&T) -> &str,
) -> Result<T, String> {
    let key = text_ref(key).map_err(|e| format!("key: {e}"))?;
    let value: T = decode_value(data)?;
    let inner = own_key(&value);
    if inner != key {
        return Err(format!(
            "the id inside the record ({inner:?}) differs from the row key ({key:?})"
        ));
    }
    Ok(value)
}

/// Call `f(rowid, key, value)` for each row of a three-column query, without
/// copying the values out of SQLite.
pub(crate) fn each_row(
    tx: &Transaction<'_>,
    sql: &str,
    mut f: impl FnMut(i64, ValueRef<'_>, ValueRef<'_>),
) -> rusqlite::Result<()> {
    let mut st = tx.prepare(sql)?;
    let mut rows = st.query([])?;
    while let Some(row) = rows.next()? {
        f(row.get(0)?, row.get_ref(1)?, row.get_ref(2)?);
    }
    Ok(())
}

/// Read every table in one read transaction (a consistent snapshot).
/// Undecodable rows are collected, not fatal.
/// Beside the workspace, the fingerprint of each keyed row's record.
pub(crate) fn load_workspace(
    conn: &mut Connection,
) -> rusqlite::Result<(Workspace, RowDigests, Vec<Skipped>)> {
    let tx = conn.transaction()?;
    let mut ws = Workspace::default();
    // Collected first: building a BTreeMap from (nearly) sorted pairs is a
    // bulk build, much cheaper than one insert per row.
    let (mut sessions, mut parked, mut buried) = (Vec::new(), Vec::new(), Vec::new());
    let mut digests = RowDigests::default();
    let (mut session_digests, mut parked_digests, mut buried_digests) =
        (Vec::new(), Vec::new(), Vec::new());
    let mut skipped = Vec::new();
    let mut skip = |table: &'static str, rowid: i64, key: ValueRef<'_>, error: String| {
        skipped.push(Skipped {
            rowid,
            row: SkippedRow {
                table,
                key: key_text(key),
                error,
            },
        })
    };
    let skip = &mut skip;

    each_row(
        &tx,
        "SELECT rowid, id, data FROM sessions",
        |rowid, key, data| match decode(key, data, |m: &SessionMeta| m.id.as_str()) {
            Ok(meta) => {
                session_digests.push((meta.id.clone(), meta.fingerprint()));
                sessions.push((meta.id.clone(), meta));
            }
            Err(e) => skip("sessions", rowid, key, e),
        },
    )?;
    read_tabs(&tx, &mut ws, skip)?;
    each_row(
        &tx,
        "SELECT rowid, session, data FROM parked",
        |rowid, key, data| match decode(key, data, |p: &ParkedRecord| p.session.as_str()) {
            Ok(rec) => {
                parked_digests.push((rec.session.clone(), rec.fingerprint()));
                parked.push((rec.session.clone(), rec));
            }
            Err(e) => skip("parked", rowid, key, e),
        },
    )?;
    each_row(
        &tx,
        "SELECT rowid, session, data FROM buried",
        |rowid, key, data| match decode(key, data, |b: &BuriedRecord| b.session.as_str()) {
            Ok(rec) => {
                buried_digests.push((rec.session.clone(), rec.fingerprint()));
                buried.push((rec.session.clone(), rec));
            }
            Err(e) => skip("buried", rowid, key, e),
        },
    )?;
    each_row(
        &tx,
        "SELECT rowid, position, session FROM pins ORDER BY position",
        |rowid, position, session| match text_ref(session) {
            Ok(id) => ws.pins.push(SessionId::new(id)),
            Err(e) => skip("pins", rowid, position, e),
        },
    )?;
    read_kv(&tx, &mut ws, skip)?;
    tx.commit()?;
    ws.sessions = sessions.into_iter().collect();
    ws.parked = parked.into_iter().collect();
    ws.buried = buried.into_iter().collect();
    digests.sessions = session_digests.into_iter().collect();
    digests.parked = parked_digests.into_iter().collect();
    digests.buried = buried_digests.into_iter().collect();
    Ok((ws, digests, skipped))
}

/// What a reader does with a row that does not decode: (table, rowid, key,
/// error).
pub(crate) type Skip<'s> = dyn FnMut(&'static str, i64, ValueRef<'_>, String) + 's;

/// The `tabs` table into `ws.tabs`, in order.
pub(crate) fn read_tabs(
    tx: &Transaction<'_>,
    ws: &mut Workspace,
    skip: &mut Skip<'_>,
) -> rusqlite::Result<()> {
    each_row(
        tx,
        "SELECT rowid, id, data FROM tabs ORDER BY position, id",
        |rowid, key, data| match decode(key, data, |t: &Tab| t.id.as_str()) {
            Ok(tab) => ws.tabs.push(tab),
            Err(e) => skip("tabs", rowid, key, e),
        },
    )
}

/// The `kv` table: the active tab, dispatch and settings of `ws`.
pub(crate) fn read_kv(
    tx: &Transaction<'_>,
    ws: &mut Workspace,
    skip: &mut Skip<'_>,
) -> rusqlite::Result<()> {
    each_row(
        tx,
        "SELECT rowid, key, value FROM kv",
        |rowid, key, value| {
            let result = match text_ref(key) {
                Ok(KV_ACTIVE_TAB) => decode_value(value).map(|t| ws.active_tab = Some(t)),
                Ok(KV_DISPATCH) => decode_value(value).map(|d| ws.dispatch = d),
                Ok(KV_SETTINGS) => decode_value(value).map(|s| ws.settings = s),
                // Written by nothing this version knows; harmless to keep.
                _ => Ok(()),
            };
            if let Err(e) = result {
                skip("kv", rowid, key, e);
            }
        },
    )
}

/// The small parts of a workspace (tabs, pins, active tab, dispatch,
/// settings), without its keyed tables.
pub(crate) fn without_keyed_rows(ws: &Workspace) -> Workspace {
    Workspace {
        tabs: ws.tabs.clone(),
        active_tab: ws.active_tab.clone(),
        pins: ws.pins.clone(),
        dispatch: ws.dispatch.clone(),
        settings: ws.settings.clone(),
        ..Workspace::default()
    }
}

/// Back up the whole file, then remove the rows that did not decode: what
/// `status` says of them, and where the copy is.
pub(crate) fn set_skipped_rows_aside(
    conn: &mut Connection,
    path: &Path,
    skipped: Vec<Skipped>,
) -> Result<Recovery, StoreError> {
    let backup = backup_copy(conn, path)?;
    delete_skipped_rows(conn, path, &skipped)?;
    let skipped_rows: Vec<SkippedRow> = skipped.into_iter().map(|s| s.row).collect();
    let listed = skipped_rows
        .iter()
        .map(|s| format!("{} {:?}: {}", s.table, s.key, s.error))
        .collect::<Vec<_>>()
        .join("; ");
    Ok(Recovery {
        reason: format!(
            "{} row(s) of the store could not be decoded and were left out ({listed}); \
             a full copy of the original file was written to {}",
            skipped_rows.len(),
            backup.display()
        ),
        moved_to: backup,
        skipped_rows,
    })
}

pub(crate) fn delete_skipped_rows(
    conn: &mut Connection,
    path: &Path,
    skipped: &[Skipped],
) -> Result<(), StoreError> {
    let err = sql_error(path, "remove undecodable rows from");
    let tx = conn.transaction().map_err(&err)?;
    for s in skipped {
        // The table name comes from a fixed list, never from the file.
        let sql = format!("DELETE FROM {} WHERE rowid = ?1", s.row.table);
        tx.execute(&sql, params![s.rowid]).map_err(&err)?;
    }
    tx.commit().map_err(&err)
}

fn unix_ms() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0)
}

/// `<path><infix><unix ms>`, with a counter appended if that name is taken.
fn unused_sibling(path: &Path, infix: &str) -> PathBuf {
    let base = format!("{}{infix}{}", path.display(), unix_ms());
    let mut candidate = PathBuf::from(&base);
    let mut n = 1;
    while fs::symlink_metadata(&candidate).is_ok() {
        candidate = PathBuf::from(format!("{base}-{n}"));
        n += 1;
    }
    candidate
}

fn companion(path: &Path, suffix: &str) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(suffix);
    PathBuf::from(s)
}

/// Move a damaged store file (and its companions, so the moved copy still
/// opens with its WAL) to `<path>.corrupt-<unix ms>`. Never deletes.
pub(crate) fn move_aside(path: &Path) -> Result<PathBuf, StoreError> {
    let target = unused_sibling(path, ".corrupt-");
    fs::rename(path, &target).map_err(|source| StoreError::Io {
        action: "move the damaged store file aside",
        path: path.to_path_buf(),
        source,
    })?;
    for suffix in ["-wal", "-shm", "-journal"] {
        let from = companion(path, suffix);
        if fs::symlink_metadata(&from).is_ok() {
            fs::rename(&from, companion(&target, suffix)).map_err(|source| StoreError::Io {
                action: "move the damaged store file aside",
                path: from.clone(),
                source,
            })?;
        }
    }
    Ok(target)
}

/// A consistent copy of the whole database (WAL included) at
/// `<path>.backup-<unix ms>`, created 0600 like the store itself.
pub(crate) fn backup_copy(conn: &Connection, path: &Path) -> Result<PathBuf, StoreError> {
    let target = unused_sibling(path, ".backup-");
    let mut options = OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options.open(&target).map_err(|source| StoreError::Io {
        action: "create a backup copy at",
        path: target.clone(),
        source,
    })?;
    let target_str = target.to_string_lossy().into_owned();
    conn.execute("VACUUM INTO ?1", params![target_str])
        .map_err(sql_error(path, "write a backup copy of"))?;
    Ok(target)
}
