//! OpenCode sessions resume their own conversation (issue 16 defect 5),
//! with the fake opencode keeping its conversations in SQLite as the real
//! one does (`ses_...` ids, created by the first prompt). hangar learns a
//! session's id only on proof (DESIGN.md rule 10): the conversation holds a
//! prompt hangar typed into that session. Two sessions in one folder and a
//! person's own opencode there each keep theirs.

use crate::support;

use std::io::Write;
use std::process::{Command, Stdio};

use support::{DEADLINE, Hangar};

/// Kills the outside opencode even when the test fails.
struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The id the fake prints in its banner (`fake-agent opencode session <id>`).
fn banner_id(h: &Hangar, id: &str) -> String {
    let screen = h.wait_screen(id, "fake-agent opencode session ");
    screen
        .split("fake-agent opencode session ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .expect("the banner names the session")
        .to_owned()
}

fn wait_provider_id(h: &Hangar, id: &str) -> String {
    let mut found = None;
    h.wait_until(&format!("{id} has an opencode id"), DEADLINE, || {
        found = h.provider_id(id).0;
        found.is_some()
    });
    found.expect("found once the wait ends")
}

#[test]
fn each_opencode_session_learns_and_resumes_its_own_conversation_and_never_an_outside_one() {
    let h = Hangar::new();
    h.start_daemon();
    let a = h.new_agent(&["--provider", "opencode"]);
    let b = h.new_agent(&["--provider", "opencode"]);
    let (ses_a, ses_b) = (banner_id(&h, &a), banner_id(&h, &b));
    assert_eq!(h.provider_id(&a).0, None, "no id before the first prompt");

    // A person's own opencode in the same folder, after both started.
    let mut outside = KillOnDrop(
        Command::new(support::fake_agent_bin())
            .args(["--style", "opencode"])
            .env_clear()
            .envs(
                h.env_vars()
                    .iter()
                    .filter(|(k, _)| k != "HANGAR_HOME")
                    .map(|(k, v)| (k, v)),
            )
            .current_dir(&h.work)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()
            .expect("start an outside opencode"),
    );
    outside
        .0
        .stdin
        .as_mut()
        .expect("piped")
        .write_all(b"an outside question\n")
        .expect("type into the outside opencode");

    h.ok(&["send", &a, "question for a"]);
    h.ok(&["send", &b, "question for b"]);
    h.wait_screen(&a, "answer: question for a");
    assert_eq!(wait_provider_id(&h, &a), ses_a);
    assert_eq!(wait_provider_id(&h, &b), ses_b);

    // A wake resumes the session's own conversation.
    h.ok(&["hibernate", &a]);
    h.wait_state(&a, "hibernated");
    h.ok(&["wake", &a]);
    h.wait_screen(
        &a,
        &format!("fake-agent opencode session {ses_a} (resumed)"),
    );
    assert_eq!(h.processes_with_flag("--session", &ses_a).len(), 1);
    assert_eq!(h.provider_id(&b).0.as_deref(), Some(ses_b.as_str()));

    drop(outside);
}
