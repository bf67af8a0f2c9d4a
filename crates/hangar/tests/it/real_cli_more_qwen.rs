//! Real-CLI conformance, Qwen Code 0.24.4 as a hangar custom provider,
//! offline against the fake API's chat completions (docs/clis/qwen.md): it
//! answers, keeps its transcript under the id hangar gave it with
//! `--session-id`, and its live-process record names that id.

use std::fs;

use serde_json::Value;

use crate::real_cli_more_support::{NpmCli, World, installed_or_skip, offline};
use crate::support::wait_until;

const QWEN: NpmCli = NpmCli {
    package: "@qwen-code/qwen-code",
    version: "0.24.4",
    bin: "qwen",
};

const SESSION_ID: &str = "5b0e9c27-3d41-4f6a-8e12-7c9a0d4b6f31";

#[test]
fn qwen_code_answers_through_chat_completions_under_the_session_id_it_was_given() {
    let Some(bin) = installed_or_skip(QWEN) else {
        return;
    };
    let mut world = World::start();
    let qwen_home = offline::qwen(&mut world);
    world.hangar.write_config(&format!(
        "[providers.qwen-as-custom]\nprogram = \"{}\"\nargs = [\"--auth-type\", \"openai\", \
         \"--openai-base-url\", \"{}/v1\", \"--openai-api-key\", \"sk-fake-qwen\", \
         \"--approval-mode\", \"default\", \"--session-id\", \"{SESSION_ID}\"]\n",
        bin.display(),
        world.api.http_url()
    ));
    world.hangar.start_daemon();
    let id = world.hangar.new_agent(&["--provider", "qwen-as-custom"]);
    world.wait_screen(&id, "Type your message");
    // Qwen Code drops what is typed while it still says `Initializing...`.
    wait_until(
        "Qwen Code finished initialising",
        crate::real_cli_support::REAL_DEADLINE,
        || {
            let out = world.hangar.run(&["screen", &id]);
            !String::from_utf8_lossy(&out.stdout).contains("Initializing")
        },
    );

    world.hangar.ok(&["send", &id, "hello qwen"]);
    let turn = world.wait_turn("hello qwen");
    assert_eq!(turn["api"], "chat", "the turn went elsewhere: {turn}");
    assert_eq!(turn["headers"]["authorization"], "Bearer sk-fake-qwen");
    world.wait_screen(&id, "ANSWER(hello qwen)");

    // The transcript is `projects/<cwd, non-alphanumerics as ->/chats/<id>.jsonl`.
    let slug: String = world
        .hangar
        .work
        .display()
        .to_string()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    let transcript = qwen_home
        .join("projects")
        .join(&slug)
        .join("chats")
        .join(format!("{SESSION_ID}.jsonl"));
    wait_until(
        "Qwen Code's transcript holds the answer",
        crate::real_cli_support::REAL_DEADLINE,
        || fs::read_to_string(&transcript).is_ok_and(|t| t.contains("ANSWER(hello qwen)")),
    );
    let lines: Vec<Value> = fs::read_to_string(&transcript)
        .expect("read the transcript")
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    assert!(
        lines.iter().all(|l| l["sessionId"] == SESSION_ID),
        "a transcript line names another session: {lines:?}"
    );

    // `sessions/<pid>.json`: the running process's own session.
    let live: Vec<Value> = fs::read_dir(qwen_home.join("sessions"))
        .expect("Qwen Code's sessions folder")
        .flatten()
        .filter_map(|e| fs::read(e.path()).ok())
        .filter_map(|b| serde_json::from_slice(&b).ok())
        .collect();
    assert!(
        live.iter()
            .any(|s| s["sessionId"] == SESSION_ID
                && s["cwd"] == world.hangar.work.display().to_string()),
        "no live record names {SESSION_ID}: {live:?}"
    );
}
