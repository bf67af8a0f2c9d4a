//! Agent Code import and hangar's own export/import.

use std::collections::BTreeMap;

use hangar_core::fixtures::{field_workspace, large_workspace};
use hangar_core::{IdSource, Provider, SessionId, TabId};
use hangar_store::{
    ImportCounts, ImportError, Store, export_json, import_agent_code, import_hangar_json,
};
use serde_json::{Value, json};

const FIXTURE: &str = include_str!("fixtures/agent-code-workspace.json");

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
fn an_agent_code_workspace_with_ghosts_imports_with_the_right_counts() {
    let report = import_agent_code(FIXTURE).expect("the fixture imports");
    assert_eq!(
        report.imported,
        ImportCounts {
            tabs: 3,
            panes: 9,
            parked: 34,
            buried: 4,
            pins: 3,
            sessions: 47,
        }
    );
    let dropped = dropped_by_kind(&report);

    let parked = &dropped["parked"];
    assert_eq!(parked.len(), 6);
    for (id, reason) in parked {
        assert!(id.as_str() >= "d-35", "{id}");
        assert_eq!(reason, "parked record's project tab tab-7 does not exist");
    }
    let sessions = &dropped["session"];
    assert_eq!(sessions.len(), 6 + 3);
    for n in 1..=3 {
        assert!(sessions.contains(&(
            format!("o-{n}"),
            "metadata not referenced by any pane, parked or buried record".to_owned()
        )));
    }
    assert_eq!(
        dropped["pin"],
        vec![
            (
                "d-37".to_owned(),
                "pin points at a missing session".to_owned()
            ),
            (
                "missing-1".to_owned(),
                "pin points at a missing session".to_owned()
            ),
            ("p-1".to_owned(), "pin repeats an earlier pin".to_owned()),
        ]
    );
    assert_eq!(
        dropped["link"],
        vec![
            (
                "d-10".to_owned(),
                "orchestration parent d-36 does not exist".to_owned()
            ),
            (
                "d-10".to_owned(),
                "orchestration root d-36 does not exist".to_owned()
            ),
        ]
    );
    assert_eq!(dropped.len(), 4, "nothing else was dropped: {dropped:?}");

    let ws = &report.workspace;
    assert!(hangar_core::is_closed(ws));
    assert_eq!(ws.active_tab, Some(TabId::new("tab-2")));
    assert_eq!(ws.tabs[0].focus, Some(sid("p-2")));
    assert_eq!(
        ws.tabs[0].leaves(),
        vec![sid("p-1"), sid("p-2"), sid("p-3"), sid("p-4")]
    );
    assert_eq!(ws.dispatch.mode.as_deref(), Some("lanes"));
    assert_eq!(ws.pins, vec![sid("p-1"), sid("d-03"), sid("b-3")]);

    // Providers: absent kind is claude, terminal is the shell.
    assert_eq!(ws.sessions[&sid("p-1")].provider, Provider::Claude);
    assert_eq!(ws.sessions[&sid("p-2")].provider, Provider::Codex);
    assert_eq!(ws.sessions[&sid("p-3")].provider, Provider::Opencode);
    assert_eq!(ws.sessions[&sid("p-4")].provider, Provider::Shell);
    assert_eq!(ws.sessions[&sid("p-4")].provider_session, None);
    // Provider id sources: absent stays None (durable), proxy-header is kept.
    let p1 = ws.sessions[&sid("p-1")].provider_session.clone().unwrap();
    assert_eq!((p1.source, p1.is_durable()), (None, true));
    let p8 = ws.sessions[&sid("p-8")].provider_session.clone().unwrap();
    assert_eq!(p8.source, Some(IdSource::ProxyHeader));
    assert!(!p8.is_durable());

    // Relationships survive hibernation: the orchestration tree is intact.
    let child = &ws.sessions[&sid("d-03")].relationships;
    assert_eq!(child.orchestration_parent, Some(sid("d-01")));
    assert_eq!(child.orchestration_root, Some(sid("d-01")));
    assert_eq!(child.run.as_deref(), Some("run-1"));
    assert_eq!(
        ws.sessions[&sid("p-5")].relationships.linked_parent,
        Some(sid("p-4"))
    );
    assert_eq!(
        ws.sessions[&sid("d-10")].relationships.run.as_deref(),
        Some("run-2")
    );

    // Parked records keep their owner and time.
    let d01 = &ws.parked[&sid("d-01")];
    assert_eq!(
        (d01.tab.as_str(), d01.parked_at_ms),
        ("tab-1", 1_767_000_001_000)
    );
    // Buried records: metadata from sessionMeta, placement data kept.
    let b3 = &ws.buried[&sid("b-3")];
    assert_eq!(b3.sibling, Some(sid("p-9")));
    assert_eq!(b3.side, Some(hangar_core::Side::B));
    assert_eq!(b3.ratio, Some(0.6));
    assert!(ws.sessions.contains_key(&sid("b-3")));
    assert!(
        ws.buried.contains_key(&sid("b-4")),
        "a buried record outlives its tab"
    );

    // The CLI prints the report with --json.
    let printed: Value = serde_json::to_value(&report).unwrap();
    assert_eq!(printed["imported"]["parked"], 34);
    assert_eq!(
        printed["dropped"].as_array().unwrap().len(),
        report.dropped.len()
    );
}

