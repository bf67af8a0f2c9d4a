//! hangar's own JSON export: a versioned, deterministic document, and its
//! import.
//!
//! The document is `{"format":"hangar-workspace","version":1,"workspace":{..},
//! "screens":{..}}`, pretty printed. `screens` (the last screen of each
//! session that has one, see `screen.rs`) was added without a version bump:
//! it is optional on import, so an export written before it still imports,
//! and an older hangar, which reads only `workspace`, still imports a newer
//! export (losing only the screens, as it would have before). Maps are `BTreeMap`s, so the same workspace always exports
//! to the same bytes and export -> import -> export is byte-identical. An
//! import never accepts a newer version (it would silently lose what it does
//! not understand) and always prunes what it reads (which also clamps split
//! ratios and re-files misfiled records).

use std::collections::BTreeMap;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use hangar_core::{SessionId, TabId, Workspace};

use crate::import::{self, DroppedItem, ImportError, ImportReport};
use crate::json_walk::Node;
use crate::screen::{self, ExportedScreen, Screens};

/// The `format` field of every hangar export.
pub const EXPORT_FORMAT: &str = "hangar-workspace";
/// The export format version this build writes and the newest it reads.
pub const EXPORT_VERSION: u64 = 1;

#[derive(Serialize)]
struct ExportDocument<'a> {
    format: &'static str,
    version: u64,
    workspace: &'a Workspace,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    screens: BTreeMap<&'a str, ExportedScreen>,
}

/// The workspace alone (no screens) as a pretty-printed, deterministic JSON
/// document.
pub fn export_json(ws: &Workspace) -> String {
    export_document(ws, &Screens::new())
}

/// The workspace and the saved screens of its sessions as a pretty-printed,
/// deterministic JSON document. Screens of sessions that are not in `ws`
/// are left out.
pub fn export_document(ws: &Workspace, screens: &Screens) -> String {
    let doc = ExportDocument {
        format: EXPORT_FORMAT,
        version: EXPORT_VERSION,
        workspace: ws,
        screens: screens
            .iter()
            .filter(|(id, _)| ws.sessions.contains_key(*id))
            .map(|(id, saved)| (id.as_str(), ExportedScreen::from(saved)))
            .collect(),
    };
    // Cannot fail: every map key is a string and serde_json writes
    // non-finite floats as null instead of failing.
    let mut text = serde_json::to_string_pretty(&doc).expect("a workspace always serializes");
    text.push('\n');
    text
}

/// Read a hangar export. Refuses a newer `version`; prunes what it reads.
/// The screens it carries come back in [`ImportReport::screens`], only for
/// sessions that survived pruning.
pub fn import_hangar_json(text: &str) -> Result<ImportReport, ImportError> {
    let value: Value = serde_json::from_str(text).map_err(ImportError::Syntax)?;
    let root = Node::root(&value);
    let format = root.field("format")?;
    if format.str()? != EXPORT_FORMAT {
        return Err(format.expected(&format!("{EXPORT_FORMAT:?}")));
    }
    let version = root.field("version")?;
    match version.u64()? {
        0 => return Err(version.expected("a format version of at least 1")),
        found if found > EXPORT_VERSION => {
            return Err(ImportError::NewerVersion {
                found,
                supported: EXPORT_VERSION,
            });
        }
        _ => {}
    }
    let ws = read_workspace(&root.field("workspace")?)?;
    let screens = screen::read_screens(root.opt_field("screens")?)?;
    let mut report = import::finish(ws, Vec::new());
    for (id, saved) in screens {
        if report.workspace.sessions.contains_key(&id) {
            report.screens.insert(id, saved);
        } else {
            report.dropped.push(DroppedItem::new(
                id.as_str(),
                "screen",
                "screen of a session that is not in the imported workspace",
            ));
        }
    }
    Ok(report)
}

/// Decode one record with serde, reporting failures at the record's path.
fn typed<T: DeserializeOwned>(node: &Node<'_>) -> Result<T, ImportError> {
    T::deserialize(node.value()).map_err(|e| node.invalid(e.to_string()))
}

fn read_workspace(node: &Node<'_>) -> Result<Workspace, ImportError> {
    let mut ws = Workspace::default();
    if let Some(tabs) = node.opt_field("tabs")? {
        for tab_node in tabs.array()? {
            let tab: hangar_core::Tab = typed(&tab_node)?;
            if ws.tab(&tab.id).is_some() {
                return Err(tab_node
                    .field("id")?
                    .invalid(format!("duplicate tab id {:?}", tab.id.as_str())));
            }
            ws.tabs.push(tab);
        }
    }
    ws.active_tab = node.opt_str("active_tab")?.map(TabId::new);
    if let Some(sessions) = node.opt_field("sessions")? {
        for (key, entry) in sessions.entries()? {
            let meta: hangar_core::SessionMeta = typed(&entry)?;
            if meta.id.as_str() != key {
                return Err(entry.field("id")?.invalid(format!(
                    "session id {:?} does not match its key {key:?}",
                    meta.id.as_str()
                )));
            }
            ws.sessions.insert(meta.id.clone(), meta);
        }
    }
    if let Some(parked) = node.opt_field("parked")? {
        for (key, entry) in parked.entries()? {
            let rec: hangar_core::ParkedRecord = typed(&entry)?;
            if rec.session.as_str() != key {
                return Err(entry.field("session")?.invalid(format!(
                    "session {:?} does not match its key {key:?}",
                    rec.session.as_str()
                )));
            }
            ws.parked.insert(rec.session.clone(), rec);
        }
    }
    if let Some(buried) = node.opt_field("buried")? {
        for (key, entry) in buried.entries()? {
            let rec: hangar_core::BuriedRecord = typed(&entry)?;
            if rec.session.as_str() != key {
                return Err(entry.field("session")?.invalid(format!(
                    "session {:?} does not match its key {key:?}",
                    rec.session.as_str()
                )));
            }
            ws.buried.insert(rec.session.clone(), rec);
        }
    }
    if let Some(pins) = node.opt_field("pins")? {
        for pin in pins.array()? {
            ws.pins.push(SessionId::new(pin.str()?));
        }
    }
    if let Some(dispatch) = node.opt_field("dispatch")? {
        ws.dispatch = typed(&dispatch)?;
    }
    if let Some(settings) = node.opt_field("settings")? {
        ws.settings = typed(&settings)?;
    }
    Ok(ws)
}
