//! Issue 20, a pane's history in the real TUI inside a PTY: a shell printed
//! `seq 1 5000` before the TUI attached, and copy mode (`Ctrl-b [`, here
//! `[` from command mode) reaches its first line, finds a number far back,
//! and copies it through OSC 52 to the outer terminal; Shift-PageUp while
//! typing pages back to line 1, and `Ctrl-b [` while typing enters copy
//! mode, where the page keys and `k`, `j` and the arrows move; a copy also
//! reaches the system clipboard program when there is one.
//!
//! Beyond the 10,000 lines a pane once kept itself (session 5): the pane
//! reads its session's history from the daemon a page at a time, so `g`,
//! a search and the wheel reach line 1 of `seq 1 30000`, a copy from history
//! into the screen lands whole, and output printed while a person reads
//! does not move the view.

use crate::pty_screen;
use crate::support;

use pty_screen::PtyApp;
use support::*;

const ROWS: u16 = 30;
const COLS: u16 = 150;

/// A shell pane that printed `seq 1 5000`, then the TUI attached to it.
fn tui_after_seq(h: &Hangar) -> PtyApp {
    tui_after(h, "seq 1 5000", "4999").1
}

/// A shell pane that ran `command`, then the TUI attached to it and shows
/// `last`; the session's id too.
fn tui_after(h: &Hangar, command: &str, last: &str) -> (String, PtyApp) {
    h.ok(&["status"]);
    let id = h.new_agent(&["--provider", "shell"]);
    h.ok(&["send", &id, &format!("{command}; echo printed-$((40+2))")]);
    h.wait_screen(&id, "printed-42");
    let app = PtyApp::spawn(h.command(&[]), ROWS, COLS);
    app.wait_for("the pane shows the end of the output", |t| t.contains(last));
    (id, app)
}

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

#[test]
fn copy_mode_reaches_line_1_of_seq_1_5000_printed_before_the_tui_attached() {
    let h = Hangar::new();
    let mut app = tui_after_seq(&h);
    app.write(b"[");
    app.wait_text("COPY");
    app.write(b"g");
    app.wait_for("the first lines of seq at the top of the pane", |_| {
        let rows = pane_rows(&app);
        rows.windows(3)
            .any(|w| w[0] == "1" && w[1] == "2" && w[2] == "3")
    });
    app.write(b"G");
    app.wait_for("back at the end", |t| t.contains("5000"));
    app.write(b"q");
    app.wait_text("COMMAND");
}

#[test]
fn copy_mode_searches_history_and_a_copy_lands_in_osc_52() {
    let h = Hangar::new();
    let mut app = tui_after_seq(&h);
    assert!(!app.text().contains("1234"), "1234 starts off screen");
    app.keys(&[b"[", b"?", b"1", b"2", b"3", b"4", b"\r"]);
    app.wait_for("the search scrolled back to 1234", |_| {
        pane_rows(&app).iter().any(|r| r == "1234")
    });
    assert!(!app.text().contains("not found"));
    app.write(b"y");
    // "1234" in base64, inside the OSC 52 that sets the clipboard.
    app.wait_for("the copy reached the outer terminal as OSC 52", |_| {
        let raw = app.raw_output();
        raw.windows(b"\x1b]52;c;MTIzNA==\x07".len())
            .any(|w| w == b"\x1b]52;c;MTIzNA==\x07")
    });
    app.wait_text("copied 4 characters");
}

#[test]
fn the_mouse_wheel_scrolls_a_pane_back_and_down_again() {
    let h = Hangar::new();
    let mut app = tui_after_seq(&h);
    // Wheel up over the pane, many notches: copy mode, far back.
    for _ in 0..40 {
        app.write(b"\x1b[<64;20;10M");
    }
    app.wait_text("COPY");
    app.wait_for("history 120 lines back is on screen", |_| {
        pane_rows(&app).iter().any(|r| r == "4870")
    });
    for _ in 0..60 {
        app.write(b"\x1b[<65;20;10M");
    }
    app.wait_text("COMMAND");
}

