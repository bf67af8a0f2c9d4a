//! Issue 29, end to end: hangar-fake-agent calls `hangar-fake-model-api`
//! (answering as Anthropic does at a usage limit: 429, `rate_limit_error`,
//! `anthropic-ratelimit-unified-status: rejected`, the reset in
//! `anthropic-ratelimit-unified-reset`) through the daemon's recording
//! proxy. The session becomes limited with the header's reset, carries on
//! by itself after it, stands down when a person typed, keeps its limit
//! across a restart, and a 429 that is not a usage limit is not one.

use crate::real_cli_support;
use crate::support;

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use real_cli_support::FakeApi;
use serde_json::{Value, json};
use support::{DEADLINE, Hangar};

/// Long enough for a reset a few seconds ahead plus the delay.
const LIMIT_DEADLINE: Duration = Duration::from_secs(60);

fn now_secs() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock after 1970")
        .as_secs() as i64
}

/// A hangar whose proxy records the fake API's HTTPS side (127.0.0.2 is
/// loopback but in no agent's NO_PROXY, so it stands in for a remote API).
fn fixture(limits: &str) -> (Hangar, FakeApi) {
    let h = Hangar::new();
    let api = FakeApi::start(&h.root.join("api"));
    h.write_config(&format!(
        "[proxy]\nallow_hosts = [\"127.0.0.2\"]\nextra_ca_file = {:?}\n[usage]\nwatch_agents = true\n[limits]\n{limits}\n",
        api.ca_file().display().to_string()
    ));
    (h, api)
}

/// Has the agent call the fake API with `text`; returns the line saying
/// how the call ended (`api-done 429`, `api-error: ...`).
fn call(h: &Hangar, api: &FakeApi, id: &str, text: &str) -> String {
    let ended =
        |screen: &str| screen.matches("api-done").count() + screen.matches("api-error").count();
    let before = ended(&h.screen(id));
    h.ok(&[
        "send",
        id,
        &format!("api {}/v1/messages {text}", api.https_url()),
    ]);
    let mut screen = String::new();
    h.wait_until(&format!("{id} made the call {text}"), DEADLINE, || {
        screen = h.screen(id);
        ended(&screen) > before
    });
    screen
        .lines()
        .rev()
        .find(|l| l.contains("api-done") || l.contains("api-error"))
        .unwrap_or_default()
        .to_owned()
}

fn wait_limited(h: &Hangar, id: &str) -> Value {
    let mut row = Value::Null;
    h.wait_until(&format!("{id} is limited"), DEADLINE, || {
        row = h.session(id);
        row["limit"].is_object()
    });
    row
}

fn journal_events(h: &Hangar, event: &str, id: &str) -> Vec<Value> {
    h.journal()
        .into_iter()
        .filter(|e| e["event"] == event && e["session"] == id)
        .collect()
}

#[test]
fn a_refused_session_is_limited_until_the_header_s_reset_and_carries_on_by_itself() {
    let (h, api) = fixture("continue_delay_secs = 0\ncontinue_jitter_secs = 0");
    // Far enough ahead for the looks below to see the limit standing.
    let reset = now_secs() + 10;
    api.script(json!({"rules": [
        {"when": "at-the-limit", "limit": {"resets_at": reset}, "times": 1}
    ]}));
    let id = h.new_agent(&["--provider", "claude"]);

    let screen = call(&h, &api, &id, "at-the-limit");
    assert!(screen.contains("api-done 429"), "{screen}");
    let row = wait_limited(&h, &id);
    let limit = &row["limit"];
    assert_eq!(limit["resets_at"], json!(reset * 1000), "{row}");
    assert_eq!(limit["kind"], "five_hour");
    assert_eq!(limit["source"], "proxy");
    assert_eq!(limit["continue_at"], json!(reset * 1000));
    h.wait_until("its activity says limited", DEADLINE, || {
        h.session(&id)["activity"] == "limited"
    });
    let human = h.ok(&["ls"]);
    assert!(human.contains("limited until "), "{human}");
    let status = h.status();
    assert_eq!(status["limited"][0]["id"], id.as_str(), "{status}");
    assert_eq!(status["limited"][0]["limit"], row["limit"]);
    let human = h.ok(&["status"]);
    assert!(human.contains("limited until "), "{human}");

    let limited = journal_events(&h, "limited", &id);
    assert_eq!(limited.len(), 1, "{limited:?}");
    assert_eq!(limited[0]["resets_at"], json!(reset * 1000));

    // After the reset, hangar types the continuation prompt once.
    h.wait_until("the continuation was typed", LIMIT_DEADLINE, || {
        journal_events(&h, "limit-continue", &id)
            .iter()
            .any(|e| e["typed"] == true)
    });
    h.wait_screen(&id, "answer: continue");
    assert!(
        h.session(&id)["limit"].is_null(),
        "a continued limit is no longer shown"
    );
    assert_eq!(journal_events(&h, "limit-continue", &id).len(), 1);
    assert!(
        now_secs() >= reset,
        "never typed before the reset the header named"
    );
}

