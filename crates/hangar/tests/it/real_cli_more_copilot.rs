//! Real-CLI conformance, GitHub Copilot CLI 1.0.102 as a hangar custom
//! provider, without a GitHub account (`COPILOT_OFFLINE` and a BYOK provider
//! on the fake API's chat completions, docs/clis/copilot.md): it answers,
//! and its event log under the id hangar gave with `--session-id` records
//! the turn.

use std::fs;

use serde_json::Value;

use crate::real_cli_more_support::{NpmCli, World, installed_or_skip, offline};
use crate::support::wait_until;

const COPILOT: NpmCli = NpmCli {
    package: "@github/copilot",
    version: "1.0.102",
    bin: "copilot",
};

const SESSION_ID: &str = "8c3e1f5a-9d27-4b60-a1e4-6f0b2d7c9e83";

#[test]
fn copilot_cli_answers_offline_through_a_byok_provider_and_logs_the_turn_under_its_given_id() {
    let Some(bin) = installed_or_skip(COPILOT) else {
        return;
    };
    let mut world = World::start();
    let copilot_home = offline::copilot(&mut world);
    world.hangar.write_config(&format!(
        "[providers.copilot-as-custom]\nprogram = \"{}\"\nargs = [\"--session-id\", \"{SESSION_ID}\"]\n",
        bin.display()
    ));
    world.hangar.start_daemon();
    let id = world.hangar.new_agent(&["--provider", "copilot-as-custom"]);
    world.wait_screen(&id, "? help");

    world.hangar.ok(&["send", &id, "hello copilot"]);
    let turn = world.wait_turn("hello copilot");
    assert_eq!(turn["api"], "chat", "the turn went elsewhere: {turn}");
    world.wait_screen(&id, "ANSWER(hello copilot)");

    let events = copilot_home
        .join("session-state")
        .join(SESSION_ID)
        .join("events.jsonl");
    let read = || -> Vec<Value> {
        fs::read_to_string(&events)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    };
    wait_until(
        "Copilot's event log ends the turn",
        crate::real_cli_support::REAL_DEADLINE,
        || read().iter().any(|e| e["type"] == "assistant.turn_end"),
    );
    let log = read();
    assert_eq!(log[0]["type"], "session.start");
    assert_eq!(log[0]["data"]["sessionId"], SESSION_ID);
    assert!(
        log.iter()
            .any(|e| e["type"] == "user.message" && e["data"]["content"] == "hello copilot"),
        "the prompt is not in the event log: {log:?}"
    );
}
