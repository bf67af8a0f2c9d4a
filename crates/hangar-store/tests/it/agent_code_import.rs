//! The Agent Code import on files in every shape Agent Code has written.
//!
//! The fixtures (tests/fixtures/agent-code, written by gen_fixtures.py) follow
//! docs/src/agent-code-format.md and Agent Code's own source; SOURCES.md there names
//! the source file of each part. These tests replace the ones of the first
//! importer, whose fixture invented a format Agent Code never wrote.

use std::collections::BTreeMap;

use hangar_core::tile::Side;
use hangar_core::{IdSource, Provider, RestorePlan, SessionId, TabId};
use hangar_store::{ImportError, ImportReport, Store, import_agent_code_at};
use serde_json::{Value, json};

const MAY: &str = include_str!("../fixtures/agent-code/v1-may-2026.json");
const JULY: &str = include_str!("../fixtures/agent-code/v1-july-2026.json");
const JULY_TILE_TABS: &str = include_str!("../fixtures/agent-code/v1-july-2026-tile-tabs.json");
const V2: &str = include_str!("../fixtures/agent-code/v2-windows-september-2026.json");
const V3: &str = include_str!("../fixtures/agent-code/v3-stage-september-2026.json");
const IDS: &str = include_str!("../fixtures/agent-code/ids.json");

/// "Now" for sessions the file gives no date (2027-01-15).
const NOW: u64 = 1_800_000_000_000;

/// The uuid the fixture generator gave a name.
fn id(name: &str) -> String {
    let ids: BTreeMap<String, String> = serde_json::from_str(IDS).unwrap();
    ids.get(name)
        .unwrap_or_else(|| panic!("{name} is not in ids.json"))
        .clone()
}

fn sid(name: &str) -> SessionId {
    SessionId::new(id(name))
}

fn import(text: &str) -> ImportReport {
    import_agent_code_at(text, NOW).unwrap_or_else(|e| panic!("the file imports: {e}"))
}

fn counts(r: &ImportReport) -> (usize, usize, usize, usize, usize, usize) {
    let i = r.imported;
    (i.tabs, i.panes, i.parked, i.buried, i.pins, i.sessions)
}

/// An edit of a parsed fixture.
type Edit = Box<dyn Fn(&mut Value)>;

fn kept_of<'a>(r: &'a ImportReport, kind: &str) -> Vec<&'a hangar_store::KeptItem> {
    r.kept.iter().filter(|k| k.kind == kind).collect()
}

