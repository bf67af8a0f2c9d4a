//! What captured traffic says about a session: token usage and errors per
//! turn, and the provider session id a request header carries.
//!
//! Pure: it reads bytes and headers and returns numbers. It understands
//! Anthropic Messages streams (`message_start` / `message_delta` usage),
//! OpenAI Responses streams (`response.completed`), OpenAI chat completion
//! chunks (`usage.prompt_tokens`), and the same shapes as one JSON body. A
//! stream it does not understand counts a request with no tokens; it must
//! never fail the exchange it is watching.

use serde::Serialize;
use serde_json::Value;

/// Token counts and errors, for one turn or summed over a session.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub requests: u64,
    pub errors: u64,
}

impl Usage {
    pub fn add(&mut self, other: &Usage) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.requests += other.requests;
        self.errors += other.errors;
    }
}

/// Headers that carry the provider's conversation id, by provider: Claude
/// Code's session header and Codex's `session_id` / `conversation_id`.
pub const SESSION_ID_HEADERS: &[&str] = &[
    "x-claude-code-session-id",
    "session_id",
    "session-id",
    "conversation_id",
];

/// The provider session id a request's headers carry, if any.
pub fn provider_session_id<'a>(
    headers: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> Option<String> {
    let mut found: Option<(usize, String)> = None;
    for (name, value) in headers {
        let Some(rank) = SESSION_ID_HEADERS
            .iter()
            .position(|h| h.eq_ignore_ascii_case(name))
        else {
            continue;
        };
        let value = value.trim();
        let plausible = !value.is_empty()
            && value.len() <= 128
            && value
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
        if plausible && found.as_ref().is_none_or(|(r, _)| rank < *r) {
            found = Some((rank, value.to_owned()));
        }
    }
    found.map(|(_, v)| v)
}

/// What the usage ledger needs beyond `Usage`: the request's own id and
/// model, its tokens by kind (Anthropic's input without its cache reads and
/// writes, which `Usage::input_tokens` includes), and the body of a refusal.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MeterDetail {
    /// Anthropic `message.id` (`msg_...`) or OpenAI response / completion
    /// id: the key that lets a transcript's sighting of the same request
    /// count once.
    pub message_id: Option<String>,
    pub model: Option<String>,
    /// Input tokens not read from or written to a cache.
    pub input_uncached: u64,
    pub cache_read: u64,
    pub cache_write: u64,
    /// A non-streamed body of an error status (bounded), for telling a
    /// usage limit from any other refusal.
    pub error_body: Option<Vec<u8>>,
}

/// Watches one response as it streams and totals its usage. Feed it every
/// chunk in order; lines split across chunks are handled.
#[derive(Debug, Default)]
pub struct TurnMeter {
    usage: Usage,
    detail: MeterDetail,
    status: u16,
    /// An incomplete last line carried to the next chunk (bounded).
    partial: Vec<u8>,
    /// A non-SSE body, kept (bounded) to be read as one JSON document.
    body: Vec<u8>,
    sse: Option<bool>,
    event: String,
    overflowed: bool,
}

/// Lines and bodies longer than this are not parsed for usage (they are
/// still captured and forwarded).
const MAX_PARSE: usize = 1 << 20;

impl TurnMeter {
    /// Start metering a response with this status and content type.
    pub fn new(status: u16, content_type: Option<&str>) -> TurnMeter {
        let mut m = TurnMeter {
            sse: content_type.map(|c| c.contains("text/event-stream")),
            status,
            ..Default::default()
        };
        m.usage.requests = 1;
        if status >= 400 {
            m.usage.errors = 1;
        }
        m
    }

    pub fn feed(&mut self, chunk: &[u8]) {
        if self.sse == Some(true) {
            for &b in chunk {
                if b == b'\n' {
                    let line = std::mem::take(&mut self.partial);
                    self.line(&line);
                } else if self.partial.len() < MAX_PARSE {
                    self.partial.push(b);
                }
            }
        } else if self.body.len() + chunk.len() <= MAX_PARSE {
            self.body.extend_from_slice(chunk);
        } else {
            self.overflowed = true;
        }
    }

    /// The turn's usage once the response has ended (or failed).
    pub fn finish(self, failed: bool) -> Usage {
        self.finish_detailed(failed).0
    }

    /// The turn's usage and the ledger's detail of it.
    pub fn finish_detailed(mut self, failed: bool) -> (Usage, MeterDetail) {
        if self.status >= 400 && self.sse != Some(true) && !self.overflowed {
            self.detail.error_body = Some(self.body.clone());
        }
        if self.sse == Some(true) {
            let line = std::mem::take(&mut self.partial);
            self.line(&line);
        } else if !self.overflowed
            && let Ok(doc) = serde_json::from_slice::<Value>(&self.body)
        {
            self.document(&doc, true);
        }
        if failed && self.usage.errors == 0 {
            self.usage.errors = 1;
        }
        (self.usage, self.detail)
    }

