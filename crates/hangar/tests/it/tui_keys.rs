//! Issue 5, the TUI's keys driven through a real PTY: typing into a pane,
//! splitting, moving the focus, parking and unparking, pins, tabs, zoom,
//! closing (with the cascade confirmation), resizing the outer terminal,
//! and quitting without stopping anything. Issue 12: the new-agent dialog's
//! worktree option and the worktree a close keeps.

use crate::pty_screen;
use crate::support;

use std::time::{Duration, Instant};

use pty_screen::PtyApp;
use serde_json::json;
use support::git::make_repo;
use support::workspace::{Recipe, craft};
use support::*;

/// Start the daemon as a user does, by the CLI's auto-start. (The harness's
/// `start_daemon` can lose a race against the auto-start of its own
/// `status` probe on a loaded machine.)
fn start(h: &Hangar) {
    h.ok(&["status"]);
}

const ROWS: u16 = 36;
const COLS: u16 = 170;

fn banners(text: &str) -> usize {
    text.matches("fake-agent claude session").count()
}

fn tui_with_panes(h: &Hangar, panes: usize) -> PtyApp {
    let app = PtyApp::spawn(h.command(&[]), ROWS, COLS);
    app.wait_for(&format!("{panes} live panes"), |t| banners(t) == panes);
    app
}

fn pane_placements(h: &Hangar) -> usize {
    h.ls().iter().filter(|s| s["placement"] == "pane").count()
}

#[test]
fn enter_types_into_the_focused_pane_and_the_prefix_key_leaves() {
    let h = Hangar::new();
    start(&h);
    h.new_pane();
    let mut app = tui_with_panes(&h, 1);
    app.write(b"\r");
    app.wait_text("TYPING");
    app.write(b"hello\r");
    app.wait_text("answer: hello");
    app.write(b"\x02");
    app.wait_text("COMMAND");
    // Back in command mode, letters are keys again, not typed text.
    app.write(b"?");
    app.wait_text("keys (Esc closes)");
}

#[test]
fn the_split_key_starts_a_new_agent_beside_the_focused_pane() {
    let h = Hangar::new();
    start(&h);
    let a = h.new_pane();
    let mut app = tui_with_panes(&h, 1);
    app.write(b"%");
    app.wait_text("to the right of the focused pane");
    app.write(b"\r");
    app.wait_for("two panes", |t| banners(t) == 2);
    let ws = h.json(&["export"]);
    let text = ws.to_string();
    assert!(text.contains("vertical"), "a vertical split: {text}");
    assert_eq!(pane_placements(&h), 2);
    assert_eq!(h.state_of(&a), "live");
}

#[test]
fn a_new_agent_and_a_split_take_the_keyboard_as_a_new_tmux_pane_does() {
    let h = Hangar::new();
    start(&h);
    h.new_pane();
    let mut app = tui_with_panes(&h, 1);
    app.write(b"n");
    app.wait_text("new agent");
    // Enter, and typing at once, before the new pane is even live: the
    // text is the new agent's, not commands (its `q` would quit the TUI).
    app.write(b"\r");
    app.write(b"hello q\r");
    app.wait_for("two panes", |t| banners(t) == 2);
    app.wait_text("answer: hello q");
    app.wait_text("TYPING");
    app.wait_text("typing into the new agent: Ctrl-b goes back to commands");
    // A split too.
    app.write(b"\x02");
    app.wait_text("COMMAND");
    app.write(b"%");
    app.wait_text("to the right of the focused pane");
    app.write(b"\r");
    app.wait_for("three panes", |t| banners(t) == 3);
    app.wait_text("TYPING");
    app.write(b"split here\r");
    app.wait_text("answer: split here");
    // The prefix gives the keys back to commands, as the help line says.
    app.write(b"\x02");
    app.wait_text("COMMAND");
    app.write(b"?");
    app.wait_text("keys (Esc closes)");
}

