//! The daemon's two-phase open (`first_look.rs`): a first look that reads only
//! what the visible panes need, a store that refuses to save until the rest
//! is loaded, the rest loaded with what the first forks changed, a
//! damaged file moved aside before anything is read from it, and a rest
//! damaged after the first look salvaged into a fresh file.

use std::fs;
use std::path::{Path, PathBuf};

use hangar_core::fixtures::{large_workspace, session_id};
use hangar_core::restore_plan::first_forks;
use hangar_core::{IdSource, ProviderSessionId, RestorePlan, SessionId, Workspace};
use hangar_store::{Store, StoreError, read_rest};
use hangar_testkit::sqlite::{leaves_of, tear_page};
use rusqlite::Connection;
use tempfile::TempDir;

fn store_path(dir: &TempDir) -> PathBuf {
    dir.path().join("state").join("hangar.db")
}

fn saved(path: &Path, ws: &Workspace) {
    let mut opened = Store::open(path).expect("the store opens");
    opened.store.save(ws, &[]).expect("first save");
}

fn count(path: &Path, sql: &str) -> i64 {
    let conn = Connection::open(path).unwrap();
    conn.query_row(sql, [], |r| r.get(0)).unwrap()
}

#[test]
fn a_first_look_reads_the_panes_sessions_only_and_refuses_to_save_until_the_rest_is_loaded() {
    let dir = TempDir::new().unwrap();
    let path = store_path(&dir);
    let ws = large_workspace(2_000, 9);
    saved(&path, &ws);
    let plan = RestorePlan::new(ws.clone());

    let mut look = Store::open_first_look(&path).expect("the first look");
    assert!(look.recovered.is_none());
    assert!(!look.store.is_loaded());
    let leaves: Vec<SessionId> = look.workspace.sessions.keys().cloned().collect();
    assert_eq!(leaves.len(), 9, "the panes' sessions, nothing else");
    assert!(look.workspace.parked.is_empty() && look.workspace.buried.is_empty());
    assert_eq!(look.workspace.tabs, ws.tabs);
    assert_eq!(first_forks(&look.workspace), plan.spawn);

    // A save of the first look's model would drop 1,991 sessions: refused,
    // nothing written.
    let refused = look.store.save(&look.workspace, &[]);
    assert!(
        matches!(refused, Err(StoreError::NotLoaded { .. })),
        "{refused:?}"
    );
    assert_eq!(count(&path, "SELECT count(*) FROM sessions"), 2_000);

    let rest = read_rest(&path).expect("the rest reads");
    let full = look
        .store
        .finish_loading(rest, &look.workspace)
        .expect("the rest loads");
    assert!(look.store.is_loaded());
    assert!(full.differing_rows.is_empty());
    assert!(!full.changed_since_first_look);
    assert!(full.recovered.is_none() && full.pruned.is_empty());
    assert_eq!(full.workspace, ws);
    // Loaded: nothing changed, nothing written; the model saves again.
    let stats = look.store.save(&full.workspace, &[]).expect("a save");
    assert_eq!((stats.written, stats.deleted), (0, 0));
    drop(look);
    assert_eq!(Store::open(&path).unwrap().workspace, ws);
}

#[test]
fn what_the_first_forks_changed_is_kept_in_the_full_model_beside_every_other_session() {
    let dir = TempDir::new().unwrap();
    let path = store_path(&dir);
    let ws = large_workspace(500, 4);
    saved(&path, &ws);

    let mut look = Store::open_first_look(&path).unwrap();
    let pane = first_forks(&look.workspace)[0].clone();
    // A fork minted a provider id for its pane before the rest was loaded.
    let minted = ProviderSessionId::new("minted-at-fork", IdSource::ResumeRequest);
    look.workspace
        .sessions
        .get_mut(&pane)
        .unwrap()
        .provider_session = Some(minted.clone());

    let full = look
        .store
        .finish_loading(read_rest(&path).unwrap(), &look.workspace)
        .unwrap();
    assert!(full.changed_since_first_look);
    assert_eq!(full.workspace.sessions.len(), 500);
    assert_eq!(
        full.workspace.sessions[&pane].provider_session,
        Some(minted.clone())
    );
    let stats = look.store.save(&full.workspace, &[]).unwrap();
    assert_eq!(
        (stats.written, stats.deleted),
        (1, 0),
        "only the pane's row"
    );
    drop(look);

    let again = Store::open(&path).unwrap();
    assert_eq!(again.workspace.sessions.len(), 500);
    assert_eq!(
        again.workspace.sessions[&pane].provider_session,
        Some(minted)
    );
    let other = session_id(499);
    assert_eq!(again.workspace.sessions[&other], ws.sessions[&other]);
}

