//! Requests about what agents are doing: `hangar wait` and the hook events
//! an agent reports (`hangar hook EVENT`). The watching itself is
//! `activity::Monitor`'s.

use std::time::Duration;

use hangar_core::SessionId;
use hangar_protocol::message::codes;
use hangar_providers::claude::hooks::HookEvent;
use serde_json::{Value, json};

use crate::Daemon;
use crate::activity::Until;
use crate::errors::ApiError;

/// `hangar wait`.
pub async fn wait(
    daemon: &Daemon,
    sessions: &[String],
    until: &str,
    timeout_ms: Option<u64>,
) -> Result<Value, ApiError> {
    let until = Until::parse(until)
        .ok_or_else(|| ApiError::invalid(format!("--until {until:?}: use idle, waiting or any")))?;
    if sessions.is_empty() {
        return Err(ApiError::invalid("name at least one session to wait for"));
    }
    let ids = daemon.sessions.resolve_all(sessions)?;
    let (done, views) = daemon
        .monitor
        .wait_activity(&ids, until, timeout_ms.map(Duration::from_millis))
        .await;
    Ok(json!({
        "done": done,
        "timed_out": !done,
        "until": until,
        "sessions": views,
    }))
}

/// A hook callback from a session's agent (`hangar hook EVENT`).
pub fn hook(daemon: &Daemon, session: &str, event: &str) -> Result<Value, ApiError> {
    let event = HookEvent::parse(event).ok_or_else(|| {
        ApiError::invalid(format!(
            "unknown hook event {event:?}; hangar listens to stop, notification and user-prompt-submit"
        ))
    })?;
    let id = SessionId::from(session.trim());
    let gone = || ApiError::new(codes::NOT_FOUND, format!("no session {id}"));
    if !daemon.sessions.contains(&id) {
        return Err(gone());
    }
    if !daemon.monitor.hooks_installed() {
        return Ok(json!({"recorded": false, "reason": "the hooks source is off"}));
    }
    if !daemon.monitor.record_hook(&id, event) {
        return Err(gone());
    }
    Ok(json!({"recorded": true, "event": event.cli_name()}))
}
