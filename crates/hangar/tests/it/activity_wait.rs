//! Issue 11 acceptance, `hangar wait ID... [--until idle|waiting|any]
//! [--timeout D]`: it returns when the agent finishes its turn, and times out
//! cleanly (exit 124, a message, and the states in its JSON).

use crate::support;

use std::fs;

use serde_json::Value;
use support::*;

fn with_config(h: &Hangar, config: &str) {
    fs::create_dir_all(&h.home).unwrap();
    fs::write(h.home.join("config.toml"), config).unwrap();
}

fn agent(h: &Hangar) -> String {
    let id = h.new_pane();
    h.wait_screen(&id, "> ");
    id
}

#[test]
fn wait_returns_once_the_agent_has_finished_its_turn() {
    let h = Hangar::new();
    with_config(&h, "[activity]\ndebounce_ms = 200\n");
    let a = agent(&h);
    h.ok(&["send", &a, "slow 1500 think it over"]);
    let v = h.json(&["wait", &a, "--until", "idle", "--timeout", "60s"]);
    assert_eq!(v["done"], true, "{v}");
    assert_eq!(v["timed_out"], false);
    assert_eq!(v["sessions"][0]["id"], a.as_str());
    assert_eq!(v["sessions"][0]["activity"], "idle");
    // It waited for the answer, not just for the prompt.
    assert!(
        h.screen(&a).contains("answer: think it over"),
        "wait returned before the turn finished:\n{}",
        h.screen(&a)
    );
    assert_eq!(h.session(&a)["activity"], "idle");
}

#[test]
fn wait_until_any_returns_when_the_agent_asks_a_question() {
    let h = Hangar::new();
    with_config(&h, "[activity]\ndebounce_ms = 200\n");
    let a = agent(&h);
    let b = h.split(&a, "vertical");
    h.wait_screen(&b, "> ");
    h.ok(&["send", &a, "ask which branch"]);
    h.ok(&["send", &b, "slow 1000 fine"]);
    let v = h.json(&["wait", &a, &b[..8], "--until", "any", "--timeout", "60s"]);
    assert_eq!(v["done"], true, "{v}");
    let states: Vec<&str> = v["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["activity"].as_str().unwrap())
        .collect();
    assert_eq!(states, vec!["waiting", "idle"], "{v}");
    let v = h.json(&["wait", &a, "--until", "waiting", "--timeout", "10s"]);
    assert_eq!(v["done"], true);
}

#[test]
fn wait_times_out_cleanly_while_the_agent_is_still_working() {
    let h = Hangar::new();
    with_config(&h, "[activity]\ndebounce_ms = 200\n");
    let a = agent(&h);
    h.ok(&["send", &a, "slow 600000 never mind"]);
    h.wait_screen(&a, "working...");
    let out = h.run(&["--json", "wait", &a, "--timeout", "1s"]);
    assert_eq!(out.status.code(), Some(124), "a timeout exits 124");
    let v: Value = serde_json::from_slice(&out.stdout).expect("one JSON document");
    assert_eq!(v["timed_out"], true, "{v}");
    assert_eq!(v["sessions"][0]["activity"], "working");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("timed out waiting for"), "{stderr}");
    // The daemon and the agent carry on.
    assert_eq!(h.state_of(&a), "live");
    assert_eq!(h.session(&a)["activity"], "working");
}

#[test]
fn wait_refuses_an_unknown_session_and_a_bad_state() {
    let h = Hangar::new();
    let err = h.fail(&["wait", "nosuchsession", "--timeout", "1s"]);
    assert!(err.contains("no session"), "{err}");
    let a = h.new_pane();
    let err = h.fail(&["wait", &a, "--until", "sleeping"]);
    assert!(err.contains("sleeping"), "{err}");
}
