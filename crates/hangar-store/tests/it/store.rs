//! Acceptance tests of the SQLite store: rule 5 (a partial restore never
//! overwrites a full save), one transaction per change, lossless round trips,
//! and that no store file is ever lost when it is damaged or newer.

use std::fs;
use std::path::{Path, PathBuf};

use hangar_core::fixtures::{field_workspace, large_workspace, session_id, tab_id};
use hangar_core::{
    IdSource, PanePosition, Provider, ProviderSessionId, RestorePlan, SessionId, SessionMeta,
    Workspace,
};
use hangar_store::{Opened, Store, StoreError};
use rusqlite::Connection;
use tempfile::TempDir;

fn store_path(dir: &TempDir) -> PathBuf {
    dir.path().join("state").join("hangar.db")
}

fn open(path: &Path) -> Opened {
    Store::open(path).expect("the store opens")
}

/// The field report's workspace plus every kind of record and pointer.
fn rich_workspace() -> Workspace {
    let mut ws = field_workspace();
    let tab = tab_id(1);
    let mut meta = SessionMeta::new(SessionId::new("buried-1"), Provider::Shell, "/tmp");
    meta.draft = Some("half-typed prompt".to_owned());
    meta.provider_session = Some(ProviderSessionId::new("p-1", IdSource::ProxyHeader));
    ws.add_pane_session(meta, &tab, PanePosition::Auto).unwrap();
    ws.bury(&SessionId::new("buried-1"), 42).unwrap();
    ws.pin(&session_id(0)).unwrap();
    ws.pin(&session_id(20)).unwrap();
    ws.pin(&SessionId::new("buried-1")).unwrap();
    ws.set_active_tab(&tab_id(2)).unwrap();
    ws.dispatch.mode = Some("lanes".to_owned());
    ws.dispatch.selected = Some(session_id(12));
    ws.dispatch.lanes.push(hangar_core::DispatchLane {
        name: "review".to_owned(),
        sessions: vec![session_id(12), session_id(13)],
    });
    ws.settings.dangerous = true;
    assert!(hangar_core::is_closed(&ws), "the test workspace is closed");
    ws
}

fn saved(path: &Path, ws: &Workspace) {
    let mut opened = open(path);
    opened.store.save(ws, &[]).expect("first save");
}

fn count(path: &Path, sql: &str) -> i64 {
    let conn = Connection::open(path).unwrap();
    conn.query_row(sql, [], |r| r.get(0)).unwrap()
}

#[test]
fn a_corrupt_store_file_is_moved_aside_and_reported() {
    // Random bytes: not a database at all.
    let dir = TempDir::new().unwrap();
    let path = store_path(&dir);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let garbage: Vec<u8> = (0..8192)
        .map(|_| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed as u8
        })
        .collect();
    fs::write(&path, &garbage).unwrap();
    let opened = open(&path);
    let recovery = opened.recovered.expect("the damage is reported");
    assert!(recovery.skipped_rows.is_empty());
    assert_eq!(
        fs::read(&recovery.moved_to).unwrap(),
        garbage,
        "moved, never deleted"
    );
    assert!(
        recovery
            .moved_to
            .file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("hangar.db.corrupt-")
    );
    assert!(
        recovery
            .reason
            .contains(&recovery.moved_to.display().to_string())
    );
    assert_eq!(opened.workspace, Workspace::default());
    drop(opened.store);
    assert!(open(&path).recovered.is_none(), "the fresh file is healthy");

    // A truncated store: the second half of its pages is gone.
    let dir = TempDir::new().unwrap();
    let path = store_path(&dir);
    saved(&path, &large_workspace(2_000, 9));
    let full = fs::read(&path).unwrap();
    assert!(
        !path.with_extension("db-wal").exists(),
        "closing checkpoints"
    );
    let half = &full[..full.len() / 2];
    fs::write(&path, half).unwrap();
    let opened = open(&path);
    let recovery = opened.recovered.expect("the truncation is reported");
    assert_eq!(fs::read(&recovery.moved_to).unwrap(), half);
    assert_eq!(opened.workspace, Workspace::default());

    // A database that is not a hangar store: a required table is missing.
    let dir = TempDir::new().unwrap();
    let path = store_path(&dir);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    {
        let conn = Connection::open(&path).unwrap();
        conn.execute_batch("CREATE TABLE sessions (id TEXT, data TEXT); PRAGMA user_version = 1;")
            .unwrap();
    }
    let opened = open(&path);
    let recovery = opened.recovered.expect("the missing tables are reported");
    assert!(recovery.reason.contains("tabs"), "{}", recovery.reason);
    assert!(recovery.moved_to.exists());
}

