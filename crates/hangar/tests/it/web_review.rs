//! Issue 30 on the web page, through a real browser (headless Chromium
//! over WebDriver, as web_browser.rs): a session's diff (file list, hunks)
//! with the real git in a temporary repository, a hostile file name shown
//! escaped as text, and review comments sent to the agent
//! (hangar-fake-agent, which shows the prompt it takes) as one prompt
//! naming file and line; the Fork button, which forks the session into a
//! split beside it (as the TUI's `F`) and opens the fork, only for a
//! paired page of the same origin with full access. Skips with one line
//! when Chromium is not installed.

use crate::support;
use crate::web_support;

use std::fs;
use std::path::PathBuf;

use serde_json::json;
use support::git::{git, make_repo};
use support::*;
use web_support::{Browser, Screen, WebServer, http};

#[test]
fn the_page_shows_a_sessions_diff_escaped_and_sends_its_comments_as_one_prompt() {
    let bins = browser_or_skip!();
    let h = Hangar::new();
    let repo = make_repo(&h);
    let notes: String = (1..=12).map(|i| format!("line {i}\n")).collect();
    fs::write(repo.join("notes.txt"), notes).unwrap();
    git(&repo, &["add", "notes.txt"]);
    git(&repo, &["commit", "-q", "-m", "notes"]);
    let id = h.new_agent(&[
        "--provider",
        "claude",
        "--worktree",
        "--title",
        "web review",
    ]);
    h.wait_state(&id, "live");
    h.wait_screen(&id, "> ");
    let wt = PathBuf::from(h.session(&id)["worktree"]["path"].as_str().unwrap());
    let changed: String = (1..=12)
        .map(|i| match i {
            8 => "line 8 <b>changed</b>\n".to_owned(),
            i => format!("line {i}\n"),
        })
        .collect();
    fs::write(wt.join("notes.txt"), changed).unwrap();
    let evil = "<img src=x onerror=window.__pwned=1>\u{1b}[31m\u{202e}.txt";
    fs::write(wt.join(evil), "x\n").unwrap();

    let web = WebServer::start(&h, &[]);
    let browser = Browser::start(&bins, Screen::Desktop);
    browser.goto(&web.url);
    browser.wait_js(
        "the list",
        "return document.querySelectorAll('a.row').length >= 1;",
    );
    browser.goto(&format!("{}/#/s/{id}", web.base));
    browser.wait_js(
        "the session view",
        "return !document.getElementById('session-view').hidden;",
    );
    browser.click("#diff-open");
    browser.wait_js(
        "both files listed",
        "return document.querySelectorAll('#diff-files button').length === 2;",
    );
    let names = browser.js(
        "return [...document.querySelectorAll('#diff-files button')].map(b => b.textContent);",
        json!([]),
    );
    let names: Vec<String> = serde_json::from_value(names).unwrap();
    let hostile = names
        .iter()
        .find(|n| n.contains("<img"))
        .expect("the hostile name is listed");
    assert!(
        hostile.contains("\\u{1b}[31m\\u{202e}.txt")
            && !hostile.contains('\u{1b}')
            && !hostile.contains('\u{202e}'),
        "control and bidi characters are shown escaped: {hostile:?}"
    );
    assert!(
        names
            .iter()
            .any(|n| n.starts_with("M notes.txt") && n.contains("+1 -1")),
        "{names:?}"
    );
    assert_eq!(
        browser.js("return document.querySelectorAll('#diff-files img').length + (window.__pwned ? 1 : 0);", json!([])),
        json!(0),
        "the name is text, not markup"
    );

    // notes.txt's hunk, and a comment on its changed line 8.
    browser.click("#diff-files li:nth-child(2) button");
    browser.wait_js(
        "notes.txt's lines",
        "return [...document.querySelectorAll('#diff-lines tr.added')].some(r => r.textContent.includes('line 8 <b>changed</b>'));",
    );
    assert_eq!(
        browser.js(
            "return document.querySelectorAll('#diff-lines b').length;",
            json!([])
        ),
        json!(0),
        "a line's text is text"
    );
    browser.click("#diff-lines tr.added");
    browser.wait_js(
        "the comment form",
        "return !document.getElementById('comment-form').hidden;",
    );
    assert_eq!(
        browser.js(
            "return document.getElementById('comment-at').textContent;",
            json!([])
        ),
        json!("Comment on notes.txt:8")
    );
    browser.type_into("#comment-text", "use a constant");
    browser.click("#comment-form button[type=submit]");
    // A second comment, on the hostile file's only line.
    browser.click("#diff-files li:nth-child(1) button");
    browser.wait_js(
        "the hostile file's line",
        "return [...document.querySelectorAll('#diff-lines tr.added')].some(r => r.textContent.includes('+x'));",
    );
    browser.click("#diff-lines tr.added");
    browser.type_into("#comment-text", "why this file?");
    browser.click("#comment-form button[type=submit]");
    browser.wait_js(
        "two comments",
        "return document.querySelectorAll('#comments li').length === 2;",
    );
    browser.click("#comments-send");
    browser.wait_js(
        "the comments were sent",
        "return document.querySelectorAll('#comments li').length === 0;",
    );
    let screen = h.wait_screen(&id, "notes.txt:8: use a constant");
    let prompts: Vec<&str> = screen
        .lines()
        .filter(|l| l.starts_with("> Review comments"))
        .collect();
    assert_eq!(prompts.len(), 1, "one prompt:\n{screen}");
    // The second comment follows in the same (wrapped) prompt.
    let after = h.wait_screen(&id, "why this file?");
    assert!(after.contains(".txt:1: why this file?"), "{after}");
}

