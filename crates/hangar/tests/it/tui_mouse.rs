//! Issue 20, the mouse for a pane's own program, in the real TUI inside a
//! PTY: a shell pane runs a recorder that turns on a mouse mode (or the
//! alternate screen) and writes every byte it reads to a file. A click lands
//! at the right pane-relative cell in the encoding asked for, a click into
//! an unfocused pane focuses it and reaches it too, the wheel over a
//! full-screen program without the mouse types arrows, and once the program
//! turns the mouse off again the wheel scrolls hangar's history. Between
//! two shell panes: a click while typing focuses the pane clicked and the
//! typing goes on into it, and dragging the divider moves it.

use crate::pty_screen;
use crate::support;

use std::path::{Path, PathBuf};

use pty_screen::PtyApp;
use support::*;

const ROWS: u16 = 30;
const COLS: u16 = 150;

/// What the shell in a pane runs: `setup` (escape sequences for its
/// terminal), raw input, a marker, then every byte it reads into `record`.
/// The marker is computed so the echoed command line never shows it.
fn recorder(setup: &str, record: &Path, marker: u32) -> String {
    format!(
        "printf '{setup}'; stty raw -echo; printf '%sready' $(({marker}*1)); exec cat > {}",
        record.display()
    )
}

/// A shell session running `recorder`, shown ready on its daemon screen.
fn recording_shell(
    h: &Hangar,
    args: &[&str],
    setup: &str,
    name: &str,
    marker: u32,
) -> (String, PathBuf) {
    let mut all = vec!["--provider", "shell"];
    all.extend_from_slice(args);
    let id = h.new_agent(&all);
    let record = h.root.join(name);
    h.ok(&["send", &id, &recorder(setup, &record, marker)]);
    h.wait_screen(&id, &format!("{marker}ready"));
    (id, record)
}

/// Where `needle` starts on the TUI's screen: (column, row), 0-based cells.
fn cell_of(app: &PtyApp, needle: &str) -> (u16, u16) {
    app.rows()
        .iter()
        .enumerate()
        .find_map(|(row, text)| {
            let at = text.find(needle)?;
            Some((text[..at].chars().count() as u16, row as u16))
        })
        .unwrap_or_else(|| panic!("{needle:?} is not on screen:\n{}", app.rows().join("\n")))
}

/// The row of the pane's top border above cell (`col`, `row`): the first
/// row upwards whose cell left of `col` is not a side border.
fn top_border_row(app: &PtyApp, col: u16, row: u16) -> u16 {
    let rows = app.rows();
    (0..row)
        .rev()
        .find(|&r| {
            let c = rows[usize::from(r)]
                .chars()
                .nth(usize::from(col) - 1)
                .unwrap_or(' ');
            !matches!(c, '│' | '║' | '┃')
        })
        .expect("a top border above the pane's text")
}

fn sgr(button: u16, col: u16, row: u16, end: char) -> Vec<u8> {
    format!("\x1b[<{button};{};{}{end}", col + 1, row + 1).into_bytes()
}

fn wait_recorded(h: &Hangar, record: &Path, what: &str, want: &[u8]) -> Vec<u8> {
    let mut got = Vec::new();
    h.wait_until(what, DEADLINE, || {
        got = std::fs::read(record).unwrap_or_default();
        got.windows(want.len()).any(|w| w == want)
    });
    got
}

#[test]
fn a_click_reaches_an_sgr_mouse_program_at_its_pane_relative_cell() {
    let h = Hangar::new();
    h.ok(&["status"]);
    let (_, record) = recording_shell(&h, &[], r"\033[?1000h\033[?1006h", "clicks", 41);
    let mut app = PtyApp::spawn(h.command(&[]), ROWS, COLS);
    app.wait_text("41ready");
    // The marker starts at the pane's first column; its row is counted from
    // the border above it.
    let (col, row) = cell_of(&app, "41ready");
    let pane_row = row - top_border_row(&app, col, row) - 1;
    let (x, y) = (col + 5, row + 2);
    app.write(&sgr(0, x, y, 'M'));
    app.write(&sgr(0, x, y, 'm'));
    let mut want = sgr(0, 5, pane_row + 2, 'M');
    want.extend(sgr(0, 5, pane_row + 2, 'm'));
    wait_recorded(
        &h,
        &record,
        "the press and release reached the program",
        &want,
    );
    // The wheel is the program's too: no copy mode, the notch is passed on.
    app.write(&sgr(64, x, y, 'M'));
    wait_recorded(
        &h,
        &record,
        "the wheel reached the program",
        &sgr(64, 5, pane_row + 2, 'M'),
    );
    assert!(
        !app.text().contains("COPY"),
        "the wheel stayed the program's"
    );
}

