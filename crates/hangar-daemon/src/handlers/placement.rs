//! Where a session is shown: park, unpark, bury, unbury, pin, and the
//! layout of a tab (focus, split ratio). Each edits the model through
//! `hangar-core`, saves it in one store transaction, and only then wakes.

use std::sync::Arc;

use hangar_core::placement::PanePosition;
use hangar_core::{Tab, TabId};
use hangar_protocol::message as msg;
use serde_json::{Value, json};

use super::sessions::{new_id, parse_direction};
use crate::Daemon;
use crate::errors::ApiError;
use crate::journal::Caller;

pub async fn park(daemon: &Arc<Daemon>, session: &str) -> Result<Value, ApiError> {
    daemon.sessions.edit(|st| {
        let id = st.resolve_session(session)?;
        let tab = st.ws.park(&id, crate::now_ms())?;
        st.save(&[])?;
        Ok(json!({"id": id.to_string(), "tab": tab.to_string(), "placement": "parked"}))
    })
}

pub async fn unpark(daemon: &Arc<Daemon>, req: msg::Unpark) -> Result<Value, ApiError> {
    let (id, tab) = {
        daemon.sessions.edit(|st| {
            let id = st.resolve_session(&req.session)?;
            let mut tab = req.tab.as_deref().map(|t| st.resolve_tab(t)).transpose()?;
            let position = match &req.split {
                Some(target) => {
                    let target = st.resolve_session(target)?;
                    if tab.is_none() {
                        tab = st.ws.pane_tab(&target).map(|t| t.id.clone());
                    }
                    PanePosition::Split {
                        target,
                        direction: parse_direction(req.direction.as_deref())?,
                    }
                }
                None => PanePosition::Auto,
            };
            let tab = st.ws.unpark(&id, tab.as_ref(), position)?;
            st.ws.active_tab = Some(tab.clone());
            st.save(&[])?;
            Ok::<_, ApiError>((id, tab))
        })?
    };
    let state = daemon.governor.wake_as(&id, Caller::Unpark).await?;
    Ok(
        json!({"id": id.to_string(), "tab": tab.to_string(), "placement": "pane", "state": state.name()}),
    )
}

pub async fn bury(daemon: &Arc<Daemon>, session: &str) -> Result<Value, ApiError> {
    daemon.sessions.edit(|st| {
        let id = st.resolve_session(session)?;
        let tab = st.ws.bury(&id, crate::now_ms())?;
        st.save(&[])?;
        Ok(json!({"id": id.to_string(), "tab": tab.to_string(), "placement": "buried"}))
    })
}

pub async fn unbury(daemon: &Arc<Daemon>, session: &str) -> Result<Value, ApiError> {
    let (id, tab) = {
        daemon.sessions.edit(|st| {
            let id = st.resolve_session(session)?;
            let tab = st
                .ws
                .unbury(&id, || Tab::new(TabId::new(new_id()), "main"))?;
            st.save(&[])?;
            Ok::<_, ApiError>((id, tab))
        })?
    };
    let state = daemon.governor.wake_as(&id, Caller::Unbury).await?;
    Ok(
        json!({"id": id.to_string(), "tab": tab.to_string(), "placement": "pane", "state": state.name()}),
    )
}

pub fn pin(daemon: &Daemon, session: &str, pin: bool) -> Result<Value, ApiError> {
    daemon.sessions.edit(|st| {
        let id = st.resolve_session(session)?;
        if pin {
            st.ws.pin(&id)?;
        } else {
            st.ws.unpin(&id)?;
        }
        st.save(&[])?;
        Ok(json!({"id": id.to_string(), "pinned": pin}))
    })
}

pub fn focus(daemon: &Daemon, req: msg::Focus) -> Result<Value, ApiError> {
    daemon.sessions.edit(|st| {
        let session = req
            .session
            .as_deref()
            .map(|s| st.resolve_session(s))
            .transpose()?;
        let tab = match (&req.tab, &session) {
            (Some(t), _) => st.resolve_tab(t)?,
            (None, Some(id)) => st.ws.pane_tab(id).map(|t| t.id.clone()).ok_or_else(|| {
                ApiError::invalid(format!("session {id} is not a pane of any tab"))
            })?,
            (None, None) => return Err(ApiError::invalid("focus needs a tab or a session")),
        };
        st.ws.set_active_tab(&tab)?;
        if let Some(id) = &session {
            st.ws.set_focus(&tab, id)?;
        }
        st.save(&[])?;
        Ok(json!({
            "tab": tab.to_string(),
            "focus": st.ws.tab(&tab).and_then(|t| t.focus.as_ref()).map(|f| f.to_string()),
        }))
    })
}

pub fn ratio(daemon: &Daemon, req: msg::Ratio) -> Result<Value, ApiError> {
    if !req.ratio.is_finite() {
        return Err(ApiError::invalid(
            "a ratio must be a number between 0.1 and 0.9",
        ));
    }
    let direction = match req.direction.as_deref() {
        None => None,
        Some("vertical") => Some(hangar_core::Direction::Vertical),
        Some("horizontal") => Some(hangar_core::Direction::Horizontal),
        Some(other) => {
            return Err(ApiError::invalid(format!(
                "direction {other:?} is neither vertical nor horizontal"
            )));
        }
    };
    daemon.sessions.edit(|st| {
        let id = st.resolve_session(&req.session)?;
        match direction {
            None => st.ws.set_ratio(&id, req.ratio)?,
            Some(d) => {
                if !st.ws.set_split_ratio(&id, d, req.ratio)? {
                    return Err(ApiError::invalid(format!(
                        "no {} split around session {id}",
                        req.direction.as_deref().unwrap_or_default()
                    )));
                }
            }
        }
        st.save(&[])?;
        Ok(json!({"id": id.to_string(), "ratio": hangar_core::tile::clamp_ratio(req.ratio)}))
    })
}
