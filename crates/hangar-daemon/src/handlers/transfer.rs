//! Moving a workspace in and out: `export` (the document with last
//! screens), `workspace` (the model as JSON, for the TUI and web view) and
//! `import` (merged into the running workspace, then restored).

use std::sync::Arc;

use hangar_core::Workspace;
use hangar_protocol::message as msg;
use hangar_protocol::reply::{Exported, Imported};

use crate::Daemon;
use crate::errors::ApiError;
use crate::transfer::{imported, merge, parse_import};

pub fn export(daemon: &Daemon) -> Result<Exported, ApiError> {
    let text = daemon.sessions.export_document(daemon.os.now_ms())?;
    Ok(Exported {
        format: hangar_store::EXPORT_FORMAT.to_owned(),
        text,
    })
}

pub fn workspace(daemon: &Daemon) -> Workspace {
    daemon.sessions.workspace()
}

pub async fn import(daemon: &Arc<Daemon>, req: msg::Import) -> Result<Imported, ApiError> {
    let report = parse_import(&req.format, &req.text)?;
    let to_spawn = daemon
        .sessions
        .import(&report.workspace, &report.screens, merge)?;
    let spawner = daemon.spawner.clone();
    tokio::spawn(async move { spawner.restore_spawn(to_spawn).await });
    Ok(imported(&report, true))
}
