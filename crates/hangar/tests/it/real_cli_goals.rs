//! Real-CLI conformance, issue 29: goals with the real codex 0.171.0 and
//! OpenCode 1.18.33. Neither has claude's `Stop` hook: hangar learns each
//! end of turn from codex's rollout (`task_complete`) and from OpenCode's
//! database (the turn's last assistant message finished, `finish: "stop"`),
//! never from quiet output, and types the continuation there. OpenCode is
//! given hangar's MCP server (in `OPENCODE_CONFIG_CONTENT`), so its goal
//! ends through `goal_done`, called the way OpenCode calls an MCP tool: an
//! OpenAI-compatible `tool_calls` entry of `hangar_goal_done`. (The real
//! claude's goals, ended through `goal_done`, are in `real_cli_claude.rs`.)
//!
//! Skipped with one line when the CLIs cannot be installed.

use crate::real_cli_support;
use crate::support;

use real_cli_support::{REAL_DEADLINE, RealCli};
use serde_json::{Value, json};

/// Requests to `api` whose last user text is a goal continuation hangar
/// typed.
fn continuations(rc: &RealCli, api: &str) -> usize {
    rc.api
        .requests_to(api)
        .iter()
        .filter(|r| {
            r["turn"]
                .as_str()
                .is_some_and(|t| t.starts_with("Continue with the goal"))
        })
        .count()
}

/// Gives session `id` (a ready `provider`) a goal of two turns at most and
/// checks the loop: the goal typed, one continuation at the end of its
/// first turn, answered on screen, and the goal stopped at the end of the
/// second, nothing typed after.
fn a_goal_runs_to_its_max_turns(rc: &RealCli, id: &str, api: &str) {
    rc.hangar
        .ok(&["goal", id, "count to three", "--max-turns", "2"]);
    let mut g = Value::Null;
    support::wait_until("the goal stopped at its cap", REAL_DEADLINE, || {
        g = rc.hangar.session(id)["goal"].clone();
        g["state"] == "stopped"
    });
    assert_eq!(g["turns"], 2, "{g}");
    assert_eq!(g["reason"], "reached --max-turns 2", "{g}");
    // The continuation reached the model and its answer is drawn.
    rc.api
        .wait_request("the continuation reached the model", |r| {
            r["api"] == api
                && r["turn"]
                    .as_str()
                    .is_some_and(|t| t.starts_with("Continue with the goal (turn 2 of 2)"))
        });
    rc.wait_screen(id, "ANSWER(Continue with the goal");
    support::wait_until("the agent is idle", REAL_DEADLINE, || {
        rc.hangar.session(id)["activity"] == "idle"
    });
    assert_eq!(
        continuations(rc, api),
        1,
        "the goal's prompt and one continuation"
    );
    let goals: Vec<Value> = rc
        .hangar
        .journal()
        .into_iter()
        .filter(|e| e["event"] == "goal" && e["session"] == id)
        .collect();
    assert!(
        goals.iter().any(|e| e["state"] == "stopped"),
        "the journal says the goal stopped: {goals:?}"
    );
}

#[test]
fn a_goal_with_the_real_codex_is_continued_at_its_rollout_s_turn_ends_until_max_turns() {
    let Some(rc) = RealCli::start() else { return };
    rc.hangar.start_daemon();
    let id = rc.hangar.new_agent(&["--provider", "codex"]);
    rc.wait_ready(&id);
    a_goal_runs_to_its_max_turns(&rc, &id, "responses");
}

#[test]
fn a_goal_with_the_real_opencode_is_continued_at_its_database_s_turn_ends_until_max_turns() {
    let Some(rc) = RealCli::start() else { return };
    rc.hangar.start_daemon();
    let id = rc.hangar.new_agent(&["--provider", "opencode"]);
    rc.wait_ready(&id);
    a_goal_runs_to_its_max_turns(&rc, &id, "chat");
}

#[test]
fn a_goal_with_the_real_opencode_ends_through_goal_done() {
    let Some(rc) = RealCli::start() else { return };
    // The first continuation is answered with a tool call of hangar's
    // goal_done as OpenCode 1.18.33 offers it (`<server>_<tool>`): the fake
    // answers it only when the request offers a tool of that name.
    rc.api.script(json!({"rules": [
        {"when": "Continue with the goal", "times": 1, "tool": {
            "name": "hangar_goal_done",
            "input": {"status": "done", "summary": "the real opencode finished"}}}
    ]}));
    // A person whose OpenCode asks before every tool: hangar's goal_done
    // still runs without asking (hangar allows it in the config it adds).
    rc.opencode_settings(json!({"permission": {"*": "ask"}}));
    rc.hangar.start_daemon();
    let id = rc.hangar.new_agent(&["--provider", "opencode"]);
    rc.wait_ready(&id);
    let v = rc
        .hangar
        .json(&["goal", &id, "say hello", "--max-turns", "5"]);
    assert_eq!(v["goal"]["state"], "running", "{v}");
    let mut g = Value::Null;
    support::wait_until(
        "opencode ended its goal through goal_done",
        REAL_DEADLINE,
        || {
            g = rc.hangar.session(&id)["goal"].clone();
            g["state"] != "running"
        },
    );
    assert_eq!(g["state"], "done", "{g}");
    assert_eq!(g["summary"], "the real opencode finished", "{g}");
    // The tool's result (hangar's answer) went back to the model, whose
    // answer ends the turn; nothing more is typed for the ended goal.
    rc.api
        .wait_request("goal_done's result reached the model", |r| {
            r["api"] == "chat"
                && r["reply"]["text"]
                    .as_str()
                    .is_some_and(|t| t.starts_with("TOOL-DONE("))
        });
    rc.wait_screen(&id, "TOOL-DONE(");
    support::wait_until("opencode is idle", REAL_DEADLINE, || {
        rc.hangar.session(&id)["activity"] == "idle"
    });
    assert_eq!(
        continuations(&rc, "chat"),
        1,
        "one continuation, then goal_done"
    );
    assert!(
        !rc.hangar.screen(&id).contains("Permission required"),
        "goal_done never asks permission"
    );
}
