//! Usage and limits from a Codex rollout (issue 29), for the requests the
//! recording proxy did not see.
//!
//! What Codex 0.171.0 writes (observed running it against the fake model
//! API, and in openai/codex `codex-rs/protocol/src/protocol.rs`
//! `TokenCountEvent`, `TokenUsage`, `RateLimitSnapshot`, `RateLimitWindow`):
//!
//! - `{"type":"token_usage_record","payload":{"response_id":"resp_...",
//!   "usage":{input_tokens, cached_input_tokens, cache_write_input_tokens,
//!   output_tokens, ...}}}` after each response: the request under the
//!   provider's id, the key the proxy records it under too.
//! - `{"type":"event_msg","payload":{"type":"token_count","info":
//!   {"total_token_usage":..,"last_token_usage":..},"rate_limits":{"primary":
//!   {"used_percent","window_minutes","resets_at"},"secondary":..}}}`: the
//!   last request's tokens (older Codex writes no `token_usage_record`; its
//!   request is keyed by the line's time and the running total) and the
//!   account's windows. Older Codex gave `resets_in_seconds` instead of
//!   `resets_at` (its protocol's TypeScript binding: "Seconds until the
//!   window resets"), counted from the line's time. `info` is null on the
//!   `token_count` a refusal writes.
//! - At a usage limit: a `token_count` whose exhausted window says
//!   `used_percent: 100` and its `resets_at`, then `task_complete` (or an
//!   `error` event) with `"codex_error_info":"usage_limit_exceeded"` and the
//!   words `You've hit your usage limit. ... try again at 10:36 AM.`.
//! - `turn_context` names the turn's `model`.
//!
//! `input_tokens` counts the cached part too; the ledger's `input` does not.

use hangar_core::usage::{OWN_KEY_PREFIX, Tokens};
use hangar_core::usage_limits::{self, Window, codex_window_kind, parse_rfc3339_ms};
use serde_json::Value;

use crate::adapter::UsageFact;

/// The usage facts of complete rollout lines, in order. Lines that are not
/// whole JSON (a write in progress) or carry nothing are skipped.
pub fn rollout_usage(lines: &[String]) -> Vec<UsageFact> {
    let parsed: Vec<Value> = lines
        .iter()
        .filter_map(|l| serde_json::from_str(l.trim()).ok())
        .collect();
    // A rollout with `token_usage_record`s repeats each one's tokens in a
    // `token_count`: only the record (it names the provider's id) counts.
    let has_records = parsed.iter().any(|v| v["type"] == "token_usage_record");
    let mut model: Option<String> = None;
    // The latest exhausted window's reset, for a refusal that follows.
    let mut exhausted_reset: Option<i64> = None;
    let mut out = Vec::new();
    for v in &parsed {
        let at_ms = v["timestamp"].as_str().and_then(parse_rfc3339_ms);
        let payload = &v["payload"];
        match (v["type"].as_str(), payload["type"].as_str()) {
            (Some("turn_context"), _) => {
                if let Some(m) = payload["model"].as_str() {
                    model = Some(m.to_owned());
                    out.push(UsageFact::Model(m.to_owned()));
                }
            }
            (Some("token_usage_record"), _) => {
                let Some(id) = payload["response_id"].as_str().filter(|s| !s.is_empty()) else {
                    continue;
                };
                if let Some(tokens) = tokens(&payload["usage"]) {
                    out.push(UsageFact::Request {
                        key: id.to_owned(),
                        model: model.clone(),
                        at_ms,
                        tokens,
                        agent_cost_usd: None,
                    });
                }
            }
            (Some("event_msg"), Some("token_count")) => {
                let info = &payload["info"];
                if !has_records
                    && let (Some(tokens), Some(total)) = (
                        tokens(&info["last_token_usage"]),
                        info["total_token_usage"]["total_tokens"].as_u64(),
                    )
                {
                    let stamp = v["timestamp"].as_str().unwrap_or("");
                    out.push(UsageFact::Request {
                        key: format!("{OWN_KEY_PREFIX}codex:{stamp}:{total}"),
                        model: model.clone(),
                        at_ms,
                        tokens,
                        agent_cost_usd: None,
                    });
                }
                let windows = windows(&payload["rate_limits"], at_ms);
                if !windows.is_empty() {
                    if let Some(reset) = usage_limits::exhausted_reset(&windows) {
                        exhausted_reset = Some(reset);
                    }
                    out.push(UsageFact::Windows(windows));
                }
            }
            (Some("event_msg"), Some("task_complete" | "error")) => {
                let error = if payload["type"] == "error" {
                    payload
                } else {
                    &payload["error"]
                };
                let text = error["message"].as_str().unwrap_or("");
                let by_kind = error["codex_error_info"] == "usage_limit_exceeded";
                // Older Codex names no kind: its words do.
                let by_words = hangar_core::usage_limits::parse_limit_text(text).is_some();
                if by_kind || by_words {
                    out.push(UsageFact::Limited {
                        resets_at: exhausted_reset.take(),
                        text: text.to_owned(),
                    });
                }
            }
            _ => {}
        }
    }
    out
}

