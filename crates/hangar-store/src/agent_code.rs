//! Importing Agent Code's `workspace.json` into hangar's model.
//!
//! Agent Code keeps `{"workspace": {tabs, activeTabId, sessions,
//! detachedSessions, buried, pinnedSessionIds, dispatchMode}}`. Its detached
//! sessions become parked records owned by their project tab, its buried
//! panes become buried records, and the result is pruned exactly as hangar
//! prunes its own state, with every dropped item reported with its reason.
//!
//! The input is walked by hand (see `json_walk.rs`) so a malformed value is
//! reported at its exact JSON path. Unknown fields are ignored. The import is
//! a pure function: a whole workspace or an error, never half of one, and it
//! never invents a session: a pane, parked or buried record without metadata
//! is dropped, not given made-up metadata.

use std::collections::BTreeSet;

use serde_json::Value;

use hangar_core::tile::{Direction, Side, Tile, clamp_ratio};
use hangar_core::{
    BuriedRecord, IdSource, ParkedRecord, Provider, ProviderSessionId, Relationships, SessionId,
    SessionMeta, Tab, TabId, Workspace,
};

use crate::import::{self, DroppedItem, ImportError, ImportReport};
use crate::json_walk::Node;

/// Import Agent Code's `workspace.json`.
pub fn import_agent_code(text: &str) -> Result<ImportReport, ImportError> {
    let value: Value = serde_json::from_str(text).map_err(ImportError::Syntax)?;
    let root = Node::root(&value);
    let w = root.field("workspace")?;
    // Fail on a non-object `workspace` even when every field is optional.
    w.opt_field("tabs")?;

    let mut ws = Workspace::default();
    let mut dropped = Vec::new();

    if let Some(sessions) = w.opt_field("sessions")? {
        for (key, entry) in sessions.entries()? {
            let meta = read_meta(SessionId::new(key), &entry)?;
            ws.sessions.insert(meta.id.clone(), meta);
        }
    }

    // Panes first: a session shown in a pane is not also parked or buried.
    let mut shown: BTreeSet<SessionId> = BTreeSet::new();
    if let Some(tabs) = w.opt_field("tabs")? {
        for tab_node in tabs.array()? {
            let id_node = tab_node.field("id")?;
            let id = TabId::new(id_node.str()?);
            if ws.tab(&id).is_some() {
                return Err(id_node.invalid(format!("duplicate tab id {:?}", id.as_str())));
            }
            let title = tab_node.opt_str("title")?.unwrap_or_default();
            let root = match tab_node.opt_field("root")? {
                Some(node) => read_tile(&node, &id, &mut shown, &mut dropped)?,
                None => None,
            };
            let focus = tab_node
                .opt_str("focusedSessionId")?
                .map(SessionId::new)
                .filter(|f| root.as_ref().is_some_and(|r| r.contains(f)));
            ws.tabs.push(Tab {
                id,
                title: title.to_owned(),
                cwd: None,
                root,
                focus,
            });
        }
    }
    ws.active_tab = w.opt_str("activeTabId")?.map(TabId::new);

    if let Some(detached) = w.opt_field("detachedSessions")? {
        for (key, entry) in detached.entries()? {
            let session = SessionId::new(entry.opt_str("sessionId")?.unwrap_or(key));
            let tab = TabId::new(entry.field("projectTabId")?.str()?);
            let parked_at_ms = match entry.opt_field("detachedAt")? {
                Some(at) => at.ms()?,
                None => 0,
            };
            if shown.contains(&session) {
                dropped.push(DroppedItem::new(
                    session.as_str(),
                    "parked",
                    "session is also shown in a pane",
                ));
            } else if ws.parked.contains_key(&session) {
                dropped.push(DroppedItem::new(
                    session.as_str(),
                    "parked",
                    "session is parked twice; the first record was kept",
                ));
            } else {
                ws.parked.insert(
                    session.clone(),
                    ParkedRecord {
                        session,
                        tab,
                        parked_at_ms,
                    },
                );
            }
        }
    }

    if let Some(buried) = w.opt_field("buried")? {
        for entry in buried.array()? {
            let session = SessionId::new(entry.field("sessionId")?.str()?);
            if let Some(meta_node) = entry.opt_field("sessionMeta")? {
                let meta = read_meta(session.clone(), &meta_node)?;
                ws.sessions.entry(session.clone()).or_insert(meta);
            }
            let source_tab = TabId::new(entry.field("sourceTabId")?.str()?);
            let direction = entry
                .opt_field("direction")?
                .map(|n| read_direction(&n))
                .transpose()?;
            let ratio = entry
                .opt_field("ratio")?
                .map(|n| n.f64())
                .transpose()?
                .map(|r| clamp_ratio(r as f32));
            let side = entry
                .opt_field("side")?
                .map(|n| match n.str()? {
                    "a" => Ok(Side::A),
                    "b" => Ok(Side::B),
                    _ => Err(n.expected(r#""a" or "b""#)),
                })
                .transpose()?;
            let sibling = entry.opt_str("siblingLeafId")?.map(SessionId::new);
            let buried_at_ms = match entry.opt_field("buriedAt")? {
                Some(at) => at.ms()?,
                None => 0,
            };
            let conflict = if shown.contains(&session) {
                Some("session is also shown in a pane")
            } else if ws.parked.contains_key(&session) {
                Some("session is also parked")
            } else if ws.buried.contains_key(&session) {
                Some("session is buried twice; the first record was kept")
            } else {
                None
            };
            match conflict {
                Some(reason) => dropped.push(DroppedItem::new(session.as_str(), "buried", reason)),
                None => {
                    ws.buried.insert(
                        session.clone(),
                        BuriedRecord {
                            session,
                            source_tab,
                            sibling,
                            side,
                            direction,
                            ratio,
                            buried_at_ms,
                        },
                    );
                }
            }
        }
    }

    if let Some(pins) = w.opt_field("pinnedSessionIds")? {
        for pin in pins.array()? {
            let id = SessionId::new(pin.str()?);
            if ws.pins.contains(&id) {
                dropped.push(DroppedItem::new(
                    id.as_str(),
                    "pin",
                    "pin repeats an earlier pin",
                ));
            } else {
                ws.pins.push(id);
            }
        }
    }
    ws.dispatch.mode = w.opt_str("dispatchMode")?.map(str::to_owned);

    Ok(import::finish(ws, dropped))
}

/// A `sessions` entry (or a buried record's `sessionMeta`).
fn read_meta(id: SessionId, node: &Node<'_>) -> Result<SessionMeta, ImportError> {
    let cwd = node.field("cwd")?.str()?;
    let provider = match node.opt_str("kind")? {
        None => Provider::Claude,
        Some("terminal") => Provider::Shell,
        Some(name) => Provider::from_name(name),
    };
    let mut meta = SessionMeta::new(id, provider, cwd);
    meta.title = node.opt_str("title")?.unwrap_or_default().to_owned();
    let source = match node.opt_field("providerSessionIdSource")? {
        None => None,
        Some(n) => Some(match n.str()? {
            "resume-request" => IdSource::ResumeRequest,
            "transcript" => IdSource::Transcript,
            "proxy-header" => IdSource::ProxyHeader,
            _ => return Err(n.expected(r#""resume-request", "transcript" or "proxy-header""#)),
        }),
    };
    meta.provider_session = node
        .opt_str("providerSessionId")?
        .filter(|s| !s.is_empty())
        .map(|id| ProviderSessionId {
            id: id.to_owned(),
            source,
        });
    let link = |key: &str| -> Result<Option<SessionId>, ImportError> {
        Ok(node
            .opt_str(key)?
            .filter(|s| !s.is_empty())
            .map(SessionId::new))
    };
    meta.relationships = Relationships {
        linked_parent: link("linkedParentId")?,
        orchestration_parent: link("orchestrationParentId")?,
        orchestration_root: link("orchestrationRootId")?,
        run: node
            .opt_str("orchestrationRunId")?
            .filter(|s| !s.is_empty())
            .map(str::to_owned),
        role: None,
    };
    Ok(meta)
}

fn read_direction(node: &Node<'_>) -> Result<Direction, ImportError> {
    match node.str()? {
        "vertical" => Ok(Direction::Vertical),
        "horizontal" => Ok(Direction::Horizontal),
        _ => Err(node.expected(r#""vertical" or "horizontal""#)),
    }
}

/// A tile tree. A leaf whose session is already shown in a pane is dropped
/// (reported) and its split collapses into the other side.
fn read_tile(
    node: &Node<'_>,
    tab: &TabId,
    shown: &mut BTreeSet<SessionId>,
    dropped: &mut Vec<DroppedItem>,
) -> Result<Option<Tile>, ImportError> {
    let kind = node.field("type")?;
    match kind.str()? {
        "leaf" => {
            let session = SessionId::new(node.field("sessionId")?.str()?);
            if shown.insert(session.clone()) {
                Ok(Some(Tile::leaf(session)))
            } else {
                dropped.push(DroppedItem::new(
                    session.as_str(),
                    "pane",
                    format!("session is already shown in another pane (found again in tab {tab})"),
                ));
                Ok(None)
            }
        }
        "split" => {
            let direction = read_direction(&node.field("direction")?)?;
            let ratio = match node.opt_field("ratio")? {
                Some(r) => r.f64()?,
                None => 0.5,
            };
            let a = read_tile(&node.field("a")?, tab, shown, dropped)?;
            let b = read_tile(&node.field("b")?, tab, shown, dropped)?;
            Ok(match (a, b) {
                (Some(a), Some(b)) => Some(Tile::Split {
                    direction,
                    ratio: clamp_ratio(ratio as f32),
                    a: Box::new(a),
                    b: Box::new(b),
                }),
                (Some(only), None) | (None, Some(only)) => Some(only),
                (None, None) => None,
            })
        }
        _ => Err(kind.expected(r#""leaf" or "split""#)),
    }
}
