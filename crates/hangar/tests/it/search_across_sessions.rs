//! Issue 20, "search finding a word in a hibernated session", through the
//! real daemon: `hangar search` (and `--json`) finds a word in a stopped
//! session's saved history without starting any process (counted from
//! /proc), and a word in a claude or codex transcript (written by
//! hangar-fake-agent as the real CLIs write theirs) with source
//! `transcript`; it caps what it returns and says so, never lets an escape
//! sequence of a matched line through; and the TUI's search dialog
//! (`Ctrl-b /`) lists a match, Enter focusing its pane (switching tab) or
//! selecting a parked one in the side list.

use crate::pty_screen;
use crate::support;

use std::collections::BTreeSet;
use std::fs;

use pty_screen::PtyApp;
use serde_json::{Value, json};
use support::*;

/// A shell session that printed `word` (built by printf, so the typed
/// command line does not hold it) and then enough lines to scroll it off
/// the screen into history.
fn shell_that_printed(h: &Hangar, args: &[&str], left: &str, right: &str) -> String {
    let mut all = vec!["--provider", "shell"];
    all.extend_from_slice(args);
    let id = h.new_agent(&all);
    h.ok(&[
        "send",
        &id,
        &format!("printf '%s%s\\n' {left} {right}; seq 1 200; echo printed-$((6*7))"),
    ]);
    h.wait_screen(&id, "printed-42");
    id
}

fn matches(v: &Value) -> Vec<Value> {
    v["matches"].as_array().cloned().unwrap_or_default()
}

