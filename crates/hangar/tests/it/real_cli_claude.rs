//! Real-CLI conformance, Claude Code 2.1.197 (and the registry's latest with
//! `HANGAR_REAL_CLI_LATEST=1`) run by hangar:
//! - hangar's MCP server is connected (its tools are offered to the model),
//!   a real `tool_use` of `mcp__hangar__create_agent` asks permission first
//!   (the session is `waiting` meanwhile) and, once allowed, creates a child;
//! - its API traffic goes through hangar's capture proxy over the real TLS
//!   stack (claude trusting hangar's CA through `NODE_EXTRA_CA_CERTS`), and
//!   the usage hangar counts is what the model reported;
//! - a conversation held by Claude Code's own background-agent supervisor
//!   (`claude --bg`) gives a failed pane that says what to do (defect 9).

use crate::real_cli_support;
use crate::support;

use real_cli_support::{REAL_DEADLINE, RealCli};
use serde_json::{Value, json};

const CREATE: &str = "mcp__hangar__create_agent";

#[test]
fn claude_gets_hangars_mcp_tools_and_a_real_tool_call_waits_for_permission_then_creates_a_child() {
    let Some(rc) = RealCli::start() else { return };
    rc.api.script(json!({"rules": [
        {"when": "make a child", "tool": {"name": CREATE, "input": {
            "provider": "shell", "title": "real child", "role": "helper"}}}
    ]}));
    rc.hangar.start_daemon();
    let parent = rc.hangar.new_agent(&["--provider", "claude"]);
    rc.wait_ready(&parent);
    let before = rc.api.requests().len();
    let asked = rc.submit(&parent, "make a child");
    let offered = RealCli::hangar_tools_named(&asked);
    assert!(
        offered.len() >= 5,
        "claude offered too few of hangar's MCP tools: {offered:?}"
    );
    rc.wait_tool_call(CREATE, before);
    // Claude asks before running an MCP tool; meanwhile the session waits
    // on its person.
    rc.wait_tool_question(&parent);
    support::wait_until("the parent is waiting", REAL_DEADLINE, || {
        rc.hangar.session(&parent)["activity"] == "waiting"
    });
    assert!(
        !rc.hangar.ls().iter().any(|r| r["title"] == "real child"),
        "no child before the permission is given"
    );
    rc.approve_tool(&parent);
    let mut child = Value::Null;
    support::wait_until("the tool call created a child", REAL_DEADLINE, || {
        child = rc
            .hangar
            .ls()
            .into_iter()
            .find(|r| r["title"] == "real child")
            .unwrap_or(Value::Null);
        !child.is_null()
    });
    assert_eq!(child["parent"], parent.as_str(), "{child}");
    assert_eq!(child["provider"], "shell");
    // The tool's result went back to the model, whose answer is on screen.
    rc.wait_screen(&parent, "TOOL-DONE(");
}

#[test]
fn hangars_reading_tools_run_in_claude_without_a_question_in_its_default_mode() {
    // list_agents only reads: hangar allows it (issue 46 part 5), so the
    // real claude runs it at once, whatever its default permission mode
    // (2.1.197's `default`, 2.1.33x's `auto`), and its answer comes back.
    let Some(rc) = RealCli::start() else { return };
    rc.api.script(json!({"rules": [
        {"when": "who works for me", "tool": {"name": "mcp__hangar__list_agents", "input": {}}}
    ]}));
    rc.hangar.start_daemon();
    let id = rc.hangar.new_agent(&["--provider", "claude"]);
    rc.wait_ready(&id);
    let before = rc.api.requests().len();
    rc.submit(&id, "who works for me");
    rc.wait_tool_call("mcp__hangar__list_agents", before);
    // The tool's result reached the model: its next request carries it,
    // and the fake answers TOOL-DONE(<its first line>).
    let screen = rc.wait_screen(&id, "TOOL-DONE(");
    for question in ["Do you want to proceed?", "Enter to stay in auto mode"] {
        assert!(!screen.contains(question), "{screen}");
    }
    // hangar's answer, not a refusal claude wrote in its place.
    let result = rc
        .api
        .wait_request("the tool's result reached the model", |r| {
            r["body"].to_string().contains("tool_result")
        });
    let body = result["body"].to_string();
    assert!(body.contains("agents"), "hangar's list went back: {body}");
    assert!(!body.contains("\"is_error\":true"), "{body}");
}