#[test]
fn a_newer_schema_file_is_refused_and_left_byte_for_byte_unchanged() {
    let dir = TempDir::new().unwrap();
    let path = store_path(&dir);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    {
        let conn = Connection::open(&path).unwrap();
        let _: String = conn
            .query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))
            .unwrap();
        conn.execute_batch(&format!(
            "CREATE TABLE sessions (id TEXT PRIMARY KEY, data TEXT, future TEXT);
             INSERT INTO sessions VALUES ('a', '{{}}', 'x');
             PRAGMA user_version = {};",
            hangar_store::SUPPORTED_VERSION + 1
        ))
        .unwrap();
    }
    let before = fs::read(&path).unwrap();
    let listing = |dir: &Path| {
        let mut names: Vec<_> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        names.sort();
        names
    };
    let files_before = listing(path.parent().unwrap());

    let err = Store::open(&path).expect_err("a newer schema is refused");
    match &err {
        StoreError::NewerSchema {
            path: p,
            found,
            supported,
        } => {
            let supported_here = hangar_store::SUPPORTED_VERSION;
            assert_eq!(
                (p, *found, *supported),
                (&path, supported_here + 1, supported_here)
            );
        }
        other => panic!("expected NewerSchema, got {other}"),
    }
    let message = err.to_string();
    assert!(message.contains("Upgrade hangar"), "{message}");
    assert!(message.contains("not touched"), "{message}");
    assert!(message.contains(&path.display().to_string()), "{message}");

    assert_eq!(fs::read(&path).unwrap(), before, "byte-for-byte unchanged");
    assert_eq!(
        listing(path.parent().unwrap()),
        files_before,
        "nothing moved aside"
    );
}

#[test]
fn save_refuses_to_drop_sessions_it_was_not_told_to_remove() {
    let dir = TempDir::new().unwrap();
    let path = store_path(&dir);
    let ws = field_workspace();
    let mut store = open(&path).store;
    store.save(&ws, &[]).unwrap();

    let closed = session_id(20);
    let mut smaller = ws.clone();
    smaller.remove_sessions(std::slice::from_ref(&closed));
    match store.save(&smaller, &[]) {
        Err(StoreError::UnexplainedDrop { ids }) => assert_eq!(ids, vec![closed.clone()]),
        other => panic!("expected UnexplainedDrop, got {other:?}"),
    }
    assert_eq!(
        &store.load_saved().unwrap(),
        &ws,
        "a refused save changes nothing"
    );

    // An empty model never replaces a full one.
    match store.save(&Workspace::default(), &[]) {
        Err(StoreError::UnexplainedDrop { ids }) => assert_eq!(ids.len(), 49),
        other => panic!("expected UnexplainedDrop, got {other:?}"),
    }
    drop(store);
    assert_eq!(open(&path).workspace, ws, "nothing was written");

    // Named, the same removal goes through.
    let mut store = open(&path).store;
    let stats = store.save(&smaller, &[closed]).unwrap();
    assert!(stats.deleted >= 2, "metadata and parked record: {stats:?}");
    drop(store);
    assert_eq!(open(&path).workspace, smaller);
}