/// The top rows of the pane hold the first lines of `seq`.
fn shows_seq_start(app: &PtyApp) -> bool {
    pane_rows(app)
        .windows(3)
        .any(|w| w[0] == "1" && w[1] == "2" && w[2] == "3")
}

#[test]
fn shift_page_up_while_typing_pages_back_to_line_1_and_q_goes_back_to_typing() {
    let h = Hangar::new();
    let mut app = tui_after_seq(&h);
    app.write(b"\r");
    app.wait_text("TYPING");
    // A page is the pane's height (28 rows here): 5000 lines are ~180 pages.
    for _ in 0..200 {
        app.write(b"\x1b[5;2~");
    }
    app.wait_text("COPY");
    app.wait_for("Shift-PageUp reached line 1 of seq", |_| {
        shows_seq_start(&app)
    });
    app.write(b"q");
    app.wait_text("TYPING");
}

#[test]
fn ctrl_b_bracket_while_typing_enters_copy_mode_where_page_keys_move_and_q_goes_back_to_typing() {
    let h = Hangar::new();
    let mut app = tui_after_seq(&h);
    app.write(b"\r");
    app.wait_text("TYPING");
    app.write(b"\x02[");
    app.wait_text("COPY");
    let (last, total) = copy_line(&app);
    assert_eq!(last, total, "copy mode starts on the last line");
    app.write(b"\x1b[5~");
    app.wait_for("PageUp moved up", |_| copy_line(&app).0 < last);
    let page = last - copy_line(&app).0;
    assert!(
        page > 10,
        "a page is the pane's height, not a few lines: {page}"
    );
    // PageUp again, then PageDown: back to one page above the last line.
    app.write(b"\x1b[5~");
    app.wait_for("PageUp moved a page up again", |_| {
        copy_line(&app).0 == last - 2 * page
    });
    app.write(b"\x1b[6~");
    app.wait_for("PageDown came a page back down", |_| {
        copy_line(&app).0 == last - page
    });
    assert!(!pane_rows(&app).iter().any(|r| r == "5000"));
    // k and the up arrow move up a line each, j down one.
    app.keys(&[b"k", b"\x1b[A", b"j"]);
    app.wait_for("the cursor moved up one line in all", |_| {
        copy_line(&app).0 == last - page - 1
    });
    // q gives the pane back to typing, where Ctrl-b [ came from.
    app.write(b"q");
    app.wait_text("TYPING");
    app.write(b"echo typing-again-$((40+2))\r");
    app.wait_text("typing-again-42");
}

#[test]
fn an_arrow_cut_in_two_after_its_esc_moves_the_copy_cursor_and_stays_in_copy_mode() {
    let h = Hangar::new();
    let mut app = tui_after_seq(&h);
    app.write(b"[");
    app.wait_text("COPY");
    let (last, _) = copy_line(&app);
    // Each Up arrow in two writes, its ESC alone first, as a slow link or
    // a loaded machine delivers it: one key, not Esc (which leaves copy
    // mode) followed by `[` and `A`. The pause only makes the TUI read the
    // halves apart; it is far below the escape time that joins them.
    for _ in 0..10 {
        app.write(b"\x1b");
        std::thread::sleep(std::time::Duration::from_millis(5));
        app.write(b"[A");
    }
    app.wait_for("ten split arrows moved the cursor ten lines up", |_| {
        copy_line(&app).0 == last - 10
    });
    assert!(app.text().contains("COPY"), "{}", app.text());
    // A lone Esc, with nothing after it, is still the Esc key: it leaves.
    app.write(b"\x1b");
    app.wait_text("COMMAND");
}

