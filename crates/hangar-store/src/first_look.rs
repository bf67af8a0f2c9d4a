//! The daemon's two-phase open: a first look at what the restore forks, the
//! rest read after the forks.
//!
//! With 10,000 persisted sessions, reading, decoding, digesting and pruning
//! every row is most of what a start did before its first fork. A restore
//! forks only the visible panes (DESIGN.md rule 4), so:
//!
//! 1. [`Store::open_first_look`] does everything [`Store::open`] does before
//!    reading rows (the read-only version check, `PRAGMA quick_check` of the
//!    whole file, WAL, migrations, the shape checks), and the same moving
//!    aside of a damaged file; then it reads the tabs, the `kv` rows (active
//!    tab, dispatch, settings) and the session row of each pane leaf, by its
//!    primary key. Nothing else.
//! 2. [`read_rest`] reads every table again through a connection of its own
//!    (no lock of the caller needed), digests the rows and prunes, as
//!    [`Store::open`] does.
//! 3. [`Store::finish_loading`] installs that, with what the first forks
//!    changed in the visible sessions, into the store: from then on it saves.
//!
//! # Why the whole-file check stays before the fork
//!
//! A file `quick_check` refuses is moved aside and the daemon starts empty:
//! nothing is forked from it. SQLite's `quick_check(TABLE)` checks one table
//! and its indices only, without the whole-file accounting of pages (the
//! freelist, pages used twice or never), so a check of the pages the first
//! look reads would let a file the full check refuses fork its panes. The
//! whole-file check is a few milliseconds at 10,000 sessions (one pass over
//! the pages); the rows' decoding, digests and pruning are what phase two
//! moves after the fork.
//!
//! # Never a save from the first look's model
//!
//! Until [`Store::finish_loading`], `save` refuses with
//! [`StoreError::NotLoaded`]: the caller's model holds only the visible
//! panes' sessions, and a save of it would drop every other one.
//!
//! # The first look reads the rows the full read finds
//!
//! The first look finds a pane's row through the primary key's index, the
//! full read by scanning the table; `quick_check` does not compare an index
//! with its table. [`FullLoad::differing_rows`] lists every pane session whose
//! row the first look read differently from the scan, so the caller can say
//! so (a pane the first look missed shows in the full plan); with an
//! undamaged index it is empty. When the two disagree (a row read
//! differently, or a pane's row the first look did not find), the index is
//! rebuilt from the table (`REINDEX`, [`FullLoad::reindexed`]) before
//! anything else reads or writes through it: saves find rows by it (an
//! upsert it misses would add a second row for a session), and so does the
//! removal of orphan screens (a screen it misses would be deleted).
//!
//! # A rest that cannot be read
//!
//! When phase two's read fails because of the file's content (damaged after
//! the check, edited by hand), the panes are already running: the file is
//! set aside whole and a fresh store is written from everything that can
//! still be read (`salvage.rs`), instead of the one-phase open's empty
//! start. A read that fails for another reason (permission, I/O, a lock)
//! is returned: the file may be good, and nothing may be saved without it.

use std::path::{Path, PathBuf};

use hangar_core::{PruneReport, SessionId, SessionMeta, Tab, Workspace};
use rusqlite::types::ValueRef;
use rusqlite::{Connection, OpenFlags, OptionalExtension, params};

use crate::diff::{Digests, Fingerprint, LastSave, RowDigests};
use crate::error::StoreError;
use crate::salvage::{Damage, is_content_error, salvage_read, salvage_runtime_rows};
use crate::store::{
    AFTER_LOAD_CACHE_KIB, BUSY_TIMEOUT, Failure, Recovery, Skipped, Store, check_version_read_only,
    classify, decode, ensure_file, load_workspace, move_aside, open_checked, read_kv, read_tabs,
    set_skipped_rows_aside, sql_error, start_fresh_after_moving_aside, without_keyed_rows,
};

