//! Process-level tests of the resume ledger: provider session ids discovered
//! from real (fake-agent) transcripts, id rotation after `/clear`, the cwd
//! rule, and duplicate ids.

use crate::support;

use std::fs;
use std::time::{Duration, SystemTime};

use serde_json::{Value, json};
use support::{DEADLINE, Hangar};

/// The session record as exported (it carries `provider_id_history`).
fn exported_session(h: &Hangar, id: &str) -> Value {
    let doc: Value = serde_json::from_str(&h.ok(&["export"])).expect("export is JSON");
    doc["workspace"]["sessions"][id].clone()
}

#[test]
fn claude_and_codex_transcripts_are_discovered_and_persisted_with_source_transcript() {
    let h = Hangar::new();
    let claude = h.new_agent(&["--provider", "claude"]);
    let codex = h.new_agent(&["--provider", "codex", "--parked"]);
    h.ok(&["wake", &codex]);

    let claude_id = h.wait_transcript_id(&claude);
    assert!(h.claude_transcript(&h.work, &claude_id).is_file());
    let codex_id = h.wait_transcript_id(&codex);
    let rollouts = walk(&h.codex_home.join("sessions"));
    assert!(
        rollouts
            .iter()
            .any(|p| p.ends_with(&format!("-{codex_id}.jsonl"))),
        "no rollout for {codex_id} in {rollouts:?}"
    );

    // Persisted: after a restart the ids and sources are still there, and the
    // codex session resumes its discovered id when woken.
    h.shutdown();
    h.start_daemon();
    assert_eq!(
        h.provider_id(&claude),
        (Some(claude_id.clone()), Some("transcript".into()))
    );
    assert_eq!(
        h.provider_id(&codex),
        (Some(codex_id.clone()), Some("transcript".into()))
    );
    h.ok(&["wake", &codex]);
    h.wait_until("codex resumes its discovered id", DEADLINE, || {
        !h.processes_with_arg(&codex_id).is_empty()
    });
}

fn walk(dir: &std::path::Path) -> Vec<String> {
    support::files_under(dir)
        .iter()
        .map(|p| p.display().to_string())
        .collect()
}

fn cleared_to(screen: &str) -> String {
    let line = screen
        .lines()
        .find(|l| l.contains("cleared: new session "))
        .expect("the clear line is on screen");
    line.split("cleared: new session ")
        .nth(1)
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap()
        .to_owned()
}

#[test]
fn a_clear_in_a_live_session_replaces_the_id_and_the_next_restore_resumes_the_new_one() {
    let h = Hangar::new();
    let s = h.new_pane();
    let old = h.wait_transcript_id(&s);
    h.ok(&["send", &s, "/clear"]);
    let new = cleared_to(&h.wait_screen(&s, "cleared: new session"));
    assert_ne!(new, old);
    h.wait_until("the new id replaces the old one", DEADLINE, || {
        h.provider_id(&s) == (Some(new.clone()), Some("transcript".into()))
    });
    let history = exported_session(&h, &s)["provider_id_history"].clone();
    let change = history
        .as_array()
        .and_then(|a| a.iter().find(|c| c["from"] == json!(old)))
        .unwrap_or_else(|| panic!("no change from {old} in {history}"));
    assert_eq!(change["to"], json!(new));
    assert_eq!(change["source"], "transcript");
    assert!(change["at_ms"].as_u64().unwrap() > 0);

    h.shutdown();
    h.start_daemon();
    h.wait_until("the restore resumes the new id", DEADLINE, || {
        !h.processes_with_flag("--resume", &new).is_empty()
    });
    assert!(h.processes_with_flag("--resume", &old).is_empty());
}

#[test]
fn a_transcript_whose_cwd_differs_is_not_adopted() {
    let h = Hangar::new();
    let s = h.new_pane();
    let old = h.wait_transcript_id(&s);
    // A transcript in the session's own project folder, newer than anything
    // the agent will write, but recorded as run elsewhere.
    let forged = h.claude_transcript(&h.work, "forged-id");
    fs::write(
        &forged,
        format!(
            "{}\n",
            json!({"type": "user", "sessionId": "forged-id", "cwd": "/elsewhere",
                   "message": {"role": "user", "content": "hi"}})
        ),
    )
    .unwrap();
    let future = SystemTime::now() + Duration::from_secs(3600);
    fs::File::options()
        .write(true)
        .open(&forged)
        .unwrap()
        .set_modified(future)
        .unwrap();
    // A rotation the watcher must see after the forged file appeared: the
    // forged one stays the newest, so only the cwd rule keeps it out.
    h.ok(&["send", &s, "/clear"]);
    let new = cleared_to(&h.wait_screen(&s, "cleared: new session"));
    h.wait_until("the real new id is adopted", DEADLINE, || {
        h.provider_id(&s).0.as_deref() == Some(new.as_str())
    });
    let record = exported_session(&h, &s);
    assert!(
        !record.to_string().contains("forged-id"),
        "the forged id was adopted at some point: {record}"
    );
    assert_ne!(new, old);
}