#[test]
fn nothing_is_typed_into_a_limited_session_a_person_typed_into_since() {
    let (h, api) = fixture("continue_delay_secs = 0\ncontinue_jitter_secs = 0");
    // Far enough ahead for the person's words to come before the reset.
    let reset = now_secs() + 8;
    api.script(json!({"rules": [
        {"when": "at-the-limit", "limit": {"resets_at": reset}, "times": 1}
    ]}));
    let id = h.new_agent(&["--provider", "claude"]);
    call(&h, &api, &id, "at-the-limit");
    wait_limited(&h, &id);
    h.ok(&["send", &id, "my own words"]);
    assert!(now_secs() < reset, "the person typed before the reset");
    h.wait_screen(&id, "answer: my own words");

    h.wait_until("the continuation stood down", LIMIT_DEADLINE, || {
        journal_events(&h, "limit-continue", &id)
            .iter()
            .any(|e| e["typed"] == false)
    });
    let events = journal_events(&h, "limit-continue", &id);
    assert!(events.iter().all(|e| e["typed"] == false), "{events:?}");
    assert!(
        !h.screen(&id).contains("answer: continue"),
        "nothing typed after a person typed"
    );
}

#[test]
fn a_limit_and_its_continuation_survive_a_daemon_restart() {
    let (h, api) = fixture("continue_delay_secs = 60");
    let reset = now_secs() + 3600;
    api.script(json!({"rules": [
        {"when": "at-the-limit", "limit": {"resets_at": reset}, "times": 1}
    ]}));
    let id = h.new_agent(&["--provider", "claude", "--no-auto-continue"]);
    call(&h, &api, &id, "at-the-limit");
    let before = wait_limited(&h, &id)["limit"].clone();
    assert_eq!(before["resets_at"], json!(reset * 1000));
    assert!(
        before["continue_at"].is_null(),
        "--no-auto-continue: {before}"
    );
    h.ok(&["limit", &id, "--continue", "on"]);
    let before = h.session(&id)["limit"].clone();
    let at = before["continue_at"].as_i64().expect("scheduled");
    assert!(
        at >= (reset + 60) * 1000 && at < (reset + 90) * 1000,
        "{before}"
    );

    h.shutdown();
    h.start_daemon();
    let after = wait_limited(&h, &id)["limit"].clone();
    assert_eq!(after, before, "the limit and its schedule are kept");
    assert_eq!(
        journal_events(&h, "limited", &id).len(),
        1,
        "not limited twice"
    );
}

#[test]
fn a_429_without_unified_headers_or_an_overload_is_not_a_usage_limit() {
    let (h, api) = fixture("");
    api.script(json!({"rules": [
        {"when": "plain-429", "fail": {"status": 429, "message": "slow down"}},
        {"when": "overloaded", "fail": {"status": 529, "message": "Overloaded"}}
    ]}));
    let id = h.new_agent(&["--provider", "claude"]);
    assert!(call(&h, &api, &id, "plain-429").contains("api-done 429"));
    assert!(call(&h, &api, &id, "overloaded").contains("api-done 529"));
    // The ledger saw both requests (so the proxy's reports were taken)...
    h.wait_until("both refusals are in the ledger", DEADLINE, || {
        let u = h.json(&["usage", "--session", &id]);
        u["total"]["requests"] == 2
    });
    // ...and neither made the session limited.
    let row = h.session(&id);
    assert!(row["limit"].is_null(), "{row}");
    assert_ne!(row["activity"], "limited");
    assert!(journal_events(&h, "limited", &id).is_empty());
}

