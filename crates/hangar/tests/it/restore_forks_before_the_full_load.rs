//! Issue 20, the first fork before the full load: a start forks its visible
//! panes from a first look at the store (the whole-file check, the tabs, the
//! panes' rows) and loads every other session after. What must stay true,
//! through the real daemon on stores of thousands of sessions:
//! - a hibernated session sharing a visible pane's conversation is never
//!   woken beside it, even when its wake is the very first request;
//! - a save the first forks ask for waits for the full model, and keeps
//!   every session;
//! - a damaged store forks nothing;
//! - a rest of the store damaged after the first look keeps the panes
//!   running and every row that can be read, beside the kept original;
//! - a pane a damaged index hides from the first look is restored after the
//!   full load, and named;
//! - the journal says how many sessions stay hibernated once it is known.

use crate::support;

use std::fs;
use std::path::{Path, PathBuf};

use hangar_testkit::sqlite::{leaves_of, tear_page};
use rusqlite::Connection;
use serde_json::Value;
use support::workspace::{Recipe, craft};
use support::*;

fn store_of(h: &Hangar) -> PathBuf {
    h.home.join("state.db")
}

#[test]
fn a_hibernated_session_sharing_a_panes_conversation_is_refused_even_as_the_first_request() {
    let h = Hangar::new();
    let mut ws = craft(&Recipe::field(3_000), &h.work);
    let pane = ws.panes[0].clone();
    let twin = ws.parked[5].clone();
    // The parked twin resumes the first pane's conversation.
    ws.json["workspace"]["sessions"][&twin.id]["provider_session"]["id"] =
        Value::String(pane.psid.clone());
    h.import(&ws.json);

    // The first request of all wakes the twin: the CLI starts the daemon
    // and asks at once, while the start's full load may still be under way.
    let wake = h.run(&["--json", "wake", &twin.id]);
    let status = h.wait_restore_complete();
    let resuming = h.processes_with_flag("--resume", &pane.psid);
    assert_eq!(
        resuming.len(),
        1,
        "one process for the shared conversation: {:?}",
        resuming.iter().map(|&p| cmdline(p)).collect::<Vec<_>>()
    );
    let (live, refused) = if h.state_of(&pane.id) == "live" {
        (&pane, &twin)
    } else {
        (&twin, &pane)
    };
    assert_eq!(h.state_of(&live.id), "live", "{status}");
    if refused.id == twin.id {
        // The usual order: the pane was spawning first, the wake refused.
        assert!(!wake.status.success(), "the twin's wake is refused");
        let err = String::from_utf8_lossy(&wake.stderr);
        assert!(
            err.contains("two processes writing one conversation corrupt it")
                && err.contains(&pane.id),
            "{err}"
        );
        assert_ne!(h.state_of(&twin.id), "live");
    } else {
        // The wake came first: then the pane is the refused one, and says so.
        let row = h.session(&pane.id);
        assert_eq!(row["state"], "failed", "{row}");
        assert!(
            row["reason"]
                .as_str()
                .unwrap_or_default()
                .contains("two processes writing one conversation corrupt it"),
            "{row}"
        );
    }

    // Once everything is loaded, the twin of a live pane is refused, and
    // the start said the two share a conversation.
    let again = h.run(&["wake", &refused.id]);
    assert!(!again.status.success());
    assert_eq!(h.processes_with_flag("--resume", &pane.psid).len(), 1);
    let notices = h.status()["notices"].to_string();
    assert!(
        notices.contains(&pane.id) && notices.contains(&twin.id) && notices.contains(&pane.psid),
        "{notices}"
    );
    assert_eq!(h.ls().len(), 9 + 3_000, "every session is there");
    h.shutdown();
}

#[test]
fn saves_the_first_forks_ask_for_wait_for_the_full_model_and_keep_every_session() {
    let h = Hangar::new();
    let mut ws = craft(&Recipe::field(4_000), &h.work);
    // Every pane's fork changes its record before the rest is loaded: each
    // was saved dangerous and starts with the home's setting (not), and
    // the first pane has no provider id yet, so its fork mints one. Each
    // asks for a save.
    for pane in &ws.panes {
        ws.json["workspace"]["sessions"][&pane.id]["dangerous"] = Value::Bool(true);
    }
    let fresh = ws.panes[0].clone();
    ws.json["workspace"]["sessions"][&fresh.id]
        .as_object_mut()
        .unwrap()
        .remove("provider_session");
    h.import(&ws.json);

    h.start_daemon();
    let status = h.wait_restore_complete();
    assert_eq!(status["restore"]["restored"], 9, "{status}");
    assert_eq!(status["restore"]["failed"], 0, "{status}");
    assert_eq!(status["restore"]["hibernated"], 4_000, "{status}");
    let minted = h
        .provider_id(&fresh.id)
        .0
        .expect("the fork minted a provider id");
    assert_eq!(
        h.processes_with_flag("--session-id", &minted).len(),
        1,
        "the pane's process runs the minted id"
    );
    h.shutdown();

    // Read back with no daemon: every session, and what the forks changed.
    let doc: Value = serde_json::from_str(&h.ok(&["export"])).unwrap();
    let sessions = doc["workspace"]["sessions"].as_object().unwrap();
    assert_eq!(sessions.len(), 9 + 4_000, "no session lost");
    for pane in &ws.panes {
        assert_eq!(
            sessions[&pane.id]["dangerous"], false,
            "the fork's flag is saved: {}",
            sessions[&pane.id]
        );
    }
    assert_eq!(
        sessions[&fresh.id]["provider_session"]["id"], minted,
        "the minted id is saved"
    );
    let parked = &ws.parked[3_999];
    assert_eq!(sessions[&parked.id]["title"], parked.title.as_str());
}

