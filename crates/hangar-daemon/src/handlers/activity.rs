//! Requests about what agents are doing: `hangar wait` and the hook events
//! an agent reports (`hangar hook EVENT`). The watching itself is
//! `activity::Monitor`'s.

use std::sync::Arc;
use std::time::Duration;

use hangar_core::SessionId;
use hangar_core::usage_limits::SessionLimit;
use hangar_protocol::message::{self as msg, codes};
use hangar_protocol::reply::{ActivityRow, HookRecorded, Waited};
use hangar_providers::claude::hooks::HookEvent;

use crate::Daemon;
use crate::activity::{Until, shown_name};
use crate::errors::ApiError;

/// `hangar wait`.
pub async fn wait(
    daemon: &Daemon,
    sessions: &[String],
    until: &str,
    timeout_ms: Option<u64>,
) -> Result<Waited, ApiError> {
    // `parse` takes exactly the names, trimmed: the reply says it back.
    let until_name = until.trim().to_owned();
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
    Ok(Waited {
        done,
        timed_out: !done,
        until: until_name,
        sessions: views
            .into_iter()
            .map(|v| ActivityRow {
                activity: shown_name(v.activity, daemon.usage.as_ref(), &v.id).to_owned(),
                id: v.id,
                activity_since: v.activity_since,
            })
            .collect(),
    })
}

/// A hook callback from a session's agent (`hangar hook EVENT`). A `Stop`
/// is an end of turn for the session's goal; a `StopFailure` ends or pauses
/// it, and one with `error: rate_limit` makes the session limited (source
/// `hook`; the reset comes from the proxy's headers when it saw them).
pub fn hook(daemon: &Arc<Daemon>, req: &msg::Hook) -> Result<HookRecorded, ApiError> {
    let event = HookEvent::parse(&req.event).ok_or_else(|| {
        ApiError::invalid(format!(
            "unknown hook event {:?}; hangar listens to stop, stop-failure, notification and \
             user-prompt-submit",
            req.event
        ))
    })?;
    let id = SessionId::from(req.session.trim());
    let gone = || ApiError::new(codes::NOT_FOUND, format!("no session {id}"));
    if !daemon.sessions.contains(&id) {
        return Err(gone());
    }
    if !daemon.monitor.hooks_installed() {
        return Ok(HookRecorded {
            recorded: false,
            event: None,
            reason: Some("the hooks source is off".to_owned()),
            source: None,
        });
    }
    if !daemon.monitor.record_hook(&id, event) {
        return Err(gone());
    }
    match event {
        HookEvent::Stop => daemon.goals.turn_ended(&id),
        HookEvent::StopFailure => {
            let error = req.error.as_deref().unwrap_or("unknown");
            if error == "rate_limit" {
                daemon.usage.limited(
                    &id,
                    SessionLimit {
                        kind: "rate_limit".to_owned(),
                        resets_at: None,
                        source: "hook".to_owned(),
                        since_ms: daemon.usage.now(),
                        continue_at: None,
                        stopped_mid_task: true,
                        continued: false,
                        account: None,
                    },
                );
            }
            daemon.goals.failed(&id, error);
        }
        HookEvent::UserPromptSubmit | HookEvent::Notification => {}
    }
    Ok(HookRecorded {
        recorded: true,
        event: Some(event.cli_name().to_owned()),
        reason: None,
        source: None,
    })
}
