//! Issue 5, the TUI's keys driven through a real PTY: typing into a pane,
//! splitting, moving the focus, parking and unparking, pins, tabs, zoom,
//! resizing the outer terminal, and quitting without stopping anything.

mod pty_screen;
mod support;

use std::time::{Duration, Instant};

use pty_screen::PtyApp;
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
    app.write(b"[");
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