#[test]
fn a_partial_restore_never_overwrites_a_full_save() {
    let dir = TempDir::new().unwrap();
    let path = store_path(&dir);
    let full = field_workspace();
    saved(&path, &full);

    // The daemon starts: load, plan, spawn. Three of the nine panes fail to
    // spawn; failure is runtime state, so the model is not edited.
    let Opened {
        mut store,
        workspace,
        ..
    } = open(&path);
    let plan = RestorePlan::new(workspace);
    assert_eq!(plan.expected(), 9);
    let failed: Vec<SessionId> = plan.spawn.iter().take(3).cloned().collect();
    let mut model = plan.workspace.clone();
    for id in plan.spawn.iter().skip(3) {
        model.sessions.get_mut(id).unwrap().last_active_ms += 1;
    }
    store.save(&model, &[]).unwrap();

    // A buggy restore that keeps only what came up is refused.
    let mut only_live = model.clone();
    only_live.remove_sessions(&failed);
    assert!(matches!(
        store.save(&only_live, &[]),
        Err(StoreError::UnexplainedDrop { .. })
    ));
    drop(store);

    let reopened = open(&path);
    assert_eq!(reopened.workspace, model);
    assert_eq!(reopened.workspace.sessions.len(), full.sessions.len());
    for id in &failed {
        assert!(
            reopened.workspace.pane_tab(id).is_some(),
            "{id} kept its pane"
        );
    }
}

#[test]
fn each_change_is_one_transaction() {
    let dir = TempDir::new().unwrap();
    let path = store_path(&dir);
    let ws = rich_workspace();
    let mut store = open(&path).store;
    store.save(&ws, &[]).unwrap();

    // Inject a failure after several rows of the change have been written:
    // sessions are written first, parked records later.
    Connection::open(&path)
        .unwrap()
        .execute_batch(
            "CREATE TRIGGER inject_failure BEFORE INSERT ON parked
             WHEN NEW.session = 'boom'
             BEGIN SELECT RAISE(ABORT, 'injected failure'); END;",
        )
        .unwrap();
    let mut changed = ws.clone();
    changed.sessions.get_mut(&session_id(0)).unwrap().title = "renamed".to_owned();
    changed.tabs.swap(0, 2);
    changed.pins.reverse();
    changed
        .add_parked_session(
            SessionMeta::new(SessionId::new("boom"), Provider::Claude, "/tmp"),
            &tab_id(0),
            7,
        )
        .unwrap();
    let err = store.save(&changed, &[]).unwrap_err();
    assert!(matches!(err, StoreError::Sqlite { .. }), "{err}");
    assert!(err.to_string().contains("injected failure"), "{err}");
    assert_eq!(&store.load_saved().unwrap(), &ws);
    assert_eq!(
        count(&path, "SELECT count(*) FROM sessions WHERE id = 'boom'"),
        0,
        "the session row written before the failure was rolled back"
    );
    drop(store);
    let reopened = open(&path);
    assert_eq!(
        reopened.workspace, ws,
        "nothing of the failed change was written"
    );

    // With the fault gone the same change commits whole.
    Connection::open(&path)
        .unwrap()
        .execute_batch("DROP TRIGGER inject_failure")
        .unwrap();
    let mut store = reopened.store;
    store.save(&changed, &[]).unwrap();
    drop(store);
    assert_eq!(open(&path).workspace, changed);
}

#[test]
fn reopen_after_save_round_trips_losslessly() {
    let dir = TempDir::new().unwrap();
    let path = store_path(&dir);
    let ws = rich_workspace();
    let mut store = open(&path).store;
    let stats = store.save(&ws, &[]).unwrap();
    // 50 sessions, 3 tabs, 40 parked, 1 buried, 3 pins, 3 kv keys.
    assert_eq!(stats.written, 50 + 3 + 40 + 1 + 3 + 3);
    drop(store);

    let mut reopened = open(&path);
    assert_eq!(reopened.workspace, ws);
    assert!(reopened.pruned.is_empty());
    assert!(reopened.recovered.is_none());
    assert_eq!(&reopened.store.load_saved().unwrap(), &ws);

    // A second save of the same model writes nothing.
    let mut store = reopened.store;
    assert_eq!(store.save(&ws, &[]).unwrap(), Default::default());
}

