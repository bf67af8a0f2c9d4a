//! Issue 32, the real CLIs inside hangar's sandbox: Claude Code 2.1.197 and
//! Codex 0.171.0 from npm (the conformance harness, `real_cli_support`),
//! each started with `--sandbox` by the real daemon, inside real bubblewrap,
//! reaching `hangar-fake-model-api` only through hangar's proxy (HTTPS on
//! 127.0.0.2, which is in no agent's `NO_PROXY`, so it stands for a remote
//! API; the proxy trusts the fake API's CA through `[proxy] extra_ca_file`).
//!
//! What a person would notice: the answer on screen, the conversation's
//! transcript found (in the session's own sandbox folder), hibernate and
//! wake resume the same conversation, a daemon restart restores it; the
//! real key reaches the model and never the agent; the agent's hooks and
//! hangar's MCP server reach the daemon from inside (its own socket); the
//! CLI's own sandbox is off and `hangar ls` says so.
//!
//! Skipped with one line when bwrap, npm or the registry is missing, unless
//! required (`HANGAR_TESTS_REQUIRED=1`).

use crate::real_cli_support;
use crate::support;

use std::fs;
use std::path::Path;

use real_cli_support::{ANTHROPIC_KEY, REAL_DEADLINE, RealCli};
use serde_json::{Value, json};

fn have_bwrap() -> bool {
    let found = std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join("bwrap").is_file()));
    if !found {
        hangar_testkit::required::missing(
            "real_cli_sandboxed",
            "bwrap is not installed (Debian package bubblewrap)",
        );
    }
    found
}

/// The real CLIs' world with the proxy capturing the fake API's HTTPS side.
fn sandboxed_world(extra_config: &str) -> Option<RealCli> {
    if !have_bwrap() {
        return None;
    }
    let mut rc = RealCli::start()?;
    rc.hangar_config(&format!(
        "[proxy]\nallow_hosts = [\"127.0.0.2\"]\nextra_ca_file = \"{}\"\n{extra_config}",
        rc.api.ca_file().display()
    ));
    rc.hangar.set_env("ANTHROPIC_BASE_URL", rc.api.https_url());
    Some(rc)
}

/// Whether any file under `dir` contains `needle`.
fn contains_text(dir: &Path, needle: &str) -> bool {
    let Ok(entries) = fs::read_dir(dir) else {
        return false;
    };
    entries.flatten().any(|e| {
        let p = e.path();
        if p.is_dir() {
            contains_text(&p, needle)
        } else {
            fs::read(&p).is_ok_and(|b| String::from_utf8_lossy(&b).contains(needle))
        }
    })
}

fn body_of(rc: &RealCli, api: &str, turn: &str) -> String {
    rc.api
        .wait_request(&format!("the turn {turn:?} reached the model"), |r| {
            r["api"] == api && r["turn"] == turn
        })["body"]
        .to_string()
}

