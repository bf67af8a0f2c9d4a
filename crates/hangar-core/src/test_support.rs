//! Shorthand for building workspaces in this crate's unit tests.

use crate::model::{Provider, SessionMeta, Tab, TabId, Workspace};
use crate::tile::{Direction, Tile};

pub use crate::tile::shorthand::{h, ids, leaf, sid, split, v};

pub fn tid(id: &str) -> TabId {
    TabId::new(id)
}

pub fn meta(id: &str) -> SessionMeta {
    SessionMeta::new(sid(id), Provider::Claude, "/work")
}

pub fn tab(id: &str, root: Option<Tile>) -> Tab {
    let mut tab = Tab::new(tid(id), id);
    tab.focus = root.as_ref().map(|r| r.first_leaf().clone());
    tab.root = root;
    tab
}

/// A workspace with these tabs (the first active) and metadata for every
/// leaf; add parked and buried records and extra metadata by hand.
pub fn workspace(tabs: Vec<Tab>) -> Workspace {
    let mut ws = Workspace {
        active_tab: tabs.first().map(|t| t.id.clone()),
        ..Workspace::default()
    };
    for t in &tabs {
        for l in t.leaves() {
            ws.sessions
                .insert(l.clone(), SessionMeta::new(l, Provider::Claude, "/work"));
        }
    }
    ws.tabs = tabs;
    ws
}

pub fn add_meta(ws: &mut Workspace, id: &str) {
    ws.sessions.insert(sid(id), meta(id));
}

pub fn add_parked(ws: &mut Workspace, id: &str, tab: &str) {
    add_meta(ws, id);
    ws.parked.insert(
        sid(id),
        crate::model::ParkedRecord {
            session: sid(id),
            tab: tid(tab),
            parked_at_ms: 0,
        },
    );
}

pub fn add_buried(ws: &mut Workspace, id: &str, source_tab: &str, sibling: Option<&str>) {
    add_meta(ws, id);
    ws.buried.insert(
        sid(id),
        crate::model::BuriedRecord {
            session: sid(id),
            source_tab: tid(source_tab),
            sibling: sibling.map(sid),
            side: Some(crate::tile::Side::B),
            direction: Some(Direction::Vertical),
            ratio: Some(0.5),
            buried_at_ms: 0,
        },
    );
}