#[test]
fn the_may_2026_seed_file_imports_its_panes_parked_agents_and_buried_panes_and_drops_only_ghosts() {
    let r = import(MAY);
    assert_eq!(r.source.as_deref(), Some("agent-code v1"));
    // 3 tabs, 9 panes; 26 of 40 detached records have a tab (14 ghosts of a
    // closed tab); both buried records are kept, even the one whose tab is
    // gone; 4 pins minus the ghost's.
    assert_eq!(counts(&r), (3, 9, 26, 2, 3, 37));
    let ws = &r.workspace;
    assert!(hangar_core::is_closed(ws));
    assert_eq!(ws.active_tab, Some(TabId::new(id("may-tab-web"))));

    // Every ghost is named with what a person needs to resume it by hand.
    let ghosts: Vec<_> = r.dropped.iter().filter(|d| d.kind == "parked").collect();
    assert_eq!(ghosts.len(), 14);
    for g in &ghosts {
        assert!(g.reason.contains("does not exist"), "{g:?}");
        assert_eq!(g.cwd.as_deref(), Some("/home/dev/old-project"));
        assert!(g.provider_session_id.is_some(), "{g:?}");
        assert!(matches!(g.provider.as_deref(), Some("claude" | "codex")));
    }
    let d30 = ghosts.iter().find(|g| g.id == id("may-d30")).unwrap();
    assert_eq!(
        d30.provider_session_id.as_deref(),
        Some(id("may-conv-d30").as_str())
    );

    // Providers: absent kind is claude, terminal is the shell, no source is durable.
    assert_eq!(ws.sessions[&sid("may-p1")].provider, Provider::Claude);
    assert_eq!(ws.sessions[&sid("may-p3")].provider, Provider::Codex);
    let p4 = &ws.sessions[&sid("may-p4")];
    assert_eq!(p4.provider, Provider::Shell);
    assert_eq!(
        p4.tmux_session.as_deref(),
        Some(format!("agentcode-{}", id("may-tmux-4")).as_str())
    );
    let p1 = ws.sessions[&sid("may-p1")]
        .provider_session
        .clone()
        .unwrap();
    assert_eq!((p1.source, p1.is_durable()), (None, true));

    // Roles, runs, links; the link to a ghost is cleared and reported.
    let d03 = &ws.sessions[&sid("may-d03")];
    assert_eq!(d03.relationships.orchestration_parent, Some(sid("may-d01")));
    assert_eq!(d03.relationships.role.as_deref(), Some("tester"));
    assert_eq!(d03.relationships.run.as_deref(), Some("run-7f3a"));
    assert_eq!(
        d03.imported_fields
            .get("orchestrationBootstrapPromptDelivered")
            .map(String::as_str),
        Some("true")
    );
    assert_eq!(
        ws.sessions[&sid("may-p6")].relationships.linked_parent,
        Some(sid("may-p5"))
    );
    let d05 = &ws.sessions[&sid("may-d05")].relationships;
    assert_eq!(
        (d05.orchestration_parent.as_ref(), d05.role.as_deref()),
        (None, Some("fixer"))
    );
    assert!(
        r.dropped
            .iter()
            .any(|d| d.kind == "link" && d.id == id("may-d05"))
    );

    // Drafts (multi-line), MCP off, inherited fields kept verbatim.
    assert_eq!(
        ws.sessions[&sid("may-p2")].draft.as_deref(),
        Some("refactor the router\nand keep the old paths working")
    );
    assert!(
        !ws.sessions[&sid("may-p7")].mcp,
        "builtInMcpDomains [] turns MCP off"
    );
    assert!(ws.sessions[&sid("may-p1")].mcp);
    assert!(
        ws.sessions[&sid("may-d06")]
            .imported_fields
            .contains_key("inheritedParentContext")
    );

    // Dates: detachedAt and buriedAt, never 1970; undated panes are "now".
    let d01 = &ws.parked[&sid("may-d01")];
    assert_eq!(d01.parked_at_ms, 1_779_300_060_000);
    assert_eq!(
        ws.sessions[&sid("may-d01")].last_active_ms,
        1_779_300_060_000
    );
    assert_eq!(ws.sessions[&sid("may-p1")].last_active_ms, NOW);
    let b1 = &ws.buried[&sid("may-b1")];
    assert_eq!(b1.buried_at_ms, 1_779_400_001_000);
    assert_eq!(
        (b1.side, b1.sibling.clone()),
        (Some(Side::B), Some(sid("may-p1")))
    );
    assert_eq!(
        ws.sessions[&sid("may-b1")].last_active_ms,
        1_779_400_001_000
    );
    assert!(
        ws.sessions
            .values()
            .all(|m| m.last_active_ms > 1_700_000_000_000)
    );
    // A buried record outlives its tab, with its metadata from the record.
    assert!(ws.buried.contains_key(&sid("may-b2")));
    assert_eq!(ws.sessions[&sid("may-b2")].cwd, "/home/dev/old-project");

    // Tabs get a folder: the one of the session they show.
    assert_eq!(ws.tabs[0].cwd.as_deref(), Some("/home/dev/api"));
    assert_eq!(ws.tabs[1].cwd.as_deref(), Some("/home/dev/web"));
    // The ratio 0.95 is clamped like any hangar split.
    let infra = serde_json::to_value(&ws.tabs[2].root).unwrap();
    assert_eq!(
        infra["ratio"].as_f64().map(|r| (r * 100.0).round()),
        Some(90.0)
    );
    // The dispatch view: scope and selection kept.
    assert_eq!(ws.dispatch.mode.as_deref(), Some("project"));
    assert_eq!(ws.dispatch.selected, Some(sid("may-d07")));
}

