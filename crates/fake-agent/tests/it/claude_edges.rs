//! The fake follows Claude Code 2.1.197 at the edges hangar reads, each fact
//! as observed with the published binary (docs/src/cli-facts.md): the
//! per-process record `sessions/<pid>.json`, the hook payloads, the project
//! folder slug of odd folder names, and a lost Enter (the knob that lets
//! hangar's fast tests see it).

use crate::support;

use std::collections::BTreeSet;
use std::fs;

use serde_json::Value;
use support::{Setup, read_jsonl, wait_until};

const ID: &str = "7d2f1c3a-5b6e-4f70-8a91-b2c3d4e5f607";

fn keys(v: &Value) -> BTreeSet<String> {
    v.as_object()
        .map(|o| o.keys().cloned().collect())
        .unwrap_or_default()
}

fn set(list: &[&str]) -> BTreeSet<String> {
    list.iter().map(|s| (*s).to_owned()).collect()
}

#[test]
fn the_process_record_names_the_current_id_follows_a_clear_and_goes_away_on_exit() {
    let setup = Setup::new();
    let mut agent = setup.start(&["--session-id", ID]);
    agent.wait_for_output("> ");
    let record = setup
        .home
        .join(".claude/sessions")
        .join(format!("{}.json", agent.pid()));
    let read = || -> Value { serde_json::from_slice(&fs::read(&record).unwrap()).unwrap() };
    let v = read();
    assert_eq!(v["pid"], agent.pid());
    assert_eq!(v["sessionId"], ID);
    assert_eq!(v["cwd"], setup.cwd.to_str().unwrap());
    // Field 22 of /proc/<pid>/stat, as the real record's `procStart`.
    let stat = fs::read_to_string(format!("/proc/{}/stat", agent.pid())).unwrap();
    let start = stat[stat.rfind(')').unwrap() + 1..]
        .split_whitespace()
        .nth(19)
        .unwrap()
        .to_owned();
    assert_eq!(v["procStart"], start.as_str());
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = fs::metadata(record.parent().unwrap())
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o700);
    }

    agent.send("/clear");
    let out = agent.wait_for_output("cleared: new session ");
    let new_id = out
        .split("cleared: new session ")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .unwrap()
        .to_owned();
    // Rewritten before the screen says so.
    assert_eq!(read()["sessionId"], new_id.as_str());

    agent.send("exit");
    assert_eq!(agent.wait_exit().code(), Some(0));
    assert!(!record.exists(), "a clean exit removes the record");
}

#[test]
fn an_old_claude_writes_no_process_record() {
    let setup = Setup::new();
    let agent = setup.start_with(
        &["--session-id", ID],
        &[("FAKE_AGENT_NO_SESSION_RECORD", "1")],
    );
    agent.wait_for_output("> ");
    assert!(!setup.home.join(".claude/sessions").exists());
}

