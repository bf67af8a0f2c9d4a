//! Where a session is shown: park, unpark, bury, unbury, pin, and the
//! layout of a tab (focus, split ratio). Each edits the model through
//! `hangar-core`, saves it in one store transaction, and only then wakes.

use std::sync::Arc;

use hangar_protocol::message as msg;
use hangar_protocol::reply::{Focused, Pinned, Placed, RatioSet};

use super::sessions::parse_direction;
use crate::Daemon;
use crate::errors::ApiError;
use crate::journal::Caller;

/// Where a session went; `state` after a move to a pane woke it.
fn placed(id: impl ToString, tab: impl ToString, placement: &str, state: Option<&str>) -> Placed {
    Placed {
        id: id.to_string(),
        tab: tab.to_string(),
        placement: placement.to_owned(),
        state: state.map(str::to_owned),
    }
}

pub async fn park(daemon: &Arc<Daemon>, session: &str) -> Result<Placed, ApiError> {
    let (id, tab) = daemon.sessions.park(session, daemon.os.now_ms())?;
    Ok(placed(id, tab, "parked", None))
}

pub async fn unpark(daemon: &Arc<Daemon>, req: msg::Unpark) -> Result<Placed, ApiError> {
    let (id, tab) = daemon.sessions.unpark(
        &req.session,
        req.tab.as_deref(),
        req.split.as_deref(),
        || parse_direction(req.direction.as_deref()),
    )?;
    let state = daemon.governor.wake_as(&id, Caller::Unpark).await?;
    Ok(placed(id, tab, "pane", Some(state.name())))
}

pub async fn bury(daemon: &Arc<Daemon>, session: &str) -> Result<Placed, ApiError> {
    let (id, tab) = daemon.sessions.bury(session, daemon.os.now_ms())?;
    Ok(placed(id, tab, "buried", None))
}

pub async fn unbury(daemon: &Arc<Daemon>, session: &str) -> Result<Placed, ApiError> {
    let (id, tab) = daemon.sessions.unbury(session)?;
    let state = daemon.governor.wake_as(&id, Caller::Unbury).await?;
    Ok(placed(id, tab, "pane", Some(state.name())))
}

pub fn pin(daemon: &Daemon, session: &str, pin: bool) -> Result<Pinned, ApiError> {
    let id = daemon.sessions.pin(session, pin)?;
    Ok(Pinned {
        id: id.to_string(),
        pinned: pin,
    })
}

pub fn focus(daemon: &Daemon, req: msg::Focus) -> Result<Focused, ApiError> {
    let (tab, focus) = daemon
        .sessions
        .focus(req.tab.as_deref(), req.session.as_deref())?;
    Ok(Focused {
        tab: tab.to_string(),
        focus: focus.map(|f| f.to_string()),
    })
}

pub fn ratio(daemon: &Daemon, req: msg::Ratio) -> Result<RatioSet, ApiError> {
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
    let id = daemon
        .sessions
        .set_ratio(&req.session, direction, req.ratio)?;
    Ok(RatioSet {
        id: id.to_string(),
        ratio: hangar_core::tile::clamp_ratio(req.ratio),
    })
}