#[test]
fn the_july_2026_file_maps_id_sources_by_agent_codes_own_rule() {
    let r = import(JULY);
    assert_eq!(counts(&r), (2, 4, 3, 0, 1, 7));
    let ws = &r.workspace;
    let source = |n: &str| {
        let p = ws.sessions[&sid(n)].provider_session.clone().unwrap();
        (p.source, p.is_durable())
    };
    assert_eq!(source("jul-p1"), (Some(IdSource::Transcript), true));
    assert_eq!(source("jul-p2"), (Some(IdSource::ResumeRequest), true));
    assert_eq!(source("jul-d1"), (Some(IdSource::ProxyHeader), false));
    assert_eq!(source("jul-d2"), (None, true));
    let p3 = &ws.sessions[&sid("jul-p3")];
    assert_eq!(p3.provider, Provider::Opencode);
    assert_eq!(
        p3.durable_provider_id(),
        Some("ses_3a9f0c2d7e1b4a6c8d5e2f1a0b9c8d7e")
    );
    assert_eq!(
        ws.sessions[&sid("jul-p1")]
            .imported_fields
            .get("agentViewModeOverride")
            .map(String::as_str),
        Some("\"terminal\"")
    );
    assert_eq!(
        ws.sessions[&sid("jul-d3")].relationships.role.as_deref(),
        Some("reviewer")
    );
    assert_eq!(
        ws.sessions[&sid("jul-d1")].draft.as_deref(),
        Some("check the proxy headers")
    );
    assert!(!ws.sessions[&sid("jul-d1")].mcp);
    // The tiled dispatch lanes point at parked agents: kept as lanes, not spawned.
    assert_eq!(ws.dispatch.lanes.len(), 3);
    assert_eq!(ws.dispatch.lanes[1].sessions, vec![sid("jul-d3")]);
    let plan = RestorePlan::new(ws.clone());
    assert_eq!(plan.expected(), 4);
    assert!(!plan.spawn.contains(&sid("jul-d1")));
    assert!(
        !kept_of(&r, "view").is_empty(),
        "the lane sizes are reported"
    );
}

#[test]
fn the_july_2026_tile_tabs_file_imports_each_tab_with_its_panes_and_says_so() {
    let r = import(JULY_TILE_TABS);
    assert_eq!(counts(&r), (2, 4, 3, 0, 1, 7));
    let views = kept_of(&r, "view");
    assert_eq!(views.len(), 1);
    assert!(views[0].note.contains("tile-tabs"), "{views:?}");
    assert_eq!(r.workspace.dispatch.mode, None);
}

#[test]
fn the_v2_multi_window_file_imports_every_window_as_tabs_and_warns_of_shared_conversations() {
    let r = import(V2);
    assert_eq!(r.source.as_deref(), Some("agent-code v2 (2 window(s))"));
    // Window 1: 3 one-pane tabs, 6 parked (7 detached minus the extension
    // view); window 2: a split of 2 panes and a buried pane.
    assert_eq!(counts(&r), (4, 5, 6, 1, 1, 12));
    let ws = &r.workspace;
    let titles: Vec<&str> = ws.tabs.iter().map(|t| t.title.as_str()).collect();
    assert_eq!(titles, ["alpha", "agent-code", "gamma", "scratch"]);
    // The first window's active tab; its focus pointed at a parked session
    // (the recorded owner file's drift), so the tab's own pane is focused.
    assert_eq!(ws.active_tab, Some(TabId::new(id("v2-tab-agent-code"))));
    assert_eq!(ws.tabs[1].focus, Some(sid("v2-575880c6")));

    // Two sessions share one durable conversation: said up front.
    assert_eq!(r.warnings.len(), 1, "{:?}", r.warnings);
    assert!(r.warnings[0].contains(&id("v2-conv-2")), "{:?}", r.warnings);
    assert!(r.warnings[0].contains("hangar doctor"), "{:?}", r.warnings);

    // The extension view is dropped, named.
    let view = r
        .dropped
        .iter()
        .find(|d| d.id == id("v2-7327ced2"))
        .unwrap();
    assert!(
        view.reason.contains("julius-workspace-features.main"),
        "{view:?}"
    );
    assert_eq!(view.cwd.as_deref(), Some("/home/dev/agent-code"));

    // View and naming state kept verbatim; OpenCode's TUI runtime too.
    let oc = &ws.sessions[&sid("v2-e6e19a29")];
    assert_eq!(oc.provider, Provider::Opencode);
    assert_eq!(
        oc.imported_fields
            .get("providerRuntime")
            .map(String::as_str),
        Some("\"terminal\"")
    );
    assert!(oc.imported_fields.contains_key("tldrIdentity"));
    assert!(
        kept_of(&r, "field").is_empty(),
        "every field there is a known one: {:?}",
        r.kept
    );
    // A terminal's draft (Agent Code persists drafts of terminals too).
    assert_eq!(
        ws.sessions[&sid("v2-20c09242")].draft.as_deref(),
        Some("npm run dev")
    );
    // Panes: the tab leaves only, as Agent Code spawns them.
    let plan = RestorePlan::new(ws.clone());
    assert_eq!(plan.expected(), 5);
    assert_eq!(plan.hibernated(), 7);
}

