//! Tabs: create, list, close (with the sessions it holds, after a
//! confirmation), rename.

use std::path::Path;
use std::sync::Arc;

use hangar_core::SessionId;
use hangar_protocol::message as msg;
use hangar_protocol::reply::{TabClosed, TabNamed};
use hangar_protocol::view::TabView;

use super::sessions::needs_confirmation;
use crate::Daemon;
use crate::errors::ApiError;
use crate::journal::CloseCause;

pub fn new(daemon: &Daemon, req: msg::TabNew) -> Result<TabNamed, ApiError> {
    if req.title.trim().is_empty() {
        return Err(ApiError::invalid("a tab needs a title"));
    }
    if let Some(cwd) = &req.cwd
        && !Path::new(cwd).is_dir()
    {
        return Err(ApiError::invalid(format!("folder {cwd} does not exist")));
    }
    let id = daemon.sessions.add_tab(req.title.trim(), req.cwd.clone())?;
    Ok(TabNamed {
        id: id.to_string(),
        title: req.title.trim().to_owned(),
    })
}

pub fn list(daemon: &Daemon) -> Vec<TabView> {
    daemon.sessions.tab_views()
}

pub async fn close(daemon: &Arc<Daemon>, req: msg::TabClose) -> Result<TabClosed, ApiError> {
    let (tab, cascade) = daemon.sessions.tab_close_plan(&req.tab)?;
    if !cascade.is_empty() && !req.yes {
        return Err(needs_confirmation(
            format!(
                "closing this tab closes {} session(s) (its panes and parked agents): {}; pass --yes to close them",
                cascade.len(),
                cascade
                    .iter()
                    .map(SessionId::short)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            &cascade,
        ));
    }
    let (kept, removed) = daemon
        .governor
        .close_sessions(&cascade, false, CloseCause::Tab, &cascade)
        .await?;
    daemon.sessions.remove_tab(&tab)?;
    Ok(TabClosed {
        tab: tab.to_string(),
        closed: cascade.iter().map(|s| s.to_string()).collect(),
        kept_worktrees: kept,
        removed_worktrees: removed,
    })
}

pub fn rename(daemon: &Daemon, req: msg::TabRename) -> Result<TabNamed, ApiError> {
    if req.title.trim().is_empty() {
        return Err(ApiError::invalid("a tab needs a title"));
    }
    let tab = daemon.sessions.rename_tab(&req.tab, req.title.trim())?;
    Ok(TabNamed {
        id: tab.to_string(),
        title: req.title.trim().to_owned(),
    })
}
