//! A hibernate lets the agent finish saving before it is killed.
//!
//! Regression: a hibernate right after a real claude drew its answer, on a
//! busy machine, lost the conversation ("No conversation found" on the next
//! wake): Claude Code 2.1.197 drains its queued transcript writes on SIGTERM
//! and forces its own exit only after at least 5 s, but hangar sent SIGKILL
//! after 3 s. The fake here queues its transcript lines and takes 4.5 s to
//! write them on SIGTERM (`FAKE_AGENT_DRAIN_ON_EXIT_MS`), as such a claude.

use crate::support;

use support::Hangar;

#[test]
fn a_hibernate_right_after_an_answer_keeps_the_answer_in_the_transcript() {
    let h = Hangar::with_env(&[("FAKE_AGENT_DRAIN_ON_EXIT_MS", "4500")]);
    let id = h.new_pane();
    let banner = h.wait_screen(&id, "fake-agent claude session");
    h.ok(&["send", &id, "remember this"]);
    h.wait_screen(&id, "answer: remember this");
    let psid = banner
        .split_whitespace()
        .skip_while(|w| *w != "session")
        .nth(1)
        .expect("the banner names the session id")
        .to_owned();
    let transcript = h.claude_transcript(&h.work, &psid);
    // Queued, as a busy claude's last lines are.
    assert!(
        !std::fs::read_to_string(&transcript)
            .unwrap_or_default()
            .contains("answer: remember this")
    );

    // `hibernate` returns once the process has exited.
    h.ok(&["hibernate", &id]);
    let saved = std::fs::read_to_string(&transcript).unwrap_or_default();
    assert!(
        saved.contains("answer: remember this"),
        "the agent was killed before it saved its last answer:\n{saved}"
    );
    assert_eq!(h.state_of(&id), "hibernated");
}

/// Issue 31 item 6, with the fake as the real claude orders it: the answer is
/// drawn, its `Stop` hook runs, and only then (here 2 s later, as on a loaded
/// machine) is it written; a SIGTERM before that loses it. A hibernate the
/// moment the answer is on screen waits for the transcript to hold it, and
/// the wake resumes that conversation with the answer in it.
#[test]
fn a_hibernate_the_moment_an_answer_is_drawn_waits_for_the_transcript_to_hold_it() {
    let h = Hangar::with_env(&[("FAKE_AGENT_TRANSCRIPT_LAG_MS", "2000")]);
    let id = h.new_pane();
    let banner = h.wait_screen(&id, "fake-agent claude session");
    let psid = banner
        .split_whitespace()
        .skip_while(|w| *w != "session")
        .nth(1)
        .expect("the banner names the session id")
        .to_owned();
    h.ok(&["send", &id, "keep this one"]);
    h.wait_screen(&id, "answer: keep this one");
    let transcript = h.claude_transcript(&h.work, &psid);
    let written = || {
        std::fs::read_to_string(&transcript)
            .unwrap_or_default()
            .contains("answer: keep this one")
    };
    assert!(!written(), "drawn before it is written, as claude does");

    h.ok(&["hibernate", &id]);
    assert!(
        written(),
        "the agent was stopped before its transcript held the answer"
    );
    assert_eq!(h.state_of(&id), "hibernated");
    h.ok(&["send", &id, "and after"]);
    let screen = h.wait_screen(&id, "answer: and after");
    assert!(
        screen.contains(&format!("session {psid} (resumed)")),
        "the wake resumed the same conversation:\n{screen}"
    );
}
