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
    /// `prompts`: the fingerprints of the texts in the request's trailing
    /// user messages (`hangar_proxy::prompt_texts`).
    RequestStarted { prompts: Vec<String> },
    /// `stop_reason` as the provider named it (`end_turn`, `tool_use`,
    /// `stop`, `tool_calls`...), or `None` when the response had none (an
    /// error, a cut-off, a request that is not a model turn).
    RequestFinished { stop_reason: Option<String> },
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
    /// When the newest request started.
    newest_start_ms: Option<u64>,
    /// The newest requests' start times and prompt fingerprints, newest
    /// last: a turn start for delivery where nothing else of the agent can
    /// be seen (an engine's container).
    recent: std::collections::VecDeque<(u64, Vec<String>)>,
}

/// How many requests' prompts are kept: the turn's own, and the side
/// requests a CLI sends around it (a title, a quota check) before delivery
/// looks again.
const RECENT_REQUESTS: usize = 4;

impl ProxyState {
    pub fn apply(&mut self, signal: &Signal, now_ms: u64) {
        match signal {
            Signal::RequestStarted { prompts } => {
                if self.in_flight == 0 {
                    self.started_ms = now_ms;
                }
                self.in_flight += 1;
                self.newest_start_ms = Some(now_ms);
                if self.recent.len() == RECENT_REQUESTS {
                    self.recent.pop_front();
                }
                self.recent.push_back((now_ms, prompts.clone()));
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

    /// Whether a request to the model that started at or after `since_ms`
    /// carries the prompt `typed` (`hangar_core::prompt_match`).
    pub fn prompt_carried_since(&self, since_ms: u64, typed: &str) -> bool {
        self.recent.iter().any(|(at, prompts)| {
            *at >= since_ms && hangar_core::prompt_match::carries(prompts, typed)
        })
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

    fn started(texts: &[&str]) -> Signal {
        Signal::RequestStarted {
            prompts: texts
                .iter()
                .map(|t| hangar_core::prompt_match::fingerprint(t))
                .collect(),
        }
    }

    #[test]
    fn only_a_request_since_the_prompt_that_carries_it_is_its_turn() {
        let mut s = ProxyState::default();
        assert!(!s.seen_any());
        s.apply(&started(&["run it"]), 10);
        s.apply(
            &Signal::RequestFinished {
                stop_reason: Some("end_turn".into()),
            },
            15,
        );
        assert!(s.seen_any());
        assert!(s.prompt_carried_since(10, "run it"));
        assert!(
            !s.prompt_carried_since(11, "run it"),
            "a request before the prompt"
        );
        // What a CLI sends on its own after a wake is no turn (CI, issue 44).
        s.apply(&started(&["quota"]), 30);
        assert!(!s.prompt_carried_since(20, "after the wake"));
        s.apply(&started(&["after the wake"]), 40);
        for n in 0..RECENT_REQUESTS - 1 {
            s.apply(&started(&["title"]), 50 + n as u64);
        }
        assert!(
            s.prompt_carried_since(20, "after the wake"),
            "side requests right after the turn's do not push it out"
        );
    }

    #[test]
    fn a_request_in_flight_is_working_and_its_end_turn_is_idle() {
        let mut s = ProxyState::default();
        assert_eq!(s.reading(), None);
        s.apply(&started(&[]), 10);
        s.apply(&started(&[]), 20);
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
