//! Events as Claude Code transcript lines (also used for the opencode style).
//!
//! Every line carries `sessionId`, `cwd`, `timestamp`, `type` and `uuid`,
//! chained by `parentUuid` like the real CLI's. Only the shape lives here;
//! files are `transcript`'s business.

use serde_json::{Value, json};

use crate::event::Event;

/// The per-line facts a line needs besides its event.
#[derive(Clone, Copy)]
pub struct LineContext<'a> {
    pub session_id: &'a str,
    pub cwd: &'a str,
    pub timestamp: &'a str,
    pub uuid: &'a str,
    pub parent_uuid: Option<&'a str>,
    pub model: &'a str,
}

/// The fields every entry carries.
fn common(ctx: &LineContext<'_>) -> Value {
    json!({
        "parentUuid": ctx.parent_uuid,
        "isSidechain": false,
        "userType": "external",
        "cwd": ctx.cwd,
        "sessionId": ctx.session_id,
        "version": concat!(env!("CARGO_PKG_VERSION"), "-fake"),
        "uuid": ctx.uuid,
        "timestamp": ctx.timestamp,
    })
}

pub fn line(event: &Event<'_>, ctx: &LineContext<'_>) -> Value {
    let mut v = common(ctx);
    let extra = match *event {
        Event::Start(start) => {
            let mut m = start.fields();
            m.insert("type".into(), "system".into());
            m.insert("subtype".into(), "fake-agent-start".into());
            Value::Object(m)
        }
        Event::User(text) => json!({
            "type": "user",
            "message": { "role": "user", "content": text },
        }),
        Event::Assistant(text) => {
            assistant(ctx, json!([{ "type": "text", "text": text }]), "end_turn")
        }
        Event::PermissionAsk { tool, call_id } => assistant(
            ctx,
            json!([
                { "type": "text", "text": format!("I need permission to use {tool}.") },
                { "type": "tool_use", "id": call_id, "name": tool, "input": {} },
            ]),
            "tool_use",
        ),
        Event::ToolResult { call_id, allowed } => json!({
            "type": "user",
            "message": {
                "role": "user",
                "content": [{
                    "type": "tool_result",
                    "tool_use_id": call_id,
                    "content": if allowed { "allowed" } else { "denied" },
                    "is_error": !allowed,
                }],
            },
        }),
        Event::SignalIgnored(signal) => json!({
            "type": "system",
            "subtype": "fake-agent-signal-ignored",
            "signal": signal,
        }),
        Event::Exit { reason, signal } => json!({
            "type": "system",
            "subtype": "fake-agent-exit",
            "reason": reason,
            "signal": signal,
        }),
    };
    merge(&mut v, extra);
    v
}

/// What Claude Code 2.1.197 wrote for its local command `/<name>` (`/clear`,
/// at the head of the new transcript; crates/hangar/tests/it/
/// real_cli_support/OBSERVED.md, "`/clear` in Claude Code 2.1.197", and the
/// observed lines in hangar-providers' `transcript::activity` test): a
/// `file-history-snapshot` (its shape as in `transcript::discovery`'s test
/// of a real transcript), the caveat as a meta `user` entry, the command's
/// own `user` entry (not meta), and a `system`/`local_command` entry that
/// ends it with no answer. `ids` are the three entries' `uuid`s, chained
/// from `ctx.parent_uuid`; the snapshot names the command's entry, as a
/// prompt's snapshot names the prompt's (which entry a `/clear`'s names
/// was not observed).
pub fn local_command(name: &str, ctx: &LineContext<'_>, ids: [&str; 3]) -> Vec<Value> {
    let [caveat, command, end] = ids;
    let entry = |uuid, parent_uuid, extra| {
        let mut v = common(&LineContext {
            uuid,
            parent_uuid,
            ..*ctx
        });
        merge(&mut v, extra);
        v
    };
    vec![
        json!({
            "type": "file-history-snapshot",
            "messageId": command,
            "snapshot": {
                "messageId": command,
                "trackedFileBackups": {},
                "timestamp": ctx.timestamp,
            },
            "isSnapshotUpdate": false,
        }),
        entry(
            caveat,
            ctx.parent_uuid,
            json!({
                "type": "user",
                "message": { "role": "user", "content": LOCAL_COMMAND_CAVEAT },
                "isMeta": true,
            }),
        ),
        entry(
            command,
            Some(caveat),
            json!({
                "type": "user",
                "message": {
                    "role": "user",
                    "content": format!(
                        "<command-name>/{name}</command-name>\n            <command-message>{name}</command-message>\n            <command-args></command-args>"
                    ),
                },
            }),
        ),
        entry(
            end,
            Some(command),
            json!({
                "type": "system",
                "subtype": "local_command",
                "content": "<local-command-stdout></local-command-stdout>",
                "level": "info",
                "isMeta": false,
            }),
        ),
    ]
}

