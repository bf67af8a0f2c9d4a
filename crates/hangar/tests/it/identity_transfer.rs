//! Process-level tests of import and export: an Agent Code workspace through
//! the CLI and a daemon start, and a lossless hangar export round trip.

use crate::support;

use std::fs;

use serde_json::Value;
use support::{DEADLINE, Hangar, fake_agent_bin};

// Agent Code's May 2026 file (the seed's shape), written from Agent Code's
// source: see hangar-store/tests/fixtures/agent-code/SOURCES.md.
const AGENT_CODE: &str =
    include_str!("../../../hangar-store/tests/fixtures/agent-code/v1-may-2026.json");
const IDS: &str = include_str!("../../../hangar-store/tests/fixtures/agent-code/ids.json");

fn fixture_id(name: &str) -> String {
    let ids: Value = serde_json::from_str(IDS).unwrap();
    ids[name].as_str().unwrap().to_owned()
}

/// The fixture with every `cwd` pointed at `dir`, so its agents can start.
fn agent_code_in(dir: &std::path::Path) -> String {
    fn retarget(v: &mut Value, dir: &str) {
        match v {
            Value::Object(map) => {
                for (k, v) in map.iter_mut() {
                    if k == "cwd" && v.is_string() {
                        *v = Value::String(dir.to_owned());
                    } else {
                        retarget(v, dir);
                    }
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|i| retarget(i, dir)),
            _ => {}
        }
    }
    let mut doc: Value = serde_json::from_str(AGENT_CODE).unwrap();
    retarget(&mut doc, &dir.display().to_string());
    doc.to_string()
}

#[test]
fn an_agent_code_file_imports_with_the_right_counts_and_a_start_spawns_exactly_its_panes() {
    // The fixture's terminal pane runs the fake agent too, so every pane is
    // countable as a hangar-fake-agent process.
    let fake = fake_agent_bin().display().to_string();
    let h = Hangar::with_env(&[("HANGAR_SHELL", &fake)]);
    let file = h.root.join("workspace.json");
    fs::write(&file, agent_code_in(&h.work)).unwrap();

    let report = h.json(&["import", "agent-code", file.to_str().unwrap()]);
    let imported = &report["imported"];
    assert_eq!(
        (
            &imported["tabs"],
            &imported["panes"],
            &imported["parked"],
            &imported["buried"],
            &imported["pins"],
            &imported["sessions"]
        ),
        (
            &Value::from(3),
            &Value::from(9),
            &Value::from(26),
            &Value::from(2),
            &Value::from(3),
            &Value::from(37)
        ),
        "{report}"
    );
    assert!(
        h.daemon_pid_opt().is_none(),
        "an offline import starts nothing"
    );
    assert!(h.fake_agent_pids_for_home().is_empty());

    h.start_daemon();
    h.wait_until("the restore is complete", DEADLINE, || {
        h.status()["restore"]["complete"] == true
    });
    let status = h.status();
    assert_eq!(status["restore"]["expected"], 9, "{status}");
    assert_eq!(status["restore"]["failed"], 0, "{status}");
    h.wait_until("nine agents run", DEADLINE, || {
        h.session_agent_pids().len() == 9
    });
    let rows = h.ls();
    assert_eq!(rows.len(), 37);
    let live: Vec<&str> = rows
        .iter()
        .filter(|r| r["state"] == "live")
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    assert_eq!(live.len(), 9, "{live:?}");
    let panes: Vec<String> = (1..=9).map(|n| fixture_id(&format!("may-p{n}"))).collect();
    assert!(
        live.iter().all(|id| panes.iter().any(|p| p == id)),
        "{live:?}"
    );
    // Orchestration links survived the import.
    assert_eq!(
        h.session(&fixture_id("may-d03"))["parent"],
        fixture_id("may-d01").as_str()
    );
    // Still exactly the panes once everything settled.
    assert_eq!(h.session_agent_pids().len(), 9);
}

#[test]
fn export_then_import_into_a_fresh_home_then_export_is_byte_identical() {
    let a = Hangar::new();
    let pane = a.new_pane();
    a.new_agent(&[
        "--provider",
        "codex",
        "--split",
        &pane,
        "--direction",
        "vertical",
    ]);
    let parked = a.new_agent(&["--provider", "claude", "--parked", "--title", "later"]);
    a.ok(&["pin", &parked]);
    a.wait_until(
        "the pane's id is confirmed by its transcript",
        DEADLINE,
        || a.session(&pane)["provider_session_source"] == "transcript",
    );
    a.ok(&["send", &pane, "/clear"]);
    a.wait_screen(&pane, "cleared: new session");
    a.wait_until("the pane's id history has the clear", DEADLINE, || {
        a.ok(&["export"]).contains("provider_id_history")
    });
    let first = a.ok(&["export"]);
    let doc: Value = serde_json::from_str(&first).expect("export is one JSON document");
    assert_eq!(doc["format"], "hangar-workspace");

    let b = Hangar::new();
    let file = b.root.join("export.json");
    fs::write(&file, &first).unwrap();
    b.ok(&["import", "hangar", file.to_str().unwrap()]);
    let second = b.ok(&["export"]);
    assert!(b.daemon_pid_opt().is_none(), "exporting starts no daemon");
    assert_eq!(first, second);
}