/// The result of [`Store::open_first_look`].
#[derive(Debug)]
pub struct FirstLook {
    /// The store; it refuses to save until [`Store::finish_loading`].
    pub store: Store,
    /// The tabs, the active tab, dispatch and settings as stored, and the
    /// metadata of every pane leaf's session whose row decodes. No parked,
    /// buried or pinned records, no other session. Not pruned.
    pub workspace: Workspace,
    /// Set when the file was damaged and moved aside: the first look is then
    /// of a fresh, empty store.
    pub recovered: Option<Recovery>,
}

/// Everything in the file, read by [`read_rest`] for
/// [`Store::finish_loading`].
pub struct RestOfStore {
    /// The last save as the file holds it (what `save` will diff against).
    last_save: LastSave,
    /// The whole workspace, pruned.
    workspace: Workspace,
    pruned: PruneReport,
    skipped: Vec<Skipped>,
    /// Set when the full read failed on the file's content: `workspace` is
    /// then what could be salvaged (no tabs or `kv`: the first look's are
    /// used), and the file is rebuilt by [`Store::finish_loading`].
    damage: Option<Damage>,
}

impl RestOfStore {
    /// The whole workspace as read and pruned, before what the first forks
    /// changed is added (for what the caller computes off its lock).
    pub fn workspace(&self) -> &Workspace {
        &self.workspace
    }
}

impl std::fmt::Debug for RestOfStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RestOfStore")
            .field("sessions", &self.workspace.sessions.len())
            .field("skipped", &self.skipped.len())
            .field("damage", &self.damage)
            .finish_non_exhaustive()
    }
}

/// The result of [`Store::finish_loading`].
#[derive(Debug)]
pub struct FullLoad {
    /// The whole workspace, pruned, with what the first forks changed in the
    /// visible sessions; what `store.load_saved()` reads back once the
    /// caller saves it.
    pub workspace: Workspace,
    /// Set when some rows did not decode (a backup copy was written first).
    pub recovered: Option<Recovery>,
    /// What pruning removed (already persisted).
    pub pruned: PruneReport,
    /// Pane sessions whose row the first look read differently from the
    /// full read: only a damaged index does that.
    pub differing_rows: Vec<SessionId>,
    /// Set when the first look and the full read disagreed about a pane's
    /// row (read differently, or not found by its key): whether the index of
    /// session ids was then rebuilt from the table, or why it could not be.
    pub reindexed: Option<Result<(), String>>,
    /// Whether the workspace differs from the file in what the first forks
    /// changed (a minted provider id, the dangerous flag): the caller saves
    /// it.
    pub changed_since_first_look: bool,
}

impl Store {
    /// Phase one of the daemon's start (see the module doc): check the whole
    /// file as [`Store::open`] does, then read only the tabs, the `kv` rows
    /// and each pane leaf's session row.
    pub fn open_first_look(path: &Path) -> Result<FirstLook, StoreError> {
        let path = path.to_path_buf();
        ensure_file(&path)?;
        let damaged = match check_version_read_only(&path)? {
            Some(reason) => Some(reason),
            None => match first_look_at(&path) {
                Ok(look) => return look.into_first_look(path, None),
                Err(Failure::Corrupt(reason)) => Some(reason),
                Err(Failure::Fatal(e)) => return Err(e),
            },
        };
        let reason = damaged.unwrap_or_default();
        let (look, recovery) = start_fresh_after_moving_aside(&path, reason, first_look_at)?;
        look.into_first_look(path, Some(recovery))
    }

    /// Whether the whole file is loaded (always, except between
    /// [`Store::open_first_look`] and [`Store::finish_loading`]).
    pub fn is_loaded(&self) -> bool {
        self.last_saved.is_some()
    }

