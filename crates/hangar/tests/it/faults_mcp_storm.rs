//! Issue 18, fault: 500 MCP `create_agent` calls at once from 10 agents.
//! Ten fake claude panes each open `hangar mcp` (rmcp's client, as their MCP
//! client would) and fire their calls all at once on it: one agent asks for
//! far more children than its tree may hold, the others for many each, and
//! a few calls carry a first prompt (so they spawn). Every call is answered
//! (created, or refused with a reason); the per-tree limit holds exactly
//! under the race; the daemon stays up; and after `hangar shutdown` no
//! process of the home is left, counted from /proc.

use crate::reliability_support;
use crate::support;

use std::collections::BTreeMap;
use std::time::Instant;

use serde_json::{Value, json};
use support::mcp::{CallResult, Mcp};
use support::*;

/// hangar's limit on the agents of one orchestration tree
/// (`orchestration::tools::MAX_AGENTS`).
const TREE_LIMIT: usize = 64;
const AGENTS: usize = 10;
/// Calls per agent: the first asks for 104, the others for 44 (500 in all).
fn calls_of(agent: usize) -> usize {
    if agent == 0 { 104 } else { 44 }
}
/// Calls of each agent that carry a first prompt (so the child spawns).
const WITH_PROMPT: usize = 2;

#[test]
fn five_hundred_create_agent_calls_at_once_are_all_answered_within_the_limits() {
    let h = Hangar::new();
    h.write_config("[governor]\nmax_live = 14\n");
    h.start_daemon();
    let parents: Vec<String> = (0..AGENTS).map(|_| h.new_pane()).collect();
    for p in &parents {
        h.wait_state(p, "live");
    }
    let daemon = h.daemon_pid();
    let clients: Vec<Mcp> = parents.iter().map(|p| Mcp::launch(&h, p)).collect();

    let begun = Instant::now();
    let results: Vec<Vec<CallResult>> = std::thread::scope(|s| {
        let handles: Vec<_> = clients
            .iter()
            .enumerate()
            .map(|(i, mcp)| {
                s.spawn(move || {
                    let calls = (0..calls_of(i))
                        .map(|n| {
                            let mut args = json!({"title": format!("child {i}-{n}"), "run": format!("storm-{i}")});
                            if n < WITH_PROMPT {
                                args["prompt"] = json!(format!("hello from {i}-{n}"));
                            }
                            ("create_agent", args)
                        })
                        .collect();
                    mcp.call_all(calls)
                })
            })
            .collect();
        handles.into_iter().map(|t| t.join().unwrap()).collect()
    });
    let took = begun.elapsed();
    assert!(is_running(daemon), "the daemon is up after the storm");

    let mut refusals: BTreeMap<String, usize> = BTreeMap::new();
    let mut created = Vec::new();
    for (i, answers) in results.iter().enumerate() {
        assert_eq!(
            answers.len(),
            calls_of(i),
            "every call of agent {i} is answered"
        );
        let mut ok = 0;
        for a in answers {
            match a {
                Ok(v) => {
                    ok += 1;
                    created.push(v["id"].as_str().expect("an id").to_owned());
                }
                Err((code, text)) => {
                    assert_ne!(
                        code, "protocol",
                        "a call failed at the protocol level: {text}"
                    );
                    assert!(
                        text.contains("already has") || text.contains("already have"),
                        "a refusal says which limit: {code} {text}"
                    );
                    *refusals.entry(code.clone()).or_default() += 1;
                }
            }
        }
        let expected = calls_of(i).min(TREE_LIMIT);
        assert_eq!(ok, expected, "agent {i}: exactly {expected} created");
    }
    let rows = h.ls();
    assert_eq!(
        rows.len(),
        AGENTS + created.len(),
        "ls shows every created agent, once"
    );
    for (i, p) in parents.iter().enumerate() {
        let children = rows.iter().filter(|r| r["parent"] == p.as_str()).count();
        assert_eq!(
            children,
            calls_of(i).min(TREE_LIMIT),
            "agent {i}'s tree holds its limit"
        );
    }
    // The governor's budget holds once the spawned children settle.
    let max_live = 14;
    h.wait_until("the live budget holds", DEADLINE * 4, || {
        h.session_agent_pids().len() <= max_live
    });
    let live_after = h.session_agent_pids().len();
    let status = h.status();
    drop(clients);

    // The full tree's own children may not create more either: a limit on
    // what each caller created alone would let every child create 64 again.
    let child = rows
        .iter()
        .find(|r| r["parent"] == parents[0].as_str())
        .and_then(|r| r["id"].as_str())
        .expect("agent 0 has children")
        .to_owned();
    h.ok(&["wake", &child]);
    let grandchild = Mcp::launch(&h, &child).call(
        "create_agent",
        json!({"title": "one too many", "run": "storm-0"}),
    );
    let (code, text) = grandchild.expect_err("a full tree refuses its children too");
    assert!(text.contains("orchestration tree"), "{code}: {text}");

    h.shutdown();
    wait_until("no process of the home is left", DEADLINE, || {
        h.pids_for_home()
            .into_iter()
            .all(|p| is_zombie(p) || !exists(p))
    });
    let left = h.pids_for_home().len();
    assert_eq!(left, 0, "no orphan after shutdown");
    // The store holds every created agent.
    h.start_daemon();
    assert_eq!(
        h.ls().len(),
        AGENTS + created.len(),
        "all of them persisted"
    );
    let refused: usize = refusals.values().sum();
    reliability_support::figures(
        "mcp storm",
        format!(
            "calls=500 agents={AGENTS} created={} refused={refused} ({refusals:?}) answered_in_ms={} \
             live_after={live_after} budget_max_live={max_live} status_live={} orphans_after_shutdown={left}",
            created.len(),
            took.as_millis(),
            status["budget"]["live"],
        ),
    );
    let _: Value = status;
}