/// A hangar export with one tab whose parked pool holds `ids`, every one a
/// claude session resuming provider session `psid`.
fn workspace_sharing_one_id(h: &Hangar, ids: &[&str], psid: &str) -> String {
    let cwd = h.work.display().to_string();
    let mut sessions = serde_json::Map::new();
    let mut parked = serde_json::Map::new();
    for id in ids {
        sessions.insert(
            (*id).into(),
            json!({"id": id, "provider": "claude", "cwd": cwd, "title": format!("agent {id}"),
                   "provider_session": {"id": psid}}),
        );
        parked.insert((*id).into(), json!({"session": id, "tab": "t1"}));
    }
    let doc = json!({
        "format": "hangar-workspace",
        "version": 1,
        "workspace": {
            "tabs": [{"id": "t1", "title": "proj", "cwd": cwd}],
            "active_tab": "t1",
            "sessions": sessions,
            "parked": parked,
        }
    });
    let path = h.root.join("dup.json");
    fs::write(&path, doc.to_string()).unwrap();
    path.display().to_string()
}

#[test]
fn duplicate_durable_ids_are_flagged_the_second_wake_is_refused_and_doctor_fixes_them() {
    let h = Hangar::new();
    let file = workspace_sharing_one_id(&h, &["dup-a", "dup-b", "dup-c"], "conv-1");
    h.ok(&["import", "hangar", &file]);
    h.start_daemon();

    let row = h.session("dup-a");
    assert_eq!(row["duplicate_of"], json!(["dup-b", "dup-c"]));
    assert_eq!(
        h.session("dup-b")["duplicate_of"],
        json!(["dup-a", "dup-c"])
    );
    let notices = h.status()["notices"].to_string();
    assert!(notices.contains("conv-1"), "{notices}");

    h.ok(&["wake", "dup-a"]);
    h.wait_until("dup-a resumes conv-1", DEADLINE, || {
        !h.processes_with_flag("--resume", "conv-1").is_empty()
    });
    let err = h.fail(&["wake", "dup-b"]);
    assert!(
        err.contains("two processes writing one conversation corrupt it") && err.contains("dup-a"),
        "{err}"
    );
    assert_eq!(h.processes_with_flag("--resume", "conv-1").len(), 1);
    assert_eq!(h.state_of("dup-b"), "hibernated");

    // doctor lists the group and exits non-zero while it remains.
    let out = h.run(&["--json", "doctor"]);
    assert!(!out.status.success());
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["duplicates"].as_array().unwrap().len(), 1);
    assert_eq!(report["duplicates"][0]["provider_session_id"], "conv-1");
    assert!(
        report["duplicates"][0]["fixes"]
            .to_string()
            .contains("hangar doctor --fork dup-b")
    );

    // Forking a running session is refused; forking a hibernated one works.
    let err = h.fail(&["doctor", "--fork", "dup-a"]);
    assert!(err.contains("hibernate"), "{err}");
    let _ = h.run(&["doctor", "--fork", "dup-b"]);
    assert_eq!(h.session("dup-b")["provider_session_id"], Value::Null);
    let _ = h.run(&["doctor", "--forget", "dup-c"]);
    assert!(h.ls().iter().all(|r| r["id"] != "dup-c"));
    let report = h.json(&["doctor"]);
    assert_eq!(report["ok"], true, "{report}");
    assert_eq!(h.session("dup-a")["duplicate_of"], json!([]));

    // The forked session now wakes as a fresh conversation.
    h.ok(&["wake", "dup-b"]);
    assert_eq!(h.session("dup-b")["started"], "fresh");
    assert_eq!(h.processes_with_flag("--resume", "conv-1").len(), 1);
}

#[test]
fn transcript_prints_the_last_messages_without_waking_the_session() {
    let h = Hangar::new();
    let claude = h.new_pane();
    let codex = h.new_agent(&["--provider", "codex"]);
    for (s, word) in [(&claude, "alpha"), (&codex, "beta")] {
        h.wait_transcript_id(s);
        h.ok(&["send", s, &format!("{word} one")]);
        h.wait_screen(s, &format!("answer: {word} one"));
        h.ok(&["send", s, &format!("{word} two")]);
        h.wait_screen(s, &format!("answer: {word} two"));
        h.ok(&["hibernate", s]);
    }
    for (s, word) in [(&claude, "alpha"), (&codex, "beta")] {
        let v = h.json(&["transcript", s, "--tail", "3"]);
        let msgs: Vec<(String, String)> = v["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| {
                (
                    m["role"].as_str().unwrap().to_owned(),
                    m["text"].as_str().unwrap().to_owned(),
                )
            })
            .collect();
        assert_eq!(
            msgs,
            vec![
                ("assistant".into(), format!("answer: {word} one")),
                ("user".into(), format!("{word} two")),
                ("assistant".into(), format!("answer: {word} two")),
            ],
            "{v}"
        );
        assert_eq!(h.state_of(s), "hibernated", "transcript must not wake {s}");
        let text = h.ok(&["transcript", s, "--tail", "1"]);
        assert_eq!(text.trim(), format!("assistant: answer: {word} two"));
    }
}
