//! Process-level test that `hangar export` / `hangar import hangar FILE`
//! keep what a hibernated session shows (DESIGN.md rule 3: a hibernated
//! session keeps its last screen and its draft), also into a fresh home
//! where no daemon has ever run.

use crate::support;

use std::fs;

use serde_json::{Value, json};
use support::Hangar;

#[test]
fn a_hibernated_session_keeps_its_last_screen_and_draft_through_export_and_import_into_a_fresh_home()
 {
    let a = Hangar::new();
    let id = a.new_pane();
    a.wait_screen(&id, "> ");
    a.ok(&["send", &id, "remember the parser refactor"]);
    a.wait_screen(&id, "answer: remember the parser refactor");
    // Parked, so no restore of the new home wakes it (a visible pane would
    // be spawned and show a fresh screen instead of the saved one).
    a.ok(&["park", &id]);
    a.ok(&["hibernate", &id]);
    a.wait_state(&id, "hibernated");
    let saved_in_a = a.json(&["screen", &id]);
    assert_eq!(saved_in_a["source"], "saved", "{saved_in_a}");
    assert!(
        saved_in_a["screen"]
            .as_str()
            .unwrap_or_default()
            .contains("answer: remember the parser refactor"),
        "{saved_in_a}"
    );

    let exported = a.ok(&["export"]);
    let mut doc: Value = serde_json::from_str(&exported).expect("export is one JSON document");
    assert!(doc["screens"][&id]["text"].is_string(), "{doc:#}");
    // No command sets a draft (the TUI and Agent Code keep them): write one
    // into the document as they would.
    let draft = "half-typed: and then add tests\nfor the lexer";
    doc["workspace"]["sessions"][&id]["draft"] = json!(draft);

    let b = Hangar::new();
    let file = b.root.join("export.json");
    fs::write(&file, serde_json::to_vec_pretty(&doc).unwrap()).unwrap();
    let report = b.json(&["import", "hangar", file.to_str().unwrap()]);
    assert_eq!(report["screens"], 1, "{report}");
    assert!(
        b.daemon_pid_opt().is_none(),
        "an import into a home with no daemon starts none"
    );

    // `hangar screen` starts b's daemon, which restores nothing of a parked
    // hibernated session: what it shows is the screen the export carried.
    let shown = b.json(&["screen", &id]);
    assert_eq!(shown["source"], "saved", "{shown}");
    assert_eq!(shown["screen"], saved_in_a["screen"], "{shown}");
    assert_eq!(b.state_of(&id), "hibernated");

    let again: Value = serde_json::from_str(&b.ok(&["export"])).unwrap();
    assert_eq!(again["workspace"]["sessions"][&id]["draft"], draft);
    assert_eq!(again["screens"][&id], doc["screens"][&id]);
}

/// A history's lines from `hangar screen ID --scrollback 100000 --json`.
fn history(h: &Hangar, id: &str) -> Vec<String> {
    h.json(&["screen", id, "--scrollback", "100000"])["history"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|l| l.as_str().unwrap_or_default().to_owned())
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn a_hibernated_sessions_history_goes_through_export_and_import_into_a_fresh_home() {
    let a = Hangar::new();
    a.ok(&["status"]);
    let id = a.new_agent(&["--provider", "shell"]);
    a.ok(&["send", &id, "seq 1 3000"]);
    a.wait_screen(&id, "3000");
    a.ok(&["park", &id]);
    a.ok(&["hibernate", &id]);
    a.wait_state(&id, "hibernated");
    let kept = history(&a, &id);
    let starts_at_1 = |lines: &[String]| {
        lines
            .windows(3)
            .any(|w| w[0] == "1" && w[1] == "2" && w[2] == "3")
    };
    assert!(starts_at_1(&kept), "{:?}", &kept[..kept.len().min(5)]);

    let b = Hangar::new();
    let file = b.root.join("export.json");
    fs::write(&file, a.ok(&["export"])).unwrap();
    b.ok(&["import", "hangar", file.to_str().unwrap()]);
    let shown = b.json(&["screen", &id]);
    assert_eq!(shown["source"], "saved", "{shown}");
    assert_eq!(history(&b, &id), kept, "the same history in the new home");
    assert_eq!(b.state_of(&id), "hibernated");
}