#[test]
fn usage_counts_each_request_once_with_its_windows_and_no_price_for_an_unknown_model() {
    let (h, api) = fixture("");
    api.script(json!({"windows": {"five_hour": 0.5, "seven_day": 0.25}, "rules": []}));
    let id = h.new_agent(&["--provider", "claude"]);
    let done = call(&h, &api, &id, "first-call");
    assert!(done.contains("api-done 200"), "{done}");
    let mut u = Value::Null;
    h.wait_until("the request is in the ledger", DEADLINE, || {
        u = h.json(&["usage", "--since", "1h"]);
        u["total"]["requests"] == 1
    });
    let s = &u["sessions"][0];
    assert_eq!(s["id"], id.as_str());
    assert_eq!(s["provider"], "claude");
    assert_eq!(s["models"], json!(["fake-agent"]));
    // The fake API's figures: a token per 4 request bytes, words + 1 out.
    let logged = api.requests_to("anthropic");
    assert_eq!(s["input_tokens"], logged[0]["usage"]["input"]);
    assert_eq!(s["output_tokens"], logged[0]["usage"]["output"]);
    assert!(s["cost_usd"].is_null(), "an unknown model is never $0: {s}");
    assert_eq!(s["priced"], false);
    assert_eq!(u["total"]["unpriced_requests"], 1);
    let account = &u["accounts"][0];
    assert_eq!(account["provider"], "claude");
    assert!(
        account["account"]
            .as_str()
            .is_some_and(|a| a.starts_with("sha256:")),
        "{account}"
    );
    assert!(
        !u.to_string().contains("sk-ant-fake"),
        "never the credential"
    );
    let five = account["windows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["kind"] == "five_hour")
        .cloned()
        .expect("a five_hour window");
    assert_eq!(five["used_percent"], json!(50.0));
    let human = h.ok(&["usage"]);
    assert!(human.contains("unpriced"), "{human}");
}

/// The next 16:00 UTC after `now_ms`, as the screen's words mean it.
fn next_utc(now_ms: i64, hour: i64) -> i64 {
    let day = 86_400_000;
    let mut t = now_ms.div_euclid(day) * day + hour * 3_600_000;
    if t < now_ms - 60_000 {
        t += day;
    }
    t
}

#[test]
fn limit_words_on_an_agent_s_screen_make_it_limited_with_their_reset_or_an_unknown_one() {
    let (h, _api) = fixture("");
    let id = h.new_agent(&["--provider", "claude"]);
    let before = now_secs() * 1000;
    // The fake agent answers `answer: <prompt>`: the words end up on its
    // screen as a CLI's would (the form Claude Code prints for a
    // subscription, REAL_CLIS.md "At a usage limit").
    h.ok(&["send", &id, "You've hit your limit · resets 4pm (UTC)"]);
    let row = wait_limited(&h, &id);
    let limit = &row["limit"];
    assert_eq!(limit["source"], "screen", "{row}");
    let want = next_utc(before, 16);
    let got = limit["resets_at"].as_i64().expect("a reset");
    assert!(
        got == want || got == next_utc(now_secs() * 1000, 16),
        "{got} is the next 16:00 UTC ({want})"
    );

    // A zone hangar cannot resolve: limited, the reset unknown, and nothing
    // scheduled (a person decides).
    let other = h.new_agent(&["--provider", "claude"]);
    h.ok(&[
        "send",
        &other,
        "You've hit your limit · resets 4pm (Mars/Olympus)",
    ]);
    let row = wait_limited(&h, &other);
    assert!(row["limit"]["resets_at"].is_null(), "{row}");
    assert!(row["limit"]["continue_at"].is_null(), "{row}");
    let human = h.ok(&["ls"]);
    assert!(human.contains("limited until an unknown time"), "{human}");
}

#[test]
fn an_agent_reads_usage_over_mcp_and_its_prompt_to_a_limited_child_is_refused_until_the_reset() {
    let (h, api) = fixture("auto_continue = false");
    let reset = now_secs() + 3600;
    api.script(json!({"rules": [
        {"when": "at-the-limit", "limit": {"resets_at": reset}, "times": 1}
    ]}));
    let parent = h.new_agent(&["--provider", "claude"]);
    let mcp = support::mcp::Mcp::launch(&h, &parent);
    let child = mcp.ok("create_agent", json!({"prompt": "hello"}));
    let child = child["id"].as_str().expect("child id").to_owned();
    h.wait_screen(&child, "answer: hello");
    assert!(call(&h, &api, &child, "at-the-limit").contains("api-done 429"));
    wait_limited(&h, &child);

    let u = mcp.ok("usage_read", json!({"since_hours": 1}));
    assert_eq!(u["total"]["requests"], 1, "{u}");
    assert_eq!(
        u["accounts"][0]["limited_until"],
        json!(reset * 1000),
        "{u}"
    );

    // Rule 13: an agent's prompt never goes to a limited account.
    let screen_before = h.screen(&child);
    assert_eq!(
        mcp.refused("send_prompt", json!({"session": child, "prompt": "go on"})),
        "limited"
    );
    assert!(!h.screen(&child).contains("go on"), "{screen_before}");
    assert_eq!(api.requests_to("anthropic").len(), 1);
}

fn append(path: &std::path::Path, text: &str) {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(path)
        .expect("open the transcript");
    f.write_all(text.as_bytes()).expect("append");
}

#[test]
fn a_claude_transcript_feeds_the_ledger_once_per_message_and_its_rate_limit_line_limits() {
    let (h, _api) = fixture("auto_continue = false");
    let id = h.new_agent(&["--provider", "claude"]);
    h.ok(&["send", &id, "hello"]);
    let psid = h.wait_transcript_id(&id);
    let path = h.claude_transcript(&h.work, &psid);
    // Claude Code writes one assistant line per content block of a message,
    // each with the message's usage so far (shape of 2.1.197's lines).
    let line = |out: u64| {
        format!(
            "{{\"type\":\"assistant\",\"sessionId\":\"{psid}\",\"timestamp\":\"2026-12-02T10:00:00.000Z\",\
             \"message\":{{\"id\":\"msg_transcript_1\",\"model\":\"claude-haiku-4-5-20251001\",\"role\":\"assistant\",\
             \"content\":[{{\"type\":\"text\",\"text\":\"hi\"}}],\"usage\":{{\"input_tokens\":1000000,\
             \"cache_creation_input_tokens\":0,\"cache_read_input_tokens\":0,\"output_tokens\":{out}}}}}}}\n"
        )
    };
    append(&path, &line(1));
    let full = line(1_000_000);
    // Written in two pieces, as a write in progress leaves it (a reader
    // between them sees half a line and must wait for its end).
    let (first, rest) = full.split_at(full.len() / 2);
    append(&path, first);
    append(&path, rest);
    // Transcripts are read when a turn begins or ends: a prompt makes one.
    h.ok(&["send", &id, "poke"]);
    let mut u = Value::Null;
    h.wait_until("the completed line raised the output", DEADLINE, || {
        u = h.json(&["usage", "--since", "2026-12-01", "--session", &id]);
        u["total"]["output_tokens"] == 1_000_000
    });
    assert_eq!(
        u["total"]["input_tokens"], 1_000_000,
        "one message, one request, never summed: {u}"
    );
    let s = &u["sessions"][0];
    assert_eq!(s["priced"], true, "{s}");
    // claude-haiku-4-5: $1 input, $5 output per million (prices.json).
    assert_eq!(s["cost_usd"], json!(6.0), "{s}");

    // The synthetic line Claude Code writes at a limit (REAL_CLIS.md).
    append(
        &path,
        &format!(
            "{{\"type\":\"assistant\",\"sessionId\":\"{psid}\",\"error\":\"rate_limit\",\"isApiErrorMessage\":true,\
             \"apiErrorStatus\":429,\"message\":{{\"id\":\"synthetic-1\",\"model\":\"<synthetic>\",\"role\":\"assistant\",\
             \"content\":[{{\"type\":\"text\",\"text\":\"API Error: Request rejected (429) · This request would exceed your account's rate limit. Please try again later.\"}}],\
             \"usage\":{{\"input_tokens\":0,\"output_tokens\":0}}}}}}\n"
        ),
    );
    h.ok(&["send", &id, "poke again"]);
    let row = wait_limited(&h, &id);
    assert_eq!(row["limit"]["source"], "transcript", "{row}");
    assert!(row["limit"]["resets_at"].is_null(), "no reset named: {row}");
}
