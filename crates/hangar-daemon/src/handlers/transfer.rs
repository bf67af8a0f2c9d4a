//! Moving a workspace in and out: `export` (the document with last
//! screens), `workspace` (the model as JSON, for the TUI and web view) and
//! `import` (merged into the running workspace, then restored).

use std::sync::Arc;

use hangar_protocol::message as msg;
use serde_json::{Value, json};

use crate::Daemon;
use crate::errors::ApiError;
use crate::transfer::{merge, parse_import, report_json};

pub fn export(daemon: &Daemon) -> Result<Value, ApiError> {
    let text = daemon.sessions.export_document(daemon.os.now_ms())?;
    Ok(json!({"format": hangar_store::EXPORT_FORMAT, "text": text}))
}

pub fn workspace(daemon: &Daemon) -> Result<Value, ApiError> {
    daemon
        .sessions
        .workspace_json()
        .map_err(|e| ApiError::internal(e.to_string()))
}

pub async fn import(daemon: &Arc<Daemon>, req: msg::Import) -> Result<Value, ApiError> {
    let report = parse_import(&req.format, &req.text)?;
    let to_spawn = daemon
        .sessions
        .import(&report.workspace, &report.screens, merge)?;
    let spawner = daemon.spawner.clone();
    tokio::spawn(async move { spawner.restore_spawn(to_spawn).await });
    Ok(report_json(&report, true))
}
