//! hangar's own export/import (the Agent Code import is tested in
//! `agent_code_import.rs`).

use std::collections::BTreeMap;

use hangar_core::SessionId;
use hangar_core::fixtures::{field_workspace, large_workspace};
use hangar_store::{ImportError, export_json, import_hangar_json};
use serde_json::{Value, json};

fn sid(s: &str) -> SessionId {
    SessionId::new(s)
}

/// Reasons of the dropped items, grouped by kind, ids sorted.
fn dropped_by_kind(report: &hangar_store::ImportReport) -> BTreeMap<String, Vec<(String, String)>> {
    let mut by_kind: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
    for d in &report.dropped {
        by_kind
            .entry(d.kind.clone())
            .or_default()
            .push((d.id.clone(), d.reason.clone()));
    }
    for v in by_kind.values_mut() {
        v.sort();
    }
    by_kind
}

#[test]
fn export_then_import_then_export_is_byte_identical() {
    for ws in [field_workspace(), large_workspace(300, 12)] {
        let first = export_json(&ws);
        let report = import_hangar_json(&first).unwrap();
        assert!(report.dropped.is_empty());
        assert_eq!(report.workspace, ws);
        assert_eq!(export_json(&report.workspace), first);
    }
    let doc: Value = serde_json::from_str(&export_json(&field_workspace())).unwrap();
    assert_eq!(doc["format"], "hangar-workspace");
    assert_eq!(doc["version"], 1);
    assert!(doc["workspace"]["sessions"].is_object());
}

#[test]
fn a_newer_export_is_refused_with_a_clear_error() {
    let mut doc: Value = serde_json::from_str(&export_json(&field_workspace())).unwrap();
    doc["version"] = json!(2);
    let err = import_hangar_json(&doc.to_string()).unwrap_err();
    assert!(matches!(
        err,
        ImportError::NewerVersion {
            found: 2,
            supported: 1
        }
    ));
    assert!(err.to_string().contains("upgrade hangar"), "{err}");

    doc["version"] = json!(1);
    doc["format"] = json!("something-else");
    let err = import_hangar_json(&doc.to_string())
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with(r#"format: expected "hangar-workspace", found "something-else""#),
        "{err}"
    );
}

#[test]
fn a_hand_edited_export_is_pruned_on_import_and_says_what_it_dropped() {
    let mut doc: Value = serde_json::from_str(&export_json(&field_workspace())).unwrap();
    doc["workspace"]["parked"]["s00020"]["tab"] = json!("tab-9");
    doc["workspace"]["pins"] = json!(["nobody"]);
    let report = import_hangar_json(&doc.to_string()).unwrap();
    let dropped = dropped_by_kind(&report);
    assert_eq!(
        dropped["parked"],
        vec![(
            "s00020".to_owned(),
            "parked record's project tab tab-9 does not exist".to_owned()
        )]
    );
    assert_eq!(dropped["pin"].len(), 1);
    assert!(!report.workspace.sessions.contains_key(&sid("s00020")));

    doc["workspace"]["tabs"][1]["root"] = json!({"type": "leaf"});
    let err = import_hangar_json(&doc.to_string())
        .unwrap_err()
        .to_string();
    assert!(err.starts_with("workspace.tabs[1]: "), "{err}");
}