    fn line(&mut self, raw: &[u8]) {
        let line = String::from_utf8_lossy(raw);
        let line = line.trim_end_matches('\r');
        if let Some(ev) = line.strip_prefix("event:") {
            self.event = ev.trim().to_owned();
            if self.event == "error" {
                self.usage.errors = 1;
            }
        } else if let Some(data) = line.strip_prefix("data:") {
            let data = data.trim();
            if let Ok(doc) = serde_json::from_str::<Value>(data) {
                self.document(&doc, false);
            }
        } else if line.is_empty() {
            self.event.clear();
        }
    }

    /// Read usage out of one JSON document (an SSE event's data, or a whole
    /// body). `whole`: the document is a complete response.
    fn document(&mut self, doc: &Value, whole: bool) {
        let kind = doc.get("type").and_then(Value::as_str).unwrap_or("");
        if kind == "error" || kind == "response.failed" || (whole && doc.get("error").is_some()) {
            self.usage.errors = 1;
        }
        let n = |v: Option<&Value>| v.and_then(Value::as_u64);
        let s = |v: Option<&Value>| v.and_then(Value::as_str).map(str::to_owned);
        // The request's own id and model: Anthropic's `message`, OpenAI's
        // `response`, or the document itself (a whole body, a chat chunk).
        let holder = doc
            .get("message")
            .or_else(|| doc.get("response"))
            .filter(|h| h.is_object())
            .unwrap_or(doc);
        if self.detail.message_id.is_none() {
            self.detail.message_id = s(holder.get("id"));
        }
        if self.detail.model.is_none() {
            self.detail.model = s(holder.get("model"));
        }
        match kind {
            // Anthropic: input counted at the start, output grows in deltas
            // (each delta carries the running total).
            "message_start" => {
                if let Some(u) = doc.pointer("/message/usage") {
                    self.anthropic_detail(u);
                    self.usage.input_tokens = input_of(u);
                    if let Some(o) = n(u.get("output_tokens")) {
                        self.usage.output_tokens = o;
                    }
                }
            }
            "message_delta" => {
                if let Some(o) = n(doc.pointer("/usage/output_tokens")) {
                    self.usage.output_tokens = o;
                }
                if let Some(u) = doc.get("usage")
                    && u.get("input_tokens").is_some()
                {
                    self.anthropic_detail(u);
                    self.usage.input_tokens = input_of(u);
                }
            }
            // OpenAI Responses API.
            "response.completed" | "response.done" | "response.incomplete" => {
                if let Some(u) = doc.pointer("/response/usage") {
                    self.openai(u);
                }
            }
            _ => {
                // A whole Anthropic message, a whole Responses object, or a
                // chat completion (chunk) with usage.
                if let Some(u) = doc.get("usage").filter(|u| u.is_object()) {
                    self.openai(u);
                }
            }
        }
    }

    fn anthropic_detail(&mut self, u: &Value) {
        let n = |k: &str| u.get(k).and_then(Value::as_u64).unwrap_or(0);
        self.detail.input_uncached = n("input_tokens");
        self.detail.cache_read = n("cache_read_input_tokens");
        self.detail.cache_write = n("cache_creation_input_tokens");
    }

    fn openai(&mut self, u: &Value) {
        let n = |k: &str| u.get(k).and_then(Value::as_u64);
        // A whole Anthropic message has cache fields; OpenAI reports its
        // cached part inside the input (`input_tokens_details.cached_tokens`,
        // `prompt_tokens_details.cached_tokens`).
        if u.get("cache_read_input_tokens").is_some()
            || u.get("cache_creation_input_tokens").is_some()
        {
            self.anthropic_detail(u);
        } else if let Some(i) = n("input_tokens").or_else(|| n("prompt_tokens")) {
            let cached = u
                .pointer("/input_tokens_details/cached_tokens")
                .or_else(|| u.pointer("/prompt_tokens_details/cached_tokens"))
                .and_then(Value::as_u64)
                .unwrap_or(0)
                .min(i);
            self.detail.input_uncached = i - cached;
            self.detail.cache_read = cached;
            self.detail.cache_write = 0;
        }
        if let Some(i) = n("input_tokens").or_else(|| n("prompt_tokens")) {
            self.usage.input_tokens = i
                + n("cache_read_input_tokens").unwrap_or(0)
                + n("cache_creation_input_tokens").unwrap_or(0);
        }
        if let Some(o) = n("output_tokens").or_else(|| n("completion_tokens")) {
            self.usage.output_tokens = o;
        }
    }
}

