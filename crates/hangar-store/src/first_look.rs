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
//! undamaged index it is empty.

use std::path::{Path, PathBuf};

use hangar_core::{PruneReport, SessionId, SessionMeta, Tab, Workspace};
use rusqlite::types::ValueRef;
use rusqlite::{Connection, OpenFlags, OptionalExtension, params};

use crate::diff::{Digests, Fingerprint, LastSave};
use crate::error::StoreError;
use crate::store::{
    AFTER_LOAD_CACHE_KIB, BUSY_TIMEOUT, Failure, Recovery, Skipped, Store, check_version_read_only,
    classify, decode, ensure_file, load_workspace, open_checked, read_kv, read_tabs,
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
        let RestOfStore {
            last_save,
            mut workspace,
            mut pruned,
            skipped,
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
            changed_since_first_look: changed,
        })
    }
}

/// Phase two's read (see the module doc): every table of the store at
/// `path` through a read-only connection of its own, digested and pruned.
/// Needs no lock of the caller: the first look's connection only writes
/// process records and screens meanwhile, which this does not read.
pub fn read_rest(path: &Path) -> Result<RestOfStore, StoreError> {
    let read = || -> rusqlite::Result<_> {
        let mut conn = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )?;
        conn.busy_timeout(BUSY_TIMEOUT)?;
        // One pass over the rows needs no page cache to speak of (SQLite's
        // default is 2 MB, which the daemon's memory would keep).
        conn.pragma_update(None, "cache_size", -i64::from(AFTER_LOAD_CACHE_KIB))?;
        load_workspace(&mut conn)
    };
    let (raw, digests, skipped) = read().map_err(sql_error(path, "load the rest of"))?;
    let last_save = LastSave::new(without_keyed_rows(&raw), digests);
    let (workspace, pruned) = hangar_core::prune(raw);
    Ok(RestOfStore {
        last_save,
        workspace,
        pruned,
        skipped,
    })
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
