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
    // subscription, docs/src/cli-facts.md "At a usage limit").
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

    // A named zone comes from the zone database: 4pm in Berlin is 15:00
    // UTC in winter (CET) and 14:00 in summer (CEST).
    let berlin = h.new_agent(&["--provider", "claude"]);
    let before = now_secs() * 1000;
    h.ok(&[
        "send",
        &berlin,
        "You've hit your limit · resets 4pm (Europe/Berlin)",
    ]);
    let row = wait_limited(&h, &berlin);
    let got = row["limit"]["resets_at"].as_i64().expect("a reset");
    assert!(
        [15, 14].iter().any(|hour| got == next_utc(before, *hour)
            || got == next_utc(now_secs() * 1000, *hour)),
        "{got} is the next 16:00 in Berlin: {row}"
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
fn an_agent_reads_usage_over_mcp_and_its_prompt_to_a_limited_child_is_queued_until_the_reset() {
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

    // Rule 13: an agent's prompt never goes to a limited account: it is
    // held until the reset, not refused.
    let queued = mcp.ok("send_prompt", json!({"session": child, "prompt": "go on"}));
    assert_eq!(queued["status"], "queued", "{queued}");
    assert_eq!(queued["resets_at"], json!(reset * 1000), "{queued}");
    assert!(!h.screen(&child).contains("go on"));
    assert_eq!(api.requests_to("anthropic").len(), 1);
}

#[test]
fn an_agent_s_prompt_to_a_limited_child_is_delivered_after_the_reset() {
    let (h, api) = fixture("auto_continue = false");
    let reset = now_secs() + 6;
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
    let queued = mcp.ok(
        "send_prompt",
        json!({"session": child, "prompt": "after the reset"}),
    );
    assert_eq!(queued["status"], "queued", "{queued}");
    assert!(now_secs() < reset, "queued before the reset");
    h.wait_screen(&child, "answer: after the reset");
    assert!(now_secs() >= reset, "never typed before the reset");
    // Its words stood in for the continuation: nothing else was typed.
    assert!(!h.screen(&child).contains("answer: continue"));
}

#[test]
fn wake_to_continue_wakes_a_hibernated_limited_session_after_the_reset_and_carries_on() {
    let (h, api) =
        fixture("continue_delay_secs = 0\ncontinue_jitter_secs = 0\nwake_to_continue = true");
    let reset = now_secs() + 8;
    api.script(json!({"rules": [
        {"when": "at-the-limit", "limit": {"resets_at": reset}, "times": 1}
    ]}));
    let id = h.new_agent(&["--provider", "claude"]);
    assert!(call(&h, &api, &id, "at-the-limit").contains("api-done 429"));
    let row = wait_limited(&h, &id);
    assert_eq!(row["limit"]["resets_at"], json!(reset * 1000));
    h.ok(&["hibernate", &id]);
    h.wait_state(&id, "hibernated");
    assert!(now_secs() < reset, "hibernated before the reset");
    // At the reset the session is woken (its conversation resumed) and the
    // continuation typed once.
    h.wait_until("the continuation was typed", LIMIT_DEADLINE, || {
        journal_events(&h, "limit-continue", &id)
            .iter()
            .any(|e| e["typed"] == true)
    });
    assert!(now_secs() >= reset, "never woken before the reset");
    h.wait_state(&id, "live");
    h.wait_screen(&id, "answer: continue");
    assert_eq!(journal_events(&h, "limit-continue", &id).len(), 1);
    assert!(h.session(&id)["limit"].is_null());
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

    // The synthetic line Claude Code writes at a limit (docs/src/cli-facts.md).
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

fn goal_of(h: &Hangar, id: &str) -> Value {
    h.session(id)["goal"].clone()
}

fn wait_goal(h: &Hangar, id: &str, what: &str, pred: impl Fn(&Value) -> bool) -> Value {
    let mut g = Value::Null;
    h.wait_until(&format!("{id}'s goal {what}"), LIMIT_DEADLINE, || {
        g = goal_of(h, id);
        pred(&g)
    });
    g
}

#[test]
fn a_goal_is_continued_at_each_end_of_turn_until_its_max_turns() {
    let (h, _api) = fixture("");
    let id = h.new_agent(&["--provider", "claude"]);
    let v = h.json(&["goal", &id, "count the files", "--max-turns", "3"]);
    assert_eq!(v["goal"]["state"], "running", "{v}");
    assert_eq!(v["goal"]["max_turns"], 3);
    // Each end of turn (the fake agent's Stop hook, as Claude Code's) gets
    // a continuation naming the goal, until the third turn ended.
    let g = wait_goal(&h, &id, "stopped", |g| g["state"] == "stopped");
    assert_eq!(g["turns"], 3, "{g}");
    assert_eq!(g["reason"], "reached --max-turns 3", "{g}");
    assert_eq!(g["text"], "count the files");
    let screen = h.wait_screen(&id, "(turn 3 of 3)");
    assert!(screen.contains("answer: Goal: count the files"), "{screen}");
    assert!(screen.contains("(turn 2 of 3)"), "{screen}");
    assert!(
        !screen.contains("(turn 4 of 3)"),
        "never past the cap: {screen}"
    );
    let human = h.ok(&["ls"]);
    assert!(human.contains("goal 3/3 stopped"), "{human}");
    let events = journal_events(&h, "goal", &id);
    assert_eq!(events.last().unwrap()["state"], "stopped", "{events:?}");
}

#[test]
fn goal_done_over_mcp_ends_the_goal_and_nothing_more_is_typed() {
    let (h, _api) = fixture("");
    let id = h.new_agent(&["--provider", "claude"]);
    h.ok(&["goal", &id, "tidy the readme", "--max-turns", "1000"]);
    h.wait_screen(&id, "(turn 2 of 1000)");
    // The agent itself calls goal_done through the MCP server hangar gave it.
    let mcp = support::mcp::Mcp::launch(&h, &id);
    let done = mcp.ok(
        "goal_done",
        json!({"status": "done", "summary": "readme tidied"}),
    );
    assert_eq!(done["goal"]["state"], "done", "{done}");
    assert_eq!(done["goal"]["summary"], "readme tidied");
    // The continuation typed just before ends its turn (its answer drawn);
    // after that, nothing more.
    h.wait_screen(&id, "answer: Continue with the goal (turn 2 of 1000)");
    h.wait_until("the agent is idle", DEADLINE, || {
        h.session(&id)["activity"] == "idle"
    });
    let turns = goal_of(&h, &id)["turns"].clone();
    let typed = h.screen(&id).matches("Continue with the goal").count();
    h.ok(&["send", &id, "are you there"]);
    h.wait_screen(&id, "answer: are you there");
    h.wait_until("the agent is idle again", DEADLINE, || {
        h.session(&id)["activity"] == "idle"
    });
    assert_eq!(goal_of(&h, &id)["turns"], turns);
    assert_eq!(goal_of(&h, &id)["state"], "done");
    assert_eq!(
        h.screen(&id).matches("Continue with the goal").count(),
        typed,
        "nothing typed after goal_done:\n{}",
        h.screen(&id)
    );
    // goal_done is bad input when the status is neither done nor blocked.
    assert_eq!(
        mcp.refused("goal_done", json!({"status": "finished"})),
        "invalid"
    );
}

#[test]
fn a_person_typing_pauses_a_goal_and_stop_ends_it() {
    let (h, _api) = fixture("");
    let id = h.new_agent(&["--provider", "claude"]);
    h.ok(&["goal", &id, "write the changelog", "--max-turns", "1000"]);
    h.wait_screen(&id, "(turn 2 of 1000)");
    h.ok(&["send", &id, "hold on, my turn"]);
    let g = wait_goal(&h, &id, "paused", |g| g["state"] == "paused");
    assert_eq!(g["reason"], "a person typed into the session", "{g}");
    h.wait_until("the agent is idle", DEADLINE, || {
        h.session(&id)["activity"] == "idle"
    });
    let typed = h.screen(&id).matches("Continue with the goal").count();
    h.ok(&["send", &id, "still me"]);
    h.wait_screen(&id, "answer: still me");
    h.wait_until("the agent is idle again", DEADLINE, || {
        h.session(&id)["activity"] == "idle"
    });
    assert_eq!(
        h.screen(&id).matches("Continue with the goal").count(),
        typed,
        "nothing typed over a person"
    );
    let stopped = h.json(&["goal", &id, "--stop"]);
    assert_eq!(stopped["goal"]["state"], "stopped", "{stopped}");
    assert_eq!(stopped["goal"]["reason"], "stopped by a person");
    // The goal and its state survive a restart.
    h.shutdown();
    h.start_daemon();
    assert_eq!(goal_of(&h, &id)["state"], "stopped");
}

/// `hangar hook stop-failure` as Claude Code runs it: the hook's JSON on
/// stdin (fields from the StopFailure schema in Claude Code 2.1.197's
/// binary: `hook_event_name`, `error`, `error_details`,
/// `last_assistant_message`, plus the common `session_id`,
/// `transcript_path`, `cwd`).
fn stop_failure(h: &Hangar, id: &str, error: &str) {
    use std::io::Write;
    let mut child = h
        .command(&["hook", "stop-failure", "--session", id])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("run hangar hook");
    let input = json!({
        "session_id": "00000000-0000-4000-8000-000000000000",
        "transcript_path": "/nonexistent.jsonl",
        "cwd": h.work.display().to_string(),
        "hook_event_name": "StopFailure",
        "error": error,
        "error_details": "429 {\"type\":\"error\"}",
        "last_assistant_message": "API Error: Request rejected (429)",
    });
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.to_string().as_bytes())
        .unwrap();
    assert!(child.wait().unwrap().success());
}

#[test]
fn stop_failure_pauses_a_goal_at_a_rate_limit_and_stops_it_at_another_error() {
    let (h, _api) = fixture("auto_continue = false");
    let limited = h.new_agent(&["--provider", "claude"]);
    let failed = h.new_agent(&["--provider", "claude"]);
    for id in [&limited, &failed] {
        h.ok(&["goal", id, "ship it", "--max-turns", "1000"]);
        h.wait_screen(id, "(turn 2 of 1000)");
    }
    stop_failure(&h, &limited, "rate_limit");
    let g = wait_goal(&h, &limited, "paused", |g| g["state"] == "paused");
    assert_eq!(g["reason"], "the provider's usage limit", "{g}");
    let row = wait_limited(&h, &limited);
    assert_eq!(row["limit"]["source"], "hook", "{row}");

    stop_failure(&h, &failed, "authentication_failed");
    let g = wait_goal(&h, &failed, "stopped", |g| g["state"] == "stopped");
    assert_eq!(
        g["reason"], "the turn ended in an error (authentication_failed)",
        "{g}"
    );
    assert!(h.session(&failed)["limit"].is_null());
}

#[test]
fn a_budget_over_an_unpriced_model_is_refused_and_nothing_is_left_behind() {
    let (h, api) = fixture("");
    let id = h.new_agent(&["--provider", "claude"]);
    // The fake API's model, `fake-agent`, has no price.
    assert!(call(&h, &api, &id, "first-call").contains("api-done 200"));
    h.wait_until("the request is in the ledger", DEADLINE, || {
        h.json(&["usage"])["total"]["requests"] == 1
    });
    let before = h.ls().len();
    let err = h.fail(&["new", "--provider", "claude", "--max-cost", "5"]);
    assert!(
        err.contains("fake-agent") && err.contains("has no price"),
        "{err}"
    );
    assert!(err.contains("[usage.prices.\"fake-agent\"]"), "{err}");
    assert_eq!(h.ls().len(), before, "the refused session was closed");
    let err = h.fail(&["limit", &id, "--max-cost", "5"]);
    assert!(err.contains("has no price"), "{err}");
    assert!(h.json(&["limit", &id])["max_cost_usd"].is_null());
}

#[test]
fn a_spent_budget_stops_the_goal_and_hibernates_the_session_after_its_turn() {
    // A dollar a token: the first call spends a $5 budget.
    let (h, api) = fixture(
        "auto_continue = false\n[usage.prices.\"fake-agent\"]\ninput = 1000000.0\noutput = 1000000.0\ncache_write = 0.0\ncache_read = 0.0",
    );
    let id = h.new_agent(&["--provider", "claude", "--max-cost", "5"]);
    assert_eq!(h.json(&["limit", &id])["max_cost_usd"], json!(5.0));
    h.ok(&["goal", &id, "spend it all", "--max-turns", "1000"]);
    h.wait_screen(&id, "(turn 2 of 1000)");
    assert!(call(&h, &api, &id, "an-expensive-call").contains("api-done 200"));
    h.wait_until("the budget is spent", DEADLINE, || {
        !journal_events(&h, "budget", &id).is_empty()
    });
    h.wait_state(&id, "hibernated");
    let hibernated: Vec<Value> = journal_events(&h, "hibernate", &id);
    assert_eq!(
        hibernated.last().unwrap()["reason"],
        "budget",
        "{hibernated:?}"
    );
    let u = h.json(&["usage", "--session", &id]);
    assert!(u["sessions"][0]["cost_usd"].as_f64().unwrap() >= 5.0, "{u}");
    let g = h.session(&id)["goal"].clone();
    assert_eq!(g["state"], "stopped", "{g}");
    assert_eq!(g["reason"], "the cost budget is spent", "{g}");
}
