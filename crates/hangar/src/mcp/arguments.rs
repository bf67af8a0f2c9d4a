//! The MCP tools' arguments, and checking them before rmcp parses them, so that a value of
//! the wrong type is refused with a message that names the tool and the
//! field (`send_prompt: argument prompt: invalid type: integer `42`, expected
//! a string`) instead of rmcp's bare serde message, which names neither.
//!
//! It only checks: the arguments are then handed to the tool unchanged, and
//! the daemon still validates every value (limits, ids, folders). A tool this
//! module does not know is left to rmcp's router, which refuses it.

use rmcp::ErrorData;
use rmcp::model::JsonObject;
use serde::de::DeserializeOwned;
use serde_json::Value;

use rmcp::schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Debug, Default, Serialize, Deserialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct CreateAgent {
    /// claude, codex, opencode or shell (default: your own provider).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// A first prompt, delivered exactly once (the child is started for it).
    /// At most 64 KiB.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
    /// An existing absolute folder (default: yours).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// At most 200 characters (default: the role, else "<provider> agent").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// A free-form role such as "reviewer" (at most 64 characters).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    /// The run to group it in (letters, digits, '-', '_', '.'; at most 64);
    /// default: a new run, returned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<String>,
}

#[derive(Debug, Default, Serialize, Deserialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct SendPrompt {
    /// The agent's id (or a unique prefix) from list_agents.
    pub session: String,
    /// The prompt, typed into the agent followed by Enter. At most 64 KiB.
    pub prompt: String,
}

#[derive(Debug, Default, Serialize, Deserialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct RunFilter {
    /// Only this run (default: all of your agents).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<String>,
}

#[derive(Debug, Default, Serialize, Deserialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct SessionArg {
    /// The agent's id (or a unique prefix) from list_agents.
    pub session: String,
}

#[derive(Debug, Default, Serialize, Deserialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct UsageRead {
    /// How many hours back (default 24).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since_hours: Option<u64>,
    /// Only this session (an id or a unique prefix).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
}

#[derive(Debug, Default, Serialize, Deserialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct GoalStart {
    /// The agent's id (or a unique prefix) from list_agents.
    pub session: String,
    /// The goal, typed into the agent and named again at each end of its
    /// turns (at most 4 KiB).
    pub goal: String,
    /// The most turns (default 20, at most 1000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_turns: Option<u32>,
}

#[derive(Debug, Default, Serialize, Deserialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct GoalDone {
    /// "done" when the goal is reached; "blocked" when you cannot go on
    /// without a person.
    pub status: String,
    /// One line: what was done, or what blocks you.
    #[serde(default)]
    pub summary: String,
}

#[derive(Debug, Default, Serialize, Deserialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct ReadAgent {
    /// The agent's id (or a unique prefix); closed agents can be read too.
    pub session: String,
    /// How many messages from the end (default 20, at most 200).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_messages: Option<usize>,
    /// At most this many characters in all (default 20000, at most 200000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_chars: Option<usize>,
}

#[derive(Debug, Default, Serialize, Deserialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct ReadRunOutputs {
    /// Only this run (default: all of your agents).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<String>,
    /// The outputs' total size bound (default 50000, at most 500000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_total_chars: Option<usize>,
}

#[derive(Debug, Default, Serialize, Deserialize, JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct WaitAgents {
    /// Wait for every agent of this run (default: all of yours)...
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<String>,
    /// ...or for these agents (at most 64).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sessions: Option<Vec<String>>,
    /// Give up after this long (default 60000, at most 600000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
}

/// `Ok` when `args` decode as the arguments of `tool` (or `tool` is not
/// hangar's); else an invalid-params error naming the tool and the field.
pub(super) fn check(tool: &str, args: Option<&JsonObject>) -> Result<(), ErrorData> {
    match tool {
        "create_agent" => decode::<CreateAgent>(tool, args),
        "send_prompt" => decode::<SendPrompt>(tool, args),
        "list_agents" | "close_run" => decode::<RunFilter>(tool, args),
        "read_agent" => decode::<ReadAgent>(tool, args),
        "read_run_outputs" => decode::<ReadRunOutputs>(tool, args),
        "wait_agents" => decode::<WaitAgents>(tool, args),
        "close_agent" | "park_agent" | "hibernate_agent" => decode::<SessionArg>(tool, args),
        "usage_read" => decode::<UsageRead>(tool, args),
        "goal_start" => decode::<GoalStart>(tool, args),
        "goal_stop" => decode::<SessionArg>(tool, args),
        "goal_done" => decode::<GoalDone>(tool, args),
        _ => Ok(()),
    }
}

fn decode<T: DeserializeOwned>(tool: &str, args: Option<&JsonObject>) -> Result<(), ErrorData> {
    // No arguments at all is an empty object, as rmcp reads it.
    let value = Value::Object(args.cloned().unwrap_or_default());
    match serde_path_to_error::deserialize::<_, T>(value) {
        Ok(_) => Ok(()),
        Err(e) => {
            let path = e.path().to_string();
            let message = if path == "." {
                // A missing field: serde's message already names it.
                format!("{tool}: {}", e.inner())
            } else {
                format!("{tool}: argument {path}: {}", e.inner())
            };
            Err(ErrorData::invalid_params(message, None))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn message(tool: &str, args: Value) -> String {
        check(tool, args.as_object())
            .unwrap_err()
            .message
            .into_owned()
    }

    #[test]
    fn a_wrong_type_names_the_tool_and_the_field() {
        assert_eq!(
            message("send_prompt", json!({"session": "a", "prompt": 42})),
            "send_prompt: argument prompt: invalid type: integer `42`, expected a string"
        );
        assert_eq!(
            message("wait_agents", json!({"sessions": ["a", 7]})),
            "wait_agents: argument sessions[1]: invalid type: integer `7`, expected a string"
        );
        assert_eq!(
            message("read_agent", json!({"session": "a", "max_chars": -1})),
            "read_agent: argument max_chars: invalid value: integer `-1`, expected usize"
        );
    }

    #[test]
    fn a_missing_field_names_the_tool_and_the_field() {
        assert_eq!(
            message("close_agent", json!({})),
            "close_agent: missing field `session`"
        );
    }

    #[test]
    fn good_arguments_and_unknown_tools_pass() {
        assert!(check("create_agent", None).is_ok());
        assert!(
            check(
                "send_prompt",
                json!({"session": "a", "prompt": "hi"}).as_object()
            )
            .is_ok()
        );
        assert!(check("no_such_tool", json!({"x": 1}).as_object()).is_ok());
    }
}