#[test]
fn a_click_into_an_unfocused_legacy_mouse_pane_focuses_it_and_reaches_it() {
    let h = Hangar::new();
    h.ok(&["status"]);
    // Left: a program with the legacy encoding (1000 only); right, focused
    // (the newest split): an ordinary shell.
    let (left, record) = recording_shell(&h, &[], r"\033[?1000h", "legacy", 42);
    let right = h.new_agent(&[
        "--provider",
        "shell",
        "--split",
        &left,
        "--direction",
        "vertical",
    ]);
    let focus = |h: &Hangar| {
        h.json(&["tab", "ls"])[0]["focus"]
            .as_str()
            .map(str::to_owned)
    };
    assert_eq!(focus(&h), Some(right.clone()));
    let mut app = PtyApp::spawn(h.command(&[]), ROWS, COLS);
    app.wait_text("42ready");
    let (col, row) = cell_of(&app, "42ready");
    let pane_row = row - top_border_row(&app, col, row) - 1;
    app.write(&sgr(0, col + 3, row + 1, 'M'));
    app.write(&sgr(0, col + 3, row + 1, 'm'));
    h.wait_until("the click focused the left pane", DEADLINE, || {
        focus(&h) == Some(left.clone())
    });
    // CSI M, then button, column and row each plus 32 (1-based cells):
    // the press (button 0), then the release (button 3).
    let (cx, cy) = (3 + 33, pane_row + 1 + 33);
    let want = [
        b"\x1b[M".as_slice(),
        &[32, cx as u8, cy as u8],
        b"\x1b[M",
        &[35, cx as u8, cy as u8],
    ]
    .concat();
    wait_recorded(
        &h,
        &record,
        "the legacy press and release reached the program",
        &want,
    );
}

#[test]
fn the_wheel_over_a_full_screen_program_without_the_mouse_types_arrows() {
    let h = Hangar::new();
    h.ok(&["status"]);
    let (_, record) = recording_shell(&h, &[], r"\033[?1049h", "arrows", 43);
    let mut app = PtyApp::spawn(h.command(&[]), ROWS, COLS);
    app.wait_text("43ready");
    let (col, row) = cell_of(&app, "43ready");
    app.write(&sgr(64, col + 2, row, 'M'));
    app.write(&sgr(65, col + 2, row, 'M'));
    wait_recorded(
        &h,
        &record,
        "three arrows up, then three down",
        b"\x1b[A\x1b[A\x1b[A\x1b[B\x1b[B\x1b[B",
    );
    assert!(!app.text().contains("COPY"));
}

#[test]
fn once_the_program_turns_the_mouse_off_the_wheel_scrolls_hangars_history() {
    let h = Hangar::new();
    h.ok(&["status"]);
    let id = h.new_agent(&["--provider", "shell"]);
    // History to scroll back into, then the mouse on and off again.
    h.ok(&[
        "send",
        &id,
        r"seq 1 500; printf '\033[?1000h\033[?1006h\033[?1000l'",
    ]);
    h.wait_screen(&id, "500");
    let mut app = PtyApp::spawn(h.command(&[]), ROWS, COLS);
    app.wait_text("499");
    let (col, row) = cell_of(&app, "499");
    for _ in 0..10 {
        app.write(&sgr(64, col, row, 'M'));
    }
    app.wait_text("COPY");
    app.wait_for("history 30 lines back is on screen", |_| {
        app.rows().iter().any(|r| {
            r.trim_start_matches(['│', '║', '┃', ' '])
                .starts_with("470 ")
        })
    });
}

/// Two shell panes side by side, each showing a marker: (left, right), the
/// right one focused (the newest split).
/// The ratio of the first tab's root split as the daemon holds it
/// (`hangar export`).
fn saved_root_ratio(h: &Hangar) -> Option<f64> {
    let out = h.ok(&["export"]);
    let v: serde_json::Value = serde_json::from_str(&out).expect("export prints JSON");
    v["workspace"]["tabs"][0]["root"]["ratio"].as_f64()
}