/// Anthropic input tokens, including cache reads and writes.
fn input_of(u: &Value) -> u64 {
    let n = |k: &str| u.get(k).and_then(Value::as_u64).unwrap_or(0);
    n("input_tokens") + n("cache_read_input_tokens") + n("cache_creation_input_tokens")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meter(ct: &str, status: u16, chunks: &[&str]) -> Usage {
        let mut m = TurnMeter::new(status, Some(ct));
        for c in chunks {
            m.feed(c.as_bytes());
        }
        m.finish(false)
    }

    #[test]
    fn an_anthropic_stream_yields_input_and_final_output_tokens() {
        let u = meter(
            "text/event-stream",
            200,
            &[
                "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":10,\"cache_read_input_tokens\":5,\"output_tokens\":1}}}\n\n",
                "event: content_block_delta\ndata: {\"type\":\"content_block_delta\"}\n\nevent: message_delta\ndata: {\"type\":\"message_de",
                "lta\",\"usage\":{\"output_tokens\":42}}\n\n",
            ],
        );
        assert_eq!(
            u,
            Usage {
                input_tokens: 15,
                output_tokens: 42,
                requests: 1,
                errors: 0
            }
        );
    }

    #[test]
    fn an_openai_responses_stream_yields_usage_from_the_completed_event() {
        let u = meter(
            "text/event-stream; charset=utf-8",
            200,
            &[
                "event: response.created\ndata: {\"type\":\"response.created\"}\n\n",
                "event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"usage\":{\"input_tokens\":7,\"output_tokens\":3}}}\n\n",
            ],
        );
        assert_eq!((u.input_tokens, u.output_tokens, u.errors), (7, 3, 0));
    }

    #[test]
    fn a_chat_completion_body_yields_prompt_and_completion_tokens() {
        let u = meter(
            "application/json",
            200,
            &["{\"usage\":{\"prompt_tokens\":4,\"completion_tokens\":2}}"],
        );
        assert_eq!((u.input_tokens, u.output_tokens), (4, 2));
    }

    #[test]
    fn error_statuses_and_error_events_count_as_errors() {
        assert_eq!(
            meter("application/json", 429, &["{\"error\":{}}"]).errors,
            1
        );
        assert_eq!(
            meter(
                "text/event-stream",
                200,
                &["event: error\ndata: {\"type\":\"error\"}\n\n"]
            )
            .errors,
            1
        );
        let m = TurnMeter::new(200, Some("text/event-stream"));
        assert_eq!(m.finish(true).errors, 1);
    }

    #[test]
    fn an_unknown_body_is_one_request_and_no_tokens() {
        let u = meter("text/plain", 200, &["hello"]);
        assert_eq!(
            u,
            Usage {
                requests: 1,
                ..Default::default()
            }
        );
    }

    #[test]
    fn the_detail_keeps_the_message_id_model_and_cache_tokens_apart() {
        let mut m = TurnMeter::new(200, Some("text/event-stream"));
        m.feed(b"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"model\":\"claude-x\",\"usage\":{\"input_tokens\":10,\"cache_read_input_tokens\":5,\"cache_creation_input_tokens\":2,\"output_tokens\":1}}}\n\n");
        m.feed(b"event: message_delta\ndata: {\"type\":\"message_delta\",\"usage\":{\"output_tokens\":9}}\n\n");
        let (u, d) = m.finish_detailed(false);
        assert_eq!((u.input_tokens, u.output_tokens), (17, 9));
        assert_eq!(d.message_id.as_deref(), Some("msg_1"));
        assert_eq!(d.model.as_deref(), Some("claude-x"));
        assert_eq!((d.input_uncached, d.cache_read, d.cache_write), (10, 5, 2));
        assert_eq!(d.error_body, None);

        let mut m = TurnMeter::new(429, Some("application/json"));
        m.feed(b"{\"error\":{\"type\":\"usage_limit_reached\"}}");
        let (_, d) = m.finish_detailed(false);
        assert!(d.error_body.unwrap().starts_with(b"{\"error\""));

        let mut m = TurnMeter::new(200, Some("text/event-stream"));
        m.feed(b"data: {\"type\":\"response.completed\",\"response\":{\"id\":\"resp_1\",\"model\":\"gpt-5\",\"usage\":{\"input_tokens\":7,\"input_tokens_details\":{\"cached_tokens\":3},\"output_tokens\":2}}}\n\n");
        let (_, d) = m.finish_detailed(false);
        assert_eq!(d.message_id.as_deref(), Some("resp_1"));
        assert_eq!((d.input_uncached, d.cache_read), (4, 3));
    }

    #[test]
    fn the_provider_session_id_comes_from_a_known_header() {
        let h = [
            ("content-type", "application/json"),
            ("X-Claude-Code-Session-Id", "abc-123"),
        ];
        assert_eq!(provider_session_id(h), Some("abc-123".to_owned()));
        assert_eq!(
            provider_session_id([("session_id", "x y")]),
            None,
            "implausible values are ignored"
        );
        assert_eq!(provider_session_id([("accept", "*/*")]), None);
    }
}
