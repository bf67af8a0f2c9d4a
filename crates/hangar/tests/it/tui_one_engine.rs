//! Issue 31, item 4: a TUI pane draws its session with the daemon's own
//! terminal engine (hangar-terminal), so what the daemon keeps and what the
//! pane shows agree. A narrower pane rewraps lines as tmux does
//! (`grid_reflow`): a line on the screen and a line already in history,
//! both wider than the pane after a resize, read whole, on two rows, where
//! the pane's old engine (vt100) cut them at the pane's edge and the
//! daemon's history kept them at the old width.

use crate::pty_screen;
use crate::support;

use pty_screen::PtyApp;
use support::*;

/// The pane's text rows (the frame's rows between its borders), trimmed.
fn pane_rows(app: &PtyApp) -> Vec<String> {
    app.rows()
        .iter()
        .map(|r| {
            r.trim_start_matches(['║', '│', ' '])
                .split(['║', '│'])
                .next()
                .unwrap_or_default()
                .trim()
                .to_owned()
        })
        .collect()
}

/// A line the shell prints (not the command that prints it): `tag`, 90
/// `x`, then `tag` again with its number worked out by the shell.
fn long_line(tag: &str) -> (String, String) {
    let command = format!("echo {tag}-$(printf 'x%.0s' $(seq 1 90))-{tag}$((40+2))");
    let end = format!("-{tag}42");
    (command, end)
}

#[test]
fn lines_wider_than_a_narrowed_pane_rewrap_on_the_screen_and_in_history() {
    let h = Hangar::new();
    h.ok(&["status"]);
    let id = h.new_agent(&["--provider", "shell"]);
    let (old, old_end) = long_line("hist");
    let (new, new_end) = long_line("scrn");
    // The first long line goes up into history (40 lines after it); the
    // second stays on the screen.
    h.ok(&["send", &id, &format!("{old}; seq 1 40; {new}")]);
    h.wait_screen(&id, &new_end);
    let mut app = PtyApp::spawn(h.command(&[]), 30, 150);
    app.wait_for("the long line on the screen, whole", |_| {
        pane_rows(&app)
            .iter()
            .any(|r| r.starts_with("scrn-") && r.ends_with(&new_end))
    });
    // Narrower than either line: each now takes two rows of the pane.
    app.resize(30, 80);
    app.wait_for("the line on the screen rewrapped to the new width", |_| {
        let rows = pane_rows(&app);
        rows.iter()
            .any(|r| r.ends_with(&new_end) && !r.starts_with("scrn-"))
    });
    // Into copy mode and up to the line in history.
    app.keys(&[b"[", b"?", b"h", b"i", b"s", b"t", b"4", b"2", b"\r"]);
    app.wait_for("the line in history rewrapped to the new width", |_| {
        pane_rows(&app)
            .iter()
            .any(|r| r.ends_with(&old_end) && !r.starts_with("hist-"))
    });
    app.write(b"q");
    app.wait_text("COMMAND");
}

#[test]
fn a_line_printed_in_insert_mode_reads_in_the_pane_as_the_daemon_keeps_it() {
    // Insert mode (IRM, `CSI 4 h`): the Z goes in before "abc" (vt100, the
    // pane's old engine, does not know the mode and wrote over the a).
    let h = Hangar::new();
    h.ok(&["status"]);
    let id = h.new_agent(&["--provider", "shell"]);
    h.ok(&[
        "send",
        &id,
        r"printf 'abc\r\033[4hZ\033[4l\n'; echo done-$((40+2))",
    ]);
    h.wait_screen(&id, "done-42");
    assert!(h.screen(&id).lines().any(|l| l.trim_end() == "Zabc"));
    let app = PtyApp::spawn(h.command(&[]), 30, 150);
    app.wait_for("the pane shows the output as the daemon has it", |_| {
        let rows = pane_rows(&app);
        rows.iter().any(|r| r == "done-42") && rows.iter().any(|r| r == "Zabc")
    });
}
