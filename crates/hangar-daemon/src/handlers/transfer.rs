//! Moving a workspace in and out: `export` (the document with last
//! screens), `workspace` (the model as JSON, for the TUI and web view) and
//! `import` (merged into the running workspace, then restored).

use std::sync::Arc;

use hangar_core::RestorePlan;
use hangar_protocol::message as msg;
use serde_json::{Value, json};

use crate::Daemon;
use crate::errors::ApiError;
use crate::transfer::{merge, parse_import, report_json};

pub fn export(daemon: &Daemon) -> Result<Value, ApiError> {
    daemon.sessions.read(|st| {
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

pub fn workspace(daemon: &Daemon) -> Result<Value, ApiError> {
    daemon
        .sessions
        .read(|st| serde_json::to_value(&st.ws))
        .map_err(|e| ApiError::internal(e.to_string()))
}

pub async fn import(daemon: &Arc<Daemon>, req: msg::Import) -> Result<Value, ApiError> {
    let report = parse_import(&req.format, &req.text)?;
    let to_spawn = {
        daemon.sessions.edit(|st| {
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
    let spawner = daemon.spawner.clone();
    tokio::spawn(async move { spawner.restore_spawn(to_spawn).await });
    Ok(report_json(&report, true))
}
