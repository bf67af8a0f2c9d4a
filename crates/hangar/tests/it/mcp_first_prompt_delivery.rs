//! `create_agent`'s first prompt and a lost Enter (issue 16, defect 6): a
//! freshly drawn claude sometimes leaves a pasted prompt unsubmitted (seen
//! with the real Claude Code 2.1.197, docs/src/cli-facts.md; the fake loses the
//! first `FAKE_AGENT_SWALLOW_ENTERS` Enters the same way). The child's first
//! prompt must then be submitted by pressing Enter again, typed once; and a
//! prompt that never starts a turn is reported as not delivered, never
//! recorded as delivered.

use crate::support;

use serde_json::{Value, json};
use support::mcp::Mcp;
use support::{DEADLINE, Hangar, user_entries};

#[test]
fn a_childs_first_prompt_whose_enter_was_lost_is_entered_again_and_answered_once() {
    let h = Hangar::with_env(&[("FAKE_AGENT_SWALLOW_ENTERS", "1")]);
    let parent = h.new_pane();
    h.wait_screen(&parent, "fake-agent claude session");
    let mcp = Mcp::launch(&h, &parent);
    let made = mcp.ok(
        "create_agent",
        json!({"run": "r1", "role": "coder", "prompt": "first-of-child"}),
    );
    assert_eq!(made["prompt_delivered"], true, "{made}");
    let child = made["id"].as_str().expect("an id").to_owned();
    let waited = mcp.ok(
        "wait_agents",
        json!({"sessions": [child], "timeout_ms": 30000}),
    );
    assert_eq!(waited["all_finished"], true, "{waited}");
    let psid = h.wait_transcript_id(&child);
    let transcript = h.claude_transcript(&h.work, &psid);
    assert_eq!(
        user_entries(&transcript, "first-of-child"),
        1,
        "the prompt was typed once and submitted once"
    );
}

#[test]
fn a_childs_first_prompt_that_never_starts_a_turn_is_reported_undelivered() {
    // Every Enter is lost: the text never leaves the input line.
    let h = Hangar::with_env(&[("FAKE_AGENT_SWALLOW_ENTERS", "100")]);
    let parent = h.new_pane();
    h.wait_screen(&parent, "fake-agent claude session");
    let mcp = Mcp::launch(&h, &parent);
    let made = mcp.ok(
        "create_agent",
        json!({"run": "r1", "role": "coder", "prompt": "stuck-first"}),
    );
    assert_eq!(
        made["prompt_delivered"], false,
        "a prompt no turn took is claimed delivered: {made}"
    );
    let child = made["id"].as_str().expect("an id").to_owned();
    // The orchestration ledger says why, and does not record a delivery.
    let ledger: Value = serde_json::from_str(
        &std::fs::read_to_string(h.home.join("orchestration.json")).expect("the ledger"),
    )
    .expect("the ledger is JSON");
    let first = &ledger["first_prompts"][&child];
    assert!(first["delivered_at_ms"].is_null(), "{first}");
    assert!(
        first["undelivered"]
            .as_str()
            .is_some_and(|why| why.contains("no turn started")),
        "{first}"
    );
    h.wait_until("the child's screen shows the typed text", DEADLINE, || {
        h.screen(&child).contains("stuck-first")
    });
    assert!(!h.screen(&child).contains("answer: stuck-first"));
}