#[test]
fn claude_traffic_is_captured_through_the_real_tls_stack_and_usage_matches_the_model() {
    // 127.0.0.2 is not in any agent's NO_PROXY, so it stands for a remote
    // API; its certificate is signed by the fake API's own CA, which the
    // proxy trusts for upstream connections.
    let Some(rc) = RealCli::start() else { return };
    rc.hangar_config(&format!(
        "[proxy]\nallow_hosts = [\"127.0.0.2\"]\nextra_ca_file = \"{}\"\n",
        rc.api.ca_file().display()
    ));
    let mut rc = rc;
    rc.hangar.set_env("ANTHROPIC_BASE_URL", rc.api.https_url());
    rc.hangar.start_daemon();
    let id = rc.hangar.new_agent(&["--provider", "claude"]);
    rc.wait_ready(&id);
    rc.ask(&id, "through the proxy");
    let turn = rc
        .api
        .wait_request("the turn reached the model over TLS", |r| {
            r["api"] == "anthropic" && r["turn"] == "through the proxy"
        });
    assert_eq!(turn["tls"], true);
    let streamed: Vec<Value> = rc
        .api
        .requests_to("anthropic")
        .into_iter()
        .filter(|r| r["usage"].is_object())
        .collect();
    let sum = |k: &str| -> u64 {
        streamed
            .iter()
            .map(|r| r["usage"][k].as_u64().unwrap_or(0))
            .sum()
    };
    let mut usage = Value::Null;
    support::wait_until("hangar counted the model's usage", REAL_DEADLINE, || {
        usage = rc.hangar.session(&id)["usage"].clone();
        usage["requests"].as_u64() >= Some(streamed.len() as u64)
    });
    assert_eq!(
        usage["input_tokens"].as_u64(),
        Some(sum("input")),
        "{usage}"
    );
    assert_eq!(
        usage["output_tokens"].as_u64(),
        Some(sum("output")),
        "{usage}"
    );
    assert_eq!(usage["errors"], 0, "{usage}");
    // The capture holds the exchange, without the key claude sent.
    let capture = rc.hangar.ok(&["capture", &id, "--json"]);
    assert!(capture.contains("through the proxy"), "{capture}");
    assert!(
        !capture.contains(real_cli_support::ANTHROPIC_KEY),
        "the API key reached the capture"
    );
}

