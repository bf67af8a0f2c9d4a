//! Issue 20 through the real daemon: a fresh attach puts the client in the
//! modes the program set; a session's history survives hibernate and wake
//! and a daemon restart (`hangar screen --scrollback`); and the history's
//! byte cap holds the daemon's memory under a flood of plain lines and
//! under a program redrawing its whole screen over and over (RSS read from
//! /proc and compared, never timed).

use crate::pty_screen;
use crate::support;

use pty_screen::PtyApp;
use serde_json::Value;
use support::*;

fn shell(h: &Hangar) -> String {
    h.ok(&["status"]);
    h.new_agent(&["--provider", "shell"])
}

fn history(h: &Hangar, id: &str) -> (Vec<String>, Value) {
    let v = h.json(&["screen", id, "--scrollback", "100000"]);
    let lines = v["history"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|l| l.as_str().unwrap_or_default().to_owned())
                .collect()
        })
        .unwrap_or_default();
    (lines, v)
}

/// The first line of `seq 1 N` is in history, with the next ones after it.
fn holds_seq_start(lines: &[String]) -> bool {
    lines
        .windows(3)
        .any(|w| w[0] == "1" && w[1] == "2" && w[2] == "3")
}

#[test]
fn a_fresh_attach_puts_the_client_in_the_programs_modes() {
    let h = Hangar::new();
    let id = shell(&h);
    h.ok(&[
        "send",
        &id,
        r"printf '\033[?1049h\033[?2004h\033[?1002h\033[?1006h\033[?25l\033[?1h\033=\033]0;modal app\007in the alternate screen\n'",
    ]);
    h.wait_screen(&id, "in the alternate screen");
    let app = PtyApp::spawn(h.command(&["attach", &id]), 30, 100);
    app.wait_text("in the alternate screen");
    app.with_screen(|s| {
        assert!(s.alternate_screen(), "the alternate screen");
        assert!(s.bracketed_paste(), "bracketed paste");
        assert!(s.hide_cursor(), "the hidden cursor");
        assert!(s.application_cursor(), "application cursor keys");
        assert!(s.application_keypad(), "the application keypad");
        assert_eq!(
            s.mouse_protocol_mode(),
            vt100::MouseProtocolMode::ButtonMotion
        );
        assert_eq!(
            s.mouse_protocol_encoding(),
            vt100::MouseProtocolEncoding::Sgr
        );
    });
    let raw = String::from_utf8_lossy(&app.raw_output()).into_owned();
    assert!(raw.contains("\x1b]0;modal app\x07"), "the window title");
}

#[test]
fn history_survives_hibernate_wake_and_a_daemon_restart() {
    let h = Hangar::new();
    let id = shell(&h);
    h.ok(&["send", &id, "seq 1 3000"]);
    h.wait_screen(&id, "3000");
    let (lines, v) = history(&h, &id);
    assert_eq!(v["source"], "live");
    assert!(
        holds_seq_start(&lines),
        "live history: {:?}",
        &lines[..lines.len().min(5)]
    );

    h.ok(&["hibernate", &id]);
    h.wait_state(&id, "hibernated");
    let (lines, v) = history(&h, &id);
    assert_eq!(v["source"], "saved");
    assert!(
        holds_seq_start(&lines),
        "the hibernated session keeps its history"
    );

    h.ok(&["wake", &id]);
    h.wait_state(&id, "live");
    let (lines, v) = history(&h, &id);
    assert_eq!(v["source"], "live");
    assert!(
        holds_seq_start(&lines),
        "the woken session shows it above its new screen"
    );

    h.shutdown();
    h.ok(&["status"]);
    h.wait_restore_complete();
    h.wait_state(&id, "live");
    let (lines, _) = history(&h, &id);
    assert!(holds_seq_start(&lines), "history is kept through a restart");
}

#[test]
fn the_history_byte_cap_holds_the_daemons_memory_under_a_flood() {
    let h = Hangar::new();
    h.write_config("[terminal]\nhistory_bytes = 1048576\n");
    let id = shell(&h);
    let flood = |round: u32, megabytes: u32| {
        h.ok(&[
            "send",
            &id,
            &format!(
                "yes 'a line of flood output, long enough to look like an agent log' | head -c {}000000; echo; echo flood-done-{round}",
                megabytes
            ),
        ]);
        h.wait_until(
            "the flood is printed",
            std::time::Duration::from_secs(240),
            || {
                h.screen(&id)
                    .lines()
                    .any(|l| l == format!("flood-done-{round}"))
            },
        );
    };
    let daemon = h.daemon_pid();
    // The first flood fills the history to its cap.
    flood(1, 8);
    let filled = rss_kib(daemon).expect("daemon RSS");
    let (lines, _) = history(&h, &id);
    let kept: usize = lines.iter().map(String::len).sum();
    assert!(
        kept <= 1_048_576,
        "history text within the cap: {kept} bytes"
    );
    // Three times as much again: memory stays where it was.
    flood(2, 24);
    let after = rss_kib(daemon).expect("daemon RSS");
    assert!(
        after <= filled + 8 * 1024,
        "daemon RSS grew from {filled} KiB to {after} KiB under a flood with a 1 MiB history"
    );
}

#[test]
fn the_history_byte_cap_holds_under_a_redraw_thrashing_program() {
    let h = Hangar::new();
    h.write_config("[terminal]\nhistory_bytes = 65536\n");
    let id = shell(&h);
    // Each frame homes, clears the screen and draws a few coloured rows, as
    // an agent CLI redrawing its whole UI does: every clear scrolls the old
    // frame into history (tmux's scroll-on-clear), through the parser, not
    // the plain-lines path.
    let thrash = |round: u32, frames: u32| {
        h.ok(&[
            "send",
            &id,
            &format!(
                r"i=0; while [ $i -lt {frames} ]; do printf '\033[H\033[2J\033[1;3%dmframe %d\033[0m\n  status: working\n\033[7m input \033[0m\n' $((i % 7)) $i; i=$((i+1)); done; echo thrash-done-{round}"
            ),
        ]);
        h.wait_until(
            "the frames are drawn",
            std::time::Duration::from_secs(240),
            || {
                h.screen(&id)
                    .lines()
                    .any(|l| l == format!("thrash-done-{round}"))
            },
        );
    };
    let daemon = h.daemon_pid();
    thrash(1, 4_000);
    let filled = rss_kib(daemon).expect("daemon RSS");
    let (lines, _) = history(&h, &id);
    let kept: usize = lines.iter().map(String::len).sum();
    assert!(kept <= 65_536, "history text within the cap: {kept} bytes");
    assert!(
        lines.iter().any(|l| l.starts_with("frame 399")),
        "recent frames are kept: {:?}",
        &lines[lines.len().saturating_sub(3)..]
    );
    thrash(2, 12_000);
    let after = rss_kib(daemon).expect("daemon RSS");
    let (lines, _) = history(&h, &id);
    let kept: usize = lines.iter().map(String::len).sum();
    assert!(kept <= 65_536, "history text within the cap: {kept} bytes");
    assert!(
        after <= filled + 4 * 1024,
        "daemon RSS grew from {filled} KiB to {after} KiB redrawing with a 64 KiB history (the smallest)"
    );
}