#[test]
fn arrows_move_the_focus_and_the_daemon_remembers_it() {
    let h = Hangar::new();
    start(&h);
    let a = h.new_pane();
    let b = h.split(&a, "vertical");
    let mut app = tui_with_panes(&h, 2);
    let focus = |h: &Hangar| {
        h.json(&["tab", "ls"])[0]["focus"]
            .as_str()
            .map(str::to_owned)
    };
    assert_eq!(focus(&h), Some(b.clone()));
    app.write(b"\x1b[D");
    h.wait_until("the focus moved left", DEADLINE, || {
        focus(&h) == Some(a.clone())
    });
    app.write(b"\x1b[C");
    h.wait_until("the focus moved back right", DEADLINE, || {
        focus(&h) == Some(b.clone())
    });
}

#[test]
fn park_then_unpark_with_keys_moves_the_agent_out_of_and_back_into_the_grid() {
    let h = Hangar::new();
    start(&h);
    let a = h.new_pane();
    let b = h.split(&a, "vertical");
    let mut app = tui_with_panes(&h, 2);
    app.write(b"p");
    app.wait_for("one pane left", |t| banners(t) == 1);
    h.wait_until("b is parked", DEADLINE, || {
        h.session(&b)["placement"] == "parked"
    });
    app.write(b"u");
    app.wait_for("two panes again", |t| banners(t) == 2);
    assert_eq!(h.session(&b)["placement"], "pane");
    assert_eq!(h.state_of(&b), "live");
}

#[test]
fn a_pinned_parked_agent_comes_back_with_one_key() {
    let h = Hangar::new();
    start(&h);
    h.new_pane();
    let parked = h.new_agent(&["--provider", "claude", "--parked", "--title", "later"]);
    h.ok(&["pin", &parked]);
    let mut app = tui_with_panes(&h, 1);
    app.wait_text("1 ★claude · later");
    app.write(b"1");
    app.wait_for("the pinned agent is a pane", |t| banners(t) == 2);
    assert_eq!(h.session(&parked)["placement"], "pane");
}

#[test]
fn bury_and_unbury_put_the_pane_back_where_it_was() {
    let h = Hangar::new();
    start(&h);
    let a = h.new_pane();
    let b = h.split(&a, "horizontal");
    let mut app = tui_with_panes(&h, 2);
    app.write(b"b");
    app.wait_for("one pane", |t| banners(t) == 1);
    assert_eq!(h.session(&b)["placement"], "buried");
    app.write(b"U");
    app.wait_for("two panes", |t| banners(t) == 2);
    assert_eq!(h.session(&b)["placement"], "pane");
}

#[test]
fn zoom_shows_only_the_focused_pane() {
    let h = Hangar::new();
    start(&h);
    let a = h.new_pane();
    h.split(&a, "vertical");
    let mut app = tui_with_panes(&h, 2);
    app.write(b"z");
    app.wait_for("one zoomed pane", |t| {
        t.contains("[zoom]") && banners(t) == 1
    });
    app.write(b"z");
    app.wait_for("both panes", |t| !t.contains("[zoom]") && banners(t) == 2);
}

#[test]
fn new_and_renamed_tabs_show_in_the_tab_bar() {
    let h = Hangar::new();
    start(&h);
    h.new_pane();
    let mut app = tui_with_panes(&h, 1);
    app.keys(&[b"t", b"s", b"e", b"c", b"o", b"n", b"d", b"\r"]);
    app.wait_text("[2:second]");
    app.keys(&[
        b"r", b"\x7f", b"\x7f", b"\x7f", b"\x7f", b"\x7f", b"\x7f", b"b", b"\r",
    ]);
    app.wait_text("[2:b]");
    app.write(b"(");
    app.wait_for("the first tab is active again", |t| {
        t.contains("  2:b  ") && banners(t) == 1
    });
}