#[test]
fn a_damaged_store_of_thousands_of_sessions_forks_no_pane() {
    let h = Hangar::new();
    let ws = craft(&Recipe::field(2_000), &h.work);
    h.import(&ws.json);
    let bytes = fs::read(store_of(&h)).unwrap();
    // The second half of the pages is gone; the first half may hold the
    // tabs and the panes' rows, but the whole-file check refuses the file.
    let truncated = &bytes[..bytes.len() / 2];
    fs::write(store_of(&h), truncated).unwrap();

    let mut child = h
        .command(&["daemon"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Watch from the start until it answers: no pane's conversation is
    // ever resumed.
    let psids: Vec<&str> = ws.panes.iter().map(|p| p.psid.as_str()).collect();
    let socket = h.home.join("run").join("hangar.sock");
    h.wait_until("the daemon answers", DEADLINE, || {
        for psid in &psids {
            assert!(
                h.processes_with_flag("--resume", psid).is_empty(),
                "a pane was forked from a damaged store"
            );
        }
        std::os::unix::net::UnixStream::connect(&socket).is_ok()
            && h.run(&["status"]).status.success()
    });
    let status = h.wait_restore_complete();
    assert_eq!(status["restore"]["expected"], 0, "{status}");
    assert!(h.fake_agent_pids_for_home().is_empty());
    let notices = status["notices"].to_string();
    assert!(
        notices.contains("damaged") && notices.contains("state.db.corrupt-"),
        "{notices}"
    );
    assert!(h.ls().is_empty(), "it starts empty, as before");
    h.shutdown();
    let _ = child.wait();
}

#[test]
fn a_starts_journal_says_how_many_sessions_stay_hibernated_once_the_rest_is_loaded() {
    let h = Hangar::new();
    let ws = craft(&Recipe::field(1_500), &h.work);
    h.import(&ws.json);

    h.start_daemon();
    let status = h.wait_restore_complete();
    assert_eq!(status["restore"]["hibernated"], 1_500, "{status}");
    let journal = h.journal();
    let seq_of = |event: &str| -> Vec<(u64, &Value)> {
        journal
            .iter()
            .filter(|e| e["event"] == event)
            .map(|e| (e["seq"].as_u64().unwrap(), e))
            .collect()
    };
    // Written before the first fork, from the first look: the panes only.
    let starts = seq_of("restore-start");
    assert_eq!(starts.len(), 1, "{journal:?}");
    let (start_seq, start) = starts[0];
    assert_eq!(start["expected"], 9, "{start}");
    assert!(start.get("hibernated").is_none(), "{start}");
    let first_spawn = seq_of("spawn-begin")[0].0;
    assert!(start_seq < first_spawn, "{journal:?}");
    // The count follows, equal to what `status` says.
    let counts = seq_of("restore-hibernated");
    assert_eq!(counts.len(), 1, "{journal:?}");
    let (count_seq, count) = counts[0];
    assert!(count_seq > start_seq, "{journal:?}");
    assert_eq!(count["hibernated"], status["restore"]["hibernated"]);

    // `journal summarize` pairs the count with the restore.
    let summary = h.json(&["journal", "summarize"]);
    let restores = summary["restores"].as_array().unwrap();
    assert_eq!(restores.len(), 1, "{summary}");
    assert_eq!(restores[0]["hibernated"], 1_500, "{summary}");
    assert_eq!(restores[0]["restored"], 9, "{summary}");
    let human = h.ok(&["journal", "summarize"]);
    assert!(human.contains("9 restored, 0 failed"), "{human}");
    assert!(human.contains("1500 left hibernated"), "{human}");
    h.shutdown();
}

#[test]
fn a_rest_damaged_after_the_first_look_keeps_the_panes_running_and_every_row_that_can_be_read() {
    let mut h = Hangar::new();
    // The debug build's hold between the phases (not in release builds):
    // the only way to damage the file in the milliseconds between them.
    let release = h.root.join("release-the-full-load");
    h.set_env("HANGAR_TEST_HOLD_FULL_LOAD", &release);
    let ws = craft(&Recipe::field(1_500), &h.work);
    h.import(&ws.json);
    let store = store_of(&h);
    let leaves = leaves_of(&store, "parked");
    assert!(leaves.len() > 4, "{leaves:?}");
    let (torn, first, last) = leaves[leaves.len() / 2];
    let lost: Vec<String> = {
        let conn = Connection::open(&store).unwrap();
        let mut st = conn
            .prepare("SELECT session FROM parked WHERE rowid BETWEEN ?1 AND ?2")
            .unwrap();
        st.query_map([first, last], |r| r.get::<_, String>(0))
            .unwrap()
            .map(Result::unwrap)
            .collect()
    };
    assert!(!lost.is_empty());

    let mut held = release.clone().into_os_string();
    held.push(".held");
    let held = PathBuf::from(held);
    let (pane_pids, damaged) = std::thread::scope(|scope| {
        let starting = scope.spawn(|| h.start_daemon());
        h.wait_until("the start holds before its full load", DEADLINE, || {
            held.exists()
        });
        // The first look passed the whole-file check: every pane forks.
        let mut pids = Vec::new();
        h.wait_until("every pane is forked", DEADLINE, || {
            pids = ws
                .panes
                .iter()
                .flat_map(|p| h.processes_with_flag("--resume", &p.psid))
                .collect();
            pids.len() == ws.panes.len()
        });
        // A page only phase two reads is torn.
        tear_page(&store, torn);
        let damaged = fs::read(&store).unwrap();
        fs::write(&release, b"").unwrap();
        starting.join().unwrap();
        (pids, damaged)
    });

    let status = h.wait_restore_complete();
    assert_eq!(status["restore"]["restored"], 9, "{status}");
    assert_eq!(status["restore"]["failed"], 0, "{status}");
    for pid in &pane_pids {
        assert!(is_running(*pid), "pane process {pid} was stopped");
    }
    let notices = status["notices"].to_string();
    assert!(
        notices.contains("could not be read after its panes started")
            && notices.contains(&format!(
                "parked: the rows from rowid {first} to rowid {last}"
            ))
            && notices.contains("state.db.corrupt-"),
        "{notices}"
    );
    // The damaged file is kept as it was, beside the fresh one.
    let kept: Vec<PathBuf> = fs::read_dir(&h.home)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            name.starts_with("state.db.corrupt-")
                && !name.contains("-wal")
                && !name.contains("-shm")
        })
        .collect();
    assert_eq!(kept.len(), 1, "{kept:?}");
    assert!(
        fs::read(&kept[0]).unwrap() == damaged,
        "the original is untouched"
    );

    // Every session but the ones whose parked record was on the torn page.
    let ids: Vec<String> = h
        .ls()
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(ids.len(), 9 + 1_500 - lost.len(), "{status}");
    assert!(lost.iter().all(|id| !ids.contains(id)));
    for pane in &ws.panes {
        assert_eq!(h.state_of(&pane.id), "live");
    }
    h.ok(&["status"]);
    h.shutdown();

    // The next start opens the fresh store clean, with what was kept.
    h.start_daemon();
    let status = h.wait_restore_complete();
    assert_eq!(status["restore"]["restored"], 9, "{status}");
    assert!(
        !status["notices"].to_string().contains("damaged"),
        "{status}"
    );
    assert_eq!(h.ls().len(), 9 + 1_500 - lost.len());
    h.shutdown();
}