#[test]
fn a_damaged_file_is_moved_aside_before_the_first_look_reads_a_pane() {
    let dir = TempDir::new().unwrap();
    let path = store_path(&dir);
    saved(&path, &large_workspace(2_000, 9));
    // The second half of the pages is gone: the tabs and the panes' rows
    // may well be in the first half, but the whole-file check refuses it.
    let full = fs::read(&path).unwrap();
    let half = &full[..full.len() / 2];
    fs::write(&path, half).unwrap();

    let look = Store::open_first_look(&path).expect("opens, recovering");
    let recovery = look.recovered.expect("the damage is reported");
    assert_eq!(fs::read(&recovery.moved_to).unwrap(), half, "moved aside");
    assert_eq!(look.workspace, Workspace::default(), "no pane to fork");
    assert!(first_forks(&look.workspace).is_empty());
}

#[test]
fn rows_that_do_not_decode_are_left_out_of_the_first_look_and_set_aside_by_the_rest() {
    let dir = TempDir::new().unwrap();
    let path = store_path(&dir);
    let ws = large_workspace(100, 3);
    saved(&path, &ws);
    let plan = RestorePlan::new(ws.clone());
    let broken = plan.spawn[1].clone();
    Connection::open(&path)
        .unwrap()
        .execute(
            "UPDATE sessions SET data = '{not json' WHERE id = ?1",
            [broken.as_str()],
        )
        .unwrap();

    let mut look = Store::open_first_look(&path).unwrap();
    let forks = first_forks(&look.workspace);
    assert!(!forks.contains(&broken), "a pane whose row is broken");
    assert_eq!(forks.len(), 2);

    let full = look
        .store
        .finish_loading(read_rest(&path).unwrap(), &look.workspace)
        .unwrap();
    let recovery = full.recovered.expect("the skipped row is reported");
    assert_eq!(recovery.skipped_rows.len(), 1);
    assert_eq!(
        count(
            &recovery.moved_to,
            &format!("SELECT count(*) FROM sessions WHERE id = '{broken}'")
        ),
        1,
        "the backup has the original row"
    );
    // The full plan forks what the first look forked.
    assert_eq!(RestorePlan::new(full.workspace.clone()).spawn, forks);
    assert_eq!(full.workspace.sessions.len(), 99);
}

#[test]
fn a_rest_damaged_after_the_first_look_is_salvaged_into_a_fresh_file_beside_the_kept_original() {
    let dir = TempDir::new().unwrap();
    let path = store_path(&dir);
    let ws = large_workspace(3_000, 9);
    saved(&path, &ws);
    // Checkpointed into the main file: a page torn there is what is read.
    Connection::open(&path)
        .unwrap()
        .execute_batch("PRAGMA wal_checkpoint(TRUNCATE)")
        .unwrap();
    let leaves = leaves_of(&path, "parked");
    assert!(leaves.len() > 4, "{leaves:?}");
    let (torn, first, last) = leaves[leaves.len() / 2];
    let lost: Vec<SessionId> = {
        let conn = Connection::open(&path).unwrap();
        let mut st = conn
            .prepare("SELECT session FROM parked WHERE rowid BETWEEN ?1 AND ?2")
            .unwrap();
        st.query_map([first, last], |r| r.get::<_, String>(0))
            .unwrap()
            .map(|id| SessionId::new(id.unwrap()))
            .collect()
    };
    assert!(!lost.is_empty());

    let mut look = Store::open_first_look(&path).expect("the whole-file check passes");
    assert!(look.recovered.is_none());
    // Between the phases, a page only phase two reads is torn.
    tear_page(&path, torn);
    let damaged = fs::read(&path).unwrap();
    let pane = first_forks(&look.workspace)[0].clone();
    look.workspace.sessions.get_mut(&pane).unwrap().title = "changed by its fork".into();

    let rest = read_rest(&path).expect("a damaged rest is salvaged, not an error");
    let full = look
        .store
        .finish_loading(rest, &look.workspace)
        .expect("rebuilt");
    let recovery = full.recovered.expect("the damage is reported");
    assert_eq!(
        fs::read(&recovery.moved_to).unwrap(),
        damaged,
        "the damaged file is kept as it was"
    );
    assert!(
        recovery.reason.contains(&format!(
            "parked: the rows from rowid {first} to rowid {last}"
        )),
        "exactly the torn page's rows ({first} to {last}) are named: {}",
        recovery.reason
    );
    // Every session but the ones whose parked record was on the torn page.
    let kept: Vec<&SessionId> = ws.sessions.keys().filter(|id| !lost.contains(id)).collect();
    assert_eq!(
        full.workspace.sessions.keys().collect::<Vec<_>>(),
        kept,
        "every readable row is kept"
    );
    assert_eq!(full.workspace.tabs, ws.tabs);
    assert_eq!(
        full.workspace.sessions[&pane].title, "changed by its fork",
        "what the forks changed is kept"
    );
    assert!(look.store.is_loaded());
    drop(look);

    // The fresh file opens clean, with what was kept.
    let again = Store::open(&path).expect("the fresh store opens");
    assert!(again.recovered.is_none() && again.pruned.is_empty());
    assert_eq!(again.workspace, full.workspace);
}