#[test]
fn resizing_the_outer_terminal_resizes_the_panes_session() {
    let h = Hangar::new();
    start(&h);
    h.new_pane();
    let mut app = tui_with_panes(&h, 1);
    app.write(b"\r");
    app.wait_text("TYPING");
    // One pane: the body minus the side list (a quarter of the terminal,
    // 32 to 48 columns) and the borders.
    let side_list = |cols: u16| (cols / 4).clamp(32, 48);
    app.write(b"size\r");
    app.wait_text(&format!(
        "size: {}x{}",
        COLS - side_list(COLS) - 2,
        ROWS - 2 - 2
    ));
    app.resize(40, 150);
    let want = format!("size: {}x{}", 150 - side_list(150) - 2, 40 - 4);
    let deadline = Instant::now() + pty_screen::DEADLINE;
    while !app.text().contains(&want) {
        assert!(
            Instant::now() < deadline,
            "never saw {want}:\n{}",
            app.rows().join("\n")
        );
        app.write(b"size\r");
        std::thread::sleep(Duration::from_millis(300));
    }
}

#[test]
fn quitting_the_tui_never_stops_a_session() {
    let h = Hangar::new();
    start(&h);
    let a = h.new_pane();
    let pid = h.pid_of(&a);
    let mut app = tui_with_panes(&h, 1);
    app.write(b"q");
    assert_eq!(app.wait_exit(), Some(0));
    assert!(app.is_cooked(), "quitting restores the terminal");
    assert_eq!(h.state_of(&a), "live");
    assert_eq!(h.pid_of(&a), pid);
}

/// The ls row of the one session not in `known`, once there is one.
fn wait_new_session(h: &Hangar, known: &[&str]) -> serde_json::Value {
    let mut found = None;
    h.wait_until("a new session", DEADLINE, || {
        found = h
            .ls()
            .into_iter()
            .find(|r| !known.contains(&r["id"].as_str().unwrap_or_default()));
        found.is_some()
    });
    found.expect("a new session")
}

#[test]
fn n_starts_the_chosen_provider_in_the_chosen_folder() {
    let h = Hangar::new();
    start(&h);
    let a = h.new_pane();
    let folder = h.work.join("other");
    std::fs::create_dir_all(&folder).unwrap();
    let mut app = tui_with_panes(&h, 1);
    app.write(b"n");
    app.wait_text("new agent");
    // auto -> claude -> codex; then the folder field: append "/other".
    app.keys(&[
        b"\x1b[C", b"\x1b[C", b"\t", b"/", b"o", b"t", b"h", b"e", b"r",
    ]);
    app.wait_text(&format!("folder:   {}", folder.display()));
    app.write(b"\r");
    let row = wait_new_session(&h, &[&a]);
    assert_eq!(row["provider"], "codex", "{row}");
    assert_eq!(row["cwd"], folder.display().to_string(), "{row}");
    assert_eq!(row["placement"], "pane", "{row}");
    let id = row["id"].as_str().unwrap().to_owned();
    h.wait_state(&id, "live");
    app.wait_text("fake-agent codex session");
}

#[test]
fn the_new_agent_dialog_starts_the_agent_in_a_new_worktree_on_the_branch_typed() {
    let h = Hangar::new();
    make_repo(&h);
    start(&h);
    let a = h.new_pane();
    let mut app = tui_with_panes(&h, 1);
    app.write(b"n");
    app.wait_text("worktree: [ ]");
    // claude; Tab to the worktree toggle, Space; Tab to the branch.
    app.keys(&[b"\x1b[C", b"\t", b"\t", b" "]);
    app.wait_text("worktree: [x]");
    app.keys(&[b"\t", b"t", b"u", b"i", b"-", b"w", b"t"]);
    app.wait_text("branch:   tui-wt");
    app.write(b"\r");
    let row = wait_new_session(&h, &[&a]);
    assert_eq!(row["worktree"]["branch"], "tui-wt", "{row}");
    assert_eq!(
        row["cwd"], row["worktree"]["path"],
        "it runs in its worktree"
    );
    assert!(
        row["cwd"]
            .as_str()
            .is_some_and(|c| c.starts_with(&h.home.join("worktrees").display().to_string())),
        "{row}"
    );
    app.wait_for("two live panes", |t| banners(t) == 2);
}