/// A Codex `TokenUsage` as the ledger counts it; `None` for none at all.
fn tokens(u: &Value) -> Option<Tokens> {
    let n = |k: &str| u[k].as_u64().unwrap_or(0);
    let cached = n("cached_input_tokens");
    let t = Tokens {
        input: n("input_tokens").saturating_sub(cached),
        output: n("output_tokens"),
        cache_write: n("cache_write_input_tokens"),
        cache_read: cached,
    };
    (t != Tokens::default()).then_some(t)
}

/// A `RateLimitSnapshot`'s windows; a window without `used_percent` is
/// left out (never guessed).
fn windows(snapshot: &Value, line_ms: Option<i64>) -> Vec<Window> {
    let mut out = Vec::new();
    for which in ["primary", "secondary"] {
        let w = &snapshot[which];
        let Some(used) = w["used_percent"]
            .as_f64()
            .filter(|u| u.is_finite() && *u >= 0.0)
        else {
            continue;
        };
        let resets_at = match (w["resets_at"].as_i64(), w["resets_in_seconds"].as_i64()) {
            (Some(at), _) if at > 0 => Some(at.saturating_mul(1000)),
            (_, Some(secs)) if secs >= 0 => line_ms.map(|t| t.saturating_add(secs * 1000)),
            _ => None,
        };
        out.push(Window {
            kind: codex_window_kind(which, w["window_minutes"].as_i64()),
            used_percent: Some(used),
            resets_at,
            status: None,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lines Codex 0.171.0 wrote, run against the fake model API on
    /// 2026-12-03 (`codex exec "hello there"`): `turn_context` cut to its
    /// `model` (the rest is permissions and sandbox policy), the others
    /// whole.
    const ANSWERED: &[&str] = &[
        r#"{"timestamp":"2026-12-03T10:35:25.564Z","ordinal":5,"type":"turn_context","payload":{"turn_id":"01a23b79-27ac-7d40-a5ed-390428c50b1f","model":"fake-model"}}"#,
        r#"{"timestamp":"2026-12-03T10:35:25.668Z","ordinal":11,"type":"token_usage_record","payload":{"thread_id":"01a23b79-2751-7923-af6c-1d1b667ffa01","turn_id":"01a23b79-27ac-7d40-a5ed-390428c50b1f","session_id":"01a23b79-2751-7923-af6c-1d1b667ffa01","root_turn_id":"01a23b79-27ac-7d40-a5ed-390428c50b1f","response_id":"resp_fake000001","usage":{"input_tokens":10251,"cached_input_tokens":0,"cache_write_input_tokens":0,"output_tokens":3,"reasoning_output_tokens":0,"total_tokens":10254},"turn_token_usage":{"input_tokens":10251,"cached_input_tokens":0,"cache_write_input_tokens":0,"output_tokens":3,"reasoning_output_tokens":0,"total_tokens":10254},"thread_token_usage":{"input_tokens":10251,"cached_input_tokens":0,"cache_write_input_tokens":0,"output_tokens":3,"reasoning_output_tokens":0,"total_tokens":10254}}}"#,
        r#"{"timestamp":"2026-12-03T10:35:25.669Z","ordinal":12,"type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":10251,"cached_input_tokens":0,"cache_write_input_tokens":0,"output_tokens":3,"reasoning_output_tokens":0,"total_tokens":10254},"last_token_usage":{"input_tokens":10251,"cached_input_tokens":0,"cache_write_input_tokens":0,"output_tokens":3,"reasoning_output_tokens":0,"total_tokens":10254},"last_usage_includes_reasoning":false,"model_context_window":258400},"rate_limits":{"limit_id":"codex","limit_name":null,"primary":{"used_percent":10.0,"window_minutes":300,"resets_at":1796312125},"secondary":{"used_percent":5.0,"window_minutes":10080,"resets_at":1796898925},"credits":null,"individual_limit":null,"spend_control_reached":null,"plan_type":null,"rate_limit_reached_type":null}}}"#,
    ];

    /// The same run's refusal (`{"limit": {"resets_in_secs": 40}}` in the
    /// fake's script), whole lines.
    const LIMITED: &[&str] = &[
        r#"{"timestamp":"2026-12-03T10:35:39.100Z","ordinal":9,"type":"event_msg","payload":{"type":"token_count","info":null,"rate_limits":{"limit_id":"codex","limit_name":null,"primary":{"used_percent":100,"window_minutes":300,"resets_at":1796294179},"secondary":{"used_percent":5,"window_minutes":10080,"resets_at":1796898939},"credits":null,"individual_limit":null,"spend_control_reached":null,"plan_type":null,"rate_limit_reached_type":null}}}"#,
        r#"{"timestamp":"2026-12-03T10:35:39.120Z","ordinal":10,"type":"event_msg","payload":{"type":"task_complete","root_turn_id":"01a23b79-5bed-78b3-ae3f-df94c14484b4","turn_id":"01a23b79-5bed-78b3-ae3f-df94c14484b4","last_agent_message":null,"error":{"message":"You’ve hit your usage limit. Upgrade to Pro (https://chatgpt.com/explore/pro), visit https://chatgpt.com/settings/usage to purchase more credits or try again at 10:36 AM.","codex_error_info":"usage_limit_exceeded"},"started_at":1796294138,"completed_at":1796294139,"duration_ms":250}}"#,
    ];

    fn lines(l: &[&str]) -> Vec<String> {
        l.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn a_request_is_read_once_under_the_response_id_with_the_windows() {
        let facts = rollout_usage(&lines(ANSWERED));
        assert_eq!(
            facts,
            vec![
                UsageFact::Model("fake-model".into()),
                UsageFact::Request {
                    key: "resp_fake000001".into(),
                    model: Some("fake-model".into()),
                    at_ms: parse_rfc3339_ms("2026-12-03T10:35:25.668Z"),
                    tokens: Tokens {
                        input: 10251,
                        output: 3,
                        ..Default::default()
                    },
                    agent_cost_usd: None,
                },
                UsageFact::Windows(vec![
                    Window {
                        kind: "five_hour".into(),
                        used_percent: Some(10.0),
                        resets_at: Some(1_796_312_125_000),
                        status: None,
                    },
                    Window {
                        kind: "seven_day".into(),
                        used_percent: Some(5.0),
                        resets_at: Some(1_796_898_925_000),
                        status: None,
                    },
                ]),
            ]
        );
    }

    #[test]
    fn an_older_rollout_without_records_counts_token_count_under_its_own_key() {
        // The `token_count` line alone, as Codex before `token_usage_record`
        // wrote it, with the older `resets_in_seconds` and cached input.
        let line = ANSWERED[2]
            .replace(
                r#""cached_input_tokens":0"#,
                r#""cached_input_tokens":4000"#,
            )
            .replace(r#""resets_at":1796312125"#, r#""resets_in_seconds":600"#);
        let facts = rollout_usage(&[ANSWERED[0].to_owned(), line]);
        let at = parse_rfc3339_ms("2026-12-03T10:35:25.669Z").unwrap();
        assert_eq!(facts[0], UsageFact::Model("fake-model".into()));
        assert_eq!(
            facts[1],
            UsageFact::Request {
                key: "agent:codex:2026-12-03T10:35:25.669Z:10254".into(),
                model: Some("fake-model".into()),
                at_ms: Some(at),
                tokens: Tokens {
                    input: 6251,
                    output: 3,
                    cache_read: 4000,
                    ..Default::default()
                },
                agent_cost_usd: None,
            }
        );
        let UsageFact::Windows(w) = &facts[2] else {
            panic!("{facts:?}")
        };
        assert_eq!(w[0].resets_at, Some(at + 600_000));
    }

    #[test]
    fn a_record_read_after_its_turn_context_names_no_model_itself() {
        // A look that fell between the two lines: the model is the daemon's
        // to carry from the earlier look (`UsageFact::Model`).
        let later = rollout_usage(&lines(&ANSWERED[1..]));
        let UsageFact::Request { model, .. } = &later[0] else {
            panic!("{later:?}")
        };
        assert_eq!(*model, None);
        assert_eq!(
            rollout_usage(&lines(&ANSWERED[..1])),
            vec![UsageFact::Model("fake-model".into())]
        );
    }

    #[test]
    fn a_refusal_is_a_limit_with_the_exhausted_windows_reset() {
        let facts = rollout_usage(&lines(LIMITED));
        assert_eq!(facts.len(), 2, "{facts:?}");
        let UsageFact::Limited { resets_at, text } = &facts[1] else {
            panic!("{facts:?}")
        };
        assert_eq!(*resets_at, Some(1_796_294_179_000));
        assert!(text.contains("try again at 10:36 AM"));
        // Without the windows (an older Codex): the words, reset unknown
        // here (the daemon reads "10:36 AM" from them).
        let facts = rollout_usage(&lines(&LIMITED[1..]));
        assert!(matches!(
            &facts[..],
            [UsageFact::Limited {
                resets_at: None,
                ..
            }]
        ));
    }

    #[test]
    fn half_lines_errors_of_other_kinds_and_empty_counts_say_nothing() {
        let cut = &ANSWERED[1][..ANSWERED[1].len() / 2];
        let other_error = r#"{"timestamp":"2026-12-03T10:35:39.120Z","type":"event_msg","payload":{"type":"error","message":"stream disconnected before completion","codex_error_info":"other"}}"#;
        let empty = r#"{"timestamp":"2026-12-03T10:35:25.669Z","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"total_tokens":0},"last_token_usage":{"input_tokens":0,"output_tokens":0}},"rate_limits":null}}"#;
        assert!(rollout_usage(&lines(&[cut, other_error, empty])).is_empty());
    }
}
