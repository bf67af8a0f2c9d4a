//! Export and import of whole workspaces while the daemon runs.
//!
//! An import is merged into the running workspace all at once or not at all
//! (`hangar_core::import_merge`): any id that is already present refuses the
//! whole import (nothing is half-imported). The imported panes are then restored exactly as a daemon
//! start would restore them: spawned with bounded concurrency, everything
//! else hibernated. The last screens an export carries are saved in the same
//! transaction as the workspace, so a hibernated session keeps its screen
//! (DESIGN.md rule 3) across export and import.

use hangar_core::Workspace;
use hangar_protocol::reply::{ImportCounts, ImportDropped, ImportKept, Imported};

use crate::errors::ApiError;

/// `current` plus `imported`, or why they cannot be merged
/// (`hangar_core::import_merge`).
pub fn merge(current: Workspace, imported: Workspace) -> Result<Workspace, ApiError> {
    hangar_core::import_merge::merge_import(current, imported)
        .map_err(|e| ApiError::invalid(e.to_string()))
}

/// An import's report as the `import` reply: `restored` says whether the
/// daemon is restoring it now (or it waits for the next start).
pub fn imported(report: &hangar_store::ImportReport, restored: bool) -> Imported {
    let c = &report.imported;
    Imported {
        source: report.source.clone(),
        warnings: report.warnings.clone(),
        imported: ImportCounts {
            tabs: c.tabs,
            panes: c.panes,
            parked: c.parked,
            buried: c.buried,
            pins: c.pins,
            sessions: c.sessions,
        },
        kept: report
            .kept
            .iter()
            .map(|k| ImportKept {
                id: k.id.clone(),
                kind: k.kind.clone(),
                note: k.note.clone(),
            })
            .collect(),
        dropped: report
            .dropped
            .iter()
            .map(|d| ImportDropped {
                id: d.id.clone(),
                kind: d.kind.clone(),
                reason: d.reason.clone(),
                provider: d.provider.clone(),
                provider_session_id: d.provider_session_id.clone(),
                cwd: d.cwd.clone(),
            })
            .collect(),
        screens: report.screens.len(),
        restoring: restored,
    }
}

/// Parse an import. An Agent Code file's tmux-backed terminals are checked
/// against the tmux server of this machine (see `tmux_adoption`).
pub fn parse_import(format: &str, text: &str) -> Result<hangar_store::ImportReport, ApiError> {
    let result = match format {
        "agent-code" => hangar_store::import_agent_code(text).map(|mut report| {
            let path = std::env::var("PATH").ok();
            crate::tmux_adoption::adopt_tmux_sessions(&mut report, path.as_deref());
            report
        }),
        "hangar" => hangar_store::import_hangar_json(text),
        other => {
            return Err(ApiError::invalid(format!(
                "unknown import format {other:?}: use agent-code or hangar"
            )));
        }
    };
    result.map_err(|e| ApiError::invalid(e.to_string()))
}
