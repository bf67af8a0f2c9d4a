//! Usage limits as the providers send them: the window headers on every
//! allowed reply, and the refusal when a script rule says the account is at
//! its limit.
//!
//! Where each name comes from:
//! - Anthropic (Claude Code's API): `anthropic-ratelimit-unified-status`
//!   (`allowed`, `allowed_warning`, `rejected`), `-unified-reset` (epoch
//!   seconds), `-unified-{5h,7d}-{utilization,reset,status}` (utilization a
//!   fraction, can pass 1), `-unified-representative-claim` (`five_hour`,
//!   `seven_day`), and the 429 body `{"type":"error","error":{"type":
//!   "rate_limit_error","message":"This request would exceed your account's
//!   rate limit. Please try again later."}}` with `x-should-retry: false`:
//!   observed with Claude Code 2.1.197 against the real API
//!   (docs/src/cli-facts.md, "At a usage limit"); `retry-after` is in
//!   Anthropic's published "Rate limits" page (response headers table).
//! - OpenAI Codex: `x-codex-{primary,secondary}-{used-percent,window-minutes,
//!   reset-at}` are the names `parse_rate_limit_for_limit` reads in
//!   openai/codex `codex-rs/codex-api/src/rate_limits.rs` (used-percent
//!   0..100, reset-at epoch seconds); the 429 body `{"error":{"type":
//!   "usage_limit_reached","plan_type":..,"resets_at":..,
//!   "resets_in_seconds":..}}` is the shape codex-rs's `ErrorResponse`
//!   deserialises (`codex-rs/core/src/client.rs`, `api-client/src/error.rs`
//!   `UsageLimitReached { plan_type, resets_at }`).
//! - OpenCode (chat completions): no quota headers; only `retry-after`
//!   (docs/src/cli-facts.md), with an OpenAI-style error body.
//! - Gemini: no quota headers; a 429 `RESOURCE_EXHAUSTED` whose `details`
//!   carry a `google.rpc.QuotaFailure` (`violations[].quotaId`) and a
//!   `google.rpc.RetryInfo` (`retryDelay: "<n>s"`). That is what Gemini
//!   CLI 0.61.0's `classifyGoogleError` reads
//!   (`bundle/chunk-JDPZ4CE3.js` line 307283): a `quotaId` with
//!   `PerDay` is terminal ("You have exhausted your daily quota on this
//!   model."), else a `retryDelay` over 300 s is terminal and a shorter one
//!   is retried after that delay.

use std::time::{SystemTime, UNIX_EPOCH};

use serde::Deserialize;
use serde_json::{Value, json};

use crate::script::Api;

/// A script rule's refusal at a usage limit.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct LimitSpec {
    /// The reset as epoch seconds (wins over `resets_in_secs`).
    #[serde(default)]
    pub resets_at: Option<i64>,
    /// The reset this many seconds after the request (default 3600).
    #[serde(default)]
    pub resets_in_secs: Option<i64>,
    /// The limit opens at the rule's first refusal and lasts this many
    /// seconds: every refusal names that one reset, and the rule answers
    /// after it, as with `resets_at`. For a test whose request may reach
    /// the fake late under load (a `resets_at` could pass before it comes).
    #[serde(default)]
    pub lasts_secs: Option<i64>,
    /// Which window is exhausted: `five_hour` (default) or `seven_day`.
    #[serde(default)]
    pub claim: Option<String>,
}

/// What the allowed replies report about the account's windows (script's
/// top-level `windows`); defaults are a lightly used account.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Windows {
    /// Fraction of the 5-hour window used (0..1).
    #[serde(default = "default_five_hour")]
    pub five_hour: f64,
    /// Fraction of the weekly window used (0..1).
    #[serde(default = "default_seven_day")]
    pub seven_day: f64,
    /// Epoch seconds of the 5-hour window's reset (default: now + 5 h).
    #[serde(default)]
    pub five_hour_reset: Option<i64>,
    /// Epoch seconds of the weekly window's reset (default: now + 7 d).
    #[serde(default)]
    pub seven_day_reset: Option<i64>,
}