#[test]
fn an_agent_code_import_restores_only_its_panes_and_survives_the_store() {
    let report = import_agent_code(FIXTURE).unwrap();
    let plan = hangar_core::RestorePlan::new(report.workspace.clone());
    assert_eq!(plan.expected(), 9);
    assert_eq!(plan.hibernated(), 34 + 4);
    assert!(plan.pruned.is_empty());

    let dir = tempfile::TempDir::new().unwrap();
    let path = dir.path().join("hangar.db");
    let mut store = Store::open(&path).unwrap().store;
    store.save(&report.workspace, &[]).unwrap();
    drop(store);
    let reopened = Store::open(&path).unwrap();
    assert!(reopened.pruned.is_empty());
    assert_eq!(reopened.workspace, report.workspace);
}

fn fixture_with(edit: impl FnOnce(&mut Value)) -> String {
    let mut doc: Value = serde_json::from_str(FIXTURE).unwrap();
    edit(&mut doc);
    doc.to_string()
}

fn error_of(text: &str) -> String {
    match import_agent_code(text) {
        Ok(_) => panic!("expected an error"),
        Err(e) => e.to_string(),
    }
}

type Edit = Box<dyn FnOnce(&mut Value)>;

#[test]
fn malformed_agent_code_input_names_the_path() {
    let cases: Vec<(Edit, &str)> = vec![
        (
            Box::new(|d| d["workspace"]["tabs"][2]["root"]["a"]["ratio"] = json!("x")),
            r#"workspace.tabs[2].root.a.ratio: expected a number, found "x""#,
        ),
        (
            Box::new(|d| d["workspace"]["tabs"][0]["root"]["b"]["direction"] = json!("diagonal")),
            r#"workspace.tabs[0].root.b.direction: expected "vertical" or "horizontal", found "diagonal""#,
        ),
        (
            Box::new(|d| d["workspace"]["tabs"][1]["root"]["b"]["type"] = json!(3)),
            "workspace.tabs[1].root.b.type: expected a string, found 3",
        ),
        (
            Box::new(|d| {
                d["workspace"]["sessions"]["p-1"]
                    .as_object_mut()
                    .unwrap()
                    .remove("cwd");
            }),
            "workspace.sessions.p-1.cwd: missing required field",
        ),
        (
            Box::new(|d| {
                d["workspace"]["sessions"]["d-04"]["providerSessionIdSource"] = json!("guess")
            }),
            r#"workspace.sessions.d-04.providerSessionIdSource: expected "resume-request", "transcript" or "proxy-header", found "guess""#,
        ),
        (
            Box::new(|d| d["workspace"]["detachedSessions"]["d-07"]["detachedAt"] = json!(-5)),
            "workspace.detachedSessions.d-07.detachedAt: expected a time in milliseconds (a non-negative number), found -5",
        ),
        (
            Box::new(|d| d["workspace"]["buried"][1]["side"] = json!("c")),
            r#"workspace.buried[1].side: expected "a" or "b", found "c""#,
        ),
        (
            Box::new(|d| d["workspace"]["buried"][3]["sessionMeta"]["title"] = json!([1])),
            "workspace.buried[3].sessionMeta.title: expected a string, found an array",
        ),
        (
            Box::new(|d| d["workspace"]["pinnedSessionIds"][1] = json!({})),
            "workspace.pinnedSessionIds[1]: expected a string, found an object",
        ),
        (
            Box::new(|d| d["workspace"]["sessions"]["odd key.with dot"] = json!({"cwd": 1})),
            r#"workspace.sessions["odd key.with dot"].cwd: expected a string, found 1"#,
        ),
        (
            Box::new(|d| d["workspace"]["tabs"][2]["id"] = json!("tab-1")),
            r#"workspace.tabs[2].id: duplicate tab id "tab-1""#,
        ),
        (
            Box::new(|d| d["workspace"] = json!([])),
            "workspace: expected an object, found an array",
        ),
        (
            Box::new(|d| *d = json!("just a string")),
            r#"(top level): expected an object, found "just a string""#,
        ),
    ];
    for (edit, expected) in cases {
        let message = error_of(&fixture_with(edit));
        assert_eq!(message, format!("{expected}; nothing was imported"));
    }
    assert!(matches!(
        import_agent_code("{\"workspace\": "),
        Err(ImportError::Syntax(_))
    ));
    let syntax = error_of("{\n  \"workspace\": {,}\n}");
    assert!(syntax.contains("line 2"), "{syntax}");
}

#[test]
fn an_empty_agent_code_workspace_imports_as_an_empty_workspace() {
    let report = import_agent_code(r#"{"workspace": {}}"#).unwrap();
    assert_eq!(report.imported, ImportCounts::default());
    assert!(report.dropped.is_empty());
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
