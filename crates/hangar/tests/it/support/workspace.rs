//! Crafted persisted workspaces for restore tests: N sessions, V of them
//! panes, the rest parked, each with a provider session id, titles, pins and
//! orchestration links, in the `hangar export` format so `hangar import
//! hangar FILE` writes them to a home's store exactly as a saved workspace.
//!
//! This only builds JSON; it never starts a process.

use std::path::Path;

use serde_json::{Value, json};

/// One crafted session: local id, provider session id, title.
#[derive(Clone, Debug)]
pub struct Crafted {
    pub id: String,
    pub psid: String,
    pub title: String,
}

/// A crafted workspace and the sessions in it.
pub struct CraftedWorkspace {
    pub json: Value,
    /// Pane sessions, tab by tab.
    pub panes: Vec<Crafted>,
    /// Parked sessions, in creation order.
    pub parked: Vec<Crafted>,
    pub tabs: Vec<String>,
}

/// What to craft.
#[derive(Clone, Debug)]
pub struct Recipe {
    pub tabs: usize,
    pub panes_per_tab: usize,
    pub parked: usize,
    /// The provider of each pane, by pane index (default claude).
    pub pane_provider: fn(usize) -> &'static str,
}

impl Recipe {
    /// The field case: 9 panes over 3 tabs plus `parked` parked agents.
    pub fn field(parked: usize) -> Recipe {
        Recipe {
            tabs: 3,
            panes_per_tab: 3,
            parked,
            pane_provider: |_| "claude",
        }
    }
}

fn uuidish(kind: u32, n: usize) -> String {
    format!("{kind:08x}-0000-4000-8000-{n:012x}")
}

/// A left-leaning chain of vertical splits over `leaves`.
fn tile(leaves: &[String]) -> Value {
    match leaves {
        [one] => json!({"type": "leaf", "session": one}),
        [first, rest @ ..] => json!({
            "type": "split",
            "direction": "vertical",
            "ratio": 0.5,
            "a": {"type": "leaf", "session": first},
            "b": tile(rest),
        }),
        [] => Value::Null,
    }
}

fn meta(c: &Crafted, provider: &str, cwd: &Path, relationships: Value) -> Value {
    json!({
        "id": c.id,
        "provider": provider,
        "cwd": cwd.display().to_string(),
        "title": c.title,
        "provider_session": {"id": c.psid, "source": "transcript"},
        "dangerous": false,
        "relationships": relationships,
        "created_at_ms": 1_700_000_000_000u64,
        "last_active_ms": 1_700_000_000_000u64,
        "capture": false,
        "mcp": false,
    })
}

/// The orchestration parent of parked agent `i`: agents come in families of
/// four, the first of each family is the parent of the other three, and
/// parked agent 0 is every family's root.
pub fn orchestration_parent_index(i: usize) -> Option<usize> {
    (!i.is_multiple_of(4)).then_some(i - i % 4)
}

/// Builds the workspace. Parked agents are spread over the tabs round-robin.
/// Pins: the first pane and every tenth parked agent.
pub fn craft(recipe: &Recipe, cwd: &Path) -> CraftedWorkspace {
    let mut tabs = Vec::new();
    let mut sessions = serde_json::Map::new();
    let mut parked_records = serde_json::Map::new();
    let mut panes = Vec::new();
    let mut tab_ids = Vec::new();
    let mut pane_index = 0;
    for t in 0..recipe.tabs {
        let tab_id = uuidish(0x7ab, t);
        let mut leaves = Vec::new();
        for _ in 0..recipe.panes_per_tab {
            let c = Crafted {
                id: uuidish(0xa, pane_index),
                psid: uuidish(0xc1a, pane_index),
                title: format!("pane {pane_index}"),
            };
            let provider = (recipe.pane_provider)(pane_index);
            sessions.insert(c.id.clone(), meta(&c, provider, cwd, json!({})));
            leaves.push(c.id.clone());
            panes.push(c);
            pane_index += 1;
        }
        tabs.push(json!({
            "id": tab_id,
            "title": format!("project {t}"),
            "cwd": cwd.display().to_string(),
            "root": tile(&leaves),
            "focus": leaves.first(),
        }));
        tab_ids.push(tab_id);
    }
    let mut parked = Vec::new();
    for i in 0..recipe.parked {
        let c = Crafted {
            id: uuidish(0xb, i),
            psid: uuidish(0xc1b, i),
            title: format!("parked {i}"),
        };
        let mut rel = serde_json::Map::new();
        if let Some(p) = orchestration_parent_index(i) {
            rel.insert("orchestration_parent".into(), json!(uuidish(0xb, p)));
            rel.insert("orchestration_root".into(), json!(uuidish(0xb, 0)));
            rel.insert("run".into(), json!(format!("run-{}", i / 4)));
        }
        sessions.insert(c.id.clone(), meta(&c, "claude", cwd, Value::Object(rel)));
        parked_records.insert(
            c.id.clone(),
            json!({
                "session": c.id,
                "tab": tab_ids[i % tab_ids.len()],
                "parked_at_ms": 1_700_000_000_000u64,
            }),
        );
        parked.push(c);
    }
    let mut pins: Vec<String> = panes.first().map(|p| p.id.clone()).into_iter().collect();
    pins.extend(parked.iter().step_by(10).map(|p| p.id.clone()));
    let json = json!({
        "format": "hangar-workspace",
        "version": 1,
        "workspace": {
            "tabs": tabs,
            "active_tab": tab_ids.first(),
            "sessions": sessions,
            "parked": parked_records,
            "buried": {},
            "pins": pins,
            "dispatch": {},
            "settings": {"dangerous": false},
        }
    });
    CraftedWorkspace {
        json,
        panes,
        parked,
        tabs: tab_ids,
    }
}
