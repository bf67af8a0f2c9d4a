//! Codex-style starts and `resume <id>`, checked through the rollout files
//! hangar's Codex adapter reads.

use crate::support;

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use support::{Setup, read_jsonl};

fn rollouts(codex_home: &Path) -> Vec<PathBuf> {
    Setup::files_under(&codex_home.join("sessions"))
}

fn payload_types(lines: &[Value]) -> Vec<String> {
    lines
        .iter()
        .map(|l| {
            format!(
                "{}/{}",
                l["type"].as_str().unwrap(),
                l["payload"]["type"].as_str().unwrap_or("-")
            )
        })
        .collect()
}

#[test]
fn a_fresh_codex_start_writes_a_dated_rollout_with_session_meta_first() {
    let setup = Setup::new();
    let codex_home = setup.home.join("codex-home");
    let mut agent = setup.start_with(
        &["-c", "model=\"o3\"", "--sandbox", "read-only", "-c", "x=1"],
        &[
            ("FAKE_AGENT_STYLE", "codex"),
            ("CODEX_HOME", codex_home.to_str().unwrap()),
        ],
    );
    let id = agent.banner_session_id();
    agent.send("hi");
    agent.wait_for_output("answer: hi");

    let files = rollouts(&codex_home);
    assert_eq!(files.len(), 1, "{files:?}");
    let file = &files[0];
    let rel = file
        .strip_prefix(codex_home.join("sessions"))
        .unwrap()
        .to_str()
        .unwrap()
        .to_string();
    // YYYY/MM/DD/rollout-YYYY-MM-DDThh-mm-ss-<id>.jsonl
    let parts: Vec<&str> = rel.split('/').collect();
    assert_eq!(parts.len(), 4, "{rel}");
    let name = parts[3];
    assert!(
        name.starts_with(&format!("rollout-{}-{}-{}T", parts[0], parts[1], parts[2])),
        "{rel}"
    );
    assert!(name.ends_with(&format!("-{id}.jsonl")), "{rel}");
    assert_eq!(
        name.len(),
        "rollout-".len() + 19 + 1 + id.len() + ".jsonl".len(),
        "{rel}"
    );

    let lines = read_jsonl(file);
    let meta = &lines[0];
    assert_eq!(meta["type"], "session_meta");
    assert_eq!(meta["payload"]["id"], id.as_str());
    assert_eq!(meta["payload"]["cwd"], setup.cwd.to_str().unwrap());
    assert_eq!(meta["payload"]["pid"], agent.pid());
    assert_eq!(meta["payload"]["resumed"], false);
    assert_eq!(
        meta["payload"]["config_overrides"],
        json!(["model=\"o3\"", "x=1"])
    );
    assert_eq!(
        meta["payload"]["ignored_args"],
        json!(["--sandbox", "read-only"])
    );
    assert!(meta["payload"]["timestamp"].is_string() && meta["payload"]["argv"].is_array());
    assert_eq!(
        payload_types(&lines[1..]),
        [
            "event_msg/task_started",
            "response_item/message",
            "event_msg/user_message",
            "response_item/message",
            "event_msg/agent_message",
            "event_msg/task_complete",
        ]
    );
    assert_eq!(lines[2]["payload"]["role"], "user");
    assert_eq!(
        lines[2]["payload"]["content"],
        json!([{ "type": "input_text", "text": "hi" }])
    );
    assert_eq!(lines[4]["payload"]["role"], "assistant");
    assert_eq!(
        lines[4]["payload"]["content"],
        json!([{ "type": "output_text", "text": "answer: hi" }])
    );
}

#[test]
fn codex_resume_subcommand_finds_and_appends_to_its_rollout() {
    let setup = Setup::new();
    let mut first = setup.start(&["--style", "codex"]);
    let id = first.banner_session_id();
    first.send("one");
    first.send("exit");
    assert_eq!(first.wait_exit().code(), Some(0));

    let mut second = setup.start(&[
        "--style",
        "codex",
        "--dangerously-bypass-approvals-and-sandbox",
        "resume",
        &id,
    ]);
    let out = second.wait_for_output("> ");
    assert!(
        out.starts_with(&format!(
            "fake-agent codex session {id} (resumed) [dangerous]\n"
        )),
        "{out:?}"
    );
    second.send("two");
    second.wait_for_output("answer: two");

    let files = rollouts(&setup.home.join(".codex"));
    assert_eq!(files.len(), 1, "resume must append, not create: {files:?}");
    let lines = read_jsonl(&files[0]);
    let metas: Vec<&Value> = lines
        .iter()
        .filter(|l| l["type"] == "session_meta")
        .collect();
    assert_eq!(metas.len(), 2);
    assert_eq!(metas[1]["payload"]["resumed"], true);
    assert_eq!(metas[1]["payload"]["dangerous"], true);
    let answers: Vec<&str> = lines
        .iter()
        .filter(|l| l["payload"]["type"] == "task_complete")
        .map(|l| l["payload"]["last_agent_message"].as_str().unwrap())
        .collect();
    assert_eq!(answers, ["answer: one", "answer: two"]);
}

#[test]
fn codex_resume_of_an_unknown_id_creates_a_rollout() {
    let setup = Setup::new();
    let agent = setup.start(&["--style", "codex", "resume", "thread-9"]);
    agent.wait_for_output("fake-agent codex session thread-9 (resumed)");
    let files = rollouts(&setup.home.join(".codex"));
    assert_eq!(files.len(), 1);
    assert!(files[0].to_str().unwrap().ends_with("-thread-9.jsonl"));
    assert_eq!(
        read_jsonl(&files[0])[0]["payload"]["transcript_existed"],
        false
    );
}

#[test]
fn the_rollout_stays_open_while_the_agent_runs_as_real_codex_keeps_it() {
    let setup = Setup::new();
    let codex_home = setup.home.join("codex-home");
    let mut agent = setup.start_with(
        &[],
        &[
            ("FAKE_AGENT_STYLE", "codex"),
            ("CODEX_HOME", codex_home.to_str().unwrap()),
        ],
    );
    agent.send("hi");
    agent.wait_for_output("answer: hi");
    let files = rollouts(&codex_home);
    assert_eq!(files.len(), 1, "{files:?}");
    let open: Vec<PathBuf> = std::fs::read_dir(format!("/proc/{}/fd", agent.pid()))
        .unwrap()
        .flatten()
        .filter_map(|fd| std::fs::read_link(fd.path()).ok())
        .collect();
    assert!(open.contains(&files[0]), "{:?} not in {open:?}", files[0]);
}