#[test]
fn a_change_writes_only_the_rows_it_touched() {
    let dir = TempDir::new().unwrap();
    let path = store_path(&dir);
    let mut ws = rich_workspace();
    let mut store = open(&path).store;
    store.save(&ws, &[]).unwrap();

    ws.sessions.get_mut(&session_id(30)).unwrap().title = "renamed".to_owned();
    let stats = store.save(&ws, &[]).unwrap();
    assert_eq!((stats.written, stats.deleted), (1, 0));

    ws.park(&session_id(0), 99).unwrap();
    let stats = store.save(&ws, &[]).unwrap();
    // The tab's tree and the new parked record.
    assert_eq!((stats.written, stats.deleted), (2, 0));
    drop(store);
    assert_eq!(open(&path).workspace, ws);

    // Reopened, the rows as read are what a save compares with: an
    // unchanged workspace rewrites nothing, a changed buried record (its
    // ratio, an f32) and a changed parked one are each written.
    let mut opened = open(&path);
    let stats = opened.store.save(&opened.workspace, &[]).unwrap();
    assert_eq!((stats.written, stats.deleted), (0, 0), "nothing rewritten");
    let mut ws = opened.workspace.clone();
    let buried = SessionId::new("buried-1");
    ws.buried.get_mut(&buried).unwrap().ratio = Some(0.25);
    let stats = opened.store.save(&ws, &[]).unwrap();
    assert_eq!((stats.written, stats.deleted), (1, 0), "the buried record");
    ws.parked.get_mut(&session_id(0)).unwrap().parked_at_ms += 1;
    let stats = opened.store.save(&ws, &[]).unwrap();
    assert_eq!((stats.written, stats.deleted), (1, 0), "the parked record");
    drop(opened);
    assert_eq!(open(&path).workspace, ws);
}

#[test]
fn hand_edited_file_is_repaired_on_load() {
    let dir = TempDir::new().unwrap();
    let path = store_path(&dir);
    let ws = field_workspace();
    saved(&path, &ws);

    // A ghost: a parked record whose project tab does not exist.
    Connection::open(&path)
        .unwrap()
        .execute_batch(
            r#"INSERT INTO sessions VALUES ('ghost', '{"id":"ghost","provider":"claude","cwd":"/tmp"}');
               INSERT INTO parked VALUES ('ghost', '{"session":"ghost","tab":"tab-99"}');"#,
        )
        .unwrap();

    let opened = open(&path);
    let ghost = SessionId::new("ghost");
    assert_eq!(opened.pruned.dropped_parked, vec![ghost.clone()]);
    assert_eq!(opened.pruned.dropped_sessions, vec![ghost.clone()]);
    assert_eq!(opened.workspace, ws);
    drop(opened);

    assert_eq!(
        count(&path, "SELECT count(*) FROM parked WHERE session = 'ghost'"),
        0
    );
    assert_eq!(
        count(&path, "SELECT count(*) FROM sessions WHERE id = 'ghost'"),
        0
    );
    let again = open(&path);
    assert!(again.pruned.is_empty(), "the repair was persisted");
    assert_eq!(again.workspace, ws);
}

#[test]
fn undecodable_rows_are_skipped_after_a_full_backup_copy() {
    let dir = TempDir::new().unwrap();
    let path = store_path(&dir);
    let ws = field_workspace();
    saved(&path, &ws);
    Connection::open(&path)
        .unwrap()
        .execute_batch(
            "INSERT INTO sessions VALUES ('broken', '{not json');
             INSERT INTO kv VALUES ('settings', '[1,2]');",
        )
        .unwrap();

    let opened = open(&path);
    let recovery = opened.recovered.expect("skipped rows are reported");
    let mut skipped: Vec<_> = recovery
        .skipped_rows
        .iter()
        .map(|r| (r.table, r.key.as_str()))
        .collect();
    skipped.sort();
    assert_eq!(skipped, vec![("kv", "settings"), ("sessions", "broken")]);
    assert_eq!(opened.workspace, ws);
    assert!(recovery.reason.contains("broken"), "{}", recovery.reason);
    // The backup holds the original rows.
    assert_eq!(
        count(
            &recovery.moved_to,
            "SELECT count(*) FROM sessions WHERE id = 'broken'"
        ),
        1
    );
    drop(opened.store);
    // The live file no longer has them, so the next open is clean.
    let again = open(&path);
    assert!(again.recovered.is_none());
    assert_eq!(again.workspace, ws);
}

