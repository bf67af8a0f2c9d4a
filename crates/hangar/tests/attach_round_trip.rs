//! Issue 5 acceptance, `hangar attach`: raw passthrough of one session in a
//! real PTY. Typing reaches the agent and its answer comes back; detaching
//! restores the terminal and leaves the session live; reattaching shows the
//! same screen; the outer terminal's size follows to the session's PTY; two
//! clients can attach at once.

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

fn attach(h: &Hangar, id: &str, rows: u16, cols: u16) -> PtyApp {
    let app = PtyApp::spawn(h.command(&["attach", id]), rows, cols);
    app.wait_text("fake-agent claude session");
    app
}

fn detach(app: &mut PtyApp) {
    app.write(b"\x02d");
    assert_eq!(
        app.wait_exit(),
        Some(0),
        "attach should exit cleanly on detach"
    );
}

#[test]
fn typing_hello_shows_the_answer_and_detaching_restores_the_terminal_with_the_session_live() {
    let h = Hangar::new();
    start(&h);
    let a = h.new_pane();
    let pid = h.pid_of(&a);
    let mut app = attach(&h, &a, 24, 80);
    assert!(!app.is_cooked(), "attached means raw mode");
    app.write(b"hello\r");
    app.wait_text("answer: hello");
    detach(&mut app);
    assert!(
        app.is_cooked(),
        "detach must leave the terminal in cooked mode"
    );
    app.with_screen(|s| {
        assert!(!s.hide_cursor(), "detach must show the cursor again");
        assert!(!s.alternate_screen());
    });
    app.wait_text("keeps running");
    assert_eq!(h.state_of(&a), "live");
    assert_eq!(h.pid_of(&a), pid, "detaching must not restart the session");
}

#[test]
fn reattaching_shows_the_screen_that_was_on_display_before_detaching() {
    let h = Hangar::new();
    start(&h);
    let a = h.new_pane();
    let mut first = attach(&h, &a, 24, 80);
    first.write(b"first line\r");
    first.wait_text("answer: first line");
    first.write(b"second\r");
    // Settled: the answer and the next prompt are both on screen.
    first.wait_for("the prompt after the second answer", |t| {
        t.trim_end().ends_with("answer: second\n>")
    });
    let before = first.text();
    let cursor_before = first.with_screen(|s| s.cursor_position());
    detach(&mut first);

    let second = attach(&h, &a, 24, 80);
    second.wait_for("the screen shown before detaching", |t| t == before);
    assert_eq!(second.with_screen(|s| s.cursor_position()), cursor_before);
}

#[test]
fn resizing_the_outer_terminal_resizes_the_sessions_pty() {
    let h = Hangar::new();
    start(&h);
    let a = h.new_pane();
    let mut app = attach(&h, &a, 24, 80);
    app.write(b"size\r");
    app.wait_text("size: 80x24");
    app.resize(30, 100);
    // The new size reaches the session asynchronously: ask until it shows.
    let deadline = Instant::now() + pty_screen::DEADLINE;
    loop {
        app.write(b"size\r");
        let seen = Instant::now() + Duration::from_millis(500);
        while Instant::now() < seen && !app.text().contains("size: 100x30") {
            std::thread::sleep(Duration::from_millis(20));
        }
        if app.text().contains("size: 100x30") {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the session never saw 100x30:\n{}",
            app.rows().join("\n")
        );
    }
    detach(&mut app);
}

#[test]
fn two_clients_attached_to_one_session_both_see_its_output() {
    let h = Hangar::new();
    start(&h);
    let a = h.new_pane();
    let mut one = attach(&h, &a, 24, 80);
    let mut two = attach(&h, &a, 24, 80);
    one.write(b"from one\r");
    one.wait_text("answer: from one");
    two.wait_text("answer: from one");
    two.write(b"from two\r");
    one.wait_text("answer: from two");
    detach(&mut one);
    two.write(b"still here\r");
    two.wait_text("answer: still here");
    detach(&mut two);
    assert_eq!(h.state_of(&a), "live");
}
