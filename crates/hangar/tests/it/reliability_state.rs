//! Issue 10, part 2: corrupt and hostile state on disk. A truncated store,
//! random bytes, a store with one table dropped, a newer schema, a session
//! whose folder is gone or loops through symlinks, and 100,000 sessions:
//! each gives a clear message and a working daemon (a newer schema is
//! refused, per DESIGN.md rule 5), nothing is deleted, and the original
//! file is kept byte for byte.

use crate::reliability_support;
use crate::support;

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Instant;

use reliability_support::{figures, scale};
use support::*;

/// A home with three parked shell sessions saved by a real daemon, which is
/// then shut down. Returns the fixture and the store's bytes.
fn saved_home() -> (Hangar, Vec<u8>) {
    let h = Hangar::new();
    h.start_daemon();
    for t in ["one", "two", "three"] {
        h.new_agent(&["--provider", "shell", "--parked", "--title", t]);
    }
    h.shutdown();
    let bytes = fs::read(store_of(&h)).expect("read the saved store");
    (h, bytes)
}

fn store_of(h: &Hangar) -> PathBuf {
    h.home.join("state.db")
}

/// Files next to the store whose name starts with `state.db.corrupt-`.
fn kept_aside(h: &Hangar) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = fs::read_dir(&h.home)
        .expect("read home")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("state.db.corrupt-") && !n.contains("-wal"))
                && !p.to_string_lossy().ends_with("-shm")
        })
        .collect();
    v.sort();
    v
}

/// Starts the daemon on a damaged store and checks the promise: it serves,
/// says what happened and where the original is, and the original's bytes
/// are all still there.
fn starts_and_keeps_the_original(h: &Hangar, original: &[u8], what: &str) {
    h.start_daemon();
    let status = h.status();
    let notices = status["notices"].to_string();
    assert!(
        notices.contains("damaged") && notices.contains("state.db.corrupt-"),
        "{what}: the daemon should say the store was damaged and where it was kept: {notices}"
    );
    let aside = kept_aside(h);
    assert_eq!(
        aside.len(),
        1,
        "{what}: exactly one kept-aside copy: {aside:?}"
    );
    assert_eq!(
        fs::read(&aside[0]).expect("read the kept file"),
        original,
        "{what}: the kept-aside file is not the original byte for byte"
    );
    // The human output says it too.
    let human = h.ok(&["status"]);
    assert!(
        human.contains("damaged"),
        "{what}: `hangar status` shows the notice: {human}"
    );
    // A working daemon: it takes a change and persists it.
    let id = h.new_agent(&["--provider", "shell", "--parked", "--title", "after"]);
    h.shutdown();
    h.start_daemon();
    assert_eq!(
        h.session(&id)["title"],
        "after",
        "{what}: a change after recovery persists"
    );
    assert_eq!(kept_aside(h).len(), 1, "{what}: the kept-aside copy stays");
}

#[test]
fn a_truncated_store_is_kept_aside_and_the_daemon_starts_and_says_so() {
    let (h, bytes) = saved_home();
    let truncated = &bytes[..bytes.len() / 2];
    fs::write(store_of(&h), truncated).expect("truncate");
    starts_and_keeps_the_original(&h, truncated, "truncated store");
}

#[test]
fn a_store_of_random_bytes_is_kept_aside_and_the_daemon_starts_and_says_so() {
    let h = Hangar::new();
    fs::create_dir_all(&h.home).expect("home");
    let mut x: u32 = 0x9e37_79b9;
    let random: Vec<u8> = (0..16 * 1024)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x as u8
        })
        .collect();
    fs::write(store_of(&h), &random).expect("write random bytes");
    starts_and_keeps_the_original(&h, &random, "random bytes");
}

#[test]
fn a_store_with_one_table_dropped_is_kept_aside_and_the_daemon_starts_and_says_so() {
    let (h, _) = saved_home();
    {
        let conn = rusqlite::Connection::open(store_of(&h)).expect("open store");
        conn.execute_batch("DROP TABLE tabs;")
            .expect("drop a table");
    }
    let dropped = fs::read(store_of(&h)).expect("read");
    starts_and_keeps_the_original(&h, &dropped, "a dropped table");
}

#[test]
fn a_store_from_a_newer_hangar_is_refused_clearly_and_left_untouched() {
    let (h, _) = saved_home();
    {
        let conn = rusqlite::Connection::open(store_of(&h)).expect("open store");
        conn.pragma_update(None, "user_version", 99)
            .expect("bump version");
        conn.pragma_update(None, "journal_mode", "DELETE")
            .expect("no wal left over");
    }
    let before = fs::read(store_of(&h)).expect("read");

    // The foreground daemon refuses with the reason.
    let out = h.run(&["daemon"]);
    assert!(
        !out.status.success(),
        "the daemon must refuse a newer store"
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("newer hangar") && err.contains("99"),
        "the refusal should name the newer schema: {err}"
    );
    // A command that auto-starts the daemon says the same, promptly.
    let err = h.fail(&["status"]);
    assert!(
        err.contains("newer hangar"),
        "`hangar status` should pass the daemon's reason on: {err}"
    );
    assert_eq!(
        fs::read(store_of(&h)).expect("read"),
        before,
        "the file is untouched"
    );
    assert!(kept_aside(&h).is_empty(), "nothing is moved aside");
}

