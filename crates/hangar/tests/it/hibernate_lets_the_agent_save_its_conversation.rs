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