/// `hangar search ARGS` with its exit code and stdout.
fn search(h: &Hangar, args: &[&str]) -> (Option<i32>, String) {
    let mut all = vec!["search"];
    all.extend_from_slice(args);
    let out = h.run(&all);
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

fn pids(h: &Hangar) -> BTreeSet<i32> {
    h.pids_for_home()
        .into_iter()
        .filter(|&p| !is_zombie(p))
        .collect()
}

#[test]
fn search_finds_a_word_in_a_hibernated_sessions_history_without_starting_anything() {
    let h = Hangar::new();
    h.ok(&["status"]);
    let id = shell_that_printed(&h, &["--title", "the zoo"], "Zebra", "Quokka");
    let other = shell_that_printed(&h, &[], "plain", "words");
    h.ok(&["hibernate", &id]);
    h.wait_state(&id, "hibernated");
    h.ok(&["hibernate", &other]);
    h.wait_state(&other, "hibernated");
    let before = pids(&h);

    let v = h.json(&["search", "zebraquokka"]);
    let found = matches(&v);
    assert!(!found.is_empty(), "{v:#}");
    for m in &found {
        assert_eq!(m["session"], id.as_str(), "{m:#}");
    }
    let m = &found[0];
    assert_eq!(m["source"], "history", "scrolled off the screen: {m:#}");
    assert_eq!(m["text"], "ZebraQuokka");
    assert_eq!(m["title"], "the zoo");
    assert_eq!(m["state"], "hibernated");
    assert!(m["line"].as_u64().is_some_and(|l| l >= 1), "{m:#}");
    assert!(m["tab"].is_string(), "a pane's tab: {m:#}");
    assert_eq!(v["truncated"], false);
    assert_eq!(v["case_sensitive"], false);

    let (code, out) = search(&h, &["zebraquokka"]);
    assert_eq!(code, Some(0), "{out}");
    let line = out
        .lines()
        .find(|l| l.contains("**ZebraQuokka**"))
        .unwrap_or_else(|| panic!("the match is marked in one line:\n{out}"));
    assert!(line.starts_with(&id[..8]), "{line}");
    assert!(
        line.contains("the zoo") && line.contains("history:"),
        "{line}"
    );

    // Smart case: an upper-case letter makes the query exact.
    assert!(!matches(&h.json(&["search", "ZebraQuokka"])).is_empty());
    let (code, out) = search(&h, &["ZEBRAQUOKKA"]);
    assert_eq!(code, Some(1), "nothing matches: {out}");
    assert!(out.contains("no match"), "{out}");
    // --session narrows the search to one session.
    let (code, _) = search(&h, &["zebraquokka", "--session", &other]);
    assert_eq!(code, Some(1));

    for s in [&id, &other] {
        assert_eq!(h.state_of(s), "hibernated", "searching woke nothing");
    }
    assert_eq!(pids(&h), before, "no process started or ended");
}

#[test]
fn search_caps_the_matches_it_returns_and_says_so() {
    let h = Hangar::new();
    h.ok(&["status"]);
    let id = h.new_agent(&["--provider", "shell"]);
    h.ok(&[
        "send",
        &id,
        "seq 1 300 | sed 's/^/row-/'; echo done-$((6*7))",
    ]);
    h.wait_screen(&id, "done-42");
    let v = h.json(&["search", "row-"]);
    assert_eq!(v["truncated"], true, "{v:#}");
    let found = matches(&v);
    assert_eq!(found.len(), hangar_core::search::DEFAULT_PER_SESSION);
    assert_eq!(found[0]["source"], "screen", "a live session's screen");
    assert_eq!(
        found[0]["text"], "row-300",
        "the most recent first: {:#}",
        found[0]
    );
    let (_, out) = search(&h, &["row-"]);
    assert!(out.contains("more matches than shown"), "{out}");
}

/// A claude session (the fake agent) that answered one prompt and wrote
/// its transcript; returns its id and the transcript's path.
fn claude_that_answered(h: &Hangar, title: &str, prompt: &str) -> (String, std::path::PathBuf) {
    let id = h.new_agent(&["--provider", "claude", "--title", title]);
    h.wait_screen(&id, "> ");
    h.ok(&["send", &id, prompt]);
    h.wait_screen(&id, "answer: ");
    let psid = h.wait_transcript_id(&id);
    let path = h.claude_transcript(&h.work, &psid);
    assert!(path.is_file(), "{} exists", path.display());
    (id, path)
}

#[test]
fn a_word_in_a_hibernated_agents_transcript_is_found_with_source_transcript() {
    let h = Hangar::new();
    h.ok(&["status"]);
    let (id, _) = claude_that_answered(&h, "transcribed", "please remember axolotl");
    h.ok(&["hibernate", &id]);
    h.wait_state(&id, "hibernated");
    let before = pids(&h);

    let v = h.json(&["search", "axolotl"]);
    let from_transcript: Vec<Value> = matches(&v)
        .into_iter()
        .filter(|m| m["source"] == "transcript")
        .collect();
    assert!(!from_transcript.is_empty(), "{v:#}");
    for m in &from_transcript {
        assert_eq!(m["session"], id.as_str());
        assert!(
            m["text"].as_str().is_some_and(|t| t.contains("axolotl")),
            "{m:#}"
        );
    }
    assert_eq!(h.state_of(&id), "hibernated");
    assert!(h.fake_agent_pids_for_home().is_empty(), "no agent started");
    assert_eq!(pids(&h), before);
}

#[test]
fn a_word_in_a_hibernated_codex_rollout_is_found_with_source_transcript() {
    let h = Hangar::new();
    h.ok(&["status"]);
    let id = h.new_agent(&["--provider", "codex"]);
    h.wait_transcript_id(&id);
    h.ok(&["send", &id, "remember pangolin"]);
    h.wait_screen(&id, "answer: remember pangolin");
    h.ok(&["hibernate", &id]);
    h.wait_state(&id, "hibernated");
    h.wait_until("the codex processes are gone", DEADLINE, || {
        h.fake_agent_pids_for_home().is_empty()
    });

    let v = h.json(&["search", "pangolin"]);
    let texts: Vec<Value> = matches(&v)
        .into_iter()
        .filter(|m| m["source"] == "transcript" && m["session"] == id.as_str())
        .map(|m| m["text"].clone())
        .collect();
    assert!(
        texts.contains(&json!("remember pangolin"))
            && texts.contains(&json!("answer: remember pangolin")),
        "the rollout's user and assistant messages: {v:#}"
    );
    assert_eq!(h.state_of(&id), "hibernated");
    assert!(h.fake_agent_pids_for_home().is_empty(), "no codex started");
}

#[test]
fn escape_sequences_in_a_matched_line_never_reach_the_output() {
    let h = Hangar::new();
    h.ok(&["status"]);
    // A title is an agent's text too.
    let (id, path) = claude_that_answered(&h, "\x1b]0;T\x07titled\u{202e}", "hello");
    // The model's answer as a hostile page could make it: the fake agent's
    // own last assistant entry, its text replaced.
    let text = fs::read_to_string(&path).unwrap();
    let mut answer: Value = text
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .rfind(|v| v["type"] == "assistant")
        .expect("the fake agent wrote an assistant line");
    let hostile = "\x1b]0;PWNED\x07\x1b[2Jsecret-\x1b[31mnarw\x1b]52;c;aGk=\x07hal\x1b[0m \u{202e}\u{9b}2Jend\x07";
    answer["message"]["content"] = json!([{"type": "text", "text": hostile}]);
    let mut file = fs::OpenOptions::new().append(true).open(&path).unwrap();
    std::io::Write::write_all(&mut file, format!("{answer}\n").as_bytes()).unwrap();
    drop(file);

    let raw_unsafe = |bytes: &[u8]| {
        let s = String::from_utf8_lossy(bytes);
        s.chars()
            .find(|&c| c != '\n' && hangar_core::display::is_terminal_unsafe(c))
    };
    for args in [
        vec!["search", "secret-narwhal"],
        vec!["--json", "search", "secret-narwhal"],
    ] {
        let out = h.run(&args);
        assert!(out.status.success(), "{args:?}: {out:?}");
        assert_eq!(raw_unsafe(&out.stdout), None, "{args:?} stdout");
        assert_eq!(raw_unsafe(&out.stderr), None, "{args:?} stderr");
        assert!(String::from_utf8_lossy(&out.stdout).contains("secret-"));
    }
    let v = h.json(&["search", "secret-narwhal"]);
    let m = &matches(&v)[0];
    assert_eq!(m["session"], id.as_str());
    assert_eq!(m["source"], "transcript");
    assert_eq!(
        m["text"], "secret-narwhal end",
        "cleaned, not escaped: {m:#}"
    );
}

#[test]
fn the_tui_search_dialog_lists_a_hibernated_match_and_enter_focuses_its_pane() {
    let h = Hangar::new();
    h.ok(&["status"]);
    h.ok(&["tab", "new", "alpha"]);
    let found = shell_that_printed(&h, &["--tab", "alpha", "--title", "finder"], "oka", "pi");
    let _left = h.new_agent(&["--provider", "shell", "--tab", "alpha"]);
    h.ok(&["focus", &_left]);
    h.ok(&["tab", "new", "beta"]);
    let there = h.new_agent(&["--provider", "shell", "--tab", "beta"]);
    h.ok(&["focus", &there]);
    h.ok(&["hibernate", &found]);
    h.wait_state(&found, "hibernated");
    let tabs = h.json(&["tab", "ls"]);
    let tab_of = |title: &str| -> Value {
        tabs.as_array()
            .unwrap()
            .iter()
            .find(|t| t["title"] == title)
            .cloned()
            .unwrap()
    };
    assert_eq!(tab_of("beta")["active"], true);
    let alpha = tab_of("alpha")["id"].as_str().unwrap().to_owned();

    let mut app = PtyApp::spawn(h.command(&[]), 30, 140);
    app.wait_text("COMMAND");
    app.keys(&[b"?"]);
    app.wait_text("search every session's text");
    app.keys(&[b"\x1b"]);
    // A lone Esc is the Esc key once the escape time has passed with no
    // other byte; an Enter within it would make the pair Alt-Enter (as in
    // tmux), so a person, like this test, sees the help close first.
    app.wait_for("the help closed", |t| {
        !t.contains("search every session's text")
    });
    // From typing into a pane, as a tmux user reaches for it: Ctrl-b /.
    // One Enter: typing starts even while the pane is still being attached.
    app.keys(&[b"\r"]);
    app.wait_text("TYPING");
    app.keys(&[b"\x02", b"/", b"o", b"k", b"a", b"p", b"i"]);
    app.wait_for("the dialog lists the match", |t| {
        t.contains("okapi") && t.contains("finder") && t.contains("history")
    });
    assert_eq!(h.state_of(&found), "hibernated", "listing wakes nothing");
    app.keys(&[b"\r"]);
    h.wait_until("alpha is active with the match focused", DEADLINE, || {
        let tabs = h.json(&["tab", "ls"]);
        tabs.as_array().unwrap().iter().any(|t| {
            t["id"] == alpha.as_str() && t["active"] == true && t["focus"] == found.as_str()
        })
    });
    app.wait_for("the dialog closed", |t| !t.contains("search:"));
}

#[test]
fn enter_on_a_parked_match_selects_it_in_the_side_list_where_u_brings_it_back() {
    let h = Hangar::new();
    h.ok(&["status"]);
    let stay = h.new_agent(&["--provider", "shell"]);
    let found = shell_that_printed(&h, &["--title", "finder"], "tapi", "rus");
    h.ok(&["park", &found]);
    let later = h.new_agent(&["--provider", "shell", "--title", "parked later"]);
    h.ok(&["park", &later]);
    h.ok(&["focus", &stay]);
    for s in [&found, &later] {
        h.wait_until("parked", DEADLINE, || h.session(s)["placement"] == "parked");
    }

    let mut app = PtyApp::spawn(h.command(&[]), 30, 140);
    app.wait_text("COMMAND");
    app.keys(&[b"/", b"t", b"a", b"p", b"i", b"r", b"u", b"s"]);
    // One Enter, typed at once: before the answer comes it waits for it
    // and goes to its first match (issue 44: a key is never lost).
    app.keys(&[b"\r"]);
    app.wait_text("is parked: u brings it here");
    assert_eq!(h.session(&found)["placement"], "parked", "only selected");
    app.keys(&[b"u"]);
    h.wait_until("the match is a pane again", DEADLINE, || {
        h.session(&found)["placement"] == "pane"
    });
    assert_eq!(h.session(&later)["placement"], "parked", "the other stays");
}
