//! Export and import of whole workspaces while the daemon runs.
//!
//! An import is merged into the running workspace all at once or not at all
//! (`hangar_core::import_merge`): any id that is already present refuses the
//! whole import (nothing is half-imported). The imported panes are then restored exactly as a daemon
//! start would restore them: spawned with bounded concurrency, everything
//! else hibernated. The last screens an export carries are saved in the same
//! transaction as the workspace, so a hibernated session keeps its screen
//! (DESIGN.md rule 3) across export and import.

use std::sync::Arc;

use hangar_core::{RestorePlan, Workspace};
use hangar_protocol::message as msg;
use serde_json::{Value, json};

use crate::Daemon;
use crate::errors::ApiError;

/// `current` plus `imported`, or why they cannot be merged
/// (`hangar_core::import_merge`).
pub fn merge(current: Workspace, imported: Workspace) -> Result<Workspace, ApiError> {
    hangar_core::import_merge::merge_import(current, imported)
        .map_err(|e| ApiError::invalid(e.to_string()))
}

pub fn report_json(report: &hangar_store::ImportReport, restored: bool) -> Value {
    json!({
        "source": report.source,
        "warnings": report.warnings,
        "imported": report.imported,
        "kept": report.kept,
        "dropped": report.dropped,
        "screens": report.screens.len(),
        "restoring": restored,
    })
}

impl Daemon {
    pub fn op_export(&self) -> Result<Value, ApiError> {
        self.sessions.read(|st| {
            let mut screens = st.store.screens()?;
            // A live session's last screen is the one it shows now: it is what
            // the session would keep if it were hibernated, and what the
            // imported copy (hibernated until woken) must show.
            let now = crate::now_ms();
            for (id, rt) in &st.runtimes {
                if let Some(live) = &rt.proc {
                    let saved = hangar_store::SavedScreen {
                        screen: live.formatted(),
                        updated_ms: now,
                    };
                    screens.insert(id.clone(), saved);
                }
            }
            let text = hangar_store::export_document(&st.ws, &screens);
            Ok(json!({"format": hangar_store::EXPORT_FORMAT, "text": text}))
        })
    }

    pub fn op_workspace(&self) -> Result<Value, ApiError> {
        self.sessions
            .read(|st| serde_json::to_value(&st.ws))
            .map_err(|e| ApiError::internal(e.to_string()))
    }

    pub async fn op_import(self: &Arc<Self>, req: msg::Import) -> Result<Value, ApiError> {
        let report = parse_import(&req.format, &req.text)?;
        let to_spawn = {
            self.sessions.edit(|st| {
                let merged = merge(st.ws.clone(), report.workspace.clone())?;
                st.store.save_with_screens(&merged, &[], &report.screens)?;
                st.ws = merged;
                let plan = RestorePlan::new(report.workspace.clone());
                for id in &plan.hibernate {
                    st.runtime(id);
                }
                st.restore.expected += plan.spawn.len();
                st.restore.hibernated += plan.hibernate.len();
                Ok::<_, ApiError>(plan.spawn)
            })?
        };
        let daemon = self.clone();
        tokio::spawn(async move { daemon.restore_spawn(to_spawn).await });
        Ok(report_json(&report, true))
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