    /// Phase two's end: take what [`read_rest`] read, and `model`, the
    /// caller's first-look model with whatever the first forks changed in
    /// its sessions (only sessions are taken from it: nothing else can
    /// change before the full model exists). Skipped rows are backed up and
    /// removed and a repair is saved, as [`Store::open`] does; the store
    /// saves from now on.
    pub fn finish_loading(
        &mut self,
        rest: RestOfStore,
        model: &Workspace,
    ) -> Result<FullLoad, StoreError> {
        if self.last_saved.is_some() {
            return Err(StoreError::Io {
                action: "finish loading",
                path: self.path.clone(),
                source: std::io::Error::other("the store was already loaded"),
            });
        }
        if let Some(damage) = rest.damage {
            return self.rebuild_from_salvage(rest.workspace, rest.skipped, damage, model);
        }
        let RestOfStore {
            last_save,
            mut workspace,
            mut pruned,
            skipped,
            damage: _,
        } = rest;

        // The first look's rows against the full read's.
        let differing_rows: Vec<SessionId> = self
            .first_look_rows
            .iter()
            .filter(|(id, digest)| last_save.sessions.get(*id) != Some(*digest))
            .map(|(id, _)| id.clone())
            .collect();

        // What the first forks changed: a visible session whose JSON now
        // differs from the row the first look read.
        let mut changed = false;
        for (id, meta) in &model.sessions {
            let digest = meta.fingerprint();
            if self.first_look_rows.get(id) != Some(&digest)
                && let Some(slot) = workspace.sessions.get_mut(id)
            {
                *slot = meta.clone();
                changed = true;
            }
        }
        if changed {
            // Prune again over what the forks changed, as a change made
            // after a full load would be (rare: a minted id, a flag).
            let (repaired, more) = hangar_core::prune(workspace);
            workspace = repaired;
            pruned.merge(more);
        }

        // A pane whose row the table holds and the first look did not find.
        let missed_a_row = workspace.tabs.iter().flat_map(Tab::leaves).any(|id| {
            workspace.sessions.contains_key(&id) && !self.first_look_rows.contains_key(&id)
        });
        let reindexed = (missed_a_row || !differing_rows.is_empty()).then(|| {
            // Fails on a table that holds one id twice (the unique index
            // refuses it): the rows stay as they are, and the caller says so.
            self.conn
                .execute_batch("REINDEX sessions")
                .map_err(|e| e.to_string())
        });

        let removed: Vec<SessionId> = last_save
            .sessions
            .keys()
            .filter(|id| !workspace.sessions.contains_key(*id))
            .cloned()
            .collect();
        self.last_saved = Some(last_save);
        self.first_look_rows = Digests::new();

        let recovered = if skipped.is_empty() {
            None
        } else {
            Some(set_skipped_rows_aside(&mut self.conn, &self.path, skipped)?)
        };
        if !pruned.is_empty() {
            // The repair, naming the sessions it dropped, with the forks'
            // changes if any.
            self.save(&workspace, &removed)?;
            changed = false;
        }
        self.drop_orphan_screens()?;
        self.release_load_cache()?;
        Ok(FullLoad {
            workspace,
            recovered,
            pruned,
            differing_rows,
            reindexed,
            changed_since_first_look: changed,
        })
    }
}

