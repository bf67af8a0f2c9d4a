//! Checking a tool's arguments before rmcp parses them, so that a value of
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

use super::{
    CreateAgent, ReadAgent, ReadRunOutputs, RunFilter, SendPrompt, SessionArg, WaitAgents,
};

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
