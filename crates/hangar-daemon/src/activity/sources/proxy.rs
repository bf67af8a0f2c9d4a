//! The capture proxy's view: a request to the provider's API in flight means
//! the agent is working; the stream's stop reason ends the turn.
//!
//! hangar-proxy reports the start and end of every recorded exchange to the
//! daemon's `ProxyObserver` (`crate::proxy_observer`), which turns them into
//! a `Signal` for `Hub::proxy_signal`; the stop reason itself is found by
//! hangar-proxy's `StopReasonScanner`.

use crate::activity::{Activity, Reading};

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
    /// When the newest request started (a turn start for delivery where
    /// nothing else of the agent can be seen: an engine's container).
    newest_start_ms: Option<u64>,
}

impl ProxyState {
    pub fn apply(&mut self, signal: &Signal, now_ms: u64) {
        match signal {
            Signal::RequestStarted => {
                if self.in_flight == 0 {
                    self.started_ms = now_ms;
                }
                self.in_flight += 1;
                self.newest_start_ms = Some(now_ms);
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

    /// Whether a request to the model started at or after `since_ms`.
    pub fn request_started_since(&self, since_ms: u64) -> bool {
        self.newest_start_ms.is_some_and(|at| at >= since_ms)
    }

    /// Whether any request of this process went through the proxy.
    pub fn seen_any(&self) -> bool {
        self.newest_start_ms.is_some()
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_newest_request_start_is_kept_for_delivery() {
        let mut s = ProxyState::default();
        assert!(!s.seen_any());
        s.apply(&Signal::RequestStarted, 10);
        s.apply(
            &Signal::RequestFinished {
                stop_reason: Some("end_turn".into()),
            },
            15,
        );
        assert!(s.seen_any());
        assert!(s.request_started_since(10));
        assert!(!s.request_started_since(11), "a request before the prompt");
        s.apply(&Signal::RequestStarted, 30);
        assert!(s.request_started_since(20));
    }

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
}
