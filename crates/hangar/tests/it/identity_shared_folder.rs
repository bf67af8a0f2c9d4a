//! Process-level tests of provider identity when two sessions of one
//! provider share a folder: each keeps its own conversation, whoever writes
//! first, hibernates first or restarts.

use crate::support;

use serde_json::Value;
use support::{DEADLINE, Hangar, environ};

/// The hangar session a fake-agent process runs for (`HANGAR_SESSION_ID`).
fn session_of_pid(pid: i32) -> Option<String> {
    environ(pid)
        .into_iter()
        .find_map(|e| e.strip_prefix("HANGAR_SESSION_ID=").map(str::to_owned))
}

/// The sessions whose live process was started to resume `psid`.
fn sessions_resuming(h: &Hangar, psid: &str) -> Vec<String> {
    h.processes_with_arg(psid)
        .into_iter()
        .filter_map(session_of_pid)
        .collect()
}

fn messages(h: &Hangar, id: &str) -> String {
    let v: Value = h.json(&["transcript", id]);
    v["messages"].to_string()
}

#[test]
fn two_codex_sessions_in_one_folder_keep_their_own_conversations_across_hibernate_and_restart() {
    let h = Hangar::new();
    let a = h.new_agent(&["--provider", "codex"]);
    let b = h.new_agent(&["--provider", "codex"]);
    h.wait_screen(&a, "fake-agent codex session");
    h.wait_screen(&b, "fake-agent codex session");
    h.ok(&["send", &a, "hello from a"]);
    h.wait_screen(&a, "answer: hello from a");
    // Hibernated at once: the watcher may not have looked yet.
    h.ok(&["hibernate", &a]);

    let a_id = h.wait_transcript_id(&a);
    let b_id = h.wait_transcript_id(&b);
    assert_ne!(a_id, b_id, "both sessions hold one conversation");
    assert!(
        messages(&h, &a).contains("hello from a"),
        "A's id is not the conversation A had"
    );
    assert!(!messages(&h, &b).contains("hello from a"));

    h.shutdown();
    h.start_daemon();
    h.wait_restore_complete();
    h.ok(&["wake", &a]);
    h.ok(&["wake", &b]);
    h.wait_until("A resumes its own conversation", DEADLINE, || {
        sessions_resuming(&h, &a_id) == vec![a.clone()]
    });
    h.wait_until("B resumes its own conversation", DEADLINE, || {
        sessions_resuming(&h, &b_id) == vec![b.clone()]
    });
    assert_eq!(h.provider_id(&a).0.as_deref(), Some(a_id.as_str()));
    assert_eq!(h.provider_id(&b).0.as_deref(), Some(b_id.as_str()));
    assert!(messages(&h, &a).contains("hello from a"));
}
