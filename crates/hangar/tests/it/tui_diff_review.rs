//! Issue 30, the TUI's review view through a real PTY: `Ctrl-b D` while
//! typing (and `D` in command mode) opens the focused session's diff with
//! the real git in a temporary repository; `Enter` opens a file's hunks,
//! `c` writes a comment on the line under the cursor, `s` sends every
//! comment to the agent (hangar-fake-agent, which echoes its prompt) as
//! ONE prompt naming file and line.

use crate::pty_screen;
use crate::support;

use std::fs;
use std::path::PathBuf;

use pty_screen::{PtyApp, mask};
use support::git::{git, make_repo};
use support::*;

const ROWS: u16 = 36;
const COLS: u16 = 170;

/// A claude pane in its own worktree of a repository whose `notes.txt`
/// (twelve numbered lines, on main) the agent changed at line 8, and
/// which gained an untracked `new.txt`.
fn agent_with_a_change(h: &Hangar) -> (String, PathBuf) {
    let repo = make_repo(h);
    let notes: String = (1..=12).map(|i| format!("line {i}\n")).collect();
    fs::write(repo.join("notes.txt"), notes).unwrap();
    git(&repo, &["add", "notes.txt"]);
    git(&repo, &["commit", "-q", "-m", "notes"]);
    let id = h.new_agent(&["--provider", "claude", "--worktree", "--title", "review me"]);
    h.wait_state(&id, "live");
    let wt = PathBuf::from(h.session(&id)["worktree"]["path"].as_str().unwrap());
    let changed: String = (1..=12)
        .map(|i| match i {
            8 => "line 8, changed by the agent\n".to_owned(),
            i => format!("line {i}\n"),
        })
        .collect();
    fs::write(wt.join("notes.txt"), changed).unwrap();
    fs::write(wt.join("new.txt"), "a new file\n").unwrap();
    (id, wt)
}

fn tui(h: &Hangar) -> PtyApp {
    let app = PtyApp::spawn(h.command(&[]), ROWS, COLS);
    // A fresh agent is idle once its prompt is up; waiting for that keeps
    // the snapshot free of the moment before.
    app.wait_for("the live, idle pane", |t| {
        t.contains("fake-agent claude session") && t.contains("· live · idle")
    });
    app
}

/// The diff view's heading row (the box's first line inside its border).
fn heading(app: &PtyApp) -> String {
    app.rows()
        .into_iter()
        .find(|r| r.contains("· file "))
        .unwrap_or_default()
}

#[test]
fn ctrl_b_d_opens_the_diff_and_comments_reach_the_agent_as_one_prompt_naming_file_and_line() {
    let h = Hangar::new();
    h.ok(&["status"]);
    let (id, _wt) = agent_with_a_change(&h);
    let mut app = tui(&h);
    // Typing into the pane, the prefix and D open the view.
    app.write(b"\r");
    app.wait_text("TYPING");
    app.write(b"\x02D");
    app.wait_for("the file list", |t| {
        t.contains(" diff · claude · review me ")
            && t.contains("A new.txt")
            && t.contains("M notes.txt")
            && t.contains("2 file(s), +2 -1")
    });
    // notes.txt's hunks: the cursor starts on the hunk's header.
    app.keys(&[b"j", b"\r"]);
    app.wait_for("notes.txt's hunk", |t| {
        t.contains("@@ -5,7 +5,7 @@") && t.contains("+line 8, changed by the agent")
    });
    app.wait_for("the heading names the file and hunk", |_| {
        heading(&app).contains("notes.txt · modified · file 2/2 · hunk 1/1 · line 5")
    });
    insta::assert_snapshot!(
        "notes_hunk",
        mask(
            &app.settled_rows(std::time::Duration::from_millis(150))
                .join("\n")
        )
    );
    // Down to the added line 8 (three context lines, the removed one).
    for _ in 0..5 {
        app.write(b"j");
    }
    app.wait_for("the cursor on line 8", |_| {
        heading(&app).contains("· line 8 ")
    });
    app.write(b"c");
    app.wait_text("comment on notes.txt:8:");
    app.write(b"const please\r");
    app.wait_text("1 comment(s) written");
    // Back to the list, the other file, its first line.
    app.write(b"q");
    app.wait_text("Enter: hunks");
    app.keys(&[b"k", b"\r"]);
    app.wait_for("new.txt's hunk", |t| t.contains("+a new file"));
    app.keys(&[b"j", b"c"]);
    app.wait_text("comment on new.txt:1:");
    app.write(b"header\r");
    app.wait_text("2 comment(s) written");
    app.write(b"s");
    app.wait_text("sent 2 comment(s) to the agent as one prompt");
    let screen = h.wait_screen(&id, "new.txt:1: header");
    // The fake agent shows each prompt it takes on a `> ` line.
    let prompts: Vec<&str> = screen
        .lines()
        .filter(|l| l.starts_with("> Review comments"))
        .collect();
    assert_eq!(prompts.len(), 1, "one prompt:\n{screen}");
    assert!(
        prompts[0].contains("(1) notes.txt:8: const please (2) new.txt:1: header"),
        "it names both files and lines:\n{screen}"
    );
    // Nothing is left to send: q and Esc close the view at once.
    app.write(b"q");
    app.wait_text("Enter: hunks");
    app.write(b"q");
    app.wait_for("the view closed", |t| !t.contains(" diff · "));
}

#[test]
fn d_in_command_mode_opens_the_view_and_a_session_outside_git_says_why() {
    let h = Hangar::new();
    h.ok(&["status"]);
    // The fixture's project folder is no repository here.
    h.new_pane();
    let mut app = tui(&h);
    app.write(b"D");
    app.wait_text("not a git checkout");
    app.write(b"\x1b");
    app.wait_for("the view closed", |t| !t.contains(" diff · "));
}

#[test]
fn a_ten_thousand_file_change_lists_and_a_file_deep_in_it_opens_its_own_hunk() {
    let h = Hangar::new();
    h.ok(&["status"]);
    make_repo(&h);
    let id = h.new_agent(&["--provider", "claude", "--worktree", "--title", "many"]);
    h.wait_state(&id, "live");
    let wt = PathBuf::from(h.session(&id)["worktree"]["path"].as_str().unwrap());
    let dir = wt.join("many");
    fs::create_dir_all(&dir).unwrap();
    for i in 0..10_000 {
        fs::write(dir.join(format!("f{i:05}.txt")), format!("line {i}\n")).unwrap();
    }
    let mut app = tui(&h);
    app.write(b"D");
    app.wait_text("10000 file(s), +10000 -0");
    // G: the last file, whose page of the patch is asked on its own.
    app.keys(&[b"G", b"\r"]);
    app.wait_for("the last file's hunk", |t| {
        t.contains("many/f09999.txt · added · file 10000/10000") && t.contains("+line 9999")
    });
}
