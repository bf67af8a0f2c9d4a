//! What an import returns, and the last step every import shares: prune the
//! mapped workspace exactly as hangar prunes its own state, and say what was
//! dropped and why.
//!
//! An import is a pure function: it returns a whole workspace or an error,
//! never half of one. It never invents a session, a tab or a pane.

use serde::Serialize;
use thiserror::Error;

use std::collections::BTreeMap;

use hangar_core::{SessionId, SessionMeta, Workspace};

use crate::screen::Screens;

/// An import that could not be done. Nothing was imported.
#[derive(Debug, Error)]
pub enum ImportError {
    /// The text is not JSON at all (the message has line and column).
    #[error("the file is not valid JSON: {0}; nothing was imported")]
    Syntax(#[source] serde_json::Error),

    /// A value has the wrong type or shape; `path` is its exact JSON path.
    #[error("{path}: {message}; nothing was imported")]
    Invalid { path: String, message: String },

    /// A hangar export written by a newer hangar.
    #[error(
        "this export was written by a newer hangar (format version {found}; this hangar reads \
         up to {supported}); upgrade hangar to import it. Nothing was imported"
    )]
    NewerVersion { found: u64, supported: u64 },
}

/// The imported workspace, what it holds, and what was left out.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ImportReport {
    /// The pruned workspace, ready to be saved or restored.
    pub workspace: Workspace,
    pub imported: ImportCounts,
    /// Everything left out, each with the reason.
    pub dropped: Vec<DroppedItem>,
    /// Things imported in another form than the file had them (a lane that
    /// became a parked session, an adopted tmux session, a field kept
    /// verbatim), each with a note saying how.
    #[serde(default)]
    pub kept: Vec<KeptItem>,
    /// What a person should know before relying on the import (two sessions
    /// sharing one provider conversation id), said first.
    #[serde(default)]
    pub warnings: Vec<String>,
    /// Which format and envelope the file was (`agent-code v1`...).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// The last screens of imported sessions (hangar exports only), to be
    /// saved with the workspace.
    #[serde(skip)]
    pub screens: Screens,
}

/// What the imported workspace holds (after pruning).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ImportCounts {
    pub tabs: usize,
    pub panes: usize,
    pub parked: usize,
    pub buried: usize,
    pub pins: usize,
    pub sessions: usize,
}

/// One thing the import left out.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct DroppedItem {
    /// The session (or tab) id it concerned.
    pub id: String,
    /// `pane`, `parked`, `buried`, `session`, `pin`, `link`, `active-tab`,
    /// `window` or `screen`.
    pub kind: String,
    pub reason: String,
    /// For a dropped conversation: its provider, provider session id and
    /// folder, so it can still be resumed by hand (`claude --resume ID` in
    /// that folder).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provider_session_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
}

impl DroppedItem {
    pub(crate) fn new(id: impl Into<String>, kind: &str, reason: impl Into<String>) -> Self {
        DroppedItem {
            id: id.into(),
            kind: kind.to_owned(),
            reason: reason.into(),
            provider: None,
            provider_session_id: None,
            cwd: None,
        }
    }

    /// Name the conversation this item held, from its metadata.
    pub(crate) fn with_meta(mut self, meta: &SessionMeta) -> Self {
        self.provider = Some(meta.provider.name().to_owned());
        self.provider_session_id = meta.provider_session.as_ref().map(|p| p.id.clone());
        self.cwd = Some(meta.cwd.clone());
        self
    }
}

/// One thing imported in another form than the file had it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct KeptItem {
    /// The session, tab or window id it concerns (or the field name).
    pub id: String,
    /// `lane`, `tmux`, `provider`, `field`, `view`, `tab`, `window`,
    /// `format`.
    pub kind: String,
    pub note: String,
}

impl KeptItem {
    pub fn new(id: impl Into<String>, kind: &str, note: impl Into<String>) -> Self {
        KeptItem {
            id: id.into(),
            kind: kind.to_owned(),
            note: note.into(),
        }
    }
}