/// Phase two's read (see the module doc): every table of the store at
/// `path` through a read-only connection of its own, digested and pruned.
/// Needs no lock of the caller: the first look's connection only writes
/// process records and screens meanwhile, which this does not read.
///
/// A read the file's content fails gives what can still be read instead,
/// for [`Store::finish_loading`] to rebuild the file from; any other
/// failure is an error.
pub fn read_rest(path: &Path) -> Result<RestOfStore, StoreError> {
    let open = || -> rusqlite::Result<Connection> {
        let conn = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )?;
        conn.busy_timeout(BUSY_TIMEOUT)?;
        // One pass over the rows needs no page cache to speak of (SQLite's
        // default is 2 MB, which the daemon's memory would keep).
        conn.pragma_update(None, "cache_size", -i64::from(AFTER_LOAD_CACHE_KIB))?;
        Ok(conn)
    };
    let error = sql_error(path, "load the rest of");
    let mut conn = open().map_err(&error)?;
    let (raw, digests, skipped) = match load_workspace(&mut conn) {
        Ok(read) => read,
        Err(e) if is_content_error(&e) => {
            // Started again on a connection of its own: the failed read's
            // transaction may still be open on this one.
            drop(conn);
            let mut conn = open().map_err(&error)?;
            let (salvaged, skipped, lost) = salvage_read(&mut conn);
            let reason = format!("SQLite said \"{e}\" while reading the rest of the file");
            return Ok(RestOfStore {
                last_save: LastSave::default(),
                workspace: salvaged,
                pruned: PruneReport::default(),
                skipped,
                damage: Some(Damage { reason, lost }),
            });
        }
        Err(e) => return Err(error(e)),
    };
    let last_save = LastSave::new(without_keyed_rows(&raw), digests);
    let (workspace, pruned) = hangar_core::prune(raw);
    Ok(RestOfStore {
        last_save,
        workspace,
        pruned,
        skipped,
        damage: None,
    })
}

impl Store {
    /// Phase two's end when the rest could not be read whole (see the
    /// module doc and `salvage.rs`): the first look's tabs, settings and
    /// panes (as the forks left them) with every salvaged row, pruned; the
    /// damaged file set aside whole; a fresh file written with that, the
    /// last screens and the process records still readable.
    fn rebuild_from_salvage(
        &mut self,
        salvaged: Workspace,
        skipped: Vec<Skipped>,
        damage: Damage,
        model: &Workspace,
    ) -> Result<FullLoad, StoreError> {
        let Damage { reason, mut lost } = damage;
        let mut workspace = Workspace {
            tabs: model.tabs.clone(),
            active_tab: model.active_tab.clone(),
            dispatch: model.dispatch.clone(),
            settings: model.settings.clone(),
            ..salvaged
        };
        for (id, meta) in &model.sessions {
            workspace.sessions.insert(id.clone(), meta.clone());
        }
        let (workspace, pruned) = hangar_core::prune(workspace);

        // Read through the store's own connection: the forks record their
        // processes there until now.
        let (mut screens, processes) = salvage_runtime_rows(&mut self.conn, &mut lost);
        screens.retain(|id, _| workspace.sessions.contains_key(id));
        let moved_to = self.replace_damaged_file()?;
        self.first_look_rows = Digests::new();
        // A fresh file: every row is new to it.
        self.last_saved = Some(LastSave::new(Workspace::default(), RowDigests::default()));
        self.save_with_screens(&workspace, &[], &screens)?;
        for p in processes
            .iter()
            .filter(|p| workspace.sessions.contains_key(&p.session))
        {
            self.record_process(&p.session, p.pid, p.pgid, p.start_time)?;
        }
        self.release_load_cache()?;

        let skipped_rows: Vec<_> = skipped.into_iter().map(|s| s.row).collect();
        let mut left_out: Vec<String> = lost;
        left_out.extend(
            skipped_rows
                .iter()
                .map(|s| format!("{} {:?}: {}", s.table, s.key, s.error)),
        );
        let left_out = if left_out.is_empty() {
            String::new()
        } else {
            format!("; left out: {}", left_out.join("; "))
        };
        let recovered = Recovery {
            reason: format!(
                "the rest of the store could not be read after its panes started ({reason}); \
                 the file was moved to {} and a new one written with every row that could be \
                 read: {} session(s){left_out}",
                moved_to.display(),
                workspace.sessions.len(),
            ),
            moved_to,
            skipped_rows,
        };
        Ok(FullLoad {
            workspace,
            recovered: Some(recovered),
            pruned,
            differing_rows: Vec::new(),
            reindexed: None,
            changed_since_first_look: false,
        })
    }

