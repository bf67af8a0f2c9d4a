//! Properties over arbitrary inputs: the importers never panic and never
//! return an unclosed workspace; a store round trip of any sequence of valid
//! workspaces is lossless; export -> import -> export is byte-identical.

use hangar_core::{
    Direction, IdSource, PanePosition, Provider, ProviderSessionId, SessionId, SessionMeta, Tab,
    TabId, Workspace,
};
use hangar_store::{Store, export_json, import_agent_code, import_hangar_json};
use proptest::prelude::*;
use serde_json::{Map, Value};

const FIXTURE: &str = include_str!("../fixtures/agent-code/v1-may-2026.json");
const FIXTURE_V3: &str = include_str!("../fixtures/agent-code/v3-stage-september-2026.json");

const KNOWN_KEYS: &[&str] = &[
    "workspace",
    "tabs",
    "id",
    "title",
    "root",
    "type",
    "sessionId",
    "direction",
    "ratio",
    "a",
    "b",
    "focusedSessionId",
    "activeTabId",
    "sessions",
    "cwd",
    "kind",
    "providerSessionId",
    "providerSessionIdSource",
    "linkedParentId",
    "detachedSessions",
    "projectTabId",
    "detachedAt",
    "buried",
    "sessionMeta",
    "sourceTabId",
    "side",
    "pinnedSessionIds",
    "dispatchMode",
    "projects",
    "activeProjectId",
    "stage",
    "lanes",
    "selectedSessionId",
    "focusedLane",
    "projectId",
    "joinedAt",
    "lastUsedAt",
    "windows",
    "workspace",
    "drafts",
    "tmuxName",
    "builtInMcpDomains",
    "orchestrationRole",
    "tiled",
    "format",
    "version",
    "parked",
    "pins",
    "session",
    "tab",
];

const KNOWN_STRINGS: &[&str] = &[
    "leaf",
    "split",
    "vertical",
    "horizontal",
    "a",
    "b",
    "tab-1",
    "tab-2",
    "p-1",
    "p-2",
    "d-01",
    "terminal",
    "jsonl-entry",
    "proxy-header",
    "extension-view",
    "codex",
    "transcript",
    "proxy-header",
    "hangar-workspace",
];

fn arb_key() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => prop::sample::select(KNOWN_KEYS).prop_map(str::to_owned),
        1 => "\\PC{0,6}",
    ]
}