#[test]
fn the_fork_button_forks_the_session_into_a_split_beside_it_and_opens_the_fork() {
    let bins = browser_or_skip!();
    let h = Hangar::new();
    let parent = h.new_agent(&["--provider", "claude", "--title", "web fork"]);
    h.wait_state(&parent, "live");
    h.ok(&["send", &parent, "parent one"]);
    h.wait_screen(&parent, "answer: parent one");
    let parent_psid = h.wait_transcript_id(&parent);
    let sessions = |h: &Hangar| h.json(&["ls"]).as_array().map(Vec::len).unwrap_or(0);
    assert_eq!(sessions(&h), 1);

    // Like every route that acts: no credential, another site's page, or a
    // read-only token fork nothing.
    let web = WebServer::start(&h, &[]);
    let fork_url = format!("{}/api/sessions/{parent}/fork", web.base);
    let r = http("POST", &fork_url, &[], Some(b"{}"));
    assert_eq!(r.status, 401);
    let cookie = web.pair_cookie();
    let r = http(
        "POST",
        &fork_url,
        &[("Cookie", &cookie), ("Origin", "http://evil.example")],
        Some(b"{}"),
    );
    assert_eq!(r.status, 403);
    let read_only = WebServer::start(&h, &["--read-only"]);
    let r = read_only.post(&format!("/api/sessions/{parent}/fork"), &json!({}));
    assert_eq!(r.status, 403);
    assert_eq!(r.json()["error"]["code"], "read_only");
    assert_eq!(sessions(&h), 1, "a refused fork made a session");

    let browser = Browser::start(&bins, Screen::Desktop);
    browser.goto(&web.url);
    browser.wait_js(
        "the list",
        "return document.querySelectorAll('a.row').length >= 1;",
    );
    browser.goto(&format!("{}/#/s/{parent}", web.base));
    browser.wait_js(
        "the session view",
        "return !document.getElementById('session-view').hidden && !document.getElementById('fork').hidden;",
    );
    browser.click("#fork");
    browser.wait_js(
        "the fork's view",
        &format!(
            "return location.hash.startsWith('#/s/') && location.hash !== '#/s/{parent}' \
             && document.getElementById('heading').textContent === 'web fork (fork)';"
        ),
    );
    let hash = browser.js("return location.hash;", json!([]));
    let fork = hash.as_str().unwrap().trim_start_matches("#/s/").to_owned();
    let row = h.wait_state(&fork, "live");
    assert_eq!(row["forked_from"], parent.as_str());
    assert_eq!(row["handoff"], false);
    assert_eq!(sessions(&h), 2, "one click, one fork");
    // The fork carries the parent's conversation on (the fake says so)...
    h.wait_screen(&fork, &format!("(forked from {parent_psid})"));
    // ...in a split beside its parent, as the TUI's F.
    let tabs = h.json(&["tab", "ls"]);
    assert_eq!(tabs[0]["panes"].as_array().map(Vec::len), Some(2), "{tabs}");
    assert_eq!(row["placement"], "pane");
    // The page's terminal is the fork's.
    browser.wait_js(
        "the fork's screen in the page",
        &format!(
            "return document.getElementById('term').textContent.includes('forked from {parent_psid}');"
        ),
    );
}
