//! Issue 5 acceptance, `hangar attach`: raw passthrough of one session in a
//! real PTY. Typing reaches the agent and its answer comes back; detaching
//! restores the terminal and leaves the session live; reattaching shows the
//! same screen; the outer terminal's size follows to the session's PTY; two
//! clients can attach at once, the session taking the smallest of their
//! sizes; a client that stops reading is resynced from the screen instead of
//! slowing the session or growing the daemon.

use crate::pty_screen;
use crate::reliability_support;
use crate::support;

use std::time::{Duration, Instant};

use hangar_protocol::frame::Frame;
use pty_screen::PtyApp;
use reliability_support::RawClient;
use serde_json::json;
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

/// The size the session reported last on `app`'s screen (`COLSxROWS`).
fn last_size_answer(app: &PtyApp) -> Option<String> {
    app.rows()
        .iter()
        .rev()
        .find_map(|r| r.split("size: ").nth(1).map(|s| s.trim().to_owned()))
}

/// Ask the session its terminal size through `app` until it answers `want`
/// (a new size reaches the session asynchronously).
fn wait_session_size(app: &mut PtyApp, want: &str) {
    let deadline = Instant::now() + pty_screen::DEADLINE;
    loop {
        app.write(b"size\r");
        let asked = Instant::now() + Duration::from_millis(500);
        while Instant::now() < asked && last_size_answer(app).as_deref() != Some(want) {
            std::thread::sleep(Duration::from_millis(20));
        }
        if last_size_answer(app).as_deref() == Some(want) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the session never reported {want}:\n{}",
            app.rows().join("\n")
        );
    }
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

/// The daemon's descriptors open on `terminal` (a `/dev/pts/N`), with the
/// flags of each one's open file (`/proc/PID/fdinfo`).
fn daemon_fds_on(h: &Hangar, terminal: &str) -> Vec<u32> {
    let pid = h.daemon_pid();
    let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return Vec::new();
    };
    dir.flatten()
        .filter(|e| std::fs::read_link(e.path()).is_ok_and(|t| t.to_str() == Some(terminal)))
        .filter_map(|e| fd_flags(pid, &e.file_name().to_string_lossy()))
        .collect()
}

/// The flags of `pid`'s descriptor `fd` (octal in fdinfo).
fn fd_flags(pid: i32, fd: &str) -> Option<u32> {
    let info = std::fs::read_to_string(format!("/proc/{pid}/fdinfo/{fd}")).ok()?;
    let flags = info.lines().find_map(|l| l.strip_prefix("flags:"))?;
    u32::from_str_radix(flags.trim(), 8).ok()
}

/// Bytes `pid` has written with write(2) and its kin so far.
fn bytes_written(pid: i32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/io"))
        .ok()
        .and_then(|io| {
            io.lines()
                .find_map(|l| l.strip_prefix("wchar:"))
                .and_then(|n| n.trim().parse().ok())
        })
        .unwrap_or(0)
}