#[test]
fn the_v3_stage_file_shows_only_the_focused_lane_and_parks_every_other_project_member() {
    let r = import(V3);
    assert_eq!(r.source.as_deref(), Some("agent-code v3 (2 window(s))"));
    // 3 projects; the focused lane's session is the one pane; 6 parked
    // (the ghost and the extension view dropped); pins minus the ghost's.
    assert_eq!(counts(&r), (3, 1, 6, 0, 1, 7));
    let ws = &r.workspace;
    let hangar = ws.tab(&TabId::new(id("v3-proj-hangar"))).unwrap();
    assert_eq!(hangar.leaves(), vec![sid("v3-lead")]);
    assert_eq!(hangar.cwd.as_deref(), Some("/home/dev/hangar"));
    assert_eq!(
        ws.tab(&TabId::new(id("v3-proj-site")))
            .unwrap()
            .cwd
            .as_deref(),
        Some("/home/dev/site")
    );
    assert_eq!(
        ws.parked[&sid("v3-worker")].tab,
        TabId::new(id("v3-proj-hangar"))
    );
    assert_eq!(ws.parked[&sid("v3-ml-a")].tab, TabId::new(id("v3-proj-ml")));
    let plan = RestorePlan::new(ws.clone());
    assert_eq!(plan.spawn, vec![sid("v3-lead")]);

    // The other lanes' sessions are parked, and the report says so once each.
    let lanes = kept_of(&r, "lane");
    let mut laned: Vec<&str> = lanes.iter().map(|k| k.id.as_str()).collect();
    laned.sort();
    let mut expected = vec![id("v3-worker"), id("v3-term")];
    expected.sort();
    assert_eq!(laned, expected);
    assert_eq!(ws.dispatch.lanes.len(), 5, "the lanes are kept as pointers");

    // Values later builds added: grok runs as a custom provider, pi as the
    // CLI hangar ships a description of (issue 45); runtime-start and
    // provider-follow ids are durable.
    assert_eq!(
        ws.sessions[&sid("v3-grok")].provider,
        Provider::Custom("grok".into())
    );
    assert_eq!(ws.sessions[&sid("v3-pi")].provider, Provider::Pi);
    let providers: Vec<&str> = kept_of(&r, "provider")
        .iter()
        .map(|k| k.id.as_str())
        .collect();
    assert_eq!(providers, ["grok"], "pi needs no [providers.pi] of its own");
    assert!(
        ws.sessions[&sid("v3-worker")]
            .durable_provider_id()
            .is_some()
    );
    assert!(ws.sessions[&sid("v3-grok")].durable_provider_id().is_some());
    assert!(
        ws.sessions[&sid("v3-proxy")]
            .durable_provider_id()
            .is_none()
    );
    assert_eq!(
        ws.sessions[&sid("v3-worker")].imported_fields["providerSessionIdSource"],
        "\"runtime-start\""
    );
    assert!(!ws.sessions[&sid("v3-pi")].mcp);
    let worker = &ws.sessions[&sid("v3-worker")];
    assert_eq!(worker.relationships.role.as_deref(), Some("implementer"));
    assert_eq!(
        worker.relationships.orchestration_parent,
        Some(sid("v3-lead"))
    );
    assert_eq!(
        worker.draft.as_deref(),
        Some("now split the parser\ninto two passes")
    );

    // Dates: joinedAt (a time) and lastUsedAt; joinedAt 0 is an order, not 1970.
    assert_eq!(worker.created_at_ms, 1_790_100_000_000);
    assert_eq!(ws.parked[&sid("v3-worker")].parked_at_ms, 1_790_100_000_000);
    let term = &ws.sessions[&sid("v3-term")];
    assert_eq!(
        (term.created_at_ms, term.last_active_ms),
        (1_790_100_300_000, 1_790_200_000_000)
    );
    assert_eq!(
        term.tmux_session,
        Some(format!("agentcode-{}", id("v3-tmux-1")))
    );
    assert_eq!(ws.sessions[&sid("v3-lead")].last_active_ms, NOW);

    // The ghost (a project of no window) is dropped with what resumes it.
    let ghost = r.dropped.iter().find(|d| d.id == id("v3-ghost")).unwrap();
    assert_eq!(
        (
            ghost.provider.as_deref(),
            ghost.provider_session_id.as_deref(),
            ghost.cwd.as_deref()
        ),
        (
            Some("claude"),
            Some(id("v3-conv-ghost").as_str()),
            Some("/home/dev/elsewhere")
        )
    );
    // An unknown field is kept verbatim and listed.
    assert_eq!(
        ws.sessions[&sid("v3-proxy")].imported_fields["futureFlag"],
        r#"{"since":"2026-11"}"#
    );
    assert!(kept_of(&r, "field").iter().any(|k| k.id == "futureFlag"));
}

