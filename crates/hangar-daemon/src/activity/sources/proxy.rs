//! The capture proxy's view: a request to the provider's API in flight means
//! the agent is working; the stream's stop reason ends the turn.
//!
//! The proxy calls `Daemon::activity_signal` with a `Signal` at the start and
//! end of every recorded exchange, and feeds each response chunk to a
//! `StopReasonScanner` to learn how the stream stopped. Neither may ever slow
//! the relay down: the scanner keeps at most one partial line.

use std::sync::Arc;

use serde_json::Value;

use crate::activity::{Activity, Hub, Reading};

/// One recorded request in flight. Created when the request is sent; the
/// response body is fed to it; dropping it reports the end of the request
/// with whatever stop reason the body carried (none if it was cut off or
/// never came), so no path out of the relay can leave a request "in flight".
pub struct InFlight {
    hub: Arc<Hub>,
    session: String,
    scanner: StopReasonScanner,
}

impl InFlight {
    pub fn start(hub: &Arc<Hub>, session: &str) -> InFlight {
        hub.proxy_signal(session, Signal::RequestStarted);
        InFlight {
            hub: hub.clone(),
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
        self.hub
            .proxy_signal(&self.session, Signal::RequestFinished { stop_reason });
    }
}

/// What the proxy tells the activity tracker.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Signal {
    RequestStarted,
    /// `stop_reason` as the provider named it (`end_turn`, `tool_use`,
    /// `stop`, `tool_calls`...), or `None` when the response had none (an
    /// error, a cut-off, a request that is not a model turn).
    RequestFinished {
        stop_reason: Option<String>,
    },
}

/// What a stop reason says about the turn.
pub fn stop_activity(stop_reason: &str) -> Option<Activity> {
    match stop_reason {
        "end_turn" | "stop_sequence" | "max_tokens" | "refusal" | "stop" | "length"
        | "content_filter" => Some(Activity::Idle),
        // The agent runs a tool and calls the API again.
        "tool_use" | "tool_calls" | "function_call" | "pause_turn" => Some(Activity::Working),
        _ => None,
    }
}

/// One session's requests, as the proxy saw them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProxyState {
    in_flight: u32,
    /// When the oldest request still in flight started.
    started_ms: u64,
    /// What the last finished request said.
    last: Option<Reading>,
}

impl ProxyState {
    pub fn apply(&mut self, signal: &Signal, now_ms: u64) {
        match signal {
            Signal::RequestStarted => {
                if self.in_flight == 0 {
                    self.started_ms = now_ms;
                }
                self.in_flight += 1;
            }
            Signal::RequestFinished { stop_reason } => {
                self.in_flight = self.in_flight.saturating_sub(1);
                if let Some(activity) = stop_reason.as_deref().and_then(stop_activity) {
                    self.last = Some(Reading {
                        activity,
                        at_ms: now_ms,
                    });
                }
            }
        }
    }

    pub fn reading(&self) -> Option<Reading> {
        if self.in_flight > 0 {
            return Some(Reading {
                activity: Activity::Working,
                at_ms: self.started_ms,
            });
        }
        self.last
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
    fn a_request_in_flight_is_working_and_its_end_turn_is_idle() {
        let mut s = ProxyState::default();
        assert_eq!(s.reading(), None);
        s.apply(&Signal::RequestStarted, 10);
        s.apply(&Signal::RequestStarted, 20);
        assert_eq!(
            s.reading().unwrap(),
            Reading {
                activity: Activity::Working,
                at_ms: 10
            }
        );
        s.apply(
            &Signal::RequestFinished {
                stop_reason: Some("tool_use".into()),
            },
            30,
        );
        assert_eq!(s.reading().unwrap().activity, Activity::Working);
        s.apply(
            &Signal::RequestFinished {
                stop_reason: Some("end_turn".into()),
            },
            40,
        );
        assert_eq!(
            s.reading().unwrap(),
            Reading {
                activity: Activity::Idle,
                at_ms: 40
            }
        );
    }

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
