//! What the fake model answers: the per-test script and the default reply.
//!
//! A test writes `<state dir>/script.json` (read again at every request, so
//! a test can change it between turns):
//!
//! ```json
//! {"rules": [
//!   {"when": "make a child", "tool": {"name": "mcp__hangar__create_agent", "input": {}}},
//!   {"when": "slowly", "text": "a slow answer", "delay_ms": 500},
//!   {"api": "responses", "fail": {"status": 500, "message": "boom"}, "times": 1}
//! ]}
//! ```
//!
//! The first rule that matches a request decides its reply. `when` is a
//! substring of the request's last user text (absent: any request); `api`
//! limits a rule to `anthropic`, `responses`, `chat` or `gemini`; `times` limits how
//! often it fires. `{"limit": {"resets_in_secs": 5}}` (or `"resets_at"`
//! epoch seconds, `"claim": "seven_day"`) refuses as the provider does at a
//! usage limit, and a limit with a `resets_at` refuses only until then (as
//! the provider answers again once the window resets: a CLI's continuation
//! after the reset is answered, whatever it resends; `"lasts_secs": 10`
//! is such a limit whose window opens at its first refusal); the top-level `"windows": {"five_hour": 0.4, "seven_day":
//! 0.2}` sets what every allowed reply's rate-limit headers say (see
//! `limits.rs`). A `tool` rule only fires when the request offers a tool of
//! that name (a CLI's side requests, such as title generation, offer none).
//! `"key": "sk-b"` limits a rule to requests sent with that credential
//! (`x-api-key`, `Authorization: Bearer`, `x-goog-api-key`): one of two
//! accounts limited, the other answering.
//! With no rule, the model answers `ANSWER(<first line of the prompt>)`, and
//! after a tool result `TOOL-DONE(<first line of the result>)`, so a test can
//! tell the model's words from its own typing on the screen.

use std::collections::HashMap;

use serde::Deserialize;
use serde_json::Value;

/// Which API a request was made to.
#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Api {
    /// Anthropic Messages (`/v1/messages`), used by Claude Code.
    Anthropic,
    /// OpenAI Responses (`/v1/responses`), used by Codex.
    Responses,
    /// OpenAI chat completions (`/v1/chat/completions`), used by OpenCode,
    /// Qwen Code, Kilo, Crush, Aider and Kimi CLI.
    Chat,
    /// Gemini `models/{model}:generateContent` and
    /// `:streamGenerateContent?alt=sse`, used by Gemini CLI.
    Gemini,
}

impl Api {
    pub fn name(self) -> &'static str {
        match self {
            Api::Anthropic => "anthropic",
            Api::Responses => "responses",
            Api::Chat => "chat",
            Api::Gemini => "gemini",
        }
    }
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Script {
    #[serde(default)]
    pub rules: Vec<Rule>,
    /// The account's usage windows reported on every allowed reply.
    #[serde(default)]
    pub windows: crate::limits::Windows,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rule {
    /// Only requests sent with this credential.
    #[serde(default)]
    pub key: Option<String>,
    #[serde(default)]
    pub when: Option<String>,
    #[serde(default)]
    pub api: Option<Api>,
    #[serde(default)]
    pub times: Option<u64>,
    #[serde(default)]
    pub text: Option<String>,
    #[serde(default)]
    pub tool: Option<ToolCall>,
    #[serde(default)]
    pub fail: Option<Failure>,
    /// Refuse as the provider does at a usage limit (see `limits.rs`).
    #[serde(default)]
    pub limit: Option<crate::limits::LimitSpec>,
    /// Pause between streamed events (a slow model).
    #[serde(default)]
    pub delay_ms: u64,
    /// Pause before the response starts (a model slow to answer at all).
    #[serde(default)]
    pub stall_ms: u64,
}

#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ToolCall {
    pub name: String,
    #[serde(default = "empty_object")]
    pub input: Value,
}

fn empty_object() -> Value {
    Value::Object(Default::default())
}

#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Failure {
    pub status: u16,
    #[serde(default = "default_failure_message")]
    pub message: String,
}

fn default_failure_message() -> String {
    "the fake model API was told to fail".to_owned()
}

/// The part of a request the script looks at.
#[derive(Clone, Debug, PartialEq)]
pub enum UserTurn {
    /// A person's (or the CLI's) text.
    Text(String),
    /// The result of a tool the model called.
    ToolResult(String),
    /// Nothing recognisable (an empty or odd request).
    Unknown,
}

