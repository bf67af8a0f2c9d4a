//! The texts of a request's trailing user messages, fingerprinted
//! (`hangar_core::prompt_match`): how the daemon tells the request that
//! carries a typed prompt from a CLI's own side requests where it cannot
//! read the agent's record of the turn (an engine's container).
//!
//! The shapes are the four APIs' as the real CLIs send them (recorded
//! through this proxy and read by `hangar-fake-model-api`'s `user_turn`):
//! Anthropic Messages and chat completions `messages[]` with a string or
//! `[{type, text}]` content, OpenAI Responses `input` (a string, or items
//! with `input_text` parts), Gemini `contents[].parts[].text`.

use hangar_core::prompt_match::fingerprint;
use serde_json::Value;

/// Most trailing messages looked at: a turn's prompt comes with a few of
/// the CLI's own context messages, never dozens.
const MAX_ITEMS: usize = 8;
/// Most texts kept per request.
const MAX_TEXTS: usize = 16;

/// Fingerprints of the texts in the user messages after the request's last
/// message from the model (none for a body that is not one of the four
/// shapes).
pub fn trailing_user_prints(body: &[u8]) -> Vec<String> {
    let Ok(request) = serde_json::from_slice::<Value>(body) else {
        return Vec::new();
    };
    let items = match (
        &request["messages"],
        &request["input"],
        &request["contents"],
    ) {
        (Value::Array(items), _, _) | (_, Value::Array(items), _) | (_, _, Value::Array(items)) => {
            items
        }
        (_, Value::String(prompt), _) => return vec![fingerprint(prompt)],
        _ => return Vec::new(),
    };
    let mut texts = Vec::new();
    for item in items.iter().rev().take(MAX_ITEMS) {
        if from_the_model(item) {
            break;
        }
        collect_texts(item, &mut texts);
    }
    texts
        .into_iter()
        .filter(|t| !t.trim().is_empty())
        .take(MAX_TEXTS)
        .map(fingerprint)
        .collect()
}

/// A message the model wrote, or a call it made (Responses items carry no
/// role for those).
fn from_the_model(item: &Value) -> bool {
    matches!(item["role"].as_str(), Some("assistant" | "model"))
        || matches!(
            item["type"].as_str(),
            Some("function_call" | "custom_tool_call" | "local_shell_call" | "reasoning")
        )
}

/// Every string held as a message's `content`, or a part's `text`,
/// `content` or `parts`, depth first.
fn collect_texts<'a>(item: &'a Value, texts: &mut Vec<&'a str>) {
    for key in ["content", "text", "parts"] {
        match &item[key] {
            Value::String(s) => texts.push(s),
            Value::Array(parts) => {
                for part in parts {
                    collect_texts(part, texts);
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hangar_core::prompt_match::carries;
    use serde_json::json;

    fn prints(body: Value) -> Vec<String> {
        trailing_user_prints(body.to_string().as_bytes())
    }

    #[test]
    fn claude_codes_turn_carries_its_prompt_and_its_quota_request_does_not() {
        // Claude Code's turn: the prompt among its own context blocks,
        // after the previous answer.
        let turn = prints(json!({"model": "m", "messages": [
            {"role": "user", "content": "first"},
            {"role": "assistant", "content": [{"type": "text", "text": "ANSWER(first)"}]},
            {"role": "user", "content": [
                {"type": "text", "text": "<system-reminder>\nctx\n</system-reminder>"},
                {"type": "text", "text": "after the wake", "cache_control": {"type": "ephemeral"}}
            ]}
        ]}));
        assert!(carries(&turn, "after the wake"));
        assert!(!carries(&turn, "first"), "an earlier turn is not this one");
        let quota = prints(json!({"model": "m", "max_tokens": 1,
            "messages": [{"role": "user", "content": "quota"}]}));
        assert!(!carries(&quota, "after the wake"));
    }

    #[test]
    fn codex_responses_input_carries_its_prompt() {
        let turn = prints(json!({"input": [
            {"type": "message", "role": "user", "content": [
                {"type": "input_text", "text": "<environment_context>cwd</environment_context>"}]},
            {"type": "message", "role": "assistant", "content": [
                {"type": "output_text", "text": "ANSWER(one)"}]},
            {"type": "message", "role": "user", "content": [
                {"type": "input_text", "text": "two"}]}
        ]}));
        assert!(carries(&turn, "two"));
        let tool_result = prints(json!({"input": [
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "two"}]},
            {"type": "function_call", "name": "shell", "arguments": "{}", "call_id": "c"},
            {"type": "function_call_output", "call_id": "c", "output": "done"}
        ]}));
        assert!(
            !carries(&tool_result, "two"),
            "a tool's result is not a new prompt"
        );
        assert!(carries(&prints(json!({"input": "plain"})), "plain"));
    }

    #[test]
    fn chat_completions_and_gemini_carry_their_prompts() {
        let chat = prints(json!({"messages": [
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": [{"type": "text", "text": "hi there"}]}
        ]}));
        assert!(carries(&chat, "hi there"));
        let gemini = prints(json!({"contents": [
            {"role": "user", "parts": [{"text": "one"}]},
            {"role": "model", "parts": [{"text": "ANSWER(one)"}]},
            {"role": "user", "parts": [{"text": "two"}]}
        ]}));
        assert!(carries(&gemini, "two"));
        assert!(!carries(&gemini, "one"));
    }

    #[test]
    fn a_body_of_no_known_shape_carries_nothing() {
        assert!(trailing_user_prints(b"not json").is_empty());
        assert!(prints(json!({"prompt": "x"})).is_empty());
    }
}