/// Claude Code 2.1.197's caveat before a local command's entries, verbatim.
const LOCAL_COMMAND_CAVEAT: &str = "<local-command-caveat>Caveat: The messages below were generated by the user while running local commands. DO NOT respond to these messages or otherwise consider them in your response unless the user explicitly asks you to.</local-command-caveat>";

fn assistant(ctx: &LineContext<'_>, content: Value, stop_reason: &str) -> Value {
    json!({
        "type": "assistant",
        "message": {
            "id": format!("msg_fake_{}", ctx.uuid.replace('-', "")),
            "type": "message",
            "role": "assistant",
            "model": ctx.model,
            "content": content,
            "stop_reason": stop_reason,
            "stop_sequence": null,
            "usage": { "input_tokens": 0, "output_tokens": 0 },
        },
    })
}

fn merge(into: &mut Value, from: Value) {
    if let (Value::Object(into), Value::Object(from)) = (into, from) {
        into.extend(from);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx() -> LineContext<'static> {
        LineContext {
            session_id: "s-1",
            cwd: "/w",
            timestamp: "2025-01-01T00:00:00.000Z",
            uuid: "u-2",
            parent_uuid: Some("u-1"),
            model: "fake-agent",
        }
    }

    #[test]
    fn every_line_carries_the_common_claude_fields() {
        let v = line(&Event::User("hi"), &ctx());
        assert_eq!(v["sessionId"], "s-1");
        assert_eq!(v["cwd"], "/w");
        assert_eq!(v["timestamp"], "2025-01-01T00:00:00.000Z");
        assert_eq!(v["uuid"], "u-2");
        assert_eq!(v["parentUuid"], "u-1");
        assert_eq!(v["type"], "user");
        assert_eq!(v["message"], json!({ "role": "user", "content": "hi" }));
    }

    #[test]
    fn a_finished_answer_ends_the_turn() {
        let v = line(&Event::Assistant("answer: hi"), &ctx());
        assert_eq!(v["type"], "assistant");
        assert_eq!(v["message"]["role"], "assistant");
        assert_eq!(
            v["message"]["content"],
            json!([{ "type": "text", "text": "answer: hi" }])
        );
        assert_eq!(v["message"]["stop_reason"], "end_turn");
    }

    #[test]
    fn a_permission_ask_stops_for_tool_use() {
        let v = line(
            &Event::PermissionAsk {
                tool: "Bash",
                call_id: "toolu_1",
            },
            &ctx(),
        );
        assert_eq!(v["message"]["stop_reason"], "tool_use");
        assert_eq!(v["message"]["content"][1]["type"], "tool_use");
        assert_eq!(v["message"]["content"][1]["name"], "Bash");
        assert_eq!(v["message"]["content"][1]["id"], "toolu_1");
    }

    #[test]
    fn a_denied_tool_result_is_an_error() {
        let v = line(
            &Event::ToolResult {
                call_id: "toolu_1",
                allowed: false,
            },
            &ctx(),
        );
        assert_eq!(v["type"], "user");
        assert_eq!(v["message"]["content"][0]["type"], "tool_result");
        assert_eq!(v["message"]["content"][0]["is_error"], true);
    }

    #[test]
    fn a_local_command_is_a_meta_caveat_the_command_and_its_end_chained_after_a_snapshot() {
        let lines = local_command("clear", &ctx(), ["u-3", "u-4", "u-5"]);
        let kinds: Vec<_> = lines.iter().map(|l| l["type"].as_str().unwrap()).collect();
        assert_eq!(kinds, ["file-history-snapshot", "user", "user", "system"]);
        let (snapshot, caveat, command, end) = (&lines[0], &lines[1], &lines[2], &lines[3]);
        assert_eq!(snapshot["messageId"], "u-4");
        assert!(snapshot.get("sessionId").is_none() && snapshot.get("cwd").is_none());
        assert_eq!(caveat["isMeta"], true);
        assert!(
            caveat["message"]["content"]
                .as_str()
                .unwrap()
                .starts_with("<local-command-caveat>")
        );
        assert_eq!(
            (&caveat["uuid"], &caveat["parentUuid"]),
            (&json!("u-3"), &json!("u-1"))
        );
        assert!(command.get("isMeta").is_none());
        assert_eq!(
            command["message"]["content"],
            "<command-name>/clear</command-name>\n            <command-message>clear</command-message>\n            <command-args></command-args>"
        );
        assert_eq!(command["parentUuid"], "u-3");
        assert_eq!(end["subtype"], "local_command");
        assert_eq!(end["isMeta"], false);
        assert_eq!(end["parentUuid"], "u-4");
        for entry in &lines[1..] {
            assert_eq!(entry["sessionId"], "s-1");
            assert_eq!(entry["cwd"], "/w");
            assert_eq!(entry["timestamp"], "2025-01-01T00:00:00.000Z");
        }
    }
}