impl UserTurn {
    pub fn text(&self) -> &str {
        match self {
            UserTurn::Text(t) | UserTurn::ToolResult(t) => t,
            UserTurn::Unknown => "",
        }
    }
}

/// The reply decided for one request.
#[derive(Clone, Debug, PartialEq)]
pub enum Reply {
    Text(String),
    Tool(ToolCall),
    Fail(Failure),
}

/// A reply with its pacing, and the rule that chose it (for `times`).
#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    pub reply: Reply,
    pub delay_ms: u64,
    pub stall_ms: u64,
    pub rule: Option<usize>,
    /// A refusal at a usage limit (the reply is then a 429 failure).
    pub limit: Option<crate::limits::LimitSpec>,
}

/// The script as it stands for a request sent with `credential`: a rule
/// for another credential is one that never fires (kept in its place, so
/// rule numbers, which count firings and opened limits, stay the same).
pub fn for_credential(mut script: Script, credential: Option<&str>) -> Script {
    for rule in &mut script.rules {
        if rule.key.as_deref().is_some_and(|k| Some(k) != credential) {
            rule.times = Some(0);
        }
    }
    script
}

/// The script with every `lasts_secs` limit that has opened (`opened`:
/// rule index to its reset, epoch seconds) fixed as a `resets_at`, so that
/// [`plan`] refuses until then and answers after it.
pub fn with_opened_limits(mut script: Script, opened: &HashMap<usize, i64>) -> Script {
    for (i, rule) in script.rules.iter_mut().enumerate() {
        if let Some(limit) = rule.limit.as_mut()
            && limit.resets_at.is_none()
            && limit.lasts_secs.is_some()
            && let Some(reset) = opened.get(&i)
        {
            limit.resets_at = Some(*reset);
        }
    }
    script
}

/// After [`plan`]: a `lasts_secs` limit refusing for the first time opens
/// at `now`; its reset is set in the plan and returned with the rule's
/// index, for [`with_opened_limits`] to keep.
pub fn open_limit(plan: &mut Plan, now: i64) -> Option<(usize, i64)> {
    let rule = plan.rule?;
    let limit = plan.limit.as_mut()?;
    if limit.resets_at.is_some() {
        return None;
    }
    let reset = now + limit.lasts_secs?;
    limit.resets_at = Some(reset);
    Some((rule, reset))
}

/// Picks the reply: the first rule that matches (and has not used up its
/// `times`, nor, for a limit, passed its reset at `now_secs`), else the
/// default answer. `fired(i)` says how often rule `i` has fired already.
pub fn plan(
    script: &Script,
    api: Api,
    turn: &UserTurn,
    offered_tools: &[String],
    fired: &dyn Fn(usize) -> u64,
    now_secs: i64,
) -> Plan {
    for (i, rule) in script.rules.iter().enumerate() {
        if rule.api.is_some_and(|a| a != api) {
            continue;
        }
        if rule
            .limit
            .as_ref()
            .and_then(|l| l.resets_at)
            .is_some_and(|reset| reset <= now_secs)
        {
            continue;
        }
        if let Some(when) = &rule.when
            && !turn.text().contains(when.as_str())
        {
            continue;
        }
        if rule.times.is_some_and(|t| fired(i) >= t) {
            continue;
        }
        let reply = if rule.limit.is_some() {
            Reply::Fail(Failure {
                status: 429,
                message: "usage limit".to_owned(),
            })
        } else if let Some(f) = &rule.fail {
            Reply::Fail(f.clone())
        } else if let Some(t) = &rule.tool {
            if !offered_tools.iter().any(|n| n == &t.name) {
                continue;
            }
            Reply::Tool(t.clone())
        } else if let Some(text) = &rule.text {
            Reply::Text(text.clone())
        } else {
            default_reply(turn)
        };
        return Plan {
            reply,
            delay_ms: rule.delay_ms,
            stall_ms: rule.stall_ms,
            rule: Some(i),
            limit: rule.limit.clone(),
        };
    }
    Plan {
        reply: default_reply(turn),
        delay_ms: 0,
        stall_ms: 0,
        rule: None,
        limit: None,
    }
}

