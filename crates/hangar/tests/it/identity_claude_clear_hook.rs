//! Process-level test of a `/clear` in one of two claude sessions sharing a
//! folder, as real Claude Code does it: the new transcript names no old id,
//! so only the SessionStart hook hangar installs tells whose it is.

use crate::support;

use support::{DEADLINE, Hangar};

fn provider_id(h: &Hangar, id: &str) -> Option<String> {
    h.session(id)["provider_session_id"]
        .as_str()
        .map(str::to_owned)
}

/// The new id the fake shows after `/clear`.
fn cleared_to(screen: &str) -> String {
    screen
        .lines()
        .find_map(|l| l.split("cleared: new session ").nth(1))
        .and_then(|rest| rest.split_whitespace().next())
        .expect("the clear line is on screen")
        .to_owned()
}

#[test]
fn a_clear_in_one_of_two_claude_panes_in_one_folder_moves_only_that_pane_to_the_new_id() {
    // Real Claude Code writes no `cleared_from` link; neither does the fake.
    let h = Hangar::new();
    let a = h.new_pane();
    let b = h.split(&a, "vertical");
    h.wait_screen(&a, "fake-agent claude session");
    h.wait_screen(&b, "fake-agent claude session");
    let (old_a, old_b) = (provider_id(&h, &a).unwrap(), provider_id(&h, &b).unwrap());
    assert_ne!(old_a, old_b);

    h.ok(&["send", &a, "/clear"]);
    let new = cleared_to(&h.wait_screen(&a, "cleared: new session"));
    assert_ne!(new, old_a);
    let transcript = std::fs::read_to_string(h.claude_transcript(&h.work, &new)).unwrap();
    assert!(
        !transcript.contains(&format!("\"sessionId\":\"{old_a}\"")),
        "the new transcript names the old id: {transcript}"
    );

    h.wait_until("the cleared pane holds the new id", DEADLINE, || {
        provider_id(&h, &a).as_deref() == Some(new.as_str())
    });
    assert_eq!(
        h.session(&a)["provider_session_source"],
        "transcript",
        "a hook report counts as much as the transcript"
    );
    // The neighbour keeps its own conversation, now and after its watcher
    // has looked again.
    h.ok(&["send", &b, "still here"]);
    h.wait_screen(&b, "answer: still here");
    h.ok(&["send", &a, "after clear"]);
    h.wait_screen(&a, "answer: after clear");
    assert_eq!(provider_id(&h, &b), Some(old_b.clone()));
    assert_eq!(provider_id(&h, &a), Some(new.clone()));

    // And the next restore resumes each pane's own conversation.
    h.shutdown();
    h.start_daemon();
    h.wait_until(
        "the restore resumes the new id for the cleared pane",
        DEADLINE,
        || {
            !h.processes_with_flag("--resume", &new).is_empty()
                && !h.processes_with_flag("--resume", &old_b).is_empty()
        },
    );
    assert!(h.processes_with_flag("--resume", &old_a).is_empty());
}