#[test]
fn closing_an_agent_whose_worktree_holds_work_says_where_it_was_kept() {
    let h = Hangar::new();
    make_repo(&h);
    start(&h);
    let id = h.new_agent(&["--provider", "claude", "--worktree", "--title", "dirty"]);
    h.wait_state(&id, "live");
    let path = h.session(&id)["worktree"]["path"]
        .as_str()
        .expect("a worktree")
        .to_owned();
    std::fs::write(std::path::Path::new(&path).join("notes.txt"), "work\n").unwrap();
    let mut app = tui_with_panes(&h, 1);
    app.write(b"x");
    app.wait_text(&format!("kept worktree {path}: 1 uncommitted file(s)"));
    assert!(h.ls().is_empty(), "the session is closed");
    assert!(std::path::Path::new(&path).join("notes.txt").is_file());
}

/// One tab, two panes and a parked agent; `linked` panes are linked
/// children of the first pane, which has the focus.
fn linked_workspace(h: &Hangar) -> (String, String, String) {
    let mut ws = craft(
        &Recipe {
            tabs: 1,
            panes_per_tab: 2,
            parked: 1,
            pane_provider: |_| "claude",
        },
        &h.work,
    );
    let parent = ws.panes[0].id.clone();
    let child = ws.panes[1].id.clone();
    let parked = ws.parked[0].id.clone();
    ws.json["workspace"]["sessions"][&child]["relationships"]["linked_parent"] = json!(parent);
    h.import(&ws.json);
    h.wait_restore_complete();
    h.ok(&["focus", &parent]);
    (parent, child, parked)
}

#[test]
fn x_on_a_pane_with_linked_children_asks_first_and_closes_them_all_on_yes() {
    let h = Hangar::new();
    start(&h);
    let (parent, child, parked) = linked_workspace(&h);
    let mut app = tui_with_panes(&h, 2);
    app.write(b"x");
    app.wait_text("Closing it also closes linked sessions:");
    app.wait_text("y: close them all");
    assert_eq!(h.ls().len(), 3, "nothing closes before the answer");
    app.write(b"n");
    app.wait_for("the dialog is gone", |t| !t.contains("y: close them all"));
    assert_eq!(h.ls().len(), 3, "no closes nothing");
    app.write(b"x");
    app.wait_text("y: close them all");
    app.write(b"y");
    h.wait_until("parent and child closed", DEADLINE, || {
        let ids: Vec<String> = h
            .ls()
            .iter()
            .map(|r| r["id"].as_str().unwrap().into())
            .collect();
        !ids.contains(&parent) && !ids.contains(&child)
    });
    assert_eq!(
        h.session(&parked)["placement"],
        "parked",
        "unlinked ones stay"
    );
}

#[test]
fn capital_x_closes_the_tab_and_its_sessions_after_confirmation() {
    let h = Hangar::new();
    start(&h);
    linked_workspace(&h);
    let mut app = tui_with_panes(&h, 2);
    app.write(b"X");
    app.wait_text("Close this tab and these sessions?");
    assert_eq!(h.json(&["tab", "ls"]).as_array().map(Vec::len), Some(1));
    app.write(b"y");
    h.wait_until("the tab and its sessions are gone", DEADLINE, || {
        h.json(&["tab", "ls"]).as_array().is_some_and(Vec::is_empty) && h.ls().is_empty()
    });
}

#[test]
fn star_pins_and_unpins_the_focused_pane() {
    let h = Hangar::new();
    start(&h);
    let a = h.new_pane();
    let mut app = tui_with_panes(&h, 1);
    assert_eq!(h.session(&a)["pinned"], false);
    app.write(b"*");
    h.wait_until("the pane is pinned", DEADLINE, || {
        h.session(&a)["pinned"] == true
    });
    // Marked on its pane and listed first in the side list, one key away.
    app.wait_text("1 ★claude");
    app.wait_text("★ claude · live");
    app.write(b"*");
    h.wait_until("the pane is unpinned", DEADLINE, || {
        h.session(&a)["pinned"] == false
    });
    app.wait_for("the pin mark is gone", |t| !t.contains('★'));
}