#[test]
fn a_hybrid_payload_reads_its_stage_and_the_v2_owners_of_unstamped_sessions() {
    // Unreleased #992 builds wrote v2 owners beside a v3 triple
    // (workspaceShape.ts: "the hybrid the intermediate #992 builds wrote").
    let doc = json!({"version": 3, "windows": [{"windowId": "w", "workspace": {
        "projects": [{"id": "p1", "title": "one"}],
        "activeProjectId": "p1",
        "stage": {"lanes": [{"selectedSessionId": "b"}], "focusedLane": 0},
        "tabs": [{"id": "p1", "title": "one", "focusedSessionId": "a",
                  "root": {"type": "leaf", "sessionId": "a"}}],
        "detachedSessions": {"b": {"sessionId": "b", "surface": "dispatch", "projectTabId": "p1",
            "projectTabTitle": "one", "projectTabIndex": 0, "detachedAt": 1789000000000u64}},
        "buried": [{"id": "c", "sessionId": "c", "sessionMeta": {"cwd": "/c"}, "buriedAt": 5,
            "sourceTabId": "gone", "sourceTabTitle": "x", "sourceTabIndex": 3}],
        "sessions": {"a": {"cwd": "/a"}, "b": {"cwd": "/b"}, "z": {"cwd": "/z"}}
    }}]});
    let r = import(&doc.to_string());
    let ws = &r.workspace;
    // The stage decides the pane (b); the old tree's leaf a is a member,
    // parked; the buried c whose tab is gone goes to the active project; z
    // has no owner and is dropped.
    assert_eq!(ws.tabs[0].leaves(), vec![SessionId::new("b")]);
    assert_eq!(ws.parked[&SessionId::new("a")].tab.as_str(), "p1");
    assert_eq!(ws.parked[&SessionId::new("c")].tab.as_str(), "p1");
    assert!(!ws.sessions.contains_key(&SessionId::new("z")));
    assert!(
        r.dropped
            .iter()
            .any(|d| d.id == "z" && d.cwd.as_deref() == Some("/z"))
    );
}

