//! Issue 20, the first fork before the full load: a start forks its visible
//! panes from a first look at the store (the whole-file check, the tabs, the
//! panes' rows) and loads every other session after. What must stay true,
//! through the real daemon on stores of thousands of sessions:
//! - a hibernated session sharing a visible pane's conversation is never
//!   woken beside it, even when its wake is the very first request;
//! - a save the first forks ask for waits for the full model, and keeps
//!   every session;
//! - a damaged store forks nothing.

mod support;

use std::fs;
use std::path::PathBuf;

use serde_json::Value;
use support::workspace::{Recipe, craft};
use support::*;

fn store_of(h: &Hangar) -> PathBuf {
    h.home.join("state.db")
}

#[test]
fn a_hibernated_session_sharing_a_panes_conversation_is_refused_even_as_the_first_request() {
    let h = Hangar::new();
    let mut ws = craft(&Recipe::field(3_000), &h.work);
    let pane = ws.panes[0].clone();
    let twin = ws.parked[5].clone();
    // The parked twin resumes the first pane's conversation.
    ws.json["workspace"]["sessions"][&twin.id]["provider_session"]["id"] =
        Value::String(pane.psid.clone());
    h.import(&ws.json);

    // The first request of all wakes the twin: the CLI starts the daemon
    // and asks at once, while the start's full load may still be under way.
    let wake = h.run(&["--json", "wake", &twin.id]);
    let status = h.wait_restore_complete();
    let resuming = h.processes_with_flag("--resume", &pane.psid);
    assert_eq!(
        resuming.len(),
        1,
        "one process for the shared conversation: {:?}",
        resuming.iter().map(|&p| cmdline(p)).collect::<Vec<_>>()
    );
    let (live, refused) = if h.state_of(&pane.id) == "live" {
        (&pane, &twin)
    } else {
        (&twin, &pane)
    };
    assert_eq!(h.state_of(&live.id), "live", "{status}");
    if refused.id == twin.id {
        // The usual order: the pane was spawning first, the wake refused.
        assert!(!wake.status.success(), "the twin's wake is refused");
        let err = String::from_utf8_lossy(&wake.stderr);
        assert!(
            err.contains("two processes writing one conversation corrupt it")
                && err.contains(&pane.id),
            "{err}"
        );
        assert_ne!(h.state_of(&twin.id), "live");
    } else {
        // The wake came first: then the pane is the refused one, and says so.
        let row = h.session(&pane.id);
        assert_eq!(row["state"], "failed", "{row}");
        assert!(
            row["reason"]
                .as_str()
                .unwrap_or_default()
                .contains("two processes writing one conversation corrupt it"),
            "{row}"
        );
    }

    // Once everything is loaded, the twin of a live pane is refused, and
    // the start said the two share a conversation.
    let again = h.run(&["wake", &refused.id]);
    assert!(!again.status.success());
    assert_eq!(h.processes_with_flag("--resume", &pane.psid).len(), 1);
    let notices = h.status()["notices"].to_string();
    assert!(
        notices.contains(&pane.id) && notices.contains(&twin.id) && notices.contains(&pane.psid),
        "{notices}"
    );
    assert_eq!(h.ls().len(), 9 + 3_000, "every session is there");
    h.shutdown();
}

#[test]
fn saves_the_first_forks_ask_for_wait_for_the_full_model_and_keep_every_session() {
    let h = Hangar::new();
    let mut ws = craft(&Recipe::field(4_000), &h.work);
    // Every pane's fork changes its record before the rest is loaded: each
    // was saved dangerous and starts with the home's setting (not), and
    // the first pane has no provider id yet, so its fork mints one. Each
    // asks for a save.
    for pane in &ws.panes {
        ws.json["workspace"]["sessions"][&pane.id]["dangerous"] = Value::Bool(true);
    }
    let fresh = ws.panes[0].clone();
    ws.json["workspace"]["sessions"][&fresh.id]
        .as_object_mut()
        .unwrap()
        .remove("provider_session");
    h.import(&ws.json);

    h.start_daemon();
    let status = h.wait_restore_complete();
    assert_eq!(status["restore"]["restored"], 9, "{status}");
    assert_eq!(status["restore"]["failed"], 0, "{status}");
    assert_eq!(status["restore"]["hibernated"], 4_000, "{status}");
    let minted = h
        .provider_id(&fresh.id)
        .0
        .expect("the fork minted a provider id");
    assert_eq!(
        h.processes_with_flag("--session-id", &minted).len(),
        1,
        "the pane's process runs the minted id"
    );
    h.shutdown();

    // Read back with no daemon: every session, and what the forks changed.
    let doc: Value = serde_json::from_str(&h.ok(&["export"])).unwrap();
    let sessions = doc["workspace"]["sessions"].as_object().unwrap();
    assert_eq!(sessions.len(), 9 + 4_000, "no session lost");
    for pane in &ws.panes {
        assert_eq!(
            sessions[&pane.id]["dangerous"], false,
            "the fork's flag is saved: {}",
            sessions[&pane.id]
        );
    }
    assert_eq!(
        sessions[&fresh.id]["provider_session"]["id"], minted,
        "the minted id is saved"
    );
    let parked = &ws.parked[3_999];
    assert_eq!(sessions[&parked.id]["title"], parked.title.as_str());
}

#[test]
fn a_damaged_store_of_thousands_of_sessions_forks_no_pane() {
    let h = Hangar::new();
    let ws = craft(&Recipe::field(2_000), &h.work);
    h.import(&ws.json);
    let bytes = fs::read(store_of(&h)).unwrap();
    // The second half of the pages is gone; the first half may hold the
    // tabs and the panes' rows, but the whole-file check refuses the file.
    let truncated = &bytes[..bytes.len() / 2];
    fs::write(store_of(&h), truncated).unwrap();

    let mut child = h
        .command(&["daemon"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Watch from the start until it answers: no pane's conversation is
    // ever resumed.
    let psids: Vec<&str> = ws.panes.iter().map(|p| p.psid.as_str()).collect();
    let socket = h.home.join("run").join("hangar.sock");
    h.wait_until("the daemon answers", DEADLINE, || {
        for psid in &psids {
            assert!(
                h.processes_with_flag("--resume", psid).is_empty(),
                "a pane was forked from a damaged store"
            );
        }
        std::os::unix::net::UnixStream::connect(&socket).is_ok()
            && h.run(&["status"]).status.success()
    });
    let status = h.wait_restore_complete();
    assert_eq!(status["restore"]["expected"], 0, "{status}");
    assert!(h.fake_agent_pids_for_home().is_empty());
    let notices = status["notices"].to_string();
    assert!(
        notices.contains("damaged") && notices.contains("state.db.corrupt-"),
        "{notices}"
    );
    assert!(h.ls().is_empty(), "it starts empty, as before");
    h.shutdown();
    let _ = child.wait();
}
