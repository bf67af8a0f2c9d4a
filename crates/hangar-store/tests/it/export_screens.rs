//! An export carries the last screens of hibernated sessions (DESIGN.md
//! rule 3: a hibernated session keeps its last screen and its draft), and an
//! import brings them back into a fresh store; an export written before
//! screens were exported still imports.

use std::path::PathBuf;

use hangar_core::fixtures::{field_workspace, session_id};
use hangar_core::{SessionId, Workspace};
use hangar_store::{
    SavedScreen, Screens, Store, StoreError, export_document, export_json, import_hangar_json,
};
use serde_json::{Value, json};
use tempfile::TempDir;

fn store_path(dir: &TempDir) -> PathBuf {
    dir.path().join("state").join("hangar.db")
}

/// The field workspace with a draft on one parked session.
fn workspace_with_a_draft() -> Workspace {
    let mut ws = field_workspace();
    let parked = session_id(20);
    ws.sessions
        .get_mut(&parked)
        .expect("s00020 is parked")
        .draft = Some("half-typed: refactor the parser\nsecond line".to_owned());
    ws
}

fn screens() -> Screens {
    let mut screens = Screens::new();
    // What a vt100 screen saves: text with its escape sequences.
    screens.insert(
        session_id(20),
        SavedScreen {
            screen:
                b"\x1b[H\x1b[2J\x1b[1mfake-agent\x1b[m ready\r\n> hello\r\nanswer: 42 \xe2\x9c\x93"
                    .to_vec(),
            updated_ms: 1_700_000_123_456,
        },
    );
    // Not UTF-8: must come back byte for byte all the same.
    screens.insert(
        session_id(21),
        SavedScreen {
            screen: vec![0xff, 0xfe, b'o', b'k', 0x80],
            updated_ms: 7,
        },
    );
    screens
}

#[test]
fn export_and_import_into_a_fresh_store_keep_last_screens_and_drafts() {
    let ws = workspace_with_a_draft();
    let first_home = TempDir::new().unwrap();
    let mut first = Store::open(&store_path(&first_home)).unwrap().store;
    first.save(&ws, &[]).unwrap();
    for (id, saved) in &screens() {
        first
            .save_screen(id, &saved.screen, saved.updated_ms)
            .unwrap();
    }
    let exported = export_document(&ws, &first.screens().unwrap());

    let doc: Value = serde_json::from_str(&exported).unwrap();
    assert_eq!(doc["version"], 1, "adding screens needs no version bump");
    assert!(doc["screens"]["s00020"]["text"].is_string(), "{doc:#}");
    assert!(doc["screens"]["s00021"]["base64"].is_string(), "{doc:#}");

    let report = import_hangar_json(&exported).unwrap();
    assert!(report.dropped.is_empty(), "{:?}", report.dropped);
    assert_eq!(report.screens, screens());
    let second_home = TempDir::new().unwrap();
    let mut second = Store::open(&store_path(&second_home)).unwrap().store;
    second
        .save_with_screens(&report.workspace, &[], &report.screens)
        .unwrap();
    drop(second);

    let reopened = Store::open(&store_path(&second_home)).unwrap();
    assert_eq!(
        reopened.workspace.sessions[&session_id(20)]
            .draft
            .as_deref(),
        Some("half-typed: refactor the parser\nsecond line")
    );
    for (id, saved) in screens() {
        assert_eq!(
            reopened.store.load_screen(&id).unwrap(),
            Some(saved.screen),
            "{id}"
        );
    }
    let again = export_document(&reopened.workspace, &reopened.store.screens().unwrap());
    assert_eq!(
        again, exported,
        "export -> import -> export is byte-identical"
    );
}

#[test]
fn an_export_written_before_screens_were_exported_still_imports() {
    let ws = workspace_with_a_draft();
    let old = export_json(&ws);
    let doc: Value = serde_json::from_str(&old).unwrap();
    assert!(doc.get("screens").is_none(), "{doc:#}");
    let report = import_hangar_json(&old).unwrap();
    assert!(report.screens.is_empty());
    assert_eq!(report.workspace, ws);
    // With no screens, the document is exactly what older hangar wrote.
    assert_eq!(export_document(&ws, &Screens::new()), old);
}

#[test]
fn a_screen_of_a_session_that_is_not_imported_is_dropped_with_its_reason() {
    let ws = field_workspace();
    let mut doc: Value = serde_json::from_str(&export_document(&ws, &screens())).unwrap();
    doc["screens"]["nobody"] = json!({"updated_ms": 1, "text": "stale"});
    let report = import_hangar_json(&doc.to_string()).unwrap();
    assert_eq!(report.screens, screens());
    assert_eq!(report.dropped.len(), 1, "{:?}", report.dropped);
    assert_eq!(report.dropped[0].kind, "screen");
    assert_eq!(report.dropped[0].id, "nobody");
}

#[test]
fn a_malformed_screen_is_refused_with_its_path_and_nothing_is_imported() {
    let ws = field_workspace();
    let base: Value = serde_json::from_str(&export_document(&ws, &screens())).unwrap();
    let cases = [
        (
            json!({"text": 42}),
            "screens.s00020.text: expected a string",
        ),
        (
            json!({"base64": "%%%"}),
            "screens.s00020.base64: not valid base64",
        ),
        (
            json!({"text": "a", "base64": "YQ=="}),
            "screens.s00020: expected exactly one of",
        ),
        (
            json!({"updated_ms": -1, "text": "a"}),
            "screens.s00020.updated_ms: expected a non-negative integer",
        ),
    ];
    for (entry, expected) in cases {
        let mut doc = base.clone();
        doc["screens"]["s00020"] = entry;
        let err = import_hangar_json(&doc.to_string())
            .unwrap_err()
            .to_string();
        assert!(err.starts_with(expected), "{err}");
        assert!(err.ends_with("nothing was imported"), "{err}");
    }
}

#[test]
fn a_screen_for_a_session_the_workspace_lacks_is_refused_and_nothing_is_written() {
    let home = TempDir::new().unwrap();
    let mut store = Store::open(&store_path(&home)).unwrap().store;
    let mut stray = Screens::new();
    stray.insert(
        SessionId::new("nobody"),
        SavedScreen {
            screen: b"x".to_vec(),
            updated_ms: 1,
        },
    );
    let err = store
        .save_with_screens(&field_workspace(), &[], &stray)
        .unwrap_err();
    assert!(
        matches!(err, StoreError::ScreenWithoutSession { .. }),
        "{err}"
    );
    drop(store);
    let reopened = Store::open(&store_path(&home)).unwrap();
    assert!(reopened.workspace.sessions.is_empty());
    assert!(reopened.store.screens().unwrap().is_empty());
}