/// The copy-mode cursor's line and the line count, from the status bar
/// (`line N/T`).
fn copy_line(app: &PtyApp) -> (usize, usize) {
    let text = app.text();
    let at = text
        .split("line ")
        .nth(1)
        .and_then(|s| s.split_whitespace().next())
        .and_then(|s| s.split_once('/'))
        .and_then(|(n, t)| Some((n.parse().ok()?, t.parse().ok()?)));
    at.unwrap_or_else(|| panic!("no copy-mode line in the status bar:\n{text}"))
}

#[test]
fn a_copy_also_reaches_the_system_clipboard_program_when_there_is_one() {
    let h = Hangar::new();
    h.ok(&["status"]);
    let id = h.new_agent(&["--provider", "shell"]);
    h.ok(&["send", &id, "echo to-the-clipboard-$((40+2))"]);
    h.wait_screen(&id, "to-the-clipboard-42");
    // An X display with xclip: a stand-in that records what it is given.
    let bin = h.root.join("clipboard-bin");
    std::fs::create_dir_all(&bin).unwrap();
    let record = h.root.join("xclip-got");
    let xclip = bin.join("xclip");
    std::fs::write(
        &xclip,
        format!(
            "#!/bin/sh\n{{ echo \"$*\"; cat; }} > {0}.part && mv {0}.part {0}\n",
            record.display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&xclip, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut cmd = h.command(&[]);
    cmd.env("DISPLAY", ":99").env("PATH", path);
    let mut app = PtyApp::spawn(cmd, ROWS, COLS);
    app.wait_text("to-the-clipboard-42");
    // Copy mode, search up to the line, copy it.
    app.keys(&[b"[", b"?", b"-42", b"\r"]);
    app.wait_text("COPY");
    app.write(b"0");
    app.write(b"y");
    app.wait_text("copied");
    h.wait_until("xclip got the copy", DEADLINE, || record.exists());
    let got = std::fs::read_to_string(&record).unwrap();
    assert_eq!(got, "-selection clipboard\nto-the-clipboard-42");
}

#[test]
fn copy_mode_g_reaches_line_1_of_seq_1_30000_far_beyond_10000_lines() {
    let h = Hangar::new();
    let (_, mut app) = tui_after(&h, "seq 1 30000", "29999");
    app.write(b"[");
    app.wait_text("COPY");
    app.write(b"g");
    app.wait_for("line 1 of seq at the top of the pane", |_| {
        shows_seq_start(&app)
    });
    // And back down through the pages to the end.
    app.write(b"G");
    app.wait_for("back at the end", |t| t.contains("30000"));
}

#[test]
fn a_search_finds_a_word_printed_before_the_last_10000_lines_and_jumps_to_it() {
    let h = Hangar::new();
    let (_, mut app) = tui_after(&h, "echo far-back-$((40+2)); seq 1 20000", "19999");
    app.keys(&[b"[", b"?", b"far-back-42", b"\r"]);
    app.wait_for("the search scrolled back to the word", |_| {
        pane_rows(&app).iter().any(|r| r == "far-back-42")
    });
    assert!(!app.text().contains("not found"));
    // The line's number says it is that far back: before `seq`'s 20,000.
    let (line, total) = copy_line(&app);
    assert!(total - line > 20_000, "line {line} of {total}");
}

#[test]
fn the_mouse_wheel_reaches_line_1_beyond_10000_lines() {
    let h = Hangar::new();
    let (_, mut app) = tui_after(&h, "seq 1 11000", "10999");
    // Three lines a notch: 11,000 lines are about 3,700 notches, all in
    // one write. A PTY's input buffer holds 4 KiB, so the TUI reads them
    // in pieces that cut notches' reports in two: each must still be one
    // notch, not a lost one and stray keys.
    app.write(&b"\x1b[<64;20;10M".repeat(3_800));
    app.wait_text("COPY");
    app.wait_for("the wheel reached line 1 of seq", |_| shows_seq_start(&app));
}

#[test]
fn a_copy_from_history_down_into_the_screen_lands_whole_in_osc_52() {
    let h = Hangar::new();
    let (_, mut app) = tui_after(&h, "seq 1 3000", "2999");
    // 2960 is in history (the pane shows its last ~27 lines), 2980 on the
    // screen: select from one to the other and copy.
    app.keys(&[b"[", b"?", b"2960", b"\r"]);
    app.wait_for("the cursor on 2960", |_| {
        pane_rows(&app).iter().any(|r| r == "2960")
    });
    app.write(b"v");
    for _ in 0..20 {
        app.write(b"j");
    }
    app.write(b"$");
    app.write(b"y");
    let want: Vec<String> = (2960..=2980).map(|n| n.to_string()).collect();
    let osc = format!("\x1b]52;c;{}\x07", base64_of(want.join("\n").as_bytes()));
    app.wait_for("the whole selection reached the outer terminal", |_| {
        let raw = app.raw_output();
        raw.windows(osc.len()).any(|w| w == osc.as_bytes())
    });
}

#[test]
fn output_printed_while_scrolled_back_does_not_move_the_view() {
    let h = Hangar::new();
    let (id, mut app) = tui_after(&h, "seq 1 5000", "4999");
    for _ in 0..40 {
        app.write(b"\x1b[<64;20;10M");
    }
    app.wait_text("COPY");
    app.wait_for("history 120 lines back is on screen", |_| {
        pane_rows(&app).iter().any(|r| r == "4870")
    });
    // The pane's rows, without the status bar (whose line count grows).
    let shown = |app: &PtyApp| {
        let mut rows = pane_rows(app);
        rows.pop();
        rows
    };
    let before = shown(&app);
    let (_, total) = copy_line(&app);
    h.ok(&["send", &id, "seq 100001 100300"]);
    h.wait_screen(&id, "100300");
    // The pane got the output (its line count grew by it) ...
    app.wait_for("the new lines counted below the view", |_| {
        copy_line(&app).1 >= total + 300
    });
    // ... and still shows what it showed.
    assert_eq!(shown(&app), before);
}

/// Standard base64 with padding (OSC 52's encoding).
fn base64_of(bytes: &[u8]) -> String {
    const ABC: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ABC[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[test]
fn a_pane_whose_session_ended_still_scrolls_back_to_line_1() {
    let h = Hangar::new();
    let (id, mut app) = tui_after(&h, "true", "printed-42");
    h.ok(&["send", &id, "seq 1 12000; exit"]);
    app.wait_text("exited");
    // Its history is read from what the daemon saved, numbered anew.
    app.write(b"[");
    app.wait_text("COPY");
    app.write(b"g");
    app.wait_for("line 1 of seq at the top of the ended pane", |_| {
        shows_seq_start(&app)
    });
    app.write(b"G");
    app.wait_for("back at the end", |t| t.contains("12000"));
}

#[test]
fn g_stops_at_the_oldest_line_the_daemon_keeps_under_its_byte_cap() {
    let h = Hangar::new();
    h.write_config("[terminal]\nhistory_bytes = 65536\n");
    let (id, mut app) = tui_after(&h, "seq 1 30000", "29999");
    let oldest: String = h.json(&["screen", &id, "--scrollback", "100000"])["history"][0]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let oldest: u64 = oldest
        .parse()
        .expect("the oldest kept line is a number of seq");
    assert!(
        oldest > 20_000,
        "the cap dropped the start of seq: {oldest}"
    );
    app.write(b"[");
    app.wait_text("COPY");
    app.write(b"g");
    let first = (oldest.to_string(), (oldest + 1).to_string());
    app.wait_for("the oldest kept line at the top of the pane", |_| {
        pane_rows(&app)
            .windows(2)
            .any(|w| w[0] == first.0 && w[1] == first.1)
    });
    app.write(b"G");
    app.wait_for("back at the end", |t| t.contains("30000"));
    app.write(b"g");
    app.wait_for("the oldest kept line again", |_| {
        pane_rows(&app)
            .windows(2)
            .any(|w| w[0] == first.0 && w[1] == first.1)
    });
    assert!(
        !pane_rows(&app)
            .iter()
            .any(|r| r == &(oldest - 1).to_string())
    );
}

/// The pane's rows that are numbers, in order.
fn numbers_shown(app: &PtyApp) -> Vec<u64> {
    pane_rows(app)
        .iter()
        .filter_map(|r| r.parse().ok())
        .collect()
}

#[test]
fn after_a_resync_the_history_above_the_screen_joins_it_without_a_gap_or_a_repeat() {
    let h = Hangar::new();
    let (id, mut app) = tui_after(&h, "true", "printed-42");
    // The TUI stops reading while the session prints far more than a client
    // may fall behind by: the daemon sends it the screen, not the backlog.
    let tui = app.pid();
    unsafe {
        libc::kill(tui, libc::SIGSTOP);
    }
    h.ok(&["send", &id, "seq 1 200000"]);
    h.wait_screen(&id, "200000");
    unsafe {
        libc::kill(tui, libc::SIGCONT);
    }
    app.wait_for("the TUI caught up", |t| t.contains("200000"));
    // Half a page up (Ctrl-u): history lines above the screen's top rows.
    app.keys(&[b"[", b"\x15"]);
    app.wait_text("COPY");
    app.wait_for(
        "a page of consecutive lines across the screen's top",
        |_| {
            let shown = numbers_shown(&app);
            shown.len() > 20
                && shown.windows(2).all(|w| w[1] == w[0] + 1)
                && shown.last().is_some_and(|&n| n < 200_000)
        },
    );
}

/// Issue 31: copy mode, then the terminal narrows. The daemon rewraps the
/// history for the new width and numbers it anew; the frozen view follows:
/// it shows the same lines, rewrapped (a line's second row is there), not
/// the old width's lines cut at the pane's edge, and stays in copy mode.
#[test]
fn a_resize_in_copy_mode_shows_the_history_rewrapped_for_the_new_width() {
    let h = Hangar::new();
    // 300 lines of 100 characters: L001000...0 to L300000...0; they fit the
    // 148-column pane and wrap in a 78-column one.
    let (_, mut app) = tui_after(
        &h,
        "for i in $(seq 1 300); do printf 'L%03d%097d\\n' $i 0; done",
        "L300",
    );
    app.write(b"[");
    app.wait_text("COPY");
    for _ in 0..6 {
        app.write(b"\x1b[5~");
    }
    let numbered = |app: &PtyApp| -> Vec<u32> {
        pane_rows(app)
            .iter()
            .filter_map(|r| r.strip_prefix('L')?.get(..3)?.parse().ok())
            .collect()
    };
    app.wait_for("six pages back, L150 or earlier on screen", |_| {
        numbered(&app).first().is_some_and(|&n| n <= 150)
    });
    let before = numbered(&app)[0];
    app.resize(ROWS, 80);
    let continuation = |r: &String| r.len() >= 20 && r.chars().all(|c| c == '0');
    app.wait_for(
        "the frozen view rewrapped: a line's second row shown",
        |_| pane_rows(&app).iter().any(continuation),
    );
    assert!(app.rows().join("\n").contains("COPY"), "still in copy mode");
    let after = numbered(&app);
    let rows = usize::from(ROWS);
    assert!(
        after.iter().any(|&n| n.abs_diff(before) as usize <= rows),
        "the view stays near L{before}: shows {after:?}"
    );
    // Each line shown whole: its first row is followed by its second.
    let shown = pane_rows(&app);
    for pair in shown.windows(2) {
        if pair[0].starts_with('L') && pair[0].len() >= 70 {
            assert!(
                continuation(&pair[1]) || pair[1].is_empty(),
                "a cut line, no second row: {pair:?}"
            );
        }
    }
}