#[test]
fn an_april_file_with_a_version_beside_workspace_reads_as_v1_with_its_old_field_names() {
    // workspaceFile.ts: `{"workspace"}` without `windows` is v1 whatever the
    // version beside it; `ccSessionId` was the provider id's April name.
    let doc = json!({"version": 2, "workspace": {
        "tabs": [{"id": "t", "title": "t", "focusedSessionId": "s",
                  "root": {"type": "leaf", "sessionId": "s"}}],
        "activeTabId": "t",
        "sessions": {"s": {"cwd": "/w", "ccSessionId": "11111111-2222-4333-8444-555555555555"}}
    }});
    let r = import(&doc.to_string());
    assert_eq!(r.source.as_deref(), Some("agent-code v1"));
    let meta = &r.workspace.sessions[&SessionId::new("s")];
    assert_eq!(
        meta.durable_provider_id(),
        Some("11111111-2222-4333-8444-555555555555")
    );
    assert_eq!(r.workspace.tabs[0].cwd.as_deref(), Some("/w"));
}

#[test]
fn unknown_values_fields_and_view_states_never_refuse_a_file() {
    let edits: Vec<(&str, Edit)> = vec![
        (
            "kind",
            Box::new(|d| d["workspace"]["sessions"][id("jul-p1")]["kind"] = json!("gemini")),
        ),
        (
            "source",
            Box::new(|d| {
                d["workspace"]["sessions"][id("jul-p1")]["providerSessionIdSource"] =
                    json!("from-the-future")
            }),
        ),
        (
            "dispatch",
            Box::new(|d| d["workspace"]["dispatchMode"] = json!("lanes")),
        ),
        (
            "tileTabs",
            Box::new(|d| d["workspace"]["tileTabs"] = json!([1, 2])),
        ),
        (
            "payload key",
            Box::new(|d| d["workspace"]["sidebarWidth"] = json!(280)),
        ),
        (
            "session field",
            Box::new(|d| d["workspace"]["sessions"][id("jul-p2")]["colorFlag"] = json!("red")),
        ),
        (
            "lanes",
            Box::new(|d| d["workspace"]["dispatchMode"]["tiled"] = json!({"lanes": 7})),
        ),
    ];
    for (what, edit) in edits {
        let mut doc: Value = serde_json::from_str(JULY).unwrap();
        edit(&mut doc);
        let r = import_agent_code_at(&doc.to_string(), NOW)
            .unwrap_or_else(|e| panic!("{what}: refused: {e}"));
        assert_eq!(r.imported.sessions, 7, "{what}: nothing was lost");
    }
    let mut doc: Value = serde_json::from_str(JULY).unwrap();
    doc["workspace"]["sessions"][id("jul-p1")]["providerSessionIdSource"] =
        json!("from-the-future");
    let r = import(&doc.to_string());
    assert!(
        r.workspace.sessions[&sid("jul-p1")]
            .durable_provider_id()
            .is_some()
    );

    // A newer envelope version: read by the shape of its payloads, and said.
    let mut doc: Value = serde_json::from_str(V3).unwrap();
    doc["version"] = json!(4);
    let r = import(&doc.to_string());
    assert_eq!(counts(&r), (3, 1, 6, 0, 1, 7));
    assert!(
        r.kept
            .iter()
            .any(|k| k.kind == "format" && k.note.contains("version 4"))
    );
    // A window without a workspace is skipped, like Agent Code does.
    let mut doc: Value = serde_json::from_str(V3).unwrap();
    doc["windows"][1] = json!({"windowId": "broken"});
    let r = import(&doc.to_string());
    assert!(
        r.dropped
            .iter()
            .any(|d| d.kind == "window" && d.id == "broken")
    );
    assert_eq!(r.imported.tabs, 2);
}