#[test]
fn the_real_claude_runs_sandboxed_answers_through_the_proxy_resumes_and_is_restored() {
    let Some(rc) = sandboxed_world("") else {
        return;
    };
    rc.hangar.start_daemon();
    let id = rc.hangar.new_agent(&["--provider", "claude", "--sandbox"]);
    // No onboarding, key or trust question: hangar gave the sandbox's own
    // `.claude.json` what the person's says.
    rc.wait_ready(&id);
    let row = rc.hangar.session(&id);
    assert_eq!(row["sandbox"]["kind"], "bubblewrap", "{row}");
    assert_eq!(row["sandbox"]["network"], "proxy", "{row}");
    let own = row["sandbox"]["agent_sandbox"].as_str().unwrap_or_default();
    assert!(own.starts_with("off"), "{row}");

    rc.ask(&id, "inside the walls");
    let turn = rc
        .api
        .wait_request("the turn reached the model over TLS", |r| {
            r["api"] == "anthropic" && r["turn"] == "inside the walls"
        });
    assert_eq!(turn["tls"], true, "{turn}");
    // The real key reached the model; the agent only ever held a placeholder.
    let sent_key = turn["headers"]["x-api-key"].as_str().unwrap_or_default();
    assert_eq!(sent_key, ANTHROPIC_KEY, "{turn}");
    let pids = rc.processes_matching("claude");
    assert!(!pids.is_empty());
    for pid in &pids {
        let env = support::environ(*pid).join("\n");
        assert!(!env.contains(ANTHROPIC_KEY), "pid {pid} holds the real key");
    }
    // Its own settings turn Claude Code's own sandbox off.
    let settings = rc.hangar.home.join("hooks").join(format!("{id}.json"));
    let settings: Value = serde_json::from_slice(&fs::read(&settings).unwrap()).unwrap();
    assert_eq!(settings["sandbox"]["enabled"], false, "{settings}");

    // The transcript is in the session's own folder, found by hangar.
    let own_folder = rc.hangar.home.join("sandbox").join(&id).join("claude");
    assert!(contains_text(&own_folder, "ANSWER(inside the walls)"));
    assert!(!contains_text(
        &rc.hangar.claude_dir.join("projects"),
        "inside the walls"
    ));
    let psid = rc.wait_provider_id(&id);
    assert!(
        contains_text(&own_folder.join("projects"), &psid),
        "the provider id {psid} is not the transcript's"
    );
    assert!(!contains_text(
        &rc.hangar.home.join("sandbox"),
        ANTHROPIC_KEY
    ));

    // Hibernate and wake: the same conversation, inside its walls again.
    rc.hangar.ok(&["hibernate", &id]);
    rc.wait_state(&id, "hibernated");
    rc.hangar.ok(&["wake", &id]);
    let row = rc.wait_state(&id, "live");
    assert_eq!(row["started"], "resumed", "{row}");
    assert!(!row["sandbox"].is_null());
    rc.wait_ready(&id);
    rc.ask(&id, "after the wake");
    let body = body_of(&rc, "anthropic", "after the wake");
    assert!(
        body.contains("ANSWER(inside the walls)"),
        "not its own conversation"
    );

    // A daemon restart restores it, resumed, still sandboxed.
    rc.hangar.shutdown();
    rc.hangar.start_daemon();
    rc.hangar.wait_restore_complete();
    let row = rc.wait_state(&id, "live");
    assert_eq!(row["started"], "resumed", "{row}");
    assert_eq!(row["provider_session_id"], psid.as_str(), "{row}");
    assert_eq!(row["sandbox"]["kind"], "bubblewrap", "{row}");
    rc.wait_ready(&id);
    rc.ask(&id, "after the restart");
    let body = body_of(&rc, "anthropic", "after the restart");
    assert!(
        body.contains("ANSWER(after the wake)"),
        "not its own conversation"
    );
}

#[test]
fn a_sandboxed_real_claudes_hooks_and_mcp_tools_reach_hangar_from_inside() {
    const CREATE: &str = "mcp__hangar__create_agent";
    // Activity from the hooks alone: a state seen is a hook that arrived.
    let Some(rc) = sandboxed_world("[activity]\nsources = [\"hooks\"]\ndebounce_ms = 200\n") else {
        return;
    };
    let outside = rc.hangar.root.join("outside-folder");
    fs::create_dir_all(&outside).unwrap();
    rc.api.script(json!({"rules": [
        {"when": "make a child", "tool": {"name": CREATE, "input": {
            "provider": "shell", "title": "boxed child", "role": "helper"}}},
        {"when": "escape", "tool": {"name": CREATE, "input": {
            "provider": "shell", "title": "escaped child", "cwd": outside}}}
    ]}));
    rc.hangar.start_daemon();
    let id = rc.hangar.new_agent(&["--provider", "claude", "--sandbox"]);
    rc.wait_ready(&id);

    // A hook event: the Stop hook of the first turn, from inside the walls.
    rc.ask(&id, "hello hooks");
    support::wait_until("a hook said the turn ended", REAL_DEADLINE, || {
        rc.hangar.session(&id)["activity"] == "idle"
    });
    // The session-start hook named its conversation.
    assert!(rc.hangar.provider_id(&id).0.is_some());

    // An MCP tool call: claude was offered hangar's tools and one works.
    let before = rc.api.requests().len();
    rc.submit(&id, "make a child");
    rc.wait_tool_call(CREATE, before);
    rc.wait_tool_question(&id);
    rc.approve_tool(&id);
    let mut child = Value::Null;
    support::wait_until("the tool call created a child", REAL_DEADLINE, || {
        child = rc
            .hangar
            .ls()
            .into_iter()
            .find(|r| r["title"] == "boxed child")
            .unwrap_or(Value::Null);
        !child.is_null()
    });
    assert_eq!(child["parent"], id.as_str(), "{child}");
    // A sandboxed agent's child is sandboxed too.
    assert_eq!(child["sandbox"]["kind"], "bubblewrap", "{child}");
    rc.wait_screen(&id, "TOOL-DONE(");

    // A child in a folder outside its own is refused.
    rc.submit(&id, "escape");
    rc.wait_tool_question(&id);
    rc.approve_tool(&id);
    support::wait_until("the refusal went back to the model", REAL_DEADLINE, || {
        rc.api.requests().iter().any(|r| {
            r["turn"]
                .as_str()
                .is_some_and(|t| t.contains("outside your folder"))
                || r["body"].to_string().contains("outside your folder")
        })
    });
    assert!(
        !rc.hangar.ls().iter().any(|r| r["title"] == "escaped child"),
        "a child was made outside the parent's folder"
    );
}

