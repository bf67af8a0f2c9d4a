//! The four APIs' answers as the CLIs expect them on the wire: Anthropic
//! Messages events, OpenAI Responses events, chat-completion chunks and
//! Gemini `GenerateContentResponse` chunks (streamed as server-sent events),
//! their whole-body forms for requests that do not stream, and their error
//! bodies.
//!
//! The event names and fields follow the providers' published streaming
//! references (Anthropic "Streaming Messages", OpenAI "Responses streaming
//! events" and "Chat completion chunk object"); only the fields the CLIs
//! read are filled in. Gemini's follow what `@google/genai` reads, as
//! bundled in `@google/gemini-cli` 0.61.0 (`bundle/chunk-JDPZ4CE3.js`, the
//! chunk `gemini.js` loads): each SSE event is one `data: <JSON>` line
//! ended by a blank line (its `responseLineRE`, line 267375); a response is
//! `{candidates: [{content: {role: "model", parts}, finishReason, index}],
//! usageMetadata: {promptTokenCount, candidatesTokenCount,
//! totalTokenCount}, modelVersion, responseId}`; an error is `{error:
//! {code, message, status, details}}`.

use serde_json::{Value, json};

use crate::script::{Api, Failure, Reply, ToolCall};

/// Token counts reported for one reply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Usage {
    pub input: u64,
    pub output: u64,
}

impl Usage {
    /// Deterministic figures: a token per 4 request bytes, one per reply
    /// word plus one, so a test can predict what hangar must count.
    pub fn for_reply(request_bytes: usize, reply: &Reply) -> Usage {
        let words = match reply {
            Reply::Text(t) => t.split_whitespace().count(),
            Reply::Tool(t) => 1 + t.input.to_string().len() / 8,
            Reply::Fail(_) => 0,
        };
        Usage {
            input: (request_bytes as u64 / 4).max(1),
            output: words as u64 + 1,
        }
    }
}

/// Names for one reply's objects (unique per request).
pub struct Ids {
    pub n: u64,
}

impl Ids {
    fn message(&self) -> String {
        format!("msg_fake{:06}", self.n)
    }
    fn tool(&self) -> String {
        format!("toolu_fake{:06}", self.n)
    }
    fn call(&self) -> String {
        format!("call_fake{:06}", self.n)
    }
    fn response(&self) -> String {
        format!("resp_fake{:06}", self.n)
    }
}

/// Splits text into a few pieces so clients see several deltas.
fn pieces(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    for (i, word) in text.split_inclusive(' ').enumerate() {
        cur.push_str(word);
        if i % 2 == 1 {
            out.push(std::mem::take(&mut cur));
        }
    }
    if !cur.is_empty() || out.is_empty() {
        out.push(cur);
    }
    out
}

fn sse(event: Option<&str>, data: &Value) -> String {
    match event {
        Some(e) => format!("event: {e}\ndata: {data}\n\n"),
        None => format!("data: {data}\n\n"),
    }
}

fn tool_arguments(t: &ToolCall) -> String {
    t.input.to_string()
}

/// The streamed events of one successful reply.
pub fn stream_events(api: Api, reply: &Reply, model: &str, ids: &Ids, usage: Usage) -> Vec<String> {
    match api {
        Api::Anthropic => anthropic_events(reply, model, ids, usage),
        Api::Responses => responses_events(reply, model, ids, usage),
        Api::Chat => chat_events(reply, model, ids, usage),
        Api::Gemini => gemini_events(reply, model, ids, usage),
    }
}

/// The model a Gemini request names in its path
/// (`/v1beta/models/<model>:streamGenerateContent`), if any.
pub fn gemini_model(path: &str) -> Option<&str> {
    let after = path.rsplit_once("/models/")?.1;
    let model = after.split(':').next()?;
    (!model.is_empty()).then_some(model)
}

fn gemini_usage(usage: Usage) -> Value {
    json!({"promptTokenCount": usage.input, "candidatesTokenCount": usage.output,
           "totalTokenCount": usage.input + usage.output})
}

fn gemini_response(
    parts: Value,
    finish: Option<&str>,
    model: &str,
    ids: &Ids,
    usage: Option<Usage>,
) -> Value {
    let mut candidate = json!({"content": {"role": "model", "parts": parts}, "index": 0});
    if let Some(f) = finish {
        candidate["finishReason"] = json!(f);
    }
    let mut response = json!({"candidates": [candidate], "modelVersion": model,
                              "responseId": format!("resp_fake{:06}", ids.n)});
    if let Some(u) = usage {
        response["usageMetadata"] = gemini_usage(u);
    }
    response
}

