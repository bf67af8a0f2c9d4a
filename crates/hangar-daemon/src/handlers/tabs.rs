//! Tabs: create, list, close (with the sessions it holds, after a
//! confirmation), rename.

use std::path::Path;
use std::sync::Arc;

use hangar_core::{SessionId, Tab, TabId};
use hangar_protocol::message as msg;
use serde_json::{Value, json};

use super::sessions::{needs_confirmation, new_id};
use crate::Daemon;
use crate::errors::ApiError;
use crate::journal::CloseCause;

pub fn new(daemon: &Daemon, req: msg::TabNew) -> Result<Value, ApiError> {
    if req.title.trim().is_empty() {
        return Err(ApiError::invalid("a tab needs a title"));
    }
    if let Some(cwd) = &req.cwd
        && !Path::new(cwd).is_dir()
    {
        return Err(ApiError::invalid(format!("folder {cwd} does not exist")));
    }
    daemon.sessions.edit(|st| {
        let mut tab = Tab::new(TabId::new(new_id()), req.title.trim());
        tab.cwd = req.cwd;
        let id = tab.id.clone();
        st.ws.add_tab(tab)?;
        st.ws.active_tab = Some(id.clone());
        st.save(&[])?;
        Ok(json!({"id": id.to_string(), "title": req.title.trim()}))
    })
}

pub fn list(daemon: &Daemon) -> Value {
    serde_json::to_value(daemon.sessions.read(|st| st.tab_views())).unwrap_or(Value::Null)
}

pub async fn close(daemon: &Arc<Daemon>, req: msg::TabClose) -> Result<Value, ApiError> {
    let (tab, cascade) = {
        daemon.sessions.read(|st| {
            let tab = st.resolve_tab(&req.tab)?;
            let cascade = st.ws.tab_close_cascade(&tab)?;
            Ok::<_, ApiError>((tab, cascade))
        })?
    };
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
    daemon.sessions.edit(|st| {
    st.ws.remove_tab(&tab)?;
    st.save(&[])?;
    Ok(
        json!({"tab": tab.to_string(), "closed": cascade.iter().map(|s| s.to_string()).collect::<Vec<_>>(), "kept_worktrees": kept, "removed_worktrees": removed}),
    )
    })
}

pub fn rename(daemon: &Daemon, req: msg::TabRename) -> Result<Value, ApiError> {
    if req.title.trim().is_empty() {
        return Err(ApiError::invalid("a tab needs a title"));
    }
    daemon.sessions.edit(|st| {
        let tab = st.resolve_tab(&req.tab)?;
        if let Some(t) = st.ws.tab_mut(&tab) {
            t.title = req.title.trim().to_owned();
        }
        st.save(&[])?;
        Ok(json!({"id": tab.to_string(), "title": req.title.trim()}))
    })
}