#[test]
fn a_table_dropped_after_the_first_look_costs_its_rows_only() {
    let dir = TempDir::new().unwrap();
    let path = store_path(&dir);
    let ws = large_workspace(400, 6);
    saved(&path, &ws);
    let mut look = Store::open_first_look(&path).unwrap();
    // By hand, between the phases: the buried records are gone.
    Connection::open(&path)
        .unwrap()
        .execute_batch("DROP TABLE buried")
        .unwrap();

    let full = look
        .store
        .finish_loading(read_rest(&path).unwrap(), &look.workspace)
        .expect("rebuilt without the table");
    let reason = full.recovered.expect("the damage is reported").reason;
    assert!(
        reason.contains("no such table: buried") && reason.contains("buried: every row"),
        "{reason}"
    );
    // The buried sessions lost their owner record and are pruned; every
    // other session, pin and parked record is kept.
    let buried: Vec<&SessionId> = ws.buried.keys().collect();
    assert!(!buried.is_empty());
    assert_eq!(
        full.workspace.sessions.len(),
        ws.sessions.len() - buried.len()
    );
    assert!(full.workspace.buried.is_empty());
    assert_eq!(full.workspace.parked, ws.parked);
    drop(look);
    let again = Store::open(&path).unwrap();
    assert!(again.recovered.is_none());
    assert_eq!(again.workspace, full.workspace);
}

#[test]
fn a_row_whose_overflow_page_is_torn_after_the_first_look_is_the_only_one_left_out() {
    let dir = TempDir::new().unwrap();
    let path = store_path(&dir);
    let mut ws = large_workspace(600, 6);
    // A title two pages long: the row goes on in a chain of overflow
    // pages. The marker is on the first of them (SQLite keeps about 1 KiB
    // of such a row on its leaf), whose link to the next one is torn below:
    // its content no longer reads, while its rowid (on the leaf) does.
    let long = session_id(300);
    assert!(ws.parked.contains_key(&long));
    ws.sessions.get_mut(&long).unwrap().title =
        format!("{}OVERFLOW-MARKER{}", "a".repeat(2_500), "b".repeat(6_000));
    saved(&path, &ws);
    Connection::open(&path)
        .unwrap()
        .execute_batch("PRAGMA wal_checkpoint(TRUNCATE)")
        .unwrap();
    let rowid: i64 = Connection::open(&path)
        .unwrap()
        .query_row(
            "SELECT rowid FROM sessions WHERE id = ?1",
            [long.as_str()],
            |r| r.get(0),
        )
        .unwrap();
    let bytes = fs::read(&path).unwrap();
    let page_size = usize::from(u16::from_be_bytes([bytes[16], bytes[17]]));
    let at = bytes
        .windows(15)
        .position(|w| w == b"OVERFLOW-MARKER")
        .unwrap();
    let overflow_page = (at / page_size + 1) as u64;

    let mut look = Store::open_first_look(&path).unwrap();
    tear_page(&path, overflow_page);
    let full = look
        .store
        .finish_loading(read_rest(&path).unwrap(), &look.workspace)
        .unwrap();
    let reason = full.recovered.expect("the damage is reported").reason;
    assert!(
        reason.contains(&format!("sessions: the row of rowid {rowid}")),
        "{reason}"
    );
    // That session is gone (its parked record, now pointing at nothing, is
    // pruned); every other one is kept.
    assert_eq!(full.workspace.sessions.len(), 599);
    assert!(!full.workspace.sessions.contains_key(&long));
    assert!(!full.workspace.parked.contains_key(&long));
}