fn two_shells(h: &Hangar) -> (String, String) {
    h.ok(&["status"]);
    let left = h.new_agent(&["--provider", "shell"]);
    h.ok(&["send", &left, "echo left-$((40+1))"]);
    h.wait_screen(&left, "left-41");
    let right = h.new_agent(&[
        "--provider",
        "shell",
        "--split",
        &left,
        "--direction",
        "vertical",
    ]);
    h.ok(&["send", &right, "echo right-$((40+2))"]);
    h.wait_screen(&right, "right-42");
    (left, right)
}

/// The columns of the side borders on a screen row (the pane frames'
/// vertical lines, single or double).
fn border_columns(row: &str) -> Vec<u16> {
    row.chars()
        .enumerate()
        .filter(|(_, c)| matches!(c, '│' | '║' | '┃'))
        .map(|(i, _)| i as u16)
        .collect()
}

#[test]
fn a_click_while_typing_focuses_the_pane_and_typing_goes_on_into_it() {
    let h = Hangar::new();
    let (left, right) = two_shells(&h);
    let mut app = PtyApp::spawn(h.command(&[]), ROWS, COLS);
    app.wait_text("right-42");
    app.wait_text("left-41");
    app.write(b"\r");
    app.wait_text("TYPING");
    let (col, row) = cell_of(&app, "left-41");
    app.write(&sgr(0, col + 2, row, 'M'));
    app.write(&sgr(0, col + 2, row, 'm'));
    h.wait_until("the click focused the left pane", DEADLINE, || {
        h.json(&["tab", "ls"])[0]["focus"].as_str() == Some(left.as_str())
    });
    // As in tmux or zellij: the next keys are typed into the pane clicked.
    app.write(b"echo clicked-$((40+3))\r");
    h.wait_until("the typing reached the clicked pane", DEADLINE, || {
        h.screen(&left).contains("clicked-43")
    });
    assert!(
        app.text().contains("TYPING"),
        "still typing:\n{}",
        app.text()
    );
    assert!(!h.screen(&right).contains("clicked"));
}

#[test]
fn dragging_the_divider_between_two_panes_moves_it_with_the_mouse() {
    let h = Hangar::new();
    let (left, _) = two_shells(&h);
    let mut app = PtyApp::spawn(h.command(&[]), ROWS, COLS);
    // Both panes' output, not only the right one's: the left pane may still
    // be drawing when the right one is already on screen.
    app.wait_text("right-42");
    app.wait_text("left-41");
    let (_, row) = cell_of(&app, "left-41");
    // Left pane's left border, its right border, the right pane's left one.
    let borders = border_columns(&app.rows()[usize::from(row)]);
    assert!(
        borders.len() >= 3,
        "two panes side by side:\n{}",
        app.text()
    );
    let divider = borders[2];
    let to = divider + 20;
    let saved_before = saved_root_ratio(&h);
    app.write(&sgr(0, divider, row, 'M'));
    app.write(&sgr(32, divider + 10, row, 'M'));
    app.write(&sgr(32, to, row, 'M'));
    app.write(&sgr(0, to, row, 'm'));
    app.wait_for("the divider followed the mouse", |_| {
        let rows = app.rows();
        border_columns(&rows[usize::from(row)])
            .get(2)
            .is_some_and(|&c| c.abs_diff(to) <= 1)
    });
    // The TUI hands the new ratio to the daemon behind the drawing; wait
    // for the daemon to hold it before this TUI goes away.
    support::wait_until("the daemon holds the dragged ratio", DEADLINE, || {
        saved_root_ratio(&h) != saved_before
    });
    // The daemon keeps the new split: a fresh TUI draws it there too.
    drop(app);
    let app = PtyApp::spawn(h.command(&[]), ROWS, COLS);
    app.wait_for("the moved divider is kept", |_| {
        let rows = app.rows();
        rows.get(usize::from(row))
            .and_then(|r| border_columns(r).get(2).copied())
            .is_some_and(|c| c.abs_diff(to) <= 1)
    });
    assert_eq!(h.state_of(&left), "live");
}