/// The tool Claude Code 2.1.33x loads on demand: it offers MCP tools by
/// name only ("The following deferred tools are now available via
/// ToolSearch ... Use ToolSearch with query \"select:<name>[,<name>...]\"",
/// in a message of the request), and a model calls this tool first to get
/// their schemas (seen running 2.1.337 against this fake with an MCP
/// server, 2026-12-07; `ENABLE_TOOL_SEARCH=false` turns it off).
pub const TOOL_SEARCH: &str = "ToolSearch";

/// A tool rule reached through Claude Code's tool search, as a model does:
/// when the rule's tool is only deferred (named in the request, not
/// offered) and `ToolSearch` is offered, the reply loads it first
/// (`select:<name>`, counted as no firing); the request that carries that
/// search's result then gets the rule's call. `None` when no tool rule
/// needs the search (`plan` decides).
pub fn through_tool_search(
    script: &Script,
    api: Api,
    turn: &UserTurn,
    body: &Value,
    offered_tools: &[String],
    fired: &dyn Fn(usize) -> u64,
) -> Option<Plan> {
    if api != Api::Anthropic {
        return None;
    }
    let loaded = loaded_by_tool_search(body);
    for (i, rule) in script.rules.iter().enumerate() {
        if rule.api.is_some_and(|a| a != api) || rule.times.is_some_and(|t| fired(i) >= t) {
            continue;
        }
        let Some(tool) = &rule.tool else {
            continue;
        };
        if matches!(turn, UserTurn::ToolResult(_)) && loaded.contains(&tool.name) {
            return Some(Plan {
                reply: Reply::Tool(tool.clone()),
                delay_ms: rule.delay_ms,
                stall_ms: rule.stall_ms,
                rule: Some(i),
                limit: None,
            });
        }
        let wanted = rule
            .when
            .as_ref()
            .is_none_or(|w| turn.text().contains(w.as_str()));
        let deferred = !offered_tools.contains(&tool.name)
            && offered_tools.iter().any(|n| n == TOOL_SEARCH)
            && body["messages"].to_string().contains(&tool.name);
        if wanted && deferred {
            return Some(Plan {
                reply: Reply::Tool(ToolCall {
                    name: TOOL_SEARCH.to_owned(),
                    input: serde_json::json!({ "query": format!("select:{}", tool.name) }),
                }),
                delay_ms: 0,
                stall_ms: 0,
                rule: None,
                limit: None,
            });
        }
    }
    None
}

/// The tools a `ToolSearch` call in the request's last assistant message
/// selected (`select:a,b`).
fn loaded_by_tool_search(body: &Value) -> Vec<String> {
    let Some(messages) = body["messages"].as_array() else {
        return Vec::new();
    };
    let Some(last) = messages.iter().rev().find(|m| m["role"] == "assistant") else {
        return Vec::new();
    };
    last["content"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|p| p["type"] == "tool_use" && p["name"] == TOOL_SEARCH)
        .filter_map(|p| p["input"]["query"].as_str()?.strip_prefix("select:"))
        .flat_map(|names| names.split(',').map(|n| n.trim().to_owned()))
        .collect()
}

fn default_reply(turn: &UserTurn) -> Reply {
    let first_line = |t: &str| -> String {
        let line = t.trim().lines().next().unwrap_or("").trim();
        line.chars().take(120).collect()
    };
    Reply::Text(match turn {
        UserTurn::Text(t) => format!("ANSWER({})", first_line(t)),
        UserTurn::ToolResult(t) => format!("TOOL-DONE({})", first_line(t)),
        UserTurn::Unknown => "ANSWER()".to_owned(),
    })
}

/// The text of a content value: a string, or the `text` of its parts.
fn content_text(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| match p {
                Value::String(s) => Some(s.clone()),
                _ => p["text"].as_str().map(str::to_owned).or_else(|| {
                    // A tool result's own content (Anthropic nests it).
                    (!p["content"].is_null()).then(|| content_text(&p["content"]))
                }),
            })
            // Claude Code adds its own context blocks to a user turn, and
            // Gemini CLI 0.61.0 puts a `<session_context>` part before the
            // first prompt (observed in its first streamGenerateContent).
            .filter(|t| {
                let t = t.trim_start();
                !t.starts_with("<system-reminder>") && !t.starts_with("<session_context>")
            })
            .find(|t| !t.trim().is_empty())
            .unwrap_or_default(),
        _ => String::new(),
    }
}

