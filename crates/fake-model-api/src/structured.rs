//! Side requests that must answer JSON: a CLI asking the model for a value
//! of a given schema (not for a turn of the conversation) gets the smallest
//! value of that schema.
//!
//! Gemini CLI 0.61.0 sends such requests around every turn: its model
//! router asks `gemini-3.5-flash-lite` for `{complexity_reasoning,
//! complexity_score}` with `generationConfig.responseMimeType:
//! "application/json"` and `responseJsonSchema` (observed in
//! `requests.jsonl`, prompt "hello gemini"); given `ANSWER(...)` instead of
//! JSON it retried the request and the turn never started. A scripted text
//! rule would break it the same way, so these requests bypass the script's
//! text and tool rules (failures and limits still apply: the real API
//! refuses every request at a limit).
//!
//! It must never guess beyond the schema: an `enum` answers its first
//! value, so a next-speaker check whose enum starts with `"user"` hands the
//! turn back to the person.

use serde_json::{Map, Value, json};

/// The schema a request asks its answer to follow, if it asks for JSON.
pub fn requested_schema(body: &Value) -> Option<&Value> {
    let config = &body["generationConfig"];
    if config["responseMimeType"] != "application/json" {
        return None;
    }
    ["responseJsonSchema", "responseSchema"]
        .iter()
        .map(|k| &config[*k])
        .find(|s| s.is_object())
}

/// The smallest value of `schema`: every property of an object (required
/// or not), the first of an `enum`, the minimum of a number, one item of
/// an array with `minItems`.
pub fn smallest_instance(schema: &Value) -> Value {
    if let Some(first) = schema["enum"].as_array().and_then(|e| e.first()) {
        return first.clone();
    }
    let kind = schema["type"]
        .as_str()
        .or_else(|| {
            // JSON Schema allows `"type": ["string", "null"]`.
            schema["type"]
                .as_array()
                .and_then(|t| t.iter().filter_map(Value::as_str).find(|t| *t != "null"))
        })
        .map(str::to_ascii_lowercase);
    match kind.as_deref() {
        Some("object") => {
            let mut out = Map::new();
            if let Some(props) = schema["properties"].as_object() {
                for (name, prop) in props {
                    out.insert(name.clone(), smallest_instance(prop));
                }
            }
            Value::Object(out)
        }
        Some("array") => {
            let n = schema["minItems"].as_u64().unwrap_or(0);
            Value::Array(
                (0..n)
                    .map(|_| smallest_instance(&schema["items"]))
                    .collect(),
            )
        }
        Some("integer") => json!(schema["minimum"].as_i64().unwrap_or(1)),
        Some("number") => json!(schema["minimum"].as_f64().unwrap_or(1.0)),
        Some("boolean") => json!(false),
        Some("null") => Value::Null,
        _ => json!("fake"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gemini_clis_router_request_gets_a_value_of_its_schema() {
        // The request Gemini CLI 0.61.0 sent to gemini-3.5-flash-lite.
        let body = json!({"generationConfig": {
            "responseMimeType": "application/json",
            "responseJsonSchema": {"type": "OBJECT", "required": ["complexity_reasoning", "complexity_score"],
                "properties": {
                    "complexity_reasoning": {"type": "STRING", "description": "Brief explanation for the score."},
                    "complexity_score": {"type": "INTEGER", "description": "Complexity score from 1-100."}}}}});
        let schema = requested_schema(&body).unwrap();
        assert_eq!(
            smallest_instance(schema),
            json!({"complexity_reasoning": "fake", "complexity_score": 1})
        );
    }

    #[test]
    fn an_enum_answers_its_first_value_and_plain_requests_ask_for_nothing() {
        let next_speaker = json!({"type": "object", "properties": {
            "reasoning": {"type": "string"},
            "next_speaker": {"type": "string", "enum": ["user", "model"]}}});
        assert_eq!(
            smallest_instance(&next_speaker)["next_speaker"],
            json!("user")
        );
        let list = json!({"type": ["array", "null"], "minItems": 2, "items": {"type": "boolean"}});
        assert_eq!(smallest_instance(&list), json!([false, false]));
        assert!(requested_schema(&json!({"contents": []})).is_none());
        assert!(
            requested_schema(&json!({"generationConfig": {"responseMimeType": "text/plain"}}))
                .is_none()
        );
    }
}