fn gemini_parts(reply: &Reply, ids: &Ids) -> Value {
    match reply {
        Reply::Text(text) => json!([{"text": text}]),
        Reply::Tool(t) => {
            json!([{"functionCall": {"id": ids.call(), "name": t.name, "args": t.input}}])
        }
        Reply::Fail(_) => json!([]),
    }
}

/// Gemini streams whole `GenerateContentResponse`s: text in pieces, a tool
/// call as one `functionCall` part; the last chunk carries `finishReason`
/// (`STOP` for both: Gemini has no tool-use stop reason) and the usage.
fn gemini_events(reply: &Reply, model: &str, ids: &Ids, usage: Usage) -> Vec<String> {
    let mut ev = Vec::new();
    let last_parts = match reply {
        Reply::Text(text) => {
            let mut p = pieces(text);
            let last = p.pop().unwrap_or_default();
            for piece in p {
                ev.push(gemini_sse(&gemini_response(
                    json!([{"text": piece}]),
                    None,
                    model,
                    ids,
                    None,
                )));
            }
            json!([{"text": last}])
        }
        other => gemini_parts(other, ids),
    };
    ev.push(gemini_sse(&gemini_response(
        last_parts,
        Some("STOP"),
        model,
        ids,
        Some(usage),
    )));
    ev
}

/// Gemini's SSE framing: `data:` lines with CRLF, no event names (as the
/// real API sends them; `responseLineRE` accepts `\r\n\r\n` or `\n\n`).
fn gemini_sse(data: &Value) -> String {
    format!("data: {data}\r\n\r\n")
}

