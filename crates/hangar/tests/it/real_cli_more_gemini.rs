//! Real-CLI conformance, Gemini CLI 0.61.0 as hangar's shipped `gemini`
//! provider, offline against the fake API's Gemini endpoints
//! (docs/clis/gemini.md): it answers through
//! `streamGenerateContent?alt=sse`, its model router's JSON side request is
//! answered, and it records the session under the id hangar gave it with
//! `--session-id`, where hangar sees the turn start.

use std::fs;

use crate::real_cli_more_support::{NpmCli, World, installed_or_skip, offline};

const GEMINI: NpmCli = NpmCli {
    package: "@google/gemini-cli",
    version: "0.61.0",
    bin: "gemini",
};

#[test]
#[ignore = "open race (RELIABILITY.md, Races found by load): under the whole suite's load Gemini \
            CLI 0.61 sometimes takes a prompt out of its input box and never starts its turn \
            (hangar sees it now and the send says not delivered); run with --ignored"]
fn gemini_cli_answers_through_the_fake_gemini_api_under_the_session_id_it_was_given() {
    let Some(bin) = installed_or_skip(GEMINI) else {
        return;
    };
    let mut world = World::start();
    let state = offline::gemini(&mut world);
    world.hangar.write_config(&format!(
        "[providers.gemini]\nprogram = \"{}\"\n",
        bin.display()
    ));
    world.hangar.start_daemon();
    let id = world.hangar.new_agent(&["--provider", "gemini"]);
    // The id hangar passed with `--session-id` (Gemini CLI takes any new UUID).
    let session_id = world.hangar.provider_id(&id).0.expect("a minted id");
    world.wait_screen_settled(
        &id,
        "Type your message",
        std::time::Duration::from_millis(1500),
    );

    // Its session file shows the turn start: the send says so (and had
    // Gemini CLI dropped the Enter, as it did under load when hangar could
    // not see its turns, delivery would have pressed it again).
    let sent = world.hangar.json(&["send", &id, "hello gemini"]);
    assert_eq!(sent["confirmed"], true, "{sent}");
    // The answer first: its failure shows the screen and the requests.
    world.wait_screen(&id, "ANSWER(hello gemini)");
    // The model router's `generateContent` carries the same turn first;
    // the turn itself streams.
    let turn = world
        .api
        .wait_request("the turn \"hello gemini\" streamed", |r| {
            r["turn"] == "hello gemini"
                && r["target"]
                    .as_str()
                    .is_some_and(|t| t.ends_with(":streamGenerateContent?alt=sse"))
        });
    assert_eq!(turn["api"], "gemini", "the turn went elsewhere: {turn}");
    assert_eq!(turn["headers"]["x-goog-api-key"], "fake-gemini-key");
    world.wait_screen(&id, "ANSWER(hello gemini)");

    // The model router asked for JSON and got a value of its schema, so it
    // did not retry (a text answer made it retry until the turn gave up).
    let router: Vec<_> = world
        .api
        .requests()
        .into_iter()
        .filter(|r| !r["body"]["generationConfig"]["responseJsonSchema"].is_null())
        .collect();
    for r in &router {
        let text = r["reply"]["text"].as_str().unwrap_or("");
        assert!(
            serde_json::from_str::<serde_json::Value>(text).is_ok_and(|v| v.is_object()),
            "a JSON side request got {text:?}"
        );
    }

    // The session file is named by the id's first 8 characters and its
    // first line names the whole id.
    let chats: Vec<_> = fs::read_dir(state.join("tmp"))
        .expect("Gemini CLI's tmp folder")
        .flatten()
        .flat_map(|project| {
            fs::read_dir(project.path().join("chats"))
                .into_iter()
                .flatten()
        })
        .flatten()
        .map(|e| e.path())
        .collect();
    let ours = chats
        .iter()
        .find(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.ends_with(&format!("-{}.jsonl", &session_id[..8])))
        })
        .unwrap_or_else(|| panic!("no session file for {session_id} among {chats:?}"));
    let first = fs::read_to_string(ours).expect("read the session file");
    let header: serde_json::Value =
        serde_json::from_str(first.lines().next().unwrap_or("")).expect("a JSON first line");
    assert_eq!(header["sessionId"], session_id.as_str());
}
