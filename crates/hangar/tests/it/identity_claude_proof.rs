//! Process-level tests of DESIGN.md rule 10 for claude sessions, and of
//! prompt delivery, with the fake following Claude Code 2.1.197: a claude
//! someone runs outside hangar in the same folder is never adopted; a
//! `/clear` is followed through the process's own `sessions/<pid>.json`
//! with hooks off; a lost Enter is pressed again, and a prompt that never
//! starts a turn is reported, not claimed.

use crate::support;

use std::io::Write;
use std::process::{Child, Command, Stdio};

use support::{DEADLINE, Hangar, fake_agent_bin};

/// A claude a person runs in their own terminal: not started by hangar, same
/// config folder, same project folder. Killed when dropped.
struct Outside {
    child: Child,
}

impl Outside {
    fn start(h: &Hangar) -> Outside {
        let child = Command::new(fake_agent_bin())
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", &h.user_home)
            .env("CLAUDE_CONFIG_DIR", &h.claude_dir)
            .current_dir(&h.work)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start the outside claude");
        Outside { child }
    }

    fn send(&mut self, line: &str) {
        let stdin = self.child.stdin.as_mut().expect("piped stdin");
        writeln!(stdin, "{line}").expect("type into the outside claude");
    }
}

impl Drop for Outside {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The ids of the claude transcripts in `h.work`'s project folder.
fn transcripts_in_folder(h: &Hangar) -> Vec<String> {
    let folder = h
        .claude_transcript(&h.work, "x")
        .parent()
        .expect("project folder")
        .to_path_buf();
    std::fs::read_dir(folder)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            e.file_name()
                .to_str()
                .and_then(|n| n.strip_suffix(".jsonl"))
                .map(str::to_owned)
        })
        .collect()
}

fn wait_transcript_has(h: &Hangar, psid: &str, needle: &str) {
    let path = h.claude_transcript(&h.work, psid);
    h.wait_until(
        &format!("{psid}'s transcript has {needle:?}"),
        DEADLINE,
        || std::fs::read_to_string(&path).is_ok_and(|t| t.contains(needle)),
    );
}

#[test]
fn a_claude_run_outside_hangar_in_the_same_folder_is_never_adopted() {
    let h = Hangar::new();
    let a = h.new_pane();
    h.wait_screen(&a, "fake-agent claude session");
    let own = h.wait_transcript_id(&a);
    h.ok(&["send", &a, "inside one"]);
    h.wait_screen(&a, "answer: inside one");

    // A person's own claude in the same folder, in another terminal: its
    // transcript is the newest one there for as long as its slow turn runs.
    let mut outside = Outside::start(&h);
    outside.send("slow 3000 outside one");
    let theirs = {
        let mut found = None;
        h.wait_until("the outside claude wrote its transcript", DEADLINE, || {
            found = transcripts_in_folder(&h).into_iter().find(|t| *t != own);
            found.is_some()
        });
        found.expect("found once the wait ends")
    };
    wait_transcript_has(&h, &theirs, "answer: outside one");
    assert_eq!(
        h.provider_id(&a).0.as_deref(),
        Some(own.as_str()),
        "the outside conversation was adopted while it ran"
    );

    // Hibernate (the watcher's last look) and wake: A resumes its own.
    h.ok(&["hibernate", &a]);
    h.wait_state(&a, "hibernated");
    assert_eq!(h.provider_id(&a).0.as_deref(), Some(own.as_str()));
    h.ok(&["wake", &a]);
    h.wait_until("A resumes its own conversation", DEADLINE, || {
        !h.processes_with_flag("--resume", &own).is_empty()
    });
    assert!(h.processes_with_flag("--resume", &theirs).is_empty());
    h.ok(&["send", &a, "inside two"]);
    h.wait_screen(&a, "answer: inside two");
    wait_transcript_has(&h, &own, "inside two");
    let outside_text = std::fs::read_to_string(h.claude_transcript(&h.work, &theirs)).unwrap();
    assert!(!outside_text.contains("inside two"));
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
fn with_hooks_off_a_clear_is_followed_through_the_processs_own_record() {
    let h = Hangar::new();
    // No hooks: as a user's `disableAllHooks` leaves it.
    h.write_config("[activity]\nsources = [\"transcript\", \"proxy\", \"screen\"]\n");
    let a = h.new_pane();
    h.wait_screen(&a, "fake-agent claude session");
    let old = h.wait_transcript_id(&a);
    assert!(!h.home.join("hooks").exists(), "hooks were installed");
    h.ok(&["send", &a, "before clear"]);
    h.wait_screen(&a, "answer: before clear");
    h.ok(&["send", &a, "/clear"]);
    let new = cleared_to(&h.wait_screen(&a, "cleared: new session"));
    assert_ne!(new, old);
    h.wait_until("the cleared session holds the new id", DEADLINE, || {
        h.provider_id(&a) == (Some(new.clone()), Some("transcript".into()))
    });
    h.ok(&["hibernate", &a]);
    h.wait_state(&a, "hibernated");
    h.ok(&["wake", &a]);
    h.wait_until(
        "the wake resumes the post-clear conversation",
        DEADLINE,
        || !h.processes_with_flag("--resume", &new).is_empty(),
    );
    assert!(h.processes_with_flag("--resume", &old).is_empty());
}

#[test]
fn a_session_in_a_folder_with_odd_characters_finds_its_transcript_in_claudes_folder() {
    let h = Hangar::new();
    let odd = h.work.join("my_dir a~b+c@d é");
    std::fs::create_dir_all(&odd).unwrap();
    let a = h.new_agent(&["--provider", "claude", "--cwd", odd.to_str().unwrap()]);
    h.wait_screen(&a, "fake-agent claude session");
    let psid = h.wait_transcript_id(&a);
    h.ok(&["send", &a, "in an odd folder"]);
    h.wait_screen(&a, "answer: in an odd folder");
    let v = h.json(&["transcript", &a]);
    let path = v["path"].as_str().unwrap();
    // `_`, space, `~`, `+`, `@` and `é` are each one `-`, as Claude Code has it.
    assert!(
        path.ends_with(&format!("-my-dir-a-b-c-d--/{psid}.jsonl")),
        "{path}"
    );
    assert!(v["messages"].to_string().contains("in an odd folder"));
}

#[test]
fn a_lost_enter_is_pressed_again_and_the_prompt_is_answered() {
    let h = Hangar::with_env(&[("FAKE_AGENT_SWALLOW_ENTERS", "1")]);
    let a = h.new_pane();
    h.wait_screen(&a, "fake-agent claude session");
    let v = h.json(&["send", &a, "first prompt"]);
    assert_eq!(v["confirmed"], true, "{v}");
    assert_eq!(v["enters"], 2, "{v}");
    h.wait_screen(&a, "answer: first prompt");
}

#[test]
fn a_prompt_that_never_starts_a_turn_is_reported_not_claimed() {
    // Every Enter is lost: the text never leaves the input line.
    let h = Hangar::with_env(&[("FAKE_AGENT_SWALLOW_ENTERS", "100")]);
    let a = h.new_pane();
    h.wait_screen(&a, "fake-agent claude session");
    let err = h.fail(&["send", &a, "stuck prompt"]);
    assert!(err.contains("no turn started after 3 Enters"), "{err}");
    assert!(!h.screen(&a).contains("answer: stuck prompt"));
}