#[test]
fn the_real_codex_runs_sandboxed_with_its_own_sandbox_off_answers_and_resumes() {
    let Some(rc) = sandboxed_world("") else {
        return;
    };
    rc.use_https_api();
    rc.hangar.start_daemon();
    let id = rc.hangar.new_agent(&["--provider", "codex", "--sandbox"]);
    rc.wait_ready(&id);
    let row = rc.hangar.session(&id);
    let own = row["sandbox"]["agent_sandbox"].as_str().unwrap_or_default();
    assert!(own.starts_with("off"), "{row}");
    // Started with its own sandbox off (the walls around it hold its
    // commands): the real codex took the flag.
    let codex = rc.processes_matching("danger-full-access");
    assert!(
        !codex.is_empty(),
        "codex was not started with --sandbox danger-full-access"
    );

    rc.ask(&id, "codex inside");
    let turn = rc
        .api
        .wait_request("the turn reached the model over TLS", |r| {
            r["api"] == "responses" && r["turn"] == "codex inside"
        });
    assert_eq!(turn["tls"], true, "{turn}");
    // Its key (the variable its config's `env_key` names) reached the
    // model; inside it was a placeholder.
    let auth = turn["headers"]["authorization"]
        .as_str()
        .unwrap_or_default();
    assert_eq!(
        auth,
        format!("Bearer {}", real_cli_support::OPENAI_KEY),
        "{turn}"
    );
    for pid in rc.processes_matching("codex") {
        let env = support::environ(pid).join("\n");
        assert!(
            !env.contains(real_cli_support::OPENAI_KEY),
            "pid {pid} holds the real key"
        );
    }
    // Its rollout is in the session's own folder, and hangar found it.
    let own_folder = rc.hangar.home.join("sandbox").join(&id).join("codex");
    assert!(contains_text(
        &own_folder.join("sessions"),
        "ANSWER(codex inside)"
    ));
    let thread = rc.wait_provider_id(&id);
    assert!(contains_text(&own_folder.join("sessions"), &thread));
    assert!(!contains_text(
        &rc.hangar.codex_home.join("sessions"),
        "codex inside"
    ));

    rc.hangar.ok(&["hibernate", &id]);
    rc.wait_state(&id, "hibernated");
    rc.hangar.ok(&["wake", &id]);
    let row = rc.wait_state(&id, "live");
    assert_eq!(row["started"], "resumed", "{row}");
    rc.wait_ready(&id);
    rc.ask(&id, "codex again");
    let body = body_of(&rc, "responses", "codex again");
    assert!(
        body.contains("ANSWER(codex inside)"),
        "not its own conversation"
    );

    rc.hangar.shutdown();
    rc.hangar.start_daemon();
    rc.hangar.wait_restore_complete();
    let row = rc.wait_state(&id, "live");
    assert_eq!(row["started"], "resumed", "{row}");
    assert_eq!(row["provider_session_id"], thread.as_str(), "{row}");
}

#[test]
fn a_sandboxed_real_opencodes_conversation_is_found_in_its_own_database_and_resumed() {
    let Some(rc) = sandboxed_world("") else {
        return;
    };
    rc.use_https_api();
    rc.hangar.start_daemon();
    let id = rc
        .hangar
        .new_agent(&["--provider", "opencode", "--sandbox"]);
    rc.wait_ready(&id);
    rc.ask(&id, "opencode inside");
    let turn = rc.api.wait_request("the turn reached the model", |r| {
        r["api"] == "chat" && r["turn"] == "opencode inside"
    });
    assert_eq!(turn["tls"], true, "{turn}");
    // Its database is in the session's own folder, where hangar learnt its
    // conversation from; the person's OpenCode data has none of it.
    let db = rc
        .hangar
        .home
        .join("sandbox")
        .join(&id)
        .join("opencode-data")
        .join("opencode.db");
    assert!(db.is_file(), "{} is missing", db.display());
    let conversation = rc.wait_provider_id(&id);
    assert!(conversation.starts_with("ses_"), "{conversation}");
    assert!(!contains_text(&rc.xdg.join("data"), "opencode inside"));

    rc.hangar.ok(&["hibernate", &id]);
    rc.wait_state(&id, "hibernated");
    rc.hangar.ok(&["wake", &id]);
    let row = rc.wait_state(&id, "live");
    assert_eq!(row["started"], "resumed", "{row}");
    assert_eq!(row["provider_session_id"], conversation.as_str(), "{row}");
    rc.wait_ready(&id);
    rc.ask(&id, "opencode again");
    let body = body_of(&rc, "chat", "opencode again");
    assert!(
        body.contains("ANSWER(opencode inside)"),
        "not its own conversation"
    );
}