/// Give each schema entry of `names` the b-tree of the next one (the last
/// gets the first's): every page stays in use once, so `PRAGMA
/// quick_check`'s page accounting still passes.
fn rotate_roots(conn: &Connection, names: &[&str]) {
    let root = |name: &str| -> i64 {
        conn.query_row(
            "SELECT rootpage FROM sqlite_schema WHERE name = ?1",
            [name],
            |r| r.get(0),
        )
        .unwrap()
    };
    let roots: Vec<i64> = names.iter().map(|n| root(n)).collect();
    conn.execute_batch("PRAGMA writable_schema = ON").unwrap();
    for (i, name) in names.iter().enumerate() {
        conn.execute(
            "UPDATE sqlite_schema SET rootpage = ?2 WHERE name = ?1",
            rusqlite::params![name, roots[(i + 1) % roots.len()]],
        )
        .unwrap();
    }
    conn.execute_batch("PRAGMA writable_schema = OFF").unwrap();
}

#[test]
fn a_pane_row_the_index_and_the_table_give_differently_is_named_and_the_table_wins() {
    let dir = TempDir::new().unwrap();
    let path = store_path(&dir);
    let ws = large_workspace(200, 6);
    saved(&path, &ws);
    let pane = RestorePlan::new(ws.clone()).spawn[2].clone();
    let mut newer = ws.sessions[&pane].clone();
    newer.title = "the table's newer row".into();
    {
        // The table holds the pane's row twice (an older one first), and
        // the index of ids points at the older one: what a torn write of an
        // index page next to an update can leave.
        let conn = Connection::open(&path).unwrap();
        conn.execute_batch(
            "CREATE TABLE loose (id TEXT NOT NULL, data TEXT NOT NULL);
             INSERT INTO loose (rowid, id, data) SELECT rowid, id, data FROM sessions;
             CREATE TABLE shadow (id TEXT PRIMARY KEY NOT NULL, data TEXT NOT NULL);
             INSERT INTO shadow (rowid, id, data) SELECT rowid, id, data FROM sessions;",
        )
        .unwrap();
        let next: i64 = conn
            .query_row("SELECT max(rowid) + 1 FROM sessions", [], |r| r.get(0))
            .unwrap();
        conn.execute(
            "INSERT INTO loose (rowid, id, data) VALUES (?1, ?2, ?3)",
            rusqlite::params![next, pane.as_str(), serde_json::to_string(&newer).unwrap()],
        )
        .unwrap();
        conn.execute(
            "INSERT INTO shadow (rowid, id, data) VALUES (?1, 'zz-only-in-the-index', '{}')",
            [next],
        )
        .unwrap();
        // `sessions` gets the rows with the pane twice and `shadow`'s index
        // (the same count, the pane's id at its older rowid); `shadow` gets
        // the old sessions rows and their index, `loose` (no index) the
        // rest: every index keeps as many entries as its table has rows.
        rotate_roots(&conn, &["sessions", "loose", "shadow"]);
        rotate_roots(
            &conn,
            &["sqlite_autoindex_sessions_1", "sqlite_autoindex_shadow_1"],
        );
    }
    let ok: String = Connection::open(&path)
        .unwrap()
        .query_row("PRAGMA quick_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(ok, "ok", "the damage passes the whole-file check");

    let mut look = Store::open_first_look(&path).unwrap();
    assert!(look.recovered.is_none());
    assert_eq!(
        look.workspace.sessions[&pane].title, ws.sessions[&pane].title,
        "the first look read the row the index points at"
    );
    let full = look
        .store
        .finish_loading(read_rest(&path).unwrap(), &look.workspace)
        .unwrap();
    assert_eq!(full.differing_rows, vec![pane.clone()]);
    assert_eq!(
        full.workspace.sessions[&pane].title, newer.title,
        "the table wins"
    );
    // One id twice in the table: the unique index cannot be rebuilt, and
    // that is said, not hidden.
    let reindexed = full.reindexed.expect("a disagreement is repaired or said");
    assert!(
        reindexed.as_ref().is_err_and(|e| e.contains("UNIQUE")),
        "{reindexed:?}"
    );
    assert_eq!(full.workspace.sessions.len(), 200);
}