#[test]
fn the_configured_detach_prefix_is_also_the_tuis_prefix_key() {
    let h = Hangar::new();
    std::fs::create_dir_all(&h.home).unwrap();
    std::fs::write(
        h.home.join("config.toml"),
        "[attach]\ndetach_key = \"C-a d\"\n",
    )
    .unwrap();
    start(&h);
    h.new_pane();
    let mut app = tui_with_panes(&h, 1);
    app.write(b"\r");
    app.wait_text("TYPING (Ctrl-a leaves)");
    // Ctrl-b is just a key for the pane now.
    app.write(b"ab\x02c\r");
    app.wait_text("answer: abc");
    assert!(app.text().contains("TYPING"), "Ctrl-b did not leave");
    app.write(b"\x01");
    app.wait_text("COMMAND");
    app.write(b"?");
    app.wait_text("Ctrl-a Ctrl-a");
}

#[test]
fn resize_keys_move_the_nearest_divider_that_way_even_when_it_is_not_the_panes_own_split() {
    let h = Hangar::new();
    start(&h);
    let a = h.new_pane();
    let b = h.split(&a, "vertical");
    let c = h.split(&b, "horizontal");
    // a | (b / c): c's own split is horizontal.
    h.ok(&["focus", &c]);
    assert_eq!(h.json(&["tab", "ls"])[0]["focus"], c.as_str());
    let mut app = tui_with_panes(&h, 3);
    let root = |h: &Hangar| h.json(&["export"])["workspace"]["tabs"][0]["root"].clone();
    assert_eq!(root(&h)["direction"], "vertical", "{}", root(&h));
    let before = root(&h)["ratio"].as_f64().unwrap();
    app.write(b"L");
    h.wait_until("the vertical divider moved right", DEADLINE, || {
        root(&h)["ratio"].as_f64().unwrap() > before + 0.01
    });
    assert_eq!(
        root(&h)["b"]["ratio"].as_f64().unwrap(),
        0.5,
        "c's own split is untouched"
    );
}

#[test]
fn a_new_tui_against_an_older_running_daemon_says_so_and_how_to_restart_it() {
    use std::io::{Read, Write};
    let h = Hangar::new();
    // The running daemon is an older hangar's: it answers the handshake
    // with the Welcome of hangar-protocol's message.rs, as hangar 0.0.9.
    let run = h.home.join("run");
    std::fs::create_dir_all(&run).unwrap();
    let listener = std::os::unix::net::UnixListener::bind(run.join("hangar.sock")).unwrap();
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            let mut len = [0u8; 4];
            if stream.read_exact(&mut len).is_err() {
                continue;
            }
            let mut hello = vec![0u8; u32::from_be_bytes(len) as usize];
            let _ = stream.read_exact(&mut hello);
            let welcome = json!({"id": 1, "ok": true, "body": {
                "protocol_version": 1, "daemon_version": "0.0.9", "pid": 4242}});
            let body = serde_json::to_vec(&welcome).unwrap();
            let mut frame = ((body.len() + 1) as u32).to_be_bytes().to_vec();
            frame.push(1);
            frame.extend_from_slice(&body);
            let _ = stream.write_all(&frame);
            let _ = std::io::copy(&mut stream, &mut std::io::sink());
        }
    });
    let mut app = PtyApp::spawn(h.command(&[]), ROWS, COLS);
    app.wait_text("is older than this hangar");
    let text = app.text();
    assert!(text.contains("0.0.9"), "{text}");
    assert!(text.contains("hangar shutdown"), "{text}");
    assert_ne!(app.wait_exit(), Some(0));
}
