//! `hangar wait` (for scripts and the orchestration tools) and the hidden
//! `hangar hook` a provider's hooks call back.
//!
//! `hook` runs inside the agent's own turn (Claude Code waits for it), so it
//! must be quick, print nothing (a `UserPromptSubmit` hook's output becomes
//! part of the prompt) and never fail the agent: it always exits 0 and
//! never starts a daemon.

use std::io::{IsTerminal, Read};
use std::process::ExitCode;
use std::time::Duration;

use hangar_protocol::message as msg;

use serde_json::Value;

use crate::api;
use crate::conn::Target;

/// The exit code of a `wait` that timed out (as `timeout(1)` uses).
pub(crate) const TIMED_OUT: u8 = 124;

pub fn wait(
    target: &Target,
    json: bool,
    sessions: Vec<String>,
    until: String,
    timeout: Option<Duration>,
) -> anyhow::Result<ExitCode> {
    let mut c = target.connect()?;
    let v = api::wait(
        &mut c,
        msg::Wait {
            sessions,
            until: until.clone(),
            timeout_ms: timeout.map(|t| t.as_millis() as u64),
        },
    )?;
    crate::human::print(json, &v, |v| {
        for s in &v.sessions {
            println!(
                "{}  {}",
                crate::human::text(&s.id),
                crate::human::text(&s.activity)
            );
        }
    });
    if v.timed_out {
        let waiting: Vec<&str> = v
            .sessions
            .iter()
            .filter(|s| !reached(&until, &s.activity))
            .map(|s| s.id.as_str())
            .collect();
        eprintln!(
            "hangar: timed out waiting for {} to be {until}; `hangar ls` shows what they are doing",
            hangar_core::display::name(&waiting.join(", "))
        );
        return Ok(ExitCode::from(TIMED_OUT));
    }
    Ok(ExitCode::SUCCESS)
}

fn reached(until: &str, a: &str) -> bool {
    match until {
        "any" => a == "idle" || a == "waiting",
        other => a == other,
    }
}

/// Report a hook event. Every failure is swallowed (and logged to stderr,
/// which Claude Code shows only in its debug view).
pub fn hook(target: &Target, event: String, session: String) -> anyhow::Result<ExitCode> {
    // Claude Code pipes the hook's JSON input; drain it so it never blocks
    // on a full pipe. Only SessionStart's is used: its `session_id` is the
    // conversation this session's process now writes (after `/clear` too).
    let mut input = Vec::new();
    if !std::io::stdin().is_terminal() {
        let _ = std::io::stdin().take(1 << 20).read_to_end(&mut input);
    }
    let mut request = msg::Hook {
        session,
        event,
        ..Default::default()
    };
    if is_session_start(&request.event) {
        let v: Value = serde_json::from_slice(&input).unwrap_or(Value::Null);
        let text = |k: &str| v[k].as_str().filter(|s| !s.is_empty()).map(str::to_owned);
        request.provider_session_id = text("session_id");
        request.cwd = text("cwd");
        request.source = text("source");
    } else if is_stop_failure(&request.event) {
        // Claude Code 2.1.197's StopFailure input: `{..., hook_event_name:
        // "StopFailure", error: "rate_limit" | "authentication_failed" |
        // ..., error_details?, last_assistant_message?}` (read in the
        // shipped binary's hook schema). Only the error's name is sent.
        let v: Value = serde_json::from_slice(&input).unwrap_or(Value::Null);
        request.error = v["error"]
            .as_str()
            .filter(|e| !e.is_empty() && e.len() <= 64)
            .map(str::to_owned);
    }
    let sent = target.connect_existing().and_then(|c| match c {
        Some(mut c) => api::hook(&mut c, request).map(|_| ()),
        None => Ok(()),
    });
    if let Err(e) = sent {
        eprintln!("hangar hook: {e:#}");
    }
    Ok(ExitCode::SUCCESS)
}

fn is_stop_failure(event: &str) -> bool {
    event.eq_ignore_ascii_case("stop-failure") || event.eq_ignore_ascii_case("StopFailure")
}

fn is_session_start(event: &str) -> bool {
    event.eq_ignore_ascii_case("session-start") || event.eq_ignore_ascii_case("SessionStart")
}