/// The last user turn of a request body.
pub fn user_turn(api: Api, body: &Value) -> UserTurn {
    match api {
        Api::Anthropic => {
            // Claude Code sends its prompt followed by user messages of its
            // own context (agent types, skills): the turn is every user
            // message after the last assistant one, and its text is the
            // first text there.
            let Some(messages) = body["messages"].as_array() else {
                return UserTurn::Unknown;
            };
            let start = messages
                .iter()
                .rposition(|m| m["role"] == "assistant")
                .map_or(0, |i| i + 1);
            let trailing = &messages[start..];
            for m in trailing {
                if let Some(parts) = m["content"].as_array()
                    && let Some(result) = parts.iter().find(|p| p["type"] == "tool_result")
                {
                    return UserTurn::ToolResult(content_text(&result["content"]));
                }
            }
            match trailing
                .iter()
                .map(|m| content_text(&m["content"]))
                .find(|t| !t.trim().is_empty())
            {
                Some(t) => UserTurn::Text(t),
                None => UserTurn::Unknown,
            }
        }
        Api::Responses => {
            let items = match &body["input"] {
                Value::String(s) => return UserTurn::Text(s.clone()),
                Value::Array(items) => items,
                _ => return UserTurn::Unknown,
            };
            let Some(last) = items.last() else {
                return UserTurn::Unknown;
            };
            if last["type"] == "function_call_output" || last["type"] == "custom_tool_call_output" {
                let out = &last["output"];
                return UserTurn::ToolResult(match out {
                    Value::String(s) => s.clone(),
                    other => content_text(&other["content"])
                        .chars()
                        .chain(content_text(other).chars())
                        .collect(),
                });
            }
            match items.iter().rev().find(|i| i["role"] == "user") {
                Some(user) => UserTurn::Text(content_text(&user["content"])),
                None => UserTurn::Unknown,
            }
        }
        Api::Chat => {
            let Some(last) = body["messages"].as_array().and_then(|m| m.last()) else {
                return UserTurn::Unknown;
            };
            match last["role"].as_str() {
                Some("tool") => UserTurn::ToolResult(content_text(&last["content"])),
                Some("user") => UserTurn::Text(without_datetime(content_text(&last["content"]))),
                _ => UserTurn::Unknown,
            }
        }
        Api::Gemini => gemini_user_turn(body),
    }
}

/// GitHub Copilot CLI 1.0.102 starts each prompt with
/// `<current_datetime>...</current_datetime>\n\n` (observed); the prompt is
/// what follows.
fn without_datetime(text: String) -> String {
    match text
        .strip_prefix("<current_datetime>")
        .and_then(|rest| rest.split_once("</current_datetime>"))
    {
        Some((_, prompt)) => prompt.trim_start().to_owned(),
        None => text,
    }
}

/// Gemini's last user turn: `contents[].parts[]` holds `text` parts, or
/// `functionResponse {name, response}` parts after a tool call (a tool's
/// output is in `response.output`, or `response.error` when it failed, as
/// Gemini CLI's `convertToFunctionResponse` sends it).
fn gemini_user_turn(body: &Value) -> UserTurn {
    let Some(last) = body["contents"].as_array().and_then(|c| c.last()) else {
        return UserTurn::Unknown;
    };
    if last["role"] != "user" {
        return UserTurn::Unknown;
    }
    let parts = last["parts"].as_array().map(Vec::as_slice).unwrap_or(&[]);
    if let Some(result) = parts.iter().find_map(|p| p.get("functionResponse")) {
        let response = &result["response"];
        let text = ["output", "error", "content"]
            .iter()
            .find_map(|k| response[k].as_str().map(str::to_owned))
            .unwrap_or_else(|| response.to_string());
        // Gemini CLI 0.61.0 wraps a shell tool's output in
        // `<untrusted_context>` lines (observed after `run_shell_command`).
        let inner = text
            .trim()
            .strip_prefix("<untrusted_context>")
            .and_then(|t| t.strip_suffix("</untrusted_context>"))
            .map_or(text.as_str(), str::trim);
        return UserTurn::ToolResult(inner.to_owned());
    }
    match content_text(&last["parts"]) {
        t if t.trim().is_empty() => UserTurn::Unknown,
        t => UserTurn::Text(t),
    }
}