/// As tmux's server does, the daemon reads an attached terminal's keys and
/// writes the session's output to it itself: `hangar attach` relays
/// neither (key echo without a process hop, issue 31). It does so on an
/// open file of its own, so its non-blocking mode never reaches the
/// person's shell, and it lets go of the terminal on detach.
#[test]
fn the_daemon_reads_and_writes_an_attached_terminal_itself_on_a_file_of_its_own() {
    const O_NONBLOCK: u32 = 0o4000;
    let h = Hangar::new();
    start(&h);
    let a = h.new_pane();
    let mut app = attach(&h, &a, 24, 80);
    let client = app.pid();
    let terminal = std::fs::read_link(format!("/proc/{client}/fd/0"))
        .expect("the client's terminal")
        .display()
        .to_string();
    assert!(terminal.starts_with("/dev/pts/"), "{terminal}");
    wait_until("the daemon holds the client's terminal", DEADLINE, || {
        !daemon_fds_on(&h, &terminal).is_empty()
    });
    assert!(
        daemon_fds_on(&h, &terminal)
            .iter()
            .all(|f| f & O_NONBLOCK != 0),
        "the daemon's terminal is non-blocking"
    );
    let client_flags = fd_flags(client, "0").expect("the client's fd 0");
    assert_eq!(
        client_flags & O_NONBLOCK,
        0,
        "the shell's open file of the terminal stays blocking"
    );

    // Twenty lines typed, echoed and answered: none of it passes through
    // the client (a relay writes every key to the daemon and every byte of
    // output to the terminal).
    let before = bytes_written(client);
    for n in 0..20 {
        app.write(format!("hello {n:02}\r").as_bytes());
        app.wait_text(&format!("answer: hello {n:02}"));
    }
    let written = bytes_written(client) - before;
    assert!(
        written < 64,
        "the client wrote {written} bytes while 20 lines were typed and answered: it relays"
    );

    detach(&mut app);
    assert!(app.is_cooked(), "detach leaves the terminal cooked");
    app.wait_text("keeps running");
    wait_until("the daemon lets go of the terminal", DEADLINE, || {
        daemon_fds_on(&h, &terminal).is_empty()
    });
    assert_eq!(h.state_of(&a), "live");
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
    wait_session_size(&mut app, "100x30");
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

#[test]
fn a_bigger_client_that_attaches_and_detaches_leaves_the_session_at_the_smaller_clients_size() {
    let h = Hangar::new();
    start(&h);
    let a = h.new_pane();
    // The TUI's pane, say, is 126x32.
    let mut small = attach(&h, &a, 32, 126);
    wait_session_size(&mut small, "126x32");
    let mut big = attach(&h, &a, 50, 200);
    // Both attached: the smallest size wins, so the small one sees everything.
    wait_session_size(&mut big, "126x32");
    detach(&mut big);
    wait_session_size(&mut small, "126x32");
    detach(&mut small);
}

#[test]
fn rows_and_columns_each_follow_the_smallest_attached_client_and_come_back_when_it_leaves() {
    let h = Hangar::new();
    start(&h);
    let a = h.new_pane();
    let mut wide = attach(&h, &a, 40, 200);
    let tall = attach(&h, &a, 60, 100);
    wait_session_size(&mut wide, "100x40");
    // A client that vanishes without detaching (killed) counts as gone too.
    let pid = tall.pid();
    drop(tall);
    assert!(!is_running(pid), "the killed client is gone");
    wait_session_size(&mut wide, "200x40");
    wide.resize(30, 90);
    wait_session_size(&mut wide, "90x30");
    detach(&mut wide);
    assert_eq!(h.state_of(&a), "live");
}

#[test]
fn an_attached_client_that_stops_reading_is_resynced_and_never_holds_up_the_session() {
    const FLOOD_MB: u64 = 64;
    let h = Hangar::new();
    start(&h);
    let id = h.new_agent(&["--provider", "shell"]);
    h.wait_state(&id, "live");
    let daemon = h.daemon_pid();
    let mut slow = RawClient::connect(&h.home.join("run").join("hangar.sock")).expect("connect");
    slow.request("attach", json!({"session": id, "cols": 80, "rows": 24}))
        .expect("attach");
    let rss_before = rss_kib(daemon).unwrap_or(0);

    // The client reads nothing from here on while the session prints a flood.
    h.ok(&[
        "send",
        &id,
        &format!("yes 0123456789abcdefghijklmnopqrstuvwxyz | head -c {FLOOD_MB}000000; echo flood-$((40+2))"),
    ]);
    h.wait_until(
        "the session printed the whole flood",
        Duration::from_secs(180),
        || h.screen(&id).contains("flood-42"),
    );
    let rss_after = rss_kib(daemon).unwrap_or(0);
    // The output kept for a client is bounded (8 MiB in the session's
    // channel, 1 MiB queued on the connection); the rest is the screen's
    // scrollback filling up and the allocator's slack (~14 MiB in all here).
    assert!(
        rss_after.saturating_sub(rss_before) < 24 * 1024,
        "the daemon grew by {} KiB buffering output for a client that does not read",
        rss_after.saturating_sub(rss_before)
    );
    assert!(
        h.run(&["status"]).status.success(),
        "other clients are served"
    );

    // Reading again, the client catches up to the current screen: what it
    // missed was replaced by a redraw.
    let mut screen = vt100::Parser::new(
        std::num::NonZeroU16::new(24).unwrap(),
        std::num::NonZeroU16::new(80).unwrap(),
        0,
    );
    let mut received: u64 = 0;
    let deadline = Instant::now() + Duration::from_secs(180);
    while !screen.screen().contents().contains("flood-42") {
        assert!(
            Instant::now() < deadline,
            "the slow client never caught up:\n{}",
            screen.screen().contents()
        );
        if let Frame::Data(bytes) = slow.next_frame().expect("the daemon keeps the client") {
            received += bytes.len() as u64;
            screen.process(&bytes);
        }
    }
    assert!(
        received < FLOOD_MB * 1_000_000,
        "the client got a redraw, not the whole flood ({received} bytes)"
    );
    assert_eq!(h.state_of(&id), "live");
}

/// Output in many small writes (a shell's `echo` per line, an agent CLI
/// drawing piece by piece), in bursts, to a client that reads as fast as it
/// can: it is not behind, so it gets every line, never a redraw in place of
/// some of them. (The daemon once counted PTY reads, not bytes: 64 reads of
/// one line each made a client "behind" by a few hundred bytes.)
#[test]
fn a_client_that_keeps_up_with_output_in_small_writes_gets_every_line() {
    const LINES: u32 = 12_000;
    let h = Hangar::new();
    start(&h);
    let id = h.new_agent(&["--provider", "shell"]);
    h.wait_state(&id, "live");
    let mut client = RawClient::connect(&h.home.join("run").join("hangar.sock")).expect("connect");
    client
        .request("attach", json!({"session": id, "cols": 80, "rows": 24}))
        .expect("attach");
    h.ok(&[
        "send",
        &id,
        &format!(
            "for i in $(seq 1 {LINES}); do echo line-$i; [ $((i % 300)) -ne 0 ] || sleep 0.01; done; echo burst-$((40+2))"
        ),
    ]);
    let mut stream = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(120);
    while !stream.windows(8).any(|w| w == b"burst-42") {
        assert!(
            Instant::now() < deadline,
            "the bursts never ended: {} bytes, the last {:?}",
            stream.len(),
            String::from_utf8_lossy(&stream[stream.len().saturating_sub(300)..])
        );
        if let Frame::Data(bytes) = client.next_frame().expect("the daemon keeps the client") {
            stream.extend_from_slice(&bytes);
        }
    }
    let text = String::from_utf8_lossy(&stream);
    let mut next = 1;
    for n in text
        .split(['\r', '\n'])
        .filter_map(|l| l.strip_prefix("line-")?.parse::<u32>().ok())
    {
        assert_eq!(n, next, "line-{next} never reached the client");
        next += 1;
    }
    assert_eq!(next, LINES + 1, "every line reached the client");
}

#[test]
fn a_detach_key_inside_a_bracketed_paste_is_pasted_and_does_not_detach() {
    let h = Hangar::new();
    start(&h);
    let a = h.new_pane();
    let mut app = attach(&h, &a, 24, 80);
    // A paste that happens to hold Ctrl-b d reaches the session whole.
    app.write(b"\x1b[200~pasted\x02dtext\x1b[201~\r");
    app.wait_text("answer: pasteddtext");
    assert!(is_running(app.pid()), "the paste did not detach");
    detach(&mut app);
    assert_eq!(h.state_of(&a), "live");
}
