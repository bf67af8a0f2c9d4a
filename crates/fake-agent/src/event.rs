//! What happened in a conversation, before it is written in any CLI's shape.
//!
//! The conversation loop speaks only in these events; `claude_lines` and
//! `codex_lines` turn them into the JSON lines each real CLI writes.

use crate::args::{Invocation, Style};

/// The facts a process start records as the first line it writes.
#[derive(Debug, Clone)]
pub struct StartRecord {
    pub argv: Vec<String>,
    pub pid: u32,
    pub ppid: i32,
    pub style: Style,
    pub resumed: bool,
    /// `HTTPS_PROXY` when set: lets tests check the proxy reached the agent.
    pub env_proxy: Option<String>,
    /// Whether the transcript file existed before this start.
    pub transcript_existed: bool,
    /// A fork: the conversation it started from, and (codex) how many of
    /// its rollout's lines the fork carries on from.
    pub forked_from: Option<(String, usize)>,
    pub invocation: Invocation,
}

impl StartRecord {
    /// The command-line facts every start line carries, under the same keys
    /// in both shapes.
    pub fn fields(&self) -> serde_json::Map<String, serde_json::Value> {
        let inv = &self.invocation;
        let value = serde_json::json!({
            "argv": self.argv,
            "pid": self.pid,
            "ppid": self.ppid,
            "style": self.style.name(),
            "resumed": self.resumed,
            "env_proxy": self.env_proxy,
            "transcript_existed": self.transcript_existed,
            "dangerous": inv.dangerous,
            "model": inv.model,
            "mcp_config": inv.mcp_config,
            "settings": inv.settings,
            "config_overrides": inv.config_overrides,
            "ignored_args": inv.ignored,
            "forked_from": self.forked_from.as_ref().map(|(id, _)| id),
        });
        match value {
            serde_json::Value::Object(map) => map,
            // json!({...}) always builds an object.
            _ => unreachable!("json! object literal is an object"),
        }
    }
}

/// One thing to record.
#[derive(Debug, Clone, Copy)]
pub enum Event<'a> {
    Start(&'a StartRecord),
    /// A line the person typed, verbatim.
    User(&'a str),
    /// A finished answer (`stop_reason: end_turn`).
    Assistant(&'a str),
    /// The agent stops its turn to ask permission for a tool.
    PermissionAsk {
        tool: &'a str,
        call_id: &'a str,
    },
    /// The person's answer to a permission ask.
    ToolResult {
        call_id: &'a str,
        allowed: bool,
    },
    /// A signal arrived and was deliberately ignored.
    SignalIgnored(&'a str),
    /// A clean exit; `signal` names the signal that caused it, if any.
    Exit {
        reason: &'a str,
        signal: Option<&'a str>,
    },
}