/// The names of the tools a request offers the model, in any of the four
/// APIs' shapes (Gemini nests them: `tools[].functionDeclarations[].name`).
pub fn offered_tools(body: &Value) -> Vec<String> {
    let Some(tools) = body["tools"].as_array() else {
        return Vec::new();
    };
    let mut names = Vec::new();
    for t in tools {
        if let Some(declarations) = t["functionDeclarations"].as_array() {
            names.extend(
                declarations
                    .iter()
                    .filter_map(|d| d["name"].as_str().map(str::to_owned)),
            );
        } else if let Some(name) = t["name"]
            .as_str()
            .or_else(|| t["function"]["name"].as_str())
        {
            names.push(name.to_owned());
        }
    }
    names
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Claude Code 2.1.337's request shapes with an MCP tool deferred (its
    /// name in a message, `ToolSearch` offered), cut to what is read here.
    fn deferred_request(messages: Value, offered: &[&str]) -> (Value, Vec<String>) {
        let body = json!({"messages": messages});
        (body, offered.iter().map(|s| (*s).to_owned()).collect())
    }

    #[test]
    fn a_deferred_tool_is_loaded_through_tool_search_then_called() {
        let script: Script = serde_json::from_value(json!({"rules": [
            {"when": "make a child", "tool": {"name": "mcp__hangar__create_agent", "input": {"title": "x"}}}
        ]}))
        .unwrap();
        let none = |_| 0;
        let (body, offered) = deferred_request(
            json!([{"role": "user", "content": [
                {"type": "text", "text": "make a child"},
                {"type": "text", "text": "deferred tools ...\nmcp__hangar__create_agent\n"}]}]),
            &["Bash", "ToolSearch"],
        );
        let turn = user_turn(Api::Anthropic, &body);
        let step = through_tool_search(&script, Api::Anthropic, &turn, &body, &offered, &none)
            .expect("a search first");
        assert_eq!(
            step.reply,
            Reply::Tool(ToolCall {
                name: "ToolSearch".into(),
                input: json!({"query": "select:mcp__hangar__create_agent"})
            })
        );
        assert_eq!(step.rule, None, "the search is no firing of the rule");
        let (body, offered) = deferred_request(
            json!([
                {"role": "user", "content": "make a child"},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "ToolSearch",
                    "input": {"query": "select:mcp__hangar__create_agent"}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": []}]}
            ]),
            &["Bash", "ToolSearch", "mcp__hangar__create_agent"],
        );
        let turn = user_turn(Api::Anthropic, &body);
        let call = through_tool_search(&script, Api::Anthropic, &turn, &body, &offered, &none)
            .expect("the call once loaded");
        assert_eq!(call.rule, Some(0));
        let Reply::Tool(t) = call.reply else {
            panic!("{:?}", call.reply)
        };
        assert_eq!(t.name, "mcp__hangar__create_agent");
    }

    #[test]
    fn an_offered_tool_or_a_request_without_tool_search_is_left_to_plan() {
        let script: Script = serde_json::from_value(json!({"rules": [
            {"tool": {"name": "mcp__hangar__create_agent"}}
        ]}))
        .unwrap();
        let none = |_| 0;
        for offered in [
            &["ToolSearch", "mcp__hangar__create_agent"][..],
            &["Bash"][..],
        ] {
            let (body, offered) = deferred_request(
                json!([{"role": "user", "content": "mcp__hangar__create_agent please"}]),
                offered,
            );
            let turn = user_turn(Api::Anthropic, &body);
            assert_eq!(
                through_tool_search(&script, Api::Anthropic, &turn, &body, &offered, &none),
                None
            );
        }
    }

    fn never(_: usize) -> u64 {
        0
    }

    #[test]
    fn the_default_answer_names_the_prompt_and_skips_claude_context_blocks() {
        // The shape Claude Code 2.1.197 sends: the prompt after a reminder
        // block, then a user message of its own context.
        let body = json!({"messages": [
            {"role": "user", "content": [
                {"type": "text", "text": "<system-reminder>ctx</system-reminder>"},
                {"type": "text", "text": "hello there\nsecond line"}]},
            {"role": "user", "content": "Available agent types for the Agent tool: ..."}
        ]});
        let turn = user_turn(Api::Anthropic, &body);
        assert_eq!(turn, UserTurn::Text("hello there\nsecond line".into()));
        let p = plan(&Script::default(), Api::Anthropic, &turn, &[], &never, 0);
        assert_eq!(p.reply, Reply::Text("ANSWER(hello there)".into()));
    }

    #[test]
    fn a_rule_for_one_credential_refuses_that_account_only() {
        let script: Script = serde_json::from_value(json!({"rules": [
            {"key": "sk-limited", "limit": {"resets_in_secs": 3600}},
        ]}))
        .unwrap();
        let turn = UserTurn::Text("go on".into());
        let limited = for_credential(script.clone(), Some("sk-limited"));
        let p = plan(&limited, Api::Anthropic, &turn, &[], &never, 0);
        assert!(matches!(p.reply, Reply::Fail(ref f) if f.status == 429));
        assert_eq!(p.rule, Some(0));
        for other in [Some("sk-other"), None] {
            let p = plan(
                &for_credential(script.clone(), other),
                Api::Anthropic,
                &turn,
                &[],
                &never,
                0,
            );
            assert_eq!(p.reply, Reply::Text("ANSWER(go on)".into()));
        }
    }

    #[test]
    fn a_tool_rule_fires_only_when_the_tool_is_offered_and_times_is_honoured() {
        let script: Script = serde_json::from_value(json!({"rules": [
            {"when": "child", "tool": {"name": "mcp__hangar__create_agent", "input": {"a": 1}}},
            {"when": "child", "text": "no tools here", "times": 1}
        ]}))
        .unwrap();
        let turn = UserTurn::Text("make a child".into());
        let offered = vec!["mcp__hangar__create_agent".to_owned()];
        let p = plan(&script, Api::Anthropic, &turn, &offered, &never, 0);
        assert!(matches!(p.reply, Reply::Tool(ref t) if t.input["a"] == 1));
        let p = plan(&script, Api::Anthropic, &turn, &[], &never, 0);
        assert_eq!(p.reply, Reply::Text("no tools here".into()));
        assert_eq!(p.rule, Some(1));
        let p = plan(&script, Api::Anthropic, &turn, &[], &|_| 1, 0);
        assert_eq!(p.reply, Reply::Text("ANSWER(make a child)".into()));
    }

    #[test]
    fn tool_results_are_recognised_in_all_three_apis() {
        let a = json!({"messages": [{"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t", "content": [{"type": "text", "text": "created s1"}]}
        ]}]});
        assert_eq!(
            user_turn(Api::Anthropic, &a),
            UserTurn::ToolResult("created s1".into())
        );
        let r = json!({"input": [
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]},
            {"type": "function_call_output", "call_id": "c", "output": "done"}
        ]});
        assert_eq!(
            user_turn(Api::Responses, &r),
            UserTurn::ToolResult("done".into())
        );
        let c = json!({"messages": [{"role": "user", "content": "hi"}]});
        assert_eq!(user_turn(Api::Chat, &c), UserTurn::Text("hi".into()));
        // Copilot CLI 1.0.102's prompt, as it sent it.
        let copilot = json!({"messages": [{"role": "user", "content":
            "<current_datetime>2026-12-07T17:09:48.238+00:00</current_datetime>\n\nhello copilot"}]});
        assert_eq!(
            user_turn(Api::Chat, &copilot),
            UserTurn::Text("hello copilot".into())
        );
        let tools =
            json!({"tools": [{"name": "a"}, {"type": "function", "function": {"name": "b"}}]});
        assert_eq!(offered_tools(&tools), vec!["a", "b"]);
        let g = json!({"contents": [
            {"role": "user", "parts": [{"text": "hi"}]},
            {"role": "model", "parts": [{"functionCall": {"name": "ls", "args": {}}}]},
            {"role": "user", "parts": [{"functionResponse": {"id": "c", "name": "ls",
                "response": {"output": "a.txt\nb.txt"}}}]}
        ]});
        assert_eq!(
            user_turn(Api::Gemini, &g),
            UserTurn::ToolResult("a.txt\nb.txt".into())
        );
        let shell = json!({"contents": [{"role": "user", "parts": [{"functionResponse": {
            "name": "run_shell_command", "response": {"output":
            "<untrusted_context>\nOutput: (empty)\nProcess Group PGID: 22877\n</untrusted_context>"}}}]}]});
        let turn = user_turn(Api::Gemini, &shell);
        assert_eq!(
            plan(&Script::default(), Api::Gemini, &turn, &[], &never, 0).reply,
            Reply::Text("TOOL-DONE(Output: (empty))".into())
        );
    }

    #[test]
    fn a_gemini_prompt_is_the_last_user_contents_text_and_its_tools_are_nested() {
        // Gemini CLI 0.61.0's first turn: its session context, then the
        // prompt, as two parts of one user content.
        let first = json!({"contents": [{"role": "user", "parts": [
            {"text": "<session_context>\nThis is the Gemini CLI. We are setting up the context"},
            {"text": "hello gemini"}]}]});
        assert_eq!(
            user_turn(Api::Gemini, &first),
            UserTurn::Text("hello gemini".into())
        );
        let body = json!({
            "contents": [
                {"role": "user", "parts": [{"text": "<session_context>\nThis is the Gemini CLI."}, {"text": "hi"}]},
                {"role": "model", "parts": [{"text": "Got it."}]},
                {"role": "user", "parts": [{"text": "what is 2+2\nthanks"}]}
            ],
            "tools": [{"functionDeclarations": [{"name": "read_file"}, {"name": "mcp_hangar_list"}]}]
        });
        let turn = user_turn(Api::Gemini, &body);
        assert_eq!(turn, UserTurn::Text("what is 2+2\nthanks".into()));
        assert_eq!(
            offered_tools(&body),
            vec!["read_file".to_owned(), "mcp_hangar_list".to_owned()]
        );
        let p = plan(&Script::default(), Api::Gemini, &turn, &[], &never, 0);
        assert_eq!(p.reply, Reply::Text("ANSWER(what is 2+2)".into()));
        let model_last = json!({"contents": [{"role": "model", "parts": [{"text": "x"}]}]});
        assert_eq!(user_turn(Api::Gemini, &model_last), UserTurn::Unknown);
    }

    #[test]
    fn a_limit_that_lasts_opens_at_its_first_refusal_and_answers_after_it() {
        let script: Script = serde_json::from_value(
            json!({"rules": [{"when": "over", "limit": {"lasts_secs": 10}}]}),
        )
        .unwrap();
        let turn = UserTurn::Text("over the limit".into());
        let mut opened = HashMap::new();
        let mut ask = |now: i64| {
            let s = with_opened_limits(script.clone(), &opened);
            let mut p = plan(&s, Api::Chat, &turn, &[], &never, now);
            if let Some((i, reset)) = open_limit(&mut p, now) {
                opened.insert(i, reset);
            }
            p
        };
        // However late the first request comes, it is refused, the window
        // opening then; later refusals name the same reset.
        let first = ask(5000);
        assert!(matches!(
            first.reply,
            Reply::Fail(Failure { status: 429, .. })
        ));
        assert_eq!(first.limit.and_then(|l| l.resets_at), Some(5010));
        let again = ask(5004);
        assert_eq!(again.limit.and_then(|l| l.resets_at), Some(5010));
        let after = ask(5010);
        assert_eq!(after.reply, Reply::Text("ANSWER(over the limit)".into()));
    }

    #[test]
    fn a_limit_refuses_until_its_reset_and_answers_after_it() {
        let script: Script = serde_json::from_value(
            json!({"rules": [{"when": "over", "limit": {"resets_at": 1000}}]}),
        )
        .unwrap();
        // Claude Code resends the refused prompt with the continuation.
        let turn = UserTurn::Text("over the limit\ncontinue".into());
        let before = plan(&script, Api::Anthropic, &turn, &[], &never, 999);
        assert!(matches!(
            before.reply,
            Reply::Fail(Failure { status: 429, .. })
        ));
        assert!(before.limit.is_some());
        let after = plan(&script, Api::Anthropic, &turn, &[], &never, 1000);
        assert_eq!(after.reply, Reply::Text("ANSWER(over the limit)".into()));
        assert_eq!(after.limit, None);
    }

    #[test]
    fn an_api_limited_failure_rule_leaves_other_apis_alone() {
        let script: Script =
            serde_json::from_value(json!({"rules": [{"api": "chat", "fail": {"status": 503}}]}))
                .unwrap();
        let turn = UserTurn::Text("x".into());
        assert!(matches!(
            plan(&script, Api::Chat, &turn, &[], &never, 0).reply,
            Reply::Fail(Failure { status: 503, .. })
        ));
        assert!(matches!(
            plan(&script, Api::Responses, &turn, &[], &never, 0).reply,
            Reply::Text(_)
        ));
    }
}