    /// Close the connection to a damaged file without writing to it (no
    /// checkpoint: its WAL goes aside with it), move it and its companions
    /// aside, and open a fresh file in its place. Returns where it went.
    fn replace_damaged_file(&mut self) -> Result<PathBuf, StoreError> {
        let path = self.path.clone();
        let placeholder = Connection::open_in_memory().map_err(sql_error(&path, "replace"))?;
        let old = std::mem::replace(&mut self.conn, placeholder);
        old.set_db_config(
            rusqlite::config::DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE,
            true,
        )
        .map_err(sql_error(&path, "close"))?;
        old.close().map_err(|(_, e)| sql_error(&path, "close")(e))?;
        let moved_to = move_aside(&path)?;
        ensure_file(&path)?;
        self.conn = match open_checked(&path) {
            Ok(conn) => conn,
            Err(Failure::Fatal(e)) => return Err(e),
            Err(Failure::Corrupt(again)) => {
                return Err(StoreError::Io {
                    action: "create a fresh store at",
                    path,
                    source: std::io::Error::other(format!(
                        "the new file is reported damaged too ({again}); the old one was moved to {}",
                        moved_to.display()
                    )),
                });
            }
        };
        Ok(moved_to)
    }
}

/// What a first look read, before it becomes a [`FirstLook`].
pub(crate) struct Look {
    conn: Connection,
    workspace: Workspace,
    rows: Digests,
}

impl Look {
    fn into_first_look(
        self,
        path: PathBuf,
        recovered: Option<Recovery>,
    ) -> Result<FirstLook, StoreError> {
        let mut store = Store {
            conn: self.conn,
            path,
            last_saved: None,
            first_look_rows: self.rows,
        };
        // The whole-file check filled the page cache; given back now, the
        // full load's allocations reuse that memory instead of adding to it.
        store.release_load_cache()?;
        Ok(FirstLook {
            store,
            workspace: self.workspace,
            recovered,
        })
    }
}

/// Check the file and read what the restore forks from: the tabs, the `kv`
/// rows, and each pane leaf's session row. A row that does not decode is
/// left out here (the full read sets it aside, and prune drops its leaf).
fn first_look_at(path: &Path) -> Result<Look, Failure> {
    let mut conn = open_checked(path)?;
    let read = |conn: &mut Connection| -> rusqlite::Result<(Workspace, Digests)> {
        let tx = conn.transaction()?;
        let mut ws = Workspace::default();
        let mut ignore = |_: &'static str, _: i64, _: ValueRef<'_>, _: String| {};
        read_tabs(&tx, &mut ws, &mut ignore)?;
        read_kv(&tx, &mut ws, &mut ignore)?;
        let mut rows = Digests::new();
        {
            let mut st = tx.prepare("SELECT rowid, id, data FROM sessions WHERE id = ?1")?;
            let leaves: Vec<SessionId> = ws.tabs.iter().flat_map(Tab::leaves).collect();
            for leaf in leaves {
                if ws.sessions.contains_key(&leaf) {
                    continue;
                }
                let found = st
                    .query_row(params![leaf.as_str()], |row| {
                        let (key, data) = (row.get_ref(1)?, row.get_ref(2)?);
                        Ok(decode(key, data, |m: &SessionMeta| m.id.as_str())
                            .ok()
                            .map(|meta| {
                                let digest = meta.fingerprint();
                                (meta, digest)
                            }))
                    })
                    .optional()?;
                // A damaged index could point at another session's row.
                if let Some(Some((meta, digest))) =
                    found.filter(|f| f.as_ref().is_some_and(|(meta, _)| meta.id == leaf))
                {
                    rows.insert(meta.id.clone(), digest);
                    ws.sessions.insert(meta.id.clone(), meta);
                }
            }
        }
        tx.commit()?;
        Ok((ws, rows))
    };
    let (workspace, rows) = read(&mut conn).map_err(classify(path, "read the panes of"))?;
    Ok(Look {
        conn,
        workspace,
        rows,
    })
}