/// Prune `ws` with `hangar_core::prune` and turn what it removed into
/// `DroppedItem`s, after the ones the importer already dropped itself.
pub(crate) fn finish(ws: Workspace, mut dropped: Vec<DroppedItem>) -> ImportReport {
    let before = ws.clone();
    let (after, report) = hangar_core::prune(ws);

    for (tab, id) in &report.dropped_leaves {
        dropped.push(DroppedItem::new(
            id.as_str(),
            "pane",
            format!("pane in tab {tab} shows a session with no metadata"),
        ));
    }
    for id in &report.dropped_parked {
        let reason = match before.parked.get(id) {
            Some(p) if before.tab(&p.tab).is_none() => {
                format!("parked record's project tab {} does not exist", p.tab)
            }
            _ => "parked record's session has no metadata".to_owned(),
        };
        dropped.push(DroppedItem::new(id.as_str(), "parked", reason));
    }
    for id in &report.dropped_buried {
        dropped.push(DroppedItem::new(
            id.as_str(),
            "buried",
            "buried record's session has no metadata",
        ));
    }
    for id in &report.dropped_sessions {
        let reason = if report.dropped_parked.contains(id) {
            "metadata only referenced by a dropped parked record"
        } else {
            "metadata not referenced by any pane, parked or buried record"
        };
        dropped.push(DroppedItem::new(id.as_str(), "session", reason));
    }
    for pin in before.pins.iter().filter(|p| !after.pins.contains(p)) {
        dropped.push(DroppedItem::new(
            pin.as_str(),
            "pin",
            "pin points at a missing session",
        ));
    }
    for (id, meta) in &after.sessions {
        let Some(old) = before.sessions.get(id) else {
            continue;
        };
        let (old, new) = (&old.relationships, &meta.relationships);
        let links: [(&str, &Option<SessionId>, &Option<SessionId>); 3] = [
            ("linked parent", &old.linked_parent, &new.linked_parent),
            (
                "orchestration parent",
                &old.orchestration_parent,
                &new.orchestration_parent,
            ),
            (
                "orchestration root",
                &old.orchestration_root,
                &new.orchestration_root,
            ),
        ];
        for (what, old, new) in links {
            if let (Some(target), None) = (old, new) {
                dropped.push(DroppedItem::new(
                    id.as_str(),
                    "link",
                    format!("{what} {target} does not exist"),
                ));
            }
        }
    }
    if let Some(tab) = &before.active_tab
        && after.active_tab.as_ref() != Some(tab)
    {
        dropped.push(DroppedItem::new(
            tab.as_str(),
            "active-tab",
            "active tab does not exist; the first tab is active instead",
        ));
    }

    // Every dropped item that concerned a conversation names it, so it can
    // still be resumed by hand.
    for item in &mut dropped {
        if item.provider.is_none()
            && let Some(meta) = before.sessions.get(&SessionId::new(item.id.as_str()))
        {
            *item = item.clone().with_meta(meta);
        }
    }

    let imported = ImportCounts {
        tabs: after.tabs.len(),
        panes: after.tabs.iter().map(|t| t.leaves().len()).sum(),
        parked: after.parked.len(),
        buried: after.buried.len(),
        pins: after.pins.len(),
        sessions: after.sessions.len(),
    };
    let warnings = duplicate_provider_ids(&after);
    ImportReport {
        workspace: after,
        imported,
        dropped,
        kept: Vec::new(),
        warnings,
        source: None,
        screens: Screens::new(),
    }
}

/// One warning per durable provider session id that more than one imported
/// session holds: waking both would run two processes on one conversation,
/// so hangar refuses the second wake (see `hangar doctor`).
fn duplicate_provider_ids(ws: &Workspace) -> Vec<String> {
    let mut holders: BTreeMap<(&str, &str), Vec<&str>> = BTreeMap::new();
    for (id, meta) in &ws.sessions {
        if let Some(psid) = meta.durable_provider_id() {
            holders
                .entry((meta.provider.name(), psid))
                .or_default()
                .push(id.as_str());
        }
    }
    holders
        .into_iter()
        .filter(|(_, ids)| ids.len() > 1)
        .map(|((provider, psid), ids)| {
            format!(
                "{} sessions share the {provider} conversation {psid} ({}); only one can be \
                 woken at a time: run `hangar doctor --fork ID` on the others to give them a \
                 fresh conversation",
                ids.len(),
                ids.join(", ")
            )
        })
        .collect()
}