#[test]
fn the_hooks_get_claude_codes_payloads_and_a_clear_ends_one_session_and_starts_the_next() {
    let setup = Setup::new();
    let log = setup.home.join("hooks.jsonl");
    let mut hooks = serde_json::Map::new();
    for event in ["SessionStart", "UserPromptSubmit", "Stop", "SessionEnd"] {
        hooks.insert(
            event.into(),
            serde_json::json!([{"hooks": [{"type": "command",
                "command": format!("cat >> '{0}'; echo >> '{0}'", log.display())}]}]),
        );
    }
    let settings = setup.home.join("settings.json");
    fs::write(&settings, serde_json::json!({ "hooks": hooks }).to_string()).unwrap();
    let mut agent = setup.start(&["--session-id", ID, "--settings", settings.to_str().unwrap()]);
    agent.wait_for_output("> ");
    agent.send("say hi");
    agent.wait_for_output("answer: say hi");
    agent.send("/clear");
    agent.wait_for_output("cleared: new session ");
    agent.send("exit");
    agent.wait_exit();

    let reports = read_jsonl(&log);
    let events: Vec<&str> = reports
        .iter()
        .map(|r| r["hook_event_name"].as_str().unwrap())
        .collect();
    assert_eq!(
        events,
        [
            "SessionStart",
            "UserPromptSubmit",
            "Stop",
            "SessionEnd",
            "SessionStart",
            "SessionEnd"
        ]
    );
    // The keys each payload had from Claude Code 2.1.197.
    let common = ["session_id", "transcript_path", "cwd", "hook_event_name"];
    let with = |extra: &[&str]| {
        let mut k = set(&common);
        k.extend(extra.iter().map(|s| (*s).to_owned()));
        k
    };
    assert_eq!(keys(&reports[0]), with(&["source", "model"]));
    assert_eq!(reports[0]["source"], "startup");
    assert_eq!(
        keys(&reports[1]),
        with(&["prompt_id", "permission_mode", "prompt"])
    );
    assert_eq!(reports[1]["prompt"], "say hi");
    assert_eq!(reports[1]["permission_mode"], "default");
    assert_eq!(
        keys(&reports[2]),
        with(&[
            "prompt_id",
            "permission_mode",
            "effort",
            "stop_hook_active",
            "last_assistant_message",
            "background_tasks",
            "session_crons"
        ])
    );
    assert_eq!(reports[2]["last_assistant_message"], "answer: say hi");
    assert_eq!(reports[2]["prompt_id"], reports[1]["prompt_id"]);
    assert_eq!(keys(&reports[3]), with(&["prompt_id", "reason"]));
    assert_eq!(reports[3]["reason"], "clear");
    assert_eq!(reports[3]["session_id"], ID);
    assert_eq!(keys(&reports[4]), with(&["prompt_id", "source"]));
    assert_eq!(reports[4]["source"], "clear");
    assert_ne!(reports[4]["session_id"], ID);
    assert_eq!(reports[4]["prompt_id"], reports[3]["prompt_id"]);
    assert_eq!(reports[5]["reason"], "prompt_input_exit");
    for r in &reports {
        let path = r["transcript_path"].as_str().unwrap();
        assert!(
            path.ends_with(&format!("{}.jsonl", r["session_id"].as_str().unwrap())),
            "{path}"
        );
    }
}

#[test]
fn odd_folder_names_get_claude_codes_project_folder() {
    let setup = Setup::new();
    // `_`, space, `~`, `+`, `@` and a non-ASCII letter: each one `-`.
    let cwd = setup.cwd.join("my_dir a~b+c@d é");
    fs::create_dir_all(&cwd).unwrap();
    let mut cmd = setup.command(&["--session-id", ID]);
    cmd.current_dir(&cwd);
    let agent = support::Agent::spawn(cmd);
    agent.wait_for_output("> ");
    let slug = format!(
        "{}-my-dir-a-b-c-d--",
        support::slug_of(setup.cwd.to_str().unwrap())
    );
    let path = setup
        .home
        .join(".claude/projects")
        .join(slug)
        .join(format!("{ID}.jsonl"));
    assert!(path.is_file(), "no transcript at {}", path.display());
}

#[test]
fn a_swallowed_enter_leaves_the_text_waiting_until_the_next_enter() {
    let setup = Setup::new();
    let mut agent = setup.start_with(&["--session-id", ID], &[("FAKE_AGENT_SWALLOW_ENTERS", "1")]);
    agent.wait_for_output("> ");
    agent.send("first words");
    // Redrawn in the input line, not answered, not recorded.
    wait_until("the text is drawn back in the input line", || {
        agent.stdout().contains("> first words").then_some(())
    });
    assert!(!agent.stdout().contains("answer:"));
    let text = fs::read_to_string(setup.claude_transcript(ID)).unwrap();
    assert!(!text.contains("first words"), "{text}");
    // The next Enter submits what was waiting.
    agent.send("");
    agent.wait_for_output("answer: first words");
}