#[test]
fn a_screen_round_trips_and_goes_with_its_session() {
    let dir = TempDir::new().unwrap();
    let path = store_path(&dir);
    let ws = field_workspace();
    let mut store = open(&path).store;
    store.save(&ws, &[]).unwrap();
    let id = session_id(3);
    let screen = b"\x1b[1mhello\x1b[0m\r\n\xff\x00 binary ok".to_vec();
    assert_eq!(store.load_screen(&id).unwrap(), None);
    store.save_screen(&id, b"old", 1).unwrap();
    store.save_screen(&id, &screen, 2).unwrap();
    drop(store);

    let mut store = open(&path).store;
    assert_eq!(store.load_screen(&id).unwrap(), Some(screen));
    let mut smaller = ws.clone();
    smaller.remove_sessions(std::slice::from_ref(&id));
    store.save(&smaller, std::slice::from_ref(&id)).unwrap();
    assert_eq!(store.load_screen(&id).unwrap(), None);
}

#[test]
fn a_process_record_round_trips_and_goes_with_its_session() {
    let dir = TempDir::new().unwrap();
    let path = store_path(&dir);
    let ws = field_workspace();
    let mut store = open(&path).store;
    store.save(&ws, &[]).unwrap();
    let (a, b) = (session_id(1), session_id(2));
    store.record_process(&a, 4242, 4242, 123_456_789).unwrap();
    store.record_process(&b, 100, 100, 1).unwrap();
    store
        .record_process(&b, 4343, 4340, u64::from(u32::MAX) + 7)
        .unwrap();
    assert!(
        store.record_process(&b, 0, 0, 1).is_err(),
        "pid 0 is never recorded"
    );
    drop(store);

    let mut store = open(&path).store;
    let recorded = store.recorded_processes().unwrap();
    assert_eq!(recorded.len(), 2);
    assert_eq!(
        (
            recorded[0].session.clone(),
            recorded[0].pid,
            recorded[0].pgid,
            recorded[0].start_time
        ),
        (a.clone(), 4242, 4242, 123_456_789)
    );
    assert_eq!(
        (
            recorded[1].session.clone(),
            recorded[1].pid,
            recorded[1].pgid,
            recorded[1].start_time
        ),
        (b.clone(), 4343, 4340, u64::from(u32::MAX) + 7)
    );
    store.forget_process(&a).unwrap();
    let mut smaller = ws.clone();
    smaller.remove_sessions(std::slice::from_ref(&b));
    store.save(&smaller, std::slice::from_ref(&b)).unwrap();
    assert!(store.recorded_processes().unwrap().is_empty());
}

#[test]
fn a_hand_edited_process_row_with_pid_zero_is_never_returned() {
    // Regression guard: kill(-0) would signal the daemon's own group.
    let dir = TempDir::new().unwrap();
    let path = store_path(&dir);
    drop(open(&path));
    Connection::open(&path)
        .unwrap()
        .execute_batch(
            "INSERT INTO processes VALUES ('a', 0, 5, 0);
             INSERT INTO processes VALUES ('b', -1, 5, -1);
             INSERT INTO processes VALUES ('c', 77, 5, 77);",
        )
        .unwrap();
    let store = open(&path).store;
    let recorded = store.recorded_processes().unwrap();
    assert_eq!(recorded.len(), 1);
    assert_eq!(recorded[0].pid, 77);
}

#[cfg(unix)]
#[test]
fn the_store_file_is_created_private() {
    use std::os::unix::fs::PermissionsExt;
    let dir = TempDir::new().unwrap();
    let path = store_path(&dir);
    let opened = open(&path);
    assert_eq!(opened.store.path(), path);
    let mode = fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
}

#[test]
fn a_store_path_that_cannot_be_read_is_reported_and_left_alone() {
    let dir = TempDir::new().unwrap();
    let path = store_path(&dir);
    fs::create_dir_all(&path).unwrap();
    fs::write(path.join("keep"), b"x").unwrap();
    let err = Store::open(&path).expect_err("a folder is not a store");
    assert!(matches!(err, StoreError::Io { .. }), "{err}");
    assert!(path.join("keep").exists(), "nothing was moved or deleted");
}