#[test]
fn a_conversation_held_by_claudes_background_agent_supervisor_fails_its_pane_saying_what_to_do() {
    let Some(rc) = RealCli::start() else { return };
    // A person starts a conversation as one of Claude Code's own
    // background agents, in the project folder (claude picks its id).
    let out = rc
        .outside(&rc.clis.claude, &rc.hangar.work)
        .args(["--bg", "background work"])
        .output()
        .expect("run claude --bg");
    assert!(
        out.status.success(),
        "claude --bg failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let jobs = rc.hangar.claude_dir.join("sessions");
    let mut psid = String::new();
    support::wait_until(
        "the background agent holds a conversation",
        REAL_DEADLINE,
        || {
            for e in std::fs::read_dir(&jobs).into_iter().flatten().flatten() {
                let rec: Value = std::fs::read(e.path())
                    .ok()
                    .and_then(|b| serde_json::from_slice(&b).ok())
                    .unwrap_or(Value::Null);
                if rec["kind"] == "bg"
                    && let Some(s) = rec["sessionId"].as_str()
                {
                    psid = s.to_owned();
                }
            }
            !psid.is_empty()
        },
    );
    let psid = psid.as_str();
    // hangar's pane for the same conversation is restored.
    let sid = "b9b9b9b9-aaaa-4bbb-8ccc-000000000001";
    rc.hangar.import(&json!({
        "format": "hangar-workspace",
        "version": 1,
        "workspace": {
            "tabs": [{"id": "a1a1a1a1-0000-4000-8000-000000000001", "title": "work",
                      "cwd": rc.hangar.work,
                      "root": {"type": "leaf", "session": sid}, "focus": sid}],
            "active_tab": "a1a1a1a1-0000-4000-8000-000000000001",
            "sessions": {sid: {"id": sid, "provider": "claude", "cwd": rc.hangar.work,
                               "title": "held", "dangerous": false, "relationships": {},
                               "created_at_ms": 1, "last_active_ms": 1,
                               "provider_session": {"id": psid, "source": "transcript"}}},
            "parked": {}, "buried": {}, "pins": [], "dispatch": {},
            "settings": {"dangerous": false}
        }
    }));
    rc.hangar.start_daemon();
    rc.hangar.wait_restore_complete();
    let row = rc.wait_state(sid, "failed");
    let reason = row["reason"].as_str().unwrap_or_default().to_owned();
    assert!(
        reason.contains("background-agent") && reason.contains("claude stop"),
        "the failed pane does not say what holds it and what to do: {row}"
    );
}

fn goal_of(rc: &RealCli, id: &str) -> Value {
    rc.hangar.session(id)["goal"].clone()
}

/// Requests whose last user text is a goal continuation hangar typed.
fn continuations(rc: &RealCli) -> usize {
    rc.api
        .requests_to("anthropic")
        .iter()
        .filter(|r| {
            r["turn"]
                .as_str()
                .is_some_and(|t| t.starts_with("Continue with the goal"))
        })
        .count()
}

#[test]
fn a_goal_with_the_real_claude_continues_at_its_stop_hook_and_ends_through_goal_done() {
    let Some(rc) = RealCli::start() else { return };
    // The first continuation is answered with a real tool call of hangar's
    // goal_done, which claude runs without asking (hangar allows it).
    rc.api.script(json!({"rules": [
        {"when": "Continue with the goal", "times": 1, "tool": {
            "name": "mcp__hangar__goal_done",
            "input": {"status": "done", "summary": "the real claude finished"}}}
    ]}));
    rc.hangar.start_daemon();
    let id = rc.hangar.new_agent(&["--provider", "claude"]);
    rc.wait_ready(&id);
    let v = rc
        .hangar
        .json(&["goal", &id, "say hello", "--max-turns", "5"]);
    assert_eq!(v["goal"]["state"], "running", "{v}");
    let mut g = Value::Null;
    support::wait_until(
        "claude ended its goal through goal_done",
        REAL_DEADLINE,
        || {
            g = goal_of(&rc, &id);
            g["state"] != "running"
        },
    );
    assert_eq!(g["state"], "done", "{g}");
    assert_eq!(g["summary"], "the real claude finished", "{g}");
    // The tool's result went back to the model; its answer ends the turn
    // (a Stop), and nothing more is typed for the ended goal.
    rc.wait_screen(&id, "TOOL-DONE(");
    support::wait_until("claude is idle", REAL_DEADLINE, || {
        rc.hangar.session(&id)["activity"] == "idle"
    });
    assert_eq!(continuations(&rc), 1, "one continuation, then goal_done");
    assert!(
        !rc.hangar.screen(&id).contains("Do you want to proceed?"),
        "goal_done never asks permission"
    );
}

#[test]
fn a_goal_with_the_real_claude_stops_at_max_turns() {
    let Some(rc) = RealCli::start() else { return };
    rc.hangar.start_daemon();
    let id = rc.hangar.new_agent(&["--provider", "claude"]);
    rc.wait_ready(&id);
    rc.hangar
        .ok(&["goal", &id, "count to three", "--max-turns", "2"]);
    let mut g = Value::Null;
    support::wait_until("the goal stopped at its cap", REAL_DEADLINE, || {
        g = goal_of(&rc, &id);
        g["state"] == "stopped"
    });
    assert_eq!(g["turns"], 2, "{g}");
    assert_eq!(g["reason"], "reached --max-turns 2", "{g}");
    rc.wait_screen(&id, "ANSWER(Continue with the goal (turn 2 of 2)");
    support::wait_until("claude is idle", REAL_DEADLINE, || {
        rc.hangar.session(&id)["activity"] == "idle"
    });
    assert_eq!(
        continuations(&rc),
        1,
        "the first prompt and one continuation"
    );
}

#[test]
fn hangars_claude_runs_with_claudes_agent_view_off_so_no_supervisor_of_its_own_takes_it() {
    // Claude Code's on-demand daemon adopts a session killed with
    // background work and then refuses its `--resume` (issue 46): hangar's
    // sessions run with `CLAUDE_CODE_DISABLE_AGENT_VIEW=1`.
    let Some(rc) = RealCli::start() else { return };
    rc.hangar.start_daemon();
    let id = rc.hangar.new_agent(&["--provider", "claude"]);
    rc.wait_ready(&id);
    let env = support::environ(rc.hangar.pid_of(&id));
    assert!(
        env.iter()
            .any(|kv| kv == "CLAUDE_CODE_DISABLE_AGENT_VIEW=1"),
        "claude runs without CLAUDE_CODE_DISABLE_AGENT_VIEW=1"
    );
    // The real binary, run in the session's own environment (as its own
    // Bash tool would run it), keeps nothing in the background.
    let vars = env.iter().filter_map(|kv| kv.split_once('='));
    let out = std::process::Command::new(&rc.clis.claude)
        .args(["--bg", "hello"])
        .env_clear()
        .envs(vars)
        .current_dir(&rc.hangar.work)
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run claude --bg");
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        said.contains("'--bg' is disabled by CLAUDE_CODE_DISABLE_AGENT_VIEW"),
        "claude --bg in the session's environment said: {said}"
    );
}