/// A pane in `dir` saved by a daemon, then the daemon shut down.
fn pane_in(h: &Hangar, dir: &Path) -> String {
    fs::create_dir_all(dir).expect("mkdir");
    h.start_daemon();
    let id = h.new_agent(&["--provider", "shell", "--cwd", dir.to_str().expect("utf-8")]);
    h.wait_state(&id, "live");
    h.shutdown();
    id
}

#[test]
fn a_session_whose_folder_is_gone_is_failed_with_the_folder_named_and_kept() {
    let h = Hangar::new();
    let dir = h.root.join("gone-soon");
    let id = pane_in(&h, &dir);
    let other = h.root.join("stays");
    fs::create_dir_all(&other).expect("mkdir");
    fs::remove_dir_all(&dir).expect("remove the folder");

    h.start_daemon();
    h.wait_state(&id, "failed");
    let reason = failure_reason(&h, &id);
    assert!(
        reason.contains(dir.to_str().unwrap()) && reason.contains("does not exist"),
        "the reason names the missing folder: {reason}"
    );
    // The daemon keeps serving and keeps the session's record.
    let second = h.new_agent(&["--provider", "shell", "--cwd", other.to_str().unwrap()]);
    h.wait_state(&second, "live");
    assert_eq!(h.session(&id)["cwd"], dir.to_str().unwrap());
    // A new session asked to start there gets a clear refusal or a failed state.
    let out = h.run(&[
        "--json",
        "new",
        "--provider",
        "shell",
        "--cwd",
        dir.to_str().unwrap(),
    ]);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("does not exist") || text.contains("failed"),
        "{text}"
    );
}

#[test]
fn a_session_folder_that_loops_through_symlinks_is_failed_with_a_clear_reason() {
    let h = Hangar::new();
    let dir = h.root.join("loopy");
    let id = pane_in(&h, &dir);
    fs::remove_dir_all(&dir).expect("remove");
    // loopy -> loopy2 -> loopy
    std::os::unix::fs::symlink(h.root.join("loopy2"), &dir).expect("symlink");
    std::os::unix::fs::symlink(&dir, h.root.join("loopy2")).expect("symlink");

    h.start_daemon();
    h.wait_state(&id, "failed");
    let reason = failure_reason(&h, &id);
    assert!(
        reason.contains(dir.to_str().unwrap()) && reason.contains("symbolic links"),
        "the reason names the folder and the loop: {reason}"
    );
    let out = h.run(&["new", "--provider", "shell", "--cwd", dir.to_str().unwrap()]);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!text.is_empty(), "a new session there says something");
    assert!(
        h.run(&["status"]).status.success(),
        "the daemon still serves"
    );
}

/// The failure reason `ls --json` shows for `id`.
fn failure_reason(h: &Hangar, id: &str) -> String {
    let row = h.session(id);
    row["reason"]
        .as_str()
        .unwrap_or_else(|| panic!("session {id} has no reason: {row}"))
        .to_owned()
}

#[test]
fn a_hundred_thousand_sessions_load_and_the_daemon_serves_them_all() {
    // 100,000 under HANGAR_LONG_TESTS=1; 20,000 keeps the normal run short.
    let total = scale(20_000, 100_000);
    let h = Hangar::new();
    fs::create_dir_all(&h.home).expect("home");
    let ws = hangar_core::fixtures::large_workspace(total, 0);
    let t = Instant::now();
    {
        let mut opened = hangar_store::Store::open(&store_of(&h)).expect("open");
        opened.store.save(&ws, &[]).expect("save 100k sessions");
    }
    let write_ms = t.elapsed().as_millis();
    eprintln!("100k: store written in {write_ms} ms");
    let before = fs::metadata(store_of(&h)).expect("store").len();

    let t = Instant::now();
    h.start_daemon();
    let start_ms = t.elapsed().as_millis();
    eprintln!("100k: daemon answered after {start_ms} ms");
    let status = h.status();
    assert_eq!(status["sessions"]["total"], total as u64, "{status}");
    assert_eq!(
        status["sessions"]["live"], 0,
        "nothing was spawned: {status}"
    );

    let t = Instant::now();
    let rows = h.ls();
    let ls_ms = t.elapsed().as_millis();
    eprintln!("100k: ls took {ls_ms} ms");
    assert_eq!(rows.len(), total);

    let t = Instant::now();
    let work = h.work.to_str().expect("utf-8 path");
    let id = h.new_agent(&[
        "--provider",
        "shell",
        "--parked",
        "--cwd",
        work,
        "--title",
        "one more",
    ]);
    let change_ms = t.elapsed().as_millis();
    h.shutdown();
    h.start_daemon();
    assert_eq!(h.status()["sessions"]["total"], total as u64 + 1);
    assert_eq!(h.session(&id)["title"], "one more");
    assert!(fs::metadata(store_of(&h)).expect("store").len() >= before);
    figures(
        "100k sessions",
        format!(
            "sessions={total} store_bytes={before} write_ms={write_ms} daemon_start_ms={start_ms} \
             ls_ms={ls_ms} one_change_ms={change_ms} (debug build, shared 2-core machine)"
        ),
    );
}
