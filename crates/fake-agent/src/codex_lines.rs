//! Events as Codex rollout lines.
//!
//! Each line is `{"timestamp", "type", "payload"}` like the real rollout
//! files. One event may become several lines (a user turn opens with
//! `task_started`; a finished answer closes with `task_complete`). Only the
//! shape lives here; files are `transcript`'s business.

use serde_json::{Value, json};

use crate::event::Event;

pub fn lines(event: &Event<'_>, session_id: &str, cwd: &str, timestamp: &str) -> Vec<Value> {
    let payloads: Vec<(&str, Value)> = match *event {
        Event::Start(start) => {
            let mut m = start.fields();
            m.insert("id".into(), session_id.into());
            m.insert("cwd".into(), cwd.into());
            m.insert("timestamp".into(), timestamp.into());
            m.insert("originator".into(), "hangar-fake-agent".into());
            m.insert("cli_version".into(), env!("CARGO_PKG_VERSION").into());
            // Codex 0.171.0 names what a fork carries on from in its new
            // rollout's first line, and copies none of it.
            if let Some((from, ordinal)) = &start.forked_from {
                m.insert("forked_from_id".into(), from.clone().into());
                m.insert("forked_from_ordinal_exclusive".into(), (*ordinal).into());
            }
            vec![("session_meta", Value::Object(m))]
        }
        Event::User(text) => vec![
            ("event_msg", json!({ "type": "task_started" })),
            ("response_item", message("user", "input_text", text)),
            (
                "event_msg",
                json!({ "type": "user_message", "message": text }),
            ),
        ],
        Event::Assistant(text) => vec![
            ("response_item", message("assistant", "output_text", text)),
            (
                "event_msg",
                json!({ "type": "agent_message", "message": text }),
            ),
            (
                "event_msg",
                json!({ "type": "task_complete", "last_agent_message": text }),
            ),
        ],
        Event::PermissionAsk { tool, call_id } => vec![
            (
                "response_item",
                json!({ "type": "function_call", "name": tool, "arguments": "{}", "call_id": call_id }),
            ),
            (
                "event_msg",
                json!({ "type": "exec_approval_request", "call_id": call_id, "tool": tool }),
            ),
        ],
        Event::ToolResult { call_id, allowed } => vec![(
            "response_item",
            json!({
                "type": "function_call_output",
                "call_id": call_id,
                "output": if allowed { "allowed" } else { "denied" },
            }),
        )],
        Event::SignalIgnored(signal) => vec![(
            "event_msg",
            json!({ "type": "fake_agent_signal_ignored", "signal": signal }),
        )],
        Event::Exit { reason, signal } => vec![(
            "event_msg",
            json!({ "type": "fake_agent_exit", "reason": reason, "signal": signal }),
        )],
    };
    payloads
        .into_iter()
        .map(|(kind, payload)| json!({ "timestamp": timestamp, "type": kind, "payload": payload }))
        .collect()
}

fn message(role: &str, content_type: &str, text: &str) -> Value {
    json!({
        "type": "message",
        "role": role,
        "content": [{ "type": content_type, "text": text }],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const TS: &str = "2025-01-01T00:00:00.000Z";

    fn kinds(lines: &[Value]) -> Vec<String> {
        lines
            .iter()
            .map(|l| {
                format!(
                    "{}/{}",
                    l["type"].as_str().unwrap(),
                    l["payload"]["type"].as_str().unwrap_or("-")
                )
            })
            .collect()
    }

    #[test]
    fn a_user_line_opens_a_task() {
        let out = lines(&Event::User("hi"), "t", "/w", TS);
        assert_eq!(
            kinds(&out),
            [
                "event_msg/task_started",
                "response_item/message",
                "event_msg/user_message"
            ]
        );
        assert_eq!(out[1]["payload"]["role"], "user");
        assert_eq!(
            out[1]["payload"]["content"][0],
            json!({ "type": "input_text", "text": "hi" })
        );
    }

    #[test]
    fn an_answer_completes_the_task() {
        let out = lines(&Event::Assistant("answer: hi"), "t", "/w", TS);
        assert_eq!(
            kinds(&out),
            [
                "response_item/message",
                "event_msg/agent_message",
                "event_msg/task_complete"
            ]
        );
        assert_eq!(out[0]["payload"]["content"][0]["type"], "output_text");
        assert_eq!(out[0]["timestamp"], TS);
    }
}
