//! Claude-style starts, resumes and `/clear`, checked through the transcript
//! files hangar's Claude adapter reads.

use crate::support;

use support::{Setup, assistant_text, entries, read_jsonl, wait_for_lines};

const ID: &str = "0b9f5a52-7c1e-4c33-9a53-4a1c2f0e6d11";

#[test]
fn fresh_start_with_session_id_writes_the_transcript_at_the_slug_path_with_argv_and_pid_first() {
    let setup = Setup::new();
    let agent = setup.start(&["--session-id", ID, "--model", "opus", "--frobnicate"]);
    let out = agent.wait_for_output("> ");
    assert!(
        out.starts_with(&format!("fake-agent claude session {ID}\n")),
        "{out:?}"
    );

    let lines = entries(&setup.claude_transcript(ID));
    let start = &lines[0];
    assert_eq!(start["type"], "system");
    assert_eq!(start["subtype"], "fake-agent-start");
    assert_eq!(start["sessionId"], ID);
    assert_eq!(start["cwd"], setup.cwd.to_str().unwrap());
    assert_eq!(start["pid"], agent.pid());
    assert_eq!(start["ppid"], std::process::id());
    assert_eq!(start["style"], "claude");
    assert_eq!(start["resumed"], false);
    assert_eq!(start["env_proxy"], serde_json::Value::Null);
    assert_eq!(start["model"], "opus");
    assert_eq!(start["ignored_args"], serde_json::json!(["--frobnicate"]));
    let argv: Vec<&str> = start["argv"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    assert_eq!(
        argv[1..],
        ["--session-id", ID, "--model", "opus", "--frobnicate"]
    );
    assert!(start["uuid"].is_string());
    let ts = start["timestamp"].as_str().unwrap();
    assert!(
        ts.len() == 24 && ts.ends_with('Z') && ts.as_bytes()[10] == b'T',
        "{ts}"
    );
}

#[test]
fn an_answer_appears_on_screen_and_in_the_transcript() {
    let setup = Setup::new();
    let mut agent = setup.start(&["--session-id", ID]);
    agent.send("hello there");
    agent.wait_for_output("answer: hello there\n");

    // Lines are written before the screen shows them: no wait needed here.
    let lines = entries(&setup.claude_transcript(ID));
    let user = &lines[1];
    assert_eq!(user["type"], "user");
    assert_eq!(
        user["message"],
        serde_json::json!({ "role": "user", "content": "hello there" })
    );
    assert_eq!(user["parentUuid"], lines[0]["uuid"]);
    let answer = &lines[2];
    assert_eq!(assistant_text(answer), Some("answer: hello there"));
    assert_eq!(answer["message"]["stop_reason"], "end_turn");
    for line in &lines {
        assert_eq!(line["sessionId"], ID);
        assert!(line["timestamp"].is_string() && line["uuid"].is_string());
    }
}

#[test]
fn end_of_input_exits_0_after_recording_the_exit() {
    let setup = Setup::new();
    let mut agent = setup.start(&["--session-id", ID]);
    agent.close_stdin();
    assert_eq!(agent.wait_exit().code(), Some(0));
    let lines = entries(&setup.claude_transcript(ID));
    let last = lines.last().unwrap();
    assert_eq!(last["subtype"], "fake-agent-exit");
    assert_eq!(last["reason"], "eof");
}

#[test]
fn resume_appends_to_the_same_transcript() {
    let setup = Setup::new();
    let mut first = setup.start(&["--session-id", ID]);
    first.send("one");
    first.send("exit");
    assert_eq!(first.wait_exit().code(), Some(0));

    let mut second = setup.start(&["--resume", ID, "--dangerously-skip-permissions"]);
    let out = second.wait_for_output("> ");
    assert!(
        out.starts_with(&format!(
            "fake-agent claude session {ID} (resumed) [dangerous]\n"
        )),
        "{out:?}"
    );
    second.send("two");
    second.wait_for_output("answer: two");

    let lines = entries(&setup.claude_transcript(ID));
    let starts: Vec<_> = lines
        .iter()
        .filter(|l| l["subtype"] == "fake-agent-start")
        .collect();
    assert_eq!(starts.len(), 2);
    assert_eq!(starts[1]["resumed"], true);
    assert_eq!(starts[1]["transcript_existed"], true);
    assert_eq!(starts[1]["dangerous"], true);
    let answers: Vec<_> = lines.iter().filter_map(assistant_text).collect();
    assert_eq!(answers, ["answer: one", "answer: two"]);
}

#[test]
fn resume_of_an_unknown_id_creates_its_transcript() {
    let setup = Setup::new();
    let agent = setup.start(&["--resume", ID]);
    agent.wait_for_output("(resumed)");
    let lines = entries(&setup.claude_transcript(ID));
    assert_eq!(lines[0]["resumed"], true);
    assert_eq!(lines[0]["transcript_existed"], false);
}

#[test]
fn a_fresh_start_reusing_a_session_id_is_refused_like_claude_code() {
    let setup = Setup::new();
    let mut first = setup.start(&["--session-id", ID]);
    first.close_stdin();
    first.wait_exit();

    let mut again = setup.start(&["--session-id", ID]);
    assert_eq!(again.wait_exit().code(), Some(1));
    // stderr is read in the background: wait for the reader to catch up.
    wait_until_stderr(&again, "already in use");
}

fn wait_until_stderr(agent: &support::Agent, needle: &str) {
    support::wait_until(&format!("stderr says {needle:?}"), || {
        agent.stderr().contains(needle).then_some(())
    });
}

#[test]
fn without_an_id_the_agent_mints_a_uuid_v4() {
    let setup = Setup::new();
    let agent = setup.start(&[]);
    let id = agent.banner_session_id();
    let parsed = uuid_version(&id);
    assert_eq!(parsed, Some('4'), "{id}");
    assert_eq!(
        entries(&setup.claude_transcript(&id))[0]["sessionId"],
        id.as_str()
    );
}

fn uuid_version(id: &str) -> Option<char> {
    let ok = id.len() == 36
        && id
            .chars()
            .enumerate()
            .all(|(i, c)| matches!(i, 8 | 13 | 18 | 23) == (c == '-'));
    ok.then(|| id.chars().nth(14)).flatten()
}

/// The new id the screen names after `/clear`.
fn cleared_to(out: &str) -> String {
    out.split("cleared: new session ")
        .nth(1)
        .unwrap()
        .lines()
        .next()
        .unwrap()
        .to_string()
}

#[test]
fn clear_rotates_to_a_new_session_with_its_own_transcript() {
    let setup = Setup::new();
    let mut agent = setup.start(&["--session-id", ID]);
    agent.send("before clear");
    agent.wait_for_output("answer: before clear");
    let old_before = std::fs::read(setup.claude_transcript(ID)).unwrap();
    agent.send("/clear");
    let new_id = cleared_to(&agent.wait_for_output("cleared: new session "));
    assert_ne!(new_id, ID);
    agent.send("after clear");
    agent.wait_for_output("answer: after clear");

    // As Claude Code 2.1.197's, the old transcript is left as it was.
    assert_eq!(
        std::fs::read(setup.claude_transcript(ID)).unwrap(),
        old_before
    );
    let new = entries(&setup.claude_transcript(&new_id));
    assert_eq!(new[0]["subtype"], "fake-agent-start");
    assert_eq!(new[0]["resumed"], false);
    assert_eq!(new[0]["sessionId"], new_id.as_str());
    assert_eq!(
        assistant_text(new.last().unwrap()),
        Some("answer: after clear")
    );
    // As in Claude Code, nothing links the new transcript to the old id
    // (the fake's start record keeps only the process's own argv).
    for line in &new {
        assert!(line.get("cleared_from").is_none(), "{line}");
        assert_ne!(line["sessionId"], ID);
    }
    // Its first line is `mode`, without a `cwd` (a /clear writes no
    // `permission-mode` line).
    let raw = read_jsonl(&setup.claude_transcript(&new_id));
    assert_eq!(raw[0]["type"], "mode");
    assert!(raw[0].get("cwd").is_none());
    assert_eq!(raw[1]["subtype"], "fake-agent-start");
}

/// Claude Code 2.1.197's entries for `/clear` (crates/hangar/tests/it/
/// real_cli_support/OBSERVED.md): without the closing `local_command`
/// entry hangar read a cleared claude as working until its next turn.
#[test]
fn clear_writes_claude_codes_local_command_entries_at_once_ending_in_local_command() {
    let setup = Setup::new();
    let mut agent = setup.start(&["--session-id", ID]);
    agent.wait_for_output("> ");
    agent.send("/clear");
    // Written before the screen says so, with no prompt after it.
    let new_id = cleared_to(&agent.wait_for_output("cleared: new session "));
    let raw = read_jsonl(&setup.claude_transcript(&new_id));

    let kinds: Vec<(&str, &str)> = raw
        .iter()
        .map(|l| {
            (
                l["type"].as_str().unwrap(),
                l["subtype"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(
        kinds,
        [
            ("mode", ""),
            // The fake's own start record, as after every start.
            ("system", "fake-agent-start"),
            ("file-history-snapshot", ""),
            ("user", ""),
            ("user", ""),
            ("system", "local_command"),
        ],
        "{raw:#?}"
    );
    let [_, start, snapshot, caveat, command, end] = &raw[..] else {
        unreachable!("six lines, checked above")
    };
    assert_eq!(snapshot["messageId"], command["uuid"]);
    assert_eq!(caveat["isMeta"], true);
    assert!(
        caveat["message"]["content"]
            .as_str()
            .unwrap()
            .starts_with("<local-command-caveat>Caveat: "),
        "{caveat}"
    );
    assert_ne!(command["isMeta"], true);
    assert!(
        command["message"]["content"]
            .as_str()
            .unwrap()
            .starts_with("<command-name>/clear</command-name>"),
        "{command}"
    );
    assert_eq!(end["isMeta"], false);
    assert_eq!(
        end["content"],
        "<local-command-stdout></local-command-stdout>"
    );
    // One chain, each entry of the new session, in the agent's folder.
    assert_eq!(caveat["parentUuid"], start["uuid"]);
    assert_eq!(command["parentUuid"], caveat["uuid"]);
    assert_eq!(end["parentUuid"], command["uuid"]);
    for entry in [caveat, command, end] {
        assert_eq!(entry["sessionId"], new_id.as_str());
        assert_eq!(entry["cwd"], setup.cwd.to_str().unwrap());
        assert!(
            entry["timestamp"]
                .as_str()
                .is_some_and(|t| t.ends_with('Z'))
        );
    }
}

#[test]
fn a_new_transcript_begins_like_claude_codes_with_lines_that_have_the_id_but_no_cwd() {
    let setup = Setup::new();
    let agent = setup.start(&["--session-id", ID]);
    agent.wait_for_output("> ");
    // Claude Code 2.1.197's first two lines of a fresh transcript.
    let raw = read_jsonl(&setup.claude_transcript(ID));
    assert_eq!(
        raw[0],
        serde_json::json!({"type": "mode", "mode": "normal", "sessionId": ID})
    );
    assert_eq!(
        raw[1],
        serde_json::json!({"type": "permission-mode", "permissionMode": "default", "sessionId": ID})
    );
    assert_eq!(raw[2]["cwd"], setup.cwd.to_str().unwrap());
}

#[test]
fn session_start_runs_at_start_and_after_clear_with_the_new_id() {
    let setup = Setup::new();
    let log = setup.home.join("session-start.jsonl");
    let settings = setup.home.join("settings.json");
    let hook = serde_json::json!({"hooks": {"SessionStart": [{"hooks": [
        {"type": "command", "command": format!("cat >> '{}'; echo >> '{}'", log.display(), log.display())}
    ]}]}});
    std::fs::write(&settings, hook.to_string()).unwrap();
    let mut agent = setup.start(&["--session-id", ID, "--settings", settings.to_str().unwrap()]);
    agent.wait_for_output("> ");
    agent.send("/clear");
    let out = agent.wait_for_output("cleared: new session ");
    let new_id = out
        .split("cleared: new session ")
        .nth(1)
        .unwrap()
        .lines()
        .next()
        .unwrap()
        .to_string();
    // The hook ran (and was waited for) before the screen said so.
    let reports = read_jsonl(&log);
    assert_eq!(reports.len(), 2, "{reports:?}");
    assert_eq!(reports[0]["hook_event_name"], "SessionStart");
    assert_eq!(reports[0]["source"], "startup");
    assert_eq!(reports[0]["session_id"], ID);
    assert_eq!(reports[0]["cwd"], setup.cwd.to_str().unwrap());
    assert_eq!(reports[1]["source"], "clear");
    assert_eq!(reports[1]["session_id"], new_id.as_str());
}

#[test]
fn the_config_dir_variable_and_the_proxy_are_honoured() {
    let setup = Setup::new();
    let config = setup.home.join("elsewhere");
    let agent = setup.start_with(
        &["--session-id", ID],
        &[
            ("CLAUDE_CONFIG_DIR", config.to_str().unwrap()),
            ("HTTPS_PROXY", "http://127.0.0.1:9"),
        ],
    );
    agent.wait_for_output("> ");
    let slug = support::slug_of(setup.cwd.to_str().unwrap());
    let path = config
        .join("projects")
        .join(slug)
        .join(format!("{ID}.jsonl"));
    let lines = wait_for_lines(&path, "the start line is written", |l| l.len() > 2);
    assert_eq!(lines[2]["env_proxy"], "http://127.0.0.1:9");
    assert!(!setup.claude_transcript(ID).exists());
}

#[test]
fn opencode_style_writes_claude_shaped_lines_to_its_own_directory() {
    let setup = Setup::new();
    // A fresh start, so that the conversation exists (OpenCode refuses
    // `--session` for an id it does not have).
    let mut first = setup.start(&["--style", "opencode"]);
    first.wait_for_output("> ");
    let id = first.banner_session_id();
    assert!(id.starts_with("ses_"), "opencode ids are ses_...: {id}");
    first.send("first");
    first.wait_for_output("answer: first");
    first.send("exit");
    first.wait_exit();

    let mut agent = setup.start(&["--style", "opencode", "--session", &id]);
    let out = agent.wait_for_output("> ");
    assert!(
        out.starts_with(&format!("fake-agent opencode session {id} (resumed)\n")),
        "{out:?}"
    );
    agent.send("hi");
    agent.wait_for_output("answer: hi");
    let lines = read_jsonl(
        &setup
            .home
            .join(format!(".local/share/opencode/fake/{id}.jsonl")),
    );
    let resumed: Vec<&serde_json::Value> = lines.iter().filter(|l| l["resumed"] == true).collect();
    assert_eq!(resumed.len(), 1, "one resumed start line: {lines:?}");
    assert_eq!(resumed[0]["style"], "opencode");
    assert_eq!(assistant_text(lines.last().unwrap()), Some("answer: hi"));
}

/// Real OpenCode 1.18.33 keeps its conversations in SQLite, creates one with
/// the first prompt, and refuses `--session` for an unknown id
/// (docs/src/cli-facts.md, OpenCode).
#[test]
fn opencode_style_keeps_its_conversations_in_sqlite_and_refuses_an_unknown_session() {
    let setup = Setup::new();
    let mut refused = setup.start(&["--style", "opencode", "--session", "ses_unknown"]);
    let status = refused.wait_exit();
    assert_eq!(status.code(), Some(1));
    assert!(
        refused
            .stderr()
            .contains("Error: Session not found: ses_unknown"),
        "{}",
        refused.stderr()
    );

    let mut agent = setup.start(&["--style", "opencode"]);
    agent.wait_for_output("> ");
    let id = agent.banner_session_id();
    let db = setup.home.join(".local/share/opencode/opencode.db");
    agent.send("what is in the store");
    agent.wait_for_output("answer: what is in the store");
    let conn = rusqlite::Connection::open(&db).expect("opencode.db exists");
    let (sid, dir): (String, String) = conn
        .query_row("SELECT id, directory FROM session", [], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .expect("one conversation");
    assert_eq!(sid, id);
    assert!(!dir.is_empty());
    let text: String = conn
        .query_row(
            "SELECT json_extract(p.data, '$.text') FROM part p JOIN message m ON m.id = p.message_id \
             WHERE json_extract(m.data, '$.role') = 'user'",
            [],
            |r| r.get(0),
        )
        .expect("the prompt is a user part");
    assert_eq!(text, "what is in the store");
}