/// Point the index of session ids at a copy of itself that files `id`
/// under another key, as a damaged index page would: `PRAGMA quick_check`
/// does not compare an index with its table, so the file still passes it.
fn hide_from_the_index(store: &Path, id: &str) {
    let conn = Connection::open(store).unwrap();
    conn.execute_batch("CREATE TABLE shadow (id TEXT PRIMARY KEY NOT NULL, data TEXT NOT NULL)")
        .unwrap();
    conn.execute(
        "INSERT INTO shadow (rowid, id, data)
         SELECT rowid, CASE id WHEN ?1 THEN ?1 || '-elsewhere' ELSE id END, data FROM sessions",
        [id],
    )
    .unwrap();
    let root = |name: &str| -> i64 {
        conn.query_row(
            "SELECT rootpage FROM sqlite_schema WHERE name = ?1",
            [name],
            |r| r.get(0),
        )
        .unwrap()
    };
    let (ours, theirs) = (
        root("sqlite_autoindex_sessions_1"),
        root("sqlite_autoindex_shadow_1"),
    );
    conn.execute_batch("PRAGMA writable_schema = ON").unwrap();
    let set = "UPDATE sqlite_schema SET rootpage = ?2 WHERE name = ?1";
    conn.execute(
        set,
        rusqlite::params!["sqlite_autoindex_sessions_1", theirs],
    )
    .unwrap();
    conn.execute(set, rusqlite::params!["sqlite_autoindex_shadow_1", ours])
        .unwrap();
    conn.execute_batch("PRAGMA writable_schema = OFF").unwrap();
    drop(conn);
    let check = Connection::open(store).unwrap();
    let found: Option<i64> = check
        .query_row("SELECT rowid FROM sessions WHERE id = ?1", [id], |r| {
            r.get(0)
        })
        .ok();
    assert_eq!(found, None, "the index no longer finds {id}");
    let ok: String = check
        .query_row("PRAGMA quick_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(ok, "ok");
}

#[test]
fn a_pane_a_damaged_index_hides_from_the_first_look_is_restored_after_the_load_and_named() {
    let h = Hangar::new();
    let ws = craft(&Recipe::field(300), &h.work);
    h.import(&ws.json);
    let hidden = ws.panes[4].clone();
    hide_from_the_index(&store_of(&h), &hidden.id);

    h.start_daemon();
    let status = h.wait_restore_complete();
    // The first look forked 8; the full read found the ninth and forked it.
    assert_eq!(status["restore"]["expected"], 9, "{status}");
    assert_eq!(status["restore"]["restored"], 9, "{status}");
    assert_eq!(status["restore"]["hibernated"], 300, "{status}");
    assert_eq!(h.state_of(&hidden.id), "live");
    assert_eq!(
        h.processes_with_flag("--resume", &hidden.psid).len(),
        1,
        "one process for the hidden pane"
    );
    let notices = status["notices"].to_string();
    assert!(
        notices.contains("index and table disagree about 1 pane session(s)")
            && notices.contains(&hidden.id)
            && notices.contains("the index was rebuilt from the table"),
        "{notices}"
    );
    // Rebuilt: the index finds the pane's row again, so a save updates it
    // instead of adding a second row for the session.
    let conn = Connection::open(store_of(&h)).unwrap();
    let by_key: i64 = conn
        .query_row(
            "SELECT count(*) FROM sessions WHERE id = ?1",
            [&hidden.id],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(by_key, 1, "the index finds the pane's one row");
    drop(conn);
    h.shutdown();
    let opened = hangar_store::Store::open(&store_of(&h)).unwrap();
    assert!(opened.recovered.is_none() && opened.pruned.is_empty());
    assert_eq!(opened.workspace.sessions.len(), 9 + 300);
}

#[test]
fn a_rest_that_cannot_be_opened_stops_the_panes_and_leaves_the_file_whole() {
    let mut h = Hangar::new();
    let release = h.root.join("release-the-full-load");
    h.set_env("HANGAR_TEST_HOLD_FULL_LOAD", &release);
    let ws = craft(&Recipe::field(600), &h.work);
    h.import(&ws.json);
    let store = store_of(&h);

    let log = h.root.join("daemon.err");
    let mut child = h
        .command(&["daemon"])
        .stdout(std::process::Stdio::null())
        .stderr(fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let mut held = release.clone().into_os_string();
    held.push(".held");
    let held = PathBuf::from(held);
    h.wait_until("the start holds before its full load", DEADLINE, || {
        held.exists()
    });
    h.wait_until("every pane is forked", DEADLINE, || {
        ws.panes
            .iter()
            .all(|p| h.processes_with_flag("--resume", &p.psid).len() == 1)
    });
    // The file is moved away between the phases (with its companions, as
    // a person's `mv state.db*` would): phase two cannot open it. Nothing
    // says the file is damaged, and no save can be made without it.
    let moved = h.root.join("moved.db");
    for suffix in ["", "-wal", "-shm"] {
        let from = PathBuf::from(format!("{}{suffix}", store.display()));
        if from.exists() {
            fs::rename(&from, format!("{}{suffix}", moved.display())).unwrap();
        }
    }
    fs::write(&release, b"").unwrap();

    let mut exit = None;
    h.wait_until("the daemon exits", DEADLINE, || {
        exit = child.try_wait().unwrap();
        exit.is_some()
    });
    assert!(!exit.unwrap().success(), "the start fails");
    let err = fs::read_to_string(&log).unwrap();
    assert!(err.contains("cannot load the workspace store"), "{err}");
    h.wait_until("the forked panes are stopped", DEADLINE, || {
        h.fake_agent_pids_for_home().is_empty()
    });
    // The file, where it went, opens whole: no recovery, every session.
    let opened = hangar_store::Store::open(&moved).expect("the moved store opens");
    assert!(opened.recovered.is_none(), "{:?}", opened.recovered);
    assert_eq!(opened.workspace.sessions.len(), 9 + 600);
}