fn default_five_hour() -> f64 {
    0.1
}

fn default_seven_day() -> f64 {
    0.05
}

impl Default for Windows {
    fn default() -> Windows {
        Windows {
            five_hour: default_five_hour(),
            seven_day: default_seven_day(),
            five_hour_reset: None,
            seven_day_reset: None,
        }
    }
}

pub fn now_secs() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

const FIVE_HOURS: i64 = 5 * 3600;
const SEVEN_DAYS: i64 = 7 * 24 * 3600;

/// The headers every allowed reply of `api` carries.
pub fn window_headers(api: Api, w: &Windows, now: i64) -> Vec<(&'static str, String)> {
    let r5 = w.five_hour_reset.unwrap_or(now + FIVE_HOURS);
    let r7 = w.seven_day_reset.unwrap_or(now + SEVEN_DAYS);
    match api {
        Api::Anthropic => {
            let status = |u: f64| {
                if u >= 0.9 {
                    "allowed_warning"
                } else {
                    "allowed"
                }
            };
            let claim = if w.seven_day > w.five_hour {
                "seven_day"
            } else {
                "five_hour"
            };
            vec![
                (
                    "anthropic-ratelimit-unified-status",
                    status(w.five_hour.max(w.seven_day)).to_owned(),
                ),
                ("anthropic-ratelimit-unified-reset", r5.to_string()),
                (
                    "anthropic-ratelimit-unified-representative-claim",
                    claim.to_owned(),
                ),
                (
                    "anthropic-ratelimit-unified-5h-status",
                    status(w.five_hour).to_owned(),
                ),
                (
                    "anthropic-ratelimit-unified-5h-utilization",
                    w.five_hour.to_string(),
                ),
                ("anthropic-ratelimit-unified-5h-reset", r5.to_string()),
                (
                    "anthropic-ratelimit-unified-7d-status",
                    status(w.seven_day).to_owned(),
                ),
                (
                    "anthropic-ratelimit-unified-7d-utilization",
                    w.seven_day.to_string(),
                ),
                ("anthropic-ratelimit-unified-7d-reset", r7.to_string()),
            ]
        }
        Api::Responses => vec![
            (
                "x-codex-primary-used-percent",
                (w.five_hour * 100.0).to_string(),
            ),
            (
                "x-codex-primary-window-minutes",
                (FIVE_HOURS / 60).to_string(),
            ),
            ("x-codex-primary-reset-at", r5.to_string()),
            (
                "x-codex-secondary-used-percent",
                (w.seven_day * 100.0).to_string(),
            ),
            (
                "x-codex-secondary-window-minutes",
                (SEVEN_DAYS / 60).to_string(),
            ),
            ("x-codex-secondary-reset-at", r7.to_string()),
        ],
        // OpenCode reads no quota headers; Gemini's API sends none.
        Api::Chat | Api::Gemini => Vec::new(),
    }
}

