//! One recorded request in flight, and how its response said the turn
//! stopped.
//!
//! A request in flight means the agent is working; the stream's stop reason
//! ends the turn. `InFlight` reports both to the `ProxyObserver` and feeds
//! each response chunk to a `StopReasonScanner`. Neither may ever slow the
//! relay down: the scanner keeps at most one partial line.

use std::sync::Arc;

use serde_json::Value;

use crate::observer::ProxyObserver;

/// One recorded request in flight. Created when the request is sent; the
/// response body is fed to it; dropping it reports the end of the request
/// with whatever stop reason the body carried (none if it was cut off or
/// never came), so no path out of the relay can leave a request "in flight".
pub struct InFlight {
    observer: Arc<dyn ProxyObserver>,
    session: String,
    scanner: StopReasonScanner,
}

impl InFlight {
    pub fn start(
        observer: &Arc<dyn ProxyObserver>,
        session: &str,
        prompts: Vec<String>,
    ) -> InFlight {
        observer.exchange_started(session, prompts);
        InFlight {
            observer: observer.clone(),
            session: session.to_owned(),
            scanner: StopReasonScanner::default(),
        }
    }

    pub fn feed(&mut self, chunk: &[u8]) {
        self.scanner.feed(chunk);
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        let stop_reason = std::mem::take(&mut self.scanner).finish();
        self.observer.exchange_finished(&self.session, stop_reason);
    }
}

/// Most bytes of one unfinished line kept between chunks.
const MAX_LINE: usize = 256 * 1024;

/// Finds the stop reason in a response body as it streams: Anthropic's
/// `message_delta`, OpenAI's `finish_reason` and `response.completed`, or a
/// whole JSON body.
#[derive(Debug, Default)]
pub struct StopReasonScanner {
    partial: Vec<u8>,
    whole: Vec<u8>,
    stop_reason: Option<String>,
}

impl StopReasonScanner {
    pub fn feed(&mut self, chunk: &[u8]) {
        if self.whole.len() + chunk.len() <= MAX_LINE {
            self.whole.extend_from_slice(chunk);
        } else {
            self.whole.clear();
        }
        self.partial.extend_from_slice(chunk);
        while let Some(i) = self.partial.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = self.partial.drain(..=i).collect();
            self.line(&line);
        }
        if self.partial.len() > MAX_LINE {
            self.partial.clear();
        }
    }

    fn line(&mut self, raw: &[u8]) {
        let text = String::from_utf8_lossy(raw);
        let Some(data) = text.trim().strip_prefix("data:") else {
            return;
        };
        if let Ok(v) = serde_json::from_str::<Value>(data.trim()) {
            self.document(&v);
        }
    }

    fn document(&mut self, v: &Value) {
        let found = v
            .pointer("/delta/stop_reason")
            .or_else(|| v.get("stop_reason"))
            .or_else(|| v.pointer("/message/stop_reason"))
            .or_else(|| v.pointer("/choices/0/finish_reason"))
            .and_then(Value::as_str)
            .map(str::to_owned);
        if found.is_some() {
            self.stop_reason = found;
            return;
        }
        let completed = v.get("type").and_then(Value::as_str) == Some("response.completed");
        let response = if completed { v.get("response") } else { None };
        let response = response
            .or_else(|| (v.get("object").and_then(Value::as_str) == Some("response")).then_some(v));
        if let Some(r) = response {
            let calls_tool = r
                .get("output")
                .and_then(Value::as_array)
                .is_some_and(|items| {
                    items
                        .iter()
                        .any(|i| i.get("type").and_then(Value::as_str) == Some("function_call"))
                });
            self.stop_reason = Some(if calls_tool { "tool_use" } else { "end_turn" }.to_owned());
        }
    }

    /// The stop reason, once the body has ended.
    pub fn finish(mut self) -> Option<String> {
        if !self.partial.is_empty() {
            let rest = std::mem::take(&mut self.partial);
            self.line(&rest);
        }
        if self.stop_reason.is_none()
            && let Ok(v) = serde_json::from_slice::<Value>(&self.whole)
        {
            self.document(&v);
        }
        self.stop_reason
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_anthropic_stream_stop_reason_is_found_across_chunks() {
        let mut sc = StopReasonScanner::default();
        sc.feed(b"event: message_start\ndata: {\"type\":\"message_start\"}\n\nevent: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_re");
        sc.feed(b"ason\":\"end_turn\"}}\n\n");
        assert_eq!(sc.finish().as_deref(), Some("end_turn"));
    }

    #[test]
    fn openai_streams_and_whole_bodies_give_their_stop_reasons() {
        let mut sc = StopReasonScanner::default();
        sc.feed(b"data: {\"type\":\"response.completed\",\"response\":{\"output\":[{\"type\":\"function_call\"}]}}\n");
        assert_eq!(sc.finish().as_deref(), Some("tool_use"));
        let mut sc = StopReasonScanner::default();
        sc.feed(b"{\"choices\":[{\"finish_reason\":\"stop\"}]}");
        assert_eq!(sc.finish().as_deref(), Some("stop"));
        let sc = StopReasonScanner::default();
        assert_eq!(sc.finish(), None);
    }
}