fn arb_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>().prop_filter_map("finite", |f| serde_json::Number::from_f64(f)
            .map(Value::Number)),
        "\\PC{0,8}".prop_map(Value::String),
        prop::sample::select(KNOWN_STRINGS).prop_map(|s| Value::String(s.to_owned())),
    ];
    leaf.prop_recursive(6, 96, 8, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec((arb_key(), inner), 0..8)
                .prop_map(|kv| Value::Object(kv.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

/// Every JSON pointer inside `value`.
fn pointers(value: &Value, at: String, out: &mut Vec<String>) {
    out.push(at.clone());
    match value {
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                pointers(v, format!("{at}/{i}"), out);
            }
        }
        Value::Object(map) => {
            for (k, v) in map {
                let k = k.replace('~', "~0").replace('/', "~1");
                pointers(v, format!("{at}/{k}"), out);
            }
        }
        _ => {}
    }
}

/// A real document with one value somewhere inside replaced by anything.
fn mutated(doc: &Value, pick: prop::sample::Index, replacement: Value) -> Value {
    let mut all = Vec::new();
    pointers(doc, String::new(), &mut all);
    let mut doc = doc.clone();
    let at = &all[pick.index(all.len())];
    if let Some(slot) = doc.pointer_mut(at) {
        *slot = replacement;
    }
    doc
}

fn check_import_result(result: Result<hangar_store::ImportReport, hangar_store::ImportError>) {
    if let Ok(report) = result {
        assert!(hangar_core::is_closed(&report.workspace));
        let _ = export_json(&report.workspace);
    } else if let Err(e) = result {
        assert!(!e.to_string().is_empty());
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn importers_never_panic_on_arbitrary_json(value in arb_json(), wrap in any::<bool>(), windows in any::<bool>()) {
        let value = match (wrap, windows) {
            (true, false) => serde_json::json!({ "workspace": value }),
            (_, true) => serde_json::json!({ "version": 3, "windows": [{ "windowId": "w", "workspace": value }] }),
            (false, false) => value,
        };
        let text = value.to_string();
        check_import_result(import_agent_code(&text));
        check_import_result(import_hangar_json(&text));
    }

    #[test]
    fn importers_never_panic_on_a_real_file_with_one_value_replaced(
        pick in any::<prop::sample::Index>(),
        replacement in arb_json(),
    ) {
        let agent_code: Value = serde_json::from_str(FIXTURE).unwrap();
        check_import_result(import_agent_code(&mutated(&agent_code, pick, replacement.clone()).to_string()));
        let stage: Value = serde_json::from_str(FIXTURE_V3).unwrap();
        check_import_result(import_agent_code(&mutated(&stage, pick, replacement.clone()).to_string()));
        let export: Value =
            serde_json::from_str(&export_json(&hangar_core::fixtures::field_workspace())).unwrap();
        check_import_result(import_hangar_json(&mutated(&export, pick, replacement).to_string()));
    }

    #[test]
    fn importers_never_panic_on_arbitrary_bytes(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        let text = String::from_utf8_lossy(&bytes);
        check_import_result(import_agent_code(&text));
        check_import_result(import_hangar_json(&text));
    }
}

// ---------------------------------------------------------------------------
// Valid workspaces, built through hangar-core's own operations.
// ---------------------------------------------------------------------------

#[derive(Clone, Debug)]
enum Op {
    AddTab(String),
    AddPane {
        tab: usize,
        text: String,
        provider: u8,
        split: Option<(usize, bool)>,
        extra: u64,
    },
    AddParked {
        tab: usize,
        text: String,
        extra: u64,
    },
    Park(usize),
    Unpark(usize),
    Bury(usize),
    Unbury(usize),
    Pin(usize),
    Unpin(usize),
    Ratio(usize, f32),
    Close(usize),
    CloseTab(usize),
    Touch(usize, String),
    SetActive(usize),
    Dispatch(Option<String>, Option<usize>),
    Dangerous(bool),
}

fn arb_op() -> impl Strategy<Value = Op> {
    let text = "\\PC{0,10}";
    prop_oneof![
        1 => text.prop_map(Op::AddTab),
        4 => (any::<usize>(), text, any::<u8>(), any::<Option<(usize, bool)>>(), any::<u64>())
            .prop_map(|(tab, text, provider, split, extra)| Op::AddPane { tab, text, provider, split, extra }),
        3 => (any::<usize>(), text, any::<u64>())
            .prop_map(|(tab, text, extra)| Op::AddParked { tab, text, extra }),
        1 => any::<usize>().prop_map(Op::Park),
        1 => any::<usize>().prop_map(Op::Unpark),
        1 => any::<usize>().prop_map(Op::Bury),
        1 => any::<usize>().prop_map(Op::Unbury),
        1 => any::<usize>().prop_map(Op::Pin),
        1 => any::<usize>().prop_map(Op::Unpin),
        1 => (any::<usize>(), -1.0f32..2.0).prop_map(|(i, r)| Op::Ratio(i, r)),
        1 => any::<usize>().prop_map(Op::Close),
        1 => any::<usize>().prop_map(Op::CloseTab),
        1 => (any::<usize>(), text).prop_map(|(i, t)| Op::Touch(i, t)),
        1 => any::<usize>().prop_map(Op::SetActive),
        1 => (prop::option::of("[a-z]{1,6}"), any::<Option<usize>>()).prop_map(|(m, s)| Op::Dispatch(m, s)),
        1 => any::<bool>().prop_map(Op::Dangerous),
    ]
}

fn nth_session(ws: &Workspace, i: usize) -> Option<SessionId> {
    let n = ws.sessions.len();
    (n > 0)
        .then(|| ws.sessions.keys().nth(i % n).cloned())
        .flatten()
}

fn nth_tab(ws: &Workspace, i: usize) -> Option<TabId> {
    let n = ws.tabs.len();
    (n > 0).then(|| ws.tabs[i % n].id.clone())
}

fn new_meta(
    ws: &Workspace,
    counter: &mut usize,
    text: &str,
    provider: u8,
    extra: u64,
) -> SessionMeta {
    *counter += 1;
    let provider = match provider % 5 {
        0 => Provider::Claude,
        1 => Provider::Codex,
        2 => Provider::Opencode,
        3 => Provider::Shell,
        _ => Provider::Custom(format!("custom-{text}")),
    };
    let mut meta = SessionMeta::new(SessionId::new(format!("s-{counter}")), provider, text);
    meta.title = text.chars().rev().collect();
    meta.created_at_ms = extra;
    meta.last_active_ms = extra / 3;
    meta.dangerous = extra.is_multiple_of(2);
    meta.capture = !extra.is_multiple_of(3);
    meta.mcp = !extra.is_multiple_of(5);
    if extra.is_multiple_of(4) {
        meta.draft = Some(format!("draft {text}"));
    }
    if extra % 3 == 1 {
        let source = [
            IdSource::ResumeRequest,
            IdSource::Transcript,
            IdSource::ProxyHeader,
        ];
        meta.provider_session = Some(ProviderSessionId {
            id: format!("prov-{extra}"),
            source: (!extra.is_multiple_of(7)).then_some(source[(extra % 3) as usize]),
        });
    }
    if let Some(parent) = nth_session(ws, extra as usize) {
        meta.relationships.linked_parent = (extra % 5 == 1).then(|| parent.clone());
        meta.relationships.orchestration_parent = (extra % 5 == 2).then(|| parent.clone());
        meta.relationships.orchestration_root = (extra % 5 == 2).then_some(parent);
        meta.relationships.run = (extra % 5 == 2).then(|| format!("run-{extra}"));
        meta.relationships.role = (extra % 10 == 2).then(|| "reviewer".to_owned());
    }
    meta
}

fn apply(ws: &mut Workspace, op: Op, counter: &mut usize) -> Vec<SessionId> {
    let mut removed = Vec::new();
    let now = 1_700_000_000_000 + *counter as u64;
    match op {
        Op::AddTab(title) => {
            *counter += 1;
            let mut tab = Tab::new(TabId::new(format!("t-{counter}")), title.clone());
            tab.cwd = (!title.is_empty()).then_some(title);
            let _ = ws.add_tab(tab);
        }
        Op::AddPane {
            tab,
            text,
            provider,
            split,
            extra,
        } => {
            if let Some(tab) = nth_tab(ws, tab) {
                let meta = new_meta(ws, counter, &text, provider, extra);
                let leaves = ws.tab(&tab).map(Tab::leaves).unwrap_or_default();
                let position = match split {
                    Some((i, vertical)) if !leaves.is_empty() => PanePosition::Split {
                        target: leaves[i % leaves.len()].clone(),
                        direction: if vertical {
                            Direction::Vertical
                        } else {
                            Direction::Horizontal
                        },
                    },
                    _ => PanePosition::Auto,
                };
                let _ = ws.add_pane_session(meta, &tab, position);
            }
        }
        Op::AddParked { tab, text, extra } => {
            if let Some(tab) = nth_tab(ws, tab) {
                let meta = new_meta(ws, counter, &text, extra as u8, extra);
                let _ = ws.add_parked_session(meta, &tab, now);
            }
        }
        Op::Park(i) => {
            if let Some(id) = nth_session(ws, i) {
                let _ = ws.park(&id, now);
            }
        }
        Op::Unpark(i) => {
            if let Some(id) = nth_session(ws, i) {
                let _ = ws.unpark(&id, None, PanePosition::Auto);
            }
        }
        Op::Bury(i) => {
            if let Some(id) = nth_session(ws, i) {
                let _ = ws.bury(&id, now);
            }
        }
        Op::Unbury(i) => {
            if let Some(id) = nth_session(ws, i) {
                *counter += 1;
                let fallback = TabId::new(format!("t-{counter}"));
                let _ = ws.unbury(&id, || Tab::new(fallback, "restored"));
            }
        }
        Op::Pin(i) => {
            if let Some(id) = nth_session(ws, i) {
                let _ = ws.pin(&id);
            }
        }
        Op::Unpin(i) => {
            if let Some(id) = nth_session(ws, i) {
                let _ = ws.unpin(&id);
            }
        }
        Op::Ratio(i, r) => {
            if let Some(id) = nth_session(ws, i) {
                let _ = ws.set_ratio(&id, r);
            }
        }
        Op::Close(i) => {
            if let Some(id) = nth_session(ws, i) {
                removed = ws.close_cascade(&id);
                ws.remove_sessions(&removed);
            }
        }
        Op::CloseTab(i) => {
            if let Some(tab) = nth_tab(ws, i) {
                removed = ws.remove_tab(&tab).unwrap_or_default();
            }
        }
        Op::Touch(i, title) => {
            if let Some(id) = nth_session(ws, i)
                && let Some(m) = ws.sessions.get_mut(&id)
            {
                m.title = title;
                m.last_active_ms += 1;
            }
        }
        Op::SetActive(i) => {
            if let Some(tab) = nth_tab(ws, i) {
                let _ = ws.set_active_tab(&tab);
            }
        }
        Op::Dispatch(mode, selected) => {
            ws.dispatch.mode = mode;
            ws.dispatch.selected = selected.and_then(|i| nth_session(ws, i));
        }
        Op::Dangerous(on) => ws.settings.dangerous = on,
    }
    removed
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 40, ..ProptestConfig::default() })]

    #[test]
    fn a_store_round_trip_of_any_sequence_of_workspaces_is_lossless(
        batches in prop::collection::vec(prop::collection::vec(arb_op(), 0..30), 1..5),
    ) {
        let dir = tempfile::TempDir::new().unwrap();
        let path = dir.path().join("hangar.db");
        let mut store = Store::open(&path).unwrap().store;
        let mut ws = Workspace::default();
        let mut counter = 0;
        for batch in batches {
            let before = ws.clone();
            for op in batch {
                apply(&mut ws, op, &mut counter);
            }
            prop_assert!(hangar_core::is_closed(&ws), "core operations keep the model closed");
            let removed: Vec<SessionId> = before
                .sessions
                .keys()
                .filter(|id| !ws.sessions.contains_key(*id))
                .cloned()
                .collect();
            store.save(&ws, &removed).unwrap();
            prop_assert_eq!(&store.load_saved().unwrap(), &ws);
            prop_assert_eq!(store.save(&ws, &[]).unwrap(), Default::default());
        }
        drop(store);
        let reopened = Store::open(&path).unwrap();
        prop_assert!(reopened.recovered.is_none());
        prop_assert!(reopened.pruned.is_empty());
        prop_assert_eq!(&reopened.workspace, &ws);

        // And through a fresh store with a single full save.
        let other = dir.path().join("other.db");
        let mut store = Store::open(&other).unwrap().store;
        store.save(&ws, &[]).unwrap();
        drop(store);
        prop_assert_eq!(&Store::open(&other).unwrap().workspace, &ws);
    }

    #[test]
    fn export_then_import_then_export_is_byte_identical_for_any_workspace(
        ops in prop::collection::vec(arb_op(), 0..60),
    ) {
        let mut ws = Workspace::default();
        let mut counter = 0;
        for op in ops {
            apply(&mut ws, op, &mut counter);
        }
        let first = export_json(&ws);
        let report = import_hangar_json(&first).unwrap();
        prop_assert!(report.dropped.is_empty(), "{:?}", report.dropped);
        prop_assert_eq!(&report.workspace, &ws);
        prop_assert_eq!(export_json(&report.workspace), first);
    }
}