/// The refusal: status, headers and body, and the reset it names (epoch s).
pub struct Refusal {
    pub status: u16,
    pub headers: Vec<(&'static str, String)>,
    pub body: Value,
    pub resets_at: i64,
}

pub fn refusal(api: Api, spec: &LimitSpec, w: &Windows, now: i64) -> Refusal {
    let resets_at = spec
        .resets_at
        .unwrap_or(now + spec.resets_in_secs.unwrap_or(3600));
    let resets_in = (resets_at - now).max(0);
    let weekly = spec.claim.as_deref() == Some("seven_day");
    match api {
        Api::Anthropic => {
            let (r5, r7) = if weekly {
                (w.five_hour_reset.unwrap_or(now + FIVE_HOURS), resets_at)
            } else {
                (resets_at, w.seven_day_reset.unwrap_or(now + SEVEN_DAYS))
            };
            let (s5, s7, u5, u7) = if weekly {
                ("allowed", "rejected", w.five_hour, 1.0)
            } else {
                ("rejected", "allowed", 1.0, w.seven_day)
            };
            Refusal {
                status: 429,
                headers: vec![
                    ("anthropic-ratelimit-unified-status", "rejected".to_owned()),
                    ("anthropic-ratelimit-unified-reset", resets_at.to_string()),
                    (
                        "anthropic-ratelimit-unified-representative-claim",
                        if weekly { "seven_day" } else { "five_hour" }.to_owned(),
                    ),
                    ("anthropic-ratelimit-unified-5h-status", s5.to_owned()),
                    ("anthropic-ratelimit-unified-5h-utilization", u5.to_string()),
                    ("anthropic-ratelimit-unified-5h-reset", r5.to_string()),
                    ("anthropic-ratelimit-unified-7d-status", s7.to_owned()),
                    ("anthropic-ratelimit-unified-7d-utilization", u7.to_string()),
                    ("anthropic-ratelimit-unified-7d-reset", r7.to_string()),
                    ("retry-after", resets_in.to_string()),
                    ("x-should-retry", "false".to_owned()),
                ],
                body: json!({"type": "error", "error": {"type": "rate_limit_error",
                    "message": "This request would exceed your account's rate limit. Please try again later."}}),
                resets_at,
            }
        }
        Api::Responses => {
            let (p_used, s_used) = if weekly {
                (w.five_hour * 100.0, 100.0)
            } else {
                (100.0, w.seven_day * 100.0)
            };
            let (p_reset, s_reset) = if weekly {
                (w.five_hour_reset.unwrap_or(now + FIVE_HOURS), resets_at)
            } else {
                (resets_at, w.seven_day_reset.unwrap_or(now + SEVEN_DAYS))
            };
            Refusal {
                status: 429,
                headers: vec![
                    ("x-codex-primary-used-percent", p_used.to_string()),
                    (
                        "x-codex-primary-window-minutes",
                        (FIVE_HOURS / 60).to_string(),
                    ),
                    ("x-codex-primary-reset-at", p_reset.to_string()),
                    ("x-codex-secondary-used-percent", s_used.to_string()),
                    (
                        "x-codex-secondary-window-minutes",
                        (SEVEN_DAYS / 60).to_string(),
                    ),
                    ("x-codex-secondary-reset-at", s_reset.to_string()),
                ],
                body: json!({"error": {"type": "usage_limit_reached",
                    "message": "The usage limit has been reached", "plan_type": "plus",
                    "resets_at": resets_at, "resets_in_seconds": resets_in}}),
                resets_at,
            }
        }
        Api::Gemini => {
            let quota_id = if weekly {
                "GenerateRequestsPerDayPerProjectPerModel"
            } else {
                "GenerateRequestsPerMinutePerProjectPerModel"
            };
            Refusal {
                status: 429,
                headers: Vec::new(),
                body: json!({"error": {"code": 429, "status": "RESOURCE_EXHAUSTED",
                    "message": format!("You exceeded your current quota, please check your plan and billing details. Please retry in {resets_in}s."),
                    "details": [
                        {"@type": "type.googleapis.com/google.rpc.QuotaFailure",
                         "violations": [{"quotaMetric": "generativelanguage.googleapis.com/generate_content_requests",
                                         "quotaId": quota_id}]},
                        {"@type": "type.googleapis.com/google.rpc.RetryInfo",
                         "retryDelay": format!("{resets_in}s")}]}}),
                resets_at,
            }
        }
        Api::Chat => Refusal {
            status: 429,
            headers: vec![("retry-after", resets_in.to_string())],
            body: json!({"error": {"message": "Rate limit reached for requests",
                "type": "rate_limit_exceeded", "code": "rate_limit_exceeded", "param": null}}),
            resets_at,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header<'a>(h: &'a [(&str, String)], name: &str) -> Option<&'a str> {
        h.iter().find(|(k, _)| *k == name).map(|(_, v)| v.as_str())
    }

    #[test]
    fn an_anthropic_refusal_is_a_429_rate_limit_error_with_rejected_unified_headers() {
        let r = refusal(
            Api::Anthropic,
            &LimitSpec {
                resets_in_secs: Some(5),
                ..Default::default()
            },
            &Windows::default(),
            1000,
        );
        assert_eq!(r.status, 429);
        assert_eq!(r.resets_at, 1005);
        assert_eq!(r.body["error"]["type"], "rate_limit_error");
        assert_eq!(
            header(&r.headers, "anthropic-ratelimit-unified-status"),
            Some("rejected")
        );
        assert_eq!(
            header(&r.headers, "anthropic-ratelimit-unified-5h-reset"),
            Some("1005")
        );
        assert_eq!(header(&r.headers, "retry-after"), Some("5"));
    }

    #[test]
    fn a_codex_refusal_carries_usage_limit_reached_and_the_reset_in_body_and_headers() {
        let r = refusal(
            Api::Responses,
            &LimitSpec {
                resets_at: Some(2000),
                ..Default::default()
            },
            &Windows::default(),
            1000,
        );
        assert_eq!(r.body["error"]["type"], "usage_limit_reached");
        assert_eq!(r.body["error"]["resets_at"], 2000);
        assert_eq!(r.body["error"]["resets_in_seconds"], 1000);
        assert_eq!(header(&r.headers, "x-codex-primary-reset-at"), Some("2000"));
        assert_eq!(
            header(&r.headers, "x-codex-primary-used-percent"),
            Some("100")
        );
    }

    #[test]
    fn allowed_replies_carry_window_headers_except_for_chat() {
        let w = Windows::default();
        let a = window_headers(Api::Anthropic, &w, 0);
        assert_eq!(
            header(&a, "anthropic-ratelimit-unified-status"),
            Some("allowed")
        );
        assert_eq!(
            header(&a, "anthropic-ratelimit-unified-5h-utilization"),
            Some("0.1")
        );
        let c = window_headers(Api::Responses, &w, 0);
        assert_eq!(header(&c, "x-codex-primary-window-minutes"), Some("300"));
        assert!(window_headers(Api::Chat, &w, 0).is_empty());
        assert!(window_headers(Api::Gemini, &w, 0).is_empty());
    }

    #[test]
    fn a_gemini_refusal_is_resource_exhausted_with_quota_failure_and_retry_info() {
        let spec = LimitSpec {
            resets_in_secs: Some(30),
            ..Default::default()
        };
        let r = refusal(Api::Gemini, &spec, &Windows::default(), 1000);
        assert_eq!(r.status, 429);
        assert_eq!(r.resets_at, 1030);
        assert_eq!(r.body["error"]["status"], "RESOURCE_EXHAUSTED");
        let details = r.body["error"]["details"].as_array().unwrap();
        let retry = details
            .iter()
            .find(|d| d["@type"] == "type.googleapis.com/google.rpc.RetryInfo")
            .unwrap();
        assert_eq!(retry["retryDelay"], "30s");
        let quota = details
            .iter()
            .find(|d| d["@type"] == "type.googleapis.com/google.rpc.QuotaFailure")
            .unwrap();
        // A short window is per-minute (Gemini CLI retries after the delay) ...
        assert!(
            !quota["violations"][0]["quotaId"]
                .as_str()
                .unwrap()
                .contains("PerDay")
        );
        // ... the weekly claim is a daily quota (terminal in Gemini CLI).
        let weekly = refusal(
            Api::Gemini,
            &LimitSpec {
                claim: Some("seven_day".into()),
                ..spec
            },
            &Windows::default(),
            1000,
        );
        assert!(
            weekly.body["error"]["details"][0]["violations"][0]["quotaId"]
                .as_str()
                .unwrap()
                .contains("PerDay")
        );
    }
}