fn anthropic_events(reply: &Reply, model: &str, ids: &Ids, usage: Usage) -> Vec<String> {
    let mut ev = vec![
        sse(
            Some("message_start"),
            &json!({"type": "message_start", "message": {
                "id": ids.message(), "type": "message", "role": "assistant", "model": model,
                "content": [], "stop_reason": null, "stop_sequence": null,
                "usage": {"input_tokens": usage.input, "output_tokens": 1,
                          "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}}}),
        ),
        sse(Some("ping"), &json!({"type": "ping"})),
    ];
    let stop_reason = match reply {
        Reply::Text(text) => {
            ev.push(sse(
                Some("content_block_start"),
                &json!({"type": "content_block_start", "index": 0,
                        "content_block": {"type": "text", "text": ""}}),
            ));
            for p in pieces(text) {
                ev.push(sse(
                    Some("content_block_delta"),
                    &json!({"type": "content_block_delta", "index": 0,
                            "delta": {"type": "text_delta", "text": p}}),
                ));
            }
            ev.push(sse(
                Some("content_block_stop"),
                &json!({"type": "content_block_stop", "index": 0}),
            ));
            "end_turn"
        }
        Reply::Tool(t) => {
            ev.push(sse(
                Some("content_block_start"),
                &json!({"type": "content_block_start", "index": 0,
                        "content_block": {"type": "tool_use", "id": ids.tool(), "name": t.name, "input": {}}}),
            ));
            ev.push(sse(
                Some("content_block_delta"),
                &json!({"type": "content_block_delta", "index": 0,
                        "delta": {"type": "input_json_delta", "partial_json": tool_arguments(t)}}),
            ));
            ev.push(sse(
                Some("content_block_stop"),
                &json!({"type": "content_block_stop", "index": 0}),
            ));
            "tool_use"
        }
        // Never streamed: a failure is answered with an error status.
        Reply::Fail(_) => "end_turn",
    };
    ev.push(sse(
        Some("message_delta"),
        &json!({"type": "message_delta",
                "delta": {"stop_reason": stop_reason, "stop_sequence": null},
                "usage": {"output_tokens": usage.output}}),
    ));
    ev.push(sse(Some("message_stop"), &json!({"type": "message_stop"})));
    ev
}

fn responses_usage(usage: Usage) -> Value {
    json!({"input_tokens": usage.input, "input_tokens_details": {"cached_tokens": 0},
           "output_tokens": usage.output, "output_tokens_details": {"reasoning_tokens": 0},
           "total_tokens": usage.input + usage.output})
}

fn responses_item(reply: &Reply, ids: &Ids) -> Value {
    match reply {
        Reply::Tool(t) => json!({"type": "function_call", "id": format!("fc_fake{:06}", ids.n),
            "call_id": ids.call(), "name": t.name, "arguments": tool_arguments(t),
            "status": "completed"}),
        Reply::Text(text) => json!({"type": "message", "id": ids.message(), "status": "completed",
            "role": "assistant",
            "content": [{"type": "output_text", "text": text, "annotations": []}]}),
        Reply::Fail(_) => json!({}),
    }
}

fn responses_events(reply: &Reply, model: &str, ids: &Ids, usage: Usage) -> Vec<String> {
    let created = json!({"id": ids.response(), "object": "response", "created_at": 0,
        "status": "in_progress", "model": model, "output": [], "usage": null});
    let mut seq = 0u64;
    let mut next = |mut v: Value| {
        v["sequence_number"] = json!(seq);
        seq += 1;
        let name = v["type"].as_str().unwrap_or("").to_owned();
        sse(Some(&name), &v)
    };
    let mut ev = vec![
        next(json!({"type": "response.created", "response": created})),
        next(json!({"type": "response.in_progress", "response": created})),
    ];
    let done_item = responses_item(reply, ids);
    match reply {
        Reply::Text(text) => {
            let mut added = done_item.clone();
            added["status"] = json!("in_progress");
            added["content"] = json!([]);
            ev.push(next(
                json!({"type": "response.output_item.added", "output_index": 0, "item": added}),
            ));
            ev.push(next(
                json!({"type": "response.content_part.added", "item_id": ids.message(),
                "output_index": 0, "content_index": 0,
                "part": {"type": "output_text", "text": "", "annotations": []}}),
            ));
            for p in pieces(text) {
                ev.push(next(
                    json!({"type": "response.output_text.delta", "item_id": ids.message(),
                    "output_index": 0, "content_index": 0, "delta": p}),
                ));
            }
            ev.push(next(
                json!({"type": "response.output_text.done", "item_id": ids.message(),
                "output_index": 0, "content_index": 0, "text": text}),
            ));
            ev.push(next(
                json!({"type": "response.content_part.done", "item_id": ids.message(),
                "output_index": 0, "content_index": 0,
                "part": {"type": "output_text", "text": text, "annotations": []}}),
            ));
        }
        Reply::Tool(t) => {
            let mut added = done_item.clone();
            added["status"] = json!("in_progress");
            added["arguments"] = json!("");
            ev.push(next(
                json!({"type": "response.output_item.added", "output_index": 0, "item": added}),
            ));
            ev.push(next(
                json!({"type": "response.function_call_arguments.delta",
                "item_id": format!("fc_fake{:06}", ids.n), "output_index": 0,
                "delta": tool_arguments(t)}),
            ));
            ev.push(next(
                json!({"type": "response.function_call_arguments.done",
                "item_id": format!("fc_fake{:06}", ids.n), "output_index": 0,
                "arguments": tool_arguments(t)}),
            ));
        }
        Reply::Fail(_) => {}
    }
    ev.push(next(
        json!({"type": "response.output_item.done", "output_index": 0, "item": done_item}),
    ));
    ev.push(next(json!({"type": "response.completed", "response": {
        "id": ids.response(), "object": "response", "created_at": 0, "status": "completed",
        "model": model, "output": [done_item], "usage": responses_usage(usage)}})));
    ev
}

fn chat_events(reply: &Reply, model: &str, ids: &Ids, usage: Usage) -> Vec<String> {
    let chunk = |choices: Value, usage: Value| {
        sse(
            None,
            &json!({"id": format!("chatcmpl-fake{:06}", ids.n), "object": "chat.completion.chunk",
                    "created": 0, "model": model, "choices": choices, "usage": usage}),
        )
    };
    let mut ev = vec![chunk(
        json!([{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": null}]),
        Value::Null,
    )];
    let finish = match reply {
        Reply::Text(text) => {
            for p in pieces(text) {
                ev.push(chunk(
                    json!([{"index": 0, "delta": {"content": p}, "finish_reason": null}]),
                    Value::Null,
                ));
            }
            "stop"
        }
        Reply::Tool(t) => {
            ev.push(chunk(
                json!([{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": ids.call(),
                    "type": "function", "function": {"name": t.name, "arguments": tool_arguments(t)}}]},
                    "finish_reason": null}]),
                Value::Null,
            ));
            "tool_calls"
        }
        Reply::Fail(_) => "stop",
    };
    ev.push(chunk(
        json!([{"index": 0, "delta": {}, "finish_reason": finish}]),
        Value::Null,
    ));
    ev.push(chunk(
        json!([]),
        json!({"prompt_tokens": usage.input, "completion_tokens": usage.output,
               "total_tokens": usage.input + usage.output}),
    ));
    ev.push("data: [DONE]\n\n".to_owned());
    ev
}

/// The whole-body answer to a request that did not ask to stream.
pub fn whole_body(api: Api, reply: &Reply, model: &str, ids: &Ids, usage: Usage) -> Value {
    match api {
        Api::Anthropic => {
            let (content, stop) = match reply {
                Reply::Tool(t) => (
                    json!([{"type": "tool_use", "id": ids.tool(), "name": t.name, "input": t.input}]),
                    "tool_use",
                ),
                Reply::Text(text) => (json!([{"type": "text", "text": text}]), "end_turn"),
                Reply::Fail(_) => (json!([]), "end_turn"),
            };
            json!({"id": ids.message(), "type": "message", "role": "assistant", "model": model,
                   "content": content, "stop_reason": stop, "stop_sequence": null,
                   "usage": {"input_tokens": usage.input, "output_tokens": usage.output}})
        }
        Api::Responses => json!({"id": ids.response(), "object": "response", "created_at": 0,
            "status": "completed", "model": model, "output": [responses_item(reply, ids)],
            "usage": responses_usage(usage)}),
        Api::Chat => {
            let message = match reply {
                Reply::Tool(t) => json!({"role": "assistant", "content": null, "tool_calls": [
                    {"id": ids.call(), "type": "function",
                     "function": {"name": t.name, "arguments": tool_arguments(t)}}]}),
                Reply::Text(text) => json!({"role": "assistant", "content": text}),
                Reply::Fail(_) => json!({"role": "assistant", "content": ""}),
            };
            let finish = if matches!(reply, Reply::Tool(_)) {
                "tool_calls"
            } else {
                "stop"
            };
            json!({"id": format!("chatcmpl-fake{:06}", ids.n), "object": "chat.completion",
                   "created": 0, "model": model,
                   "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                   "usage": {"prompt_tokens": usage.input, "completion_tokens": usage.output,
                             "total_tokens": usage.input + usage.output}})
        }
        Api::Gemini => gemini_response(
            gemini_parts(reply, ids),
            Some("STOP"),
            model,
            ids,
            Some(usage),
        ),
    }
}

/// The error body each API sends with a failing status.
pub fn error_body(api: Api, failure: &Failure) -> Value {
    match api {
        Api::Anthropic => {
            let kind = match failure.status {
                401 => "authentication_error",
                403 => "permission_error",
                429 => "rate_limit_error",
                529 => "overloaded_error",
                400 => "invalid_request_error",
                _ => "api_error",
            };
            json!({"type": "error", "error": {"type": kind, "message": failure.message}})
        }
        Api::Responses | Api::Chat => json!({"error": {"message": failure.message,
            "type": if failure.status == 401 { "invalid_request_error" } else { "server_error" },
            "code": null, "param": null}}),
        Api::Gemini => json!({"error": {"code": failure.status, "message": failure.message,
            "status": google_status(failure.status), "details": []}}),
    }
}

/// The `google.rpc.Code` name Google's APIs pair with an HTTP status.
pub fn google_status(status: u16) -> &'static str {
    match status {
        400 => "INVALID_ARGUMENT",
        401 => "UNAUTHENTICATED",
        403 => "PERMISSION_DENIED",
        404 => "NOT_FOUND",
        429 => "RESOURCE_EXHAUSTED",
        499 => "CANCELLED",
        503 => "UNAVAILABLE",
        504 => "DEADLINE_EXCEEDED",
        _ => "INTERNAL",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data_of(event: &str) -> Value {
        let line = event
            .lines()
            .find_map(|l| l.strip_prefix("data: "))
            .unwrap();
        serde_json::from_str(line).unwrap()
    }

    #[test]
    fn an_anthropic_text_reply_streams_its_text_and_usage_in_order() {
        let usage = Usage {
            input: 10,
            output: 3,
        };
        let ev = stream_events(
            Api::Anthropic,
            &Reply::Text("one two three".into()),
            "m",
            &Ids { n: 1 },
            usage,
        );
        let types: Vec<String> = ev
            .iter()
            .map(|e| data_of(e)["type"].as_str().unwrap().to_owned())
            .collect();
        assert_eq!(types.first().unwrap(), "message_start");
        assert_eq!(types.last().unwrap(), "message_stop");
        let text: String = ev
            .iter()
            .map(|e| data_of(e))
            .filter(|d| d["type"] == "content_block_delta")
            .map(|d| d["delta"]["text"].as_str().unwrap().to_owned())
            .collect();
        assert_eq!(text, "one two three");
        let delta = ev
            .iter()
            .map(|e| data_of(e))
            .find(|d| d["type"] == "message_delta")
            .unwrap();
        assert_eq!(delta["usage"]["output_tokens"], 3);
        assert_eq!(delta["delta"]["stop_reason"], "end_turn");
    }

    #[test]
    fn a_tool_call_ends_each_api_with_its_tool_stop_reason() {
        let t = Reply::Tool(ToolCall {
            name: "mcp__hangar__list_agents".into(),
            input: json!({"x": 1}),
        });
        let u = Usage {
            input: 1,
            output: 1,
        };
        let a = stream_events(Api::Anthropic, &t, "m", &Ids { n: 2 }, u);
        assert!(a.iter().any(|e| e.contains("\"stop_reason\":\"tool_use\"")));
        let r = stream_events(Api::Responses, &t, "m", &Ids { n: 2 }, u);
        let done = data_of(r.last().unwrap());
        assert_eq!(done["type"], "response.completed");
        assert_eq!(done["response"]["output"][0]["type"], "function_call");
        assert_eq!(done["response"]["output"][0]["arguments"], "{\"x\":1}");
        let c = stream_events(Api::Chat, &t, "m", &Ids { n: 2 }, u);
        assert!(
            c.iter()
                .any(|e| e.contains("\"finish_reason\":\"tool_calls\""))
        );
        assert_eq!(c.last().unwrap(), "data: [DONE]\n\n");
        let g = stream_events(Api::Gemini, &t, "m", &Ids { n: 2 }, u);
        let last = data_of(g.last().unwrap());
        let call = &last["candidates"][0]["content"]["parts"][0]["functionCall"];
        assert_eq!(call["name"], "mcp__hangar__list_agents");
        assert_eq!(call["args"]["x"], 1);
        assert_eq!(last["candidates"][0]["finishReason"], "STOP");
    }

    #[test]
    fn a_gemini_stream_is_crlf_framed_chunks_whose_last_carries_finish_and_usage() {
        let usage = Usage {
            input: 7,
            output: 4,
        };
        let ev = stream_events(
            Api::Gemini,
            &Reply::Text("one two three four five".into()),
            "gemini-2.5-pro",
            &Ids { n: 3 },
            usage,
        );
        assert!(ev.len() > 1, "several chunks: {ev:?}");
        // The framing @google/genai's responseLineRE splits on.
        assert!(
            ev.iter()
                .all(|e| e.starts_with("data: ") && e.ends_with("\r\n\r\n"))
        );
        let chunks: Vec<Value> = ev.iter().map(|e| data_of(e)).collect();
        let text: String = chunks
            .iter()
            .map(|c| {
                c["candidates"][0]["content"]["parts"][0]["text"]
                    .as_str()
                    .unwrap()
                    .to_owned()
            })
            .collect();
        assert_eq!(text, "one two three four five");
        assert!(
            chunks[..chunks.len() - 1]
                .iter()
                .all(|c| c["candidates"][0]["finishReason"].is_null()
                    && c["usageMetadata"].is_null())
        );
        let last = chunks.last().unwrap();
        assert_eq!(last["candidates"][0]["finishReason"], "STOP");
        assert_eq!(last["candidates"][0]["content"]["role"], "model");
        assert_eq!(last["usageMetadata"]["promptTokenCount"], 7);
        assert_eq!(last["usageMetadata"]["candidatesTokenCount"], 4);
        assert_eq!(last["usageMetadata"]["totalTokenCount"], 11);
        let whole = whole_body(
            Api::Gemini,
            &Reply::Text("hi".into()),
            "m",
            &Ids { n: 4 },
            usage,
        );
        assert_eq!(whole["candidates"][0]["content"]["parts"][0]["text"], "hi");
        assert_eq!(whole["usageMetadata"]["totalTokenCount"], 11);
    }

    #[test]
    fn gemini_names_its_model_in_the_path_and_errors_with_a_google_status() {
        assert_eq!(
            gemini_model("/v1beta/models/gemini-2.5-flash:streamGenerateContent"),
            Some("gemini-2.5-flash")
        );
        assert_eq!(gemini_model("/v1beta/models/:generateContent"), None);
        assert_eq!(gemini_model("/v1/chat/completions"), None);
        let e = error_body(
            Api::Gemini,
            &Failure {
                status: 401,
                message: "no".into(),
            },
        );
        assert_eq!(e["error"]["code"], 401);
        assert_eq!(e["error"]["status"], "UNAUTHENTICATED");
    }
}