fn error_of(text: &str) -> String {
    match import_agent_code_at(text, NOW) {
        Ok(_) => panic!("expected an error"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn malformed_agent_code_input_names_the_path_of_the_bad_value() {
    let p1 = id("may-p1");
    let cases: Vec<(Edit, String)> = vec![
        (
            Box::new(|d| d["workspace"]["tabs"][2]["root"]["a"]["ratio"] = json!("x")),
            r#"workspace.tabs[2].root.a.ratio: expected a number, found "x""#.to_owned(),
        ),
        (
            Box::new(|d| d["workspace"]["tabs"][0]["root"]["b"]["direction"] = json!("diagonal")),
            r#"workspace.tabs[0].root.b.direction: expected "vertical" or "horizontal", found "diagonal""#.to_owned(),
        ),
        (
            Box::new(move |d| {
                d["workspace"]["sessions"][id("may-p1")]
                    .as_object_mut()
                    .unwrap()
                    .remove("cwd");
            }),
            format!("workspace.sessions.{p1}.cwd: missing required field"),
        ),
        (
            Box::new(|d| d["workspace"]["detachedSessions"][id("may-d07")]["detachedAt"] = json!(-5)),
            format!(
                "workspace.detachedSessions.{}.detachedAt: expected a time in milliseconds (a non-negative number), found -5",
                id("may-d07")
            ),
        ),
        (
            Box::new(|d| d["workspace"]["buried"][0]["side"] = json!("c")),
            r#"workspace.buried[0].side: expected "a" or "b", found "c""#.to_owned(),
        ),
        (
            Box::new(|d| d["workspace"]["pinnedSessionIds"][1] = json!({})),
            "workspace.pinnedSessionIds[1]: expected a string, found an object".to_owned(),
        ),
        (
            Box::new(|d| d["workspace"]["sessions"]["odd key.with dot"] = json!({"cwd": 1})),
            r#"workspace.sessions["odd key.with dot"].cwd: expected a string, found 1"#.to_owned(),
        ),
        (
            Box::new(|d| d["workspace"] = json!([])),
            "workspace: expected an object, found an array".to_owned(),
        ),
        (
            Box::new(|d| *d = json!({"windows": "no"})),
            "windows: expected an array, found \"no\"".to_owned(),
        ),
        (
            Box::new(|d| *d = json!({"tabs": []})),
            "(top level): expected Agent Code's workspace.json: an object with \"workspace\" (v1) or \"windows\" (v2 and v3)".to_owned(),
        ),
    ];
    for (edit, expected) in cases {
        let mut doc: Value = serde_json::from_str(MAY).unwrap();
        edit(&mut doc);
        assert_eq!(
            error_of(&doc.to_string()),
            format!("{expected}; nothing was imported")
        );
    }
    // v3: the path runs through the window.
    let mut doc: Value = serde_json::from_str(V3).unwrap();
    doc["windows"][0]["workspace"]["sessions"][id("v3-lead")]["title"] = json!(7);
    assert_eq!(
        error_of(&doc.to_string()),
        format!(
            "windows[0].workspace.sessions.{}.title: expected a string, found 7; nothing was imported",
            id("v3-lead")
        )
    );
    assert!(matches!(
        import_agent_code_at("{\"workspace\": ", NOW),
        Err(ImportError::Syntax(_))
    ));
    let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
    assert!(
        error_of(&deep).contains("not valid JSON"),
        "{}",
        error_of(&deep)
    );
}

#[test]
fn every_fixture_survives_the_store_and_restores_only_what_agent_code_shows() {
    for (name, text, spawned) in [
        ("may", MAY, 9),
        ("july", JULY, 4),
        ("tile-tabs", JULY_TILE_TABS, 4),
        ("v2", V2, 5),
        ("v3", V3, 1),
    ] {
        let report = import(text);
        let plan = RestorePlan::new(report.workspace.clone());
        assert_eq!(plan.expected(), spawned, "{name}");
        assert!(
            plan.pruned.is_empty(),
            "{name}: the import is already pruned"
        );

        let dir = tempfile::TempDir::new().unwrap();
        let path = dir.path().join("hangar.db");
        let mut store = Store::open(&path).unwrap().store;
        store.save(&report.workspace, &[]).unwrap();
        drop(store);
        let reopened = Store::open(&path).unwrap();
        assert!(reopened.pruned.is_empty(), "{name}");
        assert_eq!(reopened.workspace, report.workspace, "{name}");
        // And hangar's own export carries every imported field.
        let again = hangar_store::import_hangar_json(&hangar_store::export_json(&report.workspace))
            .unwrap();
        assert_eq!(again.workspace, report.workspace, "{name}");
    }
}
